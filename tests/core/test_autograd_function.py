"""Custom autograd Functions: ``ember.autograd.Function`` as ``torch.autograd.Function``."""

import gc
import weakref

import numpy as np
import pytest
from testutils import randn64, t64, to_numpy

import ember
from ember.autograd import Function, FunctionCtx, gradcheck, gradgradcheck, once_differentiable

RNG = np.random.default_rng(0)


# -- Functions used by several tests -------------------------------------------------------

class Exp(Function):
    """Saves its output."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class Cube(Function):
    """Saves its input; the backward is written with ember ops (double backward works)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class ScaleShift(Function):
    """Tensor and non-tensor inputs; a ctx attribute; needs_input_grad."""

    @staticmethod
    def forward(ctx, x, scale, shift):
        ctx.scale = scale
        ctx.save_for_backward(x, shift)
        return x * scale + shift

    @staticmethod
    def backward(ctx, grad):
        gx = grad * ctx.scale if ctx.needs_input_grad[0] else None
        gs = grad if ctx.needs_input_grad[2] else None
        return gx, None, gs


class SplitSign(Function):
    """Two outputs: the positive and the negative part."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        pos = x.relu()
        return pos, x - pos

    @staticmethod
    def backward(ctx, g_pos, g_neg):
        (x,) = ctx.saved_tensors
        mask = (x > 0).to(x.dtype)
        return g_pos * mask + g_neg * (1 - mask)


class NewStyleMul(Function):
    """``forward`` without ctx plus ``setup_context``."""

    @staticmethod
    def forward(x, y, alpha=2.0):
        return x * y * alpha

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, alpha = inputs
        ctx.alpha = alpha
        ctx.save_for_backward(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * ctx.alpha, grad * x * ctx.alpha, None


# -- forward/backward basics ----------------------------------------------------------------

def test_apply_forward_value_and_gradient():
    x = randn64(3, 4, rng=RNG)
    y = Exp.apply(x)
    np.testing.assert_allclose(to_numpy(y), np.exp(to_numpy(x)))
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), np.exp(to_numpy(x)))


@pytest.mark.parametrize("fn", [Exp.apply, Cube.apply, lambda x: SplitSign.apply(x)])
def test_gradcheck_and_gradgradcheck(fn):
    x = randn64(2, 3, rng=RNG)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_grad_fn_is_ctx_named_after_the_function():
    x = randn64(3, rng=RNG)
    y = ScaleShift.apply(x, 2.0, randn64(3, rng=RNG, requires_grad=False))
    node = y.grad_fn
    assert node.name() == "ScaleShiftBackward"
    assert type(node).__name__ == "ScaleShiftBackward"
    assert isinstance(node, ember.autograd.graph.Node)
    assert isinstance(node, FunctionCtx)
    assert node.scale == 2.0  # attributes set on ctx in forward are on grad_fn
    assert repr(node).startswith("<ember.autograd.function.ScaleShiftBackward object at 0x")
    assert "grad_fn=<ScaleShiftBackward>" in repr(y)
    assert ScaleShift._backward_cls is type(node)
    assert node._forward_cls is ScaleShift


def test_next_functions_one_edge_per_tensor_input():
    x = randn64(3, rng=RNG)
    shift = randn64(3, rng=RNG, requires_grad=False)
    y = ScaleShift.apply(x * 2, 3.0, shift)
    names = [(n.name() if n is not None else None, nr) for n, nr in y.grad_fn.next_functions]
    assert names == [("MulBackward0", 0), (None, 0)]


def test_forward_runs_under_no_grad_and_outputs_still_require_grad():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["enabled"] = ember.is_grad_enabled()
            inner = x * 2
            seen["inner_requires_grad"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, grad):
            seen["backward_enabled"] = ember.is_grad_enabled()
            return grad * 2

    x = randn64(3, rng=RNG)
    y = Probe.apply(x)
    assert seen == {"enabled": False, "inner_requires_grad": False}
    assert y.requires_grad and y.grad_fn.name() == "ProbeBackward"
    y.sum().backward()
    assert seen["backward_enabled"] is False
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)


def test_no_graph_when_no_input_requires_grad_or_grad_mode_off():
    x = randn64(3, rng=RNG, requires_grad=False)
    y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    with ember.no_grad():
        y = Exp.apply(randn64(3, rng=RNG))
    assert not y.requires_grad and y.grad_fn is None


def test_needs_input_grad():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a * b * k

        @staticmethod
        def backward(ctx, grad):
            seen.append(ctx.needs_input_grad)
            return None, grad, None

    a, b = randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG)
    Probe.apply(a, b, 3).sum().backward()
    assert seen == [(False, True, False), (False, True, False)]
    assert a.grad is None
    np.testing.assert_allclose(to_numpy(b.grad), 1.0)


def test_scale_shift_gradients_and_non_tensor_argument():
    x, shift = randn64(4, rng=RNG), randn64(4, rng=RNG)
    ScaleShift.apply(x, 3.0, shift).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 3.0)
    np.testing.assert_allclose(to_numpy(shift.grad), 1.0)
    assert gradcheck(lambda a, b: ScaleShift.apply(a, 3.0, b),
                     (randn64(4, rng=RNG), randn64(4, rng=RNG)))


def test_keyword_arguments_bind_to_forward_parameters():
    class Scaled(Function):
        @staticmethod
        def forward(ctx, x, scale=1.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale, None

    x = randn64(3, rng=RNG)
    Scaled.apply(x, scale=4.0).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 4.0)


def test_new_style_setup_context():
    x, y = randn64(3, rng=RNG), randn64(3, rng=RNG)
    out = NewStyleMul.apply(x, y)  # default alpha is bound and handed to setup_context
    np.testing.assert_allclose(to_numpy(out), 2 * to_numpy(x) * to_numpy(y))
    assert out.grad_fn.alpha == 2.0
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2 * to_numpy(y))
    np.testing.assert_allclose(to_numpy(y.grad), 2 * to_numpy(x))
    assert gradcheck(lambda a, b: NewStyleMul.apply(a, b, alpha=0.5),
                     (randn64(2, rng=RNG), randn64(2, rng=RNG)))


def test_double_backward_through_function():
    x = t64([1.0, 2.0, -3.0])
    y = Cube.apply(x)
    (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(to_numpy(g), 3 * to_numpy(x) ** 2)
    assert g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(to_numpy(gg), 6 * to_numpy(x))


def test_function_inside_larger_graph_and_reused():
    x = randn64(2, 3, rng=RNG)
    w = randn64(3, 2, rng=RNG)
    h = Exp.apply(x.matmul(w))
    loss = (Cube.apply(h) + h).mean()
    loss.backward()
    xn, wn = to_numpy(x), to_numpy(w)
    e = np.exp(xn @ wn)
    dh = (3 * e**2 + 1) / e.size * e
    np.testing.assert_allclose(to_numpy(x.grad), dh @ wn.T, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(w.grad), xn.T @ dh, rtol=1e-10)


# -- multiple outputs, non-tensor and non-differentiable outputs -------------------------------

def test_multiple_outputs_output_nr_and_grads():
    x = t64([-1.0, 2.0, -3.0, 4.0])
    pos, neg = SplitSign.apply(x)
    assert pos.grad_fn is neg.grad_fn
    assert (pos.output_nr, neg.output_nr) == (0, 1)
    (pos * 2 + neg * 5).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [5.0, 2.0, 5.0, 2.0])


def test_unused_output_gets_materialized_zeros():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((to_numpy(g1).tolist(), None if g2 is None else to_numpy(g2).tolist()))
            return g1 + 2 * g2

    x = randn64(2, rng=RNG)
    Two.apply(x)[0].sum().backward()
    assert seen == [([1.0, 1.0], [0.0, 0.0])]
    np.testing.assert_allclose(to_numpy(x.grad), 1.0)


def test_set_materialize_grads_false_passes_none():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return g1 if g2 is None else g1 + 2 * g2

    x = randn64(2, rng=RNG)
    Two.apply(x)[0].sum().backward()
    assert seen == [None]
    np.testing.assert_allclose(to_numpy(x.grad), 1.0)


def test_non_tensor_and_integer_outputs():
    grads = []

    class Mixed(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3, "tag", (x > 0).long()

        @staticmethod
        def backward(ctx, g, g_tag, g_idx):
            grads.append((g_tag, g_idx.dtype, to_numpy(g_idx).tolist()))
            return g * 3

    x = t64([1.0, -2.0])
    out, tag, idx = Mixed.apply(x)
    assert tag == "tag"
    assert out.output_nr == 0
    assert not idx.requires_grad and idx.grad_fn is None and idx.dtype == ember.int64
    out.sum().backward()
    assert grads == [(None, ember.int64, [0, 0])]  # integer outputs get integer zeros
    np.testing.assert_allclose(to_numpy(x.grad), 3.0)


def test_single_element_tuple_output_stays_a_tuple():
    class Tup(Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2,)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = randn64(3, rng=RNG)
    out = Tup.apply(x)
    assert isinstance(out, tuple) and len(out) == 1
    out[0].sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)


def test_mark_non_differentiable():
    seen = []

    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            seen.append(to_numpy(g_idx).tolist())
            return g * 2

    x = t64([1.0, -1.0])
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad and idx.grad_fn is None
    (y.sum() + idx.sum()).backward()
    assert seen == [[0.0, 0.0]]
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        idx.sum().backward()


def test_input_returned_as_is_is_a_new_tensor_sharing_memory():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = randn64(3, rng=RNG)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and x.grad_fn is None
    assert y._base is x
    assert y.grad_fn.name() == "IdentityBackward"
    assert y.data_ptr() == x.data_ptr()
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)
    with pytest.raises(RuntimeError, match="Output 0 of Identity is a view and is being "
                                           "modified inplace. This view was created inside a "
                                           "custom Function"):
        Identity.apply(x).add_(1)  # PyTorch forbids in-place on such an alias too


def test_in_place_on_a_view_made_inside_forward_raises():
    class AsMatrix(Function):
        @staticmethod
        def forward(ctx, x):
            return x.reshape(2, 2)

        @staticmethod
        def backward(ctx, g):
            return g.reshape(4) * 2

    x = randn64(4, rng=RNG)
    y = AsMatrix.apply(x * 1)
    assert y._base is not None
    with pytest.raises(RuntimeError, match="Output 0 of AsMatrix is a view and is being "
                                           "modified inplace. This view was created inside a "
                                           "custom Function"):
        y.add_(1)
    z = AsMatrix.apply(x)
    z.sum().backward()  # the custom backward, not the view's, gives the gradient
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)


# -- mark_dirty ---------------------------------------------------------------------------------

class AddOneInplace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_mark_dirty_rebases_the_input_history():
    leaf = randn64(3, rng=RNG)
    a = leaf * 1
    before = a._version
    out = AddOneInplace.apply(a)
    assert out is a
    assert a.grad_fn.name() == "AddOneInplaceBackward"
    assert a._version == before + 2  # add_ and mark_dirty both bump, as in PyTorch
    np.testing.assert_allclose(to_numpy(a), to_numpy(leaf) + 1)
    a.sum().backward()
    np.testing.assert_allclose(to_numpy(leaf.grad), 3.0)


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in "
                                           "an in-place operation."):
        AddOneInplace.apply(randn64(3, rng=RNG))


def test_mark_dirty_input_not_returned_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="Some elements marked as dirty during the forward "
                                           "method were not returned as output"):
        Bad.apply(randn64(3, rng=RNG) * 1)


def test_mark_dirty_invalidates_earlier_saves_of_the_input():
    leaf = randn64(3, rng=RNG)
    a = leaf * 1
    b = a * a  # saves a
    AddOneInplace.apply(a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


# -- saved tensors --------------------------------------------------------------------------

def test_saved_tensor_modified_in_place_raises():
    x = randn64(3, rng=RNG)
    h = x * 1
    y = Cube.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient "
                                           r"computation has been modified by an inplace "
                                           r"operation: .* is at version 1; expected version 0 "
                                           r"instead"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.grad_fn.saved_tensors  # noqa: B018 - the property raises


def test_saved_tensors_are_freed_after_backward():
    y = Cube.apply(randn64(3, rng=RNG))
    node = y.grad_fn
    assert len(node.saved_tensors) == 1
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        node.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_retain_graph_keeps_saved_tensors():
    x = randn64(3, rng=RNG)
    y = Cube.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(x) ** 2)


def test_save_for_backward_accepts_none_and_rejects_other_objects():
    class SaveNone(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, nothing = ctx.saved_tensors
            assert nothing is None
            return g * 2

    x = randn64(2, rng=RNG)
    SaveNone.apply(x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)

    class SaveInt(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        SaveInt.apply(randn64(2, rng=RNG))


def test_graph_is_collected_after_backward():
    x = randn64(3, rng=RNG)
    y = Exp.apply(x)  # saves its own output: a reference cycle the release breaks
    ref = weakref.ref(y.grad_fn)
    y.sum().backward()
    del y
    gc.collect()
    assert ref() is None


# -- errors from backward -------------------------------------------------------------------

def _fn(backward):
    def forward(ctx, *args):
        return args[0] * 1

    return type("Custom", (Function,), {"forward": staticmethod(forward),
                                        "backward": staticmethod(backward)})


def test_too_few_gradients():
    Few = _fn(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match=r"function CustomBackward returned an incorrect "
                                           r"number of gradients \(expected 2, got 1\)"):
        Few.apply(randn64(2, rng=RNG), randn64(2, rng=RNG)).sum().backward()


def test_too_many_gradients():
    Many = _fn(lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients "
                                           r"\(expected 1, got 2\)"):
        Many.apply(randn64(2, rng=RNG)).sum().backward()


def test_extra_none_gradients_are_allowed():
    x = randn64(2, rng=RNG)
    _fn(lambda ctx, g: (g, None, None)).apply(x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 1.0)


def test_gradient_for_non_tensor_input_raises():
    Bad = _fn(lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position "
                                           "2, but the corresponding forward input was not a "
                                           "Variable"):
        Bad.apply(randn64(2, rng=RNG), 5).sum().backward()


def test_gradient_of_wrong_shape_raises_and_broadcast_shape_is_reduced():
    Bad = _fn(lambda ctx, g: g.reshape(2, 1))
    with pytest.raises(RuntimeError, match=r"Function CustomBackward returned an invalid "
                                           r"gradient at index 0 - got \[2, 1\] but expected "
                                           r"shape compatible with \[2\]"):
        Bad.apply(randn64(2, rng=RNG)).sum().backward()
    with pytest.raises(RuntimeError, match=r"got \[3\] but expected shape compatible with "
                                           r"\[2\]"):
        _fn(lambda ctx, g: ember.ones(3)).apply(randn64(2, rng=RNG)).sum().backward()
    x = randn64(2, rng=RNG)
    _fn(lambda ctx, g: g.expand(3, 2)).apply(x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 3.0)


def test_gradient_that_is_not_a_tensor_raises():
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got float\)"):
        _fn(lambda ctx, g: 1.0).apply(randn64(2, rng=RNG)).sum().backward()


def test_gradient_is_cast_to_the_input_dtype():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    _fn(lambda ctx, g: g.double()).apply(x).sum().backward()
    assert x.grad.dtype == ember.float32


def test_missing_forward_or_backward():
    class NoForward(Function):
        pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function for "
                                                  "custom autograd.Function."):
        NoForward.apply(randn64(2, rng=RNG))

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    y = NoBackward.apply(randn64(2, rng=RNG))
    with pytest.raises(NotImplementedError, match="You must implement either the backward or "
                                                  "vjp method"):
        y.sum().backward()


def test_vjp_is_an_alias_of_backward():
    class ViaVjp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = randn64(2, rng=RNG)
    ViaVjp.apply(x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 2.0)


def test_legacy_instantiation():
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        fn = Exp()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward "
                                           "method is deprecated"):
        fn(randn64(2, rng=RNG))


# -- once_differentiable ----------------------------------------------------------------------

class CubeOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        assert not ember.is_grad_enabled()
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


def test_once_differentiable_first_order():
    x = randn64(3, rng=RNG)
    CubeOnce.apply(x).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 3 * to_numpy(x) ** 2)
    assert gradcheck(CubeOnce.apply, (randn64(3, rng=RNG),))


def test_once_differentiable_refuses_double_backward():
    x = randn64(3, rng=RNG)
    gout = randn64(3, rng=RNG)  # requires grad: the result gets an erroring grad_fn
    (g,) = ember.autograd.grad(CubeOnce.apply(x), x, gout, create_graph=True)
    assert g.grad_fn.name() == "DelayedError"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()
    # with a constant grad_output the result simply does not require grad (as in PyTorch)
    (g,) = ember.autograd.grad(CubeOnce.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


# -- hooks and anomaly mode on Function nodes ----------------------------------------------------

def test_tensor_hook_on_second_output():
    x = t64([1.0, -1.0])
    pos, neg = SplitSign.apply(x)
    neg.register_hook(lambda g: g * 10)
    (pos + neg).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [1.0, 10.0])


def test_node_hooks_on_function_node():
    x = randn64(2, rng=RNG)
    y = Cube.apply(x)
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append("pre") or (go[0] * 2,))
    y.grad_fn.register_hook(lambda gi, go: seen.append("post"))
    y.sum().backward()
    assert seen == ["pre", "post"]
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(x) ** 2)


def test_anomaly_mode_names_the_function_that_returned_nan():
    class NanGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = randn64(2, rng=RNG)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = ember.autograd.detect_anomaly()
    with ctx:
        y = NanGrad.apply(x)
        with pytest.raises(RuntimeError, match="Function 'NanGradBackward' returned nan values "
                                               "in its 0th output."):
            with pytest.warns(UserWarning, match="Error detected in NanGradBackward"):
                y.sum().backward()


# -- devices ----------------------------------------------------------------------------------

def test_function_on_test_device_keeps_device(testdev):
    x = randn64(3, rng=RNG).detach().to(testdev).requires_grad_()
    y = Cube.apply(x)
    assert y.device == testdev
    y.sum().backward()
    assert x.grad.device == testdev
    np.testing.assert_allclose(to_numpy(x.grad.cpu()), 3 * to_numpy(x.cpu()) ** 2)


def test_gradient_on_wrong_device_raises(testdev):
    Bad = _fn(lambda ctx, g: g.cpu())
    x = randn64(2, rng=RNG).detach().to(testdev).requires_grad_()
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - expected "
                                           "device testdev:0 but got cpu"):
        Bad.apply(x).sum().backward()


def test_input_returned_as_is_and_marked_non_differentiable():
    # PyTorch: the output is a new tensor over the input's memory that requires no grad
    class Passthrough(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.ones(2, requires_grad=True)
    y = Passthrough.apply(x)
    assert y is not x and not y.requires_grad and y.grad_fn is None
    y.add_(1)  # shares x's memory
    assert x.tolist() == [2.0, 2.0]
