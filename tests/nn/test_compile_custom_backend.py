"""``ember.compile(fn, backend=callable)``: PyTorch's custom backends (the backend gets an
``ember.fx.GraphModule`` and the example inputs once per entry, and its callable runs the
calls), ``ember._dynamo.optimize`` / ``register_backend`` / ``list_backends``, and graph
breaks that are silent by default, as in PyTorch."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from testutils import assert_allclose

import ember
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F
from ember._compile import GraphBreakError, config, explain


class Recorder:
    """A backend that records each graph it is given and runs it."""

    def __init__(self, wrap=None):
        self.calls: list = []
        self.wrap = wrap

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, fx.GraphModule)
        self.calls.append((gm, list(example_inputs)))
        return gm.forward if self.wrap is None else self.wrap(gm)

    def ops(self, i=-1):
        gm = self.calls[i][0]
        return [(n.op, n.target) for n in gm.graph.nodes
                if n.op not in ("placeholder", "output")]


def _foo(x, y):
    a = ember.cos(x)
    b = ember.sin(y)
    return a + b


def test_tutorial_backend_gets_the_graph_once_per_shape_signature(capsys):
    def my_compiler(gm, example_inputs):
        print("my_compiler() called with FX graph:")
        gm.graph.print_tabular()
        return gm.forward

    backend = Recorder(lambda gm: my_compiler(gm, None))
    foo = ember.compile(_foo, backend=backend)
    x, y = ember.randn(10, 10), ember.randn(10, 10)
    assert_allclose(foo(x, y), ember.cos(x) + ember.sin(y), rtol=1e-6, atol=1e-6)
    assert "my_compiler() called with FX graph:" in capsys.readouterr().out
    assert len(backend.calls) == 1
    gm, example = backend.calls[0]
    assert example[0] is x and example[1] is y
    assert backend.ops() == [("call_function", ember.cos), ("call_function", ember.sin),
                             ("call_function", operator.add)]
    placeholders = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["L_x_", "L_y_"]  # PyTorch's names for the arguments
    out = gm.graph.output_node()
    assert isinstance(out.args[0], tuple) and len(out.args[0]) == 1  # a flat tuple, as Dynamo's

    x2, y2 = ember.randn(10, 10), ember.randn(10, 10)
    assert_allclose(foo(x2, y2), ember.cos(x2) + ember.sin(y2), rtol=1e-6, atol=1e-6)
    assert len(backend.calls) == 1  # same shapes: the cached callable runs
    assert capsys.readouterr().out == ""

    x3, y3 = ember.randn(4), ember.randn(4)  # a new shape: traced and compiled again
    assert_allclose(foo(x3, y3), ember.cos(x3) + ember.sin(y3), rtol=1e-6, atol=1e-6)
    assert len(backend.calls) == 2
    assert [tuple(t.shape) for t in backend.calls[1][1]] == [(4,), (4,)]
    foo(ember.randn(10, 10, dtype=ember.float64), ember.randn(10, 10, dtype=ember.float64))
    assert len(backend.calls) == 3  # a new dtype too
    assert explain(foo)["graph_count"] == 3


def test_the_backends_callable_replaces_the_function():
    def plus_one(gm, example_inputs):
        def run(*args):
            return [o + 1 for o in gm(*args)]  # the graph returns a tuple, as Dynamo's
        return run

    @ember.compile(backend=plus_one)
    def g(x):
        return x * 2

    assert_allclose(g(ember.ones(3)), np.full(3, 3.0))
    assert_allclose(g(ember.ones(3)), np.full(3, 3.0))  # the cached callable, again


def test_backend_returning_the_graph_module_itself_and_nested_outputs():
    backend = Recorder(lambda gm: gm)

    @ember.compile(backend=backend)
    def f(x, y, n=2):
        a = ember.cos(x)
        return {"s": a + y * n, "t": (a, 3), "u": [y.relu()]}

    x, y = ember.randn(2, 3), ember.randn(2, 3)
    got, want = f(x, y), f.__wrapped__(x, y)
    assert set(got) == {"s", "t", "u"} and got["t"][1] == 3 and isinstance(got["u"], list)
    for a, b in [(got["s"], want["s"]), (got["t"][0], want["t"][0]), (got["u"][0], want["u"][0])]:
        assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # a non-tensor argument is a constant of the graph, and a new value a new entry
    assert_allclose(f(x, y, n=3)["s"], ember.cos(x) + y * 3, rtol=1e-6, atol=1e-6)
    assert len(backend.calls) == 2
    assert len(backend.calls[1][1]) == 2  # example inputs are the tensors only


def test_module_parameters_are_get_attr_nodes_and_updates_are_seen():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.scale = nn.Parameter(ember.ones(3))

        def forward(self, x):
            return F.relu(self.fc(x)) * self.scale

    ember.manual_seed(0)
    model = Net()
    backend = Recorder()
    cm = ember.compile(model, backend=backend)
    assert cm._orig_mod is model
    x = ember.randn(5, 4)
    assert_allclose(cm(x), model(x), rtol=1e-6, atol=1e-6)
    ops = backend.ops()
    assert ("call_module", "fc") in ops and ("get_attr", "scale") in ops
    assert ("call_function", F.relu) in ops
    assert [t is x for t in backend.calls[0][1]] == [True]

    with ember.no_grad():
        model.scale.mul_(2.0)  # an in-place update (an optimizer step) is seen by the graph
    assert_allclose(cm(x), model(x), rtol=1e-6, atol=1e-6)
    assert len(backend.calls) == 1
    cm(ember.randn(7, 4))  # a new batch size: a new graph
    assert len(backend.calls) == 2


def test_module_training_flag_and_gradients():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    backend = Recorder()
    cm = ember.compile(model, backend=backend)
    x = ember.randn(3, 4)
    cm(x).sum().backward()  # the graph's ops are ember ops: autograd runs through them
    grad = model[0].weight.grad.detach().clone()
    assert grad.abs().sum().item() > 0
    model.eval()
    model.zero_grad()
    out = cm(x)
    assert len(backend.calls) == 2  # the flags of the modules are guarded
    assert_allclose(out, model(x), rtol=1e-6, atol=1e-6)


def test_function_reaching_a_module_through_a_closure():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    backend = Recorder()

    @ember.compile(backend=backend)
    def step(x):
        return model(x).sum()

    x = ember.randn(2, 4)
    assert_allclose(step(x), model(x).sum(), rtol=1e-6, atol=1e-6)
    gm = backend.calls[0][0]
    assert [n.op for n in gm.graph.nodes].count("call_module") == 2


def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_untraceable_code_is_a_silent_graph_break_and_runs_eagerly():
    backend = Recorder()
    f = ember.compile(_branchy, backend=backend)
    x = ember.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # silent, as in PyTorch
        assert_allclose(f(x), x * 2)
        assert_allclose(f(-x), -x - 1)
    assert backend.calls == []
    info = explain(f)
    assert info["graph_count"] == 0 and info["graph_break_count"] == 1
    assert "control flow" in info["entries"][0]["graph_breaks"][0]


def test_fullgraph_raises_on_untraceable_code():
    f = ember.compile(_branchy, backend=Recorder(), fullgraph=True)
    with pytest.raises(GraphBreakError, match="fullgraph=True.*control flow"):
        f(ember.ones(3))


def test_graph_breaks_warn_only_when_asked(monkeypatch):
    for make in (lambda: ember.compile(_branchy), lambda: ember.compile(_branchy,
                                                                       backend=Recorder())):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            make()(ember.ones(3))  # the default backend's graph break is silent too
        monkeypatch.setattr(config, "warn_on_graph_break", True)
        with pytest.warns(UserWarning, match="graph break in _branchy"):
            make()(ember.ones(3))
        monkeypatch.setattr(config, "warn_on_graph_break", False)


def test_torch_logs_graph_breaks_turns_the_warnings_on(monkeypatch):
    from ember._compile import _torch_logs_graph_breaks

    for value, want in [("", False), ("recompiles", False), ("graph_breaks", True),
                        ("+dynamo, graph_breaks", True)]:
        monkeypatch.setenv("TORCH_LOGS", value)
        assert _torch_logs_graph_breaks() is want


def test_dynamo_optimize_register_backend_and_list_backends(monkeypatch):
    from ember._compile import _REGISTERED, _TAGS

    monkeypatch.setattr("ember._compile._REGISTERED", dict(_REGISTERED))
    monkeypatch.setattr("ember._compile._TAGS", dict(_TAGS))
    backend = Recorder(lambda gm: (lambda *a: [o * 10 for o in gm(*a)]))

    @ember._dynamo.optimize(backend)
    def f(x):
        return x + 1

    assert_allclose(f(ember.zeros(2)), np.full(2, 10.0))
    assert len(backend.calls) == 1

    assert ember._dynamo.list_backends() == ["ember", "inductor"]
    assert "eager" in ember._dynamo.list_backends(exclude_tags=())
    assert ember._dynamo.register_backend(backend, name="times_ten") is backend
    assert "times_ten" in ember._dynamo.list_backends()
    assert ember._dynamo.lookup_backend("times_ten") is backend
    with pytest.raises(AssertionError, match="duplicate name: times_ten"):
        ember._dynamo.register_backend(backend, name="times_ten")

    @ember._dynamo.register_backend(tags=("debug",))
    def quiet(gm, example_inputs):
        return gm.forward

    assert "quiet" not in ember._dynamo.list_backends()
    assert "quiet" in ember._dynamo.list_backends(exclude_tags=())

    g = ember.compile(lambda x: x - 1, backend="times_ten")
    assert_allclose(g(ember.ones(2)), np.zeros(2))
    assert_allclose(ember._dynamo.optimize("times_ten")(lambda x: x * 3)(ember.ones(2)),
                    np.full(2, 30.0))
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        ember._dynamo.optimize("nope")
    assert ember._dynamo.optimize(backend, disable=True)(_branchy) is _branchy
    with pytest.raises(GraphBreakError):
        ember._dynamo.optimize(backend, nopython=True)(_branchy)(ember.ones(2))


def test_is_compiling_while_tracing_and_reset():
    seen = []

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    backend = Recorder()
    cf = ember.compile(f, backend=backend)
    cf(ember.ones(2))
    cf(ember.ones(2))
    assert seen == [True]  # traced once, then the backend's callable runs
    ember.compiler.reset()
    cf(ember.ones(2))
    assert len(backend.calls) == 2


def test_keyword_and_list_arguments_are_flat_named_inputs():
    backend = Recorder()

    @ember.compile(backend=backend)
    def f(x, ys, *, w):
        return x + ys[0] * w - ys[1]

    x, y0, y1, w = ember.randn(3), ember.randn(3), ember.randn(3), ember.randn(3)
    assert_allclose(f(x, [y0, y1], w=w), x + y0 * w - y1, rtol=1e-6, atol=1e-6)
    gm, example = backend.calls[0]
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == \
        ["L_x_", "L_ys_0_", "L_ys_1_", "L_w_"]
    assert [t is v for t, v in zip(example, (x, y0, y1, w))] == [True] * 4
    # keyword arguments given in another order: the names follow the values
    g = ember.compile(lambda a, b: a - b, backend=backend)
    assert_allclose(g(b=w, a=x), x - w, rtol=1e-6, atol=1e-6)
    gm, example = backend.calls[1]
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["L_b_", "L_a_"]
    assert example[0] is w and example[1] is x


def test_a_custom_backend_needs_ember_fx(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ember.fx", None)  # as if ember-nn were not installed
    f = ember.compile(lambda x: x + 1, backend=Recorder())
    with pytest.raises(RuntimeError, match="ember.fx, which ships with ember-nn"):
        f(ember.ones(2))


def test_a_failing_backend_raises_unless_errors_are_suppressed(monkeypatch):
    def broken(gm, example_inputs):
        raise ValueError("no luck")

    with pytest.raises(ValueError, match="no luck"):
        ember.compile(lambda x: x + 1, backend=broken)(ember.ones(2))
    monkeypatch.setattr(config, "suppress_errors", True)
    f = ember.compile(lambda x: x + 1, backend=broken)
    assert_allclose(f(ember.ones(2)), np.full(2, 2.0))
    assert "no luck" in explain(f)["entries"][0]["graph_breaks"][0]


def test_replacing_a_submodule_or_parameter_makes_a_new_entry():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.bias = nn.Parameter(ember.zeros(3))

        def forward(self, x):
            return self.fc(x) + self.bias

    ember.manual_seed(0)
    model = Net()
    backend = Recorder()
    cm = ember.compile(model, backend=backend)
    x = ember.randn(2, 4)
    cm(x)
    cm(x)
    assert len(backend.calls) == 1
    model.fc = nn.Linear(4, 3)
    assert_allclose(cm(x), model(x), rtol=1e-6, atol=1e-6)
    model.bias = nn.Parameter(ember.ones(3))
    assert_allclose(cm(x), model(x), rtol=1e-6, atol=1e-6)
    assert len(backend.calls) == 3


def test_a_random_draw_at_trace_time_is_a_graph_break():
    backend = Recorder()

    @ember.compile(backend=backend)
    def noisy(x):
        return x + ember.randn(3)  # no traced value: fx would bake one draw into the graph

    ember.manual_seed(0)
    a = noisy(ember.zeros(3))
    ember.manual_seed(0)
    assert_allclose(a, ember.randn(3))  # the eager run drew what eager draws
    b = noisy(ember.zeros(3))
    assert not np.allclose(a.numpy(), b.numpy())  # a fresh draw per call
    assert backend.calls == []
    assert "random" in explain(noisy)["entries"][0]["graph_breaks"][0]
    # a draw on a traced value is recorded in the graph: it runs per call
    drop = ember.compile(lambda x: F.dropout(x, 0.5), backend=backend)
    x = ember.ones(1000)
    assert not np.array_equal(drop(x).numpy(), drop(x).numpy())
    assert len(backend.calls) == 1


def test_parity_with_torch_compile_custom_backends():
    torch = pytest.importorskip("torch")

    def program(lib, compile_kwargs):
        counts = []

        def plus_one(gm, example_inputs):
            counts.append([tuple(t.shape) for t in example_inputs])
            return lambda *args: [o + 1 for o in gm(*args)]

        def first(gm, example_inputs):
            return lambda *args: gm(*args)[0]  # a tensor: the result is its first row

        def f(x, y, n=2):
            return {"s": lib.cos(x) + y * n, "t": (lib.sin(y), 3)}

        cf = lib.compile(f, backend=plus_one, **compile_kwargs)
        x, y = (lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
                for _ in range(2))
        outs = [cf(x, y), cf(x, y), cf(x[:1], y[:1]), cf(x, y, n=3)]
        g = lib.compile(lambda x: x * 2, backend=first, **compile_kwargs)
        flat = [o["s"] for o in outs] + [o["t"][0] for o in outs] + [g(x)]
        return counts, [o["t"][1] for o in outs], [v.detach().numpy() for v in flat]

    t_counts, t_consts, t_vals = program(torch, {"dynamic": False})
    e_counts, e_consts, e_vals = program(ember, {})
    assert e_counts == t_counts and e_consts == t_consts
    for a, b in zip(e_vals, t_vals):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_module_compile_compiles_the_module_in_place():
    """``nn.Module.compile()`` (PyTorch's tutorial calls ``mod.compile()``): the module stays
    itself (state dict keys, parameters), its calls run compiled, hooks included, and a
    backend is passed on."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = ember.randn(5, 3)
    want = m(x) * 2
    m.register_forward_hook(lambda mod, args, out: out * 2)  # part of the compiled call
    assert m.compile() is None
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for _ in range(2):  # capture, then replay
        assert_allclose(m(x), want, rtol=1e-6, atol=1e-6)
    from ember._compile import explain

    assert explain(m._compiled_call_impl)["entries"][0]["eager"] is False
    m(x).sum().backward()
    assert m[0].weight.grad is not None
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    other = nn.Linear(2, 2)
    other.compile(backend=backend)
    y = ember.randn(3, 2)
    assert_allclose(other(y), F.linear(y, other.weight, other.bias))
    assert len(graphs) == 1
