"""``Module.to(memory_format=...)``: 4-d and 5-d parameters and buffers take the layout, as in
PyTorch; the module computes the same values and gradients afterwards."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.testing import assert_close

CL = ember.channels_last


def _net(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.Flatten(), nn.Linear(24, 5))


def _strides(module):
    return {n: t.stride() for n, t in [*module.named_parameters(), *module.named_buffers()]}


def test_strides_match_torch():
    torch = pytest.importorskip("torch")
    net = _net()
    tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 6, 3),
                               torch.nn.Flatten(), torch.nn.Linear(24, 5))
    assert net.to(memory_format=CL) is net
    tnet.to(memory_format=torch.channels_last)
    assert _strides(net) == _strides(tnet)
    assert net[0].weight.stride() == (27, 1, 9, 3)
    net.to(memory_format=ember.contiguous_format)
    tnet.to(memory_format=torch.contiguous_format)
    assert _strides(net) == _strides(tnet)


def test_parameters_keep_identity_and_values():
    net = _net()
    weight = net[0].weight
    before = weight.detach().numpy().copy()
    net.to(memory_format=CL)
    assert net[0].weight is weight and isinstance(weight, nn.Parameter)
    assert weight.requires_grad and weight.is_contiguous(memory_format=CL)
    assert np.array_equal(weight.detach().numpy(), before)


def test_dtype_and_memory_format_together():
    net = _net().to(ember.float64, memory_format=CL)
    assert net[0].weight.dtype is ember.float64 and net[0].weight.stride() == (27, 1, 9, 3)
    assert net[1].num_batches_tracked.dtype is ember.int64
    net.to("cpu", memory_format=CL)
    assert net[0].weight.stride() == (27, 1, 9, 3)


def test_channels_last_module_computes_the_same():
    x = ember.randn(2, 3, 8, 8)
    ref, net = _net(), _net()
    net.to(memory_format=CL)
    outs, grads = [], []
    for module, inp in ((ref, x), (net, x.contiguous(memory_format=CL))):
        inp = inp.detach().requires_grad_()
        out = module(inp)
        out.sum().backward()
        outs.append(out)
        grads.append([inp.grad] + [p.grad for p in module.parameters()])
    assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    for a, b in zip(*grads):
        assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_optimizer_step_on_channels_last_parameters():
    net = _net().to(memory_format=CL)
    opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    before = net[0].weight.detach().numpy().copy()
    net(ember.randn(2, 3, 8, 8).contiguous(memory_format=CL)).sum().backward()
    grad = net[0].weight.grad.numpy().copy()
    opt.step()
    assert np.allclose(net[0].weight.detach().numpy(), before - 0.1 * grad, atol=1e-6)


def test_channels_last_3d_and_rank_errors():
    conv3d = nn.Conv3d(2, 3, 3).to(memory_format=ember.channels_last_3d)
    assert conv3d.weight.stride() == (54, 1, 18, 6, 2)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        nn.Conv3d(2, 3, 3).to(memory_format=CL)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        nn.Conv2d(2, 3, 3).to(memory_format=ember.channels_last_3d)
    with pytest.raises(TypeError, match="argument 'memory_format' must be ember.memory_format"):
        nn.Linear(2, 3).to(memory_format="channels_last")
