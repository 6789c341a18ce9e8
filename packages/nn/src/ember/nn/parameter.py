"""``Parameter`` and ``Buffer``: tensors a ``Module`` registers (``torch.nn.parameter``)."""

from __future__ import annotations

import ember
from ember import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a ``Module`` attribute registers it.

    It shares the data of the tensor it is made from and requires grad by default.
    """

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if requires_grad and data._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(ember.Tensor.__deepcopy__(self.detach(), memo), self.requires_grad)
        g = getattr(self, "_grad", None)
        if g is not None:
            result._grad = g.__deepcopy__(memo)
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return type.__instancecheck__(cls, instance)


class Buffer(metaclass=_BufferMeta):
    """A tensor marked to be registered as a buffer when assigned to a ``Module`` attribute.

    ``Buffer(t, persistent=False)`` returns ``t`` itself (a plain tensor) with the mark.
    """

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            data = ember.empty(0)
        t = data.detach()
        t.requires_grad = data.requires_grad
        t._is_buffer = True
        t.persistent = persistent
        return t
