"""The older hook-based weight_norm and spectral_norm of ember.nn.utils (PyTorch's
deprecated API, kept for old code and checkpoints): values, gradients, state_dict layout,
removal and errors, against NumPy and, where installed, PyTorch."""

import numpy as np
import pytest
from testutils import assert_allclose, copy_state_to_torch, to_numpy

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from ember.nn.utils import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)
from ember.nn.utils.weight_norm import _weight_norm, norm_except_dim


def new_weight_norm(*args, **kwargs):
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        return weight_norm(*args, **kwargs)


# -- weight_norm (hook API) ---------------------------------------------------------------------

def test_norm_except_dim_and_weight_norm_values():
    v = np.random.default_rng(0).standard_normal((3, 4, 2))
    t = ember.tensor(v)
    assert_allclose(norm_except_dim(t, 2, 0), np.sqrt((v ** 2).sum((1, 2), keepdims=True)))
    assert_allclose(norm_except_dim(t, 2, 1), np.sqrt((v ** 2).sum((0, 2), keepdims=True)))
    assert_allclose(norm_except_dim(t, 2, 2), np.sqrt((v ** 2).sum((0, 1), keepdims=True)))
    assert_allclose(norm_except_dim(t, 2, -1), np.linalg.norm(v))  # -1: the whole tensor
    assert norm_except_dim(t, 2, -1).dim() == 0
    g = np.random.default_rng(1).standard_normal((3, 1, 1))
    assert_allclose(_weight_norm(t, ember.tensor(g), 0),
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
    copy_state_to_torch(e, t)
    x = np.random.default_rng(2).standard_normal((5, 4))
    ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
    assert_allclose(ye, yt, rtol=1e-12)
    ye.square().sum().backward()
    yt.square().sum().backward()
    assert_allclose(e.weight_g.grad, t.weight_g.grad, rtol=1e-10)  # g and v both get gradients
    assert_allclose(e.weight_v.grad, t.weight_v.grad, rtol=1e-10, atol=1e-13)


def test_weight_norm_remove_and_errors():
    m = new_weight_norm(nn.Linear(3, 2))
    expected = to_numpy(m.weight).copy()
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same "
                                           "parameter weight"):
        new_weight_norm(m)
    remove_weight_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    assert_allclose(m.weight, expected, rtol=1e-6)
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
    copy_state_to_torch(e, t)
    _same_vectors(e, t)
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 5))
    for _ in range(2):
        ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
        assert_allclose(ye, yt, rtol=1e-10, atol=1e-12)
    assert_allclose(e.weight_u, t.weight_u, rtol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    assert_allclose(e.weight_orig.grad, t.weight_orig.grad, rtol=1e-9, atol=1e-12)
    e.eval()
    u = to_numpy(e.weight_u).copy()
    e(ember.tensor(x))
    assert_allclose(e.weight_u, u)  # eval mode does not iterate


def test_spectral_norm_hook_upgrades_old_state_dicts_like_torch():
    torch = pytest.importorskip("torch")
    e = spectral_norm(nn.Linear(4, 3, dtype=ember.float64))
    t = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3, dtype=torch.float64))
    copy_state_to_torch(e, t)
    t(torch.ones(1, 4, dtype=torch.float64))  # so that u = normalize(W v)
    old = {k: v for k, v in t.state_dict().items() if k != "weight_v"}
    old["weight"] = t.weight.detach()  # version 0 stored the normalized weight, no v
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in old.items()})
    t.load_state_dict(dict(old))
    assert_allclose(e.weight_v, t.weight_v, rtol=1e-8)


def test_spectral_norm_hook_remove_and_errors():
    m = spectral_norm(nn.ConvTranspose1d(3, 5, 2))
    assert m.weight_u.shape == (5,)  # transposed convolutions normalize along dim 1
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(m)
    m.eval()
    expected = to_numpy(m.weight_orig) / float(
        m.weight_u @ (m.weight_orig.permute(1, 0, 2).reshape(5, -1) @ m.weight_v))
    remove_spectral_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    assert not m._state_dict_hooks and not m._load_state_dict_pre_hooks
    assert_allclose(m.weight, expected, rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
