"""Masked tensors and masked reductions (``torch.masked``).

:class:`MaskedTensor` pairs data with a boolean mask (True: specified); the functions
(``sum``, ``mean``, ``amax``, ``softmax``, ...) reduce or normalize a tensor while ignoring
the elements its ``mask=`` marks False. See ``docs/masked.md`` for what differs from PyTorch.

This module is not imported by ``import ember``: importing it turns on
``__torch_function__`` dispatch for the process (``ember.overrides``), which MaskedTensor needs.
"""

from ._ops import (
    _canonical_dim,
    _combine_input_and_mask,
    _input_mask,
    _output_mask,
    _reduction_identity,
    _where,
    amax,
    amin,
    argmax,
    argmin,
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    logsumexp,
    mean,
    median,
    norm,
    normalize,
    prod,
    softmax,
    softmin,
    std,
    sum,
    var,
)
from .maskedtensor.core import MaskedTensor, is_masked_tensor
from .maskedtensor.creation import as_masked_tensor, masked_tensor

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "as_masked_tensor",
    "cumprod",
    "cumsum",
    "is_masked_tensor",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "masked_tensor",
    "MaskedTensor",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]

_ = (_canonical_dim, _combine_input_and_mask, _input_mask, _output_mask, _reduction_identity,
     _where)  # PyTorch's private helpers, re-exported as it does
