"""Tensor factories: dtype inference, sizes, devices, requires_grad, errors, memory sharing."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

F32, F64, I64 = ember.float32, ember.float64, ember.int64


@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(ember.float32)


# -- tensor(): dtype inference and shapes ----------------------------------------------------

@pytest.mark.parametrize("data,dtype,shape", [
    (True, ember.bool, ()),
    (3, I64, ()),
    (3.5, F32, ()),
    ([True, False], ember.bool, (2,)),
    ([True, 2], I64, (2,)),
    ([1, 2.5], F32, (2,)),
    ([[1, 2], [3, 4]], I64, (2, 2)),
    ((1, 2), I64, (2,)),
    (range(3), I64, (3,)),
    ([], F32, (0,)),
    ([[]], F32, (1, 0)),
    ([[], []], F32, (2, 0)),
    (np.float64(1.0), F64, ()),
    (np.int32(4), ember.int32, ()),
    ([np.float32(1.0)], F32, (1,)),
    ([np.float64(1.0), 1], F64, (2,)),
    ([np.int32(1), np.int32(2)], ember.int32, (2,)),
    ([np.array([1, 2]), np.array([3, 4])], I64, (2, 2)),
    (np.array([1.0, 2.0]), F64, (2,)),
    (np.array([1, 2], dtype=np.int16), ember.int16, (2,)),
    (np.zeros((2, 0, 3), dtype=np.float32), F32, (2, 0, 3)),
])
def test_tensor_infers_dtype_and_shape(data, dtype, shape):
    t = ember.tensor(data)
    assert t.dtype is dtype and t.shape == shape and t.device == ember.device("cpu")


def test_tensor_values_follow_data():
    t = ember.tensor([[1.5, 2], [True, 3]])
    assert t.dtype is F32 and t.tolist() == [[1.5, 2.0], [1.0, 3.0]]
    assert ember.tensor([[[1, 2]], [[3, 4]]]).tolist() == [[[1, 2]], [[3, 4]]]


def test_tensor_of_zero_dim_tensors_promotes_like_pytorch():
    i32 = ember.tensor(1, dtype=ember.int32)
    assert ember.tensor([i32, 2]).dtype is I64  # int32 with a Python int: int64
    assert ember.tensor([i32, ember.tensor(2, dtype=ember.int32)]).dtype is ember.int32
    t = ember.tensor([ember.tensor(1.0, dtype=F64), 2])
    assert t.dtype is F64 and t.tolist() == [1.0, 2.0]
    assert ember.tensor([ember.tensor([5])]).tolist() == [5]


def test_tensor_default_dtype_is_used_for_python_floats(float64_default):
    assert ember.tensor([1.0, 2.0]).dtype is F64
    assert ember.tensor(1.5).dtype is F64
    assert ember.tensor([]).dtype is F64
    assert ember.tensor([1, 2]).dtype is I64


def test_tensor_explicit_dtype_converts():
    assert ember.tensor([1.7, -1.7], dtype=I64).tolist() == [1, -1]
    assert ember.tensor([0.0, 0.5], dtype=ember.bool).tolist() == [False, True]
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == [255]  # PyTorch wraps
    t = ember.tensor([1, 2], dtype=F64)
    assert t.dtype is F64 and t.tolist() == [1.0, 2.0]
    assert ember.tensor(np.array([1, 2]), dtype=F32).dtype is F32


@pytest.mark.parametrize("data,exc,msg", [
    ([[1, 2], [3, 4, 5]], ValueError, r"expected sequence of length 2 at dim 1 \(got 3\)"),
    ([[1, 2], []], ValueError, r"expected sequence of length 2 at dim 1 \(got 0\)"),
    ([[[1], [2]], [[3]]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    ([1, [2, 3]], TypeError, "'list' object cannot be interpreted as an integer"),
    ([1.5, [2, 3]], TypeError, "must be real number, not list"),
    ("a", TypeError, "new\\(\\): invalid data type 'str'"),
    (["a"], ValueError, "too many dimensions 'str'"),
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ([None], RuntimeError, "Could not infer dtype of NoneType"),
    ([object()], RuntimeError, "Could not infer dtype of object"),
    (2 ** 63, ValueError, "Overflow when unpacking long long"),
    ([2 ** 63], ValueError, "Overflow when unpacking long long"),
])
def test_tensor_errors(data, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.tensor(data)


def test_tensor_errors_for_multi_element_tensors_in_lists():
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        ember.tensor([ember.tensor([1, 2])])
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        ember.tensor([ember.tensor([1.0, 2.0])])


def test_tensor_overflow_into_small_integer_types():
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without "
                       "overflow"):
        ember.tensor([1000], dtype=ember.int8)
    with pytest.raises(RuntimeError, match="to type int32 without overflow"):
        ember.tensor([2 ** 40], dtype=ember.int32)


def test_tensor_copies_and_detaches_a_tensor():
    src = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        t = ember.tensor(src)
    assert not t.requires_grad and t.grad_fn is None
    assert t.data_ptr() != src.data_ptr()
    with pytest.warns(UserWarning):
        assert ember.tensor(src, dtype=I64).dtype is I64


def test_tensor_copies_numpy_data():
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = ember.tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0]


def test_tensor_requires_grad():
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                       "can require gradients"):
        ember.tensor([1, 2], requires_grad=True)


def test_tensor_rejects_unsupported_numpy_arrays():
    with pytest.raises(TypeError, match=r"can't convert np.ndarray of type numpy.str_\. The "
                       "only supported types are"):
        ember.tensor(np.array(["a"]))
    with pytest.raises(ValueError, match="byte order different from the native byte order"):
        ember.tensor(np.array([1, 2], dtype=">i4"))


# -- as_tensor / asarray / from_numpy: memory sharing ------------------------------------------

def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4, dtype=np.float32)
    t = ember.from_numpy(a)
    assert t.dtype is F32 and t.data_ptr() == a.__array_interface__["data"][0]
    a[0] = 10.0
    assert t[0].item() == 10.0
    t.numpy()[1] = 20.0
    assert a[1] == 20.0


@pytest.mark.parametrize("arr,exc,msg", [
    (np.array(["a"]), TypeError, r"can't convert np.ndarray of type numpy.str_"),
    (np.array([1], dtype=object), TypeError, r"can't convert np.ndarray of type numpy.object_"),
    (np.array([1], dtype=np.clongdouble), TypeError, "of type numpy.clongdouble"),
    (np.array([1.0], dtype=">f4"), ValueError, "byte order different from the native"),
    ([1], TypeError, r"expected np.ndarray \(got list\)"),
])
def test_from_numpy_errors(arr, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.from_numpy(arr)


def test_as_tensor_is_zero_copy_for_arrays_and_tensors():
    a = np.ones(3)
    t = ember.as_tensor(a)
    assert t.dtype is F64
    a[0] = 5.0
    assert t[0].item() == 5.0
    x = ember.ones(2)
    assert ember.as_tensor(x) is x
    assert ember.asarray(x) is x


def test_as_tensor_converts_when_asked():
    a = np.ones(3)
    t = ember.as_tensor(a, dtype=F32)
    a[0] = 5.0
    assert t.dtype is F32 and t[0].item() == 1.0
    assert ember.as_tensor([1, 2]).dtype is I64
    assert ember.as_tensor([1, 2], dtype=F64).dtype is F64
    x = ember.tensor([1, 2])
    assert ember.as_tensor(x, dtype=F32).tolist() == [1.0, 2.0]


def test_as_tensor_keeps_the_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.as_tensor(x, dtype=F64)
    assert y.requires_grad and y.grad_fn is not None


def test_asarray_copy_and_requires_grad():
    a = np.ones(2, dtype=np.float32)
    c = ember.asarray(a, copy=True)
    a[0] = 3.0
    assert c[0].item() == 1.0
    s = ember.asarray(a, copy=False)
    assert s[0].item() == 3.0
    with pytest.raises(ValueError, match="^can't alias tensor with dtype 'Float' into dtype "
                                         "'Double'.$"):  # PyTorch 2.13's words
        ember.asarray(a, dtype=F64, copy=False)
    r = ember.asarray([1.0, 2.0], dtype=F64, requires_grad=True)
    assert r.requires_grad and r.dtype is F64


# -- zeros / ones / empty / full and the size argument -----------------------------------------

SIZE_FORMS = [((2, 3), {}), (((2, 3),), {}), (([2, 3],), {}), ((ember.Size([2, 3]),), {}),
              ((np.int64(2), 3), {}), ((ember.tensor(2), 3), {}), ((), {"size": (2, 3)})]


@pytest.mark.parametrize("factory,value", [(ember.zeros, 0.0), (ember.ones, 1.0),
                                           (ember.empty, None)])
@pytest.mark.parametrize("args,kwargs", SIZE_FORMS)
def test_filled_factories_take_every_size_form(factory, value, args, kwargs):
    t = factory(*args, **kwargs)
    assert t.shape == (2, 3) and t.dtype is F32
    if value is not None:
        assert np.all(t.numpy() == value)


def test_zero_dim_and_empty_sizes():
    assert ember.zeros(()).shape == () and ember.zeros(()).item() == 0.0
    assert ember.ones(0, 3).shape == (0, 3)


@pytest.mark.parametrize("factory", [ember.zeros, ember.ones, ember.empty])
def test_filled_factories_dtype_and_requires_grad(factory, float64_default):
    assert factory(2).dtype is F64
    assert factory(2, dtype=ember.int32).dtype is ember.int32
    t = factory(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        factory(2, dtype=I64, requires_grad=True)


def test_size_errors():
    with pytest.raises(RuntimeError, match="zeros: Dimension size must be non-negative."):
        ember.zeros(2, -1)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension "
                       r"-1: \[2, -1\]"):
        ember.ones(2, -1)
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        ember.empty(-3)
    with pytest.raises(TypeError, match="failed to unpack the object at pos 2 with error "
                       "\"type must be tuple of ints,but got float\""):
        ember.zeros(2, 3.0)
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "size"'):
        ember.zeros()


@pytest.mark.parametrize("fill,dtype", [(1.5, F32), (True, ember.bool), (3, I64),
                                        (np.float64(3), F32), (np.int64(3), I64),
                                        (ember.tensor(3), I64), (ember.tensor(3.0), F32)])
def test_full_infers_dtype_from_the_fill_value(fill, dtype):
    t = ember.full((2,), fill)
    assert t.dtype is dtype and t.shape == (2,)
    assert t.tolist() == [ember.tensor(fill).item()] * 2 if not isinstance(fill, ember.Tensor) \
        else t.tolist() == [fill.item()] * 2


def test_full_dtype_and_conversions():
    assert ember.full((2,), 1.5, dtype=ember.int32).tolist() == [1, 1]
    assert ember.full((2,), -1, dtype=ember.uint8).tolist() == [255, 255]
    assert ember.full([2, 2], 7.0, dtype=F64).dtype is F64
    assert ember.full((), 2.0).shape == ()


@pytest.mark.parametrize("value,dtype,ctype", [(1000, ember.int8, "int8_t"),
                                               (1000, ember.uint8, "uint8_t"),
                                               (2 ** 40, ember.int32, "int"),
                                               (2 ** 63, None, "int64_t"),
                                               (1e40, F32, "float")])
def test_full_overflow(value, dtype, ctype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {ctype} without "
                       "overflow"):
        ember.full((2,), value, dtype=dtype)


def test_full_wants_a_size_sequence():
    with pytest.raises(TypeError, match=r"full\(\): argument 'size' \(position 1\) must be "
                       "tuple of ints, not int"):
        ember.full(2, 3)


def test_like_factories_inherit_and_override():
    src = ember.zeros(2, 3, dtype=ember.int32)
    for fn, args in ((ember.zeros_like, ()), (ember.ones_like, ()), (ember.empty_like, ()),
                     (ember.full_like, (7,))):
        t = fn(src, *args)
        assert t.shape == (2, 3) and t.dtype is ember.int32
        u = fn(src, *args, dtype=F64, requires_grad=True)
        assert u.dtype is F64 and u.requires_grad
        with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
            fn(src, *args, requires_grad=True)
    assert ember.ones_like(src).tolist() == [[1, 1, 1]] * 2
    assert ember.full_like(src, 2.7).tolist() == [[2, 2, 2]] * 2
    assert ember.full_like(ember.zeros(2), 2).dtype is F32


def test_out_argument_writes_in_place():
    out = ember.empty(3)
    r = ember.zeros(3, out=out)
    assert r is out and out.tolist() == [0.0, 0.0, 0.0]
    v = out._version
    ember.arange(4.0, out=out)  # a different size: resized
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0] and out._version > v


# -- ranges -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs,dtype,values", [
    ((5,), {}, I64, [0, 1, 2, 3, 4]),
    ((5.0,), {}, F32, [0.0, 1.0, 2.0, 3.0, 4.0]),
    ((1, 2.5, 0.5), {}, F32, [1.0, 1.5, 2.0]),
    ((0, -5, -1), {}, I64, [0, -1, -2, -3, -4]),
    ((10, 1, -3), {}, I64, [10, 7, 4]),
    ((5,), {"dtype": F64}, F64, [0.0, 1.0, 2.0, 3.0, 4.0]),
    ((0.5, 5), {"dtype": I64}, I64, [0, 1, 2, 3, 4]),
    ((0.5, 5, 1.5), {"dtype": I64}, I64, [0, 1, 2, 3, 4]),  # the step truncates to 1
    ((-3.7, 4), {"dtype": I64}, I64, [-3, -2, -1, 0, 1, 2, 3]),
    ((1.5, 3.5, 0.5), {"dtype": ember.int32}, ember.int32, [1, 1, 1, 1]),
    ((ember.tensor(3),), {}, I64, [0, 1, 2]),
    ((ember.tensor(3.0),), {}, F32, [0.0, 1.0, 2.0]),
    ((np.int64(3),), {}, I64, [0, 1, 2]),
    ((), {"end": 3}, I64, [0, 1, 2]),
    ((2,), {"end": 4}, I64, [2, 3]),
])
def test_arange(args, kwargs, dtype, values):
    t = ember.arange(*args, **kwargs)
    assert t.dtype is dtype and t.tolist() == pytest.approx(values)


def test_arange_length_rule_is_computed_in_double():
    assert ember.arange(0, 1, 0.1).shape == (10,)
    assert ember.arange(0, 1.0001, 0.1).shape == (11,)
    assert ember.arange(0.1, 0.9, 0.1).shape == (8,)  # ceil(7.999...) in double


@settings(max_examples=40, deadline=None)
@given(st.floats(-50, 50), st.floats(0.01, 20), st.floats(0.05, 5), st.booleans())
def test_arange_length_and_values_property(start, span, step, down):
    end = start - span if down else start + span
    step = -step if down else step
    t = ember.arange(start, end, step, dtype=F64)
    assert t.numel() == math.ceil((end - start) / step)
    np.testing.assert_allclose(t.numpy(), start + np.arange(t.numel()) * step)


@pytest.mark.parametrize("args,kwargs,exc,msg", [
    ((0, 5, 0), {}, RuntimeError, "step must be nonzero"),
    ((0, 5, -1), {}, RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    ((5, 0), {}, RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    ((float("nan"),), {}, RuntimeError, "unsupported range: 0 -> nan"),
    ((float("inf"),), {}, RuntimeError, "unsupported range: 0 -> inf"),
    ((0, 5, 0.5), {"dtype": I64}, ValueError, "step must be nonzero"),
    ((10,), {"dtype": ember.bool}, NotImplementedError, "\"arange_cpu\" not implemented for "
                                                        "'Bool'"),
    ((3,), {"requires_grad": True}, RuntimeError, "Only Tensors of floating point"),
])
def test_arange_errors(args, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.arange(*args, **kwargs)


def test_arange_requires_grad():
    t = ember.arange(3.0, requires_grad=True)
    assert t.requires_grad and t.tolist() == [0.0, 1.0, 2.0]


def test_range_is_inclusive_and_deprecated():
    with pytest.warns(UserWarning, match="ember.range is deprecated"):
        t = ember.range(1, 4)
    assert t.dtype is F32 and t.tolist() == [1.0, 2.0, 3.0, 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.range(1, 4, dtype=I64).tolist() == [1, 2, 3, 4]
        np.testing.assert_allclose(ember.range(0, 1, 0.3).numpy(), [0, 0.3, 0.6, 0.9],
                                   rtol=1e-6)


@pytest.mark.parametrize("start,end,steps,dtype", [(0, 1, 5, F32), (-3, 7, 11, F64),
                                                    (-1.3, 2.9, 101, F64),
                                                    (-1.3, 2.9, 1000, F32), (2, 2, 4, F32),
                                                    (0, 1, 7, ember.float16)])
def test_linspace_matches_numpy(start, end, steps, dtype):
    t = ember.linspace(start, end, steps, dtype=dtype)
    assert t.dtype is dtype and t.shape == (steps,)
    tol = {F32: 1e-6, F64: 1e-12, ember.float16: 1e-3}[dtype]
    np.testing.assert_allclose(t.numpy().astype(np.float64), np.linspace(start, end, steps),
                               rtol=tol, atol=tol)
    assert t[0].item() == pytest.approx(start, abs=tol) and t[-1].item() == pytest.approx(end)


def test_linspace_edge_cases():
    assert ember.linspace(0, 1, 1).tolist() == [0.0]
    assert ember.linspace(0, 1, 0).shape == (0,)
    assert ember.linspace(0, 10, 5, dtype=I64).tolist() == [0, 2, 5, 7, 10]
    assert ember.linspace(ember.tensor(0.0), ember.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    assert ember.linspace(0, 1, 3).dtype is F32
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        ember.linspace(0, 1)


def test_logspace():
    np.testing.assert_allclose(ember.logspace(0, 2, 3).numpy(), [1.0, 10.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(ember.logspace(0, 2, 3, base=2).numpy(), [1.0, 2.0, 4.0])
    t = ember.logspace(-2, 2, 9, dtype=F64)
    np.testing.assert_allclose(t.numpy(), np.logspace(-2, 2, 9), rtol=1e-12)
    assert ember.logspace(0, 2, 3, dtype=I64).tolist() == [1, 10, 100]
    assert ember.logspace(1, 1, 1).tolist() == [10.0]
    assert ember.logspace(0, 1, 0).shape == (0,)


def test_eye():
    np.testing.assert_array_equal(ember.eye(3).numpy(), np.eye(3, dtype=np.float32))
    t = ember.eye(2, 3, dtype=ember.int32)
    assert t.dtype is ember.int32 and t.tolist() == [[1, 0, 0], [0, 1, 0]]
    assert ember.eye(3, 2).shape == (3, 2) and ember.eye(0).shape == (0, 0)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ember.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -1"):
        ember.eye(2, -1)
    assert ember.eye(2, requires_grad=True).requires_grad


def test_empty_strided():
    t = ember.empty_strided((2, 3), (1, 2))
    assert t.shape == (2, 3) and t.stride() == (1, 2) and t.dtype is F32
    assert ember.empty_strided((2, 0), (1, 1)).shape == (2, 0)


def test_tensor_constructor_without_arguments_is_empty():
    assert ember.Tensor().shape == (0,)


# -- Tensor.new_* -----------------------------------------------------------------------------

def test_new_methods_inherit_dtype_and_device(testdev):
    base = ember.tensor([1, 2], dtype=ember.int32, device=testdev)
    for t in (base.new_zeros(2, 3), base.new_zeros((2, 3)), base.new_ones([2, 3]),
              base.new_empty(2, 3), base.new_full((2, 3), 3.5)):
        assert t.dtype is ember.int32 and t.device == testdev and t.shape == (2, 3)
    assert base.new_full((2,), 3.5).tolist() == [3, 3]
    assert base.new_ones(2, dtype=F64).dtype is F64
    assert base.new_zeros(2, device="cpu").device == ember.device("cpu")


def test_new_tensor():
    base = ember.zeros(1, dtype=F64)
    t = base.new_tensor([1, 2])
    assert t.dtype is F64 and t.tolist() == [1.0, 2.0]
    assert ember.tensor([1]).new_tensor([1.5]).tolist() == [1]  # the base's dtype wins
    r = ember.zeros(1).new_tensor([1, 2], requires_grad=True)
    assert r.requires_grad and r.dtype is F32
    with pytest.warns(UserWarning, match="new_tensor"):
        c = base.new_tensor(ember.tensor([3, 4]))
    assert c.dtype is F64


# -- devices ----------------------------------------------------------------------------------

DEVICE_FACTORIES = [
    lambda d: ember.tensor([1.0, 2.0], device=d),
    lambda d: ember.as_tensor(np.ones(2), device=d),
    lambda d: ember.zeros(2, device=d),
    lambda d: ember.ones(2, device=d),
    lambda d: ember.empty(2, device=d),
    lambda d: ember.full((2,), 3, device=d),
    lambda d: ember.arange(3, device=d),
    lambda d: ember.linspace(0, 1, 3, device=d),
    lambda d: ember.logspace(0, 1, 3, device=d),
    lambda d: ember.eye(2, device=d),
    lambda d: ember.empty_strided((2,), (1,), device=d),
]


@pytest.mark.parametrize("make", DEVICE_FACTORIES)
def test_factories_honour_device(make, testdev):
    t = make(testdev)
    assert t.device == testdev and t.device is ember.device("testdev:0")
    assert make("testdev").device is ember.device("testdev", 0)
    assert make(ember.device("testdev", 1)).device is ember.device("testdev", 1)


@pytest.mark.parametrize("make", DEVICE_FACTORIES)
def test_factories_honour_the_device_context(make, testdev):
    with ember.device(testdev):
        assert make(None).device == testdev
    with ember.device("testdev"):  # the index is filled in, as for an explicit device=
        assert make(None).device is ember.device("testdev", 0)
    assert make(None).device == ember.device("cpu")


def test_like_factories_keep_the_device(testdev):
    src = ember.ones(2, device=testdev)
    for fn in (ember.zeros_like, ember.ones_like, ember.empty_like):
        assert fn(src).device == testdev
        assert fn(src, device="cpu").device == ember.device("cpu")
    assert ember.full_like(src, 2.0).device == testdev


def test_tensor_moves_a_tensor_between_devices(testdev):
    src = ember.tensor([1.0, 2.0], device=testdev)
    with pytest.warns(UserWarning):
        assert ember.tensor(src).device == testdev
    with pytest.warns(UserWarning):
        moved = ember.tensor(src, device="cpu")
    assert moved.device == ember.device("cpu") and moved.tolist() == [1.0, 2.0]


def test_device_mixing_still_raises(testdev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.zeros(2, device=testdev) + ember.zeros(2)


def test_new_factories_take_size_by_keyword():
    # PyTorch's Tensor.new_zeros/new_ones/new_empty accept size= (the flex-attention code does)
    x = ember.ones(2, dtype=ember.float64)
    for name in ("new_zeros", "new_ones", "new_empty"):
        r = getattr(x, name)(size=(2, 3))
        assert r.shape == (2, 3) and r.dtype == ember.float64
        assert getattr(x, name)(2, 3).shape == (2, 3)
        with pytest.raises(TypeError, match=f'{name}\\(\\) missing 1 required positional '
                           'arguments: "size"'):
            getattr(x, name)()


@pytest.mark.parametrize("call", [
    "zeros(2, dtype=3)", "ones(2, dtype=3.5)", "empty(2, dtype=[1])", "full((2,), 1.0, dtype=3)",
    "zeros_like(m.ones(2), dtype=3)", "ones_like(m.ones(2), dtype=1.0)",
    "m.ones(2).new_zeros(2, dtype=3)", "m.ones(2).new_full((2,), 1.0, dtype=3)",
    "m.ones(2).new_empty(2, dtype=3)", "range(0, 3, dtype='x')", "zeros(2, dtype='nope')",
    "tensor([1], dtype=3)", "as_tensor([1], dtype=3)", "asarray([1], dtype=3)",
    "frombuffer(b'1234', dtype=3)", "tensor([1], dtype='x')",
])
def test_a_dtype_that_is_not_a_dtype_is_named_as_pytorch(call):
    """PyTorch's parser error naming the factory and the argument (NumPy's "can't convert
    np.ndarray of type 3" before)."""
    torch = pytest.importorskip("torch")
    errors = []
    for m in (ember, torch):
        with pytest.raises(TypeError) as info:
            eval(call if call.startswith("m.") else "m." + call, {"m": m})
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("call", [
    "arange(3, dtype=3)", "arange(3, out=m.empty(3), dtype=7)", "hann_window(4, dtype=1)",
    "kaiser_window(4, dtype='x')", "bartlett_window(3, dtype=2.0)", "linspace(0, 1, 3, dtype=3)",
    "logspace(0, 1, 3, dtype=3)",
])
def test_overloaded_factories_name_themselves_for_a_dtype_that_is_not_one(call):
    """PyTorch lists an overloaded factory's signatures; Ember names the factory and the
    argument, the same TypeError (the windows raised AttributeError: 'int' object has no
    attribute 'is_floating_point')."""
    fn = call.split("(")[0]
    with pytest.raises(TypeError, match=rf"^{fn}\(\): argument 'dtype' must be torch.dtype"):
        eval("m." + call, {"m": ember})
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        eval("m." + call, {"m": torch})


def test_windows_take_pythons_float_as_pytorch():
    w = ember.hann_window(4, dtype=float)
    assert w.dtype == ember.float64


def test_a_dtype_that_is_not_a_dtype_without_the_oracle():
    with pytest.raises(TypeError, match=r"^zeros\(\): argument 'dtype' must be torch.dtype, "
                                        r"not int$"):
        ember.zeros(2, dtype=3)
    with pytest.raises(TypeError, match="argument 'dtype' must be torch.dtype, not float"):
        ember.rand(2, dtype=1.5)
