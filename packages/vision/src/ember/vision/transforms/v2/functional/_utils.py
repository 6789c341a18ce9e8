"""The kernel registry of the v2 functionals: one kernel per input type, found along the MRO."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ember import Tensor
from ember.vision import tv_tensors

_FillType = int | float | Sequence[int] | Sequence[float] | None
_FillTypeJIT = list[float] | None


def is_pure_tensor(inpt: Any) -> bool:
    """Whether ``inpt`` is a tensor and not a TVTensor."""
    return isinstance(inpt, Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


_KERNEL_REGISTRY: dict[Callable, dict[type, Callable]] = {}


def _kernel_tv_tensor_wrapper(kernel):
    @functools.wraps(kernel)
    def wrapper(inpt, *args, **kwargs):
        output = kernel(inpt.as_subclass(Tensor), *args, **kwargs)
        return tv_tensors.wrap(output, like=inpt)

    return wrapper


def _register_kernel_internal(functional, input_type, *, tv_tensor_wrapper: bool = True):
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise ValueError(
            f"Functional {functional} already has a kernel registered for type {input_type}."
        )

    def decorator(kernel):
        registry[input_type] = (
            _kernel_tv_tensor_wrapper(kernel)
            if issubclass(input_type, tv_tensors.TVTensor) and tv_tensor_wrapper
            else kernel
        )
        return kernel

    return decorator


def _name_to_functional(name: str):
    from ember.vision.transforms.v2 import functional

    try:
        return getattr(functional, name)
    except AttributeError:
        raise ValueError(
            f"Could not find functional with name '{name}' in "
            "torchvision.transforms.v2.functional."
        ) from None


_BUILTIN_DATAPOINT_TYPES = {
    obj for obj in vars(tv_tensors).values()
    if isinstance(obj, type) and issubclass(obj, tv_tensors.TVTensor)
}


def register_kernel(functional, tv_tensor_cls):
    """Decorate a kernel to run for ``tv_tensor_cls`` inputs of ``functional`` (a v2
    functional or its name); the kernel receives the TVTensor itself and returns the output."""
    if isinstance(functional, str):
        functional = _name_to_functional(name=functional)
    elif not (
        callable(functional)
        and (getattr(functional, "__module__", None) or "").startswith(
            "ember.vision.transforms.v2.functional"
        )
    ):
        raise ValueError(
            "Kernels can only be registered on functionals from the "
            f"torchvision.transforms.v2.functional namespace, but got {functional}."
        )
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, tv_tensors.TVTensor)):
        raise ValueError(
            "Kernels can only be registered for subclasses of torchvision.tv_tensors.TVTensor, "
            f"but got {tv_tensor_cls}."
        )
    if tv_tensor_cls in _BUILTIN_DATAPOINT_TYPES:
        raise ValueError(
            f"Kernels cannot be registered for the builtin tv_tensor classes, but got "
            f"{tv_tensor_cls}"
        )
    return _register_kernel_internal(functional, tv_tensor_cls, tv_tensor_wrapper=False)


def _get_kernel(functional, input_type, *, allow_passthrough: bool = False):
    registry = _KERNEL_REGISTRY.get(functional)
    if not registry:
        raise ValueError(f"No kernel registered for functional {functional.__name__}.")
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        elif cls is tv_tensors.TVTensor:
            break
    if allow_passthrough:
        return lambda inpt, *args, **kwargs: inpt
    raise TypeError(
        f"Functional F.{functional.__name__} supports inputs of type {registry.keys()}, "
        f"but got {input_type} instead."
    )


def _register_five_ten_crop_kernel_internal(functional, input_type):
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise TypeError(
            f"Functional '{functional}' already has a kernel registered for type '{input_type}'."
        )

    def wrap(kernel):
        @functools.wraps(kernel)
        def wrapper(inpt, *args, **kwargs):
            output = kernel(inpt, *args, **kwargs)
            return type(output)(tv_tensors.wrap(o, like=inpt) for o in output)

        return wrapper

    def decorator(kernel):
        registry[input_type] = (
            wrap(kernel) if issubclass(input_type, tv_tensors.TVTensor) else kernel
        )
        return kernel

    return decorator
