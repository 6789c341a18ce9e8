""":class:`ImageList` (torchvision's ``models.detection.image_list``)."""

from __future__ import annotations

from ember import Tensor, device

__all__ = ["ImageList"]


class ImageList:
    """A batch of images of possibly different sizes, padded into one tensor, with the size
    of each image before padding.

    Args:
        tensors (tensor): Tensor containing images.
        image_sizes (list[tuple[int, int]]): List of Tuples each containing size of images.
    """

    def __init__(self, tensors: Tensor, image_sizes: list[tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device: device) -> ImageList:
        return ImageList(self.tensors.to(device), self.image_sizes)
