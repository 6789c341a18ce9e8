"""Spatial-transformer sampling: ``affine_grid`` and ``grid_sample`` of
``torch.nn.functional``, and the ``torch`` functions under them (``affine_grid_generator``,
``grid_sampler``, ``grid_sampler_2d``, ``grid_sampler_3d``).

``grid_sample`` is a sum over interpolation taps (2 per spatial dim for bilinear, 4 for
bicubic, 1 for nearest): each tap gathers the channel vectors of the input (laid out
channels-last once) at integer positions (``_gather_rows``, whose backward scatters with one
``bincount`` and whose double backward gathers again) and multiplies them by a weight that is
a Tensor expression of the grid.
Autograd then gives the gradients with respect to both the input and the grid, and their
higher derivatives, with no hand-written backward for the interpolation. The coordinate
maps (unnormalize, clip, reflect) follow PyTorch's ``GridSampler.h``, gradients included:
zero on and beyond a clipped border.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import no_grad
from ..autograd.graph import make_node_class, result
from ._casts import bfloat16_in_float32
from .pointwise import where
from .registry import register

__all__ = ["affine_grid", "affine_grid_generator", "grid_sample", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


# -- gathering input values at sampled positions --------------------------------------------

def _gather_rows(x: Tensor, idx) -> Tensor:
    """``out[n, q] = x[idx[n, q]]``: rows of the channels-last ``(R, C)`` input ``x`` at an
    int64 array ``idx`` of shape ``(N, Q)``; the backward adds the gradient back there."""
    return result(xp_of(x).take(x._data, idx, axis=0), x._device, GatherRowsBackward0, (x,), (),
                  (idx, x._data.shape[0]))


def _scatter_rows(g: Tensor, idx, rows: int) -> Tensor:
    """The adjoint of ``_gather_rows``: zeros of ``(rows, C)`` with ``g[n, q]`` added to row
    ``idx[n, q]``, repeated rows summing (one ``bincount``, no ``add.at``)."""
    gd = g._data
    xp = xp_of(g)
    c = gd.shape[-1]
    flat = (idx[..., None] * c + xp.arange(c, dtype=np.int64)).ravel()
    r = xp.bincount(flat, weights=gd.ravel(), minlength=rows * c)
    return result(r.astype(gd.dtype, copy=False).reshape(rows, c), g._device,
                  ScatterRowsBackward0, (g,), (), (idx,))


GatherRowsBackward0 = make_node_class(
    "GatherRowsBackward0", lambda node, g: (_scatter_rows(g, *node.ctx),))
ScatterRowsBackward0 = make_node_class(
    "ScatterRowsBackward0", lambda node, g: (_gather_rows(g, *node.ctx),))


# -- coordinate maps (PyTorch's GridSampler.h) ------------------------------------------------

def _const(like: Tensor, array) -> Tensor:
    return _make(array, like._device)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid coordinates in ``[-1, 1]`` to pixel positions: ``-1`` and ``1`` are the centres
    of the corner pixels (``align_corners``) or their outer edges."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(x: Tensor, size: int, nan_high: bool) -> Tensor:
    """``x`` clamped to ``[0, size - 1]``, its gradient zero on and beyond the bounds (one on
    them for ``clamp``); NaN clips to 0, as PyTorch's vectorized 2-D kernel does, or to
    ``size - 1`` (``nan_high``), as its scalar 3-D kernel's ``min(limit, max(x, 0))`` does."""
    d = x._data
    xp = xp_of(x)
    inside = (d > 0) & (d < size - 1)
    clipped = xp.nan_to_num(xp.clip(d, 0, size - 1), nan=float(size - 1) if nan_high else 0.0)
    return where(_const(x, inside), x, _const(x, clipped))


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``x`` reflected by the borders ``twice_low / 2`` and ``twice_high / 2`` until inside,
    with the sign of the gradient flipped on every reflection."""
    if twice_low == twice_high:  # a one-pixel dim: position 0, a zero gradient (not none)
        zeros = xp_of(x).zeros_like(x._data)
        return where(_const(x, zeros.astype(bool)), x, _const(x, zeros))
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    xp = xp_of(x)
    shifted = x - low
    sign = xp.where(shifted._data < 0, -1, 1).astype(x._data.dtype)
    dist = shifted * _const(x, sign)  # |x - low|, gradient +-1 (also at 0, as PyTorch)
    with np.errstate(invalid="ignore"):
        flips = xp.floor(dist._data / span)
    extra = dist - _const(x, flips * span)
    odd = _const(x, flips % 2 == 1)
    return where(odd, span - extra, extra) + low


def _pad_coordinates(x: Tensor, size: int, padding_mode: str, align_corners: bool,
                     nan_high: bool = False) -> Tensor:
    """Pixel positions mapped into the input by ``padding_mode`` (``zeros``: unchanged)."""
    if padding_mode == "border":
        return _clip(x, size, nan_high)
    if padding_mode == "reflection":
        if align_corners:
            return _clip(_reflect(x, 0, 2 * (size - 1)), size, nan_high)
        return _clip(_reflect(x, -1, 2 * size - 1), size, nan_high)
    return x


def cubic_weights(t):
    """The four cubic-convolution weights (``A = -0.75``, as PyTorch) of the taps at
    ``floor(x) - 1 .. floor(x) + 2`` for ``t = x - floor(x)``: arrays or Tensors."""
    a = -0.75

    def near(s):  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


# -- taps ------------------------------------------------------------------------------------

def _dim_taps(coord: Tensor, size: int, mode: str, padding_mode: str, align_corners: bool,
              nan_high: bool):
    """One spatial dim's taps: ``[(positions, weight)]``, positions a float array of pixel
    indices (possibly outside the input), the weight a Tensor of the grid or None (one)."""
    xp = xp_of(coord)
    if mode == "bicubic":  # the padding maps each tap, not the source position
        x = _unnormalize(coord, size, align_corners)
        lo = xp.floor(x._data)
        weights = cubic_weights(x - _const(x, lo))
        return [(_pad_coordinates(_const(x, lo + (j - 1)), size, padding_mode,
                                  align_corners)._data, w) for j, w in enumerate(weights)]
    if mode == "nearest":  # the grid gets no gradient: no graph to record
        with no_grad():
            x = _pad_coordinates(_unnormalize(coord, size, align_corners), size, padding_mode,
                                 align_corners, nan_high)
        return [(xp.rint(x._data), None)]
    x = _pad_coordinates(_unnormalize(coord, size, align_corners), size, padding_mode,
                         align_corners, nan_high)
    lo = xp.floor(x._data)
    frac = x - _const(x, lo)
    return [(lo, 1 - frac), (lo + 1, frac)]


def _masked_taps(taps, size: int, like: Tensor, skip: bool):
    """Taps as ``(int64 positions, weight Tensor, valid)``, the weight zeroed where the
    position is outside ``[0, size)`` (the zero padding; ``valid`` False) and the position
    then clipped to 0. PyTorch's scalar 3-D kernel skips such a tap (``skip``: zeroed by
    ``where``, so that the NaN or infinite weight of a NaN or infinite grid value reaches
    neither the output nor a gradient); its vectorized 2-D kernel multiplies the masked
    value by the weight, NaN times zero giving NaN."""
    xp = xp_of(like)
    out = []
    for pos, w in taps:
        valid = (pos >= 0) & (pos <= size - 1)  # False for NaN
        idx = xp.where(valid, pos, 0).astype(np.int64)
        mask = _const(like, valid.astype(like._data.dtype))
        if w is None:
            w = mask
        elif skip:
            w = where(_const(like, valid), w, _const(like, xp.zeros((), w._data.dtype)))
        else:
            w = w * mask
        out.append((idx, w, valid))
    return out


def _weighted(values: Tensor, weight: Tensor, valid) -> Tensor:
    """``values * weight``, the gradient to ``values`` zero where not ``valid`` (PyTorch's
    2-D backward adds nothing to the input for an out-of-bounds tap, even with a NaN
    weight)."""
    if valid.all():
        return values * weight
    keep = _const(weight, valid[..., None])
    zero = _const(weight, xp_of(weight).zeros((), weight._data.dtype))
    return values * where(keep, weight, zero) + values.detach() * where(keep, zero, weight)


@bfloat16_in_float32
def _sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str,
            align_corners: bool) -> Tensor:
    """``grid_sample`` on checked arguments: the sum over tap combinations of gathered input
    values times the product of the per-dim weights."""
    n = input._data.ndim - 2
    spatial = input._data.shape[2:]
    N, C = input._data.shape[:2]
    out_shape = grid._data.shape[1:-1]
    S, Q = math.prod(spatial), math.prod(out_shape)
    points = grid.reshape(N, Q, n)
    # channels last; the input's gradient contiguous, as PyTorch's backward allocates it
    x = _contiguous_grad(input).reshape(N, C, S).transpose(1, 2).contiguous().reshape(N * S, C)
    batch_rows = xp_of(input).arange(N, dtype=np.int64).reshape(N, 1) * S
    per_dim = []
    for i, size in enumerate(spatial):  # grid's last axis lists x (width) first
        coord = points[..., n - 1 - i]
        taps = _dim_taps(coord, size, mode, padding_mode, align_corners, n == 3)
        per_dim.append(_masked_taps(taps, size, coord, n == 3))
    strides = [math.prod(spatial[i + 1:]) for i in range(n)]
    out = None
    for combo in itertools.product(*per_dim):
        rows = batch_rows + sum(idx * r for (idx, _, _), r in zip(combo, strides))
        weight, valid = combo[0][1], combo[0][2]
        for _, w, v in combo[1:]:
            weight, valid = weight * w, valid & v
        term = _weighted(_gather_rows(x, rows), weight.unsqueeze(2), valid)
        out = term if out is None else out + term
    out = out.transpose(1, 2).reshape(N, C, *out_shape).contiguous()  # PyTorch's layout
    if mode == "nearest":  # PyTorch's backward gives the grid a zero gradient, not none
        return result(out._data, out._device, _NEAREST_NODES[n - 2], (out, grid),
                      ctx=tuple(grid._data.shape))
    return out


def _contiguous_grad_bw(node, g):
    return (g.contiguous(),)


ContiguousGradBackward = make_node_class("GridSamplerInputBackward", _contiguous_grad_bw)


def _contiguous_grad(t: Tensor) -> Tensor:
    """``t`` itself (the same array) to the forward, its gradient made contiguous."""
    return result(t._data, t._device, ContiguousGradBackward, (t,))


def _nearest_bw(node, g):
    from .._factory import zeros

    return (g, zeros(*node.ctx, dtype=g.dtype, device=g._device))


_NEAREST_NODES = tuple(make_node_class(f"GridSampler{k}DBackward0", _nearest_bw)
                       for k in (2, 3))


# -- grid_sample and the torch functions under it ---------------------------------------------

def _check_sampler(input: Tensor, grid: Tensor, mode: str, dims: int) -> None:
    """PyTorch's checks of ``grid_sampler`` for ``dims``-D input, in its order and words."""
    check_same_device(input, grid)
    ish, gsh = list(input._data.shape), list(grid._data.shape)
    sizes = f"input with sizes {ish} and grid with sizes {gsh}"
    if ish[:1] != gsh[:1]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got {sizes}")
    if gsh[-1:] != [len(ish) - 2]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {len(ish) - 2} in last "
                           f"dimension, but got grid with sizes {gsh}")
    for i in range(2, len(ish)):
        if ish[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {ish} with dimension {i} "
                               "being empty")
    if len(ish) != dims or len(gsh) != dims:
        raise RuntimeError(f"grid_sampler(): expected {dims}D input and grid with same number "
                           f"of dimensions, but got {sizes}")
    if dims == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    idt, gdt = input._data.dtype, grid._data.dtype
    if idt not in _dtype.FLOATING_NP:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if dims == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(idt)}'")
    if gdt != idt:
        raise RuntimeError(f"expected scalar type {scalar_type_name(idt)} but found "
                           f"{scalar_type_name(gdt)}")


def _enum(value: int, names: tuple, what: str) -> str:
    if not 0 <= int(value) < len(names):
        raise RuntimeError(f"grid_sampler(): unknown {what} {value}")
    return names[int(value)]


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, dims):
    mode = _enum(interpolation_mode, _MODES, "interpolation mode")
    padding = _enum(padding_mode, _PADDING_MODES, "padding mode")
    _check_sampler(input, grid, mode, dims)
    return _sample(input, grid, mode, padding, bool(align_corners))


@register("grid_sampler", method=False)
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler``: ``grid_sample`` with the modes as integers (interpolation
    0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    dims = 4 if input._data.ndim == 4 else 5
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, dims)


@register("grid_sampler_2d", method=False)
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_2d``: ``grid_sampler`` for 4-D input."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 4)


@register("grid_sampler_3d", method=False)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``torch.grid_sampler_3d``: ``grid_sampler`` for 5-D input."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 5)


@register("grid_sample", function=False, method=False)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) at the normalized positions
    of ``grid`` (``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``, ``x`` first;
    ``-1`` and ``1`` are the input's extremes): output ``(N, C, H_out, W_out)`` (or 5-D).

    ``mode``: ``'bilinear'`` (trilinear for 5-D), ``'nearest'`` or ``'bicubic'`` (4-D only);
    ``padding_mode``: what positions outside the input read, ``'zeros'``, ``'border'`` (the
    nearest border value) or ``'reflection'``; ``align_corners`` (default False, with a
    warning when not given): whether ``-1`` and ``1`` are the centres of the corner pixels
    rather than their outer edges. Differentiable with respect to ``input`` and ``grid``,
    except that ``'nearest'`` records no graph to the grid (PyTorch gives it a zero gradient).
    """
    if mode not in _MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=user_stacklevel())
        align_corners = False
    return grid_sampler(input, grid, _MODES.index(mode), _PADDING_MODES.index(padding_mode),
                        align_corners)


# -- affine_grid ----------------------------------------------------------------------------

def _base_coords(steps: int, align_corners: bool, dtype, xp):
    """The normalized pixel positions along one dim (PyTorch's ``linspace_from_neg_one``)."""
    if steps <= 1:
        return xp.zeros(max(steps, 0), dtype=dtype)
    r = xp.linspace(-1, 1, steps, dtype=dtype)
    return r if align_corners else r * (steps - 1) / steps


def _base_grid(spatial, align_corners: bool, dtype, xp):
    """``(prod(spatial), n + 1)``: every output pixel's ``(x, y[, z], 1)``."""
    axes = [_base_coords(s, align_corners, dtype, xp) for s in spatial]
    mesh = xp.meshgrid(*axes, indexing="ij")
    cols = [m.ravel() for m in reversed(mesh)]  # x (the last dim) first
    cols.append(xp.ones(math.prod(spatial), dtype=dtype))
    return xp.stack(cols, axis=-1)


@register("affine_grid_generator", method=False)
def affine_grid_generator(theta, size, align_corners):
    """``torch.affine_grid_generator``: the sampling grid of the affine maps ``theta``
    (``(N, 2, 3)`` or ``(N, 3, 4)``) for an output of ``size`` (``N, C, *spatial``)."""
    size = [int(s) for s in size]
    spatial = size[2:]
    n = len(spatial)
    base = _base_grid(spatial, bool(align_corners), theta._data.dtype, xp_of(theta))
    base = _const(theta, base).expand(size[0], *base.shape)
    return base.bmm(theta.transpose(1, 2)).reshape(size[0], *spatial, n)


@register("affine_grid", function=False, method=False)
def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine matrices ``theta`` (``(N, 2, 3)`` for 2-D,
    ``(N, 3, 4)`` for 3-D) for an output of ``size`` (``(N, C, H, W)`` or
    ``(N, C, D, H, W)``): ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) normalized positions to
    pass to ``grid_sample`` with the same ``align_corners`` (default False, with a warning
    when not given). Differentiable with respect to ``theta``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=user_stacklevel())
        align_corners = False
    if theta._data.dtype not in _dtype.FLOATING_NP:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    shape = tuple(theta.shape)
    if len(size) in (4, 5):
        rows = len(size) - 2
        if len(shape) != 3 or shape[-2:] != (rows, rows + 1):
            kind = "2D" if rows == 2 else "3D"
            raise ValueError(f"Expected a batch of {kind} affine matrices of shape "
                             f"Nx{rows}x{rows + 1} for size {size}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=user_stacklevel())
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, size, align_corners)
