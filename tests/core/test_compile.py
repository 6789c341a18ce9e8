"""``ember.compile``: the API, inference replay equal to eager, guards and re-capture, graph
breaks, and whole training steps (forward, backward, optimizer step) equal to eager."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from testutils import assert_allclose

import ember
from ember._compile import GraphBreakError, config, explain

nn = pytest.importorskip("ember.nn")
F = nn.functional

def _load_export_suite():
    """tests/core/test_export.py as a module (its MODELS: every model of the export suite)."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).with_name("test_export.py")
    spec = importlib.util.spec_from_file_location("_export_suite_for_compile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


test_export = _load_export_suite()


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# -- API --------------------------------------------------------------------------------------

def test_decorator_forms_and_function():
    @ember.compile
    def f(x):
        return (x * 2 + 1).relu()

    @ember.compile(fullgraph=True)
    def g(x):
        return x.exp() - 1

    x = ember.randn(3, 4)
    assert_allclose(f(x), (x * 2 + 1).relu())
    assert_allclose(f(x), (x * 2 + 1).relu())  # the replay
    assert_allclose(g(x), x.exp() - 1)
    assert f.__name__ == "f"


def test_module_wrapper_is_an_optimized_module():
    m = _mlp().eval()
    cm = ember.compile(m)
    assert type(cm).__name__ == "OptimizedModule" and isinstance(cm, nn.Module)
    assert cm._orig_mod is m
    assert list(cm.state_dict()) == [f"_orig_mod.{k}" for k in m.state_dict()]
    m.note = "mine"
    assert cm.note == "mine"  # other attributes are the model's (as PyTorch's)
    x = ember.randn(8, 32)
    with ember.no_grad():
        assert_allclose(cm(x), m(x))
    cm.train()
    assert m.training


def test_disable_true_returns_the_model_and_bad_arguments_raise():
    m = _mlp()
    assert ember.compile(m, disable=True) is m
    with pytest.raises(ValueError, match="unknown backend"):
        ember.compile(m, backend="nope")
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(m, mode="fast")
    with pytest.raises(RuntimeError, match="expects a callable"):
        ember.compile(3)


def test_compiler_namespace():
    seen = []

    @ember.compiler.disable
    def note(x):
        seen.append(ember.compiler.is_compiling())
        return x

    @ember.compile
    def f(x):
        seen.append(ember.compiler.is_compiling())
        note(1)
        return x + 1

    x = ember.randn(2)
    f(x)
    f(x)  # replay: the Python body does not run, the opaque call does
    assert seen == [True, False, False]
    assert not ember.compiler.is_compiling()
    ember.compiler.reset()
    assert explain(f)["entries"] == []
    f(x)
    assert len(explain(f)["entries"]) == 1


def test_import_ember_stays_lazy_and_builtin_compile_is_not_shadowed():
    code = ("import sys, ember; print(sorted(m for m in sys.modules if m.startswith("
            "('ember._compile', 'ember.compiler')))); c = ember.compile; "
            "print(c.__module__, 'compile' in vars(ember))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    assert out == ["[]", "ember._compile False"]


# -- inference ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(test_export.MODELS))
def test_every_export_model_compiled_equals_eager(name):
    model, inputs, _ = test_export._make(name)
    compiled = ember.compile(model)
    with ember.no_grad():
        want = model(*inputs)
        first = _quiet(compiled, *inputs)
        again = compiled(*inputs)
        other = [ember.randn(*t.shape) for t in inputs]
        want_other = model(*other)
        got_other = compiled(*other)
    test_export._assert_same(first, want, atol=1e-5)
    test_export._assert_same(again, want, atol=1e-5)
    test_export._assert_same(got_other, want_other, atol=1e-5)
    assert explain(compiled)["graph_count"] == 1


def test_mlp_inference_lowers_every_op():
    cm = ember.compile(_mlp().eval())
    with ember.no_grad():
        cm(ember.randn(8, 32))
    entry = explain(cm)["entries"][0]
    assert entry["fallback_ops"] == [] and not entry["eager"]
    assert "xp.dot(" in entry["source"] and "xp.maximum(" in entry["source"]


def test_outputs_are_fresh_tensors():
    cm = ember.compile(_mlp().eval())
    x = ember.randn(8, 32)
    with ember.no_grad():
        a = cm(x)
        keep = a.clone()
        b = cm(x * 2)
    xp = ember.ops.api.array_module(a)
    assert not xp.shares_memory(ember.ops.api.array(a), ember.ops.api.array(b))
    assert_allclose(a, keep)


def test_in_place_parameter_update_is_seen_and_replacement_recaptures():
    m = _mlp().eval()
    cm = ember.compile(m)
    x = ember.randn(8, 32)
    with ember.no_grad():
        cm(x)
        m[0].weight.mul_(0.5)
        assert_allclose(cm(x), m(x))
        assert len(explain(cm)["entries"]) == 1
        m[2].weight = nn.Parameter(ember.randn(10, 64))
        assert_allclose(cm(x), m(x))
    assert len(explain(cm)["entries"]) == 2


def test_guards_recapture_on_shape_dtype_grad_mode_and_training_flag():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    cm = ember.compile(m.eval())
    with ember.no_grad():
        cm(ember.randn(2, 4))
        cm(ember.randn(3, 4))  # new batch size
        cm(ember.randn(3, 4))  # the same guards: no new entry
    assert len(explain(cm)["entries"]) == 2
    m.train()
    with ember.no_grad():
        out = cm(ember.ones(3, 4) * 5)
    assert len(explain(cm)["entries"]) == 3
    assert float((out == 0).float().mean()) > 0  # dropout is on in training


def test_cache_size_limit_warns_once_then_runs_eagerly(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)

    @ember.compile
    def f(x):
        return x + 1

    f(ember.ones(1))
    f(ember.ones(2))
    with pytest.warns(UserWarning, match="cache_size_limit"):
        out = f(ember.ones(3))
    assert_allclose(out, ember.ones(3) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(ember.ones(4))
    assert len(explain(f)["entries"]) == 2


# -- graph breaks ---------------------------------------------------------------------------

def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_graph_break_warns_runs_eagerly_and_is_explained():
    f = ember.compile(_branchy)
    x = ember.ones(3)
    with pytest.warns(UserWarning, match="graph break"):
        assert_allclose(f(x), x * 2)
    assert_allclose(f(-x), -x - 1)  # the entry runs eagerly: both branches right
    info = explain(f)
    assert info["graph_break_count"] == 1 and info["entries"][0]["eager"]
    assert "data-dependent" in info["entries"][0]["graph_breaks"][0]
    assert "test_compile.py" in info["entries"][0]["graph_breaks"][0]


def test_fullgraph_raises_on_a_graph_break():
    f = ember.compile(_branchy, fullgraph=True)
    with pytest.raises(GraphBreakError, match="data-dependent.*test_compile.py"):
        f(ember.ones(3))


# -- training steps ------------------------------------------------------------------------------

def _train(make_model, make_opt, inputs, steps=4, compiled=True):
    model = make_model()
    opt = make_opt(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = ember.compile(step) if compiled else step
    losses = [float(_quiet(run, *inputs)) for _ in range(steps)]
    return losses, [p.detach().clone() for p in model.parameters()], run


def _mlp784():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU(),
                         nn.Linear(12, 5))


@pytest.mark.parametrize("opt", ["sgd_momentum", "adam"])
def test_mlp_training_step_equals_eager(opt):
    make_opt = {"sgd_momentum": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
                "adam": lambda p: ember.optim.Adam(p, lr=1e-2)}[opt]
    ember.manual_seed(1)
    inputs = (ember.randn(8, 20), ember.randint(0, 5, (8,)))
    want_losses, want_params, _ = _train(_mlp784, make_opt, inputs, compiled=False)
    losses, params, run = _train(_mlp784, make_opt, inputs)
    assert_allclose(np.array(losses), np.array(want_losses), rtol=1e-6, atol=1e-6)
    for p, q in zip(params, want_params):
        assert_allclose(p, q, rtol=1e-6, atol=1e-6)
    entry = explain(run)["entries"][0]
    assert not entry["eager"] and entry["fallback_ops"] == []
    assert entry["grad_fallback_ops"] == []  # linear, relu, cross_entropy: all have VJPs


def test_lenet_training_step_equals_eager():
    def lenet():
        ember.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(4 * 6 * 6, 10))

    ember.manual_seed(2)
    inputs = (ember.randn(4, 1, 16, 16), ember.randint(0, 10, (4,)))
    make_opt = lambda p: ember.optim.SGD(p, lr=0.05, momentum=0.9)
    want_losses, want_params, _ = _train(lenet, make_opt, inputs, compiled=False)
    losses, params, run = _train(lenet, make_opt, inputs)
    assert_allclose(np.array(losses), np.array(want_losses), rtol=1e-5, atol=1e-6)
    for p, q in zip(params, want_params):
        assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert not explain(run)["entries"][0]["eager"]


def test_gradients_accumulate_without_zero_grad():
    def run(compiled):
        m = _mlp784()

        def step(x, y):
            F.cross_entropy(m(x), y).backward()

        f = ember.compile(step) if compiled else step
        x, y = ember.randn(4, 20), ember.randint(0, 5, (4,))
        for _ in range(3):
            f(x, y)
        return [p.grad.clone() for p in m.parameters()]

    ember.manual_seed(3)
    want = run(False)
    ember.manual_seed(3)
    got = run(True)
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_outputs_that_require_grad_run_eagerly_and_backpropagate():
    m = _mlp()
    cm = ember.compile(m)
    x = ember.randn(8, 32)
    with pytest.warns(UserWarning, match="requires grad"):
        out = cm(x)
    out.sum().backward()
    assert m[0].weight.grad is not None
    assert explain(cm)["entries"][0]["eager"]
