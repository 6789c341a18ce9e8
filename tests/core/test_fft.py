"""``ember.fft``: every transform against PyTorch (the oracle, skipped without it) over norms,
``n``/``s`` padding and trimming and several dims; PyTorch's dtype rules and errors; float64 /
complex128 gradcheck of every transform under every norm, gradgradcheck for some; the
frequency helpers and shifts. Runs on the strict device too (``EMBER_TEST_DEVICE=strict``):
tensors go to the default device."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import assert_same_error

import ember
from ember.autograd import gradcheck, gradgradcheck

NORMS = (None, "backward", "forward", "ortho")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2",
       "ihfft2", "hfftn", "ihfftn")
#: the transforms of real signals (complex input is an error)
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
#: the transforms with a real result (their input is a one-sided Hermitian spectrum)
REAL_OUT = {"irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"}

#: (n, dim) of the one-dimensional transforms: defaults, trimming, zero-padding, other dims
ONE_D_ARGS = ((None, -1), (3, -1), (9, 0), (None, 1), (2, -2))
#: (s, dim) of the n-dimensional ones (the 2-d forms use their default dims unless given)
N_D_ARGS = ((None, None), ((3, 7), None), ((4, -1), (0, 2)), (None, (2, 0)), ((3,), (1,)),
            ((2, 6), (-1, 0)))


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _rng(seed=0):
    return np.random.default_rng(seed)


def _array(shape, complex_: bool, seed=0):
    rng = _rng(seed)
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def _kwargs(name, size, dim):
    key = "n" if name in ONE_D else "s"
    kw = {key: size}
    if dim is not None or not name.endswith("2"):
        kw["dim"] = dim
    return kw


def _args(name):
    return ONE_D_ARGS if name in ONE_D else N_D_ARGS


def _host(t):
    return t.detach().numpy()


def _torch_host(t):
    return t.detach().resolve_conj().numpy()


def _compare(torch, name, arr, **kw):
    tf, ef = getattr(torch.fft, name), getattr(ember.fft, name)
    expected = tf(torch.from_numpy(arr), **kw)
    got = ef(ember.tensor(arr), **kw)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (name, kw)
    assert tuple(got.shape) == tuple(expected.shape), (name, kw)
    tol = 1e-10 if arr.dtype in (np.float64, np.complex128) else 2e-5
    np.testing.assert_allclose(_host(got), _torch_host(expected), rtol=tol, atol=tol,
                               err_msg=f"{name} {kw}")


@pytest.mark.parity
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_transform_matches_torch(torch, name, norm):
    inputs = [False] if name in REAL_ONLY else [True, False]
    for complex_ in inputs:
        arr = _array((4, 6, 5), complex_)
        for size, dim in _args(name):
            _compare(torch, name, arr, norm=norm, **_kwargs(name, size, dim))


@pytest.mark.parity
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_float32_matches_torch(torch, name):
    arr = _array((3, 8), name not in REAL_ONLY).astype(
        np.float32 if name in REAL_ONLY else np.complex64)
    _compare(torch, name, arr)
    _compare(torch, name, arr, norm="ortho")


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_dtype_rules_match_torch(torch, name, dtype):
    """Integers and bool: the default float's complex type; float16/bfloat16: PyTorch's CPU
    error; complex input to the real-signal transforms: PyTorch's error."""
    data = np.arange(12).reshape(3, 4) % 3
    t = torch.tensor(data).to(getattr(torch, dtype))
    e = ember.tensor(data).to(getattr(ember, dtype))
    assert_same_error_or_dtype(lambda: getattr(ember.fft, name)(e),
                               lambda: getattr(torch.fft, name)(t))


def assert_same_error_or_dtype(ember_fn, torch_fn):
    try:
        expected = torch_fn()
    except Exception:
        assert_same_error(ember_fn, torch_fn)
        return
    got = ember_fn()
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(_host(got), _torch_host(expected), rtol=1e-5, atol=1e-5)


def test_default_dtype_decides_the_promotion_of_integers():
    x = ember.arange(8)
    assert ember.fft.fft(x).dtype is ember.complex64
    assert ember.fft.irfft(x).dtype is ember.float32
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.fft.fft(x).dtype is ember.complex128
        assert ember.fft.rfft(x).dtype is ember.complex128
    finally:
        ember.set_default_dtype(prev)


# -- errors ------------------------------------------------------------------------------------

def _error_cases():
    x = np.random.default_rng(1).standard_normal((4, 6))
    c = x + 1j * x
    return [
        ("fft", x, {"dim": 2}), ("fft", x, {"n": 0}), ("fft", x, {"n": -3}),
        ("fft", x, {"norm": "bad"}), ("fft", np.array(3.0), {}),
        ("fft", x, {"dim": (0,)}), ("fft", x, {"n": 3.5}),
        ("irfft", x[:, :1], {}), ("rfft", c, {}), ("ihfft", c, {}),
        ("rfftn", c, {}), ("rfft2", c, {}), ("ihfftn", c, {}), ("ihfft2", c, {}),
        ("ihfftn", c, {"dim": ()}), ("ihfftn", c, {"s": (1, 2, 3)}),
        ("fftn", x, {"s": (3, 3, 3)}), ("fftn", x, {"s": (3, 3), "dim": (0,)}),
        ("fftn", x, {"dim": (0, 0)}), ("fftn", x, {"dim": (0, 5)}),
        ("fftn", x, {"s": (-2, 3)}), ("fftn", x, {"s": (0, 3)}),
        ("fftn", np.array(3.0), {"dim": 0}), ("fft2", x[0], {}),
        ("rfftn", x, {"dim": ()}), ("irfftn", c, {"dim": ()}), ("hfftn", c, {"dim": ()}),
        ("irfftn", c, {"s": (0, 4)}), ("irfftn", c[:, :1], {}), ("hfft", c, {"n": 0}),
        ("fftshift", x, {"dim": 3}), ("ifftshift", x, {"dim": -3}),
    ]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(len(_error_cases())))
def test_errors_match_torch(torch, case):
    name, arr, kw = _error_cases()[case]
    assert_same_error(lambda: getattr(ember.fft, name)(ember.tensor(arr), **kw),
                      lambda: getattr(torch.fft, name)(torch.from_numpy(arr), **kw))


def test_out_argument():
    x = ember.tensor(_array((3, 4), True))
    out = ember.empty(0, dtype=ember.complex128)
    r = ember.fft.fft(x, out=out)
    assert r is out
    np.testing.assert_allclose(_host(out), np.fft.fft(_host(x)), atol=1e-12)
    out = ember.empty(0, dtype=ember.float64)
    assert ember.fft.irfft(x, out=out) is out
    np.testing.assert_allclose(_host(out), np.fft.irfft(_host(x)), atol=1e-12)
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got "
                                           "Double"):
        ember.fft.fft(x, out=ember.empty(0, dtype=ember.float64))


def test_zero_dim_and_empty_batches():
    s = ember.tensor(3.0)
    r = ember.fft.fftn(s)
    assert r.dtype is ember.complex64 and r.shape == () and r.item() == 3
    r = ember.fft.fft(ember.zeros(0, 4))
    assert tuple(r.shape) == (0, 4) and r.dtype is ember.complex64
    r = ember.fft.rfft(ember.zeros(3, 0), n=4)
    assert tuple(r.shape) == (3, 3) and float(r.abs().sum()) == 0


def test_round_trips():
    x = ember.tensor(_array((3, 10), False))
    c = ember.tensor(_array((3, 10), True))
    for norm in NORMS:
        np.testing.assert_allclose(_host(ember.fft.ifft(ember.fft.fft(c, norm=norm), norm=norm)),
                                   _host(c), atol=1e-12)
        np.testing.assert_allclose(
            _host(ember.fft.irfft(ember.fft.rfft(x, norm=norm), n=10, norm=norm)), _host(x),
            atol=1e-12)
        np.testing.assert_allclose(
            _host(ember.fft.hfft(ember.fft.ihfft(x, norm=norm), n=10, norm=norm)), _host(x),
            atol=1e-12)
        np.testing.assert_allclose(
            _host(ember.fft.irfftn(ember.fft.rfftn(x, norm=norm), s=x.shape, norm=norm)),
            _host(x), atol=1e-12)


def test_parseval_ortho():
    x = ember.tensor(_array((64,), True))
    X = ember.fft.fft(x, norm="ortho")
    assert abs(float((X.abs() ** 2).sum()) - float((x.abs() ** 2).sum())) < 1e-9


# -- autograd ----------------------------------------------------------------------------------

def _leaf(name, shape, seed=0):
    arr = _array(shape, name not in REAL_ONLY, seed)
    return ember.tensor(arr).requires_grad_(True)


GRAD_ONE_D = ((None, -1), (3, -1), (7, 0))
GRAD_N_D = ((None, None), ((3, 6), (0, 2)), ((2, -1), (1, 0)), ((3,), (1,)))


@pytest.mark.parametrize("norm", NORMS[1:])
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_gradcheck(name, norm):
    """float64/complex128 gradcheck of each transform: defaults, trimming, zero-padding,
    other and several dims (complex outputs through their real views)."""
    fn = getattr(ember.fft, name)
    args = GRAD_ONE_D if name in ONE_D else GRAD_N_D
    shape = (3, 4, 5) if name in N_D else (4, 5)
    for i, (size, dim) in enumerate(args):
        if name in N_D and name.endswith("2") and dim is not None and len(dim) != 2:
            continue
        kw = _kwargs(name, size, dim)
        x = _leaf(name, shape, seed=i)
        assert gradcheck(lambda t, kw=kw: fn(t, norm=norm, **kw), (x,)), (name, norm, kw)


@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "rfft", "irfft", "hfft", "ihfft",
                                  "rfftn", "irfftn", "hfftn"])
def test_real_input_gradient_is_real(name):
    """A real input's gradient is real, also through the complex-input transforms."""
    fn = getattr(ember.fft, name)
    x = ember.tensor(_array((4, 6), False)).requires_grad_(True)
    y = fn(x)
    loss = (y.abs() ** 2).sum() if y.is_complex() else (y ** 2).sum()
    loss.backward()
    assert x.grad.dtype is ember.float64
    assert gradcheck(lambda t: fn(t, norm="ortho"), (x.detach().requires_grad_(True),))


@pytest.mark.parametrize("name, kw", [("fft", {"n": 7}), ("rfft", {}), ("irfft", {"n": 7}),
                                      ("hfft", {}), ("ihfft", {"n": 3}),
                                      ("fftn", {"s": (3, 5)}), ("irfftn", {}),
                                      ("rfft2", {"norm": "ortho"})])
def test_gradgradcheck(name, kw):
    fn = getattr(ember.fft, name)
    x = _leaf(name, (3, 4), seed=3)
    assert gradgradcheck(lambda t: fn(t, **kw), (x,))


@pytest.mark.parity
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn",
                                  "hfftn", "ihfft2"])
def test_gradient_matches_torch(torch, name):
    """The gradient of a real loss of each transform equals PyTorch's (its convention for
    complex inputs included)."""
    arr = _array((4, 6), name not in REAL_ONLY, seed=5)
    w = _array((4, 10), True, seed=6)
    results = []
    for lib, tensor in ((torch, torch.from_numpy), (ember, ember.tensor)):
        x = tensor(arr.copy()).requires_grad_(True)
        y = getattr(lib.fft, name)(x, norm="ortho")
        wt = tensor(w[tuple(slice(0, s) for s in y.shape)].copy())
        loss = (y * wt).real.sum() if y.is_complex() else (y * wt.real).sum()
        loss.backward()
        g = x.grad
        results.append(_torch_host(g) if lib is torch else _host(g))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-10, atol=1e-10)


# -- frequencies and shifts --------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.3, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fftfreq_matches_torch(torch, n, d, dtype):
    for name in ("fftfreq", "rfftfreq"):
        expected = getattr(torch.fft, name)(n, d, dtype=getattr(torch, dtype)).numpy()
        got = getattr(ember.fft, name)(n, d, dtype=getattr(ember, dtype))
        assert got.dtype is getattr(ember, dtype)
        assert got.device == ember.get_default_device()
        np.testing.assert_allclose(_host(got), expected, rtol=1e-7, atol=0)


def test_fftfreq_options_and_errors(torch):
    f = ember.fft.fftfreq(4, requires_grad=True)
    assert f.requires_grad and f.dtype is ember.float32
    assert ember.fft.rfftfreq(6, device="cpu").device == ember.device("cpu")
    assert_same_error(lambda: ember.fft.fftfreq(4, dtype=ember.int64),
                      lambda: torch.fft.fftfreq(4, dtype=torch.int64))
    assert_same_error(lambda: ember.fft.fftfreq(-1), lambda: torch.fft.fftfreq(-1))
    assert_same_error(lambda: ember.fft.fftfreq(4.5), lambda: torch.fft.fftfreq(4.5))


@pytest.mark.parity
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1), (1,)])
def test_shifts_match_torch(torch, dim):
    arr = np.arange(35.0).reshape(5, 7)
    for name in ("fftshift", "ifftshift"):
        expected = getattr(torch.fft, name)(torch.from_numpy(arr), dim=dim).numpy()
        got = getattr(ember.fft, name)(ember.tensor(arr), dim=dim)
        np.testing.assert_array_equal(_host(got), expected)
    x = ember.tensor(arr)
    np.testing.assert_array_equal(
        _host(ember.fft.ifftshift(ember.fft.fftshift(x, dim=dim), dim=dim)), arr)


def test_shift_gradients():
    x = ember.tensor(_array((4, 5), True)).requires_grad_(True)
    assert gradcheck(lambda t: ember.fft.fftshift(ember.fft.fft2(t)), (x,))
    assert gradcheck(lambda t: ember.fft.ifftshift(t, dim=1), (x,))


def test_namespace():
    import ember.fft as F

    assert set(F.__all__) == {
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
        "rfftfreq", "fftshift", "ifftshift"}
    assert F.fft.__name__ == "fft_fft"  # PyTorch's name too
    assert not hasattr(ember, "fft_fft") and not hasattr(ember.Tensor, "fft_fft")
    from ember.ops.registry import op_key

    assert op_key(F.rfft) == "fft_rfft"
