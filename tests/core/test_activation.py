"""Activation kernels (ember.ops.activation): NumPy references, gradcheck, dtypes, errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import activation as A


def _erf(x):
    return np.vectorize(math.erf)(x)


def _sig(x):
    return 1 / (1 + np.exp(-x))


_SELU_A, _SELU_S = 1.6732632423543772, 1.0507009873554805

# name -> (callable on tensor, NumPy reference)
REFERENCES = {
    "relu6": (A.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (lambda t: A.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (lambda t: A.elu(t, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "selu": (A.selu, lambda x: _SELU_S * np.where(x > 0, x, _SELU_A * np.expm1(x))),
    "celu": (lambda t: A.celu(t, 0.7),
             lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7))),
    "gelu": (A.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "gelu_tanh": (lambda t: A.gelu(t, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    "silu": (A.silu, lambda x: x * _sig(x)),
    "mish": (A.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "softplus": (lambda t: A.softplus(t, 2.0, 3.0),
                 lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    "hardswish": (A.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (A.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hardtanh": (lambda t: A.hardtanh(t, -0.5, 0.8), lambda x: np.clip(x, -0.5, 0.8)),
    "logsigmoid": (A.logsigmoid, lambda x: np.log(_sig(x))),
    "softsign": (A.softsign, lambda x: x / (1 + np.abs(x))),
    "tanhshrink": (A.tanhshrink, lambda x: x - np.tanh(x)),
    "softshrink": (lambda t: A.softshrink(t, 0.3),
                   lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0))),
    "hardshrink": (lambda t: A.hardshrink(t, 0.3), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
    "threshold": (lambda t: A.threshold(t, 0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0)),
    "rrelu_eval": (A.rrelu, lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2)),
    "glu": (lambda t: A.glu(t, 1),
            lambda x: x[:, :2] * _sig(x[:, 2:])),
}
# kinks where finite differences are meaningless are avoided by the data below
GRADGRAD = {"gelu", "gelu_tanh", "silu", "softplus", "elu", "selu", "celu", "mish",
            "logsigmoid", "glu", "hardswish"}


def _data(shape=(3, 4), seed=0):
    x = np.random.default_rng(seed).uniform(-4, 4, shape)
    # keep away from the kinks at 0, +-3, thresholds and lambdas
    for k in (0.0, 3.0, -3.0, 0.1, 0.3, -0.3, -0.5, 0.8, 6.0, 1.5):
        x = np.where(np.abs(x - k) < 0.05, x + 0.2, x)
    return x


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_values_against_numpy(name):
    fn, ref = REFERENCES[name]
    x = _data()
    for dt in (ember.float32, ember.float64):
        out = fn(ember.tensor(x, dtype=dt))
        assert out.dtype == dt
        assert out.shape == ref(x).shape
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-5 if dt == ember.float32
                                   else 1e-12, atol=1e-6 if dt == ember.float32 else 1e-12)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_gradcheck(name):
    fn = REFERENCES[name][0]
    x = ember.tensor(_data(seed=1), dtype=ember.float64, requires_grad=True)
    assert gradcheck(fn, (x,))
    if name in GRADGRAD:
        assert gradgradcheck(fn, (x,))


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
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        A.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        A.hardtanh(x, 1.0, -1.0)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        A.gelu(x, approximate="erf")
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel"):
        A.prelu(x, ember.randn(2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        A.softmax(x, 2)


def test_prelu_values_and_gradcheck():
    x = ember.tensor(_data((2, 3, 4), seed=2), dtype=ember.float64, requires_grad=True)
    w = ember.tensor([0.1, 0.5, -0.3], dtype=ember.float64, requires_grad=True)
    xd = x.detach().numpy()
    ref = np.where(xd > 0, xd, xd * np.array([0.1, 0.5, -0.3])[:, None])
    np.testing.assert_allclose(A.prelu(x, w).detach().numpy(), ref)
    assert type(A.prelu(x, w).grad_fn).__name__ == "PreluKernelBackward0"
    assert gradcheck(A.prelu, (x, w))
    assert gradgradcheck(A.prelu, (x, w))
    single = ember.tensor([0.25], dtype=ember.float64, requires_grad=True)
    assert gradcheck(A.prelu, (x, single))
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

def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family_values(dim):
    x = np.random.default_rng(3).normal(size=(3, 4, 5)) * 10
    t = ember.tensor(x)
    np.testing.assert_allclose(A.softmax(t, dim).numpy(), _np_softmax(x, dim))
    np.testing.assert_allclose(A.log_softmax(t, dim).numpy(), np.log(_np_softmax(x, dim)),
                               atol=1e-12)
    np.testing.assert_allclose(A.softmin(t, dim).numpy(), _np_softmax(-x, dim))
    assert ember.softmax(t, dim).shape == t.shape
    np.testing.assert_allclose(t.log_softmax(dim).numpy(), np.log(_np_softmax(x, dim)),
                               atol=1e-12)


def test_softmax_is_stable_for_huge_inputs():
    out = A.softmax(ember.tensor([1000.0, 1000.0, -1000.0]), 0)
    np.testing.assert_allclose(out.numpy(), [0.5, 0.5, 0.0])
    out = A.log_softmax(ember.tensor([1000.0, 0.0]), 0)
    np.testing.assert_allclose(out.numpy(), [0.0, -1000.0])


@pytest.mark.parametrize("fn", [A.softmax, A.log_softmax, A.softmin])
def test_softmax_gradcheck(fn):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: fn(t, 1), (x,))
    assert gradgradcheck(lambda t: fn(t, 0), (x,))


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
