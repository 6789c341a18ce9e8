"""Helpers shared by the model builders (torchvision's ``models._utils``)."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from ember import nn

from ._api import WeightsEnum

V = TypeVar("V")


class IntermediateLayerGetter(nn.ModuleDict):
    """Wrap ``model`` to return the outputs of some of its direct children.

    ``return_layers`` maps child names to output names; children must be registered in the
    order they run, and the wrapper keeps the children up to the last one requested.
    """

    _version = 2

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        pending = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            pending.pop(name, None)
            if not pending:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """Round ``v`` to a multiple of ``divisor`` (at least ``min_value``), never below 90% of it."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _sequence_to_str(seq: tuple, separate_last: str = "") -> str:
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join([str(item) for item in seq[:-1]]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def kwonly_to_pos_or_kw(fn: Callable[..., V]) -> Callable[..., V]:
    """Let keyword-only parameters of ``fn`` be passed positionally, with a deprecation warning."""
    params = inspect.signature(fn).parameters
    try:
        start = next(i for i, p in enumerate(params.values()) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    kwonly = tuple(params)[start:]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> V:
        args, extra = args[:start], args[start:]
        if extra:
            extra_kwargs = dict(zip(kwonly, extra))
            warnings.warn(
                f"Using {_sequence_to_str(tuple(extra_kwargs.keys()), separate_last='and ')} as "
                f"positional parameter(s) is deprecated since 0.13 and may be removed in the "
                f"future. Please use keyword parameter(s) instead.",
                stacklevel=2,
            )
            kwargs.update(extra_kwargs)
        return fn(*args, **kwargs)

    return wrapper


def handle_legacy_interface(**weights: tuple[str, Any]):
    """Make a builder accept the legacy ``pretrained=`` flag (and positional arguments).

    ``weights`` maps a weights parameter name to ``(legacy_name, default)``; ``default`` is the
    weights enum member that ``legacy_name=True`` means, or a callable of the kwargs giving it.
    Warnings and errors are torchvision's.
    """

    def outer_wrapper(builder: Callable[..., V]) -> Callable[..., V]:
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner_wrapper(*args: Any, **kwargs: Any) -> V:
            for weights_param, (pretrained_param, default) in weights.items():
                sentinel = object()
                weights_arg = kwargs.get(weights_param, sentinel)
                if (
                    (weights_param not in kwargs and pretrained_param not in kwargs)
                    or isinstance(weights_arg, WeightsEnum)
                    or (isinstance(weights_arg, str) and weights_arg != "legacy")
                    or weights_arg is None
                ):
                    continue

                # A non-enum value for `weights` was a positional `pretrained`.
                pretrained_positional = weights_arg is not sentinel
                if pretrained_positional:
                    kwargs[pretrained_param] = pretrained_arg = kwargs.pop(weights_param)
                else:
                    pretrained_arg = kwargs[pretrained_param]

                if pretrained_arg:
                    default_weights_arg = default(kwargs) if callable(default) else default
                    if not isinstance(default_weights_arg, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    default_weights_arg = None

                if not pretrained_positional:
                    warnings.warn(
                        f"The parameter '{pretrained_param}' is deprecated since 0.13 and may be "
                        f"removed in the future, please use '{weights_param}' instead.",
                        stacklevel=2,
                    )
                msg = (
                    f"Arguments other than a weight enum or `None` for '{weights_param}' are "
                    f"deprecated since 0.13 and may be removed in the future. The current "
                    f"behavior is equivalent to passing `{weights_param}={default_weights_arg}`."
                )
                if pretrained_arg:
                    msg = (
                        f"{msg} You can also use "
                        f"`{weights_param}={type(default_weights_arg).__name__}.DEFAULT` "
                        f"to get the most up-to-date weights."
                    )
                warnings.warn(msg, stacklevel=2)

                del kwargs[pretrained_param]
                kwargs[weights_param] = default_weights_arg

            return builder(*args, **kwargs)

        return inner_wrapper

    return outer_wrapper


def _ovewrite_named_param(kwargs: dict[str, Any], param: str, new_value: V) -> None:
    """Set ``kwargs[param]``, or check that the caller's value equals ``new_value``."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(
                f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} "
                "instead."
            )
    else:
        kwargs[param] = new_value


def _ovewrite_value_param(param: str, actual: V | None, expected: V) -> V:
    """Return ``expected``, checking that ``actual`` (when given) equals it."""
    if actual is not None and actual != expected:
        raise ValueError(
            f"The parameter '{param}' expected value {expected} but got {actual} instead."
        )
    return expected


class _ModelURLs(dict):
    def __getitem__(self, item):
        warnings.warn(
            "Accessing the model URLs via the internal dictionary of the module is deprecated "
            "since 0.13 and may be removed in the future. Please access them via the "
            "appropriate Weights Enum instead.",
            stacklevel=2,
        )
        return super().__getitem__(item)
