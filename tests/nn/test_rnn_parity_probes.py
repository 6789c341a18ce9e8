"""Recurrent layers and ``nn.utils.rnn`` against PyTorch 2.13 (differential probes).

Fixed here: ``_flat_weights`` is PyTorch's list (what ``forward`` runs with, kept up to date
by ``__setattr__``, ``_apply`` and ``_update_flat_weights``; ``_init_flat_weights`` and
``_weights_have_changed`` exist), integer dtypes' names in the cells' dtype errors,
``pack_padded_sequence`` lengths through ``as_tensor`` (an int is a 0-d tensor, refused) and
its order through ``sort``, ``pad_sequence``'s error for a 0-d sequence after the first, the
``PackedSequence_`` base. Also pinned: initialisation and dropout masks under
``manual_seed`` are PyTorch's exactly, and outputs and gradients agree.
"""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest

import ember
from ember.nn.utils import rnn as U


def _torch():
    return pytest.importorskip("torch")


def _weights(m, seed=1):
    """Fixed weights (the same in both libraries, whatever their initialisation)."""
    rng = np.random.default_rng(seed)
    lib = ember if isinstance(m, ember.nn.Module) else _torch()
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    return m


def _x(lib, *shape, seed=2, requires_grad=False):
    t = lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return t.requires_grad_(requires_grad)


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else t.detach().numpy()


# -- _flat_weights: the list forward runs with -------------------------------------------------

def test_assigned_flat_weights_are_what_forward_uses():
    m = _weights(ember.nn.GRU(3, 4))
    x = _x(ember, 3, 2, 3)
    m._flat_weights = [w * 0 for w in m._flat_weights]
    out, h = m(x)
    assert np.all(_np(out) == 0) and np.all(_np(h) == 0)  # zero weights: h stays 0


def test_flat_weights_follow_setattr_to_and_functional_call():
    m = _weights(ember.nn.LSTM(3, 4, 2))
    assert isinstance(m._flat_weights, list)
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters()))
    new = ember.nn.Parameter(ember.zeros(16, 4))
    m.weight_hh_l1 = new
    assert m._flat_weights[m._flat_weights_names.index("weight_hh_l1")] is new
    m.double()
    assert [w.dtype for w in m._flat_weights] == [ember.float64] * 8
    x = _x(ember, 3, 2, 3).double()
    halves = {k: v * 0.5 for k, v in m.named_parameters()}
    swapped = ember.func.functional_call(m, halves, (x,))[0]
    assert m._weights_have_changed()  # the swapped-in tensors are gone again
    plain = m(x)[0]
    assert not m._weights_have_changed()
    assert not np.allclose(_np(swapped), _np(plain))
    m._init_flat_weights()
    assert m._flat_weights[0] is m.weight_ih_l0


def test_flat_weights_survive_pickle_and_deepcopy():
    m = _weights(ember.nn.LSTM(3, 4, proj_size=2))
    x = _x(ember, 2, 1, 3)
    for n in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert n._flat_weights[0] is n.weight_ih_l0
        assert "_flat_weight_refs" in n.__dict__
        np.testing.assert_allclose(_np(n(x)[0]), _np(m(x)[0]), rtol=1e-6)


def test_flat_weights_match_torch_after_del_and_assign():
    torch = _torch()
    for lib in (torch, ember):
        m = lib.nn.GRU(3, 4)
        kept = m.weight_hh_l0
        del m.weight_hh_l0  # PyTorch's list keeps the tensor until it is refreshed
        assert m._flat_weights[1] is kept
        assert m._weights_have_changed() is False


def test_weight_drop_wrapper_pattern_matches_torch():
    """AWD-LSTM's WeightDrop: the raw weight a parameter, the dropped one a plain attribute."""
    torch = _torch()

    def run(lib):
        m = _weights(lib.nn.LSTM(3, 4))
        raw = m.weight_hh_l0
        del m._parameters["weight_hh_l0"]
        m.register_parameter("weight_hh_l0_raw", lib.nn.Parameter(raw.data))
        lib.manual_seed(0)
        m.weight_hh_l0 = lib.nn.functional.dropout(m.weight_hh_l0_raw, p=0.5, training=True)
        out = m(_x(lib, 3, 2, 3))[0]
        return _np(out), _np(lib.autograd.grad(out.sum(), m.weight_hh_l0_raw)[0])

    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- error messages -----------------------------------------------------------------------------

@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_integer_input_dtype_error_names_long(cls):
    m = getattr(ember.nn, cls)(3, 4)
    with pytest.raises(RuntimeError, match=re.escape(
            "mat1 and mat2 must have the same dtype, but got Long and Float")):
        m(ember.ones(2, 3, dtype=ember.int64), None)


def test_pack_padded_sequence_int_lengths_is_a_0d_tensor():
    with pytest.raises(RuntimeError, match=re.escape(
            "'lengths' argument should be a 1D CPU int64 tensor, but got 0D cpu Long tensor")):
        U.pack_padded_sequence(ember.ones(3, 1, 1), 3)


def test_pad_sequence_0d_sequence_after_the_first():
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        U.pad_sequence([ember.ones(2), ember.tensor(1.0)])


def test_packed_sequence_base_is_pytorchs_namedtuple():
    assert U.PackedSequence.__mro__[1] is U.PackedSequence_
    assert U.PackedSequence_._fields == ("data", "batch_sizes", "sorted_indices",
                                         "unsorted_indices")


# -- against torch: lengths, packing, modules --------------------------------------------------

@pytest.mark.parametrize("kind", ["list", "tuple", "numpy", "tensor", "int32"])
@pytest.mark.parametrize("lens", [[3, 5, 2], [2, 3, 2, 3, 1], [4, 4, 4]])
def test_pack_padded_sequence_lengths_forms_match_torch(kind, lens):
    torch = _torch()

    def run(lib):
        lengths = {"list": list(lens), "tuple": tuple(lens), "numpy": np.array(lens),
                   "tensor": lib.tensor(lens, device="cpu"),
                   "int32": lib.tensor(lens, dtype=lib.int32, device="cpu")}[kind]
        x = _x(lib, len(lens), 5, 2, requires_grad=True)
        p = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                  enforce_sorted=False)
        grad = lib.autograd.grad((p.data * 2).sum(), x)[0]
        return [_np(t) for t in (p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices,
                                 grad)]

    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_array_equal(a, b)


def _copy_into(em, tm):
    with ember.no_grad():
        for (n, p), (tn, tp) in zip(em.named_parameters(), tm.named_parameters()):
            assert n == tn and tuple(p.shape) == tuple(tp.shape)
            p.copy_(ember.tensor(tp.detach().numpy()))


@pytest.mark.parametrize("cls,kw", [
    ("RNN", dict(num_layers=3, dropout=0.5, nonlinearity="relu")),
    ("LSTM", dict(num_layers=2, dropout=0.3, bidirectional=True, proj_size=2)),
    ("GRU", dict(num_layers=2, dropout=0.4, batch_first=True)),
])
def test_init_and_dropout_masks_under_manual_seed_match_torch(cls, kw):
    torch = _torch()
    results = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(3, 4, **kw)
        params = [_np(p) for p in m.parameters()]
        x = _x(lib, 5, 2, 3, requires_grad=True)
        lib.manual_seed(123)
        out, h = m(x)
        hs = list(h) if isinstance(h, tuple) else [h]
        grads = lib.autograd.grad(out.sum() + sum((t * 2).sum() for t in hs),
                                  [x, *m.parameters()])
        results.append((params, [_np(out)] + [_np(t) for t in hs] + [_np(g) for g in grads]))
    (ep, eo), (tp, to) = results
    for a, b in zip(ep, tp):
        np.testing.assert_array_equal(a, b)  # the same uniform_ stream
    for a, b in zip(eo, to):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)  # the same dropout masks


@pytest.mark.parametrize("cls,kw", [
    ("RNN", dict(bidirectional=True)),
    ("LSTM", dict(proj_size=2, bidirectional=True, num_layers=2)),
    ("GRU", dict(batch_first=True, bidirectional=True)),
])
def test_unsorted_packed_input_with_state_matches_torch(cls, kw):
    torch = _torch()
    tm = getattr(torch.nn, cls)(2, 4, **kw)
    em = getattr(ember.nn, cls)(2, 4, **kw)
    _copy_into(em, tm)
    L = kw.get("num_layers", 1) * 2

    def run(lib, m):
        seqs = [_x(lib, n, 2, seed=10 + i, requires_grad=True)
                for i, n in enumerate((3, 5, 1, 3))]
        p = lib.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
        if cls == "LSTM":
            h0 = (_x(lib, L, 4, 2, seed=5, requires_grad=True),
                  _x(lib, L, 4, 4, seed=6, requires_grad=True))
        else:
            h0 = _x(lib, L, 4, 4, seed=5, requires_grad=True)
        out, hn = m(p, h0)
        hs = list(hn) if isinstance(hn, tuple) else [hn]
        pad, lens = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                         padding_value=-1.0, total_length=6)
        loss = (pad * 1.5).sum() + sum((t * (i + 2)).sum() for i, t in enumerate(hs))
        leaves = seqs + (list(h0) if isinstance(h0, tuple) else [h0]) + list(m.parameters())
        return [_np(t) for t in [out.data, pad, lens, *hs,
                                 *lib.autograd.grad(loss, leaves)]]

    for a, b in zip(run(ember, em), run(torch, tm)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
