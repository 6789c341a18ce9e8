"""Activation kernels of ``torch.nn.functional``: each is one fused NumPy expression forward
and one recorded node whose backward is written with Tensor ops (so it differentiates again).

``relu`` and ``threshold_backward`` live in ``pointwise.py``; ``sigmoid``/``tanh`` too. Ops that
PyTorch exposes only as ``F.<name>`` are registered with ``function=False, method=False`` and
imported from here by ``ember.nn.functional``.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from .. import _dtype, _native
from .. import _memory_format as _mf
from .._device import check_same_device, fused_kernel, xp_of
from .._dtype import scalar_type_name
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record, result
from . import _special
from ._casts import cast_to
from ._factories import sum_to_size
from ._inplace import make_inplace
from ._promotion import wrap_dim
from .pointwise import _opmath, threshold_backward
from .reduction import _extreme_of
from .registry import register

__all__ = ["relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu",
           "celu_", "gelu", "silu", "mish", "softplus", "hardswish", "hardsigmoid", "hardtanh",
           "hardtanh_", "prelu", "rrelu", "rrelu_", "glu", "logsigmoid", "softsign",
           "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_", "softmax",
           "log_softmax", "softmin"]

_F32 = np.dtype(np.float32)

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# Branch-free kernels: ``np.where`` over a data-dependent mask is an order of magnitude slower
# than arithmetic here (branch mispredictions), so masks are blended arithmetically. The
# stable sigmoid, softplus and erf are ``_special``'s.

def _leaky_np(a, slope):
    # max(a, s*a) is a where a > 0 and s*a below for s <= 1; min for steeper slopes (into
    # s*a's memory: on large inputs fresh memory is most of the cost)
    t = a * slope
    pick = np.maximum if slope <= 1 else np.minimum
    return pick(a, t) if t.ndim == 0 else pick(a, t, out=t)  # 0-d: NumPy gives a scalar


def _float_input(input: Tensor, kernel: str, ints: bool = False):
    """``input``'s array; PyTorch's NotImplementedError for integer inputs unless ``ints``."""
    d = input._data
    if d.dtype not in _dtype.FLOATING_NP and not ints:
        suffix = "cpu" if d.__class__ is np.ndarray else "cuda"
        name = kernel if kernel.endswith(("Impl", "check")) else f"{kernel}_{suffix}"
        raise NotImplementedError(f'"{name}" not implemented for \'{scalar_type_name(d.dtype)}\'')
    return d


def _const(arr, like: Tensor) -> Tensor:
    """A mask/coefficient array as a graph-free tensor of ``like``'s dtype."""
    return _make(arr.astype(like._data.dtype, copy=False), like._device)


def _activation(name, kernel, fwd, backward, node_name, *, ints=False, grad_np=None,
                unary=False):
    """An elementwise activation ``op(input, *params)``: ``fwd(array, *params)`` forward and
    ``backward(node, grad)`` reading the input from ``node.saved[0]`` and params ``node.ctx``.
    ``unary``: the op takes no params, and says so in its signature ``(input)`` (so that its
    registered front binds ``input`` and its NumPy names, ``x=``).

    ``grad_np(array, *params)``, if given, is the derivative as one array expression: the
    first-order backward (grad mode off) uses it; ``create_graph`` takes the Tensor-op form.
    float16 computes in float32 and rounds once (PyTorch's opmath).
    """
    fwd = _opmath(fwd)
    if grad_np is not None:
        grad_np = _opmath(grad_np)

        def backward(node, g, _tensor_form=backward):
            if GRAD.enabled:
                return _tensor_form(node, g)
            with np.errstate(over="ignore", invalid="ignore"):
                return (g * _const(grad_np(node.saved[0]._data, *node.ctx), g),)

    Node = make_node_class(node_name, backward)

    def op(input, *params):
        d = _float_input(input, kernel, ints)
        with np.errstate(over="ignore", invalid="ignore"):
            r = fwd(d, *params)
        return result(r.astype(input._data.dtype, copy=False), input._device, Node,
                      (input,), (input,), params)

    op.__name__ = op.__qualname__ = name
    op._node = Node
    if unary:
        op.__signature__ = inspect.Signature(
            [inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    return op


def _inplace_variant(fn, name):
    inplace = make_inplace(fn, name)
    inplace.__doc__ = f"In-place ``{fn.__name__}``."
    return inplace


# -- hardtanh / relu6 / leaky_relu / threshold -------------------------------------------------

def _hardtanh_bw(node, g):
    x = node.saved[0]
    lo, hi = node.ctx
    return (g * _const((x._data > lo) & (x._data < hi), g),)


_hardtanh = _activation("hardtanh", "hardtanh", lambda a, lo, hi: a.clip(lo, hi),
                        _hardtanh_bw, "HardtanhBackward0", ints=True)


@register("hardtanh", function=False, method=False)
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(input, min_val, max_val)``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    kind = input._data.dtype.kind
    if kind == "b" or kind == "c":
        if kind == "b":
            raise RuntimeError("Bool inputs not supported for hardtanh")
        raise NotImplementedError("clamp is not supported for complex types")
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return _hardtanh(input, min_val, max_val)


hardtanh_ = _inplace_variant(hardtanh, "hardtanh_")


@register("relu6", function=False, method=False)
def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky_bw(node, g):
    x = node.saved[0]
    slope = node.ctx[0]
    if g.__class__ is not Tensor:  # batched by vmap: through the dispatching product
        xp = xp_of(x)
        coef = xp.where(x._data > 0, 1.0, slope).astype(g._data.dtype)
        return (g * _make(coef, g._device),)
    gd = g._data
    xp = xp_of(gd)
    # the coefficient, 1 or slope in g's dtype, picked by the 0/1 mask (one array, no float64
    # temporaries); the product into it unless the backward is being recorded
    coef = xp.asarray(xp.asarray([slope, 1.0], dtype=gd.dtype)[(x._data > 0).view(xp.uint8)])
    if g.requires_grad and GRAD.enabled:
        return (g * _make(coef, g._device),)
    xp.multiply(coef, gd, out=coef)
    return (_make(coef, g._device),)


_leaky = _activation("leaky_relu", "leaky_relu", _leaky_np,
                     _leaky_bw, "LeakyReluBackward0")


def _leaky_negative_inplace_bw(node, g):
    raise RuntimeError(
        "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
        "supported. This is caused by calling in-place forward function with a negative slope, "
        "please call out-of-place version instead. File an issue at "
        "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
        "backward calculation with negative slope")


_leaky_negative_inplace = _activation("leaky_relu", "leaky_relu", _leaky_np,
                                      _leaky_negative_inplace_bw, "LeakyReluBackward1")


@register("leaky_relu", function=False, method=False)
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, else ``negative_slope * input``."""
    if inplace:
        return leaky_relu_(input, negative_slope)
    return _leaky(input, negative_slope)


def _leaky_for_inplace(input, negative_slope=0.01):
    if negative_slope < 0:  # its in-place backward is an error in PyTorch
        return _leaky_negative_inplace(input, negative_slope)
    return _leaky(input, negative_slope)


_leaky_for_inplace.__name__ = _leaky_for_inplace.__qualname__ = "leaky_relu"
leaky_relu_ = _inplace_variant(_leaky_for_inplace, "leaky_relu_")


def _threshold_np(a, t, v):
    # PyTorch's ``x <= threshold ? value : x``: NaN is not below the threshold and stays NaN
    return (np if a.__class__ is np.ndarray else xp_of(a)).where(a <= t, v, a)


def _threshold_bw(node, g):
    return (threshold_backward(g, node.saved[0], node.ctx[0]),)


_threshold = _activation("threshold", "threshold", _threshold_np,
                         _threshold_bw, "ThresholdBackward0", ints=True)


@register("threshold", out=True, method=False)
def threshold(input, threshold, value, inplace=False):
    """``input`` where ``input > threshold``, else ``value``."""
    kind = input._data.dtype.kind
    if kind == "b" or kind == "c":
        _float_input(input, "threshold")
    if inplace:
        return threshold_(input, threshold, value)
    return _threshold(input, threshold, value)


threshold_ = register("threshold_", method=False)(_inplace_variant(threshold, "threshold_"))


# -- elu family --------------------------------------------------------------------------------

def _elu_np(a, alpha, scale, input_scale):
    return np.maximum(a, 0) * scale + np.expm1(np.minimum(a, 0) * input_scale) * (alpha * scale)


def _elu_bw(node, g):
    x = node.saved[0]
    alpha, scale, input_scale = node.ctx
    pos = _const(x._data > 0, g)
    # exp of the clamped input: no overflow on the positive side, where it is masked out
    neg = (x * input_scale).clamp(max=0).exp() * (alpha * scale * input_scale)
    return (g * (pos * scale + (1 - pos) * neg),)


def _elu_grad_np(a, alpha, scale, input_scale):
    pos = a > 0
    return pos * scale + ~pos * (np.exp(np.minimum(a, 0) * input_scale)
                                 * (alpha * scale * input_scale))


_elu = _activation("elu", "elu", _elu_np, _elu_bw, "EluBackward0", grad_np=_elu_grad_np)
_celu = _activation("celu", "elu", _elu_np, _elu_bw, "CeluBackward0", grad_np=_elu_grad_np)


@register("elu", function=False, method=False)
def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    if inplace:
        return elu_(input, alpha)
    return _elu(input, alpha, 1.0, 1.0)


elu_ = _inplace_variant(elu, "elu_")


@register("selu", method=False)
def selu(input, inplace=False):
    """``scale * elu(input, alpha)`` with the self-normalising constants."""
    if inplace:
        return selu_(input)
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


selu_ = register("selu_", method=False)(_inplace_variant(selu, "selu_"))


@register("celu", method=False)
def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return celu_(input, alpha)
    return _celu(input, alpha, 1.0, 1.0 / alpha)


celu_ = register("celu_", method=False)(_inplace_variant(celu, "celu_"))


# -- smooth activations ------------------------------------------------------------------------

def _gelu_float64(x, out, deriv=None):
    """``gelu(x)`` into ``out`` and, if given, ``gelu'(x)`` into ``deriv``: float64 blocks
    (``_special.blocked``), erf exact to rounding."""
    s = _special.erf_f64(x * _SQRT1_2)
    s += 1
    np.multiply(x, s, out=out)
    out *= 0.5
    if deriv is not None:
        s *= 0.5
        pdf = np.multiply(x, x)
        pdf *= -0.5
        np.exp(pdf, out=pdf)
        pdf *= x
        pdf *= _INV_SQRT_2PI
        np.add(s, pdf, out=deriv)


def _gelu_arrays(a, with_grad):
    """``gelu(a)`` of a float32 or float64 array (exact form), and ``gelu'(a)`` when
    ``with_grad`` (else None): blockwise, in cache (``_special.blocked``)."""
    shape = a.shape
    if not shape:  # NumPy's ufuncs give a 0-dim array's result as a scalar: work in 1-d
        a = a.reshape(1)
    order = _mf.dense_order(a)
    if order is not None:  # in memory order: the results keep a dense input's layout
        back = _mf.inverse(order)
        y, d = _gelu_arrays(a.transpose(order), with_grad)
        return y.transpose(back), None if d is None else d.transpose(back)
    native = (_native.kernel("ember_gelu_with_grad_f32" if with_grad else "ember_gelu_f32")
              if a.dtype == np.float32 and a.__class__ is np.ndarray else None)
    if native is not None:  # one fused pass (kernels.c), same polynomial as the NumPy kernel
        if with_grad:
            y, d = _native.pointwise(native, 2, a)
        else:
            y, d = _native.pointwise(native, 1, a), None
    elif a.dtype == np.float32:
        if with_grad:
            y, d = _special.blocked(_special.gelu_with_grad_float32_into, 2, a)
        else:
            y, d = _special.blocked(_special.gelu_float32_into, 1, a), None
    elif with_grad:
        y, d = _special.blocked(_gelu_float64, 2, a, scratch=0)
    else:
        y, d = _special.blocked(_gelu_float64, 1, a, scratch=0), None
    if not shape:
        y = y.reshape(shape)
        d = None if d is None else d.reshape(shape)
    return y, d


def _gelu_np(a, approximate):
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(_GELU_K * (a + 0.044715 * a * a * a)))
    return _gelu_arrays(a, False)[0]


def _gelu_tensor_bw(node, g):
    x = node.saved[0]
    if node.ctx[0] == "tanh":
        inner = _GELU_K * (x + 0.044715 * x * x * x)
        t = inner.tanh()
        d_inner = _GELU_K * (1 + 3 * 0.044715 * x * x)
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner),)
    cdf = 0.5 * (1 + (x * _SQRT1_2).erf())
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return (g * (cdf + x * pdf),)


def _gelu_grad_np(a, approximate):
    if approximate == "tanh":
        t = np.tanh(_GELU_K * (a + 0.044715 * a * a * a))
        return 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * (_GELU_K * (1 + 3 * 0.044715 * a * a))
    return _gelu_arrays(a, True)[1]


_gelu_grad_opmath = _opmath(_gelu_grad_np)
_gelu_opmath = _opmath(_gelu_np)


def gelu_forward_arrays(a, approximate: str, with_grad: bool):
    """``(gelu(a), gelu'(a) or None)`` of a float array as the eager op computes them off the
    fused (CUDA) kernel: the exact form with its derivative, in one blockwise pass, when a
    gradient is recorded (float32, float64), else the activation's kernel (opmath). Shared
    with ``ember.compile``'s lowering, which must give the same bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        if approximate == "none" and with_grad and a.dtype in (np.float32, np.float64):
            return _gelu_arrays(a, True)
        return _gelu_opmath(a, approximate).astype(a.dtype, copy=False), None


def gelu_backward_arrays(gd, x, deriv, approximate: str):
    """The input's gradient (an array) from the output's ``gd`` as the first-order backward
    computes it: ``gd`` times the derivative the forward made (``deriv``), or one array pass
    from the input ``x``, fused with the product for float32. Shared with compile."""
    if deriv is not None:  # gelu'(x), computed by the forward
        if gd.shape == deriv.shape and gd.dtype == deriv.dtype:
            r = _native.ufunc(np.multiply, gd, deriv)
            if r is None:
                r = np.multiply(gd, deriv)
        else:
            r = gd * deriv.astype(gd.dtype, copy=False)
        return np.asarray(r) if isinstance(r, np.generic) else r
    with np.errstate(over="ignore", invalid="ignore"):
        if (approximate == "none" and x.dtype == np.float32 and gd.dtype == np.float32
                and gd.shape == x.shape):
            native = (_native.kernel("ember_gelu_backward_f32")
                      if x.__class__ is np.ndarray and gd.__class__ is np.ndarray else None)
            if native is not None:
                return _native.pointwise(native, 1, x, gd)
            return _special.blocked(_special.gelu_backward_float32_into, 1, x, gd)
        r = gd * _gelu_grad_opmath(x, approximate).astype(gd.dtype, copy=False)
    return np.asarray(r) if isinstance(r, np.generic) else r


def _gelu_bw(node, g):
    """Tensor ops under ``create_graph`` (they differentiate again); else the arrays'
    product (``gelu_backward_arrays``)."""
    if GRAD.enabled or g.__class__ is not Tensor:  # (batched by vmap: the tensor ops too)
        return _gelu_tensor_bw(node, g)
    saved = node.saved
    deriv = saved[1] if len(saved) > 1 else None
    return (_make(gelu_backward_arrays(g._data, saved[0]._data, deriv, node.ctx[0]),
                  g._device),)


_gelu = _activation("gelu", "GeluKernelImpl", _gelu_np, _gelu_bw, "GeluBackward0")


@register("gelu", out=True, function=False, method=False)
def gelu(input, approximate="none"):
    """Gaussian error linear unit, ``x * Phi(x)`` (``approximate='tanh'``: tanh formula).

    With a gradient to record (exact form, float32 or float64 on the CPU), the forward also
    computes ``gelu'(x)`` in the same cache-sized blocks and saves it (one array of the
    input's size, besides the input), so that the backward is one product; the input stays
    saved for ``create_graph``."""
    if approximate not in ("none", "tanh"):
        if not isinstance(approximate, str):
            raise TypeError(f"gelu(): argument 'approximate' must be str, not "
                            f"{type(approximate).__name__}")
        raise RuntimeError("approximate argument must be either none or tanh.")
    d = input._data
    if input._device.type != "cpu" and d.dtype in _dtype.FLOATING_NP:
        fused = fused_kernel(input._device, "gelu")
        if fused is not None:  # one elementwise kernel (CUDA); the backward reads the input
            return result(fused(d, approximate), input._device, _gelu._node,
                          (input,), (input,), (approximate,))
    if (approximate == "none" and input.requires_grad and GRAD.enabled
            and (d.dtype == np.float32 or d.dtype == np.float64)):
        y, deriv = gelu_forward_arrays(d, approximate, True)
        return record(_gelu._node, _make(y, input._device), (input,), (input, deriv),
                      (approximate,))
    return _gelu(input, approximate)


def _silu_np(a):
    return a * _special.sigmoid(a)


def _silu_grad_np(a):
    s = _special.sigmoid(a)
    return s * (1 + a * (1 - s))


def _silu_bw(node, g):
    x = node.saved[0]
    s = x.sigmoid()
    return (g * s * (1 + x * (1 - s)),)


_silu = _activation("silu", "silu", _silu_np, _silu_bw, "SiluBackward0", grad_np=_silu_grad_np,
                    unary=True)


@register("silu", function=False, method=False)
def silu(input):
    """``input * sigmoid(input)``."""
    if input._data.dtype.kind == "c":  # PyTorch's kernel takes complex inputs
        return input * input.sigmoid()
    return _silu(input)


def _softplus_np(a, beta, threshold):
    z = a * beta
    r = _special.softplus(z)
    r /= beta
    linear = z > threshold
    return xp_of(a).where(linear, a, r)  # mostly one way: predictable, so fast


def _softplus_bw(node, g):
    x = node.saved[0]
    beta, thr = node.ctx
    z = x * beta
    linear = _const(z._data > thr, g)
    return (g * (linear + (1 - linear) * z.sigmoid()),)


def _softplus_grad_np(a, beta, threshold):
    z = a * beta
    return xp_of(z).where(z > threshold, 1.0, _special.sigmoid(z))


_softplus = _activation("softplus", "softplus", _softplus_np, _softplus_bw, "SoftplusBackward0",
                        grad_np=_softplus_grad_np)


@register("softplus", out=True, function=False, method=False)
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return _softplus(input, beta, threshold)


def _mish_np(a):
    return a * np.tanh(_special.softplus(a))


def _mish_grad_np(a):
    t = np.tanh(_special.softplus(a))
    return t + a * _special.sigmoid(a) * (1 - t * t)


def _mish_bw(node, g):
    x = node.saved[0]
    t = softplus(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


mish = register("mish", function=False, method=False)(
    _activation("mish", "mish", _mish_np, _mish_bw, "MishBackward0", grad_np=_mish_grad_np,
                unary=True))
mish.__doc__ = "``input * tanh(softplus(input))``."


def _logsigmoid_bw(node, g):
    return (g * (-node.saved[0]).sigmoid(),)


logsigmoid = register("logsigmoid", out=True, function=False, method=False)(
    _activation("logsigmoid", "log_sigmoid", _special.log_sigmoid, _logsigmoid_bw,
                "LogSigmoidBackward0", grad_np=lambda a: _special.sigmoid(-a), unary=True))
logsigmoid.__doc__ = "``log(sigmoid(input))``, stable for large ``|input|``."


# -- piecewise-linear ones ---------------------------------------------------------------------

def _hardswish_bw(node, g):
    x = node.saved[0]
    xd = x._data
    # the quadratic piece (open, as PyTorch's backward: 0 at -3, 1 at 3), differentiable in x
    mid = _const((xd > -3) & (xd < 3), g)
    return (g * (_const(xd >= 3, g) + mid * (x / 3 + 0.5)),)


hardswish = register("hardswish", function=False, method=False)(
    _activation("hardswish", "hardswish", lambda a: a * (a + 3).clip(0, 6) / 6,
                _hardswish_bw, "HardswishBackward0", unary=True))
hardswish.__doc__ = "``x * relu6(x + 3) / 6``."


def _hardsigmoid_bw(node, g):
    x = node.saved[0]._data
    return (g * _const(((x > -3) & (x < 3)) / 6.0, g),)


hardsigmoid = register("hardsigmoid", function=False, method=False)(
    _activation("hardsigmoid", "hardsigmoid", lambda a: (a + 3).clip(0, 6) / 6,
                _hardsigmoid_bw, "HardsigmoidBackward0", unary=True))
hardsigmoid.__doc__ = "``relu6(x + 3) / 6``."


def _shrink_mask_bw(node, g):
    # the gradient passes outside [-lambd, lambd], NaN included (PyTorch's select)
    return (g * _const(~(np.abs(node.saved[0]._data) <= node.ctx[0]), g),)


def _softshrink_np(a, lambd):
    return a - a.clip(-lambd, lambd)


_softshrink = _activation("softshrink", "softshrink_check", _softshrink_np, _shrink_mask_bw,
                          "SoftshrinkBackward0")


def _hardshrink_np(a, lambd):
    out = a * (np.abs(a) > lambd)  # NaN stays NaN (NaN * 0), as PyTorch's select keeps it
    out += 0  # -0.0 + 0 is +0.0: a shrunk negative is PyTorch's 0, not -0
    return out


_hardshrink = _activation("hardshrink", "hardshrink", _hardshrink_np, _shrink_mask_bw,
                          "HardshrinkBackward0")


#: the largest finite value of each floating dtype (``softshrink``'s range for ``lambd``)
_SHRINK_MAX = {np.dtype(np.float16): 65504.0, np.dtype(np.float32): 3.4028234663852886e38,
               np.dtype(np.float64): 1.7976931348623157e308,
               _dtype.bfloat16.np: 3.3895313892515355e38}


@register("softshrink", out=True, function=False, method=False)
def softshrink(input, lambd=0.5):
    """Shrink towards 0 by ``lambd``; 0 inside ``[-lambd, lambd]``."""
    dt = input._data.dtype
    if not 0 <= lambd <= _SHRINK_MAX.get(dt, math.inf):  # NaN too
        _float_input(input, "softshrink_check")
        raise RuntimeError(f"lambda must be in range [0, {_SHRINK_MAX[dt]:g}] for input dtype "
                           f"{scalar_type_name(dt)}, but found {float(lambd):g}")
    return _softshrink(input, lambd)


@register("hardshrink", out=True)
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0."""
    return _hardshrink(input, lambd)


def _to_float(input, name):
    """softsign and tanhshrink are composites in PyTorch: integer inputs compute in float,
    complex ones in complex (``None``: compose from Tensor ops); bool ones are refused by
    their first op."""
    kind = input._data.dtype.kind
    if kind == "f" or input._data.dtype in _dtype.FLOATING_NP:
        return input
    if kind == "c":
        return None
    if kind == "b":
        if name == "softsign":
            raise NotImplementedError('"abs_cpu" not implemented for \'Bool\'')
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return cast_to(input, None, _dtype.get_default_dtype(), False)


def _softsign_bw(node, g):
    d = 1 + node.saved[0].abs()
    return (g / (d * d),)


_softsign = _activation("softsign", "softsign", lambda a: a / (1 + np.abs(a)), _softsign_bw,
                        "SoftsignBackward0")


@register("softsign", function=False, method=False)
def softsign(input):
    """``input / (1 + |input|)``."""
    x = _to_float(input, "softsign")
    if x is None:
        return input / (1 + input.abs())
    return _softsign(x)


def _tanhshrink_bw(node, g):
    t = node.saved[0].tanh()
    return (g * t * t,)


_tanhshrink = _activation("tanhshrink", "tanhshrink", lambda a: a - np.tanh(a), _tanhshrink_bw,
                          "TanhshrinkBackward0")


@register("tanhshrink", function=False, method=False)
def tanhshrink(input):
    """``input - tanh(input)``."""
    x = _to_float(input, "tanhshrink")
    if x is None or x._data.dtype in _dtype.OPMATH:  # complex; float16 and bfloat16 as
        return x - x.tanh() if x is not None else input - input.tanh()  # PyTorch rounds
    return _tanhshrink(x)


# -- prelu / rrelu / glu -----------------------------------------------------------------------

def _prelu_weight_shape(input, weight):
    nw = weight._data.size
    channels = input._data.shape[1] if input._data.ndim >= 2 else 1
    if nw != 1 and nw != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {nw} and channel size = {channels}.")
    if nw == 1 or input._data.ndim < 2:
        return ()
    return (nw,) + (1,) * (input._data.ndim - 2)


def _prelu_bw(node, g):
    x, w = node.saved
    wshape = node.ctx
    pos = _const(x._data > 0, g)
    wb = w.reshape(wshape) if wshape else w.reshape(())
    gx = g * (pos + (1 - pos) * wb) if node.needs_grad(0) else None
    gw = None
    if node.needs_grad(1):
        gw = sum_to_size(g * x * (1 - pos), wshape if wshape else (1,) * x.dim())
        gw = gw.reshape(w._data.shape)
    return gx, gw


PreluKernelBackward0 = make_node_class("PreluKernelBackward0", _prelu_bw)


@register("prelu")
def prelu(input, weight):
    """``input`` where positive, else ``weight * input`` (``weight`` per channel, dim 1)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight._data.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight._data.ndim}")
    if weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{scalar_type_name(input._data.dtype)} and "
                           f"{scalar_type_name(weight._data.dtype)}")
    d = _float_input(input, "prelu")
    dev = check_same_device(input, weight)
    wshape = _prelu_weight_shape(input, weight)
    w = weight._data.reshape(wshape) if wshape else weight._data.reshape(())
    r = (np.maximum(d, 0) + np.minimum(d, 0) * w).astype(d.dtype, copy=False)
    return result(r, dev, PreluKernelBackward0, (input, weight), (input, weight), wshape)


def _rrelu_bw(node, g):
    return (g * node.ctx,)


RreluWithNoiseBackward0 = make_node_class("RreluWithNoiseBackward0", _rrelu_bw)


@register("rrelu", method=False, random=True)
def _rrelu_op(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """``torch.rrelu`` (ATen's signature, ``generator=`` drawing the slopes): leaky relu
    with a slope drawn from ``U(lower, upper)`` per element when training (the mean slope
    otherwise)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    d = _float_input(input, "rrelu_with_noise_out")
    from .._factory import place
    from .._random import _rng
    from .._torch_rng import TorchRNG

    g = _rng(generator, input._device)
    if isinstance(g, TorchRNG):
        # ATen's _rrelu_with_noise_train: in C order, a float64 uniform in [lower, upper)
        # (the bounds in the accumulate type; x * (to - from) + from, unfused) for each
        # element <= 0 only, kept as a slope in the accumulate type; the others' slope is 1
        h = np.asarray(input._host())
        work = _dtype.opmath_np(h.dtype)
        neg = h <= 0
        lo, hi = float(work.type(lower)), float(work.type(upper))
        slopes = np.ones(h.shape, d.dtype)
        slopes[neg] = (g.unit(int(np.count_nonzero(neg)), np.float64) * (hi - lo) + lo
                       ).astype(work).astype(d.dtype)
        noise = _make(place(slopes, input._device)._data, input._device)
    else:
        slopes = g.uniform(lower, upper, d.shape).astype(d.dtype)
        slopes = place(slopes, input._device)._data
        noise = _make(xp_of(input).where(d >= 0, d.dtype.type(1), slopes), input._device)
    return result(d * noise._data, input._device, RreluWithNoiseBackward0, (input,), (), noise)


_rrelu_op.__name__ = _rrelu_op.__qualname__ = "rrelu"
_rrelu_op_ = register("rrelu_", method=False, random=True)(
    _inplace_variant(_rrelu_op, "rrelu_"))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky relu with a slope drawn from ``U(lower, upper)`` per element when training (the
    mean slope otherwise): ``F.rrelu``'s signature (``torch.rrelu`` is the op, which takes
    ``generator=`` where this takes ``inplace``)."""
    if inplace:
        return _rrelu_op_(input, lower, upper, training)
    return _rrelu_op(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place ``rrelu`` (``F.rrelu_``)."""
    return _rrelu_op_(input, lower, upper, training)


def _glu_bw(node, g):
    x = node.saved[0]
    dim = node.ctx
    a, b = x.chunk(2, dim)
    s = b.sigmoid()
    from .shape import cat

    return (cat([g * s, g * a * s * (1 - s)], dim),)


GluBackward0 = make_node_class("GluBackward0", _glu_bw)


@register("glu", function=False, method=False)
def glu(input, dim=-1):
    """``a * sigmoid(b)`` where ``a, b`` are the halves of ``input`` along ``dim``."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = wrap_dim(dim, d.ndim)
    n = d.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {n}")
    _float_input(input, "glu")
    a, b = xp_of(input).split(d, 2, axis=dim)
    with np.errstate(over="ignore"):
        r = a * _special.sigmoid(b)
    return result(r.astype(input._data.dtype, copy=False), input._device, GluBackward0,
                  (input,), (input,), dim)


# -- softmax family ----------------------------------------------------------------------------

def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(name, input, dim, dtype, stacklevel):
    if dim is None:
        dim = _get_softmax_dim(name, input._data.ndim, stacklevel + 2)  # two frames deeper
    elif dim.__class__ is not int and (not isinstance(dim, (int, np.integer)) or
                                       isinstance(dim, bool)):
        raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not "
                        f"{type(dim).__name__}")
    if dtype is not None:
        input = cast_to(input, None, dtype, False)
    d = input._data
    if d.dtype not in _dtype.FLOATING_NP:
        kernel = "softmax_lastdim_kernel_impl" if name != "log_softmax" else \
            "log_softmax_lastdim_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(d.dtype)}\'')
    return input, d, wrap_dim(dim, d.ndim)


#: elements per thread at least when the native softmax splits its rows over Ember's threads
_SOFTMAX_GRAIN = 1 << 16


def _native_rows(d, axis):
    """``(rows, n)`` when the native float32 kernels take softmax of ``d`` along ``axis``: a
    C-contiguous float32 NumPy array, not empty, along its last axis; else None."""
    if (d.__class__ is np.ndarray and d.dtype is _F32 and d.ndim and axis == d.ndim - 1
            and d.size and d.flags.c_contiguous):
        n = d.shape[-1]
        return d.size // n, n
    return None


def _native_softmax(d, axis, log, keep=False):
    """Softmax (``log``: log-softmax) of ``d`` along its last axis in one fused pass set per
    row (kernels.c), rows split over Ember's intra-op threads; with ``keep`` (log-softmax)
    ``(y, e, z)`` as ``_log_softmax_parts``. None where the kernels do not apply. NumPy's
    ``max`` along a short last axis loops per row: attention's (32, 4, 16, 16) scores took
    160 us for the max alone, the whole softmax 275 us; fused, 20 us."""
    shape = _native_rows(d, axis)
    kernel = None if shape is None else _native.kernel("ember_softmax_f32")
    if kernel is None:
        return None
    rows, n = shape
    y = np.empty(d.shape, np.float32)
    e = np.empty(d.shape, np.float32) if keep else None
    z = np.empty(d.shape[:-1] + (1,), np.float32) if keep else None
    address = _native.address  # ~0.2 us an array against ctypes.data's ~1 us
    pe, pz = (None, None) if not keep else (address(e), address(z))
    grain = -(-_SOFTMAX_GRAIN // n)
    if rows < 2 * grain:  # one block (by_rows' own test), called directly: ~0.6 us less
        kernel(address(d), address(y), pe, pz, rows, n, 1 if log else 0)
    else:
        _native.by_rows(kernel, rows, grain,
                        [(address(d), 4 * n), (address(y), 4 * n), (pe, 4 * n), (pz, 4)],
                        n, 1 if log else 0)
    return (y, e, z) if keep else y


def _softmax_np(d, axis, log):
    if d.ndim == 0:
        xp = xp_of(d)
        return xp.zeros_like(d) if log else xp.ones_like(d)
    if d.size == 0:
        return d.copy()
    native = _native_softmax(d, axis, log)
    if native is not None:
        return native
    if log:
        return _log_softmax_parts(d, axis)[0]
    s = d - _extreme_of(d, (axis,), True, True)
    np.exp(s, out=s)
    s /= s.sum(axis, keepdims=True)
    return s


def _log_softmax_parts(d, axis):
    """``(log_softmax, e, z)`` with ``e = exp(d - max)`` and ``z = e.sum(axis)``: the
    backward's softmax is ``e / z``, so keeping them spares it an ``exp`` pass."""
    native = _native_softmax(d, axis, True, keep=True)
    if native is not None:
        return native
    s = d - _extreme_of(d, (axis,), True, True)
    e = np.exp(s)
    z = e.sum(axis, keepdims=True)
    s -= np.log(z)
    return s, e, z


def _fused_softmax_bw(node, g, log):
    """The backward kernel of the device (CUDA), or None."""
    if g._device.type == "cpu" or node.ctx.__class__ is not int:
        return None
    k = fused_kernel(g._device, "softmax_backward")
    return None if k is None else _make(k(node.out_data, g._data, node.ctx, log=log), g._device)


def _softmax_bw(node, g):
    # no graph of the gradient (nor a gradient batched by vmap): three array passes, no
    # temporaries kept
    if not GRAD.enabled and g.__class__ is Tensor:
        fused = _fused_softmax_bw(node, g, False)
        if fused is not None:
            return (fused,)
        y = node.out_data
        shape = _native_rows(y, node.ctx)
        kernel = None if shape is None else _native.kernel("ember_softmax_backward_f32")
        if kernel is not None and g._data.__class__ is np.ndarray and \
                g._data.dtype == np.float32:
            return (_make(_native_softmax_bw(kernel, y, g._data, *shape), g._device),)
        y = _dtype.widen(y)  # float16/bfloat16 in float32, rounded once
        gy = _dtype.widen(g._data) * y
        gy -= y * gy.sum(node.ctx, keepdims=True)
        return (_make(_dtype.narrow(gy, g._data.dtype), g._device),)
    y = node.output()
    dim = node.ctx
    return (y * (g - (g * y).sum(dim, keepdim=True)),)


def _native_softmax_bw(kernel, y, g, rows, n):
    """``g*y - y * sum(g*y)`` along the last axis in one pass set per row (kernels.c)."""
    g = np.ascontiguousarray(g)
    out = np.empty(y.shape, np.float32)
    _native.by_rows(kernel, rows, -(-_SOFTMAX_GRAIN // n),
                    [(a.ctypes.data, 4 * n) for a in (y, g, out)], n)
    return out


def _log_softmax_bw(node, g):
    # ``g - softmax * g.sum(dim)``, in place in the softmax's array (a gradient batched by
    # vmap: the Tensor ops)
    if not GRAD.enabled and g.__class__ is Tensor:
        fused = _fused_softmax_bw(node, g, True)
        if fused is not None:
            return (fused,)
        dt = g._data.dtype
        gd = _dtype.widen(g._data)  # float16/bfloat16 in float32, rounded once
        xp = xp_of(g)
        if not gd.ndim:  # one element: NumPy's ufuncs give scalars, no out=
            r = gd - np.exp(_dtype.widen(node.out_data)) * gd
            return (_make(_dtype.narrow(r, dt), g._device),)
        if node.saved:  # (e, z) from the forward: softmax = e / z (freed with the graph)
            e, z = node.saved
            e = e * (gd.sum(node.ctx, keepdims=True) / z)
        else:
            e = xp.exp(_dtype.widen(node.out_data))
            e *= gd.sum(node.ctx, keepdims=True)
        return (_make(_dtype.narrow(xp.subtract(gd, e, out=e), dt), g._device),)
    y = node.output()
    dim = node.ctx
    return (g - y.exp() * g.sum(dim, keepdim=True),)


SoftmaxBackward0 = make_node_class("SoftmaxBackward0", _softmax_bw)
LogSoftmaxBackward0 = make_node_class("LogSoftmaxBackward0", _log_softmax_bw)


def _softmax_op(name, log, node_cls, input, dim, dtype, stacklevel):
    if isinstance(stacklevel, _dtype.dtype):  # ``F.softmax(x, dim, dtype)`` positionally
        stacklevel, dtype = 3, stacklevel
    input, d, axis = _softmax_input(name, input, dim, dtype, stacklevel)
    graph = input.requires_grad and GRAD.enabled
    dt = d.dtype
    parts = None
    fused = fused_kernel(input._device, "softmax") if input._device.type != "cpu" else None
    # float32 along the last axis: the C kernel, outside NumPy's error state (~1 us to set)
    r = _native_softmax(d, axis, log) if fused is None and not (graph and log) else None
    if r is None:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if fused is not None:  # one kernel per row (CUDA); log's backward re-exponentiates
                r = fused(d, axis if d.ndim else 0, log=log)
            elif graph and log and d.ndim and d.size:  # float16/bfloat16 in float32, rounded
                r, *parts = _log_softmax_parts(_dtype.widen(d), axis)  # once
            else:
                r = _softmax_np(_dtype.widen(d), axis if d.ndim else 0, log)
        r = _dtype.narrow(r, dt)
    if not r.flags.c_contiguous:  # PyTorch's kernels write a contiguous output, whatever
        r = r.copy()  # the input's layout (channels-last, transposed)
    out = _make(r, input._device)
    if graph:
        record(node_cls, out, (input,), (), axis if d.ndim else None, True)
        if parts is not None:
            out.grad_fn.saved = tuple(parts)  # arrays, not tensors: no version check
    return out


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / exp(x).sum(dim)``, numerically stable; ``dtype`` casts the input first
    (``F.softmax``'s signature; ``torch.softmax`` and ``Tensor.softmax`` are the op)."""
    return _softmax_op("softmax", False, SoftmaxBackward0, input, dim, dtype, _stacklevel)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x, dim))`` computed stably (``F.log_softmax``'s signature)."""
    return _softmax_op("log_softmax", True, LogSoftmaxBackward0, input, dim, dtype,
                       _stacklevel)


def _softmax_aten(input, dim, dtype=None):
    """``exp(x) / exp(x).sum(dim)``, numerically stable; ``dtype`` casts the input first."""
    return _softmax_op("softmax", False, SoftmaxBackward0, input, dim, dtype, 3)


def _log_softmax_aten(input, dim, dtype=None):
    """``log(softmax(x, dim))`` computed stably; ``dtype`` casts the input first."""
    return _softmax_op("log_softmax", True, LogSoftmaxBackward0, input, dim, dtype, 3)


# ``torch.softmax(input, dim, dtype)`` and ``Tensor.softmax(dim, dtype)``: ATen's parameters,
# a positional dtype included (F's third parameter is its _stacklevel)
for _fn, _name in ((_softmax_aten, "softmax"), (_log_softmax_aten, "log_softmax")):
    _fn.__name__ = _fn.__qualname__ = _name
    register(_name, out="same")(_fn)


@register("softmin", function=False, method=False)
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input, dim)``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input._data.ndim, _stacklevel)
    if dtype is not None:
        input = cast_to(input, None, dtype, False)
    return softmax(-input, dim)

