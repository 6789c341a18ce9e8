"""``MultiheadAttention`` and the Transformer layers: float64 gradchecks, a NumPy reference for
attention, init, masks, dropout, submodule names and errors."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _np(t):
    return t.detach().numpy()


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def _reference_mha(m, q, k, v, mask=None):
    """Multi-head attention in NumPy on sequence-first inputs (packed in-projection)."""
    E, H = m.embed_dim, m.num_heads
    D = E // H
    w, b = _np(m.in_proj_weight), _np(m.in_proj_bias)
    qp, kp, vp = (x @ w[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E]
                  for i, x in enumerate((q, k, v)))
    L, N, _ = qp.shape
    S = kp.shape[0]

    def heads(x, n):
        return x.reshape(n, N, H, D).transpose(1, 2, 0, 3)  # (N, H, len, D)

    scores = heads(qp, L) @ heads(kp, S).transpose(0, 1, 3, 2) / math.sqrt(D)
    if mask is not None:
        scores = scores + mask
    weights = _softmax(scores)
    out = (weights @ heads(vp, S)).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = out @ _np(m.out_proj.weight).T + _np(m.out_proj.bias)
    return out, weights


def _randomize(module, seed=0):
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        for p in module.parameters():
            p.copy_(ember.tensor(rng.standard_normal(tuple(p.shape)) * 0.5, dtype=p.dtype))


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_matches_numpy_reference(need_weights):
    m = nn.MultiheadAttention(6, 3, dtype=ember.float64)
    _randomize(m)
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((4, 2, 6)), rng.standard_normal((5, 2, 6))
    mask = rng.standard_normal((4, 5))
    out, w = m(ember.tensor(q), ember.tensor(k), ember.tensor(k), attn_mask=ember.tensor(mask),
               need_weights=need_weights)
    ref_out, ref_w = _reference_mha(m, q, k, k, mask)
    np.testing.assert_allclose(_np(out), ref_out, rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(_np(w), ref_w.mean(1), rtol=1e-10, atol=1e-12)
    else:
        assert w is None


def test_mha_bool_mask_equals_float_mask_and_weights_rows_sum_to_one():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(2, 5, 8)
    kpm = ember.tensor([[False] * 4 + [True], [False] * 5])
    fkpm = ember.zeros(2, 5).masked_fill(kpm, float("-inf"))
    out_b, w_b = m(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    out_f, w_f = m(x, x, x, key_padding_mask=fkpm, average_attn_weights=False)
    np.testing.assert_allclose(_np(out_b), _np(out_f), rtol=1e-6)
    assert tuple(w_b.shape) == (2, 2, 5, 5)
    np.testing.assert_allclose(_np(w_b).sum(-1), 1.0, rtol=1e-6)
    assert (_np(w_b)[0, ..., -1] == 0).all()  # the padded key gets no attention
    sdpa_out, none = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert none is None
    np.testing.assert_allclose(_np(sdpa_out), _np(out_b), rtol=1e-5, atol=1e-6)


def test_mha_init_and_parameter_names():
    m = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    names = [n for n, _ in m.named_parameters()]
    assert names == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                     "out_proj.bias"]
    bound = math.sqrt(6.0 / (16 + 48))  # xavier_uniform_ on (3E, E)
    assert np.abs(_np(m.in_proj_weight)).max() <= bound
    assert (_np(m.in_proj_bias) == 0).all() and (_np(m.out_proj.bias) == 0).all()
    assert tuple(m.bias_k.shape) == (1, 1, 16)
    sep = nn.MultiheadAttention(16, 4, kdim=5, vdim=7, bias=False)
    assert sep.in_proj_weight is None and sep.in_proj_bias is None
    assert [n for n, _ in sep.named_parameters()] == ["q_proj_weight", "k_proj_weight",
                                                     "v_proj_weight", "out_proj.weight"]
    assert tuple(sep.k_proj_weight.shape) == (16, 5) and tuple(sep.v_proj_weight.shape) == (16, 7)


def test_mha_gradcheck_float64():
    m = nn.MultiheadAttention(4, 2, dtype=ember.float64, add_bias_kv=True)
    _randomize(m, 2)
    x = ember.randn(3, 2, 4, dtype=ember.float64, requires_grad=True)
    mem = ember.randn(2, 2, 4, dtype=ember.float64, requires_grad=True)
    kpm = ember.tensor([[False, True], [False, False]])
    params = list(m.parameters())

    def weights_path(x, mem, *ps):
        out, w = m(x, mem, mem, key_padding_mask=kpm)
        return out, w

    def sdpa_path(x, *ps):
        return m(x, x, x, need_weights=False)[0]

    assert gradcheck(weights_path, (x, mem, *params))
    assert gradcheck(sdpa_path, (x, *params))


def test_encoder_layer_gradcheck_float64():
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0,
                                       activation="gelu", dtype=ember.float64)
    _randomize(layer, 3)
    x = ember.randn(3, 2, 4, dtype=ember.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64)
    assert gradcheck(lambda x, *ps: layer(x, src_mask=mask), (x, *layer.parameters()))


def test_functional_multi_head_attention_forward_matches_module():
    m = nn.MultiheadAttention(8, 2)
    x = ember.randn(4, 3, 8)
    out, w = F.multi_head_attention_forward(
        x, x, x, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
        m.out_proj.weight, m.out_proj.bias, training=False)
    ref_out, ref_w = m(x, x, x)
    np.testing.assert_allclose(_np(out), _np(ref_out), rtol=1e-6)
    np.testing.assert_allclose(_np(w), _np(ref_w), rtol=1e-6)


def test_unbatched_inputs():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(5, 8)
    out, w = m(x, x, x)
    assert tuple(out.shape) == (5, 8) and tuple(w.shape) == (5, 5)
    batched, _ = m(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0))
    np.testing.assert_allclose(_np(out), _np(batched[0]), rtol=1e-6)


def test_dropout_in_train_mode_changes_output_and_eval_does_not():
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.randn(6, 2, 8)
    a = _np(m(x, x, x, need_weights=False)[0])
    b = _np(m(x, x, x, need_weights=False)[0])
    assert not np.allclose(a, b)
    w = _np(m(x, x, x, average_attn_weights=False)[1])
    assert (w == 0).any()  # dropped attention weights
    m.eval()
    np.testing.assert_array_equal(_np(m(x, x, x)[0]), _np(m(x, x, x)[0]))


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == ember.float32
    expected = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    np.testing.assert_array_equal(_np(mask), expected)
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=ember.float64).dtype \
        == ember.float64


def test_layer_submodule_names():
    enc = nn.TransformerEncoderLayer(8, 2, 16)
    assert [n for n, _ in enc.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    dec = nn.TransformerDecoderLayer(8, 2, 16)
    assert [n for n, _ in dec.named_children()] == [
        "self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
        "norm3", "dropout1", "dropout2", "dropout3"]
    model = nn.Transformer(8, 2, 2, 1, 16)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 1
    assert model.encoder.layers[0] is not model.encoder.layers[1]
    assert enc.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, activation=ember.tanh).activation_relu_or_gelu == 0


def test_callable_activation_is_used():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=lambda t: t * 0)
    layer.eval()
    x = ember.randn(3, 2, 8)
    # with a zero feed-forward branch the layer is norm2(norm1(x + sa(x)))
    sa = layer.self_attn(x, x, x, need_weights=False)[0]
    expected = layer.norm2(layer.norm1(x + sa) + layer.linear2.bias)
    np.testing.assert_allclose(_np(layer(x)), _np(expected), rtol=1e-5, atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    m = nn.MultiheadAttention(8, 2)
    x = ember.randn(4, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is"):
        m(x, x, x, attn_mask=ember.zeros(3, 4))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=ember.zeros(4, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_layers_keep_the_device_and_reject_mixed_devices():
    from ember.testing import register_test_device

    register_test_device("testdev")
    dev = ember.device("testdev", 0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).to(dev)
    x = ember.randn(4, 2, 8, device=dev, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4, device=dev)
    kpm = ember.zeros(2, 4, dtype=ember.bool, device=dev)
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask"):
        out = layer(x, src_mask=mask, src_key_padding_mask=kpm)  # bool and float, as torch
    assert out.device == dev
    out.sum().backward()
    assert x.grad.device == dev and layer.self_attn.in_proj_weight.grad.device == dev
    m = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True).to(dev)
    o, w = m(x, x, x, key_padding_mask=kpm)
    assert o.device == dev and w.device == dev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m(ember.randn(4, 2, 8), ember.randn(4, 2, 8), ember.randn(4, 2, 8))
