"""``Dirichlet``: the Dirichlet distribution over the simplex."""

from __future__ import annotations

import ember

from . import constraints
from ._gamma import _Dirichlet, _sample_dirichlet
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution with ``concentration`` (last dimension: the categories);
    ``rsample`` is reparameterised with PyTorch's gradients."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        concentration = self.concentration.expand(self._extended_shape(sample_shape))
        if concentration.requires_grad and ember.is_grad_enabled():
            return _Dirichlet.apply(concentration)
        return _sample_dirichlet(concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1)
                + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # every concentration below 1: the mass piles at the vertex of the largest
        k = concentrationm1.shape[-1]
        eye = ember.eye(k, dtype=mode.dtype, device=mode.device)
        vertex = eye[mode.argmax(dim=-1)]
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        return ember.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0)
                - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
