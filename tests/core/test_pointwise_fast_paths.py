"""The no-grad fast paths of ``addcmul``/``addcdiv`` (``ops/arith.py: _addc_fast``), of ``lerp``
by a number (``ops/pointwise.py: _lerp_fast``) and of ``add``/``sub``'s ``alpha``
(``_scaled_fast``) give the general path's bits: the general path runs when an input requires
grad, so the same call with and without it is compared over values that include zeros,
signed zeros, infinities, NaN, huge and tiny numbers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3e38, -3e38, 1e-40, np.inf, -np.inf, np.nan, 0.1,
            7.0]
SPECIALS64 = [1e-300, 1e300, -1e308, 5e-324]


def arrays(dtype):
    finite = st.floats(-1e6, 1e6, allow_nan=False, width=32 if dtype == "float32" else 64)
    values = st.one_of(finite, st.sampled_from(SPECIALS + (SPECIALS64 if dtype == "float64"
                                                           else [])))
    return hnp.arrays(np.dtype(dtype), 6, elements=values)


SCALARS = st.one_of(st.floats(-4, 4, allow_nan=False), st.sampled_from(
    [0.0, -0.0, 0.5, -0.5, 0.49999999, 1.0, 2, -3, 1e30, np.inf, np.nan]))


def _both(fn, *arrays_):
    """``fn`` on plain tensors (the fast path) and with the first requiring grad (the
    general path), as arrays."""
    fast = fn(*(ember.from_numpy(a.copy()) for a in arrays_))
    first = ember.from_numpy(arrays_[0].copy()).requires_grad_()
    slow = fn(first, *(ember.from_numpy(a.copy()) for a in arrays_[1:]))
    return fast.numpy(), slow.detach().numpy()


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_addcmul_addcdiv_fast_path_is_the_general_path(dtype, op, data):
    x, a, b = (data.draw(arrays(dtype)) for _ in range(3))
    value = data.draw(SCALARS)
    if dtype == "float32" and np.isfinite(value) and abs(value) > 3e38:
        value = 2.0
    fn = getattr(ember, op)
    _same_bits(*_both(lambda x, a, b: fn(x, a, b, value=value), x, a, b))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_lerp_by_a_number_fast_path_is_the_general_path(dtype, data):
    s, e = data.draw(arrays(dtype)), data.draw(arrays(dtype))
    w = float(data.draw(SCALARS))
    if dtype == "float32" and np.isfinite(w) and abs(w) > 3e38:
        w = 0.25
    _same_bits(*_both(lambda s, e: ember.lerp(s, e, w), s, e))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["add", "sub"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_alpha_fast_path_is_the_general_path(dtype, op, data):
    x, y = data.draw(arrays(dtype)), data.draw(arrays(dtype))
    alpha = data.draw(SCALARS)
    fn = getattr(ember, op)
    # the general path: ``other`` requires grad (the fast path needs it outside autograd)
    fast = fn(ember.from_numpy(x.copy()), ember.from_numpy(y.copy()), alpha=alpha).numpy()
    slow = fn(ember.from_numpy(x.copy()), ember.from_numpy(y.copy()).requires_grad_(),
              alpha=alpha).detach().numpy()
    _same_bits(fast, slow)


def test_the_fast_paths_take_the_plain_calls(monkeypatch):
    from ember.ops import arith, pointwise

    taken = []
    for module, name in ((arith, "_addc_fast"), (pointwise, "_lerp_fast"),
                         (arith, "_scaled_fast")):
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name):
            out = _real(*args)
            taken.append((_name, out is not None))
            return out

        monkeypatch.setattr(module, name, spy)
    # (CPU tensors: the NumPy-backed test devices take the general path)
    p = ember.ones(4, dtype=ember.float64, device="cpu")
    g = ember.full((4,), 2.0, dtype=ember.float64, device="cpu")
    p.addcmul_(g, g, value=0.5)
    p.lerp_(g, 0.9)
    p.add_(g, alpha=-0.1)
    ember.addcdiv(p, g, g.t(), value=1.0)
    assert taken == [("_addc_fast", True), ("_lerp_fast", True), ("_scaled_fast", True),
                     ("_addc_fast", True)]
    taken.clear()
    ember.addcmul(p, g, g[:, None][:, 0], value=1)  # a view, still C-contiguous: fast
    ember.addcmul(p, g.float(), g, value=1)  # mixed dtypes: the general path
    assert taken == [("_addc_fast", True), ("_addc_fast", False)]


def test_in_place_forms_and_what_stays_on_the_general_path():
    p = ember.ones(3)
    g = ember.tensor([1.0, 2.0, 3.0])
    p.addcmul_(g, g, value=0.5).addcdiv_(g, g + 1, value=-1).lerp_(g, 0.25).add_(g, alpha=2)
    expected = np.ones(3, np.float32) + 0.5 * np.float32([1, 4, 9])
    expected = expected - np.float32([1, 2, 3]) / np.float32([2, 3, 4])
    expected = expected + np.float32(0.25) * (np.float32([1, 2, 3]) - expected)
    expected = expected + 2 * np.float32([1, 2, 3])
    np.testing.assert_allclose(p.numpy(), expected, rtol=1e-6)
    assert p._version == 4
    # broadcasting, mixed dtypes, a float32 overflow and gradients take the general path
    assert ember.addcmul(ember.ones(2, 3), ember.ones(3), ember.ones(2, 1), value=2).shape \
        == (2, 3)
    assert ember.addcmul(ember.ones(3), ember.ones(3, dtype=ember.float64),
                         ember.ones(3)).dtype == ember.float64
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.lerp(ember.ones(2), ember.ones(2), 1e40)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.addcmul(ember.ones(2), ember.ones(2), ember.ones(2), value=1e40)
    w = ember.ones(3, requires_grad=True)
    ember.lerp(w, g, 0.5).sum().backward()
    assert w.grad.tolist() == [0.5, 0.5, 0.5]
    t = ember.ones(2, 2).t()  # not C-contiguous: PyTorch's layout, from the general path
    assert ember.lerp(t, ember.zeros(2, 2).t(), 0.5).stride() == (1, 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_in_place_fast_path_is_the_general_path(dtype, op, data):
    from ember.ops import _inplace

    x, y = data.draw(arrays(dtype)), data.draw(arrays(dtype))
    scalar = data.draw(st.one_of(SCALARS, st.integers(-2 ** 63, 2 ** 64 - 1)))
    for other in (ember.from_numpy(y.copy()), scalar):
        fast = getattr(ember.from_numpy(x.copy()), op)(other)
        real = _inplace._fast_inplace
        _inplace._fast_inplace = lambda *a: False
        try:
            slow = getattr(ember.from_numpy(x.copy()), op)(other)
        finally:
            _inplace._fast_inplace = real
        _same_bits(fast.numpy(), slow.numpy())


def test_in_place_fast_path_keeps_pytorchs_rules():
    from ember.ops import _inplace

    calls = []
    real = _inplace._fast_inplace

    def spy(*args):
        calls.append(real(*args))
        return calls[-1]

    _inplace._fast_inplace = spy
    try:
        p = ember.ones(4, device="cpu")
        v0 = p._version
        p.mul_(0.5).add_(p).div_(2).sub_(ember.ones(4, device="cpu"))
        assert p.tolist() == [-0.5] * 4 and p._version == v0 + 4
        assert calls == [True] * 4
        calls.clear()
        w = ember.ones(3, requires_grad=True, device="cpu")
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            w.mul_(2)
        with ember.no_grad():
            w.mul_(2)  # an optimizer's update: fast
        assert w.tolist() == [2.0] * 3 and w.requires_grad
        base = ember.arange(6.0, device="cpu")
        with pytest.raises(RuntimeError, match="unsupported operation"):
            base[1:].add_(base[:-1])  # partial overlap: PyTorch's error, the general path
        ember.ones(3, device="cpu").mul_(True)  # a bool: the general path
        with pytest.raises(OverflowError):
            ember.ones(2, device="cpu").mul_(2 ** 70)
        assert calls == [False, True, False, False, False]
    finally:
        _inplace._fast_inplace = real


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_alpha_fast_path_on_big_operands_is_the_general_path(dtype):
    # big operands are scaled on the intra-op pool (ember._native.ufunc), as mul's are
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 1 << 20)).astype(dtype)
    fast = ember.add(ember.from_numpy(x), ember.from_numpy(y), alpha=0.3).numpy()
    slow = ember.add(ember.from_numpy(x), ember.from_numpy(y).requires_grad_(),
                     alpha=0.3).detach().numpy()
    _same_bits(fast, slow)
