"""What the profiler records, and the legacy ``torch.autograd.profiler`` API.

Ops are timed at the op registry, not in kernels: while a profiler records, a
``TorchFunctionMode`` on its thread sees every call of an ember function or Tensor method (the
registry's public API, ``nn.functional`` included) and records one event per call; the calls
an op makes inside are not seen, so an op's time includes its kernels. Backward nodes are timed
by the autograd engine's profiler hook and carry the forward op that made them (its
``sequence_nr``). Nothing is wrapped, and the engine pays one check per ``backward()``, when
no profiler is active. A profiler records the thread that started it.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import time

from ..ops.registry import op_key
from ..overrides import TorchFunctionMode
from .profiler_util import EventList, FunctionEvent

__all__ = ["profile", "record_function", "EventList", "FunctionEvent"]

_IDS = itertools.count(1)


def _op_name(func) -> str:
    """PyTorch's ``aten::`` name for the op a public callable runs; a custom op
    (``ember.library``) keeps its own namespace (``mylib::numpy_sin``)."""
    key = op_key(func)
    return key if "::" in key else f"aten::{key}"


def _shapes(args, kwargs) -> list:
    from .._tensor import Tensor

    def one(a):
        if isinstance(a, Tensor):
            return list(a.shape)
        if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            return [list(x.shape) for x in a]
        return []

    return [one(a) for a in args] + [one(v) for v in kwargs.values()]


def _nbytes(result) -> int:
    from .._tensor import Tensor

    if isinstance(result, Tensor):
        return int(result._data.nbytes)
    if isinstance(result, (list, tuple)):
        return sum(_nbytes(r) for r in result)
    return 0


def _user_stack(limit: int = 8) -> list[str]:
    """The caller's frames outside ember, innermost first (``file(line): function``)."""
    frames = []
    f = sys._getframe(2)
    while f is not None and len(frames) < limit:
        path = f.f_code.co_filename
        if "/ember/" not in path.replace("\\", "/"):
            frames.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


def _first_grad_fn(result):
    from .._tensor import Tensor

    if isinstance(result, Tensor):
        return result.grad_fn
    if isinstance(result, (list, tuple)):
        for r in result:
            node = _first_grad_fn(r)
            if node is not None:
                return node
    return None


class _Recorder(TorchFunctionMode):
    """Records this thread's op calls, ranges and backward nodes as ``FunctionEvent``s."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[FunctionEvent] = []
        self.open: list[FunctionEvent] = []
        self.forward_ops: dict[int, FunctionEvent] = {}  # node seq -> the op that made it
        self.thread = threading.get_ident()
        self.recording = True
        self._entered = False

    # -- time -----------------------------------------------------------------------------------
    @staticmethod
    def now_us() -> float:
        return time.perf_counter_ns() / 1000.0

    def begin(self, name: str, kind: str, shapes=None, stack=None, seq: int = -1,
              user: bool = False) -> FunctionEvent:
        evt = FunctionEvent(next(_IDS), name, self.thread, self.now_us(), input_shapes=shapes,
                            stack=stack, sequence_nr=seq, is_user_annotation=user, kind=kind)
        self.open.append(evt)
        return evt

    def end(self, evt: FunctionEvent) -> None:
        open_ = self.open
        if evt not in open_:  # closed already (by an enclosing range that ended first)
            return
        while open_[-1] is not evt:  # a range left open inside: close it here
            self.end(open_[-1])
        evt.end_us = self.now_us()
        open_.pop()
        if open_:
            evt.cpu_parent = open_[-1]
            open_[-1].cpu_children.append(evt)
        if self.recording:
            self.events.append(evt)

    # -- what is recorded --------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        evt = self.begin(_op_name(func), "cpu_op",
                         _shapes(args, kwargs) if self.record_shapes else None,
                         _user_stack() if self.with_stack else None)
        try:
            result = func(*args, **kwargs)
        finally:
            self.end(evt)
        if self.profile_memory:
            evt.cpu_memory_usage = _nbytes(result)
        node = _first_grad_fn(result)
        if node is not None:
            seq = getattr(node, "seq", 0)
            evt.sequence_nr = seq
            self.forward_ops[seq] = evt
        return result

    def backward_node(self, node, grad):
        evt = self.begin(node.name() if hasattr(node, "name") else type(node).__name__,
                         "cpu_op", seq=node.seq)
        evt.forward_event = self.forward_ops.get(node.seq)
        try:
            out = node.backward(grad)
        finally:
            self.end(evt)
        out = out if out.__class__ is tuple else (out,)
        if self.profile_memory:
            evt.cpu_memory_usage = _nbytes(out)
        return out

    def accumulate_leaf(self, accumulate, node, grad, create_graph, taken) -> None:
        evt = self.begin("torch::autograd::AccumulateGrad", "cpu_op")
        try:
            accumulate(node, grad, create_graph, taken)
        finally:
            self.end(evt)

    # -- on and off -------------------------------------------------------------------------
    def start(self) -> None:
        from . import engine

        if self._entered:
            return
        self.__enter__()
        self._entered = True
        engine.PROFILED.recorder = self
        _ACTIVE[0] += 1
        engine.PROFILING[0] = True

    def stop(self) -> None:
        from . import engine

        if not self._entered:
            return
        if threading.get_ident() != self.thread:
            raise RuntimeError("a profiler must be stopped on the thread that started it")
        while self.open:
            self.end(self.open[-1])
        self.__exit__(None, None, None)
        self._entered = False
        if getattr(engine.PROFILED, "recorder", None) is self:
            engine.PROFILED.recorder = None
        _ACTIVE[0] -= 1
        engine.PROFILING[0] = _ACTIVE[0] > 0

    def take(self) -> EventList:
        events = EventList(sorted(self.events, key=lambda e: e.start_us),
                           profile_memory=self.profile_memory)
        self.events = []
        return events


_ACTIVE = [0]  # recorders running, all threads


def _current() -> _Recorder | None:
    if not _ACTIVE[0]:
        return None
    from . import engine

    return getattr(engine.PROFILED, "recorder", None)


class record_function:
    """A named range in the profile (``with record_function("data"): ...`` or as a
    decorator): its time, and the ops run inside it as its children. Costs nothing when no
    profiler is recording."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._event: FunctionEvent | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self):
        rec = _current()
        if rec is not None:
            self._recorder = rec
            self._event = rec.begin(self.name, "user_annotation", user=True)
        return self

    def __exit__(self, *exc) -> bool:
        if self._event is not None and self._recorder is not None:
            self._recorder.end(self._event)
            self._event = self._recorder = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped


class profile:
    """The legacy profiler (``torch.autograd.profiler.profile``): ``with profile() as prof:``
    records the block, then ``prof.key_averages().table()``, ``prof.function_events``,
    ``prof.export_chrome_trace(path)``."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.function_events: EventList | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self):
        if self.enabled:
            self._recorder = _Recorder(self.record_shapes, self.profile_memory,
                                       self.with_stack)
            self._recorder.start()
        return self

    def __exit__(self, *exc) -> bool:
        if self._recorder is not None:
            self._recorder.stop()
            self.function_events = self._recorder.take()
            self._recorder = None
        return False

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit: int = 100, **kwargs) -> str:
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()
