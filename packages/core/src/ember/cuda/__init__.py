"""``ember.cuda``: CUDA devices through CuPy, like ``torch.cuda``.

Without CuPy or a GPU, ``is_available()`` is False, ``device_count()`` is 0, the memory
queries answer 0, and anything that needs a device (``current_device()``, a tensor on
``'cuda'``) raises an AssertionError that names the missing extra:
``pip install 'ember-core[cuda]'``. CuPy is reached through the backend
(``ember.backends.cuda``); nothing here imports it.

The parts, as in ``torch.cuda``: ``memory`` (the memory pool's statistics), ``streams``
(streams and events); the fused kernels that ops run on CUDA tensors are in ``_kernels``.
"""

from __future__ import annotations

import secrets

from .. import _random, _tensor_types
from .._device import device as _device_cls
from .._errors import OutOfMemoryError
from . import graphs, memory, streams
from ._utils import backend as _backend
from ._utils import backend_or_none as _backend_or_none
from ._utils import current_index as _current_index
from ._utils import device_index as _index
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from .memory import (
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = ["OutOfMemoryError", "is_available", "is_initialized", "init", "device_count",
           "current_device",
           "set_device", "device", "device_of", "synchronize", "get_device_name",
           "get_device_capability", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all",
           "set_rng_state_all", "memory", "streams", "graphs", "get_device_properties",
           "is_bf16_supported", *graphs.__all__, *memory.__all__, *streams.__all__]


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
    return _current_index()


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


class _CudaDeviceProperties:
    """A CUDA device's properties (``torch.cuda.get_device_properties``), from CUDA's
    ``cudaDeviceProp`` as CuPy reports it."""

    def __init__(self, props: dict) -> None:
        name = props.get("name", b"")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.major = int(props.get("major", 0))
        self.minor = int(props.get("minor", 0))
        self.total_memory = int(props.get("totalGlobalMem", 0))
        self.multi_processor_count = int(props.get("multiProcessorCount", 0))
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.max_threads_per_multi_processor = int(props.get("maxThreadsPerMultiProcessor", 0))
        self.warp_size = int(props.get("warpSize", 32))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))
        self.regs_per_multiprocessor = int(props.get("regsPerMultiprocessor", 0))
        self.shared_memory_per_block = int(props.get("sharedMemPerBlock", 0))
        self.shared_memory_per_multiprocessor = int(props.get("sharedMemPerMultiprocessor", 0))
        self.gcnArchName = "NVIDIA" if self.name else ""

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The properties of a CUDA device (default: current): ``name``, ``major``/``minor``,
    ``total_memory``, ``multi_processor_count``, ``warp_size``, ``L2_cache_size``, ..."""
    be = _backend()
    idx = _index(device)
    if idx < 0 or idx >= device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(be.xp.cuda.runtime.getDeviceProperties(idx))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device computes bfloat16 (False without CUDA). Ember's
    bfloat16 kernels compute in float32 on every device, so any CUDA device does; without
    ``including_emulation``, only compute capability 8.0 and above (native bfloat16)."""
    if not is_available():
        return False
    if including_emulation:
        return True
    return get_device_capability()[0] >= 8


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
    if name == "amp":  # autocast and GradScaler under PyTorch's older names, on first use
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
