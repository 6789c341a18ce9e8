"""``ember.lobpcg``: extreme eigenpairs of symmetric (generalized) problems against NumPy's
``eigh``, both methods, batches, sparse and preconditioned inputs, the tracker, PyTorch's
errors, float64 gradcheck of the differentiable path and parity with ``torch.lobpcg``."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import to_numpy

import ember
from ember.autograd import gradcheck


def _spd(m, seed=0, spread=1.0):
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((m, m)))[0]
    return q @ np.diag(np.arange(1.0, m + 1) * spread + rng.random(m)) @ q.T


def _check_pairs(A, E, X, k, largest, B=None, rtol=1e-6):
    A, E, X = np.asarray(A), to_numpy(E), to_numpy(X)
    Bn = np.eye(A.shape[-1]) if B is None else np.asarray(B)
    lam = np.linalg.eigvalsh(np.linalg.solve(np.linalg.cholesky(Bn), A) @
                             np.linalg.inv(np.linalg.cholesky(Bn)).T)
    want = lam[::-1][:k] if largest else lam[:k]
    np.testing.assert_allclose(E, want, rtol=rtol)
    np.testing.assert_allclose(A @ X, Bn @ X * E[None, :], atol=rtol * 10 * np.abs(A).max())
    np.testing.assert_allclose(X.T @ Bn @ X, np.eye(k), atol=1e-6)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_eigenpairs_match_eigh(method, largest):
    A = _spd(30)
    E, X = ember.lobpcg(ember.tensor(A), k=3, largest=largest, method=method, tol=1e-10)
    assert E.shape == (3,) and X.shape == (30, 3) and E.dtype is ember.float64
    _check_pairs(A, E, X, 3, largest)


def test_n_columns_then_k_returned_and_float32():
    A = _spd(24, seed=1)
    E, X = ember.lobpcg(ember.tensor(A), k=2, n=5, largest=False)
    assert X.shape == (24, 2)
    _check_pairs(A, E, X, 2, False, rtol=1e-6)
    E32, X32 = ember.lobpcg(ember.tensor(A, dtype=ember.float32), k=2)
    assert E32.dtype is ember.float32 and X32.dtype is ember.float32
    np.testing.assert_allclose(to_numpy(E32), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-4)


def test_generalized_problem():
    A = _spd(21, seed=2)
    rng = np.random.default_rng(3)
    B = np.diag(1 + rng.random(21))
    E, X = ember.lobpcg(ember.tensor(A), k=2, B=ember.tensor(B), tol=1e-10)
    _check_pairs(A, E, X, 2, True, B=B)


def test_batch_sparse_and_preconditioned():
    A1, A2 = _spd(18, seed=4), _spd(18, seed=5)
    E, X = ember.lobpcg(ember.tensor(np.stack([A1, A2])), k=2, tol=1e-10)
    assert E.shape == (2, 2) and X.shape == (2, 18, 2)
    _check_pairs(A1, E[0], X[0], 2, True)
    _check_pairs(A2, E[1], X[1], 2, True)
    for sparse in (ember.tensor(A1).to_sparse(), ember.tensor(A1).to_sparse_csr()):
        E, X = ember.lobpcg(sparse, k=2, tol=1e-10)
        _check_pairs(A1, E, X, 2, True)
    steps = {}
    for name, iK in (("plain", None), ("inverse", ember.tensor(np.linalg.inv(A1)))):
        E, X = ember.lobpcg(ember.tensor(A1), k=2, largest=False, iK=iK, tol=1e-10,
                            X=ember.tensor(np.random.default_rng(6).standard_normal((18, 2))),
                            tracker=lambda s, name=name: steps.__setitem__(name,
                                                                           s.ivars["istep"]))
        _check_pairs(A1, E, X, 2, False)
    assert steps["inverse"] < steps["plain"]  # the exact preconditioner converges faster


def test_tracker_sees_the_state_and_niter_stops():
    A = _spd(15, seed=7)
    seen = []

    def tracker(state):
        seen.append((state.ivars["istep"], state.ivars["converged_count"], state.E.shape,
                     state.X.shape, state.R.shape))
        assert state.iparams["k"] == 1 and state.fparams["tol"] > 0 and state.bparams["largest"]
        np.testing.assert_array_equal(to_numpy(state.A), A)
        if state.ivars["istep"] == 5:
            state.bvars["force_stop"] = True

    ember.lobpcg(ember.tensor(A), k=1, n=2, niter=3, tol=1e-300, tracker=tracker)
    assert [s[0] for s in seen] == [1, 2, 3]  # PyTorch's count: the first Rayleigh-Ritz is 1
    assert seen[0][2:] == ((2,), (15, 2), (15, 2))
    seen.clear()
    ember.lobpcg(ember.tensor(A), k=1, n=2, niter=-1, tol=1e-300, tracker=tracker)
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5]  # stopped by the tracker


def test_errors():
    A = ember.tensor(_spd(6))
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        ember.lobpcg(A, k=3)
    with pytest.raises(AssertionError, match="A must be square"):
        ember.lobpcg(A[:, :5], k=1)
    with pytest.raises(AssertionError, match="A and B must have same shape"):
        ember.lobpcg(A, k=1, B=ember.eye(5))
    with pytest.raises(AssertionError, match="X shape mismatch"):
        ember.lobpcg(ember.stack([A, A]), k=1, n=1, X=ember.ones(2, 5, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        ember.lobpcg(ember.ones(9, 9, dtype=ember.int64), k=1)
    with pytest.raises(ValueError, match="method must be"):
        ember.lobpcg(A, k=1, method="fast")
    with pytest.raises(ValueError, match="does not support sparse input"):
        ember.lobpcg(A.to_sparse().requires_grad_(), k=1)
    with pytest.raises(ValueError, match="B != I"):
        ember.lobpcg(A, k=1, B=ember.eye(6, dtype=ember.float64, requires_grad=True))


@pytest.mark.parametrize("largest", [True, False])
def test_gradcheck(largest):
    A = ember.tensor(_spd(12, seed=8), requires_grad=True)
    X = ember.tensor(np.random.default_rng(9).standard_normal((12, 2)))

    def f(A):
        return ember.lobpcg(A, k=2, X=X, largest=largest, tol=1e-13, niter=-1)

    assert gradcheck(f, (A,), eps=1e-6, atol=1e-5)


def test_matches_pytorch_values_and_gradients():
    torch = pytest.importorskip("torch")
    A = _spd(14, seed=10)
    X0 = np.random.default_rng(11).standard_normal((14, 2))
    W = np.random.default_rng(12).standard_normal((14, 14))
    W = W + W.T

    def run(lib):
        a = lib.tensor(A, requires_grad=True)
        E, U = lib.lobpcg(a, k=2, X=lib.tensor(X0), tol=1e-13, niter=-1)
        # a loss that does not depend on the eigenvectors' signs
        ((E * lib.tensor([1.0, 3.0], dtype=lib.float64)).sum()
         + ((U @ U.T) * lib.tensor(W)).sum()).backward()
        return E.detach().numpy(), a.grad.numpy()

    (e1, g1), (e2, g2) = run(ember), run(torch)
    np.testing.assert_allclose(e1, e2, rtol=1e-10)
    np.testing.assert_allclose(g1, g2, atol=1e-9)
