"""ember.nn.utils fusion: a convolution or linear layer and the batch norm after it folded
into one layer (eval mode), against the unfused pair and, where installed, PyTorch."""

import numpy as np
import pytest
from testutils import assert_allclose

import ember
import ember.nn as nn
from ember.nn.utils import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval


def _trained_bn(bn):
    with ember.no_grad():
        bn.running_mean.copy_(ember.randn(bn.num_features))
        bn.running_var.copy_(ember.rand(bn.num_features) + 0.5)
        bn.weight.copy_(ember.randn(bn.num_features))
        bn.bias.copy_(ember.randn(bn.num_features))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval(bias):
    conv = nn.Conv2d(3, 4, 3, bias=bias).eval()
    bn = _trained_bn(nn.BatchNorm2d(4))
    x = ember.randn(2, 3, 6, 6)
    fused = fuse_conv_bn_eval(conv, bn)
    assert type(fused) is nn.Conv2d and fused is not conv and fused.bias is not None
    assert_allclose(fused(x), bn(conv(x)), rtol=1e-4, atol=1e-5)


def test_fuse_conv_transpose_bn_eval():
    conv = nn.ConvTranspose2d(3, 4, 2).eval()
    bn = _trained_bn(nn.BatchNorm2d(4))
    x = ember.randn(2, 3, 5, 5)
    assert_allclose(fuse_conv_bn_eval(conv, bn, transpose=True)(x), bn(conv(x)),
                    rtol=1e-4, atol=1e-5)


def test_fuse_linear_bn_eval_and_training_refused():
    linear = nn.Linear(5, 3).eval()
    bn = _trained_bn(nn.BatchNorm1d(3))
    x = ember.randn(4, 5)
    assert_allclose(fuse_linear_bn_eval(linear, bn)(x), bn(linear(x)), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_linear_bn_eval(nn.Linear(5, 3), bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        fuse_linear_bn_eval(linear, _trained_bn(nn.BatchNorm1d(2)))


def test_fuse_conv_bn_weights_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import fusion as tfusion

    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((4, 2, 3, 3)), rng.standard_normal(4),
              rng.standard_normal(4), rng.random(4) + 0.5, rng.standard_normal(4),
              rng.standard_normal(4)]
    w, b, rm, rv, bw, bb = (ember.tensor(a) for a in arrays)
    tw, tb, trm, trv, tbw, tbb = (torch.tensor(a) for a in arrays)
    for e_args, t_args in [((w, b, rm, rv, 1e-5, bw, bb), (tw, tb, trm, trv, 1e-5, tbw, tbb)),
                           ((w, None, rm, rv, 1e-3, None, None),
                            (tw, None, trm, trv, 1e-3, None, None))]:
        ew, eb = fuse_conv_bn_weights(*e_args)
        t_w, t_b = tfusion.fuse_conv_bn_weights(*t_args)
        assert isinstance(ew, nn.Parameter) and isinstance(eb, nn.Parameter)
        assert_allclose(ew, t_w, rtol=1e-12)
        assert_allclose(eb, t_b, rtol=1e-12)
