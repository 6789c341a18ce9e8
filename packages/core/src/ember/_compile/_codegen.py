"""A captured graph as one generated Python function over arrays.

Each node becomes a line or two of array code (``_lowerings.FORWARD``) on buffers allocated
once per entry (``out=``), or, for an op without a lowering, a call of the registry op on
Tensors wrapped around the arrays (``_fallback``, under ``no_grad``). A backward node becomes
the reverse sweep of VJP lowerings (``_lowerings.VJP``), or per-node autograd for a node
without one. The function starts with the entry's guards and returns ``MISS`` when one fails.
A graph with no backward node whose outputs require grad gets that reverse sweep as a closure
over the call's arrays (``emit_autograd_link``), the backward of one
``CompiledFunctionBackward`` node the outputs hang from: the values the sweep reads are then
fresh arrays of each call, not reused buffers.

Aliasing: a value that leaves the call (an output, or what an output is a view of) is
allocated fresh on every call, never a reused buffer, as ``torch.compile`` returns fresh
tensors; gradients handed to ``.grad`` are fresh arrays too.

On a backend with the ``elementwise_chain`` kernel (CUDA), runs of elementwise nodes become
one generated kernel each (``_cuda_fusion``) instead of one array call per node.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _make
from ..autograd.graph import Node
from ..autograd.graph import edge as _edge
from ..autograd.graph import new_node as _new_node
from ..export._graph import decode_literal
from . import _cuda_fusion

__all__ = ["generate", "MISS", "Unsupported"]

MISS = object()


class Unsupported(Exception):
    """The graph cannot be replayed (the entry runs eagerly; the message says why)."""


class Ref:
    """A tensor argument in a fallback call's argument template."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


#: substrings of op names that may return their input or a view of it
_ALIASING = ("view", "reshape", "flatten", "squeeze", "expand", "contiguous", "transpose",
             "permute", "split", "chunk", "unbind", "narrow", "select", "getitem", "as_strided",
             "detach", "alias", "movedim", "unflatten", "Tensor.", "diagonal", "real", "imag",
             "t", "T", "mT", "H", "to", "type", "float", "double", "half", "long", "int")


def may_alias(op: str) -> bool:
    """Whether a fallback op's output may share memory with a tensor argument."""
    from ..ops.registry import OPS

    if op.endswith("_") or op == "setitem" or op.startswith(("compile.", "Tensor.")):
        return True
    info = OPS.get(op)
    if info is None or info.view:
        return True
    return op in _ALIASING or any(k in op for k in _ALIASING if len(k) > 3)


def _fill(obj, tensors):
    if obj.__class__ is Ref:
        return tensors[obj.index]
    if obj.__class__ is list:
        return [_fill(x, tensors) for x in obj]
    if obj.__class__ is tuple:
        return tuple(_fill(x, tensors) for x in obj)
    if obj.__class__ is dict:
        return {k: _fill(v, tensors) for k, v in obj.items()}
    if obj.__class__ is slice:
        return slice(_fill(obj.start, tensors), _fill(obj.stop, tensors),
                     _fill(obj.step, tensors))
    return obj


class Gen:
    """The state of one code generation: lines, the namespace, values and buffers."""

    def __init__(self, graph, capture, training: bool):
        import ember
        from ember.ops import api

        self.graph = graph
        self.capture = capture
        self.lines: list = []
        self.ns: dict = {"MISS": MISS, "Tensor": Tensor, "np": np}
        self.metas = graph.values()
        self.var: dict = {}           # value name -> python variable
        self.tensor_expr: dict = {}   # input name -> expression of the Tensor object
        self.requires = capture.requires
        self.training = training
        self.counter = 0
        self.fresh: set = set()       # values that must not live in reused buffers
        self.consumers: dict = {}     # value name -> number of consuming nodes
        self.saved: set = set()       # values a VJP reads after the forward
        self.fallbacks: list = []     # op names run through their registry function
        self.grad_fallbacks: list = []  # ops differentiated by autograd.grad on each call
        self.node_vjps: list = []     # ops whose own autograd node's backward is called
        self.fused_chains: list = []  # the ops of each chain run as one kernel (_cuda_fusion)
        self.leaving: set = set()     # values the call returns or hands to .grad
        devices = {m.device for m in self.metas.values()}
        self.device = ember.device(sorted(devices)[0]) if devices else ember.device("cpu")
        self.single_device = len(devices) <= 1
        self.xp = api.array_module(ember.empty(0, device=self.device))
        self.ns["xp"] = self.xp
        from .._tensor import _make

        self.ns["_wrap"] = _make  # api.wrap without its extra call
        self.ns["_dev"] = self.device
        self.state: dict = {}         # node name -> name of its autograd-fallback state
        self.buffers: dict = {}       # value name -> its reused buffer (views of it too)
        self.owned: set = set()       # values held in buffers written by their node only
        self.views: dict = {}         # (kind, var) -> constant view of a fixed array
        self.external: set = set()    # values that are state outside the graph (_plan)
        self.on_path: set = set()     # nodes before backward() on the gradient's path
        self.autograd = False         # outputs require grad, no backward(): emit_autograd_link
        self.out_tensor: dict = {}    # value name -> variable of its output Tensor (autograd)

    # -- names and constants ----------------------------------------------------------------
    def new(self, base: str = "t") -> str:
        self.counter += 1
        return f"_{base}{self.counter}"

    def const(self, value, base: str = "c") -> str:
        name = self.new(base)
        self.ns[name] = value
        return name

    def emit(self, line: str) -> None:
        self.lines.append(line)

    # -- values -----------------------------------------------------------------------------
    def meta(self, name: str):
        return self.metas[name]

    def shape(self, name: str) -> tuple:
        shape = self.metas[name].shape
        if not all(isinstance(d, int) for d in shape):
            raise Unsupported(f"value %{name} has a data-dependent shape")
        return tuple(shape)

    def dtype(self, name: str):
        return np.dtype(self.metas[name].dtype)

    def decode(self, enc):
        """An argument's Python value; tensors as ``("tensor", name)`` markers."""
        if isinstance(enc, list):
            return [self.decode(x) for x in enc]
        if isinstance(enc, dict) and len(enc) == 1:
            (tag, v), = enc.items()
            if tag == "tensor":
                return ("tensor", v)
            if tag == "slice":
                return slice(*(self.decode(x) for x in v))
            if tag == "tuple":
                return tuple(self.decode(x) for x in v)
            if tag == "symint":
                raise Unsupported("a symbolic size in a compiled graph")
            return decode_literal(tag, v, "compiled graph")
        return enc

    def tensor_args(self, node) -> list:
        """The names of the node's tensor arguments, in order (args then kwargs)."""
        out = []

        def walk(x):
            if isinstance(x, dict):
                if len(x) == 1 and "tensor" in x:
                    out.append(x["tensor"])
                    return
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)

        walk(node.args)
        walk(node.kwargs)
        return out

    def out(self, node, i: int = 0) -> str:
        """The variable holding the node's output ``i``: a reused buffer, or a fresh array
        allocated on this call when the value leaves the call."""
        name = node.outputs[i][0]
        shape, dtype = self.shape(name), self.dtype(name)
        var = "v_" + name
        self.var[name] = var
        if name in self.fresh:
            self.emit(f"{var} = xp.empty({shape!r}, {self.const(dtype, 'dt')})")
        else:
            buf = self.xp.empty(shape, dtype=dtype)
            self.buffers[name] = buf
            self.emit(f"{var} = {self.const(buf, 'buf')}")
        return var

    def alias(self, node, var: str, i: int = 0) -> str:
        """The node's output ``i`` is ``var`` (an in-place write or a view)."""
        self.var[node.outputs[i][0]] = var
        return var

    def set_expr(self, node, expr: str, i: int = 0) -> str:
        """The node's output ``i`` computed by ``expr`` (a fresh array or a view)."""
        var = "v_" + node.outputs[i][0]
        self.emit(f"{var} = {expr}")
        self.var[node.outputs[i][0]] = var
        return var

    def a(self, name: str) -> str:
        return self.var[name]

    def transposed(self, name: str) -> str:
        """``name``'s array transposed: a constant view when the array is fixed (a guarded
        parameter), else ``.T`` on each call."""
        var = self.var[name]
        arr = self.ns.get(var)
        if arr is not None and hasattr(arr, "T") and var.startswith("_garr"):
            key = ("T", var)
            if key not in self.views:
                self.views[key] = self.const(arr.T, "wt")
            return self.views[key]
        return f"{var}.T"

    def broadcast_operand(self, name: str, shape: tuple):
        """A guarded parameter's array (a bias) broadcast to ``shape`` once, as a constant
        contiguous copy, or None. NumPy's ufuncs take ~0.6 us longer per call on a broadcast
        (stride-0) operand than on a same-shape one, which is most of a small layer's add.
        The copy follows the tensor's version counter (shared with its views) and the count
        of writes through ``.data`` aliases (which have counters of their own): an in-place
        change (an optimizer step, ``p.data.add_()``) refreshes it on the next call. Only in
        entries without a backward (inference, where the parameters do not change from call
        to call) and for small outputs (the constant costs the output's memory)."""
        var = self.var.get(name)
        expr = self.tensor_expr.get(name)
        arr = self.ns.get(var) if var else None
        if (self.training or arr is None or expr is None or not var.startswith("_garr")
                or tuple(arr.shape) == tuple(shape) or int(np.prod(shape)) > 16384):
            return None
        key = ("bcast", var, tuple(shape))
        if key not in self.views:
            from .._tensor import DATA_WRITES, _shared_vc

            vc = self.const(_shared_vc(self.ns[expr]), "vc")
            writes = self.const(DATA_WRITES, "dw")
            seen = self.const([self.ns[vc][0], DATA_WRITES[0]], "vseen")
            full = self.const(self.xp.ascontiguousarray(self.xp.broadcast_to(arr, shape)),
                              "bb")
            self.emit(f"if {vc}[0] != {seen}[0] or {writes}[0] != {seen}[1]: "
                      f"xp.copyto({full}, {var}); {seen}[0] = {vc}[0]; "
                      f"{seen}[1] = {writes}[0]")
            self.views[key] = full
        return self.views[key]

    def functional_inplace(self, node) -> bool:
        """Whether an in-place op runs as its functional form: on the gradient's path of a
        training step (autograd refuses in-place writes to leaves, so its target is an
        intermediate value), writing no state outside the graph. Elsewhere the write is
        real (a manual SGD update under no_grad, ``p.grad.mul_()``)."""
        return (self.training and node.name in self.on_path
                and not set(getattr(node, "mutates", ()) or ()) & self.external)

    def can_overwrite(self, name: str, node) -> bool:
        """Whether ``node`` may write its output into ``name``'s buffer: a buffer of a lowered
        node, read by no other node, not saved for backward and not leaving the call."""
        return (name in self.owned and self.consumers.get(name, 0) == 1
                and name not in self.saved and name not in self.fresh)


# -- planning ------------------------------------------------------------------------------

def _native_dtypes(gen: Gen, node) -> bool:
    """Whether a node's tensors are all of NumPy's own dtypes: the lowerings write NumPy code
    for those; bfloat16 (``ml_dtypes``: computed in float32 and rounded once by the registry's
    kernels, promoted to float32 by NumPy's scalars and products) runs the registry op."""
    names = list(gen.tensor_args(node)) + [o[0] for o in node.outputs if o is not None]
    return not any(gen.dtype(v) == _dtype.BFLOAT16_NP for v in names)


def _plan(gen: Gen, nodes, outputs: list, forward_lowering, vjp_table, bw_index) -> dict:
    """Per node: "lower", "fallback" or "grad_fallback" (autograd through the op); the fresh
    values; consumer counts."""
    from ._lowerings import SAVES

    plan = {}
    # values whose memory is state outside the graph: its inputs (parameters, buffers, the
    # caller's tensors) and what compile.* nodes read (.grad): an in-place op on them writes
    gen.external = {i.name for i in gen.graph.inputs} | {
        o[0] for n in nodes if n.op.startswith("compile.") for o in n.outputs if o is not None}
    graph_inputs = gen.external
    for node in nodes:
        for v in set(gen.tensor_args(node)):
            gen.consumers[v] = gen.consumers.get(v, 0) + 1
    for k, node in enumerate(nodes):
        if node.op.startswith("compile.fused."):
            plan[node.name] = "compile.fused"
            if k < bw_index:  # its kernels' ctx may hold its input and output arrays
                gen.saved.update(gen.tensor_args(node))
                gen.saved.update(o[0] for o in node.outputs if o is not None)
            continue
        if node.op.startswith("compile."):
            plan[node.name] = node.op
            continue
        ins = gen.tensor_args(node)
        on_path = k < bw_index and any(gen.requires.get(v) for v in ins) and any(
            o is not None and gen.requires.get(o[0]) for o in node.outputs)
        if on_path:
            gen.on_path.add(node.name)
        lower = forward_lowering.get(node.op) if _native_dtypes(gen, node) else None
        writes = on_path and (node.op.endswith("_") or node.op == "setitem")
        if writes and lower is not None and node.op in vjp_table \
                and not set(node.mutates) & graph_inputs:
            # an in-place op on an intermediate value (ReLU(inplace=True), an activation's
            # copy-back): later nodes read its output's name, so it runs as its functional
            # form; on a graph input (a parameter, the user's tensor) it stays unsupported
            writes = False
        if lower is not None and gen.single_device and (not on_path or node.op in vjp_table) \
                and not writes:
            plan[node.name] = "lower"
        elif on_path:
            if writes:
                raise Unsupported(f"in-place op {node.op} on the gradient's path (at "
                                  f"{node.source})")
            plan[node.name] = "node_vjp" if gen.capture.one_node.get(node.name) \
                else "grad_fallback"
        else:
            plan[node.name] = "fallback"
        if on_path and plan[node.name] != "lower":  # its autograd node holds its arrays
            gen.saved.update(ins)
            gen.saved.update(o[0] for o in node.outputs if o is not None)
        if on_path and plan[node.name] == "lower":
            saves = SAVES.get(node.op, "inputs")
            if "inputs" in saves:
                gen.saved.update(ins)
            if "output" in saves:
                gen.saved.update(o[0] for o in node.outputs if o is not None)
    gen.fresh = fresh_values(gen, nodes, plan, outputs)
    return plan


def fresh_values(gen: Gen, nodes, plan, outputs, fused=frozenset()) -> set:
    """The values that leave the call, and those that what leaves may share memory with (an
    input a lowered node may write its output into, what a view or an aliasing fallback
    returns). A node in ``fused`` (a kernel chain's) writes arrays of its own."""
    from ._lowerings import ALIASES

    fresh = set(outputs)
    for node in reversed(nodes):
        outs = [o[0] for o in node.outputs if o is not None]
        if not any(o in fresh for o in outs) or node.name in fused:
            continue
        kind = plan[node.name]
        if kind == "lower":
            fresh.update(ALIASES(node, gen))
        elif kind in ("fallback", "grad_fallback", "node_vjp") and may_alias(node.op):
            fresh.update(gen.tensor_args(node))
    return fresh


# -- fallbacks -----------------------------------------------------------------------------

def _template(gen: Gen, node):
    refs: list = []

    def conv(x):
        if isinstance(x, tuple) and len(x) == 2 and x[0] == "tensor" and isinstance(x[1], str):
            refs.append(x[1])
            return Ref(len(refs) - 1)
        if isinstance(x, list):
            return [conv(v) for v in x]
        if isinstance(x, tuple):
            return tuple(conv(v) for v in x)
        if isinstance(x, slice):
            return slice(conv(x.start), conv(x.stop), conv(x.step))
        return x

    args = conv(gen.decode(node.args))
    if node.op in ("getitem", "setitem") and len(args) > 1 and isinstance(node.args[1], dict) \
            and "tuple" in node.args[1]:
        args[1] = tuple(args[1])
    kwargs = {k: conv(gen.decode(v)) for k, v in node.kwargs.items()}
    return args, kwargs, refs


def _devices(gen: Gen, refs: list) -> list:
    import ember

    return [ember.device(gen.meta(r).device) for r in refs]


def _outputs_of(node, out):
    """One item per output of ``node``: its items, or its leaves when nested (histogramdd)."""
    if node.result in ("tensor", "none") or node.op == "setitem":
        return [out]
    try:
        return node.leaves(out)
    except ValueError as exc:
        raise RuntimeError(f"{node.op} {exc} (in the compiled graph)") from None


def emit_fallback(gen: Gen, node) -> None:
    """``outs = fn(*tensors)`` under no_grad, on Tensors wrapped around the arrays."""
    from ..autograd.grad_mode import no_grad
    from ..export._ops import resolve
    from ..ops import api

    fn = resolve(node.op)
    args, kwargs, refs = _template(gen, node)
    devices = _devices(gen, refs)
    wrap = api.wrap
    setitem = node.op == "setitem"

    def run(*arrays):
        ts = [wrap(a, d) for a, d in zip(arrays, devices)]
        with no_grad():
            out = fn(*_fill(args, ts), **_fill(kwargs, ts))
        if setitem:
            out = ts[0]
        return [None if o is None else o._data for o in _outputs_of(node, out)]

    gen.fallbacks.append(node.op)
    call = f"{gen.const(run, 'fb')}({', '.join(gen.a(r) for r in refs)})"
    _bind_outputs(gen, node, call)


def _bind_outputs(gen: Gen, node, call: str) -> None:
    names = ["v_" + o[0] if o is not None else "_" for o in node.outputs]
    if not names:
        gen.emit(call)
        return
    gen.emit(f"{', '.join(names)}, = {call}")
    for o in node.outputs:
        if o is not None:
            gen.var[o[0]] = "v_" + o[0]


def emit_grad_fallback(gen: Gen, node, direct: bool = False) -> None:
    """The op run with autograd on its own: its backward is ``autograd.grad`` over it, or,
    ``direct``, its one autograd node's backward (the op's own VJP) called directly."""
    from ..autograd.grad_mode import enable_grad
    from ..export._ops import resolve
    from ..ops import api

    fn = resolve(node.op)
    args, kwargs, refs = _template(gen, node)
    devices = _devices(gen, refs)
    needs = [gen.requires.get(r, False) for r in refs]
    wrap = api.wrap
    from ..export._capture import _is_inplace

    inplace = _is_inplace(node.op)
    if not inplace:  # an F-style op's inplace=True (dropout, relu, ...)
        import inspect

        try:
            bound = inspect.signature(fn).bind(*args, **kwargs).arguments
            inplace = bound.get("inplace") is True
        except (TypeError, ValueError):
            inplace = False

    def run(*arrays):
        ts = [wrap(a, d) for a, d in zip(arrays, devices)]
        for t, n in zip(ts, needs):
            if n:
                t.requires_grad = True
        with enable_grad():
            # an in-place op writes its input: give it a recorded clone of the leaf (autograd
            # refuses in-place writes to leaves that require grad; gradients reach the leaf
            # through the clone)
            call = [t.clone() if inplace and n else t for t, n in zip(ts, needs)]
            out = fn(*_fill(args, call), **_fill(kwargs, call))
        outs = _outputs_of(node, out)
        state = _direct_state(ts, outs) if direct else None
        return [state or (ts, outs)] + [None if o is None else o._data for o in outs]

    state = gen.new("st")
    gen.state[node.name] = (state, refs, needs)
    (gen.node_vjps if direct else gen.grad_fallbacks).append(node.op)
    names = [state] + ["v_" + o[0] if o is not None else "_" for o in node.outputs]
    gen.emit(f"{', '.join(names)}, = {gen.const(run, 'fbg')}"
             f"({', '.join(gen.a(r) for r in refs)})")
    for o in node.outputs:
        if o is not None:
            gen.var[o[0]] = "v_" + o[0]


def _direct_state(ts, outs):
    """``(node, where, n)`` when the op's outputs share one autograd node whose edges go to
    the wrapped inputs ``ts`` only (``where[j]``: the input of edge ``j``), else None."""
    node = None
    for o in outs:
        if o is not None and o.grad_fn is not None:
            if node is not None and o.grad_fn is not node:
                return None
            node = o.grad_fn
    if node is None:
        return None
    accs = {id(t._accum): i for i, t in enumerate(ts) if t.requires_grad and t._accum}
    where = []
    for fn, _ in node.next_functions:
        if fn is None:
            where.append(None)
        elif id(fn) in accs:
            where.append(accs[id(fn)])
        else:
            return None
    return (node, where, len(ts))


def _direct_backward(state, grads):
    from ..autograd.engine import _fill_missing
    from ..autograd.grad_mode import no_grad
    from ..ops import api

    node, where, n = state
    dev = node.device
    gs = [None if g is None else api.wrap(g, dev) for g in grads]
    out = [None] * n
    if node._n_out == 1:
        if gs[0] is None:
            return out
        g = gs[0]
    else:
        if all(x is None for x in gs):
            return out
        g = _fill_missing(node, gs)
    with no_grad():
        res = node.backward(g)
    if res.__class__ is not tuple:
        res = (res,)
    for i, r in zip(where, res):
        if i is None or r is None:
            continue
        out[i] = r._data if out[i] is None else out[i] + r._data
    return out


def grad_fallback_backward(state, grads):
    """Gradients (arrays or None) of a grad-fallback node's inputs, from its outputs'."""
    from ..autograd import grad as autograd_grad
    from ..ops import api

    if len(state) == 3:
        return _direct_backward(state, grads)
    ts, outs = state
    pairs = [(o, g) for o, g in zip(outs, grads)
             if g is not None and o is not None and o.requires_grad]
    inputs = [t for t in ts if t.requires_grad]
    if not pairs or not inputs:
        return [None] * len(ts)
    got = autograd_grad([o for o, _ in pairs], inputs,
                        [api.wrap(g, o.device) for o, g in pairs], allow_unused=True)
    it = iter(got)
    return [None if not t.requires_grad else (lambda g: None if g is None else g._data)(next(it))
            for t in ts]


def _fused_inputs(node) -> list:
    """A fused node's inputs by position: value names, None for absent ones."""
    return [a["tensor"] if isinstance(a, dict) and "tensor" in a else None for a in node.args]


def emit_fused(gen: Gen, node) -> None:
    """``outs = forward(ctx, *arrays)`` of a fused op; ``ctx`` kept for its backward."""
    op = gen.capture.fused[node.name]
    ins = _fused_inputs(node)
    if len(ins) != len(node.args):
        raise Unsupported(f"fused op {op.name} with non-tensor arguments")
    ctx = gen.new("ctx")
    gen.state[node.name] = ctx
    gen.emit(f"{ctx} = {{}}")
    args = ", ".join("None" if v is None else gen.a(v) for v in ins)
    _bind_outputs(gen, node, f"{gen.const(op.forward, 'fwd')}({ctx}, {args})")


def fused_vjp(gen: Gen, node, gouts) -> list:
    """``[(input name, grad var, owned)]`` of a fused node from its backward kernel."""
    op = gen.capture.fused[node.name]
    res = gen.new("gi")
    gl = ", ".join("None" if g is None else g[0] for g in gouts)
    if len(gouts) == 1:
        gl += ","
    gen.emit(f"{res} = {gen.const(op.backward, 'bwd')}({gen.state[node.name]}, ({gl}))")
    out = []
    for i, name in enumerate(_fused_inputs(node)):
        if name is not None and gen.requires.get(name):
            gv = gen.new("g")
            gen.emit(f"{gv} = {res}[{i}]")
            out.append((name, gv, False))
    return out


def emit_opaque(gen: Gen, node) -> None:
    fn, args, kwargs = gen.capture.opaque[node.name]
    real_args, real_kwargs = gen.capture.real(args), gen.capture.real(kwargs)
    for t in _flat_tensors((real_args, real_kwargs)):
        if gen.capture.classify(t) == "graph" or isinstance(t, Tensor) and \
                id(t) in gen.capture.lifted:
            raise Unsupported(f"opaque call {getattr(fn, '__qualname__', fn)} with tensor "
                              "arguments")

    def run():
        return fn(*real_args, **real_kwargs)

    gen.emit(f"{gen.const(run, 'op')}()")


def emit_grad_read(gen: Gen, node) -> None:
    """``v = t._grad._data``: the tensor's gradient as it is at this point of the call (the
    guards and the recorded writes before it make it present, as at capture)."""
    out = node.outputs[0][0]
    if gen.consumers.get(out, 0) == 0 and out not in gen.fresh:
        return  # read and not used (``Module.zero_grad``'s ``p._grad``): nothing to do
    owner = node.args[0]["tensor"]
    gen.set_expr(node, f"{gen.tensor_expr[owner]}._grad._data")


def emit_set_grad(gen: Gen, node) -> None:
    """``t.grad = value`` (None, or a value of the graph, wrapped around its array: a value
    that is a constant of the graph is copied, as the function made it afresh)."""
    owner, value = node.args
    expr = gen.tensor_expr[owner["tensor"]]
    if value is None:
        gen.emit(f"{expr}._grad = None")
        return
    name = value["tensor"]
    arr = gen.a(name)
    if any(i.name == name and i.kind == "constant" for i in gen.graph.inputs):
        arr += ".copy()"
    dev = gen.const(__import__("ember").device(gen.meta(name).device), "dev")
    gen.emit(f"{expr}._grad = _wrap({arr}, {dev})")


def emit_set_state(gen: Gen, node) -> None:
    """The flags the call changed (``training``, ``requires_grad``), left as it left them."""
    for kind, target, attr, value in gen.capture.state_sets[node.name]:
        obj = gen.tensor_expr[target] if kind == "input" else gen.const(target, "obj")
        gen.emit(f"{obj}.{attr} = {value!r}")


def set_grad_values(nodes) -> list:
    """The values a ``compile.set_grad`` node hands to ``.grad``: they leave the call."""
    return [n.args[1]["tensor"] for n in nodes
            if n.op == "compile.set_grad" and n.args[1] is not None]


def _flat_tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _flat_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _flat_tensors(x)


# -- backward ------------------------------------------------------------------------------

def _acc_grad(t, g, owned):
    """``t.grad`` gets ``g`` (a fresh array unless ``owned`` is False), or accumulates it."""
    from ..ops import api

    cur = t._grad
    if cur is None:
        t._grad = api.wrap(g if owned else g.copy(), t._device)
    else:
        cur._data += g
        cur._bump_version()


class Grads:
    """Contributions to each value's gradient during the reverse sweep."""

    def __init__(self, gen: Gen):
        self.gen = gen
        self.parts: dict = {}  # value -> [(var, owned)]

    def add(self, name: str, var: str, owned: bool) -> None:
        self.parts.setdefault(name, []).append((var, owned))

    def total(self, name: str):
        """``(var, owned)`` of the summed gradient of ``name``, or None."""
        parts = self.parts.pop(name, None)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        gen = self.gen
        var = gen.new("g")
        gen.emit(f"{var} = {' + '.join(p for p, _ in parts)}")
        return var, True


def reverse_sweep(gen: Gen, grads: Grads, nodes_before, plan) -> None:
    """The reverse sweep over ``nodes_before`` (VJP lowerings, fused kernels' backward, the
    autograd fallbacks): contributions to the inputs' gradients are added to ``grads``."""
    from ._lowerings import VJP

    for n in reversed(nodes_before):
        kind = plan[n.name]
        if kind.startswith("compile.") and kind != "compile.fused":
            continue
        outs = [o[0] if o is not None else None for o in n.outputs]
        gouts = [grads.total(o) if o is not None else None for o in outs]
        if all(g is None for g in gouts):
            continue
        ins = gen.tensor_args(n)
        if not any(gen.requires.get(v) for v in ins):
            continue
        if kind == "compile.fused":
            for name, var, owned in fused_vjp(gen, n, gouts):
                grads.add(name, var, owned)
            continue
        if kind in ("grad_fallback", "node_vjp"):
            state, refs, needs = gen.state[n.name]
            gl = ", ".join("None" if g is None else g[0] for g in gouts)
            res = gen.new("gi")
            gen.emit(f"{res} = {gen.const(grad_fallback_backward, 'gfb')}({state}, [{gl}])")
            for i, (r, need) in enumerate(zip(refs, needs)):
                if need:
                    gv = gen.new("g")
                    gen.emit(f"{gv} = {res}[{i}]")
                    grads.add(r, gv, kind == "grad_fallback")
            continue
        contributions = VJP[n.op](gen, n, gouts)
        for name, var, owned in contributions:
            if gen.requires.get(name):
                grads.add(name, var, owned)


def emit_backward(gen: Gen, node, nodes_before, plan) -> None:
    loss_enc, grad_enc = node.args
    loss = loss_enc["tensor"]
    grads = Grads(gen)
    lv = gen.a(loss)
    if grad_enc is None:
        var = gen.new("g")
        gen.emit(f"{var} = xp.ones_like({lv})")
    else:
        var = gen.a(grad_enc["tensor"])
    grads.add(loss, var, grad_enc is None)
    reverse_sweep(gen, grads, nodes_before, plan)
    for name, expr in gen.tensor_expr.items():
        total = grads.total(name)
        if total is None or not gen.requires.get(name):
            continue
        var, owned = total
        guard = f"if {var} is not None: " if var.startswith("_g") else ""
        gen.emit(f"{guard}{gen.const(_acc_grad, 'acc')}({expr}, {var}, {owned})")


# -- a compiled forward that autograd continues from -----------------------------------------

class CompiledFunctionBackward(Node):
    """The one autograd node of a compiled forward's outputs (PyTorch's
    ``CompiledFunctionBackward``): its edges are the gradient edges of the graph's inputs
    that require grad (a leaf's ``AccumulateGrad``, a non-leaf input's ``grad_fn``); its
    backward is the entry's generated reverse sweep over the values this call kept.
    ``saved`` holds that sweep (a closure over the call's arrays) and the inputs it reads,
    whose versions are checked as eager's saved tensors are; backward without
    ``retain_graph`` frees them."""

    def backward(self, grad):
        from ..autograd.grad_mode import GRAD

        if GRAD.enabled:  # create_graph=True: the sweep is array code, not differentiable
            raise RuntimeError(
                "ember.compile does not currently support double backward: a compiled "
                "forward's backward is array code (create_graph=True, or autograd.grad with "
                "create_graph=True, through the output of a compiled function); run that "
                "forward eagerly (ember.compiler.disable) to differentiate twice")
        grads = (grad,) if self._n_out == 1 else grad
        res = self.saved[0](*[None if g is None else g._data for g in grads])
        devs = self.ctx
        return tuple([None if r is None else _make(r, d) for r, d in zip(res, devs)])


def _link(sweep, inputs: tuple, checks: tuple, outs: tuple, devices: tuple) -> None:
    """Make ``outs`` the outputs of one new ``CompiledFunctionBackward`` node whose edges
    are ``inputs``' (the tensors of the graph that require grad, in the sweep's order)."""
    node = _new_node(CompiledFunctionBackward)
    node.next_functions = tuple([_edge(t) for t in inputs])
    node.ctx = devices
    node.device = devices[0] if devices else None
    node.saved = (sweep,) + checks
    node.versions = (None,) + tuple([t._version for t in checks])
    if len(outs) != 1:
        node._n_out = len(outs)
    for k, o in enumerate(outs):
        o.requires_grad = True
        o.grad_fn = node
        if k:
            o._nr = k


def _distinct(names) -> list:
    seen: set = set()
    out = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def emit_autograd_link(gen: Gen, nodes, plan, outputs: list) -> None:
    """A forward whose outputs require grad and that does not call ``backward()`` itself:
    the reverse sweep over the whole graph becomes a closure (``_bw``) from the gradients
    of the outputs that require grad (None for an unused one: zeros) to those of the
    graph's inputs that require grad, and the outputs become the outputs of one
    ``CompiledFunctionBackward`` node holding it (``_link``). The values the sweep reads are
    fresh arrays of this call (``generate`` makes them so): forwards may run several times
    before a backward."""
    diff = [o for o in _distinct(outputs) if gen.requires.get(o)]
    inputs = [i.name for i in gen.graph.inputs if gen.requires.get(i.name)]
    forward_lines, gen.lines = gen.lines, []
    grads = Grads(gen)
    seeds = []
    for k, o in enumerate(diff):
        var = f"_go{k}"
        seeds.append(var)
        if len(diff) > 1:  # one output: the engine calls the node only with its gradient
            zeros = gen.const(gen.xp.zeros, "zeros")
            gen.emit(f"if {var} is None: {var} = {zeros}({gen.shape(o)!r}, "
                     f"{gen.const(gen.dtype(o), 'dt')})")
        grads.add(o, var, False)
    reverse_sweep(gen, grads, nodes, plan)
    results = []
    for name in inputs:
        total = grads.total(name)
        if total is None:
            results.append("None")
            continue
        var, owned = total
        if not owned and var not in seeds:  # a buffer or an array something else holds
            var = f"(None if {var} is None else {var}.copy())"
        results.append(var)
    gen.emit(f"return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    sweep_lines, gen.lines = gen.lines, forward_lines
    gen.emit(f"def _bw({', '.join(seeds)}):")
    for line in sweep_lines:
        gen.emit("    " + line)
    import ember

    devices = [ember.device(gen.meta(n).device) for n in inputs]
    # the inputs whose arrays the sweep reads: modified in place before the backward (an
    # optimizer step), backward raises as eager's does; not those the forward itself writes
    # (BatchNorm's running statistics), which a later forward changes
    written = {m for n in nodes for m in (getattr(n, "mutates", None) or ())}
    checks = [i.name for i in gen.graph.inputs
              if i.name in gen.saved and i.name not in written]
    outs = []
    for o in diff:
        dev = gen.const(ember.device(gen.meta(o).device), "dev")
        var = gen.new("o")
        gen.emit(f"{var} = _wrap({gen.a(o)}, {dev})")
        gen.out_tensor[o] = var
        outs.append(var)

    def tup(items):
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    gen.emit(f"{gen.const(_link, 'link')}(_bw, {tup([gen.tensor_expr[n] for n in inputs])}, "
             f"{tup([gen.tensor_expr[n] for n in checks])}, {tup(outs)}, "
             f"{gen.const(tuple(devices), 'devs')})")


# -- the whole function --------------------------------------------------------------------

def generate(captured, guard_lines: list, guard_ns: dict, input_exprs: dict, name: str):
    """The entry's function ``(args, kwargs) -> result or MISS``, and its Gen (for explain)."""
    from ._lowerings import FORWARD, VJP

    graph, cap = captured.graph, captured.capture
    graph = _pool_before_relu(graph, captured.result)
    nodes = graph.nodes
    bw_index = next((i for i, n in enumerate(nodes) if n.op == "compile.backward"),
                    len(nodes))
    if sum(n.op == "compile.backward" for n in nodes) > 1:
        raise Unsupported("more than one backward() in one compiled call")
    outputs = _spec_names(graph.outputs)
    # no backward() inside and an output requires grad: autograd continues from the outputs
    # (one CompiledFunctionBackward node, emit_autograd_link)
    autograd = bw_index == len(nodes) and any(cap.requires.get(o) for o in outputs)
    gen = Gen(graph, cap, training=bw_index < len(nodes) or autograd)
    gen.autograd = autograd
    gen.ns.update(guard_ns)
    input_exprs, arrays = input_exprs
    gen.tensor_expr = dict(input_exprs)
    leaving = outputs + set_grad_values(nodes)
    gen.leaving = set(leaving)
    plan = _plan(gen, nodes, leaving, FORWARD, VJP, bw_index)
    if gen.autograd:  # what the sweep reads lives on until the backward: arrays of this call
        leaving = leaving + sorted(gen.saved)
        gen.fresh = fresh_values(gen, nodes, plan, leaving)
    build = _cuda_fusion.chain_kernel(gen)
    chains = _cuda_fusion.find_chains(gen, nodes, plan) if build is not None else {}
    in_chain = {n.name for c in chains.values() for n in c.nodes}
    if in_chain:  # a chain writes arrays of its own: what it reads need not be fresh
        gen.fresh = fresh_values(gen, nodes, plan, leaving, in_chain)
    for line in guard_lines:
        gen.emit(line)
    for i in graph.inputs:
        expr = input_exprs[i.name]
        if i.name in arrays:  # guarded to be this very array
            gen.var[i.name] = arrays[i.name]
            continue
        gen.var[i.name] = "v_" + i.name
        gen.emit(f"v_{i.name} = {expr}._data")
    for k, node in enumerate(nodes):
        kind = plan[node.name]
        if kind == "compile.backward":
            emit_backward(gen, node, nodes[:k], plan)
        elif kind == "compile.opaque":
            emit_opaque(gen, node)
        elif kind == "compile.grad":
            emit_grad_read(gen, node)
        elif kind == "compile.set_grad":
            emit_set_grad(gen, node)
        elif kind == "compile.set_state":
            emit_set_state(gen, node)
        elif kind == "compile.fused":
            emit_fused(gen, node)
        elif node.name in in_chain:
            if node.name in chains:  # the chain's first node: the whole chain, one kernel
                gen.owned.update(_cuda_fusion.emit_chain(gen, chains[node.name], build))
        elif kind == "lower":
            before = {v: gen.var[v] for v in gen.tensor_args(node) if v in gen.var}
            known = set(gen.var)
            if FORWARD[node.op](gen, node) is False:
                if node.name in gen.on_path and (node.op.endswith("_") or
                                                 node.op == "setitem"):
                    # its fallback would write in place under the functional VJP's inputs
                    raise Unsupported(f"in-place op {node.op} on the gradient's path (at "
                                      f"{node.source})")
                if node.name in gen.on_path:
                    # its VJP lowering may read what its forward lowering would have made
                    # (cross_entropy's exponentials): autograd through the op instead
                    _late_grad_fallback(gen, node, plan)
                else:
                    plan[node.name] = "fallback"
                    emit_fallback(gen, node)
            else:
                _mark_owned(gen, node, known, before)
        elif kind in ("grad_fallback", "node_vjp"):
            emit_grad_fallback(gen, node, direct=kind == "node_vjp")
        else:
            emit_fallback(gen, node)
    if autograd:
        emit_autograd_link(gen, nodes, plan, outputs)
    gen.emit(f"return {_output_expr(gen, graph.outputs, captured.result)}")
    body = "\n".join("    " + line for line in gen.lines)
    source = f"def {name}(args, kwargs):\n{body}\n"
    code = compile(source, f"<ember.compile {name}>", "exec")  # the builtin
    exec(code, gen.ns)
    return gen.ns[name], source, gen


def _late_grad_fallback(gen: Gen, node, plan) -> None:
    """A node on the gradient's path whose forward lowering declined it at emission: it runs
    with autograd on its own (``emit_grad_fallback``), which holds its arrays until the
    backward. Where the values are planned as reused buffers a later call may overwrite
    before a compiled forward's backward runs, the graph is not compiled."""
    ins = gen.tensor_args(node)
    if gen.autograd and any(v not in gen.fresh and v not in gen.external for v in ins):
        raise Unsupported(f"{node.op} on the gradient's path runs through autograd on a "
                          f"reused buffer (at {node.source})")
    direct = bool(gen.capture.one_node.get(node.name))
    plan[node.name] = "node_vjp" if direct else "grad_fallback"
    gen.saved.update(ins)
    gen.saved.update(o[0] for o in node.outputs if o is not None)
    emit_grad_fallback(gen, node, direct=direct)


def _mark_owned(gen: Gen, node, known: set, inputs: dict) -> None:
    """The outputs of a lowered node that later nodes may overwrite in place: an array of its
    own, or the buffer of an input it was allowed to overwrite (``can_overwrite``). Not a view
    (its memory is another value's) nor an in-place write into an array that is not the
    graph's to reuse (an input, a value something else still reads)."""
    from ._lowerings import _VIEWS

    if node.op in _VIEWS:
        return
    for o in node.outputs:
        if o is None or o[0] in known or o[0] in gen.fresh:
            continue
        var = gen.var.get(o[0])
        sources = [v for v, a in inputs.items() if a == var]
        if all(v in gen.owned and gen.consumers.get(v, 0) == 1 for v in sources):
            gen.owned.add(o[0])


_MAX_POOLS = ("max_pool1d", "max_pool2d", "max_pool3d")


def _pool_before_relu(graph, result):
    """``max_pool(relu(x))`` as ``relu(max_pool(x))``: the same values and gradients (the
    maximum commutes with a non-decreasing function; a window whose maximum is not positive
    passes no gradient either way, and a positive maximum is found at the same first
    position), with the ReLU and its backward on the pooled, smaller array (LeNet's 2x2
    pools: a quarter). Only when the ReLU's output feeds the pool alone, the pool returns no
    indices, and both are plain calls; a new graph, the capture's own is left as it was."""
    import copy

    nodes = list(graph.nodes)
    uses: dict = {}
    for n in nodes:
        for v in _names_in((n.args, n.kwargs)):
            uses[v] = uses.get(v, 0) + 1
    outputs = set(_spec_names(graph.outputs))
    changed = False
    for i in range(len(nodes) - 1):
        relu, pool = nodes[i], nodes[i + 1]
        if relu.op != "relu" or pool.op not in _MAX_POOLS or relu.kwargs or relu.mutates \
                or pool.mutates or len(relu.args) != 1 or len(relu.outputs) != 1:
            continue
        r = relu.outputs[0][0]
        if uses.get(r) != 1 or r in outputs or not pool.args or pool.args[0] != {"tensor": r}:
            continue
        flags = pool.args[6:7] + [pool.kwargs.get("return_indices", False)]
        if any(f not in (False, None) for f in flags) or len(pool.outputs) != 1:
            continue
        x = relu.args[0]
        p_name, p_meta = pool.outputs[0]
        new_pool = copy.copy(pool)
        new_pool.args = [x] + list(pool.args[1:])
        new_pool.outputs = [(r, p_meta)]
        new_relu = copy.copy(relu)
        new_relu.args = [{"tensor": r}]
        new_relu.outputs = [(p_name, p_meta)]  # a pool and a ReLU keep the dtype
        nodes[i], nodes[i + 1] = new_pool, new_relu
        changed = True
    if not changed:
        return graph
    out = copy.copy(graph)
    out.nodes = nodes
    return out


def _names_in(obj) -> list:
    """The value names referenced in encoded arguments."""
    if isinstance(obj, dict):
        if len(obj) == 1 and "tensor" in obj and isinstance(obj["tensor"], str):
            return [obj["tensor"]]
        return [n for v in obj.values() for n in _names_in(v)]
    if isinstance(obj, (list, tuple)):
        return [n for v in obj for n in _names_in(v)]
    return []


def _spec_names(spec) -> list:
    from ..export._program import _spec_tensors

    return _spec_tensors(spec)


def _record_expr(gen: Gen, v, real) -> str:
    """A dataclass output (``transformers``-style model outputs), rebuilt by its class."""
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(real)}
    if any(not fields[k].init for k, _ in v["fields"]):
        raise Unsupported(f"a dataclass output ({type(real).__name__}) with init=False fields")
    cls = gen.const(type(real), "rec")
    items = ", ".join(f"{k}={_output_expr(gen, x, getattr(real, k))}" for k, x in v["fields"])
    return f"{cls}({items})"


def _output_expr(gen: Gen, spec, real=None) -> str:
    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "tensor":
            if v in gen.out_tensor:  # an output of the CompiledFunctionBackward node
                return gen.out_tensor[v]
            dev = gen.const(__import__("ember").device(gen.meta(v).device), "dev")
            return f"_wrap({gen.a(v)}, {dev})"
        if tag in ("tuple", "list"):
            reals = list(real) if isinstance(real, (list, tuple)) else [None] * len(v)
            items = [_output_expr(gen, x, r) for x, r in zip(v, reals)]
            inner = ", ".join(items) + ("," if tag == "tuple" and len(items) == 1 else "")
            return f"({inner})" if tag == "tuple" else f"[{inner}]"
        if tag == "dict":
            return "{" + ", ".join(
                f"{k!r}: {_output_expr(gen, x, real.get(k) if isinstance(real, dict) else None)}"
                for k, x in v) + "}"
        if tag == "namedtuple":
            if isinstance(real, tuple) and hasattr(real, "_fields"):
                cls = gen.const(type(real), "nt")  # the function's own class
                items = zip(v["items"], real)
            else:
                from ..export._program import _namedtuple

                cls = gen.const(_namedtuple(v["name"], v["fields"]), "nt")
                items = ((x, None) for x in v["items"])
            return f"{cls}(" + ", ".join(_output_expr(gen, x, r) for x, r in items) + ")"
        if tag == "record":
            if real is None:
                raise Unsupported("a dataclass output")
            return _record_expr(gen, v, real)
    return gen.const(gen.decode(spec), "out")
