"""Autograd API differences found by differential probes against PyTorch, one test each.

Every test checks Ember alone first (the expected value or PyTorch's error, spelled out), then
runs the same check on PyTorch when it is importable.
"""

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


def _raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


# -- autograd.grad / backward ---------------------------------------------------------------

def test_grad_output_complex_for_real_output_raises():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        y = (x ** 2).sum()
        with _raises(RuntimeError, "For complex Tensors, both grad_output and output are "
                                   "required to have the same dtype. Mismatch in dtype: "
                                   f"grad_output[0] has a dtype of {lib.__name__}.complex64 and "
                                   f"output[0] has a dtype of {lib.__name__}.float32."):
            lib.autograd.grad(y, x, lib.tensor(2.0, dtype=lib.complex64))
    _on_both(check)


def test_batched_grad_output_shape_mismatch_message():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        y = x ** 2
        with _raises(RuntimeError, "If `is_grads_batched=True`, we interpret the first "
                                   "dimension of each grad_output as the batch dimension. The "
                                   "sizes of the remaining dimensions are expected to match the "
                                   "shape of corresponding output, but a mismatch was detected: "
                                   f"grad_output[0] has a shape of {lib.__name__}.Size([3]) and "
                                   f"output[0] has a shape of {lib.__name__}.Size([3]). If you "
                                   "only want some tensors in `grad_output` to be considered "
                                   "batched, consider using vmap."):
            lib.autograd.grad(y, x, lib.ones(2, 2, 3), is_grads_batched=True)
        with _raises(IndexError, "invalid index of a 0-dim tensor"):
            lib.autograd.grad(y, x, lib.tensor(2.0), is_grads_batched=True)
    _on_both(check)


def test_batched_grad_without_grad_outputs_non_scalar():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        with _raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
            lib.autograd.grad(x * 2, [x], None, is_grads_batched=True)
    _on_both(check)


def test_batched_grad_materializes_unbatched_zeros():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        z = lib.ones(3, requires_grad=True)
        gx, gz = lib.autograd.grad(x * 2, [x, z], lib.eye(3), is_grads_batched=True,
                                   materialize_grads=True)
        assert tuple(gx.shape) == (3, 3) and tuple(gz.shape) == (3,)
        np.testing.assert_array_equal(_np(gz), 0)
        assert not gz.requires_grad
    _on_both(check)


def test_materialized_grad_requires_grad_with_create_graph():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        z = lib.ones(3, requires_grad=True)
        _, gz = lib.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
        assert not gz.requires_grad
        _, gz = lib.autograd.grad((x ** 2).sum(), [x, z], materialize_grads=True,
                                  create_graph=True)
        assert gz.requires_grad
    _on_both(check)


def test_backward_inputs_non_leaf_gets_grad():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        w = x * 2
        w.sum().backward(inputs=[w])
        np.testing.assert_array_equal(_np(w.grad), 1)
        assert x.grad is None and w.retains_grad
    _on_both(check)


def test_backward_inputs_not_requiring_grad_message():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        with _raises(RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"):
            x.sum().backward(inputs=[lib.ones(3)])
    _on_both(check)


def test_non_leaf_grad_warns_on_every_access():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        for _ in range(2):
            y = x * 2
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                assert y.grad is None
            assert any("is not a leaf Tensor" in str(m.message) for m in w)
    _on_both(check)


# -- Tensor methods --------------------------------------------------------------------------

def test_requires_grad_non_bool_raises():
    def check(lib):
        x = lib.ones(3)
        with _raises(TypeError, "requires_grad_(): argument 'requires_grad' (position 1) must "
                                "be bool, not int"):
            x.requires_grad_(1)
        with _raises(TypeError, "must be bool, not str"):
            x.requires_grad_("yes")
        assert not x.requires_grad
    _on_both(check)


def test_post_accumulate_hook_needs_requires_grad():
    def check(lib):
        with _raises(RuntimeError, "cannot register a hook on a tensor that doesn't require "
                                   "gradient"):
            lib.ones(3).register_post_accumulate_grad_hook(lambda t: None)
    _on_both(check)


def test_post_accumulate_hook_must_return_none():
    def check(lib):
        for hook, exc, msg in ((lambda t: t.grad * 0, RuntimeError,
                                "Tensor post accumulate grad hooks should return None."),
                               (lambda t: 3, TypeError, "expected Variable, but hook returned "
                                                        "'int'")):
            x = lib.ones(2, requires_grad=True)
            x.register_post_accumulate_grad_hook(hook)
            with _raises(exc, msg):
                (x * 1).sum().backward()
        x = lib.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t: t)  # the tensor itself passes
        (x * 1).sum().backward()
        np.testing.assert_array_equal(_np(x.grad), 1)
    _on_both(check)


# -- graph nodes -----------------------------------------------------------------------------

def test_accumulate_grad_node_post_hook_runs():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        seen = []
        acc = y.grad_fn.next_functions[0][0]
        acc.register_hook(lambda gi, go: seen.append((gi, tuple(go[0].shape))))
        y.sum().backward()
        assert seen == [((), (3,))]
    _on_both(check)


def test_node_sequence_nr():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        a = x * 2
        b = a.exp()
        assert b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr() >= 0
    _on_both(check)


def test_modified_copy_slices_output_message():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        w = x * 1
        y = w.sin()
        w[0] = 5
        with _raises(RuntimeError, "[" + lib.__name__ + ".FloatTensor [3]], which is output 0 "
                                   "of " + lib.__name__ + "::autograd::CopySlices, is at "
                                   "version 1; expected version 0 instead."):
            y.sum().backward()
    _on_both(check)


# -- grad modes ------------------------------------------------------------------------------

def test_inference_mode_false_enables_grad():
    def check(lib):
        with lib.inference_mode():
            with lib.inference_mode(False):
                assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
            assert not lib.is_grad_enabled() and lib.is_inference_mode_enabled()
        with lib.no_grad():
            with lib.inference_mode(False):
                assert lib.is_grad_enabled()
            assert not lib.is_grad_enabled()
    _on_both(check)


def test_set_grad_enabled_missing_argument_names_the_class():
    def check(lib):
        with _raises(TypeError, "set_grad_enabled.__init__() missing 1 required positional "
                                "argument: 'mode'"):
            lib.set_grad_enabled()
    _on_both(check)


def test_set_detect_anomaly_non_bool_raises():
    def check(lib):
        with _raises(TypeError, "set_anomaly_enabled(): argument 'enabled' (position 1) must "
                                "be bool, not str"):
            lib.autograd.set_detect_anomaly("x")
        with _raises(TypeError, "set_anomaly_enabled(): argument 'check_nan' (position 2) must "
                                "be bool, not int"):
            lib.autograd.set_detect_anomaly(True, 1)
        assert not lib.is_anomaly_enabled()
    _on_both(check)


# -- custom Functions ------------------------------------------------------------------------

def _view_function(lib, make):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return make(x)

        @staticmethod
        def backward(ctx, g):
            return g

    return F


_CUSTOM_VIEW_TAIL = (" This view was created inside a custom Function (or because an input "
                     "was returned as-is) and the autograd logic to handle view+inplace would "
                     "override the custom backward associated with the custom Function, "
                     "leading to incorrect gradients. This behavior is forbidden. You can fix "
                     "this by cloning the output of the custom Function.")


def test_custom_function_view_output_in_place_message():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        for make in (lambda t: t.view(2), lambda t: t):
            for inp in (x, x * 1):
                y = _view_function(lib, make).apply(inp)
                with _raises(RuntimeError, "Output 0 of F is a view and is being modified "
                                           "inplace." + _CUSTOM_VIEW_TAIL):
                    y.add_(1)
    _on_both(check)


def test_custom_function_view_output_base_modified_raises_on_backward():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        w = x * 1

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t[:1]

            @staticmethod
            def backward(ctx, g):
                return lib.cat([g, lib.zeros(1)])

        y = F.apply(w)
        w.add_(1)
        with _raises(RuntimeError, "Output 0 of F is a view and its base or another view of its "
                                   "base has been modified inplace." + _CUSTOM_VIEW_TAIL):
            y.sum().backward()
    _on_both(check)


def test_custom_function_saved_tensors_checked_only_when_read():
    def check(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.ones(2, requires_grad=True)
        z = F.apply(x)
        z.sum().backward()
        z.sum().backward()  # the backward never reads the (freed) saved tensors
        np.testing.assert_array_equal(_np(x.grad), 4)
    _on_both(check)


# -- autograd.functional ---------------------------------------------------------------------

def test_jacobian_forward_mode_needs_vectorize():
    def check(lib):
        from_lib = lib.autograd.functional
        with _raises(NotImplementedError, "Computing Jacobian using forward-AD or "
                                          "forward-over-reverse Hessian isonly implemented for "
                                          "`vectorize=True`."):
            from_lib.jacobian(lambda x: x ** 2, lib.tensor([1.0, 2.0]), strategy="forward-mode")
        with _raises(NotImplementedError, "only implemented for `vectorize=True`"):
            from_lib.hessian(lambda x: (x ** 2).sum(), lib.tensor([1.0, 2.0]),
                             outer_jacobian_strategy="forward-mode")
        j = from_lib.jacobian(lambda x: x ** 2, lib.tensor([1.0, 2.0]), strategy="forward-mode",
                              vectorize=True)
        np.testing.assert_array_equal(_np(j), [[2.0, 0.0], [0.0, 4.0]])
    _on_both(check)


def test_jacobian_of_empty_output_raises():
    def check(lib):
        with _raises(RuntimeError, "stack expects a non-empty TensorList"):
            lib.autograd.functional.jacobian(lambda x: x, lib.ones(0))
    _on_both(check)


def test_jacobian_of_complex_output_raises():
    def check(lib):
        with _raises(RuntimeError, "grad can be implicitly created only for real scalar outputs "
                                   f"but got {lib.__name__}.complex64"):
            lib.autograd.functional.jacobian(lambda x: x ** 2, lib.tensor([1.0 + 1j, 2.0]))
    _on_both(check)


# -- gradcheck -------------------------------------------------------------------------------

def test_gradcheck_ignores_integer_outputs():
    def check(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(lambda t: t.int(), (x,))
        assert lib.autograd.gradcheck(lambda t: (t * 2, t.long()), (x,))
    _on_both(check)


def test_gradcheck_message_prints_jacobians_in_their_dtypes():
    def check(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = lib.ones(2, requires_grad=True)  # float32: the Jacobians print without a dtype
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(lib.autograd.gradcheck.GradcheckError
                               if hasattr(lib.autograd.gradcheck, "GradcheckError")
                               else RuntimeError) as info:
                lib.autograd.gradcheck(F.apply, (x,), eps=1e-3, atol=1e-2)
        msg = str(info.value)
        assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,")
        assert "dtype" not in msg and "analytical:tensor([[3., 0.]," in msg
    _on_both(check)


# -- tensor hooks ------------------------------------------------------------------------------

def test_tensor_hook_of_output_without_gradient_gets_none():
    def check(lib):
        x = lib.ones(4, requires_grad=True)
        a, b = x.chunk(2)
        seen = []
        a.register_hook(lambda g: seen.append(g is None))
        b.register_hook(lambda g: seen.append(g is None))
        b.sum().backward()
        assert sorted(seen) == [False, True]
        a, b = x.chunk(2)
        a.register_hook(lambda g: lib.ones(2))
        with _raises(RuntimeError, "can't replace a None gradient with a non-None value"):
            b.sum().backward()
    _on_both(check)


def test_grad_runs_hooks_and_retain_grad_of_the_inputs():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * 100)
        (g,) = lib.autograd.grad((y * 3).sum(), y)
        np.testing.assert_array_equal(_np(g), 300)
        y = x * 2
        y.retain_grad()
        lib.autograd.grad((y * 3).sum(), y)
        np.testing.assert_array_equal(_np(y.grad), 3)
    _on_both(check)


def test_gradcheck_non_tensor_output_raises_attribute_error():
    def check(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        with _raises(AttributeError, "'float' object has no attribute 'requires_grad'"):
            lib.autograd.gradcheck(lambda t: 3.0, (x,))
    _on_both(check)


def test_gradcheck_sparse_output_raises():
    def check(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True).to_sparse()
        with _raises(ValueError, "Sparse output is not supported at gradcheck yet. Please call "
                                 "to_dense(masked_grad=...) on the output of fn for gradcheck."):
            lib.autograd.gradcheck(lambda t: t * 2, (x,))
    _on_both(check)


def test_backward_non_tensor_output_raises_assertion():
    def check(lib):
        x = lib.ones(3, requires_grad=True)
        with _raises(AssertionError, f"Expected output to be a {lib.__name__}.Tensor"):
            lib.autograd.backward([(x * 2).sum(), 3])
        with _raises(AssertionError, f"Expected output to be a {lib.__name__}.Tensor"):
            lib.autograd.grad([(x * 2).sum(), 3], x, [None, lib.ones(())])
    _on_both(check)


# -- calling nodes ---------------------------------------------------------------------------

def test_calling_a_node_returns_one_gradient_unwrapped():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        g = x.neg().grad_fn(lib.ones(2))
        assert isinstance(g, lib.Tensor)
        np.testing.assert_array_equal(_np(g), -1)
        gx, gc = (x * 2).grad_fn(lib.ones(2))
        assert gc is None
        np.testing.assert_array_equal(_np(gx), 2)
        a, _ = x.split(1)
        with _raises(TypeError, "expected 2 arguments, got 1 instead"):
            a.grad_fn(lib.ones(1))
    _on_both(check)


def test_calling_accumulate_grad_accumulates():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        acc = (x * 2).grad_fn.next_functions[0][0]
        g = lib.ones(2)
        assert acc(g) == ()
        assert acc(g) == ()
        np.testing.assert_array_equal(_np(x.grad), 2)
        np.testing.assert_array_equal(_np(g), 1)  # the caller's tensor is not adopted
    _on_both(check)


def test_custom_function_node_is_not_callable_and_has_vmap():
    def check(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        y = F.apply(lib.ones(2, requires_grad=True))
        with _raises(TypeError, "'FBackward' object is not callable"):
            y.grad_fn(lib.ones(2))
        np.testing.assert_array_equal(_np(y.grad_fn.apply(lib.ones(2))), 2)
        assert F.generate_vmap_rule is False
        with _raises(NotImplementedError, "To use autograd.Function with vmap, you must either "
                                          "override the vmap staticmethod or set "
                                          "generate_vmap_rule=True."):
            F.vmap(None, (0,), lib.ones(2))
    _on_both(check)


def test_backward_grad_variables_deprecated():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(FutureWarning, match=re.escape("`grad_variables` is deprecated. Use "
                                                         "`grad_tensors` instead.")):
            lib.autograd.backward((x * 2).sum(), grad_variables=lib.tensor(2.0))
        np.testing.assert_array_equal(_np(x.grad), 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with _raises(RuntimeError, "`grad_tensors` and `grad_variables` (deprecated) "
                                       "arguments both passed to `backward()`. Please only use "
                                       "`grad_tensors`."):
                lib.autograd.backward((x * 2).sum(), lib.tensor(3.0),
                                      grad_variables=lib.tensor(2.0))
    _on_both(check)


def test_dict_of_inputs():
    def check(lib):
        import types

        x = lib.ones(2, requires_grad=True)
        z = lib.ones(2, requires_grad=True)
        g = lib.autograd.grad((x * z * 3).sum(), {"x": x, "z": z})
        assert isinstance(g, dict) and list(g) == ["x", "z"]
        np.testing.assert_array_equal(_np(g["z"]), 3)
        g = lib.autograd.grad((x * 2).sum(), {"x": x, "z": z}, materialize_grads=True)
        np.testing.assert_array_equal(_np(g["z"]), 0)
        (x * z).sum().backward(inputs={"x": x})
        np.testing.assert_array_equal(_np(x.grad), 1)
        assert z.grad is None
        with _raises(TypeError, "`inputs` argument to `grad()` must be a dict, not "
                                "mappingproxy. Other Mapping types are not supported."):
            lib.autograd.grad((x * 2).sum(), types.MappingProxyType({"x": x}))
        with _raises(RuntimeError, "`inputs` argument to `backward()` cannot be empty."):
            (x * 2).sum().backward(inputs={})
    _on_both(check)


def test_grad_mode_decorating_a_class_warns_and_wraps_construction():
    def check(lib):
        with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
            @lib.no_grad()
            class C:
                def __init__(self):
                    self.grad_on = lib.is_grad_enabled()

        assert C().grad_on is False and lib.is_grad_enabled()
    _on_both(check)


def test_multi_grad_hook_on_tensor_without_grad_raises_assertion():
    def check(lib):
        a = lib.ones(2, requires_grad=True)
        with _raises(AssertionError, "Expected gradient function to be set"):
            lib.autograd.graph.register_multi_grad_hook((a, lib.ones(2)), lambda g: None)
    _on_both(check)


def test_allow_mutation_backward_outside_message():
    def check(lib):
        x = lib.ones(2, requires_grad=True)
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            y = x * 1
            z = y.exp()
            y.mul_(2)
        with _raises(AssertionError, "Trying to backward outside of the "
                                     "'allow_mutation_on_saved_tensors' contextin which the "
                                     "graph was originally recorded."):
            z.sum().backward()
    _on_both(check)
