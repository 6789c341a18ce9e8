"""Bad input raises PyTorch's exceptions in its words: integer division by zero, indices out
of range, absurd factory sizes, shapes that do not broadcast, and dtypes a kernel lacks.
(tests/parity/test_bad_input_parity.py sweeps the same ground against PyTorch itself.)"""

import math

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

INT_DTYPES = [ember.int64, ember.int32, ember.uint8]


# -- integer division by zero ----------------------------------------------------------------

DIVISIONS = {
    "%": lambda a, b: a % b,
    "remainder": lambda a, b: ember.remainder(a, b),
    "fmod": lambda a, b: ember.fmod(a, b),
    "//": lambda a, b: a // b,
    "floor_divide": lambda a, b: ember.floor_divide(a, b),
    "div_floor": lambda a, b: ember.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: ember.div(a, b, rounding_mode="trunc"),
}
INPLACE_DIVISIONS = {
    "%=": lambda a, b: a.__imod__(b),
    "remainder_": lambda a, b: a.remainder_(b),
    "fmod_": lambda a, b: a.fmod_(b),
    "//=": lambda a, b: a.__ifloordiv__(b),
    "floor_divide_": lambda a, b: a.floor_divide_(b),
    "div_floor_": lambda a, b: a.div_(b, rounding_mode="floor"),
    "div_trunc_": lambda a, b: a.div_(b, rounding_mode="trunc"),
}


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", sorted(DIVISIONS))
def test_integer_division_by_zero_raises(name, dtype):
    op = DIVISIONS[name]
    a = ember.tensor([7, 8], dtype=dtype)
    for divisor in (ember.tensor([1, 0], dtype=dtype), ember.tensor(0, dtype=dtype), 0, False):
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            op(a, divisor)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        op(ember.tensor(7, dtype=dtype), ember.tensor(0, dtype=dtype))


@pytest.mark.parametrize("name", sorted(INPLACE_DIVISIONS))
def test_inplace_integer_division_by_zero_raises_and_leaves_the_tensor(name):
    a = ember.tensor([7, -8])
    version = a._version
    for divisor in (0, ember.tensor([3, 0])):
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            INPLACE_DIVISIONS[name](a, divisor)
    assert a.tolist() == [7, -8] and a._version == version


def test_scalar_dividend_by_zero_raises():
    z = ember.tensor([2, 0])
    for op in (lambda: 7 % z, lambda: 7 // z, lambda: ember.remainder(7, z),
               lambda: ember.div(7, z, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            op()


def test_bool_promoted_by_an_int_divides_by_zero_as_an_integer():
    b = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        b % 0
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        b // 0
    assert (b // 1).tolist() == [1, 0] and (b // 1).dtype is ember.int64


@pytest.mark.parametrize("name", sorted(DIVISIONS))
def test_empty_results_never_divide(name):
    op = DIVISIONS[name]
    empty = ember.tensor([], dtype=ember.int64)
    for a, b in ((empty, 0), (empty, ember.tensor([0])), (ember.tensor([7]), empty),
                 (ember.zeros(0, 3, dtype=ember.int64), ember.zeros(3, dtype=ember.int64))):
        out = op(a, b)
        assert out.numel() == 0 and out.dtype is ember.int64


def test_shapes_are_checked_before_the_divisor():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        ember.tensor([7, 8]) % ember.tensor([0, 0, 0])


@pytest.mark.parametrize("name", sorted(DIVISIONS))
def test_float_division_by_zero_gives_inf_and_nan(name):
    op = DIVISIONS[name]
    a = ember.tensor([7.0, -7.0, 0.0])
    out = op(a, 0.0).numpy()
    ref = {"%": np.remainder, "remainder": np.remainder, "fmod": np.fmod,
           "//": np.floor_divide, "floor_divide": np.floor_divide,
           "div_floor": np.floor_divide,
           "div_trunc": lambda x, y: np.trunc(x / y)}[name](a.numpy(), np.float32(0.0))
    np.testing.assert_array_equal(out, ref)
    # an integer tensor by a float zero divides in floats
    assert op(ember.tensor([7]), 0.0).dtype is ember.float32
    assert op(ember.tensor([7]), ember.tensor([0.0])).dtype is ember.float32


def test_true_division_of_integers_by_zero_is_float():
    assert (ember.tensor([7, -7, 0]) / 0).tolist()[:2] == [math.inf, -math.inf]
    assert math.isnan((ember.tensor([0]) / ember.tensor([0])).item())


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_values(dtype):
    signed = dtype is not ember.uint8
    a_np = np.array([-7, 7, -8, 9, 0] if signed else [7, 8, 9, 250, 0], dtype=dtype.np)
    b_np = np.array([2, -2, 3, 3, 5] if signed else [2, 3, 3, 7, 5], dtype=dtype.np)
    a, b = ember.tensor(a_np), ember.tensor(b_np)
    trunc = (np.sign(a_np) * np.sign(b_np) * (np.abs(a_np) // np.abs(b_np))).astype(dtype.np)
    np.testing.assert_array_equal(ember.div(a, b, rounding_mode="trunc").numpy(), trunc)
    np.testing.assert_array_equal((a // b).numpy(), np.floor_divide(a_np, b_np))
    np.testing.assert_array_equal((a % b).numpy(), np.remainder(a_np, b_np))
    np.testing.assert_array_equal(ember.fmod(a, b).numpy(), np.fmod(a_np, b_np))
    assert ember.div(a, b, rounding_mode="trunc").dtype is dtype


@pytest.mark.parametrize("name,kernel", [("%", "remainder_cpu"), ("fmod", "fmod_cpu"),
                                         ("//", "div_floor_cpu"), ("div_floor", "div_floor_cpu"),
                                         ("div_trunc", "div_trunc_cpu")])
def test_bool_integer_division_is_not_implemented(name, kernel):
    b = ember.tensor([True, False])
    for other in (b, True):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for '
                                                      "'Bool'"):
            DIVISIONS[name](b, other)
    with pytest.raises(RuntimeError, match="must match the size"):  # shapes first
        DIVISIONS[name](b, ember.tensor([True, True, True]))


# -- powers and subtraction of integers and bools --------------------------------------------

def test_integer_power_by_negative_tensor_exponents():
    base = ember.tensor([2, 0, -1, 1, 3, -1])
    exp = ember.tensor([-1, -2, -3, -5, 2, -2])
    assert (base ** exp).tolist() == [0, 0, -1, 1, 9, 1]
    assert (2 ** ember.tensor([-1, 0, 3])).tolist() == [0, 1, 8]
    assert (ember.tensor([2], dtype=ember.int32) ** ember.tensor(-1)).dtype is ember.int32


def test_integer_power_by_python_int_errors():
    for t in (ember.tensor([2]), ember.tensor([2], dtype=ember.uint8), ember.tensor([True])):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            t ** -1
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            ember.pow(t, -2)
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t without "
                                           "overflow"):
        ember.tensor([1], dtype=ember.uint8) ** 256
    with pytest.raises(RuntimeError, match="cannot be converted to type int without overflow"):
        ember.tensor([1], dtype=ember.int32).pow_(2**31)
    assert (ember.tensor([3], dtype=ember.uint8) ** 7).tolist() == [3**7 % 256]


def test_bool_powers():
    b = ember.tensor([True, False])
    assert (b ** True).dtype is ember.bool and (b ** True).tolist() == [True, False]
    assert (b ** False).tolist() == [True, True]
    assert b.clone().pow_(True).dtype is ember.bool
    assert (b ** 2).dtype is ember.int64
    for op in (lambda: b ** b, lambda: True ** b, lambda: b ** ember.tensor(True)):
        with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
            op()


def test_subtracting_a_python_bool_is_an_error():
    f = ember.tensor([1.5])
    for op in (lambda: f - True, lambda: True - f, lambda: ember.sub(f, False),
               lambda: ember.rsub(f, True)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            op()


# -- indices out of range --------------------------------------------------------------------

@pytest.mark.parametrize("key,dim,index", [(10, 0, 10), (-10, 0, -10), ((slice(None), 5), 1, 5),
                                           ((0, 5), 1, 5), ((Ellipsis, -4), 1, -4)])
def test_python_int_index_out_of_range(key, dim, index):
    t = ember.zeros(3, 3) if dim == 0 else ember.zeros(2, 3)
    size = t.shape[dim]
    msg = f"^index {index} is out of bounds for dimension {dim} with size {size}$"
    with pytest.raises(IndexError, match=msg):
        t[key]
    with pytest.raises(IndexError, match=msg):
        t[key] = 1.0


def test_index_add_out_of_range():
    # 1-d, a middle dim, alpha != 1 or an int32 index: PyTorch's loop, an IndexError
    for make in (lambda: ember.zeros(3).index_add(0, ember.tensor([3]), ember.ones(1)),
                 lambda: ember.zeros(3).index_add_(0, ember.tensor([-1]), ember.ones(1)),
                 lambda: ember.zeros(3, 2, 2).index_add(1, ember.tensor([2]),
                                                        ember.ones(3, 1, 2)),
                 lambda: ember.zeros(3, 2).index_add(0, ember.tensor([3]), ember.ones(1, 2),
                                                     alpha=2),
                 lambda: ember.zeros(3, 2).index_add(
                     0, ember.tensor([3], dtype=ember.int32), ember.ones(1, 2))):
        with pytest.raises(IndexError, match="^index out of range in self$"):
            make()
    # the first or last dim of 2+ dims: PyTorch's scatter_add path, a RuntimeError
    with pytest.raises(RuntimeError, match="^index 3 is out of bounds for dimension 0 with "
                                           "size 3$"):
        ember.zeros(3, 2).index_add(0, ember.tensor([1, 3]), ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds for dimension 2"):
        ember.zeros(3, 2, 2).index_add_(2, ember.tensor([-1]), ember.ones(3, 2, 1))


def test_index_select_out_of_range():
    with pytest.raises(IndexError, match="^index out of range in self$"):
        ember.zeros(3).index_select(0, ember.tensor([5]))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        ember.zeros(3, 2, 2).index_select(2, ember.tensor([-1]))
    with pytest.raises(RuntimeError, match=r"^INDICES element is out of DATA bounds, id=5 "
                                           r"axis_dim=3$"):
        ember.zeros(2, 3).index_select(1, ember.tensor([0, 5, 7]))


def test_int64_only_index_ops_reject_other_index_dtypes():
    index = ember.tensor([0], dtype=ember.int32)
    with pytest.raises(RuntimeError, match="^index_copy_\\(\\): Expected a long tensor for "
                                           "index, but got Int$"):
        ember.zeros(3).index_copy(0, index, ember.ones(1))
    with pytest.raises(IndexError, match="^index_fill_\\(\\): Expected dtype int64 for "
                                         "index.$"):
        ember.zeros(3).index_fill_(0, index, 1.0)
    assert ember.zeros(3).index_select(0, index).tolist() == [0.0]


def test_other_index_ops_out_of_range():
    with pytest.raises(IndexError, match="index_copy_\\(\\): index 5 is out of bounds"):
        ember.zeros(3).index_copy(0, ember.tensor([5]), ember.ones(1))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0"):
        ember.zeros(3).index_fill_(0, ember.tensor([5]), 1.0)
    for op in (lambda: ember.zeros(3).gather(0, ember.tensor([5])),
               lambda: ember.zeros(3).scatter(0, ember.tensor([5]), ember.ones(1))):
        with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0"):
            op()


# -- absurd sizes ----------------------------------------------------------------------------

FACTORIES = {
    "zeros": lambda n, **kw: ember.zeros(n, **kw),
    "ones": lambda n, **kw: ember.ones(n, **kw),
    "empty": lambda n, **kw: ember.empty(n, **kw),
    "full": lambda n, **kw: ember.full((n,), 1, **kw),
    "new_zeros": lambda n, **kw: ember.zeros(1).new_zeros(n, **kw),
    "empty_strided": lambda n, **kw: ember.empty_strided((n,), (1,), **kw),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_sizes_that_overflow(name):
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with "
                                           r"sizes=\[4611686018427387904\]$"):
        FACTORIES[name](2**62)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_sizes_beyond_memory(name):
    # 1 EiB: more than any machine's address space, so the allocation always fails
    with pytest.raises(RuntimeError, match="^DefaultCPUAllocator: can't allocate memory: you "
                                           "tried to allocate 1152921504606846976 bytes."):
        FACTORIES[name](2**60, dtype=ember.uint8)


def test_overflow_counts_every_dim():
    with pytest.raises(RuntimeError, match=r"sizes=\[1099511627776, 1099511627776, 0\]"):
        ember.zeros(2**40, 2**40, 0)
    with pytest.raises(RuntimeError, match=r"sizes=\[2147483648, 2147483648\]"):
        ember.eye(2**31)
    with pytest.raises(RuntimeError, match="you tried to allocate 8796093022208 bytes"):
        ember.arange(2**40)


def test_repeat_to_absurd_sizes():
    with pytest.raises(RuntimeError, match=r"^Storage size calculation overflowed with "
                                           r"sizes=\[2199023255552, 3145728\]$"):
        ember.zeros(2, 3).repeat(2**40, 2**20)
    with pytest.raises(RuntimeError, match="you tried to allocate 1152921504606846976 bytes"):
        ember.zeros(2, dtype=ember.uint8).repeat(2**59)


def test_negative_and_unrepresentable_sizes():
    with pytest.raises(RuntimeError, match="^zeros: Dimension size must be non-negative.$"):
        ember.zeros(2, -3)
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension "
                                           r"-1: \[-1\]$"):
        ember.empty(-1)
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[4611686018427387904, "
                                           r"-1\]"):
        ember.ones(2**62, -1)
    for size in (2**63, -(2**63) - 1):
        with pytest.raises(TypeError, match="ones\\(\\): argument 'size' failed to unpack the "
                                            "object at pos 1 with error \"Overflow when "
                                            "unpacking long long\""):
            ember.ones(size)


# -- shapes that do not broadcast ------------------------------------------------------------

def test_where_with_mismatched_shapes():
    cond = ember.ones(3) > 0
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 0$"):
        ember.where(cond, ember.ones(3), ember.ones(4))
    with pytest.raises(RuntimeError, match=r"tensor a \(5\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 0"):
        ember.where(ember.ones(5) > 0, ember.ones(3), ember.ones(3))
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 0"):
        ember.where(ember.ones(2) > 0, ember.ones(3), 0.0)
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 1"):
        ember.where(ember.ones(2, 2) > 0, ember.ones(2, 3, dtype=ember.float64), ember.ones(1))
    assert ember.where(ember.ones(2, 3) > 0, ember.ones(3), ember.zeros(4, 1, 1)).shape == \
        (4, 2, 3)


def test_clamp_with_mismatched_shapes():
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                                           r"\(3\) at non-singleton dimension 0"):
        ember.clamp(ember.zeros(2), ember.zeros(3))
    with pytest.raises(RuntimeError, match=r"tensor a \(2\) must match the size of tensor b "
                                           r"\(3\)"):
        ember.clamp(ember.zeros(2), ember.zeros(2), ember.zeros(3))
    assert ember.clamp(ember.zeros(2), ember.zeros(3, 2)).shape == (3, 2)


def test_bool_clamp_takes_one_tensor_bound():
    b = ember.tensor([True, False])
    assert ember.clamp(b, ember.tensor(True)).tolist() == [True, True]
    assert ember.clamp_max(b, ember.tensor([False, False])).tolist() == [False, False]
    with pytest.raises(NotImplementedError, match="\"clamp_cpu\" not implemented for 'Bool'"):
        ember.clamp(b, ember.tensor(False), ember.tensor(True))
    with pytest.raises(NotImplementedError, match="\"clamp_min_scalar_cpu\" not implemented"):
        ember.clamp(b, True)


def test_bitwise_checks_shapes_before_dtypes():
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.zeros(2) & ember.zeros(3)
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                                                  "'Float'"):
        ember.zeros(2) & ember.zeros(2)


# -- reductions ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sum", "amax", "all", "any", "prod", "mean"])
def test_reduction_dims_of_a_0_dim_tensor_are_range_checked(name):
    x = ember.tensor(1.0)
    for dim in (1, -2):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                             rf"of \[-1, 0\], but got {dim}\)"):
            getattr(ember, name)(x, dim)
    assert getattr(ember, name)(x, 0).shape == ()


def test_true_division_by_an_int_outside_the_dtype():
    assert (ember.tensor([1, 2], dtype=ember.uint8) / -1).tolist() == [-1.0, -2.0]
    big = ember.tensor(2**31 - 1)
    assert (big / ember.tensor([1], dtype=ember.uint8)).tolist() == [2147483648.0]
    assert (ember.tensor([3], dtype=ember.uint8) / ember.tensor(-3)).tolist() == [-1.0]


@pytest.mark.parametrize("draw", [
    lambda: ember.rand(2**62), lambda: ember.randn(2**40, 2**30),
    lambda: ember.randint(0, 5, (2**62,)), lambda: ember.randperm(2**62),
    lambda: ember.normal(0.0, 1.0, (2**62,)),
])
def test_random_factories_with_absurd_sizes(draw):
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        draw()


def test_batched_matmul_names_the_rightmost_mismatch():
    with pytest.raises(RuntimeError, match=r"a \(3\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 1"):
        ember.zeros(2, 3, 2, 3).matmul(ember.zeros(3, 2, 3, 2))


class _Reflects:
    """An object with its own reflected operators (a units library's quantity, say)."""

    def __radd__(self, other):
        return "radd"

    def __rsub__(self, other):
        return "rsub"

    def __rmul__(self, other):
        return "rmul"

    def __rtruediv__(self, other):
        return "rtruediv"

    def __rmatmul__(self, other):
        return "rmatmul"

    def __rpow__(self, other):
        return "rpow"

    def __rand__(self, other):
        return "rand"

    def __gt__(self, other):  # Python reflects ``<`` to ``>``
        return "gt"


_OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "@": lambda a, b: a @ b, "**": lambda a, b: a ** b,
    "&": lambda a, b: a & b, "<": lambda a, b: a < b,
}
_ANSWERS = {"+": "radd", "-": "rsub", "*": "rmul", "/": "rtruediv", "@": "rmatmul",
            "**": "rpow", "&": "rand", "<": "gt"}


def _outcome(fn):
    try:
        return repr(fn())
    except TypeError as e:
        return f"TypeError: {e}"


def _operator_outcomes(lib) -> dict:
    class Plain:
        pass

    t = lib.tensor([1.0, 2.0])
    found = {}
    for sym, op in _OPERATORS.items():
        found[f"t {sym} reflects"] = _outcome(lambda op=op: op(t, _Reflects()))
        for name, other in (("plain", Plain()), ("None", None), ("str", "a"), ("list", [1, 2])):
            if sym == "<" and name == "list":
                continue  # PyTorch compares a list elementwise
            found[f"t {sym} {name}"] = _outcome(lambda op=op, other=other: op(t, other))
            found[f"{name} {sym} t"] = _outcome(lambda op=op, other=other: op(other, t))
    for name, other in (("plain", Plain()), ("None", None)):
        found[f"t == {name}"] = _outcome(lambda other=other: t == other)
    u = lib.tensor([1.0, 2.0])
    u += _Reflects()
    found["t += reflects"] = repr(u)
    return found


def test_operators_give_foreign_operands_their_turn():
    # as PyTorch's (its TypeError_to_NotImplemented_): ``x + obj`` returns NotImplemented for
    # an operand no tensor op takes, so obj.__radd__ answers, or Python raises its own error
    found = _operator_outcomes(ember)
    for sym, answer in _ANSWERS.items():
        assert found[f"t {sym} reflects"] == repr(answer)
    assert found["t + plain"] == "TypeError: unsupported operand type(s) for +: 'Tensor' and " \
                                 "'Plain'"
    assert found["None @ t"] == "TypeError: unsupported operand type(s) for @: 'NoneType' " \
                                "and 'Tensor'"
    assert found["t == None"] == "False" and found["t += reflects"] == "'radd'"
    t = ember.tensor([1.0, 2.0])
    assert None not in [t] and t in [None, t]
    with pytest.raises(TypeError):  # the functions still raise
        ember.add(t, _Reflects())
    # numbers and arrays still work both ways
    assert (2 - t).tolist() == [1.0, 0.0] and (t * np.float64(2)).tolist() == [2.0, 4.0]


def test_operators_with_foreign_operands_as_pytorch():
    torch = pytest.importorskip("torch")
    assert _operator_outcomes(ember) == _operator_outcomes(torch)
