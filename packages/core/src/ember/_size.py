"""``ember.Size``: the tuple subclass that ``Tensor.shape`` returns."""

from __future__ import annotations

from ._naming import PREFIX as _PREFIX


class Size(tuple):
    """A tuple of dimension sizes, printed as ``ember.Size([2, 3])``."""

    __slots__ = ()

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
