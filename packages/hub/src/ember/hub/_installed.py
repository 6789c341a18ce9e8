"""Models of installed distributions, found through the ``ember.hub`` entry-point group.

Each distribution declares one entry point whose value is a hubconf-like module (for
example ``vision = "ember.vision.hubconf"``); its public callables are model builders.
The hub never imports those distributions by name.
"""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType

from . import _repo

GROUP = "ember.hub"
# Distributions that publish models, and what they bring: named in "unknown model" errors.
KNOWN_PROVIDERS = {"ember-vision": "torchvision's models", "ember-text": "torchtext's models"}


class Provider:
    """One entry point of the group: its name, distribution and (lazily) its module."""

    def __init__(self, ep: EntryPoint):
        self.entry_point = ep
        self.name = ep.name
        self.distribution = ep.dist.name if ep.dist is not None else ep.value
        self._module: ModuleType | None = None

    @property
    def module(self) -> ModuleType:
        if self._module is None:
            self._module = self.entry_point.load()
        return self._module

    def models(self) -> list[str]:
        try:
            return _repo.entrypoints(self.module)
        except Exception as exc:  # a broken provider must not hide the others
            warnings.warn(f"ember.hub: cannot load provider {self.name} "
                          f"({self.distribution}): {exc}", RuntimeWarning, stacklevel=3)
            return []


def providers() -> list[Provider]:
    return [Provider(ep) for ep in entry_points(group=GROUP)]


def list_models() -> list[str]:
    """Every model name provided by the installed distributions, sorted."""
    return sorted({name for p in providers() for name in p.models()})


def _unknown_model(name: str, found: list[Provider]) -> RuntimeError:
    installed = ", ".join(f"{p.name} ({p.distribution})" for p in found) or "none"
    have = {p.distribution for p in found}
    hints = "".join(f" pip install {dist} to get {what}." for dist, what in
                    KNOWN_PROVIDERS.items() if dist not in have)
    return RuntimeError(f"Unknown model '{name}'. Installed providers: {installed}.{hints}")


def find_model(name: str):
    """The builder callable named ``name`` in an installed provider (dependencies checked)."""
    found = providers()
    for provider in found:
        if name in provider.models():
            return _repo.load_entry(provider.module, name)
    raise _unknown_model(name, found)


def load_model(name: str, *args, **kwargs):
    """Build installed model ``name`` and return it in eval mode."""
    model = find_model(name)(*args, **kwargs)
    if hasattr(model, "eval"):
        model.eval()
    return model
