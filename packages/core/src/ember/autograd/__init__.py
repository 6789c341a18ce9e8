"""``ember.autograd``: reverse-mode automatic differentiation on the recorded graph."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _dtype
from . import graph
from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import run_backward
from .function import Function, FunctionCtx, InplaceFunction, once_differentiable
from .grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .graph import GradientEdge, Node, as_edge
from .variable import Variable

__all__ = ["backward", "grad", "Variable", "Node", "Function", "FunctionCtx", "InplaceFunction",
           "once_differentiable", "functional", "graph", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "gradcheck", "gradgradcheck",
           "set_multithreading_enabled", "enforce_grad_layout_policy", "forward_ad"]


def _as_tuple(x):
    from .._tensor import Tensor

    if x is None:
        return None
    if isinstance(x, (Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, api: str):
    """``inputs`` of ``backward``/``grad`` as a tuple: a tensor or edge, a sequence of them,
    or (PyTorch 2.13) a plain dict of them (``dict(model.named_parameters())``)."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    from collections.abc import Mapping

    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{api}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return _as_tuple(inputs)


def _edge_root_grads(outputs, grad_outputs, create_graph):
    """``_make_root_grads`` where some outputs are ``GradientEdge``s: an edge's gradient must
    be given (Ember's nodes do not record their outputs' shapes to make ones from)."""
    plain = [None if isinstance(o, GradientEdge) else o for o in outputs]
    go = list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(go) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(go)} "
                           f"grad_outputs and {len(outputs)} outputs")
    for i, o in enumerate(outputs):
        if o.__class__ is GradientEdge and go[i] is None:
            raise RuntimeError(f"grad_outputs[{i}] must be given for output {i}, a GradientEdge "
                               "(its shape and dtype are not known)")
    grads = _make_root_grads([p for p in plain if p is not None],
                             [g for p, g in zip(plain, go) if p is not None], create_graph)
    it = iter(grads)
    return [go[i] if p is None else next(it) for i, p in enumerate(plain)]


def _make_root_grads(outputs, grad_outputs, create_graph):
    from .. import _factory
    from .._tensor import Tensor

    grads = []
    for i, out in enumerate(outputs):
        if grad_outputs is not None and i >= len(grad_outputs):
            break  # (PyTorch zips them: the count check follows)
        if out.__class__ is not Tensor and not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a ember.Tensor")
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if not out.requires_grad:
                grads.append(None)
                continue
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype not in _dtype.FLOATING_NP:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {out.dtype}")
            g = _factory.ones_like(out)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        else:
            if (g._data.shape if g.__class__ is Tensor else tuple(g.shape)) != out._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {out.shape}.")
            if g._device is not out._device:
                raise RuntimeError(f"invalid gradient at index {i} - expected device "
                                   f"{out._device} but got {g._device}")
            if g._data.dtype is not out._data.dtype:
                if (g._data.dtype in _dtype.COMPLEX_NP) != (out._data.dtype in _dtype.COMPLEX_NP):
                    raise RuntimeError("For complex Tensors, both grad_output and output are "
                                       "required to have the same dtype. Mismatch in dtype: "
                                       f"grad_output[{i}] has a dtype of {g.dtype} and output"
                                       f"[{i}] has a dtype of {out.dtype}.")
                if out._data.dtype in _dtype.FLOATING_NP:
                    g = g.to(out.dtype)  # the gradient of a float output is of its dtype
        grads.append(g)
    return grads


_WARNED_CREATE_GRAPH: list = []  # backward(create_graph=True) has warned


def _check_roots(outputs, grads) -> None:
    """The engine's checks of the roots: one gradient per output (PyTorch zips the given
    ones with the outputs, so extra gradients are dropped), each output with a history."""
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    for i, o in enumerate(outputs):
        if o.__class__ is not GradientEdge and not o.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")


def _input_edges(inputs, accumulate: bool = False) -> list:
    """The engine's checks of ``inputs``, and their edges. For ``backward(inputs=...)``
    (``accumulate``) PyTorch calls ``retain_grad()`` on each: a non-leaf input's gradient
    goes to its ``.grad``."""
    from .._tensor import Tensor

    for t in inputs:
        if t.__class__ is GradientEdge:
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(t).__name__}")
        if accumulate:
            t.retain_grad()
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    return [as_edge(t) for t in inputs]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves of the graph."""
    if grad_variables is not None:
        import warnings

        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors)
    if inputs is not None:
        inputs = _inputs_tuple(inputs, "backward")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if create_graph and not _WARNED_CREATE_GRAPH:
        _WARNED_CREATE_GRAPH.append(True)  # once per process, as PyTorch's engine warns
        import warnings

        from .._warn import user_stacklevel

        warnings.warn("Using backward() with create_graph=True will create a reference cycle "
                      "between the parameter and its gradient which can cause a memory leak. We "
                      "recommend using autograd.grad when creating the graph to avoid this. If "
                      "you have to use this function, make sure to reset the .grad fields of "
                      "your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=user_stacklevel())
    # PyTorch's order: the root gradients (made or checked), their count, the tensors, the inputs
    edges = any(t.__class__ is GradientEdge for t in tensors)
    grads = (_edge_root_grads(tensors, grad_tensors, create_graph) if edges
             else _make_root_grads(tensors, grad_tensors, create_graph))
    _check_roots(tensors, grads)
    if retain_graph is None:
        retain_graph = create_graph
    roots = [as_edge(t) for t in tensors]
    inp = None if inputs is None else _input_edges(inputs, accumulate=True)
    run_backward(roots, grads, retain_graph, create_graph, inputs=inp, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    keys = inputs.keys() if type(inputs) is dict else None
    inputs = _inputs_tuple(inputs, "grad")
    grad_outputs = _as_tuple(grad_outputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        import warnings

        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "ember.autograd.backward.", FutureWarning, stacklevel=2)
    if keys is not None:  # a dict of inputs: a dict of their gradients, under the same keys
        return dict(zip(keys, grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                                   True, allow_unused, is_grads_batched, materialize_grads),
                        strict=True))
    if is_grads_batched:
        if any(o.__class__ is GradientEdge for o in outputs):
            raise RuntimeError("Batched grads are not supported with GradientEdge")
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    if retain_graph is None:
        retain_graph = create_graph
    edges = any(o.__class__ is GradientEdge for o in outputs)
    grads = (_edge_root_grads(outputs, grad_outputs, create_graph) if edges
             else _make_root_grads(outputs, grad_outputs, create_graph))
    _check_roots(outputs, grads)
    roots = [as_edge(t) for t in outputs]
    inp = _input_edges(inputs)
    result = run_backward(roots, grads, retain_graph, create_graph, inputs=inp,
                          accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads and t.__class__ is GradientEdge:
                raise RuntimeError("materialize_grads cannot be used when the given input is a "
                                   "GradientEdge")
            if materialize_grads:
                from .. import _factory

                g = _factory.zeros_like(t, requires_grad=create_graph)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        elif not create_graph:
            g = g.detach()
        out.append(g)
    return tuple(out)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``is_grads_batched=True``: ``grad`` vmapped over the grad_outputs' first dim, one
    backward pass on the whole batch (PyTorch's; the gradients do not flow back into
    grad_outputs)."""
    from .. import _factory
    from .._functorch.vmap import vmap
    from .._tensor import Tensor

    if grad_outputs is None:
        _make_root_grads(outputs, None, create_graph)  # PyTorch's errors for implicit grads
        raise RuntimeError("grad_outputs must be given when is_grads_batched=True")
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None or not isinstance(g, Tensor):
            continue
        if not g.ndim:  # PyTorch reads ``grad[0]``
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        if tuple(g.shape[1:]) != tuple(o.shape):
            # (PyTorch prints the grad_output's shape without its first two dims)
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of "
                               "each grad_output as the batch dimension. The sizes of the "
                               "remaining dimensions are expected to match the shape of "
                               "corresponding output, but a mismatch was detected: grad_output"
                               f"[{i}] has a shape of {g.shape[2:]} and output[{i}] has a shape "
                               f"of {o.shape}. If you only want some tensors in `grad_output` to "
                               "be considered batched, consider using vmap.")
    if retain_graph is None:
        retain_graph = create_graph

    unused: set = set()  # inputs the outputs do not reach: None, as one grad call gives

    def one(*gos):
        res = grad(outputs, inputs, gos, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=allow_unused)
        unused.update(i for i, g in enumerate(res) if g is None)
        return tuple(_factory.zeros(()) if g is None else g for g in res)

    in_dims = tuple(None if g is None else 0 for g in grad_outputs)
    res = vmap(one, in_dims=in_dims)(*grad_outputs)
    if materialize_grads:  # unused inputs get zeros of their own shape, outside the vmap
        return tuple(_factory.zeros_like(t, requires_grad=create_graph) if i in unused else g
                     for i, (t, g) in enumerate(zip(inputs, res)))
    return tuple(None if i in unused else g for i, g in enumerate(res))


from . import forward_ad, functional
from .gradcheck import gradcheck, gradgradcheck

#: imported on first use, to keep ``import ember`` fast
_LAZY_SUBMODULES = frozenset(("profiler", "profiler_legacy", "profiler_util"))


def _profiler_enabled() -> bool:
    """``torch.autograd._profiler_enabled()``: whether a profiler is recording (any thread)."""
    from .profiler import _ACTIVE

    return _ACTIVE[0] > 0


def _disable_profiler():
    """``torch.autograd._disable_profiler()``: stop the profiler recording on this thread and
    return its events (None when none is)."""
    from .profiler import _current

    recorder = _current()
    if recorder is None:
        return None
    recorder.stop()
    return recorder.take()


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
