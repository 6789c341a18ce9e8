# isort: skip_file
# (the imports follow the core's dependency order)
"""Ember: a deep-learning framework in the PyTorch mould, over NumPy (CPU) and CuPy (GPU).

``import ember as torch`` runs PyTorch programs that use the names Ember provides.
"""

from __future__ import annotations

# One import namespace across distributions: ember-nn, ember-vision, ... ship ``ember/<sub>/``
# without an ``ember/__init__.py``; extending ``__path__`` with every ``ember/`` folder on
# ``sys.path`` merges them, editable installs too (pkgutil.extend_path's rule, without
# importing pkgutil and typing at startup: ~10 ms).
import os as _os
import sys as _sys

__path__ = list(__path__)
for _entry in _sys.path:
    if isinstance(_entry, str) and _os.path.isdir(_entry):  # '' (the cwd) is skipped, too
        _folder = _os.path.join(_entry, __name__)
        if _folder not in __path__ and _os.path.isdir(_folder):
            __path__.append(_folder)
del _entry
import warnings as _warnings

# PyTorch computes inf/nan silently; NumPy warns from inside our kernels. The filter matches
# only warnings attributed to ember's own modules, so NumPy keeps warning in user code. It
# must stay first: a filter put in front of it (`warnings.simplefilter("error")`, pytest's
# `filterwarnings = error`) would turn an inf inside a kernel into an exception. An
# `np.errstate` around every op would cost about as much as a small op, so instead the
# warnings module's mutation hook (which every `filterwarnings`/`simplefilter`/
# `catch_warnings` calls) puts this filter back in front (ember._fp_warnings).
from . import _fp_warnings

_fp_warnings.install()

# The order below is the dependency order of the core (not alphabetical): keep it.
from . import _dtype
from ._device import device, get_default_device, set_default_device
from ._dtype import (
    bfloat16, bool, can_cast, cdouble, cfloat, chalf, complex32, complex64, complex128, double,
    dtype, finfo, float, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
    float8_e8m0fnu, float16, float32, float64, get_default_dtype, half, iinfo, int, int8,
    int16, int32, int64, long, promote_types, result_type, set_default_dtype, short, uint8,
    uint16, uint32, uint64,
)
from ._size import Size
from ._memory_format import (
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from ._layout import jagged, layout, strided
from ._errors import AcceleratorError, OutOfMemoryError
from ._tensor import Tensor
from ._settings import *  # noqa: F403
from . import backends
from .autograd.grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from . import autograd
from .autograd.anomaly_mode import (
    _set_anomaly_enabled as set_anomaly_enabled, is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
)
from ._factory import *  # noqa: F403
from ._factory import asarray
from . import ops as _ops
from ._tensor_types import (  # the legacy types
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
    IntTensor, LongTensor, ShortTensor,
)
from .ops.extras import detach_, fill_  # the function forms of two Tensor methods
from .ops.extras import eig, lstsq, solve, symeig  # removed: they raise
from ._lobpcg import lobpcg  # a composite over the linalg ops (torch.lobpcg)
from ._storage import (  # also attaches Tensor.untyped_storage, set_, ...
    BFloat16Storage, BoolStorage, ByteStorage, CharStorage, ComplexDoubleStorage,
    ComplexFloatStorage, DoubleStorage, FloatStorage, HalfStorage, IntStorage, LongStorage,
    ShortStorage, TypedStorage, UntypedStorage,
)
from ._creation import empty_permuted, from_file, frombuffer, scalar_tensor
from ._stream import Event, Stream
from . import _random  # registers the random Tensor methods (uniform_...) before install
from .ops import tensor_info as _tensor_info  # registers is_distributed
from .ops import view_copy as _view_copy  # the *_copy ops, slice_inverse
from ._sym import (  # PyTorch's size helpers (torch.sym_*)
    sym_constrain_range, sym_constrain_range_for_size, sym_float, sym_fresh_size, sym_int,
    sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum,
)
from ._sym import _assert  # torch._assert: an assert that ember.fx traces as one node
from .ops import registry as _registry

_registry.install(globals(), Tensor)

# PyTorch's constants: ``torch.pi``, ``torch.inf``, ``x[:, torch.newaxis]``
import math as _math

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

from ._random import *  # noqa: F403
from . import (
    cuda, data, linalg, return_types, safetensors, serialization, testing, utils,
)
import ember.utils.data  # PyTorch's path: the very modules of ember.data, aliased
from . import accelerator, cpu, mps, version, xpu
from . import overrides

# __torch_function__ (ember.overrides): these namespaces dispatch once a subclass overrides it
overrides.register_namespace(_sys.modules[__name__])
overrides.register_namespace(linalg)
from .serialization import load, save

# -- sub-distributions: ``ember.nn`` etc. as attributes, with an install hint when missing ----
_SUBPACKAGES = {
    "nn": "ember-nn", "optim": "ember-nn", "vision": "ember-vision", "text": "ember-text",
    "hub": "ember-hub", "onnx": "ember-nn", "distributed.optim": "ember-nn", "fx": "ember-nn",
    "distributed.fsdp": "ember-nn", "distributed._composable": "ember-nn",
}


# PyTorch's small modules, imported on first use to keep ``import ember`` fast
_LAZY_SUBMODULES = {"functional", "quasirandom", "random", "storage", "torch_version",
                    "export", "jit", "compiler", "distributed", "multiprocessing",
                    "profiler", "amp", "special", "distributions", "fft", "func",
                    "sparse", "library", "signal", "futures", "nested", "masked",
                    "__future__", "types", "__config__"}

#: torch.SymInt/SymFloat/SymBool: the symbolic values of an ``ember.export`` capture
_SYM_CLASSES = frozenset(("SymInt", "SymFloat", "SymBool"))


#: torch.autocast and its state functions, from ember.amp.autocast_mode on first use
_AUTOCAST_NAMES = frozenset((
    "autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
    "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
    "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
    "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting"))


def __getattr__(name: str):
    import importlib

    if name == "__version__":  # ember-core's installed version (a TorchVersion), on first use
        return importlib.import_module("ember.torch_version").__version__
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"ember.{name}")
    if name.startswith("_foreach_"):  # torch._foreach_mul_ and family, cached once asked for
        foreach = importlib.import_module("ember._foreach")
        if name in foreach.NAMES:
            globals()[name] = getattr(foreach, name)
            return globals()[name]
    if name == "vmap":  # torch.vmap is torch.func.vmap
        return importlib.import_module("ember.func").vmap
    if name == "GradScaler":  # torch.GradScaler is torch.amp.GradScaler
        return importlib.import_module("ember.amp").GradScaler
    if name in _AUTOCAST_NAMES:
        return getattr(importlib.import_module("ember.amp.autocast_mode"), name)
    if name == "torch":  # torch.torch is torch (kornia annotates with torch.torch.Tensor)
        return _sys.modules["ember"]
    if name == "_C":  # torch._C's few names that model code probes (ember/_C.py)
        return importlib.import_module("ember._C")
    if name == "PyTorchFileReader":  # torch.PyTorchFileReader is torch._C's
        return importlib.import_module("ember._C").PyTorchFileReader
    if name in ("_dynamo", "_logging", "_higher_order_ops"):  # torch's private modules that
        return importlib.import_module(f"ember.{name}")  # scripts and tutorials use
    if name in ("ScriptModule", "ScriptFunction"):  # torch.ScriptModule: torch.jit's classes
        return getattr(importlib.import_module("ember.jit"), name)  # (Lightning imports it)
    if name in _SYM_CLASSES:
        return getattr(importlib.import_module("ember.export._symbolic"), name)
    if name == "cond":  # torch.cond
        return importlib.import_module("ember._cond").cond
    if name in ("fork", "wait"):  # torch.fork / torch.wait are torch.jit's
        return getattr(importlib.import_module("ember.jit"), name)
    if name == "Future":  # torch.Future
        return importlib.import_module("ember.futures").Future
    if name == "Tag" or name.endswith("Type"):  # torch.Tag (operator tags), TorchScript's
        cls = importlib.import_module("ember._C")._lazy_class(name)  # types (annotations)
        if cls is not None:
            return cls
    if name == "compile":  # not cached in this module's globals: no shadowing of the builtin
        return importlib.import_module("ember._compile").compile
    if name in ("has_mkl", "has_openmp"):  # what NumPy's BLAS is, asked on first use
        value = getattr(backends, name[4:]).is_available()
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        try:
            return importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ember.{name}":
                raise
            raise ModuleNotFoundError(
                f"ember.{name} is not installed: pip install {_SUBPACKAGES[name]}",
                name=f"ember.{name}") from None
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def _install_missing_hint() -> None:
    import builtins  # ``any`` here is ``ember.any`` (installed above)
    import importlib.abc
    import importlib.machinery
    import sys

    class _HintFinder(importlib.abc.MetaPathFinder):
        """Last on ``sys.meta_path``: a missing ``ember.nn`` names its distribution."""

        def find_spec(self, fullname, path, target=None):
            parts = fullname.split(".")
            sub = ".".join(parts[1:])
            if parts[0] == "ember" and sub in _SUBPACKAGES:
                for finder in sys.meta_path:
                    if finder is self:
                        continue
                    try:
                        spec = finder.find_spec(fullname, path, target)
                    except (AttributeError, ImportError):
                        spec = None
                    if spec is not None:
                        return spec
                raise ModuleNotFoundError(
                    f"No module named '{fullname}': it ships in the {_SUBPACKAGES[sub]} "
                    f"distribution (pip install {_SUBPACKAGES[sub]})", name=fullname)
            return None

    if not builtins.any(type(f).__name__ == "_HintFinder" for f in sys.meta_path):
        sys.meta_path.append(_HintFinder())


_install_missing_hint()
del _install_missing_hint
