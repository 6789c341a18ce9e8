"""addcmul/addcdiv, deg2rad/rad2deg, logaddexp(2), heaviside, gcd/lcm, ldexp, nextafter, frexp,
dist, renorm, addr, bincount, histc, cov, corrcoef: NumPy reference values, dtypes, errors,
in-place variants, and values against PyTorch where it is installed (gradchecks, and the
values on the op database's samples: tests/ops/test_ops.py)."""

import math

import numpy as np
import pytest
from testutils import rand64

import ember

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def arr(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


# -- NumPy reference ---------------------------------------------------------------------------

def test_addcmul_addcdiv_values_and_inplace():
    x, a, b = arr((2, 3), 0), arr((3,), 1), arr((2, 1), 2, 0.5, 2)
    r = ember.addcmul(ember.tensor(x), ember.tensor(a), ember.tensor(b), value=0.5)
    np.testing.assert_allclose(r.numpy(), x + 0.5 * a * b, rtol=1e-6)
    r = ember.tensor(x).addcdiv(ember.tensor(a), ember.tensor(b), value=2)
    np.testing.assert_allclose(r.numpy(), x + 2 * a / b, rtol=1e-6)
    t = ember.tensor(x)
    assert t.addcmul_(ember.tensor(a), ember.tensor(b)) is t
    np.testing.assert_allclose(t.numpy(), x + a * b, rtol=1e-6)
    i = ember.tensor([1, 2, 3])
    assert ember.addcmul(i, i, i, value=2).dtype == ember.int64
    assert ember.addcmul(i, i, i, value=2).tolist() == [3, 10, 21]
    assert ember.addcmul(ember.tensor([1.0, 2, 3]), i, i).dtype == ember.float32
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        ember.addcdiv(i, i, i)
    with pytest.raises(NotImplementedError, match="addcmul_cpu_out"):
        ember.addcmul(i > 1, i > 1, i > 1)


def test_angles():
    x = arr((4,))
    np.testing.assert_allclose(ember.deg2rad(ember.tensor(x)).numpy(), np.deg2rad(x))
    np.testing.assert_allclose(ember.tensor(x).rad2deg().numpy(), np.rad2deg(x))
    assert ember.deg2rad(ember.tensor([1, 2])).dtype == ember.float32
    assert ember.rad2deg(ember.tensor([True])).dtype == ember.float32
    t = ember.tensor(x)
    t.deg2rad_()
    np.testing.assert_allclose(t.numpy(), np.deg2rad(x))
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.tensor([1, 2]).deg2rad_()


def test_logaddexp_values_and_errors():
    a, b = arr((2, 3), 0, -50, 50), arr((3,), 1, -50, 50)
    np.testing.assert_allclose(ember.logaddexp(ember.tensor(a), ember.tensor(b)).numpy(),
                               np.logaddexp(a, b))
    np.testing.assert_allclose(ember.tensor(a).logaddexp2(ember.tensor(b)).numpy(),
                               np.logaddexp2(a, b))
    i = ember.tensor([1, 2])
    with pytest.raises(NotImplementedError, match="logaddexp_cpu"):
        ember.logaddexp(i, i)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.logaddexp(ember.tensor([1.0]), 2.0)
    assert ember.logaddexp(ember.tensor([1.0]), i).dtype == ember.float32


def test_heaviside():
    x = ember.tensor([-1.5, 0.0, 2.0, float("nan")])
    assert ember.heaviside(x, ember.tensor(0.5)).tolist()[:3] == [0.0, 0.5, 1.0]
    assert ember.heaviside(x, ember.tensor(0.5)).tolist()[3] == 0.0
    i = ember.tensor([-3, 0, 4])
    assert i.heaviside(ember.tensor([7, 7, 7])).tolist() == [0, 7, 1]
    with pytest.raises(RuntimeError, match="different dtypes"):
        ember.heaviside(x, ember.tensor(1))
    with pytest.raises(TypeError, match="'values'"):
        ember.heaviside(x, 0.5)
    x.heaviside_(ember.tensor(0.25))
    assert x.tolist() == [0.0, 0.25, 1.0, 0.0]


def test_gcd_lcm():
    a, b = np.array([-4, 0, 0, 12, 9]), np.array([6, 0, -3, 18, 7])
    assert ember.gcd(ember.tensor(a), ember.tensor(b)).tolist() == np.gcd(a, b).tolist()
    assert ember.tensor(a).lcm(ember.tensor(b)).tolist() == np.lcm(a, b).tolist()
    assert ember.gcd(ember.tensor(a), ember.tensor(b, dtype=ember.int32)).dtype == ember.int64
    t = ember.tensor(a)
    t.gcd_(ember.tensor(b))
    assert t.tolist() == np.gcd(a, b).tolist()
    with pytest.raises(NotImplementedError, match="gcd_cpu"):
        ember.gcd(ember.tensor([1.0]), ember.tensor([2.0]))
    with pytest.raises(NotImplementedError, match="lcm_cpu"):
        ember.lcm(ember.tensor([True]), ember.tensor([True]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_lcm_overflow_wraps_as_torch(dtype):
    # PyTorch: abs(a / gcd * b) in C++ arithmetic (narrow types in int, then wrapped); NumPy
    # takes the abs first, so an overflowing lcm came out negative
    torch = pytest.importorskip("torch")
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    a = rng.integers(info.min, info.max, 500, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, 500, endpoint=True).astype(dtype)
    a[:3], b[:3] = info.min, [1, 3, 0]  # the most negative value; lcm with 0
    expected = torch.lcm(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.array_equal(ember.lcm(ember.tensor(a), ember.tensor(b)).numpy(), expected)


def test_ldexp_nextafter_frexp():
    x, e = arr((5,)), np.array([0, 1, -2, 3, 10])
    np.testing.assert_allclose(ember.ldexp(ember.tensor(x), ember.tensor(e)).numpy(),
                               np.ldexp(x, e).astype(np.float32), rtol=1e-6)
    assert ember.ldexp(ember.tensor(e), ember.tensor(e)).dtype == ember.float32
    assert ember.ldexp(ember.tensor(x, dtype=ember.float16), ember.tensor(e)).dtype == \
        ember.float16
    n = ember.nextafter(ember.tensor(x, dtype=ember.float32),
                        ember.tensor(np.full(5, 100.0), dtype=ember.float32))
    np.testing.assert_array_equal(n.numpy(), np.nextafter(x.astype(np.float32),
                                                          np.float32(100)))
    with pytest.raises(NotImplementedError, match="nextafter_cpu"):
        ember.nextafter(ember.tensor([1]), ember.tensor([2]))
    m, ex = ember.frexp(ember.tensor(x, dtype=ember.float64))
    rm, rex = np.frexp(x)
    np.testing.assert_array_equal(m.numpy(), rm)
    np.testing.assert_array_equal(ex.numpy(), rex)
    res = ember.tensor(x).frexp()
    assert type(res).__name__ == "frexp" and res._fields == ("mantissa", "exponent")
    assert res.exponent.dtype == ember.int32
    with pytest.raises(RuntimeError, match="only supports floating-point"):
        ember.frexp(ember.tensor([1]))


def test_dist_renorm():
    a, b = arr((3, 4), 0), arr((4,), 1)
    for p in (1, 2, 3.5, float("inf"), 0):
        ref = np.linalg.norm((a - b).ravel(), ord=p) if p else np.count_nonzero(a - b)
        np.testing.assert_allclose(ember.dist(ember.tensor(a), ember.tensor(b), p).item(), ref,
                                   rtol=1e-5)
    with pytest.raises(RuntimeError, match="floating point"):
        ember.dist(ember.tensor([1]), ember.tensor([2]))
    x = arr((3, 4), 2)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    ref = np.where(norms > 1.5, x * 1.5 / (norms + 1e-7), x)
    np.testing.assert_allclose(ember.tensor(x).renorm(2, 0, 1.5).numpy(), ref, rtol=1e-6)
    t = ember.tensor(x)
    assert t.renorm_(2, 0, 1.5) is t
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.renorm(ember.tensor([1.0]), 2, 0, 1)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        ember.renorm(ember.tensor(x), 0, 0, 1)
    with pytest.raises(RuntimeError, match="maxnorm"):
        ember.renorm(ember.tensor(x), 2, 0, -1)


def test_addr():
    m, a, b = arr((3, 4), 0), arr((3,), 1), arr((4,), 2)
    r = ember.addr(ember.tensor(m), ember.tensor(a), ember.tensor(b), beta=0.5, alpha=2)
    np.testing.assert_allclose(r.numpy(), 0.5 * m + 2 * np.outer(a, b), rtol=1e-6)
    r = ember.tensor(np.full((1, 4), np.nan)).addr(ember.tensor(a), ember.tensor(b), beta=0)
    np.testing.assert_allclose(r.numpy(), np.outer(a, b), rtol=1e-6)
    t = ember.tensor(m)
    t.addr_(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(t.numpy(), m + np.outer(a, b), rtol=1e-6)
    i = ember.tensor([1, 2, 3])
    assert ember.addr(ember.zeros(3, 3, dtype=ember.int64), i, i).dtype == ember.int64
    with pytest.raises(RuntimeError, match="must not be a floating point"):
        ember.addr(ember.zeros(3, 3, dtype=ember.int64), i, i, beta=0.5)
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1"):
        ember.addr(ember.zeros(3, 3), i.reshape(3, 1), i)
    with pytest.raises(RuntimeError, match="expanded size"):
        ember.addr(ember.zeros(2, 3), i, i)
    with pytest.raises(RuntimeError, match="number of sizes provided"):
        ember.addr(ember.zeros(1, 3, 3), i, i)


def test_bincount_histc():
    i = np.array([0, 3, 1, 1, 5])
    w = np.array([0.5, 1.0, 2.0, 3.0, 4.0])
    assert ember.bincount(ember.tensor(i)).tolist() == np.bincount(i).tolist()
    assert ember.tensor(i).bincount(minlength=9).tolist() == np.bincount(i, minlength=9).tolist()
    r = ember.bincount(ember.tensor(i), ember.tensor(w, dtype=ember.float32))
    assert r.dtype == ember.float32
    np.testing.assert_allclose(r.numpy(), np.bincount(i, w))
    assert ember.bincount(ember.tensor(i), ember.tensor(i)).dtype == ember.float64
    assert ember.bincount(ember.tensor([], dtype=ember.int64)).shape == (0,)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.bincount(ember.tensor([-1, 2]))
    with pytest.raises(NotImplementedError, match="bincount_cpu"):
        ember.bincount(ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="same length"):
        ember.bincount(ember.tensor(i), ember.tensor(w[:2]))
    x = arr((200,), 3, -3, 3)
    ref, _ = np.histogram(x, bins=12, range=(-2, 2))
    np.testing.assert_array_equal(ember.histc(ember.tensor(x, dtype=ember.float64), 12, -2, 2)
                                  .numpy(), ref)
    h = ember.tensor(x, dtype=ember.float64).histc(bins=7)
    np.testing.assert_array_equal(h.numpy(), np.histogram(x, bins=7)[0])
    assert ember.histc(ember.tensor([1.0, 1.0]), bins=4).tolist() == [0, 0, 2, 0]
    with pytest.raises(NotImplementedError, match="histogram_cpu"):
        ember.histc(ember.tensor([1]))
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        ember.histc(ember.tensor([1.0]), min=3, max=1)
    with pytest.raises(RuntimeError, match="not finite"):
        ember.histc(ember.tensor([1.0, float("nan")]))


def test_cov_corrcoef():
    x = arr((3, 6), 4)
    np.testing.assert_allclose(ember.cov(ember.tensor(x)).numpy(), np.cov(x), rtol=1e-10)
    fw, aw = np.array([1, 2, 0, 3, 1, 1]), arr((6,), 5, 0.1, 1)
    r = ember.tensor(x).cov(correction=0, fweights=ember.tensor(fw), aweights=ember.tensor(aw))
    np.testing.assert_allclose(r.numpy(), np.cov(x, ddof=0, fweights=fw, aweights=aw),
                               rtol=1e-10)
    r = ember.cov(ember.tensor(x), fweights=ember.tensor(fw), aweights=ember.tensor(aw))
    np.testing.assert_allclose(r.numpy(), np.cov(x, fweights=fw, aweights=aw), rtol=1e-10)
    np.testing.assert_allclose(ember.corrcoef(ember.tensor(x)).numpy(), np.corrcoef(x),
                               rtol=1e-10)
    assert ember.cov(ember.tensor([1, 2, 4])).dtype == ember.float32
    assert ember.corrcoef(ember.tensor([1.0, 2, 4])).item() == 1.0
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        ember.cov(ember.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="bool dtype"):
        ember.cov(ember.tensor([True]))
    with pytest.raises(RuntimeError, match="integral dtype"):
        ember.cov(ember.tensor(x), fweights=ember.tensor(aw))
    with pytest.raises(RuntimeError, match="floating point dtype"):
        ember.cov(ember.tensor(x), aweights=ember.tensor(fw))
    with pytest.raises(RuntimeError, match="cannot be negative"):
        ember.cov(ember.tensor(x), fweights=ember.tensor(-fw))
    with pytest.raises(RuntimeError, match="same numel"):
        ember.cov(ember.tensor(x), fweights=ember.tensor(fw[:2]))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        ember.cov(ember.tensor([1.0, 2.0]), correction=5)


# -- gradients -----------------------------------------------------------------------------------

# gradcheck and gradgradcheck of every op here (broadcasting, value=, beta/alpha, weights):
# the generic tests (tests/ops/test_ops.py, over ember.ops.opdb)

def test_inplace_with_grad():
    x = rand64(2, 3)
    y = x * 1
    y.addcmul_(rand64(3, rng=1), rand64(3, rng=2), value=2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((2, 3)))


def test_not_differentiable_ops_do_not_record():
    x = rand64(4)
    assert ember.nextafter(x, x * 2).grad_fn is None
    assert ember.histc(x).grad_fn is None
    assert ember.frexp(x).mantissa.grad_fn.name() == "FrexpBackward0"
    assert ember.addcmul(x, x, x).grad_fn.name() == "AddcmulBackward0"


# -- against PyTorch --------------------------------------------------------------------------

DTYPES = ["float32", "float64", "float16"]


def _pair(seed, shape, dtype, torch, low=-3.0, high=3.0):
    a = arr(shape, seed, low, high).astype(dtype)
    return ember.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((4, 1, 2), (3, 1)), ((), ())])
def test_binary_parity(dtype, shapes):
    torch = pytest.importorskip("torch")
    (ea, ta), (eb, tb) = _pair(0, shapes[0], dtype, torch), _pair(1, shapes[1], dtype, torch)
    tol = 2e-3 if dtype == "float16" else 1e-6
    for name in ("logaddexp", "logaddexp2", "nextafter", "heaviside"):
        e, t = getattr(ember, name)(ea, eb), getattr(torch, name)(ta, tb)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        exact = name in ("nextafter", "heaviside")
        np.testing.assert_allclose(e.numpy().astype(np.float64), t.numpy().astype(np.float64),
                                   rtol=0 if exact else tol, atol=0 if exact else tol)
    e, t = ember.ldexp(ea, ember.tensor(3)), torch.ldexp(ta, torch.tensor(3))
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=tol)
    for name in ("deg2rad", "rad2deg"):
        np.testing.assert_allclose(getattr(ember, name)(ea).numpy().astype(np.float64),
                                   getattr(torch, name)(ta).numpy().astype(np.float64),
                                   rtol=tol)
    em, ee = ember.frexp(ea)
    tm, te = torch.frexp(ta)
    np.testing.assert_array_equal(em.numpy(), tm.numpy())
    np.testing.assert_array_equal(ee.numpy(), te.numpy())


# int64 and int32: the generic tests (gcd, lcm, ldexp, heaviside, deg2rad, addcmul, bincount)
@pytest.mark.parametrize("dtype", ["int16", "uint8"])
def test_integer_parity(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.integers(0 if dtype == "uint8" else -20, 20, (3, 4)).astype(dtype)
    b = rng.integers(0 if dtype == "uint8" else -20, 20, (4,)).astype(dtype)
    for name in ("gcd", "lcm", "ldexp", "heaviside", "deg2rad"):
        args = (a,) if name == "deg2rad" else (a, b)
        e = getattr(ember, name)(*map(ember.tensor, args))
        t = getattr(torch, name)(*map(torch.tensor, args))
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], name
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    e = ember.addcmul(*(ember.tensor(v) for v in (a, a, b)), value=2)
    t = torch.addcmul(*(torch.tensor(v) for v in (a, a, b)), value=2)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    idx = np.abs(a.ravel()).astype(np.int64)
    np.testing.assert_array_equal(ember.bincount(ember.tensor(idx), minlength=30).numpy(),
                                  torch.bincount(torch.tensor(idx), minlength=30).numpy())


# addcmul, addcdiv, addr, dist, renorm, cov, corrcoef, histc, bincount against PyTorch in
# float32 and float64: the generic tests


def test_logaddexp_of_large_equal_values_is_finite():
    # the gradients of addcdiv, logaddexp, ldexp and renorm: the generic gradchecks
    assert math.isfinite(ember.logaddexp(ember.tensor(1e4), ember.tensor(1e4)).item())


def test_more_inplace_variants():
    # ldexp_, lcm_, rad2deg_, addcdiv_: the generic tests; nextafter_ moves by one ulp, below
    # their tolerance
    x = arr((4,))
    t = ember.tensor(x, dtype=ember.float64)
    t.nextafter_(ember.tensor(np.full(4, 9.0)))
    np.testing.assert_array_equal(t.numpy(), np.nextafter(x, 9.0))
    for name in ("logaddexp_", "logaddexp2_", "frexp_", "dist_"):
        assert not hasattr(ember.Tensor, name)
