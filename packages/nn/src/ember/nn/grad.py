"""Gradients of the convolutions (``torch.nn.grad``).

``convNd_input`` is the gradient of ``convNd`` with respect to its input and
``convNd_weight`` the gradient with respect to its weight, for a given ``grad_output``.
Both are computed by ``ember.autograd.grad`` through the conv op itself (a convolution is
linear in each argument, so the other argument's value is all that matters), and so are
differentiable in ``weight``/``input`` and ``grad_output`` with ``create_graph`` semantics of
the surrounding grad mode.
"""

from __future__ import annotations

from collections.abc import Callable

import ember
from ember import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _conv_grad(conv, wrt: int, size, other, grad_output, stride, padding, dilation, groups):
    """The gradient of ``conv`` w.r.t. its argument ``wrt`` (0: input, 1: weight) of shape
    ``size``, the other argument being ``other``."""
    leaf = ember.zeros(tuple(size), dtype=grad_output.dtype, device=grad_output.device,
                       requires_grad=True)
    create = ember.is_grad_enabled() and (other.requires_grad or grad_output.requires_grad)
    args = (leaf, other) if wrt == 0 else (other, leaf)
    with ember.enable_grad():
        out = conv(*args, None, stride, padding, dilation, groups)
        return ember.autograd.grad(out, leaf, grad_output, create_graph=create)[0]


def _conv_gradient(op: str, wrt: str) -> Callable[..., Tensor]:
    """``torch.nn.grad``'s ``<op>_<wrt>``: the gradient of ``ember.<op>`` with respect to its
    ``wrt`` (``"input"`` or ``"weight"``), with PyTorch's signature."""
    conv = getattr(ember, op)
    if wrt == "input":
        def gradient(input_size, weight, grad_output, stride=1, padding=0, dilation=1,
                     groups=1):
            return _conv_grad(conv, 0, input_size, weight, grad_output, stride, padding,
                              dilation, groups)
    else:
        def gradient(input, weight_size, grad_output, stride=1, padding=0, dilation=1,
                     groups=1):
            return _conv_grad(conv, 1, weight_size, input, grad_output, stride, padding,
                              dilation, groups)
    gradient.__name__ = gradient.__qualname__ = f"{op}_{wrt}"
    gradient.__doc__ = (f"The gradient of ``{op}`` with respect to its {wrt} (of shape "
                        f"``{wrt}_size``).")
    return gradient


conv1d_input = _conv_gradient("conv1d", "input")
conv1d_weight = _conv_gradient("conv1d", "weight")
conv2d_input = _conv_gradient("conv2d", "input")
conv2d_weight = _conv_gradient("conv2d", "weight")
conv3d_input = _conv_gradient("conv3d", "input")
conv3d_weight = _conv_gradient("conv3d", "weight")
