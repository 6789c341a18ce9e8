"""Neural-network building blocks for Ember, mirroring ``torch.nn``.

Modules, layers, the functional API (``ember.nn.functional``), parameter
initialisation and utilities live here. Installed by the ``ember-nn``
distribution.
"""

import ember  # noqa: F401  (ember.nn builds on ember-core)

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__version__ = "0.1.0"

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional",
           "init", "parallel", "utils", "DataParallel",
           "register_module_forward_hook", "register_module_forward_pre_hook", *_modules_all]
