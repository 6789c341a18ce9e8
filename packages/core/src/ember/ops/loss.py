"""Loss kernels: the ``torch.nn.functional`` losses (the loss modules build on these).

``cross_entropy`` and ``nll_loss`` are one recorded node each: the forward is array code
(log-softmax once, the target entries picked by fancy indexing) and the backward is
``(softmax - one_hot) * scale`` written with Tensor ops, so it is itself differentiable.
``ctc_loss`` runs the alpha/beta recursions vectorised over the batch and the extended label
axis (a Python loop over time only). The other losses are short compositions of
differentiable ops, so their gradients (and double gradients) come from those ops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD, no_grad
from ..autograd.graph import make_node_class, record
from ._core import _pretty, check_same_device, xp_of
from .activation import softplus
from .pointwise import where
from .registry import register

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "poisson_nll_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "gaussian_nll_loss", "ctc_loss"]


# -- reductions ---------------------------------------------------------------------------------

_ENUM = {0: "none", 1: "mean", 2: "sum"}  # ATen's integer reductions (torch.kl_div(..., 1))


def _reduction(reduction, size_average=None, reduce=None, extra=()) -> str:
    """The reduction string; the deprecated ``size_average``/``reduce`` pair wins (warned)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    if isinstance(reduction, int) and not isinstance(reduction, bool):
        reduction = _ENUM.get(reduction, reduction)
    if reduction not in ("none", "mean", "sum", *extra):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _float_kernel(input, kernel):
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_pretty(input._data.dtype)}'")


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()!r}) that is different to the input "
                      f"size ({input.size()!r}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


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


# -- cross_entropy / nll_loss: one node each ------------------------------------------------------

def _class_axis(d) -> int:
    return 0 if d.ndim == 1 else 1


def _along(arr, ca, ndim):
    """``arr`` (shaped like the target) with the class axis put back as size one."""
    return arr.reshape(arr.shape[:ca] + (1,) + arr.shape[ca:]) if arr.ndim < ndim else arr


def _class_shape(C, ca, ndim):
    return (C,) + (1,) * (ndim - ca - 1)


def _check_index_target(d, t, weight, C, ca):
    if t.dtype != np.int64 and t.dtype != np.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_pretty(t.dtype)}")
    if d.ndim >= 2:
        if t.ndim == 0 or t.shape[0] != d.shape[0]:
            raise ValueError(f"Expected input batch_size ({d.shape[0]}) to match target "
                             f"batch_size ({t.shape[0] if t.ndim else 0}).")
        expected = d.shape[:ca] + d.shape[ca + 1:]
        if t.shape != expected:
            if d.ndim == 2:
                raise RuntimeError("0D or 1D target tensor expected, multi-target not "
                                   "supported")
            raise RuntimeError(f"Expected target size [{', '.join(map(str, expected))}], got "
                               f"[{', '.join(map(str, t.shape))}]")
    elif t.ndim != 0:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    _check_weight(weight, C)


def _check_weight(weight, C):
    if weight is not None and weight._data.shape != (C,):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           "classes but got weight tensor of shape: "
                           f"[{', '.join(map(str, weight._data.shape))}]")


def _target_index(tc, ca, xp):
    """Fancy index of the target entries in an array whose class axis was moved last."""
    n = tc.ndim
    grids = tuple(xp.arange(s).reshape((1,) * i + (s,) + (1,) * (n - i - 1))
                  for i, s in enumerate(tc.shape))
    return grids + (tc,)


def _classes_last(arr, ca):
    """A view of ``arr`` with the class axis last (fancy indexing by ``_target_index``)."""
    return arr if ca == arr.ndim - 1 else arr.swapaxes(ca, -1) if arr.ndim == 2 else \
        arr.transpose((0,) + tuple(range(2, arr.ndim)) + (1,))


def _index_weights(t, weight, ignore_index, C, dtype, xp):
    """``(tc, valid, w_row)``: targets with ignored entries as 0, the mask of kept entries,
    and each entry's class weight (0 where ignored)."""
    valid = t != ignore_index
    tc = xp.where(valid, t, 0).astype(np.int64, copy=False)
    bad = (tc < 0) | (tc >= C)
    if bad.any():
        raise IndexError(f"Target {int(t[bad].ravel()[0])} is out of bounds.")
    if weight is None:
        w_row = valid.astype(dtype)
    else:
        w_row = weight._data.astype(dtype, copy=False)[tc] * valid
    return tc, valid, w_row


def _scale_array(g, reduction, denom):
    """The incoming gradient as the factor of each row's loss (shaped like the target)."""
    return g / denom if reduction == "mean" else g


def _index_grad_array(node, g):
    """The first-order gradient of the index-target kernels in array code (no graph):
    ``(softmax * A.sum(class) - A) * scale`` with ``A`` the (smoothed, weighted) one-hot,
    the one-hot part subtracted at the target entries instead of materialised."""
    kind, ca, probs, tc, valid, w_row, eps, wb, denom, reduction = node.ctx
    xp = xp_of(g)
    scale = _scale_array(g._data, reduction, denom)
    ndim = node.saved[0]._data.ndim
    picked = w_row * scale  # the one-hot coefficient of each row
    if eps:
        picked = picked * (1 - eps)
    if kind == "nll":
        grad = xp.zeros(node.saved[0]._data.shape, dtype=w_row.dtype)
    elif eps:
        C = probs.shape[ca]
        smooth = valid * (scale * (eps / C))
        row_total = picked + smooth * (C if wb is None else wb.sum())
        grad = probs * _along(xp.asarray(row_total), ca, ndim)
        grad -= _along(xp.asarray(smooth), ca, ndim) * (1 if wb is None else wb)
    else:
        grad = probs * _along(xp.asarray(picked), ca, ndim)
    _classes_last(grad, ca)[_target_index(tc, ca, xp)] -= picked
    return _make(grad, g._device)


def _class_loss_bw(node, g):
    """Gradient of ``-(A * logp).sum(class)`` (scaled per the reduction) w.r.t. the logits,
    ``(softmax * A.sum(class) - A) * scale``, and, for probability targets, the target.
    Written with Tensor ops when a graph is recorded (create_graph), so it is differentiable;
    without one the same formula runs in array code."""
    x, target = node.saved
    kind, ca, probs, tc, valid, w_row, eps, wb, denom, reduction = node.ctx
    if kind != "prob" and not GRAD.enabled:
        return (_index_grad_array(node, g) if node.needs_grad(0) else None), None
    ndim = x._data.ndim
    dev = g._device
    C = x._data.shape[ca]
    if reduction == "none":
        scale = g.reshape(_along(g._data, ca, ndim).shape)
    else:
        scale = g / denom if reduction == "mean" else g
    wbt = None if wb is None else _make(wb, dev)
    if kind == "prob":  # A depends on the target, which may take part in autograd
        A = target * (1 - eps) + eps / C if eps else target
        if wbt is not None:
            A = A * wbt
        rowsum = A.sum(ca, keepdim=True)
    else:
        xp = xp_of(x)
        onehot = _along(tc, ca, ndim) == xp.arange(C).reshape(_class_shape(C, ca, ndim))
        wr = _along(w_row, ca, ndim)
        A = onehot * (wr * (1 - eps))
        rowsum = wr * (1 - eps)
        if eps:
            vw = _along(valid.astype(w_row.dtype), ca, ndim) * (eps / C)
            A = A + vw * (1 if wb is None else wb)
            rowsum = rowsum + vw * (C if wb is None else wb.sum())
        A, rowsum = _make(A, dev), _make(xp.asarray(rowsum), dev)
    if GRAD.enabled:  # create_graph: softmax / log_softmax as functions of x
        lp = x - x.logsumexp(ca, keepdim=True)
    else:
        lp = _make(probs, dev)  # kind == 'prob' keeps log-probabilities
    gx = gt = None
    if node.needs_grad(0):
        gx = -(A * scale) if kind == "nll" else (lp.exp() * rowsum - A) * scale
    if kind == "prob" and node.needs_grad(1):
        w = lp if wbt is None else lp * wbt
        gt = -(w * scale) * (1 - eps)
    return gx, gt


CrossEntropyLossBackward0 = make_node_class("CrossEntropyLossBackward0", _class_loss_bw)
NllLossBackward0 = make_node_class("NllLossBackward0", _class_loss_bw)


def _class_loss(input, target, weight, ignore_index, reduction, eps, kind):
    """The shared kernel of ``cross_entropy`` (``kind`` 'index'/'prob') and ``nll_loss``:
    every row's loss is ``-(A * log_softmax(input)).sum(class)`` for a constant ``A``."""
    d = input._data
    t = target._data
    xp = xp_of(input)
    check_same_device(input, target, weight)
    ca = _class_axis(d)
    C = d.shape[ca]
    if kind == "prob":
        if t.dtype.kind != "f":
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {_pretty(t.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        _check_weight(weight, C)
    else:
        _check_index_target(d, t, weight, C, ca)
    if d.dtype.kind != "f":
        raise NotImplementedError('"log_softmax_lastdim_kernel_impl" not implemented for '
                                  f"'{_pretty(d.dtype)}'")
    dt = d.dtype
    wb = None if weight is None else \
        weight._data.astype(dt, copy=False).reshape(_class_shape(C, ca, d.ndim))
    tgrad = kind == "prob" and target.requires_grad
    need_grad = GRAD.enabled and (input.requires_grad or tgrad)
    tc = valid = w_row = probs = None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == "nll":
            shifted, lse = d, 0
        else:  # log_softmax = shifted - lse, computed once
            shifted = d - d.max(axis=ca, keepdims=True)
            e = xp.exp(shifted)
            total = e.sum(axis=ca, keepdims=True)
            lse = xp.log(total)
        if kind == "prob":
            logp = shifted - lse
            tp = t.astype(dt, copy=False)
            if eps:
                tp = tp * (1 - eps) + eps / C
            row = -(logp * (tp if wb is None else tp * wb)).sum(axis=ca)
            denom = row.size
            probs = logp
        else:
            tc, valid, w_row = _index_weights(t, weight, ignore_index, C, dt, xp)
            idx = _target_index(tc, ca, xp)
            picked = _classes_last(shifted, ca)[idx] - (lse if kind == "nll" else
                                                        _classes_last(lse, ca)[..., 0])
            row = -(picked * w_row)
            if eps:
                logp = shifted - lse
                smooth = -(logp if wb is None else logp * wb).sum(axis=ca) * valid
                row = row * (1 - eps) + smooth * (eps / C)
            denom = w_row.sum()
            if need_grad and kind != "nll":
                e /= total
                probs = e
        if reduction == "none":
            r = row
        elif reduction == "sum":
            r = row.sum()
        else:
            r = row.sum() / denom
    out = _make(r.astype(dt, copy=False), input._device)
    if need_grad:
        node_cls = NllLossBackward0 if kind == "nll" else CrossEntropyLossBackward0
        ctx = (kind, ca, probs, tc, valid, w_row, eps, wb, denom, reduction)
        record(node_cls, out, (input, target if tgrad else None), (input, target), ctx)
    return out


@register("cross_entropy", function=False, method=False)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between ``input`` logits (``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``)
    and ``target`` class indices or class probabilities, as ``torch.nn.functional``."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")
    kind = "prob" if target._data.shape == input._data.shape and \
        target._data.dtype.kind == "f" else "index"
    return _class_loss(input, target, weight, ignore_index, reduction, float(label_smoothing),
                       kind)


@register("nll_loss", function=False, method=False)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class-index ``target`` given log-probabilities ``input``."""
    reduction = _reduction(reduction, size_average, reduce)
    return _class_loss(input, target, weight, ignore_index, reduction, 0.0, "nll")


# -- regression losses --------------------------------------------------------------------------

def _difference(input, target, kernel):
    _warn_size(input, target)
    _float_kernel(input, kernel)
    return input - target


@register("mse_loss", function=False, method=False)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``weight``: a weighted mean divided by ``weight.sum()``)."""
    reduction = _reduction(reduction, size_average, reduce)
    if weight is None and isinstance(target, Tensor) and target._data.shape == input._data.shape \
            and target._data.dtype == input._data.dtype:
        return _mse_fused(input, target, reduction)
    diff = _difference(input, target, "mse_cpu")
    return _weighted_reduce(diff * diff, weight, input, reduction)


def _mse_bw(node, g):
    """``2 (input - target) * scale`` for the input and its negation for the target."""
    x, y = node.saved
    reduction = node.ctx
    scale = g * (2.0 / x._data.size) if reduction == "mean" else g * 2.0
    gx = (x - y) * scale
    return gx, (-gx if node.needs_grad(1) else None)


MseLossBackward0 = make_node_class("MseLossBackward0", _mse_bw)


def _mse_fused(input, target, reduction):
    """``mse_loss`` of same-shape, same-dtype tensors as one node (the common case)."""
    _float_kernel(input, "mse_cpu")
    check_same_device(input, target)
    diff = input._data - target._data
    sq = diff * diff
    r = sq if reduction == "none" else sq.sum() if reduction == "sum" else \
        sq.sum() / sq.size if sq.size else sq.mean()
    out = _make(r, input._device)
    if GRAD.enabled and (input.requires_grad or target.requires_grad):
        record(MseLossBackward0, out, (input, target), (input, target), reduction)
    return out


@register("l1_loss", function=False, method=False)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error (``weight``: a weighted mean divided by ``weight.sum()``)."""
    reduction = _reduction(reduction, size_average, reduce)
    return _weighted_reduce(_difference(input, target, "l1_cpu").abs(), weight, input,
                            reduction)


def _quadratic_then_linear(input, target, limit, kernel, slope_scale):
    """``0.5 z**2 / s`` below ``limit`` and linear above (``z = |input - target|``); ``s`` is
    ``limit`` for smooth L1 and 1 for Huber (which scales the linear part by ``limit``)."""
    z = _difference(input, target, kernel).abs()
    if slope_scale:  # smooth_l1: 0.5 z^2 / beta, z - beta / 2
        return where(z < limit, z * z * (0.5 / limit), z - 0.5 * limit)
    return where(z < limit, z * z * 0.5, (z - 0.5 * limit) * limit)


@register("smooth_l1_loss", function=False, method=False)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta`` (divided by ``beta``), absolute error above it."""
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return _reduce(_difference(input, target, "smooth_l1_cpu").abs(), reduction)
    return _reduce(_quadratic_then_linear(input, target, beta, "smooth_l1_cpu", True),
                   reduction)


@register("huber_loss", function=False, method=False)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it."""
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _quadratic_then_linear(input, target, delta, "huber_cpu", False)
    return _weighted_reduce(loss, weight, input, reduction, mean_by_weight=False)


# -- binary / probabilistic losses --------------------------------------------------------------

def _softplus(x):
    """``log(1 + exp(x))`` exactly (no linear threshold), smooth gradient ``sigmoid(x)``."""
    return softplus(x, 1.0, math.inf)


@register("binary_cross_entropy", function=False, method=False)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100, as PyTorch."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()!r}) that is different to the "
                         f"input size ({input.size()!r}) is deprecated. Please ensure they "
                         "have the same size.")
    d = input._data
    if ((d < 0) | (d > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        loss = -(target * input.log().clamp_min(-100) +
                 (1 - target) * (1 - input).log().clamp_min(-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@register("binary_cross_entropy_with_logits", method=False)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable expression:
    ``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()!r}) must be the same as input size "
                         f"({input.size()!r})")
    sp = _softplus(-input)
    if pos_weight is not None:
        sp = sp * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@register("kl_div", method=False)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence with ``input`` log-probabilities; ``'batchmean'`` divides the sum by the
    batch size; ``log_target``: ``target`` holds log-probabilities too."""
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    reduction = _reduction(reduction, size_average, reduce, extra=("batchmean",))
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


@register("poisson_nll_loss", method=False)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log likelihood; ``full`` adds Stirling's term where ``target > 1``."""
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target.clamp_min(1)  # Stirling's term is masked to 0 where target <= 1
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + where(target > 1, stirling, 0)
    return _reduce(loss, reduction)


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
    loss = 0.5 * (var.log() + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# -- margin and embedding losses ----------------------------------------------------------------

@register("margin_ranking_loss", method=False)
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()!r}, input2: "
                           f"{input2.size()!r}, target: {target.size()!r} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@register("hinge_embedding_loss", method=False)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    reduction = _reduction(reduction, size_average, reduce)
    hinge = where(target != 1, (margin - input).clamp_min(0), 0)
    return _reduce(hinge + where(target != -1, input, 0), reduction)


@register("cosine_embedding_loss", method=False)
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos - margin)`` where -1."""
    reduction = _reduction(reduction, size_average, reduce)
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / (mag1 * mag2).sqrt()
    pos = where(target == 1, 1 - cos, 0)
    neg = where(target == -1, (cos - margin).clamp_min(0), 0)
    return _reduce(pos + neg, reduction)


def _pairwise_distance(x1, x2, p, eps):
    return (x1 - x2 + eps).norm(p, -1)


@register("triplet_margin_loss", method=False)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise ``p``-distance;
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    reduction = _reduction(reduction, size_average, reduce)
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


@register("soft_margin_loss", function=False, method=False)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce(_softplus(-target * input), reduction)


@register("multilabel_soft_margin_loss", function=False, method=False)
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class logistic loss averaged over the classes (last dim)."""
    reduction = _reduction(reduction, size_average, reduce)
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


@register("multi_margin_loss", function=False, method=False)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])**p / C``."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    ca = input.ndim - 1
    C = input.shape[ca]
    t = target.reshape(target.shape + (1,))
    z = (input - input.gather(ca, t) + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[target].reshape(t.shape)
    others = _make(t._data != xp_of(input).arange(C), input._device)
    return _reduce((z * others).sum(ca) / C, reduction)


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
    safe = np.where(np.isfinite(m), m, 0)
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
    return alpha, beta, loglik


def _ctc_grad(node, g):
    """``d nll / d log_probs`` was computed by the alpha-beta pass (array code); the node
    scales it by the incoming gradient with Tensor ops. Not twice differentiable w.r.t.
    ``log_probs`` (PyTorch's is not either)."""
    grad_unit, unbatched = node.ctx
    gu = _make(grad_unit, g._device)
    if unbatched:
        return (gu * g,)
    return (gu * g.reshape((1, g.shape[0], 1)),)


CtcLossBackward0 = make_node_class("CtcLossBackward0", _ctc_grad)


@register("ctc_loss", method=False)
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
    il = _lengths(input_lengths, N, "input_lengths", xp)
    tl = _lengths(target_lengths, N, "target_lengths", xp)
    if N and int(il.max()) > T:
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(il.max())} (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    tg = xp.asarray(targets._data)
    if unbatched and tg.ndim == 1:
        tg = tg[None, :]
    padded, smax = _padded_targets(tg, tl, N, xp, blank)
    S = 2 * smax + 1
    ext = xp.full((N, S), blank, dtype=np.int64)
    ext[:, 1::2] = padded
    skip = xp.zeros((N, S), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
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
    out = _make(r[0] if unbatched else r, log_probs._device)
    if grad_unit is not None:
        record(CtcLossBackward0, out, (log_probs,), (), (grad_unit, unbatched))
    if reduction == "mean":
        lengths = _make(xp.maximum(tl, 1).astype(d.dtype), log_probs._device)
        return (out / (lengths[0] if unbatched else lengths)).mean()
    return out.sum() if reduction == "sum" else out
