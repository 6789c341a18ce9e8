"""The base class of the v2 transforms and its extension API.

A transform flattens its input (any nest of tuples, lists and dicts), decides which leaves it
transforms (``_needs_transform_list``: the types in ``_transformed_types``, and of the pure
tensors only the first one when the sample has no ``Image``, ``Video`` or PIL image: "the
first pure tensor is the image"), draws its random parameters once per call from those leaves
(``make_params``) and applies ``transform(inpt, params)`` to each, passing the rest through.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import PIL.Image

import ember
from ember import Tensor, nn
from ember.vision import tv_tensors

from ._utils import check_type, has_any, is_pure_tensor, tree_flatten, tree_unflatten
from .functional._utils import _get_kernel


class Transform(nn.Module):
    """Base class of the v2 transforms: override ``make_params`` and ``transform`` (and
    optionally ``check_inputs`` and ``_transformed_types``)."""

    _transformed_types: tuple = (Tensor, PIL.Image.Image)
    _v1_transform_cls: type | None = None

    def __init__(self) -> None:
        super().__init__()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # the v1 ``get_params`` static methods, as torchvision exposes them on v2 classes
        v1 = cls.__dict__.get("_v1_transform_cls")
        if v1 is not None and hasattr(v1, "get_params"):
            cls.get_params = staticmethod(v1.get_params)

    def check_inputs(self, flat_inputs: list[Any]) -> None:
        pass

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        """The random parameters of one call, drawn from the leaves that will be transformed."""
        return dict()

    def _call_kernel(self, functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        kernel = _get_kernel(functional, type(inpt), allow_passthrough=True)
        return kernel(inpt, *args, **kwargs)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Transform one leaf with the call's ``params``."""
        raise NotImplementedError

    def forward(self, *inputs: Any) -> Any:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self.check_inputs(flat_inputs)
        needs_transform_list = self._needs_transform_list(flat_inputs)
        params = self.make_params(
            [inpt for inpt, needs in zip(flat_inputs, needs_transform_list) if needs]
        )
        flat_outputs = [
            self.transform(inpt, params) if needs else inpt
            for inpt, needs in zip(flat_inputs, needs_transform_list)
        ]
        return tree_unflatten(flat_outputs, spec)

    def _needs_transform_list(self, flat_inputs: list[Any]) -> list[bool]:
        # Of the pure tensors only the first is transformed, and only when no Image, Video or
        # PIL image is in the sample: it is then taken to be the image (the rest are passed
        # through, e.g. labels).
        needs_transform_list = []
        transform_pure_tensor = not has_any(flat_inputs, tv_tensors.Image, tv_tensors.Video,
                                            PIL.Image.Image)
        for inpt in flat_inputs:
            needs_transform = True
            if not check_type(inpt, self._transformed_types):
                needs_transform = False
            elif is_pure_tensor(inpt):
                if transform_pure_tensor:
                    transform_pure_tensor = False
                else:
                    needs_transform = False
            needs_transform_list.append(needs_transform)
        return needs_transform_list

    def extra_repr(self) -> str:
        extra = []
        for name, value in self.__dict__.items():
            if name.startswith("_") or name == "training":
                continue
            if not isinstance(value, (bool, int, float, str, tuple, list, enum.Enum)):
                continue
            extra.append(f"{name}={value}")
        return ", ".join(extra)


class _RandomApplyTransform(Transform):
    def __init__(self, p: float = 0.5) -> None:
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        self.check_inputs(flat_inputs)
        if ember.rand(1) >= self.p:
            return inputs
        needs_transform_list = self._needs_transform_list(flat_inputs)
        params = self.make_params(
            [inpt for inpt, needs in zip(flat_inputs, needs_transform_list) if needs]
        )
        flat_outputs = [
            self.transform(inpt, params) if needs else inpt
            for inpt, needs in zip(flat_inputs, needs_transform_list)
        ]
        return tree_unflatten(flat_outputs, spec)
