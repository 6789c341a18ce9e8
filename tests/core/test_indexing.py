"""Indexing: __getitem__/__setitem__ and the index ops, against NumPy, with float64 gradcheck,
PyTorch's placement rules and errors, and device checks."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testutils import randn64, stable_id

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(1)


def idx(*values):
    return ember.tensor(list(values), dtype=ember.int64)


A = np.arange(24.0).reshape(2, 3, 4)


# -- getitem ----------------------------------------------------------------------------------

BASIC = [0, -1, slice(1, None), slice(None, None, 2), (0, 1), (1, slice(0, 3, 2), -1),
         (Ellipsis, 1), (None, 0), (slice(None), None, 2), (), Ellipsis, (0, 1, 2)]


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_getitem_is_a_view_matching_numpy(index):
    x = ember.tensor(A)
    out = x[index]
    expected = A[index]
    assert out.shape == np.shape(expected)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out._base is x
    assert np.shares_memory(out.numpy(), x.numpy())


ADVANCED = [
    ([1, 0, 1],),
    (np.array([[0, 1], [1, 1]]),),
    (slice(None), [2, 0]),
    ([0, 1], [2, 0]),
    ([0, 1], slice(None), [3, 0]),
    (A[..., 0] > 5,),
    (A > 10,),
    (Ellipsis, [3, 3, 1]),
    (slice(None), np.array([True, False, True])),
    ([[0], [1]], [0, 2]),
]


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_getitem_matches_numpy(index):
    x = ember.tensor(A)
    conv = tuple(ember.tensor(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    out = x[conv]
    expected = A[index]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out._base is None  # a copy


def test_integers_are_applied_before_advanced_indices_pytorch_placement():
    x = ember.zeros(2, 3, 4)
    # NumPy would put the advanced dims first ((2, 3)); PyTorch selects first
    assert x[0, :, [1, 2]].shape == (3, 2)
    assert x[[0, 1], :, 0].shape == (2, 3)
    assert x[:, 0, [1, 2]].shape == (2, 2)
    assert x[None, [0, 1], 0].shape == (1, 2, 4)
    np.testing.assert_array_equal(ember.tensor(A)[1, :, [0, 3]].numpy(), A[1][:, [0, 3]])


def test_index_with_tensor_scalars_lists_and_bools():
    x = ember.tensor(A)
    assert x[ember.tensor(1)]._base is x  # a 0-dim integer tensor selects (a view)
    assert x[True].shape == (1, 2, 3, 4)
    assert x[False].shape == (0, 2, 3, 4)
    assert x[[]].shape == (0, 3, 4)
    np.testing.assert_array_equal(x[np.int64(1), 2].numpy(), A[1, 2])
    np.testing.assert_array_equal(x[[1, slice(None), 0]].numpy(), A[1, :, 0])  # legacy tuple
    np.testing.assert_array_equal(x[idx(1, 0).to(ember.int32)].numpy(), A[[1, 0]])
    with pytest.warns(UserWarning, match="uint8"):
        out = x[ember.tensor([1, 0], dtype=ember.uint8)]
    np.testing.assert_array_equal(out.numpy(), A[[True, False]])


# an index that PyTorch reads as a sequence: converted to int64 (floats truncated), bool and
# uint8 data kept; a tuple (``ember.Size`` too) is a tuple of indices
SEQUENCES = [
    (range(0, 2), [0, 1]), (range(1, -1, -1), [1, 0]), (range(0), []),
    ((slice(None), range(0, 3, 2)), (slice(None), [0, 2])),
    ((range(2), range(1, 3)), ([0, 1], [1, 2])), ([range(2)], ([0, 1],)),
    ([0.7, 1.9], [0, 1]), (np.array([1.9, 0.2]), [1, 0]), ([True, 1], [1, 1]),
    (np.array([0, 1], dtype=np.int32), [0, 1]), (np.array([True, False]), [True, False]),
    ([[True, False], [False, True, False]], ([True, False], [False, True, False])),
    (ember.Size([1, 2]), (1, 2)), ([np.array([0, 1]), [1, 2]], ([0, 1], [1, 2])),
]


@pytest.mark.parametrize("index, ref", SEQUENCES, ids=repr)
def test_sequence_indices(index, ref):
    x = ember.tensor(A)
    np.testing.assert_array_equal(x[index].numpy(), A[ref])
    y = ember.tensor(A)
    y[index] = -1.0
    expected = A.copy()
    expected[ref] = -1.0
    np.testing.assert_array_equal(y.numpy(), expected)


def test_range_index_gradient():
    x = randn64(4, 3, rng=RNG)
    assert gradcheck(lambda u: u[range(0, 4, 2)], (x,))
    assert gradcheck(lambda u: u[:, range(3)] * 1, (x,))


@pytest.mark.parametrize("index, exc, msg", [
    ({0, 1}, IndexError, r"valid indices \(got set\)"),
    ({0: 1}, IndexError, r"valid indices \(got dict\)"),
    (1.0, IndexError, r"valid indices \(got float\)"),
    (np.float64(1.0), IndexError, r"valid indices \(got numpy.float64\)"),
    (np.bool_(True), IndexError, r"valid indices \(got numpy.bool\)"),
    ((i for i in range(2)), IndexError, r"valid indices \(got generator\)"),
    ("ab", TypeError, "new\\(\\): invalid data type 'str'"),
    ([object()], RuntimeError, "Could not infer dtype of object"),
    (([[0, 1], [2]],), ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
])
def test_rejected_indices_raise_pytorchs_errors(index, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.tensor(A)[index]


def test_getitem_node_names():
    x = randn64(3, 4, rng=RNG)
    assert x[0].grad_fn.name() == "SelectBackward0"
    assert x[1:].grad_fn.name() == "SliceBackward0"
    assert x[:, 0].grad_fn.name() == "SelectBackward0"
    assert x[0, 1:].grad_fn.name() == "SliceBackward0"
    assert x[None].grad_fn.name() == "UnsqueezeBackward0"
    assert x[...].grad_fn.name() == "AliasBackward0"
    assert x[[0, 0]].grad_fn.name() == "IndexBackward0"


GETITEM_GRAD = [
    lambda t: t[1],
    lambda t: t[:, 1:3, ::2],
    lambda t: t[..., None, -1],
    lambda t: t[[0, 0, 1]],
    lambda t: t[:, [2, 2, 0], 1:],
    lambda t: t[0, [1, 1], [3, 3]],
    lambda t: t[t > 0],
    lambda t: t[[[1], [0]], :, [0, 0]],
]


@pytest.mark.parametrize("k", range(len(GETITEM_GRAD)))
def test_getitem_gradcheck(k):
    assert gradcheck(GETITEM_GRAD[k], (randn64(2, 3, 4, rng=RNG),))


@pytest.mark.parametrize("k", [3, 5, 6])
def test_advanced_getitem_gradgradcheck(k):
    assert gradgradcheck(GETITEM_GRAD[k], (randn64(2, 3, 4, rng=RNG),))


def test_repeated_indices_accumulate_in_backward():
    x = randn64(4, rng=RNG)
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 0.0, 1.0, 0.0])


# -- getitem errors --------------------------------------------------------------------------

GETITEM_ERRORS = [
    (lambda x: x[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[0, 5], IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda x: x[[5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    (lambda x: x[::-1], ValueError, "step must be greater than zero"),
    (lambda x: x[:, ::0], ValueError, "slice step cannot be zero"),
    (lambda x: x[1.5], IndexError, "only integers, slices"),
    (lambda x: x[ember.tensor([1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda x: x[ember.tensor([True, False])], IndexError,
     r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor "
     r"\[3, 4\] at index 0"),
    (lambda x: x[ember.zeros(3, 3, dtype=ember.bool)], IndexError,
     r"The shape of the mask \[3, 3\] at index 1 does not match"),
    (lambda x: x[idx(0, 1), idx(0, 1, 2)], IndexError,
     r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], "
     r"\[3\]"),
]


@pytest.mark.parametrize("fn,exc,msg", GETITEM_ERRORS)
def test_getitem_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn(ember.zeros(3, 4))


def test_zero_dim_indexing():
    s = ember.tensor(2.0)
    assert s[()].shape == () and s[...]._base is s and s[None].shape == (1,)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        s[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        s[[0]]


# -- setitem -----------------------------------------------------------------------------------

def _numpy_set(index, value):
    def fn(a):
        a[index] = value
    return fn


def _int_first(i, index, value):
    def fn(a):
        a[i][index] = value  # PyTorch applies the integer first
    return fn


SETITEM = [
    (0, 7.0, _numpy_set(0, 7.0)),
    ((slice(None), 1), np.array([1.0, 2.0, 3.0, 4.0]), _numpy_set((slice(None), 1),
                                                                 [1.0, 2.0, 3.0, 4.0])),
    ((Ellipsis, slice(0, 4, 3)), 5.0, _numpy_set((Ellipsis, slice(0, 4, 3)), 5.0)),
    (([0, 1, 1],), 9.0, _numpy_set(([0, 1, 1],), 9.0)),
    ((slice(None), [0, 2], 1), np.array([[1.0, 2.0]]),
     _numpy_set((slice(None), [0, 2], 1), [[1.0, 2.0]])),
    ((A > 7,), -1.0, _numpy_set(A > 7, -1.0)),
    ((1, slice(None), [0, 2]), np.array([3.0, 4.0]),
     _int_first(1, (slice(None), [0, 2]), [3.0, 4.0])),
]


@pytest.mark.parametrize("index,value,ref", SETITEM, ids=stable_id)
def test_setitem_matches_numpy(index, value, ref):
    x = ember.tensor(A)
    expected = A.copy()
    ref(expected)
    conv = tuple(ember.tensor(i) if isinstance(i, (list, np.ndarray)) else i
                 for i in (index if isinstance(index, tuple) else (index,)))
    v = ember.tensor(value) if isinstance(value, np.ndarray) else value
    v0 = x._version
    x[conv] = v
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x._version == v0 + 1


def test_setitem_casts_for_basic_and_requires_dtype_for_advanced():
    x = ember.zeros(3, dtype=ember.int64)
    x[1:] = ember.tensor([1.7, 2.2])
    x[0] = 3.9
    assert x.tolist() == [3, 1, 2]
    y = ember.zeros(3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Double for the destination and "
                                           "Float for the source."):
        y[[0]] = ember.ones(1)
    y[[0]] = 2  # Python scalars are cast
    assert y.tolist() == [2.0, 0.0, 0.0]


def test_setitem_errors():
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot "
                                           r"be broadcast to indexing result of shape \[2\]"):
        x[[1, 2]] = ember.ones(3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match "
                                           r"the existing size \(3\)"):
        x[1:] = ember.ones(3)
    with pytest.raises(TypeError, match="can't assign a list"):
        x[0:2] = [1, 2]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[[3]] = 1.0
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.zeros(3).expand(2, 3)[:, 0] = 1.0  # (a row, [0], shares nothing: PyTorch writes it)


def test_setitem_value_broadcast_strips_leading_ones():
    x = ember.zeros(2, 3)
    x[0] = ember.ones(1, 3)
    x[[1]] = ember.full((1, 1, 3), 2.0)
    assert x.tolist() == [[1, 1, 1], [2, 2, 2]]


def test_setitem_on_leaf_requiring_grad_raises():
    x = randn64(3, rng=RNG)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        x[[0]] = 1.0
    with ember.no_grad():
        x[0] = 1.0
    assert x[0].item() == 1.0


def test_setitem_gradients_for_self_and_value():
    def fn(x, w):
        y = x * 1.0
        y[1] = w * 2.0
        y[:, [0, 2]] = w[:2].unsqueeze(0) ** 2
        return y * y

    assert gradcheck(fn, (randn64(3, 4, rng=RNG), randn64(4, rng=RNG)))
    assert gradgradcheck(fn, (randn64(3, 4, rng=RNG), randn64(4, rng=RNG)))


def test_setitem_into_fresh_buffer_tracks_value():
    w = randn64(2, rng=RNG)
    out = ember.zeros(3, dtype=ember.float64)
    out[1:] = w * 3
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])


# -- index ops ----------------------------------------------------------------------------------
# gather, take_along_dim, scatter (reduce=), scatter_add, scatter_reduce (every reduction, with
# and without self), index_select/add/copy/fill, masked_fill/select/scatter, take, put,
# index_put, nonzero, argwhere and the *_scatter ops: their values (against NumPy or PyTorch),
# in-place variants, gradchecks and gradgradchecks on the op database's samples are the
# generic tests' (tests/ops/test_ops.py); here the edges, autograd through in-place writes,
# errors and devices

def test_masked_fill_casts_a_float_value_to_an_integer_input():
    i = ember.zeros(3, dtype=ember.int64).masked_fill(ember.ones(3, dtype=ember.bool), 1.7)
    assert i.dtype == ember.int64 and i.tolist() == [1, 1, 1]


def test_index_put_with_a_none_index():
    x = ember.tensor(np.arange(12.0).reshape(3, 4))
    out = x.index_put((None, idx(0)), ember.tensor([-1.0], dtype=ember.float64))
    np.testing.assert_array_equal(out[:, 0].numpy(), [-1, -1, -1])


def test_inplace_index_ops_bump_version_and_write_memory():
    x = ember.zeros(3, 4)
    ptr, v0 = x.data_ptr(), x._version
    x.masked_fill_(ember.tensor([True, False, False, False]), 1.0)
    x.index_add_(0, idx(2), ember.ones(1, 4))
    x.scatter_(1, ember.tensor([[3]]), 5.0)
    x.index_copy_(0, idx(1), ember.full((1, 4), 2.0))
    x.put_(idx(0), ember.tensor([7.0]))
    assert x.data_ptr() == ptr and x._version == v0 + 5
    assert x.tolist() == [[7, 0, 0, 5], [2, 2, 2, 2], [2, 1, 1, 1]]
    with pytest.raises(RuntimeError, match=r"output with shape \[4\] doesn't match the "
                                           r"broadcast shape \[3, 4\]"):
        ember.zeros(4).masked_fill_(ember.ones(3, 4, dtype=ember.bool), 1.0)


I2 = ember.tensor([[0, 3, 3], [2, 2, 0], [1, 0, 1]])
M = ember.tensor([[True, False, False, True], [False, True, False, False],
                  [True, True, False, False]])

def test_scatter_reduce_prod_with_zeros_gradient():
    x = ember.tensor([[1.0, 0.0, 2.0]], dtype=ember.float64, requires_grad=True)
    s = ember.tensor([[0.0, 3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    i = ember.tensor([[0, 1, 2]])
    assert gradcheck(lambda a, b: a.scatter_reduce(1, i, b, "prod"), (x, s))


def test_inplace_index_op_autograd_rebases_history():
    x, w = randn64(3, 4, rng=RNG), randn64(2, 4, rng=RNG)
    y = x * 2.0
    y.index_add_(0, idx(0, 0), w)
    y.masked_fill_(M, 0.0)
    (y * y).sum().backward()
    xa, wa = x.detach().numpy(), w.detach().numpy()
    ref = 2 * xa
    ref[0] += wa.sum(0)
    ref[M.numpy()] = 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(M.numpy(), 0, 2 * 2 * ref))
    np.testing.assert_allclose(w.grad.numpy(), np.tile(np.where(M.numpy()[0], 0, 2 * ref[0]),
                                                       (2, 1)))


# -- index op errors -------------------------------------------------------------------------

X = ember.zeros(3, 4)

OP_ERRORS = [
    (lambda: X.gather(0, ember.tensor([[5]])), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.gather(0, ember.tensor([[-1]])), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: X.gather(0, idx(0)), RuntimeError, "Index tensor must have the same number of "
                                                "dimensions as input tensor"),
    (lambda: X.gather(0, ember.tensor([[0.0]])), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index"),
    (lambda: X.gather(1, ember.zeros(4, 1, dtype=ember.int64)), RuntimeError,
     r"Size does not match at dimension 0 expected index \[4, 1\] to be no larger than self "
     r"\[3, 4\] apart from dimension 1"),
    (lambda: X.scatter(0, ember.tensor([[5]]), 1.0), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.scatter(0, ember.tensor([[0]]), ember.zeros(1, 1, dtype=ember.float64)),
     RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: X.scatter_add(0, ember.zeros(2, 2, dtype=ember.int64), ember.zeros(1, 1)),
     RuntimeError, r"Expected index \[2, 2\] to be no larger than self \[3, 4\] apart from "
                   r"dimension 0 and to be no larger size than src \[1, 1\]"),
    (lambda: X.index_select(0, idx(5)), IndexError, "index out of range in self"),
    (lambda: X.index_select(0, ember.tensor([[0]])), IndexError,
     r"index_select\(\): Index is supposed to be a vector"),
    (lambda: X.index_select(0, ember.tensor([0.0])), RuntimeError,
     r"index_select\(\): Expected dtype int32 or int64 for index"),
    (lambda: X.index_add(0, idx(0, 1), ember.ones(3, 4)), RuntimeError,
     r"index_add_\(\): Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"),
    (lambda: X.index_add(0, idx(0, 1), ember.ones(2, 4, dtype=ember.float64)), RuntimeError,
     r"index_add_\(\): self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda: X.index_add(0, idx(0, 1), ember.ones(2, 5)), RuntimeError,
     r"source tensor shape must match self tensor shape, excluding the specified dimension"),
    (lambda: X.index_add(0, idx(0, 5), ember.ones(2, 4)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_copy(0, idx(0, 5), ember.ones(2, 4)), IndexError,
     r"index_copy_\(\): index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_fill(0, idx(5), 1.0), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.masked_fill(ember.tensor([1, 0, 1, 0]), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype long int"),
    (lambda: X.masked_fill(ember.ones(4, dtype=ember.bool), ember.tensor([1.0])), RuntimeError,
     r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
     r"dimension\(s\)."),
    (lambda: X.masked_select(ember.ones(4)), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda: X.masked_scatter(ember.ones(4, dtype=ember.bool), ember.ones(3)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda: X.take(idx(20)), IndexError,
     "out of range: tried to access index 20 on a tensor of 12 elements."),
    (lambda: X.put(idx(0, 1), ember.ones(3)), IndexError,
     r"put_\(\): Expected source and index to have the same number of elements"),
    (lambda: X.index_put((idx(0),), ember.tensor(1.0, dtype=ember.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the "
     "destination and Double for the source."),
    (lambda: X.take_along_dim(idx(0), 0), RuntimeError,
     "input and indices should have the same number of dimensions"),
    (lambda: X.take_along_dim(ember.tensor([[0.0]]), 0), RuntimeError,
     "dtype of indices should be Long but got Float"),
]


@pytest.mark.parametrize("fn,exc,msg", OP_ERRORS)
def test_index_op_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


# -- devices --------------------------------------------------------------------------------------

def test_indexing_keeps_device_and_accepts_cpu_indices(testdev):
    x = ember.arange(12.0).reshape(3, 4).to(testdev)
    i = idx(2, 0)
    outs = [x[0], x[i], x[i.to(testdev)], x[x > 3], x.gather(1, I2.to(testdev)),
            x.index_select(0, i.to(testdev)), x.masked_fill(M.to(testdev), 0.0),
            x.take(i.to(testdev)), x.nonzero()]
    for o in outs:
        assert o.device == testdev
    np.testing.assert_array_equal(x[i]._host(), np.arange(12.0).reshape(3, 4)[[2, 0]])
    x[i] = 5.0
    x[0] = ember.tensor(1.0)  # a 0-dim CPU value is allowed
    assert x.device == testdev and x._host()[0, 0] == 1.0 and x._host()[2, 0] == 5.0


def test_index_ops_reject_mixed_devices(testdev):
    x = ember.zeros(3, 4, device=testdev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.gather(1, I2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.index_add(0, idx(0).to(testdev), ember.ones(1, 4))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x[0] = ember.ones(4)
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same "
                                           "device"):
        ember.zeros(3)[idx(0).to(testdev)]


def test_index_backward_on_device(testdev):
    x = ember.arange(4.0).to(testdev).requires_grad_()
    x[idx(1, 1).to(testdev)].sum().backward()
    assert x.grad.device == testdev
    np.testing.assert_array_equal(x.grad._host(), [0.0, 2.0, 0.0, 0.0])


# -- properties ------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=8), st.integers(1, 3))
def test_advanced_index_backward_counts_duplicates(ids, cols):
    x = ember.zeros(6, cols, dtype=ember.float64, requires_grad=True)
    x[ember.tensor(ids)].sum().backward()
    expected = np.bincount(ids, minlength=6)[:, None] * np.ones((1, cols))
    np.testing.assert_array_equal(x.grad.numpy(), expected)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(0, 4), st.integers(1, 3), st.integers(-2, 4),
       st.integers(1, 3))
def test_basic_slices_match_numpy(start, stop, step, start2, step2):
    a = np.arange(20.0).reshape(4, 5)
    index = (slice(start, stop, step), slice(start2, None, step2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ember.tensor(a)[index]
    np.testing.assert_array_equal(out.numpy(), a[index])
    assert out.stride() == tuple(s // 8 for s in a[index].strides)


def test_float16_scatter_family_sums_in_float32_and_rounds_once():
    # 2048 + 1 + 1: one rounding gives 2050, a rounding per step 2048 (PyTorch: the scatter
    # kernels round once; index_put / put with accumulate, index_reduce and index_add's
    # general loop round every step)
    h = ember.float16
    vals = ember.tensor([2048.0, 1.0, 1.0], dtype=h)
    rows = ember.stack([vals, vals], 1)
    i = idx(0, 0, 0)
    assert ember.scatter_add(ember.zeros(1, dtype=h), 0, i, vals).item() == 2050
    assert ember.zeros(1, dtype=h).scatter_add_(0, i, vals).item() == 2050
    assert ember.scatter(ember.zeros(1, dtype=h), 0, i, vals, reduce="add").item() == 2050
    assert ember.scatter_reduce(ember.zeros(1, dtype=h), 0, i, vals, "sum").item() == 2050
    assert ember.scatter_reduce(ember.zeros(1, dtype=h), 0, i, vals, "mean").item() == 512.5
    assert ember.index_add(ember.zeros(1, 2, dtype=h), 0, i, rows).tolist() == [[2050, 2050]]
    assert ember.index_add(ember.zeros(2, 1, dtype=h), 1, i, rows.t()).tolist() == \
        [[2050], [2050]]
    # index_add's general loop: 1-D, a middle dim, int32 indices, alpha != 1
    assert ember.index_add(ember.zeros(1, dtype=h), 0, i, vals).item() == 2048
    assert ember.index_add(ember.zeros(1, 2, dtype=h), 0, i.int(), rows).tolist() == \
        [[2048, 2048]]
    assert ember.index_add(ember.zeros(1, 2, dtype=h), 0, i, rows / 2, alpha=2).tolist() == \
        [[2048, 2048]]
    assert ember.index_put(ember.zeros(1, dtype=h), (i,), vals, accumulate=True).item() == 2048
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.index_reduce(ember.zeros(1, dtype=h), 0, i, vals, "mean").item() == 512
    v = ember.tensor([1.794921875, 1.3125, 0.94970703125, 1.1337890625], dtype=h)
    once = 2.537109375  # the float32 product rounded once; step by step: 2.53515625
    assert ember.scatter(ember.ones(1, dtype=h), 0, idx(0, 0, 0, 0), v,
                         reduce="multiply").item() == once
    assert ember.scatter_reduce(ember.ones(1, dtype=h), 0, idx(0, 0, 0, 0), v,
                                "prod").item() == once


def test_index_ops_on_a_0d_input_treat_it_as_size_one():
    x = ember.tensor(5.0)
    assert ember.index_select(x, 0, idx(0)).shape == ()
    assert ember.index_select(x, -1, ember.tensor(0)).item() == 5.0
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value, got 2"):
        ember.index_select(x, 0, idx(0, 0))
    assert ember.index_add(x, 0, idx(0), ember.tensor(2.0)).item() == 7.0
    assert ember.index_copy(x, 0, idx(0), ember.tensor(2.0)).item() == 2.0
    assert ember.index_fill(x, 0, idx(-1), 7.0).item() == 7.0
    y = ember.tensor(1.0)
    assert y.index_add_(0, idx(0), ember.tensor(2.0)) is y and y.item() == 3.0
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        ember.index_add(x, 0, idx(0), ember.tensor([2.0]))
    g = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a: ember.index_add(a, 0, idx(0), a * a), (g,))
    assert gradcheck(lambda a: ember.index_select(a, 0, idx(0)) * a, (g,))
