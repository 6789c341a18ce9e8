"""Regressions of differential probes against PyTorch 2.13: Python int scalars beyond
int64/uint64, ``out=`` dtype rules and memory-overlap checks, clamp's and the bitwise ops'
error words, floor_divide/remainder derivatives. Expected outcomes are pinned (PyTorch's
values, dtypes and messages), so the tests run without torch."""

from __future__ import annotations

import re

import pytest

import ember

OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to "
           "tensor refer to a single memory location. Please clone() the tensor before "
           "performing the operation.")
SHARED = ("unsupported operation: more than one element of the written-to tensor refers to a "
          "single memory location. Please clone() the tensor before performing the operation.")


def _raises(exc_type, message, fn):
    with pytest.raises(exc_type, match="^" + re.escape(message) + "$"):
        fn()


# -- 1. ints beyond int64/uint64 ----------------------------------------------------------------

TOO_BIG = "int too big to convert"
TOO_NEGATIVE = "can't convert negative int to unsigned"


@pytest.mark.parametrize("call, message", [
    (lambda: ember.ones(2) + 2 ** 70, TOO_BIG),
    (lambda: ember.ones(2) * -(2 ** 64), TOO_NEGATIVE),
    (lambda: ember.ones(2) * -(2 ** 63 + 1), TOO_NEGATIVE),
    (lambda: 2 ** 70 - ember.ones(2), TOO_BIG),
    (lambda: ember.ones(2, dtype=ember.float16) + 2 ** 70, TOO_BIG),
    (lambda: ember.ones(2, dtype=ember.bool) + 2 ** 70, TOO_BIG),
    (lambda: ember.ones(2, dtype=ember.int64) / 2 ** 70, TOO_BIG),
    (lambda: ember.ones(2) == 2 ** 64, TOO_BIG),
    (lambda: ember.ones(2) ** 2 ** 70, TOO_BIG),
    (lambda: ember.tensor([1.0]).add_(2 ** 100), TOO_BIG),
    (lambda: ember.add(ember.ones(2), 1, alpha=2 ** 64), TOO_BIG),
    (lambda: ember.full((2,), 2 ** 70), TOO_BIG),
    (lambda: ember.full((2,), -(2 ** 70)), TOO_NEGATIVE),
    (lambda: ember.full((2,), 2 ** 70, dtype=ember.float32), TOO_BIG),
    (lambda: ember.zeros(2).fill_(-(2 ** 64)), TOO_NEGATIVE),
    (lambda: ember.ones(2).clamp(max=2 ** 70), TOO_BIG),
    (lambda: ember.ones(2).clamp(min=-(2 ** 64)), TOO_NEGATIVE),
    (lambda: ember.ones(2).masked_fill(ember.tensor([True, False]), 2 ** 70), TOO_BIG),
])
def test_int_scalar_outside_int64_and_uint64_is_refused(call, message):
    _raises(OverflowError, message, call)


def test_int_scalar_in_uint64_range_is_taken():
    r = ember.ones(2) + (2 ** 64 - 1)
    assert r.dtype == ember.float32 and r.tolist() == [float(2 ** 64)] * 2
    assert (ember.ones(2) * -(2 ** 63)).tolist() == [-float(2 ** 63)] * 2
    assert ember.ones(2).clamp(min=2 ** 63).tolist() == [float(2 ** 63)] * 2
    _raises(RuntimeError, "value cannot be converted to type int64_t without overflow",
            lambda: ember.full((2,), 2 ** 63))


# -- 3. out= of ops whose result keeps the input's dtype ------------------------------------------

@pytest.mark.parametrize("op", ["abs", "neg", "sign", "sgn", "floor", "ceil", "round", "trunc",
                                "frac", "fix", "negative", "absolute", "conj_physical"])
def test_out_of_another_dtype_is_found_dtype_error(op):
    fn = getattr(ember, op)
    _raises(RuntimeError, "Found dtype Double but expected Float",
            lambda: fn(ember.tensor([1.5, -2.5]), out=ember.empty(2, dtype=ember.float64)))
    _raises(RuntimeError, "Found dtype Long but expected Float",
            lambda: fn(ember.tensor([1.5, -2.5]), out=ember.empty(2, dtype=ember.int64)))


def test_out_dtype_rules_of_clamp_and_friends():
    x = ember.tensor([1, -2])
    _raises(RuntimeError, "Found dtype Float but expected Long",
            lambda: ember.clamp(x, min=0, out=ember.empty(2)))
    _raises(RuntimeError, "Found dtype Long but expected Float",
            lambda: ember.clamp(x, min=0.5, out=ember.empty(2, dtype=ember.int64)))
    _raises(RuntimeError, "Found dtype Float but expected Long",
            lambda: ember.clamp_min(x, 0, out=ember.empty(2)))
    _raises(RuntimeError, "Found dtype Int but expected Long",
            lambda: ember.bitwise_not(x, out=ember.empty(2, dtype=ember.int32)))
    # a tensor bound goes through promotion and casts into out
    r = ember.clamp(ember.tensor([1.0, -2.0]), min=ember.tensor(0.0),
                    out=ember.empty(2, dtype=ember.float64))
    assert r.dtype == ember.float64 and r.tolist() == [1.0, 0.0]
    # abs of a complex tensor is real, computed apart and cast into out
    r = ember.abs(ember.tensor([3 + 4j]), out=ember.empty(1, dtype=ember.float64))
    assert r.dtype == ember.float64 and r.tolist() == [5.0]
    # the float ops keep casting
    r = ember.exp(ember.tensor([0, 0]), out=ember.empty(2, dtype=ember.float64))
    assert r.dtype == ember.float64 and r.tolist() == [1.0, 1.0]
    _raises(RuntimeError, "signbit does not support non-boolean outputs.",
            lambda: ember.signbit(ember.tensor([1.0, -2.0]), out=ember.empty(2)))
    _raises(RuntimeError, "nan_to_num: dtype of out: Double should be same as input: Float",
            lambda: ember.nan_to_num(ember.tensor([1.0]), out=ember.empty(1,
                                                                          dtype=ember.float64)))


# -- 4. clamp's words ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: ember.tensor([1, 2]).clamp_(0.5, 1.5),
     "result type Float can't be cast to the desired output type long int"),
    (lambda: ember.tensor([1, 2]).clip_(0.5, 1.5),
     "result type Float can't be cast to the desired output type long int"),
    (lambda: ember.tensor([1, 2]).clamp_min_(0.5),
     "result type Float can't be cast to the desired output type long int"),
    (lambda: ember.tensor([1, 2], dtype=ember.int8).clamp_max_(0.5),
     "result type Float can't be cast to the desired output type signed char"),
    (lambda: ember.tensor([True, False]).clamp_(min=0),
     "result type Long can't be cast to the desired output type bool"),
    (lambda: ember.tensor([1, 2]).clamp_(min=1 + 1j),
     "result type ComplexFloat can't be cast to the desired output type long int"),
    (lambda: ember.tensor([1, 2]).clamp_max_(ember.tensor(0.5)),  # TensorIterator's words
     "result type Float can't be cast to the desired output type Long"),
    (lambda: ember.tensor([1.0, 2.0]).clamp(min=1 + 1j),
     "value cannot be converted to type double without overflow"),
    (lambda: ember.tensor([1.0], dtype=ember.bfloat16).clamp_(1 + 1j),
     "value cannot be converted to type double without overflow"),
    (lambda: ember.clamp(ember.tensor([1, 2])),
     "torch.clamp: At least one of 'min' or 'max' must not be None"),
])
def test_clamp_errors(call, message):
    _raises(RuntimeError, message, call)


# -- 5. bitwise ops name bfloat16 -----------------------------------------------------------------

@pytest.mark.parametrize("call, kernel", [
    (lambda x: x & 1, "bitwise_and_cpu"),
    (lambda x: x | x, "bitwise_or_cpu"),
    (lambda x: ember.bitwise_xor(x, x), "bitwise_xor_cpu"),
    (lambda x: ember.bitwise_not(x), "bitwise_not_cpu"),
    (lambda x: x << 1, "lshift_cpu"),
    (lambda x: 1 << x, "lshift_cpu"),
    (lambda x: x.bitwise_and_(1), "bitwise_and_cpu"),
    (lambda x: ember.gcd(x, x), "gcd_cpu"),
])
def test_bitwise_errors_name_bfloat16(call, kernel):
    if ember.get_default_device().type != "cpu":
        kernel = kernel.replace("_cpu", "_cuda")
    _raises(NotImplementedError, f'"{kernel}" not implemented for \'BFloat16\'',
            lambda: call(ember.ones(2, dtype=ember.bfloat16)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64", "complex128"])
def test_invert_of_inexact_tensor(dtype):
    _raises(TypeError, "~ (operator.invert) is only implemented on integer and Boolean-type "
            "tensors", lambda: ~ember.ones(2, dtype=getattr(ember, dtype)))


# -- 6. floor_divide / remainder derivatives ---------------------------------------------------

def test_floor_divide_has_no_derivative():
    a = ember.tensor([5.0, -3.0, 7.5], requires_grad=True)
    b = ember.tensor([2.0, 2.0, -2.0], requires_grad=True)
    for r in (ember.floor_divide(a, 2.0), a // 2, ember.floor_divide(a, b)):
        assert r.requires_grad and r.grad_fn is not None
        _raises(RuntimeError, "derivative for aten::floor_divide is not implemented",
                lambda r=r: r.sum().backward())
    # div(rounding_mode="floor") has one (zeros)
    ember.div(a, 2.0, rounding_mode="floor").sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


def test_remainder_and_fmod_gradients():
    a = ember.tensor([5.0, -3.0, 7.5], requires_grad=True)
    b = ember.tensor([2.0, 2.0, -2.0], requires_grad=True)
    ember.remainder(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.tolist() == [-2.0, 2.0, 4.0]
    a.grad = b.grad = None
    ember.fmod(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0] and b.grad.tolist() == [-2.0, 1.0, 3.0]
    c = ember.tensor([2.0, 3.0, -2.0], requires_grad=True)
    for r in (ember.remainder(7, c), 7 % c):
        _raises(RuntimeError, "derivative for aten::remainder is not implemented",
                lambda r=r: r.sum().backward())


# -- 7. out= overlapping its inputs, expanded out= -----------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: ember.add(x[:-1], 1, out=x[1:]),
    lambda x: ember.add(x[:-1], x[1:], out=x[1:]),
    lambda x: ember.add(x[:-1], 1, out=x),
    lambda x: ember.sub(x[1:], x[:-1], out=x[:-1]),
    lambda x: ember.div(x[1:], 2, out=x[:-1]),
    lambda x: ember.mul(x[:-1], 2, out=x[1:]),
    lambda x: ember.neg(x[:-1], out=x[1:]),
    lambda x: ember.exp(x[:-1], out=x[1:]),
    lambda x: ember.clamp(x[:-1], 1, out=x[1:]),
    lambda x: ember.add(x[:6].view(2, 3).t(), 1, out=x[:6].view(3, 2)),
])
def test_out_partially_overlapping_an_input_is_refused(call):
    x = ember.arange(7.0)
    _raises(RuntimeError, OVERLAP, lambda: call(x))
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # nothing written


def test_out_equal_to_an_input_or_disjoint_is_allowed():
    x = ember.arange(5.0)
    ember.add(x, 1, out=x)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    ember.add(x[:2], 1, out=x[3:])
    assert x.tolist() == [1.0, 2.0, 3.0, 2.0, 3.0]
    y = ember.arange(6.0)
    ember.sum(y[:4].view(2, 2), 0, out=y[4:])  # reductions are not checked
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0, 2.0, 4.0]


@pytest.mark.parametrize("call", [
    lambda e: ember.add(ember.ones(3), 1, out=e),
    lambda e: ember.neg(ember.ones(3), out=e),
    lambda e: ember.mean(ember.ones(3, 3), 0, out=e),
    lambda e: ember.arange(3.0, out=e),
])
def test_expanded_out_is_refused(call):
    _raises(RuntimeError, SHARED, lambda: call(ember.zeros(1).expand(3)))


def test_expanded_out_is_refused_before_resizing():
    _raises(RuntimeError, SHARED,
            lambda: ember.add(ember.ones(2), 1, out=ember.zeros(1).expand(4)))


@pytest.mark.parametrize("call, value", [
    (lambda e: ember.zeros(3, out=e), 0.0),
    (lambda e: ember.ones(3, out=e), 1.0),
    (lambda e: ember.full((3,), 2.0, out=e), 2.0),
    (lambda e: ember.amax(ember.ones(3, 3), 0, out=e), 1.0),
    (lambda e: ember.prod(ember.ones(3, 3), 0, out=e), 1.0),
])
def test_fills_and_reductions_write_through_expanded_out(call, value):
    base = ember.zeros(1)
    e = base.expand(3)
    r = call(e)
    assert r is e and e.stride() == (0,) and base.tolist() == [value]


@pytest.mark.parametrize("op, a, b, dtype, value", [
    ("add", 1, 2, "int64", 3), ("add", 1, 2.5, "float32", 3.5), ("sub", 1, 2, "int64", -1),
    ("mul", 2, 3, "int64", 6), ("multiply", True, True, "bool", True),
    ("div", 1, 2, "float32", 0.5), ("true_divide", 3, 2, "float32", 1.5),
    ("floor_divide", 7, 2, "int64", 3), ("subtract", 2.5, 1, "float32", 1.5),
    ("divide", 1, 4, "float32", 0.25)])
def test_arithmetic_of_two_numbers_is_a_0d_tensor(op, a, b, dtype, value):
    """PyTorch's parser wraps two numbers as 0-dim tensors for its arithmetic ops."""
    r = getattr(ember, op)(a, b)
    assert r.dim() == 0 and r.dtype == getattr(ember, dtype) and r.item() == value
    assert r.device.type == "cpu"
