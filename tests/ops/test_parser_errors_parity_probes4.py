"""Regressions of differential probes against PyTorch 2.13 (round 4): ``max``/``min`` given
an explicit ``dim=None``, ``clamp`` given a tensor and a number, ``xlogy_``/``ldexp_``,
elementwise ops of one tensor given something else (``abs('s')``), ``mul``/``div``/
``true_divide``/``floor_divide``/``rsub``/``xlogy`` with operands no signature takes, and
``atleast_*d``/``meshgrid``/``slice_scatter`` with non-tensors raise PyTorch's parser
TypeError in its words. Messages are pinned so the tests run without torch; with torch
importable the same calls are compared against it."""

from __future__ import annotations

import pytest

import ember

MAX = (" * (Tensor input, *, Tensor out = None)\n * (Tensor input, Tensor other, *, Tensor out = "
       "None)\n * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)\n")
CLAMP = (" * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
         " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
XLOGY = (" * (Tensor input, Tensor other, *, Tensor out = None)\n * (Number self, Tensor other, "
         "*, Tensor out = None)\n * (Tensor input, Number other, *, Tensor out = None)\n")
DIV = (" * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Tensor other, "
       "*, str rounding_mode, Tensor out = None)\n * (Tensor input, Number other, *, str "
       "rounding_mode)\n")
TWO = " * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Number other)\n"
RSUB = (" * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor input, Number other, "
        "Number alpha = 1)\n")


def _combination(name, got, sigs, why=""):
    return (f"{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{sigs}{why}")


def _must(name, arg, pos, typ, want="Tensor"):
    return f"{name}(): argument '{arg}' ({f'position {pos}'}) must be {want}, not {typ}"


def _atleast(n, typ):
    why = f"      didn't match because some of the arguments have invalid types: (!{typ}!)\n"
    return _combination(f"atleast_{n}d", typ, f" * (Tensor input)\n{why} * (tuple of Tensors "
                        f"tensors)\n{why}")


def _element(i, typ):
    return f"expected Tensor as element {i} in argument 0, but got {typ}"


# (label, call(lib, x), exception type, message); x is ones(2, 3)
CASES = [
    ("max None", lambda L, x: L.max(x, None), TypeError,
     _combination("max", "Tensor, NoneType", MAX)),
    ("min None", lambda L, x: L.min(x, None), TypeError,
     _combination("min", "Tensor, NoneType", MAX)),
    ("max None keepdim", lambda L, x: L.max(x, None, True), TypeError,
     _combination("max", "Tensor, NoneType, bool", MAX.replace(
         "None)\n * (Tensor input, Tensor", "None)\n      didn't match because some of the "
         "arguments have invalid types: (Tensor, !NoneType!, !bool!)\n * (Tensor input, Tensor",
         1))),
    ("clamp tensor number", lambda L, x: L.clamp(x, L.zeros(3), 2.0), TypeError,
     _combination("clamp", "Tensor, Tensor, float", CLAMP)),
    ("clamp number tensor", lambda L, x: L.clamp(x, 0.0, L.ones(3)), TypeError,
     _combination("clamp", "Tensor, float, Tensor", CLAMP)),
    ("xlogy_ str", lambda L, x: L.xlogy_(x, "s"), TypeError,
     _combination("xlogy_", "Tensor, str", " * (Tensor input, Tensor other)\n      didn't match "
                  "because some of the arguments have invalid types: (Tensor, !str!)\n * "
                  "(Tensor input, Number other)\n      didn't match because some of the "
                  "arguments have invalid types: (Tensor, !str!)\n")),
    ("ldexp_ int", lambda L, x: L.ldexp_(x, 2), TypeError, _must("ldexp_", "other", 2, "int")),
    ("abs str", lambda L, x: L.abs("s"), TypeError, _must("abs", "input", 1, "str")),
    ("exp None", lambda L, x: L.exp(None), TypeError, _must("exp", "input", 1, "NoneType")),
    ("sqrt list", lambda L, x: L.sqrt([1.0]), TypeError, _must("sqrt", "input", 1, "list")),
    ("trunc float", lambda L, x: L.trunc(2.5), TypeError, _must("trunc", "input", 1, "float")),
    ("sigmoid tuple", lambda L, x: L.sigmoid((x,)), TypeError,
     _must("sigmoid", "input", 1, "tuple")),
    ("neg str", lambda L, x: L.neg("s"), TypeError, _must("neg", "input", 1, "str")),
    ("square out", lambda L, x: L.square("s", out=L.empty(2)), TypeError,
     _must("square", "input", 1, "str")),
    ("round str", lambda L, x: L.round("s"), TypeError, _must("round", "input", 1, "str")),
    ("logit None", lambda L, x: L.logit(None), TypeError, _must("logit", "input", 1, "NoneType")),
    ("mul str", lambda L, x: L.mul(x, "s"), TypeError, _must("mul", "other", 2, "str")),
    ("mul None first", lambda L, x: L.mul(None, x), TypeError,
     _must("mul", "input", 1, "NoneType")),
    ("div list", lambda L, x: L.div(x, [1.0]), TypeError, _must("div", "other", 2, "list")),
    ("div floor str", lambda L, x: L.div(x, "s", rounding_mode="floor"), TypeError,
     _combination("div", "Tensor, str, rounding_mode=str", DIV)),
    ("div rounding int", lambda L, x: L.div(x, 2, rounding_mode=3), TypeError,
     _combination("div", "Tensor, int, rounding_mode=int", DIV)),
    ("true_divide str", lambda L, x: L.true_divide(x, "s"), TypeError,
     _combination("true_divide", "Tensor, str", TWO.replace(
         "other)\n", "other)\n      didn't match because some of the arguments have invalid "
         "types: (Tensor, !str!)\n"))),
    ("floor_divide None", lambda L, x: L.floor_divide(x, None), TypeError,
     _combination("floor_divide", "Tensor, NoneType", TWO.replace(
         "other)\n", "other)\n      didn't match because some of the arguments have invalid "
         "types: (Tensor, !NoneType!)\n"))),
    ("rsub str", lambda L, x: L.rsub(x, "s"), TypeError,
     _combination("rsub", "Tensor, str", RSUB)),
    ("rsub number first", lambda L, x: L.rsub(2, x), TypeError,
     _combination("rsub", "int, Tensor", RSUB)),
    ("xlogy str", lambda L, x: L.xlogy(x, "s"), TypeError,
     _combination("xlogy", "Tensor, str", XLOGY)),
    ("xlogy numbers", lambda L, x: L.xlogy(2.0, 3), TypeError,
     _combination("xlogy", "float, int", XLOGY)),
    ("atleast_1d str", lambda L, x: L.atleast_1d("s"), TypeError, _atleast(1, "str")),
    ("atleast_2d None", lambda L, x: L.atleast_2d(None), TypeError, _atleast(2, "NoneType")),
    ("atleast_3d float", lambda L, x: L.atleast_3d(2.0), TypeError, _atleast(3, "float")),
    ("atleast_1d list", lambda L, x: L.atleast_1d([x, "s"]), TypeError, _element(1, "str")),
    ("atleast_2d varargs", lambda L, x: L.atleast_2d("s", x), TypeError, _element(0, "str")),
    ("atleast_3d numbers", lambda L, x: L.atleast_3d((1, 2)), TypeError, _element(0, "int")),
    ("meshgrid str", lambda L, x: L.meshgrid(L.ones(2), "s", indexing="ij"), TypeError,
     _element(1, "str")),
    ("meshgrid list", lambda L, x: L.meshgrid([None], indexing="xy"), TypeError,
     _element(0, "NoneType")),
    ("slice_scatter src", lambda L, x: L.slice_scatter(L.zeros(4), "s"), TypeError,
     _must("slice_scatter", "src", 2, "str")),
    ("slice_scatter input", lambda L, x: L.slice_scatter(None, L.ones(2)), TypeError,
     _must("slice_scatter", "input", 1, "NoneType")),
    ("slice_scatter dim", lambda L, x: L.slice_scatter(L.zeros(4), L.ones(2), "s"), TypeError,
     _must("slice_scatter", "dim", 3, "str", "int")),
    ("slice_scatter step", lambda L, x: L.slice_scatter(L.zeros(4), L.ones(2), 0, None, 2, "s"),
     TypeError, _must("slice_scatter", "step", 6, "str", "int")),
]


def _outcome(lib, call):
    try:
        call(lib, lib.ones(2, 3))
    except Exception as e:  # the outcome compared is the exception itself
        return type(e), str(e)
    return None, None


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("label,call,exc,message", CASES, ids=[c[0] for c in CASES])
def test_pinned(label, call, exc, message):
    assert _outcome(ember, call) == (exc, message)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("label,call,exc,message", CASES, ids=[c[0] for c in CASES])
def test_against_torch(label, call, exc, message):
    torch = pytest.importorskip("torch")
    assert _outcome(torch, call) == _outcome(ember, call)


def test_method_forms_refuse_too():
    """The methods share the functions: their errors are the function's (PyTorch words a
    method's without ``input``), but the calls are refused as PyTorch refuses them."""
    x = ember.ones(2, 3)
    z = ember.zeros(3)
    for call in (lambda: x.max(None), lambda: x.min(dim=None), lambda: x.clamp(z, 2.0),
                 lambda: x.clamp_(z, 2.0), lambda: x.xlogy_("s"), lambda: x.ldexp_(None)):
        with pytest.raises(TypeError):
            call()


def test_valid_calls_still_compute():
    x = ember.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    assert ember.max(x).item() == 5.0 and x.min().item() == 0.0
    v, i = ember.max(x, 1)
    assert v.tolist() == [5.0, 4.0] and i.tolist() == [1, 0]
    v, i = ember.min(x, dim=1, keepdim=True)
    assert v.tolist() == [[1.0], [0.0]] and i.tolist() == [[0], [1]]
    assert ember.max(x, ember.full((3,), 2.0)).tolist() == [[2.0, 5.0, 2.0], [4.0, 2.0, 3.0]]
    assert ember.vmap(ember.max)(x).tolist() == [5.0, 4.0]
    assert ember.clamp(x, ember.tensor(1.0), 4.0).tolist() == [[1.0, 4.0, 2.0], [4.0, 1.0, 3.0]]
    assert x.clamp(ember.zeros(3), ember.full((3,), 3.0)).max().item() == 3.0
    assert x.clamp(0, 1).max().item() == 1.0
    y = ember.ones(3)
    assert y.clone().xlogy_(2.0).tolist() == pytest.approx([0.6931472] * 3)
    assert y.clone().ldexp_(ember.tensor([1.0, 2.0, 3.0])).tolist() == [2.0, 4.0, 8.0]
    assert ember.abs(ember.tensor([-1.0])).item() == 1.0
    assert ember.div(ember.tensor([7.0]), 2, rounding_mode="floor").item() == 3.0
    assert ember.rsub(ember.tensor([1.0]), 3).item() == 2.0
    assert ember.true_divide(ember.tensor([3]), 2).item() == 1.5
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ember.div(y, 2, rounding_mode="bad")
    assert [t.shape for t in ember.atleast_2d([y, ember.tensor(1.0)])] == [(1, 3), (1, 1)]
    assert ember.slice_scatter(ember.zeros(4), ember.ones(2), 0, None, 2).tolist() == \
        [1.0, 1.0, 0.0, 0.0]
