"""Parity with torchvision: Swin Transformer V1/V2 and MaxViT.

torchvision builds each model (weights=None) and its state is randomised; its state_dict goes
through a real ``torch.save`` file into ``ember.load`` + ``load_state_dict``, and the
eval-mode outputs on the same random input agree to 1e-4 relative. Inputs that are not
multiples of the window exercise padding, the cyclic shift and its attention mask; a small
non-square-window model also compares every parameter's gradient.
"""

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models import maxvit as maxvit_module  # noqa: E402
from ember.vision.models import swin_transformer as swin_module  # noqa: E402

# (builder name, input height, input width, batch)
CASES = [
    ("swin_t", 75, 61, 2),  # 19x15 patches: padded to 21x21, shifted; later stages unshifted
    ("swin_v2_t", 90, 64, 1),
    # MaxViT's input size is fixed at construction (224 for maxvit_t): the heaviest case
    pytest.param("maxvit_t", 224, 224, 1, marks=pytest.mark.slow),
]

WEIGHTS = [
    "Swin_T_Weights",
    "Swin_S_Weights",
    "Swin_B_Weights",
    "Swin_V2_T_Weights",
    "Swin_V2_S_Weights",
    "Swin_V2_B_Weights",
    "MaxVit_T_Weights",
]


def _randomize(module):
    """Give every float tensor non-trivial values: zero-initialised biases, unit norms and BN
    statistics, position bias tables and continuous position bias MLPs that matter, and
    logit scales on both sides of V2's clamp at log(100)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if not t.is_floating_point() or name.endswith("relative_coords_table"):
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif name.endswith(("running_mean", "bias")):
                t.copy_(torch.randn(t.shape, generator=gen) * 0.1)
            elif name.endswith("relative_position_bias_table"):
                t.copy_(torch.randn(t.shape, generator=gen))
            elif ".cpb_mlp." in name:
                t.copy_(torch.randn(t.shape, generator=gen) * (1.0 if ".0." in name else 0.1))
            elif name.endswith("logit_scale"):
                t.copy_(torch.rand(t.shape, generator=gen) * 4 + 2)  # log(100) = 4.6
            elif t.dim() == 1:  # norm weights
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)


def _transfer(ref, ours, path):
    """``ref``'s state through a torch.save file into ``ours``; same keys, same shapes."""
    torch.save(ref.state_dict(), path)
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
        assert str(our_sd[key].dtype).split(".")[1] == str(value.dtype).split(".")[1], key
    result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys


def _assert_close(got, expected):
    assert got.shape == expected.shape
    scale = np.abs(expected).max()
    assert scale > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name,h,w,batch", CASES, ids=["swin_t", "swin_v2_t", "maxvit_t"])
def test_outputs_match_torchvision(name, h, w, batch, tmp_path):
    torch.manual_seed(0)
    ref = torchvision.models.get_model(name, weights=None).eval()
    _randomize(ref)
    ours = getattr(models, name)().eval()
    _transfer(ref, ours, tmp_path / f"{name}.pth")

    x = np.random.RandomState(1).standard_normal((batch, 3, h, w)).astype(np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.tensor(x)).numpy()
    _assert_close(got, expected)


def _small_swin(lib, v2):
    mod = torchvision.models.swin_transformer if lib is torch else swin_module
    extra = (
        {"block": mod.SwinTransformerBlockV2, "downsample_layer": mod.PatchMergingV2} if v2 else {}
    )
    return mod.SwinTransformer(
        patch_size=[2, 2], embed_dim=8, depths=[2, 2], num_heads=[2, 4], window_size=[3, 5],
        stochastic_depth_prob=0.0, num_classes=5, **extra,
    )  # fmt: skip


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_small_swin_outputs_and_gradients_match(v2, tmp_path):
    """A 3x5 window (non-square: the index and shifts per axis) on 26x31 and 13x9 inputs;
    train mode without dropout or stochastic depth, so every gradient must agree too."""
    torch.manual_seed(0)
    ref = _small_swin(torch, v2).train()
    _randomize(ref)
    ours = _small_swin(ember, v2).train()
    _transfer(ref, ours, tmp_path / "small.pth")
    for shape in [(2, 3, 26, 31), (1, 3, 13, 9)]:
        x = np.random.RandomState(2).standard_normal(shape).astype(np.float32)
        target = np.random.RandomState(3).standard_normal((shape[0], 5)).astype(np.float32)
        ref.zero_grad()
        ours.zero_grad()
        out_ref = ref(torch.from_numpy(x))
        (out_ref * torch.from_numpy(target)).sum().backward()
        out = ours(ember.tensor(x))
        (out * ember.tensor(target)).sum().backward()
        _assert_close(out.detach().numpy(), out_ref.detach().numpy())
        ref_params = dict(ref.named_parameters())
        for pname, p in ours.named_parameters():
            expected = ref_params[pname].grad.numpy()
            got = p.grad.numpy()
            scale = np.abs(expected).max()
            np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4 * scale + 1e-7,
                                       err_msg=pname)


def test_shifted_window_attention_function_matches(tmp_path):
    rng = np.random.RandomState(4)
    x = rng.standard_normal((2, 7, 10, 8)).astype(np.float32)
    qkv_w, proj_w = rng.standard_normal((24, 8)) * 0.3, rng.standard_normal((8, 8)) * 0.3
    qkv_b, proj_b = rng.standard_normal(24), rng.standard_normal(8)
    bias = rng.standard_normal((1, 2, 12, 12))
    logit = np.array([1.0, 5.0]).reshape(2, 1, 1)
    arrays = [a.astype(np.float32) for a in (qkv_w, proj_w, bias, qkv_b, proj_b, logit)]
    for shift, use_logit in [([1, 2], False), ([1, 2], True), ([0, 0], False), ([2, 1], True)]:
        t = [torch.from_numpy(a) for a in arrays]
        e = [ember.tensor(a) for a in arrays]
        kwargs = {"training": False}
        expected = torchvision.models.swin_transformer.shifted_window_attention(
            torch.from_numpy(x), t[0], t[1], t[2], [3, 4], 2, shift, qkv_bias=t[3],
            proj_bias=t[4], logit_scale=t[5] if use_logit else None, **kwargs,
        ).numpy()  # fmt: skip
        got = swin_module.shifted_window_attention(
            ember.tensor(x), e[0], e[1], e[2], [3, 4], 2, shift, qkv_bias=e[3],
            proj_bias=e[4], logit_scale=e[5] if use_logit else None, **kwargs,
        ).numpy()  # fmt: skip
        _assert_close(got, expected)


def test_small_maxvit_train_gradients_match(tmp_path):
    torch.manual_seed(0)
    config = dict(
        input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16],
        block_layers=[1, 2], head_dim=4, stochastic_depth_prob=0.0, num_classes=5,
    )  # fmt: skip
    ref = torchvision.models.maxvit.MaxVit(**config).train()
    _randomize(ref)
    ours = maxvit_module.MaxVit(**config).train()
    _transfer(ref, ours, tmp_path / "maxvit.pth")
    x = np.random.RandomState(2).standard_normal((2, 3, 32, 32)).astype(np.float32)
    out_ref = ref(torch.from_numpy(x))
    out_ref.square().sum().backward()
    out = ours(ember.tensor(x))
    out.square().sum().backward()
    _assert_close(out.detach().numpy(), out_ref.detach().numpy())
    ref_params = dict(ref.named_parameters())
    for pname, p in ours.named_parameters():
        expected = ref_params[pname].grad.numpy()
        scale = np.abs(expected).max()
        np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-3,
                                   atol=1e-4 * scale + 1e-7, err_msg=pname)
    # batch statistics were updated the same way (momentum 0.01)
    for key, value in ref.state_dict().items():
        if "running" in key:
            np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(),
                                       rtol=1e-4, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("name", ["swin_t", "swin_v2_t", "maxvit_t"])
def test_default_init_statistics_match(name):
    """Same initialisation scheme: per-tensor mean/std close to torchvision's; the
    deterministic tensors (position indices, coordinates, logit scales, unit norms) equal."""
    torch.manual_seed(0)
    ref = torchvision.models.get_model(name, weights=None).state_dict()
    ember.manual_seed(0)
    ours = getattr(models, name)().state_dict()
    for key, value in ref.items():
        ours_np, ref_np = ours[key].numpy(), value.numpy()
        if not value.is_floating_point() or key.endswith(
            ("relative_coords_table", "logit_scale", "running_mean", "running_var")
        ):
            np.testing.assert_array_equal(ours_np, ref_np, err_msg=key)
            continue
        if ref_np.std() == 0:
            np.testing.assert_array_equal(ours_np, ref_np, err_msg=key)
            continue
        if value.numel() < 2000:
            continue
        assert abs(ours_np.std() - ref_np.std()) <= 0.1 * ref_np.std() + 1e-6, key
        assert abs(ours_np.mean() - ref_np.mean()) <= 0.1 * ref_np.std() + 1e-6, key


@pytest.mark.parametrize("enum_name", WEIGHTS)
def test_weights_enums_match_torchvision(enum_name):
    ours = getattr(models, enum_name)
    ref = getattr(torchvision.models, enum_name)
    assert [m.name for m in ours] == [m.name for m in ref]
    assert ours.DEFAULT.name == ref.DEFAULT.name
    for member in ref:
        a, b = ours[member.name], member
        assert a.url == b.url
        pairs = zip(a.meta["categories"], b.meta["categories"])
        diff = [i for i, (x, y) in enumerate(pairs) if x != y]
        assert len(a.meta["categories"]) == len(b.meta["categories"]) == 1000
        # Index 134 is "crane" (timm's lemma) vs torchvision's "crane bird": models/ATTRIBUTION.md.
        assert diff in ([], [134])
        assert set(a.meta) == set(b.meta)
        for key in b.meta:
            if key != "categories":
                assert a.meta[key] == b.meta[key], key
        ta, tb = a.transforms(), b.transforms()
        assert ta.crop_size == tb.crop_size and ta.resize_size == tb.resize_size
        assert ta.mean == tb.mean and ta.std == tb.std
        assert ta.interpolation.value == tb.interpolation.value


def test_public_names_match_torchvision():
    for ours, ref in [
        (swin_module, torchvision.models.swin_transformer),
        (maxvit_module, torchvision.models.maxvit),
    ]:
        assert ours.__all__ == ref.__all__
        for name in ref.__all__:
            assert getattr(models, name) is getattr(ours, name)
    for name in [
        "PatchMerging", "PatchMergingV2", "ShiftedWindowAttention", "ShiftedWindowAttentionV2",
        "SwinTransformerBlock", "SwinTransformerBlockV2", "shifted_window_attention",
    ]:  # fmt: skip
        assert hasattr(swin_module, name)
    for name in ["MBConv", "RelativePositionalMultiHeadAttention", "PartitionAttentionLayer",
                 "MaxVitLayer", "MaxVitBlock", "SwapAxes", "WindowPartition",
                 "WindowDepartition"]:  # fmt: skip
        assert hasattr(maxvit_module, name)
    for cls in ["SwinTransformer", "MaxVit"]:
        ours = inspect.signature(getattr(models, cls).__init__).parameters
        ref = inspect.signature(getattr(torchvision.models, cls).__init__).parameters
        assert list(ours) == list(ref)
        for pname, param in ref.items():
            default = ours[pname].default
            if param.default is not inspect.Parameter.empty and not callable(param.default):
                assert default == param.default, (cls, pname)
            else:
                assert (default is inspect.Parameter.empty) == (
                    param.default is inspect.Parameter.empty
                ), (cls, pname)


def test_feature_extraction_node_names_match():
    """The same graph node names as torchvision's (its fx leaves ``_patch_merging_pad``,
    ``_get_relative_position_bias`` and ``shifted_window_attention`` are ember.fx leaves too),
    so ``create_feature_extractor`` takes the same ``return_nodes``."""
    from torchvision.models.feature_extraction import get_graph_node_names as tv_names

    from ember.vision.models.feature_extraction import (
        create_feature_extractor,
        get_graph_node_names,
    )

    maxvit_config = dict(
        input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16],
        block_layers=[1, 1], head_dim=4, stochastic_depth_prob=0.1, num_classes=5,
    )  # fmt: skip
    pairs = [
        (_small_swin(torch, False), _small_swin(ember, False)),
        (_small_swin(torch, True), _small_swin(ember, True)),
        (
            torchvision.models.maxvit.MaxVit(**maxvit_config),
            maxvit_module.MaxVit(**maxvit_config),
        ),
    ]
    for ref, ours in pairs:
        assert get_graph_node_names(ours) == tv_names(ref)
    swin = pairs[1][1].eval()
    extractor = create_feature_extractor(swin, ["features.1.1.attn", "features.2", "norm"])
    with ember.no_grad():
        out = extractor(ember.randn(1, 3, 26, 31))
    assert {k: tuple(v.shape) for k, v in out.items()} == {
        "features.1.1.attn": (1, 13, 15, 8), "features.2": (1, 7, 8, 16), "norm": (1, 7, 8, 16),
    }  # fmt: skip
