"""``ember.layout``: how a tensor's elements are stored. Ember's tensors are all strided
(dense arrays with strides), so ``ember.strided`` is the one layout, as ``torch.strided`` is
PyTorch's default; the sparse layouts are not there (see the compat report)."""

from __future__ import annotations

__all__ = ["layout", "strided"]


class NamedConstant:
    """A type whose few instances are constants of ``ember`` (``ember.strided``,
    ``ember.channels_last``): calling the type raises, as in PyTorch; an instance prints
    and pickles as the global ``ember.<name>``. Subclasses set ``__module__ = "ember"``."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'ember.{cls.__name__}' instances")

    @classmethod
    def _constant(cls, name: str):
        """The instance that ``ember.<name>`` holds."""
        obj = object.__new__(cls)
        obj._name = name
        return obj

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # pickled by reference, as the global ``ember.<name>``


class layout(NamedConstant):
    """The storage layout of a tensor, like ``torch.layout``: ``ember.strided``."""

    __slots__ = ()


layout.__module__ = "ember"

strided = layout._constant("strided")
