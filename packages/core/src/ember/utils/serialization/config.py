"""``torch.utils.serialization.config``: process-wide options of ``ember.save`` and
``ember.load``, read at each call (``config.save.compute_crc32 = False`` takes effect at the
next save).

``load.mmap``: what ``ember.load(mmap=None)`` does (False: read the storages).
``load.endianness``: the byte order assumed for a zip checkpoint without a ``byteorder``
record (``serialization.get/set_default_load_endianness``); None means little-endian.
``load.mmap_flags``: ``mmap.MAP_PRIVATE`` (copy-on-write, the default) or
``mmap.MAP_SHARED`` (writes to the loaded tensors go to the file);
``serialization.set_default_mmap_options`` sets it.
``load.calculate_storage_offsets``: PyTorch computes record offsets instead of reading each
local header; Ember reads them from the central directory it validates first, so the option
is accepted and changes nothing.
``save.compute_crc32``: False writes a CRC-32 of 0 for every record (``ember.load``, like
``torch.load``, skips checking a zero CRC; other unzip tools will complain).
``save.use_pinned_memory_for_d2h``: PyTorch copies accelerator storages through pinned
memory; Ember copies device storages to the host directly, so the option changes nothing.
``save.storage_alignment``: the byte alignment of each storage record (64, PyTorch's; a
power of two, recorded in the archive's ``.storage_alignment``).
"""

from __future__ import annotations

import sys


class load:
    mmap: bool = False
    endianness = None  # serialization.LoadEndianness or None
    mmap_flags: int | None = None if sys.platform == "win32" else 2  # mmap.MAP_PRIVATE
    calculate_storage_offsets: bool = False


class save:
    compute_crc32: bool = True
    use_pinned_memory_for_d2h: bool = False
    storage_alignment: int = 64
