"""ember.safetensors: save/load through the safetensors package's NumPy layer."""

import os

import numpy as np
import pytest

import ember
import ember.safetensors as st

pytest.importorskip("safetensors")

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
          ember.float16, ember.float32, ember.float64]


def _tensors():
    return {dt.name: ember.tensor((np.arange(6).reshape(2, 3) % 3).astype(dt.np))
            for dt in DTYPES}


def _check(out, ref):
    assert set(out) == set(ref)
    for k, v in ref.items():
        assert out[k].dtype is v.dtype and out[k].shape == v.shape
        np.testing.assert_array_equal(out[k].cpu().numpy(), v.numpy())


def test_file_roundtrip_every_dtype(tmp_path):
    path = tmp_path / "t.safetensors"
    st.save_file(_tensors(), path, metadata={"format": "pt"})
    _check(st.load_file(path), _tensors())
    with st.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert sorted(f.keys()) == sorted(_tensors())


def test_bytes_roundtrip():
    data = st.save(_tensors())
    assert isinstance(data, bytes)
    _check(st.load(data), _tensors())


def test_load_file_device(tmp_path, testdev):
    path = tmp_path / "t.safetensors"
    st.save_file({"a": ember.arange(3.0)}, path)
    out = st.load_file(path, device=testdev)
    assert out["a"].device == testdev


def test_safe_open_is_lazy_per_tensor(tmp_path):
    path = tmp_path / "t.safetensors"
    st.save_file({"a": ember.arange(12.0).reshape(3, 4), "b": ember.ones(2)}, path)
    with st.safe_open(path, framework="pt", device="cpu") as f:
        sl = f.get_slice("a")
        assert sl.get_shape() == [3, 4] and sl.get_dtype() == "F32"
        part = sl[1:, :2]
        assert isinstance(part, ember.Tensor)
        np.testing.assert_array_equal(part.numpy(), [[4, 5], [8, 9]])
        assert isinstance(f.get_tensor("b"), ember.Tensor)
    with st.safe_open(path, framework="np") as f:
        assert isinstance(f.get_tensor("a"), np.ndarray)
    with pytest.raises(ValueError, match="framework"):
        st.safe_open(path, framework="flax")


def test_save_file_refuses_shared_and_non_contiguous(tmp_path):
    base = ember.arange(6.0)
    with pytest.raises(RuntimeError, match="share memory"):
        st.save_file({"a": base, "b": base[2:]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="non contiguous"):
        st.save_file({"a": ember.ones(3, 2).t()}, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []


def test_save_file_is_atomic(tmp_path, monkeypatch):
    import safetensors.numpy

    def broken(tensors, filename, metadata=None):
        with open(filename, "wb") as fh:
            fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.numpy, "save_file", broken)
    with pytest.raises(OSError, match="disk full"):
        st.save_file({"a": ember.ones(2)}, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []


def test_save_model_with_tied_weights(tmp_path):
    nn = pytest.importorskip("ember.nn")

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)
            self.b.weight = self.a.weight

    model = Tied()
    path = tmp_path / "m.safetensors"
    with pytest.raises(RuntimeError, match="share memory"):
        st.save_file(model.state_dict(), path)
    st.save_model(model, path)
    with st.safe_open(path, framework="np") as f:
        assert sorted(f.keys()) == ["a.bias", "a.weight", "b.bias"]
        assert f.metadata() == {"b.weight": "a.weight"}
    other = Tied()
    assert st.load_model(other, path) == ([], [])
    np.testing.assert_array_equal(other.b.weight.detach().numpy(),
                                  model.a.weight.detach().numpy())
    np.testing.assert_array_equal(other.b.bias.detach().numpy(), model.b.bias.detach().numpy())
    with pytest.raises(RuntimeError, match="Missing key"):
        st.load_model(nn.Sequential(nn.Linear(3, 3)), path)
    missing, unexpected = st.load_model(nn.Sequential(nn.Linear(3, 3)), path, strict=False)
    assert missing == ["0.bias", "0.weight"] and len(unexpected) == 3


def _file(header: dict, data: bytes) -> bytes:
    import json
    import struct

    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize("dtype, bits, advice", [
    ("F4", 4, "no floats narrower than 8 bits"),
])
def test_unsupported_dtypes_are_named_with_what_to_do(tmp_path, dtype, bits, advice):
    shape = [16 * 8 // bits]
    data = _file({"w": {"dtype": dtype, "shape": shape, "data_offsets": [0, 16]},
                  "ok": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}},
                 bytes(16) + np.array([1, 2], np.float32).tobytes())
    path = tmp_path / "x.safetensors"
    path.write_bytes(data)
    message = rf"safetensors: tensor 'w' has dtype {dtype}, which Ember does not support yet"
    for load in (lambda: st.load_file(path), lambda: st.load(data)):
        with pytest.raises(TypeError, match=rf"(?s){message}.*{advice}"):
            load()
    with st.safe_open(path, framework="pt") as f:
        np.testing.assert_array_equal(f.get_tensor("ok").numpy(), [1, 2])
        sl = f.get_slice("w")  # its header can still be read
        assert sl.get_dtype() == dtype and sl.get_shape() == shape
        with pytest.raises(TypeError, match=message):
            sl[:1]
        with pytest.raises(TypeError, match=message):
            f.get_tensor("w")


@pytest.mark.parametrize("data", [
    b"\x00\x00\x10\x00\x00\x00\x00\x00{}",  # a header longer than the file
    b"\xff" * 8 + b"{}",  # an absurd header length
    _file([1, 2], b""), _file({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 99]}},
                              bytes(16)),
    _file({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, bytes(16)),
    _file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, bytes(16)),
    _file({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, bytes(16)),
])
def test_malformed_headers_raise_safetensors_error(tmp_path, data):
    from safetensors import SafetensorError

    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(SafetensorError):
        st.load_file(path)
    with pytest.raises(SafetensorError):
        st.load(data)
