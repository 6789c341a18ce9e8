"""The base class of the tv_tensors (torchvision's ``TVTensor``) and the return-type switch.

Defining :class:`TVTensor` overrides ``__torch_function__``, which turns Ember's dispatch on
for the whole process (every op then pays a small check): this module is imported only when
``ember.vision.tv_tensors`` or ``ember.vision.transforms.v2`` is, never by ``ember.vision``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ember
from ember import Tensor
from ember.overrides import DisableTorchFunctionSubclass

__all__ = ["TVTensor", "set_return_type"]

_TORCHFUNCTION_SUBCLASS = [False]


class _ReturnTypeCM:
    def __init__(self, to_restore: bool):
        self.to_restore = to_restore

    def __enter__(self):
        return self

    def __exit__(self, *args):
        _TORCHFUNCTION_SUBCLASS[0] = self.to_restore


def set_return_type(return_type: str):
    """Set the return type of ember operations on a :class:`TVTensor`: ``"Tensor"`` (the
    default: pure tensors) or ``"TVTensor"`` (the input's subclass). Works globally or as a
    context manager. It does not change what the transforms return (always the input's type).
    """
    to_restore = _TORCHFUNCTION_SUBCLASS[0]
    try:
        _TORCHFUNCTION_SUBCLASS[0] = {"tensor": False, "tvtensor": True}[return_type.lower()]
    except KeyError:
        raise ValueError(
            f"return_type must be 'TVTensor' or 'Tensor', got {return_type}"
        ) from None
    return _ReturnTypeCM(to_restore)


def _must_return_subclass() -> bool:
    return _TORCHFUNCTION_SUBCLASS[0]


def _rebuild_tv_tensor(rebuild, args, state):
    out = rebuild(*args)
    out.__dict__.update(state)
    return out


class TVTensor(Tensor):
    """Base class of all tv_tensors (:class:`Image`, :class:`Video`, :class:`Mask`,
    :class:`BoundingBoxes`, :class:`KeyPoints`).

    Ember ops on a TVTensor return pure tensors (see :func:`set_return_type`), except
    ``clone``, ``to``, ``detach``, ``requires_grad_`` and ``pin_memory``, which keep the type.
    """

    @staticmethod
    def _to_tensor(data: Any, dtype=None, device=None, requires_grad: bool | None = None) -> Tensor:
        if requires_grad is None:
            requires_grad = data.requires_grad if isinstance(data, Tensor) else False
        if isinstance(data, TVTensor):
            data = data.as_subclass(Tensor)
        return ember.as_tensor(data, dtype=dtype, device=device).requires_grad_(requires_grad)

    @classmethod
    def _wrap_output(cls, output, args: Sequence[Any] = (),
                     kwargs: Mapping[str, Any] | None = None):
        if isinstance(output, Tensor) and not isinstance(output, cls):
            output = output.as_subclass(cls)
        if isinstance(output, (tuple, list)):
            output = type(output)(cls._wrap_output(part, args, kwargs) for part in output)
        return output

    @classmethod
    def wrap(cls, tensor: Tensor, like: TVTensor, **kwargs: Any) -> TVTensor:
        """``tensor`` as a ``cls`` with the metadata of ``like`` (overridden by ``kwargs``)."""
        return tensor.as_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run ``func`` undispatched; return pure tensors unless ``set_return_type("TVTensor")``
        is on or ``func`` is one of the methods that keep the type (``clone``, ``to``, ...)."""
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with DisableTorchFunctionSubclass():
            output = func(*args, **(kwargs or {}))
        must_return_subclass = _must_return_subclass()
        if must_return_subclass or (
            _is_force_subclass(func) and args and isinstance(args[0], cls)
        ):
            return cls._wrap_output(output, args, kwargs)
        if isinstance(output, cls):
            return output.as_subclass(Tensor)
        return output

    def _make_repr(self, **kwargs: Any) -> str:
        extra_repr = ", ".join(f"{key}={value}" for key, value in kwargs.items())
        with DisableTorchFunctionSubclass():
            base = Tensor.__repr__(self)
        return f"{base[:-1]}, {extra_repr})"

    def __reduce_ex__(self, protocol):
        rebuild, args = Tensor.__reduce_ex__(self, protocol)
        # the metadata (format, canvas_size, ...); private fields (autograd, views) stay behind
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        return _rebuild_tv_tensor, (rebuild, args, state)


_FORCE_NAMES = ("clone", "to", "detach", "requires_grad_", "pin_memory")


def _original(fn):
    return getattr(fn, "_ember_original", fn)


# the originals behind the dispatching wrappers Ember installs on Tensor
_FORCE_TORCHFUNCTION_SUBCLASS = {
    _original(getattr(Tensor, name)) for name in _FORCE_NAMES if hasattr(Tensor, name)
}


def _is_force_subclass(func) -> bool:
    return _original(func) in _FORCE_TORCHFUNCTION_SUBCLASS
