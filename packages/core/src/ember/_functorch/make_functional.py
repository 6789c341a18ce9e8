"""functorch's ``make_functional`` family (deprecated in PyTorch for ``torch.func``'s
``functional_call``, still shipped in ``functorch`` and used by its tutorials).

``make_functional(model)`` gives ``(fmodel, params)`` with ``fmodel(params, *args)`` running a
copy of ``model`` with ``params`` in place of its parameters;
``make_functional_with_buffers`` also splits off the buffers (``fmodel(params, buffers,
*args)``); ``combine_state_for_ensemble(models)`` stacks the parameters and buffers of
several same-class models along a new leading dim, for ``vmap``. The model is duck-typed
(``named_parameters``/``named_buffers``), so this core module needs no ``ember.nn``.
"""

from __future__ import annotations

import copy
import warnings

from .._warn import user_stacklevel
from .functional_call import functional_call

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "make_functional",
           "make_functional_with_buffers", "combine_state_for_ensemble"]


def _warn(api: str) -> None:
    warnings.warn(f"We've integrated functorch into PyTorch. As the final step of the "
                  f"integration, `functorch.{api}` is deprecated as of PyTorch 2.0 and will be "
                  "deleted in a future version of PyTorch >= 2.3. Please use "
                  "`torch.func.functional_call` instead; see the PyTorch 2.0 release notes "
                  "and/or the `torch.func` migration guide for more details "
                  "https://pytorch.org/docs/main/func.migrating.html", FutureWarning,
                  stacklevel=user_stacklevel())


def _named(model, kind: str):
    """``(names, tensors)`` of the model's parameters or buffers, tied ones once (the first
    name), as functorch extracts them."""
    seen, names, tensors = set(), [], []
    for name, t in getattr(model, f"named_{kind}")(remove_duplicate=False):
        if id(t) in seen:
            continue
        seen.add(id(t))
        names.append(name)
        tensors.append(t)
    return tuple(names), tuple(tensors)


class FunctionalModule:
    """What :func:`make_functional` returns: ``fmodel(params, *args, **kwargs)``."""

    def __init__(self, stateless_model, param_names: tuple):
        self.stateless_model = stateless_model
        self.param_names = param_names

    def __call__(self, params, *args, **kwargs):
        params = tuple(params)
        if len(params) != len(self.param_names):
            raise RuntimeError(f"Expected {len(self.param_names)} parameters, got "
                               f"{len(params)}")
        return functional_call(self.stateless_model, dict(zip(self.param_names, params)),
                               args, kwargs)

    forward = __call__

    def __repr__(self) -> str:
        return f"FunctionalModule(\n  (stateless_model): {self.stateless_model!r}\n)"


class FunctionalModuleWithBuffers:
    """What :func:`make_functional_with_buffers` returns:
    ``fmodel(params, buffers, *args, **kwargs)``."""

    def __init__(self, stateless_model, param_names: tuple, buffer_names: tuple):
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.buffer_names = buffer_names

    def __call__(self, params, buffers, *args, **kwargs):
        params, buffers = tuple(params), tuple(buffers)
        if len(params) != len(self.param_names) or len(buffers) != len(self.buffer_names):
            raise RuntimeError(f"Expected {len(self.param_names)} parameters and "
                               f"{len(self.buffer_names)} buffers, got {len(params)} and "
                               f"{len(buffers)}")
        state = dict(zip(self.param_names, params))
        state.update(zip(self.buffer_names, buffers))
        return functional_call(self.stateless_model, state, args, kwargs)

    forward = __call__

    def __repr__(self) -> str:
        return f"FunctionalModuleWithBuffers(\n  (stateless_model): {self.stateless_model!r}\n)"


def _functional(model, disable_autograd_tracking: bool, with_buffers: bool):
    model = copy.deepcopy(model)  # the returned function never sees later changes
    names, params = _named(model, "parameters")
    if disable_autograd_tracking:
        params = tuple(p.detach() for p in params)
    if not with_buffers:
        return FunctionalModule(model, names), params
    bnames, buffers = _named(model, "buffers")
    return FunctionalModuleWithBuffers(model, names, bnames), params, buffers


def make_functional(model, disable_autograd_tracking: bool = False):
    """``(fmodel, params)``: ``fmodel(params, *args)`` runs (a copy of) ``model`` with
    ``params`` as its parameters (buffers stay the copy's own). Deprecated in PyTorch for
    ``ember.func.functional_call``."""
    _warn("make_functional")
    if next(iter(model.buffers()), None) is not None:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    return _functional(model, disable_autograd_tracking, False)


def make_functional_with_buffers(model, disable_autograd_tracking: bool = False):
    """``(fmodel, params, buffers)``: ``fmodel(params, buffers, *args)`` runs (a copy of)
    ``model`` with ``params`` and ``buffers`` in place of its own. Deprecated in PyTorch for
    ``ember.func.functional_call``."""
    _warn("make_functional_with_buffers")
    return _functional(model, disable_autograd_tracking, True)


def combine_state_for_ensemble(models):
    """``(fmodel, params, buffers)`` of ``M`` same-class models, each parameter and buffer
    stacked along a new leading dim of size ``M``, for ``vmap(fmodel, (0, 0, None))``.
    Deprecated in PyTorch for ``ember.func.stack_module_state``."""
    _warn("combine_state_for_ensemble")
    from ..ops.shape import stack

    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same "
                           "class.")
    made = [_functional(m, False, True) for m in models]
    params = tuple(stack([f[1][i] for f in made]).detach() for i in range(len(made[0][1])))
    buffers = tuple(stack([f[2][i] for f in made]).detach() for i in range(len(made[0][2])))
    return made[0][0], params, buffers
