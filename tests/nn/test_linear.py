"""Identity, Linear (and the core ``linear`` op), Bilinear, Flatten, Unflatten."""

import math

import numpy as np
import pytest
from testutils import randn64

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import register_test_device

# -- the core op -------------------------------------------------------------------------------

@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradcheck(x_shape, with_bias):
    x, w = randn64(*x_shape), randn64(5, 4)
    args = (x, w, randn64(5)) if with_bias else (x, w)
    assert gradcheck(ember.linear, args)
    assert gradgradcheck(ember.linear, args)


@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)])
def test_linear_forward_matches_numpy(x_shape):
    x = ember.randn(*x_shape)
    w, b = ember.randn(5, 4), ember.randn(5)
    out = F.linear(x, w, b)
    np.testing.assert_allclose(out.numpy(), x.numpy() @ w.numpy().T + b.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert out.shape == (*x_shape[:-1], 5) and out.dtype == ember.float32
    np.testing.assert_allclose(F.linear(x, w).numpy(), x.numpy() @ w.numpy().T, rtol=1e-5,
                               atol=1e-6)


def test_linear_grad_fn_names():
    w, b = randn64(5, 4), randn64(5)
    assert type(ember.linear(randn64(3, 4), w, b).grad_fn).__name__ == "AddmmBackward0"
    assert type(ember.linear(randn64(3, 4), w).grad_fn).__name__ == "MmBackward0"
    assert type(ember.linear(randn64(2, 3, 4), w, b).grad_fn).__name__ == "ViewBackward0"
    assert ember.linear(randn64(3, 4, requires_grad=False), w.detach()).grad_fn is None


def test_linear_only_needed_grads():
    x, w = randn64(3, 4, requires_grad=False), randn64(5, 4)
    ember.linear(x, w).sum().backward()
    assert x.grad is None and w.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), np.ones((3, 5)).T @ x.numpy())


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(14x3 and 4x5\)"):
        ember.linear(ember.randn(2, 7, 3), ember.randn(5, 4))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but "
                                           "got: float != double"):
        ember.linear(ember.randn(2, 4), ember.randn(5, 4).double())
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ember.linear(ember.randn(2, 4), ember.randn(5, 4), ember.randn(3))


@pytest.mark.parametrize("x_shape,bias_shape,out_shape", [
    ((4,), None, ()), ((3, 4), None, (3,)), ((2, 3, 4), None, (2, 3)),
    ((4,), (), ()), ((2, 3, 4), (), (2, 3)),
])
def test_linear_vector_weight(x_shape, bias_shape, out_shape):
    """A 1-D weight: ``input @ weight`` (0-d for a 1-D input), as PyTorch's matmul path."""
    x, w = randn64(*x_shape), randn64(4)
    b = ember.tensor(0.7, dtype=ember.float64, requires_grad=True)  # the 0-d bias
    args = (x, w) if bias_shape is None else (x, w, b)
    out = F.linear(*args)
    assert out.shape == out_shape
    ref = x.detach().numpy() @ w.detach().numpy()
    if bias_shape is not None:
        ref = ref + args[2].detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
    assert gradcheck(ember.linear, args)
    assert gradgradcheck(ember.linear, args)
    with ember.no_grad():
        np.testing.assert_allclose(ember.linear(*args).numpy(), ref, rtol=1e-12)


def test_linear_vector_weight_errors():
    """PyTorch's addmm paths refuse the vector: a 2-D input with a bias, a contiguous input
    with a bias of one or more dims."""
    w = ember.randn(4)
    for x, b in ((ember.randn(3, 4), ember.randn(())), (ember.randn(3, 4), ember.randn(3)),
                 (ember.randn(4), ember.randn(1)), (ember.randn(2, 3, 4), ember.randn(3))):
        with pytest.raises(RuntimeError, match="mat2 must be a matrix, got 1-D tensor"):
            ember.linear(x, w, b)
    with pytest.raises(RuntimeError, match="both arguments to linear need to be at least 1D"):
        ember.linear(ember.randn(()), w)
    x = ember.randn(2, 3, 4).transpose(0, 1)  # not contiguous: matmul, then the bias added
    assert ember.linear(x, w, ember.randn(2)).shape == (3, 2)


def test_linear_device():
    register_test_device("testdev")
    dev = ember.device("testdev", 0)
    x, w = ember.randn(2, 3, device=dev), ember.randn(4, 3, device=dev)
    assert ember.linear(x, w).device == dev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.linear(x, ember.randn(4, 3))


# -- Linear ------------------------------------------------------------------------------------

def test_linear_module_shapes_and_repr():
    lin = nn.Linear(3, 5)
    assert lin.weight.shape == (5, 3) and lin.bias.shape == (5,)
    assert repr(lin) == "Linear(in_features=3, out_features=5, bias=True)"
    nobias = nn.Linear(3, 5, bias=False, dtype=ember.float64)
    assert nobias.bias is None and nobias.weight.dtype == ember.float64
    assert [n for n, _ in nobias.named_parameters()] == ["weight"]
    assert lin(ember.randn(7, 3)).shape == (7, 5)


def test_linear_init_bounds():
    ember.manual_seed(0)
    lin = nn.Linear(100, 400)
    bound = 1 / math.sqrt(100)  # kaiming_uniform(a=sqrt(5)) gives the same bound
    w = lin.weight.detach().numpy()
    assert w.min() >= -bound and w.max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound * 3
    b = lin.bias.detach().numpy()
    assert b.min() >= -bound and b.max() <= bound


def test_linear_init_is_seeded():
    ember.manual_seed(3)
    a = nn.Linear(4, 4)
    ember.manual_seed(3)
    b = nn.Linear(4, 4)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())


def test_mlp_trains_with_plain_sgd():
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.normal(size=(128, 2)), dtype=ember.float32)
    y = ember.tensor(np.sin(x.numpy()[:, :1] * 2) + x.numpy()[:, 1:] ** 2, dtype=ember.float32)
    fc1, fc2 = nn.Linear(2, 32), nn.Linear(32, 1)
    params = list(fc1.parameters()) + list(fc2.parameters())
    first = None
    for _ in range(400):
        loss = ((fc2(ember.relu(fc1(x))) - y) ** 2).mean()
        if first is None:
            first = loss.item()
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p.sub_(0.1 * p.grad)
    assert loss.item() < 0.1 * first and loss.item() < 0.1


# -- Bilinear, Identity, Flatten, Unflatten ----------------------------------------------------

def test_bilinear():
    m = nn.Bilinear(3, 4, 2)
    assert m.weight.shape == (2, 3, 4)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)"
    x1, x2 = ember.randn(5, 3), ember.randn(5, 4)
    ref = np.einsum("bi,oij,bj->bo", x1.numpy(), m.weight.detach().numpy(), x2.numpy()) + \
        m.bias.detach().numpy()
    np.testing.assert_allclose(m(x1, x2).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    w = randn64(2, 3, 4)
    assert gradcheck(F.bilinear, (randn64(5, 3), randn64(5, 4), w, randn64(2)))
    bound = 1 / math.sqrt(3)
    assert m.weight.abs().max().item() <= bound


def test_identity_flatten_unflatten():
    x = ember.randn(2, 3, 4, 5)
    assert nn.Identity(54, unused=1)(x) is x
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    u = nn.Unflatten(1, (3, 20))
    assert u(nn.Flatten()(x)).shape == (2, 3, 20)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(3, 20))"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2.0, 3))
