"""ember.vision.models.optical_flow (RAFT) and ember.vision's flow_to_image.

Values against torchvision are in tests/parity/vision/test_models_optical_flow.py; here: the
list of flow predictions and its shapes, parameter counts (torchvision's published
``num_params``), state_dict layout, default initialisation, the sampling helpers and
flow_to_image against NumPy references, registry, weights enums and the OpticalFlow preset,
torchvision's argument and input checks, and a training step.
"""

import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision._flow_to_image import flow_to_image
from ember.vision.models import optical_flow
from ember.vision.models.optical_flow import _utils as flow_utils
from ember.vision.models.optical_flow.raft import (
    CorrBlock,
    FeatureEncoder,
    MotionEncoder,
    RecurrentBlock,
    ResidualBlock,
)


def _pair(n=1, side=64, seed=0):
    rs = np.random.RandomState(seed)
    x1 = rs.uniform(-1, 1, (n, 3, side, side)).astype(np.float32)
    x2 = np.roll(x1, (2, -1), axis=(2, 3))
    return ember.tensor(x1), ember.tensor(x2)


def _small_raft(builder="raft_small", **kwargs):
    """A RAFT whose correlation pyramid has 2 levels, so that 64x64 images are large enough
    (the default 4 levels need 128x128)."""
    ember.manual_seed(0)
    return getattr(optical_flow, builder)(corr_block=CorrBlock(num_levels=2, radius=3), **kwargs)


# -- the model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("builder", ["raft_small", "raft_large"])
def test_flow_predictions_list_and_shapes(builder):
    model = _small_raft(builder).eval()
    x1, x2 = _pair(n=2)
    with ember.no_grad():
        preds = model(x1, x2, num_flow_updates=3)
    assert isinstance(preds, list) and len(preds) == 3
    for p in preds:
        assert tuple(p.shape) == (2, 2, 64, 64)
        assert p.dtype == ember.float32
        assert np.isfinite(p.numpy()).all()
    # each update refines the previous one: the predictions differ
    assert not np.allclose(preds[0].numpy(), preds[1].numpy())
    with ember.no_grad():
        assert model(x1, x2, num_flow_updates=0) == []
        again = model(x1, x2, num_flow_updates=2)
    # the first updates do not depend on how many follow
    np.testing.assert_allclose(again[1].numpy(), preds[1].numpy(), rtol=1e-5, atol=1e-5)


def test_default_model_on_128x128_images():
    ember.manual_seed(0)
    model = models.get_model("raft_small").eval()
    x1, x2 = _pair(side=128)
    with ember.no_grad():
        preds = model(x1, x2, num_flow_updates=2)
    assert [tuple(p.shape) for p in preds] == [(1, 2, 128, 128)] * 2


@pytest.mark.parametrize(
    "builder,num_params", [("raft_small", 990162), ("raft_large", 5257536)]
)
def test_parameter_counts_match_published_meta(builder, num_params):
    model = getattr(optical_flow, builder)()
    assert sum(p.numel() for p in model.parameters()) == num_params
    enum = models.get_model_weights(builder)
    assert all(w.meta["num_params"] == num_params for w in enum)


def test_state_dict_layout():
    large = optical_flow.raft_large().state_dict()
    small = optical_flow.raft_small().state_dict()
    for key in (
        "feature_encoder.convnormrelu.0.weight",
        "feature_encoder.layer1.0.convnormrelu1.0.bias",
        "feature_encoder.layer2.0.downsample.0.weight",
        "feature_encoder.conv.weight",
        "context_encoder.convnormrelu.1.running_var",  # BatchNorm2d in the large context encoder
        "update_block.motion_encoder.convcorr2.0.weight",
        "update_block.recurrent_block.convgru2.convq.weight",
        "update_block.flow_head.conv2.bias",
        "mask_predictor.convrelu.0.weight",
        "mask_predictor.conv.weight",
    ):
        assert key in large, key
    # InstanceNorm2d (affine=False) holds no state; raft_small has no mask predictor, one GRU
    # and one correlation conv
    assert not any(k.startswith("feature_encoder.convnormrelu.1") for k in large)
    assert not any(k.startswith("mask_predictor") for k in small)
    assert not any("convgru2" in k or "convcorr2" in k for k in small)
    assert tuple(large["mask_predictor.conv.weight"].shape) == (8 * 8 * 9, 256, 1, 1)
    assert tuple(small["update_block.motion_encoder.convcorr1.0.weight"].shape) == (96, 196, 1, 1)
    assert tuple(large["update_block.recurrent_block.convgru1.convz.weight"].shape) == (
        128, 128 + 128 + 128, 1, 5,
    )  # fmt: skip
    assert tuple(small["update_block.recurrent_block.convgru1.convz.weight"].shape) == (
        96, 96 + 82 + 64, 3, 3,
    )  # fmt: skip


def test_default_initialisation():
    ember.manual_seed(0)
    model = optical_flow.raft_large()
    # feature/context encoders: Kaiming normal (fan_out, relu), batch norms ones and zeros
    w = model.feature_encoder.convnormrelu[0].weight.detach().numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / (64 * 7 * 7)), rel=0.05)
    w = model.context_encoder.layer3[0].convnormrelu2[0].weight.detach().numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / (128 * 3 * 3)), rel=0.05)
    bn = model.context_encoder.convnormrelu[1]
    assert isinstance(bn, nn.BatchNorm2d)
    assert (bn.weight.detach().numpy() == 1).all() and (bn.bias.detach().numpy() == 0).all()
    # the update block keeps the layers' default initialisation (uniform, bound 1/sqrt(fan_in))
    w = model.update_block.flow_head.conv1.weight.detach().numpy()
    bound = 1 / math.sqrt(128 * 3 * 3)
    assert np.abs(w).max() <= bound and w.std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert isinstance(model.feature_encoder.convnormrelu[1], nn.InstanceNorm2d)
    assert model.mask_predictor.multiplier == 0.25


def test_module_structure():
    small = optical_flow.raft_small()
    assert isinstance(small.update_block.motion_encoder.convcorr2, nn.Identity)
    assert small.update_block.recurrent_block.convgru2(1, 2) == 1  # passes h through
    assert small.mask_predictor is None
    assert small.update_block.hidden_state_size == 96
    assert small.corr_block.out_channels == 4 * 7**2
    large = optical_flow.raft_large()
    assert large.corr_block.out_channels == 4 * 9**2
    assert large.feature_encoder.output_dim == 256 and large.feature_encoder.downsample_factor == 8
    assert type(large.feature_encoder.layer1[0]).__name__ == "ResidualBlock"
    assert type(small.feature_encoder.layer1[0]).__name__ == "BottleneckBlock"
    assert small.context_encoder.convnormrelu[1].__class__ is nn.ReLU  # norm_layer=None


def test_custom_components_replace_the_built_ones():
    encoder = FeatureEncoder(layers=(32, 32, 64, 96, 128), norm_layer=nn.InstanceNorm2d)
    model = optical_flow.raft_small(feature_encoder=encoder)
    assert model.feature_encoder is encoder
    assert isinstance(model.feature_encoder.layer1[0], ResidualBlock)


def test_training_step_reaches_the_feature_encoder():
    model = _small_raft("raft_large").train()
    x1, x2 = _pair(n=1)
    target = np.random.RandomState(3).standard_normal((1, 2, 64, 64))
    target = ember.tensor(target, dtype=ember.float32)
    optimizer = ember.optim.SGD(model.parameters(), lr=1e-3)

    def loss_fn():
        preds = model(x1, x2, num_flow_updates=2)
        # RAFT's sequence loss: end-point error, later predictions weighted more
        return sum(
            0.8 ** (len(preds) - i - 1) * (p - target).pow(2).sum(dim=1).sqrt().mean()
            for i, p in enumerate(preds)
        )

    loss = loss_fn()
    loss.backward()
    for name in (
        "feature_encoder.convnormrelu.0.weight",
        "feature_encoder.layer3.1.convnormrelu2.0.weight",
        "context_encoder.convnormrelu.0.weight",
        "update_block.motion_encoder.convcorr1.0.weight",
        "update_block.recurrent_block.convgru2.convq.weight",
        "mask_predictor.conv.weight",
    ):
        grad = model.get_parameter(name).grad
        assert grad is not None, name
        assert np.abs(grad.numpy()).max() > 0, name
    optimizer.step()
    optimizer.zero_grad()
    assert float(loss_fn()) < float(loss)


# -- argument and input checks ------------------------------------------------------------------


def test_input_checks():
    model = _small_raft()
    x1, x2 = _pair()
    with pytest.raises(ValueError, match=r"input image H and W should be divisible by 8, "
                                         r"instead got 60 \(h\) and 64 \(w\)"):
        model(x1[:, :, :60], x2[:, :, :60])
    with pytest.raises(ValueError, match=r"input images should have the same shape, instead "
                                         r"got \(64, 64\) != "):
        model(x1, x2[:, :, :56])
    default = optical_flow.raft_small()
    with pytest.raises(ValueError, match="Feature maps are too small to be down-sampled by the "
                                         "correlation pyramid. H and W of feature maps should "
                                         "be at least 16"):
        default(x1, x2)
    with pytest.raises(ValueError, match="Input feature maps should have the same shape"):
        CorrBlock().build_pyramid(ember.zeros(1, 4, 16, 16), ember.zeros(1, 4, 16, 8))


def test_constructor_checks():
    with pytest.raises(ValueError, match="The expected number of layers is 5, instead got 4"):
        FeatureEncoder(layers=(1, 2, 3, 4))
    with pytest.raises(ValueError, match="The expected number of flow_layers is 2, instead got 1"):
        MotionEncoder(in_channels_corr=4, flow_layers=(3,))
    with pytest.raises(ValueError, match="The number of corr_layers should be 1 or 2, instead "
                                         "got 3"):
        MotionEncoder(in_channels_corr=4, corr_layers=(1, 2, 3))
    with pytest.raises(ValueError, match="kernel_size should have the same length as padding"):
        RecurrentBlock(input_size=2, hidden_size=2, kernel_size=(3,), padding=(1, 1))
    with pytest.raises(ValueError, match="kernel_size should either 1 or 2, instead got 3"):
        RecurrentBlock(input_size=2, hidden_size=2, kernel_size=(3, 3, 3), padding=(1, 1, 1))
    with pytest.raises(ValueError, match="should expose a 'hidden_state_size' attribute"):
        optical_flow.RAFT(
            feature_encoder=nn.Identity(),
            context_encoder=nn.Identity(),
            corr_block=CorrBlock(),
            update_block=nn.Identity(),
        )
    # a context encoder no wider than the hidden state
    model = optical_flow.raft_small(
        corr_block=CorrBlock(num_levels=2, radius=3),
        context_encoder=FeatureEncoder(layers=(32, 32, 64, 96, 96), norm_layer=None),
    )
    with pytest.raises(ValueError, match="The context encoder outputs 96 channels, but it should "
                                         "have at strictly more than hidden_state=96 channels"):
        model(*_pair())


# -- helpers against NumPy -----------------------------------------------------------------------


def test_make_coords_grid():
    grid = flow_utils.make_coords_grid(2, 3, 4)
    assert grid.dtype == ember.float32 and tuple(grid.shape) == (2, 2, 3, 4)
    ys, xs = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(grid.numpy()[1, 0], xs)
    np.testing.assert_array_equal(grid.numpy()[0, 1], ys)


def _bilinear_numpy(img, x, y):
    """Bilinear value of ``img`` (C, H, W) at absolute (x, y), zeros outside."""
    c, h, w = img.shape
    x0, y0 = int(np.floor(x)), int(np.floor(y))
    out = np.zeros(c)
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < h and 0 <= xx < w:
                out += wy * wx * img[:, yy, xx]
    return out


def test_grid_sample_in_absolute_coordinates():
    rs = np.random.RandomState(0)
    img = rs.standard_normal((1, 2, 5, 7)).astype(np.float32)
    pts = np.stack([rs.uniform(-1, 7, (3, 4)), rs.uniform(-1, 5, (3, 4))], axis=-1)[None]
    got = flow_utils.grid_sample(
        ember.tensor(img), ember.tensor(pts.astype(np.float32)), align_corners=True
    ).numpy()
    assert got.shape == (1, 2, 3, 4)
    for i in range(3):
        for j in range(4):
            ref = _bilinear_numpy(img[0].astype(np.float64), *pts[0, i, j])
            np.testing.assert_allclose(got[0, :, i, j], ref, rtol=1e-4, atol=1e-5)


def test_upsample_flow():
    rs = np.random.RandomState(0)
    flow = rs.standard_normal((2, 2, 3, 4)).astype(np.float32)
    # without a mask: 8 x bilinear interpolation with aligned corners
    up = flow_utils.upsample_flow(ember.tensor(flow)).numpy()
    assert up.shape == (2, 2, 24, 32)
    np.testing.assert_allclose(up[:, :, 0, 0], 8 * flow[:, :, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(up[:, :, -1, -1], 8 * flow[:, :, -1, -1], rtol=1e-6)
    # with a mask: each of the 8x8 sub-pixels is a convex combination (softmax over the 9
    # neighbours, zero-padded) of 8 x flow
    mask = rs.standard_normal((2, 8 * 8 * 9, 3, 4)).astype(np.float32)
    got = flow_utils.upsample_flow(ember.tensor(flow), ember.tensor(mask)).numpy()
    m = mask.reshape(2, 9, 8, 8, 3, 4)
    m = np.exp(m - m.max(1, keepdims=True))
    m /= m.sum(1, keepdims=True)
    padded = np.pad(8 * flow, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 2, 24, 32))
    for i in range(3):
        for j in range(4):
            nb = padded[:, :, i : i + 3, j : j + 3].reshape(2, 2, 9)
            for a in range(8):
                for b in range(8):
                    ref[:, :, 8 * i + a, 8 * j + b] = (nb * m[:, None, :, a, b, i, j]).sum(-1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


# -- registry, weights, preset --------------------------------------------------------------------


def test_registry():
    assert models.list_models(module=optical_flow) == ["raft_large", "raft_small"]
    assert {"raft_large", "raft_small"} <= set(models.list_models())
    assert isinstance(models.get_model("raft_small"), optical_flow.RAFT)
    assert models.get_model_builder("RAFT_LARGE") is optical_flow.raft_large
    assert models.get_model_weights("raft_large") is optical_flow.Raft_Large_Weights
    assert models.get_weight("Raft_Small_Weights.C_T_V2") is optical_flow.Raft_Small_Weights.C_T_V2
    # builders stay in the subpackage, as in torchvision
    assert not hasattr(models, "raft_small")
    assert set(optical_flow.raft.__all__) == {
        "RAFT", "raft_large", "raft_small", "Raft_Large_Weights", "Raft_Small_Weights",
    }  # fmt: skip


def test_weights_enums():
    large, small = optical_flow.Raft_Large_Weights, optical_flow.Raft_Small_Weights
    assert [w.name for w in large] == [
        "C_T_V1", "C_T_V2", "C_T_SKHT_V1", "C_T_SKHT_V2", "C_T_SKHT_K_V1", "C_T_SKHT_K_V2",
    ]  # fmt: skip
    assert [w.name for w in small] == ["C_T_V1", "C_T_V2"]
    assert large.DEFAULT is large.C_T_SKHT_V2 and small.DEFAULT is small.C_T_V2
    assert small.C_T_V2.url == "https://download.pytorch.org/models/raft_small_C_T_V2-01064c6d.pth"
    assert large.C_T_SKHT_K_V1.meta["_metrics"] == {"Kitti-Test": {"fl_all": 5.10}}
    assert all(w.meta["min_size"] == (128, 128) for w in (*large, *small))
    assert large.verify("C_T_V1") is large.C_T_V1
    with pytest.raises(TypeError, match="Invalid Weight class provided"):
        optical_flow.raft_small(weights=large.C_T_V1)


def test_legacy_pretrained_flag():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = optical_flow.raft_small(pretrained=False)
    assert isinstance(model, optical_flow.RAFT)
    assert any("'pretrained' is deprecated" in str(w.message) for w in caught)


def test_optical_flow_preset():
    preset = optical_flow.Raft_Small_Weights.DEFAULT.transforms()
    assert repr(preset) == "OpticalFlow()"
    assert "rescaled to ``[-1.0, 1.0]``" in preset.describe()
    rs = np.random.RandomState(0)
    a = rs.randint(0, 256, (2, 3, 8, 8)).astype(np.uint8)
    b = rs.randint(0, 256, (3, 8, 8)).astype(np.uint8)
    img1, img2 = preset(ember.tensor(a), ember.tensor(b))
    assert img1.dtype == img2.dtype == ember.float32
    np.testing.assert_allclose(img1.numpy(), a / 255 * 2 - 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(img2.numpy(), b / 255 * 2 - 1, rtol=1e-6, atol=1e-6)


# -- flow_to_image ---------------------------------------------------------------------------------


def _colorwheel_numpy():
    """The Middlebury colour wheel (Baker et al., ICCV 2007), 55 colours."""
    ry, yg, gc, cb, bm, mr = 15, 6, 4, 11, 13, 6
    wheel = np.zeros((ry + yg + gc + cb + bm + mr, 3))
    col = 0
    wheel[0:ry, 0] = 255
    wheel[0:ry, 1] = np.floor(255 * np.arange(ry) / ry)
    col += ry
    wheel[col : col + yg, 0] = 255 - np.floor(255 * np.arange(yg) / yg)
    wheel[col : col + yg, 1] = 255
    col += yg
    wheel[col : col + gc, 1] = 255
    wheel[col : col + gc, 2] = np.floor(255 * np.arange(gc) / gc)
    col += gc
    wheel[col : col + cb, 1] = 255 - np.floor(255 * np.arange(cb) / cb)
    wheel[col : col + cb, 2] = 255
    col += cb
    wheel[col : col + bm, 2] = 255
    wheel[col : col + bm, 0] = np.floor(255 * np.arange(bm) / bm)
    col += bm
    wheel[col : col + mr, 2] = 255 - np.floor(255 * np.arange(mr) / mr)
    wheel[col : col + mr, 0] = 255
    return wheel


def _flow_to_image_numpy(flow):
    """(N, 2, H, W) float flow -> (N, 3, H, W) uint8, computed in float64."""
    flow = flow.astype(np.float64)
    max_norm = np.sqrt((flow**2).sum(1)).max()
    flow = flow / (max_norm + np.finfo(np.float32).eps)
    wheel = _colorwheel_numpy()
    ncols = len(wheel)
    norm = np.sqrt((flow**2).sum(1))
    angle = np.arctan2(-flow[:, 1], -flow[:, 0]) / np.pi
    fk = (angle + 1) / 2 * (ncols - 1)
    k0 = np.floor(fk).astype(np.int64)
    k1 = np.where(k0 + 1 == ncols, 0, k0 + 1)
    f = fk - k0
    out = np.zeros((flow.shape[0], 3) + flow.shape[2:], dtype=np.uint8)
    for c in range(3):
        col = (1 - f) * wheel[k0, c] / 255 + f * wheel[k1, c] / 255
        out[:, c] = np.floor(255 * (1 - norm * (1 - col)))
    return out


def test_flow_to_image_against_numpy():
    rs = np.random.RandomState(0)
    flow = (rs.standard_normal((2, 2, 16, 20)) * 4).astype(np.float32)
    got = flow_to_image(ember.tensor(flow))
    assert got.dtype == ember.uint8 and tuple(got.shape) == (2, 3, 16, 20)
    ref = _flow_to_image_numpy(flow)
    diff = np.abs(got.numpy().astype(int) - ref.astype(int))
    # float32 against float64: a floor may land one level apart
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01
    # a single flow (2, H, W) gives a single image; no graph is recorded
    single = flow_to_image(ember.tensor(flow[1], requires_grad=True))
    assert tuple(single.shape) == (3, 16, 20) and not single.requires_grad
    np.testing.assert_array_equal(single.numpy(), flow_to_image(ember.tensor(flow[1:])).numpy()[0])


def test_flow_to_image_colours():
    # zero flow is white; the largest flow, pointing along +x, is the wheel's first colour (red)
    flow = np.zeros((2, 1, 2), dtype=np.float32)
    flow[0, 0, 1] = 3.0
    img = flow_to_image(ember.tensor(flow)).numpy()
    assert img[:, 0, 0].tolist() == [255, 255, 255]
    np.testing.assert_array_equal(_colorwheel_numpy()[0], [255, 0, 0])
    assert img[:, 0, 1].tolist() == [255, 0, 0]


def test_flow_to_image_checks():
    with pytest.raises(ValueError, match="Flow should be of dtype torch.float, got "):
        flow_to_image(ember.zeros(2, 3, 3, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"Input flow should have shape \(2, H, W\) or "
                                         r"\(N, 2, H, W\), got "):
        flow_to_image(ember.zeros(1, 3, 4, 4))
