"""ONNX operators of neural-network layers: convolution, pooling, normalization, padding and
resizing (registered in the table of ``_ops_import.py``)."""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F

from ._ops_import import Call, normalize_axis, register, versions

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _spatial(table: dict, n: int, what: str):
    if n not in table:
        raise ValueError(f"{what}: expected 1 to 3 spatial dimensions, got {n}")
    return table[n]


def _auto_pads(c: Call, sizes, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """The begin and end paddings of a window operator from ``pads`` / ``auto_pad``."""
    n = len(kernel)
    mode = c.attr("auto_pad", "NOTSET")
    if mode in ("NOTSET", ""):
        pads = c.attr("pads") or [0] * (2 * n)
        return list(pads[:n]), list(pads[n:])
    if mode == "VALID":
        return [0] * n, [0] * n
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return begin, end


def _auto_pad_check(attrs: dict) -> str | None:
    mode = attrs.get("auto_pad", "NOTSET")
    if mode not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return f"auto_pad={mode}"
    return None


def pad_spatial(x: ember.Tensor, begin, end, value: float = 0.0) -> ember.Tensor:
    """``x`` (N, C, *spatial) padded by ``begin``/``end`` on its spatial dims with ``value``."""
    pairs = []
    for b, e in zip(reversed(begin), reversed(end)):
        pairs += [b, e]
    return F.pad(x, pairs, value=value) if any(pairs) else x


def _window(c: Call, x: ember.Tensor, kernel):
    n = len(kernel)
    strides = c.attr("strides") or [1] * n
    dilations = c.attr("dilations") or [1] * n
    begin, end = _auto_pads(c, x.shape[2:], kernel, strides, dilations)
    return list(strides), list(dilations), begin, end


# -- convolution --------------------------------------------------------------------------------

@register("Conv", versions(1, 11, 22), check=_auto_pad_check)
def _conv(c: Call):
    x, weight, bias = c.x(0), c.x(1), c.x(2)
    kernel = list(weight.shape[2:])
    conv = _spatial(_CONV, len(kernel), "Conv")
    strides, dilations, begin, end = _window(c, x, kernel)
    if begin != end:
        x, begin = pad_spatial(x, begin, end), [0] * len(kernel)
    return conv(x, weight, bias, strides, begin, dilations, c.attr("group", 1))


@register("ConvTranspose", versions(1, 11, 22), check=_auto_pad_check)
def _conv_transpose(c: Call):
    x, weight, bias = c.x(0), c.x(1), c.x(2)
    kernel = list(weight.shape[2:])
    n = len(kernel)
    conv = _spatial(_CONV_TRANSPOSE, n, "ConvTranspose")
    strides = list(c.attr("strides") or [1] * n)
    dilations = list(c.attr("dilations") or [1] * n)
    extra = list(c.attr("output_padding") or [0] * n)
    sizes = x.shape[2:]
    full = [s * (i - 1) + (k - 1) * d + 1 for i, k, s, d in zip(sizes, kernel, strides, dilations)]
    mode = c.attr("auto_pad", "NOTSET")
    targets = c.attr("output_shape")
    if targets is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        targets = [i * s for i, s in zip(sizes, strides)]
    if targets is not None:
        targets = list(targets)[-n:]
        total = [f + e - t for f, e, t in zip(full, extra, targets)]
        if mode == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        end = [t - b for t, b in zip(total, begin)]
    elif mode == "VALID":
        begin, end = [0] * n, [0] * n
    else:
        pads = c.attr("pads") or [0] * (2 * n)
        begin, end = list(pads[:n]), list(pads[n:])
    group = c.attr("group", 1)
    if begin == end and all(e < max(s, d) for e, s, d in zip(extra, strides, dilations)):
        return conv(x, weight, bias, strides, begin, extra, group, dilations)
    # asymmetric padding: the full output, cropped (and zero-extended by output_padding)
    y = conv(x, weight, None, strides, 0, 0, group, dilations)
    for axis, (f, b, e, pad_end) in enumerate(zip(full, begin, extra, end)):
        size = f + e - b - pad_end
        keep = min(size, f - b)
        y = y.narrow(axis + 2, b, keep)
        if keep < size:
            y = pad_spatial(y, [0] * n, [size - keep if i == axis else 0 for i in range(n)])
    if bias is not None:
        y = y + bias.reshape(-1, *([1] * n))
    return y


# -- pooling ------------------------------------------------------------------------------------

def _pool_geometry(c: Call, x: ember.Tensor):
    kernel = list(c.attr("kernel_shape"))
    strides, dilations, begin, end = _window(c, x, kernel)
    ceil_mode = c.attr("ceil_mode", 0)
    out = []
    for size, k, s, d, b, e in zip(x.shape[2:], kernel, strides, dilations, begin, end):
        span = size + b + e - ((k - 1) * d + 1)
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + b:  # a window may not start in the end padding
            o -= 1
        out.append(o)
    return kernel, strides, dilations, begin, end, out


def _overhang(sizes, kernel, strides, dilations, begin, end, out) -> list[int]:
    """How far the last window reaches past the end padding (ceil_mode)."""
    return [max((o - 1) * s + (k - 1) * d + 1 - (i + b + e), 0)
            for i, k, s, d, b, e, o in zip(sizes, kernel, strides, dilations, begin, end, out)]


def _native_padding(kernel, begin, end) -> bool:
    """Whether PyTorch-style symmetric pooling padding (at most half the kernel) covers it."""
    return begin == end and all(2 * b <= k for b, k in zip(begin, kernel))


def _lowest(dtype: ember.dtype) -> float:
    if dtype.is_floating_point:
        return -math.inf
    return 0.0 if dtype is ember.bool else float(ember.iinfo(dtype).min)


@register("MaxPool", versions(8, 10, 11, 12, 22), check=_auto_pad_check)
def _max_pool(c: Call):
    x = c.x(0)
    kernel, strides, dilations, begin, end, out = _pool_geometry(c, x)
    pool = _spatial(_MAX_POOL, len(kernel), "MaxPool")
    wants_indices = c.wants(1)
    if _native_padding(kernel, begin, end):
        result = pool(x, kernel, strides, begin, dilations, bool(c.attr("ceil_mode", 0)),
                      return_indices=wants_indices)
        padded_sizes, offsets = list(x.shape[2:]), [0] * len(kernel)
    else:
        over = _overhang(x.shape[2:], kernel, strides, dilations, begin, end, out)
        padded = pad_spatial(x, begin, [e + o for e, o in zip(end, over)], _lowest(x.dtype))
        result = pool(padded, kernel, strides, 0, dilations, False, return_indices=wants_indices)
        padded_sizes, offsets = list(padded.shape[2:]), begin
    y, plane_index = result if wants_indices else (result, None)
    if list(y.shape[2:]) != out:
        y = y[(slice(None), slice(None), *(slice(0, o) for o in out))]
    if not wants_indices:
        return y
    plane_index = plane_index[(slice(None), slice(None), *(slice(0, o) for o in out))]
    return y, _onnx_pool_indices(plane_index, x.shape, padded_sizes, offsets,
                                 c.attr("storage_order", 0))


def _onnx_pool_indices(plane_index, shape, padded_sizes, offsets, storage_order: int):
    """PyTorch's per-plane argmax positions (in a plane of ``padded_sizes``, shifted by
    ``offsets``) as ONNX MaxPool's ``Indices``: flat over the whole input, the plane row-major
    (``storage_order=0``) or column-major (1)."""
    sizes = list(shape[2:])
    coords, rest = [], plane_index
    for size in reversed(padded_sizes):
        coords.insert(0, rest % size)
        rest = rest // size
    coords = [coord - offset for coord, offset in zip(coords, offsets)]
    order = range(len(sizes)) if storage_order == 0 else reversed(range(len(sizes)))
    flat = None
    for i in order:
        flat = coords[i] if flat is None else flat * sizes[i] + coords[i]
    planes = ember.arange(shape[0] * shape[1], device=flat.device).reshape(
        shape[0], shape[1], *([1] * len(sizes)))
    return flat + planes * math.prod(sizes)


def _window_counts(size, k, s, d, b, e, over, out, include_pad: bool) -> np.ndarray:
    """How many positions of each output window an average divides by along one axis."""
    mask = np.zeros(b + size + e + over)
    mask[b:b + size] = 1.0
    if include_pad:
        mask[:b] = 1.0
        mask[b + size:b + size + e] = 1.0
    taps = np.arange(out)[:, None] * s + np.arange(k)[None, :] * d
    return mask[taps].sum(axis=1)


@register("AveragePool", versions(7, 10, 11, 19, 22), check=_auto_pad_check)
def _average_pool(c: Call):
    x = c.x(0)
    kernel, strides, dilations, begin, end, out = _pool_geometry(c, x)
    include_pad = bool(c.attr("count_include_pad", 0))
    n = len(kernel)
    if (_native_padding(kernel, begin, end) and all(d == 1 for d in dilations)
            and not c.attr("ceil_mode", 0)):
        return _spatial(_AVG_POOL, n, "AveragePool")(x, kernel, strides, begin, False,
                                                     include_pad)
    # window sums by a depthwise convolution with ones, divided by each window's count
    over = _overhang(x.shape[2:], kernel, strides, dilations, begin, end, out)
    padded = pad_spatial(x, begin, [e + o for e, o in zip(end, over)])
    channels = x.shape[1]
    ones = ember.ones((channels, 1, *kernel), dtype=x.dtype, device=x.device)
    sums = _spatial(_CONV, n, "AveragePool")(padded, ones, None, strides, 0, dilations, channels)
    sums = sums[(slice(None), slice(None), *(slice(0, o) for o in out))]
    counts = np.ones(())
    for axis, args in enumerate(zip(x.shape[2:], kernel, strides, dilations, begin, end, over,
                                    out)):
        shape = [1] * n
        shape[axis] = args[-1]
        counts = counts * _window_counts(*args, include_pad).reshape(shape)
    return sums / ember.tensor(counts, dtype=x.dtype, device=x.device)


@register("GlobalAveragePool", versions(1, 22))
def _global_average_pool(c: Call):
    x = c.x(0)
    return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


@register("GlobalMaxPool", versions(1, 22))
def _global_max_pool(c: Call):
    x = c.x(0)
    return ember.amax(x, dim=tuple(range(2, x.dim())), keepdim=True)


# -- normalization ------------------------------------------------------------------------------

def _batch_norm_check(attrs: dict) -> str | None:
    if attrs.get("spatial", 1) != 1:
        return "spatial=0"
    return None


@register("BatchNormalization", versions(7, 9, 14, 15), check=_batch_norm_check)
def _batch_normalization(c: Call):
    x, scale, bias, mean, var = (c.x(i) for i in range(5))
    eps = c.attr("epsilon", 1e-5)
    if not (c.version >= 14 and c.attr("training_mode", 0)):
        return F.batch_norm(x, mean, var, scale, bias, False, 0.0, eps)
    # training mode: batch statistics; outputs the running statistics ONNX-style
    # (running = input * momentum + batch * (1 - momentum), population variance)
    momentum = c.attr("momentum", 0.9)
    dims = (0, *range(2, x.dim()))
    y = F.batch_norm(x, None, None, scale, bias, True, 0.0, eps)
    if not (c.wants(1) or c.wants(2)):
        return y
    batch_mean = x.mean(dim=dims)
    centered = x - batch_mean.reshape(1, -1, *([1] * (x.dim() - 2)))
    batch_var = (centered * centered).mean(dim=dims)
    return (y, mean * momentum + batch_mean * (1 - momentum),
            var * momentum + batch_var * (1 - momentum))


@register("LayerNormalization", versions(17))
def _layer_normalization(c: Call):
    x, scale, bias = c.x(0), c.x(1), c.x(2)
    axis = normalize_axis(c.attr("axis", -1), x.dim())
    eps = c.attr("epsilon", 1e-5)
    shape = tuple(x.shape[axis:])
    if tuple(scale.shape) == shape and (bias is None or tuple(bias.shape) == shape):
        y = F.layer_norm(x, shape, scale, bias, eps)
    else:  # Scale and B broadcast to the normalized shape
        y = F.layer_norm(x, shape, None, None, eps) * scale
        y = y if bias is None else y + bias
    if not (c.wants(1) or c.wants(2)):
        return y
    dims = tuple(range(axis, x.dim()))
    mean = x.mean(dim=dims, keepdim=True)
    centered = x - mean
    inv_std = ((centered * centered).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return y, mean, inv_std


@register("InstanceNormalization", versions(6, 22))
def _instance_normalization(c: Call):
    return F.instance_norm(c.x(0), weight=c.x(1), bias=c.x(2), eps=c.attr("epsilon", 1e-5))


@register("GroupNormalization", versions(18, 21))
def _group_normalization(c: Call):
    x, scale, bias = c.x(0), c.x(1), c.x(2)
    groups = c.attr("num_groups")
    if c.version < 21:  # opset 18: one scale and bias per group
        per_group = x.shape[1] // groups
        scale, bias = scale.repeat_interleave(per_group), bias.repeat_interleave(per_group)
    return F.group_norm(x, groups, scale, bias, c.attr("epsilon", 1e-5))


# -- padding ------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad_check(attrs: dict) -> str | None:
    mode = attrs.get("mode", "constant")
    return None if mode in _PAD_MODES else f"mode={mode}"


def _pad_positions(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source position of each output position along one axis (edge, reflect, wrap)."""
    p = np.arange(-before, size + after)
    if mode == "edge":
        return np.clip(p, 0, size - 1)
    if mode == "wrap":
        return p % size
    if size == 1:
        return np.zeros_like(p)
    period = 2 * (size - 1)
    p = p % period
    return np.where(p >= size, period - p, p)


@register("Pad", versions(2, 11, 13, 18, 19, 21, 23, 24, 25), check=_pad_check)
def _pad(c: Call):
    x = c.x(0)
    rank = x.dim()
    mode = c.attr("mode", "constant")
    if c.version < 11:
        pads, value, axes = c.attr("pads"), c.attr("value", 0.0), None
    else:
        pads, value, axes = c.ints(1), c.scalar(2, 0), c.ints(3)
    axes = list(range(rank)) if axes is None else [normalize_axis(a, rank) for a in axes]
    begin, end = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        begin[axis], end[axis] = pads[i], pads[i + len(axes)]
    if any(p < 0 for p in begin + end):  # negative pads crop
        x = x[tuple(slice(max(-b, 0), x.shape[a] - max(-e, 0))
                    for a, (b, e) in enumerate(zip(begin, end)))]
        begin, end = [max(b, 0) for b in begin], [max(e, 0) for e in end]
    if mode == "constant":
        pairs = []
        for b, e in zip(reversed(begin), reversed(end)):
            pairs += [b, e]
        return F.pad(x, pairs, value=value) if any(pairs) else x
    for axis in range(rank):
        if begin[axis] or end[axis]:
            positions = _pad_positions(x.shape[axis], begin[axis], end[axis], mode)
            x = x.index_select(axis, c.new(positions.astype(np.int64)))
    return x


# -- resizing -----------------------------------------------------------------------------------

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                     "asymmetric", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_check(attrs: dict) -> str | None:
    mode = attrs.get("mode", "nearest")  # (antialias applies to linear and cubic only)
    if mode not in ("nearest", "linear", "cubic", "bilinear"):
        return f"mode={mode}"
    coordinate = attrs.get("coordinate_transformation_mode", "half_pixel")
    if coordinate not in _COORDINATE_MODES:
        return f"coordinate_transformation_mode={coordinate}"
    if attrs.get("nearest_mode", "round_prefer_floor") not in _NEAREST_MODES:
        return f"nearest_mode={attrs['nearest_mode']}"
    return None


def _source_coordinates(out: int, size: int, scale: float, mode: str, roi) -> np.ndarray:
    """Resize's coordinate transformation: each output position's place in the input, in
    float32 arithmetic as onnxruntime computes it."""
    f32 = np.float32
    o = np.arange(out, dtype=f32)
    scale = f32(scale)
    if mode == "half_pixel":
        return (o + f32(0.5)) / scale - f32(0.5)
    if mode == "half_pixel_symmetric":
        adjustment = f32(out) / (scale * f32(size))
        offset = f32(size) / f32(2) * (f32(1) - adjustment)
        return offset + (o + f32(0.5)) / scale - f32(0.5)
    if mode == "pytorch_half_pixel":
        return (o + f32(0.5)) / scale - f32(0.5) if out > 1 else np.zeros(out, f32)
    if mode == "align_corners":
        return np.zeros(out, f32) if out == 1 else o * f32(size - 1) / f32(out - 1)
    if mode == "asymmetric":
        return o / scale
    start, end = f32(roi[0]), f32(roi[1])  # tf_crop_and_resize
    if out == 1:
        return np.full(out, f32(0.5) * (start + end) * f32(size - 1), f32)
    return start * f32(size - 1) + o * (end - start) * f32(size - 1) / f32(out - 1)


def _nearest(coords: np.ndarray, mode: str, downsampling: bool) -> np.ndarray:
    if mode == "round_prefer_floor":
        return np.ceil(coords - 0.5)
    if mode == "round_prefer_ceil":
        return np.floor(coords + 0.5)
    if mode == "floor":
        return np.floor(coords)
    if mode == "ceil":
        return np.ceil(coords)
    return np.ceil(coords) if downsampling else np.trunc(coords)  # opset < 11 ("simple")


def _cubic_weights(t: np.ndarray, a: float) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the neighbours at offsets -1, 0, 1, 2."""
    def near(s):  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resize_taps(size, out, scale, c: Call, mode, coordinate, nearest_mode, roi):
    """``(positions, weights)`` per tap for one axis, plus the outside-the-input mask of
    tf_crop_and_resize (``None`` otherwise)."""
    coords = _source_coordinates(out, size, scale, coordinate, roi)
    outside = None
    if coordinate == "tf_crop_and_resize":
        outside = (coords < 0) | (coords > size - 1)
    if mode == "nearest":
        index = _nearest(coords, nearest_mode, scale < 1)
        return [(np.clip(index, 0, size - 1), None)], outside
    base = np.floor(coords)
    t = (coords - base).astype(np.float64)
    if c.attr("antialias", 0) and scale < 1:
        return _antialias_taps(size, base, t, scale, c, mode), outside
    if mode in ("linear", "bilinear"):
        offsets, weights = [0, 1], [1 - t, t]
    else:
        offsets, weights = [-1, 0, 1, 2], _cubic_weights(t, c.attr("cubic_coeff_a", -0.75))
    positions = [base + k for k in offsets]
    if mode == "cubic" and c.attr("exclude_outside", 0):
        weights = [np.where((p < 0) | (p > size - 1), 0.0, w) for p, w in zip(positions, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(np.clip(p, 0, size - 1), w) for p, w in zip(positions, weights)], outside


def _antialias_taps(size, base, t, scale, c: Call, mode):
    """Resize's antialias (opset 18) when downscaling: the linear or cubic filter stretched by
    ``1 / scale`` over ``base + k`` for every ``k`` in its footprint, normalised per output;
    ``exclude_outside`` drops the taps outside the input (and renormalises), otherwise they
    read the edge pixels."""
    reach = 1 if mode == "linear" else 2
    start = int(np.floor(-reach / scale) + 1)
    offsets = range(start, 2 - start)  # (the reference implementation's footprint)
    args = [(k - t) * scale for k in offsets]
    if mode == "linear":
        weights = [np.clip(1 - np.abs(a), 0, 1) for a in args]
    else:
        a_ = c.attr("cubic_coeff_a", -0.75)

        def cubic(x):
            x = np.abs(x)
            near = ((a_ + 2) * x - (a_ + 3)) * x * x + 1
            far = ((a_ * x - 5 * a_) * x + 8 * a_) * x - 4 * a_
            return np.where(x <= 1, near, np.where(x < 2, far, 0.0))
        weights = [cubic(a) for a in args]
    positions = [base + k for k in offsets]
    if c.attr("exclude_outside", 0):
        weights = [np.where((p < 0) | (p > size - 1), 0.0, w) for p, w in zip(positions, weights)]
    total = sum(weights)
    weights = [w / total for w in weights]
    return [(np.clip(p, 0, size - 1), w) for p, w in zip(positions, weights)]


def _is_identity(taps, size: int, out: int, outside) -> bool:
    """Whether one axis's taps copy the input unchanged (an axis with scale 1)."""
    if out != size or (outside is not None and outside.any()):
        return False
    identity = np.arange(size)
    live = [(p, w) for p, w in taps if w is None or np.any(w != 0)]
    return len(live) == 1 and np.array_equal(live[0][0], identity) and (
        live[0][1] is None or bool(np.all(live[0][1] == 1)))


def _resize_axis(c: Call, x, axis, out, scale, mode, coordinate, nearest_mode, roi):
    size = x.shape[axis]
    taps, outside = _resize_taps(size, out, scale, c, mode, coordinate, nearest_mode, roi)
    if _is_identity(taps, size, out, outside):
        return x
    shape = [1] * x.dim()
    shape[axis] = out
    y = None
    for positions, weights in taps:
        picked = x.index_select(axis, c.new(positions.astype(np.int64)))
        if weights is not None:
            picked = picked * c.new(weights.reshape(shape), dtype=x.dtype)
        y = picked if y is None else y + picked
    if outside is not None and outside.any():
        fill = c.new(np.asarray(c.attr("extrapolation_value", 0.0)), dtype=x.dtype)
        y = ember.where(c.new(outside.reshape(shape)), fill, y)
    return y


def _output_sizes(c: Call, sizes_in, scales, sizes):
    if sizes is not None:
        policy = c.attr("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            return list(sizes), [o / i for o, i in zip(sizes, sizes_in)]
        ratios = [o / i for o, i in zip(sizes, sizes_in)]
        ratio = min(ratios) if policy == "not_larger" else max(ratios)
        return [int(math.floor(ratio * i + 0.5)) for i in sizes_in], [ratio] * len(sizes_in)
    scales = [float(s) for s in scales]
    return [int(math.floor(i * s)) for i, s in zip(sizes_in, scales)], scales


def _resize(c: Call, x, scales, sizes, roi, axes, mode, coordinate, nearest_mode):
    rank = x.dim()
    axes = list(range(rank)) if axes is None else [normalize_axis(a, rank) for a in axes]
    sizes_in = [x.shape[a] for a in axes]
    outs, scales = _output_sizes(c, sizes_in, scales, sizes)
    if roi is None or roi.size == 0:
        roi = np.asarray([0.0] * len(axes) + [1.0] * len(axes))
    roi = roi.reshape(-1)
    if roi.size == 2 * rank and len(axes) < rank:
        roi = np.concatenate([roi[:rank][axes], roi[rank:][axes]])
    integral = not x.dtype.is_floating_point
    y = x.to(ember.float32) if integral and mode != "nearest" else x
    for i, (axis, out, scale) in enumerate(zip(axes, outs, scales)):
        y = _resize_axis(c, y, axis, out, scale, mode, coordinate, nearest_mode,
                         (roi[i], roi[i + len(axes)]))
    return y.round().to(x.dtype) if y.dtype != x.dtype else y


@register("Resize", versions(10, 11, 13, 18, 19), check=_resize_check)
def _resize_op(c: Call):
    x = c.x(0)
    mode = c.attr("mode", "nearest")
    if c.version < 11:
        return _resize(c, x, c.host(1).reshape(-1), None, None, None, mode, "asymmetric",
                       "simple")
    scales = c.host(2)
    if scales is not None and scales.size == 0:
        scales = None
    if scales is not None:
        scales = scales.reshape(-1)
    return _resize(c, x, scales, c.ints(3), c.host(1), c.attr("axes"), mode,
                   c.attr("coordinate_transformation_mode", "half_pixel"),
                   c.attr("nearest_mode", "round_prefer_floor"))


@register("Upsample", versions(7, 9), check=_resize_check)
def _upsample(c: Call):
    x = c.x(0)
    scales = c.attr("scales") if c.version < 9 else c.host(1).reshape(-1)
    return _resize(c, x, np.asarray(scales), None, None, None, c.attr("mode", "nearest"),
                   "asymmetric", "simple")
