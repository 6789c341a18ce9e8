"""Regenerate the corpus of malformed and malicious checkpoints in ``bad_checkpoints/``.

Run from the repository root: ``PYTHONPATH=packages/core/src python
tests/core/data/make_bad_checkpoints.py``. Every file must make ``ember.load`` raise a clean
``RuntimeError``/``ValueError``/``pickle.UnpicklingError`` quickly; ``*_exec*`` files must not
run their payload (it would create ``ember_pwned_marker`` in the working directory).
"""

from __future__ import annotations

import collections
import io
import os
import types
import warnings
import zipfile

import numpy as np

import ember
from ember.serialization import _pickle

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad_checkpoints")
PAYLOAD = "open('ember_pwned_marker', 'w').write('pwned')"


class _FakeTensor:
    """Pickles as ``_rebuild_tensor_v2`` over a storage of a declared (possibly absurd)
    element count, with any offset/size/stride."""

    def __init__(self, numel, offset, size, stride, key="0"):
        self.ref = _pickle.StorageRef(key, ember.float32, "cpu", types.SimpleNamespace(size=numel))
        self.args = (offset, size, stride)


class _CraftPickler(_pickle.TorchPickler):
    def reducer_override(self, obj):
        if isinstance(obj, _FakeTensor):
            return _pickle.REBUILD_TENSOR_V2, (obj.ref, *obj.args, False,
                                               collections.OrderedDict())
        return super().reducer_override(obj)


def _pkl(obj) -> bytes:
    buf = io.BytesIO()
    _CraftPickler(buf, 2).dump(obj)
    return buf.getvalue()


def _archive(records: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of one file
        with zipfile.ZipFile(buf, "w") as zf:
            for name, data in records:
                zf.writestr(name, data)
    return buf.getvalue()


def _checkpoint(pkl: bytes, storage: bytes = np.arange(4, dtype=np.float32).tobytes()) -> bytes:
    return _archive([("archive/data.pkl", pkl), ("archive/byteorder", b"little"),
                     ("archive/data/0", storage), ("archive/version", b"3\n")])


def _valid() -> bytes:
    buf = io.BytesIO()
    ember.save({"w": ember.arange(12.0).reshape(3, 4), "b": ember.ones(3, dtype=ember.int64)},
               buf)
    return buf.getvalue()


def _legacy() -> bytes:
    buf = io.BytesIO()
    ember.save({"w": ember.arange(4.0)}, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def _exec_pickle(func: bytes, arg: str) -> bytes:
    return b"\x80\x02c" + func + b"\nX" + len(arg).to_bytes(4, "little") + arg.encode() + \
        b"\x85R."


def corpus() -> dict[str, bytes]:
    valid, legacy = _valid(), _legacy()
    return {
        "truncated_zip.pt": valid[: len(valid) // 2],
        "empty.pt": b"",
        "not_a_checkpoint.pt": b"this is not a checkpoint at all\n" * 4,
        "wrong_storage_size.pt": _checkpoint(_pkl(_FakeTensor(4, 0, (4,), (1,))),
                                             storage=b"\0" * 12),
        "absurd_numel.pt": _checkpoint(_pkl(_FakeTensor(10**15, 0, (10**15,), (1,)))),
        "offset_past_end.pt": _checkpoint(_pkl(_FakeTensor(4, 100, (4,), (1,)))),
        "size_past_end.pt": _checkpoint(_pkl(_FakeTensor(4, 0, (2, 3), (3, 1)))),
        "negative_stride.pt": _checkpoint(_pkl(_FakeTensor(4, 3, (4,), (-1,)))),
        "missing_storage.pt": _checkpoint(_pkl(_FakeTensor(4, 0, (4,), (1,), key="7"))),
        "dotdot_entry.pt": _archive([("archive/data.pkl", _pkl({})),
                                     ("archive/../../evil", b"x")]),
        "absolute_entry.pt": _archive([("/archive/data.pkl", _pkl({}))]),
        "duplicate_entry.pt": _archive([("archive/data.pkl", _pkl({})),
                                        ("archive/data.pkl", _pkl([]))]),
        "mixed_prefix.pt": _archive([("archive/data.pkl", _pkl({})), ("other/x", b"1")]),
        "no_data_pkl.pt": _archive([("archive/version", b"3\n")]),
        "os_system_exec.pt": _checkpoint(_exec_pickle(b"os\nsystem", "touch ember_pwned_marker")),
        "builtins_exec.pt": _checkpoint(_exec_pickle(b"builtins\nexec", PAYLOAD)),
        "eval_exec_proto4.pt": _checkpoint(
            b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93" + b"X" + len(PAYLOAD).to_bytes(4, "little")
            + PAYLOAD.encode() + b"\x85R."),
        "memo_bomb.pt": _checkpoint(b"\x80\x02]r\xf0\xff\xff\xff."),
        "deep_nesting.pt": _checkpoint(b"\x80\x02" + b"(" * 20_000 + b"."),
        "bytearray_bomb.pt": _checkpoint(b"\x80\x02cbuiltins\nbytearray\nJ\xff\xff\xff\x7f\x85R."),
        "garbage_pickle.pt": _checkpoint(b"\x80\x02\xff\xfe\xfd"),
        "legacy_truncated.pt": legacy[: len(legacy) - 7],
        "legacy_bad_magic.pt": legacy.replace(b"\x6a\xa8\x50\x19", b"\x6a\xa8\x50\x18", 1),
    }


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    for name, data in corpus().items():
        with open(os.path.join(HERE, name), "wb") as fh:
            fh.write(data)
    print(f"wrote {len(corpus())} files to {HERE}")


if __name__ == "__main__":
    main()
