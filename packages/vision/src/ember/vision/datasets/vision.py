"""Base class of the vision datasets, as ``torchvision.datasets.VisionDataset``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import Tensor
from ember.data import Dataset

__all__ = ["VisionDataset", "StandardTransform"]


class VisionDataset(Dataset):
    """A dataset with a ``root`` folder and ``transforms`` (joint) or ``transform`` /
    ``target_transform`` (separate; mutually exclusive with ``transforms``)."""

    _repr_indent = 4

    def __init__(
        self,
        root=None,
        transforms: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        has_transforms = transforms is not None
        has_separate_transform = transform is not None or target_transform is not None
        if has_transforms and has_separate_transform:
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as argument"
            )
        self.transform = transform
        self.target_transform = target_transform
        if has_separate_transform:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        head = "Dataset " + self.__class__.__name__
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body += [repr(self.transforms)]
        return "\n".join([head] + [" " * self._repr_indent + line for line in body])

    def _format_transform_repr(self, transform: Callable, head: str) -> list[str]:
        return _format_transform_repr(transform, head)

    def extra_repr(self) -> str:
        return ""

    def _transform_pair(self, input: Any, target: Any) -> tuple[Any, Any]:
        """``(transform(input), target_transform(target))``, each when set; reads the attributes
        at every call, so reassigning ``dataset.transform`` takes effect."""
        return _apply_transforms(self.transform, self.target_transform, input, target)


class _SplitImageDataset(VisionDataset):
    """Images held in memory as ``data`` (uint8 ``(N, H, W)`` or ``(N, H, W, C)``, an array or a
    tensor) with integer ``targets``, the train or test split of a dataset; items are
    ``(PIL image, int label)``. ``download=True`` calls the subclass's ``download()`` first;
    then ``_not_found_msg`` is raised unless ``_check_exists()``, and ``_load_data()`` gives
    ``(data, targets)``."""

    _not_found_msg = "Dataset not found. You can use download=True to download it"

    def __init__(
        self,
        root,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(self._not_found_msg)
        self.data, self.targets = self._load_data()

    def _load_data(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _check_exists(self) -> bool:
        return True

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {_class: i for i, _class in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        img = self.data[index]
        if isinstance(img, Tensor):
            img = img.numpy()
        img = Image.fromarray(np.ascontiguousarray(img))
        return self._transform_pair(img, int(self.targets[index]))

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


def _apply_transforms(
    transform: Callable | None, target_transform: Callable | None, input: Any, target: Any
) -> tuple[Any, Any]:
    if transform is not None:
        input = transform(input)
    if target_transform is not None:
        target = target_transform(target)
    return input, target


def _format_transform_repr(transform: Callable, head: str) -> list[str]:
    lines = repr(transform).splitlines()
    return [f"{head}{lines[0]}"] + [" " * len(head) + line for line in lines[1:]]


class StandardTransform:
    """Applies ``transform`` to the input and ``target_transform`` to the target."""

    def __init__(
        self, transform: Callable | None = None, target_transform: Callable | None = None
    ) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        return _apply_transforms(self.transform, self.target_transform, input, target)

    def __repr__(self) -> str:
        body = [self.__class__.__name__]
        if self.transform is not None:
            body += _format_transform_repr(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += _format_transform_repr(self.target_transform, "Target transform: ")
        return "\n".join(body)
