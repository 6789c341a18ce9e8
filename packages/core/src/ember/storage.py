"""``ember.storage``: the storage classes under PyTorch's module path (``torch.storage``).

``UntypedStorage`` (bytes on a device) and ``TypedStorage`` (a typed view of one, the legacy
``tensor.storage()``) are ``ember._storage``'s.
"""

from ._storage import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
