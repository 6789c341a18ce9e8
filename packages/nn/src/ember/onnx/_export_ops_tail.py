"""ONNX export mappings: the last ops of the registry (registered in the table of
``_export_ops.py``): strided views and scatters, ``resize_as_``, ``nonzero_static``,
``unique_consecutive``, ``histogram`` and ``histogramdd``, fractional max pooling, ``ctc_loss``
and ``hash_tensor``.

An ONNX value owns its elements densely, in row-major order, so the "storage" that
``as_strided``, ``as_strided_scatter`` and ``resize_as_`` address is the flattened input (as
``torch.onnx`` exports ``as_strided``): exact for a tensor that owns dense memory (a graph
input, a weight, the result of a non-view op); a view's base storage is not an ONNX value.
Sizes, strides and offsets are static, so the storage positions are a constant index array.

``histogramdd`` returns its edges in a tuple inside its result: the captured node's result is
"nested" (FORMAT.md), its outputs the leaves in order (``hist``, then one edge tensor per
dimension), which is the list its mapping returns.
"""

from __future__ import annotations

import math

import numpy as np

from ._export_graph import FLOAT_TYPES, Unsupported, onnx_type
from ._export_ops import (
    Call,
    decode,
    is_tensor_arg,
    mapping,
    norm_axis,
    reduce,
    squeeze,
    unsqueeze,
)
from ._export_ops_loss import _reduction
from ._export_ops_math import _frexp64

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def _static(shape: list, what: str) -> list:
    if not all(isinstance(s, int) for s in shape):
        raise Unsupported(f"{what} with a dynamic size (the storage positions are constants)")
    return list(shape)


def _slice(c: Call, x: str, start, end, axis: int) -> str:
    """``x[start:end]`` along ``axis`` (``end`` an int or an int64 ``[1]`` tensor name)."""
    end = c.i64([end]) if isinstance(end, int) else end
    return c.add("Slice", [x, c.i64([start]), end, c.i64([axis])])


# -- strided views and scatters -----------------------------------------------------------------

def _positions(size, stride, offset: int) -> np.ndarray:
    """The storage position of every element of the strided view ``size``/``stride`` from
    ``offset``: ``offset + sum(i_k * stride_k)``, shaped ``size``."""
    pos = np.full(tuple(size), offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return pos


def _geometry(c: Call) -> tuple[list, list, int]:
    """``(size, stride, offset)`` of an ``as_strided*`` call, checked as Ember checks them;
    the offset defaults to 0, a dense value's own."""
    size, stride = c.ints("size"), c.ints("stride")
    if len(size) != len(stride):
        raise Unsupported("mismatch in length of strides and shape")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise Unsupported("negative sizes or strides")
    offset = int(c.lit("storage_offset", 0))
    if offset < 0:
        raise Unsupported(f"invalid storage offset {offset}")
    return size, stride, offset


def _within(c: Call, pos: np.ndarray, numel: int | None, what: str) -> None:
    if numel is not None and pos.size and int(pos.max()) >= numel:
        raise Unsupported(f"{what} reaches storage position {int(pos.max())} past the input's "
                          f"{numel} elements (the storage of a view's base, which an ONNX "
                          "value does not share)")


def _numel(shape: list) -> int | None:
    return math.prod(shape) if all(isinstance(s, int) for s in shape) else None


@mapping("as_strided")
def _as_strided(c: Call):
    """A ``Gather`` of the flattened input at the view's constant storage positions."""
    size, stride, offset = _geometry(c)
    pos = _positions(size, stride, offset)
    _within(c, pos, _numel(c.shape("input")), "as_strided")
    flat = c.add("Reshape", [c.t("input"), c.i64([-1])])
    return c.add("Gather", [flat, c.const(pos, "int64")], axis=0)


def _last_writers(size, stride, offset: int, numel: int) -> np.ndarray:
    """For each of ``numel`` storage positions, the flat index of the source element that an
    assignment through the (possibly self-overlapping) view leaves there, -1 where none
    writes: NumPy's own assignment order, as the eager kernel assigns with NumPy."""
    span = int(_positions(size, stride, offset).max()) + 1 if 0 not in size else 0
    store = np.full(max(numel, span, 1), -1, dtype=np.int64)
    view = np.lib.stride_tricks.as_strided(store[offset:], shape=tuple(size),
                                           strides=tuple(s * 8 for s in stride))
    view[...] = np.arange(math.prod(size), dtype=np.int64).reshape(tuple(size))
    return store[:numel]


@mapping("as_strided_scatter")
def _as_strided_scatter(c: Call):
    """The flattened input with the view's storage positions set to ``src`` (where a view
    overlaps itself, the element the eager assignment writes last): one ``ScatterElements``
    over unique positions."""
    size, stride, offset = _geometry(c)
    shape = _static(c.shape("input"), "as_strided_scatter of an input")
    numel = math.prod(shape)
    pos = _positions(size, stride, offset)
    _within(c, pos, numel, "as_strided_scatter")
    if list(c.shape("src")) != list(size):
        raise Unsupported(f"src of shape {c.shape('src')} for a view of size {size}")
    d = c.dtype("input")
    x = c.t("input")
    if not pos.size:
        return c.add("Identity", [x])
    writer = _last_writers(size, stride, offset, numel)
    where = np.flatnonzero(writer >= 0).astype(np.int64)
    src = c.add("Reshape", [c.t("src", d), c.i64([-1])])
    updates = c.add("Gather", [src, c.const(writer[where], "int64")], axis=0)
    flat = c.add("Reshape", [x, c.i64([-1])])
    out = c.add("ScatterElements", [flat, c.const(where, "int64"), updates], axis=0)
    return c.add("Reshape", [out, c.i64(shape)])


#: the axes of the channels-last formats from the outermost (``ember.channels_last``...)
_FORMAT_ORDERS = {"channels_last": (0, 2, 3, 1), "channels_last_3d": (0, 2, 3, 4, 1)}


@mapping("resize_as_")
def _resize_as(c: Call):
    """The template's shape over the input's elements from its start, laid out densely (in
    C order or the channels-last ``memory_format``): a ``Gather`` of the flattened input.
    Elements past the input's end are zero, as Ember fills a grown storage (PyTorch leaves
    them uninitialised)."""
    size = _static(c.shape("the_template"), "resize_as_ to a template")
    shape = _static(c.shape("input"), "resize_as_ of an input")
    fmt = c.lit("memory_format")
    if fmt is None and size == shape:
        return c.add("Identity", [c.t("input")])
    if fmt in (None, "contiguous_format"):
        order = tuple(range(len(size)))
    elif fmt in _FORMAT_ORDERS and len(_FORMAT_ORDERS[fmt]) == len(size):
        order = _FORMAT_ORDERS[fmt]
    else:
        raise Unsupported(f"resize_as_ with memory_format={fmt} to a {len(size)}-d shape")
    strides, step = [0] * len(size), 1
    for ax in reversed(order):
        strides[ax] = step
        step *= max(size[ax], 1)
    pos = _positions(size, strides, 0)
    d = c.out_dtype
    flat = c.add("Reshape", [c.t("input"), c.i64([-1])])
    numel = math.prod(shape)
    need = int(pos.max()) + 1 if pos.size else 0
    if need > numel:
        flat = c.add("Concat", [flat, c.const(np.zeros(need - numel), d)], axis=0)
    return c.add("Gather", [flat, c.const(pos, "int64")], axis=0)


# -- nonzero_static, unique_consecutive ---------------------------------------------------------

@mapping("nonzero_static")
def _nonzero_static(c: Call):
    """``nonzero`` (one row per nonzero element, in row-major order) padded with rows of
    ``fill_value`` and cut to exactly ``size`` rows."""
    size = int(c.lit("size"))
    fill = int(c.lit("fill_value", -1))
    if size < 0:
        raise Unsupported("'size' must be an non-negative integer")
    rank = c.rank("input")
    if rank == 0:
        return c.const(np.full((size, 0), fill, dtype=np.int64), "int64")
    x = c.t("input")
    mask = x if c.dtype("input") == "bool" else \
        c.add("Not", [c.add("Equal", [x, c.const(0, c.dtype("input"))])])
    rows = c.add("Transpose", [c.add("NonZero", [mask])], perm=[1, 0])
    pad = c.const(np.full((size, rank), fill, dtype=np.int64), "int64")
    return _slice(c, c.add("Concat", [rows, pad], axis=0), 0, size, 0)


@mapping("unique_consecutive")
def _unique_consecutive(c: Call):
    """Runs of equal neighbours (slices along ``dim``): a run starts where an element differs
    from the previous one (NaN from everything); the values are the starts (``Compress``),
    the inverse is the running count of starts less one (``CumSum``), the counts the gaps
    between consecutive starts (``NonZero``)."""
    x = c.t("input")
    rank = c.rank("input")
    dim = c.lit("dim")
    if dim is None:
        src, axis, others = c.add("Reshape", [x, c.i64([-1])]), 0, []
    else:
        axis = norm_axis(int(dim), rank)
        src, others = x, [a for a in range(rank) if a != axis]
    n = c.b.dim_of(src, axis)
    differs = c.add("Not", [c.add("Equal", [_slice(c, src, 1, _INT64_MAX, axis),
                                            _slice(c, src, 0, -1, axis)])])
    if others:
        count = reduce(c, "ReduceSum", c.add("Cast", [differs], to=onnx_type("int64")),
                       others, False)
        differs = c.add("Greater", [count, c.const(np.int64(0), "int64")])
    starts = _slice(c, c.add("Concat", [c.const([True], "bool"), differs], axis=0), 0, n, 0)
    out = [c.add("Compress", [src, starts], axis=axis)]
    if c.lit("return_inverse", False):
        running = c.add("CumSum", [c.add("Cast", [starts], to=onnx_type("int64")),
                                   c.const(np.int64(0), "int64")])
        inverse = c.add("Sub", [running, c.const(np.int64(1), "int64")])
        out.append(c.add("Reshape", [inverse, c.b.shape_of(x)]) if dim is None else inverse)
    if c.lit("return_counts", False):
        first = c.add("Reshape", [c.add("NonZero", [starts]), c.i64([-1])])
        ends = c.add("Concat", [_slice(c, first, 1, _INT64_MAX, 0), n], axis=0)
        out.append(c.add("Sub", [ends, first]))
    return out[0] if len(out) == 1 else out


# -- histogram ----------------------------------------------------------------------------------

def _spaced_const(lo: float, hi: float, steps: int, d: str) -> np.ndarray:
    """PyTorch's symmetric linspace in ``d`` (the first half up from ``lo``, the rest down
    from ``hi``), as Ember computes histogram edges."""
    ct = np.dtype(d).type
    s, e = ct(lo), ct(hi)
    step = (e - s) / ct(steps - 1)
    idx = np.arange(steps)
    up = s + step * idx.astype(ct)
    down = e - step * (steps - 1 - idx).astype(ct)
    return np.where(idx < steps // 2, up, down).astype(d)


def _spaced(c: Call, lo: str, hi: str, steps: int, d: str) -> str:
    """:func:`_spaced_const` from runtime ends ``lo``/``hi`` (``[1]`` tensors of ``d``)."""
    idx = np.arange(steps)
    step = c.add("Div", [c.add("Sub", [hi, lo]), c.const(float(steps - 1), d)])
    up = c.add("Add", [lo, c.add("Mul", [step, c.const(idx.astype(d), d)])])
    down = c.add("Sub", [hi, c.add("Mul", [step, c.const((steps - 1 - idx).astype(d), d)])])
    return c.add("Where", [c.const(idx < steps // 2, "bool"), up, down])


def _data_edges(c: Call, x: str, bins: int, d: str) -> str:
    """The edges over the data's range (``[0, 1]`` for no data; an empty range widened by
    0.5 each way in float64, then rounded to ``d``, as Ember's ``_outer_edges``)."""
    f = "float64"
    empty = c.add("Equal", [c.b.dim_of(x, 0), c.i64([0])])
    lo = reduce(c, "ReduceMin", c.add("Concat", [x, c.const([np.inf], d)], axis=0), [0], True)
    hi = reduce(c, "ReduceMax", c.add("Concat", [x, c.const([-np.inf], d)], axis=0), [0], True)
    lo = c.add("Where", [empty, c.const([0.0], f), c.b.cast(lo, d, f)])
    hi = c.add("Where", [empty, c.const([1.0], f), c.b.cast(hi, d, f)])
    same = c.add("Equal", [lo, hi])
    lo2 = c.add("Where", [same, c.add("Sub", [lo, c.const([0.5], f)]), lo])
    hi2 = c.add("Where", [same, c.add("Add", [hi, c.const([0.5], f)]), hi])
    return _spaced(c, c.b.cast(lo2, f, d), c.b.cast(hi2, f, d), bins + 1, d)


def _bin_of(c: Call, x: str, edges: str) -> tuple[str, str, str]:
    """``(bin, keep, count)`` of the values ``x`` (``[M]``) between ``edges``: a value's bin is
    the number of edges at or below it less one, clamped to the bins (the last bin holds its
    right edge); ``keep`` is False outside the edges (and for NaN); ``count`` the number of
    bins (an int64 ``[1]``)."""
    nb = c.add("Sub", [c.b.dim_of(edges, 0), c.i64([1])])
    first = _slice(c, edges, 0, 1, 0)
    last = _slice(c, edges, -1, _INT64_MAX, 0)
    keep = c.add("And", [c.add("GreaterOrEqual", [x, first]), c.add("LessOrEqual", [x, last])])
    below = c.add("Cast", [c.add("LessOrEqual", [unsqueeze(c, edges, [0]), unsqueeze(c, x, [1])])],
                  to=onnx_type("int64"))
    one = c.const(np.int64(1), "int64")
    pos = c.add("Sub", [reduce(c, "ReduceSum", below, [1], False), one])
    pos = c.add("Min", [c.add("Max", [pos, c.const(np.int64(0), "int64")]),
                        c.add("Sub", [squeeze(c, nb, [0]), one])])
    return pos, keep, nb


def _counted(c: Call, flat: str, keep: str, total: str, weight: str | None, d: str) -> str:
    """The ``[total]`` counts (or summed weights, in float64 rounded once to ``d``) of the
    kept values' flat bins ``flat``."""
    one = c.const(np.int64(1), "int64")
    member = c.add("Equal", [unsqueeze(c, flat, [1]), unsqueeze(c, c.add(
        "Range", [c.const(np.int64(0), "int64"), squeeze(c, total, [0]), one]), [0])])
    member = c.add("And", [member, unsqueeze(c, keep, [1])])
    if weight is not None:
        summed = reduce(c, "ReduceSum", c.add("Mul", [c.add(
            "Cast", [member], to=onnx_type("float64")), unsqueeze(c, weight, [1])]), [0], False)
        return c.b.cast(summed, "float64", d)
    counted = reduce(c, "ReduceSum", c.add("Cast", [member], to=onnx_type("int64")), [0], False)
    return c.add("Cast", [counted], to=onnx_type(d))


def _widths(c: Call, edges: str) -> str:
    return c.add("Sub", [_slice(c, edges, 1, _INT64_MAX, 0), _slice(c, edges, 0, -1, 0)])


def _range_edges(c: Call, lo: float, hi: float, bins: int, d: str) -> str:
    """``bins + 1`` edges over ``[lo, hi]`` (an empty range widened by 0.5 each way)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise Unsupported(f"range [{lo}, {hi}]")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return c.const(_spaced_const(lo, hi, bins + 1, d), d)


def _weight(c: Call) -> str | None:
    if not c.has("weight"):
        return None
    w = c.add("Reshape", [c.t("weight"), c.i64([-1])])
    return c.b.cast(w, c.dtype("weight"), "float64")


@mapping("histogram")
def _histogram(c: Call):
    """Counts (or summed weights, in float64 rounded once) of the values in the bins between
    the edges (given, from ``range``, or over the data's range): a value's bin is the number
    of edges at or below it less one, the last bin holds its right edge, values outside (and
    NaN) are left out; ``density`` divides by the total and the bin widths."""
    d = c.dtype("input")
    if d not in ("float32", "float64"):
        raise Unsupported(f"histogram of {d}")
    x = c.add("Reshape", [c.t("input"), c.i64([-1])])
    if c.is_tensor("bins"):
        edges = c.t("bins", d)
    else:
        bins = int(c.lit("bins", 100))
        if bins <= 0:
            raise Unsupported(f"bins must be > 0, got {bins}")
        rng = c.lit("range")
        if rng is None:
            edges = _data_edges(c, x, bins, d)
        else:
            lo, hi = (float(v) for v in rng)
            edges = _range_edges(c, lo, hi, bins, d)
    pos, keep, nb = _bin_of(c, x, edges)
    hist = _counted(c, pos, keep, nb, _weight(c), d)
    if c.lit("density", False):
        hist = c.add("Div", [hist, reduce(c, "ReduceSum", hist, [0], True)])
        hist = c.add("Div", [hist, _widths(c, edges)])
    return [hist, c.add("Identity", [edges]) if c.is_tensor("bins") else edges]


@mapping("histogramdd")
def _histogramdd(c: Call):
    """The N-dimensional histogram of the rows of ``input`` (``[..., N]``, N static): per
    dimension the bin of each coordinate between that dimension's edges (given tensors, from
    ``range``'s pairs, or over the data's range of that column), a point counted (or its
    weight summed, in float64) in the bin of the flat index of its N bins when every
    coordinate is inside its edges; ``density`` divides by the total and by each dimension's
    bin widths. Returns ``hist`` and the N edge tensors (the node's leaves in order)."""
    d = c.dtype("input")
    if d not in ("float32", "float64"):
        raise Unsupported(f"histogramdd of {d}")
    n = c.shape("input")[-1]
    if not isinstance(n, int):
        raise Unsupported("histogramdd over a dynamic number of dimensions")
    if n == 0:
        return [c.add("Identity", [c.const(np.zeros((), dtype=d), d)])]
    points = c.add("Reshape", [c.t("input"), c.i64([-1, n])])
    cols = [squeeze(c, _slice(c, points, k, k + 1, 1), [1]) for k in range(n)]
    bins = c.p.get("bins")
    given = isinstance(bins, list) and bool(bins) and all(is_tensor_arg(b) for b in bins)
    if given:
        edges = [c.t(b) for b in bins]
    else:
        counts = c.ints("bins", n)
        if len(counts) != n or any(k <= 0 for k in counts):
            raise Unsupported(f"bins {counts} for {n} dimensions")
        rng = c.lit("range")
        if rng is None:
            edges = [_data_edges(c, col, k, d) for col, k in zip(cols, counts)]
        else:
            if len(rng) != 2 * n:
                raise Unsupported(f"range {rng!r} for {n} dimensions")
            edges = [_range_edges(c, float(rng[2 * k]), float(rng[2 * k + 1]), counts[k], d)
                     for k in range(n)]
    flat = keep = total = None
    sizes = []
    for col, e in zip(cols, edges):
        pos, inside, nb = _bin_of(c, col, e)
        sizes.append(nb)
        if flat is None:
            flat, keep, total = pos, inside, nb
        else:
            flat = c.add("Add", [c.add("Mul", [flat, squeeze(c, nb, [0])]), pos])
            keep = c.add("And", [keep, inside])
            total = c.add("Mul", [total, nb])
    hist = _counted(c, flat, keep, total, _weight(c), d)
    hist = c.add("Reshape", [hist, c.add("Concat", sizes, axis=0) if n > 1 else sizes[0]])
    if c.lit("density", False):
        hist = c.add("Div", [hist, reduce(c, "ReduceSum", hist, None, True)])
        for k, e in enumerate(edges):
            shape = [1] * n
            shape[k] = -1
            hist = c.add("Div", [hist, c.add("Reshape", [_widths(c, e), c.i64(shape)])])
    return [hist] + [c.add("Identity", [e]) if given else e for e in edges]


# -- fractional max pooling ---------------------------------------------------------------------

#: which of a plane's random samples drives each spatial dim (PyTorch's kernels: W then H in
#: 2-D, T, H, W in 3-D), as in Ember's pooling
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def _fractional_sizes(c: Call, n: int, spatial: list) -> tuple[list, list]:
    k = c.ints("kernel_size", n)
    if c.has("output_size"):
        ys = c.ints("output_size", n)
    elif c.has("output_ratio"):
        ratio = c.lit("output_ratio")
        ratio = list(ratio) if isinstance(ratio, (list, tuple)) else [ratio]
        ratio = ratio * n if len(ratio) == 1 else ratio
        ys = [int(spatial[i] * ratio[i]) for i in range(n)]
    else:
        raise Unsupported("neither output_size nor output_ratio")
    if len(k) != n or len(ys) != n:
        raise Unsupported(f"kernel_size {k} / output_size {ys} for {n} spatial dims")
    return k, ys


def _fractional_starts(c: Call, u: str, lead: str, in_size: int, out_size: int, pool: int,
                       d: str) -> str:
    """Window starts along one dim, ``(N, C, out_size)`` int64: PyTorch's
    ``generate_intervals`` from the samples ``u`` ``(N, C)`` in ``d`` (``lead``: ``[N, C]``),
    ``int((i + u) * alpha) - int(u * alpha)`` and ``in_size - pool`` last."""
    last = c.add("Expand", [c.const(np.full((1, 1, 1), in_size - pool, np.int64), "int64"),
                            c.add("Concat", [lead, c.i64([1])], axis=0)])
    if out_size <= 1:
        return last if out_size == 1 else _slice(c, last, 0, 0, 2)
    ct = np.dtype(d).type
    alpha = c.const(ct(in_size - pool) / ct(out_size - 1), d)
    i = c.const(np.arange(out_size - 1, dtype=d), d)
    u3 = unsqueeze(c, u, [2])

    def op(op_type: str, a: str, b: str) -> str:
        """One rounded step in ``d``: the half types in float32 rounded back (exact: a sum
        or product of two halves rounds once in float32)."""
        if d in ("float32", "float64"):
            return c.add(op_type, [a, b])
        f = "float32"
        return c.b.cast(c.add(op_type, [c.b.cast(a, d, f), c.b.cast(b, d, f)]), f, d)

    int64 = onnx_type("int64")
    grown = c.add("Cast", [op("Mul", op("Add", i, u3), alpha)], to=int64)
    base = c.add("Cast", [op("Mul", u3, alpha)], to=int64)
    return c.add("Concat", [c.add("Sub", [grown, base]), last], axis=2)


@mapping("fractional_max_pool2d", "fractional_max_pool2d_with_indices",
         "fractional_max_pool3d", "fractional_max_pool3d_with_indices")
def _fractional_max_pool(c: Call):
    """Each window's candidates gathered from the flattened planes (``GatherElements``), the
    window origins from ``_random_samples`` as Ember computes them (drawn by
    ``RandomUniformLike`` when the call draws them); the pick is the first maximum, or the
    last NaN (``ArgMax``), and its index is its flat position in the plane."""
    n = 3 if "3d" in c.op else 2
    shape = c.shape("input")
    d = c.dtype("input")
    if d not in FLOAT_TYPES:
        raise Unsupported(f"fractional max pooling of {d}")
    if len(shape) not in (n + 1, n + 2):
        raise Unsupported(f"a {len(shape)}-d input")
    xs = _static(shape[-n:], "fractional max pooling over spatial dims")
    k, ys = _fractional_sizes(c, n, xs)
    if any(v <= 0 for v in k) or any(ys[i] < 0 or ys[i] + k[i] - 1 > xs[i] for i in range(n)):
        raise Unsupported(f"kernel_size {k} and output_size {ys} for input size {xs}")
    x = c.t("input")
    unbatched = len(shape) == n + 1
    if unbatched:
        x = unsqueeze(c, x, [0])
    lead = _slice(c, c.b.shape_of(x), 0, 2, 0)  # [N, C]
    # the starts in the input's dtype, as Ember computes them; comparisons in float32 for the
    # half types (exact), which onnxruntime's ArgMax does not take
    wide = d if d in ("float32", "float64") else "float32"
    if c.is_tensor("_random_samples"):
        samples = _slice(c, c.t("_random_samples", d), 0, c.b.dim_of(x, 0), 0)
    else:  # the runtime's generator, as each eager call draws anew
        zeros = c.add("ConstantOfShape", [c.add("Concat", [lead, c.i64([n])], axis=0)])
        samples = c.b.cast(c.add("RandomUniformLike", [zeros], dtype=onnx_type(wide), low=0.0,
                                 high=1.0), wide, d)
    plane = [math.prod(xs[i + 1:]) for i in range(n)]
    origin = None
    for i in range(n):
        u = squeeze(c, c.add("Gather", [samples, c.i64([_SAMPLE_OF_DIM[n][i]])], axis=2), [2])
        s = _fractional_starts(c, u, lead, xs[i], ys[i], k[i], d)
        axes = [2 + j for j in range(n) if j != i]
        s = unsqueeze(c, s, axes) if axes else s
        s = c.add("Mul", [s, c.const(np.int64(plane[i]), "int64")])
        origin = s if origin is None else c.add("Add", [origin, s])
    offsets = np.zeros(1, dtype=np.int64)
    for i in range(n):  # row-major over the window, as the eager scan
        offsets = (offsets[:, None] + np.arange(k[i], dtype=np.int64)[None, :] * plane[i])
        offsets = offsets.reshape(-1)
    pos = c.add("Add", [unsqueeze(c, origin, [2 + n]), c.const(offsets, "int64")])
    q, kk = math.prod(ys), offsets.size
    flat = c.add("Reshape", [x, c.add("Concat", [lead, c.i64([math.prod(xs)])], axis=0)])
    cand = c.add("GatherElements", [flat, c.add("Reshape", [pos, c.add(
        "Concat", [lead, c.i64([q * kk])], axis=0)])], axis=2)
    cand = c.add("Reshape", [cand, c.add("Concat", [lead, c.i64(ys + [kk])], axis=0)])
    cand_wide = c.b.cast(cand, d, wide)
    nan = c.add("IsNaN", [cand_wide])
    last_nan = c.add("ArgMax", [c.add("Cast", [nan], to=onnx_type("float32"))], axis=-1,
                     keepdims=1, select_last_index=1)
    any_nan = c.add("GatherElements", [nan, last_nan], axis=-1)
    best = c.add("ArgMax", [c.add("Where", [nan, c.const(-np.inf, wide), cand_wide])], axis=-1,
                 keepdims=1, select_last_index=0)
    pick = c.add("Where", [any_nan, last_nan, best])
    value = squeeze(c, c.add("GatherElements", [cand, pick], axis=-1), [-1])
    index = squeeze(c, c.add("GatherElements", [pos, pick], axis=-1), [-1])
    if unbatched:
        value, index = squeeze(c, value, [0]), squeeze(c, index, [0])
    return [value, index] if len(c.outputs) == 2 else value


# -- ctc_loss -----------------------------------------------------------------------------------

def _lengths(c: Call, name: str) -> str:
    """A lengths argument (a tensor or a list of ints) as a 1-d int64 tensor."""
    value = c.p.get(name)
    if is_tensor_arg(value):
        return c.add("Reshape", [c.t(name, "int64"), c.i64([-1])])
    return c.i64(np.asarray(decode(value), dtype=np.int64).reshape(-1))


class _Body:
    """The nodes of a ``Loop`` body (outer-scope values are read by name)."""

    def __init__(self, c: Call):
        self.c, self.nodes = c, []

    def __call__(self, op_type: str, inputs: list, **attrs) -> str:
        b = self.c.b
        if b.opset < 13:  # the node in the form of the requested opset
            return b.add_into(self.nodes, op_type, inputs, **attrs)
        name = b.fresh(f"{b.current or 'loop'}_{op_type}")
        self.nodes.append(b.helper.make_node(op_type, inputs, [name], name=b.fresh(
            f"/{b.current}/loop/{op_type}"), **attrs))
        return name


def _lse(e, arrays: list, d: str, zero: str) -> str:
    """Ember's elementwise log-sum-exp: ``log(sum(exp(a - m))) + m`` with ``m`` the maximum
    (0 where it is not finite), the terms summed left to right."""
    m = arrays[0]
    for a in arrays[1:]:
        m = e("Max", [m, a])
    finite = e("Not", [e("Or", [e("IsInf", [m]), e("IsNaN", [m])])])
    safe = e("Where", [finite, m, zero])
    total = None
    for a in arrays:
        term = e("Exp", [e("Sub", [a, safe])])
        total = term if total is None else e("Add", [total, term])
    return e("Add", [e("Log", [total]), safe])


def _shift(e, a: str, fill: str, cut: tuple) -> str:
    """``a`` ``(N, S)`` moved right along the labels by ``fill``'s width, ``fill`` in front
    (``cut``: the Slice inputs that keep the first ``S``)."""
    return e("Slice", [e("Concat", [fill, a], axis=1), *cut])


@mapping("ctc_loss", "nn.functional.ctc_loss")
def _ctc_loss(c: Call):
    """The CTC forward recursion over the extended label sequences (blanks between and
    around the labels) in log space, as Ember's kernel: an ONNX ``Loop`` over time carrying
    the ``(N, S')`` alphas, each step the log-sum-exp of staying, advancing one label and
    skipping a blank (between distinct labels), plus the step's log-probabilities; the
    loss is ``-log`` of the two final states' sum, reduced as ``reduction`` says."""
    d = c.dtype("log_probs")
    if d not in ("float32", "float64"):
        raise Unsupported(f"ctc_loss of {d}")
    reduction = _reduction(c)
    blank = int(c.lit("blank", 0))
    zero_infinity = bool(c.lit("zero_infinity", False))
    int64 = "int64"
    lp = c.t("log_probs")
    unbatched = c.rank("log_probs") == 2
    if unbatched:
        lp = unsqueeze(c, lp, [1])
    il, tl = _lengths(c, "input_lengths"), _lengths(c, "target_lengths")
    tg = c.t("targets", int64)
    if unbatched and c.rank("targets") == 1:
        tg = unsqueeze(c, tg, [0])
    zero64, one64 = c.const(np.int64(0), int64), c.const(np.int64(1), int64)
    blank64 = c.const(np.int64(blank), int64)
    smax = reduce(c, "ReduceMax", c.add("Concat", [tl, c.i64([0])], axis=0), [0], True)
    n_dim = c.b.dim_of(lp, 1)
    if c.rank("targets") == 2 or unbatched:
        padded = c.add("Slice", [tg, c.i64([0]), smax, c.i64([1])])
    else:  # concatenated targets: each sequence from the running total of the lengths
        starts = c.add("Sub", [c.add("CumSum", [tl, zero64]), tl])
        pos = c.add("Range", [zero64, squeeze(c, smax, [0]), one64])
        idx = c.add("Add", [unsqueeze(c, starts, [1]), unsqueeze(c, pos, [0])])
        keep = c.add("Less", [unsqueeze(c, pos, [0]), unsqueeze(c, tl, [1])])
        length = c.shape("targets")[0]
        if length == 0:
            picked = blank64
        else:
            top = c.add("Sub", [squeeze(c, c.b.dim_of(tg, 0), [0]), one64])
            idx = c.add("Min", [c.add("Max", [idx, zero64]), top])
            picked = c.add("Gather", [tg, idx], axis=0)
        padded = c.add("Where", [keep, picked, blank64])

    def block(k: int, value, dtype: str) -> str:
        """``(N, k)`` of ``value``."""
        return c.add("Expand", [c.const(np.full((1, k), value), dtype),
                                c.add("Concat", [n_dim, c.i64([k])], axis=0)])

    blanks = c.add("Add", [c.add("Mul", [padded, zero64]), blank64])
    pairs = c.add("Concat", [unsqueeze(c, blanks, [2]), unsqueeze(c, padded, [2])], axis=2)
    width = c.add("Add", [c.add("Mul", [smax, c.i64([2])]), c.i64([1])])  # S' = 2 smax + 1
    ext = c.add("Concat", [c.add("Reshape", [pairs, c.add("Concat", [
        n_dim, c.add("Sub", [width, c.i64([1])])], axis=0)]), block(1, blank, int64)],
        axis=1)  # (N, S'): blank, label, blank, ..., blank
    cut = (c.i64([0]), width, c.i64([1]))
    s_idx = c.add("Range", [zero64, squeeze(c, width, [0]), one64])
    before = _shift(c.add, ext, block(2, blank, int64), cut)
    skip = c.add("And", [c.add("GreaterOrEqual", [s_idx, c.const(np.int64(2), int64)]),
                         c.add("And", [c.add("Not", [c.add("Equal", [ext, blank64])]),
                                       c.add("Not", [c.add("Equal", [ext, before])])])])
    t_dim = c.b.dim_of(lp, 0)
    index = c.add("Expand", [unsqueeze(c, ext, [0]), c.add("Concat", [t_dim, n_dim, width],
                                                            axis=0)])
    lpe = c.add("GatherElements", [lp, index], axis=2)  # (T, N, S')
    ninf = c.const(-np.inf, d)
    start = c.add("Or", [c.add("Equal", [s_idx, zero64]), c.add("And", [
        c.add("Equal", [s_idx, one64]), unsqueeze(c, c.add("Greater", [tl, zero64]), [1])])])
    a = c.add("Where", [start, c.add("Gather", [lpe, zero64], axis=0), ninf])
    a = c.add("Where", [unsqueeze(c, c.add("Greater", [il, zero64]), [1]), a, ninf])

    one_ninf, two_ninf, zero = block(1, -np.inf, d), block(2, -np.inf, d), c.const(0.0, d)
    e = _Body(c)
    helper, b = c.b.helper, c.b
    it, cond, carried = b.fresh("ctc_t"), b.fresh("ctc_cond"), b.fresh("ctc_alpha")
    t = e("Add", [it, one64])
    step = e("Gather", [lpe, t], axis=0)
    moved1 = _shift(e, carried, one_ninf, cut)
    moved2 = e("Where", [skip, _shift(e, carried, two_ninf, cut), ninf])
    new = e("Add", [_lse(e, [carried, moved1, moved2], d, zero), step])
    live = e("Unsqueeze", [e("Less", [t, il]), c.i64([1])])
    out = e("Where", [live, new, carried])
    go_on = e("Identity", [cond])
    t_onnx = onnx_type(d)
    body = helper.make_graph(
        e.nodes, b.fresh("ctc_body"),
        [helper.make_tensor_value_info(it, onnx_type(int64), []),
         helper.make_tensor_value_info(cond, onnx_type("bool"), []),
         helper.make_tensor_value_info(carried, t_onnx, None)],
        [helper.make_tensor_value_info(go_on, onnx_type("bool"), []),
         helper.make_tensor_value_info(out, t_onnx, None)])
    trips = c.add("Sub", [squeeze(c, t_dim, [0]), one64])
    a = c.add("Loop", [trips, c.const(True, "bool"), a], body=body)

    last = c.add("Mul", [tl, c.const(np.int64(2), int64)])
    final = squeeze(c, c.add("GatherElements", [a, unsqueeze(c, last, [1])], axis=1), [1])
    before_last = c.add("Max", [c.add("Sub", [last, one64]), zero64])
    prev = squeeze(c, c.add("GatherElements", [a, unsqueeze(c, before_last, [1])], axis=1),
                   [1])
    prev = c.add("Where", [c.add("Greater", [tl, zero64]), prev, ninf])
    nll = c.add("Neg", [_lse(c.add, [final, prev], d, zero)])
    if zero_infinity:
        nll = c.add("Where", [c.add("IsInf", [nll]), zero, nll])
    if unbatched:
        nll = c.add("Reshape", [nll, c.i64([])])
    if reduction == "mean":
        lengths = c.add("Cast", [c.add("Max", [tl, one64])], to=t_onnx)
        if unbatched:
            lengths = c.add("Reshape", [lengths, c.i64([])])
        return reduce(c, "ReduceMean", c.add("Div", [nll, lengths]), None, False)
    if reduction == "sum":
        return reduce(c, "ReduceSum", nll, None, False)
    return nll


# -- hash_tensor --------------------------------------------------------------------------------

def _float_bits(c: Call, x: str) -> tuple[str, str]:
    """``(sign, rest)`` of float64 ``x``'s 64-bit pattern without a bit cast: ``sign`` bool
    (``-0.0`` by ``1 / x``), ``rest`` the low 63 bits as int64: the biased exponent and the
    fraction from ``frexp``, exact for every value; NaN is the positive quiet NaN."""
    f = "float64"
    m, e, _ = _frexp64(c, x)
    ax = c.add("Abs", [x])
    nan, inf = c.add("IsNaN", [x]), c.add("IsInf", [x])
    normal = c.add("GreaterOrEqual", [ax, c.const(2.0 ** -1022, f)])
    exponent = c.add("Where", [normal, c.add("Add", [e, c.const(1022.0, f)]), c.const(0.0, f)])
    exponent = c.add("Where", [c.add("Or", [nan, inf]), c.const(2047.0, f), exponent])
    regular = c.add("Mul", [c.add("Sub", [c.add("Mul", [c.add("Abs", [m]), c.const(2.0, f)]),
                                          c.const(1.0, f)]), c.const(2.0 ** 52, f)])
    tiny = c.add("Mul", [c.add("Mul", [ax, c.const(2.0 ** 537, f)]), c.const(2.0 ** 537, f)])
    fraction = c.add("Where", [normal, regular, tiny])
    fraction = c.add("Where", [inf, c.const(0.0, f), fraction])
    fraction = c.add("Where", [nan, c.const(2.0 ** 51, f), fraction])
    i64 = onnx_type("int64")
    rest = c.add("Add", [c.add("Mul", [c.add("Cast", [exponent], to=i64),
                                        c.const(np.int64(2 ** 52), "int64")]),
                         c.add("Cast", [fraction], to=i64)])
    zero = c.const(0.0, f)
    sign = c.add("Or", [c.add("Less", [x, zero]), c.add("And", [
        c.add("Equal", [x, zero]), c.add("Less", [c.add("Div", [c.const(1.0, f), x]), zero])])])
    return sign, rest


def _int_bits(c: Call, v: str) -> tuple[str, str]:
    """``(sign, rest)`` of int64 ``v``: the sign bit and the low 63 bits (``v + 2**63`` for a
    negative ``v``, in two steps that stay in range)."""
    sign = c.add("Less", [v, c.const(np.int64(0), "int64")])
    low = c.add("Where", [sign, v, c.const(np.int64(_INT64_MIN), "int64")])
    quarter = c.const(np.int64(2 ** 62), "int64")
    return sign, c.add("Where", [sign, c.add("Add", [c.add("Add", [low, quarter]), quarter]), v])


@mapping("hash_tensor")
def _hash_tensor(c: Call):
    """XOR of the elements' 64-bit patterns (floats as float64, the rest as int64) over
    ``dim``: each of the 64 bits is the parity of the number of elements that have it (bits
    read by integer division, so no opset-18 bitwise ops), the parities summed back into an
    int64 (the top bit as ``-2**63``). Exact for every value but NaN, which hashes as the
    positive quiet NaN (a NaN's sign and payload are not observable without a bit cast)."""
    if int(c.lit("mode", 0)) != 0:
        raise Unsupported(f"hash_tensor mode {c.lit('mode')}")
    d = c.dtype("input")
    rank = c.rank("input")
    dim = c.lit("dim")
    axes = list(range(rank)) if dim is None or dim == [] or dim == () else \
        sorted({norm_axis(int(a), rank) for a in (dim if isinstance(dim, (list, tuple))
                                                  else [dim])})
    keep = bool(c.lit("keepdim", False))
    if d in FLOAT_TYPES:
        sign, rest = _float_bits(c, c.t("input", "float64"))
    else:
        sign, rest = _int_bits(c, c.t("input", "int64"))
    powers = 2 ** np.arange(63, dtype=np.int64)
    bits = c.add("Mod", [c.add("Div", [unsqueeze(c, rest, [rank]), c.const(powers, "int64")]),
                         c.const(np.int64(2), "int64")])
    top = unsqueeze(c, c.add("Cast", [sign], to=onnx_type("int64")), [rank])
    bits = c.add("Concat", [bits, top], axis=rank)  # [..., 64]
    if axes:
        bits = reduce(c, "ReduceSum", bits, axes, keep)
    odd = c.add("Mod", [bits, c.const(np.int64(2), "int64")])
    # onnxruntime's int64 ReduceSum rounds through float64: the 63 low bits are summed in
    # 16-bit groups (exact), which integer Mul and Add put together
    out_rank = rank - (0 if keep else len(axes))
    groups = c.add("Reshape", [odd, c.i64([0] * out_rank + [4, 16])])
    weights = (2 ** np.arange(16, dtype=np.int64))[None, :].repeat(4, 0)
    weights[3, 15] = 0  # the sign bit
    parts = reduce(c, "ReduceSum", c.add("Mul", [groups, c.const(weights, "int64")]),
                   [out_rank + 1], False)
    total = c.add("Mul", [c.add("Gather", [odd, c.const(np.int64(63), "int64")], axis=out_rank),
                          c.const(np.int64(_INT64_MIN), "int64")])
    for g in range(4):
        part = c.add("Gather", [parts, c.const(np.int64(g), "int64")], axis=out_rank)
        total = c.add("Add", [total, c.add("Mul", [part, c.const(np.int64(2 ** (16 * g)),
                                                                 "int64")])])
    return total
