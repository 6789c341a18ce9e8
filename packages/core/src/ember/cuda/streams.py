"""``ember.cuda.streams``: CUDA streams and events over CuPy's, like ``torch.cuda.streams``,
and the current-stream functions of ``torch.cuda`` (``current_stream``, ``set_stream``,
``stream``...).

A CuPy current stream is per thread and per device, as PyTorch's is. ``ember.Stream`` and
``ember.Event`` (device-generic) wrap these on CUDA.
"""

from __future__ import annotations

from .._device import device as _device_cls
from .._naming import PREFIX
from ._utils import backend, backend_or_none, current_index, device_index

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "current_stream",
           "default_stream", "set_stream", "stream"]


def _need_cuda(message: str) -> None:
    """PyTorch's RuntimeError for a stream or event made where this build has no CUDA (its
    dummy classes), rather than the AssertionError of a CUDA call."""
    try:
        backend()
    except AssertionError:
        raise RuntimeError(message) from None


class Stream:
    """A CUDA stream (a ``cupy.cuda.Stream`` underneath); ``with stream:`` makes it current.

    ``priority``: lower numbers run first, as in CUDA (see ``priority_range``)."""

    def __init__(self, device=None, priority: int = 0, _raw=None):
        if _raw is None:
            _need_cuda(f"{PREFIX[0]}.cuda.Stream requires CUDA support")
        idx = device_index(device)
        self.device = _device_cls("cuda", idx)
        self._raw = _raw if _raw is not None else backend().new_stream(idx, priority)
        self._priority = priority if _raw is None else int(getattr(_raw, "priority", 0))

    @property
    def cuda_stream(self) -> int:
        """The ``cudaStream_t`` handle, as an int."""
        return self._raw.ptr

    @property
    def priority(self) -> int:
        return self._priority

    @staticmethod
    def priority_range() -> tuple:
        """``(lowest, highest)`` stream priorities of the current device (numerically,
        ``highest <= lowest``)."""
        runtime = backend().xp.cuda.runtime
        query = getattr(runtime, "deviceGetStreamPriorityRange", None)
        if query is not None:  # CuPy < 14
            least, greatest = query()
            return int(least), int(greatest)
        # CuPy 14 dropped that call: CUDA clamps a requested priority into the device's
        # range, so a stream asked for far outside it reports each end
        ends = []
        for asked in (1 << 20, -(1 << 20)):
            handle = runtime.streamCreateWithPriority(runtime.streamNonBlocking, asked)
            try:
                ends.append(int(runtime.streamGetPriority(handle)))
            finally:
                runtime.streamDestroy(handle)
        return ends[0], ends[1]

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return bool(self._raw.done)

    def synchronize(self) -> None:
        """Wait for all work queued on the stream."""
        self._raw.synchronize()

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Make later work on this stream wait for ``event``."""
        self._raw.wait_event(event._raw)

    def wait_stream(self, stream) -> None:
        """Make later work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def __enter__(self):
        self._raw.__enter__()
        return self

    def __exit__(self, *exc):
        return self._raw.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device == other.device)

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device))

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """A stream allocated outside Ember (a ``cudaStream_t`` as an int), e.g. by another
    library; Ember neither owns nor destroys it."""

    def __init__(self, stream_ptr: int, device=None):
        idx = device_index(device)
        raw = backend().xp.cuda.ExternalStream(int(stream_ptr), idx)
        super().__init__(idx, _raw=raw)


class Event:
    """A CUDA event, for synchronisation and timing between streams."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        _need_cuda("Tried to instantiate dummy base class Event")
        self._raw = backend().new_event(enable_timing, blocking)

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        self._raw.record(None if stream is None else stream._raw)

    def wait(self, stream=None) -> None:
        """Make ``stream`` (default: current) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work recorded before the event has finished."""
        return bool(self._raw.done)

    def synchronize(self) -> None:
        """Wait for the event."""
        self._raw.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both timed and recorded)."""
        return backend().elapsed_ms(self._raw, end_event._raw)

    def __repr__(self) -> str:
        return f"<ember.cuda.Event {self._raw.ptr:#x}>"


def current_stream(device=None) -> Stream:
    """The current stream of a CUDA device (default: the current device)."""
    idx = device_index(device)
    return Stream(idx, _raw=backend().current_stream(idx))


def default_stream(device=None) -> Stream:
    """The default (null) stream of a CUDA device."""
    idx = device_index(device)
    return Stream(idx, _raw=backend().null_stream(idx))


def set_stream(stream) -> None:
    """Make ``stream`` the current stream, and its device the current device (``None``: no
    change). Prefer the ``stream()`` context manager."""
    if stream is None:
        return
    be = backend()
    idx = stream.device.index
    if be.default_index(None) != idx:
        be.set_device(idx)
    stream._raw.use()


class StreamContext:
    """Context manager that makes ``stream`` current, and its device the current device,
    inside the block; both are restored after it. ``None`` (or no CUDA) changes nothing."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = -1 if backend_or_none() is None else current_index()
        self.src_prev_stream = self.dst_prev_stream = None

    def __enter__(self):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device != cur.device:
            self.dst_prev_stream = current_stream(cur.device)
        set_stream(cur)

    def __exit__(self, *exc):
        cur = self.stream
        if cur is None or self.idx == -1:
            return
        if self.src_prev_stream.device != cur.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream) -> StreamContext:
    """Context manager making ``stream`` the current stream (``None``: no change)."""
    return StreamContext(stream)
