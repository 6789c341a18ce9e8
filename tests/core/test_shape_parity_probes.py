"""Shape and layout ops against PyTorch: the differences found by differential probes
(errors, strides, views), each pinned by a plain assertion and, where torch is installed,
by the same program run with torch."""

import warnings

import pytest

import ember


def _outcome(fn, lib):
    """``fn(lib)``'s result summarised (shape, strides, values, view-ness), or its error
    (type name and first line of the message, library names unified)."""
    try:
        r = fn(lib)
    except Exception as exc:  # the error is what is compared
        msg = str(exc).split("\nException raised from")[0]
        return ("error", type(exc).__name__, msg.replace("torch.", "T.").replace("ember.", "T."))
    return _summary(r)


def _summary(r):
    if isinstance(r, (tuple, list)):
        return [_summary(t) for t in r]
    if hasattr(r, "stride") and hasattr(r, "shape"):
        return (tuple(r.shape), tuple(r.stride()), r.contiguous().tolist(), r._base is not None)
    return r


def _parity(fn):
    torch = pytest.importorskip("torch")
    assert _outcome(fn, ember) == _outcome(fn, torch)


def _a(T):
    return T.arange(12.0).reshape(3, 4)


CASES = {
    "view_negative_size": lambda T: _a(T).view(-2, 6),
    "view_negative_pair": lambda T: _a(T).view(-2, -6),
    "view_two_inferred": lambda T: _a(T).view(-1, -1),
    "view_bad_size": lambda T: _a(T).view(3, 5),
    "view_ambiguous_empty": lambda T: T.zeros(0, 3).view(-1, 0),
    "reshape_ambiguous_empty": lambda T: T.zeros(0, 3).reshape(0, -1),
    "view_dtype_offset": lambda T: T.arange(8.0)[1:7].view(T.float64),
    "view_dtype_stride": lambda T: T.arange(12.0).reshape(4, 3)[:, :2].view(T.float64),
    "view_dtype_last_stride": lambda T: _a(T).t().view(T.float16),
    "flatten_0d_bad_dim": lambda T: T.tensor(3.0).flatten(1),
    "unflatten_two_inferred": lambda T: _a(T).unflatten(1, (-1, -1)),
    "unflatten_0d": lambda T: T.tensor(3.0).unflatten(0, (1,)),
    "unflatten_bad": lambda T: _a(T).unflatten(1, (3, -1)),
    "unsqueeze_tuple": lambda T: _a(T).unsqueeze((0, 1)),
    "unsqueeze_strides_end": lambda T: _a(T)[:, ::2].unsqueeze(2),
    "unsqueeze_strides_empty": lambda T: T.zeros(2, 0, 3).unsqueeze(1),
    "expand_last_mismatch_first": lambda T: T.zeros(2, 3).expand(3, 4),
    "expand_new_size1_dims": lambda T: T.arange(3.0).expand(1, 1, 3),
    "expand_to_zero": lambda T: T.arange(3.0).reshape(3, 1).expand(3, 0),
    "expand_kept_size1": lambda T: T.zeros(2, 1).t().expand(1, 2, 2),
    "broadcast_shapes_float": lambda T: T.broadcast_shapes((2.0, 3)),
    "movedim_0d": lambda T: T.tensor(3.0).movedim(0, -1),
    "H_3d": lambda T: T.zeros(2, 3, 4).H,
    "H_1d": lambda T: T.zeros(3).H,
    "mH_1d": lambda T: T.zeros(3).mH,
    "adjoint_complex": lambda T: T.tensor([[1 + 2j, 3j], [1, 2]]).adjoint().resolve_conj(),
    "narrow_0d": lambda T: T.tensor(3.0).narrow(0, 0, 1),
    "narrow_float_start_tensor": lambda T: _a(T).narrow(0, T.tensor(1.0), 2),
    "narrow_1d_start_tensor": lambda T: _a(T).narrow(0, T.tensor([1]), 2),
    "narrow_int_start_tensor": lambda T: _a(T).narrow(0, T.tensor(1), 2),
    "select_float": lambda T: _a(T).select(0, 1.0),
    "split_0d": lambda T: T.tensor(3.0).split(1),
    "chunk_0d": lambda T: T.tensor(3.0).chunk(1),
    "split_negative_sizes": lambda T: T.arange(12.0).split([-1, 13]),
    "split_sizes_not_summing": lambda T: T.arange(12.0).split([5, 5]),
    "split_tensor_size": lambda T: _a(T).split(T.tensor(2), 1),
    "repeat_negative": lambda T: _a(T).repeat(-1, 1),
    "tile_negative": lambda T: _a(T).tile(-1),
    "repeat_layout": lambda T: _a(T).t().repeat(1, 1),
    "roll_no_shifts": lambda T: _a(T).roll([], []),
    "roll_empty_dims": lambda T: _a(T).roll(1, ()),
    "roll_0d_dim": lambda T: T.tensor(3.0).roll(1, 0),
    "roll_float": lambda T: _a(T).roll(1.5),
    "flip_layout": lambda T: _a(T).t().flip(0),
    "rot90_layout": lambda T: _a(T).rot90(),
    "rot90_layout_3d": lambda T: T.arange(24.0).reshape(2, 3, 4).rot90(1, (0, 2)),
    "rot90_same_dims_raw": lambda T: _a(T).rot90(1, (0, -2)),
    "rot90_dim_range": lambda T: _a(T).rot90(1, (0, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    _parity(CASES[name])


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_view_errors_without_torch():
    x = ember.arange(12.0).reshape(3, 4)
    _raises(RuntimeError, r"invalid shape dimension -2 at index 0 of shape \[-2, 6\]",
            lambda: x.view(-2, 6))
    _raises(RuntimeError, r"invalid shape dimension -2 at index 0", lambda: x.view(-2, -6))
    _raises(RuntimeError, "only one dimension can be inferred", lambda: x.view(-1, -1))
    _raises(RuntimeError, r"shape '\[3, 5\]' is invalid for input of size 12",
            lambda: x.view(3, 5))
    _raises(RuntimeError, "unspecified dimension size -1 can be any value and is ambiguous",
            lambda: ember.zeros(0, 3).reshape(-1, 0))
    _raises(RuntimeError, "self.storage_offset\\(\\) must be divisible by 2",
            lambda: ember.arange(8.0)[1:7].view(ember.float64))
    _raises(RuntimeError, r"self.stride\(0\) must be divisible by 2 .* but got 3",
            lambda: ember.arange(12.0).reshape(4, 3)[:, :2].view(ember.float64))
    assert x.view(2, -1).shape == (2, 6)


def test_flatten_unflatten_without_torch():
    _raises(IndexError, r"range of \[-1, 0\], but got 1", lambda: ember.tensor(3.0).flatten(1))
    assert ember.tensor(3.0).flatten(-1).shape == (1,)
    x = ember.arange(12.0).reshape(3, 4)
    _raises(RuntimeError, "^unflatten got an unexpected error:\nonly one dimension can be "
            "inferred$", lambda: x.unflatten(1, (-1, -1)))
    _raises(RuntimeError, "Dimension specified as 0 but tensor has no dimensions",
            lambda: ember.tensor(3.0).unflatten(0, (1,)))
    _raises(RuntimeError, r"Provided sizes \[3, -1\] don't multiply up to the size of dim 1",
            lambda: x.unflatten(1, (3, -1)))


def test_unsqueeze_expand_strides_without_torch():
    x = ember.arange(12.0).reshape(3, 4)
    assert x[:, ::2].unsqueeze(2).stride() == (4, 2, 1)
    assert ember.zeros(2, 0, 3).unsqueeze(1).stride() == (3, 0, 3, 1)
    assert x.unsqueeze(0).stride() == (12, 4, 1)
    _raises(TypeError, "must be int, not tuple", lambda: x.unsqueeze((0, 1)))
    assert ember.arange(3.0).expand(1, 1, 3).stride() == (3, 3, 1)
    assert ember.arange(3.0).expand(2, 3).stride() == (0, 1)
    y = ember.arange(3.0).reshape(3, 1).expand(3, 0)
    assert y.shape == (3, 0) and y.stride() == (1, 0)
    _raises(RuntimeError, r"existing size \(3\) at non-singleton dimension 1\.  Target sizes: "
            r"\[3, 4\]\.  Tensor sizes: \[2, 3\]", lambda: ember.zeros(2, 3).expand(3, 4))
    # new size-1 dims repeat nothing: still writable through to the base
    z = ember.arange(3.0)
    z.expand(1, 3).add_(1)
    assert z.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError):
        z.expand(2, 3).add_(1)


def test_broadcast_without_torch():
    x, y = ember.zeros(3, 4), ember.zeros(4)
    a, b = ember.broadcast_tensors(x, y)
    assert a is x and b._base is y and b.stride() == (0, 1)
    _raises(TypeError, "item 0 is 'float'", lambda: ember.broadcast_shapes((2.0, 3)))


def test_transpose_properties_without_torch(monkeypatch):
    from ember.ops import shape

    monkeypatch.setattr(shape, "_WARNED_ONCE", set())  # each warns once a process, as PyTorch
    s = ember.tensor(3.0)
    assert s.movedim(0, -1).shape == ()
    with pytest.warns(UserWarning, match="dimension other than 2 to reverse their shape"):
        assert ember.zeros(2, 3, 4).T.shape == (4, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second time: no warning
        assert ember.zeros(2, 3, 4).T.shape == (4, 3, 2)
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        assert s.T.shape == ()
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        assert s.mT is s
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.zeros(2, 3).T.shape == (3, 2)
    _raises(RuntimeError, r"only supported on matrices \(2-D tensors\). Got 3-D tensor. For "
            "batches", lambda: ember.zeros(2, 3, 4).H)
    _raises(RuntimeError, r"tensor.mH is only supported .* Got 1-D", lambda: ember.zeros(3).mH)
    c = ember.tensor([[1 + 2j, 3j], [1, 2]])
    assert c.adjoint().tolist() == [[1 - 2j, 1 - 0j], [-3j, 2 - 0j]]


def test_selections_without_torch():
    x = ember.arange(12.0).reshape(3, 4)
    _raises(RuntimeError, "narrow\\(\\) cannot be applied to a 0-dim tensor",
            lambda: ember.tensor(3.0).narrow(0, 0, 1))
    _raises(RuntimeError, "start must be an 0-dim integral Tensor",
            lambda: x.narrow(0, ember.tensor(1.0), 2))
    assert x.narrow(0, ember.tensor(1), 2).tolist() == x[1:3].tolist()
    _raises(TypeError, "must be int, not float", lambda: x.select(0, 1.0))
    _raises(RuntimeError, "split expects at least a 1-dimensional tensor",
            lambda: ember.tensor(3.0).split(1))
    _raises(RuntimeError, "chunk expects at least a 1-dimensional tensor",
            lambda: ember.tensor(3.0).chunk(1))
    _raises(RuntimeError, r"only non-negative entries, but got split_sizes=\[-1, 13\]",
            lambda: ember.arange(12.0).split([-1, 13]))
    _raises(RuntimeError, r"split_with_sizes expects split_sizes to sum exactly to 12 \(input "
            r"tensor's size at dimension 0\), but got split_sizes=\[5, 5\]",
            lambda: ember.arange(12.0).split([5, 5]))
    assert [t.shape for t in x.split(ember.tensor(2), 1)] == [(3, 2), (3, 2)]


def test_copying_rearrangements_without_torch():
    x = ember.arange(12.0).reshape(3, 4)
    _raises(RuntimeError, r"negative dimension -3: \[-3, 4\]", lambda: x.repeat(-1, 1))
    assert x.t().repeat(1, 1).is_contiguous()
    _raises(RuntimeError, "`shifts` required", lambda: x.roll([], []))
    assert x.roll(1, ()).flatten().tolist() == [11.0] + list(range(11))
    _raises(IndexError, "Dimension specified as 0 but tensor has no dimensions",
            lambda: ember.tensor(3.0).roll(1, 0))
    assert x.t().flip(0).stride() == (1, 4)
    assert x.flip(0).stride() == (4, 1)
    r = x.rot90()
    assert r.stride() == (1, 4) and r.tolist() == [[3, 7, 11], [2, 6, 10], [1, 5, 9], [0, 4, 8]]
    assert x.rot90(2).tolist() == x.flip(0, 1).tolist()
    assert x.rot90(0).is_contiguous() and x.rot90(0)._base is None
    _raises(RuntimeError, "but got dim0 = 0 and dim1 = -2", lambda: x.rot90(1, (0, -2)))
