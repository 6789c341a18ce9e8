"""The float8 dtypes: PyTorch's conversions bit for bit, limits, promotion, views, files.

``ember.float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2``, ``float8_e5m2fnuz`` and
``float8_e8m0fnu`` hold ``ml_dtypes``' one-byte floats; casts to them follow PyTorch's CPU
conversions where those differ from ``ml_dtypes``' (saturating e4m3fn, e5m2's NaN bits,
e8m0's magnitude and zero). The reference bytes below were read from PyTorch 2.13; the
oracle tests compare against a live PyTorch where it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

NAMES = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
         "float8_e8m0fnu"]

SPECIAL = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 448, -448, 464, 464.1, 480,
                    1e30, -1e30, 1e-30, 2 ** -10, 2 ** -9, 3 * 2 ** -10], np.float32)
#: PyTorch 2.13's bytes for SPECIAL, per dtype
SPECIAL_BYTES = {
    "float8_e4m3fn": [126, 254, 127, 255, 0, 128, 126, 254, 126, 126, 126, 126, 254, 0, 0, 1, 2],
    "float8_e5m2": [124, 252, 127, 255, 0, 128, 95, 223, 95, 95, 96, 124, 252, 0, 20, 24, 26],
    "float8_e4m3fnuz": [128, 128, 128, 128, 0, 0, 128, 128, 128, 128, 128, 128, 128, 0, 1, 2,
                        3],
    "float8_e5m2fnuz": [128, 128, 128, 128, 0, 0, 99, 227, 99, 99, 100, 128, 128, 0, 24, 28, 30],
    "float8_e8m0fnu": [255, 255, 255, 255, 0, 0, 136, 136, 136, 136, 136, 227, 227, 27, 117, 118,
                       119],
}


def _bytes(t) -> list:
    return t.view(ember.uint8).cpu().numpy().tolist()


@pytest.mark.parametrize("name", NAMES)
def test_casts_of_special_values_are_pytorchs(name):
    dt = getattr(ember, name)
    x = ember.tensor(SPECIAL)
    assert _bytes(x.to(dt)) == SPECIAL_BYTES[name]
    # from float64 and through copy_ as well
    assert _bytes(x.double().to(dt)) == SPECIAL_BYTES[name]
    out = ember.empty(len(SPECIAL), dtype=dt)
    out.copy_(x)
    assert _bytes(out) == SPECIAL_BYTES[name]


@pytest.mark.parametrize("name", NAMES)
def test_every_byte_reads_back_as_its_value(name):
    dt = getattr(ember, name)
    import ml_dtypes

    allb = ember.arange(256, dtype=ember.int64).to(ember.uint8)
    got = allb.view(dt).float().numpy()
    want = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    # and each value that is not NaN casts back to its own byte
    finite = ~np.isnan(want)
    back = ember.tensor(want[finite]).to(dt).view(ember.uint8).numpy()
    if name == "float8_e8m0fnu":  # no zero: byte 0 is 2**-127, which float32 holds
        np.testing.assert_array_equal(back, np.arange(256)[finite])
    else:  # -0.0 and 0.0 of the fnuz formats are one byte
        np.testing.assert_array_equal(back[want[finite] != 0], np.arange(256)[finite][
            want[finite] != 0])


def test_dtype_attributes_and_names():
    for name in NAMES:
        dt = getattr(ember, name)
        assert dt.is_floating_point and not dt.is_complex and dt.itemsize == 1
        assert repr(dt) == f"ember.{name}"
        assert ember.empty(3, dtype=dt).element_size() == 1
    assert ember.float8_e4m3fn.is_signed and not ember.float8_e8m0fnu.is_signed
    f = ember.finfo(ember.float8_e4m3fn)
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.resolution) == (8, 0.125, 448, -448,
                                                                   2 ** -6, 1.0)
    assert ember.finfo(ember.float8_e5m2).max == 57344
    assert ember.finfo(ember.float8_e5m2fnuz).eps == 0.125  # c10's value


def test_promotion_is_refused_as_pytorch_does():
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported, "
                       "attempted to promote Float8_e4m3fn and Float"):
        ember.promote_types(ember.float8_e4m3fn, ember.float32)
    with pytest.raises(RuntimeError, match="Float8_e5m2 and Float8_e4m3fn"):
        ember.promote_types(ember.float8_e5m2, ember.float8_e4m3fn)
    assert ember.promote_types(ember.float8_e5m2, ember.float8_e5m2) is ember.float8_e5m2


def test_storage_ops_keep_the_dtype():
    x = ember.tensor([0.5, -1.25, 3.0, 448.0]).to(ember.float8_e4m3fn)
    for y in (ember.cat([x, x]), x.clone(), x[1:], x.reshape(2, 2).t(), x.flip(0),
              ember.stack([x, x]), x.new_zeros(2), x.contiguous()):
        assert y.dtype is ember.float8_e4m3fn
    assert x.tolist() == [0.5, -1.25, 3.0, 448.0]
    assert (x == x).all().item()
    assert ember.full((2,), 300.0, dtype=ember.float8_e4m3fn).tolist() == [288.0, 288.0]
    assert x.to(ember.bfloat16).tolist() == [0.5, -1.25, 3.0, 448.0]
    assert "dtype=ember.float8_e4m3fn" in repr(x)


def test_view_as_bytes_and_back():
    x = ember.tensor([1.0, -2.0]).to(ember.float8_e5m2)
    b = x.view(ember.uint8)
    assert b.tolist() == [60, 192]
    b[0] = 64  # 2.0: the view shares memory
    assert x.tolist() == [2.0, -2.0]


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_and_safetensors_round_trip(tmp_path, name):
    dt = getattr(ember, name)
    x = (ember.arange(-6, 6) / 3.0).to(dt)
    ember.save({"x": x}, tmp_path / "x.pt")
    back = ember.load(tmp_path / "x.pt", weights_only=True)["x"]
    assert back.dtype is dt and _bytes(back) == _bytes(x)
    ember.safetensors.save_file({"x": x}, tmp_path / "x.safetensors")
    back = ember.safetensors.load_file(tmp_path / "x.safetensors")["x"]
    assert back.dtype is dt and _bytes(back) == _bytes(x)
    with ember.safetensors.safe_open(tmp_path / "x.safetensors") as f:
        assert _bytes(f.get_slice("x")[2:5]) == _bytes(x)[2:5]


def test_a_backend_without_float8_refuses_it_clearly():
    from ember.backends import register_backend, unregister_backend
    from ember.testing import NumpyTestBackend

    class NoF8(NumpyTestBackend):
        unsupported_dtypes = frozenset({ember.float8_e4m3fn.np})

    register_backend(NoF8("nof8", 1))
    try:
        with pytest.raises(TypeError, match="nof8 tensors cannot hold float8_e4m3fn"):
            ember.ones(2).to("nof8:0", dtype=ember.float8_e4m3fn)
    finally:
        unregister_backend("nof8")


# -- against PyTorch ----------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # the float16 sources
@pytest.mark.parametrize("name", NAMES)
def test_casts_equal_pytorchs(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    vals = np.concatenate([rng.standard_normal(4000).astype(np.float32) * s
                           for s in (1e-4, 1e-2, 1, 10, 100, 1000, 1e5)] + [SPECIAL])
    dt, tdt = getattr(ember, name), getattr(torch, name)
    for src in ("float32", "float64", "float16", "bfloat16"):
        if src == "bfloat16":  # NaN signs through bfloat16 differ (ml_dtypes vs c10)
            vals = vals[~np.isnan(vals)]
        ours = ember.tensor(vals).to(getattr(ember, src)).to(dt)
        theirs = torch.from_numpy(vals).to(getattr(torch, src)).to(tdt)
        np.testing.assert_array_equal(np.array(_bytes(ours)),
                                      theirs.view(torch.uint8).numpy(), err_msg=src)
    ints = np.arange(-600, 600)
    np.testing.assert_array_equal(np.array(_bytes(ember.tensor(ints).to(dt))),
                                  torch.from_numpy(ints).to(tdt).view(torch.uint8).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_finfo_equals_pytorchs(name):
    torch = pytest.importorskip("torch")
    ours, theirs = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert getattr(ember, name).is_signed == getattr(torch, name).is_signed


def test_files_cross_with_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    theirs = {n: (torch.arange(-6, 6) / 3.0).to(getattr(torch, n)) for n in NAMES}
    torch.save(theirs, tmp_path / "t.pt")
    st_torch.save_file(theirs, tmp_path / "t.safetensors")
    for ours in (ember.load(tmp_path / "t.pt", weights_only=True),
                 ember.safetensors.load_file(tmp_path / "t.safetensors")):
        for n in NAMES:
            assert ours[n].dtype is getattr(ember, n)
            assert _bytes(ours[n]) == theirs[n].view(torch.uint8).tolist()
    ember.save(ours, tmp_path / "e.pt")
    ember.safetensors.save_file(ours, tmp_path / "e.safetensors")
    for back in (torch.load(tmp_path / "e.pt"), st_torch.load_file(tmp_path / "e.safetensors")):
        for n in NAMES:
            assert back[n].dtype == getattr(torch, n)
            assert back[n].view(torch.uint8).tolist() == theirs[n].view(torch.uint8).tolist()
