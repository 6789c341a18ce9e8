"""Differences from PyTorch 2.13 found by differential probes of ember/ops/pointwise.py: each
test checks the expected value or error plainly and, when PyTorch is importable, against it."""

import re

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _raises(mod, exc, msg, fn):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(mod)


def _both_raise(exc, msg, fn):
    """``fn(module)`` raises ``exc`` with ``msg`` in Ember, and in PyTorch where importable."""
    _raises(ember, exc, msg, fn)
    try:
        import torch
    except ImportError:
        return
    _raises(torch, exc, msg, fn)


def _cx(m, dtype="complex64"):
    return m.tensor([1 + 2j, 0.5 - 1j], dtype=getattr(m, dtype))


def test_lgamma_exact_zero_at_one_and_two():
    for dt in ("float64", "float32", "int64", "uint8", "bool"):
        x = ember.tensor([1, 2] if dt != "bool" else [True, True], dtype=getattr(ember, dt))
        assert ember.lgamma(x).tolist() == [0.0, 0.0]
    torch = _torch()
    assert torch.lgamma(torch.tensor([1.0, 2.0], dtype=torch.float64)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"])
def test_rounding_complex_not_supported(name):
    _both_raise(NotImplementedError, f"{name} is not supported for complex inputs",
                lambda m: getattr(m, name)(_cx(m)))


def test_round_complex_not_implemented():
    _both_raise(NotImplementedError, "not implemented for 'ComplexFloat'",
                lambda m: m.round(_cx(m)))


def test_frac_complex_not_implemented():
    _both_raise(NotImplementedError, "not implemented for 'ComplexDouble'",
                lambda m: m.frac(_cx(m, "complex128")))


def test_signbit_complex():
    _both_raise(NotImplementedError, "signbit is not implemented for complex tensors.",
                lambda m: m.signbit(_cx(m)))


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
def test_isposinf_isneginf_complex(name):
    _both_raise(RuntimeError, f"{name} does not support complex inputs.",
                lambda m: getattr(m, name)(_cx(m)))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm",
                                  "bitwise_left_shift", "bitwise_right_shift"])
def test_integer_binary_ops_complex(name):
    _both_raise(NotImplementedError, "not implemented for 'ComplexFloat'",
                lambda m: getattr(m, name)(_cx(m), _cx(m)))


def test_bitwise_not_complex():
    _both_raise(NotImplementedError, "not implemented for 'ComplexDouble'",
                lambda m: m.bitwise_not(_cx(m, "complex128")))


@pytest.mark.parametrize("name", ["atan2", "copysign", "xlogy"])
def test_real_binary_ops_complex(name):
    _both_raise(NotImplementedError, "not implemented for 'ComplexFloat'",
                lambda m: getattr(m, name)(_cx(m), _cx(m)))


def test_heaviside_complex():
    _both_raise(RuntimeError, "heaviside is not yet implemented for complex tensors.",
                lambda m: m.heaviside(_cx(m), _cx(m)))


def test_isclose_shape_mismatch():
    _both_raise(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) "
                "at non-singleton dimension 0",
                lambda m: m.isclose(m.tensor([1.0, 2.0, 3.0]), m.tensor([1.0, 2.0])))


def test_copysign_grad_at_inf_and_nan():
    def grad(m):
        x = m.tensor([0.0, 1.0, -1.0, float("inf"), float("nan")], requires_grad=True)
        m.copysign(x, -m.ones(5)).sum().backward()
        return x.grad.tolist()

    expected = [0.0, -1.0, 1.0, float("nan"), float("nan")]
    got = grad(ember)
    assert got[:3] == expected[:3] and all(v != v for v in got[3:])
    torch = _torch()
    want = grad(torch)
    assert want[:3] == got[:3] and all(v != v for v in want[3:])
