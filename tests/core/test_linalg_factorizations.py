"""The factorizations ember.linalg writes itself (LU, triangular solves, Householder QR,
Bunch-Kaufman LDL^T, matrix_exp) and what is built on them: NumPy references, PyTorch's
errors, float64 gradchecks and gradgradchecks, parity with torch (skipped without it),
devices."""

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
LA = ember.linalg
SINGULAR = [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]


def rand(*shape, dtype=np.float64, grad=False, device=None):
    t = ember.tensor(RNG.standard_normal(shape).astype(dtype), device=device)
    return t.requires_grad_() if grad else t


def well_conditioned(*shape, grad=False):
    t = ember.tensor(RNG.standard_normal(shape) + 3 * np.eye(shape[-1]))
    return t.requires_grad_() if grad else t


def npy(t):
    return t.detach().numpy()


def spd_factor(x, upper=False):
    """The Cholesky factor of the SPD matrix x x^T + 3 I (differentiable in x)."""
    a = x.matmul(x.mT) + 3 * ember.tensor(np.eye(x.shape[-1]))
    return LA.cholesky(a, upper=upper)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- NumPy references ------------------------------------------------------------------------

def lu_reference(a):
    """Unblocked LU with partial pivoting of one matrix (LAPACK getf2), 1-based pivots."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape
    piv = []
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(p + 1)
        a[[j, p]] = a[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, np.array(piv, dtype=np.int32)


def permutation_from_pivots(piv, m):
    order = list(range(m))
    for i, p in enumerate(piv):
        order[i], order[p - 1] = order[p - 1], order[i]
    P = np.zeros((m, m))
    P[order, range(m)] = 1
    return P


def geqrf_reference(a):
    """Householder QR of one matrix with dlarfg's sign convention."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape
    tau = np.zeros(min(m, n))
    for j in range(min(m, n)):
        alpha, x = a[j, j], a[j + 1:, j]
        xnorm = np.linalg.norm(x)
        if xnorm == 0:
            continue
        beta = -np.copysign(np.hypot(alpha, xnorm), alpha)
        tau[j] = (beta - alpha) / beta
        a[j + 1:, j] = x / (alpha - beta)
        a[j, j] = beta
        v = np.concatenate([[1.0], a[j + 1:, j]])
        a[j:, j + 1:] -= tau[j] * np.outer(v, v @ a[j:, j + 1:])
    return a, tau


def q_from_reflectors(a, tau, full=False):
    m, n = a.shape
    Q = np.eye(m)
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return Q if full else Q[:, :n]


def ldl_reconstruct(LD, piv):
    """``A`` from LAPACK sytrf's lower format: A = M D M^T, M = P1 L1 P2 L2 ..."""
    n = LD.shape[-1]
    M, D = np.eye(n), np.zeros((n, n))
    k = 0
    while k < n:
        step = 1 if piv[k] > 0 else 2
        swap = (k, piv[k] - 1) if step == 1 else (k + 1, -piv[k] - 1)
        P = np.eye(n)
        P[list(swap)] = P[list(swap[::-1])]
        Lk = np.eye(n)
        Lk[k + step:, k:k + step] = LD[k + step:, k:k + step]
        block = np.tril(LD[k:k + step, k:k + step])
        D[k:k + step, k:k + step] = block + np.tril(block, -1).T
        M = M @ P @ Lk
        k += step
    return M @ D @ M.T


def expm_reference(a):
    """exp of one matrix by scaling and squaring a long Taylor series."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300)))) + 1)
    x = a / 2.0 ** s
    term, out = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 30):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def sym_lower(a):
    return np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)


# -- LU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 6), (6, 3), (2, 3, 5, 5), (40, 40), (3, 70, 37)])
def test_lu_factor_matches_reference(shape):
    a = rand(*shape)
    LU, piv = LA.lu_factor(a)
    assert type(LA.lu_factor(a)).__name__ == "linalg_lu_factor"
    assert LU.shape == shape and piv.shape == shape[:-2] + (min(shape[-2:]),)
    assert piv.dtype == ember.int32
    flat = npy(a).reshape((-1,) + shape[-2:])
    for i, m in enumerate(flat):
        ref_lu, ref_piv = lu_reference(m)
        np.testing.assert_array_equal(piv.numpy().reshape(len(flat), -1)[i], ref_piv)
        np.testing.assert_allclose(LU.numpy().reshape(flat.shape)[i], ref_lu, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 4, 4)])
def test_lu_reconstructs_and_unpacks(shape):
    a = rand(*shape)
    P, L, U = LA.lu(a)
    assert type(LA.lu(a)).__name__ == "linalg_lu"
    k = min(shape[-2:])
    assert L.shape == shape[:-1] + (k,) and U.shape == shape[:-2] + (k, shape[-1])
    np.testing.assert_allclose(npy(P) @ npy(L) @ npy(U), npy(a), atol=1e-12)
    assert np.abs(npy(L)).max() <= 1 + 1e-12  # partial pivoting bounds L
    np.testing.assert_array_equal(np.triu(npy(L), 1), 0)
    np.testing.assert_array_equal(np.tril(npy(U), -1), 0)
    LU, piv = LA.lu_factor(a)
    P2, L2, U2 = ember.lu_unpack(LU, piv)
    for x, y in ((P, P2), (L, L2), (U, U2)):
        np.testing.assert_array_equal(npy(x), npy(y))
    for i, p in enumerate(piv.numpy().reshape(-1, k)):
        np.testing.assert_array_equal(npy(P).reshape((-1,) + P.shape[-2:])[i],
                                      permutation_from_pivots(p, shape[-2]))


def test_lu_without_pivoting_and_empty():
    a = well_conditioned(2, 4, 4)
    P, L, U = LA.lu(a, pivot=False)
    assert P.shape == (0,)
    np.testing.assert_allclose(npy(L) @ npy(U), npy(a), atol=1e-12)
    LU, piv = LA.lu_factor(a, pivot=False)
    assert piv.tolist() == [[1, 2, 3, 4]] * 2
    r = LA.lu_factor(rand(0, 3, 3))
    assert r.LU.shape == (0, 3, 3) and r.pivots.shape == (0, 3)
    assert LA.lu_factor(rand(2, 0, 0)).pivots.shape == (2, 0)


def test_lu_singular_info_and_errors():
    s = ember.tensor(SINGULAR)
    LU, piv, info = LA.lu_factor_ex(s)
    assert type(LA.lu_factor_ex(s)).__name__ == "linalg_lu_factor_ex"
    assert info.item() == 3 and info.dtype == ember.int32 and piv.tolist() == [2, 3, 3]
    np.testing.assert_allclose(npy(LU), [[2, 4, 6], [0.5, -1, -2], [0.5, 0, 0]], atol=1e-15)
    zeros = LA.lu_factor_ex(ember.zeros(2, 3, 3))
    assert zeros.info.tolist() == [1, 1] and zeros.pivots.tolist() == [[1, 2, 3]] * 2
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor: U\[3,3\] is zero and using "
                       r"it on lu_solve would result in a division by zero. If you still want to "
                       r"perform the factorization, consider calling linalg.lu\(A, pivot\) or "
                       r"linalg.lu_factor_ex\(A, pivot\)"):
        LA.lu_factor(s)
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor_ex: \(Batch element 1\): "
                                           r"U\[1,1\] is zero"):
        LA.lu_factor_ex(ember.stack([ember.eye(3), ember.zeros(3, 3)]), check_errors=True)
    assert LA.lu(s).U.shape == (3, 3)  # lu itself never raises
    with pytest.raises(RuntimeError, match=r"torch.lu_factor: Expected tensor with 2 or more "
                                           r"dimensions. Got size: \[3\] instead"):
        LA.lu_factor(rand(3))
    with pytest.raises(RuntimeError, match=r"linalg.lu: Expected tensor with 2 or more dimensions"):
        LA.lu(rand(3))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Long'"):
        LA.lu_factor(ember.ones(3, 3, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Half'"):
        LA.lu(rand(3, 3, dtype=np.float16))


def test_lu_unpack_options_and_errors():
    LU, piv = LA.lu_factor(rand(4, 4))
    P, L, U = ember.lu_unpack(LU, piv, unpack_data=False)
    assert type(ember.lu_unpack(LU, piv)).__name__ == "lu_unpack"
    assert P.shape == (4, 4) and L.shape == (0,) and U.shape == (0,)
    P, L, U = ember.lu_unpack(LU, piv, unpack_pivots=False)
    assert P.shape == (0,) and L.shape == (4, 4)
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of "
                                           "torch.int32 dtype."):
        ember.lu_unpack(LU, piv.long())
    with pytest.raises(RuntimeError, match=r"pivots passed to lu_unpack must be between 1 and "
                                           r"LU.size\(-2\) inclusive.Did you properly pass"):
        ember.lu_unpack(LU, piv * 0)
    with pytest.raises(RuntimeError, match=r"torch.lu_unpack: Expected tensor with 2 or more "
                                           r"dimensions. Got size: \[4\] instead"):
        ember.lu_unpack(LU[0], piv)
    with pytest.raises(RuntimeError, match=r"Expected LU_pivots of shape \[2, 4\]"):
        ember.lu_unpack(LU.expand(2, 4, 4), piv)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve(left, adjoint):
    a = rand(2, 4, 4)
    LU, piv = LA.lu_factor(a)
    b = rand(3, 1, 4, 2) if left else rand(3, 1, 2, 4)
    x = LA.lu_solve(LU, piv, b, left=left, adjoint=adjoint)
    A = np.swapaxes(npy(a), -1, -2) if adjoint else npy(a)
    ref = np.linalg.solve(A, npy(b)) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(npy(b), -1, -2)), -1, -2)
    assert x.shape == ((3, 2, 4, 2) if left else (3, 2, 2, 4))
    np.testing.assert_allclose(npy(x), ref, atol=1e-10)
    if left and not adjoint:
        ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch warns once a process
        with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
            x2 = b.lu_solve(LU, piv)
        np.testing.assert_array_equal(npy(x2), npy(x))


@pytest.mark.parametrize("args,msg", [
    (((4, 4), (4,), (4,)), "linalg.lu_solve: The input tensor B must have at least 2 dimensions."),
    (((4,), (4,), (4, 2)), "torch.linalg.lu_solve: The input tensor A must have at least 2 "
                           "dimensions."),
    (((3, 4), (3,), (3, 2)), "torch.linalg.lu_solve: A must be batches of square matrices, but "
                             "they are 3 by 4 matrices"),
    (((4, 4), (3,), (4, 2)), "linalg.lu_solve: Number of pivots per batch should be same as the "
                             "dimension of the matrix"),
    (((3, 4, 4), (2, 4), (4, 2)), r"linalg.lu_solve: Expected LU.shape\[:-1\] and pivots.shape "
                                  r"to be the same, but got pivots with shape \[2, 4\] instead"),
    (((4, 4), (4,), (3, 2)), r"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                             r"AX = B \(4x4 and 3x2\)"),
    (((3, 4, 4), (3, 4), (2, 4, 2)), r"The size of tensor a \(3\) must match the size of tensor b "
                                     r"\(2\) at non-singleton dimension 0"),
])
def test_lu_solve_errors(args, msg):
    (sl, sp, sb) = args
    piv = ember.ones(*sp, dtype=ember.int32)
    with pytest.raises(RuntimeError, match=msg):
        LA.lu_solve(rand(*sl), piv, rand(*sb))


def test_lu_solve_dtype_errors():
    LU, piv = LA.lu_factor(rand(4, 4))
    with pytest.raises(RuntimeError, match="linalg.lu_solve: Expected LU and B to have the same "
                       "dtype, but found LU of type Double and B of type Float instead"):
        LA.lu_solve(LU, piv, rand(4, 2, dtype=np.float32))
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        LA.lu_solve(LU, piv.long(), rand(4, 2))
    with pytest.raises(RuntimeError, match="torch.linalg.lu_solve: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        LA.lu_solve(LU.long(), piv, rand(4, 2).long())
    with pytest.raises(RuntimeError, match="linalg.lu_solve: Incompatible shapes of A and B for "
                                           r"the equation XA = B \(4x4 and 2x3\)"):
        LA.lu_solve(LU, piv, rand(2, 3), left=False)


def test_solve_ex():
    a, b = well_conditioned(2, 3, 3), rand(3)
    x, info = LA.solve_ex(a, b)
    assert type(LA.solve_ex(a, b)).__name__ == "linalg_solve_ex"
    np.testing.assert_allclose(npy(x), np.linalg.solve(npy(a), npy(b)[:, None])[..., 0],
                               rtol=1e-10)
    assert info.tolist() == [0, 0] and info.dtype == ember.int32
    s = ember.tensor(SINGULAR, dtype=ember.float64)
    x, info = LA.solve_ex(s, ember.ones(3, dtype=ember.float64))
    assert info.item() == 3
    assert np.isnan(x[0].item()) and np.isinf(x[1].item())  # LAPACK's result: [nan, -inf, inf]
    assert LA.solve_ex(s.expand(2, 3, 3), rand(4, 1, 3, 1)).info.shape == (2,)
    with pytest.raises(LA.LinAlgError, match=r"torch.linalg.solve_ex: \(Batch element 1\): The "
                                             "solver failed because the input matrix is singular."):
        LA.solve_ex(ember.stack([ember.eye(3, dtype=ember.float64), s]), rand(3),
                    check_errors=True)
    x = LA.solve_ex(a[0], rand(2, 3), left=False).result
    np.testing.assert_allclose(npy(x) @ npy(a[0]), npy(x @ a[0]), atol=1e-12)


# -- triangular solves -----------------------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(upper, left, unit):
    a = rand(2, 1, 40, 40) + 8 * ember.tensor(np.eye(40))
    b = rand(3, 40, 5) if left else rand(3, 5, 40)
    x = LA.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)
    T = np.triu(npy(a)) if upper else np.tril(npy(a))
    if unit:
        T = T - np.eye(40) * np.diagonal(T, 0, -2, -1)[..., None] + np.eye(40)
    assert x.shape == (2, 3) + b.shape[-2:]
    np.testing.assert_allclose(T @ npy(x) if left else npy(x) @ T,
                               np.broadcast_to(npy(b), x.shape), atol=1e-8)


def test_solve_triangular_zero_diagonal_and_dtypes():
    x = LA.solve_triangular(ember.zeros(2, 2), ember.ones(2, 1), upper=True)
    assert np.isnan(x[0, 0].item()) and np.isinf(x[1, 0].item())  # as LAPACK: no error
    x = LA.solve_triangular(ember.tensor([[1.0, 2], [0, 0]]), ember.ones(2, 1), upper=True)
    assert x.tolist() == [[-np.inf], [np.inf]]
    a = rand(3, 3) + 3 * ember.tensor(np.eye(3))
    assert LA.solve_triangular(a, rand(3, 2, dtype=np.float32), upper=True).dtype == ember.float64
    assert LA.solve_triangular(a.float(), rand(3, 2), upper=True).dtype == ember.float32


@pytest.mark.parametrize("sa,sb,kw,msg", [
    ((3,), (3, 2), {}, "linalg.solve_triangular: The input tensor A must have at least 2 "
                       "dimensions."),
    ((3, 3), (3,), {}, "linalg.solve_triangular: The input tensor B must have at least 2 "
                       "dimensions."),
    ((3, 4), (3, 2), {}, "linalg.solve_triangular: A must be batches of square matrices, but "
                         "they are 3 by 4 matrices"),
    ((4, 4), (3, 2), {}, r"Incompatible shapes of A and B for the equation AX = B \(4x4 and "
                         r"3x2\)"),
    ((4, 4), (4, 2), {"left": False}, r"the equation XA = B \(4x4 and 4x2\)"),
    ((3, 4, 4), (2, 4, 2), {}, r"The size of tensor a \(3\) must match the size of tensor b \(2\) "
                               r"at non-singleton dimension 0"),
])
def test_solve_triangular_errors(sa, sb, kw, msg):
    with pytest.raises(RuntimeError, match=msg):
        LA.solve_triangular(rand(*sa), rand(*sb), upper=True, **kw)


def test_solve_triangular_requires_upper_and_float():
    with pytest.raises(TypeError):
        LA.solve_triangular(rand(3, 3), rand(3, 2))
    with pytest.raises(NotImplementedError, match="\"triangular_solve_cpu\" not implemented for "
                                                  "'Long'"):
        LA.solve_triangular(ember.ones(3, 3, dtype=ember.int64), ember.ones(3, 1,
                                                                        dtype=ember.int64),
                            upper=True)


def test_triangular_solve():
    a, b = rand(3, 3) + 3 * ember.tensor(np.eye(3)), rand(2, 3, 2)
    ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch warns once a process
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        r = ember.triangular_solve(b, a)
    assert type(r).__name__ == "triangular_solve"
    np.testing.assert_allclose(np.triu(npy(a)) @ npy(r.solution), npy(b), atol=1e-12)
    assert r.cloned_coefficient.shape == (2, 3, 3)
    np.testing.assert_array_equal(npy(r.cloned_coefficient[1]), npy(a))
    x = quiet(b.triangular_solve, a, upper=False, transpose=True).solution
    np.testing.assert_allclose(np.tril(npy(a)).T @ npy(x), npy(b), atol=1e-12)
    with pytest.raises(RuntimeError, match="torch.triangular_solve: Expected b to have at least 2 "
                                           "dimensions, but it has 1 dimensions instead"):
        quiet(ember.triangular_solve, rand(3), a)
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype, but found b "
                                           "of type Float and A of type Double instead."):
        quiet(ember.triangular_solve, rand(3, 2, dtype=np.float32), a)
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for triangular_solve: each "
                                           "A matrix is 3 by 3 but each b matrix is 2 by 2"):
        quiet(ember.triangular_solve, rand(2, 2), a)


# -- Cholesky-based --------------------------------------------------------------------------

@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    x = rand(2, 4, 4)
    F = spd_factor(x, upper)
    A = npy(x) @ np.swapaxes(npy(x), -1, -2) + 3 * np.eye(4)
    b = rand(3, 1, 4, 2)
    np.testing.assert_allclose(npy(ember.cholesky_solve(b, F, upper)), np.linalg.solve(A, npy(b)),
                               atol=1e-12)
    np.testing.assert_allclose(npy(F.cholesky_inverse(upper)), np.linalg.inv(A), atol=1e-12)
    with pytest.raises(RuntimeError, match="b should have at least 2 dimensions, but has 1 "
                                           "dimensions instead"):
        ember.cholesky_solve(rand(4), F)
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for cholesky_solve: each A "
                                           "matrix is 4 by 4 but each b matrix is 3 by 2"):
        ember.cholesky_solve(rand(3, 2), F)
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype, but found b "
                                           "of type Float and A of type Double instead."):
        ember.cholesky_solve(rand(4, 2, dtype=np.float32), F)


def test_cholesky_inverse_errors():
    with pytest.raises(LA.LinAlgError, match=r"cholesky_inverse: \(Batch element 0\): The diagonal "
                       "element 1 is zero, the inversion could not be completed because the input "
                       "matrix is singular."):
        ember.cholesky_inverse(ember.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="cholesky_inverse: The diagonal element 2 is zero"):
        ember.cholesky_inverse(ember.tensor([[1.0, 0], [1, 0]]))
    with pytest.raises(RuntimeError, match="cholesky_inverse: A must be batches of square "
                                           "matrices, but they are 3 by 4 matrices"):
        ember.cholesky_inverse(rand(3, 4))
    with pytest.raises(NotImplementedError, match="\"cholesky_inverse_out_cpu\" not implemented "
                                                  "for 'Long'"):
        ember.cholesky_inverse(ember.ones(2, 2, dtype=ember.int64))


# -- Householder QR --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 6, 4)])
def test_geqrf_matches_reference(shape):
    a = rand(*shape)
    r = ember.geqrf(a)
    assert type(r).__name__ == "geqrf" and r.tau.shape == shape[:-2] + (min(shape[-2:]),)
    flat = npy(a).reshape((-1,) + shape[-2:])
    got_a = npy(r.a).reshape(flat.shape)
    got_tau = npy(r.tau).reshape(len(flat), -1)
    for i, m in enumerate(flat):
        ref_a, ref_tau = geqrf_reference(m)
        np.testing.assert_allclose(got_a[i], ref_a, atol=1e-12)
        np.testing.assert_allclose(got_tau[i], ref_tau, atol=1e-12)
        Q = q_from_reflectors(got_a[i], got_tau[i], full=True)
        np.testing.assert_allclose(Q @ np.triu(got_a[i]), m, atol=1e-12)


def test_geqrf_zero_column_and_errors():
    r = ember.geqrf(ember.zeros(3, 3))
    assert r.tau.tolist() == [0.0, 0.0, 0.0] and r.a.tolist() == [[0.0] * 3] * 3
    with pytest.raises(RuntimeError, match="torch.geqrf: input must have at least 2 dimensions."):
        ember.geqrf(rand(3))
    with pytest.raises(NotImplementedError, match="\"geqrf_cpu\" not implemented for 'Long'"):
        ember.geqrf(ember.ones(3, 3, dtype=ember.int64))
    x = rand(4, 3, grad=True)
    out = ember.geqrf(x).a
    assert out.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        out.sum().backward()


@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((4, 4), 4), ((6, 4), 2), ((2, 5, 3), 3)])
def test_householder_product_and_orgqr(shape, k):
    a, tau = ember.geqrf(rand(*shape))
    tau = tau[..., :k]
    Q = LA.householder_product(a, tau)
    assert Q.shape == shape
    flat_a = npy(a).reshape((-1,) + shape[-2:])
    flat_t = npy(tau).reshape(len(flat_a), -1)
    for i in range(len(flat_a)):
        np.testing.assert_allclose(Q.numpy().reshape(flat_a.shape)[i],
                                   q_from_reflectors(flat_a[i], flat_t[i]), atol=1e-12)
    np.testing.assert_array_equal(npy(a.orgqr(tau)), npy(Q))
    if k == shape[-1]:  # Q of the QR decomposition: orthonormal columns, Q R = A
        np.testing.assert_allclose(np.swapaxes(npy(Q), -1, -2) @ npy(Q), np.eye(shape[-1]) +
                                   np.zeros(shape[:-2] + (1, 1)), atol=1e-12)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr(left, transpose):
    a, tau = ember.geqrf(rand(2, 5, 3))
    c = rand(2, 5, 2) if left else rand(2, 2, 5)
    r = ember.ormqr(a, tau, c, left, transpose)
    Q = np.stack([q_from_reflectors(m, t, full=True) for m, t in zip(npy(a), npy(tau))])
    if transpose:
        Q = np.swapaxes(Q, -1, -2)
    np.testing.assert_allclose(npy(r), Q @ npy(c) if left else npy(c) @ Q, atol=1e-12)
    np.testing.assert_allclose(npy(a.ormqr(tau, c, left, transpose)), npy(r), atol=1e-15)


@pytest.mark.parametrize("args,msg", [
    ((lambda: (rand(3, 5), rand(3))), r"input.shape\[-2\] must be greater than or equal to "
                                      r"input.shape\[-1\]"),
    ((lambda: (rand(5, 3), rand(4))), r"input.shape\[-1\] must be greater than or equal to "
                                      r"tau.shape\[-1\]"),
    ((lambda: (rand(2, 5, 3), rand(3, 3))), r"Expected batch dimensions of tau to be equal to "
                                            r"input.shape\[:-2\], but got \[3\]"),
    ((lambda: (rand(2, 5, 3), rand(3))), "Expected tau to have one dimension less than input, but "
                                         "got tau.ndim equal to 1 and input.ndim is equal to 3"),
    ((lambda: (rand(5, 3, dtype=np.float32), rand(3))), "tau dtype Double does not match input "
                                                        "dtype Float"),
    ((lambda: (rand(5), rand(3))), "input must have at least 2 dimensions."),
])
def test_householder_product_errors(args, msg):
    with pytest.raises(RuntimeError, match="torch.linalg.householder_product: " + msg):
        LA.householder_product(*args())


def test_ormqr_errors():
    a, tau = ember.geqrf(rand(5, 3))
    c = rand(5, 2)
    with pytest.raises(RuntimeError, match=r"torch.ormqr: other.shape\[-2\] must be equal to "
                                           r"input.shape\[-2\]"):
        ember.ormqr(a, tau, rand(4, 2))
    with pytest.raises(RuntimeError, match=r"torch.ormqr: other.shape\[-1\] must be equal to "
                                           r"input.shape\[-2\]"):
        ember.ormqr(a, tau, c, left=False)
    with pytest.raises(RuntimeError, match=r"torch.ormqr: tau.shape\[-1\] must be equal to "
                                           r"min\(other.shape\[-2\], input.shape\[-1\]\)"):
        ember.ormqr(a, tau[:2], c)
    with pytest.raises(RuntimeError, match="torch.ormqr: Expected input and other to have the same "
                                           "dtype, but input has dtypeDouble and other has dtype "
                                           "Float"):
        ember.ormqr(a, tau, c.float())
    with pytest.raises(RuntimeError, match="torch.ormqr: other must have at least 2 dimensions."):
        ember.ormqr(a, tau, c[0])
    with pytest.raises(NotImplementedError, match="\"ormqr_cpu\" not implemented for 'Long'"):
        ember.ormqr(a.long(), tau.long(), c.long())


# -- LDL -------------------------------------------------------------------------------------

def test_ldl_factor_reconstructs_and_solves():
    a = rand(6, 7, 7)
    a[0] = a[0] + a[0].mT  # symmetric; the others: only the lower triangle is read
    a[1, 0, 0] = 0.0  # forces a 2x2 block or an interchange at the first column
    LD, piv = LA.ldl_factor(a)
    assert type(LA.ldl_factor(a)).__name__ == "linalg_ldl_factor"
    assert piv.dtype == ember.int32 and piv.shape == (6, 7)
    np.testing.assert_array_equal(np.triu(npy(LD), 1), 0)
    assert (piv.numpy() < 0).any() and (piv.numpy() > 0).any()  # both block sizes occur
    for i in range(6):
        np.testing.assert_allclose(ldl_reconstruct(npy(LD)[i], piv.numpy()[i]),
                                   sym_lower(npy(a)[i]), atol=1e-10)
    b = rand(2, 1, 7, 3)
    x = LA.ldl_solve(LD, piv, b)
    assert x.shape == (2, 6, 7, 3)
    np.testing.assert_allclose(sym_lower(npy(a)) @ npy(x), np.broadcast_to(npy(b), x.shape),
                               atol=1e-9)


def test_ldl_factor_ex_singular_and_errors():
    r = LA.ldl_factor_ex(ember.tensor([[1.0, 0], [0, 0]]))
    assert type(r).__name__ == "linalg_ldl_factor_ex"
    assert r.info.item() == 2 and r.pivots.tolist() == [1, 2]
    assert LA.ldl_factor_ex(ember.zeros(2, 3, 3)).info.tolist() == [1, 1]
    with pytest.raises(LA.LinAlgError, match=r"torch.linalg.ldl_factor: \(Batch element 0\)"):
        LA.ldl_factor(ember.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match="torch.linalg.ldl_factor_ex: A must be batches of "
                                           "square matrices, but they are 3 by 4 matrices"):
        LA.ldl_factor(rand(3, 4))
    with pytest.raises(RuntimeError, match="torch.linalg.ldl_factor_ex: Expected a floating point "
                                           "or complex tensor as input. Got Long"):
        LA.ldl_factor(ember.ones(3, 3, dtype=ember.int64))
    LD, piv = LA.ldl_factor(rand(4, 4))
    with pytest.raises(RuntimeError, match=r"Expected LD.shape\[:-1\] and pivots.shape to be the "
                                           r"same, but got pivots with shape \[3\] instead"):
        LA.ldl_solve(LD, piv[:3], rand(4, 2))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for torch.linalg.ldl_solve: "
                                           "each A matrix is 4 by 4 but each b matrix is 3 by 2"):
        LA.ldl_solve(LD, piv, rand(3, 2))
    with pytest.raises(RuntimeError, match="Expected pivots to be integers. Got Float"):
        LA.ldl_solve(LD, piv.float(), rand(4, 2))
    x = rand(4, 4, grad=True)
    out = LA.ldl_factor(x).LD
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not "
                                           "implemented"):
        out.sum().backward()


# -- matrix_exp, cond, tensorinv, tensorsolve, vander, diagonal ------------------------------

def test_matrix_exp_every_degree():
    # norms spanning every Taylor degree and the scaled-and-squared range, in one batch
    base = RNG.standard_normal((9, 4, 4))
    base /= np.abs(base).sum(-2).max(-1)[:, None, None]
    scales = np.array([1e-17, 1e-9, 1e-4, 1e-2, 0.2, 0.9, 3.0, 20.0, 100.0])
    a = ember.tensor(base * scales[:, None, None])
    out = LA.matrix_exp(a)
    for i in range(9):
        np.testing.assert_allclose(npy(out)[i], expm_reference(npy(a)[i]), rtol=1e-10, atol=1e-13)
    s = rand(3, 3)
    s = s + s.mT
    w, v = np.linalg.eigh(npy(s))
    np.testing.assert_allclose(npy(s.matrix_exp()), (v * np.exp(w)) @ v.T, rtol=1e-12)
    assert ember.matrix_exp(rand(2, 3, 3, dtype=np.float32)).dtype == ember.float32
    np.testing.assert_allclose(npy(LA.matrix_exp(ember.tensor([[[2.0]]]))), [[[np.exp(2.0)]]])
    assert LA.matrix_exp(rand(0, 0)).shape == (0, 0)


def test_matrix_exp_errors():
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: The input tensor A must have at "
                                           "least 2 dimensions."):
        ember.matrix_exp(rand(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: A must be batches of square "
                                           "matrices, but they are 3 by 4 matrices"):
        LA.matrix_exp(rand(3, 4))
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        LA.matrix_exp(ember.ones(2, 2, dtype=ember.int64))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")])
def test_cond(p):
    a = rand(2, 4, 4)
    np.testing.assert_allclose(npy(LA.cond(a, p)), np.linalg.cond(npy(a), p), rtol=1e-10)
    if p in (None, 2, -2):  # any shape
        wide = rand(3, 5)
        np.testing.assert_allclose(npy(LA.cond(wide, p)), np.linalg.cond(npy(wide), p),
                                   rtol=1e-10)


def test_cond_singular_empty_and_errors():
    s = ember.tensor(SINGULAR, dtype=ember.float64)
    for p in ("fro", 1, float("inf")):
        assert LA.cond(s, p).item() == np.inf
    assert LA.cond(s).item() > 1e15
    assert LA.cond(ember.zeros(2, 0, 0)).tolist() == [0.0, 0.0]
    wide = rand(3, 5)
    np.testing.assert_allclose(LA.cond(wide).item(), np.linalg.cond(npy(wide)), rtol=1e-10)
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        LA.cond(rand(3, 3), 3)
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: foo"):
        LA.cond(rand(3, 3), "foo")
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=fro\): A must be batches of square "
                                           r"matrices, but they are 3 by 4 matrices"):
        LA.cond(rand(3, 4), "fro")
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=-inf\)"):
        LA.cond(rand(3, 4), float("-inf"))
    with pytest.raises(RuntimeError, match="linalg.cond: The input tensor must have at least 2 "
                                           "dimensions."):
        LA.cond(rand(3))


def test_tensorinv_and_tensorsolve():
    a = rand(4, 6, 8, 3)
    ainv = LA.tensorinv(a, ind=2)
    assert ainv.shape == (8, 3, 4, 6)
    np.testing.assert_allclose(npy(ainv), np.linalg.tensorinv(npy(a), ind=2), rtol=1e-8)
    with pytest.raises(RuntimeError, match="Expected a strictly positive integer for 'ind', but "
                                           "got 0"):
        LA.tensorinv(a, ind=0)
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind"
                                           r"\]\), but got 144 != 4"):
        LA.tensorinv(a, ind=1)
    with pytest.raises(LA.LinAlgError, match="^inv: The diagonal element 1 is zero"):
        LA.tensorinv(ember.zeros(2, 2, 4), ind=2)
    A, B = rand(2, 3, 6), rand(2, 3)
    np.testing.assert_allclose(npy(LA.tensorsolve(A, B)), np.linalg.tensorsolve(npy(A), npy(B)),
                               rtol=1e-8)
    A, B = rand(6, 2, 3), rand(2, 3)  # dim 0 moved to the end: (2, 3, 6)
    X = LA.tensorsolve(A, B, dims=(0,))
    np.testing.assert_allclose(npy(X), np.linalg.tensorsolve(npy(A), npy(B), axes=(0,)),
                               rtol=1e-8)
    with pytest.raises(RuntimeError, match=r"prod\(self.shape\[other.ndim:\]\) == "
                                           r"prod\(self.shape\[:other.ndim\]\), but got 6 != 8"):
        LA.tensorsolve(rand(2, 3, 6), rand(2, 4))


def test_vander():
    x = ember.tensor([1, 2, 3])
    assert LA.vander(x).tolist() == [[1, 1, 1], [1, 2, 4], [1, 3, 9]]
    assert LA.vander(x).dtype == ember.int64
    assert LA.vander(ember.tensor([1, 2], dtype=ember.int32)).dtype == ember.int64
    np.testing.assert_allclose(npy(LA.vander(ember.tensor([1.0, 2, 3]), N=2)), [[1, 1], [1, 2],
                                                                              [1, 3]])
    b = rand(2, 3)
    np.testing.assert_allclose(npy(LA.vander(b)), np.stack([np.vander(r, increasing=True)
                                                            for r in npy(b)]))
    assert ember.vander(x).tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert ember.vander(x, N=2, increasing=True).tolist() == [[1, 1], [1, 2], [1, 3]]
    assert ember.vander(x, N=0).shape == (3, 0) and ember.vander(x, N=1).tolist() == [[1]] * 3
    assert ember.vander(ember.tensor([True, False])).dtype == ember.int64
    assert ember.vander(rand(3, dtype=np.float32)).dtype == ember.float32
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        LA.vander(ember.tensor([1.0, 2]), N=1)
    with pytest.raises(RuntimeError, match="linalg.vander supports floating point, complex, and "
                                           "integer tensors, but got Bool"):
        LA.vander(ember.tensor([True]))
    with pytest.raises(TypeError):
        LA.vander(x, 2)  # N is keyword-only in torch.linalg.vander
    with pytest.raises(RuntimeError, match="N must be non-negative."):
        ember.vander(x, N=-1)
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor."):
        ember.vander(rand(2, 3))
    g = ember.tensor([0.0, 1.0, 2.0, 0.0], dtype=ember.float64, requires_grad=True)
    LA.vander(g).sum().backward()
    assert g.grad.tolist() == [1.0, 6.0, 17.0, 1.0]  # d/dx (1 + x + x^2 + x^3)


def test_linalg_diagonal():
    a = rand(2, 3, 4)
    np.testing.assert_array_equal(npy(LA.diagonal(a)), np.diagonal(npy(a), 0, -2, -1))
    np.testing.assert_array_equal(npy(LA.diagonal(a, offset=1, dim1=0, dim2=2)),
                                  np.diagonal(npy(a), 1, 0, 2))
    with pytest.raises(TypeError):
        LA.diagonal(a, 1)


# -- torch-level spellings -------------------------------------------------------------------

def test_torch_lu_and_tensor_methods():
    a = rand(3, 3)
    ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch warns once a process
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        LU, piv = ember.lu(a)
    np.testing.assert_array_equal(npy(LU), npy(LA.lu_factor(a).LU))
    r = a.lu(get_infos=True)  # (warned once already, as PyTorch)
    assert type(r).__name__ == "_lu_with_info" and r.info.item() == 0
    assert ember.lu(ember.tensor(SINGULAR), get_infos=True).info.item() == 3  # no raise
    for name in ("cholesky_inverse", "cholesky_solve", "lu_solve", "geqrf", "orgqr", "ormqr",
                 "matrix_exp", "triangular_solve", "lu"):
        assert hasattr(ember.Tensor, name) and hasattr(ember, name)
    for name in ("lu_unpack", "vander"):
        assert hasattr(ember, name) and not hasattr(ember.Tensor, name)


def test_keyword_names_are_pytorchs():
    # PyTorch's Python bindings name the parameters after its native schemas, which is not
    # always what its docs say: these are the names torch 2.13 accepts
    a, b = well_conditioned(3, 3), rand(3, 2)
    LU, piv = LA.lu_factor(A=a)
    calls = [
        lambda: LA.cond(input=a, p=1), lambda: LA.diagonal(A=a, offset=1),
        lambda: LA.householder_product(input=ember.geqrf(input=a).a, tau=ember.ones(2).double()),
        lambda: LA.ldl_factor(input=a), lambda: LA.ldl_factor_ex(input=a),
        lambda: LA.ldl_solve(LD=LA.ldl_factor(a).LD, pivots=LA.ldl_factor(a).pivots, B=b),
        lambda: LA.lu(A=a), lambda: LA.lu_factor_ex(A=a), lambda: LA.lu_solve(LU=LU, pivots=piv,
                                                                              B=b),
        lambda: LA.matrix_exp(input=a), lambda: LA.solve_ex(A=a, B=b),
        lambda: LA.solve_triangular(input=a, B=b, upper=True),
        lambda: LA.tensorinv(input=a, ind=1), lambda: LA.tensorsolve(input=a, other=b[:, 0]),
        lambda: LA.vander(x=b[:, 0], N=3), lambda: ember.cholesky_inverse(input=a),
        lambda: ember.cholesky_solve(input=b, input2=a),
        lambda: quiet(ember.lu_solve, input=b, LU_data=LU, LU_pivots=piv),
        lambda: ember.lu_unpack(LU_data=LU, LU_pivots=piv), lambda: ember.geqrf(input=a),
        lambda: ember.orgqr(input=a, input2=ember.ones(2).double()),
        lambda: ember.ormqr(input=a, input2=ember.ones(3).double(), input3=b),
        lambda: ember.matrix_exp(input=a), lambda: ember.vander(x=b[:, 0], N=2),
        lambda: quiet(ember.triangular_solve, input=b, A=a), lambda: quiet(ember.lu, A=a),
    ]
    for call in calls:
        call()


def test_out_arguments():
    a = rand(3, 3)
    out = (ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32))
    r = LA.lu_factor(a, out=out)
    assert r.LU is out[0] and out[0].shape == (3, 3)
    res = ember.empty(0, dtype=ember.float64)
    LA.solve_triangular(a, a, upper=True, out=res)
    np.testing.assert_allclose(npy(res), npy(LA.solve_triangular(a, a, upper=True)))


# -- gradients ---------------------------------------------------------------------------------

def _lu_factor_outputs(t):
    return LA.lu_factor(t).LU


GRADS = {
    "solve_triangular": (lambda a, b: LA.solve_triangular(a, b, upper=True),
                         lambda: (well_conditioned(3, 3, grad=True), rand(2, 3, 2, grad=True))),
    "solve_triangular_right_unit": (
        lambda a, b: LA.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        lambda: (well_conditioned(3, 3, grad=True), rand(2, 3, grad=True))),
    "triangular_solve": (lambda b, a: tuple(quiet(ember.triangular_solve, b, a, transpose=True)),
                         lambda: (rand(3, 2, grad=True), well_conditioned(3, 3, grad=True))),
    "lu_square": (lambda t: tuple(LA.lu(t))[1:], lambda: (rand(2, 3, 3, grad=True),)),
    "lu_wide": (lambda t: tuple(LA.lu(t))[1:], lambda: (rand(3, 5, grad=True),)),
    "lu_tall": (lambda t: tuple(LA.lu(t))[1:], lambda: (rand(5, 3, grad=True),)),
    "lu_U_only": (lambda t: LA.lu(t).U, lambda: (rand(3, 4, grad=True),)),
    "lu_factor_square": (_lu_factor_outputs, lambda: (rand(3, 3, grad=True),)),
    "lu_factor_wide": (_lu_factor_outputs, lambda: (rand(2, 4, grad=True),)),
    "lu_factor_tall": (_lu_factor_outputs, lambda: (rand(4, 2, grad=True),)),
    "lu_factor_unpack": (lambda t: tuple(ember.lu_unpack(*LA.lu_factor(t)))[1:],
                         lambda: (rand(3, 3, grad=True),)),
    "lu_solve": (lambda t, b: LA.lu_solve(*LA.lu_factor(t), b),
                 lambda: (well_conditioned(3, 3, grad=True), rand(3, 2, grad=True))),
    "lu_solve_right_adjoint": (lambda t, b: LA.lu_solve(*LA.lu_factor(t), b, left=False,
                                                        adjoint=True),
                               lambda: (well_conditioned(3, 3, grad=True), rand(2, 3, grad=True))),
    "solve_ex": (lambda a, b: LA.solve_ex(a, b).result,
                 lambda: (well_conditioned(3, 3, grad=True), rand(3, grad=True))),
    "cholesky_solve": (lambda b, x: ember.cholesky_solve(b, spd_factor(x)),
                       lambda: (rand(2, 3, 2, grad=True), rand(3, 3, grad=True))),
    "cholesky_solve_upper": (lambda b, x: ember.cholesky_solve(b, spd_factor(x, True), True),
                             lambda: (rand(3, 2, grad=True), rand(3, 3, grad=True))),
    "cholesky_inverse": (lambda x: ember.cholesky_inverse(spd_factor(x)),
                         lambda: (rand(3, 3, grad=True),)),
    "cholesky_inverse_upper": (lambda x: ember.cholesky_inverse(spd_factor(x, True), True),
                               lambda: (rand(3, 3, grad=True),)),
    "householder_product": (LA.householder_product,
                            lambda: (rand(4, 3, grad=True), rand(2, grad=True))),
    "ormqr": (ember.ormqr, lambda: (rand(4, 3, grad=True), rand(3, grad=True),
                                    rand(4, 2, grad=True))),
    "ormqr_right_transpose": (lambda a, t, c: ember.ormqr(a, t, c, False, True),
                              lambda: (rand(4, 2, grad=True), rand(2, grad=True),
                                       rand(3, 4, grad=True))),
    "matrix_exp": (LA.matrix_exp, lambda: (rand(3, 3, grad=True),)),
    "matrix_exp_scaled": (LA.matrix_exp,
                          lambda: (ember.tensor(4 * RNG.standard_normal((2, 3, 3)),
                                                requires_grad=True),)),
    "cond_2": (LA.cond, lambda: (rand(3, 3, grad=True),)),
    "cond_1": (lambda a: LA.cond(a, 1), lambda: (rand(3, 3, grad=True),)),
    "cond_fro": (lambda a: LA.cond(a, "fro"), lambda: (rand(3, 3, grad=True),)),
    "tensorinv": (lambda a: LA.tensorinv(a, 1), lambda: (well_conditioned(4, 2, 2, grad=True),)),
    "tensorsolve": (LA.tensorsolve, lambda: (rand(2, 3, 6, grad=True), rand(2, 3, grad=True))),
    "linalg_vander": (LA.vander, lambda: (rand(2, 3, grad=True),)),
    "vander": (lambda x: ember.vander(x, 4), lambda: (rand(3, grad=True),)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradcheck(name):
    fn, make = GRADS[name]
    assert gradcheck(fn, make())


GRADGRAD = ["solve_triangular", "triangular_solve", "lu_square", "lu_wide", "lu_tall",
            "lu_factor_square", "lu_factor_tall", "lu_solve", "cholesky_solve",
            "cholesky_inverse", "householder_product", "ormqr", "matrix_exp", "cond_1",
            "linalg_vander"]


@pytest.mark.parametrize("name", GRADGRAD)
def test_gradgradcheck(name):
    fn, make = GRADS[name]
    assert gradgradcheck(fn, make())


def test_grad_fn_names_and_output_numbers():
    a = rand(3, 3, grad=True)
    P, L, U = LA.lu(a)
    assert not P.requires_grad and L.grad_fn is U.grad_fn
    assert L.grad_fn.name() == "LinalgLuBackward0" and (L.output_nr, U.output_nr) == (1, 2)
    LU, piv = LA.lu_factor(a)
    assert LU.grad_fn.name() == "LinalgLuFactorExBackward0" and not piv.requires_grad
    assert LA.matrix_exp(a).grad_fn.name() == "LinalgMatrixExpBackward0"
    assert LA.solve_triangular(a, a, upper=True).grad_fn.name() == \
        "LinalgSolveTriangularBackward0"
    assert ember.cholesky_inverse(a).grad_fn.name() == "CholeskyInverseBackward0"


# -- parity with PyTorch ---------------------------------------------------------------------

def _t(torch, t, grad=False):
    x = torch.tensor(npy(t))
    return x.requires_grad_() if grad else x


def test_torch_parity_lu_family(torch):
    a = rand(2, 6, 4)
    LU, piv = LA.lu_factor(a)
    tLU, tpiv = torch.linalg.lu_factor(_t(torch, a))
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(npy(LU), tLU.numpy(), atol=1e-13)
    for x, y in zip(LA.lu(a), torch.linalg.lu(_t(torch, a))):
        np.testing.assert_allclose(npy(x), y.numpy(), atol=1e-13)
    for x, y in zip(ember.lu_unpack(LU, piv), torch.lu_unpack(tLU, tpiv)):
        np.testing.assert_allclose(npy(x), y.numpy(), atol=1e-13)
    sq = rand(4, 4)
    ta = _t(torch, sq, grad=True)
    ea = sq.requires_grad_()
    weights = rand(4, 4)
    (LA.lu_factor(ea).LU * weights).sum().backward()
    (torch.linalg.lu_factor(ta).LU * _t(torch, weights)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-10)
    LUs, pivs = LA.lu_factor(sq.detach())
    LUs.requires_grad_()
    tLUs = _t(torch, LUs, grad=True)
    b = rand(4, 2)
    LA.lu_solve(LUs, pivs, b, adjoint=True).sum().backward()
    torch.linalg.lu_solve(tLUs, torch.tensor(pivs.numpy()), _t(torch, b),
                          adjoint=True).sum().backward()
    np.testing.assert_allclose(LUs.grad.numpy(), tLUs.grad.numpy(), atol=1e-10)


def test_torch_parity_singular_solves(torch):
    s = ember.tensor(SINGULAR, dtype=ember.float64)
    for x, y in zip(LA.solve_ex(s, ember.ones(3, dtype=ember.float64)),
                    torch.linalg.solve_ex(_t(torch, s), torch.ones(3, dtype=torch.float64))):
        np.testing.assert_array_equal(npy(x), y.numpy())
    z = ember.zeros(2, 2)
    np.testing.assert_array_equal(npy(LA.solve_triangular(z, ember.ones(2, 1), upper=True)),
                                  torch.linalg.solve_triangular(torch.zeros(2, 2),
                                                                torch.ones(2, 1),
                                                                upper=True).numpy())


def test_torch_parity_cholesky_gradients(torch):
    L = spd_factor(rand(4, 4)).detach()
    L = L + 0.1 * rand(4, 4).triu(1)  # PyTorch's gradients are not projected on the triangle
    b = rand(4, 2)
    eL, tL = L.clone().requires_grad_(), _t(torch, L, grad=True)
    eb, tb = b.clone().requires_grad_(), _t(torch, b, grad=True)
    np.testing.assert_allclose(npy(ember.cholesky_solve(eb, eL)),
                               torch.cholesky_solve(tb, tL).detach().numpy(), atol=1e-12)
    ember.cholesky_solve(eb, eL).sum().backward()
    torch.cholesky_solve(tb, tL).sum().backward()
    np.testing.assert_allclose(eL.grad.numpy(), tL.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), atol=1e-10)
    eL.grad, tL.grad = None, None
    (ember.cholesky_inverse(eL, True) * b.sum()).sum().backward()
    (torch.cholesky_inverse(tL, True) * float(b.sum())).sum().backward()
    np.testing.assert_allclose(eL.grad.numpy(), tL.grad.numpy(), atol=1e-10)


def test_torch_parity_householder_and_ldl(torch):
    a = rand(2, 6, 4)
    r, t = ember.geqrf(a), torch.geqrf(_t(torch, a))
    np.testing.assert_allclose(npy(r.a), t.a.numpy(), atol=1e-13)
    np.testing.assert_allclose(npy(r.tau), t.tau.numpy(), atol=1e-13)
    c = rand(2, 3, 6)
    np.testing.assert_allclose(npy(ember.ormqr(r.a, r.tau, c, False, True)),
                               torch.ormqr(t.a, t.tau, _t(torch, c), False, True).numpy(),
                               atol=1e-13)
    ea, eta = r.a.clone().requires_grad_(), r.tau.clone().requires_grad_()
    ta, tta = t.a.clone().requires_grad_(), t.tau.clone().requires_grad_()
    (LA.householder_product(ea, eta) * c[..., :4].sum()).sum().backward()
    (torch.linalg.householder_product(ta, tta) * float(c[..., :4].sum())).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(eta.grad.numpy(), tta.grad.numpy(), atol=1e-10)
    s = rand(5, 9, 9)
    s[:2] = s[:2] + s[:2].mT
    LD, piv, info = LA.ldl_factor_ex(s)
    tr = torch.linalg.ldl_factor_ex(_t(torch, s))
    np.testing.assert_array_equal(piv.numpy(), tr.pivots.numpy())
    np.testing.assert_allclose(npy(LD), tr.LD.numpy(), atol=1e-10)
    b = rand(5, 9, 2)
    np.testing.assert_allclose(npy(LA.ldl_solve(LD, piv, b)),
                               torch.linalg.ldl_solve(tr.LD, tr.pivots, _t(torch, b)).numpy(),
                               atol=1e-9)


def test_torch_parity_functions(torch):
    a = ember.tensor(RNG.standard_normal((4, 3, 3)) * np.array([1e-5, 0.1, 1.0, 5.0])[:, None,
                                                                                       None])
    np.testing.assert_allclose(npy(LA.matrix_exp(a)), torch.linalg.matrix_exp(_t(torch, a)).numpy(),
                               rtol=1e-12, atol=1e-14)
    f = a.float()
    # float32: entries ~1e-3 from cancellation carry the products' absolute error (~1e-7)
    np.testing.assert_allclose(npy(LA.matrix_exp(f)),
                               torch.linalg.matrix_exp(_t(torch, f)).numpy(), rtol=1e-5,
                               atol=1e-6)
    ea, ta = a.clone().requires_grad_(), _t(torch, a, grad=True)
    (LA.matrix_exp(ea) * a).sum().backward()
    (torch.linalg.matrix_exp(ta) * _t(torch, a)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    for p in (None, -2, "nuc", 1, float("-inf")):
        np.testing.assert_allclose(npy(LA.cond(a, p)), torch.linalg.cond(_t(torch, a), p).numpy(),
                                   rtol=1e-10)
    x = rand(2, 4)
    np.testing.assert_array_equal(npy(LA.vander(x, N=5)),
                                  torch.linalg.vander(_t(torch, x), N=5).numpy())
    v = rand(4)
    np.testing.assert_array_equal(npy(ember.vander(v, 3)), torch.vander(_t(torch, v), 3).numpy())
    A, B = rand(3, 2, 6), rand(3, 2)
    np.testing.assert_allclose(npy(LA.tensorsolve(A, B)),
                               torch.linalg.tensorsolve(_t(torch, A), _t(torch, B)).numpy(),
                               rtol=1e-10)


# -- devices -----------------------------------------------------------------------------------

def _device_calls(dev):
    a = (rand(3, 3) + 3 * ember.tensor(np.eye(3))).to(dev)
    b = rand(3, 2).to(dev)
    LU, piv = LA.lu_factor(a)
    qr_a, tau = ember.geqrf(rand(4, 3).to(dev))
    LD, lpiv = LA.ldl_factor(a + a.mT)
    return [LU, piv, LA.lu(a).L, LA.lu_solve(LU, piv, b), ember.lu_unpack(LU, piv).P,
            LA.solve_ex(a, b).info, LA.solve_triangular(a, b, upper=True),
            ember.cholesky_solve(b, a.tril()), ember.cholesky_inverse(a.triu(), True),
            qr_a, LA.householder_product(qr_a, tau), ember.ormqr(qr_a, tau, rand(4, 2).to(dev)),
            LA.ldl_solve(LD, lpiv, b), LA.matrix_exp(a), LA.cond(a, 1), LA.vander(b),
            ember.vander(b[:, 0]), quiet(ember.triangular_solve, b, a).cloned_coefficient]


def test_ops_keep_the_device(testdev):
    for r in _device_calls(testdev):
        assert r.device == testdev
    x = rand(3, 3).to(testdev).requires_grad_()
    sum(t.sum() for t in LA.lu(x)[1:]).backward()
    assert x.grad.device == testdev


def test_strict_device_kernels_use_the_array_module():
    testing = pytest.importorskip("ember.testing")
    register = getattr(testing, "register_strict_device", None)
    if register is None:
        pytest.skip("no strict test device in this checkout")
    register("strictla")
    dev = ember.device("strictla", 0)
    for r in _device_calls(dev):
        assert r.device == dev
    x = rand(3, 3).to(dev).requires_grad_()
    (LA.matrix_exp(x).sum() + LA.lu_solve(*LA.lu_factor(x), rand(3, 1).to(dev)).sum()).backward()
    assert x.grad.device == dev


@pytest.mark.parametrize("fn", [
    lambda a, b: LA.solve_triangular(a, b, upper=True),
    lambda a, b: ember.cholesky_solve(b, a),
    lambda a, b: LA.lu_solve(*LA.lu_factor(a), b),
])
def test_mixing_devices_raises(fn, testdev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        fn(well_conditioned(3, 3), rand(3, 2).to(testdev))
