"""Factories, random functions and tensor printing against PyTorch (the oracle; skipped
without it): dtypes, shapes, values, errors, and ``repr`` character for character."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

torch = pytest.importorskip("torch")


def outcome(mod, fn):
    """What ``fn(mod)`` gives: a tensor summary, a value, or the error (type, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(mod)
        except Exception as exc:  # the error itself is what is compared
            return ("error", type(exc).__name__, str(exc).replace("torch.", "ember."))
    if isinstance(r, (torch.Tensor, ember.Tensor)):
        arr = np.asarray(r.detach().cpu().numpy() if isinstance(r, torch.Tensor)
                         else r.detach().numpy())
        return ("tensor", str(r.dtype).split(".")[-1], tuple(r.shape), arr, r.requires_grad)
    return ("value", repr(r).replace("torch.", "ember."))


def assert_same(fn, check_message=True, rtol=1e-6):
    t, e = outcome(torch, fn), outcome(ember, fn)
    assert t[0] == e[0], (t, e)
    if t[0] == "error":
        assert t[1] == e[1], (t, e)
        if check_message:
            assert t[2] == e[2], (t, e)
    elif t[0] == "tensor":
        assert t[1:3] == e[1:3] and t[4] == e[4], (t[1:3], e[1:3])
        if t[3].dtype.kind == "f":
            np.testing.assert_allclose(e[3], t[3], rtol=rtol, atol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(e[3], t[3])
    else:
        assert t == e


# -- factories ----------------------------------------------------------------------------------

FACTORY_CASES = {
    "bool_int": lambda m: m.tensor([True, 2]),
    "int_float": lambda m: m.tensor([1, 2.5]),
    "int32_scalar_tensor_and_int": lambda m: m.tensor([m.tensor(1, dtype=m.int32), 2]),
    "int32_tensors": lambda m: m.tensor([m.tensor(1, dtype=m.int32),
                                         m.tensor(2, dtype=m.int32)]),
    "f64_tensor_and_int": lambda m: m.tensor([m.tensor(1.0, dtype=m.float64), 2]),
    "np_f64_scalar": lambda m: m.tensor(np.float64(1.0)),
    "np_f32_in_list": lambda m: m.tensor([np.float32(1.0)]),
    "np_f64_and_int": lambda m: m.tensor([np.float64(1.0), 1]),
    "np_arrays_in_list": lambda m: m.tensor([np.array([1, 2]), np.array([3, 4])]),
    "np_f64_array": lambda m: m.tensor(np.array([1.0, 2.0])),
    "nested": lambda m: m.tensor([[[1.5, 2], [3, 4]], [[5, 6], [True, 8]]]),
    "empty": lambda m: m.tensor([]),
    "empty_2d": lambda m: m.tensor([[], []]),
    "tuple": lambda m: m.tensor((1, 2)),
    "python_range": lambda m: m.tensor(range(4)),
    "truncate": lambda m: m.tensor([1.7, -1.7], dtype=m.int64),
    "wrap_uint8": lambda m: m.tensor([-1], dtype=m.uint8),
    "ragged": lambda m: m.tensor([[1, 2], [3, 4, 5]]),
    "ragged_deep": lambda m: m.tensor([[[1], [2]], [[3]]]),
    "not_a_sequence": lambda m: m.tensor([[1, 2], 3]),
    "list_as_int": lambda m: m.tensor([1, [2, 3]]),
    "list_as_float": lambda m: m.tensor([1.5, [2, 3]]),
    "str": lambda m: m.tensor("a"),
    "str_list": lambda m: m.tensor(["a"]),
    "none": lambda m: m.tensor(None),
    "overflow": lambda m: m.tensor(2 ** 63),
    "int8_overflow": lambda m: m.tensor([1000], dtype=m.int8),
    "multi_element_int_tensor": lambda m: m.tensor([m.tensor([1, 2])]),
    "multi_element_float_tensor": lambda m: m.tensor([m.tensor([1.0, 2.0])]),
    "int_requires_grad": lambda m: m.tensor([1, 2], requires_grad=True),
    "float_requires_grad": lambda m: m.tensor([1.0, 2.0], requires_grad=True),
    "from_numpy_list": lambda m: m.from_numpy([1]),
    "from_numpy_byteorder": lambda m: m.from_numpy(np.array([1.0], dtype=">f8")),
    "zeros_neg": lambda m: m.zeros(2, -1),
    "ones_neg": lambda m: m.ones(2, -1),
    "zeros_float_size": lambda m: m.zeros(2, 3.0),
    "zeros_size": lambda m: m.zeros(m.Size([2, 3])),
    "zeros_list": lambda m: m.zeros([2, 3]),
    "zeros_scalar": lambda m: m.zeros(()),
    "zeros_np_int": lambda m: m.zeros(np.int64(2)),
    "zeros_tensor_int": lambda m: m.zeros(m.tensor(2)),
    "zeros_kw_size": lambda m: m.zeros(size=(2,)),
    "zeros_int_requires_grad": lambda m: m.zeros(2, dtype=m.int32, requires_grad=True),
    "ones_f64": lambda m: m.ones(2, 2, dtype=m.float64, requires_grad=True),
    "full_float": lambda m: m.full((2,), 1.5),
    "full_bool": lambda m: m.full((2,), True),
    "full_int": lambda m: m.full((2,), 3),
    "full_np_float": lambda m: m.full([2], np.float64(3)),
    "full_tensor": lambda m: m.full([2], m.tensor(3)),
    "full_int_size": lambda m: m.full(2, 3),
    "full_int8_overflow": lambda m: m.full([2], 1000, dtype=m.int8),
    "full_int32_overflow": lambda m: m.full([2], 2 ** 40, dtype=m.int32),
    "full_uint8_wrap": lambda m: m.full([2], -1, dtype=m.uint8),
    "full_truncate": lambda m: m.full([2], 1.5, dtype=m.int32),
    "full_like_int": lambda m: m.full_like(m.zeros(2, dtype=m.int32), 2.7),
    "zeros_like_requires_grad": lambda m: m.zeros_like(m.zeros(2, dtype=m.int32),
                                                       requires_grad=True),
    "ones_like_dtype": lambda m: m.ones_like(m.zeros(2, 3), dtype=m.int64),
    "arange_int": lambda m: m.arange(5),
    "arange_float": lambda m: m.arange(5.0),
    "arange_step": lambda m: m.arange(1, 2.5, 0.5),
    "arange_tenth": lambda m: m.arange(0, 1, 0.1),
    "arange_tenth_plus": lambda m: m.arange(0, 1.0001, 0.1),
    "arange_down": lambda m: m.arange(0, -5, -1),
    "arange_zero_step": lambda m: m.arange(0, 5, 0),
    "arange_bad_sign": lambda m: m.arange(0, 5, -1),
    "arange_nan": lambda m: m.arange(float("nan")),
    "arange_tensor": lambda m: m.arange(m.tensor(3)),
    "arange_float_tensor": lambda m: m.arange(m.tensor(3.0)),
    "arange_int64_from_floats": lambda m: m.arange(0.5, 5, 1.5, dtype=m.int64),
    "arange_int64_zero_step": lambda m: m.arange(0, 5, 0.5, dtype=m.int64),
    "arange_negative_start": lambda m: m.arange(-3.7, 4, dtype=m.int64),
    "arange_int32_zero_step": lambda m: m.arange(1.5, 3.5, 0.5, dtype=m.int32),
    "arange_bool": lambda m: m.arange(10, dtype=m.bool),
    "arange_f16": lambda m: m.arange(1, 10, 3, dtype=m.float16),
    "arange_long": lambda m: m.arange(-1, 700, 0.37),
    "arange_f64": lambda m: m.arange(-10, 10, 0.013, dtype=m.float64),
    "range": lambda m: m.range(1, 4),
    "range_int": lambda m: m.range(1, 4, dtype=m.int64),
    "range_frac": lambda m: m.range(0, 1, 0.3),
    "linspace": lambda m: m.linspace(0, 1, 5),
    "linspace_int": lambda m: m.linspace(0, 10, 5, dtype=m.int64),
    "linspace_int32": lambda m: m.linspace(-2.5, 7, 13, dtype=m.int32),
    "linspace_one": lambda m: m.linspace(0, 1, 1),
    "linspace_zero": lambda m: m.linspace(0, 1, 0),
    "linspace_neg": lambda m: m.linspace(0, 1, -1),
    "linspace_f16": lambda m: m.linspace(-1.3, 2.9, 101, dtype=m.float16),
    "linspace_f64": lambda m: m.linspace(-1.3, 2.9, 1001, dtype=m.float64),
    "linspace_tensors": lambda m: m.linspace(m.tensor(0.0), m.tensor(1.0), 3),
    "logspace": lambda m: m.logspace(0, 2, 3),
    "logspace_base": lambda m: m.logspace(0, 2, 3, base=2),
    "logspace_int": lambda m: m.logspace(0, 2, 3, dtype=m.int64),
    "logspace_f64": lambda m: m.logspace(-2, 2, 9, dtype=m.float64),
    "logspace_one": lambda m: m.logspace(1, 1, 1),
    "eye": lambda m: m.eye(3),
    "eye_rect": lambda m: m.eye(2, 3, dtype=m.int32),
    "eye_tall": lambda m: m.eye(3, 2),
    "eye_neg": lambda m: m.eye(-1),
    "eye_neg_m": lambda m: m.eye(2, -1),
    "empty_strided": lambda m: m.empty_strided((2, 3), (1, 2)).stride(),
    "new_tensor": lambda m: m.tensor([1, 2], dtype=m.float64).new_tensor([1, 2]),
    "new_zeros": lambda m: m.tensor([1, 2], dtype=m.float64).new_zeros(2, 3),
    "new_full": lambda m: m.tensor([1, 2], dtype=m.int32).new_full((2,), 3.5),
    "new_ones": lambda m: m.tensor([1, 2], dtype=m.int32).new_ones(2, dtype=m.float64),
    "new_tensor_grad": lambda m: m.tensor([1.0, 2.0]).new_tensor([1, 2], requires_grad=True),
    "as_tensor": lambda m: m.as_tensor([1, 2], dtype=m.float64),
    "asarray_grad": lambda m: m.asarray([1, 2], dtype=m.float64, requires_grad=True),
    "tensor_ctor": lambda m: m.Tensor(2, 3).shape,
    "tensor_ctor_empty": lambda m: m.Tensor().shape,
}


@pytest.mark.parametrize("name", list(FACTORY_CASES))
def test_factory_parity(name):
    assert_same(FACTORY_CASES[name])


def test_from_numpy_unsupported_dtype_errors_alike():
    for arr in (np.array(["a"]), np.array([1], dtype=object)):
        assert_same(lambda m, a=arr: m.from_numpy(a), check_message=False)
        msg = outcome(ember, lambda m, a=arr: m.from_numpy(a))[2]
        assert msg.startswith(outcome(torch, lambda m, a=arr: m.from_numpy(a))[2][:40])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_default_dtype_parity(dtype):
    if dtype.startswith("int"):
        return
    torch.set_default_dtype(getattr(torch, dtype))
    ember.set_default_dtype(getattr(ember, dtype))
    try:
        for fn in (lambda m: m.tensor([1.5]), lambda m: m.arange(3.0), lambda m: m.zeros(2),
                   lambda m: m.full((2,), 1.5), lambda m: m.linspace(0, 1, 3),
                   lambda m: m.rand(2).dtype, lambda m: m.randn(2).dtype,
                   lambda m: repr(m.tensor([1.5], dtype=m.float32, device="cpu"))):
            t, e = outcome(torch, fn), outcome(ember, fn)
            assert t[0] == e[0] and (t[1:3] == e[1:3] if t[0] == "tensor" else
                                     str(t[1]).replace("torch", "ember") == str(e[1]))
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


@settings(max_examples=40, deadline=None)
@given(st.floats(-100, 100), st.floats(0.001, 50), st.floats(0.01, 10))
def test_arange_length_parity(start, span, step):
    for args in ((start, start + span, step), (start + span, start, -step)):
        assert ember.arange(*args).shape == torch.arange(*args).shape
        # PyTorch's kernel splits start + i * step differently: last-bit differences, also
        # where an element is (nearly) zero, so the tolerance is absolute in units of step
        np.testing.assert_allclose(ember.arange(*args, dtype=ember.float64).numpy(),
                                   torch.arange(*args, dtype=torch.float64).numpy(),
                                   rtol=1e-7, atol=1e-12 * abs(step))


@settings(max_examples=40, deadline=None)
@given(st.floats(-100, 100), st.floats(-100, 100), st.integers(0, 300))
def test_linspace_parity(start, end, steps):
    np.testing.assert_allclose(ember.linspace(start, end, steps, dtype=ember.float64).numpy(),
                               torch.linspace(start, end, steps, dtype=torch.float64).numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.linspace(start, end, steps).numpy(),
                               torch.linspace(start, end, steps).numpy(), rtol=1e-5, atol=1e-4)
    # integer results may differ by one: PyTorch's vectorised kernel truncates per chunk
    np.testing.assert_allclose(ember.linspace(start, end, steps, dtype=ember.int64).numpy(),
                               torch.linspace(start, end, steps, dtype=torch.int64).numpy(),
                               atol=1)


# -- random: dtypes, shapes, errors (values are not PyTorch's streams) ----------------------

def _z(m, *size, **kw):
    return m.zeros(*size, **kw)


RANDOM_CASES = {
    "rand": lambda m: m.rand(2, 3).shape, "rand_f64": lambda m: m.rand(2, dtype=m.float64).dtype,
    "rand_int": lambda m: m.rand(2, dtype=m.int64),
    "randn_int": lambda m: m.randn(2, dtype=m.int64),
    "rand_neg": lambda m: m.rand(-1),
    "randint_equal": lambda m: m.randint(5, 5, (2,)),
    "randint_float": lambda m: m.randint(5, (2,), dtype=m.float32).dtype,
    "randint_bool": lambda m: m.randint(5, (2,), dtype=m.bool),
    "randint_int32_bound": lambda m: m.randint(0, 2 ** 40, (2,), dtype=m.int32),
    "randint_no_size": lambda m: m.randint(3, 5),
    "randint_grad": lambda m: m.randint(2, (3,), requires_grad=True),
    "randperm_float": lambda m: m.randperm(4, dtype=m.float32).dtype,
    "randperm_neg": lambda m: m.randperm(-1),
    "normal_neg_std": lambda m: m.normal(_z(m, 2), -1.0),
    "normal_neg_std_tensor": lambda m: m.normal(_z(m, 2), -m.ones(2)),
    "normal_broadcast": lambda m: m.normal(_z(m, 2, 3), m.ones(3)).shape,
    "normal_mismatch": lambda m: m.normal(_z(m, 2), m.ones(3)),
    "normal_mean_dtype": lambda m: m.normal(_z(m, 2), m.ones(2, dtype=m.float64)).dtype,
    "normal_int_mean": lambda m: m.normal(_z(m, 2, dtype=m.int64), 1.0),
    "normal_std_dtype": lambda m: m.normal(0.0, m.ones(2, dtype=m.float64)).dtype,
    "normal_size": lambda m: m.normal(0.0, 1.0, (2,)).dtype,
    "normal_grad_1": lambda m: type(m.normal(_z(m, 2, requires_grad=True), 1.0).grad_fn)
    .__name__,
    "normal_grad_3": lambda m: type(m.normal(_z(m, 2, requires_grad=True), m.ones(2)).grad_fn)
    .__name__,
    "bernoulli_bad_probs": lambda m: m.bernoulli(m.full((2,), 1.5)),
    "bernoulli_bad_p": lambda m: m.bernoulli(_z(m, 2), 1.5),
    "bernoulli_int": lambda m: m.bernoulli(_z(m, 2, dtype=m.int64)),
    "bernoulli_grad": lambda m: type(m.bernoulli(_z(m, 2, requires_grad=True)).grad_fn)
    .__name__,
    "bernoulli_inplace_int": lambda m: _z(m, 2, dtype=m.int64).bernoulli_(0.5).dtype,
    "multinomial_too_many": lambda m: m.multinomial(m.ones(3), 4),
    "multinomial_zero": lambda m: m.multinomial(m.ones(3), 0),
    "multinomial_zero_probs": lambda m: m.multinomial(_z(m, 3), 1),
    "multinomial_negative": lambda m: m.multinomial(-m.ones(3), 1),
    "multinomial_3d": lambda m: m.multinomial(m.ones(2, 2, 2), 1),
    "multinomial_int": lambda m: m.multinomial(m.ones(3, dtype=m.int64), 1),
    "multinomial_rows": lambda m: m.multinomial(m.ones(2, 3), 2).shape,
    "multinomial_one_category": lambda m: m.multinomial(m.tensor([0.0, 1, 0]), 1),
    "multinomial_repl_negative": lambda m: m.multinomial(m.tensor([1.0, -1]), 5, True),
    "multinomial_repl_inf": lambda m: m.multinomial(m.tensor([1.0, float("inf")]), 5, True),
    "poisson_int": lambda m: m.poisson(m.ones(2, dtype=m.int64)),
    "poisson_negative": lambda m: m.poisson(-m.ones(2)),
    "uniform_range": lambda m: _z(m, 2).uniform_(1, 0),
    "uniform_int": lambda m: _z(m, 2, dtype=m.int64).uniform_(),
    "uniform_leaf": lambda m: _z(m, 2, requires_grad=True).uniform_(),
    "normal_neg": lambda m: _z(m, 2).normal_(0, -1),
    "exponential_neg": lambda m: _z(m, 2).exponential_(-1),
    "exponential_int": lambda m: _z(m, 2, dtype=m.int64).exponential_(),
    "geometric_zero": lambda m: _z(m, 2).geometric_(0),
    "cauchy_sigma": lambda m: _z(m, 2).cauchy_(0, -1),
    "cauchy_int": lambda m: _z(m, 2, dtype=m.int64).cauchy_(),
    "log_normal_std": lambda m: _z(m, 2).log_normal_(1, -1),
    "log_normal_int": lambda m: _z(m, 2, dtype=m.int16).log_normal_(),
    "random_equal": lambda m: _z(m, 2).random_(5, 5),
    "random_int8": lambda m: _z(m, 2, dtype=m.int8).random_(0, 1000),
    "random_uint8_from": lambda m: _z(m, 2, dtype=m.uint8).random_(-1, 3),
    "random_bool": lambda m: _z(m, 2, dtype=m.bool).random_().dtype,
    "inplace_grad_fns": lambda m: [type(getattr(_z(m, 2, requires_grad=True) * 1, n)(*a)
                                        .grad_fn).__name__
                                   for n, a in (("uniform_", ()), ("normal_", ()),
                                                ("random_", ()), ("bernoulli_", ()),
                                                ("exponential_", ()), ("geometric_", (0.5,)),
                                                ("cauchy_", ()), ("log_normal_", ()))],
    "generator_neg_seed": lambda m: m.Generator().manual_seed(-1).initial_seed(),
    "generator_overflow": lambda m: m.Generator().manual_seed(2 ** 64),
    "generator_float_seed": lambda m: m.Generator().manual_seed(1.5),
    "generator_state_dtype": lambda m: m.Generator().set_state(m.zeros(3)),
    "generator_state_list": lambda m: m.Generator().set_state([1, 2]),
    "rng_state_dtype": lambda m: m.set_rng_state(m.zeros(3)),
    "state_is_bytes": lambda m: (m.get_rng_state().dtype, m.get_rng_state().dim()),
    "default_seed": lambda m: m.Generator().initial_seed(),
}


@pytest.mark.parametrize("name", list(RANDOM_CASES))
def test_random_parity(name):
    state = ember.get_rng_state()
    try:
        assert_same(RANDOM_CASES[name])
    finally:
        ember.set_rng_state(state)


# -- printing -----------------------------------------------------------------------------------

def assert_repr_same(t_torch, t_ember):
    """The reprs of two CPU tensors (a device's repr has a device suffix, torch's too)."""
    assert repr(t_ember) == repr(t_torch).replace("torch.", "ember.")
    assert str(t_ember) == str(t_torch).replace("torch.", "ember.")


REPR_VALUES = [
    [1.0, 2.0], [1.5, 2.25], [0.1, 100.0], [1e-5, 1.0], [1e10, 1.0], [0.0, 0.0], [-0.0],
    [float("nan"), 1.0], [1.5, float("inf")], [float("nan")], [float("-inf"), 2.0], [1, 2, 3],
    [-1, 100], [True, False], [[1.0, 2.0], [3.0, 4.0]], [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
    3.5, 3, True, [], [[]], [123456789.0], [1e8, 1.0], [0.0001, 1.0], [0.00011, 0.1], [1e-4],
    [12345.678, 0.001], list(np.linspace(-3, 3, 37)), [1e-20, 1e20], [-1e-5],
    [100.0, 1000.0, 10000.0], [0.5] * 30, [-1e-3, 5e5], [7.0e-5, 0.0, -3.0],
]


@pytest.mark.parametrize("data", REPR_VALUES, ids=range(len(REPR_VALUES)))
@pytest.mark.parametrize("dtype", [None, "float64", "float16", "int32", "uint8", "bool"])
def test_repr_parity(data, dtype):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    except (RuntimeError, TypeError, ValueError):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = ember.tensor(data, dtype=getattr(ember, dtype) if dtype else None, device="cpu")
    assert_repr_same(t, e)


@pytest.mark.parametrize("shape", [(2000,), (20, 100), (3, 400), (1001,), (5, 5, 50),
                                   (1, 2000), (2000, 1), (7, 7, 7, 7)])
@pytest.mark.parametrize("kind", ["int", "float", "bool", "wide"])
def test_summarised_repr_parity(shape, kind):
    n = int(np.prod(shape))
    arr = {"int": np.arange(n), "float": np.arange(n, dtype=np.float32) / 7,
           "bool": np.arange(n) % 3 == 0,
           "wide": np.random.default_rng(n).standard_normal(n) * 10.0 ** (np.arange(n) % 7)}
    a = arr[kind].reshape(shape)
    assert_repr_same(torch.from_numpy(a.copy()), ember.from_numpy(a.copy()))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "bool", "int32"])
def test_empty_repr_parity(shape, dtype):
    assert_repr_same(torch.zeros(shape, dtype=getattr(torch, dtype)),
                     ember.zeros(shape, dtype=getattr(ember, dtype), device="cpu"))


def test_autograd_and_dtype_suffix_parity():
    x = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)
    with ember.device("cpu"):  # CPU tensors, as torch's: reprs without a device suffix
        pairs = [
            (torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)),
            (torch.tensor(x, requires_grad=True) * 2, ember.tensor(x, requires_grad=True) * 2),
            (torch.tensor(x, dtype=torch.float64, requires_grad=True) + 2,
             ember.tensor(x, dtype=ember.float64, requires_grad=True) + 2),
            (torch.tensor(2.0, requires_grad=True), ember.tensor(2.0, requires_grad=True)),
            (torch.zeros(0, 2, dtype=torch.float64, requires_grad=True),
             ember.zeros(0, 2, dtype=ember.float64, requires_grad=True)),
            (torch.arange(12, dtype=torch.int16).reshape(3, 4),
             ember.arange(12, dtype=ember.int16).reshape(3, 4)),
            (torch.arange(40, dtype=torch.int32), ember.arange(40, dtype=ember.int32)),
        ]
    for t, e in pairs:
        assert_repr_same(t, e)


PRINT_OPTIONS = [dict(precision=2), dict(threshold=5), dict(edgeitems=1, threshold=10),
                 dict(linewidth=40), dict(sci_mode=True), dict(sci_mode=False),
                 dict(profile="short"), dict(profile="full"), dict(edgeitems=0, threshold=3),
                 dict(precision=8), dict(linewidth=120, precision=6)]


@pytest.mark.parametrize("opts", PRINT_OPTIONS, ids=[str(o) for o in PRINT_OPTIONS])
def test_printoptions_parity(opts):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((4, 30)).astype(np.float32), rng.standard_normal((3, 7)) * 1e5,
              rng.integers(-1000, 1000, (50,)).astype(np.int32),
              rng.standard_normal((2, 3, 4)), np.arange(2000.0, dtype=np.float32)]
    torch.set_printoptions(**opts)
    ember.set_printoptions(**opts)
    try:
        for a in arrays:
            assert_repr_same(torch.from_numpy(a), ember.from_numpy(a))
    finally:
        torch.set_printoptions(profile="default")
        ember.set_printoptions(profile="default")


def _float_elements(width):
    finite = st.floats(width=width, allow_nan=False, allow_infinity=False)
    scaled = st.builds(lambda m, e: m * 10.0 ** e, st.floats(-10, 10), st.integers(-12, 12))
    small = st.integers(-1000, 1000).map(float)
    special = st.sampled_from([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 0.5])
    return st.one_of(finite, scaled, small, special)


ELEMENTS = {
    np.float32: _float_elements(32), np.float64: _float_elements(64),
    np.float16: st.floats(width=16), np.int64: st.integers(-(2 ** 63), 2 ** 63 - 1),
    np.int32: st.integers(-(2 ** 31), 2 ** 31 - 1), np.uint8: st.integers(0, 255),
    np.int16: st.integers(-(2 ** 15), 2 ** 15 - 1), np.bool_: st.booleans(),
}


@st.composite
def small_arrays(draw):
    dtype = draw(st.sampled_from(list(ELEMENTS)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    elements = ELEMENTS[dtype]
    if dtype in (np.float32, np.float16):  # values representable in the dtype
        elements = elements.map(lambda v, d=dtype: float(np.array(v).astype(d)))
    with np.errstate(over="ignore"):
        return draw(hnp.arrays(dtype, shape, elements=elements))


@settings(max_examples=150, deadline=None)
@given(small_arrays())
def test_repr_parity_property(arr):
    assert_repr_same(torch.from_numpy(arr.copy()), ember.from_numpy(arr.copy()))
