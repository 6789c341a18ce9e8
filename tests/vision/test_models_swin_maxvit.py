"""Swin Transformer V1/V2 and MaxViT: shifted-window attention against a NumPy reference,
shapes on inputs that are not multiples of the window, gradients, state_dict layout,
initialisation, registry, weights enums and errors.

Values against torchvision are in tests/parity/vision/test_models_swin_maxvit.py.
"""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models
from ember.vision.models import maxvit as maxvit_module
from ember.vision.models import swin_transformer as swin_module
from ember.vision.models.maxvit import (
    MaxVit,
    PartitionAttentionLayer,
    RelativePositionalMultiHeadAttention,
    WindowDepartition,
    WindowPartition,
)
from ember.vision.models.swin_transformer import (
    PatchMerging,
    PatchMergingV2,
    ShiftedWindowAttention,
    ShiftedWindowAttentionV2,
    SwinTransformer,
    SwinTransformerBlock,
    SwinTransformerBlockV2,
    shifted_window_attention,
)

RNG = np.random.RandomState(0)


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _set(param, value):
    with ember.no_grad():
        param.copy_(ember.tensor(np.asarray(value, dtype=np.float32)))


def _small_swin(v2=False, **kwargs):
    extra = {"block": SwinTransformerBlockV2, "downsample_layer": PatchMergingV2} if v2 else {}
    return SwinTransformer(
        patch_size=[2, 2], embed_dim=8, depths=[2, 1], num_heads=[2, 4], window_size=[3, 5],
        num_classes=5, **extra, **kwargs,
    )  # fmt: skip


def _small_maxvit(**kwargs):
    config = dict(
        input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16],
        block_layers=[1, 1], head_dim=4, stochastic_depth_prob=0.2, num_classes=5,
    )  # fmt: skip
    return MaxVit(**{**config, **kwargs})


# ----------------------------------------------------------------------------------------------
# NumPy reference of the shifted-window attention, written from the papers' description:
# token by token, windows gathered explicitly, region labels for the mask.


def _softmax(a):
    a = a - a.max(-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(-1, keepdims=True)


def _rel_index(ws):
    """Row of the (2*Wh-1)*(2*Ww-1) table for each (query, key) token pair of a window."""
    pos = [(i, j) for i in range(ws[0]) for j in range(ws[1])]
    return np.array(
        [[(a[0] - b[0] + ws[0] - 1) * (2 * ws[1] - 1) + (a[1] - b[1] + ws[1] - 1) for b in pos]
         for a in pos]
    )  # fmt: skip


def _cpb_table(ws, w1, b1, w2):
    """Swin V2's continuous position bias: the MLP over log-spaced relative coordinates."""
    rows = []
    for dh in range(-(ws[0] - 1), ws[0]):
        for dw in range(-(ws[1] - 1), ws[1]):
            c = np.array([dh / (ws[0] - 1) * 8, dw / (ws[1] - 1) * 8])
            c = np.sign(c) * np.log2(np.abs(c) + 1.0) / 3.0
            rows.append(np.maximum(c @ w1.T + b1, 0) @ w2.T)
    return 16 / (1 + np.exp(-np.array(rows)))


def _ref_window_attention(x, ws, shift, heads, qkv_w, qkv_b, proj_w, proj_b, table, logit=None):
    B, H, W, C = x.shape
    pH, pW = math.ceil(H / ws[0]) * ws[0], math.ceil(W / ws[1]) * ws[1]
    xp = np.zeros((B, pH, pW, C))
    xp[:, :H, :W] = x
    s = [shift[0] if ws[0] < pH else 0, shift[1] if ws[1] < pW else 0]
    xs = np.roll(xp, (-s[0], -s[1]), axis=(1, 2))

    def region(i, n, w, sh):  # which of the shifted-in strips a row / column came from
        if sh == 0:
            return 0
        return 0 if i < n - w else 1 if i < n - sh else 2

    out = np.zeros_like(xs)
    d = C // heads
    idx = _rel_index(ws)
    if logit is not None:  # V2: no key bias
        qkv_b = qkv_b.copy()
        qkv_b[C : 2 * C] = 0
    for b in range(B):
        for wi in range(pH // ws[0]):
            for wj in range(pW // ws[1]):
                rows = range(wi * ws[0], (wi + 1) * ws[0])
                cells = [(i, j) for i in rows for j in range(wj * ws[1], (wj + 1) * ws[1])]
                tok = np.stack([xs[b, i, j] for i, j in cells])
                labels = [(region(i, pH, ws[0], s[0]), region(j, pW, ws[1], s[1]))
                          for i, j in cells]  # fmt: skip
                mask = np.array([[0.0 if la == lb else -100.0 for lb in labels] for la in labels])
                qkv = tok @ qkv_w.T + qkv_b
                res = []
                for h in range(heads):
                    q = qkv[:, h * d : (h + 1) * d]
                    k = qkv[:, C + h * d : C + (h + 1) * d]
                    v = qkv[:, 2 * C + h * d : 2 * C + (h + 1) * d]
                    if logit is None:
                        att = (q * d**-0.5) @ k.T
                    else:
                        qn = q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), 1e-12)
                        kn = k / np.maximum(np.linalg.norm(k, axis=-1, keepdims=True), 1e-12)
                        att = qn @ kn.T * np.exp(min(logit[h], math.log(100.0)))
                    att = att + table[idx, h]
                    if sum(s) > 0:
                        att = att + mask
                    res.append(_softmax(att) @ v)
                y = np.concatenate(res, -1) @ proj_w.T + proj_b
                for n, (i, j) in enumerate(cells):
                    out[b, i, j] = y[n]
    out = np.roll(out, (s[0], s[1]), axis=(1, 2))
    return out[:, :H, :W]


# (H, W) of the feature map for a 3x4 window shifted by (1, 2): padding in both directions,
# a map one window high (no vertical shift), exact multiples, a map smaller than one window
SHAPES = [(5, 7), (3, 9), (6, 8), (2, 2)]


@pytest.mark.parametrize("hw", SHAPES, ids=[f"{h}x{w}" for h, w in SHAPES])
def test_shifted_window_attention_v1_matches_numpy_reference(hw):
    ember.manual_seed(0)
    attn = ShiftedWindowAttention(8, [3, 4], [1, 2], num_heads=2).eval()
    _set(attn.relative_position_bias_table, RNG.standard_normal((5 * 7, 2)))
    _set(attn.qkv.bias, RNG.standard_normal(24) * 0.5)
    x = RNG.standard_normal((2, *hw, 8)).astype(np.float32)
    with ember.no_grad():
        got = attn(ember.tensor(x)).numpy()
    expected = _ref_window_attention(
        x.astype(np.float64), [3, 4], [1, 2], 2, _np(attn.qkv.weight), _np(attn.qkv.bias),
        _np(attn.proj.weight), _np(attn.proj.bias), _np(attn.relative_position_bias_table),
    )  # fmt: skip
    assert got.shape == (2, *hw, 8)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hw", SHAPES, ids=[f"{h}x{w}" for h, w in SHAPES])
def test_shifted_window_attention_v2_matches_numpy_reference(hw):
    ember.manual_seed(0)
    attn = ShiftedWindowAttentionV2(8, [3, 4], [1, 2], num_heads=2).eval()
    # one head's logit scale above log(100): clamped
    _set(attn.logit_scale, np.array([1.5, 5.5]).reshape(2, 1, 1))
    _set(attn.qkv.bias, RNG.standard_normal(24) * 0.5)  # the key part is ignored
    _set(attn.cpb_mlp[0].weight, RNG.standard_normal((512, 2)))
    _set(attn.cpb_mlp[2].weight, RNG.standard_normal((2, 512)) * 0.1)
    x = RNG.standard_normal((1, *hw, 8)).astype(np.float32)
    with ember.no_grad():
        got = attn(ember.tensor(x)).numpy()
    table = _cpb_table(
        [3, 4], _np(attn.cpb_mlp[0].weight), _np(attn.cpb_mlp[0].bias), _np(attn.cpb_mlp[2].weight)
    )
    expected = _ref_window_attention(
        x.astype(np.float64), [3, 4], [1, 2], 2, _np(attn.qkv.weight), _np(attn.qkv.bias),
        _np(attn.proj.weight), _np(attn.proj.bias), table, logit=[1.5, 5.5],
    )  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_relative_position_buffers():
    attn = ShiftedWindowAttention(4, [3, 4], [0, 0], num_heads=1)
    index = attn.relative_position_index
    assert index.dtype == ember.int64 and index.shape == (144,)
    np.testing.assert_array_equal(index.numpy().reshape(12, 12), _rel_index([3, 4]))
    v2 = ShiftedWindowAttentionV2(4, [3, 4], [0, 0], num_heads=1)
    coords = v2.relative_coords_table
    assert coords.shape == (1, 5, 7, 2) and coords.dtype == ember.float32
    # corners at +-8 on both axes: log2(9) / 3; the centre 0
    np.testing.assert_allclose(coords.numpy()[0, 0, 0], [-math.log2(9) / 3] * 2, rtol=1e-6)
    np.testing.assert_allclose(coords.numpy()[0, 2, 3], [0.0, 0.0])
    np.testing.assert_allclose(coords.numpy()[0, 3, 4], [math.log2(8 / 2 + 1) / 3,
                                                         math.log2(8 / 3 + 1) / 3], rtol=1e-6)
    # MaxViT's index: (N, N), not flattened
    mv = RelativePositionalMultiHeadAttention(8, 4, 9)
    assert mv.relative_position_index.shape == (9, 9)
    np.testing.assert_array_equal(mv.relative_position_index.numpy(), _rel_index([3, 3]))


def test_gradcheck_shifted_window_attention():
    rng = np.random.RandomState(1)

    def t(*shape, scale=1.0, grad=True):
        return ember.tensor(rng.standard_normal(shape) * scale, dtype=ember.float64,
                            requires_grad=grad)

    x, bias = t(1, 3, 4, 4), t(1, 2, 4, 4)
    qkv_w, proj_w, qkv_b, logit = t(12, 4, scale=0.5), t(4, 4, scale=0.5), t(12), t(2, 1, 1)

    def v1(x, bias, qkv_w, qkv_b):
        return shifted_window_attention(x, qkv_w, proj_w, bias, [2, 2], 2, [1, 1], qkv_bias=qkv_b)

    def v2(x, bias, qkv_b, logit):
        return shifted_window_attention(
            x, qkv_w, proj_w, bias, [2, 2], 2, [1, 1], qkv_bias=qkv_b, logit_scale=logit
        )

    assert ember.autograd.gradcheck(v1, (x, bias, qkv_w, qkv_b))
    assert ember.autograd.gradcheck(v2, (x, bias, qkv_b, logit))


# ----------------------------------------------------------------------------------------------
# models


def _np_patch_merge(x):
    H, W = x.shape[-3:-1]
    x = np.pad(x, [(0, 0)] * (x.ndim - 3) + [(0, H % 2), (0, W % 2), (0, 0)])
    parts = [x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :],
             x[..., 1::2, 1::2, :]]  # fmt: skip
    return np.concatenate(parts, -1)


def test_patch_merging_odd_sizes():
    x = RNG.standard_normal((2, 5, 7, 3)).astype(np.float32)
    for cls in (PatchMerging, PatchMergingV2):
        m = cls(3)
        assert m.reduction.weight.shape == (6, 12) and m.reduction.bias is None
        assert m.norm.normalized_shape == ((12,) if cls is PatchMerging else (6,))
        with ember.no_grad():
            got = m(ember.tensor(x)).numpy()
        merged = _np_patch_merge(x.astype(np.float64))
        w = _np(m.reduction.weight)

        def ln(a):
            return (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)

        expected = ln(merged) @ w.T if cls is PatchMerging else ln(merged @ w.T)
        assert got.shape == (2, 3, 4, 6)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
@pytest.mark.parametrize("hw", [(13, 27), (8, 8), (30, 22)])
def test_small_swin_shapes_on_any_input_size(v2, hw):
    m = _small_swin(v2).eval()
    with ember.no_grad():
        out = m(ember.randn(2, 3, *hw))
    assert out.shape == (2, 5)
    assert np.isfinite(out.numpy()).all()


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_swin_state_dict_layout(v2):
    def block(prefix, dim, heads):
        attn = (
            [f"{prefix}attn.logit_scale", f"{prefix}attn.relative_coords_table"] if v2
            else [f"{prefix}attn.relative_position_bias_table"]
        )  # fmt: skip
        attn += [f"{prefix}attn.relative_position_index"]
        attn += [f"{prefix}attn.{n}.{p}" for n in ("qkv", "proj") for p in ("weight", "bias")]
        if v2:
            attn += [f"{prefix}attn.cpb_mlp.0.weight", f"{prefix}attn.cpb_mlp.0.bias",
                     f"{prefix}attn.cpb_mlp.2.weight"]  # fmt: skip
        return (
            [f"{prefix}norm1.weight", f"{prefix}norm1.bias"] + attn
            + [f"{prefix}norm2.weight", f"{prefix}norm2.bias"]
            + [f"{prefix}mlp.{i}.{p}" for i in (0, 3) for p in ("weight", "bias")]
        )  # fmt: skip

    expected = ["features.0.0.weight", "features.0.0.bias", "features.0.2.weight",
                "features.0.2.bias"]  # fmt: skip
    expected += block("features.1.0.", 8, 2) + block("features.1.1.", 8, 2)
    expected += ["features.2.reduction.weight", "features.2.norm.weight", "features.2.norm.bias"]
    expected += block("features.3.0.", 16, 4)
    expected += ["norm.weight", "norm.bias", "head.weight", "head.bias"]
    sd = _small_swin(v2).state_dict()
    assert list(sd) == expected
    assert sd["features.1.0.attn.relative_position_index"].shape == (225,)
    assert sd["features.2.norm.weight"].shape == ((16,) if v2 else (32,))
    if v2:
        assert sd["features.3.0.attn.logit_scale"].shape == (4, 1, 1)
        assert sd["features.1.1.attn.relative_coords_table"].shape == (1, 5, 9, 2)
        assert sd["features.3.0.attn.cpb_mlp.2.weight"].shape == (4, 512)
    else:
        assert sd["features.3.0.attn.relative_position_bias_table"].shape == (45, 4)
    # the shifts alternate, the stochastic depth rate grows linearly over all blocks
    m = _small_swin(v2, stochastic_depth_prob=0.4)
    assert [b.attn.shift_size for b in (*m.features[1], *m.features[3])] == [
        [0, 0], [1, 2], [0, 0]]  # fmt: skip
    assert [b.stochastic_depth.p for b in (*m.features[1], *m.features[3])] == [0.0, 0.2, 0.4]


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_swin_gradients_reach_position_bias(v2):
    ember.manual_seed(0)
    m = _small_swin(v2, stochastic_depth_prob=0.0).train()
    loss = nn.functional.cross_entropy(m(ember.randn(2, 3, 14, 18)), ember.tensor([0, 4]))
    loss.backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None]
    assert not missing
    attns = [b.attn for b in (*m.features[1], *m.features[3])]
    for a in attns:
        if v2:
            assert np.abs(a.cpb_mlp[0].weight.grad.numpy()).sum() > 0
            assert np.abs(a.logit_scale.grad.numpy()).min() > 0
            # the keys have no bias in V2: their third of qkv.bias gets no gradient
            c = a.qkv.bias.shape[0] // 3
            bias_grad = a.qkv.bias.grad.numpy()
            assert (bias_grad[c : 2 * c] == 0).all() and np.abs(bias_grad[:c]).sum() > 0
        else:
            grad = a.relative_position_bias_table.grad.numpy()
            assert grad.shape == a.relative_position_bias_table.shape
            assert np.abs(grad).sum() > 0


def test_swin_init():
    ember.manual_seed(0)
    m = _small_swin(False)
    for mod in m.modules():
        if isinstance(mod, nn.Linear):
            assert 0.01 < _np(mod.weight).std() < 0.03  # trunc_normal_(std=0.02)
            if mod.bias is not None:
                assert (_np(mod.bias) == 0).all()
    table = _np(m.features[1][0].attn.relative_position_bias_table)
    assert 0.005 < table.std() < 0.04
    v2 = _small_swin(True)
    attn = v2.features[1][0].attn
    np.testing.assert_allclose(_np(attn.logit_scale), math.log(10.0), rtol=1e-6)
    assert (_np(attn.qkv.bias) == 0).all()
    assert not hasattr(attn, "relative_position_bias_table")


def test_swin_builders_registry_and_param_counts():
    names = ["swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"]
    assert set(names) <= set(models.list_models())
    assert models.list_models(include="swin*", exclude="swin3d*") == sorted(names)  # (video)
    assert all(models.get_model_builder(n).__module__ == swin_module.__name__ for n in names)
    for name in ("swin_t", "swin_v2_t"):
        weights = models.get_model_weights(name)
        assert weights is getattr(models, f"Swin_{name[5:].upper()}_Weights")
        ember.manual_seed(0)
        m = models.get_model(name, num_classes=7)
        assert isinstance(m, SwinTransformer)
        n_params = sum(p.numel() for p in m.parameters())
        assert n_params == weights.DEFAULT.meta["num_params"] - 993 * 769  # 1000 -> 7 classes
        blocks = [b for stage in m.features[1::2] for b in stage]
        assert len(blocks) == 12
        assert type(blocks[0]) is (SwinTransformerBlockV2 if "v2" in name else SwinTransformerBlock)
        assert blocks[1].attn.window_size == ([8, 8] if "v2" in name else [7, 7])
        assert math.isclose(blocks[-1].stochastic_depth.p, 0.2)
        with ember.no_grad():
            out = m.eval()(ember.randn(1, 3, 50, 70))
        assert out.shape == (1, 7)


def test_swin_weights_enums():
    rows = {
        "Swin_T_Weights": ("swin_t-704ceda3", 224, 232),
        "Swin_S_Weights": ("swin_s-5e29d889", 224, 246),
        "Swin_B_Weights": ("swin_b-68c6b09e", 224, 238),
        "Swin_V2_T_Weights": ("swin_v2_t-b137f0e2", 256, 260),
        "Swin_V2_S_Weights": ("swin_v2_s-637d8ceb", 256, 260),
        "Swin_V2_B_Weights": ("swin_v2_b-781e5279", 256, 272),
    }
    for enum_name, (file, crop, resize) in rows.items():
        weights = getattr(models, enum_name)
        assert [w.name for w in weights] == ["IMAGENET1K_V1"]
        w = weights.DEFAULT
        assert w is weights.IMAGENET1K_V1
        assert w.url == f"https://download.pytorch.org/models/{file}.pth"
        assert w.meta["min_size"] == (crop, crop)
        assert len(w.meta["categories"]) == 1000
        suffix = "-v2" if crop == 256 else ""
        assert w.meta["recipe"].endswith(f"#swintransformer{suffix}")
        t = w.transforms()
        assert t.crop_size == [crop] and t.resize_size == [resize]
        assert t.interpolation.value == "bicubic"
    assert set(swin_module.__all__) == {
        "SwinTransformer", "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b",
        *rows,
    }  # fmt: skip
    assert models.Swin_V2_B_Weights.IMAGENET1K_V1.meta["_ops"] == 20.325


def test_swin_errors():
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        ShiftedWindowAttention(8, [7, 7, 7], [0, 0], 2)
    with pytest.raises(ValueError, match="window_size and shift_size must be of length 2"):
        ShiftedWindowAttentionV2(8, [7, 7], [0], 2)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 1000"):
        models.swin_t(weights="DEFAULT", num_classes=10)  # checked before any download
    with pytest.raises(TypeError, match="Invalid Weight class provided"):
        models.swin_v2_t(weights=models.Swin_T_Weights.IMAGENET1K_V1)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'block'"):
        models.swin_v2_t(block=SwinTransformerBlock)


# ----------------------------------------------------------------------------------------------
# MaxViT


def test_window_partition_round_trip_and_grid():
    x = ember.arange(2 * 3 * 8 * 8, dtype=ember.float32).reshape(2, 3, 8, 8)
    parts = WindowPartition()(x, 4)
    assert parts.shape == (2, 4, 16, 3)
    xn = x.numpy()
    # window 1 (top right) holds the 4x4 block at rows 0..3, columns 4..7, row-major
    np.testing.assert_array_equal(parts.numpy()[1, 1, :, 2], xn[1, 2, :4, 4:].reshape(-1))
    back = WindowDepartition()(parts, 4, 2, 2)
    np.testing.assert_array_equal(back.numpy(), xn)
    # grid partitioning of an 8x8 map with partition_size 2: 4x4 windows of 2x2 tokens, swapped
    # so that each attention group is the 2x2 grid of tokens 4 apart
    layer = PartitionAttentionLayer(
        4, 2, 2, "grid", (8, 8), 2, nn.GELU, nn.LayerNorm, 0.0, 0.0, 0.0
    )  # fmt: skip
    assert (layer.p, layer.g) == (4, 2)
    grouped = layer.partition_swap(layer.partition_op(x, layer.p))
    assert grouped.shape == (2, 16, 4, 3)
    np.testing.assert_array_equal(grouped.numpy()[0, 5, :, 0], xn[0, 0, 1::4, 1::4].reshape(-1))


def test_relative_positional_attention_matches_numpy():
    ember.manual_seed(0)
    attn = RelativePositionalMultiHeadAttention(8, 4, 9)
    _set(attn.relative_position_bias_table, RNG.standard_normal((25, 2)))
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    with ember.no_grad():
        got = attn(ember.tensor(x)).numpy()
    qkv = x.astype(np.float64) @ _np(attn.to_qkv.weight).T + _np(attn.to_qkv.bias)
    q, k, v = np.split(qkv, 3, -1)
    heads = []
    table = _np(attn.relative_position_bias_table)
    for h in range(2):
        sl = slice(4 * h, 4 * h + 4)
        # torchvision's scale: feat_dim ** -0.5 on the keys (not head_dim)
        att = q[..., sl] @ np.swapaxes(k[..., sl] * 8**-0.5, -1, -2)
        heads.append(_softmax(att + table[_rel_index([3, 3]), h]) @ v[..., sl])
    expected = np.concatenate(heads, -1) @ _np(attn.merge.weight).T + _np(attn.merge.bias)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_small_maxvit_forward_backward_and_layout():
    ember.manual_seed(0)
    m = _small_maxvit()
    sd = m.state_dict()
    assert len(sd) == 119
    assert sd["blocks.0.layers.0.layers.MBconv.proj.1.weight"].shape == (8, 8, 1, 1)
    assert sd["blocks.1.layers.0.layers.MBconv.layers.squeeze_excitation.fc1.weight"].shape == (
        4, 64, 1, 1)  # fmt: skip
    key = "blocks.1.layers.0.layers.grid_attention.attn_layer.1.relative_position_bias_table"
    assert sd[key].shape == (9, 4)
    assert sd["classifier.5.weight"].shape == (5, 16) and "classifier.5.bias" not in sd
    assert list(sd)[:8] == [
        "stem.0.0.weight", "stem.0.1.weight", "stem.0.1.bias", "stem.0.1.running_mean",
        "stem.0.1.running_var", "stem.0.1.num_batches_tracked", "stem.1.0.weight", "stem.1.0.bias",
    ]  # fmt: skip
    assert [blk.grid_size for blk in m.blocks] == [(8, 8), (4, 4)]
    mb = m.blocks[1].layers[0].layers.MBconv
    assert isinstance(mb.proj[0], nn.AvgPool2d) and math.isclose(mb.stochastic_depth.p, 0.2)
    assert isinstance(m.blocks[0].layers[0].layers.MBconv.stochastic_depth, nn.Identity)
    bn = m.stem[0][1]
    assert bn.eps == 1e-3 and bn.momentum == 0.01
    m.train()
    out = m(ember.randn(2, 3, 32, 32))
    assert out.shape == (2, 5)
    out.sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None]
    assert not missing
    table = m.blocks[0].layers[0].layers.window_attention.attn_layer[1].relative_position_bias_table
    assert np.abs(table.grad.numpy()).sum() > 0
    m.eval()
    with ember.no_grad():
        assert m(ember.randn(1, 3, 32, 32)).shape == (1, 5)


def test_maxvit_init():
    ember.manual_seed(0)
    m = _small_maxvit()
    for mod in m.modules():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            assert 0.01 < _np(mod.weight).std() < 0.03
            if mod.bias is not None:
                assert (_np(mod.bias) == 0).all()
        elif isinstance(mod, nn.BatchNorm2d):
            assert (_np(mod.weight) == 1).all() and (_np(mod.bias) == 0).all()


def test_maxvit_errors():
    with pytest.raises(ValueError) as info:
        _small_maxvit(input_size=(36, 36))
    assert str(info.value) == (
        "Input size (9, 9) of block 0 is not divisible by partition size 2. Consider changing "
        "the partition size or the input size.\nCurrent configuration yields the following "
        "block input sizes: [(9, 9), (5, 5)]."
    )
    with pytest.raises(ValueError, match="feat_dim: 10 must be divisible by head_dim: 4"):
        RelativePositionalMultiHeadAttention(10, 4, 9)
    with pytest.raises(ValueError, match="partition_type must be either 'grid' or 'window'"):
        PartitionAttentionLayer(4, 2, 2, "row", (8, 8), 2, nn.GELU, nn.LayerNorm, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"p_stochastic must have length n_layers=2, got"):
        maxvit_module.MaxVitBlock(
            8, 8, 0.25, 4, nn.BatchNorm2d, nn.GELU, 4, 4, 0.0, 0.0, 2, (16, 16), 2, [0.1]
        )
    with pytest.raises(ValueError, match="The parameter 'input_size' expected value"):
        models.maxvit_t(weights="DEFAULT", input_size=(448, 448))


def test_maxvit_t_builder_registry_weights():
    assert "maxvit_t" in models.list_models()
    assert models.list_models(include="maxvit*") == ["maxvit_t"]
    assert models.get_model_weights("maxvit_t") is models.MaxVit_T_Weights
    assert maxvit_module.__all__ == ["MaxVit", "MaxVit_T_Weights", "maxvit_t"]
    w = models.MaxVit_T_Weights.DEFAULT
    assert w.url == "https://download.pytorch.org/models/maxvit_t-bc5ab103.pth"
    assert w.meta["num_params"] == 30919624 and w.meta["min_size"] == (224, 224)
    t = w.transforms()
    assert t.crop_size == [224] and t.resize_size == [224] and t.interpolation.value == "bicubic"
    ember.manual_seed(0)
    m = models.maxvit_t()
    assert sum(p.numel() for p in m.parameters()) == 30919624
    assert [len(b.layers) for b in m.blocks] == [2, 2, 5, 2]
    rates = [layer.layers.MBconv.stochastic_depth for b in m.blocks for layer in b.layers]
    assert isinstance(rates[0], nn.Identity) and math.isclose(rates[-1].p, 0.2)
    assert math.isclose(rates[5].p, 0.2 * 5 / 10)
    with pytest.raises(ValueError, match="Input size"):
        models.maxvit_t(input_size=(256, 256))
