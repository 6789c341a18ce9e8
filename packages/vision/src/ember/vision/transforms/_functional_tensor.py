"""Tensor kernels of ``ember.vision.transforms.functional`` (torchvision's ``_functional_tensor``).

Images are ember tensors of shape ``(..., C, H, W)``. The kernels work on the tensor's array
(NumPy, or CuPy on a GPU) and return a new tensor on the same device; integer images are
computed in float32 and rounded back, as torchvision does.
"""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember.ops import api

_MAX_VALUE = {
    "uint8": 255,
    "int8": 127,
    "int16": 32767,
    "int32": 2147483647,
    "int64": 9223372036854775807,
}


def _wrap(arr, like: Tensor) -> Tensor:
    return api.wrap(arr, like._device)


def _is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt.name == "bfloat16"  # ml_dtypes' bfloat16 has kind "V"


def _assert_image_tensor(img: Tensor) -> None:
    if img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]


def get_image_size(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img: Tensor) -> int:
    _assert_image_tensor(img)
    return 1 if img.ndim == 2 else img.shape[-3]


def _max_value(np_dtype) -> int:
    return _MAX_VALUE.get(np.dtype(np_dtype).name, 1)


def _assert_channels(img: Tensor, permitted: list[int]) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(
            f"Input image tensor permitted channel values are {permitted}, but found {c}"
        )


def _assert_min_3d(img: Tensor) -> None:
    if img.ndim < 3:
        raise TypeError(
            f"Input image tensor should have at least 3 dimensions, but found {img.ndim}"
        )


def _assert_uint8(img: Tensor) -> None:
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")


def _check_adjust_args(img: Tensor, name: str, factor: float, channels=(1, 3)) -> None:
    """The checks of the ``adjust_*`` ops: a non-negative factor, an image of ``channels``."""
    if factor < 0:
        raise ValueError(f"{name} ({factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, list(channels))


def _assert_image_3d(img: Tensor, uint8: bool = False) -> None:
    """torchvision's checks of the colour point ops: an image tensor of at least 3 dimensions
    (of dtype uint8 with ``uint8``) and 1 or 3 channels, in that order."""
    _assert_image_tensor(img)
    _assert_min_3d(img)
    if uint8:
        _assert_uint8(img)
    _assert_channels(img, [1, 3])


# -- dtype conversion ---------------------------------------------------------------------


def _convert_array(a, np_dtype):
    """``convert_image_dtype`` on an array: rescale between integer ranges and [0, 1]."""
    np_dtype = np.dtype(np_dtype)
    if a.dtype == np_dtype:
        return a
    if _is_float(a.dtype):
        if _is_float(np_dtype):
            return a.astype(np_dtype)
        if (a.dtype == np.float32 and np_dtype in (np.int32, np.int64)) or (
            a.dtype == np.float64 and np_dtype == np.int64
        ):
            raise RuntimeError(
                f"The cast from {api.dtype_from_numpy(a.dtype)} to "
                f"{api.dtype_from_numpy(np_dtype)} cannot be performed safely."
            )
        eps = 1e-3
        max_val = float(_max_value(np_dtype))
        return (a * a.dtype.type(max_val + 1.0 - eps)).astype(np_dtype)
    input_max = float(_max_value(a.dtype))
    if _is_float(np_dtype):
        return (a.astype(np_dtype) / np_dtype.type(input_max)).astype(np_dtype)
    output_max = float(_max_value(np_dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return (a // factor).astype(np_dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return a.astype(np_dtype) * np_dtype.type(factor)


def convert_image_dtype(image: Tensor, dtype=None) -> Tensor:
    dtype = ember.float32 if dtype is None else dtype
    if image.dtype == dtype:
        return image
    return _wrap(_convert_array(image._data, dtype.np), image)


# -- geometry -----------------------------------------------------------------------------


def vflip(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    return _wrap(img._data[..., ::-1, :].copy(), img)


def hflip(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    return _wrap(img._data[..., ::-1].copy(), img)


def crop(img: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right = left + width
    bottom = top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [
            max(-left + min(0, right), 0),
            max(-top + min(0, bottom), 0),
            max(right - max(w, left), 0),
            max(bottom - max(h, top), 0),
        ]
        inner = _wrap(img._data[..., max(top, 0) : bottom, max(left, 0) : right], img)
        return pad(inner, padding_ltrb, fill=0)
    return _wrap(img._data[..., top:bottom, left:right], img)


def _parse_pad_padding(padding) -> list[int]:
    """Padding as ``[left, right, top, bottom]``."""
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    return [padding[0], padding[2], padding[1], padding[3]]


def _pad_array(a, p: list[int], mode: str, fill=0.0):
    """Pad the last two dims of ``a`` by ``p = [left, right, top, bottom]`` (negative crops)."""
    xp = api.array_module_of(a)
    crop_l, crop_r, crop_t, crop_b = (-min(x, 0) for x in p)
    a = a[..., crop_t : a.shape[-2] - crop_b, crop_l : a.shape[-1] - crop_r]
    left, right, top, bottom = (max(x, 0) for x in p)
    widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
    if mode == "constant":
        return xp.pad(a, widths, mode="constant", constant_values=fill)
    return xp.pad(a, widths, mode=mode)


def pad(img: Tensor, padding, fill=0, padding_mode: str = "constant") -> Tensor:
    _assert_image_tensor(img)
    if fill is None:
        fill = 0
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in [1, 2, 4]:
        raise ValueError(
            "Padding must be an int or a 1, 2, or 4 element tuple, not a "
            f"{len(padding)} element tuple"
        )
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    p = _parse_pad_padding(padding)
    a = img._data
    if padding_mode == "constant":
        value = float(fill)
        if not _is_float(a.dtype):
            value = int(value)  # torch casts the fill value to the integer dtype
        return _wrap(_pad_array(a, p, "constant", value), img)
    return _wrap(_pad_array(a, p, padding_mode), img)


# -- resize -------------------------------------------------------------------------------


def _cast_in(a, req=(np.float32, np.float64)):
    if a.dtype in [np.dtype(r) for r in req]:
        return a, False
    return a.astype(req[0]), True


def _cast_out(a, out_dtype, need_cast: bool):
    if need_cast:
        if not _is_float(out_dtype):
            a = api.array_module_of(a).round(a)
        a = a.astype(out_dtype)
    return a


def _interpolate_image(img: Tensor, size: list[int], interpolation: str, antialias: bool,
                       native_uint8: bool) -> Tensor:
    """``img`` (``(..., C, H, W)``) resized by ``nn.functional.interpolate`` as torchvision
    calls it: in float32 unless the dtype is float or (``native_uint8``, or a nearest mode)
    uint8, bicubic and lanczos clamped to 0..255 for uint8, integer results rounded.
    Differentiable for float images, as torchvision's."""
    from ember.nn.functional import interpolate

    shape = tuple(img.shape)
    x = img.reshape((-1,) + shape[-3:]) if img.ndim >= 3 else img.reshape((1, 1) + shape)
    dtype = img.dtype
    keep = [ember.float32, ember.float64]
    if interpolation in ("nearest", "nearest-exact") or native_uint8:
        keep.append(ember.uint8)
    need_cast = dtype not in keep
    if need_cast:
        x = x.to(ember.float32)
    align_corners = False if interpolation in ("bilinear", "bicubic", "lanczos") else None
    x = interpolate(x, size=list(size), mode=interpolation, align_corners=align_corners,
                    antialias=antialias)
    if need_cast:
        if interpolation in ("bicubic", "lanczos") and dtype == ember.uint8:
            x = x.clamp(0, 255)
        if not dtype.is_floating_point:
            x = x.round()
        x = x.to(dtype)
    return x.reshape(shape[:-2] + tuple(x.shape[-2:]))


def resize(img: Tensor, size: list[int], interpolation: str = "bilinear", antialias=True) -> Tensor:
    _assert_image_tensor(img)
    if antialias is None:
        antialias = False
    if antialias and interpolation not in ["bilinear", "bicubic"]:
        antialias = False
    if interpolation not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")
    # torchvision's v1 kernel resizes integer images in float32
    return _interpolate_image(img, list(size), interpolation, antialias, native_uint8=False)


# -- affine warps via grid sampling -------------------------------------------------------


def _assert_grid_transform_inputs(img, matrix, interpolation, fill, supported, coeffs=None) -> None:
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor")
    _assert_image_tensor(img)
    if matrix is not None and not isinstance(matrix, list):
        raise TypeError("Argument matrix should be a list")
    if matrix is not None and len(matrix) != 6:
        raise ValueError("Argument matrix should have 6 float values")
    if coeffs is not None and len(coeffs) != 8:
        raise ValueError("Argument coeffs should have 8 float values")
    num_channels = get_dimensions(img)[0]
    if (
        fill is not None
        and isinstance(fill, (tuple, list))
        and len(fill) > 1
        and len(fill) != num_channels
    ):
        raise ValueError(
            "The number of elements in 'fill' cannot broadcast to match the number of "
            f"channels of the image ({len(fill)} != {num_channels})"
        )
    if interpolation not in supported:
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")


def _linspace(start: float, end: float, steps: int, dtype) -> np.ndarray:
    """``torch.linspace`` in ``dtype``: stepping from the start for the first half, from the end
    for the second, each value rounded once (torch's kernel uses fused multiply-adds)."""
    t = np.dtype(dtype).type
    if steps == 1:
        return np.array([start], dtype=dtype)
    s, e = t(start), t(end)
    step = np.float64((e - s) / t(steps - 1))
    i = np.arange(steps)
    ahead = np.float64(s) + step * i
    behind = np.float64(e) - step * (steps - 1 - i)
    return np.where(i < steps // 2, ahead, behind).astype(dtype)


def _gen_affine_grid(theta: np.ndarray, w: int, h: int, ow: int, oh: int) -> np.ndarray:
    """Sampling grid ``(oh, ow, 2)`` in normalised [-1, 1] coordinates, like torchvision's."""
    dt = theta.dtype
    d = 0.5
    xs = _linspace(-ow * 0.5 + d, ow * 0.5 + d - 1, ow, dt)[None, :]
    ys = _linspace(-oh * 0.5 + d, oh * 0.5 + d - 1, oh, dt)[:, None]
    rescaled = theta / np.array([[0.5 * w], [0.5 * h]], dtype=dt)
    gx = xs * rescaled[0, 0] + ys * rescaled[0, 1] + rescaled[0, 2]
    gy = xs * rescaled[1, 0] + ys * rescaled[1, 1] + rescaled[1, 2]
    return np.stack([gx, gy], axis=-1).astype(dt)


def _fma(a, b, c):
    """``a * b + c`` rounded once, as the fused multiply-adds of torch's vectorised CPU kernels
    (exact for float32 through float64; float64 is left unfused)."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b + c).astype(np.float32)
    return a * b + c


def _grid_sample(a, grid, mode: str):
    """``grid_sample`` (zeros padding, align_corners=False): a (N, C, H, W), grid (oh, ow, 2),
    both of one float dtype; rounding as in torch's CPU kernel (float32 bit-identical)."""
    xp = api.array_module_of(a)
    grid = xp.asarray(grid)
    n, c, h, w = a.shape
    t = grid.dtype.type  # unnormalise: (g + 1) * (size / 2) - 0.5
    ix = _fma(grid[..., 0] + t(1), t(w / 2), t(-0.5))
    iy = _fma(grid[..., 1] + t(1), t(h / 2), t(-0.5))
    flat = a.reshape(n, c, h * w)

    def gather(yy, xx):
        valid = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        idx = xp.clip(yy, 0, h - 1) * w + xp.clip(xx, 0, w - 1)
        return flat[:, :, idx] * valid.astype(a.dtype)

    if mode == "nearest":
        return gather(xp.rint(iy).astype(np.int64), xp.rint(ix).astype(np.int64))
    x0 = xp.floor(ix)
    y0 = xp.floor(iy)
    wx1 = ix - x0
    wy1 = iy - y0
    wx0 = t(1) - wx1
    wy0 = t(1) - wy1
    x0 = x0.astype(np.int64)
    y0 = y0.astype(np.int64)
    out = gather(y0, x0) * (wy0 * wx0)
    out = _fma(gather(y0, x0 + 1), wy0 * wx1, out)
    out = _fma(gather(y0 + 1, x0), wy1 * wx0, out)
    return _fma(gather(y0 + 1, x0 + 1), wy1 * wx1, out)


def _apply_grid_transform(img: Tensor, grid: np.ndarray, mode: str, fill) -> Tensor:
    a = img._data
    out_dtype = a.dtype
    squeeze = a.ndim < 4
    if squeeze:
        a = a[None]
    lead = a.shape[:-3]
    a = a.reshape((-1,) + a.shape[-3:])
    a, need_cast = _cast_in(a, (grid.dtype,))
    xp = api.array_module_of(a)
    if fill is not None:
        a = xp.concatenate([a, xp.ones_like(a[:, :1])], axis=1)
    out = _grid_sample(a, grid, mode)
    if fill is not None:
        mask = out[:, -1:]
        out = out[:, :-1]
        fills = [float(fill)] if not isinstance(fill, (tuple, list)) else list(fill)
        fill_img = xp.asarray(fills, dtype=out.dtype).reshape(1, len(fills), 1, 1)
        if mode == "nearest":
            out = xp.where(mask < 0.5, fill_img, out)
        else:
            out = out * mask + (1.0 - mask) * fill_img
    out = out.reshape(lead + out.shape[1:])
    if squeeze:
        out = out[0]
    return _wrap(_cast_out(out, out_dtype, need_cast), img)


def _theta(img: Tensor, matrix: list[float]) -> np.ndarray:
    dt = img._data.dtype if _is_float(img._data.dtype) else np.float32
    return np.asarray(matrix, dtype=dt).reshape(2, 3)


def affine(img: Tensor, matrix: list[float], interpolation: str = "nearest", fill=None) -> Tensor:
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    h, w = img.shape[-2:]
    grid = _gen_affine_grid(_theta(img, matrix), w=w, h=h, ow=w, oh=h)
    return _apply_grid_transform(img, grid, interpolation, fill)


def _compute_affine_output_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    pts = np.array(
        [
            [-0.5 * w, -0.5 * h, 1.0],
            [-0.5 * w, 0.5 * h, 1.0],
            [0.5 * w, 0.5 * h, 1.0],
            [0.5 * w, -0.5 * h, 1.0],
        ],
        dtype=np.float32,
    )
    theta = np.asarray(matrix, dtype=np.float32).reshape(2, 3)
    new_pts = pts @ theta.T
    min_vals = new_pts.min(axis=0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    max_vals = new_pts.max(axis=0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    tol = np.float32(1e-4)
    cmax = np.ceil(np.trunc(max_vals / tol) * tol)
    cmin = np.floor(np.trunc(min_vals / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def rotate(
    img: Tensor,
    matrix: list[float],
    interpolation: str = "nearest",
    expand: bool = False,
    fill=None,
) -> Tensor:
    _assert_grid_transform_inputs(img, matrix, interpolation, fill, ["nearest", "bilinear"])
    h, w = img.shape[-2:]
    ow, oh = _compute_affine_output_size(matrix, w, h) if expand else (w, h)
    grid = _gen_affine_grid(_theta(img, matrix), w=w, h=h, ow=ow, oh=oh)
    return _apply_grid_transform(img, grid, interpolation, fill)


def _perspective_grid(coeffs: list[float], ow: int, oh: int, dtype) -> np.ndarray:
    """Sampling grid ``(oh, ow, 2)`` of the perspective map (PIL's ``PERSPECTIVE`` transform):
    ``x' = (a x + b y + c) / (g x + h y + 1)``, ``y' = (d x + e y + f) / (g x + h y + 1)``.
    Each row is evaluated as ``(x k0 + y k1) + k2`` in ``dtype``, the order of torch's bmm."""
    t = dtype.type
    d = 0.5
    x = _linspace(d, ow * 1.0 + d - 1.0, ow, np.float32).astype(dtype)[None, :]
    y = _linspace(d, oh * 1.0 + d - 1.0, oh, np.float32).astype(dtype)[:, None]
    theta1 = np.array([coeffs[:3], coeffs[3:6]], dtype=dtype)
    rescaled = theta1 / np.array([[0.5 * ow], [0.5 * oh]], dtype=dtype)
    g, h = t(coeffs[6]), t(coeffs[7])
    den = (x * g + y * h) + t(1.0)
    gx = (x * rescaled[0, 0] + y * rescaled[0, 1]) + rescaled[0, 2]
    gy = (x * rescaled[1, 0] + y * rescaled[1, 1]) + rescaled[1, 2]
    return np.stack([gx / den, gy / den], axis=-1) - t(1.0)


def _grid_dtype(img: Tensor):
    return np.dtype(img._data.dtype if _is_float(img._data.dtype) else np.float32)


def perspective(
    img: Tensor, perspective_coeffs: list[float], interpolation: str = "bilinear", fill=None
) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor.")
    _assert_grid_transform_inputs(
        img, None, interpolation, fill, ["nearest", "bilinear"], coeffs=perspective_coeffs
    )
    oh, ow = img.shape[-2:]
    grid = _perspective_grid(perspective_coeffs, ow=ow, oh=oh, dtype=_grid_dtype(img))
    return _apply_grid_transform(img, grid, interpolation, fill)


def _create_identity_grid(size: list[int]) -> np.ndarray:
    """``(H, W, 2)`` float32 grid of the pixel centres in normalised coordinates."""
    gy, gx = (_linspace((-s + 1) / s, (s - 1) / s, s, np.float32) for s in size)
    return np.stack(np.broadcast_arrays(gx[None, :], gy[:, None]), axis=-1)


def elastic_transform(
    img: Tensor, displacement: Tensor, interpolation: str = "bilinear", fill=None
) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    grid = _create_identity_grid(list(img.shape[-2:])) + np.asarray(displacement._host())[0]
    return _apply_grid_transform(img, grid, interpolation, fill)


# -- colour -------------------------------------------------------------------------------


def _work(a):
    """The array in float32 (or its own float dtype), the dtype torchvision computes in."""
    return a if _is_float(a.dtype) else a.astype(np.float32)


def _blend_array(a1, a2, ratio: float):
    bound = _max_value(a1.dtype)
    w1 = _work(a1)
    t = w1.dtype.type  # torch casts each Python-float factor once: 1 - ratio in double
    out = (t(ratio) * w1 + t(1.0 - ratio) * _work(a2)).clip(0, bound)
    return out.astype(a1.dtype)


def _gray_array(a):
    """Luma (ITU-R 601-2) of an RGB array ``(..., 3, H, W)``, kept as ``(..., 1, H, W)``."""
    w = _work(a)
    r, g, b = w[..., 0, :, :], w[..., 1, :, :], w[..., 2, :, :]
    t = w.dtype.type
    return (t(0.2989) * r + t(0.587) * g + t(0.114) * b).astype(a.dtype)[..., None, :, :]


def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    _assert_min_3d(img)
    _assert_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    a = img._data
    gray = _gray_array(a) if a.shape[-3] == 3 else a.copy()
    if num_output_channels == 3:
        xp = api.array_module(img)
        gray = xp.broadcast_to(gray, a.shape).copy()
    return _wrap(gray, img)


def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    _check_adjust_args(img, "brightness_factor", brightness_factor)
    a = img._data
    return _wrap(_blend_array(a, api.array_module(img).zeros_like(a), brightness_factor), img)


def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    _check_adjust_args(img, "contrast_factor", contrast_factor, [3, 1])
    a = img._data
    gray = _gray_array(a) if a.shape[-3] == 3 else a
    mean = (
        _work(gray).mean(axis=(-3, -2, -1), keepdims=True, dtype=np.float64).astype(_work(a).dtype)
    )
    return _wrap(_blend_array(a, mean, contrast_factor), img)


def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    _check_adjust_args(img, "saturation_factor", saturation_factor)
    if get_dimensions(img)[0] == 1:
        return img
    a = img._data
    return _wrap(_blend_array(a, _gray_array(a), saturation_factor), img)


def _rgb2hsv(a):
    xp = api.array_module_of(a)
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    maxc = a.max(axis=-3)
    minc = a.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    one = a.dtype.type(1.0)
    s = cr / xp.where(eqc, one, maxc)
    cr_div = xp.where(eqc, one, cr)
    rc = (maxc - r) / cr_div
    gc = (maxc - g) / cr_div
    bc = (maxc - b) / cr_div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (a.dtype.type(2.0) + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (a.dtype.type(4.0) + gc - rc)
    h = (hr + hg + hb).astype(a.dtype)
    h = xp.fmod(h / a.dtype.type(6.0) + one, one)
    return h, s, maxc


def _hsv2rgb(h, s, v):
    xp = api.array_module_of(h)
    t_ = h.dtype.type
    i = xp.floor(h * t_(6.0))
    f = h * t_(6.0) - i
    i = i.astype(np.int32) % 6
    p = xp.clip(v * (t_(1.0) - s), 0.0, 1.0)
    q = xp.clip(v * (t_(1.0) - s * f), 0.0, 1.0)
    t = xp.clip(v * (t_(1.0) - s * (t_(1.0) - f)), 0.0, 1.0)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = [xp.select([i == k for k in range(6)], [row[ch] for row in table]) for ch in range(3)]
    return xp.stack(out, axis=-3).astype(h.dtype)


def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor image")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    a = img._data
    f = _convert_array(a, np.float32)
    h, s, v = _rgb2hsv(f)
    h = ((h + np.float32(hue_factor)) % np.float32(1.0)).astype(np.float32)
    return _wrap(_convert_array(_hsv2rgb(h, s, v), a.dtype), img)


def adjust_gamma(img: Tensor, gamma: float, gain: float = 1) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be a Tensor.")
    _assert_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    a = img._data
    f = a if _is_float(a.dtype) else _convert_array(a, np.float32)
    out = (f.dtype.type(gain) * f ** f.dtype.type(gamma)).clip(0, 1)
    return _wrap(_convert_array(out, a.dtype), img)


def invert(img: Tensor) -> Tensor:
    _assert_image_3d(img)
    a = img._data
    return _wrap((a.dtype.type(_max_value(a.dtype)) - a).astype(a.dtype), img)


def posterize(img: Tensor, bits: int) -> Tensor:
    _assert_image_3d(img, uint8=True)
    mask = np.uint8((-int(2 ** (8 - bits))) & 0xFF)
    return _wrap(img._data & mask, img)


def solarize(img: Tensor, threshold: float) -> Tensor:
    _assert_image_3d(img)
    a = img._data
    if threshold > _max_value(a.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    inverted = invert(img)._data
    return _wrap(api.array_module(img).where(a >= threshold, inverted, a), img)


def _blurred_degenerate(a):
    """PIL's SMOOTH filter (3x3 ones with centre 5, /13) inside a one-pixel border."""
    xp = api.array_module_of(a)
    kernel = np.ones((3, 3), dtype=np.float32)
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    w = _work(a)
    kernel = xp.asarray(kernel.astype(w.dtype))
    windows = xp.lib.stride_tricks.sliding_window_view(w, (3, 3), axis=(-2, -1))
    smooth = xp.einsum("...ijkl,kl->...ij", windows, kernel)
    if not _is_float(a.dtype):
        smooth = xp.round(smooth)
    out = a.copy()
    out[..., 1:-1, 1:-1] = smooth.astype(a.dtype)
    return out


def adjust_sharpness(img: Tensor, sharpness_factor: float) -> Tensor:
    _check_adjust_args(img, "sharpness_factor", sharpness_factor)
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    a = img._data
    return _wrap(_blend_array(a, _blurred_degenerate(a), sharpness_factor), img)


def autocontrast(img: Tensor) -> Tensor:
    _assert_image_3d(img)
    a = img._data
    bound = _max_value(a.dtype)
    w = _work(a)
    minimum = w.min(axis=(-2, -1), keepdims=True)
    maximum = w.max(axis=(-2, -1), keepdims=True)
    xp = api.array_module_of(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        # torch's ``bound / t`` is ``t.reciprocal() * bound``: two roundings
        scale = (w.dtype.type(1) / (maximum - minimum)) * w.dtype.type(bound)
    degenerate = ~xp.isfinite(scale)
    minimum = xp.where(degenerate, 0, minimum).astype(w.dtype)
    scale = xp.where(degenerate, 1, scale).astype(w.dtype)
    return _wrap(((w - minimum) * scale).clip(0, bound).astype(a.dtype), img)


def _equalize_channel(xp, chan):
    hist = xp.bincount(chan.reshape(-1), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum()) // 255
    if step == 0:
        return chan
    lut = (xp.cumsum(hist) + step // 2) // step
    lut = xp.concatenate([xp.zeros(1, dtype=lut.dtype), lut[:-1]]).clip(0, 255)
    return lut[chan].astype(np.uint8)


def equalize(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if not (3 <= img.ndim <= 4):
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
    _assert_uint8(img)
    _assert_channels(img, [1, 3])
    a = img._data
    flat = a.reshape((-1,) + a.shape[-2:])
    xp = api.array_module(img)
    out = xp.stack([_equalize_channel(xp, c) for c in flat])  # one histogram per image channel
    return _wrap(out.reshape(a.shape), img)


# -- filters ------------------------------------------------------------------------------


def _gaussian_kernel1d(kernel_size: int, sigma: float, dtype) -> np.ndarray:
    half = (kernel_size - 1) * 0.5
    x = np.linspace(-half, half, kernel_size).astype(dtype)
    pdf = np.exp(-0.5 * (x / dtype.type(sigma)) ** 2)
    return pdf / pdf.sum()


def _correlate_separable(a, kx, ky):
    """Valid 2-D correlation of the last two dims with the outer product ``ky x kx``."""
    xp = api.array_module_of(a)
    sliding_window_view = xp.lib.stride_tricks.sliding_window_view
    out = sliding_window_view(a, len(kx), axis=-1) @ xp.asarray(kx)
    return sliding_window_view(out, len(ky), axis=-2) @ xp.asarray(ky)


def gaussian_blur(img: Tensor, kernel_size: list[int], sigma: list[float]) -> Tensor:
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    a = img._data
    out_dtype = a.dtype
    a, need_cast = _cast_in(a, (a.dtype,) if _is_float(a.dtype) else (np.float32,))
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], a.dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], a.dtype)
    p = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    padded = _pad_array(a, p, "reflect")
    out = _correlate_separable(padded, kx, ky)
    return _wrap(_cast_out(out.astype(a.dtype), out_dtype, need_cast), img)


# -- normalise / erase --------------------------------------------------------------------


def normalize(tensor: Tensor, mean, std, inplace: bool = False) -> Tensor:
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(
            "Expected tensor to be a tensor image of size (..., C, H, W). Got "
            f"tensor.size() = {tensor.size()}"
        )
    if not inplace:
        tensor = tensor.clone()
    dtype = tensor.dtype
    mean = ember.as_tensor(mean, dtype=dtype, device=tensor.device)
    std = ember.as_tensor(std, dtype=dtype, device=tensor.device)
    if (std == 0).any():
        raise ValueError(
            f"std evaluated to zero after conversion to {dtype}, leading to division by zero."
        )
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    return tensor.sub_(mean).div_(std)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v, inplace: bool = False) -> Tensor:
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    if isinstance(v, Tensor) and v.device != img.device:
        v = v.to(img.device)  # PyTorch's slice assignment copies across devices (copy_)
    img[..., i : i + h, j : j + w] = v
    return img
