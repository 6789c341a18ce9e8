"""Kernels on an array module that has CuPy's gaps, checked against the CPU.

CuPy lacks some of NumPy's API, and the strict device (NumPy underneath) does not refuse it:
``ufunc.accumulate`` exists there only for add and multiply, ``add.at`` and ``maximum.at``
take only some dtypes (and CuPy's float ``maximum.at`` rounds float64 through float32),
``where`` wants an array condition, ``tensordot`` takes a 0-dim input only with
``axes=((), ())``, ``linalg.solve`` does not broadcast batch dims, and ``concatenate`` raises
``TypeError`` for an operand that is not its array. This module swaps the strict device's
array module for one that refuses the same, so a kernel that leans on NumPy's extras fails
here as it did on a GPU (CuPy 14), and compares every result with the CPU's.
"""

import numpy as np
import pytest

import ember
from ember import backends
from ember._strict import StrictArray, StrictNumpy, to_strict
from ember.testing import StrictTestBackend

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")

_ADD_AT = {np.dtype(t) for t in ("int32", "int64", "uint32", "uint64", "float16", "float32",
                                 "float64")}
_EXTREME_AT = {np.dtype(t) for t in ("int32", "int64", "uint32", "uint64")}


class _Ufunc:
    """A strict ufunc with CuPy's limits on ``accumulate`` and ``at``."""

    def __init__(self, strict_ufunc, name, at_dtypes):
        self._u = strict_ufunc
        self._name = name
        self._at = at_dtypes
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return self._u(*args, **kwargs)

    def accumulate(self, *args, **kwargs):
        if self._name not in ("add", "multiply"):
            raise NotImplementedError(f"`cupy_{self._name}.accumulate` is not supported yet")
        return self._u.accumulate(*args, **kwargs)

    def at(self, a, index, values):
        if a.dtype not in self._at:
            raise TypeError(f"cupylike: {self._name}.at refuses {a.dtype} (CuPy has none, or "
                            "an inexact one)")
        return self._u.at(a, index, values)

    def __getattr__(self, name):
        return getattr(self._u, name)


def _cupylike_numpy():
    xp = StrictNumpy(np, "cupylike_numpy")
    base = StrictNumpy(np, "cupylike_base")
    for name, at in (("add", _ADD_AT), ("subtract", _ADD_AT), ("maximum", _EXTREME_AT),
                     ("minimum", _EXTREME_AT), ("multiply", set()), ("logaddexp", set())):
        setattr(xp, name, _Ufunc(getattr(base, name), name, at))

    def where(condition, *args):
        condition.astype("?", copy=False)  # a Python bool raises AttributeError, as in CuPy
        return base.where(condition, *args)

    def tensordot(a, b, axes=2):
        if (a.ndim == 0 or b.ndim == 0) and not (axes == 0 or axes == ((), ())):
            raise ValueError("An input is zero-dim while axes has dimensions")
        return base.tensordot(a, b, axes=axes)

    def _arrays_only(arrays):
        for a in arrays:
            if not isinstance(a, StrictArray):
                raise TypeError(f"Unsupported type {type(a)}")

    def concatenate(arrays, *args, **kwargs):
        _arrays_only(arrays)
        return base.concatenate(arrays, *args, **kwargs)

    def stack(arrays, *args, **kwargs):
        _arrays_only(arrays)
        return base.stack(arrays, *args, **kwargs)

    linalg = StrictNumpy(np.linalg, "cupylike_numpy.linalg")

    def solve(a, b):
        if not ((a.ndim == b.ndim or a.ndim == b.ndim + 1)
                and a.shape[:-1] == b.shape[:a.ndim - 1]):
            raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for "
                             "multidimensional b")
        return base.linalg.solve(a, b)

    linalg.solve = solve
    xp.where, xp.tensordot, xp.concatenate, xp.stack, xp.linalg = (
        where, tensordot, concatenate, stack, linalg)
    return xp


@pytest.fixture(scope="module", autouse=True)
def cupylike():
    """The ``strict`` device type with the CuPy-like array module (put back afterwards)."""
    old = backends._REGISTRY.get("strict")
    be = StrictTestBackend("strict")
    be.xp = _cupylike_numpy()
    backends.register_backend(be)
    yield be
    if old is not None:
        backends.register_backend(old)
    else:
        backends.unregister_backend("strict")


def on(t):
    return t.to("strict")


def host(t):
    return t.detach().cpu().numpy()


def test_the_array_module_refuses_what_cupy_refuses(cupylike):
    xp = cupylike.xp
    a = to_strict(np.arange(3.0))
    with pytest.raises(NotImplementedError):
        xp.maximum.accumulate(a)
    with pytest.raises(TypeError):
        xp.add.at(to_strict(np.zeros(3, np.int8)), to_strict(np.array([0])), 1)
    with pytest.raises(AttributeError):
        xp.where(False, a, a)
    assert ember.zeros(2, device="strict")._data.__class__ is StrictArray


# -- cumulative extremes and logcumsumexp --------------------------------------------------------

CUM_INPUTS = [
    np.array([[1.0, 3.0, 3.0, np.nan, 2.0], [0.0, -0.0, 5.0, 5.0, np.inf],
              [-np.inf, -1.0, np.nan, np.nan, 7.0]]),
    np.random.default_rng(0).integers(-3, 4, (4, 7, 3)).astype(np.int32),
    np.random.default_rng(1).normal(size=(5, 33)).astype(np.float16),
    np.array([True, False, True, True]),
]


@pytest.mark.parametrize("k", range(len(CUM_INPUTS)))
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_match_the_cpu(name, k):
    x = CUM_INPUTS[k]
    for dim in range(-1, x.ndim):
        want = getattr(ember.tensor(x), name)(dim)
        got = getattr(on(ember.tensor(x)), name)(dim)
        np.testing.assert_array_equal(host(got.values), host(want.values))
        np.testing.assert_array_equal(host(got.indices), host(want.indices))


def test_cummax_gradient_matches_the_cpu():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [4.0, 1.0, 4.0, 5.0]])
    grads = []
    for t in (ember.tensor(x, requires_grad=True), on(ember.tensor(x)).requires_grad_()):
        t.cummax(1).values.sum().backward()
        grads.append(host(t.grad))
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_logcumsumexp_matches_the_cpu(dtype):
    x = np.random.default_rng(2).normal(scale=30, size=(3, 37)).astype(dtype)
    x[0, 5] = -np.inf
    x[1, :4] = -np.inf
    for dim in (0, 1):
        want = host(ember.tensor(x).logcumsumexp(dim))
        got = host(on(ember.tensor(x)).logcumsumexp(dim))
        assert got.dtype == want.dtype
        rtol = {np.float64: 1e-12, np.float32: 1e-5, np.float16: 1e-3}[dtype]
        np.testing.assert_allclose(got, want, rtol=rtol)
    big = on(ember.tensor([1000.0, 1000.0])).logcumsumexp(0)
    np.testing.assert_allclose(host(big), [1000.0, 1000.0 + np.log(2.0)])


def test_logcumsumexp_gradient_matches_the_cpu():
    x = np.random.default_rng(3).normal(size=(2, 6))
    grads = []
    for t in (ember.tensor(x, requires_grad=True), on(ember.tensor(x)).requires_grad_()):
        (t.logcumsumexp(1) * ember.arange(6.0, device=t.device)).sum().backward()
        grads.append(host(t.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


# -- ufunc.at: index_reduce, index_add, index_put ------------------------------------------------

REDUCE_DTYPES = [np.float64, np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32,
                 np.int64, np.bool_]


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        v = rng.normal(size=shape).astype(dtype)
        v.reshape(-1)[::7] = np.nan
        v.reshape(-1)[3::11] = -np.inf
        return v
    return rng.integers(-100 if np.dtype(dtype).kind == "i" else 0, 100, shape).astype(dtype)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin", "prod", "mean"])
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_index_reduce_matches_the_cpu_exactly(dtype, reduce, include_self):
    if dtype == np.bool_ and reduce in ("prod", "mean"):
        pytest.skip("PyTorch has no bool prod/mean index_reduce")
    x, src = _values(dtype, (4, 3), 0), _values(dtype, (6, 3), 1)
    idx = np.array([0, 3, 0, 1, 0, 3])
    want = ember.tensor(x).index_reduce(0, ember.tensor(idx), ember.tensor(src), reduce,
                                        include_self=include_self)
    got = on(ember.tensor(x)).index_reduce(0, on(ember.tensor(idx)), on(ember.tensor(src)),
                                           reduce, include_self=include_self)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(host(got), host(want))  # NaNs at the same places


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_index_reduce_of_float64_is_exact_and_its_gradient_matches(reduce):
    x = np.random.default_rng(4).normal(size=(3, 2))
    src = np.random.default_rng(5).normal(size=(5, 2))
    idx = ember.tensor([0, 2, 0, 1, 2])
    outs, grads = [], []
    for a, b in ((ember.tensor(x, requires_grad=True), ember.tensor(src, requires_grad=True)),
                 (on(ember.tensor(x)).requires_grad_(), on(ember.tensor(src)).requires_grad_())):
        r = a.index_reduce(0, idx.to(a.device), b, reduce)
        r.sum().backward()
        outs.append(host(r))
        grads.append((host(a.grad), host(b.grad)))
    np.testing.assert_array_equal(outs[1], outs[0])
    for g1, g0 in zip(grads[1], grads[0]):
        np.testing.assert_array_equal(g1, g0)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.bool_, np.complex64,
                                   np.complex128, np.float16, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_index_add_and_accumulating_index_put_match_the_cpu(dtype):
    rng = np.random.default_rng(6)
    if np.dtype(dtype).kind == "c":
        x = (rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))).astype(dtype)
        src = (rng.normal(size=(6, 3)) + 1j * rng.normal(size=(6, 3))).astype(dtype)
    else:
        x, src = _values(dtype, (4, 3), 7), _values(dtype, (6, 3), 8)
        if dtype == np.float16:
            x, src = np.nan_to_num(x, neginf=-1), np.nan_to_num(src, neginf=-1)
    idx = np.array([0, 3, 0, 1, 0, 3])
    want = ember.tensor(x).index_add(0, ember.tensor(idx), ember.tensor(src))
    got = on(ember.tensor(x)).index_add(0, on(ember.tensor(idx)), on(ember.tensor(src)))
    np.testing.assert_array_equal(host(got), host(want))
    rows = ember.tensor(idx)
    want = ember.tensor(x).index_put((rows,), ember.tensor(src), accumulate=True)
    got = on(ember.tensor(x)).index_put((on(rows),), on(ember.tensor(src)), accumulate=True)
    np.testing.assert_array_equal(host(got), host(want))


def test_semi_structured_int8_round_trips():
    from ember.sparse import to_sparse_semi_structured

    rng = np.random.default_rng(9)
    dense = rng.integers(-100, 100, (32, 64)).astype(np.int8)
    dense.reshape(32, 16, 4)[..., :2] = 0  # two of every four kept: the 2:4 pattern
    x = on(ember.tensor(dense))
    np.testing.assert_array_equal(host(to_sparse_semi_structured(x).to_dense()), dense)


# -- the rest ------------------------------------------------------------------------------------

def test_a_python_base_to_negative_tensor_exponents():
    assert (2 ** on(ember.tensor([-1, 0, 3]))).tolist() == [0, 1, 8]
    assert ((-1) ** on(ember.tensor([-1, -2, 3]))).tolist() == [-1, 1, -1]
    assert (1 ** on(ember.tensor([-5, 2]))).tolist() == [1, 1]


@pytest.mark.parametrize("a_shape,b_shape", [((3, 3), (2, 3, 4)), ((2, 1, 3, 3), (5, 3, 2)),
                                             ((4, 3, 3), (3,)), ((4, 3, 3), (3, 1)),
                                             ((2, 3, 3), (2, 3)), ((3, 3), (3,))])
def test_solve_broadcasts_batch_dims(a_shape, b_shape):
    rng = np.random.default_rng(10)
    a = rng.normal(size=a_shape) + 3 * np.eye(a_shape[-1])
    b = rng.normal(size=b_shape)
    want = ember.linalg.solve(ember.tensor(a), ember.tensor(b))
    got = ember.linalg.solve(on(ember.tensor(a)), on(ember.tensor(b)))
    assert got.shape == want.shape
    np.testing.assert_allclose(host(got), host(want), rtol=1e-10, atol=1e-12)
    got_ex = ember.linalg.solve_ex(on(ember.tensor(a)), on(ember.tensor(b))).result
    np.testing.assert_allclose(host(got_ex), host(want), rtol=1e-10, atol=1e-12)


def test_vmap_solve_with_a_shared_matrix():
    rng = np.random.default_rng(11)
    a = on(ember.tensor(rng.normal(size=(3, 3)) + 3 * np.eye(3)))
    bs = on(ember.tensor(rng.normal(size=(4, 3))))
    got = ember.func.vmap(lambda b: ember.linalg.solve(a, b))(bs)
    np.testing.assert_allclose(host(got), np.linalg.solve(host(a), host(bs).T).T, rtol=1e-10)


def test_tensordot_and_inner_of_a_0_dim_tensor():
    s = on(ember.tensor(2.0)).requires_grad_()
    v = on(ember.tensor([1.0, 2.0, 3.0])).requires_grad_()
    r = ember.inner(s, v)
    assert r.tolist() == [2.0, 4.0, 6.0]
    r.sum().backward()
    assert s.grad.item() == 6.0 and v.grad.tolist() == [2.0, 2.0, 2.0]
    assert ember.tensordot(s, v, dims=0).tolist() == [2.0, 4.0, 6.0]
    assert ember.tensordot(s, s, dims=([], [])).item() == 4.0


def test_cat_and_stack_of_sparse_tensors_join_them_as_pytorchs():
    sp = on(ember.tensor([[0.0, 1.0], [2.0, 0.0]])).to_sparse()
    assert ember.cat([sp, sp]).layout is ember.sparse_coo
    np.testing.assert_array_equal(ember.cat([sp, sp]).to_dense().cpu().numpy(),
                                  [[0.0, 1.0], [2.0, 0.0]] * 2)
    assert ember.stack([sp, sp]).shape == (2, 2, 2)
    with pytest.raises(RuntimeError, match="Concatenating sparse tensors, but a dense tensor "
                                           "was found at position 1"):
        ember.cat([sp, on(ember.ones(2, 2))])


def test_index_arrays_that_do_not_broadcast_raise_pytorchs_error():
    from ember.ops.indexing import _check_index_broadcast

    x = on(ember.zeros(3, 4))
    msg = (r"^shape mismatch: indexing tensors could not be broadcast together with shapes "
           r"\[2\], \[3\]$")
    with pytest.raises(IndexError, match=msg):
        x[on(ember.tensor([0, 1])), on(ember.tensor([0, 1, 2]))]
    with pytest.raises(IndexError, match=msg):
        x[on(ember.tensor([0, 1])), on(ember.tensor([0, 1, 2]))] = 1.0
    # the check itself, before the array is indexed (CuPy words its own error otherwise)
    d = to_strict(np.zeros((3, 4)))
    with pytest.raises(IndexError, match=msg):
        _check_index_broadcast(d, (to_strict(np.array([True, False, True])),
                                   to_strict(np.array([0, 1, 2]))))
    _check_index_broadcast(d, (to_strict(np.array([0, 1])), to_strict(np.array([[0], [1]]))))
