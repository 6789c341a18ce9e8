"""Regressions of differential probes against PyTorch 2.13: a Python number as the first
operand of a binary op whose Python signatures have no ``Number self`` form (``fmod``,
``eq``, ``copysign``, ...) is the argument parser's "invalid combination" TypeError, not a
result; other operands no signature takes (a string, None, a list, two numbers, ``out=``
beside a number-first form without one) get the same words. Ops with a ``Number self``
form (``remainder``, ``bitwise_and``) or that take numbers as tensors (``add``) still compute.
Messages are pinned (PyTorch's, as ``str(e)`` gives them without a terminal), so the tests
run without torch; with torch importable, the same calls are also compared against it."""

from __future__ import annotations

import re

import pytest

import ember

TT = " * (Tensor input, Tensor other, *, Tensor out = None)\n"
TN = " * (Tensor input, Number other, *, Tensor out = None)\n"
NT = " * (Number self, Tensor other)\n"
NO_NUMBER_SELF = ("eq", "ne", "lt", "le", "gt", "ge", "fmod", "copysign")
NUMBER_SELF = ("remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
               "bitwise_right_shift")


def _two(name: str, got: str) -> str:
    return (f"{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{TT}{TN}")


def _three(name: str, got: str, why: str | None = None) -> str:
    nt = NT if why is None else (NT + "      didn't match because some of the arguments have "
                                 f"invalid types: {why}\n")
    return (f"{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{TT}{nt}{TN}")


def _raises(message: str, fn):
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        fn()


def _calls(lib, name):
    """The probed calls (label, thunk) of ``lib.<name>``, ``lib`` ember or torch."""
    f = getattr(lib, name)
    a = lib.tensor([1.0, 3.0])
    return {
        "number first": lambda: f(2, a),
        "float first": lambda: f(2.5, a),
        "bool first": lambda: f(True, a),
        "two numbers": lambda: f(2, 3),
        "string second": lambda: f(a, "str"),
        "None first": lambda: f(None, a),
        "list first": lambda: f([1, 2], a),
        "list second": lambda: f(a, [1, 2]),
        "None second": lambda: f(a, None),
        "number first, out=": lambda: f(2, a, out=lib.empty(2)),
        "string second, out=": lambda: f(a, "s", out=lib.empty(2)),
    }


_EXPECTED_NO_NUMBER_SELF = {
    "number first": "int, Tensor", "float first": "float, Tensor", "bool first": "bool, Tensor",
    "two numbers": "int, int", "string second": "Tensor, str", "None first": "NoneType, Tensor",
    "list first": "list, Tensor", "list second": "Tensor, list",
    "None second": "Tensor, NoneType", "number first, out=": "int, Tensor, out=Tensor",
    "string second, out=": "Tensor, str, out=Tensor",
}


@pytest.mark.parametrize("name", NO_NUMBER_SELF)
@pytest.mark.parametrize("label", sorted(_EXPECTED_NO_NUMBER_SELF))
def test_no_number_self_refuses_what_torch_refuses(name, label):
    _raises(_two(name, _EXPECTED_NO_NUMBER_SELF[label]), _calls(ember, name)[label])


_EXPECTED_NUMBER_SELF = {
    "two numbers": ("int, int", "(!int!, !int!)"),
    "string second": ("Tensor, str", "(!Tensor!, !str!)"),
    "None first": ("NoneType, Tensor", "(!NoneType!, Tensor)"),
    "list first": ("list, Tensor", "(!list of [int, int]!, Tensor)"),
    "list second": ("Tensor, list", "(!Tensor!, !list of [int, int]!)"),
    "None second": ("Tensor, NoneType", "(!Tensor!, !NoneType!)"),
    "number first, out=": ("int, Tensor, out=Tensor", None),
    "string second, out=": ("Tensor, str, out=Tensor", None),
}


@pytest.mark.parametrize("name", NUMBER_SELF)
@pytest.mark.parametrize("label", sorted(_EXPECTED_NUMBER_SELF))
def test_number_self_errors_name_each_signature(name, label):
    got, why = _EXPECTED_NUMBER_SELF[label]
    _raises(_three(name, got, why), _calls(ember, name)[label])


def test_number_first_still_computes_where_torch_does():
    a = ember.tensor([1.0, 3.0])
    assert ember.remainder(2, a).tolist() == [0.0, 2.0]
    assert ember.pow(2, a).tolist() == [2.0, 8.0]
    assert ember.add(2, a).tolist() == [3.0, 5.0]
    assert ember.sub(2, a).tolist() == [1.0, -1.0]
    assert ember.mul(2, a).tolist() == [2.0, 6.0]
    i = ember.tensor([1, 6])
    assert ember.bitwise_and(3, i).tolist() == [1, 2]
    assert ember.bitwise_left_shift(1, i).tolist() == [2, 64]
    # the tensor-first forms and the operators are untouched
    assert ember.fmod(a, 2).tolist() == [1.0, 1.0]
    assert a.fmod(2).tolist() == [1.0, 1.0]
    assert ember.eq(a, 3).tolist() == [False, True]
    assert (2 < a).tolist() == [False, True]
    assert (3 == a).tolist() == [False, True]
    out = ember.empty(2, dtype=ember.bool)
    assert ember.lt(a, 2, out=out) is out and out.tolist() == [True, False]
    r = ember.empty(2)
    assert ember.remainder(a, 2, out=r) is r and r.tolist() == [1.0, 1.0]


def test_bitwise_number_first_out_is_refused_before_the_dtype_check():
    # PyTorch's parser refuses the call before its kernel could complain about float
    a = ember.tensor([1.0, 3.0])
    _raises(_three("bitwise_and", "int, Tensor, out=Tensor"),
            lambda: ember.bitwise_and(2, a, out=ember.empty(2)))


def test_single_signature_names_the_argument():
    from ember.ops._signatures import SIGNATURES, parser_error

    SIGNATURES["_probe_one"] = ("(Tensor input, Tensor other, *, Tensor out = None)",)
    try:
        e = parser_error("_probe_one", (ember.ones(1), "s"))
        assert str(e) == "_probe_one(): argument 'other' (position 2) must be Tensor, not str"
        e = parser_error("_probe_one", (), {"input": 1, "other": ember.ones(1)})
        assert str(e) == "_probe_one(): argument 'input' must be Tensor, not int"
    finally:
        del SIGNATURES["_probe_one"]


def test_keywords_only_keep_the_trailing_separator():
    # format_invalid_args prints keywords last-given first and, with no positional
    # argument, keeps the ", " after the last one (PyTorch's words, verbatim)
    from ember.ops._signatures import parser_error

    e = parser_error("eq", (), {"input": 2, "other": ember.ones(1)})
    assert str(e) == _two("eq", "other=Tensor, input=int, ")


# -- against PyTorch, when it is importable -----------------------------------------------------

def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # the outcome is what is compared
        return type(e).__name__, str(e)
    return "ok", r.tolist()


@pytest.mark.parametrize("name", NO_NUMBER_SELF + NUMBER_SELF)
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = _calls(ember, name), _calls(torch, name)
    for label in ours:
        mine, want = _outcome(ours[label]), _outcome(theirs[label])
        if want[0] == "NotImplementedError":  # a kernel's name says its device (_cpu, _cuda)
            mine, want = mine[0], want[0]
        assert mine == want, label
