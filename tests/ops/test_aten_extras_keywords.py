"""The functional RNN ops by keyword, ``native_batch_norm(..., out=)`` and the differentiable
statistics of ``native_group_norm``, as PyTorch 2.13's (ops/aten_extras.py).

PyTorch's messages are pinned (checked against PyTorch when it is importable: ``torch``
fixture); the values are checked against Ember's own positional calls and NumPy.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from testutils import same_outcome_in_both, to_numpy

import ember
from ember.autograd import gradcheck, gradgradcheck

T, B, I, H = 3, 2, 4, 5
_PARAMS = ("tuple of Tensors params, bool has_biases, int num_layers, float dropout, bool "
           "train, bool bidirectional")


def _sigs(hx: str) -> str:
    return (f" * (Tensor data, Tensor batch_sizes, {hx} hx, {_PARAMS})\n{{0}}"
            f" * (Tensor input, {hx} hx, {_PARAMS}, bool batch_first)\n{{1}}")


_LSTM_SIGS = _sigs("tuple of Tensors")
_GRU_SIGS = _sigs("Tensor")


def _net(lib, gates):
    lib.manual_seed(0)
    x = lib.randn(T, B, I, dtype=lib.float64)
    params = [lib.randn(*shape, dtype=lib.float64)
              for shape in ((gates * H, I), (gates * H, H), (gates * H,), (gates * H,))]
    h0 = lib.zeros(1, B, H, dtype=lib.float64) + 0.1
    hx = (h0, h0 * 2) if gates == 4 else h0
    return x, hx, params


_KW = dict(has_biases=True, num_layers=1, dropout=0.0, train=False, bidirectional=False)


@pytest.mark.parametrize("name,gates", [("lstm", 4), ("gru", 3), ("rnn_tanh", 1),
                                        ("rnn_relu", 1)])
def test_rnn_keyword_calls_equal_positional(name, gates):
    op = getattr(ember, name)
    x, hx, params = _net(ember, gates)
    want = op(x, hx, params, True, 1, 0.0, False, False, False)
    calls = [
        lambda: op(input=x, hx=hx, params=params, batch_first=False, **_KW),
        lambda: op(x, hx, params, True, 1, 0.0, False, bidirectional=False, batch_first=False),
        lambda: op(x, hx=list(hx) if gates == 4 else hx, params=params, batch_first=False,
                   **_KW),
    ]
    for call in calls:
        got = call()
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(to_numpy(g), to_numpy(w))
    # the packed overload: by keyword, by position, and positional data with keywords after
    data, bs = x.reshape(T * B, I), ember.tensor([B] * T)
    want = op(data, bs, hx, params, True, 1, 0.0, False, False)
    for got in (op(data=data, batch_sizes=bs, hx=hx, params=params, **_KW),
                op(data, bs, hx=hx, params=params, **_KW)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(to_numpy(g), to_numpy(w))
    assert tuple(want[0].shape) == (T * B, H)


def _invalid(name, got, sigs, why0="", why1=""):
    return (f"{name}() received an invalid combination of arguments - got {got}, but expected "
            "one of:\n" + sigs.format(why0, why1))


def _kw_why(*names):
    return f"      didn't match because some of the keywords were incorrect: {', '.join(names)}\n"


def test_rnn_argument_errors_are_pytorchs():
    x, hx, params = _net(ember, 4)
    bs = ember.tensor([B] * T)
    pos = (x, hx, params, True, 1, 0.0, False, False)
    got8 = "(Tensor, tuple, list, bool, int, float, bool, bool"
    cases = [  # a wrong keyword, a missing argument, the overloads mixed, one given twice
        (lambda: ember.lstm(*pos, batchfirst=False),
         _invalid("lstm", got8 + ", batchfirst=bool)", _LSTM_SIGS, _kw_why("batchfirst"),
                  _kw_why("batchfirst"))),
        (lambda: ember.lstm(*pos), _invalid("lstm", got8 + ")", _LSTM_SIGS)),
        (lambda: ember.lstm(*pos, False, batch_sizes=bs),
         _invalid("lstm", got8 + ", bool, batch_sizes=Tensor)", _LSTM_SIGS)),
        (lambda: ember.lstm(*pos, False, input=x),
         _invalid("lstm", got8 + ", bool, input=Tensor)", _LSTM_SIGS)),
        (lambda: ember.lstm(), _invalid("lstm", "()", _LSTM_SIGS)),
        (lambda: ember.gru(x, hx[0], params, True, 1, 0.0, False, False, foo=1),
         _invalid("gru", "(Tensor, Tensor, list, bool, int, float, bool, bool, foo=int)",
                  _GRU_SIGS, _kw_why("foo"), _kw_why("foo"))),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=re.escape(message) + "$"):
            call()


def test_rnn_positional_types_refused_as_pytorch():
    """Nine positional arguments skip the parser, but a call whose types PyTorch refuses
    still ends in its TypeError (num_layers a float; an LSTM's hx one tensor)."""
    x, hx, params = _net(ember, 4)
    with pytest.raises(TypeError, match=re.escape(
            "lstm() received an invalid combination of arguments - got (Tensor, tuple, list, "
            "bool, float, float, bool, bool, bool)")):
        ember.lstm(x, hx, params, True, 1.5, 0.0, False, False, False)
    with pytest.raises(TypeError, match=r"!Tensor!, !list of \[Tensor, Tensor, Tensor, Tensor\]!"):
        ember.lstm(x, hx[0], params, True, 1, 0.0, False, False, False)


@pytest.mark.parametrize("case", [
    lambda t: t.lstm(*_net(t, 4), True, 1, 0.0, False, False, batchfirst=False),
    lambda t: t.lstm(*_net(t, 4), True, 1, 0.0, False, False),
    lambda t: t.gru(*_net(t, 3), has_biases=True, num_layers=1, dropout=0.0, train=False,
                    bidirectional=False, batch_first="no"),
    lambda t: t.rnn_relu(*_net(t, 1), True, 1, 0.0, False, False, False)[1].sum().item(),
    lambda t: t.lstm(*_net(t, 4), True, 1.5, 0.0, False, False, False),
], ids=["wrong keyword", "missing", "wrong type by keyword", "values", "float num_layers"])
def test_rnn_calls_end_as_in_torch(case):
    same_outcome_in_both(case)


# -- native_batch_norm(..., out=) ----------------------------------------------------------------

def _bn_input(dtype=ember.float32):
    ember.manual_seed(0)
    return ember.randn(4, 3, 2).to(dtype), ember.randn(3), ember.randn(3)


def test_native_batch_norm_out_writes_and_returns_the_three_tensors():
    x, w, b = _bn_input()
    want = ember.native_batch_norm(x, w, b, ember.zeros(3), ember.ones(3), True, 0.1, 1e-5)
    rm, rv = ember.zeros(3), ember.ones(3)
    outs = (ember.empty(0), ember.empty(0), ember.empty(0))
    got = ember.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5, out=outs)
    assert isinstance(got, tuple) and all(g is o for g, o in zip(got, outs))
    for g, e in zip(got, want):
        np.testing.assert_array_equal(to_numpy(g), to_numpy(e))
    assert float(rm.abs().sum()) > 0  # the running statistics were updated too
    # a shape that differs is resized with PyTorch's warning; a right one silently
    with pytest.warns(UserWarning, match=r"resized since it had shape \[2, 2\]"):
        ember.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                out=(ember.empty(2, 2), ember.empty(3), ember.empty(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ember.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                    out=[ember.empty(4, 3, 2), ember.empty(3), ember.empty(3)])
    np.testing.assert_array_equal(to_numpy(r[1]), to_numpy(want[1]))


def test_native_batch_norm_out_in_evaluation_leaves_the_statistics():
    x, w, b = _bn_input()
    mean, invstd = ember.full((5,), 7.0), ember.full((3,), 7.0)
    r = ember.native_batch_norm(x, w, b, ember.zeros(3), ember.ones(3), False, 0.1, 1e-5,
                                out=(ember.empty(0), mean, invstd))
    assert tuple(r[0].shape) == (4, 3, 2) and r[1] is mean and r[2] is invstd
    assert to_numpy(mean).tolist() == [7.0] * 5 and to_numpy(invstd).tolist() == [7.0] * 3


@pytest.mark.parametrize("outs,err,message", [
    (lambda: (ember.empty(0, dtype=ember.float64), ember.empty(0), ember.empty(0)),
     RuntimeError, "expected scalar type Float but found Double"),
    (lambda: (ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64),
              ember.empty(0)), RuntimeError, "expected scalar type Float but found Long"),
    (lambda: (ember.empty(0), ember.empty(0)), TypeError, "expected tuple of 3 elements but "
                                                          "got 2"),
    (lambda: ember.empty(0), TypeError, "native_batch_norm(): argument 'out' must be tuple of "
                                        "Tensors, not Tensor"),
    (lambda: (ember.empty(0), None, ember.empty(0)), TypeError,
     "expected Tensor as element 1 in argument 8, but got NoneType"),
    (lambda: (ember.empty(0).requires_grad_(), ember.empty(0), ember.empty(0)), RuntimeError,
     "native_batch_norm(): functions with out=... arguments don't support automatic "
     "differentiation, but one of the arguments requires grad."),
])
def test_native_batch_norm_out_refusals(outs, err, message):
    x, w, b = _bn_input()
    with pytest.raises(err, match=re.escape(message) + "$"):
        ember.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5, out=outs())


def test_native_batch_norm_out_statistics_dtype_of_half_input():
    """float16 input with float32 weights: float32 statistics (PyTorch's mixed type); without
    weights, float16 ones."""
    x, w, b = _bn_input(ember.float16)
    r = ember.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                out=(ember.empty(0, dtype=ember.float16), ember.empty(0),
                                     ember.empty(0)))
    assert r[0].dtype == ember.float16 and r[1].dtype == ember.float32
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Half"):
        ember.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                out=tuple(ember.empty(0, dtype=ember.float16) for _ in range(3)))
    with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
        ember.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5,
                                out=(ember.empty(0, dtype=ember.float16), ember.empty(0),
                                     ember.empty(0)))


# -- the statistics' differentiability -----------------------------------------------------------

def _gn(x, w=None, b=None):
    return ember.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)


def _leaf(*shape):
    return ember.randn(*shape, dtype=ember.float64).requires_grad_()


def test_native_group_norm_statistics_are_differentiable():
    ember.manual_seed(0)
    x, w, b = _leaf(2, 4, 3), _leaf(4), _leaf(4)
    out, mean, rstd = _gn(x, w, b)
    assert mean.requires_grad and rstd.requires_grad
    assert mean.grad_fn.name() == rstd.grad_fn.name() == "NativeGroupNormBackward0"
    assert (mean.output_nr, rstd.output_nr) == (1, 2)
    assert gradcheck(lambda x, w, b: _gn(x, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: _gn(x, w, b), (x, w, b))
    # d mean / d x is 1/M per group; the stats do not read weight and bias
    gx, gw = ember.autograd.grad(mean.sum(), (x, w), allow_unused=True)
    np.testing.assert_allclose(to_numpy(gx), np.full((2, 4, 3), 1 / 6))
    assert gw is None
    # a weight alone requiring grad: the statistics require grad too (as PyTorch's)
    _, mean, _ = _gn(x.detach(), w)
    assert mean.requires_grad
    with ember.no_grad():
        assert not _gn(x, w, b)[1].requires_grad


def test_native_group_norm_statistics_grad_against_torch():
    """Where PyTorch's backward takes both statistics' gradients, its gradient equals ours
    (with only one of them, PyTorch's drops the mean's: ours is the derivative)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, 4, 3))
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(xs, requires_grad=True)
        _, mean, rstd = lib.native_group_norm(x, None, None, 2, 4, 3, 2, 1e-5)
        (mean.sum() * 2 + (rstd * rstd).sum()).backward()
        grads.append(to_numpy(x.grad) if lib is ember else x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_native_layer_and_batch_norm_statistics_are_not_differentiable():
    """As PyTorch's: their statistics never require grad."""
    ember.manual_seed(0)
    x, w, b = _leaf(4, 3, 2), _leaf(3), _leaf(3)
    _, mean, rstd = ember.native_layer_norm(x, [2], None, None, 1e-5)
    assert not mean.requires_grad and not rstd.requires_grad
    for training in (True, False):
        out, mean, invstd = ember.native_batch_norm(x, w, b, ember.zeros(3, dtype=ember.float64),
                                                    ember.ones(3, dtype=ember.float64),
                                                    training, 0.1, 1e-5)
        assert out.requires_grad and not mean.requires_grad and not invstd.requires_grad
