"""The functional API (``torch.nn.functional``).

``linear``, ``bilinear``, ``linear_cross_entropy`` and the multi-head attention live here;
every other name is ember-core's, as its op registry lists them
(``ember.ops.api.functional_kernels()``: registered ops tagged ``"nn.functional"``, or the
kernel with F's own signature where it differs from the op's). This module never holds
placeholders.
"""

from __future__ import annotations

import inspect
import math
import sys

import ember
from ember import Tensor
from ember.ops import api
from ember.ops.api import make_inplace

linear = ember.linear


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y = x1^T A x2 + b`` over the last dims (``torch.nn.functional.bilinear``; the core op
    ``ember.bilinear``)."""
    return ember.bilinear(input1, input2, weight, bias)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """The cross entropy between ``input`` transformed linearly and ``target``
    (``torch.nn.functional.linear_cross_entropy``).

    With ``options=None`` this is::

        logits = linear(input, linear_weight.reshape(-1, in_features), flat_bias)
        cross_entropy(logits.reshape(N, C, *out_features), target, ...)

    with ``ignore_index=None`` meaning -100. An ``options``
    (:class:`~ember.nn.LinearCrossEntropyOptions`) selects the chunked implementation, which
    never holds the ``(N, C)`` logits at once; it covers 2-d ``linear_weight``, int64 class
    indices, no label smoothing and ``'mean'``/``'sum'``/``'none'`` (other calls warn and take
    the reference path), and is differentiable once (no double backward).

    Shapes: ``input`` ``(in_features)`` or ``(N, in_features)``; ``linear_weight``
    ``(C, in_features)`` or ``(C, d_1, ..., d_K, in_features)`` (then ``input`` must be
    batched); ``linear_bias`` ``(C, d_1, ..., d_K)``; ``target`` class indices ``()``, ``(N)``,
    ``(N, d_1, ..., d_K)`` or class probabilities shaped like the logits.
    """
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    num_batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, "
                           "respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    # cross_entropy tells class probabilities from indices by the target's shape
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100

    if options is not None:
        tracing = _is_tracing()
        if (out_features or reduction not in ("mean", "sum", "none") or label_smoothing != 0.0
                or target.dtype != ember.int64 or tracing):
            import warnings

            warnings.warn(
                "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, "
                f"out_features == (). Got reduction={reduction!r}, "
                f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                f"out_features={out_features}, tracing={tracing}, linear_bias.shape="
                f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                stacklevel=2)
        else:
            return _linear_cross_entropy_chunked(input, linear_weight, target, linear_bias,
                                                 weight, reduction, ignore_index, options)

    if out_features:
        flat = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape((flat, in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(flat)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,  # noqa: F821
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


def _is_tracing() -> bool:
    jit = sys.modules.get("ember.jit")
    return bool(jit is not None and getattr(jit, "is_tracing", lambda: False)())


def _linear_cross_entropy_chunked(input, linear_weight, target, linear_bias, weight,
                                  reduction, ignore_index, options):
    """The chunked path of :func:`linear_cross_entropy` (2-d weight, int64 indices)."""
    batched = input.dim() == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    options = options._adjust(num_batches=input.shape[0], in_features=input.shape[1],
                              num_classes=linear_weight.shape[0], dtype=input.dtype,
                              device=input.device)
    dtype, acc_dtype = input.dtype, options.acc_dtype
    if dtype != acc_dtype and not (dtype == ember.float16 and acc_dtype == ember.float32):
        raise RuntimeError("linear_cross_entropy supports float32 acc_dtype with "
                           f"float16/bfloat16 inputs, but got {acc_dtype} acc_dtype and "
                           f"{dtype} inputs.")
    grad_on = ember.is_grad_enabled()
    needs = (grad_on and input.requires_grad, grad_on and linear_weight.requires_grad,
             grad_on and linear_bias is not None and linear_bias.requires_grad)
    result = _ChunkedLinearCrossEntropy.apply(
        input, linear_weight, linear_bias, target, weight, reduction, ignore_index,
        options.batch_chunk_size, acc_dtype, options.allow_retain_graph, needs)
    return result if batched else result.squeeze(0)


def _row_weights(target, weight, ignore_index: int, num_classes: int, acc_dtype):
    """The class index of each row (ignored rows read class 0 when ``ignore_index`` is out of
    range) and its weight in ``acc_dtype`` (0 for ignored rows)."""
    ignored = target == ignore_index
    if ignore_index < 0 or ignore_index >= num_classes:
        target = ember.where(ignored, 0, target)
    if weight is None:
        row_weight = (~ignored).to(acc_dtype)
    else:
        row_weight = ember.where(ignored, 0, weight.to(acc_dtype).index_select(0, target))
    return target, row_weight


def _chunked_pass(input, linear_weight, linear_bias, target, row_coef, chunk: int, acc_dtype,
                  needs, rows_out=None):
    """One pass over the batch in chunks of ``chunk`` rows (under ``no_grad``).

    Returns ``sum(row_coef * nll)`` and, for each True of ``needs``, the gradient of that sum
    with respect to ``input``, ``linear_weight`` and ``linear_bias`` (in ``acc_dtype``);
    ``rows_out`` (optional) receives ``row_coef * nll`` per row. A chunk's gradient of the
    logits is ``row_coef * (softmax - one_hot(target))``, built in place in its logits.
    """
    n = input.shape[0]
    weight_acc = linear_weight.to(acc_dtype)
    weight_t = weight_acc.t()
    bias_acc = linear_bias.to(acc_dtype) if linear_bias is not None else None
    need_input, need_weight, need_bias = needs
    grad_input = ember.empty(input.shape, dtype=acc_dtype, device=input.device) \
        if need_input else None
    grad_weight = ember.zeros_like(weight_acc) if need_weight else None
    grad_bias = ember.zeros_like(bias_acc) if need_bias else None
    total = ember.zeros((), dtype=acc_dtype, device=input.device)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        x = input.narrow(0, start, size).to(acc_dtype)
        t = target.narrow(0, start, size).unsqueeze(1)
        coef = row_coef.narrow(0, start, size)
        logits = x.matmul(weight_t)
        if bias_acc is not None:
            logits += bias_acc
        logits -= logits.amax(1, keepdim=True)
        nll = logits.gather(1, t).squeeze(1).neg_()
        denom = logits.exp_().sum(1)  # logits now hold exp(shifted logits)
        nll += denom.log()
        nll *= coef
        total += nll.sum()
        if rows_out is not None:
            rows_out.narrow(0, start, size).copy_(nll)
        if any(needs):
            logits *= (coef / denom).unsqueeze(1)
            logits.scatter_add_(1, t, coef.neg().unsqueeze(1))  # the gradient of the logits
            if need_input:
                grad_input.narrow(0, start, size).copy_(logits.matmul(weight_acc))
            if need_weight:
                grad_weight += logits.t().matmul(x)
            if need_bias:
                grad_bias += logits.sum(0)
    return total, grad_input, grad_weight, grad_bias


class _ChunkedLinearCrossEntropy(ember.autograd.Function):
    """``linear_cross_entropy`` over batch chunks. Mean and sum reductions compute their
    gradients in forward (one pass over the batch) and scale them by the incoming gradient;
    ``'none'`` recomputes them in backward, weighted per row."""

    @staticmethod
    def forward(ctx, input, linear_weight, linear_bias, target, weight, reduction, ignore_index,
                chunk, acc_dtype, allow_retain_graph, needs):
        target, row_weight = _row_weights(target, weight, ignore_index, linear_weight.shape[0],
                                          acc_dtype)
        ctx.reduction, ctx.chunk, ctx.acc_dtype = reduction, chunk, acc_dtype
        ctx.allow_retain_graph, ctx.needs = allow_retain_graph, needs
        if reduction == "none":
            rows = ember.empty(input.shape[:1], dtype=acc_dtype, device=input.device)
            _chunked_pass(input, linear_weight, linear_bias, target, row_weight, chunk,
                          acc_dtype, (False, False, False), rows_out=rows)
            ctx.save_for_backward(input, linear_weight, linear_bias, target, row_weight)
            return rows.to(input.dtype)
        if reduction == "mean":
            total_weight = row_weight.sum()
            # NaN when every row is ignored (0 / NaN: no division-by-zero warning)
            row_weight = row_weight / ember.where(total_weight == 0, float("nan"), total_weight)
        total, *grads = _chunked_pass(input, linear_weight, linear_bias, target, row_weight,
                                      chunk, acc_dtype, needs)
        if reduction == "mean" and input.shape[0] == 0:
            total.fill_(float("nan"))  # the mean of nothing
        ctx.grads = [None if g is None else g.to(p.dtype)
                     for g, p in zip(grads, (input, linear_weight, linear_bias))]
        return total.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        none = (None,) * 8
        if ctx.reduction == "none":
            input, linear_weight, linear_bias, target, row_weight = ctx.saved_tensors
            coef = row_weight * grad_output.to(ctx.acc_dtype)
            _, *grads = _chunked_pass(input, linear_weight, linear_bias, target, coef,
                                      ctx.chunk, ctx.acc_dtype, ctx.needs)
            grads = [None if g is None else g.to(p.dtype)
                     for g, p in zip(grads, (input, linear_weight, linear_bias))]
            return (*grads, *none)
        grads = ctx.grads
        if ctx.allow_retain_graph:
            return (*[None if g is None else g * grad_output for g in grads], *none)
        if grads is None:
            raise RuntimeError("linear_cross_entropy chunked backward called twice; "
                               "retain_graph=True / double backward are not supported.")
        ctx.grads = None
        return (*[None if g is None else g.mul_(grad_output) for g in grads], *none)


__all__ = ["linear", "bilinear", "linear_cross_entropy"]
def _with_inplace(fn, name: str):
    """``torch.nn.functional``'s ``name(input, inplace=False)`` over a core op without it."""
    fn_ = make_inplace(fn, name + "_")

    def op(input: Tensor, inplace: bool = False) -> Tensor:
        return fn_(input) if inplace else fn(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    return op


#: activations that ``torch.nn.functional`` gives an ``inplace`` flag
_INPLACE_FLAG = ("relu", "silu", "mish", "hardswish", "hardsigmoid")

for _name, _fn in api.functional_kernels().items():
    if _name in _INPLACE_FLAG and "inplace" not in inspect.signature(_fn).parameters:
        _fn = _with_inplace(_fn, _name)
    globals()[_name] = _fn
    __all__.append(_name)
del _name, _fn
from ._mha import (  # noqa: E402,F401
    _canonical_mask,
    _in_projection,
    _in_projection_packed,
    _none_or_dtype,
    multi_head_attention_forward,
)

# __torch_function__: these functions dispatch on Tensor subclasses once one overrides it
ember.overrides.register_namespace(sys.modules[__name__])
