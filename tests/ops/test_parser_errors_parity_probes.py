"""Regressions of differential probes against PyTorch 2.13: arguments no Python signature of
an op takes (a number, None, a list or a string where a tensor goes) are PyTorch's argument-
parser TypeError in its words (``ops/_signatures.py``), not an AttributeError from inside the
kernel or a result: clamp and its in-place and min/max forms, max/min, searchsorted,
histogram, kron/outer/inner, dist, equal, is_same_size, add/sub. Messages are pinned so the
tests run without torch; with torch importable, the same calls are compared against it."""

from __future__ import annotations

import re

import pytest

import ember

CLAMP = (" * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
         " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
MAX = (" * (Tensor input, *, Tensor out = None)\n"
       " * (Tensor input, Tensor other, *, Tensor out = None)\n"
       " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)\n")


def _raises(message: str, fn):
    with pytest.raises(TypeError, match="^" + re.escape(message) + "$"):
        fn()


def _combination(name, got, sigs):
    return (f"{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{sigs}")


def test_clamp_refuses_what_no_signature_takes():
    a = ember.tensor([1.0, 3.0])
    _raises(_combination("clamp", "int, Tensor", CLAMP), lambda: ember.clamp(2, a))
    _raises(_combination("clamp", "Tensor, str", CLAMP), lambda: ember.clamp(a, "s"))
    _raises(_combination("clamp", "Tensor, list", CLAMP), lambda: ember.clamp(a, [1, 2]))
    _raises(_combination("clamp", "int, Tensor, out=Tensor", CLAMP),
            lambda: ember.clamp(2, a, out=ember.empty(2)))
    mn = (" * (Tensor input, Tensor min, *, Tensor out = None)\n"
          " * (Tensor input, Number min, *, Tensor out = None)\n")
    _raises(_combination("clamp_min", "Tensor, NoneType", mn), lambda: ember.clamp_min(a, None))
    _raises(_combination("clamp_min", "NoneType, Tensor", mn), lambda: ember.clamp_min(None, a))
    # clamp(t, None) stays the kernel's error, as PyTorch's
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ember.clamp(a, None)


def test_inplace_clamp_names_its_own_signatures():
    a = ember.tensor([1.0, 3.0])
    sigs = (" * (Tensor input, Tensor min)\n      didn't match because some of the arguments "
            "have invalid types: (Tensor, !str!)\n * (Tensor input, Number min)\n      didn't "
            "match because some of the arguments have invalid types: (Tensor, !str!)\n")
    _raises(_combination("clamp_min_", "Tensor, str", sigs), lambda: ember.clamp_min_(a, "s"))
    inplace = (" * (Tensor input, Tensor min = None, Tensor max = None)\n"
               " * (Tensor input, Number min = None, Number max = None)\n")
    _raises(_combination("clamp_", "int, int", inplace), lambda: ember.clamp_(2, 3))
    assert ember.clamp_(a, 0, 2) is a and a.tolist() == [1.0, 2.0]


def test_max_min_refuse_a_number_first():
    a = ember.tensor([1.0, 3.0])
    for name in ("max", "min"):
        f = getattr(ember, name)
        _raises(_combination(name, "int, Tensor", MAX), lambda f=f: f(2, a))
        _raises(_combination(name, "int, int", MAX), lambda f=f: f(2, 3))
        _raises(_combination(name, "list, Tensor", MAX), lambda f=f: f([1, 2], a))
    assert ember.max(a).item() == 3.0 and ember.max(a, 0).indices.item() == 1
    assert ember.max(a, ember.tensor(2.0)).tolist() == [2.0, 3.0]


def test_searchsorted_and_histogram():
    a = ember.tensor([1.0, 3.0])
    tail = (", *, bool out_int32 = False, bool right = False, str side = None, Tensor sorter = "
            "None, Tensor out = None)\n")
    sigs = f" * (Tensor sorted_sequence, Tensor input{tail} * (Tensor sorted_sequence, " \
           f"Number self{tail}"
    _raises(_combination("searchsorted", "int, Tensor", sigs), lambda: ember.searchsorted(2, a))
    _raises(_combination("searchsorted", "Tensor, str", sigs),
            lambda: ember.searchsorted(a, "s"))
    hist = (" * (Tensor input, Tensor bins, *, Tensor weight = None, bool density = False, "
            "tuple of Tensors out = None)\n * (Tensor input, int bins = 100, *, tuple of floats "
            "range = None, Tensor weight = None, bool density = False, tuple of Tensors out = "
            "None)\n")
    _raises(_combination("histogram", "int, Tensor", hist), lambda: ember.histogram(2, a))
    _raises(_combination("histogram", "Tensor, NoneType", hist),
            lambda: ember.histogram(a, None))


@pytest.mark.parametrize("name, second", [("kron", "other"), ("outer", "vec2"),
                                          ("inner", "other"), ("dist", "other"),
                                          ("equal", "other")])
def test_single_signature_names_the_argument(name, second):
    a = ember.tensor([1.0, 3.0])
    f = getattr(ember, name)
    _raises(f"{name}(): argument 'input' (position 1) must be Tensor, not int", lambda: f(2, a))
    _raises(f"{name}(): argument 'input' (position 1) must be Tensor, not NoneType",
            lambda: f(None, a))
    _raises(f"{name}(): argument '{second}' (position 2) must be Tensor, not list",
            lambda: f(a, [1, 2]))


def test_add_sub_name_the_operand():
    a = ember.tensor([1.0, 3.0])
    _raises("add(): argument 'other' (position 2) must be Tensor, not str",
            lambda: ember.add(a, "s"))
    _raises("sub(): argument 'input' (position 1) must be Tensor, not NoneType",
            lambda: ember.sub(None, a))
    assert ember.add(2, a).tolist() == [3.0, 5.0]  # numbers still stand for tensors


def test_is_same_size_refuses_a_number_first():
    a = ember.tensor([1.0, 3.0])
    _raises("is_same_size(): argument 'input' (position 1) must be Tensor, not int",
            lambda: ember.is_same_size(2, a))
    _raises("is_same_size(): argument 'input' (position 1) must be Tensor, not int",
            lambda: ember.is_same_size(2, 3))


# -- against PyTorch, when it is importable -----------------------------------------------------

_NAMES = ("clamp", "clamp_min", "clamp_max", "clamp_", "clamp_min_", "clamp_max_", "searchsorted",
          "histogram", "kron", "outer", "inner", "dist", "add", "sub")


def _calls(lib, name):
    f = getattr(lib, name)
    a = lib.tensor([1.0, 3.0])
    return {"number first": lambda: f(2, a), "bool first": lambda: f(True, a),
            "two numbers": lambda: f(2, 3), "string second": lambda: f(a, "s"),
            "None first": lambda: f(None, a), "list first": lambda: f([1, 2], a),
            "list second": lambda: f(a, [1, 2]), "None second": lambda: f(a, None)}


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # the outcome is what is compared
        return type(e).__name__, str(e).replace("ember", "torch")
    return "ok", r.tolist() if hasattr(r, "tolist") else r


@pytest.mark.parametrize("name", _NAMES)
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = _calls(ember, name), _calls(torch, name)
    for label in ours:
        assert _outcome(ours[label]) == _outcome(theirs[label]), label
