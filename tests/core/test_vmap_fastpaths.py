"""vmap's fast paths give exactly what its general paths give.

``vmap`` keeps per-call work small with fast paths: the mode's enter/exit swaps Tensor's
methods in the class dict with one update (``overrides._replay``) and checks the plans with
item sets; a call passing through the vmap mode skips collecting ``types``; rules bind
their arguments without ``inspect`` (``batching_rules._bind``); a per-example linear adds
its bias in the same node; ``nll_loss``/``cross_entropy`` count the targets per example on
the array; an unbatched input is expanded by one broadcast view (``to_physical``,
``materialize``); ``functional_call`` skips untying a module without tied tensors.

Each test runs the same computation with the fast paths and with them switched off (the
``general`` context) and asserts equal results, bit for bit, over the cases that must not
take them as well as those that do: nested vmap, ``in_dims`` None and non-zero,
``out_dims``, keyword arguments, randomness modes, another mode active.
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import overrides
from ember._functorch import _batched
from ember._tensor import Tensor
from ember.autograd import gradcheck, gradgradcheck
from ember.func import functional_call, grad, stack_module_state, vmap
from ember.ops import batching_rules as br
from ember.ops.registry import BATCH_RULES, OPS


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _leaves(item)]
    return [x]


def assert_identical(a, b):
    """The same trees of tensors, bit for bit (values, shapes, dtypes)."""
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert isinstance(x, Tensor) and isinstance(y, Tensor)
        assert x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape)
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())


@contextlib.contextmanager
def general():
    """Every fast path off: inspect binding, the bias added apart, the mask summed per
    example, Tensor's methods swapped one ``setattr`` at a time, dispatch (not kernels) for
    the transforms' own views, ``types`` collected and the full argument scan."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(br, "_bind", br._bind_inspect)
        mp.setattr(br, "_FUSED_DTYPES", ())
        mp.setattr(br, "_COUNT_LIMIT", 0)
        mp.setitem(overrides._CLASS_DICTS, Tensor, None)
        mp.setattr(_batched, "passes_through", lambda *t: False)
        mp.setattr(_batched.VmapMode, "_ember_reads_types", True)
        mp.setattr(_batched, "_plain", lambda args: not overrides._relevant_args(args, None))
        yield
    finally:
        mp.undo()


def both(fn):
    """``fn()`` with the fast paths and with the general ones: the same results."""
    ember.manual_seed(0)
    fast = fn()
    with general():
        ember.manual_seed(0)
        slow = fn()
    assert_identical(fast, slow)
    return fast


def r(*shape, seed=0, dtype=np.float32):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# -- whole workloads ------------------------------------------------------------------------------

def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4),
                         nn.LogSoftmax(dim=1))


def test_per_sample_grads_fast_equals_general():
    model = _mlp()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = r(6, 3, 4), ember.tensor([0, 1, 2, 3, 1, 0])

    def loss(p, sample, target):
        out = functional_call(model, p, (sample.unsqueeze(0),))
        return F.nll_loss(out, target.unsqueeze(0))

    g = both(lambda: vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y))
    # and the loop it stands for
    for i in range(6):
        want = grad(loss)(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(g[k][i].numpy(), want[k].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("create_graph", [False, True])
def test_ensemble_fast_equals_general(create_graph):
    ember.manual_seed(0)
    models = [nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)) for _ in range(4)]
    params, buffers = stack_module_state(models)
    if not create_graph:
        params = {k: v.detach() for k, v in params.items()}
    base = models[0]
    x, y = r(9, 5), ember.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])

    def loss(p, b, xx, t):
        return F.cross_entropy(functional_call(base, (p, b), (xx,)), t)

    def run():
        g = vmap(grad(loss), in_dims=(0, 0, None, None))(params, buffers, x, y)
        if not create_graph:
            return g
        # the per-model gradients keep their graph: differentiate them again
        total = sum((v * v).sum() for v in g.values())
        return [g, ember.autograd.grad(total, list(params.values()))]

    both(run)


def test_nested_vmap_of_grad_with_unbatched_inputs():
    w, b = r(4, 3), r(4, seed=1)
    x = r(2, 5, 3, seed=2)

    def f(w, b, xi):
        return F.linear(xi, w, b).tanh().sum()

    both(lambda: vmap(vmap(grad(f, argnums=(0, 1)), in_dims=(None, None, 0)),
                      in_dims=(None, None, 0))(w, b, x))


@pytest.mark.parametrize("in_dims,out_dims", [((1, None), 0), ((-1, None), 1),
                                              ((1, 0), (0, 1)), ((None, 1), -1)])
def test_in_dims_out_dims_and_kwargs(in_dims, out_dims):
    x, w = r(4, 5, 3), r(5, 3, 2, seed=1)

    def f(a, b, *, scale):
        s = a.sum() * scale
        return (a * s, b.sum(-1) + s) if isinstance(out_dims, tuple) else a * s + b.mean()

    both(lambda: vmap(f, in_dims=in_dims, out_dims=out_dims)(x, w, scale=2.0))


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_randomness_modes(randomness):
    x = r(5, 7)

    def f(t):
        return F.dropout(t, 0.5) + ember.rand(7) + F.linear(t, t.new_ones(7, 7), t)

    both(lambda: vmap(f, randomness=randomness)(x))


def test_randomness_error_is_raised_on_both_paths():
    x = r(5, 7)
    for ctx in (contextlib.nullcontext(), general()):
        with ctx, pytest.raises(RuntimeError, match="randomness error mode"):
            vmap(lambda t: F.dropout(t, 0.5))(x)


def test_another_mode_takes_the_general_path():
    """With a mode other than vmap's active, the transforms dispatch their own views (the
    other mode sees them): the results are the same."""
    seen = []

    class Count(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    w, x = r(3, 4), r(6, 4, seed=1)
    f = vmap(grad(lambda w, xi: F.linear(xi, w).pow(2).sum()), in_dims=(None, 0))
    plain = f(w, x)
    with Count():
        counted = f(w, x)
    assert_identical(plain, counted)
    assert "expand" in seen  # grad's per-example copy of w went through dispatch


# -- per-example linear and its bias --------------------------------------------------------------

@pytest.mark.parametrize("case", ["shared-weight", "ensemble", "all-batched", "logical-1d",
                                  "two-lead-dims", "no-bias", "unbatched-bias",
                                  "unbatched-weight", "float64", "float16"])
def test_linear_rule_fast_equals_general(case):
    B, O, I = 4, 3, 5
    dt = {"float64": np.float64, "float16": np.float16}.get(case, np.float32)
    x, w, b = r(B, 2, I, dtype=dt), r(B, O, I, seed=1, dtype=dt), r(B, O, seed=2, dtype=dt)
    in_dims = (0, 0, 0)
    if case == "shared-weight":  # grad inside vmap: an unbatched weight expanded per example
        def run():
            return vmap(grad(lambda w, b, xi: F.linear(xi, w, b).sum(), argnums=(0, 1)),
                        in_dims=(None, None, 0))(w[0], b[0], x)
        both(run)
        return
    if case == "ensemble":
        in_dims = (None, 0, 0)
        x = x[0]
    elif case == "logical-1d":
        x = x[:, 0]
    elif case == "two-lead-dims":
        x = r(B, 2, 3, I)
    elif case == "no-bias":
        b = None
        in_dims = (0, 0, None)
    elif case == "unbatched-bias":
        b, in_dims = b[0], (0, 0, None)
    elif case == "unbatched-weight":
        w, in_dims = w[0], (0, None, 0)
    args = [t.requires_grad_() if t is not None and dt is not np.float16 else t
            for t in (x, w, b)]

    def run():
        out = vmap(F.linear, in_dims=in_dims)(*args)
        if dt is np.float16:
            return out
        gs = ember.autograd.grad(out.pow(2).sum(), [a for a in args if a is not None])
        return [out, gs]

    both(run)


def test_fused_bias_node_is_used_and_gradchecks():
    x, w, b = (r(3, 2, 4, dtype=np.float64), r(3, 5, 4, seed=1, dtype=np.float64),
               r(3, 5, seed=2, dtype=np.float64))
    x, w, b = (t.requires_grad_() for t in (x, w, b))
    out = vmap(F.linear)(x, w, b)
    assert type(out.grad_fn).__name__ == "PerExampleLinearBiasBackward0"
    assert gradcheck(lambda x, w, b: vmap(F.linear)(x, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: vmap(F.linear)(x, w, b), (x, w, b))
    # the shared-weight product and one row per example (grad's per-example copies)
    xs = r(3, 4, dtype=np.float64).requires_grad_()
    ws = r(5, 4, seed=3, dtype=np.float64).requires_grad_()
    bs = r(5, seed=4, dtype=np.float64).requires_grad_()

    def per_example(ws, bs, xs):
        return vmap(grad(lambda w, b, xi: F.linear(xi, w, b).tanh().sum(), argnums=(0, 1)),
                    in_dims=(None, None, 0))(ws, bs, xs)

    assert gradcheck(lambda ws, bs, xs: per_example(ws, bs, xs), (ws, bs, xs))


def test_shared_reads_the_array_stride_like_tensor_stride():
    base = r(4, 3)
    cases = [base.unsqueeze(0).expand(5, 4, 3), base.unsqueeze(0), r(5, 4, 3),
             ember.zeros(5, 0, 3), ember.zeros(1, 4).expand(5, 4), ember.tensor(1.0),
             ember.zeros(0, 4).unsqueeze(0).expand(3, 0, 4)]
    for t in cases:
        want = t.dim() > 0 and t.shape[0] > 1 and t.stride(0) == 0
        assert br._shared(t) == want, t.shape


# -- losses ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", ["rows", "single", "batched-target"])
@pytest.mark.filterwarnings("ignore:invalid value encountered")  # 0/0: every target ignored
def test_loss_rules_fast_equal_general(loss, reduction, shape):
    def fn(*args, **kwargs):  # looked up at call time: the dispatching version inside vmap
        return getattr(F, loss)(*args, **kwargs)

    logits = r(4, 6, 5).requires_grad_()
    target = ember.tensor([[0, 1, -100, 4, 2, -100], [1, 1, 1, -100, 0, 3],
                           [-100] * 6, [2, 3, 4, 0, 1, 2]])
    if shape == "rows":  # shared targets
        def run_fn():
            return vmap(lambda x: fn(x, target[0], reduction=reduction))(logits)
    elif shape == "single":  # logical (C,) logits, 0-d targets
        def run_fn():
            return vmap(lambda x, t: fn(x, t, reduction=reduction))(logits[:, 0], target[:, 0]
                                                                     .clamp(min=0))
    else:
        def run_fn():
            return vmap(lambda x, t: fn(x, t, reduction=reduction))(logits, target)

    def run():
        out = run_fn()
        return [out, ember.autograd.grad(out.nan_to_num().sum(), [logits])]

    both(run)


def test_loss_with_class_weights_is_unchanged():
    logits = r(3, 4, 5)
    target = ember.tensor([[0, 1, -100, 4], [1, 1, 1, 0], [2, 3, 4, 0]])
    weight = ember.tensor(np.linspace(0.5, 2.0, 5).astype(np.float32))
    both(lambda: vmap(lambda x, t: F.cross_entropy(x, t, weight=weight))(logits, target))


# -- dispatch -------------------------------------------------------------------------------------

def test_vmap_mode_gets_no_types_other_modes_do():
    got = {}

    class Spy(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            got.setdefault(func.__name__, types)
            return func(*args, **(kwargs or {}))

    class Sub(Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    s = r(3).as_subclass(Sub)
    try:
        with Spy():
            ember.add(s, 1)
        assert got["add"] == (Sub,)
        calls = []
        seen_types = []
        original = _batched.VmapMode.__torch_function__

        def spy(self, func, types, args=(), kwargs=None):
            calls.append(func)
            seen_types.append(types)
            return original(self, func, types, args, kwargs)

        mp = pytest.MonkeyPatch()
        mp.setattr(_batched.VmapMode, "__torch_function__", spy)
        try:
            vmap(lambda t: ember.add(t, s))(r(2, 3))
        finally:
            mp.undo()
        assert calls and all(t == () for t in seen_types)
    finally:
        overrides._deactivate()


def test_subclass_arguments_inside_vmap_reach_their_handler():
    handled = []

    class Logged(Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            handled.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)

    try:
        s = r(3).as_subclass(Logged)
        out = vmap(lambda t: t.sum() * ember.exp(s))(r(4, 3, seed=1))
        assert "exp" in handled
        np.testing.assert_allclose(out.numpy(), (r(4, 3, seed=1).sum(1, keepdim=True)
                                                 * r(3).exp()).numpy(), rtol=1e-6)
    finally:
        overrides._deactivate()


def test_a_rule_registered_after_first_use_is_used(monkeypatch):
    a, b = r(4, 3), r(4, 3, seed=1)
    loop = vmap(ember.dist)(a, b)  # no rule: the per-example loop
    calls = []

    def rule(ctx, func, args, kwargs):
        calls.append(func)
        return NotImplemented  # and back to the loop

    monkeypatch.setattr(OPS["dist"], "batch_rule", rule)
    monkeypatch.setitem(BATCH_RULES, "dist", rule)
    assert_identical(vmap(ember.dist)(a, b), loop)
    assert len(calls) == 1


# -- binding --------------------------------------------------------------------------------------

def _same_binding(func, args, kwargs):
    fast = br._bind(func, args, kwargs)
    slow = br._bind_inspect(func, args, kwargs)
    if slow is None:
        assert fast is None
        return

    def same(a, b):  # the values bound, or what inspect makes anew: varargs, packed ints
        return a is b or (type(a) is type(b) and type(a) in (tuple, dict) and a == b)

    assert list(fast.arguments) == list(slow.arguments)
    for k in slow.arguments:
        assert same(fast.arguments[k], slow.arguments[k]), k
    assert len(fast.args) == len(slow.args)
    assert all(same(x, y) for x, y in zip(fast.args, slow.args))
    assert list(fast.kwargs) == list(slow.kwargs)
    assert all(same(fast.kwargs[k], slow.kwargs[k]) for k in slow.kwargs)


def _public(name):
    """The op as a user calls it, looked up at call time (the dispatching version)."""
    for ns in (ember, ember.linalg, F):
        if name in getattr(ns, "__dict__", {}) and callable(getattr(ns, name)):
            return lambda *a, **k: getattr(ns, name)(*a, **k)
    if OPS[name].method:
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return None


@pytest.mark.filterwarnings("ignore")  # the samples' own (deprecations, overflow)
def test_fast_binding_equals_inspect_on_the_rules_calls(monkeypatch):
    """Every call the rules bind while vmapping the op database's samples (every tensor
    batched), bound both ways."""
    from ember.ops.opdb import load_all

    entries = load_all()
    seen = []
    real = br._bind

    def record(func, args, kwargs):
        seen.append((func, tuple(args), dict(kwargs)))
        return real(func, args, kwargs)

    monkeypatch.setattr(br, "_bind", record)
    for name in br.covered():
        fn = _public(name) if name in entries and not OPS[name].random else None
        if fn is None:
            continue
        e = entries[name]
        dtype = "float64" if "float64" in e.dtypes else e.dtypes[-1]
        for sample in list(e.samples(None, dtype, False))[:2]:
            tensors = sample.tensors()
            if not tensors:
                continue

            def call(*ts, sample=sample, fn=fn):
                it = iter(ts)
                return sample.map_tensors(lambda t: next(it)).call(fn)

            try:
                vmap(call)(*[ember.stack([t, t]) for t in tensors])
            except Exception:  # only the bound calls matter here
                pass
    monkeypatch.undo()
    assert len({id(f) for f, _, _ in seen}) > 30
    for func, args, kwargs in seen:
        _same_binding(func, args, kwargs)


def test_fast_binding_edge_cases():
    x = r(2, 3)

    def f(a, b=2, *, c=3):
        return a

    def pos_only(a, /, b=1):
        return a

    def packed(self, shape, flag=False):
        return self

    cases = [(f, (x,), {}), (f, (x, 5), {"c": 1}), (f, (), {"a": x}), (f, (x,), {"b": 1}),
             (f, (x, 1), {"b": 1}),  # given twice
             (f, (), {}),  # missing
             (f, (x,), {"d": 1}),  # unknown
             (f, (x, 1, 2), {}),  # too many
             (pos_only, (x,), {"b": 2}), (pos_only, (), {"a": x}),
             (packed, (x, 2, 3), {}), (packed, (x, 2, 3, 4), {"flag": True}),
             (packed, (x, (2, 3)), {})]
    for func, args, kwargs in cases:
        _same_binding(func, args, kwargs)
    assert br._bind(packed, (x, 2, 3), {}).arguments["flag"] == 3
    assert br._bind(packed, (x, 2, 3, 4), {}).arguments["shape"] == (2, 3, 4)
    assert br._bind(f, (), {}) is None
    sig = inspect.signature(f)
    assert list(br._bind(f, (x,), {}).arguments) == list(sig.parameters)


# -- the mode's enter and exit --------------------------------------------------------------------

def _originals_in_place():
    overrides._settle()  # dispatch lingers for a few plain calls after a mode: end that
    return not any(overrides.is_dispatching(v)
                   for k, v in vars(Tensor).items() if not k.startswith("_") or k.startswith("__"))


class _Log(overrides.TorchFunctionMode):
    """Appends the name of each function it sees to ``seen``."""

    def __init__(self, seen: list):
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


def test_enter_exit_swaps_methods_and_clears_method_caches():
    x, y = r(3), r(3, seed=1)
    seen: list = []

    for _ in range(3):  # warm the caches of every path, then swap back and forth
        for _ in range(50):
            x + y
            x.add(y)
            nn.Parameter(x) * 2
        assert _originals_in_place()
        with _Log(seen):
            assert overrides.is_dispatching(Tensor.add)
            x + y
            x.add(y)
            nn.Parameter(x) * 2
            _ = x.T
        assert seen[-4:] == ["add", "add", "mul", "T"]  # x + y is Tensor.add, as PyTorch
        n = len(seen)
        x + y
        x.add(y)
        _ = x.T
        assert len(seen) == n and _originals_in_place()


def test_dispatch_lingers_for_a_few_plain_calls_after_the_last_mode():
    """The last mode's exit leaves the functions' dispatching check in place for about as
    many plain calls as switching costs, so a loop of vmap calls switches once: those calls
    run as plain ones, a mode entered then swaps nothing, and the last of them switches
    dispatch off."""
    x, y = r(3), r(3, seed=1)
    seen: list = []
    with _Log(seen):
        x + y
    assert not overrides.is_active() and overrides.is_dispatching(Tensor.add)
    held = [f.__code__ for f in (ember.add, Tensor.add, Tensor.__add__, F.relu)]
    assert_identical(x + y, ember.add(x, y))
    assert seen == ["add"]  # no mode: nothing seen
    with _Log(seen):  # entered while dispatch lingers: nothing to swap
        assert all(f.__code__ is c for f, c in zip((ember.add, Tensor.add, Tensor.__add__,
                                                    F.relu), held))
        assert overrides.is_active()
        x.mul(y)
    assert seen == ["add", "mul"]
    calls = 0
    while overrides.is_dispatching(ember.add):
        ember.add(x, y)
        calls += 1
        assert calls <= overrides._LINGER_CALLS
    assert calls == overrides._LINGER_CALLS  # each call through the check counts once
    assert _originals_in_place() and not overrides.is_active()


def test_a_subclass_defined_while_dispatch_lingers_keeps_it_on():
    with _Counting():
        pass
    assert overrides.is_dispatching(ember.add)  # lingering

    class Marked(Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    x = r(3)
    for _ in range(overrides._LINGER_CALLS + 1):
        ember.add(x, x)
    assert overrides.is_active() and overrides.is_dispatching(ember.add)
    assert type(ember.add(x.as_subclass(Marked), 1)) is Marked


@pytest.mark.parametrize("owner", ["ember", "Tensor"])
def test_a_function_patched_while_dispatch_lingers_dispatches_in_the_next_mode(owner,
                                                                                monkeypatch):
    """A mode entered while dispatch lingers swaps nothing, unless a name changed since it
    went on: then it switches off and on again, so the patched function dispatches."""
    x = r(3)
    with _Counting():
        pass
    assert overrides.is_dispatching(ember.exp) and overrides._plans_current()

    def fake_exp(t):
        return t + 1

    fake_exp.__module__ = "ember.ops.test_patch"
    target = ember if owner == "ember" else Tensor
    monkeypatch.setattr(target, "exp", fake_exp)
    assert not overrides._plans_current()
    seen = []

    class Log(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Log():
        target.exp(x)
    assert seen == [fake_exp] and target.exp is fake_exp
    assert_identical(ember.exp(x) if owner == "ember" else x.exp(), x + 1)


class _Counting(overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_general_swap_path_agrees():
    """Tensor's names swapped one ``setattr`` at a time (where the class dict cannot be
    reached) and in one dict update: the same methods in and out of the mode."""
    x, y = r(3), r(3, seed=1)
    assert overrides._class_dict(Tensor) is not None  # CPython: the direct path is there
    with general():
        assert overrides._class_dict(Tensor) is None
        assert_identical(vmap(lambda a: a + y)(r(2, 3)), r(2, 3) + y)
        assert _originals_in_place()
    both(lambda: vmap(lambda a: (a + y).mul(x))(r(2, 3)))
    assert _originals_in_place()


def test_a_patch_made_inside_a_mode_survives_its_exit(monkeypatch):
    def fake_exp(t):
        return t + 1

    def fake_method(self):
        return self * 0

    x = r(4, 3)

    def f(t):
        monkeypatch.setattr(ember, "exp", fake_exp)
        monkeypatch.setattr(Tensor, "expm1", fake_method)
        return t * 2

    vmap(f)(x)
    assert ember.exp is fake_exp and Tensor.expm1 is fake_method
    assert_identical(x.expm1(), x * 0)
    monkeypatch.undo()
    # the next vmap rebuilds its plans and runs with the real functions again
    assert_identical(vmap(lambda t: ember.exp(t).expm1())(x), ember.exp(x).expm1())
    overrides._settle()
    assert not overrides.is_dispatching(ember.exp)
    assert _originals_in_place()


def test_a_patch_made_between_modes_is_used_and_kept(monkeypatch):
    x = r(4, 3)
    vmap(lambda t: t.exp())(x)  # plans made

    def fake(self):
        return self * 0 + 7

    monkeypatch.setattr(Tensor, "exp", fake)
    out = vmap(lambda t: t.exp())(x)
    assert (out.numpy() == 7).all()
    assert Tensor.exp is fake
    monkeypatch.undo()
    assert_identical(vmap(lambda t: t.exp())(x), x.exp())


def test_direct_swap_only_for_functions_and_properties():
    def fn():
        pass

    prop = property(lambda self: 1)
    assert overrides._direct_swap_ok(("a", "__add__"), (fn, fn), (fn, fn))
    assert overrides._direct_swap_ok(("T",), (prop,), (prop,))
    assert not overrides._direct_swap_ok(("__len__",), (len,), (fn,))
    assert not overrides._direct_swap_ok(("__getitem__",), (prop,), (prop,))
    vmap(lambda t: t * 2)(r(2, 3))
    assert overrides._PLANS[Tensor].direct  # Tensor's methods and properties qualify


# -- functional_call ------------------------------------------------------------------------------

def test_functional_call_untied_and_tied_modules():
    lin = nn.Linear(3, 3)
    model = nn.Sequential(lin, nn.ReLU(), nn.Linear(3, 3))
    x = r(2, 3)
    w = r(3, 3, seed=5)
    out = functional_call(model, {"0.weight": w}, (x,))
    assert_identical(out, model[2](F.relu(F.linear(x, w, lin.bias))))
    assert model[0].weight is lin.weight  # restored
    # tied: one parameter under two names takes the value given for either
    model[2].weight = model[0].weight
    out = functional_call(model, {"2.weight": w}, (x,))
    assert_identical(out, F.linear(F.relu(F.linear(x, w, lin.bias)), w, model[2].bias))
    with pytest.raises(ValueError, match="tied"):
        functional_call(model, {"0.weight": w, "2.weight": w * 2}, (x,))
    out = functional_call(model, {"2.weight": w}, (x,), tie_weights=False)
    assert_identical(out, F.linear(F.relu(lin(x)), w, model[2].bias))
    # a forward that raises still restores the module
    with pytest.raises(RuntimeError):
        functional_call(model, {"0.weight": r(3, 4)}, (x,))
    assert model[0].weight is lin.weight and model[2].weight is lin.weight


def test_relevant_args_skips_plain_values_and_finds_overriding_ones():
    class Over(Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    try:
        t, p = r(2), nn.Parameter(r(2))
        o1, o2, o3 = (r(2).as_subclass(Over) for _ in range(3))
        args = (t, 1, 2.0, None, "s", slice(1), ..., p, [t, o1, 3], (o2, p), o3)
        assert overrides._relevant_args(args, None) == [o1, o2, o3]
        assert overrides._relevant_args((t,), {"a": o1, "b": [o2, 1]}) == [o1, o2]
        assert overrides._relevant_args((t, [1, 2], (3,)), {"x": 1.0}) == []
        with overrides.DisableTorchFunctionSubclass():
            assert overrides._relevant_args(args, None) == []
    finally:
        overrides._deactivate()
