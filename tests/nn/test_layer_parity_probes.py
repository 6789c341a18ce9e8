"""Layer constructors and module-level behaviour against PyTorch: argument checks and their
messages, ``extra_repr``, factory keywords, signatures and the errors of the forward paths
the layers own (recurrent layers and cells).

Each case runs the same program with ``ember`` and, where torch is installed, with ``torch``
and compares the outcome exactly; a plain assertion beside it runs without torch.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from testutils import outcome, same_outcome_in_both

import ember
import ember.nn as nn
from ember.nn.modules import utils as ember_utils

_outcome = outcome
_same_as_torch = same_outcome_in_both


def _raises(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(ember)


# -- Unflatten: PyTorch 2.13 has no named-tensor dims ----------------------------------------

UNFLATTEN = [
    lambda t: t.nn.Unflatten("a", (2, 3)),
    lambda t: t.nn.Unflatten("a", (("x", 2), ("y", 3))),
    lambda t: t.nn.Unflatten(1.5, (2, 3)),
    lambda t: t.nn.Unflatten(1, [2, 3]),
    lambda t: t.nn.Unflatten(1, 2),
]


@pytest.mark.parametrize("case", range(len(UNFLATTEN)))
def test_unflatten_arguments_match_torch(case):
    _same_as_torch(UNFLATTEN[case])


def test_unflatten_takes_int_sizes_only():
    assert repr(nn.Unflatten("a", (2, 3))) == "Unflatten(dim=a, unflattened_size=(2, 3))"
    _raises(UNFLATTEN[1], TypeError, "must be tuple of ints, but found element of type tuple")


# -- Embedding / EmbeddingBag --------------------------------------------------------------

def test_embedding_bag_padding_idx_message_matches_torch():
    _same_as_torch(lambda t: t.nn.EmbeddingBag(10, 3, padding_idx=10))
    _same_as_torch(lambda t: t.nn.EmbeddingBag(10, 3, padding_idx=-11))
    _same_as_torch(lambda t: t.nn.Embedding(10, 3, padding_idx=10))


def test_embedding_bag_padding_idx_message():
    _raises(lambda t: t.nn.EmbeddingBag(10, 3, padding_idx=10), AssertionError,
            "^padding_idx must be within num_embeddings$")
    _raises(lambda t: t.nn.Embedding(10, 3, padding_idx=10), AssertionError,
            "^Padding_idx must be within num_embeddings$")
    assert nn.EmbeddingBag(10, 3, padding_idx=-1).padding_idx == 9


# -- activations -----------------------------------------------------------------------------

def test_hardtanh_checks_match_torch():
    _same_as_torch(lambda t: t.nn.Hardtanh(2, 1))
    _same_as_torch(lambda t: t.nn.Hardtanh(1, 1))


def test_hardtanh_min_above_max_message():
    _raises(lambda t: t.nn.Hardtanh(2, 1), AssertionError,
            r"^max_val \(1\) must be greater than min_val \(2\)$")


def test_hardtanh_deprecated_keywords_warn_like_torch():
    def messages(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.Hardtanh(min_value=-2.0, max_value=2.0)
        return [(c.category.__name__, str(c.message)) for c in w]

    mine = messages(ember)
    assert mine == [
        ("FutureWarning", "keyword argument `min_value` is deprecated and renamed to `min_val`"),
        ("FutureWarning", "keyword argument `max_value` is deprecated and renamed to `max_val`")]
    torch = pytest.importorskip("torch")
    assert mine == messages(torch)


# -- convolutions ----------------------------------------------------------------------------

CONV = [
    lambda t: t.nn.Conv2d(3, 4, 3)._reversed_padding_repeated_twice,
    lambda t: t.nn.Conv2d(3, 4, 3, padding=(1, 2))._reversed_padding_repeated_twice,
    lambda t: t.nn.Conv2d(3, 4, (3, 4), padding="same")._reversed_padding_repeated_twice,
    lambda t: t.nn.ConvTranspose2d(3, 4, 3, padding="same"),
    lambda t: t.nn.ConvTranspose2d(3, 4, 3, stride=2)(t.zeros(1, 3, 5, 5),
                                                      output_size=(15, 15)),
    lambda t: t.nn.ConvTranspose2d(3, 4, 3, stride=2)(t.zeros(1, 3, 5, 5),
                                                      output_size=[15, 15]),
    lambda t: t.nn.ConvTranspose2d(3, 4, 3, stride=2)(t.zeros(3, 5, 5), output_size=9),
    lambda t: t.nn.ConvTranspose2d(3, 4, 3, stride=2)(t.zeros(3, 5, 5),
                                                      output_size=(4, 12, 12)).shape,
]


@pytest.mark.parametrize("case", range(len(CONV)))
def test_conv_module_details_match_torch(case):
    _same_as_torch(CONV[case])


def test_conv_module_details():
    assert nn.Conv2d(3, 4, 3, padding=(1, 2))._reversed_padding_repeated_twice == (2, 2, 1, 1)
    _raises(CONV[4], ValueError, r"^requested an output size of \(15, 15\), but valid sizes")
    _raises(CONV[5], ValueError, r"^requested an output size of \[15, 15\], but valid sizes")
    assert nn.ConvTranspose2d(3, 4, 3, stride=2)(ember.zeros(3, 5, 5),
                                                 output_size=(4, 12, 12)).shape == (4, 12, 12)


# -- the tuple helpers of nn.modules.utils ---------------------------------------------------

def test_tuple_helpers_match_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.modules import utils as tu
    for value in (3, [1, 2], "ab", (4, 5)):
        assert ember_utils._pair(value) == tu._pair(value)
    for args in ((4, [1, 1, 5, 6]), ([None, 3], [1, 1, 5, 6]), ([None, None], [1, 5, 6])):
        assert ember_utils._list_with_default(*args) == tu._list_with_default(*args)
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        tu._list_with_default([None, 3], [5, 6])
    assert torch is not None


def test_tuple_helpers():
    assert ember_utils._pair("ab") == ("a", "b")
    assert ember_utils._list_with_default([None, 3], [1, 1, 5, 6]) == [5, 3]
    assert ember_utils._list_with_default(4, [1, 2]) == 4
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        ember_utils._list_with_default([None, 3], [5, 6])


# -- lazy norms and RMSNorm: signatures ----------------------------------------------

@pytest.mark.parametrize("name", ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
                                  "LazyInstanceNorm1d", "LazyInstanceNorm2d",
                                  "LazyInstanceNorm3d"])
def test_constructor_signature_matches_torch(name):
    torch = pytest.importorskip("torch")

    def params(cls):
        return [(p.name, p.kind, repr(p.default))
                for p in inspect.signature(cls.__init__).parameters.values()]

    assert params(getattr(nn, name)) == params(getattr(torch.nn, name))


def test_rmsnorm_forward_signature_matches_torch():
    torch = pytest.importorskip("torch")
    assert (list(inspect.signature(nn.RMSNorm.forward).parameters)
            == list(inspect.signature(torch.nn.RMSNorm.forward).parameters))


LAZY_NORM = [
    lambda t: t.nn.LazyBatchNorm1d(bias=False),
    lambda t: [n for n, _ in t.nn.LazyBatchNorm2d(bias=False).named_parameters()],
    lambda t: (lambda m: (m(t.ones(2, 3, 4)), m, [n for n, _ in m.named_parameters()],
                          type(m).__name__)[1:])(t.nn.LazyBatchNorm1d(bias=False)),
    lambda t: (lambda m: (m(t.ones(2, 3, 4)), m, [n for n, _ in m.named_parameters()])[1:])(
        t.nn.LazyInstanceNorm1d(affine=True, bias=False)),
    lambda t: t.nn.RMSNorm(3)(x=t.ones(2, 3)).shape,
]


@pytest.mark.parametrize("case", range(len(LAZY_NORM)))
def test_lazy_norm_bias_and_renamed_arguments_match_torch(case):
    _same_as_torch(LAZY_NORM[case])


def test_lazy_norm_bias_and_renamed_arguments():
    m = nn.LazyBatchNorm1d(bias=False)
    m(ember.ones(2, 3, 4))
    assert type(m) is nn.BatchNorm1d and m.bias is None and m.weight.shape == (3,)
    assert "bias=False" in repr(m)
    assert nn.RMSNorm(3)(x=ember.ones(2, 3)).shape == (2, 3)


# -- recurrent layers: the errors of their own forward ---------------------------------------

def _f64(t, *shape):
    return t.zeros(*shape, dtype=t.float64)


RNN_ERRORS = [
    # an empty sequence
    lambda t: t.nn.RNN(3, 4)(t.ones(0, 2, 3)),
    lambda t: t.nn.LSTM(3, 4, batch_first=True)(t.ones(2, 0, 3)),
    lambda t: t.nn.GRU(3, 4)(t.ones(0, 3)),
    # a hidden state of another dtype than the weights
    lambda t: t.nn.RNN(3, 4)(t.ones(4, 2, 3), _f64(t, 1, 2, 4)),
    lambda t: t.nn.GRU(3, 4, num_layers=2)(t.ones(4, 2, 3), _f64(t, 2, 2, 4)),
    lambda t: t.nn.RNNCell(3, 4)(t.ones(2, 3), _f64(t, 2, 4)),
    lambda t: t.nn.GRUCell(3, 4)(t.ones(2, 3), _f64(t, 2, 4)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), (_f64(t, 2, 4), t.zeros(2, 4))),
    # an input of another dtype than a cell's weights
    lambda t: t.nn.RNNCell(3, 4)(t.ones(2, 3, dtype=t.float64)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3, dtype=t.float64)),
    lambda t: t.nn.GRUCell(3, 4).double()(t.ones(2, 3)),
    # cells: hidden states of the wrong shape
    lambda t: t.nn.RNNCell(3, 4)(t.ones(3), t.zeros(2, 4)),
    lambda t: t.nn.GRUCell(3, 4)(t.ones(2, 3), t.zeros(4)),
    lambda t: t.nn.GRUCell(3, 4)(t.ones(2, 3), t.zeros(2)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(3), (t.zeros(2, 4), t.zeros(2, 4))),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), (t.zeros(4), t.zeros(4))),
    # LSTMCell: hx must be two states
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), t.zeros(2, 4)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), (t.zeros(2, 4),)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), (t.zeros(2, 4),) * 3),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(3), (t.zeros(4),)),
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(3), (t.zeros(4),) * 3)[0].shape,
    lambda t: t.nn.LSTMCell(3, 4)(t.ones(2, 3), [t.zeros(2, 4), t.zeros(2, 4)])[0].shape,
]


@pytest.mark.parametrize("case", range(len(RNN_ERRORS)))
def test_recurrent_forward_errors_match_torch(case):
    _same_as_torch(RNN_ERRORS[case])


def test_recurrent_forward_errors():
    _raises(RNN_ERRORS[0], RuntimeError, "^Expected sequence length to be larger than 0 in RNN$")
    _raises(RNN_ERRORS[3], RuntimeError,
            "^mat1 and mat2 must have the same dtype, but got Double and Float$")
    _raises(RNN_ERRORS[10], RuntimeError,
            "^mat1 and mat2 must have the same dtype, but got Float and Double$")
    _raises(RNN_ERRORS[11], RuntimeError,
            "^hidden0 has inconsistent hidden_size: got 2, expected 4$")
    _raises(RNN_ERRORS[12], RuntimeError, "^Input batch size 2 doesn't match hidden0 batch size 4$")
    _raises(RNN_ERRORS[16], TypeError, "must be tuple of Tensors, not Tensor")
    _raises(RNN_ERRORS[17], RuntimeError, "^lstm_cell expects two hidden states$")
    assert nn.LSTMCell(3, 4)(ember.ones(3), (ember.zeros(4),) * 3)[0].shape == (4,)


def test_lstm_cell_state_of_another_dtype_raises():
    # PyTorch raises this (without oneDNN; with it, "get_mkldnn_dtype: unsupported data type")
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        nn.LSTM(3, 4)(ember.ones(4, 2, 3), (ember.zeros(1, 2, 4), _f64(ember, 1, 2, 4)))
    with pytest.raises(RuntimeError, match="but got Double and Float"):
        nn.LSTM(3, 4)(ember.ones(4, 2, 3), (_f64(ember, 1, 2, 4), ember.zeros(1, 2, 4)))
