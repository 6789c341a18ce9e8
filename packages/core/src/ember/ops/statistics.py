"""Counting and statistics: bincount, histc (not differentiable), cov and corrcoef (composed
of Tensor ops, so their gradients of every order come from those ops)."""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _make
from ._core import _pretty, xp_of
from .registry import register

__all__ = ["bincount", "histc", "cov", "corrcoef"]


@register("bincount", differentiable=False)
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-d non-negative integer tensor (``weights`` summed instead
    when given: float32 weights give float32, any other dtype float64)."""
    d = input._data
    if d.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_{_suffix(d)}" not implemented for '
                                  f"'{_pretty(d.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    xp = xp_of(input)
    if d.ndim != 1 or (d.size and d.min().item() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    out_dtype = np.int64
    if weights is not None:
        w = weights._data
        if w.ndim != 1 or w.shape[0] != d.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dtype = np.float32 if w.dtype == np.float32 else np.float64
        w = w.astype(np.float64)
    if d.size == 0:
        return _make(xp.zeros(minlength, dtype=out_dtype), input._device)
    r = xp.bincount(d, weights=w, minlength=minlength)
    return _make(r.astype(out_dtype, copy=False), input._device)


def _suffix(arr) -> str:
    return "cpu" if isinstance(arr, np.ndarray) else "cuda"


@register("histc", differentiable=False)
def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are
    0; values outside are ignored, ``max`` goes into the last bin). Floats only."""
    d = input._data
    if d.dtype.kind != "f":
        raise NotImplementedError(f'"histogram_{_suffix(d)}" not implemented for '
                                  f"'{_pretty(d.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    xp = xp_of(input)
    lo, hi = float(min), float(max)
    if lo == hi and d.size:
        lo, hi = float(d.min().item()), float(d.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_c_float(lo)}, {_c_float(hi)}] is not "
                           "finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = d.reshape(-1)
    x = x[(x >= lo) & (x <= hi)]  # NaN is dropped too
    pos = ((x - x.dtype.type(lo)) / x.dtype.type(hi - lo) * bins).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    r = xp.bincount(pos, minlength=bins)[:bins]
    return _make(r.astype(d.dtype), input._device)


def _c_float(v: float) -> str:
    return "-nan" if v != v else str(v)


def _check_weights(w, label, integral, n):
    if not isinstance(w, Tensor):
        raise TypeError(f"cov(): argument '{label}' must be Tensor, not {type(w).__name__}")
    a = w._data
    if a.ndim > 1:
        raise RuntimeError(f"cov(): expected {label} to have one or fewer dimensions but got "
                           f"{label} with {a.ndim} dimensions")
    if a.size != n:
        raise RuntimeError(f"cov(): expected {label} to have the same numel as there are "
                           f"observations in the input but got {a.size} != {n}")
    if integral and a.dtype.kind not in "iu":
        raise RuntimeError(f"cov(): expected {label} to have integral dtype but got {label} "
                           f"with {_pretty(a.dtype)} dtype")
    if not integral and a.dtype.kind != "f":
        raise RuntimeError(f"cov(): expected {label} to have floating point dtype but got "
                           f"{label} with {_pretty(a.dtype)} dtype")
    if a.size and (a < 0).any().item():
        raise RuntimeError(f"cov(): {label} cannot be negative")


@register("cov")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns), with frequency weights ``fweights`` and observation weights ``aweights``."""
    d = input._data
    if d.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {d.ndim} dimensions")
    if d.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if d.ndim == 2 else input.reshape(1, -1)
    if d.dtype.kind != "f":
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", True, n)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", False, n)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = n
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if (norm.item() if isinstance(norm, Tensor) else norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    xc = x - avg.unsqueeze(1)
    c = xc.mm((xc if w is None else xc * w).t())
    return (c / norm).squeeze()


@register("corrcoef")
def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalised by the
    standard deviations, clipped to ``[-1, 1]``)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c.clamp(-1, 1)
