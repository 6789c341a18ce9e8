"""ONNX export mappings: elementwise math, activations, matrix products and reductions
(registered in the table of ``_export_ops.py``)."""

from __future__ import annotations

import math

import numpy as np

from ._export_graph import FLOAT_TYPES, NUMPY_DTYPES, Unsupported, onnx_type
from ._export_ops import (
    Call,
    decode,
    dims_arg,
    is_tensor_arg,
    mapping,
    norm_axis,
    reduce,
    softmax_like,
    unsqueeze,
)
from ._special_coefficients import IGAM_MAXITER as _IGAM_MAXITER
from ._special_coefficients import LANCZOS_DEN as _LANCZOS_DEN
from ._special_coefficients import LANCZOS_G as _LANCZOS_G
from ._special_coefficients import LANCZOS_NUM as _LANCZOS_NUM
from ._special_coefficients import MACHEP as _MACHEP

# -- elementwise: unary -------------------------------------------------------------------------

#: op -> ONNX op, computed in the output's dtype (an integer input of a float function is cast)
_UNARY = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
    "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf", "sin": "Sin", "cos": "Cos",
    "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
    "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "floor": "Floor",
    "ceil": "Ceil", "reciprocal": "Reciprocal", "sign": "Sign", "softsign": "Softsign",
    "logical_not": "Not", "isnan": "IsNaN", "sgn": "Sign",
}


def _unary(op_type: str):
    def emit(c: Call):
        name = next(iter(c.p))
        if op_type == "Not":
            return c.add("Not", [c.t(name, "bool")])
        if op_type == "IsNaN":
            if c.dtype(name) not in FLOAT_TYPES:
                return c.add("ConstantOfShape", [c.b.shape_of(c.t(name))],
                             value=_scalar_tensor(c, False, "bool"))
            return c.add("IsNaN", [c.t(name)])
        src = c.dtype(name)
        if op_type in ("Floor", "Ceil") and src not in FLOAT_TYPES:
            return c.t(name, c.out_dtype)
        if op_type == "Relu" and src not in FLOAT_TYPES and c.opset < 14:
            zero = c.const(0, src)
            return c.add("Max", [c.t(name), zero])
        return c.add(op_type, [c.t(name, c.out_dtype)])
    return emit


for _op, _onnx in _UNARY.items():
    mapping(_op)(_unary(_onnx))
del _op, _onnx


def _scalar_tensor(c: Call, value, dtype: str):
    return c.b.onnx.numpy_helper.from_array(np.asarray([value], dtype=NUMPY_DTYPES[dtype]))


@mapping("positive", "clone", "detach", "Tensor.contiguous", "Tensor.clone", "Tensor.detach",
         "Tensor.requires_grad_", "nn.functional.dropout", "dropout", "nn.functional.dropout1d",
         "nn.functional.dropout2d", "nn.functional.dropout3d", "feature_dropout",
         "nn.functional.alpha_dropout", "alpha_dropout", "feature_alpha_dropout",
         "nn.functional.feature_alpha_dropout", "Tensor.cpu", "Tensor.cuda")
def _identity(c: Call):
    """Ops that return their input's values: copies, and dropout in evaluation."""
    training = c.p.get("training", c.p.get("train", False))
    p = c.lit("p", 0.5)
    if c.op.endswith("dropout") and training and p > 0:
        if c.op not in ("nn.functional.dropout", "dropout"):
            raise Unsupported(f"{c.op} in training mode has no ONNX operator")
        c.require(12, "dropout in training mode (Dropout's training_mode)")
        x = c.t("input")
        ratio = c.const(float(p), c.dtype("input"))
        return c.add("Dropout", [x, ratio, c.const(True, "bool")])
    name = next(iter(c.p))
    return c.t(name, c.out_dtype)


@mapping("round")
def _round(c: Call):
    decimals = c.lit("decimals", 0)
    x = c.t("input", c.out_dtype)
    if c.out_dtype not in FLOAT_TYPES:
        return x
    if not decimals:
        return c.add("Round", [x])
    scale = c.const(10.0 ** decimals, c.out_dtype)
    return c.add("Div", [c.add("Round", [c.add("Mul", [x, scale])]), scale])


@mapping("trunc")
def _trunc(c: Call):
    x = c.t("input", c.out_dtype)
    if c.out_dtype not in FLOAT_TYPES:
        return x
    return _trunc_of(c, x, c.out_dtype)


def _trunc_of(c: Call, x: str, dtype: str) -> str:
    negative = c.add("Less", [x, c.const(0, dtype)])
    return c.add("Where", [negative, c.add("Ceil", [x]), c.add("Floor", [x])])


@mapping("rsqrt")
def _rsqrt(c: Call):
    return c.add("Reciprocal", [c.add("Sqrt", [c.t("input", c.out_dtype)])])


@mapping("square")
def _square(c: Call):
    x = c.t("input", c.out_dtype)
    return c.add("Mul", [x, x])


@mapping("log2", "log10", "log1p", "expm1", "exp2")
def _log_family(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    if c.op == "log1p":
        return c.add("Log", [c.add("Add", [x, c.const(1, d)])])
    if c.op == "expm1":
        return c.add("Sub", [c.add("Exp", [x]), c.const(1, d)])
    if c.op == "exp2":
        return c.add("Pow", [c.const(2.0, d), x])
    base = 2.0 if c.op == "log2" else 10.0
    return c.add("Div", [c.add("Log", [x]), c.const(math.log(base), d)])


@mapping("isinf", "isfinite", "isposinf", "isneginf")
def _isinf(c: Call):
    x = c.t("input")
    if c.dtype("input") not in FLOAT_TYPES:
        return c.add("ConstantOfShape", [c.b.shape_of(x)],
                     value=_scalar_tensor(c, c.op == "isfinite", "bool"))
    if c.op == "isfinite":
        return c.add("Not", [c.add("Or", [c.add("IsInf", [x]), c.add("IsNaN", [x])])])
    return c.add("IsInf", [x], detect_negative=int(c.op != "isposinf"),
                 detect_positive=int(c.op != "isneginf"))


# -- elementwise: binary ------------------------------------------------------------------------

def _two(c: Call, dtype: str) -> tuple[str, str]:
    names = list(c.p)
    return c.t(names[0], dtype), c.t(names[1], dtype)


def _scaled(c: Call, name: str, dtype: str) -> str:
    """``alpha * other`` for add/sub/rsub's ``alpha``."""
    y = c.t(name, dtype)
    alpha = c.lit("alpha", 1)
    return y if alpha == 1 else c.add("Mul", [y, c.const(alpha, dtype)])


@mapping("add")
def _add(c: Call):
    d = c.out_dtype
    x, y = c.t("input", d), _scaled(c, "other", d)
    return c.add("Or" if d == "bool" else "Add", [x, y])


@mapping("sub")
def _sub(c: Call):
    d = c.out_dtype
    return c.add("Sub", [c.t("input", d), _scaled(c, "other", d)])


@mapping("rsub")
def _rsub(c: Call):
    d = c.out_dtype
    return c.add("Sub", [c.t("other", d), _scaled(c, "input", d)])


@mapping("mul")
def _mul(c: Call):
    d = c.out_dtype
    x, y = _two(c, d)
    return c.add("And" if d == "bool" else "Mul", [x, y])


@mapping("div", "true_divide", "floor_divide")
def _div(c: Call):
    d = c.out_dtype
    mode = "floor" if c.op == "floor_divide" else c.lit("rounding_mode")
    x, y = _two(c, d)
    q = c.add("Div", [x, y])
    if mode is None:
        return q
    if d in FLOAT_TYPES:
        return c.add("Floor", [q]) if mode == "floor" else _trunc_of(c, q, d)
    if mode == "trunc":
        return q  # ONNX integer division truncates
    # floor division of integers: one less where the remainder is nonzero and signs differ
    rem = c.add("Mod", [x, y], fmod=1)
    zero = c.const(0, d)
    fix = c.add("And", [c.add("Not", [c.add("Equal", [rem, zero])]),
                        c.add("Xor", [c.add("Less", [x, zero]), c.add("Less", [y, zero])])])
    return c.add("Sub", [q, c.add("Cast", [fix], to=onnx_type(d))])


@mapping("remainder", "fmod")
def _remainder(c: Call):
    d = c.out_dtype
    x, y = _two(c, d)
    if c.op == "fmod":
        return c.add("Mod", [x, y], fmod=1)
    if d not in FLOAT_TYPES:
        return c.add("Mod", [x, y], fmod=0)
    return c.add("Sub", [x, c.add("Mul", [c.add("Floor", [c.add("Div", [x, y])]), y])])


@mapping("pow", "float_power")
def _pow(c: Call):
    d = c.out_dtype
    x, y = _two(c, d)
    return c.add("Pow", [x, y])


@mapping("maximum", "minimum", "fmax", "fmin")
def _max_min(c: Call):
    d = c.out_dtype
    x, y = _two(c, d)
    out = c.add("Max" if c.op in ("maximum", "fmax") else "Min", [x, y])
    if c.op in ("fmax", "fmin") and d in FLOAT_TYPES:  # NaN only where both are NaN
        out = c.add("Where", [c.add("IsNaN", [y]), x, out])
        out = c.add("Where", [c.add("IsNaN", [x]), y, out])
    return out


_COMPARE = {"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual",
            "gt": "Greater", "ge": "GreaterOrEqual"}


@mapping(*_COMPARE)
def _compare(c: Call):
    op = c.op
    names = list(c.p)[:2]
    d = c.common_dtype(*names)
    x, y = c.t(names[0], d), c.t(names[1], d)
    out = c.add(_COMPARE[op], [x, y])
    return c.add("Not", [out]) if op == "ne" else out


@mapping("logical_and", "logical_or", "logical_xor")
def _logical(c: Call):
    x, y = _two(c, "bool")
    return c.add({"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}[c.op], [x, y])


@mapping("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
def _bitwise(c: Call):
    d = c.out_dtype
    kind = c.op.rpartition("_")[2]
    if d == "bool":
        if kind == "not":
            return c.add("Not", [c.t("input", d)])
        x, y = _two(c, d)
        return c.add(kind.capitalize(), [x, y])
    c.require(18, f"{c.op} on integers (BitwiseAnd/Or/Xor/Not)")
    if kind == "not":
        return c.add("BitwiseNot", [c.t("input", d)])
    x, y = _two(c, d)
    return c.add("Bitwise" + kind.capitalize(), [x, y])


@mapping("where")
def _where(c: Call):
    if not c.has("input"):
        raise Unsupported("where(condition) (the indices of nonzero elements) has a "
                          "data-dependent shape")
    d = c.out_dtype
    return c.add("Where", [c.t("condition", "bool"), c.t("input", d), c.t("other", d)])


@mapping("masked_fill")
def _masked_fill(c: Call):
    d = c.out_dtype
    return c.add("Where", [c.t("mask", "bool"), c.t("value", d), c.t("input", d)])


@mapping("clamp", "clamp_min", "clamp_max", "hardtanh", "relu6", "nn.functional.hardtanh")
def _clamp(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    hardtanh = c.op.endswith("hardtanh")
    lo_name, hi_name = ("min_val", "max_val") if hardtanh else ("min", "max")
    lo, hi = c.p.get(lo_name), c.p.get(hi_name)
    if c.op == "relu6":
        lo, hi = 0.0, 6.0
    if is_tensor_arg(lo) or is_tensor_arg(hi):
        out = x
        if lo is not None:
            out = c.add("Max", [out, c.t(lo, d)])
        if hi is not None:
            out = c.add("Min", [out, c.t(hi, d)])
        return out
    return c.add("Clip", [x, c.t(lo, d) if lo is not None else "",
                          c.t(hi, d) if hi is not None else ""])


# -- activations --------------------------------------------------------------------------------

@mapping("gelu")
def _gelu(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    approximate = c.lit("approximate", "none")
    if c.opset >= 20:
        return c.add("Gelu", [x], approximate=approximate)
    half = c.const(0.5, d)
    if approximate == "tanh":
        cube = c.add("Mul", [c.add("Mul", [x, x]), x])
        inner = c.add("Mul", [c.add("Add", [x, c.add("Mul", [cube, c.const(0.044715, d)])]),
                              c.const(math.sqrt(2 / math.pi), d)])
        gate = c.add("Add", [c.add("Tanh", [inner]), c.const(1.0, d)])
    else:
        gate = c.add("Add", [c.add("Erf", [c.add("Mul", [x, c.const(math.sqrt(0.5), d)])]),
                             c.const(1.0, d)])
    return c.add("Mul", [c.add("Mul", [x, half]), gate])


@mapping("silu")
def _silu(c: Call):
    x = c.t("input", c.out_dtype)
    return c.add("Mul", [x, c.add("Sigmoid", [x])])


@mapping("mish")
def _mish(c: Call):
    x = c.t("input", c.out_dtype)
    if c.opset >= 18:
        return c.add("Mish", [x])
    return c.add("Mul", [x, c.add("Tanh", [c.add("Softplus", [x])])])


@mapping("hardsigmoid")
def _hardsigmoid(c: Call):
    return c.add("HardSigmoid", [c.t("input", c.out_dtype)], alpha=1 / 6, beta=0.5)


@mapping("hardswish")
def _hardswish(c: Call):
    x = c.t("input", c.out_dtype)
    if c.opset >= 14:
        return c.add("HardSwish", [x])
    return c.add("Mul", [x, c.add("HardSigmoid", [x], alpha=1 / 6, beta=0.5)])


@mapping("leaky_relu", "nn.functional.leaky_relu")
def _leaky_relu(c: Call):
    return c.add("LeakyRelu", [c.t("input", c.out_dtype)],
                 alpha=float(c.lit("negative_slope", 0.01)))


@mapping("elu", "celu", "nn.functional.elu")
def _elu(c: Call):
    alpha = float(c.lit("alpha", 1.0))
    x = c.t("input", c.out_dtype)
    return c.add("Celu" if c.op.startswith("celu") else "Elu", [x], alpha=alpha)


@mapping("selu")
def _selu(c: Call):
    return c.add("Selu", [c.t("input", c.out_dtype)])


@mapping("softplus")
def _softplus(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    beta = float(c.lit("beta", 1.0))
    threshold = float(c.lit("threshold", 20.0))
    bx = x if beta == 1 else c.add("Mul", [x, c.const(beta, d)])
    soft = c.add("Softplus", [bx])
    if beta != 1:
        soft = c.add("Div", [soft, c.const(beta, d)])
    return c.add("Where", [c.add("Greater", [bx, c.const(threshold, d)]), x, soft])


@mapping("logsigmoid", "nn.functional.logsigmoid")
def _logsigmoid(c: Call):
    x = c.t(next(iter(c.p)), c.out_dtype)
    return c.add("Neg", [c.add("Softplus", [c.add("Neg", [x])])])


@mapping("prelu")
def _prelu(c: Call):
    d = c.out_dtype
    x, w = c.t("input", d), c.t("weight", d)
    rank, wshape = c.rank("input"), c.shape("weight")
    if len(wshape) == 1 and rank >= 2 and wshape[0] != 1:
        w = unsqueeze(c, w, list(range(1, rank - 1)))
    return c.add("PRelu", [x, w])


@mapping("threshold")
def _threshold(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    # PyTorch's ``x <= threshold ? value : x``: NaN stays NaN
    below = c.add("LessOrEqual", [x, c.t("threshold", d)])
    return c.add("Where", [below, c.t("value", d), x])


@mapping("softmax", "log_softmax", "softmin", "nn.functional.softmax",
         "nn.functional.log_softmax")
def _softmax(c: Call):
    """The ops and F's own functions (``F.softmax(input, dim, _stacklevel, dtype)``)."""
    op = c.op.rpartition(".")[2]
    d = c.out_dtype
    x = c.t("input", d)
    rank = c.rank("input")
    dim = c.lit("dim")
    if dim is None:
        dim = 0 if rank in (0, 1, 3) else 1  # PyTorch's legacy implicit dim
    axis = norm_axis(int(dim), rank)
    if op == "softmin":
        x = c.add("Neg", [x])
    if rank == 0:  # one element: ONNX's softmax needs an axis
        out = c.add("LogSoftmax" if op == "log_softmax" else "Softmax",
                    [unsqueeze(c, x, [0])], axis=0)
        return c.add("Squeeze", [out, c.i64([0])])
    return softmax_like(c, "LogSoftmax" if op == "log_softmax" else "Softmax", x, axis, rank)


# -- products -----------------------------------------------------------------------------------

@mapping("matmul", "mm", "bmm", "mv", "dot", "inner")
def _matmul(c: Call):
    d = c.out_dtype
    x, y = _two(c, d)
    names = list(c.p)
    if c.rank(names[0]) == 0 or c.rank(names[1]) == 0:  # inner with a scalar: a product
        return c.add("Mul", [x, y])
    if c.op == "inner" and c.rank(list(c.p)[1]) > 1:
        rank = c.rank(list(c.p)[1])
        y = c.add("Transpose", [y], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    return c.add("MatMul", [x, y])


@mapping("linear")
def _linear(c: Call):
    d = c.out_dtype
    x, w = c.t("input", d), c.t("weight", d)
    bias = c.t("bias", d) if c.has("bias") else None
    wrank = c.rank("weight")
    if c.rank("input") == 2 and wrank == 2:
        return c.add("Gemm", [x, w] + ([bias] if bias else []), transB=1)
    wt = c.add("Transpose", [w], perm=[1, 0]) if wrank == 2 else w
    out = c.add("MatMul", [x, wt])
    return c.add("Add", [out, bias]) if bias else out


@mapping("addmm")
def _addmm(c: Call):
    d = c.out_dtype
    return c.add("Gemm", [c.t("mat1", d), c.t("mat2", d), c.t("input", d)],
                 alpha=float(c.lit("alpha", 1)), beta=float(c.lit("beta", 1)))


@mapping("baddbmm", "addbmm")
def _baddbmm(c: Call):
    d = c.out_dtype
    prod = c.add("MatMul", [c.t("batch1", d), c.t("batch2", d)])
    if c.op == "addbmm":
        prod = reduce(c, "ReduceSum", prod, [0], False)
    alpha, beta = c.lit("alpha", 1), c.lit("beta", 1)
    if alpha != 1:
        prod = c.add("Mul", [prod, c.const(alpha, d)])
    base = c.t("input", d)
    if beta != 1:
        base = c.add("Mul", [base, c.const(beta, d)])
    return c.add("Add", [base, prod])


@mapping("einsum", since=12)
def _einsum(c: Call):
    d = c.out_dtype
    eq = c.lit("equation") if "equation" in c.p else decode(list(c.p.values())[0])
    operands = c.p.get("operands", c.p.get("args", []))
    if len(operands) == 1 and isinstance(operands[0], list):
        operands = operands[0]
    return c.add("Einsum", [c.t(o, d) for o in operands], equation=eq.replace(" ", ""))


# -- reductions ---------------------------------------------------------------------------------

def _reduce_input(c: Call, name: str = "input") -> tuple[str, int, str]:
    """The reduced input cast to the dtype the reduction runs in (its ``dtype`` argument;
    bool counts as int64), its rank, and that dtype."""
    src = c.dtype(name)
    d = c.lit("dtype") or (src if src != "bool" else "int64")
    return c.t(name, d), c.rank(name), d


@mapping("sum", "mean", "prod", "nansum", "amax", "amin")
def _sum(c: Call):
    x, rank, d = _reduce_input(c)
    if c.op in ("amax", "amin"):
        x, d = c.t("input"), c.dtype("input")
    axes = dims_arg(c, "dim", rank)
    keep = bool(c.lit("keepdim", False))
    if c.op == "nansum" and d in FLOAT_TYPES:
        x = c.add("Where", [c.add("IsNaN", [x]), c.const(0, d), x])
    op_type = {"sum": "ReduceSum", "nansum": "ReduceSum", "mean": "ReduceMean",
               "prod": "ReduceProd", "amax": "ReduceMax", "amin": "ReduceMin"}[c.op]
    out = reduce(c, op_type, x, axes, keep) if rank else x
    return c.b.cast(out, d, c.out_dtype)


@mapping("max", "min")
def _max(c: Call):
    d = c.out_dtype
    if c.has("other"):
        return c.add("Max" if c.op == "max" else "Min", [c.t("input", d), c.t("other", d)])
    x = c.t("input")
    rank = c.rank("input")
    reduce_op = "ReduceMax" if c.op == "max" else "ReduceMin"
    if not isinstance(c.p.get("dim"), int):  # max(x): no dim (its default is not None)
        return reduce(c, reduce_op, x, None, False) if rank else x
    axis = norm_axis(int(c.lit("dim")), rank)
    keep = bool(c.lit("keepdim", False))
    values = reduce(c, reduce_op, x, [axis], keep)
    indices = c.add("ArgMax" if c.op == "max" else "ArgMin", [x], axis=axis,
                    keepdims=int(keep))
    return [values, indices]


@mapping("argmax", "argmin")
def _argmax(c: Call):
    x = c.t("input")
    op_type = "ArgMax" if c.op == "argmax" else "ArgMin"
    keep = bool(c.lit("keepdim", False))
    if not c.has("dim"):
        flat = c.add("Reshape", [x, c.i64([-1])])
        out = c.add(op_type, [flat], axis=0, keepdims=0)
        if keep:
            out = c.add("Reshape", [out, c.i64([1] * c.rank("input"))])
        return out
    axis = norm_axis(int(c.lit("dim")), c.rank("input"))
    return c.add(op_type, [x], axis=axis, keepdims=int(keep))


@mapping("all", "any")
def _all(c: Call):
    x = c.t("input", "int32")
    rank = c.rank("input")
    axes = dims_arg(c, "dim", rank)
    keep = bool(c.lit("keepdim", False))
    out = reduce(c, "ReduceMin" if c.op == "all" else "ReduceMax", x, axes, keep) \
        if rank else x
    return c.add("Cast", [out], to=onnx_type("bool"))


@mapping("logsumexp")
def _logsumexp(c: Call):
    x, rank, _ = _reduce_input(c)
    axes = dims_arg(c, "dim", rank)
    return reduce(c, "ReduceLogSumExp", x, axes, bool(c.lit("keepdim", False)))


@mapping("var", "std", "var_mean", "std_mean")
def _var(c: Call):
    d = c.out_dtype
    x = c.t("input", d)
    rank = c.rank("input")
    axes = dims_arg(c, "dim", rank)
    keep = bool(c.lit("keepdim", False))
    correction = c.lit("correction")
    if correction is None:
        unbiased = c.lit("unbiased")
        correction = 0 if unbiased is False else 1
    mean = reduce(c, "ReduceMean", x, axes, True)
    diff = c.add("Sub", [x, mean])
    sq = reduce(c, "ReduceMean", c.add("Mul", [diff, diff]), axes, keep)
    if correction:
        shape = c.shape("input")
        count = 1
        for a in (axes if axes is not None else range(rank)):
            count = count * shape[a] if isinstance(shape[a], int) and isinstance(count, int) \
                else {"mul": [count, shape[a]]}
        n = c.add("Cast", [c.b.scalar_expr(count)], to=onnx_type(d))
        sq = c.add("Div", [c.add("Mul", [sq, n]),
                           c.add("Sub", [n, c.const(float(correction), d)])])
    out = c.add("Sqrt", [sq]) if c.op.startswith("std") else sq
    if c.op.endswith("_mean"):
        return [out, mean if keep else reduce(c, "ReduceMean", x, axes, False)]
    return out


@mapping("cumsum")
def _cumsum(c: Call):
    d = c.lit("dtype") or c.out_dtype
    x = c.t("input", d)
    axis = norm_axis(int(c.lit("dim")), c.rank("input"))
    return c.add("CumSum", [x, c.const(np.int64(axis), "int64")])


@mapping("linalg.multi_dot", "chain_matmul")
def _multi_dot(c: Call):
    """A chain of products, left to right (1-d ends as ``multi_dot`` treats them)."""
    d = c.out_dtype
    arg = c.p.get("tensors", c.p.get("matrices"))
    operands = arg if isinstance(arg, list) else list(c.p.values())[0]
    if len(operands) == 1 and isinstance(operands[0], list):
        operands = operands[0]
    if len(operands) < 2:
        raise Unsupported("multi_dot(): expected at least 2 tensors")
    out = c.t(operands[0], d)
    for o in operands[1:]:
        out = c.add("MatMul", [out, c.t(o, d)])
    return out


@mapping("matrix_power", "linalg.matrix_power")
def _matrix_power(c: Call):
    """Repeated squaring for a constant ``n >= 0`` (the identity for 0); a negative power
    needs an inverse, which ONNX has no operator for."""
    n = int(c.lit("n"))
    d = c.out_dtype
    name = next(iter(c.p))  # input (torch.matrix_power) or A (linalg.matrix_power)
    x = c.t(name, d)
    if n < 0:
        raise Unsupported(f"ONNX has no operator for {c.op} with n = {n} (a negative power "
                          "needs a matrix inverse)")
    if n == 0:
        shape = c.shape(name)
        size = shape[-1]
        if not isinstance(size, int):
            raise Unsupported("matrix_power(x, 0) of a matrix of dynamic size")
        eye = c.const(np.eye(size), d)
        return c.add("Expand", [eye, c.b.shape_of(x)])
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else c.add("MatMul", [result, square])
        n >>= 1
        if n:
            square = c.add("MatMul", [square, square])
    return result


# -- randomized activations ---------------------------------------------------------------------

@mapping("rrelu", "nn.functional.rrelu")
def _rrelu(c: Call):
    """In evaluation a leaky ReLU of slope ``(lower + upper) / 2``; in training each negative
    element scaled by its own uniform draw from ``[lower, upper)`` (RandomUniformLike)."""
    d = c.out_dtype
    x = c.t("input", d)
    lower, upper = float(c.lit("lower", 1 / 8)), float(c.lit("upper", 1 / 3))
    if not c.lit("training", False):
        return c.add("LeakyRelu", [x], alpha=(lower + upper) / 2)
    slope = c.add("RandomUniformLike", [x], dtype=onnx_type(d), low=lower, high=upper)
    negative = c.add("Less", [x, c.const(0, d)])
    return c.add("Where", [negative, c.add("Mul", [x, slope]), x])


@mapping("gumbel_softmax")
def _gumbel_softmax(c: Call):
    """``softmax((logits + g) / tau)`` with Gumbel noise ``g = -log(E)``, ``E`` exponential
    draws (``-log(1 - u)``, ``u`` uniform, at least half the dtype's epsilon: a draw of
    ``u = 0`` made ``E = 0``, ``g = inf`` and a row of NaN, as PyTorch's exponential keeps
    clear of 0); ``hard``: the one-hot of its argmax, written as ``(hard - soft) + soft`` as
    PyTorch computes it."""
    d = c.out_dtype
    x = c.t("logits", d)
    rank = c.rank("logits")
    axis = norm_axis(int(c.lit("dim", -1)), rank)
    u = c.add("RandomUniformLike", [x], dtype=onnx_type(d), low=0.0, high=1.0)
    expo = c.add("Neg", [c.add("Log", [c.add("Sub", [c.const(1.0, d), u])])])
    expo = c.add("Max", [expo, c.const(float(np.finfo(NUMPY_DTYPES[d]).eps) / 2, d)])
    gumbel = c.add("Neg", [c.add("Log", [expo])])
    logits = c.add("Div", [c.add("Add", [x, gumbel]), c.const(float(c.lit("tau", 1.0)), d)])
    soft = softmax_like(c, "Softmax", logits, axis, rank)
    if not c.lit("hard", False):
        return soft
    index = c.add("ArgMax", [soft], axis=axis, keepdims=1)
    zeros = c.add("ConstantOfShape", [c.b.shape_of(soft)], value=_scalar_tensor(c, 0, d))
    ones = c.add("ConstantOfShape", [c.b.shape_of(index)], value=_scalar_tensor(c, 1, d))
    hard = c.add("ScatterElements", [zeros, index, ones], axis=axis)
    return c.add("Add", [c.add("Sub", [hard, soft]), soft])


# -- complex views of real tensors, differences and integrals -----------------------------------

@mapping("real", "conj", "conj_physical", "resolve_conj", "resolve_neg")
def _real_identity(c: Call):
    """On a real tensor (complex tensors have no ONNX type Ember writes) these are copies."""
    return c.t("input", c.out_dtype)


@mapping("angle")
def _angle(c: Call):
    """The argument of a real number: pi where negative, 0 elsewhere, NaN kept."""
    d = c.out_dtype
    x = c.t("input", d)
    zero = c.const(0.0, d)
    out = c.add("Where", [c.add("Less", [x, zero]), c.const(math.pi, d), zero])
    return c.add("Where", [c.add("IsNaN", [x]), x, out]) if d in FLOAT_TYPES else out


@mapping("isreal")
def _isreal(c: Call):
    return c.add("ConstantOfShape", [c.b.shape_of(c.t("input"))],
                 value=_scalar_tensor(c, True, "bool"))


@mapping("ldexp")
def _ldexp(c: Call):
    d = c.out_dtype
    return c.add("Mul", [c.t("input", d), c.add("Pow", [c.const(2.0, d), c.t("other", d)])])


def _slice(c: Call, x: str, axis: int, start: int, end: int) -> str:
    return c.add("Slice", [x, c.i64([start]), c.i64([end]), c.i64([axis])])


def _diff_once(c: Call, x: str, axis: int, d: str) -> str:
    hi, lo = _slice(c, x, axis, 1, 2 ** 62), _slice(c, x, axis, 0, -1)
    return c.add("Xor" if d == "bool" else "Sub", [hi, lo])


@mapping("diff")
def _diff(c: Call):
    d = c.out_dtype
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim", -1)), rank)
    parts = [c.t(n, d) for n in ("prepend", "input", "append") if c.has(n)]
    x = parts[0] if len(parts) == 1 else c.add("Concat", parts, axis=axis)
    for _ in range(int(c.lit("n", 1))):
        x = _diff_once(c, x, axis, d)
    return x


def _trapezoid_terms(c: Call) -> tuple[str, int]:
    """The areas of the trapezoids along ``dim`` (``x`` spacing, ``dx``, or 1) and the axis."""
    d = c.out_dtype
    y = c.t("y", d)
    axis = norm_axis(int(c.lit("dim", -1)), c.rank("y"))
    mids = c.add("Add", [_slice(c, y, axis, 1, 2 ** 62), _slice(c, y, axis, 0, -1)])
    mids = c.add("Mul", [mids, c.const(0.5, d)])
    if c.is_tensor("x"):
        xr = c.rank("x")
        x = c.t("x", d)
        spacing = _diff_once(c, x, xr - 1 if xr == 1 else axis - (c.rank("y") - xr), d)
        if xr == 1 and axis != c.rank("y") - 1:  # a 1-d x runs along dim
            spacing = unsqueeze(c, spacing, list(range(1, c.rank("y") - axis)))
        return c.add("Mul", [mids, spacing]), axis
    step = c.p.get("dx") if c.has("dx") else c.p.get("x")
    if step is not None and decode(step) != 1:
        mids = c.add("Mul", [mids, c.t(step, d)])
    return mids, axis


@mapping("trapezoid", "trapz")
def _trapezoid(c: Call):
    terms, axis = _trapezoid_terms(c)
    return reduce(c, "ReduceSum", terms, [axis], False)


@mapping("cumulative_trapezoid")
def _cumulative_trapezoid(c: Call):
    terms, axis = _trapezoid_terms(c)
    return c.add("CumSum", [terms, c.const(np.int64(axis), "int64")])


@mapping("kron")
def _kron(c: Call):
    """``a (x) b``: ``a`` with a unit axis after each of its axes times ``b`` with one before
    each of its, reshaped to the products of the sizes."""
    d = c.out_dtype
    a, b = c.t("input", d), c.t("other", d)
    ra, rb = c.rank("input"), c.rank("other")
    r = max(ra, rb)
    if ra < r:
        a = unsqueeze(c, a, list(range(r - ra)))
    if rb < r:
        b = unsqueeze(c, b, list(range(r - rb)))
    a = unsqueeze(c, a, [2 * i + 1 for i in range(r)])
    b = unsqueeze(c, b, [2 * i for i in range(r)])
    prod = c.add("Mul", [a, b])
    from ._export_ops_tensor import reshape_to

    return reshape_to(c, prod, [None] * (2 * r), c.out_shape)


@mapping("vander")
def _vander(c: Call):
    n = c.lit("N")
    size = c.shape("x")[0]
    if n is None:
        if not isinstance(size, int):
            raise Unsupported("vander of a vector of dynamic size without N")
        n = size
    powers = list(range(int(n))) if c.lit("increasing", False) else list(range(int(n)))[::-1]
    d = c.out_dtype
    x = unsqueeze(c, c.t("x", d), [1])
    return c.add("Pow", [x, c.const(np.asarray(powers), d)])


@mapping("isin")
def _isin(c: Call):
    """Each element compared with every test element (broadcast), counted along the last
    axis: found where the count is nonzero (none when there are no test elements)."""
    dt = c.common_dtype("elements", "test_elements")
    x = c.t("elements", dt)
    if c.is_tensor("elements"):
        x = unsqueeze(c, x, [-1])
    test = c.add("Reshape", [c.t("test_elements", dt), c.i64([-1])])
    hits = c.add("Cast", [c.add("Equal", [x, test])], to=onnx_type("int32"))
    found = c.add("Cast", [reduce(c, "ReduceSum", hits, [-1], False)], to=onnx_type("bool"))
    if c.lit("invert", False):
        found = c.add("Not", [found])
    return found


# -- integer shifts, gcd/lcm --------------------------------------------------------------------

_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED_OF = {"int8": "uint8", "int16": "uint16", "int32": "uint32", "int64": "uint64"}
_BITS = {"uint8": 8, "int8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
         "int64": 64, "uint64": 64}


@mapping("bitwise_left_shift", "bitwise_right_shift")
def _shift(c: Call):
    """PyTorch's shifts: a shift by a negative amount or by the width or more gives 0 (left)
    or the sign fill (right, arithmetic on signed integers). ONNX ``BitShift`` is unsigned
    only: a signed value is shifted as its unsigned type, and an arithmetic right shift of a
    negative ``x`` is ``~(~x >> n)`` with ``~x = -1 - x``. The rest is computed in int64
    (onnxruntime has no int8/int16 ``Sub``)."""
    d = c.out_dtype
    if d not in _BITS:
        raise Unsupported(f"shifting {d} values (PyTorch shifts integers)")
    names = list(c.p)[:2]
    w = "int64"
    x, n = c.t(names[0], w), c.t(names[1], w)
    bits = _BITS[d]
    u = _UNSIGNED_OF.get(d, d)
    zero = c.const(0, w)
    out_of_range = c.add("Or", [c.add("Less", [n, zero]),
                                c.add("GreaterOrEqual", [n, c.const(bits, w)])])
    if c.op == "bitwise_left_shift":
        amount = c.b.cast(c.add("Where", [out_of_range, zero, n]), w, u)
        r = c.b.cast(c.add("BitShift", [c.b.cast(x, w, u), amount], direction="LEFT"), u, d)
        return c.b.cast(c.add("Where", [out_of_range, zero, c.b.cast(r, d, w)]), w, d)
    amount = c.b.cast(c.add("Where", [out_of_range, c.const(bits - 1, w), n]), w, u)
    if d not in _SIGNED:
        r = c.b.cast(c.add("BitShift", [c.b.cast(x, w, u), amount], direction="RIGHT"), u, w)
        return c.b.cast(c.add("Where", [out_of_range, zero, r]), w, d)
    negative = c.add("Less", [x, zero])
    minus_one = c.const(-1, w)
    flipped = c.add("Where", [negative, c.add("Sub", [minus_one, x]), x])  # >= 0
    r = c.b.cast(c.add("BitShift", [c.b.cast(flipped, w, u), amount], direction="RIGHT"), u, w)
    return c.b.cast(c.add("Where", [negative, c.add("Sub", [minus_one, r]), r]), w, d)


def _int_loop(c: Call, trips: int, carried: list, dtype: str, body) -> list:
    """An ONNX ``Loop`` of at most ``trips`` iterations over the ``dtype`` tensors
    ``carried``: ``body(emit, *values)`` returns ``(go_on, next values)`` (``go_on`` a bool
    scalar: the loop stops at the first iteration that returns False). ``emit(op_type,
    inputs, **attrs)`` adds a node to the body."""
    b, helper = c.b, c.b.helper
    nodes: list = []

    def emit(op_type, inputs, **attrs):
        if b.opset < 13:  # the node in the form of the requested opset
            return b.add_into(nodes, op_type, inputs, **attrs)
        name = b.fresh(f"{b.current or 'loop'}_{op_type}")
        nodes.append(helper.make_node(op_type, inputs, [name],
                                      name=b.fresh(f"/{b.current}/loop/{op_type}"), **attrs))
        return name

    it, cond = b.fresh("loop_iter"), b.fresh("loop_cond")
    ins = [b.fresh("loop_in") for _ in carried]
    go_on, outs = body(emit, *ins)
    outs = [emit("Identity", [o]) for o in outs]
    go_on = emit("Identity", [go_on])
    t = onnx_type(dtype)
    graph = helper.make_graph(
        nodes, b.fresh("loop_body"),
        [helper.make_tensor_value_info(it, onnx_type("int64"), []),
         helper.make_tensor_value_info(cond, onnx_type("bool"), [])]
        + [helper.make_tensor_value_info(n, t, None) for n in ins],
        [helper.make_tensor_value_info(go_on, onnx_type("bool"), [])]
        + [helper.make_tensor_value_info(n, t, None) for n in outs])
    results = c.add("Loop", [c.const(np.int64(trips), "int64"), c.const(True, "bool"),
                             *carried], outputs=len(carried), body=graph)
    return [results] if isinstance(results, str) else results


def _gcd_of(c: Call, a: str, b: str, d: str) -> str:
    """Euclid's algorithm on ``|a|, |b|`` (PyTorch's ``calc_gcd``), elementwise in an ONNX
    ``Loop`` that stops once every remainder is 0 (at most 93 steps for 64-bit integers:
    consecutive Fibonacci numbers are the worst case)."""
    a = c.add("Abs", [a])
    b = c.add("Abs", [b])
    a, b = c.add("Expand", [a, c.add("Shape", [b])]), c.add("Expand", [b, c.add("Shape", [a])])
    zero, one = c.const(0, d), c.const(1, d)

    def body(emit, x, y):  # gcd(x, y) = gcd(y, x mod y)
        live = emit("Not", [emit("Equal", [y, zero])])
        safe = emit("Where", [live, y, one])
        nx = emit("Where", [live, y, x])
        ny = emit("Where", [live, emit("Mod", [x, safe]), zero])
        any_live = emit("ReduceMax", [emit("Cast", [emit("Not", [emit("Equal", [ny, zero])])],
                                           to=onnx_type("int32"))], keepdims=0)
        return emit("Greater", [any_live, c.const(np.int32(0), "int32")]), [nx, ny]

    # an empty input: nothing to reduce (ReduceMax of nothing), so no iteration
    return _int_loop(c, 93, [a, b], d, body)[0]


@mapping("gcd", "lcm")
def _gcd(c: Call):
    d = c.out_dtype
    if d not in _BITS:
        raise Unsupported(f"{c.op} of {d} values (PyTorch takes integers)")
    compute = "int64" if _BITS[d] < 64 or d == "uint64" else d
    if d == "uint64":
        raise Unsupported("gcd of uint64 values")
    names = list(c.p)[:2]
    a, b = c.t(names[0], compute), c.t(names[1], compute)
    g = _gcd_of(c, a, b, compute)
    if c.op == "gcd":
        return c.b.cast(g, compute, d)
    zero = c.const(0, compute)
    is_zero = c.add("Equal", [g, zero])
    q = c.add("Div", [a, c.add("Where", [is_zero, c.const(1, compute), g])])
    r = c.add("Abs", [c.add("Mul", [q, b])])
    return c.b.cast(c.add("Where", [is_zero, zero, r]), compute, d)


@mapping("threshold_backward")
def _threshold_backward(c: Call):
    """``grad`` where ``input > threshold``, 0 elsewhere (PyTorch's ``x <= t ? 0 : g``)."""
    d = c.out_dtype
    g = c.t("grad_output", d)
    x = c.t("input")
    t = c.t("threshold", c.dtype("input"))
    return c.add("Where", [c.add("LessOrEqual", [x, t]), c.const(0, d), g])


@mapping("renorm")
def _renorm(c: Call):
    """Each slice along ``dim`` scaled by ``maxnorm / (norm + 1e-7)`` where its ``p``-norm
    exceeds ``maxnorm`` (norms of float16 in float32, as Ember and PyTorch)."""
    from ._export_ops_linalg import vector_norm

    d = c.out_dtype
    rank = c.rank("input")
    axis = norm_axis(int(c.lit("dim")), rank)
    p = float(c.lit("p"))
    maxnorm = float(c.lit("maxnorm"))
    acc = "float32" if d in ("float16", "bfloat16") else d
    x = c.t("input", acc)
    norms = vector_norm(c, x, p, [a for a in range(rank) if a != axis], True, acc)
    big = c.add("Greater", [norms, c.const(maxnorm, acc)])
    factor = c.add("Where", [big, c.add("Div", [c.const(maxnorm, acc),
                                                c.add("Add", [norms, c.const(1e-7, acc)])]),
                             c.const(1.0, acc)])
    return c.add("Mul", [c.t("input", d), c.b.cast(factor, acc, d)])


# -- covariance ---------------------------------------------------------------------------------

def _cov(c: Call, x: str, shape: list, d: str) -> tuple[str, bool]:
    """PyTorch's ``cov`` (``aten/src/ATen/native/Correlation.cpp``): returns the matrix (or
    the 0-d variance of a single variable) and whether it is 0-d."""
    if len(shape) > 2:
        raise Unsupported(f"cov of a {len(shape)}-d input (expected 1-d or 2-d)")
    if len(shape) < 2:
        x = c.add("Reshape", [x, c.i64([1, -1])])
        shape = [1, shape[0] if shape else 1]
    n = shape[1]
    if not isinstance(n, int):
        raise Unsupported("cov with a dynamic number of observations")
    correction = c.lit("correction", 1) if c.op == "cov" else 1
    w = None
    if c.op == "cov" and c.has("fweights"):
        w = c.t("fweights", d)
    aw = c.t("aweights", d) if c.op == "cov" and c.has("aweights") else None
    if aw is not None:
        w = aw if w is None else c.add("Mul", [w, aw])
    if w is not None:
        w_sum = reduce(c, "ReduceSum", w, None, False)
        avg = c.add("Div", [reduce(c, "ReduceSum", c.add("Mul", [x, w]), [1], True), w_sum])
        if correction == 0:
            norm = w_sum
        elif aw is not None:
            norm = c.add("Sub", [w_sum, c.add("Div", [
                c.add("Mul", [c.const(float(correction), d),
                              reduce(c, "ReduceSum", c.add("Mul", [w, aw]), None, False)]),
                w_sum])])
        else:
            norm = c.add("Sub", [w_sum, c.const(float(correction), d)])
    else:
        avg = reduce(c, "ReduceMean", x, [1], True)
        norm = c.const(float(n - correction), d)
    norm = c.add("Max", [norm, c.const(0.0, d)])
    xm = c.add("Sub", [x, avg])
    right = c.add("Transpose", [xm if w is None else c.add("Mul", [xm, w])], perm=[1, 0])
    cov = c.add("Div", [c.add("MatMul", [xm, right]), norm])
    if shape[0] == 1:
        return c.add("Reshape", [cov, c.i64([])]), True
    return cov, False


@mapping("cov", "corrcoef")
def _cov_op(c: Call):
    d = c.out_dtype
    if d not in FLOAT_TYPES:
        raise Unsupported(f"{c.op} of {d}")
    cov, scalar = _cov(c, c.t("input", d), c.shape("input"), d)
    if c.op == "cov":
        return cov
    if scalar:
        return c.add("Div", [cov, cov])
    n = c.shape("input")[0]
    eye = c.const(np.eye(n, dtype=bool), "bool")
    diag = reduce(c, "ReduceSum", c.add("Where", [eye, cov, c.const(0.0, d)]), [1], True)
    std = c.add("Sqrt", [diag])
    r = c.add("Div", [c.add("Div", [cov, std]), c.add("Transpose", [std], perm=[1, 0])])
    return c.add("Clip", [r, c.const(-1.0, d), c.const(1.0, d)])


# -- regularized incomplete gamma functions -----------------------------------------------------
# Ember's kernels (``special_functions.py``, SciPy's and Cephes' algorithms): the series and the
# continued fraction run elementwise until every element has converged (each element frozen
# once done), here in an ONNX ``Loop`` that stops at the first iteration where all are done
# (at most 2000, Ember's cap), in float64, the result rounded once.



def _converge(f, carried: list, step) -> list:
    """``carried`` (float64 values; the last one the 0/1 ``done`` mask) advanced by
    ``step(fn, *values) -> values`` in an ONNX ``Loop`` until every element is done or
    ``_IGAM_MAXITER`` steps ran."""
    from ._export_ops_special import Expr, Fn

    c = f.c
    b, helper = c.b, c.b.helper
    nodes: list = []
    inner = Fn(c, nodes)
    it, cond = b.fresh("loop_iter"), b.fresh("loop_cond")
    ins = [b.fresh("loop_in") for _ in carried]
    outs = step(inner, *[Expr(inner, n) for n in ins])
    done = outs[-1]
    flat = inner.emit("Reshape", [done.name, c.i64([-1])])
    least = inner.emit("ReduceMin", [flat], keepdims=0)  # +inf when empty: done
    go_on = inner.emit("Less", [least, c.const(0.5, "float64")])
    out_names = [inner.emit("Identity", [o.name]) for o in outs]
    f64 = onnx_type("float64")
    graph = helper.make_graph(
        nodes, b.fresh("loop_body"),
        [helper.make_tensor_value_info(it, onnx_type("int64"), []),
         helper.make_tensor_value_info(cond, onnx_type("bool"), [])]
        + [helper.make_tensor_value_info(n, f64, None) for n in ins],
        [helper.make_tensor_value_info(go_on, onnx_type("bool"), [])]
        + [helper.make_tensor_value_info(n, f64, None) for n in out_names])
    results = c.add("Loop", [c.const(np.int64(_IGAM_MAXITER), "int64"), c.const(True, "bool"),
                             *[v.name for v in carried]], outputs=len(carried), body=graph)
    return [Expr(f, r) for r in results]


def _flag(f, cond):
    """A bool as a float64 0/1 value (Loop-carried masks are float64 here)."""
    return f.where(cond, 1.0, 0.0)


def _lanczos_sum_expg_scaled(f, a):
    small_a = f.minimum(a, 1.0)
    small = f.poly(small_a, _LANCZOS_NUM) / f.poly(small_a, _LANCZOS_DEN)
    inv = 1.0 / f.maximum(a, 1.0)
    large = f.poly(inv, _LANCZOS_NUM[::-1]) / f.poly(inv, _LANCZOS_DEN[::-1])
    return f.where(a <= 1.0, small, large)


def _expm1(f, x):
    """``exp(x) - 1`` accurate near 0 (Kahan: ``(u - 1) * x / log(u)``, ``u = exp(x)``)."""
    u = f.exp(x)
    um1 = u - 1.0
    one = u.eq(1.0)
    ratio = um1 * x / f.log(f.where(one, 2.0, u))
    return f.where(one, x, f.where(um1.eq(-1.0), -1.0, f.where(f.isinf(u), u, ratio)))


def _igam_fac(f, a, x):
    from ._export_ops_special import lgamma

    plain = f.exp(a * f.log(x) - x - lgamma(f, a))
    fac = a + (_LANCZOS_G - 0.5)
    res = f.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(f, a)
    moderate = res * f.exp(a - x) * ((x / fac) ** a)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    big = res * f.exp(a * (f.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac)
    near = f.where((a < 200.0) & (x < 200.0), moderate, big)
    return f.where(f.abs(a - x) > f.abs(a) * 0.4, plain, near)


def _igam_series(f, a, x):
    def step(g, r, cc, ans, done):
        r = r + 1.0
        finished = done > 0.5
        cc = g.where(finished, cc, cc * x / r)
        ans = g.where(finished, ans, ans + cc)
        return [r, cc, ans, _flag(g, finished | (cc <= ans * _MACHEP))]

    zero = f.zeros_like(a)
    _, _, ans, _ = _converge(f, [a * 1.0, zero + 1.0, zero + 1.0, zero], step)
    return ans * _igam_fac(f, a, x) / a


def _igamc_series(f, a, x):
    from ._export_ops_special import lgamma

    def step(g, n, fac, total, done):
        n = n + 1.0
        fac = fac * -x / n
        term = fac / (a + n)
        finished = done > 0.5
        total = g.where(finished, total, total + term)
        return [n, fac, total, _flag(g, finished | (g.abs(term) <= g.abs(total) * _MACHEP))]

    zero = f.zeros_like(a)
    _, _, total, _ = _converge(f, [zero, zero + 1.0, zero, zero], step)
    logx = f.log(x)
    return -_expm1(f, a * logx - lgamma(f, a + 1.0)) - f.exp(a * logx - lgamma(f, a)) * total


def _igamc_fraction(f, a, x):
    big, biginv = 4.503599627370496e15, 2.22044604925031308085e-16

    def step(g, cc, y, z, pkm2, pkm1, qkm2, qkm1, ans, done):
        cc, y, z = cc + 1.0, y + 1.0, z + 2.0
        yc = y * cc
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk.ne(0.0)
        r = pk / g.where(nonzero, qk, 1.0)
        t = g.where(nonzero, g.abs((ans - r) / r), 1.0)
        finished = done > 0.5
        ans = g.where(finished | ~nonzero, ans, r)
        scale = g.where(g.abs(pk) > big, biginv, 1.0)
        return [cc, y, z, pkm1 * scale, pk * scale, qkm1 * scale, qk * scale, ans,
                _flag(g, finished | (t <= _MACHEP))]

    zero = f.zeros_like(a)
    y = 1.0 - a
    z = x + y + 1.0
    start = [zero, y, z, zero + 1.0, x + 1.0, x * 1.0, z * x, (x + 1.0) / (z * x), zero]
    return _converge(f, start, step)[7] * _igam_fac(f, a, x)


def _igamc_interior(f, a, x):
    upper_series = _igamc_series(f, a, f.minimum(x, 1.1))
    one_minus_lower = 1.0 - _igam_series(f, a, x)
    fraction = _igamc_fraction(f, a, f.maximum(x, 1.1))
    large_x = f.where(x < a, one_minus_lower, fraction)
    tiny_x = f.where(-0.4 / f.log(f.minimum(x, 0.5)) < a, one_minus_lower, upper_series)
    mid_x = f.where(x * 1.1 < a, one_minus_lower, upper_series)
    return f.where(x > 1.1, large_x, f.where(x <= 0.5, tiny_x, mid_x))


@mapping("igamma", "igammac")
def _igamma(c: Call):
    """``P(a, x)`` / ``Q(a, x)`` with PyTorch's (SciPy's) boundary values."""
    from ._export_ops_special import Fn

    d = c.out_dtype
    if d not in FLOAT_TYPES:
        raise Unsupported(f"{c.op} of {d}")
    names = list(c.p)[:2]
    f = Fn(c)
    a, x = f.broadcast(f.input(names[0]), f.input(names[1]))
    ok = (a > 0.0) & (x > 0.0) & f.isfinite(a) & f.isfinite(x)
    ai, xi = f.where(ok, a, 1.0), f.where(ok, x, 1.0)
    lower = c.op == "igamma"
    if lower:
        # a lower value as 1 - Q where the continued fraction converges, by series elsewhere
        r = f.where((xi > 1.0) & (xi > ai), 1.0 - _igamc_interior(f, ai, xi),
                    _igam_series(f, ai, xi))
        one, zero = 1.0, 0.0
    else:
        r = _igamc_interior(f, ai, xi)
        one, zero = 0.0, 1.0
    nan = math.nan
    r = f.where(f.isnan(a) | f.isnan(x), nan, r)
    r = f.where(f.isinf(x), one, r)
    r = f.where(f.isinf(a), f.where(f.isinf(x), nan, zero), r)
    r = f.where(x.eq(0.0), zero, r)
    r = f.where(a.eq(0.0), f.where(x > 0.0, one, nan), r)
    r = f.where((x < 0.0) | (a < 0.0), nan, r)
    return f.result(r)


# -- frexp, nextafter: exponents without a bit cast ---------------------------------------------

_MANTISSA_BITS = {"float16": 11, "float32": 24, "float64": 53}


def _frexp64(c: Call, x: str) -> tuple:
    """``(mantissa, exponent, special)`` of float64 ``x``: the exponent estimated from
    ``log(|x|) / log(2)`` and corrected by one either way; the mantissa is ``x`` times
    powers of two only (two factors, so subnormals and the largest values do not overflow;
    no ``Where`` on it, which loses the sign of -0 in onnxruntime). Zero, inf and NaN are
    ``special``: mantissa ``x``, exponent 0, as NumPy's frexp."""
    f = "float64"
    one, two, half, zero = (c.const(v, f) for v in (1.0, 2.0, 0.5, 0.0))
    special = c.add("Or", [c.add("Equal", [x, zero]),
                           c.add("Or", [c.add("IsInf", [x]), c.add("IsNaN", [x])])])
    regular = c.add("Not", [special])
    safe = c.add("Where", [special, one, c.add("Abs", [x])])
    e = c.add("Add", [c.add("Floor", [c.add("Div", [c.add("Log", [safe]),
                                                      c.const(math.log(2.0), f)])]), one])
    e = c.add("Where", [special, zero, e])
    a = c.add("Floor", [c.add("Div", [c.add("Neg", [e]), two])])
    b = c.add("Sub", [c.add("Neg", [e]), a])
    m = c.add("Mul", [c.add("Mul", [x, c.add("Pow", [two, a])]), c.add("Pow", [two, b])])
    for test, factor, shift in (("GreaterOrEqual", half, one), ("Less", two, c.const(-1.0, f))):
        fix = c.add("And", [regular, c.add(test, [c.add("Abs", [m]), one if factor is half
                                                   else half])])
        m = c.add("Mul", [m, c.add("Where", [fix, factor, one])])
        e = c.add("Add", [e, c.add("Where", [fix, shift, zero])])
    return m, e, special


@mapping("frexp")
def _frexp(c: Call):
    """Mantissa in ``[0.5, 1)`` and int32 exponent, computed in float64 (exact for float16
    and float32; float64 scaled in two steps)."""
    d = c.dtype("input")
    if d not in _MANTISSA_BITS:
        raise Unsupported(f"frexp of {d}")
    m, e, _ = _frexp64(c, c.t("input", "float64"))
    return [c.b.cast(m, "float64", d), c.add("Cast", [e], to=onnx_type(c.out(1)["dtype"]))]


@mapping("nextafter")
def _nextafter(c: Call):
    """The next representable value after ``input`` towards ``other``: ``input`` plus or
    minus its spacing (``2 ** (exponent - mantissa bits)``, halved below a power of two,
    at least the smallest subnormal), computed exactly in float64; equal inputs give
    ``other``, NaN gives NaN, an infinity steps to the largest finite value."""
    d = c.out_dtype
    if d not in _MANTISSA_BITS:
        raise Unsupported(f"nextafter of {d}")
    f = "float64"
    info = np.finfo(NUMPY_DTYPES[d])
    x = c.b.cast(c.t("input", d), d, f)
    y = c.b.cast(c.t("other", d), d, f)
    m, e, _ = _frexp64(c, x)
    direction = c.add("Sign", [c.add("Sub", [y, x])])
    two = c.const(2.0, f)
    step = c.add("Pow", [two, c.add("Sub", [e, c.const(float(_MANTISSA_BITS[d]), f)])])
    down = c.add("And", [c.add("Equal", [c.add("Abs", [m]), c.const(0.5, f)]),
                         c.add("Less", [c.add("Mul", [direction, c.add("Sign", [x])]),
                                        c.const(0.0, f)])])
    step = c.add("Where", [down, c.add("Mul", [step, c.const(0.5, f)]), step])
    tiny = c.const(float(info.smallest_subnormal), f)
    step = c.add("Where", [c.add("Equal", [x, c.const(0.0, f)]), tiny, c.add("Max", [step, tiny])])
    out = c.add("Add", [x, c.add("Mul", [direction, step])])
    out = c.add("Where", [c.add("IsInf", [x]), c.add("Mul", [c.add("Sign", [x]), c.const(
        float(info.max), f)]), out])
    out = c.add("Where", [c.add("Equal", [x, y]), y, out])
    nan = c.add("Or", [c.add("IsNaN", [x]), c.add("IsNaN", [y])])
    out = c.add("Where", [nan, c.add("Add", [x, y]), out])
    return c.b.cast(out, f, d)
