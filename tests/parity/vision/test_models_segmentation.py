"""Parity with torchvision: models.segmentation (FCN, DeepLabV3, LRASPP).

torchvision builds each model (weights=None, weights_backbone=None), its state is randomised
(BN statistics and affine parameters, biases), its state_dict goes through a real
``torch.save`` file into ``ember.load`` + ``load_state_dict``, and the eval-mode outputs
(``"out"`` and ``"aux"``) on the same random input agree to 1e-4 relative. The weights enums
(members, URLs, metadata, transforms) and the registry agree with torchvision's.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models import segmentation  # noqa: E402

tv_segmentation = torchvision.models.segmentation

# (builder name, builder kwargs)
CASES = [
    ("fcn_resnet50", {"aux_loss": True}),
    ("deeplabv3_resnet50", {"aux_loss": True}),
    ("deeplabv3_mobilenet_v3_large", {"aux_loss": True}),
    ("deeplabv3_mobilenet_v3_large", {"num_classes": 5}),
    ("lraspp_mobilenet_v3_large", {}),
]

BUILDERS = [
    "fcn_resnet50",
    "fcn_resnet101",
    "deeplabv3_resnet50",
    "deeplabv3_resnet101",
    "deeplabv3_mobilenet_v3_large",
    "lraspp_mobilenet_v3_large",
]

WEIGHTS = [
    "FCN_ResNet50_Weights",
    "FCN_ResNet101_Weights",
    "DeepLabV3_ResNet50_Weights",
    "DeepLabV3_ResNet101_Weights",
    "DeepLabV3_MobileNet_V3_Large_Weights",
    "LRASPP_MobileNet_V3_Large_Weights",
]


def _randomize(module):
    """Give every BN non-trivial statistics and affine parameters and every conv bias non-zero
    values (torchvision initialises them to unit / zero)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, torch.nn.Conv2d) and m.bias is not None:
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def _build_both(name, kwargs):
    torch.manual_seed(0)
    ref = getattr(tv_segmentation, name)(weights=None, weights_backbone=None, **kwargs)
    ours = getattr(segmentation, name)(weights=None, weights_backbone=None, **kwargs)
    return ref, ours


def _assert_same_layout(ref, ours):
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key


@pytest.mark.parametrize(
    "name,kwargs", CASES, ids=[f"{n}-{'-'.join(map(str, k.items()))}" for n, k in CASES]
)
def test_outputs_match_torchvision(name, kwargs, tmp_path):
    ref, ours = _build_both(name, kwargs)
    _randomize(ref)
    ref.eval()
    ours.eval()
    _assert_same_layout(ref, ours)
    path = tmp_path / f"{name}.pth"
    torch.save(ref.state_dict(), path)
    result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys

    x = np.random.RandomState(1).standard_normal((1, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x))
    with ember.no_grad():
        got = ours(ember.tensor(x))
    assert list(got) == list(expected)
    assert list(got) == (["out", "aux"] if kwargs.get("aux_loss") else ["out"])
    for key, value in expected.items():
        value = value.numpy()
        assert tuple(got[key].shape) == value.shape == (1, kwargs.get("num_classes", 21), 64, 64)
        scale = np.abs(value).max()
        assert scale > 0
        np.testing.assert_allclose(got[key].numpy(), value, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", ["fcn_resnet101", "deeplabv3_resnet101"])
@pytest.mark.parametrize("aux_loss", [None, True])
def test_resnet101_state_dict_layout_matches(name, aux_loss):
    ref, ours = _build_both(name, {"aux_loss": aux_loss})
    _assert_same_layout(ref, ours)


def test_module_tree_matches():
    """Same submodule names and classes (FCNHead, DeepLabHead, ASPP, ASPPConv, ASPPPooling,
    LRASPPHead, IntermediateLayerGetter, ...)."""
    for name in ("deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"):
        kwargs = {"aux_loss": True} if name.startswith("deeplab") else {}
        ref, ours = _build_both(name, kwargs)
        ref_tree = [(n, type(m).__name__) for n, m in ref.named_modules()]
        our_tree = [(n, type(m).__name__) for n, m in ours.named_modules()]
        assert our_tree == ref_tree


def test_registry_matches_torchvision():
    assert models.list_models(module=segmentation) == torchvision.models.list_models(
        module=tv_segmentation
    )
    assert models.list_models(module=segmentation) == sorted(BUILDERS)
    # builders stay out of the top-level namespace, as in torchvision
    for name in BUILDERS:
        assert hasattr(models, name) == hasattr(torchvision.models, name)
    public = {n for n in dir(tv_segmentation) if not n.startswith("_") and n[0].isupper()}
    public |= set(BUILDERS)
    assert public <= set(dir(segmentation))


@pytest.mark.parametrize("enum_name", WEIGHTS)
def test_weights_enums_match_torchvision(enum_name):
    ours = getattr(segmentation, enum_name)
    ref = getattr(tv_segmentation, enum_name)
    assert [m.name for m in ours] == [m.name for m in ref]
    assert ours.DEFAULT.name == ref.DEFAULT.name
    assert list(ours.__members__) == list(ref.__members__)
    for a, b in zip(ours, ref):
        assert a.url == b.url
        assert a.meta == b.meta
        ta, tb = a.transforms(), b.transforms()
        assert type(ta).__name__ == type(tb).__name__ == "SemanticSegmentation"
        assert ta.resize_size == tb.resize_size
        assert ta.mean == tb.mean and ta.std == tb.std
        assert ta.interpolation.value == tb.interpolation.value
        assert ta.antialias == tb.antialias
        assert repr(ta) == repr(tb)
        assert ta.describe() == tb.describe()
    assert models.get_weight(f"{enum_name}.DEFAULT") is ours.DEFAULT
    builder = BUILDERS[WEIGHTS.index(enum_name)]
    assert models.get_model_weights(builder) is ours


def test_semantic_segmentation_preset_matches_torchvision():
    ours = segmentation.FCN_ResNet50_Weights.DEFAULT.transforms()
    ref = tv_segmentation.FCN_ResNet50_Weights.DEFAULT.transforms()
    img = np.random.RandomState(0).randint(0, 256, (3, 30, 40), dtype=np.uint8)
    for x, atol in ((img.astype(np.float32) / 255, 1e-4), (img, 1.01 / 255 / 0.224)):
        got = ours(ember.tensor(x)).numpy()
        expected = ref(torch.from_numpy(x)).numpy()
        assert got.shape == expected.shape == (3, 520, 693)
        # uint8 images resize in uint8: a rounding may differ by one level
        np.testing.assert_allclose(got, expected, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "call,kwargs",
    [
        ("fcn_resnet50", {"weights": "DEFAULT", "num_classes": 10}),
        ("deeplabv3_mobilenet_v3_large", {"weights": "DEFAULT", "aux_loss": False}),
        ("lraspp_mobilenet_v3_large", {"weights_backbone": None, "aux_loss": True}),
        ("fcn_resnet50", {"weights": "ResNet50_Weights.DEFAULT"}),
        ("deeplabv3_resnet50", {"weights_backbone": models.ResNet101_Weights.DEFAULT}),
    ],
)
def test_argument_errors_match_torchvision(call, kwargs):
    """Checked before anything is downloaded: same exception type and message."""
    with pytest.raises(Exception) as ref_err:
        getattr(tv_segmentation, call)(
            **{
                k: getattr(torchvision.models, v.__class__.__name__)[v.name]
                if hasattr(v, "name")
                else v
                for k, v in kwargs.items()
            }
        )
    with pytest.raises(type(ref_err.value)) as our_err:
        getattr(segmentation, call)(**kwargs)
    assert str(our_err.value) == str(ref_err.value)
