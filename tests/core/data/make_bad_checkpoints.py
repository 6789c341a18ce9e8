"""Malformed and malicious checkpoints, safetensors files and repository archives.

``corpus()`` is the small committed corpus in ``bad_checkpoints/`` (regenerate it from the
repository root with ``PYTHONPATH=packages/core/src python
tests/core/data/make_bad_checkpoints.py``): every file must make ``ember.load`` raise a clean
exception quickly, and ``*_exec*`` files must not run their payload (it would create
``ember_pwned_marker`` in the working directory).

``checkpoint_cases()`` and ``archive_cases()`` are the larger fuzzing corpus, generated at
test time (``write_cases``): code-execution payloads in every container and opcode, state
injection, opcode and decompression bombs, zip path traversal, truncations and bit flips,
safetensors header abuse, and hub repository archives. ``fuzz_worker.py`` loads each case in
a memory-limited subprocess.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import os
import pickle
import stat
import struct
import types
import warnings
import zipfile
import zlib

import numpy as np

import ember
from ember.serialization import _pickle

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad_checkpoints")
MARKER = "ember_pwned_marker"
PAYLOAD = f"open({MARKER!r}, 'w').write('pwned')"
SHELL = f"touch {MARKER}"


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


ARANGE4 = np.arange(4, dtype=np.float32).tobytes()


def _checkpoint(pkl: bytes, storage: bytes = ARANGE4, storages: dict | None = None) -> bytes:
    records = [("archive/data.pkl", pkl), ("archive/byteorder", b"little")]
    records += [(f"archive/data/{k}", v) for k, v in (storages or {"0": storage}).items()]
    return _archive(records + [("archive/version", b"3\n")])


def _save(obj, legacy: bool = False) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


def _valid() -> bytes:
    return _save({"w": ember.arange(12.0).reshape(3, 4), "b": ember.ones(3, dtype=ember.int64)})


def _legacy() -> bytes:
    return _save({"w": ember.arange(4.0)}, legacy=True)


def _exec_pickle(func: bytes, arg: str) -> bytes:
    return b"\x80\x02c" + func + b"\nX" + len(arg).to_bytes(4, "little") + arg.encode() + \
        b"\x85R."


def corpus() -> dict[str, bytes]:
    """The committed corpus (``bad_checkpoints/``)."""
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


# -- a pickle assembler: each helper returns the opcodes that push one value -----------------

P = pickle


def glob(module: str, name: str) -> bytes:
    return P.GLOBAL + f"{module}\n{name}\n".encode()


def text(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogatepass")
    return P.BINUNICODE + struct.pack("<I", len(raw)) + raw


def num(value: int) -> bytes:
    if -2**31 <= value < 2**31:
        return P.BININT + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return P.LONG1 + bytes([len(raw)]) + raw


def tup(*items: bytes) -> bytes:
    return P.MARK + b"".join(items) + P.TUPLE if items else P.EMPTY_TUPLE


def lst(*items: bytes) -> bytes:
    return P.EMPTY_LIST + (P.MARK + b"".join(items) + P.APPENDS if items else b"")


def dct(*pairs: tuple[bytes, bytes]) -> bytes:
    body = b"".join(k + v for k, v in pairs)
    return P.EMPTY_DICT + (P.MARK + body + P.SETITEMS if pairs else b"")


def call(func: bytes, *args: bytes) -> bytes:
    return func + tup(*args) + P.REDUCE


def odict(*pairs: tuple[bytes, bytes]) -> bytes:
    body = b"".join(k + v for k, v in pairs)
    return call(glob("collections", "OrderedDict")) + (P.MARK + body + P.SETITEMS if pairs
                                                        else b"")


def pkl(body: bytes, proto: int = 2) -> bytes:
    return P.PROTO + bytes([proto]) + body + P.STOP


def storage(key="0", numel=4, kind="FloatStorage", legacy=False, type_ops=None) -> bytes:
    fields = [text("storage"), type_ops or glob("torch", kind), text(key), text("cpu"), num(numel)]
    return tup(*fields, *([P.NONE] if legacy else [])) + P.BINPERSID


def tensor(key="0", numel=4, size=(4,), stride=(1,), offset=0, legacy=False) -> bytes:
    return call(glob("torch._utils", "_rebuild_tensor_v2"), storage(key, numel, legacy=legacy),
                num(offset), tup(*map(num, size)), tup(*map(num, stride)), P.NEWFALSE, odict())


def shell(func_module: str, func_name: str) -> bytes:
    """``module.name("touch ember_pwned_marker")``."""
    return call(glob(func_module, func_name), text(SHELL))


# -- a raw zip writer that can lie in every field ----------------------------------------------

_LOCAL = struct.Struct("<4s2B4HL2L2H")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END = struct.Struct("<4s4H2LH")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR64 = struct.Struct("<4sLQL")


def member(name, content: bytes = b"", method: int = zipfile.ZIP_STORED, **lies) -> dict:
    """A zip member; ``lies`` override what is written (crc, usize, csize, data, flags,
    external_attr, local_name; at=index of an earlier member whose local header to share,
    or offset=where its local header is, written by someone else)."""
    data = content
    if method == zipfile.ZIP_DEFLATED:
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = comp.compress(content) + comp.flush()
    entry = {"name": name, "data": data, "method": method, "crc": zlib.crc32(content),
             "usize": len(content), "csize": len(data), "flags": 0, "external_attr": 0}
    entry.update(lies)
    entry.setdefault("local_name", entry["name"])
    return entry


def raw_zip(members: list[dict]) -> bytes:
    out, central, offsets = bytearray(), bytearray(), []
    for m in members:
        name = m["name"].encode() if isinstance(m["name"], str) else m["name"]
        zip64 = max(m["usize"], m["csize"]) >= 0xFFFFFFFF
        usize, csize = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (m["usize"], m["csize"])
        if "at" in m or "offset" in m:
            offset = offsets[m["at"]] if "at" in m else m["offset"]
        else:
            offset = len(out)
            local = m["local_name"].encode() if isinstance(m["local_name"], str) \
                else m["local_name"]
            out += _LOCAL.pack(b"PK\003\004", 20, 0, m["flags"], m["method"], 0, 0x21, m["crc"],
                               csize, usize, len(local), 0) + local + m["data"]
        offsets.append(offset)
        extra = struct.pack("<HHQQ", 1, 16, m["usize"], m["csize"]) if zip64 else b""
        central += _CENTRAL.pack(b"PK\001\002", 20, 3, 45 if zip64 else 20, 0, m["flags"],
                                 m["method"], 0, 0x21, m["crc"], csize, usize, len(name),
                                 len(extra), 0, 0, 0, m["external_attr"], offset) + name + extra
    count, start = len(members), len(out)
    end = b""
    if count > 0xFFFF:  # a zip64 end record and its locator carry the real count
        end = _END64.pack(b"PK\006\006", 44, 45, 45, 0, 0, count, count, len(central), start)
        end += _LOCATOR64.pack(b"PK\006\007", 0, start + len(central), 1)
        count = 0xFFFF
    end += _END.pack(b"PK\005\006", 0, 0, count, count, len(central), start, 0)
    return bytes(out + central + end)


def local_header(name: str, content: bytes) -> bytes:
    """A stored member's local header and data, to hide inside another member."""
    raw = name.encode()
    return _LOCAL.pack(b"PK\003\004", 20, 0, 0, 0, 0, 0x21, zlib.crc32(content), len(content),
                       len(content), len(raw), 0) + raw + content


def nested_members(before: list[dict], outer: str, inner: str, content: bytes) -> list[dict]:
    """Fifield's overlap: a stored member ``outer`` whose data is a whole member ``inner``,
    which the central directory lists on its own; ``before`` are the members written first."""
    start = sum(30 + len(m["local_name"].encode()) + len(m["data"]) for m in before)
    return [member(outer, local_header(inner, content)),
            member(inner, content, offset=start + 30 + len(outer.encode()))]


def deflate_zeros(nbytes: int, block: int = 1 << 20) -> bytes:
    """A raw deflate stream of ``nbytes`` zeros (a multiple of ``block``), built by repeating
    one fully flushed block: megabytes of output per kilobyte, made in milliseconds."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = comp.compress(b"\0" * block) + comp.flush(zlib.Z_FULL_FLUSH)
    return chunk * (nbytes // block) + b"\x03\x00"  # an empty final block ends the stream


def _crc_of_zeros(nbytes: int, block: int = 1 << 20) -> int:
    crc, zeros = 0, b"\0" * block
    for _ in range(nbytes // block):
        crc = zlib.crc32(zeros, crc)
    return crc


# -- the fuzzing corpus ----------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One hostile input. ``kind``: "pt" (``ember.load``), "pt-mmap" (``mmap=True``), "st"
    (``ember.safetensors.load_file``) or "zip" (the hub's archive extraction). ``expect``:
    "refuse" (a clean exception), "load" (must load and equal ``reference``) or "either"
    (a clean exception, or a load equal to ``reference`` when one is given)."""

    name: str
    kind: str
    data: bytes
    expect: str = "refuse"
    reference: bytes | None = None
    torch_slow: bool = False  # PyTorch's pure-Python unpickler takes seconds on it


BOMB_BYTES = 16 << 20  # opcode bombs: 16 MB of pickle (40 MB in the issue; same per-op cost)


def _parameter(data):
    try:
        from ember.nn import Parameter
    except ImportError:
        return data.requires_grad_()
    return Parameter(data)


def _exec_cases() -> list[Case]:
    """Code-execution payloads in every opcode and container; none may run."""
    calls = {
        "os_system": shell("os", "system"), "posix_system": shell("posix", "system"),
        "nt_system": shell("nt", "system"), "subprocess_getoutput": shell("subprocess",
                                                                         "getoutput"),
        "subprocess_popen": call(glob("subprocess", "Popen"), lst(text("touch"),
                                                                  text(MARKER))),
        "builtins_eval": call(glob("builtins", "eval"), text(PAYLOAD)),
        "builtins_exec": call(glob("builtins", "exec"), text(PAYLOAD)),
        "py2_builtin_eval": call(glob("__builtin__", "eval"), text(PAYLOAD)),
        "getattr_import": call(call(glob("builtins", "getattr"),
                                    call(glob("builtins", "__import__"), text("os")),
                                    text("system")), text(SHELL)),
        "importlib": call(glob("importlib", "import_module"), text("os")),
        "timeit": call(glob("timeit", "timeit"), text(f"import os; os.system({SHELL!r})")),
        "nested_pickle_loads": call(glob("pickle", "loads"), call(
            glob("_codecs", "encode"), text(pkl(shell("os", "system")).decode("latin1")),
            text("latin1"))),
        "torch_load": call(glob("torch.serialization", "load"), text("other.pt")),
        "numpy_reconstruct": call(glob("numpy.core.multiarray", "_reconstruct"),
                                  text("x")),
        "dotted_name": call(glob("torch._utils", "_rebuild_tensor_v2.__globals__"),
                            text("x")),
        "ember_module": call(glob("ember.serialization", "load"), text("x")),
    }
    cases = [Case(f"exec_global_{k}", "pt", _checkpoint(pkl(v))) for k, v in calls.items()]
    evil = shell("os", "system")
    stack_global = text("os") + text("system") + P.STACK_GLOBAL
    cases += [
        Case("exec_stack_global", "pt", _checkpoint(pkl(stack_global + text(SHELL) + P.TUPLE1
                                                        + P.REDUCE, proto=4))),
        Case("exec_inst", "pt", _checkpoint(pkl(P.MARK + text(SHELL) + b"ios\nsystem\n"))),
        Case("exec_obj", "pt", _checkpoint(pkl(P.MARK + glob("os", "system") + text(SHELL)
                                               + P.OBJ))),
        Case("exec_newobj", "pt", _checkpoint(pkl(glob("os", "system") + tup(text(SHELL))
                                                  + P.NEWOBJ))),
        Case("exec_newobj_ex", "pt", _checkpoint(pkl(stack_global + tup(text(SHELL))
                                                     + dct() + P.NEWOBJ_EX, proto=4))),
        Case("exec_ext1", "pt", _checkpoint(pkl(P.EXT1 + b"\x01" + tup(text(SHELL))
                                                + P.REDUCE))),
        Case("exec_persid_text", "pt", _checkpoint(pkl(P.PERSID + SHELL.encode() + b"\n"))),
        Case("exec_in_dict", "pt", _checkpoint(pkl(dct((text("a"), lst(evil)))))),
        Case("exec_in_list", "pt", _checkpoint(pkl(lst(num(1), tup(num(2), evil))))),
        Case("exec_in_odict", "pt", _checkpoint(pkl(odict((text("w"), tensor()),
                                                          (text("x"), evil))))),
        Case("exec_in_set", "pt", _checkpoint(pkl(call(glob("builtins", "set"),
                                                       lst(evil))))),
        Case("exec_in_persistent_id", "pt", _checkpoint(pkl(call(
            glob("torch._utils", "_rebuild_tensor_v2"), storage(type_ops=evil), num(0),
            tup(num(4)), tup(num(1)), P.NEWFALSE, odict())))),
        Case("exec_in_build_state", "pt", _checkpoint(pkl(odict() + dct((text("_m"), evil))
                                                          + P.BUILD))),
        Case("exec_in_rebuild_arg", "pt", _checkpoint(pkl(call(
            glob("torch._utils", "_rebuild_tensor_v2"), storage(), num(0), tup(evil),
            tup(num(1)), P.NEWFALSE, odict())))),
    ]
    for part in ("magic", "protocol", "sys_info", "main", "keys"):
        cases.append(Case(f"exec_legacy_{part}", "pt", _legacy_file(**{part: pkl(evil)})))
    return cases


def _legacy_file(magic=None, protocol=None, sys_info=None, main=None, keys=None,
                 storages=None) -> bytes:
    """A legacy (non-zip) checkpoint from its five pickles and raw storages."""
    from ember.serialization import _legacy as legacy

    storages = {"0": ARANGE4} if storages is None else storages
    info = {"protocol_version": legacy.PROTOCOL_VERSION, "little_endian": True,
            "type_sizes": {"short": 2, "int": 4, "long": 4}}
    out = (magic or pickle.dumps(legacy.MAGIC_NUMBER, 2))
    out += protocol or pickle.dumps(legacy.PROTOCOL_VERSION, 2)
    out += sys_info or pickle.dumps(info, 2)
    out += main or pkl(dct((text("w"), tensor(legacy=True))))
    out += keys or pickle.dumps(list(storages), 2)
    for data in storages.values():
        out += (len(data) // 4).to_bytes(8, "little") + data
    return out


def _state_cases() -> list[Case]:
    """Pickled state that tries to set internal fields, or to build what must not be built."""
    param_ref = _save({"p": _parameter(ember.arange(4.0))})
    plain_ref = _save({"p": ember.arange(4.0)})
    frozen_ref = _save({"p": _parameter(ember.arange(4.0)).requires_grad_(False)})

    def param_with_state(state: bytes) -> bytes:
        return _checkpoint(pkl(dct((text("p"), call(
            glob("torch._utils", "_rebuild_parameter_with_state"), tensor(), P.NEWTRUE,
            odict(), state)))))

    def built(target: bytes, state: bytes) -> bytes:
        return _checkpoint(pkl(dct((text("p"), target + state + P.BUILD))))

    param = call(glob("torch._utils", "_rebuild_parameter"), tensor(), P.NEWTRUE, odict())
    # Ember's internal fields (PyTorch has none of these names and ignores them too) ...
    internal = [(text(k), text("pwned")) for k in
                ("_data", "_vc", "_extra", "_accum", "_nr", "_device")]
    # ... and fields both have, which PyTorch type-checks (TypeError) and Ember ignores
    shared = [(text(k), text("pwned")) for k in ("_grad", "_base", "_backward_hooks")]
    meta = odict((text("w"), tensor()))
    meta_state = dct((text("_metadata"), dct((text(""), dct((text("version"), num(1)))))))
    meta_ref = collections.OrderedDict(w=ember.arange(4.0))
    meta_ref._metadata = {"": {"version": 1}}
    return [
        Case("state_param_data", "pt", param_with_state(dct((text("_data"), text("pwned")))),
             "load", param_ref),
        Case("state_param_internals", "pt", param_with_state(dct(*internal)), "load",
             param_ref),
        Case("state_param_slots_tuple", "pt", param_with_state(tup(P.NONE, dct(*internal))),
             "load", param_ref),
        Case("state_param_torch_fields", "pt", param_with_state(dct(*shared)), "either",
             param_ref),
        Case("state_param_grad_fn", "pt", param_with_state(dct((text("grad_fn"),
                                                                 text("pwned")))),
             "either", param_ref),
        Case("state_param_requires_grad_str", "pt", param_with_state(dct((
            text("requires_grad"), text("pwned")))), "either", param_ref),
        Case("state_from_type_v2", "pt", _checkpoint(pkl(dct((text("p"), call(
            glob("torch._tensor", "_rebuild_from_type_v2"),
            glob("torch._utils", "_rebuild_tensor_v2"), glob("torch", "Tensor"),
            tup(storage(), num(0), tup(num(4)), tup(num(1)), P.NEWFALSE, odict()),
            dct(*internal)))))), "load", plain_ref),
        Case("state_build_param_dict", "pt", built(param, dct((text("_data"),
                                                               text("pwned"))))),
        Case("state_build_param_tuple3", "pt", built(param, tup(P.NEWFALSE, P.NONE, odict())),
             "load", frozen_ref),
        Case("state_build_tensor_dict", "pt", built(tensor(), dct((text("_data"),
                                                                   text("pwned"))))),
        Case("state_build_tensor_slots", "pt", built(tensor(), tup(P.NONE, dct(*internal)))),
        Case("state_build_dtype", "pt", built(glob("torch", "float32"),
                                              tup(P.NONE, dct((text("itemsize"), num(3)))))),
        Case("state_build_class", "pt", built(glob("torch", "Tensor"),
                                              tup(P.NONE, dct((text("numpy"), P.NONE))))),
        Case("state_build_function", "pt", built(
            glob("torch._utils", "_rebuild_tensor_v2"),
            tup(P.NONE, dct((text("__defaults__"), tup(P.NEWTRUE, P.NONE, P.NONE)))))),
        Case("state_build_storage_type", "pt", built(
            glob("torch", "FloatStorage"),
            tup(P.NONE, dct((text("dtype"), glob("torch", "int64")))))),
        Case("state_build_device", "pt", built(call(glob("torch", "device"), text("cpu")),
                                               tup(P.NONE, dct((text("type"),
                                                                text("cuda")))))),
        Case("state_build_size", "pt", built(call(glob("torch", "Size"), tup(num(2))),
                                             dct((text("x"), num(1))))),
        Case("state_newobj_tensor", "pt", _checkpoint(pkl(
            glob("torch", "Tensor") + tup(num(100_000), num(100_000)) + P.NEWOBJ))),
        Case("state_reduce_tensor_class", "pt", _checkpoint(pkl(
            call(glob("torch", "Tensor"), num(100_000), num(100_000))))),
        Case("state_odict_metadata", "pt", _checkpoint(pkl(meta + meta_state + P.BUILD)),
             "load", _save(meta_ref)),
        Case("state_odict_shadow_method", "pt", _checkpoint(pkl(
            meta + dct((text("keys"), num(1)), (text("_metadata"),
                                                dct((text(""), dct((text("version"),
                                                                    num(1))))))) + P.BUILD)),
             "either", _save(meta_ref)),
    ]


def _bomb(body: bytes, unit: bytes, head: bytes = b"", proto: int = 2) -> bytes:
    count = (BOMB_BYTES - len(head)) // len(unit)
    return _checkpoint(P.PROTO + bytes([proto]) + head + unit * count + body + P.STOP)


def _opcode_bomb_cases() -> list[Case]:
    """Megabytes of opcodes that do nothing: refused at the first one, not after a scan."""
    frame_noop = P.NONE + P.POP
    big_frame = P.FRAME + struct.pack("<Q", BOMB_BYTES) + frame_noop * (BOMB_BYTES // 2)
    return [
        Case("bomb_mark_pop", "pt", _bomb(P.NONE, P.MARK + P.POP)),
        Case("bomb_none_pop", "pt", _bomb(P.NONE, P.NONE + P.POP)),
        Case("bomb_mark_pop_mark", "pt", _bomb(P.NONE, P.MARK + P.POP_MARK)),
        Case("bomb_dup_pop", "pt", _bomb(b"", P.DUP + P.POP, head=P.NONE)),
        Case("bomb_empty_appends", "pt", _bomb(b"", P.MARK + P.APPENDS, head=P.EMPTY_LIST),
             torch_slow=True),
        Case("bomb_empty_setitems", "pt", _bomb(b"", P.MARK + P.SETITEMS, head=P.EMPTY_DICT),
             torch_slow=True),
        Case("bomb_repeated_binput", "pt", _bomb(b"", P.BINPUT + b"\0", head=P.NONE),
             torch_slow=True),
        Case("bomb_memoize", "pt", _bomb(b"", P.MEMOIZE, head=P.NONE, proto=4)),
        Case("bomb_empty_frames", "pt", _bomb(P.NONE, P.FRAME + bytes(8), proto=4)),
        Case("bomb_frame_past_end", "pt", _checkpoint(pkl(P.FRAME + struct.pack("<Q", 2**62)
                                                          + P.NONE, proto=4))),
        Case("bomb_frame_of_nothing", "pt", _checkpoint(pkl(big_frame + P.NONE, proto=4))),
        Case("bomb_mark_depth", "pt", _checkpoint(pkl(P.MARK * 200_000 + P.NONE))),
        Case("bomb_memo_index", "pt", _checkpoint(pkl(P.EMPTY_LIST + P.LONG_BINPUT
                                                      + b"\xf0\xff\xff\xff"))),
    ]


def _decompression_cases() -> list[Case]:
    """Storage members whose compressed data expands beyond what they declare or need."""
    pkl4 = pkl(dct((text("w"), tensor())))
    head = [member("archive/data.pkl", pkl4), member("archive/byteorder", b"little"),
            member("archive/version", b"3\n")]
    stream = deflate_zeros(64 << 20)
    small_claim = member("archive/data/0", b"", zipfile.ZIP_DEFLATED, data=stream, usize=16,
                         csize=len(stream), crc=zlib.crc32(b"\0" * 16))
    big = 1 << 30  # float32 elements: a 4 GiB storage
    big_pkl = pkl(dct((text("w"), tensor(numel=big, size=(big,)))))
    bomb = deflate_zeros(4 * big)
    huge = 1 << 40
    huge_pkl = pkl(dct((text("w"), tensor(numel=huge, size=(huge,)))))
    tiny = deflate_zeros(1 << 20)
    pkl_bomb = member("archive/data.pkl", b"", zipfile.ZIP_DEFLATED, data=stream,
                      usize=len(pkl4), csize=len(stream), crc=zlib.crc32(pkl4))
    two = pkl(dct((text("a"), tensor("0")), (text("b"), tensor("1"))))
    return [
        Case("zip_deflate_small_claim", "pt", raw_zip(head + [small_claim])),
        Case("zip_deflate_pkl_small_claim", "pt", raw_zip([pkl_bomb, *head[1:],
                                                           member("archive/data/0", ARANGE4)])),
        Case("zip_deflate_huge_claim", "pt", raw_zip([
            member("archive/data.pkl", huge_pkl), *head[1:],
            member("archive/data/0", b"", zipfile.ZIP_DEFLATED, data=tiny, usize=4 * huge,
                   csize=len(tiny), crc=0)])),
        Case("zip_deflate_bomb_4gib", "pt", raw_zip([
            member("archive/data.pkl", big_pkl), *head[1:],
            member("archive/data/0", b"", zipfile.ZIP_DEFLATED, data=bomb, usize=4 * big,
                   csize=len(bomb), crc=_crc_of_zeros(4 * big))])),
        Case("zip_shared_local_header", "pt", raw_zip([
            member("archive/data.pkl", two), *head[1:], member("archive/data/0", ARANGE4),
            member("archive/data/1", ARANGE4, at=3)])),
        Case("zip_nested_members", "pt", raw_zip([
            member("archive/data.pkl", two), *head[1:],
            *nested_members([member("archive/data.pkl", two), *head[1:]], "archive/data/0",
                            "archive/data/1", ARANGE4)])),
        Case("zip_deflated_storage_ok", "pt", raw_zip(head + [member(
            "archive/data/0", ARANGE4, zipfile.ZIP_DEFLATED)]), "load",
             _save({"w": ember.arange(4.0)})),
        Case("zip_stored_size_lie", "pt", raw_zip(head + [member("archive/data/0", ARANGE4,
                                                                 usize=16, csize=12)])),
        Case("zip_storage_crc_wrong", "pt", raw_zip(head + [member("archive/data/0", ARANGE4,
                                                                   crc=1)])),
        Case("zip_pkl_crc_wrong", "pt", raw_zip([member("archive/data.pkl", pkl4, crc=1),
                                                 *head[1:], member("archive/data/0", ARANGE4)])),
        Case("zip_local_name_differs", "pt", raw_zip(head + [member(
            "archive/data/0", ARANGE4, local_name="archive/data/9")])),
        Case("zip_encrypted_member", "pt", raw_zip(head + [member("archive/data/0", ARANGE4,
                                                                  flags=1)])),
        Case("zip_bzip2_member", "pt", raw_zip(head + [member("archive/data/0", ARANGE4,
                                                              method=zipfile.ZIP_BZIP2)])),
        Case("zip_past_end", "pt", raw_zip(head + [member("archive/data/0", ARANGE4,
                                                          csize=10**6, usize=10**6)])),
    ]


def _traversal_cases() -> list[Case]:
    pkl0 = pkl(dct())
    names = {"dotdot": "archive/../../evil", "absolute": "/etc/evil",
             "backslash": "archive\\..\\..\\evil", "drive": "C:/evil",
             "nul": "archive/data\0/evil"}
    version = member("archive/version", b"3\n")
    cases = [Case(f"zip_name_{k}", "pt", raw_zip([member("archive/data.pkl", pkl0), version,
                                                   member(v, b"x")]), "either",
                  _save({})) for k, v in names.items()]
    cases.append(Case("zip_name_duplicate", "pt", raw_zip([
        member("archive/data.pkl", pkl0), version, member("archive/data.pkl", pkl(lst()))])))
    return cases


def _damage_cases(name: str, data: bytes, kind: str, storage_ranges, reference, flips=75,
                  cuts=40) -> list[Case]:
    """Truncations at ``cuts`` offsets and ``flips`` single-bit flips spread over the file;
    a flip inside ``storage_ranges`` must be refused (the member CRC catches it)."""
    cases = []
    for n in range(cuts):
        cut = n * len(data) // cuts
        cases.append(Case(f"{name}_cut_{cut}", kind, data[:cut]))
    positions = [(n * 7919 * 8 + 3) % (len(data) * 8) for n in range(flips)]
    for lo, hi in storage_ranges:  # and as many again inside the tensor data
        positions += [lo * 8 + (n * 8 * (hi - lo)) // flips + n % 8 for n in range(flips)]
    for pos in sorted(set(positions)):
        raw = bytearray(data)
        raw[pos // 8] ^= 1 << (pos % 8)
        inside = any(lo <= pos // 8 < hi for lo, hi in storage_ranges)
        cases.append(Case(f"{name}_flip_{pos}", kind, bytes(raw),
                          "refuse" if inside else "either", None if inside else reference))
    return cases


def storage_ranges(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the storage records' data in a zip checkpoint."""
    ranges = []
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if "/data/" not in info.filename:
                continue
            head = _LOCAL.unpack(data[info.header_offset:info.header_offset + 30])
            start = info.header_offset + 30 + head[10] + head[11]
            ranges.append((start, start + info.compress_size))
    return ranges


def _damage_all() -> list[Case]:
    obj = {"w": ember.arange(12.0).reshape(3, 4), "b": ember.ones(3, dtype=ember.int64),
           "meta": {"step": 3, "name": "x"}}
    zipped, legacy = _save(obj), _save(obj, legacy=True)
    ranges = storage_ranges(zipped)
    cases = _damage_cases("damaged_zip", zipped, "pt", ranges, zipped)
    cases += _damage_cases("damaged_zip_mmap", zipped, "pt-mmap", ranges, zipped, flips=25,
                           cuts=0)
    # legacy files have no checksums: a flip in data loads other numbers, as in PyTorch
    cases += _damage_cases("damaged_legacy", legacy, "pt", [], None, flips=40, cuts=30)
    return cases


def _st_header(header, data: bytes = b"", length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def _safetensors_cases() -> list[Case]:
    import safetensors.numpy

    good = safetensors.numpy.save({"w": np.arange(4, dtype=np.float32)})
    f32 = np.arange(4, dtype=np.float32).tobytes()

    def one(dtype="F32", shape=(4,), offsets=(0, 16), data=f32, **extra) -> bytes:
        return _st_header({"w": {"dtype": dtype, "shape": list(shape),
                                 "data_offsets": list(offsets)}, **extra}, data)

    cases = [
        Case("st_header_longer_than_file", "st", _st_header({}, length=10**6)),
        Case("st_header_length_huge", "st", _st_header({}, length=2**63)),
        Case("st_header_too_large", "st", _st_header({}, length=101 << 20)),
        Case("st_header_empty", "st", _st_header(b"")),
        Case("st_file_too_short", "st", b"\x08\x00"),
        Case("st_json_array", "st", _st_header([1, 2])),
        Case("st_json_number", "st", _st_header(b"3")),
        Case("st_json_invalid", "st", _st_header(b"{\"w\": ")),
        Case("st_json_bad_utf8", "st", _st_header(b"{\"\xff\": {}}")),
        Case("st_offsets_past_end", "st", one(offsets=(0, 1 << 20))),
        Case("st_offsets_reversed", "st", one(offsets=(16, 0))),
        Case("st_offsets_mismatch_shape", "st", one(shape=(3,))),
        Case("st_negative_dim", "st", one(shape=(-4,))),
        Case("st_huge_dims", "st", one(shape=(2**32, 2**32, 2**32))),
        Case("st_overlapping", "st", _st_header({
            "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, f32)),
        Case("st_gap", "st", one(offsets=(4, 16))),
        Case("st_unknown_dtype", "st", one(dtype="Q8")),
        Case("st_metadata_not_strings", "st", one(__metadata__={"a": 1})),
        Case("st_trailing_bytes", "st", one(data=f32 + b"junk"), "either"),
        Case("st_ok", "st", good, "load", _save({"w": ember.arange(4.0)})),
    ]
    # a dtype ember lacks (4-bit floats): refused with TypeError
    cases.append(Case("st_dtype_f4", "st", one(dtype="F4", shape=(32,))))
    # the float8 dtypes ember has: float32 0..3's bytes read as float8
    for dtype, name in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")):
        raw = ember.tensor(np.frombuffer(f32, dtype=np.uint8).tolist(), dtype=ember.uint8)
        cases.append(Case(f"st_dtype_{dtype.lower()}", "st", one(dtype=dtype, shape=(16,)),
                          "load", _save({"w": raw.view(getattr(ember, name))})))
    # the unsigned dtypes ember has: float32 0..3's bytes read as uint16/32/64
    for dtype, np_dtype in (("U16", np.uint16), ("U32", np.uint32), ("U64", np.uint64)):
        words = np.frombuffer(f32, dtype=np_dtype)
        cases.append(Case(f"st_dtype_{dtype.lower()}", "st",
                          one(dtype=dtype, shape=words.shape), "load",
                          _save({"w": ember.tensor(words.tolist(), dtype=getattr(
                              ember, np.dtype(np_dtype).name))})))
    # complex64 is a dtype ember has: the pairs of floats load as 0+1j, 2+3j
    cases.append(Case("st_dtype_c64", "st", one(dtype="C64", shape=(2,)), "load",
                      _save({"w": ember.tensor([1j, 2 + 3j], dtype=ember.complex64)})))
    cases += _damage_cases("damaged_st", good, "st", [], None, flips=30, cuts=15)
    return cases


def repo_archive(extra: dict | None = None, symlinks: dict | None = None) -> bytes:
    """A GitHub-style zipball: ``owner-repo-abc/hubconf.py`` plus ``extra`` raw members."""
    members = [member("owner-repo-abc/", b"", external_attr=(stat.S_IFDIR | 0o755) << 16),
               member("owner-repo-abc/hubconf.py", b"dependencies = []\n")]
    for name, content in (extra or {}).items():
        members.append(content if isinstance(content, dict) else member(name, content))
    for name, target in (symlinks or {}).items():
        members.append(member(name, target.encode(), external_attr=(stat.S_IFLNK | 0o777) << 16))
    return raw_zip(members)


def _archive_cases() -> list[Case]:
    """Hub repository archives (``ember.hub``'s extraction)."""
    root = "owner-repo-abc/"
    stream = deflate_zeros(64 << 20)
    bomb = deflate_zeros(256 << 20)
    lie = member(root + "big.bin", b"", zipfile.ZIP_DEFLATED, data=stream, usize=16,
                 csize=len(stream), crc=zlib.crc32(b"\0" * 16))
    many = {f"{root}f{n}": b"" for n in range(100_001)}
    cases = [
        Case("hub_ok", "zip", repo_archive({root + "pkg/a.py": b"x = 1\n"}), "load"),
        Case("hub_dotdot", "zip", repo_archive({root + "../../evil.py": b"x"})),
        Case("hub_absolute", "zip", repo_archive({"/tmp/evil.py": b"x"})),
        Case("hub_backslash", "zip", repo_archive({root + "..\\..\\evil.py": b"x"})),
        Case("hub_drive", "zip", repo_archive({"C:\\evil.py": b"x"})),
        Case("hub_unc", "zip", repo_archive({"\\\\server\\share\\evil.py": b"x"})),
        Case("hub_nul_name", "zip", repo_archive({root + "a\0/../../evil.py": b"x"})),
        Case("hub_symlink_out", "zip", repo_archive(symlinks={root + "link": "/etc"})),
        Case("hub_symlink_then_write", "zip", repo_archive(
            {root + "link/evil.py": b"x"}, symlinks={root + "link": "../.."})),
        Case("hub_duplicate", "zip", repo_archive({root + "hubconf.py": b"import os\n"})),
        Case("hub_file_then_dir", "zip", repo_archive({root + "a": b"x", root + "a/b": b"y"})),
        Case("hub_device_file", "zip", repo_archive({root + "dev": member(
            root + "dev", b"", external_attr=(stat.S_IFCHR | 0o666) << 16)})),
        Case("hub_declared_bomb", "zip", repo_archive({root + "big": member(
            root + "big", b"", zipfile.ZIP_DEFLATED, data=b"\x03\x00", usize=1 << 40,
            csize=2, crc=0)})),
        Case("hub_deflate_bomb", "zip", repo_archive({root + "big": member(
            root + "big", b"", zipfile.ZIP_DEFLATED, data=bomb, usize=len(bomb) * 2000,
            csize=len(bomb), crc=0)})),
        Case("hub_small_claim", "zip", repo_archive({root + "big.bin": lie}), "either"),
        Case("hub_overlap", "zip", raw_zip([
            member(root + "hubconf.py", b"x = 1\n"), member(root + "a", b"x = 1\n"),
            member(root + "b", b"x = 1\n", at=1)])),
        Case("hub_nested_members", "zip", raw_zip([
            member(root + "hubconf.py", b"x = 1\n"),
            *nested_members([member(root + "hubconf.py", b"x = 1\n")], root + "a",
                            root + "b", b"y = 2\n")])),
        Case("hub_encrypted", "zip", repo_archive({root + "e": member(root + "e", b"x",
                                                                      flags=1)})),
        Case("hub_too_many_members", "zip", repo_archive(many)),
        Case("hub_deep_path", "zip", repo_archive({root + "d/" * 3000 + "f": b"x"})),
        Case("hub_truncated", "zip", repo_archive({root + "a.py": b"x" * 1000})[:-100]),
    ]
    return cases


def checkpoint_cases() -> list[Case]:
    """The corpus for ``ember.load`` and (when the package is installed) safetensors."""
    cases = (_exec_cases() + _state_cases() + _opcode_bomb_cases() + _decompression_cases()
             + _traversal_cases() + _damage_all())
    try:
        import safetensors  # noqa: F401
    except ImportError:
        return cases
    return cases + _safetensors_cases()


def archive_cases() -> list[Case]:
    """The corpus for the hub's repository-archive extraction."""
    return _archive_cases()


def write_cases(cases: list[Case], directory: str) -> str:
    """Write ``cases`` (and references) under ``directory``; returns the manifest's path."""
    os.makedirs(directory, exist_ok=True)
    manifest = []
    for n, case in enumerate(cases):
        path = os.path.join(directory, f"{n:04d}.{case.kind}")
        with open(path, "wb") as fh:
            fh.write(case.data)
        ref = None
        if case.reference is not None:
            ref = os.path.join(directory, f"{n:04d}.ref.pt")
            with open(ref, "wb") as fh:
                fh.write(case.reference)
        manifest.append({"name": case.name, "kind": case.kind, "path": path,
                         "expect": case.expect, "reference": ref,
                         "torch_slow": case.torch_slow})
    path = os.path.join(directory, "manifest.json")
    with open(path, "w") as fh:
        json.dump(manifest, fh)
    return path


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    for name, data in corpus().items():
        with open(os.path.join(HERE, name), "wb") as fh:
            fh.write(data)
    print(f"wrote {len(corpus())} files to {HERE}")


if __name__ == "__main__":
    main()
