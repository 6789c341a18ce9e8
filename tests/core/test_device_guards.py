"""The checks Ember makes itself before a device (CuPy) array is touched, where NumPy would
have refused on its own: found by running the suite on a real GPU (``tools/gpu_check.sh``).
CuPy does not bounds-check integer indices (reads wrap, writes reach illegal addresses that
poison the process), counts an overflowing size modulo 2**64, has no writeable flag, and
skips cuSOLVER's error check unless asked. Each check is exercised here on the CPU: on NumPy
arrays, on objects shaped like CuPy's, and on the strict test device."""

from __future__ import annotations

import types

import numpy as np
import pytest

import ember
from ember.backends import Backend
from ember.ops._inplace import writable
from ember.ops.indexing import _check_index_bounds, _index_error


def test_writable_reads_numpy_flags_and_zero_strides_elsewhere():
    a = np.zeros((3, 4))
    assert writable(a)
    assert not writable(np.broadcast_to(np.zeros((3, 1)), (3, 4)))
    # a CuPy-like array: no flags; expand's zero stride over more than one element is shared
    cupy_like = types.SimpleNamespace(strides=(8, 0), shape=(3, 4))
    assert not writable(cupy_like)
    assert writable(types.SimpleNamespace(strides=(8, 0), shape=(3, 1)))
    assert writable(types.SimpleNamespace(strides=(32, 8), shape=(3, 4)))


@pytest.mark.parametrize("adv,msg", [
    ((np.array([0, 3]),), "index 3 is out of bounds for dimension 0 with size 3"),
    ((np.array([-4]),), "index -4 is out of bounds for dimension 0 with size 3"),
    # PyTorch numbers the dimension by the index tensor's place among the index tensors
    ((slice(None), np.array([[5]])), "index 5 is out of bounds for dimension 0 with size 4"),
    ((Ellipsis, np.array([4])), "index 4 is out of bounds for dimension 0 with size 4"),
    ((np.array([[True, False, True, False]] * 3), np.array([9])),
     "index 9 is out of bounds for dimension 2 with size 5"),
])
def test_index_bounds_are_checked_per_dimension(adv, msg):
    shape = (3, 4, 5) if len(adv) == 2 and getattr(adv[0], "ndim", 0) == 2 else (3, 4)
    with pytest.raises(IndexError, match=f"^{msg}$"):
        _check_index_bounds(shape, adv)


def test_indices_in_range_pass_including_negative_ones():
    _check_index_bounds((3, 4), (np.array([-3, 2]), np.array([-4, 3])))
    _check_index_bounds((3, 4), (np.array([], dtype=np.int64),))


def test_cupy_capitalised_index_error_reads_as_numpys():
    err = _index_error(IndexError("Index 10 is out of bounds for axis 0 with size 3"), 1)
    assert str(err) == "index 10 is out of bounds for dimension 0 with size 3"


def test_device_tensor_indexing_checks_before_reading():
    from ember.testing import register_strict_device

    register_strict_device()
    x = ember.arange(6.0, device="strict").reshape(2, 3)
    with pytest.raises(IndexError, match="^index 3 is out of bounds for dimension 0 with size 3"):
        x[:, ember.tensor([0, 3], device="strict")]  # the first index tensor, as PyTorch says
    with pytest.raises(IndexError, match="^index 2 is out of bounds for dimension 0 with size 2"):
        x[ember.tensor([2], device="strict")] = 1.0
    assert x[ember.tensor([-1], device="strict")].tolist() == [[3.0, 4.0, 5.0]]


def test_overflowing_device_sizes_are_refused_before_allocating():
    from ember.testing import register_strict_device

    register_strict_device()
    with pytest.raises(RuntimeError, match=r"sizes=\[1099511627776, 1099511627776, 0\]"):
        ember.zeros(2**40, 2**40, 0, device="strict")
    with pytest.raises(RuntimeError, match=r"sizes=\[2199023255552, 3145728\]"):
        ember.zeros(2, 3, device="strict").repeat(2**40, 2**20)
    with pytest.raises(RuntimeError, match=r"sizes=\[2147483648, 2147483648\]"):
        ember.eye(2**31, device="strict")


def test_the_cpu_backend_needs_no_linalg_error_context():
    with Backend().linalg_errors():
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.inv(np.zeros((2, 2)))


def test_deterministic_scatter_add_sums_in_index_order_off_numpy():
    from ember._strict import StrictNumpy, from_strict, to_strict
    from ember.ops.indexing import ufunc_at

    rng = np.random.default_rng(0)
    src = rng.standard_normal(1000).astype(np.float32)
    index = rng.integers(0, 7, 1000)
    expected = np.zeros(7, np.float32)
    np.add.at(expected, index, src)  # the CPU's order
    xp = StrictNumpy(np, "no_atomic_add")

    class _NoAt:  # an atomic scatter-add would not be deterministic on a GPU
        def at(self, *args):
            raise AssertionError("add.at called in deterministic mode")

    xp.add = _NoAt()
    ember.use_deterministic_algorithms(True)
    try:
        target = to_strict(np.zeros(7, np.float32))
        ufunc_at(xp, "add", target, to_strict(index), to_strict(src))
        # a non-contiguous target (a column view) is written back
        wide = to_strict(np.zeros((7, 2), np.float32))
        ufunc_at(xp, "add", wide[:, 1], to_strict(index), to_strict(src))
    finally:
        ember.use_deterministic_algorithms(False)
    assert np.array_equal(from_strict(target), expected)  # bit for bit
    assert np.array_equal(from_strict(wide)[:, 1], expected)
    assert not from_strict(wide)[:, 0].any()
