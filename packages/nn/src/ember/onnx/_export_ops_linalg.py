"""ONNX export mappings: determinants, norms and distances, diagonals, small products and
compound pointwise ops (``addcmul``, ``lerp``, ``atan2``, ``logit``, shrinkage, ``glu``...);
registered in the table of ``_export_ops.py``.

ONNX has ``Det`` (opset 11) but no matrix inverse in its default domain (onnxruntime's
``com.microsoft.Inverse`` is a contrib operator, which Ember does not write): ``inverse`` and
``linalg.inv`` of a static ``n x n`` matrix (n <= 4) are the adjugate over the determinant,
every cofactor one batched ``Det``; larger or dynamic ones are reported as unsupported.
Decompositions (``svd``, ``qr``, ``eig``, ``cholesky``...) and the norms that need them
(spectral, nuclear) have no ONNX form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ._export_graph import FLOAT_TYPES, NeedsOpset, Unsupported, onnx_type
from ._export_ops import Call, mapping, norm_axis, reduce, squeeze, unsqueeze

# -- ops ONNX has no operator for ---------------------------------------------------------------

#: decompositions, solvers and what needs them: ONNX's default domain has no operator for
#: any (nor a matrix inverse: see ``linalg.inv``), and unrolling one per matrix size is not an
#: export; the error says so, rather than only that no mapping exists
_NO_OPERATOR = {
    "a QR decomposition": ("linalg.qr", "qr", "geqrf", "orgqr", "ormqr",
                           "linalg.householder_product"),
    "a singular value decomposition": ("linalg.svd", "svd", "linalg.svdvals", "pinverse",
                                       "linalg.pinv", "linalg.matrix_rank", "linalg.cond"),
    "an LU decomposition": ("linalg.lu", "lu", "linalg.lu_factor", "linalg.lu_factor_ex",
                            "linalg.lu_solve", "lu_solve", "linalg.ldl_factor"),
    "an eigendecomposition": ("linalg.eig", "linalg.eigh", "linalg.eigvals",
                              "linalg.eigvalsh"),
    "a Cholesky decomposition": ("linalg.cholesky", "cholesky", "linalg.cholesky_ex",
                                 "cholesky_solve", "cholesky_inverse"),
    "a linear solver": ("linalg.solve", "linalg.solve_ex", "linalg.lstsq",
                        "linalg.solve_triangular", "triangular_solve", "linalg.inv_ex",
                        "linalg.tensorinv", "linalg.tensorsolve"),
    "a matrix exponential (its Pade approximant needs a solver)": ("linalg.matrix_exp",
                                                                   "matrix_exp"),
}
_NO_OPERATOR_REASON = {op: what for what, ops in _NO_OPERATOR.items() for op in ops}


@mapping(*_NO_OPERATOR_REASON)
def _no_operator(c: Call):
    raise Unsupported(f"ONNX has no operator for {c.op} ({_NO_OPERATOR_REASON[c.op]})")


# -- determinants and inverse -------------------------------------------------------------------

def _square(c: Call, name: str) -> list:
    shape = c.shape(name)
    if len(shape) < 2:
        raise Unsupported(f"a {len(shape)}-d input (expected a batch of square matrices)")
    return shape


@mapping("det", "linalg.det")
def _det(c: Call):
    name = next(iter(c.p))
    _square(c, name)
    return c.add("Det", [c.t(name, c.out_dtype)])


@mapping("logdet")
def _logdet(c: Call):
    _square(c, "input")
    return c.add("Log", [c.add("Det", [c.t("input", c.out_dtype)])])


@mapping("slogdet", "linalg.slogdet")
def _slogdet(c: Call):
    name = next(iter(c.p))
    _square(c, name)
    det = c.add("Det", [c.t(name, c.out(1)["dtype"])])
    return [c.add("Sign", [det]), c.add("Log", [c.add("Abs", [det])])]


_MAX_ADJUGATE = 4


@mapping("inverse", "linalg.inv")
def _inverse(c: Call):
    name = next(iter(c.p))
    shape = _square(c, name)
    n = shape[-1]
    if not isinstance(n, int) or shape[-2] != n or n > _MAX_ADJUGATE:
        raise Unsupported(f"ONNX has no matrix inverse (com.microsoft.Inverse is an "
                          f"onnxruntime contrib op); Ember writes the adjugate for static "
                          f"n x n matrices up to n = {_MAX_ADJUGATE}, this one is "
                          f"{shape[-2]} x {n}")
    d = c.out_dtype
    a = c.t(name, d)
    rank = len(shape)
    if n == 1:
        return c.add("Reciprocal", [a])
    # the adjugate's (i, j) entry is the cofactor of (j, i): det(a without row j, column i),
    # all minors gathered at once from the flattened matrix
    index = np.empty((n, n, n - 1, n - 1), dtype=np.int64)
    for i, j in itertools.product(range(n), range(n)):
        rows = [r for r in range(n) if r != j]
        cols = [k for k in range(n) if k != i]
        index[i, j] = np.asarray(rows)[:, None] * n + np.asarray(cols)[None, :]
    flat = c.add("Reshape", [a, c.b.sizes(list(shape[:-2]) + [n * n])])
    minors = c.add("Gather", [flat, c.const(index, "int64")], axis=rank - 2)
    cof = c.add("Det", [minors])                                   # [..., n, n]
    signs = np.array([[(-1.0) ** (i + j) for j in range(n)] for i in range(n)])
    adj = c.add("Mul", [cof, c.const(signs, d)])
    det = unsqueeze(c, c.add("Det", [a]), [rank - 2, rank - 1])
    return c.add("Div", [adj, det])


# -- norms --------------------------------------------------------------------------------------

def vector_norm(c: Call, x: str, p, axes: list | None, keep: bool, d: str) -> str:
    """The ``p``-norm of ``x`` over ``axes`` (None: all)."""
    if isinstance(p, str):
        if p != "fro":
            raise Unsupported(f"a vector norm of order {p!r}")
        p = 2.0
    p = float(p)
    if p == 2.0:
        return reduce(c, "ReduceL2", x, axes, keep)
    if p == 1.0:
        return reduce(c, "ReduceL1", x, axes, keep)
    ax = c.add("Abs", [x])
    if p == math.inf:
        return reduce(c, "ReduceMax", ax, axes, keep)
    if p == -math.inf:
        return reduce(c, "ReduceMin", ax, axes, keep)
    if p == 0.0:
        nz = c.add("Cast", [c.add("Not", [c.add("Equal", [x, c.const(0.0, d)])])],
                   to=onnx_type(d))
        return reduce(c, "ReduceSum", nz, axes, keep)
    powered = reduce(c, "ReduceSum", c.add("Pow", [ax, c.const(p, d)]), axes, keep)
    return c.add("Pow", [powered, c.const(1.0 / p, d)])


def _axes(c: Call, name: str, rank: int) -> list | None:
    dims = c.lit(name)
    if dims is None or dims == []:
        return None
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return sorted(norm_axis(int(a), rank) for a in dims)


def _norm_input(c: Call, name: str) -> tuple[str, int, str]:
    d = c.lit("dtype") or c.out_dtype
    if d not in FLOAT_TYPES:
        raise Unsupported(f"a norm in {d}")
    return c.t(name, d), c.rank(name), d


def matrix_norm(c: Call, x: str, p, axes: list, keep: bool, d: str) -> str:
    if p == "fro":
        return reduce(c, "ReduceL2", x, axes, keep)
    if p in (1, -1, math.inf, -math.inf):
        rows, cols = axes
        inner, outer = (rows, cols) if p in (1, -1) else (cols, rows)
        sums = reduce(c, "ReduceSum", c.add("Abs", [x]), [inner], True)
        out = reduce(c, "ReduceMax" if p > 0 else "ReduceMin", sums, [outer], True)
        return out if keep else squeeze(c, out, sorted(axes))
    raise Unsupported(f"the matrix norm of order {p!r} needs singular values (SVD), which "
                      "ONNX does not have")


@mapping("norm")
def _norm(c: Call):
    x, rank, d = _norm_input(c, "input")
    p = c.lit("p", "fro")
    p = "fro" if p is None else p
    axes = _axes(c, "dim", rank)
    keep = bool(c.lit("keepdim", False))
    if p == "nuc":
        raise Unsupported("the nuclear norm needs singular values (SVD)")
    if rank == 0:
        return c.add("Abs", [x])
    return vector_norm(c, x, p, axes, keep, d)


@mapping("linalg.vector_norm")
def _linalg_vector_norm(c: Call):
    x, rank, d = _norm_input(c, "input")
    if rank == 0:
        return c.add("Abs", [x])
    return vector_norm(c, x, c.lit("ord", 2), _axes(c, "dim", rank),
                       bool(c.lit("keepdim", False)), d)


@mapping("linalg.matrix_norm")
def _linalg_matrix_norm(c: Call):
    x, rank, d = _norm_input(c, "input")
    axes = [norm_axis(int(a), rank) for a in c.lit("dim", [-2, -1])]
    return matrix_norm(c, x, c.lit("ord", "fro"), axes, bool(c.lit("keepdim", False)), d)


@mapping("linalg.norm")
def _linalg_norm(c: Call):
    x, rank, d = _norm_input(c, "input")
    ord_ = c.lit("ord")
    axes = _axes(c, "dim", rank)
    keep = bool(c.lit("keepdim", False))
    if ord_ is None:
        return vector_norm(c, x, 2.0, axes, keep, d)
    n_axes = len(axes) if axes is not None else rank
    if n_axes == 2:
        dims = c.lit("dim")
        order = [norm_axis(int(a), rank) for a in dims] if dims is not None else [0, 1]
        return matrix_norm(c, x, ord_, order, keep, d)
    return vector_norm(c, x, ord_, axes, keep, d)


@mapping("dist")
def _dist(c: Call):
    d = c.out_dtype
    diff = c.add("Sub", [c.t("input", d), c.t("other", d)])
    return vector_norm(c, diff, c.lit("p", 2), None, False, d)


@mapping("pairwise_distance")
def _pairwise_distance(c: Call):
    d = c.out_dtype
    diff = c.add("Add", [c.add("Sub", [c.t("x1", d), c.t("x2", d)]),
                         c.const(float(c.lit("eps", 1e-6)), d)])
    nd = max(c.rank("x1"), c.rank("x2"))
    if nd == 0:
        return c.add("Abs", [diff])
    return vector_norm(c, diff, c.lit("p", 2.0), [nd - 1], bool(c.lit("keepdim", False)), d)


@mapping("cdist")
def _cdist(c: Call):
    d = c.out_dtype
    r1, r2 = c.rank("x1"), c.rank("x2")
    a = unsqueeze(c, c.t("x1", d), [r1 - 1])  # [*, P, 1, M]
    b = unsqueeze(c, c.t("x2", d), [r2 - 2])  # [*, 1, R, M]
    diff = c.add("Sub", [a, b])
    return vector_norm(c, diff, c.lit("p", 2.0), [max(r1, r2)], False, d)


@mapping("cosine_similarity")
def _cosine_similarity(c: Call):
    d = c.out_dtype
    x1, x2 = c.t("x1", d), c.t("x2", d)
    rank = max(c.rank("x1"), c.rank("x2"))
    axis = norm_axis(int(c.lit("dim", 1)), rank)
    eps = c.const(float(c.lit("eps", 1e-8)), d)
    n1 = c.add("Max", [reduce(c, "ReduceL2", x1, [axis], True), eps])
    n2 = c.add("Max", [reduce(c, "ReduceL2", x2, [axis], True), eps])
    prod = c.add("Mul", [c.add("Div", [x1, n1]), c.add("Div", [x2, n2])])
    return reduce(c, "ReduceSum", prod, [axis], False)


# -- diagonals ----------------------------------------------------------------------------------

def _diagonal_of(c: Call, x: str, shape: list, offset: int, a1: int, a2: int) -> str:
    """The diagonal of ``x`` between axes ``a1`` and ``a2`` (static sizes there), moved to the
    last axis as PyTorch puts it."""
    n1, n2 = shape[a1], shape[a2]
    if not isinstance(n1, int) or not isinstance(n2, int):
        raise Unsupported("a diagonal across dynamic dimensions")
    rank = len(shape)
    perm = [a for a in range(rank) if a not in (a1, a2)] + [a1, a2]
    moved = c.add("Transpose", [x], perm=perm) if perm != list(range(rank)) else x
    rows = [i for i in range(n1) if 0 <= i + offset < n2]
    if not rows:
        lead = [shape[a] for a in perm[:-2]]
        return c.add("Reshape", [moved, c.b.sizes(lead + [0])], allowzero=1) \
            if c.opset >= 14 else _raise_empty()
    k = len(rows)
    picked = c.add("Gather", [moved, c.i64(rows)], axis=rank - 2)          # [..., k, n2]
    cols = np.asarray([i + offset for i in rows], dtype=np.int64).reshape(
        [1] * (rank - 2) + [k, 1])
    index = c.add("Expand", [c.const(cols, "int64"),
                             c.add("Concat", [c.add("Slice", [c.b.shape_of(picked), c.i64([0]),
                                                              c.i64([-1])]),
                                              c.i64([1])], axis=0)])
    return squeeze(c, c.add("GatherElements", [picked, index], axis=rank - 1), [rank - 1])


def _raise_empty():
    raise Unsupported("an empty diagonal needs Reshape's allowzero (opset 14)")


@mapping("diagonal", "Tensor.diagonal")
def _diagonal(c: Call):
    shape = c.shape("input")
    rank = len(shape)
    a1 = norm_axis(int(c.lit("dim1", 0)), rank)
    a2 = norm_axis(int(c.lit("dim2", 1)), rank)
    return _diagonal_of(c, c.t("input"), shape, int(c.lit("offset", 0)), a1, a2)


@mapping("trace")
def _trace(c: Call):
    shape = c.shape("input")
    diag = _diagonal_of(c, c.t("input"), shape, 0, 0, 1)
    src = c.dtype("input")
    d = c.out_dtype
    return reduce(c, "ReduceSum", c.b.cast(diag, src, d), [0], False)


@mapping("diag")
def _diag(c: Call):
    shape = c.shape("input")
    k = int(c.lit("diagonal", 0))
    if len(shape) == 2:
        return _diagonal_of(c, c.t("input"), shape, k, 0, 1)
    n = shape[0]
    if not isinstance(n, int):
        raise Unsupported("diag of a vector of dynamic size")
    size = n + abs(k)
    eye = np.zeros((size, size), dtype=bool)
    rows = np.arange(n) + max(-k, 0)
    eye[rows, rows + k] = True
    # the vector along the diagonal: column j holds x[j - max(k, 0)]
    pick = np.clip(np.arange(size) - max(k, 0), 0, n - 1)
    if k < 0:
        pick = np.clip(np.arange(size), 0, n - 1)
    spread = c.add("Gather", [c.t("input"), c.i64(pick.tolist())], axis=0)   # [size]
    zero = c.const(0, c.dtype("input"))
    return c.add("Where", [c.const(eye, "bool"), unsqueeze(c, spread, [0]), zero])


# -- small products -----------------------------------------------------------------------------

@mapping("outer", "ger")
def _outer(c: Call):
    d = c.out_dtype
    names = list(c.p)
    return c.add("Mul", [unsqueeze(c, c.t(names[0], d), [1]), unsqueeze(c, c.t(names[1], d), [0])])


def _scaled(c: Call, x: str, name: str, d: str) -> str:
    v = c.lit(name, 1)
    return x if v == 1 else c.add("Mul", [x, c.const(v, d)])


@mapping("addr")
def _addr(c: Call):
    d = c.out_dtype
    prod = c.add("Mul", [unsqueeze(c, c.t("vec1", d), [1]), unsqueeze(c, c.t("vec2", d), [0])])
    return c.add("Add", [_scaled(c, c.t("input", d), "beta", d), _scaled(c, prod, "alpha", d)])


@mapping("addmv")
def _addmv(c: Call):
    d = c.out_dtype
    prod = c.add("MatMul", [c.t("mat", d), c.t("vec", d)])
    return c.add("Add", [_scaled(c, c.t("input", d), "beta", d), _scaled(c, prod, "alpha", d)])


@mapping("addcmul", "addcdiv")
def _addcmul(c: Call):
    d = c.out_dtype
    prod = c.add("Mul" if c.op == "addcmul" else "Div", [c.t("tensor1", d), c.t("tensor2", d)])
    return c.add("Add", [c.t("input", d), _scaled(c, prod, "value", d)])


@mapping("vdot")
def _vdot(c: Call):
    d = c.out_dtype
    names = list(c.p)
    return reduce(c, "ReduceSum", c.add("Mul", [c.t(names[0], d), c.t(names[1], d)]), [0],
                  False)


@mapping("tensordot")
def _tensordot(c: Call):
    d = c.out_dtype
    ra, rb = c.rank("a"), c.rank("b")
    dims = c.lit("dims", 2)
    if isinstance(dims, int):
        da, db = list(range(ra - dims, ra)), list(range(dims))
    else:
        da, db = ([x] if isinstance(x, int) else list(x) for x in dims)
    da = [norm_axis(int(a), ra) for a in da]
    db = [norm_axis(int(a), rb) for a in db]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out = [s for i, s in enumerate(sa) if i not in da] + \
        [s for j, s in enumerate(sb) if j not in db]
    eq = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
    if c.opset < 12:
        return _tensordot_matmul(c, d, da, db)
    return c.add("Einsum", [c.t("a", d), c.t("b", d)], equation=eq)


def _tensordot_matmul(c: Call, d: str, da: list, db: list) -> str:
    """``tensordot`` without Einsum (opset 12): the contracted dims moved to the end of ``a``
    and the front of ``b``, both flattened to matrices, one MatMul, the free dims restored.
    The free and contracted sizes must be static (the reshapes are constants)."""
    sa, sb = c.shape("a"), c.shape("b")
    if not all(isinstance(n, int) for n in [*sa, *sb]):
        raise NeedsOpset(12, "tensordot of dynamically sized inputs (Einsum)")
    free_a = [i for i in range(len(sa)) if i not in da]
    free_b = [j for j in range(len(sb)) if j not in db]
    k = math.prod(sa[i] for i in da)
    a = c.add("Transpose", [c.t("a", d)], perm=free_a + da)
    b = c.add("Transpose", [c.t("b", d)], perm=db + free_b)
    a = c.add("Reshape", [a, c.i64([math.prod(sa[i] for i in free_a), k])])
    b = c.add("Reshape", [b, c.i64([k, math.prod(sb[j] for j in free_b)])])
    return c.add("Reshape", [c.add("MatMul", [a, b]),
                             c.i64([sa[i] for i in free_a] + [sb[j] for j in free_b])])


@mapping("cross", "linalg.cross")
def _cross(c: Call):
    d = c.out_dtype
    names = list(c.p)
    a_name, b_name = names[0], names[1]
    shape = c.shape(a_name)
    rank = max(len(shape), c.rank(b_name))
    dim = c.lit("dim")
    if dim is None:
        dim = -1 if c.op == "linalg.cross" else next(
            (i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise Unsupported("cross without a dim of size 3")
    axis = norm_axis(int(dim), rank)
    a, b = c.t(a_name, d), c.t(b_name, d)

    def part(x, i):
        return c.add("Gather", [x, c.i64([i])], axis=axis)

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))

    def minus(p, q, r, s):
        return c.add("Sub", [c.add("Mul", [p, q]), c.add("Mul", [r, s])])

    return c.add("Concat", [minus(a1, b2, a2, b1), minus(a2, b0, a0, b2),
                            minus(a0, b1, a1, b0)], axis=axis)


# -- compound pointwise -------------------------------------------------------------------------

@mapping("lerp")
def _lerp(c: Call):
    d = c.out_dtype
    x, end = c.t("input", d), c.t("end", d)
    return c.add("Add", [x, c.add("Mul", [c.t("weight", d), c.add("Sub", [end, x])])])


@mapping("atan2", "arctan2")
def _atan2(c: Call):
    d = c.out_dtype
    y, x = c.t("input", d), c.t("other", d)
    zero = c.const(0.0, d)
    base = c.add("Atan", [c.add("Div", [y, x])])
    pi = c.const(math.pi, d)
    # x < 0: +-pi by the sign of y (y == +-0 keeps its sign as PyTorch's atan2)
    neg_y = c.add("Or", [c.add("Less", [y, zero]),
                         c.add("And", [c.add("Equal", [y, zero]),
                                       c.add("Less", [c.add("Div", [c.const(1.0, d), y]),
                                                      zero])])])
    shift = c.add("Where", [neg_y, c.add("Neg", [pi]), pi])
    out = c.add("Where", [c.add("Less", [x, zero]), c.add("Add", [base, shift]), base])
    # x == 0: +-pi/2 by the sign of y, 0 where y == 0
    half = c.add("Mul", [c.add("Sign", [y]), c.const(math.pi / 2, d)])
    at_zero = c.add("Where", [c.add("Equal", [y, zero]),
                              c.add("Where", [c.add("Less", [c.add("Div", [c.const(1.0, d), x]),
                                                             zero]),
                                              c.add("Where", [neg_y, c.add("Neg", [pi]), pi]),
                                              c.add("Mul", [y, zero])]),
                              half])
    return c.add("Where", [c.add("Equal", [x, zero]), at_zero, out])


@mapping("deg2rad", "rad2deg")
def _deg2rad(c: Call):
    d = c.out_dtype
    scale = math.pi / 180 if c.op == "deg2rad" else 180 / math.pi
    return c.add("Mul", [c.t("input", d), c.const(scale, d)])


@mapping("frac")
def _frac(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    trunc = c.add("Where", [c.add("Less", [x, c.const(0.0, d)]), c.add("Ceil", [x]),
                            c.add("Floor", [x])])
    return c.add("Sub", [x, trunc])


@mapping("erfc")
def _erfc(c: Call):
    d = c.out_dtype
    return c.add("Sub", [c.const(1.0, d), c.add("Erf", [c.t("input", d)])])


@mapping("logit")
def _logit(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    eps = c.lit("eps")
    if eps is not None:
        x = c.add("Clip", [x, c.const(float(eps), d), c.const(1.0 - float(eps), d)])
    return c.add("Log", [c.add("Div", [x, c.add("Sub", [c.const(1.0, d), x])])])


@mapping("xlogy")
def _xlogy(c: Call):
    d = c.out_dtype
    x, y = c.t("input", d), c.t("other", d)
    zero = c.const(0.0, d)
    prod = c.add("Mul", [x, c.add("Log", [y])])
    out = c.add("Where", [c.add("Equal", [x, zero]), zero, prod])
    return c.add("Where", [c.add("IsNaN", [y]), y, out])


@mapping("hypot")
def _hypot(c: Call):
    d = c.out_dtype
    x, y = c.t("input", d), c.t("other", d)
    return c.add("Sqrt", [c.add("Add", [c.add("Mul", [x, x]), c.add("Mul", [y, y])])])


@mapping("logaddexp", "logaddexp2")
def _logaddexp(c: Call):
    d = c.out_dtype
    x, y = c.t("input", d), c.t("other", d)
    if c.op == "logaddexp2":
        ln2 = c.const(math.log(2.0), d)
        x, y = c.add("Mul", [x, ln2]), c.add("Mul", [y, ln2])
    hi = c.add("Max", [x, y])
    tail = c.add("Log", [c.add("Add", [c.const(1.0, d), c.add("Exp", [
        c.add("Neg", [c.add("Abs", [c.add("Sub", [x, y])])])])])])
    out = c.add("Add", [hi, tail])
    # both -inf (or equal infinities): the max itself, not NaN
    out = c.add("Where", [c.add("Equal", [x, y]), c.add("Add", [x, c.const(math.log(2.0), d)]),
                          out])
    out = c.add("Where", [c.add("IsInf", [hi]), hi, out])
    return c.add("Div", [out, ln2]) if c.op == "logaddexp2" else out


@mapping("copysign")
def _copysign(c: Call):
    d = c.out_dtype
    x, y = c.t("input", d), c.t("other", d)
    # the sign bit of y: y < 0, or y is -0.0 (1 / y == -inf)
    negative = c.add("Or", [c.add("Less", [y, c.const(0.0, d)]),
                            c.add("Less", [c.add("Div", [c.const(1.0, d), y]),
                                           c.const(0.0, d)])])
    ax = c.add("Abs", [x])
    return c.add("Where", [negative, c.add("Neg", [ax]), ax])


@mapping("signbit")
def _signbit(c: Call):
    src = c.dtype("input")
    x = c.t("input")
    if src == "bool":
        return c.add("Not", [c.add("Or", [x, c.add("Not", [x])])])
    zero = c.const(0, src)
    negative = c.add("Less", [x, zero])
    if src in FLOAT_TYPES:
        negative = c.add("Or", [negative, c.add("Less", [c.add("Div", [c.const(1, src), x]),
                                                         zero])])
    return negative


@mapping("heaviside")
def _heaviside(c: Call):
    d = c.out_dtype
    x, v = c.t("input", d), c.t("values", d)
    zero = c.const(0, d)
    step = c.add("Cast", [c.add("Greater", [x, zero])], to=onnx_type(d))
    return c.add("Where", [c.add("Equal", [x, zero]), v, step])


@mapping("nan_to_num")
def _nan_to_num(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    if d not in FLOAT_TYPES:
        return x
    info = np.finfo({"float16": np.float16, "float64": np.float64}.get(d, np.float32))
    nan = c.lit("nan", 0.0)
    pos, neg = c.lit("posinf"), c.lit("neginf")
    out = c.add("Where", [c.add("IsNaN", [x]), c.const(0.0 if nan is None else nan, d), x])
    out = c.add("Where", [c.add("IsInf", [out], detect_negative=0),
                          c.const(float(info.max) if pos is None else pos, d), out])
    return c.add("Where", [c.add("IsInf", [out], detect_positive=0),
                           c.const(float(info.min) if neg is None else neg, d), out])


@mapping("sinc")
def _sinc(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    px = c.add("Mul", [x, c.const(math.pi, d)])
    zero = c.add("Equal", [x, c.const(0.0, d)])
    safe = c.add("Where", [zero, c.const(1.0, d), px])
    return c.add("Where", [zero, c.const(1.0, d), c.add("Div", [c.add("Sin", [safe]), safe])])


@mapping("isclose")
def _isclose(c: Call):
    d = c.common_dtype("input", "other")
    x, y = c.t("input", d), c.t("other", d)
    if d not in FLOAT_TYPES:
        x, y, d = c.b.cast(x, d, "float64"), c.b.cast(y, d, "float64"), "float64"
    tol = c.add("Add", [c.const(float(c.lit("atol", 1e-8)), d),
                        c.add("Mul", [c.const(float(c.lit("rtol", 1e-5)), d),
                                      c.add("Abs", [y])])])
    close = c.add("LessOrEqual", [c.add("Abs", [c.add("Sub", [x, y])]), tol])
    infinite = c.add("Or", [c.add("IsInf", [x]), c.add("IsInf", [y])])
    close = c.add("Or", [c.add("And", [infinite, c.add("Equal", [x, y])]),   # only equal
                         c.add("And", [c.add("Not", [infinite]), close])])  # infinities
    if c.lit("equal_nan", False):
        close = c.add("Or", [close, c.add("And", [c.add("IsNaN", [x]), c.add("IsNaN", [y])])])
    return close


# -- activations with thresholds ----------------------------------------------------------------

@mapping("hardshrink", "softshrink")
def _shrink(c: Call):
    d = c.out_dtype
    lambd = float(c.lit("lambd", 0.5))
    x = c.t("input", d)
    if c.op == "hardshrink":
        keep = c.add("Greater", [c.add("Abs", [x]), c.const(lambd, d)])
        return c.add("Where", [keep, x, c.const(0.0, d)])
    return c.add("Shrink", [x], lambd=lambd, bias=lambd)


@mapping("tanhshrink")
def _tanhshrink(c: Call):
    x = c.t("input", c.out_dtype)
    return c.add("Sub", [x, c.add("Tanh", [x])])


@mapping("glu")
def _glu(c: Call):
    shape = c.shape("input")
    axis = norm_axis(int(c.lit("dim", -1)), len(shape))
    if not isinstance(shape[axis], int):
        raise Unsupported("glu along a dynamic dimension")
    a, b = c.add("Split", [c.t("input", c.out_dtype), c.i64([shape[axis] // 2] * 2)],
                 outputs=2, axis=axis)
    return c.add("Mul", [a, c.add("Sigmoid", [b])])


@mapping("lu_unpack")
def _lu_unpack(c: Call):
    """``(P, L, U)`` from ``lu_factor``'s packed output: ``L`` and ``U`` are the triangles
    (``Trilu``) with a unit diagonal on ``L``; ``P`` the permutation of the rows made by the
    ``k`` (static) pivot swaps, one ``GatherElements``/``ScatterElements`` pair each."""
    d = c.dtype("LU_data")
    shape = c.shape("LU_data")
    m, n = shape[-2:]
    if not isinstance(m, int) or not isinstance(n, int):
        raise Unsupported("lu_unpack of matrices of dynamic sizes")
    k = min(m, n)
    lu = c.t("LU_data")
    empty = c.const(np.zeros(0, dtype=np.float64), "float64")
    empty = c.b.cast(empty, "float64", d)
    outs = [empty, empty, empty]
    if bool(c.lit("unpack_data", True)):
        c.require(14, "lu_unpack's triangles (Trilu)")
        cols = c.add("Slice", [lu, c.i64([0]), c.i64([k]), c.i64([-1])])
        rows = c.add("Slice", [lu, c.i64([0]), c.i64([k]), c.i64([-2])])
        eye = c.const(np.eye(m, k), d)
        outs[1] = c.add("Add", [c.add("Trilu", [cols, c.i64(-1)], upper=0), eye])
        outs[2] = c.add("Trilu", [rows], upper=1)
    if bool(c.lit("unpack_pivots", True)):
        piv = c.add("Sub", [c.t("LU_pivots", "int64"), c.const(np.int64(1), "int64")])
        batch = c.b.sizes(shape[:-2] + [1])
        order = c.add("Expand", [c.i64(np.arange(m)), c.b.sizes(shape[:-2] + [m])])
        for i in range(c.shape("LU_pivots")[-1]):
            at = c.add("Expand", [c.i64([i]), batch])
            j = c.add("Slice", [piv, c.i64([i]), c.i64([i + 1]), c.i64([-1])])
            oi = c.add("GatherElements", [order, at], axis=-1)
            oj = c.add("GatherElements", [order, j], axis=-1)
            order = c.add("ScatterElements", [order, c.add("Concat", [j, at], axis=-1),
                                              c.add("Concat", [oi, oj], axis=-1)], axis=-1)
        rank = len(shape)
        p = c.add("Equal", [unsqueeze(c, order, [rank - 2]),
                            c.i64(np.arange(m).reshape(m, 1))])
        outs[0] = c.add("Cast", [p], to=onnx_type(d))
    return outs
