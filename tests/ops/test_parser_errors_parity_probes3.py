"""Regressions of differential probes against PyTorch 2.13 (round 3): tensors' places given a
string, None, a list or a number in nn.functional's losses and distances, linalg.vecdot,
isin, trapezoid and normal raise what PyTorch raises, in its words: the argument parser's
TypeError of the binding torch.nn.functional calls (``cross_entropy_loss()``,
``nll_loss_nd()``, ...), or the AttributeError of PyTorch's Python losses, which read
``target.size()`` first. Messages are pinned so the tests run without torch; with torch
importable the same calls are compared against it."""

from __future__ import annotations

import pytest

import ember

ISIN = "".join(f" * ({a}, {b}, *, bool assume_unique = False, bool invert = False, Tensor out = "
               "None)\n" for a, b in (("Tensor elements", "Tensor test_elements"),
                                      ("Number element", "Tensor test_elements"),
                                      ("Tensor elements", "Number test_element")))
TRAPEZOID = (" * (Tensor y, Tensor x, *, int dim = -1)\n"
             " * (Tensor y, *, Number dx = 1, int dim = -1)\n")
_OPTS = "torch.Generator generator = None, Tensor out = None"
NORMAL = (f" * (Tensor mean, Tensor std, *, {_OPTS})\n * (Tensor mean, float std = 1, *, "
          f"{_OPTS})\n * (float mean, Tensor std, *, {_OPTS})\n * (float mean, float std, "
          f"tuple of ints size, *, {_OPTS}, torch.dtype dtype = None, torch.layout layout = "
          "None, torch.device device = None, bool pin_memory = False, bool requires_grad = "
          "False)\n")


def _combination(name, got, sigs):
    return (f"{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n{sigs}")


def _must(name, arg, pos, typ):
    return f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {typ}"


def _size(typ, attr="size"):
    return f"'{typ}' object has no attribute '{attr}'"


# (label, call(lib, F), exception type, message)
CASES = [
    ("mse str", lambda L, F: F.mse_loss(L.ones(3), "s"), AttributeError, _size("str")),
    ("mse float", lambda L, F: F.mse_loss(L.ones(3), 2.0), AttributeError, _size("float")),
    ("mse list", lambda L, F: F.mse_loss(L.ones(3), [1.0, 2, 3]), AttributeError, _size("list")),
    ("mse input", lambda L, F: F.mse_loss("s", L.ones(3)), AttributeError, _size("str")),
    ("l1", lambda L, F: F.l1_loss(L.ones(3), None), AttributeError, _size("NoneType")),
    ("smooth_l1", lambda L, F: F.smooth_l1_loss(L.ones(3), "s"), AttributeError, _size("str")),
    ("huber", lambda L, F: F.huber_loss(L.ones(3), None), AttributeError, _size("NoneType")),
    ("bce", lambda L, F: F.binary_cross_entropy(L.ones(3) / 2, "s"), AttributeError,
     _size("str")),
    ("bce logits", lambda L, F: F.binary_cross_entropy_with_logits(None, L.ones(3)),
     AttributeError, _size("NoneType")),
    ("margin ranking", lambda L, F: F.margin_ranking_loss(L.ones(3), L.ones(3), "s"),
     AttributeError, _size("str", "dim")),
    ("cross_entropy", lambda L, F: F.cross_entropy(L.ones(2, 3), "s"), TypeError,
     _must("cross_entropy_loss", "target", 2, "str")),
    ("cross_entropy input", lambda L, F: F.cross_entropy(None, L.tensor([0, 1])), TypeError,
     _must("cross_entropy_loss", "input", 1, "NoneType")),
    ("cross_entropy weight", lambda L, F: F.cross_entropy(L.ones(2, 3), L.tensor([0, 1]),
                                                          weight="s"),
     TypeError, _must("cross_entropy_loss", "weight", 3, "str")),
    ("nll", lambda L, F: F.nll_loss(L.ones(2, 3), [1, 2]), TypeError,
     _must("nll_loss_nd", "target", 2, "list")),
    ("kl_div", lambda L, F: F.kl_div(L.ones(3), "s", reduction="sum"), TypeError,
     _must("kl_div", "target", 2, "str")),
    ("soft_margin", lambda L, F: F.soft_margin_loss(L.ones(3), None), TypeError,
     _must("soft_margin_loss", "target", 2, "NoneType")),
    ("hinge", lambda L, F: F.hinge_embedding_loss(L.ones(3), "s"), TypeError,
     _must("hinge_embedding_loss", "target", 2, "str")),
    ("poisson", lambda L, F: F.poisson_nll_loss(L.ones(3), None), TypeError,
     _must("poisson_nll_loss", "target", 2, "NoneType")),
    ("cosine embedding", lambda L, F: F.cosine_embedding_loss(L.ones(2, 3), L.ones(2, 3), "s"),
     TypeError, _must("cosine_embedding_loss", "target", 3, "str")),
    ("multilabel margin", lambda L, F: F.multilabel_margin_loss(L.ones(2, 3), "s"), TypeError,
     _must("multilabel_margin_loss", "target", 2, "str")),
    ("multi margin", lambda L, F: F.multi_margin_loss(L.ones(2, 3), None), TypeError,
     _must("multi_margin_loss", "target", 2, "NoneType")),
    ("triplet", lambda L, F: F.triplet_margin_loss(L.ones(2, 3), L.ones(2, 3), None), TypeError,
     _must("triplet_margin_loss", "negative", 3, "NoneType")),
    ("pairwise_distance", lambda L, F: F.pairwise_distance(L.ones(3), "s"), TypeError,
     _must("pairwise_distance", "x2", 2, "str")),
    ("pairwise_distance x1", lambda L, F: F.pairwise_distance(None, L.ones(3)), TypeError,
     _must("pairwise_distance", "x1", 1, "NoneType")),
    ("cosine_similarity", lambda L, F: F.cosine_similarity(L.ones(3), None, 0), TypeError,
     _must("cosine_similarity", "x2", 2, "NoneType")),
    ("vecdot", lambda L, F: L.linalg.vecdot(L.ones(3), "s"), TypeError,
     _must("linalg_vecdot", "y", 2, "str")),
    ("isin str", lambda L, F: L.isin(L.ones(3), "s"), TypeError,
     _combination("isin", "Tensor, str", ISIN)),
    ("isin numbers", lambda L, F: L.isin(2, 3), TypeError, _combination("isin", "int, int", ISIN)),
    ("isin None first", lambda L, F: L.isin(None, L.ones(3)), TypeError,
     _combination("isin", "NoneType, Tensor", ISIN)),
    ("trapezoid str", lambda L, F: L.trapezoid("s"), TypeError, _must("trapezoid", "y", 1, "str")),
    ("trapezoid dx", lambda L, F: L.trapezoid(L.ones(3), dx="s"), TypeError,
     _combination("trapezoid", "Tensor, dx=str", TRAPEZOID)),
    ("normal str", lambda L, F: L.normal(L.ones(3), "s"), TypeError,
     _combination("normal", "Tensor, str", NORMAL)),
    ("normal None", lambda L, F: L.normal(None, L.ones(3)), TypeError,
     _combination("normal", "NoneType, Tensor", NORMAL)),
    ("normal floats", lambda L, F: L.normal(0.0, 1.0), TypeError,
     _combination("normal", "float, float", NORMAL)),
]


def _outcome(lib, call):
    import importlib

    F = importlib.import_module(lib.__name__ + ".nn.functional")
    try:
        call(lib, F)
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


def test_valid_calls_still_compute():
    F = ember.nn.functional
    a, b = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 0.0, 3.0])
    assert F.mse_loss(a, b).item() == pytest.approx(4 / 3)
    w = ember.tensor([1.0, 2.0, 3.0])
    logits, target = ember.zeros(2, 3), ember.tensor([0, 1])
    assert F.cross_entropy(logits, target, None).item() == pytest.approx(1.0986123)
    assert F.cross_entropy(logits, target, weight=w).item() == pytest.approx(1.0986123)
    assert ember.isin(a, 2.0).tolist() == [False, True, False]
    assert ember.isin(2, a).item() is True
    assert ember.trapezoid(a, dx=ember.tensor(2.0)).item() == 8.0
    assert ember.linalg.vecdot(a, b).item() == 10.0
    assert ember.normal(a, 0.0).tolist() == [1.0, 2.0, 3.0]
