"""Weight normalization by a forward pre-hook (``torch.nn.utils.weight_norm``, the older API).

``weight_norm(module)`` replaces ``weight`` by the parameters ``weight_g`` (magnitude) and
``weight_v`` (direction) and recomputes ``weight = g * v / ||v||`` before every forward.
New code should prefer ``ember.nn.utils.parametrizations.weight_norm``.
"""

from __future__ import annotations

import warnings

import ember
from ember import Tensor

from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept with size 1 so that it
    broadcasts against ``v`` (``torch.norm_except_dim``). ``dim=-1`` is the norm of the
    whole tensor, a 0-dim tensor.

    As in PyTorch, the slices along ``dim`` are flattened and normed one by one, so a 1-d
    ``v`` gives each entry's absolute value (a norm over no dimension), not one norm.
    """
    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    ndim = max(v.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    dim = dim % ndim
    moved = v.movedim(dim, 0) if dim else v
    norms = ember.linalg.vector_norm(moved.reshape(moved.size(0), -1), pow, dim=1)
    output_size = [1] * v.dim()
    output_size[dim] = v.size(dim)
    return norms.reshape(output_size)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / ||v||)``, the norm taken over every dimension but ``dim``
    (``torch._weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn("`ember.nn.utils.weight_norm` is deprecated in favor of "
                      "`ember.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Apply weight normalization to the parameter ``name`` of ``module``.

    ``w = g * v / ||v||``: the parameter is replaced by ``<name>_g`` (the norms, one per slice
    along ``dim``; ``dim=None`` for one norm of the whole tensor) and ``<name>_v``, and a
    forward pre-hook recomputes ``<name>`` before every forward. Deprecated: prefer
    ``ember.nn.utils.parametrizations.weight_norm``. Returns ``module``.

    Example::

        >>> m = weight_norm(ember.nn.Linear(20, 40), name="weight")
        >>> m.weight_g.size()
        ember.Size([40, 1])
        >>> m.weight_v.size()
        ember.Size([40, 20])
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Remove the weight normalization of ``name``: it becomes a plain parameter again,
    holding its current normalized value. Returns ``module``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
