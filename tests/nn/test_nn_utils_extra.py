"""The older hook-based weight_norm / spectral_norm, fusion, stateless.functional_call,
skip_init, and the Module API around them (hooks with kwargs, get_/set_submodule,
to_empty), against NumPy and, where installed, PyTorch."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from ember.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    remove_spectral_norm,
    remove_weight_norm,
    skip_init,
    spectral_norm,
    stateless,
    weight_norm,
)
from ember.nn.utils.weight_norm import _weight_norm, norm_except_dim


def as_array(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def close(actual, desired, **kwargs):
    np.testing.assert_allclose(as_array(actual), as_array(desired), **kwargs)


def twin(ember_module, torch_module):
    """Copy the ember module's state into the torch one (same structure)."""
    import torch

    torch_module.load_state_dict({k: torch.tensor(as_array(v))
                                  for k, v in ember_module.state_dict().items()})
    return ember_module, torch_module


def new_weight_norm(*args, **kwargs):
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        return weight_norm(*args, **kwargs)


# -- weight_norm (hook API) ---------------------------------------------------------------------

def test_norm_except_dim_and_weight_norm_values():
    v = np.random.default_rng(0).standard_normal((3, 4, 2))
    t = ember.tensor(v)
    close(norm_except_dim(t, 2, 0), np.sqrt((v ** 2).sum((1, 2), keepdims=True)))
    close(norm_except_dim(t, 2, 1), np.sqrt((v ** 2).sum((0, 2), keepdims=True)))
    close(norm_except_dim(t, 2, 2), np.sqrt((v ** 2).sum((0, 1), keepdims=True)))
    close(norm_except_dim(t, 2, -1), np.linalg.norm(v))  # -1: the whole tensor
    assert norm_except_dim(t, 2, -1).dim() == 0
    g = np.random.default_rng(1).standard_normal((3, 1, 1))
    close(_weight_norm(t, ember.tensor(g), 0),
          v * g / np.sqrt((v ** 2).sum((1, 2), keepdims=True)))


def test_weight_norm_gradcheck():
    v = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    g = ember.randn(1, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v, g: _weight_norm(v, g, 1), (v, g))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook_matches_torch(dim):
    torch = pytest.importorskip("torch")
    e = new_weight_norm(nn.Linear(4, 3, dtype=ember.float64), dim=dim)
    with pytest.warns(FutureWarning):
        t = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3, dtype=torch.float64), dim=dim)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    twin(e, t)
    x = np.random.default_rng(2).standard_normal((5, 4))
    ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
    close(ye, yt, rtol=1e-12)
    ye.square().sum().backward()
    yt.square().sum().backward()
    close(e.weight_g.grad, t.weight_g.grad, rtol=1e-10)  # g and v both get gradients
    close(e.weight_v.grad, t.weight_v.grad, rtol=1e-10, atol=1e-13)


def test_weight_norm_remove_and_errors():
    m = new_weight_norm(nn.Linear(3, 2))
    expected = as_array(m.weight).copy()
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same "
                                           "parameter weight"):
        new_weight_norm(m)
    remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    close(m.weight, expected, rtol=1e-6)
    assert not m._forward_pre_hooks
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        remove_weight_norm(m)


# -- spectral_norm (hook API) -------------------------------------------------------------------

def _same_vectors(e, t, seed=0):
    import torch

    rng = np.random.default_rng(seed)
    for name in ("weight_u", "weight_v"):
        value = rng.standard_normal(tuple(getattr(t, name).shape))
        value /= np.linalg.norm(value)
        getattr(e, name).copy_(ember.tensor(value))
        with torch.no_grad():
            getattr(t, name).copy_(torch.tensor(value))


def test_spectral_norm_hook_matches_torch():
    torch = pytest.importorskip("torch")
    e = spectral_norm(nn.Conv2d(2, 4, 3, dtype=ember.float64), n_power_iterations=3)
    t = torch.nn.utils.spectral_norm(torch.nn.Conv2d(2, 4, 3, dtype=torch.float64),
                                     n_power_iterations=3)
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    twin(e, t)
    _same_vectors(e, t)
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 5))
    for _ in range(2):
        ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
        close(ye, yt, rtol=1e-10, atol=1e-12)
    close(e.weight_u, t.weight_u, rtol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    close(e.weight_orig.grad, t.weight_orig.grad, rtol=1e-9, atol=1e-12)
    e.eval()
    u = as_array(e.weight_u).copy()
    e(ember.tensor(x))
    close(e.weight_u, u)  # eval mode does not iterate


def test_spectral_norm_hook_upgrades_old_state_dicts_like_torch():
    torch = pytest.importorskip("torch")
    e = spectral_norm(nn.Linear(4, 3, dtype=ember.float64))
    t = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3, dtype=torch.float64))
    twin(e, t)
    t(torch.ones(1, 4, dtype=torch.float64))  # so that u = normalize(W v)
    old = {k: v for k, v in t.state_dict().items() if k != "weight_v"}
    old["weight"] = t.weight.detach()  # version 0 stored the normalized weight, no v
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in old.items()})
    t.load_state_dict(dict(old))
    close(e.weight_v, t.weight_v, rtol=1e-8)


def test_spectral_norm_hook_remove_and_errors():
    m = spectral_norm(nn.ConvTranspose1d(3, 5, 2))
    assert m.weight_u.shape == (5,)  # transposed convolutions normalize along dim 1
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(m)
    m.eval()
    expected = as_array(m.weight_orig) / float(
        m.weight_u @ (m.weight_orig.permute(1, 0, 2).reshape(5, -1) @ m.weight_v))
    remove_spectral_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    assert not m._state_dict_hooks and not m._load_state_dict_pre_hooks
    close(m.weight, expected, rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


# -- fusion -------------------------------------------------------------------------------------

def _trained_bn(bn):
    with ember.no_grad():
        bn.running_mean.copy_(ember.randn(bn.num_features))
        bn.running_var.copy_(ember.rand(bn.num_features) + 0.5)
        bn.weight.copy_(ember.randn(bn.num_features))
        bn.bias.copy_(ember.randn(bn.num_features))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval(bias):
    conv = nn.Conv2d(3, 4, 3, bias=bias).eval()
    bn = _trained_bn(nn.BatchNorm2d(4))
    x = ember.randn(2, 3, 6, 6)
    fused = fuse_conv_bn_eval(conv, bn)
    assert type(fused) is nn.Conv2d and fused is not conv and fused.bias is not None
    close(fused(x), bn(conv(x)), rtol=1e-4, atol=1e-5)


def test_fuse_conv_transpose_bn_eval():
    conv = nn.ConvTranspose2d(3, 4, 2).eval()
    bn = _trained_bn(nn.BatchNorm2d(4))
    x = ember.randn(2, 3, 5, 5)
    close(fuse_conv_bn_eval(conv, bn, transpose=True)(x), bn(conv(x)), rtol=1e-4, atol=1e-5)


def test_fuse_linear_bn_eval_and_training_refused():
    linear = nn.Linear(5, 3).eval()
    bn = _trained_bn(nn.BatchNorm1d(3))
    x = ember.randn(4, 5)
    close(fuse_linear_bn_eval(linear, bn)(x), bn(linear(x)), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_linear_bn_eval(nn.Linear(5, 3), bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        fuse_linear_bn_eval(linear, _trained_bn(nn.BatchNorm1d(2)))


def test_fuse_conv_bn_weights_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as tfusion

    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((4, 2, 3, 3)), rng.standard_normal(4),
              rng.standard_normal(4), rng.random(4) + 0.5, rng.standard_normal(4),
              rng.standard_normal(4)]
    w, b, rm, rv, bw, bb = (ember.tensor(a) for a in arrays)
    tw, tb, trm, trv, tbw, tbb = (torch.tensor(a) for a in arrays)
    for e_args, t_args in [((w, b, rm, rv, 1e-5, bw, bb), (tw, tb, trm, trv, 1e-5, tbw, tbb)),
                           ((w, None, rm, rv, 1e-3, None, None),
                            (tw, None, trm, trv, 1e-3, None, None))]:
        ew, eb = fuse_conv_bn_weights(*e_args)
        t_w, t_b = tfusion.fuse_conv_bn_weights(*t_args)
        assert isinstance(ew, nn.Parameter) and isinstance(eb, nn.Parameter)
        close(ew, t_w, rtol=1e-12)
        close(eb, t_b, rtol=1e-12)


# -- stateless.functional_call ------------------------------------------------------------------

def test_functional_call_swaps_and_restores():
    m = nn.Linear(3, 2)
    original = m.weight
    w = ember.randn(2, 3, requires_grad=True)
    b = ember.zeros(2)
    x = ember.randn(4, 3)
    y = stateless.functional_call(m, {"weight": w, "bias": b}, (x,))
    close(y, as_array(x) @ as_array(w).T, rtol=1e-5, atol=1e-6)
    assert m.weight is original and isinstance(m.weight, nn.Parameter)
    y.sum().backward()
    close(w.grad, np.tile(as_array(x).sum(0), (2, 1)), rtol=1e-5)
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
    close(out, [4.0, 4.0])
    close(stateless.functional_call(m, {}, ember.ones(2)), [2.0, 2.0])


def test_functional_call_writes_back_buffers():
    bn = nn.BatchNorm1d(2)
    mean = ember.zeros(2)
    buffers = {"running_mean": mean}
    stateless.functional_call(bn, buffers, (ember.tensor([[1.0, 2.0], [3.0, 4.0]]),))
    close(mean, [0.2, 0.3], rtol=1e-6)  # updated in place during the call
    close(bn.running_mean, [0.0, 0.0])  # the module's own buffer untouched


def test_functional_call_tied_weights_and_strict():
    m = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    m[1].weight = m[0].weight
    w = ember.eye(2) * 3
    y = stateless.functional_call(m, {"0.weight": w}, (ember.ones(1, 2),))
    close(y, [[9.0, 9.0]])  # both tied names got w
    y = stateless.functional_call(m, {"0.weight": w}, (ember.ones(1, 2),), tie_weights=False)
    assert not np.allclose(as_array(y), [[9.0, 9.0]])
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys "
                                         r"\['0.weight', '1.weight'\], which are tied"):
        stateless.functional_call(m, {"0.weight": w, "1.weight": w * 2}, (ember.ones(1, 2),))
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Sequential:\n\t"
                                           "Unexpected key\\(s\\): 'foo'.\n\tMissing key\\(s\\): "
                                           "'0.weight', '1.weight'."):
        stateless.functional_call(m, {"foo": w}, (ember.ones(1, 2),), strict=True)


def test_functional_call_matches_torch_func():
    torch = pytest.importorskip("torch")
    e, t = twin(nn.Linear(3, 2, dtype=ember.float64),
                torch.nn.Linear(3, 2, dtype=torch.float64))
    w = np.random.default_rng(5).standard_normal((2, 3))
    x = np.random.default_rng(6).standard_normal((4, 3))
    ye = stateless.functional_call(e, {"weight": ember.tensor(w)}, (ember.tensor(x),))
    yt = torch.func.functional_call(t, {"weight": torch.tensor(w)}, (torch.tensor(x),))
    close(ye, yt, rtol=1e-12)


# -- skip_init, to_empty ------------------------------------------------------------------------

def test_skip_init():
    m = skip_init(nn.Linear, 5, 3, bias=False, dtype=ember.float64)
    assert type(m) is nn.Linear and m.weight.shape == (3, 5) and m.bias is None
    assert m.weight.dtype == ember.float64 and m.weight.device == ember.device("cpu")
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                           "initialization"):
        skip_init(NoDevice, 3)


def test_to_empty_keeps_parameter_objects():
    m = nn.BatchNorm1d(3)
    w = m.weight
    assert m.to_empty(device="cpu") is m
    assert m.weight is w and m.weight.shape == (3,) and m.running_mean.shape == (3,)
    assert m.num_batches_tracked.dtype == ember.int64


# -- Module: hooks with kwargs, submodule access --------------------------------------------

class AddKw(nn.Module):
    def forward(self, x, *, bias=0.0):
        return x + bias


def test_forward_pre_hook_with_kwargs_rewrites_args_and_kwargs():
    m = AddKw()
    seen = []

    def hook(module, args, kwargs):
        seen.append((args[0].tolist(), dict(kwargs)))
        return (args[0] * 10,), {"bias": kwargs["bias"] + 1}

    m.register_forward_pre_hook(hook, with_kwargs=True)
    out = m(ember.tensor([1.0]), bias=2.0)
    assert seen == [([1.0], {"bias": 2.0})] and out.tolist() == [13.0]

    def bad(module, args, kwargs):
        return args

    m.register_forward_pre_hook(bad, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\)"):
        m(ember.tensor([1.0]), bias=2.0)


def test_forward_hook_with_kwargs_prepend_and_always_call():
    m = AddKw()
    order = []
    m.register_forward_hook(lambda mod, args, out: order.append("plain"))
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs["bias"])),
                            with_kwargs=True, prepend=True)
    m(ember.tensor([1.0]), bias=3.0)
    assert order == [("kw", 3.0), "plain"]

    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    called = []
    b.register_forward_hook(lambda mod, args, out: called.append(out), always_call=True)
    b.register_forward_hook(lambda mod, args, out: called.append("never"))
    with pytest.raises(ValueError, match="boom"):
        b(ember.ones(1))
    assert called == [None]


ACCESS_CASES = [("get_submodule", "0.foo"), ("get_submodule", "0.weight"),
                ("get_submodule", "5"), ("get_parameter", "0.foo"),
                ("get_parameter", "1.running_mean"), ("get_buffer", "1.weight"),
                ("get_buffer", "1.foo")]


@pytest.mark.parametrize("method,target", ACCESS_CASES)
def test_submodule_access_errors_match_torch(method, target):
    torch = pytest.importorskip("torch")
    e = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    t = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    with pytest.raises(AttributeError) as t_err:
        getattr(t, method)(target)
    with pytest.raises(AttributeError) as e_err:
        getattr(e, method)(target)
    assert str(e_err.value) == str(t_err.value)


def test_submodule_access():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.BatchNorm1d(2)))
    assert m.get_submodule("") is m and m.get_submodule("1.0") is m[1][0]
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.0.running_var") is m[1][0].running_var
    with pytest.raises(AttributeError, match="Linear has no attribute `foo`"):
        m.get_submodule("0.foo")


def test_set_submodule():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    relu = nn.Tanh()
    m.set_submodule("1.0", relu)
    assert m[1][0] is relu
    m.set_submodule("1.extra", nn.ReLU())  # new names are fine unless strict
    assert isinstance(m[1].extra, nn.ReLU)
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        m.set_submodule("9", nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.set_submodule("0.weight", nn.ReLU())
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
        m.set_submodule("", nn.ReLU())
    with pytest.raises(ValueError, match="`module` is not an nn.Module, found <class 'int'>"):
        m.set_submodule("0", 3)
