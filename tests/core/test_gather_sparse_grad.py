"""``ember.gather(..., sparse_grad=True)``: the input's gradient is a sparse COO tensor, one
element per gathered element (uncoalesced), as PyTorch's ``_gather_sparse_backward``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

X = np.random.default_rng(0).standard_normal((3, 4))

CASES = {
    "rows": (lambda m: m.tensor(X, requires_grad=True), 1, [[0, 0], [1, 3], [2, 2]]),
    "columns": (lambda m: m.tensor(X, requires_grad=True), 0, [[0, 2, 1, 1], [1, 1, 1, 1]]),
    "vector": (lambda m: m.tensor(X[0], requires_grad=True), 0, [3, 3, 1]),
    "scalar_index": (lambda m: m.tensor(X[0], requires_grad=True), 0, 2),
    "scalar": (lambda m: m.tensor(2.0, requires_grad=True), 0, 0),
    "last_dim_3d": (lambda m: m.tensor(X.reshape(3, 2, 2), requires_grad=True), -1,
                    [[[0], [1]], [[1], [1]]]),
    "empty_index": (lambda m: m.tensor(X, requires_grad=True), 1, np.zeros((3, 0), np.int64)),
}


def _grad(m, case):
    make, dim, index = CASES[case]
    x = make(m)
    y = m.gather(x, dim, m.tensor(index), sparse_grad=True)
    (y * m.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    g = x.grad
    return (str(g.layout).split(".")[-1], g._indices().tolist(),
            g._values().detach().cpu().numpy().round(12).tolist(), tuple(g.shape),
            g.is_coalesced(), type(y.grad_fn).__name__)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_grad_as_torch(case):
    torch = pytest.importorskip("torch")
    assert _grad(ember, case) == _grad(torch, case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_grad_equals_the_dense_one(case):
    make, dim, index = CASES[case]
    grads = []
    for sparse in (True, False):
        x = make(ember)
        y = ember.gather(x, dim, ember.tensor(index), sparse_grad=sparse)
        (y * ember.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
        g = x.grad
        grads.append(g.to_dense() if sparse else g)
    assert grads[0].layout is ember.strided
    np.testing.assert_allclose(grads[0].cpu().numpy(), grads[1].cpu().numpy(), rtol=1e-12)


def test_sparse_grad_value_and_no_grad_paths_are_gathers():
    x = ember.tensor(X)
    idx = ember.tensor([[0, 3], [1, 1], [2, 0]])
    want = np.take_along_axis(X, idx.numpy(), 1)
    np.testing.assert_array_equal(ember.gather(x, 1, idx, sparse_grad=True).numpy(), want)
    xr = ember.tensor(X, requires_grad=True)
    with ember.no_grad():
        y = ember.gather(xr, 1, idx, sparse_grad=True)
    assert y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), want)
