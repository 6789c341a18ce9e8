"""Ops at the edges of PyTorch's API: the function forms of Tensor methods (``ember.detach``,
``ember.fill``, ``ember.zero_``; ``detach_`` and ``fill_`` are plain functions, as the
registry would make them Tensor methods too), ``nonzero_static``, ``hash_tensor``; and the
linalg names PyTorch removed (``eig``, ``lstsq``, ``solve``, ``symeig``: functions and Tensor
methods, not registry ops), which only raise an error saying what replaced them.

(Each belongs to a family module: fill to ``pointwise``, ``nonzero_static`` to ``indexing``,
``hash_tensor`` to ``reduction``, the removed names to ``linalg``; they live here while those
modules are being reworked.)
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from .. import _dtype
from .._device import xp_of
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._casts import cast_to
from ._promotion import normalize_dims
from .registry import register, register_method

__all__ = ["detach", "detach_", "fill", "fill_", "zero_", "nonzero_static", "hash_tensor",
           "eig", "lstsq", "solve", "symeig"]


# -- function forms of Tensor methods --------------------------------------------------------

def detach_(input):
    """``input.detach_()``: take ``input`` out of the graph in place."""
    return input.detach_()


@register("detach", method=False, differentiable=False)
def detach(input):
    """``input.detach()``: the same data, outside the graph."""
    return input.detach()


def fill_(input, value):
    """``input.fill_(value)``: fill ``input`` with ``value`` in place."""
    return input.fill_(value)


@register("zero_", method=False, differentiable=False)
def zero_(input):
    """``input.zero_()``: fill ``input`` with zeros in place."""
    return input.zero_()


def _fill_bw(node, g):
    grads = (_make(xp_of(g).zeros_like(g._data), g._device),)
    if node.ctx is not None:  # the gradient of a 0-dim value tensor: the sum of g
        dtype, device = node.ctx
        grads += (cast_to(g.sum(), device, dtype, False),)
    return grads


FillBackward0 = make_node_class("FillBackward0", _fill_bw)
FillBackward1 = make_node_class("FillBackward1", _fill_bw)


@register("fill", method=False)
def fill(input, value):
    """A tensor like ``input`` (shape, dtype, device, layout) filled with ``value``: a number
    or a 0-dim tensor, whose gradient is the sum of the output's."""
    from .pointwise import _scalar_as

    xp = xp_of(input)
    arr = xp.empty_like(input._data)
    vt = value if isinstance(value, Tensor) else None
    if vt is not None:
        if vt._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {vt._data.ndim} dimensions.")
        v = cast_to(vt, input._device, input.dtype, False)._data
        arr[...] = v
    else:
        arr.fill(_scalar_as(value, arr.dtype))
    out = _make(arr, input._device)
    if GRAD.enabled and (input.requires_grad or (vt is not None and vt.requires_grad)):
        if vt is None:
            record(FillBackward0, out, (input,), (), None)
        else:
            record(FillBackward1, out, (input, vt), (), (vt.dtype, vt._device))
    return out


# -- nonzero_static --------------------------------------------------------------------------

@register("nonzero_static", out=True, differentiable=False)
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the nonzero elements (one row each, as ``nonzero``) in a tensor of
    exactly ``size`` rows: cut off after ``size``, or padded with ``fill_value``."""
    if isinstance(size, bool) or not isinstance(size, (numbers.Integral, np.integer)):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                        f"{type(size).__name__}")
    size = int(size)
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    xp = xp_of(input)
    d = input._data
    fill = operator.index(fill_value)
    if d.ndim == 0:
        return _make(xp.full((size, 0), fill, dtype=np.int64), input._device)
    found = xp.argwhere(d).astype(np.int64)
    n = found.shape[0]
    if n >= size:
        rows = found[:size]
    else:
        pad = xp.full((size - n, d.ndim), fill, dtype=np.int64)
        rows = xp.concatenate([found, pad], axis=0)
    return _make(xp.ascontiguousarray(rows), input._device)


# -- hash_tensor -----------------------------------------------------------------------------

def _xor_last(a, xp):
    """XOR-reduce the last axis of an int64 array (by halves: every backend has ``^``)."""
    while a.shape[-1] > 1:
        k = a.shape[-1]
        half = k // 2
        r = a[..., :half] ^ a[..., half:2 * half]
        a = xp.concatenate([r, a[..., 2 * half:]], axis=-1) if k % 2 else r
    if a.shape[-1] == 0:
        return xp.zeros(a.shape[:-1], dtype=np.int64)
    return a[..., 0]


@register("hash_tensor", out=True, differentiable=False)
def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """XOR of the elements' 64-bit patterns over ``dim`` (all dims when None): floats as
    float64, integers and bools as int64, as ``torch.hash_tensor`` (mode 0).

    PyTorch returns ``uint64``; Ember returns the same 64 bits as ``int64``
    (``h & (2**64 - 1)`` gives PyTorch's value), because the C++ frontend, whose
    ``ember::jit`` must give Python's results, has no unsigned 64-bit dtype, and the ONNX
    export computes in int64.
    """
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    d = input._data
    xp = xp_of(input)
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        if d.size == 0:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        axes = tuple(range(d.ndim))
    else:
        axes = normalize_dims(dim, d.ndim)
    bits = d.astype(np.float64).view(np.int64) if d.dtype in _dtype.FLOATING_NP \
        else d.astype(np.int64)
    keep = [k for k in range(d.ndim) if k not in axes]
    moved = bits.transpose(keep + list(axes))
    kept_shape = tuple(d.shape[k] for k in keep)
    n = 1
    for k in axes:
        n *= d.shape[k]
    r = _xor_last(moved.reshape(kept_shape + (n,)), xp)
    if keepdim:
        r = r.reshape(tuple(1 if k in axes else s for k, s in enumerate(d.shape)))
    return _make(r.copy(), input._device)


# -- removed from PyTorch: the names only say what replaced them ------------------------------

#: what each removed function's error says after "... is now removed. "
_REPLACED_BY = {
    "eig": (
        "`ember.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
        "real tensors mimicking complex tensors.\n\n"
        "L, _ = ember.eig(A) should be replaced with:\nL_complex = ember.linalg.eigvals(A)\n\n"
        "and\n\nL, V = ember.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = ember.linalg.eig(A)"),
    "lstsq": (
        "`ember.lstsq` is deprecated in favor of `ember.linalg.lstsq`.\n"
        "`ember.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `ember.linalg.qr`.\n\n"
        "The returned solution in `ember.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In ember.linalg.lstsq, the "
        "residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\n"
        "X, _ = ember.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\n"
        "X = ember.linalg.lstsq(A, B).solution"),
    "solve": (
        "`ember.solve` is deprecated in favor of `ember.linalg.solve`. `ember.linalg.solve` has "
        "its arguments reversed and does not return the LU factorization.\n\n"
        "To get the LU factorization see `ember.lu`, which can be used with `ember.lu_solve` "
        "or `ember.lu_unpack`.\n"
        "X = ember.solve(B, A).solution should be replaced with:\n"
        "X = ember.linalg.solve(A, B)"),
    "symeig": (
        "The default behavior has changed from using the upper triangular portion of the "
        "matrix by default to using the lower triangular portion.\n\n"
        "L, _ = ember.symeig(A, upper=upper) should be replaced with:\n"
        "L = ember.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\n"
        "and\n\nL, V = ember.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = ember.linalg.eigh(A, UPLO='U' if upper else 'L')"),
}


def _removed(name: str) -> RuntimeError:
    return RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                        + _REPLACED_BY[name])


def eig(input, eigenvectors=False, *, e=None, v=None):
    """Removed (PyTorch 1.9): raises, pointing to ``ember.linalg.eig``/``eigvals``."""
    raise _removed("eig")


def lstsq(input, A, *, out=None):
    """Removed (PyTorch 1.9): raises, pointing to ``ember.linalg.lstsq``."""
    raise _removed("lstsq")


def solve(input, A, *, out=None):
    """Removed (PyTorch 1.9): raises, pointing to ``ember.linalg.solve``."""
    raise _removed("solve")


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed (PyTorch 1.9): raises, pointing to ``ember.linalg.eigh``/``eigvalsh``."""
    raise _removed("symeig")


for _removed_fn in (eig, lstsq, solve, symeig):  # Tensor methods too; not ops of the registry
    register_method(_removed_fn.__name__, _removed_fn)
del _removed_fn
