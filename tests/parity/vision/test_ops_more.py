"""torchvision 0.29's ops against ember.vision.ops: deform_conv2d, the box IoUs and losses,
masks_to_boxes, misc layers, stochastic depth, drop block, FPN and MultiScaleRoIAlign. Same
outputs and gradients for the same inputs and weights, same state_dict keys and reprs."""

import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.vision import ops as eops

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from torchvision import ops as tops  # noqa: E402


def E(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def T(a, grad=False):
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def close(e, t, tol):
    np.testing.assert_allclose(
        e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol, equal_nan=True
    )


def copy_weights(tmod, emod):
    """The torch module's state into the ember one (keys must match one to one)."""
    tsd = tmod.state_dict()
    assert list(emod.state_dict()) == list(tsd)
    emod.load_state_dict({k: E(v.detach().numpy().copy()) for k, v in tsd.items()})


def test_ops_all_matches_torchvision():
    assert sorted(eops.__all__) == sorted(tops.__all__)


# -- deform_conv2d ---------------------------------------------------------------------------

DEFORM = [
    dict(n=2, c=4, hw=(6, 7), o=6, k=(3, 3), g=2, wg=2, stride=1, pad=1, dil=1, mask=True),
    dict(n=2, c=4, hw=(6, 7), o=6, k=(3, 3), g=2, wg=2, stride=1, pad=1, dil=1, mask=False),
    dict(n=1, c=3, hw=(9, 8), o=5, k=(3, 2), g=1, wg=1, stride=(2, 1), pad=(2, 0), dil=2,
         mask=True),
    dict(n=2, c=6, hw=(5, 5), o=3, k=(1, 1), g=3, wg=3, stride=1, pad=0, dil=1, mask=True),
    dict(n=1, c=8, hw=(7, 6), o=4, k=(2, 3), g=4, wg=2, stride=2, pad=1, dil=(2, 1),
         mask=False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(DEFORM)))
def test_deform_conv2d_values_and_grads(dtype, case):
    p = DEFORM[case]
    rng = np.random.default_rng(case)
    stride, pad, dil = (np.broadcast_to(v, 2) for v in (p["stride"], p["pad"], p["dil"]))
    (h, w), (kh, kw) = p["hw"], p["k"]
    oh = (h + 2 * pad[0] - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
    ow = (w + 2 * pad[1] - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
    arrays = [
        rng.standard_normal((p["n"], p["c"], h, w)),
        rng.standard_normal((p["n"], 2 * p["g"] * kh * kw, oh, ow)) * 3,  # reaches outside
        rng.standard_normal((p["o"], p["c"] // p["wg"], kh, kw)),
        rng.standard_normal(p["o"]),
        rng.random((p["n"], p["g"] * kh * kw, oh, ow)) if p["mask"] else None,
    ]
    arrays = [None if a is None else a.astype(dtype) for a in arrays]
    ts = [None if a is None else T(a, True) for a in arrays]
    es = [None if a is None else E(a, True) for a in arrays]
    kwargs = dict(stride=p["stride"], padding=p["pad"], dilation=p["dil"])
    to = tops.deform_conv2d(*ts[:4], mask=ts[4], **kwargs)
    eo = eops.deform_conv2d(*es[:4], mask=es[4], **kwargs)
    assert tuple(eo.shape) == tuple(to.shape)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    close(eo, to, tol)
    g = rng.standard_normal(to.shape).astype(dtype)
    to.backward(T(g))
    eo.backward(E(g))
    for t, e in zip(ts, es):
        if t is not None:
            close(e.grad, t.grad, tol * 10)


def test_deform_conv2d_module_state_and_repr():
    for args, kwargs in [((4, 6, 3), dict(padding=1, groups=2, bias=False)),
                         ((4, 6, (3, 2)), dict(stride=2, dilation=2))]:
        tm = tops.DeformConv2d(*args, **kwargs)
        em = eops.DeformConv2d(*args, **kwargs)
        assert repr(em) == repr(tm)
        copy_weights(tm, em)
    x = np.random.default_rng(0).standard_normal((1, 4, 9, 9)).astype(np.float32)
    off = np.random.default_rng(1).standard_normal((1, 12, 3, 4)).astype(np.float32)
    close(em(E(x), E(off)), tm(T(x), T(off)), 1e-4)


def test_deform_conv2d_errors_match():
    x = np.random.rand(2, 4, 6, 6).astype(np.float32)
    w = np.random.rand(4, 4, 3, 3).astype(np.float32)
    off = np.random.rand(2, 18, 4, 4).astype(np.float32)
    cases = [
        dict(offset=np.random.rand(2, 10, 4, 4).astype(np.float32)),
        dict(offset=np.random.rand(2, 20, 4, 4).astype(np.float32)),
        dict(offset=np.random.rand(1, 18, 4, 4).astype(np.float32)),
        dict(offset=np.random.rand(2, 18, 5, 4).astype(np.float32)),
        dict(mask=np.random.rand(2, 8, 4, 4).astype(np.float32)),
        dict(mask=np.random.rand(1, 9, 4, 4).astype(np.float32)),
        dict(mask=np.random.rand(2, 9, 3, 4).astype(np.float32)),
        dict(padding=-1),
        dict(dilation=0),
    ]
    for case in cases:
        o = case.pop("offset", off)
        m = case.pop("mask", None)
        msgs = []
        for mk, lib in ((T, tops), (E, eops)):
            with pytest.raises(RuntimeError) as info:
                lib.deform_conv2d(mk(x), mk(o), mk(w), mask=None if m is None else mk(m), **case)
            msgs.append(str(info.value).splitlines()[0])
        # torchvision's kernel names its source file and line, Ember's only the kernel
        tv = re.sub(r"^deform_conv2d_forward_kernel, \S+\.cpp:\d+, ", "", msgs[0])
        em = msgs[1].removeprefix("deform_conv2d_forward_kernel: ")
        assert tv and em == tv, msgs


# -- boxes and losses ------------------------------------------------------------------------

def boxes(rng, n):
    xy = rng.uniform(0, 20, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.5, 12, (n, 2))], 1)


@pytest.mark.parametrize("name", ["complete_box_iou", "distance_box_iou", "generalized_box_iou",
                                  "box_iou"])
def test_pairwise_box_ious(name):
    rng = np.random.default_rng(0)
    a, b = boxes(rng, 5), boxes(rng, 6)
    ta, tb, ea, eb = T(a, True), T(b, True), E(a, True), E(b, True)
    to, eo = getattr(tops, name)(ta, tb), getattr(eops, name)(ea, eb)
    close(eo, to, 1e-12)
    g = rng.standard_normal(to.shape)
    to.backward(T(g))
    eo.backward(E(g))
    close(ea.grad, ta.grad, 1e-10)
    close(eb.grad, tb.grad, 1e-10)
    f16 = getattr(eops, name)(E(a.astype(np.float16)), E(b.astype(np.float16)))
    t16 = getattr(tops, name)(T(a.astype(np.float16)), T(b.astype(np.float16)))
    assert str(f16.dtype) == str(t16.dtype).replace("torch", "ember")


def test_box_inter_union_private_import():
    from torchvision.ops.boxes import _box_inter_union as t_biu

    from ember.vision.ops.boxes import _box_inter_union as e_biu

    rng = np.random.default_rng(1)
    a, b = boxes(rng, 3), boxes(rng, 4)
    for fmt in ("xyxy", "xywh", "cxcywh"):
        for e, t in zip(e_biu(E(a), E(b), fmt), t_biu(T(a), T(b), fmt)):
            close(e, t, 1e-12)


@pytest.mark.parametrize("name", ["generalized_box_iou_loss", "distance_box_iou_loss",
                                  "complete_box_iou_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_box_losses(name, reduction):
    rng = np.random.default_rng(2)
    a, b = boxes(rng, 7), boxes(rng, 7)
    b[0] = a[0]
    b[1] = a[1] + 50
    ta, tb, ea, eb = T(a, True), T(b, True), E(a, True), E(b, True)
    to = getattr(tops, name)(ta, tb, reduction, eps=1e-6)
    eo = getattr(eops, name)(ea, eb, reduction, eps=1e-6)
    close(eo, to, 1e-12)
    to.sum().backward()
    eo.sum().backward()
    close(ea.grad, ta.grad, 1e-10)
    close(eb.grad, tb.grad, 1e-10)
    te = getattr(tops, name)(torch.zeros(0, 4), torch.zeros(0, 4), reduction)
    ee = getattr(eops, name)(ember.zeros(0, 4), ember.zeros(0, 4), reduction)
    assert tuple(ee.shape) == tuple(te.shape)
    close(ee, te, 0)
    ti = getattr(tops, name)(T(a).int(), T(b).int())
    ei = getattr(eops, name)(E(a).int(), E(b).int())
    assert str(ei.dtype) == str(ti.dtype).replace("torch", "ember")
    close(ei, ti, 1e-6)
    msgs = []
    for lib, mk in ((tops, T), (eops, E)):
        with pytest.raises(ValueError) as info:
            getattr(lib, name)(mk(a), mk(b), "max")
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_masks_to_boxes():
    rng = np.random.default_rng(3)
    masks = rng.random((6, 11, 9)) > 0.9
    masks[2] = False
    close(eops.masks_to_boxes(E(masks)), tops.masks_to_boxes(T(masks)), 0)
    close(eops.masks_to_boxes(E(masks.astype(np.float32))),
          tops.masks_to_boxes(T(masks.astype(np.float32))), 0)
    assert tuple(eops.masks_to_boxes(ember.zeros(0, 3, 3)).shape) == (0, 4)


# -- misc layers -----------------------------------------------------------------------------

def _randomize(module):
    """Non-trivial values in every float parameter and buffer (unit BN statistics, ...)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)


def _same_layer(build, x, train=False, grad=True):
    """Build in both libraries (``build(ns, nn)`` with torchvision.ops and torch.nn or
    Ember's), copy the (randomized) state, compare keys, repr, forward and input gradient."""
    tm, em = build(tops, torch.nn), build(eops, ember.nn)
    _randomize(tm)
    copy_weights(tm, em)
    assert repr(em).replace("ember.", "torch.") == repr(tm)
    tm.train(train)
    em.train(train)
    tx, ex = T(x, grad), E(x, grad)
    to, eo = tm(tx), em(ex)
    close(eo, to, 1e-5)
    if grad:
        g = np.random.default_rng(9).standard_normal(tuple(to.shape)).astype(x.dtype)
        to.backward(T(g))
        eo.backward(E(g))
        close(ex.grad, tx.grad, 1e-5)
    return tm, em


def test_frozen_batch_norm():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)

    tm, em = _same_layer(lambda ns, nn: ns.FrozenBatchNorm2d(5, eps=1e-3), x)
    assert list(em.state_dict()) == ["weight", "bias", "running_mean", "running_var"]
    assert list(em.parameters()) == [] and list(tm.parameters()) == []
    # a BatchNorm2d state_dict (with num_batches_tracked) loads strictly in both
    bn = torch.nn.BatchNorm2d(5)
    bn.running_var.uniform_(0.5, 2)
    bn.weight.data.uniform_(-1, 1)
    sd = bn.state_dict()
    tm.load_state_dict(sd)
    em.load_state_dict({k: E(v.numpy().copy()) for k, v in sd.items()})
    close(em(E(x)), tm(T(x)), 1e-5)
    assert repr(em) == repr(tm) == "FrozenBatchNorm2d(5, eps=0.001)"


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, stride=2),
    dict(kernel_size=(3, 5), dilation=(1, 2), norm_layer=None),
    dict(kernel_size=1, activation_layer=None, bias=True),
])
def test_conv2d_norm_activation(kwargs):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)

    def build(ns, nn):
        kw = dict(kwargs)
        for key in ("norm_layer", "activation_layer"):
            kw.setdefault(key, nn.BatchNorm2d if key == "norm_layer" else nn.ReLU)
        return ns.Conv2dNormActivation(3, 4, inplace=False, **kw)

    _same_layer(build, x, train=True)


def test_conv3d_norm_activation_and_base_warning():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 5, 6, 7)).astype(np.float32)
    _same_layer(lambda ns, nn: ns.misc.Conv3dNormActivation(2, 3, (1, 3, 3), inplace=False), x)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tops.misc.ConvNormActivation(2, 3)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        eops.misc.ConvNormActivation(2, 3)
    assert [str(w.message) for w in ew] == [str(w.message) for w in tw]


def test_squeeze_excitation_mlp_permute():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, 4, 5)).astype(np.float32)
    _same_layer(lambda ns, nn: ns.SqueezeExcitation(6, 3, nn.SiLU, nn.Hardsigmoid), x)
    v = rng.standard_normal((3, 5)).astype(np.float32)
    _same_layer(lambda ns, nn: ns.MLP(5, [8, 7, 2], norm_layer=nn.LayerNorm, dropout=0.1), v)
    tp, ep = tops.Permute([0, 2, 3, 1]), eops.Permute([0, 2, 3, 1])
    close(ep(E(x)), tp(T(x)), 0)
    assert repr(ep) == repr(tp)


def test_stochastic_depth_and_drop_block_contracts():
    x = np.random.default_rng(8).standard_normal((4, 3, 7, 7)).astype(np.float32)
    assert repr(eops.StochasticDepth(0.2, "row")) == repr(tops.StochasticDepth(0.2, "row"))
    for cls in ("DropBlock2d", "DropBlock3d"):
        assert repr(getattr(eops, cls)(0.2, 3, True)) == repr(getattr(tops, cls)(0.2, 3, True))
    # the identity cases are the same; the errors are the same
    for lib, mk in ((tops, T), (eops, E)):
        xt = mk(x)
        assert lib.stochastic_depth(xt, 0.3, "row", training=False) is xt
        assert lib.drop_block2d(xt, 0.3, 3, training=False) is xt
        assert lib.drop_block3d(mk(x[None]), 0.0, 3) is not None
    for call in (
        lambda lib, mk: lib.stochastic_depth(mk(x), 2.0, "row"),
        lambda lib, mk: lib.stochastic_depth(mk(x), 0.1, "col"),
        lambda lib, mk: lib.drop_block2d(mk(x), 1.5, 3),
        lambda lib, mk: lib.drop_block2d(mk(x[0]), 0.1, 3),
        lambda lib, mk: lib.drop_block3d(mk(x), 0.1, 3),
        lambda lib, mk: lib.drop_block2d(mk(x), 0.1, 4),
    ):
        msgs = []
        for lib, mk in ((tops, T), (eops, E)):
            with pytest.raises(ValueError) as info:
                call(lib, mk)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]
    # with all-ones inputs the kept fraction and scale follow the same law
    ones = np.ones((8, 4, 32, 32), np.float32)
    ember.manual_seed(0)
    torch.manual_seed(0)
    e = eops.drop_block2d(E(ones), 0.2, 5).numpy()
    t = tops.drop_block2d(T(ones), 0.2, 5).numpy()
    assert abs((e == 0).mean() - (t == 0).mean()) < 0.03


# -- FPN and poolers -------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [None, "pool", "p6p7"])
def test_feature_pyramid_network(extra):
    rng = np.random.default_rng(10)
    feats = [rng.standard_normal(s).astype(np.float32)
             for s in ((2, 3, 20, 18), (2, 5, 10, 9), (2, 6, 5, 5))]

    def build(ns, nn):
        mod = ns.feature_pyramid_network
        blocks = {None: None, "pool": mod.LastLevelMaxPool(), "p6p7": mod.LastLevelP6P7(6, 4)}
        return ns.FeaturePyramidNetwork([3, 5, 6], 4, extra_blocks=blocks[extra],
                                        norm_layer=nn.BatchNorm2d if extra == "pool" else None)

    tm, em = build(tops, torch.nn), build(eops, ember.nn)
    copy_weights(tm, em)
    tm.eval()
    em.eval()
    tx = OrderedDict((n, T(f, True)) for n, f in zip("abc", feats))
    ex = OrderedDict((n, E(f, True)) for n, f in zip("abc", feats))
    to, eo = tm(tx), em(ex)
    assert list(eo) == list(to)
    for name in to:
        close(eo[name], to[name], 1e-4)
    sum(v.sum() for v in to.values()).backward()
    sum(v.sum() for v in eo.values()).backward()
    for name in "abc":
        close(ex[name].grad, tx[name].grad, 1e-4)


def test_fpn_version_one_checkpoint():
    tm, em = tops.FeaturePyramidNetwork([2, 3], 4), eops.FeaturePyramidNetwork([2, 3], 4)
    old = OrderedDict((k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"),
                       torch.randn(v.shape)) for k, v in tm.state_dict().items())
    old._metadata = OrderedDict({"": {"version": 1}})
    tm.load_state_dict(old)
    eold = OrderedDict((k, E(v.numpy())) for k, v in old.items())
    eold._metadata = old._metadata
    em.load_state_dict(eold)
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(em.state_dict()[k].numpy(), v.numpy())


@pytest.mark.parametrize("names,output_size,sampling_ratio", [
    (["f0", "f1", "f2"], 3, 2),
    (["f0", "f2"], (2, 3), -1),
    (["f1"], 4, 0),
])
def test_multi_scale_roi_align(names, output_size, sampling_ratio):
    rng = np.random.default_rng(11)
    shapes = {"f0": (2, 3, 32, 30), "f1": (2, 3, 16, 15), "f2": (2, 3, 8, 8), "x": (2, 3, 4, 4)}
    feats = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    xy = rng.uniform(0, 100, (9, 2))
    bx = np.concatenate([xy, xy + rng.uniform(4, 260, (9, 2))], 1).astype(np.float32)
    image_shapes = [(128, 120), (100, 128)]
    tm = tops.MultiScaleRoIAlign(names, output_size, sampling_ratio)
    em = eops.MultiScaleRoIAlign(names, output_size, sampling_ratio)
    assert repr(em) == repr(tm)
    tx = OrderedDict((n, T(f, True)) for n, f in feats.items())
    ex = OrderedDict((n, E(f, True)) for n, f in feats.items())
    to = tm(tx, [T(bx[:4]), T(bx[4:])], image_shapes)
    eo = em(ex, [E(bx[:4]), E(bx[4:])], image_shapes)
    assert em.scales == tm.scales
    assert (em.map_levels.k_min, em.map_levels.k_max) == (tm.map_levels.k_min,
                                                          tm.map_levels.k_max)
    close(eo, to, 1e-5)
    to.sum().backward()
    eo.sum().backward()
    for n in names:
        close(ex[n].grad, tx[n].grad, 1e-5)


def test_box_format_errors_match():
    rng = np.random.default_rng(12)
    a = boxes(rng, 3)
    for call in (lambda lib, mk: lib.box_iou(mk(a), mk(a), fmt="yxyx"),
                 lambda lib, mk: lib.boxes._box_inter_union(mk(a), mk(a), fmt="yxyx")):
        msgs = []
        for lib, mk in ((tops, T), (eops, E)):
            with pytest.raises(ValueError) as info:
                call(lib, mk)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]
