"""ONNX export, the per-op mapping table: registry op name -> function emitting ONNX nodes.

A mapping is registered with :func:`mapping` under one or more op names of the captured graph
(FORMAT.md, "Op names": ``add``, ``conv2d``, ``Tensor.view``, ``nn.functional.batch_norm``,
``ember.zeros_like``...) and the lowest opset it needs (``since``). An in-place op
(``relu_``, ``add_``) uses the mapping of its op: the graph gives its result a new name, so
ONNX computes it functionally. A mapping takes a :class:`Call` (the node's arguments bound to
the op's signature, its output metadata, the :class:`Builder`) and returns the ONNX name of
its output, or a list with one name per output of the node (None where an output is not a
tensor). A use of an op that ONNX cannot express raises :class:`Unsupported` with the reason;
one that needs a newer opset than requested raises :class:`NeedsOpset` (``Call.require``).

This file holds the table, the binding of a node's arguments and the helpers the mappings
share; ``_export_ops_math.py`` has the elementwise, activation, product and reduction ops,
``_export_ops_tensor.py`` the shape, indexing and creation ops, ``_export_ops_nn.py``
convolution, pooling, normalization, attention, embedding, padding and resizing,
``_export_ops_linalg.py`` determinants, norms, small products and the decompositions ONNX
has no operator for, ``_export_ops_special.py`` the special functions, ``_export_ops_fft.py``
complex values, the FFTs and istft.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ._export_graph import (
    FLOAT_TYPES,
    Builder,
    NeedsOpset,
    Unsupported,
)

__all__ = ["MAPPINGS", "Mapping", "mapping", "lookup", "Call", "bind"]


# -- the table ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mapping:
    """How one op becomes ONNX: ``fn(call)`` emits the nodes; ``since`` is the lowest default
    opset (``ai.onnx``) it can emit."""

    name: str
    fn: Callable
    since: int


MAPPINGS: dict[str, Mapping] = {}


def mapping(*names: str, since: int = 11):
    """Register the decorated function as the mapping of ops ``names``."""
    def decorate(fn):
        for name in names:
            MAPPINGS[name] = Mapping(name, fn, since)
        return fn
    return decorate


def lookup(op: str) -> Mapping | None:
    """The mapping of graph op ``op`` (an in-place ``x_`` uses the mapping of ``x``)."""
    found = MAPPINGS.get(op)
    if found is None and op.endswith("_") and not op.endswith("__"):
        found = MAPPINGS.get(op[:-1])
    return found


# -- binding a node's arguments -----------------------------------------------------------------

def _callable(op: str):
    """The public callable behind graph op ``op`` (for its signature), or None."""
    import ember
    from ember.ops import api

    if op.endswith("_") and not op.endswith("__"):  # in-place: the out-of-place signature
        found = _callable(op[:-1])
        if found is not None:
            return found
    info = api.OPS.get(op)
    if info is not None:
        return info.fn
    if op == "getitem":
        return lambda self, index: None
    if op == "setitem":
        return lambda self, index, value: None
    prefix, _, rest = op.rpartition(".")
    owner = {"Tensor": getattr(ember, "Tensor", None), "ember": ember,
             "linalg": getattr(ember, "linalg", None)}.get(prefix)
    if prefix == "nn.functional":
        import ember.nn.functional as owner
    if owner is None:
        return None
    attr = inspect.getattr_static(owner, rest, None) if prefix == "Tensor" else \
        getattr(owner, rest, None)
    if isinstance(attr, property):
        attr = attr.fget
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    return attr if callable(attr) else None


_SIGNATURES: dict = {}

#: parameters of ops whose callables take ``*args`` (their kernels parse them), PyTorch's
#: signatures; ``name=`` marks a parameter that defaults to None, ``*`` the keyword-only ones
_PARAMETERS = {
    "masked_fill": ("input", "mask", "value"),
    "scatter": ("input", "dim", "index", "src=", "value=", "*", "reduce="),
    "scatter_add": ("input", "dim", "index", "src"),
    "index_add": ("input", "dim", "index", "source", "*", "alpha="),
    "index_copy": ("input", "dim", "index", "source"),
    "index_fill": ("input", "dim", "index", "value"),
    "index_put": ("input", "indices", "values", "accumulate="),
    "put": ("input", "index", "source", "accumulate="),
    "masked_scatter": ("input", "mask", "source"),
}


def _signature(names: tuple) -> inspect.Signature:
    params, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for n in names:
        if n == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        default = None if n.endswith("=") else inspect.Parameter.empty
        params.append(inspect.Parameter(n.rstrip("="), kind, default=default))
    return inspect.Signature(params)


def bind(op: str, args: list, kwargs: dict) -> dict:
    """The node's arguments by parameter name (defaults filled in): ``{"input": {"tensor":
    "x"}, "dim": 1, ...}``. Varargs stay a list under their name."""
    sig = _SIGNATURES.get(op)
    if sig is None and op.rstrip("_") in _PARAMETERS:
        sig = _SIGNATURES[op] = _signature(_PARAMETERS[op.rstrip("_")])
    if sig is None:
        fn = _callable(op)
        try:
            sig = inspect.signature(fn) if fn is not None else False
        except (TypeError, ValueError):
            sig = False
        _SIGNATURES[op] = sig
    if sig is False:
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise Unsupported(f"its arguments do not match its signature ({exc})") from None
    bound.apply_defaults()
    out = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            value = list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
            continue
        out[name] = value
    return out


def decode(obj):
    """A literal argument in its JSON form (FORMAT.md) as a Python value; dtypes, devices and
    layouts stay their names. Tensors and symbolic ints are refused (read them with
    ``Call.t`` and ``Call.sizes``)."""
    if isinstance(obj, list):
        return [decode(x) for x in obj]
    if isinstance(obj, dict):
        (tag, v), = obj.items()
        if tag == "float":
            return float(v)
        if tag in ("dtype", "device", "memory_format", "layout"):
            return v
        if tag == "ellipsis":
            return Ellipsis
        if tag == "slice":
            return slice(*decode(v))
        if tag == "tuple":
            return tuple(decode(v))
        if tag == "symint":
            raise Unsupported("a size computed from a dynamic dimension is used where "
                              "the ONNX mapping needs a constant")
        if tag == "tensor":
            raise Unsupported(f"tensor %{v} is given where the ONNX mapping needs a constant")
        raise Unsupported(f"argument {obj!r} has no ONNX form")
    return obj


def is_tensor_arg(obj) -> bool:
    return isinstance(obj, dict) and len(obj) == 1 and "tensor" in obj


def dtype_name(dt) -> str:
    return str(dt).rpartition(".")[2]


def promote(a: str, b: str) -> str:
    import ember

    return dtype_name(ember.promote_types(getattr(ember, a), getattr(ember, b)))


class Call:
    """One graph node being translated: its bound arguments and its outputs' metadata."""

    def __init__(self, builder: Builder, node: dict, params: dict, op: str | None = None):
        self.b = builder
        self.node = node
        self.op = op or node["op"]  # the mapped name: ``relu`` for ``relu_``
        self.p = params
        self.outputs = node["outputs"]

    # -- context ----------------------------------------------------------------------------
    @property
    def opset(self) -> int:
        return self.b.opset

    def require(self, opset: int, what: str = "") -> None:
        if self.b.opset < opset:
            raise NeedsOpset(opset, what)

    def add(self, op_type: str, inputs: list, outputs=1, **attrs):
        return self.b.add(op_type, inputs, outputs, **attrs)

    def const(self, value, dtype: str) -> str:
        return self.b.const(value, dtype)

    def i64(self, values) -> str:
        return self.b.i64(values)

    # -- outputs ----------------------------------------------------------------------------
    def out(self, i: int = 0) -> dict:
        o = self.outputs[i]
        if o is None:
            raise Unsupported(f"output {i} is not a tensor")
        return o

    @property
    def out_dtype(self) -> str:
        return self.out()["dtype"]

    @property
    def out_shape(self) -> list:
        return self.out()["shape"]

    # -- arguments --------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return self.p.get(name) is not None

    def is_tensor(self, name: str) -> bool:
        return is_tensor_arg(self.p.get(name))

    def arg_meta(self, arg) -> dict:
        return self.b.meta(arg["tensor"])

    def dtype(self, name: str) -> str:
        return self.arg_meta(self.p[name])["dtype"]

    def shape(self, name: str) -> list:
        return self.arg_meta(self.p[name])["shape"]

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def lit(self, name: str, default=None):
        value = self.p.get(name, default)
        return default if value is None else decode(value)

    def sizes(self, name_or_value) -> list:
        """An int or int list argument as size expressions (ints where static)."""
        value = self.p.get(name_or_value) if isinstance(name_or_value, str) else name_or_value
        if isinstance(value, (list, tuple)):
            return [self._size(v) for v in value]
        return [self._size(value)]

    def _size(self, v):
        if isinstance(v, dict) and "symint" in v:
            return v["symint"]
        if is_tensor_arg(v):
            raise Unsupported("a size given as a tensor has no static ONNX form here")
        if isinstance(v, bool) or not isinstance(v, int):
            raise Unsupported(f"expected an int size, got {v!r}")
        return v

    def ints(self, name: str, n: int | None = None, default=None) -> list:
        """A static int or int list argument (an int repeated ``n`` times)."""
        value = self.lit(name, default)
        if isinstance(value, (list, tuple)):
            out = [int(v) for v in value]
            return out * n if n is not None and len(out) == 1 and n > 1 else out
        return [int(value)] * (n or 1)

    def t(self, arg, dtype: str | None = None) -> str:
        """A tensor argument (a parameter name or a JSON argument) as an ONNX name, cast to
        ``dtype``; a number becomes a constant of ``dtype``."""
        if isinstance(arg, str):
            arg = self.p.get(arg)
        if is_tensor_arg(arg):
            name = self.b.value(arg["tensor"])
            return self.b.cast(name, self.b.meta(arg["tensor"])["dtype"], dtype) \
                if dtype is not None else name
        if isinstance(arg, dict) and "symint" in arg:  # a size read from a tensor
            return self.b.cast(self.b.scalar_expr(arg["symint"]), "int64", dtype or "int64")
        value = decode(arg)
        if isinstance(value, (bool, int, float)):
            return self.const(value, dtype or ("float32" if isinstance(value, float)
                                               else "bool" if isinstance(value, bool)
                                               else "int64"))
        raise Unsupported(f"expected a tensor or a number, got {arg!r}")

    def common_dtype(self, *names: str) -> str:
        """The dtype PyTorch computes in for these tensor/number arguments."""
        dts = [self.dtype(n) for n in names if self.is_tensor(n)]
        if not dts:
            raise Unsupported("no tensor argument")
        d = dts[0]
        for other in dts[1:]:
            d = promote(d, other)
        for n in names:
            v = self.p.get(n)
            if is_tensor_arg(v) or v is None:
                continue
            v = decode(v)
            if isinstance(v, float) and d not in FLOAT_TYPES:
                d = "float32"
            elif isinstance(v, int) and not isinstance(v, bool) and d == "bool":
                d = "int64"
        return d


# -- helpers shared by the mapping files --------------------------------------------------------

def norm_axis(d: int, rank: int) -> int:
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"dim {d} is out of range for a {rank}-d tensor")
    return d % rank if rank else 0


def reduce(c: Call, op_type: str, x: str, axes: list | None, keepdims: bool) -> str:
    """``op_type`` (ReduceSum, ReduceMean, ...) over ``axes`` (None: all), with the axes as
    an input where the opset takes them so (ReduceSum from 13, the others from 18)."""
    as_input = (op_type == "ReduceSum" and c.opset >= 13) or c.opset >= 18
    if axes is None:
        return c.add(op_type, [x], keepdims=int(keepdims))
    if as_input:
        return c.add(op_type, [x, c.i64(axes)], keepdims=int(keepdims))
    return c.add(op_type, [x], axes=list(axes), keepdims=int(keepdims))


def softmax_like(c: Call, op_type: str, x: str, axis: int, rank: int) -> str:
    """``op_type`` (Softmax, LogSoftmax, Hardmax) over ``axis`` of a ``rank``-d ``x``. Before
    opset 13 these operators flatten the input to 2-d at ``axis`` and normalize over all the
    trailing dims together, so a dim that is not the last one is moved there and back."""
    if c.opset >= 13 or axis in (-1, rank - 1):
        return c.add(op_type, [x], axis=axis)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]  # a swap: its own inverse
    out = c.add(op_type, [c.add("Transpose", [x], perm=perm)], axis=rank - 1)
    return c.add("Transpose", [out], perm=perm)


def squeeze(c: Call, x: str, axes: list) -> str:
    return c.add("Squeeze", [x, c.i64(axes)])


def unsqueeze(c: Call, x: str, axes: list) -> str:
    return c.add("Unsqueeze", [x, c.i64(axes)])


def dims_arg(c: Call, name: str, rank: int) -> list | None:
    """A ``dim`` argument (an int, a list, None or ``()`` for all) as sorted axes."""
    value = c.lit(name)
    if value is None or value == [] or value == ():
        return None
    values = value if isinstance(value, (list, tuple)) else [value]
    return sorted({norm_axis(int(d), rank) for d in values})
