"""roi_pool, ps_roi_pool and ps_roi_align (ember.vision.ops) against NumPy loop references:
values, gradients, modules, errors, devices."""

import importlib
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import register_test_device
from ember.vision import ops

ROIS = np.array(
    [
        [0, 1.2, 2.3, 8.7, 9.1],
        [1, -3.0, 0.5, 14.0, 20.0],
        [0, 3.0, 3.0, 3.5, 3.2],
        [1, 0.0, 0.0, 30.0, 30.0],
        [0, 5.0, 5.0, 5.0, 5.0],
        [1, 2.5, 1.5, 6.5, 7.5],  # halves: C rounds them away from zero
        [0, 9.0, 9.0, 4.0, 3.0],  # inverted
    ]
)


def c_round(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def quantized_bins(roi, scale, out_hw, hw, extent, last):
    """torchvision's integer bins: [(hs, he, ws, we)] per (i, j)."""
    x1, y1, x2, y2 = (c_round(v * scale) for v in roi[1:])
    rw, rh = max(x2 - x1 + extent, 1), max(y2 - y1 + extent, 1)
    bh, bw = rh / out_hw[0], rw / out_hw[1]
    h, w = hw

    def clip(v, size):
        return min(max(v, 0), size - last)

    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            hs, he = clip(math.floor(i * bh) + y1, h), clip(math.ceil((i + 1) * bh) + y1, h)
            ws, we = clip(math.floor(j * bw) + x1, w), clip(math.ceil((j + 1) * bw) + x1, w)
            yield i, j, hs, he, ws, we


def roi_pool_reference(x, rois, out_hw, scale):
    out = np.zeros((len(rois), x.shape[1], *out_hw))
    for k, roi in enumerate(rois):
        img = x[int(roi[0])]
        for i, j, hs, he, ws, we in quantized_bins(roi, scale, out_hw, x.shape[2:], 1, 0):
            if he > hs and we > ws:
                out[k, :, i, j] = img[:, hs:he, ws:we].max(axis=(1, 2))
    return out


def ps_roi_pool_reference(x, rois, out_hw, scale):
    ph, pw = out_hw
    co = x.shape[1] // (ph * pw)
    out = np.zeros((len(rois), co, ph, pw))
    for k, roi in enumerate(rois):
        img = x[int(roi[0])]
        for i, j, hs, he, ws, we in quantized_bins(roi, scale, out_hw, x.shape[2:], 0, 1):
            if he > hs and we > ws:
                chans = [(c * ph + i) * pw + j for c in range(co)]
                out[k, :, i, j] = img[chans, hs:he, ws:we].mean(axis=(1, 2))
    return out


def bilinear(img, y, x):
    h, w = img.shape[-2:]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(img.shape[0])
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    yh, xh = yl + 1, xl + 1
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    ly, lx = y - yl, x - xl
    return (
        (1 - ly) * (1 - lx) * img[:, yl, xl]
        + (1 - ly) * lx * img[:, yl, xh]
        + ly * (1 - lx) * img[:, yh, xl]
        + ly * lx * img[:, yh, xh]
    )


def ps_roi_align_reference(x, rois, out_hw, scale, sampling_ratio):
    ph, pw = out_hw
    co = x.shape[1] // (ph * pw)
    out = np.zeros((len(rois), co, ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sx, sy = x1 * scale - 0.5, y1 * scale - 0.5
        rw, rh = x2 * scale - 0.5 - sx, y2 * scale - 0.5 - sy
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                chans = [(c * ph + i) * pw + j for c in range(co)]
                img = x[int(b)][chans]
                acc = np.zeros(co)
                for iy in range(max(gh, 0)):
                    for ix in range(max(gw, 0)):
                        y = sy + i * bh + (iy + 0.5) * bh / gh
                        acc += bilinear(img, y, sx + j * bw + (ix + 0.5) * bw / gw)
                with np.errstate(invalid="ignore"):
                    out[k, :, i, j] = acc / (gh * gw)
    return out


@pytest.mark.parametrize(
    "out_hw,scale", [((3, 4), 0.5), ((2, 2), 1.0), ((1, 5), 0.25), ((1, 1), 1.0)]
)
def test_roi_pool_matches_reference(out_hw, scale):
    # (1, 1) at scale 1: bins of up to 120 pixels, scanned in chunks of slots
    x = np.random.default_rng(0).standard_normal((2, 3, 10, 12))
    out = ops.roi_pool(ember.tensor(x), ember.tensor(ROIS), out_hw, scale)
    assert out.shape == (len(ROIS), 3, *out_hw) and out.dtype == ember.float64
    np.testing.assert_array_equal(out.numpy(), roi_pool_reference(x, ROIS, out_hw, scale))


@pytest.mark.parametrize("out_hw,scale", [((3, 2), 0.5), ((2, 2), 1.0)])
def test_ps_roi_pool_matches_reference(out_hw, scale):
    x = np.random.default_rng(1).standard_normal((2, 2 * out_hw[0] * out_hw[1], 10, 12))
    out = ops.ps_roi_pool(ember.tensor(x), ember.tensor(ROIS), out_hw, scale)
    assert out.shape == (len(ROIS), 2, *out_hw)
    np.testing.assert_allclose(
        out.numpy(), ps_roi_pool_reference(x, ROIS, out_hw, scale), atol=1e-12
    )


@pytest.mark.parametrize("sampling_ratio", [-1, 0, 1, 2])
@pytest.mark.parametrize("out_hw,scale", [((3, 2), 0.5), ((2, 2), 1.0)])
def test_ps_roi_align_matches_reference(sampling_ratio, out_hw, scale):
    x = np.random.default_rng(2).standard_normal((2, 3 * out_hw[0] * out_hw[1], 10, 12))
    out = ops.ps_roi_align(ember.tensor(x), ember.tensor(ROIS), out_hw, scale, sampling_ratio)
    assert out.shape == (len(ROIS), 3, *out_hw) and out.dtype == ember.float64
    ref = ps_roi_align_reference(x, ROIS, out_hw, scale, sampling_ratio)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12, equal_nan=True)
    # the empty roi [5, 5, 5, 5] has no samples: 0 / 0, as torchvision's kernel
    assert np.isnan(out.numpy()[4]).all() == (sampling_ratio <= 0)


def test_roi_pool_empty_bins_are_zero_and_ties_pick_first():
    x = ember.ones(1, 1, 4, 4)
    out = ops.roi_pool(x, ember.tensor([[0, 3.0, 3.0, 9.0, 9.0]]), 2)
    np.testing.assert_array_equal(out.numpy()[0, 0], [[1, 0], [0, 0]])
    x = ember.ones(1, 1, 4, 4, dtype=ember.float64, requires_grad=True)
    rois = ember.tensor([[0, 0.0, 0.0, 3.0, 3.0]], dtype=ember.float64)
    ops.roi_pool(x, rois, 1).sum().backward()
    expected = np.zeros((4, 4))
    expected[0, 0] = 1  # the first maximum in row-major order takes the gradient
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def distinct_input(shape, seed):
    """Well separated values: argmaxes stay put under gradcheck's perturbation."""
    rng = np.random.default_rng(seed)
    v = rng.permutation(int(np.prod(shape))).astype(np.float64) * 0.1
    return ember.tensor(v.reshape(shape), requires_grad=True)


GRAD_ROIS = ember.tensor(
    [[0, 0.5, 1.0, 4.5, 5.2], [1, 2.0, 0.3, 6.9, 3.1], [1, -1.0, -1.0, 3.0, 8.0],
     [0, 1.0, 1.0, 3.0, 3.0]],
    dtype=ember.float64,
)


def test_roi_pool_gradcheck_and_node():
    x = distinct_input((2, 2, 9, 8), 3)

    def f(inp):
        return ops.roi_pool(inp, GRAD_ROIS, (2, 3), 1.0)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert f(x).grad_fn.__class__.__name__ == "RoiPoolBackward0"


def test_roi_pool_gradient_goes_to_argmax():
    x = np.random.default_rng(4).standard_normal((2, 3, 10, 12))
    ex = ember.tensor(x, requires_grad=True)
    out = ops.roi_pool(ex, ember.tensor(ROIS), (3, 4), 0.5)
    g = np.random.default_rng(5).standard_normal(out.shape)
    out.backward(ember.tensor(g))
    ref = np.zeros_like(x)
    for k, roi in enumerate(ROIS):
        img = x[int(roi[0])]
        for i, j, hs, he, ws, we in quantized_bins(roi, 0.5, (3, 4), (10, 12), 1, 0):
            if he > hs and we > ws:
                for c in range(3):
                    a, b = np.unravel_index(np.argmax(img[c, hs:he, ws:we]), (he - hs, we - ws))
                    ref[int(roi[0]), c, hs + a, ws + b] += g[k, c, i, j]
    np.testing.assert_allclose(ex.grad.numpy(), ref, atol=1e-12)


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_ps_roi_align_gradcheck(sampling_ratio):
    x = ember.randn(2, 8, 6, 7, dtype=ember.float64, requires_grad=True)

    def f(inp):
        return ops.ps_roi_align(inp, GRAD_ROIS, 2, 1.0, sampling_ratio)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert f(x).grad_fn.__class__.__name__ == "PsRoiAlignBackward0"


def test_ps_roi_pool_gradcheck():
    # rois whose bins stay off the last row and column, where the forward is exactly
    # differentiated (torchvision's backward spreads border bins one pixel further)
    x = ember.randn(2, 12, 9, 8, dtype=ember.float64, requires_grad=True)

    def f(inp):
        return ops.ps_roi_pool(inp, GRAD_ROIS, (2, 3), 1.0)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    assert f(x).grad_fn.__class__.__name__ == "PsRoiPoolBackward0"


def test_ps_roi_pool_border_gradient_is_torchvisions():
    x = ember.ones(1, 1, 4, 4, dtype=ember.float64, requires_grad=True)
    out = ops.ps_roi_pool(x, ember.tensor([[0, 2.0, 2.0, 9.0, 9.0]], dtype=ember.float64), 1)
    np.testing.assert_array_equal(out.detach().numpy(), [[[[1.0]]]])  # reads [2, 3) x [2, 3)
    out.backward()
    expected = np.zeros((4, 4))
    expected[2:, 2:] = 0.25  # the backward spreads over [2, 4) x [2, 4)
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def test_blocks_agree(monkeypatch):
    module = importlib.import_module("ember.vision.ops.roi_align")
    x = ember.randn(2, 12, 10, 12, dtype=ember.float64, requires_grad=True)
    rois = ember.tensor(ROIS)
    fns = [
        lambda: ops.roi_pool(x, rois, (2, 3), 0.5),
        lambda: ops.ps_roi_pool(x, rois, (2, 3), 0.5),
        lambda: ops.ps_roi_align(x, rois, (2, 3), 0.5, -1),
    ]
    whole = [f() for f in fns]
    grads = [ember.autograd.grad(o.nan_to_num().sum(), x)[0] for o in whole]
    monkeypatch.setattr(module, "_BLOCK_ELEMENTS", 1)  # one roi per block
    for f, w, g in zip(fns, whole, grads):
        part = f()
        (gp,) = ember.autograd.grad(part.nan_to_num().sum(), x)
        np.testing.assert_allclose(part.detach().numpy(), w.detach().numpy(), equal_nan=True)
        np.testing.assert_allclose(gp.numpy(), g.numpy(), atol=1e-12)


def test_list_of_boxes_float32_modules_and_repr():
    x = ember.randn(2, 8, 9, 9)
    per_image = [ember.tensor(ROIS[ROIS[:, 0] == i, 1:], dtype=ember.float32) for i in range(2)]
    order = np.argsort(ROIS[:, 0], kind="stable")
    rois = ember.tensor(ROIS[order], dtype=ember.float32)
    cases = [
        (ops.roi_pool, ops.RoIPool((2, 2), 0.5), (2, 0.5)),
        (ops.ps_roi_pool, ops.PSRoIPool(2, 0.5), (2, 0.5)),
        (ops.ps_roi_align, ops.PSRoIAlign(2, 0.5, 2), (2, 0.5, 2)),
    ]
    for fn, module, args in cases:
        a, b = fn(x, per_image, *args), fn(x, rois, *args)
        assert a.dtype == ember.float32
        np.testing.assert_allclose(a.numpy(), b.numpy(), equal_nan=True)
        np.testing.assert_allclose(module(x, rois).numpy(), b.numpy(), equal_nan=True)
    assert repr(ops.RoIPool((2, 2), 0.5)) == "RoIPool(output_size=(2, 2), spatial_scale=0.5)"
    assert repr(ops.PSRoIPool(7, 1.0)) == "PSRoIPool(output_size=7, spatial_scale=1.0)"
    assert (
        repr(ops.PSRoIAlign(7, 0.25, 2))
        == "PSRoIAlign(output_size=7, spatial_scale=0.25, sampling_ratio=2)"
    )


def test_errors():
    x = ember.randn(1, 8, 6, 6)
    rois = ember.tensor([[0, 0, 0, 3, 3.0]])
    for fn in (ops.ps_roi_align, ops.ps_roi_pool):
        with pytest.raises(RuntimeError, match="input channels must be a multiple of pooling"):
            fn(x, rois, 3)
    for fn in (ops.roi_pool, ops.roi_align, ops.ps_roi_pool, ops.ps_roi_align):
        with pytest.raises(RuntimeError, match="input should have the same type as rois"):
            fn(x, rois.double(), 2)
    with pytest.raises(RuntimeError, match="Dimension out of range"):
        ops.roi_pool(x[0], rois, 3)
    with pytest.raises(AssertionError, match="Tensor\\[K, 5\\]"):
        ops.roi_pool(x, ember.zeros(3, 4), 2)
    with pytest.raises(AssertionError, match="List\\[Tensor\\[L, 4\\]\\]"):
        ops.ps_roi_pool(x, [ember.zeros(3, 5)], 2)


def test_device_kept_and_mixing_raises():
    register_test_device("testdev")
    x = ember.randn(1, 4, 6, 6, requires_grad=True)
    rois = ember.tensor([[0, 0.5, 0.5, 4.0, 5.0]])
    xd, rd = x.detach().to("testdev").requires_grad_(), rois.to("testdev")
    for fn in (ops.roi_pool, ops.ps_roi_pool, ops.ps_roi_align):
        ref = fn(x, rois, 2)
        out = fn(xd, rd, 2)
        assert out.device == xd.device
        # float32 sums: under a cuda run ``ref`` is the GPU's, a few ulps from NumPy's
        np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-6)
        (g,) = ember.autograd.grad(out.sum(), xd)
        (gr,) = ember.autograd.grad(ref.sum(), x)
        assert g.device == xd.device
        np.testing.assert_allclose(g.cpu().numpy(), gr.numpy(), rtol=1e-6)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn(xd, rois, 2)


def test_empty_rois():
    x = ember.randn(1, 4, 6, 6, requires_grad=True)
    for fn in (ops.roi_pool, ops.ps_roi_pool, ops.ps_roi_align):
        out = fn(x, ember.zeros(0, 5), 2)
        assert out.shape == (0, 4 if fn is ops.roi_pool else 1, 2, 2)
        (g,) = ember.autograd.grad(out.sum(), x)
        assert g.shape == x.shape and not g.numpy().any()
