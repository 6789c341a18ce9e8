"""``ember.library``: custom ops as registry ops (PyTorch's ``torch.library``)."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from testutils import randn64, t64, to_numpy

import ember
import ember.library as L
from ember import Tensor
from ember._library import custom_ops as _custom_ops
from ember._library import ops as _ops
from ember.autograd import gradcheck


@pytest.fixture(autouse=True)
def _fresh_ops():
    """Every op a test defines is deleted after it (the registry is process-wide)."""
    before = set(_ops._DEFS)
    kept = len(L._keep_alive)
    yield
    for lib in L._keep_alive[kept:]:
        lib._destroy()
    del L._keep_alive[kept:]
    for qualname, lib in list(_custom_ops.OPDEF_TO_LIB.items()):
        lib._destroy()
        del _custom_ops.OPDEF_TO_LIB[qualname]
    for key in set(_ops._DEFS) - before:
        _ops.undefine_op(_ops._DEFS[key])


def _numpy_sin_op(name="mylib::numpy_sin"):
    """PyTorch's tutorial op: a NumPy kernel, a fake kernel and a backward formula."""

    @L.custom_op(name, mutates_args=())
    def numpy_sin(x: Tensor) -> Tensor:
        return ember.from_numpy(np.sin(x.cpu().numpy())).to(x.device)

    @numpy_sin.register_fake
    def _(x):
        return ember.empty_like(x)

    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


# -- custom_op --------------------------------------------------------------------------------

def test_numpy_sin_values_gradient_and_gradcheck():
    numpy_sin = _numpy_sin_op()
    x = randn64(5)
    y = numpy_sin(x)
    np.testing.assert_allclose(to_numpy(y), np.sin(to_numpy(x)))
    assert y.device == x.device and y.dtype == ember.float64
    assert type(y.grad_fn).__name__ == "GeneratedBackwardFor_mylib_numpy_sin_defaultBackward"
    (g,) = ember.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(to_numpy(g), np.cos(to_numpy(x)))
    assert gradcheck(numpy_sin, (x,))
    with ember.no_grad():  # the kernel may read .numpy() of an input that requires grad
        assert not numpy_sin(x).requires_grad


def test_the_op_is_reachable_as_ember_ops_namespace_name():
    numpy_sin = _numpy_sin_op()
    packet = ember.ops.mylib.numpy_sin
    assert packet.default is numpy_sin._opoverload
    assert repr(packet) == "<OpOverloadPacket(op='mylib.numpy_sin')>"
    assert repr(packet.default) == "<OpOverload(op='mylib.numpy_sin', overload='default')>"
    assert str(packet.default._schema) == "mylib::numpy_sin(Tensor x) -> Tensor"
    assert packet.overloads() == ["default"] and packet.default.name() == "mylib::numpy_sin"
    x = t64([0.5, 1.0], requires_grad=False)
    np.testing.assert_allclose(to_numpy(packet(x)), np.sin([0.5, 1.0]))
    np.testing.assert_allclose(to_numpy(packet.default(x)), np.sin([0.5, 1.0]))
    with pytest.raises(AttributeError, match="'_OpNamespace' 'mylib' object has no attribute"):
        _ = ember.ops.mylib.nope
    with pytest.raises(AttributeError, match="has no overload name 'out'"):
        _ = packet.out
    with pytest.raises(AttributeError, match="module 'ember.ops' has no attribute"):
        _ = ember.ops.not_a_namespace
    assert ember.ops.registry.OPS["mylib::numpy_sin"].fn is packet.default._ember_original


def test_backward_without_a_formula_raises_pytorchs_error():
    @L.custom_op("mylib::nograd", mutates_args=())
    def nograd(x: Tensor) -> Tensor:
        return x.clone()

    x = randn64(3)
    y = nograd(x)
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="Trying to backward through mylib.nograd.default but "
                                           "no autograd formula was registered"):
        y.sum().backward()


def test_mutating_op_bumps_the_version_and_writes_through():
    @L.custom_op("mylib::numpy_sin_inplace", mutates_args={"x"}, device_types="cpu")
    def numpy_sin_inplace(x: Tensor) -> None:
        x_np = x.numpy()
        np.sin(x_np, out=x_np)

    x = ember.randn(4, device="cpu")
    expected = np.sin(x.numpy())
    version = x._version
    assert numpy_sin_inplace(x) is None
    np.testing.assert_allclose(x.numpy(), expected)
    assert x._version == version + 1
    assert str(numpy_sin_inplace._opoverload._schema) == \
        "mylib::numpy_sin_inplace(Tensor(a0!) x) -> ()"
    # a saved tensor written by the op is caught at backward, as for any in-place op
    w = ember.randn(4, device="cpu", requires_grad=True)
    h = w * 1.0
    z = (h * h).sum()
    numpy_sin_inplace(h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for "
                                           "non-functional operator"):
        numpy_sin_inplace.register_autograd(lambda ctx, g: g)


def test_list_and_keyword_only_arguments_with_autograd():
    @L.custom_op("mylib::weighted_sum", mutates_args=())
    def weighted_sum(tensors: list[Tensor], weights: list[float], *, scale: float = 1.0
                     ) -> Tensor:
        return sum(t * w for t, w in zip(tensors, weights)) * scale

    def setup_context(ctx, inputs, keyword_only_inputs, output):
        ctx.weights = inputs[1]
        ctx.scale = keyword_only_inputs["scale"]

    def backward(ctx, grad):
        assert isinstance(ctx.needs_input_grad[0], list)
        return [grad * w * ctx.scale for w in ctx.weights], None

    weighted_sum.register_autograd(backward, setup_context=setup_context)
    assert str(weighted_sum._opoverload._schema) == \
        "mylib::weighted_sum(Tensor[] tensors, float[] weights, *, float scale=1.0) -> Tensor"
    a, b = randn64(3), randn64(3)
    assert gradcheck(lambda a, b: weighted_sum([a, b], [0.3, 0.7], scale=2.0), (a, b))


def test_list_outputs_and_tuple_outputs():
    @L.custom_op("mylib::split2", mutates_args=())
    def split2(x: Tensor) -> list[Tensor]:
        return [x[:2].clone(), x[2:].clone()]

    @L.custom_op("mylib::pair", mutates_args=())
    def pair(x: Tensor) -> tuple[Tensor, Tensor]:
        return x * 2, x * 3

    split2.register_autograd(lambda ctx, gs: ember.cat(gs))
    x = randn64(5)
    parts = split2(x)
    assert isinstance(parts, list) and [p.shape[0] for p in parts] == [2, 3]
    assert gradcheck(lambda x: split2(x)[1], (x,))
    out = pair(x.detach())
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(to_numpy(out[1]), 3 * to_numpy(x))


def test_returning_an_input_or_a_view_raises():
    @L.custom_op("mylib::alias", mutates_args=())
    def alias(x: Tensor) -> Tensor:
        return x

    @L.custom_op("mylib::view", mutates_args=())
    def view(x: Tensor) -> Tensor:
        return x[1:]

    @L.custom_op("mylib::twice", mutates_args=())
    def twice(x: Tensor) -> tuple[Tensor, Tensor]:
        y = x.clone()
        return y, y

    x = ember.randn(3)
    for op in (alias, view, twice):
        with pytest.raises(RuntimeError, match=r"The output of this custom operator \(1\) must "
                                               "not also be an input"):
            op(x)


def test_results_are_checked_against_the_schema():
    @L.custom_op("mylib::says_none", mutates_args=())
    def says_none(x: Tensor) -> None:
        return x.clone()

    @L.custom_op("mylib::says_tensor", mutates_args=())
    def says_tensor(x: Tensor) -> Tensor:
        return x.clone(), x.clone()

    x = ember.randn(2)
    with pytest.raises(RuntimeError, match="Expected PythonKernelHolder for mylib::says_none "
                                           "to return None"):
        says_none(x)
    with pytest.raises(RuntimeError, match="Unable to cast"):
        says_tensor(x)


def test_arguments_are_checked_against_the_schema():
    @L.custom_op("mylib::f", mutates_args=())
    def f(x: Tensor, y: int = 1) -> Tensor:
        return x * y

    x = ember.ones(2)
    with pytest.raises(RuntimeError, match=r"mylib::f\(\) Expected a value of type 'Tensor' for "
                                           "argument 'x' but instead found type 'float'"):
        f(3.0)
    with pytest.raises(RuntimeError, match=r"expected at most 2 argument\(s\) but received 3"):
        f(x, 1, 2)
    with pytest.raises(RuntimeError, match="is missing value for argument 'x'"):
        f(y=2)
    with pytest.raises(RuntimeError, match="Unknown keyword argument 'z' for operator "
                                           "'mylib::f'"):
        f(x, z=3)
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'y'"):
        f(x, 2.5)
    np.testing.assert_allclose(to_numpy(f(x, y=3)), [3.0, 3.0])


def test_device_kernels_and_set_kernel_enabled(testdev):
    @L.custom_op("mylib::which", mutates_args=(), device_types="cpu")
    def which(x: Tensor) -> Tensor:
        return ember.zeros_like(x)

    on_test = ember.ones(2, device=testdev)
    with pytest.raises(NotImplementedError, match="Could not run 'mylib::which' with arguments "
                                                  "from the 'TESTDEV' backend"):
        which(on_test)

    @which.register_kernel("testdev")
    def _(x):
        return ember.full_like(x, 7.0)

    np.testing.assert_allclose(to_numpy(which(on_test).cpu()), [7.0, 7.0])
    with which.set_kernel_enabled("testdev", enabled=False):  # the function of custom_op runs
        np.testing.assert_allclose(to_numpy(which(on_test).cpu()), [0.0, 0.0])
    np.testing.assert_allclose(to_numpy(which(on_test).cpu()), [7.0, 7.0])


def test_factory_op_dispatches_on_its_device_argument():
    @L.custom_op("mylib::bar", mutates_args={}, device_types="cpu")
    def bar(n: int, device: ember.device) -> Tensor:
        return ember.ones(n, device=device)

    assert bar(3, "cpu").shape == (3,)
    with pytest.raises(RuntimeError, match="bar does not have a kernel registered for testdev"):
        bar(3, "testdev")

    def no_device(n: int) -> Tensor:
        return ember.ones(n)

    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have "
                                         "a `device: torch.device` argument"):
        L.custom_op("mylib::no_device", no_device, mutates_args=(), device_types="cpu")


def test_redefining_a_custom_op_replaces_it():
    first = L.custom_op("mylib::again", lambda x: x * 2, mutates_args=(),
                        schema="(Tensor x) -> Tensor")
    second = L.custom_op("mylib::again", lambda x: x * 3, mutates_args=(),
                         schema="(Tensor x) -> Tensor")
    np.testing.assert_allclose(to_numpy(ember.ops.mylib.again(ember.ones(1))), [3.0])
    assert second._opoverload is ember.ops.mylib.again.default
    with pytest.raises(RuntimeError, match="no longer exists"):
        first(ember.ones(1))


# -- errors ------------------------------------------------------------------------------------

def _sin(x: Tensor) -> Tensor:
    return x.sin()


def test_bad_names_and_schemas():
    with pytest.raises(ValueError, match='Expected `qualname` to be of the form '
                                         '"namespace::name", but got foo'):
        L.custom_op("foo", _sin, mutates_args=())
    with pytest.raises(RuntimeError, match="expected eof but found '-' here"):
        L.custom_op("mylib::foo-bar", _sin, mutates_args=())
    with pytest.raises(ValueError, match="prim is a reserved namespace"):
        L.custom_op("prim::f", _sin, mutates_args=())
    with pytest.raises(ValueError, match="The schema suggests that the op mutates {'x'}"):
        L.custom_op("mylib::f", _sin, mutates_args=(), schema="(Tensor(a!) x) -> Tensor")

    def kw_tensor(x: Tensor, *, y: Tensor) -> Tensor:
        return x + y

    with pytest.raises(NotImplementedError, match="custom_op with kwarg-only Tensor args"):
        L.custom_op("mylib::kwt", kw_tensor, mutates_args=())
    with pytest.raises(RuntimeError, match="Unknown type name 'Tensr'"):
        L.custom_op("mylib::g", _sin, mutates_args=(), schema="(Tensr x) -> Tensor")


def _sig(fn, **kw):
    return L.infer_schema(fn, **kw)


def test_infer_schema_types_defaults_and_mutation():
    def g(x: Tensor, y: int = 3, z: float = 2.5, s: str = "a", b: bool = True,
          d: ember.dtype = ember.float32, dev: ember.device = ember.device("cpu"),
          o: Tensor | None = None, ls: list[int] = None) -> tuple[Tensor, Tensor]:
        return x, x

    assert _sig(g, mutates_args=()) == (
        '(Tensor x, SymInt y=3, float z=2.5, str s="a", bool b=True, ScalarType d=float32, '
        'Device dev="cpu", Tensor? o=None, SymInt[] ls=None) -> (Tensor, Tensor)')
    assert _sig(g, mutates_args="unknown", op_name="g").startswith(
        "g(Tensor(a0!) x, SymInt y=3")
    assert "Tensor(a7!)? o=None" in _sig(g, mutates_args="unknown")

    def h(x: Tensor, *, k: float, t: list[Tensor], ot: list[Tensor | None],
          on: list[int] | None, n: int | float | bool, y: int | None = None
          ) -> list[Tensor]:
        return [x]

    assert _sig(h, mutates_args=()) == ("(Tensor x, *, float k, Tensor[] t, Tensor?[] ot, "
                                        "SymInt[]? on, Scalar n, SymInt? y=None) -> Tensor[]")

    def one(x: Tensor) -> tuple[Tensor]:
        return (x,)

    assert _sig(one, mutates_args=()) == "(Tensor x) -> ((Tensor))"

    def strings(x: "Tensor", y: "Tensor") -> "Tensor":
        return x

    assert _sig(strings, mutates_args=()) == "(Tensor x, Tensor y) -> Tensor"

    def none(x: Tensor) -> None:
        pass

    assert _sig(none, mutates_args={"x"}) == "(Tensor(a0!) x) -> ()"


def test_infer_schema_errors():
    def no_annotation(x):
        return x

    def tuple_arg(x: Tensor, y: tuple[int, int]) -> Tensor:
        return x

    def dict_arg(x: Tensor, y: dict) -> Tensor:
        return x

    def varargs(x: Tensor, *args) -> Tensor:
        return x

    def bad_return(x: Tensor) -> dict:
        return x

    def no_return(x: Tensor):
        return x

    def int_arg(x: int) -> None:
        pass

    def unknown(x: Tensor, y: "Foo") -> Tensor:  # noqa: F821
        return x

    def list_default(x: Tensor, y: float = [1]) -> Tensor:
        return x

    cases = [
        (no_annotation, (), "Parameter x must have a type annotation."),
        (tuple_arg, (), "We do not support Tuple inputs in schema. As a workaround, please try "
                        "to use List instead. For example, list[int]."),
        (dict_arg, (), "Parameter y has unsupported type <class 'dict'>. The valid types are"),
        (varargs, (), "We do not support positional-only args, varargs, or varkwargs."),
        (bad_return, (), "Return has unsupported type <class 'dict'>."),
        (no_return, (), "No return type annotation was provided. Please add one."),
        (int_arg, {"x"}, "Parameter x is in mutable_args but only Tensors or collections of "
                         "Tensors can be mutated"),
        (no_return, {"z"}, "{'z'} in mutates_args were not found in the custom op's "
                           "signature."),
        (unknown, (), "Unsupported type annotation Foo. It is not a type."),
        (list_default, (), "Parameter y has an unsupported default value type <class 'list'>."),
    ]
    for fn, mutates, message in cases:
        with pytest.raises(ValueError) as info:
            L.infer_schema(fn, mutates_args=mutates)
        assert str(info.value).startswith("infer_schema(func): ")
        assert message in str(info.value), (fn.__name__, str(info.value))
    with pytest.raises(ValueError, match="mutates_args must either be a sequence"):
        L.infer_schema(_sin, mutates_args="bad")


def test_infer_schema_matches_torch():
    torch = pytest.importorskip("torch")

    def e(x: Tensor, n: int, w: list[float], o: Tensor | None = None, *,
          s: str = "x", d: ember.dtype = ember.float64) -> tuple[Tensor, int]:
        return x, n

    def t(x: torch.Tensor, n: int, w: list[float], o: torch.Tensor | None = None, *,
          s: str = "x", d: torch.dtype = torch.float64) -> tuple[torch.Tensor, int]:
        return x, n

    for mutates in ((), ("x", "o"), "unknown"):
        assert L.infer_schema(e, mutates_args=mutates, op_name="e") == \
            torch.library.infer_schema(t, mutates_args=mutates, op_name="e")


# -- Library ----------------------------------------------------------------------------------

def test_library_define_impl_and_overloads():
    lib = L.Library("mylib2", "FRAGMENT")
    try:
        assert lib.define("foo(Tensor x, float k=2.0) -> Tensor") == "foo"
        with pytest.raises(NotImplementedError, match="Could not run 'mylib2::foo' with "
                                                      "arguments from the"):
            ember.ops.mylib2.foo(ember.ones(2))
        lib.impl("foo", lambda x, k: x * k, "CompositeExplicitAutograd")
        np.testing.assert_allclose(to_numpy(ember.ops.mylib2.foo(ember.ones(2))), [2.0, 2.0])
        lib.define("foo.out(Tensor x, float k=2.0, *, Tensor(a!) out) -> Tensor(a!)")

        def foo_out(x, k, *, out):
            out.copy_(x * k)
            return out

        lib.impl("foo.out", foo_out, "CompositeExplicitAutograd")
        assert ember.ops.mylib2.foo.overloads() == ["default", "out"]
        out = ember.empty(2)
        version = out._version
        assert ember.ops.mylib2.foo(ember.ones(2), 3.0, out=out) is out  # picks the overload
        np.testing.assert_allclose(to_numpy(out), [3.0, 3.0])
        assert out._version > version
        with pytest.raises(RuntimeError, match="Tried to register an operator "
                                               r"\(mylib2::foo\(Tensor x, float k=2.0\) -> "
                                               r"Tensor\) with the same name"):
            lib.define("foo(Tensor x, float k=2.0) -> Tensor")
        with pytest.raises(RuntimeError, match="Invalid alias_analysis type XX"):
            lib.define("bar(Tensor x) -> Tensor", alias_analysis="XX")
        with pytest.raises(TypeError, match="Input function is required to be a callable"):
            lib.impl("foo", 3, "CPU")
        with pytest.raises(RuntimeError, match="operator mylib2::nope does not exist"):
            lib.impl("nope", lambda x: x, "CPU")
    finally:
        lib._destroy()
    with pytest.raises(AttributeError):
        _ = ember.ops.mylib2.foo
    with pytest.raises(AssertionError, match="Library object has been destroyed"):
        lib.define("h(Tensor x) -> Tensor")


def test_library_kinds():
    with pytest.raises(ValueError, match="Unsupported kind: BAD"):
        L.Library("mylib3", "BAD")
    lib = L.Library("mylib3", "DEF")
    try:
        with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY can be used to "
                                               "register the namespace mylib3"):
            L.Library("mylib3", "DEF")
        impl_lib = L.Library("mylib3", "IMPL")
        with pytest.raises(RuntimeError, match="Cannot define an operator inside of a "
                                               "TORCH_LIBRARY_IMPL block"):
            impl_lib.define("g(Tensor x) -> Tensor")
        lib.define("g(Tensor x) -> Tensor")
        impl_lib.impl("g", lambda x: x + 1, "CPU")
        np.testing.assert_allclose(to_numpy(ember.ops.mylib3.g(ember.ones(1, device="cpu"))),
                                   [2.0])
        impl_lib._destroy()  # its kernel goes with it
        with pytest.raises(NotImplementedError, match="Could not run"):
            ember.ops.mylib3.g(ember.ones(1, device="cpu"))
    finally:
        lib._destroy()
    L.Library("mylib3", "DEF")._destroy()  # the namespace is free again
    with pytest.raises(NotImplementedError, match="'aten' is Ember's built-in ops"):
        L.Library("aten", "IMPL")


def test_overriding_a_kernel_warns_and_allow_override_false_raises():
    lib = L.Library("mylib4", "FRAGMENT")
    try:
        lib.define("k(Tensor x) -> Tensor")
        lib.impl("k", lambda x: x * 2, "CPU")
        _ops._WARNED_OVERRIDE[0] = False
        with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
            lib.impl("k", lambda x: x * 3, "CPU")
        np.testing.assert_allclose(to_numpy(ember.ops.mylib4.k(ember.ones(1, device="cpu"))),
                                   [3.0])
        with pytest.raises(RuntimeError, match="there's already a kernel registered from "
                                               "python overriding k's behavior for CPU"):
            lib.impl("k", lambda x: x * 4, "CPU", allow_override=False)
    finally:
        lib._destroy()


def test_composite_implicit_kernel_is_differentiated_through_its_ops():
    lib = L.Library("mylib5", "FRAGMENT")
    try:
        lib.define("scaled_sin(Tensor x, float k) -> Tensor")
        lib.impl("scaled_sin", lambda x, k: (x * k).sin())  # "" is CompositeImplicitAutograd
        x = randn64(4)
        assert gradcheck(lambda x: ember.ops.mylib5.scaled_sin(x, 3.0), (x,))
        assert L.opcheck(ember.ops.mylib5.scaled_sin.default, (x, 3.0)) == {
            "test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
            "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
    finally:
        lib._destroy()


def test_backend_kernel_without_autograd_uses_pytorchs_fallback():
    lib = L.Library("mylib6", "FRAGMENT")
    try:
        lib.define("npsin(Tensor x) -> Tensor")
        lib.impl("npsin", lambda x: ember.from_numpy(np.sin(x.detach().cpu().numpy())), "CPU")
        x = ember.randn(3, device="cpu", requires_grad=True)
        y = ember.ops.mylib6.npsin(x)
        assert y.requires_grad
        with pytest.warns(UserWarning, match="mylib6::npsin: an autograd kernel was not "
                                             "registered to the Autograd key"):
            y.sum().backward()
        assert x.grad is None
        lib.impl("npsin", L.fallthrough_kernel, "Autograd")  # not differentiable: no node
        assert not ember.ops.mylib6.npsin(x).requires_grad
        result = L.opcheck(ember.ops.mylib6.npsin.default, (x,), raise_exception=False)
        assert "no fake impl" in str(result["test_faketensor"])
    finally:
        lib._destroy()


def test_module_level_define_impl_register_autograd_and_legacy_forms():
    L.define("mylib7::mul3", "(Tensor x) -> Tensor")

    @L.impl("mylib7::mul3", "cpu")
    def _(x):
        return ember.from_numpy(x.detach().numpy() * 3)

    L.register_autograd("mylib7::mul3", lambda ctx, g: g * 3)
    x = ember.ones(2, device="cpu", dtype=ember.float64, requires_grad=True)
    ember.ops.mylib7.mul3(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="operator mylib7::nope does not exist"):
        L.register_fake("mylib7::nope", lambda x: x)
    with pytest.raises(ValueError, match="register_fake\\(3\\): got unexpected type for op"):
        L.register_fake(3, lambda x: x)
    with pytest.raises(ValueError, match="expected schema to look like e.g."):
        L.define("mylib7::bad", "Tensor x -> Tensor")
    with pytest.warns(FutureWarning, match="`torch.library.impl_abstract` was renamed"):
        L.impl_abstract("mylib7::mul3", lambda x: ember.empty_like(x))
    assert L.opcheck(ember.ops.mylib7.mul3, (x,))["test_faketensor"] == "SUCCESS"

    lib = L.Library("mylib7", "FRAGMENT")
    try:
        @L.define(lib, "twice(Tensor x) -> Tensor")
        def twice(x):
            return x * 2

        np.testing.assert_allclose(to_numpy(ember.ops.mylib7.twice(ember.ones(2))), [2.0, 2.0])
    finally:
        lib._destroy()


# -- vmap ---------------------------------------------------------------------------------------

def test_vmap_without_a_rule_runs_per_example():
    calls = []

    @L.custom_op("mylib::numpy_mul", mutates_args=())
    def numpy_mul(x: Tensor, y: Tensor) -> Tensor:
        calls.append(tuple(x.shape))
        return ember.from_numpy(x.cpu().numpy() * y.cpu().numpy()).to(x.device)

    x, y = ember.randn(4, 3), ember.randn(3)
    out = ember.func.vmap(numpy_mul, in_dims=(0, None))(x, y)
    np.testing.assert_allclose(to_numpy(out), to_numpy(x) * to_numpy(y), rtol=1e-6)
    assert calls == [(3,)] * 4


def test_vmap_uses_register_vmap():
    seen = []

    @L.custom_op("mylib::numpy_mul", mutates_args=())
    def numpy_mul(x: Tensor, y: Tensor) -> Tensor:
        return ember.from_numpy(x.cpu().numpy() * y.cpu().numpy()).to(x.device)

    @numpy_mul.register_vmap
    def _(info, in_dims, x, y):
        seen.append((info.batch_size, in_dims))
        x_bdim, y_bdim = in_dims
        x = x.movedim(x_bdim, -1) if x_bdim is not None else x.unsqueeze(-1)
        y = y.movedim(y_bdim, -1) if y_bdim is not None else y.unsqueeze(-1)
        return numpy_mul(x, y).movedim(-1, 0), 0

    x, y = ember.randn(3, 5), ember.randn(3)
    out = ember.func.vmap(numpy_mul, in_dims=(1, None))(x, y)
    np.testing.assert_allclose(to_numpy(out), (to_numpy(x) * to_numpy(y)[:, None]).T,
                               rtol=1e-6)
    assert seen == [(5, (0, None))]  # one call; the batch is in dim 0 of what the rule gets

    @L.custom_op("mylib::numpy_cube", mutates_args=())
    def numpy_cube(x: Tensor) -> tuple[Tensor, Tensor]:
        x_np = x.cpu().numpy()
        return (ember.from_numpy(x_np ** 3).to(x.device),
                ember.from_numpy(3 * x_np ** 2).to(x.device))

    L.register_vmap(numpy_cube, lambda info, in_dims, x: (numpy_cube(x), (in_dims[0], None)))
    cube, dx = ember.func.vmap(numpy_cube)(ember.randn(4, 2))
    assert cube.shape == (4, 2) and dx.shape == (4, 4, 2)  # out_dim None: broadcast


# -- export, jit, compile, modes ---------------------------------------------------------------

def _model(op):
    def f(x):
        return op(x * 2) + 1

    return f


def test_export_records_one_node_and_round_trips(tmp_path):
    numpy_sin = _numpy_sin_op()
    f = _model(numpy_sin)
    x = ember.randn(3)
    ep = ember.export.export(f, (x,))
    ops = [n.op for n in ep.graph.nodes]
    assert ops == ["mul", "mylib::numpy_sin", "add"]
    assert "%numpy_sin : float32[3] = mylib::numpy_sin(%mul)" in str(ep.graph)
    assert ep.graph.nodes[1].source.startswith("test_library.py:")
    path = tmp_path / "sin.ember"
    ember.export.save(ep, path)
    want = to_numpy(f(x))
    np.testing.assert_allclose(to_numpy(ember.export.load(path).module()(x)), want, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(ember.jit.trace(f, (x,))(x)), want, rtol=1e-6)
    numpy_sin._lib._destroy()  # the op is gone: loading names it
    with pytest.raises(ember.export.FormatError, match="unknown op 'mylib::numpy_sin'"):
        ember.export.load(path)
    _numpy_sin_op()  # registered again, the program loads and runs
    np.testing.assert_allclose(to_numpy(ember.export.load(path).module()(x)), want, rtol=1e-6)


_LOADER = """
import sys
import numpy as np
import ember
if sys.argv[2] == "define":
    @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.cpu().numpy())).to(x.device)
try:
    ep = ember.export.load(sys.argv[1])
except ember.export.FormatError as exc:
    print("ERROR", exc)
else:
    print("OK", ep.module()(ember.zeros(3)).tolist())
"""


def test_export_loads_in_a_fresh_process_only_where_the_op_is_defined(tmp_path):
    numpy_sin = _numpy_sin_op()
    path = tmp_path / "sin.ember"
    ember.export.save(ember.export.export(_model(numpy_sin), (ember.randn(3, device="cpu"),)),
                      path)
    env = dict(os.environ, EMBER_TEST_DEVICE="")
    runs = {}
    for mode in ("define", "skip"):
        runs[mode] = subprocess.run([sys.executable, "-c", _LOADER, str(path), mode],
                                    capture_output=True, text=True, env=env, check=True).stdout
    assert runs["define"].strip() == f"OK {[1.0 + float(np.sin(0.0))] * 3}"
    assert "ERROR" in runs["skip"] and "unknown op 'mylib::numpy_sin'" in runs["skip"]


def test_export_records_a_mutating_op(tmp_path):
    @L.custom_op("mylib::add_one_", mutates_args={"x"})
    def add_one_(x: Tensor) -> None:
        x.add_(1)

    def g(x):
        y = x * 2
        add_one_(y)
        return y + 1

    x = ember.randn(3)
    ep = ember.export.export(g, (x,))
    assert [n.op for n in ep.graph.nodes] == ["mul", "mylib::add_one_", "add"]
    path = tmp_path / "mut.ember"
    ember.export.save(ep, path)
    np.testing.assert_allclose(to_numpy(ember.export.load(path).module()(x)), to_numpy(g(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(to_numpy(ember.compile(g, fullgraph=True)(x)), to_numpy(g(x)),
                               rtol=1e-6)


def test_compile_replays_the_op_forward_and_backward():
    from ember._compile import explain

    numpy_sin = _numpy_sin_op()
    f = _model(numpy_sin)
    compiled = ember.compile(f, fullgraph=True)
    x = ember.randn(3)
    np.testing.assert_allclose(to_numpy(compiled(x)), to_numpy(f(x)), rtol=1e-6)
    info = explain(compiled)
    assert info["graph_break_count"] == 0
    assert info["entries"][0]["fallback_ops"] == ["mylib::numpy_sin"]

    def step(x):
        loss = f(x).sum()
        loss.backward()
        return loss.detach()

    grads = []
    for fn in (step, ember.compile(step, fullgraph=True)):
        leaf = randn64(4, rng=0)
        fn(leaf)
        grads.append(to_numpy(leaf.grad))
    np.testing.assert_allclose(grads[1], grads[0])
    np.testing.assert_allclose(grads[0], 2 * np.cos(2 * to_numpy(randn64(4, rng=0))))


def test_torch_function_modes_see_the_op():
    numpy_sin = _numpy_sin_op()

    class Recorder(ember.overrides.TorchFunctionMode):
        def __init__(self):
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    x = ember.randn(3)
    with Recorder() as mode:
        numpy_sin(x)
        ember.ops.mylib.numpy_sin(x)
    assert mode.seen == [ember.ops.mylib.numpy_sin.default] * 2


def test_register_autocast():
    @L.custom_op("mylib::dtype_of", mutates_args=())
    def dtype_of(x: Tensor) -> Tensor:
        return ember.tensor(float(x.element_size()), device=x.device)

    dtype_of.register_autocast("cpu", ember.float16)
    x = ember.ones(2, device="cpu")
    assert dtype_of(x).item() == 4.0
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert dtype_of(x).item() == 2.0  # float16, the op's own cast
        assert dtype_of(x.double()).item() == 8.0  # float64 is not cast


# -- opcheck ------------------------------------------------------------------------------------

def test_opcheck_passes_for_a_correct_op():
    numpy_sin = _numpy_sin_op()
    expected = {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
    for x in (randn64(3), randn64(2, 3, requires_grad=False)):
        assert L.opcheck(numpy_sin, (x,)) == expected
    assert set(L.opcheck(numpy_sin, (randn64(3),), test_utils="ALL")) == \
        set(expected) | {"test_aot_dispatch_static"}


def test_opcheck_finds_registration_errors():
    @L.custom_op("mylib::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)  # writes its input without declaring it
        return x * 2

    @sneaky.register_fake
    def _(x):
        return x.new_empty(x.shape[0] + 1)  # the wrong shape

    result = L.opcheck(sneaky, (ember.randn(3),), raise_exception=False)
    assert "Argument x is not defined as mutable but was mutated" in \
        str(result["test_schema"])
    assert "Shapes" in str(result["test_faketensor"])
    with pytest.raises(L.OpCheckError, match=r"opcheck\(op, ...\): test_schema failed with"):
        L.opcheck(sneaky, (ember.randn(3),))

    @L.custom_op("mylib::nofake", mutates_args=())
    def nofake(x: Tensor) -> Tensor:
        return x.clone()

    result = L.opcheck(nofake, (ember.randn(3),), test_utils="test_faketensor",
                       raise_exception=False)
    assert "There was no fake impl registered for <CustomOpDef(mylib::nofake)>" in \
        str(result["test_faketensor"])
    with pytest.raises(ValueError, match="expected test_utils to be subset of"):
        L.opcheck(nofake, (ember.randn(3),), test_utils="test_nothing")
    with pytest.raises(ValueError, match="if you specify one of rtol/atol, you must specify "
                                         "both"):
        L.opcheck(nofake, (ember.randn(3),), atol=1.0)


def test_opcheck_compares_strides_and_storage_offsets():
    # the python_custom_ops_functional tutorial: a kernel that returns a column-major result
    # while its fake kernel says contiguous fails test_faketensor, as in PyTorch
    @L.custom_op("mylib::colmajor", mutates_args=(), device_types="cpu")
    def colmajor(x: Tensor) -> Tensor:
        r = ember.empty_strided(x.shape, tuple(reversed(x.stride())), device=x.device)
        r.copy_(x.sin())
        return r

    @colmajor.register_fake
    def _(x):
        return ember.empty_like(x)

    result = L.opcheck(colmajor, (ember.randn(2, 3, device="cpu"),), raise_exception=False)
    assert "Stride mismatch! Strides are (1, 3) and (3, 1) (mismatched at 0)!" in \
        str(result["test_faketensor"])

    @L.custom_op("mylib::wide_row", mutates_args=(), device_types="cpu")
    def wide_row(x: Tensor) -> Tensor:
        r = ember.empty_strided((1, x.shape[0]), (5, 1), device=x.device)
        r.copy_(x.sin()[None])
        return r

    @wide_row.register_fake
    def _(x):
        return x.new_empty((1, x.shape[0]))

    # a dimension of size 1 may have any stride
    assert L.opcheck(wide_row, (ember.randn(3, device="cpu"),), test_utils="test_faketensor") == \
        {"test_faketensor": "SUCCESS"}

    @L.custom_op("mylib::offset", mutates_args=(), device_types="cpu")
    def offset(x: Tensor) -> Tensor:
        return ember.cat([x.new_zeros(1), x.sin()])[1:]

    @offset.register_fake
    def _(x):
        return ember.empty_like(x)

    result = L.opcheck(offset, (ember.randn(3, device="cpu"),), raise_exception=False)
    assert "Storage offsets are 1 and 0!" in str(result["test_faketensor"])


def test_opcheck_with_a_data_dependent_output_size():
    @L.custom_op("mylib::numpy_nonzero", mutates_args=())
    def numpy_nonzero(x: Tensor) -> Tensor:
        res = np.stack(np.nonzero(x.cpu().numpy()), axis=1)
        return ember.tensor(res, device=x.device)

    @numpy_nonzero.register_fake
    def _(x):
        ctx = L.get_ctx()
        nnz = ctx.new_dynamic_size()
        return x.new_empty([nnz, x.dim()], dtype=ember.int64)

    assert L.get_ctx() is None
    x = ember.tensor([0.0, 1.0, 2.0, 0.0, 3.0])
    assert L.opcheck(numpy_nonzero, (x,), test_utils=("test_schema", "test_faketensor")) == \
        {"test_schema": "SUCCESS", "test_faketensor": "SUCCESS"}
    np.testing.assert_array_equal(to_numpy(numpy_nonzero(x)), [[1], [2], [4]])


# -- parity with PyTorch ---------------------------------------------------------------------

def test_numpy_sin_tutorial_matches_torch():
    torch = pytest.importorskip("torch")
    numpy_sin = _numpy_sin_op()

    @torch.library.custom_op("embertest::numpy_sin", mutates_args=())
    def torch_sin(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.cpu().numpy())).to(x.device)

    torch_sin.register_autograd(
        lambda ctx, g: g * ctx.saved_tensors[0].cos(),
        setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    torch_sin.register_fake(lambda x: torch.empty_like(x))
    values = np.random.default_rng(0).standard_normal(6)
    x = ember.tensor(values, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    y, ty = numpy_sin(x), torch_sin(tx)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(to_numpy(y), ty.detach().numpy())
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy())
    assert str(numpy_sin._opoverload._schema).replace("mylib", "embertest") == \
        str(torch_sin._opoverload._schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.library.opcheck(torch_sin, (tx.detach(),))
    assert L.opcheck(numpy_sin, (x.detach(),)) == want


def test_the_docs_page_runs_as_written(capsys):
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "custom_ops.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    assert len(blocks) >= 8
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"custom_ops.md block {i}", "exec"), namespace)
    assert "mylib::numpy_sin(Tensor x) -> Tensor" in capsys.readouterr().out


def test_profiler_names_a_custom_op_by_its_own_namespace():
    @L.custom_op("mylib::twice", mutates_args=())
    def twice(x: Tensor) -> Tensor:
        return x * 2

    from ember.profiler import profile

    with profile() as prof:
        twice(ember.ones(3))
        ember.ones(3).sin()
    keys = [e.key for e in prof.key_averages()]
    assert "mylib::twice" in keys and "aten::sin" in keys
    assert not any(k.startswith("aten::mylib") for k in keys)


# -- ember.Tag ----------------------------------------------------------------------------------

def test_tags_are_pytorchs_enum_and_ops_report_them():
    assert ember._C.Tag is ember.Tag
    assert (ember.Tag.core.value, ember.Tag.pointwise.value,
            ember.Tag.pt2_compliant_tag.value, ember.Tag.view_copy.value) == (0, 16, 17, 19)
    assert not hasattr(ember.Tag, "inplace")  # custom_op's aliasing schemas are not built

    @L.custom_op("mylib::tagged", mutates_args=(), tags=ember.Tag.pointwise)
    def tagged(x: Tensor) -> Tensor:
        return x + 1

    # custom_op declares the op pt2-compliant first, as PyTorch's; a list each time
    tags = ember.ops.mylib.tagged.default.tags
    assert tags == [ember.Tag.pt2_compliant_tag, ember.Tag.pointwise]
    assert tags is not ember.ops.mylib.tagged.default.tags

    lib = L.Library("mylib_tags", "DEF")
    lib.define("h(Tensor x) -> Tensor", tags=ember.Tag.core)
    assert ember.ops.mylib_tags.h.default.tags == [ember.Tag.core]


def test_tags_match_the_oracle():
    torch = pytest.importorskip("torch")
    theirs = {k: int(v) for k, v in torch.Tag.__members__.items()}
    ours = {m.name: m.value for m in ember.Tag}
    assert {k: v for k, v in theirs.items() if k not in ("inplace", "out")} == ours
