"""Views share memory and the version counter with their base; in-place ops on views write
through and rewrite the base's autograd history (CopySlices)."""

import numpy as np
import pytest

import ember
from ember._memory_format import unit_dim_strides
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import api

VIEWS = {
    "getitem_int": lambda t: t[1],
    "getitem_slices": lambda t: t[:, 1:, ::2],
    "getitem_none_ellipsis": lambda t: t[None, ..., 0],
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(-1),
    "view_as": lambda t: t.view_as(ember.zeros(3, 8)),
    "transpose": lambda t: t.transpose(0, 2),
    "permute": lambda t: t.permute(1, 2, 0),
    "t_of_2d": lambda t: t[0].t(),
    "mT": lambda t: t.mT,
    "movedim": lambda t: t.movedim(2, 0),
    "narrow": lambda t: t.narrow(2, 1, 2),
    "select": lambda t: t.select(1, 2),
    "unbind": lambda t: t.unbind(2)[3],
    "split": lambda t: t.split(2, 2)[1],
    "chunk": lambda t: t.chunk(2, 1)[1],
    "tensor_split": lambda t: t.tensor_split(3, 2)[2],
    "diagonal": lambda t: t.diagonal(1, 1, 2),
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "flatten": lambda t: t.flatten(1),
    "unflatten": lambda t: t.unflatten(2, (2, 2)),
    "chain": lambda t: t.transpose(0, 1)[1:].diagonal()[0],
    "atleast_3d": lambda t: ember.atleast_3d(t[0, 0]),
}


def _base():
    return ember.arange(24.0).reshape(2, 3, 4)


def _shares_memory(a, b) -> bool:
    """Whether two tensors' arrays overlap, on any device (the array module's
    ``shares_memory``: NumPy's, CuPy's), not through host copies made by ``.numpy()``."""
    return bool(api.array_module(a).shares_memory(api.array(a), api.array(b)))


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_share_memory_and_version(name):
    x = _base()
    root = x._base if x._base is not None else x
    v = VIEWS[name](x)
    assert v._base is root
    assert _shares_memory(v, x)
    # strides, storage offset and data_ptr agree with the memory the array reports (a size-1
    # dim NumPy gives stride 0, x[None], reports PyTorch's stride: see test_stride_parity_probes)
    a = api.array(v)
    assert v.stride() == unit_dim_strides(a.shape, tuple(s // a.itemsize for s in a.strides))
    base_ptr = root.data_ptr()
    assert v.data_ptr() == base_ptr + v.storage_offset() * a.itemsize
    v0 = x._version
    x.add_(1)
    assert v._version == x._version == v0 + 1
    np.testing.assert_array_equal(v.numpy(), VIEWS[name](ember.arange(24.0).reshape(2, 3, 4)
                                                          + 1).numpy())


WRITABLE = [n for n in VIEWS if n != "expand"]


@pytest.mark.parametrize("name", WRITABLE)
def test_inplace_on_view_writes_through(name):
    x = _base()
    v = VIEWS[name](x)
    v.add_(100)
    ref = np.arange(24.0).reshape(2, 3, 4)
    mask = np.zeros_like(ref)
    VIEWS[name](ember.from_numpy(mask))._data[...] = 1
    np.testing.assert_array_equal(x.numpy(), ref + 100 * (mask > 0))


def test_expand_view_refuses_writes_its_elements_share():
    # PyTorch's rules (tests/core/test_shared_memory_writes.py has them all): an element is
    # written through the memory its row shares; a column spans one location and is refused
    base = ember.zeros(3, 1)
    v = base.expand(3, 4)
    v[0, 0] = 1.0
    assert base.tolist() == [[1.0], [0.0], [0.0]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        v[0] = 1.0


def test_copies_are_not_views():
    x = _base()
    for out in (x.transpose(0, 1).reshape(-1), x.transpose(0, 1).flatten(), x[[0]],
                x[x > 3], x.flip(0), x.roll(1), x.repeat(1, 1, 1), ember.diag(x[0]),
                x.transpose(1, 2).contiguous()):
        assert out._base is None
        assert not _shares_memory(out, x)


def test_stride_and_offset_of_views():
    x = ember.arange(20.0).reshape(4, 5)
    assert x[1:, ::2].stride() == (5, 2) and x[1:, ::2].storage_offset() == 5
    assert x.diagonal(1).stride() == (6,) and x.diagonal(1).storage_offset() == 1
    assert x.diagonal(-1).storage_offset() == 5
    assert x.t().stride() == (1, 5)
    assert x[:, 3].stride() == (5,) and x[:, 3].storage_offset() == 3
    assert x[2, 3].storage_offset() == 13 and x[2, 3].shape == ()
    assert x.expand(2, 4, 5).stride() == (0, 5, 1)


# -- autograd through in-place ops on views ---------------------------------------------------

def test_setitem_on_non_leaf_gives_the_right_gradient():
    x = ember.arange(12.0, dtype=ember.float64).reshape(3, 4).requires_grad_()
    y = x * 2
    y[0] = 5
    (y * y).sum().backward()
    expected = 8 * np.arange(12.0).reshape(3, 4)
    expected[0] = 0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert y.grad_fn.name() == "CopySlices"


def test_inplace_mul_on_column_view_of_clone():
    x = ember.ones(3, 4, requires_grad=True)
    y = x.clone()
    y[:, 1].mul_(2)
    y.sum().backward()
    expected = np.ones((3, 4))
    expected[:, 1] = 2
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert y.grad_fn.name() == "CopySlices"


def test_inplace_on_view_of_view_rebases_root():
    x = ember.arange(12.0, dtype=ember.float64).reshape(3, 4).requires_grad_()
    y = x * 1
    v = y[1:]
    w = v[:, 2]
    w.mul_(3)
    (y * 2).sum().backward()
    expected = np.full((3, 4), 2.0)
    expected[1:, 2] = 6
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert w._base is y and v._base is y
    assert w.grad_fn.name() == "SelectBackward0"


def test_inplace_with_another_tensor_on_a_view():
    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    w = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)

    def fn(x, w):
        y = x * 1
        y[:, 1].mul_(w)
        y.diagonal().add_(w * w)
        return y * y

    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


def test_base_not_requiring_grad_gets_history_from_view_update():
    w = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    buf = ember.zeros(2, 2, dtype=ember.float64)
    buf[0].add_(w)
    buf.t()[1].mul_(w)  # scales column 1 by w
    buf.sum().backward()
    # buf = [[w0, w1 * w0], [0, 0 * w1]]: d/dw0 = 1 + w1, d/dw1 = w0
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 2.0])


def test_view_of_leaf_inplace_raises():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x[:2].add_(1)
    with ember.no_grad():
        x[:2].add_(1)
    assert x.tolist() == [2.0, 2.0, 1.0]


def test_modifying_saved_tensor_through_view_is_detected():
    x = ember.ones(3, 4, requires_grad=True)
    y = x * 2
    z = y * y  # saves y
    y[0].add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an inplace "
                                           "operation"):
        z.sum().backward()


def test_modifying_base_invalidates_saved_view():
    x = ember.ones(3, 4, requires_grad=True)
    y = x * 2
    v = y.t()
    z = v * v  # saves the view
    y.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_version_counter_shared_and_bumped_by_setitem():
    x = ember.zeros(3, 4)
    v = x[1]
    assert v._version == x._version == 0
    x[0, 0] = 1.0
    v[[1, 2]] = 2.0
    x.t()[0].fill_(3.0)
    assert x._version == v._version == 3
    assert x[1].tolist() == [3.0, 2.0, 2.0, 0.0]


def test_view_grad_flows_to_base():
    x = ember.arange(6.0, dtype=ember.float64).reshape(2, 3).requires_grad_()
    parts = x.unbind(1)
    (parts[0] * 1 + parts[2] * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 3], [1, 0, 3]])


def test_view_dtype_reinterprets_memory():
    x = ember.zeros(2, 4)
    v = x.view(ember.int32)
    assert v.dtype == ember.int32 and v.shape == (2, 4)
    assert v._base is None and _shares_memory(v, x)  # PyTorch: not tracked
    assert x.view(ember.float64).shape == (2, 2)
    x[0, 0] = 1.0
    assert v._version == x._version == 1
    assert v[0, 0].item() == np.array(1.0, dtype=np.float32).view(np.int32)
    with pytest.raises(RuntimeError, match="self.size\\(-1\\) must be divisible by 2 to view "
                                           "Float as Double"):
        ember.zeros(2, 3).view(ember.float64)


def test_resize_of_a_noncontiguous_view_reads_its_storage_and_stays_a_view():
    # PyTorch: the new shape takes the storage's elements from the view's offset on
    base = ember.arange(12.0).reshape(2, 6)
    x = base[:, ::2]
    v = base._version
    assert x.resize_(3, 2) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3], [4, 5]])
    assert x.stride() == (2, 1) and x.storage_offset() == 0 and x._base is not None
    assert base._version == x._version == v + 1
    x[0, 1] = 100.0
    assert base[0, 1].item() == 100.0
    y = base[1, 1:]
    assert y.storage_offset() == 7
    y.resize_(2, 2)
    np.testing.assert_array_equal(y.numpy(), [[7, 8], [9, 10]])
    base[1, 2] = 55.0
    assert y[0, 1].item() == 55.0 and y.storage_offset() == 7
    assert y.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def test_resize_same_shape_keeps_strides_and_memory_format_restrides():
    t = ember.arange(6.0).reshape(2, 3).t()
    v = t._version
    t.resize_(3, 2)
    assert t.stride() == (1, 3) and t._version == v  # the same shape: nothing happens
    t.resize_(3, 2, memory_format=ember.contiguous_format)
    assert t.stride() == (2, 1)
    np.testing.assert_array_equal(t.numpy(), [[0, 1], [2, 3], [4, 5]])
    c = ember.zeros(1, 2, 2, 3).resize_(1, 3, 2, 2, memory_format=ember.channels_last)
    assert c.stride() == (12, 1, 6, 3)


def test_resize_growing_keeps_the_old_elements():
    r = ember.arange(4.0)
    r.resize_(6)
    np.testing.assert_array_equal(r.numpy()[:4], [0, 1, 2, 3])
    part = r[1:3]
    r.resize_(2, 2)  # within the grown storage: still shared with the earlier view
    part[0] = 9.0
    np.testing.assert_array_equal(r.numpy(), [[0, 9], [2, 3]])
    # a view that grows gets a storage of its own (PyTorch grows the shared storage, which
    # Ember's array memory cannot do): its old elements come along
    base = ember.arange(6.0)
    z = base[4:]
    z.resize_(4)
    np.testing.assert_array_equal(z.numpy()[:2], [4, 5])
    assert z.storage_offset() == 4 and z.untyped_storage().nbytes() == 8 * 4


def test_is_view_says_whether_a_tensor_has_a_base():
    """``Tensor._is_view()`` (torchviz reads it)."""
    base = ember.ones(4)
    assert base.view(2, 2)._is_view() and base[1:]._is_view()
    assert not base._is_view() and not base.clone()._is_view()
