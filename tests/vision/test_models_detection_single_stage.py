"""ember.vision.models.detection: the single-stage detectors (RetinaNet, FCOS, SSD, SSDlite)
and the anchor generators.

Values against torchvision are in tests/parity/vision/test_models_detection_single_stage.py;
here: the anchors against NumPy references, SSD's loss (hard negative mining) against a NumPy
reference, training steps (loss keys, gradients reaching every trainable parameter, images
without boxes, images of different sizes), eval outputs, torchvision's input errors, the
registry and weights enums, and checkpoint loading without a download. Images are small.
"""

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import detection
from ember.vision.models.detection import anchor_utils, retinanet, ssd
from ember.vision.models.detection.image_list import ImageList
from ember.vision.ops import FrozenBatchNorm2d

SMALL = {"min_size": 64, "max_size": 96, "num_classes": 4}


def _targets(*boxes_per_image):
    out = []
    for boxes in boxes_per_image:
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
        labels = np.arange(len(boxes)) % 2 + 1
        out.append({"boxes": ember.tensor(boxes), "labels": ember.tensor(labels)})
    return out


def _images(*shapes, seed=0):
    rng = np.random.RandomState(seed)
    return [ember.tensor(rng.uniform(0, 1, s).astype(np.float32)) for s in shapes]


_MODELS = {}


def _model(name, **kwargs):
    """Each small model is built once (the slow part is ResNet-50's initialisation)."""
    key = (name, tuple(sorted(kwargs.items())))
    if key not in _MODELS:
        ember.manual_seed(0)
        _MODELS[key] = models.get_model(name, weights=None, weights_backbone=None, **kwargs)
    return _MODELS[key]


# --- anchors against NumPy ---------------------------------------------------------------------


def _np_anchors(sizes, ratios, grid, stride):
    scales = np.asarray(sizes, np.float32)
    h_ratios = np.sqrt(np.asarray(ratios, np.float32))
    w_ratios = np.float32(1) / h_ratios
    ws = (w_ratios[:, None] * scales[None, :]).ravel()
    hs = (h_ratios[:, None] * scales[None, :]).ravel()
    base = np.round(np.stack([-ws, -hs, ws, hs], 1) / np.float32(2))
    ys, xs = np.meshgrid(np.arange(grid[0]) * stride[0], np.arange(grid[1]) * stride[1],
                         indexing="ij")  # fmt: skip
    shifts = np.stack([xs.ravel(), ys.ravel(), xs.ravel(), ys.ravel()], 1).astype(np.float32)
    return (shifts[:, None, :] + base[None]).reshape(-1, 4)


def test_anchor_generator_matches_numpy():
    sizes = ((16, 20), (32,), (64, 80, 101))
    ratios = ((0.5, 1.0, 2.0), (1.0,), (0.7, 1.3))
    gen = anchor_utils.AnchorGenerator(sizes, ratios)
    assert gen.num_anchors_per_location() == [6, 1, 6]
    assert list(gen.state_dict()) == []
    grids = [(13, 17), (7, 9), (4, 5)]
    images = ImageList(ember.zeros(2, 3, 100, 130), [(100, 130), (90, 120)])
    anchors = gen(images, [ember.zeros(2, 4, *g) for g in grids])
    expected = np.concatenate([
        _np_anchors(s, r, g, (100 // g[0], 130 // g[1])) for s, r, g in zip(sizes, ratios, grids)
    ])  # fmt: skip
    assert len(anchors) == 2
    for a in anchors:
        assert a.dtype == ember.float32 and a.device == ember.get_default_device()
        np.testing.assert_array_equal(a.numpy(), expected)
    # a flat tuple of sizes means one size per feature map
    flat = anchor_utils.AnchorGenerator((8, 16), (1.0,))
    assert flat.sizes == ((8,), (16,)) and flat.aspect_ratios == ((1.0,), (1.0,))
    with pytest.raises(ValueError, match="There needs to be a match"):
        flat(images, [ember.zeros(2, 4, 5, 5)])


def _np_default_boxes(aspect_ratios, scales, steps, grids, size, clip=True):
    out = []
    for k, (fh, fw) in enumerate(grids):
        s_k, s_next = scales[k], scales[k + 1]
        wh = [[s_k, s_k], [math.sqrt(s_k * s_next)] * 2]
        for ar in aspect_ratios[k]:
            w, h = s_k * math.sqrt(ar), s_k / math.sqrt(ar)
            wh += [[w, h], [h, w]]
        wh = np.asarray(wh)
        if clip:
            wh = wh.clip(0, 1)
        fx, fy = (size[1] / steps[k], size[0] / steps[k]) if steps else (fw, fh)
        cy, cx = np.meshgrid((np.arange(fh) + 0.5) / fy, (np.arange(fw) + 0.5) / fx, indexing="ij")
        centers = np.repeat(np.stack([cx.ravel(), cy.ravel()], 1), len(wh), axis=0)
        out.append(np.concatenate([centers, np.tile(wh, (fh * fw, 1))], 1))
    boxes = np.concatenate(out)
    scale = np.array([size[1], size[0]] * 2)
    xyxy = np.concatenate([boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], 1)
    return xyxy * scale


@pytest.mark.parametrize("steps", [None, [8, 16, 30]])
def test_default_box_generator_matches_numpy(steps):
    ratios = [[2], [2, 3], [3]]
    gen = anchor_utils.DefaultBoxGenerator(ratios, min_ratio=0.2, max_ratio=0.9, steps=steps)
    assert gen.scales == pytest.approx([0.2, 0.55, 0.9, 1.0])
    assert gen.num_anchors_per_location() == [4, 6, 4]
    grids = [(12, 10), (6, 5), (3, 3)]
    images = ImageList(ember.zeros(1, 3, 96, 80), [(96, 80)])
    boxes = gen(images, [ember.zeros(1, 2, *g) for g in grids])
    expected = _np_default_boxes(ratios, gen.scales, steps, grids, (96, 80))
    assert len(boxes) == 1 and boxes[0].dtype == ember.float32
    np.testing.assert_allclose(boxes[0].numpy(), expected, rtol=1e-5, atol=1e-4)
    one = anchor_utils.DefaultBoxGenerator([[2]])
    assert one.scales == [0.15, 0.9]
    with pytest.raises(ValueError, match="aspect_ratios and steps should have the same length"):
        anchor_utils.DefaultBoxGenerator([[2], [3]], steps=[8])


# --- training and inference --------------------------------------------------------------------


def _train_step(model, images, targets):
    model.train()
    model.zero_grad()
    losses = model(images, targets)
    sum(losses.values()).backward()
    return losses


def _assert_all_trainable_have_grads(model):
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, missing[:5]


def _assert_detections(model, images):
    model.eval()
    with ember.no_grad():
        out = model(images)
    assert isinstance(out, list) and len(out) == len(images)
    for det, img in zip(out, images):
        assert sorted(det) == ["boxes", "labels", "scores"]
        n = det["scores"].shape[0]
        assert det["boxes"].shape == (n, 4) and det["labels"].shape == (n,)
        assert det["labels"].dtype == ember.int64
        boxes = det["boxes"].numpy()
        h, w = img.shape[-2:]
        assert (boxes >= 0).all() and (boxes[:, 0::2] <= w).all() and (boxes[:, 1::2] <= h).all()
        scores = det["scores"].numpy()
        assert (np.diff(scores) <= 1e-6).all()  # decreasing
    return out


@pytest.mark.parametrize(
    "name,keys",
    [
        ("retinanet_resnet50_fpn", ["classification", "bbox_regression"]),
        ("retinanet_resnet50_fpn_v2", ["classification", "bbox_regression"]),
        ("fcos_resnet50_fpn", ["classification", "bbox_regression", "bbox_ctrness"]),
    ],
)
def test_fpn_detectors_train_and_eval(name, keys):
    model = _model(name, score_thresh=0.0, detections_per_img=20, **SMALL)
    images = _images((3, 64, 80), (3, 48, 64))  # different sizes in one batch
    targets = _targets([[4, 6, 40, 50], [20, 10, 60, 30]], [])  # the second image has no box
    losses = _train_step(model, images, targets)
    assert list(losses) == keys
    for key, value in losses.items():
        assert value.dim() == 0 and np.isfinite(value.item()) and value.item() > 0, key
    _assert_all_trainable_have_grads(model)

    # only images without boxes: everything is background, the box losses are zero
    losses = _train_step(model, images[:1], _targets([]))
    assert losses["classification"].item() > 0
    for key in keys[1:]:
        assert losses[key].item() == 0.0

    out = _assert_detections(model, images)
    assert out[0]["scores"].shape[0] == 20


def test_ssdlite_train_and_eval():
    model = _model("ssdlite320_mobilenet_v3_large", num_classes=3, detections_per_img=15)
    images = _images((3, 96, 80), (3, 64, 64))
    targets = _targets([[4, 6, 40, 50], [20, 10, 60, 30]], [])
    losses = _train_step(model, images, targets)
    assert list(losses) == ["bbox_regression", "classification"]
    assert all(v.item() > 0 for v in losses.values())
    _assert_all_trainable_have_grads(model)
    out = _assert_detections(model, images)
    assert out[0]["scores"].shape[0] == 15


def test_ssd300_vgg16_builder():
    """The builder's structure (the slow VGG-16 build is done once; values are in the parity
    file): six feature maps, the default boxes of SSD300 and the fixed 300x300 size."""
    with pytest.warns(UserWarning, match="The size of the model is already fixed"):
        model = _model("ssd300_vgg16", size=(512, 512))
    assert isinstance(model.backbone, ssd.SSDFeatureExtractorVGG)
    assert len(model.backbone.extra) == 5
    assert model.anchor_generator.num_anchors_per_location() == [4, 6, 6, 6, 4, 4]
    assert model.transform.fixed_size == (300, 300)
    assert model.head.classification_head.module_list[0].out_channels == 4 * 91
    assert model.backbone.scale_weight.shape == (512,)
    maxpools = [m for m in model.backbone.features if isinstance(m, nn.MaxPool2d)]
    assert [m.ceil_mode for m in maxpools] == [False, False, True]


class _TinyBackbone(nn.Module):
    """Two feature maps (strides 4 and 8) for a fast SSD."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.b = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.out_channels = [8, 16]

    def forward(self, x):
        a = ember.relu(self.a(x))
        return OrderedDict([("0", a), ("1", ember.relu(self.b(a)))])


def _tiny_ssd(**kwargs):
    ember.manual_seed(0)
    gen = anchor_utils.DefaultBoxGenerator([[2], [2, 3]], steps=[4, 8])
    return ssd.SSD(_TinyBackbone(), gen, (64, 64), num_classes=3, **kwargs)


def test_ssd_train_and_eval_with_a_custom_backbone():
    model = _tiny_ssd(score_thresh=0.0, detections_per_img=10)
    images = _images((3, 64, 64), (3, 40, 50))
    losses = _train_step(model, images, _targets([[4, 6, 40, 50], [20, 10, 60, 30]], []))
    assert list(losses) == ["bbox_regression", "classification"]
    _assert_all_trainable_have_grads(model)
    losses = _train_step(model, images[1:], _targets([]))
    assert losses["bbox_regression"].item() == 0.0
    out = _assert_detections(model, images)
    assert out[0]["scores"].shape[0] == 10
    with pytest.raises(ValueError, match="do not match the length of the anchor generator"):
        ssd.SSD(_TinyBackbone(), anchor_utils.DefaultBoxGenerator([[2]]), (64, 64), 3)


def test_ssd_hard_negative_mining_matches_numpy():
    """Cross-entropy over the foreground and the 3x as many highest-loss background boxes."""
    model = _tiny_ssd()
    rng = np.random.RandomState(0)
    num_anchors, num_classes = 30, 3
    logits = rng.standard_normal((2, num_anchors, num_classes)).astype(np.float32)
    regression = rng.standard_normal((2, num_anchors, 4)).astype(np.float32)
    corners = rng.uniform(0, 30, (num_anchors, 2))
    anchors = np.concatenate([corners, corners + rng.uniform(5, 30, (num_anchors, 2))], 1)
    anchors = anchors.astype(np.float32)
    gt = np.array([[2, 3, 30, 40], [10, 12, 50, 58]], np.float32)
    matched = [np.full(num_anchors, -1), np.full(num_anchors, -1)]
    matched[0][[1, 5, 7]] = [0, 1, 1]
    matched[1][[2]] = [0]
    labels = [np.array([1, 2]), np.array([2, 1])]
    targets = [{"boxes": ember.tensor(gt), "labels": ember.tensor(lab)} for lab in labels]
    losses = model.compute_loss(
        targets,
        {"bbox_regression": ember.tensor(regression), "cls_logits": ember.tensor(logits)},
        [ember.tensor(anchors)] * 2,
        [ember.tensor(m) for m in matched],
    )
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    cls_total = 0.0
    for i in range(2):
        target = np.where(matched[i] >= 0, labels[i][matched[i].clip(0)], 0)
        ce = -log_p[i, np.arange(num_anchors), target]
        fg = target > 0
        hardest = np.sort(ce[~fg])[::-1][: 3 * fg.sum()]
        cls_total += ce[fg].sum() + hardest.sum()
    np.testing.assert_allclose(losses["classification"].item(), cls_total / 4, rtol=1e-5)
    assert losses["bbox_regression"].item() > 0


def test_retinanet_v1_checkpoint_keys_load():
    """Version-1 checkpoints named the tower convs ``conv.{0,2,4,6}``; they still load."""
    ember.manual_seed(0)
    head = retinanet.RetinaNetHead(8, 2, 3)
    state = head.state_dict()
    v1 = OrderedDict()
    for key, value in state.items():
        parts = key.split(".")
        if parts[1] == "conv":  # <head>.conv.<i>.0.<param> -> <head>.conv.<2i>.<param>
            key = ".".join([parts[0], "conv", str(2 * int(parts[2])), parts[4]])
        v1[key] = value.clone() + 1
    assert "classification_head.conv.6.weight" in v1
    fresh = retinanet.RetinaNetHead(8, 2, 3)
    fresh.load_state_dict(v1)
    got = fresh.state_dict()
    for key, value in state.items():
        np.testing.assert_array_equal(got[key].numpy(), value.numpy() + 1)


# --- input errors (torchvision's messages) ------------------------------------------------------


@pytest.mark.parametrize(
    "name,targets,error,message",
    [
        ("retinanet_resnet50_fpn", None, AssertionError,
         "targets should not be none when in training mode"),
        ("retinanet_resnet50_fpn", [{"boxes": [[1, 2, 3, 4]], "labels": None}], AssertionError,
         "Expected target boxes to be of type Tensor."),
        ("retinanet_resnet50_fpn", [{"boxes": ember.zeros(4), "labels": None}], AssertionError,
         r"Expected target boxes to be a tensor of shape \[N, 4\].$"),
        ("fcos_resnet50_fpn", [{"boxes": ember.zeros(2, 5), "labels": None}], AssertionError,
         r"Expected target boxes to be a tensor of shape \[N, 4\], got ember.Size\(\[2, 5\]\)."),
        ("ssd", [{"boxes": [[1, 2, 3, 4]], "labels": None}], AssertionError,
         "Expected target boxes to be of type Tensor, got <class 'list'>."),
        ("fcos_resnet50_fpn",
         [{"boxes": ember.tensor([[1.0, 2, 9, 9], [5, 6, 5, 8]]), "labels": ember.tensor([1, 2])}],
         AssertionError,
         # the box as the transform resized it (32 -> 64 pixels), as in torchvision
         r"All bounding boxes should have positive height and width. Found invalid box "
         r"\[10.0, 12.0, 10.0, 16.0\] for target at index 0."),
    ],
)  # fmt: skip
def test_training_input_errors(name, targets, error, message):
    model = _tiny_ssd() if name == "ssd" else _model(name, **SMALL)
    model.train()
    with pytest.raises(error, match=message):
        model(_images((3, 32, 32)), targets)


def test_constructor_errors():
    backbone = _TinyBackbone()
    with pytest.raises(ValueError, match="backbone should contain an attribute out_channels"):
        retinanet.RetinaNet(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator"):
        retinanet.RetinaNet(backbone, 3, anchor_generator=object())
    gen = anchor_utils.AnchorGenerator(((8,),), ((0.5, 1.0),))
    with pytest.raises(ValueError, match=r"num_anchors_per_location\(\)\[0\] should be 1"):
        detection.FCOS(_with_channels(8), 3, anchor_generator=gen)


def _with_channels(c):
    m = nn.Conv2d(3, c, 1)
    m.out_channels = c
    return m


# --- registry, weights, checkpoints --------------------------------------------------------------

BUILDERS = [
    ("retinanet_resnet50_fpn", "RetinaNet_ResNet50_FPN_Weights", 34014999),
    ("retinanet_resnet50_fpn_v2", "RetinaNet_ResNet50_FPN_V2_Weights", 38198935),
    ("fcos_resnet50_fpn", "FCOS_ResNet50_FPN_Weights", 32269600),
    ("ssd300_vgg16", "SSD300_VGG16_Weights", 35641826),
    ("ssdlite320_mobilenet_v3_large", "SSDLite320_MobileNet_V3_Large_Weights", 3440060),
]


@pytest.mark.parametrize("name,weights,num_params", BUILDERS, ids=[b[0] for b in BUILDERS])
def test_registry_and_weights(name, weights, num_params):
    assert name in models.list_models(module=detection)
    enum = getattr(detection, weights)
    assert models.get_model_weights(name) is enum
    assert models.get_weight(f"{weights}.DEFAULT") is enum.COCO_V1
    meta = enum.COCO_V1.meta
    assert meta["num_params"] == num_params
    assert len(meta["categories"]) == 91 and meta["categories"][1] == "person"
    assert enum.COCO_V1.url.startswith("https://download.pytorch.org/models/" + name.split("_")[0])
    assert set(meta["_metrics"]["COCO-val2017"]) == {"box_map"}


def test_checkpoint_loading_without_download(monkeypatch):
    """``weights=COCO_V1``: 91 classes, frozen BN with eps 0 (older checkpoints), and the
    state dict the downloader returns is loaded."""
    source = _model("retinanet_resnet50_fpn", num_classes=91)
    state = {
        k: v.clone() + 0.5 if v.is_floating_point() else v for k, v in source.state_dict().items()
    }
    requested = []

    def fake_get_state_dict(self, *args, **kwargs):
        requested.append(self.url)
        return state

    monkeypatch.setattr(models.WeightsEnum, "get_state_dict", fake_get_state_dict)
    model = detection.retinanet_resnet50_fpn(weights="DEFAULT")
    assert requested == [detection.RetinaNet_ResNet50_FPN_Weights.COCO_V1.url]
    frozen = [m for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    assert frozen and all(m.eps == 0.0 for m in frozen)
    key = "head.classification_head.cls_logits.bias"
    np.testing.assert_array_equal(model.state_dict()[key].numpy(), state[key].numpy())
    with pytest.raises(ValueError, match="num_classes"):
        detection.retinanet_resnet50_fpn(weights="DEFAULT", num_classes=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = detection.retinanet_resnet50_fpn(pretrained=True)
    assert isinstance(legacy, detection.RetinaNet) and len(requested) == 2
