"""Lazy modules (LazyLinear, LazyConv*, LazyConvTranspose*) and UninitializedParameter /
UninitializedBuffer, against PyTorch where installed."""

import copy
import math
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

# -- uninitialized tensors --------------------------------------------------------------------


def test_uninitialized_parameter_refuses_ops_and_shape():
    p = UninitializedParameter()
    assert isinstance(p, nn.Parameter) and is_lazy(p) and p.requires_grad
    assert repr(p) == "<UninitializedParameter>"
    # made like PyTorch's, by ember.empty(0): the default dtype and the default device
    assert p.dtype == ember.float32 and p.device == ember.get_default_device()
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        p + 1
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        ember.zeros_like(p)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized "
                                           "parameter or buffer"):
        _ = p.shape


def test_uninitialized_parameter_dtype_moves_and_materialize():
    p = UninitializedParameter(dtype=ember.float64)
    assert p.is_floating_point() and p.dtype == ember.float64
    as_half = p.half()
    assert type(as_half) is ember.Tensor and as_half.dtype == ember.float16
    p.data = p.float()
    assert is_lazy(p) and p.dtype == ember.float32
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == ember.float32
    assert (p * 0).sum().item() == 0  # usable now


def test_uninitialized_buffer():
    b = UninitializedBuffer(persistent=False)
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad and not b.persistent
    b.materialize((4,), dtype=ember.float64)
    assert type(b) is ember.Tensor and b.shape == (4,) and b.dtype == ember.float64


def test_uninitialized_copies_and_pickles():
    p = UninitializedParameter(requires_grad=False, dtype=ember.float64)
    c = copy.deepcopy(p)
    assert is_lazy(c) and c is not p and c.dtype == ember.float64 and not c.requires_grad
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is UninitializedParameter and not q.requires_grad


# -- LazyLinear ---------------------------------------------------------------------------------

def test_lazy_linear_materializes_on_first_forward():
    m = nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m.has_uninitialized_params()
    y = m(ember.ones(2, 5))
    assert y.shape == (2, 3)
    assert type(m) is nn.Linear and m.in_features == 5
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert m.weight.shape == (3, 5) and m.bias.shape == (3,)
    bound = 1 / math.sqrt(5)  # Linear's init ran with the inferred fan-in
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert not m._forward_pre_hooks and not m._load_state_dict_pre_hooks
    m(ember.ones(1, 5)).sum().backward()
    assert m.weight.grad.shape == (3, 5)


def test_lazy_linear_without_bias_and_in_a_network():
    net = nn.Sequential(nn.LazyLinear(8, bias=False), nn.ReLU(), nn.LazyLinear(2))
    assert net(ember.randn(4, 6)).shape == (4, 2)
    assert net[0].bias is None and net[0].weight.shape == (8, 6)
    assert net[2].weight.shape == (2, 8)


def test_lazy_linear_converted_before_the_dry_run():
    m = nn.LazyLinear(2).double()
    assert is_lazy(m.weight) and m.weight.dtype == ember.float64
    m(ember.ones(1, 3, dtype=ember.float64))
    assert m.weight.dtype == ember.float64 and m.bias.dtype == ember.float64


def test_deep_copied_lazy_module_initializes_on_its_own():
    m = nn.LazyLinear(3)
    c = copy.deepcopy(m)
    c(ember.ones(1, 4))
    assert type(c) is nn.Linear and c.weight.shape == (3, 4)
    assert type(m) is nn.LazyLinear and m.has_uninitialized_params()
    assert len(m._forward_pre_hooks) == 1  # the copy removed its own hook, not this one
    m(ember.ones(1, 6))
    assert type(m) is nn.Linear and m.weight.shape == (3, 6)


def test_lazy_state_dict_and_loading():
    lazy = nn.LazyLinear(3)
    sd = lazy.state_dict()
    assert list(sd) == ["weight", "bias"] and all(is_lazy(v) for v in sd.values())
    other = nn.LazyLinear(3)
    assert not other.load_state_dict(sd).missing_keys  # uninitialized into uninitialized
    assert other.has_uninitialized_params()
    full = nn.Linear(5, 3)
    lazy.load_state_dict(full.state_dict())  # initialized into uninitialized
    assert not lazy.has_uninitialized_params() and type(lazy) is nn.LazyLinear
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), full.weight.detach().numpy())
    lazy(ember.ones(1, 5))
    assert type(lazy) is nn.Linear and lazy.in_features == 5
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), full.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        nn.Linear(5, 3).load_state_dict(nn.LazyLinear(3).state_dict())


def test_optimizers_take_uninitialized_parameters_like_torch():
    # PyTorch builds an optimizer over uninitialized parameters (no gradient yet: a step
    # skips them); using them in an op is what raises
    m = nn.LazyLinear(2)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    opt.step()
    m(ember.ones(1, 3)).sum().backward()
    before = m.weight.detach().numpy().copy()
    opt.step()  # the optimizer holds the same, now materialized, parameter objects
    np.testing.assert_allclose(m.weight.detach().numpy(), before - 0.1, rtol=1e-6)


def test_lazy_refused_by_weight_and_spectral_norm():
    with pytest.warns(FutureWarning), pytest.raises(
            ValueError, match="can't have uninitialized parameters"):
        nn.utils.weight_norm(nn.LazyLinear(2))
    with pytest.raises(ValueError, match="can't have uninitialized parameters"):
        nn.utils.spectral_norm(nn.LazyLinear(2))


def test_lazy_linear_matches_torch():
    torch = pytest.importorskip("torch")
    e, t = nn.LazyLinear(4), torch.nn.LazyLinear(4)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e.state_dict()["weight"]) == repr(t.state_dict()["weight"])
    e(ember.ones(2, 7))
    t(torch.ones(2, 7))
    assert repr(e) == repr(t) and type(e).__name__ == type(t).__name__
    assert tuple(e.weight.shape) == tuple(t.weight.shape)


# -- lazy convolutions --------------------------------------------------------------------------

LAZY_CONVS = [
    ("LazyConv1d", (2, 3, 9)), ("LazyConv2d", (2, 3, 7, 6)), ("LazyConv3d", (3, 5, 5, 5)),
    ("LazyConvTranspose1d", (2, 3, 9)), ("LazyConvTranspose2d", (2, 3, 5, 4)),
    ("LazyConvTranspose3d", (3, 4, 4, 4)),
]


@pytest.mark.parametrize("name,input_shape", LAZY_CONVS)
def test_lazy_conv_matches_torch(name, input_shape):
    torch = pytest.importorskip("torch")
    e = getattr(nn, name)(6, 3, stride=2, padding=1, groups=3)
    t = getattr(torch.nn, name)(6, 3, stride=2, padding=1, groups=3)
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    x = np.random.default_rng(0).standard_normal(input_shape).astype(np.float32)
    ye = e(ember.tensor(x))
    t(torch.tensor(x))
    assert type(e).__name__ == type(t).__name__ == name.replace("Lazy", "")
    assert repr(e) == repr(t)
    assert tuple(e.weight.shape) == tuple(t.weight.shape)
    assert tuple(e.bias.shape) == tuple(t.bias.shape)
    with torch.no_grad():  # same weights give the same output
        t.weight.copy_(torch.tensor(e.weight.detach().numpy()))
        t.bias.copy_(torch.tensor(e.bias.detach().numpy()))
    np.testing.assert_allclose(ye.detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_lazy_conv_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           "to LazyConv2d, but got input of size"):
        nn.LazyConv2d(4, 3)(ember.ones(2, 3, 4, 4, 4))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv1d(4, 3, groups=2)(ember.ones(1, 3, 8))


# -- lazy normalization layers ------------------------------------------------------------------

LAZY_NORMS = [("LazyBatchNorm1d", (6, 3)), ("LazyBatchNorm1d", (6, 3, 5)),
              ("LazyBatchNorm2d", (4, 3, 5, 5)), ("LazyBatchNorm3d", (2, 3, 3, 3, 3)),
              ("LazyInstanceNorm1d", (4, 3, 7)), ("LazyInstanceNorm2d", (2, 3, 5, 5)),
              ("LazyInstanceNorm3d", (2, 3, 3, 3, 3))]


@pytest.mark.parametrize("name,input_shape", LAZY_NORMS)
def test_lazy_norm_matches_torch(name, input_shape):
    torch = pytest.importorskip("torch")
    e, t = getattr(nn, name)(momentum=0.2), getattr(torch.nn, name)(momentum=0.2)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    # torch's tensors are the CPU's: compare the values' reprs without a device suffix
    assert [repr(v if is_lazy(v) else v.cpu()) for v in e.state_dict().values()] == \
        [repr(v) for v in t.state_dict().values()]
    x = np.random.default_rng(0).standard_normal(input_shape).astype(np.float32)
    for _ in range(2):  # training: running statistics move the same way
        np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                                   t(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert type(e).__name__ == type(t).__name__ == name.replace("Lazy", "")
    assert repr(e) == repr(t)
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(e.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


def test_lazy_norm_without_affine_or_statistics():
    m = nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
    assert list(m.state_dict()) == [] and not m.has_uninitialized_params()
    y = m(ember.randn(2, 4, 3, 3))
    # nothing to infer: like PyTorch's, num_features stays 0
    assert type(m) is nn.BatchNorm2d and m.num_features == 0 and y.shape == (2, 4, 3, 3)
    m = nn.LazyInstanceNorm1d()
    m(ember.randn(5, 7))  # unbatched: the features are dimension 0
    assert m.num_features == 5 and m.weight.shape == (5,)
