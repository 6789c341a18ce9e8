"""Differences from PyTorch found by differential probes of tensor conversions
(``type``, ``float``, ``__array__``, ``in``) and of ``ember.save`` / ``ember.load``.

Each test asserts PyTorch's behaviour directly, and compares with PyTorch when it is
importable.
"""

import io
import os
import pickle
import re
import warnings
import zipfile

import numpy as np
import pytest

import ember
import ember._tensor


def _torch():
    return pytest.importorskip("torch")


def _err(fn):
    """(exception type name, message) of ``fn()``."""
    try:
        fn()
    except Exception as exc:  # the outcome being compared
        return type(exc).__name__, str(exc)
    return None


def _same_error(ember_fn, torch_fn):
    torch = _torch()  # noqa: F841 - skip when absent
    e, t = _err(ember_fn), _err(torch_fn)
    assert e is not None and t is not None
    assert e[0] == t[0]
    assert e[1].replace("ember", "torch") == t[1]


# -- conversions ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, name", [("complex64", "ComplexFloatTensor"),
                                         ("complex128", "ComplexDoubleTensor"),
                                         ("complex32", "ComplexHalfTensor"),
                                         ("uint16", "UInt16Tensor"),
                                         ("float8_e4m3fn", "Float8_e4m3fnTensor")])
def test_type_name_of_every_dtype(dtype, name):
    t = ember.zeros(2, device="cpu").to(getattr(ember, dtype))
    assert t.type() == f"ember.{name}"
    assert ember.zeros(2).type(f"torch.{name}").dtype is getattr(ember, dtype)
    assert ember.zeros(2).type(f"ember.{name}").dtype is getattr(ember, dtype)
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.zeros(2).to(getattr(torch, dtype)).type() == f"torch.{name}"


def test_type_with_a_non_type_argument_is_a_type_error():
    msg = "dtype must be a type, str, or dtype object"
    with pytest.raises(TypeError, match=re.escape(msg)):
        ember.zeros(2).type(5)
    with pytest.raises(ValueError, match=re.escape("invalid type: 'float'")):
        ember.zeros(2).type(float)
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.zeros(2).type(5), lambda: torch.zeros(2).type(5))


def test_float_of_a_tensor_that_requires_grad_warns_once(monkeypatch):
    monkeypatch.setattr(ember._tensor, "_FLOAT_WARNED", [False], raising=False)
    t = ember.tensor(2.5, requires_grad=True)
    with ember.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(t) == 2.5  # no warning without grad mode
    with pytest.warns(UserWarning, match=re.escape(
            "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
            "behavior.\nConsider using tensor.detach() first.")):
        float(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        float(t * 2)  # once a process, as PyTorch's TORCH_WARN_ONCE
        int(t)
        t.item()


def test_array_of_a_tensor_that_requires_grad_raises():
    msg = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
           "instead.")
    t = ember.tensor([1.0, 2.0], requires_grad=True, device="cpu")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        np.asarray(t)
    with ember.no_grad():
        assert np.asarray(t).tolist() == [1.0, 2.0]
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: np.asarray(t),
                lambda: np.asarray(torch.tensor([1.0, 2.0], requires_grad=True)))


def test_contains_compares_element_with_self():
    msg = ("The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
           "dimension 0")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.tensor([1, 2]) in ember.tensor([1, 2, 3])  # noqa: B015
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.tensor([1, 2]) in ember.tensor([1, 2, 3]),
                lambda: torch.tensor([1, 2]) in torch.tensor([1, 2, 3]))


# -- torch.save / torch.load ------------------------------------------------------------------

def _saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def test_load_of_an_empty_file_is_a_bare_eof_error():
    with pytest.raises(EOFError) as info:
        ember.load(io.BytesIO(b""))
    assert str(info.value) == ""
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.load(io.BytesIO(b"")), lambda: torch.load(io.BytesIO(b"")))


_MINIZ = (". This is an internal miniz error. If you are seeing this error, there is a high "
          "likelihood that your checkpoint file is corrupted. This can happen if the checkpoint "
          "was not saved properly, was transferred incorrectly, or the file was modified after "
          "saving.")


@pytest.mark.parametrize("cut, what", [(2, "failed finding central directory"),
                                       (10, "failed finding central directory"),
                                       (None, "not a ZIP archive")])
def test_truncated_checkpoint_message(cut, what):
    data = _saved(ember.ones(2))
    data = data[:6] if cut is None else data[:len(data) // cut]
    msg = f"PytorchStreamReader failed reading zip archive: {what}{_MINIZ}"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.load(io.BytesIO(data))
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.load(io.BytesIO(data)), lambda: torch.load(io.BytesIO(data)))


def test_save_into_a_missing_directory(tmp_path):
    path = str(tmp_path / "nodir" / "x.pt")
    msg = f"Parent directory {tmp_path / 'nodir'} does not exist."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.save(ember.ones(2), path)
    with pytest.raises(FileNotFoundError, match=re.escape(path)):
        ember.save(ember.ones(2), path, _use_new_zipfile_serialization=False)
    assert not os.path.exists(tmp_path / "nodir")
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.save(ember.ones(2), path),
                lambda: torch.save(torch.ones(2), path))


def test_save_to_an_object_without_write():
    msg = "expected 'f' to be string, path, or a file-like object with a 'write' attribute"
    with pytest.raises(AttributeError, match=re.escape(msg)):
        ember.save(ember.ones(2), 5)
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.save(ember.ones(2), 5), lambda: torch.save(torch.ones(2), 5))


@pytest.mark.parametrize("f", [b"abc", None, 5])
def test_load_from_an_object_that_cannot_seek(f):
    msg = (f"'{type(f).__name__}' object has no attribute 'seek'. You can only ember.load from "
           "a file that is seekable. Please pre-load the data into a buffer like io.BytesIO "
           "and try to load from it instead.")
    with pytest.raises(AttributeError, match=re.escape(msg)):
        ember.load(f)
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.load(f), lambda: torch.load(f))


def test_unknown_map_location_names_untyped_storage():
    data = _saved(ember.ones(2))
    msg = ("don't know how to restore data location of ember.storage.UntypedStorage (tagged "
           "with foo)")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.load(io.BytesIO(data), map_location="foo")
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    _same_error(lambda: ember.load(io.BytesIO(data), map_location="foo"),
                lambda: torch.load(io.BytesIO(data), map_location="foo"))


class _Args(pickle.Unpickler):
    """Reads a checkpoint's data.pkl with every global a tuple maker: the pickled arguments."""

    def find_class(self, module, name):
        return lambda *args: (f"{module}.{name}", args)

    def persistent_load(self, pid):
        return "storage"


def _pickled(data: bytes):
    z = zipfile.ZipFile(io.BytesIO(data))
    name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
    return _Args(io.BytesIO(z.read(name))).load()


def test_empty_tensors_are_saved_with_contiguous_strides():
    func, args = _pickled(_saved(ember.zeros(2, 0, 3, device="cpu")))
    assert func == "torch._utils._rebuild_tensor_v2"
    assert args[2] == (2, 0, 3) and args[3] == (3, 3, 1)
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    loaded = torch.load(io.BytesIO(_saved([ember.zeros(0, device="cpu"),
                                           ember.zeros(2, 0, 3, device="cpu")])))
    assert [t.stride() for t in loaded] == [(1,), (3, 3, 1)]


def test_tensor_attributes_are_saved():
    x = ember.ones(2, device="cpu")
    x.foo = 5
    p = ember.nn.Parameter(ember.ones(2, device="cpu"))
    p.bar = "b"
    data = _saved([x, p])
    func, args = _pickled(data)[0]
    assert func == "torch._tensor._rebuild_from_type_v2" and args[3] == {"foo": 5}
    assert _pickled(data)[1][0] == "torch._utils._rebuild_parameter_with_state"
    lx, lp = ember.load(io.BytesIO(data))
    assert lx.foo == 5 and lp.bar == "b" and isinstance(lp, ember.nn.Parameter)
    assert lx.tolist() == [1.0, 1.0] and lp.requires_grad
    try:
        torch = pytest.importorskip("torch")
    except pytest.skip.Exception:
        return
    tx, tp = torch.load(io.BytesIO(data))
    assert tx.foo == 5 and tp.bar == "b" and isinstance(tp, torch.nn.Parameter)
