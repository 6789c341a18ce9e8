"""``ember._subclasses.fake_tensor``: FakeTensorMode over the meta device."""

import pytest

import ember
from ember._subclasses import FakeTensor, FakeTensorMode
from ember._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    unset_fake_temporarily,
)


def _shapes(t, mode_cls):
    nn = t.nn
    with mode_cls():
        net = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.BatchNorm2d(16), nn.ReLU(),
                            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
        out = net(t.randn(8, 3, 32, 32))
        h = t.randn(4, 5, 16)
        att = nn.MultiheadAttention(16, 2, batch_first=True)(h, h, h)[0]
        emb = nn.Embedding(100, 8)(t.arange(6).reshape(2, 3))
        ints = t.tensor([1, 2, 3]) * 2
        half = t.randn(3, dtype=t.float64).float()
        results = [out, att, emb, ints, half]
        kinds = [type(r).__name__ for r in results]
        param_kinds = {type(p).__name__ for p in net.parameters()}
    meta = [(tuple(r.shape), str(r.dtype).split(".")[-1]) for r in results]
    return meta, kinds, param_kinds, {r.device.type for r in results}


def test_model_shapes_match_pytorch_and_nothing_is_computed():
    meta, kinds, param_kinds, devices = _shapes(ember, FakeTensorMode)
    assert kinds == ["FakeTensor"] * 5 and param_kinds == {"FakeTensor"}
    assert meta[0] == ((8, 10), "float32") and meta[3] == ((3,), "int64")
    assert devices == {ember.get_default_device().type}  # the device each stands for
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode as TorchFakeMode

    theirs = _shapes(torch, TorchFakeMode)
    assert meta == theirs[0] and kinds == theirs[1]


def test_a_kernel_without_an_aten_op_raises_instead_of_computing_zeros():
    # (Ember's recurrent layers run their own kernels, not one ATen op: no fake LSTM yet)
    with FakeTensorMode():
        lstm = ember.nn.LSTM(8, 12, batch_first=True)
        x = ember.randn(2, 3, 8)
        with pytest.raises(RuntimeError, match="placeholder data of a wrapper subclass"):
            lstm(x)


def test_huge_tensors_cost_nothing_and_ops_outside_the_mode_stay_fake():
    with FakeTensorMode() as mode:
        big = ember.empty(100_000, 100_000)
        w = ember.nn.Linear(100_000, 10)
    y = w(big)  # outside the mode: the fake tensors enter their mode for the call
    assert isinstance(y, FakeTensor) and y.fake_mode is mode and y.shape == (100_000, 10)
    assert big.stride() == (100_000, 1) and big.is_contiguous()
    dev = ember.get_default_device()
    where = "" if dev.type == "cpu" else f"device='{dev}', "
    assert repr(big) == f"FakeTensor(..., {where}size=(100000, 100000))"


def test_from_tensor_keeps_the_metadata():
    real = ember.arange(6.0, device="cpu").reshape(2, 3).t().requires_grad_()
    mode = FakeTensorMode()
    fake = mode.from_tensor(real)
    assert isinstance(fake, FakeTensor) and fake.fake_mode is mode
    assert fake.shape == (3, 2) and fake.stride() == (1, 3) and fake.dtype == ember.float32
    assert fake.device == real.device and fake.requires_grad
    assert mode.from_tensor(fake) is fake
    with mode:
        out = fake * 2 + 1
        x = mode.from_tensor(ember.zeros(3, device="cpu"))
        assert x.add_(1) is x  # an in-place op gives back the fake it changed
    assert isinstance(out, FakeTensor) and out.shape == (3, 2) and out.requires_grad


def test_errors_are_pytorchs():
    real = ember.ones(2, device="cpu")
    with FakeTensorMode():
        x = ember.randn(2)
        with pytest.raises(AssertionError, match="Please convert all Tensors to FakeTensors "
                                                 "first or instantiate FakeTensorMode with "
                                                 "'allow_non_fake_inputs'"):
            x + real
        with pytest.raises(DataDependentOutputException, match="_local_scalar_dense"):
            x.sum().item()
        with pytest.raises(DynamicOutputShapeException, match="nonzero"):
            ember.nonzero(x)
        with pytest.raises(RuntimeError, match="doesn't have storage"):
            x.tolist()
    with FakeTensorMode() as other, pytest.raises(AssertionError, match="Mixing fake modes"):
        x + ember.randn(2)
    assert not other.allow_non_fake_inputs
    with pytest.raises(NotImplementedError, match="static shapes"):
        FakeTensorMode(shape_env=object())


def test_allow_non_fake_inputs_and_unset_fake_temporarily():
    real = ember.ones(2, 3, device="cpu")
    with FakeTensorMode(allow_non_fake_inputs=True):
        y = ember.randn(2, 3) + real
        assert isinstance(y, FakeTensor) and y.shape == (2, 3)
        with unset_fake_temporarily():
            z = ember.ones(2)
        assert type(z) is ember.Tensor and z.tolist() == [1.0, 1.0]
        assert isinstance(ember.ones(2), FakeTensor)
