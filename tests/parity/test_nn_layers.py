"""ember.nn layers against torch.nn: for each layer the same state_dict keys and shapes, the
same repr, and, with torch's weights loaded, the same outputs and input/parameter gradients in
train and eval mode; BatchNorm's running statistics; a small CNN's SGD loss curve."""

import re

import numpy as np
import pytest
from testutils import to_numpy

import ember
import ember.nn as enn

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")
tnn = torch.nn

TOL = dict(rtol=1e-5, atol=1e-5)


def to_np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else to_numpy(t)


def make_pair(name, args, kwargs):
    torch.manual_seed(0)
    tm = getattr(tnn, name)(*args, **kwargs)
    em = getattr(enn, name)(*args, **kwargs)
    return tm, em


def load_torch_weights(tm, em):
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(sd)


def randomize(tm):
    """Non-trivial affine parameters and running stats (ones/zeros would hide bugs)."""
    with torch.no_grad():
        for name, p in tm.named_parameters():
            if p.dtype.is_floating_point and name.endswith(("weight", "bias")) and \
                    isinstance(tm, tnn.modules.batchnorm._NormBase | tnn.LayerNorm |
                               tnn.GroupNorm | tnn.RMSNorm):
                p.uniform_(0.5, 1.5)
        for name, b in tm.named_buffers():
            if name == "running_mean":
                b.normal_()
            elif name == "running_var":
                b.uniform_(0.5, 2.0)


def run(m, lib, xs, grad_out_seed=1, grad_args=None):
    """Forward, then backward of ``sum(out * g)`` with a fixed random ``g``; the float inputs
    (or those at ``grad_args``) require grad."""
    ins = [lib.tensor(x.copy(), requires_grad=x.dtype.kind == "f" and
                      (grad_args is None or i in grad_args)) for i, x in enumerate(xs)]
    out = m(*ins)
    if isinstance(out, tuple):
        out = out[0]
    outs = [to_np(out)]
    if out.dtype in (torch.float32, torch.float64, ember.float32, ember.float64) and \
            out.requires_grad:
        g = np.random.default_rng(grad_out_seed).standard_normal(tuple(out.shape)).astype(
            np.float32)
        (out * lib.tensor(g)).sum().backward()
        grads = [to_np(i.grad) if i.grad is not None else None for i in ins]
        pgrads = {n: to_np(p.grad) for n, p in m.named_parameters() if p.grad is not None}
        return outs, grads, pgrads
    return outs, [], {}


R = np.random.default_rng(0)


def x(*shape):
    return R.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return R.uniform(0.1, 1.0, shape).astype(np.float32)


def idx(high, *shape):
    return R.integers(0, high, shape).astype(np.int64)


# (torch.nn name, ctor args, ctor kwargs, input arrays, deterministic in train mode)
CASES = [
    ("Conv1d", (3, 4, 3), {}, [x(2, 3, 9)], True),
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=2, dilation=2, groups=2, bias=False),
     [x(2, 4, 11)], True),
    ("Conv1d", (3, 4, 4), dict(padding="same", padding_mode="reflect"), [x(2, 3, 9)], True),
    ("Conv1d", (3, 4, 3), dict(padding="valid"), [x(3, 9)], True),
    ("Conv2d", (3, 4, 3), {}, [x(2, 3, 7, 6)], True),
    ("Conv2d", (4, 4, (3, 2)), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=4),
     [x(2, 4, 7, 8)], True),
    ("Conv2d", (3, 2, 3), dict(padding=1, padding_mode="replicate"), [x(2, 3, 5, 5)], True),
    ("Conv2d", (3, 2, 3), dict(padding=(1, 2), padding_mode="circular"), [x(2, 3, 5, 5)],
     True),
    ("Conv2d", (3, 2, 3), dict(padding=1, padding_mode="reflect"), [x(2, 3, 5, 5)], True),
    ("Conv2d", (2, 2, 4), dict(padding="same", dilation=2), [x(1, 2, 7, 7)], True),
    ("Conv3d", (2, 3, 2), dict(padding=1), [x(2, 2, 4, 3, 5)], True),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, output_padding=1), [x(2, 3, 6)], True),
    ("ConvTranspose2d", (4, 2, 3), dict(stride=2, padding=1, groups=2, dilation=1),
     [x(2, 4, 5, 4)], True),
    ("ConvTranspose2d", (2, 3, (2, 3)), dict(bias=False, dilation=2), [x(2, 2, 4, 4)], True),
    ("ConvTranspose3d", (2, 2, 2), dict(stride=(1, 2, 1)), [x(1, 2, 3, 2, 3)], True),
    ("Conv2d", (3, 2, 3), dict(padding=1, padding_mode="reflect"), [x(3, 5, 5)], True),
    ("ConvTranspose2d", (3, 2, 3), {}, [x(3, 4, 4)], True),
    ("MaxPool1d", (3,), dict(stride=2, padding=1), [x(2, 3, 10)], True),
    ("MaxPool2d", (2,), {}, [x(2, 3, 6, 6)], True),
    ("MaxPool2d", (3,), dict(stride=2, padding=1, dilation=1, ceil_mode=True),
     [x(2, 3, 8, 7)], True),
    ("AvgPool1d", (3,), dict(stride=2, padding=1, count_include_pad=False), [x(2, 3, 10)],
     True),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True), [x(2, 3, 8, 7)], True),
    ("AvgPool2d", (2,), dict(divisor_override=3), [x(2, 3, 6, 6)], True),
    ("AdaptiveAvgPool1d", (4,), {}, [x(2, 3, 10)], True),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [x(2, 3, 7, 5)], True),
    ("AdaptiveAvgPool2d", (1,), {}, [x(2, 3, 7, 5)], True),
    ("AdaptiveMaxPool1d", (4,), {}, [x(2, 3, 10)], True),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, [x(2, 3, 7, 5)], True),
    ("LPPool1d", (2, 3), dict(stride=2), [x(2, 3, 9)], True),
    ("LPPool2d", (2, 2), {}, [pos(2, 3, 6, 6)], True),
    ("BatchNorm1d", (4,), {}, [x(5, 4)], True),
    ("BatchNorm1d", (4,), dict(momentum=None, affine=False), [x(5, 4, 3)], True),
    ("BatchNorm2d", (3,), {}, [x(4, 3, 5, 5)], True),
    ("BatchNorm2d", (3,), dict(track_running_stats=False), [x(4, 3, 5, 5)], True),
    ("BatchNorm3d", (2,), dict(eps=1e-3, momentum=0.3), [x(2, 2, 3, 3, 3)], True),
    ("InstanceNorm1d", (3,), {}, [x(2, 3, 7)], True),
    ("InstanceNorm1d", (3,), dict(affine=True, track_running_stats=True), [x(2, 3, 7)], True),
    ("InstanceNorm2d", (3,), dict(affine=True), [x(2, 3, 4, 5)], True),
    ("InstanceNorm2d", (3,), {}, [x(3, 4, 5)], True),
    ("InstanceNorm3d", (2,), dict(affine=True, momentum=0.3, track_running_stats=True),
     [x(2, 2, 3, 2, 3)], True),
    ("LayerNorm", (5,), {}, [x(2, 3, 5)], True),
    ("LayerNorm", ((3, 5),), dict(eps=1e-3, bias=False), [x(2, 3, 5)], True),
    ("LayerNorm", ([5],), dict(elementwise_affine=False), [x(2, 3, 5)], True),
    ("GroupNorm", (2, 4), {}, [x(3, 4, 5)], True),
    ("GroupNorm", (4, 4), dict(affine=False, eps=1e-3), [x(3, 4, 2, 3)], True),
    ("LocalResponseNorm", (3,), {}, [x(2, 5, 4, 4)], True),
    ("RMSNorm", (5,), {}, [x(2, 3, 5)], True),
    ("RMSNorm", ((3, 5),), dict(eps=1e-4, elementwise_affine=False), [x(2, 3, 5)], True),
    ("ReLU", (), {}, [x(3, 4)], True),
    ("ReLU6", (), {}, [3 * x(3, 4)], True),
    ("LeakyReLU", (0.2,), {}, [x(3, 4)], True),
    ("ELU", (), dict(alpha=0.7), [x(3, 4)], True),
    ("SELU", (), {}, [x(3, 4)], True),
    ("CELU", (1.3,), {}, [x(3, 4)], True),
    ("GELU", (), {}, [x(3, 4)], True),
    ("GELU", ("tanh",), {}, [x(3, 4)], True),
    ("SiLU", (), {}, [x(3, 4)], True),
    ("Mish", (), {}, [x(3, 4)], True),
    ("Softplus", (2.0, 5.0), {}, [x(3, 4)], True),
    ("Hardswish", (), {}, [4 * x(3, 4)], True),
    ("Hardsigmoid", (), {}, [4 * x(3, 4)], True),
    ("Hardtanh", (-0.5, 0.7), {}, [x(3, 4)], True),
    ("PReLU", (), {}, [x(3, 4)], True),
    ("PReLU", (3,), dict(init=0.1), [x(2, 3, 4)], True),
    ("RReLU", (0.1, 0.3), {}, [x(3, 4)], False),
    ("GLU", (), {}, [x(3, 4)], True),
    ("GLU", (0,), {}, [x(4, 3)], True),
    ("LogSigmoid", (), {}, [x(3, 4)], True),
    ("Softsign", (), {}, [x(3, 4)], True),
    ("Tanhshrink", (), {}, [x(3, 4)], True),
    ("Softshrink", (0.3,), {}, [x(3, 4)], True),
    ("Hardshrink", (), {}, [x(3, 4)], True),
    ("Threshold", (0.1, 20.0), {}, [x(3, 4)], True),
    ("Sigmoid", (), {}, [x(3, 4)], True),
    ("Tanh", (), {}, [x(3, 4)], True),
    ("Softmax", (1,), {}, [x(3, 4)], True),
    ("LogSoftmax", (-1,), {}, [x(3, 4)], True),
    ("Softmin", (0,), {}, [x(3, 4)], True),
    ("Softmax2d", (), {}, [x(2, 3, 4, 4)], True),
    ("Dropout", (0.3,), {}, [x(3, 4)], False),
    ("Dropout1d", (), {}, [x(3, 4, 5)], False),
    ("Dropout2d", (0.2,), {}, [x(3, 4, 5, 5)], False),
    ("Dropout3d", (), {}, [x(2, 4, 2, 2, 2)], False),
    ("AlphaDropout", (0.2,), {}, [x(3, 4)], False),
    ("FeatureAlphaDropout", (0.2,), {}, [x(3, 4, 5)], False),
    ("Embedding", (10, 3), {}, [idx(10, 2, 5)], True),
    ("Embedding", (10, 3), dict(padding_idx=2), [np.array([[2, 1, 2, 9]])], True),
    ("Embedding", (10, 3), dict(padding_idx=-1, max_norm=1.0, norm_type=1.5),
     [idx(10, 6)], True),
    ("EmbeddingBag", (10, 3), {}, [idx(10, 2, 4)], True),
    ("EmbeddingBag", (10, 3), dict(mode="sum", padding_idx=0), [idx(10, 2, 4)], True),
    ("EmbeddingBag", (10, 3), dict(mode="max"), [idx(10, 2, 4)], True),
    ("ConstantPad1d", (2, 3.5), {}, [x(2, 3, 4)], True),
    ("ConstantPad2d", ((1, 0, 2, 1), -1.0), {}, [x(2, 3, 4)], True),
    ("ConstantPad3d", (1, 0.5), {}, [x(1, 2, 2, 3, 2)], True),
    ("ZeroPad1d", ((1, 2),), {}, [x(2, 3, 4)], True),
    ("ZeroPad2d", (2,), {}, [x(2, 3, 4, 4)], True),
    ("ReflectionPad1d", ((2, 1),), {}, [x(2, 3, 4)], True),
    ("ReflectionPad2d", (2,), {}, [x(2, 3, 4, 4)], True),
    ("ReplicationPad1d", (3,), {}, [x(2, 3, 4)], True),
    ("ReplicationPad2d", ((1, 2, 0, 3),), {}, [x(2, 3, 4, 4)], True),
    ("CircularPad1d", (2,), {}, [x(2, 3, 4)], True),
    ("CircularPad3d", (1,), {}, [x(1, 2, 3, 3, 3)], True),
    ("ReflectionPad3d", ((1, 0, 2, 1, 0, 1),), {}, [x(1, 2, 3, 3, 3)], True),
    ("ReplicationPad3d", (1,), {}, [x(1, 2, 3, 3, 3)], True),
    ("ZeroPad3d", (1,), {}, [x(1, 2, 3, 3, 3)], True),
    ("CircularPad2d", ((1, 2, 2, 0),), {}, [x(2, 3, 4, 4)], True),
    ("PixelShuffle", (2,), {}, [x(2, 8, 3, 3)], True),
    ("PixelUnshuffle", (2,), {}, [x(2, 2, 4, 6)], True),
    ("Upsample", (), dict(scale_factor=2), [x(2, 3, 4, 4)], True),
    ("Upsample", (), dict(size=(5, 7), mode="bilinear", align_corners=False),
     [x(2, 3, 4, 4)], True),
    ("Upsample", (), dict(scale_factor=1.5, mode="linear"), [x(2, 3, 4)], True),
    ("UpsamplingNearest2d", (), dict(size=6), [x(1, 2, 3, 3)], True),
    ("UpsamplingBilinear2d", (), dict(scale_factor=2), [x(1, 2, 3, 3)], True),
    ("CosineSimilarity", (), {}, [x(3, 4), x(3, 4)], True),
    ("CosineSimilarity", (0, 1e-6), {}, [x(3, 4), x(3, 4)], True),
    ("PairwiseDistance", (), {}, [x(3, 4), x(3, 4)], True),
    ("PairwiseDistance", (1.0, 1e-4, True), {}, [x(3, 4), x(3, 4)], True),
    ("Fold", ((4, 5), 2), {}, [x(2, 12, 12)], True),
    ("Fold", ((5, 5), 3), dict(padding=1, stride=2), [x(2, 9, 9)], True),
    ("Unfold", (2,), {}, [x(2, 3, 4, 5)], True),
    ("Unfold", ((2, 3),), dict(dilation=2, padding=1, stride=2), [x(2, 3, 5, 6)], True),
]


def case_id(c):
    return c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[2].items())[:40]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_layer_matches_torch(case):
    name, args, kwargs, xs, deterministic = case
    tm, em = make_pair(name, args, kwargs)
    t_sd, e_sd = tm.state_dict(), em.state_dict()
    assert list(e_sd) == list(t_sd)
    for k in t_sd:
        assert tuple(e_sd[k].shape) == tuple(t_sd[k].shape), k
        assert str(e_sd[k].dtype).replace("ember.", "") == \
            str(t_sd[k].dtype).replace("torch.", ""), k
    assert repr(em) == repr(tm).replace("torch.", "ember.")
    randomize(tm)
    load_torch_weights(tm, em)
    modes = ("train", "eval") if deterministic else ("eval",)
    for mode in modes:
        getattr(tm, mode)()
        getattr(em, mode)()
        for p in (*tm.parameters(), *em.parameters()):
            p.grad = None
        t_out, t_g, t_pg = run(tm, torch, xs)
        e_out, e_g, e_pg = run(em, ember, xs)
        for a, b in zip(e_out, t_out):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, **TOL)
        assert len(e_g) == len(t_g)
        for a, b in zip(e_g, t_g):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(a, b, **TOL)
        assert sorted(e_pg) == sorted(t_pg)
        for k in t_pg:
            np.testing.assert_allclose(e_pg[k], t_pg[k], **TOL, err_msg=k)
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(to_np(em.state_dict()[k]), v.numpy(), **TOL, err_msg=k)


@pytest.mark.parametrize("kwargs", [{}, dict(momentum=None), dict(momentum=0.5, affine=False)])
def test_batchnorm_running_stats_over_steps(kwargs):
    tm, em = make_pair("BatchNorm2d", (3,), kwargs)
    load_torch_weights(tm, em)
    for step in range(4):
        xs = [x(4, 3, 3, 3) * (step + 1) + step]
        run(tm, torch, xs)
        run(em, ember, xs)
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(to_np(em.state_dict()[k]), v.numpy(), **TOL, err_msg=k)
    assert em.num_batches_tracked.dtype == ember.int64
    assert int(em.num_batches_tracked) == 4
    tm.eval()
    em.eval()
    xs = [x(2, 3, 3, 3)]
    np.testing.assert_allclose(run(em, ember, xs)[0][0], run(tm, torch, xs)[0][0], **TOL)
    tm.reset_running_stats()
    em.reset_running_stats()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(to_np(em.state_dict()[k]), v.numpy(), **TOL, err_msg=k)


def test_batchnorm_old_checkpoint_without_num_batches_tracked_loads():
    em = enn.BatchNorm1d(3)
    sd = em.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""] = {"version": 1}
    em.load_state_dict(sd)


def test_conv_transpose_output_size_matches_torch():
    tm, em = make_pair("ConvTranspose2d", (2, 3, 3), dict(stride=2))
    load_torch_weights(tm, em)
    xs = x(1, 2, 4, 4)
    for size in ([10, 9], [1, 3, 9, 10]):
        t = tm(torch.tensor(xs), output_size=size)
        e = em(ember.tensor(xs), output_size=size)
        np.testing.assert_allclose(to_np(e), to_np(t), **TOL)
    with pytest.raises(ValueError) as t_err:
        tm(torch.tensor(xs), output_size=[12, 12])
    with pytest.raises(ValueError) as e_err:
        em(ember.tensor(xs), output_size=[12, 12])
    assert str(e_err.value) == str(t_err.value).replace("torch.", "ember.")


def test_pool_return_indices_and_unpool_match_torch():
    xs = x(2, 3, 6, 6)
    tp, ep = make_pair("MaxPool2d", (2,), dict(return_indices=True))
    tu, eu = make_pair("MaxUnpool2d", (2,), {})
    t_out, t_idx = tp(torch.tensor(xs))
    e_out, e_idx = ep(ember.tensor(xs))
    np.testing.assert_array_equal(to_np(e_idx), to_np(t_idx))
    np.testing.assert_allclose(to_np(eu(e_out, e_idx)), to_np(tu(t_out, t_idx)))
    assert repr(eu) == repr(tu)
    xs = x(2, 3, 8)
    tp, ep = make_pair("MaxPool1d", (2,), dict(return_indices=True))
    tu, eu = make_pair("MaxUnpool1d", (2,), {})
    t_out, t_idx = tp(torch.tensor(xs))
    e_out, e_idx = ep(ember.tensor(xs))
    np.testing.assert_allclose(to_np(eu(e_out, e_idx, output_size=[9])),
                               to_np(tu(t_out, t_idx, output_size=[9])))
    assert repr(eu) == repr(tu)
    tp, ep = make_pair("AdaptiveMaxPool2d", (3,), dict(return_indices=True))
    np.testing.assert_array_equal(to_np(ep(ember.tensor(xs[None]))[1]),
                                  to_np(tp(torch.tensor(xs[None]))[1]))


def test_embedding_from_pretrained_matches_torch():
    w = x(5, 3)
    t = tnn.Embedding.from_pretrained(torch.tensor(w), padding_idx=1, max_norm=2.0)
    e = enn.Embedding.from_pretrained(ember.tensor(w), padding_idx=1, max_norm=2.0)
    assert repr(e) == repr(t)
    assert e.weight.requires_grad is t.weight.requires_grad is False
    i = idx(5, 7)
    np.testing.assert_allclose(to_np(e(ember.tensor(i))), to_np(t(torch.tensor(i))), **TOL)
    t = tnn.Embedding.from_pretrained(torch.tensor(w), freeze=False)
    e = enn.Embedding.from_pretrained(ember.tensor(w), freeze=False)
    assert e.weight.requires_grad is t.weight.requires_grad is True
    t = tnn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="sum")
    e = enn.EmbeddingBag.from_pretrained(ember.tensor(w), mode="sum")
    assert repr(e) == repr(t)
    assert e.weight.requires_grad is t.weight.requires_grad is False
    i, off = idx(5, 7), np.array([0, 3])
    np.testing.assert_allclose(to_np(e(ember.tensor(i), ember.tensor(off))),
                               to_np(t(torch.tensor(i), torch.tensor(off))), **TOL)


# -- losses -------------------------------------------------------------------------------------

def tgt_sign(*shape):
    return np.where(R.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


LOSS_CASES = [
    ("L1Loss", {}, [x(3, 4), x(3, 4)]),
    ("MSELoss", dict(reduction="sum"), [x(3, 4), x(3, 4)]),
    ("CrossEntropyLoss", {}, [x(4, 5), idx(5, 4)]),
    ("CrossEntropyLoss", dict(label_smoothing=0.1, ignore_index=1, reduction="sum"),
     [x(4, 5, 2), idx(5, 4, 2)]),
    ("CrossEntropyLoss", dict(weight=pos(5)), [x(4, 5), idx(5, 4)]),
    ("CrossEntropyLoss", {}, [x(4, 5), pos(4, 5)]),
    ("NLLLoss", dict(weight=pos(5), reduction="none"), [x(4, 5), idx(5, 4)]),
    ("BCELoss", dict(weight=pos(4)), [pos(3, 4) * 0.9, pos(3, 4)]),
    ("BCEWithLogitsLoss", dict(pos_weight=pos(4)), [x(3, 4), pos(3, 4)]),
    ("KLDivLoss", dict(reduction="batchmean"), [x(3, 4), pos(3, 4)]),
    ("KLDivLoss", dict(log_target=True, reduction="sum"), [x(3, 4), x(3, 4)]),
    ("SmoothL1Loss", dict(beta=0.5), [x(3, 4), x(3, 4)]),
    ("HuberLoss", dict(delta=0.7, reduction="none"), [x(3, 4), x(3, 4)]),
    ("MarginRankingLoss", dict(margin=0.2), [x(6), x(6), tgt_sign(6)], (0, 1)),
    ("HingeEmbeddingLoss", dict(margin=0.5), [x(3, 4), tgt_sign(3, 4)]),
    ("CosineEmbeddingLoss", dict(margin=0.1), [x(3, 4), x(3, 4), tgt_sign(3)], (0, 1)),
    ("TripletMarginLoss", dict(margin=0.5, p=1.5, swap=True), [x(3, 4), x(3, 4), x(3, 4)],
     (0, 1, 2)),
    ("PoissonNLLLoss", {}, [x(3, 4), pos(3, 4)]),
    ("PoissonNLLLoss", dict(log_input=False, full=True), [pos(3, 4), 3 * pos(3, 4)]),
    ("SoftMarginLoss", {}, [x(3, 4), tgt_sign(3, 4)]),
    ("MultiLabelSoftMarginLoss", dict(weight=pos(4)), [x(3, 4), (pos(3, 4) > 0.5) * 1.0]),
    ("MultiMarginLoss", dict(p=2, margin=0.7, weight=pos(5)), [x(4, 5), idx(5, 4)]),
    ("GaussianNLLLoss", dict(full=True), [x(3, 4), x(3, 4), pos(3, 4)], (0, 2)),
]


def build_loss(lib, nn, name, kwargs):
    kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return getattr(nn, name)(**kw)


@pytest.mark.parametrize("case", LOSS_CASES, ids=[case_id((c[0], 0, c[1])) for c in LOSS_CASES])
def test_loss_module_matches_torch(case):
    name, kwargs, xs, grad_args = (*case, (0,))[:4]
    tm, em = build_loss(torch, tnn, name, kwargs), build_loss(ember, enn, name, kwargs)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    xs = [a.astype(np.float32) if a.dtype == np.float64 else a for a in xs]
    t_out, t_g, _ = run(tm, torch, xs, grad_args=grad_args)
    e_out, e_g, _ = run(em, ember, xs, grad_args=grad_args)
    assert any(g is not None for g in t_g)
    np.testing.assert_allclose(e_out[0], t_out[0], **TOL)
    for a, b in zip(e_g, t_g):
        if b is not None:
            np.testing.assert_allclose(a, b, **TOL)


def test_ctc_loss_module_matches_torch():
    T, N, C, S = 8, 2, 5, 3
    lp = np.log(np.random.default_rng(3).dirichlet(np.ones(C), (T, N))).astype(np.float32)
    tg = np.array([[1, 2, 2], [3, 4, 1]])
    il, tl = np.array([8, 7]), np.array([3, 2])
    for kw in ({}, dict(blank=0, reduction="sum", zero_infinity=True)):
        tm, em = tnn.CTCLoss(**kw), enn.CTCLoss(**kw)
        t = tm(torch.tensor(lp).requires_grad_(), torch.tensor(tg), torch.tensor(il),
               torch.tensor(tl))
        e = em(ember.tensor(lp, requires_grad=True), ember.tensor(tg), ember.tensor(il),
               ember.tensor(tl))
        np.testing.assert_allclose(to_np(e), to_np(t), **TOL)
    assert S == tg.shape[1]


@pytest.mark.parametrize("size_average,reduce", [(None, False), (False, None), (True, True),
                                                 (False, True), (True, False)])
def test_legacy_size_average_reduce_like_torch(size_average, reduce):
    with pytest.warns(UserWarning) as tw:
        t = tnn.MSELoss(size_average=size_average, reduce=reduce)
    with pytest.warns(UserWarning) as ew:
        e = enn.MSELoss(size_average=size_average, reduce=reduce)
    assert e.reduction == t.reduction
    assert str(ew[0].message) == str(tw[0].message)
    with pytest.warns(UserWarning):
        t = tnn.CrossEntropyLoss(size_average=size_average, reduce=reduce)
    with pytest.warns(UserWarning):
        e = enn.CrossEntropyLoss(size_average=size_average, reduce=reduce)
    assert e.reduction == t.reduction


# -- errors -------------------------------------------------------------------------------------

ERROR_CASES = [
    ("BatchNorm1d", (3,), {}, (2, 3, 4, 4)),
    ("BatchNorm2d", (3,), {}, (2, 3, 4)),
    ("BatchNorm3d", (3,), {}, (2, 3, 4)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 4, 4)),
    ("InstanceNorm2d", (3,), dict(affine=True), (2, 4, 4, 4)),
    ("CircularPad2d", (1,), {}, (2, 3)),
    ("Softmax2d", (), {}, (2, 3)),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_input_errors_match_torch(case):
    name, args, kwargs, shape = case
    tm, em = make_pair(name, args, kwargs)
    a = x(*shape)
    with pytest.raises(ValueError) as t_err:
        tm(torch.tensor(a))
    with pytest.raises(ValueError) as e_err:
        em(ember.tensor(a))
    assert str(e_err.value) == str(t_err.value)


CTOR_ERRORS = [
    ("Conv2d", (3, 4, 3), dict(groups=2)),
    ("Conv2d", (4, 3, 3), dict(groups=2)),
    ("Conv2d", (4, 4, 3), dict(groups=0)),
    ("Conv2d", (4, 4, 3), dict(padding="full")),
    ("Conv2d", (4, 4, 3), dict(padding="same", stride=2)),
    ("Conv1d", (4, 4, 3), dict(padding_mode="mirror")),
    ("ConvTranspose2d", (4, 4, 3), dict(padding_mode="reflect")),
    ("GroupNorm", (3, 4), {}),
    ("Dropout", (1.5,), {}),
    ("Dropout2d", (-0.1,), {}),
    ("MultiMarginLoss", (3,), {}),
    ("TripletMarginLoss", (0.0,), {}),
]


@pytest.mark.parametrize("case", CTOR_ERRORS, ids=[c[0] + str(c[2]) for c in CTOR_ERRORS])
def test_constructor_errors_match_torch(case):
    name, args, kwargs = case
    with pytest.raises(ValueError) as t_err:
        getattr(tnn, name)(*args, **kwargs)
    with pytest.raises(ValueError) as e_err:
        getattr(enn, name)(*args, **kwargs)
    assert sorted_sets(str(e_err.value)) == sorted_sets(str(t_err.value))


def sorted_sets(msg):
    """Messages that print a ``set`` list its items in an arbitrary order."""
    return re.sub(r"\{[^}]*\}", lambda m: str(sorted(m.group(0)[1:-1].split(", "))), msg)


# -- a small CNN trained with SGD follows torch's loss curve -------------------------------------

def small_cnn(nn):
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Dropout(0.0), nn.Linear(32, 5))


def test_small_cnn_sgd_follows_torch_loss_curve():
    torch.manual_seed(0)
    tm, em = small_cnn(tnn), small_cnn(enn)
    load_torch_weights(tm, em)
    t_loss_fn, e_loss_fn = tnn.CrossEntropyLoss(), enn.CrossEntropyLoss()
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((8, 3, 8, 8)).astype(np.float32)
    ys = rng.integers(0, 5, 8)
    t_losses, e_losses = [], []
    lr = 0.1
    for _ in range(6):
        for m, lib, fn, losses in ((tm, torch, t_loss_fn, t_losses),
                                   (em, ember, e_loss_fn, e_losses)):
            m.zero_grad()
            loss = fn(m(lib.tensor(xs)), lib.tensor(ys))
            loss.backward()
            with lib.no_grad():
                for p in m.parameters():
                    p -= lr * p.grad
            losses.append(loss.item())
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, atol=1e-5)
    assert e_losses[-1] < e_losses[0]
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(to_np(em.state_dict()[k]), v.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_picks_pytorchs_source_in_its_precision(dtype, mode):
    """PyTorch computes source positions in the input's opmath type: resizing 2 -> 82 maps
    output 41 to source 0 in float32 (41 * float32(2/82) rounds below 1) and 1 in float64."""
    for n, m in ((2, 82), (37, 100), (5, 17), (23, 61)):
        x = np.arange(n).astype(dtype).reshape(1, 1, n)
        expected = torch.nn.functional.interpolate(torch.from_numpy(x), size=m, mode=mode)
        got = ember.nn.functional.interpolate(ember.tensor(x), size=m, mode=mode)
        np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=f"{n} -> {m}")


@pytest.mark.parametrize("mode", ["linear", "bilinear", "bicubic"])
def test_interpolate_float32_positions_follow_pytorch(mode):
    """Sizes whose ratio is not exact in binary: float32 positions keep Ember within a few
    float32 roundings of PyTorch (float64 positions were 1e-5 off, enough to reorder a
    detector's near-equal proposals)."""
    rng = np.random.default_rng(0)
    shape, size = {"linear": ((1, 2, 37), (100,)),
                   "bilinear": ((1, 2, 37, 23), (100, 61)),
                   "bicubic": ((1, 2, 37, 23), (100, 61))}[mode]
    a = rng.standard_normal(shape).astype(np.float32)
    for kw in ({"size": size}, {"scale_factor": 1.7, "recompute_scale_factor": True}):
        expected = torch.nn.functional.interpolate(torch.from_numpy(a), mode=mode, **kw).numpy()
        got = ember.nn.functional.interpolate(ember.tensor(a), mode=mode, **kw).numpy()
        # float64 positions: 1.0e-5 linear, 1.1e-5 bicubic; float32: 3.2e-6, 4.9e-6; float32
        # with PyTorch's fused multiply-adds for positions and cubic weights: within a few
        # roundings of the sums (values up to ~4: an ulp is 4.8e-7)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1.5e-6, err_msg=str(kw))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_antialias_values_and_gradients(mode, dtype):
    """antialias=True down and up, by size and by scale, align_corners both ways (it changes
    only the scale): PyTorch's weights to the bit (bilinear, bicubic), its values within a
    few roundings of the sums, its gradients."""
    rng = np.random.default_rng(1)
    cases = [((2, 3, 20, 17), dict(size=(7, 9))), ((1, 2, 9, 40), dict(size=(23, 6))),
             ((1, 1, 33, 31), dict(scale_factor=(0.3, 0.45))),
             ((1, 2, 12, 12), dict(size=(12, 5)))]
    for shape, kw in cases:
        for ac in (False, True) if mode != "lanczos" else (False,):
            a = rng.standard_normal(shape).astype(dtype)
            tx = torch.from_numpy(a).requires_grad_()
            ex = ember.tensor(a, requires_grad=True)
            ty = torch.nn.functional.interpolate(tx, mode=mode, antialias=True,
                                                 align_corners=ac, **kw)
            ey = ember.nn.functional.interpolate(ex, mode=mode, antialias=True,
                                                 align_corners=ac, **kw)
            assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__
            atol = 2e-6 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(to_np(ey), to_np(ty), rtol=0, atol=atol,
                                       err_msg=f"{shape} {kw} {ac}")
            g = rng.standard_normal(ty.shape).astype(dtype)
            ty.backward(torch.from_numpy(g))
            ey.backward(ember.tensor(g))
            np.testing.assert_allclose(to_np(ex.grad), to_np(tx.grad), rtol=0, atol=atol * 4)


def test_interpolate_antialias_weights_are_pytorchs_bits():
    """Resizing an identity image along one axis prints each output's weights: the same
    float32 bits as PyTorch's (it fuses the cubic filter's multiply-adds)."""
    for mode in ("bilinear", "bicubic"):
        for n, m in ((17, 9), (6, 40), (200, 97)):
            eye = np.eye(n, dtype=np.float32)[None, None]
            expected = torch.nn.functional.interpolate(torch.from_numpy(eye), size=(n, m),
                                                       mode=mode, antialias=True)
            got = ember.nn.functional.interpolate(ember.tensor(eye), size=(n, m), mode=mode,
                                                  antialias=True)
            np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=f"{n}->{m}")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_interpolate_uint8_is_pytorchs_fixed_point(mode):
    """uint8 bilinear/bicubic/lanczos are PyTorch's int16-weight integer kernels: the same
    bytes, antialias both ways (lanczos requires it), channels 1 to 5, channels-last too."""
    rng = np.random.default_rng(2)
    for c in (1, 3, 5):
        for (h, w), size in (((37, 53), (20, 30)), ((37, 53), (80, 141)), ((9, 10), (9, 31)),
                             ((300, 200), (31, 97))):
            a = rng.integers(0, 256, (2, c, h, w), dtype=np.uint8)
            for aa in (True, False) if mode != "lanczos" else (True,):
                for ac in (False, True) if mode != "lanczos" else (False,):
                    t = torch.nn.functional.interpolate(torch.from_numpy(a), size=size, mode=mode,
                                                        antialias=aa, align_corners=ac)
                    e = ember.nn.functional.interpolate(ember.tensor(a), size=size, mode=mode,
                                                        antialias=aa, align_corners=ac)
                    np.testing.assert_array_equal(e.numpy(), t.numpy(),
                                                  err_msg=f"{c} {h}x{w}->{size} {aa} {ac}")
    cl = torch.from_numpy(rng.integers(0, 256, (1, 4, 16, 16), dtype=np.uint8)).to(
        memory_format=torch.channels_last)
    t = torch.nn.functional.interpolate(cl, size=(5, 7), mode=mode, antialias=True)
    e = ember.nn.functional.interpolate(
        ember.tensor(cl.numpy()).to(memory_format=ember.channels_last), size=(5, 7), mode=mode,
        antialias=True)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e.is_contiguous(memory_format=ember.channels_last) == t.is_contiguous(
        memory_format=torch.channels_last)


def test_interpolate_area_is_adaptive_average_pooling():
    rng = np.random.default_rng(3)
    for shape, kw in (((1, 2, 11), dict(size=4)), ((2, 3, 10, 12), dict(scale_factor=0.3)),
                      ((1, 1, 4, 10, 12), dict(size=(3, 4, 5))),
                      ((1, 2, 10, 12), dict(scale_factor=(0.5, 0.25)))):
        a = rng.standard_normal(shape).astype(np.float32)
        tx = torch.from_numpy(a).requires_grad_()
        ex = ember.tensor(a, requires_grad=True)
        ty = torch.nn.functional.interpolate(tx, mode="area", **kw)
        ey = ember.nn.functional.interpolate(ex, mode="area", **kw)
        np.testing.assert_allclose(to_np(ey), to_np(ty), rtol=1e-6, atol=1e-6)
        ty.sum().backward()
        ey.sum().backward()
        np.testing.assert_allclose(to_np(ex.grad), to_np(tx.grad), rtol=1e-6, atol=1e-6)


_F32 = "float32"
INTERPOLATE_ERRORS = [
    ((1, 3, 10, 12), _F32, dict(size=(5, 0), mode="bilinear")),
    ((1, 3, 10, 12), _F32, dict(size=(5, 0), mode="bilinear", antialias=True)),
    ((1, 3, 12), _F32, dict(size=0, mode="linear")),
    ((1, 1, 3, 10, 12), _F32, dict(size=(5, 0, 3), mode="trilinear")),
    ((1, 0, 4, 4), _F32, dict(size=(5, 7), mode="bilinear")),
    ((1, 0, 4), _F32, dict(size=5, mode="nearest")),
    ((3, 10), _F32, dict(size=3, mode="area")),
    ((3, 10), _F32, dict(size=3, mode="lanczos")),
    ((1, 3, 10, 12), _F32, dict(size=(5, 7), mode="lanczos")),
    ((1, 3, 10, 12), _F32, dict(size=(5, 7), mode="lanczos", antialias=True,
                                align_corners=True)),
    ((1, 3, 10), _F32, dict(size=5, mode="lanczos", antialias=True)),
    ((1, 3, 10), _F32, dict(size=5, mode="linear", antialias=True)),
    ((1, 3, 10, 12), _F32, dict(size=(5, 7), mode="area", antialias=True)),
    ((1, 3, 10, 12), _F32, dict(size=(5, 2.5), mode="bilinear")),
    ((1, 3, 10, 12), _F32, dict(size=(5, 2), mode="bilinear", recompute_scale_factor=True)),
    ((1, 3, 10, 12), _F32, dict(size=(5,), mode="bilinear")),
    ((1, 3, 10, 12), _F32, dict(scale_factor=(5,), mode="bilinear")),
    ((1, 3, 10), "uint8", dict(size=5, mode="linear")),
    ((1, 3, 10, 12), "uint8", dict(size=(5, 7), mode="area")),
    ((1, 3, 10, 12), "int16", dict(size=(5, 7), mode="bicubic")),
    ((1, 3, 10, 12), "int16", dict(size=(100, 70), mode="bilinear")),
    ((1, 3, 10, 12), "int16", dict(size=(5, 7), mode="bilinear")),
    ((1, 3, 10, 12), "float16", dict(size=(5, 7), mode="bilinear", antialias=True)),
    ((1, 3, 10, 12), "complex64", dict(size=(5, 7), mode="bicubic", antialias=True)),
    ((1, 3, 10, 12), _F32, dict(size=(5, 7), mode="bogus")),
    ((1, 3, 10, 12, 3, 3), _F32, dict(size=(5, 7, 1, 1), mode="nearest")),
    ((1, 3, 10), _F32, dict(size=5, mode="bilinear")),
    ((1, 3, 10), _F32, dict(size=5, mode="bicubic")),
    ((1, 3, 10, 4, 4), _F32, dict(size=(5, 2, 2), mode="bicubic")),
    ((1, 3, 10, 4), _F32, dict(size=(5, 2), mode="trilinear")),
    ((1, 3, 10, 4), _F32, dict(size=(5, 2), mode="linear")),
]


@pytest.mark.parametrize("shape,dtype,kw", INTERPOLATE_ERRORS,
                         ids=[f"{s}-{d}-{k}" for s, d, k in INTERPOLATE_ERRORS])
def test_interpolate_errors_are_pytorchs(shape, dtype, kw):
    a = np.zeros(shape, dtype=dtype)
    with pytest.raises(Exception) as expected:
        torch.nn.functional.interpolate(torch.from_numpy(a), **kw)
    with pytest.raises(type(expected.value)) as got:
        ember.nn.functional.interpolate(ember.tensor(a), **kw)
    assert str(got.value) == str(expected.value)
