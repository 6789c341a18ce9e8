"""``torch._dynamo``'s names that programs, tutorials and libraries call, over
``ember.compile`` (``ember._compile``): ``reset``, ``explain``, ``config``, ``disable``,
``is_compiling``, ``optimize``, ``register_backend``, ``list_backends``, ``lookup_backend``,
and the compiler hints (``allow_in_graph``, ``assume_constant_result``, ``graph_break``,
``mark_dynamic``, ``mark_static``, ...: what each means for Ember's capture is in
``ember._compile.hints``). ``ember._dynamo._trace_wrapped_higher_order_op`` holds
``TransformGetItemToIndex`` (HuggingFace ``transformers`` imports it).

Graph breaks are silent, as in PyTorch; ``config.warn_on_graph_break = True`` (Ember's
stand-in for ``TORCH_LOGS="graph_breaks"``, which also sets it when Ember is imported) makes
each a ``UserWarning``. ``optimize(backend)`` is ``ember.compile`` as a decorator; a backend
is a name from ``list_backends()`` or a callable ``backend(gm, example_inputs)`` (see
``ember.compile``), and ``register_backend`` names one.

``explain(fn)(*args)`` compiles ``fn``, runs it once on ``args`` and reports what the capture
made of it, in PyTorch's ``ExplainOutput`` fields. Ember's capture is not TorchDynamo's: an
entry with a graph break runs eagerly as a whole (PyTorch splits it into graphs around the
break), so such an entry counts its breaks and no graph; ``graphs`` are Ember's captured
graphs (``ember.export`` graphs: ``print(g)`` shows their ops), and the guards are the
conditions the generated entry checks before it replays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from .._compile import (
    GraphBreakError,
    config,
    disable,
    is_compiling,
    list_backends,
    lookup_backend,
    register_backend,
    reset,
)
from .._compile.hints import (
    allow_in_graph,
    assume_constant_result,
    disallow_in_graph,
    forbid_in_graph,
    graph_break,
    mark_dynamic,
    mark_static,
    mark_static_address,
    maybe_mark_dynamic,
    nonstrict_trace,
    set_stance,
    substitute_in_graph,
)
from . import eval_frame  # torch._dynamo.eval_frame.OptimizedModule, without an import
from .eval_frame import OptimizedModule  # ``from torch._dynamo import OptimizedModule``

__all__ = ["reset", "explain", "config", "disable", "is_compiling", "ExplainOutput",
           "BreakReason", "GraphBreakError", "optimize", "register_backend", "list_backends",
           "lookup_backend", "allow_in_graph", "assume_constant_result", "disallow_in_graph",
           "forbid_in_graph", "graph_break", "mark_dynamic", "mark_static",
           "mark_static_address", "maybe_mark_dynamic", "nonstrict_trace", "set_stance",
           "substitute_in_graph", "is_dynamo_supported", "is_inductor_supported",
           "OptimizedModule"]


def optimize(backend="inductor", *, nopython: bool = False, disable: bool = False,
             dynamic=None):
    """``torch._dynamo.optimize(backend)``: a decorator that compiles a function or module
    with ``backend`` (a name or a callable ``backend(gm, example_inputs)``), as
    ``ember.compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic)``;
    ``disable=True`` gives a decorator that returns its argument unchanged::

        @ember._dynamo.optimize(my_compiler)
        def toy_example(a, b): ...
    """
    from .. import _compile

    lookup_backend(backend)  # an unknown name is an error here, as in PyTorch

    def decorator(fn):
        return _compile.compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic,
                                disable=disable)

    return decorator


def is_dynamo_supported() -> bool:
    """Whether ``ember.compile`` can run here (``torch._dynamo.is_dynamo_supported``): it
    can wherever Ember runs (its capture needs no bytecode hooks)."""
    return True


def is_inductor_supported() -> bool:
    """Whether the ``"inductor"`` backend name works (``torch._dynamo.is_inductor_supported``):
    Ember's compile serves it with its own lowering, on every device."""
    return True


@dataclass
class BreakReason:
    """One graph break: ``reason`` as the capture gave it; ``user_stack`` (PyTorch's frames;
    Ember's reason names the line itself where it has one)."""

    reason: str
    user_stack: list = field(default_factory=list)


@dataclass
class ExplainOutput:
    """What ``explain`` found (``torch._dynamo.backends.debugging.ExplainOutput``)."""

    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list
    out_guards: list
    compile_times: str = ""

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, br in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {br.reason}", "    User Stack:"]
            lines += [f"      {frame}" for frame in br.user_stack]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {op}" for op in ops]
        lines.append("Out Guards:")
        for i, guard in enumerate(self.out_guards, 1):
            lines += [f"  Guard {i}:", f"    Code List: {guard}"]
        if self.compile_times:
            lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"


def _guard(line: str) -> str:
    """A generated guard line (``if <check>: return MISS``) as the condition it guards."""
    cond = line.strip()[len("if "):-len(": return MISS")]
    return f"not ({cond})"


def explain(f, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)``: compile ``fn``, run it on the arguments and return
    an :class:`ExplainOutput` (``torch._dynamo.explain``; the older ``explain(fn, *args)``
    form, deprecated in PyTorch, runs at once). The run reports no graph break, even with
    ``config.warn_on_graph_break``: the output lists them."""
    from .. import _compile

    def inner(*args, **kwargs):
        compiled = _compile.compile(f)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="ember.compile: graph break")
            compiled(*args, **kwargs)
        info = _compile.explain(compiled)
        entries = getattr(compiled, "_compiled", compiled)._entries
        graphs = [e.gen.graph for e in entries if not e.eager and e.gen is not None]
        ops = [[n.op for n in g.nodes] for g in graphs]
        return ExplainOutput(
            graphs=graphs, graph_count=info["graph_count"],
            graph_break_count=info["graph_break_count"],
            break_reasons=[BreakReason(str(r)) for e in info["entries"]
                           for r in e["graph_breaks"]],
            op_count=sum(len(o) for o in ops), ops_per_graph=ops,
            out_guards=[_guard(line) for e in entries if e.source
                        for line in e.source.splitlines() if line.endswith(": return MISS")])

    if extra_args or extra_kwargs:
        warnings.warn("explain(f, *args, **kwargs) is deprecated, use explain(f)(*args, "
                      "**kwargs) instead.  If you don't migrate, we may break your explain "
                      "call in the future if your user defined kwargs conflict with future "
                      "kwargs added to explain(f).", FutureWarning, stacklevel=2)
        return inner(*extra_args, **extra_kwargs)
    return inner
