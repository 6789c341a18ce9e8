"""Parity with PyTorch for arithmetic ops, type promotion and dtype metadata (found by
differential probes): each test checks the plain expected behaviour and, where PyTorch is
importable, that PyTorch behaves the same."""

import re

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _raises(fn, exc, msg):
    """``fn(lib)`` raises ``exc`` with message ``msg`` in Ember and (when present) PyTorch."""
    with pytest.raises(exc, match=re.escape(msg)):
        fn(ember)
    torch = _torch()
    with pytest.raises(exc, match=re.escape(msg)):
        fn(torch)


@pytest.mark.parametrize("dt,name", [("complex64", "ComplexFloat"),
                                     ("complex128", "ComplexDouble")])
@pytest.mark.parametrize("op,kernel", [
    (lambda t, a: a // a, "div_floor_cpu"),
    (lambda t, a: a % 2, "remainder_cpu"),
    (lambda t, a: t.fmod(a, 2), "fmod_cpu"),
    (lambda t, a: a.fmod(0), "fmod_cpu"),
    (lambda t, a: t.div(a, 2, rounding_mode="floor"), "div_floor_cpu"),
    (lambda t, a: t.div(a, 2, rounding_mode="trunc"), "div_trunc_cpu"),
])
def test_complex_integer_style_division_has_no_kernel(dt, name, op, kernel):
    _raises(lambda t: op(t, t.tensor([1, 0, 3], dtype=getattr(t, dt))),
            NotImplementedError, f"\"{kernel}\" not implemented for '{name}'")


def test_float_power_inplace_needs_double_base():
    _raises(lambda t: t.tensor([1.0, 2.0]).float_power_(2), RuntimeError,
            "the base given to float_power_ has dtype Float but the operation's result "
            "requires dtype Double")
    _raises(lambda t: t.tensor([1.0], dtype=t.float64).float_power_(2j), RuntimeError,
            "the base given to float_power_ has dtype Double but the operation's result "
            "requires dtype ComplexDouble")
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    assert x.float_power_(2) is x and x.tolist() == [1.0, 4.0]


def test_float_power_out_needs_result_dtype():
    _raises(lambda t: t.float_power(t.tensor([1.0, 2.0]), 2, out=t.empty(2)), RuntimeError,
            "the output given to float_power has dtype Float but the operation's result "
            "requires dtype Double")
    out = ember.empty(2, dtype=ember.float64)
    assert ember.float_power(ember.tensor([1.0, 2.0]), 2, out=out) is out
    assert out.tolist() == [1.0, 4.0]


def test_addcmul_value_not_representable():
    one = lambda t: t.tensor([1.0])
    _raises(lambda t: t.addcmul(one(t), one(t), one(t), value=1j), RuntimeError,
            "value cannot be converted to type float without overflow")
    _raises(lambda t: t.addcdiv(one(t), one(t), one(t), value=1e300), RuntimeError,
            "value cannot be converted to type float without overflow")


def test_result_type_rejects_non_numbers():
    _raises(lambda t: t.result_type(t.tensor(1), "a"), TypeError,
            "result_type() received an invalid combination of arguments - got (Tensor, str)")
    _raises(lambda t: t.result_type(t.tensor(1), None), TypeError,
            " * (Tensor tensor, Number other)\n      didn't match because some of the "
            "arguments have invalid types: (Tensor, !NoneType!)")
    assert ember.result_type(1, ember.tensor(1)) is ember.int64


def test_dtype_functions_reject_non_dtypes():
    _raises(lambda t: t.promote_types(t.float32, "a"), TypeError,
            "promote_types(): argument 'type2' (position 2) must be torch.dtype, not str")
    _raises(lambda t: t.can_cast(t.float32, 1), TypeError,
            "can_cast(): argument 'to' (position 2) must be torch.dtype, not int")
    _raises(lambda t: t.finfo(1), TypeError,
            "finfo(): argument 'type' (position 1) must be torch.dtype, not int")
    _raises(lambda t: t.iinfo(1), TypeError,
            "iinfo(): argument 'type' (position 1) must be torch.dtype, not int")


def test_int_scalar_beyond_64_bits_overflows():
    _raises(lambda t: t.tensor([1, 2]) + 2**64, OverflowError, "int too big to convert")
    _raises(lambda t: t.tensor([1, 2]) + (-2**63 - 1), OverflowError,
            "can't convert negative int to unsigned")
    assert (ember.tensor([1], dtype=ember.int8) + 2**63).tolist() == [1]  # wraps, as PyTorch


def test_rsub_needs_tensor_input():
    _raises(lambda t: t.rsub(2, t.tensor([1, 2])), TypeError,
            "rsub() received an invalid combination of arguments - got (int, Tensor), but "
            "expected one of:\n * (Tensor input, Tensor other, *, Number alpha = 1)\n")
    assert ember.rsub(ember.tensor([1, 2]), 5, alpha=2).tolist() == [3, 1]
