"""``ember.distributed.checkpoint`` (DCP): save and load sharded state dicts from many ranks
as one checkpoint, resharding on load (PyTorch's ``torch.distributed.checkpoint``).

``save(state_dict, checkpoint_id=dir)`` on every rank writes each rank's DTensor shards and
one copy of everything replicated; ``load(state_dict, checkpoint_id=dir)`` fills each rank's
state dict in place, whatever mesh, placements or world size saved it. The directory layout
and the ``.metadata`` file are PyTorch's, so checkpoints move both ways between PyTorch and
Ember; Ember reads them without running code (the metadata with a restricted unpickler, every
item weights-only). ``HuggingFaceStorageWriter``/``Reader`` use HuggingFace's safetensors
layout instead (``model-0000i-of-0000N.safetensors`` and its index). ``state_dict`` has the
model/optimizer helpers (``get_state_dict``, ``set_state_dict``, ``StateDictOptions``).
"""

from __future__ import annotations

from .api import CheckpointException
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter
from .hf_storage import HuggingFaceStorageReader, HuggingFaceStorageWriter
from .metadata import BytesStorageMetadata, ChunkStorageMetadata, Metadata, TensorStorageMetadata
from .planner import LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner, WriteItem
from .state_dict_loader import load, load_state_dict
from .state_dict_saver import AsyncCheckpointerType, async_save, save, save_state_dict
from .stateful import Stateful
from .storage import StorageReader, StorageWriter

__all__ = ["CheckpointException", "DefaultLoadPlanner", "DefaultSavePlanner", "FileSystemReader",
           "FileSystemWriter", "HuggingFaceStorageReader", "HuggingFaceStorageWriter",
           "BytesStorageMetadata", "ChunkStorageMetadata", "Metadata",
           "TensorStorageMetadata", "LoadPlan", "LoadPlanner", "ReadItem", "SavePlan",
           "SavePlanner", "WriteItem", "load", "load_state_dict", "async_save", "save",
           "save_state_dict", "AsyncCheckpointerType", "Stateful", "StorageReader",
           "StorageWriter"]
