"""The capture behind ``ember.compile``: ``ember.export``'s capture, run over one call.

The function runs once for real on the call's arguments (its result is the call's result)
while :class:`CompileCapture`, a subclass of export's :class:`~ember.export._capture.Capture`,
records one node per registry-op call. Compile differs from export in what it accepts:

* tensors the function reaches without being given them (a module's parameters through a
  closure or a global, an optimizer's parameters) are **free inputs**: the replay reads their
  current arrays on every call, and guards that the owning module still holds them;
* ``loss.backward()`` is recorded as a **backward node** (the replay differentiates the
  recorded forward with the VJP lowerings);
* calls of functions marked with :func:`ember.compiler.disable` (``Optimizer.step`` and
  ``zero_grad`` are) are recorded as **opaque nodes**, run as they are on every replay;
* what export refuses (data-dependent control flow, a tensor made by code the capture cannot
  see, a random factory outside the graph, a random op on tensors the graph does not hold) is
  a **graph break**: the call goes on eagerly and
  the entry runs eagerly, or, with ``fullgraph=True``, :class:`GraphBreakError` is raised.
"""

from __future__ import annotations

import os
import sys
import threading

from .. import overrides
from .._tensor import Tensor
from ..export import _capture as _xcap
from ..export._capture import Capture, TracedTensor, describe_frame
from ..export._graph import InputSpec, Node

__all__ = ["CompileCapture", "GraphBreakError", "capture_call", "current_compile",
           "run_opaque"]


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_frame():
    """The innermost frame outside the capture machinery (export's and compile's)."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith(_xcap._MACHINERY)
                             or f.f_code.co_filename.startswith(_HERE)):
        f = f.f_back
    return f


def _where() -> str:
    f = user_frame()
    text = describe_frame(f)
    outer = f
    while outer is not None and _xcap._in_ember(outer):
        outer = outer.f_back
    if outer is not None and outer is not f:
        text += f" (called from {describe_frame(outer)})"
    return text


class GraphBreakError(RuntimeError):
    """A graph break under ``fullgraph=True`` (``torch._dynamo.exc.Unsupported``)."""


_LOCAL = threading.local()


def current_compile():
    """This thread's compile capture in progress, or None."""
    return getattr(_LOCAL, "capture", None)


#: factories that draw random numbers: folded as constants they would replay one draw
_RANDOM_FACTORIES = frozenset({"ember.rand", "ember.randn", "ember.randint", "ember.randperm",
                               "ember.rand_like", "ember.randn_like", "ember.randint_like",
                               "ember.normal", "ember.bernoulli", "ember.multinomial",
                               "ember.poisson"})


#: Tensor methods that fill their tensor with random numbers
_RANDOM_METHODS = frozenset({"Tensor.bernoulli_", "Tensor.uniform_", "Tensor.normal_",
                             "Tensor.random_", "Tensor.exponential_", "Tensor.geometric_",
                             "Tensor.cauchy_", "Tensor.log_normal_"})


def _draws(name: str) -> bool:
    """Whether the op ``name`` draws from a random generator."""
    if name in _RANDOM_METHODS:
        return True
    from ..ops.registry import OPS

    info = OPS.get(name)
    return info is not None and bool(info.random)


class CompileCapture(Capture):
    """Export's capture with compile's free inputs, backward and opaque nodes, graph breaks."""

    def __init__(self, fullgraph: bool, reachable: dict):
        super().__init__("export")
        self.fullgraph = fullgraph
        self.reachable = reachable      # id -> tensor the function may hold (free inputs)
        self.breaks: list = []          # "reason at file:line" per graph break
        self.free: dict = {}            # input name -> tensor (read each replay)
        self.user: dict = {}            # input name -> path in the call's arguments
        self.requires: dict = {}        # value name -> requires_grad of the real value
        self.opaque: dict = {}          # node name -> (fn, args, kwargs)
        self.backward: dict = {}        # node name -> {"loss", "gradient"}
        self.fused: dict = {}           # node name -> FusedOp (``ember.ops.api.fused_op``)
        self.one_node: dict = {}        # node name -> its call recorded one autograd node
        self.user_inputs: dict = {}     # id(real tensor) -> name of a user input leaf
        self.grad_guards: dict = {}     # input name -> whether its .grad was set at entry
        self.grad_written: set = set()  # id(tensor): .grad changed by a recorded event
        self.grad_values: dict = {}     # id(real .grad tensor) -> its TracedTensor
        self.state_sets: dict = {}      # node name -> [(kind, target, attr, value)]

    # -- graph breaks -------------------------------------------------------------------
    def graph_break(self, reason: str) -> None:
        text = f"{reason} (at {_where()})"
        if self.fullgraph:
            raise GraphBreakError(f"graph break with fullgraph=True: {text}")
        self.breaks.append(text)

    def data_dependent(self, t, what: str, compute):
        value = f" (value %{t._vname})" if t is not None else ""
        self.graph_break(f"data-dependent control flow: {what}{value}")
        return compute()

    def untraced(self, t, what: str, run_through: bool = False) -> None:
        reachable = self.reachable.get(id(t)) is t
        if not run_through and reachable and not (t.requires_grad and t.grad_fn is not None):
            self.lift_free(t)
            return
        why = ("it comes from code that is not an op of ember's registry" if run_through
               else "the capture did not see it being made")
        self.graph_break(f"{what} is a tensor {why}")
        self.consts[id(t)] = [t, t._version, None]
        self.keep.append(t)

    def lift_free(self, t: Tensor) -> str:
        name = self.fresh_name("f_" + self.reachable_names.get(id(t), "tensor"))
        self.add_input(InputSpec(name, "parameter", self.meta_of(t), name,
                                 requires_grad=t.requires_grad), t)
        self.lifted[id(t)] = (t, name)
        self.data_aliases.setdefault(id(t._data), name)
        self.free[name] = t
        self.requires[name] = t.requires_grad
        return name

    reachable_names: dict = {}

    def classify(self, t: Tensor) -> str:
        try:
            return super().classify(t)
        except GraphBreakError:
            raise
        except _xcap.ExportError as exc:  # what export refuses (a constant written through a
            self.graph_break(str(exc))  # view: RAFT's coordinate grid) runs eagerly here
            return "const"

    def encode(self, obj, op: str):
        try:
            return super().encode(obj, op)
        except GraphBreakError:
            raise
        except _xcap.ExportError as exc:
            self.graph_break(str(exc))
            return None

    # -- gradients (Tensor._grad, seen through _GradField) -------------------------------
    def at_user_level(self) -> bool:
        """Whether the running code is the function's (not an op's body, not the capture)."""
        modes = overrides._STATE.modes
        return bool(modes) and modes[-1] is self.mode

    def grad_owner(self, real: Tensor):
        """The input name of a tensor whose ``.grad`` the replay can reach (a user input
        leaf, a free input, or a tensor the function reaches, lifted now), or None."""
        name = self.user_inputs.get(id(real))
        if name is not None:
            return name
        entry = self.lifted.get(id(real))
        if entry is not None and entry[0] is real and entry[1] in self.free:
            return entry[1]
        if self.reachable.get(id(real)) is real and real.grad_fn is None:
            return self.lift_free(real)
        return None

    def read_grad(self, obj: Tensor):
        """``t.grad`` / ``t._grad`` read by the function: None, or the gradient as a value of
        the graph (a ``compile.grad`` node reads the tensor's current ``.grad`` on replay).
        Whether it was None is guarded at entry unless a recorded event set it before."""
        real = obj._real if isinstance(obj, TracedTensor) else obj
        g = real.__dict__.get("_grad")
        if g is None and obj is not real:  # retain_grad() on the traced value writes there
            g = obj.__dict__.get("_grad")
        name = self.grad_owner(real)
        if name is None:
            if isinstance(obj, TracedTensor) and g is not None:
                self.graph_break(".grad of a value computed inside the compiled function "
                                 "(retain_grad) is not replayed")
            return g
        if id(real) not in self.grad_written:
            self.grad_guards.setdefault(name, g is not None)
        if g is None:
            return None
        t = self.grad_values.get(id(g))
        if t is not None and t._real is g:
            self.sync(t)
            return t
        t = self.record("compile.grad", [{"tensor": name}], {}, [], g, None, user_frame())
        self.grad_values[id(g)] = t
        self.keep.append(g)
        return t

    def write_grad(self, obj: Tensor, value) -> None:
        """``t.grad = value`` / ``del t.grad`` / ``t._grad = value`` in the function: done on
        the real tensor and recorded as a ``compile.set_grad`` node."""
        real = obj._real if isinstance(obj, TracedTensor) else obj
        rv = value._real if isinstance(value, TracedTensor) else value
        name = self.grad_owner(real)
        real.__dict__["_grad"] = rv
        if name is None:
            self.graph_break("assigning .grad of a tensor that is neither an input nor a "
                             "tensor the function holds is not replayed")
            return
        enc = None
        if value is not None:
            unknown: list = []
            self.scan([value], unknown)
            for t, _ in unknown:
                self.untraced(t, "the tensor assigned to .grad")
            enc = self.encode(value, "set_grad")
            if isinstance(value, TracedTensor):
                self.grad_values[id(rv)] = value
        node = Node(self.fresh_name("set_grad"), "compile.set_grad", [{"tensor": name}, enc],
                    {}, [], result="none", source=describe_frame(user_frame(), short=True))
        node.mutates = ["<grads>"]
        self.nodes.append(node)
        self.grad_written.add(id(real))
        self.keep.append(real)

    def grad_state(self) -> dict:
        """id(tensor) -> id of its ``.grad`` (0: None) over the tensors whose ``.grad`` the
        replay can reach: to see which ones an opaque call or a backward changed."""
        out = {}
        for t in self.reachable.values():
            g = t.__dict__.get("_grad")
            out[id(t)] = 0 if g is None else id(g)
        return out

    def note_grad_changes(self, before: dict) -> None:
        """Tensors whose ``.grad`` a recorded call (backward, opaque) set or cleared: later
        reads of theirs are the graph's doing, not the entry's (no None-ness guard)."""
        after = self.grad_state()
        for key, gid in after.items():
            if before.get(key) != gid:
                self.grad_written.add(key)

    def set_requires_grad(self, raw, args, kwargs):
        """``t.requires_grad_(flag)``: done on the real tensor; replayed by the state node at
        the end of the call (inputs and tensors the function holds), else a graph break."""
        t = args[0]
        real = self.real(t)
        before = real.requires_grad
        raw(real, *self.real(args[1:]), **self.real(kwargs))
        if isinstance(t, TracedTensor):
            t.requires_grad = real.requires_grad
            if real.requires_grad != before:
                if id(real) in self.user_inputs:
                    self.requires[self.user_inputs[id(real)]] = real.requires_grad
                else:
                    self.graph_break("requires_grad_() on a value computed inside the "
                                     "compiled function is not replayed")
        elif id(real) in self.lifted:
            self.requires[self.lifted[id(real)][1]] = real.requires_grad
        return t

    # -- dispatch -----------------------------------------------------------------------
    def call(self, name, fn, args, kwargs, rec_args, rec_kwargs):
        # tensors the function reaches (parameters) become free inputs BEFORE the call is
        # classified: an op over parameters alone (``wpe.weight[:n]``) is a node, not a
        # constant folded at capture (the optimizer changes the parameter between calls)
        unknown: list = []
        self.scan((rec_args, rec_kwargs), unknown)
        for t, _ in unknown:
            if self.reachable.get(id(t)) is t and not (t.requires_grad
                                                       and t.grad_fn is not None):
                self.lift_free(t)
        if _draws(name) and not self.scan((rec_args, rec_kwargs), []):
            # on tensors the graph does not hold (``ember.empty(n).bernoulli_(p)``): folded
            # as a constant it would replay the capture's draw on every call
            self.graph_break(f"{name} draws random numbers on a tensor made outside the "
                             "graph")
        return super().call(name, fn, args, kwargs, rec_args, rec_kwargs)

    def dispatch(self, func, args, kwargs):
        entry = _xcap._ops.lookup(func)
        if entry is not None and entry.name in _RANDOM_FACTORIES:
            self.graph_break(f"{entry.name} draws random numbers outside the graph")
        if entry is not None and entry.name == "Tensor.requires_grad_" and args \
                and isinstance(args[0], Tensor):
            return self.set_requires_grad(overrides.plain(_xcap._ops._raw(func)), args,
                                          kwargs)
        return super().dispatch(func, args, kwargs)

    def output(self, node, real, shadow, i, traced_args, args, taint, single=False):
        out = super().output(node, real, shadow, i, traced_args, args, taint, single)
        self.requires[node.outputs[-1][0]] = bool(real.requires_grad)
        if real.grad_fn is not None and self.one_node.get(node.name, True):
            self.one_node[node.name] = _one_node(real.grad_fn, args)
        return out

    def record_backward(self, raw, args, kwargs):
        """``loss.backward(...)`` in the function: run it (capture off), record its node."""
        import inspect

        bound = inspect.signature(raw).bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        loss = a["self"]
        if a.get("create_graph") or a.get("inputs") is not None:
            self.graph_break("backward(create_graph=True or inputs=...) is not compiled")
        elif not isinstance(loss, TracedTensor):
            self.graph_break("backward() of a tensor that is not a value of the graph")
        gradient = a.get("gradient")
        unknown: list = []
        self.scan([gradient], unknown)
        for t, path in unknown:
            self.untraced(t, f"the gradient given to backward() ({path})")
        enc = [self.encode(loss, "backward"), self.encode(gradient, "backward")]
        before = self.grad_state()
        with _suspended(self):
            out = raw(*self.real(args), **self.real(kwargs))
        self.note_grad_changes(before)
        node = Node(self.fresh_name("backward"), "compile.backward", enc, {}, [],
                    result="none", source=describe_frame(user_frame(), short=True))
        node.mutates = ["<grads>"]
        self.backward[node.name] = {}
        self.nodes.append(node)
        return out

    def record_fused(self, op, tensors):
        """A call of a fused op (``ember.ops.api.fused_op``): run it eagerly on the real
        tensors (capture off), record one ``compile.fused.<name>`` node."""
        cap = self

        def run(*real):
            with _suspended(cap):
                return op.eager(real)

        before = len(self.nodes)
        args = list(tensors)
        out = self.call(f"compile.fused.{op.name}", run, args, {}, args, {})
        if len(self.nodes) > before:
            self.fused[self.nodes[-1].name] = op
        return out

    def record_opaque(self, fn, args, kwargs) -> None:
        unknown: list = []
        self.scan((args, kwargs), unknown)
        enc = [self.encode(a, "opaque") for a in args if isinstance(a, Tensor)
               and self.classify(a) == "graph"]
        name = getattr(fn, "__qualname__", getattr(fn, "__name__", "opaque"))
        node = Node(self.fresh_name("opaque_" + name.replace(".", "_")), "compile.opaque",
                    enc, {}, [], result="none",
                    source=describe_frame(user_frame(), short=True))
        node.mutates = ["<opaque>"]
        self.opaque[node.name] = (fn, args, kwargs)
        self.nodes.append(node)


def _one_node(gf, args) -> bool:
    """Whether the op's output node ``gf`` has edges only to its own tensor arguments (the
    op recorded ONE autograd node: its backward is the op's VJP, called directly)."""
    from ..autograd.graph import edge

    mine = set()
    for a in _xcap._flat(args):
        if isinstance(a, Tensor):
            real = a._real if isinstance(a, TracedTensor) else a
            if real.requires_grad:
                fn, nr = edge(real)
                mine.add((id(fn), nr))
    return all(fn is None or (id(fn), nr) in mine for fn, nr in gf.next_functions)


class _suspended:
    """The capture off on this thread inside the block (an opaque call, a backward)."""

    def __init__(self, cap):
        self.cap = cap

    def __enter__(self):
        state = overrides._STATE
        self.modes = state.modes
        state.modes = tuple(m for m in self.modes if m is not self.cap.mode)
        _xcap._LOCAL.capture = None
        _LOCAL.capture = None

    def __exit__(self, *exc):
        overrides._STATE.modes = self.modes
        _xcap._LOCAL.capture = self.cap
        _LOCAL.capture = self.cap
        return False


def run_opaque(fn, args, kwargs):
    """Run ``fn`` as an opaque call: recorded when a compile capture is running on this
    thread (then run with the capture off), else just run."""
    cap = current_compile()
    if cap is None:
        return fn(*args, **kwargs)
    before = cap.grad_state()
    with _suspended(cap):
        out = fn(*cap.real(args), **cap.real(kwargs))
    cap.note_grad_changes(before)
    cap.record_opaque(fn, args, kwargs)
    return out


_ORIGINAL_BACKWARD: list = []


def install_backward_hook() -> None:
    """``Tensor.backward`` does not dispatch through the capture's mode: on the first capture
    it is wrapped so that, inside a compile capture on this thread, the call is recorded as a
    backward node (elsewhere the wrapper costs one thread-local read and calls the original)."""
    if _ORIGINAL_BACKWARD:
        return
    import functools

    original = Tensor.backward

    @functools.wraps(original)
    def backward(self, *args, **kwargs):
        cap = _LOCAL.__dict__.get("capture")
        if cap is None:
            return original(self, *args, **kwargs)
        return cap.record_backward(original, (self, *args), kwargs)

    _ORIGINAL_BACKWARD.append(original)
    Tensor.backward = backward


class _GradField:
    """``Tensor._grad`` while a compile capture runs: a data descriptor over the instance
    dict (where the field lives), so that the function's reads and writes of a gradient
    (``p.grad``, ``p.grad = None``, ``Module.zero_grad``'s ``p._grad``) reach the capture
    on the capturing thread. Elsewhere (other threads, ops, the engine, opaque calls) it is
    the plain field; outside captures the class holds its plain default again."""

    def __get__(self, obj, cls=None):
        if obj is None:
            return None
        cap = _LOCAL.__dict__.get("capture")
        if cap is None or not cap.at_user_level():
            return obj.__dict__.get("_grad")
        return cap.read_grad(obj)

    def __set__(self, obj, value):
        cap = _LOCAL.__dict__.get("capture")
        if cap is None or not cap.at_user_level():
            obj.__dict__["_grad"] = value
        else:
            cap.write_grad(obj, value)

    def __delete__(self, obj):
        self.__set__(obj, None)


_GRAD_FIELD: list = [0, None]  # captures running (all threads), the class's plain default
_GRAD_LOCK = threading.Lock()


def _grad_field_on() -> None:
    with _GRAD_LOCK:
        if _GRAD_FIELD[0] == 0:
            _GRAD_FIELD[1] = Tensor.__dict__["_grad"]
            Tensor._grad = _GradField()
        _GRAD_FIELD[0] += 1


def _grad_field_off() -> None:
    with _GRAD_LOCK:
        _GRAD_FIELD[0] -= 1
        if _GRAD_FIELD[0] == 0:
            Tensor._grad = _GRAD_FIELD[1]


# -- what the function can reach -----------------------------------------------------------------

def _is_module(obj) -> bool:
    return callable(getattr(obj, "named_parameters", None)) \
        and callable(getattr(obj, "named_buffers", None)) and hasattr(obj, "training")


def reachable_objects(fn, args, kwargs):
    """Tensors (id -> tensor), their names, the modules a call of ``fn`` can reach without
    being given them (closure cells, globals its code names, a bound ``self``, modules and
    optimizers among them: their parameters, buffers and tensor attributes), and the globals
    dicts of the functions visited."""
    tensors: dict = {}
    names: dict = {}
    modules: list = []
    seen: set = set()
    globals_seen: list = []

    def add_tensor(t, name):
        tensors.setdefault(id(t), t)
        names.setdefault(id(t), name)

    def visit(obj, name, depth):
        if id(obj) in seen or depth > 3:
            return
        seen.add(id(obj))
        if isinstance(obj, Tensor):
            add_tensor(obj, name)
        elif _is_module(obj):
            for m_name, m in obj.named_modules():
                if id(m) not in {id(x) for x in modules}:
                    modules.append(m)
                prefix = f"{name}.{m_name}" if m_name else name
                for attr, v in vars(m).items():
                    if isinstance(v, Tensor):
                        add_tensor(v, f"{prefix}.{attr}")
            for p_name, p in obj.named_parameters():
                add_tensor(p, f"{name}.{p_name}")
            for b_name, b in obj.named_buffers():
                if b is not None:
                    add_tensor(b, f"{name}.{b_name}")
        elif hasattr(obj, "param_groups") and isinstance(obj.param_groups, list):
            for gi, group in enumerate(obj.param_groups):
                for pi, p in enumerate(group.get("params", ())):
                    if isinstance(p, Tensor):
                        add_tensor(p, f"{name}_group{gi}_{pi}")
        elif isinstance(obj, (list, tuple)):
            for i, x in enumerate(obj):
                visit(x, f"{name}_{i}", depth + 1)
        elif isinstance(obj, dict):
            for k, x in list(obj.items())[:64]:
                visit(x, f"{name}_{k}", depth + 1)
        elif hasattr(obj, "__self__") and hasattr(obj, "__func__"):
            visit(obj.__self__, "self", depth + 1)
            visit_function(obj.__func__, depth + 1)
        elif callable(obj) and hasattr(obj, "__code__"):
            visit_function(obj, depth + 1)

    def visit_function(f, depth):
        code = getattr(f, "__code__", None)
        if code is None or depth > 3:
            return
        for var, cell in zip(code.co_freevars, f.__closure__ or ()):
            try:
                visit(cell.cell_contents, var, depth)
            except ValueError:  # an empty cell
                continue
        g = getattr(f, "__globals__", {})
        if isinstance(g, dict) and all(g is not x for x in globals_seen):
            globals_seen.append(g)
        for n in _code_names(code):
            if n in g:
                visit(g[n], n, depth)

    visit(fn, getattr(fn, "__name__", "fn"), 0)
    for i, a in enumerate(args):
        visit(a, f"arg{i}", 1)
    for k, a in kwargs.items():
        visit(a, k, 1)
    return tensors, names, modules, globals_seen


def _code_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _code_names(c)
    return names


# -- the driver ------------------------------------------------------------------------------

class Captured:
    """What one capture produced: the graph, the capture, the call's (real) result."""

    __slots__ = ("graph", "capture", "result", "arg_specs", "kwarg_specs", "modules")

    def __init__(self, graph, capture, result, arg_specs, kwarg_specs, modules):
        self.graph = graph
        self.capture = capture
        self.result = result
        self.arg_specs = arg_specs
        self.kwarg_specs = kwarg_specs
        self.modules = modules


def _holds_tensor(obj) -> bool:
    if isinstance(obj, Tensor):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_holds_tensor(x) for x in obj)
    if isinstance(obj, dict):
        return any(_holds_tensor(x) for x in obj.values())
    return False


def _arg(inputs, cap, value, path):
    """``(spec, value to call with)``: tensors (also in containers) become graph inputs;
    anything else is guarded as it is (``("const", value)``)."""
    from ..export._export import _container

    if _holds_tensor(value):
        spec, traced = _container(inputs, value, path, None)
        return ("tensors", spec), traced
    return ("const", value), value


def capture_call(fn, args: tuple, kwargs: dict, fullgraph: bool) -> Captured:
    """Run ``fn(*args, **kwargs)`` once under a compile capture."""
    import ember.compiler
    import ember.jit  # noqa: F401 (ember.nn asks ember.jit.is_tracing())

    from ..export._export import (
        _dispatching_wrappers,
        _finish,
        _Inputs,
        _output_spec,
        _route_held_functions,
        _unroute,
    )

    if _xcap.current() is not None:
        raise GraphBreakError("ember.compile inside a running capture (export, trace or "
                              "another compiled function's first call) is not supported")
    install_backward_hook()
    tensors, names, modules, fn_globals = reachable_objects(fn, args, kwargs)
    cap = CompileCapture(fullgraph, tensors)
    cap.reachable_names = {k: v.replace(".", "_") for k, v in names.items()}
    entry = _EntryState(modules, tensors, names)
    cap.entry = entry
    inputs = _Inputs(cap, clone=False)
    arg_specs, call_args = [], []
    for i, a in enumerate(args):
        spec, value = _arg(inputs, cap, a, f"arg{i}")
        arg_specs.append(spec)
        call_args.append(value)
    kwarg_specs, call_kwargs = {}, {}
    for k, a in kwargs.items():
        spec, value = _arg(inputs, cap, a, k)
        kwarg_specs[k] = spec
        call_kwargs[k] = value
    non_leaf = []
    for _, name, t, _ in inputs.leaves:
        cap.requires[name] = bool(t.requires_grad)
        cap.user_inputs[id(t)] = name
        if t.requires_grad and t.grad_fn is not None:
            non_leaf.append(name)
    routed: list = []
    _grad_field_on()
    _xcap._LOCAL.capture = cap
    _LOCAL.capture = cap
    try:
        with cap.mode:
            for m in modules:
                routed += _route_held_functions(m)
            routed += _route_held_functions(None, fn_globals)
            # an op compiled itself (ember.compile(F.scaled_dot_product_attention)) runs
            # through its dispatching wrapper, which the capture sees
            run = _dispatching_wrappers().get(id(fn), fn) if callable(fn) else fn
            out = run(*call_args, **call_kwargs)
        out_spec = _output_spec(cap, out, False)
    finally:
        _unroute(routed)
        _xcap._LOCAL.capture = None
        _LOCAL.capture = None
        _grad_field_off()
        cap.done = True
    if non_leaf and any(n.op == "compile.backward" for n in cap.nodes):
        # a forward alone links its outputs to a non-leaf input's grad_fn (the graph goes on
        # outside); a backward() inside the function would stop at the input
        cap.breaks.append(f"input {non_leaf[0]} is a non-leaf tensor that requires grad: its "
                          "graph continues outside the compiled function")
    _record_state_changes(cap, entry)
    in_spec = [{"name": name, "kind": "POSITIONAL_ONLY", "spec": {"tensor": name}}
               for _, name, _, _ in inputs.leaves]
    graph = _finish(cap, in_spec, out_spec)
    return Captured(graph, cap, cap.real(out), arg_specs, kwarg_specs, modules)


class _EntryState:
    """What the guards check, as it was when the call began (the function may change it:
    ``model.train()``, ``p.requires_grad_()`` inside the step): each module's ``training``
    flag, each tensor's ``requires_grad`` and array."""

    def __init__(self, modules, tensors: dict, names: dict):
        self.names = names  # id -> the tensor's name as the function reaches it
        self.training = {id(m): bool(m.training) for m in modules}
        self.requires = {k: bool(t.requires_grad) for k, t in tensors.items()}
        self.data = {k: t._data for k, t in tensors.items()}
        self.modules = list(modules)
        self.tensors = dict(tensors)


def _record_state_changes(cap: CompileCapture, entry: _EntryState) -> None:
    """A ``compile.set_state`` node at the end of the graph for the flags the call changed
    (``training`` of the modules, ``requires_grad`` of the tensors it holds or was given):
    the replay leaves them as the call did. An array replaced (``p.data = ...``) is a graph
    break: the graph reads parameters' arrays as they were when the call began."""
    sets = []
    for m in entry.modules:
        if bool(m.training) != entry.training[id(m)]:
            sets.append(("object", m, "training", bool(m.training)))
    for key, t in entry.tensors.items():
        if t._data is not entry.data[key]:
            name = entry.names.get(key, "a tensor")
            cap.graph_break(f"assigning .data of {name} (or replacing its array) inside the "
                            "compiled function is not replayed")
        if bool(t.requires_grad) != entry.requires[key]:
            user = cap.user_inputs.get(key)
            sets.append(("input", user, "requires_grad", bool(t.requires_grad)) if user
                        else ("object", t, "requires_grad", bool(t.requires_grad)))
    if not sets:
        return
    node = Node(cap.fresh_name("set_state"), "compile.set_state", [], {}, [], result="none",
                source="")
    node.mutates = ["<state>"]
    cap.state_sets[node.name] = sets
    cap.nodes.append(node)
