"""Video classification models (ember.vision.models.video): video ResNets, S3D, Video Swin
Transformer and MViT. Shapes on small clips, structure and state_dict layout, parameter counts
against the checkpoints' metadata, gradients through a training step, the registry, the
weights enums, the VideoClassification preset and errors.

Values against torchvision are in tests/parity/vision/test_models_video.py.
"""

import importlib
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import video
from ember.vision.models.video._presets import VideoClassification

# (``video.s3d`` is the builder: the modules are reached by name)
mvit_module = importlib.import_module("ember.vision.models.video.mvit")
resnet_module = importlib.import_module("ember.vision.models.video.resnet")
s3d_module = importlib.import_module("ember.vision.models.video.s3d")
swin3d_module = importlib.import_module("ember.vision.models.video.swin_transformer")
RNG = np.random.RandomState(0)

BUILDERS = {
    "mc3_18": video.MC3_18_Weights,
    "mvit_v1_b": video.MViT_V1_B_Weights,
    "mvit_v2_s": video.MViT_V2_S_Weights,
    "r2plus1d_18": video.R2Plus1D_18_Weights,
    "r3d_18": video.R3D_18_Weights,
    "s3d": video.S3D_Weights,
    "swin3d_b": video.Swin3D_B_Weights,
    "swin3d_s": video.Swin3D_S_Weights,
    "swin3d_t": video.Swin3D_T_Weights,
}


def _clip(*shape):
    return ember.tensor(RNG.standard_normal(shape).astype(np.float32))


def _num_params(model):
    return sum(p.numel() for p in model.parameters())


def _train_step(model, x, num_classes):
    """One SGD step on a cross-entropy loss: every parameter gets a finite, not-all-zero
    gradient (unless listed in ``unused``) and the loss changes."""
    model.train()
    target = ember.tensor(np.arange(x.shape[0]) % num_classes)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    loss = nn.functional.cross_entropy(model(x), target)
    opt.zero_grad()
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None for g in grads.values()), [n for n, g in grads.items() if g is None]
    for name, g in grads.items():
        assert np.isfinite(g.detach().numpy()).all(), name
    opt.step()
    with ember.no_grad():
        after = nn.functional.cross_entropy(model(x), target)
    assert float(after) != float(loss)
    return grads


# -- video ResNets ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["r3d_18", "mc3_18", "r2plus1d_18"])
def test_video_resnets_shapes_params_and_keys(name):
    model = getattr(video, name)().eval()
    assert _num_params(model) == BUILDERS[name].DEFAULT.meta["num_params"]
    keys = list(model.state_dict())
    assert keys[:3] == ["stem.0.weight", "stem.1.weight", "stem.1.bias"]
    assert keys[-2:] == ["fc.weight", "fc.bias"]
    assert len(keys) == {"r3d_18": 122, "mc3_18": 122, "r2plus1d_18": 224}[name]
    assert "layer2.0.downsample.0.weight" in keys and "layer1.0.downsample.0.weight" not in keys
    with ember.no_grad():
        out = model(_clip(1, 3, 2, 16, 16))
    assert tuple(out.shape) == (1, 400)
    assert np.isfinite(out.detach().numpy()).all()


def test_video_resnet_structure():
    mc3 = video.mc3_18()
    # full 3-d convolutions in layer1 only; spatial-only ones (and spatial downsampling) above
    assert isinstance(mc3.layer1[0].conv1[0], resnet_module.Conv3DSimple)
    assert mc3.layer1[0].conv1[0].kernel_size == (3, 3, 3)
    assert isinstance(mc3.layer3[1].conv2[0], resnet_module.Conv3DNoTemporal)
    assert mc3.layer3[0].conv1[0].kernel_size == (1, 3, 3)
    assert mc3.layer3[0].conv1[0].stride == (1, 2, 2)
    assert mc3.layer3[0].downsample[0].stride == (1, 2, 2)

    r21 = video.r2plus1d_18()
    conv = r21.layer2[0].conv1[0]
    assert isinstance(conv, resnet_module.Conv2Plus1D)
    # midplanes = 64*128*27 // (64*9 + 3*128) = 230
    assert conv[0].weight.shape == (230, 64, 1, 3, 3)
    assert conv[3].weight.shape == (128, 230, 3, 1, 1)
    assert conv[0].stride == (1, 2, 2) and conv[3].stride == (2, 1, 1)
    assert r21.layer2[0].downsample[0].stride == (2, 2, 2)
    assert isinstance(r21.stem, resnet_module.R2Plus1dStem)
    assert r21.stem[0].weight.shape == (45, 3, 1, 7, 7)


def test_video_resnet_default_init():
    ember.manual_seed(0)
    model = video.r3d_18(num_classes=10)
    w = model.layer3[0].conv1[0].weight.detach().numpy()
    # kaiming normal, fan_out, relu: std sqrt(2 / (256 * 27))
    assert abs(w.std() - np.sqrt(2 / (256 * 27))) < 0.05 * np.sqrt(2 / (256 * 27))
    assert (model.layer1[0].conv1[1].weight.detach().numpy() == 1).all()
    assert (model.layer1[0].conv1[1].bias.detach().numpy() == 0).all()
    assert abs(model.fc.weight.detach().numpy().std() - 0.01) < 0.002
    assert (model.fc.bias.detach().numpy() == 0).all()


def test_video_resnet_bottleneck_and_training_step():
    model = resnet_module.VideoResNet(
        resnet_module.Bottleneck,
        [resnet_module.Conv2Plus1D] * 4,
        [1, 1, 1, 1],
        resnet_module.R2Plus1dStem,
        num_classes=3,
    )
    assert model.fc.in_features == 2048
    assert model.layer1[0].downsample is not None  # 64 -> 256 channels at stride 1
    x = _clip(2, 3, 2, 8, 8)
    assert tuple(model(x).shape) == (2, 3)
    grads = _train_step(model, x, 3)
    assert np.abs(grads["layer4.0.conv2.0.3.weight"].detach().numpy()).sum() > 0
    # torchvision's zero_init_residual looks for Bottleneck.bn3, which does not exist
    with pytest.raises(AttributeError, match="bn3"):
        resnet_module.VideoResNet(
            resnet_module.Bottleneck, [resnet_module.Conv3DSimple] * 4, [1, 1, 1, 1],
            resnet_module.BasicStem, zero_init_residual=True,
        )  # fmt: skip


# -- S3D -----------------------------------------------------------------------------------


def test_s3d_blocks_and_params():
    model = video.s3d()
    assert _num_params(model) == video.S3D_Weights.DEFAULT.meta["num_params"]
    keys = list(model.state_dict())
    assert len(keys) == 464
    assert keys[:2] == ["features.0.0.0.weight", "features.0.0.1.weight"]
    assert keys[-2:] == ["classifier.1.weight", "classifier.1.bias"]
    bn = model.features[0][0][1]
    assert isinstance(bn, nn.BatchNorm3d) and bn.eps == 0.001 and bn.momentum == 0.001

    block = s3d_module.SepInceptionBlock3D(8, 2, 3, 4, 2, 3, 5, nn.BatchNorm3d)
    x = _clip(2, 8, 3, 5, 6)
    assert tuple(block(x).shape) == (2, 2 + 4 + 3 + 5, 3, 5, 6)
    sep = s3d_module.TemporalSeparableConv(3, 4, 3, 2, 1, nn.BatchNorm3d)
    assert tuple(sep(_clip(1, 3, 5, 8, 8)).shape) == (1, 4, 3, 4, 4)


def test_s3d_forward_on_the_smallest_clip():
    # 13 frames of 209x209 pixels reach the final 2x7x7 average pool with one window
    model = video.s3d(num_classes=7).eval()
    with ember.no_grad():
        out = model(_clip(1, 3, 13, 209, 209))
    assert tuple(out.shape) == (1, 7)
    assert np.isfinite(out.detach().numpy()).all()


# -- Video Swin Transformer ------------------------------------------------------------------


def _small_swin3d(**kwargs):
    return video.SwinTransformer3d(
        patch_size=[2, 4, 4], embed_dim=8, depths=[2, 2], num_heads=[2, 4],
        window_size=[2, 3, 3], num_classes=5, **kwargs,
    )  # fmt: skip


def test_swin3d_t_params_keys_and_shapes():
    model = video.swin3d_t().eval()
    assert _num_params(model) == video.Swin3D_T_Weights.DEFAULT.meta["num_params"]
    keys = list(model.state_dict())
    assert len(keys) == 185
    assert keys[:2] == ["patch_embed.proj.weight", "patch_embed.proj.bias"]
    assert keys[-2:] == ["head.weight", "head.bias"]
    attn = model.features[0][1].attn
    assert attn.relative_position_bias_table.shape == (15 * 13 * 13, 3)
    assert attn.relative_position_index.shape == (392, 392)
    assert attn.shift_size == [4, 3, 3] and model.features[0][0].attn.shift_size == [0, 0, 0]
    with ember.no_grad():
        out = model(_clip(1, 3, 4, 32, 32))
    assert tuple(out.shape) == (1, 400)


def test_swin3d_relative_position_index_and_bias():
    attn = swin3d_module.ShiftedWindowAttention3d(8, [2, 3, 3], [0, 0, 0], num_heads=2)
    index = attn.relative_position_index.detach().numpy()
    coords = np.stack(np.meshgrid(np.arange(2), np.arange(3), np.arange(3), indexing="ij"))
    coords = coords.reshape(3, -1)
    rel = coords[:, :, None] - coords[:, None, :] + np.array([1, 2, 2])[:, None, None]
    expected = rel[0] * 5 * 5 + rel[1] * 5 + rel[2]
    np.testing.assert_array_equal(index, expected)
    # a window shrunk to the input takes the top-left block of the index
    bias = attn.get_relative_position_bias([1, 3, 3])
    table = attn.relative_position_bias_table.detach().numpy()
    np.testing.assert_allclose(
        bias.detach().numpy()[0], table[expected[:9, :9]].transpose(2, 0, 1), rtol=1e-6
    )


def test_swin3d_window_adapts_and_mask():
    window, shift = swin3d_module._get_window_and_shift_size([1, 2, 2], [1, 9, 2], [2, 4, 4])
    assert window == [1, 4, 2] and shift == [0, 2, 0]
    x = ember.zeros(1)
    mask = swin3d_module._compute_attention_mask_3d(x, (4, 4, 4), (2, 2, 2), (1, 1, 1))
    m = mask.detach().numpy()
    assert m.shape == (8, 8, 8)
    # the first window holds tokens of one region; the last one mixes all eight regions
    assert (m[0] == 0).all()
    assert set(np.unique(m[-1])) == {-100.0, 0.0} and (np.diag(m[-1]) == 0).all()
    assert (m[-1] == 0).sum() == 8


def test_swin3d_shapes_on_uneven_clips_and_training_step():
    model = _small_swin3d()
    # 5x18x22 pixels: patches pad to 3x5x6, windows pad and shift in every axis
    x = _clip(2, 3, 5, 18, 22)
    with ember.no_grad():
        assert tuple(model.eval()(x).shape) == (2, 5)
        tokens = model.patch_embed(x)
    assert tuple(tokens.shape) == (2, 3, 5, 6, 8)
    assert tuple(model.features[1](tokens).shape) == (2, 3, 3, 3, 16)  # 2-d patch merging
    grads = _train_step(model, x, 5)
    table_grad = grads["features.0.1.attn.relative_position_bias_table"]
    assert np.abs(table_grad.detach().numpy()).sum() > 0


def test_swin3d_errors():
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        swin3d_module.ShiftedWindowAttention3d(8, [2, 3], [0, 0], num_heads=2)


# -- MViT ----------------------------------------------------------------------------------


def _small_mvit_config(config, n=6):
    return mvit_module._block_setting({k: v[:n] for k, v in config.items()})


def _small_mvit_v2(**kwargs):
    return video.MViT(
        spatial_size=(40, 40), temporal_size=4,
        block_setting=_small_mvit_config(mvit_module._MVIT_V2_S_CONFIG, 5),
        residual_pool=True, residual_with_cls_embed=False, rel_pos_embed=True,
        proj_after_attn=True, num_classes=5, **kwargs,
    )  # fmt: skip


def test_mvit_v2_s_params_keys_and_shapes():
    model = video.mvit_v2_s()
    assert _num_params(model) == video.MViT_V2_S_Weights.DEFAULT.meta["num_params"]
    keys = list(model.state_dict())
    assert len(keys) == 397
    assert keys[:3] == ["conv_proj.weight", "conv_proj.bias", "pos_encoding.class_token"]
    assert keys[-2:] == ["head.1.weight", "head.1.bias"]
    assert "blocks.0.attn.rel_pos_h" in keys and "pos_encoding.spatial_pos" not in keys
    attn = model.blocks[1].attn
    assert attn.rel_pos_h.shape == (55, 96) and attn.rel_pos_t.shape == (15, 96)
    assert attn.pool_q.pool.stride == (1, 2, 2) and attn.pool_k.pool.stride == (1, 4, 4)
    assert list(model.blocks[1].pool_skip.pool.kernel_size) == [1, 3, 3]
    assert model.pos_encoding.spatial_size == (56, 56) and model.pos_encoding.temporal_size == 8


def test_mvit_v1_style_forward_and_positional_encoding():
    model = video.MViT(
        spatial_size=(32, 32), temporal_size=4,
        block_setting=_small_mvit_config(mvit_module._MVIT_V1_B_CONFIG, 4),
        residual_pool=False, residual_with_cls_embed=False, rel_pos_embed=False,
        proj_after_attn=False, num_classes=6,
    ).eval()  # fmt: skip
    pe = model.pos_encoding
    assert pe.spatial_pos.shape == (64, 96) and pe.temporal_pos.shape == (2, 96)
    tokens = _clip(2, 128, 96)
    with ember.no_grad():
        out = pe(tokens).detach().numpy()
    temporal, spatial = pe.temporal_pos.detach().numpy(), pe.spatial_pos.detach().numpy()
    expected_pos = np.repeat(temporal, 64, axis=0) + np.tile(spatial, (2, 1))
    class_row = pe.class_token.detach().numpy() + pe.class_pos.detach().numpy()
    np.testing.assert_allclose(out[:, 0], np.broadcast_to(class_row, (2, 96)), rtol=1e-6)
    expected = tokens.detach().numpy() + expected_pos
    np.testing.assert_allclose(out[:, 1:], expected, rtol=1e-5, atol=1e-6)
    with ember.no_grad():
        assert tuple(model(_clip(2, 3, 4, 32, 32)).shape) == (2, 6)


def test_mvit_v2_forward_and_training_step():
    model = _small_mvit_v2()
    x = _clip(2, 3, 4, 40, 40)
    with ember.no_grad():
        assert tuple(model.eval()(x).shape) == (2, 5)
    grads = _train_step(model, x, 5)
    # the relative position tables (resampled in block 3: 10x10 -> 5x5 queries of 3x3 keys)
    for i in (0, 3):
        assert np.abs(grads[f"blocks.{i}.attn.rel_pos_h"].detach().numpy()).sum() > 0
    assert np.abs(grads["pos_encoding.class_token"].detach().numpy()).sum() > 0


def test_mvit_accepts_images_as_single_frames():
    model = video.MViT(
        spatial_size=(32, 32), temporal_size=2,
        block_setting=_small_mvit_config(mvit_module._MVIT_V2_S_CONFIG, 2),
        residual_pool=True, residual_with_cls_embed=True, rel_pos_embed=False,
        proj_after_attn=False, num_classes=3,
    ).eval()  # fmt: skip
    with ember.no_grad():
        assert tuple(model(_clip(2, 3, 32, 32)).shape) == (2, 3)
        with pytest.raises(ValueError, match="Unsupported input dimension"):
            model(_clip(3, 32, 32))


def test_mvit_rel_pos_table_matches_distances():
    table = ember.tensor(np.arange(15, dtype=np.float32).reshape(5, 3))
    # equal sizes: row (i - j + size - 1)
    got = mvit_module._rel_pos_table(table, 3, 3).detach().numpy()
    i, j = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(got, table.detach().numpy()[i - j + 2])
    # 4 queries over 2 keys: keys' distances scaled by 2, the table resampled from 5 to 7 rows
    got = mvit_module._rel_pos_table(table, 4, 2).detach().numpy()
    assert got.shape == (4, 2, 3)
    rows = np.floor(np.arange(4)[:, None] - (np.arange(2)[None, :] - 1) * 2).astype(int)
    resampled = mvit_module._interpolate(table, 7).detach().numpy()
    np.testing.assert_array_equal(got, resampled[rows])
    np.testing.assert_allclose(resampled[0], table.detach().numpy()[0])


def test_mvit_errors():
    with pytest.raises(ValueError, match="The configuration parameter can't be empty."):
        video.MViT((32, 32), 4, [], False, True, False, False)
    # as torchvision: the builders fix the input size, and say so
    with pytest.raises(TypeError, match="multiple values for keyword argument 'spatial_size'"):
        video.mvit_v2_s(spatial_size=(32, 32))


# -- registry, weights enums, preset ----------------------------------------------------------


def test_registry_and_weights_enums():
    assert models.list_models(module=video) == sorted(BUILDERS)
    assert models.list_models(include="swin3d_*") == ["swin3d_b", "swin3d_s", "swin3d_t"]
    for name, enum in BUILDERS.items():
        assert models.get_model_weights(name) is enum
        assert models.get_model_builder(name) is getattr(video, name)
        weights = enum.DEFAULT
        assert weights is enum.KINETICS400_V1
        assert models.get_weight(f"{enum.__name__}.KINETICS400_V1") is weights
        assert weights.url.startswith("https://download.pytorch.org/models/")
        assert len(weights.meta["categories"]) == 400
        assert set(weights.meta["_metrics"]) == {"Kinetics-400"}
    assert list(video.Swin3D_B_Weights.__members__) == [
        "KINETICS400_V1", "KINETICS400_IMAGENET22K_V1", "DEFAULT"
    ]  # fmt: skip
    cats = video.R3D_18_Weights.DEFAULT.meta["categories"]
    assert cats[:3] == ["abseiling", "air drumming", "answering questions"]
    assert cats[-1] == "zumba" and len(set(cats)) == 400
    assert video.S3D_Weights.DEFAULT.meta["min_temporal_size"] == 14

    model = models.get_model("r3d_18", num_classes=5)
    assert isinstance(model, video.VideoResNet) and model.fc.out_features == 5


def test_builders_weights_arguments():
    # a checkpoint fixes num_classes (checked before any download)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 400"):
        video.r3d_18(weights="KINETICS400_V1", num_classes=10)
    with pytest.raises(TypeError, match="expected S3D_Weights"):
        video.s3d(weights=video.R3D_18_Weights.DEFAULT)
    with pytest.raises(KeyError):
        video.mc3_18(weights="IMAGENET1K_V1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = video.s3d(pretrained=False, num_classes=3)
    assert any("'pretrained' is deprecated" in str(w.message) for w in caught)
    assert model.classifier[1].out_channels == 3


def test_video_classification_preset():
    preset = video.R3D_18_Weights.DEFAULT.transforms()
    assert isinstance(preset, VideoClassification)
    assert preset.crop_size == [112, 112] and preset.resize_size == [128, 171]
    assert "(..., C, T, H, W)" in preset.describe()
    swin = video.Swin3D_T_Weights.DEFAULT.transforms()
    assert swin.resize_size == [256] and swin.mean == [0.485, 0.456, 0.406]

    # frames already at the resize size: only a centre crop, rescale, normalise, permute
    frames = RNG.randint(0, 256, size=(2, 4, 3, 6, 8)).astype(np.uint8)  # N, T, C, H, W
    t = VideoClassification(crop_size=(4, 6), resize_size=(6, 8))
    out = t(ember.tensor(frames)).detach().numpy()
    mean = np.array(t.mean, dtype=np.float32)[:, None, None, None]
    std = np.array(t.std, dtype=np.float32)[:, None, None, None]
    crop = frames[:, :, :, 1:5, 1:7].transpose(0, 2, 1, 3, 4).astype(np.float32) / 255
    np.testing.assert_allclose(out, (crop - mean) / std, rtol=1e-5, atol=1e-5)
    single = t(ember.tensor(frames[0])).detach().numpy()
    assert single.shape == (3, 4, 4, 6)
    np.testing.assert_allclose(single, out[0], rtol=1e-6)
    resized = VideoClassification(crop_size=(3, 3), resize_size=(5,))(ember.tensor(frames))
    assert tuple(resized.shape) == (2, 3, 4, 3, 3)
