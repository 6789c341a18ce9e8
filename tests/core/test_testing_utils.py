"""ember.testing.make_tensor against torch.testing.make_tensor: dtype, shape, value range and
its defaults, layout options, exclude_zero, requires_grad and the errors."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.testing import make_tensor

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
N = 20_000  # draws per range check: every integer of a default range shows up


def _torch():
    return pytest.importorskip("torch")


def _both(dtype, *shape, **kwargs):
    """The same call to ember's and torch's make_tensor, both seeded."""
    torch = _torch()
    ember.manual_seed(0)
    torch.manual_seed(0)
    ours = make_tensor(*shape, dtype=getattr(ember, dtype), device="cpu", **kwargs)
    theirs = torch.testing.make_tensor(*shape, dtype=getattr(torch, dtype), device="cpu",
                                       **kwargs)
    return ours, theirs


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _values(t):
    return t.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_default_range_dtype_and_shape_match_torch(dtype):
    ours, theirs = _both(dtype, N)
    assert _dtype_name(ours) == _dtype_name(theirs) == dtype
    assert tuple(ours.shape) == tuple(theirs.shape) == (N,)
    assert ours.device == ember.device("cpu") and ours.is_contiguous()
    assert not ours.requires_grad and not theirs.requires_grad
    a, b = _values(ours), _values(theirs)
    if dtype == "bool" or not ours.dtype.is_floating_point:
        # every value of the default range is drawn, in both libraries
        assert set(np.unique(a)) == set(np.unique(b))
    else:  # [-9, 9): both fill it, neither leaves it (float16 may round up to 9 itself)
        top = 9.0 if dtype == "float16" else np.nextafter(9.0, 0)
        for v in (a, b):
            assert -9 <= v.min() < -8.9 and 8.9 < v.max() <= top


@pytest.mark.parametrize("dtype,low,high", [
    ("uint8", -5, 1000),       # clamped to [0, 256)
    ("int8", -1000, 1000),     # clamped to [-128, 128)
    ("int32", 0.5, 4.2),       # integer bounds rounded up: [1, 5)
    ("int64", -3, 3),
    ("bool", None, 1),         # all False
    ("float16", 60000, 1e6),   # clamped to float16's max
    ("float32", -0.25, 0.5),
    ("float64", 2, 3),
])
def test_given_bounds_are_clamped_and_rounded_like_torch(dtype, low, high):
    ours, theirs = _both(dtype, N, low=low, high=high)
    a, b = _values(ours), _values(theirs)
    if ours.dtype.is_floating_point:
        lo, hi = max(low, float(ember.finfo(ours.dtype).min)), min(high,
                                                                  ember.finfo(ours.dtype).max)
        for v in (a, b):
            assert lo <= v.min() and v.max() <= hi
    else:
        assert set(np.unique(a)) == set(np.unique(b))


def test_float64_range_wider_than_its_max_stays_finite():
    ours, theirs = _both("float64", 1000, low=-1e308, high=1e308)
    for v in (_values(ours), _values(theirs)):
        assert np.isfinite(v).all() and v.min() < -1e307 and v.max() > 1e307


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), ((2, 3),), ([4, 1, 2],)])
def test_shapes_as_ints_or_one_sequence(shape):
    ours, theirs = _both("float32", *shape)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert make_tensor(ember.Size([3, 2]), dtype=ember.int64, device="cpu").shape == (3, 2)


@pytest.mark.parametrize("shape", [(4, 6), (3,), (1,), (2, 1, 5)])
def test_noncontiguous_matches_torch_strides(shape):
    ours, theirs = _both("float32", *shape, noncontiguous=True)
    assert tuple(ours.shape) == tuple(theirs.shape) == shape
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous() == (math.prod(shape) <= 1)


def test_memory_format_matches_torch_strides():
    torch = _torch()
    ours = make_tensor(2, 3, 4, 5, dtype=ember.float32, device="cpu",
                       memory_format=ember.channels_last)
    theirs = torch.testing.make_tensor(2, 3, 4, 5, dtype=torch.float32, device="cpu",
                                       memory_format=torch.channels_last)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous(memory_format=ember.channels_last)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exclude_zero_replaces_zeros_like_torch(dtype):
    # ranges that are mostly zero: [0, 1) for integers, bool's own; for float16, values
    # below its smallest subnormal round to zero
    kwargs = {"bool": {}, "float16": {"low": 0, "high": 1e-7}}.get(
        dtype, {"low": 0, "high": 1e-7 if "float" in dtype else 1})
    ours, theirs = _both(dtype, 200, exclude_zero=True, **kwargs)
    a, b = _values(ours), _values(theirs)
    assert (a != 0).all() and (b != 0).all()
    if not ours.dtype.is_floating_point:
        assert set(np.unique(a)) == set(np.unique(b)) == {1}
    elif dtype == "float16":  # the zeros became the dtype's tiny value
        tiny = float(ember.finfo(ember.float16).tiny)
        assert (a == tiny).any() and (b == tiny).any()


@pytest.mark.parametrize("noncontiguous", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_requires_grad_makes_a_leaf(dtype, noncontiguous):
    ours, theirs = _both(dtype, 2, 3, requires_grad=True, noncontiguous=noncontiguous)
    assert ours.requires_grad and theirs.requires_grad
    assert ours.is_leaf and theirs.is_leaf and ours.grad_fn is None
    assert ours.is_contiguous() == theirs.is_contiguous() == (not noncontiguous)
    ours.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("kwargs", [
    {"dtype": "int64", "requires_grad": True},
    {"dtype": "bool", "requires_grad": True},
    {"dtype": "float32", "low": 3, "high": 1},
    {"dtype": "int32", "low": 2, "high": 2},
    {"dtype": "float32", "low": float("nan")},
    {"dtype": "uint8", "low": -10, "high": -1},
    {"dtype": "int8", "low": 200, "high": 300},
    {"dtype": "float16", "low": 1e6, "high": 1e7},
    {"dtype": "float32", "noncontiguous": True, "memory_format": "channels_last"},
])
def test_errors_match_torch(kwargs):
    torch = _torch()
    kwargs = dict(kwargs)
    name = kwargs.pop("dtype")
    fmt = kwargs.pop("memory_format", None)
    with pytest.raises(Exception) as theirs:
        torch.testing.make_tensor(2, 3, 4, 5, dtype=getattr(torch, name), device="cpu",
                                  memory_format=fmt and getattr(torch, fmt), **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        make_tensor(2, 3, 4, 5, dtype=getattr(ember, name), device="cpu",
                    memory_format=fmt and getattr(ember, fmt), **kwargs)
    first_words = " ".join(str(theirs.value).split()[:3])
    assert str(ours.value).startswith(first_words), (ours.value, theirs.value)


def test_low_equal_high_for_floats_warns_and_fills_like_torch():
    torch = _torch()
    with pytest.warns(FutureWarning, match="low==high"):
        ours = make_tensor(3, dtype=ember.float32, device="cpu", low=1.5, high=1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = torch.testing.make_tensor(3, dtype=torch.float32, device="cpu", low=1.5,
                                           high=1.5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="not supported by ember.testing.make_tensor"):
        make_tensor(2, dtype=np.float32, device="cpu")


def test_seeded_and_on_the_requested_device(testdev):
    ember.manual_seed(3)
    a = make_tensor(4, 5, dtype=ember.float32, device="cpu", low=-1, high=1)
    ember.manual_seed(3)
    b = make_tensor(4, 5, dtype=ember.float32, device="cpu", low=-1, high=1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ((a.numpy() >= -1) & (a.numpy() < 1)).all()
    for dtype in (ember.float64, ember.int16, ember.bool):
        t = make_tensor(3, 2, dtype=dtype, device=testdev, noncontiguous=True)
        assert t.device == testdev and t.dtype == dtype and t.shape == (3, 2)


def test_assert_allclose_deprecated_alias():
    import pytest

    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated since 1.12"):
        ember.testing.assert_allclose(ember.ones(3), [1, 1, 1.00001])  # float32: rtol 1e-4
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="not close"):
        ember.testing.assert_allclose(ember.ones(3), [1, 1, 1.001])
    with pytest.warns(FutureWarning):  # NaNs are equal, dtypes may differ
        ember.testing.assert_allclose(ember.tensor([float("nan"), 1.0]),
                                      ember.tensor([float("nan"), 1.0], dtype=ember.float64))
    with pytest.warns(FutureWarning), pytest.raises(AssertionError):
        ember.testing.assert_allclose(ember.tensor([1.0]), [1.0 + 1e-7], rtol=0, atol=0)
