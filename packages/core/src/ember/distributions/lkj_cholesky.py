"""``LKJCholesky``: the LKJ distribution over lower Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

import ember

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution for lower Cholesky factors ``L`` of ``dim x dim`` correlation
    matrices: the correlation matrix ``M = L @ L.mT`` has density proportional to
    ``det(M) ** (concentration - 1)`` (uniform over correlation matrices at
    ``concentration == 1``). Sampled by the onion method (Lewandowski, Kurowicka and Joe,
    2009, section 3.2), vectorised over the rows as in PyTorch and NumPyro (with the paper's
    Beta parameters, which PyTorch 2.13 gets wrong from the third row on). No ``rsample``.

    Args:
        dim (int): dimension of the matrices (at least 2).
        concentration (float or Tensor): the shape parameter ``eta`` (positive).

    Example::

        >>> l = LKJCholesky(3, 0.5)
        >>> l.sample()  # l @ l.T is a sample of a 3x3 correlation matrix
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = ember.Size((dim, dim))
        # the Beta draws of section 3.2, one per row (the first row's is unused): row i >= 1
        # takes y ~ Beta(i / 2, eta + (D - 2) / 2 - (i - 1) / 2). PyTorch 2.13 (offset + 0.5
        # without the half) draws Beta(i - 1/2, ...), so its rows below the second are not
        # LKJ-distributed; NumPyro and the paper have i / 2.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = 0.5 * offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        # valid whenever concentration is (the smallest beta_conc0 is eta itself): the
        # argument check below names concentration, not this internal Beta
        self._beta = Beta(beta_conc1, beta_conc0, validate_args=False)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                                   device=y.device).tril(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            # the first row is all zeros: leave it zero (PyTorch fills its NaNs with 0)
            u_hypersphere = u_normal / ember.where(norm == 0, ember.ones_like(norm), norm)
            w = ember.sqrt(y) * u_hypersphere
            # the diagonal completes each row to unit norm (clamped for stability)
            tiny = ember.finfo(w.dtype).tiny
            diag_elems = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + ember.diag_embed(diag_elems)

    def log_prob(self, value):
        # the density of M is prop. to det(M) ** (eta - 1) = prod(L_ii ** (2 (eta - 1))), and
        # the Jacobian of L -> M is prod(L_ii ** (D - i)): L's density is prop. to
        # prod(L_ii ** (2 eta - 2 + D - i))
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        # the normalizing constant (page 1999 of the paper)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        # the paper's pi constant is D (D - 1) / 4 log(pi), mvlgamma's (D - 1) (D - 2) / 4
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
