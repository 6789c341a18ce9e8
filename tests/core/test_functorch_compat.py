"""functorch's deprecated make_functional family (``ember.functorch``, what ``import functorch``
gives under ``ember.as_torch``), against PyTorch's where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.functorch as ft
import ember.nn as nn


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def test_make_functional_with_buffers_runs_the_model():
    model, x = _model(), ember.randn(5, 3)
    with pytest.warns(FutureWarning, match="functorch.make_functional_with_buffers` is "
                      "deprecated"):
        func, params, buffers = ft.make_functional_with_buffers(model)
    assert len(params) == 6 and len(buffers) == 3  # running mean/var, batches tracked
    np.testing.assert_allclose(func(params, buffers, x).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6)
    # the parameters are the copy's: changing the model later does not change func
    with ember.no_grad():
        model[0].weight.zero_()
    assert not np.allclose(func(params, buffers, x).detach().numpy(),
                           model(x).detach().numpy())
    new = tuple(p * 0 for p in params)
    out = func(new, buffers, x)
    assert out.shape == (5, 2)


def test_make_functional_gradients_and_errors():
    lin, x = nn.Linear(3, 2), ember.randn(5, 3)
    with pytest.warns(FutureWarning):
        f, params = ft.make_functional(lin)
    g = ft.grad(lambda p: f(p, x).sum())(params)
    np.testing.assert_allclose(g[0].numpy(), np.tile(x.sum(0).numpy(), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(g[1].numpy(), [5.0, 5.0])
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="has buffers"):
        ft.make_functional(_model())
    with pytest.warns(FutureWarning):
        f, params = ft.make_functional(lin, disable_autograd_tracking=True)
    assert not any(p.requires_grad for p in params)
    with pytest.raises(RuntimeError, match="Expected 2 parameters, got 1"):
        f(params[:1], x)


def test_combine_state_for_ensemble_with_vmap():
    models = [nn.Linear(3, 2) for _ in range(4)]
    x = ember.randn(5, 3)
    with pytest.warns(FutureWarning):
        fm, params, buffers = ft.combine_state_for_ensemble(models)
    assert params[0].shape == (4, 2, 3) and not params[0].requires_grad and buffers == ()
    out = ft.vmap(fm, (0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="at least one model"):
        ft.combine_state_for_ensemble([])
    models[1].eval()
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="same training/eval"):
        ft.combine_state_for_ensemble(models)


def test_parity_with_functorch():
    torch = pytest.importorskip("torch")
    functorch = pytest.importorskip("functorch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    em = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    xn = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    with pytest.warns(FutureWarning):
        tf, tp, tb = functorch.make_functional_with_buffers(tm)
    with pytest.warns(FutureWarning):
        ef, ep, eb = ft.make_functional_with_buffers(em)
    np.testing.assert_allclose(ef(ep, eb, ember.tensor(xn)).detach().numpy(),
                               tf(tp, tb, torch.tensor(xn)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert [tuple(p.shape) for p in ep] == [tuple(p.shape) for p in tp]
    assert [tuple(b.shape) for b in eb] == [tuple(b.shape) for b in tb]


@pytest.mark.parametrize("name, replacement", [
    ("vmap", "torch.vmap"), ("grad", "torch.func.grad"), ("jacrev", "torch.func.jacrev"),
    ("jvp", "torch.func.jvp"), ("hessian", "torch.func.hessian")])
def test_functorch_transforms_warn_as_pytorch_does(name, replacement):
    """PyTorch's functorch transforms are deprecated: each call warns (the forward-AD
    tutorial's ``ft.jvp``), then works as ``ember.func``'s."""
    x = ember.ones(3)
    with pytest.warns(FutureWarning, match=f"`functorch.{name}` is deprecated as of PyTorch "
                                           f"2.0 .* Please use `{replacement}` instead"):
        if name == "jvp":
            out = ft.jvp(ember.sin, (x,), (x,))[1]
        else:
            out = getattr(ft, name)(lambda t: t.sin().sum() if name != "vmap" else t.sin())(x)
    assert out.shape[-1] == 3
