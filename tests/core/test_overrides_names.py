"""``torch.overrides`` / ``torch._C`` names of the ``__torch_function__`` protocol: the state
queries, ``_disabled_torch_function_impl``, ``redispatch_function`` and the listings.

Subclasses are defined inside the tests: defining one turns dispatch on for the process
(tests/conftest.py turns it off again after each test)."""

from __future__ import annotations

import contextlib
import inspect
import io

import pytest

import ember
import ember._C as C
import ember.overrides as ov


def _kinds(torch):
    """The same family of tensor-likes for ``torch`` or ``ember``."""

    class Sub(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    class Opted(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl

    class Plain(torch.Tensor):
        pass

    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "like"

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    t = torch.ones(2)
    values = {"tensor": t, "sub": t.as_subclass(Sub), "opted": t.as_subclass(Opted),
              "plain_sub": t.as_subclass(Plain), "param": torch.nn.Parameter(torch.ones(1)),
              "like": Like(), "int": 1, "none": None, "list_of_sub": [t.as_subclass(Sub)]}
    return values, Mode


def _state_table(torch):
    """What every state query says for every kind of value, in every state."""
    C_ = torch._C
    values, Mode = _kinds(torch)

    def probe():
        row = {name: (C_._has_torch_function((x,)), C_._has_torch_function_unary(x),
                      C_._has_torch_function_variadic(x, values["tensor"]),
                      torch.overrides.has_torch_function_unary(x),
                      torch.overrides.has_torch_function_variadic(values["tensor"], x))
               for name, x in values.items()}
        row["flags"] = (C_._is_torch_function_enabled(), C_._is_torch_function_all_disabled(),
                        C_._is_torch_function_mode_enabled(), C_._len_torch_function_stack())
        return row

    table = {"base": probe()}
    with C_.DisableTorchFunctionSubclass():
        table["subclass_disabled"] = probe()
    with C_.DisableTorchFunction():
        table["all_disabled"] = probe()
    with Mode():
        table["mode"] = probe()
        with C_.DisableTorchFunctionSubclass():
            table["mode_subclass_disabled"] = probe()
        with C_.DisableTorchFunction():
            table["mode_all_disabled"] = probe()
        with Mode():
            table["two_modes"] = probe()
    table["empty"] = (C_._has_torch_function_variadic(), C_._has_torch_function([]))
    return table


def test_state_queries_match_torch():
    torch = pytest.importorskip("torch")
    assert _state_table(ember) == _state_table(torch)


def test_state_queries():
    values, Mode = _kinds(ember)
    sub, t = values["sub"], values["tensor"]
    assert C._has_torch_function_unary(sub) and C._has_torch_function_variadic(t, sub)
    assert not C._has_torch_function_unary(values["opted"])
    assert not C._has_torch_function_unary(values["param"])
    assert C._has_torch_function_unary(values["like"])
    assert not C._has_torch_function((values["list_of_sub"],))  # items only, not nested
    assert C._is_torch_function_enabled() and not C._is_torch_function_all_disabled()
    assert C._len_torch_function_stack() == 0 and not C._is_torch_function_mode_enabled()
    with C.DisableTorchFunctionSubclass():
        assert not C._is_torch_function_enabled() and not C._is_torch_function_all_disabled()
        # non-Tensor overriding types are off too, as in PyTorch
        assert not C._has_torch_function_unary(values["like"])
    with C.DisableTorchFunction():
        assert C._is_torch_function_all_disabled() and not C._has_torch_function((sub,))
    with Mode():
        assert C._len_torch_function_stack() == 1 and C._is_torch_function_mode_enabled()
        assert C._has_torch_function_unary(t) and C._has_torch_function_variadic()
        with C.DisableTorchFunction():
            assert not C._is_torch_function_mode_enabled()
            assert C._len_torch_function_stack() == 1
    assert C.DisableTorchFunction is ov.DisableTorchFunction
    assert C.DisableTorchFunctionSubclass is ov.DisableTorchFunctionSubclass


def test_disabled_impl_in_a_class_body_opts_out():
    class Opted(ember.Tensor):
        __torch_function__ = C._disabled_torch_function_impl

    assert not ov.is_active()  # opting out does not turn dispatch on
    assert Opted.__torch_function__ is C._disabled_torch_function_impl  # identity checks
    x = ember.ones(2).as_subclass(Opted)
    assert not ov.has_torch_function((x,))
    assert type(x + 1) is ember.Tensor


def test_disabled_impl_called_from_a_handler_returns_plain_tensors():
    seen = []

    class Sub(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return C._disabled_torch_function_impl(func, types, args, kwargs)

    x = ember.arange(3.0).as_subclass(Sub)
    out = ember.add(x, x)
    assert type(out) is ember.Tensor and out.tolist() == [0.0, 2.0, 4.0]
    assert type(x.neg()) is ember.Tensor and seen == ["add", "neg"]

    def probe(a):
        return C._is_torch_function_enabled(), C._has_torch_function_unary(a)

    assert C._disabled_torch_function_impl(probe, (Sub,), (x,)) == (False, False)


def test_disabled_impl_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        class Sub(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return lib._C._disabled_torch_function_impl(func, types, args, kwargs or {})

        class Opted(lib.Tensor):
            __torch_function__ = lib._C._disabled_torch_function_impl

        x = lib.ones(2).as_subclass(Sub)
        o = lib.ones(2).as_subclass(Opted)
        return [type(r).__name__ for r in (x + 1, x.sum(), lib.mul(x, 2), o * 2, o[0])]

    assert run(ember) == run(torch)


_DOC_EXAMPLES = '''
class LoggingTensor(torch.Tensor):
    depth = 0

    @classmethod
    def __torch_function__(cls, func, types, args, kwargs=None):
        print(f"{'  ' * cls.depth}Calling {func.__name__}")
        cls.depth += 1
        r = torch.overrides.redispatch_function(func, types, args, kwargs)
        cls.depth -= 1
        return r

def scaled_mul(a, b):
    if has_torch_function((a, b)):
        return handle_torch_function(scaled_mul, (a, b), a, b)
    return a * b + 1

x = LoggingTensor(torch.tensor([3.0]))
y = LoggingTensor(torch.tensor([4.0]))
result = scaled_mul(x, y)
print(result, type(result).__name__)

class LoggingMode(TorchFunctionMode):
    def __init__(self):
        self.depth = 0

    def __torch_function__(self, func, types, args, kwargs=None):
        print(f"{'  ' * self.depth}Calling {func.__name__}")
        self.depth += 1
        with self:
            r = torch.overrides.redispatch_function(func, types, args, kwargs)
        self.depth -= 1
        return r

a = torch.tensor([3.0])
b = torch.tensor([4.0])
with LoggingMode():
    result = scaled_mul(a, b)
print(result, type(result).__name__)
print(torch._C._len_torch_function_stack(), torch._C._is_torch_function_enabled())
'''

_DOC_OUTPUT = """Calling scaled_mul
  Calling mul
tensor([13.]) Tensor
Calling scaled_mul
  Calling mul
  Calling add
tensor([13.]) Tensor
0 True
"""


def _run_doc_examples(lib) -> str:
    out = io.StringIO()
    scope = {"torch": lib, "has_torch_function": lib.overrides.has_torch_function,
             "handle_torch_function": lib.overrides.handle_torch_function,
             "TorchFunctionMode": lib.overrides.TorchFunctionMode}
    with contextlib.redirect_stdout(out):
        exec(_DOC_EXAMPLES, scope)
    return out.getvalue()


def test_redispatch_function_docstring_examples():
    """PyTorch 2.13's two documented examples: the subclass sees ``scaled_mul`` and the
    ``mul`` inside it, not the ``+ 1`` on the plain result; the mode sees all three."""
    assert _run_doc_examples(ember) == _DOC_OUTPUT


def test_redispatch_function_docstring_examples_match_torch():
    torch = pytest.importorskip("torch")
    assert _run_doc_examples(ember) == _run_doc_examples(torch)


def test_skip_one_hop_is_taken_by_the_first_check_only():
    log = []

    class L(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return ov.redispatch_function(func, types, args, kwargs)

    a = ember.ones(2).as_subclass(L)

    def checks_twice(x):
        return ov.has_torch_function((x,)), ov.has_torch_function((x,))

    assert C._skip_one_hop_torch_function(checks_twice, (L,), (a,), {}) == (False, True)

    def calls_ops(x):  # the first op takes the skip; the second dispatches
        return x.add(1) + x

    out = C._skip_one_hop_torch_function(calls_ops, (L,), (a,), None)
    assert type(out) is ember.Tensor and log == ["add"]
    # a function that makes no check leaves nothing pending (PyTorch raises instead)
    assert C._skip_one_hop_torch_function(lambda x: 3, (L,), (a,), {}) == 3
    log.clear()
    assert type(ember.add(a, a)) is ember.Tensor and log == ["add"]

    def boom(x):
        raise ValueError("boom")

    with pytest.raises(ValueError):
        C._skip_one_hop_torch_function(boom, (L,), (a,), {})
    assert C._is_torch_function_enabled() and ov.has_torch_function((a,))


def test_base_torch_function_mode_runs_the_function():
    mode = ov.BaseTorchFunctionMode()
    with mode:
        assert C._len_torch_function_stack() == 1
        assert ember.add(ember.ones(1), 1).tolist() == [2.0]
    assert mode.__torch_function__(ember.add, (), (ember.ones(1), 2)).tolist() == [3.0]
    assert mode.__torch_function__(ember.add, (), (ember.ones(1), 2), {"alpha": 2}).tolist() \
        == [5.0]
    assert issubclass(ov.BaseTorchFunctionMode, ov.TorchFunctionMode)


def test_default_nowrap_functions():
    nowrap = ov.get_default_nowrap_functions()
    assert nowrap is ov.get_default_nowrap_functions()  # cached
    assert ember.Tensor.grad.__get__ in nowrap
    assert ember.Tensor.T.__get__ not in nowrap


def test_resolve_name():
    F = pytest.importorskip("ember.nn.functional")
    assert ov.resolve_name(ember.add) == "ember.add"
    assert ov.resolve_name(F.relu) == "ember.nn.functional.relu"
    assert ov.resolve_name(ember.linalg.inv) == "ember.linalg.inv"
    assert ov.resolve_name(ember.Tensor.dim) == "ember.Tensor.dim"  # not its alias ndimension
    assert ov.resolve_name(ember.Tensor.T.__get__) == "ember.Tensor.T.__get__"
    assert ov.resolve_name(ember.ops.aten.add.Tensor) == "aten.add.Tensor"
    assert ov.resolve_name(lambda: 0) is None and ov.resolve_name(ember.Tensor.T) is None


def test_resolve_name_of_what_handlers_receive_matches_torch():
    pytest.importorskip("ember.nn.functional")
    torch = pytest.importorskip("torch")

    def received(lib):
        seen = []

        class S(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(lib.overrides.resolve_name(func))
                return super().__torch_function__(func, types, args, kwargs)

        x = lib.ones(2, 2).as_subclass(S)
        lib.add(x, 1), x.add(1), x + 1, 1 + x, x.mT, lib.nn.functional.relu(x), x.sum()
        x[0], x * 2, lib.linalg.norm(x)
        return [None if n is None else n.split(".", 1)[1] for n in seen]

    names = received(ember)
    assert names[:2] == ["add", "Tensor.add"]
    assert names == received(torch)


def test_get_testing_overrides():
    overrides = ov.get_testing_overrides()
    listed = {f for fs in ov.get_overridable_functions().values() for f in fs}
    assert set(overrides) == listed
    fake = overrides[ember.add]
    assert fake(ember.ones(1), 2) == -1
    assert inspect.signature(fake) == inspect.signature(ember.add)
    with pytest.raises(TypeError):
        fake(ember.ones(1), 2, bogus=3)
    assert overrides[ember.Tensor.add](ember.ones(1), 1) == -1


def test_enable_reentrant_dispatch_is_a_no_op_context_manager():
    with ov.enable_reentrant_dispatch() as value:
        assert value is None and ember.add(ember.ones(1), 1).tolist() == [2.0]


def test_all_lists_the_torch_names():
    torch = pytest.importorskip("torch")
    assert set(torch.overrides.__all__) <= set(ov.__all__)
    names = ("has_torch_function_unary", "has_torch_function_variadic",
             "BaseTorchFunctionMode", "get_default_nowrap_functions")
    assert all(hasattr(ov, n) and hasattr(torch.overrides, n) for n in names)
    c_names = ("_disabled_torch_function_impl", "DisableTorchFunctionSubclass",
               "DisableTorchFunction", "_has_torch_function", "_has_torch_function_unary",
               "_has_torch_function_variadic", "_is_torch_function_enabled",
               "_is_torch_function_all_disabled", "_is_torch_function_mode_enabled",
               "_len_torch_function_stack", "_skip_one_hop_torch_function")
    assert all(hasattr(C, n) and hasattr(torch._C, n) for n in c_names)
