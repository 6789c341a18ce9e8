"""Window functions and ``stft``/``istft``: values against PyTorch (the oracle, skipped without
it: windows to 1e-6 in float32 and 1e-12 in float64), PyTorch's errors and warnings, the round
trip ``istft(stft(x)) == x``, and float64 gradchecks through both. Runs on the strict device
too (``EMBER_TEST_DEVICE=strict``): tensors go to the default device."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from testutils import assert_same_error

import ember
from ember.autograd import gradcheck, gradgradcheck

WINDOWS = ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window")
LENGTHS = (0, 1, 2, 3, 8, 33)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _host(t):
    return t.detach().numpy()


def _torch_host(t):
    return t.detach().resolve_conj().numpy()


def _signal(shape, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


# -- windows -----------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", WINDOWS)
def test_window_matches_torch(torch, name, periodic, dtype, tol):
    extra = {"hamming_window": [(), (0.5, 0.5), (0.6, 0.3)],
             "kaiser_window": [(), (0.0,), (5.0,), (20.0,)]}.get(name, [()])
    for n in LENGTHS:
        for args in extra:
            expected = getattr(torch, name)(n, periodic, *args, dtype=getattr(torch, dtype))
            got = getattr(ember, name)(n, periodic, *args, dtype=getattr(ember, dtype))
            assert got.dtype is getattr(ember, dtype) and tuple(got.shape) == (n,)
            assert got.device == ember.get_default_device()
            np.testing.assert_allclose(_host(got), expected.numpy(), rtol=0, atol=tol,
                                       err_msg=f"{name}({n}, {periodic}, {args})")


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", WINDOWS)
def test_half_windows_match_torch(torch, name, dtype):
    expected = getattr(torch, name)(16, dtype=getattr(torch, dtype)).float().numpy()
    got = getattr(ember, name)(16, dtype=getattr(ember, dtype))
    assert got.dtype is getattr(ember, dtype)
    np.testing.assert_allclose(_host(got.float()), expected, rtol=0, atol=1e-2)


@pytest.mark.parity
@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors_match_torch(torch, name):
    for args, kw in (((-1,), {}), ((5,), {"dtype": "int64"}), ((5,), {"dtype": "int32"}),
                     ((4.0,), {}), ((True,), {})):
        ekw = {k: getattr(ember, v) for k, v in kw.items()}
        tkw = {k: getattr(torch, v) for k, v in kw.items()}
        assert_same_error(lambda a=args, k=ekw: getattr(ember, name)(*a, device="cpu", **k),
                          lambda a=args, k=tkw: getattr(torch, name)(*a, **k))


def test_window_options():
    w = ember.hann_window(8, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype is ember.float32
    assert ember.kaiser_window(6, beta=3.0, device="cpu").device == ember.device("cpu")
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.blackman_window(4).dtype is ember.float64
    finally:
        ember.set_default_dtype(prev)
    # periodic windows are the symmetric window one point longer, cut
    np.testing.assert_allclose(_host(ember.hann_window(8, dtype=ember.float64)),
                               _host(ember.hann_window(9, False, dtype=ember.float64))[:8])
    assert not hasattr(ember.Tensor, "hann_window")


# -- stft --------------------------------------------------------------------------------------

STFT_CASES = (
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 5, "win_length": 12},
    {"n_fft": 15, "center": False},
    {"n_fft": 16, "pad_mode": "constant", "normalized": True},
    {"n_fft": 16, "onesided": False},
    {"n_fft": 16, "win_length": 10, "hop_length": 3, "center": False, "align_to_window": True},
    {"n_fft": 16, "pad_mode": "circular", "hop_length": 7},
    {"n_fft": 8, "pad_mode": "replicate", "hop_length": 2},
    {"n_fft": 16, "hop_length": 20},
)


def _window_pair(torch, kw, use_window, dtype="float64"):
    if not use_window:
        return None, None
    n = kw.get("win_length", kw["n_fft"])
    return (ember.hann_window(n, dtype=getattr(ember, dtype)),
            torch.hann_window(n, dtype=getattr(torch, dtype)))


@pytest.mark.parity
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
@pytest.mark.parametrize("use_window", [True, False])
def test_stft_matches_torch(torch, case, use_window):
    kw = STFT_CASES[case]
    ew, tw = _window_pair(torch, kw, use_window)
    for arr in (_signal((2, 100)), _signal((100,), seed=1), _signal((2, 64), True, seed=2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = torch.stft(torch.from_numpy(arr), window=tw, return_complex=True, **kw)
            got = ember.stft(ember.tensor(arr), window=ew, return_complex=True, **kw)
        assert got.dtype is ember.complex128 and tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_allclose(_host(got), _torch_host(expected), rtol=1e-10, atol=1e-10,
                                   err_msg=f"{kw} {arr.shape}")


@pytest.mark.parity
def test_stft_dtypes_and_real_output_match_torch(torch):
    arr = _signal((100,)).astype(np.float32)
    for xdt, wdt in (("float32", "float32"), ("float32", "float64"), ("float64", "float32")):
        ew = ember.hann_window(16, dtype=getattr(ember, wdt))
        tw = torch.hann_window(16, dtype=getattr(torch, wdt))
        got = ember.stft(ember.tensor(arr).to(getattr(ember, xdt)), 16, window=ew,
                         return_complex=True)
        expected = torch.stft(torch.from_numpy(arr).to(getattr(torch, xdt)), 16, window=tw,
                              return_complex=True)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        np.testing.assert_allclose(_host(got), expected.numpy(), rtol=1e-5, atol=1e-5)
    ew, tw = ember.hann_window(16), torch.hann_window(16)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        got = ember.stft(ember.tensor(arr), 16, window=ew, return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.stft(torch.from_numpy(arr), 16, window=tw, return_complex=False)
    assert got.dtype is ember.float32 and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(_host(got), expected.numpy(), rtol=1e-5, atol=1e-5)
    # complex input: return_complex defaults to True
    c = ember.tensor(_signal((50,), True).astype(np.complex64))
    assert ember.stft(c, 8, window=ember.hann_window(8)).dtype is ember.complex64
    # the method
    r = ember.tensor(arr).stft(16, window=ew, return_complex=True)
    np.testing.assert_allclose(_host(r), _host(ember.stft(ember.tensor(arr), 16, window=ew,
                                                          return_complex=True)))


def test_stft_warns_without_window():
    x = ember.tensor(_signal((40,)))
    with pytest.warns(UserWarning, match="A window was not provided. A rectangular window"):
        ember.stft(x, 8, return_complex=True)


def _stft_error_cases(torch, lib):
    T = torch.from_numpy if lib is torch else ember.tensor
    x = T(_signal((100,)))
    w = lib.hann_window(16, dtype=lib.float64)
    return [
        lambda: lib.stft(x, 16),
        lambda: lib.stft(x, 200, window=lib.hann_window(200, dtype=lib.float64),
                         return_complex=True),
        lambda: lib.stft(x, 16, hop_length=0, window=w, return_complex=True),
        lambda: lib.stft(x, 16, win_length=20, return_complex=True),
        lambda: lib.stft(x, 16, window=lib.ones(10, dtype=lib.float64), return_complex=True),
        lambda: lib.stft(x.to(lib.complex128), 16, window=w, onesided=True,
                         return_complex=True),
        lambda: lib.stft(x.reshape(1, 1, 100), 16, window=w, return_complex=True),
        lambda: lib.stft(x, 16, window=w, return_complex=True, pad_mode="bad"),
        lambda: lib.stft(x[:5], 16, window=w, return_complex=True, center=False),
        lambda: lib.stft(x, 0, return_complex=True),
        lambda: lib.stft(T(np.arange(100)), 16, window=w.float(), return_complex=True),
        lambda: lib.stft(x, 16, window=w, return_complex=True, align_to_window=True),
    ]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(12))
def test_stft_errors_match_torch(torch, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(_stft_error_cases(torch, ember)[case],
                          _stft_error_cases(torch, torch)[case])


# -- istft -------------------------------------------------------------------------------------

ISTFT_CASES = (
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 5, "win_length": 12},
    {"n_fft": 16, "normalized": True, "length": 90},
    {"n_fft": 16, "onesided": False},
    {"n_fft": 16, "length": 120},
    {"n_fft": 15, "hop_length": 3},
)


@pytest.mark.parity
@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
@pytest.mark.parametrize("return_complex", [False, True])
def test_istft_matches_torch(torch, case, return_complex):
    kw = dict(ISTFT_CASES[case])
    if return_complex and kw.get("onesided", True) is not False:
        kw["onesided"] = False
    ew, tw = _window_pair(torch, kw, True)
    n = kw["n_fft"]
    bins = n if kw.get("onesided") is False else n // 2 + 1
    for shape in ((bins, 26), (2, bins, 26)):
        spec = _signal(shape, True, seed=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = torch.istft(torch.from_numpy(spec), window=tw,
                                   return_complex=return_complex, **kw)
            got = ember.istft(ember.tensor(spec), window=ew, return_complex=return_complex,
                              **kw)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        assert tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_allclose(_host(got), _torch_host(expected), rtol=1e-10, atol=1e-10,
                                   err_msg=f"{kw} {shape}")


def _istft_error_cases(torch, lib):
    T = torch.from_numpy if lib is torch else ember.tensor
    S = T(_signal((9, 26), True))
    w = lib.hann_window(16, dtype=lib.float64)
    return [
        lambda: lib.istft(T(_signal((9, 26, 2))), 16, window=w),
        lambda: lib.istft(S, 16, window=w, return_complex=True),
        lambda: lib.istft(S, 16, window=w, onesided=False),
        lambda: lib.istft(S, 18, window=lib.hann_window(18, dtype=lib.float64)),
        lambda: lib.istft(S, 16, window=w, hop_length=20),
        lambda: lib.istft(S, 16, window=w, win_length=20),
        lambda: lib.istft(S, 16, window=lib.ones(10, dtype=lib.float64)),
        lambda: lib.istft(S[None, None], 16, window=w),
    ]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(8))
def test_istft_errors_match_torch(torch, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(_istft_error_cases(torch, ember)[case],
                          _istft_error_cases(torch, torch)[case])


def test_istft_nola_and_warnings():
    S = ember.tensor(_signal((9, 26), True))
    with pytest.raises(RuntimeError, match="window overlap add min: 1"):
        ember.istft(S, 16, window=ember.zeros(16, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="window overlap add min: 1"):  # Hann, no centring
        ember.istft(S, 16, window=ember.hann_window(16, dtype=ember.float64), center=False)
    with pytest.warns(UserWarning, match="A window was not provided"):
        ember.istft(S, 16)
    with pytest.warns(UserWarning, match="The length of signal is shorter than the length"):
        y = ember.istft(S, 16, window=ember.hann_window(16, dtype=ember.float64), length=200)
    assert tuple(y.shape) == (200,) and float(y[-92:].abs().sum()) == 0
    assert float(y[-93].abs()) > 0


@pytest.mark.parametrize("kw", [
    {"n_fft": 32}, {"n_fft": 32, "hop_length": 4, "win_length": 20},
    {"n_fft": 31, "hop_length": 10, "normalized": True}, {"n_fft": 32, "onesided": False},
    {"n_fft": 16, "hop_length": 4, "center": False},
])
def test_round_trip(kw):
    """``istft(stft(x)) == x`` (with ``length``), real and batched, and complex signals."""
    n = kw["n_fft"]
    # without centring, the first and last samples need a window that does not vanish there
    make = ember.hann_window if kw.get("center", True) else ember.hamming_window
    w = make(kw.get("win_length", n), dtype=ember.float64)
    ikw = dict(kw)
    for arr in (_signal((300,)), _signal((3, 300), seed=1)):
        x = ember.tensor(arr)
        S = ember.stft(x, window=w, return_complex=True, **kw)
        y = ember.istft(S, window=w, length=300, **ikw)
        np.testing.assert_allclose(_host(y), arr, atol=1e-10)
    if kw.get("center", True):
        z = ember.tensor(_signal((200,), True, seed=2))
        ckw = {k: v for k, v in kw.items() if k != "onesided"}
        S = ember.stft(z, window=w, **ckw)
        y = ember.istft(S, window=w, length=200, onesided=False, return_complex=True, **ckw)
        np.testing.assert_allclose(_host(y), _host(z), atol=1e-10)


def test_round_trip_float32():
    x = ember.tensor(_signal((2, 1000)).astype(np.float32))
    w = ember.hann_window(64)
    S = ember.stft(x, 64, hop_length=16, window=w, return_complex=True)
    assert S.dtype is ember.complex64
    y = ember.istft(S, 64, hop_length=16, window=w, length=1000)
    assert y.dtype is ember.float32
    np.testing.assert_allclose(_host(y), _host(x), atol=1e-5)


# -- autograd ----------------------------------------------------------------------------------

def _small_window(n):
    return ember.hann_window(n, dtype=ember.float64) + 0.1  # nonzero everywhere


@pytest.mark.parametrize("kw", [
    {"n_fft": 8, "hop_length": 3}, {"n_fft": 8, "hop_length": 2, "win_length": 6},
    {"n_fft": 7, "center": False, "hop_length": 2}, {"n_fft": 8, "pad_mode": "constant",
                                                     "normalized": True, "onesided": False},
])
def test_stft_gradcheck(kw):
    x = ember.tensor(_signal((2, 20))).requires_grad_(True)
    w = _small_window(kw.get("win_length", kw["n_fft"])).requires_grad_(True)
    assert gradcheck(lambda a, b: ember.stft(a, window=b, return_complex=True, **kw), (x, w))
    z = ember.tensor(_signal((20,), True)).requires_grad_(True)
    ckw = {k: v for k, v in kw.items() if k != "onesided"}
    assert gradcheck(lambda a: ember.stft(a, window=w.detach(), **ckw), (z,))


@pytest.mark.parametrize("kw", [
    {"n_fft": 8, "hop_length": 2}, {"n_fft": 8, "hop_length": 3, "win_length": 6,
                                    "length": 25},
    {"n_fft": 8, "hop_length": 2, "normalized": True, "onesided": False},
])
def test_istft_gradcheck(kw):
    n = kw["n_fft"]
    bins = n if kw.get("onesided") is False else n // 2 + 1
    S = ember.tensor(_signal((bins, 9), True)).requires_grad_(True)
    w = _small_window(kw.get("win_length", n)).requires_grad_(True)
    assert gradcheck(lambda s, b: ember.istft(s, window=b, **kw), (S, w))
    if kw.get("onesided") is False:
        assert gradcheck(lambda s: ember.istft(s, window=w.detach(), return_complex=True, **kw),
                         (S,))


def test_gradgradcheck_stft_istft():
    x = ember.tensor(_signal((16,))).requires_grad_(True)
    w = _small_window(8)
    assert gradgradcheck(lambda a: ember.stft(a, 8, 2, window=w, return_complex=True), (x,))
    S = ember.tensor(_signal((5, 7), True)).requires_grad_(True)
    assert gradgradcheck(lambda s: ember.istft(s, 8, 2, window=w), (S,))


@pytest.mark.parity
def test_stft_gradient_matches_torch(torch):
    arr = _signal((50,))
    grads = []
    for lib, T in ((torch, torch.from_numpy), (ember, ember.tensor)):
        x = T(arr.copy()).requires_grad_(True)
        w = lib.hann_window(16, dtype=lib.float64)
        S = lib.stft(x, 16, 4, window=w, return_complex=True)
        y = lib.istft(S * S.abs(), 16, 4, window=w, length=50)
        (y * y).sum().backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-9, atol=1e-10)


@pytest.mark.parity
def test_half_precision_follows_torch(torch):
    """Low-precision signals: refused where PyTorch's CPU FFT refuses them; a float32 window
    or signal promotes the frames to float32, as in PyTorch."""
    arr = _signal((40,)).astype(np.float32)
    for dt in ("bfloat16", "float16"):
        x = ember.tensor(arr).to(getattr(ember, dt))
        with pytest.raises(RuntimeError, match="Unsupported dtype"):
            ember.stft(x, 8, window=ember.hann_window(8, dtype=getattr(ember, dt)),
                       return_complex=True)
        with pytest.raises(RuntimeError), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's "ComplexHalf support is experimental"
            torch.stft(torch.from_numpy(arr).to(getattr(torch, dt)), 8,
                       window=torch.hann_window(8, dtype=getattr(torch, dt)),
                       return_complex=True)
    got = ember.stft(ember.tensor(arr).to(ember.bfloat16), 8, window=ember.hann_window(8),
                     return_complex=True)
    expected = torch.stft(torch.from_numpy(arr).to(torch.bfloat16), 8,
                          window=torch.hann_window(8), return_complex=True)
    assert got.dtype is ember.complex64 and expected.dtype == torch.complex64
    np.testing.assert_allclose(_host(got), expected.numpy(), rtol=1e-5, atol=1e-5)
