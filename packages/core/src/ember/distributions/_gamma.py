"""Gamma and Dirichlet sampling with reparameterised gradients, on ember ops (any device).

Samples are PyTorch's: ATen's ``sample_gamma`` (Marsaglia and Tsang's rejection sampler with
its boost below alpha = 1) element by element over PyTorch's engine (``_torch_rng``), and
``_sample_dirichlet``'s normalised float64 gammas; the meta device's stand-in generator gets a
vectorised Marsaglia-Tsang. The gradient of a sample with respect to
its concentration is the implicit one, ``dx/dalpha = -(dF/dalpha) / f(x)`` with ``F`` the CDF,
computed as PyTorch does (a Taylor series for small ``x``, Rice's saddle-point expansion for
large ``alpha``, a fitted rational function elsewhere), so rsample gradients equal PyTorch's for
the same samples. The arithmetic runs in float64, as PyTorch's CPU kernels' accumulate type.
"""

from __future__ import annotations

import numpy as np

import ember

__all__: list[str] = []


def _torch_rng(t: ember.Tensor):
    """The default generator of ``t``'s device when it draws PyTorch's numbers, else None
    (the meta device)."""
    from .._random import _rng
    from .._torch_rng import TorchRNG

    g = _rng(None, t.device)
    return g if isinstance(g, TorchRNG) else None


def _host_work(t: ember.Tensor) -> np.ndarray:
    """``t``'s values on the host in C order, float32 or float64 (PyTorch's CPU kernels'
    types; float16 and bfloat16 go through float32)."""
    a = np.asarray(t.detach()._host())
    return np.ascontiguousarray(a, a.dtype if a.dtype in (np.float32, np.float64) else
                                np.float32)


def _draw_standard_gamma(alpha: ember.Tensor) -> ember.Tensor:
    """Gamma(alpha, 1) samples without gradient: PyTorch's ``_standard_gamma`` draws in
    ``alpha``'s float type, where its engine draws; elsewhere a vectorised Marsaglia-Tsang
    in float64."""
    g = _torch_rng(alpha)
    if g is not None:
        from .._factory import place

        a = _host_work(alpha)
        return place(g.torch_standard_gamma(a).reshape(a.shape), alpha.device)
    a = alpha.detach().to(ember.float64)
    boost = a < 1  # Gamma(a) = Gamma(a + 1) * U^(1/a)
    a1 = ember.where(boost, a + 1, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / (9.0 * d).sqrt()
    out = ember.zeros_like(a)
    pending = ember.ones_like(a, dtype=ember.bool)
    while bool(pending.any()):
        x = ember.randn_like(a)
        u = 1.0 - ember.rand_like(a)  # in (0, 1]
        v = (1.0 + c * x) ** 3
        positive = v > 0  # v <= 0 is rejected (log(v) is read at 1 there, unused)
        log_v = ember.where(positive, v, ember.ones_like(v)).log()
        ok = positive & (u.log() < 0.5 * x * x + d - d * v + d * log_v)
        out = ember.where(pending & ok, d * v, out)
        pending = pending & ~ok
    scale = (1.0 - ember.rand_like(a)) ** (1.0 / a)
    return ember.where(boost, out * scale, out)


def _digamma64(x: ember.Tensor) -> ember.Tensor:
    return ember.digamma(x)


def _by_region(result, regions, *args):
    """Fill ``result`` region by region: ``regions`` pairs a bool mask with a function of the
    masked ``args``, so that each formula sees only the elements it is valid for (no
    overflow or NaN from the others)."""
    for mask, fn in regions:
        if bool(mask.any()):
            result[mask] = fn(*(a[mask] for a in args))
    return result


def _nan_to_zero(t):
    return ember.where(t.isnan(), ember.zeros_like(t), t)


def _gamma_grad_small_x(alpha, x):
    """Taylor series of the CDF in ``x`` (for ``x < 0.8``)."""
    numer = ember.ones_like(x)
    denom = alpha.clone()
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x ** alpha
    gamma_pdf = x ** (alpha - 1) * (-x).exp()
    gamma_cdf = pow_x_alpha * series1
    gamma_cdf_alpha = (x.log() - _digamma64(alpha)) * gamma_cdf - pow_x_alpha * series2
    return _nan_to_zero(-gamma_cdf_alpha / gamma_pdf)


def _gamma_grad_near_mode(alpha, x):
    """Rice's saddle-point expansion at ``x`` near ``alpha`` (large ``alpha``)."""
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
               + alpha * (107 + 3600 * x))
    return numer_1 * numer_2 / (1244160 * alpha * alpha * alpha * alpha)


def _gamma_grad_saddle(alpha, x):
    """Rice's saddle-point expansion away from the mode (large ``alpha``)."""
    denom = (8 * alpha).sqrt()
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * (x / alpha).log()) ** -1.5
    term23 = ember.where(x < alpha, term2 - term3, term2 + term3)
    term1 = ((x / alpha).log() * term23
             - (2 / alpha).sqrt() * (alpha + x) / ((alpha - x) * (alpha - x)))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    return -stirling * x * term1 / denom


def _gamma_grad_rational(alpha, x):
    """A bivariate rational approximation in ``log(x / alpha)`` and ``log(alpha)``."""
    u = (x / alpha).log()
    v = alpha.log()
    coef_v = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_GAMMA_GRAD_COEF_UV)]
    p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3]))
    q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7]))
    return (p / q).exp()


def _standard_gamma_grad(alpha: ember.Tensor, x: ember.Tensor) -> ember.Tensor:
    """``dx/dalpha`` for ``x ~ Gamma(alpha, 1)`` (PyTorch's ``_standard_gamma_grad``)."""
    dtype = x.dtype
    alpha, x = ember.broadcast_tensors(alpha.detach().to(ember.float64),
                                       x.detach().to(ember.float64))
    with ember.no_grad():
        small = x < 0.8
        large = ~small & (alpha > 8.0)
        near = large & (0.9 * alpha <= x) & (x <= 1.1 * alpha)
        regions = ((small, _gamma_grad_small_x), (near, _gamma_grad_near_mode),
                   (large & ~near, _gamma_grad_saddle),
                   (~small & ~large, _gamma_grad_rational))
        result = _by_region(ember.zeros_like(x), regions, alpha, x)
    return result.to(dtype)


_GAMMA_GRAD_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1.0, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)


class _StandardGamma(ember.autograd.Function):
    """A Gamma(alpha, 1) sample, differentiable in ``alpha`` by the implicit gradient."""

    @staticmethod
    def forward(ctx, alpha):
        x = _draw_standard_gamma(alpha).to(alpha.dtype)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    @ember.autograd.function.once_differentiable
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def _standard_gamma(alpha: ember.Tensor) -> ember.Tensor:
    """Gamma(alpha, 1) samples of ``alpha``'s shape and dtype (reparameterised)."""
    if alpha.requires_grad and ember.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    return _draw_standard_gamma(alpha).to(alpha.dtype)


# -- Dirichlet ---------------------------------------------------------------------------------

def _sample_dirichlet(concentration: ember.Tensor) -> ember.Tensor:
    """Dirichlet samples (normalised Gamma draws), clamped into ``[tiny, 1 - eps]`` like
    PyTorch's."""
    g = _torch_rng(concentration)
    if g is not None:  # PyTorch's _sample_dirichlet: float64 gammas, normalised, cast, clamped
        from .._factory import place

        x = g.torch_dirichlet(_host_work(concentration))
        return place(x, concentration.device).to(concentration.dtype)
    gammas = _draw_standard_gamma(concentration)
    x = gammas / gammas.sum(-1, keepdim=True)
    finfo = ember.finfo(concentration.dtype)
    return x.clamp(min=finfo.tiny, max=1 - finfo.eps / 2).to(concentration.dtype)


def _beta_grad_alpha_small(x, alpha, beta):
    """``d/dalpha`` of a Beta sample near 0 (Taylor series)."""
    factor = _digamma64(alpha) - _digamma64(alpha + beta) - x.log()
    numer = ember.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * (1 - x) ** (-beta) * series
    return ember.where(result.isnan(), ember.zeros_like(result), result)


def _beta_grad_beta_small(x, alpha, beta):
    """``d/dbeta`` of a Beta sample near 0 (Taylor series)."""
    factor = _digamma64(alpha + beta) - _digamma64(beta)
    numer = ember.ones_like(x)
    betas = ember.ones_like(x)
    dbetas = ember.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -(1 - x) ** (1 - beta) * series
    return ember.where(result.isnan(), ember.zeros_like(result), result)


def _beta_grad_alpha_near_mean(x, alpha, beta):
    """``d/dalpha`` of a Beta sample at ``x`` near the mean, large ``alpha`` and ``beta``."""
    total = alpha + beta
    b2 = beta * beta
    poly = 47 * x * b2 * b2 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * b2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    return prefactor_num / (1 - x) * poly / prefactor_den


def _beta_grad_alpha_mid(x, alpha, beta):
    """``d/dalpha`` of a Beta sample for large ``alpha`` and ``beta``, away from the mean
    (Rice saddle point)."""
    total = alpha + beta
    mean = alpha / total
    prefactor = -x / (2 * alpha * beta / total).sqrt()
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * beta * beta
    axbx = alpha * (x - 1) + beta * x
    term1_den = (2 * alpha / beta).sqrt() * total ** 1.5 * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * (alpha / (total * x)).log()
    term3 = (8 * alpha * beta / total).sqrt() / (beta * x + alpha * (x - 1))
    term4_base = beta * (beta / (total * (1 - x))).log() + alpha * (alpha / (total * x)).log()
    term4 = term4_base ** -1.5
    term1234 = term1 + term2 * (term3 + ember.where(x < mean, term4, -term4))
    return stirling * prefactor * term1234


_DIRICHLET_GRAD_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1.0, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _dirichlet_grad_rational(x, alpha, total):
    """A rational correction to an analytic approximation (the general case)."""
    beta = total - alpha
    u = x.log()
    a = alpha.log() - u
    b = total.log() - a
    pow_u = (ember.ones_like(u), u, u * u)
    pow_a = (ember.ones_like(a), a, a * a)
    p = ember.zeros_like(x)
    q = ember.zeros_like(x)
    cp, cq = _DIRICHLET_GRAD_C
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            c0, c1 = cp[i][j], cq[i][j]
            p = p + ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3])))
            q = q + ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3])))
    approx = x * (_digamma64(total) - _digamma64(alpha)) / beta
    return p / q * approx


def _dirichlet_grad(x, alpha, total):
    """``-(dF/dalpha) / f(x) / (1 - x)`` for ``x ~ Beta(alpha, total - alpha)`` (PyTorch's
    ``_dirichlet_grad``), elementwise."""
    dtype = x.dtype
    x, alpha, total = ember.broadcast_tensors(*(t.detach().to(ember.float64)
                                                for t in (x, alpha, total)))
    with ember.no_grad():
        beta = total - alpha
        boundary = total * x * (1 - x)
        near_0 = (x <= 0.5) & (boundary < 2.5)
        near_1 = ~near_0 & (x >= 0.5) & (boundary < 0.75)
        both_large = ~near_0 & ~near_1 & (alpha > 6) & (beta > 6)
        mean = alpha / total
        std = (alpha * beta / (total + 1)).sqrt() / total
        near_mean = both_large & (mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)
        regions = (
            (near_0, lambda x, a, b, t: _beta_grad_alpha_small(x, a, b)),
            (near_1, lambda x, a, b, t: -_beta_grad_beta_small(1 - x, b, a)),
            (near_mean, lambda x, a, b, t: _beta_grad_alpha_near_mean(x, a, b)),
            (both_large & ~near_mean, lambda x, a, b, t: _beta_grad_alpha_mid(x, a, b)),
            (~near_0 & ~near_1 & ~both_large,
             lambda x, a, b, t: _dirichlet_grad_rational(x, a, t)),
        )
        result = _by_region(ember.zeros_like(x), regions, x, alpha, beta, total)
    return result.to(dtype)


class _Dirichlet(ember.autograd.Function):
    """A Dirichlet sample, differentiable in the concentration (PyTorch's gradient)."""

    @staticmethod
    def forward(ctx, concentration):
        x = _sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @ember.autograd.function.once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = _dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))
