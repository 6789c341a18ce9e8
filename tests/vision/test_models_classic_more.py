"""GoogLeNet, Inception v3, MNASNet, RegNet and ShuffleNetV2 (ember.vision.models).

Values against torchvision are in tests/parity/vision/test_models_classic_more.py; here:
registry and weights enums, state_dict layouts (key/shape fingerprints and parameter counts
taken from torchvision 0.29), auxiliary outputs, the weights path of the builders, MNASNet's
versioned checkpoints, initialisation, errors, and training steps.
"""

import hashlib
import importlib
import math
import warnings
from functools import partial

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import inception, mnasnet, regnet, shufflenetv2
from ember.vision.models._layers import SqueezeExcitation

# the submodule: ``models.googlenet`` is the builder, as in torchvision
googlenet_module = importlib.import_module("ember.vision.models.googlenet")

WEIGHTS = {
    "googlenet": "GoogLeNet_Weights",
    "inception_v3": "Inception_V3_Weights",
    "mnasnet0_5": "MNASNet0_5_Weights",
    "mnasnet0_75": "MNASNet0_75_Weights",
    "mnasnet1_0": "MNASNet1_0_Weights",
    "mnasnet1_3": "MNASNet1_3_Weights",
    "regnet_y_400mf": "RegNet_Y_400MF_Weights",
    "regnet_y_800mf": "RegNet_Y_800MF_Weights",
    "regnet_y_1_6gf": "RegNet_Y_1_6GF_Weights",
    "regnet_y_3_2gf": "RegNet_Y_3_2GF_Weights",
    "regnet_y_8gf": "RegNet_Y_8GF_Weights",
    "regnet_y_16gf": "RegNet_Y_16GF_Weights",
    "regnet_y_32gf": "RegNet_Y_32GF_Weights",
    "regnet_y_128gf": "RegNet_Y_128GF_Weights",
    "regnet_x_400mf": "RegNet_X_400MF_Weights",
    "regnet_x_800mf": "RegNet_X_800MF_Weights",
    "regnet_x_1_6gf": "RegNet_X_1_6GF_Weights",
    "regnet_x_3_2gf": "RegNet_X_3_2GF_Weights",
    "regnet_x_8gf": "RegNet_X_8GF_Weights",
    "regnet_x_16gf": "RegNet_X_16GF_Weights",
    "regnet_x_32gf": "RegNet_X_32GF_Weights",
    "shufflenet_v2_x0_5": "ShuffleNet_V2_X0_5_Weights",
    "shufflenet_v2_x1_0": "ShuffleNet_V2_X1_0_Weights",
    "shufflenet_v2_x1_5": "ShuffleNet_V2_X1_5_Weights",
    "shufflenet_v2_x2_0": "ShuffleNet_V2_X2_0_Weights",
}

# torchvision 0.29's state_dicts: builder, kwargs, number of entries, sha256 prefix of the
# "key shape" lines in order (tests/parity/vision/test_models_classic_more.py compares the
# state_dicts themselves), parameter count.
LAYOUTS = [
    ("googlenet", {}, 364, "7f541ca29410efb1", 13004888),
    ("googlenet", {"aux_logits": False}, 344, "f66489fa14bd9d5a", 6624904),
    ("inception_v3", {}, 580, "aab0ac2cbaf84aa2", 27161264),
    ("inception_v3", {"aux_logits": False}, 566, "f3a329f258a780ee", 23834568),
    ("mnasnet0_5", {}, 314, "1ed44e7f7de28388", 2218512),
    ("mnasnet0_75", {}, 314, "93d711f59686004d", 3170208),
    ("mnasnet1_0", {}, 314, "c26097f381d52b59", 4383312),
    ("mnasnet1_3", {}, 314, "9ce90280583fa871", 6282256),
    ("regnet_x_400mf", {}, 428, "a620146711eeaf3e", 5495976),
    ("regnet_x_800mf", {}, 320, "586dc3c8f1acbb7c", 7259656),
    ("regnet_x_1_6gf", {}, 356, "c1a260a7b00a531c", 9190136),
    ("regnet_x_3_2gf", {}, 482, "f892a07a8de49009", 15296552),
    ("regnet_x_8gf", {}, 446, "fccf9ea872d43bf4", 39572648),
    ("regnet_x_16gf", {}, 428, "be447a28aff929a2", 54278536),
    ("regnet_x_32gf", {}, 446, "7ae1b5bc1949c5b3", 107811560),
    ("regnet_y_400mf", {}, 384, "f09a9d430ba9389b", 4344144),
    ("regnet_y_800mf", {}, 340, "f231872c05967ac7", 6432512),
    ("regnet_y_1_6gf", {}, 626, "ed96623b1aea474a", 11202430),
    ("regnet_y_3_2gf", {}, 494, "c9e6bcc15425c5e6", 19436338),
    ("regnet_y_8gf", {}, 406, "5397113dc7c97332", 39381472),
    ("regnet_y_16gf", {}, 428, "75477b95f83a4fa4", 83590140),
    ("regnet_y_32gf", {}, 472, "650dda4954e51709", 145046770),
    ("regnet_y_128gf", {}, 626, "b5f662e242f7be46", 644812894),
    ("shufflenet_v2_x0_5", {}, 338, "f0a5936e646f1bd4", 1366792),
    ("shufflenet_v2_x1_0", {}, 338, "81b349bc1cbbbc7a", 2278604),
    ("shufflenet_v2_x1_5", {}, 338, "506b4de341bf52b3", 3503624),
    ("shufflenet_v2_x2_0", {}, 338, "0c033bd0cd72af37", 7393996),
]

# torchvision's BlockParams of each RegNet: stage depths, widths, group widths.
REGNET_STAGES = {
    "regnet_y_400mf": ([1, 3, 6, 6], [48, 104, 208, 440], [8, 8, 8, 8]),
    "regnet_y_800mf": ([1, 3, 8, 2], [64, 144, 320, 784], [16, 16, 16, 16]),
    "regnet_y_1_6gf": ([2, 6, 17, 2], [48, 120, 336, 888], [24, 24, 24, 24]),
    "regnet_y_3_2gf": ([2, 5, 13, 1], [72, 216, 576, 1512], [24, 24, 24, 24]),
    "regnet_y_8gf": ([2, 4, 10, 1], [224, 448, 896, 2016], [56, 56, 56, 56]),
    "regnet_y_16gf": ([2, 4, 11, 1], [224, 448, 1232, 3024], [112, 112, 112, 112]),
    "regnet_y_32gf": ([2, 5, 12, 1], [232, 696, 1392, 3712], [232, 232, 232, 232]),
    "regnet_y_128gf": ([2, 7, 17, 1], [528, 1056, 2904, 7392], [264, 264, 264, 264]),
    "regnet_x_400mf": ([1, 2, 7, 12], [32, 64, 160, 400], [16, 16, 16, 16]),
    "regnet_x_800mf": ([1, 3, 7, 5], [64, 128, 288, 672], [16, 16, 16, 16]),
    "regnet_x_1_6gf": ([2, 4, 10, 2], [72, 168, 408, 912], [24, 24, 24, 24]),
    "regnet_x_3_2gf": ([2, 6, 15, 2], [96, 192, 432, 1008], [48, 48, 48, 48]),
    "regnet_x_8gf": ([2, 5, 15, 1], [80, 240, 720, 1920], [80, 120, 120, 120]),
    "regnet_x_16gf": ([2, 6, 13, 1], [256, 512, 896, 2048], [128, 128, 128, 128]),
    "regnet_x_32gf": ([2, 7, 13, 1], [336, 672, 1344, 2520], [168, 168, 168, 168]),
}

# builder, input side, kwargs: eval-mode forwards on small inputs
FORWARD = [
    ("googlenet", 64, {"init_weights": False}),
    ("inception_v3", 75, {"init_weights": False}),
    ("mnasnet0_5", 64, {}),
    ("regnet_x_400mf", 64, {}),
    ("regnet_y_400mf", 64, {}),
    ("shufflenet_v2_x0_5", 64, {}),
]


def _fingerprint(state_dict) -> str:
    text = "\n".join(f"{k} {tuple(v.shape)}" for k, v in state_dict.items())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_builders_registered_with_their_weights(name):
    assert name in models.list_models()
    builder = getattr(models, name)
    assert models.get_model_builder(name) is builder
    weights = getattr(models, WEIGHTS[name])
    assert models.get_model_weights(name) is weights
    assert models.get_weight(f"{WEIGHTS[name]}.DEFAULT") is weights.DEFAULT
    counts = {member.meta["num_params"] for member in weights}
    assert len(counts) == 1
    for member in weights:
        assert member.url.startswith("https://download.pytorch.org/models/")
        assert member.url.endswith(".pth")
        assert len(member.meta["categories"]) == 1000
        assert member.meta["_metrics"]["ImageNet-1K"]["acc@1"] > 50
    assert weights.verify(weights.DEFAULT.name) is weights.DEFAULT
    with pytest.raises(TypeError, match="Invalid Weight class provided"):
        weights.verify(models.AlexNet_Weights.IMAGENET1K_V1)


def test_public_names():
    expected = {
        googlenet_module: {"GoogLeNet", "GoogLeNetOutputs", "GoogLeNet_Weights", "googlenet"},
        inception: {"Inception3", "InceptionOutputs", "Inception_V3_Weights", "inception_v3"},
        mnasnet: {"MNASNet", "mnasnet1_3", "MNASNet1_3_Weights"},
        regnet: {"RegNet", "regnet_y_128gf", "RegNet_X_32GF_Weights"},
        shufflenetv2: {"ShuffleNetV2", "shufflenet_v2_x2_0", "ShuffleNet_V2_X2_0_Weights"},
    }
    for module, names in expected.items():
        assert names <= set(module.__all__)
        for name in module.__all__:
            assert getattr(models, name) is getattr(module, name)
    assert len([n for n in regnet.__all__ if n.endswith("_Weights")]) == 15
    assert models._GoogLeNetOutputs is models.GoogLeNetOutputs
    assert models._InceptionOutputs is models.InceptionOutputs
    assert models.RegNet_Y_128GF_Weights.DEFAULT is (
        models.RegNet_Y_128GF_Weights.IMAGENET1K_SWAG_E2E_V1
    )
    assert [m.name for m in models.RegNet_Y_16GF_Weights] == [
        "IMAGENET1K_V1", "IMAGENET1K_V2", "IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "name,kwargs,n_keys,fingerprint,n_params",
    LAYOUTS,
    ids=[f"{c[0]}{'-noaux' if c[1] else ''}" for c in LAYOUTS],
)
def test_state_dict_layout_matches_torchvision(name, kwargs, n_keys, fingerprint, n_params):
    if name in ("googlenet", "inception_v3"):
        kwargs = {**kwargs, "init_weights": False}
    with ember.device("meta"):  # layouts only: no memory, no initialisation cost
        model = models.get_model(name, **kwargs)
    state_dict = model.state_dict()
    assert len(state_dict) == n_keys
    assert _fingerprint(state_dict) == fingerprint
    assert _n_params(model) == n_params


@pytest.mark.parametrize("name", sorted(REGNET_STAGES))
def test_regnet_block_params(name):
    depths, widths, group_widths = REGNET_STAGES[name]
    params = regnet.BlockParams.from_init_params(**regnet._ARCHS[name], num_classes=3)
    assert params.depths == depths
    assert params.widths == widths
    assert params.group_widths == group_widths
    assert params.strides == [2, 2, 2, 2]
    assert params.bottleneck_multipliers == [1.0] * 4
    assert params.se_ratio == (0.25 if name.startswith("regnet_y") else None)


# ----------------------------------------------------------------------------- forward


@pytest.mark.parametrize("name,side,kwargs", FORWARD, ids=[c[0] for c in FORWARD])
def test_eval_forward_shapes(name, side, kwargs):
    ember.manual_seed(0)
    model = models.get_model(name, num_classes=7, **kwargs).eval()
    with ember.no_grad():
        out = model(ember.randn(2, 3, side, side))
    assert isinstance(out, ember.Tensor)
    assert out.shape == (2, 7)
    values = out.numpy()
    assert np.isfinite(values).all()
    assert np.abs(values[0] - values[1]).max() > 0  # the two images give different logits


def test_googlenet_aux_outputs_in_train_mode():
    ember.manual_seed(0)
    model = models.googlenet(num_classes=5, init_weights=False).train()
    x = ember.randn(2, 3, 32, 32)
    out = model(x)
    assert isinstance(out, models.GoogLeNetOutputs)
    assert out._fields == ("logits", "aux_logits2", "aux_logits1")
    assert out.logits.shape == out.aux_logits2.shape == out.aux_logits1.shape == (2, 5)
    model.eval()
    with ember.no_grad():
        assert isinstance(model(x), ember.Tensor)

    plain = models.googlenet(num_classes=5, aux_logits=False, init_weights=False).train()
    assert plain.aux1 is None and plain.aux2 is None
    assert not any(k.startswith("aux") for k in plain.state_dict())
    assert isinstance(plain(x), ember.Tensor)


class _PooledAux(nn.Module):
    """A cheap auxiliary head that works on any feature size (InceptionAux needs 17x17)."""

    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x):
        assert x.shape[1] == 768  # Mixed_6e's output
        return self.fc(ember.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def test_inception_aux_outputs_in_train_mode():
    ember.manual_seed(0)
    blocks = [
        inception.BasicConv2d, inception.InceptionA, inception.InceptionB, inception.InceptionC,
        inception.InceptionD, inception.InceptionE, _PooledAux,
    ]  # fmt: skip
    model = models.Inception3(num_classes=4, inception_blocks=blocks, init_weights=False).train()
    assert isinstance(model.AuxLogits, _PooledAux)
    out = model(ember.randn(2, 3, 75, 75))
    assert isinstance(out, models.InceptionOutputs)
    assert out._fields == ("logits", "aux_logits")
    assert out.logits.shape == out.aux_logits.shape == (2, 4)
    assert out.aux_logits.grad_fn is not None

    # the real head on the 17x17 features it is made for
    head = inception.InceptionAux(768, 4).eval()
    with ember.no_grad():
        assert head(ember.randn(2, 768, 17, 17)).shape == (2, 4)

    with ember.device("meta"):
        full = models.inception_v3(init_weights=False)
        plain = models.inception_v3(aux_logits=False, init_weights=False)
    names = list(full._modules)
    assert names.index("AuxLogits") == names.index("Mixed_6e") + 1  # torchvision's key order
    assert plain.AuxLogits is None and "AuxLogits" not in plain._modules


def test_transform_input():
    x = ember.randn(2, 3, 8, 8)
    g = models.googlenet(transform_input=True, init_weights=False)
    got = g._transform_input(x).numpy()
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    expected = ((x.numpy() * std + mean) - 0.5) / 0.5
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert models.googlenet(init_weights=False)._transform_input(x) is x
    i = models.inception_v3(transform_input=True, init_weights=False)
    np.testing.assert_allclose(i._transform_input(x).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_channel_shuffle_and_shufflenet_block():
    x = ember.arange(2 * 6 * 2 * 3, dtype=ember.float32).reshape(2, 6, 2, 3)
    got = shufflenetv2.channel_shuffle(x, 2).numpy()
    ref = x.numpy().reshape(2, 2, 3, 2, 3).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 3)
    np.testing.assert_array_equal(got, ref)
    assert [int(got[0, c, 0, 0]) // 6 for c in range(6)] == [0, 3, 1, 4, 2, 5]

    block = shufflenetv2.InvertedResidual(8, 8, 1).eval()
    assert len(block.branch1) == 0
    x = ember.randn(1, 8, 5, 5)
    with ember.no_grad():
        out = block(x).numpy()
    # stride 1: the first half passes through untouched, landing on the even channels
    np.testing.assert_array_equal(out[:, 0::2], x.numpy()[:, :4])
    down = shufflenetv2.InvertedResidual(8, 16, 2)
    assert down(ember.randn(1, 8, 6, 6)).shape == (1, 16, 3, 3)


# ----------------------------------------------------------------------------- initialisation


def test_googlenet_default_init():
    ember.manual_seed(0)
    with pytest.warns(FutureWarning, match="default weight initialization of GoogleNet"):
        model = models.GoogLeNet(aux_logits=False)  # the aux heads' 6.4M weights: slow to draw
    w = model.inception4e.branch2[1].conv.weight.detach().numpy()
    assert abs(w.std() - 0.01) < 0.001 and abs(w.mean()) < 0.001
    fc = model.fc.weight.detach().numpy()
    assert abs(fc.std() - 0.01) < 0.001
    assert (model.fc.bias.detach().numpy() != 0).any()  # biases keep their layer default
    assert (model.conv1.bn.weight.detach().numpy() == 1).all()
    assert (model.conv1.bn.bias.detach().numpy() == 0).all()
    assert model.conv1.bn.eps == 0.001
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = models.GoogLeNet(init_weights=False)  # no warning
    w = plain.inception4e.branch2[1].conv.weight.detach().numpy()  # Conv2d's own kaiming-uniform
    bound = 1 / math.sqrt(w[0].size)
    assert np.abs(w).max() <= bound and w.std() > 0.5 * bound


def test_mnasnet_regnet_shufflenet_default_init():
    ember.manual_seed(0)
    m = models.mnasnet0_5()
    conv = m.layers[8][0].layers[0].weight.detach().numpy()  # 1x1 conv, fan_out = out channels
    assert abs(conv.std() - math.sqrt(2 / conv.shape[0])) < 0.1 * math.sqrt(2 / conv.shape[0])
    fc = m.classifier[1].weight.detach().numpy()
    bound = math.sqrt(3 / fc.shape[0])  # kaiming_uniform, fan_out, gain 1 (sigmoid)
    assert np.abs(fc).max() <= bound and np.abs(fc).max() > 0.95 * bound
    assert (m.classifier[1].bias.detach().numpy() == 0).all()
    assert m.layers[1].momentum == pytest.approx(1 - 0.9997)

    r = models.regnet_y_400mf()
    conv = r.trunk_output.block4[0].f.b[0]  # grouped 3x3: fan_out ignores the groups
    std = math.sqrt(2 / (9 * conv.out_channels))
    assert abs(conv.weight.detach().numpy().std() - std) < 0.1 * std
    assert abs(r.fc.weight.detach().numpy().std() - 0.01) < 0.001
    assert (r.fc.bias.detach().numpy() == 0).all()
    assert isinstance(r.trunk_output.block1[0].f.se, SqueezeExcitation)

    s = models.shufflenet_v2_x0_5()  # layer defaults, as in torchvision
    fc = s.fc.weight.detach().numpy()
    assert np.abs(fc).max() <= 1 / math.sqrt(fc.shape[1])
    assert (s.fc.bias.detach().numpy() != 0).any()


# ----------------------------------------------------------------------------- weights path


@pytest.fixture
def local_checkpoint(monkeypatch):
    """Serve ``state_dict`` as the checkpoint of ``enum`` (no download)."""

    def install(enum, state_dict):
        monkeypatch.setattr(enum, "get_state_dict", lambda self, *a, **k: state_dict)

    return install


def test_googlenet_with_weights_drops_aux_heads(local_checkpoint):
    ember.manual_seed(0)
    source = models.googlenet(init_weights=False)
    local_checkpoint(models.GoogLeNet_Weights, source.state_dict())
    model = models.googlenet(weights=models.GoogLeNet_Weights.IMAGENET1K_V1)
    assert model.transform_input is True
    assert model.aux_logits is False and model.aux1 is None and model.aux2 is None
    expected = source.fc.weight.detach().numpy()
    np.testing.assert_array_equal(model.fc.weight.detach().numpy(), expected)
    assert isinstance(model.train()(ember.randn(2, 3, 32, 32)), ember.Tensor)

    with pytest.warns(UserWarning, match="auxiliary heads in the pretrained googlenet"):
        kept = models.googlenet(weights="IMAGENET1K_V1", aux_logits=True, transform_input=False)
    assert kept.aux1 is not None and kept.transform_input is False
    with pytest.raises(ValueError, match="expected value 1000 but got 10 instead"):
        models.googlenet(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="'aux_logits' expected value True but got False"):
        models.googlenet(weights="DEFAULT", aux_logits=False)


def test_inception_v3_with_weights(local_checkpoint):
    with ember.device("meta"):
        source = models.inception_v3(init_weights=False)
    local_checkpoint(models.Inception_V3_Weights, source.state_dict())
    with ember.device("meta"):
        model = models.inception_v3(weights=models.Inception_V3_Weights.DEFAULT)
        assert model.transform_input is True and model.aux_logits is True
        assert model.AuxLogits is not None
    # as in torchvision, a checkpoint fixes aux_logits=True: False is refused, not dropped
    with pytest.raises(ValueError, match="'aux_logits' expected value True but got False"):
        models.inception_v3(weights="IMAGENET1K_V1", aux_logits=False)


def test_legacy_pretrained_argument():
    with pytest.warns(UserWarning) as record:
        model = models.shufflenet_v2_x0_5(pretrained=False, num_classes=3)
    messages = [str(w.message) for w in record]
    assert any("'pretrained' is deprecated since 0.13" in m for m in messages)
    assert any("equivalent to passing `weights=None`" in m for m in messages)
    assert model.fc.out_features == 3
    with pytest.raises(ValueError, match="No weights available for model regnet_y_128gf"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.regnet_y_128gf(pretrained=True)


# ----------------------------------------------------------------------------- MNASNet versions


def test_mnasnet_loads_version_1_checkpoints():
    ember.manual_seed(0)
    v1 = models.mnasnet0_5()
    assert v1.layers[0].out_channels == 16  # version 2 scales the stem with alpha
    assert v1.state_dict()._metadata[""]["version"] == 2
    with pytest.warns(UserWarning, match="A new version of MNASNet model has been implemented"):
        v1._load_from_state_dict({}, "", {"version": 1}, False, [], [], [])
    assert v1._version == 1
    assert v1.layers[0].out_channels == 32 and v1.layers[7].num_features == 16
    assert v1.layers[8][0].layers[0].in_channels == 16
    v1_state = v1.state_dict()
    assert v1_state._metadata[""]["version"] == 1

    model = models.mnasnet0_5()
    with pytest.warns(UserWarning, match="A new version of MNASNet"):
        result = model.load_state_dict(v1_state)
    assert not result.missing_keys and not result.unexpected_keys
    model.eval()  # after loading: the patched stem's modules are new (as in torchvision)
    v1.eval()
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        np.testing.assert_array_equal(model(x).numpy(), v1(x).numpy())

    # alpha 1.0: the two versions have the same stem, nothing to patch
    same = models.mnasnet1_0()
    state = same.state_dict()
    state._metadata[""]["version"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        models.mnasnet1_0().load_state_dict(state)

    with pytest.raises(ValueError, match="version should be set to 1 or 2 instead of None"):
        models.mnasnet0_5().load_state_dict(dict(models.mnasnet0_5().state_dict()))


# ----------------------------------------------------------------------------- errors


def test_constructor_errors():
    with pytest.warns(FutureWarning, match="default weight initialization of GoogleNet"):
        with pytest.raises(ValueError, match="blocks length should be 3 instead of 2"):
            models.GoogLeNet(blocks=[googlenet_module.BasicConv2d, googlenet_module.Inception])
    with pytest.warns(FutureWarning, match="default weight initialization of inception_v3"):
        with pytest.raises(ValueError, match="length of inception_blocks should be 7 instead of 0"):
            models.Inception3(inception_blocks=[])
    with pytest.raises(ValueError, match="alpha should be greater than 0.0 instead of 0"):
        models.MNASNet(0)
    with pytest.raises(ValueError, match="stride should be 1 or 2 instead of 3"):
        mnasnet._InvertedResidual(8, 8, 3, 3, 3)
    with pytest.raises(ValueError, match="kernel_size should be 3 or 5 instead of 7"):
        mnasnet._InvertedResidual(8, 8, 7, 1, 3)
    with pytest.raises(ValueError, match="repeats should be >= 1, instead got 0"):
        mnasnet._stack(8, 8, 3, 1, 3, 0, 0.1)
    with pytest.raises(ValueError, match="round_up_bias should be greater than 0.0"):
        mnasnet._round_to_multiple_of(10, 8, 1.0)
    assert [mnasnet._round_to_multiple_of(v, 8) for v in (83, 84, 3)] == [80, 88, 8]
    with pytest.raises(ValueError, match="expected stages_repeats as list of 3 positive ints"):
        models.ShuffleNetV2([4, 8], [24, 48, 96, 192, 1024])
    with pytest.raises(ValueError, match="expected stages_out_channels as list of 5"):
        models.ShuffleNetV2([4, 8, 4], [24, 48, 96, 192])
    with pytest.raises(ValueError, match="illegal stride value"):
        shufflenetv2.InvertedResidual(8, 8, 4)
    with pytest.raises(ValueError, match="Invalid combination of stride 1, inp 8 and oup 10"):
        shufflenetv2.InvertedResidual(8, 10, 1)
    for bad in ({"w_0": 12}, {"w_0": 0}, {"w_a": -1.0}, {"w_m": 1.0}):
        args = {"depth": 4, "w_0": 24, "w_a": 24.0, "w_m": 2.5, "group_width": 8, **bad}
        with pytest.raises(ValueError, match="Invalid RegNet settings"):
            regnet.BlockParams.from_init_params(**args)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'depth'"):
        models.regnet_x_400mf(depth=3)


def test_regnet_custom_arguments():
    params = regnet.BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8)
    model = models.RegNet(params, num_classes=3, stem_width=8, activation=nn.SiLU)
    assert model.stem[0].out_channels == 8 and isinstance(model.stem[2], nn.SiLU)
    assert [stage[0].f.c[0].out_channels for stage in model.trunk_output] == params.widths
    assert model.fc.out_features == 3
    assert list(model.trunk_output.block1._modules)[0] == "block1-0"
    assert model(ember.randn(1, 3, 32, 32)).shape == (1, 3)
    custom = models.regnet_x_400mf(norm_layer=partial(nn.BatchNorm2d, eps=1e-3))
    assert custom.trunk_output.block2[0].f.a[1].eps == 1e-3
    norm = models.regnet_y_400mf().stem[1]
    assert isinstance(norm, nn.BatchNorm2d) and norm.eps == 1e-5 and norm.momentum == 0.1


# ----------------------------------------------------------------------------- training


def test_shufflenet_training_step():
    ember.manual_seed(0)
    model = models.shufflenet_v2_x0_5(num_classes=3).train()
    x, y = ember.randn(4, 3, 32, 32), ember.tensor([0, 1, 2, 1])
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    assert not [n for n, p in model.named_parameters() if p.grad is None]
    assert np.abs(model.stage3[0].branch2[3].weight.grad.numpy()).sum() > 0
    assert model.conv1[1].num_batches_tracked.item() == 1

    # A gradient step lowers the loss by what the gradient predicts (frozen batch norms
    # keep the loss smooth): loss(p - lr g) ~ loss(p) - lr |g|^2.
    model.eval()
    model.zero_grad()
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    predicted = 0.01 * sum((p.grad * p.grad).sum().item() for p in model.parameters())
    opt.step()
    with ember.no_grad():
        decrease = loss.item() - nn.functional.cross_entropy(model(x), y).item()
    assert predicted > 1e-5
    assert 0.8 * predicted < decrease < 1.2 * predicted


def test_googlenet_training_with_aux_losses_reaches_aux_heads():
    ember.manual_seed(0)
    model = models.googlenet(num_classes=3, init_weights=False).train()
    x, y = ember.randn(2, 3, 32, 32), ember.tensor([0, 2])
    out = model(x)
    ce = nn.functional.cross_entropy
    loss = ce(out.logits, y) + 0.3 * ce(out.aux_logits1, y) + 0.3 * ce(out.aux_logits2, y)
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing
    assert np.abs(model.aux1.fc2.weight.grad.numpy()).sum() > 0
    assert np.abs(model.aux2.conv.conv.weight.grad.numpy()).sum() > 0


def test_regnet_and_mnasnet_gradients():
    ember.manual_seed(0)
    for model in (models.regnet_y_400mf(num_classes=3), models.mnasnet0_5(num_classes=3)):
        model.train()
        loss = nn.functional.cross_entropy(model(ember.randn(2, 3, 32, 32)), ember.tensor([0, 2]))
        loss.backward()
        assert not [n for n, p in model.named_parameters() if p.grad is None]
        assert np.isfinite(loss.item())
