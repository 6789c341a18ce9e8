"""Miscellaneous ``torch.nn.functional`` kernels: dropout family, embedding, one_hot, pad,
interpolate/upsample, pixel_(un)shuffle, channel_shuffle, cosine_similarity,
pairwise_distance, pdist, normalize, gumbel_softmax, conv_tbc; ``affine_grid`` and
``grid_sample`` (defined in ``ops.grid``) are listed here too, for ``nn.functional``.

Masks are drawn by the default generator of the input's device (``ember._random``), so
``ember.manual_seed`` makes them deterministic. Resampling (``pad``'s non-constant modes,
``interpolate``) is written as per-axis gathers forward and ``index_add`` backward: no Python
loop over elements, and the backward is made of differentiable ops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype, _native
from .. import _memory_format as _mf
from .._device import check_same_device, refuse_meta, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD, no_grad
from ..autograd.graph import make_node_class, record
from ._casts import cast_to
from ._inplace import make_inplace
from ._promotion import wrap_dim
from ._resample_weights import aa_weights, cubic_coefficients, int16_weights, source_scale
from ._signatures import check_binds
from .grid import affine_grid, grid_sample
from .indexing import ufunc_at
from .registry import register

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "feature_dropout", "embedding", "check_padding_idx",
           "embedding_bag", "one_hot",
           "bilinear",
           "pad",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "cosine_similarity", "pairwise_distance", "normalize", "cdist",
           "channel_shuffle", "native_channel_shuffle", "pdist", "gumbel_softmax", "conv_tbc",
           "affine_grid", "grid_sample"]

_ALPHA = 1.7580993408473766  # -selu's negative saturation value (scale * alpha)


# -- dropout family --------------------------------------------------------------------------

def _mask_bw(node, g):
    return (g * node.ctx,)


def _mask_product_bw(node, g):
    return g * node.ctx, None


NativeDropoutBackward0 = make_node_class("NativeDropoutBackward0", _mask_bw)
# PyTorch's CPU dropout is ``input * noise`` (its fused native_dropout runs on CUDA only): a
# MulBackward0 whose second edge, the noise, takes no gradient
_DropoutMulBackward0 = make_node_class("MulBackward0", _mask_product_bw)
# alpha dropout's last step is ``input * a + b``: an AddBackward0 on top
AlphaDropoutBackward0 = make_node_class("AddBackward0", _mask_bw)


def _record_dropout(out, input, scale) -> None:
    """The node of a (feature) dropout's product ``out = input * scale``: PyTorch's CUDA
    kernel's NativeDropoutBackward0, else its CPU formula's MulBackward0."""
    s = _make(scale, input._device)
    if input._device.type == "cuda":
        record(NativeDropoutBackward0, out, (input,), (), s)
    else:
        record(_DropoutMulBackward0, out, (input, s), (), s)


def _check_p(p, aten=False):
    if p < 0.0 or p > 1.0:  # ``nn.functional``'s Python check; ATen's op (``torch.dropout``)
        raise (RuntimeError if aten else ValueError)(  # checks it in C++
            f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_draw(input: Tensor, shape, p) -> np.ndarray:
    """The host-drawn keep mask of ``shape`` (bool), in the memory order ``_draw_order``
    gives: PyTorch's ``bernoulli_(1 - p)`` on the CPU engine (float64 draws, so a seeded
    dropout keeps PyTorch's elements), a float32 uniform at least ``p`` on another generator."""
    from .._random import _rng
    from .._torch_rng import TorchRNG

    g = _rng(None, input._device)
    order = _draw_order(input, shape)
    drawn = shape if order is None else tuple(shape[a] for a in order)
    if isinstance(g, TorchRNG):
        keep = g.torch_bernoulli(math.prod(drawn), 1.0 - p).reshape(drawn)
    else:
        keep = g.random(drawn, dtype=np.float32) >= p
    return keep if order is None else keep.transpose(_mf.inverse(order))


def _keep_mask(input: Tensor, shape, p) -> Tensor:
    """A host-drawn 0/1 keep mask of ``shape`` (float, input's dtype) on input's device."""
    from .._factory import place

    return place(_keep_draw(input, shape, p).astype(input._data.dtype), input._device)


def _draw_order(input: Tensor, shape):
    """The memory order to draw a mask of ``input``'s own ``shape`` in, so that it (and the
    product) keeps a dense input's layout, as PyTorch's ``bernoulli_`` on ``empty_like`` does;
    None for C order."""
    d = input._data
    return _mf.dense_order(d) if shape == d.shape else None


def _keep_scale(input: Tensor, shape, p):
    """``_keep_mask(...) / (1 - p)`` (the same draw and values) as an array on input's
    device: PyTorch's ``noise.div_(1 - p)``, the divisor rounded to the dtype first."""
    from .._factory import place

    dt = input._data.dtype
    u = _keep_draw(input, shape, p).astype(dt)
    np.multiply(u, dt.type(1) / dt.type(1.0 - p), out=u)
    return place(u, input._device)._data


def _dropout_impl(input, p, feature, alpha):
    """``input * mask * scale`` (alpha: plus the affine shift keeping mean and variance)."""
    d = input._data
    if d.size == 0:
        return input
    if p == 1:  # PyTorch multiplies by a zero of the input's own dtype (integers too)
        return input * _make(xp_of(input).zeros((), dtype=d.dtype), input._device)
    if feature and d.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if d.dtype not in _dtype.FLOATING_NP:
        if d.dtype.kind == "c":
            raise NotImplementedError(f'"bernoulli_scalar_cpu_" not implemented for '
                                      f"'{scalar_type_name(d.dtype)}'")
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{scalar_type_name(d.dtype)}")
    shape = d.shape
    if feature:
        shape = shape[:2] + (1,) * (d.ndim - 2)
    low = d.dtype in _dtype.OPMATH
    if not low and not alpha:  # the common case, in as few passes over memory as it takes
        scale = _keep_scale(input, shape, p)
        out = _make(d * scale, input._device)
        if GRAD.enabled and input.requires_grad:
            _record_dropout(out, input, scale)
        return out
    keep = _keep_mask(input, shape, p)._data
    if low and not alpha:  # float16/bfloat16: the product in float32, rounded once (NumPy's
        # bfloat16 multiplies are ~2x slower than widen, multiply, narrow)
        f32 = np.float32
        scale = keep.astype(f32) * f32(1.0 / (1.0 - p))
        out = _make((d.astype(f32) * scale).astype(d.dtype), input._device)
        if GRAD.enabled and input.requires_grad:
            _record_dropout(out, input, scale.astype(d.dtype))
        return out
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        scale = keep * a
        r = d * scale + ((keep - 1) * (_ALPHA * a) + _ALPHA * a * p).astype(d.dtype)
        node = AlphaDropoutBackward0
    else:
        scale = keep * (1.0 / (1.0 - p))
        r = d * scale
        node = None
    out = _make(r.astype(d.dtype, copy=False), input._device)
    if GRAD.enabled and input.requires_grad:
        if node is None:
            _record_dropout(out, input, scale.astype(d.dtype, copy=False))
        else:
            record(node, out, (input,), (),
                   _make(scale.astype(d.dtype, copy=False), input._device))
    return out


def _dropout_entry(input, p, training, inplace, feature, alpha, aten=False):
    _check_p(p, aten)
    if training.__class__ is not bool:
        name = ("feature_" if feature else "") + ("alpha_" if alpha else "") + "dropout" + \
            ("_" if inplace else "")
        kind = type(training)
        what = kind.__name__ if kind.__module__ == "builtins" or isinstance(training, Tensor) \
            else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"{name}(): argument 'train' (position 3) must be bool, not {what}")
    if not training or p == 0:
        return input
    if inplace:
        return _dropout_inplace(input, p, feature, alpha)
    return _dropout_impl(input, p, feature, alpha)


_dropout_inplace = make_inplace(_dropout_impl, "dropout_")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    return _dropout_entry(input, p, training, inplace, False, False)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps the mean and variance of selu activations."""
    return _dropout_entry(input, p, training, inplace, False, True)


def feature_dropout(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout on ``(N, C, *)`` inputs (whole ``input[n, c]`` slices)."""
    return _dropout_entry(input, p, training, inplace, True, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Channel-wise alpha dropout on ``(N, C, *)`` inputs."""
    return _dropout_entry(input, p, training, inplace, True, True)


def _register_aten_dropouts():
    """``torch.dropout`` and friends, ``(input, p, train)`` (the functions above keep
    ``torch.nn.functional``'s ``training``/``inplace`` for ``ember.nn.functional``), and
    ``torch.dropout_`` and friends, the same writing into ``input``."""
    def make(feature, alpha):
        def fn(input, p=0.5, train=not alpha):  # (``train`` is required in PyTorch; Ember's
            return _dropout_entry(input, p, train, False, feature, alpha, True)  # MHA omits it)

        def fn_(input, p, train):
            return _dropout_entry(input, p, train, True, feature, alpha, True)

        return fn, fn_

    for name, feature, alpha in (("dropout", False, False), ("alpha_dropout", False, True),
                                 ("feature_dropout", True, False),
                                 ("feature_alpha_dropout", True, True)):
        fn, fn_ = make(feature, alpha)
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"``torch.{name}(input, p, train)``: ``nn.functional.{name}``."
        fn_.__name__ = fn_.__qualname__ = name + "_"
        fn_.__doc__ = f"In-place ``{name}``."
        register(name, method=False, random=True)(fn)
        register(name + "_", method=False, random=True)(fn_)


_register_aten_dropouts()


@register("native_dropout", method=False, random=True)
def native_dropout(input, p, train):
    """``torch.native_dropout``: ``(output, mask)``, the bool keep mask with the output (``train``
    None: training)."""
    d = input._data
    xp = xp_of(input)
    if d.size == 0:
        return input, _make(xp.empty(d.shape, dtype=d.dtype), input._device)
    if train is None or train:
        q = 1.0 - p
        if not 0.0 <= q <= 1.0:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={q}")
        if d.dtype not in _dtype.FLOATING_NP:
            raise NotImplementedError(f'"bernoulli_tensor_cpu_self_" not implemented for '
                                      f"'{scalar_type_name(d.dtype)}'")
        keep = _keep_mask(input, d.shape, p) if q > 0 else \
            _make(xp.zeros(d.shape, dtype=d.dtype), input._device)
        scale = keep * (1.0 / q if q > 0 else 0.0)
        out = _make((d * scale._data).astype(d.dtype, copy=False), input._device)
        if GRAD.enabled and input.requires_grad:
            record(NativeDropoutBackward0, out, (input,), (), scale)
        return out, _make(keep._data != 0, input._device)
    return input.clone(), _make(xp.ones(d.shape, dtype=bool), input._device)


def _channel_dropout(name, spatial, input, p, training, inplace):
    _check_p(p)
    nd = input._data.ndim
    if nd not in (spatial + 1, spatial + 2):
        lo, hi = spatial + 1, spatial + 2
        if spatial == 1:
            raise RuntimeError(
                f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
                "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or "
                "3D inputs).")
        warnings.warn(
            f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in "
            "an error in a future release. To retain the behavior and silence this warning, "
            f"please use dropout instead. Note that {name} exists to provide channel-wise "
            f"dropout on inputs with {spatial} spatial dimensions, a channel dimension, and an "
            f"optional batch dimension (i.e. {lo}D or {hi}D inputs).", stacklevel=user_stacklevel())
    if spatial == 2 and nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=user_stacklevel())
    unbatched = spatial != 2 and nd == spatial + 1
    if not unbatched:
        return feature_dropout(input, p, training, inplace)
    if inplace:  # through a view: the write lands in ``input``
        feature_dropout(input.unsqueeze(0), p, training, True)
        return input
    return feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs with probability ``p``."""
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, H, W)`` inputs with probability ``p``."""
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)


# -- embedding, one_hot ----------------------------------------------------------------------

def _embedding_bw(node, g):
    """The weight's gradient: the rows of ``g`` summed into the rows of the table they were
    looked up from (``padding_idx``'s row none; ``scale_grad_by_freq`` divides by the count
    of each index in the batch). Without ``create_graph`` a segment sum on arrays; with it
    ``index_add``, differentiable again."""
    if len(node.ctx) == 4:  # sparse=True
        return (_embedding_sparse_grad(node, g),)
    if not GRAD.enabled and g.__class__ is Tensor:
        return (_make(_embedding_grad_array(node, g._data), g._device),)
    indices = node.saved[0]  # (with create_graph, or batched by vmap: Tensor ops)
    num, padding_idx, scale_by_freq = node.ctx
    from .._factory import zeros

    dim = g.shape[-1]
    flat = indices.reshape(-1)
    src = g.reshape(-1, dim)
    idx = flat._data
    coef = None
    if padding_idx >= 0:
        coef = (idx != padding_idx).astype(g._data.dtype)
    if scale_by_freq:
        counts = xp_of(flat).bincount(idx, minlength=num)[idx].astype(g._data.dtype)
        coef = (1.0 / counts) if coef is None else coef / counts
    if coef is not None:
        src = src * _make(coef.reshape(-1, 1), g._device)
    gw = zeros(num, dim, dtype=g.dtype, device=g._device).index_add(0, flat, src)
    return (gw,)


def _embedding_sparse_grad(node, g):
    """``sparse=True``: the weight's gradient as an uncoalesced sparse COO tensor, PyTorch's
    ``embedding_sparse_backward``: one row of ``g`` per looked-up index (``padding_idx``'s
    entries dropped), repeated indices left for ``coalesce`` to sum."""
    from .._sparse_tensor import make_sparse

    num, padding_idx, _, weight_shape = node.ctx
    dim = g._data.shape[-1]
    idx = node.saved[0]._data.reshape(-1)
    values = g.reshape(-1, dim)
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx = idx[keep]
        values = values[_make(keep, g._device)]
    else:
        values = values.clone()  # the gradient owns its values (g may be reused)
    return make_sparse(idx.reshape(1, -1).astype("int64", copy=False), values, weight_shape,
                       coalesced=idx.size <= 1)  # (one index or none: PyTorch marks it so)


def _embedding_grad_array(node, gd):
    """The weight's gradient as an array: the distinct indices found by ``unique``, then one
    ``bincount`` over (distinct row, column) pairs sums the rows of ``gd`` (in float64: one
    rounding) -- NumPy's ``add.at`` runs a slow loop per element."""
    num, padding_idx, scale_by_freq = node.ctx
    xp = xp_of(gd)
    dim = gd.shape[-1]
    idx = node.saved[0]._data.reshape(-1)
    if idx.size and dim and not scale_by_freq and num * dim <= max(4 * gd.size, 1 << 16):
        # few rows: every row's float64 sum in one pass, the bincount's additions in its order
        acc = _native.embedding_grad(idx.astype(np.int64, copy=False),
                                     gd.reshape(-1, dim), num)
        if acc is not None:
            gw = acc.astype(gd.dtype)
            if padding_idx >= 0:
                gw[padding_idx] = 0
            return gw
    gw = xp.zeros((num, dim), gd.dtype)
    if not idx.size or not dim:
        return gw
    rows, inverse, counts = xp.unique(idx, return_inverse=True, return_counts=True)
    pairs = (inverse.reshape(-1, 1) * dim + xp.arange(dim)).reshape(-1)
    sums = xp.bincount(pairs, weights=gd.reshape(-1), minlength=rows.size * dim)
    sums = sums.reshape(rows.size, dim)
    if scale_by_freq:
        sums /= counts.reshape(-1, 1)
    gw[rows] = sums
    if padding_idx >= 0:
        gw[padding_idx] = 0
    return gw


EmbeddingBackward0 = make_node_class("EmbeddingBackward0", _embedding_bw)


_LEGACY_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "uint8": "Byte",
                 "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long"}


def _index_type_error(t: Tensor, arg: str, fn: str):
    """PyTorch's ``checkScalarTypes`` error: a legacy type's name (``torch.ShortTensor``),
    else the dispatch key's type (``CPUBoolType``)."""
    dt = t._data.dtype
    cpu = t._device.type == "cpu"
    legacy = _LEGACY_TYPES.get(dt.name)
    got = (f"ember.{'' if cpu else 'cuda.'}{legacy}Tensor" if legacy else
           f"{'CPU' if cpu else 'CUDA'}{scalar_type_name(dt)}Type")
    raise RuntimeError(f"Expected tensor for argument {arg} to have one of the following scalar "
                       f"types: Long, Int; but got {got} instead (while checking arguments for "
                       f"{fn})")


def _embedding_renorm(weight: Tensor, indices: Tensor, max_norm, norm_type):
    """Rescale in place the rows of ``weight`` at ``indices`` whose norm exceeds
    ``max_norm`` (PyTorch's ``embedding_renorm_``, its checks in its order)."""
    w = weight._data
    if w.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {w.ndim}-dimensional tensor "
                           "for argument #1 'self' (while checking arguments for "
                           "embedding_renorm_)")
    idx = indices._data
    if idx.dtype != np.int64 and idx.dtype != np.int32:
        _index_type_error(indices, "#2 'indices'", "embedding_renorm_")
    if not idx.size:
        return
    xp = xp_of(weight)
    rows = xp.unique(idx.reshape(-1))
    num = w.shape[0]
    bad = (rows < -num) | (rows >= num)
    if bad.any():
        raise IndexError(f"select(): index {int(rows[bad][0])} out of range for tensor of size "
                         f"[{shape_str(w.shape)}] at dimension 0")
    if w.dtype not in _dtype.FLOATING_NP and w.dtype.kind != "c":
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {scalar_type_name(w.dtype)} instead.")
    sub = w[rows]
    a = xp.abs(sub)
    if norm_type == math.inf:
        norms = a.max(-1)
    elif norm_type == -math.inf:
        norms = a.min(-1)
    elif norm_type == 0:
        norms = (a != 0).sum(-1).astype(a.dtype)
    else:
        norms = (a ** norm_type).sum(-1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] = sub * scale[:, None]
    weight._bump_version()


def check_padding_idx(padding_idx, num_embeddings: int):
    """``padding_idx`` as a non-negative row of a table of ``num_embeddings`` rows (None stays
    None), with PyTorch's assertion (``F.embedding``'s and ``nn.Embedding``'s check)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
            padding_idx = num_embeddings + padding_idx
    return padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at the integer ``input``; ``padding_idx``'s row gets no gradient,
    ``max_norm`` renormalises the looked-up rows of ``weight`` in place."""
    dt = input._data.dtype
    if dt != np.int64 and dt != np.int32:
        if max_norm is not None:  # F.embedding renormalises first
            _embedding_renorm(weight, input, max_norm, norm_type)
        _index_type_error(input, "#1 'indices'", "embedding")
    if weight._data.ndim != 2:
        if max_norm is not None:
            _embedding_renorm(weight, input, max_norm, norm_type)
        raise RuntimeError("'weight' must be 2-D")
    if sparse and scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    num = weight._data.shape[0]
    padding_idx = check_padding_idx(padding_idx, num)
    if padding_idx is None:
        padding_idx = -1
    dev = check_same_device(input, weight)
    idx = input._data
    if max_norm is not None:  # before the lookup's checks, as F.embedding
        with no_grad():
            _embedding_renorm(weight, input, max_norm, norm_type)
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    out = _make(weight._data[idx], dev)
    if GRAD.enabled and weight.requires_grad:
        # the weight is the node's only input, as PyTorch's (the indices have no gradient)
        ctx = (num, padding_idx, scale_grad_by_freq)
        if sparse:  # the gradient is a sparse tensor of the weight's shape
            ctx = (*ctx, tuple(weight._data.shape))
        record(EmbeddingBackward0, out, (weight,), (input,), ctx)
    return out


@register("embedding", method=False)
def _embedding_aten(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding``: ``F.embedding`` with the weight first (``padding_idx=-1``: none)."""
    return embedding(indices, weight, None if padding_idx == -1 else padding_idx, None, 2.0,
                     scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings: the rows of a 2-D ``input``, or the runs
    of a 1-D ``input`` starting at ``offsets``. ``padding_idx`` entries are left out.
    (``torch.nn.functional.embedding_bag``: checks its arguments, then calls
    ``ember.embedding_bag`` and returns its first output.)"""
    if weight._data.dtype == np.int64 and input._data.dtype in _dtype.FLOATING_NP:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=user_stacklevel())
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight._data.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight._data.ndim}")
    if input._data.ndim == 2:
        if offsets is not None:
            shown = "<class 'ember.Tensor'>" if isinstance(offsets, Tensor) else type(offsets)
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {shown}")
        bags, length = input._data.shape
        xp = xp_of(input)
        starts = xp.arange(bags, dtype=input._data.dtype) * length
        offsets = _make(starts, input._device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input._data.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets._data.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input._data.ndim}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        with no_grad():
            _embedding_renorm(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    return _embedding_bag_aten(weight, input, offsets, scale_grad_by_freq, _BAG_MODES[mode],
                               sparse, per_sample_weights, include_last_offset, padding_idx)[0]


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}
_INDEX_TYPES = ("int32", "int64")


def _check_scalar_types(label, t, allowed, names):
    if t._data.dtype.name not in allowed:
        raise RuntimeError(f"Expected tensor for argument #1 '{label}' to have one of the "
                           f"following scalar types: {names}; but got ember.{t.type_name()} "
                           "instead (while checking arguments for embedding_bag)")


def _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights, padding_idx):
    """PyTorch's argument checks of ``torch.embedding_bag``; returns the wrapped
    ``padding_idx`` (-1 for none)."""
    if weight._data.ndim != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                           f"{weight._data.ndim}")
    _check_scalar_types("indices", indices, _INDEX_TYPES, "Long, Int")
    _check_scalar_types("offsets", offsets, _INDEX_TYPES, "Long, Int")
    _check_scalar_types("weight", weight, ("float16", "bfloat16", "float32", "float64"),
                        "Half, BFloat16, Float, Double")
    check_same_device(weight, indices, offsets, per_sample_weights)
    if indices._data.ndim != 1:
        raise RuntimeError(f"embedding_bag: indices has to be a 1D Tensor, but got Tensor of "
                           f"dimension {indices._data.ndim}")
    if offsets._data.ndim != 1:
        raise RuntimeError(f"offsets has to be a 1D Tensor, but got Tensor of dimension "
                           f"{offsets._data.ndim}")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None:
        if mode != 0:
            raise RuntimeError("embedding_bag: per_sample_weights only supported with "
                               "mode='sum'")
        if per_sample_weights._data.dtype != weight._data.dtype:
            raise RuntimeError("Expected tensor for argument #1 'weight' to have the same type "
                               "as tensor for argument #1 'per_sample_weights'; but type "
                               f"ember.{weight.type_name()} does not equal "
                               f"ember.{per_sample_weights.type_name()} (while checking "
                               "arguments for embedding_bag)")
        if per_sample_weights._data.size != indices._data.size:
            raise RuntimeError("Expected per_sample_weights.value().numel() == indices.numel() "
                               "to be true, but got false.  (Could this error message be "
                               "improved?  If so, please report an enhancement request to "
                               "PyTorch.)")
    num = weight._data.shape[0]
    if padding_idx is None:
        return -1
    if not -num <= padding_idx < num:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} "
                           f"through {num - 1}, but got {padding_idx}")
    return padding_idx % num


def _check_bag_bounds(idx, offsets, num: int, fast_sum: bool, include_last: bool) -> None:
    off = offsets._data
    n = idx.shape[0]
    if off.shape[0]:
        first, last = int(off[0].item()), int(off[-1].item())
        if first != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the "
                               "mini-batch has to start from position 0. However, got "
                               f"{first}\n[ ember.{offsets.type_name()}{{}} ]")
        if last > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but "
                               f"got offsets[-1] of {last}")
    end = int(off[-1].item()) if include_last and off.shape[0] else n  # past it: in no bag
    if end:
        part = idx[:end]
        bad = (part < 0) | (part >= num)
        if bool(bad.any().item()):
            pos = int(bad.argmax().item())  # the first bad position
            value = int(idx[pos].item())
            if not fast_sum:
                raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings "
                                   f"but found idx to be {value}")
            # PyTorch's fast sum (FBGEMM) reports an index of its last bag differently when
            # there are several bags (one bag: the plain message)
            bags = off.shape[0] - (1 if include_last else 0)
            if bags >= 2 and pos >= int(off[-2 if include_last else -1].item()):
                raise RuntimeError("Expected i < index_size to be true, but got false.  (Could "
                                   "this error message be improved?  If so, please report an "
                                   "enhancement request to PyTorch.)")
            raise RuntimeError(f"Index {pos} of input takes value {value} which is not in the "
                               f"valid range [0, {num})")


class _BagLayout:
    """Where each index goes: its bag (``bag``) and its place in the bag (``slot``).

    When the bags are near-uniform (at most 8 times the indices' count of places in a
    ``(bags, width)`` grid, ``width`` the longest bag), a bag reduction is one reduction over
    the grid's middle axis instead of an unbuffered ``ufunc.at``; a 2-D input's offsets
    (``0, L, 2L, ...``) make the grid a reshape.
    """

    def __init__(self, off, n: int, bags: int, xp):
        self.bags, self.n = bags, n
        self.uniform = False
        self.grid = False
        if not bags:
            self.bag = xp.zeros(n, dtype=np.int64)
            return
        starts = off[:bags].astype(np.int64)
        if n and not n % bags:
            width = n // bags
            if bool((starts == xp.arange(0, n, width)).all().item()):
                self.uniform = self.grid = True
                self.width, self.starts = width, starts
                self.bag = xp.arange(n) // width
                return
        self.bag = xp.searchsorted(starts, xp.arange(n), side="right") - 1
        if n:
            self.starts = starts
            self.slot = xp.arange(n) - starts[self.bag]
            self.width = int(self.slot.max().item()) + 1
            self.grid = bags * self.width <= 8 * n + 64

    def to_grid(self, rows, fill, xp):
        """``rows`` (n, D) laid out as ``(bags, width, D)``, empty places set to ``fill``."""
        if self.uniform:
            return rows.reshape(self.bags, self.width, rows.shape[1])
        grid = xp.full((self.bags, self.width, rows.shape[1]), fill, dtype=rows.dtype)
        grid[self.bag, self.slot] = rows
        return grid


@register("embedding_bag", method=False)
def _embedding_bag_aten(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                        sparse=False, per_sample_weights=None, include_last_offset=False,
                        padding_idx=None):
    """``torch.embedding_bag``: the bags of rows of ``weight`` at the 1-D ``indices``, each
    starting at an element of ``offsets``, reduced by ``mode`` (0 sum, 1 mean, 2 max).
    Returns ``(output, offset2bag, bag_size, max_indices)`` as PyTorch's CPU kernel does:
    ``offset2bag`` is left empty by its fast sum, ``bag_size`` and ``max_indices`` are zeros
    for sum, ``max_indices`` is ``bag_size`` for mean and the rows picked for max. With
    ``sparse`` the weight's gradient is a sparse COO tensor: one row per looked-up index
    (``padding_idx``'s left out), uncoalesced, as PyTorch's ``_embedding_bag_sparse_backward``."""
    if indices._data.dtype != offsets._data.dtype:  # PyTorch promotes the two to one type
        common = _dtype.FROM_NP[_dtype.binary_result_np(indices._data, offsets._data)]
        indices, offsets = indices.to(common), offsets.to(common)
    pad = _embedding_bag_checks(weight, indices, offsets, mode, per_sample_weights, padding_idx)
    xp = xp_of(weight)
    w, idx, off = weight._data, indices._data, offsets._data
    num, dim = w.shape
    n = idx.shape[0]
    _check_bag_bounds(idx, offsets, num, mode != 2 and w.dtype != np.float64 and pad < 0,
                      include_last_offset and mode != 2)
    bags = max(off.shape[0] - 1 if include_last_offset else off.shape[0], 0)
    itype = np.result_type(idx.dtype, off.dtype)
    layout = _BagLayout(off, n, bags, xp)
    bag = layout.bag
    keep = idx != pad if pad >= 0 else None
    inside = None
    if include_last_offset and mode != 2 and bags and int(off[bags].item()) < n:
        # PyTorch leaves the indices past the last offset out of the sums (a mean still
        # divides by the last bag's length up to the end, and max takes them)
        inside = xp.arange(n) < int(off[bags].item())
    if not bags:  # no bags (empty offsets): every index is left out
        keep = xp.zeros(n, dtype=bool)
    psw = per_sample_weights._data.reshape(-1) if per_sample_weights is not None else None
    if not bags:
        counts = xp.zeros(0, dtype=np.int64)
    elif keep is None:
        counts = xp.full(bags, layout.width, dtype=np.int64) if layout.uniform else \
            xp.bincount(bag, minlength=bags)[:bags]
    else:
        counts = xp.bincount(bag[keep], minlength=bags)[:bags]
    rows = w[idx] if inside is None else w[xp.where(inside, idx, 0)]
    if mode == 2:
        out, max_idx = _bag_max(rows, idx, layout, keep, counts, w, xp)
    else:
        rows = _dtype.widen(rows)  # float16/bfloat16 summed in float32, rounded once
        acc = rows.dtype
        if psw is not None:
            rows = rows * _dtype.widen(psw)[:, None]
        if keep is not None:
            rows = xp.where(keep[:, None], rows, 0).astype(acc, copy=False)
        if inside is not None:
            rows = xp.where(inside[:, None], rows, 0).astype(acc, copy=False)
        if layout.grid:
            out = layout.to_grid(rows, 0, xp).sum(1)
        else:
            out = xp.zeros((bags, dim), dtype=acc)
            if bags:
                xp.add.at(out, bag, rows)
        if mode == 1:
            out = out / xp.maximum(counts, 1)[:, None]
        out = out.astype(w.dtype, copy=False)
    dev = weight._device
    fast_sum = mode == 0 and w.dtype != np.float64 and pad < 0
    offset2bag = xp.zeros(0, dtype=itype) if fast_sum else bag.astype(itype)
    if mode == 0:  # PyTorch sizes it for the backward only when one is coming
        training = GRAD.enabled and (weight.requires_grad or (
            per_sample_weights is not None and per_sample_weights.requires_grad))
        bag_size = xp.zeros(bags if training else off.shape[0], dtype=itype)
        max_indices = bag_size.copy()
    else:
        bag_size = counts.astype(itype)
        max_indices = bag_size.copy() if mode == 1 else max_idx.astype(itype)
    result = _make(out, dev)
    psw_t = per_sample_weights
    if GRAD.enabled and (weight.requires_grad or (psw_t is not None and psw_t.requires_grad)):
        kept = xp.nonzero(keep)[0] if keep is not None else None
        ctx = (mode, num, idx, bag, kept, counts, scale_grad_by_freq,
               max_idx if mode == 2 else None, bool(sparse) and mode != 2)
        saved = (weight, psw_t) if psw_t is not None else ()
        record(EmbeddingBagBackward0, result, (weight, psw_t), saved, ctx)
    return (result, _make(offset2bag, dev), _make(bag_size, dev), _make(max_indices, dev))


def _bag_max(rows, idx, layout, keep, counts, w, xp):
    """Column-wise maxima of the bags and the rows they come from (the first on ties);
    empty bags give zeros and index 0."""
    dim = w.shape[1]
    bags, n = layout.bags, layout.n
    if not bags or not n:
        return xp.zeros((bags, dim), dtype=w.dtype), xp.zeros((bags, dim), dtype=np.int64)
    lowest = -np.inf
    if keep is not None:
        rows = xp.where(keep[:, None], rows, lowest).astype(w.dtype, copy=False)
    if layout.grid:
        first = layout.to_grid(rows, lowest, xp).argmax(1) + layout.starts[:, None]
    else:
        best = xp.full((bags, dim), lowest, dtype=w.dtype)
        ufunc_at(xp, "maximum", best, layout.bag, rows)  # exact on CuPy too
        hit = rows == best[layout.bag]
        if keep is not None:
            hit &= keep[:, None]
        # the first hit of each bag and column: where the bag's running count of hits is 1
        seen = hit.cumsum(0)
        before = xp.concatenate([xp.zeros((1, dim), dtype=seen.dtype), seen])[layout.starts]
        r, c = xp.nonzero(hit & (seen - before[layout.bag] == 1))
        first = xp.zeros((bags, dim), dtype=np.int64)
        first[layout.bag[r], c] = r
    first = xp.minimum(first, n - 1)
    max_idx = xp.where((counts > 0)[:, None], idx[first], 0)
    out = xp.where((counts > 0)[:, None], w[max_idx, xp.arange(dim)], 0)
    return out.astype(w.dtype, copy=False), max_idx


def _embedding_bag_bw(node, g):
    from .._factory import zeros

    mode, num, idx, bag, kept, counts, by_freq, max_idx, sparse = node.ctx
    dev = g._device
    xp = xp_of(g)
    dim = g._data.shape[1]
    dtype = g._data.dtype

    def const(a):
        return _make(a, dev)

    gw = gpsw = None
    if mode == 2:
        if node.needs_grad(0):
            live = g * const((counts > 0)[:, None].astype(dtype))
            gw = zeros(num, dim, dtype=g.dtype, device=dev).scatter_add(0, const(max_idx), live)
        return gw, None
    psw_shape = node.saved[1]._data.shape if node.saved else None
    psw = node.saved[1].reshape(-1) if node.saved else None
    if kept is not None:
        idx, bag = idx[kept], bag[kept]
    idx_t, bag_t = const(idx), const(bag)
    rows_g = g.index_select(0, bag_t)
    if node.needs_grad(0):
        if sparse and by_freq:  # (PyTorch's check, in its sparse backward)
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        scale = None
        if mode == 1:
            scale = 1.0 / xp.maximum(counts, 1)[bag]
        if by_freq:
            freq = 1.0 / xp.bincount(idx, minlength=num)[idx]
            scale = freq if scale is None else scale * freq
        contrib = rows_g
        if psw is not None:
            contrib = contrib * (psw if kept is None else psw.index_select(0, const(kept)))\
                .unsqueeze(1)
        if scale is not None:
            contrib = contrib * const(scale.astype(dtype)[:, None])
        if sparse:
            from .._sparse_tensor import make_sparse

            gw = make_sparse(idx.reshape(1, -1).astype(np.int64, copy=False), contrib,
                             (num, dim), coalesced=idx.size <= 1)
        else:
            gw = zeros(num, dim, dtype=g.dtype, device=dev).index_add(0, idx_t, contrib)
    if psw is not None and node.needs_grad(1):
        weight = node.saved[0]
        per_row = (rows_g * weight.index_select(0, idx_t)).sum(1)
        if kept is None:
            gpsw = per_row
        else:
            gpsw = zeros(psw._data.shape[0], dtype=g.dtype, device=dev).index_add(
                0, const(kept), per_row)
        gpsw = gpsw.reshape(psw_shape)
    return gw, gpsw


EmbeddingBagBackward0 = make_node_class("EmbeddingBagBackward0", _embedding_bag_bw)




@register("bilinear", method=False)
def bilinear(input1, input2, weight, bias=None):
    """``y = x1^T A x2 + b`` over the last dims: ``input1`` (..., in1), ``input2`` (...,
    in2), ``weight`` (out, in1, in2), ``bias`` (out,)."""
    tensors = (("input1", input1), ("input2", input2), ("weight", weight)) + \
        ((("bias", bias),) if bias is not None else ())
    dtypes = [t._data.dtype for _, t in tensors]
    if any(dt != dtypes[0] for dt in dtypes):
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{label}: {_dtype.options_type_name(t._data.dtype)}"
            for label, t in tensors))
    s1, s2, sw = input1._data.shape, input2._data.shape, weight._data.shape
    if len(s1) != len(s2):
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {len(s1)} and "
                           f"{len(s2)}")
    for i in range(len(s1) - 1):
        if s1[i] != s2[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {s1[i]} and {s2[i]}")
    if s1[-1] != sw[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {s1[-1]} "
                           f"but expected {sw[1]}")
    if s2[-1] != sw[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {s2[-1]} "
                           f"but expected {sw[2]}")
    if bias is not None:
        if not bias._data.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if bias._data.shape[0] != sw[0]:
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                               f"{bias._data.shape[0]} but expected {sw[0]}")
    from .linalg import einsum

    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out


def type_name(t: Tensor) -> str:
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
            "bfloat16": "BFloat16Tensor", "bool": "BoolTensor",
            "uint8": "ByteTensor"}.get(t._data.dtype.name, "Tensor")


@register("one_hot", function=False, method=False, differentiable=False)
def one_hot(input, num_classes=-1):
    """``int64`` one-hot encoding along a new last dim (``num_classes=-1`` infers it)."""
    num_classes = _int_arg(num_classes, "one_hot", "num_classes", None)
    d = input._data
    if d.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if d.size == 0:  # PyTorch's checks, in its order
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        refuse_meta(input, "one_hot")
        if d.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(d.max()) + 1
        elif d.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    xp = xp_of(input)
    r = d[..., None] == xp.arange(num_classes)
    return _make(r.astype(np.int64, order="C"), input._device)  # (dense, as PyTorch's)


def _int_arg(value, fname: str, arg: str, pos) -> int:
    """``value`` as the ``int`` argument ``arg`` of ``fname``, refused (a float, a bool) with
    the TypeError of PyTorch's argument parser."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, Tensor) and value.ndim == 0 and value._data.dtype.kind in "iu":
        return int(value.item())
    where = f"argument '{arg}'" + ("" if pos is None else f" (position {pos})")
    raise TypeError(f"{fname}(): {where} must be int, not {type(value).__name__}")


# -- per-axis resampling (pad's non-constant modes, interpolate) -------------------------------

def _resample_bw(node, g):
    # ctx: one axis's ``(axis, taps, in_size)``, or ``("plan", ((axis, taps, in_size), ...))``
    # for a resampling of several axes in one node (interpolate), the first applied first
    plan = node.ctx[1] if node.ctx[0] == "plan" else (node.ctx,)

    def transpose(t, shift=0):
        for axis, taps, in_size in reversed(plan):
            t = _resample_t(t, axis + shift, taps, in_size)
        return t

    if g.__class__ is not Tensor:  # batched by vmap: its physical tensor, the axes shifted
        from .._functorch._batched import on_physical

        return (on_physical(g, lambda p, k: transpose(p, k)),)
    return (transpose(g),)


ResampleBackward = make_node_class("ResampleBackward0", _resample_bw)


def _tap_weight(w, axis, ndim, like):
    return _make(w.reshape((-1,) + (1,) * (ndim - axis - 1)).astype(like._data.dtype),
                 like._device)


def _resample_t(g, axis, taps, in_size):
    """The transpose of ``_resample``: itself a gather, with the taps turned around (each
    input pixel's list of the outputs that read it): no scatter-add, and differentiable the
    same way (its backward transposes back)."""
    meta = g._device.type == "meta"  # (no index data there: only the shape is wanted)
    inverse = () if meta else _transpose_taps(taps, g._data.shape[axis], in_size, xp_of(g))
    if not inverse:  # no output reads any input (an empty output), or a meta tensor
        from .._factory import zeros

        shape = list(g._data.shape)
        shape[axis] = in_size
        return zeros(*shape, dtype=g.dtype, device=g._device)
    return _resample(g, axis, inverse)


def _transpose_taps(taps, out_size, in_size, xp):
    """Taps of the transposed resampling: ``(output index, weight, mask)`` per rank, for each
    input pixel the outputs that read it, in tap order (``mask`` False past a pixel's
    readers; ``None`` where every pixel has one at that rank)."""
    outs, srcs, ws = [], [], []
    weighted = any(w is not None for _, w, *_ in taps)
    ar = xp.arange(out_size)
    for idx, w, *mask in taps:
        keep = mask[0] if mask and mask[0] is not None else None
        o, i = (ar, idx) if keep is None else (ar[keep], idx[keep])
        outs.append(o)
        srcs.append(i)
        if weighted:
            wk = xp.ones(out_size, dtype=np.float64) if w is None else w
            ws.append(wk if keep is None else wk[keep])
    src = xp.concatenate(srcs).astype(np.int64)
    if not src.size:
        return ()
    order = xp.argsort(src, kind="stable")
    src, out = src[order], xp.concatenate(outs)[order]
    counts = xp.bincount(src, minlength=in_size)
    ranks = int(counts.max())
    rank = xp.arange(src.size) - (xp.cumsum(counts) - counts)[src]
    inv_idx = xp.zeros((ranks, in_size), dtype=np.int64)
    inv_idx[rank, src] = out
    present = xp.zeros((ranks, in_size), dtype=bool)
    present[rank, src] = True
    inv_w = None
    if weighted:
        w_all = xp.concatenate(ws)[order]
        inv_w = xp.zeros((ranks, in_size), dtype=w_all.dtype)
        inv_w[rank, src] = w_all
    full = present.all(axis=1).tolist()
    return tuple((inv_idx[r], None if inv_w is None else inv_w[r],
                  None if full[r] else present[r]) for r in range(ranks))


def _resample(x: Tensor, axis: int, taps, node_cls=ResampleBackward, order=None) -> Tensor:
    """``sum_k take(x, idx_k, axis) * w_k`` (``w_k`` None means 1): one node per axis, laid
    out in ``order`` (a ``_memory_format`` order; ``None``: C order)."""
    d = _dtype.widen(x._data)  # float16/bfloat16 in float32, rounded once per axis
    r = None
    xp = xp_of(x)
    for idx, w, *mask in taps:
        v = d.take(idx, axis)
        if w is not None:
            v = v * w.reshape((-1,) + (1,) * (d.ndim - axis - 1)).astype(d.dtype)
        if mask and mask[0] is not None:  # outputs without this tap
            v = xp.where(mask[0].reshape((-1,) + (1,) * (d.ndim - axis - 1)), v, 0)
        r = v if r is None else r + v
    r = _dtype.narrow(r, x._data.dtype)
    out = _make(r if order is None else _mf.copy_as(r, order), x._device)
    if GRAD.enabled and x.requires_grad:
        record(node_cls, out, (x,), (), (axis, taps, d.shape[axis]))
    return out


def _node_for(name, cache={}):  # noqa: B006 - a per-name cache of node classes
    cls = cache.get(name)
    if cls is None:
        cls = cache[name] = make_node_class(name, _resample_bw)
    return cls


# -- pad -------------------------------------------------------------------------------------

def _constant_pad_bw(node, g):
    back = tuple(-p for p in node.ctx)
    if g.__class__ is not Tensor:  # batched by vmap: the pad is over trailing dims
        from .._functorch._batched import on_physical

        return (on_physical(g, lambda p, k: _constant_pad(p, back, 0)),)
    return (_constant_pad(g, back, 0),)


ConstantPadNdBackward0 = make_node_class("ConstantPadNdBackward0", _constant_pad_bw)


def _constant_pad(input, pad, value):
    d = input._data
    nd = d.ndim
    k = len(pad) // 2
    out_shape = list(d.shape)
    src, dst = [slice(None)] * nd, [slice(None)] * nd
    for i in range(k):
        ax = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = d.shape[ax]
        # PyTorch crops with ``narrow`` (the low side first), which refuses to crop past the size
        if (lo < 0 and n + lo < 0) or (hi < 0 and n + min(lo, 0) + hi < 0):
            raise RuntimeError("narrow(): length must be non-negative.")
        out_shape[ax] = n + lo + hi
        src[ax] = slice(max(-lo, 0), n - max(-hi, 0))
        dst[ax] = slice(max(lo, 0), max(lo, 0) + n - max(-lo, 0) - max(-hi, 0))
    xp = xp_of(input)
    order = _mf.suggest(d)  # PyTorch pads into the input's suggested layout (channels-last)
    if order is None:
        r = xp.full(out_shape, value, dtype=d.dtype)
    else:
        r = xp.full([out_shape[i] for i in order], value,
                    dtype=d.dtype).transpose(_mf.inverse(order))
    r[tuple(dst)] = d[tuple(src)]
    out = _make(r, input._device)
    if GRAD.enabled and input.requires_grad:
        record(ConstantPadNdBackward0, out, (input,), (), tuple(pad))
    return out


def _pad_index(mode, n, lo, hi):
    o = np.arange(-lo, n + hi)
    if mode == "reflect":
        o = np.abs(o)
        o = np.where(o >= n, 2 * (n - 1) - o, o)
    elif mode == "replicate":
        o = np.clip(o, 0, n - 1)
    else:  # circular: crop first, then wrap around within what is left
        start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        o = start + np.arange(-max(lo, 0), m + max(hi, 0)) % m if m > 0 else o.clip(0, n - 1)
    return o


_PAD_NAMES = {"reflect": "ReflectionPad", "replicate": "ReplicationPad", "circular": "Pad"}
_PAD_KERNELS = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def _check_circular_pad(shape, pad, k):
    """PyTorch's ``_pad_circular`` checks (outermost padded dim first). Past them, a pad
    wider than what the crop leaves has PyTorch read memory it never wrote or fail inside a
    copy: here it wraps around the kept part again (what PyTorch's copy happens to give for
    a right pad), and a non-empty result from nothing kept raises."""
    nd = len(shape)
    empty = 0 in shape[:nd - k]
    for ax in range(nd - k, nd):
        i = nd - 1 - ax
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[ax]
        if lo > n or hi > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        empty = empty or n + lo + hi == 0
    if empty:  # PyTorch's result is well-defined: it has no values
        return
    for ax in range(nd - k, nd):
        i = nd - 1 - ax
        lo, hi, n = pad[2 * i], pad[2 * i + 1], shape[ax]
        if n - max(-lo, 0) - max(-hi, 0) <= 0:
            raise RuntimeError(f"Negative padding ({lo}, {hi}) leaves nothing of the size {n} "
                               f"of dimension {ax} to wrap around")


def _check_resample_pad(mode, shape, pad, k):
    """PyTorch's ``reflection_pad{k}d`` / ``replication_pad{k}d`` shape checks, in order."""
    nd = len(shape)
    if 0 in shape[nd - k - 1:]:  # a batch of 0 is fine, no other empty dim
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           "batch size and other non-zero dimensions for input, but got: "
                           f"[{shape_str(shape)}]")
    if mode == "reflect":
        for i in range(k):
            lo, hi = pad[2 * i], pad[2 * i + 1]
            if lo >= shape[nd - 1 - i] or hi >= shape[nd - 1 - i]:
                raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than "
                                   "the corresponding input dimension, but got: padding "
                                   f"({lo}, {hi}) at dimension {nd - 1 - i} of input "
                                   f"[{shape_str(shape)}]")
    sizes = shape[nd - k:]
    out = [n + pad[2 * (k - 1 - j)] + pad[2 * (k - 1 - j) + 1] for j, n in enumerate(sizes)]
    if max(out) < 1:  # PyTorch refuses only when every padded dim comes out empty
        names = "DHW"[3 - k:]
        inp = ", ".join(f"{c}: {n}" for c, n in zip(names, sizes))
        if k == 3:
            inp = inp.replace(",", "", 1)
        if k == 2 and mode == "replicate":
            inp += " "
        res = " ".join(f"{c}: {n}" for c, n in zip(names, out))
        raise RuntimeError(f"input ({inp}) is too small. Calculated output {res}")
    if min(out) < 0:  # PyTorch's reflection_pad2d fails with "numel: integer multiplication
        # overflow" here; this is the error of its other kernels
        raise RuntimeError("Trying to create tensor with negative dimension "
                           f"{next(s for s in out if s < 0)}: "
                           f"[{shape_str(shape[:nd - k] + tuple(out))}]")


def _pad_ints(pad, fname: str = "pad") -> tuple:
    """``pad`` as ints, refused with the TypeError of PyTorch's argument parser (``int[]``:
    ints and integer 0-d tensors, no floats or bools)."""
    if not isinstance(pad, (tuple, list)):
        if isinstance(pad, (int, float, bool, np.number)):
            raise TypeError(f"{fname}(): argument 'pad' (position 2) must be tuple of ints, "
                            f"not {type(pad).__name__}")
        pad = tuple(pad)
    for i, p in enumerate(pad):
        if p is None:
            raise TypeError(f"{fname}(): argument 'pad' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got NoneType\"")
        integral = (isinstance(p, Tensor) and p.ndim == 0 and not p.is_floating_point()
                    and not p.is_complex() and p._data.dtype.kind != "b") or (
            isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)))
        if not integral:
            raise TypeError(f"{fname}(): argument 'pad' (position 2) must be tuple of ints, "
                            f"but found element of type {type(p).__name__} at pos {i}")
    return tuple(int(p) for p in pad)


def _pad_value(value, dt, fname: str = "pad"):
    """The fill ``value`` (PyTorch's ``float`` argument: a real number or a 0-d tensor) as
    ``dt`` holds it, with c10's overflow check of a double converted to ``dt``."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a 0-d tensor or array
        value = value.item()
        if isinstance(value, complex):  # (read as a Scalar, then converted to double)
            raise RuntimeError("value cannot be converted to type double without overflow")
    if isinstance(value, (complex, np.complexfloating)) or not isinstance(
            value, (int, float, np.number)):
        raise TypeError(f"{fname}(): argument 'value' (position 4) must be float, not "
                        f"{type(value).__name__}")
    v = float(value)
    if dt.kind == "b" or dt in _dtype.COMPLEX_NP:
        return v
    if dt in _dtype.FLOATING_NP:
        fits = not math.isfinite(v) or abs(v) <= float(_dtype.np_finfo(dt).max)
    else:
        info = np.iinfo(dt)
        fits = math.isfinite(v) and info.min <= v <= info.max  # (a double: no wrap-around)
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dt)} "
                           "without overflow")
    return v if dt in _dtype.FLOATING_NP else int(v)


@register("constant_pad_nd", method=False)
def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: ``pad`` in its constant mode."""
    pad = _pad_ints(pad, "constant_pad_nd")
    return _constant_pad(input, _check_pad_length(input, pad),
                         _pad_value(value, input._data.dtype, "constant_pad_nd"))


def _check_pad_length(input, pad) -> tuple:
    nd = input._data.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {nd}")
    return pad


@register("pad", function=False, method=False)
def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims (pairs from the last dim backwards; negative
    values crop). Modes: constant, reflect, replicate, circular."""
    if mode != "constant" and mode not in _PAD_NAMES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pad = _pad_ints(pad)
    nd = input._data.ndim
    _check_pad_length(input, pad)
    if mode == "constant":
        return _constant_pad(input, pad, 0 if value is None else _pad_value(
            value, input._data.dtype))
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if not 1 <= k <= 3 or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\nSupported "
            "combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = input._data.shape
    if mode == "circular":
        _check_circular_pad(shape, pad, k)
    else:  # PyTorch's reflection/replication kernels lack some dtypes (checked after shapes)
        _check_resample_pad(mode, shape, pad, k)
        _dtype.check_kernel(f"{_PAD_KERNELS[mode]}{k}d", input._data.dtype)
    # PyTorch's reflection and replication kernels keep a channels-last input's layout
    order = None if mode == "circular" else _mf.suggest(input._data)
    out = input
    for i in range(k):
        ax = nd - 1 - i
        idx = xp_of(input).asarray(_pad_index(mode, shape[ax], pad[2 * i], pad[2 * i + 1]))
        node = _node_for(f"{_PAD_NAMES[mode]}{k}DBackward0" if mode != "circular"
                         else "CircularPadBackward0")
        out = _resample(out, ax, ((idx, None),), node, order if i == k - 1 else None)
    return out


# -- interpolate -----------------------------------------------------------------------------

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
_ALL_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _position_dtype(dtype) -> type:
    """The type PyTorch's CPU kernels compute source positions in: the input's ``opmath``
    type (float32 for float32, float16, bfloat16 and integer input; float64 for float64: a
    nearest resize of 2 to 82 picks source 0 for output 41 in float32, 1 in float64). Computing
    them in float64 moved float32 resizes by up to 5e-6 where the size ratio is not exact in
    binary, enough to reorder a detector's near-equal proposals."""
    return np.float64 if dtype == np.float64 else np.float32


def _half_pixel_source(s, out_size, ft):
    """``(dst + 0.5) * s - 0.5``, as PyTorch's build computes it: one fused multiply-add
    (rounded once: exact through float64 for float32)."""
    dst = np.arange(out_size, dtype=ft) + ft(0.5)
    if ft == np.float32:
        return (dst.astype(np.float64) * np.float64(s) - 0.5).astype(ft)
    return dst * s - ft(0.5)


def _linear_taps(in_size, out_size, align_corners, scale, xp, ft):
    s = source_scale(in_size, out_size, align_corners, scale, ft)
    dst = np.arange(out_size, dtype=ft)
    src = dst * s if align_corners else np.maximum(_half_pixel_source(s, out_size, ft), ft(0.0))
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    lam = np.clip(src - i0.astype(ft), ft(0.0), ft(1.0))
    return ((xp.asarray(i0), xp.asarray(ft(1.0) - lam)), (xp.asarray(i1), xp.asarray(lam)))


def _cubic_taps(in_size, out_size, align_corners, scale, xp, ft):
    s = source_scale(in_size, out_size, align_corners, scale, ft)
    dst = np.arange(out_size, dtype=ft)
    src = dst * s if align_corners else _half_pixel_source(s, out_size, ft)
    i = np.floor(src).astype(np.int64)
    weights = cubic_coefficients((src - i.astype(ft)).astype(ft), ft)
    return tuple((xp.asarray(np.clip(i + k - 1, 0, in_size - 1)), xp.asarray(w))
                 for k, w in enumerate(weights))


def _nearest_taps(in_size, out_size, scale, exact, xp, ft):
    s = source_scale(in_size, out_size, False, scale, ft)
    dst = np.arange(out_size, dtype=ft)
    src = np.floor((dst + ft(0.5)) * s) if exact else np.floor(dst * s)
    idx = np.minimum(src.astype(np.int64), in_size - 1)
    return ((xp.asarray(idx), None),)


def _range_taps(in_size, xmin, xsize, w, xp):
    """``(index, weight, mask)`` taps of a resize given as each output's first source
    ``xmin``, tap count ``xsize`` and weights ``w`` (zero past ``xsize``); ``mask`` is None
    where every output has the tap, else where it does (so an inf in a pixel outside an
    output's window cannot reach it as ``inf * 0``)."""
    shortest = int(xsize.min(initial=0))
    taps = []
    for k in range(w.shape[1]):
        idx = xp.asarray(np.minimum(xmin + k, in_size - 1))
        mask = None if k < shortest else xp.asarray(k < xsize)
        taps.append((idx, xp.asarray(w[:, k]), mask))
    return tuple(taps)


def _resample_uint8(d, axis, in_size, mode, out_size, align_corners, scale, antialias, xp):
    """One axis of PyTorch's uint8 resize (bilinear/bicubic/lanczos): int16 weights, integer
    sums, rounded and clamped to uint8."""
    xmin, xsize, w16, precision = int16_weights(mode, in_size, out_size, align_corners, scale,
                                                antialias)
    shape = [1] * d.ndim
    shape[axis] = out_size
    acc = xp.full(d.shape[:axis] + (out_size,) + d.shape[axis + 1:], 1 << (precision - 1),
                  dtype=np.int32)
    for k in range(w16.shape[1]):
        wk = np.where(k < xsize, w16[:, k], 0).astype(np.int32)
        if not wk.any():
            continue
        idx = xp.asarray(np.minimum(xmin + k, in_size - 1))
        acc += d.take(idx, axis).astype(np.int32) * xp.asarray(wk).reshape(shape)
    return xp.clip(acc >> precision, 0, 255).astype(np.uint8)


_NODE_NAMES = {"nearest": "UpsampleNearest{}DBackward0", "nearest-exact":
               "UpsampleNearestExact{}DBackward0", "linear": "UpsampleLinear1DBackward0",
               "bilinear": "UpsampleBilinear2DBackward0", "bicubic": "UpsampleBicubic2DBackward0",
               "trilinear": "UpsampleTrilinear3DBackward0"}
_AA_NODE_NAMES = {"bilinear": "UpsampleBilinear2DAaBackward0",
                  "bicubic": "UpsampleBicubic2DAaBackward0",
                  "lanczos": "UpsampleLanczos2DAaBackward0"}


def _per_spatial_dim(value, spatial, cast, what: tuple):
    """``value`` (a number, or a list / tuple of one per spatial dim) as a list of one
    ``cast`` number per dim; ``what`` words PyTorch's error: (the argument, how its value is
    described, its format)."""
    k = len(spatial)
    if not isinstance(value, (list, tuple)):
        return [cast(value)] * k
    if len(value) != k:
        name, described, fmt = what
        raise ValueError(f"Input and {name} must have the same number of spatial dimensions, but "
                         f"got input with spatial dimensions of {list(spatial)} and {described} "
                         f"{value}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                         f"format and {fmt} format.")
    return [cast(v) for v in value]


def _is_integer(v) -> bool:
    return isinstance(v, (int, np.integer)) or (isinstance(v, Tensor) and v.ndim == 0 and
                                                not v.is_floating_point() and
                                                not v.is_complex())


def _output_sizes(input, size, scale_factor, recompute_scale_factor, k):
    """PyTorch's output sizes and the scales its kernels see (None where recomputed)."""
    spatial = input._data.shape[2:]
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)) and len(size) == k and not all(
                _is_integer(v) for v in size):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            f"Tuple[int, int, int], but got size with types "
                            f"{[type(v) for v in size]}")
        sizes = _per_spatial_dim(size, spatial, int, ("output", "output size of",
                                                      "output size in (o1, o2, ...,oK)"))
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return sizes, [None] * k
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = _per_spatial_dim(scale_factor, spatial, float, (
        "scale_factor", "scale_factor of shape", "scale_factor in (s1, s2, ...,sK)"))
    if not recompute_scale_factor and not all(math.isfinite(n * s) for n, s in
                                              zip(spatial, scales)):  # (its kernel's words)
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    sizes = [int(math.floor(n * s)) for n, s in zip(spatial, scales)]
    return sizes, ([None] * k if recompute_scale_factor else scales)


def _check_sizes(shape, sizes):
    """PyTorch's upsample shape checks: a non-empty input (only the batch may be 0) and
    positive input and output sizes, worded per dimension count as its kernels word them."""
    k = len(sizes)
    spatial = shape[2:]
    if min(spatial) > 0 and min(sizes) > 0:  # (PyTorch checks the sizes first)
        if not math.prod(shape[1:]):
            raise RuntimeError(f"Non-empty {k + 2}D data tensor expected but got a tensor "
                               f"with sizes [{shape_str(shape)}]")
        return
    names = "DHW"[3 - k:]
    inp = ", ".join(f"{c}: {n}" for c, n in zip(names, spatial))
    out = ", ".join(f"{c}: {n}" for c, n in zip(names, sizes))
    sep = " and" if k == 1 else ""
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                       f"({inp}){sep} output ({out})")


def _check_dtype(input, mode, antialias, sizes):
    """PyTorch's NotImplementedError for a dtype the mode's CPU kernel lacks, named after the
    kernel it would have reached."""
    dt = input._data.dtype
    if mode in ("nearest", "nearest-exact"):  # floating types and uint8 only
        if dt in _dtype.FLOATING_NP or dt == np.uint8:
            return
        if input._data.ndim == 4:  # (PyTorch names this kernel for every 4-D input)
            kernel = "upsample_nearest2d_channels_last"
        elif input._data.ndim == 5 and _mf.suggest(input._data) is not None:
            kernel = "upsample_nearest3d_channels_last"
        else:
            kernel = "compute_indices_weights_nearest"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')
    if mode in ("bilinear", "bicubic", "lanczos") and dt == np.uint8:
        return
    if antialias:  # (a resize to the same size copies before PyTorch looks at the dtype)
        if dt in (np.float32, np.float64) or list(input._data.shape[2:]) == list(sizes):
            return
        kernel = "compute_index_ranges_weights"
    else:
        if dt in _dtype.FLOATING_NP:
            return
        channels_last = (_mf.suggest(input._data) is not None
                         and input._data.shape[1] > 3)
        if mode == "bilinear" and (channels_last or sum(sizes) <= 128):
            kernel = "upsample_bilinear2d_channels_last"
        elif mode == "trilinear" and channels_last:
            kernel = "upsample_trilinear3d_channels_last"
        else:
            kernel = ("compute_indices_weights_cubic" if mode == "bicubic"
                      else "compute_indices_weights_linear")
    raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')


@register("interpolate", function=False, method=False)
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of ``(N, C, *)`` input (PyTorch's source-coordinate rules:
    ``align_corners`` maps corner pixel centres, otherwise half-pixel offsets).
    ``antialias=True`` (bilinear, bicubic, lanczos; 4-D input) widens the filter by the
    downscale factor, as Pillow and PyTorch do; ``mode='area'`` is adaptive average
    pooling. uint8 input takes the nearest modes and, as PyTorch's CPU kernels, bilinear,
    bicubic and lanczos in fixed-point integer arithmetic."""
    nd = input._data.ndim
    k = nd - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    sizes, scales = _output_sizes(input, size, scale_factor,
                                  recompute_scale_factor or (mode == "area" and size is None),
                                  max(k, 0))
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and nd == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    want = _MODE_DIMS.get(mode)
    if mode not in ("nearest", "nearest-exact", "area", *_MODE_DIMS) or not 1 <= k <= 3 or (
            mode in ("bicubic", "lanczos") and k != 2):  # PyTorch words only these others
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {nd}D) for the modes: {_ALL_MODES} (got {mode})")
    if want is not None and k != want:
        raise NotImplementedError(f"Got {nd}D input, but {mode} mode needs {want + 2}D input")
    if mode == "area":
        from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[k - 1]
        return pool(input, sizes)
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode in ("nearest", "nearest-exact"):  # PyTorch checks these dtypes after the sizes
        _check_sizes(input._data.shape, sizes)
        _check_dtype(input, mode, antialias, sizes)
    else:
        _check_dtype(input, mode, antialias, sizes)
        _check_sizes(input._data.shape, sizes)
    if input._data.dtype == np.uint8 and mode in ("bilinear", "bicubic", "lanczos"):
        return _interpolate_uint8(input, sizes, scales, mode, align_corners, antialias)
    xp = xp_of(input)
    if antialias:
        node = _node_for(_AA_NODE_NAMES[mode])
    else:
        node = _node_for(_NODE_NAMES[mode].format(k))
    # PyTorch's CPU kernels keep a channels-last input's layout (its gradient is contiguous)
    order = _mf.suggest(input._data)
    ft = _position_dtype(input._data.dtype)
    # the last axis first: PyTorch's separable (antialias) kernel runs the horizontal pass
    # first and skips an axis whose size does not change
    axes = [ax for ax in range(nd - 1, 1, -1)
            if not antialias or input._data.shape[ax] != sizes[ax - 2]]
    if not axes:  # nothing to resample: PyTorch copies (and still records its node)
        n = input._data.shape[-1]
        return _resample(input, nd - 1, ((xp.arange(n), None),), node, order)
    if antialias:
        out = input
        for j, ax in enumerate(axes):
            n, m, sc = input._data.shape[ax], sizes[ax - 2], scales[ax - 2]
            taps = _range_taps(n, *aa_weights(mode, n, m, align_corners, sc, ft), xp)
            out = _resample(out, ax, taps, node, order if j == len(axes) - 1 else None)
        return out
    plan = []
    for ax in axes:
        n, m, sc = input._data.shape[ax], sizes[ax - 2], scales[ax - 2]
        if mode in ("nearest", "nearest-exact"):
            taps = _nearest_taps(n, m, sc, mode == "nearest-exact", xp, ft)
        elif mode == "bicubic":
            taps = _cubic_taps(n, m, align_corners, sc, xp, ft)
        else:
            taps = _linear_taps(n, m, align_corners, sc, xp, ft)
        plan.append((ax, taps, n))
    d = input._data
    # float16/bfloat16 follow PyTorch's kernels bit for bit; float32/float64 take the plain
    # separable sums (within an ulp of PyTorch's fused ones: exactness there cost 2-9x the
    # time, the float64 round trip and the channels-last kernel's gathers)
    half = d.dtype in _dtype.OPMATH
    if half and mode in ("bilinear", "trilinear") and _channels_last_kernel(d, sizes):
        r = _interp_channels_last(d, plan, xp)
    else:
        if half and mode not in ("nearest", "nearest-exact"):
            plan = [(ax, _rounded_taps(taps, d.dtype, mode), n) for ax, taps, n in plan]
        r = _interp_separable(d, plan, fused=half)
    out = _make(r if order is None else _mf.copy_as(r, order), input._device)
    if GRAD.enabled and input.requires_grad:
        record(node, out, (input,), (), ("plan", tuple(plan)))
    return out


def _opmath_fma(a, b, c):
    """``a * b + c`` rounded once, as PyTorch's build contracts it: float32 through float64
    (exact: the product fits), float64 unfused (within an ulp of the fused result)."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b + c).astype(np.float32)
    return a * b + c


def _rounded_taps(taps, dt, mode):
    """PyTorch's generic kernel stores a float16/bfloat16 input's weights in its dtype:
    linear's ``lambda1`` rounded, ``lambda0 = 1 - lambda1`` in that dtype; cubic's four
    coefficients (computed in float32) rounded."""
    def rnd(w):
        return w.astype(dt).astype(np.float32)
    if mode == "bicubic":
        return tuple((idx, rnd(w)) for idx, w in taps)
    (i0, _), (i1, lam) = taps
    lam1 = rnd(lam)
    return ((i0, rnd(np.float32(1.0) - lam1)), (i1, lam1))


def _interp_separable(d, plan, fused: bool = True):
    """PyTorch's generic upsample kernel (``cpu_upsample_generic``): per output element a
    nest over the dims, the last innermost, each a weighted sum of its taps in the opmath
    type (float32 for float16/bfloat16: rounded to the dtype once, at the end). Its build
    fuses ``t0 * w0 + t1 * w1`` into ``fma(t0, w0, t1 * w1)`` and a longer sum into a chain
    of ``acc = fma(t_k, w_k, acc)``; a separable pass per axis gives the same bits
    (``fused``: float32 input takes plain sums, faster and within an ulp)."""
    r = _dtype.widen(d)
    for axis, taps, _ in plan:
        shape = (-1,) + (1,) * (r.ndim - axis - 1)
        if len(taps) == 1:
            r = r.take(taps[0][0], axis)
        elif len(taps) == 2:
            (i0, w0), (i1, w1) = taps
            low = r.take(i1, axis)
            low *= w1.reshape(shape).astype(r.dtype, copy=False)
            if fused and r.dtype == np.float32:  # the fused sum, exact through float64
                acc = r.astype(np.float64).take(i0, axis)
                acc *= w0.reshape(shape)
                acc += low
                r = acc.astype(np.float32)
            else:
                acc = r.take(i0, axis)
                acc *= w0.reshape(shape)
                acc += low
                r = acc
        else:  # bicubic: PyTorch's float32 weights are not yet matched bit for bit, so the
            # fused chain buys nothing here; a plain sum in the opmath type
            r = sum(r.take(idx, axis) * w.reshape(shape).astype(r.dtype, copy=False)
                    for idx, w, *_ in taps)
    return _dtype.narrow(r, d.dtype)


#: channels per SIMD vector of PyTorch's AVX-512 build (float32 and the reduced types,
#: which its channels-last kernel widens to float32 lanes)
_VEC_LANES = {np.dtype(np.float32): 16, np.dtype(np.float64): 8}


def _channels_last_kernel(d, sizes) -> bool:
    """Whether PyTorch runs ``cpu_upsample_linear_channels_last`` (its vectorized kernel,
    which rounds differently) rather than the generic one: a channels-last input with more
    than 3 channels, or (2-d) an output of at most 128 rows plus columns."""
    if d.ndim == 4:
        return (d.shape[1] > 3 and _mf.is_contiguous(d, _mf.channels_last)) or sum(sizes) <= 128
    return d.ndim == 5 and d.shape[1] > 3 and _mf.is_contiguous(d, _mf.channels_last_3d)


def _interp_channels_last(d, plan, xp):
    """PyTorch's ``cpu_upsample_linear_channels_last``: the 4 (8) corner weights as products
    of the unrounded opmath lambdas, ``(d * h) * w``, and per output pixel their sum over the
    channels, vector by vector (``x0 * w0 + (x1 * w1 + (... + x7 * w7))``, fused from the
    inside) and the channels past the last whole vector in a scalar loop (left to right,
    fused). float16/bfloat16 are computed in float32 and rounded once."""
    order = sorted(plan, key=lambda p: p[0])  # depth, height, width
    r = _dtype.widen(d)
    nd = r.ndim
    corners = [((), None)]
    for axis, taps, _ in order:
        shape = (-1,) + (1,) * (nd - axis - 1)
        new = []
        for idx_prev, w_prev in corners:
            for idx, w, *_ in taps:
                wk = w.reshape(shape).astype(r.dtype, copy=False)
                new.append((idx_prev + ((axis, idx),), wk if w_prev is None else w_prev * wk))
        corners = new
    vals = []
    for idxs, _ in corners:
        key = [slice(None)] * nd
        k = len(idxs)
        for j, (axis, idx) in enumerate(idxs):
            key[axis] = idx.reshape((-1,) + (1,) * (k - 1 - j))
        vals.append(r[tuple(key)])
    ws = [w for _, w in corners]
    c = r.shape[1]
    lanes = _VEC_LANES.get(np.dtype(r.dtype), 16)
    split = c - c % lanes
    out = xp.empty(vals[0].shape, dtype=r.dtype)
    if split:
        v = [a[:, :split] for a in vals]
        acc = _opmath_fma(v[-1], ws[-1], v[-2] * ws[-2])
        for a, w in zip(v[-3::-1], ws[-3::-1]):
            acc = _opmath_fma(a, w, acc)
        out[:, :split] = acc
    if split < c:
        v = [a[:, split:] for a in vals]
        acc = _opmath_fma(v[0], ws[0], v[1] * ws[1])
        for a, w in zip(v[2:], ws[2:]):
            acc = _opmath_fma(a, w, acc)
        out[:, split:] = acc
    return _dtype.narrow(out, d.dtype)


def _interpolate_uint8(input, sizes, scales, mode, align_corners, antialias):
    d = input._data
    xp = xp_of(input)
    order = _mf.suggest(d)
    for ax in range(d.ndim - 1, 1, -1):  # the horizontal pass first, as PyTorch's kernel
        n, m = d.shape[ax], sizes[ax - 2]
        if n != m:
            d = _resample_uint8(d, ax, n, mode, m, align_corners, scales[ax - 2], antialias, xp)
    if d is input._data:
        d = d.copy()
    return _make(d if order is None else _mf.copy_as(d, order), input._device)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- pixel shuffle ---------------------------------------------------------------------------

def _shuffle_factor(input, factor, fn: str, name: str) -> int:
    """``factor`` as an int, after the checks PyTorch's ``fn`` makes of it (``name``) and of
    ``input`` (at least ``(C, H, W)``)."""
    r = _int_arg(factor, fn, name, 2)
    ndim = input._data.ndim
    if ndim < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input "
                           f"with {ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {r}")
    return r


def _shuffled(input, view_shape, perm, out_shape, node_cls, ctx):
    """``input`` reshaped to ``view_shape``, permuted by ``perm`` and flattened to
    ``out_shape``: one copy, laid out as PyTorch's kernels lay it out (channels-last when the
    input suggests it, else contiguous), with ``node_cls`` as its backward (``ctx`` the
    inverse shuffle's argument)."""
    d = input._data
    r = d.reshape(view_shape).transpose(perm).reshape(out_shape)
    order = _mf.suggest(d) if len(out_shape) == d.ndim else None
    if order is not None:
        r = _mf.copy_as(r, order)
    elif xp_of(d).may_share_memory(r, d):  # the reshapes made no copy (a factor of 1)
        r = r.copy()
    out = _make(r, input._device)
    if input.requires_grad and GRAD.enabled:
        record(node_cls, out, (input,), (), ctx)
    return out


def _pixel_shuffle_arrays(input, r):
    *lead, c, h, w = input._data.shape
    n = len(lead)
    return ((*lead, c // (r * r), r, r, h, w), (*range(n), n, n + 3, n + 1, n + 4, n + 2),
            (*lead, c // (r * r), h * r, w * r))


def _pixel_unshuffle_arrays(input, r):
    *lead, c, h, w = input._data.shape
    n = len(lead)
    return ((*lead, c, h // r, r, w // r, r), (*range(n), n, n + 2, n + 4, n + 1, n + 3),
            (*lead, c * r * r, h // r, w // r))


PixelShuffleBackward0 = make_node_class(
    "PixelShuffleBackward0", lambda node, g: (pixel_unshuffle(g, node.ctx),))
PixelUnshuffleBackward0 = make_node_class(
    "PixelUnshuffleBackward0", lambda node, g: (pixel_shuffle(g, node.ctx),))


@register("pixel_shuffle", method=False)
def pixel_shuffle(input, upscale_factor):
    """``(*, C * r**2, H, W)`` to ``(*, C, H * r, W * r)``."""
    r = _shuffle_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    c = input._data.shape[-3]
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    return _shuffled(input, *_pixel_shuffle_arrays(input, r), PixelShuffleBackward0, r)


@register("pixel_unshuffle", method=False)
def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H * r, W * r)`` to ``(*, C * r**2, H, W)``."""
    r = _shuffle_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    h, w = input._data.shape[-2:]
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by "
                           f"downscale_factor, but input.size(-1)={w} is not divisible by {r}")
    return _shuffled(input, *_pixel_unshuffle_arrays(input, r), PixelUnshuffleBackward0, r)


# -- channel shuffle -------------------------------------------------------------------------

ChannelShuffleBackward0 = make_node_class(
    "ChannelShuffleBackward0", lambda node, g: (channel_shuffle(g, node.ctx),))


@register("channel_shuffle", method=False)
def channel_shuffle(input, groups):
    """Divide the ``C`` channels of ``(N, C, *)`` into ``groups`` and interleave them
    (ShuffleNet): ``(N, g, C / g, *)`` transposed to ``(N, C / g, g, *)``, flattened back."""
    g = _int_arg(groups, "channel_shuffle", "groups", 2)
    shape = input._data.shape
    if len(shape) <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(shape)}")
    if g <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    n, c, *rest = shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    k = len(rest)
    # the backward shuffles the gradient back: C / g groups undo g groups
    return _shuffled(input, (n, g, c // g, *rest), (0, 2, 1, *range(3, 3 + k)), shape,
                     ChannelShuffleBackward0, c // g)


@register("native_channel_shuffle", method=False)
def native_channel_shuffle(input, groups):
    """``channel_shuffle`` (PyTorch's native kernel of it)."""
    return channel_shuffle(input, groups)


# -- distances -------------------------------------------------------------------------------

def _float_like(t):
    if t._data.dtype not in _dtype.FLOATING_NP:
        return t.to(_dtype.get_default_dtype())
    return t


@register("cosine_similarity", method=False)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1/|x1| * x2/|x2|, dim)`` with each norm clamped to ``eps`` (PyTorch 2)."""
    try:
        check_same_device(x1, x2)
        x1, x2 = _float_like(x1), _float_like(x2)
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("cosine_similarity", (x1, x2, dim, eps))
        raise
    if x1._data.dtype is not x2._data.dtype:
        common = _dtype.promote_types(x1.dtype, x2.dtype)  # NumPy cannot: bfloat16, float16
        x1, x2 = cast_to(x1, None, common, False), cast_to(x2, None, common, False)
    from .shape import broadcast_tensors

    x1, x2 = broadcast_tensors(x1, x2)
    dim = wrap_dim(dim, x1._data.ndim)
    n1 = x1.norm(2, dim, True).clone()
    n2 = x2.norm(2, dim, True).clone()
    # clamped without a graph: the gradient flows as if unclamped, as in PyTorch
    n1._data = np.maximum(n1._data, eps).astype(n1._data.dtype, copy=False)
    n2._data = np.maximum(n2._data, eps).astype(n2._data.dtype, copy=False)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@register("pairwise_distance", method=False)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``norm(x1 - x2 + eps, p, dim=-1)``."""
    try:
        check_same_device(x1, x2)
        nd = max(x1._data.ndim, x2._data.ndim)
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("pairwise_distance", (x1, x2, p, eps, keepdim))
        raise
    diff = x1 - x2 + eps
    if nd == 0:
        return diff.abs()
    return diff.norm(p, nd - 1, keepdim)


@register("cdist", method=False)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of ``x1`` (``*, P, M``) and ``x2`` (``*, R, M``).

    Computed from the broadcast differences (exact for every ``p``; ``O(P * R * M)`` memory)."""
    for name, t in (("X1", x1), ("X2", x2)):
        if t._data.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t._data.ndim}D")
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: "
                           f"{x1._data.shape[-1]} X2: {x2._data.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1._data.dtype not in _dtype.FLOATING_NP or x2._data.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError("cdist only supports floating-point dtypes, X1 got: "
                           f"{scalar_type_name(x1._data.dtype)}")
    check_same_device(x1, x2)
    return _row_distance(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def _row_distance(diff, p):
    """The ``p``-norm of ``diff`` over its last dim (``p = 0``: a count, zero gradient, as in
    PyTorch)."""
    if p == 0:
        return (diff.ne(0).to(diff.dtype) + diff * 0).sum(-1)
    return diff.norm(p, -1)


@register("pdist", method=False)
def pdist(input, p=2):
    """The ``p``-norm distances between every pair of rows of ``input`` (``(N, M)``): the
    upper triangle of ``cdist(input, input)`` without its diagonal, ``N * (N - 1) / 2``
    values in row-major order."""
    d = input._data
    if d.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {d.ndim}D")
    if d.dtype not in _dtype.FLOATING_NP:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    xp = xp_of(input)
    first, second = (_make(xp.asarray(i), input._device) for i in np.triu_indices(d.shape[0], 1))
    return _row_distance(input.index_select(0, first) - input.index_select(0, second), p)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        return input.div(denom, out=out)
    return input / denom


# -- gumbel softmax, time-batch-channel convolution -----------------------------------------

@register("gumbel_softmax", function=False, method=False, random=True)
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution over ``dim``: ``softmax((logits + g) /
    tau)`` with Gumbel(0, 1) noise ``g`` from the default generator of ``logits``' device.
    ``hard=True`` returns the one-hot argmax of that sample with the soft sample's gradient
    (straight-through estimator). ``eps`` is deprecated and has no effect."""
    from .._factory import empty_like, zeros_like

    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.",
                      stacklevel=user_stacklevel())
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


@register("conv_tbc", method=False)
def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over time-batch-channel input: ``input`` ``(T, B, C_in)``, ``weight``
    ``(K, C_in, C_out)``, ``bias`` ``(C_out,)`` and ``pad`` zeros at both ends of the time
    axis give ``(T + 2 * pad - K + 1, B, C_out)`` (``conv1d`` on permuted views)."""
    from .conv import conv1d

    if input._data.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight._data.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias._data.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    (t, b, c_in), (k, w_in, c_out) = input._data.shape, weight._data.shape
    if c_in != w_in:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias._data.shape[0] != c_out:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    length = t + 2 * pad - k + 1
    if length < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {length}: "
                           f"[{length}, {b}, {c_out}]")
    if length == 0:
        return input.new_zeros((0, b, c_out))
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
