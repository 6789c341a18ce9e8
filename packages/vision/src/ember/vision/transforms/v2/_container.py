"""Containers: Compose, RandomApply, RandomChoice, RandomOrder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ember
from ember import nn
from ember.vision.transforms import transforms as _v1

from ._transform import Transform


def _repr_transforms(transforms) -> str:
    return "\n".join(f"    {t}" for t in transforms)


class Compose(Transform):
    """Apply ``transforms`` in turn; several inputs are passed on unpacked."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        elif not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms

    def forward(self, *inputs: Any) -> Any:
        needs_unpacking = len(inputs) > 1
        for transform in self.transforms:
            outputs = transform(*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs

    def extra_repr(self) -> str:
        return _repr_transforms(self.transforms)


class RandomApply(Transform):
    """Apply all of ``transforms`` with probability ``p``, else nothing."""

    _v1_transform_cls = _v1.RandomApply

    def __init__(self, transforms, p: float = 0.5) -> None:
        super().__init__()
        if not isinstance(transforms, (Sequence, nn.ModuleList)):
            raise TypeError(
                "Argument transforms should be a sequence of callables or a `nn.ModuleList`"
            )
        elif not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        needs_unpacking = len(inputs) > 1
        if ember.rand(1) >= self.p:
            return inputs if needs_unpacking else inputs[0]
        for transform in self.transforms:
            outputs = transform(*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs

    def extra_repr(self) -> str:
        return _repr_transforms(self.transforms)


class RandomChoice(Transform):
    """Apply one of ``transforms``, drawn with probabilities ``p`` (uniform by default)."""

    def __init__(self, transforms: Sequence[Callable], p: list[float] | None = None) -> None:
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        elif not transforms:
            raise ValueError("Pass at least one transform")
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(
                f"Length of p doesn't match the number of transforms: {len(p)} != "
                f"{len(transforms)}"
            )
        super().__init__()
        self.transforms = transforms
        total = sum(p)
        self.p = [prob / total for prob in p]

    def forward(self, *inputs: Any) -> Any:
        idx = int(ember.multinomial(ember.tensor(self.p), 1))
        return self.transforms[idx](*inputs)


class RandomOrder(Transform):
    """Apply ``transforms`` in a random order."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence of callables")
        elif not transforms:
            raise ValueError("Pass at least one transform")
        super().__init__()
        self.transforms = transforms

    def forward(self, *inputs: Any) -> Any:
        needs_unpacking = len(inputs) > 1
        for idx in ember.randperm(len(self.transforms)):
            outputs = self.transforms[int(idx)](*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs
