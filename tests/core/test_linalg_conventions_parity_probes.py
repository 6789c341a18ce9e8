"""Conventions of ``ember.linalg``'s decompositions against PyTorch (CPU): the differences
found by differential probes, each pinned by a plain assertion and, where torch is installed,
by the same program run with torch.

Not pinned, because they depend on the LAPACK build (PyTorch's wheels use MKL, NumPy
OpenBLAS) rather than on PyTorch: the signs of real singular vectors of wide matrices and of
large ones (MKL's own ``gesdd`` disagrees with itself: real vs complex input), the signs and
phases of ``eigh``'s eigenvectors and of real ``eig``'s float32 ones, and what NaN / Inf inputs
leave in ``qr``, ``geqrf``, ``householder_product``, ``ormqr`` and ``lstsq``. The tests below
compare singular vectors up to those signs, and exactly only what does not depend on them.
"""

import numpy as np
import pytest

import ember

from .test_linalg_parity_probes import _parity, _raises

LA = ember.linalg


# -- svd --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_of_an_empty_complex_matrix_has_real_singular_values(shape, full_matrices):
    def fn(T):
        return T.linalg.svd(T.zeros(shape, dtype=T.complex128), full_matrices=full_matrices)

    U, S, Vh = fn(ember)
    assert S.dtype == ember.float64  # was complex128
    assert U.dtype == Vh.dtype == ember.complex128
    _parity(fn)
    _parity(lambda T: T.linalg.svdvals(T.zeros(shape, dtype=T.complex64)))
    _parity(lambda T: T.svd(T.zeros(shape, dtype=T.complex128), some=not full_matrices))
    _parity(lambda T: T.svd(T.zeros(shape, dtype=T.complex128), compute_uv=False))
    assert LA.svdvals(ember.zeros(shape, dtype=ember.complex64)).dtype == ember.float32


@pytest.mark.parametrize("shape", [(2,), ()])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_torch_svd_of_a_vector_has_its_own_message(shape, compute_uv):
    ndim = len(shape)
    _raises(lambda T: T.svd(T.ones(shape), compute_uv=compute_uv), RuntimeError,
            f"linalg.svd: input should have at least 2 dimensions, but has {ndim} dimensions "
            "instead")
    _raises(lambda T: T.linalg.svd(T.ones(shape)), RuntimeError,
            "linalg.svd: The input tensor A must have at least 2 dimensions.")


def _svd_up_to_signs(a, full_matrices):
    """U, S, Vh of ember and torch, the singular vectors compared up to a unit factor per
    singular value (LAPACK-build dependent); shapes, dtypes and S exactly / to rounding."""
    torch = pytest.importorskip("torch")
    U, S, Vh = (x.numpy() for x in LA.svd(ember.tensor(a), full_matrices=full_matrices))
    tU, tS, tVh = (x.numpy() for x in torch.linalg.svd(torch.tensor(a),
                                                          full_matrices=full_matrices))
    assert (U.shape, S.shape, Vh.shape) == (tU.shape, tS.shape, tVh.shape)
    assert (U.dtype, S.dtype, Vh.dtype) == (tU.dtype, tS.dtype, tVh.dtype)
    np.testing.assert_allclose(S, tS, rtol=1e-10, atol=1e-12)
    k = S.shape[-1]
    # per singular value, the same unit factor on the column of U and the row of Vh
    phase_u = (np.conj(tU[..., :, :k]) * U[..., :, :k]).sum(-2)
    phase_v = (tVh[..., :k, :] * np.conj(Vh[..., :k, :])).sum(-1)
    np.testing.assert_allclose(np.abs(phase_u), 1, atol=1e-8)
    np.testing.assert_allclose(phase_u, phase_v, atol=1e-8)
    np.testing.assert_allclose((U[..., :, :k] * S[..., None, :]) @ Vh[..., :k, :], a,
                               atol=1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 5), (2, 5, 3), (1, 6)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_torch_up_to_the_lapack_builds_signs(shape, dtype, full_matrices):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal(shape)
    _svd_up_to_signs(a.astype(dtype), full_matrices)


# -- order of the argument checks ------------------------------------------------------------

def test_eigh_checks_the_shape_before_uplo():
    _raises(lambda T: T.linalg.eigh(T.ones(2, 3), UPLO="X"), RuntimeError,
            "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices")
    _raises(lambda T: T.linalg.eigvalsh(T.ones(2), UPLO="X"), RuntimeError,
            "linalg.eigh: The input tensor A must have at least 2 dimensions.")
    _raises(lambda T: T.linalg.eigh(T.ones(2, 2).long(), UPLO="X"), RuntimeError,
            "Expected UPLO argument to be 'L' or 'U', but got X")  # before the dtype


def test_qr_checks_the_shape_and_dtype_before_the_mode():
    _raises(lambda T: T.linalg.qr(T.ones(2), mode="foo"), RuntimeError,
            "linalg.qr: The input tensor A must have at least 2 dimensions.")
    _raises(lambda T: T.linalg.qr(T.ones(2, 2).long(), mode="foo"), RuntimeError,
            "linalg.qr: Expected a floating point or complex tensor as input. Got Long")
    _raises(lambda T: T.linalg.qr(T.ones(2, 2).half(), mode="foo"), RuntimeError,
            "qr received unrecognized mode 'foo' but expected one of 'reduced' (default), "
            "'r', or 'complete'")  # float16's kernel error comes after the mode's
    _raises(lambda T: T.linalg.qr(T.ones(2, 2).half()), NotImplementedError,
            "\"geqrf_cpu\" not implemented for 'Half'")


# -- lu_solve's pivots -----------------------------------------------------------------------

def _pivots(T, values):
    return T.tensor(values, dtype=T.int32)


@pytest.mark.parametrize("pivots,message", [
    ([0, 2], "Pivots given to lu_solve must all be greater or equal to 1. Did you properly "
             "pass the result of lu_factor?"),
    ([1, 3], "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). Did you "
             "properly pass the result of lu_factor?"),
])
def test_lu_solve_refuses_pivots_out_of_range(pivots, message):
    _raises(lambda T: T.linalg.lu_solve(T.eye(2), _pivots(T, pivots), T.ones(2, 2)),
            RuntimeError, message)  # was: a wrong answer, or an IndexError
    _raises(lambda T: T.linalg.lu_solve(T.eye(2).expand(2, 2, 2),
                                        _pivots(T, [[1, 2], pivots]), T.ones(2, 2)),
            RuntimeError, message)
    _raises(lambda T: T.linalg.lu_solve(T.eye(2).half(), _pivots(T, pivots),
                                        T.ones(2, 2).half()),
            RuntimeError, message)  # before float16's kernel error


def test_lu_solve_checks_shapes_before_the_kernels_dtype_and_skips_an_empty_result():
    _raises(lambda T: T.linalg.lu_solve(T.ones(2, 3).half(), _pivots(T, [1, 2]),
                                        T.ones(2, 2).half()),
            RuntimeError, "torch.linalg.lu_solve: A must be batches of square matrices, but "
                          "they are 2 by 3 matrices")
    _raises(lambda T: T.linalg.lu_solve(T.eye(2).half(), _pivots(T, [1, 2]),
                                        T.ones(2, 2).half()),
            NotImplementedError, "\"linalg.lu_solve_cpu\" not implemented for 'Half'")
    x = LA.lu_solve(ember.eye(2), _pivots(ember, [0, 2]), ember.ones(2, 0))
    assert tuple(x.shape) == (2, 0)  # nothing to solve: PyTorch does not look at the pivots
    _parity(lambda T: T.linalg.lu_solve(T.eye(2), _pivots(T, [0, 2]), T.ones(2, 0)))


# -- lstsq ------------------------------------------------------------------------------------

def test_lstsq_gels_ignores_rcond():
    a = np.array([[1.0, 0.0], [0.0, 1e-2], [1.0, 1.0]])
    b = np.array([[1.0], [2.0], [3.0]])

    def fn(T, rcond):
        return T.linalg.lstsq(T.tensor(a), T.tensor(b), rcond=rcond, driver="gels").solution

    expected = np.linalg.lstsq(a, b, rcond=None)[0]  # full rank: the plain solution
    np.testing.assert_allclose(fn(ember, 0.3).numpy(), expected, rtol=1e-10)
    np.testing.assert_allclose(fn(ember, None).numpy(), expected, rtol=1e-10)
    _parity(lambda T: fn(T, 0.3))
    # gelsd does cut the singular values below rcond * s_max
    _parity(lambda T: T.linalg.lstsq(T.tensor(a), T.tensor(b), rcond=0.3, driver="gelsd"))


# -- eigh of empty integer and bool matrices ----------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 2, 2)])
def test_eigh_of_an_empty_integer_matrix_gives_empties_of_its_dtype(dtype, shape):
    def fn(T):
        A = T.zeros(shape, dtype=getattr(T, dtype))
        return T.linalg.eigh(A), T.linalg.eigvalsh(A)

    (w, v), w2 = fn(ember)
    assert w.shape == w2.shape == shape[:-1] and v.shape == shape
    assert w.dtype == w2.dtype == v.dtype == getattr(ember, dtype)
    _parity(fn)


def test_eigh_of_a_nonempty_integer_matrix_still_has_no_kernel():
    _raises(lambda T: T.linalg.eigh(T.zeros(2, 2, dtype=T.int64)), NotImplementedError,
            "\"linalg_eigh_cpu\" not implemented for 'Long'")
    _raises(lambda T: T.linalg.eigh(T.zeros(0, 0, dtype=T.int64), UPLO="X"), RuntimeError,
            "Expected UPLO argument to be 'L' or 'U', but got X")
