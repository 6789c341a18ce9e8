"""PowerSGD (Vogels et al., NeurIPS 2019): DDP's gradients reduced as low-rank factors.

PyTorch's ``torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook``. Each gradient matrix
``M`` (a parameter's gradient viewed as rows x the rest) worth compressing is approximated as
``P Q^T`` of rank ``r``: ``P = M Q`` summed over the ranks and orthogonalised, then ``Q = M^T
P`` summed, and the gradient becomes ``P Q^T / world_size``; the other gradients of the bucket
are averaged as they are. With ``use_error_feedback`` what the approximation dropped is added
to the next iteration's gradient; with ``warm_start`` each ``Q`` starts from the last one.
The first ``start_powerSGD_iter`` iterations reduce plainly (``allreduce_hook``).
``batched_powerSGD_hook`` compresses the whole bucket as one square matrix.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ... import distributed_c10d as dist
from . import default_hooks as default

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrices, epsilon: float = 0) -> None:
    """Orthonormalise the columns of each matrix of the batch ``matrices`` (b, n, r), in
    place: Gram-Schmidt (what PyTorch uses for rank <= 2 and half precision; QR's Q equals
    it up to signs)."""
    if not (matrices.ndim == 3 and matrices.shape[2] <= matrices.shape[1]):
        raise AssertionError
    import ember

    num_cols = matrices.shape[2]
    for i in range(num_cols):
        col = matrices[:, :, i:i + 1]
        norm = ember.linalg.vector_norm(col, dim=1, keepdim=True)
        if epsilon == 0:
            if bool((norm == 0).any()):
                logger.error("The matrices to be orthogonalized has at least a column of all 0s. "
                             "Please set a small value such as 1e-8 as "
                             "`orthogonalization_epsilon` in PowerSGD state.")
            col.div_(norm)  # a zero column gives NaNs, as PyTorch's
        else:
            col.div_(norm + epsilon)
        if i + 1 < num_cols:
            rest = matrices[:, :, i + 1:]
            rest.sub_((col * rest).sum(dim=1, keepdim=True) * col)


def _should_compress(num_rows, num_cols, matrix_approximation_rank, min_compression_rate):
    """(worth compressing, elements before, elements after) of an n x m matrix at rank r."""
    uncompressed_size = num_rows * num_cols
    compressed_size = (num_rows + num_cols) * matrix_approximation_rank
    return (compressed_size * min_compression_rate < uncompressed_size, uncompressed_size,
            compressed_size)


def _report_compression_stats(bucket, state) -> None:
    if bucket.is_last() and state.iter >= state.next_stats_report:
        stats = state.compression_stats()
        logger.info("Compression stats: iter %s, total before compression %s, total after "
                    "compression %s, rate %s", state.iter, stats[1], stats[2], stats[0])
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency


class PowerSGDState:
    """PowerSGD's settings and memory across iterations (error feedback, warm-start
    factors, compression statistics)."""

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "orthogonalization_epsilon", "use_error_feedback",
                 "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report"]

    def __init__(self, process_group, matrix_approximation_rank: int = 1,
                 start_powerSGD_iter: int = 1_000, min_compression_rate: float = 2,
                 use_error_feedback: bool = True, warm_start: bool = True,
                 orthogonalization_epsilon: float = 0, random_seed: int = 0,
                 compression_stats_logging_frequency: int = 10_000,
                 batch_tensors_with_same_shape: bool = False):
        logger.info("PowerSGD config: matrix_approximation_rank = %s; start_powerSGD_iter = "
                    "%s; min_compression_rate = %s; orthogonalization_epsilon = %s; "
                    "use_error_feedback = %s; warm_start = %s; random_seed = %s",
                    matrix_approximation_rank, start_powerSGD_iter, min_compression_rate,
                    orthogonalization_epsilon, use_error_feedback, warm_start, random_seed)
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or "
                             "`warm_start` is enabled, because PowerSGD can only be applied "
                             "after the first two iterations in DDP.")
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict: dict = {}
        self.p_memory_dict: dict = {}
        self.q_memory_dict: dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self):
        logger.warning("NOTE: Process group is not serializable and excluded from a saved "
                       "state.")
        return {slot: getattr(self, slot) for slot in self.__slots__
                if slot != "process_group"}

    def __setstate__(self, state) -> None:
        self.process_group = dist.group.WORLD
        logger.warning("NOTE: Process group will be set to a default group (i.e. the world "
                       "size). If a different group is desired, please set "
                       "`self.process_group` after PowerSGD state is loaded.")
        for slot, value in state.items():
            setattr(self, slot, value)

    def maybe_increase_iter(self, bucket) -> None:
        """Count an iteration at the last bucket."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self):
        """(compression rate, elements before, elements after) so far."""
        rate = (self.total_numel_before_compression / self.total_numel_after_compression
                if self.total_numel_after_compression > 0 else 0)
        return rate, self.total_numel_before_compression, self.total_numel_after_compression


def _group(state):
    return state.process_group if state.process_group is not None else dist.group.WORLD


def _error_feedback(state, bucket_index: int, input_tensor):
    """Add the bucket's last error to ``input_tensor`` (a zero error the first time) and
    return a copy of the sum (what the approximation's error is taken against), or None
    without error feedback."""
    if not state.use_error_feedback:
        return None
    import ember

    if bucket_index in state.error_dict:
        input_tensor.add_(state.error_dict[bucket_index])
    else:
        logger.info("A zero tensor of length %s that represents local error is created.",
                    input_tensor.shape[0])
        state.error_dict[bucket_index] = ember.zeros_like(input_tensor)
    return input_tensor.detach().clone()


def _end_step(state, bucket, bucket_index: int, before, after) -> None:
    """A compressed step's bookkeeping: the error it left (``before - after``), the factors
    forgotten without warm start, the iteration counted."""
    if state.use_error_feedback:
        state.error_dict[bucket_index] = before - after
    if not state.warm_start:
        state.p_memory_dict.clear()
        state.q_memory_dict.clear()
    state.maybe_increase_iter(bucket)


def _random_fill(state, tensors) -> None:
    import ember

    g = ember.Generator().manual_seed(int(state.rng.randint(1_000_000_000)))
    for t in tensors:
        t.copy_(ember.randn(t.shape, generator=g, dtype=t.dtype, device=t.device))


def powerSGD_hook(state: PowerSGDState, bucket):
    """Reduce ``bucket`` with PowerSGD (see the module docstring)."""
    import ember

    group = _group(state)
    world_size = dist.get_world_size(group)
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:  # plain averaging until PowerSGD starts
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group, input_tensor)
    device, dtype = input_tensor.device, input_tensor.dtype
    bucket_index = bucket.index()
    input_tensor_cp = _error_feedback(state, bucket_index, input_tensor)
    to_compress, uncompressed = [], []
    ps_size = qs_size = 0
    for tensor in bucket.gradients():
        matrix = tensor.reshape(tensor.shape[0], -1) if tensor.ndim else tensor.reshape(1, 1)
        n, m = matrix.shape
        rank = min(n, m, state.matrix_approximation_rank)
        worth, before, after = _should_compress(n, m, rank, state.min_compression_rate)
        state.total_numel_before_compression += before
        if worth:
            to_compress.append((tensor, n, m, rank))
            ps_size += n * rank
            qs_size += m * rank
            state.total_numel_after_compression += after
        else:
            uncompressed.append(tensor)
            state.total_numel_after_compression += before
    _report_compression_stats(bucket, state)
    flat_uncompressed = (ember.cat([t.reshape(-1) for t in uncompressed]) if uncompressed
                         else ember.tensor([], device=device, dtype=dtype))
    need_random_qs = False
    if not state.warm_start or bucket_index not in state.p_memory_dict:
        need_random_qs = True
        if state.warm_start:
            logger.info("Allocating contiguous memory of length %s for Ps, and of length %s "
                        "for Qs, respectively.", ps_size, qs_size)
        state.p_memory_dict[bucket_index] = ember.empty(ps_size, device=device, dtype=dtype)
        state.q_memory_dict[bucket_index] = ember.empty(qs_size, device=device, dtype=dtype)
    ps, qs = [], []
    p_idx = q_idx = 0
    for _, n, m, rank in to_compress:
        ps.append(state.p_memory_dict[bucket_index][p_idx:p_idx + n * rank].view(1, n, rank))
        qs.append(state.q_memory_dict[bucket_index][q_idx:q_idx + m * rank].view(1, m, rank))
        p_idx += n * rank
        q_idx += m * rank
    if need_random_qs:
        with ember.no_grad():
            _random_fill(state, qs)
            for q in qs:
                _orthogonalize(q, state.orthogonalization_epsilon)
    matrices = [t.reshape(n, m) for t, n, m, _ in to_compress]
    for matrix, q, p in zip(matrices, qs, ps):
        p[0].copy_(matrix @ q[0])
    uncompressed_fut = dist.all_reduce(flat_uncompressed, group=group,
                                       async_op=True).get_future()

    def unpack_uncompressed_and_allreduce_ps(fut):
        memory = fut.value()[0].div_(world_size)
        idx = 0
        for tensor in uncompressed:
            tensor.copy_(memory[idx:idx + tensor.numel()].view_as(tensor))
            idx += tensor.numel()
        return dist.all_reduce(state.p_memory_dict[bucket_index], group=group,
                               async_op=True).get_future().wait()[0]

    def compute_qs(fut):
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for matrix, p, q in zip(matrices, ps, qs):
            q[0].copy_(matrix.t() @ p[0])
        return dist.all_reduce(state.q_memory_dict[bucket_index], group=group,
                               async_op=True).get_future().wait()[0]

    def decompress(fut):
        state.q_memory_dict[bucket_index].div_(world_size)
        for (tensor, *_), p, q in zip(to_compress, ps, qs):
            tensor.copy_((p[0] @ q[0].t()).view_as(tensor))
        _end_step(state, bucket, bucket_index, input_tensor_cp, input_tensor)
        return input_tensor

    return uncompressed_fut.then(unpack_uncompressed_and_allreduce_ps).then(
        compute_qs).then(decompress)


def batched_powerSGD_hook(state: PowerSGDState, bucket):
    """PowerSGD over the whole bucket viewed as one square matrix (zero-padded)."""
    import ember

    group = _group(state)
    world_size = dist.get_world_size(group)
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:  # plain averaging until PowerSGD starts
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group, input_tensor)
    device, dtype = input_tensor.device, input_tensor.dtype
    total_length = input_tensor.shape[0]
    state.total_numel_before_compression += total_length
    square_side = math.ceil(math.sqrt(total_length))
    state.total_numel_after_compression += (square_side * state.matrix_approximation_rank * 2)
    padded_total_length = square_side ** 2
    input_tensor = ember.cat([input_tensor, ember.zeros(padded_total_length - total_length,
                                                        device=device, dtype=dtype)])
    _report_compression_stats(bucket, state)
    bucket_index = bucket.index()
    input_tensor_cp = _error_feedback(state, bucket_index, input_tensor)
    matrix = input_tensor.view(square_side, square_side)
    rank = state.matrix_approximation_rank
    if not state.warm_start or bucket_index not in state.p_memory_dict:
        state.p_memory_dict[bucket_index] = ember.empty(square_side, rank, device=device,
                                                        dtype=dtype)
        state.q_memory_dict[bucket_index] = ember.empty(square_side, rank, device=device,
                                                        dtype=dtype)
        with ember.no_grad():
            _random_fill(state, [state.q_memory_dict[bucket_index]])
            _orthogonalize(state.q_memory_dict[bucket_index].unsqueeze(0),
                           state.orthogonalization_epsilon)
    p = state.p_memory_dict[bucket_index]
    q = state.q_memory_dict[bucket_index]
    p.copy_(matrix @ q)
    p_fut = dist.all_reduce(p, group=group, async_op=True).get_future()

    def create_q(fut):
        _orthogonalize(p.unsqueeze(0), state.orthogonalization_epsilon)
        q.copy_(matrix.t() @ p)
        return dist.all_reduce(q, group=group, async_op=True).get_future().wait()[0]

    def decompress(fut):
        q.div_(world_size)
        matrix.copy_(p @ q.t())
        _end_step(state, bucket, bucket_index, input_tensor_cp, input_tensor)
        out = bucket.buffer()
        out.copy_(input_tensor[:total_length])
        return out

    return p_fut.then(create_q).then(decompress)
