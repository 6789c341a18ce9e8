"""Products and decompositions (``ember/ops/linalg.py``), the remaining elementwise ops of
``ember/ops/pointwise.py`` (abs, rounding, clamp, where, lerp, closeness, frexp, ...) and
addcmul/addcdiv/addr (``ember/ops/arith.py``).

Products see 1-D, 2-D and batched operands, PyTorch's broadcasting and 1-D rules, empty
and non-contiguous (transposed) operands and their keyword arguments (``beta``/``alpha``,
``dims``, ``dim``). Decompositions see inputs on which they are well defined and smooth:
diagonally dominant matrices (nonsingular, positive determinant), symmetric positive
definite ones built as ``A @ A.mT + n * I`` (cholesky), matrices with well-separated
singular values (svd, pinverse), triangular factors with a strong diagonal, and the packed
outputs of LU and QR factorizations computed here in NumPy. Outputs defined only up to a
sign (svd's singular vectors) are compared through quantities that are not (``output=``).
Elementwise ops see their domains away from the points where they do not differentiate
(integers for rounding, the bounds of clamp, 0 for abs).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import ALL, FLOAT, FLOAT_AND_INT, INTEGRAL, SampleInput, SeedStream, define, make

#: every dtype but bool and float16 (matrix products: PyTorch's CPU kernels take integers)
NUMERIC = FLOAT + INTEGRAL
#: every dtype but bool
NO_BOOL = tuple(d for d in ALL if d != "bool")
_SEEDS = SeedStream(20_000)


# -- making inputs ---------------------------------------------------------------------------

def _rng():
    return np.random.default_rng(next(_SEEDS))


def _tensor(arr, dtype, device, requires_grad=False, transposed=False):
    """``arr`` as a tensor of ``dtype``; ``transposed``: a leaf laid out column-major (the
    ``mT`` of a contiguous tensor), a non-contiguous input."""
    import ember

    arr = np.asarray(arr).astype(dtype)
    if transposed:
        t = ember.tensor(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), device=device).mT
        t = t.detach()
    else:
        t = ember.tensor(arr, device=device)
    if requires_grad and dtype.startswith("float"):
        t.requires_grad_(True)
    return t


def _transposed(shape, dtype, device, requires_grad=False, **kw):
    """A random matrix (batch) of ``shape`` stored transposed: non-contiguous."""
    t = make(shape[:-2] + (shape[-1], shape[-2]), dtype, device, **kw)
    return _tensor(t.numpy().swapaxes(-1, -2), dtype, device, requires_grad, transposed=True)


def _eye(n, batch=()):
    return np.broadcast_to(np.eye(n), batch + (n, n))


def _dominant(shape, rng):
    """A diagonally dominant matrix (batch): nonsingular, with a positive determinant."""
    n = shape[-1]
    return rng.uniform(-1, 1, shape) + (n + 1) * _eye(n, shape[:-2])


def _spd(shape, rng):
    """A symmetric positive definite matrix (batch): ``A @ A.mT + n * I``."""
    a = rng.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * _eye(shape[-1], shape[:-2])


def _separated(shape, rng, values=None):
    """A matrix (batch) with well-separated singular values (``values``, else 2, 3.5, 5,
    ...)."""
    *batch, m, n = shape
    k = min(m, n)
    s = np.asarray(values if values is not None else np.arange(k, 0, -1) * 1.5 + 0.5, float)
    out = np.empty(shape)
    for idx in np.ndindex(*batch):
        u, _ = np.linalg.qr(rng.standard_normal((m, k)))
        v, _ = np.linalg.qr(rng.standard_normal((n, k)))
        out[idx] = (u * s) @ v.T
    return out


def _triangular(shape, rng, upper, unit=False):
    """A triangular matrix (batch) with a strong diagonal (with ``unit``, a random diagonal:
    the solver must ignore it)."""
    n = shape[-1]
    a = rng.uniform(-1, 1, shape)
    a = np.triu(a) if upper else np.tril(a)
    d = rng.uniform(1.5, 2.5, shape[:-1])
    idx = np.arange(n)
    a[..., idx, idx] = rng.uniform(-3, 3, shape[:-1]) if unit else d
    return a


def _np_lu(a):
    """LAPACK getrf in NumPy: the packed ``LU`` and 1-based int32 pivots (partial pivoting by
    the largest magnitude)."""
    a = np.array(a, dtype=float)
    *batch, m, n = a.shape
    k = min(m, n)
    piv = np.empty(tuple(batch) + (k,), dtype=np.int32)
    for idx in np.ndindex(*batch):
        x = a[idx]
        for j in range(k):
            p = j + int(np.argmax(np.abs(x[j:, j])))
            piv[idx + (j,)] = p + 1
            x[[j, p]] = x[[p, j]]
            x[j + 1:, j] /= x[j, j]
            x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
    return a, piv


def _np_geqrf(a):
    """LAPACK geqrf in NumPy: ``R`` on and above the diagonal, the Householder vectors below,
    and their scales ``tau``."""
    a = np.asarray(a, dtype=float)
    *batch, m, n = a.shape
    packed = np.empty(a.shape)
    tau = np.empty(tuple(batch) + (min(m, n),))
    for idx in np.ndindex(*batch):
        h, t = np.linalg.qr(a[idx], mode="raw")
        packed[idx], tau[idx] = h.T, t
    return packed, tau


def _np_householder(a, tau):
    """``Q`` (the first ``n`` columns) of the reflectors in ``a`` (below the diagonal) and
    ``tau``: the product ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^T``."""
    *batch, m, n = a.shape
    out = np.empty(a.shape, dtype=np.float64)
    for idx in np.ndindex(*batch):
        q = np.eye(m)
        for i in range(tau.shape[-1]):
            v = np.zeros(m)
            v[i] = 1
            v[i + 1:] = a[idx][i + 1:, i]
            q = q @ (np.eye(m) - tau[idx][i] * np.outer(v, v))
        out[idx] = q[:, :n]
    return out.astype(a.dtype)


def _np_full_q(a, tau):
    """The square ``Q`` (m x m) of the reflectors in ``a`` and ``tau``."""
    *batch, m, n = a.shape
    wide = np.zeros(tuple(batch) + (m, m), dtype=a.dtype)
    k = min(m, n)
    wide[..., :k] = a[..., :k]
    return _np_householder(wide, tau)


def _np_expm(a):
    """The matrix exponential by scaling and squaring a Taylor series, in float64."""
    x = np.asarray(a, dtype=np.float64)
    norm = np.abs(x).sum(-1).max() if x.size else 0.0
    s = max(0, int(np.ceil(np.log2(max(norm, 1e-300)))) + 1)
    x = x / 2 ** s
    n = x.shape[-1]
    term = np.broadcast_to(np.eye(n), x.shape).copy()
    out = term.copy()
    for k in range(1, 30):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out.astype(a.dtype)


def _float_dtype(*arrays):
    """The float dtype PyTorch computes an integer-input float function in."""
    dt = np.result_type(*arrays)
    return dt if dt.kind == "f" else np.dtype(np.float32)


# -- products --------------------------------------------------------------------------------

def _pairs_sampler(pairs, kwargs=(), transposed=True):
    """Samples ``(a, b)`` of the given shapes, a non-contiguous pair, (``transposed``) a
    column-major ``a``, then ``a, b`` with each of ``kwargs``."""

    def samples(device, dtype, requires_grad=False):
        def T(shape, **kw):
            return make(shape, dtype, device, requires_grad=requires_grad, **kw)

        for sa, sb in pairs:
            yield SampleInput(T(sa), T(sb), name=f"{sa}x{sb}")
        a, b = pairs[0]
        if transposed and len(a) >= 2:
            yield SampleInput(_transposed(a, dtype, device, requires_grad), T(b),
                              name="transposed input")
        yield SampleInput(T(a, noncontiguous=True), T(b, noncontiguous=True),
                          name="noncontiguous")
        for kw in kwargs:
            yield SampleInput(T(a), T(b), name=str(kw), **kw)

    return samples


def _ref_matmul(a, b):
    return np.matmul(a, b)


define("matmul", _pairs_sampler((((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                 ((2, 2, 3), (3, 4)), ((3,), (2, 3, 4)), ((2, 3), (2, 3, 4)),
                                 ((2, 1, 2, 3), (3, 3, 2)), ((2, 2, 3), (2, 3, 1)),
                                 ((0, 3), (3, 4)), ((2, 0), (0, 3)), ((0, 2, 3), (3, 2)))),
       dtypes=NUMERIC, ref=_ref_matmul)
define("mm", _pairs_sampler((((2, 3), (3, 4)), ((1, 5), (5, 1)), ((0, 3), (3, 2)),
                             ((2, 0), (0, 3)))), dtypes=NUMERIC, ref=_ref_matmul)
define("bmm", _pairs_sampler((((2, 3, 4), (2, 4, 2)), ((1, 1, 3), (1, 3, 1)),
                              ((0, 3, 4), (0, 4, 2)), ((2, 3, 0), (2, 0, 2)))),
       dtypes=NUMERIC, ref=_ref_matmul)
define("mv", _pairs_sampler((((2, 3), (3,)), ((1, 1), (1,)), ((0, 3), (3,)), ((2, 0), (0,)))),
       dtypes=NUMERIC, ref=_ref_matmul)
define("dot", _pairs_sampler((((5,), (5,)), ((1,), (1,)), ((0,), (0,)))), dtypes=NUMERIC,
       ref=lambda a, b: np.dot(a, b))
define("vdot", _pairs_sampler((((5,), (5,)), ((1,), (1,)), ((0,), (0,)))), dtypes=NUMERIC,
       ref=lambda a, b: np.vdot(a, b))
define("inner", _pairs_sampler((((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 3)), ((2, 3), ()),
                                ((2, 3, 4), (4,)), ((2, 4), (3, 2, 4)), ((0, 3), (2, 3)))),
       dtypes=NUMERIC, ref=lambda a, b: np.inner(a, b))


def _mixed_outer_samples(device, dtype, requires_grad=False):
    yield from _pairs_sampler((((3,), (4,)), ((1,), (2,)), ((0,), (3,))))(device, dtype,
                                                                          requires_grad)
    if dtype in FLOAT:  # PyTorch's type promotion
        yield SampleInput(make((3,), dtype, device, requires_grad=requires_grad),
                          make((2,), "int64", device), name="float x int64")


define("outer", _mixed_outer_samples, dtypes=NUMERIC, ref=lambda a, b: np.outer(a, b))
# no transposed operand: PyTorch 2.13's kron raises on one ("view size is not compatible with
# input tensor's size and stride"), its own bug; ember's result is checked against NumPy
define("kron", _pairs_sampler((((2, 3), (3, 2)), ((2,), (3,)), ((2,), (2, 2)), ((2, 1, 2), (2, 3)),
                               ((), (2, 2)), ((0, 2), (2, 3))), transposed=False),
       dtypes=NUMERIC, ref=lambda a, b: np.kron(a, b))


def _beta_alpha(dtype):
    """``beta``/``alpha`` keyword pairs for ``dtype`` (integers take integral scalars)."""
    if dtype in FLOAT:
        return ({"beta": 0.5, "alpha": 2.0}, {"beta": 0, "alpha": -1.5}, {"alpha": 0})
    return ({"beta": 2, "alpha": 3}, {"beta": 0}, {"alpha": 0})


def _add_product_sampler(in_shapes, m1, m2):
    """``(input, m1, m2)`` for each input shape (full, broadcast, 0-d), non-contiguous
    operands, ``beta``/``alpha`` and an empty product."""

    def samples(device, dtype, requires_grad=False):
        def T(shape, **kw):
            return make(shape, dtype, device, requires_grad=requires_grad, **kw)

        for s in in_shapes:
            yield SampleInput(T(s), T(m1), T(m2), name=f"input{s}")
        full = in_shapes[0]
        yield SampleInput(T(full, noncontiguous=True), T(m1, noncontiguous=True),
                          T(m2, noncontiguous=True), name="noncontiguous")
        if len(m1) >= 2:
            yield SampleInput(T(full), _transposed(m1, dtype, device, requires_grad), T(m2),
                              name="transposed m1")
        for kw in _beta_alpha(dtype):
            yield SampleInput(T(full), T(m1), T(m2), name=str(kw), **kw)
        k0 = m2[:-2] + (0,) + m2[-1:] if len(m2) >= 2 else (0,)
        yield SampleInput(T(full), T(m1[:-1] + (0,)), T(k0), name="empty product: input")
        if dtype in FLOAT:
            # beta == 0 ignores input, nan included (forward only: nan has no gradient)
            if not requires_grad:
                nan = make(full, dtype, device)
                nan.fill_(float("nan"))
                yield SampleInput(nan, T(m1), T(m2), beta=0, name="beta=0 ignores nan")

    return samples


def _addmm_ref(i, a, b, beta=1, alpha=1):
    return _add_ref(i, a @ b, beta, alpha)


def _add_ref(i, prod, beta, alpha):
    dt = np.result_type(i, prod)
    out = (prod * dt.type(alpha)).astype(dt)
    if beta != 0:
        out = out + (i * dt.type(beta)).astype(dt)
    return np.broadcast_to(out, np.broadcast_shapes(out.shape, i.shape)).astype(dt)


define("addmm", _add_product_sampler(((2, 4), (4,), (1, 4), ()), (2, 3), (3, 4)),
       dtypes=NUMERIC, ref=_addmm_ref)
define("addmv", _add_product_sampler(((2,), (1,), ()), (2, 3), (3,)), dtypes=NUMERIC,
       ref=lambda i, a, b, beta=1, alpha=1: _add_ref(i, a @ b, beta, alpha))
define("baddbmm", _add_product_sampler(((2, 3, 4), (3, 4), (1, 1, 4), ()), (2, 3, 5),
                                       (2, 5, 4)),
       dtypes=NUMERIC, ref=lambda i, a, b, beta=1, alpha=1: _add_ref(i, a @ b, beta, alpha))
define("addbmm", _add_product_sampler(((3, 4), (4,), ()), (2, 3, 5), (2, 5, 4)),
       dtypes=NUMERIC,
       ref=lambda i, a, b, beta=1, alpha=1: _add_ref(i, (a @ b).sum(0).astype(a.dtype), beta,
                                                     alpha))


def _einsum_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput("ij,jk->ik", T((2, 3)), T((3, 4)), name="matmul")
    yield SampleInput("ij,jk", T((2, 3)), T((3, 4)), name="implicit output")
    yield SampleInput("bij,bjk->bik", T((2, 2, 3)), T((2, 3, 2)), name="bmm")
    yield SampleInput("i,j->ij", T((3,)), T((2,)), name="outer")
    yield SampleInput("i,i->", T((4,)), T((4,)), name="dot")
    yield SampleInput("ii->i", T((3, 3)), name="diagonal")
    yield SampleInput("ii", T((3, 3)), name="trace")
    yield SampleInput("ij->ji", T((2, 3)), name="transpose")
    yield SampleInput("ijk->", T((2, 3, 2)), name="sum")
    yield SampleInput("...ij,...jk->...ik", T((2, 2, 3)), T((3, 2)), name="ellipsis broadcast")
    yield SampleInput("bi,bi->b", T((1, 3)), T((2, 3)), name="size-1 broadcast")
    yield SampleInput("ij,jk,kl->il", T((2, 3)), T((3, 2)), T((2, 2)), name="three operands")
    yield SampleInput("i j , j k -> i k", T((2, 3)), T((3, 2)), name="spaces")
    yield SampleInput("ij,jk->ik", [T((2, 3)), T((3, 2))], name="operands as a list")
    yield SampleInput("ij,jk->ik", T((0, 3)), T((3, 2)), name="empty")
    yield SampleInput("ij,jk->ik", T((2, 3), noncontiguous=True),
                      _transposed((3, 2), dtype, device, requires_grad), name="noncontiguous")


def _einsum_ref(eq, *ops):
    if len(ops) == 1 and isinstance(ops[0], list):
        ops = tuple(ops[0])
    r = np.einsum(eq.replace(" ", ""), *ops)
    return r.astype(ops[0].dtype) if ops[0].dtype.kind in "iu" else r


# integer operands with a subscript summed out of one operand alone ('ii', 'ijk->') give
# int64, as PyTorch's (it sums them with at::sum): the PyTorch comparison checks the dtypes
define("einsum", _einsum_samples, dtypes=NUMERIC, ref=_einsum_ref)


def _tensordot_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(T((2, 3, 4)), T((3, 4, 2)), name="dims=2 (default)")
    yield SampleInput(T((2, 3, 4)), T((4, 2)), dims=1, name="dims=1")
    yield SampleInput(T((2, 3)), T((2,)), dims=0, name="dims=0")
    yield SampleInput(T((2, 3, 4)), T((4, 3, 2)), dims=([1, 2], [1, 0]), name="dim lists")
    yield SampleInput(T((2, 3, 4)), T((4, 5)), dims=([-1], [0]), name="negative dims")
    yield SampleInput(T((2, 3)), T((3, 2)), dims=([1], [0]), name="one dim")
    yield SampleInput(T((0, 3)), T((3, 2)), dims=1, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), _transposed((4, 2), dtype, device,
                                                                 requires_grad),
                      dims=1, name="noncontiguous")


def _tensordot_ref(a, b, dims=2):
    return np.tensordot(a, b, axes=dims if isinstance(dims, int) else tuple(dims))


define("tensordot", _tensordot_samples, dtypes=NUMERIC, ref=_tensordot_ref)


def _trace_samples(device, dtype, requires_grad=False):
    for shape in ((3, 3), (2, 4), (4, 2), (1, 1), (0, 0), (0, 3)):
        yield SampleInput(make(shape, dtype, device, requires_grad=requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(_transposed((3, 3), dtype, device, requires_grad), name="transposed")


def _trace_ref(a):
    return np.trace(a, dtype=np.int64 if a.dtype.kind in "iu" else a.dtype)


define("trace", _trace_samples, dtypes=NUMERIC, ref=_trace_ref)


def _cross_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(T((3,)), T((3,)), dim=0, name="vectors")
    yield SampleInput(T((4, 3)), T((4, 3)), dim=1, name="dim=1")
    yield SampleInput(T((4, 3)), T((4, 3)), dim=-1, name="dim=-1")
    yield SampleInput(T((3, 2, 2)), T((3, 2, 2)), dim=0, name="dim=0")
    yield SampleInput(T((3, 2, 3)), T((3, 2, 3)), 2, name="dim positional")
    yield SampleInput(T((4, 3)), T((1, 3)), dim=1, name="broadcast")
    yield SampleInput(T((2, 3, 4)), T((2, 3, 4)), name="dim=None: the first of size 3")
    yield SampleInput(T((0, 3)), T((0, 3)), dim=1, name="empty")
    yield SampleInput(T((4, 3), noncontiguous=True), T((4, 3), noncontiguous=True), dim=1,
                      name="noncontiguous")


def _cross_ref(a, b, dim=None):
    if dim is None:
        dim = next(i for i, s in enumerate(np.broadcast_shapes(a.shape, b.shape)) if s == 3)
    a, b = np.broadcast_arrays(a, b)
    return np.cross(a, b, axis=dim) if a.size else np.empty(a.shape, a.dtype)


define("cross", _cross_samples, dtypes=NUMERIC, ref=_cross_ref)


def _chain_matmul_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(T((2, 3)), T((3, 4)), T((4, 2)), name="three")
    yield SampleInput(T((2, 3)), T((3, 4)), name="two")
    yield SampleInput(T((2, 3)), T((3, 1)), T((1, 4)), T((4, 2)), name="four")
    yield SampleInput(T((2, 3)), name="one")
    yield SampleInput(T((2, 3), noncontiguous=True), _transposed((3, 2), dtype, device,
                                                                 requires_grad),
                      name="noncontiguous")
    yield SampleInput(T((0, 3)), T((3, 2)), name="empty")


def _chain_ref(*ms):
    out = ms[0]
    for m in ms[1:]:
        out = out @ m
    return out


define("chain_matmul", _chain_matmul_samples, dtypes=NUMERIC, ref=_chain_ref)


# -- decompositions and matrix functions ----------------------------------------------------

def _square_sampler(build, shapes=((3, 3), (2, 3, 3), (1, 1), (0, 0), (2, 0, 0)),
                    kwargs=({},), transposed=True):
    """Samples ``build(shape, rng)`` for each shape, with each of ``kwargs`` on the first,
    and (``transposed``) a non-contiguous (column-major) matrix."""

    def samples(device, dtype, requires_grad=False):
        rng = _rng()
        for shape in shapes:
            yield SampleInput(_tensor(build(shape, rng), dtype, device, requires_grad),
                              name=f"shape{shape}")
        for kw in kwargs:
            if kw:
                yield SampleInput(_tensor(build(shapes[0], rng), dtype, device,
                                          requires_grad), name=str(kw), **kw)
        if transposed:
            yield SampleInput(_tensor(build(shapes[0], rng), dtype, device, requires_grad,
                                      transposed=True), name="transposed")

    return samples


def _matrix_power_samples(device, dtype, requires_grad=False):
    rng = _rng()
    powers = (0, 1, 2, 3, 5) + ((-1, -2) if dtype in FLOAT else ())
    for n in powers:
        arr = _dominant((3, 3), rng) / 3 if dtype in FLOAT else rng.integers(-3, 4, (3, 3))
        yield SampleInput(_tensor(arr, dtype, device, requires_grad), n, name=f"n={n}")
    arr = _dominant((2, 3, 3), rng) / 3 if dtype in FLOAT else rng.integers(-3, 4, (2, 3, 3))
    yield SampleInput(_tensor(arr, dtype, device, requires_grad), 3, name="batch")
    if dtype in FLOAT:
        yield SampleInput(_tensor(_dominant((2, 2, 2), rng), dtype, device, requires_grad), -3,
                          name="batch, negative")
    yield SampleInput(_tensor(np.ones((0, 0)), dtype, device, requires_grad), 2, name="empty")
    yield SampleInput(_tensor(rng.integers(-2, 3, (3, 3)), dtype, device, requires_grad,
                              transposed=True), 2, name="transposed")


def _matrix_power_ref(a, n):
    if a.dtype.kind in "iu":
        out = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
        for _ in range(n):
            out = out @ a
        return out
    return np.linalg.matrix_power(a, n)


define("matrix_power", _matrix_power_samples, dtypes=FLOAT_AND_INT, ref=_matrix_power_ref)
define("inverse", _square_sampler(_dominant), dtypes=FLOAT, ref=np.linalg.inv,
       atol=1e-5, rtol=1e-5)


def _det_build(shape, rng):
    a = _dominant(shape, rng)
    if a.ndim >= 2 and a.shape[-1] >= 2:
        a[..., [0, 1], :] = a[..., [1, 0], :]  # a row swap: negative determinants
    return a


define("det", _square_sampler(_det_build), dtypes=FLOAT, ref=np.linalg.det, rtol=1e-5)


def _logdet_samples(device, dtype, requires_grad=False):
    yield from _square_sampler(_dominant)(device, dtype, requires_grad)
    if not requires_grad:  # nan (a negative determinant) and -inf (a singular matrix)
        rng = _rng()
        yield SampleInput(_tensor(_det_build((3, 3), rng), dtype, device),
                          name="negative determinant")
        yield SampleInput(_tensor(np.ones((3, 3)), dtype, device), name="singular")


def _logdet_ref(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, logabs).astype(a.dtype)


define("logdet", _logdet_samples, dtypes=FLOAT, ref=_logdet_ref, rtol=1e-5)
define("slogdet", _square_sampler(_det_build), dtypes=FLOAT, rtol=1e-5)


def _cholesky_ref(a, upper=False):
    low = np.linalg.cholesky(a) if a.size else a.copy()
    return np.swapaxes(low, -1, -2).copy() if upper else low


def _structured_grad_1x1(samples, position=0):
    """``samples`` whose structured operand (symmetric, triangular: ``position`` 0 is the
    input, 1 the first argument) requires grad only where it is 1x1.

    cholesky reads one triangle of its symmetric input and cholesky_solve/cholesky_inverse
    one triangle of their factor, while their gradients (PyTorch's formulas, which ember
    matches) assume a perturbation that keeps the structure. Finite differences of single
    elements do not, so gradcheck of a raw n x n operand fails in PyTorch too; PyTorch's
    OpInfos wrap the op (gradcheck_wrapper_hermitian_input / _triangular_input), which the
    generic tests cannot (cholesky is gradchecked so in tests/core/test_linalg.py, the
    factor gradients compared with PyTorch's in tests/core/test_linalg_factorizations.py). The other
    operands (cholesky_solve's right-hand side) are gradchecked here."""

    def wrapped(device, dtype, requires_grad=False):
        for s in samples(device, dtype, requires_grad):
            t = s.input if position == 0 else s.args[position - 1]
            if t.requires_grad and t.shape[-1] > 1:
                t.requires_grad_(False)
            yield s

    return wrapped


define("cholesky", _structured_grad_1x1(_square_sampler(
    _spd, shapes=((3, 3), (2, 3, 3), (1, 1), (3, 1, 1), (0, 0), (2, 0, 0)),
    kwargs=({}, {"upper": True}, {"upper": False}))),
    dtypes=FLOAT, ref=_cholesky_ref, rtol=1e-5)


def _pinverse_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (4, 2), (2, 4), (2, 3, 2), (0, 3)):
        yield SampleInput(_tensor(_separated(shape, rng), dtype, device, requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(_tensor(_separated((3, 3), rng, (3.0, 1.5, 0.5)), dtype, device,
                              requires_grad), rcond=0.1, name="rcond cuts none")
    if not requires_grad:
        # a singular value (0.01) under rcond * the largest (0.3) is cut: the result is the
        # pseudo-inverse of a rank-2 truncation of the input, while PyTorch's gradient
        # formula (which ember's matches) assumes the input itself has rank 2, so finite
        # differences disagree with it in PyTorch too: forward only
        yield SampleInput(_tensor(_separated((3, 3), rng, (3.0, 1.5, 0.01)), dtype, device),
                          rcond=0.1, name="rcond cuts one")
    yield SampleInput(_tensor(_separated((3, 2), rng), dtype, device, requires_grad,
                              transposed=True), name="transposed")


def _pinv_ref(a, rcond=1e-15):
    if not a.size:
        return np.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    return np.linalg.pinv(a, rcond=rcond).astype(a.dtype)


define("pinverse", _pinverse_samples, dtypes=FLOAT, ref=_pinv_ref, atol=1e-5, rtol=1e-5)


def _svd_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (4, 3), (3, 4), (2, 3, 2), (1, 1)):
        yield SampleInput(_tensor(_separated(shape, rng), dtype, device, requires_grad),
                          name=f"shape{shape}")
    for shape in ((4, 3), (3, 4)):
        yield SampleInput(_tensor(_separated(shape, rng), dtype, device, requires_grad),
                          some=False, name=f"some=False {shape}")
    yield SampleInput(_tensor(_separated((4, 3), rng), dtype, device, requires_grad),
                      compute_uv=False, name="compute_uv=False")
    yield SampleInput(_tensor(_separated((3, 3), rng), dtype, device, requires_grad,
                              transposed=True), name="transposed")


def _svd_invariants(r):
    """The singular values and the singular vectors up to sign (the reduced ones: the rest
    of a full ``U`` or ``V`` is any basis of a complement)."""
    k = r.S.shape[-1]
    outs = (r.S, r.U[..., :k].abs(), r.V[..., :k].abs())
    return tuple(o for o in outs if o.requires_grad)  # compute_uv=False: zeros, no graph


define("svd", _svd_samples, dtypes=FLOAT, output=_svd_invariants, atol=1e-5, rtol=1e-5,
       skip={"torch": "singular vectors are unique only up to sign and LAPACK builds pick "
                      "different signs (here column 1 of U for a 4x3 input); the generic "
                      "PyTorch comparison compares raw outputs, not output=. "
                      "svd(A, compute_uv=False)'s zero U, V (m x m, n x n, as PyTorch's) "
                      "are checked in tests/core/test_linalg.py"})


def _qr_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (4, 3), (3, 4), (2, 3, 2), (1, 1)):
        yield SampleInput(_tensor(_dominant(shape, rng) if shape[-1] == shape[-2] else
                                  _separated(shape, rng), dtype, device, requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(_tensor(_separated((3, 4), rng), dtype, device, requires_grad),
                      some=False, name="some=False, wide")
    if not requires_grad:  # a complete Q of a tall matrix: its last columns are not unique
        yield SampleInput(_tensor(_separated((4, 3), rng), dtype, device), some=False,
                          name="some=False, tall")
    yield SampleInput(_tensor(_separated((3, 3), rng), dtype, device, requires_grad,
                              transposed=True), name="transposed")


define("qr", _qr_samples, dtypes=FLOAT, atol=1e-5, rtol=1e-5)


def _expm_build(shape, rng):
    return rng.uniform(-1, 1, shape)


define("matrix_exp", _square_sampler(_expm_build, shapes=((3, 3), (2, 3, 3), (1, 1), (0, 0),
                                                          (4, 4))),
       dtypes=FLOAT, ref=_np_expm, rtol=1e-5)


def _cholesky_solve_samples(device, dtype, requires_grad=False):
    rng = _rng()

    def factor(shape, upper):
        low = np.linalg.cholesky(_spd(shape, rng))
        return np.swapaxes(low, -1, -2) if upper else low

    def B(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(B((3, 2)), _tensor(factor((3, 3), False), dtype, device, requires_grad),
                      name="lower")
    yield SampleInput(B((3, 2)), _tensor(factor((3, 3), True), dtype, device, requires_grad),
                      upper=True, name="upper")
    yield SampleInput(B((3, 2)), _tensor(factor((3, 3), False), dtype, device, requires_grad),
                      False, name="upper=False positional")
    yield SampleInput(B((2, 3, 1)), _tensor(factor((2, 3, 3), False), dtype, device,
                                            requires_grad), name="batch")
    yield SampleInput(B((2, 3, 2)), _tensor(factor((3, 3), False), dtype, device,
                                            requires_grad), name="broadcast batch")
    yield SampleInput(B((3, 0)), _tensor(factor((3, 3), False), dtype, device, requires_grad),
                      name="no right-hand side")
    yield SampleInput(B((1, 2)), _tensor(factor((1, 1), False), dtype, device, requires_grad),
                      name="1x1")
    yield SampleInput(B((2, 1, 2)), _tensor(factor((2, 1, 1), True), dtype, device,
                                            requires_grad), upper=True, name="batch of 1x1")
    yield SampleInput(B((3, 2)), _tensor(factor((3, 3), False), dtype, device, requires_grad,
                                         transposed=True), name="transposed factor")


def _cholesky_solve_ref(b, f, upper=False):
    ft = np.swapaxes(f, -1, -2)
    a = ft @ f if upper else f @ ft
    return np.linalg.solve(a, b).astype(b.dtype) if b.size else np.zeros(
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)


define("cholesky_solve", _structured_grad_1x1(_cholesky_solve_samples, 1), dtypes=FLOAT,
       ref=_cholesky_solve_ref, atol=1e-5, rtol=1e-5)


def _cholesky_inverse_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape, upper in (((3, 3), None), ((3, 3), True), ((3, 3), False), ((2, 3, 3), None),
                         ((1, 1), None), ((3, 1, 1), True), ((0, 0), None)):
        low = np.linalg.cholesky(_spd(shape, rng)) if shape[-1] else np.zeros(shape)
        f = np.swapaxes(low, -1, -2) if upper else low
        kw = {} if upper is None else {"upper": upper}
        yield SampleInput(_tensor(f, dtype, device, requires_grad), name=f"{shape} {kw}", **kw)


def _cholesky_inverse_ref(f, upper=False):
    ft = np.swapaxes(f, -1, -2)
    return np.linalg.inv(ft @ f if upper else f @ ft).astype(f.dtype) if f.size else f.copy()


define("cholesky_inverse", _structured_grad_1x1(_cholesky_inverse_samples), dtypes=FLOAT,
       ref=_cholesky_inverse_ref, atol=1e-5, rtol=1e-5)


def _triangular_solve_samples(device, dtype, requires_grad=False):
    rng = _rng()

    def B(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    def A(shape, upper=True, unit=False, transposed=False):
        return _tensor(_triangular(shape, rng, upper, unit), dtype, device, requires_grad,
                       transposed=transposed)

    yield SampleInput(B((3, 2)), A((3, 3)), name="upper (default)")
    yield SampleInput(B((3, 2)), A((3, 3), upper=False), upper=False, name="lower")
    yield SampleInput(B((3, 2)), A((3, 3)), transpose=True, name="transpose")
    yield SampleInput(B((3, 2)), A((3, 3), upper=False), False, True, name="positional")
    yield SampleInput(B((3, 2)), A((3, 3), unit=True), unitriangular=True,
                      name="unitriangular")
    yield SampleInput(B((2, 3, 1)), A((2, 3, 3)), name="batch")
    yield SampleInput(B((2, 3, 2)), A((3, 3), upper=False), upper=False, name="broadcast")
    yield SampleInput(B((3, 2)), A((3, 3), transposed=True), name="transposed A")


define("triangular_solve", _triangular_solve_samples, dtypes=FLOAT, atol=1e-5, rtol=1e-5)


def _lu_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (2, 3, 3), (1, 1), (4, 3), (3, 4)):
        yield SampleInput(_tensor(rng.uniform(-3, 3, shape), dtype, device, requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(_tensor(rng.uniform(-3, 3, (3, 3)), dtype, device, requires_grad),
                      get_infos=True, name="get_infos")
    yield SampleInput(_tensor(rng.uniform(-3, 3, (3, 3)), dtype, device, requires_grad),
                      pivot=True, name="pivot=True")
    yield SampleInput(_tensor(rng.uniform(-3, 3, (3, 3)), dtype, device, requires_grad,
                              transposed=True), name="transposed")


define("lu", _lu_samples, dtypes=FLOAT, atol=1e-5, rtol=1e-5)


def _lu_solve_samples(device, dtype, requires_grad=False):
    rng = _rng()

    def factor(shape, transposed=False):
        lu, piv = _np_lu(_dominant(shape, rng) * rng.uniform(0.5, 2, shape))
        return (_tensor(lu, dtype, device, requires_grad, transposed=transposed),
                _tensor(piv, "int32", device))

    def B(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(B((3, 2)), *factor((3, 3)), name="matrix")
    yield SampleInput(B((2, 3, 1)), *factor((2, 3, 3)), name="batch")
    yield SampleInput(B((2, 3, 2)), *factor((3, 3)), name="broadcast batch")
    yield SampleInput(B((1, 1)), *factor((1, 1)), name="1x1")
    yield SampleInput(B((3, 2)), *factor((3, 3), transposed=True), name="transposed LU")


def _lu_solve_ref(b, lu, piv):
    out = np.empty(np.broadcast_shapes(b.shape[:-2], lu.shape[:-2]) + b.shape[-2:], b.dtype)
    lu_b = np.broadcast_to(lu, out.shape[:-2] + lu.shape[-2:])
    piv_b = np.broadcast_to(piv, out.shape[:-2] + piv.shape[-1:])
    b_b = np.broadcast_to(b, out.shape)
    for idx in np.ndindex(*out.shape[:-2]):
        f, p, x = lu_b[idx], piv_b[idx], b_b[idx].astype(np.float64)
        n = f.shape[-1]
        perm = np.arange(n)
        for i, j in enumerate(p - 1):
            perm[[i, j]] = perm[[j, i]]
        low = np.tril(f, -1) + np.eye(n)
        out[idx] = np.linalg.solve(np.triu(f), np.linalg.solve(low, x[perm]))
    return out


define("lu_solve", _lu_solve_samples, dtypes=FLOAT, ref=_lu_solve_ref, atol=1e-5, rtol=1e-5)


def _lu_unpack_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (2, 3, 3), (4, 3), (3, 4), (1, 1)):
        lu, piv = _np_lu(rng.uniform(-3, 3, shape))
        yield SampleInput(_tensor(lu, dtype, device, requires_grad),
                          _tensor(piv, "int32", device), name=f"shape{shape}")
    lu, piv = _np_lu(rng.uniform(-3, 3, (3, 3)))
    for kw in ({"unpack_data": False}, {"unpack_pivots": False}):
        yield SampleInput(_tensor(lu, dtype, device, requires_grad),
                          _tensor(piv, "int32", device), name=str(kw), **kw)
    yield SampleInput(_tensor(lu, dtype, device, requires_grad, transposed=True),
                      _tensor(piv, "int32", device), name="transposed")


define("lu_unpack", _lu_unpack_samples, dtypes=FLOAT)


def _geqrf_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (4, 3), (3, 4), (2, 3, 2), (1, 1), (0, 3)):
        yield SampleInput(_tensor(rng.uniform(-3, 3, shape), dtype, device, requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(_tensor(rng.uniform(-3, 3, (3, 3)), dtype, device, requires_grad,
                              transposed=True), name="transposed")


define("geqrf", _geqrf_samples, dtypes=FLOAT, atol=1e-5, rtol=1e-5,
       skip={"gradcheck": "not differentiable, as in PyTorch, whose results still require grad "
                          "(a GeqrfBackward0 that raises 'the derivative for geqrf is not "
                          "implemented'); ember does the same, which the generic check of "
                          "non-differentiable ops reads as a graph"})


def _reflectors(shape, rng, dtype, device, requires_grad, transposed=False):
    a, tau = _np_geqrf(_separated(shape, rng))
    return (_tensor(a, dtype, device, requires_grad, transposed=transposed),
            _tensor(tau, dtype, device, requires_grad))


def _orgqr_samples(device, dtype, requires_grad=False):
    rng = _rng()
    for shape in ((3, 3), (4, 3), (2, 4, 2), (1, 1)):
        yield SampleInput(*_reflectors(shape, rng, dtype, device, requires_grad),
                          name=f"shape{shape}")
    a, tau = _reflectors((4, 3), rng, dtype, device, requires_grad)
    yield SampleInput(a, tau[:2].detach().requires_grad_(requires_grad),
                      name="fewer reflectors than columns")
    yield SampleInput(*_reflectors((3, 3), rng, dtype, device, requires_grad, transposed=True),
                      name="transposed")


def _orgqr_ref(a, tau):
    return _np_householder(a, tau)


define("orgqr", _orgqr_samples, dtypes=FLOAT, ref=_orgqr_ref, atol=1e-5, rtol=1e-5)


def _ormqr_samples(device, dtype, requires_grad=False):
    rng = _rng()

    def C(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    for left, transpose in itertools.product((True, False), (False, True)):
        a, tau = _reflectors((4, 3), rng, dtype, device, requires_grad)
        c = C((4, 2) if left else (2, 4))
        yield SampleInput(a, tau, c, left=left, transpose=transpose,
                          name=f"left={left} transpose={transpose}")
    a, tau = _reflectors((3, 3), rng, dtype, device, requires_grad)
    yield SampleInput(a, tau, C((3, 2)), name="defaults")
    yield SampleInput(*_reflectors((2, 3, 3), rng, dtype, device, requires_grad),
                      C((2, 2, 3)), False, True, name="batch, positional")
    yield SampleInput(*_reflectors((3, 3), rng, dtype, device, requires_grad, transposed=True),
                      C((3, 2)), name="transposed reflectors")


def _ormqr_ref(a, tau, c, left=True, transpose=False):
    q = _np_full_q(a, tau)
    if transpose:
        q = np.swapaxes(q, -1, -2)
    return (q @ c if left else c @ q).astype(c.dtype)


define("ormqr", _ormqr_samples, dtypes=FLOAT, ref=_ormqr_ref, atol=1e-5, rtol=1e-5)


def _vander_samples(device, dtype, requires_grad=False):
    def X(shape, **kw):
        return make(shape, dtype, device, low=-2, high=2, requires_grad=requires_grad, **kw)

    yield SampleInput(X((4,)), name="N=None")
    yield SampleInput(X((3,)), N=5, name="N=5")
    yield SampleInput(X((3,)), 2, name="N positional")
    yield SampleInput(X((4,)), increasing=True, name="increasing")
    yield SampleInput(X((3,)), N=4, increasing=True, name="N=4 increasing")
    if not requires_grad:  # N < 2: a constant result without a graph (as in PyTorch)
        yield SampleInput(X((3,)), N=1, name="N=1")
        yield SampleInput(X((3,)), N=0, name="N=0")
        yield SampleInput(X((0,)), name="empty (N=0)")
    yield SampleInput(X((4,), noncontiguous=True), name="noncontiguous")


def _vander_ref(x, N=None, increasing=False):
    if x.dtype.kind in "biu":
        x = x.astype(np.int64)
    return np.vander(x, N, increasing=increasing)


define("vander", _vander_samples, dtypes=FLOAT_AND_INT + ("uint8", "int8", "int16", "bool"),
       ref=_vander_ref)


# -- elementwise ---------------------------------------------------------------------------

_SHAPES = ((), (5,), (2, 3), (2, 0, 3))


def _unary_sampler(low=None, high=None, away_from_integers=False, away_from_zero=False,
                   extra=None):
    """0-d, 1-d, 2-d, empty and non-contiguous inputs in ``[low, high)``; floats kept away
    from the integers (rounding) or from 0 (abs); ``extra(T, dtype, device, requires_grad)``
    yields more samples."""

    def samples(device, dtype, requires_grad=False):
        def T(shape, **kw):
            t = make(shape, dtype, device, low=low, high=high, **kw)
            if dtype in FLOAT and (away_from_integers or away_from_zero):
                arr = t.numpy().copy()
                if away_from_integers:  # into [k + 0.1, k + 0.9)
                    arr = np.floor(arr) + 0.1 + 0.8 * (arr - np.floor(arr))
                else:  # |x| >= 0.1
                    arr = np.where(np.abs(arr) < 0.1, arr + np.copysign(0.5, arr), arr)
                nc = kw.get("noncontiguous", False)
                t = _tensor(arr, dtype, device)
                if nc:
                    t = _noncontiguous(t)
            if requires_grad and dtype.startswith("float"):
                t.requires_grad_(True)
            return t

        for shape in _SHAPES:
            yield SampleInput(T(shape), name=f"shape{shape}")
        yield SampleInput(T((3, 4), noncontiguous=True), name="noncontiguous")
        if extra is not None:
            yield from extra(T, dtype, device, requires_grad)

    return samples


def _noncontiguous(t):
    """``t``'s values in the even columns of a tensor twice as wide (a strided view)."""
    import ember

    wide = ember.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2].detach()


def _specials(values):
    """Forward-only samples with special values (nan, inf, ties, -0.0) for float dtypes."""

    def extra(T, dtype, device, requires_grad):
        if dtype in FLOAT + ("float16",) and not requires_grad:
            yield SampleInput(_tensor(np.array(values), dtype, device), name="special values")

    return extra


define("abs", _unary_sampler(away_from_zero=True,
                             extra=_specials([0.0, -0.0, np.inf, -np.inf, np.nan, -2.5])),
       dtypes=NO_BOOL, ref=np.abs)
define("positive", _unary_sampler(), dtypes=NO_BOOL, ref=lambda a: a)


def _logit_extra(T, dtype, device, requires_grad):
    yield SampleInput(T((2, 3)), eps=0.2, name="eps=0.2 (clamped where x < 0.2 or > 0.8)")
    yield SampleInput(T((2, 3)), 0.2, name="eps positional")
    if dtype in FLOAT and not requires_grad:
        yield SampleInput(_tensor(np.array([0.0, 1.0, -0.5, 1.5, 0.5]), dtype, device),
                          name="edges and outside [0, 1]")
        yield SampleInput(_tensor(np.array([0.0, 1.0, -0.5, 1.5]), dtype, device), eps=1e-6,
                          name="edges with eps")


def _logit_ref(a, eps=None):
    dt = _float_dtype(a)
    a = a.astype(dt)
    if eps is not None:
        a = np.clip(a, eps, 1 - eps)
    with np.errstate(all="ignore"):
        return np.log(a / (1 - a)).astype(dt)


define("logit", _unary_sampler(0.05, 0.95, extra=_logit_extra), dtypes=FLOAT_AND_INT,
       ref=_logit_ref)


def _lerp_samples(device, dtype, requires_grad=False):
    def T(shape, dt=dtype, **kw):
        return make(shape, dt, device, requires_grad=requires_grad, **kw)

    yield SampleInput(T((2, 3)), T((2, 3)), 0.3, name="number weight")
    yield SampleInput(T((2, 3)), T((2, 3)), 0.8, name="number weight >= 0.5")
    yield SampleInput(T((2, 3)), T((2, 3)), T((2, 3), low=-0.5, high=1.5), name="tensor weight")
    yield SampleInput(T((2, 3)), T((3,)), T((2, 1), low=0, high=1), name="broadcast")
    yield SampleInput(T(()), T((2, 3)), 0.5, name="0-d input")
    yield SampleInput(T((2, 3)), T((2, 3)), T((), low=0, high=1), name="0-d weight")
    yield SampleInput(T((5,)), T((5,)), weight=0.25, name="weight keyword")
    yield SampleInput(T((0, 3)), T((0, 3)), 0.5, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), T((3, 4), noncontiguous=True),
                      T((3, 4), noncontiguous=True, low=0, high=1), name="noncontiguous")


def _lerp_ref(a, b, weight):
    return (a + np.asarray(weight, dtype=a.dtype) * (b - a)).astype(a.dtype)


define("lerp", _lerp_samples, dtypes=FLOAT, ref=_lerp_ref)


def _nan_to_num_extra(T, dtype, device, requires_grad):
    if dtype in FLOAT + ("float16",):
        vals = np.array([[np.nan, 1.5, -np.inf], [np.inf, -0.5, np.nan]])
        for kw in ({}, {"nan": 2.0}, {"posinf": 10.0}, {"neginf": -10.0},
                   {"nan": -1.0, "posinf": 1e3, "neginf": -1e3}):
            yield SampleInput(_tensor(vals, dtype, device, requires_grad), name=str(kw), **kw)
        yield SampleInput(_tensor(vals, dtype, device, requires_grad), 3.0, 4.0, -4.0,
                          name="positional")
    else:
        yield SampleInput(T((2, 3)), nan=1.0, posinf=5.0, name="integers: unchanged")


define("nan_to_num", _unary_sampler(extra=_nan_to_num_extra), dtypes=ALL,
       ref=lambda a, nan=0.0, posinf=None, neginf=None: np.nan_to_num(
           a, nan=nan, posinf=posinf, neginf=neginf))


def _rounding_ref(f):
    def ref(a):
        return a.copy() if a.dtype.kind in "iu" else f(a)

    return ref


_ROUND_SPECIALS = [0.5, 1.5, 2.5, -0.5, -1.5, -0.0, 3.0, np.inf, -np.inf, np.nan]
for _name, _f in {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}.items():
    define(_name, _unary_sampler(away_from_integers=True, extra=_specials(_ROUND_SPECIALS)),
           dtypes=FLOAT + INTEGRAL + ("float16",), ref=_rounding_ref(_f))
define("frac", _unary_sampler(away_from_integers=True, extra=_specials(_ROUND_SPECIALS)),
       dtypes=FLOAT + ("float16",), ref=lambda a: (a - np.trunc(a)).astype(a.dtype))


def _round_extra(T, dtype, device, requires_grad):
    if dtype in FLOAT:
        # away from the rounding points of each number of decimals
        for decimals, scale in ((1, 10.0), (2, 100.0), (-1, 0.1)):
            arr = (np.arange(6).reshape(2, 3) - 2.3) / scale + 0.021 / scale
            yield SampleInput(_tensor(arr, dtype, device, requires_grad), decimals=decimals,
                              name=f"decimals={decimals}")
        yield SampleInput(T((2, 3)), decimals=0, name="decimals=0")
    # integers: round(x) copies them; round(x, decimals=...) raises in PyTorch, even for 0


def _round_ref(a, decimals=0):
    if a.dtype.kind in "iu":
        return a.copy()
    return np.round(a, decimals)


define("round", _unary_sampler(away_from_integers=True,
                               extra=lambda T, dt, dev, rg: itertools.chain(
                                   _specials(_ROUND_SPECIALS)(T, dt, dev, rg),
                                   _round_extra(T, dt, dev, rg))),
       dtypes=FLOAT + INTEGRAL + ("float16",), ref=_round_ref)


def _clamp_samples(kind):
    """``clamp`` (``kind``: both bounds), ``clamp_min`` or ``clamp_max`` with number, tensor,
    broadcast and 0-d bounds."""

    def samples(device, dtype, requires_grad=False):
        def T(shape, low=None, high=None, **kw):
            return make(shape, dtype, device, low=low, high=high, requires_grad=requires_grad,
                        **kw)

        is_float = dtype in FLOAT
        lo, hi = (-1.25, 1.75) if is_float else (-3, 4)
        if kind == "clamp":
            yield SampleInput(T((2, 3)), lo, hi, name="numbers")
            yield SampleInput(T((2, 3)), min=lo, name="min only")
            yield SampleInput(T((2, 3)), max=hi, name="max only")
            yield SampleInput(T((2, 3)), None, hi, name="min=None")
            yield SampleInput(T((2, 3)), T((2, 3), -2, 0), T((2, 3), 0.5, 2), name="tensors")
            yield SampleInput(T((2, 3)), T((3,), -2, 0), T((2, 1), 0.5, 2),
                              name="broadcast tensors")
            yield SampleInput(T((2, 3)), T((), -2, 0), None, name="0-d tensor min")
            yield SampleInput(T((2, 3)), min=T((2, 3), 0.5, 2), max=T((2, 3), -2, 0),
                              name="min > max: max wins")
            yield SampleInput(T((2, 3)), hi, lo, name="numbers, min > max")
            yield SampleInput(T(()), lo, hi, name="0-d")
            yield SampleInput(T((0, 3)), lo, hi, name="empty")
            yield SampleInput(T((3, 4), noncontiguous=True), lo, hi, name="noncontiguous")
            if is_float:
                yield SampleInput(T((2, 3)), -1, 1, name="integer bounds on floats")
        else:
            yield SampleInput(T((2, 3)), lo if kind == "clamp_min" else hi, name="number")
            yield SampleInput(T((2, 3)), T((2, 3), -1, 1), name="tensor")
            yield SampleInput(T((2, 3)), T((3,), -1, 1), name="broadcast tensor")
            yield SampleInput(T(()), T((), -1, 1), name="0-d")
            yield SampleInput(T((0, 3)), T((3,)), name="empty")
            yield SampleInput(T((3, 4), noncontiguous=True), T((3, 4), -1, 1,
                                                                noncontiguous=True),
                              name="noncontiguous")
        if is_float and not requires_grad:
            nan = _tensor(np.array([np.nan, -np.inf, np.inf, 0.5]), dtype, device)
            bounds = {"clamp": (-1.0, 1.0), "clamp_min": (-1.0,), "clamp_max": (1.0,)}[kind]
            yield SampleInput(nan, *bounds, name="nan and inf")

    return samples


def _clamp_ref(a, min=None, max=None):
    if a.dtype.kind in "iu":  # a Python int bound is cast to the tensor's type (it wraps)
        min, max = (np.array(b).astype(a.dtype) if isinstance(b, int) else b
                    for b in (min, max))
    out = a
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)  # where min > max: max
    return out


define("clamp", _clamp_samples("clamp"), dtypes=FLOAT + INTEGRAL, ref=_clamp_ref)
define("clamp_min", _clamp_samples("clamp_min"), dtypes=FLOAT + INTEGRAL,
       ref=lambda a, m: _clamp_ref(a, min=m))
define("clamp_max", _clamp_samples("clamp_max"), dtypes=FLOAT + INTEGRAL,
       ref=lambda a, m: _clamp_ref(a, max=m))


def _where_samples(device, dtype, requires_grad=False):
    def T(shape, dt=dtype, **kw):
        return make(shape, dt, device, requires_grad=requires_grad, **kw)

    def C(shape, **kw):
        return make(shape, "bool", device, **kw)

    yield SampleInput(C((2, 3)), T((2, 3)), T((2, 3)), name="same shapes")
    yield SampleInput(C((2, 1)), T((3,)), T((2, 3)), name="broadcast")
    yield SampleInput(C(()), T((2, 3)), T((2, 3)), name="0-d condition")
    yield SampleInput(C((2, 3)), T(()), T((2, 3)), name="0-d input")
    yield SampleInput(C((0, 3)), T((0, 3)), T((3,)), name="empty")
    yield SampleInput(C((3, 4), noncontiguous=True), T((3, 4), noncontiguous=True),
                      T((3, 4), noncontiguous=True), name="noncontiguous")
    num = True if dtype == "bool" else (2 if dtype in INTEGRAL else 1.5)
    yield SampleInput(C((2, 3)), T((2, 3)), num, name="number other")
    yield SampleInput(C((2, 3)), num, T((2, 3)), name="number input")
    yield SampleInput(C((2, 3)), 0.5, -1, name="two numbers")
    if dtype in FLOAT:
        other = "float64" if dtype == "float32" else "float32"
        yield SampleInput(C((2, 3)), T((2, 3)), T((2, 3), other), name=f"{dtype} and {other}")
        yield SampleInput(C((2, 3)), T((2, 3)), make((2, 3), "int64", device),
                          name="float and int64")
    if not requires_grad:
        yield SampleInput(C((2, 3)), name="condition only: nonzero")
        yield SampleInput(make((2, 3), "uint8", device, low=0, high=2), T((2, 3)), T((2, 3)),
                          name="uint8 condition (deprecated)")


def _where_ref(c, a=None, b=None):
    if a is None:
        return np.nonzero(c)  # a tuple of index arrays of one shape
    return np.where(c.astype(bool), a, b)


define("where", _where_samples, dtypes=ALL, ref=_where_ref)


def _close_pairs(device, dtype, requires_grad=False):
    """Pairs of tensors some elements of which are equal, close, or far apart (and for floats
    nan and inf)."""
    rng = _rng()
    if dtype in FLOAT + ("float16",):
        a = np.array([[1.0, 2.0, np.nan, np.inf, -np.inf, 0.0],
                      [1e-9, 100.0, 3.0, np.nan, np.inf, 5.0]])
        b = np.array([[1.0, 2.0 + 1e-6, np.nan, np.inf, np.inf, 1e-9],
                      [0.0, 100.001, 3.1, 1.0, np.inf, 5.0 + 1e-4]])
    elif dtype == "bool":
        a, b = rng.random((2, 6)) < 0.5, rng.random((2, 6)) < 0.5
    else:
        a = rng.integers(0, 5, (2, 6))
        b = a.copy()
        b[:, ::2] += 1
    return _tensor(a, dtype, device, requires_grad), _tensor(b, dtype, device, requires_grad)


def _isclose_samples(device, dtype, requires_grad=False):
    a, b = _close_pairs(device, dtype, requires_grad)
    yield SampleInput(a, b, name="defaults")
    yield SampleInput(a, b, equal_nan=True, name="equal_nan")
    yield SampleInput(a, b, rtol=1e-2, atol=1e-3, name="loose")
    yield SampleInput(a, b, 0.0, 0.0, name="exact (positional)")
    yield SampleInput(a, b, rtol=0, atol=1.5, name="atol only")
    yield SampleInput(a, a, name="self")
    yield SampleInput(a[:, :3], b[:1, :3], name="broadcast")
    yield SampleInput(make((0, 3), dtype, device), make((0, 3), dtype, device), name="empty")
    yield SampleInput(make((), dtype, device, requires_grad=requires_grad),
                      make((), dtype, device), name="0-d")


def _isclose_ref(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    if a.dtype.kind == "b":
        if rtol == 0 and atol == 0:
            return a == b
        return np.isclose(a.astype(np.float32), b.astype(np.float32), rtol=rtol, atol=atol)
    if a.dtype.kind in "iu":
        a, b = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


_BOOL_RESULT = "returns a Python bool; the generic PyTorch comparison handles tensor results " \
               "only (compared with the NumPy reference instead)"
define("isclose", _isclose_samples, dtypes=FLOAT_AND_INT + ("uint8", "int8", "int16", "bool"),
       ref=_isclose_ref)
define("allclose", _isclose_samples, dtypes=FLOAT_AND_INT + ("bool",),
       ref=lambda *a, **k: bool(_isclose_ref(*a, **k).all()), skip={"torch": _BOOL_RESULT})


def _equal_samples(device, dtype, requires_grad=False):
    a = make((2, 3), dtype, device, requires_grad=requires_grad)
    yield SampleInput(a, a.clone(), name="equal")
    b = a.detach().clone()
    b[1, 2] = ~a[1, 2] if dtype == "bool" else a[1, 2].detach() + 1
    yield SampleInput(a, b, name="one element differs")
    yield SampleInput(a, a[:1], name="different shapes (no broadcasting)")
    yield SampleInput(make((0, 3), dtype, device), make((0, 3), dtype, device), name="empty")
    yield SampleInput(make((3, 4), dtype, device, noncontiguous=True),
                      make((3, 4), dtype, device, noncontiguous=True), name="noncontiguous")
    yield SampleInput(make((), dtype, device), make((), dtype, device), name="0-d")
    if dtype in FLOAT:
        nan = _tensor(np.array([1.0, np.nan]), dtype, device)
        yield SampleInput(nan, nan.clone(), name="nan != nan")


define("equal", _equal_samples, dtypes=ALL,
       ref=lambda a, b: a.shape == b.shape and bool((a == b).all()),
       skip={"torch": _BOOL_RESULT})


def _threshold_backward_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    def X(shape, **kw):  # the forward input: a mask, no gradient (PyTorch has none for it)
        return make(shape, dtype, device, **kw)

    yield SampleInput(T((2, 3)), X((2, 3)), 0, name="threshold 0")
    yield SampleInput(T((2, 3)), X((2, 3)), 1.5 if dtype in FLOAT else 1, name="threshold 1.5")
    yield SampleInput(T(()), X(()), 0, name="0-d")
    yield SampleInput(T((0, 3)), X((0, 3)), 0, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), X((3, 4)), 0, name="noncontiguous")


define("threshold_backward", _threshold_backward_samples, dtypes=FLOAT_AND_INT,
       torch="ops.aten.threshold_backward",
       ref=lambda g, x, th: np.where(x > th, g, 0).astype(g.dtype))


def _clone_samples(device, dtype, requires_grad=False):
    import ember

    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    for shape in _SHAPES:
        yield SampleInput(T(shape), name=f"shape{shape}")
    yield SampleInput(T((3, 4), noncontiguous=True), name="noncontiguous")
    yield SampleInput(_transposed((3, 4), dtype, device, requires_grad), name="transposed")
    for mf in ("preserve_format", "contiguous_format", "channels_last"):
        yield SampleInput(T((2, 3, 2, 2)), memory_format=getattr(ember, mf), name=mf)
    yield SampleInput(T((2, 3, 2, 2, 2)), memory_format=ember.channels_last_3d,
                      name="channels_last_3d")
    yield SampleInput(T((2, 3), noncontiguous=True), memory_format=ember.contiguous_format,
                      name="noncontiguous to contiguous")
    cl = make((2, 3, 2, 2), dtype, device).contiguous(memory_format=ember.channels_last)
    yield SampleInput(cl.requires_grad_(requires_grad and dtype in FLOAT),
                      name="channels_last input, preserved")


define("clone", _clone_samples, dtypes=ALL, ref=lambda a, memory_format=None: a.copy(),
       skip={"torch": "samples pass ember.memory_format objects, which the generic PyTorch "
                      "comparison does not translate (values: NumPy reference; layouts: "
                      "tests/core/test_memory_format.py)"})


def _ldexp_samples(device, dtype, requires_grad=False):
    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    def E(shape, dt="int64", **kw):
        return make(shape, dt, device, low=-4, high=5, **kw)

    yield SampleInput(T((2, 3)), E((2, 3)), name="int64 exponents")
    yield SampleInput(T((2, 3)), E((3,), "int32"), name="int32 exponents, broadcast")
    yield SampleInput(T(()), E((2,)), name="0-d input")
    yield SampleInput(T((0, 3)), E((0, 3)), name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), E((3, 4), noncontiguous=True),
                      name="noncontiguous")
    if dtype in FLOAT:
        yield SampleInput(T((2, 3)), T((2, 3), low=-2, high=2), name="float exponents")


def _ldexp_ref(a, e):
    dt = _float_dtype(a, e) if a.dtype.kind == "f" or e.dtype.kind == "f" else np.float32
    return (a.astype(dt) * np.exp2(e.astype(dt))).astype(dt)


define("ldexp", _ldexp_samples, dtypes=FLOAT_AND_INT, ref=_ldexp_ref)


def _heaviside_samples(device, dtype, requires_grad=False):
    rng = _rng()

    def T(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    def with_zeros(shape):
        arr = make(shape, dtype, device).numpy().copy()
        arr[rng.random(shape) < 0.4] = 0
        return _tensor(arr, dtype, device, requires_grad)

    yield SampleInput(with_zeros((2, 3)), T((2, 3)), name="same shapes")
    yield SampleInput(with_zeros((2, 3)), T((3,)), name="broadcast values")
    yield SampleInput(with_zeros((2, 3)), T(()), name="0-d values")
    yield SampleInput(T((0, 3)), T((0, 3)), name="empty")
    yield SampleInput(with_zeros((3, 4))[:, ::2], T((3, 2), noncontiguous=True),
                      name="noncontiguous")
    if dtype in FLOAT:
        yield SampleInput(_tensor(np.array([np.nan, -np.inf, np.inf, -0.0, 0.0]), dtype,
                                  device), T((5,)), name="nan, inf, -0.0")


# PyTorch's formula (np.heaviside differs: nan for a nan input, where PyTorch gives 0)
define("heaviside", _heaviside_samples, dtypes=FLOAT_AND_INT + ("uint8", "int8", "bool"),
       ref=lambda a, v: np.where(a == 0, v, a > 0).astype(a.dtype))


def _frexp_extra(T, dtype, device, requires_grad):
    if not requires_grad:
        yield SampleInput(_tensor(np.array([0.0, -0.0, 1.0, 0.5, -4.0, 1e-30, np.inf, np.nan]),
                                  dtype, device), name="powers of two and specials")


def _frexp_away_from_powers(device, dtype, requires_grad=False):
    """Inputs away from the powers of two (where the mantissa jumps)."""
    for s in _unary_sampler(extra=_frexp_extra)(device, dtype, False):
        t = s.input
        if t.dtype.is_floating_point and t.numel() and s.name != "powers of two and specials":
            arr = t.numpy()
            m, e = np.frexp(arr)
            m = np.where(np.abs(m) > 0.95, m * 0.9, np.where(np.abs(m) < 0.55, m * 1.1, m))
            new = _tensor(np.ldexp(m, e), dtype, device)
            if not t.is_contiguous():
                new = _noncontiguous(new)
            t = new
        elif requires_grad:
            continue  # the mantissa jumps at powers of two
        if requires_grad:
            t.requires_grad_(True)
        yield SampleInput(t, name=s.name)


# no NumPy reference: the generic test cannot take a named-tuple result to the host
define("frexp", _frexp_away_from_powers, dtypes=FLOAT + ("float16",))


# -- addcmul, addcdiv, addr ------------------------------------------------------------------

def _addc_samples(divide):
    def samples(device, dtype, requires_grad=False):
        def T(shape, dt=dtype, **kw):
            return make(shape, dt, device, requires_grad=requires_grad, **kw)

        def D(shape, dt=dtype, **kw):  # a divisor: away from 0
            if divide:
                kw.update(low=0.5, high=2)
            return T(shape, dt, **kw)

        yield SampleInput(T((2, 3)), T((2, 3)), D((2, 3)), name="same shapes")
        yield SampleInput(T((2, 3)), T((3,)), D((2, 1)), name="broadcast")
        yield SampleInput(T((3,)), T((2, 3)), D((2, 3)), name="input broadcasts")
        yield SampleInput(T(()), T((2,)), D(()), name="0-d")
        yield SampleInput(T((0, 3)), T((0, 3)), D((3,)), name="empty")
        yield SampleInput(T((3, 4), noncontiguous=True), T((3, 4), noncontiguous=True),
                          D((3, 4), noncontiguous=True), name="noncontiguous")
        value = -0.5 if dtype in FLOAT else 2
        yield SampleInput(T((2, 3)), T((2, 3)), D((2, 3)), value=value, name=f"value={value}")
        yield SampleInput(T((2, 3)), T((2, 3)), D((2, 3)), value=0, name="value=0")
        if dtype in FLOAT:
            other = "float64" if dtype == "float32" else "float32"
            yield SampleInput(T((2, 3)), T((2, 3), other), D((2, 3)),
                              name=f"{dtype} with {other}")
            yield SampleInput(T((2, 3)), T((2, 3)), D((2, 3)), value=2, name="integer value")
            if not divide:  # (addcdiv refuses integer tensor1 and tensor2 together)
                yield SampleInput(T((2, 3)), T((2, 3)), make((2, 3), "int64", device),
                                  name="int64 tensor2")
                yield SampleInput(make((2, 3), "int64", device), T((2, 3)), T((2, 3)),
                                  name="int64 input")

    return samples


def _addc_ref(divide):
    def ref(x, a, b, value=1):
        dt = np.result_type(x, a, b)
        with np.errstate(all="ignore"):
            prod = a.astype(dt) / b.astype(dt) if divide else a.astype(dt) * b.astype(dt)
            return (x.astype(dt) + dt.type(value) * prod).astype(dt)

    return ref


define("addcmul", _addc_samples(False), dtypes=NUMERIC, ref=_addc_ref(False))
define("addcdiv", _addc_samples(True), dtypes=FLOAT, ref=_addc_ref(True))


def _addr_samples(device, dtype, requires_grad=False):
    def T(shape, dt=dtype, **kw):
        return make(shape, dt, device, requires_grad=requires_grad, **kw)

    yield SampleInput(T((2, 3)), T((2,)), T((3,)), name="matrix input")
    yield SampleInput(T((3,)), T((2,)), T((3,)), name="broadcast input")
    yield SampleInput(T(()), T((2,)), T((3,)), name="0-d input")
    yield SampleInput(T((0, 3)), T((0,)), T((3,)), name="empty")
    yield SampleInput(T((2, 3), noncontiguous=True), T((2,), noncontiguous=True),
                      T((3,), noncontiguous=True), name="noncontiguous")
    if dtype == "bool":
        scalars = ({"beta": False, "alpha": True}, {"beta": True, "alpha": False})
    elif dtype in FLOAT:
        scalars = ({"beta": 0.5, "alpha": 2.0}, {"beta": 0}, {"alpha": -1.5})
    else:
        scalars = ({"beta": 2, "alpha": 3}, {"beta": 0}, {"alpha": -1})
    for kw in scalars:
        yield SampleInput(T((2, 3)), T((2,)), T((3,)), name=str(kw), **kw)
    if dtype in FLOAT:
        yield SampleInput(T((2, 3)), T((2,)), make((3,), "int64", device),
                          name="float and int64")
        if not requires_grad:
            nan = make((2, 3), dtype, device)
            nan.fill_(float("nan"))
            yield SampleInput(nan, T((2,)), T((3,)), beta=0, name="beta=0 ignores nan")


def _addr_ref(x, a, b, beta=1, alpha=1):
    dt = np.result_type(x, a, b)
    outer = np.outer(a, b).astype(dt)
    if dt.kind == "b":
        r = (outer & bool(alpha)) | (x & bool(beta))
    else:  # an integer scalar wraps into the dtype (uint8: -1 is 255), as in PyTorch
        r = outer * np.asarray(alpha).astype(dt)
        if beta != 0:
            r = r + x.astype(dt) * np.asarray(beta).astype(dt)
    return np.broadcast_to(r, outer.shape).astype(dt)


define("addr", _addr_samples, dtypes=NUMERIC + ("bool",), ref=_addr_ref)

__all__ = ["NUMERIC"]
