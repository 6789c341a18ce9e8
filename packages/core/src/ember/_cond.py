"""``ember.cond`` (``torch.cond``): structured if/else over tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._tensor import Tensor

__all__ = ["cond"]


def _leaves(tree: Any, out: list) -> list:
    if isinstance(tree, (tuple, list)):
        for t in tree:
            _leaves(t, out)
    elif isinstance(tree, dict):
        for t in tree.values():
            _leaves(t, out)
    else:
        out.append(tree)
    return out


def _structure(tree: Any) -> Any:
    """The nesting of ``tree`` with its leaves left out (what both branches must share)."""
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(_structure(t) for t in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((k, _structure(v)) for k, v in tree.items()))
    return "*"


def _validate_input(pred, true_fn, false_fn, operands) -> None:
    if not isinstance(pred, (bool, Tensor)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                           f"{pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or any(
            not isinstance(t, Tensor) for t in _leaves(operands, [])):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")


def _check_outputs(taken: Any, other: Any, operands) -> None:
    """PyTorch traces both branches and merges their outputs: same nesting, and tensors of
    the same dtype and number of dimensions (sizes may differ); no output may be an
    input."""
    if _structure(taken) != _structure(other):
        raise RuntimeError("Unmatched output spec from torch.cond branches: the two branches "
                           "return different structures")
    inputs = {id(t) for t in _leaves(operands, [])}
    for a, b in zip(_leaves(taken, []), _leaves(other, [])):
        if isinstance(a, Tensor) != isinstance(b, Tensor):
            raise RuntimeError("Unmatched output spec from torch.cond branches: a tensor "
                               "and a non-tensor output")
        if isinstance(a, Tensor):
            if a.dim() != b.dim():
                raise RuntimeError("When merging two branches' output in torch.cond,  "
                                   f"expected same dim but got {a.dim()} and {b.dim()}.")
            if a.dtype != b.dtype:
                raise RuntimeError("When merging two branches' output in torch.cond,  "
                                   f"expected same dtype but got {a.dtype} and {b.dtype}.")
            if id(a) in inputs or id(b) in inputs:
                raise RuntimeError("Encountered aliasing during higher order op tracing: a "
                                   "branch of torch.cond returns one of its inputs; return "
                                   "a copy (x.clone())")


def _symbolic(pred: Tensor) -> bool:
    """Whether ``pred``'s value is unknown here: a capture (export, compile, trace) is
    running, or it is batched by ``vmap``."""
    from .export._capture import current

    if current() is not None:
        return True
    from ._functorch._batched import BatchedTensor

    return type(pred) is BatchedTensor


def _select(pred: Tensor, true_fn: Callable, false_fn: Callable, operands) -> Any:
    """Both branches, each output chosen by ``pred`` with ``where`` (what PyTorch's vmap of
    ``cond`` does, and here also how a capture records it: the graph holds both branches and
    a select, so the exported program follows ``pred`` at run time and its gradients flow
    only through the branch chosen). Branches whose outputs differ in shape cannot be merged
    so: a data-dependent error, as before."""
    import ember  # through the namespace, which a capture sees

    where = ember.where
    a, b = true_fn(*operands), false_fn(*operands)
    _check_outputs(a, b, operands)
    la, lb = _leaves(a, []), _leaves(b, [])
    for x, y in zip(la, lb):
        if isinstance(x, Tensor) and tuple(x.shape) != tuple(y.shape):
            raise RuntimeError(f"ember.cond: the branches' outputs have different shapes "
                               f"({tuple(x.shape)} and {tuple(y.shape)}), which a captured or "
                               "vmapped cond cannot select between; make the shapes agree")
    p = pred.reshape(()) if pred.dim() else pred
    if p.dtype is not _bool_dtype():
        p = p != 0
    chosen = iter([where(p, x, y) if isinstance(x, Tensor) else x for x, y in zip(la, lb)])
    return _rebuild(a, chosen)


def _bool_dtype():
    from . import _dtype

    return _dtype.bool


def _rebuild(tree: Any, leaves) -> Any:
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(t, leaves) for t in tree)
    if isinstance(tree, dict):
        return {k: _rebuild(v, leaves) for k, v in tree.items()}
    return next(leaves)


def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (``torch.cond``).

    ``pred`` is a Python bool (the branch simply runs) or a one-element tensor; then
    ``operands`` must be a tuple/list of tensors (possibly nested) and both branches must
    return the same structure of tensors with the same dtypes and numbers of dimensions,
    none of them an input, as PyTorch checks when it traces both branches: the branch not
    taken runs too, under ``no_grad``, to be checked. Gradients flow through the branch
    taken.

    Under a capture (``ember.export``, ``ember.compile``, ``ember.jit.trace``) and under
    ``vmap`` (a batched ``pred``), both branches run and each output is selected with
    ``where(pred, ...)``: the exported program follows ``pred`` at run time (in Python, C++
    and ONNX alike), and gradients reach only the branch chosen. The branches' outputs must
    then have equal shapes.
    """
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    _validate_input(pred, true_fn, false_fn, operands)
    from .autograd.grad_mode import no_grad

    if _symbolic(pred):
        return _select(pred, true_fn, false_fn, operands)
    take = bool(pred.item())
    branch, other = (true_fn, false_fn) if take else (false_fn, true_fn)
    result = branch(*operands)
    with no_grad():
        other_result = other(*operands)
    if take:
        _check_outputs(result, other_result, operands)
    else:
        _check_outputs(other_result, result, operands)
    return result
