"""Anchor generators (torchvision's ``models.detection.anchor_utils``).

``AnchorGenerator`` tiles zero-centred cell anchors over every feature map (RPN, RetinaNet,
FCOS); ``DefaultBoxGenerator`` builds SSD's default boxes. Neither has state_dict entries.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember import Tensor, nn

__all__ = ["AnchorGenerator", "DefaultBoxGenerator"]


class AnchorGenerator(nn.Module):
    """
    Module that generates anchors for a set of feature maps and image sizes.

    The module supports computing anchors at multiple sizes and aspect ratios per feature map.
    This module assumes aspect ratio = height / width for each anchor.

    sizes and aspect_ratios should have the same number of elements, and it should
    correspond to the number of feature maps.

    sizes[i] and aspect_ratios[i] can have an arbitrary number of elements, and
    AnchorGenerator will output a set of sizes[i] * aspect_ratios[i] anchors per spatial
    location for feature map i.

    Args:
        sizes (Tuple[Tuple[int]]):
        aspect_ratios (Tuple[Tuple[float]]):
    """

    def __init__(
        self,
        sizes: Any = ((128, 256, 512),),
        aspect_ratios: Any = ((0.5, 1.0, 2.0),),
    ) -> None:
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [
            self.generate_anchors(size, ratios) for size, ratios in zip(sizes, aspect_ratios)
        ]

    def generate_anchors(
        self,
        scales: list[int],
        aspect_ratios: list[float],
        dtype: ember.dtype = ember.float32,
        device: Any = None,
    ) -> Tensor:
        """Zero-centred ``[x1, y1, x2, y2]`` anchors, one per (aspect ratio, scale), rounded."""
        device = ember.device("cpu") if device is None else device
        scales = ember.as_tensor(scales, dtype=dtype, device=device)
        aspect_ratios = ember.as_tensor(aspect_ratios, dtype=dtype, device=device)
        h_ratios = ember.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).reshape(-1)
        hs = (h_ratios[:, None] * scales[None, :]).reshape(-1)
        return (ember.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def set_cell_anchors(self, dtype: ember.dtype, device: Any) -> None:
        self.cell_anchors = [a.to(dtype=dtype, device=device) for a in self.cell_anchors]

    def num_anchors_per_location(self) -> list[int]:
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes: list[Any], strides: list[Any]) -> list[Tensor]:
        """For each feature map, every cell anchor shifted to every grid position
        (positions row-major, the cell anchors fastest)."""
        cell_anchors = self.cell_anchors
        if not len(grid_sizes) == len(strides) == len(cell_anchors):
            raise ValueError(
                "Anchors should be Tuple[Tuple[int]] because each feature "
                "map could potentially have different sizes and aspect ratios. "
                "There needs to be a match between the number of "
                "feature maps passed and the number of sizes / aspect ratios specified."
            )
        anchors = []
        for (grid_h, grid_w), (stride_h, stride_w), base in zip(grid_sizes, strides, cell_anchors):
            device = base.device
            shifts_x = ember.arange(0, int(grid_w), dtype=ember.int64, device=device) * int(
                stride_w
            )
            shifts_y = ember.arange(0, int(grid_h), dtype=ember.int64, device=device) * int(
                stride_h
            )
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = ember.stack((shift_x, shift_y, shift_x, shift_y), dim=1).to(base.dtype)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_list: Any, feature_maps: list[Tensor]) -> list[Tensor]:
        grid_sizes = [tuple(fm.shape[-2:]) for fm in feature_maps]
        image_size = tuple(image_list.tensors.shape[-2:])
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [(image_size[0] // g[0], image_size[1] // g[1]) for g in grid_sizes]
        self.set_cell_anchors(dtype, device)
        all_levels = ember.cat(self.grid_anchors(grid_sizes, strides))
        # torchvision concatenates the same per-level anchors once per image
        return [all_levels.clone() for _ in range(len(image_list.image_sizes))]


class DefaultBoxGenerator(nn.Module):
    """
    This module generates the default boxes of SSD for a set of feature maps and image sizes.

    Args:
        aspect_ratios (List[List[int]]): A list with all the aspect ratios used in each
            feature map.
        min_ratio (float): The minimum scale of the default boxes used in the estimation of
            the scales of each feature map. It is used only if ``scales`` is not provided.
        max_ratio (float): The maximum scale of the default boxes used in the estimation of
            the scales of each feature map. It is used only if ``scales`` is not provided.
        scales (List[float]], optional): The scales of the default boxes. If not provided it
            will be estimated using the ``min_ratio`` and ``max_ratio`` parameters.
        steps (List[int]], optional): It's a hyper-parameter that affects the tiling of
            default boxes. If not provided it will be estimated from the data.
        clip (bool): Whether the standardized values of default boxes should be clipped
            between 0 and 1. The clipping is applied while the boxes are encoded in format
            ``(cx, cy, w, h)``.
    """

    def __init__(
        self,
        aspect_ratios: list[list[int]],
        min_ratio: float = 0.15,
        max_ratio: float = 0.9,
        scales: list[float] | None = None,
        steps: list[int] | None = None,
        clip: bool = True,
    ) -> None:
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError("aspect_ratios and steps should have the same length")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        num_outputs = len(aspect_ratios)
        if scales is None:
            if num_outputs > 1:
                span = max_ratio - min_ratio
                self.scales = [
                    min_ratio + span * k / (num_outputs - 1.0) for k in range(num_outputs)
                ]
                self.scales.append(1.0)
            else:
                self.scales = [min_ratio, max_ratio]
        else:
            self.scales = scales
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    def _generate_wh_pairs(
        self, num_outputs: int, dtype: ember.dtype = ember.float32, device: Any = None
    ) -> list[Tensor]:
        """Per feature map k: (s_k, s_k), (s'_k, s'_k) with s'_k = sqrt(s_k s_{k+1}), then
        (w, h) and (h, w) for every aspect ratio."""
        device = ember.device("cpu") if device is None else device
        pairs = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime_k = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh = [[s_k, s_k], [s_prime_k, s_prime_k]]
            for ar in self.aspect_ratios[k]:
                sq_ar = math.sqrt(ar)
                w, h = s_k * sq_ar, s_k / sq_ar
                wh.extend([[w, h], [h, w]])
            pairs.append(ember.as_tensor(wh, dtype=dtype, device=device))
        return pairs

    def num_anchors_per_location(self) -> list[int]:
        # 2 default boxes + 2 per aspect ratio of the feature map
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(
        self,
        grid_sizes: list[Any],
        image_size: Any,
        dtype: ember.dtype = ember.float32,
        device: Any = None,
    ) -> Tensor:
        """Default boxes in ``(cx, cy, w, h)``, relative to the image (page 6 of the SSD
        paper)."""
        boxes = []
        for k, (f_h, f_w) in enumerate(grid_sizes):
            if self.steps is not None:
                x_f_k = image_size[1] / self.steps[k]
                y_f_k = image_size[0] / self.steps[k]
            else:
                y_f_k, x_f_k = f_h, f_w
            # as torchvision: int64 arange + 0.5 is float32, then divided
            shifts_x = ((ember.arange(0, f_w, device=device) + 0.5) / x_f_k).to(dtype)
            shifts_y = ((ember.arange(0, f_h, device=device) + 0.5) / y_f_k).to(dtype)
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            n_pairs = len(self._wh_pairs[k])
            shifts = ember.stack((shift_x, shift_y) * n_pairs, dim=-1).reshape(-1, 2)
            wh = self._wh_pairs[k].to(device=device)
            if self.clip:
                wh = wh.clamp(min=0, max=1)
            boxes.append(ember.cat((shifts, wh.repeat(f_h * f_w, 1).to(dtype)), dim=1))
        return ember.cat(boxes, dim=0)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}("
            f"aspect_ratios={self.aspect_ratios}"
            f", clip={self.clip}"
            f", scales={self.scales}"
            f", steps={self.steps}"
            ")"
        )

    def forward(self, image_list: Any, feature_maps: list[Tensor]) -> list[Tensor]:
        grid_sizes = [tuple(int(s) for s in fm.shape[-2:]) for fm in feature_maps]
        image_size = tuple(int(s) for s in image_list.tensors.shape[-2:])
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        default = self._grid_default_boxes(grid_sizes, image_size, dtype=dtype, device=device)
        x_y_size = ember.tensor([image_size[1], image_size[0]], device=device)
        # (cx, cy, w, h) relative -> (x1, y1, x2, y2) in pixels
        xyxy = ember.cat(
            [
                (default[:, :2] - 0.5 * default[:, 2:]) * x_y_size,
                (default[:, :2] + 0.5 * default[:, 2:]) * x_y_size,
            ],
            -1,
        )
        return [xyxy.clone() for _ in image_list.image_sizes]
