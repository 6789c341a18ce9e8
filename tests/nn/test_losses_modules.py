"""The loss modules of ember.nn: legacy ``size_average``/``reduce`` handling, weight buffers,
float64 gradchecks through the modules, NumPy reference values and constructor errors."""

import re

import numpy as np
import pytest
from testutils import randn64

import ember
import ember.nn as nn
from ember.autograd import gradcheck


@pytest.mark.parametrize("size_average,reduce,expected", [
    (None, None, "mean"), (None, False, "none"), (False, None, "sum"), (True, True, "mean"),
    (False, True, "sum"), (True, False, "none"), (False, False, "none"),
])
def test_legacy_flags_map_to_reduction_with_warning(size_average, reduce, expected):
    if size_average is None and reduce is None:
        assert nn.L1Loss(size_average, reduce).reduction == expected
        return
    msg = (f"size_average and reduce args will be deprecated, please use "
           f"reduction='{expected}' instead.")
    for cls in (nn.L1Loss, nn.MSELoss, nn.BCELoss, nn.NLLLoss, nn.KLDivLoss, nn.SoftMarginLoss):
        with pytest.warns(UserWarning, match=re.escape(msg)):
            m = cls(size_average=size_average, reduce=reduce)
        assert m.reduction == expected
    with pytest.warns(UserWarning):
        m = nn.CrossEntropyLoss(size_average=size_average, reduce=reduce, reduction="sum")
    assert m.reduction == expected   # the legacy flags win over ``reduction``


def test_legacy_reduction_changes_the_value():
    x, y = ember.tensor([1.0, 2.0, 4.0]), ember.zeros(3)
    with pytest.warns(UserWarning):
        s = nn.L1Loss(size_average=False)(x, y)
    with pytest.warns(UserWarning):
        n = nn.L1Loss(reduce=False)(x, y)
    assert float(s) == 7.0
    np.testing.assert_array_equal(n.numpy(), [1.0, 2.0, 4.0])


def test_weights_are_buffers_in_state_dict():
    w = ember.tensor([1.0, 2.0, 3.0])
    m = nn.CrossEntropyLoss(weight=w)
    assert list(m.state_dict()) == ["weight"]
    assert m.weight is w and list(m.parameters()) == []
    b = nn.BCEWithLogitsLoss(weight=w, pos_weight=w * 2)
    assert list(b.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.NLLLoss().state_dict()) == []
    assert repr(m) == "CrossEntropyLoss()"


def log_softmax_np(a):
    a = a - a.max(-1, keepdims=True)
    return a - np.log(np.exp(a).sum(-1, keepdims=True))


def test_cross_entropy_and_nll_reference_values():
    logits = np.random.default_rng(0).standard_normal((4, 5))
    target = np.array([0, 3, 1, 4])
    w = np.array([1.0, 0.5, 2.0, 1.0, 0.3])
    lp = log_softmax_np(logits)
    picked = -lp[np.arange(4), target] * w[target]
    ce = nn.CrossEntropyLoss(weight=ember.tensor(w))(ember.tensor(logits), ember.tensor(target))
    np.testing.assert_allclose(float(ce), picked.sum() / w[target].sum(), rtol=1e-10)
    nll = nn.NLLLoss(reduction="none", ignore_index=3)(ember.tensor(lp), ember.tensor(target))
    ref = -lp[np.arange(4), target]
    ref[1] = 0
    np.testing.assert_allclose(nll.numpy(), ref, rtol=1e-10)
    smooth = nn.CrossEntropyLoss(label_smoothing=0.2)(ember.tensor(logits), ember.tensor(target))
    ref = (0.8 * -lp[np.arange(4), target] - 0.2 * lp.mean(-1)).mean()
    np.testing.assert_allclose(float(smooth), ref, rtol=1e-10)


def test_simple_losses_reference_values():
    a = np.array([0.5, -1.0, 2.0])
    b = np.array([0.0, 1.0, 0.5])
    ta, tb = ember.tensor(a), ember.tensor(b)
    np.testing.assert_allclose(float(nn.MSELoss()(ta, tb)), ((a - b) ** 2).mean())
    d = np.abs(a - b)
    np.testing.assert_allclose(float(nn.SmoothL1Loss(beta=1.0)(ta, tb)),
                               np.where(d < 1, 0.5 * d ** 2, d - 0.5).mean())
    np.testing.assert_allclose(float(nn.HuberLoss(delta=0.5)(ta, tb)),
                               np.where(d < 0.5, 0.5 * d ** 2, 0.5 * (d - 0.25)).mean())
    y = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(float(nn.SoftMarginLoss()(ta, ember.tensor(y))),
                               np.log1p(np.exp(-y * a)).mean())
    np.testing.assert_allclose(float(nn.MarginRankingLoss(0.3)(ta, tb, ember.tensor(y))),
                               np.maximum(0, -y * (a - b) + 0.3).mean())
    np.testing.assert_allclose(float(nn.HingeEmbeddingLoss(1.0)(ta, ember.tensor(y))),
                               np.where(y == 1, a, np.maximum(0, 1 - a)).mean())


LOSS_GRAD_CASES = [
    (lambda: nn.L1Loss(), 1, lambda s: randn64(*s, requires_grad=False)),
    (lambda: nn.MSELoss(reduction="sum"), 1, lambda s: randn64(*s, requires_grad=False)),
    (lambda: nn.SmoothL1Loss(beta=0.5), 1, lambda s: randn64(*s, requires_grad=False)),
    (lambda: nn.HuberLoss(delta=0.5), 1, lambda s: randn64(*s, requires_grad=False)),
    (lambda: nn.BCEWithLogitsLoss(pos_weight=ember.tensor([1.0, 2.0, 0.5, 1.0],
                                                          dtype=ember.float64)), 1,
     lambda s: ember.rand(*s, dtype=ember.float64)),
    (lambda: nn.SoftMarginLoss(), 1, lambda s: ember.sign(ember.randn(*s, dtype=ember.float64))),
    (lambda: nn.KLDivLoss(reduction="batchmean"), 1,
     lambda s: ember.rand(*s, dtype=ember.float64)),
    (lambda: nn.PoissonNLLLoss(), 1, lambda s: ember.rand(*s, dtype=ember.float64) * 3),
    (lambda: nn.MultiLabelSoftMarginLoss(), 1,
     lambda s: (ember.rand(*s) > 0.5).to(ember.float64)),
]


@pytest.mark.parametrize("make,n_in,target", LOSS_GRAD_CASES)
def test_loss_module_gradcheck_float64(make, n_in, target):
    ember.manual_seed(0)
    m = make()
    x = randn64(3, 4)
    t = target((3, 4))
    assert gradcheck(lambda x: m(x, t), (x,))


def test_class_losses_gradcheck_float64():
    ember.manual_seed(0)
    x = randn64(4, 5)
    t = ember.tensor([0, 4, 2, 2])
    w = ember.rand(5, dtype=ember.float64) + 0.5
    for m in (nn.CrossEntropyLoss(weight=w, label_smoothing=0.1), nn.NLLLoss(weight=w),
              nn.MultiMarginLoss(p=2, margin=0.5, weight=w)):
        assert gradcheck(lambda x, m=m: m(x, t), (x,))


def test_pair_losses_gradcheck_float64():
    ember.manual_seed(0)
    a, b, c = randn64(3, 4), randn64(3, 4), randn64(3, 4)
    y = ember.tensor([1.0, -1.0, 1.0], dtype=ember.float64)
    assert gradcheck(lambda a, b: nn.CosineEmbeddingLoss(0.1)(a, b, y), (a, b))
    assert gradcheck(lambda a, b, c: nn.TripletMarginLoss(margin=0.5, swap=True)(a, b, c),
                     (a, b, c))
    var = (ember.rand(3, 4, dtype=ember.float64) + 0.5).requires_grad_()
    assert gradcheck(lambda a, v: nn.GaussianNLLLoss(full=True)(a, b.detach(), v), (a, var))
    p = ember.rand(3, 4, dtype=ember.float64) * 0.8 + 0.1
    q = ember.rand(3, 4, dtype=ember.float64)
    bce = nn.BCELoss(weight=ember.rand(4, dtype=ember.float64))
    assert gradcheck(lambda p: bce(p, q), (p.requires_grad_(),))


def test_ctc_loss_module_runs_and_backpropagates():
    ember.manual_seed(0)
    lp = ember.randn(6, 2, 4, dtype=ember.float64).log_softmax(-1).detach().requires_grad_()
    targets = ember.tensor([[1, 2], [3, 3]])
    loss = nn.CTCLoss(blank=0)(lp, targets, ember.tensor([6, 5]), ember.tensor([2, 2]))
    assert loss.dim() == 0 and np.isfinite(float(loss))
    loss.backward()
    assert lp.grad.shape == lp.shape


@pytest.mark.parametrize("make,msg", [
    (lambda: nn.MultiMarginLoss(p=3), "only p == 1 and p == 2 supported"),
    (lambda: nn.MultiMarginLoss(weight=ember.ones(2, 2)),
     "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"),
    (lambda: nn.TripletMarginLoss(margin=-1.0),
     "TripletMarginLoss: expected margin to be greater than 0, got -1.0 instead"),
])
def test_loss_constructor_errors(make, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        make()
