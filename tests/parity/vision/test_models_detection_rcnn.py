"""Parity with torchvision: models.detection, the R-CNN family (Faster, Mask, Keypoint R-CNN).

Each model is built by both libraries (weights=None, weights_backbone=None); torchvision's
state is randomised (BN statistics and affine parameters, conv biases, the heads' predictors
scaled up so that scores are well separated) and copied into Ember's model. On the same fixed
float32 images (two, of different sizes) the eval-mode detections (boxes, scores, labels,
masks, keypoints and their scores) and the train-mode losses agree to 1e-4 relative.

Randomness and ties:
- the samplers (``BalancedPositiveNegativeSampler``) draw random indices; the training
  comparisons make every draw take *all* candidates (``rpn_batch_size_per_image`` and
  ``box_batch_size_per_image`` larger than the numbers of anchors and proposals, with
  ``positive_fraction`` 0.5), and the sampled indices are then read off boolean masks in
  index order, so neither library's random permutation matters;
- the proposals kept before / after the RPN's NMS are cut to a few hundred
  (``rpn_pre_nms_top_n_*``, ``rpn_post_nms_top_n_*``), so that near-ties of objectness
  scores (which float rounding could reorder) are unlikely at the cut.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models import detection  # noqa: E402
from ember.vision.ops import FrozenBatchNorm2d  # noqa: E402

tv_detection = torchvision.models.detection


@pytest.fixture(autouse=True)
def _one_thread_each():
    """Both libraries on one thread: randomly initialised detectors give many nearly tied
    scores, and a multithreaded sum's last bit (torch's conv blocking, OpenBLAS's) decided
    which of two near-equal boxes NMS kept (ssdlite's 39th detection in a CI run)."""
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)

BUILDERS = {
    "fasterrcnn_resnet50_fpn": "FasterRCNN_ResNet50_FPN_Weights",
    "fasterrcnn_resnet50_fpn_v2": "FasterRCNN_ResNet50_FPN_V2_Weights",
    "fasterrcnn_mobilenet_v3_large_fpn": "FasterRCNN_MobileNet_V3_Large_FPN_Weights",
    "fasterrcnn_mobilenet_v3_large_320_fpn": "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
    "maskrcnn_resnet50_fpn": "MaskRCNN_ResNet50_FPN_Weights",
    "maskrcnn_resnet50_fpn_v2": "MaskRCNN_ResNet50_FPN_V2_Weights",
    "keypointrcnn_resnet50_fpn": "KeypointRCNN_ResNet50_FPN_Weights",
}

# small images, few proposals, every anchor and proposal sampled in training (see above)
SMALL = {
    "min_size": 128,
    "max_size": 160,
    "rpn_pre_nms_top_n_test": 150,
    "rpn_post_nms_top_n_test": 20,
    "rpn_pre_nms_top_n_train": 150,
    "rpn_post_nms_top_n_train": 60,
    "rpn_batch_size_per_image": 10**6,
    "box_batch_size_per_image": 10**6,
    "rpn_positive_fraction": 0.5,
    "box_positive_fraction": 0.5,
    # no cut of the detections at a near-tie: all those above the threshold are returned
    "box_score_thresh": 0.1,
    "box_detections_per_img": 1000,
}
PARITY = [
    ("fasterrcnn_resnet50_fpn", {"num_classes": 5}),
    ("fasterrcnn_mobilenet_v3_large_fpn", {"num_classes": 5, "rpn_score_thresh": 0.0}),
    ("maskrcnn_resnet50_fpn", {"num_classes": 4}),
    # one foreground class: a low threshold on few proposals (the keypoint head is 8 convs of
    # 512 channels per detection)
    (
        "keypointrcnn_resnet50_fpn",
        {"num_keypoints": 5, "box_score_thresh": 0.001, "rpn_post_nms_top_n_test": 6},
    ),
]


def _build_both(name, **kwargs):
    torch.manual_seed(0)
    ref = getattr(tv_detection, name)(weights=None, weights_backbone=None, **kwargs)
    ours = getattr(detection, name)(weights=None, weights_backbone=None, **kwargs)
    return ref, ours


def _assert_same_layout(ref, ours):
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
    ref_tree = [(n, type(m).__name__) for n, m in ref.named_modules()]
    our_tree = [(n, type(m).__name__) for n, m in ours.named_modules()]
    assert our_tree == ref_tree
    ref_trainable = [n for n, p in ref.named_parameters() if p.requires_grad]
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == ref_trainable


def _randomize(module):
    """Non-trivial BN statistics and affine parameters and conv biases (torchvision
    initialises them to unit / zero), and predictors spread enough that the RPN's objectness,
    the class scores and the keypoint heatmaps have no near-ties.

    The BN statistics are those of a random batch (one train-mode pass of the backbone with
    cumulative averages), so that the features stay O(1) through the 50 layers: random
    statistics that do not normalise blow them up to ~1e3 and the scores saturate.
    """
    gen = torch.Generator().manual_seed(0)

    def rand(shape, scale, offset=0.0):
        return torch.randn(shape, generator=gen) * scale + offset

    with torch.no_grad():
        bns = [m for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
        momenta = [m.momentum for m in bns]
        for m in bns:
            m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
            m.bias.copy_(rand(m.bias.shape, 0.1))
            m.reset_running_stats()
            m.momentum = None
        for m in module.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.ConvTranspose2d)) and m.bias is not None:
                m.bias.copy_(rand(m.bias.shape, 0.1))
        module.train()
        module.backbone(torch.randn((2, 3, 128, 160), generator=gen))
        module.roi_heads.train()
        for m, momentum in zip(bns, momenta):
            m.momentum = momentum

        rpn_head = module.rpn.head
        rpn_head.cls_logits.weight.copy_(rand(rpn_head.cls_logits.weight.shape, 0.05))
        rpn_head.bbox_pred.weight.copy_(rand(rpn_head.bbox_pred.weight.shape, 0.0002))
        predictor = module.roi_heads.box_predictor
        predictor.cls_score.weight.copy_(rand(predictor.cls_score.weight.shape, 0.01))
        predictor.cls_score.bias.copy_(rand(predictor.cls_score.bias.shape, 1.0))
        predictor.bbox_pred.weight.copy_(rand(predictor.bbox_pred.weight.shape, 0.01))
        # mask and heatmap logits of a few units (not ~1e3): their probabilities are then
        # not oversensitive to the features' rounding
        heads = module.roi_heads
        if heads.mask_predictor is not None:
            heads.mask_predictor.mask_fcn_logits.weight.mul_(0.005)
        if heads.keypoint_predictor is not None:
            heads.keypoint_predictor.kps_score_lowres.weight.mul_(0.01)


def _copy_state(ref, ours):
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in ref.state_dict().items()}
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


# Image sizes whose resize ratios (input / output size) are exact binary fractions: Ember's
# interpolate computes the sampling positions in float64, PyTorch's CPU kernel in float32 for
# float32 images, so that other ratios differ by ~5e-6 after the resize, which the 50 layers
# of a ResNet amplify (and which can reorder near-tied proposals).
SIZES = [(100, 125), (75, 150)]


def _images():
    rng = np.random.RandomState(1)
    return [rng.rand(3, h, w).astype(np.float32) for h, w in SIZES]


def _targets(num_keypoints=None):
    boxes = [
        np.array([[10.0, 20.0, 60.0, 80.0], [30.0, 30.0, 100.0, 70.0]], np.float32),
        np.array([[5.0, 5.0, 50.0, 50.0]], np.float32),
    ]
    labels = (
        [np.array([1, 3]), np.array([2])]
        if num_keypoints is None
        else [np.array([1, 1]), np.array([1])]
    )
    rng = np.random.RandomState(2)
    targets = []
    for b, lab, (h, w) in zip(boxes, labels, SIZES):
        t = {"boxes": b, "labels": lab.astype(np.int64)}
        masks = np.zeros((len(b), h, w), np.uint8)
        for i, (x1, y1, x2, y2) in enumerate(b.astype(int)):
            masks[i, y1 + 3 : y2 - 2, x1 + 2 : x2 - 4] = 1
        t["masks"] = masks
        if num_keypoints:
            kx = rng.uniform(b[:, :1], b[:, 2:3], (len(b), num_keypoints))
            ky = rng.uniform(b[:, 1:2], b[:, 3:4], (len(b), num_keypoints))
            vis = (rng.rand(len(b), num_keypoints) > 0.2).astype(np.float32)
            t["keypoints"] = np.stack([kx, ky, vis], -1).astype(np.float32)
        targets.append(t)
    return targets


def _matching_order(got, expected):
    """The permutation of Ember's detections that lines them up with torchvision's: the
    detections come sorted by score, and two of (nearly) equal scores may come in either
    order; each reference detection takes the closest unused one of the same label."""
    g_boxes, e_boxes = got["boxes"].numpy(), expected["boxes"].numpy()
    g_scores, e_scores = got["scores"].numpy(), expected["scores"].numpy()
    g_labels, e_labels = got["labels"].numpy(), expected["labels"].numpy()
    assert len(g_boxes) == len(e_boxes)
    cost = (
        np.abs(g_boxes[None] - e_boxes[:, None]).sum(-1)
        + 100 * np.abs(g_scores[None] - e_scores[:, None])
        + 1e9 * (g_labels[None] != e_labels[:, None])
    )
    order = []
    for row in cost:
        row = row.copy()
        row[order] = np.inf
        order.append(int(np.argmin(row)))
    assert sorted(order) == list(range(len(order)))
    # only ties may move
    np.testing.assert_allclose(g_scores[order], e_scores, rtol=1e-4, atol=1e-6)
    return ember.tensor(order) if order else ember.zeros((0,), dtype=ember.int64)


def _assert_close(got, expected, what):
    expected = expected.detach().numpy()
    got = got.numpy()
    assert got.shape == expected.shape, what
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return
    scale = max(np.abs(expected).max(initial=0.0), 1e-6)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale, err_msg=what)


@pytest.mark.parametrize("name,kwargs", PARITY, ids=[p[0] for p in PARITY])
def test_detections_and_losses_match_torchvision(name, kwargs):
    ref, ours = _build_both(name, **{**SMALL, **kwargs})
    _assert_same_layout(ref, ours)
    _randomize(ref)
    _copy_state(ref, ours)
    images = _images()

    # eval: the detections of each image
    ref.eval()
    ours.eval()
    with torch.no_grad():
        expected = ref([torch.from_numpy(x) for x in images])
    with ember.no_grad():
        got = ours([ember.tensor(x) for x in images])
    assert len(got) == len(expected) == 2
    for g, e in zip(got, expected):
        assert list(g) == list(e)
        assert len(e["boxes"]) > 0  # something to compare
        order = _matching_order(g, e)
        for key in e:
            _assert_close(g[key][order], e[key], key)

    # train: the losses, every anchor and proposal sampled
    ref.train()
    ours.train()
    targets = _targets(kwargs.get("num_keypoints"))
    if not name.startswith("maskrcnn"):
        for t in targets:
            del t["masks"]
    torch.manual_seed(0)
    ref_losses = ref(
        [torch.from_numpy(x) for x in images],
        [{k: torch.from_numpy(v) for k, v in t.items()} for t in targets],
    )
    our_losses = ours(
        [ember.tensor(x) for x in images],
        [{k: ember.tensor(v) for k, v in t.items()} for t in targets],
    )
    assert list(our_losses) == list(ref_losses)
    for key, value in ref_losses.items():
        assert value.item() > 0, key
        np.testing.assert_allclose(our_losses[key].item(), value.item(), rtol=1e-4, err_msg=key)


@pytest.mark.parametrize(
    "name",
    [
        "fasterrcnn_resnet50_fpn_v2",
        "fasterrcnn_mobilenet_v3_large_320_fpn",
        "maskrcnn_resnet50_fpn_v2",
    ],
)
def test_state_dict_layout_matches(name):
    """Same state_dict keys and shapes, module tree and trainable parameters (the
    builders' defaults)."""
    _assert_same_layout(*_build_both(name))


@pytest.mark.parametrize("trainable_layers", [0, 2, 5])
def test_frozen_layers_match_torchvision(trainable_layers):
    """The layers a pretrained backbone freezes (ResNet with FrozenBatchNorm2d, and
    MobileNetV3) are torchvision's."""
    ref = tv_detection.backbone_utils._resnet_fpn_extractor(
        torchvision.models.resnet18(norm_layer=torchvision.ops.FrozenBatchNorm2d), trainable_layers
    )
    ours = detection.backbone_utils._resnet_fpn_extractor(
        models.resnet18(norm_layer=FrozenBatchNorm2d), trainable_layers
    )
    ref_trainable = [n for n, p in ref.named_parameters() if p.requires_grad]
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == ref_trainable
    assert list(ours.state_dict()) == list(ref.state_dict())

    ref = tv_detection.backbone_utils._mobilenet_extractor(
        torchvision.models.mobilenet_v3_large(), True, trainable_layers
    )
    ours = detection.backbone_utils._mobilenet_extractor(
        models.mobilenet_v3_large(), True, trainable_layers
    )
    ref_trainable = [n for n, p in ref.named_parameters() if p.requires_grad]
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == ref_trainable
    assert list(ours.state_dict()) == list(ref.state_dict())


def test_registry_matches_torchvision():
    ours = models.list_models(module=detection)
    ref = set(torchvision.models.list_models(module=tv_detection))
    assert set(BUILDERS) <= set(ours)
    assert set(BUILDERS) <= ref
    public = {
        n
        for n in dir(tv_detection.faster_rcnn)
        + dir(tv_detection.mask_rcnn)
        + dir(tv_detection.keypoint_rcnn)
        if not n.startswith("_")
    }
    for module in ("faster_rcnn", "mask_rcnn", "keypoint_rcnn"):
        assert set(getattr(tv_detection, module).__all__) <= set(dir(detection))
    for name in ("TwoMLPHead", "FastRCNNPredictor", "FastRCNNConvFCHead"):
        assert name in public and hasattr(detection.faster_rcnn, name)


@pytest.mark.parametrize("builder", list(BUILDERS))
def test_weights_enums_match_torchvision(builder):
    enum_name = BUILDERS[builder]
    ours = getattr(detection, enum_name)
    ref = getattr(tv_detection, enum_name)
    assert list(ours.__members__) == list(ref.__members__)
    assert ours.DEFAULT.name == ref.DEFAULT.name
    for a, b in zip(ours, ref):
        assert a.url == b.url
        assert a.meta == b.meta
        ta, tb = a.transforms(), b.transforms()
        assert type(ta).__name__ == type(tb).__name__ == "ObjectDetection"
        assert repr(ta) == repr(tb)
        assert ta.describe() == tb.describe()
    assert models.get_model_weights(builder) is ours
    assert models.get_weight(f"{enum_name}.DEFAULT") is ours.DEFAULT


def test_object_detection_preset_matches_torchvision():
    img = np.random.RandomState(0).randint(0, 256, (3, 20, 30), dtype=np.uint8)
    ours = detection.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()
    ref = tv_detection.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()
    np.testing.assert_allclose(
        ours(ember.tensor(img)).numpy(), ref(torch.from_numpy(img)).numpy(), rtol=1e-6
    )


def test_transform_matches_torchvision():
    """GeneralizedRCNNTransform: resize (image, boxes, masks, keypoints), batching,
    postprocess (boxes, keypoints, pasted masks), and the fixed-size path."""
    from torchvision.models.detection.transform import GeneralizedRCNNTransform as TvTransform

    from ember.vision.models.detection.transform import GeneralizedRCNNTransform

    images = _images()
    targets = _targets(num_keypoints=3)
    mean, std = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
    for kwargs in ({}, {"fixed_size": (100, 50)}):
        ref = TvTransform(64, 100, mean, std, size_divisible=16, **kwargs).eval()
        ours = GeneralizedRCNNTransform(64, 100, mean, std, size_divisible=16, **kwargs).eval()
        ref_il, ref_t = ref(
            [torch.from_numpy(x) for x in images],
            [{k: torch.from_numpy(v) for k, v in t.items()} for t in targets],
        )
        our_il, our_t = ours(
            [ember.tensor(x) for x in images],
            [{k: ember.tensor(v) for k, v in t.items()} for t in targets],
        )
        assert our_il.image_sizes == [tuple(s) for s in ref_il.image_sizes]
        _assert_close(our_il.tensors, ref_il.tensors, "batched images")
        for g, e in zip(our_t, ref_t):
            for key in e:
                _assert_close(g[key], e[key], key)

    rng = np.random.RandomState(3)
    result = {
        "boxes": np.array([[3.0, 4.0, 40.0, 30.0], [-5.0, 10.0, 20.0, 70.0]], np.float32),
        "masks": rng.rand(2, 1, 28, 28).astype(np.float32),
        "keypoints": rng.rand(2, 3, 3).astype(np.float32) * 40,
    }
    expected = ref.postprocess(
        [{k: torch.from_numpy(v) for k, v in result.items()}], [(64, 77)], [(100, 120)]
    )
    got = ours.postprocess(
        [{k: ember.tensor(v) for k, v in result.items()}], [(64, 77)], [(100, 120)]
    )
    for key in result:
        _assert_close(got[0][key], expected[0][key], key)
