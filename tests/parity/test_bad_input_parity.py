"""Bad input against PyTorch (the oracle; skipped without it): a property sweep of ops over
int64/int32/uint8/bool/float32/float64 inputs full of zeros, negatives, empty tensors and
extreme values (dtype min/max, inf, nan). Either both libraries raise the same exception type
or both succeed with the same dtype, shape and values (NaN where NaN)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.parity, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

DTYPES = ["int64", "int32", "uint8", "bool", "float32", "float64"]
SHAPES = [(), (0,), (1,), (3,), (2, 3), (2, 0), (0, 3)]
EXAMPLES = 60


def _specials(name: str) -> list:
    """Zeros, negatives and the extremes of a dtype, with a few ordinary values."""
    if name == "bool":
        return [False, True]
    if name == "uint8":
        return [0, 1, 2, 7, 128, 255]
    if name.startswith("int"):
        info = np.iinfo(name)
        return [0, 1, -1, 2, -3, 7, info.min, info.max, info.min + 1]
    info = np.finfo(name)
    return [0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 0.5, float(info.max), float(-info.max),
            float(info.tiny), math.inf, -math.inf, math.nan]


def arrays(dtype: str, shape) -> st.SearchStrategy:
    return hnp.arrays(np.dtype(dtype), shape, elements=st.sampled_from(_specials(dtype)))


def tensor_arrays(shapes=SHAPES) -> st.SearchStrategy:
    return st.tuples(st.sampled_from(DTYPES), st.sampled_from(shapes)).flatmap(
        lambda ds: arrays(*ds))


SCALARS = st.sampled_from([0, 1, -1, 2, -3, 7, 255, 2**31, -(2**63), 2**63 - 1, 0.0, -0.0,
                           1.5, -2.5, math.inf, -math.inf, math.nan, True, False])


@st.composite
def operand_pairs(draw):
    """Two operands: a tensor and a tensor of the same, a broadcastable or any shape, or a
    Python scalar on either side."""
    a = draw(tensor_arrays())
    form = draw(st.sampled_from(["same", "any", "scalar", "rscalar"]))
    if form in ("scalar", "rscalar"):
        s = draw(SCALARS)
        return (a, s) if form == "scalar" else (s, a)
    shape = a.shape if form == "same" else draw(st.sampled_from(SHAPES))
    b = draw(arrays(draw(st.sampled_from(DTYPES)), shape))
    return a, b


# -- running both --------------------------------------------------------------------------

def as_tensor(lib, x):
    """``x`` (NumPy array, else a Python scalar kept as is) as a tensor of ``lib``."""
    return lib.tensor(x.copy()) if isinstance(x, np.ndarray) else x


def builtin_type(exc: BaseException) -> type:
    """The exception's nearest built-in class (torch.OutOfMemoryError is a RuntimeError)."""
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")


def outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # any error is an outcome to compare
        return None, exc


def assert_same_result(e, t):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for x, y in zip(e, t):
            assert_same_result(x, y)
        return
    if not isinstance(t, torch.Tensor):
        assert e == t or (e != e and t != t), (e, t)
        return
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    a, b = e.detach().numpy(), t.detach().numpy()
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        rtol = 1e-5 if a.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


def run_both(fn, *inputs):
    """``fn(lib, *tensors)`` in ember and in torch: the same exception type, or results."""
    t_out, t_exc = outcome(lambda: fn(torch, *(as_tensor(torch, x) for x in inputs)))
    e_out, e_exc = outcome(lambda: fn(ember, *(as_tensor(ember, x) for x in inputs)))
    if t_exc is not None or e_exc is not None:
        assert t_exc is not None and e_exc is not None, (t_exc, e_exc)
        assert builtin_type(e_exc) is builtin_type(t_exc), (t_exc, e_exc)
        return
    assert_same_result(e_out, t_out)


# -- excluded: undefined behaviour and known differences ----------------------------------

def _dtype_min_over_minus_one(a, b) -> bool:
    """``INT_MIN / -1`` overflows: undefined behaviour in C (PyTorch's kernels die of SIGFPE),
    so no defined result to match. A Python number meets the tensor in the tensor's dtype,
    wrapped: ``int32(-2**31).div_(2**63 - 1, rounding_mode="trunc")`` divides by -1."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype.kind not in "iub" or b_arr.dtype.kind not in "iub":
        return False
    dtype = a_arr.dtype if isinstance(a, np.ndarray) else b_arr.dtype
    if dtype.kind != "i":
        return False
    a_w = a_arr if isinstance(a, np.ndarray) else a_arr.astype(dtype)
    b_w = b_arr if isinstance(b, np.ndarray) else b_arr.astype(dtype)
    return bool((b_w == -1).any()) and bool((a_w == np.iinfo(dtype).min).any())


INTEGER_DIVISIONS = {"floor_divide", "//", "div_floor", "div_trunc", "remainder", "%", "fmod"}


# -- binary ops ----------------------------------------------------------------------------

BINARY = {
    "add": lambda M, a, b: a + b if isinstance(a, M.Tensor) else M.add(b, a),
    "sub": lambda M, a, b: a - b,
    "mul": lambda M, a, b: a * b,
    "div": lambda M, a, b: a / b,
    "//": lambda M, a, b: a // b,
    "floor_divide": lambda M, a, b: M.floor_divide(a, b),
    "div_floor": lambda M, a, b: M.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda M, a, b: M.div(a, b, rounding_mode="trunc"),
    "%": lambda M, a, b: a % b,
    "remainder": lambda M, a, b: M.remainder(a, b),
    "fmod": lambda M, a, b: M.fmod(a, b),
    "pow": lambda M, a, b: a ** b,
    "eq": lambda M, a, b: a == b,
    "lt": lambda M, a, b: a < b,
    "ge": lambda M, a, b: a >= b,
    "bitwise_and": lambda M, a, b: a & b,
    "bitwise_or": lambda M, a, b: a | b,
    "bitwise_xor": lambda M, a, b: a ^ b,
    "maximum": lambda M, a, b: M.maximum(a, b),
}


# PyTorch's argument parser takes no number as the ``input`` of these functions; Ember's
# accept one (deliberately lenient: every program PyTorch runs still runs)
TENSOR_INPUT_ONLY = {"fmod", "maximum"}


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=EXAMPLES, deadline=None)
@given(pair=operand_pairs())
def test_binary_ops_match_torch(name, pair):
    a, b = pair
    if name in INTEGER_DIVISIONS and _dtype_min_over_minus_one(a, b):
        return
    if name in TENSOR_INPUT_ONLY and not isinstance(a, np.ndarray):
        return
    run_both(BINARY[name], a, b)


INPLACE = {"%": lambda t, o: t.remainder_(o), "//": lambda t, o: t.floor_divide_(o),
           "fmod": lambda t, o: t.fmod_(o),
           "div_trunc": lambda t, o: t.div_(o, rounding_mode="trunc")}


def _bool_into_other_shape(a, b) -> bool:
    """An in-place division of bools whose broadcast shape is not ``self``'s: both raise, but
    PyTorch checks the output's shape (RuntimeError) before the kernel's dtype
    (NotImplementedError), while Ember's in-place ops (``make_inplace`` in ops/_inplace.py)
    run the op before they check the shape."""
    if a.dtype.kind != "b" or np.asarray(b).dtype.kind != "b":
        return False
    try:
        return np.broadcast_shapes(a.shape, np.shape(b)) != a.shape
    except ValueError:
        return True


@pytest.mark.parametrize("name", sorted(INPLACE))
@settings(max_examples=EXAMPLES, deadline=None)
@given(pair=operand_pairs())
def test_inplace_integer_division_matches_torch(name, pair):
    a, b = pair
    if not isinstance(a, np.ndarray) or _dtype_min_over_minus_one(a, b) or \
            _bool_into_other_shape(a, b):
        return
    run_both(lambda M, t, o: (INPLACE[name](t, o), t)[1], a, b)


# -- unary ops -----------------------------------------------------------------------------

UNARY = ["neg", "abs", "sqrt", "exp", "log", "sin", "floor", "ceil", "round", "trunc", "sign",
         "reciprocal", "sigmoid", "bitwise_not", "logical_not", "isnan", "isinf", "square"]


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=EXAMPLES, deadline=None)
@given(a=tensor_arrays())
def test_unary_ops_match_torch(name, a):
    run_both(lambda M, t: getattr(M, name)(t), a)


# -- reductions ----------------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin", "amax", "all", "any"]


def _overflows_part_way(name: str, a: np.ndarray) -> bool:
    """A float sum or product over finite extremes (``max + -max``, ``max * tiny * max``):
    whether it overflows part way depends on the order of the additions, which differs
    between NumPy's pairwise loops and PyTorch's vectorized ones; no one result to match."""
    if name not in ("sum", "mean", "prod") or a.dtype.kind != "f":
        return False
    info = np.finfo(a.dtype)
    magnitude = np.abs(a)
    return bool(((magnitude == info.max) | (magnitude == info.tiny)).any())


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(a=tensor_arrays(), dim=st.sampled_from([None, 0, -1, 1]), keepdim=st.booleans())
def test_reductions_match_torch(name, a, dim, keepdim):
    if _overflows_part_way(name, a):
        return
    if dim is None:
        run_both(lambda M, t: getattr(M, name)(t), a)
    else:
        run_both(lambda M, t: getattr(M, name)(t, dim, keepdim=keepdim), a)


# -- clamp, where, indexing ----------------------------------------------------------------

BOUNDS = st.one_of(st.none(), SCALARS, tensor_arrays([(), (1,), (3,), (2, 3), (0,)]))


def _number_and_tensor_bounds(lo, hi) -> bool:
    """A number and a tensor as bounds: PyTorch's argument parser reads a 0-dim tensor there
    as a number (another result dtype) and has no overload for more dims (a TypeError);
    Ember keeps a tensor a tensor and accepts the mix (deliberately)."""
    return sum(isinstance(x, np.ndarray) for x in (lo, hi)) == 1 and \
        sum(x is not None for x in (lo, hi)) == 2


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(a=tensor_arrays(), lo=BOUNDS, hi=BOUNDS)
def test_clamp_matches_torch(a, lo, hi):
    if _number_and_tensor_bounds(lo, hi):
        return
    run_both(lambda M, t, x, y: M.clamp(t, x, y), a, lo, hi)


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(cond=st.sampled_from(SHAPES).flatmap(lambda s: arrays("bool", s)),
       pair=operand_pairs())
def test_where_matches_torch(cond, pair):
    a, b = pair
    run_both(lambda M, c, x, y: M.where(c, x, y), cond, a, b)


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(a=tensor_arrays([(0,), (1,), (3,), (2, 3), (2, 0), ()]),
       index=st.integers(-7, 7), dim=st.sampled_from([0, 1]), write=st.booleans())
def test_int_indexing_matches_torch(a, index, dim, write):
    key = index if dim == 0 else (slice(None), index)

    def fn(M, t):
        if write:
            t[key] = 1
            return t
        return t[key]

    run_both(fn, a)


INDEX_OPS = {
    "index_select": lambda M, t, d, i, alpha: t.index_select(d, i),
    "index_add": lambda M, t, d, i, alpha: t.index_add(d, i, _source(M, t, d, i), alpha=alpha),
    "index_copy": lambda M, t, d, i, alpha: t.index_copy(d, i, _source(M, t, d, i)),
    "index_fill": lambda M, t, d, i, alpha: t.index_fill(d, i, -1.0),
}


def _source(M, t, dim, index):
    shape = list(t.shape)
    shape[dim] = index.shape[0]
    return M.ones(shape, dtype=t.dtype)


@pytest.mark.parametrize("name", sorted(INDEX_OPS))
@settings(max_examples=EXAMPLES, deadline=None)
@given(shape=st.sampled_from([(3,), (3, 2), (2, 3), (3, 2, 2), (2, 3, 2, 2)]),
       data=st.data(), alpha=st.sampled_from([1, 2]),
       index_dtype=st.sampled_from(["int64", "int32"]))
def test_index_ops_out_of_range_match_torch(name, shape, data, alpha, index_dtype):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = data.draw(hnp.arrays(np.dtype(index_dtype), st.integers(1, 3),
                                 elements=st.integers(-5, 5)))
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    run_both(lambda M, t, i: INDEX_OPS[name](M, t, dim, i, alpha), x, index)
