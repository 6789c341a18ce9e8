"""The rest of ``torch.autograd.graph``'s public names, re-exported by ``ember.autograd.graph``:
``GradientEdge`` / ``get_gradient_edge`` (``autograd.grad`` and ``backward`` take edges as
inputs and outputs), ``increment_version``, ``register_multi_grad_hook`` and
``allow_mutation_on_saved_tensors``.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .. import overrides as _overrides
from .._tensor import Tensor, _make
from . import graph as _graph


class GradientEdge(NamedTuple):
    """One edge of the backward graph: the node that receives a tensor's gradient and which
    of its inputs it is (``edge = autograd.graph.get_gradient_edge(tensor)``).
    ``autograd.grad(loss, edge)`` gives the gradient that flows along it, the same as
    ``autograd.grad(loss, tensor)``, without keeping the tensor."""

    node: Any
    output_nr: int
    # PyTorch's token keeps a C++ graph alive; Ember's nodes are Python objects the edge holds
    ownership_token: Any = None


def _node_of(t):
    """The node a tensor's gradient goes to: its ``grad_fn``, or a leaf's AccumulateGrad."""
    if isinstance(t, GradientEdge):
        return t.node
    if t.grad_fn is not None:
        return t.grad_fn
    return _graph.accumulate_node(t)


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The gradient edge of ``tensor``: ``autograd.grad(loss, get_gradient_edge(x))`` equals
    ``autograd.grad(loss, x)``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(_node_of(tensor), tensor.output_nr)


def as_edge(x):
    """``x`` (a Tensor or a GradientEdge) as the engine's ``(node, output_nr)`` edge."""
    if isinstance(x, GradientEdge):
        return (x.node, x.output_nr)
    return _graph.edge(x)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place op does: for code that writes a tensor's memory behind autograd's back (through
    ``.numpy()`` or ``data_ptr``), so that a backward that saved it reports the change."""
    if isinstance(tensor, Tensor):
        tensor = (tensor,)
    elif not isinstance(tensor, Iterable) or isinstance(tensor, (str, bytes)):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensor:
        if not isinstance(t, Tensor):
            raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
        t._bump_version()


class _MultiHandle(_graph.RemovableHandle):
    """The handle of ``register_multi_grad_hook``: removes the hook of every tensor."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state) -> None:
        self.handles = state


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *,
                             mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward with the gradients of several tensors.

    ``mode="all"``: after the gradient of every tensor of ``tensors`` that this backward
    computes has arrived, ``fn(grads)`` gets them in order, ``None`` for the tensors the
    backward does not reach (or that its ``inputs`` leave out). ``mode="any"``: ``fn(grad)``
    with the first of them to arrive. Returns a handle whose ``remove()`` takes the hook off.
    """
    from .engine import current_graph_task_id, will_engine_execute_node

    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)

    if mode == "all":
        nodes = [_node_of(t) for t in tensors]
        counts: dict = {}
        buffers: dict = {}
        expected: dict = {}

        def inner(idx: int):
            def hook(grad):
                task = current_graph_task_id()
                if task == -1:
                    raise AssertionError("expected this hook to be called inside a backward call")
                with lock:
                    seen = counts.get(task, 0)
                    counts[task] = seen + 1
                    if not seen:  # the first gradient: how many this backward will bring
                        expected[task] = sum(map(will_engine_execute_node, nodes))
                        buffers[task] = [None] * len(tensors)
                    buffers[task][idx] = grad
                    done = seen + 1 == expected[task]
                    if done:
                        grads = buffers.pop(task)
                        del counts[task], expected[task]
                if done:
                    fn(grads)

            return hook

        handles = tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors))
    else:
        ran: dict = {}

        def first(grad):
            task = current_graph_task_id()
            if task == -1:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                prev, ran[task] = ran.get(task, False), True
            if not prev:
                fn(grad)

        handles = tuple(t.register_hook(first) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


# -- allow_mutation_on_saved_tensors -------------------------------------------------------------

class _Handle:
    """What the pack hook saves in place of a tensor; it finds the tensor's original (or, once
    the tensor was written in place, the copy taken just before)."""

    __slots__ = ("__weakref__",)


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block: the tensors saved for
    backward (by handle), and the copies taken of those written in place since."""

    def __init__(self) -> None:
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()

    def pack(self, t: Tensor) -> _Handle:
        handle = _Handle()
        self.original[handle] = t
        return handle

    def unpack(self, handle: _Handle) -> Tensor:
        if not _MUTATION[0]:
            raise AssertionError("Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' context in which the graph "
                                 "was originally recorded.")
        res = self.cloned.get(handle)
        if res is None:
            res = self.original.get(handle)
            if res is None:
                raise AssertionError("Trying to backward outside of the "
                                     "'allow_mutation_on_saved_tensors' context in which the "
                                     "graph was originally recorded.")
        return res

    def before_write(self, target) -> None:
        """Copy every saved tensor whose memory ``target`` (about to be written) shares."""
        arr = getattr(target, "_data", None)
        if arr is None:
            return
        root = _root(arr)
        for handle, t in list(self.original.items()):
            if handle not in self.cloned and _root(t._data) is root:
                self.cloned[handle] = _copy_of(t)
                del self.original[handle]


def _root(arr):
    """The array that owns ``arr``'s memory (views lead back to it through ``.base``)."""
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _copy_of(t: Tensor) -> Tensor:
    """A copy of ``t``'s values with ``t``'s autograd identity: the unpacked saved tensor is
    matched to the node by ``requires_grad``/``grad_fn``/``output_nr`` (graph._unpack_slot)."""
    copy = _make(t._data.copy(), t._device)
    if t.requires_grad:
        copy.requires_grad = True
        if t.grad_fn is not None:
            copy.grad_fn = t.grad_fn
            if t._nr:
                copy._nr = t._nr
        else:
            copy._accum = _graph.accumulate_node(t)
    return copy


#: the in-place dunders (``a += b``, ``a[i] = v``) besides the ``name_`` methods
_INPLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
    "__irshift__"})


def _written(func, args, kwargs):
    """The tensors a call writes: the ``out=`` tensors, the ``inplace=True`` input, and the
    first argument of an in-place method (``x.sin_()``, ``x += 1``, ``x[i] = v``)."""
    out = []
    o = kwargs.get("out") if kwargs else None
    if o is not None:
        out.extend(o if isinstance(o, (tuple, list)) else (o,))
    name = getattr(func, "__name__", "")
    if args and (name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))
                 or (kwargs and kwargs.get("inplace") is True)):
        first = args[0]
        out.extend(first if isinstance(first, (tuple, list)) else (first,))
    return [t for t in out if isinstance(t, Tensor)]


class _CloneArgBeforeMutateMode(_overrides.TorchFunctionMode):
    """Sees every call (``ember.overrides``): before one writes a tensor, the saved tensors
    sharing its memory are copied."""

    _ember_reads_types = False

    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        self.ctx = ctx

    def __torch_function__(self, func, types, args=(), kwargs=None):
        for t in _written(func, args, kwargs):
            self.ctx.before_write(t)
        return func(*args, **(kwargs or {}))


_MUTATION = [False]  # an allow_mutation_on_saved_tensors block is open (they do not nest)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Inside, a tensor saved for backward may be written in place: the write first copies
    it, and the backward reads the copy (PyTorch raises at backward otherwise). Run the
    forward and the backward inside the same block. Yields the block's state; it is cleared
    at exit.

    Writes are seen through Ember's call dispatch (``x.sin_()``, ``x += 1``, ``x[i] = v``,
    ``out=``, ``inplace=True``); code that writes a tensor's array directly (``x.numpy()[:]
    = ...``) is not seen, as it is not by PyTorch's dispatch."""
    if _MUTATION[0]:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()
    _MUTATION[0] = True
    try:
        with _graph.saved_tensors_hooks(ctx.pack, ctx.unpack), _CloneArgBeforeMutateMode(ctx):
            yield ctx
    finally:
        ctx.clear()
        _MUTATION[0] = False
