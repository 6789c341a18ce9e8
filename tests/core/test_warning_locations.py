"""Ember's warnings name the user's line (``ember._warn.user_stacklevel``), whether the
kernel that warns is reached through a generated op front (``ember._front``), an ``out=``
write, an ``nn`` module or ``F``: pytorch/tutorials' ``torch.cross`` warning pointed at
``<ember front 3>`` before."""

from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn.functional as F


def _where(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "no warning"
    return [(w.filename, w.lineno) for w in caught]


def _fresh():
    """Forget the deprecation warnings given (PyTorch's ``torch.cross`` warns once a process)."""
    ember.ops.linalg._WARNED_ONCE.clear()


@pytest.mark.parametrize("call", [
    lambda: _fresh() or ember.cross(ember.tensor([0.0, 1.0, 0]), ember.tensor([1.0, 0, 0])),
    lambda: ember.add(ember.ones(2), ember.ones(2), out=ember.zeros(3)),
    lambda: F.mse_loss(ember.ones(3), ember.ones(3, 1)),
    lambda: ember.nn.MSELoss()(ember.ones(3), ember.ones(3, 1)),
    lambda: ember.view_copy(ember.ones(4), (2, 2), out=ember.zeros(3)),
], ids=["front", "out-resize", "functional", "module", "view-copy-out"])
def test_warnings_point_at_the_callers_line(call):
    for filename, lineno in _where(call):
        assert filename == __file__
        assert "lambda" in open(__file__).read().splitlines()[lineno - 1]
