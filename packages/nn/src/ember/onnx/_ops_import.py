"""ONNX operators run with Ember ops: the registry, and the elementwise, activation,
comparison and matrix-product operators.

Every operator is one handler, registered with the versions of its ONNX schema it implements
(``since_version`` values of the default domain, as ``onnx.defs`` lists them). A model's
node is supported when the schema version in effect at the model's opset is one of them, so a
future revision of an operator is refused by name until someone reads its changes.

A handler takes a :class:`Call` (the node's input tensors, attributes, static reads of
shape-like inputs) and returns a tensor or a tuple of tensors, one per node output. Handlers
use only ember's public ops, so autograd runs through an imported graph.

Casts, shapes, indexing and reductions live in ``_import_tensor.py``; convolution, pooling,
normalization, padding and resizing in ``_import_nn.py``; the recurrent operators in
``_import_rnn.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import ember
import ember.nn.functional as F

# -- dtypes: ONNX TensorProto.DataType -> ember -------------------------------------------------

#: TensorProto data types Ember has (the others, e.g. STRING and the float8/int4 types, are
#: refused by name when a model uses them). The unsigned types past uint8 have PyTorch's
#: limited support in Ember too (copies, casts, comparisons; most arithmetic refuses them).
ONNX_DTYPES = {
    1: ember.float32, 2: ember.uint8, 3: ember.int8, 4: ember.uint16, 5: ember.int16,
    6: ember.int32, 7: ember.int64, 9: ember.bool, 10: ember.float16, 11: ember.float64,
    12: ember.uint32, 13: ember.uint64, 14: ember.complex64, 15: ember.complex128,
    16: ember.bfloat16,
}

def onnx_dtype_name(code: int) -> str:
    """The TensorProto name of data type ``code`` (``'FLOAT'``), or ``'type <code>'``."""
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(code)
    except ValueError:
        return f"type {code}"


def ember_dtype(np_dtype) -> ember.dtype | None:
    """The ember dtype of a NumPy dtype, ``None`` when Ember lacks it."""
    return _NP_TO_EMBER.get(np.dtype(np_dtype))


_NP_TO_EMBER = {np.dtype(k): v for k, v in {
    np.float32: ember.float32, np.float64: ember.float64, np.float16: ember.float16,
    np.int64: ember.int64, np.int32: ember.int32, np.int16: ember.int16, np.int8: ember.int8,
    np.uint8: ember.uint8, np.bool_: ember.bool, np.uint16: ember.uint16,
    np.uint32: ember.uint32, np.uint64: ember.uint64, np.complex64: ember.complex64,
    np.complex128: ember.complex128, ember.bfloat16.np: ember.bfloat16}.items()}


def numpy_dtype(dtype: ember.dtype) -> np.dtype:
    """The NumPy dtype of an ember dtype."""
    for np_dtype, ember_type in _NP_TO_EMBER.items():
        if ember_type == dtype:
            return np_dtype
    raise TypeError(f"no NumPy dtype for {dtype}")


# -- the registry -------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpSpec:
    """An operator Ember runs: its handler, the schema versions it implements, and an optional
    ``check(attrs) -> reason | None`` that refuses attribute values it does not run."""

    handler: Callable
    versions: frozenset[int]
    check: Callable[[dict], str | None] | None = None


OPS: dict[str, OpSpec] = {}


def register(op_types: str, versions, check=None):
    """Register the decorated handler for each ONNX operator named in ``op_types`` (space
    separated), for the schema ``versions`` (``since_version`` values)."""
    def decorate(fn):
        for op_type in op_types.split():
            OPS[op_type] = OpSpec(fn, frozenset(versions), check)
        return fn
    return decorate


@dataclass
class Node:
    """One node of the graph as the module runs it."""

    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict
    version: int  # since_version of the schema in effect
    handler: Callable = field(repr=False)


class Call:
    """What a handler sees of one node's execution: ``x(i)`` the i-th input tensor (``None`` when
    absent), ``ints(i)`` / ``scalar(i)`` its values read on the host, ``attr(name, default)``,
    ``wants(i)`` whether output i is used, ``new(array)`` a tensor on the graph's device."""

    __slots__ = ("node", "inputs", "device", "module")

    def __init__(self, node: Node, inputs: list, device, module) -> None:
        self.node = node
        self.inputs = inputs
        self.device = device
        self.module = module

    @property
    def version(self) -> int:
        return self.node.version

    def x(self, i: int):
        return self.inputs[i] if i < len(self.inputs) else None

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, default)

    def wants(self, i: int) -> bool:
        return i < len(self.node.outputs) and bool(self.node.outputs[i])

    def host(self, i: int) -> np.ndarray | None:
        """Input ``i``'s values as a NumPy array (a constant's cached copy, else a device read),
        ``None`` when the input is absent."""
        if not self.has(i):
            return None
        return self.module._host_value(self.node.inputs[i], self.inputs[i])

    def ints(self, i: int) -> list[int] | None:
        values = self.host(i)
        return None if values is None else [int(v) for v in values.reshape(-1)]

    def scalar(self, i: int, default=None):
        values = self.host(i)
        if values is None or values.size == 0:
            return default
        return values.reshape(-1)[0].item()

    def new(self, values, dtype=None) -> ember.Tensor:
        """A tensor holding ``values`` (NumPy or Python data) on the graph's device."""
        return ember.tensor(values, dtype=dtype, device=self.device)


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` as a non-negative index."""
    if not -rank <= axis < max(rank, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {axis})")
    return axis % rank if rank else 0


def is_integral(t: ember.Tensor) -> bool:
    """Whether ``t`` holds integers (not floats, not booleans)."""
    return not t.dtype.is_floating_point and t.dtype != ember.bool


def versions(*since: int) -> tuple[int, ...]:
    """The schema versions (``since_version``) a handler implements."""
    return since


# -- elementwise arithmetic ---------------------------------------------------------------------

@register("Add", versions(7, 13, 14))
def _add(c: Call):
    return c.x(0) + c.x(1)


@register("Sub", versions(7, 13, 14))
def _sub(c: Call):
    return c.x(0) - c.x(1)


@register("Mul", versions(7, 13, 14))
def _mul(c: Call):
    return c.x(0) * c.x(1)


@register("Div", versions(7, 13, 14))
def _div(c: Call):
    a, b = c.x(0), c.x(1)
    if is_integral(a):  # integer division truncates, as C does
        return ember.div(a, b, rounding_mode="trunc")
    return a / b


@register("Pow", versions(7, 12, 13, 15))
def _pow(c: Call):
    base, exponent = c.x(0), c.x(1)
    out = ember.pow(base, exponent)
    return out if out.dtype == base.dtype else out.to(base.dtype)


@register("Mod", versions(10, 13))
def _mod(c: Call):
    a, b = c.x(0), c.x(1)
    return ember.fmod(a, b) if c.attr("fmod", 0) else ember.remainder(a, b)


def _variadic(fn):
    def run(c: Call):
        xs = [t for t in c.inputs if t is not None]
        out = xs[0]
        for t in xs[1:]:
            out = fn(out, t)
        return out
    return run


register("Max", versions(6, 8, 12, 13))(_variadic(ember.maximum))
register("Min", versions(6, 8, 12, 13))(_variadic(ember.minimum))
register("Sum", versions(6, 8, 13))(_variadic(lambda a, b: a + b))


@register("Mean", versions(6, 8, 13))
def _mean(c: Call):
    xs = [t for t in c.inputs if t is not None]
    return _variadic(lambda a, b: a + b)(c) / len(xs)


def _unary(op_types: str, since, fn):
    register(op_types, since)(lambda c: fn(c.x(0)))


_unary("Sqrt", versions(6, 13), ember.sqrt)
_unary("Exp", versions(6, 13), ember.exp)
_unary("Log", versions(6, 13), ember.log)
_unary("Neg", versions(6, 13), ember.neg)
_unary("Abs", versions(6, 13), ember.abs)
_unary("Reciprocal", versions(6, 13), ember.reciprocal)
_unary("Floor", versions(6, 13), ember.floor)
_unary("Ceil", versions(6, 13), ember.ceil)
_unary("Round", versions(11, 22), ember.round)  # half to even, as ONNX
_unary("Sign", versions(9, 13), ember.sign)
_unary("Erf", versions(9, 13), ember.erf)
_unary("Sigmoid", versions(6, 13), ember.sigmoid)
_unary("Tanh", versions(6, 13), ember.tanh)
_unary("Relu", versions(6, 13, 14), F.relu)
_unary("Softsign", versions(1, 22), F.softsign)
_unary("Not", versions(1), ember.logical_not)
_unary("IsNaN", versions(9, 13, 20), ember.isnan)
_unary("Identity", versions(1, 13, 14, 16, 19, 21, 23, 24, 25), lambda x: x)
for _name in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan"):
    _unary(_name, versions(7, 22), getattr(ember, _name.lower()))
for _name in ("Sinh", "Cosh", "Asinh", "Acosh", "Atanh"):
    _unary(_name, versions(9, 22), getattr(ember, _name.lower()))


@register("IsInf", versions(10, 20))
def _isinf(c: Call):
    x = c.x(0)
    positive, negative = c.attr("detect_positive", 1), c.attr("detect_negative", 1)
    if positive and negative:
        return ember.isinf(x)
    if positive:
        return ember.isposinf(x)
    if negative:
        return ember.isneginf(x)
    return ember.zeros_like(x, dtype=ember.bool)


# -- activations --------------------------------------------------------------------------------

@register("LeakyRelu", versions(6, 16))
def _leaky_relu(c: Call):
    return F.leaky_relu(c.x(0), c.attr("alpha", 0.01))


@register("PRelu", versions(7, 9, 16))
def _prelu(c: Call):
    x, slope = c.x(0), c.x(1)
    return ember.where(x < 0, x * slope, x)


@register("Elu", versions(6, 22))
def _elu(c: Call):
    return F.elu(c.x(0), c.attr("alpha", 1.0))


@register("Celu", versions(12))
def _celu(c: Call):
    return F.celu(c.x(0), c.attr("alpha", 1.0))


@register("Selu", versions(6, 22))
def _selu(c: Call):
    x = c.x(0)
    alpha = c.attr("alpha", 1.67326319217681884765625)
    gamma = c.attr("gamma", 1.05070102214813232421875)
    return gamma * ember.where(x > 0, x, alpha * (ember.exp(ember.clamp(x, max=0.0)) - 1))


@register("ThresholdedRelu", versions(10, 22))
def _thresholded_relu(c: Call):
    x = c.x(0)
    return ember.where(x > c.attr("alpha", 1.0), x, ember.zeros_like(x))


@register("Softplus", versions(1, 22))
def _softplus(c: Call):
    return F.softplus(c.x(0))


@register("Mish", versions(18, 22))
def _mish(c: Call):
    return F.mish(c.x(0))


@register("Gelu", versions(20))
def _gelu(c: Call):
    return F.gelu(c.x(0), approximate=c.attr("approximate", "none"))


@register("HardSigmoid", versions(6, 22))
def _hard_sigmoid(c: Call):
    return ember.clamp(c.x(0) * c.attr("alpha", 0.2) + c.attr("beta", 0.5), 0.0, 1.0)


@register("HardSwish", versions(14, 22))
def _hard_swish(c: Call):
    return F.hardswish(c.x(0))


@register("Clip", versions(6, 11, 12, 13))
def _clip(c: Call):
    x = c.x(0)
    if c.version < 11:
        low, high = c.attr("min"), c.attr("max")
    else:
        low, high = c.scalar(1), c.scalar(2)
    if low is None and high is None:
        return x
    return ember.clamp(x, low, high)


def _coerced_2d(c: Call, fn):
    """Before opset 13, Softmax-like operators flatten to 2-d at ``axis`` (default 1)."""
    x = c.x(0)
    if c.version >= 13:
        return fn(x, normalize_axis(c.attr("axis", -1), x.dim()))
    axis = normalize_axis(c.attr("axis", 1), x.dim())
    rows = math.prod(x.shape[:axis])
    return fn(x.reshape(rows, -1), 1).reshape(x.shape)


@register("Softmax", versions(1, 11, 13))
def _softmax(c: Call):
    return _coerced_2d(c, lambda x, dim: F.softmax(x, dim=dim))


@register("LogSoftmax", versions(1, 11, 13))
def _log_softmax(c: Call):
    return _coerced_2d(c, lambda x, dim: F.log_softmax(x, dim=dim))


@register("Hardmax", versions(1, 11, 13))
def _hardmax(c: Call):
    def hardmax(x, dim):
        index = ember.argmax(x, dim=dim, keepdim=True)
        return ember.zeros_like(x).scatter(dim, index, 1.0)
    return _coerced_2d(c, hardmax)


# -- comparison and logic -----------------------------------------------------------------------

register("Equal", versions(7, 11, 13, 19))(lambda c: ember.eq(c.x(0), c.x(1)))
register("Less", versions(7, 9, 13))(lambda c: ember.lt(c.x(0), c.x(1)))
register("Greater", versions(7, 9, 13))(lambda c: ember.gt(c.x(0), c.x(1)))
register("LessOrEqual", versions(12, 16))(lambda c: ember.le(c.x(0), c.x(1)))
register("GreaterOrEqual", versions(12, 16))(lambda c: ember.ge(c.x(0), c.x(1)))
register("And", versions(7))(lambda c: ember.logical_and(c.x(0), c.x(1)))
register("Or", versions(7))(lambda c: ember.logical_or(c.x(0), c.x(1)))
register("Xor", versions(7))(lambda c: ember.logical_xor(c.x(0), c.x(1)))


@register("Where", versions(9, 16))
def _where(c: Call):
    return ember.where(c.x(0), c.x(1), c.x(2))


# -- matrix products ----------------------------------------------------------------------------

@register("MatMul", versions(9, 13))
def _matmul(c: Call):
    return ember.matmul(c.x(0), c.x(1))


@register("Gemm", versions(7, 9, 11, 13))
def _gemm(c: Call):
    a, b, bias = c.x(0), c.x(1), c.x(2)
    alpha, beta = c.attr("alpha", 1.0), c.attr("beta", 1.0)
    if c.attr("transA", 0):
        a = a.t()
    if alpha == 1.0 and beta == 1.0 and c.attr("transB", 0) and (bias is None or bias.dim() <= 1):
        return F.linear(a, b, bias if bias is None or bias.dim() == 1 else bias.reshape(1))
    if c.attr("transB", 0):
        b = b.t()
    out = ember.matmul(a, b)
    if alpha != 1.0:
        out = out * alpha
    if bias is not None:
        out = out + (bias if beta == 1.0 else bias * beta)
    return out


@register("Einsum", versions(12))
def _einsum(c: Call):
    return ember.einsum(c.attr("equation").replace(" ", ""), *c.inputs)
