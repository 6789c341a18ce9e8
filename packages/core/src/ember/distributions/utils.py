"""Helpers shared by the distributions (``torch.distributions.utils``'s names)."""

from __future__ import annotations

import numbers
from functools import update_wrapper

import ember

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]

#: the Euler-Mascheroni constant
euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """Broadcast tensors and numbers together: numbers become tensors of the first tensor's
    dtype and device (the default dtype when every value is a number)."""
    if not all(isinstance(v, ember.Tensor) or isinstance(v, numbers.Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        options = {"dtype": ember.get_default_dtype()}
        for value in values:
            if isinstance(value, ember.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options)
                  for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device) -> ember.Tensor:
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value: ember.Tensor, dim: int) -> ember.Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: ember.Tensor, is_binary: bool = False) -> ember.Tensor:
    """Probabilities from logits: a sigmoid for the binary case, else a softmax over the last
    dimension."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs: ember.Tensor) -> ember.Tensor:
    """Clamp probabilities into ``[eps, 1 - eps]`` (``eps`` of their dtype)."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: ember.Tensor, is_binary: bool = False) -> ember.Tensor:
    """Logits from probabilities: log-odds for the binary case, else log-probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed on first access (with grad enabled) and then cached on the
    instance."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """A lazy_property that looks like a property on the class (for docs and validation)."""

    def __init__(self, wrapped) -> None:
        property.__init__(self, wrapped)


def _tril_mask(n: int, diag: int, device) -> ember.Tensor:
    arange = ember.arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: ember.Tensor, diag: int = 0) -> ember.Tensor:
    """The lower-triangular elements of (a batch of) ``D x D`` matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: ember.Tensor, diag: int = 0) -> ember.Tensor:
    """The (batched) lower-triangular ``D x D`` matrix whose elements, in row order, are
    ``vec``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat


def _softplus(x: ember.Tensor) -> ember.Tensor:
    """``log(1 + exp(x))``, stable at both ends (``torch.nn.functional.softplus``)."""
    return ember.logaddexp(x, ember.zeros_like(x))


def _logsigmoid(x: ember.Tensor) -> ember.Tensor:
    """``log(sigmoid(x))``, stable (``torch.nn.functional.logsigmoid``)."""
    return -_softplus(-x)


def _pad_last(x: ember.Tensor, before: int, after: int, value: float) -> ember.Tensor:
    """``x`` padded with ``value`` along the last dimension (``F.pad(x, [before, after])``)."""
    parts = []
    if before:
        parts.append(ember.full(tuple(x.shape[:-1]) + (before,), value, dtype=x.dtype,
                                device=x.device))
    parts.append(x)
    if after:
        parts.append(ember.full(tuple(x.shape[:-1]) + (after,), value, dtype=x.dtype,
                                device=x.device))
    return ember.cat(parts, -1)
