"""The public sparse API of ``ember``: the factories ``sparse_coo_tensor``,
``sparse_csr_tensor``, ``sparse_csc_tensor``, ``sparse_bsr_tensor``, ``sparse_bsc_tensor`` and
``sparse_compressed_tensor``, ``spmm``/``smm``, the layouts, and the sparse conversions of
dense tensors (``Tensor.to_sparse``, ``to_sparse_csr``, ``to_sparse_csc``, ``to_sparse_bsr``,
``to_sparse_bsc``, ``to_dense``, ...).

The sparse tensor itself, its kernels and its autograd are in ``ember._sparse_tensor``. These
are not registered ops (``OpInfo``): an op there is a dense kernel that the op database
exercises on dense samples; they are exported into ``ember`` through
``registry.register_export`` and attached to ``Tensor`` through ``register_method``.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._device import resolve_device, xp_of
from .._front import front as numpy_names  # PyTorch's NumPy keyword names (x=, axis=)
from .._layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csr, strided
from .._sparse_tensor import (
    SparseTensor,
    _linear_index,
    _named,
    dense_sparse_mm,
    dense_to_sparse,
    is_sparse,
    make_sparse,
    sparse_csc,
    sparse_mm,
)
from .._tensor import Tensor, _make
from .registry import register_export, register_method

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "sparse_compressed_tensor", "spmm", "smm", "sparse_coo",
           "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "sspaddmm", "saddmm", "hspmm",
           "hsmm", "dsmm", "resize_as_sparse_", "sparse_mask", "sparse_resize_",
           "sparse_resize_and_clear_"]


# -- factories ----------------------------------------------------------------------------------

def _as_index_tensor(x, device, name: str) -> Tensor:
    """``x`` (a tensor or array-like of integers) as an int64 tensor on ``device``."""
    from .._factory import as_tensor

    t = x if isinstance(x, Tensor) else as_tensor(x, device=device)
    if t._data.dtype.kind not in "iu":
        if t._data.dtype.kind not in "bfc":
            raise RuntimeError(f"{name} must be an int64 tensor")
        # PyTorch 2.13 casts floating (truncating), complex and bool indices to int64
        t = t.detach()
        if t._data.dtype.kind == "c":
            t = t.real
    if device is not None and t._device is not device:
        t = t.to(device)
    return t.detach().long()


def _invalid_combination(*args) -> str:
    """PyTorch's argument-parser error of ``sparse_coo_tensor``."""
    got = ", ".join(_type_word(a) for a in args)
    common = ("torch.dtype dtype = None, torch.device device = None, bool pin_memory = False, "
              "bool requires_grad = False, bool check_invariants = None, bool is_coalesced = "
              "None")
    return (f"sparse_coo_tensor() received an invalid combination of arguments - got ({got}), "
            f"but expected one of:\n * (object indices, object values, *, {common})\n * (object "
            f"indices, object values, tuple of ints size, *, {common})\n * (tuple of ints size, "
            "*, torch.dtype dtype = None, torch.device device = None, bool requires_grad = "
            "False, bool check_invariants = None)\n")


def _checks_invariants(check_invariants) -> bool:
    """``check_invariants``, or the switch of ``ember.sparse.check_sparse_tensor_invariants``
    when None (PyTorch's rule)."""
    if check_invariants is not None:
        return bool(check_invariants)
    from ..sparse import check_sparse_tensor_invariants

    return check_sparse_tensor_invariants.is_enabled()


def _type_word(x) -> str:
    return "Tensor" if isinstance(x, Tensor) else type(x).__name__


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


_NO_VALUES = object()


def _is_size(x) -> bool:
    """Whether ``x`` is a size (a tuple, list or ``Size`` of Python ints), not indices."""
    return isinstance(x, (tuple, list)) and all(type(e) is int for e in x)


def sparse_coo_tensor(indices, values=_NO_VALUES, size=None, *, dtype=None, device=None,
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
    ``sparse_coo_tensor(size)`` (a size alone) is an empty tensor of that size, as PyTorch's
    overload. Differentiable in ``values``.
    """
    if values is _NO_VALUES:
        if not _is_size(indices) or size is not None:
            raise TypeError(f"sparse_coo_tensor(): argument 'size' (position 1) must be tuple "
                            f"of ints, not {_type_word(indices)}")
        if any(n < 0 for n in indices):
            raise RuntimeError("numel: integer multiplication overflow")
        from .._factory import zeros

        dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        vals = zeros(0, dtype=dt, device=device)
        idx = xp_of(vals._device).zeros((len(indices), 0), dtype=np.int64)
        vals = _autograd_values(vals, requires_grad, "SparseCooTensorWithDimsAndTensorsBackward0")
        return make_sparse(idx, vals, tuple(indices), coalesced=True)
    dev = None if device is None else resolve_device(device)
    vals = _as_values(values, dtype, dev)
    dev = vals._device
    idx = _as_index_tensor(indices, dev, "indices")
    ishape = idx._data.shape
    if len(ishape) != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ishape)}")
    sd, nnz = ishape
    if not vals._data.ndim:  # PyTorch's: a 0-d value is one stored element
        vals = vals.reshape(1)
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
        sizes = tuple(int(h) + 1 for h in high_h) if nnz and sd else (0,) * sd
        shape = sizes + dense_shape
    else:
        if not isinstance(size, (tuple, list)) or not all(
                isinstance(n, (int, np.integer)) or (isinstance(n, Tensor) and not n._data.ndim
                                                    and n._data.dtype.kind in "iu")
                for n in size):
            raise TypeError(_invalid_combination(indices, values, size))
        shape = tuple(int(s) for s in size)
        if any(n < 0 for n in shape):
            raise RuntimeError("numel: integer multiplication overflow")
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
    if coalesced and nnz > 1 and sd and _checks_invariants(check_invariants):
        lin = _linear_index(arr, shape[:sd], xp)
        if not bool((lin[1:] > lin[:-1]).all()):
            raise RuntimeError("cannot set is_coalesced to true if indices correspond to "
                               "uncoalesced COO tensor")
    return make_sparse(arr, vals, shape, coalesced=coalesced)


def _compressed_tensor(layout, compressed, plain, values, size, dtype, device,
                       requires_grad: bool) -> SparseTensor:
    """The factory of a compressed ``layout``: the parts as tensors on one device, then
    ``ember.sparse._compressed.build`` (PyTorch's checks, always made)."""
    from ..sparse._compressed import _PARTS, build

    c, p = _PARTS[layout]
    vals = _as_values(values, dtype, None if device is None else resolve_device(device))
    return build(_as_index_tensor(compressed, vals._device, f"{c}_indices"),
                 _as_index_tensor(plain, vals._device, f"{p}_indices"), vals, size, layout,
                 requires_grad)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A sparse CSR tensor, as ``torch.sparse_csr_tensor``: row ``i`` holds the elements
    ``crow_indices[..., i]:crow_indices[..., i + 1]`` of ``col_indices`` and ``values``.

    Parts with leading batch dimensions (``(*batch, nrows + 1)``, ``(*batch, nnz)``) make a
    batched tensor; ``values`` with trailing dimensions (``(*batch, nnz, *dense)``) a hybrid
    one. ``size`` is inferred as ``(*batch, nrows, max(col_indices) + 1, *dense)`` when
    omitted. PyTorch's invariants are always checked (as under ``check_invariants=True``).
    Differentiable in ``values``.
    """
    return _compressed_tensor(sparse_csr, crow_indices, col_indices, values, size, dtype,
                              device, requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A sparse CSC tensor, as ``torch.sparse_csc_tensor``: column ``j`` holds the elements
    ``ccol_indices[..., j]:ccol_indices[..., j + 1]`` of ``row_indices`` and ``values``.

    Batched and hybrid as ``sparse_csr_tensor``; ``size`` is inferred as
    ``(*batch, max(row_indices) + 1, ncols, *dense)``. Differentiable in ``values``.
    """
    return _compressed_tensor(sparse_csc, ccol_indices, row_indices, values, size, dtype,
                              device, requires_grad)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A block sparse row (BSR) tensor, as ``torch.sparse_bsr_tensor``: block row ``i``
    holds the blocks ``values[..., crow_indices[..., i]:crow_indices[..., i + 1], :, :]``
    (``values`` is ``(*batch, nblocks, R, C, *dense)``) at the block columns
    ``col_indices[...]``.

    ``size`` is inferred as ``(*batch, nblockrows * R, (max(col_indices) + 1) * C, *dense)``
    when omitted. PyTorch's invariants are always checked. Differentiable in ``values``.
    """
    return _compressed_tensor(sparse_bsr, crow_indices, col_indices, values, size, dtype,
                              device, requires_grad)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None) -> SparseTensor:
    """A block sparse column (BSC) tensor, as ``torch.sparse_bsc_tensor``: block column
    ``j`` holds the ``(R, C)`` blocks ``values[..., ccol_indices[..., j]:ccol_indices[..., j +
    1], :, :]`` at the block rows ``row_indices[...]``. ``size`` is inferred as
    ``(*batch, (max(row_indices) + 1) * R, nblockcols * C, *dense)``. Differentiable in
    ``values``.
    """
    return _compressed_tensor(sparse_bsc, ccol_indices, row_indices, values, size, dtype,
                              device, requires_grad)


_COMPRESSED_FACTORIES = {sparse_csr: sparse_csr_tensor, sparse_csc: sparse_csc_tensor,
                         sparse_bsr: sparse_bsr_tensor, sparse_bsc: sparse_bsc_tensor}


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory: bool = False,
                             requires_grad: bool = False,
                             check_invariants=None) -> SparseTensor:
    """A sparse compressed tensor of ``layout`` (``ember.sparse_csr``, ``sparse_csc``,
    ``sparse_bsr`` or ``sparse_bsc``), as ``torch.sparse_compressed_tensor``: the factory of
    that layout with these parts (batched and hybrid ones too)."""
    factory = _COMPRESSED_FACTORIES.get(layout) if layout is not None else None
    if factory is None:
        word = "none" if layout is None else \
            {sparse_coo: "Sparse", strided: "Strided"}.get(layout, str(layout))
        raise RuntimeError("sparse_compressed_tensor expected sparse compressed tensor layout "
                           f"but got {word}")
    return factory(compressed_indices, plain_indices, values, size, dtype=dtype,
                   device=device, pin_memory=pin_memory, requires_grad=requires_grad,
                   check_invariants=check_invariants)


# -- products -----------------------------------------------------------------------------------

def spmm(input, mat2, out_dtype=None) -> Tensor:
    """``input @ mat2`` with a sparse ``input`` (or ``mat2``): a dense matrix
    (``torch.spmm``); two dense matrices multiply as ``ember.mm``. ``out_dtype`` as
    ``mm``'s (float32 products of float16/bfloat16 matrices)."""
    if out_dtype is not None:
        from .linalg import widened_product

        return widened_product(spmm, input, mat2, out_dtype)
    if is_sparse(input):
        return sparse_mm(input, mat2, "mm")
    if is_sparse(mat2):
        return dense_sparse_mm(input, mat2, "mm")
    return input.mm(mat2)


@numpy_names
def smm(input, mat2) -> SparseTensor:
    """``input @ mat2`` (sparse ``input``, dense ``mat2``) as a sparse COO tensor
    (``torch.smm``)."""
    if not is_sparse(input):
        raise RuntimeError("smm: expected a sparse input, got a strided tensor")
    return input.smm(mat2)


def _layout_word(x) -> str:
    from .._sparse_tensor import _LAYOUT_WORDS

    return _LAYOUT_WORDS.get(x.layout, "Strided") if isinstance(x, Tensor) else \
        type(x).__name__


def _cpu_backend(x) -> str:
    """PyTorch's dispatch-key name of ``x``'s backend ("CPU", "SparseCPU", "SparseCsrCPU")."""
    dev = x._device.type.upper()
    if not is_sparse(x):
        return dev
    return ("Sparse" if x.layout is sparse_coo else "SparseCsr") + dev


def _no_kernel(op: str, x) -> NotImplementedError:
    return NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                               f"'{_cpu_backend(x)}' backend. Ember has it for sparse COO "
                               "tensors only.")


def _check_dtypes(expected: Tensor, *others: Tensor) -> None:
    for o in others:
        if o.dtype is not expected.dtype:
            want = _dtype.scalar_type_name(expected._data.dtype)
            raise RuntimeError(f"expected scalar type {want} but found "
                               f"{_dtype.scalar_type_name(o._data.dtype)}")


def _check_matrix(x: Tensor, name: str, arg: int) -> None:
    if x._data.ndim != 2:
        raise RuntimeError(f"{name}: Argument #{arg}: matrices expected, got {x._data.ndim}D "
                           "tensor")


def _coalesced_matrix(mat1, name: str):
    """The coalesced COO form of the sparse 2-D ``mat1`` (any sparse layout)."""
    if not is_sparse(mat1):
        raise RuntimeError(f"{name}: expected 'mat1' to have sparse layout, got 'mat1' with "
                           f"layout {_layout_word(mat1)}")
    _check_matrix(mat1, name, 2)
    if mat1.dense_dim():
        raise RuntimeError(f"{name}: Argument #2: matrices expected, got {mat1.dense_dim()} "
                           "dense dimensions")
    return mat1.to_sparse_coo().coalesce()


def _row_product(mat1, mat2, name: str, arg: int):
    """``(coalesced mat1, its distinct nonempty rows as an index tensor, the rows of
    mat1 @ mat2 at them)``: the common part of ``hspmm`` and ``sspaddmm``."""
    s = _coalesced_matrix(mat1, name)
    if not isinstance(mat2, Tensor) or is_sparse(mat2):
        raise RuntimeError(f"{name}: expected 'mat2' to have strided layout, got 'mat2' with "
                           f"layout {_layout_word(mat2)}")
    _check_matrix(mat2, name, arg)
    if mat2._data.shape[0] != s._data.shape[1]:
        raise RuntimeError(f"{name}: Argument #{arg}: Expected dim 0 size {s._data.shape[1]}, "
                           f"got {mat2._data.shape[0]}")
    _check_dtypes(s, mat2)
    xp = xp_of(s._device)
    rows = s._idx[0]
    if rows.shape[0]:
        new = xp.empty(rows.shape[0], dtype=bool)
        new[:1] = True
        xp.not_equal(rows[1:], rows[:-1], out=new[1:])
        rows = rows[new]
    row_t = _make(rows, s._device)
    return s, row_t, sparse_mm(s, mat2, "mm").index_select(0, row_t)


def sparse_out(out, result: SparseTensor, op: str) -> SparseTensor:
    """``out=`` of a product whose result is sparse COO (``hspmm``, ``sspaddmm``, ...): ``out``
    (a sparse COO tensor of the result's dtype and device) takes the result's size, indices
    and values, as PyTorch's out kernels resize and fill it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    return write_sparse_out(out, result, op, "same")


def _layout_phrase(x) -> str:
    """``"strided"``, ``"sparse COO"``, ``"sparse CSR"``, ... (``x``'s layout, in words)."""
    if x.layout is strided:
        return "strided"
    word = _layout_word(x).removeprefix("Sparse").upper()
    return f"sparse {word or 'COO'}"


def write_sparse_out(out: Tensor, result: Tensor, op: str | None, dtype_rule: str) -> Tensor:
    """``out=`` where the result or ``out`` is sparse (``ember.sin(s, out=o)``; reached from
    ``_inplace.write_out``): ``out``, of the result's layout and device, takes the result's
    size, indices and values (cast to ``out``'s dtype under ``dtype_rule``, as the dense
    ``out=``), as PyTorch's sparse out kernels resize and fill it; ``out`` of another layout
    is refused (PyTorch fails there with internal asserts) and nothing is written."""
    from ..autograd.grad_mode import GRAD
    from ._promotion import _dtype_category

    op = op or "op"
    if out.layout is not result.layout:
        raise RuntimeError(f"{op}(): expected out to be a {_layout_phrase(result)} tensor (the "
                           f"result's layout), but got layout {_layout_word(out)}")
    if GRAD.enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out._device != result._device:
        raise RuntimeError(f"Expected out tensor to have device {result._device}, but got "
                           f"{out._device} instead")
    vals = result._vals.detach()
    have, want = vals._data.dtype, out._vals._data.dtype
    if have != want:
        name = _dtype.scalar_type_name
        if dtype_rule != "cast":
            raise RuntimeError(f"dtype of values ({name(have)}) must match dtype of sparse "
                               f"tensor ({name(want)})")
        if _dtype_category(have) > _dtype_category(want):
            raise RuntimeError(f"result type {name(have)} can't be cast to the desired output "
                               f"type {name(want)}")
        vals = vals.to(out.dtype)
    out._adopt(result._with_values(vals))
    return out


def hspmm(mat1, mat2, *, out=None) -> SparseTensor:
    """``mat1 @ mat2`` for a sparse COO ``mat1`` and a dense ``mat2`` as a hybrid COO tensor
    (``torch.hspmm``): one sparse dimension (the rows of ``mat1`` that hold an element) and
    one dense dimension (the full rows of the product). Differentiable in ``mat1``'s values
    and ``mat2`` (PyTorch's has no derivative); ``out`` is a sparse COO tensor."""
    if not is_sparse(mat1):
        raise _no_kernel("hspmm", mat1)
    s, rows, values = _row_product(mat1, mat2, "hspmm", 3)
    r = make_sparse(rows._data.reshape(1, -1), values,  # flagged as PyTorch flags it
                    (s._data.shape[0], mat2._data.shape[1]), coalesced=values.shape[0] < 2)
    return r if out is None else sparse_out(out, r, "hspmm")


def hsmm(mat1, mat2, *, out=None) -> SparseTensor:
    """``torch.hsmm``: ``hspmm(mat1, mat2)``, the product as a hybrid COO tensor."""
    return hspmm(mat1, mat2, out=out)


def dsmm(input, mat2, out_dtype=None) -> Tensor:
    """``torch.dsmm``: the dense matrix ``input @ mat2`` of a sparse ``input`` and a dense
    ``mat2`` (as ``ember.mm``, ``out_dtype`` too); differentiable in both."""
    if out_dtype is not None:
        from .linalg import widened_product

        return widened_product(dsmm, input, mat2, out_dtype)
    if not is_sparse(input):
        raise _no_kernel("dsmm", input)
    return sparse_mm(input, mat2, "mm")


@numpy_names
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> SparseTensor:
    """``beta * input + alpha * (mat1 @ mat2)`` as a sparse COO tensor, for a sparse
    ``input`` and ``mat1`` and a dense ``mat2`` (``torch.sspaddmm``).

    As PyTorch's, the result is uncoalesced: ``input``'s elements (scaled by ``beta``) then,
    for every row of ``mat1`` that holds an element, that whole row of the product.
    Differentiable in the values of ``input`` and ``mat1`` and in ``mat2`` (PyTorch's has no
    derivative); ``out`` is a sparse COO tensor."""
    from .shape import cat

    if not is_sparse(input):
        raise RuntimeError("sspaddmm: expected 'self' to have sparse layout, got 'self' with "
                           f"layout {_layout_word(input)}")
    s, rows, prod = _row_product(mat1, mat2, "sspaddmm", 3)
    m, n = s._data.shape[0], mat2._data.shape[1]
    for d, size in enumerate((m, n)):
        if input._data.ndim <= d or input._data.shape[d] != size:
            got = input._data.shape[d] if input._data.ndim > d else "none"
            raise RuntimeError(f"sspaddmm: Argument #1: Expected dim {d} size {size}, got {got}")
    _check_dtypes(s, input)
    inp = input.to_sparse_coo()
    if inp.dense_dim() or inp.sparse_dim() != 2:
        raise RuntimeError("sspaddmm: Argument #1: expected a 2-D sparse tensor without dense "
                           "dimensions")
    xp = xp_of(s._device)
    nrows = rows._data.shape[0]
    prod_idx = xp.stack((xp.repeat(rows._data, n),
                         xp.tile(xp.arange(n, dtype=np.int64), nrows)))
    idx = xp.concatenate((inp._idx, prod_idx), axis=1)
    in_vals = inp._vals if beta == 1 else inp._vals * beta
    prod_vals = prod.reshape(-1) if alpha == 1 else prod.reshape(-1) * alpha
    values = cat([in_vals, prod_vals])
    r = make_sparse(idx, values, (m, n), coalesced=idx.shape[1] < 2)
    return r if out is None else sparse_out(out, r, "sspaddmm")


def saddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None) -> SparseTensor:
    """``torch.saddmm``: ``sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)``."""
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def sparse_mask(self, mask) -> SparseTensor:
    """The elements of ``self`` (dense or sparse) at the stored elements of the sparse
    ``mask``, as a sparse tensor with ``mask``'s layout, indices (and blocks) and coalesced
    flag, and ``self``'s dtype (``Tensor.sparse_mask``). Differentiable in ``self``."""
    from ..sparse._compressed import gather

    if not is_sparse(mask):
        raise _no_kernel("sparse_mask", mask)
    if tuple(self._data.shape) != tuple(mask._data.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self._data.shape)} but mask has size "
                           f"{list(mask._data.shape)}")
    from .._device import check_same_device

    check_same_device(self, mask)
    dense = self.to_dense() if is_sparse(self) else self
    values = gather(dense, mask)
    return make_sparse(mask._idx, _named(values, "SparseMaskBackward0"), mask._data.shape,
                       coalesced=mask._coalesced, layout=mask.layout)


_RESIZE_HELP = ("on a non-empty sparse tensor is not supported.\nYou could try the following "
                "options:\n1. If you need an empty sparse tensor of this size, call `x = "
                "ember.sparse_coo_tensor(size)`.\n2. If you need to resize this tensor, you have "
                "the following options:\n    1. For both sparse and dense dimensions, keep the "
                "number of them constant and the size of them non-shrinking, and then try the "
                "same call again.\n    2. Or, create a new sparse tensor with the correct "
                "indices and values from this sparse tensor.")


def _resize(self, size, sparse_dim: int, dense_dim: int, clear: bool, op: str):
    """The in-place resize of a sparse COO tensor (PyTorch's ``SparseTensorImpl::resize_``)."""
    from .._sparse_tensor import _SparseData
    from ..autograd.grad_mode import GRAD

    if not is_sparse(self) or self.layout is not sparse_coo:
        raise _no_kernel(op, self)
    shape = tuple(int(n) for n in size)
    sparse_dim, dense_dim = int(sparse_dim), int(dense_dim)
    if len(shape) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                           f"{len(shape)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    vals = self._vals
    if GRAD.enabled and vals.requires_grad and vals.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    xp = xp_of(self._device)
    old = tuple(self._data.shape)
    old_sd = self._idx.shape[0]
    if clear or not self._idx.shape[1]:
        self._idx = xp.zeros((sparse_dim, 0), dtype=np.int64)
        self._vals = _make(xp.zeros((0,) + shape[sparse_dim:], dtype=vals._data.dtype),
                           self._device)
        self._coalesced = True if clear else self._coalesced
    else:
        if sparse_dim != old_sd:
            raise RuntimeError(f"changing the number of sparse dimensions (from {old_sd} to "
                               f"{sparse_dim}) {_RESIZE_HELP}")
        if dense_dim != len(old) - old_sd:
            raise RuntimeError(f"changing the number of dense dimensions (from "
                               f"{len(old) - old_sd} to {dense_dim}) {_RESIZE_HELP}")
        for part, a, b in (("sparse", old[:old_sd], shape[:old_sd]),
                           ("dense", old[old_sd:], shape[old_sd:])):
            if any(y < x for x, y in zip(a, b)):
                raise RuntimeError(f"shrinking the size of {part} dimensions (from {list(a)} to "
                                   f"{list(b)}) {_RESIZE_HELP}")
        if shape[old_sd:] != old[old_sd:]:  # grown dense dims: zero-padded values
            grown = xp.zeros((vals._data.shape[0],) + shape[old_sd:], dtype=vals._data.dtype)
            grown[(slice(None),) + tuple(slice(0, n) for n in old[old_sd:])] = vals._data
            self._vals = _make(grown, self._device)
    self._data = _SparseData(shape, self._vals._data.dtype, self._device)
    self._cache = {}
    self._bump_version()
    return self


def sparse_resize_(self, size, sparse_dim: int, dense_dim: int):
    """Resize the sparse COO ``self`` in place to ``size`` with ``sparse_dim`` sparse and
    ``dense_dim`` dense dimensions (``Tensor.sparse_resize_``). A non-empty tensor keeps its
    elements, so it may only grow, keeping its numbers of sparse and dense dimensions (new
    dense positions are zero); an empty one takes any size."""
    return _resize(self, size, sparse_dim, dense_dim, False, "sparse_resize_")


def sparse_resize_and_clear_(self, size, sparse_dim: int, dense_dim: int):
    """Remove every element of the sparse COO ``self`` and resize it in place to ``size``
    with ``sparse_dim`` sparse and ``dense_dim`` dense dimensions
    (``Tensor.sparse_resize_and_clear_``)."""
    return _resize(self, size, sparse_dim, dense_dim, True, "sparse_resize_and_clear_")


def resize_as_sparse_(self, the_template):
    """``self.sparse_resize_(t.size(), t.sparse_dim(), t.dense_dim())`` of the template ``t``
    (``Tensor.resize_as_sparse_``) for a sparse COO ``self``; compressed tensors (CSR, CSC,
    BSR, BSC): ``ember.sparse._resize``."""
    if any(is_sparse(t) and t.layout is not sparse_coo for t in (self, the_template)):
        from ..sparse._resize import resize_as_sparse_compressed_

        return resize_as_sparse_compressed_(self, the_template)
    return _resize(self, the_template.shape, the_template.sparse_dim(),
                   the_template.dense_dim(), False,
                   "resize_as_sparse_")


def _sspaddmm_method(self, mat1, mat2, *, beta=1, alpha=1):
    """``ember.sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)``."""
    return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


# -- the sparse methods of dense tensors ------------------------------------------------------

def _to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor as a sparse tensor: COO with ``sparse_dim`` sparse dims (all by default, or
    all but ``dense_dim``), or ``layout=ember.sparse_csr``/``sparse_csc``, or
    ``layout=ember.sparse_bsr``/``sparse_bsc`` with ``blocksize`` (with ``dense_dim`` trailing
    dense dimensions, the leading ones batches)."""
    from ..sparse._compressed import BLOCK, from_dense

    target = sparse_coo if layout is None else layout
    words = {sparse_coo: "Sparse", sparse_csr: "SparseCsr", sparse_csc: "SparseCsc",
             sparse_bsr: "SparseBsr", sparse_bsc: "SparseBsc", strided: "Strided"}
    if target in BLOCK:
        if blocksize is None:
            raise RuntimeError(f"dense_to_sparse: conversion from Strided to {words[target]} "
                               "without blocksize argument given is not supported")
        return from_dense(self, target, blocksize, dense_dim, "to_sparse")
    if blocksize is not None and target in words:
        word = "to_sparse" if target is strided else "dense_to_sparse"
        raise RuntimeError(f"{word}: conversion from Strided to {words[target]} with "
                           "blocksize argument given is not supported")
    if layout is None or layout is sparse_coo:
        if dense_dim is not None and sparse_dim is None:
            sparse_dim = self._data.ndim - dense_dim
        return dense_to_sparse(self, sparse_dim)
    if layout in (sparse_csr, sparse_csc):
        return from_dense(self, layout, None, dense_dim, "to_sparse")
    if layout is strided:  # PyTorch's: the tensor itself
        return self
    raise RuntimeError(f"to_sparse: expected a sparse layout, got {layout}")


def _to_sparse_bsr(self, blocksize, dense_dim=None):
    """This tensor as a sparse BSR tensor of ``blocksize`` ``(R, C)`` blocks (an int: square
    ones): the blocks holding a nonzero element, as ``Tensor.to_sparse_bsr``; with
    ``dense_dim`` trailing dense dimensions, the leading ones batches (every batch must hold
    as many blocks)."""
    from ..sparse._compressed import from_dense

    return from_dense(self, sparse_bsr, blocksize, dense_dim)


def _to_sparse_bsc(self, blocksize, dense_dim=None):
    """This tensor as a sparse BSC tensor of ``blocksize`` blocks, as
    ``Tensor.to_sparse_bsc`` (batched and hybrid as ``to_sparse_bsr``)."""
    from ..sparse._compressed import from_dense

    return from_dense(self, sparse_bsc, blocksize, dense_dim)


def _to_sparse_coo(self):
    """This tensor as a sparse COO tensor (``to_sparse()``)."""
    return dense_to_sparse(self)


def _to_sparse_csr(self, dense_dim=None):
    """This tensor as a sparse CSR tensor: the last ``dense_dim`` dimensions dense (hybrid),
    the two before them sparse, the leading ones batches (every batch must hold as many
    elements), as ``Tensor.to_sparse_csr``."""
    from ..sparse._compressed import from_dense

    return from_dense(self, sparse_csr, None, dense_dim)


def _to_sparse_csc(self, dense_dim=None):
    """This tensor as a sparse CSC tensor (batched and hybrid as ``to_sparse_csr``)."""
    from ..sparse._compressed import from_dense

    return from_dense(self, sparse_csc, None, dense_dim)


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
register_method("to_sparse_bsr", _to_sparse_bsr)
register_method("to_sparse_bsc", _to_sparse_bsc)
register_method("to_dense", _to_dense)
register_method("sparse_dim", _sparse_dim)
register_method("dense_dim", _dense_dim)
register_method("is_sparse_csr", property(lambda self: False,
                                          doc="False: a dense tensor is not a CSR tensor."))
for _name in ("indices", "_indices", "_values", "coalesce", "is_coalesced", "_nnz"):
    register_method(_name, _expects_sparse(_name))
register_method("values", _expects_sparse("values", "sparse"))  # COO and compressed both
for _name in ("crow_indices", "col_indices"):
    register_method(_name, _expects_sparse(_name, "sparse row compressed"))
for _name in ("ccol_indices", "row_indices"):
    register_method(_name, _expects_sparse(_name, "sparse column compressed"))
register_method("smm", smm)
register_method("sparse_mask", sparse_mask)
register_method("sspaddmm", _sspaddmm_method)
register_method("sparse_resize_", sparse_resize_)
register_method("sparse_resize_and_clear_", sparse_resize_and_clear_)
register_method("resize_as_sparse_", resize_as_sparse_)

for _name, _obj in (("sparse_coo_tensor", sparse_coo_tensor),
                    ("sparse_csr_tensor", sparse_csr_tensor),
                    ("sparse_csc_tensor", sparse_csc_tensor),
                    ("sparse_bsr_tensor", sparse_bsr_tensor),
                    ("sparse_bsc_tensor", sparse_bsc_tensor),
                    ("sparse_compressed_tensor", sparse_compressed_tensor), ("spmm", spmm),
                    ("smm", smm), ("sparse_coo", sparse_coo), ("sparse_csr", sparse_csr),
                    ("sparse_csc", sparse_csc), ("sparse_bsr", sparse_bsr),
                    ("sparse_bsc", sparse_bsc), ("sspaddmm", sspaddmm), ("saddmm", saddmm),
                    ("hspmm", hspmm), ("hsmm", hsmm), ("dsmm", dsmm),
                    ("resize_as_sparse_", resize_as_sparse_)):
    register_export(_name, _obj)
del _name, _obj
