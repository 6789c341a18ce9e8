"""``ember.utils.deterministic`` (``torch.utils.deterministic``).

``ember.utils.deterministic.fill_uninitialized_memory`` (default True): while
``ember.use_deterministic_algorithms(True)`` is in force, ``empty``, ``empty_like``,
``empty_strided`` and ``new_empty`` fill the memory they return, NaN for floating and complex
dtypes and the largest value for integers and bool, so that a program reading memory it never
wrote gets the same (and visibly wrong) values every run. Set it to False to keep the speed of
uninitialised memory in deterministic mode.
"""

from __future__ import annotations

import sys
import types

from .. import _settings

__all__: list = []


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether deterministic mode fills uninitialised memory (default True)."""
        return _settings._deterministic["fill"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _settings._deterministic["fill"] = mode


sys.modules[__name__].__class__ = _Deterministic
