"""Tensor methods that take an int list as varargs, as PyTorch's do when the list is their only
positional parameter (``t.flip(0, 2)``, ``t.permute(2, 0, 1)``): every form (varargs, a tuple,
a list, ``ember.Size``, one int, the keyword) against NumPy, and PyTorch's errors.
The parity twin, tests/parity/test_tutorial_fixes_parity.py, finds the methods in PyTorch."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

A = np.arange(24.0).reshape(2, 3, 4)

# method -> (input shape, int list, keyword, NumPy reference of the result)
CASES = {
    "flip": ((2, 3, 4), (0, 2), "dims", lambda a: a[::-1, :, ::-1]),
    "permute": ((2, 3, 4), (2, 0, 1), "dims", lambda a: a.transpose(2, 0, 1)),
    "view": ((2, 3, 4), (4, 6), "size", lambda a: a.reshape(4, 6)),
    "reshape": ((2, 3, 4), (6, -1), "shape", lambda a: a.reshape(6, 4)),
    "expand": ((1, 3, 1), (2, 3, 4), "size", lambda a: np.broadcast_to(a, (2, 3, 4))),
    "broadcast_to": ((1, 3, 1), (2, 3, 4), "size", lambda a: np.broadcast_to(a, (2, 3, 4))),
    "repeat": ((2, 3, 4), (1, 2, 1, 2), "repeats", lambda a: np.tile(a, (1, 2, 1, 2))),
    "tile": ((2, 3, 4), (2, 1), "dims", lambda a: np.tile(a, (1, 2, 1))),
    "squeeze": ((1, 3, 1, 4), (0, 2), "dim", lambda a: a.reshape(3, 4)),
    "count_nonzero": ((2, 3, 4), (0, 2), "dim", lambda a: (a != 0).sum((0, 2))),
    "sum_to_size": ((2, 3, 4), (3, 1), "size", lambda a: a.sum((0, 2))[:, None]),
}


def _tensor(shape):
    return ember.tensor(np.arange(float(np.prod(shape))).reshape(shape))


def _forms(ints, keyword):
    return {"varargs": (ints, {}), "tuple": ((tuple(ints),), {}), "list": ((list(ints),), {}),
            "Size": ((ember.Size(ints),), {}), "numpy ints": (tuple(np.int64(i) for i in ints),
                                                              {}),
            "keyword": ((), {keyword: tuple(ints)})}


@pytest.mark.parametrize("form", ["varargs", "tuple", "list", "Size", "numpy ints", "keyword"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_int_list_methods_take_every_form(name, form):
    shape, ints, keyword, ref = CASES[name]
    args, kwargs = _forms(ints, keyword)[form]
    out = getattr(_tensor(shape), name)(*args, **kwargs)
    expected = ref(np.arange(float(np.prod(shape))).reshape(shape))
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("name, shape, ints", [
    ("flip", (2, 3), 0), ("tile", (2, 3), 2), ("repeat", (3,), 2), ("view", (2, 3), -1),
    ("reshape", (2, 3), 6), ("expand", (1,), 3), ("permute", (3,), 0), ("squeeze", (1, 3), 0)])
def test_one_int_is_a_list_of_one(name, shape, ints):
    t = _tensor(shape)
    assert getattr(t, name)(ints).shape == getattr(t, name)((ints,)).shape


@pytest.mark.parametrize("name, axis", [("hsplit", 1), ("dsplit", 2)])
def test_splits_take_indices_as_varargs(name, axis):
    parts = getattr(ember.tensor(A), name)(1, 2)
    expected = np.split(A, [1, 2], axis=axis)
    assert len(parts) == len(expected)
    for part, ref in zip(parts, expected):
        np.testing.assert_array_equal(part.numpy(), ref)


def test_methods_with_a_default_take_no_args():
    t = _tensor((1, 3, 1))
    assert t.squeeze().shape == (3,)
    assert t.count_nonzero().item() == 2


def test_squeeze_keeps_pytorch_node_per_overload():
    t = ember.zeros(1, 3, 1, requires_grad=True)
    assert type(t.squeeze().grad_fn).__name__ == "SqueezeBackward0"
    assert type(t.squeeze(0).grad_fn).__name__ == "SqueezeBackward1"
    assert type(t.squeeze(0, 2).grad_fn).__name__ == "SqueezeBackward2"


def test_functions_keep_pytorch_signatures():
    t = ember.tensor(A)
    np.testing.assert_array_equal(ember.flip(t, (0, 2)).numpy(), A[::-1, :, ::-1])
    np.testing.assert_array_equal(ember.permute(t, dims=[2, 0, 1]).numpy(),
                                  A.transpose(2, 0, 1))
    np.testing.assert_array_equal(ember.reshape(t, shape=(4, 6)).numpy(), A.reshape(4, 6))
    np.testing.assert_array_equal(ember.tile(t, dims=(2,)).numpy(), np.tile(A, 2))


def test_view_still_reads_memory_as_another_dtype():
    t = ember.zeros(2, 4)
    assert t.view(ember.int32).dtype == ember.int32
    assert t.view(4, 2).shape == (4, 2)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda t: t.permute((2, 0), 1), TypeError,
     "permute\\(\\) takes 1 positional argument but 2 were given"),
    (lambda t: t.flip(0, 1.5), TypeError,
     "flip\\(\\): argument 'dims' failed to unpack the object at pos 2 with error \"type must "
     "be tuple of ints,but got float\""),
    (lambda t: t.view(2, "a"), TypeError, "argument 'size' failed to unpack the object at pos 2"),
    (lambda t: t.sum_to_size(5), RuntimeError,
     "size {\\[5\\]} is not expandable to size {\\[2, 3, 4\\]}."),
    (lambda t: t.sum_to_size(1, 2, 3, 4), RuntimeError, "is not expandable to size"),
])
def test_errors_are_pytorchs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.tensor(A))


def test_sum_to_size_is_differentiable():
    x = ember.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    assert gradcheck(lambda u: u.sum_to_size(3, 1), (x,))
    assert x.sum_to_size(2, 3, 4) is x


def test_resize_keeps_elements_in_order_and_bumps_the_version():
    t = ember.arange(6.0)
    v = t._version
    assert t.resize_(2, 3) is t
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
    assert t._version > v
    t.resize_((2, 2))
    np.testing.assert_array_equal(t.numpy(), [[0.0, 1.0], [2.0, 3.0]])
    t.resize_([5])
    assert t.shape == (5,)
    np.testing.assert_array_equal(t.numpy()[:4], [0.0, 1.0, 2.0, 3.0])


def test_resize_errors():
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.zeros(3, requires_grad=True).resize_(2)
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
        ember.zeros(3).resize_(-1, 2)
