"""The compiler hints of ``torch.compiler`` and ``torch._dynamo``, on Ember's capture.

Libraries decorate their code with these at import time (HuggingFace ``transformers`` marks
helpers ``@torch.compiler.allow_in_graph`` and ``@torch._dynamo.assume_constant_result``)
and mark tensors before compiling, so each must exist and keep eager behaviour exact. What
each means for ``ember.compile``, whose capture records the registry ops a function runs
(no bytecode analysis):

* ``allow_in_graph(fn)``: TorchDynamo puts ``fn`` into its graph as one call instead of
  tracing into it. Ember's capture already records every op ``fn`` runs, so ``fn`` is
  returned unchanged (as PyTorch returns it), marked ``_ember_allow_in_graph``.
* ``assume_constant_result(fn)``: a promise that ``fn``'s result never changes; TorchDynamo
  bakes the first result into the graph. Ember replays ``fn``'s recorded ops, which give
  that same result when the promise holds; ``fn`` is marked as PyTorch marks it.
* ``disallow_in_graph(fn)``: a call of ``fn`` during a capture is a graph break (the entry
  runs eagerly, ``fullgraph=True`` raises); ``graph_break()`` is one where it is called.
* ``forbid_in_graph(fn)``: calling ``fn`` during a capture raises ``GraphBreakError``
  (``torch._dynamo.exc.Unsupported`` in PyTorch). ``mark_dynamic``, ``maybe_mark_dynamic``
  and ``mark_static_address`` are forbidden in a capture, as in PyTorch.
* ``substitute_in_graph(original)``: registers a traceable stand-in for a C function;
  Ember's capture runs the original (its tensor ops are recorded either way), so the
  decorated function is returned as it is, with the original recorded on it.
* ``mark_dynamic``/``maybe_mark_dynamic``/``mark_static``/``mark_static_address`` record
  PyTorch's attributes on the tensor (``_dynamo_dynamic_indices``, ...). Ember's compile
  specialises every shape (one entry per shape set), so they change no result.
* ``set_stance``: ``"default"``, ``"force_eager"`` (compiled functions run as written),
  ``"eager_on_recompile"`` (an existing entry replays; a call that needs a new one runs
  eagerly), ``"fail_on_recompile"`` (such a call raises), ``"eager_then_compile"`` and
  ``"aot_eager_then_compile"`` (a compiled function's first call runs eagerly, later calls
  compile); a function, context manager or decorator.
"""

from __future__ import annotations

import functools
import inspect
import threading

from ._capture import GraphBreakError, current_compile

__all__ = ["allow_in_graph", "assume_constant_result", "disallow_in_graph", "forbid_in_graph",
           "graph_break", "substitute_in_graph", "nonstrict_trace", "mark_dynamic",
           "maybe_mark_dynamic", "mark_static", "mark_static_address", "set_stance",
           "current_stance", "STANCES"]


def _callables(fn, one, name: str):
    if isinstance(fn, (list, tuple)):
        return [one(f) for f in fn]
    if not callable(fn):
        raise AssertionError(f"{name} expects a callable")
    return None


def allow_in_graph(fn):
    """``fn`` itself (a list or tuple: each), marked: Ember's capture records its ops."""
    many = _callables(fn, allow_in_graph, "allow_in_graph")
    if many is not None:
        return many
    try:
        fn._ember_allow_in_graph = True
    except (AttributeError, TypeError):  # a builtin: nothing to mark
        pass
    return fn


def assume_constant_result(fn):
    """``fn`` itself, marked as PyTorch marks it (``_dynamo_marked_constant``)."""
    fn._dynamo_marked_constant = True
    return fn


def nonstrict_trace(traceable_fn):
    """``traceable_fn`` itself: Ember's capture records the ops it runs (PyTorch traces it
    non-strictly, which records the same ops)."""
    if not callable(traceable_fn):
        raise AssertionError("nonstrict_trace expects a callable")
    traceable_fn._ember_nonstrict_trace = True
    return traceable_fn


def disallow_in_graph(fn):
    """A wrapper of ``fn`` whose calls during a capture are graph breaks."""
    many = _callables(fn, disallow_in_graph, "disallow_in_graph")
    if many is not None:
        return many
    name = getattr(fn, "__qualname__", repr(fn))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        cap = current_compile()
        if cap is not None:
            cap.graph_break(f"call to {name}, marked disallow_in_graph")
        return fn(*args, **kwargs)

    return wrapper


def graph_break(msg: str = "") -> None:
    """A graph break here, when called during a capture (``torch._dynamo.graph_break``)."""
    cap = current_compile()
    if cap is not None:
        cap.graph_break("torch._dynamo.graph_break()" + (f": {msg}" if msg else ""))


def _forbidden(name: str) -> None:
    if current_compile() is not None:
        raise GraphBreakError(f"{name} is forbidden in a compiled region (forbid_in_graph): "
                              "call it before compiling")


def forbid_in_graph(fn):
    """``fn``, which raises :class:`GraphBreakError` when called during a capture."""
    many = _callables(fn, forbid_in_graph, "forbid_in_graph")
    if many is not None:
        return many
    name = getattr(fn, "__qualname__", repr(fn))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _forbidden(name)
        return fn(*args, **kwargs)

    wrapper._dynamo_forbidden = True
    return wrapper


def substitute_in_graph(original_fn, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False, is_embedded_type: bool = False):
    """A decorator returning its function unchanged, with ``original_fn`` recorded on it
    (``__torch_dynamo_original__``, PyTorch's attribute); ``original_fn`` must be a
    function (a class with ``is_embedded_type``), as in PyTorch."""
    if is_embedded_type:
        if not inspect.isclass(original_fn):
            raise TypeError(f"substitute_in_graph expects a class but got "
                            f"{type(original_fn)!r}")
    elif not callable(original_fn) or inspect.isclass(original_fn):
        raise TypeError(f"substitute_in_graph expects a function but got "
                        f"{type(original_fn)!r}")

    def wrapper(traceable_fn):
        if not callable(traceable_fn) or inspect.isclass(traceable_fn):
            raise TypeError(f"@substitute_in_graph(...) expects a function but got "
                            f"{type(traceable_fn)!r}")
        if not skip_signature_check and not is_embedded_type:
            _check_signatures(original_fn, traceable_fn)
        traceable_fn.__torch_dynamo_original__ = original_fn
        traceable_fn.__torch_dynamo_can_constant_fold_through__ = can_constant_fold_through
        return traceable_fn

    return wrapper


def _check_signatures(original_fn, traceable_fn) -> None:
    """PyTorch's check that the substitute takes the original's parameters (where the
    original has a readable signature: many C functions have none)."""
    try:
        original = inspect.signature(original_fn)
    except (TypeError, ValueError):
        return
    traceable = inspect.signature(traceable_fn)

    def shape(sig):
        return [(p.name if p.kind not in (p.POSITIONAL_ONLY,) else None, p.kind)
                for p in sig.parameters.values()]

    if shape(original) != shape(traceable):
        raise TypeError(f"Signature mismatch between {original_fn} and {traceable_fn}: "
                        f"{original} != {traceable}")


# -- marking tensors -----------------------------------------------------------------------
def _indices(index, fn, *args, **kwargs) -> bool:
    if isinstance(index, int):
        return False
    if not isinstance(index, (list, tuple)):
        raise AssertionError(f"Expected index to be int, list, or tuple, got {type(index)}")
    for i in index:
        fn(*args[:1], i, *args[1:], **kwargs)
    return True


class _DimRange:
    """One marked dim's range (``torch._dynamo.decorators._DimRange``)."""

    __slots__ = ("dim", "min", "max")

    def __init__(self, dim: int, min, max) -> None:
        self.dim, self.min, self.max = dim, min, max

    def __eq__(self, other) -> bool:
        return (isinstance(other, _DimRange)
                and (self.dim, self.min, self.max) == (other.dim, other.min, other.max))

    def __hash__(self) -> int:
        return hash((self.dim, self.min, self.max))

    def __repr__(self) -> str:
        return f"_DimRange(dim={self.dim}, min={self.min}, max={self.max})"


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None,
                 specialize_on=None) -> None:
    """Record dim ``index`` of ``t`` as dynamic (PyTorch's attributes); Ember's compile
    specialises each shape regardless."""
    _forbidden("mark_dynamic")
    if _indices(index, mark_dynamic, t, min=min, max=max, specialize_on=specialize_on):
        return
    if not hasattr(t, "_dynamo_dynamic_indices"):
        t._dynamo_dynamic_indices = set()
        t._dynamo_dynamic_range = set()
        t._dynamo_hint_overrides = {}
    if not hasattr(t, "_specialize_on"):
        t._specialize_on = {}
    if hint_override:
        t._dynamo_hint_overrides[index] = hint_override
    t._dynamo_dynamic_indices.add(index)
    t._dynamo_dynamic_range.add(_DimRange(index, min, max))
    t._has_dynamo_dim_marking = True
    t._specialize_on[index] = specialize_on if specialize_on is not None else []


def maybe_mark_dynamic(t, index) -> None:
    """Record dim ``index`` of ``t`` as maybe dynamic (``_dynamo_weak_dynamic_indices``)."""
    _forbidden("maybe_mark_dynamic")
    if _indices(index, maybe_mark_dynamic, t):
        return
    if not hasattr(t, "_dynamo_weak_dynamic_indices"):
        t._dynamo_weak_dynamic_indices = set()
    t._dynamo_weak_dynamic_indices.add(index)
    t._has_dynamo_dim_marking = True


def mark_static(t, index=None):
    """Record dims of ``t`` as static (every dim without ``index``), or mark an ``nn.Module``
    class static (``_dynamo_marked_static``); inside a capture, nothing to do (Ember's
    shapes are static there)."""
    from .._tensor import Tensor

    if current_compile() is not None:
        return None
    if not isinstance(t, Tensor) and inspect.isclass(t):
        t._dynamo_marked_static = True
        return t
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static expects a tensor/nn.Module class but received {type(t)}")
    if index is None:
        for i in range(t.dim()):
            mark_static(t, i)
    elif not _indices(index, mark_static, t):
        if not hasattr(t, "_dynamo_static_indices"):
            t._dynamo_static_indices = set()
        t._dynamo_static_indices.add(index)
        t._has_dynamo_dim_marking = True
    return None


def mark_static_address(t, guard: bool = False) -> None:
    """Record that ``t``'s memory is the same on every call (``_dynamo_static_input_type``):
    a hint for CUDA graphs; Ember's compile reads its inputs' arrays on each call anyway."""
    from .._tensor import Tensor

    _forbidden("mark_static_address")
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t)}")
    t._dynamo_static_input_type = "guarded" if guard else "unguarded"


# -- stance --------------------------------------------------------------------------------
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")

_STANCE = ["default"]  # process-wide, as PyTorch's
_STANCE_LOCK = threading.Lock()


def current_stance() -> str:
    """The stance ``set_stance`` set (``"default"`` at first)."""
    return _STANCE[0]


def _set(stance: str) -> str:
    if current_compile() is not None:
        raise RuntimeError("attempted to set_stance in a torch.compile region")
    with _STANCE_LOCK:
        prior, _STANCE[0] = _STANCE[0], stance
    return prior


class set_stance:
    """Set the compiler's stance (``torch.compiler.set_stance``): a call sets it, ``with``
    sets it for the block, and as a decorator for the decorated function's calls.

    ``force_backend`` (only with ``"default"``) is accepted and must name a known backend;
    Ember's compile uses its own lowering for every name."""

    _dynamo_forbidden = True

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend=None) -> None:
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        if stance not in STANCES:
            raise RuntimeError(f"invalid torch.compile stance '{stance}'")
        if force_backend is not None:
            from . import lookup_backend

            lookup_backend(force_backend)
        self.stance = stance
        self.force_backend = force_backend
        self.skip_guard_eval_unsafe = skip_guard_eval_unsafe
        self.prev = _set(stance)

    def __call__(self, fn):
        _set(self.prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.stance, force_backend=self.force_backend):
                return fn(*args, **kwargs)

        wrapper._dynamo_forbidden = True
        return wrapper

    def __enter__(self) -> None:
        _set(self.stance)

    def __exit__(self, *exc) -> None:
        _set(self.prev)
