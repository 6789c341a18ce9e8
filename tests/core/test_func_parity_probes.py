"""``torch.func`` / ``vmap`` / forward-mode AD differences found by differential probes against
PyTorch, one test each.

Every test checks Ember alone first (the expected value or PyTorch's error, spelled out), then
runs the same check on PyTorch when it is importable. Random values are compared with PyTorch
directly (Ember's generator streams equal PyTorch's under ``manual_seed``), and checked for
their structure (which examples share a draw) without it.
"""

import collections
import re
import warnings

import numpy as np
import pytest

import ember


def _on_both(check):
    """``check(lib)`` on Ember, then on PyTorch (skipped where it is not installed)."""
    check(ember)
    torch = pytest.importorskip("torch")
    check(torch)


def _same_values(fn):
    """``fn(lib)`` (seeded inside) gives equal arrays on Ember and PyTorch."""
    ours = _np(fn(ember))
    torch = pytest.importorskip("torch")
    theirs = _np(fn(torch))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def _raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


_INPLACE_MSG = ("(self, *extra_args) is not possible because there exists a Tensor `other` in "
                "extra_args that has more elements than `self`. This happened due to `other` "
                "being vmapped over but `self` not being vmapped over ")


# -- vmap: in-place ops on unbatched tensors ---------------------------------------------------

@pytest.mark.parametrize("op, name", [
    (lambda a, b: a.mul_(b), "inplace arithmetic"),
    (lambda a, b: a.sub_(b), "inplace arithmetic"),
    (lambda a, b: a.copy_(b), "inplace arithmetic"),
    (lambda a, b: a.masked_fill_(b > 0, 1.0), "inplace arithmetic"),
    (lambda a, b: a.__setitem__(0, b[0]), "inplace arithmetic"),
    (lambda a, b: a.__setitem__(slice(None), b), "inplace arithmetic"),
    (lambda a, b: a.fill_(b[0]), "fill_"),
    (lambda a, b: a.__setitem__((Ellipsis, slice(0, 1)), b[0]), "fill_"),
])
def test_vmap_inplace_on_unbatched_names_the_op(op, name):
    def check(lib):
        def f(b):
            a = lib.ones(3)
            op(a, b)
            return a

        with _raises(RuntimeError, f"vmap: {name}{_INPLACE_MSG}in a vmap. Please try to use "
                                   f"out-of-place operators instead of {name}."):
            lib.vmap(f)(lib.ones(2, 3))

    _on_both(check)


def test_vmap_inplace_fallback_op_names_aten_and_level():
    def check(lib):
        def f(b):
            a = lib.ones(3)
            a.pow_(b)
            return a

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's fallback performance warning
            with _raises(RuntimeError, f"vmap: aten::pow_{_INPLACE_MSG}at level 1. Please try "
                                       f"to use out-of-place operators instead of aten::pow_."):
                lib.vmap(f)(lib.ones(2, 3))

    _on_both(check)


def test_vmap_add_inplace_on_unbatched_is_the_broadcast_error():
    def check(lib):
        def f(b):
            a = lib.ones(3)
            a.add_(b)
            return a

        with _raises(RuntimeError, "output with shape [3] doesn't match the broadcast shape "
                                   "[2, 3]"):
            lib.vmap(f)(lib.ones(2, 3))

    _on_both(check)


def test_vmap_inplace_with_higher_rank_other_raises_instead_of_writing():
    # self's logical shape (1,) cannot hold (1,) + (2, 1): the batch (2) used to hide it
    def check(lib):
        def f(b):
            s = b[:1].clone()
            s.add_(lib.ones(2, 1))
            return s

        with _raises(RuntimeError, "output with shape [2, 1, 1] doesn't match the broadcast "
                                   "shape [2, 2, 1]"):
            lib.vmap(f)(lib.ones(2, 3))

    _on_both(check)


def test_vmap_inplace_with_leading_one_dims_still_writes():
    def check(lib):
        def f(b):
            s = b.clone()
            s.mul_(lib.full((1, 3), 2.0))
            return s

        out = lib.vmap(f)(lib.ones(2, 3))
        assert tuple(out.shape) == (2, 3)
        assert (_np(out) == 2).all()

    _on_both(check)


def test_vmap_out_argument_raises():
    def check(lib):
        x = lib.ones(2, 3)
        with _raises(RuntimeError, "Batching rule not implemented for aten::sin.out; the "
                                   "fallback path doesn't work on out= or view ops."):
            lib.vmap(lambda a, o: lib.sin(a, out=o))(x, x.clone())

    _on_both(check)


# -- vmap: data-dependent Python ---------------------------------------------------------------

@pytest.mark.parametrize("conv", [float, int, complex])
def test_vmap_number_conversion_is_the_item_error(conv):
    def check(lib):
        with _raises(RuntimeError, "vmap: It looks like you're calling .item() on a Tensor."):
            lib.vmap(lambda a: conv(a[0]))(lib.ones(2, 3))

    _on_both(check)


def test_vmap_bool_is_the_control_flow_error():
    def check(lib):
        with _raises(RuntimeError, "vmap: It looks like you're attempting to use a Tensor in "
                                   "some data-dependent control flow."):
            lib.vmap(lambda a: bool(a[0]))(lib.ones(2, 3))

    _on_both(check)


def test_vmap_dynamic_shape_ops_raise_when_examples_differ():
    x = ember.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    with _raises(RuntimeError, "vmap: We do not support batching operators that can output "
                               "dynamic shape. Attempted to vmap over aten::nonzero."):
        ember.vmap(ember.nonzero)(x)
    with _raises(RuntimeError, "vmap: We do not support batching operators that can support "
                               "dynamic shape. Attempting to batch over indexing with a "
                               "boolean mask."):
        ember.vmap(lambda a: a[a > 0])(x)


# -- vmap: in_dims / out_dims structure --------------------------------------------------------

def test_vmap_list_out_dims_do_not_match_tuple_outputs():
    def check(lib):
        x = lib.ones(3, 2)
        with _raises(ValueError, "out_dims is not compatible with the structure of `outputs`"):
            lib.vmap(lambda a: (a, a), out_dims=[0, 1])(x)
        with _raises(ValueError, "out_dims is not compatible with the structure of `outputs`"):
            lib.vmap(lambda a: [a, a], out_dims=(0, 1))(x)
        assert isinstance(lib.vmap(lambda a: [a, a], out_dims=[0, 1])(x), list)

    _on_both(check)


def test_vmap_in_dims_node_types_must_match():
    P = collections.namedtuple("P", "a b")

    def check(lib):
        x = lib.ones(3, 2)
        with _raises(ValueError, "in_dims is not compatible with the structure of `inputs`"):
            lib.vmap(lambda t: t[0], in_dims=([0, 0],))((x, x))
        with _raises(ValueError, "in_dims is not compatible with the structure of `inputs`"):
            lib.vmap(lambda p: p.a, in_dims=((0, None),))(P(x, lib.ones(2)))
        out = lib.vmap(lambda p: p.a + p.b, in_dims=(P(0, None),))(P(x, lib.ones(2)))
        assert tuple(out.shape) == (3, 2)

    _on_both(check)


# -- vmap: randomness ---------------------------------------------------------------------------

def test_vmap_inplace_random_on_unbatched_tensor():
    def check(lib):
        x = lib.ones(3, 2)
        f = lambda a: lib.empty(2).normal_() + a
        with _raises(RuntimeError, "vmap: Cannot ask for different inplace randomness on an "
                                   "unbatched tensor. This will appear like same randomness."):
            lib.vmap(f, randomness="different")(x)
        with _raises(RuntimeError, "vmap: called random operation while in randomness error "
                                   "mode."):
            lib.vmap(f)(x)
        out = _np(lib.vmap(f, randomness="same")(x))
        assert (out == out[0]).all()

    _on_both(check)


@pytest.mark.parametrize("op", [
    lambda lib, a: lib.bernoulli(a),
    lambda lib, a: lib.poisson(a),
    lambda lib, a: lib.multinomial(a, 2),
    lambda lib, a: lib.normal(a, 1.0),
])
def test_vmap_same_randomness_of_batched_tensor_raises(op):
    def check(lib):
        with _raises(RuntimeError, "Vmap does not currently support same randomness with a "
                                   "batched tensor input. Please file an issue with functorch"):
            lib.vmap(lambda a: op(lib, a), randomness="same")(lib.full((3, 4), 0.5))

    _on_both(check)


def test_vmap_channel_dropout_is_random():
    def check(lib):
        x = lib.ones(3, 1, 2, 4, 1)
        F = lib.nn.functional
        with _raises(RuntimeError, "vmap: called random operation while in randomness error "
                                   "mode."):
            lib.vmap(lambda a: F.dropout2d(a, 0.5))(x)
        lib.manual_seed(0)
        out = _np(lib.vmap(lambda a: F.dropout2d(a, 0.5), randomness="same")(x))
        assert (out == out[0]).all()

    _on_both(check)


def test_vmap_different_draws_the_batch_at_once():
    # 60 normals in one draw (PyTorch's) are not three draws of 20: its vectorized path
    def f(lib):
        lib.manual_seed(0)
        return lib.vmap(lambda a: lib.randn(20) + a, randomness="different")(lib.zeros(3, 20))

    out = _np(f(ember))
    ember.manual_seed(0)
    np.testing.assert_array_equal(out, _np(ember.randn(3, 20)))
    _same_values(f)


@pytest.mark.parametrize("make", [
    lambda lib: lib.rand(2, 3),
    lambda lib: lib.rand((2, 3)),
    lambda lib: lib.rand(size=(2, 3)),
    lambda lib: lib.randint(0, 10, (2, 3)).float(),
    lambda lib: lib.randint(10, (2, 3)).float(),
    lambda lib: lib.normal(0.0, 1.0, (2, 3)),
    lambda lib: lib.randn_like(lib.zeros(2, 3)),
])
def test_vmap_different_factories_match_one_batched_draw(make):
    def f(lib):
        lib.manual_seed(0)
        return lib.vmap(lambda a: make(lib) + a, randomness="different")(lib.zeros(4, 2, 3))

    out = _np(f(ember))
    assert not (out == out[0]).all()
    _same_values(f)


def test_nested_vmap_different_orders_draws_outer_first():
    def f(lib):
        lib.manual_seed(0)
        inner = lib.vmap(lambda a: lib.rand(()) + a, randomness="different")
        return lib.vmap(inner, randomness="different")(lib.zeros(2, 3))

    out = _np(f(ember))
    ember.manual_seed(0)
    np.testing.assert_array_equal(out, _np(ember.rand(2, 3)))
    _same_values(f)


def test_chunked_vmap_same_randomness_restarts_every_chunk():
    def f(lib):
        lib.manual_seed(0)
        out = lib.vmap(lambda a: lib.rand(3) + a, randomness="same", chunk_size=2)(
            lib.zeros(5, 3))
        return lib.cat([out, lib.rand(1, 3)])

    out = _np(f(ember))
    assert (out[:5] == out[0]).all()  # every chunk drew the same numbers
    ember.manual_seed(0)
    np.testing.assert_array_equal(out[5], _np(ember.rand(6))[3:])  # after one chunk's draw
    _same_values(f)


# -- grad, vjp, jvp, jacfwd, linearize ----------------------------------------------------------

def test_grad_of_complex_output_raises():
    def check(lib):
        with _raises(RuntimeError, "grad can be implicitly created only for real scalar outputs "
                                   f"but got {lib.__name__}.complex64"):
            lib.func.grad(lambda a: (a * 1j).sum())(lib.ones(2))

    _on_both(check)


def test_vjp_cotangent_errors():
    def check(lib):
        _, fn = lib.func.vjp(lambda a: (a ** 2, a), lib.ones(2))
        with _raises(RuntimeError, "Expected pytree structure of cotangents to be the same as "
                                   "pytree structure of outputs to the function. cotangents: "
                                   "[*, *], primal output: (*, *)"):
            fn([lib.ones(2), lib.ones(2)])
        _, fn = lib.func.vjp(lambda a: a ** 2, lib.ones(2))
        with _raises(TypeError, "gradients can be either Tensors or None, but got float"):
            fn(1.0)

    _on_both(check)


def test_vjp_of_none_output():
    def check(lib):
        with _raises(RuntimeError, "vjp(f, *primals): Expected f to be a function that has "
                                   "non-empty output (got output = [None])"):
            lib.func.vjp(lambda a: None, lib.ones(2))

    _on_both(check)


def test_jvp_argument_errors():
    def check(lib):
        x = lib.ones(2)
        with _raises(RuntimeError, "jvp(f, primals, tangents): Expected primals and tangents to "
                                   "have the same python structure."):
            lib.func.jvp(lambda a: a, (x,), x)
        with _raises(RuntimeError, "jvp(f, primals, tangents): Expected primals to contain at "
                                   "least one Tensor."):
            lib.func.jvp(lambda: lib.ones(1), (), ())
        with _raises(ValueError, "Expected tangent to be floating point or complex, but got: "
                                 f"{lib.__name__}.int64"):
            lib.func.jvp(lambda a: a * 2, (x,), (lib.ones(2, dtype=lib.int64),))
        with _raises(ValueError, "Expected primal to be floating point or complex, but got: "
                                 f"{lib.__name__}.int64"):
            lib.func.jvp(lambda a: a * 2, (lib.ones(2, dtype=lib.int64),), (x,))
        with _raises(ValueError, "Expected primal to be floating point or complex, but got: "
                                 f"{lib.__name__}.int64"):
            lib.func.jacfwd(lambda a: a * 2.0)(lib.tensor([1, 2]))

    _on_both(check)


def test_jvp_strict():
    def check(lib):
        x = lib.tensor([1.0, 2.0])
        out, t = lib.func.jvp(lambda a: a * 3, (x,), (lib.ones(2),), strict=True)
        assert _np(t).tolist() == [3.0, 3.0]
        with _raises(RuntimeError, "jvp(f, primals, tangents, strict=True): The output of f is "
                                   "independent of the inputs. This is not allowed with "
                                   "strict=True."):
            lib.func.jvp(lambda a: lib.ones(2), (x,), (x,), strict=True)
        # through vmap (Ember's double-vjp path) as well
        with _raises(RuntimeError, "The output of f is independent of the inputs."):
            lib.vmap(lambda a: lib.func.jvp(lambda b: lib.ones(2), (a,), (a,),
                                            strict=True)[1])(lib.ones(3, 2))

    _on_both(check)


def test_jacfwd_randomness_error_and_api_name():
    def check(lib):
        x = lib.tensor([1.0, 2.0])
        with _raises(RuntimeError, "vmap: called random operation while in randomness error "
                                   "mode."):
            lib.func.jacfwd(lambda a: a * lib.rand(2))(x)
        assert tuple(lib.func.jacfwd(lambda a: a * lib.rand(2), randomness="same")(x).shape) \
            == (2, 2)
        with _raises(RuntimeError, "jvp(f, primals, tangents): expected f(*primals) to return "
                                   "only tensors, got unsupported type <class 'float'>"):
            lib.func.jacfwd(lambda a: 3.0)(x)

    _on_both(check)


def test_linearize_tangent_errors():
    def check(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's own, from tracing the jvp graph
            _, fn = lib.func.linearize(lambda a: a.sin(), lib.tensor([1.0, 2.0]))
        with _raises(RuntimeError, f"tangent:0 with shape {lib.__name__}.Size([3]) in flattened "
                                   f"pytree doesn't match the shape {lib.__name__}.Size([2]) of "
                                   f"the corresponding primal."):
            fn(lib.ones(3))
        with _raises(RuntimeError, f"tangent:0 with dtype {lib.__name__}.float64 in flattened "
                                   f"pytree doesn't match the dtype {lib.__name__}.float32 of "
                                   f"the corresponding primal."):
            fn(lib.ones(2, dtype=lib.float64))
        with _raises(RuntimeError, "Expected the tangents TreeSpec(tuple, None, [*,\n  *]) to "
                                   "have the same argspec as the primals TreeSpec(tuple, None, "
                                   "[*])"):
            fn(lib.ones(2), lib.ones(2))

    _on_both(check)


# -- forward AD: in-place ops on views ----------------------------------------------------------

@pytest.mark.parametrize("case, expected", [
    ("mul", [[5.0, 5.0], [1.0, 1.0]]),
    ("mul_view", [5.0, 5.0]),
    ("mul_twice", [[10.0, 10.0], [1.0, 1.0]]),
    ("add_self", [[2.0, 2.0], [1.0, 1.0]]),
    ("mul_dual", [[1.0, 4.0], [1.0, 4.0]]),
    ("plain_base", [[3.0, 3.0], [0.0, 0.0]]),
])
def test_forward_ad_inplace_on_a_view_updates_the_tangent(case, expected):
    def f(lib, d):
        if case == "plain_base":
            e = lib.zeros(2, 2)
            v = e[0]
            v.mul_(5)
            v.add_(d[0])
            v.mul_(3)
            return e
        e = d.clone()
        if case == "mul_dual":
            e[:, 1].mul_(d[0])
            return e
        v = e[0]
        if case == "add_self":
            v.add_(v)
            return e
        v.mul_(5)
        if case == "mul_twice":
            v.mul_(2)
        return v if case == "mul_view" else e

    def check(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.full((2, 2), 2.0), lib.ones(2, 2))
            tangent = fwAD.unpack_dual(f(lib, d)).tangent
            assert _np(tangent).tolist() == expected

    _on_both(check)
