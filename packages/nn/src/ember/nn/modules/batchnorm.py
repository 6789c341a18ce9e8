"""PyTorch's module path ``torch.nn.modules.batchnorm``: the batch normalization layers.

``BatchNorm1d/2d/3d`` are defined in ``normalization.py`` (the lazy ones in ``lazy.py``); this
module re-exports them, with their private bases, so that pickled class paths and checks such
as ``isinstance(m, nn.modules.batchnorm._BatchNorm)`` written against PyTorch's full paths
work. ``SyncBatchNorm``, batch norm whose statistics span the ranks of a process group, is
defined here.
"""

from __future__ import annotations

from typing import Any

import ember
from ember import Tensor
from ember.autograd.function import once_differentiable

from .. import functional as F
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .lazy import _LazyNormBase as _LazyNormBase
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .normalization import _BatchNorm as _BatchNorm
from .normalization import _NormBase as _NormBase

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    r"""Batch normalization over an ``(N, C, *)`` input whose statistics span every rank of a
    process group (``torch.nn.SyncBatchNorm``).

    .. math::

        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    In training, the mean and the biased variance of each channel are those of the batch
    made of every rank's input together (the ranks' batch sizes may differ, and a rank may
    have no rows), so the output, the gradients and the running statistics (updated with the
    unbiased variance of that global batch, with ``momentum``, or as a cumulative average
    when ``momentum`` is None) are those of one ``BatchNorm`` over the concatenated batch.
    The gradients of ``weight`` and ``bias`` are each rank's own share, which
    ``DistributedDataParallel`` then averages as it does for any parameter. Statistics are
    synchronized only in training mode, when ``ember.distributed`` is initialized and the
    group has more than one rank; otherwise (and on a rank outside ``process_group``) the
    layer is a plain batch norm. In eval mode the running statistics are used, without any
    communication.

    Unlike PyTorch, whose ``SyncBatchNorm`` refuses CPU input, Ember synchronizes CPU tensors
    too (its distributed backend is MPI on the host), as well as tensors of any other device.

    Args:
        num_features: :math:`C` from an expected input of size :math:`(N, C, +)`
        eps: a value added to the denominator for numerical stability. Default: ``1e-5``
        momentum: the value used for the running_mean and running_var computation. Can be
            set to ``None`` for cumulative moving average (i.e. simple average).
            Default: 0.1
        affine: whether this module has learnable affine parameters. Default: ``True``
        track_running_stats: whether this module tracks the running mean and variance;
            without them, batch statistics are used in eval mode too. Default: ``True``
        process_group: the group whose ranks share statistics. Default: the whole world
        bias: if ``False``, the layer learns no additive bias (only relevant if
            :attr:`affine` is ``True``). Default: ``True``

    Shape:
        - Input: :math:`(N, C, +)`
        - Output: :math:`(N, C, +)` (same shape as input)

    Convert a model's ``BatchNorm*d`` layers with :meth:`convert_sync_batchnorm` before
    wrapping it in ``DistributedDataParallel``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any | None = None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is None:
                raise AssertionError("num_batches_tracked must not be None")
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / self.num_batches_tracked.item()
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        # the buffers are updated only when tracked, and read in eval mode
        use_running = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_running else None
        running_var = self.running_var if use_running else None
        group, world_size = self._sync_group() if self.training else (None, 0)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, world_size)

    def _sync_group(self):
        """The group to synchronize over and its size (-1 on a rank outside it, 0 when
        ``ember.distributed`` is not initialized)."""
        import ember.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return None, 0
        group = self.process_group if self.process_group else dist.group.WORLD
        return group, dist.get_world_size(group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every ``BatchNorm*d`` layer in ``module`` (recursively) by a
        :class:`SyncBatchNorm` that shares its parameters and buffers.

        The new layers take over the originals' ``weight`` and ``bias`` (the same
        Parameters, with their ``requires_grad``), running statistics, training flag and
        ``qconfig``; every other module stays the same object. If ``module`` itself is a
        batch norm layer, a new ``SyncBatchNorm`` is returned instead.

        Args:
            module (nn.Module): module containing one or more ``BatchNorm*d`` layers
            process_group (optional): process group to scope synchronization, default is
                the whole world

        Example::

            >>> import ember.nn as nn
            >>> module = nn.Sequential(nn.Linear(20, 100), nn.BatchNorm1d(100))
            >>> sync_bn_module = nn.SyncBatchNorm.convert_sync_batchnorm(module)
            >>> type(sync_bn_module[1]).__name__
            'SyncBatchNorm'
        """
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                                          module.affine, module.track_running_stats,
                                          process_group, bias=module.bias is not None)
            if module.affine:
                with ember.no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


def _stat_dtype(t: Tensor) -> Tensor:
    """``t`` in the dtype its statistics are computed in: float16 and bfloat16 in float32."""
    return t.float() if t.dtype in (ember.float16, ember.bfloat16) else t


class _SyncBatchNormFunction(ember.autograd.Function):
    """Training-mode batch norm over the ranks of ``process_group``: one all-gather of every
    rank's ``[mean, biased var, count]`` in forward, one all-reduce of ``[sum(dy),
    sum(dy * (x - mean))]`` in backward (PyTorch's ``torch.nn.modules._functions``)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                process_group, world_size):
        import ember.distributed as dist

        c = input.shape[1]
        count = input.numel() // c
        axes = [0, *range(2, input.dim())]
        shape = (1, c) + (1,) * (input.dim() - 2)
        x = _stat_dtype(input)
        local_mean = x.mean(axes, keepdim=True) if count else x.new_zeros(shape)
        y = x - local_mean  # centred here; shifted to the global mean below
        if count:
            combined = ember.cat([local_mean.reshape(c), (y * y).mean(axes),
                                  local_mean.new_full((1,), count)])
        else:  # no rows here: a zero count, which weighs nothing in the global statistics
            combined = x.new_zeros(2 * c + 1)
        gathered = combined.new_empty((world_size, 2 * c + 1))
        dist.all_gather_into_tensor(gathered, combined, process_group)
        means, variances, counts = gathered[:, :c], gathered[:, c:2 * c], gathered[:, 2 * c:]
        total = int(counts.sum().item())
        n = max(total, 1)  # every rank empty: no statistics, an empty output, no update
        mean = (counts * means).sum(0) / n
        deviation = means - mean
        var = (counts * (variances + deviation * deviation)).sum(0) / n
        if total:
            if running_mean is not None:
                _update_running(running_mean, mean, momentum)
            if running_var is not None:
                unbiased = var * (total / (total - 1)) if total > 1 else var * float("nan")
                _update_running(running_var, unbiased, momentum)
        invstd = (var + eps).rsqrt()
        scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
        shift = (local_mean.reshape(c) - mean) * scale  # (x - mean) * scale + bias
        if bias is not None:
            shift += bias.to(shift.dtype)
        y *= scale.reshape(shape)
        y += shift.reshape(shape)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.total, ctx.process_group = total, process_group
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        import ember.distributed as dist

        input, weight, mean, invstd = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        c = input.shape[1]
        grad_input = grad_weight = grad_bias = None
        if not input.numel():  # no rows here; the all-reduce still needs this rank
            if need_input:
                dist.all_reduce(mean.new_zeros(2 * c), group=ctx.process_group)
                grad_input = ember.zeros_like(input)
            if weight is not None and need_weight:
                grad_weight = ember.zeros_like(weight)
            if need_bias:
                grad_bias = mean.new_zeros(c).to(ctx.bias_dtype)
            return (grad_input, grad_weight, grad_bias) + (None,) * 6
        axes = [0, *range(2, input.dim())]
        shape = (1, c) + (1,) * (input.dim() - 2)
        g = _stat_dtype(grad_output)
        xmu = _stat_dtype(input) - mean.reshape(shape)
        sum_dy = g.sum(axes)
        sum_dy_xmu = (g * xmu).sum(axes)
        if weight is not None and need_weight:
            grad_weight = (sum_dy_xmu * invstd).to(weight.dtype)
        if need_bias:
            grad_bias = sum_dy.to(ctx.bias_dtype)
        if need_input:
            combined = ember.cat([sum_dy, sum_dy_xmu])
            dist.all_reduce(combined, group=ctx.process_group)
            mean_dy, mean_dy_xmu = combined[:c] / ctx.total, combined[c:] / ctx.total
            scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
            # (dy - mean(dy) - (x - mean) * invstd^2 * mean(dy * (x - mean))) * scale, in
            # xmu's own memory
            grad_input = xmu
            grad_input *= (-(invstd * invstd * mean_dy_xmu)).reshape(shape)
            grad_input += g
            grad_input -= mean_dy.reshape(shape)
            grad_input *= scale.reshape(shape)
            grad_input = grad_input.to(input.dtype)
        return (grad_input, grad_weight, grad_bias) + (None,) * 6


def _update_running(running: Tensor, value: Tensor, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * value`` in place, computed in float64
    as ``F.batch_norm`` does, so both paths round the same."""
    running.copy_(running.double() * (1.0 - momentum) + value.double() * momentum)
