"""Neural-network building blocks for Ember, mirroring ``torch.nn``.

Modules, layers, the functional API (``ember.nn.functional``), parameter
initialisation and utilities live here. Installed by the ``ember-nn``
distribution.
"""

import ember  # (ember.nn builds on ember-core)

from . import attention, functional, grad, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter


def factory_kwargs(kwargs):
    """The factory keyword arguments (``device``, ``dtype``, ``memory_format``) of ``kwargs``
    as one dict, ``kwargs["factory_kwargs"]`` merged in (``torch.nn.factory_kwargs``)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


__version__ = "0.1.0"

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional",
           "init", "parallel", "utils", "DataParallel", "attention", "grad", "factory_kwargs",
           "register_module_forward_hook", "register_module_forward_pre_hook", *_modules_all]
