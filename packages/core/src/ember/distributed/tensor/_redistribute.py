"""Moving a DTensor's local tensor between placements, with the collectives of each step.

Every placement list maps each rank to the global indices it holds along each tensor dim
(``_indices``: ``Shard`` and ``_StridedShard`` cut the index list left to right, in mesh-dim
order, as PyTorch reads placements). A redistribution turns the mesh dims that change, and
those after them, into ``Replicate`` from the last to the first (an all-gather along the
sharded dim, put in global-index order; an all-reduce for ``Partial``), then places the
targets from the first to the last (a local slice; ``Partial`` divides a sum by the mesh
size, as PyTorch's ``_partition_value``). The backward is the redistribution of the gradient
back, with ``Partial`` read as ``Replicate`` (PyTorch's convention: a replicated gradient is
the gradient of every partial term).
"""

from __future__ import annotations

import numpy as np

from ... import autograd
from .. import distributed_c10d as _c10d
from .placement_types import Partial, Placement, Replicate, Shard, _StridedShard

_REDUCE = {"sum": "SUM", "avg": "AVG", "min": "MIN", "max": "MAX", "product": "PRODUCT",
           "band": "BAND", "bor": "BOR", "bxor": "BXOR"}


def _is_shard(p: Placement) -> bool:
    return isinstance(p, (Shard, _StridedShard))


def indices(global_shape, mesh, placements, coordinate, upto: int | None = None) -> list:
    """The global indices along each tensor dim that ``coordinate`` holds under
    ``placements[:upto]`` (None for a dim held whole)."""
    idx: list = [None] * len(global_shape)
    for i, p in enumerate(placements[:upto]):
        if _is_shard(p):
            d = p.dim
            cur = idx[d] if idx[d] is not None else np.arange(global_shape[d])
            idx[d] = p._indices(cur, mesh.size(i), coordinate[i])
    return idx


def local_shape(global_shape, mesh, placements, coordinate) -> tuple[int, ...]:
    idx = indices(global_shape, mesh, placements, coordinate)
    return tuple(int(s) if ix is None else len(ix) for s, ix in zip(global_shape, idx))


def _coordinate(mesh) -> list[int]:
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        raise RuntimeError(f"rank {mesh.get_rank()} is not part of the DTensor's mesh")
    return list(coordinate)


def _gather_dim(local, mesh, i: int, placements, global_shape):
    """``placements[i]`` (a shard) to ``Replicate``; ``placements[i+1:]`` are replicated."""
    import ember

    p = placements[i]
    d = p.dim
    n = mesh.size(i)
    group = mesh.get_group(i)
    coordinate = _coordinate(mesh)
    held = []
    for k in range(n):
        coordinate[i] = k
        held.append(indices(global_shape, mesh, placements, coordinate, i + 1)[d])
    longest = max(len(h) for h in held)
    mine = local
    if local.shape[d] < longest:  # ranks gather equal sizes: pad this rank's rows
        pad_shape = list(local.shape)
        pad_shape[d] = longest - local.shape[d]
        mine = ember.cat([local, local.new_zeros(pad_shape)], d)
    parts = [ember.empty_like(mine) for _ in range(n)]
    _c10d.all_gather(parts, mine.contiguous(), group=group)
    parts = [parts[mesh._group_rank(i, k)] for k in range(n)]  # in mesh order
    parts = [part.narrow(d, 0, len(h)) for part, h in zip(parts, held)]
    order = np.argsort(np.concatenate(held), kind="stable")
    out = ember.cat(parts, d)
    if (order != np.arange(len(order))).any():
        out = out.index_select(d, ember.tensor(order, device=out.device))
    return out


def _reduce_dim(local, mesh, i: int, placement: Partial):
    out = local.clone()
    _c10d.all_reduce(out, op=getattr(_c10d.ReduceOp, _REDUCE[placement.reduce_op]),
                     group=mesh.get_group(i))
    return out


def _place_dim(full, mesh, i: int, placements, global_shape):
    """A tensor replicated on mesh dims ``i..`` to ``placements[i]`` on dim ``i``."""
    import ember

    p = placements[i]
    if isinstance(p, Replicate):
        return full
    coordinate = _coordinate(mesh)
    if isinstance(p, Partial):
        if p.reduce_op == "sum":
            return full / mesh.size(i)
        if p.reduce_op in ("avg", "min", "max"):
            return full
        raise ValueError(f"Replicate to Partial({p.reduce_op}) conversion is not supported.")
    d = p.dim
    parent = indices(global_shape, mesh, placements, coordinate, i)[d]
    parent = np.arange(global_shape[d]) if parent is None else parent
    child = indices(global_shape, mesh, placements, coordinate, i + 1)[d]
    positions = np.searchsorted(parent, child)
    if len(positions) and (np.diff(positions) == 1).all():
        return full.narrow(d, int(positions[0]), len(positions)).clone()
    if not len(positions):
        return full.narrow(d, 0, 0).clone()
    return full.index_select(d, ember.tensor(positions, device=full.device))


def redistribute_local(local, mesh, src, dst, global_shape):
    """``local`` (held under ``src``) as held under ``dst``: no autograd of its own."""
    src, dst = list(src), list(dst)
    if src == dst:
        return local
    first = next(i for i in range(len(src)) if src[i] != dst[i])
    cur = list(src)
    out = local
    for i in range(len(cur) - 1, first - 1, -1):
        if _is_shard(cur[i]):
            out = _gather_dim(out, mesh, i, cur, global_shape)
        elif isinstance(cur[i], Partial):
            out = _reduce_dim(out, mesh, i, cur[i])
        cur[i] = Replicate()
    for i in range(first, len(dst)):
        cur[i] = dst[i]
        out = _place_dim(out, mesh, i, cur, global_shape)
    return out


def grad_placements(placements) -> tuple:
    """How a gradient lies for a tensor placed so: ``Partial`` reads as ``Replicate``."""
    return tuple(Replicate() if isinstance(p, Partial) else p for p in placements)


class Redistribute(autograd.Function):
    """``redistribute_local`` with the gradient sent back to the source placements."""

    @staticmethod
    def forward(ctx, local, mesh, src, dst, global_shape):
        ctx.spec = (mesh, tuple(src), tuple(dst), tuple(global_shape))
        detached = local.detach()
        out = redistribute_local(detached, mesh, src, dst, global_shape)
        return out.clone() if out is detached else out

    @staticmethod
    def backward(ctx, grad):
        mesh, src, dst, global_shape = ctx.spec
        back = redistribute_local(grad, mesh, grad_placements(dst), grad_placements(src),
                                  global_shape)
        return back, None, None, None, None


class GradTo(autograd.Function):
    """The identity, whose backward redistributes the gradient from how it arrives (``src``)
    to how the input's gradient must lie (``dst``): ``to_local(grad_placements=...)``."""

    @staticmethod
    def forward(ctx, local, mesh, src, dst, global_shape):
        ctx.spec = (mesh, tuple(src), tuple(dst), tuple(global_shape))
        return local.view_as(local)

    @staticmethod
    def backward(ctx, grad):
        mesh, src, dst, global_shape = ctx.spec
        if any(isinstance(p, Partial) for p in dst):
            dst = grad_placements(dst)
        return redistribute_local(grad, mesh, src, dst, global_shape), None, None, None, None
