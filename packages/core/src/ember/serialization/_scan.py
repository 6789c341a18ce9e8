"""The globals a pickle names, read statically (``get_unsafe_globals_in_checkpoint``).

``pickletools.genops`` parses the opcodes; a symbolic stack follows only the strings that
``STACK_GLOBAL`` (protocol 4+) takes its module and name from, so nothing is imported,
constructed or called.
"""

from __future__ import annotations

import pickle
import pickletools

from . import _unpickler

_MARK = object()
_STRINGS = frozenset({"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE",
                      "BINUNICODE", "BINUNICODE8"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})


def globals_in_pickle(data: bytes) -> set[str]:
    """The full names (``module.qualname``, Python 3 names) of the globals ``data`` names
    with GLOBAL, INST or STACK_GLOBAL. Raises ``pickle.UnpicklingError`` on malformed data."""
    found: set[str] = set()
    stack: list = []
    memo: dict = {}
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("GLOBAL", "INST"):
                module, name = arg.split(" ", 1)
                found.add(_full_name(module, name))
            elif op.name == "STACK_GLOBAL":
                module, name = stack[-2:]
                if isinstance(module, str) and isinstance(name, str):
                    found.add(_full_name(module, name))
            _step(op, arg, stack, memo)
    except (ValueError, IndexError, TypeError) as exc:
        raise pickle.UnpicklingError(f"malformed pickle: {exc}") from None
    return found


def _full_name(module: str, name: str) -> str:
    module, name = _unpickler.compat_name(module, name)
    return f"{module}.{name}"


def _step(op, arg, stack: list, memo: dict) -> None:
    """Apply ``op``'s effect to the symbolic stack: strings are kept, other values are None."""
    if op.name in _PUTS:
        memo[arg] = stack[-1]
        return
    if op.name == "MEMOIZE":
        memo[len(memo)] = stack[-1]
        return
    before = op.stack_before
    if pickletools.markobject in before or (op.name == "POP" and stack
                                            and stack[-1] is _MARK):
        del stack[len(stack) - 1 - stack[::-1].index(_MARK):]  # the mark and all above it
        drop = before.index(pickletools.markobject) if pickletools.markobject in before else 0
    else:
        drop = len(before)
    if drop:
        if drop > len(stack):
            raise IndexError("stack underflow")
        del stack[-drop:]
    for item in op.stack_after:
        if item is pickletools.markobject:
            stack.append(_MARK)
        elif op.name in _STRINGS:
            stack.append(arg if isinstance(arg, str) else None)
        elif op.name in _GETS:
            stack.append(memo.get(arg))
        else:
            stack.append(None)
