"""ONNX export, the graph builder: a captured program (``ember.export``'s graph in its JSON
form, FORMAT.md) turned into an ``onnx.GraphProto``, one registry op at a time.

The builder owns the names (user inputs, weights named by their state-dict targets, node
values, fresh names for the nodes an op emits), the constants, and the lowering of size
expressions (``{"mul": [{"sym": "batch"}, 4]}``) to ``Shape``/``Gather``/``Mul``/``Concat``
subgraphs. Each op's translation lives in the mapping table (``_export_ops.py``); an op that
has no mapping, or whose mapping needs a newer opset than requested, is collected and all of
them are reported in one :class:`UnsupportedOperatorError`.

The mappings write the forms of opset 13 and later. At opsets 11 and 12 the builder writes
what those opsets define instead (``_LEGACY``: axes and split sizes as attributes, Resize's
roi and scales always given, and at 11 the operators opset 12 added as their formulas), and
checks every other node against the operator's schema at the requested opset, so that a node
it cannot hold is reported as needing a newer opset rather than written invalid.
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["OnnxExporterError", "UnsupportedOperatorError", "Unsupported", "NeedsOpset",
           "Builder", "ONNX_TYPES", "NUMPY_DTYPES", "INT64_MAX", "INT64_MIN", "onnx_type",
           "COMPLEX_PARTS", "is_complex"]

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -2 ** 63

#: graph dtype names (FORMAT.md) -> TensorProto data types
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7,
              "bool": 9, "float16": 10, "float64": 11, "uint16": 4, "uint32": 12,
              "uint64": 13, "bfloat16": 16}

NUMPY_DTYPES = {"float32": np.float32, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
                "int32": np.int32, "int64": np.int64, "bool": np.bool_, "float16": np.float16,
                "float64": np.float64, "uint16": np.uint16, "uint32": np.uint32,
                "uint64": np.uint64}

FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")

#: complex graph dtypes -> the real dtype of their parts. ONNX has no complex tensor type that
#: onnxruntime runs; inside a graph a complex value is carried as a real tensor with a trailing
#: axis of 2 (real, imaginary), the convention of ONNX's DFT and STFT
COMPLEX_PARTS = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}


def is_complex(dtype: str) -> bool:
    return dtype in COMPLEX_PARTS


class OnnxExporterError(RuntimeError):
    """The model cannot be exported to ONNX (``torch.onnx.OnnxExporterError``)."""


class UnsupportedOperatorError(OnnxExporterError):
    """Ops of the model that have no ONNX mapping at the requested opset
    (``torch.onnx.errors.UnsupportedOperatorError``). ``ops`` lists them:
    ``[(op name, lowest opset or None, reason or None, [source lines])]``."""

    def __init__(self, message: str, ops: list):
        super().__init__(message)
        self.ops = ops


class Unsupported(Exception):
    """Raised by a mapping for an argument combination it cannot express in ONNX."""


class NeedsOpset(Exception):
    """Raised by a mapping whose present use needs a newer opset than the one requested."""

    def __init__(self, opset: int, what: str = ""):
        super().__init__(what)
        self.opset = opset
        self.what = what


def expr_key(expr) -> str:
    return json.dumps(expr, sort_keys=True)


def onnx_type(dtype: str) -> int:
    """The TensorProto data type of a graph dtype name."""
    try:
        return ONNX_TYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} has no ONNX type that Ember writes") from None


_INFIX = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}


def format_expr(expr, names: dict, top: bool = True) -> str | None:
    """A size expression as text for a ``dim_param`` (``batch*4``), None when it reads the
    runtime size of a value (no name an ONNX reader could relate)."""
    if isinstance(expr, int):
        return str(expr)
    (tag, v), = expr.items()
    if tag == "sym":
        return names.get(v, v)
    if tag == "size":
        return None
    a, b = format_expr(v[0], names, False), format_expr(v[1], names, False)
    if a is None or b is None:
        return None
    if tag in ("max", "min"):
        return f"{tag}({a}, {b})"
    text = f"{a}{_INFIX[tag]}{b}"
    return text if top else f"({text})"


class Builder:
    """Collects the nodes, constants, inputs and outputs of one ONNX graph."""

    def __init__(self, onnx, opset: int, dim_names: dict):
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.dim_names = dim_names          # symbol -> dim_param
        self.nodes: list = []
        self.initializers: list = []
        self.inputs: list = []
        self.outputs: list = []
        self.env: dict = {}                 # graph value -> ONNX name
        self.metas: dict = {}               # graph value -> {"dtype", "shape"}
        self.produced: set = set()          # ONNX names that nodes output
        self.used: set = set()
        self._consts: dict = {}
        self._exprs: dict = {}
        self._shapes: dict = {}
        self.sym_source: dict = {}          # symbol -> (ONNX name, dim)
        self._counter = 0
        self.current = ""                   # the graph node being translated (node names)
        self.const_values: dict = {}        # Constant output name -> its array
        self._into: list | None = None      # the node list of a Loop body being written

    # -- names ------------------------------------------------------------------------------
    def reserve(self, name: str) -> None:
        self.used.add(name)

    def fresh(self, hint: str) -> str:
        hint = hint or "v"
        if hint not in self.used:
            self.used.add(hint)
            return hint
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def value(self, name: str) -> str:
        """The ONNX name of graph value ``name``."""
        try:
            return self.env[name]
        except KeyError:
            raise OnnxExporterError(f"graph value %{name} is read before any node defines "
                                    "it") from None

    def meta(self, name: str) -> dict:
        return self.metas[name]

    # -- nodes ------------------------------------------------------------------------------
    def add(self, op_type: str, inputs: list, outputs=1, **attrs):
        """Append one node; returns its output name (or the list of names when ``outputs``
        is a count above 1 or a list of names). The mappings write opset 13's forms; below
        opset 13 the operators in ``_LEGACY`` (axes and split sizes as inputs, Resize's
        optional inputs, and the operators opset 12 added) are written in the forms the
        requested opset defines, and any other node is checked against its schema there."""
        if self.opset < 13 and op_type in _LEGACY:
            return _LEGACY[op_type](self, op_type, inputs, outputs, attrs)
        return self._node(op_type, inputs, outputs, attrs)

    def add_into(self, nodes: list, op_type: str, inputs: list, outputs=1, **attrs):
        """:meth:`add` into ``nodes``, the body of a ``Loop`` (its constants still go to the
        main graph, where they are shared)."""
        saved, self._into = self._into, nodes
        try:
            return self.add(op_type, inputs, outputs, **attrs)
        finally:
            self._into = saved

    def _node(self, op_type: str, inputs: list, outputs, attrs: dict):
        attrs = {k: v for k, v in attrs.items() if v is not None}
        if self.opset < 13:
            _check_schema(self.opset, op_type, inputs, attrs)
        if isinstance(outputs, int):
            names = [self.fresh(f"{self.current or op_type.lower()}_{op_type}")
                     for _ in range(outputs)]
            single = outputs == 1
        else:
            names = list(outputs)
            single = False
        node_name = self.fresh(f"/{self.current}/{op_type}" if self.current else op_type)
        node = self.helper.make_node(op_type, [i or "" for i in inputs], names, name=node_name,
                                     **attrs)
        (self.nodes if self._into is None else self._into).append(node)
        self.produced.update(names)
        return names[0] if single else names

    # -- constants --------------------------------------------------------------------------
    def const(self, value, dtype: str) -> str:
        """A ``Constant`` node holding ``value`` (a Python scalar, a list or an array) as
        ``dtype`` (a graph dtype name); equal constants are shared."""
        arr = np.asarray(value, dtype=NUMPY_DTYPES.get(dtype, np.float32)) \
            if dtype != "bfloat16" else np.asarray(value, dtype=np.float32)
        key = (dtype, arr.shape, arr.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self.fresh("const")
            tensor = self._tensor_proto(arr, dtype, name)
            self.nodes.append(self.helper.make_node("Constant", [], [name],
                                                    name=self.fresh(f"Constant_{name}"),
                                                    value=tensor))
            self.produced.add(name)
            self._consts[key] = name
            self.const_values[name] = arr
        return name

    def _tensor_proto(self, arr: np.ndarray, dtype: str, name: str):
        if dtype == "bfloat16":
            return self.helper.make_tensor(name, ONNX_TYPES[dtype], arr.shape,
                                           arr.astype(np.float32).ravel().tolist())
        return self.onnx.numpy_helper.from_array(arr, name)

    def i64(self, values) -> str:
        return self.const(np.asarray(values, dtype=np.int64), "int64")

    def initializer(self, name: str, arr: np.ndarray, dtype: str) -> None:
        self.initializers.append(self._tensor_proto(arr, dtype, name))

    # -- casts ------------------------------------------------------------------------------
    def cast(self, name: str, src: str, dst: str) -> str:
        if src == dst:
            return name
        if src in COMPLEX_PARTS or dst in COMPLEX_PARTS:
            if src in COMPLEX_PARTS and dst in COMPLEX_PARTS:  # the pairs' parts
                return self.cast(name, COMPLEX_PARTS[src], COMPLEX_PARTS[dst])
            raise Unsupported(f"a cast from {src} to {dst} (complex values are real pairs "
                              "in ONNX: a mapping must convert them itself)")
        return self.add("Cast", [name], to=onnx_type(dst))

    # -- sizes ------------------------------------------------------------------------------
    def shape_of(self, name: str) -> str:
        out = self._shapes.get(name)
        if out is None:
            out = self._shapes[name] = self.add("Shape", [name])
        return out

    def dim_of(self, name: str, d: int) -> str:
        """``name``'s size along ``d`` as an int64 tensor of shape [1]."""
        key = ("dim", name, d)
        out = self._exprs.get(key)
        if out is None:
            if self.opset >= 15:
                out = self.add("Shape", [name], start=d, end=d + 1)
            else:
                out = self.add("Gather", [self.shape_of(name), self.i64([d])], axis=0)
            self._exprs[key] = out
        return out

    def expr(self, expr) -> str:
        """A size expression (FORMAT.md) as an int64 tensor of shape [1]."""
        if isinstance(expr, int):
            return self.i64([expr])
        key = expr_key(expr)
        out = self._exprs.get(key)
        if out is not None:
            return out
        (tag, v), = expr.items()
        if tag == "sym":
            if v not in self.sym_source:
                raise Unsupported(f"the size {v!r} is data-dependent (it is no input's "
                                  "dimension), which ONNX export cannot express")
            out = self.dim_of(*self.sym_source[v])
        elif tag == "size":
            out = self.dim_of(self.value(v[0]), v[1])
        else:
            op = {"add": "Add", "sub": "Sub", "mul": "Mul", "floordiv": "Div", "mod": "Mod",
                  "max": "Max", "min": "Min"}[tag]
            out = self.add(op, [self.expr(v[0]), self.expr(v[1])])
        self._exprs[key] = out
        return out

    def scalar_expr(self, expr) -> str:
        """A size expression as a 0-d int64 tensor."""
        if isinstance(expr, int):
            return self.const(np.int64(expr), "int64")
        return self.add("Squeeze", [self.expr(expr), self.i64([0])])

    def sizes(self, exprs: list) -> str:
        """A list of size expressions as one int64 vector (constants where static)."""
        if all(isinstance(e, int) for e in exprs):
            return self.i64(list(exprs))
        parts, run = [], []
        for e in exprs:
            if isinstance(e, int):
                run.append(e)
                continue
            if run:
                parts.append(self.i64(run))
                run = []
            parts.append(self.expr(e))
        if run:
            parts.append(self.i64(run))
        return parts[0] if len(parts) == 1 else self.add("Concat", parts, axis=0)

    # -- value types ------------------------------------------------------------------------
    def dims(self, shape: list, overrides: dict | None = None) -> list:
        """A shape as ``make_tensor_value_info`` takes it: ints, dim_param strings, None."""
        out = []
        for d, e in enumerate(shape):
            if overrides and d in overrides:
                out.append(overrides[d])
            elif isinstance(e, int):
                out.append(e)
            else:
                out.append(format_expr(e, self.dim_names))
        return out

    def value_info(self, name: str, meta: dict, overrides: dict | None = None):
        """The typed value of ``name``; a complex value is its real pairs (``[..., 2]``)."""
        dtype = meta["dtype"]
        if dtype in COMPLEX_PARTS:
            return self.helper.make_tensor_value_info(
                name, onnx_type(COMPLEX_PARTS[dtype]),
                self.dims(meta["shape"], overrides) + [2])
        return self.helper.make_tensor_value_info(name, onnx_type(dtype),
                                                  self.dims(meta["shape"], overrides))

    def rename(self, old: str, new: str, start: int = 0) -> None:
        """Rename a node output everywhere (in the nodes from ``start`` on, where the caller
        knows that no earlier node mentions it): graph values and outputs take their names
        this way."""
        for node in self.nodes[start:]:
            for seq in (node.input, node.output):
                for i, n in enumerate(seq):
                    if n == old:
                        seq[i] = new
        self.produced.discard(old)
        self.produced.add(new)
        for table in (self.env, self._consts, self._exprs, self._shapes):
            for k, v in table.items():
                if v == old:
                    table[k] = new
        for k, (name, d) in self.sym_source.items():
            if name == old:
                self.sym_source[k] = (new, d)


# -- opsets 11 and 12 ---------------------------------------------------------------------------
# The mappings write opset 13's forms; below 13 these nodes are rewritten into the forms of the
# requested opset (ONNX's operator changelog), so no mapping needs a second code path for them.

def _attr_from_input(b: Builder, op_type: str, inputs: list, attr: str):
    """``inputs`` without their second one (axes or split sizes), which becomes the attribute
    ``attr``; it must be a constant: before opset 13 these are attributes, fixed in the file."""
    if len(inputs) < 2 or not inputs[1]:
        return list(inputs[:1]), {}
    values = b.const_values.get(inputs[1])
    if values is None:
        raise NeedsOpset(13, f"{op_type} with {attr} computed at run time ({op_type}'s {attr} "
                         "is an input from opset 13, a constant attribute before)")
    return [inputs[0], *inputs[2:]], {attr: [int(v) for v in np.ravel(values)]}


def _axes_as_attribute(b: Builder, op_type: str, inputs: list, outputs, attrs: dict):
    """ReduceSum, Squeeze, Unsqueeze (``axes``) and Split (``split``) before opset 13."""
    attr = "split" if op_type == "Split" else "axes"
    if attr == "split" and len(inputs) > 1 and inputs[1] and inputs[1] not in b.const_values:
        return _split_by_slices(b, inputs, outputs, attrs.get("axis", 0))
    inputs, extra = _attr_from_input(b, op_type, inputs, attr)
    return b._node(op_type, inputs, outputs, {**attrs, **extra})


def _split_by_slices(b: Builder, inputs: list, outputs, axis: int):
    """A Split whose sizes are computed at run time (an attribute cannot hold them before
    opset 13): one Slice per part, between the running sums of the sizes."""
    x, sizes = inputs
    ends = b._node("CumSum", [sizes, b.const(np.int64(0), "int64")], 1, {})
    starts = b._node("Sub", [ends, sizes], 1, {})
    names = outputs if not isinstance(outputs, int) else [None] * outputs
    parts = []
    for i, name in enumerate(names):
        bounds = [b._node("Gather", [v, b.i64([i])], 1, {"axis": 0}) for v in (starts, ends)]
        parts.append(b._node("Slice", [x, *bounds, b.i64([axis])], 1 if name is None else [name],
                             {}))
    parts = [p[0] if isinstance(p, list) else p for p in parts]
    return parts[0] if isinstance(outputs, int) and outputs == 1 else parts


def _or_equal(b: Builder, op_type: str, inputs: list, outputs, attrs: dict):
    """GreaterOrEqual/LessOrEqual (opset 12) at opset 11: ``Or(Greater, Equal)``, which is
    False where an input is NaN as the fused operator is (``Not(Less)`` would be True)."""
    if b.opset >= 12:
        return b._node(op_type, inputs, outputs, attrs)
    strict = b._node("Greater" if op_type == "GreaterOrEqual" else "Less", inputs, 1, {})
    equal = b._node("Equal", inputs, 1, {})
    return b._node("Or", [strict, equal], outputs, {})


def _celu(b: Builder, op_type: str, inputs: list, outputs, attrs: dict):
    """Celu (opset 12) at opset 11: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``, the
    formula ONNX defines it by (float32 inputs, as Celu takes)."""
    if b.opset >= 12:
        return b._node(op_type, inputs, outputs, attrs)
    alpha = float(attrs.get("alpha", 1.0))
    x = inputs[0]
    scaled = b._node("Div", [x, b.const(alpha, "float32")], 1, {})
    expm1 = b._node("Sub", [b._node("Exp", [scaled], 1, {}), b.const(1.0, "float32")], 1, {})
    negative = b._node("Min", [b.const(0.0, "float32"),
                               b._node("Mul", [b.const(alpha, "float32"), expm1], 1, {})], 1, {})
    return b._node("Add", [b._node("Relu", [x], 1, {}), negative], outputs, {})


def _resize(b: Builder, op_type: str, inputs: list, outputs, attrs: dict):
    """Resize before opset 13 takes ``roi`` and ``scales`` always: empty tensors where the
    node leaves them out."""
    empty = b.const(np.zeros(0, np.float32), "float32")
    inputs = [x if x or i not in (1, 2) else empty for i, x in enumerate(inputs)]
    return b._node(op_type, inputs, outputs, attrs)


def _arg_extremum(b: Builder, op_type: str, inputs: list, outputs, attrs: dict):
    """ArgMax/ArgMin at opset 11, which has no ``select_last_index`` (opset 12): the first
    extremum of the input reversed along ``axis`` (``Slice`` with step -1), counted from the
    end."""
    if b.opset >= 12:
        return b._node(op_type, inputs, outputs, attrs)
    if not attrs.pop("select_last_index", 0):
        return b._node(op_type, inputs, outputs, attrs)
    axis = attrs.get("axis", 0)
    backwards = b._node("Slice", [inputs[0], b.i64([-1]), b.i64([INT64_MIN]), b.i64([axis]),
                                  b.i64([-1])], 1, {})
    first = b._node(op_type, [backwards], 1, attrs)
    size = b._node("Gather", [b.shape_of(inputs[0]), b.const(np.int64(axis), "int64")], 1,
                   {"axis": 0})
    top = b._node("Sub", [size, b.const(np.int64(1), "int64")], 1, {})
    return b._node("Sub", [top, first], outputs, {})


_LEGACY = {"ReduceSum": _axes_as_attribute, "Squeeze": _axes_as_attribute,
           "Unsqueeze": _axes_as_attribute, "Split": _axes_as_attribute,
           "GreaterOrEqual": _or_equal, "LessOrEqual": _or_equal, "Celu": _celu,
           "Resize": _resize, "ArgMax": _arg_extremum, "ArgMin": _arg_extremum}

_SCHEMAS: dict = {}


def _schema(op_type: str, opset: int):
    key = (op_type, opset)
    if key not in _SCHEMAS:
        from onnx import defs

        try:
            _SCHEMAS[key] = defs.get_schema(op_type, max_inclusive_version=opset, domain="")
        except defs.SchemaError:
            _SCHEMAS[key] = None
    return _SCHEMAS[key]


def _fits(schema, inputs: list, attrs: dict) -> bool:
    return (schema is not None and len(inputs) <= schema.max_input
            and all(a in schema.attributes for a in attrs))


def _check_schema(opset: int, op_type: str, inputs: list, attrs: dict) -> None:
    """Below opset 13: a node that the requested opset's operator cannot hold (the operator
    is newer, or it lacks an input or attribute the node uses) raises :class:`NeedsOpset`
    with the lowest opset that holds it, rather than writing an invalid model."""
    if _fits(_schema(op_type, opset), inputs, attrs):
        return
    newer = next((v for v in range(opset + 1, 22) if _fits(_schema(op_type, v), inputs, attrs)),
                 13)
    what = f"ONNX {op_type}" if _schema(op_type, opset) is None else \
        f"ONNX {op_type} with inputs {len(inputs)} and attributes {sorted(attrs)}"
    raise NeedsOpset(newer, what)
