"""Activation kernels (ember.ops.activation): stability, dtypes, errors, node names, random
slopes, in-place forms, devices (values and gradchecks: tests/ops/test_ops.py)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.ops import activation as A

_SELU_S = 1.0507009873554805

# The values (against NumPy and PyTorch), gradchecks and gradgradchecks of the activations
# and the softmax family, on inputs that cross their kinks and saturations: the generic
# tests over the op database (tests/ops/test_ops.py)


def _data(shape=(3, 4), seed=0):
    x = np.random.default_rng(seed).uniform(-4, 4, shape)
    # keep away from the kinks at 0, +-3, thresholds and lambdas
    for k in (0.0, 3.0, -3.0, 0.1, 0.3, -0.3, -0.5, 0.8, 6.0, 1.5):
        x = np.where(np.abs(x - k) < 0.05, x + 0.2, x)
    return x


def test_node_names():
    x = ember.randn(3, requires_grad=True)
    assert type(A.relu6(x).grad_fn).__name__ == "HardtanhBackward0"
    assert type(A.selu(x).grad_fn).__name__ == "EluBackward0"
    assert type(A.celu(x).grad_fn).__name__ == "CeluBackward0"
    assert type(A.gelu(x).grad_fn).__name__ == "GeluBackward0"
    assert type(A.softmax(x, 0).grad_fn).__name__ == "SoftmaxBackward0"
    assert type(A.log_softmax(x, 0).grad_fn).__name__ == "LogSoftmaxBackward0"


def test_softplus_is_stable_for_large_inputs():
    x = ember.tensor([-1000.0, 1000.0, 50.0])
    out = A.softplus(x, threshold=100.0)
    np.testing.assert_allclose(out.numpy(), [0.0, 1000.0, 50.0], atol=1e-6)


def test_logsigmoid_is_stable():
    out = A.logsigmoid(ember.tensor([-1000.0, 1000.0], dtype=ember.float64))
    np.testing.assert_allclose(out.numpy(), [-1000.0, 0.0])


def test_integer_inputs():
    x = ember.tensor([-2, 0, 3])
    assert A.relu6(x).dtype == ember.int64
    assert A.hardtanh(x).tolist() == [-1, 0, 1]
    assert A.threshold(x, 0, 5).tolist() == [5, 5, 3]
    assert A.softsign(x).dtype == ember.float32
    for fn in (A.elu, A.gelu, A.silu, A.leaky_relu, A.hardswish, A.logsigmoid, A.mish):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            fn(x)
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        A.softmax(x, 0)


def test_errors():
    x = ember.randn(2, 3)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        A.glu(x, 1)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\]"):
        A.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        A.hardtanh(x, 1.0, -1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        A.gelu(x, approximate="erf")
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel"):
        A.prelu(x, ember.randn(2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        A.softmax(x, 2)


def test_prelu_node_name_and_method():
    # values and gradchecks (per channel, one weight): the generic tests
    x = ember.tensor(_data((2, 3, 4), seed=2), dtype=ember.float64, requires_grad=True)
    w = ember.tensor([0.1, 0.5, -0.3], dtype=ember.float64, requires_grad=True)
    assert type(A.prelu(x, w).grad_fn).__name__ == "PreluKernelBackward0"
    assert x.prelu(w).shape == x.shape


def test_rrelu_training_slopes_in_range_and_deterministic():
    x = -ember.rand(1000) - 0.1
    ember.manual_seed(5)
    a = A.rrelu(x, 0.1, 0.3, training=True)
    ember.manual_seed(5)
    b = A.rrelu(x, 0.1, 0.3, training=True)
    assert ember.equal(a, b)
    slopes = (a / x).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    xg = x.clone().requires_grad_()
    ember.manual_seed(5)
    A.rrelu(xg, 0.1, 0.3, training=True).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), slopes, rtol=1e-5)


def test_rrelu_op_takes_a_generator_and_f_rrelu_inplace():
    """torch.rrelu is ATen's (input, lower, upper, training, generator); F.rrelu's fifth
    parameter is inplace (its own function over the op, as in PyTorch)."""
    import ember.nn.functional as F

    x = -ember.rand(200, dtype=ember.float64) - 0.1
    def gen(seed):
        return ember.Generator(x.device).manual_seed(seed)

    a = ember.rrelu(x, 0.1, 0.3, True, gen(3))
    b = ember.rrelu(x, training=True, lower=0.1, upper=0.3,
                    generator=gen(3))
    assert ember.equal(a, b)
    assert not ember.equal(a, ember.rrelu(x, 0.1, 0.3, True, gen(4)))
    y = x.clone()
    ember.rrelu_(y, 0.1, 0.3, True, gen(3))
    assert ember.equal(y, a)
    z = x.clone()
    assert F.rrelu(z, 0.2, 0.2, True, True) is z
    np.testing.assert_allclose(z.numpy(), x.numpy() * 0.2)
    w = x.clone()
    assert F.rrelu_(w) is w and ember.allclose(w, F.rrelu(x))
    with pytest.raises(TypeError, match="generator"):
        F.rrelu(x, generator=gen(0))


def test_rrelu_registered_as_random():
    """rrelu and rrelu_ draw slopes in training: the registry says so (the generic op tests
    then reseed before each call)."""
    from ember.ops.registry import OPS

    assert OPS["rrelu"].random and OPS["rrelu_"].random
    assert not OPS["leaky_relu"].random


def test_inplace_variants():
    x = ember.tensor([-1.0, 2.0, 8.0])
    assert A.hardtanh_(x) is x and x.tolist() == [-1.0, 1.0, 1.0]
    x = ember.tensor([-1.0, 2.0])
    A.leaky_relu(x, 0.5, inplace=True)
    assert x.tolist() == [-0.5, 2.0]
    x = ember.tensor([-1.0, 2.0])
    A.elu_(x)
    np.testing.assert_allclose(x.numpy(), [math.expm1(-1.0), 2.0], rtol=1e-6)
    x = ember.tensor([-1.0, 2.0])
    assert ember.selu_(x) is x and x[1].item() == pytest.approx(2 * _SELU_S)
    x = ember.tensor([-1.0, 2.0])
    ember.threshold_(x, 0.0, 7.0)
    assert x.tolist() == [7.0, 2.0]
    leaf = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        A.elu_(leaf)
    y = leaf * 1
    A.relu6(y, inplace=True).sum().backward()
    assert leaf.grad is not None


# -- softmax family ----------------------------------------------------------------------------


def test_softmax_is_stable_for_huge_inputs():
    out = A.softmax(ember.tensor([1000.0, 1000.0, -1000.0]), 0)
    np.testing.assert_allclose(out.numpy(), [0.5, 0.5, 0.0])
    out = A.log_softmax(ember.tensor([1000.0, 0.0]), 0)
    np.testing.assert_allclose(out.numpy(), [0.0, -1000.0])


def test_softmax_dtype_argument():
    x = ember.randn(2, 3)
    assert A.softmax(x, 1, dtype=ember.float64).dtype == ember.float64
    assert ember.softmax(x, 1, ember.float64).dtype == ember.float64  # torch.softmax's order
    assert x.softmax(1, dtype=ember.float64).dtype == ember.float64
    assert A.log_softmax(ember.tensor([1, 2]), 0, dtype=ember.float32).dtype == ember.float32


def test_softmax_implicit_dim_warns():
    for shape, dim in (((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 5), 1)):
        x = ember.randn(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            out = A.softmax(x)
        assert ember.allclose(out, A.softmax(x, dim))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax") as rec:
        A.log_softmax(ember.randn(3))
    assert rec[0].filename == __file__  # attributed to the caller, as PyTorch's _stacklevel
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        A.softmin(ember.randn(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A.softmax(ember.randn(3), 0)


def test_softmax_scalar_and_empty():
    # (dim=-1 on a 0-d input: the op database's 0-d samples take dim 0)
    assert A.softmax(ember.tensor(3.0), 0).item() == 1.0
    assert A.log_softmax(ember.tensor(3.0), -1).item() == 0.0
    assert A.softmax(ember.zeros(0, 3), 1).shape == (0, 3)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8))
def test_softmax_sums_to_one(values):
    out = A.softmax(ember.tensor(values, dtype=ember.float64), 0).numpy()
    assert abs(out.sum() - 1) < 1e-12 and (out >= 0).all()


# -- devices -----------------------------------------------------------------------------------

def test_activations_keep_the_device(testdev):
    x = ember.randn(2, 4, device=testdev, requires_grad=True)
    for fn in (A.gelu, A.silu, A.elu, A.hardswish, lambda t: A.softmax(t, 1),
               lambda t: A.log_softmax(t, 1), lambda t: A.glu(t, 1), A.relu6, A.mish):
        out = fn(x)
        assert out.device == testdev
        out.sum().backward()
        assert x.grad.device == testdev
        x.grad = None
    w = ember.randn(4, device=testdev)
    assert A.prelu(x, w).device == testdev
    assert A.rrelu(x.detach(), training=True).device == testdev


def test_prelu_mixing_devices_raises(testdev):
    x = ember.randn(2, 4, device=testdev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        A.prelu(x, ember.randn(4))


@pytest.mark.parametrize("shape", [(4, 64), (3, 5), (2, 16, 32, 32), (8192 * 3,)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_values_on_every_size(shape, dtype):
    # sizes that divide into zero rows take the broadcast path, others the scalar one
    a = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    flat[:4] = [np.nan, -np.inf, np.inf, -0.0]
    out = ember.relu(ember.from_numpy(a)).numpy()
    assert out.dtype == dtype and out.shape == a.shape
    np.testing.assert_array_equal(out, np.maximum(a, 0))
    assert np.isnan(out.reshape(-1)[0]) and out.reshape(-1)[1] == 0
    x = ember.from_numpy(a.copy())
    x.relu_()
    np.testing.assert_array_equal(x.numpy(), out)


def test_relu_and_threshold_backward_pass_the_gradient_at_nan_inputs():
    # PyTorch's threshold_backward is `x <= t ? 0 : g`: a NaN input passes its gradient
    x = ember.tensor([1.0, float("nan"), -1.0, 0.0], requires_grad=True)
    ember.relu(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 0.0]
    g = ember.tensor([2.0, 3.0, 4.0, 5.0])
    out = ember.threshold_backward(g, ember.tensor([0.5, float("nan"), 0.2, 0.7]), 0.5)
    assert out.tolist() == [0.0, 3.0, 0.0, 5.0]
