"""``functionalize``, ``replace_all_batch_norm_modules_`` and ``debug_unwrap``
(``torch.func``'s)."""

from __future__ import annotations

import functools

from .._tensor import Tensor
from . import _interpreter
from ._batched import BatchedTensor
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["functionalize", "replace_all_batch_norm_modules_", "debug_unwrap"]


def functionalize(func, *, remove: str = "mutations"):
    """``func`` as a function without observable mutation or aliasing of its inputs
    (``torch.func.functionalize``): it runs on copies of the tensor arguments, its outputs
    never alias the arguments, and the arguments it mutated receive their final values once
    it returns (PyTorch's semantics: input mutations are applied at the end). ``remove`` is
    ``"mutations"`` or ``"mutations_and_views"``; eager Ember runs both the same way."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n     remove='mutations': "
                           f"all inplace and out= operators will be removed from the program, "
                           f"and replaced with their out-of-place equivalents.\n     "
                           f"remove='mutations_and_views': In addition to the above, all "
                           f"aliasing operators {{view}} will be replaced with their non-aliasing "
                           f"counterparts, {{view}}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        import ember

        flat, spec = tree_flatten((args, kwargs))
        copies = [x.clone() if isinstance(x, Tensor) else x for x in flat]
        versions = [x._version if isinstance(x, Tensor) else None for x in copies]
        new_args, new_kwargs = tree_unflatten(copies, spec)
        _interpreter.push(_interpreter.TransformType.Functionalize)
        try:
            out = func(*new_args, **new_kwargs)
        finally:
            _interpreter.pop()
        with ember.no_grad():
            for orig, c, v in zip(flat, copies, versions):
                if isinstance(c, Tensor) and c._version != v:
                    orig.copy_(c)  # the mutation, applied to the caller's tensor at the end
        outs, out_spec = tree_flatten(out)
        ids = {id(c) for c in copies if isinstance(c, Tensor)}
        outs = [o.clone() if isinstance(o, Tensor) and (id(o) in ids or _aliases(o, copies))
                else o for o in outs]
        return tree_unflatten(outs, out_spec)

    return wrapped


def _aliases(t, copies) -> bool:
    base = t._base
    return base is not None and any(base is c or base is c._base for c in copies
                                    if isinstance(c, Tensor))


def replace_all_batch_norm_modules_(root):
    """Stop every batch-norm module in ``root`` from tracking running statistics (in place:
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` become None,
    ``track_running_stats`` False), so that ``vmap`` over it computes each example's
    statistics from its own batch (``torch.func.replace_all_batch_norm_modules_``)."""
    for module in root.modules():
        if getattr(module, "track_running_stats", False) and "BatchNorm" in \
                "".join(c.__name__ for c in type(module).__mro__):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse: bool = True):
    """The physical tensor behind a tensor seen inside ``vmap`` (batch dims in front), for
    debugging (``torch.func.debug_unwrap``); other tensors come back as they are."""
    if not isinstance(tensor, BatchedTensor):
        return tensor
    out = tensor._value
    while recurse and isinstance(out, BatchedTensor):
        out = out._value
    return out
