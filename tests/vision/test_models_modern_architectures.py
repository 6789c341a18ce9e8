"""mobilenet_v2/v3, densenet121, efficientnet_b0, vit_b_16, convnext_tiny and their blocks.

Values against torchvision are in tests/parity/vision/test_models_modern_architectures.py;
here: shapes, parameter counts (torchvision's published ``num_params``), registry, weights
enums, stochastic depth, TF "same" padding, training-mode forward/backward.
"""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models._efficientnet_lite import Conv2dSamePadding
from ember.vision.models._layers import StochasticDepth, stochastic_depth

# builder, weights enum, input side, builder kwargs (vit: smaller image for speed)
BUILDERS = [
    ("mobilenet_v2", "MobileNet_V2_Weights", 32, {}),
    ("mobilenet_v3_small", "MobileNet_V3_Small_Weights", 32, {}),
    ("mobilenet_v3_large", "MobileNet_V3_Large_Weights", 32, {}),
    ("densenet121", "DenseNet121_Weights", 32, {}),
    ("efficientnet_b0", "EfficientNet_B0_Weights", 32, {}),
    ("convnext_tiny", "ConvNeXt_Tiny_Weights", 32, {}),
    ("vit_b_16", "ViT_B_16_Weights", 224, {}),
]


@pytest.mark.parametrize("name,enum_name,side,kwargs", BUILDERS, ids=[b[0] for b in BUILDERS])
def test_builder_shapes_params_and_registry(name, enum_name, side, kwargs):
    ember.manual_seed(0)
    model = models.get_model(name, **kwargs).eval()
    weights = getattr(models, enum_name)
    assert models.get_model_weights(name) is weights
    assert name in models.list_models()
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == weights.DEFAULT.meta["num_params"]
    x = ember.randn(1, 3, side, side)
    with ember.no_grad():
        out = model(x)
    assert out.shape == (1, 1000)
    assert np.isfinite(out.numpy()).all()


@pytest.mark.parametrize("name,enum_name,side,kwargs", BUILDERS, ids=[b[0] for b in BUILDERS])
def test_weights_enum_form(name, enum_name, side, kwargs):
    weights = getattr(models, enum_name)
    for member in weights:
        assert member.url.startswith("https://download.pytorch.org/models/")
        assert member.url.endswith(".pth")
        stem = member.url.rsplit("/", 1)[1][:-4]
        assert len(stem.rsplit("-", 1)[1]) == 8  # sha256 prefix in the file name
        assert len(member.meta["categories"]) == 1000
        assert member.transforms().crop_size[0] > 0
    assert weights.verify(weights.DEFAULT.name) is weights.DEFAULT
    with pytest.raises(TypeError, match="Invalid Weight class provided"):
        weights.verify(models.AlexNet_Weights.IMAGENET1K_V1)


def test_num_classes_and_width():
    m = models.mobilenet_v2(num_classes=10, width_mult=0.5)
    assert m.classifier[1].out_features == 10
    assert m.features[0][0].out_channels == 16
    m = models.mobilenet_v3_small(num_classes=7)
    assert m(ember.randn(2, 3, 32, 32)).shape == (2, 7)


def test_vit_layout_and_image_size_check():
    m = models.vit_b_16(image_size=32, num_classes=5)
    sd = m.state_dict()
    assert sd["class_token"].shape == (1, 1, 768)
    assert sd["encoder.pos_embedding"].shape == (1, 5, 768)
    assert sd["encoder.layers.encoder_layer_0.self_attention.in_proj_weight"].shape == (2304, 768)
    assert "encoder.layers.encoder_layer_11.mlp.3.weight" in sd
    assert isinstance(m.encoder.layers.encoder_layer_0.self_attention, nn.MultiheadAttention)
    assert m(ember.randn(2, 3, 32, 32)).shape == (2, 5)
    with pytest.raises(AssertionError, match="Wrong image height! Expected 32 but got 48!"):
        m(ember.randn(1, 3, 48, 32))


def test_train_step_mobilenet_v3_small_reaches_every_parameter():
    ember.manual_seed(0)
    m = models.mobilenet_v3_small(num_classes=4).train()
    loss = nn.functional.cross_entropy(m(ember.randn(2, 3, 32, 32)), ember.tensor([0, 3]))
    loss.backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None]
    assert not missing
    assert m.features[0][1].num_batches_tracked.item() == 1


def test_efficientnet_b0_stochastic_depth_rates_and_train_forward():
    m = models.efficientnet_b0(num_classes=3)
    rates = [blk.stochastic_depth.p for stage in m.features[1:-1] for blk in stage]
    assert len(rates) == 16
    assert rates[0] == 0.0 and math.isclose(rates[-1], 0.2 * 15 / 16)
    m.train()
    out = m(ember.randn(2, 3, 32, 32))
    out.sum().backward()
    assert m.features[0][0].weight.grad is not None


def test_densenet_memory_efficient_gives_same_values():
    ember.manual_seed(0)
    a = models.densenet121(num_classes=3).eval()
    b = models.densenet121(num_classes=3, memory_efficient=True).eval()
    b.load_state_dict(a.state_dict())
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_stochastic_depth():
    x = ember.ones(1000, 2, 3)
    assert stochastic_depth(x, 0.5, "row", training=False) is x
    ember.manual_seed(0)
    y = stochastic_depth(x, 0.25, "row").numpy()
    rows = y.reshape(1000, -1)
    assert set(np.unique(rows)) <= {0.0, np.float32(1 / 0.75)}
    assert (rows == rows[:, :1]).all()  # whole rows dropped or kept
    assert 0.15 < (rows[:, 0] == 0).mean() < 0.35
    z = stochastic_depth(x, 0.5, "batch").numpy()
    assert len(np.unique(z)) == 1
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1, but got 1.5"):
        stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="mode has to be either 'batch' or 'row', but got col"):
        stochastic_depth(x, 0.5, "col")
    assert repr(StochasticDepth(0.1, "row")) == "StochasticDepth(p=0.1, mode=row)"


@pytest.mark.parametrize("size,k,s", [(7, 3, 2), (8, 3, 2), (9, 5, 2), (6, 5, 1), (224, 3, 2)])
def test_tf_same_padding(size, k, s):
    conv = Conv2dSamePadding(2, 3, k, stride=s, bias=False)
    x = ember.randn(1, 2, size, size + 1)
    out = conv(x)
    assert out.shape == (1, 3, math.ceil(size / s), math.ceil((size + 1) / s))
    # the extra pixel of padding goes to the bottom / right
    pad_h = max((math.ceil(size / s) - 1) * s + k - size, 0)
    pad_w = max((math.ceil((size + 1) / s) - 1) * s + k - size - 1, 0)
    padded = nn.functional.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
    ref = nn.functional.conv2d(padded, conv.weight, None, s)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)


def test_efficientnet_lite0_architecture_without_weights():
    m = models.efficientnet_lite0(num_classes=10).eval()
    assert len(m._blocks) == 16
    assert not any("_se_" in n for n in m.state_dict())  # efficientnet_pytorch names SE _se_reduce
    assert isinstance(m._relu, nn.ReLU6)
    assert m._blocks[15]._depthwise_conv.groups == 1152
    assert m(ember.randn(1, 3, 37, 41)).shape == (1, 10)
