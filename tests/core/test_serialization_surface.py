"""``ember.serialization``'s surface beyond save/load of tensors: the user's safe globals
(``add_safe_globals``, ``safe_globals``...), ``get_unsafe_globals_in_checkpoint``, whole
modules saved and loaded, ``map_location`` forms, ``weights_only=False``, ``mmap`` and the
load byte order. PyTorch side by side: tests/parity/test_serialization_surface_parity.py."""

import argparse
import enum
import io
import math
import mmap
import os
import pickle
import threading
import warnings
import zipfile

import numpy as np
import pytest

import ember
import ember.serialization as S

nn = pytest.importorskip("ember.nn")
F = nn.functional


@pytest.fixture(autouse=True)
def _own_safe_globals():
    """Each test starts with no user safe globals and leaves the list as it found it."""
    saved = S.get_safe_globals()
    S.clear_safe_globals()
    yield
    S.clear_safe_globals()
    S.add_safe_globals(saved)


def _saved(obj, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


def _reload(buf: io.BytesIO, **kwargs):
    buf.seek(0)
    return ember.load(buf, **kwargs)


def _pickle_checkpoint(data: bytes) -> io.BytesIO:
    """A zip checkpoint whose data.pkl is ``data``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


# -- user classes -----------------------------------------------------------------------------

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class Stateful:
    def __init__(self, value):
        self.value = value

    def __getstate__(self):
        return {"packed": self.value}

    def __setstate__(self, state):
        self.value = state["packed"] * 2


class Color(enum.Enum):
    RED = 1
    GREEN = 2


def test_user_class_needs_allowing_and_then_loads():
    buf = _saved({"p": Point(1, ember.ones(2)), "t": ember.arange(3.0)})
    with pytest.raises(pickle.UnpicklingError) as info:
        _reload(buf)
    name = f"{Point.__module__}.Point"
    message = str(info.value)
    assert message.startswith("Weights only load failed. This file can still be loaded")
    assert (f"WeightsUnpickler error: Unsupported global: GLOBAL {name} was not an allowed "
            f"global by default. Please use `ember.serialization.add_safe_globals([{name}])` "
            f"or the `ember.serialization.safe_globals([{name}])` context manager to allowlist "
            "this global if you trust this class/function.") in message
    with S.safe_globals([Point]):
        out = _reload(buf)
    assert isinstance(out["p"], Point) and out["p"].x == 1
    np.testing.assert_array_equal(out["p"].y.numpy(), np.ones(2, np.float32))
    assert S.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        _reload(buf)


def test_slots_setstate_and_reduce_of_allowed_globals():
    obj = {"s": Slotted(1, "x"), "st": Stateful(21), "c": Color.GREEN}
    buf = _saved(obj)
    S.add_safe_globals([Slotted, Stateful, Color])
    out = _reload(buf)
    assert (out["s"].a, out["s"].b) == (1, "x")
    assert out["st"].value == 42  # its own __setstate__ ran on the pickled state
    assert out["c"] is Color.GREEN  # Color(2) called through REDUCE
    # ... but a file cannot change the process-wide member it got back
    hijack = (f"\x80\x02c{Color.__module__}\nColor\nK\x02\x85R}}X\x06\x00\x00\x00"
              "_name_X\x03\x00\x00\x00REDsb.").encode("latin-1")
    with pytest.raises(pickle.UnpicklingError, match="Can not build the enum member"):
        ember.load(_pickle_checkpoint(hijack))
    assert Color.GREEN.name == "GREEN"


def test_add_get_clear_and_the_context_manager():
    assert S.get_safe_globals() == []
    S.add_safe_globals([Point, (Slotted, "elsewhere.Slotted")])
    assert set(S.get_safe_globals()) == {Point, (Slotted, "elsewhere.Slotted")}
    with S.safe_globals([Point, Stateful]) as entered:
        assert entered is None
        assert set(S.get_safe_globals()) == {Point, Stateful, (Slotted, "elsewhere.Slotted")}
    # only what the block added goes (PyTorch would remove Point too)
    assert set(S.get_safe_globals()) == {Point, (Slotted, "elsewhere.Slotted")}
    with pytest.raises(RuntimeError, match="boom"), S.safe_globals([Color]):
        raise RuntimeError("boom")
    assert Color not in S.get_safe_globals()
    S.clear_safe_globals()
    assert S.get_safe_globals() == []


def test_entries_are_checked_when_added():
    with pytest.raises(ValueError, match="Expected tuple of length 2 .* length: 1"):
        S.add_safe_globals([(Point,)])
    with pytest.raises(TypeError, match="Expected second item in tuple to be str"):
        S.add_safe_globals([(Point, 3)])
    assert S.get_safe_globals() == []


def test_explicit_names_and_the_list_is_process_wide():
    data = (b"\x80\x02celsewhere\nPt\n)\x81}(X\x01\x00\x00\x00xK\x01X\x01\x00\x00\x00yK\x02ub.")
    S.add_safe_globals([(Point, "elsewhere.Pt")])
    seen = []
    thread = threading.Thread(target=lambda: seen.append(
        ember.load(_pickle_checkpoint(data))))
    thread.start()
    thread.join()
    assert seen == [Point(1, 2)]


def test_namespace_is_not_allowed_by_default():
    args = argparse.Namespace(lr=0.1, epochs=3)
    buf = _saved({"args": args, "w": ember.ones(2)})
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL argparse.Namespace was not"):
        _reload(buf)
    with S.safe_globals([argparse.Namespace]):
        assert _reload(buf)["args"] == args


def test_blocked_modules_are_refused_even_when_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    payload = b"touch pwned"
    data = (b"\x80\x02cos\nsystem\nX" + len(payload).to_bytes(4, "little") + payload +
            b"\x85R.")
    S.add_safe_globals([os.system, (os.system, "os.system")])
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(_pickle_checkpoint(data))
    assert "Trying to load unsupported GLOBAL os.system whose module os is blocked." in \
        str(info.value)
    assert "Please file an issue" not in str(info.value)
    assert os.listdir(tmp_path) == []


def test_an_allowed_function_is_not_a_class_to_construct():
    S.add_safe_globals([F.relu])
    data = b"\x80\x02cember.nn.functional\nrelu\n)\x81."
    with pytest.raises(pickle.UnpicklingError, match="Can only create new object for "
                                                     "nn.Parameter or classes allowlisted"):
        ember.load(_pickle_checkpoint(data))
    other = b"\x80\x02c__builtin__\nset\n)R}X\x01\x00\x00\x00aK\x01sb."
    with pytest.raises(pickle.UnpicklingError, match="Can only build Tensor, Parameter, "
                                                     "OrderedDict or types allowlisted"):
        ember.load(_pickle_checkpoint(other))


# -- whole modules (pytorch/examples word_language_model) --------------------------------------

class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return F.log_softmax(self.decoder(self.drop(out)), dim=-1), hidden

    def init_hidden(self, bsz):
        return (ember.zeros(self.nlayers, bsz, self.nhid), ember.zeros(self.nlayers, bsz,
                                                                       self.nhid))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = np.arange(max_len, dtype=np.float32)[:, None]
        div = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * (-math.log(1e4) / d_model))
        pe = np.zeros((max_len, d_model), np.float32)
        pe[:, 0::2], pe[:, 1::2] = np.sin(position * div), np.cos(position * div)
        self.register_buffer("pe", ember.tensor(pe[:, None, :]))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                         num_encoder_layers=nlayers, num_decoder_layers=1)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = ember.triu(ember.full((len(src), len(src)), float("-inf")), 1)
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        return F.log_softmax(self.decoder(self.encoder(src, mask=self.src_mask)), dim=-1)


WORD_LANGUAGE_MODEL_GLOBALS = [
    RNNModel, TransformerModel, PositionalEncoding, nn.Dropout, nn.Embedding, nn.LSTM,
    nn.Linear, nn.modules.activation.MultiheadAttention,
    nn.modules.linear.NonDynamicallyQuantizableLinear, nn.LayerNorm, nn.ModuleList,
    nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.TransformerDecoder,
    nn.TransformerDecoderLayer, F.relu,
]


def _tokens(shape=(7, 3), ntoken=33):
    return ember.tensor(np.arange(np.prod(shape)).reshape(shape) * 5 % ntoken)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_whole_module_round_trip_with_safe_globals(kind, tmp_path):
    ember.manual_seed(0)
    if kind == "lstm":
        model = RNNModel(33, 16, 16, 2, dropout=0.2)
        run = lambda m: m(_tokens(), m.init_hidden(3))[0]
    else:
        model = TransformerModel(33, 16, 2, 32, 2, dropout=0.2)
        run = lambda m: m(_tokens())
    model.eval()
    expected = run(model).detach().numpy()
    path = tmp_path / "model.pt"
    ember.save(model, path)
    unsafe = S.get_unsafe_globals_in_checkpoint(path)
    assert f"{RNNModel.__module__}.{type(model).__name__}" in unsafe
    assert all(name.startswith((RNNModel.__module__, "ember.nn.")) for name in unsafe)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(path)
    with S.safe_globals(WORD_LANGUAGE_MODEL_GLOBALS):
        assert S.get_unsafe_globals_in_checkpoint(path) == []
        loaded = ember.load(path)
    assert type(loaded) is type(model) and not loaded.training
    np.testing.assert_array_equal(run(loaded).detach().numpy(), expected)
    assert sorted(loaded.state_dict()) == sorted(model.state_dict())
    if kind == "lstm":
        assert loaded.decoder.weight is loaded.encoder.weight
        assert isinstance(loaded.decoder.weight, nn.Parameter)
    loaded.train()  # it trains: gradients reach the loaded parameters
    run(loaded).sum().backward()
    assert loaded.decoder.weight.grad is not None


def test_whole_module_with_mmap_map_location_and_the_legacy_format(tmp_path, testdev):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.BatchNorm1d(3)).eval()
    path, legacy = tmp_path / "seq.pt", tmp_path / "legacy.pt"
    ember.save(model, path)
    ember.save(model, legacy, _use_new_zipfile_serialization=False)
    x = ember.rand(5, 4)
    with S.safe_globals([nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]):
        mapped = ember.load(path, mmap=True).eval()
        moved = ember.load(path, map_location=testdev)
        old = ember.load(legacy)
    for loaded in (mapped, old):
        np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert {p.device for p in moved.parameters()} == {testdev}
    assert moved[2].running_mean.device == testdev


# -- get_unsafe_globals_in_checkpoint ---------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_unsafe_globals_are_read_statically(protocol, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    obj = {"p": Point(1, 2), "n": argparse.Namespace(a=1), "s": {1}, "t": ember.ones(2),
           "c": Color.RED}
    buf = _saved(obj, pickle_protocol=protocol)
    expected = {f"{Point.__module__}.Point", f"{Point.__module__}.Color", "argparse.Namespace"}
    assert set(S.get_unsafe_globals_in_checkpoint(buf)) == expected
    with S.safe_globals([Point, Color]):
        assert S.get_unsafe_globals_in_checkpoint(buf) == ["argparse.Namespace"]
    payload = b"touch pwned"
    exe = _pickle_checkpoint(b"\x80\x02cos\nsystem\nX" + len(payload).to_bytes(4, "little") +
                             payload + b"\x85R.")
    assert S.get_unsafe_globals_in_checkpoint(exe) == ["os.system"]
    assert os.listdir(tmp_path) == []


def test_unsafe_globals_of_other_inputs(tmp_path):
    legacy = _saved({"t": ember.ones(2)}, _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by"):
        S.get_unsafe_globals_in_checkpoint(legacy)
    with pytest.raises(pickle.UnpicklingError):
        S.get_unsafe_globals_in_checkpoint(_pickle_checkpoint(b"\x80\x02)t."))
    scripted = io.BytesIO()
    with zipfile.ZipFile(scripted, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02N.")
        zf.writestr("archive/constants.pkl", b"\x80\x02N.")
    scripted.seek(0)
    with pytest.raises(ValueError, match="torchscript"):
        S.get_unsafe_globals_in_checkpoint(scripted)
    scripted.seek(0)
    with pytest.raises(RuntimeError, match="TorchScript"):
        ember.load(scripted)
    path = tmp_path / "plain.pt"
    ember.save({"t": ember.ones(2), "sd": {"a": [1, (2, 3)]}}, path)
    assert S.get_unsafe_globals_in_checkpoint(str(path)) == []


# -- map_location -------------------------------------------------------------------------------

def test_map_location_forms(testdev):
    t = ember.arange(6.0).reshape(2, 3)
    on_dev = _saved({"a": t.to(ember.device("testdev", 1)), "b": t})
    cases = [("testdev:1", ["testdev:1"] * 2), (b"testdev:0", ["testdev:0"] * 2),
             (ember.device("testdev", 1), ["testdev:1"] * 2),
             ({"testdev:1": "cpu"}, ["cpu", "cpu"]), ({"cpu": "testdev:0"}, ["testdev:1",
                                                                          "testdev:0"]),
             (None, ["testdev:1", "cpu"]), ("cpu", ["cpu", "cpu"])]
    for map_location, devices in cases:
        out = _reload(on_dev, map_location=map_location)
        assert [str(out["a"].device), str(out["b"].device)] == devices, map_location
        np.testing.assert_array_equal(out["a"].cpu().numpy(), t.numpy())
    seen = []

    def record(storage, location):
        seen.append((location, storage.device.type, len(storage)))
        return storage.to(testdev) if location == "cpu" else None

    out = _reload(on_dev, map_location=record)
    assert sorted(seen) == [("cpu", "cpu", 6), ("testdev:1", "cpu", 6)]
    assert (str(out["a"].device), str(out["b"].device)) == ("testdev:1", "testdev:0")


def test_map_location_errors():
    buf = _saved(ember.ones(2))
    with pytest.raises(TypeError, match="'int' object is not callable"):
        _reload(buf, map_location=5)
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location of "
                                           r"ember.storage.UntypedStorage \(tagged with foo\)"):
        _reload(buf, map_location="foo")
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on TESTDEV device "
                                           "7 but ember.testdev.device_count.. is 2"):
        _reload(buf, map_location="testdev:7")
    meta = _reload(buf, map_location="meta")  # as PyTorch: shapes and dtypes, no data
    assert meta.is_meta and meta.shape == (2,) and meta.dtype == ember.float32
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"on a CUDA device but ember.cuda.is_available"
                                               r"\(\) is False.*map_location=ember.device"):
            _reload(buf, map_location={"cpu": "cuda:0"})

    class Refused(Exception):
        pass

    def refuse(storage, location):
        raise Refused(location)

    with pytest.raises(Refused, match="cpu"):  # the callable's own error, unchanged
        _reload(buf, map_location=refuse)
    with pytest.raises(KeyError):
        _reload(buf, map_location=lambda s, loc: {}[loc])
    with pytest.raises(TypeError, match="should return a storage or None"):
        _reload(buf, map_location=lambda s, loc: 3)
    legacy = _saved(ember.ones(2), _use_new_zipfile_serialization=False)
    with pytest.raises(Refused):
        _reload(legacy, map_location=refuse)


# -- weights_only, pickle_load_args -----------------------------------------------------------

class Payload:
    """Runs ``touch ran`` when unpickled."""

    def __reduce__(self):
        return os.system, ("touch ran",)


def test_weights_only_false_loads_anything_and_the_default_refuses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    benign = _saved({"p": Point(1, 2), "n": argparse.Namespace(a=1), "t": ember.ones(2)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _reload(benign, weights_only=False)
    assert out["p"] == Point(1, 2) and out["n"].a == 1
    hostile = _saved({"x": Payload()})
    for kwargs in ({}, {"weights_only": True}, {"weights_only": None}):
        with pytest.raises(pickle.UnpicklingError, match="whose module (os|posix) is blocked"):
            _reload(hostile, **kwargs)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        _reload(hostile, pickle_module=pickle)
    assert os.listdir(tmp_path) == []
    _reload(hostile, weights_only=False)  # asked for explicitly: the file's code runs
    assert os.listdir(tmp_path) == ["ran"]


def test_pickle_load_args():
    buf = _saved({"t": ember.ones(2)})
    with pytest.warns(UserWarning, match=r"^pickle_load_args only works if `weights_only=False`"
                                         r"\.$"):
        assert _reload(buf, encoding="latin1")["t"].shape == (2,)
    with pytest.warns(UserWarning), \
            pytest.raises(TypeError, match="unexpected keyword argument 'errors'"):
        _reload(buf, errors="strict")
    out = _reload(buf, weights_only=False, encoding="latin1", errors="strict")
    assert out["t"].shape == (2,)
    with pytest.raises(TypeError, match="'bogus' is an invalid keyword argument"):
        _reload(buf, weights_only=False, bogus=1)


def test_other_refusals_use_pytorchs_layout():
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(_pickle_checkpoint(b"\x80\x02N0N."))
    message = str(info.value)
    assert message.startswith("Weights only load failed. Re-running `ember.load` with "
                              "`weights_only` set to `False`")
    assert "Please file an issue with the following" in message
    assert "Unsupported operand" in message and message.endswith("weights_only.")


# -- mmap, byte order ---------------------------------------------------------------------------

def _backing(arr):
    while arr is not None and not isinstance(arr, mmap.mmap):
        arr = getattr(arr, "base", None) if not isinstance(arr, memoryview) else arr.obj
    return arr


def test_mmap_tensors_are_backed_by_the_file(tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"a": ember.arange(100.0), "b": ember.ones(3, dtype=ember.int64)}, path)
    out = ember.load(path, mmap=True)
    assert _backing(out["a"].numpy()) is not None
    assert _backing(ember.load(path)["a"].numpy()) is None
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap "
                                         "argument"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)
    legacy = tmp_path / "legacy.pt"
    ember.save({"a": ember.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match=rf"`ember.save\({legacy}, "
                                           r"_use_new_zipfile_serialization=True\)"):
        ember.load(str(legacy), mmap=True)
    with pytest.raises(RuntimeError, match=r"`ember.save\(_use_new_zipfile_serialization"):
        ember.load(io.BytesIO(legacy.read_bytes()), mmap=True)


def _without_byteorder(data: bytes) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if not info.filename.endswith("/byteorder"):
                dst.writestr(info.filename, src.read(info))
    out.seek(0)
    return out


def test_default_load_endianness():
    assert S.get_default_load_endianness() is None
    with pytest.raises(TypeError, match="Invalid argument type in function "
                                        "set_default_load_endianness"):
        S.set_default_load_endianness("big")
    data = _saved(ember.arange(4, dtype=ember.int32)).getvalue()
    try:
        for setting, values in [(None, [0, 1, 2, 3]), (S.LoadEndianness.LITTLE, [0, 1, 2, 3]),
                                (S.LoadEndianness.BIG, [0, 1 << 24, 2 << 24, 3 << 24])]:
            S.set_default_load_endianness(setting)
            assert S.get_default_load_endianness() is setting
            assert ember.load(_without_byteorder(data)).tolist() == values
            assert ember.load(io.BytesIO(data)).tolist() == [0, 1, 2, 3]  # recorded order
    finally:
        S.set_default_load_endianness(None)


def test_public_names():
    for name in ("add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
                 "get_unsafe_globals_in_checkpoint", "LoadEndianness", "DEFAULT_PROTOCOL",
                 "get_default_load_endianness", "set_default_load_endianness",
                 "default_restore_location"):
        assert name in S.__all__ and hasattr(S, name)
    assert S.DEFAULT_PROTOCOL == 2
