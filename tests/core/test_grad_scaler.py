"""ember.amp.GradScaler: scale, unscale_, skipped steps and the scale sequence, against
PyTorch's where it is installed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
from ember.amp import GradScaler


class _SGD:
    """The smallest optimizer: what GradScaler needs (param_groups, step)."""

    def __init__(self, params, lr=0.1):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.steps = 0

    def step(self):
        self.steps += 1
        for p in self.param_groups[0]["params"]:
            with ember.no_grad():
                p -= self.param_groups[0]["lr"] * p.grad
        return "stepped"


def _grad_plan(n):
    """Per iteration, a gradient multiplier: clean, or an inf/NaN on some iterations."""
    plan = [1.0] * n
    for i in (2, 3, 9):
        if i < n:
            plan[i] = float("inf")
    if n > 6:
        plan[6] = float("nan")
    return plan


def _run_ember(plan, **kw):
    w = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = _SGD([w])
    scaler = GradScaler("cpu", **kw)
    scales, returns = [], []
    for m in plan:
        loss = (w * w).sum() * m
        scaler.scale(loss).backward()
        returns.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
        w.grad = None
    return scales, returns, w.detach().numpy(), scaler


def test_scale_sequence_and_skipped_steps():
    plan = _grad_plan(12)
    scales, returns, _, scaler = _run_ember(plan, init_scale=1024.0, growth_interval=2)
    skipped = [i for i, r in enumerate(returns) if r is None]
    assert skipped == [2, 3, 6, 9]
    # halved after each bad step, doubled after two clean ones in a row
    assert scales == [1024.0, 2048.0, 1024.0, 512.0, 512.0, 1024.0, 512.0, 512.0, 1024.0,
                      512.0, 512.0, 1024.0]
    assert scaler.state_dict()["scale"] == scales[-1]


def test_scale_sequence_matches_pytorch():
    torch = pytest.importorskip("torch")
    plan = _grad_plan(12)
    scales, returns, w_final, _ = _run_ember(plan, init_scale=1024.0, growth_interval=2)
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    t_scales = []
    for m in plan:
        loss = (w * w).sum() * m
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        t_scales.append(scaler.get_scale())
        w.grad = None
    assert scales == t_scales
    np.testing.assert_allclose(w_final, w.detach().numpy(), rtol=1e-6)


def test_unscale_then_clip_sees_true_gradients():
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    opt = _SGD([w])
    scaler = GradScaler("cpu", init_scale=256.0)
    scaler.scale((w * w).sum()).backward()
    assert w.grad.tolist() == [6.0 * 256, 8.0 * 256]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [6.0, 8.0]
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    assert scaler.step(opt) == "stepped"  # no second unscale
    np.testing.assert_allclose(w.detach().numpy(), [3.0 - 0.6, 4.0 - 0.8], rtol=1e-6)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update()


def test_errors_and_disabled_scaler():
    scaler = GradScaler("cpu")
    opt = _SGD([ember.ones(1, requires_grad=True)])
    with pytest.raises(AssertionError, match="_scale is None"):  # PyTorch's assert
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.scale(ember.ones(1))
        scaler.step(opt, closure=lambda: 0)
    with pytest.raises(AssertionError, match="growth factor"):
        GradScaler("cpu", growth_factor=1.0)
    off = GradScaler("cpu", enabled=False)
    x = ember.ones(2)
    assert off.scale(x) is x and off.get_scale() == 1.0 and off.state_dict() == {}
    if ember.cuda.is_available():  # PyTorch's default device is cuda
        assert GradScaler().is_enabled()
    else:
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not GradScaler().is_enabled()
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        GradScaler("cpu").load_state_dict({})
    w = ember.ones(1, dtype=ember.float16, requires_grad=True)
    s = GradScaler("cpu")
    s.scale((w * 2).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        s.unscale_(_SGD([w]))


def test_state_dict_round_trip_and_pickle():
    _, _, _, scaler = _run_ember(_grad_plan(5), init_scale=64.0, growth_interval=2)
    state = scaler.state_dict()
    other = GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.state_dict() == state
    assert set(state) == {"scale", "growth_factor", "backoff_factor", "growth_interval",
                          "_growth_tracker"}


def test_scale_lists_and_update_with_new_scale():
    scaler = GradScaler("cpu", init_scale=8.0)
    a, b = scaler.scale([ember.ones(1), (ember.full((1,), 2.0),)])
    assert a.tolist() == [8.0] and b[0].tolist() == [16.0]
    scaler.update(new_scale=4.0)
    assert scaler.get_scale() == 4.0
    scaler.update(new_scale=ember.tensor([2.0], device="cpu"))  # the scaler's device
    assert scaler.get_scale() == 2.0
