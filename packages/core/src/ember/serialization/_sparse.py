"""Sparse tensors and layouts in checkpoints, as PyTorch writes them.

PyTorch pickles a sparse tensor as ``torch._utils._rebuild_sparse_tensor(layout, data)``
with ``layout`` itself pickled as ``torch.serialization._get_layout("torch.sparse_coo")``:

- COO: ``data = (indices, values, size, is_coalesced)`` (older files: without
  ``is_coalesced``), ``indices`` the ``_indices()`` ``(sparse_dim, nnz)``, uncoalesced or not;
- compressed (CSR/CSC/BSR/BSC): ``data = (compressed_indices, plain_indices, values,
  size)`` (block layouts: ``values`` is ``(nblocks, R, C)``).

The parts are ordinary dense tensors (``_rebuild_tensor_v2``); ``requires_grad`` is not kept
(PyTorch writes none). Loading goes through the public factories with strict argument checks:
only a known layout object, only plain dense tensors of an integer dtype as indices, a size of
non-negative ints, a bool or None for ``is_coalesced``; and the tensor's invariants are always
checked (indices in bounds, compressed indices well formed, a claim of coalescedness true),
also where ``torch.load`` skips them by default.
"""

from __future__ import annotations

import pickle

import numpy as np

from .. import _layout
from .._device import xp_of
from .._size import Size
from .._sparse_tensor import SparseTensor, _linear_index, sparse_csc
from .._tensor import Tensor, _make

#: the layout names a checkpoint may give ``torch.serialization._get_layout``
_LAYOUTS = {"torch.strided": _layout.strided, "torch.sparse_coo": _layout.sparse_coo,
            "torch.sparse_csr": _layout.sparse_csr, "torch.sparse_csc": sparse_csc,
            "torch.sparse_bsr": _layout.sparse_bsr, "torch.sparse_bsc": _layout.sparse_bsc}


def layout_name(layout) -> str:
    """The name PyTorch pickles ``layout`` by (``"torch.sparse_coo"``)."""
    return f"torch.{layout._name}"


def get_layout(name):
    """``torch.serialization._get_layout``: the layout a checkpoint names (a str, one of the
    layouts Ember has)."""
    if type(name) is not str:
        raise pickle.UnpicklingError(f"_get_layout expects a layout name (str), got "
                                     f"{type(name).__name__}")
    found = _LAYOUTS.get(name)
    if found is None:
        raise pickle.UnpicklingError(f"unsupported layout {name!r:.80} (Ember has "
                                     f"{', '.join(sorted(_LAYOUTS))})")
    return found


def reduce_args(s: SparseTensor) -> tuple:
    """``(layout, parts)``: the arguments PyTorch's ``_rebuild_sparse_tensor`` takes for
    ``s`` (the parts are dense tensors outside the graph, ``size`` an ``ember.Size``)."""
    # contiguous parts: PyTorch refuses compressed indices that are not
    size = Size(s._data.shape)
    values = (s._vals if s._layout is _layout.sparse_coo else s.values()).detach().contiguous()
    if s._layout is _layout.sparse_coo:
        indices = _make(s._idx, s._device).contiguous()
        return s._layout, (indices, values, size, bool(s._coalesced))
    return s._layout, (*(p.contiguous() for p in s._compressed_parts()), values, size)


def _part(x, what: str, integer: bool = False) -> Tensor:
    if type(x) is not Tensor:
        raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: {what} must be a dense tensor, "
                                     f"got {type(x).__name__}")
    if integer and x._data.dtype.kind not in "iu":
        raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: {what} must be an integer "
                                     f"tensor, got {x.dtype}")
    return x


def _size(size) -> tuple:
    if not isinstance(size, (Size, tuple, list)) or len(size) > 64 or not all(
            type(n) is int and n >= 0 for n in size):
        raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: invalid size {size!r:.80}")
    return tuple(size)


def rebuild_sparse_tensor(layout, data) -> SparseTensor:
    """``torch._utils._rebuild_sparse_tensor``: a sparse tensor from its pickled parts,
    checked (see the module doc)."""
    from ..ops.sparse_ops import _COMPRESSED_FACTORIES, sparse_coo_tensor

    if type(data) is not tuple:
        raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: data must be a tuple, got "
                                     f"{type(data).__name__}")
    if layout is _layout.sparse_coo:
        if len(data) == 3:
            (indices, values, size), coalesced = data, None
        elif len(data) == 4:
            indices, values, size, coalesced = data
        else:
            raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: COO data must be (indices, "
                                         f"values, size[, is_coalesced]), got {len(data)} "
                                         "items")
        indices = _part(indices, "indices", integer=True)
        values = _part(values, "values")
        size = _size(size)
        if coalesced is not None and type(coalesced) is not bool:
            raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: is_coalesced must be a bool "
                                         f"or None, got {type(coalesced).__name__}")
        out = sparse_coo_tensor(indices, values.detach(), size, is_coalesced=coalesced)
        if coalesced:
            _check_coalesced(out)
    else:
        names = _COMPRESSED.get(id(layout))
        if names is None:
            raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: unsupported layout "
                                         f"{layout!r:.80}")
        if len(data) != 4:
            raise pickle.UnpicklingError(f"_rebuild_sparse_tensor: compressed data must be "
                                         f"(compressed_indices, plain_indices, values, size), "
                                         f"got {len(data)} items")
        cidx, pidx, values, size = data
        cidx = _part(cidx, "compressed_indices", integer=True)
        pidx = _part(pidx, "plain_indices", integer=True)
        values = _part(values, "values")
        size = _size(size)
        factory = _COMPRESSED_FACTORIES[layout]
        out = factory(cidx, pidx, values.detach(), size)
        if cidx._data.ndim == 1:  # a batched CSR factory checks its batches itself
            _check_sorted_plain(cidx, pidx, *names)
    if values.requires_grad:
        out.requires_grad_(True)
    return out


def _check_coalesced(s: SparseTensor) -> None:
    """PyTorch's error when a COO tensor declared coalesced has unsorted or repeated
    coordinates."""
    idx = s._idx
    if idx.shape[1] < 2:
        return
    xp = xp_of(s._device)
    lin = _linear_index(idx, s._data.shape[:idx.shape[0]], xp)
    if not bool(xp.all(lin[1:] > lin[:-1])):
        raise RuntimeError("cannot set is_coalesced to true if indices correspond to "
                           "uncoalesced COO tensor")


def _check_sorted_plain(cidx: Tensor, pidx: Tensor, cname: str, pname: str,
                        slices: str) -> None:
    """PyTorch's invariant of compressed tensors: the plain indices of each compressed slice
    sorted and distinct."""
    c = cidx._host().astype(np.int64)
    p = pidx._host().astype(np.int64)
    if p.shape[0] < 2:
        return
    same = np.repeat(np.arange(c.shape[0] - 1), np.diff(c))
    if np.any((same[1:] == same[:-1]) & (p[1:] <= p[:-1])):
        raise RuntimeError(f"`{pname}_indices[..., {cname}_indices[..., i - 1]:{cname}_indices"
                           f"[..., i]] for all i = 1, ..., n{slices} are sorted and distinct "
                           "along the last dimension values` is not satisfied.")


#: id(layout) -> PyTorch's words for a compressed layout's parts in its errors
_COMPRESSED: dict = {id(_layout.sparse_csr): ("crow", "col", "rows"),
                     id(sparse_csc): ("ccol", "row", "cols"),
                     id(_layout.sparse_bsr): ("crow", "col", "rows"),
                     id(_layout.sparse_bsc): ("ccol", "row", "cols")}
