"""``ExponentialFamily``: distributions with density ``exp(<t(x), theta> - F(theta) + k(x))``."""

from __future__ import annotations

import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions. Subclasses give the natural parameters
    ``theta``, the log normalizer ``F`` and the expected carrier measure ``E[k(x)]``; the
    entropy (and the KL divergence between two members of one family) then follow from
    Bregman divergences of ``F``, differentiated by autograd."""

    @property
    def _natural_params(self) -> tuple:
        """The natural parameters, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer ``F(theta)`` at the given natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        """The expected carrier measure ``E[k(x)]``."""
        raise NotImplementedError

    def entropy(self):
        """The entropy ``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for nparam, g in zip(nparams, gradients):
            result = result - (nparam * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
