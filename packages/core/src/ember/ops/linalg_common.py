"""What the kernels of ``ember.linalg`` share: PyTorch's argument checks and errors, the
result types, and the recording of ops with several differentiable outputs."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .. import return_types as _rt
from .._device import xp_of
from .._dtype import scalar_type_name
from .._tensor import _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record


class _LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (``torch.linalg.LinAlgError``, whose class
    is named ``_LinAlgError`` as PyTorch's ``torch._C._LinAlgError``)."""


# its public home (as numpy.linalg.LinAlgError's): ``ember.linalg._LinAlgError`` resolves, so
# that instances pickle
_LinAlgError.__module__ = "ember.linalg"
LinAlgError = _LinAlgError

# PyTorch's ``torch.return_types``: named tuples with PyTorch's type names and fields
SlogdetResult = _rt.slogdet
LinalgSlogdetResult = _rt.linalg_slogdet
SvdResult = _rt.svd
LinalgSvdResult = _rt.linalg_svd
QrResult = _rt.qr
LinalgQrResult = _rt.linalg_qr
LinalgEighResult = _rt.linalg_eigh
LinalgEigResult = _rt.linalg_eig
LinalgLstsqResult = _rt.linalg_lstsq
LinalgInvExResult = _rt.linalg_inv_ex
LinalgCholeskyExResult = _rt.linalg_cholesky_ex
LinalgLuResult = _rt.linalg_lu
LinalgLuFactorResult = _rt.linalg_lu_factor
LinalgLuFactorExResult = _rt.linalg_lu_factor_ex
LuUnpackResult = _rt.lu_unpack
LinalgLdlFactorResult = _rt.linalg_ldl_factor
LinalgLdlFactorExResult = _rt.linalg_ldl_factor_ex
LinalgSolveExResult = _rt.linalg_solve_ex
GeqrfResult = _rt.geqrf


# -- PyTorch's argument checks ---------------------------------------------------------------

def check_float(A, fn: str, kernel: str | None = None) -> None:
    """PyTorch's dtype checks of a LAPACK-backed function ``fn``. A float16/bfloat16 input
    gets the dispatch error of PyTorch's ``kernel`` when one is named (PyTorch reaches the
    kernel only for a non-empty input, except geqrf's: an empty one passes here), its
    "Low precision" error otherwise."""
    dt = A._data.dtype
    if dt not in _dtype.FLOATING_NP and dt not in _dtype.COMPLEX_NP:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{scalar_type_name(dt)}")
    if dt in _dtype.OPMATH:  # float16, bfloat16
        if kernel is None:
            raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got "
                               f"{scalar_type_name(dt)}")
        if A._data.size or kernel == "geqrf_cpu":
            raise NotImplementedError(f'"{kernel}" not implemented for '
                                      f"'{scalar_type_name(dt)}'")


def check_dims(d, fn: str, name: str = "A") -> None:
    """The array ``d`` (the tensor ``name`` of ``fn``) is a (batch of) matrix."""
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")


def check_square(d, fn: str = "") -> None:
    """The matrices of the array ``d`` are square (``fn``, when given, prefixes the error)."""
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{fn + ': ' if fn else ''}A must be batches of square matrices, but "
                           f"they are {d.shape[-2]} by {d.shape[-1]} matrices")


def check_matrix(A, fn: str, square: bool = False, kernel: str | None = None) -> None:
    """``A`` is a (batch of) matrix, square if asked, of a floating dtype (``kernel``: the
    PyTorch kernel whose dispatch error a float16/bfloat16 input gets, see ``check_float``)."""
    check_dims(A._data, fn)
    if square:
        check_square(A._data, fn)
    check_float(A, fn, kernel)


def lapack(fn, *arrays, **kwargs):
    """``fn(*arrays, **kwargs)`` (a NumPy/CuPy LAPACK routine). float16/bfloat16 arrays, which
    LAPACK has no routine for and which get past ``check_float`` only when empty (PyTorch
    returns their empty result, or the determinant 1 of a 0 x 0 matrix), run in float32 and
    their results come back in the first array's dtype."""
    dt = arrays[0].dtype
    if dt not in _dtype.OPMATH:
        return fn(*arrays, **kwargs)
    r = fn(*(a.astype(np.float32) if a.dtype in _dtype.OPMATH else a for a in arrays),
           **kwargs)
    if isinstance(r, tuple):
        return tuple(x.astype(dt) for x in r)
    return r.astype(dt)


def check_linear_solve(b, A, fn: str) -> None:
    """PyTorch's ``linearSolveCheckInputs`` for ``A X = b`` (arrays): one dtype, square
    ``A``, as many rows in ``b`` as ``A`` has columns."""
    if b.dtype != A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{scalar_type_name(b.dtype)} and A of type "
                           f"{scalar_type_name(A.dtype)} instead.")
    check_square(A)
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {fn}: each A matrix is "
                           f"{A.shape[-2]} by {A.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")


def check_equation_shapes(n: int, b, left: bool, fn: str) -> None:
    """The array ``b`` fits ``A X = B`` (``X A = B`` unless ``left``) for an n x n ``A``."""
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")


def kernel_dtype(A, kernel: str, complex_ok: bool = False) -> None:
    """PyTorch's dispatch error for a LAPACK kernel that has no version for ``A``'s dtype
    (integers, bool, half, bfloat16; complex unless ``complex_ok``: ember's own kernels that
    are not written for complex numbers refuse them)."""
    dt = A._data.dtype
    if complex_ok and dt in _dtype.COMPLEX_NP:
        return
    if dt not in _dtype.FLOATING_NP or dt in _dtype.OPMATH:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')


def batch_prefix(A, index: int) -> str:
    return f"(Batch element {index}): " if A._data.ndim > 2 else ""


# -- LAPACK's info on the error path ----------------------------------------------------------

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


def info_zeros(A):
    """A zero ``info`` (int32, one per matrix of ``A``): LAPACK's success."""
    return const(A, xp_of(A).zeros(A._data.shape[:-2], dtype=np.int32))


def with_info(result_cls, factor, A, info_of, check_errors: bool, names=None, partial=None):
    """``result_cls(factor(A), info)`` for an ``_ex`` variant: zero ``info`` on success. When
    ``factor`` raises ``LinAlgError``: with ``check_errors`` the error again, its prefix
    ``names[0]`` (the function's) replaced with ``names[1]`` (the ``_ex`` variant's), as
    PyTorch's; otherwise each matrix of the batch on its own: the factor of those that
    succeed, for those that fail ``info_of(matrix)`` (LAPACK's info) and ``partial(matrix)``
    (what LAPACK leaves) or NaNs. Runs matrix by matrix only on the error path."""
    try:
        return result_cls(factor(A), info_zeros(A))
    except LinAlgError as exc:
        if check_errors:
            msg = str(exc)
            if names is not None and msg.startswith(names[0]):
                raise LinAlgError(names[1] + msg[len(names[0]):]) from None
            raise
    d = A._data
    xp = xp_of(A)
    flat = flatten_batch(np.asarray(A._host()))
    infos = np.zeros(flat.shape[0], dtype=np.int32)
    parts = []
    for i, m in enumerate(flat):
        info = info_of(m)
        r = None
        if not info:
            try:
                r = np.asarray(factor(const(A, xp.asarray(m)))._host())
            except LinAlgError:  # rounding: LAPACK fails where the info check did not
                info = m.shape[-1]
        if info:
            r = partial(m) if partial is not None else np.full(m.shape, np.nan)
        infos[i] = info
        parts.append(np.asarray(r).astype(d.dtype, copy=False))
    res = np.stack(parts).reshape(d.shape) if parts else np.zeros(d.shape, d.dtype)
    return result_cls(const(A, xp.asarray(res)),
                      const(A, xp.asarray(infos.reshape(d.shape[:-2]))))


# -- tensors and arrays -------------------------------------------------------------------------

def needs_grad(*tensors) -> bool:
    """Whether an op on ``tensors`` is recorded by autograd."""
    return GRAD.enabled and any(t.requires_grad for t in tensors)


def const(like, array):
    """``array`` as a tensor on ``like``'s device, outside the graph."""
    return _make(array, like._device)


def eye_like(t, n: int | None = None):
    """The identity matrix of ``t``'s dtype and device (size ``n`` or ``t``'s last dim)."""
    d = t._data
    return _make(xp_of(t).eye(d.shape[-1] if n is None else n, dtype=d.dtype), t._device)


def flatten_batch(arr, core: int = 2):
    """``arr`` reshaped to (batch, *last ``core`` dims) (well defined for empty batches and
    empty matrices, where ``reshape(-1, ...)`` is not)."""
    shape = arr.shape
    batch = 1
    for s in shape[:len(shape) - core]:
        batch *= s
    return arr.reshape((batch,) + shape[len(shape) - core:])


def cat(tensors, dim: int):
    """``ember.cat(tensors, dim)`` (looked up on use, as a backward's callers see it)."""
    from .. import cat as cat_

    return cat_(tensors, dim)


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


def complex_own(*node_classes) -> None:
    """Mark node classes whose backward is written for complex numbers (PyTorch's formulas,
    conjugate transposes included): autograd runs them as they are on complex tensors."""
    for cls in node_classes:
        cls._complex = "own"



def not_differentiable(name: str, error=RuntimeError):
    """A node class for an op PyTorch does not differentiate: its backward raises ``error``
    with PyTorch's message (so the failure comes at ``backward()``, as in PyTorch)."""

    def backward(node, grad):
        raise error(node.ctx)

    return make_node_class(name, backward)


def record_not_differentiable(node_cls, out, inputs, message: str) -> None:
    """Attach ``node_cls`` (from ``not_differentiable``) to ``out`` when an input requires
    grad, so that ``out.requires_grad`` is as in PyTorch and backward raises ``message``."""
    if needs_grad(*inputs):
        record(node_cls, out, inputs, (), message)
