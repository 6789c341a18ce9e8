"""ember.vision.models.segmentation: FCN, DeepLabV3 and LRASPP.

Values against torchvision are in tests/parity/vision/test_models_segmentation.py; here:
output dicts and shapes, parameter counts (torchvision's published ``num_params``), state_dict
layout, the heads against NumPy references, registry, weights enums, the builders' argument
checks and checkpoint loading (without a download), and a training step.
"""

import inspect
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F
from ember.vision import models
from ember.vision.models import segmentation
from ember.vision.models.segmentation.deeplabv3 import ASPP, ASPPConv, ASPPPooling, DeepLabHead
from ember.vision.models.segmentation.fcn import FCNHead
from ember.vision.models.segmentation.lraspp import LRASPPHead

# builder, weights enum, model class, backbone weights enum
BUILDERS = [
    ("fcn_resnet50", "FCN_ResNet50_Weights", "FCN", "ResNet50_Weights"),
    ("fcn_resnet101", "FCN_ResNet101_Weights", "FCN", "ResNet101_Weights"),
    ("deeplabv3_resnet50", "DeepLabV3_ResNet50_Weights", "DeepLabV3", "ResNet50_Weights"),
    ("deeplabv3_resnet101", "DeepLabV3_ResNet101_Weights", "DeepLabV3", "ResNet101_Weights"),
    (
        "deeplabv3_mobilenet_v3_large",
        "DeepLabV3_MobileNet_V3_Large_Weights",
        "DeepLabV3",
        "MobileNet_V3_Large_Weights",
    ),
    (
        "lraspp_mobilenet_v3_large",
        "LRASPP_MobileNet_V3_Large_Weights",
        "LRASPP",
        "MobileNet_V3_Large_Weights",
    ),
]
IDS = [b[0] for b in BUILDERS]
VOC = ["__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat",
       "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant",
       "sheep", "sofa", "train", "tvmonitor"]  # fmt: skip


def _build(name, **kwargs):
    ember.manual_seed(0)
    kwargs.setdefault("weights_backbone", None)
    return models.get_model(name, **kwargs)


def _checkpoint_kwargs(name):
    """The configuration of the published checkpoints: VOC classes, with the aux head."""
    return {} if name.startswith("lraspp") else {"aux_loss": True}


# --- NumPy references ------------------------------------------------------------------------


def _np_bilinear(x, size):
    """``interpolate(mode="bilinear", align_corners=False)`` of an NCHW array."""

    def axis(n_in, n_out):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    h0, h1, lh = axis(x.shape[2], size[0])
    w0, w1, lw = axis(x.shape[3], size[1])
    rows = x[:, :, h0] * (1 - lh)[:, None] + x[:, :, h1] * lh[:, None]
    return rows[..., w0] * (1 - lw) + rows[..., w1] * lw


def _np_conv1x1(x, conv):
    y = np.einsum("oi,nihw->nohw", conv.weight.detach().numpy()[:, :, 0, 0], x)
    if conv.bias is not None:
        y = y + conv.bias.detach().numpy()[None, :, None, None]
    return y


def _np_bn_eval(x, bn):
    mean, var = bn.running_mean.numpy(), bn.running_var.numpy()
    w, b = bn.weight.detach().numpy(), bn.bias.detach().numpy()
    y = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + bn.eps)
    return y * w[None, :, None, None] + b[None, :, None, None]


def _randomize_bn(module):
    rng = np.random.RandomState(0)
    with ember.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(ember.tensor(rng.randn(n).astype(np.float32) * 0.1))
                m.running_var.copy_(ember.tensor(rng.rand(n).astype(np.float32) + 0.5))
                m.weight.copy_(ember.tensor(rng.rand(n).astype(np.float32) + 0.5))
                m.bias.copy_(ember.tensor(rng.randn(n).astype(np.float32) * 0.1))


# --- builders --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,enum_name,cls_name,backbone_enum", BUILDERS, ids=IDS)
def test_builder_params_registry_and_signature(name, enum_name, cls_name, backbone_enum):
    model = _build(name, **_checkpoint_kwargs(name))
    assert type(model) is getattr(segmentation, cls_name)
    weights = getattr(segmentation, enum_name)
    assert sum(p.numel() for p in model.parameters()) == weights.DEFAULT.meta["num_params"]
    assert models.get_model_weights(name) is weights
    assert models.get_model_builder(name) is getattr(segmentation, name)
    # a subpackage, as in torchvision: the builders are not merged into ember.vision.models
    assert not hasattr(models, name) and not hasattr(models, enum_name)
    params = inspect.signature(getattr(segmentation, name)).parameters
    assert params["weights"].default is None
    assert params["num_classes"].default is None
    assert params["weights_backbone"].default is getattr(models, backbone_enum).IMAGENET1K_V1
    assert ("aux_loss" in params) == (cls_name != "LRASPP")
    if "resnet" in name:
        sd = model.state_dict()
        depth = 23 if "101" in name else 6
        assert f"backbone.layer3.{depth - 1}.conv3.weight" in sd
        assert f"backbone.layer3.{depth}.conv1.weight" not in sd
        assert sd["aux_classifier.0.weight"].shape == (256, 1024, 3, 3)
        assert sd["aux_classifier.4.weight"].shape == (21, 256, 1, 1)
        head_width = 512 if cls_name == "FCN" else 256  # FCNHead(2048) / DeepLabHead
        assert sd["classifier.4.weight"].shape == (21, head_width, 1, 1)
        prefixes = ("backbone.", "classifier.", "aux_classifier.")
        assert [k for k in sd if not k.startswith(prefixes)] == []


def test_list_models_of_the_subpackage():
    names = [b[0] for b in BUILDERS]
    assert models.list_models(module=segmentation) == sorted(names)
    assert not set(names) & set(models.list_models(module=models))
    assert set(names) <= set(models.list_models())


# (builder, kwargs, expected keys)
FORWARD = [
    ("fcn_resnet50", {"aux_loss": True, "num_classes": 3}, ["out", "aux"]),
    ("deeplabv3_resnet50", {"aux_loss": True}, ["out", "aux"]),
    ("deeplabv3_mobilenet_v3_large", {"aux_loss": False}, ["out"]),
    ("deeplabv3_mobilenet_v3_large", {"aux_loss": True, "num_classes": 5}, ["out", "aux"]),
    ("lraspp_mobilenet_v3_large", {"num_classes": 2}, ["out"]),
]


@pytest.mark.parametrize(
    "name,kwargs,keys",
    FORWARD,
    ids=[f"{n}-{'-'.join(map(str, k.values()))}" for n, k, _ in FORWARD],
)
def test_output_dict(name, kwargs, keys):
    model = _build(name, **kwargs).eval()
    assert (getattr(model, "aux_classifier", None) is not None) == ("aux" in keys)
    x = ember.randn(1, 3, 64, 48)
    with ember.no_grad():
        out = model(x)
    assert isinstance(out, OrderedDict)
    assert list(out) == keys
    for key in keys:
        assert out[key].shape == (1, kwargs.get("num_classes", 21), 64, 48)
        assert np.isfinite(out[key].numpy()).all()


def test_resnet_backbones_are_dilated():
    """layer3 and layer4 keep output stride 8: strides replaced by dilation 2 and 4."""
    model = _build("fcn_resnet50", aux_loss=True)
    backbone = model.backbone
    assert type(backbone).__name__ == "IntermediateLayerGetter"
    assert list(backbone) == ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3",
                              "layer4"]  # fmt: skip
    assert backbone.return_layers == {"layer4": "out", "layer3": "aux"}
    assert "fc.weight" not in backbone.state_dict()  # children after layer4 are dropped
    assert backbone.layer3[0].conv2.stride == (1, 1) and backbone.layer3[1].conv2.dilation == (2, 2)
    assert backbone.layer4[0].conv2.dilation == (2, 2) and backbone.layer4[1].conv2.dilation == (
        4,
        4,
    )
    with ember.no_grad():
        features = backbone.eval()(ember.randn(1, 3, 64, 64))
    assert list(features) == ["aux", "out"]
    assert features["aux"].shape == (1, 1024, 8, 8)
    assert features["out"].shape == (1, 2048, 8, 8)


def test_mobilenet_backbone_stages():
    """C2 (block 4, output stride 8) feeds the aux / low branch and C5 (the last conv,
    output stride 16 with the dilated last stage) the main / high one."""
    model = _build("deeplabv3_mobilenet_v3_large", aux_loss=True)
    assert len(model.backbone) == 17
    assert model.backbone.return_layers == {"16": "out", "4": "aux"}
    assert model.aux_classifier[0].in_channels == 40
    assert model.classifier[0].convs[0][0].in_channels == 960
    assert model.backbone["13"].block[1][0].dilation == (2, 2)
    with ember.no_grad():
        features = model.backbone.eval()(ember.randn(1, 3, 64, 64))
    assert features["aux"].shape == (1, 40, 8, 8)
    assert features["out"].shape == (1, 960, 4, 4)

    lraspp = _build("lraspp_mobilenet_v3_large")
    assert lraspp.backbone.return_layers == {"4": "low", "16": "high"}
    assert len(lraspp.backbone) == 17
    assert lraspp.classifier.low_classifier.in_channels == 40
    assert lraspp.classifier.cbr[0].in_channels == 960


def test_deeplab_and_lraspp_state_dict_keys():
    sd = _build("deeplabv3_resnet50", num_classes=7).state_dict()
    assert sd["classifier.0.convs.0.0.weight"].shape == (256, 2048, 1, 1)
    for i, rate in enumerate((12, 24, 36), start=1):
        assert sd[f"classifier.0.convs.{i}.0.weight"].shape == (256, 2048, 3, 3), rate
    assert sd["classifier.0.convs.4.1.weight"].shape == (256, 2048, 1, 1)
    assert "classifier.0.convs.4.2.running_var" in sd
    assert sd["classifier.0.project.0.weight"].shape == (256, 1280, 1, 1)
    assert sd["classifier.1.weight"].shape == (256, 256, 3, 3)
    assert sd["classifier.4.bias"].shape == (7,)
    assert not any(k.startswith("aux_classifier") for k in sd)

    sd = _build("lraspp_mobilenet_v3_large").state_dict()
    tail = [k for k in sd if k.startswith("classifier.")]
    assert tail == [
        "classifier.cbr.0.weight",
        "classifier.cbr.1.weight",
        "classifier.cbr.1.bias",
        "classifier.cbr.1.running_mean",
        "classifier.cbr.1.running_var",
        "classifier.cbr.1.num_batches_tracked",
        "classifier.scale.1.weight",
        "classifier.low_classifier.weight",
        "classifier.low_classifier.bias",
        "classifier.high_classifier.weight",
        "classifier.high_classifier.bias",
    ]
    assert "backbone.0.0.weight" in sd and "backbone.16.1.running_var" in sd


# --- heads against NumPy ---------------------------------------------------------------------


def test_simple_segmentation_model_upsamples_bilinearly():
    """ "out" and "aux": each classifier's output resized to the input's size (bilinear,
    align_corners=False)."""

    class Pooled(nn.Module):
        def forward(self, x):
            return {"out": F.avg_pool2d(x, 4), "aux": F.avg_pool2d(x, 2)}

    model = segmentation.FCN(Pooled(), nn.Conv2d(3, 2, 1), nn.Conv2d(3, 4, 1))
    x = np.random.RandomState(0).standard_normal((2, 3, 12, 20)).astype(np.float32)
    with ember.no_grad():
        out = model(ember.tensor(x))
    pooled4 = x.reshape(2, 3, 3, 4, 5, 4).mean(axis=(3, 5))
    pooled2 = x.reshape(2, 3, 6, 2, 10, 2).mean(axis=(3, 5))
    expected_out = _np_bilinear(_np_conv1x1(pooled4, model.classifier), (12, 20))
    expected_aux = _np_bilinear(_np_conv1x1(pooled2, model.aux_classifier), (12, 20))
    np.testing.assert_allclose(out["out"].numpy(), expected_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["aux"].numpy(), expected_aux, rtol=1e-5, atol=1e-5)

    model = segmentation.DeepLabV3(Pooled(), nn.Conv2d(3, 2, 1))
    with ember.no_grad():
        out = model(ember.tensor(x))
    assert list(out) == ["out"]


def test_aspp_pooling_and_aspp():
    ember.manual_seed(0)
    pool = ASPPPooling(6, 4)
    _randomize_bn(pool)
    pool.eval()
    x = np.random.RandomState(1).standard_normal((2, 6, 5, 7)).astype(np.float32)
    with ember.no_grad():
        got = pool(ember.tensor(x)).numpy()
    mean = x.mean(axis=(2, 3), keepdims=True)
    expected = np.maximum(_np_bn_eval(_np_conv1x1(mean, pool[1]), pool[2]), 0)
    assert got.shape == (2, 4, 5, 7)
    np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-5, atol=1e-5)

    conv = ASPPConv(6, 4, dilation=3)
    assert conv[0].dilation == (3, 3) and conv[0].padding == (3, 3) and conv[0].bias is None
    assert conv(ember.tensor(x)).shape == (2, 4, 5, 7)

    aspp = ASPP(6, (1, 2), out_channels=4)
    assert [type(m).__name__ for m in aspp.convs] == ["Sequential", "ASPPConv", "ASPPConv",
                                                      "ASPPPooling"]  # fmt: skip
    assert aspp.project[0].in_channels == 16
    assert isinstance(aspp.project[3], nn.Dropout) and aspp.project[3].p == 0.5
    _randomize_bn(aspp)
    aspp.eval()
    with ember.no_grad():
        branches = np.concatenate([m(ember.tensor(x)).numpy() for m in aspp.convs], axis=1)
        got = aspp(ember.tensor(x)).numpy()
    expected = np.maximum(_np_bn_eval(_np_conv1x1(branches, aspp.project[0]), aspp.project[1]), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

    head = DeepLabHead(6, 3, atrous_rates=(2,))
    assert [type(m).__name__ for m in head] == ["ASPP", "Conv2d", "BatchNorm2d", "ReLU", "Conv2d"]
    assert len(head[0].convs) == 3
    assert head(ember.randn(2, 6, 5, 7)).shape == (2, 3, 5, 7)


def test_fcn_head():
    head = FCNHead(64, 5)
    assert [type(m).__name__ for m in head] == ["Conv2d", "BatchNorm2d", "ReLU", "Dropout",
                                                "Conv2d"]  # fmt: skip
    assert head[0].out_channels == 16 and head[0].bias is None and head[0].padding == (1, 1)
    assert head[3].p == 0.1
    assert head(ember.randn(1, 64, 6, 6)).shape == (1, 5, 6, 6)


def test_lraspp_head():
    ember.manual_seed(0)
    head = LRASPPHead(low_channels=5, high_channels=6, num_classes=3, inter_channels=4)
    _randomize_bn(head)
    head.eval()
    rng = np.random.RandomState(2)
    low = rng.standard_normal((2, 5, 8, 10)).astype(np.float32)
    high = rng.standard_normal((2, 6, 4, 5)).astype(np.float32)
    with ember.no_grad():
        got = head({"low": ember.tensor(low), "high": ember.tensor(high)}).numpy()
    x = np.maximum(_np_bn_eval(_np_conv1x1(high, head.cbr[0]), head.cbr[1]), 0)
    s = 1 / (1 + np.exp(-_np_conv1x1(high.mean(axis=(2, 3), keepdims=True), head.scale[1])))
    x = _np_bilinear(x * s, (8, 10))
    expected = _np_conv1x1(low, head.low_classifier) + _np_conv1x1(x, head.high_classifier)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# --- weights enums, checkpoints and argument checks ------------------------------------------


@pytest.mark.parametrize("name,enum_name,cls_name,backbone_enum", BUILDERS, ids=IDS)
def test_weights_enum(name, enum_name, cls_name, backbone_enum):
    weights = getattr(segmentation, enum_name)
    assert [m.name for m in weights] == ["COCO_WITH_VOC_LABELS_V1"]
    member = weights.DEFAULT
    assert member is weights.COCO_WITH_VOC_LABELS_V1
    stem = member.url.rsplit("/", 1)[1]
    assert member.url == f"https://download.pytorch.org/models/{stem}"
    assert stem.startswith(name) and stem.endswith(".pth")
    assert member.meta["categories"] == VOC
    assert member.meta["min_size"] == (1, 1)
    assert set(member.meta["_metrics"]["COCO-val2017-VOC-labels"]) == {"miou", "pixel_acc"}
    assert member.meta["recipe"].startswith(
        "https://github.com/pytorch/vision/tree/main/references/segmentation#"
    )
    assert models.get_weight(f"{enum_name}.COCO_WITH_VOC_LABELS_V1") is member
    assert weights.verify("DEFAULT") is member
    preset = member.transforms()
    assert type(preset).__name__ == "SemanticSegmentation"
    assert preset.resize_size == [520]


def test_semantic_segmentation_preset():
    preset = segmentation.FCN_ResNet50_Weights.DEFAULT.transforms(resize_size=None)
    img = np.random.RandomState(0).randint(0, 256, (3, 6, 8), dtype=np.uint8)
    got = preset(ember.tensor(img)).numpy()
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)[:, None, None]
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32)[:, None, None]
    np.testing.assert_allclose(got, (img / np.float32(255) - mean) / std, rtol=1e-5, atol=1e-6)

    preset = segmentation.FCN_ResNet50_Weights.DEFAULT.transforms()
    out = preset(ember.tensor(img.astype(np.float32) / 255))
    assert out.shape == (3, 520, 693) and out.dtype == ember.float32
    assert "resize_size=[520]" in repr(preset) and "resize_size=[520]" in preset.describe()


@pytest.mark.parametrize(
    "call,kwargs,error,message",
    [
        (
            "fcn_resnet50",
            {"weights": "DEFAULT", "num_classes": 10},
            ValueError,
            "The parameter 'num_classes' expected value 21 but got 10 instead.",
        ),
        (
            "deeplabv3_mobilenet_v3_large",
            {"weights": "COCO_WITH_VOC_LABELS_V1", "aux_loss": False},
            ValueError,
            "The parameter 'aux_loss' expected value True but got False instead.",
        ),
        (
            "lraspp_mobilenet_v3_large",
            {"weights": "DEFAULT", "num_classes": 2},
            ValueError,
            "The parameter 'num_classes' expected value 21 but got 2 instead.",
        ),
        (
            "lraspp_mobilenet_v3_large",
            {"weights_backbone": None, "aux_loss": True},
            NotImplementedError,
            "This model does not use auxiliary loss",
        ),
        (
            "deeplabv3_resnet50",
            {"weights_backbone": "ResNet101_Weights.IMAGENET1K_V1"},
            TypeError,
            "Invalid Weight class provided; expected ResNet50_Weights but received "
            "ResNet101_Weights.",
        ),
        (
            "fcn_resnet101",
            {"weights": "FCN_ResNet50_Weights.DEFAULT"},
            TypeError,
            "Invalid Weight class provided; expected FCN_ResNet101_Weights but received "
            "FCN_ResNet50_Weights.",
        ),
    ],
)
def test_argument_errors(call, kwargs, error, message, monkeypatch):
    def no_download(self, *args, **kwargs):
        raise AssertionError("nothing should be downloaded")

    monkeypatch.setattr(models.WeightsEnum, "get_state_dict", no_download)
    kwargs = {k: models.get_weight(v) if "_Weights." in str(v) else v for k, v in kwargs.items()}
    with pytest.raises(error) as err:
        getattr(segmentation, call)(**kwargs)
    assert str(err.value) == message


@pytest.mark.parametrize("legacy", [False, True])
def test_checkpoint_loading_without_download(legacy, monkeypatch):
    """``weights`` fixes num_classes (21) and aux_loss (True), drops the backbone weights and
    loads the checkpoint with its hash checked; ``pretrained=True`` means the same."""
    reference = _build("deeplabv3_mobilenet_v3_large", aux_loss=True)
    state = {k: v + 0.25 if v.is_floating_point() else v for k, v in
             reference.state_dict().items()}  # fmt: skip
    calls = []

    def fake_get_state_dict(self, *args, **kwargs):
        calls.append((self, kwargs))
        if not isinstance(self, segmentation.DeepLabV3_MobileNet_V3_Large_Weights):
            raise AssertionError(f"unexpected download of {self}")
        return state

    monkeypatch.setattr(models.WeightsEnum, "get_state_dict", fake_get_state_dict)
    if legacy:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = segmentation.deeplabv3_mobilenet_v3_large(pretrained=True, progress=False)
        assert any("'pretrained' is deprecated" in str(w.message) for w in caught)
    else:
        model = segmentation.deeplabv3_mobilenet_v3_large(weights="DEFAULT", progress=False)
    member = segmentation.DeepLabV3_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1
    assert calls == [(member, {"progress": False, "check_hash": True})]
    assert model.aux_classifier is not None
    assert model.classifier[4].out_channels == 21
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[key].numpy(), err_msg=key)


def test_legacy_pretrained_backbone_flag():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = segmentation.lraspp_mobilenet_v3_large(pretrained=False, pretrained_backbone=False)
    messages = [str(w.message) for w in caught]
    assert any("'pretrained_backbone' is deprecated" in m for m in messages)
    assert any("equivalent to passing `weights_backbone=None`" in m for m in messages)
    assert isinstance(model, segmentation.LRASPP)


# --- training --------------------------------------------------------------------------------


def test_training_step_reaches_backbone_and_aux():
    model = _build("deeplabv3_mobilenet_v3_large", aux_loss=True, num_classes=4).train()
    rng = np.random.RandomState(0)
    x = ember.tensor(rng.standard_normal((2, 3, 32, 32)).astype(np.float32))
    target = rng.randint(0, 4, (2, 32, 32))
    target[:, :8] = 255  # unlabeled pixels, as in VOC
    target = ember.tensor(target)
    out = model(x)
    losses = {k: F.cross_entropy(v, target, ignore_index=255) for k, v in out.items()}
    loss = losses["out"] + 0.5 * losses["aux"]
    assert math.isfinite(loss.item())
    loss.backward()
    first_conv = model.backbone["0"][0].weight
    for param in (first_conv, model.classifier[4].weight, model.aux_classifier[4].weight,
                  model.classifier[0].convs[4][1].weight):  # fmt: skip
        assert param.grad is not None
        grad = param.grad.numpy()
        assert np.isfinite(grad).all() and np.abs(grad).sum() > 0

    # ignored pixels carry no gradient to the logits
    logits = out["out"].detach().requires_grad_(True)
    F.cross_entropy(logits, target, ignore_index=255).backward()
    assert np.abs(logits.grad.numpy()[:, :, :8]).max() == 0
    assert np.abs(logits.grad.numpy()[:, :, 8:]).max() > 0


def test_deeplab_pooling_branch_needs_a_batch_in_training():
    model = _build("deeplabv3_mobilenet_v3_large", num_classes=2).train()
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        model(ember.randn(1, 3, 32, 32))
    model.eval()
    with ember.no_grad():
        assert model(ember.randn(1, 3, 32, 32))["out"].shape == (1, 2, 32, 32)


def test_lraspp_trains_with_sgd():
    model = _build("lraspp_mobilenet_v3_large", num_classes=3).train()
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.RandomState(0)
    x = ember.tensor(rng.standard_normal((2, 3, 32, 32)).astype(np.float32))
    target = ember.tensor(rng.randint(0, 3, (2, 32, 32)))
    before = {k: v.detach().numpy().copy() for k, v in model.named_parameters()}
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(x)["out"], target, ignore_index=255)
        loss.backward()
        opt.step()
    after = dict(model.named_parameters())
    assert not np.array_equal(
        before["backbone.0.0.weight"], after["backbone.0.0.weight"].detach().numpy()
    )
    assert not np.array_equal(
        before["classifier.low_classifier.weight"],
        after["classifier.low_classifier.weight"].detach().numpy(),
    )
