"""Shared checks of the eager higher-order ops."""

from __future__ import annotations

from .._tensor import Tensor


def check_same_metadata(what: str, outs, carried) -> None:
    """PyTorch's check that a body returned what it was given: as many values, and tensors of
    the same shape and dtype in the same places."""
    if len(outs) != len(carried):
        raise RuntimeError(f"{what}: body_fn should return the same number of outputs as "
                           f"carried_inputs, got {len(outs)} and {len(carried)}")
    for i, (a, b) in enumerate(zip(outs, carried)):
        if isinstance(b, Tensor):
            if not isinstance(a, Tensor):
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same "
                                   f"metadata but found: pair[{i}] is {type(a).__name__} and "
                                   "a tensor")
            for field, x, y in (("shape", tuple(a.shape), tuple(b.shape)),
                                ("dtype", a.dtype, b.dtype)):
                if x != y:
                    raise RuntimeError(f"Expected body_fn_output and carried_inputs to have "
                                       f"same metadata but found: pair[{i}] differ in "
                                       f"'{field}: {x} vs {y}'")
