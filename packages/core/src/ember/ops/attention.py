"""``scaled_dot_product_attention``: one recorded node with array code forward and backward
(``ScaledDotProductFlashAttentionForCpuBackward0``, as PyTorch's CPU kernel), and the same
computation written with Tensor ops for what the node does not cover (float16, bfloat16,
empty inputs) and for gradients of gradients (``create_graph=True``).

Rows whose scores are all masked out give zeros (output and gradients), as PyTorch 2.13's
CPU kernels do (its ``_safe_softmax``), not NaN.

The array path, per ``(..., L, S)`` score matrix ``s = q @ (k * scale)^T + mask``:

- the scale goes on ``k`` (``S x E``), not on the scores (``L x S``); a bool mask becomes an
  additive one of its own (small) size: one pass over the scores for any mask;
- causal float32 scores on the CPU are computed, exponentiated and summed only where the
  mask keeps them: the products by blocks of 32 query rows, each reading the keys up to
  its last row, the exp and the row sums in one native pass that writes the masked zeros
  (kernels.c ``ember_attention_exp_f32``); the backward skips the same blocks, its score
  gradient one native pass too. Elsewhere the causal mask is a cached additive ``-inf``
  matrix;
- the products inside a chunk of the batch stay on the chunk's thread (``_matmul``);
- ``e = exp(s)`` is taken without subtracting the row maxima (NumPy's reduction along a
  short last axis costs more than the exponential) and checked afterwards on the row sums
  ``z``, a small array: when a sum leaves ``[exp(-40), exp(60)]`` (overflow, every entry
  underflowing, a fully masked row, NaN) the scores are recomputed and the exponential
  taken after subtracting the row maxima, as ``softmax`` does. Either way the softmax is
  ``e * r`` with ``r = 1 / z`` per row (0 for a fully masked row);
- ``r`` is never applied to ``e``: the output is ``(e @ v) * r`` (``L x E``), and the
  backward folds ``r`` into the output's gradient (``L x E``) as well:
  ``dS = e * ((r * dO) @ v^T - r * rowsum(dO * O))``;
- ``k^T * scale`` is copied C-contiguous (``E x S``: a small copy) before its product with
  ``q``: OpenBLAS runs a batch of transposed right operands markedly slower; ``v`` and
  the other operands go as they are.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype, _native, _sdp
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._parallel import parallel_for
from .._tensor import _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._factories import sum_to_size
from ._promotion import broadcast_shape
from .linalg import _ROW_BLOCKS_BELOW, blas_matmul, serial_matmul
from .registry import register

__all__ = ["scaled_dot_product_attention"]

def _dtype_name(np_dtype) -> str:
    return _dtype.options_type_name(np_dtype)


def _check_inputs(query, key, value, attn_mask, dropout_p):
    q, k, v = query._data, key._data, value._data
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: "
                           f"{v.ndim} instead.")
    if not q.dtype == k.dtype == v.dtype:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_dtype_name(q.dtype)} key.dtype: "
                           f"{_dtype_name(k.dtype)} and value.dtype: {_dtype_name(v.dtype)} "
                           "instead.")
    if q.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError(f"expected scalar type Float but found {scalar_type_name(q.dtype)}")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md.kind != "b" and md != q.dtype:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {_dtype_name(md)} and  "
                               f"query.dtype: {_dtype_name(q.dtype)} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    check_same_device(query, key, value, attn_mask)


def _batch_error(q, other, size, got):
    """PyTorch's bmm wording for a last-dim mismatch of the two matrix products."""
    try:
        batch = math.prod(np.broadcast_shapes(q.shape[:-2], other.shape[:-2]))
    except ValueError:
        batch = math.prod(q.shape[:-2])
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{batch}, {size}] but got: [{batch}, {got}].")


def _repeat_heads(t, groups):
    """``t.repeat_interleave(groups, dim=-3)`` with expand and reshape."""
    shape = t._data.shape
    h = shape[-3]
    wide = t.unsqueeze(-3).expand(*shape[:-3], h, groups, *shape[-2:])
    return wide.reshape(*shape[:-3], h * groups, *shape[-2:])


def _gqa(query, key, value):
    hq, hk, hv = query._data.shape[-3], key._data.shape[-3], value._data.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    if hk != hq:
        key = _repeat_heads(key, hq // hk)
    if hv != hq:
        value = _repeat_heads(value, hq // hv)
    return key, value


def _keep_shape(q, k, L, S, attn_mask):
    """The shape of the attention weights' dropout mask (the scores', mask broadcast in)."""
    shape = np.broadcast_shapes(q.shape[:-1] + (S,), k.shape[:-2] + (L, S))
    if attn_mask is not None:
        shape = np.broadcast_shapes(shape, attn_mask._data.shape)
    return shape


def _dropout_mask(shape, dtype, dev, p):
    """A constant array of ``0`` and ``1 / (1 - p)`` drawn by ember's default generator."""
    from .._factory import place
    from .._random import _rng
    from .._torch_rng import TorchRNG

    if p >= 1.0:
        return xp_of(dev).zeros(shape, dtype)
    # drawn and scaled in float32 for float16/bfloat16 (one cast at the end): a low-precision
    # uniform draw and bfloat16 arithmetic took ~4 ms of a 54 ms bfloat16 autocast step
    work = np.dtype(np.float32) if dtype in _dtype.OPMATH else dtype
    g = _rng(None, dev)
    if isinstance(g, TorchRNG):  # PyTorch's math path: dropout on the weights, i.e.
        # bernoulli_(1 - p) in C order (float64 draws), then div_(1 - p) in the weights' type
        keep = g.torch_bernoulli(math.prod(shape), 1.0 - p).reshape(shape).astype(work)
        keep *= work.type(1) / work.type(1.0 - p)
    else:
        keep = (g.random(shape, dtype=work) >= p).astype(work)
        keep *= work.type(1.0 / (1.0 - p))
    return place(keep.astype(dtype, copy=False), dev)._data


# -- the Tensor-op form (float16, empty inputs, gradients of gradients) -------------------------

def _weights_tensor(query, key, attn_mask, scale):
    """``softmax(query @ key^T * scale + mask)`` in Tensor ops; fully masked rows give zeros.
    ``attn_mask``: None, bool (True takes part) or float (added), already causal-resolved."""
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if attn_mask is None:
        return scores.softmax(-1)
    if attn_mask._data.dtype.kind == "b":
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
    else:
        scores = scores + attn_mask
    dead = (scores._data == -np.inf).all(-1, keepdims=True)
    if dead.any():  # fully masked rows: zeros, not NaN, and zero grads
        dead_t = _make(dead, query._device)
        return scores.masked_fill(dead_t, 0.0).softmax(-1).masked_fill(dead_t, 0.0)
    return scores.softmax(-1)


def _attention_tensor(query, key, value, attn_mask, scale, keep):
    weights = _weights_tensor(query, key, attn_mask, scale)
    if keep is not None:
        weights = weights * _make(keep, query._device)
    return weights.matmul(value)


# -- the array form -----------------------------------------------------------------------------

_SUM_RANGE = (math.exp(-40.0), math.exp(60.0))  # row sums of exp(s) taken without the max
_CAUSAL: dict = {}  # (L, S, dtype, device) -> the additive causal mask (read only)


def _causal_mask(L, S, dtype, dev):
    key = (L, S, dtype, dev)
    add = _CAUSAL.get(key)
    if add is None:
        xp = xp_of(dev)
        below = xp.arange(L).reshape(L, 1) >= xp.arange(S).reshape(1, S)
        add = xp.where(below, xp.zeros((), dtype), xp.full((), -np.inf, dtype))
        if len(_CAUSAL) >= 16:
            _CAUSAL.clear()
        _CAUSAL[key] = add
    return add


def _additive(mask, dtype, xp):
    """A bool mask (True takes part) as ``0`` / ``-inf`` of its own shape; a float one as it is."""
    if mask.dtype.kind != "b":
        return mask
    return xp.where(mask, xp.zeros((), dtype), xp.full((), -np.inf, dtype))


def _contiguous(a, xp, factor=None):
    """``a`` (times ``factor``) as a new C-contiguous array (for the right operand of a
    batched product, which OpenBLAS runs markedly slower transposed)."""
    out = xp.empty(a.shape, a.dtype)
    if factor is None:
        out[...] = a
    else:
        xp.multiply(a, factor, out=out)
    return out


def _matmul(a, b, xp, out=None):
    """``a @ b`` (into ``out``). On NumPy, products under ``_ROW_BLOCKS_BELOW`` each run on
    the calling thread (``serial_matmul``): the batch is split over Ember's threads already,
    and NumPy's matmul hands each head's product to OpenBLAS, which threads one of
    128 x 32 x 128; GPT's attention forward ran 1.7x slower with both chunks doing so. The
    choice is by shape alone, so the bits do not depend on the thread count."""
    if xp is np:
        if a.shape[-2] * a.shape[-1] * b.shape[-1] < _ROW_BLOCKS_BELOW:
            return serial_matmul(a, b, out)
        return blas_matmul(a, b, out)
    return a @ b if out is None else xp.matmul(a, b, out=out)


def _scores(q, kt, add, xp, out=None):
    return _add_mask(_matmul(q, kt, xp, out), add)


def _add_mask(s, add):
    if add is not None:
        if s.shape == np.broadcast_shapes(s.shape, add.shape):
            s += add
        else:  # the mask has batch dims the inputs lack
            s = s + add
    return s


def _row_sums(e, xp):
    return xp.einsum("...j->...", e)[..., None]  # one pass; ``e.sum(-1)`` loops per row


def _softmax_parts(q, kt, add, xp, out=None, causal=False):
    """``(e, r)``: the softmax of the scores is ``e * r``, ``r`` the reciprocal row sums (0
    for fully masked rows); ``e`` in ``out`` when given (a NumPy array of its shape). See the
    module's docstring for why the max is subtracted only when the plain exponential leaves
    the safe range. ``causal``: ``add`` is the causal mask, which float32 scores on the CPU
    take in ``_native_exp``'s one pass instead (the masked half neither computed nor
    exponentiated)."""
    z = None
    if causal and xp is np and _causal_native(q, kt):  # only the causal blocks' scores
        if out is None:
            out = _product_buffer(q, kt)
        e = _causal_product(q, kt, out)
        z = _native_exp(e, causal)
    elif causal:
        e = _matmul(q, kt, xp, out)
        z = _native_exp(e, causal)
        if z is None:
            e = _add_mask(e, add)
    else:  # no mask or another one: NumPy's exp and sums are as fast as the native pass
        e = _scores(q, kt, add, xp, out)
    if z is None:
        with np.errstate(over="ignore", invalid="ignore"):
            xp.exp(e, out=e)
            z = _row_sums(e, xp)
    lo, hi = _SUM_RANGE
    if lo <= z.min() and z.max() <= hi:  # NaN fails both
        return e, 1.0 / z
    s = _scores(q, kt, add, xp, out)
    m = s.max(-1, keepdims=True)
    m[m == -np.inf] = 0.0  # fully masked rows: exp(-inf) = 0, not NaN
    s -= m
    xp.exp(s, out=s)
    z = _row_sums(s, xp)
    with np.errstate(divide="ignore"):
        r = 1.0 / z
    r[z == 0] = 0.0
    return s, r


#: rows of a causal product's blocks: rows r0:r1 of the scores need keys 0:r1 only, and the
#: weights of those rows are 0 past them (GPT's 128 x 128 heads: 37.5% of both products
#: skipped)
_CAUSAL_ROWS = 32


def _causal_native(q, kt) -> bool:
    """Whether float32 causal scores of these operands go by blocks (``_causal_product``)
    through ``_native_exp`` (which writes the zeros past each row's keys)."""
    return q.dtype == np.float32 and kt.dtype == np.float32 and \
        q.shape[-2] > _CAUSAL_ROWS and _native.kernel("ember_attention_exp_f32") is not None


def _causal_product(a, b, out, weights=False):
    """``a @ b`` into ``out`` for ``a``'s rows in blocks of ``_CAUSAL_ROWS``, each reading
    the keys up to its last row (the causal mask's top-left alignment): the scores (``b``
    the keys, transposed: each block's columns cut, the rest of ``out`` not written) or,
    with ``weights``, the output from the weights (``b`` the values: each block's inner size
    cut, the weights past it being 0)."""
    L = a.shape[-2]
    for r0 in range(0, L, _CAUSAL_ROWS):
        r1 = min(L, r0 + _CAUSAL_ROWS)
        if weights:
            c = min(a.shape[-1], r1)
            serial_matmul(a[..., r0:r1, :c], b[..., :c, :], out[..., r0:r1, :])
        else:
            c = min(b.shape[-1], r1)
            serial_matmul(a[..., r0:r1, :], b[..., :c], out[..., r0:r1, :c])
    return out


def _native_exp(e, causal):
    """The row sums of ``exp(e)``, ``e`` exponentiated in place (the causal mask's columns
    zeroed) by kernels.c's ``ember_attention_exp_f32``, for a C-contiguous float32 NumPy
    array; None (``e`` untouched) where that does not apply. The kernel's exp is its own
    (within 2 ulp), not NumPy's."""
    if e.__class__ is not np.ndarray or e.dtype != np.float32 or not e.flags.c_contiguous:
        return None
    fn = _native.kernel("ember_attention_exp_f32")
    if fn is None:
        return None
    length, n = e.shape[-2], e.shape[-1]
    z = np.empty(e.shape[:-1] + (1,), np.float32)
    if e.size:
        fn(_native.address(e), _native.address(z), e.size // n, n, length, int(causal))
    return z


def _output_buffer(like, shape, xp):
    """Where a result of ``shape`` goes: in the layout of ``like`` when it is the
    heads-transposed view of an ``(N, L, H, E)`` array, as PyTorch's CPU kernel does (merging
    the heads is then free, and so is the gradient's way back through the split)."""
    if like.ndim == 4 and len(shape) == 4 and like.shape[:-1] == shape[:-1] \
            and like.strides[1] < like.strides[2]:
        n, h, length, e = shape
        return xp.empty((n, length, h, e), like.dtype).transpose(0, 2, 1, 3)
    return xp.empty(shape, like.dtype)


def _product_buffer(a, b, like=None, xp=np):
    """A new array for ``a @ b``: in ``like``'s layout where ``_output_buffer`` keeps it,
    else (no ``like``) C-contiguous."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return xp.empty(shape, a.dtype) if like is None else _output_buffer(like, shape, xp)


def _product(a, b, like, xp, factor=None, out=None):
    """``a @ b`` (times ``factor``), in ``like``'s layout where the shapes agree (or into
    ``out``)."""
    if out is None:
        out = _product_buffer(a, b, like, xp)
    _matmul(a, b, xp, out)
    if factor is not None:
        out *= factor
    return out


#: score elements per thread at least when the forward splits its batch over threads
_PARALLEL_SCORES = 1 << 18


def _attention_arrays(q, k, v, add, scale, keep, query_layout, xp, causal=False):
    """``(out, e, r)`` of the forward, ``keep`` the dropout multipliers or None; the output
    in the query's layout (``query_layout``) or C-contiguous.

    On NumPy the leading batch dimension is split over Ember's intra-op threads
    (``ember._parallel``), each chunk writing its slices of the preallocated results; an
    input whose leading dimension is broadcast is shared by all chunks."""
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:  # PyTorch's words (its first matmul's broadcast)
        broadcast_shape(broadcast_shape(q.shape[:-2], k.shape[:-2]), v.shape[:-2])
        raise
    if add is not None:
        batch = np.broadcast_shapes(batch, add.shape[:-2])
    if keep is not None:
        batch = np.broadcast_shapes(batch, keep.shape[:-2])
    L, S = q.shape[-2], k.shape[-2]
    if xp is not np or not batch:
        return _attention_chunk(q, k, v, add, scale, keep, query_layout, xp, causal=causal)
    e = np.empty(batch + (L, S), q.dtype)
    r = np.empty(batch + (L, 1), q.dtype)
    out_shape = batch + (L, v.shape[-1])
    out = _output_buffer(q, out_shape, xp) if query_layout else np.empty(out_shape, q.dtype)
    n, ndim = batch[0], len(batch) + 2

    def run(b0, b1):
        ins = [_batch_part(a, b0, b1, ndim) for a in (q, k, v, add, keep)]
        _attention_chunk(*ins[:3], ins[3], scale, ins[4], query_layout, xp, causal,
                         (out[b0:b1], e[b0:b1], r[b0:b1]))

    per_item = e.size // max(n, 1)
    parallel_for(0, n, -(-_PARALLEL_SCORES // max(per_item, 1)), run)
    return out, e, r


def _batch_part(a, b0, b1, ndim):
    """Batch items ``b0:b1`` of ``a`` (an ``ndim``-dim array), or all of it when its leading
    dimension is broadcast (missing or 1) or it is None: one chunk's share of an input."""
    return a if a is None or a.ndim < ndim or a.shape[0] == 1 else a[b0:b1]


def _attention_chunk(q, k, v, add, scale, keep, query_layout, xp, causal=False, outs=None):
    """``_attention_arrays`` on one chunk, into ``outs = (out, e, r)`` when given."""
    out, e, r = outs if outs is not None else (None, None, None)
    e, rz = _softmax_parts(q, _contiguous(xp.swapaxes(k, -1, -2), xp, scale), add, xp, e,
                           causal)
    if r is None:
        r = rz
    else:
        r[...] = rz
    w = e if keep is None else e * keep
    if causal and xp is np and _causal_native(q, k):  # e is 0 past each row's keys
        ov = _causal_product(w, v, _product_buffer(w, v), weights=True)
    else:
        ov = _matmul(w, v, xp)
    if out is None:
        if not query_layout:
            ov *= r
            return ov, e, r
        out = _output_buffer(q, ov.shape, xp)
    xp.multiply(ov, r, out=out)
    return out, e, r


def _sdpa_bw(node, g):
    query, key, value, mask, e, r, keep = node.saved
    if GRAD.enabled:  # create_graph: the gradients as Tensor ops, differentiable again
        return _sdpa_bw_tensor(node, g)
    xp = xp_of(g)
    q, k, v, gd, o = query._data, key._data, value._data, g._data, node.out_data
    low = q.dtype in _dtype.OPMATH  # float16/bfloat16: in float32 (the forward's e, r are)
    if low:
        q, k, v, gd, o = (_dtype.widen(a) for a in (q, k, v, gd, o))
    scale, causal = node.ctx[0], node.ctx[1] is True
    need = [node.needs_grad(i) for i in range(4)]
    if xp is not np or e.ndim < 3:
        grads = _sdpa_bw_chunk(q, k, v, gd, o, e, r, keep, scale, need, xp, causal=causal)
    else:  # the batch split over Ember's intra-op threads, as in the forward
        batch = e.shape[:-2]
        shapes = (batch + q.shape[-2:], batch + k.shape[-2:], batch + v.shape[-2:])
        grads = [_output_buffer(like, shape, xp) if want else None
                 for like, shape, want in zip((q, k, v), shapes, need)]
        grads.append(np.empty(e.shape, e.dtype) if need[3] else None)
        n, ndim = batch[0], e.ndim

        def run(b0, b1):
            ins = [_batch_part(a, b0, b1, ndim) for a in (q, k, v, gd, o, e, r, keep)]
            _sdpa_bw_chunk(*ins, scale, need, xp, [_batch_part(a, b0, b1, ndim) for a in grads],
                           causal)

        parallel_for(0, n, -(-_PARALLEL_SCORES // max(e.size // max(n, 1), 1)), run)
    if low:
        grads = [None if a is None else _dtype.narrow(a, t._data.dtype)
                 for a, t in zip(grads, (query, key, value, mask))]
    # inputs broadcast against each other (or the mask against them) get summed gradients
    return tuple(None if a is None else sum_to_size(_make(a, g._device), t._data.shape)
                 for a, t in zip(grads, (query, key, value, mask)))


def _sdpa_bw_chunk(q, k, v, gd, o, e, r, keep, scale, need, xp, outs=None, causal=False):
    """The gradients ``[dq, dk, dv, dmask]`` (None where not needed) of one chunk of the
    batch from the saved softmax parts ``e``, ``r`` (into ``outs`` when given). Causal
    float32 chunks skip what the mask zeroes (``_causal_grads``)."""
    outs = outs if outs is not None else [None] * 4
    god = _contiguous(gd, xp, r)  # r * dO
    d = xp.einsum("...i,...i->...", gd, o)[..., None]
    d *= r  # r * rowsum(dO * O)
    if causal and xp is np and _causal_native(q, k) and not need[3] and \
            (keep is None or keep.shape == e.shape and keep.flags.c_contiguous):
        return _causal_grads(q, k, v, god, d, e, keep, scale, need, outs)
    grads = [None] * 4
    if need[2]:
        grads[2] = _product(xp.swapaxes(e if keep is None else e * keep, -1, -2), god, v, xp,
                            out=outs[2])
    if need[0] or need[1] or need[3]:
        vt = _contiguous(xp.swapaxes(v, -1, -2), xp)
        ds = _matmul(god, vt, xp, outs[3])
        if keep is not None:
            ds *= keep
        ds -= d
        ds *= e  # dS, the scores' gradient
        if need[0]:
            grads[0] = _product(ds, k, q, xp, scale, outs[0])
        if need[1]:
            grads[1] = _product(xp.swapaxes(ds, -1, -2), q, k, xp, scale, outs[1])
        grads[3] = ds if need[3] else None
    return grads


def _causal_grads(q, k, v, god, d, e, keep, scale, need, outs):
    """``_sdpa_bw_chunk`` for causal float32 scores: each product reads only the blocks the
    causal mask leaves (``_causal_product`` for the query rows, ``_key_product`` for the key
    rows: key j gets gradient from queries j and after), and the score gradient is one native
    pass (kernels.c ``ember_attention_ds_f32``) that writes the masked zeros itself."""
    grads = [None] * 4

    def buffer(like, a, b, out):
        return out if out is not None else _product_buffer(a, b, like)

    if need[2]:
        w = np.swapaxes(e if keep is None else e * keep, -1, -2)
        grads[2] = _key_product(w, god, buffer(v, w, god, outs[2]))
    if need[0] or need[1]:
        vt = _contiguous(np.swapaxes(v, -1, -2), np)
        ds = np.empty(e.shape, e.dtype)
        _causal_product(god, vt, ds)
        length, n = ds.shape[-2], ds.shape[-1]
        addr = _native.address
        d = np.ascontiguousarray(d)  # einsum keeps the inputs' order (heads-transposed ones)
        _native.kernel("ember_attention_ds_f32")(
            addr(ds), addr(e), None if keep is None else addr(keep), addr(d), ds.size // n, n,
            length, 1)
        if need[0]:
            grads[0] = _causal_product(ds, k, buffer(q, ds, k, outs[0]), weights=True)
            grads[0] *= scale
        if need[1]:
            dst = np.swapaxes(ds, -1, -2)
            grads[1] = _key_product(dst, q, buffer(k, dst, q, outs[1]))
            grads[1] *= scale
    return grads


def _key_product(a, b, out):
    """``a @ b`` into ``out``, ``a`` a transposed causal matrix (key rows j, query columns
    i, nonzero for i >= j only): key rows in blocks of ``_CAUSAL_ROWS``, each reading the
    query columns from its first row on; key rows past the last query get 0."""
    S, L = a.shape[-2], a.shape[-1]
    for j0 in range(0, S, _CAUSAL_ROWS):
        j1 = min(S, j0 + _CAUSAL_ROWS)
        if j0 >= L:
            out[..., j0:j1, :] = 0
        else:
            serial_matmul(a[..., j0:j1, j0:], b[..., j0:, :], out[..., j0:j1, :])
    return out


def _sdpa_bw_tensor(node, g):
    """The backward in Tensor ops, the weights recomputed from the inputs: its graph reaches
    ``query``, ``key`` and a float ``attn_mask`` through them."""
    query, key, value, mask, _, _, keep = node.saved
    scale, mask_arg = node.ctx
    if mask_arg is True:
        mask_arg = _causal_tensor(query._data.shape[-2], key._data.shape[-2], g._device)
    p = _weights_tensor(query, key, mask_arg, scale)
    if keep is not None:  # float32 for float16/bfloat16 inputs (the array forward's)
        keep = _make(_dtype.narrow(keep, p._data.dtype), g._device)
    w = p if keep is None else p * keep
    gv = sum_to_size(w.transpose(-2, -1).matmul(g), value._data.shape)
    dp = g.matmul(value.transpose(-2, -1))
    if keep is not None:
        dp = dp * keep
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    gq = sum_to_size(ds.matmul(key) * scale, query._data.shape)
    gk = sum_to_size(ds.transpose(-2, -1).matmul(query) * scale, key._data.shape)
    gm = sum_to_size(ds, mask._data.shape) if mask is not None else None
    return gq, gk, gv, gm


ScaledDotProductFlashAttentionForCpuBackward0 = make_node_class(
    "ScaledDotProductFlashAttentionForCpuBackward0", _sdpa_bw)


def _causal_tensor(L, S, dev):
    xp = xp_of(dev)
    return _make(xp.arange(L).reshape(L, 1) >= xp.arange(S).reshape(1, S), dev)


@register("scaled_dot_product_attention", method=False, function=False, random=True)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value``, as
    ``torch.nn.functional.scaled_dot_product_attention``.

    ``attn_mask``: bool (True takes part in attention) or float (added to the scores),
    broadcast to ``(..., L, S)``. ``is_causal`` masks with a lower-triangular (top-left
    aligned) mask. ``dropout_p`` drops attention weights with ember's default generator.
    ``enable_gqa`` repeats key/value heads (dim -3) to match the query's.
    """
    _check_inputs(query, key, value, attn_mask, dropout_p)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    q, k, v = query._data, key._data, value._data
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and v.ndim >= 3:
        key, value = _gqa(query, key, value)
        k, v = key._data, value._data
    if k.shape[-1] != q.shape[-1]:
        _batch_error(q, k, q.shape[-1], k.shape[-1])
    if v.shape[-2] != k.shape[-2]:
        _batch_error(q, v, k.shape[-2], v.shape[-2])
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    L, S = q.shape[-2], k.shape[-2]
    dev = query._device
    # the backend PyTorch would pick (its error when the enabled ones cannot run these)
    path = _sdp.cpu_path(q, k, v, attn_mask, dropout_p) if dev.type == "cpu" \
        else _sdp.any_enabled() and "flash"
    keep = None
    if not (q.size and k.size and v.size):  # empty: the Tensor-op form
        if dropout_p > 0.0:
            keep = _dropout_mask(_keep_shape(q, k, L, S, attn_mask), q.dtype, dev, dropout_p)
        if is_causal:
            attn_mask = _causal_tensor(L, S, dev)
        return _attention_tensor(query, key, value, attn_mask, scale, keep)
    low = q.dtype in _dtype.OPMATH  # float16/bfloat16: computed in float32 as PyTorch's CPU
    if low:  # flash kernel accumulates them, the output rounded once
        q, k, v = _dtype.widen(q), _dtype.widen(k), _dtype.widen(v)
    if dropout_p > 0.0:
        keep = _dropout_mask(_keep_shape(q, k, L, S, attn_mask), q.dtype, dev, dropout_p)
    xp = xp_of(query)
    if is_causal:
        add = _causal_mask(L, S, q.dtype, dev)
    else:
        add = None if attn_mask is None else _additive(_dtype.widen(attn_mask._data), q.dtype,
                                                       xp)
    # PyTorch's flash kernel keeps the query's layout; its composite path (dropout, a mask
    # that requires grad) gives a contiguous output: so does this
    query_layout = keep is None and not (attn_mask is not None and attn_mask.requires_grad)
    out, e, r = _attention_arrays(q, k, v, add, scale, keep, query_layout, xp, is_causal)
    out = _make(_dtype.narrow(out, query._data.dtype) if low else out, dev)
    if GRAD.enabled and (query.requires_grad or key.requires_grad or value.requires_grad
                         or attn_mask is not None and attn_mask.requires_grad):
        grad_mask = attn_mask if attn_mask is not None and attn_mask.requires_grad else None
        mask_arg = True if is_causal else attn_mask  # causal: built if create_graph needs it
        # the weights' parts are saved (freed after backward), not kept in the context
        # PyTorch's fused kernel saves the query, key, value and output, all checked for
        # in-place writes at backward; its math path, composed of ops, only the value
        math_path = path == "math"
        record(ScaledDotProductFlashAttentionForCpuBackward0, out,
               (query, key, value, grad_mask), (query, key, value, grad_mask, e, r, keep),
               (scale, mask_arg), save_output=True,
               checked=(False, False, True, False, False, False, False) if math_path else None)
        if math_path:
            out.grad_fn.out_vc = None
    return out
