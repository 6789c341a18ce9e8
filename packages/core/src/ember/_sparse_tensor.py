"""Sparse COO, CSR, CSC, BSR and BSC tensors (``ember.sparse_coo``, ``ember.sparse_csr``,
``ember.sparse_csc``, ``ember.sparse_bsr``, ``ember.sparse_bsc``), as PyTorch's. The compressed
layouts (with batch and dense dimensions: ``ember.sparse._compressed``) keep one coordinate per
stored element too: a block tensor's ``_idx`` holds each block's (block row, block column) and
its ``_vals`` the ``(nblocks, R, C, *dense)`` blocks (kernels: ``ember.sparse._blocks``).

A sparse tensor is a :class:`SparseTensor`, a ``Tensor`` subclass holding

- ``_idx``: an int64 array of the device's array module, ``(sparse_dim, nnz)``, the
  coordinates of the stored elements (a CSR tensor keeps its row and column per element too,
  in row-major order: ``crow_indices()`` is derived from them; a CSC tensor the same in
  column-major order, ``ccol_indices()`` derived; a batched compressed tensor its batch
  indices first, batch by batch: ``ember.sparse._compressed``);
- ``_vals``: a dense ``Tensor`` of shape ``(nnz, *dense_shape)`` (of a compressed tensor,
  ``(B * nnz, *block, *dense_shape)``) that carries autograd;
- ``_data``: a :class:`_SparseData` placeholder with the shape and dtype of the dense tensor,
  which refuses every array operation: a dense op handed a sparse tensor fails with PyTorch's
  "Could not run ... with arguments from the 'SparseCPU' backend" rather than computing on
  something that is not the tensor's elements.

Why a subclass without ``__torch_function__``: dense programs pay nothing. The class opts out
of ``ember.overrides`` dispatch (``disabled_torch_function_impl``, as ``nn.Parameter``), so
defining it at ``import ember`` turns nothing on; sparse operands are met by the subclass's
own methods and operators (``S @ D``, ``D @ S``, ``D + S``, ``S * 2``: Python asks the
subclass's reflected operator first) and by one identity check in the few functions whose
function form takes a sparse operand (``ember.mm``, ``ember.matmul``, ``ember.sum``).

Autograd: the values are the sparse tensor's autograd identity. ``requires_grad``,
``grad_fn`` and ``is_leaf`` are the values'; every differentiable sparse op is a dense op on
the values (gathers and segment sums of them, with the indices constant), so the engine only
ever sees dense gradients. The gradient of a sparse tensor is therefore sparse with its
pattern (``S.grad`` is the values' gradient with ``S``'s indices): PyTorch's
``torch.sparse.mm`` semantics. (PyTorch's ``torch.mm``/``@`` give a sparse leaf a dense
``.grad``; the gradient that reaches the values, e.g. of ``sparse_coo_tensor(i, v)``, is the
same in both.)
"""

from __future__ import annotations

import math
import sys

import numpy as np

from . import _dtype
from ._device import check_same_device, xp_of
from ._layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ._tensor import Tensor, _make, _parse_to
from .autograd.grad_mode import GRAD
from .autograd.graph import make_node_class, record
from .overrides import disabled_torch_function_impl

__all__ = ["SparseTensor", "is_sparse", "sparse_csc"]

_new = object.__new__

#: how PyTorch's layout errors name each layout
_LAYOUT_WORDS = {sparse_coo: "Sparse", sparse_csr: "SparseCsr", sparse_csc: "SparseCsc",
                 sparse_bsr: "SparseBsr", sparse_bsc: "SparseBsc"}
#: the layouts whose tensors store dense blocks (``ember.sparse._blocks``)
_BLOCK = (sparse_bsr, sparse_bsc)
#: the compressed layouts without blocks
_COMPRESSED_PLAIN = (sparse_csr, sparse_csc)
#: the layouts whose compressed dimension is the columns
_BY_COLUMN = (sparse_csc, sparse_bsc)


def _backend_name(device) -> str:
    return "Sparse" + device.type.upper()


def _no_backend(op: str, s) -> NotImplementedError:
    """PyTorch's dispatcher error for ``aten::<op>`` on the sparse tensor ``s``."""
    word = "Sparse" if s._layout is sparse_coo else "SparseCsr"
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{word}"
        f"{s._device.type.upper()}' backend. This could be because the operator doesn't exist "
        "for this backend, or was omitted during the selective/custom build process (if using "
        "custom build). If you are a Facebook employee using PyTorch on mobile, please visit "
        "https://fburl.com/ptmfixes for possible resolutions.")


#: the ATen names of the NumPy functions a dense op's kernel calls on a sparse tensor's
#: placeholder array (what PyTorch's dispatcher error names); others are named as they are
_ATEN_NAMES = {
    "power": "pow", "float_power": "pow", "divide": "div", "true_divide": "div",
    "multiply": "mul", "subtract": "sub", "add": "add", "greater": "gt", "greater_equal": "ge",
    "less": "lt", "less_equal": "le", "equal": "eq", "not_equal": "ne",
    "concatenate": "cat", "maximum": "clamp", "minimum": "clamp", "clip": "clamp",
    "negative": "neg", "absolute": "abs", "floor_divide": "floor_divide",
    "remainder": "remainder", "fmod": "fmod", "sum": "sum", "mean": "mean", "amax": "amax",
    "amin": "amin", "max": "max", "min": "min", "prod": "prod", "cumsum": "cumsum",
    "matmul": "matmul", "dot": "dot", "where": "where", "logical_not": "logical_not",
    "isfinite": "isfinite", "exp": "exp", "log": "log", "copy": "clone", "astype": "_to_copy",
    "reshape": "view", "T": "t", "flags": "contiguous", "strides": "as_strided",
    "transpose": "transpose", "__array__": "_local_scalar_dense", "operator": "mul",
}


def _not_implemented(what: str, device, layout=None) -> NotImplementedError:
    """PyTorch's dispatcher error for the op behind the NumPy name ``what``."""
    word = "Sparse" if layout is None or layout is sparse_coo else "SparseCsr"
    return NotImplementedError(
        f"Could not run 'aten::{_ATEN_NAMES.get(what, what)}' with arguments from the "
        f"'{word}{device.type.upper()}' backend. This could be because the operator doesn't "
        "exist for this backend, or was omitted during the selective/custom build process (if "
        "using custom build). If you are a Facebook employee using PyTorch on mobile, please "
        "visit https://fburl.com/ptmfixes for possible resolutions.")


class _SparseData:
    """The ``_data`` of a sparse tensor: the dense shape and dtype, and nothing else. Any
    array operation on it (NumPy/CuPy ufuncs and functions, methods, operators) raises."""

    __slots__ = ("shape", "ndim", "size", "dtype", "itemsize", "_device", "_layout")

    def __init__(self, shape: tuple, dtype, device, layout=sparse_coo):
        self.shape = shape
        self.ndim = len(shape)
        self.size = math.prod(shape)
        self.dtype = dtype
        self.itemsize = dtype.itemsize
        self._device = device
        self._layout = layout

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _not_implemented(ufunc.__name__, self._device, self._layout)

    def __array_function__(self, func, types, args, kwargs):
        raise _not_implemented(func.__name__, self._device, self._layout)

    def __array__(self, *args, **kwargs):
        raise _not_implemented("__array__", self._device, self._layout)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _not_implemented(name, self._device, self._layout)

    def _refuse(self, *args, **kwargs):
        raise _not_implemented("operator", self._device, self._layout)

    __getitem__ = __setitem__ = __iter__ = __len__ = __bool__ = __float__ = __int__ = _refuse
    __hash__ = object.__hash__


def _refusing(op: str):
    def refuse(self, *args, **kwargs):
        raise _not_implemented(op, self._device, self._layout)

    return refuse


for _names, _op in ((("__add__", "__radd__", "__iadd__"), "add"),
                    (("__sub__", "__rsub__", "__isub__"), "sub"),
                    (("__mul__", "__rmul__", "__imul__"), "mul"),
                    (("__truediv__", "__rtruediv__", "__itruediv__"), "div"),
                    (("__matmul__", "__rmatmul__"), "matmul"), (("__neg__",), "neg"),
                    (("__pow__", "__rpow__"), "pow"), (("__lt__",), "lt"), (("__le__",), "le"),
                    (("__gt__",), "gt"), (("__ge__",), "ge"), (("__eq__",), "equal"),
                    (("__ne__",), "ne")):
    for _name in _names:
        setattr(_SparseData, _name, _refusing(_op))
del _names, _op, _name


def is_sparse(t) -> bool:
    """Whether ``t`` is a sparse tensor (of any sparse layout)."""
    return t.__class__ is SparseTensor


def _index_tensor(arr, device) -> Tensor:
    return _make(arr, device)


# -- the row plan: what a product with a row-sorted 2-D pattern needs ----------------------------

class _RowPlan:
    """A 2-D pattern whose rows are sorted (coalesced COO, CSR): the segments of equal rows
    for the segment sum of a product, the index tensors for gradients, and (made on first
    use) the plan of the transpose with the permutation of the values into it. Indices never
    change in place, so a tensor keeps its plan for every product it takes part in."""

    __slots__ = ("rows", "cols", "shape", "device", "starts", "seg_rows", "_t", "_tensors")

    def __init__(self, rows, cols, shape: tuple, device):
        xp = xp_of(device)
        self.rows, self.cols, self.shape, self.device = rows, cols, shape, device
        nnz = rows.shape[0]
        if nnz:
            new = xp.empty(nnz, dtype=bool)
            new[:1] = True
            xp.not_equal(rows[1:], rows[:-1], out=new[1:])
            self.starts = xp.nonzero(new)[0]
            self.seg_rows = rows[self.starts]
        else:
            self.starts = self.seg_rows = None
        self._t = None
        self._tensors = None

    def tensors(self) -> tuple:
        """``(rows, cols)`` as int64 tensors (for ``index_select`` in backward)."""
        if self._tensors is None:
            self._tensors = (_index_tensor(self.rows, self.device),
                             _index_tensor(self.cols, self.device))
        return self._tensors

    def transposed(self) -> tuple:
        """``(plan of the transpose, permutation tensor of the values into it)``."""
        if self._t is None:
            xp = xp_of(self.device)
            order = xp.argsort(self.cols, kind="stable")
            plan = _RowPlan(self.cols[order], self.rows[order], self.shape[::-1], self.device)
            self._t = (plan, _index_tensor(order, self.device))
        return self._t


def _spmm_arrays(plan: _RowPlan, v, d):
    """``S @ d`` for the pattern ``plan`` with values ``v`` (arrays): gather the rows of ``d``
    at the columns, scale them by the values, and sum the segments of equal rows."""
    xp = xp_of(plan.device)
    n = d.shape[1]
    out = xp.zeros((plan.shape[0], n), dtype=np.result_type(v.dtype, d.dtype))
    if not plan.rows.shape[0] or not n:
        return out
    prod = d[plan.cols]
    prod *= v[:, None]
    reduceat = getattr(xp.add, "reduceat", None)
    if reduceat is not None:
        out[plan.seg_rows] = reduceat(prod, plan.starts, axis=0)
    else:  # an array module without reduceat (CuPy): an atomic scatter-add
        from .ops.indexing import ufunc_at  # CuPy's add.at lacks some dtypes

        ufunc_at(xp, "add", out, plan.rows, prod)
    return out


def _spmm_grads(plan: _RowPlan, values: Tensor, dense: Tensor, grad: Tensor, need_values: bool,
                need_dense: bool) -> tuple:
    """Gradients of ``S @ D`` (2-D) for ``(values, D)``: the sampled product ``(grad @ D.T)``
    at the stored elements, and ``S.T @ grad`` (itself a recorded sparse product)."""
    gv = gd = None
    if need_values:
        rows, cols = plan.tensors()
        gv = (grad.index_select(0, rows) * dense.index_select(0, cols)).sum(1)
    if need_dense:
        tplan, order = plan.transposed()
        gd = spmm_plan(tplan, values.index_select(0, order), grad, MmBackward0)
    return gv, gd


def _spmm_backward(node, grad):
    values, dense = node.saved
    return _spmm_grads(node.ctx, values, dense, grad, node.needs_grad(0), node.needs_grad(1))


MmBackward0 = make_node_class("MmBackward0", _spmm_backward)
SparseAddmmBackward0 = make_node_class("SparseAddmmBackward0", _spmm_backward)


def spmm_plan(plan: _RowPlan, values: Tensor, dense: Tensor, node_cls=MmBackward0) -> Tensor:
    """``S @ dense`` (2-D dense) for the row-sorted pattern ``plan`` and ``values``; recorded
    as ``node_cls`` when the values or ``dense`` require grad."""
    out = _make(_spmm_arrays(plan, values._data, dense._data), dense._device)
    if GRAD.enabled and (values.requires_grad or dense.requires_grad):
        record(node_cls, out, (values, dense), (values, dense), plan)
    return out


def _identity_backward(node, grad):
    return (grad,)


#: identity nodes that give a sparse tensor's values PyTorch's grad_fn names
_NAMED_NODES: dict = {}


def _named(values: Tensor, name: str) -> Tensor:
    """``values`` under an identity node called ``name`` when it requires grad (so that
    ``S.grad_fn`` is PyTorch's ``SparseCooTensorWithDimsAndTensorsBackward0`` and the like)."""
    if not (values.requires_grad and GRAD.enabled):
        return values
    node_cls = _NAMED_NODES.get(name)
    if node_cls is None:
        node_cls = _NAMED_NODES[name] = make_node_class(name, _identity_backward)
    return record(node_cls, _make(values._data, values._device), (values,))


# -- construction ------------------------------------------------------------------------------

def make_sparse(indices, values: Tensor, shape: tuple, *, coalesced: bool,
                layout=sparse_coo) -> SparseTensor:
    """A sparse tensor of ``shape`` over the ``indices`` array ``(sparse_dim, nnz)`` and the
    ``values`` tensor (no checks: the public factories check)."""
    t = _new(SparseTensor)
    t._data = _SparseData(tuple(shape), values._data.dtype, values._device, layout)
    t._device = values._device
    t._idx = indices
    t._vals = values
    t._coalesced = bool(coalesced)
    t._layout = layout
    t._cache = {}
    return t


def _linear_index(indices, sizes: tuple, xp):
    """The row-major position of each coordinate column of ``indices`` in ``sizes``."""
    lin = indices[0].copy() if indices.shape[0] else xp.zeros(indices.shape[1], dtype=np.int64)
    for d in range(1, indices.shape[0]):
        lin *= sizes[d]
        lin += indices[d]
    return lin


def dense_to_sparse(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """``x.to_sparse(sparse_dim)``: the coordinates of the nonzero elements (of the nonzero
    trailing blocks for ``sparse_dim < x.dim()``), in row-major order, so coalesced."""
    ndim = x._data.ndim
    sd = ndim if sparse_dim is None else sparse_dim
    if not 0 <= sd <= ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, "
                           f"but {sd} is given")
    if ndim and not sd:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                           "self.dim()>0")
    xp = xp_of(x)
    d = x._data
    if not ndim:  # PyTorch's 0-d sparse tensor: no sparse dims, one stored element
        idx = xp.zeros((0, 1), dtype=np.int64)
        return make_sparse(idx, _named(x.reshape(1), "ToSparseBackward1"), (), coalesced=True)
    mask = d != 0
    if sd < ndim:
        mask = mask.reshape(d.shape[:sd] + (-1,)).any(axis=-1)
    idx = xp.stack(xp.nonzero(mask)).astype(np.int64, copy=False)
    values = x[tuple(_index_tensor(i, x._device) for i in idx)]
    return make_sparse(idx, _named(values, "ToSparseBackward1"), d.shape, coalesced=True)


# -- the hook of dense ops ----------------------------------------------------------------------

#: the in-place unary ops PyTorch has for sparse tensors (``ember.sparse._pointwise``), methods
#: of ``SparseTensor``; PyTorch's other names of them map to these
_INPLACE_UNARY = (
    "abs_", "neg_", "sign_", "sgn_", "sqrt_", "sin_", "sinh_", "tan_", "tanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "floor_", "round_", "trunc_", "frac_", "expm1_",
    "log1p_", "relu_", "deg2rad_", "rad2deg_", "erf_", "erfinv_", "conj_physical_", "square_",
    "nan_to_num_",
)
_INPLACE_ALIASES = {"absolute_": "abs_", "negative_": "neg_", "arcsin_": "asin_",
                    "arcsinh_": "asinh_", "arctan_": "atan_", "arctanh_": "atanh_",
                    "fix_": "trunc_"}


def sparse_op(name: str, fn, input, *args, **kwargs):
    """The sparse form of the dense element-wise unary op ``name`` (``fn``), for
    ``ember.sin(s)`` and ``s.sin()`` (``ember.sparse._pointwise``).

    Dense ops call this from an ``except NotImplementedError:`` around their kernel, which a
    sparse tensor's array (``_SparseData``) makes raise, so dense calls pay nothing (or after a
    class-identity check); it re-raises that exception unless ``input`` is sparse."""
    if input.__class__ is not SparseTensor:
        raise  # the NotImplementedError the caller is handling
    from .sparse import _pointwise

    return _pointwise.unary(input, name, fn, args, kwargs)


#: the comparisons, whose PyTorch kernel names say whether the other operand is a number
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def sparse_binary(name: str, input, other):
    """The sparse form of the dense binary op ``name`` (``ember.mul(s, 2)``,
    ``ember.div(s, 2)``, ``ember.pow(s, 2)``; ``binary_op``'s hook, reached when a sparse
    operand's array refuses, so dense calls pay nothing). Re-raises the exception being
    handled unless an operand is sparse."""
    a_sparse, b_sparse = is_sparse(input), is_sparse(other)
    if not a_sparse and not b_sparse:
        raise  # the NotImplementedError the caller is handling
    if name == "mul":
        return sparse_mul(input, other) if a_sparse else sparse_mul(other, input)
    if name in ("add", "sub"):  # ``ember.add`` has scaled ``other`` by ``alpha`` already
        if a_sparse:
            if name == "add":
                return sparse_add(input, other)
            return sparse_add(input, -other) if b_sparse else sparse_add(input, other)
        return dense_add_sparse(input, other, 1 if name == "add" else -1)
    if a_sparse:
        if name in ("div", "true_divide"):
            return input / other
        if name == "floor_divide":
            return input.floor_divide(other)
        if name == "div_trunc" and input._layout is sparse_coo and not (
                isinstance(other, Tensor) and (is_sparse(other) or other._data.ndim)):
            from .ops.arith import div

            c = input.coalesce()  # as PyTorch's: the duplicates summed first
            return c._with_values(div(c._vals, other, rounding_mode="trunc"))
        if name == "pow":
            return input.pow(other)
    if b_sparse and isinstance(input, Tensor) and name in _DIVISIONS:
        exc = _sparse_divisor(other, name == "floor_divide")
        exc.__suppress_context__ = True
        raise exc
    s = input if a_sparse else other
    if name in _COMPARISONS:
        name += ".Tensor" if isinstance(other, Tensor) else ".Scalar"
    elif name in ("remainder", "fmod", "pow"):
        name += ".Tensor" if isinstance(input, Tensor) else ".Scalar"
    exc = _no_backend(name, s)
    exc.__suppress_context__ = True  # raised where the dense op's attempt was caught
    raise exc


#: the binary ops that divide (PyTorch refuses a sparse divisor of a dense tensor in words)
_DIVISIONS = frozenset(("div", "true_divide", "div_trunc", "floor_divide"))


def _sparse_divisor(divisor, floor: bool = False) -> RuntimeError:
    """PyTorch's error for a divisor that is sparse or not 0-d, where the dividend is
    sparse or the divisor is."""
    word = "Sparse floor division" if floor else "Sparse division"
    return RuntimeError(f"{word} requires a scalar or zero-dim dense tensor divisor (got shape "
                        f"{list(divisor._data.shape)} for divisor)")


def sparse_inplace(name: str, fn, self, *args, **kwargs):
    """The sparse form of the in-place op ``name`` (``"sin_"``; ``fn`` its out-of-place op),
    for ``ember.sin_(s)`` (``make_inplace``'s hook; ``s.sin_()`` is a method). Re-raises the
    exception being handled unless ``self`` is sparse: a dense ``self`` with a sparse argument
    the op refused (``d.baddbmm_(s, d)``) in the in-place op's name, as PyTorch's dispatcher
    words it (``aten::baddbmm_``)."""
    if self.__class__ is not SparseTensor:
        exc = sys.exc_info()[1]
        head = f"Could not run 'aten::{name[:-1]}' "
        if isinstance(exc, NotImplementedError) and str(exc).startswith(head):
            raise NotImplementedError(f"Could not run 'aten::{name}' " +
                                      str(exc)[len(head):]) from None
        raise  # the NotImplementedError the caller is handling
    from .sparse import _pointwise

    return _pointwise.unary_(self, name, args, kwargs, unary=getattr(fn, "_unary", False))


# -- the sparse tensor ---------------------------------------------------------------------------

class SparseTensor(Tensor):
    """A sparse COO, CSR, CSC, BSR or BSC tensor (``layout`` is ``ember.sparse_coo``,
    ``ember.sparse_csr``, ``ember.sparse_csc``, ``ember.sparse_bsr`` or ``ember.sparse_bsc``);
    made by ``ember.sparse_coo_tensor``, ``ember.sparse_csr_tensor``,
    ``ember.sparse_csc_tensor``, ``ember.sparse_bsr_tensor``, ``ember.sparse_bsc_tensor``,
    ``ember.sparse_compressed_tensor``, ``Tensor.to_sparse()``, ``Tensor.to_sparse_csr()``,
    ``to_sparse_csc()``, ``to_sparse_bsr()`` and ``to_sparse_bsc()``. See the module doc."""

    __torch_function__ = disabled_torch_function_impl  # no dispatch: dense ops pay nothing

    # -- autograd identity: the values' -------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self._vals.requires_grad = value

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        self._vals.grad_fn = value

    @property
    def is_leaf(self) -> bool:
        return self._vals.grad_fn is None

    @property
    def grad(self):
        """The gradient: sparse, with this tensor's indices (``None`` before backward); of an
        uncoalesced COO tensor, with its distinct coordinates, sorted (see ``_distinct_grad``)."""
        g = self._vals._grad
        if g is None:
            return None
        if not self._coalesced and self._layout is sparse_coo:
            return self._distinct_grad(g)
        return make_sparse(self._idx, g, self._data.shape, coalesced=self._coalesced,
                           layout=self._layout)

    def _distinct_grad(self, g: Tensor):
        """The gradient of an uncoalesced COO tensor from its values' gradient ``g``: each
        coordinate once, as PyTorch's (flagged uncoalesced, as PyTorch's mostly is). Every
        stored duplicate of a coordinate gets that coordinate's whole gradient (the tensor is
        the sum of the duplicates), so keeping them all would count it once per duplicate;
        the first one's stands for the coordinate."""
        plan = self._coalesce_plan()
        if plan is None:  # no elements
            return make_sparse(self._idx, g, self._data.shape, coalesced=False)
        first = self._cache.get("first")
        if first is None:
            order, seg, _, _ = plan
            if seg is None:
                first = order
            else:
                xp = xp_of(self._device)
                ids = seg._data
                new = xp.empty(ids.shape[0], dtype=bool)
                new[:1] = True
                xp.not_equal(ids[1:], ids[:-1], out=new[1:])
                first = _index_tensor(order._data[new], self._device)
            self._cache["first"] = first
        return make_sparse(plan[3], g.index_select(0, first), self._data.shape, coalesced=False)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals._grad = None
            return
        if not is_sparse(value) or value._data.shape != self._data.shape:
            raise RuntimeError("assigned grad of a sparse tensor must be a sparse tensor of "
                               "the same size")
        self._vals._grad = _sampled(value, self)

    @grad.deleter
    def grad(self) -> None:
        self._vals._grad = None

    def requires_grad_(self, requires_grad: bool = True):
        self._vals.requires_grad_(requires_grad)
        return self

    def detach(self):
        return make_sparse(self._idx, self._vals.detach(), self._data.shape,
                           coalesced=self._coalesced, layout=self._layout)

    def detach_(self):
        self._vals.detach_()
        return self

    def retain_grad(self) -> None:
        self._vals.retain_grad()

    def register_hook(self, hook):
        """A hook on the gradient of the values (a dense ``(nnz, ...)`` tensor)."""
        return self._vals.register_hook(hook)

    # -- metadata ------------------------------------------------------------------------
    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse(self) -> bool:
        return self._layout is sparse_coo  # PyTorch's: True for COO only

    @property
    def is_sparse_csr(self) -> bool:
        return self._layout is sparse_csr

    def sparse_dim(self) -> int:
        # a batched compressed tensor keeps its batch indices in _idx too
        return self._idx.shape[0] if self._layout is sparse_coo else 2

    def dense_dim(self) -> int:
        return self._data.ndim - self._idx.shape[0]

    def _nnz(self) -> int:
        """The number of stored elements (blocks; of each batch, of a batched compressed
        tensor)."""
        if self._idx.shape[0] > 2 and self._layout is not sparse_coo:
            return _compressed().nnz(self)
        return self._idx.shape[1]

    def is_coalesced(self) -> bool:
        self._expect_coo("is_coalesced")
        return self._coalesced

    def _compressed_word(self) -> str:
        return _LAYOUT_WORDS[self._layout].removeprefix("Sparse").upper()

    def _no_is_contiguous(self) -> RuntimeError:
        return RuntimeError(f"Sparse {self._compressed_word()} tensors do not have "
                            "is_contiguous")

    def _no_strides(self) -> RuntimeError:
        return RuntimeError(f"Sparse {self._compressed_word()} tensors do not have strides")

    def is_contiguous(self, *, memory_format=None) -> bool:
        if self._layout is not sparse_coo:
            raise self._no_is_contiguous()
        return False

    def contiguous(self, memory_format=None):
        if self._layout is not sparse_coo:
            raise self._no_is_contiguous()
        raise RuntimeError("unsupported memory format option Contiguous")

    def stride(self, dim=None):
        """PyTorch 2.13's: zeros for a COO tensor; a compressed tensor has none."""
        if self._layout is not sparse_coo:
            raise self._no_strides()
        if dim is None:
            return (0,) * self._data.ndim
        from .ops._promotion import wrap_dim

        wrap_dim(dim, self._data.ndim)
        return 0

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def storage_offset(self) -> int:
        return 0

    def _no_storage(self) -> NotImplementedError:
        impl = "SparseTensorImpl" if self._layout is sparse_coo else "SparseCsrTensorImpl"
        return NotImplementedError(f"Cannot access storage of {impl}")

    def untyped_storage(self):
        raise self._no_storage()

    def storage(self):
        import warnings

        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
        raise self._no_storage()

    # -- PyTorch's errors for the dense shape ops -----------------------------------------
    def reshape(self, *shape):
        if self._layout is not sparse_coo:
            raise self._no_is_contiguous()
        raise RuntimeError("reshape is not implemented for sparse tensors")

    def flatten(self, start_dim=0, end_dim=-1):
        from .ops._promotion import wrap_dim

        n = max(self._data.ndim, 1)
        if self._data.ndim and wrap_dim(start_dim, n) == wrap_dim(end_dim, n):
            return self
        return self.reshape(-1)

    def view(self, *shape):
        raise _no_backend("view", self)

    def expand(self, *sizes):
        raise RuntimeError(f"expand is unsupported for {_LAYOUT_WORDS[self._layout]} tensors")

    def squeeze(self, dim=None):
        if self._layout is not sparse_coo:
            raise self._no_strides()
        raise _no_backend("as_strided", self)

    def narrow(self, dim, start, length):
        if self._layout is not sparse_coo:
            raise self._no_strides()
        raise _no_backend("as_strided", self)

    @property
    def nbytes(self) -> int:
        raise RuntimeError("nbytes is not defined for sparse tensors.  If you want the size of "
                           "the constituent tensors, add the nbytes of the indices and values.  "
                           "If you want the size of the  equivalent dense tensor, multiply "
                           "numel() by element_size()")

    def numpy(self, *, force: bool = False):
        raise TypeError(f"can't convert {_LAYOUT_WORDS[self._layout]} layout tensor to numpy. "
                        "Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self.to_dense().item()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None):
        """The ``p``-norm of all the elements (``'fro'``: 2), as PyTorch's ``norm`` of a COO
        tensor: a full reduction only, over the coalesced values."""
        if self._layout is not sparse_coo:
            raise _no_backend("norm.out", self)
        if dim is not None:
            dims = [dim] if isinstance(dim, int) else list(dim)
            from .ops._promotion import wrap_dim

            if sorted({wrap_dim(d, self._data.ndim) for d in dims}) != \
                    list(range(self._data.ndim)):
                raise RuntimeError("norm_sparse currently only supports full reductions, so "
                                   "'dim' must either be empty or contain all dimensions of "
                                   "the input")
        if self._data.dtype.kind not in "fc":
            raise RuntimeError(f"norm(): input dtype should be either floating point or "
                               f"complex. Got {_dtype.scalar_type_name(self._data.dtype)} "
                               "instead.")
        from .linalg import vector_norm

        order = 2 if p is None or p == "fro" else p
        out = vector_norm(self.coalesce()._vals, order, dtype=dtype)
        if keepdim:
            out = out.reshape((1,) * self._data.ndim)
        return out

    def copy_(self, src, non_blocking: bool = False):
        """Take ``src``'s size, indices and values (cast to this dtype), as PyTorch's
        ``copy_`` between sparse tensors."""
        if not is_sparse(src):
            raise RuntimeError(f"copy_() between dense and sparse Tensors is not implemented! "
                               f"Found self type = {self.type()} and src type = "
                               f"{src.type()}".replace("ember.", "torch."))
        if src._layout is not self._layout:
            src = src.to_sparse() if self._layout is sparse_coo else _as_layout(
                src.to_sparse_coo(), self)
        if src._data.shape != self._data.shape and self._layout is sparse_coo:
            from .ops.sparse_ops import resize_as_sparse_

            resize_as_sparse_(self, src)  # PyTorch's checks (no shrinking a non-empty tensor)
        vals = src._vals.detach().clone()
        if vals.dtype is not self.dtype:
            vals = vals.to(self.dtype)
        if vals._device is not self._device:
            vals = vals.to(self._device)
        idx = _index_tensor(src._idx, src._device).to(self._device)._data.copy()
        self._adopt(make_sparse(idx, vals, src._data.shape, coalesced=src._coalesced,
                                layout=self._layout))
        return self

    def fill_(self, value):
        """Every stored value set to ``value`` (the compressed layouts, as PyTorch's); COO has
        no kernel."""
        if self._layout is sparse_coo:
            raise _no_backend("fill_.Scalar", self)
        self._vals.fill_(value)
        self._bump_version()
        return self

    def _expect_coo(self, name: str) -> None:
        if self._layout is not sparse_coo:
            raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got "
                               f"{_LAYOUT_WORDS[self._layout]}")

    def _expect_csr(self, name: str) -> None:
        if self._layout is not sparse_csr and self._layout is not sparse_bsr:
            raise RuntimeError(f"{name} expected sparse row compressed tensor layout but got "
                               f"{_LAYOUT_WORDS[self._layout]}")

    def _expect_csc(self, name: str) -> None:
        if self._layout is not sparse_csc and self._layout is not sparse_bsc:
            raise RuntimeError(f"{name} expected sparse column compressed tensor layout but "
                               f"got {_LAYOUT_WORDS[self._layout]}")

    # -- parts ---------------------------------------------------------------------------
    def indices(self) -> Tensor:
        """The coordinates ``(sparse_dim, nnz)`` of a coalesced COO tensor."""
        self._expect_coo("indices")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _index_tensor(self._idx, self._device)

    def values(self) -> Tensor:
        """The stored values ``(nnz, *dense_shape)`` (differentiable; of a compressed tensor
        ``(*batch, nnz, *block, *dense_shape)``); COO: coalesced only."""
        if self._layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        if self._idx.shape[0] > 2 and self._layout is not sparse_coo:  # (*batch, nnz, ...)
            return _compressed().values(self)
        return self._vals

    def _indices(self) -> Tensor:
        """The coordinates ``(sparse_dim, nnz)``, coalesced or not (COO)."""
        if self._layout is not sparse_coo:
            raise _no_backend("_indices", self)
        return _index_tensor(self._idx, self._device)

    def _values(self) -> Tensor:
        """The stored values, outside the graph (COO)."""
        if self._layout is not sparse_coo:
            raise _no_backend("_values", self)
        return self._vals.detach()

    def crow_indices(self) -> Tensor:
        """The compressed row pointers ``(*batch, nrows + 1)`` of a CSR tensor (of block rows,
        of a BSR tensor)."""
        self._expect_csr("crow_indices")
        return _compressed().compressed_indices(self)

    def col_indices(self) -> Tensor:
        """The column ``(*batch, nnz)`` of each stored element of a CSR tensor (block column
        of each block, of a BSR tensor)."""
        self._expect_csr("col_indices")
        return _compressed().plain_indices(self)

    def ccol_indices(self) -> Tensor:
        """The compressed column pointers ``(*batch, ncols + 1)`` of a CSC tensor (of block
        columns, of a BSC tensor)."""
        self._expect_csc("ccol_indices")
        return _compressed().compressed_indices(self)

    def row_indices(self) -> Tensor:
        """The row ``(*batch, nnz)`` of each stored element of a CSC tensor (block row of
        each block, of a BSC tensor)."""
        self._expect_csc("row_indices")
        return _compressed().plain_indices(self)

    def _compressed_parts(self) -> tuple:
        """``(compressed indices, plain indices)`` of a CSR, CSC, BSR or BSC tensor."""
        if self._layout in _BY_COLUMN:
            return self.ccol_indices(), self.row_indices()
        return self.crow_indices(), self.col_indices()

    # -- conversions ---------------------------------------------------------------------
    def coalesce(self):
        """The COO tensor with sorted, unique coordinates (duplicates summed); ``self`` if it
        is coalesced already."""
        self._expect_coo("coalesce")
        if self._coalesced:
            return self
        plan = self._coalesce_plan()
        if plan is None:
            return make_sparse(self._idx, self._vals, self._data.shape, coalesced=True)
        order, seg, n_unique, idx = plan
        vals = self._vals.index_select(0, order)
        if seg is not None:
            from ._factory import zeros

            acc = zeros((n_unique,) + tuple(vals._data.shape[1:]), dtype=vals.dtype,
                        device=self._device)
            vals = acc.index_add(0, seg, vals)
        return make_sparse(idx, _named(vals, "CoalesceBackward0"), self._data.shape,
                           coalesced=True)

    def _coalesce_plan(self):
        """``(order, segment ids or None, unique count, coalesced indices)``, cached; None
        when there is nothing to do (no elements)."""
        if "coalesce" in self._cache:
            return self._cache["coalesce"]
        idx = self._idx
        nnz = idx.shape[1]
        plan = None
        if nnz:
            xp = xp_of(self._device)
            lin = _linear_index(idx, self._data.shape[:idx.shape[0]], xp)
            order = xp.argsort(lin, kind="stable")
            lin = lin[order]
            new = xp.empty(nnz, dtype=bool)
            new[:1] = True
            xp.not_equal(lin[1:], lin[:-1], out=new[1:])
            first = order[new]
            n_unique = int(first.shape[0])
            seg = None
            if n_unique != nnz:
                seg = _index_tensor(xp.cumsum(new) - 1, self._device)
            plan = (_index_tensor(order, self._device), seg, n_unique, idx[:, first])
        self._cache["coalesce"] = plan
        return plan

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor (duplicates summed); differentiable in the values. ``dtype`` is
        PyTorch's error (it has no sparse kernel for it)."""
        from ._factory import zeros

        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by " + {
                sparse_coo: "sparse_to_dense", sparse_csr: "sparse_csr_to_dense",
                sparse_csc: "sparse_csc_to_dense", sparse_bsr: "sparse_bsr_to_dense",
                sparse_bsc: "sparse_bsc_to_dense"}[self._layout])
        if self._layout in _BLOCK:
            return _compressed().to_coo(self).to_dense()
        shape = self._data.shape
        sd = self._idx.shape[0]
        vals = self._vals
        dense_shape = tuple(vals._data.shape[1:])
        xp = xp_of(self._device)
        lin = _index_tensor(_linear_index(self._idx, shape[:sd], xp), self._device)
        flat = zeros((math.prod(shape[:sd]),) + dense_shape, dtype=vals.dtype,
                     device=self._device)
        return _named(flat.index_add(0, lin, vals).reshape(shape), "ToDenseBackward0")

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """This tensor in ``layout`` (COO by default; ``blocksize`` for ``ember.sparse_bsr``
        and ``ember.sparse_bsc``): itself when it is already."""
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument != self.sparse_dim() is not supported")
        if layout is strided and blocksize is None and dense_dim is None:
            return self.to_dense()  # PyTorch's: to the strided layout
        target = sparse_coo if layout is None else layout
        fn = "sparse_coo_to_sparse" if self._layout is sparse_coo else \
            "sparse_compressed_to_sparse"
        src, dst = _LAYOUT_WORDS[self._layout], _LAYOUT_WORDS.get(target, target)
        if dense_dim is not None:
            word = "to_sparse" if target is self._layout else fn
            raise RuntimeError(f"{word}: conversion from {src} to {dst} with dense_dim argument "
                               "given is not supported")
        if target in _BLOCK and blocksize is None and target is not self._layout:
            raise RuntimeError(f"{fn}: conversion from {src} to {dst} without blocksize "
                               "argument given is not supported")
        if target not in _BLOCK and blocksize is not None:
            raise RuntimeError(f"{fn}: conversion from {src} to {dst} with blocksize argument "
                               "given is not supported")
        if target is sparse_coo:
            return self.to_sparse_coo()
        if target not in _LAYOUT_WORDS:
            raise RuntimeError(f"to_sparse: expected a sparse layout, got {layout}")
        if target in _BLOCK and blocksize is None:
            return self
        return _compressed().convert(self, target, blocksize, None, method=False)

    def to_sparse_coo(self):
        """This tensor as a COO tensor (a compressed tensor's batch dimensions sparse, its
        dense ones dense; a CSC tensor's in its column-major order: uncoalesced, as
        PyTorch's)."""
        if self._layout is sparse_coo:
            return self
        return _compressed().to_coo(self)

    def to_sparse_csr(self, dense_dim=None):
        """This tensor as a CSR tensor (COO: of two sparse dimensions; CSC: batched or
        hybrid too); ``dense_dim`` is for dense tensors (PyTorch's error here)."""
        return _compressed().convert(self, sparse_csr, None, dense_dim)

    def to_sparse_csc(self, dense_dim=None):
        """This tensor as a CSC tensor (its elements sorted column by column, batch by
        batch); differentiable in the values."""
        return _compressed().convert(self, sparse_csc, None, dense_dim)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        """This tensor as a BSR tensor of ``(R, C)`` blocks (an int: square blocks), as
        ``Tensor.to_sparse_bsr``; differentiable in the values."""
        return _compressed().convert(self, sparse_bsr, blocksize, dense_dim)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        """This tensor as a BSC tensor of ``(R, C)`` blocks (``Tensor.to_sparse_bsc``)."""
        return _compressed().convert(self, sparse_bsc, blocksize, dense_dim)

    # -- copies and moves ----------------------------------------------------------------
    def clone(self, *, memory_format=None):
        return make_sparse(self._idx.copy(), self._vals.clone(), self._data.shape,
                           coalesced=self._coalesced, layout=self._layout)

    def to(self, *args, memory_format=None, **kwargs):
        """This tensor on another device or with another dtype (its indices and values
        moved); ``self`` when nothing changes."""
        from .ops._casts import cast_to

        dev, dt, copy = _parse_to(self, *args, **kwargs)
        values = cast_to(self._vals, dev, dt, copy)
        if values is self._vals:
            return self
        idx = self._idx
        if values._device is not self._device:
            idx = cast_to(_index_tensor(idx, self._device), values._device, None, False)._data
        elif copy:
            idx = idx.copy()
        return make_sparse(idx, values, self._data.shape, coalesced=self._coalesced,
                           layout=self._layout)

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            name = self.type_name()
            dev = "" if self._device.type == "cpu" else f"{self._device.type}."
            return f"ember.{dev}sparse.{name}"
        return super().type(dtype, non_blocking)

    def __reduce_ex__(self, protocol):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the pickle protocol; call .detach() first.")
        idx = _index_tensor(self._idx, self._device)._host()
        return (_rebuild_sparse, (idx, self._vals._host(), self._data.shape,
                                  self._layout._name, str(self._device), self._coalesced,
                                  self.requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        if id(self) not in memo:
            out = make_sparse(self._idx.copy(), self._vals.__deepcopy__({}),
                              self._data.shape, coalesced=self._coalesced, layout=self._layout)
            memo[id(self)] = out
        return memo[id(self)]

    # -- shape ---------------------------------------------------------------------------
    def t(self):
        """The transpose of a 2-D sparse tensor (its two index rows swapped; a CSR tensor's
        is CSC and a CSC tensor's CSR, as in PyTorch)."""
        if self._data.ndim > 2 and self._layout is not sparse_coo:  # batched or hybrid
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self._data.ndim}D")
        if self._data.ndim > 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               "dense dimensions")
        if self._data.ndim < 2:
            return self
        return self.transpose(0, 1)

    def t_(self):
        """The transpose in place (COO, as ``t``: indices swapped)."""
        if self._layout is not sparse_coo:
            raise RuntimeError("torch.transpose_: in-place transposition is not supported for "
                               f"{_LAYOUT_WORDS[self._layout]} layout")
        out = self.t()
        if out is not self:
            self._adopt(out)
        return self

    def _adopt(self, other) -> None:
        """Take ``other``'s size, indices and values (an in-place op's result), in place."""
        self._data = other._data
        self._idx = other._idx
        self._vals = other._vals
        self._coalesced = other._coalesced
        self._cache = {}
        self._bump_version()

    def transpose(self, dim0: int, dim1: int):
        """``self`` with dims ``dim0`` and ``dim1`` swapped: COO, two sparse or two dense
        dims; compressed, two batch dims (the same layout) or the two sparse ones (CSR <->
        CSC, BSR <-> BSC, as PyTorch's: ``ember.sparse._compressed.transpose``)."""
        from .ops._promotion import wrap_dim

        n = self._data.ndim
        d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
        if self._layout is not sparse_coo:
            return _compressed().transpose(self, d0, d1)
        sd = self._idx.shape[0]
        if (d0 < sd) != (d1 < sd):
            raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got "
                               f"sparse_dim: {sd}, d0: {d0}, d1: {d1}")
        shape = list(self._data.shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        if d0 == d1:
            return self
        if d0 >= sd:  # two dense dims: the values' own
            values = self._vals.transpose(d0 - sd + 1, d1 - sd + 1)
            return make_sparse(self._idx, values, tuple(shape), coalesced=self._coalesced)
        perm = list(range(sd))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        idx = self._idx[perm]
        return make_sparse(idx, self._vals, tuple(shape),
                           coalesced=self._coalesced and self._idx.shape[1] < 2)

    def permute(self, *dims):
        """A COO tensor's dims reordered: the sparse dims among themselves (its index rows)
        and the dense dims among themselves (its values'), as PyTorch's; the result is not
        marked coalesced. Compressed tensors have no ``permute`` in PyTorch."""
        from .ops._promotion import wrap_dim

        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        n = self._data.ndim
        if self._layout is not sparse_coo:
            raise _no_backend("as_strided", self)
        if len(dims) != n:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input "
                               f"does not match the length of the desired ordering of "
                               f"dimensions i.e. input.dim() = {n} is not equal to len(dims) = "
                               f"{len(dims)}")
        dims = tuple(wrap_dim(d, n) for d in dims)
        if len(set(dims)) != n:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        sd = self._idx.shape[0]
        if any((d < sd) != (i < sd) for i, d in enumerate(dims)):
            raise RuntimeError("permute(sparse_coo): transpositions between sparse and dense "
                               "dimensions are not allowed.Only transpositions within sparse "
                               "and dense dimensions are supported.")
        if dims == tuple(range(n)):
            return self
        shape = tuple(self._data.shape[d] for d in dims)
        values = self._vals
        if n > sd:
            values = values.permute((0, *(d - sd + 1 for d in dims[sd:])))
        return make_sparse(self._idx[list(dims[:sd])], values, shape, coalesced=False)

    def transpose_(self, dim0: int, dim1: int):
        """PyTorch's error for a compressed tensor (no in-place transposes)."""
        if self._layout is not sparse_coo:
            raise RuntimeError("torch.transpose_: in-place transposition is not supported for "
                               f"{_LAYOUT_WORDS[self._layout]} layout")
        return super().transpose_(dim0, dim1)

    # -- reductions and products -----------------------------------------------------------
    def sum(self, dim=None, keepdim: bool = False, *, dtype=None):
        """The sum: a dense 0-d tensor over all elements; sparse over some sparse dims, dense
        when all sparse dims are summed (``ember.sparse.sum``)."""
        return sparse_sum(self, dim, keepdim, dtype)

    def mm(self, mat2):
        return sparse_mm(self, mat2, "mm")

    def matmul(self, other):
        return sparse_product(self, other, "matmul")

    def __matmul__(self, other):
        return sparse_product(self, other, "matmul")

    def __rmatmul__(self, other):
        return sparse_product(other, self, "matmul")

    def mv(self, vec):
        """``self @ vec`` for a 2-D sparse ``self`` and a dense vector (``torch.mv``)."""
        if not isinstance(vec, Tensor):
            raise TypeError(f"mv(): argument 'vec' (position 1) must be Tensor, not "
                            f"{type(vec).__name__}")
        if self._data.ndim != 2 or vec._data.ndim != 1 or is_sparse(vec):
            raise RuntimeError(f"vector + matrix @ vector expected, got 1, "
                               f"{self._data.ndim}, {vec._data.ndim}")
        if vec._data.shape[0] != self._data.shape[1]:
            raise RuntimeError("mv: expected self.size(-1) == vec.size(-1)")
        return sparse_mm(self, vec.unsqueeze(1), "mm").squeeze(1)

    def smm(self, mat2):
        """``self @ mat2`` (dense ``mat2``) as a sparse COO tensor: as PyTorch's,
        ``sspaddmm`` of an empty input (every row of ``self`` that holds an element gives its
        whole row of the product, zeros included)."""
        from .ops.sparse_ops import sspaddmm

        empty = make_sparse(xp_of(self._device).zeros((2, 0), dtype=np.int64),
                            _make(xp_of(self._device).zeros(0, dtype=self._vals._data.dtype),
                                  self._device),
                            (self._data.shape[0], mat2.shape[-1]), coalesced=True)
        return sspaddmm(empty, self, mat2, beta=0)

    # -- arithmetic ----------------------------------------------------------------------
    def __add__(self, other):
        return sparse_add(self, other)

    def add(self, other, *, alpha=1):
        """``self + alpha * other`` for a sparse ``other`` (a dense one is PyTorch's error)."""
        return sparse_add(self, other, alpha)

    def __radd__(self, other):
        return dense_add_sparse(other, self, 1)

    def __sub__(self, other):
        if is_sparse(other):
            if self._data.dtype.kind == "b" and other._data.dtype.kind == "b":
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                                   "supported. Use the `^` or `logical_xor()` operator instead.")
            return sparse_add(self, -other)
        return sparse_add(self, other)  # raises PyTorch's error for a dense operand

    sub = __sub__

    def __rsub__(self, other):
        return dense_add_sparse(other, self, -1)

    def __mul__(self, other):
        return sparse_mul(self, other)

    __rmul__ = mul = __mul__

    def __truediv__(self, other):
        if isinstance(other, Tensor) and (is_sparse(other) or other._data.ndim):
            raise _sparse_divisor(other)
        return self._with_values(self._vals / other)

    def div(self, other, *, rounding_mode=None):
        """``self / other`` for a number or 0-d divisor; ``rounding_mode`` ``'floor'`` or
        ``'trunc'`` coalesces first, as PyTorch's."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self.floor_divide(other)
        if rounding_mode != "trunc":
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or "
                               f"'floor' but found '{rounding_mode}'")
        if isinstance(other, Tensor) and (is_sparse(other) or other._data.ndim):
            raise _sparse_divisor(other)
        from .ops.arith import div

        c = self.coalesce() if self._layout is sparse_coo else self
        return c._with_values(div(c._vals, other, rounding_mode="trunc"))

    divide = true_divide = div

    def __rtruediv__(self, other):
        if isinstance(other, Tensor):  # a dense tensor over a sparse one
            raise _sparse_divisor(self)
        raise _no_backend("reciprocal", self)

    def floor_divide(self, other):
        """``self // other`` for a number or 0-d divisor (COO, coalesced first), as
        PyTorch's."""
        if self._layout is not sparse_coo:
            raise _no_backend("floor_divide", self)
        if isinstance(other, Tensor) and (is_sparse(other) or other._data.ndim):
            raise _sparse_divisor(other, floor=True)
        c = self.coalesce()
        return c._with_values(c._vals // other)

    __floordiv__ = floor_divide

    def pow(self, exponent):
        """``self ** exponent`` for a number ``exponent`` other than 0 (COO, coalesced first),
        as PyTorch's sparse ``pow``."""
        if self._layout is not sparse_coo:
            raise RuntimeError(f"unsupported tensor layout: {_LAYOUT_WORDS[self._layout]}")
        if isinstance(exponent, Tensor):
            raise _no_backend("pow.Tensor_Tensor", self)
        if exponent == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense")
        c = self.coalesce()
        vals = c._vals.pow(exponent)
        if vals.dtype is not self.dtype:  # PyTorch's kernel writes into the input's dtype
            _check_cast(vals.dtype, self.dtype)
            vals = vals.to(self.dtype)
        return c._with_values(vals)

    __pow__ = pow

    def pow_(self, exponent):
        raise _no_backend("pow_.Scalar", self)

    # -- in place: the out-of-place result, taken over (dtype kept) --------------------------
    def _inplace(self, result, op: str):
        vals = self._vals
        if GRAD.enabled and vals.requires_grad and vals.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if result.dtype is not self.dtype:
            if not _dtype.can_cast(result.dtype, self.dtype):
                raise RuntimeError(
                    f"dtype of values ({_dtype.scalar_type_name(result._data.dtype)}) must "
                    f"match dtype of sparse tensor ({_dtype.scalar_type_name(self._data.dtype)})")
            result = result._with_values(result._vals.to(self.dtype))
        if result._layout is not self._layout:
            result = _as_layout(result.to_sparse_coo(), self)
        self._adopt(result)
        return self

    def mul_(self, other):
        out = self._inplace(sparse_mul(self, other), "mul_")
        if not is_sparse(other) and self._layout is sparse_coo:
            self._coalesced = False  # PyTorch's in-place kernel drops the flag
        return out

    def div_(self, other):
        if self._layout is not sparse_coo and self._layout is not sparse_csr:
            raise RuntimeError(f"unsupported tensor layout: {_LAYOUT_WORDS[self._layout]}")
        r = self / other
        if r.dtype is not self.dtype:
            _check_cast(r.dtype, self.dtype)
        return self._inplace(r, "div_")

    def add_(self, other, *, alpha=1):
        return self._inplace(sparse_add(self, other, alpha), "add_")

    def sub_(self, other, *, alpha=1):
        if is_sparse(other):
            return self._inplace(sparse_add(self, other, -alpha), "sub_")
        return self._inplace(sparse_add(self, other), "sub_")  # PyTorch's error

    def floor_divide_(self, other):
        return self._inplace(self.floor_divide(other), "floor_divide_")

    def __imul__(self, other):
        return self.mul_(other)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __neg__(self):
        return self._with_values(-self._vals)

    neg = __neg__

    def zero_(self):
        """Remove every stored element, in place (PyTorch's ``zero_`` of a sparse tensor of
        any layout: the shape (and block size) stays, ``nnz`` becomes 0)."""
        vals = self._vals
        self._idx = self._idx[:, :0].copy()
        self._vals = _make(vals._data[:0].copy(), vals._device)
        self._coalesced = True
        self._cache = {}
        self._bump_version()
        return self

    def _with_values(self, values: Tensor):
        return make_sparse(self._idx, values, self._data.shape, coalesced=self._coalesced,
                           layout=self._layout)

    # -- indexing (ember.sparse._indexing) -------------------------------------------------
    def __getitem__(self, key):
        """``s[i]``, ``s[i, j]``, ``s[..., i]``, ``s[None]``, ``s[:, i]``: integers select,
        ``None`` inserts a dimension; other slices and tensor indices are PyTorch's errors."""
        return _indexing().getitem(self, key)

    def select(self, dim, index):
        """The elements at ``index`` along ``dim`` (COO; CSR and CSC give COO), that dimension
        removed; dense when no sparse dimension is left."""
        return _indexing().select(self, dim, index)

    def index_select(self, dim, index):
        """The slices at the positions ``index`` (1-D int64) along ``dim`` (COO)."""
        return _indexing().index_select(self, dim, index)

    def narrow_copy(self, dim, start, length):
        """The elements with ``start <= i < start + length`` along ``dim``, shifted (COO)."""
        return _indexing().narrow_copy(self, dim, start, length)

    def unsqueeze(self, dim):
        """A size-one dimension inserted at ``dim`` (COO)."""
        return _indexing().unsqueeze(self, dim)

    # -- in-place resizes (COO: ember.ops.sparse_ops; compressed: ember.sparse._resize) ------
    def resize_(self, *size, memory_format=None):
        """Resize a CSR or CSC tensor in place (PyTorch's ``resize_`` of a compressed tensor:
        see ``ember.sparse._resize``); COO tensors are PyTorch's error (use
        ``sparse_resize_``)."""
        if len(size) == 1 and not isinstance(size[0], int):
            size = tuple(size[0])
        if self._layout is sparse_coo:
            raise _no_backend("resize_", self)
        from .sparse import _resize

        return _resize.resize_compressed_(self, size)

    def resize_as_(self, the_template, *, memory_format=None):
        """``resize_as_sparse_`` for two COO tensors, else ``self.resize_(the_template.shape)``
        (PyTorch's rule)."""
        if self._layout is sparse_coo and is_sparse(the_template) and \
                the_template._layout is sparse_coo:
            from .ops.sparse_ops import resize_as_sparse_

            return resize_as_sparse_(self, the_template)
        return self.resize_(tuple(the_template.shape))

    def __repr__(self) -> str:
        return sparse_repr(self)


def _inplace_unary(name: str):
    """The method ``SparseTensor.<name>`` (``sin_``): the op in place on the stored values."""

    def method(self, *args, **kwargs):
        from .sparse import _pointwise

        return _pointwise.unary_(self, name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``{name[:-1]}`` in place on the stored values, as PyTorch's sparse "
                      f"``{name}`` (a COO tensor must be coalesced).")
    return method


for _name in _INPLACE_UNARY:
    setattr(SparseTensor, _name, _inplace_unary(_name))
for _name, _target in _INPLACE_ALIASES.items():
    setattr(SparseTensor, _name, getattr(SparseTensor, _target))
del _name, _target


def _rebuild_sparse(indices, values, shape, layout_name, device, coalesced, requires_grad):
    from ._device import resolve_device
    from ._factory import place

    dev = resolve_device(device)
    # viewed as np.dtype(name): the canonical dtype object (an unpickled array's is an equal
    # copy, which ops that compare dtypes by identity refuse)
    vals = place(np.array(values, copy=True).view(np.dtype(values.dtype.name)), dev)
    idx = place(np.array(indices, copy=True).view(np.dtype(indices.dtype.name)), dev)._data
    layout = {"sparse_csr": sparse_csr, "sparse_csc": sparse_csc, "sparse_bsr": sparse_bsr,
              "sparse_bsc": sparse_bsc}.get(layout_name, sparse_coo)
    out = make_sparse(idx, vals, tuple(shape), coalesced=coalesced, layout=layout)
    if requires_grad:
        vals.requires_grad_(True)
    return out


def _sampled(s: SparseTensor, like: SparseTensor) -> Tensor:
    """The values of ``s`` at the elements (blocks) of ``like`` (zero where ``s`` has none)."""
    return _compressed().gather(s.to_dense(), like)


# -- the operations --------------------------------------------------------------------------

def _check_dims(s: SparseTensor, name: str) -> None:
    if s._data.ndim != 2:
        raise RuntimeError(f"{name}: matrices expected, got {s._data.ndim}D tensor")
    if s.dense_dim():
        raise RuntimeError(f"{name}: matrices expected, got 1D tensor")


def row_plan(s: SparseTensor) -> tuple:
    """``(row plan, values in its order)`` of a 2-D sparse tensor. An uncoalesced COO tensor
    is coalesced first (its values, differentiably, every time; the index work is cached)."""
    if s._layout is sparse_csc:  # column-major: the values permuted into row order
        cached = s._cache.get("rows")
        if cached is None:
            xp = xp_of(s._device)
            order = xp.argsort(s._idx[0], kind="stable")
            plan = _RowPlan(s._idx[0][order], s._idx[1][order], s._data.shape, s._device)
            cached = s._cache["rows"] = (plan, _index_tensor(order, s._device))
        plan, order = cached
        return plan, s._vals.index_select(0, order)
    c = s if (s._coalesced or s._layout is sparse_csr) else s.coalesce()
    plan = s._cache.get("rows")
    if plan is None:
        plan = s._cache["rows"] = _RowPlan(c._idx[0], c._idx[1], c._data.shape, c._device)
    return plan, c._vals


def _shapes_error(a: tuple, b: tuple) -> RuntimeError:
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and "
                        f"{b[0]}x{b[1]})")


def _mm_dim_error(ndim: int, dim: int):
    """PyTorch's error for a dense operand of ``mm`` with a sparse one that is not a matrix
    (None for a tensor of more dimensions: the caller's "matrices expected")."""
    if ndim == 0:
        return IndexError("Dimension specified as -1 but tensor has no dimensions")
    if ndim == 1:
        return IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but "
                          f"got {dim})")
    return None


def _check_mm_operands(s: SparseTensor, d: Tensor, name: str) -> None:
    check_same_device(s, d)
    if d._data.shape[0] != s._data.shape[1]:
        if s._layout is not sparse_coo:
            raise _shapes_error(s._data.shape, d._data.shape)
        raise RuntimeError(f"{name}: Argument #3 (dense): Expected dim 0 size "
                           f"{s._data.shape[1]}, got {d._data.shape[0]}")
    if d._data.dtype != s._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(s._data.dtype)} "
                           f"but found {_dtype.scalar_type_name(d._data.dtype)}")


#: the dtypes of PyTorch's sparse matrix-product kernels (floating and complex, no half)
_MATMUL_NP = frozenset((np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                        np.dtype(np.complex128)))


def _check_sparse_sparse_mm(a: SparseTensor, b: SparseTensor) -> None:
    """PyTorch's checks of a sparse @ sparse product, in its order: COO @ COO as
    ``sparse_sparse_matmul_cpu``, CSR @ CSR as ``addmm_out_sparse_csr``; a mix of layouts has
    no CPU kernel."""
    if (a._layout is not b._layout and sparse_coo in (a._layout, b._layout)
            and a._layout not in _BLOCK):  # block @ COO: an Ember extension (test_sparse_blocks)
        la, lb = _LAYOUT_WORDS[a._layout], _LAYOUT_WORDS[b._layout]
        raise RuntimeError(f"addmm: computation on CPU is not implemented for {la} + {la} @ "
                           f"{lb}")
    if a._layout is sparse_coo:
        for name, t in (("mat1_", a), ("mat2_", b)):
            if t._data.ndim != 2:
                raise RuntimeError(f"Expected {name}.dim() == 2 to be true, but got false.  "
                                   "(Could this error message be improved?  If so, please "
                                   "report an enhancement request to PyTorch.)")
        for t in (a, b):
            if t._vals._data.ndim > 1:
                raise RuntimeError(f"sparse_sparse_matmul_cpu: scalar values expected, got "
                                   f"{t._vals._data.ndim - 1}D values")
        if a._data.shape[1] != b._data.shape[0]:
            raise _shapes_error(a._data.shape, b._data.shape)
        if a._data.dtype != b._data.dtype:
            raise RuntimeError(f"mat1 dtype {_dtype.scalar_type_name(a._data.dtype)} does not "
                               f"match mat2 dtype {_dtype.scalar_type_name(b._data.dtype)}")
        if a._data.dtype not in _MATMUL_NP:
            raise NotImplementedError(f'"sparse_matmul" not implemented for '
                                      f"'{_dtype.scalar_type_name(a._data.dtype)}'")
    elif a._layout is sparse_csr and b._layout is sparse_csr and a._data.ndim == 2 == \
            b._data.ndim and a._data.shape[1] == b._data.shape[0]:
        if a._data.dtype != b._data.dtype:
            raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(b._data.dtype)} "
                               f"but found {_dtype.scalar_type_name(a._data.dtype)}")
        if a._data.dtype not in _MATMUL_NP:
            raise NotImplementedError(f'"addmm_out_sparse_csr_impl_mkl_sparse" not implemented '
                                      f"for '{_dtype.scalar_type_name(a._data.dtype)}'")


def sparse_mm(s: SparseTensor, other, name: str = "mm", node_cls=MmBackward0) -> Tensor:
    """``s @ other``: dense for a dense ``other`` (a matrix, or a vector for ``matmul``),
    sparse for a sparse one."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if s._layout is not sparse_coo and s._data.ndim > 2:  # batched or hybrid
        return _batched().matmul(s, other, name)
    if name != "matmul" and not is_sparse(other) and other._data.ndim < 2:
        raise _mm_dim_error(other._data.ndim, 1)
    if is_sparse(other):
        _check_sparse_sparse_mm(s, other)
    elif s._layout is sparse_csr and s._data.dtype not in _MATMUL_NP:
        raise NotImplementedError(f'"addmm_out_sparse_csr_impl_mkl" not implemented for '
                                  f"'{_dtype.scalar_type_name(s._data.dtype)}'")
    _check_dims(s, "addmm")
    if s._layout in _BLOCK and is_sparse(other):
        s = s.to_sparse_coo()
    if is_sparse(other):
        _check_dims(other, "addmm")
        if other._data.shape[0] != s._data.shape[1]:
            raise _shapes_error(s._data.shape, other._data.shape)
        dense = other.to_dense()
        _check_mm_operands(s, dense, "addmm")
        plan, values = row_plan(s)
        out = spmm_plan(plan, values, dense, node_cls).to_sparse()
        if s._layout in _COMPRESSED_PLAIN and other._layout in _COMPRESSED_PLAIN:
            return out.to_sparse_csr()  # CSR or CSC operands: a CSR product, as PyTorch's
        return out
    vector = other._data.ndim == 1 and name == "matmul"
    d = other.unsqueeze(1) if vector else other
    if d._data.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {d._data.ndim}D tensor")
    if s._layout in _BLOCK:
        check_same_device(s, d)
        if d._data.shape[0] != s._data.shape[1]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s._data.shape[0]}x"
                               f"{s._data.shape[1]} and {d._data.shape[0]}x{d._data.shape[1]})")
        _check_mm_operands(s, d, "addmm")
        out = _blocks().block_mm(s, d)
        return out.squeeze(1) if vector else out
    _check_mm_operands(s, d, "addmm")
    plan, values = row_plan(s)
    out = spmm_plan(plan, values, d, node_cls)
    return out.squeeze(1) if vector else out


def _bmm_backward(node, grad):
    """Gradients of a sparse ``bmm`` for ``(values, mat2)``: the 2-D product's, over the
    block-diagonal pattern of the batches (``sparse_bmm``)."""
    values, dense = node.saved
    b, k, n = dense._data.shape
    gv, gd = _spmm_grads(node.ctx, values, dense.reshape(b * k, n), grad.reshape(-1, n),
                         node.needs_grad(0), node.needs_grad(1))
    return gv, None if gd is None else gd.reshape(b, k, n)


SparseBmmBackward0 = make_node_class("BmmBackward0", _bmm_backward)

#: the dtypes PyTorch's ``bmm_sparse_dense`` CPU kernel has no case for
_NO_BMM_NP = frozenset((np.dtype(np.bool_), np.dtype(np.float16), _dtype.BFLOAT16_NP))


def sparse_bmm(input, mat2, out_dtype=None) -> Tensor:
    """``ember.bmm`` with a sparse operand (the hook in ``ops/linalg.py``): a 3-D COO ``input``
    of three sparse dimensions times a dense ``(B, K, N)`` ``mat2``, dense ``(B, M, N)``, as
    PyTorch's ``bmm_sparse``, with its checks in its order; differentiable in ``input``'s
    values and ``mat2``. The batches are one 2-D product over a block-diagonal pattern
    (row ``b * M + i``, column ``b * K + k``), so one segment sum serves them all."""
    for pos, (arg, t) in enumerate((("input", input), ("mat2", mat2)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"bmm(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    s = input if is_sparse(input) else mat2
    if out_dtype is not None:
        raise _no_backend("bmm.dtype", s)
    if s._layout is not sparse_coo:  # PyTorch's dense checks, then no compressed kernel
        from .ops.linalg import _check_bmm

        _check_bmm(input._data, mat2._data)
        raise _no_backend("bmm.out", s)
    if is_sparse(mat2):
        raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
    sd = s._idx.shape[0]
    if s._data.ndim != sd:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 0 dense dims, but has "
                           f"{s._data.ndim - sd}")
    if sd != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 3 sparse dims, but has {sd}")
    if mat2._data.ndim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'mat2' must have 3 dims, but has "
                           f"{mat2._data.ndim}")
    nb, m, k = s._data.shape
    if mat2._data.shape[0] != nb:
        raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
    if mat2._data.shape[1] != k:
        raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
    check_same_device(s, mat2)
    if mat2._data.dtype != s._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(s._data.dtype)} "
                           f"but found {_dtype.scalar_type_name(mat2._data.dtype)}")
    if s._data.dtype in _NO_BMM_NP:
        raise NotImplementedError(f'"bmm_sparse_dense" not implemented for '
                                  f"'{_dtype.scalar_type_name(s._data.dtype)}'")
    c = s if s._coalesced else s.coalesce()  # rows sorted, duplicates summed
    plan = s._cache.get("bmm_rows")
    if plan is None:
        idx = c._idx
        plan = s._cache["bmm_rows"] = _RowPlan(idx[0] * m + idx[1], idx[0] * k + idx[2],
                                               (nb * m, nb * k), s._device)
    n = mat2._data.shape[2]
    values = c._vals
    out = _spmm_arrays(plan, values._data, mat2._data.reshape(nb * k, n)).reshape(nb, m, n)
    out = _make(out, s._device)
    if GRAD.enabled and (values.requires_grad or mat2.requires_grad):
        record(SparseBmmBackward0, out, (values, mat2), (values, mat2), plan)
    return out


def dense_sparse_mm(d, s: SparseTensor, name: str = "mm") -> Tensor:
    """``d @ s`` for a dense ``d``: ``(s.T @ d.T).T``, a dense (transposed) result."""
    if not isinstance(d, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(d).__name__}")
    if s._layout is not sparse_coo and s._data.ndim > 2:  # batched or hybrid
        if name != "matmul":
            raise RuntimeError(f"mat2 must be a matrix, got {s._data.ndim}-D tensor")
        if not isinstance(d, SparseTensor) and d._data.ndim >= 2:  # (s.mT @ d.mT).mT
            st = _compressed().transpose(s, s._data.ndim - 2, s._data.ndim - 1)
            return _batched().matmul(st, d.transpose(-2, -1), name).transpose(-2, -1)
    if name != "matmul" and d._data.ndim == 1:
        raise _mm_dim_error(1, -2)
    _check_dims(s, "addmm")
    vector = d._data.ndim == 1 and name == "matmul"
    dd = d.unsqueeze(0) if vector else d
    if dd._data.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {dd._data.ndim}D tensor")
    check_same_device(dd, s)
    if dd._data.shape[1] != s._data.shape[0]:
        if s._layout is sparse_coo:  # PyTorch computes (s.T @ d.T).T
            raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size "
                               f"{s._data.shape[0]}, got {dd._data.shape[1]}")
        raise _shapes_error(dd._data.shape, s._data.shape)
    if dd._data.dtype != s._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(s._data.dtype)} "
                           f"but found {_dtype.scalar_type_name(dd._data.dtype)}")
    if s._layout in _BLOCK:  # (s.T @ d.T).T
        out = _blocks().block_mm(_compressed().transpose(s, 0, 1), dd.t()).t()
        return out.squeeze(0) if vector else out
    plan, values = row_plan(s)
    tplan, order = plan.transposed()
    out = spmm_plan(tplan, values.index_select(0, order), dd.t()).t()
    return out.squeeze(0) if vector else out


def sparse_sum(s: SparseTensor, dim=None, keepdim: bool = False, dtype=None):
    """``ember.sparse.sum`` / ``Tensor.sum`` of a sparse tensor (see ``SparseTensor.sum``)."""
    vals = s._vals if dtype is None else s._vals.to(dtype)
    if dim is None:
        return vals.sum()
    from .ops._promotion import wrap_dim

    n = s._data.ndim
    dims = [dim] if isinstance(dim, int) else list(dim)
    wrapped = [wrap_dim(d, n) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        dup = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    dims = sorted(wrapped)
    if s._layout is not sparse_coo and s._layout is not sparse_csr:
        raise RuntimeError("Currently the only compressed sparse format supported for "
                           f"sum.dim_IntList is CSR, but got layout {_LAYOUT_WORDS[s._layout]}")
    if s._layout is sparse_csr:
        if not keepdim:
            raise RuntimeError("reduction operations on CSR tensors with keepdim=False is "
                               "unsupported")
        if n > 2:  # PyTorch's kernel asserts a 2-D input (an internal error there)
            raise RuntimeError(f"sum: reduction over dimensions of a CSR tensor is supported "
                               f"for 2-D tensors only (without batch or dense dimensions), got "
                               f"a {n}-D tensor with {s._idx.shape[0] - 2} batch and "
                               f"{s.dense_dim()} dense dimensions")
        return _sum_keepdim_uncoalesced(s.to_sparse_coo(), dims, vals).to_sparse_csr()
    if keepdim:  # PyTorch's sum_sparse_coo: the sum without keepdim, then unsqueezed
        out = sparse_sum(s, dims, False, dtype)
        for d in dims:
            out = out.unsqueeze(d)
        return out
    sd = s._idx.shape[0]
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if not sparse_dims:  # PyTorch's _sparse_sum coalesces first
        s = s.coalesce()
        vals = s._vals if dtype is None else s._vals.to(dtype)
    if dense_dims:
        vals = vals.sum(dense_dims)
    if len(sparse_dims) == sd:
        return vals.sum(0)  # every sparse dim: dense
    shape = tuple(size for d, size in enumerate(s._data.shape) if d not in dims)
    if not sparse_dims:
        return make_sparse(s._idx, vals, shape, coalesced=True)
    keep = [d for d in range(sd) if d not in sparse_dims]
    return make_sparse(s._idx[keep], vals, shape, coalesced=False).coalesce()


def _sum_keepdim_uncoalesced(s: SparseTensor, dims: list, vals: Tensor):
    """A 2-D COO tensor summed over ``dims`` (sparse) with ``keepdim``: the duplicates summed
    but the result flagged uncoalesced (the CSR reduction's path)."""
    idx = s._idx.copy()
    idx[dims] = 0
    shape = tuple(1 if d in dims else size for d, size in enumerate(s._data.shape))
    out = make_sparse(idx, vals, shape, coalesced=False).coalesce()
    out._coalesced = False
    return out


def sparse_add(s: SparseTensor, other, alpha=1):
    """``s + alpha * other`` for a sparse ``other`` (a sparse result); a dense ``other`` is
    PyTorch's error."""
    if not is_sparse(other):
        if s._layout is not sparse_coo:  # PyTorch adds a compressed and a dense tensor
            return dense_add_sparse(other if alpha == 1 else other * alpha, s, 1)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if other._data.shape != s._data.shape:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(s._data.shape)} != {list(other._data.shape)}")
    check_same_device(s, other)
    if s._layout is not sparse_coo or other._layout is not sparse_coo:
        out = sparse_add(s.to_sparse_coo(), other.to_sparse_coo(), alpha)
        return _as_layout(out, s)
    from .ops.shape import cat

    if s._data.dtype.kind == "b" and other._data.dtype.kind == "b":
        raise NotImplementedError("\"cadd_sparse\" not implemented for 'Bool'")
    xp = xp_of(s._device)
    ov = other._vals if alpha == 1 else other._vals * alpha
    dt = _dtype.promote_types(s.dtype, ov.dtype)
    na, nb = s._idx.shape[1], other._idx.shape[1]
    # PyTorch's add_out_sparse_cpu: with no elements on one side, the other side as it is
    if nb == 0:
        return make_sparse(s._idx.copy(), s._vals.to(dt, copy=True), s._data.shape,
                           coalesced=s._coalesced)
    if na == 0:
        return make_sparse(other._idx.copy(), ov.to(dt, copy=ov is other._vals), s._data.shape,
                           coalesced=other._coalesced)
    values = cat([s._vals.to(dt), ov.to(dt)])
    idx = xp.concatenate((s._idx, other._idx), axis=1)
    sizes = s._data.shape[:s._idx.shape[0]]
    lin = _linear_index(idx, sizes, xp)
    first, second, slots = _merge_plan(lin[:na], lin[na:], xp)
    values = values.index_select(0, _index_tensor(first, s._device))
    if second.shape[0]:  # equal coordinates met in the merge: one element, the two summed
        values = values.index_add(0, _index_tensor(slots, s._device),
                                  cat([s._vals.to(dt), ov.to(dt)]).index_select(
                                      0, _index_tensor(second, s._device)))
    return make_sparse(idx[:, first], values, s._data.shape,
                       coalesced=s._coalesced and other._coalesced)


def _merge_plan(la, lb, xp):
    """PyTorch's merge of two element lists (``add_out_sparse_contiguous``), coalesced or
    not: walking both, the smaller coordinate goes first, ``la``'s on a tie, and equal ones
    make one element (an uncoalesced ``s + s`` keeps ``s``'s order and count). Returns,
    as arrays of positions in the joined list ``la + lb``, each result's first element, and
    for the results that met an equal pair, the second element and the result's slot."""
    na, nb = la.shape[0], lb.shape[0]
    if bool((la[1:] > la[:-1]).all()) and bool((lb[1:] > lb[:-1]).all()):
        # both strictly increasing: a stable sort of the joined list, equal pairs adjacent
        lin = xp.concatenate((la, lb))
        order = xp.argsort(lin, kind="stable")
        lin = lin[order]
        new = xp.empty(lin.shape[0], dtype=bool)
        new[:1] = True
        xp.not_equal(lin[1:], lin[:-1], out=new[1:])
        slot = xp.cumsum(new) - 1
        return order[new], order[~new], slot[~new]
    a, b = la.tolist(), lb.tolist()
    first, second, slots = [], [], []
    i = j = 0
    while i < na or j < nb:
        if j >= nb or (i < na and a[i] < b[j]):
            first.append(i)
            i += 1
        elif i >= na or b[j] < a[i]:
            first.append(na + j)
            j += 1
        else:
            slots.append(len(first))
            first.append(i)
            second.append(na + j)
            i += 1
            j += 1
    return (xp.asarray(first, dtype=np.int64), xp.asarray(second, dtype=np.int64),
            xp.asarray(slots, dtype=np.int64))


def dense_add_sparse(d, s: SparseTensor, sign: int):
    """``d + sign * s`` for a dense (or number) ``d``: dense, as PyTorch's."""
    if not isinstance(d, Tensor) and s._layout is sparse_coo:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    shape = tuple(d._data.shape) if isinstance(d, Tensor) else ()
    if shape != s._data.shape:
        word = "dense" if s._layout is sparse_coo else "op2"
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(shape)} while other has size "
                           f"{list(s._data.shape)} (FYI: {word}-sparse addition does not "
                           "currently support broadcasting)")
    dense = s.to_dense()
    return d + dense if sign > 0 else d - dense


def sparse_mul(s: SparseTensor, other):
    """``s * other``: a number or 0-d tensor scales the values; a dense tensor (broadcast to
    ``s``'s shape) is sampled at the stored elements; a sparse one multiplies the common
    elements. The result is sparse."""
    if is_sparse(other):
        return _mul_sparse(s, other)
    if isinstance(other, Tensor) and other._data.ndim:
        if s._layout is not sparse_coo:
            return _as_layout(_mul_dense(s.to_sparse_coo(), other), s)
        return _mul_dense(s, other)
    return s._with_values(s._vals * other)


def _check_cast(have, want) -> None:
    if not _dtype.can_cast(have, want):
        raise RuntimeError(f"result type {_dtype.scalar_type_name(have.np)} can't be cast to the "
                           f"desired output type {_dtype.scalar_type_name(want.np)}")


def _mul_dense(s: SparseTensor, d: Tensor):
    check_same_device(s, d)
    try:
        full = d.expand(s._data.shape)
    except RuntimeError:
        a, b = tuple(d._data.shape), tuple(s._data.shape)
        n = max(len(a), len(b))
        a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        bad = next(i for i in range(n - 1, -1, -1) if a[i] != b[i] and 1 not in (a[i], b[i])) \
            if any(x != y and 1 not in (x, y) for x, y in zip(a, b)) else None
        if bad is None:  # broadcasts, but beyond the sparse size
            raise RuntimeError(f"mul: a sparse tensor of size {list(s._data.shape)} and a dense "
                               f"tensor of size {list(d._data.shape)} do not broadcast to the "
                               "sparse size") from None
        raise RuntimeError(f"The size of tensor a ({a[bad]}) must match the size of tensor b "
                           f"({b[bad]}) at non-singleton dimension {bad}") from None
    sampled = full[tuple(_index_tensor(i, s._device) for i in s._idx)]
    return s._with_values(s._vals * sampled)


_INTERSECTION_SHAPES = ("sparse_binary_op_intersection_cpu(): expects sparse inputs with equal "
                        "dimensionality, number of sparse dimensions, and shape of sparse "
                        "dimensions")


def _mul_sparse(a: SparseTensor, b: SparseTensor):
    """``a * b`` of two sparse tensors, as PyTorch's ``mul_out_sparse_cpu``: a 0-d operand
    scales the other; coalesced operands of one shape give their common elements (coalesced);
    otherwise (an uncoalesced operand, or shapes that differ in dense dims) the intersection
    kernel keeps every element of one operand, each times the sum of the other's elements at
    its coordinates (zero where it has none)."""
    check_same_device(a, b)
    like = a
    if a._layout is not sparse_coo or b._layout is not sparse_coo:
        out = _mul_sparse(a.to_sparse_coo(), b.to_sparse_coo())
        return _as_layout(out, like)
    if not b._data.ndim:
        return _mul_zero_dim(b, a)
    if not a._data.ndim:
        return _mul_zero_dim(a, b)
    if a._data.shape == b._data.shape:
        if not a._idx.shape[1] or not b._idx.shape[1]:
            dt = _dtype.promote_types(a.dtype, b.dtype)
            return make_sparse(b._idx[:, :0].copy(), b._vals[:0].to(dt, copy=True),
                               b._data.shape, coalesced=True)
        if a._coalesced and b._coalesced:
            return _mul_coalesced(a, b)
    return _mul_intersection(a, b)


def _mul_zero_dim(zero_dim: SparseTensor, other: SparseTensor):
    """PyTorch's ``_mul_sparse_sparse_zero_dim_out``: the 0-d operand's (summed) value scales
    the other's values, the other's indices and flag kept."""
    if not zero_dim._coalesced and other._coalesced and not other._data.ndim:
        zero_dim, other = other, zero_dim
    vals = zero_dim.coalesce()._vals
    scalar = vals.reshape(()) if vals._data.shape[0] else vals.sum()
    return other._with_values(other._vals * scalar)


def _mul_coalesced(a: SparseTensor, b: SparseTensor):
    """The common elements of two coalesced tensors of one shape (coalesced)."""
    xp = xp_of(a._device)
    sizes = a._data.shape[:a._idx.shape[0]]
    la, lb = _linear_index(a._idx, sizes, xp), _linear_index(b._idx, sizes, xp)
    pos = xp.minimum(xp.searchsorted(lb, la), lb.shape[0] - 1)
    keep = lb[pos] == la
    ka = _index_tensor(xp.nonzero(keep)[0], a._device)
    kb = _index_tensor(pos[keep], a._device)
    values = a._vals.index_select(0, ka) * b._vals.index_select(0, kb)
    return make_sparse(a._idx[:, keep], values, a._data.shape, coalesced=True)


def _mul_intersection(x: SparseTensor, y: SparseTensor):
    """PyTorch's ``_sparse_binary_op_intersection_kernel_impl`` for ``mul``: the result has
    the indices (and coalesced flag) of the ``source`` operand, the uncoalesced one when only
    one is, else the one with fewer elements (``y`` on a tie); each value is the source's times
    the sum of the other's values at that coordinate. Dense dims broadcast."""
    sd = x._idx.shape[0]
    if (x._data.ndim != y._data.ndim or sd != y._idx.shape[0]
            or x._data.shape[:sd] != y._data.shape[:sd]):
        raise RuntimeError(_INTERSECTION_SHAPES)
    from .ops._promotion import broadcast_shape

    shape = tuple(broadcast_shape(x._data.shape, y._data.shape))
    if x._coalesced != y._coalesced:
        source, other = (y, x) if x._coalesced else (x, y)
    else:
        source, other = (y, x) if x._idx.shape[1] >= y._idx.shape[1] else (x, y)
    xp = xp_of(x._device)
    sizes = shape[:sd]
    ls, lo = _linear_index(source._idx, sizes, xp), _linear_index(other._idx, sizes, xp)
    dt = _dtype.promote_types(x.dtype, y.dtype)
    ovals = other._vals.to(dt)
    from ._factory import zeros
    from .ops.shape import cat

    zero_row = zeros((1,) + tuple(ovals._data.shape[1:]), dtype=dt, device=x._device)
    if other._coalesced:  # sorted, unique coordinates: the values as they are
        uniq = lo
        acc = cat([ovals, zero_row])
    else:  # the other's duplicates summed, in the order of their coordinates
        order = xp.argsort(lo, kind="stable")
        lo = lo[order]
        new = xp.empty(lo.shape[0], dtype=bool)
        new[:1] = True
        xp.not_equal(lo[1:], lo[:-1], out=new[1:])
        uniq = lo[new]
        acc = zeros((uniq.shape[0] + 1,) + tuple(ovals._data.shape[1:]), dtype=dt,
                    device=x._device)
        acc = acc.index_add(0, _index_tensor(xp.cumsum(new) - 1, x._device),
                            ovals.index_select(0, _index_tensor(order, x._device)))
    # each source element's slot among the other's distinct coordinates; no match: the
    # zero row after them
    n = uniq.shape[0]
    pos = xp.minimum(xp.searchsorted(uniq, ls), max(n - 1, 0))
    hit = uniq[pos] == ls if n else xp.zeros(ls.shape[0], dtype=bool)
    pos = xp.where(hit, pos, n)
    matched = acc.index_select(0, _index_tensor(pos, x._device))
    svals = source._vals.to(dt)
    values = svals * matched if source is x else matched * svals
    return make_sparse(source._idx.copy(), values, shape, coalesced=source._coalesced)


def sparse_cat(tensors, dim: int) -> SparseTensor:
    """``ember.cat`` of sparse COO tensors (the hook in ``ops/shape.py``), as PyTorch's: along
    a sparse dim the indices are shifted and joined; along a dense dim each tensor's values
    are padded with zeros to the joined size. The result is uncoalesced; values promote and
    carry autograd."""
    from .ops._promotion import wrap_dim
    from .ops.shape import cat

    for i, t in enumerate(tensors):
        if not is_sparse(t):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {i}.")
    for t in tensors:
        if t._layout is not sparse_coo:
            if any(u._layout is sparse_coo for u in tensors):
                raise t._no_strides()
            raise t._no_is_contiguous()
    ref = tensors[0]
    n = ref._data.ndim
    dim = wrap_dim(dim, n)
    sd = ref._idx.shape[0]
    want = ref._data.shape[:dim] + ref._data.shape[dim + 1:]
    for i, t in enumerate(tensors):
        shape = t._data.shape
        if t._data.ndim != n or shape[:dim] + shape[dim + 1:] != want or \
                t._idx.shape[0] != sd:
            raise RuntimeError(f"All tensors must have the same shape: {list(ref._data.shape)} "
                               f"(except in the concatenating dimension), but found shape: "
                               f"{list(shape)} at position {i}.")
        check_same_device(ref, t)
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    xp = xp_of(ref._device)
    sizes = [t._data.shape[dim] for t in tensors]
    total = sum(sizes)
    shape = ref._data.shape[:dim] + (total,) + ref._data.shape[dim + 1:]
    vals = [t._vals if t.dtype is dt else t._vals.to(dt) for t in tensors]
    if dim < sd:  # a sparse dim: shifted indices
        parts, offset = [], 0
        for t, size in zip(tensors, sizes):
            idx = t._idx
            if offset:
                idx = idx.copy()
                idx[dim] += offset
            parts.append(idx)
            offset += size
        values = cat(vals)
    else:  # a dense dim: every tensor's values padded to the joined size
        from ._factory import zeros

        axis = dim - sd + 1
        parts, padded, offset = [t._idx for t in tensors], [], 0
        for v, size in zip(vals, sizes):
            pieces = []
            for width in (offset, total - offset - size):
                if width:
                    pshape = list(v._data.shape)
                    pshape[axis] = width
                    pieces.append(zeros(tuple(pshape), dtype=dt, device=ref._device))
            pieces.insert(1 if offset else 0, v)
            padded.append(cat(pieces, axis) if len(pieces) > 1 else v)
            offset += size
        values = cat(padded)
    return make_sparse(xp.concatenate(parts, axis=1), _named(values, "CatBackward0"), shape,
                       coalesced=False)


def sparse_stack(tensors, dim: int) -> SparseTensor:
    """``ember.stack`` of sparse COO tensors: ``cat`` of them unsqueezed at ``dim``."""
    from .ops._promotion import wrap_dim

    for i, t in enumerate(tensors):
        if not is_sparse(t):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {i}.")
    dim = wrap_dim(dim, tensors[0]._data.ndim + 1)
    return sparse_cat([t.unsqueeze(dim) for t in tensors], dim)


def _as_layout(s: SparseTensor, like: SparseTensor) -> SparseTensor:
    """The COO tensor ``s`` in the layout (blocksize, batch dimensions) of ``like``."""
    if like._layout is sparse_coo:
        return s
    return _compressed().as_layout(s, like)


# -- printing ---------------------------------------------------------------------------------

def _add_suffixes(body: str, suffixes: list, indent: int, force_newline: bool) -> str:
    """PyTorch's ``_add_suffixes``: ``, suffix`` until a line would pass the width."""
    from ._tensor_str import PRINT_OPTS

    parts = [body]
    last = len(body) - body.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _part_str(name: str, t: Tensor, indent: int) -> str:
    from ._tensor_str import tensor_str

    prefix = f"{name}=tensor("
    arr = t._host()
    text = tensor_str(arr, indent + len(prefix))
    if arr.size == 0:
        text += f", size={tuple(arr.shape)}"
    return prefix + text + ")"


def sparse_repr(s: SparseTensor) -> str:
    """``repr(s)`` as PyTorch writes it (``indices=``/``values=`` or ``crow_indices=``/
    ``col_indices=``/``values=``, then size, nnz, dtype, layout, autograd)."""
    indent = len("tensor(")
    suffixes = []
    if s._device.type != "cpu":
        suffixes.append(f"device='{s._device}'")
    suffixes.append(f"size={tuple(s._data.shape)}")
    suffixes.append(f"nnz={s._nnz()}")
    dt = s.dtype
    default = _dtype.get_default_dtype()
    if dt not in (default, default.to_complex(), _dtype.int64, _dtype.bool):
        suffixes.append(f"dtype={dt}")
    values = (s._vals if s._layout is sparse_coo else s.values()).detach()
    if s._layout is sparse_coo:
        parts = [_part_str("indices", _index_tensor(s._idx, s._device), indent),
                 _part_str("values", values, indent)]
        force = True
    else:
        compressed, plain = s._compressed_parts()
        names = ("ccol", "row") if s._layout in _BY_COLUMN else ("crow", "col")
        parts = [_part_str(f"{names[0]}_indices", compressed, indent),
                 _part_str(f"{names[1]}_indices", plain, indent),
                 _part_str("values", values, indent)]
        force = False
    body = ("tensor(" + (",\n" + " " * indent).join(parts))
    suffixes.append(f"layout={s._layout}")
    if s.grad_fn is not None:
        suffixes.append(f"grad_fn=<{s.grad_fn.name()}>")
    elif s.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(body, suffixes, indent, force)


def _coo_matmul_ranks(a, b):
    """``ember.matmul`` of COO (and dense) operands of which one has more than two dimensions,
    as PyTorch's composite matmul: it folds a dense ``(..., M, K)`` first operand's batches into
    the rows of one product with a sparse matrix; every other case would reshape or expand a
    sparse tensor, which PyTorch refuses. None: not such a case."""
    na, nb = a._data.ndim, b._data.ndim
    if (na <= 2 and nb <= 2) or any(is_sparse(t) and t._layout is not sparse_coo for t in (a, b)):
        return None
    if (na >= 3 and nb <= 2) or na == 1:
        if is_sparse(a) or na == 1:
            raise RuntimeError("reshape is not implemented for sparse tensors")
        if nb == 1:
            return None
        out = dense_sparse_mm(a.reshape(-1, a._data.shape[-1]), b, "matmul")
        return out.reshape(*a._data.shape[:-1], b._data.shape[-1])
    raise RuntimeError("expand is unsupported for Sparse tensors")


def sparse_product(a, b, name: str) -> Tensor:
    """``ember.mm``/``ember.matmul`` with a sparse operand (the hook in ``ops/linalg.py``)."""
    if name == "matmul" and isinstance(a, Tensor) and isinstance(b, Tensor):
        out = _coo_matmul_ranks(a, b)
        if out is not None:
            return out
    if is_sparse(a):
        return sparse_mm(a, b, name)
    return dense_sparse_mm(a, b, name)


def _blocks():
    """``ember.sparse._blocks``, the block layouts' kernels (imported on first use: it
    imports this module)."""
    from .sparse import _blocks as module

    return module


def _batched():
    """``ember.sparse._batched``: batch selection and products of batched compressed
    tensors."""
    from .sparse import _batched as module

    return module


def _compressed():
    """``ember.sparse._compressed``: compressed tensors with batch and dense dimensions, their
    parts, construction and conversions."""
    from .sparse import _compressed as module

    return module


def _indexing():
    """``ember.sparse._indexing``: ``s[i]``, ``select``, ``index_select``, ``narrow_copy``."""
    from .sparse import _indexing as module

    return module
