"""Lowerings: registry op -> array code (``FORWARD``), and its VJP (``VJP``).

A forward lowering reads its node's arguments, writes lines through the generator ``g``
(``g.out(node)`` is the output's buffer, ``g.a(name)`` a value's array variable) and returns
None, or False to leave the node to the generic fallback (a case it does not handle: a dtype
mix, an unusual argument). Its output must equal the registry op's (same float operations in
the same order where the eager kernel fixes them). A VJP lowering gets the output gradients
``[(var, owned) or None]`` and returns ``[(input name, grad var, owned)]``; ``owned`` says the
array is fresh and used once (it may be handed to ``.grad`` as is).

``SAVES[op]``: what the VJP reads after the forward (``"inputs"``, ``"output"``, both, or
``""``), so that no later node overwrites it; ``ALIASES(node, g)``: the inputs a lowered
node's output may share memory with (views, in-place writes).

``POINTWISE[op]``: the elementwise lowerings once more, as one expression per element for
the CUDA backend's fused chains (``_cuda_fusion``): ``fn(g, node)`` returns ``(operands,
expression)`` or None where the node runs as its array code only (a real in-place write, an
argument the lowering leaves to the fallback). ``operands`` are ``("t", value name)`` or
``("s", Python number)``; the expression is in ``ember.cuda._kernels``' formula language,
with ``{0}``, ``{1}``... for the operands, and computes what the array code computes.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["FORWARD", "VJP", "SAVES", "ALIASES", "POINTWISE", "sum_to"]

FORWARD: dict = {}
VJP: dict = {}
SAVES: dict = {}
POINTWISE: dict = {}
_VIEWS: set = set()
_INPLACE_CAPABLE: set = set()
_CASTS: set = set()


def forward(*names, saves: str = "inputs", view: bool = False, inplace: bool = False):
    def deco(fn):
        for n in names:
            FORWARD[n] = fn
            SAVES[n] = saves
            if view:
                _VIEWS.add(n)
            if inplace:
                _INPLACE_CAPABLE.add(n)
        return fn
    return deco


def vjp(*names):
    def deco(fn):
        for n in names:
            VJP[n] = fn
        return fn
    return deco


def pointwise(*names):
    def deco(fn):
        for n in names:
            POINTWISE[n] = fn
        return fn
    return deco


def ALIASES(node, g) -> list:
    if node.op in _CASTS:  # a cast to the tensor's own dtype returns the tensor itself
        ins = g.tensor_args(node)
        return ins[:1] if g.dtype(ins[0]) == g.dtype(node.outputs[0][0]) else []
    if node.op in _VIEWS or node.op in _INPLACE_CAPABLE:
        ins = g.tensor_args(node)
        return ins[:1] if node.op in _VIEWS else ins
    return []


def sum_to(grad, shape):
    """``grad`` summed down to ``shape`` (the broadcast's gradient)."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and grad.shape[i + lead] != 1)
    out = grad.sum(axis=axes, keepdims=True) if axes else grad
    return out.reshape(shape)


# -- argument binding ----------------------------------------------------------------------

def bind(g, node, params: list, defaults: dict):
    """The node's arguments by parameter name (decoded), or None for unknown keywords."""
    args = g.decode(node.args)
    kwargs = {k: g.decode(v) for k, v in node.kwargs.items()}
    if len(args) > len(params) or any(k not in params for k in kwargs):
        return None
    out = dict(defaults)
    out.update(zip(params, args))
    out.update(kwargs)
    if any(p not in out for p in params):
        return None
    return out


def tname(x):
    """The value name of a decoded tensor argument, or None."""
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "tensor":
        return x[1]
    return None


def _lit(v) -> str:
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return f"float({str(v)!r})"
        return repr(v)
    raise TypeError(type(v))


# -- linear --------------------------------------------------------------------------------

@forward("linear")
def _linear(g, node):
    b = bind(g, node, ["input", "weight", "bias"], {"bias": None})
    if b is None:
        return False
    x, w, bias = tname(b["input"]), tname(b["weight"]), tname(b["bias"])
    if x is None or w is None or (b["bias"] is not None and bias is None):
        return False
    xs, ws = g.shape(x), g.shape(w)
    dt = g.dtype(x)
    if len(ws) != 2 or len(xs) < 2 or g.dtype(w) != dt or dt.kind != "f" \
            or (bias is not None and (g.dtype(bias) != dt or len(g.shape(bias)) != 1)):
        return False
    out = g.out(node)
    xa, o2 = g.a(x), out
    if len(xs) > 2:
        xa = f"{xa}.reshape(-1, {xs[-1]})"
        o2 = f"{out}.reshape(-1, {ws[0]})"
    rows = int(np.prod(xs[:-1]))
    if dt == np.float16:
        # eager's product: float32 BLAS, the bias added in float32, rounded once (NumPy runs
        # a float16 dot without BLAS: 150x slower, and rounded twice with the bias; every
        # device's eager kernel computes so)
        from ..ops.linear_op import _product

        b_arg = "None" if bias is None else g.a(bias)
        g.emit(f"xp.copyto({o2}, {g.const(_product, 'product')}({xa}, {g.a(w)}, {b_arg}))")
        return None
    if g.xp is np and dt == np.float32:
        # eager's products (gemm's column blocks under OpenBLAS's small-matrix bound, decided
        # by the arrays' layout at run time), so that replays equal eager bit for bit
        from ..ops.linalg import gemm_into

        g.emit(f"{g.const(gemm_into, 'gemm')}({xa}, {g.transposed(w)}, {o2})")
    else:
        g.emit(f"xp.dot({xa}, {g.transposed(w)}, out={o2})")
    if bias is not None:
        full = g.broadcast_operand(bias, (rows, ws[0]))
        g.emit(f"xp.add({o2}, {full or g.a(bias)}, out={o2})")


@vjp("linear")
def _linear_vjp(g, node, gouts):
    b = bind(g, node, ["input", "weight", "bias"], {"bias": None})
    x, w, bias = tname(b["input"]), tname(b["weight"]), tname(b["bias"])
    gy = gouts[0][0]
    xs = g.shape(x)
    out = []
    gy2, x2 = gy, g.a(x)
    if len(xs) > 2:
        gy2 = f"{gy}.reshape(-1, {g.shape(w)[0]})"
        x2 = f"{x2}.reshape(-1, {xs[-1]})"
    # float16 as eager's kernels compute it: products through float32 BLAS and the bias's
    # sum in float32, each rounded once (NumPy's own float16 products have no BLAS)
    half = g.dtype(x) == np.float16
    if g.requires.get(x):
        from ..ops.linalg import gemm, matmul_arrays

        gx = g.new("g")
        # eager's product (column blocks included), so that replays equal eager bit for bit
        product = g.const(matmul_arrays, "matmul") if half else g.const(gemm, "gemm")
        g.emit(f"{gx} = {product}({gy2}, {g.a(w)})" +
               (f".reshape({xs!r})" if len(xs) > 2 else ""))
        out.append((x, gx, True))
    if g.requires.get(w):
        from ..ops.linalg import matmul_arrays

        gw = g.new("g")
        g.emit(f"{gw} = {g.const(matmul_arrays, 'matmul')}({gy2}.T, {x2})" if half
               else f"{gw} = xp.matmul({gy2}.T, {x2})")
        out.append((w, gw, True))
    if bias is not None and g.requires.get(bias):
        gb = g.new("g")
        g.emit(f"{gb} = {gy2}.sum(0, dtype=xp.float32).astype(xp.float16)" if half
               else f"{gb} = {gy2}.sum(0)")
        out.append((bias, gb, True))
    return out


# -- elementwise -----------------------------------------------------------------------------

def _unary_ok(g, node):
    ins = g.tensor_args(node)
    if len(ins) != 1 or len(node.args) != 1 or node.kwargs:
        return None
    x = ins[0]
    if g.dtype(x) != g.dtype(node.outputs[0][0]):
        return None
    return x


def _unary_out(g, node, x, inplace_ok=True):
    if inplace_ok and g.can_overwrite(x, node):
        return g.alias(node, g.a(x))
    return g.out(node)


@forward("relu", "relu_", saves="output", inplace=True)
def _relu(g, node):
    x = _unary_ok(g, node)
    if x is None or g.dtype(x).kind not in "fiu":
        return False
    if node.op == "relu_" and not g.functional_inplace(node):
        if g.training:
            return False  # a real write in a training step: the fallback makes it
        g.emit(f"xp.maximum({g.a(x)}, 0, out={g.a(x)})")
        g.alias(node, g.a(x))
        return None
    # relu, or relu_ in a training step (the plan admits it only on an intermediate value:
    # later nodes read the output's name, so it is relu into x's buffer when nothing else
    # reads x, else into a buffer of its own)
    out = _unary_out(g, node, x)
    # a 0-d operand (no conversion of a Python 0); for small outputs a zero array of the
    # output's own shape: NumPy's ufuncs are ~0.4 us faster per call without a broadcast
    shape = g.shape(x)
    zshape = shape if int(np.prod(shape)) <= 16384 else ()
    zero = g.const(g.xp.zeros(zshape, dtype=g.dtype(x)), "zero")
    g.emit(f"xp.maximum({g.a(x)}, {zero}, out={out})")


@pointwise("relu", "relu_")
def _relu_pointwise(g, node):
    x = _unary_ok(g, node)
    if x is None or g.dtype(x).kind not in "fiu" or (
            node.op == "relu_" and not g.functional_inplace(node)):
        return None
    return [("t", x)], "vmax({0}, A(0))"  # numpy.maximum's NaN and signed zero


@vjp("relu", "relu_")
def _relu_vjp(g, node, gouts):
    x = g.tensor_args(node)[0]
    gx = g.new("g")
    g.emit(f"{gx} = xp.multiply({gouts[0][0]}, {g.a(node.outputs[0][0])} > 0)")
    return [(x, gx, True)]


# unary ufuncs: (dtype kinds lowered, the ufunc, what the gradient needs saved, the gradient
# of the input from the output's gradient {g}, the input {x}, the output {y} and the dtype
# {dt}, written as the eager backward computes it, the CUDA expression as CuPy's ufunc)
_UNARY = {
    "tanh": ("f", "xp.tanh", "output", "{g} * (1 - {y} * {y})", "tanh({0})"),
    "exp": ("f", "xp.exp", "output", "{g} * {y}", "exp({0})"),
    "neg": ("fi", "xp.negative", "", "-{g}", "-{0}"),
    "log": ("f", "xp.log", "inputs", "{g} / {x}", "log({0})"),
    "sqrt": ("f", "xp.sqrt", "output", "{g} / ({y} * 2)", "sqrt({0})"),
    # the gradient times sgn(x): (x > 0) - (x < 0), 0 at NaN and at both zeros
    "abs": ("fi", "xp.absolute", "inputs",
            "{g} * (({x} > 0).astype({dt}) - ({x} < 0).astype({dt}))", "fabs({0})"),
}


def _register_unary(name: str, kinds: str, ufunc: str, saves: str, grad: str,
                    cuda: str) -> None:
    def operand(g, node):
        x = _unary_ok(g, node)
        return x if x is not None and g.dtype(x).kind in kinds else None

    @forward(name, saves=saves, inplace=True)
    def lower(g, node):
        x = operand(g, node)
        if x is None:
            return False
        out = _unary_out(g, node, x)
        g.emit(f"{ufunc}({g.a(x)}, out={out})")

    @pointwise(name)
    def lower_pointwise(g, node):
        x = operand(g, node)
        return None if x is None else ([("t", x)], cuda)

    @vjp(name)
    def lower_vjp(g, node, gouts):
        return [(g.tensor_args(node)[0], _vjp_expr(g, node, gouts, grad), True)]


def _pow_const(g) -> str:
    """The generated code's name for ``arith.pow_scalar_out`` (a power as eager computes it)."""
    from ..ops.arith import pow_scalar_out

    return g.const(pow_scalar_out, "pow")


def _vjp_expr(g, node, gouts, template: str) -> str:
    """``gx = template`` with ``{g}`` the output's gradient, ``{x}`` the (first) input, ``{y}``
    the output and ``{dt}`` the input's dtype; returns ``gx``."""
    x = g.tensor_args(node)[0]
    gx = g.new("g")
    g.emit(f"{gx} = " + template.format(g=gouts[0][0], x=g.a(x), y=g.a(node.outputs[0][0]),
                                        dt=g.const(g.dtype(x), "dt")))
    return gx


for _name, _row in _UNARY.items():
    _register_unary(_name, *_row)


def _clone_source(g, node):
    ins = g.tensor_args(node)
    if len(ins) != 1 or len(node.args) != 1 or any(
            k != "memory_format" or g.decode(v) is not None for k, v in node.kwargs.items()):
        return None
    return ins[0]


@forward("clone", "Tensor.clone", saves="")
def _clone(g, node):
    """``x.clone()`` (default memory format): a copy in a buffer of its own."""
    x = _clone_source(g, node)
    if x is None:
        return False
    out = g.out(node)
    g.emit(f"xp.copyto({out}, {g.a(x)})")


@pointwise("clone", "Tensor.clone")
def _clone_pointwise(g, node):
    x = _clone_source(g, node)
    return None if x is None else ([("t", x)], "{0}")


@vjp("clone", "Tensor.clone")
def _clone_vjp(g, node, gouts):
    return [(g.tensor_args(node)[0], gouts[0][0], gouts[0][1])]


def _copy_operands(g, node):
    ins = g.tensor_args(node)
    if len(ins) != 2 or len(node.args) != 2 or node.kwargs or not g.functional_inplace(node):
        return None
    dst, src = ins
    if g.shape(dst) != g.shape(src) or g.dtype(dst) != g.dtype(src):
        return None
    return dst, src


@forward("Tensor.copy_", saves="")
def _copy(g, node):
    """``dst.copy_(src)`` of one shape and dtype in a training step, on an intermediate
    ``dst`` (the plan's condition): the output is ``src``'s value, in ``dst``'s buffer when
    nothing else reads ``dst``, else in a buffer of its own."""
    operands = _copy_operands(g, node)
    if operands is None:
        return False
    dst, src = operands
    out = _unary_out(g, node, dst)
    g.emit(f"xp.copyto({out}, {g.a(src)})")


@pointwise("Tensor.copy_")
def _copy_pointwise(g, node):
    operands = _copy_operands(g, node)
    return None if operands is None else ([("t", operands[1])], "{0}")


@vjp("Tensor.copy_")
def _copy_vjp(g, node, gouts):
    # the old value of dst is overwritten: no gradient reaches it; src gets the gradient
    return [(g.tensor_args(node)[1], gouts[0][0], gouts[0][1])]


@forward("zero_", "Tensor.zero_", saves="", inplace=True)
def _zero(g, node):
    """``t.zero_()`` (``model.zero_grad(set_to_none=False)``, ``p.grad.zero_()``): in place."""
    ins = g.tensor_args(node)
    if len(ins) != 1 or len(node.args) != 1 or node.kwargs:
        return False
    g.emit(f"{g.a(ins[0])}[...] = 0")
    g.alias(node, g.a(ins[0]))


_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
           "rsub": "subtract"}
_BINARY_C = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rsub": "-"}


def _binary_operands(g, node):
    """``(a, b)`` as (kind, value) pairs ("t", name) / ("s", scalar), or None; ``rsub(input,
    other)`` is ``other - input`` (``1 - g``), its operands in that order."""
    op = node.op
    params = ["input", "other"]
    b = bind(g, node, params, {})
    if b is None or len(node.args) != 2:
        return None
    out_dt = g.dtype(node.outputs[0][0])
    ops = []
    for key in params:
        v = b[key]
        name = tname(v)
        if name is not None:
            if g.dtype(name) != out_dt:
                return None
            ops.append(("t", name))
        elif type(v) in (int, float) and not isinstance(v, bool):
            if type(v) is float and out_dt.kind != "f":
                return None
            ops.append(("s", v))
        else:
            return None
    if not any(k == "t" for k, _ in ops) or op == "div" and out_dt.kind != "f" \
            or op == "rsub" and out_dt.kind == "b":
        return None
    return ops[::-1] if op == "rsub" else ops


@forward("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "rsub", saves="inputs",
         inplace=True)
def _binary(g, node):
    """``a op b``; the in-place forms (``out += identity`` in a residual block) only in a
    training step on an intermediate value (the plan's condition), computed as the
    functional op."""
    if node.op.endswith("_") and not g.functional_inplace(node):
        return False
    ops = _binary_operands(g, node)
    if ops is None:
        return False
    ufunc = _BINARY[node.op.rstrip("_")]
    outname = node.outputs[0][0]
    shape = g.shape(outname)
    target = None
    if not g.training:
        for kind, v in ops:
            if kind == "t" and g.shape(v) == shape and g.can_overwrite(v, node):
                target = g.alias(node, g.a(v))
                break
    if target is None:
        target = g.out(node)
    exprs = [g.a(v) if k == "t" else _lit(v) for k, v in ops]
    g.emit(f"xp.{ufunc}({exprs[0]}, {exprs[1]}, out={target})")


SAVES["add"] = SAVES["sub"] = SAVES["add_"] = SAVES["sub_"] = SAVES["rsub"] = ""


@pointwise("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "rsub")
def _binary_pointwise(g, node):
    if node.op.endswith("_") and not g.functional_inplace(node):
        return None
    ops = _binary_operands(g, node)
    if ops is None:
        return None
    return ops, f"{{0}} {_BINARY_C[node.op.rstrip('_')]} {{1}}"


@vjp("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "rsub")
def _binary_vjp(g, node, gouts):
    ops = _binary_operands(g, node)
    op = "sub" if node.op == "rsub" else node.op.rstrip("_")
    gy = gouts[0][0]
    out = []
    ns = g.const(sum_to, "sum_to")
    for i, (kind, v) in enumerate(ops):
        if kind != "t" or not g.requires.get(v):
            continue
        other = ops[1 - i]
        o = g.a(other[1]) if other[0] == "t" else _lit(other[1])
        if op == "add":
            expr = gy
        elif op == "sub":
            expr = gy if i == 0 else f"-{gy}"
        elif op == "mul":
            expr = f"{gy} * {o}"
        elif i == 0:
            expr = f"{gy} / {o}"
        else:  # d(a / b)/db = -a / b**2 (b: this operand, a: the other)
            b = g.a(v)
            expr = f"-{gy} * {o} / ({b} * {b})"
        gv = g.new("g")
        g.emit(f"{gv} = {ns}({expr}, {g.shape(v)!r})")
        out.append((v, gv, expr != gy))
    return out


# -- more elementwise ops: each as the eager kernel computes it --------------------------------

def _number(v) -> bool:
    """A Python int or float (not a bool): a weak scalar for NumPy, CuPy and PyTorch."""
    return type(v) in (int, float)


def _opmath_input(g, x):
    """``(array expression, wide dtype or None)``: float16 computes in float32 as the eager
    kernels' opmath (``_dtype.opmath``) does, rounded to float16 once at the end."""
    if g.dtype(x) == np.float16:
        w = g.new("w")
        g.emit(f"{w} = {g.a(x)}.astype({g.const(np.dtype(np.float32), 'dt')})")
        return w, np.dtype(np.float32)
    return g.a(x), None


def _emit_sigmoid(g, src: str, dst: str) -> None:
    """``dst = 1 / (1 + exp(-src))`` as ``_special.sigmoid``: in place, four ufuncs."""
    g.emit(f"xp.negative({src}, out={dst})")
    g.emit(f"xp.exp({dst}, out={dst})")
    g.emit(f"xp.add({dst}, 1, out={dst})")
    g.emit(f"xp.reciprocal({dst}, out={dst})")


def _float_unary(g, node):
    x = _unary_ok(g, node)
    return x if x is not None and g.dtype(x).kind == "f" else None


@forward("sigmoid", saves="output", inplace=True)
def _sigmoid(g, node):
    x = _float_unary(g, node)
    if x is None:
        return False
    src, wide = _opmath_input(g, x)
    if wide is None:
        _emit_sigmoid(g, src, _unary_out(g, node, x))
        return None
    _emit_sigmoid(g, src, src)
    g.emit(f"xp.copyto({_unary_out(g, node, x)}, {src}, casting='same_kind')")


@pointwise("sigmoid")
def _sigmoid_pointwise(g, node):
    x = _float_unary(g, node)
    return None if x is None else ([("t", x)], "1 / (1 + exp(-{0}))")


@vjp("sigmoid")
def _sigmoid_vjp(g, node, gouts):
    return [(g.tensor_args(node)[0], _vjp_expr(g, node, gouts, "{g} * {y} * (1 - {y})"), True)]


@forward("rsqrt", saves="output", inplace=True)
def _rsqrt(g, node):
    """``1 / sqrt(x)``: two ufuncs, each rounding (``pointwise._rsqrt_np``)."""
    x = _float_unary(g, node)
    if x is None:
        return False
    out = _unary_out(g, node, x)
    g.emit(f"xp.sqrt({g.a(x)}, out={out})")
    g.emit(f"xp.divide(1, {out}, out={out})")


@pointwise("rsqrt")
def _rsqrt_pointwise(g, node):
    x = _float_unary(g, node)
    return None if x is None else ([("t", x)], "1 / A(T(sqrt({0})))")


@vjp("rsqrt")
def _rsqrt_vjp(g, node, gouts):
    return [(g.tensor_args(node)[0],
             _vjp_expr(g, node, gouts, "{g} * " + _pow_const(g) + "({y}, 3) * -0.5"), True)]


def _silu_grad(x):
    """``silu'(x)`` as the eager backward computes it (``activation._silu_grad_np``, opmath)."""
    from .. import _dtype
    from ..ops.activation import _silu_grad_np

    with np.errstate(over="ignore", invalid="ignore"):
        d = _dtype.opmath(_silu_grad_np)(x)
    return d.astype(x.dtype, copy=False)


@forward("silu", saves="inputs")
def _silu(g, node):
    """``x * sigmoid(x)`` (``activation._silu_np``), in a buffer of its own: x is read last."""
    x = _float_unary(g, node)
    if x is None:
        return False
    src, wide = _opmath_input(g, x)
    if wide is None:
        out = g.out(node)
        _emit_sigmoid(g, src, out)
        g.emit(f"xp.multiply({src}, {out}, out={out})")
        return None
    s = g.new("s")
    g.emit(f"{s} = xp.empty_like({src})")
    _emit_sigmoid(g, src, s)
    g.emit(f"xp.multiply({src}, {s}, out={s})")
    g.emit(f"xp.copyto({g.out(node)}, {s}, casting='same_kind')")


@pointwise("silu")
def _silu_pointwise(g, node):
    x = _float_unary(g, node)
    return None if x is None else ([("t", x)], "{0} * (1 / (1 + exp(-{0})))")


@vjp("silu")
def _silu_vjp(g, node, gouts):
    grad = g.const(_silu_grad, "silu_grad")
    return [(g.tensor_args(node)[0],
             _vjp_expr(g, node, gouts, "xp.multiply({g}, " + grad + "({x}))"), True)]


def _gelu_operand(g, node):
    """``(x, approximate)`` of a float ``gelu`` node, or None."""
    b = bind(g, node, ["input", "approximate"], {"approximate": "none"})
    if b is None:
        return None
    x = tname(b["input"])
    if x is None or b["approximate"] not in ("none", "tanh") or g.dtype(x).kind != "f" \
            or g.dtype(x) != g.dtype(node.outputs[0][0]):
        return None
    return x, b["approximate"]


def _gelu_forward(x, approximate: str, with_grad: bool, fused):
    """``(gelu(x), gelu'(x) or None)`` as ``activation.gelu`` computes them: the backend's fused
    kernel (CUDA), else the eager op's arrays (``activation.gelu_forward_arrays``)."""
    from ..ops.activation import gelu_forward_arrays

    if fused is not None:
        return fused(x, approximate), None
    return gelu_forward_arrays(x, approximate, with_grad)


@forward("gelu", saves="inputs")
def _gelu(g, node):
    operand = _gelu_operand(g, node)
    if operand is None:
        return False
    x, approximate = operand
    from .._device import fused_kernel

    fused = g.const(fused_kernel(g.device, "gelu"), "gelu_kernel")
    out, deriv = "v_" + node.outputs[0][0], g.new("d")
    with_grad = node.name in g.on_path
    g.emit(f"{out}, {deriv} = {g.const(_gelu_forward, 'gelu')}({g.a(x)}, {approximate!r}, "
           f"{with_grad}, {fused})")
    g.alias(node, out)
    g.gelu_derivs = getattr(g, "gelu_derivs", {})
    g.gelu_derivs[node.name] = deriv


@pointwise("gelu")
def _gelu_pointwise(g, node):
    operand = _gelu_operand(g, node)
    if operand is None:
        return None
    from ..cuda._kernels import GELU

    (_, expr), = GELU[operand[1]]  # the fused CUDA kernel's formula, x as the operand
    return [("t", operand[0])], re.sub(r"\bx\b", "({0})", expr)


@vjp("gelu")
def _gelu_vjp(g, node, gouts):
    from ..ops.activation import gelu_backward_arrays

    x, approximate = _gelu_operand(g, node)
    gx = g.new("g")
    g.emit(f"{gx} = {g.const(gelu_backward_arrays, 'gelu_bw')}({gouts[0][0]}, {g.a(x)}, "
           f"{g.gelu_derivs[node.name]}, {approximate!r})")
    return [(x, gx, True)]


def _pow_operands(g, node):
    """``(x, exponent)`` of ``pow`` of a float tensor by a Python number, or None."""
    b = bind(g, node, ["input", "exponent"], {})
    if b is None:
        return None
    x, e = tname(b["input"]), b["exponent"]
    if x is None or not _number(e) or g.dtype(x).kind != "f" \
            or g.dtype(x) != g.dtype(node.outputs[0][0]):
        return None
    return x, e


@forward("pow", saves="inputs", inplace=True)
def _pow(g, node):
    """``x ** e`` as eager computes it (``arith.pow_scalar_out``: PyTorch's products and roots
    for 2, 3, -1, -2, 0.5, -0.5 on the CPU, ``xp.power`` else)."""
    operands = _pow_operands(g, node)
    if operands is None:
        return False
    x, e = operands
    g.emit(f"{_pow_const(g)}({g.a(x)}, {_lit(e)}, out={_unary_out(g, node, x)})")


@pointwise("pow")
def _pow_pointwise(g, node):
    operands = _pow_operands(g, node)
    return None if operands is None else ([("t", operands[0]), ("s", operands[1])],
                                          "pow({0}, {1})")


@vjp("pow")
def _pow_vjp(g, node, gouts):
    x, e = _pow_operands(g, node)  # arith._pow_bw: g * e * x ** (e - 1); g * 0 for e == 0
    template = "{g} * 0" if e == 0 else "{g} * " + _lit(e) + " * " + _pow_const(g) + \
        "({x}, " + _lit(e - 1) + ")"
    return [(x, _vjp_expr(g, node, gouts, template), True)]


_CLAMP_PARAMS = {"clamp": ["input", "min", "max"], "clamp_min": ["input", "min"],
                 "clamp_max": ["input", "max"]}


def _clamp_operands(g, node):
    """``(x, low, high)`` of a float tensor clamped by Python numbers (or None for an absent
    bound; not both), or None."""
    b = bind(g, node, _CLAMP_PARAMS[node.op], {"min": None, "max": None})
    if b is None:
        return None
    x, low, high = tname(b["input"]), b.get("min"), b.get("max")
    if x is None or g.dtype(x).kind != "f" or g.dtype(x) != g.dtype(node.outputs[0][0]) \
            or (low is None and high is None) \
            or any(v is not None and not _number(v) for v in (low, high)):
        return None
    return x, low, high


@forward("clamp", "clamp_min", "clamp_max", saves="inputs", inplace=True)
def _clamp(g, node):
    """``minimum(maximum(x, low), high)`` as ``pointwise._clamp``'s path for numbers."""
    operands = _clamp_operands(g, node)
    if operands is None:
        return False
    x, low, high = operands
    out = _unary_out(g, node, x)
    src = g.a(x)
    if low is not None:
        g.emit(f"xp.maximum({src}, {_lit(low)}, out={out})")
        src = out
    if high is not None:
        g.emit(f"xp.minimum({src}, {_lit(high)}, out={out})")


@pointwise("clamp", "clamp_min", "clamp_max")
def _clamp_pointwise(g, node):
    operands = _clamp_operands(g, node)
    if operands is None:
        return None
    x, low, high = operands
    ops, expr = [("t", x)], "{0}"
    if low is not None:
        ops.append(("s", low))
        expr = f"vmax({expr}, {{{len(ops) - 1}}})"
    if high is not None:  # numpy.minimum: NaN kept, minimum(a, b) == -maximum(-a, -b)
        ops.append(("s", high))
        expr = f"-vmax(-{expr}, -{{{len(ops) - 1}}})"
    return ops, expr


@vjp("clamp", "clamp_min", "clamp_max")
def _clamp_vjp(g, node, gouts):
    x, low, high = _clamp_operands(g, node)  # pointwise._clamp_scalar_bw
    xa = g.a(x)
    masks = ([f"({xa} >= {_lit(low)})"] if low is not None else []) + \
        ([f"({xa} <= {_lit(high)})"] if high is not None else [])
    zero = g.const(g.dtype(x).type(0), "zero")
    gx = g.new("g")
    g.emit(f"{gx} = xp.where({' & '.join(masks)}, {gouts[0][0]}, {zero})")
    return [(x, gx, True)]


_COMPARE = {"lt": ("less", "<"), "le": ("less_equal", "<="), "gt": ("greater", ">"),
            "ge": ("greater_equal", ">="), "eq": ("equal", "=="), "ne": ("not_equal", "!=")}


def _compare_operands(g, node):
    """``[("t", a), ("t", b) or ("s", number)]`` of a comparison whose operands the eager op
    passes to NumPy as they are (one dtype, or a number the tensor's dtype takes without a
    cast: ``_promotion.coerce``), or None."""
    b = bind(g, node, ["input", "other"], {})
    if b is None or g.dtype(node.outputs[0][0]) != np.bool_:
        return None
    a = tname(b["input"])
    if a is None or g.dtype(a).kind not in "biuf":
        return None
    dt, other = g.dtype(a), b["other"]
    name = tname(other)
    if name is not None:
        return [("t", a), ("t", name)] if g.dtype(name) == dt else None
    if not _number(other) or dt.kind == "b" or type(other) is float and dt.kind != "f":
        return None
    if dt.kind in "iu" and not np.iinfo(dt).min <= other <= np.iinfo(dt).max:
        return None  # the eager op wraps it first
    return [("t", a), ("s", other)]


@forward(*_COMPARE, saves="")
def _compare(g, node):
    operands = _compare_operands(g, node)
    if operands is None:
        return False
    args = [g.a(v) if k == "t" else _lit(v) for k, v in operands]
    g.emit(f"xp.{_COMPARE[node.op][0]}({args[0]}, {args[1]}, out={g.out(node)})")


@pointwise(*_COMPARE)
def _compare_pointwise(g, node):
    operands = _compare_operands(g, node)
    return None if operands is None else (operands, f"{{0}} {_COMPARE[node.op][1]} {{1}}")


def _where_operands(g, node):
    """``[("t", condition), a, b]`` of ``where`` with a bool condition and tensors of the
    output's dtype or numbers (eager: ``_scalar_as`` of the output's dtype), or None."""
    b = bind(g, node, ["condition", "input", "other"], {})
    if b is None:
        return None
    cond, out_dt = tname(b["condition"]), g.dtype(node.outputs[0][0])
    if cond is None or g.dtype(cond) != np.bool_ or out_dt.kind not in "biuf":
        return None
    ops = [("t", cond)]
    for key in ("input", "other"):
        v = b[key]
        name = tname(v)
        if name is not None and g.dtype(name) == out_dt:
            ops.append(("t", name))
        elif _number(v) and out_dt.kind == "f":
            ops.append(("s", v))
        else:
            return None
    return ops if any(k == "t" for k, _ in ops[1:]) else None


@forward("where", saves="inputs")
def _where(g, node):
    operands = _where_operands(g, node)
    if operands is None:
        return False
    dt = g.dtype(node.outputs[0][0])
    args = [g.a(v) if k == "t" else g.const(dt.type(v), "s") for k, v in operands]
    g.set_expr(node, f"xp.where({', '.join(args)})")


@pointwise("where")
def _where_pointwise(g, node):
    operands = _where_operands(g, node)
    return None if operands is None else (operands, "pick({0}, {1}, {2})")


@vjp("where")
def _where_vjp(g, node, gouts):
    (_, cond), *values = _where_operands(g, node)  # pointwise._where_bw
    gy = gouts[0][0]
    zero = g.const(g.dtype(node.outputs[0][0]).type(0), "zero")
    ns = g.const(sum_to, "sum_to")
    out = []
    for i, (kind, v) in enumerate(values):
        if kind != "t" or not g.requires.get(v):
            continue
        picked = f"{gy}, {zero}" if i == 0 else f"{zero}, {gy}"
        gv = g.new("g")
        g.emit(f"{gv} = {ns}(xp.where({g.a(cond)}, {picked}), {g.shape(v)!r})")
        out.append((v, gv, True))
    return out


_CAST_METHODS = ("Tensor.float", "Tensor.double", "Tensor.half", "Tensor.long", "Tensor.int",
                 "Tensor.bool")


def _cast_source(g, node):
    """The tensor a dtype cast reads (``Tensor.float()``, ``.double()``, ``.half()``,
    ``.long()``, ``.int()``, ``.bool()``, ``.to(dtype)``, ``.type_as(other)``) between bool,
    integer and float dtypes, or None."""
    from .._dtype import dtype as ember_dtype

    ins = g.tensor_args(node)
    args = g.decode(node.args)
    kwargs = {k: g.decode(v) for k, v in node.kwargs.items()}
    if node.op in _CAST_METHODS:
        ok = len(args) == 1 and not kwargs
    elif node.op == "Tensor.to":
        given = args[1:] + [kwargs[k] for k in kwargs if k == "dtype"]
        ok = len(given) == 1 and len(args) + len(kwargs) == 2 and \
            isinstance(given[0], ember_dtype)
    else:  # Tensor.type_as
        ok = len(args) == 2 and len(ins) == 2 and not kwargs
    if not ok or not ins:
        return None
    x = ins[0]
    if g.dtype(x).kind not in "biuf" or g.dtype(node.outputs[0][0]).kind not in "biuf":
        return None
    return x


@forward(*_CAST_METHODS, "Tensor.to", "Tensor.type_as", saves="")
def _cast(g, node):
    """A dtype cast (``ops._casts.cast_to``: ``astype``), or the tensor itself when it has the
    dtype already."""
    x = _cast_source(g, node)
    if x is None:
        return False
    if g.dtype(x) == g.dtype(node.outputs[0][0]):
        g.alias(node, g.a(x))
        return None
    g.emit(f"xp.copyto({g.out(node)}, {g.a(x)}, casting='unsafe')")


_CASTS.update(_CAST_METHODS, {"Tensor.to", "Tensor.type_as"})


@pointwise(*_CAST_METHODS, "Tensor.to", "Tensor.type_as")
def _cast_pointwise(g, node):
    x = _cast_source(g, node)
    out_dt = g.dtype(node.outputs[0][0])
    if x is None or g.dtype(x) == out_dt:
        return None  # the tensor itself: no kernel value of its own
    return [("t", x)], "{0} != 0" if out_dt.kind == "b" else "{0}"  # a bool is 1 or 0


@vjp(*_CAST_METHODS, "Tensor.to", "Tensor.type_as")
def _cast_vjp(g, node, gouts):
    x = _cast_source(g, node)  # _casts._to_copy_backward: the gradient in the input's dtype
    gy, owned = gouts[0]
    if g.dtype(x) == g.dtype(node.outputs[0][0]):
        return [(x, gy, owned)]
    gx = g.new("g")
    g.emit(f"{gx} = {gy}.astype({g.const(g.dtype(x), 'dt')})")
    return [(x, gx, True)]


# -- views ---------------------------------------------------------------------------------

@forward("reshape", "view", "Tensor.view", "Tensor.reshape", "flatten", "Tensor.flatten",
         "squeeze", "unsqueeze", saves="", view=True)
def _reshape(g, node):
    ins = g.tensor_args(node)
    if len(ins) != 1 or g.dtype(ins[0]) != g.dtype(node.outputs[0][0]):
        return False  # Tensor.view(dtype)
    x = ins[0]
    shape = g.shape(node.outputs[0][0])
    buf = g.buffers.get(x)
    if buf is not None and x not in g.fresh and node.outputs[0][0] not in g.fresh:
        view = buf.reshape(shape)
        # a reshape of a non-contiguous view (a permuted buffer) is a copy, made now: taken
        # as a view it would hold the capture's stale values on every call
        if g.xp.may_share_memory(view, buf):
            g.buffers[node.outputs[0][0]] = view
            g.set_expr(node, g.const(view, "view"))
            return None
    g.set_expr(node, f"{g.a(x)}.reshape({shape!r})")


@vjp("reshape", "view", "Tensor.view", "Tensor.reshape", "flatten", "Tensor.flatten",
     "squeeze", "unsqueeze")
def _reshape_vjp(g, node, gouts):
    x = g.tensor_args(node)[0]
    gx = g.new("g")
    g.emit(f"{gx} = {gouts[0][0]}.reshape({g.shape(x)!r})")
    return [(x, gx, gouts[0][1])]


def _perm(g, node):
    x = g.tensor_args(node)[0]
    n = len(g.shape(x))
    args = g.decode(node.args)[1:]
    kwargs = {k: g.decode(v) for k, v in node.kwargs.items()}
    if node.op in ("transpose", "swapaxes", "Tensor.transpose"):
        dims = list(args) + [kwargs.get("dim0"), kwargs.get("dim1")]
        d0, d1 = [d for d in dims if d is not None][:2]
        perm = list(range(n))
        perm[d0 % n], perm[d1 % n] = perm[d1 % n], perm[d0 % n]
        return x, perm
    if node.op in ("t", "Tensor.t", "Tensor.T"):
        return x, list(range(n))[::-1]
    dims = args[0] if args else kwargs.get("dims")
    return x, [d % n for d in dims]


@forward("transpose", "Tensor.transpose", "permute", "Tensor.permute", "t", "Tensor.t",
         "Tensor.T", saves="", view=True)
def _permute(g, node):
    try:
        x, perm = _perm(g, node)
    except (TypeError, ValueError, IndexError):
        return False
    buf = g.buffers.get(x)
    if buf is not None and x not in g.fresh and node.outputs[0][0] not in g.fresh:
        view = buf.transpose(perm)
        g.buffers[node.outputs[0][0]] = view
        g.set_expr(node, g.const(view, "view"))
        return None
    g.set_expr(node, f"{g.a(x)}.transpose({tuple(perm)!r})")


@vjp("transpose", "Tensor.transpose", "permute", "Tensor.permute", "t", "Tensor.t",
     "Tensor.T")
def _permute_vjp(g, node, gouts):
    x, perm = _perm(g, node)
    inverse = tuple(int(i) for i in np.argsort(perm))
    gx = g.new("g")
    g.emit(f"{gx} = {gouts[0][0]}.transpose({inverse!r})")
    return [(x, gx, False)]


# -- losses ------------------------------------------------------------------------------

_CE = ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
       "label_smoothing"]
_CE_DEFAULTS = {"weight": None, "size_average": None, "ignore_index": -100, "reduce": None,
                "reduction": "mean", "label_smoothing": 0.0}


def _ce_check(t, C):
    """PyTorch's error for a class index out of range (the eager kernel's check)."""
    if t.size and (int(t.max()) >= C):
        raise IndexError(f"Target {int(t.max())} is out of bounds.")


@forward("cross_entropy", saves="inputs")
def _cross_entropy(g, node):
    b = bind(g, node, _CE, _CE_DEFAULTS)
    if b is None:
        return False
    x, t = tname(b["input"]), tname(b["target"])
    if x is None or t is None or b["weight"] is not None or b["size_average"] is not None \
            or b["reduce"] is not None or b["label_smoothing"] \
            or b["reduction"] not in ("mean", "sum") or type(b["ignore_index"]) is not int:
        return False
    xs, ts = g.shape(x), g.shape(t)
    dt = g.dtype(x)
    if len(xs) != 2 or ts != xs[:1] or g.dtype(t).kind not in "iu" or dt.kind != "f" \
            or not xs[0] or not xs[1]:
        return False
    N, C = xs
    ignore = b["ignore_index"]
    xa, ta = g.a(x), g.a(t)
    xp = g.xp
    if getattr(g, "autograd", False):  # its backward runs after the call: an array per call
        E = g.new("E")
        g.emit(f"{E} = xp.empty({xs!r}, {g.const(dt, 'dt')})")
    else:
        E = g.const(xp.empty(xs, dtype=dt), "buf")
    ar = g.const(xp.arange(N), "ar")
    m, z, logz, tc, w, den = (g.new(n) for n in ("m", "z", "lz", "tc", "w", "den"))
    g.emit(f"{m} = {xa}.max(1, keepdims=True)")
    g.emit(f"xp.subtract({xa}, {m}, out={E})")
    g.emit(f"xp.exp({E}, out={E})")
    g.emit(f"{z} = {E}.sum(1, keepdims=True)")
    g.emit(f"{logz} = xp.log({z})")
    g.emit(f"{w} = ({ta} != {ignore}).astype({g.const(dt, 'dt')})")
    g.emit(f"{tc} = xp.where({ta} != {ignore}, {ta}, 0)")
    g.emit(f"{g.const(_ce_check, 'cec')}({tc}, {C})")
    picked = f"(({xa}[{ar}, {tc}] - {m}.reshape({N})) - {logz}.reshape({N}))"
    row = g.new("row")
    g.emit(f"{row} = -({picked} * {w})")
    if b["reduction"] == "mean":
        g.emit(f"{den} = {w}.sum()")
        total = f"{row}.sum() / {den}"
    else:
        g.emit(f"{den} = None")
        total = f"{row}.sum()"
    g.ce = getattr(g, "ce", {})
    g.ce[node.name] = (E, z, tc, w, den, ar)
    g.set_expr(node, f"xp.asarray({total}, dtype={g.const(dt, 'dt')})")


@vjp("cross_entropy")
def _cross_entropy_vjp(g, node, gouts):
    x = g.tensor_args(node)[0]
    E, z, tc, w, den, ar = g.ce[node.name]
    gy = gouts[0][0]
    gx, scale = g.new("g"), g.new("s")
    g.emit(f"{gx} = {E} / {z}")
    g.emit(f"{gx}[{ar}, {tc}] -= 1")
    g.emit(f"{scale} = {w} * ({gy} / {den})" if den and _mean(g, node) else
           f"{scale} = {w} * {gy}")
    g.emit(f"{gx} *= {scale}[:, None]")
    return [(x, gx, True)]


def _mean(g, node) -> bool:
    return bind(g, node, _CE, _CE_DEFAULTS)["reduction"] == "mean"
