"""``Distribution``: the base class of every distribution (``torch.distributions.Distribution``)."""

from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape) -> ember.Size:
    return shape if isinstance(shape, ember.Size) else ember.Size(shape)


class Distribution:
    """Abstract base class for probability distributions.

    Args:
        batch_shape (ember.Size): the shape over which parameters are batched.
        event_shape (ember.Size): the shape of a single sample (without batching).
        validate_args (bool, optional): whether to validate arguments (default: the class
            default, on unless Python runs with ``-O``; see :meth:`set_default_validate_args`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made without
        ``validate_args``."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=ember.Size(), event_shape=ember.Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_args()
        super().__init__()

    def _check_args(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                         lazy_property):
                continue
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to satisfy "
                                 f"the constraint {constraint!r}, but found invalid values:\n"
                                 f"{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with the batch dimensions expanded to ``batch_shape`` (the
        parameters are expanded views; no argument checks are repeated)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> ember.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> ember.Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Parameter names mapped to the constraints their values must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint describing this distribution's support."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=ember.Size()):
        """A ``sample_shape``-shaped sample (or batch of samples), without gradient."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=ember.Size()):
        """A ``sample_shape``-shaped reparameterized sample: gradients flow to the
        parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        """``n`` samples (deprecated: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """The log of the probability density/mass function at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete distribution's support along dimension 0: shape
        ``(cardinality,) + batch_shape + event_shape`` (batch dimensions of size 1 unless
        ``expand``)."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, batched over ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy)``, batched over ``batch_shape``."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=ember.Size()) -> ember.Size:
        """``sample_shape + batch_shape + event_shape``."""
        return ember.Size(tuple(_size(sample_shape)) + tuple(self._batch_shape)
                          + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        """Check that ``value``'s rightmost dimensions match the batch and event shapes and
        that its values lie in the support (PyTorch's errors)."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) "
                             f"of the distribution {self!r}, but found invalid values:\n"
                             f"{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} "
                                      "that defines a custom __init__ method must also define "
                                      "a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, cls, batch_shape, _instance, params=()):
        """The shared body of ``expand``: a new instance of ``cls`` whose parameters named in
        ``params`` (those set on ``self``) are expanded to ``batch_shape`` plus their own
        trailing (event) dimensions; ``_param`` follows them."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _size(batch_shape)
        n_batch = len(self._batch_shape)
        for name in params:
            if name in self.__dict__:
                value = self.__dict__[name]
                new.__dict__[name] = value.expand(tuple(batch_shape) + tuple(value.shape[n_batch:]))
                if self.__dict__.get("_param") is value:
                    new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return self.__class__.__name__ + "(" + args + ")"
