"""``ember.device``: a device type plus an optional index, interned so ops compare by identity.

The one home of device logic: the per-thread current device (``with ember.device(...)`` and
``set_default_device`` apply to the calling thread only, as in PyTorch), resolving a device
argument (``resolve_device``, ``canonical_device``), the same-device check, and ``xp``, the
array module of a device, tensor or array. Device *types* (cpu, cuda, meta, test devices)
are registered in ``ember.backends``.
"""

from __future__ import annotations

import threading

import numpy as np

from ._forksafe import reinit_in_child
from .backends import backend_of

__all__ = ["device", "set_default_device", "get_default_device"]

#: interning must not make two objects for one device when threads race to create it
_INTERN_LOCK = reinit_in_child(threading.Lock())
_ndarray = np.ndarray



#: the device types PyTorch's parser lists in its error (Ember makes devices of fewer: the
#: CPU, CUDA, meta and registered backends)
_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, "
                 "lazy, vulkan, mps, meta, hpu, mtia, privateuseone")
#: PyTorch makes a device object of any type its parser lists (``torch.device('mps')`` on a
#: machine without one): only making a tensor there fails (``backends.get_backend``'s error)
_PARSEABLE_TYPES = frozenset(_DEVICE_TYPES.split(", "))

class device:
    """Where a tensor lives, e.g. ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``.

    Instances are interned: equal devices are the same object, so ops compare with ``is``.
    """

    __slots__ = ("type", "index", "__weakref__")
    _cache: dict = {}

    def __new__(cls, type, index: int | None = None):  # PyTorch's name
        if type.__class__ is device:
            if index is not None:
                raise ValueError("device(): index must not be given with a device object")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            # an index alone names the current accelerator's device (PyTorch 2.13)
            from .accelerator import _NONE_AVAILABLE
            from .backends import _REGISTRY
            from .backends import cuda as cuda_backend

            if type < 0:
                raise RuntimeError("Device index must not be negative")
            if "cuda" not in _REGISTRY and not cuda_backend.is_built():
                raise RuntimeError(_NONE_AVAILABLE)
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        key = (type, index)
        dev = cls._cache.get(key)
        if dev is not None:
            return dev
        kind, idx = type, index
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            kind, _, num = type.partition(":")
            if not num.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            idx = int(num)
        if idx is not None and idx < 0:
            raise RuntimeError("Device index must not be negative")
        from .backends import _known_type

        if not _known_type(kind) and kind not in _PARSEABLE_TYPES:
            raise RuntimeError(f"Expected one of {_DEVICE_TYPES} device type at start of device "
                               f"string: {kind}")
        if kind == "cpu" and idx not in (None, 0):
            raise RuntimeError(f"CPU device index must be -1 or zero, got {idx}")
        with _INTERN_LOCK:
            dev = cls._cache.get((kind, idx))
            if dev is None:
                dev = object.__new__(cls)
                dev.type = kind
                dev.index = idx
                cls._cache[(kind, idx)] = dev
            cls._cache[key] = dev
        return dev

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        # devices are interned: equal ones are one object. As in PyTorch, a device never
        # equals a string (``t.device == "cpu"`` is False there: a PyTorch program that
        # compares so takes the same branch here; compare ``t.device.type == "cpu"``)
        if isinstance(other, device):
            return self is other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        st = _CURRENT
        st.stack = st.stack + (self,)
        st.device = self
        return self

    def __exit__(self, *exc):
        st = _CURRENT
        st.stack = st.stack[:-1]
        st.device = st.stack[-1] if st.stack else st.default
        return False


class _CurrentDevice(threading.local):
    """This thread's device for factories called without ``device=``: the innermost
    ``with ember.device(...)``, else ``set_default_device``'s, else None (the CPU)."""

    device = None
    stack: tuple = ()  # devices entered with ``with``, innermost last
    default = None  # set_default_device


_CURRENT = _CurrentDevice()


def set_default_device(device) -> None:
    """Make ``device`` the default for factories called without ``device=`` in this thread
    (``None`` restores the CPU). As in PyTorch, it is per thread; ``with ember.device(...)``
    still takes precedence inside its block."""
    st = _CURRENT
    st.default = None if device is None else to_device(device)
    if not st.stack:
        st.device = st.default


def get_default_device():
    """The device that ``ember.empty(2)`` would use in this thread (e.g. ``device(type='cpu')``)."""
    dev = _CURRENT.device
    return CPU if dev is None else canonical_device(dev)


def to_device(d) -> device:
    """Normalise a device argument (device, str, int) to an interned ``device``."""
    return d if d.__class__ is device else device(d)


def canonical_device(dev: device) -> device:
    """A device with its index filled in (``cuda`` -> ``cuda:0``), as tensors carry."""
    if dev.index is None and dev.type != "cpu":
        idx = backend_of(dev).default_index(None)
        if idx is not None:
            return device(dev.type, idx)
    return dev



def resolve_device(dev) -> device:
    """``dev`` as an interned device with its index filled in; ``None`` is the current one
    in this thread (the innermost ``with ember.device(...)``, else ``set_default_device``'s,
    else the CPU)."""
    if dev is None:
        dev = _CURRENT.device
        if dev is None:
            return CPU
    return canonical_device(dev if dev.__class__ is device else device(dev))


def xp_of(obj):
    """The array module (``numpy``, ``cupy``, a test device's) of a device, a tensor (its
    device's) or a bare array (NumPy's, else the registered backend whose ``xp`` made it).

    The one "which array module" helper: kernels call ``xp_of(t).exp(...)``, never ``np.*`` on a
    tensor's array, so that the same code runs on every device."""
    cls = obj.__class__
    if cls is _ndarray:
        return np
    dev = obj if cls is device else getattr(obj, "_device", None)
    if dev is not None:
        return np if dev.type == "cpu" else backend_of(dev).xp
    if isinstance(obj, np.generic):
        return np
    from .backends import _REGISTRY

    for backend in _REGISTRY.values():
        nd = getattr(backend.xp, "ndarray", None)
        if nd is not None and nd is not _ndarray and isinstance(obj, nd):
            return backend.xp
    raise TypeError(f"no registered backend owns arrays of type {type(obj).__name__}")


def fused_kernel(dev: device, name: str):
    """The backend's fused kernel ``name`` for arrays of ``dev`` (CuPy's fused softmax, layer
    norm, GELU, Adam update: ``ember.cuda._kernels``), or None: on the CPU, and on backends
    without one, the op runs its array-module code."""
    if dev.type == "cpu":
        return None
    return backend_of(dev).kernels.get(name)


def data_dependent_error(op: str) -> NotImplementedError:
    """What an op whose output shape depends on its input's values raises on the meta device
    (``ember._meta``: no values), as PyTorch has no meta kernel for it either."""
    return NotImplementedError(
        f"{op}: the output's shape depends on the values, and meta tensors have none "
        "(PyTorch has no meta kernel for it either); run it on a device with data")


def refuse_meta(t, op: str) -> None:
    """Raise :func:`data_dependent_error` when ``t`` is a meta tensor."""
    if t._device.type == "meta":
        raise data_dependent_error(op)


def _device_error(a, b):
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a} and {b}!")


def check_same_device(*tensors):
    """The common device of ``tensors`` (``None`` entries skipped), with PyTorch's error if
    they differ."""
    dev = None
    for t in tensors:
        if t is None:
            continue
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            raise _device_error(dev, t._device)
    return dev


CPU = device("cpu")
