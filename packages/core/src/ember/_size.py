"""``ember.Size``: the tuple subclass that ``Tensor.shape`` returns."""

from __future__ import annotations

import operator

from ._naming import PREFIX as _PREFIX


def _size_item(i: int, v) -> int:
    """One size of ``Size(...)`` as PyTorch takes it: an int (subclasses kept), or anything
    with ``__index__`` (NumPy integers, bools, one-element integer tensors)."""
    if isinstance(v, int):  # int subclasses (export's symbolic sizes) stay as they are
        return int(v) if v.__class__ is bool else v
    if getattr(type(v), "_symbolic_size", False):  # a nested tensor's ragged size
        return v
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{_PREFIX[0]}.Size() takes an iterable of 'int' (item {i} is "
                        f"'{type(v).__name__}')") from None


class Size(tuple):
    """A tuple of dimension sizes, printed as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        t = tuple.__new__(cls, sizes)
        for s in t:
            if s.__class__ is not int:
                return tuple.__new__(cls, [_size_item(i, v) for i, v in enumerate(t)])
        return t

    def __repr__(self) -> str:
        return f"{_PREFIX[0]}.Size([{', '.join(str(int(s)) for s in self)}])"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))
