"""What autograd checks, and in which order, as PyTorch 2.13 does: the order hooks run in
before a node (tensor hooks, retained grads, node pre-hooks), the checks of a hook's result,
and ``grad``/``backward``'s argument checks. Each scenario runs in Ember and, where PyTorch is
installed, in PyTorch too, and must end the same way (the same values or the same error)."""

from __future__ import annotations

import functools
import re
import warnings

import numpy as np
import pytest

import ember


def _outcome(lib, scenario):
    """``scenario(lib)``'s result as plain data, or its error's type and message (library
    names taken out)."""
    try:
        out = scenario(lib)
    except Exception as exc:  # the outcome compared
        return type(exc).__name__, re.sub(r"\b(torch|ember)\.", "", str(exc))
    if isinstance(out, (list, tuple)):
        return [np.asarray(o.detach()).tolist() if hasattr(o, "detach") else o for o in out]
    return np.asarray(out.detach()).tolist() if hasattr(out, "detach") else out


def _both(scenario):
    """The scenario's outcome in Ember, checked against PyTorch's where it is installed."""
    got = _outcome(ember, scenario)
    try:
        import torch
    except ImportError:
        return got
    assert got == _outcome(torch, scenario)
    return got


# -- the order of the hooks before a node runs -------------------------------------------------

def _hook_order(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append("tensor 1"))
    y.grad_fn.register_prehook(lambda go: log.append("node pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("node post"))
    y.register_hook(lambda g: log.append("tensor 2"))
    y.sum().backward()
    return log


def test_tensor_hooks_run_before_the_nodes_pre_hooks_whatever_the_registration_order():
    assert _both(_hook_order) == ["tensor 1", "tensor 2", "node pre", "node post"]


def _retained_between(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: (go[0] * 100,))
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    return [y.grad, x.grad]


def test_retain_grad_sees_the_tensor_hooks_result_but_not_the_node_pre_hooks():
    assert _both(_retained_between) == [[3.0, 3.0], [600.0, 600.0]]


# -- a hook's result --------------------------------------------------------------------------

def _tensor_hook(returns, dtype="float32"):
    def scenario(lib):
        x = lib.ones(2, requires_grad=True, dtype=getattr(lib, dtype))
        y = x * 2
        y.register_hook(returns(lib))
        y.sum().backward()
        return x.grad

    return scenario


def _named(g):
    return g.double()


@pytest.mark.parametrize("returns, want", [
    (lambda lib: lambda g: g.double(),
     ("RuntimeError", "hook '<lambda>' has changed the type of value (was FloatTensor got "
                      "DoubleTensor)")),
    (lambda lib: _named,
     ("RuntimeError", "hook '_named' has changed the type of value (was FloatTensor got "
                      "DoubleTensor)")),
    (lambda lib: functools.partial(lambda g, k: g.long(), k=1),
     ("RuntimeError", "hook '<unknown>' has changed the type of value (was FloatTensor got "
                      "LongTensor)")),
    (lambda lib: lambda g: g.to(lib.complex64),
     ("RuntimeError", "hook '<lambda>' has changed the type of value (was FloatTensor got "
                      "CPUComplexFloatType)")),
    (lambda lib: lambda g: g.to("meta"),
     ("RuntimeError", "hook '<lambda>' has changed the type of value (was FloatTensor got "
                      "MetaFloatType)")),
    (lambda lib: lambda g: g[:1],
     ("RuntimeError", "hook '<lambda>' has changed the size of value")),
    (lambda lib: lambda g: 3.0,
     ("TypeError", "expected Variable, but hook returned 'float'")),
    (lambda lib: lambda g: g * 5, [10.0, 10.0]),
])
def test_a_tensor_hooks_result_is_checked(returns, want):
    assert _both(_tensor_hook(returns)) == want


def test_a_leaf_hook_is_checked_too():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        x.register_hook(lambda g: g.half())
        (x * 2).sum().backward()

    assert _both(scenario) == ("RuntimeError", "hook '<lambda>' has changed the type of value "
                                               "(was FloatTensor got HalfTensor)")


def _node_hook(kind, returns):
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        w = lib.full((2,), 3.0, requires_grad=True)
        y = x * w
        if kind == "pre":
            y.grad_fn.register_prehook(returns(lib))
        else:
            y.grad_fn.register_hook(returns(lib))
        y.sum().backward()
        return [x.grad, w.grad]

    return scenario


@pytest.mark.parametrize("kind, returns, want", [
    ("pre", lambda lib: lambda go: [go[0]],
     ("TypeError", "expected tuple, but hook returned 'list'")),
    ("pre", lambda lib: lambda go: (go[0], go[0]),
     ("RuntimeError", "hook '<lambda>' has returned an incorrect number of values (got 2, but "
                      "expected 1)")),
    ("pre", lambda lib: lambda go: (lib.ones(3),),
     ("RuntimeError", "hook '<lambda>' has changed the size of value")),
    ("pre", lambda lib: lambda go: (go[0] * 2,), [[6.0, 6.0], [2.0, 2.0]]),
    ("post", lambda lib: lambda gi, go: [gi[0], gi[1]],
     ("TypeError", "expected tuple, but hook returned 'list'")),
    ("post", lambda lib: lambda gi, go: (gi[0],),
     ("RuntimeError", "hook '<lambda>' has returned an incorrect number of values (got 1, but "
                      "expected 2)")),
    ("post", lambda lib: lambda gi, go: (gi[0].double(), gi[1]),
     ("RuntimeError", "hook '<lambda>' has changed the type of value (was FloatTensor got "
                      "DoubleTensor)")),
    ("post", lambda lib: lambda gi, go: (None, gi[1] * 2), [None, [2.0, 2.0]]),
])
def test_a_nodes_hook_result_is_checked(kind, returns, want):
    assert _both(_node_hook(kind, returns)) == want


def test_a_post_hook_cannot_give_a_gradient_to_an_input_without_one():
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * lib.ones(2)
        y.grad_fn.register_hook(lambda gi, go: (gi[0], lib.ones(2)))
        y.sum().backward()

    assert _both(scenario) == ("RuntimeError",
                               "can't replace a None gradient with a non-None value")


def test_a_refused_hook_result_accumulates_nothing():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        y.sum().backward()
    assert x.grad is None


# -- grad() and backward(): their arguments ---------------------------------------------------

def _grad_call(build):
    def scenario(lib):
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        return build(lib, x, y)

    return scenario


@pytest.mark.parametrize("build, want", [
    (lambda lib, x, y: lib.autograd.grad(lib.ones(2).sum(), []),
     ("RuntimeError", "`inputs` argument to `grad()` cannot be empty.")),
    (lambda lib, x, y: lib.autograd.grad(lib.ones(2).sum(), [1.0]),
     ("RuntimeError", "element 0 of tensors does not require grad and does not have a "
                      "grad_fn")),
    (lambda lib, x, y: lib.autograd.grad(y.sum(), [1.0]),
     ("RuntimeError", "all inputs have to be Tensors or GradientEdges, but got float")),
    (lambda lib, x, y: lib.autograd.grad(y.sum(), [lib.ones(2)]),
     ("RuntimeError", "One of the differentiated Tensors does not require grad")),
    (lambda lib, x, y: lib.autograd.grad([y, y], x, grad_outputs=[lib.ones(2)]),
     ("RuntimeError", "got 2 tensors and 1 gradients")),
    (lambda lib, x, y: lib.autograd.grad([lib.ones(2), y], x, grad_outputs=[lib.ones(2)]),
     ("RuntimeError", "got 2 tensors and 1 gradients")),
    (lambda lib, x, y: lib.autograd.grad([y], x, grad_outputs=[lib.ones(2), lib.ones(2)]),
     [[2.0, 2.0]]),
    (lambda lib, x, y: lib.autograd.grad(y, x, grad_outputs=[3.0]),
     ("TypeError", "gradients can be either Tensors or None, but got float")),
    (lambda lib, x, y: lib.autograd.grad(y, x),
     ("RuntimeError", "grad can be implicitly created only for scalar outputs")),
    (lambda lib, x, y: lib.autograd.backward([y, y], [lib.ones(2)]),
     ("RuntimeError", "got 2 tensors and 1 gradients")),
    (lambda lib, x, y: lib.autograd.backward([y], [3.0]),
     ("TypeError", "gradients can be either Tensors or None, but got float")),
    (lambda lib, x, y: y.sum().backward(inputs=[1.0]),
     ("RuntimeError", "all inputs have to be Tensors or GradientEdges, but got float")),
    (lambda lib, x, y: y.sum().backward(inputs=[]),
     ("RuntimeError", "`inputs` argument to `backward()` cannot be empty.")),
])
def test_grad_and_backward_check_their_arguments_in_pytorchs_order(build, want):
    assert _both(_grad_call(build)) == want


def test_only_inputs_false_warns_as_deprecated():
    x = ember.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g, = ember.autograd.grad((x * 2).sum(), x, only_inputs=False)
    assert [w.category for w in caught] == [FutureWarning]
    assert str(caught[0].message).startswith("only_inputs argument is deprecated and is "
                                             "ignored now (defaults to True).")
    assert g.tolist() == [2.0, 2.0]


def test_assigning_a_grad_checks_dtype_then_device_then_size():
    def scenario(value):
        def run(lib):
            x = lib.ones(3, requires_grad=True)
            x.grad = value(lib)

        return run

    assert _both(scenario(lambda lib: lib.ones(4))) == (
        "RuntimeError", "attempting to assign a gradient of size '[4]' to a tensor of size "
                        "'[3]'. Please ensure that the gradient and the tensor are the same size")
    assert _both(scenario(lambda lib: lib.ones(4, device="meta")))[1].startswith(
        "attempting to assign a gradient with device type 'meta' to a tensor with device type "
        "'cpu'.")
    assert _both(scenario(lambda lib: lib.ones(4, dtype=lib.float64, device="meta")))[1] \
        .startswith("attempting to assign a gradient with dtype 'double' to a tensor with "
                    "grad_dtype 'Float'.")


def test_backward_with_create_graph_warns_once_per_process(monkeypatch):
    import ember.autograd as ag

    monkeypatch.setattr(ag, "_WARNED_CREATE_GRAPH", [])
    x = ember.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (x * x).sum().backward(create_graph=True)
        (x * x).sum().backward(create_graph=True)
        ember.autograd.grad((x * x).sum(), x, create_graph=True)  # grad() does not warn
    assert [str(w.message)[:60] for w in caught] == [
        "Using backward() with create_graph=True will create a refere"]
    assert caught[0].filename == __file__  # attributed to the caller's line
    assert x.grad.requires_grad and x.grad.tolist() == [4.0, 4.0]


def test_the_create_graph_warning_names_the_callers_line_through_ember_frames(monkeypatch):
    import ember.autograd as ag

    monkeypatch.setattr(ag, "_WARNED_CREATE_GRAPH", [])
    x = ember.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.autograd.backward([(x * x).sum()], create_graph=True)  # one frame less
    assert [w.filename for w in caught] == [__file__]
