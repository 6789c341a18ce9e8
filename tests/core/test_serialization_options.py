"""``torch.serialization``'s options and helpers beyond save/load: ``skip_data``, the CRC-32
and mmap options, ``ember.utils.serialization.config`` (storage alignment, the default
``mmap``), ``register_package``/``location_tag``, the device validators and the module's
constants. PyTorch side by side: tests/parity/test_serialization_surface_parity.py."""

import io
import mmap
import os
import threading
import warnings
import zipfile

import numpy as np
import pytest

import ember
import ember.serialization as S
from ember.serialization import _location
from ember.utils.serialization import config


@pytest.fixture(autouse=True)
def _own_options():
    """Each test leaves the process-wide options and the package registry as it found them."""
    saved = (config.save.compute_crc32, config.save.storage_alignment, config.load.mmap,
             config.load.mmap_flags, list(_location.PACKAGES))
    yield
    (config.save.compute_crc32, config.save.storage_alignment, config.load.mmap,
     config.load.mmap_flags, _location.PACKAGES[:]) = saved


def _records(path_or_buf) -> dict:
    with zipfile.ZipFile(path_or_buf) as z:
        return {info.filename.split("/", 1)[1]: info for info in z.infolist()}


def _data_offsets(path) -> list:
    """Where each storage record's bytes start in the file."""
    with open(path, "rb") as fh, zipfile.ZipFile(fh) as z:
        starts = []
        for info in z.infolist():
            if "/data/" in info.filename:
                fh.seek(info.header_offset + 26)
                name_len, extra_len = np.frombuffer(fh.read(4), "<u2")
                starts.append(info.header_offset + 30 + int(name_len) + int(extra_len))
        return starts


# -- skip_data --------------------------------------------------------------------------------

def test_skip_data_saves_the_layout_without_the_bytes(tmp_path):
    path = tmp_path / "skip.pt"
    state = {"w": ember.arange(1000.0), "b": ember.arange(6, dtype=ember.int64).view(2, 3)}
    with S.skip_data():
        ember.save(state, path)
    records = _records(path)
    assert records["data/0"].file_size == 4000 and records["data/1"].file_size == 48
    assert records["data/0"].CRC == 0 and records["data/1"].CRC == 0
    with open(path, "rb") as fh:  # a hole (zeros) where the bytes would be
        start = _data_offsets(path)[0]
        fh.seek(start)
        assert fh.read(4000) == bytes(4000)
    full = tmp_path / "full.pt"
    ember.save(state, full)
    assert os.path.getsize(path) == os.path.getsize(full)  # the same layout, to the byte
    assert _data_offsets(path) == _data_offsets(full)
    out = ember.load(path)  # the holes read as zeros
    assert out["w"].tolist() == [0.0] * 1000 and out["b"].shape == (2, 3)


def test_skip_data_into_a_stream_and_load_allocates_without_reading(tmp_path):
    buf = io.BytesIO()
    with S.skip_data():
        ember.save(ember.ones(5), buf)
    assert _records(io.BytesIO(buf.getvalue()))["data/0"].file_size == 20
    path = tmp_path / "real.pt"
    ember.save({"x": ember.arange(5.0)}, path)
    with open(path, "r+b") as fh:  # damage the data: a load that reads it would fail its CRC
        fh.seek(_data_offsets(path)[0])
        fh.write(b"\xff" * 20)
    with pytest.raises(RuntimeError, match="CRC"):
        ember.load(path)
    with S.skip_data():
        out = ember.load(path)  # nothing read, so nothing checked
    assert out["x"].shape == (5,) and out["x"].dtype is ember.float32


def test_skip_data_is_per_thread_and_refuses_the_legacy_format(tmp_path):
    seen = []

    def other():
        buf = io.BytesIO()
        ember.save(ember.arange(3.0), buf)  # this thread is not skipping
        buf.seek(0)
        seen.append(ember.load(buf).tolist())

    with S.skip_data(materialize_fake_tensors=True):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        with pytest.raises(RuntimeError, match="Cannot use skip_data=True with "
                                               "_use_new_zipfile_serialization=False"):
            ember.save(ember.ones(2), tmp_path / "x.pt", _use_new_zipfile_serialization=False)
    assert seen == [[0.0, 1.0, 2.0]]
    assert not (tmp_path / "x.pt").exists()
    buf = io.BytesIO()
    ember.save(ember.arange(3.0), buf)  # the block is over
    buf.seek(0)
    assert ember.load(buf).tolist() == [0.0, 1.0, 2.0]


# -- CRC-32 and alignment options -------------------------------------------------------------

def test_crc32_options(tmp_path):
    assert S.get_crc32_options() is True
    path = tmp_path / "nocrc.pt"
    S.set_crc32_options(False)
    assert S.get_crc32_options() is False and config.save.compute_crc32 is False
    ember.save({"a": ember.arange(4.0), "big": ember.ones(300_000)}, path)
    S.set_crc32_options(True)
    assert {info.CRC for info in _records(path).values()} == {0}
    out = ember.load(path)  # a zero CRC is not checked
    assert out["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and float(out["big"].sum()) == 300_000
    ember.save({"a": ember.arange(4.0)}, path)
    assert all(info.CRC for info in _records(path).values())


@pytest.mark.parametrize("alignment", [1, 8, 4096])
def test_storage_alignment(alignment, tmp_path):
    config.save.storage_alignment = alignment
    path = tmp_path / "aligned.pt"
    state = {"a": ember.arange(7.0), "b": ember.arange(3, dtype=ember.int16), "c": ember.ones(5)}
    ember.save(state, path)
    assert all(start % alignment == 0 for start in _data_offsets(path))
    assert _records(path)[".storage_alignment"].file_size == len(str(alignment))
    with zipfile.ZipFile(path) as z:
        assert z.read("aligned/.storage_alignment") == str(alignment).encode()
    out = ember.load(path, mmap=True)
    assert {k: v.tolist() for k, v in out.items()} == {k: v.tolist() for k, v in state.items()}


@pytest.mark.parametrize("bad", [0, 48, -64, 64.0, True])
def test_storage_alignment_must_be_a_power_of_two(bad, tmp_path):
    config.save.storage_alignment = bad
    with pytest.raises(ValueError, match="storage_alignment must be a positive power of two"):
        ember.save(ember.ones(2), tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_disable_byteorder_record():
    buf = io.BytesIO()
    ember.save(ember.arange(3, dtype=ember.int32), buf, _disable_byteorder_record=True)
    assert "byteorder" not in _records(io.BytesIO(buf.getvalue()))
    buf.seek(0)
    assert ember.load(buf).tolist() == [0, 1, 2]  # little-endian assumed


# -- mmap options -----------------------------------------------------------------------------

def test_default_mmap_options_private_and_shared(tmp_path):
    path = tmp_path / "m.pt"
    ember.save(ember.arange(4.0, device="cpu"), path)  # a CPU storage maps the file
    assert S.get_default_mmap_options() == mmap.MAP_PRIVATE == S.MAP_PRIVATE
    private = ember.load(path, mmap=True)
    private[0] = 10.0  # copy-on-write: the file keeps its numbers
    assert ember.load(path).tolist() == [0.0, 1.0, 2.0, 3.0]
    with S.set_default_mmap_options(mmap.MAP_SHARED):
        assert S.get_default_mmap_options() == mmap.MAP_SHARED == S.MAP_SHARED
        shared = ember.load(path, mmap=True, check_crc32=False)
        shared[1] = 42.0
        del shared
    assert S.get_default_mmap_options() == mmap.MAP_PRIVATE  # the block is over
    assert ember.load(path, check_crc32=False).tolist() == [0.0, 42.0, 2.0, 3.0]
    S.set_default_mmap_options(mmap.MAP_SHARED)  # a plain call keeps the setting
    assert config.load.mmap_flags == mmap.MAP_SHARED
    with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, "
                                         "but got 3"):
        S.set_default_mmap_options(3)


def test_config_load_mmap_is_the_default_of_mmap_none(tmp_path):
    path = tmp_path / "m.pt"
    ember.save(ember.arange(3.0), path)
    config.load.mmap = True
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        ember.load(io.BytesIO(path.read_bytes()))  # mmap=None now means mmap=True
    assert ember.load(io.BytesIO(path.read_bytes()), mmap=False).tolist() == [0.0, 1.0, 2.0]
    assert ember.load(path).tolist() == [0.0, 1.0, 2.0]


def test_config_module_defaults():
    import ember.utils.serialization as us

    assert us.config is config
    assert (config.load.mmap, config.load.endianness, config.load.mmap_flags,
            config.load.calculate_storage_offsets) == (False, None, mmap.MAP_PRIVATE, False)
    assert (config.save.compute_crc32, config.save.use_pinned_memory_for_d2h,
            config.save.storage_alignment) == (True, False, 64)
    S.set_default_load_endianness(S.LoadEndianness.BIG)
    try:
        assert config.load.endianness is S.LoadEndianness.BIG
    finally:
        S.set_default_load_endianness(None)


# -- packages: taggers and deserializers ------------------------------------------------------

def test_register_package_tags_saves_and_places_loads():
    calls = []

    def tag(storage):
        calls.append(("tag", storage.device.type))
        return "vault" if storage.device.type == "cpu" else None

    def place(storage, location):
        calls.append(("place", location))
        if location == "vault":
            return storage
        return None

    S.register_package(5, tag, place)
    buf = io.BytesIO()
    ember.save({"x": ember.arange(3.0, device="cpu")}, buf)
    assert b"vault" in zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("archive/data.pkl")
    buf.seek(0)
    assert ember.load(buf)["x"].tolist() == [0.0, 1.0, 2.0]
    assert calls == [("tag", "cpu"), ("place", "vault")]
    assert S.location_tag(ember.ones(1, device="cpu").untyped_storage()) == "vault"
    _location.PACKAGES[:] = [p for p in _location.PACKAGES if p[1] is not tag]
    buf.seek(0)  # without the package, the location is unknown
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location of "
                                           r"ember.storage.UntypedStorage \(tagged with vault\)"):
        ember.load(buf)
    buf.seek(0)
    assert ember.load(buf, map_location="cpu")["x"].tolist() == [0.0, 1.0, 2.0]


def test_packages_run_in_priority_order(testdev):
    order = []
    S.register_package(30, lambda s: order.append(30), lambda s, loc: order.append(30))
    S.register_package(1, lambda s: order.append(1), lambda s, loc: order.append(1))
    assert [p[0] for p in _location.PACKAGES] == [1, 10, 30]
    # Ember's own pair (10) answers for the devices it has: later packages are not asked
    assert S.location_tag(ember.ones(1, device="cpu").untyped_storage()) == "cpu"
    assert order == [1]
    buf = io.BytesIO()
    ember.save(ember.ones(2).to(testdev), buf)
    buf.seek(0)
    out = ember.load(buf)
    assert out.device == testdev and order == [1, 1, 1]
    assert S.default_restore_location is _location.restore_location


def test_a_package_for_a_device_ember_lacks():
    def ipu_deserialize(storage, location):
        if location.startswith("ipu"):
            return storage  # this package keeps them on the host
        return None

    data = _with_location(ember.arange(2.0), "ipu:0")
    with pytest.raises(RuntimeError, match="The IPU device module is not registered"):
        ember.load(io.BytesIO(data))
    S.register_package(11, lambda s: None, ipu_deserialize)
    assert ember.load(io.BytesIO(data)).tolist() == [0.0, 1.0]


def _with_location(t, location: str) -> bytes:
    buf = io.BytesIO()
    S.register_package(0, lambda s: location, lambda s, loc: None)
    try:
        ember.save(t, buf)
    finally:
        del _location.PACKAGES[0]
    return buf.getvalue()


def test_location_tag_of_unknown_objects():
    _location.PACKAGES[:] = [(10, lambda s: None, lambda s, loc: None)]
    with pytest.raises(RuntimeError, match="don't know how to determine data location of "
                                           "ember.UntypedStorage"):
        S.location_tag(ember.ones(1).untyped_storage())


# -- helpers and constants --------------------------------------------------------------------

def test_validate_devices(testdev):
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device "
                                           r"but ember.cuda.is_available\(\) is False"):
        S.validate_cuda_device("cuda:0")
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        S.validate_cuda_device("cpu")
    assert S.validate_hpu_device("hpu:3") == 3 and S.validate_hpu_device("hpu") == 0


class _Module:
    __name__ = "fake"

    def __init__(self, version):
        self.__version__ = version


def test_check_module_version_greater_or_equal():
    check = S.check_module_version_greater_or_equal
    assert check(_Module("2.13.0"), (2, 13)) and check(_Module("2.13.0"), (2, 12, 5))
    assert not check(_Module("2.13.0"), (2, 14)) and not check(_Module("1.9"), (1, 10))
    assert check(_Module("1.2.3"), ("1", "2"))  # fields cast to the tuple's types
    with pytest.raises(RuntimeError, match=r"'fake' module version string is malformed "
                                           r"'1.x.0' and cannot be compared with tuple \(1, 2\)"):
        check(_Module("1.x.0"), (1, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert check(_Module("1"), (1, 2), error_if_malformed=False)
    assert "but continuing assuming that requirement is met" in str(caught[0].message)


def test_mkdtemp_and_storage_types():
    with S.mkdtemp() as path:
        assert os.path.isdir(path)
        open(os.path.join(path, "f"), "w").close()
    assert not os.path.exists(path)
    assert S.normalize_storage_type(ember.FloatStorage) is ember.FloatStorage
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage is deprecated
        assert S.storage_to_tensor_type(ember.FloatStorage(2)) is ember.FloatTensor
        assert S.storage_to_tensor_type(ember.ones(1, dtype=ember.int64).storage()) is \
            ember.LongTensor


def test_constants_and_names():
    assert S.MAGIC_NUMBER == 0x1950A86A20F9469CFC6C and S.PROTOCOL_VERSION == 1001
    assert (S.LONG_SIZE, S.INT_SIZE, S.SHORT_SIZE, S.STORAGE_KEY_SEPARATOR) == (8, 4, 2, ",")
    assert issubclass(S.SourceChangeWarning, Warning)
    assert S.STORAGE is S.Storage and S.MAP_LOCATION is not None and S.FileLike is not None
    for name in ("SourceChangeWarning", "mkdtemp", "register_package", "location_tag",
                 "check_module_version_greater_or_equal", "validate_cuda_device",
                 "validate_hpu_device", "normalize_storage_type", "storage_to_tensor_type",
                 "get_crc32_options", "set_crc32_options", "get_default_mmap_options",
                 "set_default_mmap_options", "skip_data"):
        assert name in S.__all__ and hasattr(S, name)
