"""ember.fft, ember.special and complex numbers against PyTorch: each probe asserts Ember's
answer outright (so it means something without torch) and, where torch is installed, that
PyTorch gives the same value or raises the same exception type with the same message."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import ember


def _torch():
    """PyTorch when it is installed, else None (the probe then checks Ember alone)."""
    try:
        return pytest.importorskip("torch")
    except pytest.skip.Exception:
        return None


def _libs():
    t = _torch()
    return (ember,) if t is None else (ember, t)


def _raises(fn, exc, msg):
    """``fn(m)`` raises ``exc`` with ``msg`` for ember and (where installed) torch."""
    for m in _libs():
        with pytest.raises(exc, match=re.escape(msg)):
            fn(m)


def _values(fn, expected, dtype=None, **tol):
    """``fn(m)`` equals ``expected`` (NaN where NaN) for ember and torch, in ``dtype``."""
    for m in _libs():
        r = fn(m)
        if dtype is not None:
            assert str(r.dtype).split(".")[-1] == dtype, (m.__name__, r.dtype)
        got = r.detach().cpu().numpy() if hasattr(r, "detach") else np.asarray(r)
        np.testing.assert_allclose(got, np.asarray(expected), equal_nan=True,
                                   **(tol or {"rtol": 1e-6, "atol": 1e-7}))


# -- ember.fft ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["fftfreq", "rfftfreq"])
def test_fftfreq_integer_dtype_error_names_the_function(fn):
    _raises(lambda m: getattr(m.fft, fn)(4, dtype=m.int32), RuntimeError,
            f"{fn} requires a floating point or complex dtype")


def test_fftfreq_complex_dtype_is_aranges_dispatch_error():
    _raises(lambda m: m.fft.fftfreq(4, dtype=m.complex64), NotImplementedError,
            "\"arange_cpu\" not implemented for 'ComplexFloat'")
    _raises(lambda m: m.fft.rfftfreq(4, dtype=m.complex128), NotImplementedError,
            "\"arange_cpu\" not implemented for 'ComplexDouble'")


def test_fftfreq_out_gives_the_dtype():
    _raises(lambda m: m.fft.fftfreq(4, out=m.empty(4, dtype=m.int64)), RuntimeError,
            "fftfreq requires a floating point or complex dtype")

    def f64(m):
        o = m.empty(3, dtype=m.float64)
        m.fft.fftfreq(3, out=o)
        return o

    _values(f64, [0.0, 1 / 3, -1 / 3], "float64", rtol=1e-15)


def test_fftfreq_d_must_be_a_number():
    _raises(lambda m: m.fft.fftfreq(5, d="a"), TypeError,
            "fft_fftfreq(): argument 'd' must be float, not str")
    _raises(lambda m: m.fft.fftfreq(5, d=None), TypeError,
            "fft_fftfreq(): argument 'd' must be float, not NoneType")


def test_fft_int_arguments_take_one_element_integer_tensors():
    _values(lambda m: m.fft.fftfreq(m.tensor(4)), [0.0, 0.25, -0.5, -0.25], "float32")
    _values(lambda m: m.fft.fft(m.arange(4.0), n=m.tensor(2)), [1 + 0j, -1 + 0j], "complex64")
    _values(lambda m: m.fft.fft(m.arange(4.0), dim=m.tensor(0)),
            [6 + 0j, -2 + 2j, -2 + 0j, -2 - 2j], "complex64")
    _raises(lambda m: m.fft.fft(m.arange(4.0), n=m.tensor(2.0)), TypeError,
            "fft_fft(): argument 'n' must be int, not Tensor")


@pytest.mark.parametrize("fn", ["fftshift", "ifftshift"])
def test_fftshift_without_dims_to_shift_needs_shifts(fn):
    _raises(lambda m: getattr(m.fft, fn)(m.tensor(2.0)), RuntimeError, "`shifts` required")
    _raises(lambda m: getattr(m.fft, fn)(m.ones(2, 3), dim=()), RuntimeError,
            "`shifts` required")
    _raises(lambda m: getattr(m.fft, fn)(m.tensor(2.0), dim=0), IndexError,
            "Dimension specified as 0 but tensor has no dimensions")


def test_fftshift_argument_errors():
    _raises(lambda m: m.fft.fftshift([1, 2]), TypeError,
            "fft_fftshift(): argument 'input' (position 1) must be Tensor, not list")
    _raises(lambda m: m.fft.fftshift(m.ones(2, 3), dim=1.5), TypeError,
            "fft_fftshift(): argument 'dim' must be tuple of ints, not float")
    _raises(lambda m: m.fft.ifftshift(m.ones(2, 3), dim=[0.5]), TypeError,
            "fft_ifftshift(): argument 'dim' must be tuple of ints, not list")


def test_fft_norm_must_be_a_string():
    _raises(lambda m: m.fft.fft(m.arange(4.0), norm=1), TypeError,
            "fft_fft(): argument 'norm' must be str, not int")
    _raises(lambda m: m.fft.rfftn(m.ones(2, 2), norm=1.0), TypeError,
            "fft_rfftn(): argument 'norm' must be str, not float")


def test_fftn_s_and_dim_must_be_int_sequences():
    x = np.arange(6.0).reshape(2, 3)
    _raises(lambda m: m.fft.fftn(m.tensor(x), s=[2.5, 3]), TypeError,
            "fft_fftn(): argument 's' must be tuple of ints, not list")
    _raises(lambda m: m.fft.fftn(m.tensor(x), dim=(0.5,)), TypeError,
            "fft_fftn(): argument 'dim' must be tuple of ints, not tuple")
    _raises(lambda m: m.fft.fftn(m.tensor(x), dim=[0, 1.0]), TypeError,
            "fft_fftn(): argument 'dim' failed to unpack the object at pos 2 with error "
            "\"type must be tuple of ints,but got float\"")


@pytest.mark.parametrize("fn,name", [("irfft", "irfft"), ("hfft", "hfft"),
                                     ("irfftn", "irfftn"), ("hfft2", "hfftn")])
def test_real_transforms_refuse_a_complex_or_integer_out(fn, name):
    def call(m, dtype):
        x = m.ones(1, 3, dtype=m.complex64)
        getattr(m.fft, fn)(x, out=m.empty(0, dtype=dtype))

    _raises(lambda m: call(m, m.complex64), RuntimeError,
            f"{name} expects a floating point output tensor, but got ComplexFloat")
    _raises(lambda m: call(m, m.int64), RuntimeError,
            f"{name} expects a floating point output tensor, but got Long")


@pytest.mark.parametrize("fn,name", [("fft2", "fftn"), ("ifft2", "fftn"), ("ifftn", "fftn"),
                                     ("rfft2", "rfftn"), ("ihfft2", "ihfftn")])
def test_two_dim_transforms_name_the_n_dim_one_in_out_errors(fn, name):
    _raises(lambda m: getattr(m.fft, fn)(m.ones(2, 2), out=m.empty(0)), RuntimeError,
            f"{name} expects a complex output tensor, but got Float")


# -- ember.special: complex input, dtypes, arguments -------------------------------------------

@pytest.mark.parametrize("fn,kernel", [
    ("erf", "erf_vml_cpu"), ("erfc", "erfc_vml_cpu"), ("erfinv", "erfinv_vml_cpu"),
    ("gammaln", "lgamma_vml_cpu"), ("digamma", "digamma"), ("i0", "i0_vml_cpu"),
    ("i0e", "i0e_cpu"), ("i1", "i1_cpu"), ("i1e", "i1e_cpu"), ("ndtr", "erf_vml_cpu"),
    ("ndtri", "ndtri_cpu"), ("log_ndtr", "log_ndtr_cpu"), ("erfcx", "erfcx_cpu"),
    ("entr", "entr_cpu"), ("bessel_j0", "bessel_j0_cpu"), ("airy_ai", "airy_ai_cpu"),
    ("modified_bessel_k1", "modified_bessel_k1_cpu"), ("logit", "logit_cpu"),
    ("spherical_bessel_j0", "spherical_bessel_j0_cpu"),
])
def test_real_special_functions_refuse_complex_input(fn, kernel):
    """They used to drop the imaginary part (a NumPy cast) and return its real function."""
    _raises(lambda m: getattr(m.special, fn)(m.tensor([0.5 + 1j])), NotImplementedError,
            f"\"{kernel}\" not implemented for 'ComplexFloat'")
    _raises(lambda m: getattr(m.special, fn)(m.tensor([0.5 + 1j], dtype=m.complex128)),
            NotImplementedError, f"\"{kernel}\" not implemented for 'ComplexDouble'")


@pytest.mark.parametrize("fn,kernel", [("zeta", "zeta_cpu"), ("xlog1py", "xlog1py_cpu"),
                                       ("gammainc", "igamma_cpu"),
                                       ("chebyshev_polynomial_t", "chebyshev_polynomial_t_cpu"),
                                       ("legendre_polynomial_p", "legendre_polynomial_p_cpu")])
def test_binary_special_functions_refuse_complex_input(fn, kernel):
    _raises(lambda m: getattr(m.special, fn)(m.tensor([1 + 1j]), m.tensor([2 + 0j])),
            NotImplementedError, f"\"{kernel}\" not implemented for 'ComplexFloat'")


def test_polygamma_and_mvlgamma_refuse_complex_input():
    _raises(lambda m: m.polygamma(1, m.tensor([1j])), NotImplementedError,
            "\"trigamma\" not implemented for 'ComplexFloat'")
    _raises(lambda m: m.special.polygamma(2, m.tensor([1j])), NotImplementedError,
            "\"polygamma\" not implemented for 'ComplexFloat'")
    _raises(lambda m: m.mvlgamma(m.tensor([1j]), 2), NotImplementedError,
            "\"arange_cpu\" not implemented for 'ComplexFloat'")


def test_sinc_of_complex_input():
    z = [0.5 + 1j, 0j, 1 + 0j, -2 + 0.3j]
    pz = np.pi * np.array(z)
    expected = np.where(np.array(z) == 0, 1.0, np.sin(pz) / np.where(pz == 0, 1, pz))
    _values(lambda m: m.special.sinc(m.tensor(z, dtype=m.complex128)), expected, "complex128",
            rtol=1e-12, atol=1e-14)
    _values(lambda m: m.sinc(m.tensor(z)), expected, "complex64", rtol=1e-5, atol=1e-6)


def test_sinc_of_complex_input_differentiates():
    z0 = np.array([0.5 + 1j, -2 + 0.3j])

    def grad(m):
        z = m.tensor(z0, dtype=m.complex128, requires_grad=True)
        m.sinc(z).abs().sum().backward()
        return z.grad

    # d|f|/dz* (PyTorch's convention): conj(f'(z)) * f(z) / |f(z)|
    pz = np.pi * z0
    f = np.sin(pz) / pz
    df = (pz * np.cos(pz) - np.sin(pz)) / (z0 * z0 * np.pi)
    _values(grad, np.conj(df) * f / np.abs(f), "complex128", rtol=1e-10)


def test_special_round_has_no_integer_bool_or_complex_case():
    _raises(lambda m: m.special.round(m.tensor([1, 2])), NotImplementedError,
            "\"round_vml_cpu\" not implemented for 'Long'")
    _raises(lambda m: m.special.round(m.tensor([1, 2]), decimals=1), NotImplementedError,
            "\"round_cpu\" not implemented for 'Long'")
    _raises(lambda m: m.special.round(m.tensor([True])), NotImplementedError,
            "\"round_vml_cpu\" not implemented for 'Bool'")
    _raises(lambda m: m.special.round(m.tensor([1.5 + 1j])), NotImplementedError,
            "\"round_vml_cpu\" not implemented for 'ComplexFloat'")
    _values(lambda m: m.round(m.tensor([1, 2])), [1, 2], "int64")  # torch.round takes them
    _values(lambda m: m.special.round(m.tensor([1.25, 2.5]), decimals=1), [1.2, 2.5],
            "float32")


def test_incomplete_gamma_has_no_integer_case_and_takes_tensors_only():
    _raises(lambda m: m.special.gammainc(m.tensor([1, 2]), m.tensor([1, 2])),
            NotImplementedError, "\"igamma_cpu\" not implemented for 'Long'")
    _raises(lambda m: m.special.gammaincc(m.tensor([True]), m.tensor([True])),
            NotImplementedError, "\"igammac_cpu\" not implemented for 'Bool'")
    _raises(lambda m: m.igamma(m.tensor([1.0, 2.0]), 2), TypeError,
            "argument 'other' (position 2) must be Tensor, not int")
    _raises(lambda m: m.igammac(2.0, m.tensor([1.0])), TypeError,
            "argument 'input' (position 1) must be Tensor, not float")
    _values(lambda m: m.special.gammainc(m.tensor([1.0, 2.0]), m.tensor([1, 2])),
            [1 - math.exp(-1), 1 - 3 * math.exp(-2)], "float32", rtol=1e-6)


@pytest.mark.parametrize("fn,arg", [("bessel_j0", "input"), ("i0e", "input"),
                                    ("ndtri", "input"), ("airy_ai", "x"),
                                    ("spherical_bessel_j0", "x"),
                                    ("scaled_modified_bessel_k1", "x")])
def test_unary_special_functions_name_a_non_tensor(fn, arg):
    _raises(lambda m: getattr(m.special, fn)(0.5), TypeError,
            f"special_{fn}(): argument '{arg}' (position 1) must be Tensor, not float")


@pytest.mark.parametrize("fn,params", [("zeta", ("input", "other")),
                                       ("xlog1py", ("input", "other")),
                                       ("hermite_polynomial_h", ("x", "n"))])
def test_binary_special_functions_need_a_tensor(fn, params):
    x, n = params
    own = "self" if x == "input" else x
    _raises(lambda m: getattr(m.special, fn)(2.0, 3.0), TypeError,
            f"special_{fn}() received an invalid combination of arguments - got (float, "
            f"float), but expected one of:\n * (Tensor {x}, Tensor {n}, *, Tensor out = None)\n"
            f" * (Number {own}, Tensor {n}, *, Tensor out = None)\n * (Tensor {x}, Number {n}, "
            "*, Tensor out = None)\n")


def test_polynomials_at_infinity():
    """The recurrence started from ``x * 0 + 1``: NaN at x = +-inf even for degree 2."""
    inf = math.inf
    _values(lambda m: m.special.chebyshev_polynomial_t(m.tensor([inf, -inf]), 2), [inf, inf])
    _values(lambda m: m.special.hermite_polynomial_h(m.tensor([inf, -inf]), 2), [inf, inf])
    _values(lambda m: m.special.legendre_polynomial_p(m.tensor([inf, -inf],
                                                                dtype=m.float64), 2),
            [inf, inf])
    _values(lambda m: m.special.chebyshev_polynomial_u(m.tensor([inf]), 3), [math.nan])


def test_zeta_at_infinite_order():
    _values(lambda m: m.special.zeta(m.tensor([math.inf] * 4, dtype=m.float64),
                                     m.tensor([1.0, 0.5, -2.5, 2.0], dtype=m.float64)),
            [1.0, math.inf, math.inf, math.nan], "float64")


# -- complex numbers ---------------------------------------------------------------------------

def test_view_as_complex_of_a_scalar():
    _raises(lambda m: m.view_as_complex(m.tensor(1.0)), RuntimeError,
            "Input tensor must have one or more dimensions")


@pytest.mark.parametrize("fn", ["view_as_real", "view_as_complex", "real", "imag"])
def test_complex_views_name_a_non_tensor(fn):
    _raises(lambda m: getattr(m, fn)([1.0, 2.0]), TypeError,
            f"{fn}(): argument 'input' (position 1) must be Tensor, not list")


@pytest.mark.parametrize("fn", ["complex", "polar"])
def test_complex_and_polar_take_only_an_out_of_their_dtype(fn):
    def call(m, dtype):
        o = m.empty(1, dtype=dtype)
        getattr(m, fn)(m.tensor([1.0]), m.tensor([0.0]), out=o)
        return o

    _raises(lambda m: call(m, m.complex128), RuntimeError,
            "Expected object of scalar type ComplexFloat but got scalar type ComplexDouble for "
            "argument 'out'")
    _raises(lambda m: call(m, m.float32), RuntimeError,
            "Expected object of scalar type ComplexFloat but got scalar type Float for "
            "argument 'out'")
    _values(lambda m: call(m, m.complex64), [1 + 0j], "complex64")
