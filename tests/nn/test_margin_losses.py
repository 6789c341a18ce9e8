"""multilabel_margin_loss and triplet_margin_with_distance_loss (functions and modules)
against PyTorch: values, reductions, gradients, empty batches and errors."""

import re

import numpy as np
import pytest
from testutils import assert_allclose, assert_same_error, to_torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


# -- multilabel_margin_loss ---------------------------------------------------------------------

_ML_TARGETS = [
    [[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 1, 2]],
    [[0, 0, 2, -1], [3, 2, 1, 0], [1, -1, -1, -1]],  # duplicates, all classes, one label
]


@pytest.mark.parametrize("target", _ML_TARGETS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch_2d(target, reduction):
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor(target)
    out = F.multilabel_margin_loss(x, t, reduction=reduction)
    xt = to_torch(x).requires_grad_()
    ref = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(target),
                                                     reduction=reduction)
    assert_allclose(out, ref, atol=1e-10)
    assert out.shape == tuple(ref.shape)
    g = ember.randn(tuple(out.shape), dtype=ember.float64)
    out.backward(g)
    ref.backward(to_torch(g))
    assert_allclose(x.grad, xt.grad, atol=1e-10)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch_1d_and_0d(reduction):
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    t = [1, 1, -1, 0]
    out = F.multilabel_margin_loss(x, ember.tensor(t), reduction=reduction)
    ref = torch.nn.functional.multilabel_margin_loss(to_torch(x), torch.tensor(t),
                                                     reduction=reduction)
    assert_allclose(out, ref, atol=1e-10)
    assert out.shape == tuple(ref.shape) == ()
    s = ember.tensor(1.5, dtype=ember.float64)
    out0 = F.multilabel_margin_loss(s, ember.tensor(0), reduction=reduction)
    assert out0.shape == () and out0.item() == 0.0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_gradcheck(reduction):
    x = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([[4, 0, -1, 1, 2], [1, 2, 3, 0, 4], [2, -1, 0, 0, 0]])
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, t, reduction=reduction), (x,))
    assert gradgradcheck(lambda a: F.multilabel_margin_loss(a, t, reduction=reduction), (x,))
    v = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, t[0], reduction=reduction), (v,))


def test_multilabel_margin_loss_empty_batch():
    out = F.multilabel_margin_loss(ember.randn(0, 4), ember.zeros(0, 4, dtype=ember.int64),
                                   reduction="none")
    assert out.shape == (0,)


@pytest.mark.parametrize("xshape,target,dtype", [
    ((2, 4), [3, 0, -1, 1], "int64"),                                 # inconsistent size
    ((3,), [1, 1, -1, 0], "int64"),
    ((2, 4), [[3, 0, -1, 1], [1, 2, 3, -1]], "float32"),              # not Long
    ((2, 4), [[3, 0, -1, 5], [1, 2, 3, -1]], "int64"),                # out of range
    ((2, 4), [[3, 0, -2, 1], [1, 2, 3, -1]], "int64"),
    ((2, 3, 4), np.zeros((2, 3, 4), dtype=np.int64).tolist(), "int64"),  # 3-D input
])
def test_multilabel_margin_loss_errors(xshape, target, dtype):
    x = np.random.randn(*xshape).astype(np.float32)
    assert_same_error(
        lambda: F.multilabel_margin_loss(ember.tensor(x),
                                         ember.tensor(target, dtype=getattr(ember, dtype))),
        lambda: torch.nn.functional.multilabel_margin_loss(
            torch.tensor(x), torch.tensor(target, dtype=getattr(torch, dtype))))
    assert_same_error(
        lambda: F.multilabel_margin_loss(ember.tensor(x).int(), ember.tensor([[0]])),
        lambda: torch.nn.functional.multilabel_margin_loss(torch.tensor(x).int(),
                                                           torch.tensor([[0]])))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.multilabel_margin_loss(ember.randn(2, 4), ember.zeros(2, 4, dtype=ember.int64),
                                 reduction="bad")


def test_multilabel_margin_loss_module():
    m = nn.MultiLabelMarginLoss(reduction="sum")
    assert repr(m) == repr(torch.nn.MultiLabelMarginLoss(reduction="sum"))
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor(_ML_TARGETS[0])
    ref = torch.nn.MultiLabelMarginLoss(reduction="sum")(to_torch(x), to_torch(t))
    assert_allclose(m(x, t), ref, atol=1e-10)
    assert gradcheck(lambda a: m(a, t), (x,))
    with pytest.warns(UserWarning, match="size_average and reduce args"):
        assert nn.MultiLabelMarginLoss(size_average=False).reduction == "sum"


# -- triplet_margin_with_distance_loss ----------------------------------------------------------

def _cos_distance(lib):
    return lambda a, b: 1 - lib.nn.functional.cosine_similarity(a, b)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dist", [None, "cos"])
def test_triplet_margin_with_distance_loss_matches_torch(swap, reduction, dist):
    a, p, n = (ember.randn(5, 3, dtype=ember.float64, requires_grad=True) for _ in range(3))
    ta, tp, tn = (to_torch(v).requires_grad_() for v in (a, p, n))
    kw = dict(swap=swap, reduction=reduction, margin=0.7)
    out = F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=_cos_distance(ember) if dist else None, **kw)
    ref = torch.nn.functional.triplet_margin_with_distance_loss(
        ta, tp, tn, distance_function=_cos_distance(torch) if dist else None, **kw)
    assert_allclose(out, ref, atol=1e-10)
    out.sum().backward()
    ref.sum().backward()
    for e, t in ((a, ta), (p, tp), (n, tn)):
        assert_allclose(e.grad, t.grad, atol=1e-10)
    fn = (lambda x, y, z: F.triplet_margin_with_distance_loss(
        x, y, z, distance_function=_cos_distance(ember) if dist else None, **kw))
    assert gradcheck(fn, (a.detach().requires_grad_(), p.detach().requires_grad_(),
                          n.detach().requires_grad_()))


def test_triplet_margin_with_distance_loss_errors_and_module():
    a = ember.randn(2, 3)
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        F.triplet_margin_with_distance_loss(a, a, a, reduction="x")
    with pytest.raises(RuntimeError, match=re.escape("anchor 2D, positive 1D, and negative 2D")):
        F.triplet_margin_with_distance_loss(a, a[0], a)
    with pytest.raises(TypeError):
        F.triplet_margin_with_distance_loss(a, a, a, None)  # keyword-only, as in PyTorch
    with pytest.raises(ValueError, match="TripletMarginWithDistanceLoss: expected margin to be "
                                         "greater than 0, got -1 instead"):
        nn.TripletMarginWithDistanceLoss(margin=-1)
    m = nn.TripletMarginWithDistanceLoss(swap=True)
    tm = torch.nn.TripletMarginWithDistanceLoss(swap=True)
    assert repr(m) == repr(tm) and isinstance(m.distance_function, nn.PairwiseDistance)
    x, y, z = (ember.randn(4, 3, dtype=ember.float64) for _ in range(3))
    assert_allclose(m(x, y, z), tm(to_torch(x), to_torch(y), to_torch(z)), atol=1e-10)
