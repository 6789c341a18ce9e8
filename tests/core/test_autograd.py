"""The autograd engine and its user surface: backward, autograd.grad, grad modes, hooks,
version counters, anomaly mode and gradcheck."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from testutils import randn64, t64, to_numpy

import ember
from ember.autograd import Function, gradcheck, gradgradcheck
from ember.autograd.gradcheck import GradcheckError

RNG = np.random.default_rng(0)


# -- backward ----------------------------------------------------------------------------------

def test_backward_of_scalar_and_implicit_gradient():
    x = randn64(3, rng=RNG)
    (x * x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * to_numpy(x))
    assert x.grad.dtype == ember.float64 and x.grad.shape == x.shape
    assert not x.grad.requires_grad and x.grad.grad_fn is None


def test_backward_of_non_scalar_needs_a_gradient():
    x = randn64(3, rng=RNG)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        y.backward()
    y.backward(t64([1.0, 10.0, 100.0], requires_grad=False))
    np.testing.assert_allclose(to_numpy(x.grad), [2.0, 20.0, 200.0])


def test_backward_gradient_of_wrong_shape():
    y = randn64(2, rng=RNG) * 2
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                                           r"ember.Size\(\[3\]\) and output\[0\] has a shape of "
                                           r"ember.Size\(\[2\]\)."):
        y.backward(t64([1.0, 2.0, 3.0], requires_grad=False))


def test_backward_of_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does "
                                           "not have a grad_fn"):
        t64([1.0], requires_grad=False).sum().backward()
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        ember.autograd.backward([randn64(1, rng=RNG).sum(), t64([1.0], requires_grad=False).sum()])


def test_retain_graph_and_second_backward_error():
    x = randn64(3, rng=RNG)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(to_numpy(x.grad), 4 * to_numpy(x))
    with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time "
                                           r"\(or directly access saved tensors after they have "
                                           r"already been freed\)"):
        y.backward()


def test_gradients_accumulate_across_backward_calls():
    x = randn64(2, rng=RNG)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 5.0)
    x.grad = None
    (x * 4).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 4.0)


def test_gradient_is_summed_where_paths_meet():
    x = randn64(3, rng=RNG)
    y = x * 2
    (y * y + y.exp() + y).sum().backward()
    yn = 2 * to_numpy(x)
    np.testing.assert_allclose(to_numpy(x.grad), 2 * (2 * yn + np.exp(yn) + 1))


def _reduce_to(g, shape):
    """NumPy reference of summing a broadcast gradient back to ``shape``."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


@settings(max_examples=25, deadline=None)
@given(mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
def test_broadcast_gradients_are_summed_to_input_shapes(shapes):
    sa, sb = shapes.input_shapes
    a, b = randn64(*sa, rng=RNG), randn64(*sb, rng=RNG)
    (a * b + a - b).sum().backward()
    an, bn = to_numpy(a), to_numpy(b)
    out_shape = shapes.result_shape
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    np.testing.assert_allclose(to_numpy(a.grad), _reduce_to(np.broadcast_to(bn + 1, out_shape), sa))
    np.testing.assert_allclose(to_numpy(b.grad), _reduce_to(np.broadcast_to(an - 1, out_shape), sb))


def test_backward_with_inputs_restricts_accumulation():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    (a * b).sum().backward(inputs=[a])
    np.testing.assert_allclose(to_numpy(a.grad), to_numpy(b))
    assert b.grad is None
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be "
                                           "empty."):
        (a * b).sum().backward(inputs=[])


def test_backward_of_several_tensors_at_once():
    x = randn64(2, rng=RNG)
    ember.autograd.backward([(x * 2).sum(), x * 3], [None, t64([1.0, 2.0], False)])
    np.testing.assert_allclose(to_numpy(x.grad), [5.0, 8.0])


def test_create_graph_third_derivative_of_cube():
    x = t64([1.0, 2.0, -3.0])
    for y in (x ** 3, ember.pow(x, 3), x * x * x):
        (g1,) = ember.autograd.grad(y.sum(), x, create_graph=True)
        (g2,) = ember.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = ember.autograd.grad(g2.sum(), x)
        xn = to_numpy(x)
        np.testing.assert_allclose(to_numpy(g1), 3 * xn**2)
        np.testing.assert_allclose(to_numpy(g2), 6 * xn)
        np.testing.assert_allclose(to_numpy(g3), [6.0, 6.0, 6.0])
        assert g1.requires_grad and g2.requires_grad and not g3.requires_grad


def test_backward_with_create_graph_then_differentiate_grad():
    x = t64([0.5, -1.0])
    (x.exp() * x).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    xn = to_numpy(x)
    np.testing.assert_allclose(to_numpy(gg), np.exp(xn) * (xn + 2))


# -- autograd.grad -------------------------------------------------------------------------------

def test_grad_returns_without_accumulating():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    ga, gb = ember.autograd.grad((a * b).sum(), [a, b])
    np.testing.assert_allclose(to_numpy(ga), to_numpy(b))
    np.testing.assert_allclose(to_numpy(gb), to_numpy(a))
    assert a.grad is None and b.grad is None
    assert not ga.requires_grad


def test_grad_allow_unused_and_materialize_grads():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not "
                                           "have been used in the graph. Set allow_unused=True"):
        ember.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert gb is None
    np.testing.assert_allclose(to_numpy(ga), 2.0)
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
    np.testing.assert_array_equal(to_numpy(gb), [0.0, 0.0])
    assert gb.shape == b.shape and gb.dtype == b.dtype
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True"):
        ember.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True, allow_unused=False)


def test_grad_with_respect_to_non_leaf():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    h = a * b
    gh, ga = ember.autograd.grad((h * h).sum(), [h, a])
    np.testing.assert_allclose(to_numpy(gh), 2 * to_numpy(h))
    np.testing.assert_allclose(to_numpy(ga), 2 * to_numpy(h) * to_numpy(b))
    assert a.grad is None


def test_grad_errors():
    a = randn64(2, rng=RNG)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require "
                                           "grad"):
        ember.autograd.grad((a * 2).sum(), t64([1.0], requires_grad=False))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        ember.autograd.grad(t64([1.0], requires_grad=False).sum(), a)


def test_grad_outputs_for_non_scalar_and_of_other_dtype():
    x = randn64(3, rng=RNG)
    (g,) = ember.autograd.grad(x * 2, x, t64([1.0, 2.0, 3.0], requires_grad=False))
    np.testing.assert_allclose(to_numpy(g), [2.0, 4.0, 6.0])
    (g,) = ember.autograd.grad((x * 2).sum(), x, ember.tensor(1))  # an int grad_output
    assert g.dtype == ember.float64
    np.testing.assert_allclose(to_numpy(g), 2.0)


def test_grad_is_grads_batched():
    x = t64([1.0, 2.0, 3.0])
    (jac,) = ember.autograd.grad(x * x, x, t64(np.eye(3), False),
                                 is_grads_batched=True)
    np.testing.assert_allclose(to_numpy(jac), np.diag(2 * to_numpy(x)))


def test_float32_leaf_used_with_float64_gets_float32_grad():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    other = ember.tensor([3.0, 4.0], dtype=ember.float64)
    out = (w * other).sum()
    assert out.dtype == ember.float64
    out.backward()
    assert w.grad.dtype == ember.float32
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0])


# -- grad modes -----------------------------------------------------------------------------------

def test_no_grad_and_enable_grad_context_managers():
    x = randn64(2, rng=RNG)
    assert ember.is_grad_enabled()
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            z = x * 2
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(ValueError), ember.no_grad():
        raise ValueError
    assert ember.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context_manager():
    x = randn64(2, rng=RNG)
    try:
        ember.set_grad_enabled(False)
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    with ember.no_grad(), ember.set_grad_enabled(True):
        assert (x * 2).requires_grad
    assert ember.autograd.set_grad_enabled is ember.set_grad_enabled


def test_grad_mode_decorators():
    x = randn64(2, rng=RNG)

    @ember.no_grad()
    def double(t):
        return t * 2

    @ember.enable_grad()
    def triple(t):
        return t * 3

    @ember.set_grad_enabled(False)
    def quadruple(t):
        return t * 4

    assert ember.is_grad_enabled()  # building the decorator did not leave grad off
    assert not double(x).requires_grad
    assert double.__name__ == "double"
    with ember.no_grad():
        assert triple(x).requires_grad
    assert not quadruple(x).requires_grad
    assert ember.is_grad_enabled()


def test_grad_mode_decorator_on_generator_function():
    x = randn64(2, rng=RNG)

    @ember.no_grad()
    def gen(n):
        for i in range(n):
            received = yield (x * i).requires_grad, ember.is_grad_enabled()
            assert received is None
        return "done"

    assert list(gen(2)) == [(False, False), (False, False)]
    assert ember.is_grad_enabled()
    g = gen(1)
    next(g)
    with pytest.raises(StopIteration) as stop:
        next(g)
    assert stop.value.value == "done"
    assert ember.is_grad_enabled()


def test_inference_mode():
    x = randn64(2, rng=RNG)
    with ember.inference_mode():
        assert not ember.is_grad_enabled()
        assert ember.is_inference_mode_enabled()
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad

    @ember.inference_mode()
    def f(t):
        return t * 2

    assert not f(x).requires_grad


# -- tensor autograd attributes ---------------------------------------------------------------

def test_leaf_and_grad_fn_attributes():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG, requires_grad=False)
    c = a * b
    assert a.is_leaf and b.is_leaf and not c.is_leaf and (b * 2).is_leaf
    assert a.grad_fn is None and c.grad_fn.name() == "MulBackward0"
    s = c.sum()
    assert [(n.name(), nr) for n, nr in s.grad_fn.next_functions] == [("MulBackward0", 0)]
    edges = c.grad_fn.next_functions
    assert edges[0][0].name() == "AccumulateGrad" and edges[0][0].variable is a
    assert edges[1] == (None, 0)


@pytest.mark.parametrize("op, name", [
    (lambda a, b: a + b, "AddBackward0"), (lambda a, b: a - b, "SubBackward0"),
    (lambda a, b: a * b, "MulBackward0"), (lambda a, b: a / b, "DivBackward0"),
    (lambda a, b: a ** 2, "PowBackward0"), (lambda a, b: a.exp(), "ExpBackward0"),
    (lambda a, b: a.log(), "LogBackward0"), (lambda a, b: a.relu(), "ReluBackward0"),
    (lambda a, b: a.sum(), "SumBackward0"), (lambda a, b: a.mean(), "MeanBackward0"),
    (lambda a, b: a.reshape(2, 1), "ViewBackward0"),
    (lambda a, b: a.unsqueeze(0), "UnsqueezeBackward0"),
    (lambda a, b: a.expand(3, 2), "ExpandBackward0"),
    (lambda a, b: a.reshape(1, 2).transpose(0, 1), "TransposeBackward0"),
    (lambda a, b: a.reshape(1, 2).permute(1, 0), "PermuteBackward0"),
    (lambda a, b: a.reshape(1, 2).matmul(b.reshape(2, 1)), "MmBackward0"),
])
def test_grad_fn_names(op, name):
    assert op(randn64(2, rng=RNG), randn64(2, rng=RNG)).grad_fn.name() == name


def test_detach_and_detach_():
    x = randn64(3, rng=RNG)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_requires_grad_():
    c = t64([1.0, 2.0], requires_grad=False)
    assert c.requires_grad_() is c and c.requires_grad
    c.requires_grad_(False)
    assert not c.requires_grad
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables."):
        (randn64(2, rng=RNG) * 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.tensor([1, 2]).requires_grad_()


def test_retain_grad():
    a = randn64(2, rng=RNG)
    m = a * 3
    assert not m.retains_grad
    m.retain_grad()
    assert m.retains_grad
    (m * m).sum().backward()
    np.testing.assert_allclose(to_numpy(m.grad), 2 * to_numpy(m))
    np.testing.assert_allclose(to_numpy(a.grad), 6 * to_numpy(m))
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        t64([1.0], requires_grad=False).retain_grad()


def test_grad_of_non_leaf_warns():
    m = randn64(2, rng=RNG) * 2
    # on every access, as PyTorch (Python's warning filters decide what is shown)
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf "
                                         "Tensor is being accessed"):
        assert m.grad is None


def test_grad_assignment_checks():
    x = randn64(2, rng=RNG)
    # PyTorch 2.13's messages, checked in its order: dtype, device, size
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. Please "
            "ensure that the gradient and the tensor are the same size")):
        x.grad = randn64(3, rng=RNG, requires_grad=False)
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype "
                                           "'float' to a tensor with grad_dtype 'Double'"):
        x.grad = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype "):
        x.grad = ember.tensor([1.0, 2.0, 3.0])  # wrong size as well: the dtype is named
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient with device type 'meta' to a tensor with device "
            f"type '{x.device.type}'. Please ensure that the gradient and the tensor are on "
            "the same device")):
        x.grad = ember.empty(5, dtype=ember.float64, device="meta")
    assert x.grad is None  # every refused assignment left it as it was
    x.grad = t64([1.0, 2.0], False)
    (x * 1).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [2.0, 3.0])


# -- hooks ------------------------------------------------------------------------------------

def test_tensor_hooks_modify_gradients_on_leaves_and_non_leaves():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    seen = []
    m = a * b
    m.register_hook(lambda g: (seen.append(("m", to_numpy(g).tolist())), g * 10)[1])
    a.register_hook(lambda g: seen.append(("a", to_numpy(g).tolist())))
    m.sum().backward()
    assert seen[0] == ("m", [1.0, 1.0])
    assert seen[1][0] == "a"
    np.testing.assert_allclose(seen[1][1], 10 * to_numpy(b))
    np.testing.assert_allclose(to_numpy(a.grad), 10 * to_numpy(b))
    np.testing.assert_allclose(to_numpy(b.grad), 10 * to_numpy(a))


def test_leaf_hook_changes_what_is_accumulated():
    a = randn64(2, rng=RNG)
    a.register_hook(lambda g: g * 0 + 7)
    (a * 2).sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), 7.0)


def test_hook_handle_removes_the_hook():
    a = randn64(2, rng=RNG)
    handle = a.register_hook(lambda g: g * 100)
    handle.remove()
    (a * 2).sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), 2.0)
    a.grad = None
    with a.register_hook(lambda g: g * 100):
        pass  # the handle is a context manager that removes the hook on exit
    (a * 2).sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), 2.0)


def test_hooks_run_in_registration_order():
    a = randn64(2, rng=RNG)
    m = a * 1
    order = []
    m.register_hook(lambda g: order.append(1) or g + 1)
    m.register_hook(lambda g: order.append(2) or g * 2)
    m.sum().backward()
    assert order == [1, 2]
    np.testing.assert_allclose(to_numpy(a.grad), 4.0)  # (1 + 1) * 2


def test_hook_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        t64([1.0], requires_grad=False).register_hook(lambda g: g)


def test_node_prehook_and_hook():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    m = a * b
    seen = []
    m.grad_fn.register_prehook(lambda go: seen.append(len(go)) or (go[0] * 3,))
    m.grad_fn.register_hook(lambda gi, go: seen.append(to_numpy(go[0]).tolist()) or (gi[0] * 0,
                                                                                     gi[1]))
    m.sum().backward()
    assert seen == [1, [3.0, 3.0]]
    np.testing.assert_allclose(to_numpy(a.grad), 0.0)
    np.testing.assert_allclose(to_numpy(b.grad), 3 * to_numpy(a))


def test_post_accumulate_grad_hook():
    a = randn64(2, rng=RNG)
    seen = []
    handle = a.register_post_accumulate_grad_hook(lambda t: seen.append(to_numpy(t.grad).tolist()))
    (a * 2).sum().backward()
    (a * 3).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]
    handle.remove()
    (a * 3).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (a * 2).register_post_accumulate_grad_hook(lambda t: None)


# -- version counter and in-place checks -----------------------------------------------------------

def test_version_counter_counts_in_place_ops():
    x = randn64(2, rng=RNG)
    y = x * 1
    assert y._version == 0
    y.mul_(2)
    y.add_(1)
    assert y._version == 2
    v = y.reshape(2)  # a view shares the counter
    v.add_(1)
    assert y._version == 3


def test_in_place_on_saved_output_is_detected():
    x = randn64(3, rng=RNG)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation "
                                           "has been modified by an inplace operation: .* is at "
                                           "version 1; expected version 0 instead. Hint: enable "
                                           "anomaly detection"):
        y.sum().backward()


def test_in_place_on_saved_input_is_detected():
    x = randn64(3, rng=RNG)
    h = x * 1
    y = h * h
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_on_leaf_requiring_grad():
    x = randn64(3, rng=RNG)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        x.add_(1)
    with ember.no_grad():
        x.add_(1)  # allowed under no_grad (optimizer updates)
    assert x._version == 1 and x.requires_grad


def test_in_place_on_non_leaf_keeps_gradient_correct():
    x = randn64(3, rng=RNG)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6.0)


# -- anomaly mode ---------------------------------------------------------------------------------

def test_anomaly_mode_flags():
    assert not ember.autograd.is_anomaly_enabled()
    with ember.autograd.set_detect_anomaly(True):
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled()
    finally:
        ember.autograd.set_detect_anomaly(False)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will "
                                         "increase the runtime and should only be enabled for "
                                         "debugging."):
        with ember.autograd.detect_anomaly():
            assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()


def test_anomaly_mode_names_the_op_that_produced_nan_log():
    x = t64([0.0, 1.0])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with ember.autograd.detect_anomaly():
            y = (x.log() * 0).sum()  # log'(0) * 0 = inf * 0 = nan
            with pytest.raises(RuntimeError, match="Function 'LogBackward0' returned nan values "
                                                   "in its 0th output."):
                y.backward()


def test_anomaly_mode_names_the_op_that_produced_nan_div():
    x = t64([0.0, 1.0])
    with pytest.warns(UserWarning) as record, np.errstate(all="ignore"):
        with ember.autograd.detect_anomaly():
            z = (x / x).sum()  # d(a/b)/db at 0/0 is nan
            with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan values "
                                                   "in its 1th output."):
                z.backward()
    messages = [str(w.message) for w in record]
    trace = [m for m in messages if m.startswith("Error detected in DivBackward0")]
    assert trace and "Traceback of forward call that caused the error" in trace[0]
    assert "z = (x / x).sum()" in trace[0]  # the forward line that built the node


def test_anomaly_mode_as_decorator_and_without_it_no_error():
    x = t64([0.0, 1.0])

    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        detect = ember.autograd.detect_anomaly()

    @detect
    def run():
        assert ember.autograd.is_anomaly_enabled()
        (x.log() * 0).sum().backward()

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="returned nan values"):
            run()
        assert not ember.autograd.is_anomaly_enabled()
        x.grad = None
        (x.log() * 0).sum().backward()  # off: NaN gradients pass silently
    assert np.isnan(to_numpy(x.grad)[0])


# -- gradcheck ------------------------------------------------------------------------------------

def test_gradcheck_passes_on_composite_program():
    x, w = randn64(2, 3, rng=RNG), randn64(3, 4, rng=RNG)
    assert gradcheck(lambda a, b: (a.matmul(b).exp() / 3).relu().mean(), (x, w))
    assert gradgradcheck(lambda a, b: a.matmul(b).exp().sum(), (x, w))


class _WrongGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_gradcheck_reports_mismatch_like_pytorch():
    x = randn64(3, rng=RNG)
    with pytest.raises(GradcheckError, match=r"(?s)Jacobian mismatch for output 0 with respect "
                                             r"to input 0,\nnumerical:tensor\(.*\nanalytical:"
                                             r"tensor\("):
        gradcheck(_WrongGrad.apply, (x,))
    assert gradcheck(_WrongGrad.apply, (x,), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)


def test_gradcheck_indices_of_output_and_input_in_message():
    a, b = randn64(2, rng=RNG), randn64(2, rng=RNG)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 1 with respect to "
                                             "input 1"):
        gradcheck(lambda x, y: (x * y, x + _WrongGrad.apply(y)), (a, b))


def test_gradcheck_tuple_and_non_float_outputs():
    x = randn64(3, rng=RNG)
    assert gradcheck(lambda a: (a.exp(), (a > 0).long(), a * 2), (x,))
    # as in PyTorch, every output is asked whether it requires grad: a non-tensor raises
    with pytest.raises(AttributeError, match="'str' object has no attribute 'requires_grad'"):
        gradcheck(lambda a: (a.exp(), "label"), (x,))


def test_gradcheck_non_differentiable_inputs_and_outputs():
    x, c = randn64(3, rng=RNG), randn64(3, rng=RNG, requires_grad=False)
    assert gradcheck(lambda a, k, b: a * b * k, (x, 2.0, c))
    # no output requires grad: the numerical gradient must be zero
    assert gradcheck(lambda a: c * 2, (x,))
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be "
                                             "zero"):
        gradcheck(lambda a: (a * 2).detach(), (x,))


def test_gradcheck_input_checks():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to "
                                         "require gradient, but none of them have "
                                         "requires_grad=True."):
        gradcheck(lambda a: a * 2, (randn64(2, rng=RNG, requires_grad=False),))
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                         "precision floating point"):
        gradcheck(lambda a: a * 2, (ember.tensor([1.0, 2.0], requires_grad=True),),
                  atol=1e-2, rtol=1e-2, eps=1e-3)
    expanded = t64([1.0, 2.0], requires_grad=False).expand(3, 2).requires_grad_()
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda a: a * 2, (expanded,))


def test_gradcheck_and_gradgradcheck_take_empty_outputs_and_inputs():
    # as PyTorch's: an empty result (its zero-size grad_outputs may have zero strides), an
    # empty input (a Jacobian with no rows), and a function that still checks elsewhere
    x = randn64(4, 5, rng=RNG)
    empty = ember.zeros((0, 3), dtype=ember.float64).requires_grad_()
    assert gradcheck(lambda a: a.narrow(1, 2, 0), (x,))
    assert gradgradcheck(lambda a: a.narrow(1, 2, 0), (x,))
    assert gradcheck(lambda a, e: (a * a, e * 2), (x, empty))
    assert gradgradcheck(lambda a, e: (a * a, (e * e).sum(0)), (x, empty))
    assert gradgradcheck(lambda e: e * e, (empty,),
                         grad_outputs=(ember.zeros(3, 0, dtype=ember.float64).t(),))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(lambda a, e: (_Wrong.apply(a), e * 2), (x, empty))


class _Wrong(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_gradcheck_non_contiguous_input():
    x = randn64(3, 2, rng=RNG, requires_grad=False).transpose(0, 1).requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(lambda a: (a * a).exp(), (x,))


class _Flaky(Function):
    calls = [0]

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        _Flaky.calls[0] += 1
        return g * (2 + 1e-9 * _Flaky.calls[0])


def test_gradcheck_nondet_tol():
    x = randn64(2, rng=RNG)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(_Flaky.apply, (x,), check_undefined_grad=False)
    assert gradcheck(_Flaky.apply, (x,), nondet_tol=1e-6, check_undefined_grad=False)


class _NotMultiplied(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 0 + 2  # ignores grad_output


def test_gradcheck_backward_not_multiplied_by_grad_output():
    with pytest.raises(GradcheckError, match="(Jacobian mismatch|backward not multiplied by "
                                             "grad_output)"):
        gradcheck(_NotMultiplied.apply, (randn64(1, rng=RNG),))
    # a 1-element output has a correct Jacobian; only the zero grad_output check catches it
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(lambda a: _NotMultiplied.apply(a.sum()), (randn64(1, rng=RNG),))


class _ZeroShortcut(Function):
    """Two outputs, undefined gradients kept undefined (None); the backward has a shortcut
    for a zero second gradient that mishandles an undefined first one."""

    on_undefined = "raise"

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        if g2 is not None and not g2.numpy().any():
            if g1 is not None:
                return g1 * 2
            if _ZeroShortcut.on_undefined == "raise":
                raise RuntimeError("the first gradient is undefined")
            return ember.ones_like(g2)
        gx = None
        for g, k in ((g1, 2), (g2, 3)):
            if g is not None:
                gx = g * k if gx is None else gx + g * k
        return gx


@pytest.mark.parametrize("on_undefined, message", [
    ("raise", "Expected backward function to handle undefined output grads."),
    ("ones", "Expected all input grads to be undefined or zero when all output grads are "
             "undefined or zero."),
])
def test_gradcheck_check_undefined_grad(on_undefined, message, monkeypatch):
    monkeypatch.setattr(_ZeroShortcut, "on_undefined", on_undefined)
    x = randn64(2, rng=RNG)
    with pytest.warns(UserWarning, match="Backwards compatibility"):
        with pytest.raises(GradcheckError, match=message):
            gradcheck(_ZeroShortcut.apply, (x,))
    assert gradcheck(_ZeroShortcut.apply, (x,), check_undefined_grad=False)


def test_gradcheck_accepts_pytorch_keywords():
    x = randn64(2, rng=RNG)
    assert gradcheck(lambda a: a.exp(), (x,), fast_mode=True, check_batched_grad=True,
                     check_grad_dtypes=True, masked=False)
    assert gradcheck(lambda a: a.exp(), x)  # a single tensor as inputs
    with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True"):
        gradcheck(lambda a: a.exp(), (x,), check_backward_ad=False)


def test_gradcheck_forward_mode():
    """check_forward_ad builds the Jacobian with forward AD (the tangents of one-hot JVPs);
    check_backward_ad=False checks a Function that has only jvp (pytorch/tutorials'
    forward_ad_usage)."""

    scale = [1]

    class ExpJvp(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.r = x.exp()
            return ctx.r

        @staticmethod
        def jvp(ctx, g):
            return g * ctx.r * scale[0]

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(ExpJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                     check_undefined_grad=False, check_batched_grad=False)
    scale[0] = 2  # a wrong tangent: forward mode catches it
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch "
                                             "for output 0 with respect to input 0"):
        gradcheck(ExpJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    y = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b).sin(), (x, y), check_forward_ad=True)
    z = ember.randn(3, dtype=ember.complex128, requires_grad=True)
    assert gradcheck(lambda a: (a * a).exp(), (z,), check_forward_ad=True)


def test_gradgradcheck_detects_wrong_double_backward():
    class FirstOrderOnly(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() * x.detach()  # not differentiable with respect to x

    x = randn64(3, rng=RNG)
    assert gradcheck(FirstOrderOnly.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(FirstOrderOnly.apply, (x,))
    assert gradgradcheck(FirstOrderOnly.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs():
    x = randn64(2, 2, rng=RNG)
    go = randn64(2, 2, rng=RNG)
    assert gradgradcheck(lambda a: (a * a).exp(), (x,), (go,))
    assert gradgradcheck(lambda a: (a * a).exp(), (x,), gen_non_contig_grad_outputs=True)


# -- devices -------------------------------------------------------------------------------------

def test_backward_on_test_device(testdev):
    x = randn64(2, 3, rng=RNG).detach().to(testdev).requires_grad_()
    w = randn64(3, 2, rng=RNG).detach().to(testdev).requires_grad_()
    loss = (x.matmul(w).exp() * 2).mean()
    loss.backward()
    assert x.grad.device == testdev and w.grad.device == testdev
    xc, wc = to_numpy(x.cpu()), to_numpy(w.cpu())
    e = np.exp(xc @ wc) * 2 / 4
    np.testing.assert_allclose(to_numpy(x.grad.cpu()), e @ wc.T)
    (g,) = ember.autograd.grad((x * x).sum(), x)
    assert g.device == testdev


def test_mixing_devices_raises(testdev):
    x = randn64(2, rng=RNG).detach().to(testdev).requires_grad_()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x * randn64(2, rng=RNG)
    y = x * 2
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device"):
        y.backward(t64([1.0, 1.0], False))


def test_gradcheck_on_test_device(testdev):
    x = randn64(2, 2, rng=RNG).detach().to(testdev).requires_grad_()
    assert gradcheck(lambda a: (a * a).exp().sum(), (x,))


@pytest.mark.gpu
def test_backward_function_and_gradcheck_on_cuda():
    x = randn64(2, 3, rng=RNG).detach().cuda().requires_grad_()
    w = randn64(3, 2, rng=RNG).detach().cuda().requires_grad_()
    (x.matmul(w).exp() * 2).mean().backward()
    assert x.grad.device.type == "cuda" and w.grad.device.type == "cuda"
    xc, wc = to_numpy(x.cpu()), to_numpy(w.cpu())
    np.testing.assert_allclose(to_numpy(x.grad.cpu()), (np.exp(xc @ wc) * 2 / 4) @ wc.T)
    assert gradcheck(lambda a, b: (a.matmul(b) * a.sum()).exp(), (x, w))
    assert gradgradcheck(lambda a: (a * a).exp(), (x,))


# -- engine behaviour that PyTorch has and ember's engine/graph lacks (see the report) -------------

def test_backward_twice_through_graph_without_saved_tensors():
    # PyTorch: only saved tensors are freed; a node that saved nothing can run again.
    x = randn64(3, rng=RNG)
    y = x + 1
    y.sum().backward()
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)


def test_modified_tensor_message_names_the_tensor_like_pytorch():
    # PyTorch 2.13's words, with ember for torch
    hint = (" Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with ember.autograd.set_detect_anomaly(True, check_nan=False).")
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    assert str(err.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [ember.FloatTensor [2]], which is output 0 of Exp, is at version 1; "
        "expected version 0 instead." + hint)
    w = x.exp() * x  # saves the leaf x
    with ember.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError) as err:
        w.sum().backward()
    assert str(err.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [ember.FloatTensor [2]] is at version 1; expected version 0 instead." + hint)


def test_node_metadata_is_per_node():
    a = randn64(2, rng=RNG) * 2
    b = randn64(2, rng=RNG) * 3
    a.grad_fn.metadata["tag"] = "a"
    assert b.grad_fn.metadata == {}


def test_anomaly_mode_check_nan_false_does_not_raise():
    # needs the engine to read the nan-check flag that set_detect_anomaly keeps in
    # graph._ANOMALY[1] (it checks NaN whenever _ANOMALY[0] is on)
    x = t64([0.0, 1.0])
    with ember.autograd.set_detect_anomaly(True, check_nan=False), np.errstate(all="ignore"):
        assert not ember.autograd.is_anomaly_check_nan_enabled()
        (x / x).sum().backward()
    assert np.isnan(to_numpy(x.grad)[0])
