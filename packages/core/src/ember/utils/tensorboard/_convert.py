"""Tensors, arrays and figures to the NumPy arrays the summaries are built from."""

from __future__ import annotations

import math

import numpy as np

import ember

__all__ = ["make_np", "convert_to_HWC", "make_grid", "figure_to_image"]


def make_np(x) -> np.ndarray:
    """``x`` (an ember tensor on any device, a NumPy array or a number) as a NumPy array.

    A Python or NumPy number becomes a one-element array, as in PyTorch; a tensor is detached
    and copied to the host (bfloat16 widened to float32, which holds it exactly).
    """
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        t = x.detach()
        if t.dtype == ember.bfloat16:
            t = t.float()
        return np.asarray(t.cpu().numpy())
    raise TypeError(f"Got {type(x)}, but numpy array or ember tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """``N x C x H x W`` images (C 1, 3 or 4) tiled row by row into one ``C' x H' x W'``
    image, ``ncols`` to a row; one channel becomes three (grey as RGB)."""
    if images.ndim != 4:
        raise ValueError(f"Input should be a 4D array of images (NCHW), got shape "
                         f"{tuple(images.shape)}")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    n, c, h, w = images.shape
    if c not in (3, 4):
        raise ValueError(f"images should have 1, 3 or 4 channels, got {c} (shape "
                         f"{tuple(images.shape)})")
    ncols = max(1, min(n, ncols))
    nrows = math.ceil(n / ncols)
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        row, col = divmod(i, ncols)
        canvas[:, row * h:(row + 1) * h, col * w:(col + 1) * w] = images[i]
    return canvas


def convert_to_HWC(array: np.ndarray, input_format: str) -> np.ndarray:
    """An image in ``input_format`` (a permutation of ``CHW``, ``HWC``, ``HW`` or, for a
    batch tiled by :func:`make_grid`, ``NCHW``/``NHWC``) as ``H x W x C`` with 3 or 4
    channels, as ``torch.utils.tensorboard`` does."""
    fmt = input_format.upper()
    if len(set(fmt)) != len(fmt):
        raise ValueError(f"You can not use the same dimension shorthand twice. "
                         f"input_format: {input_format}")
    if len(array.shape) != len(fmt):
        raise ValueError(f"size of input tensor and input format are different. tensor shape: "
                         f"{tuple(array.shape)}, input_format: {input_format}")
    wanted = {4: "NCHW", 3: "HWC", 2: "HW"}.get(len(fmt))
    if wanted is None or set(fmt) != set(wanted):
        raise ValueError(f"dataformats {input_format!r} is not a permutation of NCHW, CHW, HWC "
                         "or HW")
    array = array.transpose([fmt.index(c) for c in wanted])
    if len(fmt) == 4:
        return make_grid(array).transpose(1, 2, 0)
    if len(fmt) == 3:
        if array.shape[2] == 1:
            return np.concatenate([array] * 3, axis=2)
        if array.shape[2] not in (3, 4):
            raise ValueError(f"an image should have 1, 3 or 4 channels, got {array.shape[2]} "
                             f"(dataformats {input_format!r})")
        return array
    return np.stack([array] * 3, axis=2)


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """A matplotlib figure rendered to a ``3 x H x W`` uint8 array, or a list of figures to
    ``N x 3 x H x W``; ``close`` closes each figure once drawn. Needs ``matplotlib``."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(figure) -> np.ndarray:
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        if close:
            plt.close(figure)
        return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
