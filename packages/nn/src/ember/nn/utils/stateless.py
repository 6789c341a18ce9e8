"""Calling a module with other parameters and buffers (``torch.nn.utils.stateless``): the
same call as ``ember.func.functional_call`` (one implementation, in ember-core), refusing
``nn.DataParallel`` as PyTorch does."""

from __future__ import annotations

import warnings

from ember import func as _func

from ..modules.module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by
    ``parameters_and_buffers`` (dotted name -> tensor) for the duration of the call.

    Names left out keep the module's own tensors. With ``tie_weights`` a value given for a
    tied tensor is used under all its names; with ``strict`` the names must be exactly the
    module's parameters and buffers. Gradients flow to the given tensors, not to the
    module's::

        >>> m = ember.nn.Linear(2, 1)
        >>> w = ember.ones(1, 2, requires_grad=True)
        >>> y = functional_call(m, {"weight": w, "bias": ember.zeros(1)}, (ember.ones(1, 2),))
        >>> y.tolist()
        [[2.0]]
    """
    warnings.warn("`ember.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`ember.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ..parallel import DataParallel  # ember.nn.parallel imports the modules, which import us

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    return _func.functional_call(module, parameters_and_buffers, args, kwargs,
                                 tie_weights=tie_weights, strict=strict)
