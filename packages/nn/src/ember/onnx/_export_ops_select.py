"""ONNX export mappings: sorting and selection (``sort``, ``topk``, ``median``...), the scatter
family (``scatter``, ``index_add``, ``index_put``...), cumulative ops, and ops whose result
size depends on the data (``nonzero``, ``masked_select``, ``unique``); registered in the table
of ``_export_ops.py``.

A data-dependent size is a symbol of the captured graph (``u0``); the exporter reads it from
the first ONNX value that has it (``_export_program``), so later ops can use it as a size.
Cumulative ops without an ONNX operator (``cumprod``, ``cummax``, ``logcumsumexp``) are an
``[n, n]`` lower-triangular mask and one reduction: ``O(n^2)`` work along the scanned dim.
"""

from __future__ import annotations

import numpy as np

from ._export_graph import FLOAT_TYPES, NUMPY_DTYPES, Unsupported, onnx_type
from ._export_ops import Call, is_tensor_arg, mapping, norm_axis, reduce, squeeze, unsqueeze

# -- sorting and selection ----------------------------------------------------------------------

def _sortable(c: Call, name: str = "input") -> str:
    d = c.dtype(name)
    if d == "bool":
        raise Unsupported("sorting a bool tensor (ONNX TopK takes numbers)")
    return c.t(name)


def _topk(c: Call, x: str, k, axis: int, largest: bool, sorted_: bool = True) -> list:
    return c.add("TopK", [x, c.b.sizes([k])], outputs=2, axis=axis, largest=int(largest),
                 sorted=int(sorted_))


@mapping("topk")
def _topk_op(c: Call):
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim", -1)), rank)
    k = c.sizes("k")[0]
    if rank == 0:
        return [c.t("input"), c.const(np.int64(0), "int64")]
    return _topk(c, _sortable(c), k, axis, bool(c.lit("largest", True)),
                 bool(c.lit("sorted", True)))


@mapping("sort", "argsort", "msort")
def _sort(c: Call):
    shape = c.shape("input")
    rank = len(shape)
    if rank == 0:
        return [c.t("input"), c.const(np.int64(0), "int64")] if c.op == "sort" \
            else c.const(np.int64(0), "int64")
    axis = 0 if c.op == "msort" else norm_axis(int(c.lit("dim", -1)), rank)
    # ONNX TopK returns equal elements in index order: a stable sort, both directions
    values, indices = _topk(c, _sortable(c), shape[axis], axis,
                            bool(c.lit("descending", False)))
    if c.op == "argsort":
        return indices
    if c.op == "msort":
        return values
    return [values, indices]


def _kth(c: Call, x: str, k, axis: int, keep: bool) -> list:
    """The ``k``-th smallest (1-based, k a size expression) along ``axis``, and its index."""
    values, indices = _topk(c, x, k, axis, False)
    at = c.const(np.int64(k - 1), "int64") if isinstance(k, int) \
        else c.add("Sub", [c.b.scalar_expr(k), c.const(np.int64(1), "int64")])
    out = [c.add("Gather", [values, at], axis=axis), c.add("Gather", [indices, at], axis=axis)]
    return [unsqueeze(c, o, [axis]) for o in out] if keep else out


@mapping("kthvalue")
def _kthvalue(c: Call):
    rank = c.rank("input")
    if rank == 0:
        return [c.t("input"), c.const(np.int64(0), "int64")]
    axis = norm_axis(int(c.lit("dim", -1)), rank)
    return _kth(c, _sortable(c), c.sizes("k")[0], axis, bool(c.lit("keepdim", False)))


def _median_k(n):
    """1-based rank of the lower median of ``n`` elements (a size expression)."""
    if isinstance(n, int):
        return (n - 1) // 2 + 1
    return {"add": [{"floordiv": [{"sub": [n, 1]}, 2]}, 1]}


@mapping("median")
def _median(c: Call):
    shape = c.shape("input")
    rank = len(shape)
    x = _sortable(c)
    if c.p.get("dim") is None:
        if rank == 0:
            return x
        n = 1
        for e in shape:
            n = n * e if isinstance(n, int) and isinstance(e, int) else {"mul": [n, e]}
        flat = c.add("Reshape", [x, c.i64([-1])])
        return _kth(c, flat, _median_k(n), 0, False)[0]
    if rank == 0:
        return [x, c.const(np.int64(0), "int64")]
    axis = norm_axis(int(c.lit("dim")), rank)
    return _kth(c, x, _median_k(shape[axis]), axis, bool(c.lit("keepdim", False)))


# -- scatter family -----------------------------------------------------------------------------

_REDUCE = {"add": ("add", 16), "sum": ("add", 16), "multiply": ("mul", 16),
           "prod": ("mul", 16), "amax": ("max", 18), "amin": ("min", 18)}


def _src_like(c: Call, src, index: str, index_shape: list, d: str) -> str:
    """``src`` (a tensor, possibly larger than the index, or a number) as updates of the
    index's shape."""
    if is_tensor_arg(src):
        name = c.t(src, d)
        src_shape = c.arg_meta(src)["shape"]
        if list(src_shape) != list(index_shape):
            name = c.add("Slice", [name, c.i64([0] * len(index_shape)),
                                   c.b.sizes(index_shape), c.i64(list(range(len(index_shape))))])
        return name
    return c.add("Expand", [c.t(src, d), c.b.shape_of(index)])


def _scatter_elements(c: Call, data: str, index: str, updates: str, axis: int,
                      reduction: str | None = None) -> str:
    if reduction is None:
        return c.add("ScatterElements", [data, index, updates], axis=axis)
    since = 18 if reduction in ("max", "min") else 16
    c.require(since, f"{c.op} with reduction {reduction!r} (ScatterElements' reduction)")
    return c.add("ScatterElements", [data, index, updates], axis=axis, reduction=reduction)


@mapping("scatter", "scatter_add")
def _scatter(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), max(rank, 1))
    index = c.t("index", "int64")
    src = c.p.get("src") if c.p.get("src") is not None else c.p.get("value")
    updates = _src_like(c, src, index, c.shape("index"), d)
    reduction = "add" if c.op == "scatter_add" else c.lit("reduce")
    if reduction is not None:
        if reduction not in ("add", "multiply"):
            raise Unsupported(f"reduce={reduction!r}")
        reduction = _REDUCE[reduction][0]
    return _scatter_elements(c, c.t("input", d), index, updates, axis, reduction)


@mapping("scatter_reduce")
def _scatter_reduce(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), max(rank, 1))
    index = c.t("index", "int64")
    updates = _src_like(c, c.p["src"], index, c.shape("index"), d)
    return _scatter_reduce_into(c, c.t("input", d), index, updates, axis, c.lit("reduce"),
                                bool(c.lit("include_self", True)), d)


def _scatter_reduce_into(c: Call, x: str, index: str, updates: str, axis: int, how: str,
                         include_self: bool, d: str) -> str:
    """``scatter_reduce`` of ``updates`` into ``x`` at ``index`` (the shape of ``updates``)."""
    if how == "mean":
        if d not in FLOAT_TYPES:
            raise Unsupported("scatter_reduce(reduce='mean') of an integer tensor")
        zero, one = c.const(0.0, d), c.const(1.0, d)
        base = x if include_self else _scatter_elements(
            c, x, index, c.add("Expand", [zero, c.b.shape_of(index)]), axis)
        start = c.add("Expand", [one if include_self else zero, c.b.shape_of(x)])
        total = _scatter_elements(c, base, index, updates, axis, "add")
        count = _scatter_elements(c, start, index, c.add("Expand", [one, c.b.shape_of(index)]),
                                  axis, "add")
        return c.add("Where", [c.add("Equal", [count, zero]), x,
                               c.add("Div", [total, count])])
    if how not in _REDUCE:
        raise Unsupported(f"reduce={how!r}")
    reduction = _REDUCE[how][0]
    if not include_self:  # scattered positions start from the reduction's identity
        identity = {"add": 0, "mul": 1}.get(reduction)
        if identity is None:
            info = np.finfo if d in FLOAT_TYPES else np.iinfo
            np_dtype = NUMPY_DTYPES.get(d, np.float32)
            identity = info(np_dtype).min if reduction == "max" else info(np_dtype).max
            if d in FLOAT_TYPES:
                identity = -np.inf if reduction == "max" else np.inf
        fill = c.add("Expand", [c.const(identity, d), c.b.shape_of(index)])
        x = _scatter_elements(c, x, index, fill, axis)
    return _scatter_elements(c, x, index, updates, axis, reduction)


def _index_along(c: Call, index: str, axis: int, like: str, rank: int) -> str:
    """A 1-d ``index`` laid along ``axis`` and broadcast to the shape of ``like``."""
    if rank > 1:
        index = unsqueeze(c, index, [a for a in range(rank) if a != axis])
    return c.add("Expand", [index, c.b.shape_of(like)])


@mapping("index_add", "index_copy")
def _index_add(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), max(rank, 1))
    source = c.t("source", d)
    if rank == 0:
        source = unsqueeze(c, source, [0]) if c.rank("source") == 0 else source
    alpha = c.lit("alpha", 1)
    if c.op == "index_add" and alpha != 1:
        source = c.add("Mul", [source, c.const(alpha, d)])
    x = c.t("input", d)
    if rank == 0:
        x = unsqueeze(c, x, [0])
    index = _index_along(c, c.t("index", "int64"), axis, source, max(rank, 1))
    out = _scatter_elements(c, x, index, source, axis,
                            "add" if c.op == "index_add" else None)
    return squeeze(c, out, [0]) if rank == 0 else out


@mapping("index_fill")
def _index_fill(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    if rank == 0:
        raise Unsupported("index_fill of a 0-d tensor")
    axis = norm_axis(int(c.lit("dim")), rank)
    x = c.t("input", d)
    picked = c.add("Gather", [x, c.t("index", "int64")], axis=axis)  # the filled region
    value = c.add("Expand", [c.t("value", d), c.b.shape_of(picked)])
    index = _index_along(c, c.t("index", "int64"), axis, picked, rank)
    return _scatter_elements(c, x, index, value, axis)


@mapping("take")
def _take(c: Call):
    flat = c.add("Reshape", [c.t("input"), c.i64([-1])])
    return c.add("Gather", [flat, c.t("index", "int64")], axis=0)


@mapping("put")
def _put(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    flat = c.add("Reshape", [x, c.i64([-1])])
    index = c.add("Reshape", [c.t("index", "int64"), c.i64([-1])])
    source = c.add("Reshape", [c.t("source", d), c.i64([-1])])
    out = _scatter_elements(c, flat, index, source, 0,
                            "add" if c.lit("accumulate", False) else None)
    return c.add("Reshape", [out, c.b.shape_of(x)])


@mapping("index_put")
def _index_put(c: Call):
    items = c.p.get("indices")
    if isinstance(items, dict) and "tuple" in items:
        items = items["tuple"]
    if not isinstance(items, list):
        items = [items]
    return index_put(c, "input", items, c.p.get("values"), bool(c.lit("accumulate", False)))


def index_put(c: Call, self_name: str, items: list, value, accumulate: bool) -> str:
    """``self[items] = value`` (``+=`` when ``accumulate``) for one boolean mask, or integer
    index tensors on the leading dims (they broadcast together): ``Where`` for the mask,
    ``ScatterND`` for the indices."""
    d = c.dtype(self_name)
    shape = c.shape(self_name)
    x = c.t(self_name, d)
    if not items or not all(is_tensor_arg(i) for i in items):
        raise Unsupported("indices other than tensors (None, slices) in index_put")
    metas = [c.arg_meta(i) for i in items]
    v = c.t(value, d)
    if len(items) == 1 and metas[0]["dtype"] in ("bool", "uint8"):
        mask = c.t(items[0], "bool")
        k = len(metas[0]["shape"])
        if len(shape) > k:
            mask = unsqueeze(c, mask, list(range(k, len(shape))))
        value_shape = c.arg_meta(value)["shape"] if is_tensor_arg(value) else []
        if any(s != 1 for s in value_shape):  # one row of values per selected position
            rest = list(shape[k:])
            rows = c.add("Reshape", [v, c.add("Concat", [c.i64([-1]), c.b.sizes(rest)], axis=0)
                                     if rest else c.i64([-1])])
            flat_mask = c.add("Reshape", [c.t(items[0], "bool"), c.i64([-1])])
            position = c.add("Max", [c.add("Sub", [
                c.add("CumSum", [c.add("Cast", [flat_mask], to=onnx_type("int64")),
                                 c.const(np.int64(0), "int64")]),
                c.const(np.int64(1), "int64")]), c.const(np.int64(0), "int64")])
            v = c.add("Reshape", [c.add("Gather", [rows, position], axis=0), c.b.shape_of(x)])
        if accumulate:
            v = c.add("Where", [mask, v, c.const(0, d)])
            return c.add("Add", [x, v])
        return c.add("Where", [mask, v, x])
    if any(m["dtype"] in ("bool", "uint8") for m in metas):
        raise Unsupported("a boolean mask mixed with other indices in index_put")
    if len(items) > len(shape):
        raise Unsupported(f"too many indices for a {len(shape)}-d tensor")
    idx = [c.t(i, "int64") for i in items]
    ranks = [len(m["shape"]) for m in metas]
    lead = max(ranks)
    if len(idx) > 1:  # broadcast the index tensors together
        total = idx[0]
        for other in idx[1:]:
            total = c.add("Add", [total, other])
        common = c.b.shape_of(total)
        idx = [c.add("Expand", [i, common]) for i in idx]
    coords = c.add("Concat", [unsqueeze(c, i, [lead]) for i in idx], axis=-1) \
        if len(idx) > 1 else unsqueeze(c, idx[0], [lead])
    # negative indices count from the end, as ScatterND does not
    dims = c.b.sizes(list(shape[:len(idx)]))
    coords = c.add("Where", [c.add("Less", [coords, c.const(0, "int64")]),
                             c.add("Add", [coords, dims]), coords])
    # updates: index shape + the rest of self's shape
    update_shape = c.add("Concat", [c.add("Slice", [c.b.shape_of(coords), c.i64([0]),
                                                    c.i64([-1])]),
                                    c.b.sizes(list(shape[len(idx):]))], axis=0) \
        if len(shape) > len(idx) else c.add("Slice", [c.b.shape_of(coords), c.i64([0]),
                                                      c.i64([-1])])
    updates = c.add("Expand", [v, update_shape])
    if accumulate:
        c.require(16, "index_put(accumulate=True) (ScatterND's reduction)")
        return c.add("ScatterND", [x, coords, updates], reduction="add")
    return c.add("ScatterND", [x, coords, updates])


@mapping("masked_scatter")
def _masked_scatter(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    shape = c.b.shape_of(c.add("Add", [x, c.add("Cast", [c.t("mask", "bool")],
                                                 to=onnx_type(d))]))
    mask = c.add("Expand", [c.t("mask", "bool"), shape])
    x = c.add("Expand", [x, shape])
    flat_mask = c.add("Reshape", [mask, c.i64([-1])])
    # the k-th selected position takes source's k-th element
    position = c.add("Sub", [c.add("CumSum", [c.add("Cast", [flat_mask], to=onnx_type("int64")),
                                              c.const(np.int64(0), "int64")]),
                             c.const(np.int64(1), "int64")])
    position = c.add("Max", [position, c.const(np.int64(0), "int64")])
    source = c.add("Reshape", [c.t("source", d), c.i64([-1])])
    picked = c.add("Reshape", [c.add("Gather", [source, position], axis=0), shape])
    return c.add("Where", [mask, picked, x])


# -- data-dependent sizes -----------------------------------------------------------------------

@mapping("nonzero", "argwhere")
def _nonzero(c: Call):
    x = c.t("input")
    rank = c.rank("input")
    if rank == 0:
        raise Unsupported("nonzero of a 0-d tensor")
    coords = c.add("NonZero", [x])  # [rank, n]
    if c.op == "nonzero" and c.lit("as_tuple", False):
        return [squeeze(c, c.add("Gather", [coords, c.i64([d])], axis=0), [0])
                for d in range(rank)]
    return c.add("Transpose", [coords], perm=[1, 0])


@mapping("masked_select")
def _masked_select(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    mask = c.t("mask", "bool")
    shape = c.b.shape_of(c.add("Add", [x, c.add("Cast", [mask], to=onnx_type(d))]))
    flat = c.add("Reshape", [c.add("Expand", [x, shape]), c.i64([-1])])
    keep = c.add("Reshape", [c.add("Expand", [mask, shape]), c.i64([-1])])
    return c.add("Compress", [flat, keep], axis=0)


def select_by_mask(c: Call, x: str, x_shape: list, mask: str, mask_rank: int) -> str:
    """``x[mask]`` for a boolean mask over ``x``'s leading ``mask_rank`` dims."""
    rest = list(x_shape[mask_rank:])
    target = c.add("Concat", [c.i64([-1]), c.b.sizes(rest)], axis=0) if rest else c.i64([-1])
    flat = c.add("Reshape", [x, target])
    keep = c.add("Reshape", [mask, c.i64([-1])])
    return c.add("Compress", [flat, keep], axis=0)


@mapping("unique")
def _unique(c: Call):
    x = c.t("input")
    dim = c.lit("dim")
    inverse, counts = bool(c.lit("return_inverse", False)), bool(c.lit("return_counts", False))
    if dim is None:
        values, _, inv, cnt = c.add("Unique", [c.add("Reshape", [x, c.i64([-1])])],
                                    outputs=4, sorted=1)
        if inverse:
            inv = c.add("Reshape", [inv, c.b.shape_of(x)])
    else:
        axis = norm_axis(int(dim), c.rank("input"))
        values, _, inv, cnt = c.add("Unique", [x], outputs=4, sorted=1, axis=axis)
    out = [values] + ([inv] if inverse else []) + ([cnt] if counts else [])
    return out[0] if len(c.outputs) == 1 else out


# -- cumulative ops -----------------------------------------------------------------------------

def _lower_mask(c: Call, n) -> str:
    """``[n, n]`` bool: ``j <= i`` (row i, column j)."""
    if isinstance(n, int):
        return c.const(np.tril(np.ones((n, n), dtype=bool)), "bool")
    r = c.add("Range", [c.const(np.int64(0), "int64"), c.b.scalar_expr(n),
                        c.const(np.int64(1), "int64")])
    return c.add("LessOrEqual", [unsqueeze(c, r, [0]), unsqueeze(c, r, [1])])


def _scan(c: Call, op_type: str, fill, dtype: str):
    """``op_type`` (ReduceProd, ReduceMax...) over each prefix along ``dim``: the input moved
    to the last axis, a row ``[..., 1, n]`` masked by ``j <= i`` into ``[..., n, n]``."""
    shape = c.shape("input")
    rank = len(shape)
    x = c.t("input", dtype)
    if rank == 0:
        return x, None, None, None, 0
    axis = norm_axis(int(c.lit("dim")), rank)
    perm = [a for a in range(rank) if a != axis] + [axis]
    moved = c.add("Transpose", [x], perm=perm) if axis != rank - 1 else x
    n = shape[axis]
    mask = _lower_mask(c, n)
    row = unsqueeze(c, moved, [rank - 1])
    masked = c.add("Where", [mask, row, c.const(fill, dtype)])
    out = reduce(c, op_type, masked, [rank], False)
    back = [perm.index(a) for a in range(rank)]
    return out, (back if axis != rank - 1 else None), (row, mask, n), moved, axis


def _restore(c: Call, x: str, back) -> str:
    return c.add("Transpose", [x], perm=back) if back else x


@mapping("cumprod")
def _cumprod(c: Call):
    d = c.lit("dtype") or c.out_dtype
    out, back, *_ = _scan(c, "ReduceProd", 1, d)
    return _restore(c, out, back)


@mapping("logcumsumexp")
def _logcumsumexp(c: Call):
    d = c.out_dtype
    out, back, *_ = _scan(c, "ReduceLogSumExp", -np.inf, d)
    return _restore(c, out, back)


@mapping("cummax", "cummin")
def _cummax(c: Call):
    d = c.dtype("input")
    is_max = c.op == "cummax"
    if d in FLOAT_TYPES:
        fill = -np.inf if is_max else np.inf
    elif d == "bool":
        raise Unsupported(f"{c.op} of a bool tensor")
    else:
        info = np.iinfo(NUMPY_DTYPES[d])
        fill = info.min if is_max else info.max
    out, back, parts, _, _ = _scan(c, "ReduceMax" if is_max else "ReduceMin", fill, d)
    if parts is None:
        return [out, c.const(np.int64(0), "int64")]
    row, mask, n = parts
    rank = c.rank("input")
    # the index: the last j <= i whose value equals the running extreme
    hit = c.add("And", [mask, c.add("Equal", [row, unsqueeze(c, out, [rank])])])
    cols = c.add("Range", [c.const(np.int64(0), "int64"), c.b.scalar_expr(n),
                           c.const(np.int64(1), "int64")])
    where = c.add("Where", [hit, cols, c.const(np.int64(-1), "int64")])
    index = reduce(c, "ReduceMax", where, [rank], False)
    return [_restore(c, out, back), _restore(c, index, back)]


# -- counting and small reductions --------------------------------------------------------------

@mapping("count_nonzero")
def _count_nonzero(c: Call):
    x = c.t("input")
    nz = c.add("Not", [c.add("Equal", [x, c.const(0, c.dtype("input"))])]) \
        if c.dtype("input") != "bool" else x
    ones = c.add("Cast", [nz], to=onnx_type("int64"))
    rank = c.rank("input")
    dims = c.lit("dim")
    axes = None if dims is None else sorted(norm_axis(int(a), rank) for a in
                                            (dims if isinstance(dims, list) else [dims]))
    return reduce(c, "ReduceSum", ones, axes, False) if rank else ones


@mapping("aminmax")
def _aminmax(c: Call):
    x = c.t("input")
    rank = c.rank("input")
    keep = bool(c.lit("keepdim", False))
    axes = None if c.p.get("dim") is None else [norm_axis(int(c.lit("dim")), rank)]
    if not rank:
        return [x, x]
    if axes is None and keep:
        axes = list(range(rank))
    return [reduce(c, "ReduceMin", x, axes, keep), reduce(c, "ReduceMax", x, axes, keep)]


@mapping("nanmean")
def _nanmean(c: Call):
    d = c.lit("dtype") or c.out_dtype
    x = c.t("input", d)
    rank = c.rank("input")
    dims = c.lit("dim")
    axes = None if dims is None or dims == [] else sorted(
        norm_axis(int(a), rank) for a in (dims if isinstance(dims, list) else [dims]))
    keep = bool(c.lit("keepdim", False))
    nan = c.add("IsNaN", [x])
    total = reduce(c, "ReduceSum", c.add("Where", [nan, c.const(0, d), x]), axes, keep)
    count = reduce(c, "ReduceSum", c.add("Cast", [c.add("Not", [nan])], to=onnx_type(d)),
                   axes, keep)
    return c.add("Div", [total, count])


@mapping("bucketize", "searchsorted")
def _bucketize(c: Call):
    if c.op == "bucketize":
        values, seq = "input", "boundaries"
    else:
        values, seq = "input", "sorted_sequence"
        if c.p.get("sorter") is not None:
            raise Unsupported("searchsorted with sorter")
    if not c.is_tensor(values):
        raise Unsupported("a number as the values to search")
    right = bool(c.lit("right", False)) or c.lit("side") == "right"
    d = c.common_dtype(values, seq)
    v, s = c.t(values, d), c.t(seq, d)
    seq_rank = c.rank(seq)
    vrank = c.rank(values)
    if seq_rank == 1:
        s_b = s  # [M] against values[..., None]
        v_b = unsqueeze(c, v, [vrank])
    else:
        s_b = unsqueeze(c, s, [seq_rank - 1])      # [..., 1, M]
        v_b = unsqueeze(c, v, [vrank])              # [..., K, 1]
    below = c.add("LessOrEqual" if right else "Less", [s_b, v_b])
    out = reduce(c, "ReduceSum", c.add("Cast", [below], to=onnx_type("int64")), [vrank], False)
    return c.b.cast(out, "int64", c.out_dtype)


# -- quantiles ----------------------------------------------------------------------------------

def _quantile_input(c: Call) -> tuple[str, list, int, bool, str]:
    """The input with the reduced axis (all of them flattened when ``dim`` is None), that
    axis, its static size, keepdim and the compute dtype."""
    d = c.dtype("input")
    if d not in FLOAT_TYPES:
        raise Unsupported(f"{c.op} of {d} (it takes float or double)")
    shape = list(c.shape("input"))
    x = c.t("input")
    dim = c.lit("dim")
    if dim is None:
        n = 1
        for e in shape:
            if not isinstance(e, int):
                raise Unsupported(f"{c.op} over all elements of a dynamic shape")
            n *= e
        return c.add("Reshape", [x, c.i64([-1])]), [n], 0, shape, d
    axis = norm_axis(int(dim), len(shape))
    if not shape:
        return c.add("Reshape", [x, c.i64([1])]), [1], 0, shape, d
    if not isinstance(shape[axis], int):
        raise Unsupported(f"{c.op} along a dynamic dimension")
    return x, shape, axis, shape, d


def _sort_nan_last(c: Call, x: str, n: int, axis: int, d: str) -> tuple[str, str, str]:
    """Ascending along ``axis`` with NaN as +inf (``TopK`` leaves NaN's place unspecified):
    the sorted keys, their indices and the count of non-NaN elements (kept axis)."""
    nan = c.add("IsNaN", [x])
    keys = c.add("Where", [nan, c.const(np.inf, d), x])
    values, indices = c.add("TopK", [keys, c.i64([n])], outputs=2, axis=axis, largest=0,
                            sorted=1)
    valid = reduce(c, "ReduceSum", c.add("Cast", [c.add("Not", [nan])], to=onnx_type("int64")),
                   [axis], True)
    return values, indices, valid


@mapping("quantile", "nanquantile")
def _quantile(c: Call):
    """PyTorch's ``quantile``: ranks ``q * (n - 1)`` (``n`` the non-NaN count for
    nanquantile), the interpolation between the neighbouring sorted values (``lerp`` as
    PyTorch computes it); a slice with a NaN gives NaN (quantile), an all-NaN slice NaN
    (nanquantile)."""
    x, shape, axis, in_shape, d = _quantile_input(c)
    rank = len(shape)
    n = shape[axis]
    if n == 0:
        raise Unsupported(f"{c.op} of an empty tensor")
    values, _, valid = _sort_nan_last(c, x, n, axis, d)
    q_scalar = not c.is_tensor("q")
    q = c.t("q", d)
    if not q_scalar and len(c.shape("q")) > 1:
        raise Unsupported("q must be a scalar or a 1-d tensor")
    where = [1] * rank
    where[axis] = -1
    q = c.add("Reshape", [q, c.i64(where)])  # along the reduced axis
    if c.op == "nanquantile":
        last = c.add("Cast", [c.add("Sub", [valid, c.i64([1])])], to=onnx_type(d))
        ranks = c.add("Max", [c.add("Mul", [q, last]), c.const(0.0, d)])
    else:
        ranks = c.add("Mul", [q, c.const(float(n - 1), d)])
    mode = c.lit("interpolation", "linear")
    if mode not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise Unsupported(f"interpolation={mode!r}")
    if mode == "lower":
        ranks = c.add("Floor", [ranks])
    elif mode == "higher":
        ranks = c.add("Ceil", [ranks])
    elif mode == "nearest":
        ranks = c.add("Round", [ranks])  # half to even, as PyTorch's round
    shape_q = c.add("Shape", [ranks])
    full = c.add("Max", [shape_q, c.add("Shape", [valid])])  # [..., Q, ...]
    ranks = c.add("Expand", [ranks, full])

    def gather(r):
        return c.add("GatherElements", [values, c.add("Cast", [r], to=onnx_type("int64"))],
                     axis=axis)

    below = gather(c.add("Floor", [ranks]))
    if mode in ("linear", "midpoint"):
        above = gather(c.add("Ceil", [ranks]))
        w = c.const(0.5, d) if mode == "midpoint" else \
            c.add("Sub", [ranks, c.add("Floor", [ranks])])
        diff = c.add("Sub", [above, below])
        low = c.add("Add", [below, c.add("Mul", [w, diff])])
        high = c.add("Sub", [above, c.add("Mul", [diff, c.add("Sub", [c.const(1.0, d), w])])])
        out = c.add("Where", [c.add("Less", [w, c.const(0.5, d)]), low, high])
    else:
        out = below
    bad = c.add("Equal", [valid, c.i64([0])]) if c.op == "nanquantile" else \
        c.add("Less", [valid, c.i64([n])])
    out = c.add("Where", [bad, c.const(np.nan, d), out])
    return _quantile_output(c, out, axis, rank, in_shape, q_scalar)


def _quantile_output(c: Call, out: str, axis: int, rank: int, in_shape: list,
                     q_scalar: bool) -> str:
    """``out`` has the q values along ``axis``; PyTorch puts them first (none for a scalar
    q), and keeps the reduced axis (all axes when ``dim`` is None) as 1 under keepdim."""
    keep = bool(c.lit("keepdim", False))
    if c.lit("dim") is None:
        # out: [Q]; result [Q] + ([1] * in_rank if keepdim)
        dims = [1] * len(in_shape) if keep else []
        return c.add("Reshape", [out, c.i64(([] if q_scalar else [-1]) + dims)])
    if not in_shape:
        return c.add("Reshape", [out, c.i64([] if q_scalar else [-1])])
    if q_scalar:
        return out if keep else squeeze(c, out, [axis])
    perm = [axis] + [a for a in range(rank) if a != axis]
    moved = c.add("Transpose", [out], perm=perm)
    return unsqueeze(c, moved, [axis + 1]) if keep else moved


@mapping("nanmedian")
def _nanmedian(c: Call):
    """The lower median of the non-NaN elements (``k = (n_valid - 1) // 2``, truncated as
    C++ divides, so an all-NaN slice gives its first NaN); with ``dim``, its index too."""
    d = c.dtype("input")
    shape = list(c.shape("input"))
    rank = len(shape)
    x = c.t("input")
    with_dim = c.p.get("dim") is not None
    if d not in FLOAT_TYPES:  # no NaN: the median
        return _median(c)
    if not with_dim:
        n = 1
        for e in shape:
            if not isinstance(e, int):
                raise Unsupported("nanmedian over all elements of a dynamic shape")
            n *= e
        x, axis, n_axis, keep = c.add("Reshape", [x, c.i64([-1])]), 0, n, False
    elif rank == 0:
        return [x, c.const(np.int64(0), "int64")]
    else:
        axis = norm_axis(int(c.lit("dim")), rank)
        n_axis, keep = shape[axis], bool(c.lit("keepdim", False))
        if not isinstance(n_axis, int):
            raise Unsupported("nanmedian along a dynamic dimension")
    if n_axis == 0:
        raise Unsupported("nanmedian of an empty tensor")
    values, indices, valid = _sort_nan_last(c, x, n_axis, axis, d)
    k = c.add("Div", [c.add("Max", [c.add("Sub", [valid, c.i64([1])]), c.i64([0])]),
                      c.i64([2])])
    # values at k are keys (NaN as +inf): an all-NaN slice is NaN
    v = c.add("GatherElements", [values, k], axis=axis)
    v = c.add("Where", [c.add("Equal", [valid, c.i64([0])]), c.const(np.nan, d), v])
    i = c.add("GatherElements", [indices, k], axis=axis)
    if not with_dim:
        return c.add("Reshape", [v, c.i64([])])
    return [v, i] if keep else [squeeze(c, v, [axis]), squeeze(c, i, [axis])]


@mapping("index_reduce")
def _index_reduce(c: Call):
    """``scatter_reduce`` with the 1-d index laid along ``dim`` and broadcast to ``source``."""
    d = c.out_dtype
    rank = c.rank("input")
    if rank == 0:
        raise Unsupported("index_reduce of a 0-d tensor")
    axis = norm_axis(int(c.lit("dim")), rank)
    source = c.t("source", d)
    index = _index_along(c, c.t("index", "int64"), axis, source, rank)
    how = {"prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}.get(c.lit("reduce"))
    if how is None:
        raise Unsupported(f"reduce={c.lit('reduce')!r}")
    return _scatter_reduce_into(c, c.t("input", d), index, source, axis, how,
                                bool(c.lit("include_self", True)), d)


# -- bincount, histc, mode ----------------------------------------------------------------------

def _count_into(c: Call, bins: str, size: str, keep: str | None, weights: str | None,
                d: str) -> str:
    """Per bin ``0..size-1``: the number (or ``weights``' sum) of the 1-d int64 ``bins``
    that fall in it (where ``keep``), as ``d``: a ``[n, size]`` membership product."""
    zero64, one64 = c.const(np.int64(0), "int64"), c.const(np.int64(1), "int64")
    member = c.add("Equal", [unsqueeze(c, bins, [1]), unsqueeze(c, c.add(
        "Range", [zero64, size, one64]), [0])])
    if keep is not None:
        member = c.add("And", [member, unsqueeze(c, keep, [1])])
    member = c.add("Cast", [member], to=onnx_type(d))
    if weights is not None:
        member = c.add("Mul", [member, unsqueeze(c, weights, [1])])
    return reduce(c, "ReduceSum", member, [0], False)


@mapping("bincount")
def _bincount(c: Call):
    """``max(max(input) + 1, minlength)`` bins (a size read from the data), each the count
    (or the weights' sum, in float64 rounded once as Ember) of its value."""
    d = c.out_dtype
    x = c.t("input", "int64")
    top = reduce(c, "ReduceMax", c.add("Concat", [x, c.i64([-1])], axis=0), None, False)
    size = c.add("Max", [c.add("Add", [top, c.const(np.int64(1), "int64")]),
                         c.const(np.int64(int(c.lit("minlength", 0))), "int64")])
    if not c.has("weights"):
        return _count_into(c, x, size, None, None, d)
    total = _count_into(c, x, size, None, c.t("weights", "float64"), "float64")
    return c.b.cast(total, "float64", d)


@mapping("histc")
def _histc(c: Call):
    """``bins`` equal bins over ``[min, max]`` (the data's range when both are 0): the bin
    of a value is ``(x - min) / (max - min) * bins`` truncated, ``max`` in the last bin,
    values outside (and NaN) left out, as Ember computes it in the input's dtype."""
    d = c.dtype("input")
    if d not in ("float32", "float64"):
        raise Unsupported(f"histc of {d} (Ember rounds each step to it)")
    bins = int(c.lit("bins", 100))
    lo, hi = float(c.lit("min", 0)), float(c.lit("max", 0))
    x = c.add("Reshape", [c.t("input"), c.i64([-1])])
    if lo == hi:  # the data's range (an empty input: [-1, 1])
        f = "float64"
        x64 = c.b.cast(x, d, f)
        empty = c.add("Equal", [c.b.dim_of(x, 0), c.i64([0])])
        low = c.add("Where", [empty, c.const([lo], f), reduce(c, "ReduceMin", c.add(
            "Concat", [x64, c.const([np.inf], f)], axis=0), [0], True)])
        high = c.add("Where", [empty, c.const([hi], f), reduce(c, "ReduceMax", c.add(
            "Concat", [x64, c.const([-np.inf], f)], axis=0), [0], True)])
        same = c.add("Equal", [low, high])
        low = c.add("Where", [same, c.add("Sub", [low, c.const([1.0], f)]), low])
        high = c.add("Where", [same, c.add("Add", [high, c.const([1.0], f)]), high])
        width = c.b.cast(c.add("Sub", [high, low]), f, d)
        low, high = c.b.cast(low, f, d), c.b.cast(high, f, d)
    else:
        if lo > hi:
            raise Unsupported("histc with min > max")
        width = c.const(hi - lo, d)
        low, high = c.const(lo, d), c.const(hi, d)
    keep = c.add("And", [c.add("GreaterOrEqual", [x, low]), c.add("LessOrEqual", [x, high])])
    scaled = c.add("Mul", [c.add("Div", [c.add("Sub", [x, low]), width]), c.const(float(bins), d)])
    scaled = c.add("Where", [keep, scaled, c.const(0.0, d)])
    pos = c.add("Min", [c.add("Cast", [scaled], to=onnx_type("int64")),
                        c.const(np.int64(bins - 1), "int64")])
    return _count_into(c, pos, c.const(np.int64(bins), "int64"), keep, None, d)


@mapping("mode")
def _mode(c: Call):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and its
    last index, from the ``[n, n]`` equality counts of each element (no NaN handling)."""
    d = c.dtype("input")
    rank = c.rank("input")
    if rank == 0:
        return [c.t("input"), c.const(np.int64(0), "int64")]
    if d == "bool" or d not in NUMPY_DTYPES:
        raise Unsupported(f"mode of {d}")
    axis = norm_axis(int(c.lit("dim", -1)), rank)
    keep = bool(c.lit("keepdim", False))
    x = c.t("input")
    eq = c.add("Equal", [unsqueeze(c, x, [axis + 1]), unsqueeze(c, x, [axis])])
    count = reduce(c, "ReduceSum", c.add("Cast", [eq], to=onnx_type("int64")), [axis + 1],
                   False)
    top = reduce(c, "ReduceMax", count, [axis], True)
    info = np.finfo if d in FLOAT_TYPES else np.iinfo
    big = np.inf if d in FLOAT_TYPES else info(NUMPY_DTYPES[d]).max
    value = reduce(c, "ReduceMin", c.add("Where", [c.add("Equal", [count, top]), x,
                                                   c.const(big, d)]), [axis], True)
    n = c.b.dim_of(x, axis)
    pos = c.add("Range", [c.const(np.int64(0), "int64"), squeeze(c, n, [0]),
                          c.const(np.int64(1), "int64")])
    pos = unsqueeze(c, pos, [a for a in range(rank) if a != axis]) if rank > 1 else pos
    index = reduce(c, "ReduceMax", c.add("Where", [c.add("Equal", [x, value]), pos,
                                                   c.const(np.int64(-1), "int64")]), [axis], True)
    if keep:
        return [value, index]
    return [squeeze(c, value, [axis]), squeeze(c, index, [axis])]
