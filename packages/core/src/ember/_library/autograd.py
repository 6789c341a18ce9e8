"""Autograd for custom ops: the ``register_autograd`` formula as an ``autograd.Function``,
and PyTorch's fallback for an op that has none.

A call whose inputs require grad runs the op's backend kernel inside a generated
``ember.autograd.Function`` (``GeneratedBackwardFor_<ns>_<name>_<overload>``): its forward
runs the kernel (under ``no_grad``) and the user's ``setup_context(ctx, inputs, output)``;
its backward calls the user's ``backward(ctx, *grads)``. ``Tensor[]`` arguments and results
are flattened for the Function and rebuilt for the user's functions (``needs_input_grad``
and the gradients keep the inputs' structure, as PyTorch's ``supports_tensorlist`` does).
"""

from __future__ import annotations

import warnings

from ..autograd.function import Function
from ..autograd.graph import make_node_class, record
from .ops import _tensors_of

__all__ = ["apply", "not_implemented_fallback"]


class _Meta:
    """What one call passes through ``Function.apply`` besides the tensors."""

    __slots__ = ("op", "info", "kernel", "spec", "kwargs", "out_spec")

    def __init__(self, op, info, kernel, spec, kwargs):
        self.op, self.info, self.kernel = op, info, kernel
        self.spec, self.kwargs = spec, kwargs
        self.out_spec = None


def _flatten(values) -> tuple[list, list]:
    """``values`` with each list expanded into its items, and the lengths (None: no list)."""
    flat, spec = [], []
    for v in values:
        if isinstance(v, list):
            flat.extend(v)
            spec.append(len(v))
        else:
            flat.append(v)
            spec.append(None)
    return flat, spec


def _unflatten(flat, spec) -> list:
    out, i = [], 0
    for n in spec:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return out


def _generated(op):
    cls = op._generated
    if cls is None:
        name = f"GeneratedBackwardFor_{op.ns}_{op.name}_{op.overload_name or 'default'}"
        cls = op._generated = type(name, (Function,), {
            "forward": staticmethod(_forward), "backward": staticmethod(_backward),
            "__module__": "ember.autograd.function"})
    return cls


def apply(op, info, kernel, args: tuple, kwargs: dict):
    """Run ``op`` (its ``kernel``) recording one autograd node with ``info``'s formula."""
    flat, spec = _flatten(args)
    meta = _Meta(op, info, kernel, spec, kwargs)
    out = _generated(op).apply(*flat, meta)
    if meta.out_spec is None:
        return out
    flat_out = list(out) if isinstance(out, tuple) else [out]
    rebuilt = _unflatten(flat_out, meta.out_spec[0])
    return rebuilt[0] if meta.out_spec[1] else tuple(rebuilt)


def _forward(ctx, *flat):
    meta = flat[-1]
    args = tuple(_unflatten(flat[:-1], meta.spec))
    op = meta.op
    out = op.run_backend(meta.kernel, args, meta.kwargs)
    setup = meta.info.setup_context
    if setup is not None:
        if op.schema.has_kwarg_only_args():
            setup(ctx=ctx, inputs=args, keyword_only_inputs=meta.kwargs, output=out)
        else:
            setup(ctx=ctx, inputs=args, output=out)
    ctx._ember_meta = meta
    single = not isinstance(out, tuple)
    if single and not isinstance(out, list):
        return out
    flat_out, out_spec = _flatten([out] if single else list(out))
    meta.out_spec = (out_spec, single)
    return tuple(flat_out)


def _backward(ctx, *grads):
    meta = ctx._ember_meta
    op = meta.op
    if meta.info.backward is None:
        raise RuntimeError(f"Trying to backward through {op.overload} but no autograd formula "
                           "was registered. Please use register_autograd to add one.")
    if meta.out_spec is not None:
        rebuilt = _unflatten(list(grads), meta.out_spec[0])
        grads = tuple(rebuilt)
    prev = ctx.needs_input_grad
    try:
        ctx.needs_input_grad = tuple(_unflatten(list(prev[:-1]), meta.spec))
        result = meta.info.backward(ctx, *grads)
    finally:
        ctx.needs_input_grad = prev
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != len(meta.spec):
        raise RuntimeError(f"{op.key}: the backward registered with register_autograd returned "
                           f"{len(result)} gradients, but the op has {len(meta.spec)} inputs "
                           "(return one gradient, or None, per input)")
    flat = []
    for g, n in zip(result, meta.spec):
        if n is None:
            flat.append(g)
        elif g is None:
            flat.extend([None] * n)
        elif isinstance(g, (list, tuple)) and len(g) == n:
            flat.extend(g)
        else:
            raise RuntimeError("Expected the return from backward to be of the same structure "
                               f"as the inputs. Got: {type(g).__name__} for an input list of "
                               f"{n} tensors")
    return (*flat, None)


def _not_implemented_backward(node, grad):
    warnings.warn(
        f"{node.ctx}: an autograd kernel was not registered to the Autograd key(s) but we are "
        "trying to backprop through it. This may lead to silently incorrect behavior. This "
        "behavior is deprecated and will be removed in a future version of PyTorch. If your "
        "operator is differentiable, please ensure you have registered an autograd kernel to "
        "the correct Autograd key (e.g. DispatchKey::Autograd, "
        "DispatchKey::CompositeImplicitAutograd: ember.library.register_autograd). If your "
        "operator is not differentiable, or to squash this warning and use the previous "
        "behavior, please register ember.library.fallthrough_kernel to DispatchKey::Autograd.",
        UserWarning, stacklevel=2)
    return (None,) * len(node.next_functions)


_NotImplemented = make_node_class("NotImplemented", _not_implemented_backward)
_NotImplemented._complex = "own"  # its (absent) gradients are right for complex values too


def not_implemented_fallback(op, args, kwargs, out) -> None:
    """PyTorch's autograd fallback ("warn" mode) for an op with no autograd registration:
    a floating output that does not require grad gets a node whose backward warns and gives
    no gradient."""
    from .._dtype import INEXACT_NP

    inputs = [t for t in _tensors_of((*args, *kwargs.values()))]
    outs = out if isinstance(out, tuple) else (out,)
    for o in _tensors_of(outs):
        if not o.requires_grad and o._data.dtype in INEXACT_NP and \
                not any(o is t for t in inputs):
            record(_NotImplemented, o, inputs, ctx=op.qualname)

