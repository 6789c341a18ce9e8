"""Weights enums and the model registry, with torchvision's ``models._api`` interface.

``Weights`` groups a checkpoint's URL, its preprocessing preset and its metadata;
``WeightsEnum`` is the base of every ``<Model>_Weights`` enum. Model builders register
themselves with :func:`register_model` and are found again by :func:`get_model`,
:func:`list_models`, :func:`get_model_builder` and :func:`get_model_weights`.
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from types import ModuleType
from typing import Any, get_args

__all__ = [
    "WeightsEnum",
    "Weights",
    "get_model",
    "get_model_builder",
    "get_model_weights",
    "get_weight",
    "list_models",
]


@dataclass(frozen=True)
class _Preset:
    """A transforms preset named lazily: ``partial(ember.vision.transforms._presets.<name>, **kw)``.

    Resolved on access so that importing the models never imports the transforms.
    """

    name: str
    keywords: tuple

    def resolve(self) -> partial:
        presets = importlib.import_module("ember.vision.transforms._presets")
        return partial(getattr(presets, self.name), **dict(self.keywords))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)


def _preset(name: str, **keywords: Any) -> _Preset:
    """Name a transforms preset of ``ember.vision.transforms._presets`` with its arguments."""
    return _Preset(name, tuple(keywords.items()))


def _transforms_key(t: Any) -> Any:
    if isinstance(t, _Preset):
        return ("preset", t.name, dict(t.keywords))
    if isinstance(t, partial):
        return (
            ("preset", getattr(t.func, "__name__", t.func), dict(t.keywords)) if not t.args else t
        )
    return t


@dataclass(eq=False)
class Weights:
    """A checkpoint: ``url``, ``transforms`` (a constructor of its preset) and ``meta``.

    ``meta`` holds ``categories``, ``num_params``, ``min_size``, ``recipe``, ``_metrics``,
    ``_ops``, ``_file_size`` and ``_docs`` exactly as torchvision lists them.
    """

    url: str
    transforms: Callable
    meta: dict[str, Any]

    def __eq__(self, other: Any) -> bool:
        # Compared by value, with partials compared by func/keywords: deep copies and
        # unpickled enum members must compare equal to the defined ones.
        if not isinstance(other, Weights):
            return NotImplemented
        return (
            self.url == other.url
            and self.meta == other.meta
            and _transforms_key(self.transforms) == _transforms_key(other.transforms)
        )

    __hash__ = None  # type: ignore[assignment]


def _load_state_dict_from_url(url: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    # Imported on use: ember.hub is the one downloader (cache, checksums, retries).
    from ember.hub import load_state_dict_from_url

    return load_state_dict_from_url(url, *args, **kwargs)


class WeightsEnum(Enum):
    """Base class of the ``<Model>_Weights`` enums; each member's value is a :class:`Weights`."""

    @classmethod
    def verify(cls, obj: Any) -> Any:
        """Return ``obj`` as a member of this enum (accepting its name), ``None`` as is."""
        if obj is not None:
            if type(obj) is str:
                obj = cls[obj.replace(cls.__name__ + ".", "")]
            elif not isinstance(obj, cls):
                raise TypeError(
                    f"Invalid Weight class provided; expected {cls.__name__} "
                    f"but received {obj.__class__.__name__}."
                )
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Download (or read from the hub cache) and load this checkpoint's state dict."""
        return _load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        t = self.value.transforms
        return t.resolve() if isinstance(t, _Preset) else t

    @property
    def meta(self) -> dict[str, Any]:
        return self.value.meta


def get_weight(name: str) -> WeightsEnum:
    """Return a weights enum member by its full name, e.g. ``"ResNet50_Weights.IMAGENET1K_V1"``."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None

    base_module = importlib.import_module(__name__.rsplit(".", 1)[0])
    candidates = [base_module] + [
        mod
        for _, mod in inspect.getmembers(base_module, inspect.ismodule)
        if (getattr(mod, "__file__", None) or "").endswith("__init__.py")
    ]
    for mod in candidates:
        cls = mod.__dict__.get(enum_name)
        if isinstance(cls, type) and issubclass(cls, WeightsEnum):
            return cls[value_name]
    raise ValueError(
        f"The weight enum '{enum_name}' for the specific method couldn't be retrieved."
    )


def get_model_weights(name: Callable | str) -> type[WeightsEnum]:
    """Return the weights enum class of a model builder (or of its registered name)."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    return _get_enum_from_fn(fn)


def _get_enum_from_fn(fn: Callable) -> type[WeightsEnum]:
    sig = inspect.signature(fn, eval_str=True)
    if "weights" not in sig.parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    ann = sig.parameters["weights"].annotation
    if isinstance(ann, type) and issubclass(ann, WeightsEnum):
        return ann
    for t in get_args(ann):
        if isinstance(t, type) and issubclass(t, WeightsEnum):
            return t
    raise ValueError(
        "The WeightsEnum class for the specific method couldn't be retrieved. "
        "Make sure the typing info is correct."
    )


BUILTIN_MODELS: dict[str, Callable[..., Any]] = {}


def register_model(name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering a model builder under ``name`` (default: the function's name)."""

    def wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn

    return wrapper


def _as_list(filters: Iterable[str] | str) -> list[str]:
    return [filters] if isinstance(filters, str) else list(filters)


def list_models(
    module: ModuleType | None = None,
    include: Iterable[str] | str | None = None,
    exclude: Iterable[str] | str | None = None,
) -> list[str]:
    """Sorted names of the registered models, optionally of one module, filtered by fnmatch
    patterns (``include`` is a union of its patterns, ``exclude`` removes any match)."""
    all_models = {
        k
        for k, v in BUILTIN_MODELS.items()
        if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__
    }
    if include:
        models: set[str] = set()
        for pattern in _as_list(include):
            models |= set(fnmatch.filter(all_models, pattern))
    else:
        models = all_models
    if exclude:
        for pattern in _as_list(exclude):
            models -= set(fnmatch.filter(all_models, pattern))
    return sorted(models)


def get_model_builder(name: str) -> Callable[..., Any]:
    """Return the builder registered under ``name`` (case-insensitive)."""
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any) -> Any:
    """Build the model registered under ``name`` with ``config`` passed to its builder."""
    return get_model_builder(name)(**config)
