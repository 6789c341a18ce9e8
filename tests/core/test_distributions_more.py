"""The last six of torch.distributions' distributions, beyond the oracle sweep of
test_distributions.py (which compares their values, shapes, KL pairs, gradients, moments and
errors with PyTorch's): reparameterised gradients by float64 gradcheck, sampling checks that
need more than a mean and variance (circular moments, the LKJ marginals, the Bartlett draw),
and the places where PyTorch 2.13 is wrong, each checked against the mathematics instead.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.distributions as D

RNG = np.random.default_rng(4321)


def t64(a, requires_grad=False):
    t = ember.tensor(np.asarray(a, dtype=np.float64))
    return t.requires_grad_() if requires_grad else t


def _np(x):
    return x.detach().numpy() if isinstance(x, ember.Tensor) else np.asarray(x)


def _seeded_rsample(build, shape=(3,), seed=0):
    """``f(*params)``: ``build(*params).rsample(shape)`` under one fixed seed, a deterministic
    function of the parameters that gradcheck can difference."""
    def f(*params):
        ember.manual_seed(seed)
        return build(*params).rsample(shape)
    return f


# -- reparameterised gradients (float64 gradcheck) ------------------------------------------------

def test_continuous_bernoulli_rsample_gradcheck():
    probs = t64([0.15, 0.3, 0.72, 0.9], requires_grad=True)
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda p: D.ContinuousBernoulli(probs=p, validate_args=False)), (probs,))
    logits = t64([-2.0, -0.4, 0.8, 3.0], requires_grad=True)
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda lg: D.ContinuousBernoulli(logits=lg)), (logits,))


def test_generalized_pareto_rsample_gradcheck():
    loc = t64([0.3, -1.0, 0.0], requires_grad=True)
    scale = t64([0.7, 1.5, 2.0], requires_grad=True)
    conc = t64([0.25, -0.4, 0.6], requires_grad=True)  # away from the isclose(0) switch
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda m, s, c: D.GeneralizedPareto(m, s, c, validate_args=False)),
        (loc, scale, conc))


def test_kumaraswamy_rsample_gradcheck():
    a = t64([0.6, 1.5, 4.0], requires_grad=True)
    b = t64([2.0, 0.8, 3.0], requires_grad=True)
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda a, b: D.Kumaraswamy(a, b, validate_args=False)), (a, b))


def _tril3():
    return np.array([[1.2, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.4, 0.2, 1.1]])


def test_wishart_rsample_gradcheck_in_the_scale():
    tril = t64(_tril3(), requires_grad=True)
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda L: D.Wishart(t64(5.5), scale_tril=L, validate_args=False),
                        shape=(2,)), (tril,))
    cov = _tril3() @ _tril3().T
    cov = t64(cov, requires_grad=True)
    # a symmetric perturbation keeps the covariance symmetric for the Cholesky factorisation
    assert ember.autograd.gradcheck(
        _seeded_rsample(lambda C: D.Wishart(t64(4.5), covariance_matrix=(C + C.mT) / 2,
                                            validate_args=False), shape=(2,)), (cov,))


def test_wishart_rsample_gradient_in_df_is_unbiased():
    """The chi-squared diagonal carries implicit (CDF-preserving) gradients in ``df``, which no
    fixed-seed difference reproduces; their expectation is ``d E[X] / d df = Sigma``."""
    L = t64(_tril3())
    sigma = _np(L) @ _np(L).T
    weights = RNG.standard_normal((3, 3))
    df = t64(4.7, requires_grad=True)
    ember.manual_seed(5)
    n = 4000
    x = D.Wishart(df, scale_tril=L).rsample((n,))
    per_draw = (x * t64(weights)).sum((-2, -1))
    (g,) = ember.autograd.grad(per_draw.sum(), [df])
    expected = float((sigma * weights).sum())
    # the standard error of the mean gradient, from a second batch's per-draw gradients
    grads = []
    for _ in range(40):
        xi = D.Wishart(df, scale_tril=L).rsample()
        (gi,) = ember.autograd.grad((xi * t64(weights)).sum(), [df])
        grads.append(float(gi))
    se = np.std(grads) / math.sqrt(n)
    assert abs(float(g) / n - expected) <= 6 * se, (float(g) / n, expected, se)


# -- ContinuousBernoulli ---------------------------------------------------------------------------

def test_continuous_bernoulli_probs_are_clamped_and_checked_only_on_request():
    # as PyTorch: probs are clamped into (0, 1) before the constraint check, so an invalid
    # value passes unless validate_args is given explicitly
    m = D.ContinuousBernoulli(probs=t64([0.0, 1.0]))
    assert bool(((m.probs > 0) & (m.probs < 1)).all())
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(probs=t64([1.5]), validate_args=False)
    e = D.ContinuousBernoulli(probs=t64([0.3, 0.4999]), lims=(0.45, 0.55)).expand((4, 2))
    assert e._lims == (0.45, 0.55) and e.batch_shape == (4, 2)


def test_continuous_bernoulli_density_integrates_to_one_and_icdf_inverts_cdf():
    m = D.ContinuousBernoulli(probs=t64([0.05, 0.3, 0.4995, 0.5, 0.7, 0.98]))
    x = np.linspace(0.0, 1.0, 20001)[:, None] * np.ones(6)
    density = np.exp(_np(m.log_prob(t64(x))))
    total = ((density[1:] + density[:-1]) / 2 * np.diff(x, axis=0)).sum(0)
    np.testing.assert_allclose(total, 1.0, rtol=1e-6)
    u = t64(RNG.uniform(0.01, 0.99, (5, 6)))
    np.testing.assert_allclose(_np(m.cdf(m.icdf(u))), _np(u), rtol=1e-9, atol=1e-12)


def test_continuous_bernoulli_uniform_kl_where_torch_says_infinite():
    """KL(p || Uniform(0, 1)) is -entropy(p) and KL(Uniform(0, 1) || q) is finite: PyTorch's
    ``>=`` / ``<=`` bounds return inf for both; ``q`` not covering ``[0, 1]`` is still inf."""
    p = D.ContinuousBernoulli(probs=t64([0.2, 0.7]))
    kl = D.kl_divergence(p, D.Uniform(t64([0.0, 0.0]), t64([1.0, 1.0])))
    np.testing.assert_allclose(_np(kl), -_np(p.entropy()), rtol=1e-12)
    assert bool(kl.isfinite().all())
    assert bool(D.kl_divergence(p, D.Uniform(t64([0.1, 0.0]), t64([1.0, 0.9]))).isinf().all())
    q = D.ContinuousBernoulli(probs=t64([0.2, 0.7]))
    u = D.Uniform(t64([0.0, 0.25]), t64([1.0, 0.5]))
    kl = _np(D.kl_divergence(u, q))
    # the same value by quadrature of E_u[log u(x) - log q(x)]
    x = np.linspace(0, 1, 200001)[:, None] * (_np(u.high) - _np(u.low)) + _np(u.low)
    integrand = -np.log(_np(u.high) - _np(u.low)) - _np(q.log_prob(t64(x)))
    np.testing.assert_allclose(kl, integrand.mean(0), rtol=1e-5)
    assert bool(D.kl_divergence(D.Uniform(t64([-0.1]), t64([0.5])),
                                D.ContinuousBernoulli(probs=t64([0.3]))).isinf().all())


# -- GeneralizedPareto -----------------------------------------------------------------------------

def test_generalized_pareto_special_cases():
    x = t64(RNG.uniform(0.05, 3.0, (5, 1)))
    # concentration 0 and loc 0: the exponential with rate 1 / scale
    gp = D.GeneralizedPareto(0.0, t64([2.0]), t64([0.0]))
    np.testing.assert_allclose(_np(gp.log_prob(x)), _np(D.Exponential(t64([0.5])).log_prob(x)),
                               rtol=1e-12)
    # concentration -1: uniform on [loc, loc + scale]
    gp = D.GeneralizedPareto(t64([0.0]), t64([4.0]), t64([-1.0]))
    np.testing.assert_allclose(_np(gp.log_prob(x)), -math.log(4.0), rtol=1e-12)
    assert float(gp.support.upper_bound) == 4.0
    # concentration > 0, loc = scale / concentration: the Pareto with alpha = 1 / concentration
    xi, s = 0.4, 1.5
    gp = D.GeneralizedPareto(t64([s / xi]), t64([s]), t64([xi]))
    y = x + s / xi
    np.testing.assert_allclose(_np(gp.log_prob(y)),
                               _np(D.Pareto(t64([s / xi]), t64([1 / xi])).log_prob(y)),
                               rtol=1e-12)


def test_generalized_pareto_cdf_icdf_and_survival_are_consistent():
    gp = D.GeneralizedPareto(t64([0.5, -1.0, 0.0]), t64([1.0, 2.0, 0.5]), t64([0.3, 0.0, -0.2]))
    u = t64(RNG.uniform(0.01, 0.99, (6, 3)))
    x = gp.icdf(u)
    np.testing.assert_allclose(_np(gp.cdf(x)), _np(u), rtol=1e-10)
    np.testing.assert_allclose(_np(gp.log_survival_function(x)), np.log1p(-_np(u)), rtol=1e-10)
    assert np.isnan(_np(D.GeneralizedPareto(0.0, 1.0, 1.5).mean))
    assert np.isnan(_np(D.GeneralizedPareto(0.0, 1.0, 0.6).variance))
    f32 = D.GeneralizedPareto(ember.tensor([0.5]), ember.tensor([1.0]), ember.tensor([0.3]))
    assert f32.log_prob(ember.tensor([1.0])).dtype == ember.float32


# -- Kumaraswamy -----------------------------------------------------------------------------------

def test_kumaraswamy_mode_is_the_density_argmax():
    """PyTorch 2.13's Kumaraswamy.mode is NaN for every valid (a, b); ember's is the argmax
    ``((a - 1) / (a b - 1)) ** (1 / a)``, NaN where a or b is below 1 or both are 1."""
    a = np.array([2.0, 3.0, 1.0, 5.0, 0.7, 1.5, 1.0])
    b = np.array([2.0, 5.0, 3.0, 1.0, 2.0, 0.5, 1.0])
    m = D.Kumaraswamy(t64(a), t64(b))
    mode = _np(m.mode)
    # the grid stops short of the ends, where 1 - x**a rounds to 1 (log_prob -inf there)
    x = np.linspace(1e-3, 1 - 1e-3, 200001)[:, None] * np.ones(7)
    argmax = x[np.argmax(_np(m.log_prob(t64(x))), 0), np.arange(7)]
    valid = (a >= 1) & (b >= 1) & ~((a == 1) & (b == 1))
    interior = valid & (a > 1) & (b > 1)
    np.testing.assert_allclose(mode[interior], argmax[interior], atol=1e-5)
    np.testing.assert_array_equal(mode[valid & ~interior], [0.0, 1.0])  # (1, 3) and (5, 1)
    np.testing.assert_allclose(argmax[valid & ~interior], [1e-3, 1 - 1e-3])
    assert np.isnan(mode[~valid]).all()
    np.testing.assert_allclose(mode[:2], ((a[:2] - 1) / (a[:2] * b[:2] - 1)) ** (1 / a[:2]))


# -- VonMises -------------------------------------------------------------------------------------

def test_von_mises_samples_match_the_circular_moments_and_cdf():
    loc = np.array([0.5, -2.8, 3.0])
    kappa = np.array([0.3, 2.0, 12.0])
    m = D.VonMises(t64(loc), t64(kappa))
    ember.manual_seed(11)
    n = 20000
    x = _np(m.sample((n,)))
    assert x.dtype == np.float64 and (x >= -math.pi).all() and (x < math.pi).all()
    c, s = np.cos(x - loc), np.sin(x - loc)
    # E[cos(x - loc)] = I1 / I0 = 1 - circular variance; E[sin(x - loc)] = 0
    r = 1 - _np(m.variance)
    assert np.all(np.abs(c.mean(0) - r) <= 6 * c.std(0) / math.sqrt(n))
    assert np.all(np.abs(s.mean(0)) <= 6 * s.std(0) / math.sqrt(n))
    # the empirical CDF against the density integrated on a grid, at four angles
    grid = np.linspace(-math.pi, math.pi, 40001)[:, None] * np.ones(3)
    dens = np.exp(_np(m.log_prob(t64(grid))))
    cdf = np.concatenate([np.zeros((1, 3)), np.cumsum((dens[1:] + dens[:-1]) / 2
                                                      * np.diff(grid, axis=0), 0)])
    np.testing.assert_allclose(cdf[-1], 1.0, rtol=1e-5)  # A&S's Bessel series: ~1e-7
    for point in (-2.0, -0.5, 1.0, 2.5):
        q = cdf[np.searchsorted(grid[:, 0], point)]
        frac = (x <= point).mean(0)
        assert np.all(np.abs(frac - q) <= 6 * np.sqrt(q * (1 - q) / n) + 1e-4), point


def test_von_mises_small_concentration_in_float32_terminates():
    m = D.VonMises(ember.tensor([0.0, 1.0]), ember.tensor([1e-6, 1e-4]))
    ember.manual_seed(0)
    x = m.sample((1000,))
    assert x.dtype == ember.float32
    xs = _np(x).astype(np.float64)
    # nearly uniform on the circle
    assert np.all(np.abs(np.cos(xs).mean(0)) < 0.15)
    with pytest.raises(NotImplementedError):
        m.rsample()
    assert not m.has_rsample


# -- LKJCholesky ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dim,eta", [(2, 1.0), (3, 0.5), (4, 2.5)])
def test_lkj_cholesky_marginals(dim, eta):
    """Each off-diagonal correlation of LKJ(eta) in dimension d has (r + 1) / 2 ~
    Beta(eta - 1 + d / 2, eta - 1 + d / 2): mean 0, variance 1 / (2 eta + d - 1)."""
    m = D.LKJCholesky(dim, t64(eta))
    ember.manual_seed(3)
    n = 6000
    L = _np(m.sample((n,)))
    corr = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    i, j = np.tril_indices(dim, -1)
    r = corr[:, i, j]
    var = 1 / (2 * eta + dim - 1)
    assert np.all(np.abs(r.mean(0)) <= 6 * math.sqrt(var / n))
    a = eta - 1 + dim / 2
    fourth = 3 / ((2 * a + 1) * (2 * a + 3))  # E[r^4] of the scaled symmetric beta
    se_var = math.sqrt((fourth - var ** 2) / n)
    assert np.all(np.abs((r ** 2).mean(0) - var) <= 6 * se_var)


def test_lkj_cholesky_bad_concentration_names_itself():
    # PyTorch 2.13 fails in the Beta it builds inside, and prints that Beta's parameters
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* of distribution "
                                         r"LKJCholesky\(concentration: .*GreaterThan"):
        D.LKJCholesky(3, t64([0.0]))
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal "
                                         "to 2. Found dim=1."):
        D.LKJCholesky(1)


def test_lkj_cholesky_expand_and_scalar_concentration():
    m = D.LKJCholesky(3, 1.5)
    assert m.batch_shape == () and m.event_shape == (3, 3)
    e = m.expand((2, 4))
    assert e.batch_shape == (2, 4) and e._beta.batch_shape == (2, 4, 3)
    ember.manual_seed(0)
    s = e.sample((5,))
    assert tuple(s.shape) == (5, 2, 4, 3, 3)
    assert bool(D.constraints.corr_cholesky.check(s).all())
    assert not m.has_rsample


# -- Wishart ---------------------------------------------------------------------------------------

def test_wishart_redraws_singular_samples_and_warns_only_then():
    m = D.Wishart(t64([5.0, 6.0]), scale_tril=t64(_tril3()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch 2.13 warns here on every draw
        ember.manual_seed(0)
        m.rsample((3,))
    draws = []
    real = m._bartlett_sampling

    def flaky(sample_shape):
        x = real(sample_shape)
        if not draws:  # the first draw: one singular matrix, element (1, 0)
            mask = ember.zeros(tuple(x.shape[:-2]), dtype=ember.bool)
            mask[1, 0] = True
            x = ember.where(mask[..., None, None], ember.zeros_like(x), x)
        draws.append(x)
        return x

    m._bartlett_sampling = flaky
    with pytest.warns(UserWarning, match="Singular sample detected."):
        x = m.rsample((3,))
    assert len(draws) == 2
    assert bool(m.support.check(x).all())
    np.testing.assert_array_equal(_np(x[0]), _np(draws[0][0]))  # regular draws are kept
    np.testing.assert_array_equal(_np(x[1, 0]), _np(draws[1][1, 0]))


def test_wishart_number_df_and_low_df_warning():
    L = t64(np.stack([_tril3(), _tril3() * 0.5]))
    m = D.Wishart(5.0, scale_tril=L)
    assert m.batch_shape == (2,) and m.df.shape == (2,)
    ref = D.Wishart(t64([5.0, 5.0]), scale_tril=L)
    for prop in ("mean", "mode", "variance"):
        np.testing.assert_allclose(_np(getattr(m, prop)), _np(getattr(ref, prop)))
    x = ref.sample((2,))
    np.testing.assert_allclose(_np(m.log_prob(x)), _np(ref.log_prob(x)))
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(t64([2.5]), covariance_matrix=t64(np.eye(3)))


def _wishart_kl(df0, V0, df1, V1):
    """KL(W(df0, V0) || W(df1, V1)) in closed form (NumPy)."""
    p = V0.shape[-1]
    from math import lgamma

    def mvlgamma(a):
        return p * (p - 1) / 4 * math.log(math.pi) + sum(lgamma(a - j / 2) for j in range(p))

    def mvdigamma(a):
        h = 1e-6  # the digamma by a central difference of lgamma, ample here
        return sum((lgamma(a - j / 2 + h) - lgamma(a - j / 2 - h)) / (2 * h) for j in range(p))

    M = np.linalg.solve(V1, V0)
    return (-df1 / 2 * np.linalg.slogdet(M)[1] + df0 / 2 * (np.trace(M) - p)
            + mvlgamma(df1 / 2) - mvlgamma(df0 / 2) + (df0 - df1) / 2 * mvdigamma(df0 / 2))


def test_wishart_kl_by_the_bregman_divergence():
    """Wishart has no registered KL pair: the exponential-family (Bregman) route computes it.
    Each batch element gets its own value (PyTorch 2.13 sums the scalar natural parameter's
    term over the batch, so its batched values are wrong; unbatched they agree)."""
    V0 = np.stack([_tril3() @ _tril3().T, np.eye(3) * 1.5])
    V1 = np.stack([np.eye(3) + 0.2, np.diag([1.0, 2.0, 0.5])])
    df0, df1 = np.array([5.0, 6.5]), np.array([4.0, 7.0])
    p = D.Wishart(t64(df0), covariance_matrix=t64(V0))
    q = D.Wishart(t64(df1), covariance_matrix=t64(V1))
    kl = _np(D.kl_divergence(p, q))
    expected = [_wishart_kl(df0[i], V0[i], df1[i], V1[i]) for i in range(2)]
    np.testing.assert_allclose(kl, expected, rtol=1e-6)
    assert (kl > 0).all()
    torch = pytest.importorskip("torch")
    tp = torch.distributions.Wishart(torch.tensor(df0[0]), covariance_matrix=torch.tensor(V0[0]))
    tq = torch.distributions.Wishart(torch.tensor(df1[0]), covariance_matrix=torch.tensor(V1[0]))
    p0 = D.Wishart(t64(df0[0]), covariance_matrix=t64(V0[0]))
    q0 = D.Wishart(t64(df1[0]), covariance_matrix=t64(V1[0]))
    np.testing.assert_allclose(_np(D.kl_divergence(p0, q0)),
                               torch.distributions.kl_divergence(tp, tq).detach().numpy(),
                               rtol=1e-9)


def test_wishart_sample_covariance_is_scale_times_df():
    """The Bartlett draw: mean df * Sigma, and X / df tends to Sigma entry by entry."""
    m = D.Wishart(t64([30.0]), scale_tril=t64(_tril3()))
    ember.manual_seed(8)
    x = _np(m.sample((3000,)))[:, 0]
    sigma = _tril3() @ _tril3().T
    var = _np(m.variance)[0]
    np.testing.assert_array_less(np.abs(x.mean(0) - 30.0 * sigma), 6 * np.sqrt(var / 3000))
    np.testing.assert_allclose(x, np.swapaxes(x, -1, -2), atol=1e-12)  # symmetric draws
