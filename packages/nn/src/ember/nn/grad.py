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


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    return _conv_grad(conv, 0, input_size, weight, grad_output, stride, padding, dilation, groups)


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    return _conv_grad(conv, 1, weight_size, input, grad_output, stride, padding, dilation, groups)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(ember.conv1d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(ember.conv1d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(ember.conv2d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(ember.conv2d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its input (of shape ``input_size``)."""
    return _input_grad(ember.conv3d, input_size, weight, grad_output, stride, padding,
                       dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its weight (of shape ``weight_size``)."""
    return _weight_grad(ember.conv3d, input, weight_size, grad_output, stride, padding,
                        dilation, groups)
