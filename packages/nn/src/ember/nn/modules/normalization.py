"""Normalization layers (``torch.nn.modules.batchnorm``, ``instancenorm``,
``normalization``): ``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d``, ``LayerNorm``,
``GroupNorm``, ``LocalResponseNorm``, ``CrossMapLRN2d``, ``RMSNorm``."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

import ember
from ember import Tensor

from .. import functional as F
from .. import init
from .module import Module
from .utils import _parameter_or_none

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d",
           "RMSNorm"]


def _register_affine(module: Module, affine: bool, bias: bool, shape, device, dtype) -> None:
    """Register ``weight`` and ``bias`` of ``shape`` when ``affine`` (``bias`` alone may be
    left out), else both as ``None``: the elementwise affine of the normalization layers."""
    module.register_parameter("weight", _parameter_or_none(affine, shape, device, dtype))
    module.register_parameter("bias", _parameter_or_none(affine and bias, shape, device, dtype))


def _reset_affine(affine: bool, weight, bias) -> None:
    """The normalization layers' affine init: ``weight`` to ones, ``bias`` to zeros."""
    if affine:
        init.ones_(weight)
        if bias is not None:
            init.zeros_(bias)


class _NormBase(Module):
    """Affine parameters and running-statistics buffers shared by batch and instance norm."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        kw = {"device": device, "dtype": dtype}
        _register_affine(self, affine, bias, num_features, device, dtype)
        if self.track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, **kw))
            self.register_buffer("running_var", ember.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 ember.tensor(0, dtype=ember.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Zero ``running_mean`` and ``num_batches_tracked``, fill ``running_var`` with ones."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight to ones and bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self.affine, self.weight, self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked
                                   if self.num_batches_tracked is not None
                                   else ember.tensor(0, dtype=ember.long))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:   # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        if self.training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


def _dim_checker(dims: tuple, text: str):
    def check(self, input: Tensor) -> None:
        if input.dim() not in dims:
            raise ValueError(f"expected {text} input (got {input.dim()}D input)")
    return check


class BatchNorm1d(_BatchNorm):
    """Batch normalization over a 2-D ``(N, C)`` or 3-D ``(N, C, L)`` input."""

    _check_input_dim = _dim_checker((2, 3), "2D or 3D")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over a 4-D ``(N, C, H, W)`` input."""

    _check_input_dim = _dim_checker((4,), "4D")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over a 5-D ``(N, C, D, H, W)`` input."""

    _check_input_dim = _dim_checker((5,), "5D")


class _InstanceNorm(_NormBase):
    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            running = [prefix + n for n in ("running_mean", "running_var")
                       if prefix + n in state_dict]
            if running:
                error_msgs.append("Unexpected running stats buffer(s) {names} for {klass} with "
                                  "track_running_stats=False. If state_dict is a checkpoint "
                                  "saved before 0.4.0, this may be expected because {klass} "
                                  "does not track running stats by default since 0.4.0. "
                                  "Please remove these keys from state_dict. If the running "
                                  "stats are actually needed, instead set "
                                  "track_running_stats=True in {klass} to enable them. See "
                                  "the documentation of {klass} for details.".format(
                                      names=" and ".join(f'"{k}"' for k in running),
                                      klass=self.__class__.__name__))
                for key in running:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, which "
                          "is not used because affine=False", stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over ``(N, C, L)`` or ``(C, L)``."""

    _no_batch_dim = 2
    _check_input_dim = _dim_checker((2, 3), "2D or 3D")


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over ``(N, C, H, W)`` or ``(C, H, W)``."""

    _no_batch_dim = 3
    _check_input_dim = _dim_checker((3, 4), "3D or 4D")


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _no_batch_dim = 4
    _check_input_dim = _dim_checker((4, 5), "4D or 5D")


def _shape_tuple(normalized_shape) -> tuple:
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalization over the trailing ``normalized_shape`` dims with elementwise affine."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, elementwise_affine, bias, self.normalized_shape, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        _reset_affine(self.elementwise_affine, self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class GroupNorm(Module):
    """Normalization over groups of channels, with per-channel affine parameters."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, affine, bias, num_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        _reset_affine(self.affine, self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return ("{num_groups}, {num_channels}, eps={eps}, affine={affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class _ResponseNorm(Module):
    """The options of ``LocalResponseNorm`` and ``CrossMapLRN2d``: ``x / (k + alpha / size *
    sum of x^2 over size neighbouring channels)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LocalResponseNorm(_ResponseNorm):
    """Normalization over neighbouring channels (AlexNet's LRN)."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


def _cross_map_window(channels: int, size: int) -> np.ndarray:
    """``(C, C)`` 0/1: which channels' squares make up each channel's scale in PyTorch's
    ``CrossMapLRN2d``. Its running-sum recurrence never drops channel 0 and widens the
    first windows, so this is not the centred window of ``LocalResponseNorm``."""
    pre_pad = int((size - 1) / 2 + 1)
    window = np.zeros((channels, channels))
    window[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        window[c] = window[c - 1]
        if c < channels - pre_pad + 1:
            window[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            window[c, c - pre_pad] -= 1
    return window


def _cross_map_lrn2d(input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """``input / (k + alpha / size * sum of squares over the window)^beta`` across channels of
    ``(N, C, H, W)`` (PyTorch's ``torch.nn._functions._cross_map_lrn2d``: the same values;
    the gradient is this function's, where PyTorch's hand-written one assumes a centred
    window and so differs from the finite differences for ``C > 2``)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    window = ember.tensor(_cross_map_window(input.size(1), size), dtype=input.dtype,
                          device=input.device)
    scale = ember.einsum("cj,njhw->nchw", window, input * input) * (alpha / size) + k
    return input * scale.pow(-beta)


class CrossMapLRN2d(_ResponseNorm):
    """Local response normalization across channels of ``(N, C, H, W)``, as Lua Torch's
    ``SpatialCrossMapLRN``: ``x / (k + alpha / size * sum x^2)^beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        return _cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", _parameter_or_none(elementwise_affine,
                                                             self.normalized_shape, device,
                                                             dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones."""
        _reset_affine(self.elementwise_affine, self.weight, None)

    def forward(self, x: Tensor) -> Tensor:
        # ``x``, as PyTorch names it (``forward(x=...)`` works in both)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return ("{normalized_shape}, eps={eps}, "
                "elementwise_affine={elementwise_affine}".format(**self.__dict__))
