"""A sparse divisor of a dense tensor (PyTorch's ``Sparse division requires a scalar or
zero-dim dense tensor divisor`` in every spelling: ``/``, ``div`` with each rounding mode,
``floor_divide``, ``true_divide``, in place, ``out=``), and products of two compressed tensors
(CSR whatever the operands' CSR/CSC layouts, as PyTorch's)."""

from __future__ import annotations

import pytest
from testutils import assert_same_dispatch_error, same_sparse_in_both

import ember

pytestmark = [
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
]


def _coo(m):
    return m.sparse_coo_tensor(m.tensor([[0, 1, 1], [1, 2, 0]]), m.tensor([1.0, 2.0, 3.0]),
                               (2, 3))


def _csr(m):
    return m.sparse_coo_tensor(m.tensor([[0, 1, 1, 2], [1, 2, 0, 2]]),
                               m.tensor([1.0, 2.0, 3.0, -4.0]), (3, 3)).coalesce().to_sparse_csr()


DIVISIONS = {
    "operator": lambda m: m.ones(2, 3) / _coo(m),
    "zero_dim_dividend": lambda m: m.tensor(2.0) / _coo(m),
    "number_dividend": lambda m: 2 / _coo(m),
    "div": lambda m: m.div(m.ones(2, 3), _coo(m)),
    "div_floor": lambda m: m.div(m.ones(2, 3), _coo(m), rounding_mode="floor"),
    "div_trunc": lambda m: m.div(m.ones(2, 3), _coo(m), rounding_mode="trunc"),
    "true_divide": lambda m: m.true_divide(m.ones(2, 3), _coo(m)),
    "divide_out": lambda m: m.divide(m.ones(2, 3), _coo(m), out=m.empty(2, 3)),
    "div_": lambda m: m.ones(2, 3).div_(_coo(m)),
    "floor_divide": lambda m: m.floor_divide(m.ones(2, 3), _coo(m)),
    "floordiv_operator": lambda m: m.ones(2, 3) // _coo(m),
    "floor_divide_": lambda m: m.ones(2, 3).floor_divide_(_coo(m)),
    "sparse_by_sparse": lambda m: _coo(m) / _coo(m),
    "sparse_by_sparse_": lambda m: _coo(m).div_(_coo(m)),
}


@pytest.mark.parametrize("case", sorted(DIVISIONS))
def test_sparse_divisor_errors_as_pytorch(case):
    torch = pytest.importorskip("torch")
    fn = DIVISIONS[case]
    assert_same_dispatch_error(lambda: fn(ember), lambda: fn(torch))


def test_sparse_divisor_error_names_the_divisor_shape():
    with pytest.raises(RuntimeError, match=r"divisor \(got shape \[2, 3\] for divisor\)"):
        ember.ones(2, 3) / _coo(ember)


PRODUCTS = {
    "csr_csc": lambda m: _csr(m) @ _csr(m).t(),
    "csc_csr": lambda m: _csr(m).t() @ _csr(m),
    "csr_csr": lambda m: _csr(m) @ _csr(m),
    "csc_csc": lambda m: _csr(m).to_sparse_csc() @ _csr(m).to_sparse_csc(),
    "mm_csc_csr": lambda m: m.mm(_csr(m).to_sparse_csc(), _csr(m)),
    "matmul_csr_csc": lambda m: m.matmul(_csr(m), _csr(m).t()),
    "sparse_mm_csr_csr": lambda m: m.sparse.mm(_csr(m), _csr(m)),
}


@pytest.mark.parametrize("case", sorted(PRODUCTS))
def test_compressed_products_are_csr_as_pytorch(case):
    same_sparse_in_both(PRODUCTS[case])


def test_compressed_products_without_the_oracle():
    c = _csr(ember)
    p = c @ c.t()
    assert p.layout is ember.sparse_csr
    d = c.to_dense()
    assert (p.to_dense() == d @ d.t()).all()
