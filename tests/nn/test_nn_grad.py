"""ember.nn.grad (conv{1,2,3}d_input and conv{1,2,3}d_weight) against PyTorch, and their
own gradients (gradcheck)."""

import pytest
from testutils import assert_allclose, to_torch

import ember
import ember.nn as nn
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")


_CONV_CASES = [
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    (1, (1, 3, 7), (2, 3, 2), dict()),
    (2, (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                         groups=2)),
    (2, (1, 2, 5, 5), (3, 2, 3, 3), dict(stride=2)),
    (3, (1, 2, 5, 4, 6), (4, 1, 2, 3, 2), dict(stride=(1, 2, 1), padding=1, dilation=(2, 1, 1),
                                               groups=2)),
]


@pytest.mark.parametrize("nd,xs,ws,kw", _CONV_CASES)
def test_conv_grads_match_torch(nd, xs, ws, kw):
    x = ember.randn(*xs, dtype=ember.float64)
    w = ember.randn(*ws, dtype=ember.float64)
    tconv = getattr(torch.nn.functional, f"conv{nd}d")
    go_shape = tconv(to_torch(x), to_torch(w), **kw).shape
    go = ember.randn(tuple(go_shape), dtype=ember.float64)
    gi = getattr(nn.grad, f"conv{nd}d_input")(x.shape, w, go, **kw)
    gw = getattr(nn.grad, f"conv{nd}d_weight")(x, w.shape, go, **kw)
    ref_gi = getattr(torch.nn.grad, f"conv{nd}d_input")(torch.Size(xs), to_torch(w), to_torch(go),
                                                        **kw)
    ref_gw = getattr(torch.nn.grad, f"conv{nd}d_weight")(to_torch(x), torch.Size(ws), to_torch(go),
                                                         **kw)
    assert_allclose(gi, ref_gi, atol=1e-10)
    assert_allclose(gw, ref_gw, atol=1e-10)
    assert not gi.requires_grad and not gw.requires_grad


def test_conv_grads_are_differentiable():
    x = ember.randn(1, 2, 5, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 2, 3, 3, dtype=ember.float64, requires_grad=True)
    go = ember.randn(1, 3, 3, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda w_, g: nn.grad.conv2d_input(x.shape, w_, g), (w, go))
    assert gradcheck(lambda x_, g: nn.grad.conv2d_weight(x_, w.shape, g), (x, go))
