"""``Wishart``: the Wishart distribution over symmetric positive-definite matrices."""

from __future__ import annotations

import math
import numbers
import warnings

import ember

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma ``sum_i digamma(x - i / 2)``, ``i < p``."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = ember.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ember.digamma(x.unsqueeze(-1) - offsets.expand(tuple(x.shape) + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=ember.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom (above ``p - 1`` for ``p x p``
    matrices) and scale matrix ``Sigma``, given as exactly one of ``covariance_matrix``,
    ``precision_matrix`` (``Sigma``'s inverse) or ``scale_tril`` (``Sigma``'s lower Cholesky
    factor; the cheapest, the others are factorised).

    ``rsample`` is reparameterised by the Bartlett decomposition: ``L A A^T L^T`` with ``A``
    lower triangular, ``A_ii = sqrt(chi2(df - i))`` (implicit gradients in ``df``) and
    standard normal entries below the diagonal. A draw that is numerically singular (likely
    when ``p - 1 < df < p``) is redrawn up to ``max_try_correction`` times, with a warning.

    Example::

        >>> m = Wishart(ember.tensor([2.0]), covariance_matrix=ember.eye(2))
        >>> m.sample()  # mean df * I; var(x_ij) = df for i != j, 2 df for i == j
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = ember.Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device).expand(
                batch_shape)
        else:
            batch_shape = ember.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        matrix_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Wishart, batch_shape, _instance,
                             ("df", "covariance_matrix", "scale_tril", "precision_matrix"))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(
            tuple(new.batch_shape) + tuple(self.event_shape))
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the scale matrix."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        """The scale matrix ``L @ L.mT``."""
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """The inverse of the scale matrix."""
        L = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return ember.cholesky_solve(identity, L).expand(self._matrix_shape())

    def _df_matrix(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        """``(df - p - 1) * Sigma``; NaN where ``df <= p + 1``."""
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        chi2 = Chi2(self.df.unsqueeze(-1) - ember.arange(p, dtype=L.dtype, device=L.device)
                    .expand(tuple(self._batch_shape) + (-1,)), validate_args=False)
        diagonal = ember.diag_embed(_clamp_above_eps(chi2.rsample(sample_shape).sqrt()))
        i, j = ember.tril_indices(p, p, offset=-1)
        below = ember.zeros(tuple(diagonal.shape), dtype=L.dtype, device=L.device)
        below[..., i, j] = ember.randn(tuple(sample_shape) + tuple(self._batch_shape)
                                       + (p * (p - 1) // 2,), dtype=L.dtype, device=L.device)
        chol = ember.matmul(L, diagonal + below)
        return ember.matmul(chol, chol.mT)

    def rsample(self, sample_shape=ember.Size(), max_try_correction=None):
        """A reparameterised draw by the Bartlett decomposition.

        Draws that are not numerically positive definite are redrawn (with a "Singular
        sample detected." warning) up to ``max_try_correction`` times (default 10); one may
        still come back singular, and its ``log_prob`` is then ``-inf``: validate the
        samples and raise ``df`` or ``max_try_correction``.
        """
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = ember.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redrawn = self._bartlett_sampling(sample_shape)
                mask = is_singular.unsqueeze(-1).unsqueeze(-1)
                sample = ember.where(mask, redrawn, sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        return (-nu * (p * _log_2 / 2 + self._half_log_det())
                - ember.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
                - ember.cholesky_solve(value, self._unbroadcasted_scale_tril)
                .diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _log_2 / 2 + self._half_log_det())
                + ember.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _log_2 * p)
                + ember.mvlgamma(y + (p + 1) / 2, p=p))
