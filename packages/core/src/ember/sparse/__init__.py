"""``ember.sparse``: operations on sparse tensors, as ``torch.sparse``.

Sparse tensors themselves (``ember.sparse_coo_tensor``, ``ember.sparse_csr_tensor``,
``Tensor.to_sparse()``) are described in ``ember._sparse_tensor`` and docs/sparse.md.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csr
from .._sparse_tensor import (
    _LAYOUT_WORDS,
    SparseAddmmBackward0,
    SparseTensor,
    _linear_index,
    _not_implemented,
    is_sparse,
    make_sparse,
    sparse_csc,
    sparse_mm,
    sparse_sum,
)
from .._sparse_tensor import (
    _no_backend as _sparse_no_backend,
)
from .._tensor import Tensor, _make

__all__ = ["mm", "sum", "addmm", "sampled_addmm", "softmax", "log_softmax", "spdiags",
           "check_sparse_tensor_invariants", "as_sparse_gradcheck", "to_sparse_semi_structured",
           "SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
           "SparseSemiStructuredTensorCUSPARSELT"]

#: names of ``ember.sparse.semi_structured``, imported on first use: its tensor class overrides
#: ``__torch_function__``, which turns dispatch on for the process (see that module)
_SEMI_STRUCTURED = frozenset({"to_sparse_semi_structured", "SparseSemiStructuredTensor",
                              "SparseSemiStructuredTensorCUTLASS",
                              "SparseSemiStructuredTensorCUSPARSELT"})


def __getattr__(name: str):
    if name in _SEMI_STRUCTURED:
        from . import semi_structured

        return getattr(semi_structured, name)
    raise AttributeError(f"module 'ember.sparse' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | _SEMI_STRUCTURED)


def _layout_word(x) -> str:
    return _LAYOUT_WORDS.get(x.layout, "Strided") if isinstance(x, Tensor) else \
        type(x).__name__


def _scalar_name(x) -> str:
    return _dtype.scalar_type_name(x.dtype.np)


def _no_backend(op: str, x) -> NotImplementedError:
    """PyTorch's dispatcher error for ``aten::<op>`` on ``x`` (dense or sparse)."""
    if is_sparse(x):
        return _sparse_no_backend(op, x)
    dev = x.device.type.upper() if isinstance(x, Tensor) else "CPU"
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{dev}' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build). If you are a Facebook "
        "employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for "
        "possible resolutions.")


def _expect_sparse(x, name: str, arg: str = "input") -> None:
    if not is_sparse(x):
        raise RuntimeError(f"{name}: expected {arg} to be a sparse tensor, but got a strided "
                           "tensor")


#: ``mm``'s ``reduce`` when not given (PyTorch's binding has two overloads: without it, and
#: with a ``str`` one, which takes the CSR-only reduction kernel even for ``"sum"``)
_NO_REDUCE = object()


def mm(mat1, mat2, reduce=_NO_REDUCE):
    """The matrix product of a sparse ``mat1`` and a dense (or sparse) ``mat2``: dense for a
    dense ``mat2``, sparse for a sparse one, as ``torch.sparse.mm``.

    Differentiable in ``mat2`` and in the values of ``mat1``; the gradient of ``mat1`` is
    sparse with ``mat1``'s pattern (the dense gradient sampled at its elements).

    ``reduce`` (``"sum"``, ``"mean"``, ``"amax"``, ``"amin"``; a 2-D CSR ``mat1`` and a dense
    ``mat2`` only, as PyTorch's) combines the products along each row of ``mat1`` with that
    reduction (``ember.sparse._mm_reduce``)."""
    if reduce is not _NO_REDUCE:
        if not isinstance(reduce, str):
            raise TypeError(f"_sparse_mm(): argument 'reduce' (position 3) must be str, not "
                            f"{type(reduce).__name__}")
        for pos, (arg, t) in enumerate((("sparse", mat1), ("dense", mat2)), 1):
            if not isinstance(t, Tensor):
                raise TypeError(f"_sparse_mm(): argument '{arg}' (position {pos}) must be "
                                f"Tensor, not {type(t).__name__}")
        from ._mm_reduce import mm_reduce

        return mm_reduce(mat1, mat2, reduce, _no_backend)
    if not is_sparse(mat1):  # PyTorch's: a dense mat1 takes the dense (or dense @ sparse) mm
        from .. import mm as _mm

        return _mm(mat1, mat2)
    return sparse_mm(mat1, mat2, "mm", SparseAddmmBackward0)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` for a dense ``mat``, sparse ``mat1`` and dense
    ``mat2`` (``torch.sparse.addmm``); differentiable in all three."""
    if is_sparse(mat) and (not is_sparse(mat1) or mat.layout is sparse_coo):
        raise RuntimeError(f"addmm_sparse_dense: expected strided result tensor, got tensor "
                           f"with layout {_LAYOUT_WORDS[mat.layout]}")
    if not is_sparse(mat1) and not is_sparse(mat2):  # all dense: the dense addmm
        from .. import addmm as _addmm

        return _addmm(mat, mat1, mat2, beta=beta, alpha=alpha)
    if not is_sparse(mat1) or is_sparse(mat2):
        raise RuntimeError(
            "addmm_sparse_dense: expected either 'mat1' to have sparse layout and 'mat2' to have "
            f"strided layout, got 'mat1' with layout {_layout_word(mat1)} and 'mat2' with "
            f"layout {_layout_word(mat2)}")
    prod = sparse_mm(mat1, mat2, "addmm", SparseAddmmBackward0)
    if isinstance(mat, Tensor) and mat.dtype is not mat1.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(mat1)} but found "
                           f"{_scalar_name(mat)}")
    if alpha != 1:
        prod = prod * alpha
    if is_sparse(mat):
        mat = mat.to_dense()
    return prod + (mat if beta == 1 else mat * beta)


def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's elements: a dense 0-d tensor over all (``dim=None``); over
    some sparse dims a sparse tensor; over all sparse dims a dense tensor
    (``torch.sparse.sum``). Differentiable in the values."""
    if not is_sparse(input) or input.layout is not sparse_coo:  # PyTorch's: coalesced first
        if dim is None:
            raise RuntimeError("coalesce expected sparse coordinate tensor layout but got "
                               f"{_layout_word(input)}")
        raise _no_backend("_indices", input)
    return sparse_sum(input, dim, False, dtype)


def _lines(s: SparseTensor, dim: int):
    """The line (all coordinates but ``dim``) of each stored element of coalesced ``s``, as
    ``(group id per element, number of groups)``."""
    xp = xp_of(s._device)
    sd = s._idx.shape[0]
    other = [d for d in range(sd) if d != dim]
    if not other:
        return xp.zeros(s._idx.shape[1], dtype=np.int64), 1
    lin = _linear_index(s._idx[other], tuple(s._data.shape[d] for d in other), xp)
    uniq, inverse = xp.unique(lin, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64, copy=False), int(uniq.shape[0])


def _softmax(input, dim: int, dtype, log: bool, name: str):
    op = "log_softmax" if log else "softmax"
    if not isinstance(dim, int):
        raise TypeError(f"_sparse_{op}(): argument 'dim' (position 2) must be int, not "
                        f"{type(dim).__name__}")
    if not is_sparse(input) or (input._layout is not sparse_coo and (
            input._layout is not sparse_csr or input._data.ndim > 2)):
        # as PyTorch: no softmax kernel for dense tensors, compressed columns, blocks, batches
        # or dense dims
        raise _no_backend(f"_sparse_{op}", input)
    from .._factory import zeros
    from ..ops._promotion import wrap_dim

    s = input.to_sparse_coo().coalesce() if input._layout is not sparse_csr else \
        input.to_sparse_coo()
    if dtype is not None:
        s = s.to(_dtype.to_dtype(dtype))
    dt = s._vals._data.dtype
    if dt.kind != "f" or (s._device.type == "cpu" and dt.itemsize < 4) or \
            dt is _dtype.BFLOAT16_NP:  # PyTorch's CPU kernels: float and double
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{_dtype.scalar_type_name(dt)}'")
    dim = wrap_dim(dim, s._data.ndim)
    sd = s._idx.shape[0]
    vals = s._vals
    if dim >= sd:  # a dense dim: the values' own softmax
        fn = vals.log_softmax if log else vals.softmax
        out = fn(dim - sd + 1)
    elif not vals._data.shape[0]:
        out = vals
    else:
        xp = xp_of(s._device)
        group, n = _lines(s, dim)
        g = _make(group, s._device)
        v = vals._data
        top = xp.full((n,) + v.shape[1:], -np.inf, dtype=v.dtype)
        from ..ops.indexing import ufunc_at

        # the shift: any constant per line gives the same result
        ufunc_at(xp, "maximum", top, group, v)
        shifted = vals - _make(top[group], s._device)
        exp = shifted.exp()
        total = zeros((n,) + tuple(v.shape[1:]), dtype=vals.dtype, device=s._device)
        total = total.index_add(0, g, exp).index_select(0, g)
        out = shifted - total.log() if log else exp / total
    result = make_sparse(s._idx, out, s._data.shape, coalesced=True)
    return result.to_sparse_csr() if input._layout is sparse_csr else result


def softmax(input, dim: int, *, dtype=None):
    """Softmax along ``dim`` over the stored elements of a sparse tensor (the unstored ones
    count as -inf, so they stay unstored), as ``torch.sparse.softmax``; a sparse result with
    the input's pattern, differentiable in the values."""
    return _softmax(input, dim, dtype, False, "sparse.softmax")


def log_softmax(input, dim: int, *, dtype=None):
    """``log(softmax(input, dim))`` over the stored elements (``torch.sparse.log_softmax``)."""
    return _softmax(input, dim, dtype, True, "sparse.log_softmax")


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` at the stored elements of the sparse CSR
    ``input`` only (``torch.sparse.sampled_addmm``): a CSR result with ``input``'s pattern,
    differentiable in ``input``'s values, ``mat1`` and ``mat2``."""
    if not is_sparse(input) or input._layout is not sparse_csr:
        raise _no_backend("sparse_sampled_addmm", input)
    if input._data.ndim > 2:
        raise RuntimeError("sampled_addmm: Ember's sampled_addmm takes a 2-D CSR input, not a "
                           "batched or hybrid one")
    if out is not None and (not is_sparse(out) or out._layout is not sparse_csr):
        raise RuntimeError(f"sampled_addmm: Expected result to have sparse csr layout, but got "
                           f"{_layout_word(out)}")
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if is_sparse(m) or m._data.ndim != 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got "
                               f"{m._data.ndim}-D tensor")
    if mat2.dtype is not mat1.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but "
                           f"got {_scalar_name(mat1)} and {_scalar_name(mat2)}")
    if mat1.dtype is not input.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and self to have the same dtype, but "
                           f"got {_scalar_name(mat1)} and {_scalar_name(input)}")
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(f"sparse_sampled_addmm: Expected self to be a floating-point or "
                           f"complex tensor, but got {_scalar_name(input)}")
    rows_n, cols_n = input._data.shape
    if mat1._data.shape[1] != mat2._data.shape[0]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1._data.shape[0]}x{mat1._data.shape[1]} and "
                           f"{mat2._data.shape[0]}x{mat2._data.shape[1]})")
    if mat1._data.shape[0] != rows_n:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if mat2._data.shape[1] != cols_n:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    rows = _make(input._idx[0], input._device)
    cols = _make(input._idx[1], input._device)
    sampled = (mat1.index_select(0, rows) * mat2.t().index_select(0, cols)).sum(1)
    values = input._vals * beta + sampled * alpha
    result = make_sparse(input._idx, values, input._data.shape, coalesced=input._coalesced,
                         layout=sparse_csr)
    if out is not None:  # a CSR out takes the result's pattern and values
        out._adopt(result)
        return out
    return result


def spdiags(diagonals, offsets, shape, layout=None):
    """A sparse matrix of ``shape`` with the rows of ``diagonals`` on the diagonals
    ``offsets`` (``torch.sparse.spdiags``, scipy's convention: ``diagonals[k, j]`` goes to
    ``(j - offsets[k], j)``); COO by default, or ``layout=ember.sparse_csr`` or
    ``ember.sparse_csc``. Differentiable in ``diagonals``."""
    from ..ops.shape import cat

    if diagonals._data.ndim != 2 and diagonals._data.ndim != 1:
        raise RuntimeError("Diagonals must be vector or matrix")
    diags = diagonals.unsqueeze(0) if diagonals._data.ndim == 1 else diagonals
    if isinstance(offsets, Tensor):
        if offsets._data.ndim > 1:
            raise RuntimeError("Offsets must be scalar or vector")
        if offsets.dtype is not _dtype.int64:
            raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                               f"{_scalar_name(offsets)}")
    offs = offsets.tolist() if isinstance(offsets, Tensor) else list(offsets)
    offs = [offs] if isinstance(offs, int) else offs
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if len(offs) != diags._data.shape[0]:
        raise RuntimeError(f"Number of diagonals ({diags._data.shape[0]}) does not match the "
                           f"number of offsets ({len(offs)})")
    if layout is not None and layout not in (sparse_coo, sparse_csr, sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {_LAYOUT_WORDS.get(layout, layout)}")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    nrows, ncols = (int(n) for n in shape)
    for off in offs:
        n = min(ncols, nrows + off) - max(0, off)
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [2, {n}]")
    xp = xp_of(diags._device)
    length = diags._data.shape[1]
    rows, cols, parts = [], [], []
    for k, off in enumerate(offs):
        j = xp.arange(max(0, off), min(ncols, nrows + off, length), dtype=np.int64)
        rows.append(j - off)
        cols.append(j)
        parts.append(diags[k].index_select(0, _make(j, diags._device)))
    values = cat(parts) if parts else diags.reshape(-1)[:0]
    idx = xp.stack((xp.concatenate(rows), xp.concatenate(cols))) if rows else \
        xp.zeros((2, 0), dtype=np.int64)
    # PyTorch's: the diagonals one after another, in the order of ``offsets``, uncoalesced
    out = make_sparse(idx, values, (nrows, ncols), coalesced=False)
    if layout is None or layout is sparse_coo:
        return out
    out = out.coalesce()
    if layout is sparse_csr:
        return out.to_sparse_csr()
    if layout is sparse_csc:
        return out.to_sparse_csc()
    raise RuntimeError(f"spdiags: layout {layout} is not supported by Ember (sparse_coo, "
                       "sparse_csr and sparse_csc are)")


class check_sparse_tensor_invariants:
    """PyTorch's switch for checking sparse tensors' invariants at construction: a context
    manager, a decorator, and ``is_enabled()``/``enable()``/``disable()``.

    Ember's factories always check the invariants its kernels rely on (indices within
    ``size``, CSR's compressed indices), whatever the switch says; the switch keeps its
    state for programs that set and read it."""

    _enabled = [False]

    def __init__(self, enable: bool = True):
        self.state = bool(enable)
        self.saved_state = None

    @staticmethod
    def is_enabled() -> bool:
        """Whether the checks are switched on (default False, as in PyTorch)."""
        return check_sparse_tensor_invariants._enabled[0]

    @staticmethod
    def enable() -> None:
        check_sparse_tensor_invariants._enabled[0] = True

    @staticmethod
    def disable() -> None:
        check_sparse_tensor_invariants._enabled[0] = False

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        self._enabled[0] = self.state
        return self

    def __exit__(self, *exc):
        self._enabled[0] = self.saved_state
        self.saved_state = None
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return func(*args, **kwargs)

        return wrapped


def as_sparse_gradcheck(gradcheck):
    """``gradcheck`` extended to sparse inputs and outputs, as ``torch.sparse``'s decorator.

    ``as_sparse_gradcheck(ember.autograd.gradcheck)(func, inputs, **kwargs)`` checks ``func``
    with respect to the *values* of its sparse inputs that require grad (every layout: the
    pattern is held fixed, as a sparse gradient has the input's pattern) and compares sparse
    outputs through ``to_dense()``; dense inputs and outputs are checked as they are.
    """

    def gradcheck_with_sparse_support(func, inputs, **kwargs):
        inputs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        rebuild = []  # per input: None (as it is) or a function values -> sparse tensor
        flat = []
        for t in inputs:
            if is_sparse(t) and t.requires_grad:
                if t.layout is sparse_coo:
                    t = t.coalesce()
                    idx, size = t._indices(), t.shape
                    rebuild.append(lambda v, idx=idx, size=size: _coo(idx, v, size))
                    flat.append(t._values().detach().requires_grad_())
                else:
                    comp, plain = t._compressed_parts()
                    make = _COMPRESSED_MAKERS[t.layout]
                    rebuild.append(lambda v, comp=comp, plain=plain, size=t.shape, make=make:
                                   make(comp, plain, v, size))
                    flat.append(t.values().detach().requires_grad_())
            else:
                rebuild.append(None)
                flat.append(t)

        def dense_func(*args):
            args = [a if r is None else r(a) for a, r in zip(args, rebuild)]
            out = func(*args)
            if isinstance(out, (tuple, list)):
                return tuple(o.to_dense() if is_sparse(o) else o for o in out)
            return out.to_dense() if is_sparse(out) else out

        return gradcheck(dense_func, tuple(flat), **kwargs)

    gradcheck_with_sparse_support.__name__ = getattr(gradcheck, "__name__", "gradcheck")
    gradcheck_with_sparse_support.__doc__ = gradcheck.__doc__
    return gradcheck_with_sparse_support


def _coo(indices, values, size):
    from .. import sparse_coo_tensor

    return sparse_coo_tensor(indices, values, size)


def _csr(crow, col, values, size):
    from .. import sparse_csr_tensor

    return sparse_csr_tensor(crow, col, values, size)


def _csc(ccol, row, values, size):
    from .. import sparse_csc_tensor

    return sparse_csc_tensor(ccol, row, values, size)


def _bsr(crow, col, values, size):
    from .. import sparse_bsr_tensor

    return sparse_bsr_tensor(crow, col, values, size)


def _bsc(ccol, row, values, size):
    from .. import sparse_bsc_tensor

    return sparse_bsc_tensor(ccol, row, values, size)


_COMPRESSED_MAKERS = {sparse_csr: _csr, sparse_csc: _csc, sparse_bsr: _bsr, sparse_bsc: _bsc}
