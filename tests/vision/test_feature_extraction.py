"""ember.vision.models.feature_extraction: node names, extracted values against forward hooks
on the eager model, train and eval graphs, leaf modules, errors and warnings.

Names and values against torchvision are in
tests/parity/vision/test_feature_extraction_parity.py.
"""

import copy
import importlib
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models, ops
from ember.vision.models.feature_extraction import (
    DualGraphModule,
    NodePathTracer,
    create_feature_extractor,
    get_graph_node_names,
)


def resnet18_node_names():
    """resnet18's names by torchvision's rules: leaf modules by path, functions by name,
    repeats within a block (the relu module's second call) counted."""
    names = ["x", "conv1", "bn1", "relu", "maxpool"]
    for layer in range(1, 5):
        for block in range(2):
            p = f"layer{layer}.{block}."
            names += [p + n for n in ("conv1", "bn1", "relu", "conv2", "bn2")]
            if layer > 1 and block == 0:
                names += [p + "downsample.0", p + "downsample.1"]
            names += [p + "add", p + "relu_1"]
    return names + ["avgpool", "flatten", "fc"]


def small_vit():
    return models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                    hidden_dim=16, mlp_dim=32, num_classes=10)


def small_vit_node_names():
    """torchvision's names for this ViT (torchvision 0.29): the encoder blocks' ``ln_1``
    and ``ln_2`` modules are named ``ln`` and ``ln_1`` (a trailing ``_{int}`` is taken for
    the counter and counted again), the shape checks are ``_assert`` nodes."""
    names = ["x", "getattr", "getitem", "getitem_1", "getitem_2", "getitem_3", "eq",
             "_assert", "eq_1", "_assert_1", "floordiv", "floordiv_1", "conv_proj", "mul",
             "reshape", "permute", "getattr_1", "getitem_4", "class_token", "expand", "cat",
             "encoder.dim", "encoder.eq", "encoder.getattr", "encoder._assert",
             "encoder.encoder_pos_embedding", "encoder.add", "encoder.dropout"]
    for i in range(2):
        p = f"encoder.layers.encoder_layer_{i}."
        names += [p + n for n in ("dim", "eq", "getattr", "_assert", "ln", "self_attention",
                                  "getitem", "getitem_1", "dropout", "add", "ln_1", "mlp",
                                  "add_1")]
    return names + ["encoder.ln", "getitem_5", "heads.head"]


def hook_outputs(model, paths, x, inputs=False):
    """Run ``model(x)`` and return, for each module path, the output of each call of that
    module (its first positional input with ``inputs=True``)."""
    seen = {p: [] for p in paths}
    handles = []
    for p in paths:
        module = model.get_submodule(p)
        if inputs:
            handles.append(module.register_forward_pre_hook(
                lambda m, args, p=p: seen[p].append(args[0])))
        else:
            handles.append(module.register_forward_hook(
                lambda m, args, out, p=p: seen[p].append(out)))
    try:
        model(x)
    finally:
        for h in handles:
            h.remove()
    return seen


def same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def quiet_names(model, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's train and eval graphs are alike
        return get_graph_node_names(model, **kwargs)


# -- node names ------------------------------------------------------------------------------

def test_resnet18_node_names():
    model = models.resnet18()
    train_nodes, eval_nodes = quiet_names(model)
    assert train_nodes == resnet18_node_names()
    assert eval_nodes == train_nodes


def test_mobilenet_v3_small_ops_modules_are_leaves():
    model = models.mobilenet_v3_small()
    train_nodes, eval_nodes = quiet_names(model)
    assert train_nodes == eval_nodes
    # Conv2dNormActivation, SqueezeExcitation (ember.vision.ops) are single nodes; the
    # InvertedResidual blocks (models) are traced through, their residual adds named
    assert train_nodes[:8] == ["x", "features.0", "features.1.block.0",
                               "features.1.block.1", "features.1.block.2",
                               "features.2.block.0", "features.2.block.1",
                               "features.2.block.2"]
    assert "features.3.add" in train_nodes
    assert not [n for n in train_nodes if n.startswith(("features.0.", "features.1.block.1."))]
    assert train_nodes[-7:] == ["features.12", "avgpool", "flatten", "classifier.0",
                                "classifier.1", "classifier.2", "classifier.3"]
    assert len(train_nodes) == 56


def test_small_vit_node_names():
    train_nodes, eval_nodes = quiet_names(small_vit())
    assert train_nodes == small_vit_node_names()
    assert eval_nodes == train_nodes


def test_names_restore_training_mode():
    model = models.resnet18().eval()
    quiet_names(model)
    assert not model.training and not model.fc.training
    model.train()
    quiet_names(model)
    assert model.training and model.layer1[0].bn1.training


def test_repeated_names_are_counted_per_module():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.act(x) + 1) + 2

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Block(), Block()

        def forward(self, x):
            return self.b(self.a(x)) + 3

    train_nodes, _ = quiet_names(Net())
    # ember.fx's own names count across the graph (add, add_1, ... add_4); these count
    # within each module path
    assert train_nodes == ["x", "a.act", "a.add", "a.act_1", "a.add_1", "b.act", "b.add",
                           "b.act_1", "b.add_1", "add"]


def test_node_path_tracer_records_every_traced_node():
    model = models.resnet18()
    tracer = NodePathTracer()
    graph = tracer.trace(model)
    assert list(tracer.node_to_qualname) == [n for n in graph.nodes if n.op != "output"]
    by_node = {n.name: q for n, q in tracer.node_to_qualname.items()}
    assert by_node["layer2_0_downsample_0"] == "layer2.0.downsample.0"
    assert by_node["add_3"] == "layer2.1.add"


# -- extracted values ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["train", "eval"])
def test_resnet18_features_equal_hooks(mode):
    ember.manual_seed(0)
    model = models.resnet18().train(mode == "train")
    x = ember.randn(2, 3, 32, 32)
    extractor = create_feature_extractor(model, {
        "layer1": "l1", "layer2.0.relu": "first_relu", "layer2.0.add": "add",
        "layer3.1.relu_1": "l3", "fc": "logits"})
    out = extractor(x)
    assert list(out) == ["l1", "first_relu", "add", "l3", "logits"]  # in the order they run
    outs = hook_outputs(model, ["layer1", "layer2.0.relu", "layer3.1.relu", "fc"], x)
    ins = hook_outputs(model, ["layer2.0.relu"], x, inputs=True)
    same(out["l1"], outs["layer1"][0])
    same(out["first_relu"], outs["layer2.0.relu"][0])
    same(out["add"], ins["layer2.0.relu"][1])  # the add feeds relu's second call
    same(out["l3"], outs["layer3.1.relu"][1])
    same(out["logits"], outs["fc"][0])
    assert extractor.training == (mode == "train") and model.training == (mode == "train")


def test_mobilenet_v3_small_features_equal_hooks():
    model = models.mobilenet_v3_small().eval()
    x = ember.randn(1, 3, 64, 64)
    extractor = create_feature_extractor(
        model, ["features.1.block.1", "features.3", "features.12", "flatten"])
    out = extractor(x)
    assert list(out) == ["features.1.block.1", "features.3", "features.12", "flatten"]
    outs = hook_outputs(model, ["features.1.block.1", "features.3", "features.12",
                                "classifier"], x)
    ins = hook_outputs(model, ["classifier"], x, inputs=True)
    for name in ("features.1.block.1", "features.3", "features.12"):
        same(out[name], outs[name][0])
    same(out["flatten"], ins["classifier"][0])
    assert out["features.12"].shape == (1, 576, 2, 2)


def test_small_vit_features_equal_hooks():
    model = small_vit().eval()
    x = ember.randn(2, 3, 32, 32)
    extractor = create_feature_extractor(
        model, {"encoder.layers.encoder_layer_0": "block0", "encoder.ln": "ln",
                "heads.head": "logits"})
    out = extractor(x)
    outs = hook_outputs(model, ["encoder.layers.encoder_layer_0", "encoder.ln", "heads.head"],
                        x)
    same(out["block0"], outs["encoder.layers.encoder_layer_0"][0])
    same(out["ln"], outs["encoder.ln"][0])
    same(out["logits"], outs["heads.head"][0])
    with pytest.raises(AssertionError, match="Wrong image height! Expected 32"):
        extractor(ember.randn(1, 3, 16, 32))  # the input checks stay in the graph


def test_unused_modules_are_removed_and_used_ones_shared():
    model = models.resnet18()
    extractor = create_feature_extractor(model, ["layer2"])
    assert [n for n, _ in extractor.named_children()] == ["conv1", "bn1", "relu", "maxpool",
                                                         "layer1", "layer2"]
    assert extractor.get_submodule("layer1.0.conv1") is model.layer1[0].conv1  # not copies
    assert set(extractor.state_dict()) == {
        k for k in model.state_dict() if k.startswith(("conv1.", "bn1.", "layer1.", "layer2."))}
    assert "layer3" not in extractor.code and "fc" not in extractor.code
    # gradients reach the model's parameters
    out = extractor(ember.randn(1, 3, 32, 32))["layer2"]
    out.sum().backward()
    assert model.layer2[1].conv2.weight.grad is not None and model.fc.weight.grad is None


def test_list_and_prefix_queries():
    model = models.resnet18().eval()
    x = ember.randn(1, 3, 32, 32)
    out = create_feature_extractor(model, ["layer1.0", "layer1", "x"])(x)
    assert list(out) == ["x", "layer1.0", "layer1"]
    same(out["x"], x)
    full = create_feature_extractor(model, {"layer1.0.relu_1": "a", "layer1.1.relu_1": "b"})(x)
    same(out["layer1.0"], full["a"])  # the prefix chooses the last node inside it
    same(out["layer1"], full["b"])


def test_extractor_class_name_and_code():
    extractor = create_feature_extractor(models.resnet18(), {"layer1": "feat"})
    assert isinstance(extractor, DualGraphModule)
    assert type(extractor).__name__ == "ResNet"
    assert "return {'feat': layer1_1_relu_1}" in extractor.code


# -- train and eval graphs -------------------------------------------------------------------

class TrainOnlyScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.lin(x)
        if self.training:
            x = x * 2
        return self.act(x)


class EvalOnlyShift(TrainOnlyScale):
    def forward(self, x):
        x = self.lin(x)
        if not self.training:
            x = x - 1
        return self.act(x)


class DifferentOps(TrainOnlyScale):
    def forward(self, x):
        x = self.lin(x)
        x = x * 2 if self.training else x - 1
        return self.act(x)


@pytest.mark.parametrize("cls,train_nodes,eval_nodes,message", [
    (TrainOnlyScale, ["x", "lin", "mul", "act"], ["x", "lin", "act"],
     "NOTE: The nodes obtained by tracing the model in eval mode are a subsequence of those "
     "obtained in train mode. "),
    (EvalOnlyShift, ["x", "lin", "act"], ["x", "lin", "sub", "act"],
     "NOTE: The nodes obtained by tracing the model in train mode are a subsequence of those "
     "obtained in eval mode. "),
    (DifferentOps, ["x", "lin", "mul", "act"], ["x", "lin", "sub", "act"],
     "The nodes obtained by tracing the model in train mode are different to those obtained "
     "in eval mode. "),
])
def test_train_eval_differences_warn(cls, train_nodes, eval_nodes, message):
    suggestion = ("When choosing nodes for feature extraction, you may need to specify output "
                  "nodes for train and eval mode separately.")
    with pytest.warns(UserWarning) as record:
        names = get_graph_node_names(cls())
    assert names == (train_nodes, eval_nodes)
    assert [str(w.message) for w in record] == [message + suggestion]
    assert record[0].filename == __file__  # points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_graph_node_names(cls(), suppress_diff_warning=True) == names
    with pytest.warns(UserWarning, match="different to those obtained in eval mode"):
        create_feature_extractor(DifferentOps(), ["lin"])


def test_train_and_eval_return_nodes():
    model = DifferentOps().eval()
    x = ember.randn(4, 3)
    extractor = create_feature_extractor(model, train_return_nodes={"mul": "changed"},
                                         eval_return_nodes={"sub": "changed", "lin": "lin"},
                                         suppress_diff_warning=True)
    assert not extractor.training and not model.training  # the model's mode, restored
    assert list(extractor(x)) == ["lin", "changed"]
    lin = model.lin(x)
    same(extractor(x)["changed"], lin - 1)
    assert extractor.train() is extractor and extractor.training
    assert list(extractor(x)) == ["changed"]
    same(extractor(x)["changed"], lin * 2)
    assert "mul" in extractor.code and "sub" not in extractor.code
    extractor.eval()
    assert "sub" in extractor.code and "mul" not in extractor.code
    assert extractor.graph is extractor.eval_graph
    with pytest.raises(ValueError, match="node: 'sub' is not present in model"):
        create_feature_extractor(model, ["sub"])  # not in the train graph


def test_deepcopy_keeps_both_graphs():
    model = DifferentOps()
    extractor = create_feature_extractor(model, ["act"], suppress_diff_warning=True)
    clone = copy.deepcopy(extractor)
    assert isinstance(clone, DualGraphModule) and clone.training
    assert clone.lin is not extractor.lin
    x = ember.randn(2, 3)
    same(clone(x)["act"], extractor(x)["act"])
    clone.eval()
    assert extractor.training  # the original keeps its own mode and graph
    same(clone(x)["act"], ember.relu(model.lin(x) - 1))
    same(extractor(x)["act"], ember.relu(model.lin(x) * 2))


# -- leaf modules, autowrapped functions, tracer arguments -----------------------------------

def leaf_function(x):
    return int(x)  # int() of a traced value raises unless this function is a leaf


class LeafModule(nn.Module):
    def forward(self, x):
        int(x.shape[0])
        return ember.nn.functional.relu(x + 4)


class WithLeaves(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 3)
        self.leaf_module = LeafModule()

    def forward(self, x):
        leaf_function(x.shape[0])
        x = self.conv(x)
        return self.leaf_module(x)


def test_leaf_modules_and_autowrap_functions():
    with pytest.raises(TypeError):
        create_feature_extractor(WithLeaves(), ["leaf_module"])
    tracer_kwargs = {"leaf_modules": [LeafModule], "autowrap_functions": [leaf_function]}
    model = WithLeaves()
    extractor = create_feature_extractor(model, return_nodes=["leaf_module"],
                                         tracer_kwargs=tracer_kwargs)
    x = ember.randn(2, 3, 6, 6)
    same(extractor(x)["leaf_module"], model(x))
    names, _ = get_graph_node_names(WithLeaves(), tracer_kwargs=dict(tracer_kwargs))
    assert names == ["x", "getattr", "getitem", "leaf_function", "conv", "leaf_module"]
    # the defaults are added to the caller's dict, as torchvision does
    assert set(tracer_kwargs["leaf_modules"]) >= {LeafModule, ops.StochasticDepth,
                                                  ops.Conv2dNormActivation}
    assert ops in tracer_kwargs["autowrap_modules"]


def test_ops_functions_are_autowrapped():
    class Boxes(nn.Module):
        def forward(self, boxes):
            return ops.box_area(boxes) + 1

    names, _ = quiet_names(Boxes())
    assert names == ["boxes", "box_area", "add"]
    boxes = ember.tensor([[0.0, 0.0, 2.0, 3.0], [1.0, 1.0, 2.0, 2.0]])
    out = create_feature_extractor(Boxes(), ["box_area"])(boxes)
    same(out["box_area"], ember.tensor([6.0, 1.0]))


def test_concrete_args():
    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, double: bool = False):
            y = self.lin(x)
            return y * 2 if double else y

    names, _ = quiet_names(Gate(), concrete_args={"double": True})
    # the placeholder is ember.fx's double_1; its _1 is taken for a counter and dropped
    assert names == ["x", "double", "eq", "_assert", "lin", "mul"]
    model = Gate()
    extractor = create_feature_extractor(model, ["lin", "mul"], concrete_args={"double": True})
    x = ember.randn(3, 2)
    out = extractor(x, True)
    same(out["mul"], model(x, True))
    with pytest.raises(AssertionError, match="double has been specialized"):
        extractor(x, False)


# -- errors ----------------------------------------------------------------------------------

def test_argument_errors():
    model = models.resnet18()
    with pytest.raises(ValueError, match="Either `return_nodes` or `train_return_nodes` and "
                       "`eval_return_nodes` together, should be specified"):
        create_feature_extractor(model)
    with pytest.raises(ValueError, match="If any of `train_return_nodes` and "
                       "`eval_return_nodes` are specified, then both should be specified"):
        create_feature_extractor(model, train_return_nodes=["layer1"])
    with pytest.raises(ValueError, match="If `train_return_nodes` and `eval_return_nodes` are "
                       "specified, then both should be specified"):
        create_feature_extractor(model, ["layer1"], train_return_nodes=["layer1"],
                                 eval_return_nodes=["layer1"])


@pytest.mark.parametrize("query", ["layer5", "layer1.0.rel", "layer1_0", "layer1.0.relu_2",
                                   "layer1.(0)"])
def test_missing_node(query):
    with pytest.raises(ValueError) as info:
        create_feature_extractor(models.resnet18(), [query])
    assert str(info.value) == (
        f"node: '{query}' is not present in model. Hint: use `get_graph_node_names` to make "
        "sure the `return_nodes` you specified are present. It may even be that you need to "
        "specify `train_return_nodes` and `eval_return_nodes` separately.")


def test_submodule_import():
    module = importlib.import_module("ember.vision.models.feature_extraction")
    assert module.__all__ == ["create_feature_extractor", "get_graph_node_names"]
    assert not hasattr(models, "create_feature_extractor")  # not re-exported (torchvision)
