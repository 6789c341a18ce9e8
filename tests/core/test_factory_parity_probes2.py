"""Factories against PyTorch, second round: torch.tensor's inference and conversion errors
(Fraction, Decimal, bytes, bytearray, floats out of an integer range, complex into real,
empty ragged data), complex linspace/logspace, the argument errors of linspace, logspace,
eye, arange, tril/triu_indices, randint, normal, bernoulli, multinomial, complex, polar."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import ember


def _outcome(m, fn):
    """``fn(module)``'s value (dtype, shape, values) or its exception (type name, message)."""
    try:
        t = fn(m)
    except Exception as exc:  # the outcome is what is compared
        return type(exc).__name__, str(exc).replace("ember", "torch")
    a = t.detach().cpu().numpy() if t.dtype != m.bfloat16 else t.float().cpu().numpy()
    return str(t.dtype).split(".")[-1], tuple(t.shape), np.round(a, 4).tolist()


def _same_as_torch(fn):
    torch = pytest.importorskip("torch")
    assert _outcome(ember, fn) == _outcome(torch, fn)


def _raises(fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(ember)
    _same_as_torch(fn)


def _gives(fn, dtype, values):
    got = _outcome(ember, fn)
    assert got[0] == dtype and got[2] == values
    _same_as_torch(fn)


# -- torch.tensor -----------------------------------------------------------------------------

@pytest.mark.parametrize("data,name", [(Fraction(1, 2), "Fraction"), ([Fraction(1, 2)], "Fraction"),
                                       (Decimal("1.5"), "decimal.Decimal")])
def test_tensor_of_other_number_types_cannot_infer_a_dtype(data, name):
    _raises(lambda m: m.tensor(data), RuntimeError, f"Could not infer dtype of {name}")


def test_tensor_of_bytes_is_an_invalid_type_and_bytearray_a_sequence():
    _raises(lambda m: m.tensor(b"ab"), TypeError, "new(): invalid data type 'bytes'")
    _raises(lambda m: m.tensor([b"ab"]), TypeError, "new(): invalid data type 'bytes'")
    _gives(lambda m: m.tensor(bytearray(b"ab")), "int64", [97, 98])
    _gives(lambda m: m.tensor([bytearray(b"ab"), bytearray(b"cd")]), "int64",
           [[97, 98], [99, 100]])


def test_tensor_infers_only_python_and_numpy_numbers():
    class F(float):
        pass

    class I(int):  # noqa: E742
        pass

    _raises(lambda m: m.tensor([1.5, Fraction(1, 2)]), RuntimeError,
            "Could not infer dtype of Fraction")
    _gives(lambda m: m.tensor(F(1.5)), "float32", 1.5)  # subclasses are their category
    _gives(lambda m: m.tensor([I(3)]), "int64", [3])
    _gives(lambda m: m.tensor(Fraction(1, 2), dtype=m.float32), "float32", 0.5)


@pytest.mark.parametrize("data,dt", [
    ([float("inf")], "int64"), ([float("nan")], "int64"), ([float("inf")], "uint8"),
    ([1e20], "int64"), ([1e20], "int16"), ([-1.5], "uint8"), (float("inf"), "int64"),
    (float("nan"), "int32"), ([1, 2.5, 1e10], "int32"),
])
def test_tensor_of_floats_out_of_an_integer_range(data, dt):
    _raises(lambda m: m.tensor(data, dtype=getattr(m, dt)), RuntimeError,
            f"value cannot be converted to type {dt} without overflow")


def test_tensor_of_a_numpy_float_out_of_an_integer_range():
    _raises(lambda m: m.tensor(np.float64("inf"), dtype=m.int64), RuntimeError,
            "value cannot be converted to type int64 without overflow")
    _gives(lambda m: m.tensor([2.7, -2.7], dtype=m.int8), "int8", [2, -2])  # in range: cut
    _gives(lambda m: m.tensor([-1], dtype=m.uint8), "uint8", [255])


@pytest.mark.parametrize("data,dt,exc,msg", [
    ([1 + 1j], "float64", TypeError, "must be real number, not complex"),
    (1j, "float32", TypeError, "must be real number, not complex"),
    ([1 + 1j, 2], "int32", TypeError, "'complex' object cannot be interpreted as an integer"),
    (1 + 2j, "int64", TypeError, "'complex' object cannot be interpreted as an integer"),
    (None, "float32", TypeError, "must be real number, not NoneType"),
    (Fraction(1, 2), "int64", TypeError, "'Fraction' object cannot be interpreted as an "
                                         "integer"),
])
def test_tensor_conversion_errors_with_a_dtype(data, dt, exc, msg):
    _raises(lambda m: m.tensor(data, dtype=getattr(m, dt)), exc, msg)


@pytest.mark.parametrize("data", [[[], [1, 2]], [[], 1], [[], [True]]])
def test_tensor_of_empty_ragged_data_has_no_elements(data):
    got = _outcome(ember, lambda m: m.tensor(data))
    assert got[:2] == ("float32", (2, 0))
    _same_as_torch(lambda m: m.tensor(data))


# -- linspace / logspace ----------------------------------------------------------------------

@pytest.mark.parametrize("fn,dtype,values", [
    (lambda m: m.linspace(0, 1 + 1j, 3), "complex64", [0j, 0.5 + 0.5j, 1 + 1j]),
    (lambda m: m.linspace(0j, 1, 3), "complex64", [0j, 0.5 + 0j, 1 + 0j]),
    (lambda m: m.linspace(1j, 2j, 1), "complex64", [1j]),
    (lambda m: m.linspace(0, 1 + 1j, 0), "complex64", []),
    (lambda m: m.linspace(1 + 2j, -3 - 1j, 6), "complex64",
     [1 + 2j, 0.2 + 1.4j, -0.6 + 0.8j, -1.4 + 0.2j, -2.2 - 0.4j, -3 - 1j]),
    (lambda m: m.linspace(m.tensor(0j), 1, 3), "complex64", [0j, 0.5 + 0j, 1 + 0j]),
    (lambda m: m.linspace(0, 1j, 3, dtype=m.complex128), "complex128", [0j, 0.5j, 1j]),
    (lambda m: m.linspace(0, 1, 3, dtype=m.complex64), "complex64", [0j, 0.5 + 0j, 1 + 0j]),
    (lambda m: m.logspace(0, 1 + 1j, 3), "complex64",
     [1 + 0j, 1.288 + 2.8881j, -6.682 + 7.4398j]),
    (lambda m: m.logspace(0, 1j, 2, base=2), "complex64", [1 + 0j, 0.7692 + 0.6390j]),
    (lambda m: m.logspace(0, 1j, 1), "complex64", [1 + 0j]),
    (lambda m: m.logspace(0, 1, 3, base=2, dtype=m.complex128), "complex128",
     [1 + 0j, 1.4142 + 0j, 2 + 0j]),
])
def test_complex_linspace_and_logspace(fn, dtype, values):
    got = _outcome(ember, fn)
    assert got[0] == dtype
    np.testing.assert_allclose(np.array(got[2], dtype=complex), np.array(values, dtype=complex),
                               atol=2e-4)
    _same_as_torch(fn)


@pytest.mark.parametrize("name", ["linspace", "logspace"])
def test_complex_ends_with_a_real_dtype(name):
    _raises(lambda m: getattr(m, name)(0, 1 + 1j, 3, dtype=m.float32), RuntimeError,
            f"torch.{name}(): inferred dtype c10::complex<float> can't be safely cast to "
            "passed dtype Float")
    _raises(lambda m: getattr(m, name)(0, 1j, 3, dtype=m.int64), RuntimeError,
            f"torch.{name}(): inferred dtype c10::complex<float> can't be safely cast to "
            "passed dtype Long")
    _raises(lambda m: m.linspace(0, 1j, 3, out=m.empty(3)), RuntimeError,
            "value cannot be converted to type float without overflow")


@pytest.mark.parametrize("name,args,got", [
    ("linspace", (0, 1, 2.0), "int, int, float"), ("linspace", (0, 1), "int, int"),
    ("linspace", (None, 1, 3), "NoneType, int, int"), ("linspace", ("a", 1, 3), "str, int, int"),
    ("linspace", (0, 1, True), "int, int, bool"), ("logspace", (0, 2, 2.0), "int, int, float"),
])
def test_spacing_argument_errors(name, args, got):
    tail = ("int steps, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = "
            "None, torch.device device = None, bool pin_memory = False, bool requires_grad = "
            "False)\n")
    if name == "logspace":
        tail = tail.replace("int steps, *", "int steps, float base = 10.0, *")
    sigs = "".join(f" * ({a} start, {b} end, {tail}" for a, b in (
        ("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number")))
    _raises(lambda m: getattr(m, name)(*args), TypeError,
            f"{name}() received an invalid combination of arguments - got ({got}), but expected "
            f"one of:\n{sigs}")


def test_spacing_takes_numbers_and_tensors_only():
    _raises(lambda m: m.linspace(0, m.ones(1)[0], None), TypeError,
            "linspace() received an invalid combination of arguments - got (int, Tensor, "
            "NoneType)")
    _gives(lambda m: m.linspace(0, 1, m.tensor(3)), "float32", [0.0, 0.5, 1.0])
    _gives(lambda m: m.logspace(0, 1, 3, m.tensor(4.)), "float32", [1.0, 2.0, 4.0])


# -- arange, eye, tril/triu_indices ------------------------------------------------------------

@pytest.mark.parametrize("fn", [lambda m: m.arange(1e20), lambda m: m.arange(0, 1, 1e-20)])
def test_arange_of_an_overflowing_size(fn):
    _raises(fn, RuntimeError, "invalid size, possible overflow?")


@pytest.mark.parametrize("args,got", [((2, 3.0), "int, float"), ((2, None), "int, NoneType")])
def test_eye_argument_errors(args, got):
    tail = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
            "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")
    _raises(lambda m: m.eye(*args), TypeError,
            f"eye() received an invalid combination of arguments - got ({got}), but expected "
            f"one of:\n * (int n, *, {tail} * (int n, int m, *, {tail}")


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("dt,label", [("float32", "Float"), ("int16", "Short"),
                                      ("bool", "Bool"), ("float64", "Double")])
def test_tri_indices_of_another_dtype_are_not_implemented(name, dt, label):
    _raises(lambda m: getattr(m, name)(3, 3, dtype=getattr(m, dt)), NotImplementedError,
            f"\"{name}\" not implemented for '{label}'")


@pytest.mark.parametrize("args,what,pos,typ", [((3.0, 3), "row", 1, "float"),
                                               ((3, 3.5), "col", 2, "float"),
                                               ((3, 3, 1.0), "offset", 3, "float"),
                                               ((3, 3, "a"), "offset", 3, "str")])
def test_tri_indices_argument_types(args, what, pos, typ):
    _raises(lambda m: m.tril_indices(*args), TypeError,
            f"tril_indices(): argument '{what}' (position {pos}) must be int, not {typ}")


# -- random factories -------------------------------------------------------------------------

def test_multinomial_of_no_rows_and_a_float_count():
    got = _outcome(ember, lambda m: m.multinomial(m.ones(0, 3), 1))
    assert got == ("int64", (0, 1), [])
    _same_as_torch(lambda m: m.multinomial(m.ones(0, 3), 1))
    _raises(lambda m: m.multinomial(m.ones(3), 1.5), TypeError,
            "multinomial(): argument 'num_samples' (position 2) must be int, not float")


_NORMAL_SIGS = (
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
    "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device "
    "device = None, bool pin_memory = False, bool requires_grad = False)\n")


@pytest.mark.parametrize("fn,got", [(lambda m: m.normal(0., 1.), "float, float"),
                                    (lambda m: m.normal(m.zeros(3), 1., (3,)),
                                     "Tensor, float, tuple")])
def test_normal_argument_combinations(fn, got):
    _raises(fn, TypeError, f"normal() received an invalid combination of arguments - got "
                           f"({got}), but expected one of:\n{_NORMAL_SIGS}")


def test_bernoulli_argument_errors():
    _raises(lambda m: m.bernoulli(0.5), TypeError,
            "bernoulli(): argument 'input' (position 1) must be Tensor, not float")
    _raises(lambda m: m.bernoulli(m.ones(3), p=m.ones(3)), TypeError,
            "bernoulli() received an invalid combination of arguments - got (Tensor, p=Tensor), "
            "but expected one of:\n * (Tensor input, *, torch.Generator generator = None, "
            "Tensor out = None)\n * (Tensor input, float p, *, torch.Generator generator = "
            "None)\n")


def test_randint_argument_errors():
    tail = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
            "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")
    sigs = "".join(f" * ({lead}, *, {gen}{tail}" for lead in (
        "int high, tuple of ints size", "int low, int high, tuple of ints size")
        for gen in ("torch.Generator generator, ", ""))
    for args, got in (((5,), "int"), ((0, 5, 3), "int, int, int"),
                      ((0.5, 5, (3,)), "float, int, tuple"), ((0, 5.5, (3,)), "int, float, tuple")):
        _raises(lambda m, a=args: m.randint(*a), TypeError,
                f"randint() received an invalid combination of arguments - got ({got}), but "
                f"expected one of:\n{sigs}")
    _raises(lambda m: m.randint(0, 5, (3,), dtype=m.complex64), RuntimeError,
            "check_random_bounds handles only integral, floating-point and boolean types")


# -- complex, polar ---------------------------------------------------------------------------

def test_complex_and_polar_argument_errors():
    _raises(lambda m: m.complex(1., 2.), TypeError,
            "complex(): argument 'real' (position 1) must be Tensor, not float")
    _raises(lambda m: m.complex(m.ones(2), 2.), TypeError,
            "complex(): argument 'imag' (position 2) must be Tensor, not float")
    _raises(lambda m: m.polar(m.ones(2), 1.), TypeError,
            "polar(): argument 'angle' (position 2) must be Tensor, not float")
    _raises(lambda m: m.complex(m.ones(2), m.ones(3)), RuntimeError,
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
            "dimension 0")


def test_polar_checks_its_dtypes():
    _raises(lambda m: m.polar(m.ones(2, dtype=m.int64), m.zeros(2, dtype=m.int64)),
            RuntimeError, "Expected both inputs to be Half, Float or Double tensors but got "
                          "Long and Long")
    _raises(lambda m: m.polar(m.ones(2), m.zeros(2, dtype=m.float64)), RuntimeError,
            "Expected object of scalar type Float but got scalar type Double for second "
            "argument")
