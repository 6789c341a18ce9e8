"""ember.vision.ops.misc, stochastic_depth, drop_block, feature_pyramid_network and poolers
against NumPy references: values, state_dict keys, reprs, errors."""

import warnings
from collections import OrderedDict

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.vision import ops
from ember.vision.ops import misc
from ember.vision.ops.drop_block import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d
from ember.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
    LastLevelP6P7,
)
from ember.vision.ops.poolers import LevelMapper, MultiScaleRoIAlign
from ember.vision.ops.stochastic_depth import StochasticDepth, stochastic_depth


def np_conv2d(x, w, b=None, stride=1, pad=0):
    """Cross-correlation of ``x`` (N, C, H, W) with ``w`` (O, C, kh, kw)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(x, w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    out = np.einsum("nchwij,ocij->nohw", win, w)
    return out if b is None else out + b[None, :, None, None]


def np_nearest(x, size):
    """``interpolate(mode="nearest")`` to ``size``: source index ``floor(i * in / out)``."""
    h, w = x.shape[-2:]
    rows = np.floor(np.arange(size[0]) * (h / size[0])).astype(int)
    cols = np.floor(np.arange(size[1]) * (w / size[1])).astype(int)
    return x[..., rows[:, None], cols[None, :]]


def params(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


# -- misc ------------------------------------------------------------------------------------

def test_frozen_batch_norm_buffers_forward_repr():
    m = misc.FrozenBatchNorm2d(3)
    assert repr(m) == "FrozenBatchNorm2d(3, eps=1e-05)"
    assert repr(misc.FrozenBatchNorm2d(4, eps=1e-3)) == "FrozenBatchNorm2d(4, eps=0.001)"
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var"]
    assert list(m.parameters()) == [] and m.eps == 1e-5
    rng = np.random.default_rng(0)
    w, b, rm = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    rv = rng.random(3) + 0.5
    # a BatchNorm2d checkpoint loads strictly: its num_batches_tracked is dropped
    bn = nn.BatchNorm2d(3)
    bn.load_state_dict({"weight": ember.tensor(w, dtype=ember.float32),
                        "bias": ember.tensor(b, dtype=ember.float32),
                        "running_mean": ember.tensor(rm, dtype=ember.float32),
                        "running_var": ember.tensor(rv, dtype=ember.float32),
                        "num_batches_tracked": ember.tensor(7)})
    sd = bn.state_dict()
    assert "num_batches_tracked" in sd
    result = m.load_state_dict(sd)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    want = (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5) * w[:, None, None]
    want += b[:, None, None]
    got = m(ember.tensor(x))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    bn.eval()
    np.testing.assert_allclose(got.numpy(), bn(ember.tensor(x)).detach().numpy(), atol=1e-5)
    # frozen: the input gets gradients, the buffers none
    xd = ember.tensor(x.astype(np.float64), requires_grad=True)
    m.double()
    assert gradcheck(m, (xd,))


def test_conv_norm_activation_family():
    m = misc.Conv2dNormActivation(3, 8, kernel_size=(3, 5), stride=2, dilation=(1, 2))
    assert [type(c) for c in m] == [nn.Conv2d, nn.BatchNorm2d, nn.ReLU]
    assert m[0].padding == (1, 4) and m[0].bias is None and m[2].inplace is True
    assert m.out_channels == 8 and isinstance(m, misc.ConvNormActivation)
    assert list(m.state_dict())[:2] == ["0.weight", "1.weight"]
    m = misc.Conv2dNormActivation(3, 8, 1, norm_layer=None, activation_layer=nn.Hardswish,
                                  inplace=None)
    assert [type(c) for c in m] == [nn.Conv2d, nn.Hardswish] and m[0].bias is not None
    assert m[0].padding == (0, 0)
    m3 = misc.Conv3dNormActivation(2, 4, kernel_size=(1, 3, 3), bias=True)
    assert [type(c) for c in m3] == [nn.Conv3d, nn.BatchNorm3d, nn.ReLU]
    assert m3[0].padding == (0, 1, 1) and m3[0].bias is not None
    assert misc.Conv3dNormActivation(2, 4, 5, dilation=2)[0].padding == (4, 4, 4)
    with pytest.warns(UserWarning, match="Don't use ConvNormActivation directly"):
        misc.ConvNormActivation(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        misc.Conv2dNormActivation(2, 4)
    # values: 1x1 conv, eval BatchNorm, ReLU
    rng = np.random.default_rng(1)
    m = misc.Conv2dNormActivation(3, 4, 1).eval()
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    w = m[0].weight.detach().numpy()
    want = np.maximum(np_conv2d(x, w) / np.sqrt(1 + 1e-5), 0)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)


def test_squeeze_excitation_values():
    rng = np.random.default_rng(2)
    m = misc.SqueezeExcitation(6, 3)
    assert list(m.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    x = rng.standard_normal((2, 6, 4, 3)).astype(np.float32)
    p = params(m)
    s = x.mean((2, 3))
    s = np.maximum(s @ p["fc1.weight"][:, :, 0, 0].T + p["fc1.bias"], 0)
    s = s @ p["fc2.weight"][:, :, 0, 0].T + p["fc2.bias"]
    want = x / (1 + np.exp(-s))[:, :, None, None]
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_mlp_layers_and_values():
    m = misc.MLP(5, [7, 6, 3], norm_layer=nn.LayerNorm, dropout=0.2, inplace=False)
    kinds = [type(c) for c in m]
    assert kinds == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Dropout] * 2 + [nn.Linear, nn.Dropout]
    assert m[3].p == 0.2 and m[3].inplace is False and m[2].inplace is False
    assert misc.MLP(5, [4], bias=False)[0].bias is None
    rng = np.random.default_rng(3)
    m = misc.MLP(5, [7, 3], activation_layer=nn.GELU).eval()
    p = params(m)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    h = x @ p["0.weight"].T + p["0.bias"]
    from math import erf

    h = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    want = h @ p["3.weight"].T + p["3.bias"]
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)


def test_permute_and_interpolate():
    x = np.arange(24.0).reshape(2, 3, 4)
    m = misc.Permute([2, 0, 1])
    assert m.dims == [2, 0, 1]
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), x.transpose(2, 0, 1))
    # torchvision.ops.misc.interpolate is F.interpolate (compared by result: other tests
    # reload ember.nn.functional, which makes a second function object)
    img = ember.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    np.testing.assert_array_equal(
        misc.interpolate(img, scale_factor=2, mode="bilinear").numpy(),
        ember.nn.functional.interpolate(img, scale_factor=2, mode="bilinear").numpy())


def test_models_share_one_copy():
    from ember.vision.models import _layers

    assert _layers.Conv2dNormActivation is misc.Conv2dNormActivation is ops.Conv2dNormActivation
    assert _layers.SqueezeExcitation is misc.SqueezeExcitation
    assert _layers.MLP is misc.MLP and _layers.Permute is misc.Permute
    assert _layers.StochasticDepth is StochasticDepth is ops.StochasticDepth
    assert _layers.stochastic_depth is stochastic_depth


# -- stochastic depth ------------------------------------------------------------------------

def test_stochastic_depth_modes():
    x = ember.ones(400, 3, 2)
    ember.manual_seed(0)
    out = stochastic_depth(x, 0.25, "row").numpy()
    per_row = out.reshape(400, -1)
    assert set(np.unique(per_row)) <= {0.0, np.float32(1 / 0.75)}
    assert (per_row == per_row[:, :1]).all()  # a row is kept or dropped whole
    assert 0.15 < (per_row[:, 0] == 0).mean() < 0.35
    batch = stochastic_depth(x, 0.5, "batch").numpy()
    assert np.unique(batch).size == 1 and batch.flat[0] in (0.0, 2.0)
    assert stochastic_depth(x, 0.5, "row", training=False) is x
    assert stochastic_depth(x, 0.0, "row") is x
    np.testing.assert_array_equal(stochastic_depth(x, 1.0, "row").numpy(), 0)
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1, but got 1.5"):
        stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="mode has to be either 'batch' or 'row', but got col"):
        stochastic_depth(x, 0.5, "col")
    m = StochasticDepth(0.2, "row")
    assert repr(m) == "StochasticDepth(p=0.2, mode=row)"
    m.eval()
    assert m(x) is x
    xd = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)

    def f(t):
        ember.manual_seed(4)
        return stochastic_depth(t, 0.5, "row")

    assert gradcheck(f, (xd,))


# -- drop block ------------------------------------------------------------------------------

def _opening(zero, b, dims):
    """Morphological opening of the boolean ``zero`` with a ``b``-cube (blocks inside only)."""
    axes = tuple(range(zero.ndim - dims, zero.ndim))
    win = sliding_window_view(zero, (b,) * dims, axis=axes)
    centres = win.all(axis=tuple(range(-dims, 0)))  # blocks wholly zero
    pad = [(0, 0)] * (zero.ndim - dims) + [(b - 1, b - 1)] * dims
    spread = sliding_window_view(np.pad(centres, pad), (b,) * dims, axis=axes)
    return spread.any(axis=tuple(range(-dims, 0)))


@pytest.mark.parametrize("dims", [2, 3])
def test_drop_block_drops_whole_blocks_and_rescales(dims):
    fn = drop_block2d if dims == 2 else drop_block3d
    shape = (4, 3, 40, 40) if dims == 2 else (2, 3, 14, 14, 14)
    ember.manual_seed(1)
    x = ember.ones(*shape)
    out = fn(x, 0.1, 3).numpy()
    zero = out == 0
    kept = out[~zero]
    scale = out.size / (1e-6 + (~zero).sum())
    np.testing.assert_allclose(kept, scale, rtol=1e-5)
    # the dropped set is a union of whole 3-blocks lying inside the input
    np.testing.assert_array_equal(_opening(zero, 3, dims), zero)
    assert 0.06 < zero.mean() < 0.14
    # block_size is clipped to the input; even sizes are refused
    small = (1, 1) + (3,) * dims
    assert fn(ember.ones(*small), 0.5, 7).shape == small
    with pytest.raises(ValueError, match="block size should be odd. Got 4 which is even."):
        fn(x, 0.1, 4)


def test_drop_block_eval_identity_errors_inplace_and_gradcheck():
    x = ember.randn(2, 3, 8, 8)
    assert drop_block2d(x, 0.3, 3, training=False) is x
    assert drop_block2d(x, 0.0, 3) is x
    m = DropBlock2d(0.3, 3).eval()
    assert m(x) is x
    assert repr(DropBlock2d(0.3, 5)) == "DropBlock2d(p=0.3, block_size=5, inplace=False)"
    assert repr(DropBlock3d(0.1, 3, True)) == "DropBlock3d(p=0.1, block_size=3, inplace=True)"
    assert DropBlock3d(0.1, 3).eval()(ember.ones(1, 1, 2, 2, 2)).shape == (1, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="has to be between 0 and 1, but got -0.1."):
        drop_block2d(x, -0.1, 3)
    with pytest.raises(ValueError, match="input should be 4 dimensional. Got 3 dimensions."):
        drop_block2d(x[0], 0.1, 3)
    with pytest.raises(ValueError, match="input should be 5 dimensional. Got 4 dimensions."):
        drop_block3d(x, 0.1, 3)
    y = ember.ones(2, 3, 8, 8)
    ember.manual_seed(3)
    want = drop_block2d(y, 0.3, 3).numpy()
    ember.manual_seed(3)
    same = drop_block2d(y, 0.3, 3, inplace=True)
    assert same is y
    np.testing.assert_array_equal(y.numpy(), want)
    xd = ember.randn(1, 2, 6, 6, dtype=ember.float64, requires_grad=True)

    def f(t):
        ember.manual_seed(5)
        return drop_block2d(t, 0.4, 3)

    assert gradcheck(f, (xd,))
    assert gradcheck(lambda t: drop_block2d(t, 0.4, 3, training=False), (xd,))


# -- feature pyramid network -----------------------------------------------------------------

def test_fpn_values_keys_and_extra_blocks():
    ember.manual_seed(0)
    fpn = FeaturePyramidNetwork([2, 3, 4], 5, extra_blocks=LastLevelMaxPool())
    keys = list(fpn.state_dict())
    assert keys[:4] == ["inner_blocks.0.0.weight", "inner_blocks.0.0.bias",
                        "inner_blocks.1.0.weight", "inner_blocks.1.0.bias"]
    assert len(keys) == 12 and keys[6] == "layer_blocks.0.0.weight"
    p = params(fpn)
    assert all((p[k] == 0).all() for k in keys if k.endswith("bias"))
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal(s).astype(np.float32)
             for s in ((1, 2, 16, 12), (1, 3, 8, 6), (1, 4, 3, 3))]
    x = OrderedDict((n, ember.tensor(f)) for n, f in zip(["a", "b", "c"], feats))
    out = fpn(x)
    assert list(out) == ["a", "b", "c", "pool"]

    def inner(i, f):
        return np_conv2d(f, p[f"inner_blocks.{i}.0.weight"], p[f"inner_blocks.{i}.0.bias"])

    def layer(i, f):
        return np_conv2d(f, p[f"layer_blocks.{i}.0.weight"], p[f"layer_blocks.{i}.0.bias"],
                         pad=1)

    last = inner(2, feats[2])
    want = {"c": layer(2, last)}
    for i, name in ((1, "b"), (0, "a")):
        lateral = inner(i, feats[i])
        last = lateral + np_nearest(last, lateral.shape[-2:])
        want[name] = layer(i, last)
    want["pool"] = want["c"][..., ::2, ::2]
    for name, value in want.items():
        np.testing.assert_allclose(out[name].detach().numpy(), value, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="in_channels=0 is currently not supported"):
        FeaturePyramidNetwork([0, 2], 4)
    with pytest.raises(TypeError, match="extra_blocks should be of type ExtraFPNBlock not"):
        FeaturePyramidNetwork([2], 4, extra_blocks=nn.ReLU())
    assert isinstance(LastLevelMaxPool(), ExtraFPNBlock)


def test_fpn_loads_version_one_checkpoints_and_norm_layer():
    fpn = FeaturePyramidNetwork([2, 3], 4)
    sd = fpn.state_dict()
    old = OrderedDict((k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"),
                       ember.randn(*v.shape)) for k, v in sd.items())
    old._metadata = OrderedDict({"": {"version": 1}})
    fpn.load_state_dict(old)
    np.testing.assert_array_equal(fpn.inner_blocks[1][0].weight.detach().numpy(),
                                  old["inner_blocks.1.weight"].numpy())
    normed = FeaturePyramidNetwork([2], 4, norm_layer=nn.BatchNorm2d)
    assert [type(c) for c in normed.layer_blocks[0]] == [nn.Conv2d, nn.BatchNorm2d]
    assert normed.layer_blocks[0][0].bias is None
    assert fpn.state_dict()._metadata[""]["version"] == 2


@pytest.mark.parametrize("same", [True, False])
def test_last_level_p6p7(same):
    ember.manual_seed(0)
    block = LastLevelP6P7(4 if same else 3, 4)
    assert block.use_P5 is same
    p = params(block)
    rng = np.random.default_rng(1)
    p5 = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    c5 = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    results, names = block([ember.tensor(p5)], [ember.tensor(c5)], ["p5"])
    assert names == ["p5", "p6", "p7"] and len(results) == 3
    src = p5 if same else c5
    p6 = np_conv2d(src, p["p6.weight"], p["p6.bias"], stride=2, pad=1)
    p7 = np_conv2d(np.maximum(p6, 0), p["p7.weight"], p["p7.bias"], stride=2, pad=1)
    np.testing.assert_allclose(results[1].detach().numpy(), p6, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results[2].detach().numpy(), p7, rtol=1e-4, atol=1e-5)


# -- poolers ---------------------------------------------------------------------------------

def test_level_mapper_matches_eq1():
    boxes = [ember.tensor([[0.0, 0.0, 224.0, 224.0], [0.0, 0.0, 20.0, 10.0]]),
             ember.tensor([[5.0, 5.0, 805.0, 605.0], [0.0, 0.0, 112.0, 112.0]])]
    levels = LevelMapper(2, 5)(boxes)
    assert levels.dtype == ember.int64
    s = np.sqrt([224 * 224, 200, 800 * 600, 112 * 112])
    want = np.clip(np.floor(4 + np.log2(s / 224) + 1e-6), 2, 5) - 2
    np.testing.assert_array_equal(levels.numpy(), want)


def test_multi_scale_roi_align_pools_each_box_at_its_level():
    rng = np.random.default_rng(0)
    feats = OrderedDict(
        feat1=ember.tensor(rng.standard_normal((2, 3, 32, 32)).astype(np.float32)),
        skip=ember.tensor(rng.standard_normal((2, 3, 16, 16)).astype(np.float32)),
        feat3=ember.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32)),
    )
    m = MultiScaleRoIAlign(["feat1", "feat3"], 3, 2)
    assert repr(m) == ("MultiScaleRoIAlign(featmap_names=['feat1', 'feat3'], "
                       "output_size=(3, 3), sampling_ratio=2)")
    small = np.array([[1.0, 2.0, 20.0, 30.0], [10.0, 10.0, 40.0, 30.0]], np.float32)
    big = np.array([[0.0, 0.0, 150.0, 130.0], [4.0, 8.0, 124.0, 128.0], [0, 0, 300, 240]],
                   np.float32)
    boxes = [ember.tensor(small), ember.tensor(big)]
    out = m(feats, boxes, [(128, 128), (120, 100)])
    assert out.shape == (5, 3, 3, 3)
    assert m.scales == [0.25, 0.0625]
    assert (m.map_levels.k_min, m.map_levels.k_max) == (2, 4)
    # the level of each box, then RoIAlign of that level
    area = np.concatenate([small, big])
    s = np.sqrt((area[:, 2] - area[:, 0]) * (area[:, 3] - area[:, 1]))
    lvl = np.clip(np.floor(4 + np.log2(s / 224) + 1e-6), 2, 4) - 2
    rois = np.concatenate([np.r_[[0, 0, 1, 1, 1]][:, None], area], 1).astype(np.float32)
    # as in torchvision, level i of the mapper is the i-th pooled map; a box whose level has no
    # map (here the big one, level 4 - 2 = 2) stays zero
    assert lvl.tolist() == [0, 0, 1, 1, 2]
    for i, level in enumerate(lvl.astype(int)):
        if level == 2:
            np.testing.assert_array_equal(out[i].numpy(), 0)
            continue
        name, scale = (("feat1", 0.25), ("feat3", 0.0625))[level]
        want = ops.roi_align(feats[name], ember.tensor(rois[i:i + 1]), 3, scale, 2)
        np.testing.assert_allclose(out[i:i + 1].numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="images list should not be empty"):
        MultiScaleRoIAlign(["feat1"], 2, 2)(feats, boxes, [])
    # one level: plain RoIAlign at its scale
    one = MultiScaleRoIAlign(["feat3"], (2, 3), -1)(feats, boxes, [(128, 128)])
    want = ops.roi_align(feats["feat3"], ember.tensor(rois), (2, 3), 0.0625, -1)
    np.testing.assert_allclose(one.numpy(), want.numpy(), rtol=1e-6)


def test_module_homes_and_all():
    import ember.vision.ops as vops

    for name in vops.__all__:
        assert hasattr(vops, name), name
    assert vops.FeaturePyramidNetwork is FeaturePyramidNetwork
    assert vops.MultiScaleRoIAlign is MultiScaleRoIAlign
    assert vops.drop_block2d is drop_block2d and vops.DropBlock3d is DropBlock3d


def test_torchvision_ops_submodules_resolve_under_as_torch(tmp_path):
    """``from torchvision.ops.misc import FrozenBatchNorm2d`` (timm's import) and the other
    submodules of torchvision.ops resolve under ``python -m ember.as_torch``."""
    import subprocess
    import sys

    script = tmp_path / "imports.py"
    script.write_text(
        "from torchvision.ops.misc import FrozenBatchNorm2d, Conv2dNormActivation\n"
        "from torchvision.ops.stochastic_depth import StochasticDepth\n"
        "from torchvision.ops.boxes import _box_inter_union, masks_to_boxes\n"
        "from torchvision.ops.feature_pyramid_network import LastLevelMaxPool\n"
        "from torchvision.ops.poolers import MultiScaleRoIAlign\n"
        "from torchvision.ops.deform_conv import DeformConv2d\n"
        "from torchvision.ops.drop_block import DropBlock2d\n"
        "from torchvision.ops.giou_loss import generalized_box_iou_loss\n"
        "from torchvision.ops.ciou_loss import complete_box_iou_loss\n"
        "from torchvision.ops.diou_loss import distance_box_iou_loss\n"
        "print(FrozenBatchNorm2d.__module__, repr(FrozenBatchNorm2d(2)))\n"
    )
    done = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ember.vision.ops.misc FrozenBatchNorm2d(2, eps=1e-05)"
