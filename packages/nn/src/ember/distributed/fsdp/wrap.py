"""Auto-wrap policies for ``FullyShardedDataParallel`` (``torch.distributed.fsdp.wrap``).

A policy decides which submodules become their own (nested) FSDP instance. The callable
ones take ``(module, recurse, nonwrapped_numel)`` and are used as PyTorch uses them,
through ``functools.partial`` (``size_based_auto_wrap_policy`` with ``min_num_params``,
``transformer_auto_wrap_policy`` with ``transformer_layer_cls``); ``ModuleWrapPolicy`` and
``CustomPolicy`` pick modules up front. Wrapping is bottom-up: a wrapped child replaces the
original in its parent (``setattr``), so the tree reads ``FullyShardedDataParallel(
(_fsdp_wrapped_module): ...)`` at each wrapped module, as in PyTorch.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember import nn

__all__ = [
    "always_wrap_policy",
    "lambda_auto_wrap_policy",
    "transformer_auto_wrap_policy",
    "size_based_auto_wrap_policy",
    "enable_wrap",
    "wrap",
    "CustomPolicy",
    "ModuleWrapPolicy",
]


def _post_order_apply(root_module, fn: Callable) -> None:
    """Call ``fn`` on every module below ``root_module``, children first; a module ``fn``
    returns replaces the visited one in its parent."""
    visited = {id(root_module)}

    def inner(module, module_name: str, parent) -> None:
        for child_name, child in module.named_children():
            if id(child) not in visited:
                visited.add(id(child))
                inner(child, child_name, module)
        replacement = fn(module)
        if replacement is not None:
            if not isinstance(parent, nn.Module):
                raise AssertionError("Non-root modules should have their parent module set "
                                     f"but got {parent} for {module}")
            if not module_name:
                raise AssertionError("Non-root modules should have their module name set but "
                                     f"got an empty module name for {module}")
            if not isinstance(replacement, nn.Module):
                raise AssertionError(f"fn should return None or an nn.Module but got "
                                     f"{replacement}")
            setattr(parent, module_name, replacement)

    inner(root_module, "", None)


def _construct_wrap_fn(root_module, target_module_to_kwargs: dict, fsdp_fn: Callable):
    def fn(module):
        if id(module) in target_module_to_kwargs and module is not root_module:
            return fsdp_fn(module, **target_module_to_kwargs[id(module)])
        return None

    return fn


def always_wrap_policy(*args, **kwargs) -> bool:
    """Wrap every module."""
    return True


class _Policy:
    """A policy that picks the modules to wrap, with their FSDP kwargs, up front."""

    def _run_policy(self, root_module, ignored_modules: set, root_kwargs: dict) -> dict:
        """``{id(module): kwargs}`` of the modules to wrap."""
        raise NotImplementedError  # pragma: no cover - abstract


def _module_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                        module_classes) -> bool:
    if recurse:
        return True  # always recurse
    return isinstance(module, tuple(module_classes))


class ModuleWrapPolicy(_Policy):
    """Wrap every module that is an instance of one of ``module_classes``."""

    def __init__(self, module_classes: Iterable[type]):
        module_classes_set = set(module_classes)
        self._module_classes = module_classes_set
        self._module_classes_str = str(module_classes_set)

    def _run_policy(self, root_module, ignored_modules, root_kwargs) -> dict:
        classes = tuple(self._module_classes)
        return {id(m): copy.copy(root_kwargs) for m in root_module.modules()
                if id(m) not in ignored_modules and isinstance(m, classes)}

    def __call__(self, module, recurse, *args, **kwargs):
        return _module_wrap_policy(module, recurse, nonwrapped_numel=-1,
                                   module_classes=self._module_classes)

    def __repr__(self) -> str:
        return super().__repr__() + f"({self._module_classes_str})"


class CustomPolicy(_Policy):
    """``lambda_fn(module)`` returns False (do not wrap), True (wrap with the root's kwargs)
    or a dict of kwargs that override the root's for that module."""

    def __init__(self, lambda_fn: Callable):
        self._lambda_fn = lambda_fn

    def _run_policy(self, root_module, ignored_modules, root_kwargs) -> dict:
        out = {}
        for module in root_module.modules():
            if id(module) in ignored_modules:
                continue
            res = self._lambda_fn(module)
            if not isinstance(res, (dict, bool)):
                raise ValueError("The lambda_fn passed to CustomPolicy should return "
                                 f"False/True or a kwarg dict, but it returned {res}")
            if not res:
                continue
            kwargs = copy.copy(root_kwargs)
            if isinstance(res, dict):
                kwargs.update(res)
            out[id(module)] = kwargs
        return out


def lambda_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Callable) -> bool:
    """Wrap the modules for which ``lambda_fn(module)`` is true."""
    if recurse:
        return True  # always recurse
    return lambda_fn(module)


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls) -> bool:
    """Wrap every instance of ``transformer_layer_cls`` (a set of layer classes)."""
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def _wrap_module_cls_individually(module, module_classes: Sequence[type], recurse: bool,
                                  *args, **kwargs) -> bool:
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


def _or_policy(module, recurse: bool, nonwrapped_numel: int, policies) -> bool:
    """True when any of ``policies`` is."""
    return any(policy(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel)
               for policy in policies)


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None) -> bool:
    """Wrap a module when the parameters not yet wrapped below it number at least
    ``min_num_params``; never recurse into ``force_leaf_modules`` (MultiheadAttention)
    nor wrap ``exclude_wrap_modules`` (ModuleList, ModuleDict)."""
    force_leaf_modules = (size_based_auto_wrap_policy.FORCE_LEAF_MODULES
                          if force_leaf_modules is None else force_leaf_modules)
    exclude_wrap_modules = (size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES
                            if exclude_wrap_modules is None else exclude_wrap_modules)
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, tuple(force_leaf_modules))
    return is_large and not isinstance(module, tuple(exclude_wrap_modules))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {nn.ModuleList, nn.ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {nn.MultiheadAttention}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Any, **wrapper_kwargs: Any):
    """Inside this context, ``wrap(module)`` wraps with ``wrapper_cls(module,
    **wrapper_kwargs)``."""
    with _ConfigAutoWrap(wrapper_cls=wrapper_cls, **wrapper_kwargs):
        yield


def wrap(module, **wrap_overrides: Any):
    """``module`` wrapped as ``enable_wrap`` configured (``wrap_overrides`` win); outside
    ``enable_wrap``, ``module`` itself."""
    if _ConfigAutoWrap.in_autowrap_context:
        if _ConfigAutoWrap.wrapper_cls is None:
            raise AssertionError("Expected _ConfigAutoWrap.wrapper_cls to be set")
        return _wrap(module, _ConfigAutoWrap.wrapper_cls,
                     **{**_ConfigAutoWrap.kwargs, **wrap_overrides})
    return module


def _wrap(module, wrapper_cls: Callable, **kwargs):
    if wrapper_cls is None:
        raise AssertionError("Expected wrapper_cls to be set")
    overrides = getattr(module, "_wrap_overrides", None)
    if overrides is not None:
        return wrapper_cls(module, **{**kwargs, **overrides})
    return wrapper_cls(module, **kwargs)


def _recursive_wrap(module, auto_wrap_policy: Callable, wrapper_cls: Callable,
                    ignored_modules: set, ignored_params: set,
                    only_wrap_children: bool = False, **kwargs: Any) -> tuple:
    """Wrap ``module``'s tree bottom-up as ``auto_wrap_policy`` says; returns the (maybe
    wrapped) module and how many parameters got wrapped."""
    if auto_wrap_policy is None:
        raise AssertionError("Must specify auto_wrap_policy.")
    if wrapper_cls is None:
        raise AssertionError("Must specify wrapper_cls")
    for _, child in module.named_modules():
        if id(child) in ignored_modules:
            continue
        if isinstance(child, wrapper_cls):
            raise AssertionError(f"Child module {child} is already wrapped by {wrapper_cls}")
    nonwrapped_numel = sum(p.numel() for p in module.parameters()
                           if id(p) not in ignored_params)
    if auto_wrap_policy(module=module, recurse=True, nonwrapped_numel=nonwrapped_numel):
        total_wrapped_numel = 0
        for name, child in module.named_children():
            if id(child) in ignored_modules:
                continue
            wrapped_child, num_wrapped = _recursive_wrap(
                module=child, auto_wrap_policy=auto_wrap_policy, wrapper_cls=wrapper_cls,
                ignored_modules=ignored_modules, ignored_params=ignored_params, **kwargs)
            setattr(module, name, wrapped_child)
            total_wrapped_numel += num_wrapped
        remainder = nonwrapped_numel - total_wrapped_numel
        if not only_wrap_children and auto_wrap_policy(module=module, recurse=False,
                                                       nonwrapped_numel=remainder):
            return _wrap(module, wrapper_cls, **kwargs), nonwrapped_numel
        return module, total_wrapped_numel
    return module, 0


class _ConfigAutoWrap:
    """The ``enable_wrap`` context: the wrapper class and its kwargs."""

    in_autowrap_context: bool = False
    wrapper_cls: Callable | None = None
    kwargs: dict = {}

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs

    @staticmethod
    def enable_autowrap_context(kwargs: Any) -> None:
        if _ConfigAutoWrap.in_autowrap_context:
            raise NotImplementedError("You are already within an autowrap context and we "
                                      "currently do not supported nested autowrap.")
        _ConfigAutoWrap.in_autowrap_context = True
        if "wrapper_cls" not in kwargs:
            raise AssertionError("Expected to pass in wrapper_cls arg into _ConfigAutoWrap.")
        kwargs = dict(kwargs)
        _ConfigAutoWrap.wrapper_cls = kwargs.pop("wrapper_cls")
        _ConfigAutoWrap.kwargs = kwargs

    @staticmethod
    def disable_autowrap_context() -> None:
        _ConfigAutoWrap.in_autowrap_context = False
        _ConfigAutoWrap.wrapper_cls = None
        _ConfigAutoWrap.kwargs = {}

    def __enter__(self) -> None:
        self.enable_autowrap_context(self.kwargs)

    def __exit__(self, *exc: Any) -> None:
        self.disable_autowrap_context()


def _auto_wrap(root_module, policy, ignored_modules: set, ignored_params: set,
               root_kwargs: dict, fsdp_fn: Callable) -> None:
    """Wrap ``root_module``'s submodules (never the root itself) as ``policy`` says, with
    ``root_kwargs`` (every FSDP argument but the module). Modules of the mixed-precision
    policy's ``_module_classes_to_ignore`` are wrapped apart without mixed precision."""
    mixed_precision = root_kwargs.get("mixed_precision")
    for name, module in root_module.named_modules():
        if isinstance(module, fsdp_fn):
            raise ValueError("FSDP auto wrapping requires modules to not already have FSDP "
                             f"applied but found {name} in\n{root_module}")
    ignored_classes = tuple(mixed_precision._module_classes_to_ignore) if (
        mixed_precision is not None) else ()
    if isinstance(policy, _Policy):
        root_kwargs["auto_wrap_policy"] = None
        targets = policy._run_policy(root_module, ignored_modules, root_kwargs)
        if ignored_classes:
            for module in root_module.modules():
                if id(module) not in ignored_modules and isinstance(module, ignored_classes):
                    kwargs = targets.setdefault(id(module), copy.copy(root_kwargs))
                    kwargs["mixed_precision"] = None
        _post_order_apply(root_module, _construct_wrap_fn(root_module, targets, fsdp_fn))
        return
    if ignored_classes:
        for module in root_module.modules():
            if isinstance(module, ignored_classes):
                module._wrap_overrides = {"mixed_precision": None}
        policy = _partial_or(policy, ignored_classes)
    _recursive_wrap(root_module, policy, fsdp_fn, ignored_modules, ignored_params,
                    only_wrap_children=True, **root_kwargs)


def _partial_or(policy, module_classes) -> Callable:
    import functools

    return functools.partial(_or_policy, policies=[
        policy, functools.partial(_wrap_module_cls_individually,
                                  module_classes=module_classes)])
