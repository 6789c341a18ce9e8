"""ember.fx: symbolic tracing, Graph editing, GraphModule, Interpreter/Transformer,
replace_pattern; torch.fx's documentation examples and parity of the graphs with torch.fx."""

from __future__ import annotations

import copy
import operator
import pickle
import re

import numpy as np
import pytest

import ember
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.passes.shape_prop import ShapeProp


class MyModule(nn.Module):  # torch.fx's first documentation example
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(ember.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, x):
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x, y):
        a = ember.relu(x) + 1
        b = ember.cat([a, y], 1)
        c = F.relu(b)[:, :2]
        d = ember.ones(2) + c
        e = 2 * d.sum(dim=1, keepdim=True)
        return {"e": e, "s": x.shape[0], "t": self.l(x).view(-1)}


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy()),
                               np.asarray(b.detach().cpu().numpy()), rtol=tol, atol=tol)


def test_doc_example_graph_code_and_outputs():
    m = MyModule()
    gm = fx.symbolic_trace(m)
    assert str(gm.graph) == (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %param : [num_users=1] = get_attr[target=param]\n"
        "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %param), "
        "kwargs = {})\n"
        "    %linear : [num_users=1] = call_module[target=linear](args = (%add,), "
        "kwargs = {})\n"
        "    %clamp : [num_users=1] = call_method[target=clamp](args = (%linear,), "
        "kwargs = {min: 0.0, max: 1.0})\n"
        "    return clamp")
    assert gm.code == ("\n\n\ndef forward(self, x):\n"
                       "    param = self.param\n"
                       "    add = x + param;  x = param = None\n"
                       "    linear = self.linear(add);  add = None\n"
                       "    clamp = linear.clamp(min = 0.0, max = 1.0);  linear = None\n"
                       "    return clamp\n    ")
    x = ember.randn(3, 4)
    close(gm(x), m(x))
    assert isinstance(gm, nn.Module) and type(gm).__name__ == "MyModule"
    assert gm.linear is m.linear and gm.param is m.param


def test_functions_methods_constants_and_dicts_are_recorded():
    m = Mixed()
    gm = fx.symbolic_trace(m)
    ops = [(n.op, n.target if isinstance(n.target, str) else n._pretty_target())
           for n in gm.graph.nodes]
    assert ops == [("placeholder", "x"), ("placeholder", "y"),
                   ("call_function", "ember.relu"), ("call_function", "operator.add"),
                   ("call_function", "ember.cat"),
                   ("call_function", "ember.nn.functional.relu"),
                   ("call_function", "operator.getitem"), ("get_attr", "_tensor_constant0"),
                   ("call_method", "add"), ("call_method", "sum"),
                   ("call_function", "operator.mul"), ("call_function", "getattr"),
                   ("call_function", "operator.getitem"), ("call_module", "l"),
                   ("call_method", "view"), ("output", "output")]
    assert [n.name for n in gm.graph.nodes][-6:] == ["mul", "getattr_1", "getitem_1", "l",
                                                    "view", "output"]
    assert "sum_1 = add_1.sum(dim = 1, keepdim = True);  add_1 = None" in gm.code
    x, y = ember.randn(2, 4), ember.randn(2, 4)
    got, want = gm(x, y), m(x, y)
    assert got["s"] == 2
    close(got["e"], want["e"])
    close(got["t"], want["t"])


def test_einsum_of_a_list_is_recorded_with_its_operands():
    # opt_einsum's torch backend calls torch.einsum(eq, operands); torch.fx records
    # einsum(eq, a, b), what shape propagation and einsum rewriters (opt_einsum_fx) read
    def f(a, b):
        return ember.einsum("ij,jk->ik", (a, b)) + ember.einsum("ij,jk->ik", [a, b])

    gm = fx.symbolic_trace(f)
    calls = [n for n in gm.graph.nodes if n.target is ember.einsum]
    assert [tuple(str(x) for x in n.args) for n in calls] == [("ij,jk->ik", "a", "b")] * 2
    a, b = ember.randn(2, 3), ember.randn(3, 4)
    ShapeProp(gm).propagate(a, b)
    assert calls[0].meta["tensor_meta"].shape == (2, 4)
    assert ember.allclose(gm(a, b), 2 * (a @ b))


def test_graph_structure_matches_torch_fx():
    torch = pytest.importorskip("torch")
    import torch.fx as tfx

    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = lib.nn.Conv2d(3, 4, 3)
                self.bn = lib.nn.BatchNorm2d(4)
                self.fc = lib.nn.Linear(4, 2)

            def forward(self, x):
                h = lib.relu(self.bn(self.conv(x)))
                h = lib.nn.functional.max_pool2d(h, 2)
                h = h.mean(dim=(2, 3))
                return self.fc(h) * 2 - h.sum(-1, keepdim=True)

        return Net()

    def signature(gm, prefix):
        out = []
        for n in gm.graph.nodes:
            target = n.target if isinstance(n.target, str) else \
                (tfx.node._get_qualified_name(n.target) if prefix == "torch"
                 else n._pretty_target())
            target = target.replace("_operator.", "operator.").replace(prefix, "LIB")
            out.append((n.op, target, n.name,
                        [str(a) for a in n.args]))
        return out

    ours = signature(fx.symbolic_trace(build(ember)), "ember")
    theirs = signature(tfx.symbolic_trace(build(torch)), "torch")
    assert ours == theirs


def test_replace_relu_with_gelu_through_the_graph():
    class Net(nn.Module):
        def forward(self, x):
            return ember.relu(x) + F.relu(x * 2)

    gm = fx.symbolic_trace(Net())
    replaced = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (ember.relu, F.relu):
            node.target = F.gelu
            replaced += 1
    gm.recompile()
    assert replaced == 2 and "ember.nn.functional.gelu(x)" in gm.code
    x = ember.randn(5)
    close(gm(x), F.gelu(x) + F.gelu(x * 2))


def test_shape_prop_interpreter_example():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            return self.fc(ember.flatten(F.adaptive_avg_pool2d(self.conv(x), 1), 1))

    gm = fx.symbolic_trace(Net())
    x = ember.randn(2, 3, 16, 16)
    out = ShapeProp(gm).propagate(x)
    close(out, gm(x))
    shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes
              if "tensor_meta" in n.meta}
    assert shapes == {"x": (2, 3, 16, 16), "conv": (2, 8, 16, 16),
                      "adaptive_avg_pool2d": (2, 8, 1, 1), "flatten": (2, 8),
                      "fc": (2, 10), "output": (2, 10)}
    assert gm.graph.find_nodes(op="call_module", target="fc")[0].meta["tensor_meta"].dtype \
        == ember.float32


def test_interpreter_overrides_and_errors():
    class NegSigmoid(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.sigmoid:
                return ember.neg(super().call_function(target, args, kwargs))
            return super().call_function(target, args, kwargs)

    def fn(x):
        return ember.sigmoid(x) + 1

    gm = fx.symbolic_trace(fn)
    x = ember.randn(4)
    close(NegSigmoid(gm).run(x), 1 - ember.sigmoid(x))
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        fx.Interpreter(gm).run()
    env_run = fx.Interpreter(gm).boxed_run([x])
    close(env_run, fn(x))


def test_transformer_swaps_add_for_mul():
    class AddToMul(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.add:
                target = operator.mul
            return super().call_function(target, args, kwargs)

    def fn(x, y):
        return ember.add(x, y) + y

    gm = fx.symbolic_trace(fn)
    new = AddToMul(gm).transform()
    assert isinstance(new, fx.GraphModule) and new is not gm
    assert "add_1 = add * y" not in new.code and "mul = add * y" in new.code
    x, y = ember.randn(3), ember.randn(3)
    close(new(x, y), (x + y) * y)
    close(gm(x, y), (x + y) + y)  # the original is untouched


def test_transformer_can_call_ember_functions_on_proxies():
    class ReluToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return ember.sigmoid(*args)
            return super().call_function(target, args, kwargs)

    gm = fx.symbolic_trace(lambda x: ember.relu(x) * 3)
    new = ReluToSigmoid(gm).transform()
    x = ember.randn(4)
    close(new(x), ember.sigmoid(x) * 3)


def test_replace_pattern_doc_example():
    def pattern(w1, w2):
        return ember.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return ember.stack([w1, w2])

    class M(nn.Module):
        def forward(self, x, w1, w2):
            m1 = ember.cat([w1, w2]).sum()
            m2 = ember.cat([w1, w2]).sum()
            return x + ember.max(m1) + ember.max(m2)

    traced = fx.symbolic_trace(M())
    matches = fx.replace_pattern(traced, pattern, replacement)
    assert len(matches) == 2
    assert [n.name for n in matches[1].nodes_map.values()] == ["sum_2", "cat_1", "w1", "w2"]
    assert traced.code == (
        "\n\n\ndef forward(self, x, w1, w2):\n"
        "    stack = ember.stack([w1, w2])\n"
        "    max_1 = ember.max(stack);  stack = None\n"
        "    add = x + max_1;  x = max_1 = None\n"
        "    stack_1 = ember.stack([w1, w2]);  w1 = w2 = None\n"
        "    max_2 = ember.max(stack_1);  stack_1 = None\n"
        "    add_1 = add + max_2;  add = max_2 = None\n"
        "    return add_1\n    ")
    x, w1, w2 = ember.randn(1), ember.randn(3), ember.randn(3)
    close(traced(x, w1, w2), x + 2 * ember.max(ember.stack([w1, w2])))


def test_replace_pattern_leaves_a_match_used_elsewhere():
    def pattern(x):
        return ember.relu(ember.neg(x))

    def replacement(x):
        return ember.sigmoid(x)

    def fn(x):
        n = ember.neg(x)
        return ember.relu(n) + n  # neg is used outside the pattern

    gm = fx.symbolic_trace(fn)
    assert fx.replace_pattern(gm, pattern, replacement) == []
    assert "ember.relu" in gm.code


def small_cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 3))


def test_sequential_cnn_traces_through_the_container():
    model = small_cnn()
    gm = fx.symbolic_trace(model)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == \
        ["0", "1", "2", "3", "4", "5"]
    assert gm.code.startswith('\n\n\ndef forward(self, input):\n    input_1 = input\n'
                              '    _0 = getattr(self, "0")(input_1);  input_1 = None\n')
    x = ember.randn(2, 1, 8, 8)
    model.eval()
    gm.eval()
    close(gm(x), model(x))


def test_resnet18_traces_to_the_same_outputs():
    vision = pytest.importorskip("ember.vision")
    model = vision.models.resnet18(num_classes=10).eval()
    gm = fx.symbolic_trace(model).eval()
    assert any(n.op == "call_function" and n.target is ember.flatten for n in gm.graph.nodes)
    assert sum(n.op == "call_module" for n in gm.graph.nodes) > 40
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        close(gm(x), model(x), 1e-5)
    assert set(gm.state_dict()) == set(model.state_dict())


def test_training_a_traced_module_matches_the_original():
    ember.manual_seed(0)
    model = small_cnn()
    gm = fx.symbolic_trace(model)
    twin = copy.deepcopy(gm)
    assert set(twin.state_dict()) == set(model.state_dict())
    twin.load_state_dict(model.state_dict())  # state_dict-compatible both ways
    x, y = ember.randn(4, 1, 8, 8), ember.randint(0, 3, (4,))
    F.cross_entropy(model(x), y).backward()
    F.cross_entropy(twin(x), y).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        close(p.grad, twin.get_parameter(name).grad, 1e-5)
        assert q is not p
    opt = ember.optim.SGD(twin.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.cross_entropy(twin(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_control_flow_on_a_proxy_raises_torchs_errors():
    def branch(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.proxy.TraceError, match="symbolically traced variables cannot be "
                       "used as inputs to control flow"):
        fx.symbolic_trace(branch)

    def loop(x):
        return [t for t in x]

    with pytest.raises(fx.proxy.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing"):
        fx.symbolic_trace(lambda x: len(x))


def test_graph_errors_use_torchs_messages():
    g = fx.Graph()
    with pytest.raises(AssertionError, match="op 'foo' is not in _legal_ops"):
        g.create_node("foo", "bar")
    x = g.placeholder("x")
    r = g.call_function(ember.relu, (x,))
    g.output(r)
    with pytest.raises(RuntimeError, match=r"Tried to erase Node x but it still had 1 users "
                       r"in the graph: \{relu: None\}!"):
        g.erase_node(x)
    with pytest.raises(ValueError, match="but a Callable is expected"):
        g.call_function("relu", (x,))
    g2 = fx.Graph()
    y = g2.placeholder("y")
    with pytest.raises(AssertionError, match="does not belong to the same graph"):
        g2.call_function(ember.relu, (x,))
    out = g2.output(y)
    with g2.inserting_before(out):
        later = g2.call_function(ember.neg, (y,))
    with g2.inserting_before(later):
        g2.call_function(ember.abs, (later,))  # used before it is defined
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        g2.lint()


def test_graph_editing_api():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ember.relu, (x,))
    out = g.output(a)
    with g.inserting_after(x):
        n1 = g.call_function(ember.neg, (x,))
        n2 = g.call_method("abs", (n1,))
    a.replace_input_with(x, n2)
    assert [n.name for n in g.nodes] == ["x", "neg", "abs_1", "relu", "output"]
    assert list(x.users) == [n1] and a.all_input_nodes == [n2]
    dead = g.call_function(ember.exp, (x,))
    assert dead.prev is out  # the default insertion point is the end, as in torch.fx
    gm = fx.GraphModule(nn.Module(), g)
    gm.graph.lint()
    assert gm.graph.eliminate_dead_code() and dead not in list(gm.graph.nodes)
    gm.recompile()
    t = ember.randn(4)
    close(gm(t), ember.relu(ember.neg(t).abs()))
    assert len(g.nodes) == 5
    assert a.replace_all_uses_with(n2) == [out]
    assert out.args == (n2,)


def test_print_tabular_without_tabulate(capsys):
    gm = fx.symbolic_trace(MyModule())
    gm.graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split() == ["placeholder", "x", "x", "()", "{}"]
    assert lines[4].split()[:3] == ["call_function", "add", "operator.add"]


def test_print_readable_and_repr():
    gm = fx.symbolic_trace(MyModule())
    text = gm.print_readable(print_output=False)
    assert text.startswith("class MyModule(ember.nn.Module):\n    def forward(self, x):\n")
    assert str(gm).endswith("# To see more debug info, please use "
                            "`graph_module.print_readable()`")
    # repr is Module's (torch.fx defines __str__ only): a parent shows a child GraphModule
    # as a module, without its code
    assert repr(gm) == nn.Module.__repr__(gm) and "def forward" not in repr(gm)


def _leaf_helper(x):
    return ember.sigmoid(x) * 2


fx.wrap("_leaf_helper")


def test_wrap_keeps_a_function_as_one_call():
    def fn(x):
        return _leaf_helper(x) + 1

    gm = fx.symbolic_trace(fn)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[0] is _leaf_helper and ember.sigmoid not in targets
    x = ember.randn(3)
    close(gm(x), _leaf_helper(x) + 1)
    assert _leaf_helper.__name__ == "_leaf_helper"  # unpatched after the trace
    with pytest.raises(NotImplementedError, match="top level of a module"):
        fx.wrap("len")


def test_math_functions_are_autowrapped():
    import math

    def fn(x):
        return x * math.sqrt(x.size(0))

    gm = fx.symbolic_trace(fn)
    assert any(n.target is math.sqrt for n in gm.graph.nodes)
    close(gm(ember.ones(4)), ember.full((4,), 2.0))


def test_concrete_args_specialize_with_a_guard():
    def fn(x, flag=True):
        if flag:
            return x + 1
        return x - 1

    gm = fx.symbolic_trace(fn, concrete_args={"flag": False})
    assert "def forward(self, x, flag_1 = True):" in gm.code
    x = ember.ones(2)
    close(gm(x, False), x - 1)
    with pytest.raises(AssertionError, match="flag has been specialized to have value False "
                       "but got another value"):
        gm(x)


def test_concrete_args_guard_survives_dead_code_elimination():
    # the guard's value is unused, but it is a side effect (torch.fx keeps torch._assert)
    def fn(x, flag):
        return x + 1 if flag else x - 1

    gm = fx.symbolic_trace(fn, concrete_args={"flag": False})
    assert not gm.graph.eliminate_dead_code()
    gm.recompile()
    x = ember.ones(2)
    close(gm(x, False), x - 1)
    with pytest.raises(AssertionError, match="flag has been specialized"):
        gm(x, True)


def test_submodule_management():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.unused = nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x)

    gm = fx.symbolic_trace(Net())
    assert not hasattr(gm, "unused")  # only what the graph uses is copied
    assert gm.add_submodule("extra.inner", nn.ReLU())
    assert isinstance(gm.extra.inner, nn.ReLU)
    assert gm.delete_submodule("extra.inner") and not gm.delete_submodule("extra.inner")
    gm.add_submodule("spare", nn.Tanh())
    gm.delete_all_unused_submodules()
    assert [name for name, _ in gm.named_children()] == ["a"]
    with pytest.raises(RuntimeError, match="referenced target b but that target was not provided"):
        g = fx.Graph()
        g.output(g.call_module("b", (g.placeholder("x"),)))
        fx.GraphModule({}, g)


def test_graph_module_pickles_and_deepcopies():
    m = MyModule()
    gm = fx.symbolic_trace(m)
    x = ember.randn(3, 4)
    for twin in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        assert type(twin).__name__ == "MyModule" and twin.code == gm.code
        close(twin(x), gm(x))
        assert twin.param is not gm.param
    shallow = copy.copy(gm)
    assert shallow.param is gm.param


def test_graph_module_from_a_dict_and_deepcopied_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(operator.mul, (x, w)))
    gm = fx.GraphModule({"sub.w": nn.Parameter(ember.full((2,), 3.0))}, g, "FromDict")
    assert "sub.w" in dict(gm.named_parameters())
    close(gm(ember.ones(2)), ember.full((2,), 3.0))
    g2 = copy.deepcopy(g)
    assert [n.name for n in g2.nodes] == [n.name for n in g.nodes]
    assert all(a is not b for a, b in zip(g2.nodes, g.nodes))


def test_export_and_compile_run_a_graph_module():
    model = small_cnn().eval()
    gm = fx.symbolic_trace(model).eval()
    x = ember.randn(2, 1, 8, 8)
    program = ember.export.export(gm, (x,))
    close(program.module()(x), model(x), 1e-5)
    compiled = ember.compile(gm)
    with ember.no_grad():
        close(compiled(x), model(x), 1e-5)


def test_side_effect_functions_survive_dead_code_elimination():
    calls = []

    def log(x):
        calls.append(x)

    fx.has_side_effect(log)
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(log, (x,))
    g.call_function(ember.neg, (x,))
    g.output(x)
    g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "log", "output"]
    gm = fx.GraphModule(nn.Module(), g)
    gm(ember.ones(1))
    assert len(calls) == 1


def test_map_arg_and_proxy_magic():
    g = fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    assert fx.map_arg((a, [b, 1], {"k": a}), lambda n: n.name) == ("a", ["b", 1], {"k": "a"})
    p = fx.Proxy(a)
    q = (-p) @ fx.Proxy(b) <= 3
    assert q.node.target is operator.le and q.node.args[0].target is operator.matmul
    r = 2 - p
    assert r.node.target is operator.sub and r.node.args == (2, a)


def test_unpacking_a_leaf_modules_tuple_output():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4, batch_first=True)
            self.register_buffer("scale", ember.full((4,), 2.0))

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            a, b = x.chunk(2, dim=0)
            return out * self.scale + h.sum() + a.sum() - b.mean()

    m = Net()
    gm = fx.symbolic_trace(m)
    getitems = [n for n in gm.graph.nodes if n.target is operator.getitem]
    assert [n.args[1] for n in getitems] == [0, 1, 0, 1, 0, 1]
    assert gm.graph.find_nodes(op="get_attr")[0].target == "scale"  # a buffer read directly
    x = ember.randn(2, 5, 3)
    close(gm(x), m(x), 1e-5)


def test_to_folder_writes_an_importable_module(tmp_path):
    import importlib.util
    import sys

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(3, 4)
            self.w = nn.Parameter(ember.ones(4))
            self.register_buffer("scale", ember.full((4,), 3.0))

        def forward(self, x):
            return self.l(x) * self.scale + self.w

    m = Net()
    fx.symbolic_trace(m).to_folder(tmp_path / "exported", "Exported")
    spec = importlib.util.spec_from_file_location(
        "exported", tmp_path / "exported" / "__init__.py",
        submodule_search_locations=[str(tmp_path / "exported")])
    package = importlib.util.module_from_spec(spec)
    sys.modules["exported"] = package
    try:
        spec.loader.exec_module(package)
        loaded = package.Exported()
    finally:
        sys.modules.pop("exported", None)
        sys.modules.pop("exported.module", None)
    x = ember.randn(2, 3)
    close(loaded(x), m(x))
    assert set(loaded.state_dict()) == set(m.state_dict())


def test_other_threads_run_modules_normally_during_a_trace():
    import threading

    other = nn.Linear(2, 2)
    results = []

    def run_other():
        x = ember.ones(1, 2, device=other.weight.device)  # default devices are per thread
        results.append(other(x))  # not a submodule of the traced root

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(2, 2)

        def forward(self, x):
            t = threading.Thread(target=run_other)
            t.start()
            t.join()
            return self.l(x)

    gm = fx.symbolic_trace(Net())
    assert isinstance(results[0], ember.Tensor) and tuple(results[0].shape) == (1, 2)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_module", "output"]


# -- building code by hand with proxies; wrap'd functions in generated code; profiler ops --

def test_graph_appending_tracer_records_calls_made_outside_a_trace():
    from ember import overrides

    assert not overrides.is_active()  # (tests/conftest.py turns it off before each test)
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    x = fx.Proxy(graph.placeholder("x"), tracer)
    ones = ember.ones(2)
    y = ember.tanh(ember.cat([x, x])) * ones  # a tensor stays a constant argument
    assert overrides.is_active()  # ember functions now see the proxies, as torch's always do
    with pytest.raises(NotImplementedError, match="argument of type: <class "):
        x + nn.Linear(2, 2)
    graph.output(y.node)
    assert [(n.op, n.name) for n in graph.nodes] == [
        ("placeholder", "x"), ("call_function", "cat"), ("call_function", "tanh"),
        ("call_function", "mul"), ("output", "output")]
    assert graph.find_nodes(op="call_function", target=ember.cat)[0].args == ([x.node, x.node],)
    assert y.node.args[1] is ones
    gm = fx.GraphModule(nn.Module(), graph)
    assert "tanh = ember.tanh(cat)" in gm.code
    v = ember.randn(1)
    close(gm(v), ember.tanh(ember.cat([v, v])) * ones)
    assert fx.Proxy(x.node).tracer.graph is graph  # a bare Proxy appends to its node's graph


def test_targets_compare_to_the_public_functions_while_dispatch_is_on():
    from ember import overrides

    gm = fx.symbolic_trace(lambda x: ember.relu(x) + F.relu(x))
    overrides.activate()  # as a hand-made proxy or a Tensor subclass does
    assert overrides.is_dispatching(ember.relu)
    relus = [n for n in gm.graph.nodes if n.op == "call_function"
             and n.target in (ember.relu, F.relu)]
    assert len(relus) == 2
    relus[0].target = F.gelu  # a dispatching wrapper is stored as its function
    assert relus[0]._target is F.gelu and relus[0].target is F.gelu
    gm.recompile()
    assert "relu = ember.nn.functional.gelu(x)\n" in gm.code
    v = ember.randn(4)
    close(gm(v), F.gelu(v) + F.relu(v))


def test_shared_functions_are_named_as_torch_fx_names_them():
    torch = pytest.importorskip("torch")
    import torch.fx as tfx

    def build(lib):
        def f(x, w):
            F_ = lib.nn.functional
            return (lib.tanh(x) + lib.sigmoid(x) + F_.softmax(x, 1)
                    + F_.layer_norm(x, (4,)) + F_.conv1d(x.unsqueeze(0), w).sum())
        return f

    def targets(gm, prefix, qualified):
        return [qualified(n.target).replace(prefix, "LIB").replace("_operator.", "operator.")
                for n in gm.graph.nodes if n.op == "call_function"]

    ours = targets(fx.symbolic_trace(build(ember)), "ember", lambda t: fx.graph._qualified_name(t))
    theirs = targets(tfx.symbolic_trace(build(torch)), "torch", tfx.node._get_qualified_name)
    assert ours == theirs


def _lowp(x):
    return x.float().sigmoid().half()


fx.wrap(_lowp)


def test_wrapped_functions_stay_leaves_when_the_code_is_traced_again():
    class Net(nn.Module):
        def forward(self, x):
            return _lowp(x) + 1

    gm = fx.symbolic_trace(Net())
    global_name = re.sub(r"[^0-9a-zA-Z_]", "_", f"{__name__}._lowp")
    assert gm.code.startswith(f'\nember.fx._symbolic_trace.wrap("{global_name}")\n\n'
                              "def forward(self, x):\n")
    assert f"_lowp = {global_name}(x);  x = None" in gm.code
    again = fx.symbolic_trace(gm)  # tracing the generated forward: _lowp is still one node
    assert [n.target for n in again.graph.nodes if n.op == "call_function"] == \
        [_lowp, operator.add]
    v = ember.randn(3)
    close(again(v).float(), _lowp(v).float() + 1, tol=1e-3)


def test_print_tabular_lays_out_as_tabulate_does(capsys):
    gm = fx.symbolic_trace(lambda x: x + 1)
    gm.graph.print_tabular()
    assert capsys.readouterr().out == (
        "opcode         name    target        args    kwargs\n"
        "-------------  ------  ------------  ------  --------\n"
        "placeholder    x       x             ()      {}\n"
        "call_function  add     operator.add  (x, 1)  {}\n"
        "output         output  output        (add,)  {}\n")


def _range_events(prof):
    return [(e.name, e.cpu_parent.name if e.cpu_parent is not None else None)
            for e in prof.function_events if e.name in ("r", "s", "aten::neg")]


@pytest.mark.parametrize("enter", ["_record_function_enter", "_record_function_enter_new"])
def test_profiler_range_ops_open_a_record_function_range(enter):
    from ember.autograd import profiler

    ops = ember.ops.profiler
    x = ember.randn(3)
    with profiler.profile() as prof:
        handle = getattr(ops, enter)("r", "args")
        ember.neg(x)
        ops._record_function_exit(handle)
        ops._record_function_exit(handle)  # closing it again does nothing
        ember.neg(x)
    assert _range_events(prof) == [("r", None), ("aten::neg", "r"), ("aten::neg", None)]
    assert isinstance(ops._record_function_enter("s"), ember.Tensor)
    assert getattr(ops, enter).default is getattr(ops, enter)
    assert ops._record_function_exit._RecordFunction is ops._record_function_exit
    handle = getattr(ops, enter)("outside a profile")
    ops._record_function_exit(handle)


def test_profiler_range_ops_errors_match_torch():
    torch = pytest.importorskip("torch")
    cases = [lambda lib: lib.ops.profiler._record_function_enter(5),
             lambda lib: lib.ops.profiler._record_function_enter_new("a", 3),
             lambda lib: lib.ops.profiler._record_function_exit(5),
             lambda lib: lib.ops.profiler._record_function_exit(lib.zeros(2))]
    for case in cases:
        messages = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as info:
                case(lib)
            # the lines up to PyTorch's C++ 'Cast error details'
            messages.append([line for line in str(info.value).split("\n")
                             if line and not line.startswith("Cast error details")])
        assert messages[0] == messages[1]


def test_profiler_range_ops_in_a_traced_graph():
    from ember.autograd import profiler

    graph = fx.Graph()
    x = graph.placeholder("x")
    tracer = fx.proxy.GraphAppendingTracer(graph)
    proxy = fx.Proxy(x, tracer)
    name = fx.Proxy(graph.placeholder("name"), tracer)
    handle = ember.ops.profiler._record_function_enter_new(name)
    y = ember.neg(proxy)
    ember.ops.profiler._record_function_exit(handle)
    graph.output(y.node)
    assert not graph.eliminate_dead_code()  # the range ops are side effects: kept
    gm = fx.GraphModule(nn.Module(), graph)
    assert "ember.ops.profiler._record_function_enter_new(name)" in gm.code
    with profiler.profile() as prof:
        gm(ember.randn(2), "r")
    assert _range_events(prof) == [("r", None), ("aten::neg", "r")]


def test_assert_is_traced_as_one_call_and_kept_by_dead_code_elimination():
    import ember.fx

    def f(x):
        ember._assert(x.dim() == 2, "want a matrix")
        return x * 2

    gm = ember.fx.symbolic_trace(f)
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ember._assert in calls
    gm.graph.eliminate_dead_code()
    assert ember._assert in [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert ember.equal(gm(ember.ones(2, 2)), ember.full((2, 2), 2.0))
    with pytest.raises(AssertionError, match="want a matrix"):
        gm(ember.ones(3))
    ember._assert(True, "never")
    with pytest.raises(AssertionError, match="eager"):
        ember._assert(ember.tensor(False), "eager")
