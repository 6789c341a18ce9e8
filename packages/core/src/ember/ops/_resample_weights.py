"""Per-axis resampling weights of PyTorch's separable CPU kernels: ``antialias=True``
(Pillow's filters widened by the downscale factor) for float input, and the fixed-point int16
weights of its uint8 path (``antialias`` either way), with the arithmetic PyTorch does.

A float axis becomes ``(xmin, weights)``: output ``i`` is ``sum_k x[xmin[i] + k] * w[i, k]``
over its ``xsize[i]`` taps (``w`` is zero beyond them). Weights are computed in the input's
type (float32 for float32, as PyTorch's ``scalar_t``), step by step in the precision each
C++ expression has, so float32 resizes land on PyTorch's bits, not a float64 approximation.

uint8 input is resampled in integers, as PyTorch's kernel (and Pillow) do: weights scaled by
``2**precision`` and rounded to int16, ``(2**(precision-1) + sum x*w) >> precision`` clamped
to 0..255, one axis at a time (the last first), each pass rounded to uint8.
"""

from __future__ import annotations

import math

import numpy as np

# interp_size: the filter's support at scale 1, in input pixels
INTERP_SIZE = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _filter(mode: str, x, ft, cubic_a: float):
    """PyTorch's ``aa_filter`` of ``mode`` on ``x`` (an array of ``ft``), in ``ft``."""
    x = np.abs(x)
    one = ft(1.0)
    if mode == "bilinear":
        return np.where(x < one, one - x, ft(0.0)).astype(ft)
    if mode == "bicubic":  # PyTorch's build contracts these polynomials into fused multiply-adds
        a = ft(cubic_a)
        near = _fma(_fma(x, a + ft(2), -(a + ft(3)), ft) * x, x, one, ft)
        far = _fma(_fma(_fma(x, a, -(ft(5) * a), ft), x, ft(8) * a, ft), x, -(ft(4) * a), ft)
        return np.where(x < one, near, np.where(x < ft(2.0), far, ft(0.0))).astype(ft)
    # lanczos-3: sinc(x) * sinc(x / 3) for |x| < 3 (Pillow's)
    third = (x.astype(np.float64) / 3.0).astype(ft)
    return np.where(x < ft(3.0), _sinc(x, ft) * _sinc(third, ft), ft(0.0)).astype(ft)


def _fma(a, b, c, ft):
    """``a * b + c`` rounded once to ``ft`` (exact for float32 through float64; float64 input
    gets the unfused result, within an ulp)."""
    if ft == np.float32:
        return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(ft)
    return a * b + c


def cubic_coefficients(t, ft):
    """The four cubic-convolution weights (``A = -0.75``) of the taps ``floor(x) - 1 ..
    floor(x) + 2`` for ``t = x - floor(x)`` (an array of ``ft``), as PyTorch's
    ``get_cubic_upsample_coefficients`` computes them: fused multiply-adds, the last tap at
    ``(1 - t) + 1``."""
    one = ft(1.0)
    x2 = (one - t).astype(ft)
    return (_filter("bicubic", (t + one).astype(ft), ft, -0.75),
            _filter("bicubic", t, ft, -0.75), _filter("bicubic", x2, ft, -0.75),
            _filter("bicubic", (x2 + one).astype(ft), ft, -0.75))


def _sinc(x, ft):
    px = x * ft(math.pi)
    with np.errstate(invalid="ignore", divide="ignore"):  # sin correctly rounded, as glibc's
        s = np.sin(px.astype(np.float64)).astype(ft) / px
    return np.where(x == 0, ft(1.0), s).astype(ft)


def source_scale(in_size: int, out_size: int, align_corners: bool, scale, ft):
    """PyTorch's ``area_pixel_compute_scale`` in ``ft``."""
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0.0)
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(in_size) / ft(out_size)


def aa_weights(mode: str, in_size: int, out_size: int, align_corners: bool, scale, ft):
    """``(xmin, xsize, w)`` of an antialiased resize of one axis: ``w`` is
    ``(out_size, max_interp_size)`` in ``ft``, normalised to sum 1 per output (PyTorch's
    ``_compute_indices_min_size_weights_aa``; ``align_corners`` only changes the scale)."""
    s = source_scale(in_size, out_size, align_corners, scale, ft)
    interp = INTERP_SIZE[mode]
    s64 = np.float64(s)
    support = ft(interp * 0.5 * s64) if s >= 1.0 else ft(interp * 0.5)
    width = int(math.ceil(support)) * 2 + 1
    i = np.arange(out_size)
    center = (s64 * (i + 0.5)).astype(ft)
    invscale = ft(1.0 / s64) if s >= 1.0 else ft(1.0)
    xmin = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    xmax = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), in_size)
    xsize = np.clip(xmax - xmin, 0, width)
    k = np.arange(width)
    taps = (k[None, :] + xmin[:, None]).astype(ft) - center[:, None]
    arg = ((taps.astype(np.float64) + 0.5) * np.float64(invscale)).astype(ft)
    inside = k[None, :] < xsize[:, None]
    w = np.where(inside, _filter(mode, arg, ft, -0.5), ft(0.0)).astype(ft)
    total = w[:, 0].copy()
    for j in range(1, width):  # PyTorch's running sum, in its order
        total = (total + w[:, j]).astype(ft)
    with np.errstate(invalid="ignore", divide="ignore"):
        normed = (w / total[:, None]).astype(ft)
    w = np.where(total[:, None] != 0, normed, w)
    return xmin, xsize, w


def _interp_weights_u8(mode: str, in_size: int, out_size: int, align_corners: bool, scale):
    """``(xmin, xsize, w)`` in float64 of PyTorch's uint8 ``antialias=False`` path
    (``_compute_indices_min_size_weights``): the plain interpolation taps, with those that fall
    outside the input folded onto the edge pixels."""
    interp = INTERP_SIZE[mode]
    cubic = interp > 2
    s = source_scale(in_size, out_size, align_corners, scale, np.float64)
    i = np.arange(out_size, dtype=np.float64)
    if align_corners:
        real = s * i
    else:
        real = s * (i + 0.5) - 0.5
        if not cubic:
            real = np.maximum(real, 0.0)
    # floorf, as PyTorch's guard_index_and_lambda: the position rounded to float first
    index = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), in_size - 1)
    lam = np.clip(real - index, 0.0, 1.0)
    support = interp // 2
    lo = index - support + 1
    xmin = np.maximum(lo, 0)
    xsize = np.clip(np.minimum(index + support + 1, in_size) - xmin, 0, interp)
    w = np.zeros((out_size, interp))
    rows = np.arange(out_size)
    slot = np.zeros(out_size, dtype=np.int64)
    for j in range(interp):
        v = _filter(mode, (j + 1 - support) - lam, np.float64, -0.75)
        src = lo + j
        slot = np.where(src <= 0, 0, np.where(src >= in_size - 1, xsize - 1, slot))
        np.add.at(w, (rows, slot), v)
        slot = slot + 1
    return xmin, xsize, w


def int16_weights(mode: str, in_size: int, out_size: int, align_corners: bool, scale,
                  antialias: bool):
    """``(xmin, xsize, w16, precision)``: the uint8 kernel's weights, scaled by
    ``2**precision`` (the largest that keeps the biggest weight below 2**15) and rounded half
    away from zero."""
    if antialias:
        xmin, xsize, w = aa_weights(mode, in_size, out_size, align_corners, scale, np.float64)
    else:
        xmin, xsize, w = _interp_weights_u8(mode, in_size, out_size, align_corners, scale)
    wt_max = float(w.max(initial=0.0))
    precision = 0
    while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = w * (1 << precision)
    w16 = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64)
    return xmin, xsize, w16, precision
