"""Matching a call's arguments to its target's signature (``torch.fx.operator_schemas``):
``normalize_function`` / ``normalize_module``, which :meth:`Node.normalized_arguments`
uses."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["ArgsKwargsPair", "normalize_function", "normalize_module"]


class ArgsKwargsPair(NamedTuple):
    """Arguments as ``args`` (a tuple) and ``kwargs`` (a dict)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _normalized(sig: inspect.Signature, args: tuple, kwargs: dict,
                normalize_to_only_use_kwargs: bool) -> ArgsKwargsPair | None:
    # positional-only parameters and *args/**kwargs have no single normal form
    supported = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(p.kind not in supported for p in sig.parameters.values()) \
            and list(sig.parameters) != ["input", "from", "to", "generator"]:
        return None
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    new_args: list = []
    new_kwargs: dict[str, Any] = {}
    for i, param in enumerate(sig.parameters):
        if not normalize_to_only_use_kwargs and i < len(args):
            new_args.append(bound.arguments[param])
        else:
            new_kwargs[param] = bound.arguments[param]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


def normalize_function(target: Callable, args: tuple, kwargs: dict | None = None,
                       arg_types: tuple | None = None, kwarg_types: dict | None = None,
                       normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """``args``/``kwargs`` of a call of ``target`` matched to its Python signature, with
    the defaults filled in: the first ``len(args)`` parameters stay positional (all become
    keywords with ``normalize_to_only_use_kwargs``). None for a builtin without a Python
    signature (``operator.add``) or a signature with ``*args``/positional-only parameters;
    a call that does not fit the signature raises ``TypeError``. (``arg_types`` and
    ``kwarg_types`` choose among the overloads of a TorchScript schema in PyTorch; an ember
    function has one signature, so they are not needed.)"""
    if kwargs is None:
        kwargs = {}
    if isinstance(target, (types.BuiltinFunctionType, types.BuiltinMethodType)) \
            or not callable(target):
        return None
    try:
        sig = inspect.signature(inspect.unwrap(target))
    except (TypeError, ValueError):
        return None
    return _normalized(sig, args, kwargs, normalize_to_only_use_kwargs)


def normalize_module(root, target: str, args: tuple, kwargs: dict | None = None,
                     normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """``args``/``kwargs`` of a call of the submodule ``target`` of ``root`` matched to its
    ``forward``: only for ember.nn's own module classes (None for a user's module)."""
    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not "
                           "have that target!") from e
    import ember.nn

    classname = type(submod).__name__
    if getattr(ember.nn, classname, None) is type(submod):
        sig = inspect.signature(inspect.unwrap(submod.forward))
        return _normalized(sig, args, kwargs or {}, normalize_to_only_use_kwargs)
    return None
