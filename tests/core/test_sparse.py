"""Sparse COO and CSR tensors: construction, conversions, products, reductions, arithmetic,
autograd (float64 gradchecks), reprs, and parity with PyTorch (the oracle, when installed)."""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest
from testutils import assert_same_error, assert_same_sparse

import ember
from ember.autograd import gradcheck, gradgradcheck

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0]
pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
]

DENSE = np.array([[0.0, 0.0, 4.0], [4.0, 0.0, 5.0]])


def _coo(dtype=ember.float32, **kw):
    return ember.sparse_coo_tensor(IDX, ember.tensor(VAL, dtype=dtype), (2, 3), **kw)


def _np(t):
    return (t.to_dense() if t.layout is not ember.strided else t).detach().numpy()


def _torch():
    return pytest.importorskip("torch")


def _t(torch, x):
    """A torch copy of an ember tensor (sparse ones as sparse, with the same layout)."""
    if x.layout is ember.sparse_coo:
        return torch.sparse_coo_tensor(torch.from_numpy(x._indices().numpy().copy()),
                                       torch.from_numpy(x._values().numpy().copy()),
                                       tuple(x.shape), is_coalesced=x.is_coalesced())
    if x.layout is ember.sparse_csr:
        return torch.sparse_csr_tensor(torch.from_numpy(x.crow_indices().numpy().copy()),
                                       torch.from_numpy(x.col_indices().numpy().copy()),
                                       torch.from_numpy(x.values().detach().numpy().copy()),
                                       tuple(x.shape))
    return torch.from_numpy(x.detach().numpy().copy())


def _same_sparse(e, t):
    """An ember sparse tensor equals a torch one (values to float32 rounding)."""
    assert_same_sparse(e, t, rtol=1e-6)


# -- construction and metadata -------------------------------------------------------------------

def test_coo_construction_and_metadata():
    s = _coo()
    assert s.layout is ember.sparse_coo and s.is_sparse and not s.is_sparse_csr
    assert isinstance(s, ember.Tensor)
    assert s.shape == (2, 3) and s.dim() == 2 and s.numel() == 6 and s.dtype is ember.float32
    assert s.device == ember.get_default_device()
    assert s.sparse_dim() == 2 and s.dense_dim() == 0 and s._nnz() == 4
    assert not s.is_coalesced()
    np.testing.assert_array_equal(_np(s), DENSE)
    assert ember.zeros(2).layout is ember.strided and not ember.zeros(2).is_sparse_csr


def test_coo_size_inference_dtype_and_hybrid():
    s = ember.sparse_coo_tensor([[0, 3]], [1, 2])
    assert s.shape == (4,) and s.dtype is ember.int64
    np.testing.assert_array_equal(_np(s), [1, 0, 0, 2])
    h = ember.sparse_coo_tensor([[0, 2]], ember.ones(2, 3), dtype=ember.float64)
    assert h.shape == (3, 3) and h.sparse_dim() == 1 and h.dense_dim() == 1
    assert h.dtype is ember.float64
    np.testing.assert_array_equal(_np(h), [[1, 1, 1], [0, 0, 0], [1, 1, 1]])
    # PyTorch's GCN example: a numpy int32 (transposed) index array, float values cast to int64
    edges = np.array([[0, 1], [1, 0], [1, 1]], dtype=np.int32)
    a = ember.sparse_coo_tensor(edges.T, ember.ones(3), (2, 2), dtype=ember.int64)
    assert a.dtype is ember.int64
    np.testing.assert_array_equal(_np(a), [[0, 1], [1, 1]])


def test_coo_is_coalesced_flag_and_single_element():
    assert ember.sparse_coo_tensor([[1]], [2.0], (3,)).is_coalesced()
    s = ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), is_coalesced=True)
    assert s.is_coalesced()
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 1]])


@pytest.mark.parametrize("call,message", [
    (lambda: ember.sparse_coo_tensor([[0, 1]], [1.0], (2,)),
     "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 1"),
    (lambda: ember.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2,)),
     "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 1, sparse_dim = 2, "
     "dense_dim = 0"),
    (lambda: ember.sparse_coo_tensor([[3]], [1.0], (2,)),
     "size is inconsistent with indices: for dim 0, size is 2 but found index 3"),
    (lambda: ember.sparse_coo_tensor([[-1]], [1.0], (2,)), "found negative index -1 for dim 0"),
    (lambda: ember.sparse_coo_tensor([0, 1], [1.0, 2.0], (2,)),
     "indices must be sparse_dim x nnz, but got: [2]"),
])
def test_coo_construction_errors(call, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()


def test_coalesce_sums_duplicates_and_sorts():
    s = ember.sparse_coo_tensor([[1, 0, 1, 0], [2, 1, 0, 1]], [1.0, 2.0, 3.0, 4.0], (2, 3))
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c and c._nnz() == 3
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1], [1, 0, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [6.0, 3.0, 1.0])
    np.testing.assert_array_equal(_np(c), _np(s))
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    np.testing.assert_array_equal(s._indices().numpy(), [[1, 0, 1, 0], [2, 1, 0, 1]])
    assert not s._values().requires_grad


def test_to_sparse_from_dense():
    x = ember.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == 3
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 1, 1], [1, 0, 2]])
    np.testing.assert_array_equal(s.values().numpy(), [1.0, 2.0, 3.0])
    assert x.to_sparse_coo()._nnz() == 3
    rows = x.to_sparse(1)  # a hybrid tensor: nonzero rows, dense blocks
    assert rows.sparse_dim() == 1 and rows.dense_dim() == 1 and rows._nnz() == 2
    np.testing.assert_array_equal(_np(rows), x.numpy())
    assert x.to_dense() is x
    assert x.sparse_dim() == 0 and x.dense_dim() == 2
    assert s.to_sparse() is s and s.to_dense().layout is ember.strided
    with pytest.raises(RuntimeError,
                       match=r"dense_to_sparse: sparse_dim argument must be in \[0,2\] range"):
        x.to_sparse(3)


def test_csr_construction_and_conversions():
    c = ember.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [3.0, 4.0, 5.0])
    assert c.layout is ember.sparse_csr and c.is_sparse_csr and not c.is_sparse
    assert c.shape == (2, 3) and c._nnz() == 3
    np.testing.assert_array_equal(c.crow_indices().numpy(), [0, 1, 3])
    np.testing.assert_array_equal(c.col_indices().numpy(), [2, 0, 2])
    np.testing.assert_array_equal(_np(c), [[0, 0, 3], [4, 0, 5]])
    coo = c.to_sparse()
    assert coo.layout is ember.sparse_coo and coo.is_coalesced()
    np.testing.assert_array_equal(coo.indices().numpy(), [[0, 1, 1], [2, 0, 2]])
    back = coo.to_sparse_csr()
    np.testing.assert_array_equal(back.crow_indices().numpy(), [0, 1, 3])
    x = ember.tensor([[0.0, 7.0], [0.0, 0.0], [8.0, 9.0]])
    xc = x.to_sparse_csr()
    np.testing.assert_array_equal(xc.crow_indices().numpy(), [0, 1, 1, 3])
    np.testing.assert_array_equal(_np(xc), x.numpy())
    assert x.to_sparse(layout=ember.sparse_csr).layout is ember.sparse_csr
    with pytest.raises(RuntimeError, match=r"`crow_indices\[..., -1\] == nnz` is not satisfied"):
        ember.sparse_csr_tensor([0, 1, 4], [2, 0, 2], [3.0, 4.0, 5.0], (2, 3))
    with pytest.raises(RuntimeError, match="crow_indices expected sparse row compressed"):
        coo.crow_indices()
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout "
                                           "but got SparseCsr"):
        c.indices()
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout "
                                           "but got Strided"):
        x.indices()


# -- dense ops refuse sparse operands ------------------------------------------------------------

def test_dense_ops_raise_for_sparse_tensors():
    s = _coo()
    backend = f"Sparse{s.device.type.upper()}"
    for op in (ember.exp, lambda t: t.view(6), lambda t: t[0:1],
               lambda t: ember.sigmoid(t), lambda t: t.mean()):
        with pytest.raises(NotImplementedError,
                           match=f"with arguments from the '{backend}' backend"):
            op(s)
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        s.numpy()
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't "
                                           "have storage"):
        s.data_ptr()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + ember.ones(2, 3)
    with pytest.raises(RuntimeError, match="reshape is not implemented for sparse tensors"):
        s.reshape(6)


def test_sparse_class_does_not_turn_on_torch_function_dispatch():
    from ember import overrides
    from ember._sparse_tensor import SparseTensor

    assert not overrides._overrides(SparseTensor)


# -- products ------------------------------------------------------------------------------------

def test_sparse_dense_products():
    s = _coo()
    d = ember.tensor(np.arange(6.0).reshape(3, 2), dtype=ember.float32)
    want = DENSE @ d.numpy()
    for out in (ember.mm(s, d), s @ d, s.mm(d), s.matmul(d), ember.matmul(s, d),
                ember.spmm(s, d), ember.sparse.mm(s, d), s.to_sparse_csr() @ d,
                ember.mm(s.to_sparse_csr(), d)):
        assert out.layout is ember.strided
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose((s @ ember.ones(3)).numpy(), DENSE.sum(1))
    e = ember.tensor(np.arange(8.0).reshape(4, 2), dtype=ember.float32)
    for out in (e @ s, ember.mm(e, s), ember.matmul(e, s), ember.spmm(e, s)):
        np.testing.assert_allclose(out.numpy(), e.numpy() @ DENSE, rtol=1e-6)
    ss = s @ s.t()
    assert ss.layout is ember.sparse_coo
    np.testing.assert_allclose(_np(ss), DENSE @ DENSE.T)
    sm = ember.smm(s, d)
    assert sm.layout is ember.sparse_coo
    np.testing.assert_allclose(_np(sm), want)
    addmm = ember.sparse.addmm(ember.ones(2, 2), s, d, beta=2.0, alpha=0.5)
    np.testing.assert_allclose(addmm.numpy(), 2 + 0.5 * want, rtol=1e-6)


def test_sparse_product_errors():
    s = _coo()
    with pytest.raises(RuntimeError, match="addmm: Argument #3 \\(dense\\): Expected dim 0 "
                                           "size 3, got 4"):
        ember.mm(s, ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.mm(s, ember.ones(3, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="addmm: matrices expected, got 3D tensor"):
        ember.mm(ember.ones(2, 2, 2).to_sparse(), ember.ones(2, 2))


def test_product_reuses_the_pattern_plan():
    s = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    s @ ember.ones(2, 2)
    plan = s._cache["rows"]
    s @ ember.ones(2, 3)
    assert s._cache["rows"] is plan


# -- reductions and arithmetic -------------------------------------------------------------------

def test_sum():
    s = _coo()
    total = s.sum()
    assert total.layout is ember.strided and total.shape == ()
    assert total.item() == pytest.approx(13.0)
    assert ember.sum(s).item() == pytest.approx(13.0)
    assert ember.sparse.sum(s, dtype=ember.float64).dtype is ember.float64
    rows = ember.sparse.sum(s, 1)
    assert rows.layout is ember.sparse_coo and rows.shape == (2,)
    np.testing.assert_allclose(_np(rows), DENSE.sum(1))
    np.testing.assert_allclose(_np(s.sum(0)), DENSE.sum(0))
    np.testing.assert_allclose(_np(ember.sum(s, dim=-1)), DENSE.sum(1))
    assert ember.sparse.sum(s, (0, 1)).layout is ember.strided
    keep = s.sum(1, keepdim=True)
    assert keep.shape == (2, 1)
    np.testing.assert_allclose(_np(keep), DENSE.sum(1, keepdims=True))
    h = ember.ones(2, 3).to_sparse(1)
    np.testing.assert_allclose(ember.sparse.sum(h, 0).numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(_np(ember.sparse.sum(h, 1)), [3.0, 3.0])


def test_add_and_sub_functions_take_a_sparse_operand():
    """``ember.add``/``sub`` (not only the operators) as torch: dense + sparse is dense,
    sparse + sparse sparse, alpha applied; sparse + dense is PyTorch's error."""
    torch = _torch()
    s, ones = _coo(), ember.ones(2, 3)
    ts, tones = _t(torch, s), torch.ones(2, 3)
    np.testing.assert_allclose(ember.add(ones, s).numpy(), torch.add(tones, ts).numpy())
    np.testing.assert_allclose(ember.sub(ones, s, alpha=2).numpy(),
                               torch.sub(tones, ts, alpha=2).numpy())
    _same_sparse(ember.add(s, s, alpha=3).coalesce(), torch.add(ts, ts, alpha=3).coalesce())
    _same_sparse(ember.sub(s, s, alpha=0.5).coalesce(), torch.sub(ts, ts, alpha=0.5).coalesce())
    assert_same_error(lambda: ember.add(s, ones), lambda: torch.add(ts, tones))


def test_arithmetic():
    s = _coo()
    ones = ember.ones(2, 3)
    out = ones + s
    assert out.layout is ember.strided
    np.testing.assert_allclose(out.numpy(), 1 + DENSE)
    np.testing.assert_allclose((ones - s).numpy(), 1 - DENSE)
    np.testing.assert_allclose(_np(s * 2), 2 * DENSE)
    np.testing.assert_allclose(_np(2 * s), 2 * DENSE)
    np.testing.assert_allclose(_np(s / 2), DENSE / 2)
    np.testing.assert_allclose(_np(-s), -DENSE)
    np.testing.assert_allclose(_np(s * ember.tensor(3.0)), 3 * DENSE)
    sampled = s * ember.tensor([1.0, 2.0, 3.0])  # broadcast, sampled at the pattern
    assert sampled.layout is ember.sparse_coo
    np.testing.assert_allclose(_np(sampled), DENSE * [1, 2, 3])
    np.testing.assert_allclose(_np(s + s), 2 * DENSE)
    assert (s.coalesce() + s.coalesce()).is_coalesced()
    np.testing.assert_allclose(_np(s - s), 0 * DENSE)
    np.testing.assert_allclose(_np(s * s), DENSE * DENSE)
    other = ember.tensor([[0.0, 5.0, 1.0], [0.0, 0.0, 0.0]]).to_sparse()
    np.testing.assert_allclose(_np(s * other), DENSE * _np(other))
    # PyTorch's GCN example: int64 sparse + float32 dense eye
    a = ember.sparse_coo_tensor([[0, 1], [1, 0]], ember.ones(2), (2, 2), dtype=ember.int64)
    b = ember.eye(2) + a
    assert b.dtype is ember.float32
    np.testing.assert_array_equal(b.numpy(), [[1, 1], [1, 1]])
    with pytest.raises(RuntimeError, match="add: expected sizes of 'self' and 'other' to match"):
        s + ember.sparse_coo_tensor(IDX, VAL, (3, 3))


def test_transpose_and_moves():
    s = _coo()
    t = s.t()
    assert t.shape == (3, 2) and not t.is_coalesced()
    np.testing.assert_array_equal(_np(t), DENSE.T)
    np.testing.assert_array_equal(_np(s.transpose(0, 1)), DENSE.T)
    d = s.to(ember.float64)
    assert d.dtype is ember.float64 and d.layout is ember.sparse_coo
    assert s.to(s.device) is s and s.double().dtype is ember.float64
    cpu = s.to("cpu")
    assert cpu.device == ember.device("cpu") and cpu.layout is ember.sparse_coo
    np.testing.assert_array_equal(_np(cpu), DENSE)
    c = s.clone()
    assert c._vals is not s._vals
    np.testing.assert_array_equal(_np(c), DENSE)


def test_to_another_device():
    from ember.testing import register_test_device

    register_test_device("testdev")
    s = _coo().to("cpu").to("testdev")
    assert s.device.type == "testdev" and s._vals.device.type == "testdev"
    out = s @ ember.ones(3, 2, device="testdev")
    assert out.device.type == "testdev"
    np.testing.assert_allclose(out.cpu().numpy(), DENSE @ np.ones((3, 2)))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        s @ ember.ones(3, 2, device="cpu")


def test_pickle_and_deepcopy():
    s = _coo(ember.float64, requires_grad=True)
    for r in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert r.layout is ember.sparse_coo and r.requires_grad and r.dtype is ember.float64
        np.testing.assert_array_equal(_np(r), DENSE)
    c = pickle.loads(pickle.dumps(s.detach().to_sparse_csr()))
    assert c.layout is ember.sparse_csr
    np.testing.assert_array_equal(_np(c), DENSE)


# -- autograd ------------------------------------------------------------------------------------

def _v64():
    return ember.tensor(VAL, dtype=ember.float64, requires_grad=True)


def _d64(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.standard_normal(shape), requires_grad=True)


def test_gradcheck_sparse_dense_products():
    v, d, e = _v64(), _d64(3, 2), _d64(4, 2, seed=1)

    def sp(v):
        return ember.sparse_coo_tensor(IDX, v, (2, 3))

    assert gradcheck(lambda v, d: ember.sparse.mm(sp(v), d), (v, d))
    assert gradgradcheck(lambda v, d: ember.sparse.mm(sp(v), d), (v, d))
    assert gradcheck(lambda v, d: sp(v) @ d, (v, d))
    assert gradcheck(lambda v, e: e @ sp(v), (v, e))
    assert gradcheck(lambda v, d: sp(v).to_sparse_csr() @ d, (v, d))
    assert gradcheck(lambda v, d: ember.sparse.addmm(d[:2], sp(v), d, beta=0.5, alpha=2.0),
                     (v, d))
    assert gradcheck(lambda v: sp(v) @ ember.ones(3, dtype=ember.float64), (v,))


def test_gradcheck_conversions_and_reductions():
    v = _v64()

    def sp(v):
        return ember.sparse_coo_tensor(IDX, v, (2, 3))

    assert gradcheck(lambda v: sp(v).to_dense(), (v,))
    assert gradcheck(lambda v: sp(v).coalesce().values(), (v,))
    assert gradcheck(lambda v: ember.sparse.sum(sp(v), 1).to_dense(), (v,))
    assert gradcheck(lambda v: sp(v).sum(), (v,))
    assert gradcheck(lambda v: (sp(v) * 3 + sp(v) * sp(v)).to_dense(), (v,))
    assert gradcheck(lambda v: (sp(v) * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64))
                     .to_dense(), (v,))
    assert gradcheck(lambda v: ember.ones(2, 3, dtype=ember.float64) - sp(v), (v,))
    assert gradcheck(lambda v: sp(v).t().to_dense(), (v,))
    x = _d64(2, 3)
    assert gradcheck(lambda x: x.to_sparse().to_dense(), (x,))
    assert gradcheck(lambda x: x.to_sparse_csr().values(), (x,))


def test_gradcheck_softmax():
    v = _v64()

    def sp(v):
        return ember.sparse_coo_tensor(IDX, v, (2, 3))

    for dim in (0, 1, -1):
        assert gradcheck(lambda v, d=dim: ember.sparse.softmax(sp(v), d).to_dense(), (v,))
        assert gradcheck(lambda v, d=dim: ember.sparse.log_softmax(sp(v), d).values(), (v,))


def test_sparse_leaf_gradient_has_its_pattern():
    s = _coo(ember.float64, requires_grad=True)
    assert s.is_leaf and s.requires_grad and s.grad is None
    d = ember.ones(3, 2, dtype=ember.float64, requires_grad=True)
    ember.sparse.mm(s, d).sum().backward()
    g = s.grad
    assert g.layout is ember.sparse_coo
    # each coordinate once (PyTorch's): the duplicates of (0, 2) would count its gradient twice
    np.testing.assert_array_equal(g._indices().numpy(), s.coalesce().indices().numpy())
    np.testing.assert_allclose(g._values().numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(d.grad.numpy(), DENSE.T @ np.ones((2, 2)))
    s.grad = None
    assert s.grad is None
    v = _v64()
    made = ember.sparse_coo_tensor(IDX, v, (2, 3))
    assert not made.is_leaf and made.grad_fn.name() == \
        "SparseCooTensorWithDimsAndTensorsBackward0"
    assert ember.sparse.mm(made, d).grad_fn.name() == "SparseAddmmBackward0"
    assert (made @ d).grad_fn.name() == "MmBackward0"
    assert made.to_dense().grad_fn.name() == "ToDenseBackward0"


# -- PyTorch parity ----------------------------------------------------------------------------

def _repr_cases():
    i = ember.tensor(IDX, device="cpu")
    v = ember.tensor(VAL, device="cpu")
    return {
        "coo": lambda: ember.sparse_coo_tensor(i, v, (2, 3)),
        "coalesced": lambda: ember.sparse_coo_tensor(i, v, (2, 3)).coalesce(),
        "float64 requires grad": lambda: ember.sparse_coo_tensor(i, v, (2, 3),
                                                                 dtype=ember.float64,
                                                                 requires_grad=True),
        "empty": lambda: ember.sparse_coo_tensor(ember.zeros(2, 0, dtype=ember.int64,
                                                             device="cpu"),
                                                 ember.zeros(0, device="cpu"), (2, 3)),
        "hybrid": lambda: ember.ones(2, 3, device="cpu").to_sparse(1),
        "int64": lambda: ember.tensor([[0, 5], [6, 0]], device="cpu").to_sparse(),
        "csr": lambda: ember.tensor([[0.0, 1.5], [2.0, 0.0]], device="cpu").to_sparse_csr(),
    }


@pytest.mark.parametrize("case", list(_repr_cases()))
def test_repr_matches_torch(case):
    torch = _torch()
    e = _repr_cases()[case]()
    t = _t(torch, e)
    if e.requires_grad:
        t.requires_grad_(True)
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_repr_of_a_result_names_its_grad_fn():
    torch = _torch()
    v = ember.tensor(VAL, requires_grad=True, device="cpu")
    e = ember.sparse_coo_tensor(ember.tensor(IDX, device="cpu"), v, (2, 3))
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL, requires_grad=True),
                                (2, 3))
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_parity_conversions_and_coalesce():
    torch = _torch()
    s = ember.sparse_coo_tensor([[1, 0, 1, 0], [2, 1, 0, 1]], [1.0, 2.0, 3.0, 4.0], (2, 3))
    ts = _t(torch, s)
    _same_sparse(s.coalesce(), ts.coalesce())
    _same_sparse(s.t(), ts.t())
    _same_sparse(s.coalesce().to_sparse_csr(), ts.coalesce().to_sparse_csr())
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    _same_sparse(ember.tensor(x).to_sparse(), torch.tensor(x).to_sparse())
    _same_sparse(ember.tensor(x).to_sparse(1), torch.tensor(x).to_sparse(1))
    _same_sparse(ember.tensor(x).to_sparse_csr(), torch.tensor(x).to_sparse_csr())
    _same_sparse(ember.sparse.sum(s, 0), torch.sparse.sum(ts, 0))
    _same_sparse(s.sum(1, keepdim=True), ts.sum(1, keepdim=True))
    _same_sparse(s * 2, ts * 2)
    _same_sparse(s.coalesce() + s.coalesce(), ts.coalesce() + ts.coalesce())
    _same_sparse(s.coalesce() * s.coalesce(), ts.coalesce() * ts.coalesce())
    _same_sparse(ember.sparse.softmax(s, 1), torch.sparse.softmax(ts, 1))
    _same_sparse(ember.sparse.log_softmax(s, 0), torch.sparse.log_softmax(ts, 0))


def test_parity_products_and_gradients():
    torch = _torch()
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.4)
    d = rng.standard_normal((4, 3))
    e = rng.standard_normal((2, 5))
    # values of sparse_coo_tensor(i, v): the sampled gradient, in both frameworks
    es = ember.tensor(dense).to_sparse()
    ev = es.values().detach().requires_grad_(True)
    ed = ember.tensor(d, requires_grad=True)
    ee = ember.tensor(e, requires_grad=True)
    tv = torch.tensor(ev.detach().numpy(), requires_grad=True)
    td = torch.tensor(d, requires_grad=True)
    te = torch.tensor(e, requires_grad=True)
    ti = torch.from_numpy(es.indices().numpy().copy())
    eS = ember.sparse_coo_tensor(es.indices(), ev, (5, 4))
    tS = torch.sparse_coo_tensor(ti, tv, (5, 4))
    eout = (ember.sparse.mm(eS, ed) * 2).sum() + (ee @ eS).pow(2).sum()
    tout = (torch.sparse.mm(tS, td) * 2).sum() + (te @ tS).pow(2).sum()
    np.testing.assert_allclose(eout.item(), tout.item(), rtol=1e-10)
    eout.backward()
    tout.backward()
    np.testing.assert_allclose(ev.grad.numpy(), tv.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ed.grad.numpy(), td.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ee.grad.numpy(), te.grad.numpy(), rtol=1e-10)
    # a sparse leaf through torch.sparse.mm: a sparse gradient with the leaf's pattern
    eL = ember.tensor(dense).to_sparse().requires_grad_(True)
    tL = torch.tensor(dense).to_sparse().requires_grad_(True)
    ember.sparse.mm(eL, ember.tensor(d)).sum().backward()
    torch.sparse.mm(tL, torch.tensor(d)).sum().backward()
    _same_sparse(eL.grad.coalesce(), tL.grad.coalesce())


@pytest.mark.parametrize("name", ["mm shape", "mm dtype", "3d", "add sparse dense",
                                  "uncoalesced indices", "csr indices", "dense coalesce"])
def test_errors_match_torch(name):
    torch = _torch()
    e_s = ember.sparse_coo_tensor(IDX, VAL, (2, 3))
    t_s = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (2, 3))
    cases = {
        "mm shape": (lambda m, s: m.mm(s, m.ones(4, 2))),
        "mm dtype": (lambda m, s: m.mm(s, m.ones(3, 2, dtype=m.float64))),
        "3d": (lambda m, s: m.mm(m.ones(2, 2, 2).to_sparse(), m.ones(2, 2))),
        "add sparse dense": (lambda m, s: s + m.ones(2, 3)),
        "uncoalesced indices": (lambda m, s: s.indices()),
        "csr indices": (lambda m, s: s.coalesce().to_sparse_csr().indices()),
        "dense coalesce": (lambda m, s: m.ones(2).coalesce()),
    }
    fn = cases[name]
    assert_same_error(lambda: fn(ember, e_s), lambda: fn(torch, t_s))


def test_sampled_addmm_spdiags_and_invariants_switch():
    torch = _torch()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 5))
    pattern = np.array([[0, 1.0, 0, 2.0, 0], [3.0, 0, 0, 0, 0], [0, 0, 4.0, 5.0, 6.0]])
    e = ember.sparse.sampled_addmm(ember.tensor(pattern).to_sparse_csr(), ember.tensor(a),
                                   ember.tensor(b), beta=0.5, alpha=2.0)
    t = torch.sparse.sampled_addmm(torch.tensor(pattern).to_sparse_csr(), torch.tensor(a),
                                   torch.tensor(b), beta=0.5, alpha=2.0)
    _same_sparse(e, t)
    m1, m2 = _d64(3, 4), _d64(4, 5, seed=1)
    csr = ember.tensor(pattern).to_sparse_csr()
    assert gradcheck(lambda m1, m2: ember.sparse.sampled_addmm(csr, m1, m2).values(), (m1, m2))
    diags = rng.standard_normal((3, 5))
    for offsets, shape in (([0, -1, 2], (5, 5)), ([1, 0, -3], (4, 6))):
        e = ember.sparse.spdiags(ember.tensor(diags), ember.tensor(offsets), shape)
        t = torch.sparse.spdiags(torch.tensor(diags), torch.tensor(offsets), shape)
        np.testing.assert_allclose(_np(e), t.to_dense().numpy())
        _same_sparse(e, t)  # uncoalesced, the diagonals in the order of offsets
    d = _d64(3, 5)
    assert gradcheck(lambda d: ember.sparse.spdiags(d, ember.tensor([0, 1, -1]), (4, 4))
                     .to_dense(), (d,))
    inv = ember.sparse.check_sparse_tensor_invariants
    assert not inv.is_enabled()
    with inv():
        assert inv.is_enabled()
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            ember.sparse_coo_tensor([[5]], [1.0], (2,))
    assert not inv.is_enabled()


def test_as_sparse_gradcheck():
    check = ember.sparse.as_sparse_gradcheck(gradcheck)
    dense = ember.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, -1.0]], dtype=ember.float64)
    x = ember.tensor([[1.0, 0.5], [-2.0, 1.5], [0.25, 3.0]], dtype=ember.float64,
                     requires_grad=True)
    for s in (dense.to_sparse(), dense.to_sparse_csr()):
        s = s.requires_grad_()
        assert check(lambda a, b: ember.sparse.mm(a, b), (s, x))
        assert check(lambda a: a * 2.0, (s,))  # a sparse output: compared through to_dense
    wrong = ember.sparse.as_sparse_gradcheck(gradcheck)
    with pytest.raises(Exception, match="Jacobian mismatch"):
        wrong(lambda a: _WrongGrad.apply(a.to_dense()), (dense.to_sparse().requires_grad_(),))


class _WrongGrad(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 2


# -- CSC (ember.sparse_csc) ----------------------------------------------------------------------

def _csc(dtype=ember.float32, **kw):
    """DENSE as CSC: columns 0 and 2 hold (1, 0) and (0, 2), (1, 2)."""
    return ember.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 1], ember.tensor([4.0, 4.0, 5.0],
                                                                          dtype=dtype), (2, 3),
                                   **kw)


def _tcsc(torch, x):
    return torch.sparse_csc_tensor(torch.from_numpy(x.ccol_indices().numpy().copy()),
                                   torch.from_numpy(x.row_indices().numpy().copy()),
                                   torch.from_numpy(x.values().detach().numpy().copy()),
                                   tuple(x.shape))


def test_csc_construction_parts_and_conversions():
    c = _csc()
    assert c.layout is ember.sparse_csc and not c.is_sparse and not c.is_sparse_csr
    assert c.shape == (2, 3) and c._nnz() == 3 and c.sparse_dim() == 2 and c.dense_dim() == 0
    np.testing.assert_array_equal(c.ccol_indices().numpy(), [0, 1, 1, 3])
    np.testing.assert_array_equal(c.row_indices().numpy(), [1, 0, 1])
    np.testing.assert_array_equal(_np(c), DENSE)
    inferred = ember.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 1], [4.0, 4.0, 5.0])
    assert inferred.shape == (2, 3)
    for made in (ember.tensor(DENSE, dtype=ember.float32).to_sparse_csc(),
                 ember.tensor(DENSE, dtype=ember.float32).to_sparse(layout=ember.sparse_csc),
                 _coo().to_sparse_csc(), _coo().to_sparse_csr().to_sparse_csc(),
                 _coo().to_sparse(layout=ember.sparse_csc)):
        assert made.layout is ember.sparse_csc
        np.testing.assert_array_equal(made.ccol_indices().numpy(), [0, 1, 1, 3])
        np.testing.assert_array_equal(made.row_indices().numpy(), [1, 0, 1])
        np.testing.assert_array_equal(made.values().numpy(), [4.0, 4.0, 5.0])
    assert c.to_sparse_csc() is c
    coo = c.to_sparse()  # column-major order, uncoalesced (as PyTorch's)
    assert coo.layout is ember.sparse_coo and not coo.is_coalesced()
    np.testing.assert_array_equal(coo._indices().numpy(), [[1, 0, 1], [0, 2, 2]])
    np.testing.assert_array_equal(_np(coo), DENSE)
    csr = c.to_sparse_csr()
    np.testing.assert_array_equal(csr.crow_indices().numpy(), [0, 1, 3])
    np.testing.assert_array_equal(csr.col_indices().numpy(), [2, 0, 2])
    t = c.t()  # CSC.t() is CSR and back
    assert t.layout is ember.sparse_csr and t.shape == (3, 2)
    np.testing.assert_array_equal(_np(t), DENSE.T)
    assert t.t().layout is ember.sparse_csc
    np.testing.assert_array_equal(_np(t.t()), DENSE)
    np.testing.assert_array_equal(_np(c.clone()), DENSE)
    assert c.to(ember.float64).dtype is ember.float64 and c.to(ember.float64).layout is c.layout


def test_csc_arithmetic_products_and_sum():
    c = _csc()
    d = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose((c @ d).numpy(), DENSE @ d.numpy())
    np.testing.assert_allclose(ember.mm(c, d).numpy(), DENSE @ d.numpy())
    np.testing.assert_allclose(ember.sparse.mm(c, d).numpy(), DENSE @ d.numpy())
    np.testing.assert_allclose((d @ c).numpy(), d.numpy() @ DENSE)
    np.testing.assert_allclose((c @ ember.ones(3)).numpy(), DENSE.sum(1))
    for out, ref in ((c * 2, DENSE * 2), (-c, -DENSE), (c + c, 2 * DENSE), (c - c, 0 * DENSE),
                     (c * c, DENSE * DENSE), (c / 2, DENSE / 2),
                     (c * ember.tensor([1.0, 2.0, 3.0]), DENSE * [1.0, 2.0, 3.0])):
        assert out.layout is ember.sparse_csc
        np.testing.assert_allclose(_np(out), ref)
    np.testing.assert_allclose((ember.ones(2, 3) + c).numpy(), 1 + DENSE)
    assert c.sum().item() == 13.0
    with pytest.raises(RuntimeError, match="only compressed sparse format supported for "
                                           "sum.dim_IntList is CSR, but got layout SparseCsc"):
        c.sum(0)
    with pytest.raises(NotImplementedError, match="_sparse_softmax"):
        ember.sparse.softmax(c, 1)
    s = ember.sparse.spdiags(ember.tensor([[1.0, 2.0, 3.0]]), ember.tensor([0]), (3, 3),
                             layout=ember.sparse_csc)
    assert s.layout is ember.sparse_csc
    np.testing.assert_array_equal(_np(s), np.diag([1.0, 2.0, 3.0]))


def test_csc_errors():
    c = _csc()
    d = ember.tensor(DENSE)
    for x, word in ((d, "Strided"), (_coo(), "Sparse"), (_coo().to_sparse_csr(), "SparseCsr")):
        for name in ("ccol_indices", "row_indices"):
            with pytest.raises(RuntimeError, match=f"{name} expected sparse column compressed "
                                                   f"tensor layout but got {word}"):
                getattr(x, name)()
    for name in ("crow_indices", "col_indices"):
        with pytest.raises(RuntimeError, match=f"{name} expected sparse row compressed tensor "
                                               "layout but got SparseCsc"):
            getattr(c, name)()
    for name in ("indices", "coalesce", "is_coalesced"):
        with pytest.raises(RuntimeError, match=f"{name} expected sparse coordinate tensor "
                                               "layout but got SparseCsc"):
            getattr(c, name)()
    with pytest.raises(RuntimeError, match=r"`ccol_indices\[..., -1\] == nnz` is not "
                                           "satisfied"):
        ember.sparse_csc_tensor([0, 1, 2], [0, 1, 1], [1.0, 2.0, 3.0], (2, 2))
    with pytest.raises(RuntimeError, match="`0 <= row_indices < nrows` is not satisfied"):
        ember.sparse_csc_tensor([0, 1, 2], [0, 5], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match=r"ccol_indices.shape\[-1\] must be equal to the "
                                           r"number of columns \+ 1 \(=4\), but got 3"):
        ember.sparse_csc_tensor([0, 1, 2], [0, 1], [1.0, 2.0], (2, 3))
    with pytest.raises(RuntimeError, match=r"dense_to_sparse_csc: dense_dim argument must be in "
                                           r"\[0,1\] range, but 2 is given"):
        ember.ones(2, 2, 2).to_sparse_csc(dense_dim=2)


def test_csc_gradients():
    v = ember.tensor([4.0, 4.0, 5.0], dtype=ember.float64, requires_grad=True)
    d = ember.tensor(np.arange(6.0).reshape(3, 2) / 3, dtype=ember.float64, requires_grad=True)

    def sp(values):
        return ember.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 1], values, (2, 3))

    assert gradcheck(lambda v, d: sp(v) @ d, (v, d))
    assert gradcheck(lambda v, d: ember.sparse.mm(sp(v), d), (v, d))
    assert gradcheck(lambda v, d: d @ sp(v), (v, d))
    assert gradgradcheck(lambda v, d: sp(v) @ d, (v, d))
    assert gradcheck(lambda v: sp(v).to_dense(), (v,))
    assert gradcheck(lambda v: sp(v).to_sparse_csr().values(), (v,))
    assert gradcheck(lambda x: x.to_sparse_csc().values(), ((d + 1).detach().requires_grad_(),))
    # a CSC leaf's gradient is CSC with its pattern
    c = _csc(ember.float64, requires_grad=True)
    (c @ d).sum().backward()
    assert c.grad.layout is ember.sparse_csc
    np.testing.assert_allclose(c.grad.values().numpy(), d.detach().numpy().sum(1)[[0, 2, 2]])
    check = ember.sparse.as_sparse_gradcheck(gradcheck)
    assert check(lambda s, d: s @ d, (_csc(ember.float64, requires_grad=True), d))


def test_csc_pickle_and_deepcopy():
    c = _csc()
    for out in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert out.layout is ember.sparse_csc
        np.testing.assert_array_equal(out.ccol_indices().numpy(), [0, 1, 1, 3])
        np.testing.assert_array_equal(_np(out), DENSE)


@pytest.mark.parity
def test_csc_parity_with_torch():
    torch = _torch()
    c = _csc()
    tc = _tcsc(torch, c)
    assert repr(c.to("cpu")) == repr(tc).replace("torch.", "ember.")  # reprs: on the CPU
    c64 = _csc(ember.float64, device="cpu", requires_grad=True)
    assert repr(c64) == repr(_tcsc(torch, c64).requires_grad_()).replace("torch.", "ember.")
    td = torch.tensor(DENSE, dtype=torch.float32)
    for e, t in ((ember.tensor(DENSE, dtype=ember.float32).to_sparse_csc(), td.to_sparse_csc()),
                 (c.t(), tc.t()), (c.t().t(), tc.t().t()), (c * 2, tc * 2), (c + c, tc + tc)):
        assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
        assert repr(e.to("cpu")) == repr(t).replace("torch.", "ember.")
    _same_sparse(c.to_sparse(), tc.to_sparse())
    _same_sparse(c.to_sparse_csr(), tc.to_sparse_csr())
    # products and the gradients of the values and of the dense operand
    v = ember.tensor([4.0, 4.0, 5.0], requires_grad=True)
    d = ember.tensor(np.arange(6.0).reshape(3, 2), dtype=ember.float32, requires_grad=True)
    tv = torch.tensor([4.0, 4.0, 5.0], requires_grad=True)
    tdd = torch.arange(6.0).reshape(3, 2).requires_grad_()
    e = ember.sparse_csc_tensor([0, 1, 1, 3], [1, 0, 1], v, (2, 3))
    t = torch.sparse_csc_tensor(torch.tensor([0, 1, 1, 3]), torch.tensor([1, 0, 1]), tv, (2, 3))
    out, tout = e @ d, t @ tdd
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    (out * ember.tensor([[1.0, -2.0], [3.0, 0.5]])).sum().backward()
    (tout * torch.tensor([[1.0, -2.0], [3.0, 0.5]])).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())
    np.testing.assert_allclose(d.grad.numpy(), tdd.grad.numpy())
    assert_same_error(lambda: c.sum(0), lambda: tc.sum(0))
    assert_same_error(lambda: c.crow_indices(), lambda: tc.crow_indices())
    assert_same_error(lambda: c.coalesce(), lambda: tc.coalesce())
    assert_same_error(lambda: ember.tensor(DENSE).ccol_indices(),
                      lambda: torch.tensor(DENSE).ccol_indices())


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_function_forms_of_transposes_take_sparse_tensors(layout):
    # ember.transpose/swapaxes/swapdims/t and .mT/.adjoint() reach the sparse tensor's own
    # transpose (CSR <-> CSC), as PyTorch's function forms do
    dense = ember.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    s = {"coo": dense.to_sparse(), "csr": dense.to_sparse_csr(),
         "csc": dense.to_sparse_csc()}[layout]
    flipped = {"coo": ember.sparse_coo, "csr": ember.sparse_csc, "csc": ember.sparse_csr}[layout]
    for r in (ember.transpose(s, 0, 1), ember.swapaxes(s, 0, 1), ember.swapdims(s, 1, 0),
              ember.t(s), s.mT, s.adjoint()):
        assert r.layout is flipped
        np.testing.assert_array_equal(r.to_dense().numpy(), dense.numpy().T)


def test_permute_of_a_coo_tensor():
    d = ember.arange(48.0, dtype=ember.float64).reshape(2, 3, 2, 4)
    s = d.to_sparse(2)  # two sparse dims, two dense
    for dims in [(1, 0, 2, 3), (0, 1, 3, 2), (1, 0, 3, 2)]:
        r = ember.permute(s, dims)
        assert r.layout is ember.sparse_coo and (r.sparse_dim(), r.dense_dim()) == (2, 2)
        np.testing.assert_array_equal(r.to_dense().numpy(), d.permute(dims).numpy())
    assert s.permute(0, 1, 2, 3) is s
    with pytest.raises(RuntimeError, match="transpositions between sparse and dense"):
        s.permute(0, 2, 1, 3)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        s.permute(0, 0, 2, 3)
    with pytest.raises(NotImplementedError, match="as_strided.*SparseCsr"):
        ember.permute(ember.eye(3).to_sparse_csr(), (1, 0))
    v = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    i = ember.tensor([[0, 1], [1, 0]])
    assert gradcheck(lambda v: ember.sparse_coo_tensor(i, v, (2, 2, 2)).permute(1, 0, 2)
                     .to_dense(), (v,))
