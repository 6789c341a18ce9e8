"""Elementwise ops: special values, dtype rules, gradient conventions, in-place variants,
copying ops, errors and devices. The values of the registered elementwise ops against NumPy
and PyTorch, their float64 gradchecks and gradgradchecks, in-place and out= variants and
device runs on the op database's samples: tests/ops/test_ops.py."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from testutils import rand64

import ember
from ember.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# away from 0 and from integers and half-integers: for ops with kinks there
SAFE = np.array([[0.3, -0.7, 1.4], [-2.2, 2.6, -1.15]])


def safe64():
    return ember.tensor(SAFE, dtype=ember.float64, requires_grad=True)


# -- values against NumPy and math ------------------------------------------------------------

# The values of the other unary ops (and of these ops' base names) are checked on the
# generic tests' samples (tests/ops/test_ops.py, over ember.ops.opdb); what stays here: ops
# whose op-database entry has no NumPy reference, on wider domains (the tails of erf/erfc,
# lgamma up to 40), and the NumPy-style aliases.
UNARY_REFERENCES = [
    ("absolute", np.abs, (-3, 3)), ("negative", np.negative, (-3, 3)),
    ("arcsin", np.arcsin, (-1, 1)), ("arccos", np.arccos, (-1, 1)),
    ("arctan", np.arctan, (-5, 5)), ("arcsinh", np.arcsinh, (-3, 3)),
    ("arccosh", np.arccosh, (1, 5)), ("arctanh", np.arctanh, (-0.99, 0.99)),
    ("erf", np.vectorize(math.erf), (-6, 6)), ("erfc", np.vectorize(math.erfc), (-6, 6)),
    ("lgamma", np.vectorize(math.lgamma), (0.01, 40)), ("fix", np.trunc, (-5, 5)),
]


@pytest.mark.parametrize("name,ref,domain", UNARY_REFERENCES,
                         ids=[r[0] for r in UNARY_REFERENCES])
def test_unary_values_against_numpy(name, ref, domain):
    data = np.random.default_rng(1).uniform(*domain, (4, 5))
    for dtype, rtol in ((ember.float64, 1e-13), (ember.float32, 2e-6)):
        x = ember.tensor(data, dtype=dtype)
        out = getattr(ember, name)(x)
        assert out.dtype is dtype and out.shape == (4, 5)
        expected = ref(x.numpy().astype(np.float64))
        np.testing.assert_allclose(out.numpy(), expected, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(getattr(x, name)().numpy(), out.numpy())


def test_special_function_edge_values():
    x = ember.tensor([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0], dtype=ember.float64)
    np.testing.assert_array_equal(ember.erf(x).numpy(), [0, -0.0, 1, -1, np.nan, 1, -1])
    np.testing.assert_array_equal(ember.erfc(x).numpy(), [1, 1, 0, 2, np.nan, 0, 2])
    y = ember.tensor([-1.0, 1.0, 1.5, 0.0, np.nan], dtype=ember.float64)
    np.testing.assert_array_equal(ember.erfinv(y).numpy(), [-np.inf, np.inf, np.nan, 0, np.nan])
    g = ember.tensor([0.0, -1.0, -2.5, 1.0, 2.0, np.inf], dtype=ember.float64)
    np.testing.assert_allclose(ember.lgamma(g).numpy(),
                               [np.inf, np.inf, math.lgamma(-2.5), 0.0, 0.0, np.inf], atol=1e-15)
    d = ember.digamma(ember.tensor([0.0, -0.0, -1.0, 1.0], dtype=ember.float64)).numpy()
    np.testing.assert_allclose(d, [-np.inf, np.inf, np.nan, -0.5772156649015329], rtol=1e-15)


def test_erfinv_inverts_erf_to_float64_precision():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 2001), 1 - 10.0 ** -np.arange(1, 16)])
    x = ember.erfinv(ember.tensor(y)).numpy()
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=3e-16, atol=3e-16)
    tails = 1 - 10.0 ** -np.arange(1, 16)
    np.testing.assert_allclose([math.erfc(v) for v in ember.erfinv(ember.tensor(tails)).numpy()],
                               1 - tails, rtol=1e-14)


def test_digamma_is_derivative_of_lgamma():
    x = np.linspace(-4.7, 30.3, 200)
    h = 1e-6
    numeric = (np.vectorize(math.lgamma)(x + h) - np.vectorize(math.lgamma)(x - h)) / (2 * h)
    np.testing.assert_allclose(ember.digamma(ember.tensor(x)).numpy(), numeric, rtol=1e-7,
                               atol=1e-7)


def test_digamma_double_backward_is_tetragamma():
    """digamma's backward is trigamma (polygamma(1, x)); its own backward is polygamma(2, x)
    (the double backward was silently zero: trigamma had no backward)."""
    from ember.ops.pointwise import _tetragamma, _trigamma

    x = np.concatenate([np.linspace(-4.73, 30.3, 301), [0.05, 0.25, 1.0, 7.5, 1e4]])
    x = x[np.abs(x - np.round(x)) > 0.03]  # finite differences are too coarse by the poles
    h = 1e-5
    numeric = (_trigamma(ember.tensor(x + h)).numpy() -
               _trigamma(ember.tensor(x - h)).numpy()) / (2 * h)
    np.testing.assert_allclose(_tetragamma(ember.tensor(x)).numpy(), numeric, rtol=2e-6,
                               atol=1e-9)
    # exact values: psi2(1) = -2 zeta(3), psi2(1/2) = -14 zeta(3)
    zeta3 = 1.2020569031595942
    np.testing.assert_allclose(_tetragamma(ember.tensor([1.0, 0.5], dtype=ember.float64)).numpy(),
                               [-2 * zeta3, -14 * zeta3], rtol=1e-14)
    assert np.isneginf(_tetragamma(ember.tensor([0.0, -1.0, -3.0])).numpy()).all()
    t = ember.tensor([0.3, 1.7, -2.4, 6.0], dtype=ember.float64, requires_grad=True)
    g, = ember.autograd.grad(t.digamma().sum(), t, create_graph=True)
    gg, = ember.autograd.grad(g.sum(), t)
    np.testing.assert_allclose(gg.numpy(), _tetragamma(t.detach()).numpy(), rtol=1e-15)
    assert gradgradcheck(ember.digamma, (t,))
    assert gradgradcheck(ember.lgamma, (t,))  # the third derivative of lgamma is tetragamma


def test_sign_family_and_rounding_details():
    x = ember.tensor([-2.5, -0.0, 0.0, 0.5, 1.5, 2.5, np.nan])
    assert ember.sign(x).tolist()[:6] == [-1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert ember.sign(x).tolist()[6] == 0.0  # PyTorch: NaN has sign 0
    assert ember.sgn(x).tolist()[:6] == ember.sign(x).tolist()[:6]
    assert ember.signbit(x).tolist() == [True, True, False, False, False, False, False]
    assert ember.round(x).tolist()[:6] == [-2.0, -0.0, 0.0, 0.0, 2.0, 2.0]  # half to even
    r = ember.round(ember.tensor([1.25, 1234.5678, -0.125], dtype=ember.float64), decimals=2)
    np.testing.assert_allclose(r.numpy(), [1.25, 1234.57, -0.12])
    r = ember.round(ember.tensor([1234.5, 15.0]), decimals=-1)
    assert r.tolist() == [1230.0, 20.0]
    i = ember.tensor([-3, 4])
    for name in ("floor", "ceil", "round", "trunc", "fix"):
        out = getattr(ember, name)(i)
        assert out.dtype is ember.int64 and out.tolist() == [-3, 4] and out is not i
    assert ember.positive(i) is i
    assert ember.abs(ember.tensor([-128], dtype=ember.int8)).tolist() == [-128]


def test_unary_dtype_rules():
    i = ember.tensor([1, 2, 3])
    b = ember.tensor([True, False])
    for name in ("exp", "sqrt", "sin", "erf", "sigmoid", "reciprocal", "lgamma", "logit"):
        assert getattr(ember, name)(i).dtype is ember.float32
        assert getattr(ember, name)(b).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.exp(i).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    for name in ("abs", "sign", "neg", "square", "floor", "relu"):
        assert getattr(ember, name)(i).dtype is ember.int64
    assert ember.square(b).dtype is ember.int64 and ember.square(b).tolist() == [1, 0]
    assert ember.sign(b).dtype is ember.bool
    half = ember.tensor([0.5, 1.0], dtype=ember.float16)
    for name in ("exp", "sigmoid", "erf", "erfinv", "lgamma", "round"):
        assert getattr(ember, name)(half).dtype is ember.float16
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit",
                 "logical_not"):
        assert getattr(ember, name)(i).dtype is ember.bool


def test_sigmoid_of_0_dim_tensors():
    # NumPy's ufuncs return a 0-dim array's result as a scalar, which takes no out=
    for x in (ember.tensor(0.0), ember.tensor(0), ember.tensor(True)):
        out = ember.sigmoid(x)
        assert out.shape == () and out.dtype is ember.float32
        assert out.item() == pytest.approx(1 / (1 + math.exp(-float(x.item()))))
    assert ember.tensor(2.0, dtype=ember.float64).sigmoid().item() == pytest.approx(
        1 / (1 + math.exp(-2.0)), rel=1e-15)


def test_finiteness_tests():
    x = ember.tensor([1.0, np.nan, np.inf, -np.inf, -0.0])
    assert ember.isnan(x).tolist() == [False, True, False, False, False]
    assert ember.isinf(x).tolist() == [False, False, True, True, False]
    assert ember.isfinite(x).tolist() == [True, False, False, False, True]
    assert ember.isposinf(x).tolist() == [False, False, True, False, False]
    assert ember.isneginf(x).tolist() == [False, False, False, True, False]
    assert ember.isreal(x).tolist() == [True] * 5
    assert ember.isfinite(ember.tensor([1, 2])).tolist() == [True, True]
    assert ember.isnan(ember.tensor([True])).tolist() == [False]


def test_nan_to_num_defaults_per_dtype():
    for dtype in (ember.float16, ember.float32, ember.float64):
        x = ember.tensor([np.nan, np.inf, -np.inf, 1.5], dtype=dtype)
        big = np.finfo(dtype.np).max
        np.testing.assert_array_equal(ember.nan_to_num(x).numpy(), [0, big, -big, 1.5])
        out = x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0)
        assert out.dtype is dtype and out.tolist() == [1.0, 2.0, -3.0, 1.5]
    i = ember.tensor([1, 2])
    assert ember.nan_to_num(i).tolist() == [1, 2] and ember.nan_to_num(i) is not i


# -- binary ops -------------------------------------------------------------------------------

# atan2, hypot, copysign, maximum, minimum, fmax, fmin and xlogy: the generic tests' samples
# (with broadcasting); the alias stays here
BINARY_REFERENCES = [("arctan2", np.arctan2)]


@pytest.mark.parametrize("name,ref", BINARY_REFERENCES, ids=[r[0] for r in BINARY_REFERENCES])
def test_binary_values_against_numpy(name, ref):
    rng = np.random.default_rng(2)
    a = rng.uniform(-3, 3, (3, 1))
    b = rng.uniform(-3, 3, (4,))
    a[0, 0] = 0.0
    out = getattr(ember, name)(ember.tensor(a), ember.tensor(b))
    assert out.shape == (3, 4) and out.dtype is ember.float64
    np.testing.assert_allclose(out.numpy(), ref(a, b), rtol=1e-14)
    np.testing.assert_allclose(getattr(ember.tensor(a), name)(ember.tensor(b)).numpy(),
                               out.numpy())


def test_nan_propagation_of_maximum_and_fmax():
    a = ember.tensor([np.nan, 1.0, 2.0])
    b = ember.tensor([0.0, np.nan, 3.0])
    np.testing.assert_array_equal(ember.maximum(a, b).numpy(), [np.nan, np.nan, 3.0])
    np.testing.assert_array_equal(ember.fmax(a, b).numpy(), [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(ember.fmin(a, b).numpy(), [0.0, 1.0, 2.0])


def test_xlogy_conventions_and_scalars():
    x = ember.tensor([0.0, 0.0, 1.0, 2.0])
    y = ember.tensor([0.0, np.nan, 0.0, np.e])
    np.testing.assert_allclose(ember.xlogy(x, y).numpy(), [0.0, np.nan, -np.inf, 2.0],
                               rtol=1e-6)
    assert ember.xlogy(2, ember.tensor([1.0, np.e])).tolist() == pytest.approx([0.0, 2.0])
    assert ember.xlogy(ember.tensor([1, 2]), 1).dtype is ember.float32


def test_copysign_and_integer_inputs():
    assert ember.copysign(ember.tensor([1, -2]), -1).tolist() == [-1.0, -2.0]
    assert ember.copysign(ember.tensor([0.0, -0.0]), -1.0).numpy().tolist() == [-0.0, -0.0]
    assert np.signbit(ember.copysign(ember.tensor([0.0]), -1.0).numpy()).all()
    assert ember.atan2(ember.tensor([1]), ember.tensor([1])).dtype is ember.float32


def test_lerp_forms():
    a = ember.tensor([0.0, 1.0, 2.0])
    b = ember.tensor([10.0, 11.0, 12.0])
    assert ember.lerp(a, b, 0.25).tolist() == [2.5, 3.5, 4.5]
    assert ember.lerp(a, b, 0.75).tolist() == [7.5, 8.5, 9.5]
    w = ember.tensor([0.0, 0.5, 1.0])
    assert ember.lerp(a, b, w).tolist() == [0.0, 6.0, 12.0]
    assert ember.lerp(a, b, ember.tensor(0.5, dtype=ember.float64)).dtype is ember.float32
    assert a.lerp(b, 2).tolist() == [20.0, 21.0, 22.0]


def test_closeness():
    a = ember.tensor([1.0, 2.0, np.nan, np.inf])
    b = ember.tensor([1.0 + 1e-6, 2.1, np.nan, np.inf])
    assert ember.isclose(a, b).tolist() == [True, False, False, True]
    assert ember.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert ember.isclose(a, b, rtol=0.1).tolist() == [True, True, False, True]
    assert a.isclose(b, atol=0, rtol=0).tolist() == [False, False, False, True]
    assert ember.allclose(a, a, equal_nan=True) is True
    assert ember.allclose(a, b) is False
    assert ember.allclose(ember.tensor([1, 2]), ember.tensor([1, 2])) is True
    assert ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0])) is True
    assert ember.equal(ember.tensor([1.0, 2.0]), ember.tensor([1.0])) is False
    assert ember.equal(ember.tensor([np.nan]), ember.tensor([np.nan])) is False
    assert ember.tensor([[1, 2]]).equal(ember.tensor([[1, 2]])) is True


def test_logical_and_bitwise():
    i = ember.tensor([0, 1, 2, 3])
    j = ember.tensor([1, 1, 0, 2])
    b = ember.tensor([True, False, True, False])
    assert ember.logical_and(i, j).tolist() == [False, True, False, True]
    assert ember.logical_or(i, ember.tensor([0.0, 0.0, 0.0, 0.5])).tolist() == \
        [False, True, True, True]
    assert ember.logical_xor(i, j).tolist() == [True, False, True, False]
    assert ember.logical_not(i).tolist() == [True, False, False, False]
    assert (i & j).tolist() == [0, 1, 0, 2] and (i | 4).tolist() == [4, 5, 6, 7]
    assert (i ^ j).tolist() == [1, 0, 2, 1] and (3 & i).tolist() == [0, 1, 2, 3]
    assert (6 | i).tolist() == [6, 7, 6, 7] and (1 ^ i).tolist() == [1, 0, 3, 2]
    assert (b & True).dtype is ember.bool and (b | b).tolist() == [True, False, True, False]
    assert (~b).tolist() == [False, True, False, True] and (~i).tolist() == [-1, -2, -3, -4]
    assert (i << 2).tolist() == [0, 4, 8, 12] and (1 << i).tolist() == [1, 2, 4, 8]
    assert (ember.tensor([-8, 8]) >> 1).tolist() == [-4, 4]
    assert (16 >> ember.tensor([1, 2])).tolist() == [8, 4]
    assert (ember.tensor([1, -2, 3]) << 70).tolist() == [0, 0, 0]
    assert (ember.tensor([1, -2, 3]) >> 70).tolist() == [0, -1, 0]
    assert ember.bitwise_not(ember.tensor([5], dtype=ember.uint8)).tolist() == [250]
    k = ember.tensor([1, 2, 3])
    k &= 2
    k |= 1
    k ^= 4
    k <<= 1
    k >>= 1
    assert k.tolist() == [5, 7, 7]
    m = ember.tensor([0.0, 2.0])
    m.logical_not_()
    assert m.dtype is ember.float32 and m.tolist() == [1.0, 0.0]


def test_comparisons_keep_their_behaviour():
    a = ember.tensor([1, 2, 3])
    assert (a > 1).tolist() == [False, True, True] and (a <= 2.5).tolist() == [True, True, False]
    assert ember.greater(a, 2).tolist() == [False, False, True]
    assert (a == ember.tensor([1.0, 0.0, 3.0])).tolist() == [True, False, True]
    assert ember.not_equal(a, 2).tolist() == [True, False, True]
    c = ember.tensor([1.0, 5.0])
    c.gt_(2)
    assert c.tolist() == [0.0, 1.0]


# -- where and clamp ----------------------------------------------------------------------------

def test_where_promotion_and_scalars():
    cond = ember.tensor([True, False, True])
    x = ember.tensor([1, 2, 3])
    assert ember.where(cond, x, 0).dtype is ember.int64
    assert ember.where(cond, x, 0.5).tolist() == [1.0, 0.5, 3.0]
    assert ember.where(cond, x, 0.5).dtype is ember.float32
    assert ember.where(cond, 1.0, 0).dtype is ember.float32
    assert ember.where(cond, True, False).dtype is ember.bool
    h = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float16)
    assert ember.where(cond, h, ember.tensor(2.0)).dtype is ember.float16
    assert ember.where(cond, h, ember.tensor([2.0])).dtype is ember.float32
    out = ember.where(ember.tensor([[True], [False]]), x, ember.tensor([9.0]))
    assert out.shape == (2, 3) and out.tolist() == [[1.0, 2.0, 3.0], [9.0, 9.0, 9.0]]
    assert x.where(cond, -1).tolist() == [1, -1, 3]
    with pytest.warns(UserWarning, match="uint8 condition"):
        assert ember.where(ember.tensor([1, 0], dtype=ember.uint8), 1, 0).tolist() == [1, 0]


def test_clamp_forms():
    x = ember.tensor([-2.0, -0.5, 0.5, 2.0])
    assert ember.clamp(x, -1, 1).tolist() == [-1.0, -0.5, 0.5, 1.0]
    assert ember.clamp(x, min=0).tolist() == [0.0, 0.0, 0.5, 2.0]
    assert ember.clip(x, max=0).tolist() == [-2.0, -0.5, 0.0, 0.0]
    assert ember.clamp(x, 1, 0).tolist() == [0.0] * 4  # min > max gives max
    lo = ember.tensor([0.0, 0.0, 1.0, 1.0])
    assert ember.clamp(x, lo, lo + 0.5).tolist() == [0.0, 0.0, 1.0, 1.5]
    assert ember.clamp(x, max=ember.tensor(0.0, dtype=ember.float64)).dtype is ember.float32
    assert ember.clamp(x, max=ember.tensor([0.0], dtype=ember.float64)).dtype is ember.float64
    i = ember.tensor([-3, 0, 3])
    assert ember.clamp(i, min=0).dtype is ember.int64
    assert ember.clamp(i, min=0.5).tolist() == [0.5, 0.5, 3.0]
    assert ember.clamp_min(i, 1).tolist() == [1, 1, 3]
    assert ember.clamp_max(i, ember.tensor([0, 0, 0])).tolist() == [-3, 0, 0]
    assert np.isnan(ember.clamp(ember.tensor([np.nan]), 0, 1).item())
    x.clamp_(min=0)
    assert x.tolist() == [0.0, 0.0, 0.5, 2.0]


def test_clamp_gradient_mask_convention():
    x = ember.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
    ember.clamp(x, 0, 1).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]  # flows where min <= x <= max
    x.grad = None
    ember.clamp(x, 1, 0).sum().backward()
    assert x.grad.tolist() == [0.0] * 5
    lo = ember.tensor([0.0, 0.0, 1.0, 1.0, 3.0], requires_grad=True)
    hi = ember.tensor([1.0, 0.0, 0.0, 1.0, 1.0], requires_grad=True)
    x.grad = None
    ember.clamp(x, lo, hi).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_maximum_splits_gradient_on_ties():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = ember.tensor([2.0, 2.0, 1.0], requires_grad=True)
    ember.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 0.5, 1.0] and b.grad.tolist() == [1.0, 0.5, 0.0]
    a.grad = b.grad = None
    ember.minimum(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 0.5, 0.0] and b.grad.tolist() == [0.0, 0.5, 1.0]
    a.grad = b.grad = None
    ember.fmax(a, b).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0, 1.0] and b.grad.tolist() == [1.0, 0.0, 0.0]


# -- gradients ------------------------------------------------------------------------------------

# gradcheck and gradgradcheck of the unary ops, of atan2, hypot, copysign, xlogy, maximum,
# minimum, fmax, fmin (with broadcasting and number operands), where, clamp, lerp and logit:
# the generic tests (tests/ops/test_ops.py); here what their samples cannot express

def test_xlogy_gradcheck_with_a_number_input():
    pos = rand64(4, low=0.5, high=2.0, rng=3)
    assert gradcheck(lambda y: ember.xlogy(2.0, y), (pos,))


def test_maximum_gradgradcheck():
    # piecewise linear: the generic tests skip its gradgradcheck; its double backward (the
    # gradient mask applied to the incoming gradient) must still be right
    assert gradgradcheck(ember.maximum, (rand64(3, 1, rng=1), rand64(4, rng=2)))


def test_where_gradients_keep_each_operands_dtype():
    a32 = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b64 = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    ember.where(ember.tensor([True, False, True]), a32, b64).sum().backward()
    assert a32.grad.dtype is ember.float32 and a32.grad.tolist() == [1.0, 0.0, 1.0]
    assert b64.grad.dtype is ember.float64 and b64.grad.tolist() == [0.0, 1.0, 0.0]


def test_clamp_gradcheck_with_only_a_tensor_max():
    lo = ember.tensor([-1.0, 0.0, 0.5], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v, m: ember.clamp(v, max=m), (safe64(), lo))


def test_integer_and_bool_inputs_do_not_record():
    i = ember.tensor([1, 2])
    assert ember.exp(i).grad_fn is None and not ember.exp(i).requires_grad
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert ember.isnan(x).grad_fn is None and ember.signbit(x).grad_fn is None
    assert (x > 1).grad_fn is None and ember.isclose(x, x).grad_fn is None
    with ember.no_grad():
        assert ember.sin(x).grad_fn is None and ember.clamp(x, 0, 1).grad_fn is None


# -- in-place variants ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [("exp_", ()), ("sqrt_", ()), ("abs_", ()), ("sin_", ()),
                                       ("sigmoid_", ()), ("clamp_", (0.0, 1.0)),
                                       ("round_", ()), ("erf_", ()), ("atan2_", ("other",)),
                                       ("lerp_", ("other", 0.5)), ("nan_to_num_", ()),
                                       ("logit_", (0.1,)), ("xlogy_", ("other",))])
def test_inplace_matches_out_of_place(name, args):
    data = np.abs(np.random.default_rng(5).uniform(0.1, 0.9, (2, 3)))
    other = ember.tensor(data[::-1].copy())
    args = tuple(other if a == "other" else a for a in args)
    x = ember.tensor(data)
    expected = getattr(ember, name[:-1])(x, *args)
    version = x._version
    assert getattr(x, name)(*args) is x
    assert x._version == version + 1
    np.testing.assert_allclose(x.numpy(), expected.numpy())


def test_inplace_with_autograd_rebases_history():
    leaf = ember.tensor([0.5, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = leaf * 1
    y.exp_()
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.exp([0.5, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.sin_()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ember.tensor([1, 2]).sqrt_()


# -- clone, copy_, fill_, zero_ -----------------------------------------------------------------

def test_clone():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone(memory_format=None)
    assert c.grad_fn.name() == "CloneBackward0" and c.data_ptr() != x.data_ptr()
    c.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert gradcheck(ember.clone, (rand64(2, 3),)) and gradgradcheck(ember.clone, (rand64(2, 3),))


def test_copy_broadcasts_casts_and_bumps_version():
    dst = ember.zeros(2, 3, dtype=ember.int32)
    version = dst._version
    assert dst.copy_(ember.tensor([1.7, -2.7, 3.0])) is dst
    assert dst.tolist() == [[1, -2, 3], [1, -2, 3]] and dst.dtype is ember.int32
    assert dst._version == version + 1
    dst.copy_(5)
    assert dst.tolist() == [[5] * 3] * 2
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of "
                       "tensor b \\(2\\) at non-singleton dimension 1"):
        dst.copy_(ember.zeros(2))
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the "
                       "broadcast shape \\[2, 3\\]"):
        ember.zeros(3).copy_(ember.zeros(2, 3))


def test_copy_gradient_goes_to_source():
    src = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    dst = ember.zeros(2, 3)  # float32: the gradient comes back as float64, summed over rows
    dst.copy_(src)
    assert dst.grad_fn.name() == "CopyBackwards" and dst.requires_grad
    (dst * ember.tensor([[1.0], [2.0]])).sum().backward()
    assert src.grad.dtype is ember.float64 and src.grad.tolist() == [3.0, 3.0, 3.0]
    old = ember.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = old * 2
    y.copy_(ember.tensor([5.0, 5.0, 5.0]))
    y.sum().backward()
    assert old.grad.tolist() == [0.0, 0.0, 0.0]  # the overwritten value gets no gradient
    assert gradcheck(lambda s: ember.zeros(2, 3, dtype=ember.float64).copy_(s * s),
                     (rand64(3),))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        src.copy_(src)


def test_saved_tensor_modified_in_place_is_detected():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.sin()
    y.fill_(0.5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_fill_and_zero():
    x = ember.zeros(2, 2, dtype=ember.int64)
    version = x._version
    assert x.fill_(2.7) is x and x.tolist() == [[2, 2], [2, 2]]
    assert x.fill_(ember.tensor(7)).tolist() == [[7, 7], [7, 7]]
    assert x.zero_() is x and x.tolist() == [[0, 0], [0, 0]]
    assert x._version == version + 3
    u = ember.zeros(2, dtype=ember.uint8)
    assert u.fill_(-1).tolist() == [255, 255]
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without "
                       "overflow"):
        u.fill_(300)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got "
                       "tensor with 1 dimensions"):
        x.fill_(ember.tensor([1]))
    leaf = ember.ones(2, requires_grad=True)
    for op in (lambda t: t.fill_(1), lambda t: t.zero_()):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            op(leaf)
    with ember.no_grad():
        leaf.fill_(3.0)
        leaf.zero_()
    assert leaf.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t"):
        ember.zeros(2, dtype=ember.int64).fill_(float("nan"))
    base = ember.ones(3)  # expand's view: PyTorch fills (zeroes) the memory its rows share
    assert base.expand(2, 3).zero_().tolist() == [[0.0] * 3] * 2 and base.tolist() == [0.0] * 3
    base.expand(2, 3).fill_(4)
    assert base.tolist() == [4.0] * 3
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        base.expand(2, 3).fill_(ember.tensor(1.0))  # the tensor overload checks the overlap


def test_fill_gradients():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.fill_(3.0)
    assert y.grad_fn.name() == "FillBackward2"
    (y * x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]  # only through the product: fill_ cuts the history
    v = ember.tensor(2.0, requires_grad=True)
    z = ember.zeros(3, requires_grad=True) * 1
    z.fill_(v)
    assert z.grad_fn.name() == "FillBackward3"
    z.sum().backward()
    assert v.grad.item() == 3.0
    w = x * 1
    w.zero_()
    assert w.grad_fn.name() == "ZeroBackward0"


# -- errors -------------------------------------------------------------------------------------

def test_errors_in_pytorch_words():
    b = ember.tensor([True, False])
    f = ember.tensor([1.0])
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        _ = -b
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not "):
        _ = +b
    with pytest.raises(NotImplementedError, match="\"abs_cpu\" not implemented for 'Bool'"):
        abs(b)
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                       "'Float'"):
        f & f
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Bool'"):
        b << b
    with pytest.raises(TypeError, match="~ \\(operator.invert\\) is only implemented on "
                       "integer and Boolean-type tensors"):
        _ = ~f
    with pytest.raises(NotImplementedError, match="\"bitwise_not_cpu\" not implemented"):
        ember.bitwise_not(f)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(f)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        f.clamp_()
    with pytest.raises(NotImplementedError, match="\"floor_vml_cpu\" not implemented for 'Bool'"):
        ember.floor(b)
    with pytest.raises(NotImplementedError, match="\"round_cpu\" not implemented for 'Long'"):
        ember.round(ember.tensor([1]), decimals=1)
    with pytest.raises(NotImplementedError, match="\"hypot_cpu\" not implemented for 'Long'"):
        ember.hypot(ember.tensor([1]), ember.tensor([1]))
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented"):
        ember.lerp(ember.tensor([1]), ember.tensor([2]), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype "
                       "double"):
        ember.lerp(f, f, ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of "
                       "tensor b \\(2\\) at non-singleton dimension 0"):
        ember.lerp(ember.zeros(3), ember.zeros(2), 0.5)
    with pytest.raises(TypeError, match="maximum\\(\\): argument 'other' \\(position 2\\) must "
                       "be Tensor, not float"):
        ember.maximum(f, 2.0)
    with pytest.raises(TypeError, match="logical_and\\(\\): argument 'other'"):
        ember.logical_and(f, 1)
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                       "but got a tensor with dtype Long"):
        ember.where(ember.tensor([1]), 1, 0)
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        ember.isclose(ember.tensor([1]), f)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but "
                       "got -1"):
        ember.isclose(f, f, rtol=-1)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(b)


# -- devices ------------------------------------------------------------------------------------

def test_ops_keep_the_device(testdev):
    # the ops' results on the test device: the generic tests; here a 0-d CPU operand and a
    # Python bool result
    x = ember.tensor([0.25, -0.5, 2.0], device=testdev)
    assert ember.maximum(x, ember.tensor(0.5)).device == ember.device("testdev", 0)
    assert ember.equal(x, x.clone()) is True


def test_mixing_devices_raises(testdev):
    x = ember.tensor([0.25, -0.5], device=testdev)
    c = ember.tensor([1.0, 2.0])
    for fn in (lambda: ember.maximum(x, c), lambda: ember.atan2(x, c),
               lambda: ember.where(c > 0, x, 0.0), lambda: ember.where(x > 0, x, c),
               lambda: ember.clamp(x, c), lambda: ember.lerp(x, c, 0.5),
               lambda: ember.isclose(x, c), lambda: ember.equal(x, c)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn()


def test_copy_across_devices_keeps_gradients(testdev):
    src = ember.tensor([1.0, 2.0], requires_grad=True)
    dst = ember.zeros(2, device=testdev)
    dst.copy_(src)
    assert dst.device == ember.device("testdev", 0) and dst.tolist() == [1.0, 2.0]
    (dst * 3).sum().backward()
    assert src.grad.device == ember.device("cpu") and src.grad.tolist() == [3.0, 3.0]
    back = ember.zeros(2)
    back.copy_(ember.tensor([4.0, 5.0], device=testdev))
    assert back.tolist() == [4.0, 5.0] and back.device == ember.device("cpu")


# -- broadcasting and promotion, as a property ------------------------------------------------

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
          ember.float16, ember.float32, ember.float64]
BINARY_KINDS = {
    "maximum": "same", "minimum": "same", "fmax": "same", "fmin": "same", "atan2": "float",
    "copysign": "float", "xlogy": "float", "bitwise_and": "integral", "bitwise_or": "integral",
    "bitwise_xor": "integral", "logical_and": "bool", "logical_xor": "bool", "eq": "bool",
    "where": "same",
}
SCALAR_OK = {"copysign", "xlogy", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "where"}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(BINARY_KINDS)), da=st.sampled_from(DTYPES),
       db=st.sampled_from(DTYPES), shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                                        max_side=3),
       scalar=st.sampled_from([None, None, 2, -1.5, True]))
def test_binary_ops_broadcast_and_promote_like_result_type(name, da, db, shapes, scalar):
    a = ember.ones(shapes.input_shapes[0], dtype=da)
    b = ember.ones(shapes.input_shapes[1], dtype=db)
    if scalar is not None and name in SCALAR_OK:
        b = scalar
    expected = ember.result_type(a, b)
    kind = BINARY_KINDS[name]
    if name == "where":
        cond = ember.ones(shapes.input_shapes[0], dtype=ember.bool)
        out = ember.where(cond, a, b)
    elif kind == "integral" and expected.is_floating_point:
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(ember, name)(a, b)
        return
    else:
        out = getattr(ember, name)(a, b)
    if kind == "bool":
        expected = ember.bool
    elif kind == "float" and not expected.is_floating_point:
        expected = ember.get_default_dtype()
    assert out.dtype is expected
    b_shape = () if not isinstance(b, ember.Tensor) else shapes.input_shapes[1]
    assert out.shape == np.broadcast_shapes(shapes.input_shapes[0], b_shape)


def test_add_sub_with_a_number_and_alpha():
    # PyTorch: t.sub(0.5, alpha=2) is t - 1.0; the scaled number stays a weak scalar
    t = ember.ones(3)
    assert t.sub(0.5, alpha=2).tolist() == [0.0, 0.0, 0.0]
    assert ember.add(t, 0.5, alpha=2).tolist() == [2.0, 2.0, 2.0]
    assert ember.rsub(t, 0.5, alpha=2).tolist() == [-1.5, -1.5, -1.5]
    assert t.sub_(0.5, alpha=2) is t and t.tolist() == [0.0, 0.0, 0.0]
    i = ember.ones(2, dtype=ember.int64)
    r = i.add(2, alpha=3)
    assert r.dtype == ember.int64 and r.tolist() == [7, 7]
    assert ember.ones(2).add(ember.ones(2), alpha=0.5).tolist() == [1.5, 1.5]


def test_bfloat16_cube_and_inverse_square_round_the_square_first():
    # PyTorch's CPU pow kernel computes a bfloat16 base ** 3 as base * base * base and
    # ** -2 as 1 / (base * base) in bfloat16 steps (the square rounded to bfloat16): GELU's
    # tanh form computes x ** 3, and greedy generation in bfloat16 followed the roundings
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(4000).astype(np.float32)).bfloat16()
    sq = x * x
    assert ember.equal(x ** 3, sq * x) and ember.equal(ember.pow(x, 3.0), sq * x)
    assert ember.equal(ember.pow(x, -2), sq.reciprocal())
    y = x.clone()
    y.pow_(-2)
    assert ember.equal(y, sq.reciprocal())
    xr = x.clone().requires_grad_()
    out = xr ** 3
    assert out.grad_fn.name() == "PowBackward0"
    assert not ember.equal(x ** 3, (x.float() ** 3).bfloat16())  # one rounding differs


def test_bfloat16_powers_match_the_oracle():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(4000).astype(np.float32)
    theirs_x = torch.from_numpy(a).bfloat16()
    ours_x = ember.from_numpy(a).bfloat16()
    for e in (3, -2, 2, 3.0, -2.0, -1, 0.5):
        theirs = (theirs_x ** e).float().numpy()
        ours = (ours_x ** e).float().numpy()
        np.testing.assert_array_equal(ours, theirs, err_msg=str(e))
    tx, ox = theirs_x.clone().requires_grad_(), ours_x.clone().requires_grad_()
    (tx ** 3).sum().backward()
    (ox ** 3).sum().backward()
    np.testing.assert_array_equal(ox.grad.float().numpy(), tx.grad.float().numpy())
