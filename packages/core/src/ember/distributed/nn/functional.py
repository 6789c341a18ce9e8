"""``torch.distributed.nn.functional``: collectives that autograd differentiates, each the
adjoint of the other in backward, as PyTorch defines them: ``broadcast`` <-> ``reduce`` (to
the source, zero elsewhere), ``gather`` <-> ``scatter``, ``all_gather`` <-> the sum of what
``all_to_all`` returns of the gradients, ``reduce_scatter`` <-> ``all_gather``,
``all_to_all`` and ``all_to_all_single`` <-> themselves with the sizes swapped, and
``all_reduce`` <-> ``all_reduce`` of the gradient with the same op (right for SUM; PyTorch
does the same for the other ops). They run over ``ember.distributed``'s collectives, on a
copy: the input is not changed in place (unlike ``ember.distributed.all_reduce``).
"""

from __future__ import annotations

import ember

from ...autograd import Function
from .. import distributed_c10d as dist
from ..distributed_c10d import ReduceOp, group

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce"]


def broadcast(tensor, src, group=group.WORLD):
    """``tensor`` of rank ``src`` on every rank; its gradient is the sum of the ranks'
    gradients on ``src`` (zero elsewhere)."""
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=group.WORLD):
    """A tuple of every rank's ``tensor`` (on ``dst``; zeros on the others)."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=group.WORLD):
    """Rank ``i`` gets ``tensors[i]`` of rank ``src``."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor`` on ``dst`` (other ranks keep theirs)."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=group.WORLD):
    """Rank ``i`` gets the reduction of every rank's ``input_list[i]``, written into
    ``output`` and returned."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=group.WORLD):
    """A tuple of every rank's ``tensor``, on every rank."""
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=group.WORLD):
    """Rank ``i`` sends ``input_tensor_list[j]`` to rank ``j``; returns what it received
    (``output_tensor_list``, filled) as a tuple."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=group.WORLD):
    """``all_to_all`` of the splits of one tensor along dim 0, into ``output``."""
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor``, on every rank (``tensor`` is unchanged)."""
    return _AllReduce.apply(op, group, tensor)


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group, ctx.rank = src, group, dist.get_rank(group=group)
        tensor = tensor.clone()
        dist.broadcast(tensor, src, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.src != ctx.rank:
            gx = ember.zeros_like(gx)
        return None, None, gx


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        outs = [ember.zeros_like(tensor) for _ in range(dist.get_world_size(group=group))]
        tensor = tensor.contiguous()
        if dist.get_rank(group=group) == dst:
            dist.gather(tensor, outs, dst, group=group)
        else:
            dist.gather(tensor, None, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        if not all(t.size() == tensors[0].size() for t in tensors):
            raise AssertionError("scatter: every tensor must have the same size")
        output = ember.zeros_like(tensors[0])
        if dist.get_rank(group=group) == src:
            dist.scatter(output, [t.contiguous() for t in tensors], src, group=group)
        else:
            dist.scatter(output, None, src, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        tensor = tensor.clone()
        dist.reduce(tensor, dst, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        dist.reduce_scatter(output, [t.contiguous() for t in inputs], op=op, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        outs = [ember.empty_like(tensor) for _ in range(dist.get_world_size(group=group))]
        dist.all_gather(outs, tensor, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        received = _AllToAll.apply(ctx.group, [ember.empty_like(g) for g in grad_outputs],
                                   *grad_outputs)
        return None, ember.stack(received).sum(0)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, outputs, *tensors):
        ctx.group = group
        ctx.sizes = [t.size() for t in tensors]
        dist.all_to_all(list(outputs), [t.contiguous() for t in tensors], group=group)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        like = grad_outputs[0]
        outs = [ember.empty(size, dtype=like.dtype, device=like.device) for size in ctx.sizes]
        return (None, None) + _AllToAll.apply(ctx.group, outs,
                                              *[g.contiguous() for g in grad_outputs])


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group, ctx.input_size = group, input.size()
        ctx.output_split_sizes, ctx.input_split_sizes = input_split_sizes, output_split_sizes
        dist.all_to_all_single(output, input.contiguous(), output_split_sizes=output_split_sizes,
                               input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        out = ember.empty(ctx.input_size, dtype=grad_output.dtype, device=grad_output.device)
        return None, None, None, None, _AllToAllSingle.apply(
            ctx.group, out, ctx.output_split_sizes, ctx.input_split_sizes,
            grad_output.contiguous())


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group, ctx.op = group, op
        tensor = tensor.clone(memory_format=ember.contiguous_format)
        dist.all_reduce(tensor, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)
