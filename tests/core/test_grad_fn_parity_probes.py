"""grad_fn names and gradients PyTorch gives where Ember differed: the Tensor overloads'
node names (PowBackward1...), div's rounding modes (DivBackward2, zero gradients), and
in-place comparisons (zero gradients, not the overwritten tensor's old history)."""


import numpy as np
import pytest

import ember
from ember.autograd import gradcheck


def _torch():
    return pytest.importorskip("torch")


def _name(lib, fn):
    a = lib.tensor([1.5, 2.5, 3.25], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([0.75, 1.25, 2.0], dtype=lib.float64, requires_grad=True)
    return type(fn(lib, a, b).grad_fn).__name__


_NAMED = {
    "pow_tensor": (lambda lib, a, b: a ** b, "PowBackward1"),
    "pow_number": (lambda lib, a, b: a ** 2, "PowBackward0"),
    "fmod_tensor": (lambda lib, a, b: lib.fmod(a, b), "FmodBackward1"),
    "fmod_number": (lambda lib, a, b: lib.fmod(a, 2), "FmodBackward0"),
    "remainder_tensor": (lambda lib, a, b: a % b, "RemainderBackward1"),
    "remainder_number": (lambda lib, a, b: a % 2, "RemainderBackward0"),
    "div_floor": (lambda lib, a, b: lib.div(a, b, rounding_mode="floor"), "DivBackward2"),
    "div_trunc": (lambda lib, a, b: lib.div(a, 2, rounding_mode="trunc"), "DivBackward2"),
}


@pytest.mark.parametrize("case", sorted(_NAMED))
def test_node_names(case):
    fn, want = _NAMED[case]
    assert _name(ember, fn) == want


@pytest.mark.parametrize("case", sorted(_NAMED))
def test_node_names_match_pytorch(case):
    torch = _torch()
    fn, _ = _NAMED[case]
    assert _name(ember, fn) == _name(torch, fn)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_modes_have_zero_gradients(mode):
    a = ember.tensor([1.3, -2.7, 5.1], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.6, 1.9, -2.2], dtype=ember.float64, requires_grad=True)
    y = ember.div(a, b, rounding_mode=mode)
    assert y.requires_grad
    ga, gb = ember.autograd.grad(y.sum(), (a, b))
    assert ga.tolist() == [0.0] * 3 and gb.tolist() == [0.0] * 3
    # piecewise constant: the numerical gradient away from the jumps is zero too
    assert gradcheck(lambda x, z: ember.div(x, z, rounding_mode=mode), (a, b))
    want = np.floor(a.detach().numpy() / b.detach().numpy()) if mode == "floor" else \
        np.trunc(a.detach().numpy() / b.detach().numpy())
    np.testing.assert_array_equal(y.detach().numpy(), want)


def test_div_rounding_mode_in_place_gives_zero_gradient():
    a = ember.tensor([1.3, -2.7, 5.1], requires_grad=True)
    x = a.clone()
    x.div_(2, rounding_mode="floor")
    assert type(x.grad_fn).__name__ == "DivBackward2"
    (g,) = ember.autograd.grad(x.sum(), a)
    assert g.tolist() == [0.0] * 3  # was the identity: the clone's history


@pytest.mark.parametrize("op", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_"])
def test_in_place_comparisons_have_zero_gradients(op):
    a = ember.tensor([[0.2, 0.7], [0.9, 0.4]], requires_grad=True)
    b = ember.tensor([0.5, 0.5], requires_grad=True)
    for other in (0.5, b):
        x = a.clone()
        getattr(x, op)(other)
        assert x.dtype == ember.float32 and x.requires_grad
        suffix = "1" if isinstance(other, ember.Tensor) else "0"
        assert type(x.grad_fn).__name__.endswith("Backward" + suffix)
        grads = ember.autograd.grad((x * 3).sum(), (a, b) if other is b else (a,))
        for g in grads:
            assert not g.any()  # was 3.0 everywhere: the identity through the clone


def test_in_place_comparisons_match_pytorch():
    torch = _torch()

    def run(lib):
        a = lib.tensor([[0.2, 0.7], [0.9, 0.4]], requires_grad=True)
        b = lib.tensor([0.5, 0.5], requires_grad=True)
        x = a.clone()
        x.gt_(b)
        (x * a).sum().backward()
        return type(x.grad_fn).__name__, x.tolist(), a.grad.tolist(), b.grad.tolist()

    assert run(ember) == run(torch)
