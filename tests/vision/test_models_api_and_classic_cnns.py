"""ember.vision.models: the registry and weights API (legacy ``pretrained`` arguments, downloads,
the hub entry point) and the classic CNNs: AlexNet, VGG, ResNet/ResNeXt/Wide ResNet, SqueezeNet.

Run with PYTHONPATH=packages/core/src:packages/nn/src:packages/hub/src:packages/vision/src.
"""

import copy
import hashlib
import http.server
import math
import pickle
import re
import warnings
from functools import partial
from importlib.metadata import entry_points

import numpy as np
import pytest
from testutils import local_http_server

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import _api, _utils, resnet, squeezenet, vgg
from ember.vision.models._api import Weights, WeightsEnum, _preset
from ember.vision.models._meta import _IMAGENET_CATEGORIES

CLASSIC_CNNS = [
    "alexnet",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
    "wide_resnet50_2", "wide_resnet101_2",
    "squeezenet1_0", "squeezenet1_1",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
]  # fmt: skip


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- registry


def test_list_models_registers_every_classic_cnn_builder():
    names = models.list_models()
    assert names == sorted(names)
    assert set(CLASSIC_CNNS) <= set(names)
    for name in CLASSIC_CNNS:
        assert models.get_model_builder(name) is getattr(models, name)


def test_list_models_filters():
    assert models.list_models(include="vgg1?") == ["vgg11", "vgg13", "vgg16", "vgg19"]
    assert models.list_models(include=["vgg1?", "alex*"]) == [
        "alexnet", "vgg11", "vgg13", "vgg16", "vgg19",
    ]  # fmt: skip
    assert models.list_models(include="vgg*", exclude=["*_bn", "vgg1[39]"]) == ["vgg11", "vgg16"]
    assert "resnet18" in models.list_models(module=models)
    assert models.list_models(module=nn) == []


def test_get_model_and_builder():
    m = models.get_model("SqueezeNet1_1", num_classes=7)
    assert isinstance(m, squeezenet.SqueezeNet)
    assert m.classifier[1].out_channels == 7
    with pytest.raises(ValueError, match="Unknown model nope"):
        models.get_model("nope")


def test_register_model_rejects_duplicates(monkeypatch):
    monkeypatch.setattr(_api, "BUILTIN_MODELS", dict(_api.BUILTIN_MODELS))
    with pytest.raises(
        ValueError, match="An entry is already registered under the name 'resnet18'"
    ):
        _api.register_model("resnet18")(lambda: None)

    @_api.register_model("my_model")
    def builder():
        return "built"

    assert _api.get_model("MY_MODEL") == "built"


def test_get_model_weights_and_get_weight():
    assert models.get_model_weights("resnet18") is models.ResNet18_Weights
    assert models.get_model_weights(models.vgg16_bn) is models.VGG16_BN_Weights
    assert (
        models.get_weight("ResNet50_Weights.IMAGENET1K_V2") is models.ResNet50_Weights.IMAGENET1K_V2
    )
    assert models.get_weight("VGG16_Weights.DEFAULT") is models.VGG16_Weights.IMAGENET1K_V1
    with pytest.raises(ValueError, match="Invalid weight name provided: 'resnet18'."):
        models.get_weight("resnet18")
    with pytest.raises(ValueError, match="The weight enum 'Nope_Weights'"):
        models.get_weight("Nope_Weights.V1")
    with pytest.raises(ValueError, match="missing the 'weights' argument"):
        models.get_model_weights(lambda x: x)


# ----------------------------------------------------------------------------- weights


ALL_ENUMS = [models.get_model_weights(name) for name in CLASSIC_CNNS]


@pytest.mark.parametrize("enum", ALL_ENUMS, ids=lambda e: e.__name__)
def test_weights_enums_are_well_formed(enum):
    assert enum.DEFAULT in list(enum)
    for w in enum:
        assert isinstance(w.value, Weights)
        assert re.fullmatch(
            r"https://download\.pytorch\.org/models/[\w.-]+-[0-9a-f]{8,}\.pth", w.url
        )
        meta = w.meta
        for key in ("num_params", "recipe", "_metrics", "_ops", "_file_size", "_docs"):
            assert key in meta
        if meta["categories"] is not None:
            assert meta["categories"] is _IMAGENET_CATEGORIES
        assert repr(w) == f"{enum.__name__}.{w.name}"
        assert w.transforms.keywords["crop_size"] == 224


def test_weights_values_and_aliases():
    w = models.ResNet50_Weights
    assert w.DEFAULT is w.IMAGENET1K_V2
    assert w.IMAGENET1K_V1.url == "https://download.pytorch.org/models/resnet50-0676ba61.pth"
    assert w.IMAGENET1K_V2.meta["num_params"] == 25557032
    assert w.IMAGENET1K_V2.meta["_metrics"]["ImageNet-1K"]["acc@1"] == 80.858
    assert list(w.__members__) == ["IMAGENET1K_V1", "IMAGENET1K_V2", "DEFAULT"]
    feats = models.VGG16_Weights.IMAGENET1K_FEATURES
    assert feats.meta["categories"] is None
    assert math.isnan(feats.meta["_metrics"]["ImageNet-1K"]["acc@1"])
    assert feats.transforms.keywords["std"] == (1.0 / 255.0,) * 3


def test_weights_transforms_is_a_preset_partial():
    t = models.ResNet50_Weights.IMAGENET1K_V2.transforms
    assert isinstance(t, partial)
    assert t.func.__name__ == "ImageClassification"
    assert t.keywords == {"crop_size": 224, "resize_size": 232}
    preset = t()
    out = preset(ember.rand(3, 300, 260))
    assert tuple(out.shape) == (3, 224, 224)
    assert out.dtype == ember.float32


def test_weights_verify():
    E = models.ResNet18_Weights
    assert E.verify(None) is None
    assert E.verify("IMAGENET1K_V1") is E.IMAGENET1K_V1
    assert E.verify("ResNet18_Weights.DEFAULT") is E.IMAGENET1K_V1
    assert E.verify(E.IMAGENET1K_V1) is E.IMAGENET1K_V1
    with pytest.raises(KeyError):
        E.verify("IMAGENET1K_V9")
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received ResNet34_Weights"):
        E.verify(models.ResNet34_Weights.IMAGENET1K_V1)


def test_weights_copy_and_pickle_round_trip():
    w = models.VGG16_Weights.IMAGENET1K_V1
    assert copy.deepcopy(w) is w
    assert pickle.loads(pickle.dumps(w)) is w
    assert copy.deepcopy(w.value) == w.value
    assert w.value != models.VGG16_Weights.IMAGENET1K_FEATURES.value
    assert _preset("ImageClassification", crop_size=224) == _preset(
        "ImageClassification", crop_size=224
    )


def test_imagenet_categories():
    assert len(_IMAGENET_CATEGORIES) == 1000
    assert _IMAGENET_CATEGORIES[:3] == ["tench", "goldfish", "great white shark"]
    assert _IMAGENET_CATEGORIES[281] == "tabby"
    assert _IMAGENET_CATEGORIES[967] == "espresso"
    assert _IMAGENET_CATEGORIES[638:640] == ["maillot", "maillot tank suit"]
    assert all(name and name == name.strip() for name in _IMAGENET_CATEGORIES)


# ----------------------------------------------------------------------------- legacy interface


def test_legacy_pretrained_false_warns_and_builds():
    with pytest.warns(UserWarning) as record:
        m = models.resnet18(pretrained=False, num_classes=3)
    assert m.fc.out_features == 3
    assert [str(r.message) for r in record] == [
        "The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, "
        "please use 'weights' instead.",
        "Arguments other than a weight enum or `None` for 'weights' are deprecated since 0.13 "
        "and may be removed in the future. The current behavior is equivalent to passing "
        "`weights=None`.",
    ]
    with pytest.warns(UserWarning) as record:
        m = models.squeezenet1_1(False)
    assert isinstance(m, squeezenet.SqueezeNet)
    assert str(record[0].message).startswith("Using 'weights' as positional parameter(s) is dep")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        models.alexnet(weights=None)


def fake_hub(monkeypatch, make_state_dict):
    import ember.hub as hub

    calls = []

    def load_state_dict_from_url(url, *args, **kwargs):
        calls.append((url, args, kwargs))
        return make_state_dict()

    monkeypatch.setattr(hub, "load_state_dict_from_url", load_state_dict_from_url, raising=False)
    return calls


def test_weights_load_through_hub(monkeypatch):
    ref = models.squeezenet1_1()
    calls = fake_hub(monkeypatch, ref.state_dict)
    m = models.squeezenet1_1(weights="IMAGENET1K_V1", progress=False)
    assert calls == [
        (
            models.SqueezeNet1_1_Weights.IMAGENET1K_V1.url,
            (),
            {"progress": False, "check_hash": True},
        )
    ]
    for k, v in ref.state_dict().items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())


def test_legacy_pretrained_true_uses_default_weights(monkeypatch):
    calls = fake_hub(monkeypatch, lambda: models.squeezenet1_0().state_dict())
    with pytest.warns(UserWarning) as record:
        models.squeezenet1_0(pretrained=True)
    messages = [str(r.message) for r in record]
    assert any("The parameter 'pretrained' is deprecated" in m for m in messages)
    assert any(
        "equivalent to passing `weights=SqueezeNet1_0_Weights.IMAGENET1K_V1`. You can also use "
        "`weights=SqueezeNet1_0_Weights.DEFAULT`" in m
        for m in messages
    )
    assert calls[0][0] == models.SqueezeNet1_0_Weights.IMAGENET1K_V1.url


def test_weights_fix_num_classes():
    with pytest.raises(
        ValueError, match="The parameter 'num_classes' expected value 1000 but got 10 instead."
    ):
        models.resnet18(weights=models.ResNet18_Weights.DEFAULT, num_classes=10)
    with pytest.raises(ValueError, match="The parameter 'groups' expected value 32 but got 2"):
        models.resnext50_32x4d(groups=2)


def test_get_state_dict_downloads_from_a_local_server(tmp_path, monkeypatch):
    """The real downloader: a checkpoint served on 127.0.0.1, its sha256 prefix checked."""
    import ember.hub as hub

    ref = models.squeezenet1_1(num_classes=5)
    served = tmp_path / "served"
    served.mkdir()
    path = served / "tmp.pth"
    ember.save(ref.state_dict(), str(path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.rename(served / f"squeezenet-{digest[:8]}.pth")

    class QuietFileHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    with local_http_server(partial(QuietFileHandler, directory=str(served))) as server:

        class Local_Weights(WeightsEnum):
            V1 = Weights(
                url=f"{server.url}/squeezenet-{digest[:8]}.pth",
                transforms=_preset("ImageClassification", crop_size=224),
                meta={"categories": list("abcde")},
            )

        monkeypatch.setattr(hub, "get_dir", lambda: str(tmp_path / "hub"), raising=False)
        model = squeezenet._squeezenet("1_1", Local_Weights.V1, progress=False)
    assert model.num_classes == 5
    for k, v in ref.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[k].numpy(), v.numpy())
    assert (tmp_path / "hub" / "checkpoints" / f"squeezenet-{digest[:8]}.pth").exists()


# ----------------------------------------------------------------------------- architectures


@pytest.mark.parametrize(
    "name, size",
    [("resnet18", 32), ("resnet50", 32), ("resnext50_32x4d", 32), ("wide_resnet50_2", 32),
     ("squeezenet1_0", 32), ("squeezenet1_1", 32), ("alexnet", 64)],
)  # fmt: skip
def test_num_params_and_forward(name, size):
    model = models.get_model(name)
    assert n_params(model) == models.get_model_weights(name).DEFAULT.meta["num_params"]
    model.eval()
    with ember.no_grad():
        out = model(ember.randn(2, 3, size, size))
    assert tuple(out.shape) == (2, 1000)
    assert out.dtype == ember.float32


def test_vgg_builders_use_torchvision_configurations(monkeypatch):
    # Building a VGG classifier takes seconds (a 25088x4096 Linear): record the features
    # each builder makes and count the classifier analytically instead.
    built = {}

    def fake_vgg(features, **kwargs):
        built["features"], built["kwargs"] = features, kwargs
        return "vgg"

    monkeypatch.setattr(vgg, "VGG", fake_vgg)
    classifier = 25088 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 1000 + 1000
    for depth in (11, 13, 16, 19):
        for bn in ("", "_bn"):
            name = f"vgg{depth}{bn}"
            assert models.get_model(name) == "vgg"
            feats = built["features"]
            convs = [m for m in feats if isinstance(m, nn.Conv2d)]
            assert len(convs) == depth - 3
            assert any(isinstance(m, nn.BatchNorm2d) for m in feats) == bool(bn)
            expected = models.get_model_weights(name).IMAGENET1K_V1.meta["num_params"]
            assert n_params(feats) + classifier == expected


def test_vgg_forward_and_init():
    ember.manual_seed(0)
    model = vgg.VGG(vgg.make_layers([8, "M", 16, "M"], batch_norm=True), num_classes=10)
    # make_layers builds 3 -> 8 -> 16 channels; the classifier expects 512 * 7 * 7 inputs.
    assert model.classifier[0].in_features == 512 * 7 * 7
    lin = model.classifier[0]
    assert float(lin.bias.abs().max()) == 0.0
    assert abs(float(lin.weight.std()) - 0.01) < 1e-3
    bn = model.features[1]
    assert float(bn.weight.min()) == 1.0 and float(bn.bias.abs().max()) == 0.0
    features_only = model.features.eval()
    assert tuple(features_only(ember.randn(1, 3, 16, 16)).shape) == (1, 16, 4, 4)


def test_resnet_default_init():
    ember.manual_seed(0)
    model = models.resnet18()
    w = model.layer3[0].conv1.weight  # 256 out channels, 3x3: fan_out = 256 * 9
    assert abs(float(w.std()) - math.sqrt(2.0 / (256 * 9))) < 2e-3
    assert float(model.bn1.weight.min()) == 1.0 and float(model.bn1.bias.abs().max()) == 0.0
    assert float(model.layer1[0].bn2.weight.min()) == 1.0
    zero = models.resnet18(zero_init_residual=True)
    assert float(zero.layer1[0].bn2.weight.abs().max()) == 0.0
    assert float(zero.layer1[0].bn1.weight.min()) == 1.0
    zero50 = models.resnet50(zero_init_residual=True)
    assert float(zero50.layer2[1].bn3.weight.abs().max()) == 0.0


def test_resnet_module_names_and_shapes():
    sd = models.resnet18().state_dict()
    assert list(sd)[:6] == [
        "conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
        "bn1.num_batches_tracked",
    ]  # fmt: skip
    assert tuple(sd["layer2.0.downsample.0.weight"].shape) == (128, 64, 1, 1)
    assert tuple(sd["fc.weight"].shape) == (1000, 512)
    assert sd["bn1.num_batches_tracked"].dtype == ember.int64
    assert "layer1.0.downsample.0.weight" not in sd
    wide = models.wide_resnet50_2()
    assert tuple(wide.layer1[0].conv2.weight.shape) == (128, 128, 3, 3)
    rx = models.resnext50_32x4d()
    assert rx.layer1[0].conv2.groups == 32
    assert tuple(rx.layer1[0].conv2.weight.shape) == (128, 4, 3, 3)


def test_resnet_dilation():
    model = models.resnet50(replace_stride_with_dilation=[False, True, True]).eval()
    assert model.layer4[0].conv2.dilation == (2, 2)
    assert model.layer4[1].conv2.dilation == (4, 4)
    body = _utils.IntermediateLayerGetter(model, {"layer1": "a", "layer4": "b"})
    with ember.no_grad():
        out = body(ember.randn(1, 3, 64, 64))
    assert list(out) == ["a", "b"]
    assert tuple(out["a"].shape) == (1, 256, 16, 16)
    assert tuple(out["b"].shape) == (1, 2048, 8, 8)
    assert "fc" not in dict(body.named_children())
    with pytest.raises(ValueError, match="return_layers are not present in model"):
        _utils.IntermediateLayerGetter(model, {"nope": "x"})


def test_resnet_errors():
    with pytest.raises(ValueError, match="replace_stride_with_dilation should be None or a 3-elem"):
        models.resnet18(replace_stride_with_dilation=[True])
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1 and base_width=64"):
        resnet.BasicBlock(8, 8, groups=2)
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 2_0: 1_0 or 1_1 expected"):
        squeezenet.SqueezeNet("2_0")


def test_resnet_trains():
    ember.manual_seed(0)
    model = models.resnet18(num_classes=4)
    model.train()
    x = ember.randn(2, 3, 32, 32)
    loss = nn.functional.cross_entropy(model(x), ember.tensor([1, 3]))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.shape == p.shape
    assert int(model.bn1.num_batches_tracked) == 1


def test_squeezenet_init_and_structure():
    ember.manual_seed(0)
    m = models.squeezenet1_0(num_classes=10)
    final = m.classifier[1]
    assert abs(float(final.weight.std()) - 0.01) < 3e-3
    assert float(final.bias.abs().max()) == 0.0
    fire = m.features[3]
    assert fire.inplanes == 96
    assert (fire.expand1x1.out_channels, fire.expand3x3.out_channels) == (64, 64)
    assert m.features[2].ceil_mode is True


def test_make_divisible():
    assert _utils._make_divisible(32 * 0.75, 8) == 24
    assert _utils._make_divisible(37, 8) == 40
    assert _utils._make_divisible(10, 8) == 16  # 8 would lose more than 10%
    assert _utils._make_divisible(3, 8, min_value=4) == 4


# ----------------------------------------------------------------------------- hub entry point


def test_hubconf_exposes_every_registered_builder():
    from ember.vision import hubconf

    assert hubconf.dependencies == ["ember"]
    for name in models.list_models():
        assert getattr(hubconf, name) is models.get_model_builder(name)
    eps = [ep for ep in entry_points(group="ember.hub") if ep.name == "vision"]
    assert len(eps) == 1 and eps[0].value == "ember.vision.hubconf"
    assert eps[0].load() is hubconf
