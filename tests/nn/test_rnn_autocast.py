"""Recurrent layers and cells under CPU autocast: the output and state dtypes PyTorch's CPU
kernels give (measured on PyTorch 2.13), gradients reaching float32 weights, and bfloat16
cells keeping their dtype."""

import itertools

import numpy as np
import pytest

import ember
from ember import nn

# (module, input dtype, state dtype or "-") -> dtypes of the flattened outputs, under bfloat16
# autocast ("f" float32, "b" bfloat16, "h" float16); PyTorch's own table, from its CPU kernels
_B, _F, _H = ember.bfloat16, ember.float32, ember.float16
_CODE = {_F: "f", _B: "b", _H: "h"}
_MAKE = {"rnn": lambda lib: lib.nn.RNN(4, 3),
         "rnn_relu": lambda lib: lib.nn.RNN(4, 3, nonlinearity="relu"),
         "lstm": lambda lib: lib.nn.LSTM(4, 3),
         "lstm_proj": lambda lib: lib.nn.LSTM(4, 3, proj_size=2),
         "gru": lambda lib: lib.nn.GRU(4, 3), "rnncell": lambda lib: lib.nn.RNNCell(4, 3),
         "lstmcell": lambda lib: lib.nn.LSTMCell(4, 3), "grucell": lambda lib: lib.nn.GRUCell(4, 3)}


def _expected(name, autocast, x, state):
    """PyTorch's rule (see rnn._autocast_dtypes): layers and RNN cells in the autocast dtype;
    the GRU layer and LSTM/GRU cells in the state's dtype (hx's, else the input's) under
    bfloat16, float32 under float16; an LSTM projection's cell in that state dtype."""
    low = _CODE[autocast]
    keep = (state if state != "-" else x) if autocast is _B else "f"
    if name in ("rnn", "rnn_relu"):
        return low * 2
    if name == "lstm":
        return low * 3
    if name == "lstm_proj":
        return low * 2 + keep
    if name == "gru":
        return keep * 2
    if name == "rnncell":
        return low
    if name == "lstmcell":
        return keep * 2
    return keep  # grucell


def _run(lib, name, autocast, x_code, state_code):
    """The flattened output dtype codes of one call with library ``lib`` (ember or torch)."""
    lib.manual_seed(0)
    dts = {"f": lib.float32, "b": lib.bfloat16, "h": lib.float16}
    m = _MAKE[name](lib)
    cell = "cell" in name
    x = lib.randn((2, 4) if cell else (5, 2, 4)).to(dts[x_code])
    hx = None
    if state_code != "-":
        h = lib.zeros((2, 3) if cell else (1, 2, 2 if name == "lstm_proj" else 3),
                      dtype=dts[state_code])
        if "lstm" in name:
            hx = (h, lib.zeros((2, 3) if cell else (1, 2, 3), dtype=dts[state_code]))
        else:
            hx = h
    with lib.autocast("cpu", dtype=dts[autocast]):
        r = m(x, hx)
    flat = []
    for part in (r if isinstance(r, tuple) else (r,)):
        flat.extend(part if isinstance(part, tuple) else (part,))
    names = {lib.float32: "f", lib.bfloat16: "b", lib.float16: "h"}
    return "".join(names[t.dtype] for t in flat)


_CASES = [(name, ac, x, st) for name in _MAKE for ac in "bh"
          for x, st in itertools.product("fb", "-fb")
          if not (name == "lstm" and ac == "h")]  # PyTorch's oneDNN LSTM refuses float16


@pytest.mark.parametrize("name,ac,x,st", _CASES)
def test_output_dtypes_under_cpu_autocast(name, ac, x, st):
    got = _run(ember, name, ac, x, st)
    assert got == _expected(name, {"b": _B, "h": _H}[ac], x, st)


@pytest.mark.parametrize("name,ac,x,st", _CASES[::5])
def test_output_dtypes_match_pytorch(name, ac, x, st):
    torch = pytest.importorskip("torch")
    assert _run(ember, name, ac, x, st) == _run(torch, name, ac, x, st)


def test_float16_lstm_runs_in_float16():
    """PyTorch's oneDNN LSTM cannot run float16 on the CPU (it raises); Ember runs the layer in
    autocast's dtype, as it does for bfloat16."""
    m = nn.LSTM(4, 3)
    with ember.autocast("cpu", dtype=ember.float16):
        o, (h, c) = m(ember.randn(5, 2, 4))
    assert (o.dtype, h.dtype, c.dtype) == (_H, _H, _H)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn", "lstm_proj", "lstmcell", "rnncell"])
def test_gradients_reach_float32_weights_under_autocast(name):
    ember.manual_seed(1)
    m = _MAKE[name](ember)
    cell = "cell" in name
    x = ember.randn((2, 4) if cell else (5, 2, 4), requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        r = m(x)
    flat = []
    for part in (r if isinstance(r, tuple) else (r,)):
        flat.extend(part if isinstance(part, tuple) else (part,))
    sum(t.float().sum() for t in flat).backward()
    for p in m.parameters():
        assert p.grad is not None and p.grad.dtype == ember.float32
    assert x.grad.dtype == ember.float32
    # the bfloat16 result is the float32 layer's, rounded (loose: bfloat16 has 8 bits)
    ref = m(x.detach())
    ref = ref[0] if isinstance(ref, tuple) else ref
    np.testing.assert_allclose(flat[0].float().detach().numpy(), ref.detach().numpy(),
                               atol=0.05, rtol=0.05)


def test_input_dtype_check_is_skipped_under_autocast_only():
    m = nn.GRU(4, 3)
    x = ember.randn(5, 2, 4).bfloat16()
    with pytest.raises(ValueError, match="RNN input dtype"):
        m(x)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        o, h = m(x)
    assert o.dtype == h.dtype == ember.bfloat16


@pytest.mark.parametrize("cls", [nn.RNNCell, nn.LSTMCell, nn.GRUCell])
def test_bfloat16_cells_keep_bfloat16(cls):
    """NumPy's bfloat16 products come back float32: the cells rounded their outputs and
    gradients back (they returned float32 before)."""
    ember.manual_seed(2)
    m = cls(4, 3).bfloat16()
    x = ember.randn(2, 4).bfloat16().requires_grad_()
    out = m(x)
    out = out if isinstance(out, tuple) else (out,)
    assert all(o.dtype == ember.bfloat16 for o in out)
    sum(o.float().sum() for o in out).backward()
    assert x.grad.dtype == ember.bfloat16
    assert all(p.grad.dtype == ember.bfloat16 for p in m.parameters())
    ref = cls(4, 3)
    ref.load_state_dict({k: v.float() for k, v in m.state_dict().items()})
    want = ref(x.detach().float())
    want = want if isinstance(want, tuple) else (want,)
    for o, w in zip(out, want):
        np.testing.assert_allclose(o.float().detach().numpy(), w.detach().numpy(), atol=0.03)
