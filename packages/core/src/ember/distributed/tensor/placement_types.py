"""How a DTensor lies on one dimension of its device mesh: ``Shard``, ``Replicate``, ``Partial``.

PyTorch's ``torch.distributed.tensor.placement_types``. ``Shard(dim)`` splits tensor dim
``dim`` as ``torch.chunk`` does (the last ranks may hold fewer rows, or none);
``_StridedShard(dim, split_factor=k)`` is the right-to-left sharding FSDP2 + tensor
parallelism make (the dim is cut into ``k`` pieces first, each piece ``chunk``-ed across the
mesh dim, and a rank holds its part of every piece); ``Replicate()`` is a full copy on each
rank; ``Partial(reduce_op)`` holds a term of the value, which is the reduction (``"sum"``,
``"avg"``, ``"min"``, ``"max"``) over the mesh dim.
"""

from __future__ import annotations

# _StridedShard: PyTorch keeps it private; FSDP2 (ember-nn, versioned apart) lays 2-d FSDP +
# tensor-parallel parameters out with it, so it is public API to the other distributions
__all__ = ["Placement", "Shard", "Replicate", "Partial", "_StridedShard"]


class Placement:
    """The base of the placements."""

    __slots__ = ()

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def _key(self) -> tuple:
        return ()

    def __reduce__(self):
        return type(self), self._key()


def _chunk_bounds(size: int, num_chunks: int, index: int) -> tuple[int, int]:
    """``torch.chunk``'s piece ``index`` of ``size`` rows in ``num_chunks``: (start, length)."""
    if size % num_chunks == 0:
        step = size // num_chunks
        return step * index, step
    step = -(-size // num_chunks)
    start = min(size, step * index)
    return start, max(0, min(size, start + step) - start)


class Shard(Placement):
    """Tensor dim ``dim`` is split over the mesh dim, as ``torch.chunk`` splits it."""

    __slots__ = ("dim",)

    def __init__(self, dim: int):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Shard dim must be an int, got {type(dim).__name__}")
        self.dim = dim

    def _key(self) -> tuple:
        return (self.dim,)

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    @staticmethod
    def local_shard_size_and_offset(curr_local_size: int, num_chunks: int,
                                    rank: int) -> tuple[int, int]:
        """The size and offset of chunk ``rank`` when ``curr_local_size`` rows are
        ``torch.chunk``-ed into ``num_chunks`` (PyTorch's staticmethod)."""
        start, length = _chunk_bounds(int(curr_local_size), int(num_chunks), int(rank))
        return length, start

    def _local_shard_size_and_offset(self, curr_local_size: int, num_chunks: int,
                                     rank: int) -> tuple[int, int]:
        return Shard.local_shard_size_and_offset(curr_local_size, num_chunks, rank)

    @staticmethod
    def _local_shard_size_on_dim(size_on_dim: int, num_chunks: int, rank: int,
                                 return_offset: bool = False):
        length, start = Shard.local_shard_size_and_offset(size_on_dim, num_chunks, rank)
        return (length, start) if return_offset else (length, -1)

    def _indices(self, index, num_chunks: int, coordinate: int):
        start, length = _chunk_bounds(len(index), num_chunks, coordinate)
        return index[start:start + length]

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"

    def __str__(self) -> str:
        return f"S({self.dim})"


class _StridedShard(Placement):
    """Right-to-left sharding of ``dim`` (FSDP2 over tensor parallelism): the dim is cut into
    ``split_factor`` pieces, each piece split over the mesh dim, and a rank holds the
    concatenation of its part of every piece. Not a ``Shard`` subclass, as in PyTorch."""

    __slots__ = ("dim", "split_factor")

    def __init__(self, dim: int, split_factor: int):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Shard dim must be an int, got {type(dim).__name__}")
        self.dim = dim
        if int(split_factor) < 1:
            raise ValueError(f"split_factor must be a positive int, got {split_factor}")
        self.split_factor = int(split_factor)

    def _key(self) -> tuple:
        return (self.dim, self.split_factor)

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def _indices(self, index, num_chunks: int, coordinate: int):
        import numpy as np

        pieces = []
        for j in range(self.split_factor):
            start, length = _chunk_bounds(len(index), self.split_factor, j)
            piece = index[start:start + length]
            s, n = _chunk_bounds(len(piece), num_chunks, coordinate)
            pieces.append(piece[s:s + n])
        return np.concatenate(pieces) if pieces else index[:0]

    def local_shard_size_and_offset(self, curr_local_size: int, num_chunks: int, rank: int):
        """The local size and the global indices this rank holds (PyTorch's offsets list)."""
        import numpy as np

        held = self._indices(np.arange(int(curr_local_size)), num_chunks, rank)
        return len(held), held.tolist()

    def __repr__(self) -> str:
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"

    def __str__(self) -> str:
        return f"_S({self.dim}, {self.split_factor})"


class Replicate(Placement):
    """Every rank of the mesh dim holds the whole tensor."""

    __slots__ = ()

    def is_replicate(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Replicate()"

    def __str__(self) -> str:
        return "R"


_REDUCE_OPS = ("sum", "avg", "min", "max", "product", "band", "bor", "bxor")


class Partial(Placement):
    """Each rank of the mesh dim holds a term; the value is their ``reduce_op``."""

    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op: str = "sum"):
        if reduce_op not in _REDUCE_OPS:
            raise ValueError(f"Partial: unknown reduce_op {reduce_op!r}; expected one of "
                             f"{', '.join(_REDUCE_OPS)}")
        self.reduce_op = reduce_op

    def _key(self) -> tuple:
        return (self.reduce_op,)

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"

    def __str__(self) -> str:
        return "P" if self.reduce_op == "sum" else f"P({self.reduce_op})"
