"""``ember.device``: a device type plus an optional index, interned so ops compare by identity."""

from __future__ import annotations

__all__ = ["device"]


class device:
    """Where a tensor lives, e.g. ``device('cpu')``, ``device('cuda', 0)``, ``device('cuda:1')``.

    Instances are interned: equal devices are the same object, so ops compare with ``is``.
    """

    __slots__ = ("type", "index", "_backend", "__weakref__")
    _cache: dict = {}

    def __new__(cls, type, index: int | None = None):  # noqa: A002 - PyTorch's name
        if type.__class__ is device:
            if index is not None:
                raise ValueError("device(): index must not be given with a device object")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        key = (type, index)
        dev = cls._cache.get(key)
        if dev is not None:
            return dev
        kind, idx = type, index
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            kind, _, num = type.partition(":")
            if not num.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            idx = int(num)
        if idx is not None and idx < 0:
            raise RuntimeError(f"Device index must not be negative, got {idx}")
        from .backends import _known_type

        if not _known_type(kind):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if kind == "cpu" and idx not in (None, 0):
            raise RuntimeError(f"CPU device index must be -1 or zero, got {idx}")
        dev = cls._cache.get((kind, idx))
        if dev is None:
            dev = object.__new__(cls)
            dev.type = kind
            dev.index = idx
            dev._backend = None
            cls._cache[(kind, idx)] = dev
        cls._cache[key] = dev
        return dev

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        return self is other

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        from . import _factory

        _factory._device_stack.append(self)
        return self

    def __exit__(self, *exc):
        from . import _factory

        _factory._device_stack.pop()
        return False


def to_device(d) -> device:
    """Normalise a device argument (device, str, int) to an interned ``device``."""
    return d if d.__class__ is device else device(d)
