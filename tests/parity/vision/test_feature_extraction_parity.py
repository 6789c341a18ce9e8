"""Parity of ember.vision.models.feature_extraction with torchvision 0.29's (oracle, test-only):
``get_graph_node_names`` gives torchvision's names for resnet18, mobilenet_v3_small,
efficientnet_b0, convnext_tiny and vit_b_16, and ``create_feature_extractor`` returns the
same values, under the same keys and in the same order, with torchvision's weights (its
state_dict through a real ``torch.save`` file into ``ember.load``); the graphs left after
dead-code elimination have the same nodes; errors and warnings are torchvision's.
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from torchvision.models import feature_extraction as tv_fe  # noqa: E402

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models import feature_extraction as em_fe  # noqa: E402

pytestmark = pytest.mark.parity

# ember's ViT checks its input with Python ifs until ember-core has ``_assert``
# (torch._assert) and the model calls it, as torchvision's does

# (builder, input side)
CASES = [
    pytest.param("resnet18", 64, id="resnet18"),
    pytest.param("mobilenet_v3_small", 64, id="mobilenet_v3_small"),
    pytest.param("efficientnet_b0", 64, id="efficientnet_b0"),
    pytest.param("convnext_tiny", 64, id="convnext_tiny"),
    pytest.param("vit_b_16", 224, id="vit_b_16", marks=pytest.mark.slow),
]

_PAIRS: dict = {}


def model_pair(name, tmp_path_factory):
    """torchvision's model (weights=None, seeded) and ember's with its state_dict."""
    if name not in _PAIRS:
        _PAIRS.clear()  # one pair at a time: vit_b_16 is 330 MB per framework
        torch.manual_seed(0)
        ref = torchvision.models.get_model(name, weights=None)
        with torch.no_grad():  # no all-zero heads or identity norms
            for key, t in ref.state_dict().items():
                if t.is_floating_point() and not key.endswith("running_var"):
                    t.add_(torch.randn(t.shape) * 0.02)
        path = tmp_path_factory.mktemp(name) / f"{name}.pth"
        torch.save(ref.state_dict(), path)
        ours = getattr(models, name)()
        result = ours.load_state_dict(ember.load(str(path)))
        assert not result.missing_keys and not result.unexpected_keys
        _PAIRS[name] = (ref, ours)
    return _PAIRS[name]


def names_without_warnings(module, get_graph_node_names):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return get_graph_node_names(module)


def chosen_nodes(names):
    """About a dozen node names spread over the graph, its last, and prefixes of some."""
    step = max(1, len(names) // 12)
    picked = names[1::step] + [names[-1]]
    prefixes = {n.rsplit(".", 1)[0] for n in picked if n.count(".") >= 2}
    chosen = dict.fromkeys(picked + sorted(prefixes))
    return {n: f"out{i}" for i, n in enumerate(chosen)}


@pytest.mark.parametrize("name,side", CASES)
def test_graph_node_names_match(name, side, tmp_path_factory):
    ref, ours = model_pair(name, tmp_path_factory)
    expected = names_without_warnings(ref, tv_fe.get_graph_node_names)
    got = names_without_warnings(ours, em_fe.get_graph_node_names)
    assert got[0] == expected[0]
    assert got[1] == expected[1]


@pytest.mark.parametrize("name,side", CASES)
def test_extracted_features_match(name, side, tmp_path_factory):
    ref, ours = model_pair(name, tmp_path_factory)
    ref.eval()
    ours.eval()
    train_names, _ = tv_fe.get_graph_node_names(ref)
    return_nodes = chosen_nodes(train_names)
    tv_extractor = tv_fe.create_feature_extractor(ref, return_nodes)
    em_extractor = em_fe.create_feature_extractor(ours, return_nodes)
    assert em_extractor.training == tv_extractor.training is False

    # the same graph is left: same nodes, same order, same names
    for mode in ("train_graph", "eval_graph"):
        tv_graph = [(n.op, n.name) for n in getattr(tv_extractor, mode).nodes]
        em_graph = [(n.op, n.name) for n in getattr(em_extractor, mode).nodes]
        assert em_graph == tv_graph, mode
    assert sorted(em_extractor.state_dict()) == sorted(tv_extractor.state_dict())

    x = np.random.RandomState(1).standard_normal((1, 3, side, side)).astype(np.float32)
    with torch.no_grad():
        expected = tv_extractor(torch.from_numpy(x))
    with ember.no_grad():
        got = em_extractor(ember.tensor(x))
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert_same_value(got[key], value, key)


def assert_same_value(got, expected, key):
    """Tensors agree to 1e-4 relative; sizes, ints, None and tuples of them (a ViT's
    ``x.shape``, its attention's ``(output, None)``) are equal."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, ember.Tensor), key
        value = expected.detach().numpy()  # a chosen get_attr node returns the parameter
        scale = np.abs(value).max() + 1e-6
        np.testing.assert_allclose(got.detach().numpy(), value, rtol=1e-4, atol=1e-4 * scale,
                                   err_msg=key)
    elif isinstance(expected, tuple) and not isinstance(expected, torch.Size):
        assert isinstance(got, tuple) and len(got) == len(expected), key
        for g, e in zip(got, expected):
            assert_same_value(g, e, key)
    else:
        assert not isinstance(got, ember.Tensor) and got == expected, key


def test_resnet18_train_mode_features_match(tmp_path_factory):
    """Train mode (batch statistics): the train graph runs, and its values agree. (64x64
    images: layer4's batch norm then normalises 16 values per channel; over the 4 of 32x32
    images, a last-bit difference in either library's BLAS sums, which changes with its
    thread count, moved one normalised value just past the tolerance.)"""
    ref, ours = model_pair("resnet18", tmp_path_factory)
    return_nodes = {"layer1.0.add": "add", "layer2": "l2", "layer4.1.bn2": "bn", "fc": "fc"}
    tv_extractor = tv_fe.create_feature_extractor(ref.train(), return_nodes)
    em_extractor = em_fe.create_feature_extractor(ours.train(), return_nodes)
    x = np.random.RandomState(2).standard_normal((4, 3, 64, 64)).astype(np.float32)
    expected = tv_extractor(torch.from_numpy(x))
    got = em_extractor(ember.tensor(x))
    assert list(got) == list(expected) == ["add", "l2", "bn", "fc"]
    for key, value in expected.items():
        assert_same_value(got[key], value, key)


def make_branching(lib):
    """The same module in torch and in ember: its train graph multiplies, its eval graph
    subtracts."""

    class Branching(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.act = lib.nn.ReLU()

        def forward(self, x):
            x = self.lin(x)
            x = x * 2 if self.training else x - 1
            return self.act(self.act(x) + 1)

    return Branching()


def test_train_eval_warning_and_names_match():
    with pytest.warns(UserWarning) as tv_record:
        expected = tv_fe.get_graph_node_names(make_branching(torch))
    with pytest.warns(UserWarning) as em_record:
        got = em_fe.get_graph_node_names(make_branching(ember))
    assert got == expected
    assert [str(w.message) for w in em_record] == [str(w.message) for w in tv_record]


def _error(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("kwargs", [
    {},
    {"train_return_nodes": ["lin"]},
    {"return_nodes": ["lin"], "train_return_nodes": ["lin"], "eval_return_nodes": ["lin"]},
    {"return_nodes": ["lin.weight"]},
    {"return_nodes": {"mul": "m"}},  # present in the train graph only
    {"train_return_nodes": ["act_1"], "eval_return_nodes": ["mul"]},
], ids=["none", "train-only", "all-three", "missing", "train-graph-only", "eval-missing"])
def test_errors_match(kwargs):
    expected = _error(lambda: tv_fe.create_feature_extractor(
        make_branching(torch), suppress_diff_warning=True, **kwargs))
    got = _error(lambda: em_fe.create_feature_extractor(
        make_branching(ember), suppress_diff_warning=True, **kwargs))
    assert got == expected


def test_leaf_modules_from_tracer_kwargs_match():
    def build(lib):
        class Leaf(lib.nn.Module):
            def forward(self, x):
                return x.relu() + 1

        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.leaf = Leaf()
                self.inner = lib.nn.Sequential(Leaf(), lib.nn.Linear(3, 3))

            def forward(self, x):
                return self.inner(self.leaf(x)) * 2

        return Net(), Leaf

    tv_model, tv_leaf = build(torch)
    em_model, em_leaf = build(ember)
    assert (em_fe.get_graph_node_names(em_model)
            == tv_fe.get_graph_node_names(tv_model))
    assert (em_fe.get_graph_node_names(em_model, {"leaf_modules": [em_leaf]})
            == tv_fe.get_graph_node_names(tv_model, {"leaf_modules": [tv_leaf]}))
