"""ember.vision.ops: complete/distance IoU, masks_to_boxes and the GIoU/DIoU/CIoU losses
against NumPy references, with float64 gradchecks."""

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.vision import ops
from ember.vision.ops.boxes import _box_inter_union
from ember.vision.ops.ciou_loss import complete_box_iou_loss
from ember.vision.ops.diou_loss import distance_box_iou_loss
from ember.vision.ops.giou_loss import generalized_box_iou_loss


def random_boxes(n, seed=0, scale=20.0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, scale, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(1, scale / 2, (n, 2))], 1)


def np_pair_terms(a, b):
    """For matched (broadcast) boxes: IoU, enclosing box diagonal^2, centre distance^2,
    enclosing area, union and the CIoU aspect term v."""
    area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])
    wh = np.clip(np.minimum(a[..., 2:], b[..., 2:]) - np.maximum(a[..., :2], b[..., :2]), 0, None)
    inter = wh[..., 0] * wh[..., 1]
    union = area(a) + area(b) - inter
    enc = np.maximum(a[..., 2:], b[..., 2:]) - np.minimum(a[..., :2], b[..., :2])
    diag2 = (enc**2).sum(-1)
    centre = lambda x: (x[..., :2] + x[..., 2:]) / 2
    dist2 = ((centre(a) - centre(b)) ** 2).sum(-1)
    ratio = lambda x: np.arctan((x[..., 2] - x[..., 0]) / (x[..., 3] - x[..., 1]))
    v = 4 / math.pi**2 * (ratio(a) - ratio(b)) ** 2
    return inter, union, diag2, dist2, enc[..., 0] * enc[..., 1], v


def test_distance_and_complete_box_iou_match_numpy():
    a, b = random_boxes(5, 1), random_boxes(4, 2)
    a[0] = b[0]  # identical: DIoU = CIoU = 1
    inter, union, diag2, dist2, _, v = np_pair_terms(a[:, None], b[None])
    iou = inter / union
    diou = iou - dist2 / (diag2 + 1e-7)
    ciou = diou - v / (1 - iou + v + 1e-7) * v
    got_d = ops.distance_box_iou(ember.tensor(a), ember.tensor(b))
    got_c = ops.complete_box_iou(ember.tensor(a), ember.tensor(b))
    assert got_d.shape == (5, 4) and got_c.shape == (5, 4)
    np.testing.assert_allclose(got_d.numpy(), diou, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_c.numpy(), ciou, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_c.numpy()[0, 0], 1.0)
    # batched [..., N, 4]
    batched = ops.distance_box_iou(ember.tensor(np.stack([a, a])), ember.tensor(np.stack([b, b])))
    assert batched.shape == (2, 5, 4)
    np.testing.assert_allclose(batched.numpy()[1], diou, rtol=1e-12)
    # eps given; float16 boxes are computed in float32, int16 in int32 -> float
    np.testing.assert_allclose(
        ops.distance_box_iou(ember.tensor(a), ember.tensor(b), eps=1.0).numpy(),
        iou - dist2 / (diag2 + 1.0), rtol=1e-12)
    assert ops.complete_box_iou(ember.tensor(a, dtype=ember.float16),
                                ember.tensor(b, dtype=ember.float16)).dtype == ember.float32
    ib = ember.tensor([[0, 0, 4, 2], [1, 1, 3, 3]], dtype=ember.int16)
    assert ops.distance_box_iou(ib, ib).dtype == ember.float32


def numeric_grad(f, x, h=1e-6):
    """Central differences of the scalar NumPy function ``f`` at ``x``."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def np_ciou(a, b, alpha=None):
    """Pairwise CIoU; ``alpha`` given: held at that value (torchvision computes it under
    no_grad, so the gradient treats it as a constant)."""
    inter, union, diag2, dist2, _, v = np_pair_terms(a[:, None], b[None])
    iou = inter / union
    if alpha is None:
        alpha = v / (1 - iou + v + 1e-7)
    return iou - dist2 / (diag2 + 1e-7) - alpha * v, alpha


def test_box_iou_gradchecks():
    a = ember.tensor(random_boxes(3, 3), requires_grad=True)
    b = ember.tensor(random_boxes(4, 4), requires_grad=True)
    assert gradcheck(ops.distance_box_iou, (a, b))
    # complete IoU: alpha is a constant of the backward, as in torchvision
    out = ops.complete_box_iou(a, b)
    w = np.random.default_rng(0).standard_normal((3, 4))
    out.backward(ember.tensor(w))
    aa, bb = a.detach().numpy(), b.detach().numpy()
    _, alpha = np_ciou(aa, bb)
    ga = numeric_grad(lambda p: (np_ciou(p, bb, alpha)[0] * w).sum(), aa)
    gb = numeric_grad(lambda q: (np_ciou(aa, q, alpha)[0] * w).sum(), bb)
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-6, atol=1e-9)


def test_box_inter_union_is_importable_from_boxes():
    a, b = random_boxes(3, 7), random_boxes(2, 8)
    inter, union = _box_inter_union(ember.tensor(a), ember.tensor(b))
    want_i, want_u, *_ = np_pair_terms(a[:, None], b[None])
    np.testing.assert_allclose(inter.numpy(), want_i, rtol=1e-12)
    np.testing.assert_allclose(union.numpy(), want_u, rtol=1e-12)


def test_box_iou_format_errors():
    a = ember.tensor(random_boxes(2))
    with pytest.raises(ValueError, match="Unsupported format 'yxyx'. Supported axis-aligned"):
        ops.box_iou(a, a, fmt="yxyx")
    with pytest.raises(NotImplementedError, match="rotated box format 'xywhr'"):
        ops.box_iou(a, a, fmt="xywhr")
    with pytest.raises(ValueError, match="Unsupported Bounding Box area for given format yxyx"):
        _box_inter_union(a, a, fmt="yxyx")


def test_masks_to_boxes():
    rng = np.random.default_rng(0)
    masks = rng.random((5, 9, 7)) > 0.93
    masks[3] = False  # empty -> zeros
    masks[4] = False
    masks[4, 2, 5] = True  # one pixel
    want = np.zeros((5, 4), np.float32)
    for i, m in enumerate(masks):
        ys, xs = np.nonzero(m)
        if ys.size:
            want[i] = [xs.min(), ys.min(), xs.max(), ys.max()]
    for dtype in (ember.bool, ember.uint8, ember.float32):
        got = ops.masks_to_boxes(ember.tensor(masks).to(dtype))
        assert got.dtype == ember.float32 and got.shape == (5, 4)
        np.testing.assert_array_equal(got.numpy(), want)
    empty = ops.masks_to_boxes(ember.zeros(0, 4, 4))
    assert empty.shape == (0, 4) and empty.dtype == ember.float32


LOSSES = [
    ("giou", generalized_box_iou_loss),
    ("diou", distance_box_iou_loss),
    ("ciou", complete_box_iou_loss),
]


def np_loss(kind, a, b, eps=1e-7):
    inter, union, diag2, dist2, enc_area, v = np_pair_terms(a, b)
    iou = inter / (union + eps)
    if kind == "giou":
        return 1 - (iou - (enc_area - union) / (enc_area + eps))
    diou = 1 - iou + dist2 / (diag2 + eps)
    if kind == "diou":
        return diou
    iou0 = inter / (union + 1e-7)  # torchvision's CIoU computes its IoU with the default eps
    diou0 = 1 - iou0 + dist2 / (diag2 + 1e-7)
    return diou0 + v / (1 - iou0 + v + eps) * v


@pytest.mark.parametrize("kind,fn", LOSSES)
def test_box_losses_match_numpy(kind, fn):
    a, b = random_boxes(6, 11), random_boxes(6, 12)
    b[0] = a[0]  # identical: zero loss
    b[1] = a[1] + np.array([100, 100, 100, 100])  # disjoint: the penalty term
    want = np_loss(kind, a, b)
    got = fn(ember.tensor(a), ember.tensor(b))
    assert got.shape == (6,)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)
    assert abs(float(got[0])) < 1e-6 and float(got[1]) > 1
    np.testing.assert_allclose(fn(ember.tensor(a), ember.tensor(b), "mean").item(), want.mean())
    np.testing.assert_allclose(fn(ember.tensor(a), ember.tensor(b), "sum").item(), want.sum())
    np.testing.assert_allclose(fn(ember.tensor(a), ember.tensor(b), eps=0.5).numpy(),
                               np_loss(kind, a, b, 0.5), rtol=1e-10)
    # symmetric, a single box pair, no boxes
    np.testing.assert_allclose(fn(ember.tensor(b), ember.tensor(a)).numpy(), want, rtol=1e-10)
    one = fn(ember.tensor(a[2]), ember.tensor(b[2]))
    assert one.shape == () and np.isclose(one.item(), want[2])
    none = ember.zeros(0, 4, requires_grad=True)
    mean = fn(none, ember.zeros(0, 4), "mean")
    assert mean.item() == 0.0
    mean.backward()
    assert none.grad.shape == (0, 4)
    # integer boxes are computed in float32
    assert fn(ember.tensor(a).int(), ember.tensor(b).int()).dtype == ember.float32
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction': 'max"):
        fn(ember.tensor(a), ember.tensor(b), "max")


@pytest.mark.parametrize("kind,fn", LOSSES)
def test_box_losses_gradcheck(kind, fn):
    a = ember.tensor(random_boxes(4, 21), requires_grad=True)
    b = ember.tensor(random_boxes(4, 22), requires_grad=True)
    b.data[1] = a.data[1] + 0.5  # overlapping pairs and disjoint ones
    if kind != "ciou":
        assert gradcheck(lambda p, q: fn(p, q, "mean"), (a, b))
        assert gradcheck(fn, (a, b))
        return
    # CIoU holds alpha constant (no_grad), as torchvision does
    fn(a, b, "sum").backward()
    aa, bb = a.detach().numpy(), b.detach().numpy()
    inter, union, _, _, _, v = np_pair_terms(aa, bb)
    iou = inter / (union + 1e-7)
    alpha = v / (1 - iou + v + 1e-7)

    def frozen(p, q):
        _, _, diag2, dist2, _, vp = np_pair_terms(p, q)
        i, u, *_ = np_pair_terms(p, q)
        return (1 - i / (u + 1e-7) + dist2 / (diag2 + 1e-7) + alpha * vp).sum()

    np.testing.assert_allclose(a.grad.numpy(), numeric_grad(lambda p: frozen(p, bb), aa),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.grad.numpy(), numeric_grad(lambda q: frozen(aa, q), bb),
                               rtol=1e-6, atol=1e-9)
