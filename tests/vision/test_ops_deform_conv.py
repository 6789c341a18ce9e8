"""ember.vision.ops.deform_conv2d / DeformConv2d against a NumPy reference of torchvision's
kernel (bilinear sampling, neighbours outside the image read zero), float64 gradchecks with
respect to every input, and torchvision's checks."""

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.nn import functional as F
from ember.vision import ops
from ember.vision.ops import DeformConv2d, deform_conv2d


def np_bilinear(img, y, x):
    """torchvision's ``bilinear_interpolate``: ``img`` (H, W) at the scalar position (y, x)."""
    h, w = img.shape
    if y <= -1 or h <= y or x <= -1 or w <= x:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    total = 0.0
    for yy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for xx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * img[yy, xx]
    return total


def np_deform_conv2d(x, offset, weight, bias, stride, padding, dilation, mask):
    """The definition, loop by loop."""
    n, c, h, w = x.shape
    o, cw, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    g = offset.shape[1] // (2 * kh * kw)
    wg = c // cw
    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for ch in range(c):
            grp = ch // (c // g)
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for yo in range(oh):
                        for xo in range(ow):
                            dy = offset[b, grp * 2 * kh * kw + 2 * k, yo, xo]
                            dx = offset[b, grp * 2 * kh * kw + 2 * k + 1, yo, xo]
                            y = yo * sh - ph + i * dh + dy
                            xx = xo * sw - pw + j * dw + dx
                            v = np_bilinear(x[b, ch], y, xx)
                            if mask is not None:
                                v *= mask[b, grp * kh * kw + k, yo, xo]
                            wgrp = ch // cw
                            for oc in range(wgrp * (o // wg), (wgrp + 1) * (o // wg)):
                                out[b, oc, yo, xo] += weight[oc, ch % cw, i, j] * v
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def make(rng, n=2, c=4, h=5, w=6, o=4, k=(3, 3), g=2, wg=2, stride=1, pad=1, dil=1,
         use_mask=True, scale=2.0):
    stride, pad, dil = (ember.nn.modules.utils._pair(v) for v in (stride, pad, dil))
    oh = (h + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) // stride[0] + 1
    ow = (w + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) // stride[1] + 1
    x = rng.standard_normal((n, c, h, w))
    offset = rng.standard_normal((n, 2 * g * k[0] * k[1], oh, ow)) * scale
    weight = rng.standard_normal((o, c // wg, *k))
    bias = rng.standard_normal(o)
    mask = rng.random((n, g * k[0] * k[1], oh, ow)) if use_mask else None
    return x, offset, weight, bias, mask, dict(stride=stride, padding=pad, dilation=dil)


CASES = [
    dict(),
    dict(use_mask=False),
    dict(g=1, wg=1, c=3, o=5, k=(3, 2), stride=2, pad=2, dil=2),
    dict(g=4, wg=1, k=(2, 2), pad=0, scale=4.0),
    dict(n=1, c=6, g=3, wg=3, o=3, k=(1, 1), pad=0, scale=6.0),
    dict(stride=(2, 1), pad=(0, 1), dil=(1, 2), scale=0.7),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_matches_numpy_reference(case):
    rng = np.random.default_rng(case)
    x, off, w, b, m, kw = make(rng, **CASES[case])
    want = np_deform_conv2d(x, off, w, b, kw["stride"], kw["padding"], kw["dilation"], m)
    got = deform_conv2d(
        ember.tensor(x), ember.tensor(off), ember.tensor(w), ember.tensor(b),
        mask=None if m is None else ember.tensor(m), **kw,
    )
    assert got.dtype == ember.float64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # float32 in, float32 out
    got32 = deform_conv2d(
        *(ember.tensor(a, dtype=ember.float32) for a in (x, off, w, b)),
        mask=None if m is None else ember.tensor(m, dtype=ember.float32), **kw,
    )
    assert got32.dtype == ember.float32
    np.testing.assert_allclose(got32.numpy(), want, rtol=1e-4, atol=1e-4)


def test_integer_offsets_reach_borders_and_beyond():
    """Offsets that land on pixels exactly, on the last row/column and outside the image."""
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    w = np.ones((1, 1, 1, 1))
    off = np.zeros((1, 2, 3, 4))
    off[0, 0] = [[0, 1, 2, 2.5], [-1, -0.5, 1, 0], [0.25, 0, -3, 0]]
    off[0, 1] = [[0, 0, 3, -0.5], [0, 0, 0.5, 1], [-1, 10, 0, 0.75]]
    want = np_deform_conv2d(x, off, w, None, (1, 1), (0, 0), (1, 1), None)
    got = deform_conv2d(ember.tensor(x), ember.tensor(off), ember.tensor(w))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_zero_offsets_are_a_convolution():
    rng = np.random.default_rng(5)
    x = ember.tensor(rng.standard_normal((2, 6, 7, 9)))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)))
    b = ember.tensor(rng.standard_normal(4))
    off = ember.zeros(2, 2 * 9, 4, 4, dtype=ember.float64)
    got = deform_conv2d(x, off, w, b, stride=2, padding=1, dilation=(1, 2))
    want = F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    # a mask of ones is v1
    ones = ember.ones(2, 9, 4, 4, dtype=ember.float64)
    masked = deform_conv2d(x, off, w, b, stride=2, padding=1, dilation=(1, 2), mask=ones)
    np.testing.assert_allclose(masked.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [0, 1, 2, 5])
def test_gradcheck_all_inputs(case):
    rng = np.random.default_rng(10 + case)
    params = dict(CASES[case], n=1, h=4, w=5)
    x, off, w, b, m, kw = make(rng, **params)
    tensors = [ember.tensor(a, requires_grad=True) for a in (x, off, w, b)]
    if m is not None:
        tensors.append(ember.tensor(m, requires_grad=True))

    def f(*args):
        mask = args[4] if len(args) > 4 else None
        return deform_conv2d(args[0], args[1], args[2], args[3], mask=mask, **kw)

    assert gradcheck(f, tuple(tensors))


def test_gradgradcheck():
    rng = np.random.default_rng(3)
    x, off, w, b, m, kw = make(rng, n=1, c=2, h=3, w=4, o=2, g=1, wg=1, k=(2, 2), pad=0)
    tensors = tuple(ember.tensor(a, requires_grad=True) for a in (x, off, w, m))
    assert gradgradcheck(lambda x, o, w, m: deform_conv2d(x, o, w, mask=m, **kw), tensors)


def test_module_parameters_repr_and_forward():
    ember.manual_seed(0)
    m = DeformConv2d(4, 6, 3, padding=1, groups=2, bias=False)
    assert repr(m) == (
        "DeformConv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2, "
        "bias=False)"
    )
    assert list(m.state_dict()) == ["weight"] and tuple(m.weight.shape) == (6, 2, 3, 3)
    m2 = DeformConv2d(4, 6, (3, 2), stride=2, dilation=2)
    assert repr(m2) == "DeformConv2d(4, 6, kernel_size=(3, 2), stride=(2, 2), dilation=(2, 2))"
    assert list(m2.state_dict()) == ["weight", "bias"]
    bound = 1 / math.sqrt(4 * 3 * 2)
    assert float(m2.bias.abs().max()) <= bound and float(m2.weight.abs().max()) <= bound
    x = ember.randn(1, 4, 5, 5)
    off = ember.randn(1, 18, 5, 5)
    mask = ember.rand(1, 9, 5, 5)
    np.testing.assert_allclose(
        m(x, off, mask).detach().numpy(),
        deform_conv2d(x, off, m.weight, None, padding=1, mask=mask).detach().numpy(),
    )
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        DeformConv2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        DeformConv2d(4, 6, 3, groups=4)


def test_errors():
    x = ember.rand(2, 4, 6, 6)
    w = ember.rand(4, 4, 3, 3)
    off = ember.rand(2, 18, 4, 4)
    with pytest.raises(RuntimeError, match="offset tensor at dimension 1 is not valid"):
        deform_conv2d(x, ember.rand(2, 10, 4, 4), w)
    with pytest.raises(RuntimeError, match="offset.shape.1. is not valid: got: 20 expected: 18"):
        deform_conv2d(x, ember.rand(2, 20, 4, 4), w)
    with pytest.raises(RuntimeError, match="mask.shape.1. is not valid: got: 8 expected: 9"):
        deform_conv2d(x, off, w, mask=ember.rand(2, 8, 4, 4))
    with pytest.raises(RuntimeError, match="invalid batch size of offset"):
        deform_conv2d(x, ember.rand(1, 18, 4, 4), w)
    with pytest.raises(RuntimeError, match="invalid batch size of mask"):
        deform_conv2d(x, off, w, mask=ember.rand(1, 9, 4, 4))
    dims = r"offset output dims: \(5, 4\) - computed output dims: \(4, 4\)"
    with pytest.raises(RuntimeError, match=dims):
        deform_conv2d(x, ember.rand(2, 18, 5, 4), w)
    with pytest.raises(RuntimeError, match=r"mask output dims: \(3, 4\) - computed output dims"):
        deform_conv2d(x, off, w, mask=ember.rand(2, 9, 3, 4))
    with pytest.raises(RuntimeError, match="stride_h: 0 stride_w: 0"):
        deform_conv2d(x, off, w, stride=0)
    with pytest.raises(RuntimeError, match="pad_h: -1 pad_w: -1"):
        deform_conv2d(x, off, w, padding=-1)
    with pytest.raises(RuntimeError, match="dilation_h: 0 dilation_w: 0"):
        deform_conv2d(x, off, w, dilation=0)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        deform_conv2d(x, off.double(), w)
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
        deform_conv2d(x.int(), off.int(), w.int())
    with pytest.raises(RuntimeError, match=r"shape '\[1, 4, 1, 1\]' is invalid for input of"):
        deform_conv2d(x, off, w, bias=ember.rand(5))
    with pytest.raises(ValueError, match="not enough values to unpack"):
        deform_conv2d(x[0], off, w)


def test_exported_like_torchvision():
    assert ops.deform_conv2d is deform_conv2d and ops.DeformConv2d is DeformConv2d
    from ember.vision.ops import deform_conv

    assert deform_conv.__all__ == ["deform_conv2d", "DeformConv2d"]
