"""Gradients of the convolutions (``torch.nn.grad``).

``convNd_input`` is the gradient of ``convNd`` with respect to its input and
``convNd_weight`` the gradient with respect to its weight, for a given ``grad_output``.
Both are computed by ``ember.autograd.grad`` through the conv op itself (a convolution is
linear in each argument, so the other argument's value is all that matters), and so are
differentiable in ``weight``/``input`` and ``grad_output`` with ``create_graph`` semantics of
the surrounding grad mode.
"""

from __future__ import annotations

import ember
from ember.ops import conv as _conv

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    x = ember.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    create = ember.is_grad_enabled() and (weight.requires_grad or grad_output.requires_grad)
    with ember.enable_grad():
        out = conv(x, weight, None, stride, padding, dilation, groups)
        return ember.autograd.grad(out, x, grad_output, create_graph=create)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    w = ember.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    create = ember.is_grad_enabled() and (input.requires_grad or grad_output.requires_grad)
    with ember.enable_grad():
        out = conv(input, w, None, stride, padding, dilation, groups)
        return ember.autograd.grad(out, w, grad_output, create_graph=create)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(_conv.conv1d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(_conv.conv1d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(_conv.conv2d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(_conv.conv2d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(_conv.conv3d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(_conv.conv3d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)
