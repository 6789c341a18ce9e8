# ruff: noqa: I001 - imports follow the core's dependency order
"""Ember: a deep-learning framework in the PyTorch mould, over NumPy (CPU) and CuPy (GPU).

``import ember as torch`` runs PyTorch programs that use the names Ember provides.
"""

from __future__ import annotations

# One import namespace across distributions: ember-nn, ember-vision, ... ship ``ember/<sub>/``
# without an ``ember/__init__.py``; extending ``__path__`` merges them, editable installs too.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

import sys as _sys  # noqa: E402
import warnings as _warnings  # noqa: E402

# PyTorch computes inf/nan silently; NumPy warns from inside our kernels. The filter matches
# only warnings attributed to ember's own modules, so NumPy keeps warning in user code.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember(\.|$)",
                         message=r"(divide by zero|invalid value|overflow|underflow) encountered")

# The order below is the dependency order of the core (not alphabetical): keep it.
from . import _dtype  # noqa: E402
from ._device import device, get_default_device, set_default_device  # noqa: E402,F401
from ._dtype import (  # noqa: E402,F401
    bool, can_cast, double, dtype, finfo, float, float16, float32, float64, get_default_dtype,
    half, iinfo, int, int8, int16, int32, int64, long, promote_types, result_type,
    set_default_dtype, short, uint8,
)
from ._size import Size  # noqa: E402
from ._memory_format import (  # noqa: E402,F401
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from ._tensor import Tensor  # noqa: E402
from ._settings import *  # noqa: E402,F401,F403 - threads, matmul precision, determinism
from . import backends  # noqa: E402
from .autograd.grad_mode import (  # noqa: E402,F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from . import autograd  # noqa: E402
from .autograd.anomaly_mode import (  # noqa: E402,F401
    _set_anomaly_enabled as set_anomaly_enabled, is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
)
from ._factory import *  # noqa: E402,F401,F403
from ._factory import asarray  # noqa: E402,F401
from . import ops as _ops  # noqa: E402
from ._tensor_types import (  # noqa: E402,F401 - the legacy types
    BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
    LongTensor, ShortTensor,
)
from .ops import registry as _registry  # noqa: E402

_registry.install(globals(), Tensor)

from ._random import *  # noqa: E402,F401,F403
from . import (  # noqa: E402,F401
    cuda, data, linalg, return_types, safetensors, serialization, testing, utils,
)
from . import accelerator, mps, version, xpu  # noqa: E402,F401
from . import overrides  # noqa: E402

# __torch_function__ (ember.overrides): these namespaces dispatch once a subclass overrides it
overrides.register_namespace(_sys.modules[__name__])
overrides.register_namespace(linalg)
from .serialization import load, save  # noqa: E402,F401

# -- sub-distributions: ``ember.nn`` etc. as attributes, with an install hint when missing ----
_SUBPACKAGES = {
    "nn": "ember-nn", "optim": "ember-nn", "vision": "ember-vision", "text": "ember-text",
    "hub": "ember-hub",
}


def __getattr__(name: str):
    import importlib

    if name == "__version__":  # ember-core's installed version, read on first use
        return version.__version__
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
            if len(parts) == 2 and parts[0] == "ember" and parts[1] in _SUBPACKAGES:
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
                    f"No module named '{fullname}': it ships in the {_SUBPACKAGES[parts[1]]} "
                    f"distribution (pip install {_SUBPACKAGES[parts[1]]})", name=fullname)
            return None

    if not builtins.any(type(f).__name__ == "_HintFinder" for f in sys.meta_path):
        sys.meta_path.append(_HintFinder())


_install_missing_hint()
del _install_missing_hint
