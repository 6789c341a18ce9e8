"""ember.save / ember.load (PyTorch's checkpoint format), atomic writes, and zero-copy interop
(DLPack, NumPy)."""

import collections
import io
import os
import pickle
import warnings
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import _pickle

ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
              ember.float16, ember.float32, ember.float64]


def _sample(dtype, shape=(2, 3)):
    data = np.arange(int(np.prod(shape))).reshape(shape) % 5
    return ember.tensor(data.astype(dtype.np))


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def _same(a, b):
    assert a.dtype is b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_roundtrip_every_dtype(dtype):
    t = _sample(dtype)
    _same(_roundtrip(t), t)
    _same(_roundtrip(t[:, 1]), t[:, 1])
    _same(_roundtrip(t.t()), t.t())


def test_roundtrip_scalars_and_empty():
    for t in (ember.tensor(3.5), ember.zeros(0, 3), ember.ones(1, 1, 1, dtype=ember.int64)):
        _same(_roundtrip(t), t)


def test_paths_pathlike_and_file_objects(tmp_path):
    t = _sample(ember.float32)
    ember.save(t, str(tmp_path / "a.pt"))
    ember.save(t, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as fh:
        ember.save(t, fh)
    for name in ("a.pt", "b.pt", "c.pt"):
        _same(ember.load(tmp_path / name), t)
        _same(ember.load(str(tmp_path / name)), t)
        with open(tmp_path / name, "rb") as fh:
            _same(ember.load(fh), t)


def test_archive_layout_is_pytorchs(tmp_path):
    path = tmp_path / "model.pt"
    ember.save({"w": _sample(ember.float32), "b": _sample(ember.int64)}, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names[0] == "model/data.pkl"
        assert {"model/byteorder", "model/version", "model/.data/serialization_id",
                "model/data/0", "model/data/1", "model/.format_version",
                "model/.storage_alignment"} <= set(names)
        assert zf.read("model/byteorder") == b"little"
        assert zf.read("model/version") == b"3\n"
        assert len(zf.read("model/.data/serialization_id")) == 40
        raw = path.read_bytes()
        for info in zf.infolist():
            extra_len = int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30],
                                       "little")
            start = info.header_offset + 30 + len(info.filename) + extra_len
            assert start % 64 == 0, info.filename
            assert info.compress_type == zipfile.ZIP_STORED
        assert zf.read("model/data/0") == _sample(ember.float32).numpy().tobytes() or \
            zf.read("model/data/1") == _sample(ember.float32).numpy().tobytes()
    pickled = zipfile.ZipFile(path).read("model/data.pkl")
    assert b"ctorch._utils\n_rebuild_tensor_v2\n" in pickled
    assert b"ctorch\nFloatStorage\n" in pickled and b"ctorch\nLongStorage\n" in pickled
    assert b"ember" not in pickled


def test_nested_state_dict_with_metadata():
    sd = collections.OrderedDict(weight=_sample(ember.float32), bias=ember.zeros(3))
    sd._metadata = collections.OrderedDict({"": {"version": 1}, "fc": {"version": 2}})
    obj = {"model": sd, "epoch": 7, "lr": 0.5, "name": "run", "none": None, "flag": True,
           "list": [1, (2, 3.0), [ember.ones(2)]], "set": {1, 2}, "dtype": ember.float16,
           "device": ember.device("cpu"), "size": ember.Size([2, 3]), "bytes": b"\x00\xff"}
    out = _roundtrip(obj)
    assert isinstance(out["model"], collections.OrderedDict)
    assert list(out["model"]) == ["weight", "bias"]
    assert out["model"]._metadata == sd._metadata
    _same(out["model"]["weight"], sd["weight"])
    assert out["epoch"] == 7 and out["lr"] == 0.5 and out["name"] == "run"
    assert out["none"] is None and out["flag"] is True and out["set"] == {1, 2}
    assert out["list"][1] == (2, 3.0)
    _same(out["list"][2][0], ember.ones(2))
    assert out["dtype"] is ember.float16 and out["device"] == ember.device("cpu")
    assert out["size"] == (2, 3) and isinstance(out["size"], ember.Size)
    assert out["bytes"] == b"\x00\xff"


def test_optimizer_state_dict():
    state = {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.ones(2, 2),
                           "exp_avg_sq": ember.zeros(2, 2)}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]}
    out = _roundtrip(state)
    step = out["state"][0]["step"]
    assert step.dim() == 0 and step.dtype is ember.float32 and step.item() == 3.0
    assert out["param_groups"] == state["param_groups"]


def test_views_share_one_storage_and_memory():
    base = ember.arange(12.0).reshape(3, 4)
    view = base[1:, ::2]
    col = base[:, 1]
    buf = io.BytesIO()
    ember.save({"base": base, "view": view, "col": col}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert [n for n in zf.namelist() if "/data/" in n] == ["archive/data/0"]
    buf.seek(0)
    out = ember.load(buf)
    _same(out["view"], view)
    _same(out["col"], col)
    assert out["view"].stride() == view.stride()
    assert np.shares_memory(out["base"].numpy(), out["view"].numpy())
    out["base"][2, 2] = -1.0
    assert out["view"][1, 1].item() == -1.0 and out["col"].shape == (3,)


def test_different_arrays_get_their_own_storages():
    a, b = ember.ones(3), ember.ones(3)
    out = _roundtrip([a, b, a])
    assert not np.shares_memory(out[0].numpy(), out[1].numpy())
    assert out[0] is out[2]


def test_requires_grad_and_parameter():
    t = ember.ones(2, requires_grad=True)
    out = _roundtrip(t)
    assert out.requires_grad and out.is_leaf
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(ember.arange(3.0))
    q = _roundtrip({"p": p})["p"]
    assert isinstance(q, nn.Parameter) and q.requires_grad
    _same(q.detach(), p.detach())


def test_map_location_forms(testdev):
    t = _sample(ember.float32)
    for loc in ("testdev:0", testdev, {"cpu": "testdev:0"}):
        out = _roundtrip({"t": t}, map_location=loc)["t"]
        assert out.device == testdev
        np.testing.assert_array_equal(out.cpu().numpy(), t.numpy())
    seen = []

    def keep(storage, location):
        seen.append(location)
        return storage

    assert _roundtrip(t, map_location=keep).device == ember.device("cpu") and seen == ["cpu"]
    out = _roundtrip(t, map_location=lambda s, loc: s.to(testdev))
    assert out.device == testdev
    assert _roundtrip(t, map_location=lambda s, loc: None).device == ember.device("cpu")


def test_saved_device_is_restored(testdev):
    t = _sample(ember.int32).to(testdev)
    out = _roundtrip(t)
    assert out.device == testdev and out.dtype is ember.int32
    np.testing.assert_array_equal(out.cpu().numpy(), t.cpu().numpy())
    assert _roundtrip(t, map_location="cpu").device == ember.device("cpu")


def test_cuda_checkpoint_without_gpu_names_map_location():
    buf = io.BytesIO()
    pickler = _pickle.TorchPickler(buf, 2)
    pickler.dump(ember.ones(2))
    data = buf.getvalue().replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    out = io.BytesIO()
    from ember.serialization import _zip

    _zip.write_archive(out, "archive", data, pickler.storages)
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    out.seek(0)
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(out)
    out.seek(0)
    assert ember.load(out, map_location={"cuda:0": "cpu"}).device == ember.device("cpu")


def test_mmap_loading(tmp_path):
    path = tmp_path / "m.pt"
    sd = {"a": ember.arange(1000.0), "b": _sample(ember.int16)}
    ember.save(sd, path)
    out = ember.load(path, mmap=True)
    _same(out["a"], sd["a"])
    _same(out["b"], sd["b"])
    out["a"][0] = 5.0  # copy-on-write: the file is unchanged
    assert ember.load(path)["a"][0].item() == 0.0
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_legacy_format_roundtrip(tmp_path):
    base = ember.arange(6.0)
    obj = {"a": base, "v": base[2:], "i": _sample(ember.int8)}
    path = tmp_path / "legacy.pt"
    ember.save(obj, path, _use_new_zipfile_serialization=False)
    assert not path.read_bytes().startswith(b"PK")
    out = ember.load(path)
    _same(out["v"], obj["v"])
    _same(out["i"], obj["i"])
    assert np.shares_memory(out["a"].numpy(), out["v"].numpy())
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        ember.load(path, mmap=True)


# -- safety ----------------------------------------------------------------------------------

def _zip_with_pickle(data: bytes) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("func", [b"os\nsystem", b"builtins\nexec", b"posix\nsystem",
                                  b"subprocess\ncall"])
def test_malicious_global_never_runs(tmp_path, monkeypatch, func):
    monkeypatch.chdir(tmp_path)
    payload = ("touch ember_marker" if b"system" in func or b"call" in func
               else "open('ember_marker', 'w').write('x')")
    data = b"\x80\x02c" + func + b"\nX" + len(payload).to_bytes(4, "little") + \
        payload.encode() + b"\x85R."
    module, name = func.decode().split("\n")
    # PyTorch's wording: a blocked module's global, or one not allowed (builtins. left out)
    shown = name if module == "builtins" else f"{module}.{name}"
    expected = (rf"unsupported GLOBAL {module}.{name} whose module {module} is blocked"
                if module in ("os", "posix") else
                rf"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
                "Please use `ember.serialization")
    with pytest.raises(pickle.UnpicklingError, match=rf"(?s)Weights only load failed.*{expected}"):
        ember.load(_zip_with_pickle(data))
    assert not (tmp_path / "ember_marker").exists()


def test_weights_only_false_is_explicit():
    import fractions

    obj = {"f": fractions.Fraction(1, 3), "t": ember.ones(2)}
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL fractions.Fraction"):
        ember.load(buf)
    buf.seek(0)
    with warnings.catch_warnings():  # as torch.load: asking for it explicitly is enough
        warnings.simplefilter("error")
        out = ember.load(buf, weights_only=False)
    assert out["f"] == fractions.Fraction(1, 3)
    _same(out["t"], ember.ones(2))
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        ember.load(buf, pickle_module=pickle)


def test_bytearray_and_encode_are_restricted():
    with pytest.raises(pickle.UnpicklingError, match="bytearray"):
        ember.load(_zip_with_pickle(b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R."))
    with pytest.raises(pickle.UnpicklingError, match="_codecs.encode"):
        ember.load(_zip_with_pickle(b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x04\x00"
                                    b"\x00\x00zlib\x86R."))


# -- atomic writes -------------------------------------------------------------------------

class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("boom while pickling")


def test_failed_save_leaves_no_file(tmp_path):
    target = tmp_path / "ckpt.pt"
    with pytest.raises(RuntimeError, match="boom"):
        ember.save({"a": ember.ones(2), "bad": _Unpicklable()}, target)
    assert os.listdir(tmp_path) == []
    ember.save({"a": ember.ones(2)}, target)
    with pytest.raises(RuntimeError, match="boom"):
        ember.save({"bad": _Unpicklable()}, target)
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    _same(ember.load(target)["a"], ember.ones(2))


def test_failed_write_midway_leaves_no_file(tmp_path, monkeypatch):
    from ember.serialization import _zip

    def broken(self, name, data):
        raise OSError("disk full")

    monkeypatch.setattr(_zip.ZipWriter, "write_record", broken)
    with pytest.raises(OSError, match="disk full"):
        ember.save(ember.ones(3), tmp_path / "x.pt")
    assert os.listdir(tmp_path) == []


# -- interop ---------------------------------------------------------------------------------

def test_numpy_interop_is_zero_copy():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    assert np.shares_memory(np.asarray(t), a)
    assert np.shares_memory(ember.as_tensor(a).numpy(), a)
    a[0, 0] = 9.0
    assert t[0, 0].item() == 9.0
    e = ember.ones(4)
    np.asarray(e)[1] = 3.0
    assert e[1].item() == 3.0


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dlpack_with_numpy_shares_memory(dtype):
    t = _sample(dtype)
    assert t.__dlpack_device__() == (1, 0)
    arr = np.from_dlpack(t)
    assert arr.dtype == dtype.np and np.shares_memory(arr, t.numpy())
    back = ember.from_dlpack(arr)
    assert back.dtype is dtype and np.shares_memory(back.numpy(), arr)
    src = np.ones(3, dtype=dtype.np)
    e = ember.from_dlpack(src)
    src[1] = 0
    assert not e[1].item()
    assert ember.from_dlpack(src.__dlpack__()).shape == (3,)


def test_dlpack_refuses_tensors_requiring_grad():
    with pytest.raises(RuntimeError, match="require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    assert ember.from_dlpack(ember.ones(2)).shape == (2,)


# -- hostile pickles: state, calls, opcodes ----------------------------------------------------

def _maker():
    """tests/core/data/make_bad_checkpoints.py: its pickle assembler and zip writer."""
    import importlib.util
    import sys

    path = os.path.join(os.path.dirname(__file__), "data", "make_bad_checkpoints.py")
    spec = importlib.util.spec_from_file_location("ember_test_data_make_bad_checkpoints", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


M = _maker()


def _load_pickle(body: bytes, proto: int = 2, **kwargs):
    return ember.load(io.BytesIO(M._checkpoint(M.pkl(body, proto))), **kwargs)


def _param_with_state(*pairs):
    return M.call(M.glob("torch._utils", "_rebuild_parameter_with_state"), M.tensor(),
                  pickle.NEWTRUE, M.odict(), M.dct(*pairs))


def test_pickled_state_adds_attributes_but_never_replaces_internals():
    nn = pytest.importorskip("ember.nn")
    hostile = [(M.text(k), M.text("pwned")) for k in
               ("_data", "_grad", "_vc", "_base", "_extra", "_device", "grad_fn", "data",
                "__class__", "_backward_hooks")]
    p = _load_pickle(_param_with_state(*hostile, (M.text("tag"), M.text("kept"))))
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.grad is None
    assert isinstance(p._data, np.ndarray) and p.tag == "kept"
    np.testing.assert_array_equal(p.detach().numpy(), [0, 1, 2, 3])
    assert set(vars(p)) == {"_vc", "tag"}
    (p * 2).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2, 2, 2, 2])


def test_pickled_requires_grad_is_checked_as_pytorch_checks_it():
    assert not _load_pickle(_param_with_state((M.text("requires_grad"),
                                               pickle.NEWFALSE))).requires_grad
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        _load_pickle(_param_with_state((M.text("requires_grad"), M.text("yes"))))
    frozen = M.call(M.glob("torch._utils", "_rebuild_parameter"), M.tensor(), pickle.NEWTRUE,
                    M.odict()) + M.tup(pickle.NEWFALSE, pickle.NONE, M.odict()) + pickle.BUILD
    assert not _load_pickle(frozen).requires_grad


@pytest.mark.parametrize("target", [
    M.glob("torch", "float32"), M.glob("torch", "FloatStorage"), M.glob("torch", "Tensor"),
    M.glob("torch._utils", "_rebuild_tensor_v2"), M.call(M.glob("torch", "device"),
                                                         M.text("cpu")),
])
def test_build_on_shared_objects_is_refused(target):
    state = M.tup(pickle.NONE, M.dct((M.text("dtype"), M.glob("torch", "int64")),
                                     (M.text("type"), M.text("cuda")),
                                     (M.text("numpy"), pickle.NONE)))
    with pytest.raises(pickle.UnpicklingError, match="Can only build"):
        _load_pickle(target + state + pickle.BUILD)
    out = _load_pickle(M.tensor())  # nothing process-wide was changed
    assert out.dtype is ember.float32 and out.device.type == "cpu"
    assert _pickle.ALLOWED_GLOBALS["torch.FloatStorage"].dtype is ember.float32
    assert ember.Tensor.numpy is not None


def test_only_rebuild_functions_and_containers_are_called():
    tensor_class = M.glob("torch", "Tensor")
    with pytest.raises(pickle.UnpicklingError, match="unrecognized function"):
        _load_pickle(M.call(tensor_class, M.num(10**5), M.num(10**5)))
    with pytest.raises(pickle.UnpicklingError, match="Can only create new object"):
        _load_pickle(tensor_class + M.tup(M.num(10**5)) + pickle.NEWOBJ)
    with pytest.raises(pickle.UnpicklingError, match="Can only append to lists"):
        _load_pickle(M.odict() + M.num(1) + pickle.APPEND)


@pytest.mark.parametrize("noop", [pickle.MARK + pickle.POP, pickle.NONE + pickle.POP,
                                  pickle.MARK + pickle.POP_MARK, pickle.NONE + pickle.DUP,
                                  pickle.EMPTY_LIST + pickle.MARK + pickle.APPENDS,
                                  pickle.NONE + pickle.BINPUT + b"\0" + pickle.BINPUT + b"\1",
                                  pickle.FRAME + bytes(8)])
def test_noop_opcodes_are_refused_at_the_first_one(noop):
    # what follows the no-op would fail differently (0xff is no opcode): the error must be
    # about the no-op, so nothing after it was read
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand") as info:
        _load_pickle(noop + b"\xff" * 1000, proto=4)
    assert "not a pickle opcode" not in str(info.value)


def test_opcode_limits():
    with pytest.raises(pickle.UnpicklingError, match="nesting is too deep"):
        _load_pickle(pickle.MARK * 20_000 + pickle.NONE)
    with pytest.raises(pickle.UnpicklingError, match="memo index"):
        _load_pickle(pickle.EMPTY_LIST + pickle.LONG_BINPUT + b"\xf0\xff\xff\xff")
    with pytest.raises(pickle.UnpicklingError, match="INST|calls a class"):
        _load_pickle(pickle.MARK + b"ibuiltins\nlist\n")
    with pytest.raises(pickle.UnpicklingError, match="1099511627776 bytes declared"):
        _load_pickle(pickle.BYTEARRAY8 + (1 << 40).to_bytes(8, "little"), proto=5)
    with pytest.raises(EOFError):  # a pickle that ends before its STOP, as in PyTorch
        ember.load(io.BytesIO(M._checkpoint(M.pkl(pickle.NONE)[:-1])))


@pytest.mark.parametrize("protocol", [1, 2, 3, 4, 5])
def test_every_pickle_protocol_round_trips(protocol):
    sd = collections.OrderedDict(w=_sample(ember.float32))
    sd._metadata = {"": {"version": 1}}
    obj = {"sd": sd, "set": {1, 2}, "frozen": frozenset({3}), "bytes": b"\x00\xff",
           "tuple": (1, 2.5, "x", None, True), "big": 2**70, "list": list(range(2500)),
           "complex": 1 + 2j, "slice": slice(1, 5), "bytearrays": [bytearray(b"ab"),
                                                                  bytearray()]}
    buf = io.BytesIO()
    ember.save(obj, buf, pickle_protocol=protocol)
    buf.seek(0)
    out = ember.load(buf)
    _same(out["sd"]["w"], sd["w"])
    assert out["sd"]._metadata == sd._metadata
    assert {k: v for k, v in out.items() if k != "sd"} == {k: v for k, v in obj.items()
                                                           if k != "sd"}


def test_legacy_format_is_checked_like_the_zip_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bomb = M.pkl(pickle.NONE + (pickle.NONE + pickle.POP) * 100_000 + pickle.NONE)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand"):
        ember.load(io.BytesIO(M._legacy_file(main=bomb)))
    for part in ("magic", "sys_info", "main", "keys"):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL os.system whose module os "
                                                         "is blocked"):
            ember.load(io.BytesIO(M._legacy_file(**{part: M.pkl(M.shell("os", "system"))})))
    assert os.listdir(tmp_path) == []
    t = _sample(ember.float32)
    ember.save({"t": t, "v": t[1]}, tmp_path / "l.pt", _use_new_zipfile_serialization=False)
    out = ember.load(tmp_path / "l.pt", weights_only=False)
    _same(out["v"], t[1])
    os.remove(tmp_path / "l.pt")


# -- checksums, sizes, compression ---------------------------------------------------------

@pytest.mark.parametrize("numel", [1000, 1 << 19, (3 << 20) + 5])  # 1, 1 or 4 CRC pieces
def test_bit_flip_in_tensor_data_is_refused(tmp_path, numel):
    path = tmp_path / "c.pt"
    ember.save({"w": ember.arange(float(numel))}, path)
    raw = bytearray(path.read_bytes())
    lo, hi = M.storage_ranges(bytes(raw))[0]
    raw[(lo + hi) // 2] ^= 0x10
    path.write_bytes(raw)
    for kwargs in ({}, {"mmap": True}):
        with pytest.raises(RuntimeError, match="CRC-32 mismatch"):
            ember.load(path, **kwargs)
        out = ember.load(path, check_crc32=False, **kwargs)["w"]  # the documented opt-out
        assert (out.numpy() != np.arange(numel, dtype=np.float32)).sum() == 1


def test_crc32_combine_matches_zlib():
    import zlib

    from ember.serialization._zip import CRC_PIECE, crc32_combine

    rng = np.random.default_rng(0)
    for la, lb in [(0, 0), (5, 0), (0, 7), (1000, 777), (3, CRC_PIECE), (CRC_PIECE, 1)]:
        a, b = rng.bytes(la), rng.bytes(lb)
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), lb) == zlib.crc32(a + b)


def test_recorded_crc_of_zero_means_none_was_computed():
    # torch.save under torch.serialization.set_crc32_options(False) records 0 for every CRC
    records = [("archive/data.pkl", M.pkl(M.dct((M.text("w"), M.tensor())))),
               ("archive/byteorder", b"little"), ("archive/data/0", M.ARANGE4)]
    raw = M.raw_zip([M.member(name, data, crc=0) for name, data in records])
    np.testing.assert_array_equal(ember.load(io.BytesIO(raw))["w"].numpy(), [0, 1, 2, 3])


def test_deflated_records_load_and_cannot_expand_beyond_their_size():
    pkl4 = M.pkl(M.dct((M.text("w"), M.tensor())))
    head = [M.member("archive/data.pkl", pkl4, zipfile.ZIP_DEFLATED),
            M.member("archive/byteorder", b"little")]
    ok = M.raw_zip(head + [M.member("archive/data/0", M.ARANGE4, zipfile.ZIP_DEFLATED)])
    np.testing.assert_array_equal(ember.load(io.BytesIO(ok))["w"].numpy(), [0, 1, 2, 3])
    stream = M.deflate_zeros(8 << 20)
    small_claim = M.member("archive/data/0", b"", zipfile.ZIP_DEFLATED, data=stream,
                           usize=16, csize=len(stream), crc=0)
    with pytest.raises(RuntimeError, match="inflates to more than its declared 16 bytes"):
        ember.load(io.BytesIO(M.raw_zip(head + [small_claim])))
    huge = 1 << 40
    huge_pkl = M.pkl(M.dct((M.text("w"), M.tensor(numel=huge, size=(huge,)))))
    huge_claim = M.member("archive/data/0", b"", zipfile.ZIP_DEFLATED, data=stream,
                          usize=4 * huge, csize=len(stream), crc=0)
    with pytest.raises(RuntimeError, match="more than deflate can produce"):
        ember.load(io.BytesIO(M.raw_zip([M.member("archive/data.pkl", huge_pkl), head[1],
                                         huge_claim])))


PKL4 = M.pkl(M.dct((M.text("w"), M.tensor())))


@pytest.mark.parametrize("members, message", [  # after data.pkl: at=1 is data/0's header
    ([M.member("archive/data/0", M.ARANGE4), M.member("archive/data/1", M.ARANGE4, at=1)],
     "another name"),
    (M.nested_members([M.member("archive/data.pkl", PKL4)], "archive/data/0",
                      "archive/data/1", M.ARANGE4), "'archive/data/0' overlaps"),
    ([M.member("archive/data/0", M.ARANGE4, csize=10**6, usize=10**6)], "overlaps the central"),
    ([M.member("archive/data/0", M.ARANGE4, flags=1)], "unsupported encryption"),
    ([M.member("archive/data/0", M.ARANGE4, method=zipfile.ZIP_BZIP2)], "compression method"),
    ([M.member("archive/../evil", b"x")], "unsafe record name"),
])
def test_zip_structure_is_checked_before_reading(members, message):
    with pytest.raises(RuntimeError, match=message):
        ember.load(io.BytesIO(M.raw_zip([M.member("archive/data.pkl", PKL4), *members])))


@pytest.mark.parity
def test_pytorch_files_with_state_or_without_checksums_load(tmp_path):
    torch = pytest.importorskip("torch")
    nn = pytest.importorskip("ember.nn")
    p = torch.nn.Parameter(torch.arange(4.0))
    p.tag = "kept"  # saved through _rebuild_parameter_with_state
    torch.save({"p": p}, tmp_path / "s.pt")
    q = ember.load(tmp_path / "s.pt")["p"]
    assert isinstance(q, nn.Parameter) and q.tag == "kept" and q.requires_grad
    torch.serialization.set_crc32_options(False)
    try:
        torch.save({"w": torch.arange(6.0)}, tmp_path / "n.pt")
    finally:
        torch.serialization.set_crc32_options(True)
    np.testing.assert_array_equal(ember.load(tmp_path / "n.pt")["w"].numpy(), np.arange(6.0))


def test_loaded_views_report_their_storage_and_offset_as_pytorchs():
    """Tensors loaded from one storage report it whole (``untyped_storage()``) and their
    place in it (``storage_offset()``), as PyTorch's do; they still share its memory."""
    import io

    base = ember.arange(12.0)
    buf = io.BytesIO()
    ember.save({"b": base, "v": base[3:9].view(2, 3), "w": base[::2]}, buf)
    buf.seek(0)
    d = ember.load(buf)
    assert (d["v"].storage_offset(), d["v"].stride()) == (3, (3, 1))
    assert (d["w"].storage_offset(), d["w"].stride()) == (0, (2,))
    assert d["b"].storage_offset() == 0
    assert d["v"].untyped_storage().nbytes() == d["b"].untyped_storage().nbytes() == 48
    assert d["v"].untyped_storage().data_ptr() == d["b"].untyped_storage().data_ptr()
    d["b"][4] = 100.0
    assert d["v"][0, 1].item() == 100.0 and d["w"][2].item() == 100.0
    buf = io.BytesIO()
    ember.save(base[3:9].view(2, 3), buf)  # a lone view saves its whole storage, as PyTorch's
    buf.seek(0)
    x = ember.load(buf)
    assert (x.storage_offset(), x.untyped_storage().nbytes()) == (3, 48)
    assert x.tolist() == [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]
    x.add_(1)  # writes stay inside the view
    assert x.untyped_storage().nbytes() == 48 and x[0, 0].item() == 4.0
