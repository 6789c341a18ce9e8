"""Process-wide settings, as PyTorch's top-level functions: threads, matmul precision,
determinism, warnings, denormals; what Ember is built with (``has_lapack``, ...); and the small
questions about objects (``is_tensor``, ``numel``, ``typename``, ``get_device``).

What each setting does in Ember is said in its docstring: the thread count is NumPy's BLAS
thread pool (through ``threadpoolctl``), the rest are stored and read back where Ember has
nothing to switch.
"""

from __future__ import annotations

import warnings

from . import _parallel
from ._front import front as _front

__all__ = [
    "set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
    "set_float32_matmul_precision", "get_float32_matmul_precision",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
    "get_deterministic_debug_mode",
    "is_tensor", "is_storage", "numel", "is_floating_point", "is_complex", "is_nonzero",
    "typename", "init_num_threads", "thread_safe_generator", "set_warn_always",
    "is_warn_always_enabled", "set_flush_denormal", "get_device", "is_signed",
    "get_device_module", "has_lapack", "has_spectral",
]


def _check_positive_int(fn: str, n) -> int:
    """PyTorch's argument checks for a thread count."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


# -- threads -------------------------------------------------------------------------------

def _blas_controller():
    """threadpoolctl's view of the BLAS libraries loaded now (fresh: libraries load late)."""
    import threadpoolctl

    return threadpoolctl.ThreadpoolController().select(user_api="blas")


def blas_info() -> list[dict]:
    """threadpoolctl's description of each BLAS library loaded (NumPy's, and any other):
    ``internal_api`` ('openblas', 'mkl', 'blis'), ``num_threads``, ``threading_layer``."""
    return _blas_controller().info()


def set_num_threads(num_threads: int, /) -> None:
    """Set the number of threads Ember's CPU kernels use: the size of NumPy's BLAS pool.

    Two pools take this count, like ``torch.set_num_threads``: the BLAS behind matrix
    products and convolutions (OpenBLAS, MKL or BLIS, through ``threadpoolctl``), and
    Ember's own intra-op pool, which runs the large elementwise and row-wise kernels (GELU,
    attention's softmax, layer norm) in pieces at once (``ember._parallel``). The count
    holds for the whole process, except with a BLAS threaded by OpenMP, whose limit is per
    calling thread (``ember.backends.openmp.is_available()`` says which).
    """
    n = _check_positive_int("set_num_threads", num_threads)
    _num_threads_set[0] = n
    _parallel.set_num_threads(n)
    for lib in _blas_controller().lib_controllers:
        lib.set_num_threads(n)
        # threadpoolctl lets only the first thread that sets a shared (non-OpenMP) pool
        # change it again; give the pool back so that any thread may set it next time.
        release = getattr(type(lib), "clear_controlling_thread", None)
        if release is not None:
            release()


_num_threads_set: list = [None]


def init_num_threads() -> None:
    """Apply the thread count given to ``set_num_threads`` in the calling thread.

    Call it first thing in a new thread, as in PyTorch. It matters only with a BLAS threaded
    by OpenMP, whose limit is per thread; a pool shared by the process already has the
    count. Without an earlier ``set_num_threads`` it does nothing.
    """
    n = _num_threads_set[0]
    if n is not None:
        set_num_threads(n)


def thread_safe_generator():
    """The generator of the calling DataLoader thread worker, or None (then the global
    generator is used), as ``torch.random.thread_safe_generator``.

    Ember's DataLoader workers are processes, each seeded apart, so this is None in them and
    in the main process alike.
    """
    from .data import get_worker_info

    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread":
        rng = getattr(info, "rng", None)
        if rng is not None:
            return rng.torch_generator
    return None


def get_num_threads() -> int:
    """The number of threads of NumPy's BLAS pool in force now (1 when NumPy has no BLAS)."""
    counts = [lib["num_threads"] for lib in blas_info() if lib["num_threads"] is not None]
    return max(counts, default=1)


_interop_threads = [1]


def set_num_interop_threads(num_threads: int, /) -> None:
    """Store the number of inter-op threads (``torch.set_num_interop_threads``).

    Ember has no inter-op thread pool (ops run one after another in the calling thread),
    so the number is only stored for ``get_num_interop_threads``; PyTorch's rule that it can
    be set only once, before any parallel work, has no reason to hold here and does not.
    """
    _interop_threads[0] = _check_positive_int("set_num_interop_threads", num_threads)


def get_num_interop_threads() -> int:
    """The number of inter-op threads: 1 (the calling thread) unless set otherwise."""
    return _interop_threads[0]


# -- float32 matmul precision ----------------------------------------------------------------

_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision set by ``set_float32_matmul_precision`` ('highest')."""
    return _matmul_precision[0]


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix products: 'highest', 'high' or 'medium'.

    On the CPU this changes nothing: NumPy's BLAS always multiplies float32 in float32.
    On CUDA, 'high' and 'medium' let CuPy's float32 products use TF32 tensor cores (GPUs of
    compute capability 8.0 and newer), as ``torch.backends.cuda.matmul.allow_tf32 = True``
    does; 'highest' turns that off. Another string warns and changes nothing, as in PyTorch.
    """
    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision[0] = precision
    _apply_matmul_precision()


def _apply_matmul_precision() -> None:
    """Tell the CUDA backend, when there is one, whether float32 products may use TF32."""
    from . import backends

    if "cuda" in backends.available_types():
        backends.get_backend("cuda").allow_tf32_matmul(_matmul_precision[0] != "highest")


# -- determinism -------------------------------------------------------------------------------

#: ``fill``: ``ember.utils.deterministic.fill_uninitialized_memory`` (in deterministic mode,
#: ``empty`` and its kin fill their memory: NaN for floating and complex dtypes, the largest
#: value for integers and bool, as PyTorch does)
_deterministic = {"mode": False, "warn_only": False, "fill": True}


def fill_value_of_uninitialized(np_dtype):
    """What deterministic mode writes into new uninitialised memory of ``np_dtype``, or None
    when it writes nothing (the mode or ``fill_uninitialized_memory`` is off)."""
    if not (_deterministic["mode"] and _deterministic["fill"]):
        return None
    import numpy as np

    kind = np.dtype(np_dtype).kind
    if kind in "fc" or np.dtype(np_dtype).name in ("bfloat16", "float8_e4m3fn",
                                                    "float8_e5m2"):
        return float("nan")
    if kind == "b":
        return True
    if kind in "iu":
        return np.iinfo(np_dtype).max
    return float("nan")  # (ml_dtypes' other floating types)


def _check_bool(fn: str, name: str, value, position: str = "") -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}'{position} must be bool, not "
                        f"{type(value).__name__}")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (stored; ``are_deterministic_algorithms_enabled``).

    Ember's CPU kernels are deterministic: NumPy and its BLAS give the same result for the
    same input, every run. On CUDA, accumulating scatters (``scatter_add``, ``index_put``
    with ``accumulate=True``, the backward of advanced indexing) use CuPy's atomic adds,
    whose float sums can differ between runs; in this mode they sum in index order instead
    (one pass per repetition of the most repeated index: slower, and equal to the CPU's).
    """
    _check_bool("use_deterministic_algorithms", "mode", mode, " (position 1)")
    _check_bool("use_deterministic_algorithms", "warn_only", warn_only)
    _deterministic["mode"] = mode
    _deterministic["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in force."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with ``warn_only=True``."""
    return _deterministic["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """``use_deterministic_algorithms`` by level: 'default'/0 off, 'warn'/1, 'error'/2."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The level of ``set_deterministic_debug_mode``: 0 off, 1 warn, 2 error."""
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# -- warnings and denormals ------------------------------------------------------------------

_warn_always = [False]


def set_warn_always(b: bool, /) -> None:
    """With True, the warnings that Ember gives once per process (like ``frombuffer``'s about
    a read-only buffer) are given every time; False restores the default."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is in force."""
    return _warn_always[0]


def set_flush_denormal(mode: bool) -> bool:
    """Ask the CPU to flush denormal floats to zero; returns whether that took effect.

    Always False in Ember: NumPy offers no control of the CPU's floating-point flags, so
    denormals stay as they are. PyTorch returns False the same way on a CPU without the
    needed instructions.
    """
    if not isinstance(mode, bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


# -- what Ember is built with ----------------------------------------------------------------

# ``ember.has_mkl`` and ``ember.has_openmp`` are answered on first use by ``ember.__getattr__``
# (``ember.backends.mkl/openmp.is_available()``: asking threadpoolctl costs time at import).

#: LAPACK: ``ember.linalg`` runs on NumPy's LAPACK (lapack_lite when NumPy has no other).
has_lapack = True
#: spectral ops (FFT): not in Ember yet.
has_spectral = False


# -- questions about objects -------------------------------------------------------------------

def _require_tensor(fn: str, obj) -> None:
    from ._tensor import Tensor

    if not isinstance(obj, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(obj).__name__}")


def is_tensor(obj, /) -> bool:
    """Whether ``obj`` is an Ember tensor (a ``Parameter`` too)."""
    from ._tensor import Tensor

    return isinstance(obj, Tensor)


def is_storage(obj, /) -> bool:
    """Whether ``obj`` is a storage: an ``ember.UntypedStorage`` or ``TypedStorage``, or the
    ``ember.serialization.Storage`` that ``load``'s ``map_location`` callables receive."""
    from ._storage import TypedStorage, UntypedStorage
    from .serialization import Storage

    return isinstance(obj, (UntypedStorage, TypedStorage, Storage))


def _tensor_question(name: str, returns: type, doc: str):
    """``ember.<name>(input)``: the Tensor method ``name`` as a function (PyTorch's parameter
    name ``input``, and the NumPy names of its argument parser: ``x=``), with PyTorch's error
    for anything but a tensor."""
    def question(input):
        _require_tensor(name, input)
        return getattr(input, name)()

    question.__name__ = question.__qualname__ = name
    question.__doc__ = doc
    question.__annotations__ = {"return": returns.__name__}
    return _front(question)


numel = _tensor_question("numel", int, "The number of elements of ``input``.")
is_floating_point = _tensor_question("is_floating_point", bool,
                                     "Whether ``input``'s dtype is a floating-point type.")
is_complex = _tensor_question("is_complex", bool,
                              "Whether ``input``'s dtype is a complex type.")
get_device = _tensor_question("get_device", int,
                              "The index of ``input``'s device: -1 on the CPU.")
is_signed = _tensor_question("is_signed", bool, "Whether ``input``'s dtype is signed (floats "
                             "and signed integers; not bool, uint8).")


def is_nonzero(input) -> bool:
    """Whether the single element of ``input`` is nonzero (NaN counts as nonzero)."""
    _require_tensor("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


is_nonzero = _front(is_nonzero)  # PyTorch's NumPy keyword names: is_nonzero(x=t)


def typename(obj, /) -> str:
    """The qualified name of ``obj``'s type; a tensor's legacy type ('ember.FloatTensor')."""
    from ._tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def get_device_module(device=None):
    """The module of a device type (``ember.cuda`` for ``'cuda:0'``, ``ember.cpu``); with no
    argument, the current accelerator's, else ``ember.cpu``."""
    import sys

    from ._device import device as _device_cls

    if isinstance(device, _device_cls):
        name = device.type
    elif isinstance(device, str):
        name = _device_cls(device).type
    elif device is None:
        from .accelerator import current_accelerator

        acc = current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or "
                           "None")
    module = getattr(sys.modules["ember"], name, None)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as 'ember.{name}'.")
    return module
