"""Norms: ``vector_norm`` (one op with PyTorch's backward per order), and ``matrix_norm``
and ``norm`` composed from it and ``svdvals`` (so their gradients come for free)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._tensor import _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._inplace import accepts_out
from ._promotion import normalize_dims
from ._selection import c_order
from .linalg_common import check_dims, const
from .linalg_decompositions import svdvals

__all__ = ["vector_norm", "matrix_norm", "norm"]

_INF = math.inf


def _ord_str(ord) -> str:
    return f"{ord:g}" if isinstance(ord, float) else str(ord)


def _vector_norm_array(xp, d, ord, axis, keepdim):
    if d.dtype.kind == "c":  # the norm of the moduli (a real result)
        if ord == 0:
            return xp.sum(d != 0, axis=axis, keepdims=keepdim).astype(d.real.dtype)
        d = xp.abs(d)
    if ord == 2:
        return xp.sqrt(xp.sum(d * d, axis=axis, keepdims=keepdim))
    a = xp.abs(d)
    if ord == _INF:
        return xp.max(a, axis=axis, keepdims=keepdim)
    if ord == -_INF:
        return xp.min(a, axis=axis, keepdims=keepdim)
    if ord == 0:
        return xp.sum(d != 0, axis=axis, keepdims=keepdim).astype(d.dtype)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdim)
    with np.errstate(divide="ignore"):
        return xp.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)


def _vector_norm_bw(node, g):
    # PyTorch's norm_backward, with masks as constants
    (x,) = node.saved
    ord, dims, keepdim = node.ctx
    norm = node.output()
    if not keepdim and dims is not None:
        for d in dims:
            g, norm = g.unsqueeze(d), norm.unsqueeze(d)
    xd, nd = x._data, norm._data
    xp = xp_of(x)
    dt = xd.dtype
    if ord == 0:  # piecewise constant: no gradient (None, as PyTorch's undefined grad)
        return (None,)
    if dt.kind == "c":  # x / |x| (0 at 0), as PyTorch's sgn; masks in the real dtype
        ax = xp.abs(xd)
        sgn = const(x, xd / xp.where(ax == 0, 1, ax))
        dt = ax.dtype
    else:
        sgn = const(x, xp.sign(xd))
    if ord == 1:
        return (sgn * g,)
    norm_zero = const(x, (nd == 0).astype(dt))
    if ord == 2:
        return (x * (g / (norm + norm_zero)),)
    if math.isinf(ord):
        mask = (xp.abs(xd) == nd) | xp.isnan(xd)
        count = mask.sum(axis=dims, keepdims=True).astype(dt)
        return (sgn * const(x, mask.astype(dt) / count) * g,)
    x_abs = x.abs()
    if ord < 1:
        x_zero = const(x, (xd == 0).astype(dt))
        scaled = sgn * (x_abs + x_zero) ** (ord - 1) * (1 - x_zero)
        return (scaled * g * norm ** (1 - ord),)
    scaled = sgn * x_abs ** (ord - 1) if ord < 2 else x * x_abs ** (ord - 2)
    scale = g / (norm + norm_zero) ** (ord - 1) * (1 - norm_zero)
    return (scaled * scale,)


LinalgVectorNormBackward0 = make_node_class("LinalgVectorNormBackward0", _vector_norm_bw)
LinalgVectorNormBackward0._complex = "own"  # PyTorch's norm_backward: sgn(x), x |x|^(p-2)


def _cast_for_norm(x, dtype, fn):
    """PyTorch's dtype checks of a norm (the input's, then ``dtype``'s); ``x`` in ``dtype``."""
    d = x._data
    if d.dtype not in _dtype.FLOATING_NP and d.dtype not in _dtype.COMPLEX_NP:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_type_name(d.dtype)}")
    if dtype is None:
        return x
    dt = _dtype.to_dtype(dtype)
    name = scalar_type_name(dt.np)
    if dt.np not in _dtype.FLOATING_NP and dt.np not in _dtype.COMPLEX_NP:
        raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got {name}")
    if (d.dtype.kind == "c") != (dt.np.kind == "c"):
        kind = "complex" if d.dtype.kind == "c" else "real"
        raise RuntimeError(f"{fn}: dtype should be {kind} for {kind} inputs, but got {name}")
    if _dtype.promote_types(_dtype.FROM_NP[d.dtype], dt) is not dt:
        raise RuntimeError(f"{fn}: the dtype of the input ({scalar_type_name(d.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype ({name})")
    return x.to(dt)


def _norm_order(ord):
    """``vector_norm``'s ``ord`` as a number (PyTorch's Scalar: bools and 0-dim tensors too)."""
    if isinstance(ord, numbers.Number):
        if isinstance(ord, complex):
            raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order "
                               "of norm.")
        return int(ord) if isinstance(ord, bool) else ord
    if hasattr(ord, "_data") and ord._data.ndim == 0:
        return _norm_order(ord.item())
    raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                    f"{type(ord).__name__}")


def _empty_reduction(d, dim, ord) -> None:
    """PyTorch's error for a norm without identity (``ord`` < 0 or inf) over an empty dim."""
    if dim is None or (not isinstance(dim, int) and not len(dim)):
        if d.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on "
                               "an empty tensor because the operation does not have an identity")
        return
    given = (dim,) if isinstance(dim, int) else tuple(dim)
    for g in given:
        if d.shape[g] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on "
                               f"the dimension {g}because this dimension is empty and the "
                               "operation does not have an identity")


@accepts_out(dtype_rule="same")
def vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all dims when None) as a vector:
    ``sum(|x|^ord)^(1/ord)``, max/min of ``|x|`` for +-inf, count of nonzeros for 0."""
    x = input  # PyTorch's binding names it input (its docs: x)
    if ord.__class__ is not int and ord.__class__ is not float:
        ord = _norm_order(ord)
    x = _cast_for_norm(x, dtype, "linalg.vector_norm")
    d = x._data
    dims = normalize_dims(dim, d.ndim)
    if dims is not None and not dims and d.ndim:
        dims = None  # dim=() reduces every dim, as in PyTorch
    if dims is None and keepdim:
        dims = tuple(range(d.ndim))
    if (ord < 0 or ord == _INF) and not d.size:
        _empty_reduction(d, dim, ord)
    try:
        if d.dtype in _dtype.OPMATH and not math.isinf(ord):  # sums in float32, as PyTorch
            r = _vector_norm_array(xp_of(x), d.astype(np.float32), ord, dims, keepdim)
            r = r.astype(d.dtype)
        elif d.dtype is _dtype.CHALF_NP:  # |z| and sums in float32 (complex64), rounded once
            r = _vector_norm_array(xp_of(x), d.astype(np.complex64), ord, dims, keepdim)
            r = r.astype(np.float16)
        else:
            r = _vector_norm_array(xp_of(x), d, ord, dims, keepdim)
    except NotImplementedError:  # a sparse tensor's placeholder array refused: PyTorch's
        if getattr(x, "_layout", None) is None:  # dispatcher error in this op's name
            raise
        from .._sparse_tensor import _no_backend

        raise _no_backend("linalg_vector_norm", x) from None
    if dims is not None:  # PyTorch allocates a reduction's result in C order
        r = c_order(r)
    out_ = _make(r, x._device)
    if GRAD.enabled and x.requires_grad:  # clip_grad_norm_'s per-parameter path: inline
        record(LinalgVectorNormBackward0, out_, (x,), (x,), (ord, dims, keepdim), True)
    return out_


_MATRIX_ORDS = ("fro", "nuc", _INF, -_INF, 1, -1, 2, -2)


@accepts_out(dtype_rule="same")
def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc' (sum of singular values), 2 / -2
    (largest / smallest singular value), 1 / -1 (max / min column abs-sum), inf / -inf
    (max / min row abs-sum)."""
    A = input  # PyTorch's binding names it input (its docs: A)
    d = A._data
    check_dims(d, "linalg.matrix_norm")
    if isinstance(dim, int):  # PyTorch's parser takes a tuple (or list) of ints only
        got = "" if isinstance(ord, str) and ord == "fro" else f"{type(ord).__name__}, "
        raise TypeError(
            f"linalg_matrix_norm() received an invalid combination of arguments - got (Tensor, "
            f"{got}dim=int), but expected one of:\n * (Tensor input, Number ord, tuple of ints "
            "dim = {-2,-1}, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = "
            "None)\n * (Tensor input, str ord = \"fro\", tuple of ints dim = {-2,-1}, bool "
            "keepdim = False, *, torch.dtype dtype = None, Tensor out = None)\n")
    dims = tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dims))}")
    d0, d1 = normalize_dims(dims[:1], d.ndim)[0], normalize_dims(dims[1:], d.ndim)[0]
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    if ord not in _MATRIX_ORDS or isinstance(ord, bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    A = _cast_for_norm(A, dtype, "linalg.matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2) and d.dtype in _dtype.OPMATH:
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{scalar_type_name(d.dtype)}")
    if d.shape[d0] == 0 or d.shape[d1] == 0:
        _empty_min_error(ord, d.shape, d0, d1, keepdim)
        shape = tuple(1 if i in (d0, d1) else s for i, s in enumerate(d.shape) if keepdim or
                      i not in (d0, d1))
        return _make(xp_of(A).zeros(shape, dtype=A._data.dtype), A._device)
    if ord in ("nuc", 2, -2):
        rest = [i for i in range(d.ndim) if i not in (d0, d1)]
        s = svdvals(A.permute(*rest, d0, d1))
        r = vector_norm(s, {"nuc": 1, 2: _INF, -2: -_INF}[ord], -1)
    else:  # abs-sums over one dim, then their max or min over the other
        sum_dim, max_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = vector_norm(A, 1, sum_dim, keepdim=True)
        r = vector_norm(sums, _INF if ord > 0 else -_INF, max_dim, keepdim=True)
        if keepdim:
            return r
        return r.reshape(*[s for i, s in enumerate(r._data.shape) if i not in (d0, d1)])
    if keepdim:
        for i in sorted((d0, d1)):
            r = r.unsqueeze(i)
    return r


def _empty_min_error(ord, shape, d0, d1, keepdim) -> None:
    """PyTorch's error for a matrix norm whose final min-reduction is over an empty dim."""
    if ord == -2:
        raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
    if ord in (-1, -_INF):
        if ord == -_INF:
            d0, d1 = d1, d0
        if shape[d1] == 0:
            raise IndexError(f"amin(): Expected reduction dim "
                             f"{d1 - 1 if not keepdim and d0 < d1 else d1} to have non-zero "
                             "size.")


@accepts_out(dtype_rule="same")
def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """``vector_norm`` or ``matrix_norm`` as ``ord`` and ``dim`` say (``torch.linalg.norm``):
    a matrix norm for a string ``ord``, two dims, or a 2-D input with ``ord`` and no dim."""
    A = input  # PyTorch's binding names it input (its docs: A)
    ndim = A._data.ndim
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got [{shape_str(dims)}]")
    else:
        dims = None
        if ord is not None and ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {ndim}D.")
    if ord is None:
        return vector_norm(A, 2, dims, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dims is not None and len(dims) == 2) or \
            (dims is None and ndim == 2):
        return matrix_norm(A, ord, dims if dims is not None else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dims, keepdim, dtype=dtype)
