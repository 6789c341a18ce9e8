"""``ember.cuda``: CUDA devices through CuPy, like ``torch.cuda``.

Without CuPy or a GPU, ``is_available()`` is False, ``device_count()`` is 0, the memory
queries answer 0, and anything that needs a device (``current_device()``, a tensor on
``'cuda'``) raises an AssertionError that names the missing extra:
``pip install 'ember-core[cuda]'``. All CuPy calls go through ``ember.backends.cuda``.
"""

from __future__ import annotations

import contextlib
import secrets

from .. import _random, _tensor_types
from .._device import device as _device_cls
from .._errors import OutOfMemoryError
from ..backends import get_backend

__all__ = ["OutOfMemoryError", "is_available", "is_initialized", "init", "device_count",
           "current_device",
           "set_device", "device", "device_of", "synchronize", "get_device_name",
           "get_device_capability", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
           "set_rng_state_all", "empty_cache", "memory_allocated", "memory_reserved",
           "mem_get_info", "Stream", "Event", "current_stream", "default_stream", "stream"]


def _backend():
    """The CUDA backend; an AssertionError saying how to install it when there is none."""
    return get_backend("cuda")


def _backend_or_none():
    try:
        be = get_backend("cuda")
    except AssertionError:
        return None
    return be if be.is_available() else None


def is_available() -> bool:
    """Whether CuPy imports and sees at least one CUDA device."""
    return _backend_or_none() is not None


def is_initialized() -> bool:
    """Whether the CUDA backend is up (CuPy initialises lazily; same as ``is_available``)."""
    return is_available()


def init() -> None:
    """Initialise CUDA; raises when it is not available."""
    _backend()


def device_count() -> int:
    """The number of CUDA devices (0 without CuPy or a GPU)."""
    be = _backend_or_none()
    return 0 if be is None else be.device_count()


def current_device() -> int:
    """The index of the current CUDA device."""
    return _backend().default_index(None)


def _index(dev=None) -> int:
    """A device argument (None, int, ``'cuda:1'``, ``ember.device``) as a CUDA index."""
    if dev is None:
        return current_device()
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    dev = _device_cls(dev)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_device() if dev.index is None else dev.index


def set_device(device) -> None:
    """Make ``device`` the current CUDA device (a negative index is a no-op)."""
    idx = _index(device)
    if idx >= 0:
        _backend().set_device(idx)


class device:
    """Context manager that makes ``device`` the current CUDA device inside the block."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (CPU: no-op)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None) -> None:
    """Wait until every kernel queued on ``device`` (default: current) has finished."""
    _backend().synchronize(_index(device))


def get_device_name(device=None) -> str:
    """The name of a CUDA device (default: current)."""
    return _backend().device_name(_index(device))


def get_device_capability(device=None) -> tuple:
    """The ``(major, minor)`` compute capability of a CUDA device."""
    return _backend().capability(_index(device))


# -- memory ----------------------------------------------------------------------------------

def memory_allocated(device=None) -> int:
    """Bytes of device memory held by tensors (0 without CUDA)."""
    be = _backend_or_none()
    return 0 if be is None else be.memory_allocated(_index(device))


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator, in use or cached (0 without CUDA)."""
    be = _backend_or_none()
    return 0 if be is None else be.memory_reserved(_index(device))


def empty_cache() -> None:
    """Return cached, unused device memory to the driver (no-op without CUDA)."""
    be = _backend_or_none()
    if be is not None:
        be.empty_cache()


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of device memory."""
    return _backend().mem_get_info(_index(device))


# -- random ----------------------------------------------------------------------------------

def _generator(device=None):
    return _random.default_generator_for(_device_cls("cuda", _index(device)))


def manual_seed(seed) -> None:
    """Seed the current CUDA device's default generator (without CUDA: remembered for
    later)."""
    seed = int(seed)
    if is_available():
        _generator().manual_seed(seed)
    else:
        _random.seed_devices(seed, "cuda")


def manual_seed_all(seed) -> None:
    """Seed the default generators of every CUDA device."""
    _random.seed_devices(int(seed), "cuda")


def seed() -> None:
    """Seed the current CUDA device's generator non-deterministically."""
    manual_seed(secrets.randbits(63))


def seed_all() -> None:
    """Seed every CUDA device's generator with one non-deterministic seed."""
    manual_seed_all(secrets.randbits(63))


def initial_seed() -> int:
    """The initial seed of the current CUDA device's generator."""
    return _generator().initial_seed()


def get_rng_state(device="cuda"):
    """The state of a CUDA device's generator as a uint8 tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a CUDA device's generator from ``get_rng_state``."""
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    """The generator states of every CUDA device."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restore every CUDA device's generator."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# the legacy CUDA tensor types: ember.cuda.FloatTensor, ... (isinstance checks dtype + device)
globals().update(_tensor_types.make_types("cuda", __name__))


def __getattr__(name: str):
    if name == "default_generators":
        return tuple(_generator(i) for i in range(device_count()))
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")


# -- streams and events ----------------------------------------------------------------------

class Stream:
    """A CUDA stream (a CuPy stream underneath); ``with stream:`` makes it current."""

    def __init__(self, device=None, priority: int = 0, _raw=None):
        idx = _index(device)
        self.device = _device_cls("cuda", idx)
        self._raw = _raw if _raw is not None else _backend().new_stream(idx, priority)

    @property
    def cuda_stream(self) -> int:
        return self._raw.ptr

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
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device))


class Event:
    """A CUDA event, for synchronisation and timing between streams."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self._raw = _backend().new_event(enable_timing, blocking)

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
        return _backend().elapsed_ms(self._raw, end_event._raw)


def current_stream(device=None) -> Stream:
    """The current stream of a CUDA device."""
    idx = _index(device)
    return Stream(idx, _raw=_backend().current_stream(idx))


def default_stream(device=None) -> Stream:
    """The default (null) stream of a CUDA device."""
    idx = _index(device)
    return Stream(idx, _raw=_backend().null_stream(idx))


@contextlib.contextmanager
def stream(s):
    """Context manager making ``s`` the current stream (``None``: no change)."""
    if s is None:
        yield
        return
    with s:
        yield
