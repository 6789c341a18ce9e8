"""Parity with torchvision: the single-stage detectors of models.detection (RetinaNet, FCOS,
SSD300-VGG16, SSDlite320-MobileNetV3) and their anchor generators.

Each case builds torchvision's model and ours (weights=None, weights_backbone=None), checks
that the state_dict keys and shapes agree, randomises torchvision's state (BN statistics and
affine parameters, biases, and the classification logits so that scores spread over (0, 1)),
copies it into ours (through a real ``torch.save`` file for RetinaNet), and compares
on the same float32 images:

- eval: the detections of each image. Scores agree to ~1e-4 relative; as near-equal scores
  may come out in either order, each detection of ours is matched to torchvision's by label
  and score, and its box compared.
- train: the loss dict, to ~1e-4 relative, for a batch with one image holding two boxes and
  one holding none. Nothing here is random: the training transform draws its size from a
  one-element ``min_size``, and the choices that could depend on ties (the matchers' argmax,
  SSD's hard negative mining, which ranks the background boxes by loss) see distinct
  continuous values, so both libraries pick the same anchors.
"""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision.models import detection  # noqa: E402
from ember.vision.models.detection import anchor_utils  # noqa: E402

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
tv_anchor_utils = tv_detection.anchor_utils

SMALL = {"min_size": 64, "max_size": 96}
# (builder, kwargs, image sizes (C, H, W) of the batch)
CASES = [
    ("retinanet_resnet50_fpn", {**SMALL, "num_classes": 5, "detections_per_img": 40},
     [(3, 64, 80), (3, 56, 72)]),
    ("fcos_resnet50_fpn", {**SMALL, "num_classes": 5, "detections_per_img": 40},
     [(3, 64, 80), (3, 56, 72)]),
    ("ssd300_vgg16", {"num_classes": 4, "detections_per_img": 40}, [(3, 300, 300)]),
    ("ssdlite320_mobilenet_v3_large", {"num_classes": 4, "detections_per_img": 40},
     [(3, 320, 320), (3, 240, 280)]),
]  # fmt: skip


def _randomize(module, var_scale=1.0):
    """Non-trivial BN statistics and affine parameters, non-zero conv biases, and
    classification biases that spread the scores (torchvision's are all near the prior).

    ``var_scale`` shrinks the BN running variances. MobileNetV3's image signal fades over
    its depth under variances near 1: ssdlite's backbone outputs varied by ~1e-4 over the
    image, its logits by a few ulps, and 2,500 of each class's 3,234 scores were tied.
    Which of them topk and NMS kept then hung on the last bit of each library's softmax
    (a CI run lost ssdlite's 39th detection when Ember's topk took PyTorch's tie order on
    scores an ulp away from PyTorch's). At 0.1 the signal survives and the scores spread.
    """
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, m in module.named_modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.GroupNorm)):
                if isinstance(m, torch.nn.BatchNorm2d):
                    var = torch.rand(m.running_var.shape, generator=gen) + 0.5
                    m.running_var.copy_(var * var_scale)
                    m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, torch.nn.Conv2d) and m.bias is not None:
                scale = 1.0 if "cls_logits" in name else 0.1
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * scale)
                if re.fullmatch(r".*classification_head\.module_list\.\d+", name):
                    # SSD300's VGG sees pixels x 255: smaller logits keep the softmax off 1.0
                    m.weight.mul_(0.01)


def _assert_same_layout(ref, ours):
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key


def _copy_state(ref, ours, tmp_path=None):
    if tmp_path is not None:  # through a checkpoint file, with its version metadata
        path = tmp_path / "model.pth"
        torch.save(ref.state_dict(), path)
        state = ember.load(str(path))
    else:
        state = {k: ember.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()}
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys


def _images(shapes, seed=1):
    rng = np.random.RandomState(seed)
    return [rng.uniform(0, 1, s).astype(np.float32) for s in shapes]


def _targets(shapes):
    """Two boxes in the first image (inside it), none in the others."""
    h, w = shapes[0][1:]
    boxes = np.array([[0.1 * w, 0.15 * h, 0.6 * w, 0.7 * h],
                      [0.4 * w, 0.3 * h, 0.95 * w, 0.9 * h]], np.float32)  # fmt: skip
    out = [(boxes, np.array([1, 2], np.int64))]
    out += [(np.zeros((0, 4), np.float32), np.zeros((0,), np.int64)) for _ in shapes[1:]]
    return out


def _assert_detections_match(got, expected):
    """Scores equal; the box of each detection equal to torchvision's detection of the same
    label and score. Exactly tied scores (spatially constant features of a randomly
    initialised network give several boxes the same score) come out in an order, and past
    ``detections_per_img`` in a selection, that neither library defines: those detections
    are compared by score alone, and at least a quarter must be untied."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = {k: v.numpy() for k, v in e.items()}
        g = {k: v.numpy() for k, v in g.items()}
        assert len(e["scores"]) > 0
        assert g["boxes"].shape == e["boxes"].shape
        np.testing.assert_allclose(g["scores"], e["scores"], rtol=1e-4, atol=1e-6)
        scale = max(1.0, np.abs(e["boxes"]).max())
        near = np.isclose(e["scores"][:, None], e["scores"][None, :], rtol=1e-5, atol=0)
        tied = near.sum(1) > 1
        assert (~tied).sum() >= len(tied) // 4
        for box, score, label in zip(g["boxes"], g["scores"], g["labels"]):
            # torchvision's detection of the same label and (nearly) the same score
            close = (e["labels"] == label) & np.isclose(e["scores"], score, rtol=1e-4, atol=1e-6)
            assert close.any(), (score, label)
            if tied[close].any():
                continue
            err = np.abs(e["boxes"][close] - box).max(axis=1).min()
            assert err <= 1e-4 * scale, (box, err)


_PAIRS = {}


def _pair(name, kwargs):
    """torchvision's model and ours, randomised and with the same state (built once)."""
    if name not in _PAIRS:
        torch.manual_seed(0)
        ember.manual_seed(0)
        ref = getattr(tv_detection, name)(weights=None, weights_backbone=None, **kwargs)
        ours = getattr(detection, name)(weights=None, weights_backbone=None, **kwargs)
        _PAIRS[name] = (ref, ours)
    return _PAIRS[name]


@pytest.mark.parametrize("name,kwargs,shapes", CASES, ids=[c[0] for c in CASES])
def test_outputs_and_losses_match_torchvision(name, kwargs, shapes, tmp_path):
    ref, ours = _pair(name, kwargs)
    _assert_same_layout(ref, ours)
    _randomize(ref, var_scale=0.1 if name.startswith("ssdlite") else 1.0)
    _copy_state(ref, ours, tmp_path if name.startswith("retinanet") else None)
    images = _images(shapes)

    ref.eval()
    ours.eval()
    with torch.no_grad():
        expected = ref([torch.from_numpy(x) for x in images])
    with ember.no_grad():
        got = ours([ember.tensor(x) for x in images])
    _assert_detections_match(got, expected)

    ref.train()
    ours.train()
    targets = _targets(shapes)
    with torch.no_grad():
        ref_losses = ref(
            [torch.from_numpy(x) for x in images],
            [{"boxes": torch.from_numpy(b), "labels": torch.from_numpy(lab)} for b, lab in targets],
        )
    with ember.no_grad():
        our_losses = ours(
            [ember.tensor(x) for x in images],
            [{"boxes": ember.tensor(b), "labels": ember.tensor(lab)} for b, lab in targets],
        )
    assert list(our_losses) == list(ref_losses)
    for key, value in ref_losses.items():
        assert value.item() > 0, key
        np.testing.assert_allclose(our_losses[key].item(), value.item(), rtol=1e-4, err_msg=key)


def test_retinanet_v2_state_dict_layout_matches():
    """GroupNorm heads, P6 from C5; default (91) classes."""
    torch.manual_seed(0)
    ref = tv_detection.retinanet_resnet50_fpn_v2(weights=None, weights_backbone=None)
    ours = detection.retinanet_resnet50_fpn_v2(weights=None, weights_backbone=None)
    _assert_same_layout(ref, ours)
    assert ours.head.regression_head._loss_type == "giou"


def test_anchor_generator_matches():
    class ImageList:
        def __init__(self, tensors, image_sizes):
            self.tensors, self.image_sizes = tensors, image_sizes

    sizes = ((16, 20, 25), (32,), (64, 80))
    ratios = ((0.5, 1.0, 2.0), (1.0,), (0.7, 1.3))
    fm = [(13, 17), (7, 9), (4, 5)]
    ref = tv_anchor_utils.AnchorGenerator(sizes, ratios)(
        tv_detection.image_list.ImageList(torch.zeros(2, 3, 100, 130), [(100, 130), (90, 120)]),
        [torch.zeros(2, 4, *s) for s in fm],
    )
    got = anchor_utils.AnchorGenerator(sizes, ratios)(
        ImageList(ember.zeros(2, 3, 100, 130), [(100, 130), (90, 120)]),
        [ember.zeros(2, 4, *s) for s in fm],
    )
    assert len(got) == len(ref) == 2
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g.numpy(), r.numpy())

    boxgen_args = ([[2], [2, 3], [2, 3]], 0.2, 0.9, None, [8, 16, 32], True)
    fm = [(38, 38), (19, 19), (10, 10)]
    ref = tv_anchor_utils.DefaultBoxGenerator(*boxgen_args)(
        tv_detection.image_list.ImageList(torch.zeros(1, 3, 300, 300), [(300, 300)]),
        [torch.zeros(1, 4, *s) for s in fm],
    )
    ours = anchor_utils.DefaultBoxGenerator(*boxgen_args)
    got = ours(ImageList(ember.zeros(1, 3, 300, 300), [(300, 300)]),
               [ember.zeros(1, 4, *s) for s in fm])  # fmt: skip
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), rtol=1e-6, atol=1e-5)
    assert repr(ours) == repr(tv_anchor_utils.DefaultBoxGenerator(*boxgen_args))


@pytest.mark.parametrize(
    "name",
    ["RetinaNet_ResNet50_FPN_Weights", "RetinaNet_ResNet50_FPN_V2_Weights",
     "FCOS_ResNet50_FPN_Weights", "SSD300_VGG16_Weights",
     "SSDLite320_MobileNet_V3_Large_Weights"],
)  # fmt: skip
def test_weights_enums_match(name):
    ref, ours = getattr(tv_detection, name), getattr(detection, name)
    assert [m.name for m in ours] == [m.name for m in ref]
    for r, o in zip(ref, ours):
        assert o.url == r.url
        assert o.meta == r.meta
    assert ours.DEFAULT.name == ref.DEFAULT.name


def test_public_names_match():
    names = ["RetinaNet", "FCOS", "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2",
             "fcos_resnet50_fpn", "ssd300_vgg16", "ssdlite320_mobilenet_v3_large"]  # fmt: skip
    for n in names:
        assert hasattr(detection, n)
    for mod in ("retinanet", "fcos", "ssd", "ssdlite"):
        assert sorted(getattr(detection, mod).__all__) == sorted(getattr(tv_detection, mod).__all__)
