"""Regressions found by differential probes of the geometry/resampling ops against PyTorch
2.13 (``interpolate``, ``grid_sample``, ``pad``, ``fold``/``unfold``, the shuffles,
``one_hot``). Each test compares with PyTorch when it is importable, else with pinned values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the oracle is optional: pinned expectations run without it
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is absent")


def _arange(shape, dtype=ember.float32):
    n = math.prod(shape)
    return (ember.arange(n, dtype=ember.float64).reshape(shape) * 0.37).sin().to(dtype)


def _raises(fn, exc, message):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message


# -- interpolate -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,size,kernel", [
    ((2, 4, 5, 6), (7, 9), "upsample_nearest2d_channels_last"),
    ((2, 4, 7), 11, "compute_indices_weights_nearest"),
    ((2, 4, 3, 5, 6), (4, 7, 9), "compute_indices_weights_nearest"),
])
@pytest.mark.parametrize("dtype,name", [(ember.int64, "Long"), (ember.int8, "Char"),
                                        (ember.bool, "Bool")])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_refuses_dtypes_without_kernel(shape, size, kernel, dtype, name, mode):
    x = ember.zeros(shape, dtype=dtype)
    _raises(lambda: F.interpolate(x, size=size, mode=mode), NotImplementedError,
            f'"{kernel}" not implemented for \'{name}\'')


def test_nearest_dtype_channels_last_3d_kernel_and_uint8_still_works():
    x = ember.zeros(2, 4, 3, 5, 6, dtype=ember.int32).contiguous(
        memory_format=ember.channels_last_3d)
    _raises(lambda: F.interpolate(x, size=(4, 7, 9)), NotImplementedError,
            '"upsample_nearest3d_channels_last" not implemented for \'Int\'')
    u = ember.arange(6, dtype=ember.uint8).reshape(1, 1, 2, 3)
    assert F.interpolate(u, scale_factor=2).dtype == ember.uint8


def test_nearest_checks_sizes_before_dtype():
    x = ember.zeros(2, 0, 5, 6, dtype=ember.int8)
    _raises(lambda: F.interpolate(x, size=(3, 3)), RuntimeError,
            "Non-empty 4D data tensor expected but got a tensor with sizes [2, 0, 5, 6]")


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_empty_spatial_dim_reports_sizes_first(mode):
    x = ember.zeros(2, 3, 0, 6)
    _raises(lambda: F.interpolate(x, size=(7, 8), mode=mode), RuntimeError,
            "Input and output sizes should be greater than 0, but got input (H: 0, W: 6) "
            "output (H: 7, W: 8)")
    _raises(lambda: F.interpolate(ember.zeros(2, 0, 5, 6), size=(7, 8), mode=mode),
            RuntimeError, "Non-empty 4D data tensor expected but got a tensor with sizes "
                          "[2, 0, 5, 6]")


@pytest.mark.parametrize("scale", [float("nan"), float("inf")])
def test_non_finite_scale_factor(scale):
    _raises(lambda: F.interpolate(ember.zeros(1, 1, 2), scale_factor=scale), RuntimeError,
            "value cannot be converted to type int64_t without overflow")


@pytest.mark.parametrize("fn", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_upsample_deprecation_message(fn):
    with pytest.warns(UserWarning) as record:
        getattr(F, fn)(ember.zeros(1, 1, 2, 2), scale_factor=2)
    assert str(record[0].message) == (f"`nn.functional.{fn}` is deprecated. Use "
                                      "`nn.functional.interpolate` instead.")


# -- grid_sample -----------------------------------------------------------------------------

def _grid_case(lib, n, mode, padding, dtype="float64"):
    xs = (2, 3, 4, 5) if n == 4 else (2, 3, 3, 4, 5)
    gs = (2, 6, 7, 2) if n == 4 else (2, 2, 6, 7, 3)
    dt = getattr(lib, dtype)

    def make(shape, k):
        a = np.sin(np.arange(math.prod(shape), dtype=np.float64) * 0.37).reshape(shape) * k
        return lib.tensor(a, dtype=dt).requires_grad_()

    x, g = make(xs, 1.0), make(gs, 1.4)
    out = lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding,
                                        align_corners=False)
    w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=dt)
    gx, gg = lib.autograd.grad(out, (x, g), w)
    return out, gx, gg


@needs_torch
@pytest.mark.parametrize("n", [4, 5])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_layout_and_nearest_grid_gradient(n, mode):
    ours = _grid_case(ember, n, mode, "zeros")
    theirs = _grid_case(torch, n, mode, "zeros")
    for a, b in zip(ours, theirs):  # output and input gradient contiguous, grid's zero
        assert a.stride() == b.stride()
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_grid_sample_nearest_gives_grid_a_zero_gradient():
    x = ember.ones(1, 1, 2, 2, requires_grad=True)
    g = ember.zeros(1, 1, 1, 2, requires_grad=True)
    out = F.grid_sample(x, g, mode="nearest", align_corners=False)
    gx, gg = ember.autograd.grad(out.sum(), (x, g))
    assert gg.shape == g.shape and not gg.any()
    assert gx.is_contiguous()


def test_grid_sample_one_pixel_reflection_grid_gradient():
    x = ember.arange(6.0).reshape(1, 6, 1, 1).requires_grad_()
    g = ember.tensor([[[[2.5, -1.3]]]], requires_grad=True)
    out = F.grid_sample(x, g, padding_mode="reflection", align_corners=True)
    assert out.flatten().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    gg, = ember.autograd.grad(out.sum(), g)
    assert gg.tolist() == [[[[0.0, 0.0]]]]


def _nan_grid(lib, n):
    if n == 4:
        x = lib.arange(24.0).reshape(1, 2, 3, 4).requires_grad_()
        g = lib.zeros(1, 2, 3, 2)
        g[0, 0, 0, 0] = float("nan")
        g[0, 1, 1, 1] = float("nan")
    else:
        x = lib.arange(48.0).reshape(1, 2, 2, 3, 4).requires_grad_()
        g = lib.zeros(1, 1, 2, 3, 3)
        g[0, 0, 0, 0, 0] = float("nan")
        g[0, 0, 1, 1, 1] = float("nan")
    g[(0,) * (n - 1) + (0,)] = float("nan")
    return x, g.requires_grad_()


@needs_torch
@pytest.mark.parametrize("n,mode", [(4, "bilinear"), (4, "bicubic"), (5, "bilinear")])
def test_grid_sample_nan_grid_matches_pytorch(n, mode):
    results = []
    for lib in (ember, torch):
        x, g = _nan_grid(lib, n)
        out = lib.nn.functional.grid_sample(x, g, mode=mode, align_corners=False)
        w = lib.ones_like(out).cumsum(-1)
        results.append([out] + list(lib.autograd.grad(out, (x, g), w)))
    for a, b in zip(*results):  # 2-D: NaN output, clean input gradient; 3-D: skipped taps
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, equal_nan=True)


def test_grid_sample_nan_grid_2d_input_gradient_has_no_nan():
    x, g = _nan_grid(ember, 4)
    out = F.grid_sample(x, g, align_corners=False)
    gx, = ember.autograd.grad(out.sum(), x)
    assert not ember.isnan(gx).any()
    assert ember.isnan(out).any()  # as PyTorch's vectorized kernel: NaN * 0


@pytest.mark.parametrize("padding", ["border", "reflection"])
def test_grid_sample_3d_nan_clips_to_the_high_border(padding):
    x = ember.arange(24.0).reshape(1, 1, 2, 3, 4)
    g = ember.zeros(1, 1, 1, 3, 3)
    for i in range(3):
        g[0, 0, 0, i, i] = float("nan")
    out = F.grid_sample(x, g, padding_mode=padding, align_corners=True)
    assert out.flatten().tolist() == [13.0, 15.5, 17.5]  # PyTorch 2.13's values


# -- pad -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,value,ctype", [
    (ember.uint8, -1, "uint8_t"), (ember.uint8, 300, "uint8_t"), (ember.int8, 200.0, "int8_t"),
    (ember.int64, 1e30, "int64_t"), (ember.int32, float("nan"), "int"),
    (ember.float16, 1e10, "c10::Half")])
def test_pad_value_overflow(dtype, value, ctype):
    x = ember.zeros(2, dtype=dtype)
    _raises(lambda: F.pad(x, (1, 1), value=value), RuntimeError,
            f"value cannot be converted to type {ctype} without overflow")


def test_pad_value_types():
    x = ember.zeros(2, dtype=ember.int8)
    _raises(lambda: F.pad(x, (1, 1), value=1 + 2j), TypeError,
            "pad(): argument 'value' (position 4) must be float, not complex")
    _raises(lambda: F.pad(x, (1, 1), value="a"), TypeError,
            "pad(): argument 'value' (position 4) must be float, not str")
    assert F.pad(x, (1, 1), value=ember.tensor(2.0)).tolist() == [2, 0, 0, 2]
    assert F.pad(x, (1, 1), value=2.7).tolist() == [2, 0, 0, 2]
    assert F.pad(ember.zeros(1, dtype=ember.bool), (1, 0), value=5).tolist() == [True, False]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_refuses_non_int_pads(mode):
    x = ember.zeros(2, 3, 4, 5)
    _raises(lambda: F.pad(x, (1.0, 1, 2, 2), mode=mode), TypeError,
            "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
            "type float at pos 0")
    _raises(lambda: F.pad(x, (True, 1), mode=mode), TypeError,
            "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
            "type bool at pos 0")
    _raises(lambda: F.pad(x, 1, mode=mode), TypeError,
            "pad(): argument 'pad' (position 2) must be tuple of ints, not int")
    _raises(lambda: F.pad(x, [1, None], mode=mode), TypeError,
            "pad(): argument 'pad' failed to unpack the object at pos 2 with error \"type must "
            "be tuple of ints,but got NoneType\"")
    assert F.pad(x, (np.int64(1), ember.tensor(1), 0, 1), mode=mode).shape == (2, 3, 5, 7)


def test_constant_pad_nd():
    out = ember.constant_pad_nd(ember.ones(2, 3), (1, 1), 2)
    assert out.tolist() == [[2.0, 1.0, 1.0, 1.0, 2.0]] * 2


# -- fold / unfold ---------------------------------------------------------------------------

def test_fold_with_padding_is_contiguous():
    x = _arange((2, 12, 12)).requires_grad_()
    out = F.fold(x, (5, 6), 2, stride=2, padding=1)
    assert out.shape == (2, 3, 5, 6) and out.stride() == (90, 30, 6, 1)


@pytest.mark.parametrize("shape", [(2, 3, 6, 7), (3, 6, 7)])
def test_unfold_gradient_with_padding_is_contiguous(shape):
    x = _arange(shape).requires_grad_()
    out = F.unfold(x, (2, 3), dilation=(1, 2), padding=(2, 0), stride=(3, 2))
    gx, = ember.autograd.grad(out.sum(), x)
    assert gx.is_contiguous() and gx.shape == x.shape


# -- shuffles and one_hot --------------------------------------------------------------------

@pytest.mark.parametrize("call,message", [
    (lambda x: F.pixel_shuffle(x, 2.0),
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not float"),
    (lambda x: F.pixel_unshuffle(x, 2.0),
     "pixel_unshuffle(): argument 'downscale_factor' (position 2) must be int, not float"),
    (lambda x: F.pixel_shuffle(x[0, 0], True),
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not bool"),
    (lambda x: F.channel_shuffle(x, 2.0),
     "channel_shuffle(): argument 'groups' (position 2) must be int, not float"),
    (lambda x: ember.nn.ChannelShuffle(2.0)(x),
     "channel_shuffle(): argument 'groups' (position 2) must be int, not float"),
])
def test_shuffle_factor_must_be_int(call, message):
    _raises(lambda: call(ember.zeros(2, 8, 3, 4)), TypeError, message)


def test_one_hot_checks_in_pytorch_order():
    _raises(lambda: F.one_hot(ember.tensor([0, 2, 1]), -2), RuntimeError,
            "Class values must be smaller than num_classes.")
    _raises(lambda: F.one_hot(ember.tensor([0, -1]), -2), RuntimeError,
            "Class values must be non-negative.")
    _raises(lambda: F.one_hot(ember.zeros(0, 3, dtype=ember.int64), 0), RuntimeError,
            "Can not infer total number of classes from empty tensor.")
    _raises(lambda: F.one_hot(ember.tensor([0, 1]), num_classes=3.0), TypeError,
            "one_hot(): argument 'num_classes' must be int, not float")
    assert F.one_hot(ember.zeros(0, dtype=ember.int64), 3).shape == (0, 3)


def test_one_hot_output_is_contiguous():
    x = ember.arange(6).reshape(2, 3).t()
    out = F.one_hot(x, 6)
    assert out.stride() == (12, 6, 1)
    assert F.one_hot(ember.tensor(2), 4).tolist() == [0, 0, 1, 0]
