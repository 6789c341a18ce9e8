"""``ember.while_loop`` (``torch.while_loop``): a loop over carried tensors, run eagerly.

PyTorch compiles the loop even in eager mode and checks, while it traces, that the body
keeps every carried value's metadata; Ember runs it directly and makes the same checks on
each step's values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._cond import _leaves, _rebuild, _structure
from ._tensor import Tensor

__all__ = ["while_loop"]


def _check_pred(pred) -> bool:
    if (isinstance(pred, Tensor) and pred.dim() == 0 and pred.dtype.is_floating_point is False
            and str(pred.dtype).endswith("bool")) or isinstance(pred, bool):
        return bool(pred)
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got "
                       f"{pred}")


def _metadata(v) -> str:
    if isinstance(v, Tensor):
        return f"Tensor(size={tuple(v.shape)}, dtype={v.dtype}, device={v.device})"
    return type(v).__name__


def _check_body_output(out, carried) -> None:
    if not isinstance(out, tuple):
        raise RuntimeError(f"body_fn should return a tuple but got {type(out)}")
    if len(out) != len(carried):
        raise RuntimeError(f"body_fn should return the same number of elements as "
                           f"carried_inputs, got {len(out)} vs {len(carried)}")
    if _structure(out) != _structure(tuple(carried)):
        raise RuntimeError("Expected body_fn_output and carried_inputs to have same tree "
                           "structure")
    for i, (a, b) in enumerate(zip(_leaves(out, []), _leaves(tuple(carried), []))):
        if isinstance(a, Tensor) != isinstance(b, Tensor):
            raise RuntimeError("Expected body_fn_output and carried_inputs to have same "
                               f"metadata but found:\npair[{i}] differ in '{_metadata(a)} vs "
                               f"{_metadata(b)}'")
        if isinstance(a, Tensor):
            for what, x, y in (("dtype", a.dtype, b.dtype), ("size", tuple(a.shape),
                                                              tuple(b.shape)),
                               ("device", a.device, b.device)):
                if x != y:
                    raise RuntimeError("Expected body_fn_output and carried_inputs to have "
                                       f"same metadata but found:\npair[{i}] differ in "
                                       f"'{what}: {x} vs {y}'")
        elif not isinstance(a, int):
            raise RuntimeError(f"body_fn must return tensors or ints, but got {type(a)}")


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> Any:
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds (a boolean
    scalar tensor or a bool), starting from ``carried_inputs`` (a tuple or list of tensors and
    ints, possibly nested in lists, tuples and dicts); returns the final values as a tuple.

    As PyTorch checks when it traces the loop, ``body_fn`` must return a tuple of the same
    structure with tensors of the same shape, dtype and device (and ints where ints were).
    Inputs are never returned: with no iteration the result is a copy of them."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got "
                           f"{type(carried_inputs)}")
    leaves = _leaves(carried_inputs, [])
    if not all(isinstance(t, (Tensor, int)) for t in leaves):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           "dict/list/tuple that only consists of tensor or int leaves, but "
                           f"got {carried_inputs}.")
    carried = tuple(carried_inputs)
    if not _check_pred(cond_fn(*carried)):
        return _rebuild(carried, iter([t.clone() if isinstance(t, Tensor) else t
                                       for t in _leaves(carried, [])]))
    while True:
        out = body_fn(*carried)
        _check_body_output(out, carried)
        carried = out
        if not _check_pred(cond_fn(*carried)):
            return carried
