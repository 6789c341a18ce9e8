"""Modules call ``torch.nn.functional`` at each call, as PyTorch's do: a Tensor subclass's
``__torch_function__`` sees the functional op, and a patched ``F.<name>`` is what runs."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

CASES = [
    (lambda: nn.ReLU(), (2, 3), "relu"),
    (lambda: nn.SiLU(), (2, 3), "silu"),
    (lambda: nn.Sigmoid(), (2, 3), "sigmoid"),
    (lambda: nn.Tanh(), (2, 3), "tanh"),
    (lambda: nn.ELU(), (2, 3), "elu"),
    (lambda: nn.Hardshrink(), (2, 3), "hardshrink"),
    (lambda: nn.Softmax(dim=1), (2, 3), "softmax"),
    (lambda: nn.LogSoftmax(dim=1), (2, 3), "log_softmax"),
    (lambda: nn.MaxPool1d(2), (1, 2, 4), "max_pool1d"),
    (lambda: nn.AvgPool2d(2), (1, 2, 4, 4), "avg_pool2d"),
    (lambda: nn.AdaptiveAvgPool1d(2), (1, 2, 4), "adaptive_avg_pool1d"),
    (lambda: nn.LPPool1d(2, 2), (1, 2, 4), "lp_pool1d"),
    (lambda: nn.Conv1d(2, 2, 1), (1, 2, 4), "conv1d"),
    (lambda: nn.Conv2d(2, 2, 1, padding_mode="reflect"), (1, 2, 4, 4), "conv2d"),
    (lambda: nn.ConvTranspose1d(2, 2, 1), (1, 2, 4), "conv_transpose1d"),
]


class Logged(ember.Tensor):
    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.fixture(autouse=True)
def _dispatch_on():
    ember.overrides.activate()  # the suite's conftest turns it off after each test


@pytest.mark.parametrize("make, shape, name", CASES, ids=[c[2] for c in CASES])
def test_torch_function_sees_the_functional_op(make, shape, name):
    module = make()
    x = ember.randn(*shape).as_subclass(Logged)
    Logged.seen = []
    out = module(x)
    assert name in Logged.seen
    assert isinstance(out, Logged)


@pytest.mark.parametrize("make, shape, name", CASES, ids=[c[2] for c in CASES])
def test_a_patched_functional_is_what_runs(make, shape, name, monkeypatch):
    module = make()
    calls = []
    original = getattr(F, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(F, name, spy)
    module(ember.randn(*shape))
    assert calls == [name]


@pytest.mark.parametrize("loss, name", [(nn.MSELoss, "mse_loss"), (nn.L1Loss, "l1_loss"),
                                        (nn.SoftMarginLoss, "soft_margin_loss")])
def test_losses_dispatch_through_the_functional(loss, name):
    x = ember.randn(2, 3).as_subclass(Logged)
    Logged.seen = []
    loss()(x, ember.ones(2, 3))
    assert name in Logged.seen
