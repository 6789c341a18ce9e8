"""``ember.compile``'s lowerings of elementwise ops (``ember._compile._lowerings``): log,
sigmoid, GELU (both forms), SiLU, sqrt, rsqrt, abs, the comparisons, ``where``, ``pow`` by a
number, clamp by numbers and dtype casts. Each replays as array code (no registry call) and
equals eager bit for bit, forward and gradients, float16 to float64, special values included.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember._compile import _lowerings, explain

nn = pytest.importorskip("ember.nn")
F = nn.functional

FLOATS = [np.float16, np.float32, np.float64]

#: name -> a function of two tensors (x, y) of one shape, returning a tensor
CASES = {
    "log": lambda x, y: x.log(),
    "sigmoid": lambda x, y: x.sigmoid() + ember.sigmoid(y),
    "gelu": lambda x, y: F.gelu(x),
    "gelu_tanh": lambda x, y: F.gelu(x, approximate="tanh"),
    "silu": lambda x, y: F.silu(x),
    "sqrt": lambda x, y: x.sqrt(),
    "rsqrt": lambda x, y: x.rsqrt(),
    "abs": lambda x, y: x.abs(),
    "where": lambda x, y: ember.where(x > y, x, y),
    "where_numbers": lambda x, y: ember.where(x < 0.5, x, 0.0) + ember.where(y >= 0, 2, y),
    "comparisons": lambda x, y: (
        (x < y).to(x.dtype) + (x <= 0.5).double().to(x.dtype) + (x >= 1).type_as(x)
        + (x == y).type_as(y) + (x != 2).to(x.dtype) + x.gt(y).type_as(x)),
    "pow": lambda x, y: x ** 2.0 + x.pow(3) + x ** -1.5,
    "pow_fraction": lambda x, y: x.pow(0.5) - y ** 0,
    "clamp": lambda x, y: x.clamp(-0.5, 0.5) + ember.clamp(y, min=0.0) + x.clamp(0.5, -0.5),
    "clamp_one_side": lambda x, y: x.clamp_min(0.0) - y.clamp_max(-0.25) + x.clamp(max=1),
    "casts": lambda x, y: (x.double() * 3.0).to(x.dtype) + (y.float() / 3.0).type_as(y)
    + x.to(x.dtype) + ember.where(x.bool(), 1.0, y) + (y * 4).long().type_as(y)
    + (x > 0).int().half().type_as(x),
    "rsub": lambda x, y: 1 - x + (0.5 - y) * ember.rsub(x, y),
    "chain": lambda x, y: F.gelu(x * 2.0 - 1.0).sigmoid() * F.silu(y) + (x * y).abs().sqrt(),
}


def _inputs(dtype, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((6, 8)) * 2).astype(dtype)
    y = rng.standard_normal((6, 8)).astype(dtype)
    if specials:
        x[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-6]
        y[0, :4] = [0.0, -0.0, np.nan, 3.0]
        x[1, :3] = [2.0, 0.5, 1.0]  # ties with the comparisons' numbers
        y[1, :3] = x[1, :3]
    return x, y


def assert_same_bits(got, want):
    """Equal arrays: the same NaN positions, every other element the same bits (-0.0 too)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got[~nan].view(bits), want[~nan].view(bits))


def _numpy(t):
    return t.detach().to("cpu").numpy()


def _run_quietly(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", UserWarning)  # no graph break
        return fn(*args)


def _inference(case, dtype, device):
    """``(compiled replay, eager, explain entry)`` of ``CASES[case]`` under no_grad."""
    fn = CASES[case]
    x, y = (ember.tensor(a, device=device) for a in _inputs(dtype))
    compiled = ember.compile(fn)
    with ember.no_grad():
        want = _run_quietly(fn, x, y)
        _run_quietly(compiled, x, y)  # the capture
        got = _run_quietly(compiled, x, y)  # the replay
    return _numpy(got), _numpy(want), explain(compiled)["entries"][0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_inference_equals_eager_bit_for_bit(case, dtype):
    got, want, entry = _inference(case, dtype, None)
    assert_same_bits(got, want)
    assert entry["fallback_ops"] == [] and not entry["eager"], entry["fallback_ops"]


_DIFFERENTIABLE = sorted(set(CASES) - {"comparisons"})


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", _DIFFERENTIABLE)
def test_training_step_gradients_equal_eager_bit_for_bit(case, dtype):
    fn = CASES[case]
    x, y = _inputs(dtype, specials=False)
    x[0, :3] = [-0.0, 0.0, 0.5]  # the kinks of abs, clamp, relu-like masks
    y[0, :3] = [0.0, -0.0, 0.5]
    rng = np.random.default_rng(3)
    w0 = rng.uniform(0.5, 1.5, x.shape).astype(dtype)
    r = ember.tensor(rng.uniform(-2, 2, x.shape).astype(dtype))  # weights the op's gradient
    a, b = ember.tensor(x), ember.tensor(y)
    w1, w2 = (ember.tensor(w0, requires_grad=True) for _ in range(2))

    def step(w, a, b):
        loss = (fn(a * w, b * w) * r).sum()
        loss.backward()
        return loss

    compiled = ember.compile(step)
    with ember.enable_grad():
        want = _run_quietly(step, w1, a, b)
        want_grad = _numpy(w1.grad)
        for _ in range(2):  # capture, then replay
            w2.grad = None
            got = _run_quietly(compiled, w2, a, b)
    assert_same_bits(_numpy(got), _numpy(want))
    assert_same_bits(_numpy(w2.grad), want_grad)
    entry = explain(compiled)["entries"][0]
    # every op but the loss's sum (not lowered) differentiates by its VJP lowering
    assert not entry["eager"] and entry["fallback_ops"] == [] \
        and entry["grad_fallback_ops"] == [] and set(entry["node_vjp_ops"]) <= {"sum"}, entry


def test_where_gradients_are_summed_to_broadcast_operands():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7)).astype(np.float32)

    def run(compiled):
        w = ember.tensor(rng.standard_normal(7).astype(np.float32), requires_grad=True)
        v = ember.tensor(np.float32(0.75), requires_grad=True)
        a = ember.tensor(x)

        def step(a):
            loss = (ember.where(a > 0, a * w, v) * a).sum()
            loss.backward()
            return loss

        f = ember.compile(step) if compiled else step
        for _ in range(2 if compiled else 1):
            w.grad = v.grad = None
            loss = _run_quietly(f, a)
        return loss, w.grad, v.grad, f

    rng = np.random.default_rng(5)
    want = run(False)
    rng = np.random.default_rng(5)
    got = run(True)
    for g, w in zip(got[:3], want[:3]):
        assert_same_bits(_numpy(g), _numpy(w))
    entry = explain(got[3])["entries"][0]
    assert entry["grad_fallback_ops"] == [] and set(entry["node_vjp_ops"]) <= {"sum"}


def _compiled_and_eager(fn, x):
    """``(compiled fn, its second call's result, eager's result)`` under no_grad."""
    compiled = ember.compile(fn)
    with ember.no_grad():
        want = fn(x)
        compiled(x)
        got = compiled(x)
    return compiled, got, want


def test_an_integer_and_a_bool_comparison_and_casts():
    x = ember.tensor(np.arange(-4, 8).reshape(3, 4))

    def fn(x):
        m = (x > 2) | (x == -3)
        return ember.where(m, x, x * 2).float() + (m == (x < 5)).long() + (x != 2**40)

    compiled, got, want = _compiled_and_eager(fn, x)
    assert_same_bits(_numpy(got), _numpy(want))
    assert "ne" not in explain(compiled)["entries"][0]["fallback_ops"]


@pytest.mark.parametrize("fn, op", [
    (lambda x: x.clamp(ember.zeros(1), ember.ones(1)), "clamp"),  # tensor bounds
    (lambda x: x ** ember.ones(1), "pow"),  # a tensor exponent
    (lambda x: (x < 1.5).long(), None),  # an int tensor against a float: cast by eager first
    (lambda x: ember.where(x > 0, x, x.double()), "where"),  # a dtype mix
])
def test_what_the_lowerings_leave_to_the_registry_op(fn, op):
    x = ember.tensor(np.arange(-3, 3, dtype=np.float32))
    if op is None:
        x = ember.tensor(np.arange(-3, 3))
    compiled, got, want = _compiled_and_eager(fn, x)
    assert_same_bits(_numpy(got), _numpy(want))
    fallbacks = explain(compiled)["entries"][0]["fallback_ops"]
    assert fallbacks and (op is None or op in fallbacks)


def test_a_cast_to_the_same_dtype_is_the_tensor_itself():
    def fn(x):
        return x.float(), x.to(ember.float32), x.double()

    compiled = ember.compile(fn)
    x = ember.randn(3, 4)
    with ember.no_grad():
        compiled(x)
        a, b, c = compiled(x)
    assert a._data is x._data and b._data is x._data  # as eager: x itself
    assert c.dtype == ember.float64 and not np.shares_memory(_numpy(c), _numpy(x))


def test_every_new_lowering_has_a_vjp_where_differentiable():
    for op in ("log", "sigmoid", "gelu", "silu", "sqrt", "rsqrt", "abs", "where", "pow", "rsub",
               "clamp", "clamp_min", "clamp_max", "Tensor.float", "Tensor.double",
               "Tensor.half", "Tensor.long", "Tensor.int", "Tensor.bool", "Tensor.to",
               "Tensor.type_as"):
        assert op in _lowerings.FORWARD and op in _lowerings.VJP and op in _lowerings.POINTWISE
    for op in ("lt", "le", "gt", "ge", "eq", "ne"):
        assert op in _lowerings.FORWARD and op not in _lowerings.VJP


# -- on a GPU --------------------------------------------------------------------------------

#: the cases of selections, comparisons, casts and + - * / only: exact on the GPU too (the
#: chain kernels compile without multiply-add contraction)
_EXACT_ON_GPU = {"where", "where_numbers", "comparisons", "abs", "clamp", "clamp_one_side",
                 "casts", "rsub"}


def _assert_close_on_gpu(case, got, want, dtype):
    if case in _EXACT_ON_GPU:
        assert_same_bits(got, want)
        return
    # a fused chain's math functions are the device's, one rounding per op as eager's
    # CuPy ufuncs; a chain may order an op's reads differently: within a few ulps
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}[np.dtype(dtype).type]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_inference_equals_eager(case, dtype):
    got, want, entry = _inference(case, dtype, "cuda")
    _assert_close_on_gpu(case, got, want, dtype)
    assert entry["fallback_ops"] == [] and not entry["eager"], entry["fallback_ops"]


@pytest.mark.gpu
@pytest.mark.parametrize("case", _DIFFERENTIABLE)
def test_gpu_training_step_gradients_equal_eager(case):
    fn = CASES[case]
    x, y = _inputs(np.float32, specials=False)
    w0 = np.random.default_rng(3).uniform(0.5, 1.5, x.shape).astype(np.float32)

    r = ember.tensor(np.random.default_rng(4).uniform(-2, 2, x.shape).astype(np.float32),
                     device="cuda")

    def step(w, a, b):
        loss = (fn(a * w, b * w) * r).sum()
        loss.backward()
        return loss

    grads = []
    for run in (step, ember.compile(step)):
        w = ember.tensor(w0, device="cuda", requires_grad=True)
        a, b = ember.tensor(x, device="cuda"), ember.tensor(y, device="cuda")
        for _ in range(2):
            w.grad = None
            _run_quietly(run, w, a, b)
        grads.append(_numpy(w.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_reshape_of_a_permuted_buffer_is_recomputed_on_every_call():
    # reshaping a permuted view of a reused buffer copies: taken for a view at capture it
    # replayed the capture's (uninitialised) values (Swin's window reversal before its roll)
    def f(x):
        y = (x * 2).view(1, 2, 2, 4, 4, 4).permute(0, 1, 3, 2, 4, 5).reshape(1, 8, 8, 4)
        return ember.roll(y, shifts=(2, 2), dims=(1, 2))

    compiled = ember.compile(f)
    with ember.no_grad():
        for _ in range(3):
            x = ember.randn(4, 16, 4)
            np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 8), (2, 3, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_equals_eager_bit_for_bit(dtype, shape, bias):
    """float16 too: its lowering is eager's product (float32 BLAS, the bias added in float32,
    rounded once); NumPy's float16 dot has no BLAS (a compiled float16 Linear of the
    attention tutorial ran 150x slower than eager) and rounded twice with the bias."""
    rng = np.random.default_rng(1)
    lin = ember.nn.Linear(8, 5, bias=bias).to(ember.float64)
    with ember.no_grad():
        for p in lin.parameters():
            p.copy_(ember.tensor(rng.uniform(-1, 1, tuple(p.shape))))
    lin = lin.to(dtype)
    x = ember.tensor(rng.standard_normal(shape).astype(dtype))
    compiled = ember.compile(lin)
    with ember.no_grad():
        want = lin(x)
        for _ in range(2):  # capture, then replay
            got = _run_quietly(compiled, x)
    assert_same_bits(_numpy(got), _numpy(want))
    entry = explain(compiled)["entries"][0]
    assert entry["fallback_ops"] == [] and not entry["eager"], entry


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 8), (2, 3, 8)])
def test_linear_training_step_equals_eager_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(2)
    w0 = rng.uniform(-1, 1, (5, 8)).astype(dtype)
    b0 = rng.uniform(-1, 1, 5).astype(dtype)
    x0 = rng.standard_normal(shape).astype(dtype)
    r = ember.tensor(rng.uniform(-2, 2, shape[:-1] + (5,)).astype(dtype))
    grads = []
    for compile_it in (False, True):
        w, b, x = (ember.tensor(a, requires_grad=True) for a in (w0, b0, x0))

        def step(x, w, b):
            loss = (F.linear(x, w, b) * r).sum()
            loss.backward()
            return loss

        fn = ember.compile(step) if compile_it else step
        for _ in range(2 if compile_it else 1):  # capture, then replay
            w.grad = b.grad = x.grad = None
            loss = _run_quietly(fn, x, w, b)
        grads.append([_numpy(t) for t in (loss, x.grad, w.grad, b.grad)])
    for got, want in zip(grads[1], grads[0]):
        assert_same_bits(got, want)
