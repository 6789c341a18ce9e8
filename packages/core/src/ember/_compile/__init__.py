"""``ember.compile``: capture a function or module once per guard set, replay it as array code.

``ember.compile(fn)`` (or ``@ember.compile``, with or without arguments) returns a callable
that, on its first call with a given kind of arguments, runs ``fn`` once for real under
``ember.export``'s capture, then generates one Python function over arrays for the graph
(``_codegen``): no Tensor objects or autograd nodes per step for the ops with a lowering
(``_lowerings``), buffers allocated once and written with ``out=``, elementwise ops written in
place into a buffer that nothing else reads. A training step (forward, ``loss.backward()``,
``optimizer.step()``) is captured whole: the backward becomes the VJP lowerings of the
recorded forward, the optimizer's ``step``/``zero_grad`` run as opaque calls.

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

What it cannot replay makes the entry run eagerly with a warning naming it (``fullgraph=True``
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
capture cannot see, a random factory outside the graph, an in-place op on the gradient's
path) makes the entry run eagerly; :func:`explain` lists the breaks, a ``UserWarning`` names
the first, and ``fullgraph=True`` raises :class:`GraphBreakError` instead. Ops bound as
plain functions before the capture (``from ember.fft import rfft`` at the top of a file, a
module attribute ``self.act = F.gelu``) are routed to the registry for the capture, as in
``ember.export``.

Python side effects of the function (prints, appends to lists, counters) happen on the
capturing call only, as in ``torch.compile``'s graphs; results are fresh tensors.
"""

from __future__ import annotations

import builtins
import functools
import threading
import warnings

from .._tensor import Tensor
from ..export._capture import _LOCAL as _XLOCAL
from ._capture import GraphBreakError, current_compile, run_opaque
from ._codegen import MISS, Unsupported

__all__ = ["compile", "config", "disable", "reset", "is_compiling", "explain",
           "GraphBreakError", "CompiledFunction"]


class _Config:
    """``torch._dynamo.config``'s knobs that Ember has."""

    cache_size_limit: int = 8
    suppress_errors: bool = False


config = _Config()

_ALL: set = set()  # weak enough: reset() clears the compiled functions' entries
_ALL_LOCK = threading.Lock()
_BACKENDS = ("ember", "inductor", "eager", "aot_eager")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def is_compiling() -> bool:
    """Whether this thread is capturing a compiled function (``torch.compiler.is_compiling``)."""
    return current_compile() is not None


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
        self._lock = threading.Lock()
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
            if _XLOCAL.__dict__.get("capture") is not None:
                return self._fn(*args, **kwargs)
            for run in self._runs:
                out = run(args, kwargs)
                if out is not MISS:
                    return out
            return self._capture(args, kwargs)
        finally:
            self._lock.release()

    # -- capture ------------------------------------------------------------------------------
    def _capture(self, args, kwargs):
        from ._capture import capture_call
        from ._guards import guard_code

        if len(self._entries) >= config.cache_size_limit:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"ember.compile: {getattr(self._fn, '__qualname__', self._fn)} reached "
                    f"config.cache_size_limit ({config.cache_size_limit}) entries; calls that "
                    "match none of them run eagerly (torch._dynamo hit config.cache_size_limit)",
                    UserWarning, stacklevel=3)
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
            warnings.warn(f"ember.compile: graph break in "
                          f"{getattr(self._fn, '__qualname__', self._fn)}: {reason}; this "
                          "entry runs eagerly (ember._compile.explain lists the breaks)",
                          UserWarning, stacklevel=3)
        self._entries.append(_Entry(run, source, breaks, source is None, gen, reason))
        self._runs.append(run)
        return captured.result


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
    generated source (``torch._dynamo.explain``'s counts, in a dict)."""
    compiled = getattr(fn, "_compiled", fn)
    if not isinstance(compiled, CompiledFunction):
        raise TypeError("explain() takes what ember.compile returned")
    entries = []
    for e in compiled._entries:
        entries.append({"graph_breaks": list(e.breaks), "eager": e.eager, "reason": e.reason,
                        "fallback_ops": list(e.gen.fallbacks) if e.gen else [],
                        "grad_fallback_ops": list(e.gen.grad_fallbacks) if e.gen else [],
                        "node_vjp_ops": list(e.gen.node_vjps) if e.gen else [],
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
    :class:`GraphBreakError` on a graph break instead of running that entry eagerly;
    ``dynamic`` (None/False/True) is accepted, and shapes are always specialised (one entry
    per set of shapes, up to ``config.cache_size_limit``); ``backend`` is ``"ember"`` (also
    ``"inductor"``: the array lowerings) or ``"eager"``/``"aot_eager"`` (the captured graph
    replayed op by op); ``mode`` and ``options`` are accepted and change nothing;
    ``disable=True`` returns ``model`` itself. On a CUDA device, chains of elementwise ops run as
    one generated CuPy kernel each (see the module's documentation)."""
    if backend not in _BACKENDS and not callable(backend):
        raise ValueError(f"ember.compile: unknown backend {backend!r}; available: "
                         f"{', '.join(_BACKENDS)}")
    if callable(backend):
        raise NotImplementedError("ember.compile: custom backend callables are not supported;"
                                  f" use one of {', '.join(_BACKENDS)}")
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
            compiled = CompiledFunction(m.__call__, fullgraph=fullgraph, backend=backend)
            cls = _optimized_module_class(m)
            return compiled if cls is None else cls(m, compiled)
        if not callable(m):
            raise RuntimeError("ember.compile expects a callable (a function or a Module), "
                               f"got {type(m).__name__}")
        return CompiledFunction(m, fullgraph=fullgraph, backend=backend)

    if model is None:
        return wrap
    return wrap(model)
