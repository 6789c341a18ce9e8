"""``ember.fft`` (``fft_*`` ops), the window functions, ``stft`` and ``istft``.

The generic tests ask for a float dtype; the transforms that take complex input get complex
samples of its complex type (float64 -> complex128, so their float64 gradcheck is a complex128
gradcheck) and a real one; complex results are compared and differentiated through their real
views (a complex loss cannot start backward). ``tests/core/test_fft.py`` and
``tests/core/test_stft.py`` cover every norm, ``n``/``s`` and dims against PyTorch.
"""

from __future__ import annotations

import numpy as np

from . import FLOAT, SampleInput, define, make

_ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_N_D = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2",
        "ihfft2", "hfftn", "ihfftn")
_REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
_FACTORY = "a factory (no tensor input): the generic test only moves tensors; " \
           "tests/core/test_fft.py and test_stft.py run it on the default device"
#: PyTorch's ihfft family (and ifft of a real signal) returns a lazily conjugated view, which
#: ``.numpy()`` refuses
_CONJ_VIEW = "torch returns a conjugate-bit view that .numpy() refuses: tests/core/test_fft.py " \
             "compares it after resolve_conj()"
#: the generic oracle needs a tensor input to run in bfloat16
_FACTORY_ORACLE = "a factory: tests/core/test_fft.py and test_stft.py compare it with PyTorch " \
                  "in each dtype (the generic bfloat16 oracle needs a tensor input)"
#: stft/istft's complex results in bfloat16 runs cannot equal PyTorch's bit for bit
_STFT_ORACLE = "tests/core/test_stft.py compares it with PyTorch over its arguments and " \
               "dtypes, bfloat16's refusal included"


def _as_real(out):
    """A complex result as its real view (the generic tests apply this to PyTorch's results
    too: the view of the result's own library)."""
    if not out.is_complex():
        return out
    import sys

    lib = sys.modules[type(out).__module__.partition(".")[0]]
    return lib.view_as_real(out)


def _complex(shape, dtype, device, requires_grad, noncontiguous=False):
    import ember

    re = make(shape, dtype, device, noncontiguous=noncontiguous)
    im = make(shape, dtype, device, noncontiguous=noncontiguous)
    return ember.complex(re, im).requires_grad_(requires_grad)


def _transform_samples(name):
    one_d = name in _ONE_D
    shape = (3, 5) if one_d else (2, 3, 4)
    if one_d:
        calls = (({}, "default"), ({"n": 3}, "trimmed"), ({"n": 8, "dim": 0}, "padded dim 0"),
                 ({"norm": "ortho"}, "ortho"), ({"norm": "forward", "dim": -2}, "forward"))
    elif name.endswith("2"):
        calls = (({}, "default"), ({"s": (2, 6)}, "s"), ({"dim": (0, 2), "norm": "ortho"},
                                                          "dims ortho"))
    else:
        calls = (({}, "default"), ({"s": (3, 5), "dim": (0, 2)}, "s and dims"),
                 ({"dim": (1,), "norm": "forward"}, "one dim"), ({"s": (2, 6)}, "s"))

    def samples(device, dtype, requires_grad=False):
        def complex_input(noncontiguous=False):
            if name in _REAL_ONLY:
                return make(shape, dtype, device, requires_grad=requires_grad,
                            noncontiguous=noncontiguous)
            return _complex(shape, dtype, device, requires_grad, noncontiguous)

        for kw, label in calls:
            yield SampleInput(complex_input(), name=label, **kw)
        yield SampleInput(complex_input(noncontiguous=True), name="noncontiguous")
        if name not in _REAL_ONLY:
            yield SampleInput(make(shape, dtype, device, requires_grad=requires_grad),
                              name="real input")

    return samples


def _numpy_ref(name):
    fn = getattr(np.fft, name)

    def ref(a, *args, **kw):
        if "dim" in kw:
            kw["axis" if name in _ONE_D else "axes"] = kw.pop("dim")
        if kw.get("s") is not None and kw.get("axes") is None:  # PyTorch's default dims
            kw["axes"] = tuple(range(a.ndim - len(kw["s"]), a.ndim))
        if not np.iscomplexobj(a) and name in ("irfft", "hfft", "irfft2", "hfft2", "irfftn",
                                               "hfftn"):
            a = a.astype(np.complex128)
        return fn(a, *args, **kw)

    return ref


for _name in _ONE_D + _N_D:
    _skip = {"torch": _CONJ_VIEW} if _name in ("ifft", "ihfft", "ihfft2", "ihfftn") else {}
    # NumPy has no hfft2/hfftn/ihfft2/ihfftn: PyTorch is their oracle here
    _ref = _numpy_ref(_name) if hasattr(np.fft, _name) else None
    define(f"fft_{_name}", _transform_samples(_name), dtypes=FLOAT, ref=_ref,
           torch=f"fft.{_name}", atol=1e-4, rtol=1e-5, output=_as_real, skip=_skip)


# -- frequencies and shifts --------------------------------------------------------------------

def _freq_samples(device, dtype, requires_grad=False):
    import ember

    dt = getattr(ember, dtype)
    yield SampleInput(5, dtype=dt, name="odd")
    yield SampleInput(8, 0.25, dtype=dt, name="spacing")
    yield SampleInput(1, dtype=dt, name="one point")


def _freq_ref(fn):
    return lambda n, d=1.0, dtype=None: fn(n, d)


_FACTORY_SKIPS = {"testdev": _FACTORY, "strict": _FACTORY, "torch": _FACTORY_ORACLE}
define("fft_fftfreq", _freq_samples, dtypes=FLOAT, ref=_freq_ref(np.fft.fftfreq),
       torch="fft.fftfreq", skip=_FACTORY_SKIPS)
define("fft_rfftfreq", _freq_samples, dtypes=FLOAT, ref=_freq_ref(np.fft.rfftfreq),
       torch="fft.rfftfreq", skip=_FACTORY_SKIPS)


def _shift_samples(device, dtype, requires_grad=False):
    yield SampleInput(make((4, 5), dtype, device, requires_grad=requires_grad), name="all dims")
    yield SampleInput(make((4, 5), dtype, device, requires_grad=requires_grad), dim=1,
                      name="dim 1")
    yield SampleInput(make((3, 4, 5), dtype, device, requires_grad=requires_grad), dim=(0, -1),
                      name="dims")
    yield SampleInput(_complex((5,), dtype, device, requires_grad), name="complex")


def _shift_ref(fn):
    return lambda a, dim=None: fn(a, axes=dim)


define("fft_fftshift", _shift_samples, dtypes=FLOAT, ref=_shift_ref(np.fft.fftshift),
       torch="fft.fftshift", output=_as_real)
define("fft_ifftshift", _shift_samples, dtypes=FLOAT, ref=_shift_ref(np.fft.ifftshift),
       torch="fft.ifftshift", output=_as_real)


# -- windows -----------------------------------------------------------------------------------

def _window_samples(extra):
    def samples(device, dtype, requires_grad=False):
        import ember

        dt = getattr(ember, dtype)
        yield SampleInput(8, dtype=dt, name="periodic")
        yield SampleInput(9, False, dtype=dt, name="symmetric")
        yield SampleInput(1, dtype=dt, name="one point")
        yield SampleInput(0, dtype=dt, name="empty")
        for args in extra:
            yield SampleInput(7, True, *args, dtype=dt, name=f"args {args}")

    return samples


def _window_ref(symmetric):
    """NumPy's symmetric window; a periodic window is the symmetric one a point longer, cut."""

    def ref(n, periodic=True, *args, dtype=None):
        if n <= 1:
            return np.ones(n)
        return symmetric(n + 1, *args)[:n] if periodic else symmetric(n, *args)

    return ref


def _hamming(m, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * np.arange(m) / (m - 1))


_WINDOWS = {
    "hann_window": (lambda m: np.hanning(m), ()),
    "hamming_window": (_hamming, ((0.5, 0.4),)),
    "blackman_window": (lambda m: np.blackman(m), ()),
    "bartlett_window": (lambda m: np.bartlett(m), ()),
    "kaiser_window": (lambda m, beta=12.0: np.kaiser(m, beta), ((4.0,),)),
}
for _name, (_sym, _extra) in _WINDOWS.items():
    define(_name, _window_samples(_extra), dtypes=FLOAT, ref=_window_ref(_sym),
           skip=_FACTORY_SKIPS)


# -- stft / istft ------------------------------------------------------------------------------

def _hann(n, dtype, device, requires_grad):
    import ember

    w = ember.hann_window(n, dtype=getattr(ember, dtype), device=device) + 0.1
    return w.requires_grad_(requires_grad)


def _stft_samples(device, dtype, requires_grad=False):
    def x(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    w8 = _hann(8, dtype, device, requires_grad)
    yield SampleInput(x((20,)), 8, window=w8, return_complex=True, name="1-D")
    yield SampleInput(x((2, 20)), 8, 3, window=w8, return_complex=True, name="batch, hop 3")
    yield SampleInput(x((20,)), 8, 2, 6, window=_hann(6, dtype, device, requires_grad),
                      center=False, return_complex=True, name="win_length 6, no centring")
    yield SampleInput(x((20,)), 8, window=w8, pad_mode="constant", normalized=True,
                      onesided=False, return_complex=True, name="two-sided, normalized")
    yield SampleInput(_complex((16,), dtype, device, requires_grad), 8, 2, window=w8,
                      name="complex")


def _istft_samples(device, dtype, requires_grad=False):
    w8 = _hann(8, dtype, device, requires_grad)
    yield SampleInput(_complex((5, 9), dtype, device, requires_grad), 8, 2, window=w8,
                      name="one-sided")
    yield SampleInput(_complex((2, 5, 9), dtype, device, requires_grad), 8, 3, 6,
                      window=_hann(6, dtype, device, requires_grad), length=25,
                      name="batch, win_length 6, length")
    yield SampleInput(_complex((8, 9), dtype, device, requires_grad), 8, 2, window=w8,
                      onesided=False, return_complex=True, normalized=True,
                      name="two-sided, complex result")


define("stft", _stft_samples, dtypes=FLOAT, atol=1e-4, rtol=1e-5, output=_as_real,
       skip={"torch": _STFT_ORACLE})
define("istft", _istft_samples, dtypes=FLOAT, atol=1e-4, rtol=1e-5, output=_as_real,
       skip={"torch": _STFT_ORACLE})
del _name, _sym, _extra, _skip, _ref
