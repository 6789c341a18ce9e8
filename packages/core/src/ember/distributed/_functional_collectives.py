"""Functional collectives: collectives that return a new tensor (PyTorch's
``torch.distributed._functional_collectives``).

``group`` may be a ``ProcessGroup``, a 1-d ``DeviceMesh``, a ``(mesh, mesh_dim)`` pair or a
list of global ranks (the group made with those ranks). Ember's collectives finish before
they return, so ``wait_tensor`` hands its tensor back. The ``*_autograd`` forms are
differentiable: an all-gather's backward reduce-scatters the gradient, a reduce-scatter's
all-gathers it, an all-to-all's sends it back with the splits swapped.
"""

from __future__ import annotations

from .. import autograd
from . import distributed_c10d as _c10d

__all__ = ["wait_tensor", "all_reduce", "all_gather_tensor", "all_gather_tensor_autograd",
           "reduce_scatter_tensor", "reduce_scatter_tensor_autograd", "all_to_all_single",
           "all_to_all_single_autograd", "broadcast", "all_reduce_coalesced"]

_OPS = {"sum": "SUM", "avg": "AVG", "product": "PRODUCT", "min": "MIN", "max": "MAX",
        "band": "BAND", "bor": "BOR", "bxor": "BXOR"}


def _op(reduce_op):
    if isinstance(reduce_op, str):
        key = reduce_op.lower()
        if key not in _OPS:
            raise ValueError(f"Unrecognized reduce_op {reduce_op!r}: expected one of "
                             f"{', '.join(_OPS)}")
        return getattr(_c10d.ReduceOp, _OPS[key])
    return reduce_op


def _group(group):
    from .device_mesh import DeviceMesh

    if group is None or isinstance(group, _c10d.ProcessGroup):
        return group
    if isinstance(group, DeviceMesh):
        if group.ndim != 1:
            raise ValueError("Only 1D mesh is supported, pass in (DeviceMesh, int) together "
                             "if mesh > 1D")
        return group.get_group(0)
    if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], DeviceMesh):
        return group[0].get_group(group[1])
    if isinstance(group, list):
        ranks = sorted(int(r) for r in group)
        for pg in [_c10d._default_group(), *_c10d._world.groups]:
            if list(pg._ranks) == ranks:
                return pg
        raise ValueError(f"no process group of ranks {ranks}: make it with new_group first")
    raise ValueError(f"Unsupported group type: {type(group).__name__}, {group}")


def wait_tensor(tensor):
    """The tensor a functional collective returned, complete (Ember's already are)."""
    return tensor


def all_reduce(self, reduceOp: str, group, tag: str = ""):
    out = self.detach().clone()
    _c10d.all_reduce(out, op=_op(reduceOp), group=_group(group))
    return out


def all_reduce_coalesced(self: list, reduceOp: str, group, tag: str = "") -> list:
    return [all_reduce(t, reduceOp, group, tag) for t in self]


def all_gather_tensor(self, gather_dim: int, group, tag: str = ""):
    """Each rank's ``self`` concatenated along ``gather_dim`` in group-rank order."""
    import ember

    pg = _group(group)
    n = _c10d.get_world_size(pg)
    src = self.detach().contiguous()
    out = src.new_empty((n * src.shape[0], *src.shape[1:]) if src.ndim else (n,))
    _c10d.all_gather_into_tensor(out, src if src.ndim else src.reshape(1), group=pg)
    if gather_dim % max(src.ndim, 1) != 0:
        out = ember.cat(out.chunk(n, 0), dim=gather_dim)
    return out


def reduce_scatter_tensor(self, reduceOp: str, scatter_dim: int, group, tag: str = ""):
    """``self`` reduced over the group, each rank keeping its chunk along ``scatter_dim``."""
    import ember

    pg = _group(group)
    n = _c10d.get_world_size(pg)
    if self.shape[scatter_dim] % n:
        raise ValueError(f"input dimension {scatter_dim} ({self.shape[scatter_dim]}) must be "
                         f"a multiple of group_size {n}")
    src = self.detach()
    if scatter_dim % src.ndim != 0:
        src = ember.cat(src.chunk(n, scatter_dim), dim=0)
    src = src.contiguous()
    out = src.new_empty((src.shape[0] // n, *src.shape[1:]))
    _c10d.reduce_scatter_tensor(out, src, op=_op(reduceOp), group=pg)
    return out  # rank k's piece of cat(chunks, 0) is chunk k, already its shape


def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag: str = ""):
    """Rows of ``self`` (dim 0) sent to each rank by ``input_split_sizes``; those received
    concatenated by ``output_split_sizes`` (None: equal splits)."""
    pg = _group(group)
    n = _c10d.get_world_size(pg)
    src = self.detach().contiguous()
    rows = sum(output_split_sizes) if output_split_sizes is not None else src.shape[0]
    if output_split_sizes is None and src.shape[0] % n:
        raise ValueError(f"all_to_all_single: {src.shape[0]} rows do not split evenly over "
                         f"{n} ranks; give the split sizes")
    out = src.new_empty((rows, *src.shape[1:]))
    _c10d.all_to_all_single(out, src, output_split_sizes, input_split_sizes, group=pg)
    return out


def broadcast(self, src: int, group, tag: str = ""):
    out = self.detach().clone()
    _c10d.broadcast(out, src=src, group=_group(group))
    return out


class _AllGather(autograd.Function):
    @staticmethod
    def forward(ctx, x, gather_dim, group):
        ctx.args = (gather_dim, group)
        return all_gather_tensor(x, gather_dim, group)

    @staticmethod
    def backward(ctx, grad):
        gather_dim, group = ctx.args
        return reduce_scatter_tensor(grad.contiguous(), "sum", gather_dim, group), None, None


class _ReduceScatter(autograd.Function):
    @staticmethod
    def forward(ctx, x, reduce_op, scatter_dim, group):
        if _op(reduce_op) != _c10d.ReduceOp.SUM:
            raise RuntimeError("reduce_scatter_tensor_autograd: only the sum has a gradient")
        ctx.args = (scatter_dim, group)
        return reduce_scatter_tensor(x, reduce_op, scatter_dim, group)

    @staticmethod
    def backward(ctx, grad):
        scatter_dim, group = ctx.args
        return all_gather_tensor(grad, scatter_dim, group), None, None, None


class _AllToAll(autograd.Function):
    @staticmethod
    def forward(ctx, x, output_split_sizes, input_split_sizes, group):
        ctx.args = (output_split_sizes, input_split_sizes, group)
        return all_to_all_single(x, output_split_sizes, input_split_sizes, group)

    @staticmethod
    def backward(ctx, grad):
        output_split_sizes, input_split_sizes, group = ctx.args
        back = all_to_all_single(grad.contiguous(), input_split_sizes, output_split_sizes,
                                 group)
        return back, None, None, None


def all_gather_tensor_autograd(self, gather_dim: int, group, tag: str = ""):
    return _AllGather.apply(self, gather_dim, group)


def reduce_scatter_tensor_autograd(self, reduceOp: str, scatter_dim: int, group,
                                   tag: str = ""):
    return _ReduceScatter.apply(self, reduceOp, scatter_dim, group)


def all_to_all_single_autograd(self, output_split_sizes, input_split_sizes, group,
                               tag: str = ""):
    return _AllToAll.apply(self, output_split_sizes, input_split_sizes, group)
