"""Channels-last layouts through convolutions and pooling: the strides of each output and of
each gradient as PyTorch's CPU kernels lay them out (torch is the oracle), and values equal to
the same computation on contiguous inputs.

Gradients are read with a hook on the input (the gradient the op produced, before
``AccumulateGrad`` stores it), so these tests pin down the ops' own layouts."""

import itertools
import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close

_PERM = {3: ((0, 2, 1), (0, 2, 1)), 4: ((0, 2, 3, 1), (0, 3, 1, 2)),
         5: ((0, 2, 3, 4, 1), (0, 4, 1, 2, 3))}


def _channels_last(t):
    """``t`` laid out channels-last (for a 3-d tensor: ``(N, L, C)`` in memory), built by
    permutes so that ember and torch get the same strides, size-1 dims included."""
    to, back = _PERM[t.dim()]
    return t.permute(*to).contiguous().permute(*back)


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _run(m, fn, arrays, layouts, dtype):
    """``fn(*tensors)`` in library ``m`` (ember or torch): the output's strides, the strides
    of the gradients the op hands each input, and the output and gradients as arrays."""
    dt = getattr(m, dtype)
    ts = []
    for a, cl in zip(arrays, layouts):
        t = m.tensor(a, dtype=dt)
        ts.append((_channels_last(t) if cl else t).requires_grad_())
    seen = [None] * len(ts)
    for i, t in enumerate(ts):
        t.register_hook(lambda g, i=i: seen.__setitem__(i, g))
    out = fn(m, *ts)
    y = out[0] if isinstance(out, tuple) else out
    w = m.tensor(np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)) % 7, dtype=dt)
    (y * w).sum().backward()
    extra = out[1].stride() if isinstance(out, tuple) else None
    return ((y.stride(), extra, tuple(g.stride() for g in seen)),
            [y.detach().cpu().numpy()] + [g.cpu().numpy() for g in seen])


def _check(fn, arrays, layouts, dtype, loose_weight_grad=False):
    torch = pytest.importorskip("torch")
    expect, _ = _run(torch, fn, arrays, layouts, dtype)
    got, values = _run(ember, fn, arrays, layouts, dtype)
    if loose_weight_grad:
        # PyTorch's slow 2-d kernels (float64) hand an ambiguous weight (a 1x1 kernel, one
        # output channel) a gradient whose size-1 dims carry other strides: the same memory
        got, expect = _drop_size1(got, arrays[1].shape), _drop_size1(expect, arrays[1].shape)
    assert got == expect
    _, plain = _run(ember, fn, arrays, [False] * len(arrays), dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else {}
    for a, b in zip(values, plain):
        assert_close(a, b, **tol)


def _drop_size1(result, wshape):
    y, extra, grads = result
    gw = tuple(s for s, n in zip(grads[1], wshape) if n > 1)
    return y, extra, (grads[0], gw) + grads[2:]


# -- convolutions -------------------------------------------------------------------------------

def _conv(nd, transposed, padding):
    name = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"
    return lambda m, x, w: getattr(m.nn.functional, name)(x, w, padding=padding)


#: (N, C, O, spatial size, kernel size): the plain case, N=1, C=1, O=1, 1x1 spatial (ambiguous
#: strides), 1x1 kernels, all ones, and a 5x5 kernel (oneDNN's 3-d path at N=1)
_CONV_SHAPES = [(2, 3, 4, 4, 3), (1, 3, 4, 4, 3), (2, 1, 4, 4, 3), (2, 3, 1, 4, 3),
                (2, 3, 4, 1, 1), (2, 3, 4, 4, 1), (1, 1, 1, 1, 1), (1, 3, 4, 5, 5)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("shape", _CONV_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_conv_layouts_follow_pytorch(nd, transposed, shape, dtype):
    N, C, O, S, K = shape
    x = _rand((N, C) + (S,) * nd, 0)
    w = _rand(((C, O) if transposed else (O, C)) + (K,) * nd, 1)
    loose = dtype == "float64" and nd == 2
    for layouts in itertools.product((False, True), repeat=2):
        _check(_conv(nd, transposed, K // 2), [x, w], layouts, dtype, loose)


def test_conv_with_bias_groups_stride_keeps_channels_last():
    torch = pytest.importorskip("torch")
    fn = (lambda m, x, w, b:
          m.nn.functional.conv2d(x, w, b, stride=2, padding=1, groups=2))
    arrays = [_rand((2, 4, 7, 7), 0), _rand((6, 2, 3, 3), 1), _rand((6,), 2)]
    for layouts in [(True, False, False), (False, True, False), (True, True, False)]:
        _check(fn, arrays, layouts, "float32")
    del torch


def test_conv2d_module_channels_last_repro():
    pytest.importorskip("torch")
    conv = ember.nn.Conv2d(3, 4, 3, padding=1).to(memory_format=ember.channels_last)
    x = ember.randn(2, 3, 4, 4).to(memory_format=ember.channels_last)
    y = conv(x)
    assert y.is_contiguous(memory_format=ember.channels_last)
    assert y.stride() == (64, 1, 16, 4)


def test_unbatched_conv2d_layouts():
    # PyTorch unsqueezes the batch dim with a small stride: a permuted (C, H, W) input does
    # not read as channels-last there, so only the weight decides
    torch = pytest.importorskip("torch")
    got = []
    for m in (torch, ember):
        x = m.tensor(_rand((4, 4, 3), 0), dtype=m.float32).permute(2, 0, 1)
        w = m.tensor(_rand((5, 3, 3, 3), 1), dtype=m.float32)
        got.append((m.nn.functional.conv2d(x, w).stride(),
                    m.nn.functional.conv2d(x, _channels_last(w)).stride()))
    assert got[0] == got[1]


def test_conv1d_transposed_input_and_weight_layouts():
    # conv1d runs as a 2-d convolution: a weight laid out (O, k, C) makes the output (N, L, O)
    # in memory, a transposed (N, L, C) input does not
    for layouts in [(True, False), (False, True), (True, True)]:
        _check(_conv(1, False, 0), [_rand((2, 3, 5), 0), _rand((4, 3, 3), 1)], layouts,
               "float32")


def test_conv_channels_last_double_backward_and_gradcheck():
    x = _channels_last(ember.tensor(_rand((1, 2, 4, 4), 0))).requires_grad_()
    w = _channels_last(ember.tensor(_rand((3, 2, 3, 3), 1))).requires_grad_()
    assert ember.autograd.gradcheck(lambda a, b: ember.nn.functional.conv2d(a, b, padding=1),
                                    (x, w))
    assert ember.autograd.gradgradcheck(
        lambda a, b: ember.nn.functional.conv_transpose2d(a, b, padding=1),
        (x, w.transpose(0, 1)))


def test_contiguous_conv_stays_contiguous():
    x, w = ember.randn(2, 3, 5, 5), ember.randn(4, 3, 3, 3)
    y = ember.nn.functional.conv2d(x, w)
    assert y.is_contiguous() and y.stride() == (36, 9, 3, 1)


# -- pooling ------------------------------------------------------------------------------------

def _pools():
    return {
        "max_pool2d": lambda m, x: m.nn.functional.max_pool2d(x, 2),
        "max_pool2d_padded": lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1),
        "max_pool2d_indices": lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1,
                                                                      return_indices=True),
        "avg_pool2d": lambda m, x: m.nn.functional.avg_pool2d(x, 2),
        "avg_pool2d_padded": lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1),
        "adaptive_avg_pool2d_1": lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 1),
        "adaptive_avg_pool2d_3": lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, 3),
        "adaptive_max_pool2d": lambda m, x: m.nn.functional.adaptive_max_pool2d(x, 3),
        "adaptive_max_pool2d_indices": lambda m, x: m.nn.functional.adaptive_max_pool2d(
            x, 3, return_indices=True),
        "max_pool3d": lambda m, x: m.nn.functional.max_pool3d(x, 2),
        "avg_pool3d": lambda m, x: m.nn.functional.avg_pool3d(x, 2),
        "adaptive_avg_pool3d_1": lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 1),
        "adaptive_avg_pool3d_2": lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 2),
        "adaptive_max_pool3d": lambda m, x: m.nn.functional.adaptive_max_pool3d(x, 2),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 6), (1, 3, 6), (2, 1, 6)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(_pools()))
def test_pool_layouts_follow_pytorch(name, shape, dtype):
    nd = 3 if "3d" in name else 2
    x = _rand(shape[:2] + shape[2:] * nd, 0)
    for cl in (False, True):
        _check(_pools()[name], [x], [cl], dtype)


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d_1"])
def test_pool_one_by_one_plane(name):
    fn = {"max_pool2d": lambda m, x: m.nn.functional.max_pool2d(x, 1),
          "avg_pool2d": lambda m, x: m.nn.functional.avg_pool2d(x, 1),
          "adaptive_avg_pool2d_1": _pools()["adaptive_avg_pool2d_1"]}[name]
    for cl in (False, True):
        _check(fn, [_rand((2, 3, 1, 1), 0)], [cl], "float32")


def test_channels_last_resnet_block_stays_channels_last():
    pytest.importorskip("torch")
    F = ember.nn.functional
    x = _channels_last(ember.randn(2, 3, 16, 16)).requires_grad_()
    w1 = _channels_last(ember.randn(8, 3, 7, 7)).requires_grad_()
    w2 = _channels_last(ember.randn(8, 8, 3, 3)).requires_grad_()
    y = F.max_pool2d(F.relu(F.conv2d(x, w1, stride=2, padding=3)), 3, 2, 1)
    z = F.relu(F.conv2d(y, w2, padding=1) + y)
    assert z.is_contiguous(memory_format=ember.channels_last)
    out = F.adaptive_avg_pool2d(z, 1)
    assert out.stride() == (8, 1, 8, 8)
    seen = []
    x.register_hook(seen.append)
    out.sum().backward()
    assert seen[0].is_contiguous(memory_format=ember.channels_last)


# -- interpolate and pad ------------------------------------------------------------------------

def _resizes():
    return {
        "nearest": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2),
        "nearest_size": lambda m, x: m.nn.functional.interpolate(x, size=(5, 7)),
        "bilinear": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2,
                                                             mode="bilinear"),
        "bilinear_corners": lambda m, x: m.nn.functional.interpolate(
            x, size=(5, 7), mode="bilinear", align_corners=True),
        "bicubic": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2, mode="bicubic"),
        "pad_constant": lambda m, x: m.nn.functional.pad(x, (1, 1, 2, 0)),
        "nearest3d": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2),
        "trilinear": lambda m, x: m.nn.functional.interpolate(x, scale_factor=2,
                                                              mode="trilinear"),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 3, 4), (2, 1, 4)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(_resizes()))
def test_interpolate_and_pad_layouts_follow_pytorch(name, shape, dtype):
    nd = 3 if name in ("nearest3d", "trilinear") else 2
    x = _rand(shape[:2] + shape[2:] * nd, 0)
    for cl in (False, True):
        _check(_resizes()[name], [x], [cl], dtype)


# -- a leaf's .grad keeps the leaf's layout (AccumulateGrad's layout contract) -----------------

@pytest.mark.parametrize("make,strides", [
    (lambda: ember.randn(2, 3, 4, 5).contiguous(memory_format=ember.channels_last),
     (60, 1, 15, 3)),
    (lambda: ember.randn(3, 4).t(), (1, 4)),  # a dense permuted leaf: its own strides
    (lambda: ember.randn(4, 6)[:, ::2], (3, 1)),  # not dense: C order
    (lambda: ember.randn(3, 1).expand(3, 4), (4, 1)),  # overlapping: C order
])
def test_leaf_grad_follows_the_layout_contract(make, strides):
    for backward in (lambda x: (x * 2).sum().backward(), lambda x: x.sum().backward()):
        x = make().detach().requires_grad_(True)
        backward(x)
        assert x.grad.stride() == strides and x.grad.shape == x.shape
        np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, x.grad.numpy().flat[0]))
        before = x.grad
        backward(x)  # accumulates in place, keeping the layout
        assert x.grad is before and x.grad.stride() == strides


def test_channels_last_conv_weight_grad_is_channels_last():
    conv = ember.nn.Conv2d(3, 8, 3).to(memory_format=ember.channels_last)
    x = ember.randn(2, 3, 8, 8).contiguous(memory_format=ember.channels_last)
    conv(x).sum().backward()
    assert conv.weight.grad.is_contiguous(memory_format=ember.channels_last)
    assert conv.weight.grad.stride() == conv.weight.stride()


# -- ops that keep a channels-last input's layout, as PyTorch's CPU kernels do ------------------

@pytest.mark.parametrize("op", [
    lambda x: ember.nn.functional.gelu(x),
    lambda x: ember.nn.functional.dropout(x, 0.5),
    lambda x: ember.nn.functional.pad(x, (1, 1, 2, 2), mode="reflect"),
    lambda x: ember.nn.functional.pad(x, (1, 1, 2, 2), mode="replicate"),
], ids=["gelu", "dropout", "reflect_pad", "replicate_pad"])
def test_ops_keep_channels_last(op):
    base = ember.randn(2, 3, 5, 6)
    x = base.contiguous(memory_format=ember.channels_last).requires_grad_(True)
    ember.manual_seed(0)
    y = op(x)
    assert y.is_contiguous(memory_format=ember.channels_last) and not y.is_contiguous()
    y.backward(ember.ones_like(y))
    assert x.grad.is_contiguous(memory_format=ember.channels_last)
    ember.manual_seed(0)
    ref = op(base.requires_grad_(True))  # same values as from the contiguous input (dropout:
    if ref.shape == y.shape and not isinstance(op, type(None)):  # its mask drawn in memory
        kept = (y.detach().numpy() != 0) == (ref.detach().numpy() != 0)  # order differs)
        assert kept.mean() > 0.3


def test_gelu_values_do_not_depend_on_the_layout():
    base = ember.randn(2, 3, 5, 6, dtype=ember.float64)
    cl = base.contiguous(memory_format=ember.channels_last)
    for approximate in ("none", "tanh"):
        np.testing.assert_array_equal(
            ember.nn.functional.gelu(cl, approximate=approximate).numpy(),
            ember.nn.functional.gelu(base, approximate=approximate).numpy())


@pytest.mark.parametrize("shape,strides", [
    ((2, 1, 4, 4), (16, 1, 4, 1)), ((2, 3, 1, 1), (3, 1, 3, 3)),
    ((1, 3, 4, 4), (48, 1, 12, 3)), ((2, 3, 1, 4), (12, 1, 12, 3))])
def test_to_channels_last_on_ambiguous_shapes_copies_as_pytorch(shape, strides):
    # PyTorch's to(memory_format=) aliases only when the layout already suggests the format;
    # an ambiguous (size-1) contiguous layout suggests contiguous, so it copies
    t = ember.randn(*shape)
    c = t.to(memory_format=ember.channels_last)
    assert c.stride() == strides and c.is_contiguous(memory_format=ember.channels_last)
    assert (c is t) == (t.stride() == strides)


def test_to_memory_format_aliases_as_pytorch():
    t = ember.randn(3, 4).t()
    assert t.to(memory_format=ember.contiguous_format) is t  # 2-d layouts suggest contiguous
    cl = ember.randn(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert cl.to(memory_format=ember.channels_last) is cl
    assert cl.to(memory_format=ember.contiguous_format).stride() == (60, 20, 5, 1)
    assert cl.to(ember.float64, memory_format=ember.channels_last).stride() == (60, 1, 15, 3)


# -- layouts PyTorch's kernels choose themselves (strides recorded from PyTorch 2.13's CPU) ---

def _strided(shape, strides):
    """A (2, 8, 4, 6)-style tensor with ``strides``, values a fixed ramp, requiring grad."""
    t = ember.empty_strided(shape, strides, dtype=ember.float64)
    with ember.no_grad():
        t.copy_(ember.arange(math.prod(shape), dtype=ember.float64).reshape(shape).sin())
    return t.requires_grad_(True)


_CL = (192, 1, 48, 8)  # (2, 8, 4, 6) channels-last
_T23 = (192, 24, 1, 4)  # (2, 8, 4, 6) with its two last axes swapped in memory


@pytest.mark.parametrize("op,input_strides,out_strides,name", [
    (lambda x: ember.softmax(x, 1), _CL, (192, 24, 6, 1), "SoftmaxBackward0"),
    (lambda x: ember.log_softmax(x, -1), _T23, (192, 24, 6, 1), "LogSoftmaxBackward0"),
    (lambda x: ember.nn.functional.instance_norm(x), _CL, (192, 24, 6, 1), None),
    (lambda x: ember.nn.functional.instance_norm(x), _T23, (192, 24, 6, 1), None),
    (lambda x: ember.nn.functional.pixel_shuffle(x, 2), _CL, (192, 1, 24, 2),
     "PixelShuffleBackward0"),
    (lambda x: ember.nn.functional.pixel_shuffle(x, 2), _T23, (192, 96, 12, 1),
     "PixelShuffleBackward0"),
    (lambda x: ember.nn.functional.pixel_unshuffle(x, 2), _CL, (192, 1, 96, 32),
     "PixelUnshuffleBackward0"),
    (lambda x: ember.nn.functional.pixel_unshuffle(x, 2), _T23, (192, 6, 3, 1),
     "PixelUnshuffleBackward0"),
    (lambda x: ember.nn.functional.channel_shuffle(x, 2), _CL, (192, 1, 48, 8),
     "ChannelShuffleBackward0"),
    (lambda x: ember.nn.functional.channel_shuffle(x, 2), _T23, (192, 24, 6, 1),
     "ChannelShuffleBackward0"),
], ids=["softmax_cl", "log_softmax_t", "instance_norm_cl", "instance_norm_t",
        "pixel_shuffle_cl", "pixel_shuffle_t", "pixel_unshuffle_cl", "pixel_unshuffle_t",
        "channel_shuffle_cl", "channel_shuffle_t"])
def test_kernels_choose_pytorchs_output_layout(op, input_strides, out_strides, name):
    # softmax and instance_norm write contiguous outputs whatever the input's layout; the
    # shuffles keep a channels-last input channels-last (their own backward nodes, as PyTorch's)
    x = _strided((2, 8, 4, 6), input_strides)
    y = op(x)
    assert y.stride() == out_strides
    dense = x.detach().contiguous().requires_grad_(True)
    ref = op(dense)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    if name is not None:
        assert type(y.grad_fn).__name__ == name
    g = ember.randn(*y.shape, dtype=ember.float64)
    y.backward(g)
    ref.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), dense.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", [
    lambda x: ember.nn.functional.pixel_shuffle(x, 2),
    lambda x: ember.nn.functional.pixel_unshuffle(x, 2),
    lambda x: ember.nn.functional.channel_shuffle(x, 4),
], ids=["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"])
def test_shuffles_gradcheck_and_copy(op):
    x = _strided((1, 8, 2, 4), (64, 1, 32, 8))
    assert ember.autograd.gradcheck(op, (x,))
    assert ember.autograd.gradgradcheck(op, (x,))
    # a factor of 1 returns a new tensor, never a view of the input
    one = ember.nn.functional.pixel_shuffle(x, 1)
    with ember.no_grad():
        one.zero_()
    assert x.abs().sum().item() > 0
