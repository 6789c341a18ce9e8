"""``torch.distributed.tensor.experimental``: ``implicit_replication`` (plain tensors in a
DTensor op count as replicated) and ``local_map`` (run a function written for local tensors
on DTensors). ``context_parallel`` and ``register_sharding`` are not provided: Ember's
attention has no ring implementation to shard the sequence over, and its sharding rules are
Python functions in ``ember.distributed.tensor._ops``, not registered strategies."""

from __future__ import annotations

import contextlib
import functools
import threading

from ...._tensor import Tensor

__all__ = ["implicit_replication", "local_map"]


class _Implicit(threading.local):
    on = False


IMPLICIT = _Implicit()


@contextlib.contextmanager
def implicit_replication():
    """Within the block, a plain tensor passed to an op together with DTensors is taken as
    a DTensor replicated over their mesh (its value the same on every rank), instead of
    raising "got mixed torch.Tensor and DTensor" (opacus' FSDP optimizers add noise so)."""
    before = IMPLICIT.on
    IMPLICIT.on = True
    try:
        yield
    finally:
        IMPLICIT.on = before


def replicate_plain(mesh, args, kwargs):
    """``(args, kwargs)`` with their plain tensors as DTensors replicated over ``mesh``."""
    from .._api import DTensor
    from ..placement_types import Replicate

    placements = [Replicate()] * mesh.ndim

    def swap(obj):
        if isinstance(obj, DTensor):
            return obj
        if isinstance(obj, Tensor):
            return DTensor.from_local(obj, mesh, placements, run_check=False)
        if type(obj) in (list, tuple):
            return type(obj)(swap(o) for o in obj)
        return obj

    return swap(args), {k: swap(v) for k, v in kwargs.items()}


def local_map(func=None, out_placements=None, in_placements=None, in_grad_placements=None,
              device_mesh=None, *, redistribute_inputs: bool = False):
    """``func`` (written for this rank's local tensors) made to take and return DTensors:
    each DTensor argument becomes its local tensor (after checking, or with
    ``redistribute_inputs`` changing, its placements against ``in_placements``), ``func``
    runs, and each output becomes a DTensor with ``out_placements`` on ``device_mesh`` (the
    first DTensor argument's mesh by default). Called with no DTensor argument, ``func``
    runs on the arguments as they are and its outputs are returned as they are. Used as
    ``local_map(out_placements=...)`` it returns a decorator."""
    if func is None:
        return functools.partial(local_map, out_placements=out_placements,
                                 in_placements=in_placements,
                                 in_grad_placements=in_grad_placements,
                                 device_mesh=device_mesh,
                                 redistribute_inputs=redistribute_inputs)
    return functools.partial(_local_mapped, func, out_placements, in_placements,
                             in_grad_placements, device_mesh, redistribute_inputs)


def _given(specs, i: int, arg, what: str):
    """DTensor argument ``i``'s entry of ``in_placements``/``in_grad_placements`` as a tuple
    (None when the list is not given; PyTorch's error when its entry is None)."""
    if specs is None:
        return None
    if specs[i] is None:
        raise AssertionError(f"DTensor input {arg} expects {what} but received None!")
    return tuple(specs[i])


def _local_mapped(func, out_placements, in_placements, in_grad_placements, device_mesh,
                  redistribute_inputs, *args, **kwargs):
    from ....utils._pytree import tree_flatten, tree_unflatten
    from .._api import DTensor

    flat_args, args_spec = tree_flatten(args)
    if in_placements is not None and len(in_placements) != len(flat_args):
        raise AssertionError(f"in_placements length {len(in_placements)} does not match the "
                             f"number of input args {len(flat_args)}!")
    mesh, seen, local_args = device_mesh, False, []
    for i, arg in enumerate(flat_args):
        if isinstance(arg, DTensor):
            seen = True
            if mesh is None:
                mesh = arg.device_mesh
            want = _given(in_placements, i, arg, "placements")
            if want is not None:
                if tuple(arg.placements) != want:
                    if not redistribute_inputs:
                        raise ValueError(f"arg {arg} in local_map has a mismatched placements: "
                                         f"arg placements is {tuple(arg.placements)} but the "
                                         f"input placements is {want}! If "
                                         "redistribute_inputs is wanted, set "
                                         "redistribute_inputs=True to local_map.")
                    arg = arg.redistribute(placements=want)
            grad = _given(in_grad_placements, i, arg, "in grad placements")
            local_args.append(arg.to_local(grad_placements=grad))
        else:
            if (in_placements is not None and not isinstance(arg, Tensor)
                    and in_placements[i] is not None):
                raise AssertionError(f"Non-Tensor input {arg} expects None placements but "
                                     f"received {in_placements[i]}!")
            local_args.append(arg)
    out = func(*tree_unflatten(local_args, args_spec), **kwargs)
    if not seen:
        return out
    flat_out, out_spec = tree_flatten(out)
    specs = out_placements if isinstance(out_placements, tuple) else (out_placements,)
    if len(flat_out) != len(specs):
        raise AssertionError(f"local_map requires one PlacementType be provided for each "
                             f"output value, received {len(specs)} out_placements but "
                             f"{len(flat_out)} is expected!")
    wrapped = []
    for o, spec in zip(flat_out, specs):
        if isinstance(o, Tensor):
            if isinstance(o, DTensor):
                raise AssertionError(f"torch.Tensor output expected but received {type(o)}: "
                                     f"{o}")
            wrapped.append(DTensor.from_local(o, mesh, spec, run_check=False))
        else:
            if spec is not None:
                raise AssertionError(f"Non-tensor output {o} expects None placements but "
                                     f"received {spec}!")
            wrapped.append(o)
    return tree_unflatten(wrapped, out_spec)
