"""``ember.Stream`` and ``ember.Event``: PyTorch 2's device-generic stream and event
(``torch.Stream``, ``torch.Event``).

Without an argument they take the current accelerator (CUDA when CuPy sees a GPU), else the
CPU, as PyTorch does. On CUDA they wrap ``ember.cuda.Stream``/``Event``. The CPU runs every
op at once and in order, so a CPU stream is always done (``query()`` is True,
``synchronize()`` returns at once) and, as in a PyTorch CPU build, the CPU has no events:
recording one (``Event.record``, ``Stream.record_event``, ``Stream.wait_stream``) raises
"cpu backend doesn't support events.". Other host devices (Ember's NumPy-backed test devices,
``meta``) behave as the CPU does.
"""

from __future__ import annotations

from ._device import device as _device_cls

__all__ = ["Stream", "Event"]

_NO_EVENTS = "{} backend doesn't support events."
# PyTorch's c10::DeviceType numbers (``Stream.device_type``)
_TYPE_IDS = {"cpu": 0, "cuda": 1, "mkldnn": 2, "opengl": 3, "opencl": 4, "ideep": 5, "hip": 6,
             "fpga": 7, "maia": 8, "xla": 9, "vulkan": 10, "metal": 11, "xpu": 12, "mps": 13,
             "meta": 14, "hpu": 15, "ve": 16, "lazy": 17, "ipu": 18, "mtia": 19}
_PRIVATE_USE = 20


def _resolve(device) -> _device_cls:
    """The device of a stream or event: the current accelerator (else the CPU) for None, the
    accelerator's device ``n`` for an int."""
    from .accelerator import _NONE_AVAILABLE, current_accelerator

    if device is None:
        acc = current_accelerator()
        return _device_cls("cpu") if acc is None else acc
    if isinstance(device, int) and not isinstance(device, bool):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError(_NONE_AVAILABLE)
        return _device_cls(acc.type, device)
    return device if isinstance(device, _device_cls) else _device_cls(device)


class Stream:
    """An in-order queue of work on a device (``torch.Stream``); ``with stream:`` makes it
    current. ``Stream(device=None, *, priority=0)``."""

    def __init__(self, device=None, *, priority: int = 0):
        dev = _resolve(device)
        self._impl = None
        if dev.type == "cuda":
            from . import cuda

            self._impl = cuda.Stream(dev, priority=priority)
            dev = self._impl.device
        self._device = dev

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def device_type(self) -> int:
        return _TYPE_IDS.get(self._device.type, _PRIVATE_USE)

    @property
    def device_index(self) -> int:
        return -1 if self._impl is None else self._device.index

    @property
    def stream_id(self) -> int:
        return 0 if self._impl is None else self._impl.cuda_stream

    @property
    def native_handle(self) -> int:
        if self._impl is None:
            raise RuntimeError("Backend doesn't support getting stream native handle.")
        return self._impl.cuda_stream

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return True if self._impl is None else self._impl.query()

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""
        if self._impl is not None:
            self._impl.synchronize()

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream and return it."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS.format(self._device.type))
        event = Event(self._device) if event is None else event
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Make later work on this stream wait for ``event``."""
        if self._impl is not None:
            self._impl.wait_event(event._impl)

    def wait_stream(self, stream) -> None:
        """Make later work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def is_capturing(self) -> bool:
        """Whether a graph capture is under way on this stream: never in Ember."""
        return False

    def __enter__(self):
        if self._impl is not None:
            self._impl.__enter__()
        return self

    def __exit__(self, *exc):
        if self._impl is not None:
            return self._impl.__exit__(*exc)
        return None

    def __eq__(self, other) -> bool:
        return (isinstance(other, Stream) and self._device == other._device
                and self.stream_id == other.stream_id)

    def __hash__(self) -> int:
        return hash((self._device, self.stream_id))

    def __repr__(self) -> str:
        return (f"ember.Stream device_type={self._device.type}, device_index="
                f"{self.device_index}, stream_id={self.stream_id}")


class Event:
    """A marker in a stream's work, for synchronisation and timing (``torch.Event``).
    ``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        dev = _resolve(device)
        self._impl = None
        if dev.type == "cuda":
            from . import cuda

            with cuda.device(dev):
                self._impl = cuda.Event(enable_timing, blocking, interprocess)
        self._device = dev
        self._timing = bool(enable_timing)

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def event_id(self) -> int:
        return 0 if self._impl is None else id(self._impl)

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current one)."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS.format(self._device.type))
        self._impl.record(None if stream is None else stream._impl)

    def wait(self, stream=None) -> None:
        """Make ``stream`` (default: the current one) wait for this event."""
        if self._impl is not None:
            self._impl.wait(None if stream is None else stream._impl)

    def query(self) -> bool:
        """Whether the work recorded before the event has finished."""
        return True if self._impl is None else self._impl.query()

    def synchronize(self) -> None:
        """Wait for the event."""
        if self._impl is not None:
            self._impl.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both timed and recorded)."""
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._impl is None or end_event._impl is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._impl.elapsed_time(end_event._impl)

    def ipc_handle(self):
        raise NotImplementedError("ember.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    @classmethod
    def from_ipc_handle(cls, device, handle):
        raise NotImplementedError("ember.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    def __repr__(self) -> str:
        index = -1 if self._impl is None else self._device.index
        return (f"ember.Event device_type={self._device.type}, device_index={index}, "
                f"event_flag={int(self._timing)}, event_id={self.event_id}")


Stream.__module__ = Event.__module__ = "ember"
