"""Parity with torchvision: models.video (r3d_18, mc3_18, r2plus1d_18, s3d, swin3d_t, MViT).

torchvision builds each model (weights=None), its state is randomised (unit batch-norm
statistics and zero heads would hide errors), the state_dict goes through a real
``torch.save`` file into ``ember.load`` + ``load_state_dict``, and the eval-mode outputs on the
same random clip agree to 1e-4 relative. The weights enums (members, URLs, metadata, presets)
equal torchvision's.
"""

import importlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision.models import video  # noqa: E402

tv_video = torchvision.models.video
tv_mvit = importlib.import_module("torchvision.models.video.mvit")
mvit_module = importlib.import_module("ember.vision.models.video.mvit")

# (builder name, clip shape (N, C, T, H, W))
CASES = [
    ("r3d_18", (2, 3, 4, 32, 32)),
    ("mc3_18", (1, 3, 4, 32, 32)),
    ("r2plus1d_18", (1, 3, 4, 32, 32)),
    ("swin3d_t", (1, 3, 4, 32, 32)),
    # windows padded and shifted along every axis: 9x18x16 patches in 8x7x7 windows
    ("swin3d_t", (1, 3, 18, 72, 64)),
    ("s3d", (1, 3, 13, 209, 209)),
]

WEIGHTS = [
    "R3D_18_Weights",
    "MC3_18_Weights",
    "R2Plus1D_18_Weights",
    "S3D_Weights",
    "Swin3D_T_Weights",
    "Swin3D_S_Weights",
    "Swin3D_B_Weights",
    "MViT_V1_B_Weights",
    "MViT_V2_S_Weights",
]


def _randomize(module):
    """Give every float tensor non-trivial values (zero-initialised heads, unit BN stats)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if not t.is_floating_point():
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif t.ndim == 1 and name.endswith("weight"):  # norms' scales
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            else:
                t.copy_(torch.randn(t.shape, generator=gen) * 0.1)


def _compare(ref, ours, shape, tmp_path):
    _randomize(ref)
    ref.eval()
    ours.eval()
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
    path = tmp_path / "model.pth"
    torch.save(ref_sd, path)
    result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys

    x = np.random.RandomState(1).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.tensor(x)).numpy()
    assert got.shape == expected.shape
    scale = np.abs(expected).max()
    assert scale > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{s[2]}x{s[3]}" for n, s in CASES])
def test_outputs_match_torchvision(name, shape, tmp_path):
    torch.manual_seed(0)
    ref = torchvision.models.get_model(name, weights=None)
    _compare(ref, getattr(video, name)(), shape, tmp_path)


def test_bottleneck_video_resnet_matches_torchvision(tmp_path):
    args = dict(layers=[1, 1, 1, 1], num_classes=7)
    tv_resnet = importlib.import_module("torchvision.models.video.resnet")
    our_resnet = importlib.import_module("ember.vision.models.video.resnet")

    def build(mod):
        return mod.VideoResNet(
            mod.Bottleneck, [mod.Conv3DSimple, mod.Conv3DNoTemporal, mod.Conv2Plus1D,
                             mod.Conv3DSimple], stem=mod.R2Plus1dStem, **args,
        )  # fmt: skip

    _compare(build(tv_resnet), build(our_resnet), (2, 3, 4, 16, 16), tmp_path)


# MViT at its full size takes exactly 16x224x224 clips; the same architectures on smaller
# clips: (config, MViT flags, spatial size, temporal size). 40x40 makes block 3 resample its
# relative position tables (5x5 queries, 3 rows trained for 2).
MVIT_CASES = [
    ("_MVIT_V1_B_CONFIG", (False, False, False, False), (32, 32), 4),
    ("_MVIT_V2_S_CONFIG", (True, False, True, True), (40, 40), 4),
    ("_MVIT_V2_S_CONFIG", (True, True, True, False), (36, 44), 6),
]


@pytest.mark.parametrize("config,flags,spatial,temporal", MVIT_CASES, ids=["v1_b", "v2_s", "mix"])
def test_mvit_matches_torchvision(config, flags, spatial, temporal, tmp_path):
    table = getattr(mvit_module, config)
    n = len(table["num_heads"])
    tv_setting = [tv_mvit.MSBlockConfig(**{k: v[i] for k, v in table.items()}) for i in range(n)]
    keys = ("residual_pool", "residual_with_cls_embed", "rel_pos_embed", "proj_after_attn")
    kwargs = dict(zip(keys, flags))
    ref = tv_mvit.MViT(spatial, temporal, tv_setting, **kwargs)
    ours = video.MViT(spatial, temporal, mvit_module._block_setting(table), **kwargs)
    _compare(ref, ours, (2, 3, temporal) + spatial, tmp_path)


@pytest.mark.parametrize("name", ["mvit_v1_b", "mvit_v2_s", "swin3d_s", "swin3d_b"])
def test_full_size_state_dict_layout_matches(name):
    ref = torchvision.models.get_model(name, weights=None).state_dict()
    ours = getattr(video, name)().state_dict()
    assert list(ours) == list(ref)
    for key, value in ref.items():
        assert tuple(ours[key].shape) == tuple(value.shape), key


@pytest.mark.parametrize("name", ["r3d_18", "s3d", "swin3d_t", "mvit_v2_s"])
def test_default_init_statistics_match(name):
    """Same initialisation scheme: per-tensor mean/std close to torchvision's."""
    torch.manual_seed(0)
    ref = torchvision.models.get_model(name, weights=None).state_dict()
    ember.manual_seed(0)
    ours = getattr(video, name)().state_dict()
    for key, value in ref.items():
        if not value.is_floating_point() or value.numel() < 2000:
            continue
        ours_np = ours[key].numpy()
        ref_np = value.numpy()
        assert abs(ours_np.std() - ref_np.std()) <= 0.1 * ref_np.std() + 1e-6, key
        assert abs(ours_np.mean() - ref_np.mean()) <= 0.1 * ref_np.std() + 1e-6, key


@pytest.mark.parametrize("enum_name", WEIGHTS)
def test_weights_enums_match_torchvision(enum_name):
    ours = getattr(video, enum_name)
    ref = getattr(tv_video, enum_name)
    assert list(ours.__members__) == list(ref.__members__)
    assert ours.DEFAULT.name == ref.DEFAULT.name
    for a in ours:
        b = ref[a.name]
        assert a.url == b.url
        assert a.meta == b.meta
        ta, tb = a.transforms(), b.transforms()
        assert type(ta).__name__ == type(tb).__name__ == "VideoClassification"
        assert ta.crop_size == tb.crop_size and ta.resize_size == tb.resize_size
        assert ta.mean == tb.mean and ta.std == tb.std
        assert ta.interpolation.value == tb.interpolation.value
        assert ta.describe() == tb.describe()


def test_registry_matches_torchvision():
    assert torchvision.models.list_models(module=tv_video) == ember.vision.models.list_models(
        module=video
    )


def test_video_classification_preset_matches_torchvision():
    rng = np.random.RandomState(2)
    frames = rng.randint(0, 256, size=(2, 3, 3, 30, 40)).astype(np.uint8)
    for enum_name in ("R3D_18_Weights", "Swin3D_T_Weights", "S3D_Weights"):
        ref = getattr(tv_video, enum_name).DEFAULT.transforms()
        ours = getattr(video, enum_name).DEFAULT.transforms()
        # float frames: equal up to float rounding
        floats = frames.astype(np.float32) / 255
        expected = ref(torch.from_numpy(floats)).numpy()
        got = ours(ember.tensor(floats)).numpy()
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        # uint8 frames: the resize rounds to uint8, where a value may land one level apart
        expected = ref(torch.from_numpy(frames)).numpy()
        got = ours(ember.tensor(frames)).numpy()
        one_level = 1.001 / (255 * min(ours.std))
        np.testing.assert_allclose(got, expected, rtol=0, atol=one_level)
        assert (np.abs(got - expected) > 1e-4).mean() < 1e-3
        single = ours(ember.tensor(frames[0])).numpy()
        np.testing.assert_allclose(single, got[0], rtol=1e-6)
