"""``ember.ops.profiler``: the profiler's range ops (``torch.ops.profiler``).

``_record_function_enter_new(name, args=None)`` opens a named range, as
``with ember.autograd.profiler.record_function(name, args):`` does, and returns its handle;
``_record_function_exit(handle)`` closes it. Being plain calls, not a ``with`` block, they
can be recorded in an ``ember.fx`` graph (a tracer that turns ``record_function`` blocks
into ``call_function`` nodes), so that the generated code's ranges show up in a profile.
``_record_function_enter`` is the legacy form whose handle is a Tensor. Outside a profile
they cost a ``record_function`` that records nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..overrides import _relevant_args, handle_torch_function

__all__ = ["_record_function_enter", "_record_function_enter_new", "_record_function_exit"]

_ENTER = "profiler::_record_function_enter(str name, str? args=None) -> Tensor"
_RECORD_TYPE = "__torch__.torch.classes.profiler._RecordFunction"
_UNIT = " (of Python compilation unit at: 0)"  # how PyTorch's message names the class
_ENTER_NEW = f"profiler::_record_function_enter_new(str name, str? args=None) -> {_RECORD_TYPE}"
_EXIT = "profiler::_record_function_exit(Tensor handle) -> ()"
_EXIT_RECORD = (f"profiler::_record_function_exit._RecordFunction({_RECORD_TYPE} record) "
                "-> ()")


class _RecordFunction:
    """The handle of a range opened by ``_record_function_enter_new``
    (``torch.classes.profiler._RecordFunction``)."""

    __slots__ = ("_range",)

    def __init__(self, rf) -> None:
        self._range = rf

    def __repr__(self) -> str:
        return f"_RecordFunction({self._range.name!r})"


def _schema_error(declaration: str, argument: str, expected: str, value: Any,
                  position: int = 0) -> RuntimeError:
    """PyTorch's message for an op argument of the wrong type."""
    op = declaration.partition("(")[0].partition(".")[0]
    return RuntimeError(f"{op}() Expected a value of type '{expected}' for argument "
                        f"'{argument}' but instead found type '{type(value).__name__}'.\n"
                        f"Position: {position}\nValue: {value!r}\nDeclaration: {declaration}")


def _open(declaration: str, name: Any, args: Any):
    from ..autograd.profiler import record_function

    if not isinstance(name, str):
        raise _schema_error(declaration, "name", "str", name)
    if args is not None and not isinstance(args, str):
        raise _schema_error(declaration, "args", "Optional[str]", args, 1)
    rf = record_function(name, args)
    rf.__enter__()
    return rf


def _proxyable(fn: Callable) -> Callable:
    """``fn`` handing a call with an argument that overrides ``__torch_function__`` (an
    ``ember.fx`` Proxy) to it, as ``torch.ops`` do; modes are not consulted, so a profile
    shows the range, not these calls (as PyTorch's does)."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        relevant = _relevant_args(args, kwargs)
        if relevant:
            return handle_torch_function(op, relevant, *args, **kwargs)
        return fn(*args, **kwargs)

    return op


@_proxyable
def _record_function_enter_new(name: str, args: str | None = None) -> _RecordFunction:
    """Open the range ``name`` (``args``: its recorded arguments string); returns the handle
    that ``_record_function_exit`` closes."""
    return _RecordFunction(_open(_ENTER_NEW, name, args))


@_proxyable
def _record_function_enter(name: str, args: str | None = None):
    """The legacy ``_record_function_enter_new``: the handle is an (opaque) uint8 Tensor."""
    from .. import _tensor, empty, uint8

    rf = _open(_ENTER, name, args)
    handle = empty(0, dtype=uint8)
    assert isinstance(handle, _tensor.Tensor)
    handle._ember_record_function = rf
    return handle


@_proxyable
def _record_function_exit(handle) -> None:
    """Close the range of ``handle`` (from ``_record_function_enter`` or
    ``_record_function_enter_new``); closing it again does nothing."""
    from .._tensor import Tensor

    if isinstance(handle, _RecordFunction):
        rf = handle._range
    elif isinstance(handle, Tensor):
        rf = getattr(handle, "_ember_record_function", None)
        if rf is None:
            raise RuntimeError("Expected temporary cpp type wrapper")
    else:  # neither overload matches
        raise RuntimeError(
            "Overloaded torch operator invoked from Python failed to match any schema:\n"
            f"{_schema_error(_EXIT, 'handle', 'Tensor', handle)}\n\n"
            f"{_schema_error(_EXIT_RECORD, 'record', _RECORD_TYPE + _UNIT, handle)}\n\n")
    rf.__exit__(None, None, None)


# the overloads PyTorch's op packets name (``torch.ops.profiler._record_function_exit.default``)
_record_function_enter.default = _record_function_enter
_record_function_enter_new.default = _record_function_enter_new
_record_function_exit.default = _record_function_exit
_record_function_exit._RecordFunction = _record_function_exit
