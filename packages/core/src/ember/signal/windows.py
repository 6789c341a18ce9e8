"""``ember.signal.windows``: window functions (``torch.signal.windows``, SciPy's formulas).

Each returns a 1-D window of ``M`` points: symmetric (``sym=True``, for filter design) or
periodic (``sym=False``, for spectral analysis: the first ``M`` points of a symmetric window
of ``M + 1``). The window is normalized to 1 (its maximum is 1), though the 1 does not appear
when ``M`` is even and ``sym`` is True. They are computed with ember's ops from a
``linspace``, so ``requires_grad=True`` gives a window whose graph starts there, as in
PyTorch. Only float32 and float64 windows of the strided layout exist.

Common keyword arguments: ``sym`` (default True), ``dtype`` (default: the default dtype),
``layout`` (``ember.strided`` only), ``device`` and ``requires_grad``.

Example::

    >>> ember.signal.windows.hann(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(function_name: str, M: int, dtype, layout) -> None:
    """PyTorch's checks of every window: a non-negative length, strided, float32/64."""
    if M < 0:
        raise ValueError(f"{function_name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{function_name} is implemented for strided tensors only, got: "
                         f"{layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{function_name} expects float32 or float64 dtypes, got: {dtype}")


def _dtype(dtype):
    return ember.get_default_dtype() if dtype is None else dtype


def _trivial(M: int, dtype, device, requires_grad):
    """The window of 0 points (empty) or 1 point (``[1.]``); None for longer ones."""
    if M > 1:
        return None
    make = ember.empty if M == 0 else ember.ones
    return make((M,), dtype=dtype, device=device, requires_grad=requires_grad)


def _points(start, step, M: int, dtype, device, requires_grad):
    """``start + step * n`` for ``n`` in ``0..M-1`` (PyTorch's ``linspace``), the graph's
    start when ``requires_grad``."""
    return ember.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=ember.strided, device=None,
                requires_grad: bool = False):
    r"""The exponential (Poisson) window: :math:`w_n = \exp(-|n - c| / \tau)`, ``c`` the
    ``center`` (default ``M / 2`` when periodic, else ``(M - 1) / 2``; symmetric windows
    must leave it None); ``tau`` > 0 the decay (default 1.0)."""
    dtype = _dtype(dtype)
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _points(-center * constant, constant, M, dtype, device, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
           requires_grad: bool = False):
    r"""The cosine (sine) window, as SciPy's: :math:`w_n = \sin(\pi (n + 0.5) / M)`."""
    dtype = _dtype(dtype)
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return ember.sin(_points(0.5 * constant, constant, M, dtype, device, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None,
             layout=ember.strided, device=None, requires_grad: bool = False):
    r"""The Gaussian window: :math:`w_n = \exp(-(n - c)^2 / (2 \sigma^2))` centred on the
    window, ``std`` (:math:`\sigma` > 0, default 1.0) its width."""
    dtype = _dtype(dtype)
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _points(start * constant, constant, M, dtype, device, requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None,
           layout=ember.strided, device=None, requires_grad: bool = False):
    r"""The Kaiser window: :math:`w_n = I_0(\beta \sqrt{1 - ((n - N/2) / (N/2))^2}) /
    I_0(\beta)` with ``N = M - 1`` (symmetric) or ``M`` (periodic); ``beta`` >= 0 (default
    12.0) its shape, :math:`I_0` ``ember.special.i0``."""
    dtype = _dtype(dtype)
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    beta = ember.tensor(beta, dtype=dtype, device=device)  # no NaN from rounding below
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = ember.minimum(beta, start + (M - 1) * constant)
    k = ember.linspace(start, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return ember.i0(ember.sqrt(beta * beta - ember.pow(k, 2))) / ember.i0(beta)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False):
    r"""The Bartlett (triangular) window: :math:`w_n = 1 - |2n / (M - 1) - 1|`."""
    dtype = _dtype(dtype)
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    constant = 2 / (M if not sym else M - 1)
    return 1 - ember.abs(_points(-1, constant, M, dtype, device, requires_grad))


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=ember.strided,
                   device=None, requires_grad: bool = False):
    r"""The general cosine window:
    :math:`w_n = \sum_i (-1)^i a_i \cos(2 \pi i n / (M - 1))` for the coefficients ``a``
    (a non-empty list or tuple)."""
    dtype = _dtype(dtype)
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, constant, M, dtype, device, requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
                     requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=ember.strided, device=None, requires_grad: bool = False):
    r"""The general Hamming window:
    :math:`w_n = \alpha - (1 - \alpha) \cos(2 \pi n / (M - 1))` (``alpha`` default 0.54)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False):
    r"""The Hamming window: :math:`w_n = 0.54 - 0.46 \cos(2 \pi n / (M - 1))`."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
         requires_grad: bool = False):
    r"""The Hann window: :math:`w_n = \sin^2(\pi n / (M - 1))`."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False):
    r"""The Blackman window:
    :math:`w_n = 0.42 - 0.5 \cos(2 \pi n / (M - 1)) + 0.08 \cos(4 \pi n / (M - 1))`."""
    dtype = _dtype(dtype)
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False):
    r"""Nuttall's minimum 4-term Blackman-Harris window:
    :math:`w_n = 0.3635819 - 0.4891775 \cos z_n + 0.1365995 \cos 2z_n - 0.0106411 \cos 3z_n`,
    :math:`z_n = 2 \pi n / (M - 1)` (``M`` when periodic)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
