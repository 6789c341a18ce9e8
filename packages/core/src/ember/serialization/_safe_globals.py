"""The user's allow-list for ``weights_only`` loads: ``add_safe_globals``, ``safe_globals``...

As in PyTorch, the list is one process-wide set (not per thread): an entry is a class or
function, named in a checkpoint as ``{__module__}.{__qualname__}``, or an ``(object,
"full.name")`` pair naming it explicitly. A user-allowed global resolves in the restricted
unpickler, may be called (REDUCE), constructed (NEWOBJ) and, for its instances, have a state
set (BUILD). Checkpoints written by PyTorch name ``torch.X``: such a name resolves to the
allowed object that ember has at ``ember.X``, so ``safe_globals([ember.nn.Linear])`` admits
``torch.nn.modules.linear.Linear`` (and ``safe_globals([ember.nn.BatchNorm1d])``
``torch.nn.modules.batchnorm.BatchNorm1d``, which ember defines in another module and
re-exports there). Globals of the modules in ``BLOCKED_MODULES`` are refused even when
allowed.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable

#: modules whose globals never load with ``weights_only=True``, even if allow-listed
BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

_marked: set = set()


def _named(entry) -> tuple[str, object]:
    """``(full name, object)`` of an allow-list entry, checked as PyTorch checks it."""
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got tuple of length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, "
                            f"but got: {type(entry[1])}")
        return entry[1], entry[0]
    return f"{entry.__module__}.{entry.__qualname__}", entry


def add_safe_globals(safe_globals: Iterable[Callable | tuple[Callable, str]]) -> None:
    """Mark ``safe_globals`` (classes, functions, or ``(object, "full.name")`` pairs) as safe
    for ``weights_only`` loads: they may be called while unpickling, classes instantiated and
    their instances given a pickled state. Entries are checked here (PyTorch checks them at
    the next load)."""
    global _marked
    entries = set(safe_globals)
    for entry in entries:
        _named(entry)
    _marked = _marked | entries


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The user-added globals that are safe for ``weights_only`` loads."""
    return list(_marked)


def clear_safe_globals() -> None:
    """Forget every user-added safe global."""
    global _marked
    _marked = set()


def _remove_safe_globals(entries: set) -> None:
    global _marked
    _marked = _marked - entries


class safe_globals:
    """Context manager adding globals as safe for ``weights_only`` loads inside its block.

    On exit it removes the entries it added; an entry that was already allowed on entry
    stays allowed (PyTorch removes it too). The list is process-wide, as in PyTorch.
    """

    def __init__(self, safe_globals: Iterable[Callable | tuple[Callable, str]]):
        self.safe_globals = list(safe_globals)
        self._added: set = set()

    def __enter__(self) -> None:
        self._added = set(self.safe_globals) - _marked
        add_safe_globals(self.safe_globals)

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _remove_safe_globals(self._added)


class UserGlobals:
    """The user's safe globals as one load sees them (a snapshot taken when it starts)."""

    def __init__(self):
        self.by_name = dict(_named(entry) for entry in _marked)
        self.ids = frozenset(id(obj) for obj in self.by_name.values())

    def find(self, full: str):
        """The user-allowed object a checkpoint names ``full``, or None. A ``torch.X`` name
        finds the allowed object named ``ember.X``, or the allowed object found at
        ``ember.X`` in a module already imported (nothing is imported or run for it)."""
        found = self.by_name.get(full)
        if found is None and full.startswith("torch."):
            alias = "ember." + full[len("torch."):]
            found = self.by_name.get(alias)
            if found is None:
                found = _imported(alias)
                if id(found) not in self.ids:
                    found = None
        return found


def _imported(full: str):
    """The object at dotted path ``full`` among the modules already imported, read from
    module and class ``__dict__``s only (no ``__getattr__``, no import), or None."""
    parts = full.split(".")
    for split in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:split]))
        if obj is None:
            continue
        for part in parts[split:]:
            if not isinstance(obj, (types.ModuleType, type)):
                return None
            obj = obj.__dict__.get(part)
        return obj
    return None
