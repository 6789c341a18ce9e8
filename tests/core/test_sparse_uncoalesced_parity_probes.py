"""Sparse COO products, sums and matrix products on uncoalesced inputs, as PyTorch 2.13 gives
them (indices, values, nnz and the coalesced flag, not only the dense values): found by
differential probing; the expected values were printed by PyTorch."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

I_UNC = [[1, 0, 1, 0], [2, 1, 2, 0]]  # (1, 2) twice, unsorted


def _u(values=(1.0, 2.0, 3.0, 4.0), dtype=None):
    return ember.sparse_coo_tensor(ember.tensor(I_UNC), ember.tensor(list(values), dtype=dtype),
                                   (3, 3))


def _c():
    return ember.sparse_coo_tensor(ember.tensor([[0, 1, 2], [0, 2, 1]]),
                                   ember.tensor([5.0, 6.0, 7.0]), (3, 3)).coalesce()


def _z():  # an explicit zero and a duplicate
    return ember.sparse_coo_tensor(ember.tensor([[0, 2, 0], [1, 0, 1]]),
                                   ember.tensor([0.0, 8.0, 1.0]), (3, 3))


def _h():  # hybrid, uncoalesced
    return ember.sparse_coo_tensor(ember.tensor([[2, 0, 2]]),
                                   ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (3, 2))


def _parts(s):
    return (s.is_coalesced(), s._nnz(), s._indices().tolist(), s._values().tolist())


@pytest.mark.parametrize("swap", [False, True])
def test_mul_keeps_the_uncoalesced_operand(swap):
    # one operand coalesced: the other's elements, each times the coalesced one's value there
    a, b = (_c(), _u()) if swap else (_u(), _c())
    assert _parts(a * b) == (False, 4, I_UNC, [6.0, 0.0, 18.0, 20.0])


def test_mul_of_two_uncoalesced_keeps_the_smaller_and_sums_matches():
    u = _u()
    # equal nnz: the second operand's elements, times the sum of the first's at each coordinate
    assert _parts(u * u) == (False, 4, I_UNC, [4.0, 4.0, 12.0, 16.0])
    expect = (False, 3, [[0, 2, 0], [1, 0, 1]], [0.0, 0.0, 2.0])
    assert _parts(u * _z()) == expect and _parts(_z() * u) == expect
    np.testing.assert_array_equal((u * _z()).to_dense().numpy(),
                                  u.to_dense().numpy() * _z().to_dense().numpy())


def test_mul_of_two_coalesced_keeps_the_common_elements():
    c2 = ember.sparse_coo_tensor(ember.tensor([[0, 1, 2, 2], [0, 1, 0, 1]]),
                                 ember.tensor([1.0, 2.0, 3.0, 4.0]), (3, 3)).coalesce()
    assert _parts(_c() * c2) == (True, 2, [[0, 2], [0, 1]], [5.0, 28.0])
    empty = ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64), ember.zeros(0),
                                    (3, 3))
    assert _parts(_u() * empty) == (True, 0, [[], []], [])


def test_mul_hybrid_and_dense_dim_broadcast():
    h = _h()
    assert _parts(h * h) == (False, 3, [[2, 0, 2]], [[6.0, 16.0], [9.0, 16.0], [30.0, 48.0]])
    b = ember.sparse_coo_tensor(ember.tensor([[2, 1]]), ember.tensor([[10.0], [100.0]]), (3, 1))
    for out in (h * b, b * h):
        assert out.shape == (3, 2)
        assert _parts(out) == (False, 2, [[2, 1]], [[60.0, 80.0], [0.0, 0.0]])
    bad = ember.sparse_coo_tensor(ember.tensor([[2, 1]]), ember.ones(2, 3), (3, 3))
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 1$"):
        h * bad


def test_mul_by_a_zero_dim_sparse_and_shape_errors():
    scalar = ember.sparse_coo_tensor(ember.zeros(0, 1, dtype=ember.int64), ember.tensor([3.0]),
                                     ())
    for out in (_u() * scalar, scalar * _u()):
        assert _parts(out) == (False, 4, I_UNC, [3.0, 6.0, 9.0, 12.0])
    other = ember.sparse_coo_tensor(ember.tensor([[0], [0]]), ember.tensor([1.0]), (3, 4))
    with pytest.raises(RuntimeError, match=r"^sparse_binary_op_intersection_cpu\(\): expects "
                                           "sparse inputs with equal dimensionality"):
        _u() * other


def test_mul_dtypes_and_in_place():
    ints = _u((1, 2, 3, 4))
    out = ints * ints
    assert out.dtype is ember.int64 and out._values().tolist() == [4, 4, 12, 16]
    assert (ints * _c()).dtype is ember.float32
    a = _c().clone()
    a.mul_(_u())
    assert _parts(a) == (False, 4, I_UNC, [6.0, 0.0, 18.0, 20.0])


def test_gradcheck_of_the_intersection_in_the_values():
    idx = ember.tensor(I_UNC)
    v = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    zi = ember.tensor([[0, 2, 0], [1, 0, 1]])

    def f(v, w):
        a = ember.sparse_coo_tensor(idx, v, (3, 3))
        return (a * ember.sparse_coo_tensor(zi, w, (3, 3)) * a).to_dense()

    assert gradcheck(f, (v, w))


def test_sparse_sum_over_dense_dims_coalesces_first():
    h = _h()
    assert _parts(ember.sparse.sum(h, 1)) == (True, 2, [[0, 2]], [7.0, 14.0])
    assert _parts(h.sum(1)) == (True, 2, [[0, 2]], [7.0, 14.0])
    kd = h.sum(1, keepdim=True)  # the sum, then unsqueezed: a new sparse dim
    assert kd.shape == (3, 1) and (kd.sparse_dim(), kd.dense_dim()) == (2, 0)
    assert _parts(kd) == (False, 2, [[0, 2], [0, 0]], [7.0, 14.0])


def test_sum_with_keepdim_over_every_sparse_dim_is_dense():
    out = _h().sum(0, keepdim=True)
    assert out.layout is ember.strided and out.tolist() == [[9.0, 12.0]]
    out = _u().sum((0, 1), keepdim=True)
    assert out.layout is ember.strided and out.tolist() == [[10.0]]
    assert _parts(_u().sum(0, keepdim=True)) == (False, 3, [[0, 0, 0], [0, 1, 2]],
                                                  [4.0, 2.0, 4.0])


def test_sparse_sparse_mm_errors():
    u = _u()
    with pytest.raises(RuntimeError, match="^mat1 dtype Float does not match mat2 dtype Double$"):
        ember.mm(u, _c().double())
    with pytest.raises(NotImplementedError, match="^\"sparse_matmul\" not implemented for "
                                                  "'Long'$"):
        ember.mm(_u((1, 2, 3, 4)), _u((1, 2, 3, 4)))
    hybrid = ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.ones(2, 3), (3, 3))
    with pytest.raises(RuntimeError, match="^sparse_sparse_matmul_cpu: scalar values expected, "
                                           "got 1D values$"):
        ember.mm(u, hybrid)
    with pytest.raises(RuntimeError, match=r"^Expected mat1_.dim\(\) == 2 to be true"):
        ember.mm(ember.zeros(2, 3, 2).to_sparse(), u)
    with pytest.raises(RuntimeError, match="^addmm: computation on CPU is not implemented for "
                                           "SparseCsr \\+ SparseCsr @ Sparse$"):
        ember.mm(_c().to_sparse_csr(), u)
    csr = _u((1, 2, 3, 4)).coalesce().to_sparse_csr()
    with pytest.raises(NotImplementedError, match="addmm_out_sparse_csr_impl_mkl_sparse"):
        ember.mm(csr, csr)
    with pytest.raises(NotImplementedError, match="addmm_out_sparse_csr_impl_mkl\" not"):
        ember.mm(csr, ember.ones(3, 2, dtype=ember.int64))
    out = ember.mm(u, _z())  # the values: the coalesced product
    np.testing.assert_array_equal(out.to_dense().numpy(),
                                  u.to_dense().numpy() @ _z().to_dense().numpy())


def test_addmm_with_a_sparse_coo_input_is_an_error():
    d = ember.arange(9.0).reshape(3, 3)
    for fn in (ember.addmm, ember.sparse.addmm):
        for mat2 in (d, _c()):
            with pytest.raises(RuntimeError, match="^addmm_sparse_dense: expected strided "
                                                   "result tensor, got tensor with layout "
                                                   "Sparse$"):
                fn(_u(), _u(), mat2)
    np.testing.assert_allclose(ember.addmm(d, _u(), d).numpy(),
                               d.numpy() + _u().to_dense().numpy() @ d.numpy())


def test_against_torch_when_present():
    torch = pytest.importorskip("torch")

    def build(m):
        u = m.sparse_coo_tensor(m.tensor(I_UNC), m.tensor([1.0, 2.0, 3.0, 4.0]), (3, 3))
        z = m.sparse_coo_tensor(m.tensor([[0, 2, 0], [1, 0, 1]]), m.tensor([0.0, 8.0, 1.0]),
                                (3, 3))
        h = m.sparse_coo_tensor(m.tensor([[2, 0, 2]]),
                                m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (3, 2))
        return [u * z, z * u, u * u.coalesce(), h * h, m.sparse.sum(h, 1), u * 2]

    for e, t in zip(build(ember), build(torch)):
        assert _parts(e) == (t.is_coalesced(), t._nnz(), t._indices().tolist(),
                             t._values().tolist())
