"""What the functions of ``ember.linalg`` share: PyTorch's argument checks and errors, the
result types, and the recording of ops with several differentiable outputs."""

from __future__ import annotations

import numpy as np

from .. import return_types as _rt
from .._tensor import _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ..ops._core import _pretty, xp_of


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (``torch.linalg.LinAlgError``)."""


# PyTorch's ``torch.return_types``: named tuples with PyTorch's type names and fields
SlogdetResult = _rt.slogdet
LinalgSlogdetResult = _rt.linalg_slogdet
SvdResult = _rt.svd
LinalgSvdResult = _rt.linalg_svd
QrResult = _rt.qr
LinalgQrResult = _rt.linalg_qr
LinalgEighResult = _rt.linalg_eigh
LinalgLstsqResult = _rt.linalg_lstsq
LinalgInvExResult = _rt.linalg_inv_ex
LinalgCholeskyExResult = _rt.linalg_cholesky_ex
LinalgLuResult = _rt.linalg_lu
LinalgLuFactorResult = _rt.linalg_lu_factor
LinalgLuFactorExResult = _rt.linalg_lu_factor_ex
LuUnpackResult = _rt.lu_unpack
LuWithInfoResult = _rt._lu_with_info
LinalgLdlFactorResult = _rt.linalg_ldl_factor
LinalgLdlFactorExResult = _rt.linalg_ldl_factor_ex
LinalgSolveExResult = _rt.linalg_solve_ex
GeqrfResult = _rt.geqrf
TriangularSolveResult = _rt.triangular_solve


def check_float(A, fn: str) -> None:
    """PyTorch's dtype checks of a LAPACK-backed function ``fn``."""
    dt = A._data.dtype
    if dt.kind != "f":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_pretty(dt)}")
    if dt == np.float16:
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got Half")


def check_matrix(A, fn: str, square: bool = False) -> None:
    """``A`` is a (batch of) matrix, square if asked, of a floating dtype."""
    shape = A._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")
    check_float(A, fn)


def batch_prefix(A, index: int) -> str:
    return f"(Batch element {index}): " if A._data.ndim > 2 else ""


def lu_zero_pivot(a) -> int:
    """The 1-based index of the first zero pivot of LU with partial pivoting (LAPACK getrf's
    ``info``), 0 when there is none. Runs only on the error path."""
    a = np.array(a, copy=True)
    n = a.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0:
            return k + 1
        if p != k:
            a[[k, p]] = a[[p, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return 0


def first_failing(batch, fails):
    """Index in the flattened batch, and the value of ``fails`` (a nonzero int), of the first
    matrix that ``fails``."""
    flat = batch.reshape((-1,) + batch.shape[-2:])
    for i, m in enumerate(flat):
        info = fails(m)
        if info:
            return i, info
    return 0, batch.shape[-1]


def const(like, array):
    """``array`` as a tensor on ``like``'s device, outside the graph."""
    return _make(array, like._device)


def eye_like(t, n: int | None = None):
    """The identity matrix of ``t``'s dtype and device (size ``n`` or ``t``'s last dim)."""
    d = t._data
    return _make(xp_of(t).eye(d.shape[-1] if n is None else n, dtype=d.dtype), t._device)


# -- ops with several outputs -------------------------------------------------------------

def record_multi(node_cls, outs, inputs, saved=(), ctx=None):
    """Make one ``node_cls`` node the ``grad_fn`` of every tensor in ``outs`` (a None entry
    is an output that is not differentiable); output ``i`` gets ``_nr = i``.

    The outputs' arrays are kept for the backward (``saved_outputs``), with their version
    counters so that modifying an output in place makes the backward fail as in PyTorch.
    """
    first = next(i for i, t in enumerate(outs) if t is not None)
    record(node_cls, outs[first], inputs, saved, ctx)
    node = outs[first].grad_fn
    vcs = []
    for i, t in enumerate(outs):
        if t is None:
            vcs.append(None)
            continue
        t.requires_grad = True
        t.grad_fn = node
        if i:
            t._nr = i
        vc = t._vc = [0]
        vcs.append(vc)
    node.out_data = tuple(None if t is None else t._data for t in outs)
    node.ctx = (ctx, vcs)
    return outs


def multi_ctx(node):
    """The ``ctx`` given to ``record_multi``."""
    return node.ctx[0]


def saved_outputs(node):
    """The outputs of a ``record_multi`` node as tensors; part of the graph when the backward
    itself is recorded (``create_graph=True``), so that double backward sees through them."""
    arrays = node.out_data
    if arrays is None:
        raise RuntimeError(node._freed_msg)
    res = []
    for i, (a, vc) in enumerate(zip(arrays, node.ctx[1])):
        if a is None:
            res.append(None)
            continue
        if vc[0]:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{node.name()} output {i}] is at version {vc[0]}; expected "
                "version 0 instead. Hint: enable anomaly detection to find the operation that "
                "failed to compute its gradient, with ember.autograd.set_detect_anomaly(True).")
        t = _make(a, node.device)
        if GRAD.enabled:
            t.requires_grad = True
            t.grad_fn = node
            if i:
                t._nr = i
        res.append(t)
    return res


def kernel_dtype(A, kernel: str) -> None:
    """PyTorch's dispatch error for a LAPACK kernel that has no version for ``A``'s dtype
    (integers, bool, half)."""
    dt = A._data.dtype
    if dt.kind != "f" or dt == np.float16:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_pretty(dt)}\'')


def not_differentiable(name: str, error=RuntimeError):
    """A node class for an op PyTorch does not differentiate: its backward raises ``error``
    with PyTorch's message (so the failure comes at ``backward()``, as in PyTorch)."""

    def backward(node, grad):
        raise error(node.ctx)

    return make_node_class(name, backward)


def record_not_differentiable(node_cls, out, inputs, message: str) -> None:
    """Attach ``node_cls`` (from ``not_differentiable``) to ``out`` when an input requires
    grad, so that ``out.requires_grad`` is as in PyTorch and backward raises ``message``."""
    if GRAD.enabled and any(t.requires_grad for t in inputs):
        record(node_cls, out, inputs, (), message)


def flatten_batch(arr, core: int = 2):
    """``arr`` reshaped to (batch, *last ``core`` dims) (well defined for empty batches and
    empty matrices, where ``reshape(-1, ...)`` is not)."""
    shape = arr.shape
    batch = 1
    for s in shape[:len(shape) - core]:
        batch *= s
    return arr.reshape((batch,) + shape[len(shape) - core:])
