"""More of PyTorch's Tensor and top-level surface: the in-place view ops (``t_``,
``squeeze_``, ``as_strided_``, ...), ``as_strided``/``as_strided_scatter``, storages and
``set_``, the legacy and per-element methods, and the small top-level names (constants,
``layout``, ``Stream``/``Event``, ``frombuffer``/``from_file``, ``hash_tensor``, ...)."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def _f64(*shape, dev=None):
    n = math.prod(shape)
    return (ember.arange(float(n), dtype=ember.float64, device=dev).reshape(shape) * 0.37
            - 1.1).requires_grad_()


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture
def on_cpu():
    """CPU tensors by default, for the tests of CPU-only behaviour (also under a run whose
    default device is another)."""
    with ember.device("cpu"):
        yield


# -- in-place view ops -------------------------------------------------------------------------

INPLACE_VIEWS = {  # name -> (shape, call, numpy reference, PyTorch's grad_fn)
    "t_": ((2, 3), lambda t: t.t_(), lambda a: a.T, "TBackward1"),
    "transpose_": ((2, 3, 4), lambda t: t.transpose_(0, 2), lambda a: a.swapaxes(0, 2),
                   "TransposeBackward1"),
    "swapaxes_": ((2, 3, 4), lambda t: t.swapaxes_(1, -1), lambda a: a.swapaxes(1, 2),
                  "TransposeBackward1"),
    "swapdims_": ((2, 3), lambda t: t.swapdims_(0, 1), lambda a: a.swapaxes(0, 1),
                  "TransposeBackward1"),
    "squeeze_": ((2, 1, 3, 1), lambda t: t.squeeze_(), lambda a: a.squeeze(),
                 "SqueezeBackward3"),
    "squeeze_dim": ((2, 1, 3), lambda t: t.squeeze_(1), lambda a: a.squeeze(1),
                    "SqueezeBackward4"),
    "squeeze_dims": ((2, 1, 3, 1), lambda t: t.squeeze_(1, 3), lambda a: a.squeeze((1, 3)),
                     "SqueezeBackward5"),
    "unsqueeze_": ((2, 3), lambda t: t.unsqueeze_(1), lambda a: a.reshape(2, 1, 3),
                   "UnsqueezeBackward1"),
    "as_strided_": ((2, 3), lambda t: t.as_strided_((3, 2), (1, 3)),
                    lambda a: np.lib.stride_tricks.as_strided(a, (3, 2), (8, 24)),
                    "AsStridedBackward1"),
}


@pytest.mark.parametrize("name", list(INPLACE_VIEWS))
def test_inplace_view_changes_geometry_in_place(name, testdev):
    shape, call, ref, _ = INPLACE_VIEWS[name]
    for dev in (None, testdev):
        a = np.arange(float(math.prod(shape))).reshape(shape)
        t = ember.tensor(a, device=dev)
        ptr, v0 = t.data_ptr(), t._version
        assert call(t) is t
        expected = ref(a)
        assert t.shape == expected.shape
        assert t.stride() == tuple(s // 8 for s in expected.strides)
        assert t.data_ptr() == ptr and t._version == v0 + 1
        np.testing.assert_array_equal(t.cpu().numpy(), expected)


@pytest.mark.parametrize("name", list(INPLACE_VIEWS))
def test_inplace_view_on_non_leaf_is_differentiable(name):
    shape, call, _, node = INPLACE_VIEWS[name]

    def f(x):
        y = x * 1
        call(y)
        assert y.grad_fn.name() == node and y.grad_fn.next_functions[0][0].name() == \
            "MulBackward0"
        return y * y

    x = _f64(*shape)
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_inplace_view_grad_fn_names_match_torch():
    torch = _torch()
    for name, (shape, call, _, node) in INPLACE_VIEWS.items():
        y = torch.zeros(shape, requires_grad=True) * 2
        call(y)
        assert type(y.grad_fn).__name__ == node, name


def test_inplace_view_autograd_errors_and_no_grad():
    x = ember.zeros(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used"):
        x.t_()
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        x[0].unsqueeze_(0)
    with ember.no_grad():
        x.t_()
    assert x.shape == (3, 2) and x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError, match=r"^t_\(\) expects a tensor with <= 2 dimensions, "
                                           "but self is 3D"):
        ember.zeros(2, 1, 3).t_()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-3, 2\], but got 5\)"):
        ember.zeros(2, 1, 3).squeeze_(5)
    with pytest.raises(IndexError, match=r"range of \[-4, 3\], but got 4"):
        ember.zeros(2, 1, 3).unsqueeze_(4)
    assert ember.zeros(()).t_().shape == () and ember.zeros(3).t_().shape == (3,)


def _grad_through(lib, steps):
    a = lib.arange(12.0, dtype=lib.float64).requires_grad_()
    r = a * 1
    steps(lib, r)
    (r * lib.arange(12.0, dtype=lib.float64)).sum().backward()
    return a.grad.tolist()


CHAINS = {  # in-place writes through views whose replay went through an in-place view op
    "view_then_t_": lambda lib, r: (lambda v: (v.t_(), v[1].mul_(3)))(r.view(3, 4)[1:]),
    "unsqueeze_then_slice": lambda lib, r: (lambda v: (v.unsqueeze_(0),
                                                       v[0, :, 1:3].mul_(3)))(r.view(3, 4)[1:]),
    "root_t_after_view": lambda lib, r: (lambda b, w: (b.t_(), w.mul_(3)))(
        *(lambda b: (b, b[:, 1]))(r.view(3, 4))),
    "as_strided_view": lambda lib, r: r.as_strided((2, 2), (1, 4), 1).mul_(
        lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)),
    "as_strided_of_view": lambda lib, r: r[2:].as_strided((3,), (2,)).add_(5).mul_(2),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_writes_through_reshaped_views_match_torch(name):
    torch = _torch()
    assert _grad_through(ember, CHAINS[name]) == _grad_through(torch, CHAINS[name])


def test_write_through_view_after_inplace_view_op_gives_right_gradient():
    x = ember.arange(6.0, dtype=ember.float64).requires_grad_()
    y = x * 2
    v = y[0:4].view(2, 2)
    v.t_()
    v[0].mul_(10)  # elements 0 and 2 of y
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [20, 2, 20, 2, 2, 2])
    assert y.grad_fn.name() == "CopySlices"


# -- as_strided ---------------------------------------------------------------------------

def test_as_strided_matches_numpy_and_shares_storage(testdev):
    a = np.arange(12.0, dtype=np.float32)
    for dev in (None, testdev):
        t = ember.tensor(a, device=dev)
        v = t.as_strided((3, 3), (1, 2), 1)
        ref = np.lib.stride_tricks.as_strided(a[1:], (3, 3), (4, 8))
        np.testing.assert_array_equal(v.cpu().numpy(), ref)
        assert v._base is t and v.stride() == (1, 2) and v.storage_offset() == 1
        t.add_(1)
        np.testing.assert_array_equal(v.cpu().numpy(), ref + 1)
        # the offset counts from the storage, and defaults to the input's own
        w = t[4:]
        np.testing.assert_array_equal(w.as_strided((2,), (1,)).cpu().numpy(), a[4:6] + 1)
        np.testing.assert_array_equal(w.as_strided((2,), (1,), 0).cpu().numpy(), a[:2] + 1)
        assert ember.as_strided(t, (2,), (3,)).tolist() == [1.0, 4.0]


def test_as_strided_errors():
    x = ember.arange(6.0)
    cases = [(((3,), (1, 1)), "^mismatch in length of strides and shape$"),
             (((3,), (-1,)), r"^as_strided: Negative strides are not supported at the moment, "
                             r"got strides: \[-1\]$"),
             (((3,), (1,), -1), "^Tensor: invalid storage offset -1$"),
             (((3,), (1,), 4), r"^setStorage: sizes \[3\], strides \[1\], storage offset 4, "
                               "and itemsize 4 requiring a storage size of 28 are out of bounds "
                               "for storage of size 24$"),
             (((-1,), (1,)), r"Storage size calculation overflowed with sizes=\[-1\]")]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            x.as_strided(*args)
    assert x.as_strided((0,), (1,), 10).shape == (0,)


def test_as_strided_gradients():
    x = _f64(6)
    for args in (((2, 2), (1, 2), 1), ((3, 3), (1, 1)), ((2, 3), (0, 1), 2)):
        assert gradcheck(lambda t, a=args: (t * 1).as_strided(*a), (x,))
        assert gradgradcheck(lambda t, a=args: (t * 1).as_strided(*a), (x,))
    y = _f64(2, 3)  # a non-contiguous input and an offset view input
    assert gradcheck(lambda t: t.t().as_strided((2, 2), (2, 1), 1), (y,))
    assert gradcheck(lambda t: t[1:].as_strided((2,), (1,)), (y,))
    assert (x * 1).as_strided((2,), (1,)).grad_fn.name() == "AsStridedBackward0"


def test_as_strided_gradient_of_overlapping_input_matches_torch():
    torch = _torch()
    grads = []
    for lib in (ember, torch):
        x = lib.arange(3.0, dtype=lib.float64).requires_grad_()
        y = x.expand(2, 3).as_strided((3,), (1,), 0)
        (y * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [1.0, 2.0, 3.0]


def test_as_strided_scatter_values(testdev):
    for dev in (None, testdev):
        out = ember.as_strided_scatter(ember.zeros(6, device=dev), ember.ones(2, 2, device=dev),
                                       (2, 2), (1, 2))
        assert out.tolist() == [1, 1, 1, 1, 0, 0] and out.storage_offset() == 0
    # PyTorch clones the whole storage and keeps the input's geometry
    v = ember.arange(10.0)[2:8]
    out = ember.as_strided_scatter(v, -ember.ones(2), (2,), (1,))
    assert out.tolist() == [-1, -1, 4, 5, 6, 7] and out.storage_offset() == 2
    assert out.untyped_storage().nbytes() == 40
    assert ember.as_strided_scatter(v, -ember.ones(2), (2,), (1,), 3).tolist() == \
        [2, -1, -1, 5, 6, 7]
    t = ember.arange(6.0).reshape(2, 3).t()
    out = t.as_strided_scatter(-ember.ones(2), (2,), (1,))
    assert out.stride() == (1, 3) and out.tolist() == [[-1, 3], [-1, 4], [2, 5]]
    e = ember.arange(3.0).expand(2, 3)  # overlapping: a contiguous clone
    assert ember.as_strided_scatter(e, -ember.ones(2), (2,), (1,)).tolist() == \
        [[-1, -1, 2], [0, 1, 2]]
    with pytest.raises(RuntimeError, match=r"^expected src to have a size equal to the slice "
                                           r"of self. src size = \[3\], slice size = \[2, 2\]$"):
        ember.as_strided_scatter(ember.zeros(6), ember.ones(3), (2, 2), (1, 2))
    with pytest.raises(RuntimeError, match="only supported for contiguous inputs"):
        ember.as_strided_scatter(ember.zeros(2, 3, requires_grad=True).t(), ember.ones(2), (2,),
                                 (1,))


def test_as_strided_scatter_gradients():
    # The input's gradient is the output's outside the region: PyTorch 2.13 returns the
    # region's instead, which fails its own gradcheck; Ember's passes.
    x, s = _f64(6), _f64(2)
    f = lambda a, b: ember.as_strided_scatter(a * 1, b * 1, (2,), (2,), 1)
    assert gradcheck(f, (x, s)) and gradgradcheck(f, (x, s))
    assert f(x, s).grad_fn.name() == "AsStridedScatterBackward0"
    m, r = _f64(2, 3), _f64(2, 2)
    assert gradcheck(lambda a, b: ember.as_strided_scatter(a, b, (2, 2), (1, 3)), (m, r))


# -- storages and set_ --------------------------------------------------------------------------

def test_untyped_storage_bytes_and_sharing(on_cpu):
    a = ember.arange(6.0)
    s = a.untyped_storage()
    assert isinstance(s, ember.UntypedStorage) and s is a.untyped_storage()
    assert s.nbytes() == s.size() == len(s) == 24 and s.device == ember.device("cpu")
    assert s.data_ptr() == a.data_ptr() and s.element_size() == 1
    assert s.tolist() == list(np.arange(6.0, dtype=np.float32).tobytes())
    assert (s[4], s[7], s[-1]) == (0, 63, 64)
    view = a[2:]
    assert view.untyped_storage().nbytes() == 24 and view.untyped_storage().data_ptr() == \
        a.data_ptr()
    part = s[0:4]  # a slice shares the memory
    part.fill_(0)
    assert a[0].item() == 0 and part.data_ptr() == s.data_ptr()
    t = ember.zeros(2)
    t.untyped_storage()[3] = 0x3F + 256  # bytes wrap, as in PyTorch
    assert t[0].item() == np.frombuffer(bytes([0, 0, 0, 0x3F]), np.float32)[0]
    with pytest.raises(IndexError, match="^index 100 out of range for storage of size 24$"):
        s[100]
    with pytest.raises(RuntimeError, match="can only set storage content with a int types, "
                                           "but got float instead"):
        s[0] = 1.5
    with pytest.raises(RuntimeError, match="only a step of 1 is supported"):
        s[::2]
    assert ember.UntypedStorage([1, 2, 300]).tolist() == [1, 2, 44]
    assert ember.UntypedStorage(4).tolist() == [0] * 4 and ember.UntypedStorage(b"ab")[1] == 98
    assert repr(ember.UntypedStorage([1, 2])) == \
        " 1\n 2\n[ember.UntypedStorage(device=cpu) of size 2]"
    c = ember.UntypedStorage([1, 2]).clone()
    assert c.copy_(ember.UntypedStorage([3, 4])).tolist() == [3, 4]
    with pytest.raises(RuntimeError, match="size does not match, self was 2 bytes but src was 1"):
        c.copy_(ember.UntypedStorage([3]))
    assert ember.is_storage(s) and not ember.is_storage(a)


def test_typed_storage_is_deprecated_and_reads_elements():
    from ember import _storage

    _storage._warned_typed[0] = False
    a = ember.arange(3.0)
    with pytest.warns(UserWarning, match="^TypedStorage is deprecated"):
        ts = a.storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process, as in PyTorch
        assert a.storage_type() is ember.FloatStorage
    assert (ts[1], len(ts), ts.dtype, ts.nbytes(), ts.tolist()) == (1.0, 3, ember.float32, 12,
                                                                    [0.0, 1.0, 2.0])
    assert isinstance(ts, ember.FloatStorage) and not isinstance(ts, ember.LongStorage)
    assert ts.untyped() is a.untyped_storage() and ts.type() == "ember.FloatStorage"
    assert ember.LongStorage([1, 2]).tolist() == [1, 2]
    assert ember.zeros(2, dtype=ember.int64).storage_type() is ember.LongStorage
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage"):
        ts[0:1]


def test_set_to_tensor_storage_and_empty():
    a = ember.arange(6.0)
    b = ember.zeros(2)
    assert b.set_(a) is b and b.is_set_to(a) and a.is_set_to(b)
    assert (b._version, a._version, b.tolist()) == (1, 0, a.tolist())
    b.add_(1)  # shared memory, own version counter
    assert a[0].item() == 1 and a._version == 0
    c = ember.zeros(2).set_(a[1:3])
    assert c.storage_offset() == 1 and c.is_set_to(a[1:3]) and not c.is_set_to(a)
    assert a.is_set_to(a[:]) and a.is_set_to(a.view(6)) and not a.is_set_to(a.view(2, 3))
    d = ember.zeros(3).set_(a.untyped_storage(), 1, (2, 2), (1, 2))
    assert d.tolist() == [[2, 4], [3, 5]] and d.storage_offset() == 1
    assert ember.zeros(3).set_(a.untyped_storage()).shape == (6,)
    assert ember.zeros(3).set_(a, 2, (2,)).tolist() == [3, 4]
    e = ember.zeros(3).set_()
    assert e.shape == (0,) and e.untyped_storage().nbytes() == 0
    with pytest.raises(RuntimeError, match="^Could not set tensor of type long int to a tensor "
                                           "of type float$"):
        ember.zeros(3).set_(ember.zeros(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="requiring a storage size of 32 are out of bounds "
                                           "for storage of size 24"):
        ember.zeros(3).set_(a.untyped_storage(), 4, (2, 2))
    with pytest.raises(TypeError, match=r"set_\(\) received an invalid combination of "
                                        r"arguments - got \(Tensor, int\)"):
        ember.zeros(3).set_(a, 1)
    with pytest.raises(TypeError, match=r"must be Tensor, not int"):
        a.is_set_to(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = ember.zeros(2).storage()
    with pytest.raises(RuntimeError, match="^Expected a Storage of type long int or an "
                                           "UntypedStorage, but got type Float for argument 1"):
        ember.tensor([], dtype=ember.int64).set_(ts)


def test_set_under_autograd():
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        x.set_(ember.zeros(2))
    z = ember.zeros(3).set_(x * 2)
    assert z.requires_grad and z.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="^derivative for set_ is not implemented$"):
        z.sum().backward()
    with ember.no_grad():
        x.set_(ember.ones(2))
    assert x.requires_grad and x.is_leaf and x.tolist() == [1, 1]
    v = ember.zeros(4)[1:]  # a view stops being one, keeping the version counter
    base = v._base
    v.set_(ember.ones(2))
    assert v._base is None and v._version == base._version == 1


def test_setstate_and_new_from_storage():
    c = ember.zeros(2, 3)
    c.__setstate__((c.untyped_storage(), 0, ember.Size([3]), (1,)))
    assert c.shape == (3,)
    c = ember.zeros(2)
    c.__setstate__((True, None, None))
    assert c.requires_grad
    c = ember.zeros(2)
    c.__setstate__((ember.ones(3), None, None, False, None))
    assert c.tolist() == [1, 1, 1] and not c.requires_grad
    with pytest.raises(RuntimeError, match="^__setstate__ can be only called on leaf Tensors$"):
        (ember.zeros(2, requires_grad=True) * 2).__setstate__((True, None, None))
    a = ember.arange(4.0)
    n = a.new(a.untyped_storage())
    assert n.tolist() == a.tolist() and n.is_set_to(a)


def test_detached_view_and_unsafe_split_keep_the_storage():
    a = ember.arange(10.0)
    d = a[3:5].detach()
    assert d.storage_offset() == 3 and d.untyped_storage().data_ptr() == a.data_ptr()
    parts = ember.unsafe_split(a, 4)
    assert [p.storage_offset() for p in parts] == [0, 4, 8]
    assert all(p._base is None for p in parts)
    w = a[2:].view(ember.int32)  # a dtype view shares the storage
    assert w.storage_offset() == 2 and w.untyped_storage().nbytes() == 40
    x = ember.zeros(3)
    x.data = a[4:7]
    assert x.storage_offset() == 4 and x.tolist() == [4.0, 5.0, 6.0]
    x.data = ember.ones(2)
    assert x.storage_offset() == 0 and x.untyped_storage().nbytes() == 8


# -- Tensor methods -----------------------------------------------------------------------------

def test_small_tensor_methods(on_cpu):
    a = ember.arange(6.0)
    assert a.const_data_ptr() == a.data_ptr()
    assert a.layout is ember.strided and type(ember.strided) is ember.layout
    assert ember.FloatTensor.layout is ember.strided and repr(ember.strided) == "ember.strided"
    with pytest.raises(TypeError, match="cannot create 'ember.layout' instances"):
        ember.layout()
    for name in ("is_ipu", "is_maia", "is_mkldnn", "is_mtia", "is_vulkan", "is_xla",
                 "is_nested"):
        assert getattr(a, name) is False
    with pytest.warns(UserWarning, match=r"^volatile was removed \(Variable.volatile is always "
                                         r"False\)$"):
        assert a.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        a.volatile = True
    assert a.module_load(ember.ones(6)) is not a and a.tolist() == [1.0] * 6
    assert a.module_load(ember.full((6,), 3.0), assign=True).tolist() == [3.0] * 6
    with pytest.raises(AssertionError, match="^Ember not compiled with XPU enabled$"):
        a.xpu()
    assert not a.is_pinned()
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.is_pinned"):
        a.is_pinned("cpu")
    with pytest.raises(RuntimeError, match="^CPU device type not an accelerator.$"):
        a.pin_memory("cpu")
    if not ember.accelerator.is_available():
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is "
                                               "available.$"):
            a.pin_memory()
    with pytest.raises(RuntimeError, match="^unknown parameter type$"):
        a.record_stream(None)
    with pytest.raises(NotImplementedError, match="^Could not run 'aten::record_stream' with "
                                                  "arguments from the 'CPU' backend"):
        a.record_stream(ember.Stream("cpu"))


def test_dim_order_matches_torch():
    torch = _torch()
    cases = [((2, 3, 5, 7), lambda t: t), ((2, 3, 5, 7), lambda t: t.transpose(1, 2)),
             ((2, 3, 5, 7), lambda t: t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)),
             ((1, 2, 3, 4), lambda t: t), ((4, 5), lambda t: t.t()), ((3,), lambda t: t),
             ((2, 3, 4), lambda t: t.permute(2, 0, 1))]
    for shape, make in cases:
        expected = make(torch.empty(shape)).dim_order()
        assert make(ember.empty(shape)).dim_order() == expected
    t = ember.empty(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        t.dim_order(ambiguity_check=True)
    assert t.dim_order(ambiguity_check=[ember.contiguous_format, ember.channels_last]) == \
        (0, 1, 2, 3)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        t.dim_order(ambiguity_check="ILLEGAL")


def test_apply_map_map2(on_cpu):
    a = ember.arange(6.0)
    assert a.clone().apply_(lambda v: v * 2).tolist() == [0, 2, 4, 6, 8, 10]
    assert ember.arange(3).apply_(lambda v: v * 2.7).tolist() == [0, 2, 5]
    t = ember.arange(6.0).reshape(2, 3).t()
    t.apply_(lambda v: v + 1)  # writes through a non-contiguous view
    assert t.tolist() == [[1, 4], [2, 5], [3, 6]]
    assert a.clone().map_(ember.ones(1), lambda u, v: u + v).tolist() == [1, 2, 3, 4, 5, 6]
    assert a.clone().map2_(ember.ones(6), ember.full((6,), 2.0),
                           lambda u, v, w: u + v * w).tolist() == [2, 3, 4, 5, 6, 7]
    with pytest.raises(TypeError, match="^must be real number, not str$"):
        a.clone().apply_(lambda v: "x")
    with pytest.raises(RuntimeError, match=r"^Can't call apply_\(\) on Variable that requires "
                                           r"grad. Use var.detach\(\).apply_\(\) instead.$"):
        ember.zeros(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=r"Can't call map_\(\) on Variable"):
        a.clone().map_(ember.ones(6, requires_grad=True), lambda u, v: u)
    with pytest.raises(TypeError, match=r"^map_: expected ember.FloatTensor for 'other' \(got "
                                        r"ember.LongTensor\)$"):
        a.clone().map_(ember.ones(6, dtype=ember.int64), lambda u, v: u)
    with pytest.raises(TypeError, match="^map2_: expected ember.FloatTensor for argument 'y'"):
        a.clone().map2_(ember.ones(6), ember.ones(6, dtype=ember.int64), lambda u, v, w: u)
    with pytest.raises(TypeError, match=r"argument 'other' \(position 1\) must be Tensor"):
        a.clone().map_(5, lambda u, v: u)


def test_grad_dtype():
    p = ember.zeros(3, requires_grad=True)
    assert p.grad_dtype is ember.float32
    p.grad_dtype = ember.float64
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    assert p.grad.dtype is ember.float64 and p.grad.tolist() == [5.0] * 3
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype 'float' "
                                           "to a tensor with grad_dtype 'Double'"):
        p.grad = ember.zeros(3)
    q = ember.zeros(3, requires_grad=True)
    q.grad_dtype = None
    q.grad = ember.zeros(3, dtype=ember.float64)
    assert q.grad_dtype is None and q.grad.dtype is ember.float64
    with pytest.raises(RuntimeError, match="^grad_dtype can only be set on leaf tensors.$"):
        (q * 2).grad_dtype = ember.float64
    with pytest.raises(RuntimeError, match="grad_dtype must be a ember.dtype or None, but got "
                                           "str"):
        q.grad_dtype = "x"


def test_new_resize_resize_as(on_cpu):
    a = ember.arange(6.0)
    assert a.new(2, 3).shape == (2, 3) and a.new(2, 3).dtype is ember.float32
    assert a.new([1, 2]).tolist() == [1, 2] and a.new().shape == (0,)
    assert a.new(ember.Size([2])).shape == (2,) and a.new(a)._base is not None
    with pytest.raises(RuntimeError, match="^legacy constructor expects device type: cpu but "
                                           "device type: meta was passed$"):
        a.new(2, device="meta")
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        a.new(2.5)
    with pytest.warns(UserWarning, match="^non-inplace resize is deprecated$"):
        r = a.resize(2, 3)
    assert r.shape == (2, 3) and r._base is not None
    with pytest.warns(UserWarning, match="^non-inplace resize_as is deprecated$"):
        assert a.resize_as(ember.zeros(3, 2)).shape == (3, 2)
    with pytest.raises(RuntimeError, match=r"^requested resize to 4 \(4 elements in total\), but "
                                           r"the given tensor has a size of 6 \(6 elements\)"):
        with pytest.warns(UserWarning):
            a.resize(4)
    x = _f64(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.resize(6).grad_fn.name() == "ResizeBackward"
        assert gradcheck(lambda t: t.t().resize(3, 2), (x,))
        assert gradgradcheck(lambda t: (t * 1).resize(6), (x,))


def test_unsafe_split_chunk():
    z = ember.arange(5.0)
    assert [p.tolist() for p in ember.unsafe_chunk(z, 2)] == [[0, 1, 2], [3, 4]]
    assert [p.tolist() for p in z.unsafe_split(2)] == [[0, 1], [2, 3], [4]]
    assert [p.tolist() for p in ember.unsafe_split_with_sizes(z, [2, 3])] == [[0, 1], [2, 3, 4]]
    parts = ember.unsafe_split(z, 2)
    parts[0].add_(10)  # shared memory, separate version counters
    assert z.tolist()[:2] == [10, 11] and z._version == 0 and parts[0]._version == 1
    with pytest.raises(TypeError, match=r"argument 'split_size' \(position 2\) must be int, not "
                                        "list"):
        ember.unsafe_split(z, [2, 3])
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        ember.unsafe_split_with_sizes(z, [2, 2])
    y = _f64(5) * 1
    assert [p.grad_fn.name() for p in ember.unsafe_chunk(y, 2)] == ["UnsafeSplitBackward0"] * 2
    assert ember.unsafe_split_with_sizes(y, [2, 3])[1].grad_fn.name() == \
        "UnsafeSplitWithSizesBackward0"
    x = _f64(5)
    for f in (lambda t: ember.unsafe_split(t, 2), lambda t: t.unsafe_chunk(2),
              lambda t: ember.unsafe_split_with_sizes(t, [1, 4])):
        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    parts = ember.unsafe_split(x * 1, 2)  # an output without a gradient counts as zeros
    (parts[0].sum() * 2 + parts[2].sum() * 3).backward()
    assert x.grad.tolist() == [2, 2, 0, 0, 3]


def test_removed_linalg_names_raise():
    a = ember.eye(2)
    for call, hint in ((lambda: a.eig(), "ember.linalg.eig"), (lambda: ember.eig(a), "eigvals"),
                       (lambda: a.lstsq(a), "ember.linalg.lstsq"),
                       (lambda: a.solve(a), "ember.linalg.solve"),
                       (lambda: ember.symeig(a, True), "ember.linalg.eigh")):
        with pytest.raises(RuntimeError, match="^This function was deprecated since version 1.9 "
                                               "and is now removed.") as info:
            call()
        assert hint in str(info.value)


# -- top-level names ---------------------------------------------------------------------------

def test_constants_flags_and_device_questions(testdev, on_cpu):
    assert (ember.e, ember.pi, ember.inf) == (math.e, math.pi, math.inf)
    assert math.isnan(ember.nan) and ember.newaxis is None
    assert ember.zeros(2)[:, ember.newaxis].shape == (2, 1)
    assert ember.has_lapack is True and ember.has_spectral is False
    assert ember.has_mkl == ember.backends.mkl.is_available()
    assert ember.has_openmp == ember.backends.openmp.is_available()
    assert ember.get_device(ember.zeros(1)) == -1
    assert ember.get_device(ember.zeros(1, device=testdev)) == 0
    with pytest.raises(TypeError, match=r"get_device\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not int"):
        ember.get_device(3)
    assert ember.is_signed(ember.zeros(1)) and not ember.is_signed(ember.zeros(1, dtype=ember.bool))
    assert not ember.is_signed(ember.zeros(1, dtype=ember.uint8))
    assert ember.get_device_module("cpu") is ember.cpu and ember.get_device_module("cuda") is \
        ember.cuda
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    if ember.accelerator.current_accelerator() is None:
        assert ember.get_device_module() is ember.cpu
    with pytest.raises(RuntimeError, match="^Invalid value of device '3'"):
        ember.get_device_module(3)
    assert ember.cpu.is_available() and ember.cpu.device_count() == 1
    with ember.cpu.stream(ember.cpu.Stream()) as _:
        assert isinstance(ember.cpu.current_stream(), ember.cpu.Stream)


def test_warn_always_flush_denormal_threads():
    assert ember.is_warn_always_enabled() is False
    ember.set_warn_always(True)
    try:
        assert ember.is_warn_always_enabled()
        for _ in range(2):  # frombuffer's once-only warning comes every time now
            with pytest.warns(UserWarning, match="The given buffer is not writable"):
                ember.frombuffer(b"\x01\x00\x00\x00", dtype=ember.int32)
    finally:
        ember.set_warn_always(False)
    with pytest.raises(RuntimeError, match="^setWarnOnlyOnce expects a bool, but got int$"):
        ember.set_warn_always(1)
    assert ember.set_flush_denormal(True) is False and ember.set_flush_denormal(False) is False
    with pytest.raises(RuntimeError, match="^flush_denormal expects a bool, but got int$"):
        ember.set_flush_denormal(1)
    n = ember.get_num_threads()
    ember.set_num_threads(n)
    assert ember.init_num_threads() is None and ember.get_num_threads() == n
    assert ember.thread_safe_generator() is None


def test_exception_classes():
    for cls in (ember.AcceleratorError, ember.OutOfMemoryError):
        assert issubclass(cls, RuntimeError) and cls.__module__ == "ember"
    with pytest.raises(RuntimeError, match="x"):
        raise ember.OutOfMemoryError("x")


def test_cpu_stream_and_event():
    s = ember.Stream("cpu")
    assert repr(s) == "ember.Stream device_type=cpu, device_index=-1, stream_id=0"
    assert (s.device, s.device_type, s.device_index, s.stream_id) == (ember.device("cpu"), 0,
                                                                      -1, 0)
    assert s.query() and s.synchronize() is None and s == ember.Stream(device="cpu")
    assert hash(s) == hash(ember.Stream("cpu")) and not s.is_capturing()
    with s as entered:
        assert entered is s
    for call in (lambda: s.wait_stream(s), lambda: s.record_event(),
                 lambda: ember.Event("cpu").record()):
        with pytest.raises(RuntimeError, match="^cpu backend doesn't support events.$"):
            call()
    with pytest.raises(RuntimeError, match="native handle"):
        _ = s.native_handle
    e = ember.Event("cpu", enable_timing=True)
    assert repr(e) == "ember.Event device_type=cpu, device_index=-1, event_flag=1, event_id=0"
    assert e.query() and e.synchronize() is None and e.wait() is None and s.wait_event(e) is None
    with pytest.raises(ValueError, match="^Both events must be created with argument "
                                         "'enable_timing=True'.$"):
        e.elapsed_time(ember.Event("cpu"))
    with pytest.raises(ValueError, match="^Both events must be recorded"):
        e.elapsed_time(ember.Event("cpu", enable_timing=True))
    if ember.accelerator.current_accelerator() is None:
        assert ember.Stream().device == ember.device("cpu")
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is "
                                               "available.$"):
            ember.Stream(0)


def test_detach_fill_zero_functions():
    x = _f64(3)
    d = ember.detach(x)
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    y = x * 1
    assert ember.detach_(y) is y and not y.requires_grad
    assert ember.fill(ember.arange(3), 2.7).tolist() == [2, 2, 2]
    assert ember.fill(x, 2).grad_fn.name() == "FillBackward0"
    assert ember.fill(x, ember.tensor(2.0, dtype=ember.float64)).grad_fn.name() == "FillBackward1"
    with pytest.raises(RuntimeError, match="^fill_ only supports 0-dimension value tensor but "
                                           "got tensor with 1 dimensions.$"):
        ember.fill(x, ember.tensor([2.0]))
    v = _f64(1).reshape(())
    assert gradcheck(lambda a, b: ember.fill(a, b) * a, (x, v))
    t = ember.arange(3.0)
    assert ember.fill_(t, 5) is t and t.tolist() == [5, 5, 5]
    assert ember.zero_(t) is t and t.tolist() == [0, 0, 0]


def test_scalar_tensor_and_empty_permuted(testdev):
    assert ember.scalar_tensor(3).dtype is ember.float32 and ember.scalar_tensor(3).shape == ()
    assert ember.scalar_tensor(3, dtype=ember.int64).item() == 3
    assert ember.scalar_tensor(True).item() == 1.0
    assert ember.scalar_tensor(2.5, requires_grad=True, device=testdev).requires_grad
    with pytest.raises(TypeError, match=r"^scalar_tensor\(\): argument 's' \(position 1\) must "
                                        "be Number, not list$"):
        ember.scalar_tensor([1])
    t = ember.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1), device=testdev)
    assert t.shape == (2, 3, 5, 7) and t.stride() == (105, 1, 21, 3) and t.device == testdev
    assert ember.empty_permuted((2, 3), (1, 0)).stride() == (1, 2)
    for layout, msg in (((1, 1), "^Duplicate dim not allowed$"),
                        ((1,), "Number of dimensions in size does not match the length of the "
                               r"physical_layout; i.e. len\(size\) = 2 is not equal to "
                               r"len\(physical_layout\) = 1"),
                        ((1, 2), r"Dimension out of range \(expected to be between 0 and 1, but "
                                 "got 2 at index 1\\)")):
        with pytest.raises(RuntimeError, match=msg):
            ember.empty_permuted((2, 3), layout)


def test_frombuffer():
    buf = bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")
    t = ember.frombuffer(buf, dtype=ember.int32)
    assert t.tolist() == [1, 2]
    t[0] = 5  # shares the memory
    assert buf[0] == 5
    assert ember.frombuffer(buf, dtype=ember.int32, count=1, offset=4).tolist() == [2]
    assert ember.frombuffer(bytearray(8), dtype=ember.float32, requires_grad=True).requires_grad
    for kwargs, msg in (({"count": 3}, r"requested buffer length \(3 \* 4 bytes\) after offset "
                                       r"\(0 bytes\) must not be greater than actual buffer "
                                       r"length \(8 bytes\)"),
                        ({"offset": 9}, r"offset \(9 bytes\) must be non-negative and no greater "
                                        r"than buffer length \(8 bytes\) minus 1")):
        with pytest.raises(ValueError, match=msg):
            ember.frombuffer(bytearray(8), dtype=ember.int32, **kwargs)
    with pytest.raises(ValueError, match=r"buffer length \(7 bytes\) after offset \(0 bytes\) "
                                         r"must be a multiple of element size \(4\)"):
        ember.frombuffer(bytearray(7), dtype=ember.int32)
    with pytest.raises(ValueError, match=r"both buffer length \(0\) and count \(-1\) must not "
                                         "be 0"):
        ember.frombuffer(bytearray(0), dtype=ember.int32)
    with pytest.raises(ValueError, match="object does not implement Python buffer protocol"):
        ember.frombuffer([1, 2], dtype=ember.float32)


def test_from_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(16)))
    t = ember.from_file(str(path), size=4, dtype=ember.int32)
    np.testing.assert_array_equal(t.numpy(), np.frombuffer(bytes(range(16)), np.int32))
    shared = ember.from_file(str(path), shared=True, size=2, dtype=ember.int32)
    shared[0] = 7
    del shared
    assert path.read_bytes()[:4] == b"\x07\x00\x00\x00"
    private = ember.from_file(str(path), shared=False, size=2, dtype=ember.int32)
    private[0] = 9  # copy-on-write: the file keeps its bytes
    del private
    assert path.read_bytes()[:4] == b"\x07\x00\x00\x00"
    assert ember.from_file(str(path)).shape == (0,)
    with pytest.raises(RuntimeError, match="size <16> is smaller than the required mapping size "
                                           "<20>"):
        ember.from_file(str(path), size=5, dtype=ember.int32)
    missing = tmp_path / "missing.bin"
    with pytest.raises(RuntimeError, match="unable to open file .* in read-only mode"):
        ember.from_file(str(missing), size=2)
    made = ember.from_file(str(missing), shared=True, size=3, dtype=ember.int32)
    assert made.tolist() == [0, 0, 0] and missing.stat().st_size == 12


def test_nonzero_static(testdev):
    a = ember.tensor([[0, 1.5], [2, 0]], device=testdev)
    assert ember.nonzero_static(a, size=4).tolist() == [[0, 1], [1, 0], [-1, -1], [-1, -1]]
    assert a.nonzero_static(size=1).tolist() == [[0, 1]]
    assert a.nonzero_static(size=3, fill_value=9).tolist() == [[0, 1], [1, 0], [9, 9]]
    r = a.nonzero_static(size=0)
    assert r.shape == (0, 2) and r.dtype is ember.int64 and r.device == testdev
    assert ember.nonzero_static(ember.tensor(3.0), size=2).shape == (2, 0)
    with pytest.raises(RuntimeError, match="^nonzero_static: 'size' must be an non-negative "
                                           "integer$"):
        a.nonzero_static(size=-1)


def test_nonzero_static_and_hash_tensor_match_torch():
    torch = _torch()
    data = np.array([[0.0, 1.5, -2.0], [3.25, 0.0, -0.0]])
    for dt in ("float32", "float64", "int64", "int32", "bool"):
        e, t = ember.tensor(data.astype(dt)), torch.tensor(data.astype(dt))
        for kwargs in ({}, {"dim": 1}, {"dim": (0, 1)}, {"dim": 0, "keepdim": True}):
            ours = ember.hash_tensor(e, **kwargs)
            theirs = torch.hash_tensor(t, **kwargs)
            assert ours.dtype is ember.int64 and ours.shape == tuple(theirs.shape)
            assert (ours.numpy().astype(np.uint64).tolist() ==
                    np.asarray(theirs.tolist(), dtype=np.uint64).tolist())
        assert ember.nonzero_static(e, size=5).tolist() == \
            torch.nonzero_static(t, size=5).tolist()
    with pytest.raises(RuntimeError, match="^Unknown hash_tensor mode: 1$"):
        ember.hash_tensor(ember.zeros(2), mode=1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified for "
                                           r"input.numel\(\) == 0"):
        ember.hash_tensor(ember.zeros(0))
    assert ember.hash_tensor(ember.zeros(0, 3), 0).tolist() == [0, 0, 0]


def test_untyped_storage_from_file(tmp_path):
    """``UntypedStorage.from_file`` maps a file (the safetensors package reads ``pt`` files
    through it, then ``asarray(storage[a:b], dtype=uint8).view(dtype)``)."""
    path = tmp_path / "blob.bin"
    payload = np.arange(6, dtype=np.float32)
    path.write_bytes(b"HEAD" + payload.tobytes())
    s = ember.UntypedStorage.from_file(str(path), shared=False, nbytes=28)
    assert s.nbytes() == 28 and bytes(s.tolist()[:4]) == b"HEAD"
    t = ember.asarray(s[4:28], dtype=ember.uint8).view(dtype=ember.float32).reshape(2, 3)
    assert t.tolist() == payload.reshape(2, 3).tolist()
    s[0] = ord("X")  # shared=False: copy on write, the file keeps its bytes
    assert path.read_bytes()[:4] == b"HEAD"
    shared = ember.UntypedStorage.from_file(path, shared=True, nbytes=28)
    shared[0] = ord("Y")
    del shared
    assert path.read_bytes()[:1] == b"Y"
    with pytest.raises(RuntimeError, match="unexpected EOF, expected 4 more bytes"):
        ember.UntypedStorage.from_file(str(path), shared=False, nbytes=32)
    grown = ember.UntypedStorage.from_file(str(path), shared=True, nbytes=32)
    assert grown.nbytes() == 32 and path.stat().st_size == 32
    assert ember.UntypedStorage.from_file(str(path), nbytes=0).nbytes() == 0
