"""What a distributed checkpoint records: per key, a tensor's properties, global size and the
chunks that were written, or that the key is bytes (PyTorch's
``torch.distributed.checkpoint.metadata``).

The classes pickle under PyTorch's names (``torch.distributed.checkpoint.metadata.X``), so a
``.metadata`` file written by Ember loads in PyTorch and the reverse; Ember reads such files
with a restricted unpickler that admits only these names (``filesystem._read_metadata``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..._layout import strided
from ..._memory_format import channels_last, contiguous_format, preserve_format
from ..._size import Size
from ...serialization import _pickle

__all__ = ["ChunkStorageMetadata", "TensorStorageMetadata", "BytesStorageMetadata",
           "Metadata", "MetadataIndex", "TensorProperties", "StorageMeta"]

_MODULE = "torch.distributed.checkpoint.metadata"


@dataclass
class ChunkStorageMetadata:
    """One written chunk of a tensor: where it starts (``offsets``) and its ``sizes``."""

    offsets: Size
    sizes: Size


class _MEM_FORMAT_ENCODING(Enum):
    """How ``TensorProperties`` pickles its memory format."""

    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


_ENCODINGS = {contiguous_format: _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT,
              channels_last: _MEM_FORMAT_ENCODING.TORCH_CHANNELS_LAST,
              preserve_format: _MEM_FORMAT_ENCODING.TORCH_PRESERVE_FORMAT}
_FORMATS = {v: k for k, v in _ENCODINGS.items()}


def _default_dtype():
    from ..._dtype import get_default_dtype

    return get_default_dtype()


@dataclass
class TensorProperties:
    """The properties a loaded tensor is made with (only ``dtype`` still matters)."""

    dtype: Any = field(default_factory=_default_dtype)
    layout: Any = strided
    requires_grad: bool = False
    memory_format: Any = contiguous_format
    pin_memory: bool = False

    def __getstate__(self):
        if self.memory_format not in _ENCODINGS:
            raise RuntimeError(f"Invalid torch.memory_format: {self.memory_format}")
        return (self.dtype, self.layout, self.requires_grad, _ENCODINGS[self.memory_format],
                self.pin_memory)

    def __setstate__(self, state) -> None:
        self.dtype, self.layout, self.requires_grad, encoding, self.pin_memory = state
        if encoding not in _FORMATS:
            raise RuntimeError(f"Invalid torch.memory_format encoding: {encoding}")
        self.memory_format = _FORMATS[encoding]

    @staticmethod
    def create_from_tensor(tensor) -> TensorProperties:
        """The properties of ``tensor``."""
        return TensorProperties(dtype=tensor.dtype, layout=tensor.layout,
                                requires_grad=tensor.requires_grad,
                                memory_format=contiguous_format,
                                pin_memory=tensor.is_pinned())


@dataclass
class TensorStorageMetadata:
    """A tensor key: its properties, global ``size`` and the chunks saved of it."""

    properties: TensorProperties
    size: Size
    chunks: list[ChunkStorageMetadata]


@dataclass
class BytesStorageMetadata:
    """A key saved as bytes (any value that is not a tensor)."""


@dataclass
class StorageMeta:
    """Which checkpoint, save and load this metadata belongs to."""

    checkpoint_id: str | os.PathLike | None = None
    save_id: str | None = None
    load_id: str | None = None
    modules: list[str] = field(default_factory=list)


@dataclass
class Metadata:
    """A checkpoint's metadata: every key's storage metadata (``state_dict_metadata``), the
    planner's data (the flattened keys' original paths) and the storage layer's (where each
    chunk lies)."""

    state_dict_metadata: dict[str, TensorStorageMetadata | BytesStorageMetadata]
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: StorageMeta | None = None
    version: str | None = None


@dataclass(frozen=True)
class MetadataIndex:
    """A key in a state dict or metadata: ``fqn``, and for a tensor chunk its ``offset``;
    ``index`` is a hint to the chunk's position and takes no part in equality."""

    fqn: str
    offset: Size | None = None
    index: int | None = field(hash=False, compare=False, default=None)

    def __init__(self, fqn: str, offset=None, index: int | None = None):
        object.__setattr__(self, "fqn", fqn)
        object.__setattr__(self, "index", index)
        if offset is not None:
            object.__setattr__(self, "offset", Size(offset))


#: the classes this module pickles and unpickles under PyTorch's names
PICKLED = {cls.__name__: cls for cls in (ChunkStorageMetadata, _MEM_FORMAT_ENCODING,
                                         TensorProperties, TensorStorageMetadata,
                                         BytesStorageMetadata, StorageMeta, Metadata,
                                         MetadataIndex)}
for _name, _cls in PICKLED.items():
    _pickle._GLOBAL_PATHS[id(_cls)] = (_MODULE, _name)
del _name, _cls
