"""``ember.utils.swap_tensors``: everything about two tensors swaps in place, and PyTorch's
refusals."""

import copyreg
import weakref

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.utils import swap_tensors


def test_values_shapes_dtypes_and_identity():
    a = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    b = ember.tensor([7, 8], dtype=ember.int64)
    ida, idb = id(a), id(b)
    holder = {"a": a, "list": [b]}
    swap_tensors(a, b)
    assert (id(a), id(b)) == (ida, idb)
    assert a.shape == (2,) and a.dtype == ember.int64 and a.tolist() == [7, 8]
    assert b.shape == (2, 3) and b.dtype == ember.float32
    np.testing.assert_array_equal(b.cpu().numpy(), np.arange(6).reshape(2, 3))
    # references held elsewhere are the same objects, so they see the swap
    assert holder["a"].tolist() == [7, 8]
    assert holder["list"][0].shape == (2, 3)


def test_device_swaps(testdev):
    a = ember.ones(2)
    b = ember.zeros(3, device=testdev)
    da, db = a.device, b.device
    swap_tensors(a, b)
    assert a.device == db and b.device == da
    assert a.tolist() == [0.0, 0.0, 0.0] and b.tolist() == [1.0, 1.0]


def test_requires_grad_grad_and_version_counter():
    a = ember.ones(2, requires_grad=True)
    a.grad = ember.full((2,), 5.0)
    b = ember.zeros(2)
    b.add_(1)
    b.add_(1)
    swap_tensors(a, b)
    assert a.grad is None and not a.requires_grad and a._version == 2
    assert b.requires_grad and b.is_leaf and b._version == 0
    assert b.grad.tolist() == [5.0, 5.0]
    a.add_(1)  # the counters moved with the data
    assert (a._version, b._version) == (3, 0)


def test_grad_fn_swaps():
    x = ember.ones(2, requires_grad=True)
    y = x * 3
    b = ember.zeros(2)
    swap_tensors(y, b)
    assert y.grad_fn is None and not y.requires_grad
    assert type(b.grad_fn).__name__ == "MulBackward0"
    b.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_dict_attributes_swap():
    a = ember.ones(2)
    a.note = "from a"
    b = ember.zeros(2)
    swap_tensors(a, b)
    assert b.note == "from a" and not hasattr(a, "note")


def test_parameter_class_swaps_and_module_sees_it():
    lin = nn.Linear(2, 2)
    weight = lin.weight
    new = ember.zeros(2, 2)
    swap_tensors(lin.weight, new)
    assert lin.weight is weight
    assert type(weight) is ember.Tensor and not weight.requires_grad
    assert type(new) is nn.Parameter and new.requires_grad
    swap_tensors(weight, new)  # back: a Parameter again, now zeros
    new_weight = nn.Parameter(ember.zeros(2, 2))
    swap_tensors(lin.weight, new_weight)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight is weight
    assert lin.weight.abs().sum().item() == 0.0
    out = lin(ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().cpu().numpy(), lin.bias.detach().cpu().numpy()[None])
    out.sum().backward()
    assert lin.weight.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_sparse_and_dense_swap():
    s = ember.tensor([0.0, 2.0, 0.0]).to_sparse()
    d = ember.tensor([1.0, 1.0])
    swap_tensors(s, d)
    assert s.layout == ember.strided and s.tolist() == [1.0, 1.0]
    assert d.layout == ember.sparse_coo and d.to_dense().tolist() == [0.0, 2.0, 0.0]
    swap_tensors(s, d)
    assert s.layout == ember.sparse_coo and d.tolist() == [1.0, 1.0]


def test_swap_with_itself_is_a_no_op():
    a = ember.ones(2)
    swap_tensors(a, a)
    assert a.tolist() == [1.0, 1.0]


def test_poisoned_accumulate_grad_after_swapping_a_recorded_leaf():
    a = ember.ones(3, requires_grad=True)
    y = a.sum()  # records a's AccumulateGrad node (which holds a weak reference to a)
    b = ember.zeros(3)
    swap_tensors(a, b)
    with pytest.raises(RuntimeError, match="AccumulateGrad node that was poisoned by "
                                           "swap_tensors"):
        y.backward()
    assert a.grad is None and b.grad is None
    # graphs recorded after the swap work
    (b * 2).sum().backward()
    assert b.grad.tolist() == [2.0, 2.0, 2.0]


def test_errors():
    a, b = ember.ones(2), ember.zeros(2)
    ref = weakref.ref(a)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref associated "
                                           "with it"):
        swap_tensors(a, b)
    with pytest.raises(RuntimeError, match="Cannot swap t2 because it has weakref associated "
                                           "with it"):
        swap_tensors(b, a)
    assert ref() is a and a.tolist() == [1.0, 1.0]

    class Slotted(ember.Tensor):
        __slots__ = ("extra",)

    s = Slotted(ember.ones(1))
    with pytest.raises(RuntimeError, match="Cannot swap t1 and t2 if they have different "
                                           "slots"):
        swap_tensors(s, ember.ones(1))
    assert set(copyreg._slotnames(Slotted)) != set(copyreg._slotnames(ember.Tensor))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        t = lib.zeros(3, dtype=lib.float64)
        lib.utils.swap_tensors(p, t)
        assert type(p) is lib.Tensor and type(t) is lib.nn.Parameter
        assert p.tolist() == [0.0, 0.0, 0.0] and p.dtype == lib.float64
        assert t.requires_grad and not p.requires_grad
