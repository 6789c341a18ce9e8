"""The plain DDP communication hooks: average by all-reduce, optionally in half precision."""

from __future__ import annotations

from ... import distributed_c10d as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group (divided first, which keeps half precision in range)
    by an all-reduce; a future of the tensor."""
    group = _group(process_group)
    tensor.div_(dist.get_world_size(group))
    return dist.all_reduce(tensor, group=group, async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """What DDP does without a hook: the bucket averaged over the ranks."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    import ember

    group = _group(process_group)
    world_size = dist.get_world_size(group)
    buffer = bucket if isinstance(bucket, ember.Tensor) else bucket.buffer()
    compressed = buffer.to(dtype).div_(world_size)

    def decompress(fut):
        reduced = fut.value()[0]
        if isinstance(bucket, ember.Tensor):
            return reduced
        buffer.copy_(reduced)
        return buffer

    return dist.all_reduce(compressed, group=group, async_op=True).get_future().then(
        decompress)


def fp16_compress_hook(process_group, bucket):
    """Average the bucket in float16 (half the bytes), then back to its dtype."""
    import ember

    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average the bucket in bfloat16, then back to its dtype."""
    import ember

    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            out = bucket.buffer()
            out.copy_(fut.value())
            return out

        return fut.then(decompress)

    return wrapped


def fp16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to float16 (its result cast back by DDP)."""
    import ember

    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to bfloat16 (its result cast back by DDP)."""
    import ember

    return _compress_wrapper(ember.bfloat16, hook)
