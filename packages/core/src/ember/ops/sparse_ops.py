"""The public sparse API of ``ember``: the factories ``sparse_coo_tensor``,
``sparse_csr_tensor`` and ``sparse_csc_tensor``, ``spmm``/``smm``, the layouts, and the
sparse conversions of dense tensors (``Tensor.to_sparse``, ``to_sparse_csr``,
``to_sparse_csc``, ``to_dense``, ...).

The sparse tensor itself, its kernels and its autograd are in ``ember._sparse_tensor``. These
are not registered ops (``OpInfo``): an op there is a dense kernel that the op database
exercises on dense samples; they are exported into ``ember`` through
``registry.register_export`` and attached to ``Tensor`` through ``register_method``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._device import resolve_device, xp_of
from .._layout import sparse_coo, sparse_csr, strided
from .._sparse_tensor import (
    SparseTensor,
    _named,
    csc_from_cols,
    csr_from_rows,
    dense_sparse_mm,
    dense_to_sparse,
    is_sparse,
    make_sparse,
    sparse_csc,
    sparse_mm,
)
from .._tensor import Tensor, _make
from .registry import register_export, register_method

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "spmm", "smm",
           "sparse_coo", "sparse_csr", "sparse_csc"]


# -- factories ----------------------------------------------------------------------------------

def _as_index_tensor(x, device, name: str) -> Tensor:
    """``x`` (a tensor or array-like of integers) as an int64 tensor on ``device``."""
    from .._factory import as_tensor

    t = x if isinstance(x, Tensor) else as_tensor(x, device=device)
    if t._data.dtype.kind not in "iu":
        raise RuntimeError(f"{name} must be an int64 tensor")
    if device is not None and t._device is not device:
        t = t.to(device)
    return t.detach().long()


def _as_values(values, dtype, device) -> Tensor:
    from .._factory import as_tensor

    if not isinstance(values, Tensor):
        return as_tensor(values, dtype=dtype, device=device)
    if device is not None and values._device is not device:
        values = values.to(device)
    return values if dtype is None else values.to(_dtype.to_dtype(dtype))


def _autograd_values(values: Tensor, requires_grad: bool, node_name: str) -> Tensor:
    """The values a new sparse tensor holds: a fresh leaf with ``requires_grad``, else
    ``values`` under a node named ``node_name`` (PyTorch's grad_fn of the factory)."""
    if requires_grad:
        leaf = values.detach()
        leaf.requires_grad_(True)
        return leaf
    return _named(values, node_name)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO tensor with ``values`` at the coordinates ``indices``, as
    ``torch.sparse_coo_tensor``.

    Args:
        indices: integer tensor or array-like ``(sparse_dim, nnz)``: the coordinates.
        values: tensor or array-like ``(nnz, *dense_shape)``: the element (or block) at each.
        size: the tensor's size; inferred as the largest index + 1 when omitted.
        dtype, device: of the values (their own by default).
        requires_grad: make the values a leaf that requires grad (``.grad`` is sparse).
        check_invariants: accepted; Ember always checks indices against ``size``.
        is_coalesced: declare the indices sorted and unique (not checked), so that no
            ``coalesce()`` is needed before ``indices()``/``values()``.

    Duplicate coordinates are allowed (their values sum); the result is uncoalesced then.
    Differentiable in ``values``.
    """
    dev = None if device is None else resolve_device(device)
    vals = _as_values(values, dtype, dev)
    dev = vals._device
    idx = _as_index_tensor(indices, dev, "indices")
    ishape = idx._data.shape
    if len(ishape) != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ishape)}")
    sd, nnz = ishape
    if not vals._data.ndim:
        raise RuntimeError("values must have at least one dimension (nnz)")
    if vals._data.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals._data.shape[0]}")
    dense_shape = tuple(vals._data.shape[1:])
    xp = xp_of(dev)
    arr = idx._data
    if nnz and sd:  # the bounds, on the host
        bounds = _make(xp.stack((xp.min(arr, axis=1), xp.max(arr, axis=1))), dev)._host()
        low_h, high_h = bounds[0].tolist(), bounds[1].tolist()
    if size is None:
        sizes = tuple(int(h) + 1 for h in high_h) if nnz else (0,) * sd
        shape = sizes + dense_shape
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sd + len(dense_shape):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(shape)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense_shape)}")
        if shape[sd:] != dense_shape:
            raise RuntimeError(f"values has incorrect size, expected {list((nnz,) + shape[sd:])},"
                               f" got {list(vals._data.shape)}")
    if nnz and sd:
        for d in range(sd):
            if low_h[d] < 0:
                raise RuntimeError(f"found negative index {low_h[d]} for dim {d}")
            if high_h[d] >= shape[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{shape[d]} but found index {high_h[d]}")
    vals = _autograd_values(vals, requires_grad, "SparseCooTensorWithDimsAndTensorsBackward0")
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz < 2
    return make_sparse(arr, vals, shape, coalesced=coalesced)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A sparse CSR matrix, as ``torch.sparse_csr_tensor``: row ``i`` holds the elements
    ``crow_indices[i]:crow_indices[i + 1]`` of ``col_indices`` and ``values``.

    ``size`` is inferred as ``(len(crow_indices) - 1, max(col_indices) + 1)`` when omitted.
    Ember's CSR tensors are 2-D with scalar values (no batch or dense dimensions); the
    compressed-index invariants are always checked. Differentiable in ``values``.
    """
    vals, rows, cols, shape = _compressed(crow_indices, col_indices, values, size, dtype,
                                          device, "csr")
    vals = _autograd_values(vals, requires_grad, "SparseCsrTensorBackward0")
    return csr_from_rows(rows, cols, vals, shape)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A sparse CSC matrix, as ``torch.sparse_csc_tensor``: column ``j`` holds the elements
    ``ccol_indices[j]:ccol_indices[j + 1]`` of ``row_indices`` and ``values``.

    ``size`` is inferred as ``(max(row_indices) + 1, len(ccol_indices) - 1)`` when omitted.
    Ember's CSC tensors are 2-D with scalar values; the compressed-index invariants are
    always checked. Differentiable in ``values``.
    """
    vals, cols, rows, shape = _compressed(ccol_indices, row_indices, values, size, dtype,
                                          device, "csc")
    vals = _autograd_values(vals, requires_grad, "SparseCompressedTensorBackward0")
    return csc_from_cols(rows, cols, vals, shape)


def _compressed(compressed, plain, values, size, dtype, device, kind: str):
    """The checked parts of a CSR (``kind="csr"``) or CSC tensor: ``(values, the compressed
    dimension's index of each element, the plain indices, shape)``."""
    c, p = ("crow", "col") if kind == "csr" else ("ccol", "row")
    name = f"sparse_{kind}_tensor"
    dev = None if device is None else resolve_device(device)
    vals = _as_values(values, dtype, dev)
    dev = vals._device
    cidx = _as_index_tensor(compressed, dev, f"{c}_indices")
    pidx = _as_index_tensor(plain, dev, f"{p}_indices")
    if cidx._data.ndim != 1 or pidx._data.ndim != 1 or vals._data.ndim != 1:
        raise RuntimeError(f"{name}: Ember's {kind.upper()} tensors are 2-D with 1-D "
                           f"{c}_indices, {p}_indices and values, got {cidx._data.ndim}-D, "
                           f"{pidx._data.ndim}-D and {vals._data.ndim}-D")
    nnz = pidx._data.shape[0]
    if vals._data.shape[0] != nnz:
        raise RuntimeError(f"{p}_indices and values must have the same number of elements, "
                           f"but got {nnz} and {vals._data.shape[0]}")
    ncomp = cidx._data.shape[0] - 1
    if ncomp < 0:
        raise RuntimeError(f"{c}_indices must have at least one element")
    host_c = cidx._host()
    host_p = pidx._host()
    nplain = int(host_p.max()) + 1 if nnz else 0
    if size is None:
        shape = (ncomp, nplain) if kind == "csr" else (nplain, ncomp)
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != 2:
            raise RuntimeError(f"{name}: size of a {kind.upper()} tensor must have 2 elements "
                               f"in Ember, got {len(shape)}")
        cdim = 0 if kind == "csr" else 1
        if shape[cdim] != ncomp:
            raise RuntimeError(f"size[{cdim}] ({shape[cdim]}) does not match the number of "
                               f"{'rows' if kind == 'csr' else 'columns'} of {c}_indices "
                               f"({ncomp})")
    limit = shape[1] if kind == "csr" else shape[0]
    plain_n = "ncols" if kind == "csr" else "nrows"
    if host_c[0] != 0:
        raise RuntimeError(f"`{c}_indices[..., 0] == 0` is not satisfied.")
    if host_c[-1] != nnz:
        raise RuntimeError(f"`{c}_indices[..., -1] == nnz` is not satisfied.")
    step = np.diff(host_c)
    if step.size and (step.min() < 0 or step.max() > limit):
        raise RuntimeError(f"`0 <= {c}_indices[..., 1:] - {c}_indices[..., :-1] <= "
                           f"{plain_n}` is not satisfied.")
    if nnz and (host_p.min() < 0 or host_p.max() >= limit):
        raise RuntimeError(f"`0 <= {p}_indices < {plain_n}` is not satisfied.")
    xp = xp_of(dev)
    owner = xp.searchsorted(cidx._data, xp.arange(nnz, dtype=np.int64), side="right") - 1
    return vals, owner.astype(np.int64, copy=False), pidx._data, shape


# -- products -----------------------------------------------------------------------------------

def spmm(input, mat2) -> Tensor:
    """``input @ mat2`` with a sparse ``input`` (or ``mat2``): a dense matrix
    (``torch.spmm``); two dense matrices multiply as ``ember.mm``."""
    if is_sparse(input):
        return sparse_mm(input, mat2, "mm")
    if is_sparse(mat2):
        return dense_sparse_mm(input, mat2, "mm")
    return input.mm(mat2)


def smm(input, mat) -> SparseTensor:
    """``input @ mat`` (sparse ``input``, dense ``mat``) as a sparse COO tensor
    (``torch.smm``)."""
    if not is_sparse(input):
        raise RuntimeError("smm: expected a sparse input, got a strided tensor")
    return input.smm(mat)


# -- the sparse methods of dense tensors ------------------------------------------------------

def _to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor as a sparse tensor: COO with ``sparse_dim`` sparse dims (all by
    default), or ``layout=ember.sparse_csr``."""
    if blocksize is not None:
        raise RuntimeError("to_sparse: blocked layouts (sparse_bsr/bsc) are not supported by "
                           "Ember")
    if layout is None or layout is sparse_coo:
        if dense_dim is not None and sparse_dim is None:
            sparse_dim = self._data.ndim - dense_dim
        return dense_to_sparse(self, sparse_dim)
    if layout is sparse_csr:
        return _to_sparse_csr(self, dense_dim)
    if layout is sparse_csc:
        return _to_sparse_csc(self, dense_dim)
    if layout is strided:
        raise RuntimeError("to_sparse: the strided layout is not a sparse layout")
    raise RuntimeError(f"to_sparse: layout {layout} is not supported by Ember (sparse_coo, "
                       "sparse_csr and sparse_csc are)")


def _to_sparse_coo(self):
    """This tensor as a sparse COO tensor (``to_sparse()``)."""
    return dense_to_sparse(self)


def _to_sparse_csr(self, dense_dim=None):
    """This 2-D tensor as a sparse CSR tensor."""
    if self._data.ndim != 2 or dense_dim:
        raise RuntimeError(f"to_sparse_csr: Ember's CSR tensors are 2-D without dense "
                           f"dimensions, got a {self._data.ndim}-D tensor")
    return dense_to_sparse(self).to_sparse_csr()


def _to_sparse_csc(self, dense_dim=None):
    """This 2-D tensor as a sparse CSC tensor."""
    if self._data.ndim != 2 or dense_dim:
        raise RuntimeError(f"to_sparse_csc: Ember's CSC tensors are 2-D without dense "
                           f"dimensions, got a {self._data.ndim}-D tensor")
    return dense_to_sparse(self).to_sparse_csc()


def _to_dense(self, dtype=None, *, masked_grad=None):
    """This (dense) tensor itself, or cast to ``dtype``."""
    return self if dtype is None else self.to(dtype)


def _sparse_dim(self) -> int:
    """0: a dense tensor has no sparse dimensions."""
    return 0


def _dense_dim(self) -> int:
    """The number of dimensions: all of a dense tensor's are dense."""
    return self._data.ndim


def _expects_sparse(name: str, kind: str = "sparse coordinate"):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected {kind} tensor layout but got Strided")

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"PyTorch's error: ``{name}`` is a method of sparse tensors."
    return method


register_method("to_sparse", _to_sparse)
register_method("to_sparse_coo", _to_sparse_coo)
register_method("to_sparse_csr", _to_sparse_csr)
register_method("to_sparse_csc", _to_sparse_csc)
register_method("to_dense", _to_dense)
register_method("sparse_dim", _sparse_dim)
register_method("dense_dim", _dense_dim)
register_method("is_sparse_csr", property(lambda self: False,
                                          doc="False: a dense tensor is not a CSR tensor."))
for _name in ("indices", "values", "_indices", "_values", "coalesce", "is_coalesced", "_nnz"):
    register_method(_name, _expects_sparse(_name))
for _name in ("crow_indices", "col_indices"):
    register_method(_name, _expects_sparse(_name, "sparse row compressed"))
for _name in ("ccol_indices", "row_indices"):
    register_method(_name, _expects_sparse(_name, "sparse column compressed"))
register_method("smm", smm)

for _name, _obj in (("sparse_coo_tensor", sparse_coo_tensor),
                    ("sparse_csr_tensor", sparse_csr_tensor),
                    ("sparse_csc_tensor", sparse_csc_tensor), ("spmm", spmm), ("smm", smm),
                    ("sparse_coo", sparse_coo), ("sparse_csr", sparse_csr),
                    ("sparse_csc", sparse_csc)):
    register_export(_name, _obj)
del _name, _obj
