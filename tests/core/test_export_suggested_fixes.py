"""``ember.export``'s "Suggested fixes:" for constraint violations and
``ember.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes`` (PyTorch's retry
loop: export, refine the dynamic shapes from the error, export again)."""

from __future__ import annotations

import pytest

import ember
from ember.export import ConstraintViolationError, Dim
from ember.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes


def _cases(torch):
    class Add(torch.nn.Module):  # x.shape[0] must equal y.shape[0]
        def forward(self, x, y):
            return x + y

    class Branch(torch.nn.Module):  # specializes the dim to its example size
        def forward(self, x):
            return x.reshape(4, -1) if x.shape[0] == 4 else x

    class Range(torch.nn.Module):  # holds only up to 100
        def forward(self, x):
            return x * 2 if x.shape[0] <= 100 else x

    class MatMul(torch.nn.Module):  # the inner dims must be equal
        def forward(self, x, y):
            return x @ y

    class Const(torch.nn.Module):  # broadcast against a constant of size 4
        def forward(self, x):
            return x + torch.ones(4, 3)

    E = torch.export
    a, b = E.Dim("a"), E.Dim("b")
    return [
        (Add(), (torch.randn(4, 3), torch.randn(4, 3)), {"x": {0: a}, "y": {0: b}}, "b = a"),
        (Branch(), (torch.randn(4, 3),), {"x": {0: a}}, "a = 4"),
        (Range(), (torch.randn(4, 3),), {"x": {0: a}}, "a = Dim('a', max=100)"),
        (MatMul(), (torch.randn(3, 4), torch.randn(4, 5)), {"x": {1: a}, "y": {0: b}},
         "b = a"),
        (Const(), (torch.randn(4, 3),), {"x": {0: a}}, "a = 4"),
    ]


def _fix_lines(msg: str) -> list:
    return [line.strip() for line in msg.partition("Suggested fixes:")[2].splitlines()
            if line.strip() and " = " in line][:3]


@pytest.mark.parametrize("case", range(5))
def test_the_error_suggests_a_fix_and_the_refined_shapes_export(case):
    model, args, ds, fix = _cases(ember)[case]
    with pytest.raises(ConstraintViolationError) as info:
        ember.export.export(model, args, dynamic_shapes=ds)
    assert _fix_lines(str(info.value)) == [fix]
    refined = refine_dynamic_shapes_from_suggested_fixes(str(info.value), ds)
    ep = ember.export.export(model, args, dynamic_shapes=refined)
    out = ep.module()(*args)
    assert tuple(out.shape) == tuple(model(*args).shape)
    # the original structure stays, the fixed dims change
    assert refined.keys() == ds.keys()
    if fix == "b = a":
        dims = [d for v in refined.values() for d in v.values()]
        assert dims[0] is dims[1] and dims[0].__name__ == "a"
    elif fix == "a = 4":
        assert refined == {"x": {0: 4}}
    else:
        d = refined["x"][0]
        assert (d.__name__, d.min, d.max) == ("a", 0, 100)


@pytest.mark.parametrize("case", range(5))
def test_the_fixes_are_pytorchs(case):
    torch = pytest.importorskip("torch")
    model, args, ds, fix = _cases(torch)[case]
    with pytest.raises(Exception) as info:
        torch.export.export(model, args, dynamic_shapes=ds)
    assert _fix_lines(getattr(info.value, "msg", str(info.value))) == [fix]


def test_static_sizes_and_bad_messages():
    x = ember.randn(4, 3)
    ep = ember.export.export(ember.nn.Linear(3, 2), (x,), dynamic_shapes={"input": {0: 4}})
    assert tuple(ep.module()(x).shape) == (4, 2)
    with pytest.raises(ConstraintViolationError,
                       match=r"Static shape constraint of 5 does not match input size of 4, "
                             r"for input.size\(\)\[0\]"):
        ember.export.export(ember.nn.Linear(3, 2), (x,), dynamic_shapes={"input": {0: 5}})
    with pytest.raises(ValueError, match="no 'Suggested fixes:' section"):
        refine_dynamic_shapes_from_suggested_fixes("Constraints violated", {"x": {0: Dim("a")}})
    with pytest.raises(ValueError, match="cannot read the fix"):
        refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  a = Dim('b', max=3)",
                                                   {"x": {0: Dim("a")}})
    ds = ({0: Dim("a")}, None)
    assert refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  a = 7\n", ds) == \
        ({0: 7}, None)
    assert ember.export.dynamic_shapes.Dim is Dim
