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
    with pytest.raises(AssertionError, match="A callable function is expected"):
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
    assert ("xp.dot(" in entry["source"] or "_gemm" in entry["source"]) \
        and "xp.maximum(" in entry["source"]


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


def test_broadcast_bias_copy_follows_in_place_updates():
    # an inference entry adds a same-shape copy of each bias (faster than a broadcast): every
    # in-place route to the bias (the tensor, its .data, a view, an optimizer step, a loaded
    # state dict) reaches the copy through the version counter
    m = _mlp().eval()
    cm = ember.compile(m)
    x = ember.randn(8, 32)
    opt = ember.optim.SGD(m.parameters(), lr=0.5)
    with ember.no_grad():
        cm(x)
        assert "_bb" in explain(cm)["entries"][0]["source"]
        m[0].bias.add_(1.0)
        assert_allclose(cm(x), m(x))
        m[2].bias.data.mul_(-2.0)
        assert_allclose(cm(x), m(x))
        m[0].bias[:3].fill_(0.25)
        assert_allclose(cm(x), m(x))
    for p in m.parameters():
        p.grad = ember.ones_like(p)
    opt.step()
    with ember.no_grad():
        assert_allclose(cm(x), m(x))
        m.load_state_dict(_mlp().state_dict())
        assert_allclose(cm(x), m(x))
    assert len(explain(cm)["entries"]) == 1


@pytest.mark.parametrize("layers", ["hardswish_inplace", "relu_inplace", "dropout_inplace",
                                    "both"])
def test_in_place_activation_and_dropout_in_a_compiled_training_step(layers):
    # an F op with inplace=True and no in-place kernel runs on a recorded clone (its saved
    # input stays unwritten) and is copied back, which the compiled step replays as the
    # functional op; an in-place op run through autograd gets a clone of its leaf
    def build():
        ember.manual_seed(0)
        mid = {"hardswish_inplace": [nn.Hardswish(inplace=True)],
               "relu_inplace": [nn.BatchNorm1d(16), nn.ReLU(inplace=True)],
               "dropout_inplace": [nn.Dropout(0.0, inplace=True)],
               "both": [nn.Hardswish(inplace=True), nn.Dropout(0.0, inplace=True)]}[layers]
        m = nn.Sequential(nn.Linear(8, 16), *mid, nn.Linear(16, 4)).train()
        opt = ember.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        return m, step

    (m1, eager), (m2, step) = build(), build()
    compiled = ember.compile(step)
    x = ember.randn(4, 8)
    for _ in range(3):
        assert_allclose(compiled(x), eager(x))
    for a, b in zip(m2.parameters(), m1.parameters()):
        assert_allclose(a, b)
    assert not explain(compiled)["entries"][0]["eager"]


@pytest.mark.parametrize("how", ["div", "rdiv", "mul_", "add_", "sub_", "div_", "add_bias"])
def test_binary_ops_and_their_in_place_forms_differentiate_as_eager(how):
    # every operand's gradient, a divisor's included (-a / b**2), and the in-place forms on
    # intermediate values (computed as the functional op in the compiled step)
    def build():
        ember.manual_seed(0)
        lin, lin2 = nn.Linear(4, 6), nn.Linear(6, 2)

        def step(x):
            h = lin(x) + 1.0
            d = lin(x).exp()
            if how == "div":
                h = h / d
            elif how == "rdiv":
                h = 2.0 / (d + 1.0) + h
            elif how == "mul_":
                h.mul_(d)
            elif how == "add_":
                h.add_(d * 0.5)
            elif how == "sub_":
                h.sub_(d)
            elif how == "div_":
                h.div_(d)
            else:
                h.add_(lin.bias[:1])
            loss = lin2(h).square().mean()
            loss.backward()
            return loss

        return (lin, lin2), step

    (m1, eager), (m2, step) = build(), build()
    compiled = ember.compile(step)
    x = ember.randn(3, 4)
    for _ in range(2):
        for p in [*m1[0].parameters(), *m1[1].parameters(), *m2[0].parameters(),
                  *m2[1].parameters()]:
            p.grad = None
        assert_allclose(compiled(x), eager(x))
        for a, b in zip([*m2[0].parameters(), *m2[1].parameters()],
                        [*m1[0].parameters(), *m1[1].parameters()]):
            assert_allclose(a.grad, b.grad)
    assert not explain(compiled)["entries"][0]["eager"]


@pytest.mark.parametrize("shared", [False, True])
def test_relu_then_max_pool_runs_pooled_first(shared):
    # max_pool(relu(x)) == relu(max_pool(x)), gradients too: the compiled step pools first
    # (a quarter of the ReLU work for 2x2 pools) unless the ReLU's output is read elsewhere
    def build():
        ember.manual_seed(0)
        conv, head = nn.Conv2d(1, 4, 3), nn.Linear(4 * 3 * 3, 3)

        def step(x):
            r = F.relu(conv(x))
            h = F.max_pool2d(r, 2)
            loss = head(h.flatten(1)).square().mean()
            if shared:
                loss = loss + r.mean()
            loss.backward()
            return loss

        return (conv, head), step

    (m1, eager), (m2, step) = build(), build()
    compiled = ember.compile(step)
    x = ember.randn(2, 1, 8, 8)
    x[0, 0, :4, :4] = -1.0  # whole windows at or below zero: no gradient either way
    for _ in range(2):
        for p in [*m1[0].parameters(), *m1[1].parameters(), *m2[0].parameters(),
                  *m2[1].parameters()]:
            p.grad = None
        assert_allclose(compiled(x), eager(x), rtol=1e-6, atol=1e-7)
        for a, b in zip([*m2[0].parameters(), *m2[1].parameters()],
                        [*m1[0].parameters(), *m1[1].parameters()]):
            assert_allclose(a.grad, b.grad, rtol=1e-5, atol=1e-7)
    src = explain(compiled)["entries"][0]["source"]
    pooled_first = src.index("v_max_pool2d") < src.index("xp.maximum(")
    assert pooled_first != shared


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


def test_graph_break_runs_eagerly_silently_and_is_explained(monkeypatch):
    f = ember.compile(_branchy)
    x = ember.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # silent by default, as in PyTorch
        assert_allclose(f(x), x * 2)
    monkeypatch.setattr(config, "warn_on_graph_break", True)  # unless asked (TORCH_LOGS)
    with pytest.warns(UserWarning, match="graph break"):
        assert_allclose(ember.compile(_branchy)(x), x * 2)
    assert_allclose(f(-x), -x - 1)  # the entry runs eagerly: both branches right
    info = explain(f)
    assert info["graph_break_count"] == 1 and info["entries"][0]["eager"]
    assert "data-dependent" in info["entries"][0]["graph_breaks"][0]
    assert "test_compile.py" in info["entries"][0]["graph_breaks"][0]


def test_fullgraph_raises_on_a_graph_break():
    f = ember.compile(_branchy, fullgraph=True)
    with pytest.raises(GraphBreakError, match="data-dependent.*test_compile.py"):
        f(ember.ones(3))


def test_nested_tensor_inputs_run_eagerly(monkeypatch):
    # PyTorch compiles jagged nested tensors; ember.compile has no one array to capture for
    # them, so such a call runs eagerly (a graph break) instead of failing
    lin = nn.Linear(4, 4)
    nt = ember.nested.nested_tensor([ember.randn(2, 4), ember.randn(3, 4)],
                                    layout=ember.jagged)

    def f(x, scale):
        return lin(x).relu() * scale

    compiled = ember.compile(f)
    for _ in range(2):
        out = compiled(nt, 2.0)
        assert out.is_nested and out.shape[0] == 2
        for got, want in zip(out.unbind(), f(nt, 2.0).unbind()):
            assert ember.equal(got, want)
    assert ember.equal(compiled(ember.ones(1, 4), 2.0), f(ember.ones(1, 4), 2.0))
    module = ember.compile(lin)
    assert ember.equal(module(nt).unbind()[1], lin(nt).unbind()[1])
    monkeypatch.setattr(config, "warn_on_graph_break", True)
    with pytest.warns(UserWarning, match=r"input arg1\['x'\] is a nested tensor"):
        ember.compile(lambda s, d: f(d["x"], s))(1.0, {"x": nt})
    with pytest.raises(GraphBreakError, match="input arg0 is a nested tensor"):
        ember.compile(f, fullgraph=True)(nt, 2.0)


def test_a_profile_shows_the_compiled_region():
    # PyTorch's profile names a compiled call's range "Torch-Compiled Region: frame/entry"
    from ember.profiler import profile, record_function

    lin = nn.Linear(8, 8)
    compiled = ember.compile(lin)
    x = ember.randn(4, 8)
    want = lin(x)
    compiled(x)
    with profile() as prof:
        with record_function("region"):
            assert ember.equal(compiled(x), want)
            compiled(ember.randn(5, 8))  # a new entry: captured under the profile
            compiled(x)
    frame = compiled._compiled._frame_id  # the module's CompiledFunction
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts[f"Torch-Compiled Region: {frame}/0"] == 2
    assert counts[f"Torch-Compiled Region: {frame}/1"] == 1
    region = next(e for e in prof.events() if e.name == "region")
    assert sorted(c.name for c in region.cpu_children if c.name.startswith("Torch-")) == [
        f"Torch-Compiled Region: {frame}/0", f"Torch-Compiled Region: {frame}/0",
        f"Torch-Compiled Region: {frame}/1"]
    assert ember.equal(compiled(x), want)  # outside a profile: as before


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


def test_outputs_that_require_grad_are_compiled_and_backpropagate(monkeypatch):
    # autograd continues from the outputs (one CompiledFunctionBackward node): compiled, no
    # graph break (tests/core/test_compile_forward_autograd.py checks the gradients at length)
    monkeypatch.setattr(config, "warn_on_graph_break", True)
    m = _mlp()
    cm = ember.compile(m)
    x = ember.randn(8, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm(x)
        out = cm(x)  # the replay
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    out.sum().backward()
    got = m[0].weight.grad.numpy().copy()
    m.zero_grad()
    m(x).sum().backward()
    assert_allclose(got, m[0].weight.grad, rtol=1e-6, atol=1e-7)
    assert not explain(cm)["entries"][0]["eager"]


# -- fused ops (ember.ops.api.fused_op) -------------------------------------------------------

def _scaled_tanh_op():
    """``(tanh(x) * w, x * 2)`` as a fused op: two outputs, array kernels, a reference."""
    from ember.ops import api

    def forward(ctx, x, w):
        xp = api.array_module_of(x)
        t = xp.tanh(x)
        ctx["t"], ctx["x"], ctx["w"] = t, x, w
        return t * w, x * 2

    def backward(ctx, grads):
        g0, g1 = grads
        t, w = ctx["t"], ctx["w"]
        gx = 0 * t if g0 is None else g0 * w * (1 - t * t)
        if g1 is not None:
            gx = gx + 2 * g1
        gw = None if g0 is None else (g0 * t).sum(0)
        return gx, gw

    def reference(x, w):
        return x.tanh() * w, x * 2

    return api.fused_op("scaled_tanh", forward, backward, reference=reference)


def test_fused_op_eager_compiled_and_exported_equal_the_reference():
    op = _scaled_tanh_op()
    ember.manual_seed(4)
    x0, w0 = ember.randn(3, 4, dtype=ember.float64), ember.randn(4, dtype=ember.float64)

    def grads(f):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        a, b = f(x, w)
        ((a * a).sum() + (b * 3).sum()).backward()
        return a.detach(), b.detach(), x.grad, w.grad

    want = grads(lambda x, w: (x.tanh() * w, x * 2))
    got = grads(op)
    for g, w in zip(got, want):
        assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    a, _ = op(x0.requires_grad_(), w0)
    assert type(a.grad_fn).__name__ == "ScaledTanhBackward0"
    x0.requires_grad_(False)
    assert ember.autograd.gradcheck(lambda x, w: op(x, w)[0],
                                    (x0.clone().requires_grad_(), w0.clone().requires_grad_()))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(w0.clone())

        def forward(self, x):
            return op(x, self.w)

    m = M()
    opt = ember.optim.SGD(m.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        a, b = m(x)
        loss = (a * a).sum() + (b * 3).sum()
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(step, fullgraph=True)
    losses = [float(compiled(x0)) for _ in range(3)]
    m2 = M()
    opt2 = ember.optim.SGD(m2.parameters(), lr=0.1)
    for loss in losses:
        opt2.zero_grad()
        a, b = x0.tanh() * m2.w, x0 * 2
        want = (a * a).sum() + (b * 3).sum()
        want.backward()
        opt2.step()
        assert abs(float(want) - loss) < 1e-12
    assert_allclose(m.w, m2.w, rtol=1e-12, atol=1e-12)
    entry = explain(compiled)["entries"][0]
    assert "scaled_tanh" in entry["source"] and entry["grad_fallback_ops"] == []
    exported = ember.export.export(M(), (x0,))
    assert {n.op for n in exported.graph.nodes} >= {"tanh", "mul"}


# -- more training steps ---------------------------------------------------------------------

def _step_equal(make_model, make_opt, inputs, loss_fn, steps=5, tol=1e-6, seed=0,
                graph=True):
    """Losses and parameters after ``steps`` compiled steps equal eager's (same seeds)."""
    def run(compiled):
        ember.manual_seed(seed)
        model = make_model()
        opt = make_opt(model.parameters())

        def step(*xs):
            opt.zero_grad()
            loss = loss_fn(model(*xs))
            loss.backward()
            opt.step()
            return loss

        f = ember.compile(step) if compiled else step
        ember.manual_seed(seed + 1)
        losses = [float(_quiet(f, *inputs)) for _ in range(steps)]
        return losses, [p.detach().clone() for p in model.parameters()], f

    want_losses, want_params, _ = run(False)
    losses, params, f = run(True)
    assert_allclose(np.array(losses), np.array(want_losses), rtol=tol, atol=tol)
    for p, q in zip(params, want_params):
        assert_allclose(p, q, rtol=tol, atol=tol)
    entry = explain(f)["entries"][0]
    if graph:
        assert not entry["eager"], entry["reason"]
    return entry


def _sq_loss(out):
    flat = test_export._flat(out)
    total = None
    for o in flat:
        if o.is_floating_point():
            term = (o * o).mean()
            total = term if total is None else total + term
    return total


class _LSTMHead(nn.Module):
    def __init__(self, mode="LSTM"):
        super().__init__()
        self.rnn = {"LSTM": nn.LSTM, "GRU": nn.GRU}[mode](8, 16, 2)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[-1])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_recurrent_training_step_is_one_fused_node_per_layer(mode):
    ember.manual_seed(5)
    inputs = (ember.randn(6, 4, 8), ember.randint(0, 5, (4,)))
    entry = _step_equal(lambda: _LSTMHead(mode), lambda p: ember.optim.Adam(p, lr=1e-2),
                        inputs[:1], lambda out: F.cross_entropy(out, inputs[1]))
    assert entry["grad_fallback_ops"] == [] and entry["fallback_ops"] == []
    assert entry["source"].count(f"{mode.lower()}_layer") >= 2
    assert "sigmoid" not in entry["source"]  # not the unrolled reference


def test_transformer_layer_training_step_with_dropout_equals_eager():
    layer = lambda: nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1,
                                               batch_first=True)
    ember.manual_seed(6)
    x = ember.randn(2, 5, 16)
    entry = _step_equal(layer, lambda p: ember.optim.Adam(p, lr=1e-3), (x,), _sq_loss)
    assert entry["grad_fallback_ops"] == []
    assert "nn.functional.dropout" in entry["node_vjp_ops"]  # mask drawn per call


def test_lenet_training_step_has_no_autograd_fallback():
    def lenet():
        return nn.Sequential(nn.Conv2d(1, 4, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(4 * 6 * 6, 10))

    ember.manual_seed(2)
    x, y = ember.randn(4, 1, 16, 16), ember.randint(0, 10, (4,))
    entry = _step_equal(lenet, lambda p: ember.optim.SGD(p, lr=0.05, momentum=0.9), (x,),
                        lambda out: F.cross_entropy(out, y), tol=1e-5)
    assert entry["grad_fallback_ops"] == [] and entry["fallback_ops"] == []
    assert {"conv2d", "max_pool2d"} <= set(entry["node_vjp_ops"])


_TRAINABLE = [n for n in test_export.MODELS if n != "views"]


@pytest.mark.parametrize("name", _TRAINABLE)
def test_every_export_model_as_a_compiled_training_step(name):
    factory, make_inputs, _ = test_export.MODELS[name]
    ember.manual_seed(7)
    inputs = make_inputs()
    if name == "resnet18":  # batch norm in training needs more than one value per channel
        inputs = (ember.randn(2, *inputs[0].shape[1:]),)
    # resnet18's ReLU(inplace=True) and `out += identity` write on the gradient's path:
    # intermediate values, replayed as the functional ops
    entry = _step_equal(lambda: factory().train(),
                        lambda p: ember.optim.SGD(p, lr=0.01, momentum=0.9), inputs, _sq_loss,
                        steps=3, tol=1e-5, graph=True)
    assert not entry["eager"] and set(entry["grad_fallback_ops"]) <= {"adaptive_avg_pool2d"}


def _bert_tiny():
    text = pytest.importorskip("ember.text.models.bert")
    cfg = text.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=32,
                          max_position_embeddings=16, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    return text.BertModel(cfg)


def _gpt_tiny():
    gpt = pytest.importorskip("ember.text.models.gpt")
    return gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=50, n_layer=2, n_head=2, n_embd=16))


@pytest.mark.parametrize("make", [_bert_tiny, _gpt_tiny], ids=["bert_tiny", "gpt_tiny"])
def test_text_models_compiled_inference_and_training_step(make):
    ember.manual_seed(8)
    ids = ember.randint(0, 50, (2, 7))
    model = make().eval()
    cm = ember.compile(model)
    with ember.no_grad():
        want = model(ids)
        got = _quiet(cm, ids)
        again = cm(ids)
    first = lambda out: out[0]
    assert_allclose(first(got), first(want), rtol=1e-5, atol=1e-5)
    assert_allclose(first(again), first(want), rtol=1e-5, atol=1e-5)
    assert not explain(cm)["entries"][0]["eager"]
    entry = _step_equal(lambda: make().train(), lambda p: ember.optim.Adam(p, lr=1e-3), (ids,),
                        lambda out: _sq_loss(out[0]), steps=2, tol=1e-5)
    assert entry["grad_fallback_ops"] == []


# -- state the function changes: .grad, training flags, requires_grad, buffers -------------------

def _twin_runs(make_step, make_inputs, steps=5, between=None, seed=0, model_fn=_mlp784):
    """Run ``make_step(model, opt)`` eagerly and compiled over ``steps`` calls (fresh, equal
    models and optimizers); return both runs' per-call outputs, state dicts, training flags
    and requires_grad flags, and the compiled function (for ``explain``)."""
    def run(compiled):
        ember.manual_seed(seed)
        model = model_fn()
        step = make_step(model)
        f = ember.compile(step) if compiled else step
        ember.manual_seed(seed + 1)
        inputs = make_inputs()
        outs, flags = [], []
        for i in range(steps):
            if between is not None:
                between(model, i)
            ember.manual_seed(seed + 10 + i)  # the same random draws (dropout) both ways
            out = f(*inputs)
            outs.append([t.detach().clone() for t in test_export._flat(out)])
            flags.append((model.training, [p.requires_grad for p in model.parameters()],
                          [p.grad is None for p in model.parameters()]))
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return outs, state, flags, f

    warn = config.warn_on_graph_break
    config.warn_on_graph_break = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no graph break, no eager fallback: all compiled
            want = run(False)
            got = run(True)
    finally:
        config.warn_on_graph_break = warn
    return want, got


def _assert_twins(want, got, tol=1e-6):
    for w, g in zip(want[0], got[0]):
        for a, b in zip(w, g):
            assert_allclose(b, a, rtol=tol, atol=tol)
    assert list(got[1]) == list(want[1])
    for k in want[1]:
        assert_allclose(got[1][k], want[1][k], rtol=tol, atol=tol)
    assert got[2] == want[2]  # training, requires_grad and .grad-is-None after each call
    info = explain(got[3])
    assert info["graph_break_count"] == 0 and not any(e["eager"] for e in info["entries"])
    return info


def _classify_inputs():
    return ember.randn(8, 20), ember.randint(0, 5, (8,))


_OPTS = {"sgd_momentum": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
         "adam": lambda p: ember.optim.Adam(p, lr=1e-2)}


def _zero(model, opt, how):
    params = list(model.parameters())
    if how == "model.zero_grad()":
        model.zero_grad()
    elif how == "model.zero_grad(set_to_none=False)":
        model.zero_grad(set_to_none=False)
    elif how == "opt.zero_grad()":
        opt.zero_grad()
    elif how == "opt.zero_grad(set_to_none=False)":
        opt.zero_grad(set_to_none=False)
    elif how == "p.grad = None":
        for p in params:
            p.grad = None
    elif how == "del p.grad":
        for p in params:
            del p.grad
    elif how == "p.grad.zero_()":
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
    elif how == "p.grad.data.zero_()":
        for p in params:
            if p.grad is not None:
                p.grad.data.zero_()
    else:
        raise AssertionError(how)


_ZEROS = ["model.zero_grad()", "model.zero_grad(set_to_none=False)", "opt.zero_grad()",
          "opt.zero_grad(set_to_none=False)", "p.grad = None", "del p.grad", "p.grad.zero_()",
          "p.grad.data.zero_()"]


def _zero_step(model, how, opt_name="sgd_momentum"):
    """The training step with gradients reset by ``how`` (see ``_zero``) at its top."""
    opt = _OPTS[opt_name](model.parameters())

    def step(x, y):
        _zero(model, opt, how)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


@pytest.mark.parametrize("opt_name", list(_OPTS))
@pytest.mark.parametrize("how", _ZEROS)
def test_zero_grad_inside_the_compiled_step_is_replayed(how, opt_name):
    # the bug: model.zero_grad() inside the compiled step was not replayed, so the compiled
    # step accumulated gradients across calls and differed from eager from the second call
    want, got = _twin_runs(lambda m: _zero_step(m, how, opt_name), _classify_inputs)
    info = _assert_twins(want, got)
    # reading .grad (None on the first call, a gradient after) is guarded: at most one more
    # capture, then every call replays
    assert len(info["entries"]) <= 2
    if how.startswith("opt."):  # opaque call, no .grad read: one entry
        assert len(info["entries"]) == 1
    if how in ("model.zero_grad(set_to_none=False)", "p.grad.zero_()"):
        assert info["entries"][-1]["fallback_ops"] == []  # zero_ lowered: v[...] = 0


@pytest.mark.parametrize("where", ["before", "after"])
def test_manual_sgd_under_no_grad_is_compiled(where):
    lr = 0.05

    def make_step(model):
        def step(x, y):
            if where == "before":
                model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            with ember.no_grad():
                for p in model.parameters():
                    p -= lr * p.grad
            if where == "after":
                model.zero_grad()
            return loss

        return step

    want, got = _twin_runs(make_step, _classify_inputs)
    info = _assert_twins(want, got)
    assert len(info["entries"]) == (2 if where == "before" else 1)
    losses = [float(o[0]) for o in got[0]]
    assert losses[-1] < losses[0]  # it trains


def test_data_add_update_and_grad_reset_by_hand_are_compiled():
    def make_step(model):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.1)
                p.grad = None
            return loss

        return step

    want, got = _twin_runs(make_step, _classify_inputs)
    assert len(_assert_twins(want, got)["entries"]) == 1


def test_gradient_clipping_and_reading_grads_inside_the_step():
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            norm = model[0].weight.grad.norm()  # returned: a value read from .grad
            opt.step()
            return loss, norm, model[2].bias.grad

        return step

    want, got = _twin_runs(make_step, _classify_inputs)
    assert len(_assert_twins(want, got, tol=1e-5)["entries"]) == 1
    assert got[0][0][2].shape == (12,)


def test_gradient_assigned_to_grad_inside_the_step():
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            w = model[0].weight
            w.grad = w.grad * 0.5 + 0.01 * w  # a value of the graph handed to .grad
            model[0].bias.grad = ember.zeros(16)  # a constant made afresh each call
            opt.step()
            opt.zero_grad()
            return loss

        return step

    want, got = _twin_runs(make_step, _classify_inputs)
    assert len(_assert_twins(want, got)["entries"]) == 1


def test_input_grad_read_inside_the_step():
    def run(compiled):
        m = _mlp784()
        opt = ember.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            g = x.grad * 1.0
            x.grad = None
            opt.step()
            return loss, g

        f = ember.compile(step) if compiled else step
        ember.manual_seed(4)
        x = ember.randn(4, 20, requires_grad=True)
        y = ember.randint(0, 5, (4,))
        return [f(x, y) for _ in range(3)], x.grad, f

    want, want_grad, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, got_grad, f = run(True)
    for (lw, gw), (lg, gg) in zip(want, got):
        assert_allclose(lg, lw, rtol=1e-6, atol=1e-6)
        assert_allclose(gg, gw, rtol=1e-6, atol=1e-7)
    assert want_grad is None and got_grad is None
    assert not explain(f)["entries"][0]["eager"]


def _dropout_mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(16, 5))


def test_train_and_eval_inside_the_step_are_replayed():
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            model.eval()  # the caller sees an eval model after each call
            with ember.no_grad():
                return loss, model(x)

        return step

    want, got = _twin_runs(make_step, _classify_inputs, model_fn=_dropout_mlp)
    assert all(not training for training, _, _ in got[2])
    # a new model is in training mode; from the second call on, it enters in eval mode
    assert len(_assert_twins(want, got)["entries"]) == 2


def test_eval_after_the_step_is_guarded_on_the_entry_flags():
    # the step leaves the model in eval mode; the caller switches it back each other call:
    # guards check the flags as they were when the capturing call began
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            model.eval()
            return loss

        return step

    def between(model, i):
        if i % 2 == 0:
            model.train()

    want, got = _twin_runs(make_step, _classify_inputs, steps=6, between=between,
                           model_fn=_dropout_mlp)
    assert len(_assert_twins(want, got)["entries"]) == 2  # entered in training, in eval


def test_batch_norm_running_stats_in_a_compiled_training_step():
    # (SGD, not Adam: the bias before batch norm gets a gradient of rounding noise only,
    # which Adam's normalisation would blow up to a step of lr either way)
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    want, got = _twin_runs(make_step, _classify_inputs, model_fn=_dropout_mlp)
    _assert_twins(want, got)
    assert int(got[1]["1.num_batches_tracked"]) == 5
    assert float(got[1]["1.running_var"].sub(1).abs().sum()) > 0  # the stats moved


def test_requires_grad_changed_inside_the_step_is_replayed():
    def make_step(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            w = model[0].weight
            w.requires_grad_(not w.requires_grad)  # freeze, unfreeze, ... every other call
            model[2].bias.requires_grad = False  # a plain attribute write
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    want, got = _twin_runs(make_step, _classify_inputs, steps=6)
    assert [flags[1][0] for flags in got[2]] == [False, True] * 3
    # entered with (weight, last bias) requiring grad: (T, T), then (F, F), then (T, F)
    assert len(_assert_twins(want, got)["entries"]) == 3


def test_what_cannot_be_replayed_runs_eagerly_with_a_warning_naming_it(monkeypatch):
    monkeypatch.setattr(config, "warn_on_graph_break", True)  # the warning is asked for

    def run(compiled, body):
        m = _mlp784()
        opt = ember.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            body(m)
            return loss

        f = ember.compile(step) if compiled else step
        ember.manual_seed(4)
        x, y = ember.randn(4, 20), ember.randint(0, 5, (4,))
        return [float(f(x, y)) for _ in range(3)], [p.detach().clone() for p in m.parameters()]

    def replace_data(m):
        m[0].bias.data = m[0].bias.data * 0.5

    def leaf_inside(m):
        (m[0].weight * 2).detach().requires_grad_()

    def grad_of_a_new_tensor(m):
        t = ember.zeros(3, requires_grad=True)
        t.grad = ember.ones(3)

    for body, match in [(replace_data, r"assigning \.data of m\.0\.bias"),
                        (leaf_inside, r"requires_grad_\(\) on a value computed inside"),
                        (grad_of_a_new_tensor, r"assigning \.grad of a tensor that is neither")]:
        want = run(False, body)
        with pytest.warns(UserWarning, match=match):
            got = run(True, body)
        assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-6, atol=1e-6)
        for p, q in zip(got[1], want[1]):
            assert_allclose(p, q, rtol=1e-6, atol=1e-6)


def test_grad_of_an_intermediate_value_is_a_graph_break():
    m = _mlp784()

    def step(x, y):
        h = m[0](x)
        h.retain_grad()
        F.cross_entropy(m[2](m[1](h)), y).backward()
        return h.grad * 1.0

    f = ember.compile(step, fullgraph=True)
    x, y = ember.randn(4, 20), ember.randint(0, 5, (4,))
    with pytest.raises(GraphBreakError, match=r"\.grad of a value computed inside"):
        f(x, y)


def test_a_capture_does_not_see_another_threads_gradients():
    import threading

    ember.manual_seed(0)
    other = _mlp784()
    x, y = ember.randn(8, 20), ember.randint(0, 5, (8,))
    F.cross_entropy(other(x), y).backward()
    want = [p.grad.clone() for p in other.parameters()]
    stop, seen = threading.Event(), []

    def eager_loop():  # .grad written and read on this thread all along the captures
        while not stop.is_set():
            other.zero_grad()
            F.cross_entropy(other(x), y).backward()
            seen.append(all(bool((p.grad == w).all()) for p, w in zip(other.parameters(),
                                                                         want)))

    worker = threading.Thread(target=eager_loop, daemon=True)
    worker.start()
    try:
        for _ in range(5):
            want_run, got_run = _twin_runs(
                lambda m: _zero_step(m, "model.zero_grad()"), _classify_inputs, steps=3)
            _assert_twins(want_run, got_run)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert not worker.is_alive() and seen and all(seen)



def test_compiling_a_registry_op_itself():
    # ember.compile(F.scaled_dot_product_attention) in a fresh process (no __torch_function__
    # dispatch on): the op runs through its dispatching wrapper, which the capture sees
    import subprocess
    import sys

    code = ("import ember, ember.nn.functional as F\n"
            "q = ember.randn(1, 2, 4, 8)\n"
            "g = ember.compile(F.scaled_dot_product_attention, fullgraph=True)\n"
            "r = ember.compile(ember.relu, fullgraph=True)\n"
            "for _ in range(2):\n"
            "    assert ember.equal(g(q, q, q), F.scaled_dot_product_attention(q, q, q))\n"
            "    assert ember.equal(r(q), ember.relu(q))\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
