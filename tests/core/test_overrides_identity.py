"""``__torch_function__`` dispatch keeps each function's identity, as PyTorch's builtins do.

A mode or subclass handler receives the very object a program names: ``func is torch.mean``
holds for a ``torch.mean`` read before the mode began, tables keyed by functions at import
time match, and a name bound by ``from ember import add`` dispatches. Ember turns dispatch on
by giving each function a dispatching check as its code, in place (``ember.overrides``); the
earlier design swapped the namespaces' attributes for wrappers, and code holding the
functions saw other objects while a mode was on (Lightning's ``profiler="pytorch"`` logged
``reduce_fx=torch.mean`` as a custom reduction).

Tensors are made on the CPU by name (a strict-device run keeps them there)."""

from __future__ import annotations

import inspect
import traceback

import pytest

import ember
import ember.nn.functional as F
import ember.overrides as ov
from ember import add as bound_add  # bound at import, before any mode

# what a program builds at import time, before any mode exists
TABLE = {ember.add: "add", ember.Tensor.add: "Tensor.add", F.relu: "relu",
         ember.mean: "mean", ember.Tensor.__getitem__: "getitem"}
MEAN = ember.mean


def _x():
    return ember.arange(6.0, device="cpu").reshape(2, 3)


def _identity_program(torch, overrides):
    """What a handler sees for each call, by the import-time table (run on both)."""
    table = {torch.add: "add", torch.Tensor.add: "Tensor.add",
             torch.nn.functional.relu: "relu", torch.mean: "mean",
             torch.Tensor.__getitem__: "getitem"}
    mean = torch.mean
    seen = []

    class Look(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(table.get(func, getattr(func, "__name__", "?")))
            return func(*args, **(kwargs or {}))

    x = torch.arange(6.0).reshape(2, 3)
    with Look():
        torch.add(x, 1)
        x.add(1)
        torch.nn.functional.relu(x)
        torch.mean(x)
        x[0]
        same = torch.mean is mean
    return seen, same


def test_a_handler_receives_the_functions_the_program_holds():
    seen = []

    class Look(ov.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((TABLE.get(func), func))
            return func(*args, **(kwargs or {}))

    x = _x()
    with Look():
        ember.add(x, 1)
        x.add(1)
        F.relu(x)
        ember.mean(x)
        x[0]
        assert ember.mean is MEAN and ember.add is bound_add
    assert [name for name, _ in seen] == ["add", "Tensor.add", "relu", "mean", "getitem"]
    assert seen[0][1] is ember.add and seen[1][1] is ember.Tensor.add
    assert ember.add is not ember.Tensor.add  # two functions, as in PyTorch
    ov._settle()  # (dispatch lingers for a few plain calls after the mode)
    assert not ov.is_dispatching(ember.add)  # and plain again after the mode


def test_identity_matches_torch():
    torch = pytest.importorskip("torch")
    assert _identity_program(ember, ov) == _identity_program(torch, torch.overrides)


def test_a_name_bound_before_the_mode_dispatches():
    seen = []

    class Look(ov.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    held = {"fn": ember.abs}  # held where no namespace lookup happens
    x = _x()
    with Look():
        out = bound_add(held["fn"](x), 2)
    assert seen[-2:] == [ember.abs, ember.add]
    assert out.tolist() == (x.abs() + 2).tolist()


def test_the_lightning_pattern_reduce_fx_is_torch_mean():
    """Lightning's logger keeps ``reduce_fx=torch.mean`` from its signature's default (read
    at import) and asks ``reduce_fx is torch.mean`` while its profiler's mode is on."""

    def log(value, reduce_fx=ember.mean):
        return "mean" if reduce_fx is ember.mean else "custom"

    class Profile(ov.BaseTorchFunctionMode):
        pass

    with Profile():
        assert log(1) == "mean"
    assert log(1) == "mean"


def test_signatures_names_and_tracebacks_while_dispatching():
    before = {f: inspect.signature(f) for f in (ember.add, ember.Tensor.add, F.relu,
                                                ember.batch_norm)}
    names = {f: f.__name__ for f in before}
    with ov.BaseTorchFunctionMode():
        assert ov.is_dispatching(ember.add) and ov.is_dispatching(ember.Tensor.add)
        assert {f: inspect.signature(f) for f in before} == before
        assert {f: f.__name__ for f in before} == names
        assert ember.batch_norm.__name__ == "batch_norm"
        assert ember.Tensor.__getitem__.__name__ == "__getitem__"
        with pytest.raises(TypeError, match="must be Tensor, not str") as info:
            ember.add(_x(), "a")
    frames = traceback.extract_tb(info.tb)
    # the check's frames are named as the function and show the check's own source lines
    check = [f for f in frames if f.filename == ov.__file__ and f.name == "add"]
    assert check and all(f.line and f.line in ov._DISPATCH_SOURCE for f in check)
    assert frames[-1].name != "add" or frames[-1].filename != ov.__file__  # the body raised
    assert {f: inspect.signature(f) for f in before} == before


def test_subclass_dispatch_through_held_functions():
    class Tagged(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            out = super().__torch_function__(func, types, args, kwargs)
            if func is bound_add:
                out.tag = "added"
            return out

    t = _x().as_subclass(Tagged)
    out = bound_add(t, 1)
    assert type(out) is Tagged and out.tag == "added"
    assert not hasattr(t.add(1), "tag")  # Tensor.add is its own function


def test_redispatch_runs_the_body_once():
    calls = []

    class Once(ov.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls.append(func)
            return ov.redispatch_function(func, types, args, kwargs or {})

    x = _x()
    with Once():
        out = ember.mul(x, 2)
    assert calls == [ember.mul] and out.tolist() == (x * 2).tolist()
