"""ember.vision.ops: box utilities, NMS, RoIAlign and the focal loss against NumPy references."""

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.vision import ops


def random_boxes(n, seed=0, scale=50.0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, scale, (n, 2))
    wh = rng.uniform(1, scale / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1)


def np_iou(a, b):
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area(a)[:, None] + area(b)[None] - inter)


def np_nms(boxes, scores, thr):
    order = list(np.argsort(-scores, kind="stable"))
    keep = []
    while order:
        i = order.pop(0)
        keep.append(i)
        order = [j for j in order if np_iou(boxes[i : i + 1], boxes[j : j + 1])[0, 0] <= thr]
    return np.array(keep, dtype=np.int64)


def test_box_convert_round_trips_and_values():
    b = random_boxes(7)
    t = ember.tensor(b)
    xywh = ops.box_convert(t, "xyxy", "xywh").numpy()
    np.testing.assert_allclose(xywh, np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1))
    cxcywh = ops.box_convert(t, "xyxy", "cxcywh").numpy()
    np.testing.assert_allclose(cxcywh[:, :2], (b[:, :2] + b[:, 2:]) / 2)
    for a, c in [("xywh", "cxcywh"), ("cxcywh", "xywh"), ("cxcywh", "xyxy")]:
        there = ops.box_convert(ops.box_convert(t, "xyxy", a), a, c)
        back = ops.box_convert(there, c, "xyxy")
        np.testing.assert_allclose(back.numpy(), b, atol=1e-12)
    same = ops.box_convert(t, "xyxy", "xyxy")
    assert same is not t and np.array_equal(same.numpy(), b)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(t, "xyxy", "yxyx")


def test_box_area_and_iou_match_numpy():
    a, b = random_boxes(5, 1), random_boxes(6, 2)
    area = ops.box_area(ember.tensor(a, dtype=ember.float32))
    assert area.dtype == ember.float32 and area.shape == (5,)
    np.testing.assert_allclose(area.numpy(), (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]), rtol=1e-5)
    iou = ops.box_iou(ember.tensor(a), ember.tensor(b))
    assert iou.shape == (5, 6)
    np.testing.assert_allclose(iou.numpy(), np_iou(a, b), rtol=1e-12)
    giou = ops.generalized_box_iou(ember.tensor(a), ember.tensor(a)).numpy()
    np.testing.assert_allclose(np.diag(giou), 1.0)
    assert (giou >= -1).all() and (giou <= 1).all()
    # integer boxes: area in int64, IoU as float
    ib = ember.tensor([[0, 0, 2, 2], [1, 1, 3, 3]], dtype=ember.int16)
    assert ops.box_area(ib).dtype == ember.int32
    np.testing.assert_allclose(ops.box_iou(ib, ib).numpy()[0, 1], 1 / 7, rtol=1e-6)
    with pytest.raises(ValueError, match="Unsupported Bounding Box area"):
        ops.box_area(ember.tensor(a), fmt="abcd")


def test_clip_and_remove_small_boxes():
    b = ember.tensor([[-5.0, 2.0, 30.0, 8.0], [1.0, -1.0, 2.0, 50.0], [3.0, 3.0, 3.5, 9.0]])
    clipped = ops.clip_boxes_to_image(b, (10, 20)).numpy()
    np.testing.assert_array_equal(clipped, [[0, 2, 20, 8], [1, 0, 2, 10], [3, 3, 3.5, 9]])
    keep = ops.remove_small_boxes(b, 1.0)
    assert keep.dtype == ember.int64 and keep.tolist() == [0, 1]


@pytest.mark.parametrize("thr", [0.3, 0.5, 0.7])
def test_nms_matches_greedy_reference(thr):
    boxes = random_boxes(120, seed=3).astype(np.float32)
    scores = np.random.default_rng(4).random(120).astype(np.float32)
    keep = ops.nms(ember.tensor(boxes), ember.tensor(scores), thr)
    assert keep.dtype == ember.int64
    np.testing.assert_array_equal(keep.numpy(), np_nms(boxes, scores, thr))


def test_nms_blocks_and_edge_cases(monkeypatch):
    from ember.vision.ops import boxes as box_module

    boxes = random_boxes(70, seed=5)
    scores = np.random.default_rng(6).random(70)
    expected = np_nms(boxes, scores, 0.4)
    monkeypatch.setattr(box_module, "_NMS_BLOCK", 8)  # many blocks: cross-block suppression
    np.testing.assert_array_equal(
        ops.nms(ember.tensor(boxes), ember.tensor(scores), 0.4).numpy(), expected
    )
    empty = ops.nms(ember.zeros(0, 4), ember.zeros(0), 0.5)
    assert empty.shape == (0,) and empty.dtype == ember.int64
    with pytest.raises(RuntimeError, match="boxes should have 4 elements in dimension 1"):
        ops.nms(ember.zeros(3, 5), ember.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="same number of elements"):
        ops.nms(ember.zeros(3, 4), ember.zeros(2), 0.5)


def test_batched_nms_is_nms_per_class():
    boxes = random_boxes(60, seed=7)
    scores = np.random.default_rng(8).random(60)
    idxs = np.random.default_rng(9).integers(0, 3, 60)
    keep = ops.batched_nms(
        ember.tensor(boxes), ember.tensor(scores), ember.tensor(idxs), 0.5
    ).numpy()
    expected = np.concatenate(
        [
            np.flatnonzero(idxs == c)[np_nms(boxes[idxs == c], scores[idxs == c], 0.5)]
            for c in range(3)
        ]
    )
    expected = expected[np.argsort(-scores[expected], kind="stable")]
    np.testing.assert_array_equal(keep, expected)
    assert ops.batched_nms(
        ember.zeros(0, 4), ember.zeros(0), ember.zeros(0, dtype=ember.int64), 0.5
    ).shape == (0,)


def roi_align_reference(x, rois, out_hw, scale, sampling_ratio, aligned):
    """A direct per-sample transcription of the RoIAlign definition."""
    n, c, h, w = x.shape
    ph, pw = out_hw
    out = np.zeros((len(rois), c, ph, pw))
    off = 0.5 if aligned else 0.0

    def bilinear(img, y, xx):
        if y < -1.0 or y > h or xx < -1.0 or xx > w:
            return np.zeros(c)
        y, xx = max(y, 0.0), max(xx, 0.0)
        yl, xl = int(y), int(xx)
        if yl >= h - 1:
            yh = yl = h - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= w - 1:
            xh = xl = w - 1
            xx = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, xx - xl
        hy, hx = 1 - ly, 1 - lx
        return (
            hy * hx * img[:, yl, xl]
            + hy * lx * img[:, yl, xh]
            + ly * hx * img[:, yh, xl]
            + ly * lx * img[:, yh, xh]
        )

    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sx, sy, ex, ey = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = ex - sx, ey - sy
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for p in range(ph):
            for q in range(pw):
                acc = np.zeros(c)
                for iy in range(gh):
                    for ix in range(gw):
                        acc += bilinear(
                            x[int(b)],
                            sy + p * bh + (iy + 0.5) * bh / gh,
                            sx + q * bw + (ix + 0.5) * bw / gw,
                        )
                out[k, :, p, q] = acc / count
    return out


ROIS = np.array(
    [
        [0, 1.2, 2.3, 8.7, 9.1],
        [1, -3.0, 0.5, 14.0, 20.0],
        [0, 3.0, 3.0, 3.5, 3.2],
        [1, 0.0, 0.0, 30.0, 30.0],
        [0, 5.0, 5.0, 5.0, 5.0],
    ]
)


@pytest.mark.parametrize("sampling_ratio", [-1, 0, 1, 2])
@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_matches_reference(sampling_ratio, aligned):
    x = np.random.default_rng(0).standard_normal((2, 3, 10, 12))
    out = ops.roi_align(ember.tensor(x), ember.tensor(ROIS), (3, 4), 0.5, sampling_ratio, aligned)
    assert out.shape == (5, 3, 3, 4) and out.dtype == ember.float64
    ref = roi_align_reference(x, ROIS, (3, 4), 0.5, sampling_ratio, aligned)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


def test_roi_align_list_of_boxes_float32_and_module():
    x = ember.randn(2, 4, 9, 9)
    per_image = [ember.tensor(ROIS[ROIS[:, 0] == i, 1:], dtype=ember.float32) for i in range(2)]
    rois = ember.cat(
        [ember.cat([ember.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(per_image)]
    )
    a = ops.roi_align(x, per_image, 2, 1.0, 2)
    b = ops.roi_align(x, rois, (2, 2), 1.0, 2)
    assert a.dtype == ember.float32 and a.shape == (5, 4, 2, 2)
    np.testing.assert_allclose(a.numpy(), b.numpy())
    module = ops.RoIAlign((2, 2), 1.0, 2)
    np.testing.assert_allclose(module(x, rois).numpy(), b.numpy())
    assert "RoIAlign(output_size=(2, 2)" in repr(module)
    with pytest.raises(AssertionError, match="Tensor\\[K, 5\\]"):
        ops.roi_align(x, ember.zeros(3, 4), 2)


@pytest.mark.parametrize("sampling_ratio,aligned", [(-1, False), (2, True)])
def test_roi_align_gradcheck(sampling_ratio, aligned):
    x = ember.randn(2, 2, 6, 7, dtype=ember.float64, requires_grad=True)
    rois = ember.tensor(
        [[0, 0.5, 1.0, 4.5, 5.2], [1, 2.0, 0.3, 6.9, 3.1], [1, -1.0, -1.0, 3.0, 8.0]],
        dtype=ember.float64,
    )

    def f(inp):
        return ops.roi_align(inp, rois, (2, 3), 1.0, sampling_ratio, aligned)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    out = f(x)
    assert out.grad_fn.__class__.__name__ == "RoiAlignBackward0"


def test_roi_align_blocks_agree(monkeypatch):
    import importlib

    module = importlib.import_module("ember.vision.ops.roi_align")
    x = ember.randn(2, 3, 10, 12, dtype=ember.float64, requires_grad=True)
    rois = ember.tensor(ROIS)
    whole = ops.roi_align(x, rois, 3, 0.5, -1)
    (g_whole,) = ember.autograd.grad(whole.sum(), x)
    monkeypatch.setattr(module, "_BLOCK_ELEMENTS", 1)  # one roi per block
    parts = ops.roi_align(x, rois, 3, 0.5, -1)
    (g_parts,) = ember.autograd.grad(parts.sum(), x)
    np.testing.assert_allclose(parts.detach().numpy(), whole.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(g_parts.numpy(), g_whole.numpy(), atol=1e-12)


def np_focal(x, t, alpha, gamma):
    p = 1 / (1 + np.exp(-x))
    ce = np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * t + (1 - alpha) * (1 - t)) * loss
    return loss


@pytest.mark.parametrize("alpha,gamma", [(0.25, 2), (-1, 0.5), (0.9, 0)])
def test_sigmoid_focal_loss(alpha, gamma):
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((4, 5)) * 3, (rng.random((4, 5)) > 0.6).astype(np.float64)
    ref = np_focal(x, t, alpha, gamma)
    out = ops.sigmoid_focal_loss(ember.tensor(x), ember.tensor(t), alpha, gamma)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(
        ops.sigmoid_focal_loss(ember.tensor(x), ember.tensor(t), alpha, gamma, "mean").item(),
        ref.mean(),
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        ops.sigmoid_focal_loss(ember.tensor(x), ember.tensor(t), alpha, gamma, "sum").item(),
        ref.sum(),
        rtol=1e-10,
    )
    xs = ember.tensor(x, requires_grad=True)
    assert gradcheck(
        lambda v: ops.sigmoid_focal_loss(v, ember.tensor(t), alpha, gamma, "sum"), (xs,)
    )


def test_sigmoid_focal_loss_errors():
    x = ember.zeros(3)
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
        ops.sigmoid_focal_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="Invalid alpha value"):
        ops.sigmoid_focal_loss(x, x, alpha=2.0)
