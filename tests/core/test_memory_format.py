"""Memory formats: ``ember.channels_last`` & co. in ``contiguous``, ``is_contiguous``, ``to``,
``empty`` and the ``*_like`` factories, with PyTorch's strides (torch is the oracle), and
the ops that must stay right on channels-last inputs."""

import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import assert_close

FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
CL = ember.channels_last


def _rand(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _dense_strides(strides, shape):
    """Strides of the dims longer than 1: those of size-1 dims mean nothing (PyTorch's own
    contiguity checks skip them), and the two libraries pick them differently."""
    return tuple(s for s, n in zip(strides, shape) if n > 1)


def _torch_strided_like(torch, t):
    """A torch tensor with ``t``'s shape and strides (a strided view of a zero buffer)."""
    shape, strides = tuple(t.shape), t.stride()
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if t.numel() else 1
    return torch.as_strided(torch.zeros(extent, dtype=torch.float64), shape, strides)


# -- the format objects -------------------------------------------------------------------

def test_formats_are_singletons_with_pytorch_reprs():
    for name in FORMATS:
        fmt = getattr(ember, name)
        assert type(fmt) is ember.memory_format
        assert repr(fmt) == str(fmt) == f"ember.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
        assert copy.deepcopy(fmt) is fmt
    assert repr(ember.memory_format) == "<class 'ember.memory_format'>"
    with pytest.raises(TypeError, match="cannot create 'ember.memory_format' instances"):
        ember.memory_format()


# -- contiguous / is_contiguous -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 1, 1), (2, 1, 4, 5), (1, 3, 4, 5),
                                   (3, 8, 7, 2)])
def test_channels_last_strides_match_torch(shape):
    torch = pytest.importorskip("torch")
    data = _rand(*shape)
    x = ember.tensor(data)
    y = x.contiguous(memory_format=CL)
    ty = torch.tensor(data).contiguous(memory_format=torch.channels_last)
    assert y.stride() == ty.stride()
    assert y.is_contiguous() == ty.is_contiguous()
    assert y.is_contiguous(memory_format=CL)
    assert y.shape == x.shape and np.array_equal(y.numpy(), data)
    back = y.contiguous()
    assert back.stride() == torch.tensor(data).stride() and np.array_equal(back.numpy(), data)


def test_channels_last_memory_is_nhwc():
    data = _rand(2, 3, 4, 5)
    y = ember.tensor(data).contiguous(memory_format=CL)
    assert y.stride() == (60, 1, 15, 3)
    assert not y.is_contiguous()
    nhwc = np.ascontiguousarray(data.transpose(0, 2, 3, 1)).reshape(-1)
    assert np.array_equal(np.lib.stride_tricks.as_strided(y.numpy(), (120,), (8,)), nhwc)


def test_strides_of_tensors_without_elements_are_pytorchs():
    torch = pytest.importorskip("torch")
    for shape in [(0,), (2, 0), (0, 3), (2, 0, 3)]:
        assert ember.zeros(*shape).stride() == torch.zeros(*shape).stride()
    assert ember.zeros(2, 0).stride(1) == 1


def test_channels_last_3d_strides_match_torch():
    torch = pytest.importorskip("torch")
    data = _rand(2, 3, 4, 5, 6)
    z = ember.tensor(data).contiguous(memory_format=ember.channels_last_3d)
    tz = torch.tensor(data).contiguous(memory_format=torch.channels_last_3d)
    assert z.stride() == tz.stride() == (360, 1, 90, 18, 3)
    assert z.is_contiguous(memory_format=ember.channels_last_3d)
    assert not z.is_contiguous(memory_format=CL)
    assert np.array_equal(z.numpy(), data)


def test_contiguous_returns_self_when_already_in_format():
    x = ember.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=CL)
    assert x.contiguous() is x
    assert y.contiguous(memory_format=CL) is y
    assert x.contiguous(memory_format=ember.preserve_format) is x
    # both formats at once: one channel
    one = ember.randn(2, 1, 4, 5)
    assert one.is_contiguous(memory_format=CL) and one.contiguous(memory_format=CL) is one


def test_deepcopy_keeps_the_layout():
    torch = pytest.importorskip("torch")
    y = ember.randn(2, 3, 4, 5).contiguous(memory_format=CL)
    ty = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    c = copy.deepcopy(y)
    assert c.stride() == copy.deepcopy(ty).stride() == (60, 1, 15, 3)
    assert np.array_equal(c.numpy(), y.numpy()) and c.data_ptr() != y.data_ptr()


def test_deepcopy_of_a_non_leaf_is_pytorchs_error():
    # torch_ema's state_dict deepcopies its shadow parameters: PyTorch's words, with the
    # weight_norm hint
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"graph leaves\) support the deepcopy protocol at "
                                           r"the moment\.  If you were attempting to deepcopy "
                                           r"a module.*weight_norm usage"):
        copy.deepcopy(x)


def test_is_contiguous_for_other_ranks_is_false_not_an_error():
    x = ember.randn(2, 3, 4)
    assert not x.is_contiguous(memory_format=CL)
    assert not x.is_contiguous(memory_format=ember.channels_last_3d)
    assert x.is_contiguous(memory_format=ember.preserve_format)


def test_contiguous_channels_last_is_differentiable():
    x = ember.randn(2, 3, 4, 5, requires_grad=True)
    y = x.contiguous(memory_format=CL)
    assert type(y.grad_fn).__name__ == "CloneBackward0"
    (y * ember.arange(120.0).reshape(2, 3, 4, 5)).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.arange(120.0).reshape(2, 3, 4, 5))
    with ember.no_grad():
        assert x.contiguous(memory_format=CL).grad_fn is None


def test_format_errors_are_pytorchs():
    x = ember.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.contiguous(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        ember.randn(2, 3, 4, 5).contiguous(memory_format=ember.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.to(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.empty(2, 3, memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.zeros_like(x, memory_format=CL)
    y = ember.randn(2, 3, 4, 5).contiguous(memory_format=CL)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        y.contiguous(memory_format=ember.preserve_format)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        ember.empty(2, 3, 4, 5, memory_format=ember.preserve_format)


@pytest.mark.parametrize("call, name", [
    (lambda x: x.contiguous(memory_format="channels_last"), "contiguous"),
    (lambda x: x.contiguous(memory_format=None), "contiguous"),
    (lambda x: x.is_contiguous(memory_format=1), "is_contiguous"),
    (lambda x: x.to(memory_format="channels_last"), "to"),
    (lambda x: ember.empty_like(x, memory_format="c"), "empty_like"),
    (lambda x: ember.empty(2, memory_format=1), "empty"),
])
def test_a_non_format_is_a_type_error(call, name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'memory_format' must be "
                                        r"ember.memory_format, not "):
        call(ember.randn(2, 3, 4, 5))


def test_memory_format_is_keyword_only():
    x = ember.randn(2, 3, 4, 5)
    with pytest.raises(TypeError):
        x.contiguous(CL)
    with pytest.raises(TypeError):
        x.is_contiguous(CL)


# -- to / cpu -------------------------------------------------------------------------------

def test_to_memory_format():
    torch = pytest.importorskip("torch")
    data = _rand(2, 3, 4, 5)
    x, tx = ember.tensor(data), torch.tensor(data)
    y = x.to(memory_format=CL)
    assert y.stride() == tx.to(memory_format=torch.channels_last).stride()
    assert y.to(memory_format=CL) is y
    assert y.to(memory_format=ember.preserve_format) is y
    assert x.to(memory_format=None) is x
    assert x.to(memory_format=ember.contiguous_format) is x
    assert x.to(memory_format=ember.contiguous_format, copy=True) is not x
    assert y.to(memory_format=ember.contiguous_format).stride() == tx.stride()
    z = x.to(ember.float32, memory_format=CL)
    assert z.dtype is ember.float32 and z.stride() == (60, 1, 15, 3)
    assert np.allclose(z.numpy(), data.astype(np.float32))
    assert x.cpu(memory_format=CL).stride() == (60, 1, 15, 3)


def test_dtype_casts_keep_channels_last():
    torch = pytest.importorskip("torch")
    ty = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    y = ember.randn(2, 3, 4, 5).contiguous(memory_format=CL)
    for cast in ("double", "half", "float"):
        assert getattr(y, cast)().stride() == getattr(ty, cast)().stride()


def test_formats_on_another_device(testdev):
    y = ember.randn(2, 3, 4, 5, device=testdev).contiguous(memory_format=CL)
    assert y.device == testdev and y.stride() == (60, 1, 15, 3)
    assert ember.empty_like(y).stride() == (60, 1, 15, 3)
    assert ember.zeros(2, 3, 4, 5).to(testdev, memory_format=CL).stride() == (60, 1, 15, 3)
    assert ember.empty(2, 3, 4, 5, device=testdev, memory_format=CL).device == testdev


# -- empty and the *_like factories -----------------------------------------------------------

def test_empty_memory_format_matches_torch():
    torch = pytest.importorskip("torch")
    for shape, fe, ft in [((2, 3, 4, 5), CL, torch.channels_last),
                          ((2, 3, 4, 5, 6), ember.channels_last_3d, torch.channels_last_3d),
                          ((2, 3, 4, 5), ember.contiguous_format, torch.contiguous_format)]:
        assert ember.empty(*shape, memory_format=fe).stride() == \
            torch.empty(*shape, memory_format=ft).stride()
    assert ember.empty((2, 3, 4, 5), memory_format=None).stride() == (60, 20, 5, 1)


@pytest.mark.parametrize("factory", ["empty_like", "zeros_like", "ones_like", "full_like"])
def test_like_factories_follow_memory_format(factory):
    torch = pytest.importorskip("torch")
    args = (2.5,) if factory == "full_like" else ()
    x = ember.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=CL)
    tx = torch.randn(2, 3, 4, 5)
    ty = tx.contiguous(memory_format=torch.channels_last)
    make, tmake = getattr(ember, factory), getattr(torch, factory)
    assert make(y, *args).stride() == tmake(ty, *args).stride() == (60, 1, 15, 3)
    assert make(y, *args, memory_format=ember.contiguous_format).stride() == \
        tmake(ty, *args, memory_format=torch.contiguous_format).stride()
    assert make(x, *args, memory_format=CL).stride() == \
        tmake(tx, *args, memory_format=torch.channels_last).stride()
    assert make(x.permute(0, 3, 2, 1), *args).stride() == \
        tmake(tx.permute(0, 3, 2, 1), *args).stride()
    if factory != "empty_like":
        expected = {"zeros_like": 0.0, "ones_like": 1.0, "full_like": 2.5}[factory]
        assert np.all(make(y, *args).numpy() == expected)


def _strided_case(rng):
    """A random tensor view: permuted, then maybe narrowed or expanded along one dim."""
    ndim = int(rng.integers(1, 6))
    shape = tuple(int(s) for s in rng.integers(1, 5, ndim))
    t = ember.tensor(rng.standard_normal(shape)).permute(*rng.permutation(ndim).tolist())
    dim = int(rng.integers(0, ndim))
    kind = rng.integers(0, 3)
    if kind == 1:
        t = t.narrow(dim, 0, max(1, t.shape[dim] // 2))
    elif kind == 2:
        t = t.unsqueeze(dim).expand(*t.shape[:dim], 3, *t.shape[dim:])
    return t


@pytest.mark.parametrize("factory", ["rand_like", "randn_like", "randint_like", "clone"])
def test_random_like_and_clone_follow_memory_format(factory):
    torch = pytest.importorskip("torch")
    args = (5,) if factory == "randint_like" else ()
    y = ember.randn(2, 3, 4, 5).contiguous(memory_format=CL)
    ty = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    make, tmake = getattr(ember, factory), getattr(torch, factory)
    assert make(y, *args).stride() == tmake(ty, *args).stride() == (60, 1, 15, 3)
    assert make(y, *args, memory_format=ember.contiguous_format).stride() == (60, 20, 5, 1)
    x = ember.randn(3, 4)
    assert make(x.t(), *args).stride() == tmake(torch.randn(3, 4).t(), *args).stride()
    if factory == "clone":
        assert np.array_equal(y.clone().numpy(), y.numpy())


def test_gradcheck_on_channels_last_outputs():
    x = ember.tensor(_rand(1, 2, 3, 3)).contiguous(memory_format=CL).requires_grad_()
    assert ember.autograd.gradcheck(lambda a: (a * a).relu(), (x,))
    assert ember.autograd.functional.jacobian(lambda a: a * 2, x).shape == (1, 2, 3, 3) * 2


def test_legacy_cuda_types_exist():
    assert repr(ember.cuda.FloatTensor) == "<class 'ember.cuda.FloatTensor'>"
    assert ember.cuda.LongTensor.dtype is ember.int64 and ember.cuda.FloatTensor.is_cuda
    assert not isinstance(ember.zeros(2), ember.cuda.FloatTensor)


def test_preserve_format_matches_torch_on_strided_views():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    pairs = [(getattr(ember, n), getattr(torch, n)) for n in FORMATS]
    for _ in range(300):
        t = _strided_case(rng)
        tt = _torch_strided_like(torch, t)
        assert t.stride() == tt.stride()
        for fe, ft in pairs:
            assert t.is_contiguous(memory_format=fe) == tt.is_contiguous(memory_format=ft)
            try:
                expected = _dense_strides(torch.empty_like(tt, memory_format=ft).stride(),
                                          t.shape)
            except RuntimeError as exc:
                with pytest.raises(RuntimeError, match=str(exc)):
                    ember.empty_like(t, memory_format=fe)
                continue
            got = ember.empty_like(t, memory_format=fe)
            assert _dense_strides(got.stride(), t.shape) == expected, (t.shape, t.stride(), fe)
            if fe is not ember.preserve_format:
                c, tc = t.contiguous(memory_format=fe), tt.contiguous(memory_format=ft)
                assert _dense_strides(c.stride(), t.shape) == \
                    _dense_strides(tc.stride(), t.shape)
                assert np.array_equal(c.numpy(), t.numpy())


# -- ops on channels-last inputs ----------------------------------------------------------------

def test_pointwise_ops_keep_channels_last_like_torch():
    torch = pytest.importorskip("torch")
    data = _rand(2, 3, 4, 5)
    y = ember.tensor(data).contiguous(memory_format=CL)
    ty = torch.tensor(data).contiguous(memory_format=torch.channels_last)
    for fn in (lambda a: a + 1, lambda a: a * 2.0, lambda a: a + a, lambda a: -a,
               lambda a: a.exp(), lambda a: a.relu(), lambda a: a.sigmoid(),
               lambda a: a.pow(2), lambda a: a.sum(1)):
        out, tout = fn(y), fn(ty)
        assert out.stride() == tout.stride()
        assert np.allclose(out.numpy(), tout.numpy())


def _both(fn, weight_shape, cl_input=True, cl_weight=False, seed=0):
    """``fn(x, w)`` on channels-last operands and on contiguous ones: outputs, input
    gradients and weight gradients must agree."""
    xd, wd = _rand(2, 3, 8, 8, seed=seed), _rand(*weight_shape, seed=seed + 1)
    results = []
    for cl_x, cl_w in ((cl_input, cl_weight), (False, False)):
        x = ember.tensor(xd, requires_grad=True)
        w = ember.tensor(wd, requires_grad=True)
        xi = x.contiguous(memory_format=CL) if cl_x else x
        wi = w.contiguous(memory_format=CL) if cl_w and w.dim() == 4 else w
        out = fn(xi, wi)
        g = ember.tensor(_rand(*out.shape, seed=seed + 2))
        out.backward(g)
        results.append((out.detach(), x.grad, w.grad))
    for got, expected in zip(*results):
        assert_close(got, expected, rtol=1e-10, atol=1e-12)
    return results[0][0]


CASES = {
    "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), (4, 3, 3, 3)),
    "conv2d_stride": (lambda x, w: F.conv2d(x, w, stride=2), (4, 3, 3, 3)),
    "conv2d_depthwise": (lambda x, w: F.conv2d(x, w, groups=3), (3, 1, 3, 3)),
    "conv2d_1x1": (lambda x, w: F.conv2d(x, w), (5, 3, 1, 1)),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2), (3, 4, 3, 3)),
    "batch_norm": (lambda x, w: F.batch_norm(x, None, None, w[0], w[1], training=True),
                   (2, 3)),
    "max_pool2d": (lambda x, w: F.max_pool2d(x, 2) * w.sum(), (2,)),
    "avg_pool2d": (lambda x, w: F.avg_pool2d(x, 3, stride=2, padding=1) * w.sum(), (2,)),
    "adaptive_avg_pool2d": (lambda x, w: F.adaptive_avg_pool2d(x, 1) * w.sum(), (2,)),
    "relu": (lambda x, w: F.relu(x) * w.sum(), (2,)),
    "linear": (lambda x, w: F.linear(x, w), (5, 8)),
    "flatten_linear": (lambda x, w: F.linear(x.flatten(1), w), (5, 192)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("cl_weight", [False, True])
def test_ops_are_right_on_channels_last_inputs(name, cl_weight):
    fn, wshape = CASES[name]
    _both(fn, wshape, cl_weight=cl_weight)


@pytest.mark.parametrize("name", ["conv2d", "batch_norm", "max_pool2d", "conv_transpose2d"])
def test_ops_on_channels_last_inputs_match_torch(name):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    fn, wshape = CASES[name]
    xd, wd = _rand(2, 3, 8, 8), _rand(*wshape, seed=1)
    x = ember.tensor(xd, requires_grad=True)
    tx = torch.tensor(xd, requires_grad=True)
    w, tw = ember.tensor(wd, requires_grad=True), torch.tensor(wd, requires_grad=True)
    out = fn(x.contiguous(memory_format=CL), w)
    tfn = {"conv2d": lambda a, b: TF.conv2d(a, b, padding=1),
           "batch_norm": lambda a, b: TF.batch_norm(a, None, None, b[0], b[1], training=True),
           "max_pool2d": lambda a, b: TF.max_pool2d(a, 2) * b.sum(),
           "conv_transpose2d": lambda a, b: TF.conv_transpose2d(a, b, stride=2)}[name]
    tout = tfn(tx.contiguous(memory_format=torch.channels_last), tw)
    g = _rand(*out.shape, seed=2)
    out.backward(ember.tensor(g))
    tout.backward(torch.tensor(g))
    assert np.allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-12)
    assert np.allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    assert np.allclose(w.grad.numpy(), tw.grad.numpy(), atol=1e-12)


def test_conv2d_gradcheck_on_channels_last_input():
    x = ember.tensor(_rand(1, 2, 5, 5)).contiguous(memory_format=CL).requires_grad_()
    w = ember.tensor(_rand(3, 2, 3, 3, seed=1)).contiguous(memory_format=CL).requires_grad_()
    assert x.stride() == (50, 1, 10, 2)
    assert ember.autograd.gradcheck(lambda a, b: F.conv2d(a, b, padding=1), (x, w))
