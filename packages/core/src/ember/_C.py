"""``torch._C``: the few names of PyTorch's C extension that ordinary model code reaches for.

``torch._C`` is PyTorch's binding layer, not API, but libraries touch a handful of its names
(timm's optimizers probe ``torch._C._CudaDeviceProperties`` and
``_get_privateuse1_backend_name``, its ``timm.utils.jit`` sets the TorchScript fuser knobs,
traced code asks ``_get_tracing_state``, loggers call ``_log_api_usage_once``, kornia's
checks ask ``_are_functorch_transforms_active`` and read the transform stack in
``_functorch``, ``ember._functorch._interpreter``). Under
``import ember as torch`` those lookups land here: each name below does what PyTorch's does
as far as Ember has the concept, and a name that is not here raises ``AttributeError`` as a
missing ``torch._C`` attribute does (so ``getattr(torch._C, name, None)`` probes work).

The TorchScript executor and fuser switches keep their values and return what PyTorch's
return, but change nothing: ``ember.jit`` traces into ``ember.export`` programs, which have no
profiling executor or fusers to configure.
"""

from __future__ import annotations

from . import overrides as _overrides
from ._device import device as _device_cls
from ._random import Generator
from ._tensor import Tensor
from .autograd.grad_mode import GRAD

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "Generator", "TensorBase"]

#: ``torch._C.TensorBase`` (and its old name ``_TensorBase``): the class of every tensor
TensorBase = Tensor
_TensorBase = Tensor
#: ``torch._C._TensorMeta``: the metaclass of the tensor classes (Lightning imports it for
#: annotations, ``lightning.fabric.utilities.load``); Ember's tensors are plain classes
_TensorMeta = type(Tensor)


def _lazy_class(name: str):
    """``Tag`` and TorchScript's type classes (``DeviceObjType``, ``TensorType``, ...),
    imported on first use, or None: ``torch.X`` and ``torch._C.X`` are one object, so
    ``ember.__getattr__`` asks here too."""
    if name == "Tag":
        from ._library.tags import Tag

        return Tag
    if name.endswith("Type"):
        from .jit._types import JIT_TYPE_NAMES, jit_type

        if name in JIT_TYPE_NAMES:
            return jit_type(name)
    return None


def __getattr__(name: str):
    if name == "_functorch":  # the transform stack (kornia, torch._functorch's helpers)
        from ._functorch import _interpreter

        return _interpreter
    cls = _lazy_class(name)
    if cls is None:
        raise AttributeError(f"module 'ember._C' has no attribute '{name}'")
    return cls


def _are_functorch_transforms_active() -> bool:
    """Whether a ``vmap``, ``grad``, ``jvp``... transform is running on this thread."""
    from ._functorch._interpreter import are_transforms_active

    return are_transforms_active()


def _get_tracing_state():
    """None outside a trace; inside ``ember.jit.trace`` / ``ember.export`` a truthy marker
    (PyTorch returns its TracingState object there)."""
    from .export._capture import is_tracing

    return True if is_tracing() else None


def _is_tracing() -> bool:
    from .export._capture import is_tracing

    return is_tracing()


_AUTOCAST_STATE: list = []


def _is_any_autocast_enabled() -> bool:
    """Whether autocast is on for any device type in this thread (PyTorch's recurrent layers
    skip their input-dtype check then). Cheap: recurrent cells ask every step."""
    if not _AUTOCAST_STATE:
        from .amp.autocast_mode import _STATE

        _AUTOCAST_STATE.append(_STATE)
    return _AUTOCAST_STATE[0].mode is not None


def _log_api_usage_once(event: str) -> None:
    """PyTorch's usage logging hook: nothing is logged."""
    if not isinstance(event, str):
        raise TypeError("bad argument type for built-in operation")


def _set_grad_enabled(enabled: bool) -> None:
    """Switch gradient recording on or off for this thread (``torch.set_grad_enabled`` as a
    plain call)."""
    if not isinstance(enabled, bool):
        raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(enabled).__name__}")
    GRAD.enabled = enabled


def _get_accelerator(check: bool = False):
    """The device of the current accelerator, the CPU device when there is none (what
    ``torch.accelerator.current_accelerator()`` wraps; HuggingFace transformers picks its
    device mesh's type with it)."""
    from ._device import device
    from .accelerator import current_accelerator

    acc = current_accelerator(check_available=True)
    return acc if acc is not None else device("cpu")


def _get_privateuse1_backend_name() -> str:
    return "privateuseone"


def _get_cudnn_enabled() -> bool:
    from .backends import cudnn

    return bool(cudnn.enabled)


def _set_cudnn_enabled(enabled: bool) -> None:
    from .backends import cudnn

    cudnn.enabled = bool(enabled)


# -- TorchScript's executor and fuser switches (kept, returned, not acted on) --------------------

_JIT = {"profiling_executor": True, "profiling_mode": True, "fuse_cpu": True, "fuse_gpu": True,
        "texpr": True, "nvfuser": False, "autocast": True}


def _swap(key: str, value: bool) -> bool:
    old, _JIT[key] = _JIT[key], bool(value)
    return old


def _jit_set_profiling_executor(enabled: bool) -> bool:
    """Returns the previous setting, as PyTorch's does."""
    return _swap("profiling_executor", enabled)


def _jit_set_profiling_mode(enabled: bool) -> bool:
    """Returns the previous setting, as PyTorch's does."""
    return _swap("profiling_mode", enabled)


def _jit_override_can_fuse_on_cpu(enabled: bool) -> None:
    _swap("fuse_cpu", enabled)


def _jit_override_can_fuse_on_gpu(enabled: bool) -> None:
    _swap("fuse_gpu", enabled)


def _jit_can_fuse_on_cpu() -> bool:
    return _JIT["fuse_cpu"]


def _jit_can_fuse_on_gpu() -> bool:
    return _JIT["fuse_gpu"]


def _jit_set_texpr_fuser_enabled(enabled: bool) -> None:
    _swap("texpr", enabled)


def _jit_texpr_fuser_enabled() -> bool:
    return _JIT["texpr"]


def _jit_set_nvfuser_enabled(enabled: bool) -> bool:
    return _swap("nvfuser", enabled)


def _jit_set_autocast_mode(enabled: bool) -> bool:
    """TorchScript's autocast pass switch (PyTorch's tuning guide turns it off before tracing
    under autocast); returns the previous setting. Ember's capture records autocast's casts
    as graph nodes whichever the setting: what PyTorch traces with it off."""
    return _swap("autocast", enabled)


def _jit_get_autocast_mode() -> bool:
    return _JIT["autocast"]


# -- __torch_function__ (ember.overrides keeps the state; these are its functions, or read it) --

class _NN:
    """``torch._C._nn``: the names libraries call directly (``_parse_to``: Lightning's
    ``DeviceDtypeModuleMixin.to``, HuggingFace accelerate)."""

    @staticmethod
    def _parse_to(*args, **kwargs):
        """``Tensor.to``/``Module.to``'s arguments as PyTorch's parser gives them:
        ``(device, dtype, non_blocking, memory_format)``, None where not given."""
        from ._tensor import _parse_to

        device, dtype, _ = _parse_to(None, *args, **kwargs)
        # the overloads' positional bools: (device, dtype, non_blocking, copy) or
        # (dtype|tensor, non_blocking, copy)
        first = args[0] if args else None
        bools = list(args[1:] if first is not None and first.__class__ is not str
                     and not isinstance(first, (int, _device_cls)) else args[2:])
        if "copy" in kwargs or len(bools) > 1:
            raise RuntimeError(".to() does not accept copy argument")
        non_blocking = kwargs.get("non_blocking", bools[0] if bools else False)
        return device, dtype, non_blocking, kwargs.get("memory_format")


_nn = _NN()


DisableTorchFunction = _overrides.DisableTorchFunction
DisableTorchFunctionSubclass = _overrides.DisableTorchFunctionSubclass
_disabled_torch_function_impl = _overrides._disabled_torch_function_impl
_has_torch_function = _overrides.has_torch_function
_has_torch_function_unary = _overrides.has_torch_function_unary
_has_torch_function_variadic = _overrides.has_torch_function_variadic
_skip_one_hop_torch_function = _overrides._skip_one_hop_torch_function


def _is_torch_function_enabled() -> bool:
    """False inside ``DisableTorchFunction`` or ``DisableTorchFunctionSubclass`` (modes still
    run in the latter)."""
    state = _overrides._STATE
    return state.all_disabled is not True and not state.subclass_disabled


def _is_torch_function_all_disabled() -> bool:
    """True inside ``DisableTorchFunction``."""
    return _overrides._STATE.all_disabled is True


def _user_function_modes() -> list:
    """This thread's ``TorchFunctionMode``s, less the internal one under them while a
    ``TorchDispatchMode`` is on (``ember.utils._python_dispatch``)."""
    return [m for m in _overrides._STATE.modes if not getattr(m, "_ember_internal", False)]


def _is_torch_function_mode_enabled() -> bool:
    """Whether a ``TorchFunctionMode`` is on this thread's stack and not disabled."""
    return bool(_user_function_modes()) and _overrides._STATE.all_disabled is not True


def _len_torch_function_stack() -> int:
    """How many ``TorchFunctionMode``s this thread has entered (a mode's own handler does
    not count itself: it is off while it runs)."""
    return len(_user_function_modes())


_disabled_torch_dispatch_impl = _overrides._disabled_torch_dispatch_impl


def _len_torch_dispatch_stack() -> int:
    """How many ``TorchDispatchMode``s this thread has on (``ember.utils._python_dispatch``)."""
    from .utils import _python_dispatch

    return _python_dispatch._len_torch_dispatch_stack()


def _get_dispatch_stack_at(i: int):
    """This thread's ``i``-th ``TorchDispatchMode``, outermost first."""
    from .utils import _python_dispatch

    return _python_dispatch._STATE.stack[i]


def _push_on_torch_dispatch_stack(mode) -> None:
    from .utils import _python_dispatch

    _python_dispatch._push_mode(mode)


def _pop_torch_dispatch_stack(mode_key=None):
    from .utils import _python_dispatch

    return _python_dispatch._pop_mode(mode_key)


def _get_dispatch_mode(key=None):
    """None: Ember's dispatch modes have no keys (``_get_current_dispatch_mode`` gives the
    innermost one)."""
    return None


class PyTorchFileReader:
    """``torch.PyTorchFileReader`` (``torch._C.PyTorchFileReader``): the records of a zip
    checkpoint by name, relative to its archive folder (``"data.pkl"``, ``"data/0"``).
    Lightning's ``_lazy_load`` (FSDP checkpoints) reads storages through it."""

    def __init__(self, file):
        from .serialization._zip import ZipReader

        if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
            import os

            self._file = open(os.fspath(file), "rb")
            self._owned = True
        else:
            self._file, self._owned = file, False
        self._reader = ZipReader(self._file)

    def _names(self) -> list:
        cut = len(self._reader.prefix) + 1
        return [name[cut:] for name in self._reader.entries]

    def get_all_records(self) -> list:
        return self._names()

    def has_record(self, name: str) -> bool:
        return self._reader.record_name(name) in self._reader.entries

    def get_record(self, name: str) -> bytes:
        if not self.has_record(name):
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               "found")
        return self._reader.read_record(name)

    def get_record_size(self, name: str) -> int:
        return self._reader.entries[self._reader.record_name(name)].file_size

    def get_record_offset(self, name: str) -> int:
        return self._reader._starts[self._reader.record_name(name)]

    def get_storage_from_record(self, name: str, numel: int, dtype):
        """The record ``name`` (``"data/<key>"``) as a 1-D tensor of ``numel`` ``dtype``
        elements (PyTorch returns a tensor whose storage is the record)."""
        from . import _dtype as _dtypes
        from ._factory import from_numpy
        from ._storage import UntypedStorage
        from .serialization._pickle import from_raw, storage_np_dtype

        key = name[len("data/"):] if name.startswith("data/") else name
        # ``UntypedStorage`` (what torch.serialization and Lightning pass): numel is bytes
        dtype = _dtypes.uint8 if dtype is UntypedStorage else _dtypes.to_dtype(dtype)
        raw = self._reader.read_storage(key, storage_np_dtype(dtype), numel)
        self._reader.verify()
        return from_numpy(from_raw(raw, dtype))

    def serialization_id(self) -> str:
        return self._reader.read_text(".data/serialization_id", "")

    def __del__(self):
        if getattr(self, "_owned", False):
            self._file.close()
