"""Multi-scale RoIAlign over the levels of a feature pyramid, as in
``torchvision.ops.poolers``."""

from __future__ import annotations

import ember
from ember import Tensor, nn

from .boxes import box_area
from .roi_align import roi_align

__all__ = ["MultiScaleRoIAlign"]


class LevelMapper:
    """The FPN level of each box (eq. 1 of the FPN paper): ``floor(canonical_level +
    log2(sqrt(area) / canonical_scale) + eps)`` clamped to ``[k_min, k_max]``, less
    ``k_min``."""

    def __init__(
        self,
        k_min: int,
        k_max: int,
        canonical_scale: int = 224,
        canonical_level: int = 4,
        eps: float = 1e-6,
    ):
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists: list[Tensor]) -> Tensor:
        s = ember.sqrt(ember.cat([box_area(boxlist) for boxlist in boxlists]))
        target_lvls = ember.floor(
            self.lvl0 + ember.log2(s / self.s0) + ember.tensor(self.eps, dtype=s.dtype)
        )
        target_lvls = ember.clamp(target_lvls, min=self.k_min, max=self.k_max)
        return (target_lvls.to(ember.int64) - self.k_min).to(ember.int64)


def initLevelMapper(
    k_min: int,
    k_max: int,
    canonical_scale: int = 224,
    canonical_level: int = 4,
    eps: float = 1e-6,
) -> LevelMapper:
    return LevelMapper(k_min, k_max, canonical_scale, canonical_level, eps)


def _convert_to_roi_format(boxes: list[Tensor]) -> Tensor:
    """``Tensor[K, 5]`` of ``(image_index, x1, y1, x2, y2)`` from per-image boxes."""
    concat_boxes = ember.cat(boxes, dim=0)
    device, dtype = concat_boxes.device, concat_boxes.dtype
    ids = ember.cat(
        [ember.full_like(b[:, :1], i, dtype=dtype, device=device) for i, b in enumerate(boxes)],
        dim=0,
    )
    return ember.cat([ids, concat_boxes], dim=1)


def _infer_scale(feature: Tensor, original_size: list[int]) -> float:
    """The power of two nearest to the feature map's size over the image's (first dim)."""
    size = feature.shape[-2:]
    possible_scales: list[float] = []
    for s1, s2 in zip(size, original_size):
        approx_scale = float(s1) / float(s2)
        scale = 2 ** float(ember.tensor(approx_scale).log2().round())
        possible_scales.append(scale)
    return possible_scales[0]


def _setup_scales(
    features: list[Tensor],
    image_shapes: list[tuple[int, int]],
    canonical_scale: int,
    canonical_level: int,
) -> tuple[list[float], LevelMapper]:
    if not image_shapes:
        raise ValueError("images list should not be empty")
    max_x = 0
    max_y = 0
    for shape in image_shapes:
        max_x = max(shape[0], max_x)
        max_y = max(shape[1], max_y)
    original_input_shape = (max_x, max_y)
    scales = [_infer_scale(feat, original_input_shape) for feat in features]
    # the levels: the network downsamples by a factor of 2 at each one
    lvl_min = -ember.log2(ember.tensor(scales[0], dtype=ember.float32)).item()
    lvl_max = -ember.log2(ember.tensor(scales[-1], dtype=ember.float32)).item()
    map_levels = initLevelMapper(
        int(lvl_min), int(lvl_max), canonical_scale=canonical_scale,
        canonical_level=canonical_level,
    )
    return scales, map_levels


def _filter_input(x: dict[str, Tensor], featmap_names: list[str]) -> list[Tensor]:
    return [v for k, v in x.items() if k in featmap_names]


def _multiscale_roi_align(
    x_filtered: list[Tensor],
    boxes: list[Tensor],
    output_size: list[int],
    sampling_ratio: int,
    scales: list[float] | None,
    mapper: LevelMapper | None,
) -> Tensor:
    """RoIAlign of each box (image coordinates, ``xyxy``) on the level ``mapper`` picks."""
    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    num_levels = len(x_filtered)
    rois = _convert_to_roi_format(boxes)
    if num_levels == 1:
        return roi_align(
            x_filtered[0], rois, output_size=output_size, spatial_scale=scales[0],
            sampling_ratio=sampling_ratio,
        )
    levels = mapper(boxes)
    num_rois = len(rois)
    num_channels = x_filtered[0].shape[1]
    dtype, device = x_filtered[0].dtype, x_filtered[0].device
    result = ember.zeros(
        (num_rois, num_channels) + tuple(output_size), dtype=dtype, device=device
    )
    for level, (per_level_feature, scale) in enumerate(zip(x_filtered, scales)):
        idx_in_level = ember.where(levels == level)[0]
        rois_per_level = rois[idx_in_level]
        result_idx_in_level = roi_align(
            per_level_feature, rois_per_level, output_size=output_size, spatial_scale=scale,
            sampling_ratio=sampling_ratio,
        )
        # the levels' dtypes may differ (autocast): match the result's before the copy
        result[idx_in_level] = result_idx_in_level.to(result.dtype)
    return result


class MultiScaleRoIAlign(nn.Module):
    """Multi-scale RoIAlign: each box is pooled from the feature map of the FPN level eq. 1
    of the FPN paper assigns it (``canonical_level`` is the level of a box of area
    ``canonical_scale ** 2``); the scales are inferred from the feature maps' sizes against
    the images' on the first call.

    Args:
        featmap_names: the names of the feature maps to pool from.
        output_size: the output size of the pooled regions.
        sampling_ratio: RoIAlign's sampling ratio.
        canonical_scale, canonical_level: the LevelMapper's (keyword-only).
    """

    def __init__(
        self,
        featmap_names: list[str],
        output_size: int | tuple[int] | list[int],
        sampling_ratio: int,
        *,
        canonical_scale: int = 224,
        canonical_level: int = 4,
    ):
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(
        self, x: dict[str, Tensor], boxes: list[Tensor], image_shapes: list[tuple[int, int]]
    ) -> Tensor:
        """Pool ``boxes`` (per image ``Tensor[N, 4]``, ``xyxy`` in image coordinates) from the
        feature maps ``x``; ``image_shapes`` are the images' ``(height, width)``."""
        x_filtered = _filter_input(x, self.featmap_names)
        if self.scales is None or self.map_levels is None:
            self.scales, self.map_levels = _setup_scales(
                x_filtered, image_shapes, self.canonical_scale, self.canonical_level
            )
        return _multiscale_roi_align(
            x_filtered, boxes, self.output_size, self.sampling_ratio, self.scales,
            self.map_levels,
        )

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(featmap_names={self.featmap_names}, "
            f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})"
        )
