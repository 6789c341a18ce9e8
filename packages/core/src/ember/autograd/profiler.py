"""What the profiler records, and the ``torch.autograd.profiler`` API.

Ops are timed at the op registry, not in kernels: while a profiler records, a
``TorchFunctionMode`` on its thread sees every call of an ember function or Tensor method (the
registry's public API, ``nn.functional`` included) and records one event per call; the calls
an op makes inside are not seen, so an op's time includes its kernels. Backward nodes are timed
by the autograd engine's profiler hook and carry the forward op that made them (its
``sequence_nr``). Nothing is wrapped, and the engine pays one check per ``backward()``, when
no profiler is active. A profiler records the thread that started it.

The same recorder serves ``profile`` (and ``ember.profiler.profile``), the legacy
``profiler_legacy.profile`` and ``emit_nvtx``, which turns each event into an NVTX range.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import time
import warnings
import weakref
from collections import defaultdict

from ..ops.registry import op_key
from ..overrides import TorchFunctionMode
from .profiler_util import EventList, FunctionEvent, MemRecordsAcc

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "load_nvprof",
           "EnforceUnique", "parse_nvprof_trace", "KinetoStepTracker", "EventList",
           "FunctionEvent", "MemRecordsAcc"]

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


def _flat_shapes(args, kwargs) -> list:
    """``_shapes`` with a tensor list's shapes spliced in, one entry per tensor (NVTX's
    ``sizes``, as PyTorch flattens them there)."""
    flat = []
    for entry in _shapes(args, kwargs):
        if entry and isinstance(entry[0], list):
            flat.extend(entry)
        else:
            flat.append(entry)
    return flat


def _grad_shapes(grad) -> list | None:
    """A backward node's input shapes: those of the gradients it receives."""
    return _shapes(grad if grad.__class__ is tuple else (grad,), {})


def _nbytes(result) -> int:
    from .._tensor import Tensor

    if isinstance(result, Tensor):
        return int(result._data.nbytes)
    if isinstance(result, (list, tuple)):
        return sum(_nbytes(r) for r in result)
    return 0


#: the ops whose FLOPs PyTorch's profiler estimates (``with_flops=True``): its kernels' (mm,
#: addmm, bmm, baddbmm, conv2d, mul, add) and Ember's ops that run them in PyTorch
_PRODUCTS = frozenset(("mm", "addmm", "bmm", "baddbmm", "matmul", "__matmul__", "__rmatmul__",
                       "linear", "einsum", "tensordot"))
_ELEMENTWISE = frozenset(("mul", "add", "__mul__", "__rmul__", "__add__", "__radd__"))


def _op_flops(func, args, kwargs, result) -> int:
    """PyTorch's profiler estimate of an op's FLOPs: 2*m*k*n per matrix product (what its
    mm/addmm/bmm/baddbmm kernels under the op count), a conv2d's 2 * output points * weight
    size, and the first input's element count for mul and add; 0 for everything else."""
    from .._tensor import Tensor

    name = getattr(func, "__name__", None)
    if name in _PRODUCTS:
        from ..utils import flop_counter as fc

        forward, _ = fc._LOWERINGS[name](args, kwargs, result)
        kernels = (fc.aten.mm, fc.aten.addmm, fc.aten.bmm, fc.aten.baddbmm)
        return sum(fc.flop_registry[packet](*shapes, out_val=out_shape)
                   for packet, shapes, _, out_shape in forward if packet in kernels)
    if name == "conv2d":
        from ..utils.flop_counter import conv_flop_count

        x, w = args[0], args[1] if len(args) > 1 else kwargs.get("weight")
        if isinstance(result, Tensor) and x.dim() == 4:
            return conv_flop_count(tuple(x.shape), tuple(w.shape), tuple(result.shape))
        return 0
    if name in _ELEMENTWISE:
        first = next((a for a in args if isinstance(a, Tensor)), None)
        return first.numel() if first is not None else 0
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
                 with_stack: bool = False, with_flops: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events: list[FunctionEvent] = []
        self.open: list[FunctionEvent] = []
        self.forward_ops: dict[int, FunctionEvent] = {}  # node seq -> the op that made it
        self.thread = threading.get_ident()
        self.recording = True
        self._entered = False
        self._outer: _Recorder | None = None
        #: the memory blocks the recorded code touches (the profile's memory timeline)
        self.memory = None
        if profile_memory:
            from ..profiler._memory_profiler import MemoryTracker

            self.memory = MemoryTracker(self)

    # -- time -----------------------------------------------------------------------------------
    @staticmethod
    def now_us() -> float:
        return time.perf_counter_ns() / 1000.0

    def begin(self, name: str, kind: str, shapes=None, stack=None, seq: int = -1,
              user: bool = False, scope: int = 0) -> FunctionEvent:
        evt = FunctionEvent(next(_IDS), name, self.thread, self.now_us(), input_shapes=shapes,
                            stack=stack, sequence_nr=seq, is_user_annotation=user, kind=kind,
                            scope=scope)
        self.open.append(evt)
        return evt

    def end(self, evt: FunctionEvent) -> None:
        open_ = self.open
        if evt not in open_:  # closed already (by an enclosing range that ended first)
            return
        while open_[-1] is not evt:  # a range left open inside: close it here
            self.end(open_[-1])
        evt.time_range.end = self.now_us()
        open_.pop()
        if open_:
            evt.cpu_parent = open_[-1]
            open_[-1].cpu_children.append(evt)
        if self.recording:
            self.events.append(evt)

    # -- what is recorded --------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        evt = self.begin_op(func, args, kwargs)
        try:
            result = func(*args, **kwargs)
        finally:
            self.end(evt)
        self.end_op(evt, result)
        if self.memory is not None:
            self.memory.saw_op(args, kwargs, result)
        if self.with_flops:
            evt.flops = _op_flops(func, args, kwargs, result)
        return result

    def begin_op(self, func, args, kwargs) -> FunctionEvent:
        return self.begin(_op_name(func), "cpu_op",
                          _shapes(args, kwargs) if self.record_shapes else None,
                          _user_stack() if self.with_stack else None)

    def end_op(self, evt: FunctionEvent, result) -> None:
        if self.profile_memory:
            evt.cpu_memory_usage = _nbytes(result)
        node = _first_grad_fn(result)
        if node is not None:
            seq = getattr(node, "seq", 0)
            evt.sequence_nr = seq
            self.forward_ops[seq] = evt

    def backward_node(self, node, grad):
        evt = self.begin(node.name() if hasattr(node, "name") else type(node).__name__,
                         "cpu_op", _grad_shapes(grad) if self.record_shapes else None,
                         seq=node.seq, scope=1)
        evt.forward_event = self.forward_ops.get(node.seq)
        try:
            out = node.backward(grad)
        finally:
            self.end(evt)
        out = out if out.__class__ is tuple else (out,)
        if self.profile_memory:
            evt.cpu_memory_usage = _nbytes(out)
            self.memory.saw_backward(node, out)
        return out

    def accumulate_leaf(self, accumulate, node, grad, create_graph, taken) -> None:
        evt = self.begin("torch::autograd::AccumulateGrad", "cpu_op",
                         _grad_shapes(grad) if self.record_shapes else None, scope=1)
        try:
            accumulate(node, grad, create_graph, taken)
        finally:
            self.end(evt)
        if self.memory is not None:
            self.memory.saw_accumulation(node)

    # -- on and off -------------------------------------------------------------------------
    def start(self) -> None:
        from . import engine

        if self._entered:
            return
        self.__enter__()
        self._entered = True
        self._outer = getattr(engine.PROFILED, "recorder", None)  # an enclosing recorder
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
            engine.PROFILED.recorder = self._outer
        _ACTIVE[0] -= 1
        engine.PROFILING[0] = _ACTIVE[0] > 0

    def take(self) -> EventList:
        # by start, the enclosing range first where two start together (PyTorch's order)
        events = EventList(sorted(self.events, key=lambda e: (e.time_range.start,
                                                              -e.time_range.end)),
                           profile_memory=self.profile_memory, with_flops=self.with_flops)
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


# -- profile ----------------------------------------------------------------------------------

_DEVICE_OPTIONS = ("cuda", "xpu", "mtia", "hpu")


def _profiled_device(use_device: str | None, stacklevel: int) -> str | None:
    """``use_device`` as PyTorch checks it: an unknown or absent device warns and is dropped."""
    if use_device is None:
        return None
    if use_device not in _DEVICE_OPTIONS:
        warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=stacklevel)
        return None
    if use_device == "cuda":
        from .. import cuda

        if cuda.is_available():
            return "cuda"
    if use_device == "mtia":
        raise AssertionError("Legacy MTIA profiling is not supported. Requires "
                             "use_kineto=True on MTIA devices.")
    name = use_device.upper()
    warnings.warn(f"{name} is not available, disabling {name} profiling",
                  stacklevel=stacklevel)
    return None


class profile:
    """The autograd profiler (``torch.autograd.profiler.profile``): ``with profile() as prof:``
    records this thread's ops, ``record_function`` ranges and backward nodes in the block;
    then ``prof.key_averages().table()``, ``prof.function_events``,
    ``prof.export_chrome_trace(path)``. Most programs use :mod:`ember.profiler` instead.

    ``use_device="cuda"`` synchronizes the device when the block ends; a GPU op is timed as
    the CPU time of its call (no kernel timeline). ``with_flops`` records shapes, as in
    PyTorch, but counts no FLOPs; ``with_modules``, ``use_kineto``, ``experimental_config``,
    ``acc_events`` and the trace-id and post-processing options are accepted for PyTorch's
    signature and change nothing.
    """

    _UNFINISHED = "<unfinished torch.autograd.profile>"
    #: events are marked ``is_legacy`` (``profiler_legacy.profile``)
    _legacy = False

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s: float | None = None,
                 activity_filters=None) -> None:
        self.enabled = enabled
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        # the user's frame: above this __init__, and the legacy class's when it calls this one
        self.use_device = (_profiled_device(use_device, 4 if self._legacy else 3) if enabled
                           else use_device)
        self.use_cuda = self.use_device == "cuda"
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.entered = False
        self._function_events: EventList | None = None
        self._recorder: _Recorder | None = None
        if not use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto "
                                 "(use_kineto=True)")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                                   self.with_flops)
        self._recorder.start()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return None
        if self.use_device == "cuda":
            from .. import cuda

            cuda.synchronize()
        recorder, self._recorder = self._recorder, None
        recorder.stop()
        events = recorder.take()
        events._use_device = self.use_device
        for evt in events:
            evt.use_device = self.use_device
            evt.is_legacy = self._legacy
        self._function_events = events
        return False

    def _events(self) -> EventList:
        """The results; before the block has run, none (the legacy profiler raises)."""
        if self._function_events is None:
            return EventList(use_device=self.use_device, profile_memory=self.profile_memory)
        return self._function_events

    @property
    def function_events(self) -> EventList:
        return self._events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n,
                                           group_by_overload_name)

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header=None, top_level_events_only: bool = False) -> str:
        return self._events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        events = self._events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        events.export_stacks(path, metric)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the self CPU times of all events."""
        return self._events().self_cpu_time_total

    def __repr__(self) -> str:
        if self._function_events is None:
            return self._UNFINISHED
        return repr(self._function_events)

    def __str__(self) -> str:
        if self._function_events is None:
            return self._UNFINISHED
        return str(self._function_events)

    table.__doc__ = EventList.table.__doc__
    key_averages.__doc__ = EventList.key_averages.__doc__
    export_chrome_trace.__doc__ = EventList.export_chrome_trace.__doc__
    export_stacks.__doc__ = EventList.export_stacks.__doc__


# -- NVTX and ITT ranges ----------------------------------------------------------------------

def _nvtx_label(evt: FunctionEvent, input_op_ids) -> str:
    """PyTorch's NVTX range text: ``name[, seq = N], op_id = I[, sizes = [[..], ..]]
    [, input_op_ids = [(op, output), ..]]``."""
    label = evt.name if evt.sequence_nr < 0 else f"{evt.name}, seq = {evt.sequence_nr}"
    label = f"{label}, op_id = {evt.id}"
    if evt.input_shapes:
        label = f"{label}, sizes = {evt.input_shapes}"
    if input_op_ids:
        pairs = ", ".join(f"({op},{nr})" for op, nr in input_op_ids)
        label = f"{label}, input_op_ids = [{pairs}]"
    return label


class _NvtxRecorder(_Recorder):
    """The recorder with an NVTX range pushed at each event's start and popped at its end;
    no events are kept. With ``record_shapes``, a forward op's range names its inputs' shapes
    and the ops that produced them (``(op_id, output index)``, ``(0,-1)`` for none)."""

    def __init__(self, nvtx, record_shapes: bool) -> None:
        super().__init__(record_shapes)
        self.recording = False
        self._push, self._pop = nvtx.RangePush, nvtx.RangePop
        self._producers: dict[int, tuple] = {}  # id(tensor) -> (op_id, output_nr)

    def begin(self, name: str, kind: str, shapes=None, stack=None, seq: int = -1,
              user: bool = False, scope: int = 0, input_op_ids=None) -> FunctionEvent:
        evt = super().begin(name, kind, shapes, stack, seq, user, scope)
        self._push(_nvtx_label(evt, input_op_ids))
        return evt

    def end(self, evt: FunctionEvent) -> None:
        if evt in self.open:
            super().end(evt)  # pops the ranges left open inside first
            self._pop()

    def begin_op(self, func, args, kwargs) -> FunctionEvent:
        from . import graph
        from .grad_mode import is_grad_enabled

        seq = graph.peek_sequence_nr() if is_grad_enabled() else -1
        if not self.record_shapes:
            return self.begin(_op_name(func), "cpu_op", seq=seq)
        return self.begin(_op_name(func), "cpu_op", _flat_shapes(args, kwargs), seq=seq,
                          input_op_ids=self._input_op_ids(args, kwargs))

    def end_op(self, evt: FunctionEvent, result) -> None:
        from .._tensor import Tensor

        if not self.record_shapes:
            return
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for nr, out in enumerate(outputs):
            if isinstance(out, Tensor):
                key = id(out)
                weakref.finalize(out, self._producers.pop, key, None)
                self._producers[key] = (evt.id, nr)

    def _input_op_ids(self, args, kwargs) -> list:
        from .._tensor import Tensor

        none = (0, -1)
        ids = []
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor):
                ids.append(self._producers.get(id(a), none))
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
                ids.extend(self._producers.get(id(x), none) for x in a
                           if isinstance(x, Tensor))
            else:
                ids.append(none)
        return ids


class emit_nvtx:
    """Makes every op, backward node and ``record_function`` range of this thread an NVTX
    range, for NVIDIA's profilers (Nsight Systems, nvprof)::

        nsys profile -o trace python train.py

    A range is named as PyTorch names it: ``aten::mm, seq = 12, op_id = 40``; ``seq`` is the
    sequence number of the backward node the forward op will make (grad mode on), and the
    backward node's own range carries the same ``seq``. With ``record_shapes=True`` it adds
    the input shapes, ``sizes = [[2, 3], [3, 4]]`` (``[]`` for a non-tensor argument), and
    ``input_op_ids = [(op_id, output index), ...]``, the ops that made the inputs.

    Needs CUDA (CuPy): the ranges are CuPy's ``cupy.cuda.nvtx.RangePush``/``RangePop``, and
    entering the block synchronizes the device; without CUDA, entering raises the
    AssertionError that ``ember.cuda.synchronize()`` raises, as PyTorch's CPU build does.

    Args:
        enabled (bool): ``False`` makes it a no-op.
        record_shapes (bool): add the input shapes and producing ops to each forward range.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes
        self._recorder: _NvtxRecorder | None = None

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is not reentrant")
        self.entered = True
        from .. import cuda

        cuda.synchronize()
        self._recorder = _NvtxRecorder(cuda._utils.backend().xp.cuda.nvtx, self.record_shapes)
        self._recorder.start()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return None
        from .. import cuda

        cuda.synchronize()
        recorder, self._recorder = self._recorder, None
        recorder.stop()
        return False


class emit_itt:
    """Makes every op an ITT range for Intel VTune Profiler, in PyTorch; records nothing in
    Ember.

    PyTorch's CPU build links Intel's ITT library, whose ranges reach a collector only when
    the process runs under VTune, and cost almost nothing otherwise. Ember has no ITT
    binding: ``emit_itt`` takes PyTorch's arguments and refuses re-entry as PyTorch does, and
    the block runs unchanged, but under VTune Ember's ops do not appear as labelled ranges
    (their time is in the Python frames VTune samples). For per-op times use
    :class:`ember.profiler.profile`.

    Args:
        enabled (bool): ``False`` makes it a no-op.
        record_shapes (bool): accepted; PyTorch adds the input shapes to each range.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("ITT annotation context manager is not reentrant")
        self.entered = True
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return None
        return False


# -- nvprof traces ----------------------------------------------------------------------------

def load_nvprof(path: str) -> EventList:
    """Open an nvprof trace (its SQLite database) and read the ranges ``emit_nvtx`` made.

    Args:
        path (str): path to the nvprof trace
    """
    return EventList(parse_nvprof_trace(path))


class EnforceUnique:
    """Raises an error if a key is seen more than once."""

    def __init__(self) -> None:
        self.seen: set = set()

    def see(self, *key) -> None:
        """Observe a key; raise if it was seen before."""
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


_MARKER_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp AS start_time, end.timestamp AS end_time
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
    ON start.id = end.id
WHERE
    start.name != 0 AND end.name = 0
"""

_KERNEL_QUERY = """
SELECT
    start.id AS marker_id, start.name, start.timestamp, end.timestamp,
    runtime._id_ AS runtime_id, runtime.cbid, runtime.start AS runtime_start,
    runtime.end AS runtime_end, kernel.start AS kernel_start, kernel.end AS kernel_end,
    kernel.name AS kernel_name
FROM
    CUPTI_ACTIVITY_KIND_MARKER AS start
    INNER JOIN CUPTI_ACTIVITY_KIND_MARKER AS end
        ON start.id = end.id
    INNER JOIN CUPTI_ACTIVITY_KIND_RUNTIME as runtime
        ON (start.timestamp < runtime.start AND runtime.end < end.timestamp)
    INNER JOIN CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL AS kernel
        ON kernel.correlationId = runtime.correlationId
"""


def parse_nvprof_trace(path: str) -> list[FunctionEvent]:
    """The NVTX ranges of an nvprof database as events in start order, each with the kernels
    launched inside it (``cudaLaunchKernel``, callback id 211) as ``Kernel(name, 0,
    duration)``. Names are demangled; a kernel is named by its string (PyTorch keeps the
    string table's id there)."""
    import sqlite3

    from .profiler_util import _demangle

    conn = sqlite3.connect(path)
    try:
        conn.row_factory = sqlite3.Row
        strings = {r["id"]: _demangle(r["value"])
                   for r in conn.execute("SELECT _id_ as id, value FROM StringTable")}
        functions = []
        by_id = {}
        unique = EnforceUnique()
        for row in conn.execute(_MARKER_QUERY):
            unique.see(row["marker_id"])
            evt = FunctionEvent(id=row["marker_id"], node_id=0, name=strings[row["name"]],
                                start_us=row["start_time"], end_us=row["end_time"], thread=0)
            functions.append(evt)
            by_id[evt.id] = evt
        unique = EnforceUnique()
        for row in conn.execute(_KERNEL_QUERY):
            unique.see(row["marker_id"], row["runtime_id"])
            if row["cbid"] != 211:  # cudaLaunchKernel for CUDA >= 9.2
                raise AssertionError(f"Expected cbid to be 211, but got {row['cbid']}")
            by_id[row["marker_id"]].append_kernel(
                strings.get(row["kernel_name"], row["kernel_name"]), 0,
                row["kernel_end"] - row["kernel_start"])
    finally:
        conn.close()
    functions.sort(key=lambda evt: evt.time_range.start)
    return functions


# -- the step counter -------------------------------------------------------------------------

class KinetoStepTracker:
    """The global training-step count, kept per requester so that several sources of steps
    (``ember.profiler.profile.step()`` as ``"ProfilerStep"``, optimizers as
    ``"Optimizer"``...) do not count one step twice: the global step is the largest of their
    counts, and it moves when one of them passes it.

    In PyTorch each new global step is also handed to Kineto (for on-demand tracing by a
    daemon); Ember has no Kineto, so the count is all there is. As in PyTorch, only the
    profiler's ``__init__``/``__exit__`` register and drop ``"ProfilerStep"``; steps are
    counted only by the callers of :meth:`increment_step`.
    """

    _current_step = 0
    _step_dict: dict[str, int] = defaultdict(int)

    @classmethod
    def init_step_count(cls, requester: str) -> None:
        """Start counting for ``requester``, at the current global step."""
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        """Stop counting for ``requester``; whether it was counted."""
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        """One more step for ``requester``; the global step, advanced when this passes it."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            if new_step - cls._current_step > 1:
                warnings.warn("Profiler step count has increased more than 1 - "
                              f"current_step = {cls._current_step} step dict =  "
                              f"{cls._step_dict}", stacklevel=2)
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        """The latest step of any requester."""
        return cls._current_step
