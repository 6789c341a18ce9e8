"""Names that training frameworks import from ``torch`` at their own import or first use
(PyTorch Lightning 2.6: ``lightning.fabric`` and ``lightning.pytorch``), and the behaviour
behind them. tests/integration/test_lightning.py runs a whole Lightning program; these pin
each piece on its own."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember._C as C
from ember import nn

CPU = "cpu"


def test_classes_lightning_imports():
    assert C._TensorMeta is type(ember.Tensor)
    assert ember.ScriptModule is ember.jit.ScriptModule
    assert ember.ScriptFunction is ember.jit.ScriptFunction
    from ember._dynamo import OptimizedModule

    assert isinstance(ember.compile(nn.Linear(2, 2)), OptimizedModule)


# -- torch.PyTorchFileReader ------------------------------------------------------------------

@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "c.pt"
    ember.save({"a": ember.arange(6.0, device=CPU).reshape(2, 3),
                "b": ember.tensor([7, 8], dtype=ember.int16, device=CPU)}, path)
    return path


def test_file_reader_reads_records_and_storages(checkpoint):
    r = ember.PyTorchFileReader(str(checkpoint))
    assert ember._C.PyTorchFileReader is ember.PyTorchFileReader
    names = r.get_all_records()
    assert {"data.pkl", "byteorder", "version", "data/0", "data/1"} <= set(names)
    assert r.has_record("data.pkl") and not r.has_record("data/9")
    assert r.get_record("byteorder") == b"little"
    assert r.get_record_size("data/0") == 24
    s0 = r.get_storage_from_record("data/0", 6, ember.float32)
    assert s0.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    raw = r.get_storage_from_record("data/1", 4, ember.UntypedStorage)  # numel in bytes
    assert raw.dtype == ember.uint8
    untyped = raw._typed_storage()._untyped_storage
    assert untyped.nbytes() == 4
    assert np.frombuffer(bytes(untyped.tolist()), np.int16).tolist() == [7, 8]
    with pytest.raises(RuntimeError, match="PytorchStreamReader failed locating file nope: "
                                           "file not found"):
        r.get_record("nope")
    with open(checkpoint, "rb") as f:  # a file object is read, not closed
        assert ember.PyTorchFileReader(f).get_record("byteorder") == b"little"
        assert not f.closed


def test_file_reader_agrees_with_the_oracle(checkpoint):
    torch = pytest.importorskip("torch")
    theirs, ours = torch.PyTorchFileReader(str(checkpoint)), ember.PyTorchFileReader(checkpoint)
    assert sorted(theirs.get_all_records()) == sorted(ours.get_all_records())
    for name in theirs.get_all_records():
        assert theirs.get_record(name) == ours.get_record(name), name
        assert theirs.get_record_size(name) == ours.get_record_size(name), name
    assert theirs.serialization_id() == ours.serialization_id()


def test_typed_storage_is_quiet():
    x = ember.arange(3.0, device=CPU)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ts = x._typed_storage()
    assert ts.dtype == ember.float32 and ts._untyped_storage.nbytes() == 12


# -- torch._C._nn._parse_to -------------------------------------------------------------------

_PARSE_CASES = [
    (("cpu",), {}), (("float16",), {}), (("tensor",), {}), (("cpu", "float64", True), {}),
    ((), {"device": "cpu", "dtype": "float32", "non_blocking": True,
          "memory_format": "channels_last"}),
    (("float16", True), {}), (("cpu",), {"non_blocking": True}), (("tensor", True), {}),
    (("device",), {"dtype": "int8"}),
]


def _materialize(lib, values):
    x = lib.zeros(2, dtype=lib.float64, device="cpu")
    table = {"float16": lib.float16, "float64": lib.float64, "float32": lib.float32,
             "int8": lib.int8, "tensor": x, "device": lib.device("cpu"),
             "channels_last": lib.channels_last}
    return [table.get(v, v) if isinstance(v, str) and v != "cpu" else v for v in values]


@pytest.mark.parametrize("args,kwargs", _PARSE_CASES)
def test_parse_to_is_pytorchs(args, kwargs):
    torch = pytest.importorskip("torch")
    theirs = torch._C._nn._parse_to(*_materialize(torch, args),
                                    **dict(zip(kwargs, _materialize(torch, kwargs.values()))))
    ours = C._nn._parse_to(*_materialize(ember, args),
                           **dict(zip(kwargs, _materialize(ember, kwargs.values()))))
    assert [str(v) for v in ours] == [str(v).replace("torch.", "ember.") for v in theirs]


def test_parse_to_refuses_copy():
    for args, kwargs in ((("cpu", ember.float16, False, True), {}), (("cpu",), {"copy": False}),
                         ((ember.float16, False, False), {})):
        with pytest.raises(RuntimeError, match=r"^\.to\(\) does not accept copy argument$"):
            C._nn._parse_to(*args, **kwargs)
    assert C._nn._parse_to(ember.float16) == (None, ember.float16, False, None)


# -- the profiler's names ----------------------------------------------------------------------

def test_profiler_names_lightning_reads():
    from ember.profiler import ProfilerAction, kineto_available
    from ember.profiler.profiler import _default_schedule_fn

    assert kineto_available() is True
    assert _default_schedule_fn(0) is ProfilerAction.RECORD
    assert ember.autograd._profiler_enabled() is False
    assert ember.autograd._disable_profiler() is None
    x = ember.ones(3, device=CPU)
    with ember.profiler.profile() as prof:
        assert ember.autograd._profiler_enabled() is True
        (x + 1).sum()
        events = ember.autograd._disable_profiler()  # stops recording: nothing after counts
        assert ember.autograd._profiler_enabled() is False
        x.mul(2)
    names = [e.name for e in events]
    assert "aten::add" in names and "aten::sum" in names and "aten::mul" not in names
    assert prof is not None


# -- torch.compile --------------------------------------------------------------------------------

def test_compiled_module_dynamo_ctx_compiles_with_the_same_settings():
    m = ember.compile(nn.Linear(3, 2, device=CPU), fullgraph=True)
    calls = []

    def step(x):
        calls.append(1)
        return m._orig_mod(x).relu().sum()

    compiled_step = m.dynamo_ctx(step)  # Lightning compiles its steps so
    x = ember.randn(4, 3, device=CPU)
    assert compiled_step(x).item() == pytest.approx(step(x).item())
    assert compiled_step.__class__.__name__ != "function"


def test_opaque_call_gets_a_dict_subclass_itself():
    # Lightning's _ResultCollection.log: a compiler.disable'd method of a dict subclass
    class Results(dict):
        def __init__(self):
            super().__init__()
            self.idx = 3

        @ember.compiler.disable
        def log(self, key, value):
            self[key] = value.detach()
            return self.idx

    res = Results()

    @ember.compile
    def step(x):
        y = (x * 2).sum()
        return y + res.log("y", y)

    for _ in range(2):
        assert step(ember.ones(3, device=CPU)).item() == 9.0
        assert res["y"].item() == 6.0 and type(res) is Results


# -- addcmul/addcdiv roundings ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("fn", ["addcmul", "addcdiv"])
def test_addc_rounds_as_pytorch(dtype, fn):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(4000).astype(np.float32) for _ in range(3)]
    for value in (1, 0.3, -1e-3):
        theirs = getattr(torch, fn)(*[torch.from_numpy(a).to(getattr(torch, dtype))
                                      for a in arrays], value=value)
        ours = getattr(ember, fn)(*[ember.from_numpy(a).to(getattr(ember, dtype))
                                    for a in arrays], value=value)
        assert np.array_equal(ours.float().numpy(), theirs.float().numpy()), value


def test_addcmul_keeps_value_unrounded_in_half_types():
    # value 1.003 is 1.0 in bfloat16: PyTorch multiplies by the float32 value (100 * 1.003 =
    # 100.3, 100.5 in bfloat16; rounding the value first would give 100)
    x = ember.zeros(1, dtype=ember.bfloat16, device=CPU)
    t = ember.full((1,), 100.0, dtype=ember.bfloat16, device=CPU)
    assert ember.addcmul(x, t, ember.ones_like(t), value=1.003).item() == 100.5
    assert ember.addcdiv(x, t, ember.ones_like(t), value=1.003).item() == 100.5
