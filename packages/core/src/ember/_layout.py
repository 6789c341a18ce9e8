"""``ember.layout``: how a tensor's elements are stored. Ember's tensors are all strided
(dense arrays with strides), so ``ember.strided`` is the one layout, as ``torch.strided`` is
PyTorch's default; the sparse layouts are not there (see the compat report)."""

from __future__ import annotations

__all__ = ["layout", "strided"]


class layout:
    """The storage layout of a tensor, like ``torch.layout``: ``ember.strided``."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'ember.layout' instances")

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # pickled by reference, as the global ``ember.<name>``


layout.__module__ = "ember"

strided = object.__new__(layout)
strided._name = "strided"
