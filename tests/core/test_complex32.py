"""``ember.complex32`` (``ember.chalf``), PyTorch's ComplexHalf: the dtype, PyTorch's promotion
and casts, the ops PyTorch's CPU kernels run in complex32 (against NumPy references that round
each part to float16, and against PyTorch itself where it is installed), PyTorch's error for
the ops it refuses, printing, gradients, checkpoints both ways, and the devices.

complex32 arrays are ``ml_dtypes.complex32`` arrays: a float16 real part then a float16
imaginary part per element, computed in complex64 and rounded once per part.
"""

from __future__ import annotations

import io
import pickle
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember

C32 = ember.complex32
C32_NP = np.dtype(ml_dtypes.complex32)
ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
       ember.bfloat16, ember.float32, ember.float64, C32, ember.complex64, ember.complex128]

# the oracle warns "ComplexHalf support is experimental" whenever it makes one
pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _rounded(z) -> np.ndarray:
    """complex128 values with each part rounded to float16: what a complex32 holds."""
    z = np.asarray(z, dtype=np.complex128)
    out = np.empty(z.shape, np.complex128)
    with np.errstate(over="ignore"):  # beyond float16's range: inf, as the cast gives
        out.real = z.real.astype(np.float16)
        out.imag = z.imag.astype(np.float16)
    return out


def _values(t: ember.Tensor) -> np.ndarray:
    """A complex32 tensor's values as complex128 (exact), from any device."""
    return np.asarray(t.cdouble().tolist(), dtype=np.complex128)


def _sample(seed: int, shape=(4, 5), scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape) * scale + 1j * rng.standard_normal(shape) * scale
    return _rounded(z)


# -- the dtype ---------------------------------------------------------------------------------

def test_dtype_object():
    assert ember.chalf is C32 and ember.complex32 is C32
    assert repr(C32) == "ember.complex32" and C32.itemsize == 4
    assert C32.is_complex and not C32.is_floating_point and C32.is_signed
    assert C32.to_real() is ember.float16 and C32.to_complex() is C32
    assert ember.float16.to_complex() is C32 and ember.bfloat16.to_complex() is ember.complex64
    assert C32.np == C32_NP
    for name in ("complex32", "chalf"):
        assert ember.zeros(1, dtype=name).dtype is C32
    assert pickle.loads(pickle.dumps(C32)) is C32


def test_tensor_metadata():
    t = ember.zeros(2, 3, dtype=C32)
    assert t.dtype is C32 and t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 24
    assert t.is_complex() and not t.is_floating_point() and t.is_signed()
    assert ember.is_complex(t) and not ember.is_floating_point(t)
    assert t.t().stride() == (1, 3)


def test_finfo_is_float16s_and_iinfo_refuses():
    f, h = ember.finfo(C32), ember.finfo(ember.float16)
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.resolution, f.dtype) == \
        (h.bits, h.eps, h.max, h.min, h.tiny, h.resolution, "float16") == \
        (16, 0.0009765625, 65504.0, -65504.0, 6.103515625e-05, 0.001, "float16")
    with pytest.raises(TypeError, match="iinfo"):
        ember.iinfo(C32)


# PyTorch's promote_types with complex32 (torch 2.13), written out so that it is tested
# without PyTorch too
PROMOTED = {ember.bool: C32, ember.uint8: C32, ember.int8: C32, ember.int16: C32,
            ember.int32: C32, ember.int64: C32, ember.float16: C32,
            ember.bfloat16: ember.complex64, ember.float32: ember.complex64,
            ember.float64: ember.complex128, C32: C32, ember.complex64: ember.complex64,
            ember.complex128: ember.complex128}


@pytest.mark.parametrize("other", ALL, ids=str)
def test_promote_types(other):
    assert ember.promote_types(C32, other) is PROMOTED[other]
    assert ember.promote_types(other, C32) is PROMOTED[other]


def test_promotion_matches_pytorch(torch):
    for a in ALL:
        for b in ALL:
            if C32 in (a, b):
                expected = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
                assert ember.promote_types(a, b).name == str(expected)[6:], (a, b)
                assert ember.can_cast(a, b) == torch.can_cast(getattr(torch, a.name),
                                                              getattr(torch, b.name)), (a, b)


def test_result_type_and_can_cast():
    c = ember.ones(2, dtype=C32)
    for scalar in (1, 1.5, 1j, True):
        assert ember.result_type(c, scalar) is C32
    assert ember.result_type(c, ember.ones(2)) is ember.complex64
    assert ember.result_type(c, ember.tensor(1.0, dtype=ember.float64)) is C32  # 0-dim: weaker
    assert ember.result_type(c, ember.ones(1, dtype=ember.float64)) is ember.complex128
    assert ember.result_type(ember.ones(2, dtype=ember.float16), 1j) is C32
    assert ember.result_type(ember.ones(2, dtype=ember.bfloat16), 1j) is ember.complex64
    assert ember.result_type(ember.tensor(1j, dtype=C32), ember.ones(2)) is ember.complex64
    assert ember.result_type(ember.tensor(1j, dtype=C32), ember.ones(2, dtype=ember.int64)) \
        is C32
    assert not ember.can_cast(C32, ember.float32) and ember.can_cast(ember.float64, C32)
    assert ember.can_cast(ember.complex128, C32) and ember.can_cast(C32, ember.complex64)


def test_default_complex_follows_a_float16_default():
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float16)
    try:
        assert ember.tensor([1j]).dtype is C32 and ember.tensor(1 + 1j).dtype is C32
    finally:
        ember.set_default_dtype(prev)


# -- creation and casts ------------------------------------------------------------------------

def test_factories():
    assert _values(ember.zeros(2, dtype=C32)).tolist() == [0, 0]
    assert _values(ember.ones(2, dtype=C32)).tolist() == [1, 1]
    assert ember.empty(2, 3, dtype=C32).shape == (2, 3)
    assert _values(ember.full((2,), 1.1 + 2j, dtype=C32)).tolist() == [_rounded(1.1 + 2j)] * 2
    assert _values(ember.full((2,), 1.5, dtype=C32)).tolist() == [1.5, 1.5]
    z = ember.tensor([1, 2.5, 0.1 + 3j], dtype=C32)
    np.testing.assert_array_equal(_values(z), _rounded([1, 2.5, 0.1 + 3j]))
    assert _values(ember.tensor(1 + 1j, dtype=C32)).tolist() == 1 + 1j
    for like in (ember.zeros_like, ember.ones_like, ember.empty_like, ember.randn_like,
                 ember.rand_like):
        assert like(z).dtype is C32 and like(z).shape == (3,)
    assert _values(ember.full_like(z, 2j)).tolist() == [2j] * 3
    assert z.new_zeros(2).dtype is C32 and z.new_tensor([3]).dtype is C32
    with pytest.raises(RuntimeError, match="value cannot be converted to type "
                       r"c10::complex<c10::Half> without overflow"):
        ember.full((1,), 1e6, dtype=C32)


def test_random_draws_are_complex32_with_unit_variance():
    ember.manual_seed(0)
    z = ember.randn(20000, dtype=C32)
    assert z.dtype is C32
    v = _values(z)
    assert abs(np.mean(np.abs(v) ** 2) - 1) < 0.05 and abs(v.real.std() - 0.5 ** 0.5) < 0.02
    u = _values(ember.rand(20000, dtype=C32))
    assert 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min() and u.imag.max() < 1
    assert np.array_equal(v, _rounded(v))  # float16 parts


@pytest.mark.parametrize("make, kernel", [
    (lambda: ember.arange(3, dtype=C32), "arange_cpu"),
    (lambda: ember.linspace(0, 1, 3, dtype=C32), "linspace_cpu"),
    (lambda: ember.logspace(0, 1, 3, dtype=C32), "logspace_cpu"),
    (lambda: ember.eye(2, dtype=C32), "eye"),
])
def test_factories_pytorch_refuses(make, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for '
                                                  "'ComplexHalf'"):
        make()


def test_casts_round_each_part_once():
    src = np.array([1.0001 + 2j, 7e4j, 1e-8 + 0j, -3.3 - 0.1j, 65519 + 1j])
    z = ember.tensor(src).to(C32)  # complex128 -> complex32
    np.testing.assert_array_equal(_values(z), _rounded(src))
    assert _values(ember.tensor(src.astype(np.complex64)).to(C32)).tolist() == \
        _rounded(src.astype(np.complex64)).tolist()
    for dt in (ember.float16, ember.float32, ember.float64, ember.bfloat16):
        r = ember.tensor([1.0001, -2.5, 6e4], dtype=dt).to(C32)
        ref = np.array([1.0001, -2.5, 6e4], dtype=dt.np).astype(np.float32)
        np.testing.assert_array_equal(_values(r), _rounded(ref))
    assert _values(ember.tensor([3, -100000]).to(C32)).tolist() == [3, complex("-inf")]
    assert _values(ember.tensor([True, False]).to(C32)).tolist() == [1, 0]
    back = ember.tensor([1.5 + 2j, -3 + 0.25j], dtype=C32)
    assert back.cfloat().dtype is ember.complex64 and back.cdouble().tolist() == \
        [1.5 + 2j, -3 + 0.25j]
    assert ember.tensor([1.0, 2.0]).chalf().dtype is C32


def test_cast_to_real_keeps_the_real_part_with_pytorchs_warning():
    z = ember.tensor([1.5 + 2j, -3.75 + 0.25j, 0.5j], dtype=C32)
    for dt, expected in ((ember.float16, [1.5, -3.75, 0]), (ember.float32, [1.5, -3.75, 0]),
                         (ember.int64, [1, -3, 0])):
        with pytest.warns(UserWarning, match="discards the imaginary part"):
            r = z.to(dt)
        assert r.dtype is dt and r.tolist() == expected


def test_cast_to_bool_is_nonzero_real_or_imaginary_part():
    z = ember.tensor([0.5j, 0, 1, 1e-7 + 0j, -0.0 + 0j, 1e-8j], dtype=C32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch does not warn here
        # 1e-7 is a float16 subnormal (nonzero), 1e-8 rounds to 0
        assert z.bool().tolist() == [True, False, True, True, False, False]
    assert ember.tensor([0.5j], dtype=ember.complex64).bool().tolist() == [True]
    assert bool(ember.tensor(0.5j, dtype=C32)) and not bool(ember.tensor(0j, dtype=C32))
    assert ember.tensor([0, 0.5j], dtype=C32).any().item()
    assert not ember.tensor([0, 0.5j], dtype=C32).all().item()


def test_copy_fill_and_views_move_the_bits():
    src = _sample(1)
    z = ember.tensor(src, dtype=C32)
    assert np.array_equal(_values(z.clone()), src)
    dst = ember.zeros(4, 5, dtype=C32)
    dst.copy_(z)
    assert np.array_equal(_values(dst), src)
    dst.copy_(ember.ones(4, 5))
    assert (_values(dst) == 1).all()
    dst.fill_(1.1 + 2j)
    assert (_values(dst) == _rounded(1.1 + 2j)).all()
    dst[1:3, ::2] = 5j
    assert _values(dst)[2, 2] == 5j and _values(dst)[0, 0] == _rounded(1.1 + 2j)
    assert np.array_equal(_values(z.t().contiguous()), src.T)
    assert np.array_equal(_values(z[1:, ::2]), src[1:, ::2])
    idx = ember.tensor([3, 0])
    assert np.array_equal(_values(z[idx]), src[[3, 0]])
    assert np.array_equal(_values(z.index_select(1, idx)), src[:, [3, 0]])
    mask = ember.tensor(np.abs(src) > 3)
    assert np.array_equal(_values(z[mask]), src[np.abs(src) > 3])
    assert np.array_equal(_values(z.masked_fill(mask, 0)), np.where(np.abs(src) > 3, 0, src))
    assert np.array_equal(_values(ember.where(mask, z, 1j)), np.where(np.abs(src) > 3, src, 1j))
    assert np.array_equal(_values(ember.cat([z, z], 1)), np.concatenate([src, src], 1))
    assert np.array_equal(_values(ember.stack([z, z])), np.stack([src, src]))
    assert np.array_equal(_values(z.reshape(5, 4).permute(1, 0)), src.reshape(5, 4).T)
    assert np.array_equal(_values(z.diagonal()), np.diagonal(src))
    assert np.array_equal(_values(z.unfold(1, 2, 2)), np.stack([src[:, 0:2], src[:, 2:4]], 1))
    assert np.array_equal(_values(z.as_strided((2, 2), (1, 5))), [[src[0, 0], src[1, 0]],
                                                                    [src[0, 1], src[1, 1]]])
    assert np.array_equal(_values(ember.diag(z[0])), np.diag(src[0]))
    assert np.array_equal(_values(ember.tril(z)), np.tril(src))
    assert np.array_equal(_values(z.roll(1, 0)), np.roll(src, 1, 0))
    assert np.array_equal(_values(ember.nn.functional.pad(z, (1, 1)))[:, 1:-1], src)
    assert z.tolist() == src.tolist() and z[0, 0].item() == complex(src[0, 0])


def test_dtype_views():
    z = ember.tensor([1 + 2j, -3.5 + 0.25j], dtype=C32)
    assert z.view(ember.float32).shape == (2,) and z.view(ember.int16).shape == (4,)
    h = z.view(ember.float16)
    assert h.tolist() == [1.0, 2.0, -3.5, 0.25]
    h[0] = 7
    assert z[0].item() == 7 + 2j
    assert ember.tensor([1.0, 2.0], dtype=ember.float16).view(C32).item() == 1 + 2j


# -- arithmetic --------------------------------------------------------------------------------

def test_add_sub_mul_neg_conj_round_once():
    a, b = _sample(2, (200,)), _sample(3, (200,))
    ta, tb = ember.tensor(a, dtype=C32), ember.tensor(b, dtype=C32)
    a64, b64 = a.astype(np.complex64), b.astype(np.complex64)
    for got, ref in ((ta + tb, a64 + b64), (ta - tb, a64 - b64), (ta * tb, a64 * b64),
                     (-ta, -a64), (ta.conj(), a64.conj()), (ember.add(ta, tb, alpha=2),
                                                            a64 + (2 * b64).astype(np.complex64)),
                     (ember.addcmul(ta, ta, tb),
                      a64 + _rounded(a64 * b64).astype(np.complex64))):
        assert got.dtype is C32
        np.testing.assert_array_equal(_values(got), _rounded(ref))
    out = ta.clone()
    out.add_(tb)
    out.mul_(tb)
    np.testing.assert_array_equal(_values(out), _rounded(_rounded(a64 + b64).astype(
        np.complex64) * b64))


def test_numbers_meet_complex32_as_complex32():
    """PyTorch rounds a Python number to complex32 before the kernel runs."""
    z = ember.tensor([0.0999755859375 + 0.199951171875j, 1 + 2j], dtype=C32)
    zc = _values(z).astype(np.complex64)
    for scalar in (1.1, 2, True, 1.1 - 0.3j):
        for got in (z * scalar, scalar * z, z + scalar):
            assert got.dtype is C32
        s = np.complex64(_rounded(complex(scalar)))
        np.testing.assert_array_equal(_values(z * scalar), _rounded(zc * s))
        np.testing.assert_array_equal(_values(z + scalar), _rounded(zc + s))
    inplace = z.clone()
    inplace += 1.1
    np.testing.assert_array_equal(_values(inplace), _rounded(zc + np.complex64(_rounded(1.1))))
    assert (ember.ones(2, dtype=ember.float16) + 1j).dtype is C32
    assert (ember.ones(2, dtype=ember.float16) * ember.tensor(1j)).dtype is C32


def test_mixed_dtypes_promote():
    z = ember.tensor([1 + 2j], dtype=C32)
    assert (z + ember.ones(1)).dtype is ember.complex64
    assert (z + ember.ones(1, dtype=ember.float16)).dtype is C32
    assert (z + ember.ones(1, dtype=ember.bfloat16)).dtype is ember.complex64
    assert (z + ember.ones(1, dtype=ember.int64)).dtype is C32
    assert (z * ember.ones(1, dtype=ember.complex128)).dtype is ember.complex128
    with pytest.raises(RuntimeError, match="result type ComplexHalf can't be cast to the "
                                           "desired output type Half"):
        ember.ones(1, dtype=ember.float16).add_(z)
    assert ember.cat([z, ember.ones(1)]).dtype is ember.complex64
    assert ember.float_power(z, 2).dtype is ember.complex128


def test_abs_real_imag_and_views():
    src = _sample(4)
    z = ember.tensor(src, dtype=C32)
    a = z.abs()
    assert a.dtype is ember.float16
    np.testing.assert_array_equal(a.float().numpy(),
                                  np.abs(src.astype(np.complex64)).astype(np.float16))
    assert z.real.dtype is ember.float16 and z.imag.dtype is ember.float16
    np.testing.assert_array_equal(z.real.float().numpy(), src.real)
    np.testing.assert_array_equal(z.t().imag.float().numpy(), src.imag.T)
    w = z.clone()
    w.real.fill_(7)
    w.imag[0] = -1
    assert np.array_equal(_values(w)[1:], 7 + 1j * src.imag[1:])
    assert np.array_equal(_values(w)[0], 7 - 1j * np.ones(5))
    r = ember.view_as_real(z)
    assert r.dtype is ember.float16 and r.shape == (4, 5, 2) and r.stride() == (10, 2, 1)
    np.testing.assert_array_equal(r.float().numpy(), np.stack([src.real, src.imag], -1))
    np.testing.assert_array_equal(ember.view_as_real(z.t()).float().numpy()[..., 1], src.imag.T)
    c = ember.view_as_complex(r)
    assert c.dtype is C32 and np.array_equal(_values(c), src)
    r[0, 0, 1] = 9
    assert _values(z)[0, 0] == src[0, 0].real + 9j
    parts = ember.complex(ember.tensor([1.0, 3.0], dtype=ember.float16),
                          ember.tensor(2.0, dtype=ember.float16))
    assert parts.dtype is C32 and parts.tolist() == [1 + 2j, 3 + 2j]
    assert ember.tensor([1 + 0j, 1j], dtype=C32).isreal().tolist() == [True, False]


def test_sgn_as_pytorch_computes_it():
    """``z * (1 / hypot(re, im))`` in float32, rounded once (PyTorch's complex32 sgn)."""
    src = _sample(5, (2000,))
    got = _values(ember.tensor(np.append(src, 0), dtype=C32).sgn())
    re, im = src.real.astype(np.float32), src.imag.astype(np.float32)
    inv = np.float32(1) / np.hypot(re, im)
    np.testing.assert_array_equal(got[:-1], _rounded(re * inv + 1j * (im * inv)))
    assert got[-1] == 0


def test_comparisons_and_predicates():
    nan, inf = float("nan"), float("inf")
    z = ember.tensor([1 + 2j, complex(nan, 0), complex(0, inf), 0j], dtype=C32)
    w = ember.tensor([1 + 2j, complex(nan, 0), 1j, 0], dtype=C32)
    assert (z == w).tolist() == [True, False, False, True]
    assert (z != w).tolist() == [False, True, True, False]
    assert (z == (1 + 2j)).tolist() == [True, False, False, False]
    assert z.isnan().tolist() == [False, True, False, False]
    assert z.isinf().tolist() == [False, False, True, False]
    assert z.isfinite().tolist() == [True, False, False, True]
    assert z.nonzero().flatten().tolist() == [0, 1, 2] and z.count_nonzero().item() == 3
    assert ember.isclose(z, w, equal_nan=True).tolist() == [True, True, False, True]
    a = ember.tensor([0.1 + 0.2j], dtype=C32)
    b = ember.tensor([0.5j], dtype=C32)
    assert not ember.isclose(a, b + a - b).item()  # closeness judged in float16, as PyTorch
    assert ember.allclose(a, b + a - b, rtol=1e-2)


def test_norms_and_variance_in_float32_rounded_once():
    src = _sample(6, (3, 7))
    z = ember.tensor(src, dtype=C32)
    mags = np.abs(src.astype(np.complex64))  # float32
    for ord_ in (2, 1, 3, float("inf"), 0):
        got = ember.linalg.vector_norm(z, ord_)
        assert got.dtype is ember.float16
        if ord_ == float("inf"):
            ref = mags.max()
        elif ord_ == 2:
            ref = np.sqrt(np.sum(mags * mags, dtype=np.float32))
        elif ord_ == 0:
            ref = (mags != 0).sum()
        else:
            ref = np.sum(mags ** np.float32(ord_), dtype=np.float32) ** np.float32(1 / ord_)
        assert got.item() == float(np.float16(ref)), ord_
    assert z.norm().item() == ember.linalg.vector_norm(z).item()
    d = ember.dist(z, ember.zeros_like(z))
    assert d.dtype is ember.float16 and d.item() == z.norm().item()
    # PyTorch: var(real) + var(imag), each in float32 rounded to float16, added in float16
    for dim in (None, 1):
        v = z.var(dim)
        parts = [np.var(p.astype(np.float32), axis=dim, ddof=1).astype(np.float16)
                 for p in (src.real, src.imag)]
        assert v.dtype is ember.float16
        np.testing.assert_array_equal(v.float().numpy(), (parts[0] + parts[1]).astype(np.float32))
        np.testing.assert_array_equal(z.std(dim).float().numpy(), np.sqrt(
            (parts[0] + parts[1]).astype(np.float32)).astype(np.float16).astype(np.float32))
    var, mean = ember.var_mean(z, 0)
    assert var.dtype is ember.float16 and mean.dtype is C32
    np.testing.assert_array_equal(_values(mean), _rounded(src.astype(np.complex64).mean(0)))


# PyTorch's CPU kernels without a complex32 case: (call, PyTorch's kernel name)
REFUSED = [
    (lambda T, z: z / z, "div_cpu"), (lambda T, z: z / 2, "div_cpu"),
    (lambda T, z: z ** 2, "pow"), (lambda T, z: 2 ** z, "pow"), (lambda T, z: z.square(), "pow"),
    (lambda T, z: z.exp(), "exp_vml_cpu"),
    (lambda T, z: z.log(), "log_vml_cpu"), (lambda T, z: z.sqrt(), "sqrt_vml_cpu"),
    (lambda T, z: z.sin(), "sin_vml_cpu"), (lambda T, z: z.tanh(), "tanh_vml_cpu"),
    (lambda T, z: z.sigmoid(), "sigmoid_cpu"), (lambda T, z: z.reciprocal(), "reciprocal_cpu"),
    (lambda T, z: z.rsqrt(), "rsqrt_cpu"), (lambda T, z: z.exp2(), "exp2"),
    (lambda T, z: z.angle(), "angle_cpu"), (lambda T, z: z.sum(), "sum_cpu"),
    (lambda T, z: z.sum(0), "sum_cpu"), (lambda T, z: z.mean(), "sum_cpu"),
    (lambda T, z: z.prod(), "prod_out_cpu"), (lambda T, z: z.cumsum(0), "cumsum_out_cpu"),
    (lambda T, z: z.cumprod(0), "cumprod_out_cpu"), (lambda T, z: z @ z.t(), "addmm_impl_cpu_"),
    (lambda T, z: z.mm(z.t()), "addmm_impl_cpu_"), (lambda T, z: z.mv(z[0]), "addmv_impl_cpu"),
    (lambda T, z: T.bmm(z[None], z.t()[None]), "bmm"), (lambda T, z: T.dot(z[0], z[1]), "dot"),
    (lambda T, z: T.vdot(z[0], z[1]), "vdot"),
    (lambda T, z: T.nn.functional.linear(z, z), "addmm_impl_cpu_"),
    (lambda T, z: T.einsum("ij,kj->ik", z, z), "bmm"), (lambda T, z: z.trace(), "trace"),
    (lambda T, z: z < z, "lt_cpu"), (lambda T, z: z.logical_not(), "logical_not_cpu"),
    (lambda T, z: T.logical_and(z, z), "logical_and_cpu"),
    (lambda T, z: T.equal(z, z), "equal_notnan_cpu"),
    (lambda T, z: T.addcdiv(z, z, z), "addcdiv_cpu_out"),
    (lambda T, z: z.max(), "max_all"), (lambda T, z: z.nan_to_num(), "nan_to_num"),
    (lambda T, z: T.linalg.cross(z[:, :3], z[:, :3]), "cross"),
    # shape and indexing kernels without a complex32 case (index_select, roll, repeat, cat,
    # index_put_ have one: ``PARITY``)
    (lambda T, z: z.flip(1), "flip_cpu"), (lambda T, z: z.fliplr(), "flip_cpu"),
    (lambda T, z: z[0].flip(0), "flip_cpu"), (lambda T, z: z.t().flip(0), "flip_cpu"),
    (lambda T, z: z.rot90(), "flip_cpu"), (lambda T, z: z.gather(0, _IDX(T)),
                                           "scatter_gather_tensor_cpu"),
    (lambda T, z: T.take_along_dim(z, _IDX(T), 0), "scatter_gather_tensor_cpu"),
    (lambda T, z: z.scatter(0, _IDX(T), z), "scatter_gather_tensor_cpu"),
    (lambda T, z: z.scatter(0, _IDX(T), 1.0), "scatter_gather_scalar_cpu"),
    (lambda T, z: z.scatter_add(0, _IDX(T), z), "scatter_gather_tensor_cpu"),
    (lambda T, z: z.scatter_reduce(0, _IDX(T), z, "sum"), "scatter_gather_tensor_cpu"),
    (lambda T, z: z.take(T.tensor([0, 4])), "take_cpu"),
    (lambda T, z: z.clone().put_(T.tensor([0, 4]), z[0, :2]), "take_put_cpu"),
    (lambda T, z: z.put(T.tensor([0, 4]), z[0, :2]), "take_put_cpu"),
    (lambda T, z: z.masked_scatter(z.real > 0, z), "masked_scatter"),
    (lambda T, z: z.clone().masked_scatter_(z.real > 0, z), "masked_scatter"),
    (lambda T, z: T.unique(z), "unique"), (lambda T, z: T.unique(z, dim=0), "unique_dim"),
    (lambda T, z: T.unique_consecutive(z), "unique"),
    (lambda T, z: T.nn.functional.pad(z[None], (1, 1), mode="reflect"), "reflection_pad1d"),
    (lambda T, z: T.nn.functional.pad(z[None, None], (1, 1, 1, 1), mode="reflect"),
     "reflection_pad2d"),
    (lambda T, z: T.nn.functional.pad(z[None], (1, 1), mode="replicate"), "replication_pad1d"),
    (lambda T, z: T.equal(z, z.clone()), "equal_cpu"),
    (lambda T, z: z[0] @ z, "addmm_impl_cpu_"), (lambda T, z: z[0] @ z[1], "dot"),
    (lambda T, z: z[None] @ z[None], "bmm"), (lambda T, z: z[None] @ z, "addmm_impl_cpu_"),
]


def _IDX(T):
    """An index for dim 0 of the (3, 3) samples."""
    return T.tensor([[2, 0, 1], [0, 0, 2]])


@pytest.mark.parametrize("call, kernel", REFUSED, ids=[k for _, k in REFUSED])
def test_ops_pytorch_refuses_raise_its_error(call, kernel):
    z = ember.tensor(_sample(7, (3, 3)), dtype=C32)
    # a kernel named by device (``lt_cpu``) is ``lt_cuda`` on the strict device, as on a GPU
    name = re.escape(kernel.removesuffix("_cpu")) + ("(_cpu|_cuda)" if kernel.endswith("_cpu")
                                                     else "")
    with pytest.raises(NotImplementedError, match=f'"{name}" not implemented for '
                                                  "'ComplexHalf'"):
        call(ember, z)


def test_other_refusals_in_pytorchs_words():
    z = ember.tensor([1 + 2j, 3j], dtype=C32)
    with pytest.raises(NotImplementedError, match="ember.sign is not intended to support "
                                                  "complex numbers"):
        z.sign()
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        z.clamp(0, 1)
    with pytest.raises(RuntimeError, match="Sort does not support complex"):
        z.sort()
    with pytest.raises(RuntimeError, match="argmax\\(\\): does not support complex input"):
        z.argmax()
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors"):
        ember.maximum(z, z)
    with pytest.raises(RuntimeError, match="MKL FFT doesn't support tensors of type: Half"):
        ember.fft.fft(z)
    with pytest.raises(NotImplementedError, match="\"polar_(cpu|cuda)\" not implemented for "
                                                  "'Half'"):
        ember.polar(ember.ones(1, dtype=ember.float16), ember.ones(1, dtype=ember.float16))
    # products of complex32 with wider operands run in the wider dtype, as in PyTorch
    assert (z.cfloat() / 2).dtype is ember.complex64


# -- printing, NumPy ---------------------------------------------------------------------------

def test_repr_as_pytorch():
    z = ember.tensor([1 + 2j, 3 - 1j], dtype=C32, device="cpu")
    assert repr(z) == "tensor([1.+2.j, 3.-1.j], dtype=ember.complex32)"
    assert repr(ember.tensor([[1e4 + 1j, 1e-3j]], dtype=C32, device="cpu")) == \
        "tensor([[10000.+1.0000j,     0.+0.0010j]], dtype=ember.complex32)"
    assert repr(ember.tensor([float("nan") + 1j, float("inf")], dtype=C32, device="cpu")) == \
        "tensor([nan+1.j, inf+0.j], dtype=ember.complex32)"
    assert repr(ember.tensor([], dtype=C32, device="cpu")) == \
        "tensor([], dtype=ember.complex32)"
    assert repr(ember.zeros(1, dtype=C32, device="cpu").requires_grad_()) == \
        "tensor([0.+0.j], dtype=ember.complex32, requires_grad=True)"


def test_repr_matches_pytorch(torch):
    for data in ([[1 + 2j, -3.5 + 0.25j], [0.1 + 0.2j, 7j]], [1e-5 + 3j, 60000], 1 - 1j):
        ours = repr(ember.tensor(data, dtype=C32, device="cpu"))
        theirs = repr(torch.tensor(data, dtype=torch.chalf)).replace("torch.", "ember.")
        assert ours == theirs


def test_numpy_refuses_as_pytorch():
    z = ember.tensor([1 + 2j], dtype=C32, device="cpu")
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        z.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        np.asarray(z)
    assert z.cfloat().numpy().tolist() == [1 + 2j]
    assert ember.from_numpy(np.array([1 + 2j], dtype=C32_NP)).dtype is C32


# -- autograd ----------------------------------------------------------------------------------

def test_gradients_are_complex32():
    a = ember.tensor([1 + 2j, -3.5 + 0.25j, 0.1 + 0.2j], dtype=C32, requires_grad=True)
    b = ember.tensor([2 - 1j, 1 + 1j, 0.5j], dtype=C32)
    (a * b + a).backward(ember.ones(3, dtype=C32))
    assert a.grad.dtype is C32
    # PyTorch's convention: the gradient of a holomorphic f is grad_output * conj(f'(a))
    np.testing.assert_array_equal(_values(a.grad), _rounded(np.conj(_values(b)) + 1))
    h = ember.ones(3, dtype=ember.float16, requires_grad=True)
    (h * b).backward(ember.ones(3, dtype=C32))
    assert h.grad.dtype is ember.float16
    np.testing.assert_array_equal(h.grad.float().numpy(), _values(b).real)
    x = ember.ones(3, requires_grad=True)
    x.to(C32).backward(ember.tensor([1 + 5j, 2, 3], dtype=C32))
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [1, 2, 3]
    a.grad = None
    a.real.backward(ember.ones(3, dtype=ember.float16))
    assert _values(a.grad).tolist() == [1, 1, 1]


def test_gradients_match_pytorch(torch):
    src, other = _sample(8, (5,)), _sample(9, (5,))
    for f in (lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b * 2,
              lambda a, b: (-a).conj(), lambda a, b: a.clone()[1:], lambda a, b: a.cfloat(),
              lambda a, b: a.abs(), lambda a, b: a.imag):
        ea = ember.tensor(src, dtype=C32, requires_grad=True)
        ta = torch.tensor(src, dtype=torch.chalf, requires_grad=True)
        eo = f(ea, ember.tensor(other, dtype=C32))
        to = f(ta, torch.tensor(other, dtype=torch.chalf))
        g = _sample(10, tuple(to.shape))
        eo.backward(ember.tensor(g if to.is_complex() else g.real, dtype=eo.dtype))
        to.backward(torch.tensor(g if to.is_complex() else g.real, dtype=to.dtype))
        assert ea.grad.dtype is C32
        np.testing.assert_array_equal(_values(ea.grad), ta.grad.cdouble().numpy())


# -- parity with PyTorch -----------------------------------------------------------------------

PARITY = [
    lambda T, x, y: x + y, lambda T, x, y: x - y, lambda T, x, y: x * y,
    lambda T, x, y: x * 1.1, lambda T, x, y: x + (0.3 - 2.2j), lambda T, x, y: 3 - x,
    lambda T, x, y: -x, lambda T, x, y: x.conj(), lambda T, x, y: x.abs(),
    lambda T, x, y: x.sgn(), lambda T, x, y: x.real, lambda T, x, y: x.imag,
    lambda T, x, y: T.view_as_real(x), lambda T, x, y: x == y, lambda T, x, y: x != x,
    lambda T, x, y: T.isclose(x, x + y - y),
    lambda T, x, y: T.addcmul(x, x, y, value=2), lambda T, x, y: T.add(x, y, alpha=3),
    lambda T, x, y: x.to(T.float16), lambda T, x, y: x.to(T.bfloat16),
    lambda T, x, y: x.to(T.int32), lambda T, x, y: x.to(T.bool), lambda T, x, y: x.cfloat(),
    lambda T, x, y: T.linalg.vector_norm(x), lambda T, x, y: T.linalg.vector_norm(x, 1),
    lambda T, x, y: x.var(), lambda T, x, y: x.std(1), lambda T, x, y: T.dist(x, y),
    lambda T, x, y: x.float_power(2), lambda T, x, y: T.where(x.abs() > 1, x, y),
    lambda T, x, y: x.masked_fill(x.abs() > 1, 2j), lambda T, x, y: T.outer(x[0], y[0]),
    lambda T, x, y: T.kron(x[0], y[0]), lambda T, x, y: x.diff(),
    lambda T, x, y: x + T.ones(4, dtype=T.float16), lambda T, x, y: x + T.ones(4),
    lambda T, x, y: T.complex(x.real, y.imag),
    lambda T, x, y: x.index_add(0, T.tensor([1, 1]), y[:2]),
    lambda T, x, y: T.nn.functional.pad(x, (1, 2), value=1.5),
    # shape and indexing ops PyTorch computes in complex32 (their neighbours refuse: REFUSED)
    lambda T, x, y: x.index_select(1, T.tensor([3, 0, 0])), lambda T, x, y: x.roll(1, 1),
    lambda T, x, y: x.roll((1, -1), (0, 1)), lambda T, x, y: x.repeat(2, 1),
    lambda T, x, y: x.repeat_interleave(2, 0), lambda T, x, y: T.cat([x, y]),
    lambda T, x, y: T.stack([x, y], 1), lambda T, x, y: x[T.tensor([2, 0])],
    lambda T, x, y: x.index_put((T.tensor([1, 0]),), y[:2]),
    lambda T, x, y: x.clone().index_put_((T.tensor([1, 1]),), y[:2], accumulate=True),
    lambda T, x, y: x.index_fill(1, T.tensor([0]), 1j), lambda T, x, y: x.index_copy(
        0, T.tensor([2, 0]), y[:2]),
    lambda T, x, y: x.masked_select(x.real > 0), lambda T, x, y: x.tril(),
    lambda T, x, y: x.triu(1), lambda T, x, y: T.diag(x[0]), lambda T, x, y: x.t().contiguous(),
    lambda T, x, y: T.block_diag(x, y), lambda T, x, y: T.nn.functional.pad(x[None], (1, 1),
                                                                            mode="circular"),
    # a vertical flip (rows copied whole) runs whatever the dtype; other flips refuse
    lambda T, x, y: x.flip(0), lambda T, x, y: x.flipud(), lambda T, x, y: x.rot90(3),
    lambda T, x, y: x.t().flip(1),
]


@pytest.mark.parametrize("index", range(len(PARITY)))
def test_values_match_pytorch(torch, index):
    f = PARITY[index]
    src, other = _sample(11, (3, 4), 2.0), _sample(12, (3, 4), 2.0)
    ours = f(ember, ember.tensor(src, dtype=C32), ember.tensor(other, dtype=C32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        theirs = f(torch, torch.tensor(src, dtype=torch.chalf),
                   torch.tensor(other, dtype=torch.chalf))
    assert str(ours.dtype)[6:] == str(theirs.dtype)[6:]
    assert tuple(ours.shape) == tuple(theirs.shape)
    got = np.asarray(ours.cdouble().tolist() if ours.is_complex() else ours.double().tolist())
    want = np.asarray(theirs.cdouble().tolist() if theirs.is_complex()
                      else theirs.double().tolist())
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call, kernel", REFUSED, ids=[k for _, k in REFUSED])
def test_refusals_match_pytorch(torch, call, kernel):
    z = _sample(7, (3, 3))
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for '
                                                  "'ComplexHalf'"):
        call(torch, torch.tensor(z, dtype=torch.chalf))


# -- checkpoints -------------------------------------------------------------------------------

def test_save_load_round_trip(tmp_path):
    src = _sample(13)
    z = ember.tensor(src, dtype=C32)
    ember.save({"z": z, "col": z[:, 1], "f": ember.ones(2)}, tmp_path / "c.pt")
    back = ember.load(tmp_path / "c.pt")
    assert back["z"].dtype is C32 and np.array_equal(_values(back["z"]), src)
    assert np.array_equal(_values(back["col"]), src[:, 1])
    back["col"][0] = 9j  # a view of the loaded storage, as the saved one was
    assert _values(back["z"])[0, 1] == 9j
    buf = io.BytesIO()
    ember.save(z.requires_grad_(), buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    legacy = ember.load(buf)
    assert legacy.requires_grad and np.array_equal(_values(legacy), src)
    assert np.array_equal(_values(pickle.loads(pickle.dumps(z.detach()))), src)


def test_checkpoint_is_pytorchs_format(tmp_path, torch):
    src = _sample(14)
    z = ember.tensor(src, dtype=C32, device="cpu")
    ember.save({"z": z, "col": z[:, 1]}, tmp_path / "e.pt")
    theirs = torch.load(tmp_path / "e.pt", weights_only=True)
    assert theirs["z"].dtype == torch.complex32
    np.testing.assert_array_equal(theirs["z"].cdouble().numpy(), src)
    assert theirs["col"].stride() == (5,) and theirs["col"].storage_offset() == 1
    t = torch.tensor(src, dtype=torch.chalf)
    torch.save({"t": t, "v": t[1:, ::2]}, tmp_path / "t.pt")
    ours = ember.load(tmp_path / "t.pt")
    assert ours["t"].dtype is C32 and np.array_equal(_values(ours["t"]), src)
    assert np.array_equal(_values(ours["v"]), src[1:, ::2])
    buf = io.BytesIO()
    torch.save(t, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert np.array_equal(_values(ember.load(buf)), src)


def test_pickle_names_what_pytorch_writes(tmp_path):
    import zipfile

    ember.save(ember.zeros(2, dtype=C32, device="cpu"), tmp_path / "z.pt")
    with zipfile.ZipFile(tmp_path / "z.pt") as zf:
        pkl = zf.read(next(n for n in zf.namelist() if n.endswith("data.pkl")))
        data = zf.read(next(n for n in zf.namelist() if n.endswith("data/0")))
    assert b"_rebuild_tensor_v3" in pkl and b"UntypedStorage" in pkl and b"complex32" in pkl
    assert len(data) == 8  # two elements of two float16 each


def test_safetensors_has_no_complex32():
    st = pytest.importorskip("ember.safetensors")
    with pytest.raises(Exception, match="complex32"):
        st.save({"z": ember.zeros(2, dtype=C32)})


# -- devices -----------------------------------------------------------------------------------

def test_a_backend_without_complex32_refuses_it_clearly():
    from ember.backends import register_backend, unregister_backend
    from ember.testing import NumpyTestBackend

    class NoC32(NumpyTestBackend):
        unsupported_dtypes = frozenset({C32_NP})

    register_backend(NoC32("noc32", 1))
    try:
        dev = ember.device("noc32:0")
        message = r"noc32 tensors cannot hold complex32: .* use complex64 on noc32"
        z = ember.ones(2, dtype=C32, device="cpu")
        with pytest.raises(TypeError, match=message):
            z.to(dev)
        with pytest.raises(TypeError, match=message):
            ember.ones(2, device="cpu").to(dev, dtype=C32)
        assert z.to(dev, dtype=ember.complex64).dtype is ember.complex64
    finally:
        unregister_backend("noc32")


def test_cuda_backend_declares_complex32_unsupported():
    from pathlib import Path

    from ember.backends import cuda

    assert "ml_dtypes.complex32" in Path(cuda.__file__).read_text()


def test_the_strict_device_computes_as_the_cpu():
    from ember.testing import register_strict_device

    register_strict_device()
    src, other = _sample(15), _sample(16)

    def run(dev):
        a = ember.tensor(src, dtype=C32, device=dev).requires_grad_()
        b = ember.tensor(other, dtype=C32, device=dev)
        out = (a * b - a.conj() + 1.5) * 2
        out.backward(ember.ones_like(out))
        grad, a = a.grad, a.detach()
        return [out, grad, a.real, ember.view_as_real(a), a.abs(), a.sgn(), a.diagonal(),
                a.var(1), ember.linalg.vector_norm(a), a.bool(), a.to(ember.float32)]

    for got, expected in zip(run("strict:0"), run("cpu")):
        assert got.device.type == "strict" and got.dtype is expected.dtype
        np.testing.assert_array_equal(got.cdouble().tolist(), expected.cdouble().tolist())


def test_assert_close_compares_complex_values():
    z = ember.tensor([1 + 2j, 3 - 1j], dtype=C32)
    ember.testing.assert_close(z, z.clone())
    with pytest.raises(AssertionError, match="Mismatched elements: 2 / 2"):
        ember.testing.assert_close(z + 0.01j, z)  # only the imaginary parts differ
    ember.testing.assert_close(z + 0.001j, z, rtol=0, atol=2e-3)
