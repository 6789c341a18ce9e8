"""ember.onnx.export of complex values, the FFTs, stft(return_complex=True) and istft.

Complex values are carried inside the graph as real ``[..., 2]`` pairs (ONNX's DFT
convention); a complex graph input or output is refused by name. Each exported graph passes
``onnx.checker`` (full check) and ONNX's strict shape inference, runs in onnxruntime and is
compared with Ember's eager result at rtol 1e-4 and atol 1e-4 times the output's largest
magnitude (at least 1): an FFT's rounding error scales with the norm of the signal, not with
each bin (onnxruntime's float32 DFT of 100 points: 2e-4 on bins of magnitude 20, 1e-5 of the
largest); opsets 17 (DFT's axis an attribute) and 20 (an input).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_check as check  # noqa: E402
from testutils import onnx_run as run  # noqa: E402

from ember.onnx import OnnxExporterError, UnsupportedOperatorError  # noqa: E402
from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(11)
FFT = ember.fft
OPSETS = [17, 20]


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


def compare(fn, args, opset, tol=1e-4, **kwargs):
    proto = onnx_export(fn, args, opset_version=opset, **kwargs)
    check(proto)
    got = run(proto, *args)
    want = fn(*args)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape, g.dtype, w.dtype)
        finite = np.abs(w[np.isfinite(w)]) if w.dtype != np.bool_ else np.zeros(1)
        atol = tol * max(1.0, float(finite.max(initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=tol, atol=atol, equal_nan=True,
                                   err_msg=f"output {i}")
    return proto


# -- complex values -----------------------------------------------------------------------------

def _complex_ops(x, y):
    z = ember.complex(x, y)
    w = ember.polar(x.abs() + 0.5, y)  # no complex division by zero (its NaN/inf differ)
    q = ember.view_as_complex(ember.stack([y, x], -1))
    return (ember.real(z * w), ember.imag(z * w), (z + w).abs(), ember.view_as_real(z - q),
            ember.view_as_real(z / w), ember.angle(z), ember.view_as_real(z.conj()),
            ember.view_as_real(z * 2.0 - x), ember.view_as_real(x / z), ember.view_as_real(-z),
            ember.view_as_real(ember.add(z, w, alpha=3)), ember.view_as_real(z * 1j + 0.5j),
            ember.view_as_real(ember.sgn(z)), ember.view_as_real(z.clone()),
            ember.view_as_real(x * z), ember.view_as_real(z / x),
            ember.abs(ember.fft.fft(x)) + ember.angle(x))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("opset", [13, 17])
def test_complex_arithmetic_parts_and_views(opset):
    """Zeros on both axes (angle's branches), signs in every quadrant."""
    x = tensor(np.concatenate([RNG.standard_normal(12), [0.0, 0.0, 1.0, -1.0, 0.0, -2.0]]))
    y = tensor(np.concatenate([RNG.standard_normal(12), [0.0, 1.0, 0.0, 0.0, -1.0, 0.0]]))
    fn = _complex_ops if opset >= 17 else (lambda a, b: _complex_ops(a, b)[:-1])
    compare(fn, (x, y), opset)


def test_isreal_of_complex_values():
    """Against NumPy: Ember's eager isreal of a complex tensor is all True (a core bug)."""
    x, y = tensor([1.0, 0.0, -2.0, 0.0]), tensor([0.0, 1.0, -0.0, 3.0])
    proto = onnx_export(lambda a, b: ember.isreal(ember.complex(a, b)), (x, y), opset_version=13)
    check(proto)
    np.testing.assert_array_equal(run(proto, x, y)[0], np.isreal(x.numpy() + 1j * y.numpy()))


def test_complex_float64_stays_float64():
    x, y = tensor(RNG.standard_normal(8), np.float64), tensor(RNG.standard_normal(8), np.float64)
    compare(lambda a, b: (ember.complex(a, b) * ember.complex(b, a)).abs(), (x, y), 17, 1e-10)


def test_a_complex_input_or_output_is_refused_by_name():
    x = tensor(RNG.standard_normal(8))
    with pytest.raises(OnnxExporterError, match=r"output 'spectrum' \(value %fft_rfft\) is "
                                                 r"complex64: ONNX has no complex tensor type"):
        onnx_export(lambda a: FFT.rfft(a), (x,), opset_version=17, output_names=["spectrum"])
    z = ember.complex(x, x)
    with pytest.raises(OnnxExporterError, match=r"graph input 'z' \(value %z\) is complex64"):
        onnx_export(lambda z: z.abs(), (z,), opset_version=17, input_names=["z"])


def test_an_op_without_a_complex_mapping_is_in_the_combined_error(monkeypatch):
    from ember.onnx import _export_ops, _export_program  # noqa: F401 (loads every table)

    monkeypatch.delitem(_export_ops.MAPPINGS, "unique_consecutive")  # mapped: take it out
    x = tensor(RNG.standard_normal((2, 8)))

    def fn(a):
        spec = FFT.rfft(a)
        return ember.exp(spec).abs(), ember.view_as_real(spec.sum(0)), ember.unique_consecutive(
            a.long().abs().flatten())

    with pytest.raises(UnsupportedOperatorError) as info:
        onnx_export(fn, (x,), opset_version=17)
    text = str(info.value)
    assert "3 ops cannot be exported" in text
    assert "ember op 'exp' cannot be exported: its ONNX mapping works on real tensors only" \
        in text
    assert "ember op 'sum' cannot be exported" in text and \
        "'unique_consecutive' has no ONNX mapping" in text


# -- the transforms ------------------------------------------------------------------------------

def _one_dim(x, z):
    zc = ember.view_as_complex(z)
    return (ember.view_as_real(FFT.fft(x)), ember.view_as_real(FFT.fft(zc, n=5, dim=0)),
            ember.view_as_real(FFT.ifft(zc, norm="ortho")),
            ember.view_as_real(FFT.ifft(x, n=14, norm="forward")),
            ember.view_as_real(FFT.rfft(x)), ember.view_as_real(FFT.rfft(x, n=9, dim=0,
                                                                         norm="ortho")),
            ember.view_as_real(FFT.rfft(x, n=16, norm="forward")),
            FFT.irfft(FFT.rfft(x)), FFT.irfft(zc), FFT.irfft(zc, n=7, norm="ortho"),
            FFT.irfft(zc, n=2, dim=0, norm="forward"), FFT.irfft(x[:, :5], n=8),
            FFT.hfft(zc), FFT.hfft(zc, n=9, norm="ortho"),
            ember.view_as_real(FFT.ihfft(x)), ember.view_as_real(FFT.ihfft(x, n=7,
                                                                           norm="forward")))


@pytest.mark.parametrize("opset", OPSETS)
def test_one_dimensional_transforms(opset):
    x = tensor(RNG.standard_normal((4, 12)))
    z = tensor(RNG.standard_normal((4, 6, 2)))
    compare(_one_dim, (x, z), opset)


def _n_dim(x, z):
    zc = ember.view_as_complex(z)
    return (ember.view_as_real(FFT.fft2(x)), ember.view_as_real(FFT.ifft2(zc, s=(3, 8))),
            ember.view_as_real(FFT.fftn(x, dim=(0, 2), norm="ortho")),
            ember.view_as_real(FFT.ifftn(zc, norm="forward")),
            ember.view_as_real(FFT.rfft2(x)), ember.view_as_real(FFT.rfftn(x, s=(4, 5, 6))),
            FFT.irfft2(zc), FFT.irfftn(zc, s=(2, 5, 9), norm="ortho"),
            FFT.irfftn(FFT.rfftn(x), s=x.shape), FFT.hfft2(zc), FFT.hfftn(zc, norm="ortho"),
            ember.view_as_real(FFT.ihfft2(x)), ember.view_as_real(FFT.ihfftn(x, dim=(0, 1))))


@pytest.mark.parametrize("opset", OPSETS)
def test_n_dimensional_transforms(opset):
    x = tensor(RNG.standard_normal((3, 4, 10)))
    z = tensor(RNG.standard_normal((3, 4, 6, 2)))
    compare(_n_dim, (x, z), opset)


def test_float64_transforms():
    x = tensor(RNG.standard_normal((3, 10)), np.float64)
    compare(lambda a: (FFT.irfft(FFT.rfft(a) * FFT.rfft(a.flip(-1)), n=10),
                       ember.view_as_real(FFT.fft2(a))), (x,), 17, 1e-10)


def test_shifts_and_frequencies_with_a_dynamic_size():
    x = tensor(RNG.standard_normal((7, 6)))

    def fn(a):
        n = a.shape[0]
        return (FFT.fftshift(a), FFT.ifftshift(a), FFT.fftshift(a, dim=0),
                FFT.ifftshift(a, dim=(-1,)), a[:, 0] * FFT.fftfreq(n, 0.5),
                FFT.rfftfreq(n) + 0.0, ember.view_as_real(FFT.fftshift(FFT.fft(a), dim=-1)))

    proto = onnx_export(fn, (x,), opset_version=17, dynamic_axes={"input_0": {0: "n"}},
                        input_names=["input_0"])
    check(proto)
    for rows in (7, 4, 1):
        a = tensor(RNG.standard_normal((rows, 6)))
        for got, want in zip(run(proto, a), fn(a)):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


# -- the programs the brief names ---------------------------------------------------------------

def _spectra(x, w):
    spec = ember.stft(x, 16, 4, window=w, return_complex=True)
    return (FFT.rfft(x).abs(), spec.abs() ** 2, ember.view_as_real(FFT.fft(x)),
            ember.angle(spec).cos(),  # +-pi where a real bin rounds to a signed zero
            ember.istft(spec, 16, 4, window=w),
            ember.istft(spec, 16, 4, window=w, length=90),
            ember.istft(ember.stft(x, 12, 3, win_length=10, window=w[:10],
                                   return_complex=True, normalized=True), 12, 3,
                        win_length=10, window=w[:10], normalized=True),
            ember.istft(ember.stft(x, 12, 3, window=w[:12] + 0.1, center=False,
                                   return_complex=True), 12, 3, window=w[:12] + 0.1,
                        center=False),
            ember.istft(ember.stft(x, 16, 4, window=w, return_complex=True), 16, 4, window=w,
                        length=120))


@pytest.mark.filterwarnings("ignore:The length of signal is shorter than the length")
@pytest.mark.parametrize("opset", OPSETS)
def test_spectrogram_and_istft_round_trip(opset):
    x = tensor(RNG.standard_normal((2, 100)))
    w = ember.hann_window(16)
    compare(_spectra, (x, w), opset)


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_istft_of_a_two_sided_spectrum_unbatched_without_a_window():
    x = tensor(RNG.standard_normal(64))

    def fn(a):
        spec = ember.stft(a, 8, 2, return_complex=True, onesided=False)
        return (ember.istft(spec, 8, 2), ember.view_as_real(ember.istft(spec, 8, 2,
                                                                         return_complex=True)))

    compare(fn, (x,), 17)


def test_dynamic_batch_spectrogram():
    x = tensor(RNG.standard_normal((2, 64)))
    w = ember.hann_window(16)

    def fn(a, win):
        spec = ember.stft(a, 16, 4, window=win, return_complex=True)
        return spec.abs() ** 2, ember.istft(spec, 16, 4, window=win)

    proto = onnx_export(fn, (x, w), opset_version=17, input_names=["x", "w"],
                        dynamic_axes={"x": {0: "batch"}})
    check(proto)
    for batch in (1, 3):
        a = tensor(RNG.standard_normal((batch, 64)))
        for got, want in zip(run(proto, a, w), fn(a, w)):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_transforms_need_opset_17():
    x = tensor(RNG.standard_normal((2, 8)))
    with pytest.raises(UnsupportedOperatorError, match=r"fft_rfft needs opset >= 17 "
                                                       r"\(requested 16\)"):
        onnx_export(lambda a: FFT.rfft(a).abs(), (x,), opset_version=16)
