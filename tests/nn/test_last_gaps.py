"""multilabel_margin_loss, triplet_margin_with_distance_loss (and their modules),
ember.nn.factory_kwargs, ember.nn.grad and ember.nn.attention against PyTorch."""

import re

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def _t(x):
    return torch.from_numpy(np.asarray(x.detach().numpy()).copy())


def _close(a, b, atol=1e-10):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7, atol=atol)


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
    xt = _t(x).requires_grad_()
    ref = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(target),
                                                     reduction=reduction)
    _close(out, ref)
    assert out.shape == tuple(ref.shape)
    g = ember.randn(tuple(out.shape), dtype=ember.float64)
    out.backward(g)
    ref.backward(_t(g))
    _close(x.grad, xt.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch_1d_and_0d(reduction):
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    t = [1, 1, -1, 0]
    out = F.multilabel_margin_loss(x, ember.tensor(t), reduction=reduction)
    ref = torch.nn.functional.multilabel_margin_loss(_t(x), torch.tensor(t),
                                                     reduction=reduction)
    _close(out, ref)
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


def _errors(fn_e, fn_t):
    with pytest.raises(Exception) as ref:
        fn_t()
    with pytest.raises(type(ref.value), match=re.escape(str(ref.value))):
        fn_e()


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
    _errors(lambda: F.multilabel_margin_loss(ember.tensor(x),
                                             ember.tensor(target, dtype=getattr(ember, dtype))),
            lambda: torch.nn.functional.multilabel_margin_loss(
                torch.tensor(x), torch.tensor(target, dtype=getattr(torch, dtype))))
    _errors(lambda: F.multilabel_margin_loss(ember.tensor(x).int(), ember.tensor([[0]])),
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
    _close(m(x, t), torch.nn.MultiLabelMarginLoss(reduction="sum")(_t(x), _t(t)))
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
    ta, tp, tn = (_t(v).requires_grad_() for v in (a, p, n))
    kw = dict(swap=swap, reduction=reduction, margin=0.7)
    out = F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=_cos_distance(ember) if dist else None, **kw)
    ref = torch.nn.functional.triplet_margin_with_distance_loss(
        ta, tp, tn, distance_function=_cos_distance(torch) if dist else None, **kw)
    _close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    for e, t in ((a, ta), (p, tp), (n, tn)):
        _close(e.grad, t.grad)
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
    _close(m(x, y, z), tm(_t(x), _t(y), _t(z)))


# -- factory_kwargs -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    None, {}, {"device": "cpu"}, {"dtype": 1, "memory_format": 2},
    {"factory_kwargs": {"dtype": 3}, "device": "cpu"}, {"factory_kwargs": {"other": 1}},
])
def test_factory_kwargs_matches_torch(kwargs):
    assert nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)


@pytest.mark.parametrize("kwargs", [
    {"bad": 1}, {"dtype": 1, "factory_kwargs": {"dtype": 2}},
])
def test_factory_kwargs_errors(kwargs):
    _errors(lambda: nn.factory_kwargs(kwargs), lambda: torch.nn.factory_kwargs(kwargs))


# -- ember.nn.grad ------------------------------------------------------------------------------

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
    go_shape = tconv(_t(x), _t(w), **kw).shape
    go = ember.randn(tuple(go_shape), dtype=ember.float64)
    gi = getattr(nn.grad, f"conv{nd}d_input")(x.shape, w, go, **kw)
    gw = getattr(nn.grad, f"conv{nd}d_weight")(x, w.shape, go, **kw)
    _close(gi, getattr(torch.nn.grad, f"conv{nd}d_input")(torch.Size(xs), _t(w), _t(go), **kw))
    _close(gw, getattr(torch.nn.grad, f"conv{nd}d_weight")(_t(x), torch.Size(ws), _t(go), **kw))
    assert not gi.requires_grad and not gw.requires_grad


def test_conv_grads_are_differentiable():
    x = ember.randn(1, 2, 5, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 2, 3, 3, dtype=ember.float64, requires_grad=True)
    go = ember.randn(1, 3, 3, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda w_, g: nn.grad.conv2d_input(x.shape, w_, g), (w, go))
    assert gradcheck(lambda x_, g: nn.grad.conv2d_weight(x_, w.shape, g), (x, go))


# -- ember.nn.attention -------------------------------------------------------------------------

def test_sdp_backend_values_match_torch():
    from torch.nn.attention import SDPBackend as TB

    from ember.nn.attention import SDPBackend
    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == \
        {k: int(v) for k, v in TB.__members__.items()}
    for b in SDPBackend:
        assert repr(b) == repr(getattr(TB, b.name)) and str(b) == str(getattr(TB, b.name))


def _names(backends):
    return [b.name for b in backends]


@pytest.mark.parametrize("backends,prio", [
    ([("FLASH_ATTENTION"), ("MATH")], True), (["MATH", "EFFICIENT_ATTENTION"], False),
    ("CUDNN_ATTENTION", False), ([], False), (["ERROR"], False),
    (["OVERRIDEABLE", "MATH", "OVERRIDEABLE"], True),
])
def test_sdpa_kernel_sets_and_restores_like_torch(backends, prio):
    import torch.nn.attention as TA

    import ember.nn.attention as EA
    conv = (lambda mod: [getattr(mod.SDPBackend, b) for b in backends]
            if isinstance(backends, list) else getattr(mod.SDPBackend, backends))
    before = _names(EA._cur_sdpa_kernel_backends(True))
    assert before == _names(TA._cur_sdpa_kernel_backends(True))
    with EA.sdpa_kernel(conv(EA), set_priority=prio) as e, \
            TA.sdpa_kernel(conv(TA), set_priority=prio) as t:
        assert e == t == {}
        for wp in (False, True):
            assert _names(EA._cur_sdpa_kernel_backends(wp)) == \
                _names(TA._cur_sdpa_kernel_backends(wp))
        q = ember.randn(1, 2, 3, 4)
        assert F.scaled_dot_product_attention(q, q, q).shape == (1, 2, 3, 4)  # always math
    assert _names(EA._cur_sdpa_kernel_backends(True)) == before


def test_sdpa_kernel_rejects_other_types():
    from ember.nn.attention import sdpa_kernel
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                                             "list of SDPBackend instances, got str"):
        with sdpa_kernel("MATH"):
            pass
