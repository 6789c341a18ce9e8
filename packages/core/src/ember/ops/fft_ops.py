"""Discrete Fourier transforms (``ember.fft``), window functions and the short-time Fourier
transform (``stft``/``istft``), after ``torch.fft`` and ``torch.stft``.

Three primitives carry every transform, each with its exact backward written with the
primitives themselves (so it differentiates again), after PyTorch's ``FunctionsManual``:

- ``_c2c``: complex to complex over some dims, either direction. Its adjoint is the transform
  in the other direction with the swapped normalization (``"forward"`` <-> ``"backward"``:
  the same scale on the opposite transform);
- ``_r2c``: real to complex in the forward direction, one-sided (the last dim halved) or full.
  The adjoint of the one-sided form pads the half spectrum with zeros, runs the inverse c2c
  and keeps the real part (``fft_r2c_backward``);
- ``_c2r``: one-sided Hermitian spectrum to real, inverse direction. Its adjoint is the r2c
  transform with the bins that stand for two (their mirror images were cut) doubled
  (``fft_c2r_backward``).

The public functions reduce to these: ``ifft`` of a real signal is ``conj(r2c)``, ``ihfft``
the conjugate of ``rfft`` with the swapped normalization, ``hfft`` is ``irfft`` of the
conjugate. Padding and trimming by ``n``/``s`` (and ``istft``'s trimming) are a fourth
small primitive, ``_span``, whose adjoint is a span again.

Kernels come from the tensor's array module (``xp.fft``: ``numpy.fft`` on the CPU,
``cupy.fft`` on a GPU); results take PyTorch's dtypes (float32 -> complex64, integers -> the
default float's complex type). float16/bfloat16 inputs raise PyTorch's CPU error.

``stft`` frames the signal (``_frames``) and ``istft`` overlap-adds (``_overlap_add``): the
two are each other's adjoint, so each is the other's backward.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import _dtype
from .._device import resolve_device, xp_of
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.graph import make_node_class, result
from ._inplace import write_out
from ._promotion import wrap_dim
from .registry import register

__all__ = [
    "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft",
    "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
    "fft_hfft2", "fft_ihfft2", "fft_hfftn", "fft_ihfftn", "fft_fftfreq", "fft_rfftfreq",
    "fft_fftshift", "fft_ifftshift", "hann_window", "hamming_window", "blackman_window",
    "bartlett_window", "kaiser_window", "stft", "istft",
]

_NORMS = ("backward", "forward", "ortho")
#: the normalization of the opposite transform that carries the same scale
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _own(name, backward):
    cls = make_node_class(name, backward)
    cls._complex = "own"  # the backward is right for complex numbers (autograd/graph.py)
    return cls


def _on_physical(g, fn):
    """``fn(physical, k)`` for a gradient batched by vmap (the transforms' dims move past
    its ``k`` leading batch dims)."""
    from .._functorch._batched import on_physical

    return on_physical(g, fn)


def _past(dims, k: int):
    """Dims (an int or a tuple) moved past ``k`` leading dims (negative ones stay)."""
    if isinstance(dims, tuple):
        return tuple(d + k if d >= 0 else d for d in dims)
    return dims + k if dims >= 0 else dims


def _span_bw(node, g):
    dim, start, n = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, k: _span(p, _past(dim, k), -start, n)),)
    return (_span(g, dim, -start, n),)


SpanBackward0 = _own("SpanBackward0", _span_bw)


def _span(x: Tensor, dim: int, start: int, size: int) -> Tensor:
    """``size`` points of ``x`` along ``dim`` from ``start``, zero where that runs outside
    ``x`` (trimming, zero-padding on either side, or both). Its adjoint is the span that
    puts the points back, so the backward is a span again (and stays differentiable, complex
    gradients included: the map has real coefficients)."""
    d = x._data
    dim = dim % d.ndim
    n = d.shape[dim]
    lo, hi = max(start, 0), min(start + size, n)
    head = (slice(None),) * dim
    if lo == start and hi - lo == size:  # a plain slice: one copy
        r = d[head + (slice(lo, hi),)].copy()
    else:
        xp = xp_of(d)
        r = xp.zeros(d.shape[:dim] + (size,) + d.shape[dim + 1:], dtype=d.dtype)
        if hi > lo:
            r[head + (slice(lo - start, hi - start),)] = d[head + (slice(lo, hi),)]
    return result(r, x._device, SpanBackward0, (x,), ctx=(dim, start, n))


# -- the three primitives ----------------------------------------------------------------------

def _as_complex(t: Tensor) -> Tensor:
    """``t`` as its complex dtype (differentiable: the gradient is the real part back)."""
    if t.is_complex():
        return t
    return t.to(_dtype.FROM_NP[t._data.dtype].to_complex())


def _c2c_bw(node, g):
    dims, forward, norm = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, k: _c2c(_as_complex(p), _past(dims, k), not forward,
                                                  _SWAP[norm])),)
    return (_c2c(_as_complex(g), dims, not forward, _SWAP[norm]),)


FftC2CBackward0 = _own("FftC2CBackward0", _c2c_bw)


def _c2c(x: Tensor, dims: tuple, forward: bool, norm: str) -> Tensor:
    """The complex transform of ``x`` over ``dims`` (``forward``: exp(-2 pi i jk/n))."""
    d = x._data
    if dims:
        xp = xp_of(d)
        r = (xp.fft.fftn if forward else xp.fft.ifftn)(d, axes=dims, norm=norm)
        r = r.astype(d.dtype, copy=False)
    else:
        r = d.copy()
    return result(r, x._device, FftC2CBackward0, (x,), ctx=(dims, forward, norm))


def _r2c_bw(node, g):
    dims, norm, onesided, full = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, k: _r2c_grad(p, _past(dims, k), norm, onesided,
                                                       full)),)
    return (_r2c_grad(g, dims, norm, onesided, full),)


def _r2c_grad(g, dims, norm, onesided, full):
    g = _as_complex(g)
    last = dims[-1]
    if onesided and full > g.shape[last]:  # the cut half of the spectrum: zeros
        g = _span(g, last, 0, full)
    return _c2c(g, dims, False, _SWAP[norm]).real


FftR2CBackward0 = _own("FftR2CBackward0", _r2c_bw)


def _r2c(x: Tensor, dims: tuple, norm: str, onesided: bool) -> Tensor:
    """The forward transform of real ``x`` over ``dims`` (one-sided: the last dim halved)."""
    d = x._data
    xp = xp_of(d)
    cdt = _dtype.FROM_NP[d.dtype].to_complex().np
    r = (xp.fft.rfftn if onesided else xp.fft.fftn)(d, axes=dims, norm=norm)
    return result(r.astype(cdt, copy=False), x._device, FftR2CBackward0, (x,),
                  ctx=(dims, norm, onesided, d.shape[dims[-1]]))


def _doubled_bins(g: Tensor, dim: int, n: int) -> Tensor | None:
    """The real weights (1, 2, ..., 2, [1]) of a one-sided spectrum of ``n`` points along
    ``dim``: the bins whose mirror image was cut stand for two."""
    half = g.shape[dim]
    double = n - half
    if double <= 0:
        return None
    xp = xp_of(g)
    w = xp.ones(half, dtype=_dtype.FROM_NP[g._data.dtype].to_real().np)
    w[1:1 + double] = 2
    return _make(w.reshape((half,) + (1,) * (g.dim() - 1 - dim)), g._device)


def _c2r_bw(node, g):
    dims, norm, n = node.ctx
    if g.__class__ is not Tensor:
        return (_on_physical(g, lambda p, k: _c2r_grad(p, _past(dims, k), norm, n)),)
    return (_c2r_grad(g, dims, norm, n),)


def _c2r_grad(g, dims, norm, n):
    gi = _r2c(g, dims, _SWAP[norm], True)
    w = _doubled_bins(gi, dims[-1], n)
    return gi if w is None else gi * w


FftC2RBackward0 = _own("FftC2RBackward0", _c2r_bw)


def _c2r(x: Tensor, dims: tuple, last_dim_size: int, norm: str) -> Tensor:
    """The real inverse transform of a one-sided Hermitian spectrum ``x`` over ``dims``
    (the last dim holds ``last_dim_size // 2 + 1`` bins of ``last_dim_size`` points)."""
    d = x._data
    xp = xp_of(d)
    s = [d.shape[a] for a in dims[:-1]] + [last_dim_size]
    r = xp.fft.irfftn(d, s=s, axes=dims, norm=norm)
    rdt = _dtype.FROM_NP[d.dtype].to_real().np
    return result(r.astype(rdt, copy=False), x._device, FftC2RBackward0, (x,),
                  ctx=(dims, norm, last_dim_size))


# -- arguments ---------------------------------------------------------------------------------

def _norm(norm, fname: str = "fft_fft") -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        if not isinstance(norm, str):
            raise TypeError(f"{fname}(): argument 'norm' must be str, not {type(norm).__name__}")
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _check_tensor(input, fname: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _int_arg(v, fname: str, what: str) -> int:
    if v.__class__ is int:
        return v
    if isinstance(v, Tensor) and v.numel() == 1 and not (
            v.dtype.is_floating_point or v.dtype.is_complex or v.dtype is _dtype.bool):
        return int(v.item())  # an integer tensor of one element, as PyTorch's parser takes
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fname}(): argument '{what}' must be int, not {type(v).__name__}")
    return int(v)


def _int_list(v, fname: str, what: str) -> tuple:
    """``s``/``dim`` of the n-d transforms and shifts as a tuple of ints (one int: a tuple of
    one), with PyTorch's parser errors for anything else."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if not isinstance(v, (tuple, list)):
        raise TypeError(f"{fname}(): argument '{what}' must be tuple of ints, not "
                        f"{type(v).__name__}")
    out = []
    for i, e in enumerate(v):
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            if i == 0:
                raise TypeError(f"{fname}(): argument '{what}' must be tuple of ints, not "
                                f"{type(v).__name__}")
            raise TypeError(f"{fname}(): argument '{what}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(e).__name__}\"")
        out.append(int(e))
    return tuple(out)


def _wrap(x: Tensor, d) -> int:
    d = operator.index(d)
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return wrap_dim(d, x.dim())


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _promote(x: Tensor, require_complex: bool) -> Tensor:
    """``x`` in a dtype the transforms take (PyTorch's ``promote_tensor_fft``)."""
    dt = x.dtype
    if dt is _dtype.complex32:  # PyTorch's CPU transforms (MKL, pocketfft) have no complex32
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        target = _dtype.get_default_dtype()
    elif dt.itemsize == 2:
        raise RuntimeError(f"Unsupported dtype {_dtype.scalar_type_name(dt)}")
    else:
        target = dt
    if require_complex:
        target = target.to_complex()
    return x if target is dt else x.to(target)


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """``x`` zero-padded or trimmed (from the end) to ``sizes`` along ``dims``."""
    for d, n in zip(dims, sizes):
        if n != x.shape[d]:
            x = _span(x, d, 0, n)
    return x


def _shape_and_dims(x: Tensor, s, dim, fname: str):
    """The sizes and dims of an n-d transform (PyTorch's ``canonicalize_fft_shape_and_dim``):
    ``dim`` defaults to the last ``len(s)`` dims when ``s`` is given, else to all; ``-1`` in
    ``s`` keeps that dim's size."""
    nd = x.dim()
    sizes = tuple(x.shape)
    dims = None
    if dim is not None:
        dim = _int_list(dim, fname, "dim")
        dims = tuple(_wrap(x, d) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = _int_list(s, fname, "s")
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               "dimensions.")
        if dims is None:
            dims = tuple(range(nd - len(s), nd))
        shape = tuple(sizes[d] if n == -1 else n for n, d in zip(s, dims))
    elif dims is None:
        dims, shape = tuple(range(nd)), sizes
    else:
        shape = tuple(sizes[d] for d in dims)
    for n in shape:
        _check_points(n)
    return shape, dims


def _out(res: Tensor, out, fname: str) -> Tensor:
    if out is None:
        return res
    if isinstance(out, Tensor):
        if res.is_complex():
            if not out.is_complex():
                raise RuntimeError(f"{fname} expects a complex output tensor, but got "
                                   f"{_dtype.scalar_type_name(out.dtype)}")
        elif not out.dtype.is_floating_point:
            raise RuntimeError(f"{fname} expects a floating point output tensor, but got "
                               f"{_dtype.scalar_type_name(out.dtype)}")
    return write_out(out, res)


# -- one-dimensional transforms ----------------------------------------------------------------

def _one_dim(input, n, dim, fname: str):
    _check_tensor(input, f"fft_{fname}")
    dim = _int_arg(dim, f"fft_{fname}", "dim")
    if n is not None:
        n = _int_arg(n, f"fft_{fname}", "n")
    return n, dim


def _c2c_1d(fname, input, n, dim, norm, forward):
    n, dim = _one_dim(input, n, dim, fname)
    norm = _norm(norm, f"fft_{fname}")
    x = _promote(input, False)
    d = _wrap(x, dim)
    size = x.shape[d] if n is None else n
    _check_points(size)
    x = _resize(x, (d,), (size,))
    if x.is_complex():
        return _c2c(x, (d,), forward, norm)
    if forward:
        return _r2c(x, (d,), norm, False)
    return _r2c(x, (d,), _SWAP[norm], False).conj()  # the inverse of real data


def _r2c_1d(fname, input, n, dim, norm, forward):
    n, dim = _one_dim(input, n, dim, fname)
    norm = _norm(norm, f"fft_{fname}")
    if input.is_complex():
        raise RuntimeError(f"{fname} expects a real input tensor, but got "
                           f"{_dtype.scalar_type_name(input.dtype)}")
    x = _promote(input, False)
    d = _wrap(x, dim)
    size = x.shape[d] if n is None else n
    _check_points(size)
    x = _resize(x, (d,), (size,))
    if forward:
        return _r2c(x, (d,), norm, True)
    return _r2c(x, (d,), _SWAP[norm], True).conj()


def _c2r_1d(fname, input, n, dim, norm, forward):
    n, dim = _one_dim(input, n, dim, fname)
    norm = _norm(norm, f"fft_{fname}")
    x = _promote(input, True)
    d = _wrap(x, dim)
    last = 2 * (x.shape[d] - 1) if n is None else n
    _check_points(last)
    x = _resize(x, (d,), (last // 2 + 1,))
    if forward:  # hfft: the real transform of a Hermitian signal given by its half
        return _c2r(x.conj(), (d,), last, _SWAP[norm])
    return _c2r(x, (d,), last, norm)


@register("fft_fft", function=False, method=False)
def fft_fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``.

    ``n`` zero-pads or trims the signal to that length first; ``norm`` is ``"backward"``
    (no scaling, the default), ``"ortho"`` (``1/sqrt(n)``) or ``"forward"`` (``1/n``). Real
    input gives the full (two-sided) complex spectrum; float32 gives complex64, integers the
    default float's complex type."""
    return _out(_c2c_1d("fft", input, n, dim, norm, True), out, "fft")


@register("fft_ifft", function=False, method=False)
def fft_ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional inverse discrete Fourier transform (``"backward"``: scaled by
    ``1/n``); ``n`` and ``norm`` as in :func:`fft`."""
    return _out(_c2c_1d("ifft", input, n, dim, norm, False), out, "ifft")


@register("fft_rfft", function=False, method=False)
def fft_rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a real signal: the ``n // 2 + 1`` non-negative frequencies (the rest
    are their conjugates)."""
    return _out(_r2c_1d("rfft", input, n, dim, norm, True), out, "rfft")


@register("fft_irfft", function=False, method=False)
def fft_irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default
    ``2 * (input.size(dim) - 1)``) from its one-sided spectrum. The imaginary parts of the
    zero-frequency (and, for even ``n``, Nyquist) bins are ignored."""
    return _out(_c2r_1d("irfft", input, n, dim, norm, False), out, "irfft")


@register("fft_hfft", function=False, method=False)
def fft_hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its one-sided half: a real
    spectrum of length ``n`` (default ``2 * (input.size(dim) - 1)``)."""
    return _out(_c2r_1d("hfft", input, n, dim, norm, True), out, "hfft")


@register("fft_ihfft", function=False, method=False)
def fft_ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of :func:`hfft`: the one-sided inverse transform of a real signal."""
    return _out(_r2c_1d("ihfft", input, n, dim, norm, False), out, "ihfft")


# -- n-dimensional transforms ------------------------------------------------------------------

def _c2c_nd(fname, input, s, dim, norm, forward):
    _check_tensor(input, f"fft_{fname}")
    norm = _norm(norm, f"fft_{fname}")
    shape, dims = _shape_and_dims(input, s, dim, f"fft_{fname}")
    x = _resize(_promote(input, False), dims, shape)
    if x.is_complex() or not dims:
        return _c2c(_as_complex(x), dims, forward, norm)
    if forward:
        return _r2c(x, dims, norm, False)
    return _r2c(x, dims, _SWAP[norm], False).conj()


def _r2c_nd(fname, input, s, dim, norm, forward):
    _check_tensor(input, f"fft_{fname}")
    norm = _norm(norm, f"fft_{fname}")
    if forward and input.is_complex():
        raise RuntimeError(f"{fname} expects a real-valued input tensor, but got "
                           f"{_dtype.scalar_type_name(input.dtype)}")
    shape, dims = _shape_and_dims(input, s, dim, f"fft_{fname}")
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if input.is_complex():  # ihfftn checks the shape first (PyTorch's order)
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{_dtype.scalar_type_name(input.dtype)}")
    x = _resize(_promote(input, False), dims, shape)
    if forward:
        return _r2c(x, dims, norm, True)
    return _r2c(x, dims, _SWAP[norm], True).conj()


def _c2r_nd(fname, input, s, dim, norm, forward):
    _check_tensor(input, f"fft_{fname}")
    norm = _norm(norm, f"fft_{fname}")
    shape, dims = _shape_and_dims(input, s, dim, f"fft_{fname}")
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    s_last = None if s is None else _int_list(s, f"fft_{fname}", "s")[-1]
    last = 2 * (input.shape[dims[-1]] - 1) if s_last is None or s_last == -1 else shape[-1]
    _check_points(last)
    x = _resize(_promote(input, True), dims, shape[:-1] + (last // 2 + 1,))
    if forward:
        return _c2r(x.conj(), dims, last, _SWAP[norm])
    return _c2r(x, dims, last, norm)


@register("fft_fftn", function=False, method=False)
def fft_fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional discrete Fourier transform over ``dim`` (default: all dims, or the
    last ``len(s)`` when ``s`` is given); ``s`` pads or trims each transformed dim (``-1``
    keeps its size); ``norm`` over the product of the transformed sizes."""
    return _out(_c2c_nd("fftn", input, s, dim, norm, True), out, "fftn")


@register("fft_ifftn", function=False, method=False)
def fft_ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional inverse discrete Fourier transform (``s``, ``dim``, ``norm`` as in
    :func:`fftn`)."""
    return _out(_c2c_nd("ifftn", input, s, dim, norm, False), out, "fftn")


@register("fft_fft2", function=False, method=False)
def fft_fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional discrete Fourier transform (:func:`fftn` over the last two dims)."""
    return _out(_c2c_nd("fft2", input, s, dim, norm, True), out, "fftn")


@register("fft_ifft2", function=False, method=False)
def fft_ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional inverse discrete Fourier transform."""
    return _out(_c2c_nd("ifft2", input, s, dim, norm, False), out, "fftn")


@register("fft_rfftn", function=False, method=False)
def fft_rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of real input, one-sided in the last transformed dim."""
    return _out(_r2c_nd("rfftn", input, s, dim, norm, True), out, "rfftn")


@register("fft_rfft2", function=False, method=False)
def fft_rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional transform of real input (:func:`rfftn` over the last two dims)."""
    return _out(_r2c_nd("rfftn", input, s, dim, norm, True), out, "rfftn")


@register("fft_irfftn", function=False, method=False)
def fft_irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`rfftn`: real output whose last transformed dim has ``s[-1]``
    points (default ``2 * (input.size(dim[-1]) - 1)``)."""
    return _out(_c2r_nd("irfftn", input, s, dim, norm, False), out, "irfftn")


@register("fft_irfft2", function=False, method=False)
def fft_irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of :func:`rfft2`."""
    return _out(_c2r_nd("irfftn", input, s, dim, norm, False), out, "irfftn")


@register("fft_hfftn", function=False, method=False)
def fft_hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-dimensional transform of a Hermitian-symmetric signal given by its one-sided
    half (in the last transformed dim): a real result."""
    return _out(_c2r_nd("hfftn", input, s, dim, norm, True), out, "hfftn")


@register("fft_hfft2", function=False, method=False)
def fft_hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional form of :func:`hfftn`."""
    return _out(_c2r_nd("hfftn", input, s, dim, norm, True), out, "hfftn")


@register("fft_ihfftn", function=False, method=False)
def fft_ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of :func:`hfftn`: the one-sided n-dimensional inverse transform of real
    input."""
    return _out(_r2c_nd("ihfftn", input, s, dim, norm, False), out, "ihfftn")


@register("fft_ihfft2", function=False, method=False)
def fft_ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional form of :func:`ihfftn`."""
    return _out(_r2c_nd("ihfftn", input, s, dim, norm, False), out, "ihfftn")


# -- frequencies and shifts --------------------------------------------------------------------

def _freq_factory(fname, n, d, dtype, device, requires_grad, out, onesided):
    if isinstance(n, Tensor) and n.numel() == 1 and not (
            n.dtype.is_floating_point or n.dtype.is_complex or n.dtype is _dtype.bool):
        n = int(n.item())  # PyTorch's parser takes an integer tensor of one element
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{fname}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if not isinstance(d, (int, float, np.integer, np.floating, Tensor)):
        raise TypeError(f"{fname}(): argument 'd' must be float, not {type(d).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype is None and isinstance(out, Tensor):
        dtype = out.dtype  # PyTorch's out= form computes in out's dtype
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{fname[4:]} requires a floating point or complex dtype")
    if dt.is_complex:  # PyTorch's arange has no complex case
        raise _dtype.no_kernel("arange_cpu", dt.np)
    dev = resolve_device(device)
    xp = xp_of(dev)
    if onesided:
        k = xp.arange(n // 2 + 1, dtype=np.float64)
    else:
        k = xp.arange(n, dtype=np.float64)
        k[(n + 1) // 2:] -= n
    # PyTorch multiplies in the result's dtype by 1 / (n * d) rounded to it
    rdt = dt.to_real().np
    with np.errstate(divide="ignore", invalid="ignore"):  # n * d == 0: inf, as in PyTorch
        scale = rdt.type(np.float64(1.0) / np.float64(n * d))
        arr = (k.astype(rdt) * scale).astype(dt.np, copy=False)
    t = _make(arr, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t if out is None else write_out(out, t)


@register("fft_fftfreq", function=False, method=False, differentiable=False)
def fft_fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The sample frequencies of a signal of size ``n`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)`` (the order :func:`fft`
    returns them in)."""
    _refuse_layout(layout, "fft_fftfreq", device, n)
    return _freq_factory("fft_fftfreq", n, d, dtype, device, requires_grad, out, False)


@register("fft_rfftfreq", function=False, method=False, differentiable=False)
def fft_rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
                 requires_grad=False):
    """The sample frequencies of :func:`rfft` of a signal of size ``n``:
    ``[0, 1, ..., n // 2] / (d * n)``."""
    _refuse_layout(layout, "fft_rfftfreq", device, n)
    return _freq_factory("fft_rfftfreq", n, d, dtype, device, requires_grad, out, True)


def _shift(input, dim, inverse: bool):
    from .shape import roll

    fname = "fft_ifftshift" if inverse else "fft_fftshift"
    _check_tensor(input, fname)
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [_wrap(input, d) for d in _int_list(dim, fname, "dim")]
    if not dims:  # PyTorch's roll with no shifts (a 0-d tensor, or dim=())
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + inverse) // 2 for d in dims]
    return roll(input, shifts, dims)


@register("fft_fftshift", function=False, method=False)
def fft_fftshift(input, dim=None):
    """Reorder an FFT's output so that the zero frequency is in the middle (a roll by
    ``size // 2`` along ``dim``, default all dims)."""
    return _shift(input, dim, False)


@register("fft_ifftshift", function=False, method=False)
def fft_ifftshift(input, dim=None):
    """The inverse of :func:`fftshift` (a roll by ``(size + 1) // 2``)."""
    return _shift(input, dim, True)


# -- window functions --------------------------------------------------------------------------

def _refuse_layout(layout, name: str, device, n, dtype=None) -> None:
    """A sparse ``layout=`` given to a window or frequency factory: PyTorch's error."""
    if layout is not None:
        from .._factory import refuse_layout

        size = (0,)  # the windows' kernels start from an empty tensor; fftfreq's is sized
        if name.startswith("fft") and isinstance(n, int):
            size = (n // 2 + 1,) if name == "fft_rfftfreq" else (n,)
        refuse_layout(layout, name, device, dtype=dtype, size=size)


def _window(fname, window_length, periodic, dtype, device, requires_grad, values, layout=None):
    """A window of ``window_length`` points in ``dtype`` on ``device``: ``values(xp, n)``
    gives the symmetric window of ``n`` points in float64 (``n >= 2``); periodic windows are
    the symmetric window of ``window_length + 1`` points without its last point."""
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{fname}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    window_length = int(window_length)
    _refuse_layout(layout, fname, device, window_length, dtype)
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype, fname)
    dev = resolve_device(device)
    if not dt.is_floating_point:
        rg = "true" if requires_grad else "false (default)"
        raise RuntimeError(f"{fname} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_dtype.options_type_name(dt)}, device={dev}, layout=Strided "
                           f"(default), requires_grad={rg}, pinned_memory=false, "
                           "memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got "
                           f"window_length={window_length}")
    xp = xp_of(dev)
    if window_length <= 1:
        arr = xp.ones(window_length, dtype=np.float64)
    else:
        n = window_length + 1 if periodic else window_length
        arr = values(xp, n)[:window_length]
    t = _make(xp.ascontiguousarray(arr.astype(dt.np)), dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _general_hamming(alpha, beta):
    def values(xp, n):
        return alpha - beta * xp.cos(xp.arange(n, dtype=np.float64) * (2 * math.pi / (n - 1)))

    return values


@register("hann_window", method=False, differentiable=False)
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``, ``N = window_length + 1`` when
    ``periodic`` (the default: for spectral analysis), else ``window_length``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _general_hamming(0.5, 0.5), layout=layout)


@register("hamming_window", method=False, differentiable=False)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi k / (N - 1))`` (``N`` as in
    :func:`hann_window`)."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _general_hamming(float(alpha), float(beta)), layout=layout)


def _blackman(xp, n):
    k = xp.arange(n, dtype=np.float64) * (math.pi / (n - 1))
    return 0.08 * xp.cos(4 * k) - 0.5 * xp.cos(2 * k) + 0.42


@register("blackman_window", method=False, differentiable=False)
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``
    (``N`` as in :func:`hann_window`)."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _blackman, layout=layout)


def _bartlett(xp, n):
    k = xp.arange(n, dtype=np.float64) * (2.0 / (n - 1))
    first_half_end = ((n - 1) >> 1) + 1
    k[first_half_end:] = 2 - k[first_half_end:]
    return k


@register("bartlett_window", method=False, differentiable=False)
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Bartlett (triangular) window ``1 - |2k / (N - 1) - 1|`` (``N`` as in
    :func:`hann_window`)."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   _bartlett, layout=layout)


@register("kaiser_window", method=False, differentiable=False)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)``, ``a = (N - 1) / 2``
    (``N`` as in :func:`hann_window`; ``I0`` the modified Bessel function of order 0)."""
    beta = float(beta)

    def values(xp, n):
        a = (n - 1) / 2.0
        r = (xp.arange(n, dtype=np.float64) - a) / a
        return xp.i0(beta * xp.sqrt(xp.maximum(1 - r * r, 0.0))) / xp.i0(xp.asarray(beta))

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   values, layout=layout)


# -- framing and overlap-add (the adjoint pair under stft / istft) -----------------------------

def _frames_bw(node, g):
    length, hop = node.ctx
    y = _overlap_add(g, hop)
    if length > y.shape[-1]:  # samples after the last frame: no gradient
        y = _span(y, -1, 0, length)
    return (y,)


FramesBackward0 = _own("FramesBackward0", _frames_bw)


def _frames(x: Tensor, size: int, hop: int) -> Tensor:
    """``(..., L)`` -> ``(..., 1 + (L - size) // hop, size)``: frames ``hop`` apart."""
    d = x._data
    xp = xp_of(d)
    length = d.shape[-1]
    count = 1 + (length - size) // hop
    d = xp.ascontiguousarray(d)
    step = d.strides[-1]
    view = xp.lib.stride_tricks.as_strided(d, shape=d.shape[:-1] + (count, size),
                                           strides=d.strides[:-1] + (hop * step, step))
    return result(view.copy(), x._device, FramesBackward0, (x,), ctx=(length, hop))


def _ola_bw(node, g):
    hop, size = node.ctx
    return (_frames(g, size, hop),)


OverlapAddBackward0 = _own("OverlapAddBackward0", _ola_bw)


def _overlap_add(f: Tensor, hop: int) -> Tensor:
    """``(..., T, size)`` -> ``(..., size + hop * (T - 1))``: frame ``t`` added in at
    ``t * hop`` (in ``ceil(size / hop)`` vectorised passes, one per slice of the frames)."""
    d = f._data
    xp = xp_of(d)
    *batch, count, size = d.shape
    batch = tuple(batch)
    length = size + hop * (count - 1)
    acc = xp.zeros(batch + (length + hop,), dtype=d.dtype)
    for j in range(0, size, hop):
        w = min(hop, size - j)
        block = d[..., j:j + w]
        if w < hop:
            padded = xp.zeros(batch + (count, hop), dtype=d.dtype)
            padded[..., :w] = block
            block = padded
        acc[..., j:j + count * hop] += block.reshape(batch + (count * hop,))
    out = xp.ascontiguousarray(acc[..., :length])
    return result(out, f._device, OverlapAddBackward0, (f,), ctx=(hop, size))


# -- stft / istft ------------------------------------------------------------------------------

def _type_str(t: Tensor) -> str:
    return f"torch.{_dtype.scalar_type_name(t.dtype)}Tensor"


def _window_str(window) -> str:
    return "None" if window is None else f"{_type_str(window)}{{{list(window.shape)}}}"


def _center_pad(x: Tensor, pad: int, mode: str) -> Tensor:
    """``x`` (1-D or 2-D) padded by ``pad`` on both sides of its last dim with ``F.pad``'s
    ``mode`` (a complex signal: its real and imaginary parts padded alike)."""
    from .complex_ops import complex as make_complex
    from .nn_misc import pad as f_pad

    shape = tuple(x.shape)
    x3 = x.reshape((1,) * (3 - x.dim()) + shape) if x.dim() < 3 else x

    def padded(t):
        return f_pad(t, (pad, pad), mode)

    r = make_complex(padded(x3.real), padded(x3.imag)) if x.is_complex() else padded(x3)
    return r.reshape(tuple(r.shape[3 - x.dim():])) if x.dim() < 3 else r


def _padded_window(window, win_length: int, n_fft: int, like: Tensor):
    """The window centred in ``n_fft`` points (None: no window needed)."""
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    if window is None:
        xp = xp_of(like)
        w = xp.zeros(n_fft, dtype=_dtype.FROM_NP[like._data.dtype].to_real().np)
        w[left:left + win_length] = 1
        return _make(w, like._device)
    return _span(window, 0, -left, n_fft)


_STFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_STFT_REAL_OUT = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format.")


@register("stft")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform: the FFT of ``n_fft`` samples of ``input`` (1-D or a
    2-D batch) every ``hop_length`` samples (default ``n_fft // 4``), multiplied by ``window``
    (``win_length`` points, default ``n_fft``, centred in the frame; None: rectangular).

    ``center`` pads the signal by ``n_fft // 2`` on both sides (``pad_mode`` as in
    ``F.pad``) so that frame ``t`` is centred at ``t * hop_length``; ``normalized`` scales by
    ``n_fft ** -0.5``; ``onesided`` (default for real input and window) keeps the
    ``n_fft // 2 + 1`` non-negative frequencies. The result is ``(B?, N, T)`` complex, or
    with ``return_complex=False`` (deprecated) its real view ``(B?, N, T, 2)``;
    ``return_complex`` is required for real input, as in PyTorch."""
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    n_fft = operator.index(n_fft)
    hop_length = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win_length = n_fft if win_length is None else operator.index(win_length)
    x = input
    if center and x.dim() in (1, 2):
        x = _center_pad(x, n_fft // 2, pad_mode)
    length = x.shape[-1] if x.dim() else 0

    def error(msg):
        shown = list(x.shape)
        if center and x.dim() not in (1, 2) and shown:
            shown[-1] += 2 * (n_fft // 2)
        return RuntimeError(
            f"stft({_type_str(input)}{shown}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={_window_str(window)}, "
            f"normalized={int(bool(normalized))}, onesided={onesided}, "
            f"return_complex={return_complex if return_complex is None else int(return_complex)}"
            f", align_to_window={align_to_window}) : {msg}")

    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn(_STFT_REAL_OUT, UserWarning, stacklevel=user_stacklevel())
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise error("expected a tensor of floating point or complex values")
    if x.dim() not in (1, 2):
        raise error("expected a 1D or 2D tensor")
    if window is not None and window.device != input.device:
        raise RuntimeError(f"stft input and window must be on the same device but got self on "
                           f"{input.device} and window on {window.device}")
    if n_fft <= 0 or n_fft > length:
        raise error(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise error(f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise error(f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise error(f"expected a 1D window tensor of size equal to win_length={win_length}, but "
                    f"got window with size {list(window.shape)}")
    if window is None:
        warnings.warn(_STFT_NO_WINDOW, UserWarning, stacklevel=user_stacklevel())
    if align_to_window and win_length < n_fft:  # frames start where their window does
        x = _span(x, -1, -((n_fft - win_length) // 2), length + n_fft - win_length)
    frames = _frames(x, n_fft, hop_length)                       # (B?, T, n_fft)
    w = _padded_window(window, win_length, n_fft, x)
    if w is not None:
        frames = frames * w
    if frames.dtype.itemsize == 2:  # float16 / bfloat16 (PyTorch's CPU FFT refuses them too)
        raise RuntimeError(f"Unsupported dtype {_dtype.scalar_type_name(frames.dtype)}")
    norm = "ortho" if normalized else "backward"
    last = frames.dim() - 1
    if frames.is_complex():
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spec = _c2c(frames, (last,), True, norm)
    else:
        spec = _r2c(frames, (last,), norm, True if onesided is None else bool(onesided))
    spec = spec.transpose(-1, -2)                                # (B?, N, T)
    if return_complex:
        return spec
    from .complex_ops import view_as_real

    return view_as_real(spec)


_ISTFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_ISTFT_SHORT = ("The length of signal is shorter than the length parameter. Result is being "
                "padded with zeros in the tail. Please check your center and hop_length "
                "settings.")


@register("istft")
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of :func:`stft`: the least-squares signal whose STFT is ``input``
    (``(B?, N, T)`` complex), by inverse FFTs of the frames, windowing and overlap-add, divided
    by the overlap-added squared window (which must not vanish: the NOLA condition).

    The arguments are :func:`stft`'s; ``length`` trims or zero-pads the result to that many
    samples; ``return_complex`` returns a complex signal (two-sided input only)."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    n_fft = operator.index(n_fft)
    hop_length = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win_length = n_fft if win_length is None else operator.index(win_length)

    shown = (f"istft(CPU{_dtype.scalar_type_name(input.dtype)}Type{list(input.shape)}, "
             f"n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}, "
             f"window={_window_str(window)}, center={int(bool(center))}, "
             f"normalized={int(bool(normalized))}, "
             f"onesided={onesided if onesided is None else int(onesided)}, length={length}, "
             f"return_complex={int(bool(return_complex))})")

    def error(msg, sep=" : "):
        return RuntimeError(f"{shown}{sep}{msg}")

    if window is None:
        warnings.warn(_ISTFT_NO_WINDOW, UserWarning, stacklevel=user_stacklevel())
    in_dim = input.dim()
    if in_dim not in (2, 3):
        raise error(f"expected a tensor with 3 or 4 dimensions, but got {in_dim + 1}")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    expected_len = n_fft + hop_length * (n_frames - 1)
    onesided = fft_size != n_fft if onesided is None else bool(onesided)
    if onesided and n_fft // 2 + 1 != fft_size:
        raise error("expected the frequency dimension (3rd to the last) of the input tensor to "
                    f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise error("expected the frequency dimension (3rd to the last) of the input tensor to "
                    f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise error("expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise error("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise error("Invalid window shape. window has to be 1D and length of `win_length`")
    if window is None:
        real_np = _dtype.FROM_NP[input._data.dtype].to_real().np
        window = _make(xp_of(input).ones(win_length, dtype=real_np), input._device)
    w = _padded_window(window, win_length, n_fft, window)
    x = input if in_dim == 3 else input.unsqueeze(0)
    x = x.transpose(1, 2)                                        # (C, T, N)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        x = _c2c(x, (2,), False, norm)
    else:
        if w.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = _span(x, -1, 0, n_fft // 2 + 1)
        x = _c2r(x, (2,), n_fft, norm)
    y = _overlap_add(x * w, hop_length)                          # (C, expected_len)
    envelope = _overlap_add((w * w).expand(1, n_frames, n_fft), hop_length)
    # PyTorch's y[:, start:end]: the centring padding trimmed, or ``length`` points
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + operator.index(length)
    else:
        end = -(n_fft // 2) if center else expected_len
    stop = max(min(end if end >= 0 else expected_len + end, expected_len), start)
    y = _span(y, -1, start, stop - start)
    envelope = _span(envelope, -1, start, stop - start)
    if envelope.numel() and not envelope.is_meta:  # meta: no values to check
        low = envelope.abs().min()
        if bool((low < 1e-11).item()):
            raise error("1", sep=" window overlap add min: ")  # PyTorch prints the test
    y = y / envelope
    if in_dim == 2:
        y = y.squeeze(0)
    if end > expected_len:
        warnings.warn(_ISTFT_SHORT, UserWarning, stacklevel=user_stacklevel())
        y = _span(y, -1, 0, end - start)
    return y
