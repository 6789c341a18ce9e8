"""Parity of ember.vision.models with torchvision 0.29 (oracle, test-only): the classic CNNs
(AlexNet, VGG, ResNet/ResNeXt/Wide ResNet, SqueezeNet) end to end, the registry and the weights
enums.

Run with /work/tvenv/bin/python and
PYTHONPATH=packages/core/src:packages/nn/src:packages/hub/src:packages/vision/src.
"""

import gc
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models._meta import _IMAGENET_CATEGORIES  # noqa: E402

pytestmark = pytest.mark.parity

CLASSIC_CNNS = [
    "alexnet",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
    "wide_resnet50_2", "wide_resnet101_2",
    "squeezenet1_0", "squeezenet1_1",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
]  # fmt: skip

# Models not in torchvision: EfficientNet-Lite0 (efficientnet_pytorch's layout).
NOT_IN_TORCHVISION = {"efficientnet_lite0"}


def tv_repr(module) -> str:
    return repr(module).replace("torchvision.", "ember.vision.").replace("torch.", "ember.")


def copy_state(tv_model, em_model):
    """Copy torchvision's state_dict through NumPy; keys, order and shapes must be equal."""
    tv_sd = tv_model.state_dict()
    em_sd = em_model.state_dict()
    assert list(em_sd) == list(tv_sd)
    for k, v in tv_sd.items():
        assert tuple(em_sd[k].shape) == tuple(v.shape), k
        assert str(em_sd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k
    em_model.load_state_dict(
        {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tv_sd.items()}
    )


def compare_outputs(tv_model, em_model, shape, seed=0):
    x = np.random.RandomState(seed).standard_normal(shape).astype(np.float32)
    tv_model.eval()
    em_model.eval()
    with torch.no_grad():
        expected = tv_model(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = em_model(ember.tensor(x)).numpy()
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    scale = np.abs(expected).max()
    assert np.abs(got - expected).max() <= 1e-4 * scale + 1e-6


# Every classic CNN is compared end to end: same module tree (repr), same state_dict
# (keys, order, shapes, dtypes), same eval-mode output on torchvision's weights. Inputs are
# small; AlexNet and VGG reach their classifiers through the adaptive average pool. The
# largest models (VGG's 25088x4096 classifier, the 100+-layer ResNets) take seconds each and
# are marked slow (CI still runs them).
def case(name, shape, slow=False):
    return pytest.param(name, shape, id=name, marks=[pytest.mark.slow] if slow else [])


FORWARD = [
    case("alexnet", (2, 3, 64, 64)),
    case("resnet18", (2, 3, 32, 32)),
    case("resnet34", (1, 3, 32, 32)),
    case("resnet50", (1, 3, 32, 32)),
    case("resnet101", (1, 3, 32, 32)),
    case("resnet152", (1, 3, 32, 32), slow=True),
    case("resnext50_32x4d", (1, 3, 32, 32)),
    case("resnext101_32x8d", (1, 3, 32, 32), slow=True),
    case("resnext101_64x4d", (1, 3, 32, 32), slow=True),
    case("wide_resnet50_2", (1, 3, 32, 32)),
    case("wide_resnet101_2", (1, 3, 32, 32), slow=True),
    case("squeezenet1_0", (2, 3, 32, 32)),
    case("squeezenet1_1", (2, 3, 32, 32)),
    case("vgg11", (1, 3, 32, 32), slow=True),
    case("vgg11_bn", (1, 3, 32, 32)),
    case("vgg13", (1, 3, 32, 32), slow=True),
    case("vgg13_bn", (1, 3, 32, 32), slow=True),
    case("vgg16", (1, 3, 32, 32), slow=True),
    case("vgg16_bn", (1, 3, 32, 32), slow=True),
    case("vgg19", (1, 3, 32, 32), slow=True),
    case("vgg19_bn", (1, 3, 32, 32), slow=True),
]


def test_forward_covers_every_classic_cnn():
    assert [p.id for p in FORWARD] == CLASSIC_CNNS


@pytest.mark.parametrize("name, shape", FORWARD)
def test_model_matches_torchvision(name, shape):
    torch.manual_seed(0)
    tv_model = torchvision.models.get_model(name)
    em_model = models.get_model(name)
    try:
        assert tv_repr(tv_model) == repr(em_model)
        copy_state(tv_model, em_model)
        compare_outputs(tv_model, em_model, shape)
    finally:
        # The large models hold hundreds of MB each (twice, one per framework): free them
        # before the next parameter is built.
        del tv_model, em_model
        gc.collect()


def test_resnet_zero_init_residual_like_torchvision():
    tv_model = torchvision.models.resnet50(zero_init_residual=True)
    em_model = models.resnet50(zero_init_residual=True)
    for k, v in tv_model.state_dict().items():
        if "bn" in k or "downsample.1" in k:
            np.testing.assert_array_equal(em_model.state_dict()[k].numpy(), v.numpy(), err_msg=k)


# ----------------------------------------------------------------------------- registry


def test_list_models_subset_of_torchvision():
    ours = set(models.list_models())
    theirs = set(torchvision.models.list_models())
    assert set(CLASSIC_CNNS) <= ours
    assert ours - NOT_IN_TORCHVISION <= theirs
    assert models.list_models(include="resnet*") == [
        n for n in torchvision.models.list_models(include="resnet*") if n in ours
    ]


def same_meta_value(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_meta_value(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("name", CLASSIC_CNNS)
def test_weights_enum_matches_torchvision(name):
    tv_enum = torchvision.models.get_model_weights(name)
    em_enum = models.get_model_weights(name)
    assert em_enum.__name__ == tv_enum.__name__
    assert list(em_enum.__members__) == list(tv_enum.__members__)
    for member, tv_w in tv_enum.__members__.items():
        em_w = em_enum[member]
        assert em_w.name == tv_w.name  # aliases point at the same member
        assert repr(em_w) == repr(tv_w)
        assert em_w.url == tv_w.url
        tv_meta, em_meta = dict(tv_w.meta), dict(em_w.meta)
        tv_cats, em_cats = tv_meta.pop("categories"), em_meta.pop("categories")
        assert em_meta.keys() == tv_meta.keys()
        for key in tv_meta:
            assert same_meta_value(em_meta[key], tv_meta[key]), key
        assert (em_cats is None) == (tv_cats is None)
        if tv_cats is not None:
            assert em_cats is _IMAGENET_CATEGORIES
        tv_t, em_t = tv_w.transforms, em_w.transforms
        assert em_t.func.__name__ == tv_t.func.__name__
        assert em_t.args == tv_t.args
        assert em_t.keywords == tv_t.keywords


def test_imagenet_categories_match_torchvision():
    from torchvision.models._meta import _IMAGENET_CATEGORIES as tv_categories

    assert len(_IMAGENET_CATEGORIES) == len(tv_categories) == 1000
    diffs = {
        i: (a, b) for i, (a, b) in enumerate(zip(_IMAGENET_CATEGORIES, tv_categories)) if a != b
    }
    # Documented in models/ATTRIBUTION.md: timm's lemmas for n02012849 are only "crane".
    assert diffs == {134: ("crane", "crane bird")}


def test_weights_preset_matches_torchvision_preset():
    tv_preset = torchvision.models.ResNet50_Weights.IMAGENET1K_V2.transforms()
    em_preset = models.ResNet50_Weights.IMAGENET1K_V2.transforms()
    assert repr(em_preset) == repr(tv_preset)


def test_legacy_warnings_match_torchvision():
    def messages(builder, *args, **kwargs):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            builder(*args, **kwargs)
        return [str(r.message) for r in record]

    assert messages(models.squeezenet1_1, pretrained=False) == messages(
        torchvision.models.squeezenet1_1, pretrained=False
    )
    assert messages(models.squeezenet1_1, False) == messages(
        torchvision.models.squeezenet1_1, False
    )
    with pytest.raises(TypeError) as em_err:
        models.squeezenet1_1(weights=models.ResNet18_Weights.DEFAULT)
    with pytest.raises(TypeError) as tv_err:
        torchvision.models.squeezenet1_1(weights=torchvision.models.ResNet18_Weights.DEFAULT)
    assert str(em_err.value) == str(tv_err.value)
