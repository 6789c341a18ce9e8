""":class:`GeneralizedRCNNTransform` (torchvision's ``models.detection.transform``): what the
detectors do to their inputs before the backbone (normalise, resize, pad into one batch) and to
their detections after (back to the sizes of the original images)."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from .image_list import ImageList
from .roi_heads import paste_masks_in_image

__all__ = ["GeneralizedRCNNTransform", "resize_boxes", "resize_keypoints"]


def _resize_image_and_masks(
    image: Tensor,
    self_min_size: int,
    self_max_size: int,
    target: dict[str, Tensor] | None = None,
    fixed_size: tuple[int, int] | None = None,
) -> tuple[Tensor, dict[str, Tensor] | None]:
    """``image`` (and ``target["masks"]``) resized bilinearly so that its short side is
    ``self_min_size`` unless its long side would exceed ``self_max_size``; or to ``fixed_size``
    (``(width, height)``) when given. The masks are resized by nearest neighbour."""
    size: list[int] | None = None
    scale_factor: float | None = None
    recompute_scale_factor: bool | None = None
    if fixed_size is not None:
        size = [fixed_size[1], fixed_size[0]]
    else:
        im_shape = image.shape[-2:]
        min_size, max_size = min(im_shape), max(im_shape)
        scale_factor = min(self_min_size / min_size, self_max_size / max_size)
        recompute_scale_factor = True

    image = F.interpolate(
        image[None],
        size=size,
        scale_factor=scale_factor,
        mode="bilinear",
        recompute_scale_factor=recompute_scale_factor,
        align_corners=False,
    )[0]

    if target is not None and "masks" in target:
        mask = F.interpolate(
            target["masks"][:, None].float(),
            size=size,
            scale_factor=scale_factor,
            recompute_scale_factor=recompute_scale_factor,
        )[:, 0].byte()
        target["masks"] = mask
    return image, target


class GeneralizedRCNNTransform(nn.Module):
    """Normalises the input images and resizes them (and their targets) to ``min_size`` /
    ``max_size``, then pads them into one batch whose height and width are multiples of
    ``size_divisible``.

    ``forward(images, targets=None)`` returns an :class:`ImageList` and the (copied, resized)
    targets; :meth:`postprocess` maps detections back to the original image sizes.

    Args:
        min_size (int or tuple of int): size of the shorter side; in training, one of a tuple
            is drawn per image.
        max_size (int): the longest the longer side may be.
        image_mean, image_std (list of float): per-channel normalisation.
        size_divisible (int): the padded batch's height and width are multiples of it.
        fixed_size (tuple of int, optional): resize every image to this ``(width, height)``
            instead (SSD).
    """

    def __init__(
        self,
        min_size: int,
        max_size: int,
        image_mean: list[float],
        image_std: list[float],
        size_divisible: int = 32,
        fixed_size: tuple[int, int] | None = None,
        **kwargs: Any,
    ):
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> tuple[ImageList, list[dict[str, Tensor]] | None]:
        images = list(images)
        if targets is not None:
            # shallow copies: the caller's dicts are not modified
            targets = [dict(t) for t in targets]
        for i, image in enumerate(images):
            target = targets[i] if targets is not None else None
            if image.dim() != 3:
                raise ValueError(
                    "images is expected to be a list of 3d tensors of shape [C, H, W], "
                    f"got {image.shape}"
                )
            image = self.normalize(image)
            image, target = self.resize(image, target)
            images[i] = image
            if targets is not None and target is not None:
                targets[i] = target

        image_sizes = [tuple(img.shape[-2:]) for img in images]
        batched = self.batch_images(images, size_divisible=self.size_divisible)
        for image_size in image_sizes:
            if len(image_size) != 2:
                raise AssertionError(
                    "Input tensors expected to have in the last two elements H and W, "
                    f"instead got {image_size}"
                )
        image_list = ImageList(batched, [(int(h), int(w)) for h, w in image_sizes])
        return image_list, targets

    def normalize(self, image: Tensor) -> Tensor:
        if not image.is_floating_point():
            raise TypeError(
                f"Expected input images to be of floating type (in range [0, 1]), "
                f"but found type {image.dtype} instead"
            )
        dtype, device = image.dtype, image.device
        mean = ember.as_tensor(self.image_mean, dtype=dtype, device=device)
        std = ember.as_tensor(self.image_std, dtype=dtype, device=device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k: list[int]) -> int:
        """``random.choice(k)`` drawn from Ember's generator (as torchvision draws from
        PyTorch's)."""
        index = int(ember.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def resize(
        self, image: Tensor, target: dict[str, Tensor] | None = None
    ) -> tuple[Tensor, dict[str, Tensor] | None]:
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        if target is None:
            return image, target

        target["boxes"] = resize_boxes(target["boxes"], (h, w), image.shape[-2:])
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (h, w), image.shape[-2:])
        return image, target

    def max_by_axis(self, the_list: list[list[int]]) -> list[int]:
        maxes = list(the_list[0])
        for sublist in the_list[1:]:
            for index, item in enumerate(sublist):
                maxes[index] = max(maxes[index], item)
        return maxes

    def batch_images(self, images: list[Tensor], size_divisible: int = 32) -> Tensor:
        """``images`` zero-padded at the bottom and right into one ``(N, C, H, W)`` tensor,
        ``H`` and ``W`` rounded up to multiples of ``size_divisible``."""
        max_size = self.max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)

        batched_imgs = images[0].new_full([len(images), *max_size], 0)
        for i, img in enumerate(images):
            batched_imgs[i, : img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)
        return batched_imgs

    def postprocess(
        self,
        result: list[dict[str, Tensor]],
        image_shapes: list[tuple[int, int]],
        original_image_sizes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """In eval mode, the boxes (and keypoints) of ``result`` rescaled from the resized
        images' ``image_shapes`` to ``original_image_sizes``, and the masks pasted into
        images of those sizes."""
        if self.training:
            return result
        for pred, im_s, o_im_s in zip(result, image_shapes, original_image_sizes):
            boxes = resize_boxes(pred["boxes"], im_s, o_im_s)
            pred["boxes"] = boxes
            if "masks" in pred:
                pred["masks"] = paste_masks_in_image(pred["masks"], boxes, o_im_s)
            if "keypoints" in pred:
                pred["keypoints"] = resize_keypoints(pred["keypoints"], im_s, o_im_s)
        return result

    def __repr__(self) -> str:
        indent = "\n    "
        return (
            f"{self.__class__.__name__}("
            f"{indent}Normalize(mean={self.image_mean}, std={self.image_std})"
            f"{indent}Resize(min_size={self.min_size}, max_size={self.max_size}, "
            "mode='bilinear')\n)"
        )


def _ratios(original_size: list[int], new_size: list[int], device: Any) -> list[Tensor]:
    """``new / original`` per dimension, as float32 tensors (as torchvision computes them)."""
    return [
        ember.tensor(s, dtype=ember.float32, device=device)
        / ember.tensor(s_orig, dtype=ember.float32, device=device)
        for s, s_orig in zip(new_size, original_size)
    ]


def resize_keypoints(keypoints: Tensor, original_size: list[int], new_size: list[int]) -> Tensor:
    """``(..., K, 3)`` keypoints scaled from an image of ``original_size`` to ``new_size``."""
    ratio_h, ratio_w = _ratios(original_size, new_size, keypoints.device)
    resized = keypoints.clone()
    resized[..., 0] *= ratio_w
    resized[..., 1] *= ratio_h
    return resized


def resize_boxes(boxes: Tensor, original_size: list[int], new_size: list[int]) -> Tensor:
    """``(N, 4)`` xyxy boxes scaled from an image of ``original_size`` to ``new_size``."""
    ratio_height, ratio_width = _ratios(original_size, new_size, boxes.device)
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return ember.stack(
        (xmin * ratio_width, ymin * ratio_height, xmax * ratio_width, ymax * ratio_height), dim=1
    )
