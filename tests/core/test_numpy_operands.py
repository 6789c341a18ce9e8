"""NumPy arrays meeting tensors as PyTorch has them meet: ``t + array`` is computed by NumPy
on the tensor's ``__array__`` and comes back a tensor (``Tensor.__array_wrap__``), as does a
ufunc applied to a tensor (``np.sin(t)``, a bool result as uint8); ``t == array`` compares
elementwise; a tensor that requires grad refuses (PyTorch's ``numpy()`` error) rather than
losing its history; ``cat``/``stack`` name a non-tensor element. Each case is checked against
PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _cases(lib):
    t = lib.tensor([1.0, -2.0])
    i = lib.tensor([1, 2])
    return {
        "t + array": lambda: t + np.ones(2),
        "t * 0-d array": lambda: t * np.array(2.0),
        "int t + int32 array": lambda: i + np.ones(2, dtype=np.int32),
        "t - array": lambda: t - np.array([0.5, 0.5]),
        "t == array": lambda: t == np.array([1.0, 5.0]),
        "t @ array": lambda: t @ np.ones(2),
        "matrix @ array": lambda: lib.ones(2, 2) @ np.ones((2, 2)),
        "np.sin(t)": lambda: np.sin(t),
        "np.greater(t, 0)": lambda: np.greater(t, 0),
        "np.maximum(t, 0)": lambda: np.maximum(t, 0),
        "np.sqrt(0-d t)": lambda: np.sqrt(lib.tensor(4.0)),
        "np.where (no ufunc)": lambda: np.where(t > 0, t, 0),
    }


def _result(value):
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.tolist())
    return (type(value).__name__, str(value.dtype).split(".")[-1], value.tolist())


@pytest.mark.parametrize("case", list(_cases(ember)))
def test_numpy_operands_as_pytorch(case):
    got = _result(_cases(ember)[case]())
    want = {
        "t + array": ("Tensor", "float64", [2.0, -1.0]),
        "t * 0-d array": ("Tensor", "float64", [2.0, -4.0]),
        "int t + int32 array": ("Tensor", "int64", [2, 3]),
        "t - array": ("Tensor", "float64", [0.5, -2.5]),
        "t == array": ("Tensor", "bool", [True, False]),
        "t @ array": ("Tensor", "float64", -1.0),
        "matrix @ array": ("Tensor", "float64", [[2.0, 2.0], [2.0, 2.0]]),
        "np.sin(t)": ("Tensor", "float32", np.sin(np.float32([1.0, -2.0])).tolist()),
        "np.greater(t, 0)": ("Tensor", "uint8", [1, 0]),
        "np.maximum(t, 0)": ("Tensor", "float32", [1.0, 0.0]),
        "np.sqrt(0-d t)": ("Tensor", "float32", 2.0),
        "np.where (no ufunc)": ("ndarray", "float32", [1.0, 0.0]),
    }[case]
    assert got == want
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():  # torch's __array_wrap__ lacks NumPy 2's arguments
        warnings.simplefilter("ignore", DeprecationWarning)
        assert _result(_cases(torch)[case]()) == want


def test_a_tensor_that_requires_grad_refuses_an_array_operand():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that requires "
                                           r"grad. Use tensor.detach\(\).numpy\(\) instead.$"):
        x + np.ones(2)
    with ember.no_grad():  # as PyTorch: refused only while grad mode is on
        assert (x + np.ones(2)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("fn", ["cat", "stack", "hstack", "vstack"])
@pytest.mark.parametrize("bad, name", [(3, "int"), ([1.0], "list"), (None, "NoneType"),
                                       (np.ones(2), "numpy.ndarray")])
def test_joins_name_a_non_tensor_element(fn, bad, name):
    with pytest.raises(TypeError, match=f"^expected Tensor as element 1 in argument 0, but "
                                        f"got {name}$"):
        getattr(ember, fn)([ember.ones(2), bad])
