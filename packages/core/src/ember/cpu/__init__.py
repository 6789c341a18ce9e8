"""``ember.cpu``: the CPU under the names of ``ember.cuda``, for device-agnostic code, as
``torch.cpu``. The CPU is always there, runs every op at once, and has one device and one
stream, so these calls answer the obvious and do nothing else."""

from __future__ import annotations

from contextlib import AbstractContextManager

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available() -> bool:
    """True: the CPU is always available."""
    return True


def is_initialized() -> bool:
    """True: the CPU needs no initialisation."""
    return True


def synchronize(device=None) -> None:
    """Wait for the CPU's work: it is done already (``device`` is ignored)."""


def current_device() -> str:
    """``'cpu'``."""
    return "cpu"


def set_device(device) -> None:
    """Nothing to do: there is one CPU device."""


def device_count() -> int:
    """1."""
    return 1


class Stream:
    """The CPU's one stream (it exists for device-agnostic code)."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """A CPU event: always reached."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_default_stream = Stream()
_current = [_default_stream]


def current_stream(device=None) -> Stream:
    """The current CPU stream (``device`` is ignored)."""
    return _current[0]


class StreamContext(AbstractContextManager):
    """Context manager making ``stream`` the current CPU stream (``None``: no change)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self):
        if self.stream is None:
            return
        self.prev_stream = _current[0]
        _current[0] = self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return
        _current[0] = self.prev_stream


def stream(stream) -> AbstractContextManager:
    """``with ember.cpu.stream(s):`` makes ``s`` current inside the block."""
    return StreamContext(stream)


def __getattr__(name: str):
    if name == "amp":  # autocast and GradScaler under PyTorch's older names, on first use
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
