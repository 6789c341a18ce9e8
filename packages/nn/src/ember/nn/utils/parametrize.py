"""Parametrizations of parameters and buffers (``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` and makes ``module.weight`` a property that
returns ``P(original)``. As in PyTorch the property lives on a class made for the module, a
subclass of its class named ``Parametrized<Class>``, so other instances are untouched.
"""

from __future__ import annotations

import collections.abc
import copyreg
from contextlib import contextmanager
from copy import deepcopy

import ember
from ember import Tensor

from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Cache the value of parametrized tensors while the context is active.

    Each parametrized tensor is computed once, the first time it is read inside the context,
    and reused until the outermost ``cached()`` exits. Use it when a parametrized weight is
    read several times in one forward (an RNN's recurrent kernel, tied weights)::

        with parametrize.cached():
            output = model(inputs)
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_data(dest: Tensor, src: Tensor) -> None:
    """Make ``dest`` hold ``src``'s values, keeping ``dest`` the same object (optimizers hold
    references to it): PyTorch's ``dest.set_(src)``."""
    with ember.no_grad():
        dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its unconstrained original(s).

    This is ``module.parametrizations[tensor_name]``. When the first parametrization's
    ``right_inverse`` returns one tensor (or it has none), the original is stored as
    ``original``; when it returns several, as ``original0``, ``original1``, ...

    Made by ``register_parametrization``; not meant to be built by hand.
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        new = self._initial_right_inverse(original)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_single_original(original, new)
        else:
            self._register_originals(original, new)
        if not self.unsafe:
            _check_parametrization_output(self(), original_shape, original_dtype)

    def _initial_right_inverse(self, original: Tensor):
        """``original`` through every ``right_inverse`` (missing or not implemented: identity)."""
        with ember.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        return new

    def _register_single_original(self, original: Tensor, new: Tensor) -> None:
        if original.dtype != new.dtype:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                             f"dtype.\noriginal.dtype: {original.dtype}\n"
                             f"right_inverse(original).dtype: {new.dtype}")
        if original.device != new.device:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                             f"device.\noriginal.device: {original.device}\n"
                             f"right_inverse(original).device: {new.device}")
        # keep the same object, so that an optimizer holding it still sees it
        _set_data(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _register_originals(self, original: Tensor, new) -> None:
        for i, original_i in enumerate(new):
            if not isinstance(original_i, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                 f"(list, tuple...). Got element {i} of the sequence with type "
                                 f"{type(original_i).__name__}.")
            if isinstance(original, Parameter):
                original_i = Parameter(original_i, original.requires_grad)
            original_i.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", original_i)

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) from ``value``: the ``right_inverse`` of every
        parametrization, last registered first, stored into ``original`` (or ``original0``,
        ``original1``, ...)."""
        with ember.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                self._set_single_original(value)
            else:
                self._set_originals(value)

    def _set_single_original(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                             f"while `original` has dtype {self.original.dtype}")
        _set_data(self.original, value)

    def _set_originals(self, value) -> None:
        if not isinstance(value, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. "
                             f"Got {type(value).__name__}.")
        if len(value) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(value)}.")
        for i, tensor in enumerate(value):
            original_i = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors or "
                                 f"reference-type opaques. Got element {i} of type "
                                 f"{type(tensor).__name__}.")
            if original_i.dtype != tensor.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                 f"{tensor.dtype} while `original{i}` has dtype "
                                 f"{original_i.dtype}")
            _set_data(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the parametrizations applied in order to the original(s)."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _check_parametrization_output(Z, original_shape, original_dtype) -> None:
    """A registered parametrization must keep the tensor's dtype and shape (unless unsafe)."""
    if not isinstance(Z, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
    if Z.dtype != original_dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                         "unless `unsafe` flag is enabled.\n"
                         f"unparametrized dtype: {original_dtype}\nparametrized dtype: {Z.dtype}")
    if Z.shape != original_shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                         "unless `unsafe` flag is enabled.\n"
                         f"unparametrized shape: {original_shape}\n"
                         f"parametrized shape: {Z.shape}")


def _default_deepcopy(self, memo):
    """``deepcopy`` for a parametrized module whose class has no ``__deepcopy__``."""
    obj = memo.get(id(self), None)
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own, ``Parametrized<Class>``, to hold the properties."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    """Make ``module.<tensor_name>`` a property evaluating its parametrizations (reads) and
    calling their ``right_inverse`` (assignments)."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_added_parametrization(module, tensor_name: str, parametrization) -> None:
    """A parametrization added on top of others must map the tensor's space to itself."""
    Y = getattr(module, tensor_name)
    X = parametrization(Y)
    if not isinstance(X, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
    if X.dtype != Y.dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                         "unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.dtype: {Y.dtype}\n"
                         f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
    if X.shape != Y.shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                         "unless the `unsafe` flag is enabled.\n"
                         f"module.{tensor_name}.shape: {Y.shape}\n"
                         f"parametrization(module.{tensor_name}).shape: {X.shape}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        Z = parametrization.right_inverse(X)
    except NotImplementedError:
        return
    if not isinstance(Z, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(Z).__name__}")
    if Z.dtype != Y.dtype:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the "
                         f"same dtype as module.{tensor_name}, unless the `unsafe` flag is "
                         f"enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                         f"returned dtype: {Z.dtype}")
    if Z.shape != Y.shape:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the "
                         f"same shape as module.{tensor_name}, unless the `unsafe` flag is "
                         f"enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                         f"returned shape: {Z.shape}")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Register a parametrization on the parameter or buffer ``tensor_name`` of ``module``.

    Reading ``module.<tensor_name>`` then returns ``parametrization(original)``, differentiable
    with respect to the original, which moves to
    ``module.parametrizations[tensor_name].original`` (state dict key
    ``parametrizations.<tensor_name>.original``). Several parametrizations on one tensor are
    applied in registration order.

    If ``parametrization`` has ``right_inverse(X)``, it gives the original from the current
    value on registration and on assignment (``module.weight = X``); returning a sequence of
    tensors stores them as ``original0``, ``original1``, ...

    Unless ``unsafe=True`` the parametrization may not change the tensor's shape or dtype
    (``ValueError``). Returns ``module``.

    Example::

        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).mT
        >>> m = register_parametrization(ember.nn.Linear(3, 3), "weight", Symmetric())
        >>> bool((m.weight == m.weight.T).all())
        True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added_parametrization(module, tensor_name, parametrization)
        parametrizations = module.parametrizations[tensor_name]
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, or on any tensor)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Remove the parametrizations on ``module.<tensor_name>``.

    With ``leave_parametrized=True`` the tensor keeps its current parametrized value; with
    ``False`` it goes back to the unparametrized original (possible only when the
    parametrization has a single original tensor). The original Parameter object is kept
    where it can be, so optimizers need no update. Returns ``module``.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with ember.no_grad():
                t = getattr(module, tensor_name)
            _set_data(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach()) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before it was parametrized (its class if it is not)."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register on ``to_module`` the parametrizations of ``from_module`` (all, or those of
    ``tensor_name``) and share their original tensors. Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
