"""Numerical integration and differentiation of sampled data (trapezoid, trapz,
cumulative_trapezoid, gradient), ``unravel_index``, and binomial sampling.

The integrals and ``gradient`` are composed of Tensor ops (slices, sums, cumsum, cat), as in
PyTorch, so their dtype rules are those ops' and their gradients of every order come for free.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._tensor import Tensor, _make
from ._promotion import normalize_dims, wrap_dim
from ._signatures import parser_error
from .registry import register
from .statistics import record_no_derivative

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid", "gradient", "unravel_index",
           "binomial"]


def _slice(t: Tensor, dim: int, start=None, stop=None) -> Tensor:
    """``t[start:stop]`` along ``dim`` (a view; differentiable)."""
    return t[(slice(None),) * dim + (slice(start, stop), Ellipsis)]


def _invalid_args(name: str, got: str, overloads) -> TypeError:
    lines = "".join(f" * {o}\n" for o in overloads)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{lines}")


# -- trapezoid, trapz, cumulative_trapezoid ---------------------------------------------------

def _integral_args(name, y, x, dx):
    """Validate the arguments of the trapezoid family; returns ``(x or None, dx number)``."""
    if not isinstance(y, Tensor) or (x is not None and (not isinstance(x, Tensor) or
                                                        dx is not None)) \
            or not (dx is None or isinstance(dx, (numbers.Number, np.generic))
                    or isinstance(dx, Tensor) and dx._data.ndim == 0):
        raise parser_error(name, (y,) if x is None else (y, x), {} if dx is None else {"dx": dx})
    if x is None:
        if dx is None:
            dx = 1
        if isinstance(dx, Tensor):
            dx = dx.item()
        if isinstance(dx, (bool, np.bool_)) or isinstance(dx, complex) or \
                not isinstance(dx, (numbers.Number, np.generic)):
            raise RuntimeError(f"{_short(name)}: Currently, we only support dx as a real "
                               "number.")
        if y._data.dtype.kind == "b":
            raise RuntimeError(f"{_short(name)}: received a bool input for `y`, but bool is not "
                               "supported")
    else:
        check_same_device(y, x)
        if y._data.dtype.kind == "b" or x._data.dtype.kind == "b":
            raise RuntimeError(f"{_short(name)}: received a bool input for `x` or `y`, but bool "
                               "is not supported")
    return x, dx


def _short(name: str) -> str:
    return "trapezoid" if name == "trapz" else name


def _x_differences(name, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """``x``'s differences along ``dim``, shaped to broadcast against ``y``'s (NumPy's rule:
    a 1-D ``x`` lies along ``dim``, a shorter one gains leading dims)."""
    nd = y._data.ndim
    if x._data.ndim == 1:
        if x._data.shape[0] != y._data.shape[dim]:
            raise RuntimeError(f"{_short(name)}: There must be one `x` value for each sample "
                               "point")
        shape = [1] * nd
        shape[dim] = x._data.shape[0]
        x = x.reshape(shape)
    elif x._data.ndim < nd:
        x = x.reshape((1,) * (nd - x._data.ndim) + x._data.shape)
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def _no_dims(dim):
    return IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _trapezoid(name, y, x, dx, dim):
    x, dx = _integral_args(name, y, x, dx)
    if y._data.ndim == 0:
        raise _no_dims(dim)
    dim = wrap_dim(dim, y._data.ndim)
    if y._data.shape[dim] == 0:  # NumPy's answer for no samples: 0
        shape = y._data.shape[:dim] + y._data.shape[dim + 1:]
        return _make(xp_of(y).zeros(shape, dtype=y._data.dtype), y._device)
    if x is None:
        ends = y.select(dim, 0) + y.select(dim, -1)
        return (y.sum(dim) - ends * 0.5) * dx
    dx = _x_differences(name, y, x, dim)
    return (dx * (_slice(y, dim, 1) + _slice(y, dim, 0, -1))).sum(dim) / 2.0


@register("trapezoid", method=False)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, with samples at ``x`` (a
    tensor) or spaced ``dx`` apart (default 1)."""
    return _trapezoid("trapezoid", y, x, dx, dim)


@register("trapz", method=False)
def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of :func:`trapezoid`."""
    return _trapezoid("trapz", y, x, dx, dim)


@register("cumulative_trapezoid", method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule (one element fewer
    than ``y`` along ``dim``), with samples at ``x`` or spaced ``dx`` apart (default 1)."""
    name = "cumulative_trapezoid"
    x, dx = _integral_args(name, y, x, dx)
    if y._data.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, y._data.ndim)
    pairs = _slice(y, dim, 0, -1) + _slice(y, dim, 1)
    if x is None:
        return (dx / 2.0 * pairs).cumsum(dim)
    return (pairs * _x_differences(name, y, x, dim)).cumsum(dim) / 2.0


# -- gradient ---------------------------------------------------------------------------------

def _gradient_dims(input: Tensor, dim) -> list:
    """``dim`` (None: every dim) as a list of wrapped dims in the given order."""
    nd = input._data.ndim
    if dim is None:
        return list(range(nd))
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return [wrap_dim(int(dim), nd)]
    dims = [int(d) for d in dim]
    normalize_dims(dims, nd)  # range and repeat checks
    return [wrap_dim(d, nd) for d in dims]


def _gradient_spacing(spacing, n_dims: int, dim_count):
    """``spacing`` as a list of Python numbers or of coordinate tensors, one per dim."""
    if spacing is None:
        return [1.0] * n_dims
    if isinstance(spacing, Tensor) and spacing._data.ndim == 0:
        spacing = spacing.item()
    if isinstance(spacing, (numbers.Number, np.generic)) and not isinstance(spacing, complex):
        return [spacing] * n_dims
    if not isinstance(spacing, (list, tuple)):
        raise TypeError("gradient(): argument 'spacing' must be a Number, a tuple of Scalars or "
                        f"a tuple of Tensors, not {type(spacing).__name__}")
    spacing = list(spacing)
    if dim_count is None and len(spacing) != n_dims:
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a "
                           "list of length equal to 'self.dim() = "
                           f"{n_dims}', since dim argument was not given, but got a list of "
                           f"length {len(spacing)}")
    if dim_count is not None and len(spacing) != dim_count:
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's "
                           "spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {dim_count}.")
    kinds = {isinstance(s, Tensor) for s in spacing}
    if len(kinds) > 1 or not (kinds == {True} or all(
            isinstance(s, (numbers.Number, np.generic)) for s in spacing)):
        raise TypeError("gradient(): argument 'spacing' must be a tuple of Scalars or a tuple "
                        "of Tensors")
    return spacing


def _gradient_uniform(t: Tensor, d: int, h, edge_order: int) -> Tensor:
    """PyTorch's ``gradient_helper_float``: samples ``h`` apart along ``d``."""
    center = (_slice(t, d, 2) - _slice(t, d, 0, -2)) / h
    s0, s1, s2 = _slice(t, d, 0, 1), _slice(t, d, 1, 2), _slice(t, d, 2, 3)
    if edge_order == 1:
        first = (s1 - s0) / h
        last = (_slice(t, d, -1) - _slice(t, d, -2, -1)) / h
    else:
        first = (s0 * -1.5 + s1 * 2 - s2 * 0.5) / h
        last = (_slice(t, d, -3, -2) * 0.5 + _slice(t, d, -2, -1) * -2 +
                _slice(t, d, -1) * 1.5) / h
    from .shape import cat

    return cat([first, center / 2, last], d)


def _gradient_coordinates(t: Tensor, d: int, coords: Tensor, edge_order: int) -> Tensor:
    """PyTorch's ``gradient_helper``: samples at the 1-D ``coords`` along ``d``."""
    if coords._data.ndim != 1:
        raise RuntimeError("torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {coords._data.ndim} "
                           "dimensions!")
    check_same_device(t, coords)
    shape = [1] * t._data.ndim
    shape[d] = -1
    h = coords.diff()
    h1, h2 = h[:-1], h[1:]
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = a * _slice(t, d, 0, -2) + b * _slice(t, d, 1, -1) + c * _slice(t, d, 2)
    s0, s1, s2 = _slice(t, d, 0, 1), _slice(t, d, 1, 2), _slice(t, d, 2, 3)
    if edge_order == 1:
        first = (s1 - s0) / h[0]
        last = (_slice(t, d, -1) - _slice(t, d, -2, -1)) / h[-1]
    else:
        p, q = h[0], h[1]
        first = (-(2.0 * p + q) / (p * (p + q)) * s0 + (p + q) / (p * q) * s1 +
                 (-p) / (q * (p + q)) * s2)
        p, q = h[-1], h[-2]
        last = (p / (q * (p + q)) * _slice(t, d, -3, -2) - (p + q) / (p * q) *
                _slice(t, d, -2, -1) + (2 * p + q) / (p * (p + q)) * _slice(t, d, -1))
    from .shape import cat

    return cat([first, center, last], d)


@register("gradient", method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of the derivatives of the sampled function ``input`` along ``dim`` (every dim
    by default), by second-order central differences inside and first- or second-order
    (``edge_order``) one-sided differences at the ends. ``spacing``: one number, one number
    per dim, or one 1-D tensor of sample coordinates per dim. Returns a tuple of tensors."""
    d = input._data
    if d.dtype == np.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dim_count = 1
    else:
        dim_count = None if dim is None else len(dim)
    n_dims = d.ndim if dim_count is None else dim_count
    spacing = _gradient_spacing(spacing, n_dims, dim_count)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _gradient_dims(input, dim)
    for k in dims:
        if d.shape[k] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    return tuple(_gradient_coordinates(input, k, h, edge_order) if isinstance(h, Tensor) else
                 _gradient_uniform(input, k, h, edge_order) for k, h in zip(dims, spacing))


# -- unravel_index ----------------------------------------------------------------------------

@register("unravel_index", method=False, differentiable=False)
def unravel_index(indices, shape):
    """The coordinates, one tensor per dimension of ``shape``, of the flat (row-major)
    ``indices`` into a tensor of that shape."""
    if not isinstance(indices, Tensor):
        raise TypeError("unravel_index(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    a = indices._data
    if a.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    elif isinstance(shape, (list, tuple)):
        for n in shape:
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
                raise TypeError("expected 'shape' sequence to only contain ints, but got "
                                f"{type(n)}")
        shape = tuple(int(n) for n in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and a.size:
        raise RuntimeError("ZeroDivisionError")
    a = a.astype(np.int64, copy=False)
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    dev = indices._device
    return tuple(_make((a // s) % n, dev) for s, n in zip(strides, shape))


# -- binomial ---------------------------------------------------------------------------------

def _binomial_draw(g, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """PyTorch's binomial sampler on host arrays: 0 for a count or prob <= 0, the count for
    prob >= 1, else ``Binomial(floor(count), p)`` (drawn as ``count - Binomial(., 1-p)`` for
    p > 1/2), NaN for a NaN prob or a non-finite count."""
    from .._torch_rng import TorchRNG

    if isinstance(g, TorchRNG):  # ATen's sample_binomial, in the tensors' float type
        work = count.dtype if count.dtype in (np.float32, np.float64) else np.float32
        c, p = (np.ascontiguousarray(a, work) for a in (count, prob))
        return g.torch_binomial(c, p).reshape(count.shape).astype(count.dtype, copy=False)
    c = count.astype(np.float64)
    p = prob.astype(np.float64)
    with np.errstate(invalid="ignore"):
        live = (c > 0) & (p > 0)
        full = live & (p >= 1)
        mid = live & (p < 1) & np.isfinite(c)
        flip = p > 0.5
        q = np.where(mid, np.where(flip, 1 - p, p), 0.0)
        n = np.where(mid, np.floor(c), 0).astype(np.int64)
        k = np.asarray(g.binomial(n, q), dtype=np.float64)  # 0-d: NumPy draws a Python int
        drawn = np.where(flip, c - k, k)
        out = np.where(full, c, np.where(mid, drawn, 0.0))
        bad = np.isnan(p) | (np.isnan(c) & (p > 0)) | (live & (p < 1) & ~np.isfinite(c))
    return np.where(bad, np.nan, out).astype(count.dtype)


@register("binomial", out=True, method=False, differentiable=False, random=True)
def binomial(count, prob, generator=None):
    """Samples of Binomial(``count``, ``prob``) (elementwise, broadcast), drawn by
    ``generator`` or the default generator of the tensors' device."""
    from .._factory import place
    from .._random import _rng

    for pos, (label, t) in enumerate((("count", count), ("prob", prob)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{label}' (position {pos}) must be Tensor, "
                            f"not {type(t).__name__}")
    dev = check_same_device(count, prob)
    cd, pd = count._data, prob._data
    if cd.dtype not in _dtype.FLOATING_NP:
        raise ValueError("binomial only supports floating-point dtypes for count, got: "
                         f"{scalar_type_name(cd.dtype)}")
    if pd.dtype != cd.dtype:
        raise RuntimeError(f"Found dtype {scalar_type_name(pd.dtype)} but expected "
                           f"{scalar_type_name(cd.dtype)}")
    if cd.dtype == np.float16:
        kernel = "binomial_cpu" if dev.type == "cpu" else "binomial_cuda"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Half'")
    c, p = np.broadcast_arrays(count._host(), prob._host())
    out = place(_binomial_draw(_rng(generator, dev), c, p), dev)
    return record_no_derivative(out, (count, prob), "binomial")
