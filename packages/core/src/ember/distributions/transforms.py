"""Transforms: invertible (or not) maps with log-Jacobian determinants, the building blocks of
``TransformedDistribution`` and ``biject_to``/``transform_to``
(``torch.distributions.transforms``)."""

from __future__ import annotations

import functools
import math
import numbers
import operator

import ember

from . import constraints
from .utils import (
    _logsigmoid,
    _pad_last,
    _softplus,
    _sum_rightmost,
    broadcast_all,
    lazy_property,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    """Base class of invertible transforms with computable log-det-Jacobians.

    Args:
        cache_size (int): 0 (no caching) or 1 (remember the latest ``(x, y)`` pair, so that
            ``t.inv(t(x))`` returns ``x`` itself, even for transforms without an inverse).
    """

    bijective = False

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 1:
            self._cached_x_y = (None, None)
        elif cache_size != 0:
            raise ValueError("cache_size must be 0 or 1")
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (``t.inv(t(x)) == x``)."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        """The sign of the Jacobian determinant, for bijective univariate transforms."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with the given cache size."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        """``y = t(x)``."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` for ``y = t(x)``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for an ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for a ``y`` of ``shape``."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform (made by ``Transform.inv``)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order (``parts[0]`` first)."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @lazy_property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, x_i, y_i in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(x_i, y_i),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return (self.__class__.__name__ + "(\n    "
                + ",\n    ".join(repr(p) for p in self.parts) + "\n)")


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` extra rightmost dimensions counted
    as event dimensions (their log-det-Jacobians are summed)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions to ``out_shape`` (a unit Jacobian)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _reshaped(self, shape, source, target):
        if len(shape) < len(source):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(source)
        if tuple(shape[cut:]) != tuple(source):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {source}")
        return ember.Size(tuple(shape[:cut]) + tuple(target))

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class _Parameterless(Transform):
    """A transform without parameters: every instance of the class equals every other."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    __hash__ = object.__hash__


class ExpTransform(_Parameterless):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive half line."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.exponent, "shape", ()))


def _clipped_sigmoid(x):
    finfo = ember.finfo(x.dtype)
    return ember.clamp(ember.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(_Parameterless):
    """``y = 1 / (1 + exp(-x))`` (clipped into ``(0, 1)``)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x) - _softplus(x)


class SoftplusTransform(_Parameterless):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


class TanhTransform(_Parameterless):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), written stably
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """``y = |x|`` (not bijective: the inverse is the positive root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number)


class AffineTransform(Transform):
    """``y = loc + scale * x``, over ``event_dim`` rightmost event dimensions."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if _is_number(mine) and _is_number(theirs):
                if mine != theirs:
                    return False
            elif not bool((mine == theirs).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if _is_number(self.scale):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = x.shape
        scale = self.scale
        if _is_number(scale):
            result = ember.full_like(x, math.log(abs(scale)))
        else:
            result = ember.abs(scale).log()
        if self.event_dim:
            result = result.reshape(tuple(result.size()[:-self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                      getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of length ``D(D-1)/2`` to the Cholesky factor of a ``D x D``
    correlation matrix (tanh, then stick-breaking along each row)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        x = ember.tanh(x)
        eps = ember.finfo(x.dtype).eps
        x = x.clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _pad_last(z1m_cumprod_sqrt[..., :-1], 1, 0, 1.0)

    def _inverse(self, y):
        y_cumsum = 1 - ember.cumsum(y * y, dim=-1)
        y_cumsum_shifted = _pad_last(y_cumsum[..., :-1], 1, 0, 1.0)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + _softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return ember.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return ember.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class SoftmaxTransform(_Parameterless):
    """Unconstrained space to the simplex by ``exp`` and normalisation (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _stick_offset(x, length: int):
    return length - x.new_ones(x.shape[-1]).cumsum(-1)


class StickBreakingTransform(_Parameterless):
    """Unconstrained ``R^(K-1)`` to the ``K``-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        offset = _stick_offset(x, x.shape[-1] + 1)
        z = _clipped_sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        return _pad_last(z, 0, 1, 1.0) * _pad_last(z_cumprod, 1, 0, 1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = _stick_offset(y_crop, y.shape[-1])
        sf = ember.clamp(1 - y_crop.cumsum(-1), min=ember.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = _stick_offset(x, x.shape[-1] + 1)
        x = x - offset.log()
        return (-x + _logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_Parameterless):
    """An unconstrained matrix to a lower-triangular one with a positive diagonal (the strict
    lower part kept, the diagonal exponentiated)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_Parameterless):
    """An unconstrained matrix to a positive-definite one (``L @ L.mT`` of its lower-Cholesky
    transform)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


def _check_dim(dim: int, t, name: str) -> None:
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {t.dim()} dimensions")


class CatTransform(Transform):
    """The transforms ``tseq`` applied to consecutive slices of ``lengths`` along ``dim``."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, t, name: str) -> None:
        _check_dim(self.dim, t, name)
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal "
                                 f"length {self.length}")

    def _slices(self, t):
        start = 0
        for length in self.lengths:
            yield t.narrow(self.dim, start, length)
            start = start + length

    def _call(self, x):
        self._check(x, "x")
        return ember.cat([t(s) for t, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y):
        self._check(y, "y")
        return ember.cat([t.inv(s) for t, s in zip(self.transforms, self._slices(y))],
                         dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x")
        self._check(y, "y")
        logdetjacs = []
        for trans, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            logdetjac = trans.log_abs_det_jacobian(xs, ys)
            if trans.event_dim < self.event_dim:
                logdetjac = _sum_rightmost(logdetjac, self.event_dim - trans.event_dim)
            logdetjacs.append(logdetjac)
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return ember.cat(logdetjacs, dim=dim)
        return sum(logdetjacs)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms ``tseq`` applied to the slices along ``dim``."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z, name: str):
        _check_dim(self.dim, z, name)
        if z.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {z.size(self.dim)} must equal "
                                 f"len(transforms) {len(self.transforms)}")
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        return ember.stack([t(s) for s, t in zip(self._slice(x, "x"), self.transforms)],
                           dim=self.dim)

    def _inverse(self, y):
        return ember.stack([t.inv(s) for s, t in zip(self._slice(y, "y"), self.transforms)],
                           dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._slice(x, "x"), self._slice(y, "y")
        return ember.stack([t.log_abs_det_jacobian(a, b)
                            for a, b, t in zip(xs, ys, self.transforms)], dim=self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: a univariate distribution's support to ``[0, 1]``."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
