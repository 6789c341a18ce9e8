"""Sparse compressed tensors (CSR, CSC, BSR, BSC) of every shape PyTorch has: leading batch
dimensions, the two sparse dimensions, and trailing dense dimensions (hybrid tensors), in any
combination, with PyTorch's rules and errors.

A compressed tensor of size ``(*batch, M, N, *dense)`` stores the same number ``nnz`` of
elements (of ``(R, C)`` blocks, for BSR and BSC) in every batch. Ember keeps one coordinate per
stored element, as for its 2-D compressed tensors:

- ``_idx``, ``(len(batch) + 2, B * nnz)``: the batch indices of each element, then its row and
  column (a block's block row and block column), in batch-major order and, within a batch, by
  compressed index (the row for CSR/BSR, the column for CSC/BSC), then by plain index;
- ``_vals``, ``(B * nnz, *block, *dense)``: the values (``block`` is ``(R, C)`` for BSR/BSC).

``values()`` is the ``(*batch, nnz, *block, *dense)`` view of ``_vals``; the compressed indices
``(*batch, ncompressed + 1)`` and the plain indices ``(*batch, nnz)`` are derived (the former
cached). So ``to_dense()``, ``sum()``, the element-wise ops, clones, moves and pickling are the
code of the 2-D tensors unchanged. This module makes these tensors (the factories'
construction with PyTorch's checks, which Ember always makes; the conversions of dense, COO and
compressed tensors), gives their parts, converts them to COO and transposes them.

As in PyTorch: a dense tensor converts with ``dense_dim`` trailing dense dimensions and the
leading ``ndim - 2 - dense_dim`` ones as batches (every batch must hold as many elements); a COO
tensor converts when it has exactly two sparse dimensions (its dense ones stay dense); CSR and
CSC convert to each other (batched or hybrid), BSR and BSC to each other with the same block
size, CSR and CSC to BSR and BSC when they have no batch dimensions; and transposes swap two
batch dimensions (the same layout) or the two sparse ones (CSR <-> CSC, BSR <-> BSC, blocks
transposed), never of a hybrid tensor.
"""

from __future__ import annotations

import math

import numpy as np

from .._device import xp_of
from .._layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from .._sparse_tensor import _LAYOUT_WORDS, _index_tensor, _named, make_sparse
from .._tensor import Tensor

__all__ = ["COMPRESSED", "BLOCK", "kind", "batch_ndim", "batch_shape", "nnz", "blocksize",
           "dense_ndim", "n_compressed", "flat_batch", "unflatten", "compressed_indices",
           "plain_indices", "values", "build", "from_dense", "to_coo", "from_coo", "convert",
           "transpose", "gather", "check_blocksize"]

COMPRESSED = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
BLOCK = (sparse_bsr, sparse_bsc)
#: the layouts whose compressed dimension is the rows (of blocks)
_ROW = (sparse_csr, sparse_bsr)
_KIND = {sparse_csr: "csr", sparse_csc: "csc", sparse_bsr: "bsr", sparse_bsc: "bsc"}
#: the names of the (compressed, plain) indices in PyTorch's errors
_PARTS = {sparse_csr: ("crow", "col"), sparse_bsr: ("crow", "col"),
          sparse_csc: ("ccol", "row"), sparse_bsc: ("ccol", "row")}
#: the compressed dimension, as PyTorch's errors name it
_COMPRESSED_DIM = {sparse_csr: "row", sparse_csc: "column", sparse_bsr: "row block",
                   sparse_bsc: "column block"}
_FLIPPED = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc,
            sparse_bsc: sparse_bsr}


# -- geometry ------------------------------------------------------------------------------------

def kind(layout) -> str:
    """``"csr"``, ``"csc"``, ``"bsr"`` or ``"bsc"``."""
    return _KIND[layout]


def batch_ndim(s) -> int:
    """The number of batch dimensions of a sparse tensor (0 for COO)."""
    return s._idx.shape[0] - 2 if s._layout is not sparse_coo else 0


def batch_shape(s) -> tuple:
    return tuple(s._data.shape[:batch_ndim(s)])


def nnz(s) -> int:
    """The number of elements (blocks) of each batch of a compressed tensor."""
    return s._idx.shape[1] // math.prod(batch_shape(s))


def blocksize(s) -> tuple:
    """``(R, C)`` of a block tensor; ``(1, 1)`` for CSR and CSC."""
    return tuple(s._vals._data.shape[1:3]) if s._layout in BLOCK else (1, 1)


def dense_ndim(s) -> int:
    return s._data.ndim - s._idx.shape[0]


def _cdim(layout) -> int:
    """Which of (rows, columns) a layout compresses: 0 or 1."""
    return 0 if layout in _ROW else 1


def n_compressed(s) -> int:
    """The number of rows (CSR), columns (CSC), block rows (BSR) or block columns (BSC)."""
    d = _cdim(s._layout)
    return s._data.shape[batch_ndim(s) + d] // blocksize(s)[d]


def flat_batch(idx, batch: tuple, xp):
    """The row-major number of the batch of each element (``idx[:len(batch)]``: its batch
    indices)."""
    lin = xp.zeros(idx.shape[1], dtype=np.int64)
    for d, size in enumerate(batch):
        lin *= size
        lin += idx[d]
    return lin


def unflatten(lin, batch: tuple, xp) -> list:
    """The batch indices (one array per batch dimension) of row-major batch numbers."""
    out = []
    for size in reversed(batch):
        out.append(lin % size)
        lin = lin // size
    return out[::-1]


def _same_nnz(counts, xp) -> None:
    if counts.shape[0] and bool(xp.any(counts != counts[0])):
        raise RuntimeError("Expect the same number of specified elements per batch.")


# -- parts ---------------------------------------------------------------------------------------

def compressed_indices(s) -> Tensor:
    """``crow_indices()`` (CSR, BSR) / ``ccol_indices()`` (CSC, BSC): ``(*batch, n + 1)``."""
    arr = s._cache.get("compressed")
    if arr is None:
        xp = xp_of(s._device)
        nb = batch_ndim(s)
        batch = tuple(s._data.shape[:nb])
        b, n, k = math.prod(batch), n_compressed(s), nnz(s)
        lin = s._idx[nb + _cdim(s._layout)]
        if nb:
            lin = flat_batch(s._idx, batch, xp) * n + lin
        starts = (xp.arange(b, dtype=np.int64)[:, None] * n +
                  xp.arange(n + 1, dtype=np.int64)[None, :])
        arr = xp.searchsorted(lin, starts.reshape(-1), side="left").reshape(b, n + 1)
        arr = (arr - xp.arange(b, dtype=np.int64)[:, None] * k).astype(np.int64, copy=False)
        arr = s._cache["compressed"] = arr.reshape(batch + (n + 1,))
    return _index_tensor(arr, s._device)


def plain_indices(s) -> Tensor:
    """``col_indices()`` (CSR, BSR) / ``row_indices()`` (CSC, BSC): ``(*batch, nnz)``."""
    nb = batch_ndim(s)
    arr = s._idx[nb + 1 - _cdim(s._layout)]
    if nb:
        arr = arr.reshape(batch_shape(s) + (nnz(s),))
    return _index_tensor(arr, s._device)


def values(s) -> Tensor:
    """``(*batch, nnz, *block, *dense)``: a differentiable view of the stored values."""
    if not batch_ndim(s):
        return s._vals
    return s._vals.reshape(batch_shape(s) + (nnz(s),) + tuple(s._vals._data.shape[1:]))


# -- construction --------------------------------------------------------------------------------

def _invariant(text: str) -> RuntimeError:
    return RuntimeError(f"`{text}` is not satisfied.")


def _shape_str(shape) -> str:
    return f"[{', '.join(map(str, shape))}]"


def build(cidx: Tensor, pidx: Tensor, vals: Tensor, size, layout, requires_grad: bool):
    """The compressed tensor of ``layout`` with compressed indices ``cidx``, plain indices
    ``pidx`` (int64 tensors) and ``vals`` (all on one device), of ``size`` (inferred when
    None): ``torch.sparse_compressed_tensor`` with PyTorch's checks, always made (as under
    ``check_invariants=True``)."""
    from ..ops.sparse_ops import _autograd_values

    c, p = _PARTS[layout]
    row = layout in _ROW
    cnd, pnd = cidx._data.ndim, pidx._data.ndim
    if cnd != pnd:
        raise RuntimeError(f"{c}_indices and {p}_indices dimensionalities must be equal but got "
                           f"{cnd} and {pnd}, respectively")
    if cnd < 1:
        raise RuntimeError(f"{c}_indices must have dimensionality >= 1 but got {cnd}")
    nb = cnd - 1
    block_nd = 2 if layout in BLOCK else 0
    vshape = tuple(vals._data.shape)
    dense_nd = len(vshape) - nb - block_nd - 1
    if dense_nd < 0:
        raise RuntimeError("values must have dimensionality > sum of batch and block "
                           f"dimensionalities (={nb} + {block_nd}) but got {len(vshape)}")
    bs = vshape[nb + 1:nb + 3] if block_nd else (1, 1)
    ncomp = cidx._data.shape[-1] - 1
    if ncomp < 0:
        raise RuntimeError(f"{c}_indices must have at least one element")
    n = pidx._data.shape[-1]
    host_p = pidx._host().astype(np.int64, copy=False)
    dense = vshape[nb + 1 + block_nd:]
    if size is None:
        nplain = int(host_p.max()) + 1 if host_p.size else 0
        base = (ncomp * bs[0], nplain * bs[1]) if row else (nplain * bs[0], ncomp * bs[1])
        shape = tuple(cidx._data.shape[:nb]) + base + dense
    else:
        shape = tuple(int(x) for x in size)
        if len(shape) != nb + 2 + dense_nd:
            raise RuntimeError("tensor dimensionality must be sum of batch, base, and dense "
                               f"dimensionalities (={nb} + 2 + {dense_nd}) but got {len(shape)}")
    batch = shape[:nb]
    parts = (cidx._data.shape[:nb], pidx._data.shape[:nb], vshape[:nb])
    if any(tuple(q) != batch for q in parts):
        words = [_shape_str(q) for q in (*parts, batch)]
        raise RuntimeError(f"all batch dimensions of {c}_indices (={words[0]}), {p}_indices "
                           f"(={words[1]}), and values (={words[2]}) must be equal to tensor "
                           f"batch dimensions (={words[3]})")
    if nb and not math.prod(batch):
        raise RuntimeError(f"sparse_{_KIND[layout]}_tensor: Ember's batched compressed tensors "
                           "have a non-zero number of batches")
    for i in range(block_nd):
        if shape[nb + i] % bs[i]:
            raise RuntimeError(f"tensor shape[{nb + i}] (={shape[nb + i]}) must be divisible "
                               f"with blocksize[{i}] (={bs[i]}) as defined by values shape")
    nrows, ncols = shape[nb] // bs[0], shape[nb + 1] // bs[1]
    comp_n, plain_n = (nrows, ncols) if row else (ncols, nrows)
    if ncomp != comp_n:
        raise RuntimeError(f"{c}_indices.shape[-1] must be equal to the number of "
                           f"{_COMPRESSED_DIM[layout]}s + 1 (={comp_n + 1}), but got "
                           f"{ncomp + 1}")
    if vshape[nb] != n:
        raise RuntimeError(f"{p}_indices.shape[-1] must be equal to nnz (={vshape[nb]}) as "
                           f"defined by values.shape[{nb}], but got {n}")
    if shape[nb + 2:] != dense:  # PyTorch does not check; its kernels then misread the values
        raise RuntimeError(f"values has incorrect size, expected "
                           f"{_shape_str(vshape[:nb + 1 + block_nd] + shape[nb + 2:])}, got "
                           f"{_shape_str(vshape)}")
    b = math.prod(batch)
    host_c = cidx._host().astype(np.int64, copy=False).reshape(b, ncomp + 1)
    host_p = host_p.reshape(b, n)
    plain_word = "ncols" if row else "nrows"
    if host_p.size and (host_p.min() < 0 or host_p.max() >= plain_n):  # PyTorch's order
        raise _invariant(f"0 <= {p}_indices < {plain_word}")
    if np.any(host_c[:, 0] != 0):
        raise _invariant(f"{c}_indices[..., 0] == 0")
    if np.any(host_c[:, -1] != n):
        raise _invariant(f"{c}_indices[..., -1] == nnz")
    step = np.diff(host_c, axis=1)
    if step.size and (step.min() < 0 or step.max() > plain_n):
        raise _invariant(f"0 <= {c}_indices[..., 1:] - {c}_indices[..., :-1] <= {plain_word}")
    if n > 1:
        owner = np.repeat(np.tile(np.arange(ncomp), b), step.reshape(-1)).reshape(b, n)
        if np.any((owner[:, 1:] == owner[:, :-1]) & (host_p[:, 1:] <= host_p[:, :-1])):
            raise _invariant(f"{p}_indices[..., {c}_indices[..., i - 1]:{c}_indices[..., i]] "
                             f"for all i = 1, ..., n{'rows' if row else 'cols'} are sorted and "
                             "distinct along the last dimension values")
    xp = xp_of(vals._device)
    # the compressed index of each element: the last slice that starts at or before it, in
    # the slices of every batch laid end to end (CuPy's repeat takes no array of counts)
    starts = cidx._data.reshape(b, ncomp + 1)[:, :-1] + \
        xp.arange(b, dtype=np.int64)[:, None] * n
    slot = xp.searchsorted(starts.reshape(-1), xp.arange(b * n, dtype=np.int64), side="right")
    comp = (slot - 1) % max(ncomp, 1)
    plain = pidx._data.reshape(-1)
    coords = [comp, plain] if row else [plain, comp]
    if nb:
        coords = unflatten(xp.repeat(xp.arange(b, dtype=np.int64), n), batch, xp) + coords
    idx = xp.stack(coords).astype(np.int64, copy=False)
    flat = vals.reshape((b * n,) + vshape[nb + 1:]) if nb else vals
    flat = _autograd_values(flat, requires_grad, "SparseCompressedTensorBackward0")
    return make_sparse(idx, flat, shape, coalesced=True, layout=layout)


def check_blocksize(size, name: str, fn: str) -> tuple:
    """``size`` (an int or a pair of positive ints) as ``(R, C)``, or PyTorch's error (its
    argument parser's names the Python function ``fn``, its kernel's ``name``)."""
    if isinstance(size, Tensor) or not isinstance(size, (int, tuple, list)) or \
            isinstance(size, bool):
        raise TypeError(f"{fn}(): argument 'blocksize' (position 1) must be tuple of ints, "
                        f"not {type(size).__name__}")
    pair = (size, size) if isinstance(size, int) else tuple(size)
    if len(pair) != 2:
        raise RuntimeError(f"{name}: blocksize needs to be a tuple of size 2, but got "
                           f"{len(pair)}")
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in pair):
        raise TypeError(f"{fn}(): argument 'blocksize' must be tuple of ints")
    pair = (int(pair[0]), int(pair[1]))
    if pair[0] <= 0 or pair[1] <= 0:
        raise RuntimeError(f"{name}: blocksize needs to be positive, but got {list(pair)}")
    return pair


def _check_divisible(m: int, n: int, bs: tuple, name: str) -> None:
    if m % bs[0] or n % bs[1]:
        raise RuntimeError(f"{name}: tensor sparse size ({m},{n}) must be divisible by given "
                           f"blocksize ({bs[0]},{bs[1]})")


def _node(layout) -> str:
    """The grad_fn name of a conversion to ``layout`` (``ToSparseCsrBackward0``)."""
    return f"ToSparse{_KIND[layout].capitalize()}Backward0"


def from_dense(x: Tensor, layout, size=None, dense_dim=None, fn: str | None = None):
    """``x.to_sparse_csr(dense_dim)`` and the other layouts' conversions of a dense tensor
    (``size``: the blocksize of BSR/BSC): the elements (blocks) that hold a nonzero number (in
    any of their dense dimensions), of every matrix of the leading ``ndim - 2 - dense_dim``
    (batch) dimensions, which must all hold as many (``fn``: the Python function called, for
    errors). Differentiable in ``x``."""
    fn = fn or f"to_sparse_{_KIND[layout]}"
    name = f"dense_to_sparse_{_KIND[layout]}"
    bs = check_blocksize(size, name, fn) if layout in BLOCK else (1, 1)
    shape = tuple(x._data.shape)
    ndim = len(shape)
    if ndim < 2:
        raise RuntimeError(f"to_sparse_{_KIND[layout]}: expected a tensor of at least 2 "
                           f"dimensions, got {ndim}")
    dd = 0 if dense_dim is None else int(dense_dim)
    if not 0 <= dd <= ndim - 2:
        raise RuntimeError(f"{name}: dense_dim argument must be in [0,{ndim - 2}] range, but "
                           f"{dd} is given")
    nb = ndim - 2 - dd
    batch, (m, n), dense = shape[:nb], shape[nb:nb + 2], shape[nb + 2:]
    b = math.prod(batch)
    if nb and not b:
        raise RuntimeError(f"to_sparse_{_KIND[layout]}: Expected product of batch dimensions "
                           "to be non-zero.")
    _check_divisible(m, n, bs, "dense_to_sparse" if fn == "to_sparse" else name)
    (r, c), xp = bs, xp_of(x)
    grid = (b, m // r, r, n // c, c)
    # (b, block rows, block columns): the blocks with a nonzero number
    if layout in BLOCK:
        mask = (x._data.reshape(grid + (math.prod(dense),)) != 0).any(axis=(2, 4, 5))
    elif dense:
        mask = (x._data.reshape((b, m, n, math.prod(dense))) != 0).any(axis=3)
    else:
        mask = x._data.reshape(b, m, n) != 0
    if layout in _ROW:
        bnum, br, bc = xp.nonzero(mask)
    else:
        bnum, bc, br = xp.nonzero(mask.transpose(0, 2, 1))
    if nb:
        _same_nnz(xp.bincount(bnum, minlength=b), xp)
    dev = x._device
    where = tuple(_index_tensor(a.astype(np.int64, copy=False), dev) for a in (bnum, br, bc))
    if layout in BLOCK:
        tail = tuple(range(5, 5 + len(dense)))
        vals = x.reshape(grid + dense).permute(0, 1, 3, 2, 4, *tail)[where]
    else:
        vals = x.reshape((b, m, n) + dense)[where]
    coords = unflatten(bnum, batch, xp) + [br, bc] if nb else [br, bc]
    idx = xp.stack(coords).astype(np.int64, copy=False)
    return make_sparse(idx, _named(vals, _node(layout)), shape, coalesced=True, layout=layout)


# -- conversions between sparse layouts ----------------------------------------------------------

def to_coo(s):
    """The COO tensor of a compressed ``s``: its batch dimensions sparse, its dense ones dense;
    of a block tensor every element of every block, zeros included, block by block.
    Coalesced as PyTorch flags it (CSR; or one element per batch; or no elements; or
    BSR without batches with one-row blocks). Differentiable in the values."""
    nb = batch_ndim(s)
    shape = s._data.shape
    coalesced = (s._layout is sparse_csr and s._coalesced) or not math.prod(shape) or \
        nnz(s) == 1
    if s._layout not in BLOCK:
        return make_sparse(s._idx, s._vals, shape, coalesced=coalesced)
    xp = xp_of(s._device)
    r, c = blocksize(s)
    k = s._idx.shape[1]
    full = (k, r, c)
    rows = s._idx[nb][:, None, None] * r + xp.arange(r, dtype=np.int64)[None, :, None]
    cols = s._idx[nb + 1][:, None, None] * c + xp.arange(c, dtype=np.int64)[None, None, :]
    coords = [s._idx[d][:, None, None] for d in range(nb)] + [rows, cols]
    idx = xp.stack([xp.broadcast_to(a, full).reshape(-1) for a in coords])
    vals = _named(s._vals.reshape((k * r * c,) + tuple(s._vals._data.shape[3:])),
                  "ToSparseBackward1")
    coalesced = coalesced or (s._layout is sparse_bsr and r == 1 and not nb)
    return make_sparse(idx, vals, shape, coalesced=coalesced)


def from_coo(coo, layout, bs: tuple = (1, 1), nb: int = 0):
    """The COO tensor ``coo`` (duplicates summed) in ``layout`` with blocksize ``bs``, its
    first ``nb`` sparse dimensions as batches (every batch must hold as many elements or
    blocks); its dense dimensions stay dense. Differentiable in the values."""
    from .._factory import zeros

    c = coo.coalesce()
    xp = xp_of(c._device)
    shape = tuple(c._data.shape)
    batch, (m, n) = shape[:nb], shape[nb:nb + 2]
    dense = shape[nb + 2:]
    b = math.prod(batch)
    idx = c._idx
    lb = flat_batch(idx, batch, xp)
    r, cc = bs
    nbr, nbc = m // r, n // cc
    br, bc = idx[nb] // r, idx[nb + 1] // cc
    key = (lb * nbr + br) * nbc + bc if layout in _ROW else (lb * nbc + bc) * nbr + br
    dev = c._device
    if layout in BLOCK:
        uniq, inverse = xp.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64, copy=False)
        if layout in _ROW:
            ubc, rest = uniq % nbc, uniq // nbc
            ubr, ulb = rest % nbr, rest // nbr
        else:
            ubr, rest = uniq % nbr, uniq // nbr
            ubc, ulb = rest % nbc, rest // nbc
        k = int(uniq.shape[0])
        pos = inverse * (r * cc) + (idx[nb] % r) * cc + idx[nb + 1] % cc
        flat = zeros((k * r * cc,) + dense, dtype=c._vals.dtype, device=dev)
        vals = flat.index_add(0, _index_tensor(pos, dev), c._vals).reshape((k, r, cc) + dense)
        coords = [ubr, ubc]
    else:
        ulb = lb
        if layout in _ROW:  # the coalesced order already
            vals, coords = c._vals, [idx[nb], idx[nb + 1]]
        else:
            order = xp.argsort(key, kind="stable")
            ulb = lb[order]
            vals = c._vals.index_select(0, _index_tensor(order, dev))
            coords = [idx[nb][order], idx[nb + 1][order]]
    if nb:
        _same_nnz(xp.bincount(ulb, minlength=b), xp)
        coords = unflatten(ulb, batch, xp) + coords
    new_idx = xp.stack(coords).astype(np.int64, copy=False)
    return make_sparse(new_idx, _named(vals, _node(layout)), shape, coalesced=True,
                       layout=layout)


def flip(s, layout):
    """``s`` (CSR or CSC; BSR or BSC) in the other layout of its pair, the same size and
    blocks: its elements reordered, batch by batch. Differentiable in the values."""
    xp = xp_of(s._device)
    nb = batch_ndim(s)
    batch = tuple(s._data.shape[:nb])
    r, c = blocksize(s)
    nbr, nbc = s._data.shape[nb] // r, s._data.shape[nb + 1] // c
    lb = flat_batch(s._idx, batch, xp)
    br, bc = s._idx[nb], s._idx[nb + 1]
    key = (lb * nbr + br) * nbc + bc if layout in _ROW else (lb * nbc + bc) * nbr + br
    order = xp.argsort(key, kind="stable")
    vals = s._vals.index_select(0, _index_tensor(order, s._device))
    return make_sparse(s._idx[:, order], _named(vals, _node(layout)), s._data.shape,
                       coalesced=True, layout=layout)


def _dense_dim_error(prefix: str, src, dst) -> RuntimeError:
    return RuntimeError(f"{prefix}: conversion from {_LAYOUT_WORDS[src]} to "
                        f"{_LAYOUT_WORDS[dst]} with dense_dim argument given is not supported")


def convert(s, layout, size=None, dense_dim=None, method: bool = True):
    """``s.to_sparse_csr()`` (``to_sparse_csc``, ``to_sparse_bsr(size)``, ``to_sparse_bsc``;
    ``method=False``: ``to_sparse(layout=..., blocksize=size)``) of a sparse ``s`` of any
    layout, with PyTorch's rules and errors (see the module doc)."""
    src = s._layout
    word = _KIND[layout]
    block = layout in BLOCK
    coo = src is sparse_coo
    if method:
        prefix = f"to_sparse_{word}" if src is layout else \
            f"coo_to_sparse_{word}" if coo else f"sparse_compressed_to_sparse_{word}"
    else:
        prefix = "to_sparse" if src is layout else \
            "sparse_coo_to_sparse" if coo else "sparse_compressed_to_sparse"
    if dense_dim is not None:
        raise _dense_dim_error(prefix, src, layout)
    name = prefix  # PyTorch's errors name the function called
    fn = f"to_sparse_{word}" if method else "to_sparse"
    if coo:
        if s.sparse_dim() != 2:
            raise RuntimeError(f"{name}: conversion from Sparse to {_LAYOUT_WORDS[layout]} for "
                               "input tensors with sparse_dim()!=2 is not supported")
        bs = check_blocksize(size, name, fn) if block else (1, 1)
        _check_divisible(*s._data.shape[:2], bs, name)
        return from_coo(s, layout, bs)
    if src in BLOCK and not block:
        raise RuntimeError(f"sparse_compressed_to_sparse_{word}: expected SparseCsr or "
                           f"SparseCsc layout but got {_LAYOUT_WORDS[src]}")
    if src in BLOCK:  # to BSR or BSC: the same blocksize
        bs = check_blocksize(size, name, fn)
        if bs != blocksize(s):
            raise RuntimeError(f"{name}: conversion from {_LAYOUT_WORDS[src]} to "
                               f"{_LAYOUT_WORDS[layout]} with blocksize changed from "
                               f"{list(blocksize(s))} to {list(bs)} is not supported")
        return s if src is layout else flip(s, layout)
    if not block:  # CSR or CSC to CSR or CSC
        return s if src is layout else flip(s, layout)
    if batch_ndim(s):
        raise RuntimeError(f"{name}: conversion from {_LAYOUT_WORDS[src]} to "
                           f"{_LAYOUT_WORDS[layout]} for batched inputs is not supported")
    bs = check_blocksize(size, name, fn)
    _check_divisible(*s._data.shape[:2], bs, name)
    return from_coo(to_coo(s), layout, bs)


def as_layout(coo, like):
    """The COO tensor ``coo`` (of ``like``'s size) in the layout, blocksize and batch
    dimensions of the compressed ``like`` (for arithmetic of compressed tensors)."""
    return from_coo(coo, like._layout, blocksize(like), batch_ndim(like))


# -- shape ---------------------------------------------------------------------------------------

def transpose(s, d0: int, d1: int):
    """``s.transpose(d0, d1)`` (dims already wrapped) of a compressed tensor, as PyTorch's: two
    batch dimensions swap (the same layout), the two sparse ones make the flipped layout (the
    same arrays read the other way, each block transposed); a hybrid tensor, or dimensions of
    different kinds, are PyTorch's errors."""
    if dense_ndim(s):
        raise RuntimeError("transpose(): hybrid sparse compressed tensors with dense dimensions "
                           "are not supported")
    if d0 == d1:
        return s
    nb = batch_ndim(s)
    kinds = ["Batch" if d < nb else "Sparse" for d in (d0, d1)]
    if kinds[0] != kinds[1]:
        raise RuntimeError("transpose(): can only transpose dimensions of the same type (Batch, "
                           f"Sparse, Dense), got {d0}({kinds[0]}) and {d1}({kinds[1]})")
    shape = list(s._data.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if kinds[0] == "Sparse":
        perm = list(range(nb)) + [nb + 1, nb]
        vals = s._vals.transpose(1, 2) if s._layout in BLOCK else s._vals
        return make_sparse(s._idx[perm], vals, tuple(shape), coalesced=s._coalesced,
                           layout=_FLIPPED[s._layout])
    xp = xp_of(s._device)
    perm = list(range(s._idx.shape[0]))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    idx = s._idx[perm]
    order = xp.argsort(flat_batch(idx, tuple(shape[:nb]), xp), kind="stable")
    vals = s._vals.index_select(0, _index_tensor(order, s._device))
    return make_sparse(idx[:, order], _named(vals, "TransposeBackward0"), tuple(shape),
                       coalesced=s._coalesced, layout=s._layout)


# -- sampling ------------------------------------------------------------------------------------

def gather(dense: Tensor, like) -> Tensor:
    """The elements of ``dense`` (``like``'s size) at the stored elements of the sparse
    ``like``, in its order: ``(nnz, *dense)``, or ``(nblocks, R, C, *dense)`` at the blocks of
    a block tensor. Differentiable in ``dense``."""
    dev = like._device
    if like._layout not in BLOCK:
        return dense[tuple(_index_tensor(i, dev) for i in like._idx)]
    nb = batch_ndim(like)
    shape = tuple(like._data.shape)
    batch, (m, n), rest = shape[:nb], shape[nb:nb + 2], shape[nb + 2:]
    r, c = blocksize(like)
    b = math.prod(batch)
    tail = tuple(range(5, 5 + len(rest)))
    blocks = dense.reshape((b, m // r, r, n // c, c) + rest).permute(0, 1, 3, 2, 4, *tail)
    lb = flat_batch(like._idx, batch, xp_of(dev))
    where = (lb, like._idx[nb], like._idx[nb + 1])
    return blocks[tuple(_index_tensor(a, dev) for a in where)]
