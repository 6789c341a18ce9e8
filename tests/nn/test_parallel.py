"""ember.nn.parallel: DataParallel and data_parallel on one device.

Without a GPU, DataParallel calls its module as PyTorch's does on a CPU-only machine. The
device path (move the module and the inputs to device_ids[0]) runs here on the NumPy-backed
test device standing in for CUDA, and on a real GPU under the ``gpu`` marker.
"""

import importlib

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.parallel import DataParallel, data_parallel
from ember.nn.utils.stateless import functional_call
from ember.testing import register_test_device

# the module (ember.nn.parallel.data_parallel is the function, as in torch)
dp_module = importlib.import_module("ember.nn.parallel.data_parallel")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(dp_module, "_accelerator_type", lambda: None)


@pytest.fixture
def testdev(monkeypatch):
    """DataParallel runs on 'testdev' (two NumPy-backed devices) as it would on CUDA."""
    register_test_device("testdev", 2)
    monkeypatch.setattr(dp_module, "_accelerator_type", lambda: "testdev")
    return "testdev"


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x, *, extra):
        return {"out": self.fc(x) + extra["bias"], "parts": [x.device, extra["bias"].device]}


def test_cpu_only_calls_the_module(no_gpu):
    inner = nn.Linear(4, 2)
    net = DataParallel(inner)
    assert net.module is inner and net.device_ids == []
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(net(x).detach().numpy(), inner(x).detach().numpy())
    net(x).sum().backward()
    assert inner.weight.grad is not None


def test_state_dict_and_repr_match_torch(no_gpu):
    torch = pytest.importorskip("torch")
    e = DataParallel(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)))
    t = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3),
                                                  torch.nn.BatchNorm1d(3)))
    assert list(e.state_dict()) == list(t.state_dict())
    assert list(e.state_dict())[0] == "module.0.weight"
    assert repr(e) == repr(t)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    np.testing.assert_array_equal(e.module[0].weight.detach().numpy(),
                                  t.module[0].weight.detach().numpy())


def test_moves_module_and_inputs_to_the_device(testdev):
    net = DataParallel(TwoInputs(), device_ids=[1])
    target = ember.device(testdev, 1)
    assert net.device_ids == [1] and net.output_device == 1 and net.src_device_obj == target
    assert net.module.fc.weight.device == target
    out = net(ember.ones(2, 3), extra={"bias": ember.ones(2)})
    assert out["parts"] == [target, target] and out["out"].device == target
    out["out"].sum().backward()
    assert net.module.fc.weight.grad.device == target


def test_default_device_is_zero_and_kwargs_forwarded(testdev):
    net = DataParallel(nn.Linear(3, 1), output_device=ember.device(testdev, 0))
    assert net.device_ids == [0] and net.output_device == 0
    assert net(ember.ones(5, 3)).device == ember.device(testdev, 0)


def test_several_devices_raise(testdev):
    with pytest.raises(RuntimeError, match=r"DataParallel over several devices is not "
                                           r"supported by Ember \(device_ids=\[0, 1\]\).*"
                                           "DistributedDataParallel"):
        DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    with pytest.raises(RuntimeError, match="several devices"):
        data_parallel(nn.Linear(2, 2), ember.ones(1, 2), device_ids=[0, 1])
    assert DataParallel(nn.Linear(2, 2), device_ids=[1, 1]).device_ids == [1]


def test_module_moved_away_raises(testdev):
    net = DataParallel(nn.Linear(2, 2), device_ids=[0])
    net.module.to(ember.device(testdev, 1))
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on "
                                           r"device testdev:0 \(device_ids\[0\]\) but found one "
                                           "of them on device: testdev:1"):
        net(ember.ones(1, 2))


def test_data_parallel_function(testdev, monkeypatch):
    m = nn.Linear(3, 2).to(ember.device(testdev, 1))
    y = data_parallel(m, ember.ones(4, 3), device_ids=[1])
    assert y.device == ember.device(testdev, 1) and y.shape == (4, 2)
    monkeypatch.setattr(dp_module, "_accelerator_type", lambda: None)
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        data_parallel(m, ember.ones(4, 3))


def test_functional_call_refuses_data_parallel(no_gpu):
    net = DataParallel(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="The stateless API can't be used with "
                                           "nn.DataParallel module"):
        functional_call(net, {}, (ember.ones(1, 2),))


@pytest.mark.gpu
def test_on_a_gpu_matches_the_cpu():
    cpu = nn.Linear(8, 4)
    x = ember.randn(16, 8)
    expected = cpu(x).detach().numpy()
    net = DataParallel(cpu, device_ids=[0])
    y = net(x)
    assert y.device == ember.device("cuda", 0)
    np.testing.assert_allclose(y.cpu().detach().numpy(), expected, rtol=1e-5, atol=1e-6)
