"""Pruning of parameters by masks (``torch.nn.utils.prune``).

Pruning ``module.weight`` moves the parameter to ``weight_orig``, stores the mask as the
buffer ``weight_mask`` and keeps ``weight = weight_orig * weight_mask`` as a plain attribute,
recomputed by a forward pre-hook (the pruning method itself). Pruning the same tensor again
combines the masks through a ``PruningContainer``; ``remove`` makes the pruning permanent.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember
from ember import Tensor

from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """The base class of pruning methods: a subclass defines ``compute_mask`` (and its
    ``PRUNING_TYPE``: ``"unstructured"``, ``"structured"`` or ``"global"``).

    An instance is the forward pre-hook of the pruned module, recomputing the pruned tensor
    from ``<name>_orig`` and ``<name>_mask`` before each forward.
    """

    # set by ``apply``; like PyTorch, a method that was never applied has no such attribute
    _tensor_name: str | None

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask to apply to ``t``, given the mask of earlier prunings (``default_mask``)."""

    def apply_mask(self, module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, on top of any earlier pruning
        of it. ``importance_scores`` (default: the tensor itself) drive the mask."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as "
                                     f"parameter {name} of {module}, got "
                                     f"{importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied (``t`` is not modified)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ember.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes the parameter (the same object as
        ``<name>_orig``, now holding the pruned values); ``_orig`` and ``_mask`` go."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name: str, *args, **kwargs) -> BasePruningMethod:
    """A new ``cls`` pruning of ``name``, combined with the module's earlier pruning hook of
    ``name`` (which it replaces) in a ``PruningContainer``."""
    old_keys = [k for k, hook in module._forward_pre_hooks.items()
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(old_keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    old_method = module._forward_pre_hooks.pop(old_keys[0]) if old_keys else None
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old_method is None:
        return method
    if not isinstance(old_method, PruningContainer):
        old_method = PruningContainer(old_method)
    old_method.add_pruning_method(method)
    return old_method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied one after the other to the same tensor: each
    new one prunes only what the earlier ones kept."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method``, which must act on the same tensor."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask computed on the part of ``t`` that ``default_mask`` keeps
        (the kept entries, the kept channels, or all of it for a global method), written
        into a copy of ``default_mask``."""
        method = self._pruning_methods[-1]
        slc = _unpruned_slice(method, t, default_mask)
        new_mask = default_mask.to(dtype=t.dtype)
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


def _unpruned_slice(method, t: Tensor, mask: Tensor):
    """The index of the part of ``t`` that ``method`` still acts on, given ``mask``."""
    if method.PRUNING_TYPE == "unstructured":
        return mask == 1
    if method.PRUNING_TYPE == "global":
        return (slice(None),) * t.dim()
    if method.PRUNING_TYPE != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                             "attribute `dim` defined.")
    n_dims = t.dim()
    dim = method.dim + n_dims if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
    keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
    slc = [slice(None)] * n_dims
    slc[dim] = keep_channel
    return tuple(slc)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a way to get the ``_orig``/``_mask`` layout)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module, name: str):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Zeroes the ``amount`` entries that ``_scores`` ranks lowest (highest with
    ``_prune_largest``)."""

    PRUNING_TYPE = "unstructured"
    _prune_largest = False

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            topk = ember.topk(self._scores(t).reshape(-1), k=nparams_toprune,
                              largest=self._prune_largest)
            mask.view(-1)[topk.indices] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries (a fraction if a float, a count if an int) at random."""

    # PyTorch prunes the entries of the largest uniform draws: the same choice under the
    # same seed needs the same end of the ranking
    _prune_largest = True

    def _scores(self, t: Tensor) -> Tensor:
        return ember.rand_like(t)

    @classmethod
    def apply(cls, module, name: str, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries (a fraction if a float, a count if an int) of smallest
    absolute value."""

    def _scores(self, t: Tensor) -> Tensor:
        return ember.abs(t)

    @classmethod
    def apply(cls, module, name: str, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Zeroes the ``amount`` channels along ``dim`` that ``_channels_to_keep`` leaves out."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _channels_to_keep(self, t: Tensor, nchannels: int, nchannels_toprune: int):
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        nchannels = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, nchannels)
        _validate_pruning_amount(nparams_toprune, nchannels)
        if nparams_toprune == 0:
            return default_mask
        mask = ember.zeros_like(t)
        slc = [slice(None)] * t.dim()
        slc[self.dim] = self._channels_to_keep(t, nchannels, nparams_toprune)
        mask[tuple(slc)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_Structured):
    """Prunes ``amount`` channels along ``dim`` (a fraction if a float, a count if an int) at
    random."""

    def _channels_to_keep(self, t: Tensor, nchannels: int, nchannels_toprune: int):
        prob = ember.rand(nchannels, device=t.device)
        threshold = ember.kthvalue(prob, k=nchannels_toprune).values
        return prob > threshold

    @classmethod
    def apply(cls, module, name: str, amount, dim: int = -1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels along ``dim`` (a fraction if a float, a count if an
    int) of smallest ``n``-norm (``n`` as ``ember.norm``'s ``p``)."""

    def __init__(self, amount, n, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _channels_to_keep(self, t: Tensor, nchannels: int, nchannels_toprune: int):
        norm = _compute_norm(t, self.n, self.dim)
        return ember.topk(norm, k=nchannels - nchannels_toprune, largest=True).indices

    @classmethod
    def apply(cls, module, name: str, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (combined with any earlier one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name: str, mask: Tensor):
        return super().apply(module, name, mask=mask)


def identity(module, name: str):
    """Apply a mask of ones to ``module.<name>`` (``<name>_orig``, ``<name>_mask``, and the
    forward pre-hook, without pruning anything). Returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prune ``amount`` random entries of ``module.<name>`` (a fraction in [0, 1] if a float,
    a count if an int). Returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` with the smallest absolute value (or
    smallest ``importance_scores``); ``amount`` is a fraction if a float, a count if an int.
    Returns ``module``.

    Example::

        >>> m = l1_unstructured(ember.nn.Linear(2, 3), "weight", amount=0.5)
        >>> int((m.weight == 0).sum())
        3
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``. Returns
    ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` with the smallest
    ``n``-norm (of ``importance_scores`` if given). Returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method``
    (an unstructured method class, e.g. ``L1Unstructured``, built with ``**kwargs``) ranks
    all their entries at once, so each tensor may lose a different fraction.

    ``importance_scores`` maps ``(module, name)`` to scores used instead of the tensor.
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    relevant_importance_scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name))
         for module, name in parameters])
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", ember.ones_like(getattr(module, name)))
         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module, name: str, mask: Tensor):
    """Prune ``module.<name>`` with the given ``mask`` (zeros prune). Returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name: str):
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` becomes a parameter again
    holding the pruned values; the mask, ``<name>_orig`` and the hook go. Returns ``module``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or one of its submodules has been pruned."""
    return any(isinstance(hook, BasePruningMethod)
               for _, submodule in module.named_modules()
               for hook in submodule._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    """``amount`` as a count: itself if an int, else the rounded fraction of ``tensor_size``."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n, dim: int) -> Tensor:
    """The ``n``-norm of each slice of ``t`` along ``dim``."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return ember.norm(t, p=n, dim=dims)
