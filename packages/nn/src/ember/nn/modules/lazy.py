"""``LazyModuleMixin``: modules whose parameter shapes come from their first input
(``torch.nn.modules.lazy``), and the lazy normalization layers (``LazyBatchNorm1d/2d/3d``,
``LazyInstanceNorm1d/2d/3d``). ``LazyLinear`` and the lazy convolutions live beside
``Linear`` and the convolutions."""

from __future__ import annotations

import itertools

import ember

from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
    _NormBase,
)

__all__ = ["LazyModuleMixin", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


def _uninitialized_weight_and_bias(module, bias: bool, device, dtype) -> None:
    """Give ``module`` (``LazyLinear``, a lazy convolution) an uninitialized ``weight`` and,
    when it has one, ``bias``."""
    module.weight = UninitializedParameter(device=device, dtype=dtype)
    if bias:
        module.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyModuleMixin:
    """A mixin for modules that initialize their parameters lazily ("lazy modules").

    Until the first ``forward`` a lazy module holds ``UninitializedParameter`` s; a forward
    pre-hook then calls ``initialize_parameters(*args, **kwargs)`` with the first input,
    which materializes them with the inferred shapes, and the module becomes a
    ``cls_to_become`` (``LazyLinear`` turns into ``Linear``). Move the module to its device
    and dtype before that first "dry run".

    A lazy module's ``state_dict`` holds its ``UninitializedParameter`` s, and it can load a
    state dict of an initialized module (its parameters then take the saved shapes).

    Example::

        >>> lazy = ember.nn.LazyLinear(10)
        >>> y = lazy(ember.ones(4, 3))
        >>> lazy
        Linear(in_features=3, out_features=10, bias=True)
    """

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self.register_load_state_dict_pre_hook(LazyModuleMixin._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(
            LazyModuleMixin._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        # an uninitialized tensor is saved as it is (it cannot be detached)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars \
                    else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars \
                    else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Materialize the uninitialized tensors that the state dict has initialized values
        for, so that ``load_state_dict`` can copy them in."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                input_param = state_dict[key]
                if not is_lazy(input_param):
                    with ember.no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Initialize the parameters from the first input (each lazy module defines it)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether the module still has parameters or buffers that are not initialized."""
        tensors = itertools.chain(self._parameters.values(), self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def _infer_parameters(self, args, kwargs=None) -> None:
        """The forward pre-hook: initialize from the input, then become ``cls_to_become``."""
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        delattr(self, "_initialize_hook")
        delattr(self, "_load_hook")
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


# -- lazy normalization layers: num_features comes from the first input -----------------------
# (PyTorch keeps them beside BatchNorm and InstanceNorm; like those, they are not subclasses
# of BatchNormNd / InstanceNormNd until they become one)

class _LazyNormBase(LazyModuleMixin, _NormBase):
    """Uninitialized affine parameters and running statistics, materialized with
    ``num_features = input.shape[feature dimension]`` on the first ``forward``."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.long, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _feature_dim(self, input) -> int:
        return 1

    def initialize_parameters(self, input) -> None:
        """Materialize the parameters and buffers with the input's number of features."""
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[self._feature_dim(input)]
        with ember.no_grad():
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if is_lazy(t):
                    t.materialize((self.num_features,))
            self.reset_parameters()


class _LazyBatchNorm(_LazyNormBase, _BatchNorm):
    pass


class LazyBatchNorm1d(_LazyBatchNorm):
    """A ``BatchNorm1d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyBatchNorm):
    """A ``BatchNorm2d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyBatchNorm):
    """A ``BatchNorm3d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim


class _LazyInstanceNorm(_LazyNormBase, _InstanceNorm):
    def _feature_dim(self, input) -> int:
        return input.dim() - self._no_batch_dim  # batched or not, as InstanceNorm's forward


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """An ``InstanceNorm1d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = InstanceNorm1d._no_batch_dim
    _check_input_dim = InstanceNorm1d._check_input_dim


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """An ``InstanceNorm2d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = InstanceNorm2d._no_batch_dim
    _check_input_dim = InstanceNorm2d._check_input_dim


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """An ``InstanceNorm3d`` whose ``num_features`` is inferred from the first input."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = InstanceNorm3d._no_batch_dim
    _check_input_dim = InstanceNorm3d._check_input_dim
