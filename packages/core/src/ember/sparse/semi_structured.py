"""2:4 semi-structured sparsity (``torch.sparse.semi_structured``), on every Ember device.

PyTorch ships :class:`SparseSemiStructuredTensor` for CUDA only (its CUTLASS and cuSPARSELt
kernels). Ember's is a real compressed format computed with ordinary array code, so it runs
on the CPU (and on any backend):

- a 2-D tensor whose rows hold at most ``N`` nonzero elements in every group of ``2N``
  consecutive elements (2:4; float32 under the CUTLASS class is 1:2, as PyTorch's CUTLASS
  kernel treats float32) is stored as its **kept values** ``(m, k / 2)``, exactly half of the
  columns (the nonzeros of each group, padded with zeros of the group where it has fewer),
- and its **metadata**: for each group, the positions of its kept elements, 2 bits each,
  packed into a ``uint8`` array (a quarter byte per kept value for 2:4).

``A @ B``, ``mm``, ``matmul``, ``addmm`` and ``F.linear`` with a dense operand are computed
from the compressed parts: the metadata gives each kept value's column, the dense operand's
rows are gathered at those columns and contracted with the values (one batched product per
chunk of rows); a transposed operand scatters instead. So the format saves memory (half the
values plus the metadata: 56% of a dense float32 matrix, 62.5% of a float16 one) but is not
faster than a dense product on the CPU. Products are differentiable in the dense operand and
in the values (whose graph reaches the dense tensor they were compressed from).

The class overrides ``__torch_function__`` (how ``ember.mm(x, A)`` and ``F.linear(x, A)``
reach it), which turns on Ember's dispatch for the process; ``ember.sparse`` therefore imports
this module only when one of its names is first used.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._size import Size
from .._sparse_tensor import _SparseData
from .._tensor import Tensor, _make

__all__ = ["SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
           "SparseSemiStructuredTensorCUSPARSELT", "to_sparse_semi_structured"]

_SEMI_STRUCTURED_SPARSE_CONFIG = namedtuple(
    "_SEMI_STRUCTURED_SPARSE_CONFIG",
    "sparse_min_rows sparse_min_cols dense_min_rows dense_min_cols")

#: elements of the largest gathered intermediate of a product (rows are processed in chunks)
_CHUNK_ELEMENTS = 1 << 22


def _group_size(cls, dtype) -> int:
    """Elements per group: 4 (2:4), or 2 (1:2) for float32 in the CUTLASS layout."""
    return 2 if cls.BACKEND == "cutlass" and dtype is _dtype.float32 else 4


# -- the compressed format ------------------------------------------------------------------------

def _compress(dense: Tensor, group: int):
    """``(values, metadata)`` of the 2-D ``dense``, or an error naming the first group that
    holds more than ``group // 2`` nonzero elements."""
    xp = xp_of(dense)
    m, k = dense._data.shape
    keep = group // 2
    nz = dense._data.reshape(m, k // group, group) != 0
    count = nz.sum(axis=-1)
    bad = count > keep
    if bool(bad.any()):
        flat = int(_make(xp.argmax(bad.reshape(-1)), dense._device).item())
        row, grp = divmod(flat, k // group)
        n = int(_make(count.reshape(-1)[flat], dense._device).item())
        raise RuntimeError(
            f"to_sparse_semi_structured: the tensor is not {keep}:{group} sparse: row {row}, "
            f"columns {grp * group}..{grp * group + group - 1} hold {n} nonzero elements (at "
            f"most {keep} of every {group} consecutive elements may be nonzero)")
    pos = _kept_positions(nz, group, xp)
    cols = _columns(pos, group, xp)
    index = (xp.arange(m, dtype=np.int64)[:, None] * k + cols).reshape(-1)
    values = dense.reshape(-1).index_select(0, _make(index, dense._device)).reshape(m, k // 2)
    return values, _pack(pos, xp)


def _kept_positions(nz, group: int, xp):
    """The positions ``(m, groups, group // 2)`` kept in each group, ascending: its nonzero
    ones, and where it has fewer, the zero ones PyTorch's CUTLASS packing picks (its encoding
    table in ``sparse_semi_structured_from_dense_cutlass``), so that the kept values come out
    in PyTorch's order."""
    if group == 2:  # 1:2: the first element of the pair unless only the second is nonzero
        return (~nz[..., 0]).astype(np.uint8)[..., None]
    m0, m1, m3 = nz[..., 0], nz[..., 1], nz[..., 3]
    expr0, expr1, expr2 = m0 & m1, ~m0 & m1, ~m0 & ~m1
    idx0 = expr1.astype(np.uint8) | (expr2.astype(np.uint8) << 1)
    idx1 = (expr0 | expr2 | m3).astype(np.uint8) | ((expr1 | ~m1).astype(np.uint8) << 1)
    return xp.stack((idx0, idx1), axis=-1)


def _pack(pos, xp):
    """The kept positions ``(m, groups, keep)`` (each < 4) as 2-bit fields in uint8 bytes,
    ``8 // (2 * keep)`` groups per byte: ``(m, groups * keep // 4)``."""
    m = pos.shape[0]
    fields = pos.reshape(m, -1, 4).astype(np.uint8)  # four 2-bit fields per byte
    return (fields[..., 0] | (fields[..., 1] << 2) | (fields[..., 2] << 4)
            | (fields[..., 3] << 6)).astype(np.uint8)


def _unpack(meta, group: int, xp):
    """The kept positions ``(m, groups, keep)`` from the packed metadata."""
    m = meta.shape[0]
    shifts = xp.asarray(np.array([0, 2, 4, 6], dtype=np.uint8))
    fields = (meta[..., None] >> shifts) & np.uint8(3)
    return fields.reshape(m, -1, group // 2)


def _columns(pos, group: int, xp):
    """The column of each kept value ``(m, k / 2)``, from the positions in their groups."""
    m, groups, keep = pos.shape
    base = xp.arange(groups, dtype=np.int64)[None, :, None] * group
    return (base + pos.astype(np.int64)).reshape(m, groups * keep)


# -- products from the compressed parts -----------------------------------------------------------

def _chunks(m: int, per_row: int):
    step = max(1, _CHUNK_ELEMENTS // max(1, per_row))
    return [(s, min(m, s + step)) for s in range(0, m, step)]


def _gather_mm(values: Tensor, cols, dense: Tensor) -> Tensor:
    """``S @ dense`` for the stored ``S`` ``(m, k)``: per row, the rows of ``dense`` at the
    kept columns contracted with the kept values."""
    from ..ops.shape import cat

    m, half = values._data.shape
    n = dense._data.shape[1]
    parts = []
    for start, stop in _chunks(m, half * n):
        c = _make(cols[start:stop].reshape(-1), dense._device)
        gathered = dense.index_select(0, c).reshape(stop - start, half, n)
        parts.append(values[start:stop].unsqueeze(1).matmul(gathered).squeeze(1))
    return parts[0] if len(parts) == 1 else cat(parts)


def _scatter_mm(values: Tensor, cols, k: int, dense: Tensor) -> Tensor:
    """``S.T @ dense`` for the stored ``S`` ``(m, k)`` and ``dense`` ``(m, n)``: each kept
    value's row of ``dense``, scaled, added into the row of its column."""
    from .._factory import zeros

    m, half = values._data.shape
    n = dense._data.shape[1]
    out = zeros((k, n), dtype=dense.dtype, device=dense._device)
    for start, stop in _chunks(m, half * n):
        c = _make(cols[start:stop].reshape(-1), dense._device)
        contrib = values[start:stop].unsqueeze(2) * dense[start:stop].unsqueeze(1)
        out = out.index_add(0, c, contrib.reshape(-1, n))
    return out


# -- the tensor -----------------------------------------------------------------------------------

class SparseSemiStructuredTensor(Tensor):
    """A 2-D tensor in the 2:4 semi-structured sparse format (see the module doc), as
    ``torch.sparse.SparseSemiStructuredTensor``: made by :func:`to_sparse_semi_structured`
    or ``SparseSemiStructuredTensorCUTLASS.from_dense`` /
    ``SparseSemiStructuredTensorCUSPARSELT.from_dense``. It supports ``to_dense()``, ``t()``,
    ``values()``, ``indices()`` (the packed metadata), ``detach()``, ``clone()``, ``to()``,
    and ``@``/``mm``/``matmul``/``addmm``/``F.linear`` with a dense operand; other operations
    raise, as PyTorch's."""

    _DEFAULT_ALG_ID: int = 0
    _DTYPE_SHAPE_CONSTRAINTS: dict = {}
    _FORCE_CUTLASS: bool = False
    _FUSE_TRANSPOSE: bool = False
    _PROTOTYPE_WARNING_SHOWN: bool = False
    BACKEND: str = ""

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"{cls.__name__} is made by to_sparse_semi_structured() or "
                        f"{cls.__name__}.from_dense()")

    @classmethod
    def _build(cls, shape, values: Tensor, meta, group: int, transposed: bool):
        if not cls._PROTOTYPE_WARNING_SHOWN:
            warnings.warn("The PyTorch API of SparseSemiStructuredTensor is in prototype stage "
                          "and will change in the near future. Please open a Github issue for "
                          "features requests and see our documentation on the torch.sparse "
                          "module for further information about the project.", UserWarning,
                          stacklevel=3)
            SparseSemiStructuredTensor._PROTOTYPE_WARNING_SHOWN = True
        t = object.__new__(cls)
        t._device = values._device
        t._data = _SparseData(tuple(shape), values._data.dtype, values._device)
        t._vals = values
        t._meta = meta
        t._group = group
        t._transposed = transposed
        return t

    # -- PyTorch's fields: the compressed parts of this orientation or of its transpose
    @property
    def packed(self):
        return None if self._transposed else self._vals

    @property
    def meta(self):
        return None if self._transposed else self._meta_tensor()

    @property
    def packed_t(self):
        return self._vals if self._transposed else None

    @property
    def meta_t(self):
        return self._meta_tensor() if self._transposed else None

    def _meta_tensor(self) -> Tensor:
        return _make(self._meta, self._device)

    # -- autograd identity: the values'
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def layout(self):
        from .._layout import strided

        return strided  # PyTorch's wrapper subclass reports its packed tensor's layout

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(shape={Size(self._data.shape)!r})"

    __str__ = __repr__

    def _stored_shape(self) -> tuple:
        shape = self._data.shape
        return shape[::-1] if self._transposed else shape

    def _cols(self):
        xp = xp_of(self._device)
        return _columns(_unpack(self._meta, self._group, xp), self._group, xp)

    # -- operations
    def _to_dense(self) -> Tensor:
        from .._factory import zeros

        m, k = self._stored_shape()
        xp = xp_of(self._device)
        index = (xp.arange(m, dtype=np.int64)[:, None] * k + self._cols()).reshape(-1)
        flat = zeros(m * k, dtype=self._vals.dtype, device=self._device)
        dense = flat.index_add(0, _make(index, self._device), self._vals.reshape(-1))
        dense = dense.reshape(m, k)
        return dense.t() if self._transposed else dense

    def _t(self):
        return type(self)._build(self._data.shape[::-1], self._vals, self._meta, self._group,
                                 not self._transposed)

    def _with_values(self, values: Tensor):
        return type(self)._build(self._data.shape, values, self._meta.copy(), self._group,
                                 self._transposed)

    def _check_operand(self, other, pos: str) -> None:
        name = self.__class__.__name__
        if isinstance(other, SparseSemiStructuredTensor):
            raise ValueError("`SparseSemiStructuredTensor @ SparseSemiStructuredTensor` is not "
                             "supported by the hardware")
        if not isinstance(other, Tensor):
            raise TypeError(f"`{name}` matmul: expected a dense Tensor operand, got "
                            f"{type(other).__name__}")
        if other._data.ndim != 2:
            raise NotImplementedError(f"`{name}` matmul: Broadcasting is not implemented")
        if other.dtype is not self.dtype:
            a, b = (self, other) if pos == "B" else (other, self)
            raise NotImplementedError(
                f"`{name}` matmul: trying to do `A={tuple(a.shape)} @ B={tuple(b.shape)}`, "
                f"with A.dtype={a.dtype} and B.dtype={b.dtype}. This operation is only "
                "supported when A and B have the same data type.")
        from .._device import check_same_device

        check_same_device(self._vals, other)

    def _mm(self, dense: Tensor) -> Tensor:
        """``self @ dense``."""
        self._check_operand(dense, "B")
        m, k = self._data.shape
        if dense._data.shape[0] != k:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and "
                               f"{dense._data.shape[0]}x{dense._data.shape[1]})")
        if self._transposed:  # (S.T) @ dense
            return _scatter_mm(self._vals, self._cols(), m, dense)
        return _gather_mm(self._vals, self._cols(), dense)

    def _rmm(self, dense: Tensor) -> Tensor:
        """``dense @ self`` = ``(self.T @ dense.T).T``."""
        self._check_operand(dense, "A")
        m, k = self._data.shape
        if dense._data.shape[1] != m:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ("
                               f"{dense._data.shape[0]}x{dense._data.shape[1]} and {m}x{k})")
        return self._t()._mm(dense.t()).t()

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense matrix (zeros where no value is kept); differentiable in the values."""
        out = self._to_dense()
        return out if dtype is None else out.to(dtype)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        handler = _DISPATCH.get(name)
        if handler is None:
            raise NotImplementedError(f"{cls.__name__} only supports a specific set of "
                                      f"operations, can't perform requested op ({name})")
        return handler(*args, **kwargs)

    # -- construction
    @classmethod
    def _validate_device_dim_dtype_shape(cls, original_tensor: Tensor) -> None:
        """PyTorch's checks of a tensor to compress (on any device: Ember's format is not
        tied to CUDA)."""
        if not isinstance(original_tensor, Tensor) or isinstance(
                original_tensor, SparseSemiStructuredTensor) or original_tensor.layout is not \
                _strided():
            raise TypeError(f"to_sparse_semi_structured(): expected a dense (strided) Tensor, "
                            f"got {type(original_tensor).__name__}")
        if original_tensor.dim() != 2:
            raise RuntimeError(f"Error original_tensor.dim = {original_tensor.dim()} is not "
                               "supported! Only 2d tensors are currently supported.")
        if original_tensor.dtype not in cls._DTYPE_SHAPE_CONSTRAINTS:
            raise RuntimeError(f"Error original_tensor.dtype {original_tensor.dtype} is not a "
                               f"supported dtype for {cls}!")
        m, n = original_tensor.shape
        limits = cls._DTYPE_SHAPE_CONSTRAINTS[original_tensor.dtype]
        min_rows, min_cols = limits.sparse_min_rows, limits.sparse_min_cols
        if m < min_rows or m % min_rows or n < min_cols or n % min_cols:
            raise RuntimeError(f"Error original_tensor.shape {original_tensor.shape} is not "
                               "supported! Both dimensions must be larger or equal than and a "
                               f"multiple of ({min_rows}, {min_cols})")

    @classmethod
    def from_dense(cls, original_tensor: Tensor, alg_id: int = 0):
        """Compress the 2-D ``original_tensor`` (it must already be 2:4 sparse: at most 2
        nonzero elements in every 4 consecutive ones of a row; 1:2 for float32 under CUTLASS).
        The values keep their graph to ``original_tensor``."""
        if cls is SparseSemiStructuredTensor:
            raise NotImplementedError
        cls._validate_device_dim_dtype_shape(original_tensor)
        group = _group_size(cls, original_tensor.dtype)
        values, meta = _compress(original_tensor, group)
        return cls._build(original_tensor.shape, values, meta, group, False)


def _strided():
    from .._layout import strided

    return strided


class SparseSemiStructuredTensorCUTLASS(SparseSemiStructuredTensor):
    """Semi-structured sparsity with the dtypes and shape constraints of PyTorch's CUTLASS
    backend (int8, float16, bfloat16 2:4; float32 1:2). Ember computes it with array code."""

    BACKEND = "cutlass"
    _DTYPE_SHAPE_CONSTRAINTS = {
        _dtype.int8: _SEMI_STRUCTURED_SPARSE_CONFIG(16, 128, 16, 16),
        _dtype.float16: _SEMI_STRUCTURED_SPARSE_CONFIG(32, 64, 8, 8),
        _dtype.bfloat16: _SEMI_STRUCTURED_SPARSE_CONFIG(32, 64, 8, 8),
        _dtype.float32: _SEMI_STRUCTURED_SPARSE_CONFIG(32, 32, 4, 4),
    }


class SparseSemiStructuredTensorCUSPARSELT(SparseSemiStructuredTensor):
    """Semi-structured sparsity with the dtypes and shape constraints of PyTorch's cuSPARSELt
    backend (int8, float16, bfloat16; PyTorch's float8 has no NumPy dtype). PyTorch packs the
    values and the metadata into one tensor there; Ember keeps them apart, as for CUTLASS."""

    BACKEND = "cusparselt"
    _DTYPE_SHAPE_CONSTRAINTS = {
        _dtype.int8: _SEMI_STRUCTURED_SPARSE_CONFIG(32, 32, 16, 16),
        _dtype.float16: _SEMI_STRUCTURED_SPARSE_CONFIG(16, 16, 8, 8),
        _dtype.bfloat16: _SEMI_STRUCTURED_SPARSE_CONFIG(16, 16, 8, 8),
    }

    @classmethod
    def from_dense(cls, original_tensor: Tensor, alg_id: int = 0):
        out = super().from_dense(original_tensor, alg_id)
        out.alg_id_cusparselt = alg_id
        out.fuse_transpose_cusparselt = SparseSemiStructuredTensor._FUSE_TRANSPOSE
        return out


def to_sparse_semi_structured(original_tensor: Tensor, transposed: bool = False,
                              alg_id: int = 0) -> SparseSemiStructuredTensor:
    """The 2:4 semi-structured sparse form of the 2-D dense ``original_tensor``
    (``torch.sparse.to_sparse_semi_structured``): a
    :class:`SparseSemiStructuredTensorCUSPARSELT`, or a
    :class:`SparseSemiStructuredTensorCUTLASS` when
    ``SparseSemiStructuredTensor._FORCE_CUTLASS`` is set. The tensor must already be pruned
    (at most 2 nonzero elements in every 4 consecutive ones of a row); a group with more is
    an error. ``transposed`` is deprecated (a ``FutureWarning``), as in PyTorch."""
    if transposed:
        warnings.warn("Setting transpose from `to_sparse_semi_structured` is deprecated and will "
                      "be removed in a future release. `SparseSemiStructuredTensor` only support "
                      "contiguous input tensors.", FutureWarning, stacklevel=2)
    sub = SparseSemiStructuredTensorCUTLASS if SparseSemiStructuredTensor._FORCE_CUTLASS \
        else SparseSemiStructuredTensorCUSPARSELT
    return sub.from_dense(original_tensor, alg_id=alg_id)


# -- the operations __torch_function__ serves --------------------------------------------------

def _is_sst(x) -> bool:
    return isinstance(x, SparseSemiStructuredTensor)


def _matmul(a, b):
    if _is_sst(a):
        return a._mm(b)
    return b._rmm(a)


def _addmm(input, mat1, mat2, *, beta=1, alpha=1):
    prod = _matmul(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    return prod + (input if beta == 1 else input * beta)


def _linear(input, weight, bias=None):
    if _is_sst(input) or not _is_sst(weight):
        raise NotImplementedError("SparseSemiStructuredTensor: linear supports a sparse weight "
                                  "and a dense input only")
    shape = tuple(input.shape)
    x2 = input.reshape(-1, shape[-1])
    out = weight._mm(x2.t()).t()  # (W @ x.T).T: the gather runs over the weight's rows
    if bias is not None:
        out = out + bias
    return out.reshape(shape[:-1] + (weight.shape[0],))


def _values(self):
    return self._vals.detach()


def _indices(self):
    return self._meta_tensor()


def _detach(self):
    return self._with_values(self._vals.detach())


def _clone(self, *, memory_format=None):
    return self._with_values(self._vals.clone())


def _to(self, *args, **kwargs):
    values = self._vals.to(*args, **kwargs)
    if values.dtype is not self._vals.dtype:
        raise NotImplementedError(f"{self.__class__.__name__}: to() may change the device, not "
                                  "the dtype (convert the dense tensor and compress it again)")
    if values is self._vals:
        return self
    meta = _make(self._meta, self._device).to(values.device)._data
    return type(self)._build(self._data.shape, values, meta, self._group, self._transposed)


def _view(self, *shape):
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    if tuple(shape) != tuple(self._data.shape):
        raise NotImplementedError(f"`view` is not implemented for SparseSemiStructuredTensor, "
                                  f"except for the dummy case (shape={shape})")
    return self


def _is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


_DISPATCH = {
    "mm": _matmul, "matmul": _matmul, "__matmul__": _matmul,
    "__rmatmul__": lambda a, b: _matmul(b, a), "addmm": _addmm, "linear": _linear,
    "t": lambda self: self._t(), "to_dense": lambda self, *a, **k: self.to_dense(*a, **k),
    "values": _values, "indices": _indices, "detach": _detach, "clone": _clone, "to": _to,
    "view": _view, "is_same_size": _is_same_size,
}
