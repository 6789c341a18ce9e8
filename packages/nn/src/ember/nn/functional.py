"""The functional API (``torch.nn.functional``).

``linear`` and ``bilinear`` live here; every other name of ``torch.nn.functional`` is
re-exported from ember-core when the core provides it: first from the kernel modules'
``__all__`` (``ember.ops.normalization``, ``conv``, ``pooling``, ... hold the functions with
``torch.nn.functional``'s signatures, e.g. ``batch_norm(input, running_mean, running_var, ...)``),
then from the ``ember`` namespace (``relu``, ``sigmoid``, ``tanh``...). This module never holds
placeholders.
"""

from __future__ import annotations

import inspect
import sys

import ember
from ember import Tensor
from ember.ops import activation, attention, conv, loss, nn_misc, normalization, pooling
from ember.ops._core import make_inplace

#: the kernel names of ``torch.nn.functional`` that come from ember-core when it has them
_CORE_KERNELS = (
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "elu_", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "gaussian_nll_loss", "gelu", "glu", "grid_sample",
    "group_norm", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div",
    "l1_loss", "layer_norm", "leaky_relu", "leaky_relu_", "local_response_norm", "log_softmax",
    "logsigmoid", "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish",
    "mse_loss", "multi_head_attention_forward", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "native_channel_shuffle", "nll_loss", "normalize", "one_hot",
    "pad", "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "relu", "relu6", "relu_", "rms_norm", "rrelu", "rrelu_",
    "scaled_dot_product_attention", "selu", "selu_", "sigmoid", "silu", "smooth_l1_loss",
    "soft_margin_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "threshold_", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "unfold", "upsample", "upsample_bilinear",
    "upsample_nearest",
)

linear = ember.linear


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y = x1^T A x2 + b`` over the last dims (``torch.nn.functional.bilinear``)."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    out = ember.einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is not None:
        out = out + bias
    return out


__all__ = ["linear", "bilinear"]
_KERNEL_MODULES = (normalization, nn_misc, conv, pooling, activation, loss, attention)


def _core_kernel(name: str):
    """The ember-core function with ``torch.nn.functional``'s signature for ``name``."""
    for mod in _KERNEL_MODULES:
        if name in getattr(mod, "__all__", ()) and hasattr(mod, name):
            return getattr(mod, name)
    return getattr(ember, name, None)


def _with_inplace(fn, name: str):
    """``torch.nn.functional``'s ``name(input, inplace=False)`` over a core op without it."""
    fn_ = make_inplace(fn, name + "_")

    def op(input: Tensor, inplace: bool = False) -> Tensor:
        return fn_(input) if inplace else fn(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    return op


#: activations that ``torch.nn.functional`` gives an ``inplace`` flag
_INPLACE_FLAG = ("relu", "silu", "mish", "hardswish", "hardsigmoid")

for _name in _CORE_KERNELS:
    _fn = _core_kernel(_name)
    if _fn is not None:
        if _name in _INPLACE_FLAG and "inplace" not in inspect.signature(_fn).parameters:
            _fn = _with_inplace(_fn, _name)
        globals()[_name] = _fn
        __all__.append(_name)
del _name, _fn
from ._mha import multi_head_attention_forward  # noqa: E402,F401

# __torch_function__: these functions dispatch on Tensor subclasses once one overrides it
ember.overrides.register_namespace(sys.modules[__name__])
