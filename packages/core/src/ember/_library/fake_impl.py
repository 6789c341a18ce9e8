"""The context of a fake implementation (``ember.library.get_ctx``).

Ember has no FakeTensor: a fake implementation (``register_fake``) runs where ``opcheck``
checks it against the real kernel, on copies of the real inputs. Inside it, ``get_ctx()``
gives a :class:`FakeImplCtx` whose ``new_dynamic_size`` stands for an output size that the
data decides (the check then compares such outputs' ranks, not their sizes)."""

from __future__ import annotations

import contextlib
import threading
import warnings

__all__ = ["FakeImplCtx", "get_ctx", "set_ctx_getter"]


class _State(threading.local):
    getter = staticmethod(lambda: None)


_STATE = _State()


def get_ctx():
    """The current fake implementation's :class:`FakeImplCtx` (None outside one)."""
    return _STATE.getter()


@contextlib.contextmanager
def set_ctx_getter(getter):
    prev = _STATE.getter
    _STATE.getter = getter
    try:
        yield
    finally:
        _STATE.getter = prev


class FakeImplCtx:
    """Context object for writing fake implementations for custom operators."""

    def __init__(self, op):
        self._op = op
        self.dynamic = False  # whether new_dynamic_size was called

    def create_unbacked_symint(self, *, min=2, max=None) -> int:
        warnings.warn("`create_unbacked_symint` is deprecated, please use `new_dynamic_size` "
                      "instead", FutureWarning, stacklevel=2)
        return self.new_dynamic_size(min=min, max=max)

    def new_dynamic_size(self, *, min=0, max=None) -> int:
        """A size that depends on the input data (``nonzero``'s count), between ``min`` and
        ``max`` (inclusive; None: unbounded). Ember returns a stand-in value within the
        bounds; ``opcheck`` then compares the outputs' ranks, dtypes and devices only."""
        if not isinstance(min, int) or max is not None and not isinstance(max, int):
            raise ValueError(f"ctx.new_dynamic_size(min={min}, max={max}): expected min and "
                             "max to be statically known ints but got SymInt. This is not "
                             "supported.")
        if min < 0:
            raise ValueError(f"ctx.new_dynamic_size(min={min}, ...): expected min to be "
                             "greater than or equal to 0: this API can only create "
                             "non-negative sizes.")
        if max is not None and max < min:
            raise ValueError(f"ctx.new_dynamic_size(min={min}, max={max}): max is below min")
        self.dynamic = True
        value = 2 if min <= 2 else min
        return value if max is None else value if value <= max else max
