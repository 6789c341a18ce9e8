"""Convolutions (``conv1d/2d/3d``, ``conv_transpose1d/2d/3d``) and ``unfold``/``fold``: the
ops (argument checks with PyTorch's errors, autograd nodes, registration) over the N-d array
kernels of ``ops._conv_kernels``.

Three differentiable ops are built on the kernels, each other's adjoints (as in Chainer, where
a convolution's backward is a deconvolution plus a gradient-of-weight node), so gradients of
any order come for free: ``_conv`` (wide -> narrow), ``_conv_transpose`` (narrow -> wide)
and ``_weight_grad``. ``_im2col``/``_col2im`` are the weight-free pair behind
``unfold``/``fold``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._memory_format import fresh_layout, suggest, suggest_order
from .._tensor import Tensor
from .._warn import user_stacklevel
from ..autograd.graph import make_node_class, result
from ._conv_kernels import (
    Geom,
    cols_plain,
    conv_array,
    conv_transpose_array,
    scatter_windows,
    weight_grad_array,
)
from .registry import register

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "ntuple"]


def ntuple(value, n: int, name: str, op: str = "convolution") -> tuple:
    """``value`` (int or sequence) as a tuple of ``n`` ints, with PyTorch's error."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the {op} dimensions, but got "
                           f"{name}=[{shape_str(vals)}]")
    return vals


def out_size(x: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    return (x + lo + hi - d * (k - 1) - 1) // s + 1




# -- differentiable ops -------------------------------------------------------------------------

def _bias_shape(O: int, n: int):
    return (1, O) + (1,) * n


#: float16 and bfloat16 data as float32: PyTorch accumulates low-precision products in float
#: and rounds the result once (``_narrowed``)
_wide = _dtype.widen


def _narrowed(r, like):
    return _dtype.narrow(r, like.dtype)


def _convolution(kernel, a, w, b, g: Geom, transposed: bool, order=None):
    """``kernel(a, w)`` plus the bias, recorded as ``ConvolutionBackward0``, laid out in
    ``order`` (``None``: contiguous; see ``_layout``)."""
    ad = a._data
    if b is not None and kernel is conv_array:  # the direct kernels add it in registers
        r = conv_array(_wide(ad), _wide(w._data), g, _wide(b._data))
    else:
        r = kernel(_wide(ad), _wide(w._data), g)
        if b is not None:
            r += b._data.reshape(_bias_shape(r.shape[1], len(g.k)))
    r = fresh_layout(_narrowed(r, ad), order)
    return result(r, a._device, ConvolutionBackward0, (a, w, b), (a, w), (g, transposed, order))


def _conv(x, w, b, g: Geom, order=None):
    """Convolution of ``x`` (N, C, *x) with ``w`` (O, C/groups, *k): (N, O, *y)."""
    return _convolution(conv_array, x, w, b, g, False, order)


def _conv_transpose(u, w, b, g: Geom, order=None):
    """Transposed convolution of ``u`` (N, Cin, *y) with ``w`` (Cin, Cout/groups, *k)."""
    return _convolution(conv_transpose_array, u, w, b, g, True, order)


def _weight_grad(x, gy, g: Geom, wshape, order=None):
    """Gradient of a convolution's weight for input ``x`` and output gradient ``gy``."""
    xd = x._data
    r = fresh_layout(_narrowed(weight_grad_array(_wide(xd), _wide(gy._data), g, wshape), xd),
                  order)
    return result(r, x._device, ConvolutionBackwardBackward0, (x, gy), (x, gy), (g, order))


def _conv_bw(node, gy):
    a, w = node.saved
    g, transposed, order = node.ctx
    if gy.__class__ is not Tensor:
        return _conv_bw_batched(node, gy, a, w, g, transposed, order)
    ga = gw = gb = None
    # the gradients share the forward's layout (PyTorch's backend memory format)
    if transposed:  # a is the narrow side u; the output lives on the wide side
        if node.needs_grad(0):
            ga = _conv(gy, w, None, g, order)
        if node.needs_grad(1):
            gw = _weight_grad(gy, a, g, w._data.shape, order)
    else:
        if node.needs_grad(0):
            ga = _conv_transpose(gy, w, None, g, order)
        if node.needs_grad(1):
            gw = _weight_grad(a, gy, g, w._data.shape, order)
    if node.needs_grad(2):
        gb = gy.sum((0,) + tuple(range(2, gy._data.ndim)))
    return ga, gw, gb


def _conv_bw_batched(node, gy, a, w, g, transposed, order):
    """A convolution's backward for an output gradient batched by vmap (``jacrev`` of a
    CNN): the input's gradient is one (transposed) convolution with the batch folded into
    N; the weight's is one weight gradient with the batch folded into the gradient's
    channels (group by group, so that each group's channels stay together)."""
    from .._functorch._batched import lift, lower

    phys, levels = lift(gy)
    k = len(levels)
    lead = tuple(phys.shape[:k])
    bt = math.prod(lead)
    n, o = phys.shape[k], phys.shape[k + 1]
    sp = tuple(phys.shape[k + 2:])
    ga = gw = gb = None
    if node.needs_grad(0):
        back = _conv if transposed else _conv_transpose
        r = back(phys.reshape((bt * n, o) + sp), w, None, g, order)
        ga = lower(r.reshape(lead + (n,) + tuple(r.shape[1:])), levels)
    if node.needs_grad(1):
        groups = g.groups
        og = o // groups
        dims = tuple(range(4, 4 + len(sp)))
        t = phys.reshape((bt, n, groups, og) + sp).permute((1, 2, 0, 3) + dims)
        t = t.reshape((n, groups * bt * og) + sp)  # the batch inside each group's channels
        ks = tuple(w.shape[2:])
        kdims = tuple(range(3, 3 + len(ks)))
        if transposed:  # the weight is (in, out / groups, *k): the batch joins its dim 1
            cin = w.shape[0]
            r = _weight_grad(t, a, g, (cin, bt * og) + ks, order)
            r = r.reshape((cin, bt, og) + ks).permute((1, 0, 2) + kdims)
            gw = lower(r.reshape(lead + (cin, og) + ks), levels)
        else:  # (out, in / groups, *k): the batch joins its dim 0
            cg = w.shape[1]
            r = _weight_grad(a, t, g, (groups * bt * og, cg) + ks, order)
            r = r.reshape((groups, bt, og, cg) + ks).permute((1, 0, 2, 3) + tuple(
                d + 1 for d in kdims))
            gw = lower(r.reshape(lead + (o, cg) + ks), levels)
    if node.needs_grad(2):
        gb = gy.sum((0,) + tuple(range(2, gy.dim())))
    return ga, gw, gb


def _weight_grad_bw(node, ggw):
    x, gy = node.saved
    g, order = node.ctx
    gx = ggy = None
    if node.needs_grad(0):
        gx = _conv_transpose(gy, ggw, None, g, order)
    if node.needs_grad(1):
        ggy = _conv(x, ggw, None, g, order)
    return gx, ggy


ConvolutionBackward0 = make_node_class("ConvolutionBackward0", _conv_bw)
ConvolutionBackwardBackward0 = make_node_class("ConvolutionBackwardBackward0", _weight_grad_bw)


def _im2col(x, g: Geom):
    """``(N, C, *x)`` -> ``(N, C * K, L)`` (``F.unfold``)."""
    N, C = x._data.shape[:2]
    r = cols_plain(x._data, g._replace(groups=1)).reshape(N, C * math.prod(g.k),
                                                           math.prod(g.y))
    return result(r, x._device, Im2ColBackward0, (x,), (), g)


def _col2im(c, g: Geom):
    """``(N, C * K, L)`` -> ``(N, C, *x)``, overlapping values summed (``F.fold``)."""
    cd = c._data
    N = cd.shape[0]
    C = cd.shape[1] // math.prod(g.k)
    cols = cd.reshape((N, C) + g.k + g.y)
    n = len(g.k)
    xp = xp_of(c)
    r = scatter_windows((N, C), g, cd.dtype, xp,
                        lambda off: cols[(Ellipsis,) + off + (slice(None),) * n])
    # the padding cropped off leaves a view: PyTorch's result (and unfold's gradient) is dense
    return result(xp.ascontiguousarray(r), c._device, Col2ImBackward0, (c,), (), g)


Im2ColBackward0 = make_node_class("Im2ColBackward0", lambda node, g: (_col2im(g, node.ctx),))
Col2ImBackward0 = make_node_class("Col2ImBackward0", lambda node, g: (_im2col(g, node.ctx),))


# -- layout -------------------------------------------------------------------------------------

def _unsqueezed(arr, dim: int):
    """``arr``'s shape and strides after PyTorch's ``unsqueeze(dim)`` (the new stride is
    ``size * stride`` of the dim it lands before, 1 at the end)."""
    shape, strides = arr.shape, arr.strides
    st = shape[dim] * strides[dim] if dim < len(shape) else arr.itemsize
    return shape[:dim] + (1,) + shape[dim:], strides[:dim] + (st,) + strides[dim:]


def _layout(n: int, input, weight, groups: int):
    """The order of a convolution's output and gradients, as PyTorch's CPU backends choose
    it: channels-last when the input or the weight suggests it (``suggest_memory_format``;
    conv1d runs as a 2-d one and only its weight counts), else ``None`` (contiguous). 3-d
    convolutions are channels-last only on the oneDNN path (float32, and a batch above 1,
    groups, a kernel above 3x3 in its last two dims or a large input); the slow 3-d kernels
    are contiguous."""
    xd, wd = input._data, weight._data
    if n == 2 and xd.ndim == 4 and xd.shape[1] > 1 and xd.shape[3] > 1 and \
            wd.shape[1] > 1 and wd.shape[3] > 1 and xd.flags.c_contiguous and \
            wd.flags.c_contiguous:
        return None  # the common case, kept cheap: neither can read as channels-last
    if n == 1:
        return (0, 2, 1) if suggest_order(*_unsqueezed(wd, 2)) else None
    if xd.ndim == n + 1:  # unbatched: PyTorch unsqueezes the batch dim
        x_cl = suggest_order(*_unsqueezed(xd, 0))
    else:
        x_cl = suggest(xd)
    if not (x_cl or suggest(wd)):
        return None
    if n == 3:
        shape = xd.shape if xd.ndim == 5 else (1,) + xd.shape
        ws = wd.shape
        if xd.dtype != np.float32 or not (groups > 1 or (ws[-1] > 3 and ws[-2] > 3) or
                                          shape[0] > 1 or math.prod(shape[:4]) > 20480):
            return None
        return (0, 2, 3, 4, 1)
    return (0, 2, 3, 1)


# -- argument checks ----------------------------------------------------------------------------

def _check_dtypes(x, w, b, kernel):
    dt = x._data.dtype
    if dt == np.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if dt != w._data.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(dt)} but found "
                           f"{scalar_type_name(w._data.dtype)}")
    if b is not None and b._data.dtype != dt:
        _bias_dtype_error(x, b)


def _bias_dtype_error(x, b):
    raise RuntimeError(f"Input type ({_c_name(x)}) and bias type ({_c_name(b)}) should be "
                       "the same")


def _c_name(t) -> str:
    return _dtype.options_type_name(t._data.dtype)


def _batched(input, n: int, name: str):
    nd = input._data.ndim
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: [{shape_str(input._data.shape)}]")
    return (input.unsqueeze(0), True) if nd == n + 1 else (input, False)


def _given(value, n: int) -> tuple:
    """An int argument as PyTorch's argument parser hands it on (``n`` copies), a sequence
    as it is."""
    return (int(value),) * n if isinstance(value, (int, np.integer)) else tuple(value)


def _rank_mismatch(n, x, weight, stride, padding, dilation, groups, output_padding):
    """PyTorch's error for a weight whose rank is not the convolution's (``_convolution``:
    each argument expanded to the weight's dims, then ``check_input_shape_forward``)."""
    wshape = weight._data.shape
    dim = len(wshape) - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                    ("output_padding", output_padding)):
        v = _given(v, n)
        if len(v) != 1 and len(v) != dim:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of "
                               f"{dim} values to match the convolution dimensions, but got "
                               f"{name}=[{shape_str(v)}]")
    raise RuntimeError(f"Expected {dim + 2}-dimensional input for {dim + 2}-dimensional weight "
                       f"[{shape_str(wshape)}], but got {x._data.ndim}-dimensional input of "
                       f"size [{shape_str(x._data.shape)}] instead")


_SAME_WARNED = [False]  # PyTorch warns once per process (TORCH_WARN_ONCE)


def _same_padding(n, x, weight, stride, dilation, groups):
    """``padding='same'``: the (possibly asymmetric) padding, checked as PyTorch's
    ``conv_padding_same`` checks its arguments."""
    wshape = weight._data.shape
    k = len(wshape)
    if k <= 2:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if k != x._data.ndim:
        raise RuntimeError(f"Expected {k}-dimensional input for {k}-dimensional weight"
                           f"[{shape_str(wshape)}], but got {x._data.ndim}-dimensional input of "
                           f"size [{shape_str(x._data.shape)}] instead")
    st, dl = _given(stride, n), _given(dilation, n)
    if len(st) != n and len(st) != 1:
        raise RuntimeError(f"stride cannot broadcast to {n} dimensions")
    if len(dl) != n and len(dl) != 1:
        raise RuntimeError(f"dilation cannot broadcast to {n} dimensions")
    if st.count(1) != len(st):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    if len(dl) != n:
        dl = dl * n
    total = [dl[i] * (wshape[i + 2] - 1) for i in range(n)]
    lo = tuple([t // 2 for t in total])
    hi = tuple([t - t // 2 for t in total])
    if lo != hi and not _SAME_WARNED[0]:
        _SAME_WARNED[0] = True
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                      "require a zero-padded copy of the input be created",
                      stacklevel=user_stacklevel())
    return lo, hi


def _common_args(n, weight, stride, padding, dilation, groups, output_padding=None):
    """``stride``, ``padding``, ``dilation`` and ``output_padding`` as ``n``-tuples, with
    PyTorch's checks in its order (``_convolution``, ``check_input_shape_forward``)."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = ntuple(stride, n, "stride")
    padding = ntuple(padding, n, "padding")
    dilation = ntuple(dilation, n, "dilation")
    if output_padding is not None:  # transposed only (a convolution's is PyTorch's [0])
        output_padding = ntuple(output_padding, n, "output_padding")
    if min(padding) < 0:
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and min(output_padding) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) < 0:
        raise RuntimeError("dilation should be greater than zero")
    w0 = weight._data.shape[0]
    if w0 < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size "
                           f"[{shape_str(weight._data.shape)}] instead")
    if w0 % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size "
                           f"[[{shape_str(weight._data.shape)}]] instead")
    return stride, padding, dilation, output_padding


def _check_bias(weight, bias, channels, transposed=""):
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != channels):
        raise RuntimeError(f"Given {transposed}weight of size [{shape_str(weight._data.shape)}], "
                           f"expected bias to be 1-dimensional with {channels} elements, but got "
                           f"bias of size [{shape_str(bias._data.shape)}] instead")


_DIM_NAMES = {1: ("height", "width"), 2: ("height", "width"), 3: ("depth", "height", "width")}
_KERNELS = {1: "slow_conv2d_cpu", 2: "slow_conv2d_cpu", 3: "compute_columns3d"}
_TRANSPOSED_KERNELS = {1: "slow_conv_transpose2d_out_cpu", 2: "slow_conv_transpose2d_out_cpu",
                       3: "slow_conv_transpose3d_out_cpu"}


def _named(n, label, values, sep, lead=1):
    """PyTorch's ``dilation_height: 1, dilation_width: 0`` (a 1-d one runs as 2-d, ``lead``
    its height's value)."""
    names = _DIM_NAMES[n]
    values = (lead,) * (len(names) - n) + tuple(values)
    return sep.join(f"{label}_{nm}: {v}" for nm, v in zip(names, values))


def _convnd(n, input, weight, bias, stride, padding, dilation, groups):
    check_same_device(input, weight, bias)
    if bias is not None and bias._data.dtype != input._data.dtype:
        _bias_dtype_error(input, bias)
    x, unbatched = _batched(input, n, f"conv{n}d")
    hi = None
    if isinstance(padding, str):
        if padding == "same":
            padding, hi = _same_padding(n, x, weight, stride, dilation, groups)
        elif padding == "valid":
            padding = 0
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    if weight._data.ndim != n + 2:
        _rank_mismatch(n, x, weight, stride, padding, dilation, groups, 0)
    stride, lo, dilation, _ = _common_args(n, weight, stride, padding, dilation, groups)
    if hi is None:
        hi = lo
    wshape, xshape = weight._data.shape, x._data.shape
    if xshape[1] != wshape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size [{shape_str(wshape)}], "
                           f"expected input[{shape_str(xshape)}] to have {wshape[1] * groups} "
                           f"channels, but got {xshape[1]} channels instead")
    _check_bias(weight, bias, wshape[0])
    k = tuple(wshape[2:])
    xs = tuple(xshape[2:])
    ek = tuple(dilation[i] * (k[i] - 1) + 1 for i in range(n))
    padded = tuple(xs[i] + lo[i] + hi[i] for i in range(n))
    if any(padded[i] < ek[i] for i in range(n)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({shape_str(padded, ' x ')}). Kernel size: "
                           f"({shape_str(ek, ' x ')}). Kernel size can't be greater than "
                           "actual input size")
    if min(dilation) <= 0:
        shown = (1,) * (n == 1) + dilation  # conv1d runs as a 2-d one in PyTorch
        raise RuntimeError(f"dilation should be greater than zero, but got [{shape_str(shown)}]")
    _check_dtypes(x, weight, bias, _KERNELS[n])
    y = tuple(out_size(xs[i], k[i], stride[i], dilation[i], lo[i], hi[i]) for i in range(n))
    order = _layout(n, input, weight, groups)
    out = _conv(x, weight, bias, Geom(k, stride, dilation, lo, xs, y, groups), order)
    return out.squeeze(0) if unbatched else out


def _conv_transposend(n, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    check_same_device(input, weight, bias)
    u, unbatched = _batched(input, n, f"conv_transpose{n}d")
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose{n}d(): argument 'padding' must be tuple of ints, not "
                        "str")
    if weight._data.ndim != n + 2:
        _rank_mismatch(n, u, weight, stride, padding, dilation, groups, output_padding)
    stride, padding, dilation, output_padding = _common_args(n, weight, stride, padding,
                                                             dilation, groups, output_padding)
    wshape, ushape = weight._data.shape, u._data.shape
    if ushape[1] != wshape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size [{shape_str(wshape)}], "
                           f"expected input[{shape_str(ushape)}] to have {wshape[0]} "
                           f"channels, but got {ushape[1]} channels instead")
    _check_bias(weight, bias, wshape[1] * groups, "transposed=1, ")
    if min(dilation) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got "
                           + _named(n, "dilation", dilation, ", "))
    if any(output_padding[i] >= max(stride[i], dilation[i]) for i in range(n)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join((_named(n, "output_padding", output_padding,
                                                         " ", 0),
                                                  _named(n, "stride", stride, " "),
                                                  _named(n, "dilation", dilation, " "))))
    if bias is not None and bias._data.dtype != u._data.dtype:  # PyTorch takes any bias dtype
        bias = bias.to(u.dtype)
    _check_dtypes(u, weight, bias, _TRANSPOSED_KERNELS[n])
    k = tuple(wshape[2:])
    ys = tuple(ushape[2:])
    xs = tuple((ys[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) +
               output_padding[i] + 1 for i in range(n))
    if any(v <= 0 for v in xs):
        lead = (1,) * (n == 1)  # conv_transpose1d runs as a 2-D one in PyTorch
        raise RuntimeError(f"Given input size per channel: ({shape_str(lead + ys, ' x ')}"
                           f"). Calculated output size per channel: "
                           f"({shape_str(lead + xs, ' x ')}). Output size is too small")
    order = _layout(n, input, weight, groups)
    out = _conv_transpose(u, weight, bias, Geom(k, stride, dilation, padding, xs, ys, groups),
                          order)
    return out.squeeze(0) if unbatched else out


# -- public functions ---------------------------------------------------------------------------

@register("conv1d", method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over ``(N, C, L)`` (or unbatched ``(C, L)``) input."""
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups)


@register("conv2d", method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) input."""
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups)


@register("conv3d", method=False)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input."""
    return _convnd(3, input, weight, bias, stride, padding, dilation, groups)


@register("conv_transpose1d", method=False)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution ("deconvolution"); weight is ``(Cin, Cout/groups, k)``."""
    return _conv_transposend(1, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


@register("conv_transpose2d", method=False)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution; weight is ``(Cin, Cout/groups, kH, kW)``."""
    return _conv_transposend(2, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


@register("conv_transpose3d", method=False)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution; weight is ``(Cin, Cout/groups, kD, kH, kW)``."""
    return _conv_transposend(3, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def _fold_pair(value, fname: str, arg: str, pos: int) -> tuple:
    """``nn.functional._pair(value)`` as ATen's ``int[2]`` argument takes it, with the
    TypeError of its argument parser and its length check."""
    if value.__class__ is int:
        return (value, value)
    vals = tuple(value) if hasattr(value, "__iter__") else (value, value)
    if len(vals) == 2 and vals[0].__class__ is int and vals[1].__class__ is int:
        return vals
    for i, v in enumerate(vals):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be tuple of "
                            f"ints, but found element of type {type(v).__name__} at pos {i}")
    if len(vals) != 2:
        raise RuntimeError(f"It is expected {arg} equals to 2, but got size {len(vals)}")
    return tuple(int(v) for v in vals)


def _fold_geom(fname, kernel_size, dilation, padding, stride, pos):
    """``(k, d, p, s)`` of ``im2col``/``col2im`` (``pos``: the parser position of
    ``kernel_size``), with PyTorch's checks of their values in ``fname``'s order."""
    k = _fold_pair(kernel_size, fname, "kernel_size", pos)
    d = _fold_pair(dilation, fname, "dilation", pos + 1)
    p = _fold_pair(padding, fname, "padding", pos + 2)
    s = _fold_pair(stride, fname, "stride", pos + 3)
    if min(k) > 0 and min(d) > 0 and min(p) >= 0 and min(s) > 0:
        return k, d, p, s
    checks = [(min(k) <= 0, f"kernel size should be greater than zero, but got kernel_height: "
                            f"{k[0]} kernel_width: {k[1]}"),
              (min(d) <= 0, f"dilation should be greater than zero, but got dilation_height: "
                            f"{d[0]} dilation_width: {d[1]}"),
              (min(p) < 0, f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}"),
              (min(s) <= 0, f"stride should be greater than zero, but got stride_height: "
                            f"{s[0]} stride_width: {s[1]}")]
    if fname == "col2im":  # its own order: kernel, stride, dilation, padding
        checks = [checks[0], checks[3], checks[1], checks[2]]
    for bad, message in checks:
        if bad:
            raise RuntimeError(message)
    return k, d, p, s


def _fold_dtype(input, kernel):
    dt = input._data.dtype
    if dt.kind in "iu":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt)}'")


@register("im2col", function=False, method=False)
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks (``F.unfold``): ``(N, C, H, W)`` -> ``(N, C*kH*kW, L)``."""
    k, d, p, s = _fold_geom("im2col", kernel_size, dilation, padding, stride, 2)
    shape = input._data.shape
    nd = len(shape)
    if nd < 3:  # PyTorch reads input.size(1) and input.size(2) first
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {min(nd, 2)})")
    if not ((nd == 3 and shape[0] and shape[1] and shape[2]) or
            (nd == 4 and shape[1] and shape[2] and shape[3])):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"[{shape_str(shape)}]")
    x = input.unsqueeze(0) if nd == 3 else input
    xs = x._data.shape[2:]
    y = tuple(out_size(xs[i], k[i], s[i], d[i], p[i], p[i]) for i in range(2))
    if min(y) < 1:
        raise RuntimeError(f"Given input with spatial size ({shape_str(xs)}), "
                           f"kernel_size=({shape_str(k)}), dilation=({shape_str(d)}), "
                           f"padding=({shape_str(p)}), calculated shape of the array of "
                           f"sliding blocks as ({shape_str(y)}), but its components must be "
                           "at least one.")
    _fold_dtype(input, "im2col_out_cpu")
    out = _im2col(x, Geom(k, s, d, p, tuple(xs), y))
    return out.squeeze(0) if nd == 3 else out


@register("col2im", function=False, method=False)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding blocks into a tensor, summing overlaps (``F.fold``)."""
    xs = _fold_pair(output_size, "col2im", "output_size", 2)
    k, d, p, s = _fold_geom("col2im", kernel_size, dilation, padding, stride, 3)
    shape = input._data.shape
    nd = len(shape)
    if nd not in (2, 3) or 0 in shape[nd - 2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"[{shape_str(shape)}]")
    c = input.unsqueeze(0) if nd == 2 else input
    K = k[0] * k[1]
    if c._data.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={c._data.shape[1]} "
                           f"and kernel_size=({shape_str(k)}).")
    y = tuple(out_size(xs[i], k[i], s[i], d[i], p[i], p[i]) for i in range(2))
    L = y[0] * y[1]
    if c._data.shape[2] != L:
        raise RuntimeError(f"Given output_size=({shape_str(xs)}), kernel_size=({shape_str(k)}), "
                           f"dilation=({shape_str(d)}), padding=({shape_str(p)}), "
                           f"stride=({shape_str(s)}), expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {y[0]} * {y[1]} = "
                           f"{L}, but got input.size(2)={c._data.shape[2]}.")
    if min(y) < 1:
        raise RuntimeError(f"Given output_size=({shape_str(xs)}), kernel_size=({shape_str(k)}), "
                           f"dilation=({shape_str(d)}), padding=({shape_str(p)}), "
                           f"stride=({shape_str(s)}), calculated shape of the array of sliding "
                           f"blocks as ({shape_str(y)}), which is too small (non-positive)")
    if min(xs) < 1:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: "
                           f"output_size=({shape_str(xs)}).")
    _fold_dtype(input, "col2im_out_cpu")
    out = _col2im(c, Geom(k, s, d, p, xs, y))
    return out.squeeze(0) if nd == 2 else out

