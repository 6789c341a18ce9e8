"""``torch.nn.utils`` (rnn packing, gradient clipping, weight norm, stateless, skip_init) and
the attention modules against PyTorch: values, exception types and messages, warnings.

Each case runs the same program with ``ember`` and, where torch is installed, with ``torch``
and compares the outcome exactly; a plain assertion beside it runs without torch.
"""

from __future__ import annotations

import math
import re
import warnings

import pytest
from testutils import outcome, same_outcome_in_both

import ember
import ember.nn as nn

_outcome = outcome
_same_as_torch = same_outcome_in_both


def _warnings_of(fn, lib):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(lib)
    return [(x.category.__name__, str(x.message).replace("ember", "torch")) for x in w]


def _rnn(t):
    return t.nn.utils.rnn


def _cpu_lengths(t, values):
    return t.tensor(values, dtype=t.int64, device="cpu")


# -- pad_sequence ------------------------------------------------------------------------------

def _pad_mixed(t):
    seqs = [t.ones(2, dtype=t.int64), t.tensor([2.5])]
    out = _rnn(t).pad_sequence(seqs, padding_value=7.9)
    return str(out.dtype), out.tolist()


def test_pad_sequence_keeps_first_dtype():
    assert _pad_mixed(ember) == ("ember.int64", [[1, 2], [1, 7]])
    _same_as_torch(_pad_mixed)


def test_pad_sequence_element_type_and_scalar_errors():
    def bad_element(t):
        return _rnn(t).pad_sequence([t.ones(2, 2), [1, 2]])

    def scalars(t):
        return _rnn(t).pad_sequence([t.tensor(1.0), t.tensor(2.0)])

    with pytest.raises(TypeError, match=re.escape(
            "expected Tensor as element 1 in argument 0, but got list")):
        bad_element(ember)
    with pytest.raises(RuntimeError, match=re.escape("ArrayRef: invalid slice, N = 1; size = 0")):
        scalars(ember)
    _same_as_torch(bad_element)
    _same_as_torch(scalars)


def test_pad_sequence_trailing_shape_mismatch_message():
    def mismatch(t):
        return _rnn(t).pad_sequence([t.ones(2, 3), t.ones(3, 4)])

    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 1")):
        mismatch(ember)
    _same_as_torch(mismatch)


# -- pack_padded_sequence --------------------------------------------------------------------

def test_pack_padded_sequence_lengths_count_must_match_batch():
    def short(t):
        return _rnn(t).pack_padded_sequence(t.ones(3, 4), [3, 2], batch_first=True)

    def empty(t):
        return _rnn(t).pack_padded_sequence(t.ones(3, 4), [], batch_first=True)

    with pytest.raises(RuntimeError, match=re.escape(
            "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)")):
        short(ember)
    with pytest.raises(RuntimeError, match=re.escape("but got 0 (batch_size=3)")):
        empty(ember)
    _same_as_torch(short)
    _same_as_torch(empty)


def test_pack_padded_sequence_lengths_tensor_must_be_1d():
    def two_d(t):
        return _rnn(t).pack_padded_sequence(t.ones(3, 4), _cpu_lengths(t, [[3, 2, 1]]),
                                            batch_first=True)

    def zero_d(t):
        return _rnn(t).pack_padded_sequence(t.ones(3, 4), _cpu_lengths(t, 3), batch_first=True)

    with pytest.raises(RuntimeError, match=re.escape(
            "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor")):
        two_d(ember)
    with pytest.raises(RuntimeError, match=re.escape("but got 0D cpu Long tensor")):
        zero_d(ember)
    _same_as_torch(two_d)
    _same_as_torch(zero_d)


def _pack_float_lengths(t):
    x = t.arange(12.0, device="cpu").reshape(3, 4)
    p = _rnn(t).pack_padded_sequence(x, t.tensor([3.0, 2.0, 1.0], device="cpu"),
                                     batch_first=True)
    return p.data.tolist(), p.batch_sizes.tolist()


def test_pack_padded_sequence_accepts_float_lengths_tensor():
    assert _pack_float_lengths(ember) == ([0.0, 4.0, 8.0, 1.0, 5.0, 2.0], [3, 2, 1])
    _same_as_torch(_pack_float_lengths)


def test_pack_padded_sequence_empty_input_and_check_order():
    def empty(t):
        return _rnn(t).pack_padded_sequence(t.ones(0, 3), [0, 0, 0])

    def zero_last_unsorted(t):  # the <= 0 check comes before the sortedness check
        return _rnn(t).pack_padded_sequence(t.ones(3, 3), [2, 3, 0])

    with pytest.raises(RuntimeError, match=re.escape("Cannot pack empty tensors.")):
        empty(ember)
    with pytest.raises(RuntimeError, match=re.escape("Length of all samples has to be greater")):
        zero_last_unsorted(ember)
    _same_as_torch(empty)
    _same_as_torch(zero_last_unsorted)


def test_pad_packed_sequence_total_length_must_be_int():
    def float_total(t):
        p = _rnn(t).pack_padded_sequence(t.ones(3, 4, 1), [3, 3, 2, 1])
        return _rnn(t).pad_packed_sequence(p, total_length=3.0)

    with pytest.raises(TypeError, match=re.escape(
            "_pad_packed_sequence(): argument 'total_length' (position 5) must be int, "
            "not float")):
        float_total(ember)
    _same_as_torch(float_total)


# -- unpad_sequence / PackedSequence ----------------------------------------------------------

def test_unpad_sequence_lengths_must_be_a_tensor():
    def list_lengths(t):
        return _rnn(t).unpad_sequence(t.ones(3, 4), [4, 2, 1], batch_first=True)

    def too_few(t):
        return _rnn(t).unpad_sequence(t.ones(2, 3), _cpu_lengths(t, [1, 2]))

    with pytest.raises(AttributeError, match="'list' object has no attribute 'device'"):
        list_lengths(ember)
    with pytest.raises(ValueError, match=re.escape(
            "zip() argument 2 is shorter than argument 1")):
        too_few(ember)
    _same_as_torch(list_lengths)
    _same_as_torch(too_few)


def _unpad_in_place(t):
    x = t.arange(6.0).reshape(3, 2)
    parts = _rnn(t).unpad_sequence(x, _cpu_lengths(t, [3, 1]))
    return tuple(x.shape), [p.tolist() for p in parts]


def test_unpad_sequence_transposes_its_input_in_place():
    assert _unpad_in_place(ember) == ((2, 3), [[0.0, 2.0, 4.0], [1.0]])
    _same_as_torch(_unpad_in_place)


def _packed_casts(t):
    p = _rnn(t).pack_sequence([t.tensor([1.5, 2.0]), t.tensor([3.0])])
    return [str(m().data.dtype) for m in (p.long, p.int, p.short, p.char, p.byte)]


def test_packed_sequence_integer_casts():
    assert _packed_casts(ember) == ["ember.int64", "ember.int32", "ember.int16", "ember.int8",
                                    "ember.uint8"]
    _same_as_torch(_packed_casts)


def _packed_cpu_cast(t):
    p = _rnn(t).pack_sequence([t.tensor([1.5, 2.0]), t.tensor([3.0])])
    return str(p.cpu(dtype=t.float64).data.dtype), p.cpu().data.device.type


def test_packed_sequence_cpu_takes_to_arguments():
    assert _packed_cpu_cast(ember) == ("ember.float64", "cpu")
    _same_as_torch(_packed_cpu_cast)


# -- gradient clipping ------------------------------------------------------------------------

def _empty_generator_warnings(t):
    return _warnings_of(lambda lib: lib.nn.utils.clip_grad_norm_((p for p in []), 1.0), t)


def test_clip_grad_norm_warns_on_empty_generator():
    assert _empty_generator_warnings(ember) == [
        ("UserWarning", "`parameters` is an empty generator, no gradient clipping will occur.")]
    torch = pytest.importorskip("torch")
    assert _empty_generator_warnings(ember) == _empty_generator_warnings(torch)


def test_clip_grads_with_norm_needs_a_tensor_norm():
    def float_norm(t):
        p = t.nn.Parameter(t.ones(3))
        p.grad = t.tensor([3.0, 4.0, 0.0])
        t.nn.utils.clip_grads_with_norm_([p], 1.0, 5.0)

    with pytest.raises(TypeError, match=re.escape(
            "clamp() received an invalid combination of arguments - got (float, max=float)")):
        float_norm(ember)
    _same_as_torch(float_norm)


# -- weight norm ------------------------------------------------------------------------------

def test_weight_norm_dim_out_of_range():
    def new_api(t):
        return t.nn.utils.parametrizations.weight_norm(t.nn.Linear(3, 4), dim=5)

    def legacy(t):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return t.nn.utils.weight_norm(t.nn.Linear(3, 4), dim=-3)

    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-2, 1], but got 5)")):
        new_api(ember)
    with pytest.raises(IndexError, match=re.escape("[-2, 1], but got -3")):
        legacy(ember)
    _same_as_torch(new_api)
    _same_as_torch(legacy)


# -- stateless / skip_init --------------------------------------------------------------------

def _stateless_warnings(t):
    m = t.nn.Linear(2, 2)
    params = {"weight": t.eye(2), "bias": t.zeros(2)}
    return _warnings_of(
        lambda lib: lib.nn.utils.stateless.functional_call(m, params, t.ones(1, 2)), t)


def test_stateless_functional_call_is_deprecated():
    (category, message), = _stateless_warnings(ember)
    assert category == "FutureWarning"
    assert message.startswith("`torch.nn.utils.stateless.functional_call` is deprecated")
    torch = pytest.importorskip("torch")
    assert _stateless_warnings(ember) == _stateless_warnings(torch)


def test_skip_init_non_class():
    def bad(t):
        return t.nn.utils.skip_init(5, 2, 3)

    with pytest.raises(TypeError, match=re.escape("issubclass() arg 1 must be a class")):
        bad(ember)
    _same_as_torch(bad)


# -- MultiheadAttention -----------------------------------------------------------------------

def _det(t, m):
    """Deterministic parameters (the same in both libraries)."""
    with t.no_grad():
        for i, p in enumerate(m.parameters()):
            n = p.numel()
            p.copy_(t.tensor([0.5 * math.sin(0.37 * j + i) for j in range(n)]).reshape(p.shape))
    return m


def _x(t, *shape):
    n = math.prod(shape)
    return t.tensor([math.cos(0.11 * j) for j in range(n)]).reshape(shape)


def test_mha_mask_must_be_a_tensor():
    def list_mask(t):
        m = t.nn.MultiheadAttention(4, 2)
        x = t.ones(3, 2, 4)
        return m(x, x, x, key_padding_mask=[[False] * 3] * 2)

    def int_mask(t):
        m = t.nn.MultiheadAttention(4, 2)
        x = t.ones(3, 2, 4)
        return m(x, x, x, 5)

    with pytest.raises(TypeError, match=re.escape(
            "is_floating_point(): argument 'input' (position 1) must be Tensor, not list")):
        list_mask(ember)
    with pytest.raises(TypeError, match=re.escape("must be Tensor, not int")):
        int_mask(ember)
    _same_as_torch(list_mask)
    _same_as_torch(int_mask)


def _mha_inference_fully_masked(t, training=False):
    m = _det(t, t.nn.MultiheadAttention(4, 2, batch_first=True))
    m.train(training)
    x = _x(t, 2, 3, 4)
    kpm = t.tensor([[False, False, True], [True, True, True]])
    with t.no_grad():
        out, w = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    return [[math.isnan(v) for v in row] for row in out[:, 0].tolist()], w


def test_mha_fused_inference_path_gives_nan_for_fully_masked_rows():
    assert _mha_inference_fully_masked(ember) == ([[False] * 4, [True] * 4], None)
    # the reference path (training) keeps them finite
    assert _mha_inference_fully_masked(ember, True) == ([[False] * 4, [False] * 4], None)
    torch = pytest.importorskip("torch")
    for training in (False, True):
        assert (_mha_inference_fully_masked(ember, training)
                == _mha_inference_fully_masked(torch, training))


def _mha_inference_values(t):
    m = _det(t, t.nn.MultiheadAttention(4, 2, batch_first=True)).eval()
    x = _x(t, 2, 3, 4)
    kpm = t.tensor([[False, False, True], [False, True, True]])
    with t.no_grad():
        fused = m(x, x, x, key_padding_mask=kpm, need_weights=False)[0]
    ref = m(x, x, x, key_padding_mask=kpm, need_weights=False)[0]  # grad on: reference path
    return (fused - ref).abs().max().item() < 1e-5


def test_mha_fused_inference_path_matches_reference_values():
    assert _mha_inference_values(ember)


def _encoder_layer_fully_masked(t, training=False):
    m = _det(t, t.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True))
    m.train(training)
    x = _x(t, 2, 3, 4)
    kpm = t.tensor([[False, False, True], [True, True, True]])
    with t.no_grad():
        out = m(x, src_key_padding_mask=kpm)
    return [math.isnan(v) for v in out[:, 0, 0].tolist()]


def test_encoder_layer_fused_inference_path_gives_nan_for_fully_masked_rows():
    assert _encoder_layer_fully_masked(ember) == [False, True]
    assert _encoder_layer_fully_masked(ember, True) == [False, False]
    torch = pytest.importorskip("torch")
    for training in (False, True):
        assert (_encoder_layer_fully_masked(ember, training)
                == _encoder_layer_fully_masked(torch, training))


def test_transformer_encoder_nested_path_warns_once():
    from ember.nn.modules import transformer as tr

    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).eval()
    kpm = ember.tensor([[False, False, True], [False, True, True]])
    saved = tr._nested_warned
    tr._nested_warned = False
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ember.no_grad():
                out = enc(ember.ones(2, 3, 4), src_key_padding_mask=kpm)
                enc(ember.ones(2, 3, 4), src_key_padding_mask=kpm)
    finally:
        tr._nested_warned = saved
    messages = [str(x.message) for x in w]
    assert len(messages) == 1
    assert messages[0].startswith("The PyTorch API of nested tensors is in prototype stage")
    assert out[1, 1:].abs().sum().item() == 0.0


# -- argument types -------------------------------------------------------------------------

def test_pad_sequence_argument_types():
    def value_none(t):
        return _rnn(t).pad_sequence([t.ones(2), t.ones(1)], padding_value=None)

    def side_int(t):
        return _rnn(t).pad_sequence([t.ones(2), t.ones(1)], padding_side=1)

    with pytest.raises(TypeError, match=re.escape(
            "pad_sequence(): argument 'padding_value' (position 3) must be float, not NoneType")):
        value_none(ember)
    with pytest.raises(TypeError, match=re.escape(
            "pad_sequence(): argument 'padding_side' (position 4) must be str, not int")):
        side_int(ember)
    _same_as_torch(value_none)
    _same_as_torch(side_int)


def test_packed_sequence_to_refuses_copy():
    def copy(t):
        p = _rnn(t).pack_sequence([t.ones(2), t.ones(1)])
        return p.to(t.float64, copy=True)

    with pytest.raises(RuntimeError, match=re.escape(".to() does not accept copy argument")):
        copy(ember)
    _same_as_torch(copy)


def test_get_total_norm_undefined_tensor():
    def with_none(t):
        return t.nn.utils.get_total_norm([t.ones(2), None])

    with pytest.raises(RuntimeError, match=re.escape(
            "Tensors of the first list of nested Tensor lists are supposed to be defined but "
            "the 1-th Tensor is not.")):
        with_none(ember)
    _same_as_torch(with_none)


def _mha_fused_ignores_is_causal(t):
    m = _det(t, t.nn.MultiheadAttention(4, 2, batch_first=True)).eval()
    x = _x(t, 2, 3, 4)
    kpm = t.tensor([[False, False, True], [False, True, True]])
    with t.no_grad():
        out = m(x, x, x, key_padding_mask=kpm, is_causal=True, need_weights=False)[0]
    return out[0, 0].tolist()


def test_mha_fused_inference_path_ignores_is_causal_hint():
    assert len(_mha_fused_ignores_is_causal(ember)) == 4  # no "Need attn_mask" error
    torch = pytest.importorskip("torch")
    assert _mha_fused_ignores_is_causal(ember) == pytest.approx(
        _mha_fused_ignores_is_causal(torch), abs=1e-5)


def _encoder_unaligned_no_check(t):
    layer = t.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    enc = _det(t, t.nn.TransformerEncoder(layer, 2, mask_check=False)).eval()
    kpm = t.tensor([[False, True, False], [False, True, True]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with t.no_grad():
            out = enc(_x(t, 2, 3, 4), src_key_padding_mask=kpm)
    return out[0].tolist()


def test_transformer_encoder_nested_path_keeps_leading_positions():
    # without mask_check torch keeps the first (number of unpadded) positions of each row
    rows = _encoder_unaligned_no_check(ember)
    assert rows[1] != [0.0] * 4 and rows[2] == [0.0] * 4
    torch = pytest.importorskip("torch")
    for a, b in zip(_encoder_unaligned_no_check(ember), _encoder_unaligned_no_check(torch)):
        assert a == pytest.approx(b, abs=1e-5)


def test_mha_key_batch_mismatch_message():
    def mismatch(t):
        return t.nn.TransformerDecoderLayer(4, 2, 8)(t.ones(3, 2, 4), t.ones(3, 3, 4))

    with pytest.raises(RuntimeError, match=re.escape(
            "shape '[3, 4, 2]' is invalid for input of size 36")):
        mismatch(ember)
    _same_as_torch(mismatch)


def _private_helpers(t):
    F = t.nn.functional
    q, w = _x(t, 2, 1, 4), _x(t, 12, 4)
    packed = F._in_projection_packed(q, q, q, w)
    separate = F._in_projection(q, q, q, w[:4], w[4:8], w[8:])
    mask = F._canonical_mask(t.tensor([True, False]), "m", None, "", t.float32)
    # the same numbers to rounding: whether one product and three give the same bits is the
    # BLAS's business (PyTorch's differ on an Intel Xeon, agree on an AMD EPYC)
    return ([tuple(p.shape) for p in packed], all(t.allclose(p, s, rtol=1e-6, atol=1e-6)
                                                  for p, s in zip(packed, separate)),
            mask.tolist(), F._none_or_dtype(None))


def test_functional_private_attention_helpers():
    assert _private_helpers(ember) == ([(2, 1, 4)] * 3, True, [-math.inf, 0.0], None)
    _same_as_torch(_private_helpers)
    with pytest.raises(AssertionError, match=re.escape(
            "expecting key weights shape of (4, 4), but got")):
        ember.nn.functional._in_projection(ember.ones(2, 4), ember.ones(2, 4), ember.ones(2, 4),
                                           ember.ones(4, 4), ember.ones(3, 4), ember.ones(4, 4))
