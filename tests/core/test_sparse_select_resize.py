"""Sparse indexing (``s[i]``, ``select``, ``index_select``, ``narrow_copy``, ``unsqueeze``:
``ember.sparse._indexing``) and the in-place resizes of compressed tensors
(``resize_as_sparse_``, ``resize_``, ``resize_as_``, ``zero_``: ``ember.sparse._resize``):
outputs (layouts, indices and their order, values, coalesced flags) and errors against PyTorch
(the oracle), float64 gradchecks in the values."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import assert_same_dispatch_error, sparse_parts

import ember
from ember.autograd import gradcheck

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta"),
]

# (0, 2, 0) twice: uncoalesced
IDX = [[0, 1, 1, 0, 2, 0], [2, 0, 2, 2, 1, 1], [0, 1, 3, 0, 2, 3]]
VAL = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
DENSE = [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]


def _torch():
    return pytest.importorskip("torch")


def _coo(m, coalesced=False, dtype=None, values=VAL):
    s = m.sparse_coo_tensor(m.tensor(IDX), m.tensor(values, dtype=dtype), (3, 3, 4))
    return s.coalesce() if coalesced else s


def _hybrid(m):
    return m.arange(24.0).reshape(3, 2, 4).to_sparse(2)


def _same(e, t):
    """ember ``e`` equals torch ``t`` (sparse or dense): layout, size, dtype, index arrays in
    order, values, coalesced flag."""
    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    for a, b in zip(sparse_parts(e), sparse_parts(t), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _both(fn):
    torch = _torch()
    _same(fn(ember), fn(torch))


def _same_error(fn):
    torch = _torch()
    assert_same_dispatch_error(lambda: fn(ember), lambda: fn(torch))


# -- select and s[i] ------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m).select(0, 0),
    lambda m: _coo(m).select(0, -1),  # one element: coalesced
    lambda m: _coo(m).select(1, 2),
    lambda m: _coo(m).select(2, 0),
    lambda m: _coo(m, True).select(0, 0),
    lambda m: _coo(m, True).select(2, 0),
    lambda m: m.select(_coo(m), 1, 1),
    lambda m: _coo(m).select(0, 0).select(0, 2),
    lambda m: _coo(m).select(0, 0).select(0, 2).select(0, 0),  # dense: duplicates summed
    lambda m: _coo(m).select(0, 0).select(0, 1).select(0, 2),  # dense: nothing stored
    lambda m: _coo(m, dtype=m.int32, values=[1, 2, 3, 4, 5, 6])[0, 2, 0],  # dtype kept
    lambda m: _coo(m, dtype=m.bool, values=[True] * 6)[0, 2, 0],
    lambda m: _hybrid(m).select(2, 1),  # a dense dimension
    lambda m: _hybrid(m).select(0, 2),
    lambda m: _hybrid(m).select(1, 1).select(0, 0),  # dense part
    lambda m: m.tensor([0.0, 2.0, 0.0, 3.0]).to_sparse().select(0, 1),
    lambda m: m.tensor(DENSE).to_sparse_csr().select(0, 2),  # compressed: COO, coalesced
    lambda m: m.tensor(DENSE).to_sparse_csr().select(1, 0),
    lambda m: m.tensor(DENSE).to_sparse_csc().select(0, 2),
    lambda m: m.tensor(DENSE).to_sparse_csc().select(1, 0),
    lambda m: m.tensor(DENSE).to_sparse_csr().select(1, 1).select(0, 1),
])
def test_select_matches_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m)[0],
    lambda m: _coo(m)[-1],
    lambda m: _coo(m)[0, 2],
    lambda m: _coo(m)[0][2],
    lambda m: _coo(m)[0, 2, 0],
    lambda m: _coo(m)[..., 0],
    lambda m: _coo(m)[0, ..., 1],
    lambda m: _coo(m)[None],
    lambda m: _coo(m)[0, None],
    lambda m: _coo(m)[..., None],
    lambda m: _coo(m)[0, None, None, 1, 2, None],
    lambda m: _coo(m)[:, 0],
    lambda m: _coo(m)[0:3, 0],
    lambda m: _coo(m)[::1, 0],
    lambda m: _coo(m)[(0,)],
    lambda m: _coo(m)[m.tensor(1)],
    lambda m: _hybrid(m)[0, 1, 2],  # the last index on the dense result
    lambda m: _hybrid(m)[1, ..., 3],
    lambda m: m.tensor(DENSE).to_sparse_csr()[2],
    lambda m: m.tensor(DENSE).to_sparse_csr()[:, 0],
    lambda m: m.tensor(DENSE).to_sparse_csc()[1, 1],
])
def test_getitem_matches_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m)[:2, 0],
    lambda m: _coo(m)[5],
    lambda m: _coo(m)[-4],
    lambda m: _coo(m)[0, 5],
    lambda m: _coo(m)[0, 1, 2, 3],
    lambda m: _coo(m)[1.0],
    lambda m: _coo(m)[m.tensor([0, 1])],
    lambda m: _coo(m)[m.tensor(1.0)],
    lambda m: _coo(m).select(3, 0),
    lambda m: _coo(m).select(0, 3),
    lambda m: _coo(m).select(0, -4),
    lambda m: m.sparse_coo_tensor(m.zeros(0, 1, dtype=m.int64), m.tensor([2.0]), ()).select(0, 0),
    lambda m: m.tensor(DENSE).to_sparse_csr()[None],
])
def test_select_and_getitem_errors_match_torch(fn):
    _same_error(fn)


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
@pytest.mark.parametrize("blocksize", [(2, 2), (1, 2), (2, 1)])
def test_select_of_block_tensors_matches_torch_select_copy(layout, blocksize):
    """Every element of the blocks on the line, zeros included (PyTorch's ``select`` refuses
    where its result cannot be a view: ``select_copy`` is the same result)."""
    torch = _torch()
    dense = np.arange(1.0, 17.0).reshape(4, 4) * (np.arange(16).reshape(4, 4) % 3 != 1)
    for dim in (0, 1):
        for index in range(4):
            s = [getattr(m.tensor(dense), "to_sparse_" + layout)(blocksize)
                 for m in (ember, torch)]
            _same(s[0].select(dim, index), torch.select_copy(s[1], dim, index))
            _same(s[0][(slice(None),) * dim + (index,)], torch.select_copy(s[1], dim, index))


# -- index_select ---------------------------------------------------------------------------

def _index(m, values):
    return m.tensor(values, dtype=m.int64)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m).index_select(0, _index(m, [2, 0, 0])),  # nnz >= len(index)
    lambda m: _coo(m).index_select(1, _index(m, [2, 1])),
    lambda m: _coo(m).index_select(2, _index(m, [3, 0])),
    lambda m: _coo(m, True).index_select(0, _index(m, [2, 0, 0])),
    lambda m: _coo(m, True).index_select(0, _index(m, [1, 0, 1, 0, 2, 2, 1, 0, 0])),  # nnz <
    lambda m: _coo(m).index_select(0, _index(m, [-1])),  # one element: coalesced
    lambda m: _coo(m).index_select(0, _index(m, [])),
    lambda m: _coo(m).index_select(-1, _index(m, [1, 1, 1, 1, 1, 1, 1, 1])),
    lambda m: m.index_select(_coo(m), 1, _index(m, [2, 2])),
    lambda m: _hybrid(m).index_select(2, _index(m, [3, 1])),  # a dense dimension
    lambda m: _hybrid(m).index_select(0, _index(m, [2, 2])),
])
def test_index_select_matches_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m).index_select(0, _index(m, [3])),
    lambda m: _coo(m).index_select(0, _index(m, [-4])),
    lambda m: _coo(m).index_select(0, m.tensor([1.0])),
    lambda m: _coo(m).index_select(0, m.tensor([1], dtype=m.int32)),
    lambda m: _coo(m).index_select(0, _index(m, [[1]])),
    lambda m: _coo(m).index_select(0, m.tensor(1)),
    lambda m: _coo(m).index_select(0, _index(m, [1]).to_sparse()),
    lambda m: _coo(m).index_select(3, _index(m, [0])),
    lambda m: _coo(m).index_select(3, m.tensor([0.0])),
    lambda m: _hybrid(m).index_select(2, _index(m, [4])),
    lambda m: m.tensor(DENSE).to_sparse_csr().index_select(0, _index(m, [1])),
    lambda m: m.sparse_coo_tensor(m.zeros(0, 1, dtype=m.int64), m.tensor([2.0]),
                                  ()).index_select(0, _index(m, [0])),
])
def test_index_select_errors_match_torch(fn):
    _same_error(fn)


@pytest.mark.parity
def test_large_index_select_matches_torch_once_coalesced():
    """Past PyTorch's brute-force limit (nnz * len(index) > 16384) its kernel orders the
    matches otherwise; the elements are the same."""
    torch = _torch()
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 50, size=(2, 400))
    vals = rng.standard_normal(400)
    index = rng.integers(-50, 50, size=300)
    out = []
    for m in (ember, torch):
        s = m.sparse_coo_tensor(m.tensor(idx), m.tensor(vals), (50, 50))
        out.append(s.index_select(0, m.tensor(index)))
    assert out[0]._nnz() == out[1]._nnz() and not out[0].is_coalesced()
    _same(out[0].coalesce(), out[1].coalesce())


# -- narrow_copy and unsqueeze --------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m).narrow_copy(2, 1, 2),
    lambda m: _coo(m).narrow_copy(0, 1, 2),
    lambda m: _coo(m, True).narrow_copy(0, 1, 2),  # the flag is kept
    lambda m: _coo(m).narrow_copy(1, 1, 0),
    lambda m: _coo(m).narrow_copy(1, 3, 0),
    lambda m: m.narrow_copy(_coo(m), 0, 1, 1),
    lambda m: _hybrid(m).narrow_copy(2, 1, 2),
    lambda m: _coo(m).unsqueeze(0),
    lambda m: _coo(m).unsqueeze(-1),
    lambda m: _hybrid(m).unsqueeze(2),
    lambda m: _hybrid(m).unsqueeze(3),
    lambda m: m.tensor([[1.0, 0.0]]).to_sparse().unsqueeze(1),  # one element: coalesced
])
def test_narrow_copy_and_unsqueeze_match_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _coo(m).narrow_copy(0, -1, 1),
    lambda m: _coo(m).narrow_copy(0, 2, 2),
    lambda m: _coo(m).narrow_copy(0, 0, -1),
    lambda m: _coo(m).narrow_copy(5, 0, -1),
    lambda m: _coo(m).narrow_copy(3, 0, 1),
    lambda m: _coo(m).narrow_copy(-1, 0, 1),
    lambda m: m.tensor(DENSE).to_sparse_csr().narrow_copy(0, 0, 1),
    lambda m: m.tensor(DENSE).to_sparse_csc().narrow_copy(0, 0, 1),
    lambda m: m.eye(4).to_sparse_bsr(2).narrow_copy(0, 0, 1),
    lambda m: m.tensor(DENSE).to_sparse_csc().unsqueeze(0),
    lambda m: m.eye(4).to_sparse_bsr(2).unsqueeze(0),
])
def test_narrow_copy_and_unsqueeze_errors_match_torch(fn):
    _same_error(fn)


# -- autograd -------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda s: s.select(0, 0),
    lambda s: s.select(2, 3),
    lambda s: s[0, 2],  # dense, duplicates summed
    lambda s: s[0, 2, 0],
    lambda s: s[:, 1, None],
    lambda s: s.index_select(1, ember.tensor([2, 2, 0])),
    lambda s: ember.index_select(s, 0, ember.tensor([1, 0, 1, 0, 2, 2, 1, 0, 0])),
    lambda s: s.narrow_copy(2, 1, 3),
    lambda s: s.unsqueeze(1),
])
def test_gradcheck_in_the_values(fn):
    def f(v):
        out = fn(ember.sparse_coo_tensor(ember.tensor(IDX), v, (3, 3, 4)))
        return out.to_dense() if out.layout == ember.sparse_coo else out

    v = ember.tensor(VAL, dtype=ember.float64, requires_grad=True)
    assert gradcheck(f, (v,))


@pytest.mark.parity
def test_grad_fn_names_match_torch():
    torch = _torch()
    for fn in (lambda s, m: s.select(0, 0), lambda s, m: s[0, 2],
               lambda s, m: s.index_select(1, m.tensor([2, 2])),
               lambda s, m: s.narrow_copy(2, 1, 3), lambda s, m: s.unsqueeze(0)):
        names = []
        for m in (ember, torch):
            v = m.tensor(VAL, dtype=m.float64, requires_grad=True)
            names.append(fn(m.sparse_coo_tensor(m.tensor(IDX), v, (3, 3, 4)), m).grad_fn.name())
        assert names[0] == names[1]


def test_hybrid_gradcheck():
    def f(v):
        s = ember.sparse_coo_tensor(ember.tensor([[0, 2, 2]]), v, (3, 4))
        return s.select(1, 2).to_dense(), s[2], s.index_select(1, ember.tensor([3, 0])).to_dense()

    assert gradcheck(f, (ember.randn(3, 4, dtype=ember.float64, requires_grad=True),))


# -- resize_as_sparse_ of compressed tensors ----------------------------------------------------

def _kept(e, t):
    """``e`` equals ``t`` but for the values past the ones ``self`` had kept (PyTorch leaves
    them uninitialised; Ember's are zero)."""
    for a, b in zip(sparse_parts(e)[:-1], sparse_parts(t)[:-1], strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


@pytest.mark.parity
@pytest.mark.parametrize(("make", "src"), [
    (lambda m: m.tensor(DENSE).to_sparse_csr(), lambda m: m.eye(4).to_sparse_csr()),
    (lambda m: m.tensor(DENSE).to_sparse_csr(), lambda m: m.ones(3, 5).to_sparse_csr()),
    (lambda m: m.tensor(DENSE).to_sparse_csc(), lambda m: m.eye(2).to_sparse_csc()),
    (lambda m: m.eye(4).to_sparse_bsr(2), lambda m: m.ones(6, 6).to_sparse_bsr(2)),
    (lambda m: m.ones(4, 4).to_sparse_bsc(2), lambda m: m.eye(2).to_sparse_bsc(1)),
    (lambda m: m.eye(4).to_sparse_csr(), lambda m: m.eye(2, dtype=m.float64).to_sparse_csr()),
])
def test_resize_as_sparse_of_compressed_tensors_matches_torch(make, src):
    torch = _torch()
    t = make(torch)
    old = t.values().clone().numpy()  # (t's own .numpy() would fix the size of its storage)
    t.resize_as_sparse_(src(torch))
    e = make(ember)
    version = e._version
    assert e.resize_as_sparse_(src(ember)) is e and e._version > version
    _kept(e, t)
    kept = min(old.size, sparse_parts(t)[-1].size)
    values = sparse_parts(e)[-1]
    np.testing.assert_array_equal(values.reshape(-1)[:kept], old.reshape(-1)[:kept])
    assert not values.reshape(-1)[kept:].any()
    _kept(ember.resize_as_sparse_(make(ember), src(ember)), t)  # the function form


@pytest.mark.parity
def test_resize_as_sparse_to_the_same_size_keeps_self_or_takes_src_indices():
    torch = _torch()
    same = [m.tensor(DENSE).to_sparse_csr().resize_as_sparse_((3 * m.tensor(DENSE)).to_sparse_csr())
            for m in (ember, torch)]
    _same(*same)  # same size and nnz: nothing changes, as in PyTorch
    s = ember.tensor(DENSE).to_sparse_csr().resize_as_sparse_(ember.eye(3).to_sparse_csr())
    # PyTorch keeps its crow_indices beside 3 elements (not a valid tensor); Ember takes src's
    np.testing.assert_array_equal(s.crow_indices().numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(s.col_indices().numpy(), [0, 1, 2])
    np.testing.assert_array_equal(s.values().numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_as_sparse_(m.eye(4).to_sparse_csc()),
    lambda m: m.tensor(DENSE).to_sparse_csc().resize_as_sparse_(m.eye(4).to_sparse_csr()),
    lambda m: m.eye(4).to_sparse_bsr(2).resize_as_sparse_(m.eye(4).to_sparse_csr()),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_as_sparse_(m.eye(4).to_sparse()),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_as_sparse_(m.eye(4)),
    lambda m: m.tensor(DENSE).to_sparse().resize_as_sparse_(m.eye(4).to_sparse_csr()),
    lambda m: m.tensor(DENSE).resize_as_sparse_(m.eye(4).to_sparse_csr()),
    lambda m: m.tensor(DENSE).to_sparse_csr().requires_grad_().resize_as_sparse_(
        m.eye(4).to_sparse_csr()),
    lambda m: m.tensor(DENSE).to_sparse_csr().sparse_resize_((4, 4), 2, 0),
    lambda m: m.tensor(DENSE).to_sparse_csc().sparse_resize_and_clear_((4, 4), 2, 0),
])
def test_compressed_resize_errors_match_torch(fn):
    _same_error(fn)


# -- resize_, resize_as_ and zero_ --------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(4, 5),  # more rows: empty ones
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_((3, 4)),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(2, 3),  # row 2 counted in row 1
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(1, 3),  # 3 elements kept, unordered
    lambda m: m.ones(3, 3).to_sparse_csr().resize_(1, 3),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(0, 3),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_as_(m.eye(4)),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_as_(m.eye(4).to_sparse()),
    lambda m: m.tensor(DENSE).to_sparse().resize_as_(m.eye(4).to_sparse()),
    lambda m: m.tensor(DENSE).to_sparse_csr().zero_(),
    lambda m: m.tensor(DENSE).to_sparse_csc().zero_(),
    lambda m: m.eye(4).to_sparse_bsr(2).zero_(),
])
def test_resize_and_zero_match_torch(fn):
    _both(fn)
    torch = _torch()
    np.testing.assert_array_equal(fn(ember).to_dense().numpy(), fn(torch).to_dense().numpy())


def test_csc_resize_grows():
    """PyTorch's CSC resize_ writes compressed indices of the rows' length (not a valid CSC
    tensor); Ember's grows a CSC tensor as the transpose of a CSR one."""
    s = ember.tensor(DENSE).to_sparse_csc()
    assert s.resize_(4, 5) is s
    np.testing.assert_array_equal(s.ccol_indices().numpy(), [0, 2, 3, 5, 5, 5])
    expected = np.zeros((4, 5))
    expected[:3, :3] = DENSE
    np.testing.assert_array_equal(s.to_dense().numpy(), expected)
    with pytest.raises(RuntimeError, match="Resizing rows of sparse CSC tensors to a smaller"):
        s.resize_(3, 5)
    with pytest.raises(RuntimeError, match="Ember resizes CSR and CSC tensors in place"):
        ember.eye(4).to_sparse_bsr(2).resize_(6, 6)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(3, 2),
    lambda m: m.tensor(DENSE).to_sparse_csc().resize_(3, 2),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(3),
    lambda m: m.tensor(DENSE).to_sparse_csr().resize_(-1, 3),
    lambda m: m.tensor(DENSE).to_sparse_csr().requires_grad_().resize_(4, 4),
    lambda m: (m.tensor(DENSE).requires_grad_().to_sparse_csr() * 1).resize_(4, 4),
    lambda m: m.tensor(DENSE).to_sparse().resize_(4, 4),
    lambda m: m.tensor(DENSE).to_sparse().resize_as_(m.eye(4)),
])
def test_resize_errors_match_torch(fn):
    _same_error(fn)
