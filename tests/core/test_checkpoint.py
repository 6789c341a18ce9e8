"""``ember.utils.checkpoint``: gradients equal to the plain run's, the recomputation, the RNG
state, both variants' errors and warnings in PyTorch's words, nesting, and the memory saving.

Models here use core ops only; ``tests/nn/test_checkpoint_nn.py`` checkpoints nn modules.
"""

from __future__ import annotations

import gc
import re
import threading
import tracemalloc
import warnings

import numpy as np
import pytest
from testutils import assert_allclose, assert_same_error, randn64, to_numpy, to_torch

import ember
from ember.autograd.graph import has_packed_values
from ember.utils.checkpoint import (
    CheckpointError,
    checkpoint,
    checkpoint_sequential,
    get_device_states,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
    set_device_states,
)

BOTH = pytest.mark.parametrize("reentrant", [False, True], ids=["non_reentrant", "reentrant"])

UNSET_WARNING = ("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                 "explicitly. Starting in PyTorch 2.9, calling checkpoint without use_reentrant "
                 "will raise an exception. use_reentrant=False is recommended, but if you need to "
                 "preserve the current default behavior, you can pass use_reentrant=True. Refer "
                 "to docs for more details on the differences between the two variants.")
GRAD_ERROR = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
              "passing an `inputs` parameter to .backward(). To resolve this error, you can "
              "either set use_reentrant=False, or call .backward() without passing the `inputs` "
              "argument.")


class MLP:
    """A float64 tanh MLP over explicit weights, counting how often it runs."""

    def __init__(self, sizes=(6, 16, 16, 4), seed=0, dropout=0.0):
        rng = np.random.default_rng(seed)
        self.weights = [randn64(a, b, rng=rng) * (1.0 / a ** 0.5) for a, b in
                        zip(sizes[:-1], sizes[1:])]
        self.weights = [w.detach().requires_grad_() for w in self.weights]
        self.dropout = dropout
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        for w in self.weights[:-1]:
            x = (x @ w).tanh()
            if self.dropout:
                x = ember.dropout(x, self.dropout, True)
        return x @ self.weights[-1]

    def zero_grad(self):
        for w in self.weights:
            w.grad = None

    def grads(self):
        return [to_numpy(w.grad) for w in self.weights]


def _loss_and_grads(model, x, run, seed=7):
    model.zero_grad()
    x.grad = None
    ember.manual_seed(seed)
    y = run(x)
    (y * y).sum().backward()
    return to_numpy(y), model.grads() + [to_numpy(x.grad)]


def _assert_same_grads(a, b):
    assert len(a) == len(b)
    for ga, gb in zip(a, b):
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)


# -- gradients and the recomputation ------------------------------------------------------------

@BOTH
def test_mlp_gradients_equal_the_plain_run(reentrant):
    model = MLP()
    x = randn64(5, 6, rng=1)
    y0, plain = _loss_and_grads(model, x, model)
    y1, ckpt = _loss_and_grads(model, x, lambda t: checkpoint(model, t, use_reentrant=reentrant))
    np.testing.assert_array_equal(y0, y1)
    _assert_same_grads(ckpt, plain)


@BOTH
def test_the_function_runs_twice_with_checkpoint_once_without(reentrant):
    model = MLP()
    x = randn64(3, 6, rng=2)
    model(x).sum().backward()
    assert model.calls == 1
    model.calls = 0
    y = checkpoint(model, x, use_reentrant=reentrant)
    assert model.calls == 1  # the forward
    y.sum().backward()
    assert model.calls == 2  # and the recomputation in the backward


def test_non_reentrant_drops_the_saved_values_until_the_backward():
    w = randn64(4, 4, rng=3)
    x = randn64(2, 4, rng=4)
    y = checkpoint(lambda t: (t @ w).tanh().exp(), x, use_reentrant=False)
    exp_node = y.grad_fn
    tanh_node = exp_node.next_functions[0][0]
    assert exp_node.name() == "ExpBackward0" and tanh_node.name() == "TanhBackward0"
    # what the graph keeps is the checkpoint's handle, not the array
    for node in (exp_node, tanh_node):
        assert has_packed_values(node) and not hasattr(node.out_data, "shape")
    y.sum().backward(retain_graph=True)
    assert has_packed_values(exp_node)  # retain_graph keeps the handles, not the values
    expected = to_numpy(ember.exp(ember.tanh(x @ w)))
    np.testing.assert_array_equal(to_numpy(exp_node.output()), expected)  # recomputed


@BOTH
def test_tuple_inputs_and_outputs_and_non_tensor_arguments(reentrant):
    a = randn64(3, 4, rng=5)
    b = randn64(3, 4, rng=6)

    def fn(x, scale, y):
        return (x * y).sin() * scale, (x - y).cos(), "label"

    def loss(out):
        return (out[0] * out[1]).sum()

    out = checkpoint(fn, a, 2.5, b, use_reentrant=reentrant)
    assert out[2] == "label"
    ga, gb = ember.autograd.grad(loss(fn(a, 2.5, b)), [a, b])
    loss(out).backward()
    assert_allclose(a.grad, ga, rtol=1e-12)
    assert_allclose(b.grad, gb, rtol=1e-12)


def test_one_output_of_several_used():
    a = randn64(3, rng=7)
    for reentrant in (False, True):
        a.grad = None
        first, _ = checkpoint(lambda t: (t.sin(), t.cos()), a, use_reentrant=reentrant)
        first.sum().backward()
        assert_allclose(a.grad, np.cos(to_numpy(a)), rtol=1e-12)


def test_non_reentrant_passes_keyword_arguments():
    x = randn64(4, rng=8)
    w = randn64(4, rng=9)
    out = checkpoint(lambda t, *, weight, power=1: (t * weight) ** power, x, weight=w, power=3,
                     use_reentrant=False)
    out.sum().backward()
    assert_allclose(x.grad, 3 * to_numpy(x) ** 2 * to_numpy(w) ** 3, rtol=1e-12)
    assert_allclose(w.grad, 3 * to_numpy(w) ** 2 * to_numpy(x) ** 3, rtol=1e-12)


def test_non_tensor_output_is_returned_as_is():
    x = randn64(2, rng=10)
    assert checkpoint(lambda t: 3, x, use_reentrant=False) == 3
    assert checkpoint(lambda t: 3, x, use_reentrant=True) == 3


def test_non_reentrant_gives_parameters_gradients_when_no_input_requires_grad():
    model = MLP()
    x = randn64(2, 6, rng=11, requires_grad=False)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    assert all(g is not None for g in model.grads())
    expected = MLP()
    expected(x).sum().backward()
    _assert_same_grads(model.grads(), expected.grads())


def test_reentrant_warns_and_gives_no_gradients_when_no_input_requires_grad():
    model = MLP()
    x = randn64(2, 6, rng=11, requires_grad=False)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. "
                                         "Gradients will be None"):
        y = checkpoint(model, x, use_reentrant=True)
    assert not y.requires_grad
    assert all(w.grad is None for w in model.weights)


def test_non_reentrant_works_with_autograd_grad_and_backward_inputs():
    model = MLP()
    x = randn64(4, 6, rng=12)
    expected = ember.autograd.grad(model(x).square().sum(), [x, model.weights[0]])
    y = checkpoint(model, x, use_reentrant=False)
    got = ember.autograd.grad(y.square().sum(), [x, model.weights[0]])
    for g, e in zip(got, expected):
        assert_allclose(g, e, rtol=1e-12)
    y = checkpoint(model, x, use_reentrant=False)
    y.square().sum().backward(inputs=[model.weights[1]])
    assert model.weights[0].grad is None and x.grad is None
    assert model.weights[1].grad is not None


def test_non_reentrant_gradients_of_gradients():
    x = randn64(5, rng=13)
    w = randn64(5, rng=14)

    def fn(t):
        return (t * w).sin().exp()

    def second(run):
        (g,) = ember.autograd.grad(run(x).sum(), x, create_graph=True)
        return ember.autograd.grad((g * g).sum(), [x, w])

    plain = second(fn)
    ckpt = second(lambda t: checkpoint(fn, t, use_reentrant=False))
    for a, b in zip(ckpt, plain):
        assert_allclose(a, b, rtol=1e-12)


def test_non_reentrant_backward_twice_needs_retain_graph():
    x = randn64(4, rng=15)
    y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_allclose(x.grad, 2 * np.exp(np.sin(to_numpy(x))) * np.cos(to_numpy(x)), rtol=1e-12)
    y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_non_reentrant_dropout_backward_twice_needs_retain_graph():
    x = randn64(50, rng=48)

    def fn(t):
        return ember.dropout(t.sin(), 0.5, True).exp()

    ember.manual_seed(4)
    expected = ember.autograd.grad(fn(x).sum(), x)[0]
    ember.manual_seed(4)
    y = checkpoint(fn, x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_allclose(x.grad, 2 * to_numpy(expected), rtol=1e-12)
    y = checkpoint(fn, x, use_reentrant=False).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


@BOTH
def test_in_place_change_of_an_input_after_the_forward_is_an_error(reentrant):
    x = randn64(3, rng=16)
    a = x * 1
    y = checkpoint(lambda t: t.sin(), a, use_reentrant=reentrant)
    a.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [ember.DoubleTensor [3]], which is output 0 of Add, is at "
            "version 1; expected version 0 instead.")):
        y.sum().backward()


def test_under_no_grad_the_function_just_runs():
    model = MLP()
    x = randn64(2, 6, rng=17)
    with ember.no_grad():
        y = checkpoint(model, x, use_reentrant=False)
        z = checkpoint(model, x, use_reentrant=True)
    assert not y.requires_grad and not z.requires_grad
    assert model.calls == 2
    with ember.no_grad():
        np.testing.assert_array_equal(to_numpy(y), to_numpy(model(x)))


# -- nesting ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("outer, inner", [(False, False), (False, True), (True, False),
                                          (True, True)])
def test_nested_checkpoints_give_the_plain_gradients(outer, inner):
    w1 = randn64(4, 4, rng=18)
    w2 = randn64(4, 4, rng=19)
    x = randn64(3, 4, rng=20)
    runs = {"inner": 0}

    def inner_fn(t):
        runs["inner"] += 1
        return (t @ w1).tanh()

    def plain(t):
        return inner_fn(t.sin()) @ w2

    def outer_fn(t):
        return checkpoint(inner_fn, t.sin(), use_reentrant=inner) @ w2

    expected = ember.autograd.grad(plain(x).square().sum(), [x, w1, w2])
    runs["inner"] = 0
    with warnings.catch_warnings():
        # reentrant in reentrant: the inner input does not require grad in the outer's no_grad
        # forward, and the inner checkpoint warns about it, as in PyTorch
        warnings.filterwarnings("ignore", "None of the inputs have requires_grad=True")
        y = checkpoint(outer_fn, x, use_reentrant=outer)
    y.square().sum().backward()
    for t, e in zip((x, w1, w2), expected):
        assert_allclose(t.grad, e, rtol=1e-12)
    # non-reentrant in non-reentrant: the outer recomputation refills the inner region too
    # (the forward and one recomputation); otherwise the forward, the outer recomputation and
    # the inner one
    assert runs["inner"] == (2 if not outer and not inner else 3)


def test_checkpoint_inside_a_checkpoint_inside_a_checkpoint():
    x = randn64(4, rng=21)

    def level(depth, t, use_checkpoint):
        t = t.sin() * 0.5
        if depth:
            if use_checkpoint:
                t = checkpoint(level, depth - 1, t, True, use_reentrant=False)
            else:
                t = level(depth - 1, t, False)
        return t.exp()

    expected = ember.autograd.grad(level(2, x, False).sum(), x)[0]
    got = ember.autograd.grad(level(2, x, True).sum(), x)[0]
    assert_allclose(got, expected, rtol=1e-12)


# -- the RNG state ---------------------------------------------------------------------------------

@BOTH
def test_dropout_masks_of_the_recomputation_equal_the_forward(reentrant):
    model = MLP(dropout=0.4)
    x = randn64(8, 6, rng=22)
    y0, plain = _loss_and_grads(model, x, model)
    y1, ckpt = _loss_and_grads(model, x, lambda t: checkpoint(model, t, use_reentrant=reentrant))
    np.testing.assert_array_equal(y0, y1)
    _assert_same_grads(ckpt, plain)


@BOTH
def test_without_preserve_rng_state_the_masks_differ(reentrant):
    model = MLP(dropout=0.4)
    x = randn64(8, 6, rng=23)
    _, plain = _loss_and_grads(model, x, model)
    _, ckpt = _loss_and_grads(model, x, lambda t: checkpoint(
        model, t, use_reentrant=reentrant, preserve_rng_state=False))
    assert any(not np.allclose(a, b) for a, b in zip(ckpt, plain))


@BOTH
def test_the_recomputation_leaves_the_global_rng_where_it_was(reentrant):
    model = MLP(dropout=0.5)
    x = randn64(4, 6, rng=24)
    _loss_and_grads(model, x, model, seed=3)
    after_plain = to_numpy(ember.rand(5))
    _loss_and_grads(model, x, lambda t: checkpoint(model, t, use_reentrant=reentrant), seed=3)
    np.testing.assert_array_equal(to_numpy(ember.rand(5)), after_plain)


@pytest.fixture
def strict1():
    """The second strict test device (its own default generator, not the CPU's)."""
    from ember.testing import register_strict_device

    register_strict_device()
    return ember.device("strict:1")


@BOTH
def test_the_device_generator_of_the_inputs_is_restored(strict1, reentrant):
    _check_device_generator(strict1, reentrant)


@pytest.mark.gpu
@BOTH
def test_the_cuda_generator_of_the_inputs_is_restored(reentrant):
    _check_device_generator(ember.device("cuda:0"), reentrant)


def _check_device_generator(device, reentrant):
    w = randn64(6, 6, rng=25).detach().to(device).requires_grad_()
    x = randn64(5, 6, rng=26).detach().to(device).requires_grad_()

    def fn(t):
        return ember.dropout((t @ w).tanh(), 0.5, True) @ w

    def grads(run, preserve=True):
        w.grad = x.grad = None
        ember.manual_seed(5)
        run(x).square().sum().backward()
        return [to_numpy(w.grad.cpu()), to_numpy(x.grad.cpu())]

    plain = grads(fn)
    _assert_same_grads(grads(lambda t: checkpoint(fn, t, use_reentrant=reentrant)), plain)
    unpreserved = grads(lambda t: checkpoint(fn, t, use_reentrant=reentrant,
                                             preserve_rng_state=False))
    assert not np.allclose(unpreserved[0], plain[0])


def test_get_and_set_device_states(strict1):
    x = ember.zeros(2, device=strict1)
    ids, states = get_device_states(x, ember.zeros(1, device="cpu"), [x])
    assert ids == [1] and len(states) == 1
    first = to_numpy(ember.rand(4, device=strict1).cpu())
    set_device_states(ids, states, device_type="strict")
    np.testing.assert_array_equal(to_numpy(ember.rand(4, device=strict1).cpu()), first)


# -- warnings and errors (PyTorch's words) ---------------------------------------------------------

def test_use_reentrant_not_passed_warns_then_runs_the_reentrant_variant():
    x = randn64(3, rng=27)
    with pytest.warns(UserWarning) as record:
        y = checkpoint(lambda t: t.sin(), x)
    assert str(record[0].message) == UNSET_WARNING
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    with pytest.warns(UserWarning, match="torch.utils.checkpoint.checkpoint_sequential: the "
                                         "use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential([ember.sin, ember.cos], 2, x)


@pytest.mark.parametrize("how", ["grad", "backward_inputs"])
def test_reentrant_refuses_grad_and_backward_inputs(how):
    x = randn64(3, rng=28)
    y = checkpoint(lambda t: t.sin(), x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match=re.escape(GRAD_ERROR)):
        if how == "grad":
            ember.autograd.grad(y, x)
        else:
            y.backward(inputs=[x])


def test_reentrant_in_reentrant_backward_and_reentrant_in_non_reentrant_grad():
    # the inner region's own nested backward has no ``inputs``: a plain backward works
    x = randn64(3, rng=29)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "None of the inputs have requires_grad=True")
        y = checkpoint(lambda t: checkpoint(lambda u: u.exp(), t.sin(), use_reentrant=True),
                       x, use_reentrant=True)
    y.sum().backward()
    assert_allclose(x.grad, np.exp(np.sin(to_numpy(x))) * np.cos(to_numpy(x)), rtol=1e-12)
    # a reentrant region reached by autograd.grad through a non-reentrant one: refused
    y = checkpoint(lambda t: checkpoint(lambda u: u.exp(), t.sin(), use_reentrant=True),
                   x, use_reentrant=False)
    with pytest.raises(RuntimeError, match=re.escape(GRAD_ERROR)):
        ember.autograd.grad(y.sum(), x)


def test_reentrant_outputs_that_do_not_require_grad():
    x = randn64(3, rng=30)
    y = checkpoint(lambda t: t.sin().detach(), x, use_reentrant=True)
    assert y.requires_grad  # the Function's output, as in PyTorch
    with pytest.raises(RuntimeError, match="none of output has requires_grad=True, this "
                                           "checkpoint\\(\\) is not necessary"):
        y.sum().backward()


def test_argument_errors():
    x = randn64(2, rng=31)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: b,c$"):
        checkpoint(lambda a, b=1, c=2: a, x, b=2, c=3, use_reentrant=True)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported "
                                         "when use_reentrant=False."):
        checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match=re.escape("determinism_check should be one of "
                                                   "['default', 'none'], but got x")):
        checkpoint(lambda a: a, x, use_reentrant=False, determinism_check="x")
    with pytest.raises(ValueError, match="debug=True is incompatible with non-default "
                                         "context_fn"):
        checkpoint(lambda a: a, x, use_reentrant=False, debug=True,
                   context_fn=lambda: (ember.no_grad(), ember.no_grad()))
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        checkpoint_sequential([ember.sin], 1, x, use_reentrant=False, foo=1)


def _nondeterministic(first, later):
    runs = {"n": 0}

    def fn(t):
        runs["n"] += 1
        return first(t) if runs["n"] == 1 else later(t)

    return fn


def test_recomputation_saving_a_different_number_of_tensors():
    x = randn64(3, rng=32)
    y = checkpoint(_nondeterministic(lambda t: t.sin().sin(), lambda t: t.sin()), x,
                   use_reentrant=False)
    with pytest.raises(CheckpointError, match=re.escape(
            "torch.utils.checkpoint: A different number of tensors was saved during the "
            "original forward and recomputation.\nNumber of tensors saved during forward: 2\n"
            "Number of tensors saved during recomputation: 1.")):
        y.sum().backward()


def test_recomputation_with_different_metadata():
    x = randn64(3, rng=33)
    y = checkpoint(_nondeterministic(lambda t: t.sin().sum(), lambda t: t[:2].sin().sum()), x,
                   use_reentrant=False)
    with pytest.raises(CheckpointError) as info:
        y.backward()
    message = str(info.value)
    assert message.startswith("torch.utils.checkpoint: Recomputed values for the following "
                              "tensors have different metadata than during the forward pass.\n"
                              "tensor at position 0:\nsaved metadata: {'shape': ember.Size([3]),"
                              " 'dtype': ember.float64, ")
    assert "recomputed metadata: {'shape': ember.Size([2])" in message


def test_determinism_check_none_skips_the_metadata_check():
    x = randn64(4, rng=34)
    scale = {"v": 1.0}

    def fn(t):  # the same ops and shapes; a different value: not a metadata difference
        return (t * scale["v"]).sin()

    y = checkpoint(fn, x, use_reentrant=False, determinism_check="none")
    scale["v"] = 2.0
    y.sum().backward()
    # the saved tensor is the recomputed one (sin's input, 2x); the scalar 1.0 kept by the
    # forward's mul node is not a saved tensor and stays: cos(2x), as PyTorch gives
    assert_allclose(x.grad, np.cos(2.0 * to_numpy(x)), rtol=1e-12)


def test_recomputation_with_other_operations_is_an_error_even_without_the_check():
    x = randn64(3, rng=35)
    y = checkpoint(_nondeterministic(lambda t: t.sin(), lambda t: t.cos()), x,
                   use_reentrant=False, determinism_check="none")
    with pytest.raises(CheckpointError, match="the recomputation ran different operations than "
                                              "the original forward.*SinBackward0 in the "
                                              "forward, CosBackward0 in the recomputation"):
        y.sum().backward()


@pytest.mark.parametrize("how", ["argument", "context"])
def test_debug_lists_the_operations_of_both_runs(how):
    x = randn64(3, rng=36)
    fn = _nondeterministic(lambda t: t.sin().exp(), lambda t: t.cos())
    if how == "argument":
        y = checkpoint(fn, x, use_reentrant=False, debug=True)
    else:
        with set_checkpoint_debug_enabled(True):
            y = checkpoint(fn, x, use_reentrant=False, debug=False)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    message = str(info.value)
    assert ("Operations executed during the original forward:\n\nSinBackward0\nExpBackward0"
            in message)
    assert "Operations executed during recomputation:\n\nCosBackward0" in message
    assert "test_checkpoint.py" in message  # the forward traceback of the ops
    with set_checkpoint_debug_enabled(False):  # overrides debug=True
        y = checkpoint(_nondeterministic(lambda t: t.sin().exp(), lambda t: t.cos()), x,
                       use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    assert "Operations executed" not in str(info.value)


def test_context_fn_runs_the_forward_and_the_recomputation_in_its_contexts():
    import contextlib

    log = []

    def context(name):
        @contextlib.contextmanager
        def cm():
            log.append(f"enter {name}")
            yield
            log.append(f"exit {name}")
        return cm()

    x = randn64(3, rng=37)

    def fn(t):
        log.append("run")
        return t.sin()

    with set_checkpoint_early_stop(False):
        y = checkpoint(fn, x, use_reentrant=False,
                       context_fn=lambda: (context("forward"), context("recompute")))
    assert log == ["enter forward", "run", "exit forward"]
    y.sum().backward()
    assert log[3:] == ["enter recompute", "run", "exit recompute"]
    # with early stop (the default) the recomputation stops inside the context once sin has
    # saved its input, as in PyTorch: the code after the context's ``yield`` does not run
    log.clear()
    y = checkpoint(fn, x, use_reentrant=False,
                   context_fn=lambda: (context("forward"), context("recompute")))
    y.sum().backward()
    assert log == ["enter forward", "run", "exit forward", "enter recompute", "run"]


def test_a_forward_context_that_swallows_the_error():
    import contextlib

    x = randn64(3, rng=38)

    def fn(t):
        raise KeyError("boom")

    with pytest.raises(RuntimeError, match="the forward context provided by context_fn "
                                           "suppressed an exception"):
        checkpoint(fn, x, use_reentrant=False,
                   context_fn=lambda: (contextlib.suppress(KeyError), contextlib.nullcontext()))


def test_early_stop_is_accepted_and_changes_nothing():
    x = randn64(4, rng=39)
    with set_checkpoint_early_stop(False):
        y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False, early_stop=True)
    y.sum().backward()
    assert_allclose(x.grad, np.exp(np.sin(to_numpy(x))) * np.cos(to_numpy(x)), rtol=1e-12)


@BOTH
def test_the_recomputation_runs_under_the_forwards_autocast(reentrant):
    pytest.importorskip("ember.amp.autocast_mode", reason="ember.autocast is not built here")
    low = getattr(ember, "bfloat16", ember.float16)
    # CPU autocast: the tensors are on the CPU (the strict test device has no autocast)
    w = randn64(8, 8, rng=46).detach().float().cpu().requires_grad_()
    x = randn64(4, 8, rng=47).detach().float().cpu().requires_grad_()

    def fn(t):
        return (t @ w).tanh() @ w

    with ember.autocast("cpu", dtype=low):
        plain = fn(x)
        ckpt = checkpoint(fn, x, use_reentrant=reentrant)
    assert plain.dtype == ckpt.dtype == low
    expected = ember.autograd.grad(plain.float().sum(), [w, x])
    ckpt.float().sum().backward()  # outside autocast: the recomputation re-enters it
    for t, e in zip((w, x), expected):
        np.testing.assert_array_equal(to_numpy(t.grad), to_numpy(e))


def test_threads_backward_through_their_own_regions():
    model = MLP()
    xs = [randn64(3, 6, rng=40 + i) for i in range(4)]
    expected = [ember.autograd.grad(model(x).square().sum(), x)[0] for x in xs]
    results: dict = {}

    def work(i):
        for _ in range(5):
            y = checkpoint(model, xs[i], use_reentrant=False)
            results[i] = ember.autograd.grad(y.square().sum(), xs[i])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    for i, e in enumerate(expected):
        assert_allclose(results[i], e, rtol=1e-12)


# -- checkpoint_sequential -------------------------------------------------------------------------

@BOTH
@pytest.mark.parametrize("segments", [1, 2, 3, 6])
def test_checkpoint_sequential_of_functions(reentrant, segments):
    rng = np.random.default_rng(41)
    ws = [randn64(4, 4, rng=rng) * 0.5 for _ in range(6)]
    ws = [w.detach().requires_grad_() for w in ws]
    fns = [lambda t, w=w: (t @ w).tanh() for w in ws]
    x = randn64(3, 4, rng=42)
    expected = ember.autograd.grad(checkpoint_sequential(fns, 1, x, use_reentrant=False)
                                   .square().sum(), ws)
    y = checkpoint_sequential(fns, segments, x, use_reentrant=reentrant, preserve_rng_state=True)
    y.square().sum().backward()
    for w, e in zip(ws, expected):
        assert_allclose(w.grad, e, rtol=1e-12)


# -- memory ----------------------------------------------------------------------------------------

def _peak_bytes(run) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_checkpointing_a_deep_narrow_mlp_lowers_the_peak_memory():
    # activations (1024 x 64 float32, 256 KiB each) dominate the weights (16 KiB each): a
    # model where checkpointing must save memory
    rng = np.random.default_rng(43)
    # on the CPU: tracemalloc sees NumPy's buffers
    ws = [ember.tensor(rng.standard_normal((64, 64)).astype(np.float32) / 8, device="cpu",
                       requires_grad=True) for _ in range(16)]
    fns = [lambda t, w=w: (t @ w).tanh() for w in ws]
    x = ember.tensor(rng.standard_normal((1024, 64)).astype(np.float32), device="cpu")

    def step(segments):
        def run():
            y = checkpoint_sequential(fns, segments, x, use_reentrant=False)
            y.sum().backward()
        return run

    plain = _peak_bytes(step(1))
    ckpt = _peak_bytes(step(4))
    assert plain > 16 * 256 * 1024  # every block's activation was held
    assert ckpt < 0.6 * plain, (ckpt, plain)


def _forward_peak_bytes(run) -> int:
    """Peak allocation while ``run()`` (a forward) runs, above what was allocated before."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = run()
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


def test_inside_one_region_the_forward_keeps_nothing():
    # one region around the whole deep MLP: its forward keeps no activation (the hooks store
    # handles), where a plain forward keeps all 16 (1024 x 64 float32, 256 KiB each)
    rng = np.random.default_rng(49)
    ws = [ember.tensor(rng.standard_normal((64, 64)).astype(np.float32) / 8, device="cpu",
                       requires_grad=True) for _ in range(16)]

    def model(t):
        for w in ws:
            t = (t @ w).tanh()
        return t

    x = ember.tensor(rng.standard_normal((1024, 64)).astype(np.float32), device="cpu")
    plain, y_plain = _forward_peak_bytes(lambda: model(x))
    ckpt, y_ckpt = _forward_peak_bytes(lambda: checkpoint(model, x, use_reentrant=False))
    assert plain > 16 * 256 * 1024
    assert ckpt < 0.25 * plain, (ckpt, plain)
    expected = ember.autograd.grad(y_plain.sum(), ws)
    del y_plain
    got = ember.autograd.grad(y_ckpt.sum(), ws)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(to_numpy(g), to_numpy(e))


def test_one_region_with_dropout_gives_the_plain_gradients():
    model = MLP(sizes=(6, 32, 32, 32, 4), dropout=0.3)
    x = randn64(16, 6, rng=50)
    y0, plain = _loss_and_grads(model, x, model)
    y1, ckpt = _loss_and_grads(model, x, lambda t: checkpoint(model, t, use_reentrant=False))
    np.testing.assert_array_equal(y0, y1)
    _assert_same_grads(ckpt, plain)
    # the same under save_on_cpu around the region (it packs the region's input)
    with ember.autograd.graph.save_on_cpu():
        y2, hooked = _loss_and_grads(model, x,
                                     lambda t: checkpoint(model, t, use_reentrant=False))
    np.testing.assert_array_equal(y0, y2)
    _assert_same_grads(hooked, plain)


def test_the_hooks_around_a_checkpoint_pack_its_inputs_as_in_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    def run(lib, cp, x):
        calls = []
        with lib.autograd.graph.saved_tensors_hooks(lambda t: calls.append("pack") or t,
                                                    lambda t: calls.append("unpack") or t):
            y = cp(lambda t: t.sin().exp(), x, use_reentrant=False)
        forward = list(calls)
        y.sum().backward()
        return forward, calls, x.grad

    x = randn64(4, rng=51)
    ours = run(ember, checkpoint, x)
    theirs = run(torch, tcp.checkpoint, to_torch(x).requires_grad_())
    assert ours[:2] == theirs[:2] == (["pack"], ["pack", "unpack"])
    assert_allclose(ours[2], theirs[2], rtol=1e-12)


def test_each_backward_recomputes_the_region_as_in_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    def runs(lib, cp, x):
        n = {"runs": 0}

        def fn(t):
            n["runs"] += 1
            return t.sin().exp()

        y = cp(fn, x, use_reentrant=False).sum()
        y.backward(retain_graph=True)
        y.backward()
        return n["runs"], x.grad

    x = randn64(4, rng=52)
    ours, theirs = runs(ember, checkpoint, x), runs(torch, tcp.checkpoint,
                                                     to_torch(x).requires_grad_())
    assert ours[0] == theirs[0] == 3  # the forward and one recomputation per backward
    assert_allclose(ours[1], theirs[1], rtol=1e-12)


@pytest.mark.parametrize("early_stop", [True, False])
def test_early_stop_skips_what_follows_the_last_saved_tensor_as_in_torch(early_stop):
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    def log_of(lib, cp, set_early_stop, x):
        log = []

        def fn(t):
            log.append("start")
            u = t.sin()  # saves t
            log.append("after sin")
            return u + 1  # saves nothing

        with set_early_stop(early_stop):
            y = cp(fn, x, use_reentrant=False)
        y.sum().backward()
        return log, x.grad

    x = randn64(3, rng=53)
    ours = log_of(ember, checkpoint, set_checkpoint_early_stop, x)
    theirs = log_of(torch, tcp.checkpoint, tcp.set_checkpoint_early_stop,
                    to_torch(x).requires_grad_())
    assert ours[0] == theirs[0]
    assert ours[0] == (["start", "after sin", "start"] if early_stop
                       else ["start", "after sin", "start", "after sin"])
    assert_allclose(ours[1], theirs[1], rtol=1e-12)


def test_unpacking_a_value_twice_in_one_backward_is_an_error_as_in_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    def twice(lib):
        class ReadsTwice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                ctx.save_for_backward(t)
                return t * 2

            @staticmethod
            def backward(ctx, g):
                _ = ctx.saved_tensors
                (t,) = ctx.saved_tensors
                return g * t

        return ReadsTwice

    x = randn64(3, rng=54)
    fn, tfn = twice(ember), twice(torch)
    with pytest.raises(tcp.CheckpointError) as theirs:
        tcp.checkpoint(lambda t: tfn.apply(t.sin()), to_torch(x).requires_grad_(),
                       use_reentrant=False).sum().backward()
    with pytest.raises(CheckpointError) as ours:
        checkpoint(lambda t: fn.apply(t.sin()), x, use_reentrant=False).sum().backward()
    assert str(ours.value) == str(theirs.value)


def test_hooks_inside_the_region_take_their_values():
    # ops under the user's hooks inside the function are packed by those hooks, in the forward
    # and in the recomputation alike; the rest by the checkpoint
    x = randn64(5, rng=55)
    calls = []

    def fn(t):
        u = t.sin()
        with ember.autograd.graph.saved_tensors_hooks(lambda v: calls.append("p") or v,
                                                      lambda v: calls.append("u") or v):
            u = u.exp()
        return u.tanh()

    expected = ember.autograd.grad(fn(x).sum(), x)[0]
    calls.clear()
    y = checkpoint(fn, x, use_reentrant=False)
    assert calls == ["p"]
    y.sum().backward()
    assert calls == ["p", "p", "u"]  # the recomputation packed once more (its own graph)
    assert_allclose(x.grad, expected, rtol=1e-12)


def test_checkpoint_inside_a_dual_level_gives_the_plain_tangent_and_gradients():
    import ember.autograd.forward_ad as fwAD

    x = randn64(6, rng=56)

    def fn(t):
        return ember.dropout((t * t).sin().exp(), 0.5, True)

    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones_like(x))
        ember.manual_seed(2)
        plain = fn(d)
        t_plain = fwAD.unpack_dual(plain).tangent
        ember.manual_seed(2)
        ckpt = checkpoint(fn, d, use_reentrant=False)
        t_ckpt = fwAD.unpack_dual(ckpt).tangent
    np.testing.assert_array_equal(to_numpy(t_ckpt), to_numpy(t_plain))
    expected = ember.autograd.grad(plain.sum(), x)[0]
    assert_allclose(ember.autograd.grad(ckpt.sum(), x)[0], expected, rtol=0)


# -- PyTorch as the oracle -------------------------------------------------------------------------

@BOTH
def test_gradients_match_torch_checkpoint(reentrant):
    pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    model = MLP()
    x = randn64(4, 6, rng=44)
    y = checkpoint(model, x, use_reentrant=reentrant)
    (y * y).sum().backward()
    tw = [to_torch(w).requires_grad_() for w in model.weights]
    tx = to_torch(x).requires_grad_()

    def tmodel(t):
        for w in tw[:-1]:
            t = (t @ w).tanh()
        return t @ tw[-1]

    ty = tcp.checkpoint(tmodel, tx, use_reentrant=reentrant)
    (ty * ty).sum().backward()
    assert_allclose(y, ty.detach(), rtol=1e-12)
    for w, t in zip(model.weights + [x], tw + [tx]):
        assert_allclose(w.grad, t.grad, rtol=1e-10)


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    x, tx = randn64(3, rng=45), torch.randn(3, requires_grad=True)

    def grad_after(cp, lib, t):
        y = cp(lambda a: a.sin(), t, use_reentrant=True)
        return lib.autograd.grad(y.sum(), t)

    assert_same_error(lambda: grad_after(checkpoint, ember, x),
                      lambda: grad_after(tcp.checkpoint, torch, tx))
    assert_same_error(lambda: checkpoint(lambda a, b=1: a, x, b=2, use_reentrant=True),
                      lambda: tcp.checkpoint(lambda a, b=1: a, tx, b=2, use_reentrant=True))
    assert_same_error(lambda: checkpoint(lambda a: a, x, use_reentrant=True, debug=True),
                      lambda: tcp.checkpoint(lambda a: a, tx, use_reentrant=True, debug=True))
    assert_same_error(lambda: checkpoint(lambda a: a, x, use_reentrant=False,
                                         determinism_check="all"),
                      lambda: tcp.checkpoint(lambda a: a, tx, use_reentrant=False,
                                             determinism_check="all"))
    assert_same_error(
        lambda: checkpoint(lambda a: a.sin().detach(), x, use_reentrant=True).sum().backward(),
        lambda: tcp.checkpoint(lambda a: a.sin().detach(), tx, use_reentrant=True)
        .sum().backward())
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        checkpoint(lambda a: a, x)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        tcp.checkpoint(lambda a: a, tx)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
