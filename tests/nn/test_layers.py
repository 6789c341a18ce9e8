"""ember.nn layers on their own: float64 gradchecks through the modules, init schemes,
buffers and state_dict, train/eval behaviour, in-place flags, devices and errors."""

import math
import re

import numpy as np
import pytest
from testutils import randn64

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.testing import register_test_device

# -- gradients through the modules (float64 finite differences) ----------------------------------

GRAD_CASES = [
    (lambda: nn.Conv1d(2, 3, 3, stride=2, padding=1), (2, 2, 7)),
    (lambda: nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect", groups=2), (1, 2, 5, 5)),
    (lambda: nn.Conv2d(2, 2, 2, padding=1, padding_mode="circular", bias=False), (1, 2, 4, 3)),
    (lambda: nn.Conv3d(1, 2, 2), (1, 1, 3, 3, 3)),
    (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1), (1, 2, 4)),
    (lambda: nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1), (1, 2, 3, 3)),
    (lambda: nn.MaxPool2d(2), (1, 2, 4, 4)),
    (lambda: nn.AvgPool1d(3, 2, 1), (2, 2, 7)),
    (lambda: nn.AdaptiveAvgPool2d((2, 3)), (1, 2, 5, 5)),
    (lambda: nn.BatchNorm1d(3), (4, 3)),
    (lambda: nn.BatchNorm2d(2, momentum=None), (3, 2, 2, 2)),
    (lambda: nn.InstanceNorm1d(2, affine=True), (2, 2, 5)),
    (lambda: nn.LayerNorm((2, 3)), (2, 2, 3)),
    (lambda: nn.GroupNorm(2, 4), (2, 4, 3)),
    (lambda: nn.PReLU(3), (2, 3, 2)),
    (lambda: nn.GELU("tanh"), (3, 4)),
    (lambda: nn.Softmax2d(), (1, 3, 2, 2)),
    (lambda: nn.ReflectionPad2d((1, 0, 2, 1)), (1, 1, 3, 3)),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 1, 3, 3)),
    (lambda: nn.Unfold(2, padding=1), (1, 2, 3, 3)),
    (lambda: nn.Fold((3, 3), 2), (1, 4, 4)),
]


@pytest.mark.parametrize("make,shape", GRAD_CASES)
def test_module_gradcheck_float64(make, shape):
    ember.manual_seed(0)
    m = make().double()
    x = randn64(*shape)
    params = [p for p in m.parameters()]

    def fn(x, *ps):
        return m(x)

    assert gradcheck(fn, (x, *params))


# -- init schemes --------------------------------------------------------------------------------

def test_conv_init_bounds_follow_kaiming_uniform_a_sqrt5():
    ember.manual_seed(0)
    m = nn.Conv2d(8, 16, 3)
    fan_in = 8 * 9
    bound = 1 / math.sqrt(fan_in)   # gain(leaky_relu, sqrt 5) * sqrt(3 / fan_in)
    w = m.weight.detach().detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    b = m.bias.detach().detach().numpy()
    assert np.abs(b).max() <= bound
    t = nn.ConvTranspose2d(8, 4, 3, groups=2)
    assert tuple(t.weight.shape) == (8, 2, 3, 3)
    bound = 1 / math.sqrt(2 * 9)   # fan_in of a transposed weight is its dim 1
    assert np.abs(t.bias.detach().detach().numpy()).max() <= bound


def test_seeded_construction_is_deterministic():
    ember.manual_seed(3)
    a = nn.Conv1d(2, 3, 3).weight.detach().detach().numpy()
    ember.manual_seed(3)
    b = nn.Conv1d(2, 3, 3).weight.detach().detach().numpy()
    np.testing.assert_array_equal(a, b)


def test_norm_layers_init_and_buffers():
    bn = nn.BatchNorm2d(3)
    np.testing.assert_array_equal(bn.weight.detach().detach().numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(bn.bias.detach().detach().numpy(), np.zeros(3, np.float32))
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var",
                                                  "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype == ember.int64 and bn.num_batches_tracked.dim() == 0
    nb = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(nb.state_dict()) == [] and nb.weight is None and nb.running_mean is None
    assert list(nn.InstanceNorm2d(3).state_dict()) == []
    assert list(nn.BatchNorm1d(2, bias=False).state_dict()) == [
        "weight", "running_mean", "running_var", "num_batches_tracked"]
    ln = nn.LayerNorm(4, bias=False)
    assert ln.bias is None and ln.normalized_shape == (4,)


def test_embedding_init_padding_idx_row_is_zero_and_gets_no_grad():
    ember.manual_seed(0)
    e = nn.Embedding(6, 3, padding_idx=-2)
    assert e.padding_idx == 4
    w = e.weight.detach().detach().numpy()
    np.testing.assert_array_equal(w[4], 0)
    assert abs(w[:4].std() - 1) < 0.6
    out = e(ember.tensor([[4, 1, 4]]))
    out.sum().backward()
    g = e.weight.grad.numpy()
    np.testing.assert_array_equal(g[4], 0)
    np.testing.assert_array_equal(g[1], 1)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(6, 3, padding_idx=6)


def test_embedding_max_norm_renormalizes_weight_in_place():
    e = nn.Embedding(4, 3, max_norm=1.0)
    with ember.no_grad():
        e.weight.mul_(10)
    e(ember.tensor([0, 2]))
    norms = np.linalg.norm(e.weight.detach().detach().numpy(), axis=1)
    assert norms[0] <= 1.0 + 1e-5 and norms[2] <= 1.0 + 1e-5 and norms[1] > 1.0


def test_embedding_from_pretrained():
    w = ember.arange(6.0).reshape(3, 2)
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    np.testing.assert_array_equal(e(ember.tensor([2])).detach().numpy(), [[4.0, 5.0]])
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ember.zeros(3))


# -- running statistics --------------------------------------------------------------------------

def test_batchnorm_momentum_none_is_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None)
    batches = [ember.randn(5, 2) * (i + 1) + i for i in range(3)]
    for b in batches:
        bn(b)
    means = np.stack([b.detach().numpy().mean(0) for b in batches])
    variances = np.stack([b.detach().numpy().var(0, ddof=1) for b in batches])
    np.testing.assert_allclose(bn.running_mean.detach().numpy(), means.mean(0), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(bn.running_var.detach().numpy(), variances.mean(0), rtol=1e-5,
                               atol=1e-6)
    assert int(bn.num_batches_tracked) == 3


def test_batchnorm_eval_uses_running_stats_and_train_without_tracking_does_not_update():
    bn = nn.BatchNorm1d(2)
    with ember.no_grad():
        bn.running_mean.fill_(1.0)
        bn.running_var.fill_(4.0)
    bn.eval()
    out = bn(ember.tensor([[3.0, 1.0]]))
    np.testing.assert_allclose(out.detach().numpy(), [[2 / math.sqrt(4 + 1e-5), 0.0]], rtol=1e-6)
    assert int(bn.num_batches_tracked) == 0
    bn2 = nn.BatchNorm1d(2, track_running_stats=False)
    bn2.eval()
    out = bn2(ember.tensor([[3.0, 1.0], [1.0, 3.0]]))   # no stats: batch statistics
    np.testing.assert_allclose(out.detach().numpy(), [[1, -1], [-1, 1]], atol=1e-4)


def test_batchnorm_state_dict_round_trip():
    a, b = nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    a(ember.randn(4, 3, 2, 2))
    b.load_state_dict(a.state_dict())
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[k].detach().numpy(), v.detach().numpy())
    assert int(b.num_batches_tracked) == 1


@pytest.mark.parametrize("m,shape,msg", [
    (nn.BatchNorm1d(3), (2, 3, 2, 2), "expected 2D or 3D input (got 4D input)"),
    (nn.BatchNorm2d(3), (2, 3), "expected 4D input (got 2D input)"),
    (nn.BatchNorm3d(3), (2, 3, 2, 2), "expected 5D input (got 4D input)"),
    (nn.InstanceNorm2d(3), (3, 2), "expected 3D or 4D input (got 2D input)"),
    (nn.InstanceNorm1d(3, affine=True), (2, 4, 5),
     "expected input's size at dim=1 to match num_features (3), but got: 4."),
    (nn.CircularPad1d(1), (3,), "expected 2D or 3D input (got 1D input)"),
    (nn.Softmax2d(), (3, 4), "Softmax2d: expected input to be 3D or 4D, got 2D instead"),
])
def test_input_dim_errors(m, shape, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        m(ember.randn(*shape))


def test_instance_norm_without_affine_warns_on_channel_mismatch_and_handles_unbatched():
    m = nn.InstanceNorm1d(3)
    with pytest.warns(UserWarning, match="does not match num_features"):
        m(ember.randn(2, 4, 5))
    x = ember.randn(3, 6)
    np.testing.assert_allclose(m(x).detach().numpy(), m(x.unsqueeze(0)).squeeze(0).detach().numpy())


# -- constructor errors, train/eval, in-place flags -----------------------------------------------

@pytest.mark.parametrize("make,msg", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, groups=0), "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 4, 3, padding="full"), "Invalid padding string 'full'"),
    (lambda: nn.Conv1d(4, 4, 3, padding="same", stride=2),
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv1d(4, 4, 3, padding_mode="mirror"), "padding_mode must be one of"),
    (lambda: nn.ConvTranspose1d(4, 4, 3, padding_mode="reflect"),
     'Only "zeros" padding mode is supported for ConvTranspose1d'),
    (lambda: nn.GroupNorm(3, 4), r"num_channels \(4\) must be divisible by num_groups \(3\)"),
    (lambda: nn.Dropout(1.5), "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: nn.AlphaDropout(-0.5), "dropout probability has to be between 0 and 1"),
])
def test_constructor_errors(make, msg):
    with pytest.raises(ValueError, match=msg):
        make()


def test_conv_transpose_output_size_errors():
    m = nn.ConvTranspose2d(2, 2, 3, stride=2)
    x = ember.randn(1, 2, 3, 3)
    assert tuple(m(x, output_size=[8, 8]).shape) == (1, 2, 8, 8)
    assert tuple(m(x, output_size=(1, 2, 7, 8)).shape) == (1, 2, 7, 8)
    with pytest.raises(ValueError, match="requested an output size of"):
        m(x, output_size=[9, 9])
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        m(x, output_size=[8])


def test_dropout_train_and_eval():
    m = nn.Dropout(0.5)
    x = ember.ones(1000)
    y = m(x).detach().numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    m.eval()
    assert m(x) is x or np.array_equal(m(x).detach().numpy(), x.detach().numpy())
    d2 = nn.Dropout2d(0.5)
    y = d2(ember.ones(4, 50, 3, 3)).detach().numpy()
    assert np.all(y.reshape(4, 50, 9).std(-1) == 0)   # whole channels dropped


def test_rrelu_train_slopes_in_range_eval_uses_mean():
    m = nn.RReLU(0.1, 0.3)
    x = -ember.ones(500)
    y = -m(x).detach().numpy()
    assert y.min() >= 0.1 and y.max() <= 0.3 and y.std() > 0
    m.eval()
    np.testing.assert_allclose(m(x).detach().numpy(), -0.2, rtol=1e-6)


@pytest.mark.parametrize("cls", [nn.ReLU, nn.ReLU6, nn.SiLU, nn.Mish, nn.Hardswish,
                                 nn.Hardsigmoid, nn.ELU, nn.CELU, nn.SELU, nn.LeakyReLU,
                                 nn.Hardtanh])
def test_inplace_activations_write_into_their_input(cls):
    x = ember.randn(10)
    ref = cls()(x).detach().numpy()
    y = cls(inplace=True)(x)
    np.testing.assert_allclose(x.detach().numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-6)


def test_functional_reexports_nn_signatures():
    x = ember.randn(2, 3, 4, 4)
    assert F.batch_norm(x, ember.zeros(3), ember.ones(3)).shape == x.shape
    assert F.max_pool2d(x, 2).shape == (2, 3, 2, 2)
    assert F.conv2d(x, ember.randn(5, 3, 3, 3)).shape == (2, 5, 2, 2)
    assert F.dropout(x, 0.5, training=False) is x or F.dropout(x, training=False).shape == x.shape
    assert F.unfold(x, 2).shape == (2, 12, 9)
    assert F.embedding(ember.tensor([1]), ember.randn(3, 2)).shape == (1, 2)
    assert F.cross_entropy(ember.randn(2, 3), ember.tensor([0, 2])).dim() == 0
    for name in ("relu", "silu", "mish", "hardswish", "hardsigmoid"):
        y = ember.randn(5)
        ref = getattr(F, name)(y).detach().numpy()
        getattr(F, name)(y, inplace=True)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-6)
    assert {"avg_pool2d", "instance_norm", "fold", "pad", "interpolate"} <= set(F.__all__)


def test_upsample_stores_float_scale_factor():
    assert nn.Upsample(scale_factor=2).scale_factor == 2.0
    assert nn.Upsample(scale_factor=(2, 3)).scale_factor == (2.0, 3.0)
    assert nn.UpsamplingBilinear2d(scale_factor=2).align_corners is True
    y = nn.UpsamplingNearest2d(scale_factor=2)(ember.arange(4.0).reshape(1, 1, 2, 2))
    np.testing.assert_array_equal(y.detach().numpy()[0, 0, :2, :2], [[0, 0], [0, 0]])


# -- devices -------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 4, 4)),
    (lambda: nn.BatchNorm2d(2), (3, 2, 2, 2)),
    (lambda: nn.LayerNorm(4), (2, 4)),
    (lambda: nn.Embedding(5, 3), None),
    (lambda: nn.PReLU(), (2, 3)),
])
def test_layers_keep_the_device(make, shape):
    register_test_device("testdev")
    dev = ember.device("testdev", 0)
    m = make().to(dev)
    x = ember.tensor([1, 4]) if shape is None else ember.randn(*shape)
    out = m(x.to(dev))
    assert out.device == dev
    out.sum().backward()
    for p in m.parameters():
        assert p.grad.device == dev
    for b in m.buffers():
        assert b.device == dev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m(x)
