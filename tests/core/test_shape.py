"""Shape ops: NumPy references, float64 gradcheck, view-ness, PyTorch's errors, devices."""

import numpy as np
import pytest
from testutils import randn64, to_numpy

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


# -- forward values against NumPy, and gradcheck ------------------------------------------------

# The shape ops of the registry (reshape, squeeze, flatten, transpose, permute, movedim,
# broadcast_to, tile, flip, roll, rot90, tril, diagonal, diag, narrow, select, split, chunk,
# ...) are checked on the op database's samples by the generic tests (values, gradcheck and
# gradgradcheck: tests/ops/test_ops.py); here the Tensor-only methods and properties (view,
# expand, repeat, contiguous, mT, T) and an alias (moveaxis)
CASES = {
    "view": ((2, 3, 4), lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    "movedim_multi": ((2, 3, 4, 5), lambda t: ember.moveaxis(t, (0, 1), (3, 0)),
                      lambda a: np.moveaxis(a, (0, 1), (3, 0))),
    "mT": ((2, 3, 4), lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    "T": ((3, 4), lambda t: t.T, lambda a: a.T),
    "expand": ((3, 1), lambda t: t.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4))),
    "repeat": ((2, 3), lambda t: t.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3))),
    "contiguous": ((3, 4), lambda t: t.t().contiguous(), lambda a: a.T),
}


@pytest.mark.parametrize("name", list(CASES))
def test_forward_matches_numpy(name):
    shape, fn, ref = CASES[name]
    x = randn64(*shape, rng=RNG)
    out = fn(x)
    expected = ref(x.detach().numpy())
    assert out.shape == expected.shape
    assert out.dtype == ember.float64
    np.testing.assert_array_equal(to_numpy(out), expected)


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    shape, fn, _ = CASES[name]
    assert gradcheck(fn, (randn64(*shape, rng=RNG),))


@pytest.mark.parametrize("name", ["repeat"])
def test_gradgradcheck(name):
    shape, fn, _ = CASES[name]
    assert gradgradcheck(fn, (randn64(*shape, rng=RNG),))


def test_squeeze_keeps_non_unit_dims_pytorch2():
    x = ember.zeros(1, 3, 1)
    assert x.squeeze(1).shape == (1, 3, 1)
    assert x.squeeze((0, 1)).shape == (3, 1)
    assert ember.zeros(()).squeeze(0).shape == ()
    assert x.squeeze(-1).grad_fn is None


def test_flatten_same_dim_returns_self():
    x = ember.zeros(3)
    assert x.flatten() is x
    assert ember.tensor(1.0).flatten().shape == (1,)


def test_contiguous_returns_self_when_contiguous():
    x = randn64(3, 4, rng=RNG)
    assert x.contiguous() is x
    y = x.t().contiguous()
    assert y.is_contiguous() and y.grad_fn.name() == "CloneBackward0"


def test_view_as_reshape_as():
    x = randn64(2, 6, rng=RNG)
    assert x.view_as(ember.zeros(3, 4)).shape == (3, 4)
    assert x.t().reshape_as(ember.zeros(4, 3)).shape == (4, 3)


def test_broadcast_tensors_and_shapes():
    a, b = ember.zeros(3, 1), ember.zeros(4)
    ea, eb = ember.broadcast_tensors(a, b)
    assert ea.shape == eb.shape == (3, 4)
    assert ember.broadcast_shapes((2,), (3, 1), (1, 1, 1)) == ember.Size([1, 3, 2])
    assert ember.broadcast_shapes(5, (1,)) == (5,)
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3"):
        ember.broadcast_shapes((2, 3), (3, 3))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        ember.broadcast_tensors(ember.zeros(2), ember.zeros(3))


def test_tensor_split_with_unsorted_indices_and_keyword_names():
    x = ember.arange(7)
    # consecutive indices bound each part: [4, 1] gives x[:4], x[4:1] (empty), x[1:]
    assert [c.tolist() for c in x.tensor_split([4, 1])] == [[0, 1, 2, 3], [], [1, 2, 3, 4, 5, 6]]
    assert [len(c) for c in ember.tensor_split(x, sections=3)] == [3, 2, 2]
    assert [len(c) for c in ember.tensor_split(x, indices=[1, 3])] == [1, 2, 4]
    assert [len(c) for c in x.tensor_split(tensor_indices_or_sections=ember.tensor(2))] == [4, 3]
    m = ember.zeros(4, 6)
    assert [c.shape for c in m.hsplit(sections=3)] == [(4, 2)] * 3
    assert [c.shape for c in ember.vsplit(m, indices=[1])] == [(1, 6), (3, 6)]
    assert [c.shape for c in ember.dsplit(ember.zeros(1, 1, 4), indices=(3, 1))] == \
        [(1, 1, 3), (1, 1, 0), (1, 1, 3)]
    with pytest.raises(TypeError, match="exactly one of 'sections'"):
        ember.tensor_split(x, 2, sections=2)
    with pytest.raises(RuntimeError, match="to have dtype of long, but got Int"):
        x.tensor_split(ember.tensor([1], dtype=ember.int32))


def test_swapaxes_and_swapdims_keyword_names():
    t = ember.zeros(2, 3, 4)
    assert ember.swapaxes(t, axis0=0, axis1=2).shape == (4, 3, 2)
    assert t.swapaxes(axis0=1, axis1=0).shape == (3, 2, 4)
    assert ember.swapdims(t, dim0=0, dim1=1).shape == (3, 2, 4)
    assert t.swapdims(dim0=2, dim1=1)._base is t
    with pytest.raises(TypeError):
        ember.swapaxes(t, dim0=0, dim1=1)


def test_atleast_nd():
    s, v, m = ember.tensor(1.0), ember.zeros(2), ember.zeros(2, 3)
    assert ember.atleast_1d(s).shape == (1,)
    assert ember.atleast_1d(v) is v
    assert [t.shape for t in ember.atleast_2d(s, v)] == [(1, 1), (1, 2)]
    assert [t.shape for t in ember.atleast_3d([v])] == [(1, 2, 1)]
    assert ember.atleast_3d(m).shape == (2, 3, 1)


# -- joins ----------------------------------------------------------------------------------------

def test_cat_values_and_dtype_promotion():
    a = ember.tensor([[1, 2]], dtype=ember.int32)
    b = ember.tensor([[0.5, 1.5]], dtype=ember.float32)
    out = ember.cat([a, b])
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [0.5, 1.5]])
    assert ember.concat([a, a], dim=1).shape == (1, 4)
    assert ember.concatenate([a, a], axis=1).shape == (1, 4)
    assert ember.cat([ember.zeros(2, 3), ember.zeros(2, 3, dtype=ember.float64)]).dtype == \
        ember.float64


def test_cat_skips_legacy_empty_1d():
    x = ember.ones(2, 3)
    out = ember.cat([ember.zeros(0), x, ember.zeros(0)], 1)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    assert ember.cat([ember.zeros(0), ember.zeros(0, dtype=ember.float64)]).shape == (0,)


def test_cat_gradients_reach_each_input_with_its_dtype():
    a = randn64(2, 3, rng=RNG)
    b = ember.tensor(RNG.standard_normal((2, 1)), dtype=ember.float32, requires_grad=True)
    out = ember.cat([a, b], 1)
    (out * ember.arange(4.0, dtype=ember.float64)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.tile([0.0, 1, 2], (2, 1)))
    assert b.grad.dtype == ember.float32
    np.testing.assert_array_equal(b.grad.numpy(), [[3.0], [3.0]])


def test_cat_gradcheck_with_a_repeated_input():
    # cat, stack, vstack, dstack gradchecks: the generic tests; here one input twice
    a, b = randn64(2, 3, rng=RNG), randn64(2, 3, rng=RNG)
    assert gradcheck(lambda x, y: ember.cat([x, y, x], -1), (a, b))


def test_row_stack_is_vstack():
    # stack, hstack, vstack, dstack, column_stack values: the generic tests
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12).reshape(2, 3)
    np.testing.assert_array_equal(ember.row_stack([ember.tensor(a), ember.tensor(b)]).numpy(),
                                  np.vstack([a, b]))


# -- errors (PyTorch's words) --------------------------------------------------------------------

ERRORS = [
    (lambda: ember.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda: ember.cat(ember.zeros(2)), TypeError, "must be tuple of Tensors, not Tensor"),
    (lambda: ember.cat([ember.zeros(3, 4), ember.zeros(2, 3)], 1), RuntimeError,
     r"Sizes of tensors must match except in dimension 1. Expected size 3 but got size 2 for "
     r"tensor number 1 in the list."),
    (lambda: ember.cat([ember.zeros(3, 4), ember.zeros(3)], 1), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda: ember.cat([ember.tensor(1.0)]), RuntimeError,
     r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    (lambda: ember.cat([ember.zeros(3, 4)], 2), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: ember.stack([ember.zeros(2), ember.zeros(3)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at "
     r"entry 1"),
    (lambda: ember.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: ember.zeros(2, 3).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: ember.zeros(2, 3).view(4), RuntimeError, r"shape '\[4\]' is invalid for input of "
                                                      "size 6"),
    (lambda: ember.zeros(2, 3).t().view(6), RuntimeError, "view size is not compatible"),
    (lambda: ember.zeros(3).expand(2, 2), RuntimeError,
     r"The expanded size of the tensor \(2\) must match the existing size \(3\) at "
     r"non-singleton dimension 1"),
    (lambda: ember.zeros(3, 4).squeeze(2), IndexError, "Dimension out of range"),
    (lambda: ember.zeros(3, 4).flatten(1, 0), RuntimeError,
     "flatten\\(\\) has invalid args: start_dim cannot come after end_dim"),
    (lambda: ember.zeros(3, 4).unflatten(1, (3, 2)), RuntimeError,
     r"unflatten: Provided sizes \[3, 2\] don't multiply up to the size of dim 1 \(4\)"),
    (lambda: ember.zeros(3, 4).narrow(0, 2, 2), RuntimeError,
     r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)."),
    (lambda: ember.zeros(3, 4).narrow(0, 5, 0), IndexError, "start out of range"),
    (lambda: ember.zeros(3, 4).select(0, 5), IndexError,
     r"select\(\): index 5 out of range for tensor of size \[3, 4\] at dimension 0"),
    (lambda: ember.tensor(1.0).select(0, 0), IndexError, "select\\(\\) cannot be applied"),
    (lambda: ember.zeros(3, 4).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller"),
    (lambda: ember.zeros(3).fliplr(), RuntimeError, "Input must be >= 2-d."),
    (lambda: ember.zeros(3, 4).flip((0, 0)), RuntimeError, "dim 0 appears multiple times"),
    (lambda: ember.zeros(3, 4).roll((1, 2), (0,)), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda: ember.zeros(3).tril(), RuntimeError,
     "tril: input tensor must have at least 2 dimensions"),
    (lambda: ember.zeros(3, 4).diagonal(0, 0, 0), RuntimeError,
     "diagonal dimensions cannot be identical 0, 0"),
    (lambda: ember.diag(ember.zeros(2, 3, 3)), RuntimeError, "Supports 1D or 2D tensors. Got 3D"),
    (lambda: ember.zeros(3, 4).chunk(0), RuntimeError, "chunk expects `chunks` to be greater"),
    (lambda: ember.zeros(3, 4).split(0), RuntimeError, "split_size can only be 0"),
    (lambda: ember.zeros(3, 4).split([1, 1]), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3"),
    (lambda: ember.zeros(3, 4).movedim((0, 1), (0,)), RuntimeError,
     "movedim: Invalid source or destination dims"),
    (lambda: ember.zeros(3, 4).movedim((0, 0), (0, 1)), RuntimeError,
     r"movedim: repeated dim in `source` \(\[0, 0\]\)"),
    (lambda: ember.zeros(3, 4).rot90(1, (0, 0)), RuntimeError,
     "expected rotation dims to be different"),
    (lambda: ember.zeros(3).rot90(), RuntimeError, "expected total dims >= 2"),
    (lambda: ember.zeros(2).mT, RuntimeError, "tensor.mT is only supported on matrices"),
    (lambda: ember.zeros(3, 4).permute(0), RuntimeError, "number of dimensions in the tensor"),
    (lambda: ember.zeros(3, 4).transpose(0, 2), IndexError, "Dimension out of range"),
    (lambda: ember.zeros(5).tensor_split(0), RuntimeError,
     "number of sections must be larger than 0"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


# -- devices -------------------------------------------------------------------------------------

def test_ops_keep_device(testdev):
    # the registry's shape ops on the test device: the generic tests; here the Tensor methods
    x = ember.arange(12.0).reshape(3, 4).to(testdev)
    outs = [x.repeat(2, 1), x.t().contiguous(), x.view(12), x[:, :1].expand(3, 2)]
    for o in outs:
        assert o.device == testdev


def test_joins_reject_mixed_devices(testdev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.cat([ember.zeros(2), ember.zeros(2, device=testdev)])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.stack([ember.zeros(2), ember.zeros(2, device=testdev)])


def test_grad_on_device(testdev):
    x = ember.arange(6.0).reshape(2, 3).to(testdev).requires_grad_()
    ember.cat([x.flip(1), x.t().reshape(2, 3)]).sum().backward()
    assert x.grad.device == testdev
    np.testing.assert_array_equal(x.grad._host(), np.full((2, 3), 2.0))
