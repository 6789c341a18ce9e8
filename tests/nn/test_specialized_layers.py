"""Specialized layers and functions beyond the common set: 3-D pools, fractional max pools,
AdaptiveLogSoftmaxWithLoss, ChannelShuffle, CrossMapLRN2d; channel_shuffle, pdist, conv_tbc
and gumbel_softmax. Float64 gradchecks, NumPy references, the test device, and PyTorch parity
(values, gradients, state_dict keys, reprs, errors)."""

import numpy as np
import pytest
from testutils import t64

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.nn.utils.stateless import functional_call
from ember.testing import register_test_device

RNG = np.random.default_rng(11)


@pytest.fixture
def testdev():
    register_test_device("testdev")
    return ember.device("testdev", 0)


# -- channel_shuffle --------------------------------------------------------------------------

def test_channel_shuffle_interleaves_groups():
    x = ember.arange(6).reshape(1, 6, 1)
    assert F.channel_shuffle(x, 2).flatten().tolist() == [0, 3, 1, 4, 2, 5]
    assert F.native_channel_shuffle(x, 3).flatten().tolist() == [0, 2, 4, 1, 3, 5]
    assert ember.channel_shuffle(x, 1).flatten().tolist() == list(range(6))
    m = nn.ChannelShuffle(3)
    assert repr(m) == "ChannelShuffle(groups=3)"
    np.testing.assert_array_equal(m(x).numpy(), F.channel_shuffle(x, 3).numpy())
    assert gradcheck(lambda a: F.channel_shuffle(a, 2), (t64(RNG.standard_normal((2, 4, 3))),))


@pytest.mark.parametrize("shape,groups,message", [
    ((6,), 2, "channel_shuffle expects input with > 2 dims, but got input with sizes [6]"),
    ((2, 6), 2, "channel_shuffle expects input with > 2 dims"),
    ((2, 6, 4), 0, "Number of groups to divide channels in must be positive. Value of groups:0"),
    ((2, 6, 4), 4, "Number of channels must be divisible by groups. Got 6 channels and 4 groups."),
])
def test_channel_shuffle_errors(shape, groups, message):
    with pytest.raises(RuntimeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        F.channel_shuffle(ember.zeros(shape), groups)


# -- pdist ------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3, float("inf")])
def test_pdist_is_the_upper_triangle_of_cdist(p):
    x = RNG.standard_normal((5, 3))
    x[3] = x[1]  # a zero distance: the norm's kink
    out = F.pdist(t64(x, False), p).numpy()
    i, j = np.triu_indices(5, 1)
    d = x[i] - x[j]
    ref = (d != 0).sum(-1) if p == 0 else np.linalg.norm(d, ord=p, axis=-1)
    np.testing.assert_allclose(out, ref, atol=1e-12)
    if p not in (0, 1, float("inf")):  # non-smooth ones: kinks at ties
        assert gradcheck(lambda a: F.pdist(a, p), (t64(RNG.standard_normal((4, 3))),))


def test_pdist_edge_sizes_and_errors():
    assert F.pdist(ember.zeros(1, 3)).shape == (0,)
    assert F.pdist(ember.zeros(0, 3)).shape == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(ember.zeros(4))
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        F.pdist(ember.zeros(4, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(ember.zeros(4, 3), -1)


# -- conv_tbc ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_is_a_time_major_conv1d(pad):
    x, w, b = RNG.standard_normal((6, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)
    out = F.conv_tbc(t64(x, False), t64(w, False), t64(b, False), pad).numpy()
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    ref = sum(np.einsum("tbc,co->tbo", xp[k:k + out.shape[0]], w[k]) for k in range(3)) + b
    np.testing.assert_allclose(out, ref, atol=1e-12)
    assert gradcheck(lambda *a: F.conv_tbc(*a, pad), (t64(x), t64(w), t64(b)))


def test_conv_tbc_errors():
    x, w, b = ember.zeros(5, 2, 3), ember.zeros(3, 3, 4), ember.zeros(4)
    cases = [((ember.zeros(5, 2), w, b), "Input must have 3 dims: time, batch, in_channel"),
             ((x, ember.zeros(3, 3), b), "Weight tensor must have 3 dims"),
             ((x, w, ember.zeros(4, 1)), "Bias must be 1-D"),
             ((x, ember.zeros(3, 2, 4), b), "Input dim 2 \\(input channels\\) is not == dim 1"),
             ((x, w, ember.zeros(3)), "Bias size must equal dim 2 in the weight tensor"),
             ((ember.zeros(2, 2, 3), ember.zeros(7, 3, 4), b),
              r"negative dimension -4: \[-4, 2, 4\]")]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            F.conv_tbc(*args)
    assert F.conv_tbc(ember.zeros(2, 2, 3), ember.zeros(7, 3, 4), b, 2).shape == (0, 2, 4)


# -- gumbel_softmax ---------------------------------------------------------------------------

def test_gumbel_softmax_soft_and_hard():
    logits = t64(RNG.standard_normal((6, 5)))
    ember.manual_seed(0)
    soft = F.gumbel_softmax(logits, tau=0.5)
    ember.manual_seed(0)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_array_equal(h.argmax(-1), soft.detach().numpy().argmax(-1))
    w = t64(RNG.standard_normal((6, 5)), False)
    (g_soft,) = ember.autograd.grad((soft * w).sum(), logits)
    (g_hard,) = ember.autograd.grad((hard * w).sum(), logits)
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy())  # straight-through


def test_gumbel_softmax_dim_samples_and_eps_warning():
    logits = ember.tensor([[0.0, 8.0, 0.0]]).repeat(2000, 1).t()  # classes along dim 0
    counts = F.gumbel_softmax(logits, hard=True, dim=0).sum(1).numpy()
    p = np.exp(8.0) / (np.exp(8.0) + 2)
    assert abs(counts[1] / 2000 - p) < 0.01  # the argmax is a sample of softmax(logits)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


# -- CrossMapLRN2d ----------------------------------------------------------------------------

def test_cross_map_lrn2d_windows_and_gradcheck():
    m = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=2.0)
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=2.0)"
    x = RNG.standard_normal((2, 5, 2, 3))
    out = m(t64(x, False)).numpy()
    # PyTorch's running sums: channel c sums the squares of channels {0} and [c-1, c+1]
    windows = [[0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 2, 3, 4], [0, 3, 4]]
    scale = np.stack([(x[:, w] ** 2).sum(1) for w in windows], 1) * 0.5 / 3 + 2.0
    np.testing.assert_allclose(out, x * scale ** -0.75, atol=1e-12)
    assert gradcheck(m, (t64(x),))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D"):
        m(ember.zeros(2, 3, 4))


# -- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------

def make_asm(**kwargs):
    return nn.AdaptiveLogSoftmaxWithLoss(8, 12, [3, 7], div_value=2.0, dtype=ember.float64,
                                         **kwargs)


def test_adaptive_log_softmax_is_a_distribution():
    asm = make_asm(head_bias=True)
    assert [tuple(p.shape) for p in asm.parameters()] == [(5, 8), (5,), (4, 8), (4, 4),
                                                          (2, 8), (5, 2)]
    x = t64(RNG.standard_normal((6, 8)), False)
    target = ember.tensor([0, 2, 3, 6, 7, 11])
    logp = asm.log_prob(x)
    np.testing.assert_allclose(logp.exp().sum(1).detach().numpy(), 1.0)
    out = asm(x, target)
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.detach().numpy(),
                               logp.detach().numpy()[np.arange(6), target.numpy()])
    np.testing.assert_allclose(out.loss.item(), -out.output.mean().item())
    single = asm(x[0], target[0])
    assert single.output.shape == () and np.isclose(single.output.item(), out.output[0].item())
    with ember.no_grad():  # rows with x[:, 0] > 0 prefer the first cluster, then all rows do
        asm.head.weight.zero_()
        asm.head.weight[3, 0] = 50.0
        x[:, 0] = ember.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], dtype=ember.float64)
    for bias in (0.0, 100.0):
        with ember.no_grad():
            asm.head.bias[3] = bias
        predicted = asm.predict(x).numpy()
        np.testing.assert_array_equal(predicted, asm.log_prob(x).argmax(1).numpy())
        assert (predicted >= 3).sum() == (3 if bias == 0 else 6)


def test_adaptive_log_softmax_gradcheck():
    asm = make_asm()
    target = ember.tensor([1, 4, 9, 11])
    names = [name for name, _ in asm.named_parameters()]

    def output(x, *weights):
        return functional_call(asm, dict(zip(names, weights)), (x, target)).output

    x = t64(RNG.standard_normal((4, 8)))
    assert gradcheck(output, (x, *(t64(p.detach().numpy()) for p in asm.parameters())))


def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [5, 3], [0, 4], [3, 12], [3, 3]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            nn.AdaptiveLogSoftmaxWithLoss(8, 12, cutoffs)
    asm = make_asm()
    x = ember.zeros(3, 8, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 11\], but values "
                                           r"in range \[0, 12\] were found"):
        asm(x, ember.tensor([0, 5, 12]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        asm(x, ember.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        asm(x, ember.zeros(3, 1, dtype=ember.int64))


# -- fractional max pool layers ---------------------------------------------------------------

def test_fractional_max_pool_layers():
    samples = ember.rand(2, 3, 2, dtype=ember.float64)
    m = nn.FractionalMaxPool2d(2, output_size=(4, 3), return_indices=True,
                               _random_samples=samples)
    assert list(m.state_dict()) == ["_random_samples"] and repr(m) == "FractionalMaxPool2d()"
    x = t64(RNG.standard_normal((2, 3, 8, 7)))
    out, idx = m(x)
    ref = F.fractional_max_pool2d(x, 2, (4, 3), return_indices=True, _random_samples=samples)
    np.testing.assert_array_equal(idx.numpy(), ref[1].numpy())
    assert gradcheck(nn.FractionalMaxPool2d(2, output_size=3, _random_samples=samples), (x,))
    m3 = nn.FractionalMaxPool3d((2, 1, 2), output_ratio=0.5)
    assert m3.output_ratio == (0.5, 0.5, 0.5) and list(m3.state_dict()) == []
    assert m3(ember.zeros(1, 2, 6, 4, 8)).shape == (1, 2, 3, 2, 4)
    for kwargs, message in (({}, "requires specifying either an output size"),
                            ({"output_size": 2, "output_ratio": 0.5}, "only one of"),
                            ({"output_ratio": 1.0}, "output_ratio must be between 0 and 1")):
        with pytest.raises(ValueError, match=message):
            nn.FractionalMaxPool2d(2, **kwargs)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0, but got 0"):
        nn.FractionalMaxPool3d(0, output_ratio=0.5)


def test_3d_pool_layers_delegate():
    x = t64(RNG.standard_normal((1, 2, 4, 5, 6)))
    cases = [(nn.MaxPool3d(2, 1, 1), lambda a: F.max_pool3d(a, 2, 1, 1)),
             (nn.AvgPool3d(3, 2, 1, count_include_pad=False),
              lambda a: F.avg_pool3d(a, 3, 2, 1, count_include_pad=False)),
             (nn.AdaptiveAvgPool3d((2, None, 3)), lambda a: F.adaptive_avg_pool3d(a, (2, 5, 3))),
             (nn.AdaptiveMaxPool3d(2), lambda a: F.adaptive_max_pool3d(a, 2)),
             (nn.LPPool3d(2, 2), lambda a: F.lp_pool3d(a, 2.0, 2))]
    for module, fn in cases:
        np.testing.assert_array_equal(module(x).detach().numpy(), fn(x).detach().numpy())
        assert gradcheck(module, (x,))
    out, idx = nn.MaxPool3d(2, return_indices=True)(x)
    back = nn.MaxUnpool3d(2)(out, idx, output_size=x.shape)
    assert back.shape == x.shape
    assert nn.MaxUnpool3d(2).kernel_size == (2, 2, 2)


# -- the test device --------------------------------------------------------------------------

def test_layers_and_functions_on_the_test_device(testdev):
    x = ember.randn(2, 4, 6, 6, 6, dtype=ember.float64).to(testdev).requires_grad_()
    asm = make_asm().to(testdev)
    layers = [nn.MaxPool3d(2), nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(2), nn.LPPool3d(2, 2),
              nn.AdaptiveMaxPool3d(3), nn.FractionalMaxPool3d(2, output_size=3),
              nn.ChannelShuffle(2)]
    total = sum(m(x).sum() for m in layers)
    total = total + nn.CrossMapLRN2d(3)(x[:, :, 0]).sum() + F.pdist(x[0, :, 0, 0]).sum()
    total = total + F.gumbel_softmax(x[0, 0, 0], hard=True).sum()
    total = total + F.conv_tbc(x[0, 0], x[0, 1, :3], x[0, 2, 0, 0]).sum()
    target = ember.tensor([0, 9]).to(testdev)
    features = x[:, :2, :2, :2, 0].reshape(2, 8)
    total = total + asm(features, target).loss
    total.backward()
    assert x.grad.device == testdev and asm.head.weight.grad.device == testdev
    assert asm.predict(features).device == testdev


# -- PyTorch parity ---------------------------------------------------------------------------

LAYERS = [
    ("MaxPool3d", (2, 1, 1, 2, True, True), {}),
    ("AvgPool3d", (3, 2, 1, True, False, 5), {}),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}),
    ("AdaptiveMaxPool3d", (2, True), {}),
    ("MaxUnpool3d", (2,), {}),
    ("LPPool3d", (2, 3, 2), {}),
    ("FractionalMaxPool2d", (3,), {"output_ratio": 0.5}),
    ("FractionalMaxPool3d", (2,), {"output_size": (3, 2, 3)}),
    ("ChannelShuffle", (3,), {}),
    ("CrossMapLRN2d", (5, 1e-2, 0.75, 2.0), {}),
    ("AdaptiveLogSoftmaxWithLoss", (16, 20, [4, 10, 15]), {"div_value": 2.0, "head_bias": True}),
]


@pytest.mark.parity
@pytest.mark.parametrize("name,args,kwargs", LAYERS)
def test_layer_repr_and_state_dict_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert type(ours).__module__.replace("ember", "torch") == type(theirs).__module__


@pytest.mark.parity
def test_adaptive_log_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0).double()
    ours = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0,
                                         dtype=ember.float64)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((9, 16))
    target = np.array([0, 3, 4, 9, 10, 14, 15, 19, 2])
    t_out = theirs(torch.tensor(x), torch.tensor(target))
    e_out = ours(ember.tensor(x), ember.tensor(target))
    np.testing.assert_allclose(e_out.output.detach().numpy(), t_out.output.detach().numpy())
    t_out.loss.backward()
    e_out.loss.backward()
    for (name, p), q in zip(theirs.named_parameters(), ours.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), atol=1e-14, err_msg=name)
    np.testing.assert_allclose(ours.log_prob(ember.tensor(x)).detach().numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy())
    np.testing.assert_array_equal(ours.predict(ember.tensor(x)).numpy(),
                                  theirs.predict(torch.tensor(x)).numpy())


@pytest.mark.parity
@pytest.mark.parametrize("name,make_args", [
    ("channel_shuffle", lambda: (RNG.standard_normal((2, 6, 3, 2)), 3)),
    ("native_channel_shuffle", lambda: (RNG.standard_normal((2, 4, 5)), 2)),
    ("pdist", lambda: (RNG.standard_normal((6, 4)), 1.5)),
    ("conv_tbc", lambda: (RNG.standard_normal((7, 2, 3)), RNG.standard_normal((3, 3, 4)),
                          RNG.standard_normal(4), 1)),
])
def test_functions_match_torch(name, make_args):
    torch = pytest.importorskip("torch")
    args = make_args()
    wrap = [(torch.tensor(a, requires_grad=True), t64(a)) if isinstance(a, np.ndarray)
            else (a, a) for a in args]
    ref = getattr(torch.nn.functional, name)(*(t for t, _ in wrap))
    out = getattr(F, name)(*(e for _, e in wrap))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    w = RNG.standard_normal(tuple(ref.shape))
    if name != "native_channel_shuffle":  # PyTorch's has no backward
        (ref * torch.tensor(w)).sum().backward()
        (out * ember.tensor(w)).sum().backward()
        for t, e in wrap:
            if isinstance(e, ember.Tensor):
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-12)


@pytest.mark.parity
def test_cross_map_lrn2d_values_match_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 9, 3, 3))
    for size in (3, 4, 5):
        theirs = torch.nn.CrossMapLRN2d(size, 1e-1, 0.75, 1.5)(torch.tensor(x)).numpy()
        ours = nn.CrossMapLRN2d(size, 1e-1, 0.75, 1.5)(ember.tensor(x)).numpy()
        np.testing.assert_allclose(ours, theirs, atol=1e-12)
