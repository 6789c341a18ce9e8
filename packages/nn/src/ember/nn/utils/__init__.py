"""Utilities of ``ember.nn`` (``torch.nn.utils``)."""

from . import fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
                        clip_grad_norm,
                        clip_grad_norm_,
                        clip_grad_value_,
                        clip_grads_with_norm_,
                        get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
                     fuse_conv_bn_eval,
                     fuse_conv_bn_weights,
                     fuse_linear_bn_eval,
                     fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm", "fusion", "parametrizations", "parametrize",
           "prune", "stateless", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format"]
