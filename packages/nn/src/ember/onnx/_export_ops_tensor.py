"""ONNX export mappings: shapes, views, joining and splitting, indexing, casts and creation
(registered in the table of ``_export_ops.py``).

Where an op's result shape is all the mapping needs (``view``, ``reshape``, ``flatten``,
``expand``, ``zeros`` with a symbolic size), it is read from the node's output metadata and
lowered through the builder: static sizes become constants, a size copied from the input is
``0`` in ``Reshape`` (or ``1`` in ``Expand``), and a dynamic size an ONNX shape subgraph.
"""

from __future__ import annotations

import numpy as np

from ._export_graph import (
    COMPLEX_PARTS,
    FLOAT_TYPES,
    INT64_MAX,
    INT64_MIN,
    ONNX_TYPES,
    Unsupported,
)
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

# -- reshaping to the output's shape ------------------------------------------------------------

def reshape_to(c: Call, x: str, in_shape: list, out_shape: list) -> str:
    """``x`` reshaped to ``out_shape`` (size expressions): static sizes as they are, a size
    equal to the input's at the same position as 0 (copy), one remaining size as -1, and
    more than one lowered to a shape subgraph."""
    if list(in_shape) == list(out_shape):
        return x
    static = [e for e in out_shape if isinstance(e, int)]
    if 0 in static:
        if c.opset < 14:
            raise Unsupported("a reshape to an empty shape needs Reshape's allowzero "
                              "(opset 14)")
        return c.add("Reshape", [x, c.b.sizes(out_shape)], allowzero=1)
    target: list = []
    unknown = []
    for i, e in enumerate(out_shape):
        if isinstance(e, int):
            target.append(e)
        elif i < len(in_shape) and in_shape[i] == e:
            target.append(0)
        else:
            target.append(e)
            unknown.append(i)
    if len(unknown) == 1:
        target[unknown[0]] = -1
    return c.add("Reshape", [x, c.b.sizes(target)])


def expand_to(c: Call, x: str, in_shape: list, out_shape: list) -> str:
    """``x`` broadcast to ``out_shape``: 1 where the input's size already is the output's."""
    if list(in_shape) == list(out_shape):
        return x
    lead = len(out_shape) - len(in_shape)
    target = [1 if i >= lead and in_shape[i - lead] == e else e for i, e in enumerate(out_shape)]
    return c.add("Expand", [x, c.b.sizes(target)])


def _first(c: Call) -> str:
    return next(iter(c.p))


@mapping("reshape", "Tensor.view", "Tensor.reshape", "flatten", "unflatten", "ravel",
         "Tensor.view_as", "Tensor.reshape_as", "Tensor.flatten", "Tensor.unflatten")
def _reshape(c: Call):
    name = _first(c)
    if c.op == "Tensor.view":
        size = c.p.get("size")
        if isinstance(size, dict) and "dtype" in size:
            raise Unsupported("view(dtype) reinterprets the bytes, which ONNX cannot")
    if c.op == "flatten" and c.rank(name) >= 2 and len(c.out_shape) == 2 \
            and norm_axis(int(c.lit("start_dim", 0)), c.rank(name)) == 1 \
            and norm_axis(int(c.lit("end_dim", -1)), c.rank(name)) == c.rank(name) - 1:
        return c.add("Flatten", [c.t(name)], axis=1)
    return reshape_to(c, c.t(name), c.shape(name), c.out_shape)


@mapping("squeeze")
def _squeeze(c: Call):
    shape = c.shape("input")
    rank = len(shape)
    dims = c.lit("dim")
    if dims is None:
        wanted = range(rank)
    else:
        wanted = {norm_axis(int(d), rank) for d in (dims if isinstance(dims, list) else [dims])}
    axes = sorted(d for d in wanted if shape[d] == 1)
    return squeeze(c, c.t("input"), axes) if axes else c.t("input")


@mapping("unsqueeze")
def _unsqueeze(c: Call):
    rank = c.rank("input")
    return unsqueeze(c, c.t("input"), [norm_axis(int(c.lit("dim")), rank + 1)])


@mapping("Tensor.expand", "Tensor.expand_as", "broadcast_to")
def _expand(c: Call):
    name = _first(c)
    return expand_to(c, c.t(name), c.shape(name), c.out_shape)


# -- permutations -------------------------------------------------------------------------------

def _transpose(c: Call, name: str, perm: list) -> str:
    if perm == sorted(perm):
        return c.t(name)
    return c.add("Transpose", [c.t(name)], perm=perm)


@mapping("permute")
def _permute(c: Call):
    rank = c.rank("input")
    return _transpose(c, "input", [norm_axis(int(d), rank) for d in c.lit("dims")])


@mapping("transpose", "swapaxes", "swapdims", "t", "Tensor.T", "Tensor.mT", "adjoint",
         "Tensor.mH", "Tensor.H")
def _swap(c: Call):
    name = _first(c)
    rank = c.rank(name)
    perm = list(range(rank))
    if c.op in ("Tensor.T", "Tensor.H"):
        perm = perm[::-1]
    elif c.op in ("Tensor.mT", "Tensor.mH", "adjoint") or (c.op == "t" and rank == 2):
        if rank >= 2:
            perm[-2], perm[-1] = perm[-1], perm[-2]
    elif c.op != "t":
        a, b = (c.lit(k) for k in list(c.p)[1:3])
        a, b = norm_axis(int(a), rank), norm_axis(int(b), rank)
        perm[a], perm[b] = perm[b], perm[a]
    return _transpose(c, name, perm)


@mapping("movedim")
def _movedim(c: Call):
    rank = c.rank("input")
    src, dst = c.lit("source"), c.lit("destination")
    src = [norm_axis(int(d), rank) for d in (src if isinstance(src, list) else [src])]
    dst = [norm_axis(int(d), rank) for d in (dst if isinstance(dst, list) else [dst])]
    perm = [None] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    perm = [p if p is not None else next(rest) for p in perm]
    return _transpose(c, "input", perm)


# -- joining and splitting ----------------------------------------------------------------------

def _tensor_list(c: Call, name: str) -> list:
    items = c.p.get(name)
    if not isinstance(items, list) or not all(is_tensor_arg(t) for t in items):
        raise Unsupported(f"{name} must be a list of tensors")
    return items


@mapping("cat")
def _cat(c: Call):
    items = _tensor_list(c, "tensors")
    d = c.out_dtype
    rank = len(c.out_shape)
    kept = [t for t in items if not (len(c.arg_meta(t)["shape"]) == 1 and rank != 1
                                     and c.arg_meta(t)["shape"][0] == 0)]
    axis = norm_axis(int(c.lit("dim", 0) if c.p.get("axis") is None else c.lit("axis")), rank)
    names = [c.t(t, d) for t in kept]
    return names[0] if len(names) == 1 else c.add("Concat", names, axis=axis)


@mapping("stack")
def _stack(c: Call):
    items = _tensor_list(c, "tensors")
    d = c.out_dtype
    axis = norm_axis(int(c.lit("dim", 0)), len(c.out_shape))
    names = [unsqueeze(c, c.t(t, d), [axis]) for t in items]
    return names[0] if len(names) == 1 else c.add("Concat", names, axis=axis)


def _split_sizes(c: Call, axis: int) -> list:
    return [o["shape"][axis] for o in c.outputs]


def _split(c: Call, x: str, axis: int, sizes: list) -> list:
    if len(sizes) == 1:
        return [x]
    return c.add("Split", [x, c.b.sizes(sizes)], outputs=len(sizes), axis=axis)


@mapping("unbind")
def _unbind(c: Call):
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim", 0)), rank)
    parts = _split(c, c.t("input"), axis, [1] * len(c.outputs))
    return [squeeze(c, p, [axis]) for p in parts]


@mapping("chunk", "split", "split_with_sizes", "tensor_split", "unsafe_chunk",
         "unsafe_split", "unsafe_split_with_sizes", "hsplit", "vsplit", "dsplit")
def _split_op(c: Call):
    name = _first(c)
    rank = c.rank(name)
    if c.op == "hsplit":
        dim = 1 if rank >= 2 else 0
    elif c.op == "vsplit":
        dim = 0
    elif c.op == "dsplit":
        dim = 2
    else:
        dim = c.lit("dim", 0)
    axis = norm_axis(int(dim), rank)
    return _split(c, c.t(name), axis, _split_sizes(c, axis))


# -- indexing -----------------------------------------------------------------------------------

def _index_items(index) -> list:
    if isinstance(index, dict) and "tuple" in index:
        return list(index["tuple"])
    return [index]


def _is_ellipsis(item) -> bool:
    return isinstance(item, dict) and "ellipsis" in item


@mapping("getitem")
def _getitem(c: Call):
    x = c.t("self")
    shape = c.shape("self")
    rank = len(shape)
    items = _index_items(c.p["index"])
    if len(items) == 1 and is_tensor_arg(items[0]) and \
            c.arg_meta(items[0])["dtype"] in ("bool", "uint8"):
        from ._export_ops_select import select_by_mask

        mask_rank = len(c.arg_meta(items[0])["shape"])
        if mask_rank == 0 or mask_rank > rank:
            raise Unsupported(f"a {mask_rank}-d boolean mask for a {rank}-d tensor")
        return select_by_mask(c, x, shape, c.t(items[0], "bool"), mask_rank)
    consumed = sum(1 for it in items if it is not None and not _is_ellipsis(it))
    if consumed > rank:
        raise Unsupported(f"too many indices for a {rank}-d tensor")
    if any(_is_ellipsis(it) for it in items):
        at = next(i for i, it in enumerate(items) if _is_ellipsis(it))
        items = items[:at] + [{"slice": [None, None, None]}] * (rank - consumed) + \
            items[at + 1:]
    else:
        items = items + [{"slice": [None, None, None]}] * (rank - consumed)
    starts, ends, axes, steps = [], [], [], []
    squeezed, new_axes = [], []
    advanced = None  # (input dim, ONNX name of the indices, their rank)
    d = out_pos = 0
    expected: list = []
    for item in items:
        if item is None:
            new_axes.append(out_pos)
            expected.append(1)
            out_pos += 1
            continue
        if isinstance(item, dict) and "slice" in item:
            start, stop, step = item["slice"]
            step = 1 if step is None else c.sizes([step])[0]
            if not isinstance(step, int) or step <= 0:
                raise Unsupported("slice steps must be positive constants")
            if not (start in (None, 0) and stop is None and step == 1):
                starts.append(0 if start is None else c.sizes([start])[0])
                ends.append(INT64_MAX if stop is None else c.sizes([stop])[0])
                axes.append(d)
                steps.append(step)
            expected.append(None)
            d += 1
            out_pos += 1
            continue
        if isinstance(item, bool):
            raise Unsupported("indexing with a Python bool")
        if isinstance(item, int) or isinstance(item, dict) and "symint" in item:
            i = c.sizes([item])[0]
            starts.append(i)
            ends.append(INT64_MAX if i == -1 else {"add": [i, 1]} if not isinstance(i, int)
                        else i + 1)
            axes.append(d)
            steps.append(1)
            squeezed.append(d)
            d += 1
            continue
        if advanced is not None:
            raise Unsupported("more than one tensor index (advanced indexing) in one "
                              "getitem")
        if is_tensor_arg(item):
            meta = c.arg_meta(item)
            if meta["dtype"] == "bool" or meta["dtype"] == "uint8":
                raise Unsupported("indexing with a boolean mask gives a data-dependent "
                                  "shape")
            idx, idx_shape = c.t(item, "int64"), meta["shape"]
        elif isinstance(item, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                            for v in _flat(item)):
            arr = np.asarray(item, dtype=np.int64)
            idx, idx_shape = c.const(arr, "int64"), list(arr.shape)
        else:
            raise Unsupported(f"index {decode_safe(item)} has no ONNX form")
        advanced = (d, idx, len(idx_shape))
        expected.extend([None] * len(idx_shape))
        d += 1
        out_pos += len(idx_shape)
    out = x
    if axes:
        out = c.add("Slice", [out, c.b.sizes(starts), c.b.sizes(ends), c.i64(axes),
                              c.i64(steps)])
    if advanced is not None:
        a, idx, _ = advanced
        gathered_axis = a - sum(1 for s in squeezed if s < a)
        if squeezed:
            out = squeeze(c, out, squeezed)
        out = c.add("Gather", [out, idx], axis=gathered_axis)
    elif squeezed:
        out = squeeze(c, out, squeezed)
    if new_axes:
        out = unsqueeze(c, out, new_axes)
    if len(expected) != len(c.out_shape):
        raise Unsupported("this mix of integer and tensor indices reorders dimensions as "
                          "PyTorch's advanced indexing does; index in two steps")
    return out


@mapping("setitem")
def _setitem(c: Call):
    """``x[index] = value`` for an index of ints, slices and ``...`` on a tensor of static
    shape (``ScatterND`` at the constant coordinates of the written region), or of index
    tensors (``index_put``: a boolean mask, or integer indices on the leading dims)."""
    items = _index_items(c.p["index"])
    if items and all(is_tensor_arg(it) for it in items):
        from ._export_ops_select import index_put

        return index_put(c, "self", items, c.p["value"], accumulate=False)
    shape = c.shape("self")
    if not all(isinstance(e, int) for e in shape):
        raise Unsupported("assignment into a tensor with dynamic dimensions")
    if any(it is None or isinstance(it, bool) or is_tensor_arg(it) or isinstance(it, list)
           for it in items):
        raise Unsupported("assignment through None, bool, list or tensor indices")
    consumed = sum(1 for it in items if not _is_ellipsis(it))
    if consumed > len(shape):
        raise Unsupported(f"too many indices for a {len(shape)}-d tensor")
    full = {"slice": [None, None, None]}
    if any(_is_ellipsis(it) for it in items):
        at = next(i for i, it in enumerate(items) if _is_ellipsis(it))
        items = items[:at] + [full] * (len(shape) - consumed) + items[at + 1:]
    items = items + [full] * (len(shape) - len(items))
    ranges, region = [], []
    for item, n in zip(items, shape):
        if isinstance(item, dict) and "slice" in item:
            bounds = [v if v is None else c.sizes([v])[0] for v in item["slice"]]
            if not all(v is None or isinstance(v, int) for v in bounds):
                raise Unsupported("assignment through a slice with dynamic bounds")
            r = range(*slice(*bounds).indices(n))
            ranges.append(list(r))
            region.append(len(r))
        else:
            i = c.sizes([item])[0]
            if not isinstance(i, int):
                raise Unsupported("assignment at a dynamic index")
            ranges.append([i % n])
    grid = np.stack(np.meshgrid(*[np.asarray(r, dtype=np.int64) for r in ranges],
                                indexing="ij"), -1).reshape(-1, len(shape))
    d = c.dtype("self")
    value = c.t("value", d)
    value_shape = c.shape("value") if c.is_tensor("value") else []
    updates = expand_to(c, value, value_shape, region)
    updates = c.add("Reshape", [updates, c.i64([-1])])
    return c.add("ScatterND", [c.t("self"), c.const(grid, "int64"), updates])


def _flat(items):
    for v in items:
        if isinstance(v, list):
            yield from _flat(v)
        else:
            yield v


def decode_safe(item) -> str:
    try:
        return repr(decode(item))
    except Unsupported:
        return repr(item)


@mapping("select", "Tensor.select")
def _select(c: Call):
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), rank)
    index = c.sizes("index")[0]
    return c.add("Gather", [c.t("input"), c.b.scalar_expr(index)], axis=axis)


@mapping("narrow", "narrow_copy")
def _narrow(c: Call):
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), rank)
    start = c.sizes("start")[0]
    length = c.sizes("length")[0]
    end = start + length if isinstance(start, int) and isinstance(length, int) \
        else {"add": [start, length]}
    return c.add("Slice", [c.t("input"), c.b.sizes([start]), c.b.sizes([end]),
                           c.i64([axis])])


@mapping("index_select")
def _index_select(c: Call):
    axis = norm_axis(int(c.lit("dim")), c.rank("input"))
    return c.add("Gather", [c.t("input"), c.t("index", "int64")], axis=axis)


@mapping("gather", "take_along_dim")
def _gather(c: Call):
    if c.lit("dim") is None:
        raise Unsupported("take_along_dim without dim (over the flattened input)")
    axis = norm_axis(int(c.lit("dim")), c.rank("input"))
    index = "index" if "index" in c.p else "indices"
    x, idx = c.t("input"), c.t(index, "int64")
    if c.shape(index) != c.out_shape:  # take_along_dim broadcasts all dims but ``dim``
        if c.op != "take_along_dim":
            raise Unsupported("an index of another shape than the output")
        # zeros shaped like each: they broadcast against each other, except along ``axis``
        # where each keeps its own size
        zero = c.const(np.int64(0), "int64")
        x_zeros = c.add("Mul", [c.b.cast(x, c.dtype("input"), "int64"), zero])
        i_zeros = c.add("Mul", [idx, zero])
        x_shape = c.b.shape_of(c.add("Add", [x_zeros, reduce(c, "ReduceMax", i_zeros, [axis],
                                                             True)]))
        i_shape = c.b.shape_of(c.add("Add", [i_zeros, reduce(c, "ReduceMax", x_zeros, [axis],
                                                             True)]))
        x, idx = c.add("Expand", [x, x_shape]), c.add("Expand", [idx, i_shape])
    return c.add("GatherElements", [x, idx], axis=axis)


@mapping("hstack", "vstack", "dstack", "column_stack", "row_stack")
def _hstack(c: Call):
    items = _tensor_list(c, "tensors")
    d = c.out_dtype
    out_rank = len(c.out_shape)
    names = []
    for t in items:
        shape = c.arg_meta(t)["shape"]
        x = c.t(t, d)
        if c.op == "column_stack" and len(shape) <= 1:
            x = reshape_to(c, x, shape, [shape[0] if shape else 1, 1])
        elif c.op in ("vstack", "row_stack") and len(shape) < 2:
            x = reshape_to(c, x, shape, [1, shape[0] if shape else 1])
        elif c.op == "dstack" and len(shape) < 3:
            x = reshape_to(c, x, shape, [1] + ([shape[0]] if shape else [1]) + [1]
                           if len(shape) <= 1 else list(shape) + [1])
        elif c.op == "hstack" and not shape:
            x = unsqueeze(c, x, [0])
        names.append(x)
    axis = {"hstack": 1 if out_rank > 1 else 0, "vstack": 0, "row_stack": 0, "dstack": 2,
            "column_stack": 1}[c.op]
    return names[0] if len(names) == 1 else c.add("Concat", names, axis=axis)


@mapping("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(c: Call):
    items = c.p.get("tensors") or []
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    outs = []
    for t, o in zip(items, c.outputs):
        shape = c.arg_meta(t)["shape"]
        outs.append(reshape_to(c, c.t(t), shape, o["shape"]))
    return outs[0] if len(c.outputs) == 1 else outs


@mapping("fliplr", "flipud")
def _fliplr(c: Call):
    axis = 1 if c.op == "fliplr" else 0
    return c.add("Slice", [c.t("input"), c.i64([-1]), c.i64([INT64_MIN]), c.i64([axis]),
                           c.i64([-1])])


@mapping("broadcast_tensors")
def _broadcast_tensors(c: Call):
    items = c.p.get("tensors") or []
    return [expand_to(c, c.t(t), c.arg_meta(t)["shape"], o["shape"])
            for t, o in zip(items, c.outputs)]


@mapping("meshgrid")
def _meshgrid(c: Call):
    items = c.p.get("tensors") or []
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    xy = c.lit("indexing") == "xy" and len(items) >= 2
    n = len(items)
    outs = []
    for k, (t, o) in enumerate(zip(items, c.outputs)):
        axis = k
        if xy and k < 2:
            axis = 1 - k
        x = reshape_to(c, c.t(t), c.arg_meta(t)["shape"],
                       [o["shape"][axis] if a == axis else 1 for a in range(n)])
        outs.append(c.add("Expand", [x, c.b.sizes(o["shape"])]))
    return outs


@mapping("rot90")
def _rot90(c: Call):
    k = int(c.lit("k", 1)) % 4
    rank = c.rank("input")
    a, b = (norm_axis(int(d), rank) for d in c.lit("dims", [0, 1]))
    x = c.t("input")
    if k == 0:
        return x

    def flip(v, axis):
        return c.add("Slice", [v, c.i64([-1]), c.i64([INT64_MIN]), c.i64([axis]), c.i64([-1])])

    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    if k == 2:
        return flip(flip(x, a), b)
    if k == 1:
        return c.add("Transpose", [flip(x, b)], perm=perm)
    return flip(c.add("Transpose", [x], perm=perm), b)


@mapping("flip")
def _flip(c: Call):
    rank = c.rank("input")
    axes = [norm_axis(int(d), rank) for d in c.ints("dims")]
    n = len(axes)
    return c.add("Slice", [c.t("input"), c.i64([-1] * n), c.i64([INT64_MIN] * n),
                           c.i64(axes), c.i64([-1] * n)])


@mapping("roll")
def _roll(c: Call):
    shape = c.shape("input")
    x = c.t("input")
    shifts = c.ints("shifts")
    dims = c.lit("dims")
    if dims is None or dims == []:
        flat = c.add("Reshape", [x, c.i64([-1])])
        n = _static_numel(shape)
        return reshape_to(c, _roll_axis(c, flat, 0, shifts[0], n), [None], shape)
    dims = dims if isinstance(dims, list) else [dims]
    for s, d in zip(shifts, dims):
        axis = norm_axis(int(d), len(shape))
        if not isinstance(shape[axis], int):
            raise Unsupported("roll along a dynamic dimension")
        x = _roll_axis(c, x, axis, s, shape[axis])
    return x


def _static_numel(shape: list) -> int:
    n = 1
    for e in shape:
        if not isinstance(e, int):
            raise Unsupported("roll without dims of a tensor with dynamic dimensions")
        n *= e
    return n


def _roll_axis(c: Call, x: str, axis: int, shift: int, n: int) -> str:
    shift %= n or 1
    if shift == 0:
        return x
    tail = c.add("Slice", [x, c.i64([n - shift]), c.i64([n]), c.i64([axis])])
    head = c.add("Slice", [x, c.i64([0]), c.i64([n - shift]), c.i64([axis])])
    return c.add("Concat", [tail, head], axis=axis)


@mapping("tile", "Tensor.repeat")
def _tile(c: Call):
    name = _first(c)
    rank = c.rank(name)
    reps = c.sizes("dims" if c.op == "tile" else "repeats")
    if len(reps) == 1 and isinstance(c.p.get("repeats"), list) and \
            isinstance(c.p["repeats"][0], list):
        reps = c.sizes(c.p["repeats"][0])
    x = c.t(name)
    if len(reps) > rank:
        x = unsqueeze(c, x, list(range(len(reps) - rank)))
    elif len(reps) < rank:
        reps = [1] * (rank - len(reps)) + reps
    return c.add("Tile", [x, c.b.sizes(reps)])


@mapping("repeat_interleave")
def _repeat_interleave(c: Call):
    if c.is_tensor("repeats") or c.p.get("dim") is None:
        raise Unsupported("repeat_interleave with tensor repeats or without dim")
    shape = c.shape("input")
    axis = norm_axis(int(c.lit("dim")), len(shape))
    reps = int(c.lit("repeats"))
    x = unsqueeze(c, c.t("input"), [axis + 1])
    wide = shape[:axis + 1] + [reps] + shape[axis + 1:]
    x = expand_to(c, x, shape[:axis + 1] + [1] + shape[axis + 1:], wide)
    return reshape_to(c, x, wide, c.out_shape)


@mapping("triu", "tril", since=14)
def _trilu(c: Call):
    k = c.sizes("diagonal")[0]
    return c.add("Trilu", [c.t("input"), c.b.scalar_expr(k)], upper=int(c.op == "triu"))


@mapping("one_hot")
def _one_hot(c: Call):
    n = c.lit("num_classes", -1)
    ids = c.t("tensor" if "tensor" in c.p else "input", "int64")
    if n is None or n < 0:  # the classes the data has: max + 1
        depth = c.add("Add", [c.add("ReduceMax", [ids], keepdims=0),
                              c.const(np.int64(1), "int64")])
    else:
        depth = c.const(np.int64(n), "int64")
    values = c.const([0, 1], c.out_dtype)
    if not c.rank("tensor" if "tensor" in c.p else "input"):  # OneHot needs indices of rank 1+
        return squeeze(c, c.add("OneHot", [unsqueeze(c, ids, [0]), depth, values], axis=-1),
                       [0])
    return c.add("OneHot", [ids, depth, values], axis=-1)


# -- casts --------------------------------------------------------------------------------------

@mapping("Tensor.to", "Tensor.float", "Tensor.double", "Tensor.half",
         "Tensor.int", "Tensor.long", "Tensor.short", "Tensor.char", "Tensor.byte",
         "Tensor.bool", "Tensor.type", "Tensor.type_as")
def _to(c: Call):
    name = _first(c)
    return c.t(name, c.out_dtype)


# -- creation -----------------------------------------------------------------------------------

def _fill(c: Call, value) -> str:
    from ._export_graph import NUMPY_DTYPES

    d = c.out_dtype
    if isinstance(value, dict) and "tensor" in value:
        raise Unsupported("a fill value given as a tensor")
    v = decode(value) if value is not None else 0
    arr = np.asarray([v], dtype=NUMPY_DTYPES.get(d, np.float32))
    tensor = c.b.onnx.numpy_helper.from_array(arr)
    if d == "bfloat16":
        tensor = c.b.helper.make_tensor("value", ONNX_TYPES[d], [1], [float(v)])
    return c.add("ConstantOfShape", [c.b.sizes(c.out_shape)], value=tensor)


@mapping("ember.zeros_like", "ember.ones_like", "ember.full_like", "ember.empty_like",
         "ember.zeros", "ember.ones", "ember.full", "ember.empty", "Tensor.new_zeros",
         "Tensor.new_ones", "Tensor.new_full", "Tensor.new_empty", "fill", "zero_",
         "Tensor.fill_", "Tensor.zero_")
def _constant_of_shape(c: Call):
    op = c.op.rpartition(".")[2]
    if op in ("ones_like", "ones", "new_ones"):
        value = 1
    elif op in ("full_like", "full", "new_full"):
        value = c.p.get("fill_value")
    elif op in ("fill", "fill_"):
        value = c.p.get("value")
    else:
        value = 0
    return _fill(c, value)


@mapping("ember.arange")
def _arange(c: Call):
    args = list(c.p.get("args") or [])
    for key in ("start", "end", "step"):
        if c.p.get(key) is not None:
            raise Unsupported("arange with keyword bounds")
    if len(args) == 1:
        args = [0, args[0], 1]
    elif len(args) == 2:
        args = [args[0], args[1], 1]
    d = c.out_dtype
    bounds = []
    for a in args:
        if isinstance(a, dict) and "symint" in a:
            bounds.append(c.b.cast(c.b.scalar_expr(a["symint"]), "int64", d))
        else:
            v = decode(a)
            bounds.append(c.const(v, d))
    if d not in FLOAT_TYPES and d not in ("int32", "int64", "int16"):
        raise Unsupported(f"arange of dtype {d}")
    return c.add("Range", bounds)


# -- random sampling ----------------------------------------------------------------------------
# ONNX's samplers (RandomUniformLike, RandomNormalLike, Bernoulli, Multinomial) draw from the
# runtime's generator: an exported model samples the same distributions as Ember, not the same
# values. Each draw is a fresh node (no seed attribute), as each call in Ember draws anew.

_SAMPLE_TYPES = ("float16", "float32", "float64")


def _sample_dtype(c: Call) -> str:
    """The dtype a sampler draws in for the output: its own where ONNX's samplers have it,
    float64 for integer and bfloat16 outputs (drawn, then rounded or cast)."""
    return c.out_dtype if c.out_dtype in _SAMPLE_TYPES else "float64"


def _shaped_like_output(c: Call, like: str | None = None) -> str:
    """A tensor of the output's shape for the ``*Like`` samplers: ``like`` where it has that
    shape, else zeros built from the output's (possibly symbolic) sizes."""
    if like is not None and is_tensor_arg(c.p.get(like)) and c.shape(like) == c.out_shape:
        return c.t(like)
    return c.add("ConstantOfShape", [c.b.sizes(c.out_shape)])


def uniform(c: Call, low: float = 0.0, high: float = 1.0, like: str | None = None,
            dtype: str | None = None) -> str:
    """Samples of U[low, high) of the output's shape in ``dtype`` (the sampling dtype)."""
    d = dtype or _sample_dtype(c)
    return c.add("RandomUniformLike", [_shaped_like_output(c, like)], dtype=ONNX_TYPES[d],
                 low=float(low), high=float(high))


def normal(c: Call, like: str | None = None, dtype: str | None = None) -> str:
    """Standard normal samples of the output's shape in ``dtype`` (the sampling dtype)."""
    d = dtype or _sample_dtype(c)
    return c.add("RandomNormalLike", [_shaped_like_output(c, like)], dtype=ONNX_TYPES[d],
                 mean=0.0, scale=1.0)


def _number(c: Call, value, name: str) -> float:
    if is_tensor_arg(value):
        raise Unsupported(f"a {name} given as a tensor here")
    v = decode(value)
    if isinstance(v, dict):
        raise Unsupported(f"a {name} computed from a dynamic size")
    return float(v)


def _method_args(c: Call, names: tuple, defaults: tuple) -> list:
    """The arguments of a ``Tensor.<sampler>_(*args, **kwargs)`` method by position or name."""
    args = list(c.p.get("args") or [])
    out = []
    for i, (n, d) in enumerate(zip(names, defaults)):
        v = args[i] if i < len(args) else c.p.get(n, d)
        out.append(d if v is None else v)
    return out


@mapping("ember.rand", "ember.rand_like", "ember.randn", "ember.randn_like")
def _rand(c: Call):
    like = "input" if c.op.endswith("_like") else None
    d = _sample_dtype(c)
    out = normal(c, like, d) if "randn" in c.op else uniform(c, 0.0, 1.0, like, d)
    return c.b.cast(out, d, c.out_dtype)


def _integers(c: Call, low: float, high: float, like: str | None = None) -> str:
    """Uniform integers in ``[low, high)``: a float64 draw floored (clipped below ``high``
    against rounding) and cast to the output dtype."""
    if high <= low:
        raise Unsupported(f"random_ expects 'from' to be less than 'to', but got from={low} "
                          f">= to={high}")
    u = c.add("Floor", [uniform(c, low, high, like, "float64")])
    u = c.add("Min", [u, c.const(high - 1, "float64")])
    return c.b.cast(u, "float64", c.out_dtype)


@mapping("ember.randint")
def _randint(c: Call):
    args = list(c.p.get("args") or [])
    low, high = c.p.get("low"), c.p.get("high")
    if high is None:  # randint(high, size) or randint(low, high, size)
        bounds = args[:-1] if c.p.get("size") is None else args
        low, high = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
    return _integers(c, _number(c, low or 0, "bound"), _number(c, high, "bound"))


@mapping("ember.randint_like")
def _randint_like(c: Call):
    low, high = c.p.get("low", 0), c.p.get("high")
    if high is None:
        low, high = 0, low
    return _integers(c, _number(c, low, "bound"), _number(c, high, "bound"), "input")


def _affine(c: Call, z: str, d: str, loc, scale) -> str:
    """``loc + scale * z`` (numbers or tensors; a 0 or 1 is no node)."""
    if not (not is_tensor_arg(scale) and decode(scale) == 1):
        z = c.add("Mul", [z, c.t(scale, d)])
    if not (not is_tensor_arg(loc) and decode(loc) == 0):
        z = c.add("Add", [z, c.t(loc, d)])
    return z


@mapping("ember.normal")
def _normal(c: Call):
    d = _sample_dtype(c)
    out = _affine(c, normal(c, None, d), d, c.p.get("mean", 0.0), c.p.get("std", 1.0))
    return c.b.cast(out, d, c.out_dtype)


@mapping("Tensor.normal_", "Tensor.log_normal_")
def _normal_(c: Call):
    d = _sample_dtype(c)
    defaults = (0.0, 1.0) if c.op == "Tensor.normal_" else (1.0, 2.0)
    mean, std = _method_args(c, ("mean", "std"), defaults)
    out = _affine(c, normal(c, "self", d), d, mean, std)
    if c.op == "Tensor.log_normal_":
        out = c.add("Exp", [out])
    return c.b.cast(out, d, c.out_dtype)


@mapping("Tensor.uniform_")
def _uniform_(c: Call):
    d = _sample_dtype(c)
    low, high = _method_args(c, ("from", "to"), (0.0, 1.0))
    out = uniform(c, _number(c, low, "bound"), _number(c, high, "bound"), "self", d)
    return c.b.cast(out, d, c.out_dtype)


@mapping("Tensor.exponential_", "Tensor.cauchy_", "Tensor.geometric_")
def _inverse_cdf(c: Call):
    """Samplers by the inverse CDF of one uniform draw ``u`` in [0, 1)."""
    d = _sample_dtype(c)
    u = uniform(c, 0.0, 1.0, "self", d)
    one_minus = c.add("Sub", [c.const(1.0, d), u])  # in (0, 1]
    if c.op == "Tensor.exponential_":
        lambd, = _method_args(c, ("lambd",), (1.0,))
        out = c.add("Div", [c.add("Neg", [c.add("Log", [one_minus])]), c.t(lambd, d)])
    elif c.op == "Tensor.cauchy_":
        median, sigma = _method_args(c, ("median", "sigma"), (0.0, 1.0))
        angle = c.add("Mul", [c.add("Sub", [u, c.const(0.5, d)]), c.const(np.pi, d)])
        tan = c.add("Div", [c.add("Sin", [angle]), c.add("Cos", [angle])])
        out = _affine(c, tan, d, median, sigma)
    else:
        p, = _method_args(c, ("p",), (None,))
        if p is None:
            raise Unsupported("geometric_ without p")
        p = _number(c, p, "probability")
        trials = c.add("Ceil", [c.add("Div", [c.add("Log", [one_minus]),
                                               c.const(float(np.log1p(-p)), d)])])
        out = c.add("Max", [trials, c.const(1.0, d)])
    return c.b.cast(out, d, c.out_dtype)


def _bernoulli_of(c: Call, probs: str, d: str, like: str | None) -> str:
    """0/1 draws with probabilities ``probs`` (dtype ``d``): a uniform draw below them, which
    is the function body ONNX defines its Bernoulli (opset 15) by. Not the Bernoulli node
    itself: onnxruntime 1.32's kernel draws 1 with probability ``1 - p`` (measured: p = 0.1
    gave 0.898 ones over 1e5 draws), so a model using it would sample the wrong
    distribution there."""
    drawn = c.add("Less", [uniform(c, 0.0, 1.0, like, d), probs])
    return c.add("Cast", [drawn], to=ONNX_TYPES[_sample_dtype(c)])


@mapping("bernoulli", "Tensor.bernoulli_")
def _bernoulli(c: Call):
    d = c.dtype("input") if c.dtype("input") in _SAMPLE_TYPES else "float64"
    p = c.p.get("p")
    if c.op == "Tensor.bernoulli_" and p is None:
        p = 0.5
    if p is None:  # bernoulli(input): the input holds the probabilities
        out = _bernoulli_of(c, c.t("input", d), d, None)
    else:
        out = _bernoulli_of(c, c.t(p, d), d, "input")
    return c.b.cast(out, _sample_dtype(c), c.out_dtype)


@mapping("multinomial", since=7)
def _multinomial(c: Call):
    """With replacement: ONNX's Multinomial (on log-probabilities). Without: the Gumbel
    top-k trick, the ``num_samples`` largest of ``log p + Gumbel noise``, which draws the
    categories one after another without replacement with the probabilities renormalised."""
    k = int(c.lit("num_samples"))
    rank = c.rank("input")
    if rank not in (1, 2):
        raise Unsupported("prob_dist must be 1 or 2 dim")
    p = c.t("input", "float32")
    if rank == 1:
        p = unsqueeze(c, p, [0])
    logp = c.add("Log", [p])
    if c.lit("replacement", False):
        out = c.add("Multinomial", [logp], dtype=ONNX_TYPES["int64"], sample_size=k)
    else:
        u = c.add("RandomUniformLike", [logp], dtype=ONNX_TYPES["float32"], low=0.0, high=1.0)
        gumbel = c.add("Neg", [c.add("Log", [c.add("Neg", [c.add("Log", [u])])])])
        keys = c.add("Add", [logp, gumbel])
        _, out = c.add("TopK", [keys, c.i64([k])], outputs=2, axis=-1, largest=1, sorted=1)
    return squeeze(c, out, [0]) if rank == 1 else out


@mapping("ember.randperm")
def _randperm(c: Call):
    """A uniform permutation: the order that sorts independent uniform draws."""
    keys = uniform(c, 0.0, 1.0, None, "float32")
    n = c.b.sizes(c.out_shape)
    _, order = c.add("TopK", [keys, n], outputs=2, axis=0, largest=0, sorted=1)
    return c.b.cast(order, "int64", c.out_dtype)


@mapping("ember.poisson", "binomial")
def _no_sampler(c: Call):
    what = "Poisson" if c.op == "ember.poisson" else "binomial"
    raise Unsupported(f"ONNX has no operator for {c.op} (no {what} sampler: its random ops "
                      "draw uniform, normal, Bernoulli and categorical samples only)")


# -- windows ------------------------------------------------------------------------------------

def _window(c: Call, values, native: str | None = None):
    """A window of ``window_length`` points: ``values(fn, k, m)`` gives the symmetric window
    of ``m`` points at ``k = 0 .. window_length - 1`` in float64 (``m = window_length + 1``
    when periodic); ``native``: the ONNX operator (opset 17) that computes it, used there.
    One point or none: ones, as PyTorch's."""
    from ._export_ops_special import COMPUTE, Expr, Fn

    d = c.out_dtype
    if d not in FLOAT_TYPES:
        raise Unsupported(f"a window of dtype {d}")
    periodic = bool(c.lit("periodic", True))
    length = c.sizes("window_length")[0]
    n = c.b.scalar_expr(length)
    f = Fn(c)
    nf = Expr(f, c.b.cast(n, "int64", COMPUTE))
    if native is not None and c.opset >= 17:
        w = Expr(f, c.add(native, [n], output_datatype=ONNX_TYPES[COMPUTE],
                          periodic=int(periodic)))
    else:
        k = Expr(f, c.add("Range", [c.const(0.0, COMPUTE), nf.name, c.const(1.0, COMPUTE)]))
        w = values(f, k, nf + 1.0 if periodic else nf)
    if isinstance(length, int) and length > 1:
        return f.result(w)
    return f.result(f.where(nf <= 1.0, 1.0, w))


def _cosine_sum(*a: float):
    """``a0 - a1 cos(2 pi k / (m - 1)) + a2 cos(4 pi k / (m - 1))``."""
    def values(f, k, m):
        t = k * (2 * np.pi) / (m - 1.0)
        w = a[0] - f.cos(t) * a[1]
        return w + f.cos(t * 2.0) * a[2] if len(a) > 2 else w
    return values


@mapping("hann_window")
def _hann_window(c: Call):
    return _window(c, _cosine_sum(0.5, 0.5), "HannWindow")


@mapping("hamming_window")
def _hamming_window(c: Call):
    # ONNX's HammingWindow has alpha = 25/46, beta = 21/46, not PyTorch's 0.54 and 0.46
    alpha, beta = float(c.lit("alpha", 0.54)), float(c.lit("beta", 0.46))
    return _window(c, _cosine_sum(alpha, beta))


@mapping("blackman_window")
def _blackman_window(c: Call):
    return _window(c, _cosine_sum(0.42, 0.5, 0.08), "BlackmanWindow")


@mapping("bartlett_window")
def _bartlett_window(c: Call):
    def values(f, k, m):
        return 1.0 - f.abs(k * 2.0 / (m - 1.0) - 1.0)
    return _window(c, values)


@mapping("kaiser_window")
def _kaiser_window(c: Call):
    from ._export_ops_special import i0

    beta = float(c.lit("beta", 12.0))

    def values(f, k, m):
        a = (m - 1.0) / 2.0
        r = (k - a) / a
        return i0(f, f.sqrt(f.maximum(1.0 - r * r, 0.0)) * beta) / i0(f, f.lift(beta))
    return _window(c, values)


# -- short-time Fourier transform ---------------------------------------------------------------

_PAD_MODES = {"reflect": "reflect", "constant": "constant", "replicate": "edge"}


@mapping("stft", since=17)
def _stft(c: Call):
    """``stft`` of a real signal: ONNX's STFT (opset 17) on the signal padded as ``center``
    asks, the window centred in ``n_fft`` points; its ``[batch, frames, bins, 2]`` transposed
    to PyTorch's ``[batch, bins, frames, 2]``: the real pairs ``return_complex=False``
    returns, which are also how a complex result is carried inside the graph
    (``_export_ops_fft.py``)."""
    d = COMPLEX_PARTS.get(c.out_dtype, c.out_dtype)
    if c.dtype("input") not in FLOAT_TYPES:
        raise Unsupported("stft of a complex signal")
    n_fft = int(c.lit("n_fft"))
    hop = int(c.lit("hop_length") or n_fft // 4)
    win = int(c.lit("win_length") or n_fft)
    x = c.t("input", d)
    batched = c.rank("input") == 2
    if not batched:
        x = unsqueeze(c, x, [0])
    if c.lit("center", True):
        mode = c.lit("pad_mode", "reflect")
        if mode not in _PAD_MODES:
            raise Unsupported(f"stft's pad_mode {mode!r}")
        half = n_fft // 2
        x = c.add("Pad", [x, c.i64([0, half, 0, half])], mode=_PAD_MODES[mode])
    signal = unsqueeze(c, x, [2])
    window = c.t("window", d) if c.has("window") else c.const(np.ones(win), d)
    if win < n_fft:
        left = (n_fft - win) // 2
        window = c.add("Pad", [window, c.i64([left, n_fft - win - left])])
    onesided = c.lit("onesided")
    onesided = True if onesided is None else bool(onesided)
    frames = c.add("STFT", [signal, c.const(np.int64(hop), "int64"), window,
                            c.const(np.int64(n_fft), "int64")], onesided=int(onesided))
    out = c.add("Transpose", [frames], perm=[0, 2, 1, 3])
    if c.lit("normalized", False):
        out = c.add("Mul", [out, c.const(1 / np.sqrt(n_fft), d)])
    return out if batched else squeeze(c, out, [0])


# -- diagonal embeddings, scatters into views, products of sets ---------------------------------

def _static(c: Call, sizes: list, what: str) -> list:
    if not all(isinstance(s, int) for s in sizes):
        raise Unsupported(f"{what} of a dynamic size (the result's shape depends on it)")
    return sizes


def _embed_last(c: Call, x: str, n: int, offset: int, d: str) -> str:
    """``x`` (``[..., n]``) on the ``offset`` diagonal of its last two (new) axes."""
    eye = c.const(np.eye(n, dtype=bool), "bool")
    out = c.add("Where", [eye, unsqueeze(c, x, [-1]), c.const(0, d)])
    k = abs(offset)
    if k:
        out = _pad_last_two(c, out, k, offset)
    return out


def _pad_last_two(c: Call, x: str, k: int, offset: int) -> str:
    """``offset > 0``: k columns on the left, k rows at the bottom; else rows on top and
    columns on the right (moves the main diagonal to ``offset``)."""
    rank = len(c.out_shape)
    pads = [0] * (2 * rank)
    if offset > 0:
        pads[rank - 1] = k          # columns before
        pads[2 * rank - 2] = k      # rows after
    else:
        pads[rank - 2] = k          # rows before
        pads[2 * rank - 1] = k      # columns after
    return c.add("Pad", [x, c.i64(pads)])


@mapping("diag_embed")
def _diag_embed(c: Call):
    d = c.out_dtype
    shape = c.shape("input")
    n = _static(c, shape[-1:], "diag_embed")[0] if shape else 1
    x = c.t("input", d)
    if not shape:
        x = unsqueeze(c, x, [0])
    offset = int(c.lit("offset", 0))
    out = _embed_last(c, x, n, offset, d)
    rank = len(c.out_shape)
    d1, d2 = norm_axis(int(c.lit("dim1", -2)), rank), norm_axis(int(c.lit("dim2", -1)), rank)
    if d1 == d2:
        raise Unsupported("diag_embed with dim1 == dim2")
    if (d1, d2) == (rank - 2, rank - 1):
        return out
    rest = iter(range(rank - 2))
    perm = [rank - 2 if a == d1 else rank - 1 if a == d2 else next(rest) for a in range(rank)]
    return c.add("Transpose", [out], perm=perm)


@mapping("diagflat")
def _diagflat(c: Call):
    d = c.out_dtype
    n = 1
    for s in _static(c, c.shape("input"), "diagflat"):
        n *= s
    x = c.add("Reshape", [c.t("input", d), c.i64([n])])
    return _embed_last(c, x, n, int(c.lit("offset", 0)), d)


@mapping("select_scatter")
def _select_scatter(c: Call):
    d = c.out_dtype
    shape = c.shape("input")
    axis = norm_axis(int(c.lit("dim")), len(shape))
    size = _static(c, [shape[axis]], "select_scatter")[0]
    index = int(c.lit("index"))
    if not -size <= index < size:
        raise Unsupported(f"index {index} out of range for size {size}")
    index %= size
    x, src = c.t("input", d), unsqueeze(c, c.t("src", d), [axis])
    parts = []
    if index:
        parts.append(c.add("Slice", [x, c.i64([0]), c.i64([index]), c.i64([axis])]))
    parts.append(src)
    if index + 1 < size:
        parts.append(c.add("Slice", [x, c.i64([index + 1]), c.i64([size]), c.i64([axis])]))
    return parts[0] if len(parts) == 1 else c.add("Concat", parts, axis=axis)


@mapping("slice_scatter")
def _slice_scatter(c: Call):
    """``ScatterElements`` of ``src`` at the slice's indices along ``dim``."""
    d = c.out_dtype
    shape = c.shape("input")
    rank = len(shape)
    axis = norm_axis(int(c.lit("dim", 0)), rank)
    size = _static(c, [shape[axis]], "slice_scatter")[0]
    start, end, step = c.lit("start"), c.lit("end"), int(c.lit("step", 1))
    indices = list(range(size))[slice(start, end, step)]
    x, src = c.t("input", d), c.t("src", d)
    if not indices:
        return x
    where = [1] * rank
    where[axis] = len(indices)
    idx = c.i64(np.asarray(indices, dtype=np.int64).reshape(where))
    idx = c.add("Expand", [idx, c.b.shape_of(src)])
    return c.add("ScatterElements", [x, idx, src], axis=axis)


@mapping("cartesian_prod")
def _cartesian_prod(c: Call):
    d = c.out_dtype
    args = c.p["tensors"]
    if len(args) == 1:
        return c.t(args[0], d)
    sizes = [c.arg_meta(a)["shape"][0] for a in args]
    full = c.b.sizes(sizes)
    cols = []
    for i, a in enumerate(args):
        where = [1] * len(args)
        where[i] = -1
        x = c.add("Reshape", [c.t(a, d), c.i64(where)])
        x = c.add("Reshape", [c.add("Expand", [x, full]), c.i64([-1, 1])])
        cols.append(x)
    return c.add("Concat", cols, axis=1)


@mapping("block_diag")
def _block_diag(c: Call):
    d = c.out_dtype
    blocks = []
    for a in c.p["tensors"]:
        shape = _static(c, list(c.arg_meta(a)["shape"]), "block_diag")
        x = c.t(a, d)
        if len(shape) == 0:
            x, shape = c.add("Reshape", [x, c.i64([1, 1])]), [1, 1]
        elif len(shape) == 1:
            x, shape = unsqueeze(c, x, [0]), [1, shape[0]]
        blocks.append((x, shape))
    if not blocks:
        raise Unsupported("block_diag of no tensors")
    width = sum(s[1] for _, s in blocks)
    rows, left = [], 0
    for x, (_, cols) in blocks:
        rows.append(c.add("Pad", [x, c.i64([0, left, 0, width - left - cols])]))
        left += cols
    return rows[0] if len(rows) == 1 else c.add("Concat", rows, axis=0)


@mapping("diagonal_scatter")
def _diagonal_scatter(c: Call):
    """``src`` written on the ``offset`` diagonal of ``dim1``/``dim2``: the two axes moved to
    the front, ``ScatterND`` at the diagonal's (row, column) pairs, moved back. ``src`` has
    the diagonal's shape (the other axes, then the diagonal)."""
    d = c.out_dtype
    shape = c.shape("input")
    rank = len(shape)
    if rank < 2:
        raise Unsupported(f"diagonal_scatter of a {rank}-d input")
    a1 = norm_axis(int(c.lit("dim1", 0)), rank)
    a2 = norm_axis(int(c.lit("dim2", 1)), rank)
    if a1 == a2:
        raise Unsupported("diagonal dimensions cannot be identical")
    rows, cols = _static(c, [shape[a1], shape[a2]], "diagonal_scatter")
    offset = int(c.lit("offset", 0))
    start_r, start_c = max(-offset, 0), max(offset, 0)
    n = max(0, min(rows - start_r, cols - start_c))
    x = c.t("input", d)
    if n == 0:
        return x
    rest = [a for a in range(rank) if a not in (a1, a2)]
    perm = [a1, a2] + rest
    moved = c.add("Transpose", [x], perm=perm)
    pairs = np.stack([np.arange(n) + start_r, np.arange(n) + start_c], axis=1)
    src = c.t("src", d)  # [*rest, n] -> [n, *rest]
    src = c.add("Transpose", [src], perm=[rank - 2] + list(range(rank - 2)))
    out = c.add("ScatterND", [moved, c.i64(pairs), src])
    back = [perm.index(a) for a in range(rank)]
    return c.add("Transpose", [out], perm=back)


@mapping("tril_indices", "triu_indices")
def _tri_indices(c: Call):
    """The (row, column) indices of the lower/upper triangle: constants (the sizes are
    arguments, not data), in PyTorch's row-major order."""
    row, col = int(c.lit("row")), int(c.lit("col"))
    offset = int(c.lit("offset", 0))
    r, k = np.indices((row, col)) if row > 0 and col > 0 else (np.zeros((0, 0)),) * 2
    keep = (k - r <= offset) if c.op == "tril_indices" else (k - r >= offset)
    pairs = np.stack([r[keep], k[keep]]).astype(np.int64).reshape(2, -1)
    return c.const(pairs, c.out_dtype)


_PYTHON_VALUED = {"equal": "a Python bool", "allclose": "a Python bool",
                  "is_same_size": "a Python bool", "is_conj": "a Python bool",
                  "is_neg": "a Python bool", "is_inference": "a Python bool",
                  "broadcast_shapes": "a Python shape (torch.Size)"}


@mapping(*_PYTHON_VALUED)
def _python_valued(c: Call):
    raise Unsupported(f"it returns {_PYTHON_VALUED[c.op]}, not a tensor: an ONNX graph "
                      "computes tensors only, so the value must be decided at export time "
                      "(compare with tensor ops, e.g. (a == b).all() or isclose(a, b).all(), "
                      "to keep it in the graph)")


# -- combinations, unravel_index, gradient ------------------------------------------------------

@mapping("combinations")
def _combinations(c: Call):
    """The elements gathered at the (constant) index tuples of itertools' combinations."""
    import itertools

    n = c.shape("input")[0]
    r = int(c.lit("r", 2))
    out_shape = c.out_shape
    if not isinstance(n, int):
        raise Unsupported("combinations of an input of dynamic size")
    d = c.out_dtype
    if 0 in out_shape:
        empty = c.add("Slice", [c.t("input", d), c.i64([0]), c.i64([0]), c.i64([0])])
        return empty if len(out_shape) == 1 else c.add("Reshape", [empty, c.i64(out_shape)])
    gen = itertools.combinations_with_replacement if c.lit("with_replacement", False) \
        else itertools.combinations
    index = np.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    out = c.add("Gather", [c.t("input", d), c.i64(index)], axis=0)
    return out if list(index.shape) == list(out_shape) else c.add("Reshape", [
        out, c.i64(out_shape)])


@mapping("unravel_index")
def _unravel_index(c: Call):
    """One coordinate per dim: ``(i // stride) % size`` with Python's floor division (int64),
    as Ember computes them (negative indices count from the end)."""
    shape = c.ints("shape")
    x = c.t("indices", "int64")
    zero = c.const(np.int64(0), "int64")
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    outs = []
    for stride, size in zip(strides, shape):
        q = x
        if stride != 1:
            s = c.const(np.int64(stride), "int64")
            q = c.add("Div", [x, s])  # truncates: one less where negative and inexact
            inexact = c.add("And", [c.add("Less", [x, zero]), c.add("Not", [c.add(
                "Equal", [c.add("Mul", [q, s]), x])])])
            q = c.add("Sub", [q, c.add("Cast", [inexact], to=ONNX_TYPES["int64"])])
        outs.append(c.add("Mod", [q, c.const(np.int64(size), "int64")]) if size else q)
    return outs


@mapping("gradient")
def _gradient(c: Call):
    """Ember's ``gradient`` with numbers as spacing: central differences inside, first- or
    second-order one-sided ones at the ends (slices along each dim, concatenated)."""
    shape = c.shape("input")
    rank = len(shape)
    dims = c.lit("dim")
    dims = list(range(rank)) if dims is None else [dims] if isinstance(dims, int) else dims
    dims = [norm_axis(int(k), rank) for k in dims]
    spacing = c.p.get("spacing", 1)
    spacing = decode(spacing) if not is_tensor_arg(spacing) and not (
        isinstance(spacing, list) and any(is_tensor_arg(s) for s in spacing)) else None
    if spacing is None:
        raise Unsupported("spacing given as coordinate tensors")
    if not isinstance(spacing, (list, tuple)):
        spacing = [spacing] * len(dims)
    edge = int(c.lit("edge_order", 1))
    outs = []
    for k, h, o in zip(dims, spacing, c.outputs):
        d = o["dtype"]
        x = c.t("input", d)

        def part(start, end, x=x, k=k):
            return c.add("Slice", [x, c.i64([start]), c.i64([end]), c.i64([k])])

        hc = c.const(h, d)

        def scaled(v, w, d=d):
            return c.add("Mul", [v, c.const(w, d)])

        center = c.add("Div", [c.add("Sub", [part(2, INT64_MAX), part(0, -2)]), hc])
        s0, s1, s2 = part(0, 1), part(1, 2), part(2, 3)
        if edge == 1:
            first = c.add("Div", [c.add("Sub", [s1, s0]), hc])
            last = c.add("Div", [c.add("Sub", [part(-1, INT64_MAX), part(-2, -1)]), hc])
        else:
            first = c.add("Div", [c.add("Sub", [c.add("Add", [scaled(s0, -1.5), scaled(s1, 2.0)]),
                                                scaled(s2, 0.5)]), hc])
            last = c.add("Div", [c.add("Add", [c.add("Add", [
                scaled(part(-3, -2), 0.5), scaled(part(-2, -1), -2.0)]),
                scaled(part(-1, INT64_MAX), 1.5)]), hc])
        outs.append(c.add("Concat", [first, c.add("Div", [center, c.const(2.0, d)]), last],
                          axis=k))
    return outs
