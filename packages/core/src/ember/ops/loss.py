"""Loss kernels: the ``torch.nn.functional`` losses (the loss modules build on these).

Where PyTorch has a loss node of its own (``NllLossBackward0``, ``MseLossBackward0``,
``BinaryCrossEntropyBackward0``, ...) the loss is one recorded node of that name: array code
forward, a backward written with Tensor ops so that it is itself differentiable.
``cross_entropy`` is ``nll_loss(log_softmax(input))``, as in PyTorch (its graph is
``NllLossBackward0`` over ``LogSoftmaxBackward0``); with class-index targets and no label
smoothing the two share their work: the log-probabilities are never made, and the
log-softmax's backward is one pass when it receives nll_loss's gradient unchanged.
``ctc_loss`` runs the alpha/beta recursions vectorised over the batch and the extended label
axis (a Python loop over time only). The other losses are short compositions of
differentiable ops, so their gradients (and double gradients) come from those ops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype, _native
from .._device import check_same_device, fused_kernel, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD, no_grad
from ..autograd.graph import make_node_class, record, result
from . import _special
from ._casts import cast_to
from ._promotion import broadcast_shape
from ._signatures import REDUCTION_ENUM, check_binds
from .activation import (
    _SOFTMAX_GRAIN,
    _log_softmax_bw,
    _native_rows,
    log_softmax,
    logsigmoid,
    softplus,
)
from .indexing import AdvancedIndex, scatter_by
from .pointwise import where
from .reduction import _extreme_of
from .registry import register
from .shape import expand

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "poisson_nll_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "gaussian_nll_loss", "ctc_loss",
           "multilabel_margin_loss", "triplet_margin_with_distance_loss"]


# -- reductions ---------------------------------------------------------------------------------

_ENUM = {0: "none", 1: "mean", 2: "sum"}  # ATen's integer reductions (torch.kl_div(..., 1))


def _reduction(reduction, size_average=None, reduce=None, extra=(), invalid=None) -> str:
    """The reduction string, as PyTorch's ``_Reduction.get_enum``: the deprecated
    ``size_average``/``reduce`` pair wins (warned), ``'elementwise_mean'`` is ``'mean'``
    (warned). ``invalid``: the functions that check the string themselves (PyTorch's
    ``reduction + invalid``, a TypeError for a non-string, and no ``'elementwise_mean'``)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=user_stacklevel())
    if reduction in _REDUCTIONS or reduction in extra:
        return reduction
    if invalid is not None:
        raise ValueError(reduction + invalid)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=user_stacklevel())
        return "mean"
    raise ValueError(f"{reduction} is not a valid value for reduction")


_REDUCTIONS = ("none", "mean", "sum")


def _aten_reduction(reduction):
    """ATen's integer reduction (``torch.kl_div(..., 1)``) as its string."""
    return _ENUM.get(reduction, reduction) if isinstance(reduction, int) else reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _not_differentiable(fn_name: str, **tensors) -> None:
    """PyTorch's error for a loss argument that takes no gradient but requires one."""
    if not GRAD.enabled:
        return
    for name, t in tensors.items():
        if t is not None and t.requires_grad:
            raise RuntimeError(f"The function '{fn_name}' is not differentiable with respect to "
                               f"argument '{name}'. This input cannot have requires_grad True.")


def _float_kernel(input, kernel):
    if input._data.dtype not in _dtype.FLOATING_NP:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(input._data.dtype)}'")


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()!r}) that is different to the input "
                      f"size ({input.size()!r}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.",
                      stacklevel=user_stacklevel())


def _sizes(*tensors, attr="size"):
    """PyTorch's Python losses compare ``target.size()`` with ``input.size()`` first (``dim()``
    in margin_ranking_loss): an argument that is not a tensor fails there, in those words.
    For a loss whose own code has already failed."""
    for x in tensors:
        if not isinstance(x, Tensor):
            raise AttributeError(f"'{type(x).__name__}' object has no attribute '{attr}'")


def _refuse(binding, *args):
    """The argument parser's error of ``binding``, the function ``torch.nn.functional`` hands
    these arguments to, when it takes none of them (``ops._signatures``). For a loss whose own
    code has already failed: the loss's own error stands where the parser would bind them."""
    check_binds(binding, args)


def _enum(reduction):
    """``reduction`` as the enum PyTorch's bindings take (any int: only its type is read)."""
    return REDUCTION_ENUM.get(reduction, 1) if isinstance(reduction, str) else reduction


def _weighted_reduce(loss, weight, input, reduction, mean_by_weight=True):
    """``mse_loss``/``l1_loss``/``huber_loss`` with ``weight``: weighted mean divides by
    ``weight.sum()`` (mse, l1) or by the element count (huber), as PyTorch does."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


# -- cross_entropy / nll_loss -------------------------------------------------------------------

def _class_axis(d) -> int:
    return 0 if d.ndim == 1 else 1


def _class_shape(C, ca, ndim):
    return (C,) + (1,) * (ndim - ca - 1)


def _check_index_target(d, t, weight, C, ca):
    """``nll_loss``'s checks, in PyTorch's order (``nll_loss_nd``, then ``nll_loss`` for 1-d
    and 2-d inputs or ``nll_loss2d`` for the others); returns ``(t, kernel)``: the target as
    the kernel reads it and the kernel's name for the input-dtype error."""
    if d.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if d.ndim != 1 and (t.ndim == 0 or t.shape[0] != d.shape[0]):
        raise ValueError(f"Expected input batch_size ({d.shape[0]}) to match target "
                         f"batch_size ({t.shape[0] if t.ndim else 0}).")
    if d.ndim <= 2:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if d.ndim == 1 and t.ndim == 1:
            if t.shape[0] != 1:
                raise ValueError("For 1D input, 1D target must have size 1, but got target "
                                 f"size: {t.shape[0]}")
            t = t.reshape(())  # PyTorch reads a one-element target as a 0-dim one
        _check_target_dtype(t)
        _check_weight(weight, C)
        kernel = "nll_loss_out_frame"
    else:
        expected = d.shape[:ca] + d.shape[ca + 1:]
        if d.ndim == 4:
            if t.ndim != 3:
                raise RuntimeError("only batches of spatial targets supported (3D tensors) but "
                                   f"got targets of dimension: {t.ndim}")
            _check_target_dtype(t)
            if t.shape != expected:
                raise RuntimeError(f"size mismatch (got input: [{shape_str(d.shape)}] , "
                                   f"target: [{shape_str(t.shape)}]")
        else:
            if t.shape != expected:
                raise RuntimeError(f"Expected target size [{shape_str(expected)}], got "
                                   f"[{shape_str(t.shape)}]")
            _check_target_dtype(t)
        if weight is not None and weight._data.size != C:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        kernel = "nll_loss2d_forward_out_frame"
    if weight is not None and weight._data.dtype != d.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(d.dtype)} but found "
                           f"{scalar_type_name(weight._data.dtype)}")
    return t, kernel


def _check_target_dtype(t):
    if t.dtype != np.int64 and t.dtype != np.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{scalar_type_name(t.dtype)}")


def _check_weight(weight, C):
    if weight is not None and weight._data.shape != (C,):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           "classes but got weight tensor of shape: "
                           f"[{shape_str(weight._data.shape)}]")


def _target_index(tc, ca, xp):
    """The advanced index of every row's target entry: ``tc`` at the class axis."""
    n = tc.ndim
    grids = tuple(xp.arange(s).reshape((1,) * i + (s,) + (1,) * (n - i - 1))
                  for i, s in enumerate(tc.shape))
    return grids[:ca] + (tc,) + grids[ca:]


def _index_weights(t, weight, ignore_index, C, dtype, xp):
    """``(tc, w_row)``: targets with ignored entries as 0, and each entry's class weight (0
    where ignored)."""
    valid = t != ignore_index
    tc = xp.where(valid, t, 0).astype(np.int64, copy=False)
    bad = (tc < 0) | (tc >= C)
    if bad.any():
        raise IndexError(f"Target {int(t[bad].ravel()[0])} is out of bounds.")
    if weight is None:
        return tc, valid.astype(dtype)
    return tc, weight._data.reshape(-1).astype(dtype, copy=False)[tc] * valid


def _nll_bw(node, g):
    """``-weight[target] * scale`` at every row's target entry, zeros elsewhere (a scatter,
    so that the gradient is itself differentiable). Below ``cross_entropy``'s log-softmax it
    also tells that node what it scattered (see ``_ce_log_softmax_bw``)."""
    shape, spec, w_row, denom, reduction = node.ctx
    if reduction == "mean":  # a NumPy scalar on the CPU, a 0-dim device array elsewhere
        scale = g / denom if isinstance(denom, np.generic) else g / _make(denom, g._device)
    else:
        scale = g
    values = scale * _make(-w_row, g._device)
    grad = scatter_by(None, spec, values, False, shape=shape)
    below = node.next_functions[0][0]
    if below.__class__ is CrossEntropyLogSoftmaxBackward0 and not GRAD.enabled \
            and not node._hooks:  # no hook sees ``grad``: the node below may write over it
        below.__dict__["_nll_grad"] = (grad._data, spec, values._data)
    return (grad,)


NllLossBackward0 = make_node_class("NllLossBackward0", _nll_bw)


def _ce_log_softmax_bw(node, g):
    """The backward of ``cross_entropy``'s log-softmax (``LogSoftmaxBackward0``, as in
    PyTorch), from the forward's ``e = exp(x - max)`` and ``z = e.sum(dim)``.

    When the gradient is the one ``nll_loss`` just scattered (no hook saw or replaced it),
    it is ``-a`` at each row's target and zero elsewhere, so ``g - softmax * g.sum(dim)`` is
    ``softmax * a`` with ``a`` subtracted at the targets: one pass over the logits, written
    into that gradient's own array, instead of three passes and two new arrays. With
    ``create_graph`` it is written with Tensor ops over the log-probabilities
    ``log(e) - log(z)`` (recorded as this node's output, as ``log_softmax``'s backward uses
    its output)."""
    hint = node.__dict__.pop("_nll_grad", None)
    e, z = node.saved  # softmax = e / z
    if GRAD.enabled or g.__class__ is not Tensor:  # (or batched by vmap: Tensor ops too)
        xp = xp_of(g)
        with np.errstate(divide="ignore"):
            y = _make(xp.log(e) - xp.log(z), g._device)
        if GRAD.enabled:
            y.requires_grad, y.grad_fn = True, node
        return (g - y.exp() * g.sum(node.ctx, keepdim=True),)
    if hint is None or hint[0] is not g._data or node._pre_hooks or node._retain:
        return _log_softmax_bw(node, g)
    gx, spec, minus_a = hint
    if not _native_cross_entropy_bw(e, z, minus_a, spec.adv[node.ctx], gx, node.ctx):
        xp = xp_of(g)
        xp.multiply(e, -minus_a.reshape(z.shape) / z, out=gx)
        spec.set(gx, spec.get(gx) + minus_a, xp)
    return (g,)


def _native_cross_entropy_bw(e, z, minus_a, tc, gx, ca) -> bool:
    """The two passes above (``gx = e * (a / z)``, then ``a`` added at the targets) in one
    native pass per row, the same operations (the same bits), rows split over the native
    pool; False (nothing written) where the arrays are not ``_native_cross_entropy``'s."""
    shape = _native_rows(e, ca) if e.__class__ is np.ndarray and e.ndim == 2 else None
    fn = None if shape is None else _native.kernel("ember_cross_entropy_backward_f32")
    if fn is None or gx.__class__ is not np.ndarray or gx.shape != e.shape \
            or gx.dtype != np.float32 or not gx.flags.c_contiguous \
            or minus_a.__class__ is not np.ndarray or minus_a.dtype != np.float32 \
            or minus_a.shape != tc.shape or tc.__class__ is not np.ndarray \
            or tc.dtype != np.int64 or z.size != tc.size or tc.size != shape[0]:
        return False
    rows, n = shape
    minus_a, tc = np.ascontiguousarray(minus_a), np.ascontiguousarray(tc)
    address = _native.address
    _native.by_rows(fn, rows, -(-_SOFTMAX_GRAIN // n),
                    [(address(e), 4 * n), (address(z), 4), (address(minus_a), 4),
                     (address(tc), 8), (address(gx), 4 * n)], n)
    return True


CrossEntropyLogSoftmaxBackward0 = make_node_class("LogSoftmaxBackward0", _ce_log_softmax_bw)


def _nll_target(input, target, weight, ignore_index):
    """``nll_loss``'s checks of its arguments; ``(spec, w_row)``: the index of every row's
    target entry in ``input`` and its class weight (0 where ignored)."""
    d, t = input._data, target._data
    check_same_device(input, target, weight)
    if d.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    ca = _class_axis(d)
    C = d.shape[ca]
    t, kernel = _check_index_target(d, t, weight, C, ca)
    if d.dtype not in _dtype.FLOATING_NP:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(d.dtype)}'")
    _not_differentiable("nll_loss_forward", weight=weight)
    xp = xp_of(input)
    tc, w_row = _index_weights(t, weight, ignore_index, C, d.dtype, xp)
    return AdvancedIndex((), _target_index(tc, ca, xp)), w_row


def _nll_result(picked, w_row, reduction, logp, spec):
    """The loss from ``picked``, the log-probabilities at the targets, recorded as
    ``NllLossBackward0`` over ``logp``."""
    row = -(picked * w_row)
    denom = w_row.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        r = row if reduction == "none" else row.sum() if reduction == "sum" else \
            row.sum() / denom
    d = logp._data
    return result(xp_of(logp).asarray(r, dtype=d.dtype), logp._device, NllLossBackward0,
                  (logp,), (), (d.shape, spec, w_row, denom, reduction))


@register("nll_loss", function=False, method=False)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class-index ``target`` given log-probabilities ``input``
    (``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``): one node, ``NllLossBackward0``."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        spec, w_row = _nll_target(input, target, weight, ignore_index)
        return _nll_result(spec.get(input._data), w_row, reduction, input, spec)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("nll_loss_nd", input, target, weight, _enum(reduction), ignore_index)
        raise


def _native_cross_entropy(d, ca, tc):
    """``(e, z, picked)`` of ``_fused_cross_entropy`` from kernels.c in one pass set per row
    (log_softmax's native operations, so its bits), for C-contiguous float32 ``(N, C)``
    logits; rows split over the native pool. None where it does not apply."""
    shape = _native_rows(d, ca) if d.ndim == 2 else None  # (N, C): classes last
    fn = None if shape is None else _native.kernel("ember_cross_entropy_f32")
    if fn is None or tc.__class__ is not np.ndarray or tc.dtype != np.int64:
        return None
    rows, n = shape
    tc = np.ascontiguousarray(tc)
    e = np.empty(d.shape, np.float32)
    z = np.empty(d.shape[:-1] + (1,), np.float32)
    picked = np.empty(tc.shape, np.float32)
    address = _native.address
    _native.by_rows(fn, rows, -(-_SOFTMAX_GRAIN // n),
                    [(address(d), 4 * n), (address(tc), 8), (address(e), 4 * n),
                     (address(z), 4), (address(picked), 4)], n)
    return e, z, picked


def _fused_cross_entropy(input, target, weight, ignore_index, reduction, ca):
    """``nll_loss(log_softmax(input, ca), target)`` without the log-probabilities: ``e =
    exp(x - max)`` and ``z = e.sum(ca)`` give the loss at the targets, ``(x - max) - log(z)``
    (the same float operations as ``log_softmax``'s), and the backward (the graph stays
    ``NllLossBackward0`` over ``LogSoftmaxBackward0``). Three passes over the logits where
    ``log_softmax`` makes four and a second array."""
    spec, w_row = _nll_target(input, target, weight, ignore_index)
    d = input._data
    xp = xp_of(input)
    native = _native_cross_entropy(d, ca, spec.adv[ca])
    if native is not None:
        e, z, picked = native
    else:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            m = _extreme_of(d, (ca,), True, True)
            e = d - m
            xp.exp(e, out=e)
            z = e.sum(ca, keepdims=True)
            logz = xp.log(z)
        shape = spec.adv[ca].shape
        picked = (spec.get(d) - m.reshape(shape)) - logz.reshape(shape)
    # the log-probabilities are not made: the tensor standing for them carries the graph's
    # edge, and nothing reads its (broadcast zero) array
    logp = _make(xp.broadcast_to(xp.zeros((), d.dtype), d.shape), input._device)
    if input.requires_grad and GRAD.enabled:
        record(CrossEntropyLogSoftmaxBackward0, logp, (input,), (e, z), ca)
    return _nll_result(picked, w_row, reduction, logp, spec)


@register("cross_entropy", function=False, method=False)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between ``input`` logits (``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``)
    and ``target`` class indices or class probabilities, as ``torch.nn.functional``:
    ``nll_loss(log_softmax(input))``, label smoothing and probabilities composed as PyTorch
    composes them (so the graph, ``NllLossBackward0`` first, is PyTorch's)."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        # PyTorch smooths only when ``label_smoothing > 0`` (a negative or NaN value is no
        # smoothing) and checks the upper bound on that path only
        eps = float(label_smoothing) if label_smoothing > 0.0 else 0.0
        d = input._data
        ca = _class_axis(d)
        probabilities = target._data.shape == d.shape
        if probabilities:
            if target._data.dtype not in _dtype.FLOATING_NP:
                raise RuntimeError("Expected floating point type for target with class "
                                   f"probabilities, got {scalar_type_name(target._data.dtype)}")
            if ignore_index >= 0:
                raise RuntimeError("ignore_index is not supported for floating point target")
            if eps > 1.0:
                _label_smoothing_error(label_smoothing)
            if weight is not None and weight._data.shape != (d.shape[ca],):
                raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                                   f"{d.shape[ca]} classes or no classes but got weight tensor of "
                                   f"shape: [{shape_str(weight._data.shape)}]")
        elif eps > 1.0:
            _label_smoothing_error(label_smoothing)
        elif eps and d.ndim == 1 and target._data.shape == (1,):
            raise RuntimeError("output with shape [] doesn't match the broadcast shape [1]")
        elif not eps and d.dtype in _dtype.FLOATING_NP and d.ndim and d.size and not any(
                fused_kernel(input._device, k) for k in ("softmax", "softmax_backward")):
            return _fused_cross_entropy(input, target, weight, ignore_index, reduction, ca)
        logp = log_softmax(input, ca)
        if probabilities:
            return _probability_loss(logp, target, weight, reduction, eps, ca)
        nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
        if not eps:
            return nll
        return _smoothed(nll, logp, target, weight, ignore_index, reduction, eps, ca)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("cross_entropy_loss", input, target, weight, _enum(reduction), ignore_index,
            label_smoothing)
        raise


def _label_smoothing_error(label_smoothing):
    raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")


def _class_weight(weight, logp, ca):
    """``weight`` shaped to multiply ``logp`` along the class axis."""
    return weight.reshape(_class_shape(weight._data.shape[0], ca, logp._data.ndim))


def _probability_loss(logp, target, weight, reduction, eps, ca):
    """``-(logp * target * weight)`` summed over classes (PyTorch's
    ``cross_entropy_loss_prob_target``)."""
    C = logp._data.shape[ca]
    if eps:
        target = target * (1 - eps) + eps / C
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight(weight, logp, ca)
    if reduction == "none":
        return -prod.sum(ca)
    total = -prod.sum()
    if reduction == "sum":
        return total
    n = logp._data.size // C if C else 0
    return total / n if n else total * math.nan


def _smoothed(nll, logp, target, weight, ignore_index, reduction, eps, ca):
    """``(1 - eps) * nll + eps / C * smooth``, ``smooth`` the loss of a uniform target
    (PyTorch's ``cross_entropy_loss_label_smoothing``)."""
    C = logp._data.shape[ca]
    w_logp = logp if weight is None else logp * _class_weight(weight, logp, ca)
    ignored = target == ignore_index
    smooth = (-w_logp.sum(ca)).masked_fill(ignored, 0.0)
    if reduction == "mean":
        kept = ~ignored
        denom = kept.sum() if weight is None else \
            weight.gather(0, target.masked_select(kept).flatten()).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - eps) * nll + smooth * (eps / C)


# -- one node per loss: the shared pieces -------------------------------------------------------

def _reduce_array(loss, reduction: str):
    if reduction == "none":
        return loss
    loss = _dtype.widen(loss)  # float16/bfloat16 losses accumulate in float32
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / loss.size if loss.size else loss.sum() * math.nan  # NaN, unwarned


def _loss_node(node_cls, loss, reduction, inputs, saved, ctx=None) -> Tensor:
    """The unreduced ``loss`` array reduced, as a tensor recorded as ``node_cls`` over
    ``inputs`` (its ``ctx``: ``(reduction, number of elements, ctx)``); a float16/bfloat16
    input's loss, computed and reduced in float32, rounded to its dtype once."""
    r = _dtype.narrow(_reduce_array(loss, reduction), inputs[0]._data.dtype)
    return result(r, inputs[0]._device, node_cls, inputs, saved, (reduction, loss.size, ctx))


def _grad_scale(node, g, factor=1.0):
    """The incoming gradient as the factor of every element's loss (times ``factor``)."""
    reduction, n, _ = node.ctx
    if reduction == "mean":
        return g * (factor / n)
    return g * factor if factor != 1.0 else g


def _loss_pair(input, target, kernel, warn=True, promote=True):
    """``input`` and ``target`` as a pointwise loss kernel sees them: float, on one device,
    broadcast to one shape (``warn``: PyTorch's size warning), of one dtype (``promote``:
    the promoted one, else ``input``'s)."""
    if not isinstance(target, Tensor):
        _sizes(target)  # PyTorch's losses take no number target (``target.size()``)
    dt = input._data.dtype
    if promote and target._data.dtype is not dt:  # the kernel runs in the promoted dtype
        dt = _dtype.binary_result_np(input._data, target._data)
    if dt not in _dtype.FLOATING_NP:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')
    check_same_device(input, target)
    if target._data.shape != input._data.shape:
        if warn:
            _warn_size(input, target)
        input, target = (_expanded(t, broadcast_shape(input._data.shape, target._data.shape))
                         for t in (input, target))
    dt = input._data.dtype
    if target._data.dtype is not dt:
        if promote:
            dt = _dtype.binary_result_np(input._data, target._data)
            input = cast_to(input, None, _dtype.FROM_NP[dt], False)
        target = cast_to(target, None, _dtype.FROM_NP[dt], False)
    return input, target


def _expanded(t, shape):
    return t if t._data.shape == shape else expand(t, shape)


def _loss_weight(weight, like: Tensor, loss, first=False):
    """``weight`` in ``like``'s dtype; PyTorch's error when it would broadcast ``loss`` to a
    larger shape (``first``: ``weight`` is the left operand, as ``pos_weight`` is)."""
    if weight is None:
        return None
    shape = broadcast_shape(weight._data.shape, loss.shape) if first else \
        broadcast_shape(loss.shape, weight._data.shape)
    if shape != loss.shape:
        raise RuntimeError(f"output with shape [{shape_str(loss.shape)}] doesn't "
                           f"match the broadcast shape [{shape_str(shape)}]")
    return cast_to(weight, None, like.dtype, False)


# -- regression losses --------------------------------------------------------------------------

def _difference(input, target, kernel):
    _warn_size(input, target)
    _float_kernel(input, kernel)
    return input - target


def _mse_bw(node, g):
    """``2 (input - target) * scale`` for the input and its negation for the target."""
    x, y = node.saved
    gx = (x - y) * _grad_scale(node, g, 2.0)
    return gx, (-gx if node.needs_grad(1) else None)


MseLossBackward0 = make_node_class("MseLossBackward0", _mse_bw)


@register("mse_loss", function=False, method=False)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``weight``: a weighted mean divided by ``weight.sum()``)."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if weight is not None:
            diff = _difference(input, target, "mse_cpu")
            return _weighted_reduce(diff * diff, weight, input, reduction)
        input, target = _loss_pair(input, target, "mse_cpu")
        diff = input._data - target._data
        return _loss_node(MseLossBackward0, diff * diff, reduction, (input, target),
                          (input, target))
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


@register("l1_loss", function=False, method=False)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error (``weight``: a weighted mean divided by ``weight.sum()``)."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if weight is None and input._data.dtype not in _dtype.FLOATING_NP:
            # PyTorch's l1 is |input - target| reduced: integers sum (and refuse a mean) as such
            _warn_size(input, target)
            return _reduce((input - target).abs(), reduction)
        return _weighted_reduce(_difference(input, target, "l1_cpu").abs(), weight, input,
                                reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


def _quadratic_then_linear_bw(node, g):
    """``clamp(input - target, -limit, limit) / divisor`` for the input, its negation for the
    target."""
    x, y = node.saved
    limit, divisor = node.ctx[2]
    gx = (x - y).clamp(-limit, limit) * _grad_scale(node, g, 1.0 / divisor)
    return gx, (-gx if node.needs_grad(1) else None)


SmoothL1LossBackward0, HuberLossBackward0 = (
    make_node_class(n, _quadratic_then_linear_bw)
    for n in ("SmoothL1LossBackward0", "HuberLossBackward0"))


def _quadratic_then_linear(node_cls, input, target, limit, reduction, kernel):
    """``0.5 z**2`` below ``limit`` and ``limit * (z - limit / 2)`` above it
    (``z = |input - target|``), divided by ``limit`` for smooth L1, as one node."""
    input, target = _loss_pair(input, target, kernel)
    z = abs(input._data - target._data)
    divisor = limit if node_cls is SmoothL1LossBackward0 else 1.0
    loss = xp_of(input).where(z < limit, (0.5 / divisor) * z * z,
                              (limit / divisor) * (z - 0.5 * limit))
    return _loss_node(node_cls, loss, reduction, (input, target), (input, target),
                      (limit, divisor))


@register("smooth_l1_loss", function=False, method=False)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta`` (divided by ``beta``), absolute error above it."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if beta < 0:
            raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
        if beta == 0:  # PyTorch's smooth_l1_loss is l1_loss there
            return l1_loss(input, target, reduction=reduction)
        return _quadratic_then_linear(SmoothL1LossBackward0, input, target, float(beta), reduction,
                                      "smooth_l1_cpu")
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


@register("huber_loss", function=False, method=False)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it (``weight``
    multiplies the unreduced loss, as PyTorch)."""
    reduction = _reduction(reduction)
    try:
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        if isinstance(target, Tensor) and target._data.dtype is not input._data.dtype:
            # PyTorch's huber_loss writes into an output of the input's dtype
            dt = _dtype.binary_result_np(input._data, target._data)
            if dt in _dtype.FLOATING_NP and input._data.dtype not in _dtype.FLOATING_NP:
                raise RuntimeError(f"result type {scalar_type_name(dt)} can't be cast to the "
                                   f"desired output type {scalar_type_name(input._data.dtype)}")
            if dt in _dtype.FLOATING_NP:
                target = cast_to(target, None, input.dtype, False)
        if weight is None:
            return _quadratic_then_linear(HuberLossBackward0, input, target, float(delta),
                                          reduction, "huber_cpu")
        loss = _quadratic_then_linear(HuberLossBackward0, input, target, float(delta), "none",
                                      "huber_cpu")
        return _weighted_reduce(loss, weight, input, reduction, mean_by_weight=False)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


# -- binary / probabilistic losses --------------------------------------------------------------

def _softplus(x):
    """``log(1 + exp(x))`` exactly (no linear threshold), smooth gradient ``sigmoid(x)``."""
    return softplus(x, 1.0, math.inf)


def _sigmoid(x):
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for very negative x: exactly 0
        return x.sigmoid()


_BCE_EPS = 1e-12  # PyTorch's floor of ``x (1 - x)`` in the gradient of binary_cross_entropy


def _bce_bw(node, g):
    """PyTorch's gradients: ``(x - t) / max(x (1 - x), 1e-12)`` for the input (finite at 0
    and 1) and ``-logit(x)`` for the target, each times the scale and the weight."""
    x, t, w = node.saved
    scale = _grad_scale(node, g)
    if w is not None:
        scale = scale * w
    gx = gt = None
    if node.needs_grad(0):
        gx = (x - t) / ((1 - x) * x).clamp_min(_BCE_EPS) * scale
    if node.needs_grad(1):
        with np.errstate(divide="ignore"):  # infinite at 0 and 1, as in PyTorch
            gt = -x.logit() * scale
    return gx, gt


BinaryCrossEntropyBackward0 = make_node_class("BinaryCrossEntropyBackward0", _bce_bw)


def _broadcast_shapes(*shapes):
    """``torch.broadcast_shapes`` of ``Size`` arguments, with its error (the mismatching
    argument printed as a ``Size``)."""
    result = [1] * max(len(s) for s in shapes)
    for idx, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == 1 or shape[i] == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at "
                                   f"{i}! Mismatching argument at index {idx} had "
                                   f"ember.Size([{shape_str(shape)}]); but expected shape should "
                                   f"be broadcastable to [{shape_str(result)}]")
            result[i] = shape[i]
    return tuple(result)


def _check_unit_interval(a, name):
    if not ((a >= 0) & (a <= 1)).all():
        raise RuntimeError(f"all elements of {name} should be between 0 and 1")


@register("binary_cross_entropy", function=False, method=False)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))`` with each log clamped at -100, so that
    probabilities of exactly 0 or 1 give finite losses and gradients, as PyTorch."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if target.shape != input.shape:
            raise ValueError(f"Using a target size ({target.size()!r}) that is different to the "
                             f"input size ({input.size()!r}) is deprecated. Please ensure they "
                             "have the same size.")
        check_same_device(input, target, weight)
        d, td = input._data, target._data
        if td.dtype is not d.dtype:
            raise RuntimeError(f"Found dtype {scalar_type_name(td.dtype)} but expected "
                               f"{scalar_type_name(d.dtype)}")
        if d.dtype not in _dtype.FLOATING_NP:
            raise NotImplementedError('"binary_cross_entropy" not implemented for '
                                      f"'{scalar_type_name(d.dtype)}'")
        if weight is not None and weight._data.shape != td.shape:
            weight = expand(weight, _broadcast_shapes(td.shape, weight._data.shape))
        _check_unit_interval(d, "input")
        _check_unit_interval(td, "target")
        _not_differentiable("binary_cross_entropy", weight=weight)
        xp = xp_of(input)
        with np.errstate(divide="ignore"):
            loss = (td - 1) * xp.maximum(xp.log1p(-d), -100) - td * xp.maximum(xp.log(d), -100)
        w = _loss_weight(weight, input, loss)
        if w is not None:
            loss = loss * w._data
        return _loss_node(BinaryCrossEntropyBackward0, loss, reduction, (input, target),
                          (input, target, w))
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


def _bce_logits_bw(node, g):
    """PyTorch's gradients: ``sigmoid(x) - t`` for the input (``(p t + 1 - t) sigmoid(x) -
    p t`` with ``pos_weight`` p), ``-x`` for the target (``logsigmoid(-x) - p
    logsigmoid(x)``), each times the scale and the weight."""
    x, t, w, pw = node.saved
    scale = _grad_scale(node, g)
    if w is not None:
        scale = scale * w
    gx = gt = None
    if node.needs_grad(0):
        sig = _sigmoid(x)
        if pw is None:
            gx = (sig - t) * scale
        else:
            pt = pw * t
            gx = ((pt + 1 - t) * sig - pt) * scale
    if node.needs_grad(1):
        gt = (-x if pw is None else logsigmoid(-x) - pw * logsigmoid(x)) * scale
    return gx, gt


BinaryCrossEntropyWithLogitsBackward0 = make_node_class(
    "BinaryCrossEntropyWithLogitsBackward0", _bce_logits_bw)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable expression:
    ``(1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x)``, times ``weight``."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if target.shape != input.shape:
            raise ValueError(f"Target size ({target.size()!r}) must be the same as input size "
                             f"({input.size()!r})")
        check_same_device(input, target, weight, pos_weight)
        _not_differentiable("binary_cross_entropy_with_logits", weight=weight,
                            pos_weight=pos_weight)
        _float_kernel(input, "log_sigmoid_cpu")
        td = target._data.dtype
        if td is not input._data.dtype:
            # PyTorch's kernel works in place on ``1 - target``: the loss has the target's dtype
            if td == np.bool_:
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                                   "supported. Use the `^` or `logical_xor()` operator instead.")
            if td not in _dtype.FLOATING_NP:
                dt = _dtype.binary_result_np(input._data, target._data)
                raise RuntimeError(f"result type {scalar_type_name(dt)} can't be cast to the "
                                   f"desired output type {scalar_type_name(td)}")
            input = cast_to(input, None, _dtype.FROM_NP[td], False)
        input, target = _loss_pair(input, target, "log_sigmoid_cpu")
        d, td = input._data, target._data
        log_sig = _special.log_sigmoid(d)
        pw = _loss_weight(pos_weight, input, d, first=True)
        if pw is not None:
            log_sig = log_sig * ((pw._data - 1) * td + 1)
        loss = (1 - td) * d - log_sig
        w = _loss_weight(weight, input, loss)
        if w is not None:
            loss = loss * w._data
        return _loss_node(BinaryCrossEntropyWithLogitsBackward0, loss, reduction, (input, target),
                          (input, target, w, pw))
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(target, input)
        raise


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence with ``input`` log-probabilities; ``'batchmean'`` divides the sum by the
    batch size; ``log_target``: ``target`` holds log-probabilities too."""
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=user_stacklevel())
    reduction = _reduction(reduction, size_average, reduce, extra=("batchmean",))
    try:
        return _kl_div(input, target, reduction, log_target)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("kl_div", input, target, _enum(reduction))
        raise


def _kl_div(input, target, reduction, log_target):
    if input._data.dtype not in _dtype.FLOATING_NP or \
            target._data.dtype not in _dtype.FLOATING_NP:
        if not (input.is_complex() or target.is_complex()):
            raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log likelihood; ``full`` adds Stirling's term where ``target > 1``."""
    reduction = _reduction(reduction, size_average, reduce,
                           invalid=" is not a valid value for reduction")
    try:
        if log_input:
            loss = input.exp() - target * input
        else:
            loss = input - target * (input + eps).log()
        if full:
            t = target.clamp_min(1)  # Stirling's term is masked to 0 where target <= 1
            stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
            loss = loss + where(target > 1, stirling, 0)
        return _reduce(loss, reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("poisson_nll_loss", input, target, log_input, full, eps, _enum(reduction))
        raise


@register("gaussian_nll_loss", function=False, method=False)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood with predicted variance ``var`` (clamped at ``eps``
    outside autograd, as PyTorch)."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    diff = input - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# -- margin and embedding losses ----------------------------------------------------------------

def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if input1.ndim != input2.ndim or input1.ndim != target.ndim:
            raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                               f"but got sizes: input1: {input1.size()!r}, input2: "
                               f"{input2.size()!r}, target: {target.size()!r} ")
        # ``margin`` is a double in PyTorch's signature: integer inputs give a float loss
        return _reduce((-target * (input1 - input2) + float(margin)).clamp_min(0), reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _sizes(input1, input2, target, attr="dim")
        raise


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if input._data.dtype.kind in "biu":  # PyTorch fills an integer tensor with the margin
            margin = int(margin)
        hinge = where(target != 1, (margin - input).clamp_min(0), 0)
        return _reduce(hinge + where(target != -1, input, 0), reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("hinge_embedding_loss", input, target, margin, _enum(reduction))
        raise


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos - margin)`` where -1."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
            raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                               f"tensors, but found inputs with sizes [{shape_str(input1.shape)}] "
                               f"and [{shape_str(input2.shape)}].")
        eps = 1e-12
        dim = input1.ndim - 1
        prod = (input1 * input2).sum(dim)
        mag1 = (input1 * input1).sum(dim) + eps
        mag2 = (input2 * input2).sum(dim) + eps
        cos = prod / (mag1 * mag2).sqrt()
        pos = where(target == 1, 1 - cos, 0)
        neg = where(target == -1, (cos - margin).clamp_min(0), 0)
        return _reduce(pos + neg, reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("cosine_embedding_loss", input1, input2, target, margin,
            _enum(reduction))
        raise


def _pairwise_distance(x1, x2, p, eps):
    return (x1 - x2 + eps).norm(p, -1)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise ``p``-distance;
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    try:
        return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("triplet_margin_loss", anchor, positive, negative, margin, p, eps, swap,
            _enum(reduction))
        raise


def _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction):
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    d_pos = _pairwise_distance(anchor, positive, p, eps)
    d_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(_pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _soft_margin_bw(node, g):
    """``-t sigmoid(-t x)``, times the scale (the target takes no gradient, as in PyTorch)."""
    x, t = node.saved
    mt = -t
    return (_sigmoid(mt * x) * mt * _grad_scale(node, g),)


SoftMarginLossBackward0 = make_node_class("SoftMarginLossBackward0", _soft_margin_bw)


@register("soft_margin_loss", function=False, method=False)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``, computed stably, as one node."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        if input._data.dtype.kind in "iu":  # PyTorch's kernel exponentiates in place
            raise RuntimeError("result type Float can't be cast to the desired output type "
                               f"{scalar_type_name(input._data.dtype)}")
        input, target = _loss_pair(input, target, "soft_margin_loss", warn=False, promote=False)
        loss = xp_of(input).logaddexp(0, -target._data * input._data)
        return _loss_node(SoftMarginLossBackward0, loss, reduction, (input,), (input, target))
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("soft_margin_loss", input, target, _enum(reduction))
        raise


@register("multilabel_soft_margin_loss", function=False, method=False)
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class logistic loss averaged over the classes (last dim)."""
    reduction = _reduction(reduction, size_average, reduce, invalid=" is not valid")
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    if class_dim < 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _multi_margin_bw(node, g):
    """Every active margin ``z_j = margin - x[y] + x[j] > 0`` (``j != y``) gives ``x[j]``
    the slope ``w[y] / C`` (``2 z_j w[y] / C`` for ``p = 2``) and takes it from ``x[y]``."""
    (x,) = node.saved
    reduction, _, (t, p, margin, w_c, others) = node.ctx
    ca = x._data.ndim - 1
    dev, dt = g._device, x._data.dtype
    z = x - x.gather(ca, _make(t, dev)) + margin
    active = _make(((z._data > 0) & others).astype(dt), dev)
    coef = active * z * 2 if p == 2 else active
    scale = _grad_scale(node, g)
    if reduction == "none":
        scale = scale.reshape(t.shape)
    h = coef * _make(w_c, dev) * scale
    return (h - _make((~others).astype(dt), dev) * h.sum(ca, keepdim=True),)


MultiMarginLossBackward0 = make_node_class("MultiMarginLossBackward0", _multi_margin_bw)


def _check_multi_margin(d, td, weight, C):
    if d.ndim > 2 or d.ndim == 0 or C == 0:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: [{shape_str(d.shape)}]")
    n = d.shape[0] if d.ndim == 2 else 1
    if td.ndim > 1 or td.size != n:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to "
                           "the number of input samples (batch size). Expected target size "
                           f"[{n}], but got [{shape_str(td.shape)}]. Input has shape "
                           f"[{shape_str(d.shape)}].")
    if td.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {scalar_type_name(td.dtype)}")
    if ((td < 0) | (td >= C)).any():
        raise RuntimeError("target out of range")
    if weight is not None and weight._data.shape != (C,):
        raise RuntimeError(f"inconsistent weight size, expected {C} but got "
                           f"[{shape_str(weight._data.shape)}]")


@register("multi_margin_loss", function=False, method=False)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])**p * w[y] / C``,
    as one node."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    try:
        d, td = input._data, target._data
        check_same_device(input, target, weight)
        ca = d.ndim - 1
        C = d.shape[ca] if d.ndim else 0
        _check_multi_margin(d, td, weight, C)
        if d.dtype not in _dtype.FLOATING_NP:
            raise NotImplementedError('"multi_margin_loss_cpu_kernel" not implemented for '
                                      f"'{scalar_type_name(d.dtype)}'")
        if weight is not None and weight._data.dtype != d.dtype:
            raise RuntimeError(f"expected scalar type {scalar_type_name(d.dtype)} but found "
                               f"{scalar_type_name(weight._data.dtype)}")
        _not_differentiable("multi_margin_loss", weight=weight)
        xp = xp_of(input)
        t = td.reshape(td.shape + (1,) if d.ndim == 2 else (1,))
        z = xp.maximum(d - xp.take_along_axis(d, t, ca) + margin, 0)
        if p == 2:
            z = z * z
        others = t != xp.arange(C)
        w_c = xp.full(t.shape, 1 / C, d.dtype) if weight is None else \
            weight._data.astype(d.dtype)[t] / C
        loss = (z * others * w_c).sum(ca).reshape(td.shape)
        return _loss_node(MultiMarginLossBackward0, loss, reduction, (input,), (input,),
                          (t, p, float(margin), w_c, others))
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("multi_margin_loss", input, target, p, margin, weight, _enum(reduction))
        raise


# -- CTC ----------------------------------------------------------------------------------------

def _lengths(x, n, name, xp):
    arr = xp.asarray(x._data if isinstance(x, Tensor) else x)  # CPU lengths are fine
    arr = arr.reshape(-1).astype(np.int64)
    if arr.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return arr


def _lse(*arrays):
    """Elementwise log-sum-exp of same-shape arrays (``-inf`` where all are ``-inf``)."""
    m = arrays[0]
    for a in arrays[1:]:
        m = np.maximum(m, a)
    safe = xp_of(m).where(np.isfinite(m), m, 0)
    total = sum(np.exp(a - safe) for a in arrays)
    return np.log(total) + safe


def _shift(a, k, xp, right=True):
    """``a`` moved ``k`` places along the label axis, ``-inf`` filling the gap."""
    out = xp.full_like(a, -np.inf)
    if right:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :-k] = a[:, k:]
    return out


def _padded_targets(tg, tl, n, xp, blank):
    smax = int(tl.max()) if n else 0
    if tg.ndim == 2:
        if tg.shape[1] < smax:
            raise RuntimeError(f"Expected tensor to have size at least {smax} at dimension 1, "
                               f"but got size {tg.shape[1]} for argument #2 'targets' (while "
                               "checking arguments for ctc_loss_allocate_outputs)")
        return tg[:, :smax].astype(np.int64), smax
    starts = xp.cumsum(tl) - tl
    pos = xp.arange(smax)
    idx = starts[:, None] + pos[None, :]
    keep = pos[None, :] < tl[:, None]
    if tg.shape[0] == 0:
        return xp.full((n, smax), blank, dtype=np.int64), smax
    idx = xp.clip(idx, 0, tg.shape[0] - 1)
    return xp.where(keep, tg[idx], blank).astype(np.int64), smax


def _ctc_alpha_beta(lpe, il, tl, skip, xp):
    """Forward (alpha) and backward (beta) log-variables ``(T, N, S')`` of the extended label
    sequences, both including the emission at ``t`` (zero probability past each input)."""
    T, N, S = lpe.shape
    s_idx = xp.arange(S)[None, :]
    ninf = -np.inf
    alpha = xp.full((T, N, S), ninf, dtype=lpe.dtype)
    beta = xp.full((T, N, S), ninf, dtype=lpe.dtype)
    a = xp.where((s_idx == 0) | ((s_idx == 1) & (tl[:, None] > 0)), lpe[0], ninf)
    a = xp.where(il[:, None] > 0, a, ninf)
    alpha[0] = a
    for t in range(1, T):
        a2 = xp.where(skip, _shift(a, 2, xp), ninf) if S > 2 else xp.full_like(a, ninf)
        new = _lse(a, _shift(a, 1, xp), a2) + lpe[t] if S > 1 else a + lpe[t]
        live = (t < il)[:, None]
        a = xp.where(live, new, a)
        alpha[t] = xp.where(live, new, ninf)
    last = 2 * tl[:, None]
    ends = (s_idx == last) | ((s_idx == last - 1) & (tl[:, None] > 0))
    skip_back = xp.zeros_like(skip)
    skip_back[:, :-2] = skip[:, 2:]
    b = xp.full((N, S), ninf, dtype=lpe.dtype)
    for t in range(T - 1, -1, -1):
        if S > 1:
            b2 = xp.where(skip_back, _shift(b, 2, xp, False), ninf) if S > 2 else \
                xp.full_like(b, ninf)
            rec = _lse(b, _shift(b, 1, xp, False), b2) + lpe[t]
        else:
            rec = b + lpe[t]
        start = xp.where(ends, lpe[t], ninf)
        b = xp.where((t == il - 1)[:, None], start, xp.where((t < il - 1)[:, None], rec, ninf))
        beta[t] = b
    loglik = _lse(xp.take_along_axis(a, last, 1)[:, 0],
                  xp.where(tl > 0, xp.take_along_axis(a, xp.maximum(last - 1, 0), 1)[:, 0],
                           ninf))
    # no input and no target: the empty alignment, of probability 1
    loglik = xp.where((il == 0) & (tl == 0), 0, loglik).astype(lpe.dtype, copy=False)
    return alpha, beta, loglik


def _ctc_grad(node, g):
    """``d nll / d log_probs`` was computed by the alpha-beta pass (array code); the node
    scales it by the incoming gradient. Not twice differentiable (PyTorch's is not either):
    with ``create_graph`` the gradient depends on ``log_probs`` and the incoming gradient
    through a ``NotImplemented`` node, whose backward raises PyTorch's error."""
    grad_unit, unbatched = node.ctx
    gu = _make(grad_unit, g._device)
    scale = g if unbatched else g.reshape((1, g.shape[0], 1))
    if not GRAD.enabled:
        return (gu * scale,)
    with no_grad():
        r = gu * scale
    inputs = (g, node.saved[0])
    if any(t.requires_grad for t in inputs):
        record(_CtcDoubleBackward, r, inputs, (), "_ctc_loss_backward")
    return (r,)


def _no_derivative_bw(node, grad):
    raise RuntimeError(f"derivative for aten::{node.ctx} is not implemented")


CtcLossBackward0 = make_node_class("CtcLossBackward0", _ctc_grad)
_CtcDoubleBackward = make_node_class("NotImplemented", _no_derivative_bw)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss of ``log_probs`` ``(T, N, C)`` (or
    ``(T, C)``) against padded ``(N, S)`` or concatenated 1-D ``targets``.

    The gradient is the exact one w.r.t. ``log_probs`` (``-posterior``); PyTorch returns
    ``exp(log_probs) - posterior``, which agrees after ``log_softmax`` (the usual input)."""
    reduction = _reduction(reduction)
    if targets._device.type != "cpu":  # CPU targets go with any device, as in PyTorch
        check_same_device(log_probs, targets)
    xp = xp_of(log_probs)
    d = log_probs._data
    unbatched = d.ndim == 2
    if unbatched:
        d = d[:, None, :]
    T, N, C = d.shape
    for lengths, name in ((input_lengths, "input_lengths"), (target_lengths, "target_lengths")):
        if isinstance(lengths, Tensor) and lengths._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
    if d.dtype != np.float32 and d.dtype != np.float64 and d.dtype != _dtype.bfloat16.np:
        # bfloat16 runs (a documented superset, tests/core/test_bfloat16.py)
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{scalar_type_name(d.dtype)}'")
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, N, "input_lengths", xp)
    tl = _lengths(target_lengths, N, "target_lengths", xp)
    where_ = " (while checking arguments for ctc_loss_allocate_outputs)"
    values = log_probs._device.type != "meta"  # a meta tensor's lengths have no values
    if values and N and int(tl.min()) < 0:
        raise RuntimeError("Expected target_lengths to have value at least 0, but got value "
                           f"{int(tl.min())}{where_}")
    tg = xp.asarray(targets._data)
    if unbatched and tg.ndim == 1:
        tg = tg[None, :]
    if values and tg.ndim == 1 and tg.shape[0] != int(tl.sum()):
        raise RuntimeError(f"Expected tensor to have size {int(tl.sum())} at dimension 0, but "
                           f"got size {tg.shape[0]} for argument #2 'targets'{where_}")
    if tg.ndim == 2 and tg.shape[0] != N:
        raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size "
                           f"{tg.shape[0]} for argument #2 'targets'{where_}")
    if values and N and int(il.min()) < 0:
        raise RuntimeError("Expected input_lengths to have value at least 0, but got value "
                           f"{int(il.min())}{where_}")
    if values and N and int(il.max()) > T:
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(il.max())}{where_}")
    padded, smax = _padded_targets(tg, tl, N, xp, blank)
    S = 2 * smax + 1
    ext = xp.full((N, S), blank, dtype=np.int64)
    ext[:, 1::2] = padded
    skip = xp.zeros((N, S), dtype=bool)
    skip[:, 2:] = ext[:, 2:] != ext[:, :-2]  # PyTorch's test: a label equal to blank may skip
    lpe = d[:, xp.arange(N)[:, None], ext]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        alpha, beta, loglik = _ctc_alpha_beta(lpe, il, tl, skip, xp)
        nll = -loglik
        inf = xp.isinf(nll)
        if zero_infinity:
            nll = xp.where(inf, 0, nll)
        r = nll.astype(d.dtype)
        grad_unit = None
        if GRAD.enabled and log_probs.requires_grad:
            ab = alpha + beta
            m = ab.max(axis=2, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            onehot = (ext[:, :, None] == xp.arange(C)).astype(d.dtype)  # (N, S', C)
            per_class = xp.matmul(xp.exp(ab - m).transpose(1, 0, 2), onehot).transpose(1, 0, 2)
            post = xp.exp(xp.log(per_class) + m - d + nll[None, :, None])
            grad_unit = xp.where((per_class > 0) & ~inf[None, :, None], -post, 0)
            if not zero_infinity:  # an impossible alignment has NaN gradients, as in PyTorch
                live = (xp.arange(T)[:, None] < il[None, :]) & inf[None, :]
                grad_unit = xp.where(live[:, :, None], np.nan, grad_unit)
            grad_unit = grad_unit.astype(d.dtype, copy=False)
            if unbatched:
                grad_unit = grad_unit[:, 0, :]
    out = _make(r.reshape(()) if unbatched else r, log_probs._device)
    if grad_unit is not None:
        record(CtcLossBackward0, out, (log_probs,), (log_probs,), (grad_unit, unbatched))
    if reduction == "mean":
        lengths = xp.maximum(tl, 1).astype(d.dtype)
        lengths = _make(lengths.reshape(()) if unbatched else lengths, log_probs._device)
        return (out / lengths).mean()
    return out.sum() if reduction == "sum" else out


# -- multilabel margin and triplet-with-distance losses -----------------------------------------

def _check_multilabel_margin(d, td):
    if not ((d.ndim <= 2 and d.size > 0) or (d.ndim == 2 and d.shape[1] > 0)):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: [{shape_str(d.shape)}]")
    C = 1 if d.ndim == 0 else d.shape[-1]
    if d.ndim <= 1:
        ok = td.ndim <= 1 and td.size == C
    else:
        ok = td.ndim == 2 and td.shape == d.shape
    if not ok:
        raise RuntimeError(f"inconsistent target size: [{shape_str(td.shape)}] for "
                           f"input of size: [{shape_str(d.shape)}]")
    if td.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {scalar_type_name(td.dtype)}")
    if td.size and ((td < -1) | (td >= C)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    return C


@register("multilabel_margin_loss", function=False, method=False)
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in y, i not in y} max(0, 1 - (x[j] - x[i])) / C`` per sample, where ``y`` is
    ``target``'s class indices up to its first ``-1``; composed of differentiable ops."""
    reduction = _reduction(reduction, size_average, reduce)
    try:
        check_same_device(input, target)
        d, td = input._data, target._data
        C = _check_multilabel_margin(d, td)
        if d.dtype not in _dtype.FLOATING_NP:
            raise NotImplementedError('"multilabel_margin_loss_forward_out_frame" not implemented '
                                      f"for '{scalar_type_name(d.dtype)}'")
        xp = xp_of(input)
        x = input.reshape(-1, C)
        t = xp.asarray(td).reshape(-1, C)
        valid = xp.cumprod(t != -1, axis=1).astype(bool)  # the entries before the first -1
        count = ((t[:, :, None] == xp.arange(C)) & valid[:, :, None]).sum(1)  # (N, C) multiplicity
        pair = (count[:, :, None] * (count == 0)[:, None, :]).astype(d.dtype)  # (N, j, i)
        z = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
        loss = (z * _make(pair, input._device)).sum((1, 2)) / C
        loss = loss.reshape(d.shape[:-1] if d.ndim == 2 else ())
        return _reduce(loss, reduction)
    except (AttributeError, TypeError):  # not tensors: PyTorch's words for them
        _refuse("multilabel_margin_loss", input, target, _enum(reduction))
        raise


@register("triplet_margin_with_distance_loss", function=False, method=False)
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any ``distance_function`` (default
    ``pairwise_distance``); ``swap`` uses ``min(d(a, n), d(p, n))``."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    if distance_function is None:
        from .nn_misc import pairwise_distance as distance_function
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = dist_neg.minimum(distance_function(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


# -- the ATen forms: ``torch.<name>`` -----------------------------------------------------------
# ``ember.<name>`` takes ``torch.<name>``'s signature: the reduction an integer (0 none, 1 mean,
# 2 sum; a string is taken too), after the loss's own parameters and without the deprecated
# ``size_average``/``reduce``. Its default is 0 (none): ATen's schemas say 1 (mean), but
# PyTorch's Python bindings read that default as 0, so ``torch.kl_div(x, t)`` is unreduced.
# The functions above keep ``torch.nn.functional``'s signature for ``ember.nn.functional``.

def _aten(name: str):
    def deco(fn):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = (f"``torch.{name}``: ``nn.functional.{name}`` with the reduction as "
                      "ATen's integer (0 none, 1 mean, 2 sum), unreduced by default as in "
                      "PyTorch.")
        return register(name, method=False)(fn)

    return deco


@_aten("kl_div")
def _kl_div_aten(input, target, reduction=0, *, log_target=False):
    return _kl_div(input, target, _reduction(_aten_reduction(reduction), extra=("batchmean",)),
                   log_target)


@_aten("binary_cross_entropy_with_logits")
def _bce_with_logits_aten(input, target, weight=None, pos_weight=None, reduction=0):
    reduction = _aten_reduction(reduction)
    return binary_cross_entropy_with_logits(input, target, weight, reduction=reduction,
                                            pos_weight=pos_weight)


@_aten("poisson_nll_loss")
def _poisson_nll_loss_aten(input, target, log_input=True, full=False, eps=1e-8, reduction=0):
    reduction = _aten_reduction(reduction)
    return poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=reduction)


@_aten("margin_ranking_loss")
def _margin_ranking_loss_aten(input1, input2, target, margin=0.0, reduction=0):
    reduction = _aten_reduction(reduction)
    return margin_ranking_loss(input1, input2, target, margin, reduction=reduction)


@_aten("hinge_embedding_loss")
def _hinge_embedding_loss_aten(input, target, margin=1.0, reduction=0):
    reduction = _aten_reduction(reduction)
    return hinge_embedding_loss(input, target, margin, reduction=reduction)


@_aten("cosine_embedding_loss")
def _cosine_embedding_loss_aten(input1, input2, target, margin=0.0, reduction=0):
    reduction = _aten_reduction(reduction)
    return cosine_embedding_loss(input1, input2, target, margin, reduction=reduction)


@_aten("triplet_margin_loss")
def _triplet_margin_loss_aten(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6,
                              swap=False, reduction=0):
    reduction = _aten_reduction(reduction)
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                _reduction(reduction))


@_aten("ctc_loss")
def _ctc_loss_aten(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
                   zero_infinity=False):
    reduction = _aten_reduction(reduction)
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                    zero_infinity)
