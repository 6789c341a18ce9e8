"""``ember.serialization``'s surface side by side with ``torch.serialization``: the same
checkpoint loaded by both, the same errors (types and messages, with Ember's names) for safe
globals, unsafe globals, ``map_location``, ``mmap``, ``weights_only`` and byte order."""

import argparse
import collections
import functools
import io
import os
import pickle
import warnings
import zipfile

import numpy as np
import pytest

import ember
import ember.serialization as S

torch = pytest.importorskip("torch")
enn = pytest.importorskip("ember.nn")
tnn = torch.nn

pytestmark = pytest.mark.parity

TORCH_26 = ("In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
            "`torch.load` from `False` to `True`. ")


@pytest.fixture(autouse=True)
def _own_safe_globals():
    """Ember's list starts empty and is restored; PyTorch's is only changed in blocks."""
    saved = S.get_safe_globals()
    S.clear_safe_globals()
    torch_saved = set(torch.serialization.get_safe_globals())
    yield
    S.clear_safe_globals()
    S.add_safe_globals(saved)
    assert set(torch.serialization.get_safe_globals()) == torch_saved


def _normalized(message: str) -> str:
    """A ``torch.load`` message in Ember's words (its names, no PyTorch history, no link)."""
    message = message.replace(TORCH_26, "").split("\n\nCheck the documentation")[0]
    for theirs, ours in (("torch.serialization", "ember.serialization"),
                         ("`torch.load`", "`ember.load`"), ("torch.load", "ember.load"),
                         ("torch.save", "ember.save"), ("torch.device", "ember.device"),
                         ("torch.cuda", "ember.cuda"),
                         ("torch.storage.UntypedStorage", "ember.storage.UntypedStorage")):
        message = message.replace(theirs, ours)
    return message


def _ours(message: str) -> str:
    return message.split("\n\nCheck the documentation")[0]


def _both_raise(load_torch, load_ember, error=Exception):
    """Both loads fail with the same exception type and message (in Ember's words)."""
    with pytest.raises(error) as theirs:
        load_torch()
    with pytest.raises(error) as ours:
        load_ember()
    assert type(ours.value) is type(theirs.value)
    assert _ours(str(ours.value)) == _normalized(str(theirs.value))


def _torch_saved(obj, **kwargs) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    return buf.getvalue()


def _checkpoint(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


# -- whole modules written by PyTorch ---------------------------------------------------------

def _module_cases():
    return {
        "sequential": (lambda: tnn.Sequential(tnn.Linear(4, 6), tnn.ReLU(), tnn.Dropout(0.3),
                                              tnn.Linear(6, 2)),
                       [enn.Sequential, enn.Linear, enn.ReLU, enn.Dropout], (5, 4), "float"),
        "lstm": (lambda: tnn.LSTM(4, 5, 2), [enn.LSTM], (3, 2, 4), "float"),
        "embedding": (lambda: tnn.Embedding(10, 3), [enn.Embedding], (2, 4), "index"),
        "batchnorm": (lambda: tnn.BatchNorm1d(4), [enn.BatchNorm1d], (6, 4), "float"),
        "conv": (lambda: tnn.Conv2d(2, 3, 3, padding=1), [enn.Conv2d], (1, 2, 5, 5), "float"),
        "transformer": (lambda: tnn.TransformerEncoder(
            tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.1), 2, enable_nested_tensor=False),
            [enn.TransformerEncoder, enn.TransformerEncoderLayer, enn.ModuleList,
             enn.MultiheadAttention, enn.modules.linear.NonDynamicallyQuantizableLinear,
             enn.Linear, enn.Dropout, enn.LayerNorm, enn.functional.relu], (5, 2, 8),
            "float"),
    }


MODULE_CASES = _module_cases()


@pytest.mark.parametrize("name", sorted(MODULE_CASES))
def test_torch_whole_module_loads_with_ember_classes(name, tmp_path):
    make, ember_classes, shape, kind = MODULE_CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    if name == "batchnorm":  # non-trivial running statistics
        model.train()
        model(torch.randn(8, 4) * 3 + 1)
        model.eval()
    path = tmp_path / "model.pt"
    torch.save(model, path)
    unsafe = set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    assert set(S.get_unsafe_globals_in_checkpoint(path)) == unsafe
    _both_raise(lambda: torch.load(path), lambda: ember.load(path), pickle.UnpicklingError)
    with S.safe_globals(ember_classes):
        assert S.get_unsafe_globals_in_checkpoint(path) == []
        loaded = ember.load(path)
        mapped = ember.load(path, mmap=True)
    trusted = ember.load(path, weights_only=False)  # full pickle: torch.X imports ember.X
    rng = np.random.default_rng(1)
    x = (rng.integers(0, 10, shape) if kind == "index" else
         rng.standard_normal(shape).astype(np.float32))
    first = lambda out: out[0] if isinstance(out, tuple) else out  # LSTM
    with torch.no_grad():
        expected = first(model(torch.from_numpy(x))).numpy()
    for ours in (loaded, mapped, trusted):
        assert not ours.training and type(ours).__name__ == type(model).__name__
        got = first(ours(ember.from_numpy(x))).detach().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert sorted(loaded.state_dict()) == sorted(model.state_dict())


def test_legacy_whole_module_needs_weights_only_false():
    model = tnn.Sequential(tnn.Linear(3, 4), tnn.ReLU()).eval()
    data = _torch_saved(model, _use_new_zipfile_serialization=False)  # holds source ids
    with torch.serialization.safe_globals([tnn.Sequential, tnn.Linear, tnn.ReLU]), \
            S.safe_globals([enn.Sequential, enn.Linear, enn.ReLU]):
        _both_raise(lambda: torch.load(io.BytesIO(data)), lambda: ember.load(io.BytesIO(data)),
                    pickle.UnpicklingError)
    ours = ember.load(io.BytesIO(data), weights_only=False)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(ember.from_numpy(x)).detach().numpy(), expected, rtol=1e-6)


def test_torch_names_need_the_ember_class_allowed():
    path = io.BytesIO(_torch_saved(tnn.Linear(2, 2)))
    with S.safe_globals([enn.Conv2d]), pytest.raises(pickle.UnpicklingError,
                                                     match="GLOBAL torch.nn.modules.linear"):
        ember.load(path)


# -- allowed, refused and blocked globals -------------------------------------------------------

@pytest.mark.parametrize("data", [
    _torch_saved({"args": argparse.Namespace(lr=0.1)}),
    _checkpoint(b"\x80\x02cbuiltins\nexec\nX\x04\x00\x00\x00pass\x85R."),
    _checkpoint(b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R."),
    _checkpoint(b"\x80\x02N}b."),
    _checkpoint(b"\x80\x02]K\x01K\x02s."),
    _checkpoint(b"\x80\x02}K\x01a."),
    _checkpoint(b"\x80\x02}(K\x01e."),
], ids=["namespace", "builtins", "blocked", "build", "setitem", "append", "appends"])
def test_refusals_match(data):
    _both_raise(lambda: torch.load(io.BytesIO(data)), lambda: ember.load(io.BytesIO(data)),
                pickle.UnpicklingError)


def test_user_globals_load_the_same_checkpoint():
    data = _torch_saved({"p": Point(1, 2), "n": argparse.Namespace(lr=0.1),
                         "t": torch.arange(3.0)})
    with torch.serialization.safe_globals([Point, argparse.Namespace]):
        theirs = torch.load(io.BytesIO(data))
    with S.safe_globals([Point, argparse.Namespace]):
        ours = ember.load(io.BytesIO(data))
        assert set(S.get_safe_globals()) == {Point, argparse.Namespace}
    assert S.get_safe_globals() == []
    assert (ours["p"].x, ours["p"].y, ours["n"]) == (theirs["p"].x, theirs["p"].y, theirs["n"])
    np.testing.assert_array_equal(ours["t"].numpy(), theirs["t"].numpy())
    with torch.serialization.safe_globals([(Point, f"{Point.__module__}.Point"),
                                           argparse.Namespace]):
        assert torch.load(io.BytesIO(data))["p"].x == 1
    with S.safe_globals([(Point, f"{Point.__module__}.Point"), argparse.Namespace]):
        assert ember.load(io.BytesIO(data))["p"].x == 1


def test_blocked_even_when_allowed():
    data = _checkpoint(b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.")
    with torch.serialization.safe_globals([os.system]), S.safe_globals([os.system]):
        _both_raise(lambda: torch.load(io.BytesIO(data)),
                    lambda: ember.load(io.BytesIO(data)), pickle.UnpicklingError)


@pytest.mark.parametrize("entry", [(Point,), (Point, 3)])
def test_bad_entries_raise_the_same_errors(entry):
    data = _torch_saved({"p": Point(1, 2)})
    with torch.serialization.safe_globals([entry]), pytest.raises(Exception) as theirs:
        torch.load(io.BytesIO(data))  # PyTorch checks entries when it loads
    with pytest.raises(Exception) as ours:
        S.add_safe_globals([entry])  # Ember when they are added
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("protocol", [2, 4])
def test_unsafe_globals_in_checkpoint_match(protocol):
    data = _torch_saved({"p": Point(1, 2), "n": argparse.Namespace(), "s": {1}, "c": 1j,
                         "od": collections.OrderedDict(a=torch.ones(1)),
                         "w": tnn.Linear(1, 1)}, pickle_protocol=protocol)
    if protocol == 2:
        assert set(S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == \
            set(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
    else:  # PyTorch's scanner reads protocol 2 only
        with pytest.raises(pickle.UnpicklingError):
            torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
        assert set(S.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == {
            f"{Point.__module__}.Point", "argparse.Namespace", "torch.nn.modules.linear.Linear"}
    with S.safe_globals([Point, enn.Linear]):
        assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == ["argparse.Namespace"]
    legacy = _torch_saved({"a": 1}, _use_new_zipfile_serialization=False)
    _both_raise(lambda: torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(legacy)),
                lambda: S.get_unsafe_globals_in_checkpoint(io.BytesIO(legacy)), ValueError)


# -- map_location, mmap, weights_only -------------------------------------------------------------

def test_map_location_forms_match():
    data = _torch_saved({"a": torch.arange(4.0), "b": torch.ones(2, dtype=torch.int64)})
    for map_location in (None, "cpu", {"cpu": "cpu"}, lambda s, loc: s,
                         lambda s, loc: None):
        ours = ember.load(io.BytesIO(data), map_location=map_location)
        theirs = torch.load(io.BytesIO(data), map_location=map_location)
        for key in ("a", "b"):
            np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    seen = {"torch": [], "ember": []}

    def recorder(who):
        return lambda storage, location: seen[who].append((location, storage.device.type))

    torch.load(io.BytesIO(data), map_location=recorder("torch"))
    ember.load(io.BytesIO(data), map_location=recorder("ember"))
    assert seen["torch"] == seen["ember"] == [("cpu", "cpu"), ("cpu", "cpu")]
    assert torch.load(io.BytesIO(data), map_location=torch.device("cpu"))["a"].device.type == \
        ember.load(io.BytesIO(data), map_location=ember.device("cpu"))["a"].device.type


@pytest.mark.parametrize("map_location", [5, "foo", {"cpu": "cuda:1"}, "cuda:0"])
def test_map_location_errors_match(map_location):
    if str(map_location).find("cuda") >= 0 and (torch.cuda.is_available()
                                                 or ember.cuda.is_available()):
        pytest.skip("a GPU is present")
    data = _torch_saved(torch.ones(2))
    _both_raise(lambda: torch.load(io.BytesIO(data), map_location=map_location),
                lambda: ember.load(io.BytesIO(data), map_location=map_location))


def test_mmap_matches(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"w": torch.arange(10.0)}, path)
    np.testing.assert_array_equal(ember.load(path, mmap=True)["w"].numpy(),
                                  torch.load(path, mmap=True)["w"].numpy())
    _both_raise(lambda: torch.load(io.BytesIO(path.read_bytes()), mmap=True),
                lambda: ember.load(io.BytesIO(path.read_bytes()), mmap=True), ValueError)
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    for source in (lambda: str(legacy), lambda: legacy,
                   lambda: io.BytesIO(legacy.read_bytes())):
        _both_raise(lambda source=source: torch.load(source(), mmap=True),
                    lambda source=source: ember.load(source(), mmap=True), RuntimeError)


def test_weights_only_false_and_load_args_match():
    data = _torch_saved({"p": Point(1, 2), "n": argparse.Namespace(a=1)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither warns when asked for explicitly
        theirs = torch.load(io.BytesIO(data), weights_only=False)
        ours = ember.load(io.BytesIO(data), weights_only=False)
    assert (ours["p"].x, ours["n"]) == (theirs["p"].x, theirs["n"])
    with pytest.warns(UserWarning) as theirs_warned:
        torch.load(io.BytesIO(_torch_saved(torch.ones(1))), encoding="latin1")
    with pytest.warns(UserWarning) as ours_warned:
        ember.load(io.BytesIO(_torch_saved(torch.ones(1))), encoding="latin1")
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]


def _without_byteorder(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if not info.filename.endswith("/byteorder"):
                dst.writestr(info.filename, src.read(info))
    return out.getvalue()


def test_load_endianness_matches():
    ts, es = torch.serialization, S
    assert [(m.name, m.value) for m in es.LoadEndianness] == \
        [(m.name, m.value) for m in ts.LoadEndianness]
    assert es.get_default_load_endianness() is None and ts.get_default_load_endianness() is None
    _both_raise(lambda: ts.set_default_load_endianness("big"),
                lambda: es.set_default_load_endianness("big"), TypeError)
    data = _without_byteorder(_torch_saved(torch.arange(3, dtype=torch.int32)))
    try:
        for name in ("LITTLE", "BIG", "NATIVE"):
            ts.set_default_load_endianness(getattr(ts.LoadEndianness, name))
            es.set_default_load_endianness(getattr(es.LoadEndianness, name))
            assert ember.load(io.BytesIO(data)).tolist() == \
                torch.load(io.BytesIO(data)).tolist()
    finally:
        ts.set_default_load_endianness(None)
        es.set_default_load_endianness(None)


# -- options: skip_data, CRC-32, alignment, mmap, packages ------------------------------------

def _state(lib):  # on the CPU (under the strict test device too): both libraries load it
    return {"w": lib.arange(12.0, device="cpu").reshape(3, 4),
            "i": lib.arange(5, dtype=lib.int64, device="cpu")}


def _same_state(a, b):
    assert set(a) == set(b)
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key].tolist()), np.asarray(b[key].tolist()))


@pytest.mark.parametrize("option", ["skip_data", "no_crc32", "align_4096", "no_byteorder"])
def test_files_written_with_options_load_in_both(option, tmp_path):
    """Each library loads the other's archive written under the option, to the same tensors
    (zeros where the bytes were skipped)."""
    from torch.utils.serialization import config as tconfig

    from ember.utils.serialization import config as econfig

    ours, theirs = tmp_path / "ember.pt", tmp_path / "torch.pt"
    kwargs = {"_disable_byteorder_record": True} if option == "no_byteorder" else {}
    saved = (econfig.save.compute_crc32, econfig.save.storage_alignment,
             tconfig.save.compute_crc32, tconfig.save.storage_alignment)
    try:
        if option == "no_crc32":
            S.set_crc32_options(False)
            torch.serialization.set_crc32_options(False)
        if option == "align_4096":
            econfig.save.storage_alignment = tconfig.save.storage_alignment = 4096
        if option == "skip_data":
            with S.skip_data():
                ember.save(_state(ember), ours)
            with torch.serialization.skip_data():
                torch.save(_state(torch), theirs)
        else:
            ember.save(_state(ember), ours, **kwargs)
            torch.save(_state(torch), theirs, **kwargs)
    finally:
        (econfig.save.compute_crc32, econfig.save.storage_alignment,
         tconfig.save.compute_crc32, tconfig.save.storage_alignment) = saved
    expected = _state(ember)
    if option == "skip_data":
        expected = {k: v.zero_() for k, v in expected.items()}
    for path in (ours, theirs):
        _same_state(ember.load(path), expected)
        _same_state(torch.load(path), expected)
    if option in ("no_crc32", "skip_data"):
        for path in (ours, theirs):
            assert {i.CRC for i in zipfile.ZipFile(path).infolist()
                    if "/data/" in i.filename} == {0}


def test_mmap_shared_writes_through_in_both(tmp_path):
    """Writes to a tensor mapped with MAP_SHARED go to the file (whose recorded CRC-32 they
    leave stale: Ember checks it unless told not to; PyTorch does not read it)."""
    import mmap as _mmap

    for lib, save, load, options in (
            (ember, ember.save, functools.partial(ember.load, check_crc32=False), S),
            (torch, torch.save, torch.load, torch.serialization)):
        path = tmp_path / f"{lib.__name__}.pt"
        save(lib.arange(4.0, device="cpu"), path)  # a CPU storage maps the file
        with options.set_default_mmap_options(_mmap.MAP_SHARED):
            loaded = load(path, mmap=True)
            loaded[2] = 7.0
            del loaded
        assert load(path).tolist() == [0.0, 1.0, 7.0, 3.0]
        with pytest.raises(ValueError) as err:
            options.set_default_mmap_options(5)
        assert str(err.value) == ("Invalid argument in function set_default_mmap_options, "
                                  "expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got 5")


def test_a_registered_package_tags_and_places_in_both():
    """A package tagging CPU storages ``vault``: both libraries write the tag, and each loads
    the other's file through its own registered deserializer."""
    from ember.serialization import _location

    def tag(storage):
        return "vault" if storage.device.type == "cpu" else None

    def place(storage, location):
        return storage if location == "vault" else None

    torch_packages = list(torch.serialization._package_registry)
    ember_packages = list(_location.PACKAGES)
    try:
        S.register_package(5, tag, place)
        torch.serialization.register_package(5, tag, place)
        ours, theirs = io.BytesIO(), io.BytesIO()
        ember.save(ember.arange(3.0, device="cpu"), ours)  # the tagger names CPU storages
        torch.save(torch.arange(3.0), theirs)
        for buf in (ours, theirs):
            assert b"vault" in zipfile.ZipFile(io.BytesIO(buf.getvalue())).read(
                "archive/data.pkl")
            assert ember.load(io.BytesIO(buf.getvalue())).tolist() == [0.0, 1.0, 2.0]
            assert torch.load(io.BytesIO(buf.getvalue())).tolist() == [0.0, 1.0, 2.0]
    finally:
        torch.serialization._package_registry[:] = torch_packages
        _location.PACKAGES[:] = ember_packages


@pytest.mark.parametrize("version,wanted,malformed", [
    ("2.13.0", (2, 13), True), ("2.13.0", (2, 14), True), ("1.x", (1, 2), True),
    ("1", (1, 2), False), ("3.0.1", ("3", "0"), True)])
def test_check_module_version_matches(version, wanted, malformed):
    class Module:
        __name__ = "fake"
        __version__ = version

    outcomes = []
    for check in (S.check_module_version_greater_or_equal,
                  torch.serialization.check_module_version_greater_or_equal):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcomes.append((check(Module, wanted, malformed), None))
            except RuntimeError as exc:
                outcomes.append((None, str(exc)))
        outcomes.append([str(w.message) for w in caught])
    assert outcomes[0:2] == outcomes[2:4]
