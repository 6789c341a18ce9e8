"""Import the core submodules that exist so far (they are added issue by issue)."""

from __future__ import annotations

import importlib

_CORE_MODULES = ("linalg", "cuda", "_random", "testing", "return_types", "data", "utils",
                 "serialization", "safetensors")


def import_optional_submodules(namespace: dict) -> None:
    for name in _CORE_MODULES:
        try:
            mod = importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ember.{name}":
                continue
            raise
        if name.startswith("_"):
            for k in getattr(mod, "__all__", ()):
                namespace[k] = getattr(mod, k)
        else:
            namespace[name] = mod
