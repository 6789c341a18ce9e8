"""ember.vision.models.detection, the R-CNN family: Faster, Mask and Keypoint R-CNN.

Values against torchvision are in tests/parity/vision/test_models_detection_rcnn.py; here:
the box coder, matchers and sampler against NumPy references, the transform (resize, batching,
postprocess) and mask pasting against NumPy references, keypoint heatmaps, small models end to
end (eval outputs, training losses reaching every trainable parameter, images of different
sizes, images without boxes), torchvision's errors, and the builders / weights enums.
"""

import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import detection
from ember.vision.models.detection import _utils as det_utils
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.backbone_utils import (
    BackboneWithFPN,
    _mobilenet_extractor,
    _resnet_fpn_extractor,
    _validate_trainable_layers,
    resnet_fpn_backbone,
)
from ember.vision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from ember.vision.models.detection.image_list import ImageList
from ember.vision.models.detection.keypoint_rcnn import KeypointRCNNHeads, KeypointRCNNPredictor
from ember.vision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from ember.vision.models.detection.roi_heads import (
    heatmaps_to_keypoints,
    keypoints_to_heatmap,
    paste_masks_in_image,
)
from ember.vision.models.detection.transform import GeneralizedRCNNTransform
from ember.vision.ops import FrozenBatchNorm2d, MultiScaleRoIAlign

BUILDERS = {
    "fasterrcnn_resnet50_fpn": "FasterRCNN_ResNet50_FPN_Weights",
    "fasterrcnn_resnet50_fpn_v2": "FasterRCNN_ResNet50_FPN_V2_Weights",
    "fasterrcnn_mobilenet_v3_large_fpn": "FasterRCNN_MobileNet_V3_Large_FPN_Weights",
    "fasterrcnn_mobilenet_v3_large_320_fpn": "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
    "maskrcnn_resnet50_fpn": "MaskRCNN_ResNet50_FPN_Weights",
    "maskrcnn_resnet50_fpn_v2": "MaskRCNN_ResNet50_FPN_V2_Weights",
    "keypointrcnn_resnet50_fpn": "KeypointRCNN_ResNet50_FPN_Weights",
}


def _t(x, dtype=None):
    return ember.tensor(np.asarray(x), dtype=dtype)


# --- NumPy references ------------------------------------------------------------------------


def _np_encode(ref, prop, w):
    pw, ph = prop[:, 2] - prop[:, 0], prop[:, 3] - prop[:, 1]
    px, py = prop[:, 0] + 0.5 * pw, prop[:, 1] + 0.5 * ph
    gw, gh = ref[:, 2] - ref[:, 0], ref[:, 3] - ref[:, 1]
    gx, gy = ref[:, 0] + 0.5 * gw, ref[:, 1] + 0.5 * gh
    return np.stack(
        [
            w[0] * (gx - px) / pw,
            w[1] * (gy - py) / ph,
            w[2] * np.log(gw / pw),
            w[3] * np.log(gh / ph),
        ],
        1,
    )


def _np_matcher(iou, high, low, allow_low_quality):
    matches = iou.argmax(0)
    vals = iou.max(0)
    out = matches.copy()
    out[vals < low] = -1
    out[(vals >= low) & (vals < high)] = -2
    if allow_low_quality:
        best = iou.max(1)
        for g in range(iou.shape[0]):
            for p in np.nonzero(iou[g] == best[g])[0]:
                out[p] = matches[p]
    return out


def _np_bilinear(x, size):
    """``interpolate(mode="bilinear", align_corners=False)`` of a 2-d array."""

    def axis(n_in, n_out):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    h0, h1, lh = axis(x.shape[0], size[0])
    w0, w1, lw = axis(x.shape[1], size[1])
    rows = x[h0] * (1 - lh)[:, None] + x[h1] * lh[:, None]
    return rows[:, w0] * (1 - lw) + rows[:, w1] * lw


def _np_paste(mask, box, im_h, im_w, padding=1):
    m = mask.shape[-1]
    padded = np.pad(mask, padding)
    scale = (m + 2 * padding) / m
    w_half, h_half = (box[2] - box[0]) * 0.5 * scale, (box[3] - box[1]) * 0.5 * scale
    xc, yc = (box[2] + box[0]) * 0.5, (box[3] + box[1]) * 0.5
    b = np.array([xc - w_half, yc - h_half, xc + w_half, yc + h_half], np.float32).astype(np.int64)
    w, h = max(b[2] - b[0] + 1, 1), max(b[3] - b[1] + 1, 1)
    resized = _np_bilinear(padded, (h, w))
    out = np.zeros((im_h, im_w), np.float32)
    x0, x1 = max(b[0], 0), min(b[2] + 1, im_w)
    y0, y1 = max(b[1], 0), min(b[3] + 1, im_h)
    out[y0:y1, x0:x1] = resized[y0 - b[1] : y1 - b[1], x0 - b[0] : x1 - b[0]]
    return out


# --- _utils: box coder, matchers, sampler ----------------------------------------------------


def test_box_coder_encode_decode_against_numpy():
    rng = np.random.RandomState(0)
    xy = rng.uniform(0, 50, (6, 2))
    props = np.concatenate([xy, xy + rng.uniform(5, 40, (6, 2))], 1).astype(np.float32)
    xy = rng.uniform(0, 50, (6, 2))
    gts = np.concatenate([xy, xy + rng.uniform(5, 40, (6, 2))], 1).astype(np.float32)
    weights = (10.0, 10.0, 5.0, 5.0)
    coder = det_utils.BoxCoder(weights)

    codes = coder.encode_single(_t(gts), _t(props))
    np.testing.assert_allclose(codes.numpy(), _np_encode(gts, props, weights), rtol=1e-5, atol=1e-5)
    split = coder.encode([_t(gts[:2]), _t(gts[2:])], [_t(props[:2]), _t(props[2:])])
    assert [tuple(s.shape) for s in split] == [(2, 4), (4, 4)]
    np.testing.assert_allclose(split[1].numpy(), codes.numpy()[2:], rtol=1e-6)

    # decoding the codes gives the ground truth back; two classes of codes per box
    decoded = coder.decode_single(codes, _t(props))
    np.testing.assert_allclose(decoded.numpy(), gts, rtol=1e-4, atol=1e-3)
    both = coder.decode(ember.cat([codes, codes], 1), [_t(props[:2]), _t(props[2:])])
    assert tuple(both.shape) == (6, 2, 4)
    np.testing.assert_allclose(both.numpy()[:, 1], gts, rtol=1e-4, atol=1e-3)


def test_box_coder_clamps_large_sizes_and_checks_its_input():
    coder = det_utils.BoxCoder((1.0, 1.0, 1.0, 1.0))
    box = _t([[0.0, 0.0, 10.0, 10.0]])
    out = coder.decode_single(_t([[0.0, 0.0, 100.0, 100.0]]), box).numpy()
    half = 0.5 * 10 * 1000.0 / 16  # exp(bbox_xform_clip) = 1000 / 16
    np.testing.assert_allclose(out, [[5 - half, 5 - half, 5 + half, 5 + half]], rtol=1e-5)
    with pytest.raises(AssertionError, match="expects boxes of type list or tuple"):
        coder.decode(_t([[0.0, 0, 1, 1]]), box)
    with pytest.raises(AssertionError, match="expects rel_codes of type torch.Tensor"):
        coder.decode([[0.0, 0, 1, 1]], [box])


def test_box_linear_coder_round_trip():
    coder = det_utils.BoxLinearCoder(normalize_by_size=True)
    anchors = _t([[0.0, 0.0, 10.0, 10.0], [10.0, 10.0, 30.0, 30.0]])
    boxes = _t([[1.0, 2.0, 8.0, 9.0], [5.0, 12.0, 35.0, 25.0]])
    codes = coder.encode(anchors, boxes)
    np.testing.assert_allclose(codes.numpy()[0], [0.4, 0.3, 0.3, 0.4], rtol=1e-6)
    np.testing.assert_allclose(coder.decode(codes, anchors).numpy(), boxes.numpy(), rtol=1e-6)


@pytest.mark.parametrize("allow_low_quality", [False, True])
def test_matcher_against_numpy(allow_low_quality):
    rng = np.random.RandomState(1)
    iou = rng.rand(4, 30).astype(np.float32) * 0.9
    iou[2, 7] = iou[2, 11] = iou[2].max() + 0.01  # a tie for ground truth 2's best
    matcher = det_utils.Matcher(0.7, 0.3, allow_low_quality_matches=allow_low_quality)
    got = matcher(_t(iou))
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), _np_matcher(iou, 0.7, 0.3, allow_low_quality))


def test_matcher_errors():
    with pytest.raises(AssertionError, match="low_threshold should be <= high_threshold"):
        det_utils.Matcher(0.3, 0.7)
    matcher = det_utils.Matcher(0.7, 0.3)
    with pytest.raises(ValueError, match="No ground-truth boxes available for one of the images"):
        matcher(ember.zeros((0, 5)))
    with pytest.raises(ValueError, match="No proposal boxes available for one of the images"):
        matcher(ember.zeros((2, 0)))


def test_ssd_matcher_gives_each_ground_truth_its_best_prediction():
    iou = np.array([[0.2, 0.1, 0.6, 0.4], [0.3, 0.2, 0.1, 0.45]], np.float32)
    got = det_utils.SSDMatcher(0.5)(_t(iou)).numpy()
    # prediction 2 matches gt 0 above threshold; gt 1's best prediction (3) is forced to it
    np.testing.assert_array_equal(got, [-1, -1, 0, 1])


def test_balanced_sampler_counts_and_masks():
    ember.manual_seed(0)
    labels = _t([1, 0, 0, -1, 2, 3, 0, 0, 1, 0])
    sampler = det_utils.BalancedPositiveNegativeSampler(
        batch_size_per_image=6, positive_fraction=0.5
    )
    pos, neg = sampler([labels, _t([0, 0, 1])])
    pos0, neg0 = pos[0].numpy(), neg[0].numpy()
    assert pos[0].dtype == ember.uint8
    assert pos0.sum() == 3 and neg0.sum() == 3
    lab = labels.numpy()
    assert (lab[pos0 == 1] >= 1).all() and (lab[neg0 == 1] == 0).all()
    # too few positives: the negatives fill the batch, as far as they go
    np.testing.assert_array_equal(pos[1].numpy(), [0, 0, 1])
    np.testing.assert_array_equal(neg[1].numpy(), [1, 1, 0])


def test_overwrite_eps_and_retrieve_out_channels():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), FrozenBatchNorm2d(4), nn.Conv2d(4, 6, 1))
    det_utils.overwrite_eps(model, 0.0)
    assert model[1].eps == 0.0
    model.train()
    assert det_utils.retrieve_out_channels(model, (20, 16)) == [6]
    assert model.training


# --- the transform -----------------------------------------------------------------------------


def test_transform_resizes_images_boxes_masks_and_keypoints():
    t = GeneralizedRCNNTransform(64, 100, [0.5, 0.4, 0.3], [0.2, 0.25, 0.5], size_divisible=16)
    t.eval()
    rng = np.random.RandomState(0)
    img = rng.rand(3, 40, 50).astype(np.float32)
    masks = np.zeros((1, 40, 50), np.uint8)
    masks[0, 10:20, 5:30] = 1
    target = {
        "boxes": _t([[5.0, 10.0, 30.0, 20.0]]),
        "masks": _t(masks),
        "keypoints": _t([[[10.0, 12.0, 1.0], [20.0, 15.0, 0.0]]]),
    }
    images, targets = t([_t(img)], [target])
    assert target["boxes"].numpy().tolist() == [[5.0, 10.0, 30.0, 20.0]]  # not modified
    # the short side to 64 (the long side 80 <= 100): scale 1.6
    assert images.image_sizes == [(64, 80)]
    assert tuple(images.tensors.shape) == (1, 3, 64, 80)
    np.testing.assert_allclose(targets[0]["boxes"].numpy(), [[8.0, 16.0, 48.0, 32.0]], rtol=1e-6)
    np.testing.assert_allclose(
        targets[0]["keypoints"].numpy(), [[[16.0, 19.2, 1.0], [32.0, 24.0, 0.0]]], rtol=1e-6
    )
    got_masks = targets[0]["masks"].numpy()
    assert got_masks.dtype == np.uint8 and got_masks.shape == (1, 64, 80)
    rows = np.floor(np.arange(64) * 40 / 64).astype(int)
    cols = np.floor(np.arange(80) * 50 / 80).astype(int)
    np.testing.assert_array_equal(got_masks[0], masks[0][rows][:, cols])
    # normalised, then bilinear
    mean, std = np.array([0.5, 0.4, 0.3]), np.array([0.2, 0.25, 0.5])
    normed = (img - mean[:, None, None]) / std[:, None, None]
    expected = np.stack([_np_bilinear(c, (64, 80)) for c in normed])
    np.testing.assert_allclose(images.tensors.numpy()[0], expected, rtol=1e-4, atol=1e-4)


def test_transform_max_size_and_batching():
    t = GeneralizedRCNNTransform(64, 100, [0.0] * 3, [1.0] * 3, size_divisible=32).eval()
    a, b = ember.ones(3, 20, 80), ember.ones(3, 50, 40)
    images, targets = t([a, b])
    assert targets is None
    # a: 64 / 20 would make the long side 256: capped at 100 / 80
    # b: its short side 40 to 64, its long side to 80
    assert images.image_sizes == [(25, 100), (80, 64)]
    batch = images.tensors.numpy()
    assert batch.shape == (2, 3, 96, 128)  # 80 x 100 rounded up to multiples of 32
    assert (batch[0, :, :25, :100] == 1).all() and (batch[0, :, 25:] == 0).all()
    assert (batch[0, :, :, 100:] == 0).all() and (batch[1, :, :, 64:] == 0).all()
    assert (batch[1, :, 80:] == 0).all() and (batch[1, :, :80, :64] == 1).all()
    assert isinstance(images, ImageList)
    # the fixed size (width, height) path
    t = GeneralizedRCNNTransform(64, 100, [0.0] * 3, [1.0] * 3, fixed_size=(30, 20)).eval()
    images, _ = t([a, b])
    assert images.image_sizes == [(20, 30), (20, 30)]
    assert tuple(images.tensors.shape) == (2, 3, 32, 32)


def test_transform_training_draws_a_min_size_and_skip_resize():
    t = GeneralizedRCNNTransform((32, 48), 1000, [0.0] * 3, [1.0] * 3)
    sizes = set()
    for seed in range(8):
        ember.manual_seed(seed)
        images, _ = t([ember.ones(3, 10, 10)], [{"boxes": _t([[1.0, 1, 5, 5]])}])
        sizes.add(images.image_sizes[0])
    assert sizes == {(32, 32), (48, 48)}
    t = GeneralizedRCNNTransform(32, 1000, [0.0] * 3, [1.0] * 3, _skip_resize=True)
    images, _ = t([ember.ones(3, 10, 12)], [{"boxes": _t([[1.0, 1, 5, 5]])}])
    assert images.image_sizes == [(10, 12)]
    assert "Resize(min_size=(32,), max_size=1000, mode='bilinear')" in repr(t)


def test_transform_errors():
    t = GeneralizedRCNNTransform(32, 64, [0.0] * 3, [1.0] * 3).eval()
    with pytest.raises(TypeError, match="Expected input images to be of floating type"):
        t([ember.ones(3, 10, 10, dtype=ember.uint8)])
    with pytest.raises(ValueError, match="images is expected to be a list of 3d tensors"):
        t([ember.ones(1, 3, 10, 10)])


def test_postprocess_rescales_and_pastes_masks():
    t = GeneralizedRCNNTransform(64, 100, [0.0] * 3, [1.0] * 3).eval()
    rng = np.random.RandomState(2)
    masks = rng.rand(2, 1, 6, 6).astype(np.float32)
    result = [
        {
            "boxes": _t([[8.0, 16.0, 48.0, 32.0], [0.0, 0.0, 20.0, 60.0]]),
            "masks": _t(masks),
            "keypoints": _t([[[16.0, 20.0, 1.0]], [[8.0, 4.0, 1.0]]]),
        }
    ]
    out = t.postprocess(result, [(64, 80)], [(40, 50)])[0]
    boxes = out["boxes"].numpy()
    np.testing.assert_allclose(boxes, [[5.0, 10.0, 30.0, 20.0], [0.0, 0.0, 12.5, 37.5]], rtol=1e-6)
    np.testing.assert_allclose(
        out["keypoints"].numpy(), [[[10.0, 12.5, 1.0]], [[5.0, 2.5, 1.0]]], rtol=1e-6
    )
    assert tuple(out["masks"].shape) == (2, 1, 40, 50)
    for i in range(2):
        np.testing.assert_allclose(
            out["masks"].numpy()[i, 0], _np_paste(masks[i, 0], boxes[i], 40, 50), atol=1e-5
        )
    t.train()
    assert t.postprocess(result, [(64, 80)], [(40, 50)]) is result


def test_paste_masks_against_numpy_including_boxes_outside():
    rng = np.random.RandomState(3)
    masks = rng.rand(3, 1, 7, 7).astype(np.float32)
    boxes = np.array([[2.3, 3.1, 20.7, 15.2], [-6.0, -4.0, 10.0, 8.0], [25.0, 18.0, 40.0, 35.0]],
                     np.float32)  # fmt: skip
    got = paste_masks_in_image(_t(masks), _t(boxes), (24, 30)).numpy()
    assert got.shape == (3, 1, 24, 30)
    for i in range(3):
        np.testing.assert_allclose(got[i, 0], _np_paste(masks[i, 0], boxes[i], 24, 30), atol=1e-5)
    empty = paste_masks_in_image(ember.zeros((0, 1, 7, 7)), ember.zeros((0, 4)), (24, 30))
    assert tuple(empty.shape) == (0, 1, 24, 30)


# --- keypoint heatmaps -------------------------------------------------------------------------


def test_keypoints_to_heatmap_against_numpy():
    rois = np.array([[0.0, 0.0, 28.0, 28.0], [10.0, 20.0, 24.0, 34.0]], np.float32)
    kps = np.array(
        [
            [[3.5, 27.9, 1], [28.0, 28.0, 2], [-1.0, 5.0, 1]],
            [[12.0, 21.0, 1], [17.0, 33.0, 0], [23.9, 20.0, 1]],
        ],
        np.float32,
    )
    heatmaps, valid = keypoints_to_heatmap(_t(kps), _t(rois), 14)
    # by hand: floor((x - x0) * 14 / w); the right / bottom edge goes to the last cell
    x = np.floor((kps[..., 0] - rois[:, :1]) * 14 / (rois[:, 2:3] - rois[:, :1])).astype(int)
    y = np.floor((kps[..., 1] - rois[:, 1:2]) * 14 / (rois[:, 3:4] - rois[:, 1:2])).astype(int)
    x[kps[..., 0] == rois[:, 2:3]] = 13
    y[kps[..., 1] == rois[:, 3:4]] = 13
    ok = (x >= 0) & (y >= 0) & (x < 14) & (y < 14) & (kps[..., 2] > 0)
    np.testing.assert_array_equal(valid.numpy(), ok.astype(np.int64))
    np.testing.assert_array_equal(heatmaps.numpy(), (y * 14 + x) * ok)


def test_heatmaps_to_keypoints_finds_the_peaks():
    maps = np.full((1, 2, 8, 8), -5.0, np.float32)
    maps[0, 0, 2, 5] = 10.0
    maps[0, 1, 6, 1] = 10.0
    rois = _t([[10.0, 20.0, 26.0, 36.0]])  # 16 x 16: the maps are resized by 2
    xy, scores = heatmaps_to_keypoints(_t(maps), rois)
    assert tuple(xy.shape) == (1, 2, 3) and tuple(scores.shape) == (1, 2)
    xy = xy.numpy()[0]
    # the peak of cell (2, 5) lands near (2 * 5 + 1, 2 * 2 + 1) in the resized map
    assert abs(xy[0, 0] - (10 + 11)) <= 1.5 and abs(xy[0, 1] - (20 + 5)) <= 1.5
    assert abs(xy[1, 0] - (10 + 3)) <= 1.5 and abs(xy[1, 1] - (20 + 13)) <= 1.5
    np.testing.assert_array_equal(xy[:, 2], [1.0, 1.0])
    assert (scores.numpy() > 5).all()
    xy, scores = heatmaps_to_keypoints(ember.zeros((0, 2, 8, 8)), ember.zeros((0, 4)))
    assert tuple(xy.shape) == (0, 2, 3) and tuple(scores.shape) == (0, 2)


# --- small models end to end ------------------------------------------------------------------


class _TinyBackbone(nn.Module):
    """Two feature maps ("0" at stride 4, "1" at stride 8) of 8 channels."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.out_channels = 8

    def forward(self, x):
        a = ember.relu(self.c1(x))
        return {"0": a, "1": ember.relu(self.c2(a))}


_TINY = {
    "min_size": 64,
    "max_size": 96,
    "rpn_pre_nms_top_n_train": 100,
    "rpn_post_nms_top_n_train": 30,
    "rpn_pre_nms_top_n_test": 100,
    "rpn_post_nms_top_n_test": 30,
    "rpn_batch_size_per_image": 64,
    "box_batch_size_per_image": 32,
    "box_score_thresh": 0.0,
    "box_detections_per_img": 10,
}


def _tiny(kind="faster", num_classes=3, **kwargs):
    ember.manual_seed(0)
    backbone = _TinyBackbone()
    common = {
        "rpn_anchor_generator": AnchorGenerator(((16, 32), (32, 64)), ((0.5, 1.0, 2.0),) * 2),
        "box_roi_pool": MultiScaleRoIAlign(["0", "1"], 5, 2),
        "box_head": TwoMLPHead(8 * 25, 16),
        "box_predictor": FastRCNNPredictor(16, num_classes),
        **_TINY,
        **kwargs,
    }
    if kind == "faster":
        return detection.FasterRCNN(backbone, **common)
    if kind == "mask":
        return detection.MaskRCNN(
            backbone,
            mask_roi_pool=MultiScaleRoIAlign(["0", "1"], 6, 2),
            mask_head=MaskRCNNHeads(8, [8, 8], 1),
            mask_predictor=MaskRCNNPredictor(8, 8, num_classes),
            **common,
        )
    return detection.KeypointRCNN(
        backbone,
        keypoint_roi_pool=MultiScaleRoIAlign(["0", "1"], 6, 2),
        keypoint_head=KeypointRCNNHeads(8, [8, 8]),
        keypoint_predictor=KeypointRCNNPredictor(8, 4),
        **common,
    )


def _images():
    rng = np.random.RandomState(0)
    return [_t(rng.rand(3, 60, 80).astype(np.float32)), _t(rng.rand(3, 72, 56).astype(np.float32))]


def _targets(kind="faster", empty_second=False):
    specs = [([[5.0, 6.0, 40.0, 50.0], [30.0, 10.0, 70.0, 40.0]], [1, 2], (60, 80)),
             ([[10.0, 20.0, 45.0, 60.0]], [2], (72, 56))]  # fmt: skip
    rng = np.random.RandomState(1)
    targets = []
    for i, (boxes, labels, (h, w)) in enumerate(specs):
        if empty_second and i == 1:
            boxes, labels = np.zeros((0, 4), np.float32), []
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
        t = {"boxes": _t(boxes), "labels": _t(np.asarray(labels, np.int64))}
        if kind == "mask":
            masks = np.zeros((len(boxes), h, w), np.uint8)
            for j, (x1, y1, x2, y2) in enumerate(boxes.astype(int)):
                masks[j, y1:y2, x1:x2] = 1
            t["masks"] = _t(masks)
        if kind == "keypoint":
            kps = np.zeros((len(boxes), 4, 3), np.float32)
            kps[..., 0] = rng.uniform(boxes[:, :1], boxes[:, 2:3], (len(boxes), 4))
            kps[..., 1] = rng.uniform(boxes[:, 1:2], boxes[:, 3:4], (len(boxes), 4))
            kps[..., 2] = 1
            t["keypoints"] = _t(kps)
        targets.append(t)
    return targets


LOSS_KEYS = {
    "faster": ["loss_classifier", "loss_box_reg", "loss_objectness", "loss_rpn_box_reg"],
    "mask": ["loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness",
             "loss_rpn_box_reg"],
    "keypoint": ["loss_classifier", "loss_box_reg", "loss_keypoint", "loss_objectness",
                 "loss_rpn_box_reg"],
}  # fmt: skip


@pytest.mark.parametrize("kind", ["faster", "mask", "keypoint"])
def test_training_losses_reach_every_parameter(kind):
    model = _tiny(kind, num_classes=3 if kind != "keypoint" else 3)
    model.train()
    losses = model(_images(), _targets(kind))
    assert list(losses) == LOSS_KEYS[kind]
    for name, value in losses.items():
        assert value.dim() == 0 and math.isfinite(value.item()), name
    assert losses["loss_objectness"].item() > 0 and losses["loss_classifier"].item() > 0
    sum(losses.values()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert float(p.grad.abs().sum().item()) > 0, name


@pytest.mark.parametrize("kind", ["faster", "mask", "keypoint"])
def test_eval_outputs(kind):
    model = _tiny(kind).eval()
    with ember.no_grad():
        out = model(_images())
    assert len(out) == 2
    extra = {"faster": [], "mask": ["masks"], "keypoint": ["keypoints", "keypoints_scores"]}
    keys = ["boxes", "labels", "scores", *extra[kind]]
    for det, (h, w) in zip(out, [(60, 80), (72, 56)]):
        assert list(det) == keys
        n = det["boxes"].shape[0]
        assert 0 < n <= 10
        assert det["labels"].dtype == ember.int64 and tuple(det["labels"].shape) == (n,)
        labels = det["labels"].numpy()
        assert ((labels >= 1) & (labels <= 2)).all()
        scores = det["scores"].numpy()
        assert (np.diff(scores) <= 1e-6).all() or len(set(labels)) > 1
        boxes = det["boxes"].numpy()
        # clipped to the resized image, then scaled back to the original one
        assert (boxes[:, 0::2] >= 0).all() and (boxes[:, 0::2] <= w + 1e-3).all()
        assert (boxes[:, 1::2] >= 0).all() and (boxes[:, 1::2] <= h + 1e-3).all()
        if kind == "mask":
            masks = det["masks"].numpy()
            assert masks.shape == (n, 1, h, w)
            assert (masks >= 0).all() and (masks <= 1).all()
        if kind == "keypoint":
            assert tuple(det["keypoints"].shape) == (n, 4, 3)
            assert tuple(det["keypoints_scores"].shape) == (n, 4)
            np.testing.assert_array_equal(det["keypoints"].numpy()[..., 2], 1.0)


# the regression targets of a background image's anchors encode all-zero boxes (log(0)), as in
# torchvision; they are never used in a loss
@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")
def test_negative_images_train():
    """Images without boxes (shape (0, 4)) are background: their anchors and proposals are
    all negatives. With only negative images the box regression losses are zero."""
    model = _tiny("mask").train()
    losses = model(_images(), _targets("mask", empty_second=True))
    assert all(math.isfinite(v.item()) for v in losses.values())
    empty = [
        {"boxes": ember.zeros((0, 4)), "labels": ember.zeros((0,), dtype=ember.int64),
         "masks": ember.zeros((0, 60, 80), dtype=ember.uint8)},
        {"boxes": ember.zeros((0, 4)), "labels": ember.zeros((0,), dtype=ember.int64),
         "masks": ember.zeros((0, 72, 56), dtype=ember.uint8)},
    ]  # fmt: skip
    losses = model(_images(), empty)
    assert losses["loss_box_reg"].item() == 0.0
    assert losses["loss_rpn_box_reg"].item() == 0.0
    assert losses["loss_mask"].item() == 0.0
    assert losses["loss_classifier"].item() > 0 and losses["loss_objectness"].item() > 0
    sum(losses.values()).backward()


def test_training_step_with_sgd_reduces_the_loss():
    model = _tiny("faster").train()
    # (lr 0.01 overshoots from the seeded initialisation: the loss rises after two steps)
    opt = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.005)
    images, targets = _images(), _targets()
    first = None
    for _ in range(4):
        ember.manual_seed(0)  # the same samples each step
        losses = model(images, targets)
        total = sum(losses.values())
        first = total.item() if first is None else first
        opt.zero_grad()
        total.backward()
        opt.step()
    assert total.item() < first


def test_model_input_errors():
    model = _tiny("faster").train()
    images = _images()
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    bad = [{"boxes": ember.zeros((4,)), "labels": _t([1])}] * 2
    with pytest.raises(
        AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\]"
    ):
        model(images, bad)
    bad = [{"boxes": [[0.0, 0.0, 1.0, 1.0]], "labels": _t([1])}] * 2
    with pytest.raises(AssertionError, match="Expected target boxes to be of type Tensor, got"):
        model(images, bad)
    targets = _targets()
    targets[1]["boxes"] = _t([[10.0, 20.0, 45.0, 60.0], [30.0, 30.0, 30.0, 50.0]])
    targets[1]["labels"] = _t([1, 2])
    with pytest.raises(
        AssertionError,
        match=r"All bounding boxes should have positive height and width. Found invalid box "
        r"\[.*\] for target at index 1.",
    ):
        model(images, targets)
    targets = _targets()
    targets[0]["labels"] = targets[0]["labels"].to(ember.int32)
    with pytest.raises(TypeError, match="target labels must of int64 type, instead got"):
        model(images, targets)
    # the transform's resize turns integer boxes into float ones, as in torchvision: the RoI
    # heads' own check is reached when they are called directly
    targets = _targets()
    targets[0]["boxes"] = targets[0]["boxes"].to(ember.int64)
    with pytest.raises(TypeError, match="target boxes must of float type, instead got"):
        model.roi_heads({}, [], [], targets)
    with pytest.raises(ValueError, match="Every element of targets should have a masks key"):
        _tiny("mask").train()(images, _targets())
    targets = _targets("keypoint")
    targets[0]["keypoints"] = targets[0]["keypoints"].to(ember.float64)
    with pytest.raises(TypeError, match="target keypoints must of float type"):
        _tiny("keypoint").train()(images, targets)


def test_constructor_errors():
    backbone = _TinyBackbone()
    with pytest.raises(ValueError, match="num_classes should be None when box_predictor is"):
        detection.FasterRCNN(backbone, 3, box_predictor=FastRCNNPredictor(16, 3))
    with pytest.raises(ValueError, match="num_classes should not be None when box_predictor is"):
        detection.FasterRCNN(backbone)
    with pytest.raises(ValueError, match="backbone should contain an attribute out_channels"):
        detection.FasterRCNN(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="rpn_anchor_generator should be of type AnchorGenerator"):
        detection.FasterRCNN(backbone, 3, rpn_anchor_generator=nn.Identity())
    with pytest.raises(TypeError, match="box_roi_pool should be of type MultiScaleRoIAlign"):
        detection.FasterRCNN(backbone, 3, box_roi_pool=nn.Identity())
    with pytest.raises(TypeError, match="mask_roi_pool should be of type MultiScaleRoIAlign"):
        detection.MaskRCNN(backbone, 3, mask_roi_pool=nn.Identity())
    with pytest.raises(ValueError, match="num_classes should be None when mask_predictor is"):
        detection.MaskRCNN(backbone, 3, mask_predictor=MaskRCNNPredictor(8, 8, 3))
    with pytest.raises(ValueError, match="num_keypoints should be None when keypoint_predictor"):
        detection.KeypointRCNN(
            backbone, 3, num_keypoints=4, keypoint_predictor=KeypointRCNNPredictor(8, 4)
        )
    with pytest.raises(AssertionError, match="expecting the last two dimensions to be \\[1,1\\]"):
        FastRCNNPredictor(8, 3)(ember.zeros((2, 8, 2, 2)))


# --- backbones ---------------------------------------------------------------------------------


def test_resnet_fpn_backbone_levels_and_frozen_layers():
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=2)
    assert isinstance(backbone, BackboneWithFPN) and backbone.out_channels == 256
    with ember.no_grad():
        out = backbone(ember.rand(1, 3, 64, 64))
    assert [(k, tuple(v.shape)) for k, v in out.items()] == [
        ("0", (1, 256, 16, 16)), ("1", (1, 256, 8, 8)), ("2", (1, 256, 4, 4)),
        ("3", (1, 256, 2, 2)), ("pool", (1, 256, 1, 1)),
    ]  # fmt: skip
    trainable = {n.split(".")[0] for n, p in backbone.body.named_parameters() if p.requires_grad}
    assert trainable == {"layer3", "layer4"}
    with pytest.raises(ValueError, match=r"Trainable layers should be in the range \[0,5\], got 6"):
        _resnet_fpn_extractor(models.resnet18(), 6)
    with pytest.raises(ValueError, match=r"Each returned layer should be in the range \[1,4\]"):
        _resnet_fpn_extractor(models.resnet18(), 3, returned_layers=[0, 1])
    body = _resnet_fpn_extractor(models.resnet18(), 5, returned_layers=[2, 4]).body
    assert body.return_layers == {"layer2": "0", "layer4": "1"}
    assert all(p.requires_grad for p in body.parameters())


def test_mobilenet_extractor():
    fpn = _mobilenet_extractor(models.mobilenet_v3_large(), True, 3)
    assert fpn.out_channels == 256
    assert list(fpn.body.return_layers) == ["13", "16"]
    frozen = {n.split(".")[0] for n, p in fpn.body.named_parameters() if not p.requires_grad}
    assert frozen == {str(i) for i in range(7)}
    plain = _mobilenet_extractor(models.mobilenet_v3_large(), False, 0)
    assert plain.out_channels == 256 and isinstance(plain, nn.Sequential)
    assert not any(p.requires_grad for p in plain[0].parameters())
    with pytest.raises(ValueError, match=r"Trainable layers should be in the range \[0,6\]"):
        _mobilenet_extractor(models.mobilenet_v3_large(), True, 7)


def test_validate_trainable_layers():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _validate_trainable_layers(False, 2, 5, 3) == 5
    assert "falling back to trainable_backbone_layers=5" in str(caught[0].message)
    assert _validate_trainable_layers(True, None, 5, 3) == 3
    with pytest.raises(
        ValueError, match=r"Trainable backbone layers should be in the range \[0,5\]"
    ):
        _validate_trainable_layers(True, 6, 5, 3)


# --- builders, registry, weights -------------------------------------------------------------


def test_registry_and_weights_enums():
    listed = models.list_models(module=detection)
    for builder, enum_name in BUILDERS.items():
        assert builder in listed
        enum = getattr(detection, enum_name)
        assert models.get_model_weights(builder) is enum
        assert enum.DEFAULT is enum.COCO_V1
        assert enum.COCO_V1.url.startswith("https://download.pytorch.org/models/")
        assert enum.COCO_V1.meta["min_size"] == (1, 1)
        assert "box_map" in enum.COCO_V1.meta["_metrics"]["COCO-val2017"]
    coco = detection.FasterRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"]
    assert len(coco) == 91 and coco[0] == "__background__" and coco.count("N/A") == 10
    kp = detection.KeypointRCNN_ResNet50_FPN_Weights
    assert list(kp.__members__) == ["COCO_LEGACY", "COCO_V1", "DEFAULT"]
    assert kp.COCO_V1.meta["categories"] == ["no person", "person"]
    assert len(kp.COCO_V1.meta["keypoint_names"]) == 17
    assert detection.FasterRCNN_ResNet50_FPN_Weights.COCO_V1.meta["num_params"] == 41755286
    preset = detection.MaskRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()
    img = ember.tensor(np.array([[[0, 255]]] * 3, np.uint8))
    np.testing.assert_allclose(preset(img).numpy()[0], [[0.0, 1.0]])


def test_mobilenet_builder_and_its_defaults():
    model = models.get_model(
        "fasterrcnn_mobilenet_v3_large_320_fpn", weights=None, weights_backbone=None, num_classes=4
    )
    assert isinstance(model, detection.FasterRCNN)
    assert model.transform.min_size == (320,) and model.transform.max_size == 640
    assert model.rpn._pre_nms_top_n == {"training": 2000, "testing": 150}
    assert model.rpn.score_thresh == 0.05
    assert model.roi_heads.box_predictor.cls_score.out_features == 4
    assert model.rpn.anchor_generator.num_anchors_per_location() == [15, 15, 15]
    # without pretrained weights every layer trains, with BatchNorm
    assert all(p.requires_grad for p in model.parameters())
    assert not any(isinstance(m, FrozenBatchNorm2d) for m in model.modules())


def test_resnet50_builders_layout():
    """Key layout of the ResNet-50 builders (the values are in the parity tests)."""
    model = detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    keys = list(model.state_dict())
    assert keys[0] == "backbone.body.conv1.weight"
    assert "rpn.head.conv.0.0.weight" in keys
    assert "roi_heads.box_head.fc6.weight" in keys
    assert "roi_heads.mask_head.0.0.weight" in keys
    assert keys[-1] == "roi_heads.mask_predictor.mask_fcn_logits.bias"
    assert tuple(model.state_dict()["roi_heads.box_predictor.bbox_pred.weight"].shape) == (
        364,
        1024,
    )
    kp = detection.keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    assert kp.transform.min_size == (640, 672, 704, 736, 768, 800)
    assert tuple(kp.roi_heads.keypoint_predictor.kps_score_lowres.weight.shape) == (512, 17, 4, 4)


def test_builder_argument_errors(monkeypatch):
    def no_download(self, *args, **kwargs):
        raise AssertionError("no download in tests")

    monkeypatch.setattr(models.WeightsEnum, "get_state_dict", no_download)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 91 but got 5"):
        detection.fasterrcnn_resnet50_fpn(weights="DEFAULT", num_classes=5)
    with pytest.raises(ValueError, match="The parameter 'num_keypoints' expected value 17"):
        detection.keypointrcnn_resnet50_fpn(weights="DEFAULT", num_keypoints=5)
    with pytest.raises(
        ValueError, match=r"Trainable backbone layers should be in the range \[0,6\]"
    ):
        detection.fasterrcnn_mobilenet_v3_large_fpn(
            weights_backbone="DEFAULT", trainable_backbone_layers=7
        )


def test_checkpoint_loading_and_eps_without_download(monkeypatch):
    """A checkpoint loads through the weights enum (stubbed: the state of a model built the
    same way), and the v1 checkpoints set the frozen BN's eps to 0."""
    reference = detection.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None)
    state = {k: v.clone() for k, v in reference.state_dict().items()}
    calls = []

    def fake_get_state_dict(self, *args, **kwargs):
        calls.append(self)
        return state

    monkeypatch.setattr(models.WeightsEnum, "get_state_dict", fake_get_state_dict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = detection.fasterrcnn_mobilenet_v3_large_fpn(pretrained=True)
    assert calls == [detection.FasterRCNN_MobileNet_V3_Large_FPN_Weights.COCO_V1]
    assert any(isinstance(m, FrozenBatchNorm2d) for m in model.modules())
    key = "roi_heads.box_predictor.cls_score.weight"
    np.testing.assert_array_equal(model.state_dict()[key].numpy(), state[key].numpy())
    # trainable_backbone_layers defaults to 3 when pretrained: the blocks before stage C3
    frozen = {n.split(".")[0] for n, p in model.backbone.body.named_parameters()
              if not p.requires_grad}  # fmt: skip
    assert frozen == {str(i) for i in range(7)}
