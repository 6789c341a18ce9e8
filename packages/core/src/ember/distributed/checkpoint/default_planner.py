"""The default save and load planners (PyTorch's ``DefaultSavePlanner``/``DefaultLoadPlanner``).

A state dict is flattened first: nested dicts, and lists holding tensors or dicts, become
dotted keys (``{"optim": {"state": {0: ...}}}`` -> ``"optim.state.0"``), and the original path
of each key is kept as the planner data. Each tensor is one write item (a DTensor: this rank's
shard, at its global offset); any other value is bytes. Items held by several ranks
(replicated tensors, plain values) are written once, by the rank with the least to write so
far. A load reads, for each tensor chunk this rank holds, the parts of the saved chunks that
overlap it: any saved sharding loads into any current one.
"""

from __future__ import annotations

import dataclasses
import io
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ..._size import Size
from ..._tensor import Tensor
from .metadata import (
    BytesStorageMetadata,
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
    TensorProperties,
    TensorStorageMetadata,
)
from .planner import (
    LoadItemType,
    LoadPlan,
    LoadPlanner,
    ReadItem,
    SavePlan,
    SavePlanner,
    TensorWriteData,
    WriteItem,
    WriteItemType,
)

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner", "create_default_local_load_plan",
           "create_default_global_load_plan", "create_default_local_save_plan",
           "create_default_global_save_plan"]


# -- flattening ----------------------------------------------------------------
def _is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def _is_terminal(value) -> bool:
    """A leaf of the traversal: not a mapping, and not a list holding tensors or containers
    that are not themselves leaves (tuples are always leaves, as in PyTorch)."""
    if isinstance(value, Mapping):
        return False
    if not isinstance(value, list):
        return True
    for entry in value:
        if isinstance(entry, (Mapping, list)) and not _is_terminal(entry):
            return False
        if _is_tensor(entry):
            return False
    return True


def traverse_state_dict(state_dict: dict, visitor) -> None:
    """Call ``visitor(path, value)`` for each leaf of ``state_dict``."""
    def walk(path: tuple, value) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(path + (str(k),), v)
        elif _is_terminal(value):
            visitor(path, value)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(path + (i,), v)

    for key, value in state_dict.items():
        walk((str(key),), value)


def flatten_state_dict(state_dict: dict) -> tuple[dict, dict]:
    """``(flat, mappings)``: ``state_dict`` with nested keys joined by dots, and each flat
    key's original path."""
    flat: dict = {}
    mappings: dict = {}

    def add(path: tuple, value) -> None:
        key = ".".join(map(str, path))
        if key in flat:
            raise ValueError(f"duplicated flatten key {key}")
        flat[key] = value
        mappings[key] = path

    traverse_state_dict(state_dict, add)
    return flat, mappings


def set_element(root, path: tuple, value) -> None:
    """Set ``value`` at ``path`` inside ``root``, making the dicts and lists on the way."""
    cur = root
    for i in range(1, len(path)):
        key, nxt = path[i - 1], path[i]
        empty = [] if isinstance(nxt, int) else {}
        if isinstance(cur, list):
            while len(cur) <= key:
                cur.append(None)
            if cur[key] is None:
                cur[key] = empty
        elif key not in cur:
            cur[key] = empty
        cur = cur[key]
    last = path[-1]
    if isinstance(cur, list):
        while len(cur) <= last:
            cur.append(None)
    cur[last] = value


def unflatten_state_dict(state_dict: dict, mapping: dict) -> dict:
    """The nested state dict ``flatten_state_dict`` made ``state_dict`` from."""
    nested: dict = {}
    for key, value in state_dict.items():
        set_element(nested, mapping[key], value)
    return nested


# -- chunks ----------------------------------------------------------------
def _dtensor_class():
    from ..tensor import DTensor

    return DTensor


def _local_chunk(obj) -> tuple[tuple, tuple] | None:
    """``(offsets, sizes)`` of the part of tensor ``obj`` this rank holds (None: none)."""
    DTensor = _dtensor_class()
    if isinstance(obj, DTensor):
        from ..tensor._utils import compute_local_shape_and_global_offset

        if obj.device_mesh.get_coordinate() is None:
            return None
        shape, offset = compute_local_shape_and_global_offset(tuple(obj.shape), obj.device_mesh,
                                                              obj.placements)
        return tuple(offset), tuple(shape)
    return (0,) * obj.dim(), tuple(obj.shape)


def _local_data(obj):
    """The tensor holding this rank's part of ``obj`` (a DTensor's local tensor)."""
    return obj._local_tensor if isinstance(obj, _dtensor_class()) else obj


def _write_item(fqn: str, obj) -> WriteItem | None:
    if not _is_tensor(obj):
        return WriteItem(index=MetadataIndex(fqn), type=WriteItemType.BYTE_IO)
    chunk = _local_chunk(obj)
    if chunk is None:
        return None
    offsets, sizes = chunk
    local = _local_data(obj)
    shard = isinstance(obj, _dtensor_class())
    return WriteItem(index=MetadataIndex(fqn, offsets),
                     type=WriteItemType.SHARD if shard else WriteItemType.TENSOR,
                     tensor_data=TensorWriteData(
                         chunk=ChunkStorageMetadata(Size(offsets), Size(sizes)),
                         properties=TensorProperties.create_from_tensor(local),
                         size=Size(obj.shape)))


def create_default_local_save_plan(state_dict: dict, is_coordinator: bool) -> SavePlan:
    """One write item per value of the flat ``state_dict`` (all ranks plan every item; the
    global plan removes the duplicates)."""
    items = [item for fqn, obj in state_dict.items()
             if (item := _write_item(fqn, obj)) is not None]
    return SavePlan(items)


def dedup_save_plans(all_plans: list[SavePlan], save_to_lowest_rank: bool = False
                     ) -> list[SavePlan]:
    """Keep each item planned by several ranks in one plan: the lowest rank's, or the plan
    with the fewest bytes so far."""
    holders: dict = defaultdict(list)
    items: dict = {}
    for i, plan in enumerate(all_plans):
        for item in plan.items:
            holders[item.index].append(i)
            items[item.index] = item
    planned = [0] * len(all_plans)
    drop: list[set] = [set() for _ in all_plans]
    for index, ranks in holders.items():
        keep = min(ranks) if save_to_lowest_rank else min(ranks, key=lambda r: planned[r])
        planned[keep] += items[index].tensor_storage_size() or 1
        for r in ranks:
            if r != keep:
                drop[r].add(index)
    return [dataclasses.replace(plan, items=[it for it in plan.items if it.index not in drop[i]])
            for i, plan in enumerate(all_plans)]


def create_default_global_save_plan(all_plans: list[SavePlan], rewrite_index_hints: bool = True
                                    ) -> tuple[list[SavePlan], Metadata]:
    """The metadata of all plans' items (each tensor's chunks in plan order), with the chunk
    position written into every item's index."""
    md: dict = {}
    new_plans = []
    for plan in all_plans:
        new_items = []
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                md[item.index.fqn] = BytesStorageMetadata()
                new_items.append(item)
                continue
            td = item.tensor_data
            entry = md.setdefault(item.index.fqn, TensorStorageMetadata(td.properties, td.size, []))
            if not isinstance(entry, TensorStorageMetadata):
                raise ValueError(f"{item.index.fqn} is saved as bytes by one rank and as a "
                                 f"tensor by another")
            if rewrite_index_hints:
                item = dataclasses.replace(item, index=dataclasses.replace(
                    item.index, index=len(entry.chunks)))
            entry.chunks.append(td.chunk)
            new_items.append(item)
        new_plans.append(dataclasses.replace(plan, items=new_items))
    return new_plans, Metadata(md)


def _validate_global_plan(metadata: Metadata) -> None:
    """Each tensor's chunks lie inside it and do not overlap (PyTorch's check)."""
    problems = []
    for fqn, md in metadata.state_dict_metadata.items():
        if not isinstance(md, TensorStorageMetadata):
            continue
        total = 0
        for i, c in enumerate(md.chunks):
            if len(c.offsets) != len(md.size) or any(
                    o < 0 or o + s > d for o, s, d in zip(c.offsets, c.sizes, md.size)):
                problems.append(f"{fqn}: chunk {i} out of bounds")
            n = 1
            for s in c.sizes:
                n *= s
            total += n
            if any(_overlap(c.offsets, c.sizes, c2.offsets, c2.sizes) is not None
                   for c2 in md.chunks[i + 1:]):
                problems.append(f"{fqn}: chunks overlap")
        volume = 1
        for d in md.size:
            volume *= d
        if total != volume:
            problems.append(f"{fqn}: chunks cover {total} of {volume} elements")
    if problems:
        raise ValueError(f"Failed to validate global plan: {'; '.join(problems)}")


class DefaultSavePlanner(SavePlanner):
    """Flattens the state dict, writes each tensor chunk and value once (see the module)."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None,
                 dedup_save_to_lowest_rank: bool = False, enable_plan_caching: bool = False
                 ) -> None:
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        self.mappings: dict = {}

    def set_up_planner(self, state_dict: dict, storage_meta: StorageMeta | None = None,
                       is_coordinator: bool = False) -> None:
        """Flatten ``state_dict`` and reduce Partial DTensors (a collective on their mesh)."""
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = {k: _settled(v) for k, v in state_dict.items()}
        self.is_coordinator = is_coordinator

    def create_local_plan(self) -> SavePlan:
        """One item per value."""
        plan = create_default_local_save_plan(self.state_dict, self.is_coordinator)
        if self.flatten_state_dict:
            plan = dataclasses.replace(plan, planner_data=self.mappings)
        self.plan = plan
        return plan

    def create_global_plan(self, all_plans: list[SavePlan]) -> tuple[list[SavePlan], Metadata]:
        """Deduplicate, build the metadata (with every rank's key paths) and check it."""
        all_plans = dedup_save_plans(all_plans, self.dedup_save_to_lowest_rank)
        plans, metadata = create_default_global_save_plan(all_plans)
        if self.flatten_state_dict:
            merged: dict = {}
            for p in plans:
                merged.update(p.planner_data or {})
            metadata = dataclasses.replace(metadata, planner_data=merged)
        _validate_global_plan(metadata)
        self.global_plan, self.metadata = plans, metadata
        return plans, metadata

    def finish_plan(self, new_plan: SavePlan) -> SavePlan:
        """Keep the coordinator's plan."""
        self.plan = new_plan
        return new_plan

    def resolve_data(self, write_item: WriteItem):
        """A tensor item's local tensor (detached), or a bytes item pickled as ``save`` does."""
        obj = self.lookup_object(write_item.index)
        return self.transform_object(write_item, obj)

    def lookup_object(self, index: MetadataIndex) -> Any:
        """The value (a DTensor's local tensor) at ``index``."""
        obj = self.state_dict[index.fqn]
        return _local_data(obj) if _is_tensor(obj) else obj

    def transform_object(self, write_item: WriteItem, obj: Any):
        """Bytes items become an ``io.BytesIO`` holding ``ember.save(obj)``."""
        if write_item.type == WriteItemType.BYTE_IO:
            from ...serialization import save

            buf = io.BytesIO()
            save(obj, buf)
            buf.seek(0)
            return buf
        return obj.detach()


def _settled(obj):
    """A DTensor with Partial placements, reduced (replicated on those mesh dims)."""
    DTensor = _dtensor_class()
    if isinstance(obj, DTensor) and any(p.is_partial() for p in obj.placements):
        from ..tensor import Replicate

        return obj.redistribute(obj.device_mesh, [Replicate() if p.is_partial() else p
                                                  for p in obj.placements])
    return obj


def _overlap(a_off, a_len, b_off, b_len):
    """(start, length) per dim of the intersection of two boxes, or None if empty."""
    out = []
    for ao, al, bo, bl in zip(a_off, a_len, b_off, b_len):
        lo, hi = max(ao, bo), min(ao + al, bo + bl)
        if hi <= lo:
            return None
        out.append((lo, hi - lo))
    return out


def _read_items(fqn: str, md, obj) -> list[ReadItem]:
    if isinstance(md, BytesStorageMetadata):
        zero = Size([0])
        return [ReadItem(LoadItemType.BYTE_IO, MetadataIndex(fqn), zero, MetadataIndex(fqn),
                         zero, zero)]
    if not _is_tensor(obj):
        raise ValueError(f"{fqn} is a tensor in the checkpoint, but the state dict holds "
                         f"{type(obj).__name__}")
    chunk = _local_chunk(obj)
    if chunk is None:
        return []
    offsets, sizes = chunk
    items = []
    for i, stored in enumerate(md.chunks):
        box = _overlap(offsets, sizes, stored.offsets, stored.sizes)
        if box is None and len(sizes) == 0:
            box = []  # a 0-d tensor: one element, no dims
        if box is None:
            continue
        items.append(ReadItem(
            LoadItemType.TENSOR, MetadataIndex(fqn, offsets),
            Size([s - o for (s, _), o in zip(box, offsets)]),
            MetadataIndex(fqn, stored.offsets, i),
            Size([s - o for (s, _), o in zip(box, stored.offsets)]),
            Size([n for _, n in box])))
    return items


def create_default_local_load_plan(state_dict: dict, metadata: Metadata, strict: bool = True
                                   ) -> LoadPlan:
    """Read items for every value of the flat ``state_dict``; a key missing from the
    checkpoint is an error when ``strict``, skipped otherwise."""
    requests: list[ReadItem] = []
    for fqn, obj in state_dict.items():
        if fqn not in metadata.state_dict_metadata:
            if strict:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")
            continue
        md = metadata.state_dict_metadata[fqn]
        if isinstance(md, TensorStorageMetadata) and _is_tensor(obj) \
                and tuple(md.size) != tuple(obj.shape):
            raise ValueError(f"Size mismatch between saved {md.size} and current: "
                             f"{obj.size()} for {fqn}")
        requests += _read_items(fqn, md, obj)
    return LoadPlan(requests)


def create_default_global_load_plan(all_plans: list[LoadPlan]) -> list[LoadPlan]:
    """The local plans, unchanged."""
    return all_plans


class DefaultLoadPlanner(LoadPlanner):
    """Loads into the (flattened) state dict in place: tensors are copied into, other values
    replaced in the caller's nested dicts. ``allow_partial_load`` skips keys the checkpoint
    lacks. Bytes load with ``weights_only=True`` (PyTorch unpickles them fully)."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False) -> None:
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.allow_partial_load = allow_partial_load
        self.mappings: dict = {}

    def set_up_planner(self, state_dict: dict, metadata: Metadata | None = None,
                       is_coordinator: bool = False) -> None:
        """Remember ``state_dict`` (flattened) and ``metadata``."""
        self.original_state_dict = state_dict
        if self.flatten_state_dict:
            state_dict, self.mappings = flatten_state_dict(state_dict)
        self.state_dict = state_dict
        self.metadata = metadata
        self.is_coordinator = is_coordinator

    def create_local_plan(self) -> LoadPlan:
        """Read items for each key (see ``create_default_local_load_plan``)."""
        if self.metadata is None:
            raise AssertionError("self.metadata is not None")
        return create_default_local_load_plan(self.state_dict, self.metadata,
                                              not self.allow_partial_load)

    def create_global_plan(self, global_plan: list[LoadPlan]) -> list[LoadPlan]:
        """The local plans, unchanged."""
        return create_default_global_load_plan(global_plan)

    def finish_plan(self, new_plan: LoadPlan) -> LoadPlan:
        """Keep the coordinator's plan."""
        return new_plan

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        """Unpickle a bytes item (weights only: loading never runs code) into its key."""
        from ...serialization import load

        obj = load(value, map_location="cpu", weights_only=True)
        fqn = read_item.dest_index.fqn
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[fqn], obj)
        else:
            self.state_dict[fqn] = obj

    def resolve_tensor(self, read_item: ReadItem):
        """The region of the destination (a DTensor's local tensor) ``read_item`` fills."""
        return narrow_tensor_by_index(self.lookup_tensor(read_item.dest_index),
                                      read_item.dest_offsets, read_item.lengths)

    def lookup_tensor(self, index: MetadataIndex):
        """The tensor (a DTensor's local tensor) at ``index``."""
        return _local_data(self.state_dict[index.fqn])

    def commit_tensor(self, read_item: ReadItem, tensor) -> None:
        """Nothing to do: the region was written in place."""

    def transform_tensor(self, read_item: ReadItem, tensor):
        """``tensor``'s region for ``read_item``."""
        return narrow_tensor_by_index(tensor, read_item.dest_offsets, read_item.lengths)


def narrow_tensor_by_index(tensor, offsets, sizes):
    """The view of ``tensor`` starting at ``offsets`` with ``sizes``."""
    out = tensor
    for dim, (off, size) in enumerate(zip(offsets, sizes)):
        if off != 0 or size != tensor.shape[dim]:
            out = out.narrow(dim, off, size)
    return out


class _EmptyStateDictLoadPlanner(DefaultLoadPlanner):
    """Loads a whole checkpoint (or its ``keys``) into an empty state dict, made from the
    metadata: each tensor allocated with its saved size and dtype, nested as saved."""

    def __init__(self, keys=None, *args, **kwargs) -> None:
        self.keys = keys
        super().__init__(*args, **kwargs)

    def _should_include_key(self, key: str, metadata: Metadata) -> bool:
        if self.keys is None:
            return True
        if key in self.keys:
            return True
        path = (metadata.planner_data or {}).get(key, ())
        return any(".".join(map(str, path[:i])) in self.keys for i in range(1, len(path)))

    def set_up_planner(self, state_dict: dict, metadata: Metadata | None = None,
                       is_coordinator: bool = False) -> None:
        """Allocate every (chosen) key of ``metadata`` in ``state_dict``."""
        if state_dict:
            raise AssertionError("not state_dict")
        if metadata is None:
            raise AssertionError("metadata is not None")
        from ..._factory import empty

        for key, md in metadata.state_dict_metadata.items():
            if not self._should_include_key(key, metadata):
                continue
            value = (empty(tuple(md.size), dtype=md.properties.dtype)
                     if isinstance(md, TensorStorageMetadata) else "<bytes_io>")
            path = (metadata.planner_data or {}).get(key)
            if path is not None:
                set_element(state_dict, tuple(path), value)
            else:
                state_dict[key] = value
        super().set_up_planner(state_dict, metadata, is_coordinator)
