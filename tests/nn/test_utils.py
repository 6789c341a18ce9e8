"""ember.nn.utils: gradient clipping, parameter vectors, and sequence padding/packing."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from ember.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)
from ember.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)


def with_grads(*grads):
    params = []
    for g in grads:
        p = nn.Parameter(ember.zeros(len(g)))
        p.grad = ember.tensor(g)
        params.append(p)
    return params


# -- clipping ----------------------------------------------------------------------------------

def test_clip_grad_norm_scales_down():
    params = with_grads([3.0, 0.0], [0.0, 4.0])
    total = clip_grad_norm_(params, max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(params[0].grad.numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(params[1].grad.numpy(), [0.0, 0.8], rtol=1e-5)


def test_clip_grad_norm_leaves_small_grads_and_inf_norm():
    params = with_grads([0.3, -0.4])
    assert clip_grad_norm_(params, 10.0).item() == pytest.approx(0.5)
    np.testing.assert_allclose(params[0].grad.numpy(), [0.3, -0.4], rtol=1e-6)
    params = with_grads([1.0, -6.0], [2.0])
    total = clip_grad_norm_(params, 3.0, norm_type="inf")
    assert total.item() == 6.0
    np.testing.assert_allclose(params[0].grad.numpy(), [0.5, -3.0], rtol=1e-5)
    params = with_grads([1.0, 2.0])
    assert clip_grad_norm_(params[0], 1.0, norm_type=1).item() == pytest.approx(3.0)


def test_clip_grad_norm_nonfinite():
    params = with_grads([math.nan, 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_value():
    params = with_grads([-3.0, 0.5, 2.0])
    clip_grad_value_(params, 1.0)
    assert params[0].grad.tolist() == [-1.0, 0.5, 1.0]


# -- parameter vectors -------------------------------------------------------------------------

def test_parameters_to_vector_and_back():
    lin = nn.Linear(3, 2)
    vec = parameters_to_vector(lin.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec.detach().numpy()[:6],
                                  lin.weight.detach().numpy().ravel())
    w = lin.weight
    vector_to_parameters(ember.arange(8.0), lin.parameters())
    assert lin.weight is w
    assert lin.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and lin.bias.tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        vector_to_parameters([1.0], lin.parameters())


# -- rnn utilities -----------------------------------------------------------------------------

def seqs():
    return [ember.tensor([1.0, 2.0, 3.0]), ember.tensor([4.0, 5.0]), ember.tensor([6.0])]


def test_pad_sequence():
    out = pad_sequence(seqs())
    assert out.shape == (3, 3)
    assert out.tolist() == [[1, 4, 6], [2, 5, 0], [3, 0, 0]]
    out = pad_sequence(seqs(), batch_first=True, padding_value=-1, padding_side="left")
    assert out.tolist() == [[1, 2, 3], [-1, 4, 5], [-1, -1, 6]]
    with pytest.raises(RuntimeError, match="Expected iterable for input sequences"):
        pad_sequence(3)


def test_pack_padded_sequence_sorted():
    padded = pad_sequence(seqs())
    packed = pack_padded_sequence(padded, [3, 2, 1])
    assert isinstance(packed, PackedSequence) and isinstance(packed, tuple)
    assert packed.data.tolist() == [1, 4, 6, 2, 5, 3]
    assert packed.batch_sizes.tolist() == [3, 2, 1]
    assert packed.batch_sizes.dtype == ember.int64
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_padded_sequence(padded, [1, 2, 3])


def test_pack_unsorted_round_trip():
    a = [ember.tensor([1.0]), ember.tensor([2.0, 3.0, 4.0]), ember.tensor([5.0, 6.0])]
    packed = pack_sequence(a, enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 2, 0]
    assert packed.unsorted_indices.tolist() == [2, 0, 1]
    assert packed.data.tolist() == [2, 5, 1, 3, 6, 4]
    padded, lengths = pad_packed_sequence(packed, batch_first=True, total_length=4)
    assert padded.tolist() == [[1, 0, 0, 0], [2, 3, 4, 0], [5, 6, 0, 0]]
    assert lengths.tolist() == [1, 3, 2]
    back = unpack_sequence(packed)
    assert [s.tolist() for s in back] == [[1], [2, 3, 4], [5, 6]]
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        pad_packed_sequence(packed, total_length=2)


def test_unpad_sequence():
    padded = pad_sequence(seqs(), batch_first=True)
    out = unpad_sequence(padded, ember.tensor([3, 2, 1]), batch_first=True)
    assert [s.tolist() for s in out] == [[1, 2, 3], [4, 5], [6]]


def test_packing_is_differentiable():
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)

    def roundtrip(x):
        packed = pack_padded_sequence(x, [4, 2, 1])
        return pad_packed_sequence(packed)[0]

    assert gradcheck(roundtrip, (x,))
    out = roundtrip(x)
    assert out.shape == (4, 3, 2)
    assert (out[2:, 1] == 0).all().item()


def test_pad_sequence_refuses_an_unknown_side_with_pytorchs_runtime_error():
    from ember.nn.utils.rnn import pad_sequence

    with pytest.raises(RuntimeError, match="^Expected padding_side to be one of left or "
                                           "right, but got middle.$"):
        pad_sequence([ember.ones(2)], padding_side="middle")
