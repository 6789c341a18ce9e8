"""ember.nn.utils.stateless.functional_call: a module run with other parameters and
buffers (swapped in and restored, tied weights, strict), against PyTorch where installed."""

import numpy as np
import pytest
from testutils import assert_allclose, copy_state_to_torch, to_numpy

import ember
import ember.nn as nn
from ember.nn.utils import stateless


def test_functional_call_swaps_and_restores():
    m = nn.Linear(3, 2)
    original = m.weight
    w = ember.randn(2, 3, requires_grad=True)
    b = ember.zeros(2)
    x = ember.randn(4, 3)
    y = stateless.functional_call(m, {"weight": w, "bias": b}, (x,))
    assert_allclose(y, to_numpy(x) @ to_numpy(w).T, rtol=1e-5, atol=1e-6)
    assert m.weight is original and isinstance(m.weight, nn.Parameter)
    y.sum().backward()
    assert_allclose(w.grad, np.tile(to_numpy(x).sum(0), (2, 1)), rtol=1e-5)
    assert original.grad is None  # the module's own parameter is not involved


def test_functional_call_partial_kwargs_and_single_arg():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(ember.tensor(2.0))

        def forward(self, x, *, shift=0.0):
            return x * self.s + shift

    m = Scale()
    out = stateless.functional_call(m, {"s": ember.tensor(3.0)}, ember.ones(2), {"shift": 1.0})
    assert_allclose(out, [4.0, 4.0])
    assert_allclose(stateless.functional_call(m, {}, ember.ones(2)), [2.0, 2.0])


def test_functional_call_writes_back_buffers():
    bn = nn.BatchNorm1d(2)
    mean = ember.zeros(2)
    buffers = {"running_mean": mean}
    stateless.functional_call(bn, buffers, (ember.tensor([[1.0, 2.0], [3.0, 4.0]]),))
    assert_allclose(mean, [0.2, 0.3], rtol=1e-6)  # updated in place during the call
    assert_allclose(bn.running_mean, [0.0, 0.0])  # the module's own buffer untouched


def test_functional_call_tied_weights_and_strict():
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    m[1].weight = m[0].weight
    w = ember.eye(2) * 3
    y = stateless.functional_call(m, {"0.weight": w}, (ember.ones(1, 2),))
    assert_allclose(y, [[9.0, 9.0]])  # both tied names got w
    y = stateless.functional_call(m, {"0.weight": w}, (ember.ones(1, 2),), tie_weights=False)
    assert not np.allclose(to_numpy(y), [[9.0, 9.0]])
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys "
                                         r"\['0.weight', '1.weight'\], which are tied"):
        stateless.functional_call(m, {"0.weight": w, "1.weight": w * 2}, (ember.ones(1, 2),))
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Sequential:\n\t"
                                           "Unexpected key\\(s\\): 'foo'.\n\tMissing key\\(s\\): "
                                           "'0.weight', '1.weight'."):
        stateless.functional_call(m, {"foo": w}, (ember.ones(1, 2),), strict=True)


def test_functional_call_matches_torch_func():
    torch = pytest.importorskip("torch")
    e, t = copy_state_to_torch(nn.Linear(3, 2, dtype=ember.float64),
                torch.nn.Linear(3, 2, dtype=torch.float64))
    w = np.random.default_rng(5).standard_normal((2, 3))
    x = np.random.default_rng(6).standard_normal((4, 3))
    ye = stateless.functional_call(e, {"weight": ember.tensor(w)}, (ember.tensor(x),))
    yt = torch.func.functional_call(t, {"weight": torch.tensor(w)}, (torch.tensor(x),))
    assert_allclose(ye, yt, rtol=1e-12)
