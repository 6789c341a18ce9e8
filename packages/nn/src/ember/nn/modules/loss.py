"""Loss layers (``torch.nn.modules.loss``): the legacy ``size_average``/``reduce`` arguments
map to ``reduction`` (with PyTorch's deprecation warning) exactly as in ``_Loss``."""

from __future__ import annotations

import math
import warnings

from ember import Tensor

from .. import functional as F
from .linear import Linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions
from .module import Module

__all__ = ["L1Loss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss",
           "BCELoss", "BCEWithLogitsLoss", "HingeEmbeddingLoss", "SmoothL1Loss", "HuberLoss",
           "SoftMarginLoss", "CrossEntropyLoss", "MultiLabelSoftMarginLoss",
           "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss",
           "CTCLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
           "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


def _legacy_reduction(size_average, reduce) -> str:
    """``torch.nn._reduction.legacy_get_string``: the reduction the legacy flags mean."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _check_triplet_margin(loss: str, margin: float) -> None:
    """The triplet losses' check of ``margin`` (``loss`` names the class in the message)."""
    if margin <= 0:
        raise ValueError(f"{loss}: expected margin to be greater than 0, got {margin} instead")


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class _ReductionLoss(_Loss):
    """A loss whose only option is ``reduction``: ``F.<_fn_name>(input, target, reduction=...)``."""

    __constants__ = ["reduction"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, target, reduction=self.reduction)


class _WeightedReductionLoss(_WeightedLoss):
    """A loss whose options are ``weight`` and ``reduction``: ``F.<_fn_name>(input, target,
    weight=..., reduction=...)``."""

    __constants__ = ["reduction"]
    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input, target, weight=self.weight, reduction=self.reduction)


class _MarginLoss(_Loss):
    """A loss whose options are ``margin`` and ``reduction``."""

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class _PairMarginLoss(_MarginLoss):
    """A margin loss of two inputs and a ``target`` of 1 or -1: ``F.<_fn_name>(input1, input2,
    target, margin=..., reduction=...)``."""

    _fn_name: str  # the torch.nn.functional function, looked up at each call

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        fn = getattr(F, self._fn_name)
        return fn(input1, input2, target, margin=self.margin, reduction=self.reduction)


class L1Loss(_ReductionLoss):
    """Mean absolute error."""

    _fn_name = "l1_loss"


class MSELoss(_ReductionLoss):
    """Mean squared error."""

    _fn_name = "mse_loss"


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices given log-probabilities."""

    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities."""

    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target."""

    __constants__ = ["log_input", "full", "eps", "reduction"]

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target with predicted mean and variance."""

    __constants__ = ["full", "eps", "reduction"]

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``."""

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedReductionLoss):
    """Binary cross entropy of probabilities."""

    _fn_name = "binary_cross_entropy"


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (sigmoid fused, numerically stable)."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above."""

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta``-scaled absolute error above."""

    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SoftMarginLoss(_ReductionLoss):
    """Two-class logistic loss ``log(1 + exp(-y x))``."""

    _fn_name = "soft_margin_loss"


class MultiLabelSoftMarginLoss(_WeightedReductionLoss):
    """Multi-label one-versus-all logistic loss."""

    _fn_name = "multilabel_soft_margin_loss"


class CosineEmbeddingLoss(_PairMarginLoss):
    """``1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos(x1, x2) - margin)`` for ``y = -1``."""

    _fn_name = "cosine_embedding_loss"


class MarginRankingLoss(_PairMarginLoss):
    """``max(0, -y (x1 - x2) + margin)``."""

    _fn_name = "margin_ranking_loss"


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (``p`` = 1 or 2)."""

    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the ``p``-norm distance."""

    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        _check_triplet_margin("TripletMarginLoss", margin)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss."""

    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths,
                target_lengths) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


class MultiLabelMarginLoss(_ReductionLoss):
    """Multi-class multi-label hinge loss: ``target`` holds class indices ended by ``-1``."""

    _fn_name = "multilabel_margin_loss"


class TripletMarginWithDistanceLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` for a ``distance_function`` (default
    ``PairwiseDistance()``)."""

    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        _check_triplet_margin("TripletMarginWithDistanceLoss", margin)
        from .distance import PairwiseDistance

        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


# -- linear + cross entropy --------------------------------------------------------------------


class LinearCrossEntropyLoss(_WeightedLoss):
    """The cross entropy between ``input`` projected to logits by a built-in linear layer and
    ``target`` (``torch.nn.LinearCrossEntropyLoss``).

    Args:
        in_features: size of each input sample.
        num_classes: number of classes, ``C``.
        out_features: ``(d_1, ..., d_K)`` for a K-dimensional loss (default ``()``).
        bias: give the linear layer a bias (default ``False``).
        device, dtype: of the linear layer's parameters.
        reduction: ``'none'`` | ``'mean'`` | ``'sum'`` (default ``'mean'``).
        weight: a rescaling weight per class, of shape ``(C,)``.
        ignore_index: a target value that is ignored (``None``: -100 for class indices).
        label_smoothing: in ``[0, 1]`` (default 0).
        options: a :class:`LinearCrossEntropyOptions` for the chunked implementation, or
            ``None`` for the reference one.

    The layer's weight is stored flat, ``(C * prod(out_features), in_features)``, as
    ``self.linear.weight``, and reshaped to ``(C, *out_features, in_features)`` in forward.
    """

    __constants__ = ["num_classes", "out_features", "reduction", "ignore_index",
                     "label_smoothing"]

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight: Tensor | None = None, ignore_index: int | None = None,
                 label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and weight.shape != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError("expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear holds 2-d weights: the K-dimensional weight is kept flat and reshaped in forward
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        linear_weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = (self.linear.bias.reshape((self.num_classes, *self.out_features))
                       if self.linear.bias is not None else None)
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features},"
                f" num_classes={self.num_classes},"
                f" out_features={self.out_features},"
                f" bias={self.linear.bias is not None},"
                f" reduction={self.reduction},"
                f" ignore_index={self.ignore_index},"
                f" label_smoothing={self.label_smoothing},"
                f" options={self.options}")
