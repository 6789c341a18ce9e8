"""Layouts where Ember followed NumPy instead of PyTorch: the strides of basic indexing with
None (PyTorch unsqueezes left to right, before a later integer selects), of unsqueeze and
view on size-1 dims (``computeStride``), the C-order results of scans, reductions and topk
(sort keeps its input's layout), and the element order, count and coalesced flag of the
sum of two sparse COO tensors (PyTorch's merge of the two element lists)."""

import pytest

import ember

E = Ellipsis


def _x(lib):
    return lib.arange(24.).reshape(2, 3, 4)


# (make input, index, PyTorch 2.13's (shape, stride, storage_offset))
_INDEX = {
    "none_then_int_last": (_x, (E, None, 1), ((2, 3, 1), (12, 4, 4), 1)),
    "none_then_int_first": (_x, (None, 0), ((1, 3, 4), (24, 4, 1), 0)),
    "none_none_int": (_x, (None, None, -1), ((1, 1, 3, 4), (24, 24, 4, 1), 12)),
    "none_int_slice": (_x, (None, 0, slice(None, None, 2)), ((1, 2, 4), (24, 8, 1), 0)),
    "transposed": (lambda lib: _x(lib).transpose(0, 2), (None, 1),
                   ((1, 3, 2), (4, 4, 12), 1)),
    "sliced": (lambda lib: _x(lib)[:, ::2, 1:], (slice(None), None, 0),
               ((2, 1, 3), (12, 16, 1), 1)),
    "mid_none_select": (_x, (0, None, slice(1, None), 2), ((1, 2), (12, 4), 6)),
}

# (make, PyTorch 2.13's (shape, stride))
_VIEWS = {
    "unsqueeze_twice_transposed": (lambda lib: _x(lib).transpose(0, 2).unsqueeze(-1)
                                   .unsqueeze(-1), ((4, 3, 2, 1, 1), (1, 4, 12, 1, 1))),
    "unsqueeze_odd_unit_stride": (lambda lib: lib.arange(4.).reshape(1, 4, 1).transpose(0, 1)
                                  .unsqueeze(0), ((1, 4, 1, 1), (4, 1, 4, 1))),
    "view_same_shape": (lambda lib: lib.arange(4.).reshape(1, 4, 1).transpose(0, 1).view(4, 1, 1),
                        ((4, 1, 1), (1, 1, 1))),
    "view_adds_unit_dims": (lambda lib: lib.arange(6.).reshape(1, 6, 1)[:, ::2].view(1, 3, 1, 1),
                            ((1, 3, 1, 1), (6, 2, 1, 1))),
    "expand_keeps_unit_strides": (lambda lib: lib.arange(4.).reshape(1, 4, 1).transpose(0, 1)
                                  .expand(2, 4, 1, 1), ((2, 4, 1, 1), (0, 1, 4, 1))),
}


def _cl(lib):
    return lib.arange(120.).reshape(2, 3, 4, 5).sin().contiguous(
        memory_format=lib.channels_last)


def _tr(lib):
    return lib.arange(120.).reshape(2, 3, 4, 5).sin().transpose(1, 3)


# (make input, op, PyTorch 2.13's stride of the result)
_RESULTS = {
    "cumsum_cl": (_cl, lambda t: t.cumsum(1), (60, 20, 5, 1)),
    "cumprod_tr": (_tr, lambda t: t.cumprod(0), (60, 12, 3, 1)),
    "logcumsumexp_cl": (_cl, lambda t: t.logcumsumexp(2), (60, 20, 5, 1)),
    "cummax_values_cl": (_cl, lambda t: t.cummax(1)[0], (60, 20, 5, 1)),
    "cummax_indices_cl": (_cl, lambda t: t.cummax(1)[1], (60, 20, 5, 1)),
    "sort_cl_keeps_layout": (_cl, lambda t: t.sort(1)[0], (60, 1, 15, 3)),
    "sort_indices_tr": (_tr, lambda t: t.sort(-1)[1], (60, 1, 5, 20)),
    "argsort_cl": (_cl, lambda t: t.argsort(1), (60, 1, 15, 3)),
    "sort_expanded": (lambda lib: lib.arange(5.).sin().expand(3, 5), lambda t: t.sort(0)[0],
                      (5, 1)),
    "topk_indices_cl": (_cl, lambda t: t.topk(1, 1)[1], (20, 20, 5, 1)),
    "sum_keepdim_cl": (_cl, lambda t: t.sum(1, keepdim=True), (20, 20, 5, 1)),
    "sum_tr": (_tr, lambda t: t.sum(1), (12, 3, 1)),
    "mean_keepdim_tr": (_tr, lambda t: t.mean(1, keepdim=True), (12, 12, 3, 1)),
    "amax_keepdim_cl": (_cl, lambda t: t.amax(-1, keepdim=True), (12, 4, 1, 1)),
    "any_keepdim_cl": (_cl, lambda t: (t > 0).any(1, keepdim=True), (20, 20, 5, 1)),
}


def _geometry(t):
    return tuple(t.shape), t.stride(), t.storage_offset()


@pytest.mark.parametrize("case", sorted(_INDEX))
def test_basic_index_strides(case):
    make, index, want = _INDEX[case]
    v = make(ember)[index]
    assert _geometry(v) == want
    base = make(ember)
    v = base[index]
    v.fill_(-1.0)  # still a view of the base
    assert float(base.min()) == -1.0


@pytest.mark.parametrize("case", sorted(_VIEWS))
def test_view_strides(case):
    make, want = _VIEWS[case]
    v = make(ember)
    assert (tuple(v.shape), v.stride()) == want


@pytest.mark.parametrize("case", sorted(_RESULTS))
def test_result_strides(case):
    make, op, want = _RESULTS[case]
    x = make(ember)
    r = op(x)
    assert r.stride() == want
    ref = op(make(ember).contiguous())  # the layout changes nothing else
    assert ember.equal(r, ref)


@pytest.mark.parametrize("case", sorted(_INDEX) + sorted(_VIEWS) + sorted(_RESULTS))
def test_against_pytorch(case):
    torch = pytest.importorskip("torch")
    if case in _INDEX:
        make, index, _ = _INDEX[case]
        assert _geometry(make(ember)[index]) == _geometry(make(torch)[index])
    elif case in _VIEWS:
        make, _ = _VIEWS[case]
        assert make(ember).stride() == make(torch).stride()
    else:
        make, op, _ = _RESULTS[case]
        assert op(make(ember)).stride() == op(make(torch)).stride()


def _u(lib):  # uncoalesced, with a repeated coordinate
    return lib.sparse_coo_tensor([[1, 0, 1]], [1., 2., 3.], (3,))


def _v(lib):
    return lib.sparse_coo_tensor([[2, 1]], [10., 20.], (3,))


def _c(lib):
    return _u(lib).coalesce()


def _inplace(a, b):
    a.add_(b)
    return a


# (op, PyTorch 2.13's (indices, values, nnz, is_coalesced))
_SPARSE = {
    "same_tensor": (lambda lib: (lambda s: s + s)(_u(lib)),
                    ([[1, 0, 1]], [2., 4., 6.], 3, False)),
    "equal_indices": (lambda lib: _u(lib) + lib.sparse_coo_tensor([[1, 0, 1]], [5., 6., 7.], (3,)),
                      ([[1, 0, 1]], [6., 8., 10.], 3, False)),
    "merge_order": (lambda lib: _v(lib) + _u(lib), ([[1, 0, 1, 2, 1]],
                                                    [1., 2., 3., 10., 20.], 5, False)),
    "coalesced_plus_uncoalesced": (lambda lib: _c(lib) + _u(lib),
                                   ([[0, 1, 0, 1]], [2., 5., 2., 3.], 4, False)),
    "uncoalesced_plus_coalesced": (lambda lib: _u(lib) + _c(lib),
                                   ([[0, 1, 0, 1]], [2., 5., 2., 3.], 4, False)),
    "sub_self_keeps_zeros": (lambda lib: (lambda s: s - s)(_u(lib)),
                             ([[1, 0, 1]], [0., 0., 0.], 3, False)),
    "coalesced_minus": (lambda lib: _c(lib) - _v(lib),
                        ([[0, 1, 2, 1]], [2., 4., -10., -20.], 4, False)),
    "both_coalesced": (lambda lib: _v(lib).coalesce() - _c(lib),
                       ([[0, 1, 2]], [-2., 16., 10.], 3, True)),
    "add_inplace_self": (lambda lib: (lambda s: _inplace(s, s))(_u(lib)),
                         ([[1, 0, 1]], [2., 4., 6.], 3, False)),
    "add_inplace_coalesced": (lambda lib: _inplace(_u(lib), _c(lib)),
                              ([[0, 1, 0, 1]], [2., 5., 2., 3.], 4, False)),
    "hybrid": (lambda lib: (lambda s: s + s)(
        lib.sparse_coo_tensor([[1, 0, 1]], [[1., 1.], [2., 2.], [3., 3.]], (3, 2))),
        ([[1, 0, 1]], [[2., 2.], [4., 4.], [6., 6.]], 3, False)),
    "empty_left": (lambda lib: lib.sparse_coo_tensor(lib.zeros(1, 0, dtype=lib.long),
                                                     lib.zeros(0), (3,)) + _u(lib),
                   ([[1, 0, 1]], [1., 2., 3.], 3, False)),
    "scalar_mul": (lambda lib: _u(lib) * 2, ([[1, 0, 1]], [2., 4., 6.], 3, False)),
}


def _coo(r):
    return r._indices().tolist(), r._values().tolist(), r._nnz(), r.is_coalesced()


@pytest.mark.parametrize("case", sorted(_SPARSE))
def test_sparse_add_merge(case):
    op, want = _SPARSE[case]
    assert _coo(op(ember)) == want


@pytest.mark.parametrize("case", sorted(_SPARSE))
def test_sparse_add_merge_against_pytorch(case):
    torch = pytest.importorskip("torch")
    op, _ = _SPARSE[case]
    assert _coo(op(ember)) == _coo(op(torch))


def test_sparse_add_with_empty_right_does_not_alias_values():
    s = _u(ember)
    empty = ember.sparse_coo_tensor(ember.zeros(1, 0, dtype=ember.long), ember.zeros(0), (3,))
    r = s + empty
    r._values().add_(1.0)
    assert s._values().tolist() == [1., 2., 3.]
