"""Datasets laid out as one folder per class, as torchvision's ``DatasetFolder``/``ImageFolder``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .vision import VisionDataset

__all__ = [
    "IMG_EXTENSIONS",
    "has_file_allowed_extension",
    "is_image_file",
    "find_classes",
    "make_dataset",
    "DatasetFolder",
    "ImageFolder",
    "pil_loader",
    "default_loader",
]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions) -> bool:
    """Whether ``filename`` ends (case-insensitively) with one of ``extensions``."""
    return filename.lower().endswith(
        extensions if isinstance(extensions, str) else tuple(extensions)
    )


def is_image_file(filename: str) -> bool:
    """Whether ``filename`` has one of :data:`IMG_EXTENSIONS`."""
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory) -> tuple[list[str], dict[str, int]]:
    """The sorted sub-folder names of ``directory`` and their indices."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {cls_name: i for i, cls_name in enumerate(classes)}


def make_dataset(
    directory,
    class_to_idx: dict[str, int] | None = None,
    extensions=None,
    is_valid_file: Callable[[str], bool] | None = None,
    allow_empty: bool = False,
) -> list[tuple[str, int]]:
    """``(path, class_index)`` for every valid file under each class folder, in sorted order."""
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError(
            "Both extensions and is_valid_file cannot be None or not None at the same time"
        )
    if extensions is not None:

        def is_valid_file(x: str) -> bool:
            return has_file_allowed_extension(x, extensions)

    instances, available_classes = [], set()
    for target_class in sorted(class_to_idx.keys()):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    available_classes.add(target_class)
    empty_classes = set(class_to_idx.keys()) - available_classes
    if empty_classes and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty_classes))}. "
        if extensions is not None:
            listed = extensions if isinstance(extensions, str) else ", ".join(extensions)
            msg += f"Supported extensions are: {listed}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """Samples ``root/<class>/**/<file>`` read by ``loader``; targets are class indices."""

    def __init__(
        self,
        root,
        loader: Callable[[str], Any],
        extensions=None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(
            self.root,
            class_to_idx=class_to_idx,
            extensions=extensions,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
        )
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(
        directory,
        class_to_idx: dict[str, int],
        extensions=None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> list[tuple[str, int]]:
        """See :func:`make_dataset`; ``class_to_idx`` is required here."""
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(
            directory,
            class_to_idx,
            extensions=extensions,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
        )

    def find_classes(self, directory) -> tuple[list[str], dict[str, int]]:
        """The class folders of ``directory``; override for another layout."""
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        return self._transform_pair(self.loader(path), target)

    def __len__(self) -> int:
        return len(self.samples)


def pil_loader(path) -> Any:
    """Open an image file with Pillow, converted to RGB."""
    from PIL import Image

    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


def default_loader(path) -> Any:
    """The default image loader (Pillow)."""
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/...`` with an :data:`IMG_EXTENSIONS` suffix, as RGB PIL images."""

    def __init__(
        self,
        root,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] = default_loader,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> None:
        super().__init__(
            root,
            loader,
            IMG_EXTENSIONS if is_valid_file is None else None,
            transform=transform,
            target_transform=target_transform,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
        )
        self.imgs = self.samples
