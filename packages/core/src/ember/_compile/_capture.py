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
  see, a random factory outside the graph) is a **graph break**: the call goes on eagerly and
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

    def encode(self, obj, op: str):
        try:
            return super().encode(obj, op)
        except GraphBreakError:
            raise
        except _xcap.ExportError as exc:
            self.graph_break(str(exc))
            return None

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
        return super().call(name, fn, args, kwargs, rec_args, rec_kwargs)

    def dispatch(self, func, args, kwargs):
        entry = _xcap._ops.lookup(func)
        if entry is not None and entry.name in _RANDOM_FACTORIES:
            self.graph_break(f"{entry.name} draws random numbers outside the graph")
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
        with _suspended(self):
            out = raw(*self.real(args), **self.real(kwargs))
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
    with _suspended(cap):
        out = fn(*cap.real(args), **cap.real(kwargs))
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


# -- what the function can reach -----------------------------------------------------------------

def _is_module(obj) -> bool:
    return callable(getattr(obj, "named_parameters", None)) \
        and callable(getattr(obj, "named_buffers", None)) and hasattr(obj, "training")


def reachable_objects(fn, args, kwargs):
    """Tensors (id -> tensor), their names, and the modules a call of ``fn`` can reach without
    being given them: closure cells, globals its code names, a bound ``self``, modules and
    optimizers among them (their parameters, buffers and tensor attributes)."""
    tensors: dict = {}
    names: dict = {}
    modules: list = []
    seen: set = set()

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
        for n in _code_names(code):
            if n in g:
                visit(g[n], n, depth)

    visit(fn, getattr(fn, "__name__", "fn"), 0)
    for i, a in enumerate(args):
        visit(a, f"arg{i}", 1)
    for k, a in kwargs.items():
        visit(a, k, 1)
    return tensors, names, modules


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

    from ..export._export import _finish, _Inputs, _output_spec, _route_held_functions

    if _xcap.current() is not None:
        raise GraphBreakError("ember.compile inside a running capture (export, trace or "
                              "another compiled function's first call) is not supported")
    install_backward_hook()
    tensors, names, modules = reachable_objects(fn, args, kwargs)
    cap = CompileCapture(fullgraph, tensors)
    cap.reachable_names = {k: v.replace(".", "_") for k, v in names.items()}
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
    for _, name, t, _ in inputs.leaves:
        cap.requires[name] = bool(t.requires_grad)
        if t.requires_grad and t.grad_fn is not None:
            cap.breaks.append(f"input {name} is a non-leaf tensor that requires grad: its "
                              "graph continues outside the compiled function")
    routed: list = []
    _xcap._LOCAL.capture = cap
    _LOCAL.capture = cap
    try:
        with cap.mode:
            for m in modules:
                routed += _route_held_functions(m)
            out = fn(*call_args, **call_kwargs)
        out_spec = _output_spec(cap, out, False)
    finally:
        for owner, key, f in routed:
            vars(owner)[key] = f
        _xcap._LOCAL.capture = None
        _LOCAL.capture = None
        cap.done = True
    in_spec = [{"name": name, "kind": "POSITIONAL_ONLY", "spec": {"tensor": name}}
               for _, name, _, _ in inputs.leaves]
    graph = _finish(cap, in_spec, out_spec)
    return Captured(graph, cap, cap.real(out), arg_specs, kwarg_specs, modules)
