"""FlexAttention (``torch.nn.attention.flex_attention``): attention with a user-defined
``score_mod`` and a block-sparse ``BlockMask`` built from a ``mask_mod``.

Ember runs PyTorch's eager (math) reference, differentiably: the scores ``q @ k^T * scale`` are
modified by ``score_mod(score, b, h, q_idx, kv_idx)``, masked to ``-inf`` where
``mask_mod(b, h, q_idx, kv_idx)`` is False, and softmax-ed (a row with everything masked gives
0 output and logsumexp ``-inf``) before the product with ``value``. As in PyTorch's eager path,
the element-level ``mask_mod`` of the ``BlockMask`` decides what is masked; its block
structure (``kv_num_blocks``, ``kv_indices``, ...) describes the sparsity for kernels that skip
blocks, and is not consulted by this math implementation.

PyTorch calls the mods under four nested ``vmap``s, one per index. Ember calls a mod once, with
index tensors shaped to broadcast against each other (``b``: ``(B, 1, 1, 1)``, ``h``:
``(1, H, 1, 1)``, ``q_idx``: ``(1, 1, L, 1)``, ``kv_idx``: ``(1, 1, 1, S)``, int64 as PyTorch's
eager ``arange``\\ s; ``score``: ``(B, H, L, S)``), which gives the same result for mods written
with elementwise tensor ops and indexing (``torch.where(q_idx >= kv_idx, score, -inf)``,
``score + bias[b, h, q_idx, kv_idx]``, ``doc_id[q_idx] == doc_id[kv_idx]``) at the cost of one
call. A mod that fails that way, returns a result of another shape, or whose result at the
last element differs from what it gives for that element alone (0-d arguments: a mod that
reduces over an argument, ``bias[q_idx].sum()``) is run under ``ember.func.vmap`` as in PyTorch
(much slower; a mod with Python control flow on its tensor arguments fails there with vmap's
error, as in PyTorch).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import typing
import warnings
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, NamedTuple, TypedDict

import ember
from ember import Tensor

__all__ = [
    "BlockMask",
    "flex_attention",
    "AuxOutput",
    "AuxRequest",
    "FlexKernelOptions",
    "create_block_mask",
    "create_mask",
    "or_masks",
    "and_masks",
    "noop_mask",
]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_Backend = Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30

_WARNINGS_SHOWN: set[str] = set()


def _warn_once(warning_id: str, message: str, category: type[Warning] = UserWarning) -> None:
    """Warn once per process for each ``warning_id``, as PyTorch does."""
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(TypedDict, total=False):
    """Options of PyTorch's fused FlexAttention kernels (``kernel_options``). Ember runs the
    math implementation: it checks ``BACKEND`` as PyTorch does and otherwise ignores them."""

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_M1: int
    BLOCK_N1: int
    BLOCK_M2: int
    BLOCK_N2: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    kpack: int
    matrix_instr_nonkdim: int
    waves_per_eu: int
    BACKEND: _Backend


class AuxRequest(NamedTuple):
    """Request which auxiliary outputs to compute from flex_attention.

    Each field is a boolean indicating whether that auxiliary output should be computed.
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs from flex_attention operation.

    Fields will be None if not requested, or contain the tensor if requested.
    """

    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _ModificationType(Enum):
    SCORE_MOD = 1
    MASK_MOD = 2
    UNKNOWN = 3


def _get_mod_type(fn: Callable[..., Any]) -> _ModificationType:
    """A score_mod takes 5 positional arguments, a mask_mod 4 (PyTorch's rule)."""
    if hasattr(fn, "__code__"):
        defaults = getattr(fn, "__defaults__", None) or ()
        num_positional_args = fn.__code__.co_argcount - len(defaults)
    else:
        import inspect

        num_positional_args = sum(1 for p in inspect.signature(fn).parameters.values()
                                  if p.default is inspect.Parameter.empty)
    if num_positional_args not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {num_positional_args}")
    return _ModificationType.SCORE_MOD if num_positional_args == 5 else _ModificationType.MASK_MOD


def _identity(score: Tensor, batch: Tensor, head: Tensor, token_q: Tensor,
              token_kv: Tensor) -> Tensor:
    return score


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """Returns a noop mask_mod"""
    return batch.new_ones((), dtype=ember.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor,
                           token_kv: Tensor) -> typing.NoReturn:
    """Raises helpful error when using mask_mod from a sliced BlockMask."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!"
    )


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the union of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_zeros((), dtype=ember.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_ones((), dtype=ember.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


# -- calling a mod over every (b, h, q_idx, kv_idx) -------------------------------------------

def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _vmap_for_bhqkv(fn: Callable[..., Any], prefix: tuple) -> Callable[..., Any]:
    """``fn`` mapped over the [b, h, q_idx, kv_idx] dimensions by four nested vmaps (the
    outermost over b), as PyTorch's eager implementation runs mods."""
    from ember.func import vmap

    for dims in ((None, None, None, 0), (None, None, 0, None), (None, 0, None, None),
                 (0, None, None, None)):
        fn = vmap(fn, in_dims=prefix + dims)
    return fn


def _call_mod(mod: Callable[..., Any], score: Tensor | None, shape: tuple[int, int, int, int],
              device) -> Tensor:
    """``mod``'s value at every (b, h, q_idx, kv_idx) of ``shape``, as a tensor that broadcasts
    to ``shape``; ``score`` (``shape``) is the first argument of a score_mod (module
    docstring: one call with broadcasting indices, vmap where that fails)."""
    ranges = [ember.arange(n, device=device) for n in shape]
    grids = [r.view(*(n if d == i else 1 for d in range(4)))
             for i, (r, n) in enumerate(zip(ranges, shape))]
    lead = [] if score is None else [score]
    try:
        out = mod(*lead, *grids)
    except Exception:  # the mod is run the vmap way below, which raises its own error
        out = None
    if (isinstance(out, Tensor) and _broadcasts_to(tuple(out.shape), shape)
            and _agrees_at_last_element(mod, score, out, shape, device)):
        return out
    return _vmap_for_bhqkv(mod, prefix=(0,) if score is not None else ())(*lead, *ranges)


def _agrees_at_last_element(mod: Callable[..., Any], score: Tensor | None, out: Tensor,
                            shape: tuple[int, int, int, int], device) -> bool:
    """Whether the broadcast call's result at the last (b, h, q_idx, kv_idx) is what the mod
    gives for that element alone (0-d arguments, as under vmap): a mod that reduces over an
    argument (``bias[q_idx].sum()``) gives another value, and is then run under vmap."""
    if 0 in shape:
        return True
    point = tuple(n - 1 for n in shape)
    with ember.no_grad():
        args = [] if score is None else [score[point]]
        args += [ember.tensor(i, device=device) for i in point]
        try:
            expected = mod(*args)
        except Exception:  # this probe is only a check: the broadcast result stands
            return True
        if not isinstance(expected, Tensor) or expected.dim() != 0:
            return False
        got = out.reshape((1,) * (4 - out.dim()) + tuple(out.shape))
        got = got[tuple(p if n != 1 else 0 for p, n in zip(point, got.shape))]
        if got.dtype == ember.bool or expected.dtype == ember.bool:
            return bool((got == expected).item())
        got, expected = got.to(ember.float64), expected.to(ember.float64)
        return bool(ember.isclose(got, expected, rtol=1e-4, atol=1e-6, equal_nan=True).item())


# -- the block structure ----------------------------------------------------------------------

def _ordered_to_dense(num_blocks_in_row: Tensor, col_indices: Tensor, num_cols: int) -> Tensor:
    """The (…, rows, num_cols) int32 0/1 matrix whose row r has ones at the first
    ``num_blocks_in_row[r]`` entries of ``col_indices[r]``."""
    device = col_indices.device
    max_entries = col_indices.shape[-1]
    valid = ember.arange(max_entries, device=device) < num_blocks_in_row.unsqueeze(-1)
    cols = ember.arange(num_cols, device=device)
    hits = (col_indices.unsqueeze(-1) == cols) & valid.unsqueeze(-1)  # (…, rows, entries, cols)
    return hits.any(-2).to(ember.int32)


def _dense_to_ordered(dense_mask: Tensor) -> tuple[Tensor, Tensor]:
    dense_mask = dense_mask.to(dtype=ember.int32)
    num_blocks_in_row = dense_mask.sum(dim=-1)
    col_indices = ember.argsort(dense_mask, dim=-1, descending=True, stable=True)
    return num_blocks_in_row.to(ember.int32).contiguous(), col_indices.to(ember.int32).contiguous()


def _transpose_ordered(num_blocks_in_row: Tensor, col_indices: Tensor) -> tuple[Tensor, Tensor]:
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, col_indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks: Tensor, indices: Tensor, new_num_rows: int,
                                   new_num_cols: int) -> tuple[Tensor, Tensor]:
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    num_blocks = ember.clamp(num_blocks, max=new_num_cols)
    num_blocks = (indices < num_blocks[:, :, :, None]).sum(dim=-1).to(ember.int32)
    return num_blocks, indices


class BlockMask:
    r"""PyTorch's block-sparse attention mask: for each row of ``Q_BLOCK_SIZE`` queries, the
    ``KV_BLOCK_SIZE`` key blocks that are partly (``kv_num_blocks``/``kv_indices``) or fully
    (``full_kv_num_blocks``/``full_kv_indices``) unmasked, their transposes for the backward
    pass (``q_*``, generated), and the element-level ``mask_mod``.

    ``num_blocks[..., r]`` counts the blocks of row ``r``; ``indices[..., r, :num_blocks]`` are
    their column positions (the rest is undefined). ``to_dense()`` gives the block matrix.
    """

    seq_lengths: tuple[int, int]
    kv_num_blocks: Tensor
    kv_indices: Tensor
    full_kv_num_blocks: Tensor | None
    full_kv_indices: Tensor | None
    q_num_blocks: Tensor | None
    q_indices: Tensor | None
    full_q_num_blocks: Tensor | None
    full_q_indices: Tensor | None
    dq_write_order: Tensor | None
    dq_write_order_full: Tensor | None
    dq_kv_order: Tensor | None
    dq_kv_order_spt: bool | None
    BLOCK_SIZE: tuple[int, int]
    mask_mod: _mask_mod_signature

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                     "dq_write_order", "dq_write_order_full", "dq_kv_order"]

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Tensor, kv_indices: Tensor,
                 full_kv_num_blocks: Tensor | None, full_kv_indices: Tensor | None,
                 q_num_blocks: Tensor | None, q_indices: Tensor | None,
                 full_q_num_blocks: Tensor | None, full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE,
                                                _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod: _mask_mod_signature = noop_mask, *,
                 dq_write_order: Tensor | None = None,
                 dq_write_order_full: Tensor | None = None,
                 dq_kv_order: Tensor | None = None,
                 dq_kv_order_spt: bool | None = None) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if kv_num_blocks is None:
            raise AssertionError("kv_num_blocks must be provided")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.dq_write_order = dq_write_order
        self.dq_write_order_full = dq_write_order_full
        self.dq_kv_order = dq_kv_order
        self.dq_kv_order_spt = dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: _mask_mod_signature | None = None,
                       seq_lengths: tuple[int, int] | None = None,
                       compute_q_blocks: bool = True, *,
                       dq_write_order: Tensor | None = None,
                       dq_write_order_full: Tensor | None = None,
                       dq_kv_order: Tensor | bool | None = None) -> BlockMask:
        """Creates a BlockMask from the kv-side block description; the q-side one (for the
        backward pass) is generated by transposing it."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_num_blocks = q_indices = full_q_num_blocks = full_q_indices = None
        if compute_q_blocks:
            q_num_blocks, q_indices = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_num_blocks, full_q_indices = _transpose_ordered(full_kv_num_blocks,
                                                                       full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        mask_mod = mask_mod if mask_mod is not None else noop_mask
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        return cls(seq_lengths=seq_lengths, kv_num_blocks=kv_num_blocks, kv_indices=kv_indices,
                   full_kv_num_blocks=full_kv_num_blocks, full_kv_indices=full_kv_indices,
                   q_num_blocks=q_num_blocks, q_indices=q_indices,
                   full_q_num_blocks=full_q_num_blocks, full_q_indices=full_q_indices,
                   BLOCK_SIZE=BLOCK_SIZE, mask_mod=mask_mod, dq_write_order=dq_write_order,
                   dq_write_order_full=dq_write_order_full,
                   dq_kv_order=dq_kv_order if isinstance(dq_kv_order, Tensor) else None,
                   dq_kv_order_spt=dq_kv_order if isinstance(dq_kv_order, bool) else None)

    def as_tuple(self, flatten: bool = True) -> tuple[Any, ...]:
        """The attributes of the BlockMask as a tuple (``flatten`` spreads the pairs
        ``seq_lengths`` and ``BLOCK_SIZE``)."""
        seq_lengths = tuple(self.seq_lengths) if flatten else (self.seq_lengths,)
        block_size = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        return (*seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, self.dq_write_order, self.dq_write_order_full,
                self.dq_kv_order, self.dq_kv_order_spt, *block_size, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        *batch_dims, _, _ = self.kv_indices.shape
        return tuple(batch_dims) + tuple(self.seq_lengths)

    def __str__(self) -> str:
        s = f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
        s += self.to_string().strip()
        s += "\n)"
        return s

    def __getitem__(self, index) -> BlockMask:
        """A BlockMask of the selected batch/head (and query block) positions; its mask_mod
        is reset (PyTorch's rule: set it from the original mask's)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        index = (index,) if not isinstance(index, tuple) else index
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        # an int keeps its dimension (a length-1 slice), so the result stays a BlockMask
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        full = self.full_kv_num_blocks is not None
        new = BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index],
            self.full_kv_num_blocks[index] if full else None,
            self.full_kv_indices[index] if full else None,
            BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
            seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        if self.dq_write_order is not None:
            new.dq_write_order, new.dq_write_order_full = _compute_dq_write_order_from_block_mask(
                new, dq_kv_order=new.dq_kv_order_spt)
        return new

    def __repr__(self) -> str:
        def shape_or_none(x: Tensor | None):
            return x.shape if x is not None else None

        mask_mod = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (
            f"BlockMask(\n"
            f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
            f"    kv_indices={self.kv_indices.shape},\n"
            f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
            f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
            f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
            f"    q_indices={shape_or_none(self.q_indices)},\n"
            f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
            f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
            f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
            f"    shape={self.shape},\n"
            f"    sparsity={self.sparsity():.2f}%,\n"
            f"    mask_mod={mask_mod}\n"
            f")"
        )

    def _adjust(self, new_q_len: int, new_kv_len: int) -> BlockMask:
        """The mask cropped (to the upper left corner) to new sequence lengths."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Adjusting BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        new_num_rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        new_num_cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        kv = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, new_num_rows,
                                            new_num_cols)
        full = (None, None)
        if self.full_kv_num_blocks is not None:
            full = _adjust_num_blocks_and_indices(self.full_kv_num_blocks, self.full_kv_indices,
                                                  new_num_rows, new_num_cols)
        new = self.from_kv_blocks(*kv, *full, BLOCK_SIZE=self.BLOCK_SIZE,
                                  mask_mod=self.mask_mod, seq_lengths=(new_q_len, new_kv_len),
                                  compute_q_blocks=self.q_indices is not None)
        new.dq_kv_order_spt = self.dq_kv_order_spt
        if self.dq_write_order is not None:
            new.dq_write_order, new.dq_write_order_full = _compute_dq_write_order_from_block_mask(
                new, dq_kv_order=new.dq_kv_order_spt)
        return new

    def numel(self) -> int:
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed_blocks += int(self.full_kv_num_blocks.sum().item())
        computed_size = computed_blocks * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self) -> Tensor:
        """Returns a dense block that is equivalent to the block mask."""
        dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices,
                                              self.full_kv_indices.shape[-1])
        return dense

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """Returns a string representation of the block mask. Quite nifty.

        If grid_size is -1, prints out an uncompressed version. Warning, it can be quite big!
        """
        dense_mask = self.to_dense()
        *batch_dims, num_rows, num_cols = dense_mask.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        else:
            max_rows, max_cols = grid_size
        row_step = max(1, -(-num_rows // max_rows))
        col_step = max(1, -(-num_cols // max_cols))

        def summarize_section(section: Tensor) -> str:
            percentage = section.float().mean().item()
            return "█" if percentage == 1 else " " if percentage == 0 else "░"

        def create_block_vis(*batch_idx) -> str:
            cur_mask = dense_mask
            for idx in batch_idx:
                cur_mask = cur_mask[idx]
            vis = f"{batch_idx}\n"
            for r in range(0, num_rows, row_step):
                for c in range(0, num_cols, col_step):
                    vis += summarize_section(cur_mask[r:r + row_step, c:c + col_step]) * 2
                vis += "\n"
            return vis

        total_vis = []
        for idx, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if idx == limit:
                total_vis.append("...")
                total_vis.append("To print out more, set BlockMask.to_string(limit=N)")
                total_vis.append("You can also index (BlockMask[batch, head]) to choose a "
                                 "specific batch or head")
                break
            total_vis.append(create_block_vis(*batch_idx))
        return "\n".join(total_vis)

    def to(self, device) -> BlockMask:
        """A new BlockMask with its tensors moved to ``device``."""
        moved = {attr: (t.to(device) if isinstance(t := getattr(self, attr), Tensor) else t)
                 for attr in self._TENSOR_ATTRS}
        return BlockMask(seq_lengths=self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod, dq_kv_order_spt=self.dq_kv_order_spt)


def _round_up_to_multiple(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def _convert_mask_to_block_mask(mask: Tensor, Q_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
                                KV_BLOCK_SIZE: int = _DEFAULT_SPARSE_BLOCK_SIZE,
                                separate_full_blocks: bool = False
                                ) -> tuple[Tensor, Tensor | None]:
    """Per (Q_BLOCK_SIZE x KV_BLOCK_SIZE) block of a 4-d boolean mask (padded with False to
    whole blocks): whether it is partly unmasked, and (``separate_full_blocks``) whether it is
    fully unmasked (then it is not counted as partial), as int8."""
    if mask.dtype != ember.bool:
        raise AssertionError(f"mask.dtype must be {ember.bool}, got {mask.dtype}")
    while mask.dim() < 4:
        mask = mask.unsqueeze(0)
    B, H, Q, KV = mask.shape
    Qp, KVp = _round_up_to_multiple(Q, Q_BLOCK_SIZE), _round_up_to_multiple(KV, KV_BLOCK_SIZE)
    if (Qp, KVp) != (Q, KV):
        padded = mask.new_zeros((B, H, Qp, KVp))
        padded[:, :, :Q, :KV] = mask
        mask = padded
    mask = mask.reshape(B, H, Qp // Q_BLOCK_SIZE, Q_BLOCK_SIZE, KVp // KV_BLOCK_SIZE,
                        KV_BLOCK_SIZE)
    mask_block_sum = mask.sum(dim=(3, 5))
    if separate_full_blocks:
        full_block_sum = Q_BLOCK_SIZE * KV_BLOCK_SIZE
        full_blocks = mask_block_sum == full_block_sum
        partial_blocks = (mask_block_sum > 0) & (mask_block_sum < full_block_sum)
        return partial_blocks.to(dtype=ember.int8), full_blocks.to(dtype=ember.int8)
    return (mask_block_sum > 0).to(dtype=ember.int8), None


def _mod_mask(mod_fn: Callable[..., Any], B: int, H: int, Q_LEN: int, KV_LEN: int,
              device) -> Tensor:
    """``create_mask``'s boolean mask, possibly of size 1 in dims it does not depend on."""
    shape = (B, H, Q_LEN, KV_LEN)
    if _get_mod_type(mod_fn) == _ModificationType.SCORE_MOD:
        out = _call_mod(mod_fn, ember.zeros(shape, device=device), shape, device)
        return ~ember.isneginf(out)
    out = _call_mod(mod_fn, None, shape, device)
    while out.dim() < 4:
        out = out.unsqueeze(0)
    return out


def _default_device():
    accelerator = ember.accelerator.current_accelerator()
    return accelerator if accelerator is not None else "cpu"


def create_mask(mod_fn: _score_mod_signature | _mask_mod_signature, B: int | None,
                H: int | None, Q_LEN: int, KV_LEN: int, device=None) -> Tensor:
    r"""This function creates a mask tensor from a mod_fn function.

    Args:
        mod_fn (Union[_score_mod_signature, _mask_mod_signature]): Function to modify
            attention scores (a score_mod masks where it gives ``-inf``) or a mask_mod.
        B (int): Batch size (None: 1).
        H (int): Number of query heads (None: 1).
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device (str): Device to run the mask creation on (default: the current accelerator,
            else the CPU).

    Returns:
        mask (Tensor): A boolean mask tensor with shape (B, H, M, N).
    """
    if device is None:
        device = _default_device()
    B = 1 if B is None else B
    H = 1 if H is None else H
    mask = _mod_mask(mod_fn, B, H, Q_LEN, KV_LEN, device)
    return mask.expand(B, H, Q_LEN, KV_LEN).contiguous()


def _compute_dq_write_order_from_block_mask(block_mask: BlockMask,
                                            dq_kv_order: bool | None = False
                                            ) -> tuple[Tensor, Tensor | None]:
    """dQ write-order metadata (PyTorch's, for its deterministic block-sparse FLASH backward):
    for each (n_block, entry of q_indices), the rank of that n_block among the blocks of the
    m_block row, ascending (``dq_kv_order=False``) or descending."""
    if block_mask.q_num_blocks is None or block_mask.q_indices is None:
        raise ValueError(
            "BlockMask must have q_num_blocks and q_indices to compute dq_write_order")
    kv_indices, q_indices = block_mask.kv_indices, block_mask.q_indices
    full_kv_indices, full_q_indices = block_mask.full_kv_indices, block_mask.full_q_indices
    device = kv_indices.device
    shapes = [kv_indices.shape[:2], q_indices.shape[:2]]
    shapes += [t.shape[:2] for t in (full_kv_indices, full_q_indices) if t is not None]
    B, H = ember.broadcast_shapes(*shapes)

    def expand_bh(t: Tensor) -> Tensor:
        return t.expand(B, H, *t.shape[2:])

    kv_num_blocks, kv_indices = expand_bh(block_mask.kv_num_blocks), expand_bh(kv_indices)
    num_m, num_n = kv_indices.shape[2], q_indices.shape[2]
    dense = _ordered_to_dense(kv_num_blocks, kv_indices, num_n)
    has_full = block_mask.full_kv_num_blocks is not None
    if has_full:
        dense_full = _ordered_to_dense(expand_bh(block_mask.full_kv_num_blocks),
                                       expand_bh(full_kv_indices), num_n)
        dense = (dense + dense_full).clamp(max=1)
    cumsum = dense.cumsum(dim=-1)
    rank_table = (cumsum - dense).to(ember.int32)
    if dq_kv_order:
        rank_table = (cumsum[:, :, :, -1:] - 1 - rank_table).to(ember.int32)

    def gather_write_order(bwd_idx: Tensor) -> Tensor:
        b_i = ember.arange(B, device=device)[:, None, None, None]
        h_i = ember.arange(H, device=device)[None, :, None, None]
        n_i = ember.arange(bwd_idx.shape[2], device=device)[None, None, :, None]
        m_vals = bwd_idx.long().clamp(0, num_m - 1)
        return rank_table[b_i, h_i, m_vals, n_i].to(ember.int32)

    dq_write_order = gather_write_order(q_indices)
    dq_write_order_full = None
    if has_full and full_q_indices is not None:
        dq_write_order_full = gather_write_order(full_q_indices)
    return dq_write_order, dq_write_order_full


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None, Q_LEN: int,
                      KV_LEN: int, device=None,
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile=False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    r"""This function creates a block mask tuple from a mask_mod function.

    Args:
        mask_mod (Callable): ``mask_mod(b, h, q_idx, kv_idx)``, True where attention is
            allowed.
        B (int): Batch size (None: 1, broadcast).
        H (int): Number of query heads (None: 1, broadcast).
        Q_LEN (int): Sequence length of query.
        KV_LEN (int): Sequence length of key/value.
        device (str): Device to run the mask creation on (default: the current accelerator,
            else the CPU).
        BLOCK_SIZE (int or tuple[int, int]): Block size for the block mask (query, key/value).
        separate_full_blocks (bool): If True, fully unmasked blocks are stored separately
            (``full_kv_*``); if False all non-empty blocks are partial blocks.
        compute_dq_write_order (bool): If True, precompute PyTorch's dQ write-order metadata.
        dq_kv_order (bool): its KV-column order (False ascending, True descending).

    Returns:
        BlockMask:  A BlockMask object that contains the block mask information.

    Example::

        >>> def causal_mask(b, h, q_idx, kv_idx):
        ...     return q_idx >= kv_idx
        >>> block_mask = create_block_mask(causal_mask, 1, 1, 256, 256, device="cpu")
        >>> block_mask.kv_num_blocks.shape
        ember.Size([1, 1, 2])
    """
    if device is None:
        device = _default_device()
    if _get_mod_type(mask_mod) != _ModificationType.MASK_MOD:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B = 1 if B is None else B
    H = 1 if H is None else H
    if isinstance(BLOCK_SIZE, int):
        Q_BLOCK_SIZE = KV_BLOCK_SIZE = BLOCK_SIZE
    else:
        Q_BLOCK_SIZE, KV_BLOCK_SIZE = BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to compile "
            "create_block_mask, we suggest doing torch.compile(create_block_mask). This still "
            "works for now, but will be removed in the future.", DeprecationWarning, stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")

    # the blocks of the mask as computed (dims the mask_mod ignores have size 1), then
    # broadcast to (B, H, ...) at block granularity
    mask = _mod_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    partial, full = _convert_mask_to_block_mask(mask, Q_BLOCK_SIZE, KV_BLOCK_SIZE,
                                                separate_full_blocks)
    partial = partial.expand(B, H, *partial.shape[2:])
    partial_bm = _dense_to_ordered(partial)
    full_bm = (None, None)
    if full is not None:
        full_bm = _dense_to_ordered(full.expand(B, H, *full.shape[2:]))
    block_mask = BlockMask.from_kv_blocks(partial_bm[0], partial_bm[1], full_bm[0], full_bm[1],
                                          BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE),
                                          mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))
    if compute_dq_write_order:
        block_mask.dq_write_order, block_mask.dq_write_order_full = \
            _compute_dq_write_order_from_block_mask(block_mask, dq_kv_order=dq_kv_order)
        block_mask.dq_kv_order = None
        block_mask.dq_kv_order_spt = dq_kv_order
    return block_mask


# -- flex_attention ---------------------------------------------------------------------------

def _validate_inputs(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool,
                     block_mask: BlockMask | None) -> None:
    if query.is_nested or key.is_nested or value.is_nested:
        raise NotImplementedError(
            "flex_attention does not support NestedTensor inputs, including "
            "torch.compile(flex_attention) with jagged NestedTensor inputs. "
            "Convert inputs to dense tensors before calling flex_attention.")
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, "
            f"but got query.device: {query.device}, key.device: {key.device}, "
            f"and value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(
            f"Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: {value.dim()} "
            f"instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"Expect query and key/value to have the same embedding dimension "
            f"but got E={query.size(-1)} and E={key.size(-1)}.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not enable_gqa and query.size(-3) != key.size(-3):
        raise ValueError(
            f"Expect query and key/value to have the same number of heads "
            f"but got Hq={query.size(-3)} and Hkv={key.size(-3)}. "
            f"Try setting enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(
            f"Expect number of query heads to be a multiple of kv heads for GQA "
            f"but got Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or non-none block_mask, "
                f"but got block_mask=None, Bq={query.size(0)}, and Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or block_mask and query to have the same batch size, "
                f"but got Bq={query.size(0)}, Bkv={key.size(0)}, "
                f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _validate_block_mask(block_mask: BlockMask, query: Tensor, key: Tensor) -> None:
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    q_len, kv_len = query.size(-2), key.size(-2)
    bm_q_len, bm_kv_len = block_mask.shape[-2], block_mask.shape[-1]
    if q_len > bm_q_len or kv_len > bm_kv_len:
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={q_len} and kv_len={kv_len}. As the block mask was created for a smaller "
            f"length than you're using it for, you likely need to create a new block mask.")
    if (q_len, kv_len) != (bm_q_len, bm_kv_len):
        raise ValueError(
            f"block_mask was created for block_mask.shape={block_mask.shape} but got "
            f"q_len={q_len} and kv_len={kv_len}. As the block mask was created for a larger "
            f"length than you're using it for, you can either 1. create a new block mask with "
            f"the correct length, or 2. 'adjust' the existing block mask to the correct length "
            f"by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the block "
            f"mask to the upper left corner, which does not work for all mask_mods!")
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(
            f"Expect q/k/v and block_mask to be on the same device "
            f"but got {query.device} and {block_mask.kv_num_blocks.device}.")


def _check_kernel_options(kernel_options: FlexKernelOptions | None) -> None:
    options = dict(kernel_options or {})
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError(
            "BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. "
            "BACKEND supersedes the legacy knob; please drop FORCE_USE_FLEX_ATTENTION "
            "and only specify the desired BACKEND.")
    valid_backends = typing.get_args(_Backend)
    if "BACKEND" in options and options["BACKEND"] not in valid_backends:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. "
                         f"Must be one of {valid_backends}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in options:
            raise AssertionError(f"{internal} must not be in kernel_options")


def _safe_softmax_and_stats(scores: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Softmax over the last dim, its logsumexp and max, with rows that are all ``-inf``
    giving probabilities 0 and logsumexp/max ``-inf`` (and no NaN in any gradient)."""
    masked_rows = ember.all(scores == float("-inf"), dim=-1, keepdim=True)
    safe = ember.where(masked_rows, 0.0, scores)
    probs = ember.where(masked_rows, 0.0, ember.softmax(safe, dim=-1))
    lse = ember.where(masked_rows.squeeze(-1), float("-inf"), ember.logsumexp(safe, dim=-1))
    max_scores = ember.amax(scores, dim=-1)
    return probs, lse, max_scores


def _math_attention(query: Tensor, key: Tensor, value: Tensor, score_mod, mask_mod,
                    scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """PyTorch's eager reference (``math_attention``) in Ember ops: output, logsumexp and
    max score (natural log)."""
    G = query.size(1) // key.size(1)
    if G != 1:
        key = ember.repeat_interleave(key, G, dim=1)
        value = ember.repeat_interleave(value, G, dim=1)
    Bq, Bkv = query.size(0), key.size(0)
    if not (Bq == Bkv or (Bq > 1 and Bkv == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={Bq} and Bkv={Bkv}")
    if Bkv != Bq:
        key = key.expand((Bq, *key.shape[1:]))
        value = value.expand((Bq, *value.shape[1:]))

    working = ember.float64 if query.dtype == ember.float64 else ember.float32
    scores = query.to(working) @ key.to(working).transpose(-2, -1)
    scores = (scores * scale).to(working)
    shape = tuple(scores.shape)
    device = scores.device
    if score_mod is not None:
        scores = _call_mod(score_mod, scores, shape, device)
    if mask_mod is not None:
        scores = ember.where(_call_mod(mask_mod, None, shape, device), scores, float("-inf"))
    if tuple(scores.shape) != shape:  # a mod that ignores some indices
        scores = scores.expand(shape)
    probs, lse, max_scores = _safe_softmax_and_stats(scores)
    out = probs.to(query.dtype) @ value.to(query.dtype)
    return out, lse, max_scores


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: FlexKernelOptions | None = None, *,
                   return_aux: AuxRequest | None = None):
    r"""Scaled dot product attention with an arbitrary score modification
    (``score_mod(score, batch, head, q_idx, kv_idx)``) and a block mask (``create_block_mask``),
    as PyTorch's ``flex_attention``.

    Args:
        query (Tensor): Query tensor; shape :math:`(B, Hq, L, E)`.
        key (Tensor): Key tensor; shape :math:`(B, Hkv, S, E)`.
        value (Tensor): Value tensor; shape :math:`(B, Hkv, S, Ev)`.
        score_mod (Optional[Callable]): Function to modify attention scores. By default no
            score_mod is applied. Its index arguments are int64 tensors (module docstring).
        block_mask (Optional[BlockMask]): the mask (its ``mask_mod`` is applied per element).
        scale (Optional[float]): Scaling factor applied prior to softmax. If none, the default
            value is set to :math:`\frac{1}{\sqrt{E}}`.
        enable_gqa (bool): If set to True, enables Grouped Query Attention (GQA) and broadcasts
            key/value heads to query heads.
        return_lse (bool): Whether to return the logsumexp of the attention scores
            (**deprecated**: use ``return_aux=AuxRequest(lse=True)``).
        kernel_options (Optional[FlexKernelOptions]): options of PyTorch's fused kernels
            (checked, otherwise unused: Ember runs the math implementation).
        return_aux (Optional[AuxRequest]): which auxiliary outputs (logsumexp, max score) to
            return.

    Returns:
        output (Tensor): Attention output; shape :math:`(B, Hq, L, Ev)`; with ``return_aux``
        also an ``AuxOutput``; with ``return_lse`` also the logsumexp, shape :math:`(B, Hq, L)`.
        A query row with every key masked gets output 0 and logsumexp ``-inf``.
    """
    _validate_inputs(query, key, value, enable_gqa, block_mask)
    mask_mod = None
    if block_mask is not None:
        _validate_block_mask(block_mask, query, key)
        if block_mask.mask_mod is not noop_mask:
            mask_mod = block_mask.mask_mod
    if score_mod is _identity:
        score_mod = None
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if return_lse and return_aux is not None:
        raise ValueError(
            "Cannot specify both return_lse and return_aux. "
            "return_lse is deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse",
                   "return_lse is deprecated and will be removed in v2.10. "
                   "Please use return_aux=AuxRequest(lse=True) instead.",
                   category=FutureWarning)
    _check_kernel_options(kernel_options)

    out, lse, max_scores = _math_attention(query, key, value, score_mod, mask_mod, scale)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=max_scores if return_aux.max_scores else None)
    if return_lse:
        return out, lse
    return out
