"""Stochastic Weight Averaging and exponential moving averages, like ``torch.optim.swa_utils``."""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any

import ember
from ember import Tensor
from ember.nn import Module
from ember.nn.modules.batchnorm import _BatchNorm

from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999):
    """The in-place exponential moving average over lists of parameters:
    ``W_ema = decay * W_ema + (1 - decay) * W_model``, for ``AveragedModel(multi_avg_fn=)``."""
    _check_decay(decay)

    @ember.no_grad()
    def ema_update(ema_param_list, current_param_list, _) -> None:
        first = ema_param_list[0]
        if first.is_floating_point() or first.is_complex():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The in-place equal-weight running average over lists of parameters, for
    ``AveragedModel(multi_avg_fn=)``."""

    @ember.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        first = averaged_param_list[0]
        if first.is_floating_point() or first.is_complex():
            weight = 1 / (num_averaged + 1)  # a tensor when num_averaged is one, as in PyTorch
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.lerp_(p_model, weight)
        else:
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """The exponential moving average of one parameter, for ``AveragedModel(avg_fn=)``."""
    _check_decay(decay)

    @ember.no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The equal-weight running average of one parameter, for ``AveragedModel(avg_fn=)``."""

    @ember.no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(averaged: list[Tensor], current: list[Tensor]) -> dict:
    """``{(device, dtype): ([averaged...], [current...])}``, in first-seen order."""
    groups: dict = {}
    for a, c in zip(averaged, current):
        lists = groups.setdefault((a.device, a.dtype), ([], []))
        lists[0].append(a)
        lists[1].append(c)
    return groups


class AveragedModel(Module):
    """A copy of ``model`` whose parameters keep a running average, for Stochastic Weight
    Averaging (SWA, Izmailov et al.) and exponential moving averages (EMA).

    Args:
        model: the module to average.
        device: if given, the averaged copy lives there.
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> new averaged`` for one parameter.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)``, updating
            the lists in place (e.g. :func:`get_ema_multi_avg_fn`). Without either, the
            average is the equal-weight SWA one.
        use_buffers: average the buffers as well (otherwise they are copied from ``model``).

    The first :meth:`update_parameters` copies ``model``'s parameters; ``n_averaged`` (a
    buffer) counts the updates. ``avg_fn`` and ``multi_avg_fn`` are not in the state dict.

    Example:
        >>> model = ember.nn.Linear(2, 1)
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
        >>> ema.update_parameters(model)
        >>> int(ema.n_averaged)
        1
    """

    n_averaged: Tensor

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters (and buffers, with ``use_buffers``) into the
        average."""
        if self.use_buffers:
            self_params = itertools.chain(self.module.parameters(), self.module.buffers())
            model_params = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        averaged: list[Tensor] = []
        current: list[Tensor] = []
        first = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_params, model_params):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if first:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                self._multi_update(averaged, current)
            else:
                for p_averaged, p_model in zip(averaged, current):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.copy_(self.avg_fn(p_averaged, p_model, n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1

    def _multi_update(self, averaged: list[Tensor], current: list[Tensor]) -> None:
        for (device, _), (self_params, model_params) in _group_by_device_and_dtype(
                averaged, current).items():
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(self_params, model_params, n_averaged)
            elif device.type == "cuda":  # PyTorch's foreach (lerp) path, on its devices
                get_swa_multi_avg_fn()(self_params, model_params, n_averaged)
            else:
                avg_fn = get_swa_avg_fn()
                for p_averaged, p_model in zip(self_params, model_params):
                    p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))


@ember.no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass over
    ``loader`` (batches are tensors, or lists/tuples whose first element is the input).

    The statistics are reset and then averaged over the whole pass (``momentum=None``); the
    layers' momenta and the model's training mode are restored afterwards.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each parameter group's learning rate to a fixed ``swa_lr`` over
    ``anneal_epochs`` epochs ("cos" or "linear"), then keep it there; for SWA.

    Args:
        optimizer: the wrapped optimizer.
        swa_lr: the final learning rate, one for all groups or a list with one per group.
        anneal_epochs: the length of the annealing phase (default 10).
        anneal_strategy: ``"cos"`` (default) or ``"linear"``.
        last_epoch: the index of the last epoch (default -1).
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy: str = "cos",
                 last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """The next learning rate of each group: between the group's ``lr`` and ``swa_lr`` by
        the annealing function, then ``swa_lr`` once ``anneal_epochs`` have passed."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        if anneal_strategy == "cos":
            self.anneal_func = self._cosine_anneal
        else:
            self.anneal_func = self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute but the optimizer and the annealing
        function."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
