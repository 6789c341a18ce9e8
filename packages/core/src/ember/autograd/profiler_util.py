"""The profiler's events, their averages and the table (``torch.autograd.profiler_util``).

Times are microseconds (floats), as in PyTorch. An event's *self* time is its time less its
children's (the ops an op, a ``record_function`` range or a backward node ran); *self* memory
likewise, where memory is the bytes of the arrays an op returned (``profile_memory=True``).
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import warnings
from collections import defaultdict, namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["EventList", "EventMetadata", "FormattedTimesMixin", "Interval", "Kernel",
           "FunctionEvent", "FunctionEventAvg", "StringTable", "MemRecordsAcc"]


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _attr_formatter(name: str) -> property:
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    """The ``*_str`` forms of the times and the per-call averages, for ``FunctionEvent`` and
    ``FunctionEventAvg`` (which define ``*_time_total`` and ``count``)."""

    cpu_time_str = _attr_formatter("cpu_time")
    device_time_str = _attr_formatter("device_time")
    cpu_time_total_str = _attr_formatter("cpu_time_total")
    device_time_total_str = _attr_formatter("device_time_total")
    self_cpu_time_total_str = _attr_formatter("self_cpu_time_total")
    self_device_time_total_str = _attr_formatter("self_device_time_total")

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    @property
    def cuda_time(self) -> float:
        _deprecated("cuda_time", "device_time")
        return self.device_time


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`{old}` is deprecated, please use `{new}` instead.", FutureWarning,
                  stacklevel=3)


class Interval:
    """A ``[start, end]`` range in microseconds (an event's ``time_range``)."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The length of the interval."""
        return self.end - self.start


#: a device kernel an op launched (``FunctionEvent.kernels``): its name, device, duration (us)
Kernel = namedtuple("Kernel", ["name", "device", "duration"])


class EventMetadata(NamedTuple):
    """A device event's extra fields (kernel launch geometry, memory traffic, collectives),
    parsed from the trace's string metadata by :func:`_build_metadata`."""

    # Kernel fields
    registers_per_thread: int | None
    shared_memory: int | None
    grid: list[int] | None
    block: list[int] | None
    priority: int | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    occupancy: dict[str, Any] | None
    est_occupancy_pct: float | None
    queued: int | None
    graph_id: int | None
    graph_node_id: int | None
    stream: int | None
    context: int | None
    channel: int | None
    channel_type: int | None
    # Memory fields
    bytes: int | None
    bandwidth_gb_s: float | None
    # NCCL fields
    collective_name: str | None
    dtype: str | None
    in_msg_nelems: int | None
    out_msg_nelems: int | None
    in_split_size: str | None
    out_split_size: str | None
    global_rank_start: int | None
    global_rank_stride: int | None
    group_size: int | None
    process_group_name: str | None
    process_group_desc: str | None
    group_ranks: str | None
    rank: int | None
    src_rank: int | None
    dst_rank: int | None
    seq: int | None
    is_async: bool | None


def _to_str(v: str) -> str:
    return v.strip('"')


def _to_bool(v: str) -> bool:
    return v in ("1", "true")


#: the trace's metadata key -> (EventMetadata field, converter from its string)
_EVENT_METADATA_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "registers per thread": ("registers_per_thread", int),
    "shared memory": ("shared_memory", int),
    "grid": ("grid", json.loads),
    "block": ("block", json.loads),
    "priority": ("priority", int),
    "blocks per SM": ("blocks_per_sm", float),
    "warps per SM": ("warps_per_sm", float),
    "est. achieved occupancy %": ("est_occupancy_pct", float),
    "occupancy": ("occupancy", json.loads),
    "queued": ("queued", int),
    "graph id": ("graph_id", int),
    "graph node id": ("graph_node_id", int),
    "stream": ("stream", int),
    "context": ("context", int),
    "channel": ("channel", int),
    "channel_type": ("channel_type", int),
    "bytes": ("bytes", int),
    "memory bandwidth (GB/s)": ("bandwidth_gb_s", float),
    "Collective name": ("collective_name", _to_str),
    "dtype": ("dtype", _to_str),
    "In msg nelems": ("in_msg_nelems", int),
    "Out msg nelems": ("out_msg_nelems", int),
    "In split size": ("in_split_size", _to_str),
    "Out split size": ("out_split_size", _to_str),
    "Global rank start": ("global_rank_start", int),
    "Global rank stride": ("global_rank_stride", int),
    "Group size": ("group_size", int),
    "Process Group Name": ("process_group_name", _to_str),
    "Process Group Description": ("process_group_desc", _to_str),
    "Process Group Ranks": ("group_ranks", _to_str),
    "Rank": ("rank", int),
    "Src Rank": ("src_rank", int),
    "Dst Rank": ("dst_rank", int),
    "Seq": ("seq", int),
    "Is asynchronized op": ("is_async", _to_bool),
}


def _build_metadata(extra_meta: dict) -> EventMetadata | None:
    """An ``EventMetadata`` from a ``{trace key: string}`` dict; None when no key is known."""
    fields = {name: None for name, _ in _EVENT_METADATA_KEYS.values()}
    found = False
    for key, (name, convert) in _EVENT_METADATA_KEYS.items():
        value = extra_meta.get(key)
        if value is not None:
            fields[name] = convert(value)
            found = True
    return EventMetadata(**fields) if found else None


class FunctionEvent(FormattedTimesMixin):
    """One recorded op, ``record_function`` range or backward node (or, from
    :func:`~ember.autograd.profiler.load_nvprof`, one NVTX range and its kernels).

    ``time_range`` is its ``Interval`` in microseconds; ``cpu_children`` / ``cpu_parent`` the
    events it encloses and is enclosed by; ``kernels`` the device kernels attributed to it.
    ``kind`` (Ember's) says what it is: ``"cpu_op"`` or ``"user_annotation"``.
    """

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float = 0.0,
                 overload_name: str | None = None, fwd_thread: int | None = None,
                 input_shapes=None, stack=None, scope: int = 0, use_device: str | None = None,
                 cpu_memory_usage: int = 0, device_memory_usage: int = 0,
                 is_async: bool = False, is_remote: bool = False, sequence_nr: int = -1,
                 node_id: int = -1, device_type: str = "cpu", device_index: int = 0,
                 device_resource_id: int | None = None, is_legacy: bool = False,
                 flops: int | None = None, trace_name: str | None = None,
                 concrete_inputs=None, kwinputs=None, is_user_annotation: bool = False,
                 extra_meta: dict | None = None, kind: str = "cpu_op") -> None:
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels: list = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.event_metadata = _build_metadata(extra_meta) if extra_meta else None
        self.kind = kind
        self.forward_event: FunctionEvent | None = None  # a backward node's forward op

    def append_kernel(self, name, device, duration) -> None:
        if self.device_type != "cpu":
            raise AssertionError("Expected device_type to be CPU")
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Add a direct child (only direct children: self times subtract them)."""
        if self.device_type != "cpu":
            raise AssertionError("Expected device_type to be CPU")
        if not isinstance(child, FunctionEvent):
            raise AssertionError("Expected child to be a FunctionEvent")
        if child.device_type != "cpu":
            raise AssertionError("Expected child device_type to be CPU")
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Set the event whose range immediately encloses this one."""
        if self.device_type != "cpu":
            raise AssertionError("Expected device_type to be CPU")
        if not isinstance(parent, FunctionEvent):
            raise AssertionError("Expected parent to be a FunctionEvent")
        if parent.device_type != "cpu":
            raise AssertionError("Expected parent device_type to be CPU")
        self.cpu_parent = parent

    @property
    def key(self) -> str:
        return self.name

    # async events have no children and only a total CPU time
    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us() if self.device_type == "cpu" else 0

    @property
    def self_cpu_time_total(self) -> float:
        if self.is_async or self.device_type != "cpu":
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        if self.is_async or self.device_type != "cpu":
            return 0
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        if self.is_async or self.device_type != "cpu":
            return 0
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        """The time of its kernels (and, recorded by a non-legacy profiler, its children's),
        when a device was profiled (``use_device``)."""
        if self.is_async or not self.use_device:
            return 0
        if self.device_type != "cpu":
            return self.time_range.elapsed_us()
        own = sum(k.duration for k in self.kernels)
        if self.is_legacy:
            return own
        return own + sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        if self.is_async or not self.use_device:
            return 0
        if self.device_type != "cpu":
            return self.device_time_total
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def cuda_time_total(self) -> float:
        _deprecated("cuda_time_total", "device_time_total")
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        _deprecated("self_cuda_time_total", "self_device_time_total")
        return self.self_device_time_total

    @property
    def self_cuda_memory_usage(self) -> int:
        _deprecated("self_cuda_memory_usage", "self_device_memory_usage")
        return self.self_device_memory_usage

    def __repr__(self) -> str:
        dev = self.use_device
        return (f"<FunctionEvent id={self.id} name={self.name} "
                f"overload_name={self.overload_name} device_type={self.device_type} "
                f"node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"{dev}_time={self.device_time_str} name={self.name} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{dev}_memory_usage={self.device_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """The sum of the events that share a key (name, and input shapes or stack if asked)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device: str | None = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = "cpu"
        self.is_legacy = False
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:  # the first event: it names the group
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self) -> str:
        dev = self.use_device or "cuda"
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_{dev}_time="
                f"{self.self_device_time_total_str} {dev}_time={self.device_time_str} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"{dev}_memory_usage={self.device_memory_usage}>")


def _demangle(name: str) -> str:
    """A C++ symbol's readable name (``_ZN3foo3barEv`` -> ``foo::bar()``) through the C++
    runtime's ``__cxa_demangle``; a name that is not mangled, or no C++ runtime, gives it back."""
    demangle = _cxa_demangle()
    if demangle is None or not name:
        return name
    import ctypes

    status = ctypes.c_int()
    out = demangle(name.encode(), None, None, ctypes.byref(status))
    if not out:
        return name
    try:
        return ctypes.cast(out, ctypes.c_char_p).value.decode() if status.value == 0 else name
    finally:
        _libc_free(out)


@functools.cache
def _cxa_demangle():
    import ctypes
    import ctypes.util

    for lib in ("stdc++", "c++abi", "c++"):
        path = ctypes.util.find_library(lib)
        if path is None:
            continue
        try:
            fn = ctypes.CDLL(path).__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_int)]
        return fn
    return None


def _libc_free(ptr) -> None:
    import ctypes

    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    free(ptr)


class StringTable(defaultdict):
    """Names as they are shown: a missing key is demangled once and kept (a one-letter key
    stays as it is: ``t`` would demangle to ``unsigned short``)."""

    def __missing__(self, key):
        self[key] = _demangle(key) if len(key) > 1 else key
        return self[key]


class MemRecordsAcc:
    """The memory records that fall in a time interval, found by bisection: ``mem_records``
    are ``(record, ...)`` tuples whose ``record.start_ns()`` is the allocation's time."""

    def __init__(self, mem_records) -> None:
        self._mem_records = mem_records
        self._start_nses: tuple = ()
        self._indices: tuple = ()
        if len(mem_records) > 0:
            pairs = sorted((r[0].start_ns(), i) for i, r in enumerate(mem_records))
            self._start_nses, self._indices = zip(*pairs)

    def in_interval(self, start_ns, end_ns):
        """The records whose start lies in ``[start_ns, end_ns]``, in time order."""
        first = bisect.bisect_left(self._start_nses, start_ns)
        last = bisect.bisect_right(self._start_nses, end_ns)
        for i in range(first, last):
            yield self._mem_records[self._indices[i]]


_SORT_KEYS = {"cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total",
              "device_time_total", "self_cpu_time_total", "self_cuda_time_total",
              "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage", "count"}


class EventList(list):
    """A list of events with PyTorch's summaries: ``table``, ``key_averages``,
    ``export_chrome_trace``."""

    def __init__(self, *args, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header=None,
              top_level_events_only: bool = False, time_unit=None) -> str:
        """PyTorch's summary table, sorted by ``sort_by`` (``"cpu_time_total"``,
        ``"self_cpu_time_total"``, ``"cpu_memory_usage"``, ``"count"``, ...)."""
        return _build_table(self, sort_by, header, row_limit, max_src_column_width,
                            max_name_column_width, max_shapes_column_width,
                            self._profile_memory, top_level_events_only, time_unit,
                            self._with_flops)

    def __str__(self) -> str:
        return self.table()

    def supported_export_stacks_metrics(self) -> list[str]:
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str) -> None:
        """Flame-graph input (``flamegraph.pl``, speedscope): per event with a stack
        (``with_stack=True``), its frames outermost first joined by ``;``, then its ``metric``
        in whole microseconds; events under 1 us are left out."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace(
            "privateuse1", "device")
        blanks = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                value = int(getattr(evt, attr)) if evt.stack else 0
                if value > 0:
                    frames = ";".join(e.translate(blanks) for e in reversed(evt.stack))
                    f.write(f"{frames} {value}\n")

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / first ``n`` stack frames /
        overload name)."""
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [evt.key]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_overload_name:
                key.append(str(evt.overload_name))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        averages = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        # as PyTorch: a group keeps only what it was grouped by (an ungrouped table has no
        # "Input Shapes" column, which would show the first call's shapes for all calls)
        for avg in averages:
            avg.stack = avg.stack[:group_by_stack_n] if avg.stack else avg.stack
            if not group_by_input_shapes:
                avg.input_shapes = ""
            if not group_by_overload_name:
                avg.overload_name = ""
        return averages

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one ``FunctionEventAvg`` keyed ``"Total"``."""
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
            total.key = None  # the next event's key is taken, not checked
        total.key = "Total"
        return total

    def export_chrome_trace(self, path: str) -> None:
        """Write the events in the Trace Event Format (Chrome's about:tracing, Perfetto):
        complete (``X``) events, and flow arrows from each forward op to its backward node."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self), f)


def chrome_trace(events) -> dict:
    pid = _pid()
    trace = []
    for evt in events:
        args = {}
        if evt.input_shapes:
            args["Input Dims"] = evt.input_shapes
        if evt.sequence_nr >= 0:
            args["Sequence number"] = evt.sequence_nr
        if evt.cpu_memory_usage:
            args["Bytes"] = evt.cpu_memory_usage
        if evt.stack:
            args["Call stack"] = ";".join(evt.stack)
        trace.append({"ph": "X", "cat": evt.kind, "name": evt.name, "pid": pid,
                      "tid": evt.thread, "ts": evt.time_range.start, "dur": evt.cpu_time_total,
                      "args": args})
        fwd = evt.forward_event
        if fwd is not None:  # the forward op -> backward node arrow, as PyTorch draws it
            trace.append({"ph": "s", "id": evt.id, "pid": pid, "tid": fwd.thread,
                          "ts": fwd.time_range.start, "cat": "fwdbwd", "name": "fwdbwd"})
            trace.append({"ph": "f", "id": evt.id, "pid": pid, "tid": evt.thread,
                          "ts": evt.time_range.start, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
    return {"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms",
            "deviceProperties": []}


def _pid() -> int:
    import os

    return os.getpid()


_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _flops_scale(flops: int) -> tuple[float, str]:
    """The unit that shows ``flops`` (the smallest count of the table) with 1-3 digits."""
    level = max(0.0, min(math.log10(flops) / 3, float(len(_FLOP_UNITS) - 1)))
    return 10.0 ** (math.floor(level) * -3.0), _FLOP_UNITS[int(level)]


def _build_table(events, sort_by, header, row_limit, max_src_column_width,
                 max_name_column_width, max_shapes_column_width, profile_memory,
                 top_level_events_only, time_unit, with_flops: bool = False) -> str:
    if len(events) == 0:
        return ""
    if sort_by is not None:
        key = sort_by.replace("cuda", "device")
        if key not in _SORT_KEYS:
            raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}' "
                                 f"(sort_by is one of {sorted(_SORT_KEYS)})")
        events = sorted(events, key=lambda e: getattr(e, key), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    width = 12
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [width] * 5
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        widths += [width, width]
    headers.append("# of Calls")
    widths.append(width)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        src_width = min(max(len(s) for st in stacks for s in st) + 4, max_src_column_width)
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops = [e.flops for e in events if e.flops and e.flops > 0] if with_flops else []
    if flops:  # (PyTorch's column: in the unit of the smallest count, "--" for none)
        flops_scale, unit = _flops_scale(min(flops))
        headers.append(f"Total {unit}")
        widths.append(width)
        aligns.append(">")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(widths) + 2 * (len(widths) - 1)

    def fmt_time(us: float, default: str) -> str:
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return default

    total_self = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(evt.self_cpu_time_total, total_self),
               fmt_time(evt.self_cpu_time_total, evt.self_cpu_time_total_str),
               _format_time_share(evt.cpu_time_total, total_self),
               fmt_time(evt.cpu_time_total, evt.cpu_time_total_str),
               fmt_time(evt.cpu_time, evt.cpu_time_str)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage),
                    _format_memory(evt.self_cpu_memory_usage)]
        row.append(evt.count)
        if has_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if stacks:
            src = evt.stack[0] if evt.stack else ""
            if len(src) > src_width:
                src = "..." + src[len(src) - src_width + 3:]
            row.append(src)
        if flops:
            row.append(f"{evt.flops * flops_scale:8.3f}" if evt.flops and evt.flops > 0
                       else "--")
        out.append(row_format.format(*row))
    out.append(sep)
    out.append(f"Self CPU time total: {fmt_time(total_self, _format_time(total_self))}")
    return "\n".join(out) + "\n"
