"""ember.nn recurrent layers: gradients (gradcheck), packing, dropout, errors, devices."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck, gradgradcheck
from ember.nn.modules.rnn import _recurrent_layer, _reference_layer, _steps
from ember.nn.utils import rnn as rnn_utils
from ember.testing import register_test_device


def _double(module):
    ember.manual_seed(0)
    return module.double()


def _r(*shape, requires_grad=True):
    return ember.randn(*shape, dtype=ember.float64, requires_grad=requires_grad)


# -- gradcheck ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["RNNCell", "RNNCell_relu", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cell_gradcheck(kind, bias):
    ember.manual_seed(1)
    if kind == "RNNCell_relu":
        cell = nn.RNNCell(3, 4, bias=bias, nonlinearity="relu").double()
    else:
        cell = getattr(nn, kind)(3, 4, bias=bias).double()
    params = tuple(cell.parameters())
    x, h = _r(2, 3), _r(2, 4)
    if kind == "LSTMCell":
        c = _r(2, 4)
        assert gradcheck(lambda x, h, c, *p: cell(x, (h, c)), (x, h, c) + params)
    else:
        assert gradcheck(lambda x, h, *p: cell(x, h), (x, h) + params)


def _cell(kind, bias=True):
    if kind == "RNNCell_relu":
        return nn.RNNCell(3, 4, bias=bias, nonlinearity="relu").double()
    return getattr(nn, kind)(3, 4, bias=bias).double()


CELLS = ["RNNCell", "RNNCell_relu", "LSTMCell", "GRUCell"]


@pytest.mark.parametrize("kind", CELLS)
def test_cell_step_is_one_fused_node_equal_to_the_layer_reference(kind):
    """A cell's step is ONE autograd node (no per-step weight setup), with the values and
    gradients of the layer op's Tensor-op reference, hx given or not."""
    from ember.nn.modules.rnn import _cell_reference

    ember.manual_seed(11)
    cell = _cell(kind)
    mode = {"RNNCell": "RNN_TANH", "RNNCell_relu": "RNN_RELU", "LSTMCell": "LSTM",
            "GRUCell": "GRU"}[kind]
    x, h, c = _r(5, 3), _r(5, 4), _r(5, 4)
    for state in ((h, c), (None, None)):
        hx = state if kind == "LSTMCell" else state[0]
        got = cell(x, None if state[0] is None else hx)
        got = got if isinstance(got, tuple) else (got,)
        assert got[0].grad_fn.next_functions[0][0] is not None
        assert len({o.grad_fn for o in got}) == 1  # h' and c' come from one node
        p = (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
        want = _cell_reference(mode)(x, state[0], state[1], *p)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12,
                                       atol=1e-14)
        seeds = [ember.randn(o.shape, dtype=ember.float64) for o in got]
        used = state if kind == "LSTMCell" else state[:1]
        wrt = [x] + list(cell.parameters()) + [t for t in used if t is not None]
        g1 = ember.autograd.grad(got, wrt, seeds)
        g2 = ember.autograd.grad([w for w in want if w is not None], wrt, seeds)
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", CELLS)
@pytest.mark.parametrize("bias", [True, False])
def test_cell_without_state_gradcheck_and_gradgradcheck(kind, bias):
    ember.manual_seed(12)
    cell = _cell(kind, bias)
    params = tuple(cell.parameters())
    x = _r(2, 3)
    assert gradcheck(lambda x, *p: cell(x), (x,) + params)
    h = _r(2, 4)
    if kind == "LSTMCell":
        c = _r(2, 4)
        f = (lambda x, h, c, *p: cell(x, (h, c))[1])  # c' alone: h' gets no gradient
        assert gradcheck(f, (x, h, c) + params)
        assert gradgradcheck(lambda x, h, c, *p: cell(x, (h, c)), (x, h, c) + params)
    else:
        assert gradgradcheck(lambda x, h, *p: cell(x, h), (x, h) + params)


@pytest.mark.parametrize("kind", CELLS)
def test_cell_forward_ad_matches_backward(kind):
    """The tangent forward AD derives for the fused step equals the backward's transpose."""
    from ember.func import jvp, vjp

    ember.manual_seed(13)
    cell = _cell(kind)
    x, h, t = _r(3, 3, requires_grad=False), _r(3, 4, requires_grad=False), _r(3, 3)
    f = (lambda x: cell(x, (h, h))[1]) if kind == "LSTMCell" else (lambda x: cell(x, h))
    _, tangent = jvp(f, (x,), (t,))
    out, pull = vjp(f, x)
    u = ember.randn(out.shape, dtype=ember.float64)
    lhs = float((u * tangent).sum())
    rhs = float((pull(u)[0] * t).sum())
    assert abs(lhs - rhs) < 1e-10 * max(1.0, abs(lhs))


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_cell_loop_compiled_export_and_jit_match_eager(kind):
    ember.manual_seed(14)
    cell = _cell(kind)

    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = cell

        def forward(self, x):
            h = ember.zeros(x.shape[0], 4, dtype=x.dtype)
            state = (h, h) if kind == "LSTMCell" else h
            for t in range(x.shape[1]):
                state = self.cell(x[:, t], state)
            return state[0] if kind == "LSTMCell" else state

    m = Loop()
    x = _r(2, 5, 3, requires_grad=False)
    want = m(x)
    with ember.no_grad():
        got = ember.compile(m, fullgraph=True)(x)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    ep = ember.export.export(m, (x,))
    np.testing.assert_allclose(ep.module()(x).detach().numpy(), want.detach().numpy(),
                               rtol=1e-12, atol=1e-14)
    traced = ember.jit.trace(m, (x,))
    np.testing.assert_allclose(traced(x).detach().numpy(), want.detach().numpy(),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", CELLS)
def test_cell_training_step_compiled_equals_eager(kind):
    ember.manual_seed(15)
    cells = [_cell(kind) for _ in range(2)]
    cells[1].load_state_dict(cells[0].state_dict())
    x, tgt = _r(4, 3, requires_grad=False), _r(4, 4, requires_grad=False)

    def make_step(cell):
        opt = ember.optim.SGD(cell.parameters(), lr=0.1)

        def step(x, tgt):
            opt.zero_grad()
            h = None
            for _ in range(3):
                out = cell(x, h)
                h = out
            y = h[0] if isinstance(h, tuple) else h
            loss = ((y - tgt) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make_step(cells[0]), ember.compile(make_step(cells[1]))
    for _ in range(3):
        a, b = eager(x, tgt), compiled(x, tgt)
        np.testing.assert_allclose(float(a), float(b), rtol=1e-12)
    for p, q in zip(cells[0].parameters(), cells[1].parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("state", [True, False])
@pytest.mark.parametrize("outputs", ["both", "h", "c"])
def test_lstm_cell_float32_matches_float64(state, outputs):
    """The float32 step (kernels.c's fused gate passes where built) against float64."""
    ember.manual_seed(16)
    c64 = nn.LSTMCell(5, 6).double()
    c32 = nn.LSTMCell(5, 6)
    c32.load_state_dict({k: v.float() for k, v in c64.state_dict().items()})
    x = ember.randn(4, 5, dtype=ember.float64)
    hx = (ember.randn(4, 6, dtype=ember.float64), ember.randn(4, 6, dtype=ember.float64))
    res = []
    for cell, dt in ((c64, ember.float64), (c32, ember.float32)):
        xi = x.to(dt).requires_grad_()
        hi = tuple(t.to(dt).requires_grad_() for t in hx) if state else None
        h, c = cell(xi, hi)
        loss = {"both": h.sum() + (c * c).sum(), "h": h.sum(), "c": (c * c).sum()}[outputs]
        wrt = [xi] + list(cell.parameters()) + (list(hi) if state else [])
        res.append([h, c] + list(ember.autograd.grad(loss, wrt)))
    for a, b in zip(*res):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=2e-5,
                                   atol=2e-6)


def test_unbatched_cell_gradcheck():
    ember.manual_seed(2)
    cell = nn.LSTMCell(3, 2).double()
    x, h, c = _r(3), _r(2), _r(2)
    out = cell(x, (h, c))
    assert out[0].shape == (2,) and out[1].shape == (2,)
    assert gradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))


def test_lstm_two_layer_bidirectional_gradcheck():
    ember.manual_seed(3)
    lstm = nn.LSTM(2, 3, num_layers=2, bidirectional=True).double()
    x, h, c = _r(3, 2, 2), _r(4, 2, 3), _r(4, 2, 3)
    params = tuple(lstm.parameters())
    def flat(x, h, c, *p):  # gradcheck takes a tensor or a flat tuple of them (PyTorch's)
        out, (hn, cn) = lstm(x, (h, c))
        return out, hn, cn

    assert gradcheck(flat, (x, h, c) + params)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_packed_bidirectional_gradcheck(kind):
    ember.manual_seed(4)
    kw = {"proj_size": 2} if kind == "LSTM" else {}
    m = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=True, **kw).double()
    x = _r(4, 3, 2)
    params = tuple(m.parameters())

    def f(x, *p):
        packed = rnn_utils.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        out, hidden = m(packed)
        return (out.data,) + (hidden if isinstance(hidden, tuple) else (hidden,))

    assert gradcheck(f, (x,) + params)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_layer_gradgradcheck(mode):
    ember.manual_seed(5)
    G = {"LSTM": 4, "GRU": 3}.get(mode, 1) * 2
    xw, h0, w, b = _r(5, G), _r(2, 2), _r(G, 2), _r(G)
    c0 = _r(2, 2) if mode == "LSTM" else None
    sizes = [2, 2, 1]

    def f(xw, h0, w, b, *c):
        out = _recurrent_layer(mode, xw, h0, c[0] if c else None, w, b, None, sizes, True)
        return tuple(o for o in out if o is not None)

    inputs = (xw, h0, w, b) + ((c0,) if c0 is not None else ())
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_lstm_proj_gradgradcheck():
    ember.manual_seed(6)
    m = nn.LSTM(2, 3, proj_size=2).double()
    x = _r(3, 1, 2)
    assert gradgradcheck(lambda x, *p: m(x)[0], (x,) + tuple(m.parameters()))


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_fused_matches_reference(mode):
    ember.manual_seed(7)
    G = {"LSTM": 4, "GRU": 3}.get(mode, 1) * 3
    xw, h0, w, b = _r(7, G), _r(3, 3), _r(G, 3), _r(G)
    c0 = _r(3, 3) if mode == "LSTM" else None
    sizes = [3, 2, 2]
    for reverse in (False, True):
        fused = _recurrent_layer(mode, xw, h0, c0, w, b, None, sizes, reverse)
        ref = _reference_layer(mode, xw, h0, c0, w, b, None, _steps(sizes, reverse), 3)
        for a, r in zip(fused, ref):
            if a is not None:
                np.testing.assert_allclose(a.detach().numpy(), r.detach().numpy(), rtol=1e-12,
                                           atol=1e-12)


# -- behaviour -------------------------------------------------------------------------------

def test_parameter_names_shapes_and_init():
    ember.manual_seed(0)
    m = nn.LSTM(5, 8, num_layers=2, bidirectional=True, proj_size=3)
    names = [n for n, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_hr_l0"]
    assert names[5] == "weight_ih_l0_reverse"
    assert m.weight_ih_l1.shape == (32, 6) and m.weight_hh_l0.shape == (32, 3)
    assert m.weight_hr_l1_reverse.shape == (3, 8)
    bound = 1 / math.sqrt(8)
    for p in m.parameters():
        assert float(p.abs().max()) <= bound
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 5
    m.flatten_parameters()
    g = nn.GRU(4, 6, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert g.weight_ih_l0.shape == (18, 4)


def test_reprs():
    assert repr(nn.LSTM(10, 20, 2)) == "LSTM(10, 20, num_layers=2)"
    assert repr(nn.GRU(3, 4, batch_first=True, bidirectional=True)) == \
        "GRU(3, 4, batch_first=True, bidirectional=True)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"


def test_output_shapes_and_no_grad():
    m = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True, proj_size=2)
    x = ember.randn(3, 5, 4)
    with ember.no_grad():
        out, (h, c) = m(x)
    assert out.shape == (3, 5, 4) and h.shape == (4, 3, 2) and c.shape == (4, 3, 6)
    assert out.grad_fn is None and h.grad_fn is None
    out, (h, c) = m(x)
    assert out.requires_grad and h.requires_grad and c.requires_grad


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_packed_equals_padded_per_sequence(kind):
    ember.manual_seed(8)
    m = getattr(nn, kind)(3, 4, bidirectional=True, batch_first=True)
    seqs = [ember.randn(n, 3) for n in (2, 5, 3)]
    packed = rnn_utils.pack_sequence(seqs, enforce_sorted=False)
    with ember.no_grad():
        _compare_packed(m, kind, seqs, packed)


def _compare_packed(m, kind, seqs, packed):
    out, hidden = m(packed)
    h = hidden[0] if kind == "LSTM" else hidden
    padded, lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
    assert lengths.tolist() == [2, 5, 3]
    for i, s in enumerate(seqs):
        o, hid = m(s.unsqueeze(0))
        hi = hid[0] if kind == "LSTM" else hid
        np.testing.assert_allclose(padded[i, :s.shape[0]].numpy(), o[0].numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(h[:, i].numpy(), hi[:, 0].numpy(), rtol=1e-5, atol=1e-6)
        assert float(padded[i, s.shape[0]:].abs().sum()) == 0.0


def test_dropout_eval_equals_no_dropout():
    ember.manual_seed(9)
    with_dropout = nn.LSTM(3, 4, num_layers=3, dropout=0.5)
    plain = nn.LSTM(3, 4, num_layers=3)
    plain.load_state_dict(with_dropout.state_dict())
    x = ember.randn(5, 2, 3)
    with_dropout.eval()
    a, b = with_dropout(x), plain(x)
    np.testing.assert_array_equal(a[0].detach().numpy(), b[0].detach().numpy())
    np.testing.assert_array_equal(a[1][0].detach().numpy(), b[1][0].detach().numpy())
    with_dropout.train()
    ember.manual_seed(1)
    t1 = with_dropout(x)[0]
    ember.manual_seed(1)
    t2 = with_dropout(x)[0]
    np.testing.assert_array_equal(t1.detach().numpy(), t2.detach().numpy())
    assert not np.allclose(t1.detach().numpy(), b[0].detach().numpy())
    t1.sum().backward()
    assert with_dropout.weight_ih_l0.grad is not None


def test_constructor_errors_and_warning():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.RNN(3, 0)
    with pytest.raises(TypeError, match="batch_first should be of type bool, got: int"):
        nn.RNN(3, 4, batch_first=1)


def test_forward_errors():
    m = nn.LSTM(10, 20)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 10, got 7"):
        m(ember.randn(5, 3, 7))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 20\), got "
                                           r"\[1, 2, 20\]"):
        m(ember.randn(5, 3, 10), (ember.randn(1, 2, 20), ember.randn(1, 3, 20)))
    g = nn.GRU(10, 20)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 3, 20\), got "
                                           r"\[2, 3, 20\]"):
        g(ember.randn(5, 3, 10), ember.randn(2, 3, 20))
    with pytest.raises(ValueError, match="RNN input dtype"):
        g(ember.randn(5, 3, 10, dtype=ember.float64))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D"):
        nn.GRUCell(3, 4)(ember.randn(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        nn.RNNCell(3, 4)(ember.randn(5, 2))


def test_device_kept_and_mixing_raises():
    register_test_device("testdev")
    dev = ember.device("testdev", 0)
    m = nn.GRU(3, 4, num_layers=2).to(dev)
    x = ember.randn(5, 2, 3, device=dev, requires_grad=True)
    out, h = m(x)
    assert out.device == dev and h.device == dev
    out.sum().backward()
    assert x.grad.device == dev and m.weight_hh_l1.grad.device == dev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m(x, ember.zeros(2, 2, 4))


def test_training_step_decreases_loss():
    ember.manual_seed(10)
    m = nn.LSTM(4, 8)
    head = nn.Linear(8, 1)
    opt = ember.optim.Adam(list(m.parameters()) + list(head.parameters()), lr=0.01)
    x, y = ember.randn(6, 5, 4), ember.randn(5, 1)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        out, _ = m(x)
        loss = ((head(out[-1]) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def test_inplace_change_of_output_is_detected():
    m = nn.GRU(3, 4)
    out, _ = m(ember.randn(5, 2, 3))
    out.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_double_backward_matches_first_order():
    ember.manual_seed(11)
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    x = _r(5, 2, 3)
    out, (h, c) = m(x)
    loss = out.pow(2).sum() + h.sum() + c.sum()
    (g_graph,) = ember.autograd.grad(loss, x, create_graph=True)
    out, (h, c) = m(x)
    loss = out.pow(2).sum() + h.sum() + c.sum()
    (g_plain,) = ember.autograd.grad(loss, x)
    np.testing.assert_allclose(g_graph.detach().numpy(), g_plain.numpy(), rtol=1e-10)
    assert g_graph.requires_grad
    g_graph.sum().backward()
    assert m.weight_hh_l1_reverse.grad is not None
