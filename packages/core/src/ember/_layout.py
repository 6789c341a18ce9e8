"""``ember.layout``: how a tensor's elements are stored. ``ember.strided`` (dense arrays with
strides) is the default, as ``torch.strided`` is PyTorch's; ``ember.sparse_coo`` and
``ember.sparse_csr``/``ember.sparse_csc`` and the blocked ``ember.sparse_bsr``/
``ember.sparse_bsc`` are the layouts of sparse tensors (``ember._sparse_tensor``);
``ember.jagged`` is the layout of nested tensors held as one values buffer and offsets
(``ember.nested``)."""

from __future__ import annotations

from ._naming import PREFIX as _PREFIX

__all__ = ["jagged", "layout", "sparse_bsc", "sparse_bsr", "sparse_coo", "sparse_csc", "sparse_csr",
           "strided"]


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
        return f"{_PREFIX[0]}.{self._name}"

    def __reduce__(self):
        return self._name  # pickled by reference, as the global ``ember.<name>``


class layout(NamedConstant):
    """The storage layout of a tensor, like ``torch.layout``: ``ember.strided``,
    ``ember.sparse_coo``, ``ember.sparse_csr``, ``ember.sparse_csc``, ``ember.sparse_bsr`` or
    ``ember.sparse_bsc`` (sparse tensors), ``ember.jagged`` (nested tensors)."""

    __slots__ = ()


layout.__module__ = "ember"

strided = layout._constant("strided")
sparse_coo = layout._constant("sparse_coo")
sparse_csr = layout._constant("sparse_csr")
#: the compressed sparse column layout (PyTorch's ``torch.sparse_csc``): a 2-D tensor whose
#: elements are stored column by column, rows sorted within each column
sparse_csc = layout._constant("sparse_csc")
#: block compressed sparse row (PyTorch's ``torch.sparse_bsr``): a 2-D tensor stored as dense
#: ``(R, C)`` blocks, block rows compressed, block columns sorted within each block row
sparse_bsr = layout._constant("sparse_bsr")
#: block compressed sparse column (``torch.sparse_bsc``): blocks stored column by column
sparse_bsc = layout._constant("sparse_bsc")
#: a nested tensor stored as one ``values`` buffer with ``offsets`` along its one ragged dim
#: (PyTorch's ``torch.jagged``; ``ember.nested``)
jagged = layout._constant("jagged")
