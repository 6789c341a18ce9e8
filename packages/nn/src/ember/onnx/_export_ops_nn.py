"""ONNX export mappings: convolution, pooling, normalization, attention, embedding, padding and
resizing (registered in the table of ``_export_ops.py``).

Learned from PyTorch's own symbolic functions (``torch/onnx/symbolic_opset9.py`` and later),
written anew over the captured graph: normalization without a learned affine gets constant
ones/zeros, layer norm below opset 17 and batch norm with batch statistics are decomposed,
attention is ``Softmax(Q K^T * scale + mask) V`` with fully masked rows set to zero as Ember's
kernel gives them.
"""

from __future__ import annotations

import math

import numpy as np

from ._export_graph import NUMPY_DTYPES, Unsupported, onnx_type
from ._export_ops import Call, mapping, norm_axis, reduce, squeeze, unsqueeze
from ._export_ops_tensor import expand_to, reshape_to

# -- convolution --------------------------------------------------------------------------------

def _static(shape: list, what: str) -> list:
    if not all(isinstance(e, int) for e in shape):
        raise Unsupported(f"the {what} must have static sizes")
    return list(shape)


def _conv_pads(c: Call, n: int, kernel: list, dilation: list) -> list:
    padding = c.lit("padding", 0)
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        begin = [t // 2 for t in total]
        return begin + [t - b for t, b in zip(total, begin)]
    if isinstance(padding, str):
        raise Unsupported(f"padding={padding!r}")
    pads = c.ints("padding", n)
    return pads + pads


@mapping("conv1d", "conv2d", "conv3d")
def _conv(c: Call):
    n = int(c.op[-2])
    d = c.out_dtype
    kernel = _static(c.shape("weight")[2:], "convolution weight")
    dilation = c.ints("dilation", n, 1)
    inputs = [c.t("input", d), c.t("weight", d)] + ([c.t("bias", d)] if c.has("bias") else [])
    return c.add("Conv", inputs, kernel_shape=kernel, strides=c.ints("stride", n, 1),
                 pads=_conv_pads(c, n, kernel, dilation), dilations=dilation,
                 group=int(c.lit("groups", 1)))


@mapping("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(c: Call):
    n = int(c.op[-2])
    d = c.out_dtype
    kernel = _static(c.shape("weight")[2:], "convolution weight")
    pads = c.ints("padding", n, 0)
    inputs = [c.t("input", d), c.t("weight", d)] + ([c.t("bias", d)] if c.has("bias") else [])
    return c.add("ConvTranspose", inputs, kernel_shape=kernel,
                 strides=c.ints("stride", n, 1), pads=pads + pads,
                 output_padding=c.ints("output_padding", n, 0),
                 dilations=c.ints("dilation", n, 1), group=int(c.lit("groups", 1)))


# -- pooling ------------------------------------------------------------------------------------

def _pool_args(c: Call, n: int) -> dict:
    kernel = c.ints("kernel_size", n)
    stride = c.lit("stride")
    strides = kernel if stride is None or stride == [] else c.ints("stride", n)
    pads = c.ints("padding", n, 0)
    return {"kernel_shape": kernel, "strides": strides, "pads": pads + pads,
            "ceil_mode": int(bool(c.lit("ceil_mode", False)))}


@mapping("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
         "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(c: Call):
    n = int(c.op.split("_")[1][-2])
    x = c.t("input")
    attrs = dict(dilations=c.ints("dilation", n, 1), **_pool_args(c, n))
    if not c.lit("return_indices", False) and len(c.outputs) == 1:
        return c.add("MaxPool", [x], **attrs)
    # ONNX counts the indices over the whole tensor, PyTorch per (batch, channel) plane:
    # subtract each plane's first flat index (a 1x1 MaxPool's indices at the origin)
    values, flat = c.add("MaxPool", [x], outputs=2, **attrs)
    _, origin = c.add("MaxPool", [x], outputs=2, kernel_shape=[1] * n, strides=[1] * n)
    spatial = list(range(2, 2 + n))
    origin = c.add("Slice", [origin, c.i64([0] * n), c.i64([1] * n), c.i64(spatial)])
    return [values, c.add("Sub", [flat, origin])]


@mapping("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(c: Call):
    if c.lit("divisor_override") is not None:
        raise Unsupported("divisor_override")
    n = int(c.op[-2])
    return c.add("AveragePool", [c.t("input")],
                 count_include_pad=int(bool(c.lit("count_include_pad", True))),
                 **_pool_args(c, n))


@mapping("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
         "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_pool(c: Call):
    n = int(c.op[-2])
    if c.lit("return_indices", False):
        if "max" not in c.op:
            raise Unsupported("return_indices=True")
        return _adaptive_max_with_indices(c, n)
    is_max = "max" in c.op
    x = c.t("input")
    in_sizes = c.shape("input")[-n:]
    out_sizes = c.out_shape[-n:]
    if all(o == 1 for o in out_sizes):
        return c.add("GlobalMaxPool" if is_max else "GlobalAveragePool", [x])
    if list(in_sizes) == list(out_sizes):
        return x
    if not all(isinstance(s, int) for s in list(in_sizes) + list(out_sizes)):
        raise Unsupported(f"adaptive pooling from {in_sizes} to {out_sizes}: the sizes must "
                          "be static (ONNX has no adaptive pooling)")
    if not any(i % o for i, o in zip(in_sizes, out_sizes)):
        kernel = [i // o for i, o in zip(in_sizes, out_sizes)]
        return c.add("MaxPool" if is_max else "AveragePool", [x], kernel_shape=kernel,
                     strides=kernel)
    # PyTorch's windows [floor(i * In / Out), ceil((i + 1) * In / Out)): a rectangle per output
    # cell, so the pooling is separable, one axis at a time
    reduce_op = "ReduceMax" if is_max else "ReduceMean"
    rank = c.rank("input")
    for k, (size_in, size_out) in enumerate(zip(in_sizes, out_sizes)):
        axis = rank - n + k
        if size_in == size_out:
            continue
        cells = []
        for i in range(size_out):
            start = (i * size_in) // size_out
            end = -((-(i + 1) * size_in) // size_out)
            window = c.add("Slice", [x, c.i64([start]), c.i64([end]), c.i64([axis])])
            cells.append(reduce(c, reduce_op, window, [axis], True))
        x = cells[0] if len(cells) == 1 else c.add("Concat", cells, axis=axis)
    return x


# -- normalization ------------------------------------------------------------------------------

def _affine_param(c: Call, name: str, fill: float, shape: list, dtype: str) -> str:
    if c.has(name):
        return c.t(name, dtype)
    return c.const(np.full(_static(shape, "normalized dimensions"), fill), dtype)


def _normalize(c: Call, x: str, axes: list, eps: float, dtype: str) -> str:
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` (biased variance)."""
    mean = reduce(c, "ReduceMean", x, axes, True)
    diff = c.add("Sub", [x, mean])
    var = reduce(c, "ReduceMean", c.add("Mul", [diff, diff]), axes, True)
    std = c.add("Sqrt", [c.add("Add", [var, c.const(eps, dtype)])])
    return c.add("Div", [diff, std])


def _channel_param(c: Call, name: str, rank: int, dtype: str) -> str:
    """A per-channel ``[C]`` parameter shaped to broadcast over ``[N, C, *]``."""
    p = c.t(name, dtype)
    return unsqueeze(c, p, list(range(1, rank - 1))) if rank > 2 else p


@mapping("nn.functional.batch_norm", "batch_norm")
def _batch_norm(c: Call):
    d = c.out_dtype
    shape = c.shape("input")
    rank = len(shape)
    eps = float(c.lit("eps", 1e-5))
    x = c.t("input", d)
    stats = c.has("running_mean") and c.has("running_var")
    if not c.lit("training", False) and stats:
        channels = [shape[1]]
        return c.add("BatchNormalization",
                     [x, _affine_param(c, "weight", 1.0, channels, d),
                      _affine_param(c, "bias", 0.0, channels, d),
                      c.t("running_mean", d), c.t("running_var", d)], epsilon=eps)
    # batch statistics (training, or no running statistics): the running averages are not
    # updated by the ONNX graph
    out = _normalize(c, x, [0] + list(range(2, rank)), eps, d)
    if c.has("weight"):
        out = c.add("Mul", [out, _channel_param(c, "weight", rank, d)])
    if c.has("bias"):
        out = c.add("Add", [out, _channel_param(c, "bias", rank, d)])
    return out


@mapping("instance_norm", "nn.functional.instance_norm")
def _instance_norm(c: Call):
    if not c.lit("use_input_stats", True):
        raise Unsupported("instance_norm with running statistics (use_input_stats=False)")
    d = c.out_dtype
    channels = [c.shape("input")[1]]
    return c.add("InstanceNormalization",
                 [c.t("input", d), _affine_param(c, "weight", 1.0, channels, d),
                  _affine_param(c, "bias", 0.0, channels, d)],
                 epsilon=float(c.lit("eps", 1e-5)))


@mapping("layer_norm")
def _layer_norm(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    normalized = c.ints("normalized_shape")
    eps = float(c.lit("eps", 1e-5))
    x = c.t("input", d)
    axis = rank - len(normalized)
    if c.opset >= 17:
        inputs = [x, _affine_param(c, "weight", 1.0, normalized, d)]
        if c.has("bias"):
            inputs.append(c.t("bias", d))
        return c.add("LayerNormalization", inputs, axis=axis, epsilon=eps)
    out = _normalize(c, x, list(range(axis, rank)), eps, d)
    if c.has("weight"):
        out = c.add("Mul", [out, c.t("weight", d)])
    if c.has("bias"):
        out = c.add("Add", [out, c.t("bias", d)])
    return out


@mapping("group_norm")
def _group_norm(c: Call):
    d = c.out_dtype
    shape = c.shape("input")
    rank = len(shape)
    groups = int(c.lit("num_groups"))
    x = c.t("input", d)
    grouped = c.add("Reshape", [x, c.i64([0, groups, -1])])
    out = _normalize(c, grouped, [2], float(c.lit("eps", 1e-5)), d)
    out = c.add("Reshape", [out, c.b.shape_of(x)])
    if c.has("weight"):
        out = c.add("Mul", [out, _channel_param(c, "weight", rank, d)])
    if c.has("bias"):
        out = c.add("Add", [out, _channel_param(c, "bias", rank, d)])
    return out


@mapping("rms_norm")
def _rms_norm(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    n = len(c.ints("normalized_shape"))
    eps = c.lit("eps")
    if eps is None:
        eps = float(np.finfo({"float16": np.float16, "float64": np.float64}
                             .get(d, np.float32)).eps)
    x = c.t("input", d)
    ms = reduce(c, "ReduceMean", c.add("Mul", [x, x]), list(range(rank - n, rank)), True)
    out = c.add("Div", [x, c.add("Sqrt", [c.add("Add", [ms, c.const(float(eps), d)])])])
    return c.add("Mul", [out, c.t("weight", d)]) if c.has("weight") else out


# -- attention ----------------------------------------------------------------------------------

def _repeat_heads(c: Call, x: str, shape: list, heads) -> str:
    """Key/value heads (dim -3) repeated to the query's count (``enable_gqa``)."""
    kv = shape[-3]
    if not isinstance(kv, int) or not isinstance(heads, int) or heads % kv:
        raise Unsupported("enable_gqa needs static head counts, the query's a multiple of "
                          "the key's")
    r = heads // kv
    lead = list(shape[:-3])
    x = unsqueeze(c, x, [len(shape) - 2])
    wide = lead + [kv, r] + list(shape[-2:])
    x = expand_to(c, x, lead + [kv, 1] + list(shape[-2:]), wide)
    return reshape_to(c, x, wide, lead + [heads] + list(shape[-2:]))


def _causal_mask(c: Call, q_shape: list, k_shape: list, dtype: str) -> str:
    """An additive ``[L, S]`` mask: 0 on and below the diagonal, -inf above."""
    L, S = q_shape[-2], k_shape[-2]
    if isinstance(L, int) and isinstance(S, int):
        keep = np.tril(np.ones((L, S), dtype=bool))
        return c.const(np.where(keep, 0.0, -np.inf), dtype)
    rows = c.add("Range", [c.const(np.int64(0), "int64"), c.b.scalar_expr(L),
                           c.const(np.int64(1), "int64")])
    cols = c.add("Range", [c.const(np.int64(0), "int64"), c.b.scalar_expr(S),
                           c.const(np.int64(1), "int64")])
    keep = c.add("LessOrEqual", [unsqueeze(c, cols, [0]), unsqueeze(c, rows, [1])])
    return c.add("Where", [keep, c.const(0.0, dtype), c.const(-np.inf, dtype)])


@mapping("scaled_dot_product_attention")
def _sdpa(c: Call):
    d = c.out_dtype
    q_shape, k_shape = c.shape("query"), c.shape("key")
    q, k, v = c.t("query", d), c.t("key", d), c.t("value", d)
    if c.lit("enable_gqa", False) and len(q_shape) >= 3 and q_shape[-3] != k_shape[-3]:
        v = _repeat_heads(c, v, c.shape("value"), q_shape[-3])
        k = _repeat_heads(c, k, k_shape, q_shape[-3])
    scale = c.lit("scale")
    if scale is None:
        e = q_shape[-1]
        if isinstance(e, int):
            root = c.const(1.0 / math.sqrt(math.sqrt(e)), d)
        else:
            size = c.add("Cast", [c.b.expr(e)], to=onnx_type(d))
            root = c.add("Reciprocal", [c.add("Sqrt", [c.add("Sqrt", [size])])])
    else:
        root = c.const(math.sqrt(float(scale)), d)
    rank = len(k_shape)
    kt = c.add("Transpose", [k], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = c.add("MatMul", [c.add("Mul", [q, root]), c.add("Mul", [kt, root])])
    masked = True
    if c.lit("is_causal", False):
        scores = c.add("Add", [scores, _causal_mask(c, q_shape, k_shape, d)])
    elif c.has("attn_mask"):
        if c.dtype("attn_mask") == "bool":
            mask = c.add("Where", [c.t("attn_mask"), c.const(0.0, d), c.const(-np.inf, d)])
        else:
            mask = c.t("attn_mask", d)
        scores = c.add("Add", [scores, mask])
    else:
        masked = False
    weights = c.add("Softmax", [scores], axis=-1)
    if masked:  # a fully masked row: zeros (Ember's kernel, PyTorch 2.13), not NaN
        weights = c.add("Where", [c.add("IsNaN", [weights]), c.const(0.0, d), weights])
    p = float(c.lit("dropout_p", 0.0))
    if p > 0:
        c.require(12, "attention dropout (Dropout's training_mode)")
        weights = c.add("Dropout", [weights, c.const(p, d), c.const(True, "bool")])
    return c.add("MatMul", [weights, v])


# -- embedding ----------------------------------------------------------------------------------

@mapping("nn.functional.embedding", "embedding")
def _embedding(c: Call):
    if c.lit("max_norm") is not None:
        raise Unsupported("max_norm (it renormalizes the weight in place while running)")
    ids = c.t("input" if "input" in c.p else "indices")
    return c.add("Gather", [c.t("weight"), ids], axis=0)


def _bag_membership(c: Call, ids: str, padding_idx) -> tuple:
    """``(bag, member)`` for 1-d ``ids`` cut into bags at ``offsets``: each position's bag
    (the number of offsets at or before it, minus one) and the ``[bags, positions]``
    membership matrix, without the ``padding_idx`` positions."""
    zero64, one64 = c.const(np.int64(0), "int64"), c.const(np.int64(1), "int64")
    offsets = c.t("offsets", "int64")
    n_off = c.b.dim_of(offsets, 0)
    if c.lit("include_last_offset", False):
        n_off = c.add("Sub", [n_off, c.i64([1])])
        offsets = c.add("Slice", [offsets, c.i64([0]), n_off, c.i64([0])])
    positions = c.add("Range", [zero64, c.add("Squeeze", [c.b.dim_of(ids, 0), c.i64([0])]),
                                one64])
    bag = c.add("Sub", [reduce(c, "ReduceSum", c.add("Cast", [
        c.add("LessOrEqual", [unsqueeze(c, offsets, [0]), unsqueeze(c, positions, [1])])],
        to=onnx_type("int64")), [1], False), one64])
    bags = c.add("Range", [zero64, c.add("Squeeze", [n_off, c.i64([0])]), one64])
    member = c.add("Equal", [unsqueeze(c, bags, [1]), unsqueeze(c, bag, [0])])   # [B, L]
    if padding_idx is not None:
        member = c.add("And", [member, unsqueeze(c, c.add("Not", [c.add("Equal", [
            ids, c.const(int(padding_idx), "int64")])]), [0])])
    return bag, member


@mapping("nn.functional.embedding_bag")
def _embedding_bag(c: Call):
    """Bags as a ``[bags, n]`` membership matrix: ``sum`` and ``mean`` are a product with
    the gathered rows, ``max`` a masked reduction; an empty bag gives zeros, as PyTorch."""
    if c.lit("max_norm") is not None:
        raise Unsupported("max_norm (it renormalizes the weight in place while running)")
    d = c.out_dtype
    mode = c.lit("mode", "mean")
    ids = c.t("input", "int64")
    rows = c.add("Gather", [c.t("weight", d), ids], axis=0)
    if c.has("per_sample_weights"):
        rows = c.add("Mul", [rows, unsqueeze(c, c.t("per_sample_weights", d), [-1])])
    zero64 = c.const(np.int64(0), "int64")
    if c.rank("input") == 2:
        keep = None
        if c.p.get("padding_idx") is not None:
            keep = c.add("Not", [c.add("Equal", [ids, c.const(int(c.lit("padding_idx")),
                                                              "int64")])])
        member = keep  # [B, L] or all
        if member is None:
            if mode == "sum":
                return reduce(c, "ReduceSum", rows, [1], False)
            if mode == "mean":
                return reduce(c, "ReduceMean", rows, [1], False)
            return reduce(c, "ReduceMax", rows, [1], False)
        member3 = unsqueeze(c, member, [2])
        zero = c.const(0.0, d)
        if mode == "max":
            masked = c.add("Where", [member3, rows, c.const(-np.inf, d)])
            out = reduce(c, "ReduceMax", masked, [1], False)
            count = reduce(c, "ReduceSum", c.add("Cast", [member], to=onnx_type("int64")), [1],
                           True)
            return c.add("Where", [c.add("Equal", [count, zero64]), zero, out])
        total = reduce(c, "ReduceSum", c.add("Where", [member3, rows, zero]), [1], False)
        if mode == "sum":
            return total
        count = reduce(c, "ReduceSum", c.add("Cast", [member], to=onnx_type(d)), [1], True)
        return c.add("Div", [total, c.add("Max", [count, c.const(1.0, d)])])
    if not c.has("offsets"):
        raise Unsupported("a 1-d input without offsets")
    _, member = _bag_membership(c, ids, c.p.get("padding_idx"))
    zero = c.const(0.0, d)
    if mode == "max":
        masked = c.add("Where", [unsqueeze(c, member, [2]), unsqueeze(c, rows, [0]),
                                 c.const(-np.inf, d)])
        out = reduce(c, "ReduceMax", masked, [1], False)
        count = reduce(c, "ReduceSum", c.add("Cast", [member], to=onnx_type("int64")), [1],
                       True)
        return c.add("Where", [c.add("Equal", [count, zero64]), zero, out])
    weights = c.add("Cast", [member], to=onnx_type(d))
    summed = weights
    if c.lit("include_last_offset", False):
        # PyTorch sums only the indices before the last offset (a mean still counts the rest)
        last = reduce(c, "ReduceMax", c.t("offsets", "int64"), [0], True)  # non-decreasing
        positions = c.add("Range", [zero64, c.add("Squeeze", [c.b.dim_of(ids, 0), c.i64([0])]),
                                    c.const(np.int64(1), "int64")])
        inside = c.add("Cast", [c.add("Less", [positions, last])], to=onnx_type(d))
        summed = c.add("Mul", [weights, unsqueeze(c, inside, [0])])
    total = c.add("MatMul", [summed, rows])
    if mode == "sum":
        return total
    count = reduce(c, "ReduceSum", weights, [1], True)
    return c.add("Div", [total, c.add("Max", [count, c.const(1.0, d)])])


# -- padding and resizing -----------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


@mapping("pad")
def _pad(c: Call):
    shape = c.shape("input")
    rank = len(shape)
    pad = c.sizes("pad")
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise Unsupported(f"pad of length {len(pad)} for a {rank}-d input")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    mode = c.lit("mode", "constant")
    if mode not in _PAD_MODES:
        raise Unsupported(f"mode={mode!r}")
    if mode == "circular":
        c.require(19, "pad(mode='circular') (Pad's 'wrap' mode)")
    inputs = [c.t("input"), c.b.sizes(begins + ends)]
    if mode == "constant":
        value = c.lit("value")
        inputs.append(c.const(0 if value is None else value, c.dtype("input")))
    return c.add("Pad", inputs, mode=_PAD_MODES[mode])


@mapping("interpolate", "nn.functional.upsample", "nn.functional.upsample_nearest",
         "nn.functional.upsample_bilinear")
def _interpolate(c: Call):
    mode = c.lit("mode", "nearest")
    if c.op.endswith("upsample_bilinear"):  # PyTorch's upsample_bilinear aligns corners
        mode, c.p["align_corners"] = "bilinear", True
    rank = c.rank("input")
    n = rank - 2
    align = bool(c.lit("align_corners", False))
    attrs: dict = {}
    if mode == "nearest":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"}
    elif mode == "nearest-exact":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                 "nearest_mode": "round_prefer_ceil"}
    elif mode in ("linear", "bilinear", "trilinear", "bicubic"):
        attrs = {"mode": "cubic" if mode == "bicubic" else "linear",
                 "coordinate_transformation_mode": "align_corners" if align
                 else "pytorch_half_pixel"}
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    else:
        raise Unsupported(f"mode={mode!r}")
    if c.lit("antialias", False):
        c.require(18, "interpolate(antialias=True) (Resize's antialias)")
        if align:  # (PyTorch keeps half-pixel centres and only changes the scale)
            raise Unsupported("antialias=True with align_corners=True")
        # PyTorch's antialiased kernels renormalise the weights a border clips
        # (exclude_outside) and use Keys' cubic with a = -0.5, as Pillow does
        attrs["antialias"] = 1
        attrs["exclude_outside"] = 1
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.5
    x = c.t("input")
    scale = c.lit("scale_factor")
    if scale is not None and not c.lit("recompute_scale_factor", False):
        scales = scale if isinstance(scale, list) else [scale] * n
        return c.add("Resize", [x, "", c.const([1.0, 1.0] + [float(s) for s in scales],
                                                "float32")], **attrs)
    return c.add("Resize", [x, "", "", c.b.sizes(c.out_shape)], **attrs)


@mapping("pixel_shuffle")
def _pixel_shuffle(c: Call):
    r = int(c.lit("upscale_factor"))
    if c.rank("input") == 4:
        return c.add("DepthToSpace", [c.t("input")], blocksize=r, mode="CRD")
    shape = c.shape("input")
    lead, (ch, h, w) = list(shape[:-3]), shape[-3:]
    k = len(lead)
    split = lead + [_div(ch, r * r), r, r, h, w]
    x = reshape_to(c, c.t("input"), shape, split)
    x = c.add("Transpose", [x], perm=list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return reshape_to(c, x, lead + [_div(ch, r * r), h, r, w, r], c.out_shape)


def _div(e, k: int):
    return e // k if isinstance(e, int) else {"floordiv": [e, k]}


def _mul(e, k: int):
    return e * k if isinstance(e, int) else {"mul": [e, k]}


@mapping("pixel_unshuffle")
def _pixel_unshuffle(c: Call):
    r = int(c.lit("downscale_factor"))
    shape = c.shape("input")
    lead, (ch, h, w) = list(shape[:-3]), shape[-3:]
    k = len(lead)
    split = lead + [ch, _div(h, r), r, _div(w, r), r]
    x = reshape_to(c, c.t("input"), shape, split)
    x = c.add("Transpose", [x], perm=list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return reshape_to(c, x, lead + [ch, r, r, _div(h, r), _div(w, r)], c.out_shape)


@mapping("channel_shuffle", "native_channel_shuffle")
def _channel_shuffle(c: Call):
    g = int(c.lit("groups"))
    shape = c.shape("input")
    rest = list(shape[2:])
    split = [shape[0], g, _div(shape[1], g)] + rest
    x = reshape_to(c, c.t("input"), shape, split)
    perm = [0, 2, 1] + list(range(3, len(split)))
    x = c.add("Transpose", [x], perm=perm)
    return reshape_to(c, x, [shape[0], _div(shape[1], g), g] + rest, shape)


@mapping("local_response_norm")
def _local_response_norm(c: Call):
    """PyTorch's formula: the mean of squares over a window of ``size`` channels (zero
    padded ``size // 2`` before, ``(size - 1) // 2`` after), ``(k + alpha * mean) ** beta``."""
    d = c.out_dtype
    size = int(c.lit("size"))
    shape = c.shape("input")
    if len(shape) < 3:
        raise Unsupported("local_response_norm of a tensor with fewer than 3 dims")
    x = c.t("input", d)
    sq = c.add("Mul", [x, x])
    grid = c.add("Reshape", [sq, c.b.sizes([shape[0], 1, shape[1], -1])])   # [N, 1, C, R]
    grid = c.add("Pad", [grid, c.i64([0, 0, size // 2, 0, 0, 0, (size - 1) // 2, 0])])
    mean = c.add("AveragePool", [grid], kernel_shape=[size, 1], strides=[1, 1])
    mean = c.add("Reshape", [mean, c.b.shape_of(x)])
    div = c.add("Pow", [c.add("Add", [c.add("Mul", [mean, c.const(float(c.lit("alpha", 1e-4)),
                                                                       d)]),
                                      c.const(float(c.lit("k", 1.0)), d)]),
                        c.const(float(c.lit("beta", 0.75)), d)])
    return c.add("Div", [x, div])


@mapping("lp_pool1d", "lp_pool2d", "lp_pool3d")
def _lp_pool(c: Call):
    """PyTorch's formula: ``(avg_pool(x ** p) * kernel size) ** (1 / p)``."""
    n = int(c.op[-2])
    d = c.out_dtype
    p = float(c.lit("norm_type"))
    kernel = c.ints("kernel_size", n)
    stride = c.lit("stride")
    strides = kernel if stride is None or stride == [] else c.ints("stride", n)
    x = c.t("input", d)
    powered = c.add("Pow", [x, c.const(p, d)])
    pooled = c.add("AveragePool", [powered], kernel_shape=kernel, strides=strides,
                   ceil_mode=int(bool(c.lit("ceil_mode", False))))
    total = c.add("Mul", [pooled, c.const(float(np.prod(kernel)), d)])
    return c.add("Pow", [total, c.const(1.0 / p, d)])


# -- sampling grids -----------------------------------------------------------------------------

@mapping("grid_sample", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d")
def _grid_sample(c: Call):
    mode = c.lit("mode", c.lit("interpolation_mode", "bilinear"))  # grid_sampler: ints
    padding = c.lit("padding_mode", "zeros")
    if isinstance(mode, int):
        mode = ("bilinear", "nearest", "bicubic")[mode]
    if isinstance(padding, int):
        padding = ("zeros", "border", "reflection")[padding]
    rank = c.rank("input")
    if rank != 4:
        c.require(20, f"grid_sample of a {rank}-d input (GridSample in N-d)")
    c.require(16, "grid_sample (GridSample)")
    if c.opset >= 20:
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    d = c.out_dtype
    return c.add("GridSample", [c.t("input", d), c.t("grid", d)], mode=mode,
                 padding_mode=padding, align_corners=int(bool(c.lit("align_corners", False))))


def _base_coords(n: int, align: bool) -> np.ndarray:
    if align:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (np.arange(n) * 2.0 + 1.0) / n - 1.0


@mapping("affine_grid", "affine_grid_generator")
def _affine_grid(c: Call):
    size = c.sizes("size")
    spatial = size[2:]
    if not all(isinstance(e, int) for e in spatial):
        raise Unsupported("affine_grid with dynamic spatial sizes")
    align = bool(c.lit("align_corners", False))
    # the base grid: one row [x, y, (z,) 1] per output position, x varying fastest
    axes = [_base_coords(n, align) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")               # in (D,) H, W order
    coords = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)]
    base = np.stack(coords, axis=-1)                       # [positions, k + 1]
    d = c.out_dtype
    theta = c.t("theta", d)
    grid = c.add("MatMul", [c.const(base, d), c.add("Transpose", [theta], perm=[0, 2, 1])])
    return c.add("Reshape", [grid, c.b.sizes([size[0]] + list(spatial) + [len(spatial)])])


@mapping("nn.functional.normalize")
def _normalize_lp(c: Call):
    d = c.out_dtype
    p = float(c.lit("p", 2.0))
    op_type = {1.0: "ReduceL1", 2.0: "ReduceL2"}.get(p)
    if op_type is None:
        raise Unsupported(f"normalize with p={p} (ONNX reduces with L1 or L2 norms)")
    axis = norm_axis(int(c.lit("dim", 1)), c.rank("input"))
    x = c.t("input", d)
    eps = c.const(float(c.lit("eps", 1e-12)), d)
    norm = c.add("Max", [reduce(c, op_type, x, [axis], True), eps])
    return c.add("Div", [x, norm])


# -- unpooling, adaptive max pooling with indices, pdist ----------------------------------------

@mapping("max_unpool1d", "max_unpool2d", "max_unpool3d")
def _max_unpool(c: Call):
    """Each value scattered to its plane's flat index (``ScatterElements`` into zeros of
    ``[N, C, prod(output size)]``), then shaped ``[N, C, *output size]``."""
    n = int(c.op[-2])
    d = c.out_dtype
    shape = list(c.shape("input"))
    if len(shape) not in (n + 1, n + 2):
        raise Unsupported(f"{c.op} of a {len(shape)}-d input")
    kernel = c.ints("kernel_size", n)
    stride = c.lit("stride")
    strides = kernel if stride is None or stride == [] else c.ints("stride", n)
    pads = c.ints("padding", n, 0)
    if c.has("output_size"):
        sizes = [int(v) for v in c.lit("output_size")][-n:]
    else:
        spatial = shape[-n:]
        if not all(isinstance(s, int) for s in spatial):
            raise Unsupported(f"{c.op} of a dynamic spatial size")
        sizes = [(spatial[i] - 1) * strides[i] - 2 * pads[i] + kernel[i] for i in range(n)]
    if d not in ("float32", "float64", "float16"):
        raise Unsupported(f"{c.op} of {d}")
    volume = int(np.prod(sizes))
    lead = c.b.sizes(shape[:-n])
    x = c.add("Reshape", [c.t("input", d), c.add("Concat", [lead, c.i64([-1])], axis=0)])
    idx = c.add("Reshape", [c.t("indices", "int64"),
                            c.add("Concat", [lead, c.i64([-1])], axis=0)])
    zeros = c.add("ConstantOfShape", [c.add("Concat", [lead, c.i64([volume])], axis=0)],
                  value=c.b.onnx.numpy_helper.from_array(np.zeros(1, NUMPY_DTYPES[d])))
    out = c.add("ScatterElements", [zeros, idx, x], axis=len(shape) - n)
    return c.add("Reshape", [out, c.add("Concat", [lead, c.i64(sizes)], axis=0)])


@mapping("adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
         "adaptive_max_pool3d_with_indices")
def _adaptive_max_pool_indices(c: Call):
    return _adaptive_max_with_indices(c, int(c.op.split("_")[2][-2]))


def _adaptive_max_with_indices(c: Call, n: int) -> list:
    """Where each output size divides its input size the windows are PyTorch's exactly
    (``floor(i * In / Out)`` to ``ceil((i + 1) * In / Out)``, all ``In / Out`` wide, no
    overlap): ``MaxPool`` with kernel = stride = ``In / Out`` and its indices made per
    plane as ``max_pool``'s are."""
    x = c.t("input")
    in_sizes = c.shape("input")[-n:]
    out_sizes = c.out_shape[-n:]
    if not all(isinstance(s, int) for s in list(in_sizes) + list(out_sizes)):
        raise Unsupported("adaptive max pooling with indices of dynamic sizes")
    if any(o == 0 or i % o for i, o in zip(in_sizes, out_sizes)):
        raise Unsupported(f"adaptive max pooling with indices from {list(in_sizes)} to "
                          f"{list(out_sizes)}: ONNX MaxPool's windows match PyTorch's "
                          "overlapping adaptive windows only where each output size divides "
                          "the input size")
    kernel = [i // o for i, o in zip(in_sizes, out_sizes)]
    values, flat = c.add("MaxPool", [x], outputs=2, kernel_shape=kernel, strides=kernel)
    _, origin = c.add("MaxPool", [x], outputs=2, kernel_shape=[1] * n, strides=[1] * n)
    rank = c.rank("input")
    spatial = list(range(rank - n, rank))
    origin = c.add("Slice", [origin, c.i64([0] * n), c.i64([1] * n), c.i64(spatial)])
    return [values, c.add("Sub", [flat, origin])]


@mapping("pdist")
def _pdist(c: Call):
    """The ``p``-distances of every pair ``i < j`` of rows (row-major): the rows gathered
    at the upper triangle's (constant) indices, one norm per pair."""
    from ._export_ops_linalg import vector_norm

    d = c.out_dtype
    shape = c.shape("input")
    if len(shape) != 2 or not isinstance(shape[0], int):
        raise Unsupported("pdist of an input that is not 2-d with a static number of rows")
    first, second = np.triu_indices(shape[0], 1)
    x = c.t("input", d)
    diff = c.add("Sub", [c.add("Gather", [x, c.i64(first)], axis=0),
                         c.add("Gather", [x, c.i64(second)], axis=0)])
    return vector_norm(c, diff, float(c.lit("p", 2)), [1], False, d)


# -- the ATen forms: bilinear, conv_tbc, im2col/col2im (F.unfold/F.fold), embedding_bag ---------

@mapping("bilinear")
def _bilinear(c: Call):
    """``x1^T A x2 + b`` over the last dims, as Ember's ``einsum("...i,oij,...j->...o")``."""
    d = c.out_dtype
    if c.opset < 12:  # no Einsum: x1 (as [..., 1, 1, i]) @ A @ x2 (as [..., 1, j, 1])
        r = c.rank("input1")
        out = c.add("MatMul", [unsqueeze(c, c.t("input1", d), [r - 1, r]), c.t("weight", d)])
        out = c.add("MatMul", [out, unsqueeze(c, c.t("input2", d), [r - 1, r + 1])])
        out = squeeze(c, out, [r, r + 1])
    else:
        out = c.add("Einsum", [c.t("input1", d), c.t("weight", d), c.t("input2", d)],
                    equation="...i,oij,...j->...o")
    return c.add("Add", [out, c.t("bias", d)]) if c.has("bias") else out


@mapping("conv_tbc")
def _conv_tbc(c: Call):
    """Time-batch-channel 1-d convolution: ``Conv`` over the input as (B, C, T) and the
    weight as (C_out, C_in, K), then back to (T', B, C_out)."""
    d = c.out_dtype
    if any(e == 0 for e in c.out_shape):
        return c.const(np.zeros(_static(c.out_shape, "conv_tbc output"),
                                dtype=NUMPY_DTYPES[d]), d)
    kernel = _static(c.shape("weight"), "conv_tbc weight")[0]
    pad = int(c.lit("pad", 0))
    x = c.add("Transpose", [c.t("input", d)], perm=[1, 2, 0])
    w = c.add("Transpose", [c.t("weight", d)], perm=[2, 1, 0])
    y = c.add("Conv", [x, w, c.t("bias", d)], kernel_shape=[kernel], pads=[pad, pad])
    return c.add("Transpose", [y], perm=[2, 0, 1])


def _fold_geometry(c: Call, image: list) -> tuple:
    k, dil = c.ints("kernel_size", 2), c.ints("dilation", 2, 1)
    pad, stride = c.ints("padding", 2, 0), c.ints("stride", 2, 1)
    out = [(image[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    return k, dil, pad, stride, out


@mapping("im2col")
def _im2col(c: Call):
    """``F.unfold``: the zero-padded image flattened per channel and gathered at the constant
    positions of each block element and block (copies: exact for every dtype, inf and NaN)."""
    shape = _static(c.shape("input"), "unfold input")
    batched = len(shape) == 4
    x = c.t("input")
    if not batched:
        x = unsqueeze(c, x, [0])
    n, ch, h, w = [1] + shape if not batched else shape
    k, dil, pad, stride, (oh, ow) = _fold_geometry(c, [h, w])
    if any(pad):
        x = c.add("Pad", [x, c.i64([0, 0, pad[0], pad[1], 0, 0, pad[0], pad[1]])])
    wp = w + 2 * pad[1]
    ki, kj = np.meshgrid(np.arange(k[0]) * dil[0], np.arange(k[1]) * dil[1], indexing="ij")
    bi, bj = np.meshgrid(np.arange(oh) * stride[0], np.arange(ow) * stride[1], indexing="ij")
    index = (ki.reshape(-1, 1) + bi.reshape(1, -1)) * wp + kj.reshape(-1, 1) + bj.reshape(1, -1)
    flat = c.add("Reshape", [x, c.i64([n, ch, -1])])
    cols = c.add("Gather", [flat, c.i64(index)], axis=2)           # [N, C, K, L]
    out = c.add("Reshape", [cols, c.i64([n, ch * k[0] * k[1], oh * ow])])
    return out if batched else squeeze(c, out, [0])


@mapping("col2im", since=18)
def _col2im(c: Call):
    """``F.fold``: ONNX ``Col2Im`` (opset 18), overlaps summed."""
    c.require(18, "fold/col2im (Col2Im)")
    d = c.out_dtype
    batched = c.rank("input") == 3
    image = c.ints("output_size", 2)
    k, dil, pad, stride, _ = _fold_geometry(c, image)
    x = c.t("input", d)
    if not batched:
        x = unsqueeze(c, x, [0])
    out = c.add("Col2Im", [x, c.i64(image), c.i64(k)], dilations=dil, pads=pad + pad,
                strides=stride)
    return out if batched else squeeze(c, out, [0])


@mapping("embedding_bag")
def _embedding_bag_aten(c: Call):
    """``ember.embedding_bag(weight, indices, offsets, ...)``: the bags as
    ``F.embedding_bag``'s mapping computes them, and its other outputs as Ember's kernel
    gives them (``offset2bag``: each index's bag or empty; ``bag_size``: the counts of
    non-padding indices, or zeros for sum; ``max_indices``: the row each maximum comes from,
    the counts for mean, zeros for sum)."""
    mode = int(c.lit("mode", 0))
    num = c.shape("weight")[0]
    pad = c.lit("padding_idx")
    if pad is not None:
        if not isinstance(num, int):
            raise Unsupported("padding_idx with a dynamic number of embeddings")
        pad = int(pad) % num
    params = {**c.p, "input": c.p["indices"], "mode": ("sum", "mean", "max")[mode],
              "padding_idx": pad, "max_norm": None}
    bags = _embedding_bag(Call(c.b, c.node, params, c.op))
    ids = c.t("indices", "int64")
    o2b, size, maxi = c.outputs[1:]

    def zeros(o):
        return c.const(np.zeros(_static(o["shape"], "embedding_bag output"),
                                dtype=NUMPY_DTYPES[o["dtype"]]), o["dtype"])

    if mode == 0 and (o2b is None or o2b["shape"] == [0]):
        return [bags] + [None if o is None else zeros(o) for o in (o2b, size, maxi)]
    zero64 = c.const(np.int64(0), "int64")
    bag, member = _bag_membership(c, ids, pad)
    counts = reduce(c, "ReduceSum", c.add("Cast", [member], to=onnx_type("int64")), [1], False)
    outs = [bags]
    outs.append(None if o2b is None else zeros(o2b) if o2b["shape"] == [0] else
                c.b.cast(bag, "int64", o2b["dtype"]))
    if mode == 0:
        return outs + [None if o is None else zeros(o) for o in (size, maxi)]
    outs.append(None if size is None else c.b.cast(counts, "int64", size["dtype"]))
    if mode == 1:
        return outs + [None if maxi is None else c.b.cast(counts, "int64", maxi["dtype"])]
    d = c.out_dtype
    rows = c.add("Gather", [c.t("weight", d), ids], axis=0)                    # [L, D]
    member3 = unsqueeze(c, member, [2])
    masked = c.add("Where", [member3, unsqueeze(c, rows, [0]), c.const(-np.inf, d)])
    best = reduce(c, "ReduceMax", masked, [1], True)                            # [B, 1, D]
    hit = c.add("And", [c.add("Equal", [masked, best]), member3])
    first = c.add("ArgMax", [c.add("Cast", [hit], to=onnx_type("int32"))], axis=1,
                  keepdims=0)                                                   # [B, D]
    picked = c.add("Gather", [ids, first], axis=0)
    nonempty = unsqueeze(c, c.add("Greater", [counts, zero64]), [1])
    outs.append(c.b.cast(c.add("Where", [nonempty, picked, zero64]), "int64", maxi["dtype"]))
    return outs
