"""Helpers shared by the model builders (torchvision's ``models._utils``).

Besides torchvision's helpers, the zoo's builders share two things here: :func:`_model_builder`,
the decorator that makes a ``def <name>(*, weights, progress, **kwargs)`` a registered builder
(legacy ``pretrained=``, weights verified against its enum, the common ``Args`` docs), and
:func:`_build_model`, the one place that builds a model and loads a checkpoint into it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ember import nn

from ._api import WeightsEnum, _get_enum_from_fn, register_model

V = TypeVar("V")
M = TypeVar("M", bound=nn.Module)
F = TypeVar("F", bound=Callable[..., Any])


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


_BUILDER_ARGS_DOC = """

    Args:
        weights (:class:`~ember.vision.models.{weights}`, optional): The pretrained weights to
            use. See :class:`~ember.vision.models.{weights}` below for more details, and
            possible values. By default, no pre-trained weights are used.
        progress (bool, optional): If True, displays a progress bar of the download to stderr.
            Default is True.
        **kwargs: parameters passed to the ``{model}`` base class.

    .. autoclass:: ember.vision.models.{weights}
        :members:
"""


def _model_builder(
    legacy_weights: str | None = "IMAGENET1K_V1", *, legacy: bool = True
) -> Callable[[F], F]:
    """Decorator making ``def name(*, weights: <Enum> | None = None, progress=True, **kwargs)``
    a model builder of the zoo.

    The builder is registered under its name (:func:`~._api.register_model`); ``weights``
    reaches its body verified against the enum of its annotation (a member name is accepted);
    with ``legacy`` it also takes torchvision's deprecated ``pretrained=`` flag and positional
    arguments, ``pretrained=True`` meaning the member ``legacy_weights`` (``None``: the model
    has no such weights). Its docstring is completed with the ``Args`` every builder shares.
    """

    def decorate(fn: F) -> F:
        weights_enum = _get_enum_from_fn(fn)
        model = inspect.signature(fn, eval_str=True).return_annotation
        fn.__doc__ = (fn.__doc__ or "") + _BUILDER_ARGS_DOC.format(
            weights=weights_enum.__name__, model=f"{model.__module__}.{model.__qualname__}"
        )

        @functools.wraps(fn)
        def builder(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> Any:
            return fn(weights=weights_enum.verify(weights), progress=progress, **kwargs)

        if legacy:
            default = None if legacy_weights is None else weights_enum[legacy_weights]
            builder = handle_legacy_interface(weights=("pretrained", default))(builder)
        return register_model()(builder)  # type: ignore[return-value]  # same signature as fn

    return decorate


def _build_model(
    model_fn: Callable[..., M],
    weights: WeightsEnum | None,
    progress: bool,
    kwargs: dict[str, Any],
    convert_state_dict: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> M:
    """``model_fn(**kwargs)``, loaded with the checkpoint ``weights`` when it is given.

    A checkpoint fixes ``num_classes`` to the number of its categories (a caller's value must
    equal it). ``convert_state_dict`` maps the checkpoint's state dict to the model's keys
    before it is loaded.
    """
    if weights is not None and weights.meta["categories"] is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = model_fn(**kwargs)
    if weights is not None:
        state_dict = weights.get_state_dict(progress=progress, check_hash=True)
        if convert_state_dict is not None:
            state_dict = convert_state_dict(state_dict)
        model.load_state_dict(state_dict)
    return model


def _init_conv_norm_linear(
    model: nn.Module, init_linear: Callable[[nn.Linear], Any] | None = None
) -> None:
    """torchvision's initialisation of the mobile CNNs (MobileNet V2/V3, EfficientNet), in
    ``model.modules()`` order: convs Kaiming-normal (fan_out), norms ones, linears
    ``init_linear`` (default: normal with std 0.01); biases zero."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            if init_linear is None:
                nn.init.normal_(m.weight, 0, 0.01)
            else:
                init_linear(m)
            nn.init.zeros_(m.bias)


def _check_block_setting(
    setting: Any, name: str, config_type: type, type_name: str | None = None
) -> None:
    """torchvision's check of a block-configuration list argument (errors in its words)."""
    if not setting:
        raise ValueError(f"The {name} should not be empty")
    if not (isinstance(setting, Sequence) and all(isinstance(s, config_type) for s in setting)):
        raise TypeError(f"The {name} should be List[{type_name or config_type.__name__}]")
