"""The blocked sparse layouts ``ember.sparse_bsr`` and ``ember.sparse_bsc``, as PyTorch's.

A block tensor is a :class:`ember._sparse_tensor.SparseTensor` of a 2-D shape ``(M, N)``
whose ``_idx`` is ``(2, nblocks)``: the (block row, block column) of each stored block, in
block-row-major order for BSR and block-column-major order for BSC, and whose ``_vals`` is
``(nblocks, R, C)``, the dense blocks (``blocksize = (R, C)``; ``M`` and ``N`` divisible by
them). ``crow_indices()``/``ccol_indices()`` are derived from the block rows/columns, as a
CSR tensor's from its rows. Every differentiable operation is a dense operation on the
block values (gathers, batched products and segment sums), so gradients flow to the values
and to dense operands as for the other layouts.
"""

from __future__ import annotations

import numpy as np

from .._device import xp_of
from .._layout import sparse_bsc, sparse_bsr, sparse_coo
from .._sparse_tensor import _LAYOUT_WORDS, _named, make_sparse
from .._tensor import Tensor, _make

BLOCK_LAYOUTS = (sparse_bsr, sparse_bsc)


def blocksize(s) -> tuple:
    """``(R, C)`` of a block tensor."""
    return tuple(s._vals._data.shape[1:3])


def check_blocksize(size, name: str) -> tuple:
    """``size`` (an int or a pair of positive ints) as ``(R, C)``, or PyTorch's error."""
    if isinstance(size, Tensor) or not isinstance(size, (int, tuple, list)) or \
            isinstance(size, bool):
        raise TypeError(f"{name}(): argument 'blocksize' (position 1) must be tuple of ints, "
                        f"not {type(size).__name__}")
    pair = (size, size) if isinstance(size, int) else tuple(size)
    if len(pair) != 2:
        raise RuntimeError(f"{name}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(pair)}")
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in pair):
        raise TypeError(f"{name}(): argument 'blocksize' must be tuple of ints")
    pair = (int(pair[0]), int(pair[1]))
    if pair[0] <= 0 or pair[1] <= 0:
        raise RuntimeError(f"{name}: blocksize needs to be positive, but got {list(pair)}")
    return pair


def _kind(layout) -> str:
    return "bsr" if layout is sparse_bsr else "bsc"


def _check_divisible(shape: tuple, bs: tuple, name: str) -> None:
    if len(shape) != 2:
        raise RuntimeError(f"{name}: Ember's block sparse tensors are 2-D, got a "
                           f"{len(shape)}-D tensor")
    if shape[0] % bs[0] or shape[1] % bs[1]:
        raise RuntimeError(f"{name}: tensor sparse size ({shape[0]},{shape[1]}) must be "
                           f"divisible by given blocksize ({bs[0]},{bs[1]})")


def _ordered(br, bc, layout, xp):
    """The permutation putting blocks ``(br, bc)`` into ``layout``'s order."""
    return xp.argsort(bc if layout is sparse_bsc else br, kind="stable")


def dense_to_block(x: Tensor, size, layout, name: str | None = None):
    """``x.to_sparse_bsr(blocksize)`` / ``to_sparse_bsc``: the blocks of the 2-D ``x`` that
    hold a nonzero element; differentiable in ``x``."""
    name = name or f"dense_to_sparse_{_kind(layout)}"
    bs = check_blocksize(size, name)
    shape = tuple(x._data.shape)
    _check_divisible(shape, bs, name)
    (m, n), (r, c) = shape, bs
    xp = xp_of(x)
    mask = (x._data.reshape(m // r, r, n // c, c) != 0).any(axis=(1, 3))
    if layout is sparse_bsc:
        bc, br = xp.nonzero(mask.T)
    else:
        br, bc = xp.nonzero(mask)
    idx = xp.stack((br, bc)).astype(np.int64, copy=False)
    blocks = x.reshape(m // r, r, n // c, c).permute(0, 2, 1, 3)
    values = blocks[(_make(idx[0], x._device), _make(idx[1], x._device))]
    node = "ToSparseBsrBackward0" if layout is sparse_bsr else "ToSparseBscBackward0"
    return make_sparse(idx, _named(values, node), shape, coalesced=True, layout=layout)


def sparse_to_block(s, size, layout, name: str | None = None):
    """A sparse tensor of any layout in the block ``layout`` with ``blocksize`` ``size``."""
    if s._layout in BLOCK_LAYOUTS:
        bs = check_blocksize(size, name or f"sparse_compressed_to_sparse_{_kind(layout)}")
        old = blocksize(s)
        if bs != old:
            word = name or (f"to_sparse_{_kind(layout)}" if s._layout is layout else
                            f"sparse_compressed_to_sparse_{_kind(layout)}")
            raise RuntimeError(f"{word}: conversion from {_LAYOUT_WORDS[s._layout]} to "
                               f"{_LAYOUT_WORDS[layout]} with blocksize changed from "
                               f"{list(old)} to {list(bs)} is not supported")
        if s._layout is layout:
            return s
        xp = xp_of(s._device)
        order = _ordered(s._idx[0], s._idx[1], layout, xp)
        vals = s._vals.index_select(0, _make(order, s._device))
        node = "ToSparseBsrBackward0" if layout is sparse_bsr else "ToSparseBscBackward0"
        return make_sparse(s._idx[:, order], _named(vals, node), s._data.shape,
                           coalesced=True, layout=layout)
    if name is None:
        name = (f"coo_to_sparse_{_kind(layout)}" if s._layout is sparse_coo else
                f"sparse_compressed_to_sparse_{_kind(layout)}")
    bs = check_blocksize(size, name)
    shape = tuple(s._data.shape)
    if s.dense_dim():
        raise RuntimeError(f"{name}: Ember's block sparse tensors have no dense dimensions, "
                           f"got {s.dense_dim()}")
    _check_divisible(shape, bs, name)
    (m, n), (r, c) = shape, bs
    coo = s.to_sparse_coo().coalesce()
    xp = xp_of(s._device)
    rows, cols = coo._idx[0], coo._idx[1]
    nbr, nbc = m // r, n // c
    key = (cols // c) * nbr + rows // r if layout is sparse_bsc else (rows // r) * nbc + cols // c
    uniq, inverse = xp.unique(key, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64, copy=False)
    if layout is sparse_bsc:
        br, bc = uniq % nbr, uniq // nbr
    else:
        br, bc = uniq // nbc, uniq % nbc
    nb = int(uniq.shape[0])
    pos = inverse * (r * c) + (rows % r) * c + cols % c
    from .._factory import zeros

    vals = coo._vals
    flat = zeros(nb * r * c, dtype=vals.dtype, device=s._device)
    blocks = flat.index_add(0, _make(pos, s._device), vals).reshape(nb, r, c)
    node = "ToSparseBsrBackward0" if layout is sparse_bsr else "ToSparseBscBackward0"
    idx = xp.stack((br, bc)).astype(np.int64, copy=False)
    return make_sparse(idx, _named(blocks, node), shape, coalesced=True, layout=layout)


def block_to_coo(s):
    """The COO tensor of every element of every stored block (the zeros inside blocks
    included), block by block, as PyTorch's ``to_sparse()`` of a block tensor; uncoalesced
    unless there is at most one block. Differentiable in the values."""
    xp = xp_of(s._device)
    r, c = blocksize(s)
    br, bc = s._idx[0], s._idx[1]
    nb = br.shape[0]
    rows = br[:, None, None] * r + xp.arange(r, dtype=np.int64)[None, :, None]
    cols = bc[:, None, None] * c + xp.arange(c, dtype=np.int64)[None, None, :]
    shape3 = (nb, r, c)
    idx = xp.stack((xp.broadcast_to(rows, shape3).reshape(-1),
                    xp.broadcast_to(cols, shape3).reshape(-1)))
    values = _named(s._vals.reshape(-1), "ToSparseBackward1")
    return make_sparse(idx, values, s._data.shape, coalesced=nb < 2)


def block_transpose(s):
    """The transpose of a block tensor: BSR becomes BSC and BSC BSR, each block transposed
    (the block order is already the other layout's)."""
    layout = sparse_bsc if s._layout is sparse_bsr else sparse_bsr
    return make_sparse(s._idx[::-1].copy(), s._vals.transpose(1, 2), s._data.shape[::-1],
                       coalesced=s._coalesced, layout=layout)


def block_mm(s, d: Tensor) -> Tensor:
    """``s @ d`` for a block tensor ``s`` ``(M, N)`` and a dense matrix ``d`` ``(N, n)``: the
    rows of ``d`` gathered per block column, one batched product with the blocks, and a
    segment sum per block row. Differentiable (twice) in the values and in ``d``."""
    from .._factory import zeros

    (m, k), (r, c) = s._data.shape, blocksize(s)
    n = d._data.shape[1]
    br = _make(s._idx[0], s._device)
    bc = _make(s._idx[1], s._device)
    gathered = d.reshape(k // c, c, n).index_select(0, bc)  # (nblocks, C, n)
    prod = s._vals.matmul(gathered)  # (nblocks, R, n)
    acc = zeros((m // r, r, n), dtype=prod.dtype, device=s._device)
    return _named(acc.index_add(0, br, prod).reshape(m, n), "MmBackward0")


def as_block_layout(s, like):
    """The COO tensor ``s`` in the block layout and blocksize of ``like``."""
    return sparse_to_block(s, blocksize(like), like._layout)


def expect_not_block(s, name: str) -> None:
    """PyTorch's error of the CSR/CSC-only conversions for a block tensor."""
    if s._layout in BLOCK_LAYOUTS:
        raise RuntimeError(f"sparse_compressed_to_sparse_{name}: expected SparseCsr or "
                           f"SparseCsc layout but got {_LAYOUT_WORDS[s._layout]}")


__all__ = ["BLOCK_LAYOUTS", "blocksize", "check_blocksize", "dense_to_block", "sparse_to_block",
           "block_to_coo", "block_transpose", "block_mm", "as_block_layout", "expect_not_block"]
