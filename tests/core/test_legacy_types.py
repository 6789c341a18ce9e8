"""The legacy constructors: ``ember.FloatTensor`` & co., ``ember.Tensor(...)``,
``Tensor.type()`` and ``ember.autograd.Variable``, side by side with PyTorch's."""

import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import Variable

TYPES = {
    "FloatTensor": ember.float32, "DoubleTensor": ember.float64, "HalfTensor": ember.float16,
    "LongTensor": ember.int64, "IntTensor": ember.int32, "ShortTensor": ember.int16,
    "CharTensor": ember.int8, "ByteTensor": ember.uint8, "BoolTensor": ember.bool,
}


def _same_as_torch(t, tt):
    assert tuple(t.shape) == tuple(tt.shape)
    assert str(t.dtype).split(".")[1] == str(tt.dtype).split(".")[1]
    assert t.stride() == tt.stride()


# -- constructing ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TYPES))
def test_each_type_makes_tensors_of_its_dtype(name):
    torch = pytest.importorskip("torch")
    cls, tcls = getattr(ember, name), getattr(torch, name)
    for args in [(2, 3), ([1, 0, 1],), ((1, 1),), ([],), (), (ember.Size([2, 3]),),
                 (np.array([1, 0]),), ([[1, 0], [0, 1]],)]:
        targs = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        t = cls(*args)
        assert type(t) is ember.Tensor and t.dtype is TYPES[name]
        _same_as_torch(t, tcls(*targs))
        if args and not isinstance(args[0], (int, ember.Size)):
            assert np.array_equal(t.numpy(), tcls(*targs).numpy())
    assert cls.dtype is TYPES[name]
    assert repr(cls) == f"<class 'ember.{name}'>"


def test_data_is_converted_to_the_type():
    assert ember.LongTensor([1.5, 2]).tolist() == [1, 2]
    assert ember.FloatTensor(np.array([1, 2])).dtype is ember.float32
    assert ember.FloatTensor(ember.Size([])).shape == ()
    assert ember.FloatTensor(2, 3, device="cpu").shape == (2, 3)


def test_a_tensor_argument_gives_an_alias():
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    a = ember.FloatTensor(t)
    assert a is not t and a.data_ptr() == t.data_ptr()
    assert type(a.grad_fn).__name__ == "AliasBackward0"
    with ember.no_grad():
        a.add_(1)
    assert t.tolist() == [2.0, 3.0] and t._version == a._version == 1


def test_constructor_errors_are_pytorchs():
    torch = pytest.importorskip("torch")
    cases = [(ember.tensor([1, 2]),), (ember.tensor([1.0], dtype=ember.float64),), (2.5,),
             ("a",), (True,), (np.float64(2),), (2, 3.0), (-1,), ([1], [2])]
    for i, args in enumerate(cases):
        targs = tuple(torch.from_numpy(a.numpy()) if isinstance(a, ember.Tensor) else a
                      for a in args)
        with pytest.raises(Exception) as expected:
            torch.FloatTensor(*targs)
        with pytest.raises(type(expected.value)) as got:
            ember.FloatTensor(*args)
        if i < len(cases) - 1:  # the last one's message lists all of torch's signatures
            assert str(got.value) == str(expected.value)


def test_other_device_types_are_refused(testdev):
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: testdev was passed"):
        ember.FloatTensor(2, device=testdev)
    with pytest.raises(TypeError, match=r"device=cpu.*\(got TensorOptions\(dtype=float, "
                                        r"device=testdev"):
        ember.FloatTensor(ember.ones(2, device=testdev))
    with pytest.raises(TypeError):
        ember.FloatTensor([1], dtype=ember.float64)


def test_tensor_legacy_constructor():
    torch = pytest.importorskip("torch")
    for args in [(2, 3), ([1.0, 2.0],), ((2, 3),), (), (ember.Size([2, 3]),)]:
        targs = tuple(torch.Size(a) if isinstance(a, ember.Size) else a for a in args)
        _same_as_torch(ember.Tensor(*args), torch.Tensor(*targs))
    i = ember.tensor([1, 2])
    alias = ember.Tensor(i)
    assert alias.dtype is ember.int64 and alias.data_ptr() == i.data_ptr()
    assert ember.Tensor(2, dtype=ember.float64).dtype is ember.float64


# -- isinstance and type() -----------------------------------------------------------------------

def test_isinstance_checks_dtype_and_device(testdev):
    x = ember.zeros(2)
    assert isinstance(x, ember.FloatTensor)
    assert not isinstance(x, ember.DoubleTensor)
    assert isinstance(x.double(), ember.DoubleTensor)
    assert isinstance(ember.nn.Parameter(ember.zeros(2)), ember.FloatTensor)
    assert not isinstance(x.to(testdev), ember.FloatTensor)
    assert not isinstance([1.0], ember.FloatTensor)
    assert not issubclass(ember.FloatTensor, ember.Tensor)
    assert type(ember.FloatTensor(2)) is ember.Tensor
    assert not ember.FloatTensor.is_cuda and not ember.FloatTensor.is_sparse


def test_legacy_types_pickle_by_reference():
    assert pickle.loads(pickle.dumps(ember.LongTensor)) is ember.LongTensor


@pytest.mark.parametrize("name", list(TYPES))
def test_type_names_and_conversions(name):
    torch = pytest.importorskip("torch")
    t = ember.zeros(2, dtype=TYPES[name])
    assert t.type() == f"ember.{name}"
    assert torch.zeros(2, dtype=getattr(torch, str(TYPES[name]).split(".")[1])).type() == \
        f"torch.{name}"
    x = ember.ones(3)
    for spec in (getattr(ember, name), f"ember.{name}", f"torch.{name}", TYPES[name]):
        assert x.type(spec).dtype is TYPES[name]
    assert ember.typename(t) == f"ember.{name}"


def test_type_to_the_same_type_is_no_copy():
    x = ember.ones(3)
    assert x.type(ember.FloatTensor) is x
    assert x.type("torch.FloatTensor") is x


def test_type_moves_between_devices(testdev):
    x = ember.ones(2, device=testdev)
    assert x.type() == "ember.testdev.FloatTensor"
    assert x.type("ember.testdev.DoubleTensor").device == testdev
    y = x.type("torch.DoubleTensor")
    assert y.device.type == "cpu" and y.dtype is ember.float64
    assert ember.ones(2).type("ember.testdev.LongTensor").device.type == "testdev"
    assert ember.ones(2, dtype=ember.int64).type(ember.Tensor).dtype is ember.float32


def test_invalid_types_raise_pytorchs_error():
    torch = pytest.importorskip("torch")
    x, tx = ember.ones(2), torch.ones(2)
    for spec, tspec in [("DoubleTensor", "DoubleTensor"), ("torch.Foo", "torch.Foo"),
                        ("torch.float64", "torch.float64"), (np.float64, np.float64),
                        (int, int), ("ember.nodevice.FloatTensor", "torch.nodevice.FloatTensor")]:
        with pytest.raises(ValueError) as expected:
            tx.type(tspec)
        with pytest.raises(ValueError) as got:
            x.type(spec)
        assert str(got.value) == str(expected.value).replace("torch.nodevice", "ember.nodevice")


# -- Variable --------------------------------------------------------------------------------

def test_variable_returns_a_tensor_sharing_data():
    t = ember.ones(3)
    v = Variable(t)
    assert type(v) is ember.Tensor and v is not t
    assert v.data_ptr() == t.data_ptr() and not v.requires_grad and v.is_leaf
    v.add_(1)
    assert t.tolist() == [2.0, 2.0, 2.0] and t._version == 1
    w = Variable(t, requires_grad=True)
    assert w.requires_grad and not t.requires_grad
    assert Variable(t, True).requires_grad


def test_variable_detaches_a_non_leaf():
    a = ember.ones(2, requires_grad=True)
    v = Variable(a * 2)
    assert v.grad_fn is None and not v.requires_grad
    (Variable(a * 2, requires_grad=True) * 3).sum().backward()
    assert a.grad is None


def test_variable_volatile_only_warns():
    with pytest.warns(UserWarning, match=r"^volatile was removed and now has no effect. Use "
                                         r"`with ember.no_grad\(\):` instead.$"):
        v = Variable(ember.ones(2), volatile=True)
    assert not v.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Variable(ember.ones(2), volatile=False)


def test_variable_isinstance_and_errors():
    assert isinstance(ember.ones(2), Variable)
    assert isinstance(ember.nn.Parameter(ember.ones(2)), Variable)
    assert not isinstance(3, Variable)
    assert not issubclass(ember.Tensor, Variable)
    assert Variable.__module__ == "ember.autograd.variable"
    assert ember.autograd.variable.Variable is Variable
    empty = Variable()
    assert empty.shape == (0,) and empty.dtype is ember.float32
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        Variable(ember.ones(2, dtype=ember.int64), requires_grad=True)
