"""The strict test device: arrays that refuse NumPy the way CuPy's do (``ember._strict``)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
from ember._strict import StrictArray, from_strict, strict_numpy, to_strict
from ember.testing import register_strict_device


@pytest.fixture(scope="module", autouse=True)
def _strict():
    register_strict_device("strict")


def arr(*shape):
    return to_strict(np.arange(float(np.prod(shape) or 0)).reshape(shape))


def test_direct_numpy_functions_are_refused():
    a = arr(2, 3)
    for call in (lambda: np.where(a > 1, a, 0), lambda: np.concatenate([a, a]),
                 lambda: np.einsum("ij->i", a), lambda: np.clip(a, 0, 1),
                 lambda: np.moveaxis(a, 0, 1), lambda: np.broadcast_to(a, (4, 2, 3))):
        with pytest.raises(TypeError, match="strict device"):
            call()


def test_implicit_conversion_is_refused():
    a = arr(3)
    with pytest.raises(TypeError, match="__array__"):
        a.__array__()
    t = ember.ones(3, device="strict")
    with pytest.raises(TypeError, match="can't convert strict:0 device type tensor"):
        np.asarray(t)  # as PyTorch's GPU tensors: no implicit copy to the host
    np.testing.assert_array_equal(np.asarray(t.cpu()), np.ones(3))


def test_mixing_with_host_arrays_is_refused():
    a, h = arr(2, 3), np.ones((2, 3))
    for call in (lambda: a + h, lambda: h + a, lambda: a * h, lambda: np.add(a, h),
                 lambda: strict_numpy.where(a > 0, a, h), lambda: a < h):
        with pytest.raises(TypeError, match="host numpy.ndarray"):
            call()
    b = arr(2, 3)
    with pytest.raises(TypeError, match="host numpy.ndarray"):
        b[0] = np.ones(3)
    b[...] = h  # the whole array is copied in, as CuPy's ``a[:] = host`` does
    np.testing.assert_array_equal(from_strict(b), h)


def test_ufuncs_operators_and_the_array_module_keep_results_strict():
    a = arr(2, 3)
    for r in (np.exp(a), a + 1, a @ a.T, np.add.reduce(a, axis=0), a.sum(0),
              strict_numpy.where(a > 1, a, 0.0), strict_numpy.concatenate([a, a]),
              a.reshape(3, 2), a.T, a[0], a[a > 2]):
        assert type(r) is StrictArray
    # scalars stay on the device as 0-d arrays (CuPy's reductions and indexing do too)
    for r in (a.sum(), a.argmax(), a[1, 2], a.trace(), strict_numpy.sum(a)):
        assert type(r) is StrictArray and r.ndim == 0
    assert float(a[1, 2]) == 5.0 and int(a.argmax()) == 5


def test_explicit_moves_and_pickling():
    h = np.arange(4.0)
    a = strict_numpy.asarray(h)  # explicit host -> device, as cupy.asarray
    assert type(a) is StrictArray
    back = from_strict(a)
    assert type(back) is np.ndarray and np.shares_memory(back, h) is False
    assert type(pickle.loads(pickle.dumps(a))) is StrictArray
    assert type(a.get()) is np.ndarray


def test_tensors_on_the_strict_device():
    x = ember.arange(6.0, device="strict").reshape(2, 3).requires_grad_()
    assert type(x._data) is StrictArray
    y = (x.exp() * 2).sum()
    y.backward()
    assert type(x.grad._data) is StrictArray
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp(np.arange(6.0)).reshape(2, 3))
    with pytest.raises(TypeError, match="can't convert strict:0 device type tensor to numpy"):
        x.detach().numpy()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + ember.ones(2, 3)


def test_a_kernel_calling_numpy_directly_fails_there():
    """What the device is for: a kernel written against NumPy fails on it."""

    def bad_kernel(t):
        return ember.ops.api.wrap(np.where(ember.ops.api.array(t) > 0, 1.0, 0.0), t.device)

    t = ember.ones(3, device="strict")
    with pytest.raises(TypeError, match="strict device"):
        bad_kernel(t)

    def good_kernel(t):
        xp = ember.ops.api.array_module(t)
        return ember.ops.api.wrap(xp.where(ember.ops.api.array(t) > 0, 1.0, 0.0), t.device)

    assert good_kernel(t).device == ember.device("strict", 0)
