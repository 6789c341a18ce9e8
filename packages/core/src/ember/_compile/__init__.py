"""``ember.compile``: capture a function or module once per guard set, replay it as array code.

``ember.compile(fn)`` (or ``@ember.compile``, with or without arguments) returns a callable
that, on its first call with a given kind of arguments, runs ``fn`` once for real under
``ember.export``'s capture, then generates one Python function over arrays for the graph
(``_codegen``): no Tensor objects or autograd nodes per step for the ops with a lowering
(``_lowerings``), buffers allocated once and written with ``out=``, elementwise ops written in
place into a buffer that nothing else reads. A training step (forward, ``loss.backward()``,
``optimizer.step()``) is captured whole: the backward becomes the VJP lowerings of the
recorded forward, the optimizer's ``step``/``zero_grad`` run as opaque calls.

A forward alone whose outputs require grad (``model = ember.compile(model)``, then
``loss.backward()`` and ``opt.step()`` outside, PyTorch's most common pattern) is compiled as
AOTAutograd does it: the forward's array code keeps, as arrays of each call, the values its
backward reads, and the outputs that require grad become the outputs of one
``CompiledFunctionBackward`` autograd node whose edges are the gradient edges of the graph's
inputs that require grad (a parameter's or a leaf input's ``AccumulateGrad``, a non-leaf
input's ``grad_fn``); its backward is the reverse sweep of the same VJP lowerings a training
step uses, generated once per entry. Hooks on the inputs fire, ``retain_graph`` keeps the
call's values, an input the backward reads that was modified in place since (an optimizer
step between forward and backward) raises eager's error, and an unused output's gradient is
taken as zeros. Double backward (``create_graph=True`` through such an output) raises
``RuntimeError`` (PyTorch falls back to its eager graph there; run that forward eagerly,
``ember.compiler.disable``, to differentiate twice), and ``saved_tensors_hooks`` do not see
the compiled forward's values.

On a CUDA device (CuPy) each run of consecutive elementwise nodes with a lowering (``+ - * /``
with tensors or Python scalars, broadcasting included; ``neg``, ``exp``, ``tanh``, ``relu``,
``clone``, and the in-place forms a training step replays functionally) of one float dtype and
one output shape runs as ONE generated ``cupy.ElementwiseKernel`` (``_cuda_fusion``), cached per
chain and compute type: only the values read outside the chain (by another op, a VJP, the
caller) are written to memory. Each op rounds to the dtype as it does alone (float16 computes
in float32 per op) and the kernels do not contract multiply-adds, so results equal the unfused
ops'. Other ops, integer dtypes, real in-place writes and the backward run as on the CPU, as
array calls of the backend's array module.

What the function does to state the replay must redo is replayed, in order:

* gradients: every read and write of ``.grad`` by the function (``model.zero_grad()``,
  ``p.grad = None``, ``del p.grad``, ``p.grad.zero_()``, ``p -= lr * p.grad`` under
  ``no_grad``, ``p.data.add_(p.grad, alpha=-lr)``, gradient clipping, ``w.grad = ...``):
  a read is the tensor's current ``.grad`` at that point of the call, a write is redone;
* in-place updates of parameters and buffers (manual SGD, BatchNorm's running statistics and
  ``num_batches_tracked``) are nodes of the graph, written into the same arrays;
* ``model.train()``/``eval()`` and ``requires_grad_()`` (or ``requires_grad = ...``) on a
  tensor the function holds or was given: the replay leaves the flags as the call left them.

What it cannot replay is a graph break, and the entry runs eagerly (``fullgraph=True``
raises): assigning ``.data`` of a parameter (or anything that replaces its array),
``requires_grad_()`` on a value computed inside the function, ``.grad`` of an intermediate
value (``retain_grad``), setting ``.grad`` of a tensor the function neither holds nor was
given.

Guards (what the capture assumed) select an entry per call: the arguments' structure, shapes,
dtypes, devices and ``requires_grad``; non-tensor arguments' values; grad mode; the
``training`` flag of every module the function reaches; that those modules still hold the
same parameters and buffers with the same shapes; whether each ``.grad`` the function read
before anything it does set it was None (``model.zero_grad()`` at the top of a step captures
twice: without gradients on the first call, with them after). Flags are guarded as they were
when the capturing call began. A failed guard captures a new entry, up to
``ember._compile.config.cache_size_limit`` (8, as ``torch._dynamo``); past it the function
warns once and runs eagerly for new kinds of arguments.

Shapes are specialised: ``dynamic=None``, ``False`` and ``True`` all capture one entry per
set of shapes (``dynamic=True`` is accepted for PyTorch's sake and documented as
specialising). A graph break (data-dependent Python control flow, a tensor made by code the
capture cannot see, a random factory outside the graph or a random fill of a tensor made
outside it such as ``ember.empty(n).bernoulli_(p)``, an in-place op on the gradient's path)
makes the entry run eagerly; :func:`explain` lists the breaks, and ``fullgraph=True``
raises :class:`GraphBreakError` instead. Graph breaks are silent, as in PyTorch (which logs
them only when ``TORCH_LOGS="graph_breaks"`` asks): ``config.warn_on_graph_break = True`` (or
``TORCH_LOGS`` listing ``graph_breaks`` when Ember is imported) makes each one a
``UserWarning`` naming its reason. Ops bound as plain functions before the capture
(``from ember.fft import rfft`` at the top of a file, a module attribute
``self.act = F.gelu``) are routed to the registry for the capture, as in ``ember.export``.

Python side effects of the function (prints, appends to lists, counters) happen on the
capturing call only, as in ``torch.compile``'s graphs; results are fresh tensors. A call
with a nested (jagged) tensor among its arguments runs eagerly (a graph break). Under
``ember.profiler.profile`` each call is one range, PyTorch's "Torch-Compiled Region:
{frame}/{entry}"; the replay runs no ops of its own, so the profile does not break it down
by op as PyTorch's shows the ops of its compiled graph.

A callable ``backend`` (``backend(gm, example_inputs)``, PyTorch's custom backends) or a name
given to :func:`register_backend` takes another road: the function is traced by ``ember.fx``
into a ``GraphModule`` that the backend compiles once per entry (see :func:`compile` and
``_custom``).
"""

from __future__ import annotations

import builtins
import functools
import itertools
import os
import threading
import warnings

from .._tensor import Tensor
from ..autograd.profiler import _ACTIVE as _PROFILING
from ..autograd.profiler import _current as _profiler
from ..export._capture import _LOCAL as _XLOCAL
from . import _custom
from . import hints as _hints
from ._capture import GraphBreakError, current_compile, run_opaque
from ._codegen import MISS, Unsupported

__all__ = ["compile", "config", "disable", "reset", "is_compiling", "explain",
           "GraphBreakError", "CompiledFunction", "register_backend", "list_backends",
           "lookup_backend"]


def _torch_logs_graph_breaks() -> bool:
    """Whether ``TORCH_LOGS`` (PyTorch's logging switch, comma-separated) asks for
    ``graph_breaks``."""
    items = os.environ.get("TORCH_LOGS", "").replace(" ", "").split(",")
    return "graph_breaks" in (item.lstrip("+-") for item in items)


class _Config:
    """``torch._dynamo.config``'s knobs that Ember has, and one of Ember's own:
    ``warn_on_graph_break`` (False unless ``TORCH_LOGS`` lists ``graph_breaks``) reports
    each graph break with a ``UserWarning``, Ember's stand-in for PyTorch's
    ``TORCH_LOGS="graph_breaks"`` / ``torch._logging.set_logs(graph_breaks=True)``; graph
    breaks are otherwise silent, as in PyTorch (:func:`explain` lists them)."""

    cache_size_limit: int = 8
    suppress_errors: bool = False
    warn_on_graph_break: bool = _torch_logs_graph_breaks()


config = _Config()

_ALL: set = set()  # weak enough: reset() clears the compiled functions' entries
#: the compiled functions' numbers in a profile's "Torch-Compiled Region: {frame}/{entry}"
_FRAME_IDS = itertools.count()
_ALL_LOCK = threading.Lock()
_BACKENDS = ("ember", "inductor", "eager", "aot_eager")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def is_compiling() -> bool:
    """Whether this thread is capturing a compiled function (``torch.compiler.is_compiling``),
    or tracing one for a custom backend."""
    return current_compile() is not None or _custom.tracing()


def _nested_input(args, kwargs) -> str | None:
    """The path of the first nested tensor among a call's arguments (in tuples, lists and
    dicts), or None."""
    from ..nested._tensor import NestedTensor

    todo = [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    while todo:
        path, value = todo.pop()
        if isinstance(value, NestedTensor):
            return path
        if isinstance(value, (tuple, list)):
            todo += [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            todo += [(f"{path}[{k!r}]", v) for k, v in value.items()]
    return None


def _report_graph_break(fn, reason, stacklevel: int) -> None:
    """A graph break is silent unless ``config.warn_on_graph_break`` asks for a warning."""
    if config.warn_on_graph_break:
        warnings.warn(f"ember.compile: graph break in {getattr(fn, '__qualname__', fn)}: "
                      f"{reason}; this entry runs eagerly (ember._compile.explain lists the "
                      "breaks)", UserWarning, stacklevel=stacklevel + 1)


# -- backends ----------------------------------------------------------------------------------

#: backends registered by name (``torch._dynamo.register_backend``): name -> compiler fn
_REGISTERED: dict = {}
#: their tags: name -> tuple of tags
_TAGS: dict = {}
#: the tags of the built-in backends (PyTorch tags ``eager`` and ``aot_eager`` "debug")
_BUILTIN_TAGS = {"ember": (), "inductor": (), "eager": ("debug",), "aot_eager": ("debug",)}


def register_backend(compiler_fn=None, name: str | None = None, tags=()):
    """Register a backend callable under a name usable as ``ember.compile(...,
    backend=name)`` (``torch._dynamo.register_backend``): ``@register_backend``,
    ``@register_backend(name="mine")`` or ``register_backend(fn, name="mine")``; ``name``
    defaults to the function's ``__name__``. Returns ``compiler_fn``."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"compiler_fn must be callable, got {type(compiler_fn)}")
    name = name or compiler_fn.__name__
    if name in _REGISTERED or name in _BACKENDS:
        raise AssertionError(f"duplicate name: {name}")
    _REGISTERED[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The names ``ember.compile(..., backend=name)`` takes, sorted, without those tagged
    with one of ``exclude_tags`` (``torch._dynamo.list_backends``)."""
    excluded = set(exclude_tags or ())
    tags = dict(_BUILTIN_TAGS)
    tags.update((n, _TAGS.get(n, ())) for n in _REGISTERED)
    return sorted(n for n, t in tags.items() if not excluded.intersection(t))


def lookup_backend(compiler_fn):
    """A backend name's callable (``torch._dynamo.lookup_backend``): a registered name gives
    its function, a built-in name itself, a callable itself."""
    if isinstance(compiler_fn, str):
        if compiler_fn in _REGISTERED:
            return _REGISTERED[compiler_fn]
        if compiler_fn not in _BACKENDS:
            raise ValueError(f"ember.compile: unknown backend {compiler_fn!r}; available: "
                             f"{', '.join(list_backends(()))}")
    return compiler_fn


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Mark ``fn`` to run as it is, never captured (``torch.compiler.disable``): inside a
    compiled function's capture its call is recorded as one opaque call and replayed as such.
    Usable as ``@disable`` or ``@disable()``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if getattr(fn, "_ember_compile_disabled", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if current_compile() is None:
            return fn(*args, **kwargs)
        return run_opaque(fn, args, kwargs)

    wrapper._ember_compile_disabled = True
    return wrapper


def reset() -> None:
    """Forget every compiled entry of every compiled function (``torch.compiler.reset``)."""
    with _ALL_LOCK:
        fns = list(_ALL)
    for f in fns:
        f._reset()


class _Entry:
    __slots__ = ("run", "source", "breaks", "eager", "gen", "reason")

    def __init__(self, run, source, breaks, eager, gen, reason):
        self.run, self.source, self.breaks = run, source, breaks
        self.eager, self.gen, self.reason = eager, gen, reason


class CompiledFunction:
    """What ``ember.compile(fn)`` returns for a function: call it as ``fn``."""

    def __init__(self, fn, *, fullgraph: bool = False, backend: str = "ember"):
        self._fn = fn
        self._fullgraph = fullgraph
        self._backend = backend
        self._entries: list = []
        self._runs: list = []
        self._warned = False
        self._called = False  # a call ran (the "*_then_compile" stances' first call)
        self._lock = threading.Lock()
        self._frame_id = next(_FRAME_IDS)
        functools.update_wrapper(self, fn)
        with _ALL_LOCK:
            _ALL.add(self)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def _reset(self) -> None:
        with self._lock:
            self._entries = []
            self._runs = []
            self._warned = False

    def __get__(self, obj, objtype=None):  # a compiled method binds like a function
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        # the buffers of an entry serve one call at a time: another thread's call, or a
        # recursive one, or one inside a capture (inlined into that graph) runs eagerly
        if not self._lock.acquire(False):
            return self._fn(*args, **kwargs)
        try:
            if _XLOCAL.__dict__.get("capture") is not None or self._stance_eager():
                return self._fn(*args, **kwargs)
            if _PROFILING[0]:
                return self._call_profiled(args, kwargs)
            for run in self._runs:
                out = run(args, kwargs)
                if out is not MISS:
                    return out
            if self._stance_no_new_entry():
                return self._fn(*args, **kwargs)
            return self._capture(args, kwargs)
        finally:
            self._lock.release()

    def _call_profiled(self, args, kwargs):
        """A call under a profiler: the entry's replay is one range in the profile,
        PyTorch's "Torch-Compiled Region: {frame}/{entry}" (the replay runs no op of its
        own, so the ops inside it are not broken out; an entry that runs eagerly and a
        first call's capture show their ops under it)."""
        rec = _profiler()
        if rec is None:  # another thread's profiler
            evt = None
        else:
            evt = rec.begin(f"Torch-Compiled Region: {self._frame_id}/0", "user_annotation",
                            user=True)
        try:
            for i, run in enumerate(self._runs):
                out = run(args, kwargs)
                if out is not MISS:
                    if evt is not None:
                        evt.name = f"Torch-Compiled Region: {self._frame_id}/{i}"
                    return out
            if self._stance_no_new_entry():
                return self._fn(*args, **kwargs)
            if evt is not None:
                evt.name = f"Torch-Compiled Region: {self._frame_id}/{len(self._runs)}"
            return self._capture(args, kwargs)
        finally:
            if evt is not None:
                rec.end(evt)

    # -- set_stance ---------------------------------------------------------------------------
    def _stance_eager(self) -> bool:
        """Whether this call runs eagerly by the stance: always under ``"force_eager"``, the
        first call under ``"eager_then_compile"``/``"aot_eager_then_compile"``."""
        stance = _hints._STANCE[0]
        if stance == "default":
            return False
        if stance == "force_eager":
            return True
        if stance.endswith("_then_compile") and not self._called:
            self._called = True
            return True
        return False

    def _stance_no_new_entry(self) -> bool:
        """Before a new entry is captured: True (run eagerly) under ``"eager_on_recompile"``;
        PyTorch's error under ``"fail_on_recompile"``."""
        stance = _hints._STANCE[0]
        if stance == "eager_on_recompile":
            return True
        if stance == "fail_on_recompile":
            code = getattr(self._fn, "__code__", None)
            if code is None:
                code = getattr(getattr(self._fn, "__func__", None), "__code__", None)
            where = (f"filename: '{code.co_filename}', function name: '{code.co_name}', "
                     f"line number: {code.co_firstlineno}" if code is not None
                     else f"function: {self._fn!r}")
            raise RuntimeError("Detected recompile when torch.compile stance is "
                               f"'fail_on_recompile'. {where}")
        return False

    # -- capture ------------------------------------------------------------------------------
    def _cache_full(self) -> bool:
        """Whether no entry may be added (warned once per compiled function)."""
        if len(self._entries) < config.cache_size_limit:
            return False
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"ember.compile: {getattr(self._fn, '__qualname__', self._fn)} reached "
                f"config.cache_size_limit ({config.cache_size_limit}) entries; calls that "
                "match none of them run eagerly (torch._dynamo hit config.cache_size_limit)",
                UserWarning, stacklevel=4)
        return True

    def _capture(self, args, kwargs):
        from ._capture import capture_call
        from ._guards import guard_code

        if _custom.tracing() or self._cache_full():  # inside a custom backend's trace: inlined
            return self._fn(*args, **kwargs)
        nested = _nested_input(args, kwargs)
        if nested is not None:
            # a nested (jagged) tensor has no one array to capture: such a call runs eagerly
            # (no entry: each call with nested inputs is checked here again)
            reason = f"input {nested} is a nested tensor, which ember.compile does not capture"
            if self._fullgraph:
                raise GraphBreakError(f"graph break with fullgraph=True: {reason}")
            _report_graph_break(self._fn, reason, stacklevel=3)
            return self._fn(*args, **kwargs)
        captured = capture_call(self._fn, args, kwargs, self._fullgraph)
        name = f"entry{len(self._entries)}"
        guard_lines, guard_ns, input_exprs = guard_code(captured, args, kwargs)
        breaks = list(captured.capture.breaks)
        reason = None
        run = source = gen = None
        if not breaks:
            try:
                run, source, gen = _generate(captured, guard_lines, guard_ns, input_exprs,
                                             name, self._backend)
            except Unsupported as exc:
                reason = str(exc)
                if self._fullgraph:
                    raise GraphBreakError(f"graph break with fullgraph=True: {exc}") from None
        else:
            reason = breaks[0]
        if run is None:
            guard_lines, guard_ns, _ = guard_code(captured, args, kwargs, eager=True)
            run = _eager_entry(self._fn, guard_lines, guard_ns, name)
            _report_graph_break(self._fn, reason, stacklevel=3)
        self._entries.append(_Entry(run, source, breaks, source is None, gen, reason))
        self._runs.append(run)
        return captured.result


class CustomBackendFunction(CompiledFunction):
    """What ``ember.compile(fn, backend=callable)`` returns: ``fn`` traced by ``ember.fx``
    into a ``GraphModule``, handed to the backend once per entry, and the backend's
    callable run on each matching call (see ``ember._compile._custom``)."""

    def __init__(self, fn, *, fullgraph: bool = False, backend=None, model=None):
        super().__init__(fn, fullgraph=fullgraph, backend=backend)
        self._model = model

    def _call(self, args, kwargs):
        if not self._lock.acquire(False):
            return self._fn(*args, **kwargs)
        try:
            if (_XLOCAL.__dict__.get("capture") is not None or _custom.tracing()
                    or self._stance_eager()):
                return self._fn(*args, **kwargs)
            tensors, key = _custom.flatten_call(args, kwargs)
            for entry in self._entries:
                if entry.matches(key):
                    return self._fn(*args, **kwargs) if entry.eager else entry(tensors)
            if self._stance_no_new_entry():
                return self._fn(*args, **kwargs)
            return self._trace(args, kwargs, tensors, key)
        finally:
            self._lock.release()

    def _trace(self, args, kwargs, tensors, key):
        if self._cache_full():
            return self._fn(*args, **kwargs)
        _custom.load_fx()  # ember-nn missing is an error, not a graph break
        try:
            gm, spec, guard = _custom.trace(self._fn, self._model, args, kwargs, tensors)
        except Exception as exc:  # the trace met what ember.fx cannot record: a graph break
            reason = f"ember.fx could not trace {getattr(self._fn, '__qualname__', self._fn)}" \
                     f": {type(exc).__name__}: {exc}"
            if self._fullgraph:
                raise GraphBreakError(f"graph break with fullgraph=True: {reason}") from exc
            self._entries.append(_custom.EagerEntry(key, reason))
            _report_graph_break(self._fn, reason, stacklevel=4)
            return self._fn(*args, **kwargs)
        try:
            compiled = self._backend(gm, list(tensors))
        except Exception as exc:
            if not config.suppress_errors:
                raise
            # torch._dynamo.config.suppress_errors: a failing backend leaves the entry eager
            reason = f"backend {getattr(self._backend, '__name__', self._backend)!r} raised " \
                     f"{type(exc).__name__}: {exc}"
            self._entries.append(_custom.EagerEntry(key, reason))
            _report_graph_break(self._fn, reason, stacklevel=4)
            return self._fn(*args, **kwargs)
        if not callable(compiled):
            raise RuntimeError(f"ember.compile: backend {self._backend!r} returned "
                               f"{type(compiled).__name__}, not a callable")
        entry = _custom.CustomEntry(key, guard, compiled, spec, gm)
        self._entries.append(entry)
        return entry(tensors)


def _generate(captured, guard_lines, guard_ns, input_exprs, name, backend):
    from . import _codegen, _lowerings

    if backend in ("eager", "aot_eager"):
        saved = dict(_lowerings.FORWARD)
        _lowerings.FORWARD.clear()
        try:
            return _codegen.generate(captured, guard_lines, guard_ns, input_exprs, name)
        finally:
            _lowerings.FORWARD.update(saved)
    return _codegen.generate(captured, guard_lines, guard_ns, input_exprs, name)


def _eager_entry(fn, guard_lines, guard_ns, name):
    ns = dict(guard_ns)
    ns["MISS"] = MISS
    ns["_eager"] = fn
    ns["Tensor"] = Tensor
    lines = [line for line in guard_lines] + ["return _eager(*args, **kwargs)"]
    source = f"def {name}(args, kwargs):\n" + "\n".join("    " + x for x in lines) + "\n"
    exec(builtins.compile(source, f"<ember.compile {name} (eager)>", "exec"), ns)
    return ns[name]


def explain(fn) -> dict:
    """What ``ember.compile`` made of ``fn`` (a compiled function or module): per entry its
    graph breaks, whether it runs eagerly, the ops run through their fallback, and the
    generated source, for a custom backend the code of the ``GraphModule`` it was given
    (``torch._dynamo.explain``'s counts, in a dict), and on the GPU the ops of each
    elementwise chain run as one kernel (``fused_chains``)."""
    compiled = getattr(fn, "_compiled", fn)
    if not isinstance(compiled, CompiledFunction):
        raise TypeError("explain() takes what ember.compile returned")
    entries = []
    for e in compiled._entries:
        entries.append({"graph_breaks": list(e.breaks), "eager": e.eager, "reason": e.reason,
                        "fallback_ops": list(e.gen.fallbacks) if e.gen else [],
                        "grad_fallback_ops": list(e.gen.grad_fallbacks) if e.gen else [],
                        "node_vjp_ops": list(e.gen.node_vjps) if e.gen else [],
                        "fused_chains": [list(c) for c in e.gen.fused_chains] if e.gen else [],
                        "source": e.source})
    return {"graph_count": sum(not e["eager"] for e in entries),
            "graph_break_count": sum(len(e["graph_breaks"]) for e in entries),
            "entries": entries}


# -- modules -------------------------------------------------------------------------------

def _is_module(obj) -> bool:
    return callable(getattr(obj, "named_parameters", None)) \
        and callable(getattr(obj, "named_buffers", None)) and hasattr(obj, "training") \
        and hasattr(obj, "forward")


_OPTIMIZED: list = []


def _optimized_module_class(model):
    """``OptimizedModule``, a subclass of the model's Module base class (ember.nn's, found
    from the model itself: core does not import ember.nn)."""
    base = next((c for c in type(model).__mro__ if c.__name__ == "Module"
                 and c.__module__.startswith("ember.nn")), None)
    if base is None:
        return None
    for b, cls in _OPTIMIZED:
        if b is base:
            return cls

    class OptimizedModule(base):
        """A compiled module (``torch._dynamo.eval_frame.OptimizedModule``): ``_orig_mod``
        is the model (state dict keys carry the ``_orig_mod.`` prefix, as PyTorch's),
        ``forward`` runs compiled, other attributes are the model's."""

        def __init__(self, mod, compiled):
            super().__init__()
            self._orig_mod = mod
            object.__setattr__(self, "_compiled", compiled)

        def forward(self, *args, **kwargs):
            return self._compiled(*args, **kwargs)

        def __call__(self, *args, **kwargs):
            return self._compiled._call(args, kwargs)

        def __getattr__(self, name):
            if name == "_orig_mod":
                return self._modules["_orig_mod"]
            return getattr(self._modules["_orig_mod"], name)

        def __repr__(self) -> str:
            return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)".replace(
                "\n)\n)", "\n)\n)")

    _OPTIMIZED.append((base, OptimizedModule))
    return OptimizedModule


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="ember",
            mode=None, options=None, disable: bool = False):
    """Compile a function or module (``torch.compile``).

    ``@ember.compile``, ``@ember.compile(fullgraph=True)`` or ``ember.compile(model)``; a
    module gives an ``OptimizedModule`` wrapping it (``_orig_mod``). ``fullgraph=True`` raises
    :class:`GraphBreakError` on a graph break instead of running that entry eagerly (a graph
    break is otherwise silent, as in PyTorch: :func:`explain` lists them, and
    ``config.warn_on_graph_break`` turns each into a ``UserWarning``);
    ``dynamic`` (None/False/True) is accepted, and shapes are always specialised (one entry
    per set of shapes, up to ``config.cache_size_limit``); ``mode`` and ``options`` are
    accepted and change nothing; ``disable=True`` returns ``model`` itself. On a CUDA device,
    chains of elementwise ops run as one generated CuPy kernel each (see the module's
    documentation).

    ``backend`` is ``"ember"`` (also ``"inductor"``: the array lowerings),
    ``"eager"``/``"aot_eager"`` (the captured graph replayed op by op), a name given to
    :func:`register_backend`, or a callable ``backend(gm, example_inputs)``, as PyTorch's
    custom backends: the function (a module's ``forward``) is traced by ``ember.fx`` (from
    ember-nn) into an ``ember.fx.GraphModule`` whose ``forward`` takes the call's tensors
    (``example_inputs``, real tensors) and returns a tuple of the results; the backend is
    called once per entry (per set of shapes, dtypes, non-tensor argument values, grad mode
    and module flags) and must return a callable, which then runs in place of the function
    on every matching call (``return gm.forward`` runs the graph)::

        def my_compiler(gm, example_inputs):
            gm.graph.print_tabular()
            return gm.forward

        @ember.compile(backend=my_compiler)
        def foo(x, y):
            return ember.cos(x) + ember.sin(y)

    Parameters and buffers of a compiled module are ``get_attr`` nodes and ember.nn's
    built-in modules ``call_module`` nodes (``ember.fx.symbolic_trace``'s graph); code
    ember.fx cannot trace (data-dependent control flow) is a graph break: that entry runs
    eagerly, and ``fullgraph=True`` raises :class:`GraphBreakError`."""
    compiler_fn = lookup_backend(backend) if isinstance(backend, str) else backend
    if not isinstance(compiler_fn, str) and not callable(compiler_fn):
        raise ValueError(f"ember.compile: unknown backend {backend!r}; available: "
                         f"{', '.join(list_backends(()))}")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(str(m) for m in _MODES[1:])}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if dynamic not in (None, True, False):
        raise TypeError(f"ember.compile: dynamic must be None, True or False, got {dynamic!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"ember.compile: options must be a dict, got {type(options).__name__}")

    def wrap(m):
        if disable:
            return m
        if _is_module(m):
            if callable(compiler_fn):
                compiled = CustomBackendFunction(m.__call__, fullgraph=fullgraph,
                                                 backend=compiler_fn, model=m)
            else:
                compiled = CompiledFunction(m.__call__, fullgraph=fullgraph, backend=backend)
            cls = _optimized_module_class(m)
            if cls is None:
                return compiled
            optimized = cls(m, compiled)
            # torch's OptimizedModule.dynamo_ctx: compiles a function with the same options
            # (Lightning's Trainer compiles the steps of a compiled LightningModule with it)
            object.__setattr__(optimized, "dynamo_ctx", functools.partial(
                compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                options=options))
            return optimized
        if not callable(m):
            raise AssertionError(f"A callable function is expected, but {type(m)} is provided.")
        if callable(compiler_fn):
            return CustomBackendFunction(m, fullgraph=fullgraph, backend=compiler_fn)
        return CompiledFunction(m, fullgraph=fullgraph, backend=backend)

    if model is None:
        return wrap
    return wrap(model)
