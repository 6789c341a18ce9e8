"""ember.nn.init: gains, fans, and the statistics of every initialiser."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn import init


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(ember.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(ember.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(3))


def stats(t):
    a = t.detach().numpy().astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_normal_constant():
    t = ember.empty(200, 200)
    assert init.uniform_(t, -2, 3) is t
    mean, std, lo, hi = stats(t)
    assert lo >= -2 and hi <= 3 and abs(mean - 0.5) < 0.05
    init.normal_(t, 1.0, 2.0)
    mean, std, _, _ = stats(t)
    assert abs(mean - 1) < 0.05 and abs(std - 2) < 0.05
    init.constant_(t, 0.5)
    assert stats(t)[2] == stats(t)[3] == 0.5
    init.ones_(t)
    assert t.sum().item() == 40000
    init.zeros_(t)
    assert t.abs().sum().item() == 0


def test_init_on_parameter_records_no_graph():
    p = nn.Parameter(ember.empty(4, 4))
    init.kaiming_normal_(p)
    assert p.requires_grad and p.grad_fn is None and p.is_leaf


def test_trunc_normal():
    t = ember.empty(300, 300)
    init.trunc_normal_(t, mean=0.0, std=1.0, a=-1.0, b=2.0)
    mean, std, lo, hi = stats(t)
    assert lo >= -1 and hi <= 2
    # mean of N(0,1) truncated to [-1, 2]: (phi(-1) - phi(2)) / (Phi(2) - Phi(-1))
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2
    expected = (phi(-1) - phi(2)) / (cdf(2) - cdf(-1))
    assert abs(mean - expected) < 0.02


def test_xavier():
    t = ember.empty(300, 200)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    mean, std, lo, hi = stats(t)
    assert lo >= -bound and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.01
    init.xavier_normal_(t)
    assert abs(stats(t)[1] - math.sqrt(2 / 500)) < 0.002


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming(mode):
    t = ember.empty(300, 200)
    fan = 200 if mode == "fan_in" else 300
    init.kaiming_normal_(t, mode=mode, nonlinearity="relu")
    assert abs(stats(t)[1] - math.sqrt(2 / fan)) < 0.003
    init.kaiming_uniform_(t, a=0.1, mode=mode)
    bound = init.calculate_gain("leaky_relu", 0.1) * math.sqrt(3 / fan)
    _, std, lo, hi = stats(t)
    assert lo >= -bound and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.003
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(t, mode="fan_avg")


def test_kaiming_empty_tensor_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))


def test_eye_and_dirac():
    t = ember.empty(3, 5)
    init.eye_(t)
    np.testing.assert_array_equal(t.numpy(), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(3))
    w = ember.empty(4, 2, 3, 3)
    init.dirac_(w, groups=2)
    a = w.numpy()
    assert a.sum() == 4 and a[0, 0, 1, 1] == 1 and a[1, 1, 1, 1] == 1 and a[2, 0, 1, 1] == 1
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(3, 2, 3), groups=2)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 2)])
def test_orthogonal(shape):
    t = ember.empty(*shape)
    init.orthogonal_(t, gain=2.0)
    m = t.numpy().reshape(shape[0], -1) / 2.0
    if m.shape[0] <= m.shape[1]:
        np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-5)
    else:
        np.testing.assert_allclose(m.T @ m, np.eye(m.shape[1]), atol=1e-5)


def test_sparse():
    t = ember.empty(10, 6)
    init.sparse_(t, sparsity=0.3)
    zeros_per_column = (t.numpy() == 0).sum(axis=0)
    assert (zeros_per_column >= 3).all()


def test_seeded_and_generator():
    ember.manual_seed(7)
    a = init.normal_(ember.empty(5))
    ember.manual_seed(7)
    b = init.normal_(ember.empty(5))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    dev = ember.get_default_device()  # a generator of the device the tensors are made on
    g1, g2 = ember.Generator(dev).manual_seed(1), ember.Generator(dev).manual_seed(1)
    np.testing.assert_array_equal(init.uniform_(ember.empty(4), generator=g1).numpy(),
                                  init.uniform_(ember.empty(4), generator=g2).numpy())


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match="`nn.init.normal` is now deprecated"):
        init.normal(ember.empty(2))
