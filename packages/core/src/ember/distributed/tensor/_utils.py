"""Shapes and offsets of DTensor shards (PyTorch's ``torch.distributed.tensor._utils``)."""

from __future__ import annotations

from . import _redistribute as _rd
from .placement_types import Shard, _StridedShard

__all__ = ["compute_local_shape_and_global_offset", "compute_global_tensor_info"]


def compute_local_shape_and_global_offset(global_shape, mesh, placements,
                                          skip_offset: bool = False):
    """This rank's local shape and the global index of its first element along each dim
    (``((0,), ())`` when the rank is not part of ``mesh``)."""
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        return ((0,), ())
    global_shape = tuple(int(s) for s in global_shape)
    held = _rd.indices(global_shape, mesh, tuple(placements), coordinate)
    shape = tuple(s if ix is None else len(ix) for s, ix in zip(global_shape, held))
    if skip_offset:
        return shape, ()
    offsets = []
    for d, (s, ix) in enumerate(zip(global_shape, held)):
        if ix is None:
            offsets.append(0)
        elif len(ix):
            offsets.append(int(ix[0]))
        else:  # an empty shard starts where its chunk would: PyTorch's min(size, start)
            start, size = 0, s
            for i, p in enumerate(placements):
                if isinstance(p, (Shard, _StridedShard)) and p.dim == d:
                    length, offset = Shard.local_shard_size_and_offset(size, mesh.size(i),
                                                                       coordinate[i])
                    start, size = start + offset, length
            offsets.append(start)
    return shape, tuple(offsets)


def compute_global_tensor_info(tensor, mesh, placements):
    """The global shape and contiguous strides of a DTensor whose local part is
    ``tensor`` (even shards assumed, as ``from_local`` does)."""
    shape = list(tensor.shape)
    for i, p in enumerate(placements):
        if isinstance(p, (Shard, _StridedShard)):
            shape[p.dim % len(shape)] *= mesh.size(i)
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return shape, list(reversed(strides))
