"""``ember.profiler.profile``: PyTorch's profiler API on Ember's op-registry recorder.

``with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:`` records the
ops, ``record_function`` ranges and backward nodes of its thread (see
:mod:`ember.autograd.profiler` for what is timed and how); ``prof.key_averages().table(
sort_by="cpu_time_total")`` is PyTorch's table and ``prof.export_chrome_trace(path)`` a trace
that Chrome and Perfetto open. With ``schedule=schedule(wait=1, warmup=1, active=3)`` and
``prof.step()`` each training step, only the active steps are kept, and ``on_trace_ready``
(``tensorboard_trace_handler(dir)``, say) receives the profiler at the end of each cycle.
"""

from __future__ import annotations

import enum
import gzip
import json
import os
import socket
import time
import warnings
from collections.abc import Callable

from ..autograd.profiler import KinetoStepTracker, _Recorder, record_function
from ..autograd.profiler_util import EventList, chrome_trace

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


#: the requester name under which the profiler's steps count in ``KinetoStepTracker``
PROFILER_STEP_NAME = "ProfilerStep"


class ProfilerActivity(enum.Enum):
    """What to profile: ``CPU`` (Ember's ops, whatever device runs their arrays). The device
    activities are accepted; Ember times a GPU op as the CPU time of its call."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's profiling schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` recorded-and-dropped and ``active`` recorded steps, ``repeat`` times (0: for
    ever); the last active step of a cycle is ``RECORD_AND_SAVE``."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"Invalid step number {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


#: ``torch.profiler.profiler._default_schedule_fn``: record every step (Lightning's
#: ``PyTorchProfiler`` puts it back after its own schedule)
_default_schedule_fn = _always_record


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable:
    """An ``on_trace_ready`` that writes each cycle's trace to ``dir_name`` as
    ``<worker>.<ms>.pt.trace.json`` (TensorBoard's profiler plugin reads them)."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name + (".gz" if use_gzip else ""))
        if use_gzip:
            with gzip.open(path, "wt") as f:
                json.dump(prof._trace(), f)
        else:
            prof.export_chrome_trace(path)

    return handler


class profile:
    """Records this thread's ops (see the module docstring)."""

    def __init__(self, *, activities=None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None) -> None:
        acts = set(activities) if activities else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity values, got {a!r}")
        self.activities = acts
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recorder: _Recorder | None = None
        self._events: EventList | None = None
        self._step_range: record_function | None = None
        self._metadata: dict[str, str] = {}
        self._scheduled = schedule is not None
        self._memory = None  # the saved trace's memory events (profile_memory=True)
        self.mem_tl = None
        KinetoStepTracker.init_step_count(PROFILER_STEP_NAME)

    # -- lifecycle --------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        KinetoStepTracker.erase_step_count(PROFILER_STEP_NAME)
        return False

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._begin_step()

    def stop(self) -> None:
        self._end_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark a step boundary: the schedule decides what the next step records."""
        self._end_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._begin_step()

    def _begin_step(self) -> None:
        if self._scheduled and self._recorder is not None:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _end_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _transit(self, prev: ProfilerAction, new: ProfilerAction | None) -> None:
        recording = (ProfilerAction.WARMUP, ProfilerAction.RECORD,
                     ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE or (
                new is None and prev in (ProfilerAction.RECORD,)):
            self._save()
        elif prev == ProfilerAction.WARMUP and new == ProfilerAction.RECORD:
            if self._recorder is not None:
                self._recorder.take()  # warm-up steps are dropped
        if new in recording and self._recorder is None:
            self._recorder = _Recorder(self.record_shapes, self.profile_memory,
                                       self.with_stack, self.with_flops)
            self._recorder.start()
        elif new not in recording and self._recorder is not None:
            self._recorder.stop()
            self._recorder = None

    def _save(self) -> None:
        if self._recorder is None:
            return
        self._recorder.stop()
        self._events = self._recorder.take()
        self._memory = self._recorder.memory
        if self._memory is not None:
            self._memory.stop()
        self._recorder = None
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- results ---------------------------------------------------------------------------------
    def events(self) -> EventList:
        if self._events is None:
            raise RuntimeError("the profiler has no saved trace yet (it saves when it stops, "
                               "or at the end of each active cycle of its schedule)")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One row per op name (and input shapes, or the first ``n`` stack frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def _trace(self) -> dict:
        trace = chrome_trace(self.events())
        if self._metadata:
            trace["metadata"] = dict(self._metadata)
        return trace

    def export_chrome_trace(self, path: str) -> None:
        """The saved trace in the Trace Event Format (``.gz`` paths are gzipped)."""
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                json.dump(self._trace(), f)
            return
        with open(path, "w") as f:
            json.dump(self._trace(), f)

    def _memory_profile(self):
        required = ("record_shapes", "profile_memory", "with_stack")
        missing = [f"{i}=True" for i in required if not getattr(self, i)]
        if missing:
            raise ValueError(f"{', '.join(missing)} required for memory profiling.")
        if self._memory is None:
            raise RuntimeError("the profiler has no saved trace yet (it saves when it stops, "
                               "or at the end of each active cycle of its schedule)")
        from ._memory_profiler import MemoryProfileTimeline

        return MemoryProfileTimeline(self._memory, self.events())

    def export_memory_timeline(self, path: str, device: str | None = None) -> None:
        """The memory held over the saved trace, by category (parameters, inputs,
        activations, gradients, optimizer state, ...: ``ember.profiler._memory_profiler``),
        for one device (default: the default device if set, else ``cuda:0`` where CUDA is
        available, else ``cpu``), by
        ``path``'s suffix: ``.html`` a plot (with matplotlib), ``.json`` / ``.json.gz``
        ``[times, sizes by category]``, ``.raw.json.gz`` one ``(time, action, bytes,
        category)`` per event. Needs ``record_shapes``, ``profile_memory`` and
        ``with_stack``. Deprecated in PyTorch (a ``FutureWarning``), as here."""
        warnings.warn("`export_memory_timeline` is deprecated and will be removed in a future "
                      "version. Please use `torch.cuda.memory._record_memory_history` and "
                      "`torch.cuda.memory._export_memory_snapshot` instead.", FutureWarning,
                      stacklevel=2)
        if device is None:  # PyTorch's: the GPU where there is one; here also the default
            from .. import cuda  # device when one is set (a test device stands in for CUDA)
            from .._device import get_default_device

            default = str(get_default_device())
            device = default if default != "cpu" else "cuda:0" if cuda.is_available() else "cpu"
        self.mem_tl = self._memory_profile()
        self.mem_tl.export(path, device)

    def add_metadata(self, key: str, value: str) -> None:
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        self._metadata[key] = json.loads(value)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Flame-graph input (see ``EventList.export_stacks``); needs ``with_stack=True``."""
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)
