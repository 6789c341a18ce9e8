"""PyTorch's checks of ``add``/``sub``'s ``alpha`` (its ``alpha_check``), the two messages of
bool subtraction and ``mean``'s dtype message, found by differential probes."""

import re

import pytest

import ember


def _same_error_in_torch(fn):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as info:
        fn(torch)
    return str(info.value)


@pytest.mark.parametrize("call, message", [
    (lambda m: m.tensor([1]).add(m.tensor([1]), alpha=0.5),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda m: m.tensor([1]).sub(m.tensor([1]), alpha=1.0),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda m: m.tensor([1]).add(1, alpha=0.5),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda m: m.tensor([1.]).add(m.tensor([1.]), alpha=True),
     "Boolean alpha only supported for Boolean results."),
    (lambda m: m.tensor([1.]).add(1, alpha=2j),
     "For non-complex input tensors, argument alpha must not be a complex number."),
    (lambda m: m.tensor([1, 2]).add_(m.tensor([1, 1]), alpha=2.0),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda m: m.tensor([True]) - True, "Subtraction, the `-` operator, with two bool tensors "
     "is not supported. Use the `^` or `logical_xor()` operator instead."),
    (lambda m: True - m.tensor([True]), "Subtraction, the `-` operator, with two bool tensors "
     "is not supported. Use the `^` or `logical_xor()` operator instead."),
    (lambda m: m.tensor([1]) - m.tensor([True]), "Subtraction, the `-` operator, with a bool "
     "tensor is not supported. If you are trying to invert a mask, use the `~` or "
     "`logical_not()` operator instead."),
    (lambda m: m.tensor([1.]).mean(dtype=m.int32), "mean(): could not infer output dtype. "
     "Optional dtype must be either a floating point or complex dtype. Got: Int"),
    (lambda m: m.tensor([1]).mean(), "mean(): could not infer output dtype. Input dtype must "
     "be either a floating point or complex dtype. Got: Long"),
])
def test_errors(call, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call(ember)


def test_errors_match_pytorch():
    cases = [lambda m: m.tensor([1]).add(1, alpha=0.5),
             lambda m: m.tensor([1.]).add(m.tensor([1.]), alpha=True),
             lambda m: m.tensor([True]) - m.tensor([True]),
             lambda m: m.tensor([1.]).mean(dtype=m.int32)]
    for call in cases:
        want = _same_error_in_torch(call)
        with pytest.raises(RuntimeError) as info:
            call(ember)
        assert str(info.value) == want


def test_valid_alphas():
    # a float result takes any real alpha; a bool result scales by bool(alpha)
    assert ember.tensor([1]).add(ember.tensor([1.]), alpha=0.5).tolist() == [1.5]
    r = ember.tensor([True, False]).add(ember.tensor([True, False]), alpha=2)
    assert r.dtype == ember.bool and r.tolist() == [True, False]
    r = ember.tensor([True, False]).add(ember.tensor([False, True]), alpha=0)
    assert r.dtype == ember.bool and r.tolist() == [True, False]
    assert ember.tensor([1.]).add(ember.tensor([1.]), alpha=ember.tensor(2.)).tolist() == [3.]
    x = ember.tensor([1., 2.])
    x.sub_(ember.tensor([1, 1]), alpha=2)
    assert x.tolist() == [-1., 0.]
    assert ember.tensor([1 + 1j]).add(ember.tensor([1.]), alpha=2j).tolist() == [1 + 3j]
    import numpy as np
    assert ember.add(ember.tensor([1]), 2, alpha=np.int64(3)).tolist() == [7]


def test_sdpa_batch_mismatch_message():
    q, k = ember.ones(2, 4, 3, 4), ember.ones(2, 2, 5, 4)
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (4) must match the size of tensor b (2) at non-singleton "
            "dimension 1")):
        ember.nn.functional.scaled_dot_product_attention(q, k, k)
