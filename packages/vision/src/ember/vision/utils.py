"""Image grids and annotation drawing, as in ``torchvision.utils``."""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember
from ember import Tensor
from ember.nn import functional as F

from ._flow_to_image import flow_to_image

__all__ = [
    "make_grid",
    "save_image",
    "draw_bounding_boxes",
    "draw_segmentation_masks",
    "draw_keypoints",
    "flow_to_image",
]


def _normalize(tensor: Tensor, value_range, scale_each: bool) -> Tensor:
    """Clamp to ``value_range`` (or the data's own min/max) and shift to ``[0, 1]``."""
    if value_range is not None and not isinstance(value_range, tuple):
        raise TypeError(
            "value_range has to be a tuple (min, max) if specified. min and max are numbers"
        )
    if value_range is not None:
        low, high = value_range
        return (tensor.clamp(min=low, max=high) - low) / max(high - low, 1e-5)
    if scale_each:  # one range per image, all at once
        dims = tuple(range(1, tensor.dim()))
        low, high = tensor.amin(dim=dims, keepdim=True), tensor.amax(dim=dims, keepdim=True)
        return (tensor.clamp(min=low, max=high) - low) / (high - low).clamp(min=1e-5)
    low, high = float(tensor.min()), float(tensor.max())
    return (tensor.clamp(min=low, max=high) - low) / max(high - low, 1e-5)


def make_grid(
    tensor,
    nrow: int = 8,
    padding: int = 2,
    normalize: bool = False,
    value_range=None,
    scale_each: bool = False,
    pad_value: float = 0.0,
) -> Tensor:
    """Tile a mini-batch ``(B, C, H, W)`` (or a list of images) into one ``(C, H', W')`` image."""
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, Tensor):
                    raise TypeError(
                        f"tensor or list of tensors expected, got a list containing {type(t)}"
                    )
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        tensor = _normalize(tensor, value_range, scale_each)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    nmaps, channels = tensor.size(0), tensor.size(1)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    # each tile carries its top/left padding; missing tiles are all padding
    tiles = F.pad(tensor, (padding, 0, padding, 0), value=pad_value)
    if ymaps * xmaps > nmaps:
        blank = ember.full(
            (ymaps * xmaps - nmaps, channels, height, width),
            pad_value,
            dtype=tensor.dtype,
            device=tensor.device,
        )
        tiles = ember.cat((tiles, blank), 0)
    grid = tiles.reshape(ymaps, xmaps, channels, height, width).permute(2, 0, 3, 1, 4)
    grid = grid.reshape(channels, ymaps * height, xmaps * width)
    return F.pad(grid, (0, padding, 0, padding), value=pad_value)


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:
    """Save a tensor (a mini-batch is tiled with :func:`make_grid`) as an image file."""
    from PIL import Image

    with ember.no_grad():
        grid = make_grid(tensor, **kwargs)
        arr = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", ember.uint8).numpy()
    Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr).save(fp, format=format)


def _generate_color_palette(num_objects: int) -> list[tuple[int, int, int]]:
    palette = np.array([2**25 - 1, 2**15 - 1, 2**21 - 1], dtype=np.int64)
    return [tuple(int(v) for v in (i * palette) % 255) for i in range(num_objects)]


def _parse_colors(colors, *, num_objects: int, floating: bool = False) -> list[tuple]:
    """``num_objects`` RGB tuples from None (a palette), one color, or a list of colors."""
    from PIL import ImageColor

    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(
                f"Number of colors must be equal or larger than the number of objects, "
                f"but got {len(colors)} < {num_objects}."
            )
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(
            f"colors must be a tuple or a string, or a list thereof, but got {colors}."
        )
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * num_objects
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    if floating:
        colors = [tuple(v / 255 for v in c) for c in colors]
    return colors


def _check_image(image: Tensor) -> None:
    if not isinstance(image, Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")


def _draw_oriented_box(draw, xy, outline, fill, width: int) -> None:
    """An 8-coordinate box: its first edge dashed (5 on, 5 off) to show the orientation, the
    others solid, the inside filled with ``fill``."""
    (x, y), (x2, y2) = xy[0:2], xy[2:4]
    angle = math.atan2(y2 - y, x2 - x)
    left, dash = math.hypot(x2 - x, y2 - y), True
    while left > 0:
        step = min(left, 5)
        end = (x + math.cos(angle) * step, y + math.sin(angle) * step)
        if dash:
            draw.line([(x, y), end], outline, width)
        (x, y), left, dash = end, left - step, not dash
    n = len(xy)
    for i in range(2, n, 2):
        draw.line(
            ((xy[i], xy[i + 1]), (xy[(i + 2) % n], xy[(i + 3) % n])), width=width, fill=outline
        )
    draw.polygon(xy, fill=fill, outline=None, width=0)


def draw_bounding_boxes(
    image: Tensor,
    boxes: Tensor,
    labels: list[str] | None = None,
    colors=None,
    fill: bool = False,
    width: int = 1,
    font: str | None = None,
    font_size: int | None = None,
    label_colors=None,
    label_background_colors=None,
    fill_labels: bool = False,
) -> Tensor:
    """Draw ``xyxy`` boxes ``(N, 4)`` or oriented boxes ``(N, 8)`` (four corners) on a
    ``(C, H, W)`` uint8 or float image; returns a new image of the same dtype. Labels use
    Pillow's built-in font unless ``font`` names a TrueType file.

    ``fill_labels`` puts each label on a filled box (``label_background_colors``, by default
    the box colors) and then writes it in black unless ``label_colors`` says otherwise.
    """
    from PIL import Image, ImageDraw, ImageFont

    _check_image(image)
    if image.size(0) not in {1, 3}:
        raise ValueError("Only grayscale and RGB images are supported")
    if boxes.shape[-1] == 4 and (
        (boxes[:, 0] > boxes[:, 2]).any() or (boxes[:, 1] > boxes[:, 3]).any()
    ):
        raise ValueError(
            "Boxes need to be in (xmin, ymin, xmax, ymax) format. "
            "Use torchvision.ops.box_convert to convert them"
        )
    num_boxes = boxes.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(
            f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. "
            "Please specify labels for each box."
        )
    colors = _parse_colors(colors, num_objects=num_boxes)
    if label_colors or fill_labels:
        label_colors = _parse_colors(label_colors or "black", num_objects=num_boxes)
    else:
        label_colors = colors
    if fill_labels and label_background_colors:
        backgrounds = _parse_colors(label_background_colors, num_objects=num_boxes)
    else:
        backgrounds = colors
    if font is None:
        if font_size is not None:
            warnings.warn(
                "Argument 'font_size' will be ignored since 'font' is not set.", stacklevel=2
            )
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)

    arr = image.detach().cpu().numpy()
    if arr.shape[0] == 1:
        arr = np.tile(arr, (3, 1, 1))
    floating = image.is_floating_point()
    if floating:
        arr = (arr * arr.dtype.type(255 + 1.0 - 1e-3)).astype(np.uint8)
    canvas = Image.fromarray(np.ascontiguousarray(arr.transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas, "RGBA") if fill else ImageDraw.Draw(canvas)
    rows = zip(boxes.to(ember.int64).tolist(), colors, labels, label_colors, backgrounds)
    for bbox, color, label, label_color, background in rows:
        box_fill = color + (100,) if fill else None
        if len(bbox) > 4:
            _draw_oriented_box(draw, bbox, color, box_fill, width)
        else:
            draw.rectangle(bbox, width=width, outline=color, fill=box_fill)
        if label is not None:
            margin = width + 1
            at = (bbox[0] + margin, bbox[1] + margin)
            if fill_labels:
                left, top, right, bottom = draw.textbbox(at, label, font=txt_font)
                draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=background)
            draw.text(at, label, fill=label_color, font=txt_font)
    out = np.asarray(canvas).transpose(2, 0, 1)
    if floating:
        out = out.astype(np.dtype(image.numpy().dtype)) * np.dtype(image.numpy().dtype).type(
            1.0 / 255
        )
    return ember.from_numpy(np.ascontiguousarray(out)).to(image.device)


def draw_segmentation_masks(
    image: Tensor, masks: Tensor, alpha: float = 0.8, colors=None
) -> Tensor:
    """Blend boolean ``masks`` (``(N, H, W)`` or ``(H, W)``) onto an RGB image with ``alpha``."""
    _check_image(image)
    if image.size()[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if masks.ndim == 2:
        masks = masks[None, :, :]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")
    num_masks = masks.size()[0]
    if num_masks == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn", stacklevel=2)
        return image
    src = image.detach().cpu().numpy()
    m = masks.detach().cpu().numpy()
    palette = np.array(
        _parse_colors(colors, num_objects=num_masks, floating=image.is_floating_point())
    )
    painted = src.copy()
    # the last mask covering a pixel gives its color; pixels under two or more masks turn black
    owner = np.where(m.any(0), num_masks - 1 - np.argmax(m[::-1], axis=0), -1)
    covered = owner >= 0
    painted[:, covered] = palette[owner[covered]].T.astype(src.dtype)
    painted[:, m.sum(0) > 1] = 0
    compute = np.float32 if src.dtype == np.uint8 else src.dtype.type
    out = src.astype(compute) * compute(1 - alpha) + painted.astype(compute) * compute(alpha)
    return ember.from_numpy(np.ascontiguousarray(out.astype(src.dtype))).to(image.device)


def draw_keypoints(
    image: Tensor,
    keypoints: Tensor,
    connectivity: list[tuple[int, int]] | None = None,
    colors=None,
    radius: int = 2,
    width: int = 3,
    visibility: Tensor | None = None,
) -> Tensor:
    """Draw ``keypoints`` ``(num_instances, K, 2)`` (``[x, y]``) as filled circles of ``radius``
    on an RGB ``(3, H, W)`` uint8 or float image, joining the pairs in ``connectivity`` with
    lines of ``width``; keypoints whose ``visibility`` ``(num_instances, K)`` is False, and
    their connections, are skipped. Returns a new image of the same dtype."""
    from PIL import Image, ImageDraw

    if not isinstance(image, Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    _check_image(image)
    if image.size()[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if keypoints.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    if visibility is None:
        visibility = ember.ones(tuple(keypoints.shape[:-1]), dtype=ember.bool)
    if visibility.ndim == 3:
        visibility = visibility.squeeze(-1)
    if visibility.ndim != 2:
        raise ValueError(
            f"visibility must be of shape (num_instances, K). Got ndim={visibility.ndim}"
        )
    if visibility.shape != keypoints.shape[:-1]:
        raise ValueError(
            "keypoints and visibility must have the same dimensionality for num_instances and K. "
            f"Got visibility.shape={visibility.shape!r} and keypoints.shape={keypoints.shape!r}"
        )
    arr = image.detach().cpu().numpy()
    dtype, floating = arr.dtype, image.is_floating_point()
    if floating:
        arr = (arr * dtype.type(255 + 1.0 - 1e-3)).astype(np.uint8)
    canvas = Image.fromarray(np.ascontiguousarray(arr.transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas)
    points = keypoints.to(ember.int64).tolist()
    shown = visibility.cpu().bool().tolist()
    for kpts, vis in zip(points, shown):
        for (x, y), visible in zip(kpts, vis):
            if visible:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors, width=0)
        for a, b in connectivity or ():
            if vis[a] and vis[b]:
                draw.line((tuple(kpts[a]), tuple(kpts[b])), width=width)
    out = np.asarray(canvas).transpose(2, 0, 1)
    if floating:
        out = out.astype(dtype) * dtype.type(1.0 / 255)
    return ember.from_numpy(np.ascontiguousarray(out)).to(image.device)
