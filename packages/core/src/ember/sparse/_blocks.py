"""The products of the blocked sparse layouts ``ember.sparse_bsr`` and ``ember.sparse_bsc``,
as PyTorch's.

A block tensor is a :class:`ember._sparse_tensor.SparseTensor` of size ``(*batch, M, N)``
whose ``_idx`` holds the batch indices, block row and block column of each stored block (in
block-row-major order for BSR and block-column-major order for BSC, batch by batch) and whose
``_vals`` is ``(nblocks, R, C)``, the dense blocks (``blocksize = (R, C)``; ``M`` and ``N``
divisible by them); construction, conversions and transposes are those of every compressed
layout (``ember.sparse._compressed``). A product is a dense operation on the block values
(gathers, one batched product and a segment sum), so gradients flow to the values and to the
dense operand as for the other layouts.
"""

from __future__ import annotations

import math

from .._device import xp_of
from .._sparse_tensor import _named
from .._tensor import Tensor, _make
from ._compressed import BLOCK, batch_ndim, blocksize, flat_batch

BLOCK_LAYOUTS = BLOCK

__all__ = ["BLOCK_LAYOUTS", "block_mm"]


def block_mm(s, d: Tensor) -> Tensor:
    """``s @ d`` for a block tensor ``s`` of size ``(*batch, M, N)`` and a dense ``d`` of size
    ``(*batch, N, n)``: the rows of ``d`` gathered per block column, one batched product with
    the blocks, and a segment sum per block row, batch by batch. Differentiable (twice) in the
    values and in ``d``."""
    from .._factory import zeros

    nb = batch_ndim(s)
    batch = tuple(s._data.shape[:nb])
    (m, k), (r, c) = s._data.shape[nb:nb + 2], blocksize(s)
    b, n = math.prod(batch), d._data.shape[-1]
    br, bc = s._idx[nb], s._idx[nb + 1]
    if nb:  # the block rows and columns of the block-diagonal matrix of the batches
        lin = flat_batch(s._idx, batch, xp_of(s._device))
        br, bc = lin * (m // r) + br, lin * (k // c) + bc
    gathered = d.reshape(b * (k // c), c, n).index_select(0, _make(bc, s._device))
    prod = s._vals.matmul(gathered)  # (nblocks, R, n)
    acc = zeros((b * (m // r), r, n), dtype=prod.dtype, device=s._device)
    out = acc.index_add(0, _make(br, s._device), prod).reshape(batch + (m, n))
    return _named(out, "MmBackward0")
