"""The profiler's events, their averages and the table (``torch.autograd.profiler_util``).

Times are microseconds (floats), as in PyTorch. An event's *self* time is its time less its
children's (the ops an op, a ``record_function`` range or a backward node ran); *self* memory
likewise, where memory is the bytes of the arrays an op returned (``profile_memory=True``).
"""

from __future__ import annotations

import json
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]


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


class _Times:
    """``*_str`` forms of the times, for the table."""

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    # no device kernels are timed (the CPU backend runs them in the op's own time)
    device_time_total = 0.0
    self_device_time_total = 0.0
    cuda_time_total = 0.0
    self_cuda_time_total = 0.0


class FunctionEvent(_Times):
    """One recorded op, ``record_function`` range or backward node."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float = 0.0,
                 input_shapes=None, stack=None, sequence_nr: int = -1,
                 is_user_annotation: bool = False, kind: str = "cpu_op") -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.sequence_nr = sequence_nr
        self.is_user_annotation = is_user_annotation
        self.kind = kind
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_memory_usage = 0
        self.forward_event: FunctionEvent | None = None  # a backward node's forward op
        self.count = 1
        self.is_async = False
        self.is_legacy = False
        self.device_type = "cpu"
        self.node_id = -1
        self.overload_name = ""
        self.flops = 0

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def time_range(self):
        return _Interval(self.start_us, self.end_us)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class _Interval:
    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


class FunctionEventAvg(_Times):
    """The sum of the events that share a key (name, and input shapes or stack if asked)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None
        self.is_async = False
        self.is_legacy = False
        self.is_user_annotation = False
        self.device_type = "cpu"
        self.node_id = -1
        self.overload_name = ""
        self.flops = 0

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


_SORT_KEYS = {"cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total",
              "device_time_total", "self_cpu_time_total", "self_cuda_time_total",
              "self_device_time_total", "cpu_memory_usage", "self_cpu_memory_usage", "count"}


class EventList(list):
    """A list of events with PyTorch's summaries: ``table``, ``key_averages``,
    ``export_chrome_trace``."""

    def __init__(self, *args, profile_memory: bool = False, **kwargs) -> None:
        super().__init__(*args)
        self._profile_memory = profile_memory

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
                            self._profile_memory, top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def key_averages(self, group_by_input_shapes: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / first ``n`` stack frames)."""
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [evt.key]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        return EventList(stats.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
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
                      "tid": evt.thread, "ts": evt.start_us, "dur": evt.cpu_time_total,
                      "args": args})
        fwd = evt.forward_event
        if fwd is not None:  # the forward op -> backward node arrow, as PyTorch draws it
            trace.append({"ph": "s", "id": evt.id, "pid": pid, "tid": fwd.thread,
                          "ts": fwd.start_us, "cat": "fwdbwd", "name": "fwdbwd"})
            trace.append({"ph": "f", "id": evt.id, "pid": pid, "tid": evt.thread,
                          "ts": evt.start_us, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
    return {"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms",
            "deviceProperties": []}


def _pid() -> int:
    import os

    return os.getpid()


def _build_table(events, sort_by, header, row_limit, max_src_column_width,
                 max_name_column_width, max_shapes_column_width, profile_memory,
                 top_level_events_only, time_unit) -> str:
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
        out.append(row_format.format(*row))
    out.append(sep)
    out.append(f"Self CPU time total: {fmt_time(total_self, _format_time(total_self))}")
    return "\n".join(out) + "\n"
