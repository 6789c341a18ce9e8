"""ONNX tensor operators: casts, shapes, indexing, reductions (registered in the table of
``_ops_import.py``)."""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F

from ._ops_import import (
    ONNX_DTYPES,
    Call,
    ember_dtype,
    is_integral,
    normalize_axis,
    numpy_dtype,
    onnx_dtype_name,
    register,
    versions,
)

# -- constants, casts and shapes ----------------------------------------------------------------

def _dtype_check(attr_name: str):
    def check(attrs: dict) -> str | None:
        code = attrs.get(attr_name)
        if code is not None and code not in ONNX_DTYPES:
            return f"{attr_name}={onnx_dtype_name(code)}"
        return None
    return check


@register("Cast", versions(6, 9, 13, 19, 21, 23, 24, 25), check=_dtype_check("to"))
def _cast(c: Call):
    return c.x(0).to(ONNX_DTYPES[c.attr("to")])


@register("CastLike", versions(15, 19, 21, 23, 24, 25))
def _cast_like(c: Call):
    return c.x(0).to(c.x(1).dtype)


@register("Shape", versions(1, 13, 15, 19, 21, 23, 24, 25))
def _shape(c: Call):
    dims = list(c.x(0).shape)[c.attr("start", 0):c.attr("end", None)]
    return c.new(np.asarray(dims, dtype=np.int64))


@register("Size", versions(1, 13, 19, 21, 23, 24, 25))
def _size(c: Call):
    return c.new(np.asarray(c.x(0).numel(), dtype=np.int64))


def _constant_of_shape_check(attrs: dict) -> str | None:
    value = attrs.get("value")
    if value is not None and ember_dtype(value.dtype) is None:
        return f"value of type {value.dtype}"
    return None


@register("ConstantOfShape", versions(9, 20, 21, 23, 24, 25), check=_constant_of_shape_check)
def _constant_of_shape(c: Call):
    value = c.attr("value")
    if value is None:
        value = np.zeros(1, dtype=np.float32)
    return c.new(np.full(tuple(c.ints(0)), value.reshape(-1)[0], dtype=value.dtype))


@register("Range", versions(11))
def _range(c: Call):
    start, limit, delta = c.scalar(0), c.scalar(1), c.scalar(2)
    count = max(math.ceil((limit - start) / delta), 0)
    values = start + np.arange(count) * delta  # ONNX: start + i * delta, as ORT computes
    return c.new(values.astype(numpy_dtype(c.x(0).dtype)))


@register("Reshape", versions(5, 13, 14, 19, 21, 23, 24, 25))
def _reshape(c: Call):
    x, shape = c.x(0), c.ints(1)
    if not c.attr("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


@register("Flatten", versions(1, 9, 11, 13, 21, 23, 24, 25))
def _flatten(c: Call):
    x = c.x(0)
    axis = c.attr("axis", 1)
    axis = axis + x.dim() if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@register("Transpose", versions(1, 13, 21, 23, 24, 25))
def _transpose(c: Call):
    x = c.x(0)
    perm = c.attr("perm") or list(reversed(range(x.dim())))
    return x.permute(*perm)


def _axes(c: Call, input_index: int, since: int) -> list[int] | None:
    """An operator's ``axes``: the attribute before opset ``since``, input ``input_index`` from
    it on; ``None`` when not given."""
    if c.version < since:
        return c.attr("axes")
    return c.ints(input_index)


@register("Squeeze", versions(1, 11, 13, 21, 23, 24, 25))
def _squeeze(c: Call):
    x = c.x(0)
    axes = _axes(c, 1, 13)
    if axes is None:
        return x.reshape([d for d in x.shape if d != 1])
    axes = {normalize_axis(a, x.dim()) for a in axes}
    for a in axes:
        if x.shape[a] != 1:
            raise RuntimeError(f"Squeeze: dimension {a} of shape {list(x.shape)} is not 1")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])


@register("Unsqueeze", versions(1, 11, 13, 21, 23, 24, 25))
def _unsqueeze(c: Call):
    x = c.x(0)
    axes = _axes(c, 1, 13)
    rank = x.dim() + len(axes)
    axes = sorted(normalize_axis(a, rank) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return x.reshape(shape)


@register("Concat", versions(4, 11, 13))
def _concat(c: Call):
    xs = [t for t in c.inputs if t is not None]
    return ember.cat(xs, dim=normalize_axis(c.attr("axis"), xs[0].dim()))


@register("Split", versions(2, 11, 13, 18))
def _split(c: Call):
    x = c.x(0)
    axis = normalize_axis(c.attr("axis", 0), x.dim())
    size = x.shape[axis]
    sizes = c.ints(1) if c.version >= 13 else c.attr("split")
    if not sizes:
        parts = c.attr("num_outputs", len(c.node.outputs))
        chunk = math.ceil(size / parts)
        if c.attr("num_outputs") is None and size % parts:
            raise RuntimeError(f"Split: dimension {axis} of size {size} cannot be split into "
                               f"{parts} equal parts")
        sizes = [chunk] * (parts - 1) + [size - chunk * (parts - 1)]
    return tuple(ember.split(x, sizes, dim=axis))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


@register("Slice", versions(1, 10, 11, 13))
def _slice(c: Call):
    x = c.x(0)
    if c.version < 10:
        starts, ends, axes, steps = c.attr("starts"), c.attr("ends"), c.attr("axes"), None
    else:
        starts, ends, axes, steps = c.ints(1), c.ints(2), c.ints(3), c.ints(4)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.dim()
    reversed_axes = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(axis, x.dim())
        dim = x.shape[axis]
        if step == 0:
            raise ValueError("Slice: steps must not be 0")
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            index[axis] = slice(_clamp(start, 0, dim), _clamp(end, 0, dim), step)
        else:
            start, end = _clamp(start, 0, dim - 1), _clamp(end, -1, dim - 1)
            reversed_axes.append((axis, list(range(start, end, step))))
    out = x[tuple(index)]
    for axis, positions in reversed_axes:  # negative steps: gather the positions
        out = out.index_select(axis, c.new(np.asarray(positions, dtype=np.int64)))
    return out


def _indices(c: Call, i: int, dim: int) -> ember.Tensor:
    """Input ``i`` as int64 indices into a dimension of size ``dim`` (negatives wrapped)."""
    index = c.x(i)
    if index.dtype != ember.int64:
        index = index.to(ember.int64)
    return ember.where(index < 0, index + dim, index)


@register("Gather", versions(1, 11, 13))
def _gather(c: Call):
    data = c.x(0)
    axis = normalize_axis(c.attr("axis", 0), data.dim())
    index = _indices(c, 1, data.shape[axis])
    out = data.index_select(axis, index.reshape(-1))
    return out.reshape(*data.shape[:axis], *index.shape, *data.shape[axis + 1:])


@register("GatherElements", versions(11, 13))
def _gather_elements(c: Call):
    data = c.x(0)
    axis = normalize_axis(c.attr("axis", 0), data.dim())
    return ember.gather(data, axis, _indices(c, 1, data.shape[axis]))


def _linear_index(data_shape, index: ember.Tensor, batch_dims: int) -> ember.Tensor:
    """GatherND/ScatterND: ``index[..., k]`` (with ``batch_dims`` leading batch axes) as rows of
    ``data`` reshaped to ``(prod(shape[:batch_dims + k]), *shape[batch_dims + k:])``."""
    k = index.shape[-1]
    indexed = data_shape[batch_dims:batch_dims + k]
    index = index.to(ember.int64)
    sizes = ember.tensor(list(indexed), dtype=ember.int64, device=index.device)
    index = ember.where(index < 0, index + sizes, index)
    strides = [math.prod(indexed[j + 1:]) for j in range(k)]
    linear = (index * ember.tensor(strides, dtype=ember.int64, device=index.device)).sum(-1)
    if batch_dims:
        batch = math.prod(data_shape[:batch_dims])
        offsets = ember.arange(batch, device=index.device) * math.prod(indexed)
        linear = linear.reshape(batch, -1) + offsets.reshape(batch, 1)
    return linear.reshape(-1)


@register("GatherND", versions(11, 12, 13))
def _gather_nd(c: Call):
    data, index = c.x(0), c.x(1)
    batch_dims = c.attr("batch_dims", 0)
    k = index.shape[-1]
    rows = data.reshape(-1, *data.shape[batch_dims + k:])
    out = rows.index_select(0, _linear_index(data.shape, index, batch_dims))
    return out.reshape(*index.shape[:-1], *data.shape[batch_dims + k:])


_SCATTER_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@register("ScatterElements", versions(11, 13, 16, 18))
def _scatter_elements(c: Call):
    data, updates = c.x(0), c.x(2)
    axis = normalize_axis(c.attr("axis", 0), data.dim())
    index = _indices(c, 1, data.shape[axis])
    reduction = c.attr("reduction", "none")
    if reduction == "none":
        return ember.scatter(data, axis, index, updates)
    return ember.scatter_reduce(data, axis, index, updates, _SCATTER_REDUCE[reduction])


@register("ScatterND", versions(11, 13, 16, 18))
def _scatter_nd(c: Call):
    data, index, updates = c.x(0), c.x(1), c.x(2)
    k = index.shape[-1]
    rows = data.reshape(-1, *data.shape[k:])
    linear = _linear_index(data.shape, index, 0)
    updates = updates.reshape(-1, *data.shape[k:])
    reduction = c.attr("reduction", "none")
    if reduction == "none":
        out = rows.index_copy(0, linear, updates)
    elif reduction == "add":
        out = rows.index_add(0, linear, updates)
    else:
        out = rows.index_reduce(0, linear, updates, _SCATTER_REDUCE[reduction])
    return out.reshape(data.shape)


@register("Expand", versions(8, 13))
def _expand(c: Call):
    x = c.x(0)
    return x.expand(*np.broadcast_shapes(tuple(x.shape), tuple(c.ints(1))))


@register("Tile", versions(6, 13))
def _tile(c: Call):
    return ember.tile(c.x(0), tuple(c.ints(1)))


@register("Trilu", versions(14))
def _trilu(c: Call):
    x, k = c.x(0), c.scalar(1, 0)
    return ember.triu(x, k) if c.attr("upper", 1) else ember.tril(x, k)


@register("CumSum", versions(11, 14))
def _cumsum(c: Call):
    x = c.x(0)
    axis = normalize_axis(c.scalar(1), x.dim())
    reverse = c.attr("reverse", 0)
    if reverse:
        x = x.flip(axis)
    out = ember.cumsum(x, axis)
    if c.attr("exclusive", 0):  # shift by one along the axis, zeros first
        out = F.pad(out.narrow(axis, 0, x.shape[axis] - 1),
                    [0, 0] * (x.dim() - axis - 1) + [1, 0])
    return out.flip(axis) if reverse else out


@register("OneHot", versions(9, 11))
def _one_hot(c: Call):
    indices, values = c.x(0), c.x(2)
    depth = int(c.scalar(1))
    rank = indices.dim() + 1
    axis = normalize_axis(c.attr("axis", -1), rank)
    indices = indices.to(ember.int64)
    indices = ember.where(indices < 0, indices + depth, indices)
    classes = ember.arange(depth, device=indices.device).reshape(
        [depth if i == axis else 1 for i in range(rank)])
    hot = indices.unsqueeze(axis) == classes
    return ember.where(hot, values[1], values[0])


@register("NonZero", versions(9, 13))
def _non_zero(c: Call):
    x = c.x(0)
    if x.dim() == 0:
        return c.new(np.zeros((0, int(bool(x.item()))), dtype=np.int64))
    return ember.nonzero(x).t().contiguous()


@register("DepthToSpace", versions(1, 11, 13))
def _depth_to_space(c: Call):
    x = c.x(0)
    b = c.attr("blocksize")
    n, ch, h, w = x.shape
    if c.attr("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, ch // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, ch // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, ch // (b * b), h * b, w * b)


@register("SpaceToDepth", versions(1, 13))
def _space_to_depth(c: Call):
    x = c.x(0)
    b = c.attr("blocksize")
    n, ch, h, w = x.shape
    y = x.reshape(n, ch, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return y.reshape(n, ch * b * b, h // b, w // b)


@register("EyeLike", versions(9, 22))
def _eye_like(c: Call):
    x = c.x(0)
    code = c.attr("dtype")
    dtype = x.dtype if code is None else ONNX_DTYPES[code]
    rows, cols = x.shape
    return c.new(np.eye(rows, cols, k=c.attr("k", 0)), dtype=dtype)


@register("Dropout", versions(7, 10, 12, 13, 22))
def _dropout(c: Call):
    x = c.x(0)
    training = c.version >= 12 and bool(c.scalar(2, False))
    ratio = c.scalar(1, 0.5) if c.version >= 12 else c.attr("ratio", 0.5)
    if not training or ratio == 0.0:
        mask = ember.ones(x.shape, dtype=ember.bool, device=x.device) if c.wants(1) else None
        return x, mask
    mask = ember.rand(x.shape, device=x.device) >= ratio
    scale = 0.0 if ratio >= 1.0 else 1.0 / (1.0 - ratio)
    return x * mask.to(x.dtype) * scale, mask


# -- reductions ---------------------------------------------------------------------------------

def _reduce(kind: str, input_since: int):
    def run(c: Call):
        x = c.x(0)
        axes = c.attr("axes") if c.version < input_since else c.ints(1)
        keepdim = bool(c.attr("keepdims", 1))
        if not axes:
            if c.attr("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        if x.dim() == 0:
            x, axes, keepdim = x.reshape(1), [0], False
        dims = tuple(sorted(normalize_axis(a, x.dim()) for a in axes))
        return _REDUCTIONS[kind](x, dims, keepdim)
    return run


def _prod(x, dims, keepdim):
    for d in sorted(dims, reverse=True):
        x = ember.prod(x, d, keepdim=keepdim)
    return x


def _mean_any(x, dims, keepdim):
    if not is_integral(x):
        return x.mean(dim=dims, keepdim=keepdim)
    count = math.prod(x.shape[d] for d in dims)
    return ember.div(x.sum(dim=dims, keepdim=keepdim), count, rounding_mode="trunc")


_REDUCTIONS = {
    "Sum": lambda x, d, k: x.sum(dim=d, keepdim=k),
    "Mean": _mean_any,
    "Max": lambda x, d, k: ember.amax(x, dim=d, keepdim=k),
    "Min": lambda x, d, k: ember.amin(x, dim=d, keepdim=k),
    "Prod": _prod,
    "L1": lambda x, d, k: x.abs().sum(dim=d, keepdim=k),
    "L2": lambda x, d, k: (x * x).sum(dim=d, keepdim=k).sqrt(),
    "SumSquare": lambda x, d, k: (x * x).sum(dim=d, keepdim=k),
    "LogSum": lambda x, d, k: x.sum(dim=d, keepdim=k).log(),
    "LogSumExp": lambda x, d, k: ember.logsumexp(x, d, keepdim=k),
}

register("ReduceSum", versions(1, 11, 13))(_reduce("Sum", 13))
register("ReduceMean", versions(1, 11, 13, 18))(_reduce("Mean", 18))
register("ReduceMax", versions(1, 11, 12, 13, 18, 20))(_reduce("Max", 18))
register("ReduceMin", versions(1, 11, 12, 13, 18, 20))(_reduce("Min", 18))
register("ReduceProd", versions(1, 11, 13, 18))(_reduce("Prod", 18))
register("ReduceL1", versions(1, 11, 13, 18))(_reduce("L1", 18))
register("ReduceL2", versions(1, 11, 13, 18))(_reduce("L2", 18))
register("ReduceSumSquare", versions(1, 11, 13, 18))(_reduce("SumSquare", 18))
register("ReduceLogSum", versions(1, 11, 13, 18))(_reduce("LogSum", 18))
register("ReduceLogSumExp", versions(1, 11, 13, 18))(_reduce("LogSumExp", 18))


def _arg_reduce(largest: bool):
    def run(c: Call):
        x = c.x(0)
        axis = normalize_axis(c.attr("axis", 0), x.dim())
        keepdim = bool(c.attr("keepdims", 1))
        pick = ember.argmax if largest else ember.argmin
        if c.attr("select_last_index", 0):
            return x.shape[axis] - 1 - pick(x.flip(axis), dim=axis, keepdim=keepdim)
        return pick(x, dim=axis, keepdim=keepdim)
    return run


register("ArgMax", versions(1, 11, 12, 13))(_arg_reduce(True))
register("ArgMin", versions(1, 11, 12, 13))(_arg_reduce(False))


@register("TopK", versions(1, 10, 11))
def _topk(c: Call):
    x = c.x(0)
    k = c.attr("k") if c.version < 10 else int(c.scalar(1))
    axis = normalize_axis(c.attr("axis", -1), x.dim())
    values, indices = ember.topk(x, k, dim=axis, largest=bool(c.attr("largest", 1)),
                                 sorted=True)
    return values, indices


@register("LpNormalization", versions(1, 22))
def _lp_normalization(c: Call):
    x = c.x(0)
    axis = normalize_axis(c.attr("axis", -1), x.dim())
    p = c.attr("p", 2)
    norm = x.abs().sum(axis, keepdim=True) if p == 1 else (x * x).sum(axis, keepdim=True).sqrt()
    return x / norm


@register("MeanVarianceNormalization", versions(9, 13))
def _mean_variance_normalization(c: Call):
    x = c.x(0)
    dims = tuple(normalize_axis(a, x.dim()) for a in c.attr("axes", [0, 2, 3]))
    mean = x.mean(dim=dims, keepdim=True)
    centered = x - mean
    variance = (centered * centered).mean(dim=dims, keepdim=True)
    return centered / (variance.sqrt() + 1e-9)
