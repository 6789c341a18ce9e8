"""Parity of ember.nn's recurrent layers with torch.nn's: values, states and gradients."""

import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.nn as enn
from ember.nn.utils import rnn as ernn

torch = pytest.importorskip("torch")

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def _pair(kind, dtype="float32", **kw):
    """A torch module and an ember module of the same config with the same weights."""
    torch.manual_seed(0)
    tdt = getattr(torch, dtype)
    tm = getattr(torch.nn, kind)(**kw).to(tdt)
    em = getattr(enn, kind)(**kw).to(getattr(ember, dtype))
    tsd = tm.state_dict()
    esd = em.state_dict()
    assert list(tsd) == list(esd)
    for k in tsd:
        assert tuple(tsd[k].shape) == tuple(esd[k].shape), k
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tsd.items()})
    return tm, em


def _both(a, dtype, requires_grad=True):
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    e = ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=requires_grad)
    return t, e


def _close(e, t, dtype):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype])


def _flat(out):
    if hasattr(out, "batch_sizes"):
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _check(tm, em, t_args, e_args, t_leaves, e_leaves, dtype):
    tout = tm(*t_args)
    eout = em(*e_args)
    tf, ef = _flat(tout), _flat(eout)
    assert len(tf) == len(ef)
    for t, e in zip(tf, ef):
        _close(e, t, dtype)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(t.shape)) for t in tf]
    sum(((t * torch.tensor(w, dtype=t.dtype)).sum() for t, w in zip(tf, weights))).backward()
    sum(((e * ember.tensor(w, dtype=e.dtype)).sum() for e, w in zip(ef, weights))).backward()
    for t, e in zip(t_leaves, e_leaves):
        _close(e.grad, t.grad, dtype)
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        _close(p.grad, tp[name].grad, dtype)
    return tout, eout


CONFIGS = list(itertools.product(
    ["LSTM", "GRU", "RNN_tanh", "RNN_relu"], [1, 2], [False, True], [False, True],
    [False, True]))


def _kind_kw(kind):
    if kind.startswith("RNN"):
        return "RNN", {"nonlinearity": kind.split("_")[1]}
    return kind, {}


@pytest.mark.parametrize("kind,num_layers,bidirectional,batch_first,bias", CONFIGS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_padded_with_initial_state(kind, num_layers, bidirectional, batch_first, bias, dtype):
    name, kw = _kind_kw(kind)
    tm, em = _pair(name, dtype, input_size=5, hidden_size=6, num_layers=num_layers, bias=bias,
                   batch_first=batch_first, bidirectional=bidirectional, **kw)
    rng = np.random.default_rng(0)
    T, B, D = 4, 3, 2 if bidirectional else 1
    x = rng.standard_normal((B, T, 5) if batch_first else (T, B, 5))
    tx, ex = _both(x, dtype)
    th, eh = _both(rng.standard_normal((num_layers * D, B, 6)), dtype)
    leaves_t, leaves_e = [tx, th], [ex, eh]
    if name == "LSTM":
        tc, ec = _both(rng.standard_normal((num_layers * D, B, 6)), dtype)
        leaves_t.append(tc)
        leaves_e.append(ec)
        t_args, e_args = (tx, (th, tc)), (ex, (eh, ec))
    else:
        t_args, e_args = (tx, th), (ex, eh)
    _check(tm, em, t_args, e_args, leaves_t, leaves_e, dtype)


@pytest.mark.parametrize("num_layers,bidirectional,batch_first,bias", list(itertools.product(
    [1, 2], [False, True], [False, True], [False, True])))
def test_lstm_proj(num_layers, bidirectional, batch_first, bias):
    tm, em = _pair("LSTM", "float64", input_size=5, hidden_size=6, num_layers=num_layers,
                   bias=bias, batch_first=batch_first, bidirectional=bidirectional,
                   proj_size=3)
    rng = np.random.default_rng(0)
    T, B, D = 4, 3, 2 if bidirectional else 1
    tx, ex = _both(rng.standard_normal((B, T, 5) if batch_first else (T, B, 5)), "float64")
    th, eh = _both(rng.standard_normal((num_layers * D, B, 3)), "float64")
    tc, ec = _both(rng.standard_normal((num_layers * D, B, 6)), "float64")
    _check(tm, em, (tx, (th, tc)), (ex, (eh, ec)), [tx, th, tc], [ex, eh, ec], "float64")
    assert tuple(em.weight_hr_l0.shape) == (3, 6)


@pytest.mark.parametrize("kind,num_layers,bidirectional,batch_first",
                         list(itertools.product(["LSTM", "GRU", "RNN_tanh", "RNN_relu"], [1, 2],
                                                [False, True], [False, True])))
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed(kind, num_layers, bidirectional, batch_first, enforce_sorted):
    name, kw = _kind_kw(kind)
    dtype = "float64"
    tm, em = _pair(name, dtype, input_size=4, hidden_size=5, num_layers=num_layers,
                   batch_first=batch_first, bidirectional=bidirectional, **kw)
    rng = np.random.default_rng(2)
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 4]
    B, T, D = 5, 5, 2 if bidirectional else 1
    tx, ex = _both(rng.standard_normal((B, T, 4) if batch_first else (T, B, 4)), dtype)
    th, eh = _both(rng.standard_normal((num_layers * D, B, 5)), dtype)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    ep = ernn.pack_padded_sequence(ex, lengths, batch_first=batch_first,
                                   enforce_sorted=enforce_sorted)
    if name == "LSTM":
        tc, ec = _both(rng.standard_normal((num_layers * D, B, 5)), dtype)
        t_args, e_args = (tp, (th, tc)), (ep, (eh, ec))
        leaves_t, leaves_e = [tx, th, tc], [ex, eh, ec]
    else:
        t_args, e_args = (tp, th), (ep, eh)
        leaves_t, leaves_e = [tx, th], [ex, eh]
    tout, eout = _check(tm, em, t_args, e_args, leaves_t, leaves_e, dtype)
    assert isinstance(eout[0], ernn.PackedSequence)
    assert eout[0].batch_sizes.tolist() == tout[0].batch_sizes.tolist()
    if not enforce_sorted:
        assert eout[0].sorted_indices.tolist() == tout[0].sorted_indices.tolist()
        assert eout[0].unsorted_indices.tolist() == tout[0].unsorted_indices.tolist()
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(tout[0], batch_first=batch_first)
    epad, elen = ernn.pad_packed_sequence(eout[0], batch_first=batch_first)
    _close(epad, tpad, dtype)
    assert elen.tolist() == tlen.tolist()


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
def test_packed_without_hidden_float32(kind):
    name, kw = _kind_kw(kind)
    tm, em = _pair(name, "float32", input_size=4, hidden_size=5, num_layers=2,
                   bidirectional=True, **kw)
    rng = np.random.default_rng(3)
    seqs = [rng.standard_normal((n, 4)) for n in (3, 6, 1, 6)]
    ts = [torch.tensor(s, dtype=torch.float32, requires_grad=True) for s in seqs]
    es = [ember.tensor(s, dtype=ember.float32, requires_grad=True) for s in seqs]
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    ep = ernn.pack_sequence(es, enforce_sorted=False)
    _check(tm, em, (tp,), (ep,), ts, es, "float32")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched(kind, batch_first):
    name, kw = _kind_kw(kind)
    tm, em = _pair(name, "float64", input_size=4, hidden_size=5, num_layers=2,
                   bidirectional=True, batch_first=batch_first, **kw)
    rng = np.random.default_rng(4)
    tx, ex = _both(rng.standard_normal((6, 4)), "float64")
    th, eh = _both(rng.standard_normal((4, 5)), "float64")
    if name == "LSTM":
        tc, ec = _both(rng.standard_normal((4, 5)), "float64")
        _check(tm, em, (tx, (th, tc)), (ex, (eh, ec)), [tx, th, tc], [ex, eh, ec], "float64")
    else:
        _check(tm, em, (tx, th), (ex, eh), [tx, th], [ex, eh], "float64")
    # without an initial state
    tx2, ex2 = _both(rng.standard_normal((6, 4)), "float64")
    _check(tm, em, (tx2,), (ex2,), [tx2], [ex2], "float64")


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
def test_cells(kind, bias, batched):
    tm, em = _pair(kind, "float64", input_size=4, hidden_size=5, bias=bias)
    rng = np.random.default_rng(5)
    lead = (3,) if batched else ()
    tx, ex = _both(rng.standard_normal(lead + (4,)), "float64")
    th, eh = _both(rng.standard_normal(lead + (5,)), "float64")
    if kind == "LSTMCell":
        tc, ec = _both(rng.standard_normal(lead + (5,)), "float64")
        _check(tm, em, (tx, (th, tc)), (ex, (eh, ec)), [tx, th, tc], [ex, eh, ec], "float64")
    else:
        _check(tm, em, (tx, th), (ex, eh), [tx, th], [ex, eh], "float64")
    tx2, ex2 = _both(rng.standard_normal(lead + (4,)), "float64")
    _check(tm, em, (tx2,), (ex2,), [tx2], [ex2], "float64")


def test_rnn_cell_relu():
    tm, em = _pair("RNNCell", "float64", input_size=4, hidden_size=5, nonlinearity="relu")
    tx, ex = _both(np.random.default_rng(6).standard_normal((3, 4)), "float64")
    _check(tm, em, (tx,), (ex,), [tx], [ex], "float64")
    assert repr(em) == repr(tm)


def test_reprs_and_names():
    for kind, kw in [("LSTM", dict(num_layers=2, bias=False, batch_first=True, dropout=0.5,
                                   bidirectional=True, proj_size=2)),
                     ("GRU", dict(num_layers=1)), ("RNN", dict(nonlinearity="relu")),
                     ("LSTMCell", {}), ("GRUCell", dict(bias=False))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tm = getattr(torch.nn, kind)(4, 5, **kw)
            em = getattr(enn, kind)(4, 5, **kw)
        assert repr(em) == repr(tm)
        assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    tm, em = _pair("LSTM", input_size=3, hidden_size=4, num_layers=2, bidirectional=True)
    assert [[tuple(p.shape) for p in ps] for ps in em.all_weights] == \
        [[tuple(p.shape) for p in ps] for ps in tm.all_weights]


@pytest.mark.parametrize("make", [
    lambda m: m(ember.randn(3, 2, 7), None),
    lambda m: m(ember.randn(3, 2, 10), ember.randn(1, 3, 20)),
    lambda m: m(ember.randn(3, 2, 10), ember.randn(2, 20)),
    lambda m: m(ember.randn(3, 10), ember.randn(1, 2, 20)),
    lambda m: m(ember.randn(3, 2, 2, 10), None),
])
@pytest.mark.parametrize("kind", ["GRU", "RNN"])
def test_errors_match_torch(make, kind):
    tm = getattr(torch.nn, kind)(10, 20)
    em = getattr(enn, kind)(10, 20)

    t_exc = e_exc = None
    try:
        make(lambda x, h: tm(torch.tensor(x.numpy()),
                             None if h is None else torch.tensor(h.numpy())))
    except Exception as exc:  # noqa: B - LE001
        t_exc = exc
    try:
        make(em)
    except Exception as exc:  # noqa: B - LE001
        e_exc = exc
    assert t_exc is not None and e_exc is not None
    assert type(e_exc) is type(t_exc)
    assert str(e_exc) == str(t_exc).replace("torch.", "ember.")


def test_lstm_errors_match_torch():
    tm, em = torch.nn.LSTM(10, 20, 2), enn.LSTM(10, 20, 2)
    cases = [
        ((3, 2, 7), None),
        ((3, 2, 10), ((2, 3, 20), (2, 2, 20))),
        ((3, 2, 10), ((2, 2, 20), (2, 2, 21))),
        ((3, 2, 10), ((2, 20), (2, 20))),
        ((3, 10), ((2, 1, 20), (2, 1, 20))),
    ]
    for xs, hs in cases:
        with pytest.raises(RuntimeError) as te:
            tm(torch.zeros(xs), None if hs is None else tuple(torch.zeros(s) for s in hs))
        with pytest.raises(RuntimeError) as ee:
            em(ember.zeros(xs), None if hs is None else tuple(ember.zeros(s) for s in hs))
        assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_proj_packed(bidirectional, dtype):
    tm, em = _pair("LSTM", dtype, input_size=4, hidden_size=5, num_layers=2,
                   bidirectional=bidirectional, proj_size=2)
    rng = np.random.default_rng(7)
    D = 2 if bidirectional else 1
    tx, ex = _both(rng.standard_normal((6, 3, 4)), dtype)
    th, eh = _both(rng.standard_normal((2 * D, 3, 2)), dtype)
    tc, ec = _both(rng.standard_normal((2 * D, 3, 5)), dtype)
    lengths = [3, 6, 2]
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    ep = ernn.pack_padded_sequence(ex, lengths, enforce_sorted=False)
    _check(tm, em, (tp, (th, tc)), (ep, (eh, ec)), [tx, th, tc], [ex, eh, ec], dtype)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_dropout_eval_matches_torch(kind):
    tm, em = _pair(kind, "float64", input_size=3, hidden_size=4, num_layers=3, dropout=0.4)
    tm.eval()
    em.eval()
    tx, ex = _both(np.random.default_rng(8).standard_normal((5, 2, 3)), "float64")
    _check(tm, em, (tx,), (ex,), [tx], [ex], "float64")


@pytest.mark.parametrize("case", [
    lambda L, r: L.RNNCell(3, 4)(r(5, 2)),
    lambda L, r: L.GRUCell(3, 4)(r(5, 3), r(4, 4)),
    lambda L, r: L.LSTMCell(3, 4)(r(5, 3), (r(5, 4), r(5, 5))),
    lambda L, r: L.RNNCell(3, 4)(r(3), r(5)),
    lambda L, r: L.GRUCell(3, 4)(r(1, 2, 3)),
])
def test_cell_errors_match_torch(case):
    with pytest.raises((RuntimeError, ValueError)) as te:
        case(torch.nn, torch.randn)
    with pytest.raises((RuntimeError, ValueError)) as ee:
        case(enn, ember.randn)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)
