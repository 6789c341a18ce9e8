"""``torch.compiler`` / ``torch._dynamo`` hints, ``set_stance``, and the other names that
libraries (HuggingFace ``transformers``) use at import time: each must exist and keep eager
results exact, and ``ember.compile`` must honour what it can (graph breaks, stances)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _dynamo
from ember._compile import GraphBreakError


def test_hints_return_the_function_and_mark_it():
    def f(x):
        return x * 2

    assert ember.compiler.allow_in_graph(f) is f and _dynamo.allow_in_graph(f) is f
    assert ember.compiler.allow_in_graph([f, f]) == [f, f]
    assert ember.compiler.assume_constant_result(f) is f and f._dynamo_marked_constant
    assert _dynamo.nonstrict_trace(f) is f
    with pytest.raises(AssertionError, match="allow_in_graph expects a callable"):
        ember.compiler.allow_in_graph(3)

    @ember.compiler.substitute_in_graph(np.add, skip_signature_check=True)
    def my_add(a, b):
        return a + b

    assert my_add.__torch_dynamo_original__ is np.add
    with pytest.raises(TypeError, match="substitute_in_graph expects a function"):
        ember.compiler.substitute_in_graph(3)


def test_a_compiled_function_with_hints_equals_eager():
    @ember.compiler.allow_in_graph
    def scale(x):
        return x * 3

    @_dynamo.assume_constant_result
    def offset():
        return 1.5

    def fn(x):
        return scale(x).relu() + offset()

    x = ember.randn(4, 3)
    compiled = ember.compile(fn, fullgraph=True)
    np.testing.assert_array_equal(compiled(x).numpy(), fn(x).numpy())


def test_graph_break_and_disallow_in_graph_break_the_graph():
    def with_break(x):
        y = x + 1
        _dynamo.graph_break()
        return y * 2

    x = ember.ones(3)
    assert ember.compile(with_break)(x).tolist() == [4.0] * 3
    assert _dynamo.explain(with_break)(x).graph_break_count == 1
    with pytest.raises(GraphBreakError, match=r"graph_break\(\)"):
        ember.compile(with_break, fullgraph=True)(x)

    sub = _dynamo.disallow_in_graph(lambda a: a - 1)
    assert ember.compile(lambda a: sub(a) * 2)(x).tolist() == [0.0] * 3
    with pytest.raises(GraphBreakError, match="disallow_in_graph"):
        ember.compile(lambda a: sub(a) * 2, fullgraph=True)(x)


def test_forbidden_calls_raise_inside_a_capture_only():
    x = ember.ones(2, 3)
    _dynamo.mark_dynamic(x, 0, min=1, max=64)
    assert x._dynamo_dynamic_indices == {0} and x._has_dynamo_dim_marking
    _dynamo.maybe_mark_dynamic(x, [0, 1])
    assert x._dynamo_weak_dynamic_indices == {0, 1}
    _dynamo.mark_static(x)
    assert x._dynamo_static_indices == {0, 1}
    _dynamo.mark_static_address(x)
    with pytest.raises(TypeError, match="mark_static expects a tensor"):
        _dynamo.mark_static(3)
    with pytest.raises(AssertionError, match="Expected index to be int"):
        _dynamo.mark_dynamic(x, "0")

    def fn(t):
        _dynamo.mark_dynamic(t, 0)
        return t + 1

    with pytest.raises(GraphBreakError, match="mark_dynamic is forbidden"):
        ember.compile(fn)(x)
    forbidden = _dynamo.forbid_in_graph(lambda t: t)
    assert forbidden(x) is x
    with pytest.raises(GraphBreakError, match="forbid_in_graph"):
        ember.compile(lambda t: forbidden(t) + 1)(x)


def _counting():
    calls = []

    def fn(x):
        calls.append(1)  # Python side effects run on the capturing call only
        return x * 2

    return ember.compile(fn), calls


def test_set_stance_force_eager_and_eager_then_compile():
    compiled, calls = _counting()
    x = ember.ones(3)
    with ember.compiler.set_stance("force_eager"):
        compiled(x)
        compiled(x)
    assert len(calls) == 2  # eager both times
    compiled(x)
    compiled(x)
    assert len(calls) == 3  # one capture, then replays

    compiled, calls = _counting()
    ember.compiler.set_stance("eager_then_compile")
    try:
        for _ in range(4):
            compiled(x)
    finally:
        ember.compiler.set_stance("default")
    assert len(calls) == 2  # the eager first call and the capture

    compiled, calls = _counting()

    @ember.compiler.set_stance("force_eager")
    def run():
        return compiled(x)

    assert _dynamo_stance() == "default"  # the decorator restores it at decoration
    run()
    run()
    assert len(calls) == 2 and _dynamo_stance() == "default"


def _dynamo_stance():
    from ember._compile.hints import current_stance

    return current_stance()


def test_set_stance_on_recompile():
    compiled, calls = _counting()
    compiled(ember.ones(3))
    with ember.compiler.set_stance("eager_on_recompile"):
        assert compiled(ember.ones(3)).tolist() == [2.0] * 3  # an entry matches: replayed
        assert compiled(ember.ones(5)).tolist() == [2.0] * 5  # a new shape: eager
        assert compiled(ember.ones(5)).tolist() == [2.0] * 5
    assert len(calls) == 3
    with ember.compiler.set_stance("fail_on_recompile"):
        compiled(ember.ones(3))
        with pytest.raises(RuntimeError, match="Detected recompile when torch.compile stance "
                           "is 'fail_on_recompile'. filename: .*function name: 'fn'"):
            compiled(ember.ones(7))


def test_set_stance_errors():
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend"):
        ember.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(RuntimeError, match="invalid torch.compile stance 'bogus'"):
        ember.compiler.set_stance("bogus")
    assert _dynamo_stance() == "default"

    def fn(x):
        ember.compiler.set_stance("force_eager")
        return x

    with pytest.raises(RuntimeError, match="attempted to set_stance in a torch.compile"):
        ember.compile(fn)(ember.ones(2))
    assert _dynamo_stance() == "default"


def test_compiler_namespace_helpers():
    assert ember.compiler.compile is ember.compile
    f = ember.compiler.wrap_numpy(lambda a, b: {"s": a * b})
    out = f(ember.arange(3.0), ember.full((3,), 2.0))
    assert isinstance(out["s"], ember.Tensor) and out["s"].tolist() == [0.0, 2.0, 4.0]
    region = ember.compiler.nested_compile_region(lambda t: t + 1)
    assert region(ember.ones(1)).item() == 2.0
    assert ember.compiler.nested_compile_region()(lambda t: t)(3) == 3
    ember.compiler.cudagraph_mark_step_begin()
    assert ember.compiler.set_enable_guard_collectives(True) is False
    assert ember.compiler.set_enable_guard_collectives(False) is True
    assert not ember.compiler.is_exporting()
    seen = []

    class M(ember.nn.Module):
        def forward(self, x):
            seen.append(ember.compiler.is_exporting())
            return x + 1

    ember.export.export(M(), (ember.ones(2),))
    assert seen == [True]
    seen.clear()
    ember.compile(M())(ember.ones(2))
    assert seen == [False]


def test_transform_getitem_to_index():
    from ember._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    x = ember.arange(12).reshape(3, 4)
    with TransformGetItemToIndex():
        assert x[ember.tensor(1)].tolist() == [4, 5, 6, 7]
        assert x[ember.tensor(1), ember.tensor(2)].item() == 6
        assert x[1, 1:3].tolist() == [5, 6]  # not all tensors: unchanged
        mask = ember.vmap(ember.vmap(lambda i, j: x[i, j], in_dims=(None, 0)),
                          in_dims=(0, None))(ember.arange(3), ember.arange(4))
    assert mask.tolist() == x.tolist()


def test_cuda_graph_names_without_cuda():
    if ember.cuda.is_available():
        pytest.skip("this machine has CUDA (tests/gpu covers the real graphs)")
    with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class CUDAGraph"):
        ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="dummy base class _graph_pool_handle"):
        ember.cuda.graph_pool_handle()
    with pytest.raises(RuntimeError, match="Stream requires CUDA support"):
        ember.cuda.graph(None)
    assert ember.cuda.is_current_stream_capturing() is False
    assert ember.cuda.is_bf16_supported() is False
    with pytest.raises(AssertionError):
        ember.cuda.get_device_properties(0)


def test_bare_grad_mode_decorators():
    @ember.no_grad
    def f(x):
        return x * 2

    @ember.inference_mode
    def g(x):
        return x * 2

    @ember.enable_grad
    def h(x):
        return x * 2

    x = ember.ones(2, requires_grad=True)
    assert not f(x).requires_grad and not g(x).requires_grad and f.__name__ == "f"
    with ember.no_grad():
        assert h(x).requires_grad
        assert not (x * 2).requires_grad


def test_expand_of_only_new_unit_dims_is_writable():
    """``arange(n).expand(1, -1)`` repeats no element: PyTorch writes into it in place
    (transformers' position_ids buffers), so must Ember; a real broadcast stays read-only."""
    b = ember.arange(5).expand((1, -1))
    assert b.stride() == (5, 1)  # PyTorch's strides for a new unit dim
    b.copy_(ember.arange(5) * 2)
    assert b.tolist() == [[0, 2, 4, 6, 8]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        ember.arange(5).expand(2, 5).add_(1)
    x = ember.randn(3, requires_grad=True)
    x.expand(1, 1, 3).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_eval_frame_optimized_module_answers_isinstance():
    """``torch._dynamo.eval_frame.OptimizedModule`` is the class of a compiled module
    (HuggingFace accelerate unwraps compiled models by it)."""
    nn = pytest.importorskip("ember.nn")
    from ember._dynamo.eval_frame import OptimizedModule

    model = nn.Linear(2, 2)
    compiled = ember.compile(model)
    assert isinstance(compiled, OptimizedModule) and compiled._orig_mod is model
    assert not isinstance(model, OptimizedModule) and not isinstance(3, OptimizedModule)
    assert issubclass(type(compiled), OptimizedModule)
    assert ember._dynamo.eval_frame.OptimizedModule is OptimizedModule
