"""Elementwise chains of a compiled graph as one CUDA kernel each.

On the CPU a compiled graph's elementwise ops run one by one as NumPy calls writing into
buffers (``out=``). On a backend that has the ``elementwise_chain`` kernel (CUDA's, from
``ember.cuda._kernels``; a test device may carry it too) a run of consecutive lowered
elementwise nodes of one floating dtype and one output shape becomes ONE generated
``ElementwiseKernel``: the chain's inputs (any shape that broadcasts to the chain's) and
scalars go in, the values that something outside the chain reads come out, and the values
only the chain itself reads stay in registers. Each op's expression is its lowering's
(``_lowerings.POINTWISE``), computed in the compute type (float32 for float16) and rounded to
the value's dtype after every op, as the unfused ops round; a scalar is rounded to the
dtype first, as NumPy and CuPy convert a Python scalar. The kernels compile without
multiply-add contraction, so a chain of ``+ - * /`` equals its unfused sequence bit for bit;
``exp``, ``tanh``, ``log``, ``sqrt``, ``pow``, ``erf`` are the device's math functions, as in
CuPy's ufuncs (and GELU is the formula of CUDA's fused GELU kernel, as eager runs it). A
comparison's bool result stays in a register (1 or 0) for the ``where`` or the cast in the same
chain that reads it: a kernel's arrays are all of the chain's float dtype, so a comparison
whose result something outside the chain reads, and a node reading a bool made outside the
chain, run as array code (``_bool_safe``).

What is not a chain runs as before: a node without a CUDA expression (an op with no
``POINTWISE`` entry, an argument its lowering leaves to the fallback), a real in-place write
(``relu_``/``add_``... on state outside the graph; the functional forms inside a training
step are fused), integer dtypes and bool arrays, a node whose output shape differs from the
chain's, and a chain of a single op (already one kernel). The backward's VJP expressions are CuPy
expressions, not fused.
"""

from __future__ import annotations

import numpy as np

__all__ = ["chain_kernel", "find_chains", "emit_chain", "Chain"]

#: the backend kernel that builds a chain's ElementwiseKernel
KERNEL = "elementwise_chain"

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_BOOL = np.dtype(np.bool_)


def chain_kernel(gen):
    """The backend's chain-kernel builder for the graph's device, or None (the CPU, a test
    device without it, or a graph on more than one device)."""
    from .._device import fused_kernel

    if not gen.single_device:
        return None
    return fused_kernel(gen.device, KERNEL)


class Chain:
    """Consecutive fusible nodes: ``nodes``, each node's ``(operands, expression)`` in
    ``specs``, the one ``dtype`` and output ``shape``."""

    __slots__ = ("nodes", "specs", "dtype", "shape")

    def __init__(self, dtype, shape):
        self.nodes: list = []
        self.specs: list = []
        self.dtype, self.shape = dtype, shape

    def ops(self) -> list:
        return [n.op for n in self.nodes]


def _spec(gen, node, plan):
    """``(operands, expression, dtype, shape)`` of a node a chain may hold, or None."""
    from ._lowerings import POINTWISE

    fn = POINTWISE.get(node.op)
    if fn is None or plan.get(node.name) != "lower" or len(node.outputs) != 1 \
            or node.outputs[0] is None:
        return None
    spec = fn(gen, node)
    if spec is None:
        return None
    operands, expr = spec
    out = node.outputs[0][0]
    dtype, shape = gen.dtype(out), gen.shape(out)
    if dtype == _BOOL:  # a comparison: a chain of its operands' dtype holds it in a register
        dtype = next((gen.dtype(v) for kind, v in operands if kind == "t"), None)
    if dtype not in _FLOATS:
        return None
    for kind, v in operands:
        if kind == "t" and gen.dtype(v) not in (dtype, _BOOL):
            return None
        if kind == "s" and _scalar(v, dtype) is None:
            return None
    return operands, expr, dtype, shape


def _scalar(value, dtype):
    """A Python scalar as the kernel takes it: rounded to ``dtype`` (as NumPy and CuPy convert
    a Python scalar for an array of that dtype), as a Python float; None when it does not fit
    (overflow to infinity: left to the array code, which warns as NumPy does)."""
    try:
        with np.errstate(over="ignore"):
            rounded = dtype.type(value)
    except OverflowError:  # an int past float64's range
        return None
    if np.isinf(rounded) and not np.isinf(value):
        return None
    return float(rounded)


def find_chains(gen, nodes, plan) -> dict:
    """``{first node's name: Chain}`` of the graph's chains of two or more nodes."""
    chains: dict = {}
    current = None

    def close():
        if current is not None and len(current.nodes) > 1:
            chains[current.nodes[0].name] = current

    for node in nodes:
        spec = _spec(gen, node, plan)
        if spec is None:
            close()
            current = None
            continue
        operands, expr, dtype, shape = spec
        if current is None or current.dtype != dtype or current.shape != shape:
            close()
            current = Chain(dtype, shape)
        current.nodes.append(node)
        current.specs.append((operands, expr))
    close()
    return {c.nodes[0].name: c for chain in chains.values() for c in _bool_safe(gen, chain)}


def _is_bool(gen, value: str) -> bool:
    return gen.dtype(value) == _BOOL


def _bool_safe(gen, chain: Chain) -> list:
    """``chain`` cut into the chains (of two or more nodes) whose bool values stay inside
    them: a kernel's arrays are all of its float dtype, so a comparison joins only a chain
    that also holds every node reading its result (a ``where``, a cast), and a node reading a
    bool joins only the chain that computes it. A node left out runs as its array code."""
    out_of: set = set()  # nodes left out
    while True:
        parts, part, made = [], [], set()
        for node, spec in zip(chain.nodes, chain.specs):
            if node.name in out_of:
                parts.append(part)
                part, made = [], set()
                continue
            if any(k == "t" and _is_bool(gen, v) and v not in made for k, v in spec[0]):
                out_of.add(node.name)  # a bool from outside this part: not an input array
                parts.append(part)
                part, made = [], set()
                continue
            part.append((node, spec))
            if _is_bool(gen, node.outputs[0][0]):
                made.add(node.outputs[0][0])
        parts.append(part)
        leaking = [node.name for p in parts for node, _ in p
                   if _is_bool(gen, node.outputs[0][0]) and _leaves(gen, node, p)]
        if not leaking:
            break
        out_of.update(leaking)
    result = []
    for p in parts:
        if len(p) > 1:
            c = Chain(chain.dtype, chain.shape)
            c.nodes, c.specs = [n for n, _ in p], [s for _, s in p]
            result.append(c)
    return result


def _leaves(gen, node, part: list) -> bool:
    """Whether ``node``'s value is read by anything but the nodes of ``part``."""
    value = node.outputs[0][0]
    readers = sum(value in gen.tensor_args(n) for n, _ in part)
    return value in gen.leaving or value in gen.saved or gen.consumers.get(value, 0) > readers


def _kernel_name(ops: list) -> str:
    parts = [op.rsplit(".", 1)[-1].strip("_") for op in ops]
    name = "chain_" + "_".join(parts[:4])
    return name + (f"_{len(parts)}ops" if len(parts) > 4 else "")


def emit_chain(gen, chain: Chain, build) -> list:
    """The chain as one kernel call (``build``: the backend's ``elementwise_chain``); returns
    the names of the values it wrote into buffers of their own (the caller marks them owned,
    as a lowered node's outputs)."""
    from ._lowerings import _lit

    inside: dict = {}  # value -> how many chain nodes read it
    for node in chain.nodes:
        for v in set(gen.tensor_args(node)):
            inside[v] = inside.get(v, 0) + 1
    local: dict = {}      # value name -> kernel variable
    inputs: list = []     # (kernel variable, value name)
    scalars: list = []    # (kernel variable, Python float)
    statements: list = []
    for k, (node, (operands, expr)) in enumerate(zip(chain.nodes, chain.specs)):
        args = []
        for kind, v in operands:
            if kind == "s":
                name = f"s{len(scalars)}"
                scalars.append((name, _scalar(v, chain.dtype)))
            elif v in local:
                name = local[v]
            else:
                name = local[v] = f"x{len(inputs)}"
                inputs.append((name, v))
            args.append(name)
        out = node.outputs[0][0]
        local[out] = f"t{k}"
        # rounded to the value's dtype after each op (a no-op for float32 and float64); a
        # comparison's bool is held as 1 or 0
        rounded = "A({})" if _is_bool(gen, out) else "A(T({}))"
        statements.append((f"t{k}", rounded.format(expr.format(*args))))
    # the values something outside the chain reads: its kernel's outputs
    wanted = [(node, node.outputs[0][0]) for node in chain.nodes
              if _read_outside(gen, node.outputs[0][0], inside)]
    input_of = {v: name for name, v in inputs}
    taken: set = set()
    out_params, out_vars, inplace, owned = [], [], [], []
    for node, value in wanted:
        # in place, unless the value leaves the call, or the kernel would be left without
        # input parameters (its size and type then come from its outputs alone)
        keeps_input = scalars or len(inputs) - len(taken) > 1
        target = None if value in gen.fresh or not keeps_input else \
            _overwritable(gen, chain, node, input_of, taken)
        if target is not None:  # the chain's result goes into that input's buffer
            taken.add(target)
            param = input_of[target]
            inplace.append(param)
            statements.append((param, local[value]))
            out_vars.append(gen.alias(node, gen.a(target)))
            out_params.append(param)
            owned.append(value)
            continue
        out_params.append(local[value])
        out_vars.append(gen.out(node))  # a fresh array when the value leaves the call
        if value not in gen.fresh:
            owned.append(value)
    for node in chain.nodes:  # values kept in registers: no array (never read by the code)
        out = node.outputs[0][0]
        gen.var.setdefault(out, "v_" + out)
    if not out_params:  # nothing reads what the chain computes (a capture drops such nodes)
        return owned
    ins = [(name, v) for name, v in inputs if name not in inplace]
    kernel = build(_kernel_name(chain.ops()), chain.dtype, [n for n, _ in ins],
                   [n for n, _ in scalars], out_params, statements, inplace)
    call = [gen.a(v) for _, v in ins] + [_lit(s) for _, s in scalars] + out_vars
    gen.emit(f"{gen.const(kernel, 'ew')}({', '.join(call)})  # {' -> '.join(chain.ops())}")
    gen.fused_chains.append(chain.ops())
    return owned


def _read_outside(gen, value: str, inside: dict) -> bool:
    """Whether a chain value must be an array: it leaves the call (an output, a gradient
    handed to ``.grad``), a VJP reads it, or a node outside the chain does (a view of it, an
    op that may return it: those make it fresh as well)."""
    return (value in gen.leaving or value in gen.saved
            or gen.consumers.get(value, 0) > inside.get(value, 0))


def _overwritable(gen, chain, node, input_of: dict, taken: set):
    """An input of the chain whose buffer may take ``node``'s output, or None: a buffer of the
    chain's shape that no node but one of the chain's reads (``Gen.can_overwrite``). The
    kernel reads its inputs before it writes its outputs."""
    for v in input_of:
        if v not in taken and gen.shape(v) == chain.shape and gen.can_overwrite(v, node):
            return v
    return None
