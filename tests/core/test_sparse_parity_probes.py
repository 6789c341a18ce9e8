"""Sparse tensors against PyTorch 2.13, one test per difference that differential probes found:
the factories' size-only overload and index casts, PyTorch's errors for the dense shape ops
and storage, scalar ``pow``/``//``, in-place arithmetic, the products' errors and ``mv``,
``cat``/``stack``, ``sparse.sum``/``softmax``/``sampled_addmm``/``spdiags`` errors, and the
dispatcher's wording. Each test asserts the expected value or error plainly, then (when torch
is importable) against torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
from testutils import assert_same_dispatch_error, assert_same_sparse_parts

import ember

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:TypedStorage is deprecated"),
]

IDX = [[1, 0, 1], [0, 2, 0]]  # (1, 0) twice: uncoalesced
VAL = [1.0, 2.0, 3.0]
DENSE = np.array([[0.0, 0.0, 2.0], [4.0, 0.0, 0.0]])


def _torch():
    return pytest.importorskip("torch")


def _coo(m, values=VAL, dtype=None, size=(2, 3)):
    return m.sparse_coo_tensor(m.tensor(IDX), m.tensor(values, dtype=dtype), size)


def _np(t):
    t = t.to_dense() if t.layout is not ember.strided else t
    return t.detach().cpu().numpy()


def _backend(s, word="Sparse"):
    return f"{word}{s.device.type.upper()}"


def _raises(exc, message):
    return pytest.raises(exc, match=re.escape(message))


def _same_error(fn):
    """``fn(ember)`` raises what ``fn(torch)`` raises (type and message; a dispatcher error by
    its first sentence, read with the test device's backend)."""
    torch = _torch()
    assert_same_dispatch_error(lambda: fn(ember), lambda: fn(torch))


def _same(fn):
    torch = _torch()
    assert_same_sparse_parts(fn(ember), fn(torch))


# -- factories -----------------------------------------------------------------------------------

def test_sparse_coo_tensor_of_a_size_alone_is_empty():
    s = ember.sparse_coo_tensor((3, 4))
    assert s.shape == (3, 4) and s._nnz() == 0 and s.dtype is ember.float32
    assert s.is_coalesced() and s._indices().shape == (2, 0)
    assert ember.sparse_coo_tensor([3, 4], dtype=ember.int32).dtype is ember.int32
    assert ember.sparse_coo_tensor((2,), requires_grad=True).requires_grad
    with _raises(RuntimeError, "numel: integer multiplication overflow"):
        ember.sparse_coo_tensor((-3, 4))
    with _raises(TypeError, "sparse_coo_tensor(): argument 'size' (position 1) must be tuple "
                            "of ints, not Tensor"):
        ember.sparse_coo_tensor(ember.zeros(2, 1, dtype=ember.long))
    _same(lambda m: m.sparse_coo_tensor((3, 4), dtype=m.float64))
    _same_error(lambda m: m.sparse_coo_tensor(m.zeros(2, 1, dtype=m.long)))


def test_sparse_coo_tensor_zero_dim_value_is_one_element():
    s = ember.sparse_coo_tensor(ember.zeros(2, 1, dtype=ember.long), 5)
    assert s.shape == (1, 1) and s.dtype is ember.int64
    np.testing.assert_array_equal(_np(s), [[5]])
    with _raises(RuntimeError, "indices and values must have same nnz, but got nnz from "
                               "indices: 3, nnz from values: 1"):
        ember.sparse_coo_tensor(ember.zeros(2, 3, dtype=ember.long), ember.tensor(5.0))
    _same(lambda m: m.sparse_coo_tensor(m.zeros(2, 1, dtype=m.long), m.tensor(5.0), (3, 3)))


def test_sparse_coo_tensor_casts_float_and_bool_indices():
    s = ember.sparse_coo_tensor(ember.tensor([[0.5, 1.7]]), ember.ones(2))
    np.testing.assert_array_equal(s._indices().cpu().numpy(), [[0, 1]])
    assert s._indices().dtype is ember.int64 and s.shape == (2,)
    b = ember.sparse_coo_tensor(ember.tensor([[True, False]]), ember.ones(2))
    np.testing.assert_array_equal(b._indices().cpu().numpy(), [[1, 0]])
    _same(lambda m: m.sparse_coo_tensor(m.tensor([[0.0, 1, 1]]), m.tensor([3.0, 4, 5])))


def test_sparse_coo_tensor_without_sparse_dims_infers_the_dense_size():
    s = ember.sparse_coo_tensor(ember.zeros(0, 2, dtype=ember.long), ember.ones(2, 3))
    assert s.shape == (3,) and s.sparse_dim() == 0
    np.testing.assert_array_equal(_np(s), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(s.coalesce().values().cpu().numpy(), [[2.0, 2.0, 2.0]])
    _same(lambda m: m.sparse_coo_tensor(m.zeros(0, 2, dtype=m.long), m.ones(2, 3)).coalesce())


def test_sparse_coo_tensor_negative_size():
    with _raises(RuntimeError, "numel: integer multiplication overflow"):
        ember.sparse_coo_tensor(ember.zeros(2, 1, dtype=ember.long), ember.ones(1), (3, -3))
    _same_error(lambda m: m.sparse_coo_tensor(m.zeros(2, 1, dtype=m.long), m.ones(1), (3, -3)))


def test_compressed_factories_cast_float_indices():
    s = ember.sparse_csr_tensor([0.0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    np.testing.assert_array_equal(s.crow_indices().cpu().numpy(), [0, 2, 3])
    _same(lambda m: m.sparse_csr_tensor([0.0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3)))


# -- storage, strides and the dense shape ops: PyTorch's errors ----------------------------------

def test_coo_strides_are_zeros_and_storage_is_refused():
    s = _coo(ember)
    assert s.stride() == (0, 0) and s.stride(-1) == 0 and s.storage_offset() == 0
    with _raises(IndexError, "Dimension out of range"):
        s.stride(2)
    with _raises(NotImplementedError, "Cannot access storage of SparseTensorImpl"):
        s.untyped_storage()
    with _raises(NotImplementedError, "Cannot access storage of SparseTensorImpl"):
        s.storage()
    c = s.to_sparse_csr()
    with _raises(RuntimeError, "Sparse CSR tensors do not have strides"):
        c.stride()
    with _raises(NotImplementedError, "Cannot access storage of SparseCsrTensorImpl"):
        c.untyped_storage()
    torch = _torch()
    t = _coo(torch)
    assert s.stride() == t.stride() and s.storage_offset() == t.storage_offset()
    for fn in (lambda m: _coo(m).untyped_storage(), lambda m: _coo(m).to_sparse_csr().stride()):
        _same_error(fn)


def test_dense_shape_ops_raise_pytorchs_errors():
    s = _coo(ember)
    with _raises(RuntimeError, "reshape is not implemented for sparse tensors"):
        s.reshape(6)
    with _raises(RuntimeError, "reshape is not implemented for sparse tensors"):
        s.flatten()
    with _raises(RuntimeError, "expand is unsupported for Sparse tensors"):
        s.expand(2, 2, 3)
    with _raises(RuntimeError, "unsupported memory format option Contiguous"):
        s.contiguous()
    with _raises(NotImplementedError, f"Could not run 'aten::view' with arguments from the "
                                      f"'{_backend(s)}' backend. This could be because"):
        s.view(6)
    with _raises(NotImplementedError, "Could not run 'aten::as_strided'"):
        s.squeeze()
    c = s.to_sparse_csr()
    with _raises(RuntimeError, "Sparse CSR tensors do not have is_contiguous"):
        c.is_contiguous()
    with _raises(RuntimeError, "expand is unsupported for SparseCsr tensors"):
        c.expand(2, 2, 3)
    one = ember.sparse_coo_tensor([[1, 0]], [1.0, 2.0], (3,))
    assert one.flatten() is one
    for fn in (lambda m: _coo(m).reshape(6), lambda m: _coo(m).flatten(),
               lambda m: _coo(m).expand(2, 2, 3), lambda m: _coo(m).contiguous(),
               lambda m: _coo(m).view(6), lambda m: _coo(m).squeeze(),
               lambda m: _coo(m).narrow(0, 0, 1), lambda m: _coo(m).to_sparse_csr().view(6),
               lambda m: _coo(m).to_sparse_csr().is_contiguous(),
               lambda m: _coo(m).to_sparse_csr().reshape(6)):
        _same_error(fn)


def test_to_dense_refuses_a_dtype():
    s = _coo(ember)
    with _raises(RuntimeError, "dtype argument is not supported by sparse_to_dense"):
        s.to_dense(ember.float64)
    with _raises(RuntimeError, "dtype argument is not supported by sparse_csr_to_dense"):
        s.to_sparse_csr().to_dense(dtype=ember.float64)
    _same_error(lambda m: _coo(m).to_dense(m.float64))
    _same_error(lambda m: _coo(m).to_sparse_csr().to_dense(m.float32))


def test_numpy_error_names_the_layout():
    with _raises(TypeError, "can't convert SparseCsr layout tensor to numpy"):
        _coo(ember).to_sparse_csr().numpy()
    _same_error(lambda m: _coo(m).to_sparse_csr().numpy())


# -- transposes ------------------------------------------------------------------------------------

def test_transpose_errors():
    h = ember.sparse_coo_tensor([[1, 0]], ember.ones(2, 3), (2, 3))
    with _raises(RuntimeError, "t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               "but got 1 sparse and 1 dense dimensions"):
        h.t()
    with _raises(RuntimeError, "sparse transpose: transposed dimensions must be sparse Got "
                               "sparse_dim: 1, d0: 0, d1: 1"):
        h.transpose(0, 1)
    for fn in (lambda m: m.sparse_coo_tensor([[1, 0]], m.ones(2, 3), (2, 3)).t(),
               lambda m: m.sparse_coo_tensor([[1, 0]], m.ones(2, 3), (2, 3)).transpose(0, 1),
               lambda m: m.sparse_coo_tensor([[1], [0], [1]], [1.0], (2, 2, 2)).t()):
        _same_error(fn)


def test_t_in_place():
    s = _coo(ember).coalesce()
    assert s.t_() is s and s.shape == (3, 2)
    np.testing.assert_array_equal(_np(s), DENSE.T)

    def fn(m):
        s = _coo(m).coalesce()
        s.t_()
        return s

    _same(fn)


# -- arithmetic ------------------------------------------------------------------------------------

def test_scalar_pow():
    s = _coo(ember, [1.0, 4.0, 9.0])
    np.testing.assert_array_equal(_np(s.pow(2)), [[0, 0, 16], [100, 0, 0]])
    np.testing.assert_array_equal(_np(s ** 2), [[0, 0, 16], [100, 0, 0]])
    np.testing.assert_allclose(_np(ember.pow(s, 0.5)), [[0, 0, 2], [10 ** 0.5, 0, 0]],
                               rtol=1e-6)
    with _raises(RuntimeError, "pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense"):
        s.pow(0)
    with _raises(RuntimeError, "result type Float can't be cast to the desired output type "
                               "Long"):
        _coo(ember, [1, 4, 9]).pow(0.5)
    with _raises(NotImplementedError, "Could not run 'aten::pow.Tensor_Tensor'"):
        s.pow(ember.tensor(2.0))
    with _raises(NotImplementedError, "Could not run 'aten::pow_.Scalar'"):
        s.pow_(2)
    _same(lambda m: _coo(m, [1.0, 4.0, 9.0]).pow(-1))
    _same(lambda m: m.pow(_coo(m, [1, 4, 9]), 2))
    for fn in (lambda m: _coo(m).pow(0), lambda m: _coo(m, [1, 4, 9]).pow(0.5),
               lambda m: _coo(m).pow(m.tensor(2.0)), lambda m: _coo(m).pow_(2)):
        _same_error(fn)


def test_floor_divide_by_a_number():
    s = _coo(ember, [1, 2, 3])
    np.testing.assert_array_equal(_np(s // 2), [[0, 0, 1], [2, 0, 0]])  # coalesced first
    with _raises(RuntimeError, "Sparse floor division requires a scalar or zero-dim dense "
                               "tensor divisor (got shape [2, 3] for divisor)"):
        s // ember.ones(2, 3, dtype=ember.int64)
    _same(lambda m: _coo(m, [1, 2, 3]) // 2)
    _same(lambda m: m.floor_divide(_coo(m, [1, 2, 3]), 2))
    _same(lambda m: m.div(_coo(m), 2, rounding_mode="floor"))


def test_division_errors():
    s = _coo(ember)
    with _raises(RuntimeError, "Sparse division requires a scalar or zero-dim dense tensor "
                               "divisor (got shape [2, 3] for divisor)"):
        s / ember.ones(2, 3)
    with _raises(NotImplementedError, "Could not run 'aten::reciprocal'"):
        2 / s
    _same_error(lambda m: _coo(m) / m.ones(2, 3))
    _same_error(lambda m: 2 / _coo(m))


def test_function_forms_of_binary_ops():
    s = _coo(ember)
    np.testing.assert_array_equal(_np(ember.mul(s, 2)), DENSE * 2)
    np.testing.assert_array_equal(_np(ember.mul(2, s)), DENSE * 2)
    np.testing.assert_array_equal(_np(ember.div(s, 2)), DENSE / 2)
    np.testing.assert_array_equal(_np(ember.true_divide(s, 2)), DENSE / 2)
    np.testing.assert_array_equal(_np(ember.add(ember.ones(2, 3), s, alpha=2)), 1 + 2 * DENSE)
    np.testing.assert_array_equal(_np(ember.sub(ember.ones(2, 3), s, alpha=2)), 1 - 2 * DENSE)
    with _raises(NotImplementedError, "Could not run 'aten::gt.Scalar'"):
        _ = s > 0
    for fn in (lambda m: m.mul(_coo(m), 2), lambda m: m.mul(_coo(m), m.ones(2, 3)),
               lambda m: m.div(_coo(m), 2, rounding_mode="trunc"),
               lambda m: m.add(m.ones(2, 3), _coo(m), alpha=2),
               lambda m: m.sub(m.ones(2, 3), _coo(m), alpha=2)):
        _same(fn)
    for fn in (lambda m: _coo(m) > 0, lambda m: _coo(m) == _coo(m), lambda m: _coo(m) % 2,
               lambda m: m.remainder(_coo(m), 2)):
        _same_error(fn)


def test_in_place_arithmetic():
    s = _coo(ember)
    vals = s._values()
    assert s.mul_(2) is s
    np.testing.assert_array_equal(_np(s), DENSE * 2)
    s.add_(s)
    np.testing.assert_array_equal(_np(s), DENSE * 4)
    s.div_(4)
    np.testing.assert_array_equal(_np(s), DENSE)
    s.sub_(s)
    np.testing.assert_array_equal(_np(s), DENSE * 0)
    s = _coo(ember)
    s *= 3
    s += _coo(ember)
    s /= 2
    np.testing.assert_array_equal(_np(s), DENSE * 2)
    assert vals is not None
    with _raises(RuntimeError, "dtype of values (Float) must match dtype of sparse tensor "
                               "(Long)"):
        _coo(ember, [1, 2, 3]).mul_(2.5)
    with _raises(RuntimeError, "result type Float can't be cast to the desired output type "
                               "Long"):
        _coo(ember, [1, 2, 3]).div_(2)
    with _raises(RuntimeError, "add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead."):
        _coo(ember).add_(ember.ones(2, 3))
    with _raises(RuntimeError, "a leaf Variable that requires grad is being used in an "
                               "in-place operation."):
        _coo(ember).requires_grad_().mul_(2)
    with _raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) "
                               "at non-singleton dimension 0"):
        _coo(ember).mul_(ember.ones(3, 3))

    def inplace(m):  # coalesced operands: PyTorch merges uncoalesced ones its own way
        s = _coo(m).coalesce()
        s.mul_(2)
        s.add_(_coo(m).coalesce())
        s.div_(3)
        return s

    _same(inplace)
    for fn in (lambda m: _coo(m, [1, 2, 3]).mul_(2.5), lambda m: _coo(m, [1, 2, 3]).div_(2),
               lambda m: _coo(m).add_(m.ones(2, 3)), lambda m: _coo(m).mul_(m.ones(3, 3))):
        _same_error(fn)


def test_dense_plus_sparse_does_not_broadcast():
    s = _coo(ember)
    with _raises(RuntimeError, "add: expected 'self' and 'other' to have same size, but self "
                               "has size [3] while other has size [2, 3] (FYI: dense-sparse "
                               "addition does not currently support broadcasting)"):
        ember.ones(3) + s
    with _raises(RuntimeError, "(FYI: op2-sparse addition does not currently support "
                               "broadcasting)"):
        ember.ones(3) + s.to_sparse_csr()
    _same_error(lambda m: m.ones(3) + _coo(m))
    _same_error(lambda m: m.ones(1, 3) + _coo(m).to_sparse_csr())


# -- products --------------------------------------------------------------------------------------

def test_mm_errors():
    s = _coo(ember)
    with _raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"):
        s @ s
    with _raises(RuntimeError, "addmm: Argument #3 (dense): Expected dim 0 size 2, got 3"):
        ember.mm(ember.ones(2, 3), s)
    with _raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but "
                             "got 1)"):
        ember.mm(s, ember.ones(3))
    with _raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but "
                             "got -2)"):
        ember.mm(ember.ones(3), s)
    with _raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)"):
        ember.mm(s.to_sparse_csr(), ember.ones(4, 2))
    with _raises(RuntimeError, "expected scalar type Float but found Double"):
        ember.mm(ember.ones(2, 2, dtype=ember.float64), s)
    for fn in (lambda m: _coo(m) @ _coo(m), lambda m: m.mm(m.ones(2, 3), _coo(m)),
               lambda m: m.mm(_coo(m), m.ones(3)), lambda m: m.mm(m.ones(3), _coo(m)),
               lambda m: m.mm(_coo(m), m.tensor(1.0)),
               lambda m: m.mm(_coo(m).to_sparse_csr(), m.ones(4, 2)),
               lambda m: m.mm(m.ones(2, 4), _coo(m).to_sparse_csr()),
               lambda m: m.mm(_coo(m).to_sparse_csr(), _coo(m).to_sparse_csr()),
               lambda m: m.mm(m.ones(2, 2, dtype=m.float64), _coo(m))):
        _same_error(fn)


def test_csr_times_csr_is_csr():
    s = _coo(ember).to_sparse_csr()
    r = s @ s.t().to_sparse_csr()
    assert r.layout is ember.sparse_csr
    np.testing.assert_array_equal(_np(r), DENSE @ DENSE.T)
    _same(lambda m: m.mm(_coo(m).to_sparse_csr(), _coo(m).t().to_sparse_csr()))


def test_mv_of_a_sparse_matrix():
    s = _coo(ember)
    np.testing.assert_array_equal(ember.mv(s, ember.ones(3)).cpu().numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(s.mv(ember.arange(3.0)).cpu().numpy(), [4.0, 0.0])
    with _raises(RuntimeError, "mv: expected self.size(-1) == vec.size(-1)"):
        ember.mv(s, ember.ones(4))
    g = _coo(ember).requires_grad_()
    ember.mv(g, ember.ones(3)).sum().backward()  # the values' gradient (Ember: sparse grads)
    np.testing.assert_array_equal(g.grad._values().cpu().numpy(), [1.0, 1.0])  # distinct
    _same(lambda m: m.mv(_coo(m), m.arange(3.0)))
    _same(lambda m: m.mv(_coo(m).to_sparse_csr(), m.arange(3.0)))
    _same_error(lambda m: m.mv(_coo(m), m.ones(4)))
    _same_error(lambda m: m.mv(_coo(m), m.ones(3, dtype=m.float64)))


def test_sparse_mm_and_addmm_of_dense_operands():
    s = _coo(ember)
    d = ember.ones(2, 2)
    np.testing.assert_array_equal(ember.sparse.mm(d, s).cpu().numpy(), d.numpy() @ DENSE)
    np.testing.assert_array_equal(ember.sparse.mm(ember.ones(2, 3), ember.ones(3, 2)).numpy(),
                                  np.full((2, 2), 3.0))
    np.testing.assert_array_equal(
        ember.sparse.addmm(d, ember.ones(2, 3), ember.ones(3, 2)).numpy(), np.full((2, 2), 4.0))
    with _raises(RuntimeError, "addmm_sparse_dense: expected either 'mat1' to have sparse "
                               "layout and 'mat2' to have strided layout, got 'mat1' with "
                               "layout Sparse and 'mat2' with layout Sparse"):
        ember.sparse.addmm(d, s, s.t())
    with _raises(RuntimeError, "addmm_sparse_dense: expected strided result tensor, got tensor "
                               "with layout Sparse"):
        ember.addmm(s, ember.ones(2, 3), ember.ones(3, 3))
    with _raises(RuntimeError, "expected scalar type Float but found Double"):
        ember.sparse.addmm(ember.ones(2, 2, dtype=ember.float64), s, ember.ones(3, 2))
    _same(lambda m: m.sparse.mm(m.ones(2, 2), _coo(m)))
    _same(lambda m: m.sparse.mm(m.ones(2, 2), _coo(m).to_sparse_csr()))
    for fn in (lambda m: m.sparse.addmm(m.ones(2, 2), _coo(m), _coo(m).t()),
               lambda m: m.addmm(_coo(m), m.ones(2, 3), m.ones(3, 3)),
               lambda m: m.sparse.addmm(m.ones(2, 2, dtype=m.float64), _coo(m), m.ones(3, 2))):
        _same_error(fn)


# -- joins -----------------------------------------------------------------------------------------

def test_cat_and_stack_of_sparse_tensors():
    c = _coo(ember).coalesce()
    r = ember.cat([c, c])
    assert r.shape == (4, 3) and not r.is_coalesced()
    np.testing.assert_array_equal(_np(r), np.concatenate([DENSE, DENSE]))
    np.testing.assert_array_equal(_np(ember.cat([c, c], 1)), np.concatenate([DENSE, DENSE], 1))
    np.testing.assert_array_equal(_np(ember.stack([c, c], 1)), np.stack([DENSE, DENSE], 1))
    with _raises(RuntimeError, "Concatenating sparse tensors, but a dense tensor was found at "
                               "position 1."):
        ember.cat([c, ember.ones(2, 3)])
    with _raises(RuntimeError, "All tensors must have the same shape: [2, 3] (except in the "
                               "concatenating dimension), but found shape: [2, 4] at position "
                               "1."):
        ember.cat([c, ember.sparse_coo_tensor([[0], [0]], [1.0], (2, 4))])
    g = _coo(ember).requires_grad_()
    ember.cat([g, g]).to_dense().sum().backward()
    np.testing.assert_array_equal(g.grad._values().cpu().numpy(), [2.0, 2.0])  # distinct

    def hybrid(m):
        return m.sparse_coo_tensor([[1, 0]], m.tensor([[1.0, 2], [3, 4]]), (2, 2))

    for fn in (lambda m: m.cat([_coo(m), _coo(m)]), lambda m: m.cat([_coo(m).coalesce()] * 2, 1),
               lambda m: m.cat([_coo(m).coalesce(), _coo(m).coalesce().double()]),
               lambda m: m.cat([hybrid(m), hybrid(m)], 1),
               lambda m: m.stack([_coo(m).coalesce()] * 2, 2),
               lambda m: m.stack([hybrid(m), hybrid(m)], 2)):
        _same(fn)
    for fn in (lambda m: m.cat([_coo(m), m.ones(2, 3)]),
               lambda m: m.cat([_coo(m), m.sparse_coo_tensor([[0]], [1.0], (4,))]),
               lambda m: m.cat([_coo(m), _coo(m)], 2)):
        _same_error(fn)


# -- ember.sparse ----------------------------------------------------------------------------------

def test_sparse_sum_errors():
    s = _coo(ember)
    with _raises(RuntimeError, "dim 0 appears multiple times in the list of dims"):
        ember.sparse.sum(s, dim=(0, -2))
    with _raises(RuntimeError, "dim 1 appears multiple times in the list of dims"):
        s.sum(dim=(1, 1))
    with _raises(RuntimeError, "coalesce expected sparse coordinate tensor layout but got "
                               "Strided"):
        ember.sparse.sum(ember.ones(2, 3))
    with _raises(NotImplementedError, "Could not run 'aten::_indices'"):
        ember.sparse.sum(s.to_sparse_csr(), 0)
    for fn in (lambda m: m.sparse.sum(_coo(m), dim=(0, 0)), lambda m: _coo(m).sum(dim=(1, -1)),
               lambda m: m.sparse.sum(m.ones(2, 3)), lambda m: m.sparse.sum(m.ones(2, 3), 0),
               lambda m: m.sparse.sum(_coo(m).to_sparse_csr(), 0),
               lambda m: m.sparse.sum(_coo(m).to_sparse_csc())):
        _same_error(fn)


def test_sparse_softmax_errors():
    s = _coo(ember)
    with _raises(NotImplementedError, "\"softmax\" not implemented for 'Long'"):
        ember.sparse.softmax(s.long(), 1)
    with _raises(NotImplementedError, "\"log_softmax\" not implemented for 'Long'"):
        ember.sparse.log_softmax(s, 1, dtype=ember.int64)
    with _raises(TypeError, "_sparse_softmax(): argument 'dim' (position 2) must be int, not "
                            "float"):
        ember.sparse.softmax(s, 1.0)
    with _raises(NotImplementedError, "Could not run 'aten::_sparse_softmax' with arguments "
                                      "from the '" + ember.ones(1).device.type.upper() + "'"):
        ember.sparse.softmax(ember.ones(2, 3), 1)
    for fn in (lambda m: m.sparse.softmax(_coo(m).long(), 1),
               lambda m: m.sparse.softmax(_coo(m), 1, dtype=m.int64),
               lambda m: m.sparse.log_softmax(_coo(m).int(), 1),
               lambda m: m.sparse.softmax(_coo(m), 1.0),
               lambda m: m.sparse.softmax(m.ones(2, 3), 1),
               lambda m: m.sparse.softmax(_coo(m).to_sparse_csc(), 1)):
        _same_error(fn)


def _csr(m):
    return m.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))


def test_sampled_addmm_errors_and_out():
    c = _csr(ember)
    with _raises(RuntimeError, "sampled_addmm: mat1 and mat2 shapes cannot be multiplied (2x5 "
                               "and 4x3)"):
        ember.sparse.sampled_addmm(c, ember.ones(2, 5), ember.ones(4, 3))
    with _raises(RuntimeError, "sampled_addmm: self.shape[-2] must match mat1.shape[-2]"):
        ember.sparse.sampled_addmm(c, ember.ones(3, 4), ember.ones(4, 3))
    with _raises(RuntimeError, "sampled_addmm: Expected mat1 and mat2 to have the same dtype, "
                               "but got Double and Float"):
        ember.sparse.sampled_addmm(c, ember.ones(2, 4, dtype=ember.float64), ember.ones(4, 3))
    with _raises(RuntimeError, "sampled_addmm: Expected result to have sparse csr layout, but "
                               "got Strided"):
        ember.sparse.sampled_addmm(c, ember.ones(2, 4), ember.ones(4, 3), out=ember.empty(2, 3))
    with _raises(NotImplementedError, "Could not run 'aten::sparse_sampled_addmm'"):
        ember.sparse.sampled_addmm(_coo(ember), ember.ones(2, 4), ember.ones(4, 3))
    out = c.clone()
    r = ember.sparse.sampled_addmm(c, ember.ones(2, 4), ember.ones(4, 3), out=out)
    assert r is out
    np.testing.assert_array_equal(_np(out), [[5.0, 0.0, 6.0], [0.0, 7.0, 0.0]])

    def with_out(m):
        out = _csr(m).clone()
        m.sparse.sampled_addmm(_csr(m), m.ones(2, 4), m.ones(4, 3), out=out)
        return out

    _same(with_out)
    for fn in (lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(2, 5), m.ones(4, 3)),
               lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(3, 4), m.ones(4, 3)),
               lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(2, 4), m.ones(4, 4)),
               lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(2, 4).double(), m.ones(4, 3)),
               lambda m: m.sparse.sampled_addmm(_csr(m).double(), m.ones(2, 4), m.ones(4, 3)),
               lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(2, 4), m.ones(3)),
               lambda m: m.sparse.sampled_addmm(_csr(m).long(), m.ones(2, 4).long(),
                                                m.ones(4, 3).long()),
               lambda m: m.sparse.sampled_addmm(_csr(m), m.ones(2, 4), m.ones(4, 3),
                                                out=m.empty(2, 3)),
               lambda m: m.sparse.sampled_addmm(_coo(m), m.ones(2, 4), m.ones(4, 3))):
        _same_error(fn)


def test_spdiags_order_and_errors():
    d = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    s = ember.sparse.spdiags(d, ember.tensor([1, 0]), (3, 3))
    assert not s.is_coalesced()
    np.testing.assert_array_equal(s._indices().cpu().numpy(), [[0, 1, 0, 1, 2], [1, 2, 0, 1, 2]])
    with _raises(RuntimeError, "Number of diagonals (2) does not match the number of offsets "
                               "(1)"):
        ember.sparse.spdiags(d, ember.tensor([0]), (3, 3))
    with _raises(RuntimeError, "Trying to create tensor with negative dimension -2: [2, -2]"):
        ember.sparse.spdiags(d[:1], ember.tensor([5]), (3, 3))
    with _raises(RuntimeError, "Offset Tensor must have dtype Long but got Float"):
        ember.sparse.spdiags(d[:1], ember.tensor([0.0]), (3, 3))
    with _raises(RuntimeError, "Output shape must be 2d"):
        ember.sparse.spdiags(d[:1], ember.tensor([0]), (3, 3, 3))
    with _raises(RuntimeError, "Only output layouts (Sparse, SparseCsc, SparseCsr) are "
                               "supported, got SparseBsr"):
        ember.sparse.spdiags(d[:1], ember.tensor([0]), (3, 3), layout=ember.sparse_bsr)
    diags = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    _same(lambda m: m.sparse.spdiags(m.tensor(diags), m.tensor([1, 0]), (3, 3)))
    _same(lambda m: m.sparse.spdiags(m.tensor(diags), m.tensor([0, -1]), (3, 4)))
    for fn in (lambda m: m.sparse.spdiags(m.tensor(diags), m.tensor([0]), (3, 3)),
               lambda m: m.sparse.spdiags(m.tensor(diags[:1]), m.tensor([-5]), (3, 3)),
               lambda m: m.sparse.spdiags(m.tensor(diags[:1]), m.tensor([0.0]), (3, 3)),
               lambda m: m.sparse.spdiags(m.tensor(diags[:1]), m.tensor([[0]]), (3, 3)),
               lambda m: m.sparse.spdiags(m.tensor(diags[:1]), m.tensor([0]), (3, 3, 3)),
               lambda m: m.sparse.spdiags(m.tensor(diags[:1]), m.tensor([0]), (3, 3),
                                          layout=m.sparse_bsr)):
        _same_error(fn)


# -- conversions -----------------------------------------------------------------------------------

def test_to_sparse_errors_and_the_strided_layout():
    x = ember.tensor(DENSE)
    with _raises(RuntimeError, "dense_to_sparse: sparse_dim argument must be in >0 when "
                               "self.dim()>0"):
        x.to_sparse(0)
    with _raises(RuntimeError, "dense_to_sparse: sparse_dim argument must be in [0,2] range, "
                               "but 3 is given"):
        x.to_sparse(3)
    with _raises(RuntimeError, "dense_to_sparse: tensor sparse size (2,3) must be divisible by "
                               "given blocksize (2,2)"):
        x.to_sparse(layout=ember.sparse_bsr, blocksize=(2, 2))
    assert x.to_sparse(layout=ember.strided) is x
    np.testing.assert_array_equal(_np(x.to_sparse().to_sparse(layout=ember.strided)), DENSE)
    np.testing.assert_array_equal(_np(x.to_sparse_csr().to_sparse(layout=ember.strided)), DENSE)
    _same(lambda m: m.tensor(DENSE).to_sparse().to_sparse(layout=m.strided))
    for fn in (lambda m: m.tensor(DENSE).to_sparse(0), lambda m: m.tensor(DENSE).to_sparse(-1),
               lambda m: m.tensor(DENSE).to_sparse(3), lambda m: m.tensor(1.0).to_sparse(1),
               lambda m: m.tensor(DENSE).to_sparse(layout=m.strided, blocksize=(1, 1)),
               lambda m: m.tensor(DENSE).to_sparse(layout=m.sparse_bsr, blocksize=(2, 2)),
               lambda m: m.tensor(DENSE).to_sparse(layout=m.sparse_bsc, blocksize=(2, 2))):
        _same_error(fn)


def test_compressed_private_parts_are_refused():
    c = _coo(ember).to_sparse_csr()
    with _raises(NotImplementedError, f"Could not run 'aten::_indices' with arguments from the "
                                      f"'{_backend(c, 'SparseCsr')}' backend"):
        c._indices()
    with _raises(NotImplementedError, "Could not run 'aten::_values'"):
        c._values()
    for fn in (lambda m: _coo(m).to_sparse_csr()._indices(),
               lambda m: _coo(m).to_sparse_csr()._values(),
               lambda m: _coo(m).to_sparse_csc()._indices()):
        _same_error(fn)


def test_dispatcher_errors_name_the_aten_op():
    s = _coo(ember)
    for fn, op in ((lambda m: m.clamp(_coo(m), -1, 1), "clamp"),
                   (lambda m: m.exp(_coo(m)), "exp"), (lambda m: _coo(m).max(), "max"),
                   (lambda m: _coo(m)[0:1], "as_strided"),
                   (lambda m: _coo(m).to_sparse_csr().index_select(0, m.tensor([1])),
                    "index_select")):
        with pytest.raises(NotImplementedError) as info:
            fn(ember)
        message = str(info.value)
        assert message.startswith(f"Could not run 'aten::{op}' with arguments from the '")
        assert "This could be because the operator doesn't exist for this backend, or was " \
               "omitted during the selective/custom build process" in message
        _same_error(fn)
    assert s._nnz() == 3


def test_norm_of_a_sparse_tensor():
    s = _coo(ember)  # (1, 0) twice: 1 + 3
    np.testing.assert_allclose(s.norm().item(), (4.0 ** 2 + 2.0 ** 2) ** 0.5, rtol=1e-6)
    np.testing.assert_allclose(ember.norm(s, p=1).item(), 6.0)
    np.testing.assert_allclose(s.norm(dim=(0, 1)).item(), 20.0 ** 0.5, rtol=1e-6)
    with _raises(RuntimeError, "norm_sparse currently only supports full reductions, so 'dim' "
                               "must either be empty or contain all dimensions of the input"):
        s.norm(dim=1)
    with _raises(RuntimeError, "norm(): input dtype should be either floating point or "
                               "complex. Got Long instead."):
        _coo(ember, [1, 2, 3]).norm()
    torch = _torch()
    for fn in (lambda m: _coo(m).norm(), lambda m: m.norm(_coo(m), p=3),
               lambda m: m.norm(_coo(m), p="fro")):
        np.testing.assert_allclose(fn(ember).item(), fn(torch).item(), rtol=1e-6)
    for fn in (lambda m: _coo(m).norm(dim=1), lambda m: _coo(m, [1, 2, 3]).norm(),
               lambda m: _coo(m).to_sparse_csr().norm()):
        _same_error(fn)


def test_bool_copy_fill_and_rounding_division():
    one = ember.sparse_coo_tensor([[0]], [1.0], (1,))
    assert bool(one) and not bool(ember.sparse_coo_tensor([[0]], [0.0], (1,)))
    with _raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
        bool(_coo(ember))
    s = _coo(ember)
    src = ember.sparse_coo_tensor([[0], [1]], [5], (3, 3))
    assert s.copy_(src) is s and s.shape == (3, 3) and s.dtype is ember.float32
    np.testing.assert_array_equal(_np(s), [[0, 5, 0], [0, 0, 0], [0, 0, 0]])
    with _raises(RuntimeError, "copy_() between dense and sparse Tensors is not implemented! "
                               "Found self type = torch."):  # (torch.sparse.FloatTensor on CPU)
        _coo(ember).copy_(ember.ones(2, 3))
    with _raises(NotImplementedError, "Could not run 'aten::fill_.Scalar'"):
        _coo(ember).fill_(1)
    with _raises(RuntimeError, "shrinking the size of sparse dimensions (from [2, 3] to [3, 2]) "
                               "on a non-empty sparse tensor is not supported."):
        _coo(ember).copy_(ember.sparse_coo_tensor([[0], [1]], [5.0], (3, 2)))
    i = _coo(ember, [1, 2, 3])
    np.testing.assert_array_equal(_np(i.div(2, rounding_mode="floor")), [[0, 0, 1], [2, 0, 0]])
    np.testing.assert_array_equal(_np(i.div(3, rounding_mode="trunc")), [[0, 0, 0], [1, 0, 0]])

    def copied(m):
        s = _coo(m)
        s.copy_(m.sparse_coo_tensor([[0], [1]], [5], (3, 3)))
        return s

    _same(copied)
    _same(lambda m: _coo(m, [1, 2, 3]).div(2, rounding_mode="floor"))
    _same(lambda m: _coo(m, [1, 2, 3]).div(3, rounding_mode="trunc"))
    for fn in (lambda m: bool(_coo(m)), lambda m: _coo(m).fill_(1)):
        _same_error(fn)
    if ember.ones(1).device.type == "cpu":  # the legacy type names are the device's
        _same_error(lambda m: _coo(m).copy_(m.ones(2, 3)))
    torch = _torch()
    assert bool(one) == bool(torch.sparse_coo_tensor([[0]], [1.0], (1,)))


def test_bool_sparse_addition_and_subtraction_errors():
    b = _coo(ember, [True, True, False])
    with _raises(NotImplementedError, "\"cadd_sparse\" not implemented for 'Bool'"):
        b + b
    with _raises(RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead."):
        b - b
    _same_error(lambda m: _coo(m, [True, True, False]) + _coo(m, [True, True, False]))
    _same_error(lambda m: _coo(m, [True, True, False]) - _coo(m, [True, True, False]))


def test_sparse_coo_tensor_checks_declared_coalescing_and_size_types():
    with _raises(RuntimeError, "cannot set is_coalesced to true if indices correspond to "
                               "uncoalesced COO tensor"):
        ember.sparse_coo_tensor([[1, 0], [1, 1]], [1, 2], (2, 2), is_coalesced=True,
                                check_invariants=True)
    with ember.sparse.check_sparse_tensor_invariants():
        with _raises(RuntimeError, "cannot set is_coalesced to true"):
            ember.sparse_coo_tensor([[0, 0], [1, 1]], [1, 2], (2, 2), is_coalesced=True)
    assert ember.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2], (2, 2),
                                   is_coalesced=True).is_coalesced()  # not checked
    with _raises(TypeError, "sparse_coo_tensor() received an invalid combination of arguments "
                            "- got (Tensor, Tensor, tuple), but expected one of:"):
        ember.sparse_coo_tensor(ember.zeros(2, 1, dtype=ember.long), ember.ones(1), (3.0, 3))
    with _raises(TypeError, "got (list, list, int)"):
        ember.sparse_coo_tensor([[0]], [1.0], 3)
    assert ember.sparse_coo_tensor([[0]], [1.0], (ember.tensor(3),)).shape == (3,)
    for fn in (lambda m: m.sparse_coo_tensor([[1, 0], [1, 1]], [1, 2], (2, 2), is_coalesced=True,
                                             check_invariants=True),
               lambda m: m.sparse_coo_tensor(m.zeros(2, 1, dtype=m.long), m.ones(1), (3.0, 3)),
               lambda m: m.sparse_coo_tensor([[0]], [1.0], 3)):
        _same_error(fn)


def test_equal_of_sparse_tensors_is_refused():
    with _raises(NotImplementedError, "Could not run 'aten::eq"):
        ember.equal(_coo(ember), _coo(ember))


def test_compressed_layouts_name_themselves_and_add_dense_tensors():
    c = _coo(ember).to_sparse_csr()
    np.testing.assert_array_equal(_np(c + ember.ones(2, 3)), DENSE + 1)
    np.testing.assert_array_equal(_np(c.add(ember.ones(2, 3))), DENSE + 1)
    with _raises(RuntimeError, "add: expected 'self' and 'other' to have same size, but self "
                               "has size [] while other has size [2, 3] (FYI: op2-sparse "
                               "addition does not currently support broadcasting)"):
        c + 1
    csc = c.to_sparse_csc()
    with _raises(RuntimeError, "Sparse CSC tensors do not have strides"):
        csc.stride()
    with _raises(RuntimeError, "Sparse CSC tensors do not have is_contiguous"):
        csc.is_contiguous()
    with _raises(RuntimeError, "Sparse CSR tensors do not have strides"):
        c.squeeze()
    assert c.clone().fill_(2.0).values().cpu().numpy().tolist() == [2.0, 2.0]
    with _raises(RuntimeError, "nbytes is not defined for sparse tensors."):
        _ = _coo(ember).nbytes
    _same(lambda m: _coo(m).to_sparse_csr() + m.ones(2, 3))
    _same(lambda m: _coo(m).to_sparse_csr().fill_(2.0))
    for fn in (lambda m: _coo(m).to_sparse_csr() + 1,
               lambda m: _coo(m).to_sparse_csr() + m.ones(3),
               lambda m: _coo(m).to_sparse_csc().stride(),
               lambda m: _coo(m).to_sparse_csc().contiguous(),
               lambda m: _coo(m).to_sparse_bsr((1, 1)).is_contiguous(),
               lambda m: _coo(m).to_sparse_csr().squeeze(),
               lambda m: _coo(m).to_sparse_csr().narrow(0, 0, 1),
               lambda m: _coo(m).nbytes, lambda m: _coo(m).resize_(3, 3),
               lambda m: _coo(m).to_sparse_csr().permute(1, 0)):
        _same_error(fn)
