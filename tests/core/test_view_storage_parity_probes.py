"""Differences from PyTorch 2.13 found by differential probes of views, storages and memory
formats (storage API completeness, from_buffer, channels-last on empty tensors)."""
import re
import warnings

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_untyped_storage_resize_keeps_prefix():
    s = ember.UntypedStorage(b"abcd")
    assert s.resize_(2) is s
    assert s.tolist() == [97, 98]
    s.resize_(5)
    assert s.nbytes() == 5 and s.tolist()[:2] == [97, 98]
    with pytest.raises(RuntimeError):
        s.resize_(-1)
    torch = _torch()
    t = torch.UntypedStorage(b"abcd")
    t.resize_(2)
    assert t.tolist() == [97, 98]


def test_typed_storage_resize_returns_none():
    s = ember.arange(4.0).storage()
    assert s.resize_(3) is None
    assert s.size() == 3 and s.tolist() == [0.0, 1.0, 2.0]
    torch = _torch()
    t = torch.arange(4.0).storage()
    assert t.resize_(3) is None and t.tolist() == [0.0, 1.0, 2.0]


def test_typed_storage_conversions_and_clone():
    x = ember.arange(4.0)
    s = x.storage()
    assert s.double().dtype == ember.float64
    assert s.int().tolist() == [0, 1, 2, 3]
    assert s.bool().tolist() == [False, True, True, True]
    assert s.half().dtype == ember.float16
    assert s.long().type() == "ember.LongStorage"
    assert s.float() is s
    c = s.clone()
    c[0] = 7
    assert x[0].item() == 0.0
    assert s.is_shared() is False and s.is_pinned() is False
    assert s.pickle_storage_type() == "FloatStorage"
    assert s.get_device() == (None if s.device.type == "cpu" else (s.device.index or 0))
    assert s.cpu() is not s and s.cpu().tolist() == s.tolist()
    torch = _torch()
    t = torch.arange(4.0).storage()
    assert t.int().tolist() == [0, 1, 2, 3] and t.long().type() == "torch.LongStorage"
    assert t.pickle_storage_type() == "FloatStorage" and t.get_device() is None


def test_typed_storage_copy_():
    s = ember.arange(4.0).storage()
    s.copy_(ember.ones(4).storage())
    assert s.tolist() == [1.0] * 4
    msg = "size does not match, self was 16 bytes but src was 12 bytes"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        s.copy_(ember.ones(3).storage())
    torch = _torch()
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        torch.arange(4.0).storage().copy_(torch.ones(3).storage())


def test_storage_from_buffer():
    buf = b"\x00\x00\x80\x3f"
    assert ember.UntypedStorage.from_buffer(buf, "big", dtype=ember.float32).tolist() == [
        63, 128, 0, 0]
    assert ember.UntypedStorage.from_buffer(buf + b"\x00\x00", "little", dtype=ember.uint8,
                                            count=2, offset=1).tolist() == [0, 128]
    assert ember.FloatStorage.from_buffer(buf, "little").tolist() == [1.0]
    assert ember.UntypedStorage.from_buffer(b"\x05", dtype=ember.uint8).tolist() == [5]
    s = ember.TypedStorage.from_buffer(buf, "little")
    assert s.dtype == ember.float32 and s.tolist() == [1.0]
    torch = _torch()
    assert torch.UntypedStorage.from_buffer(buf, "big", dtype=torch.float32).tolist() == [
        63, 128, 0, 0]
    assert torch.FloatStorage.from_buffer(buf, "little").tolist() == [1.0]


@pytest.mark.parametrize("call, exc, msg", [
    (lambda m: m.TypedStorage.from_buffer(b"\x00\x00\x80", "little", dtype=m.float32),
     ValueError, "buffer size (3) must be a multiple of element size (4)"),
    (lambda m: m.UntypedStorage.from_buffer(b"\x00\x00\x80\x3f", "little", dtype=m.float32,
                                            count=5),
     ValueError, "buffer has only 4 elements after offset 0, but specified a size of 5"),
    (lambda m: m.UntypedStorage.from_buffer(b"\x00\x00\x80\x3f", "middle", dtype=m.float32),
     ValueError, "invalid byte_order 'middle' (expected 'big', 'little', or 'native')"),
    (lambda m: m.UntypedStorage.from_buffer(b"\x00"), RuntimeError,
     "argument 'dtype' cannot be None"),
    (lambda m: m.UntypedStorage.from_buffer(b"\x00" * 4, dtype=m.float32), RuntimeError,
     "function missing required argument 'byte_order' (pos 2)"),
])
def test_storage_from_buffer_errors(call, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        call(ember)
    torch = _torch()
    with pytest.raises(exc, match=re.escape(msg)):
        call(torch)


def test_empty_tensor_channels_last_contiguity():
    x = ember.zeros(0, 3, 4, 5)
    assert x.is_contiguous(memory_format=ember.channels_last) is False
    y = x.contiguous(memory_format=ember.channels_last)
    assert y.stride() == (60, 1, 15, 3)
    assert y.is_contiguous(memory_format=ember.channels_last)
    assert x.clone(memory_format=ember.channels_last).stride() == (60, 1, 15, 3)
    z = ember.zeros(0, 3, 4, 5, 2).contiguous(memory_format=ember.channels_last_3d)
    assert z.stride() == (120, 1, 30, 6, 3)
    torch = _torch()
    t = torch.zeros(0, 3, 4, 5)
    assert t.is_contiguous(memory_format=torch.channels_last) is False
    assert t.contiguous(memory_format=torch.channels_last).stride() == (60, 1, 15, 3)


def test_memory_format_type_error_names_layout():
    msg = "contiguous(): argument 'memory_format' must be ember.memory_format, not ember.layout"
    with pytest.raises(TypeError, match=re.escape(msg)):
        ember.zeros(2).contiguous(memory_format=ember.strided)
    torch = _torch()
    with pytest.raises(TypeError, match=re.escape(msg.replace("ember", "torch"))):
        torch.zeros(2).contiguous(memory_format=torch.strided)


@pytest.mark.parametrize("offset, size, stride, msg", [
    (0, (2,), (-1,), "Storage size calculation overflowed with sizes=[2] and strides=[-1]"),
    (0, (2, 3), (1,), "unequal size length (2) and stride length (1)"),
    (0, (-2,), (1,), "numel: integer multiplication overflow"),
    (-1, (-2,), (1,), "Tensor: invalid storage offset -1"),
])
def test_set_storage_checks_geometry(offset, size, stride, msg):
    x = ember.arange(4.0)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.empty(0).set_(x.untyped_storage(), offset, size, stride)
    assert ember.empty(0).set_(x.untyped_storage(), 0, (1,), (-1,)).tolist() == [0.0]
    torch = _torch()
    t = torch.arange(4.0)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        torch.empty(0).set_(t.untyped_storage(), offset, size, stride)
