"""``ember.autograd.graph``'s edges and hooks: ``GradientEdge``/``get_gradient_edge`` (as
inputs and outputs of ``autograd.grad`` and ``backward``), ``increment_version``,
``register_multi_grad_hook`` (both modes, ``inputs=`` restrictions, removal),
``allow_mutation_on_saved_tensors`` and ``autograd.function.FunctionMeta``."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import to_numpy

import ember
from ember.autograd import graph as G
from ember.autograd.function import FunctionMeta


def _chain():
    a = ember.tensor([0.3, -1.2, 2.0], dtype=ember.float64, requires_grad=True)
    b = a * 2
    return a, b, b.sin().sum()


# -- GradientEdge -------------------------------------------------------------------------------

def test_grad_with_respect_to_an_edge_equals_grad_with_respect_to_the_tensor():
    a, b, c = _chain()
    ga, gb = ember.autograd.grad(c, (a, G.get_gradient_edge(b)))
    bn = to_numpy(b.detach())
    np.testing.assert_allclose(to_numpy(gb), np.cos(bn))
    np.testing.assert_allclose(to_numpy(ga), 2 * np.cos(bn))


def test_edge_as_output_needs_its_gradient():
    a, b, c = _chain()
    edge = G.get_gradient_edge(c)
    (g,) = ember.autograd.grad(edge, a, grad_outputs=ember.tensor(1.0, dtype=ember.float64),
                               retain_graph=True)
    np.testing.assert_allclose(to_numpy(g), 2 * np.cos(to_numpy(b.detach())))
    with pytest.raises(RuntimeError, match="grad_outputs\\[0\\] must be given"):
        ember.autograd.grad(edge, a)


def test_backward_takes_edges_as_roots_and_inputs():
    a = ember.ones(3, requires_grad=True)
    (a * 3).sum().backward(inputs=[G.get_gradient_edge(a)])
    np.testing.assert_array_equal(to_numpy(a.grad), [3, 3, 3])
    root = (a * 3).sum()
    ember.autograd.backward(G.get_gradient_edge(root), grad_tensors=ember.tensor(1.0))
    np.testing.assert_array_equal(to_numpy(a.grad), [6, 6, 6])


def test_edge_errors():
    with pytest.raises(RuntimeError, match="does not require gradients"):
        G.get_gradient_edge(ember.ones(2))
    x = ember.ones(2, requires_grad=True)
    y, z = x * 3, (x * 4).sum()
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used"):
        ember.autograd.grad(z, G.get_gradient_edge(y), allow_unused=True,
                            materialize_grads=True)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        ember.autograd.grad(z, G.get_gradient_edge(y))


def test_edge_fields():
    a, b, _ = _chain()
    e = G.get_gradient_edge(a)
    assert e.node is G.get_gradient_edge(a).node and e.node.name() == "AccumulateGrad"
    assert e.output_nr == 0 and e.ownership_token is None
    assert G.get_gradient_edge(b).node is b.grad_fn
    assert G.GradientEdge(b.grad_fn, 0) == G.get_gradient_edge(b)


# -- increment_version --------------------------------------------------------------------------

def test_increment_version_makes_backward_report_a_hidden_write():
    x = ember.ones(3, requires_grad=True)
    y = x.clone()
    z = (y * y).sum()
    v = y._version
    y.detach().numpy()[:] = 5  # behind autograd's back
    G.increment_version(y)
    assert y._version == v + 1
    G.increment_version([y, y])
    assert y._version == v + 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    with pytest.raises(RuntimeError, match="expect a Iterable\\[Tensor\\]"):
        G.increment_version(3)


# -- register_multi_grad_hook -------------------------------------------------------------------

def test_multi_grad_hook_all_mode_as_pytorchs_example():
    a = ember.rand(2, 3, requires_grad=True)
    b = ember.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    calls = []
    handle = G.register_multi_grad_hook((a, b, c, d),
                                        lambda grads: calls.append([g is not None
                                                                    for g in grads]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    ember.autograd.grad(c.sum(), (b,), retain_graph=True)
    (c.sum() + d.sum()).backward(retain_graph=True)
    assert calls == [[True, True, True, False], [True, False, True, False],
                     [False, True, True, False], [True, True, True, True]]
    handle.remove()
    c.sum().backward(retain_graph=True)
    assert len(calls) == 4


def test_multi_grad_hook_gets_the_gradients():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    got = []
    G.register_multi_grad_hook((x, y), got.append)
    (y * y).sum().backward()
    (gx, gy), = got
    np.testing.assert_allclose(to_numpy(gy), [6.0, 12.0])
    np.testing.assert_allclose(to_numpy(gx), [18.0, 36.0])


def test_multi_grad_hook_any_mode_fires_once_per_backward():
    a = ember.rand(2, 3, requires_grad=True)
    b = ember.rand(2, 3, requires_grad=True)
    c = a * b
    seen = []
    with G.register_multi_grad_hook((a, b, c), lambda g: seen.append(tuple(g.shape)),
                                    mode="any"):
        c.sum().backward(retain_graph=True)
        (a * 2).sum().backward()
        assert seen == [(2, 3), (2, 3)]
    c.sum().backward()
    assert len(seen) == 2
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        G.register_multi_grad_hook((a,), print, mode="some")


def test_will_engine_execute_node_outside_backward_raises():
    from ember.autograd.engine import will_engine_execute_node

    with pytest.raises(RuntimeError, match="during the backward pass"):
        will_engine_execute_node(ember.ones(1, requires_grad=True).grad_fn)


# -- allow_mutation_on_saved_tensors ------------------------------------------------------------

def test_mutating_a_saved_input_as_pytorchs_example():
    with G.allow_mutation_on_saved_tensors() as ctx:
        a = ember.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        out.backward()
        np.testing.assert_allclose(to_numpy(a.grad), np.full((2, 3), 2.0))
        np.testing.assert_allclose(to_numpy(b.detach()), np.sin(np.ones((2, 3))), rtol=1e-6)
    assert not ctx.original and not ctx.cloned


def test_mutating_a_saved_output_and_setitem():
    with G.allow_mutation_on_saved_tensors():
        a = ember.ones(2, 3, dtype=ember.float64, requires_grad=True)
        b = a.exp()  # exp saves its output
        out = (b * a).sum()
        b.mul_(10)
        b[0, 0] = 7
        b += 1
        out.backward()
    np.testing.assert_allclose(to_numpy(a.grad), np.full((2, 3), 2 * np.e))


def test_mutating_through_a_view_and_out():
    with G.allow_mutation_on_saved_tensors():
        a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a.clone()
        out = (b[1:] * b[1:]).sum()
        ember.add(b.detach(), 5, out=b.detach())  # out= writes the memory b shares
        out.backward()
    np.testing.assert_allclose(to_numpy(a.grad), [0.0, 4.0, 6.0])


def test_without_the_block_the_write_is_reported():
    a = ember.ones(3, requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_block_errors():
    with G.allow_mutation_on_saved_tensors():
        a = ember.ones(3, requires_grad=True)
        out = (a.clone() ** 2).sum()
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with G.allow_mutation_on_saved_tensors():
                pass
    with pytest.raises(AssertionError, match="Trying to backward outside"):
        out.backward()


# -- FunctionMeta -------------------------------------------------------------------------------

def test_function_meta_makes_the_backward_class():
    class Double(ember.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert type(ember.autograd.Function) is FunctionMeta and type(Double) is FunctionMeta
    assert Double._backward_cls.__name__ == "DoubleBackward"
    x = ember.ones(2, requires_grad=True)
    y = Double.apply(x)
    assert type(y.grad_fn) is Double._backward_cls
    y.sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [2.0, 2.0])


# -- PyTorch parity -----------------------------------------------------------------------------

def test_multi_grad_hook_and_mutation_match_pytorch():
    torch = pytest.importorskip("torch")

    def run(lib, graph):
        out = []
        a = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(2, 3, requires_grad=True) * 2
        c, d = a * b, a * b
        graph.register_multi_grad_hook((a, b, c, d),
                                       lambda gs: out.append([g is not None for g in gs]))
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c.sum() + d.sum()).backward(retain_graph=True)
        with graph.allow_mutation_on_saved_tensors():
            x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
            y = x.exp()
            s = (y * x).sum()
            y.mul_(3)
            s.backward()
            out.append(x.grad.tolist())
        return out

    assert run(ember, G) == run(torch, torch.autograd.graph)


def test_multi_grad_hook_fires_when_an_output_of_a_node_gets_no_gradient():
    # two outputs of one node, only the first used: fn runs once the backward is done with
    # them, with None for the other (PyTorch's, e.g. on the two halves of a chunk)
    from ember.autograd.graph import register_multi_grad_hook

    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 if gb is None else ga * 2 + gb * 3

    x = ember.randn(3, requires_grad=True)
    a, b = Two.apply(x)
    assert a.grad_fn is b.grad_fn
    calls = []
    register_multi_grad_hook((a, b), lambda grads: calls.append([g is None for g in grads]))
    a.sum().backward()
    assert calls == [[False, True]]
