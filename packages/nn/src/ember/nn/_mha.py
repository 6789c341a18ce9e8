"""``multi_head_attention_forward`` (``torch.nn.functional``) and its mask helpers.

The computation is kept to a handful of recorded ops: one fused in-projection matmul for
self-attention, views (``view``/``permute``/``unbind``) to split heads, one
``scaled_dot_product_attention`` (or an explicit softmax when the weights are asked for),
and the out-projection. Internally the tensors may be sequence-first ``(L, N, E)`` (torch's
functional layout) or batch-first ``(N, L, E)`` (so ``MultiheadAttention(batch_first=True)``
needs no transposes); heads are always ``(N, H, L, D)``.
"""

from __future__ import annotations

import math
import warnings

import ember
from ember import Tensor

__all__ = ["multi_head_attention_forward"]


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float mask of ``target_type`` (``-inf`` where True), floats as given."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError("is_floating_point(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(mask).__name__}")
    is_float = mask.dtype.is_floating_point
    if mask.dtype != ember.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if not is_float:
        mask = ember.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """torch's shape checks; returns whether the input is batched."""
    qd = query.dim()
    if qd not in (2, 3):
        raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                             f"{qd}-D query tensor")
    which = "batched (3-D)" if qd == 3 else "unbatched (2-D)"
    if key.dim() != qd or value.dim() != qd:
        raise AssertionError(f"For {which} `query`, expected `key` and `value` to be {qd}-D but "
                             f"found {key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != qd - 1:
        raise AssertionError(f"For {which} `query`, expected `key_padding_mask` to be `None` or "
                             f"{qd - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {which} `query`, expected `attn_mask` to be `None`, 2-D "
                                 f"or 3-D but found {attn_mask.dim()}-D tensor instead")
        if qd == 2 and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
    return qd == 3


def _in_projection_packed(q, k, v, w, b=None):
    """torch's helper: the q, k, v projections by the packed ``(3E, E)`` weight ``w``."""
    E = q.size(-1)
    if k is v:
        if q is k:  # self-attention
            proj = ember.linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
            proj = proj.contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = ember.linear(q, w_q, b_q)
        kv_proj = ember.linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
        kv_proj = kv_proj.contiguous()
        return (q_proj, kv_proj[0], kv_proj[1])
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return ember.linear(q, w_q, b_q), ember.linear(k, w_k, b_k), ember.linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """torch's helper: the q, k, v projections by separate weights (shapes checked)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for w, shape, name in ((w_q, (Eq, Eq), "query"), (w_k, (Eq, Ek), "key"),
                           (w_v, (Eq, Ev), "value")):
        if w.shape != shape:
            raise AssertionError(f"expecting {name} weights shape of {shape}, but got "
                                 f"{w.shape}")
    for b, name in ((b_q, "query"), (b_k, "key"), (b_v, "value")):
        if b is not None and b.shape != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {b.shape}")
    return ember.linear(q, w_q, b_q), ember.linear(k, w_k, b_k), ember.linear(v, w_v, b_v)


def _heads(x, parts, batch_first, num_heads):
    """``(L, N, parts*E)`` (or ``(N, L, parts*E)``) -> ``parts`` views of ``(N, H, L, D)``."""
    a, b, e = x.shape
    x = x.view(a, b, parts, num_heads, e // (parts * num_heads))
    x = x.permute(2, 0, 3, 1, 4) if batch_first else x.permute(2, 1, 3, 0, 4)
    return x.unbind(0)


def _pad_last(mask):
    """Append one zero column (a key that nothing masks) to a float mask."""
    zeros = ember.zeros((*mask.shape[:-1], 1), dtype=mask.dtype, device=mask.device)
    return ember.cat([mask, zeros], -1)


def _project_heads(query, key, value, num_heads, batch_first, in_proj_weight, in_proj_bias,
                   separate):
    """q, k, v as ``(N, H, L|S, D)`` views: one matmul for self-attention, two for shared k/v."""
    if separate is None:
        E = query.shape[-1]
        if key is value:
            if query is key:
                return _heads(ember.linear(query, in_proj_weight, in_proj_bias), 3,
                              batch_first, num_heads)
            w_q, w_kv = in_proj_weight.split([E, 2 * E])
            b_q, b_kv = (None, None) if in_proj_bias is None else in_proj_bias.split([E, 2 * E])
            (q,) = _heads(ember.linear(query, w_q, b_q), 1, batch_first, num_heads)
            k, v = _heads(ember.linear(key, w_kv, b_kv), 2, batch_first, num_heads)
            return q, k, v
        weights = in_proj_weight.chunk(3)
    else:
        weights = separate
        E, Ek, Ev = query.shape[-1], key.shape[-1], value.shape[-1]
        for w, shape, name in zip(weights, ((E, E), (E, Ek), (E, Ev)), ("query", "key", "value")):
            if tuple(w.shape) != shape:
                raise AssertionError(f"expecting {name} weights shape of {shape}, but got "
                                     f"{w.shape}")
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    return tuple(_heads(ember.linear(x, w, b), 1, batch_first, num_heads)[0]
                 for x, w, b in zip((query, key, value), weights, biases))


def _static(t, name, bsz, num_heads, head_dim):
    if t.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got "
                             f"{t.size(0)}")
    if t.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.size(2)}")
    return t.view(bsz, num_heads, t.size(1), head_dim)


def _attention(query, key, value, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
               add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
               key_padding_mask, need_weights, attn_mask, separate, static_k, static_v,
               average_attn_weights, is_causal, batch_first):
    """The batched computation; masks are already float (or None)."""
    if batch_first:
        bsz, tgt_len, embed_dim = query.shape
    else:
        tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[1 if batch_first else 0]
    head_dim = embed_dim // num_heads
    q, k, v = _project_heads(query, key, value, num_heads, batch_first, in_proj_weight,
                             in_proj_bias, separate)
    if attn_mask is not None:  # as (1 or N, 1 or H, L, S)
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.view(1, 1, tgt_len, src_len)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
            attn_mask = attn_mask.view(bsz, num_heads, tgt_len, src_len)
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if static_k is None and bias_k is None:
        kb = key.shape[0 if batch_first else 1]
        if kb != bsz:  # torch's k.view(src_len, bsz * num_heads, head_dim) fails
            raise RuntimeError(f"shape '[{src_len}, {bsz * num_heads}, {head_dim}]' is invalid "
                               f"for input of size {src_len * kb * embed_dim}")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ember.cat([k, bias_k.view(1, num_heads, 1, head_dim).expand(bsz, -1, -1, -1)], 2)
        v = ember.cat([v, bias_v.view(1, num_heads, 1, head_dim).expand(bsz, -1, -1, -1)], 2)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    if static_k is not None:
        k = _static(static_k, "static_k", bsz, num_heads, head_dim)
    if static_v is not None:
        v = _static(static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        zeros = ember.zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = ember.cat([k, zeros], 2)
        v = ember.cat([v, zeros], 2)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[2]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.view(bsz, 1, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    weights = None
    if need_weights:
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        scores = (q * math.sqrt(1.0 / float(head_dim))).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
        if dropout_p > 0.0:
            weights = ember.dropout(weights, dropout_p)
        out = weights.matmul(v)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        # through ember.nn.functional (a dispatching namespace): graph capture sees the call
        # (imported here: functional imports this module)
        from . import functional as F

        out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(0, 2, 1, 3) if batch_first else out.permute(2, 0, 1, 3)
    out = ember.linear(out.reshape(*out.shape[:2], embed_dim), out_proj_weight, out_proj_bias)
    return out, weights


def _prepare(query, key, value, embed_dim_to_check, num_heads, key_padding_mask, attn_mask,
             need_weights, is_causal, use_separate_proj_weight, batch_first):
    """Checks, unbatched handling and mask canonicalisation shared by the functional API and
    ``MultiheadAttention``; returns the batched inputs, float masks and ``is_causal``."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        bdim = 0 if batch_first else 1
        query, key, value = query.unsqueeze(bdim), key.unsqueeze(bdim), value.unsqueeze(bdim)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    if (embed_dim // num_heads) * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        kb, vb = key.shape[:2], value.shape[:2]
        if kb != vb:
            raise AssertionError(f"key's sequence and batch dims {kb} do not match value's {vb}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    return is_batched, query, key, value, key_padding_mask, attn_mask, is_causal


def _run(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
         bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
         key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
         k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal,
         batch_first):
    # keep self-attention recognisable (``query is key is value``) through unsqueeze
    same_qk, same_kv = query is key, key is value
    is_batched, query, key, value, key_padding_mask, attn_mask, is_causal = _prepare(
        query, key, value, embed_dim_to_check, num_heads, key_padding_mask, attn_mask,
        need_weights, is_causal, use_separate_proj_weight, batch_first)
    if same_kv:
        value = key
        if same_qk:
            key = value = query
    if use_separate_proj_weight:
        for w, n in ((q_proj_weight, "q"), (k_proj_weight, "k"), (v_proj_weight, "v")):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {n}_proj_weight is "
                                     "None")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        separate = None
    out, weights = _attention(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                              bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                              out_proj_bias, training, key_padding_mask, need_weights,
                              attn_mask, separate, static_k, static_v, average_attn_weights,
                              is_causal, batch_first)
    if not is_batched:
        out = out.squeeze(0 if batch_first else 1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention on sequence-first ``(L, N, E)`` (or unbatched ``(L, E)``) inputs
    (``torch.nn.functional.multi_head_attention_forward``); returns ``(output, weights)``,
    ``weights`` being ``None`` unless ``need_weights``."""
    return _run(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                training, key_padding_mask, need_weights, attn_mask, use_separate_proj_weight,
                q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v,
                average_attn_weights, is_causal, batch_first=False)
