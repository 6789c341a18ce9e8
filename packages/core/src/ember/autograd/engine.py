"""The backward engine: walks the recorded graph from the outputs to the leaves.

``run_backward`` runs nodes in reverse creation order (a node's consumers are always newer
than it), summing gradients that meet at a node. With ``create_graph`` the backward
functions run with grad mode on, so the gradients carry a graph of their own.
"""

from __future__ import annotations

import heapq
import itertools
import threading

import numpy as np

from .. import _memory_format as _mf
from .. import _native
from .._forksafe import reinit_in_child
from .._tensor import Tensor as _Tensor
from .._tensor import _make
from .grad_mode import ANOMALY_THREADS, GRAD
from .graph import PRUNED, AccumulateGrad, Node, accumulate_node

__all__ = ["run_backward"]


def _needed_nodes(roots, targets):
    """Nodes from which some target node is reachable (for ``autograd.grad``).

    One walk collects the graph below the roots; then, producers before consumers (a node's
    inputs always have smaller ``seq``: they were recorded first), a node is needed when it
    is a target or one of its inputs is needed. Iterative: graphs of unrolled recurrences
    are deeper than Python's recursion limit."""
    seen = set()
    stack = [r for r in roots if r is not None]
    seen.update(stack)
    order = []
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    order.sort(key=_seq_of)
    needed = set()
    for node in order:
        if node in targets:
            needed.add(node)
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt in needed:
                needed.add(node)
                break
    return needed


def _seq_of(node) -> int:
    return node.seq or 0


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _apply_pre_hooks(node, grad, node_hooks: bool = True):
    """PyTorch's order before a node runs: the hooks of its output tensors
    (``Tensor.register_hook``, in registration order; an output that got no gradient is
    given None, as in PyTorch), then the retained gradients (``retain_grad`` sees what those
    hooks returned), then the node's own pre-hooks (``Node.register_prehook``; not for a
    node that does not run, ``node_hooks=False``). A hook's result is checked as PyTorch
    checks it."""
    multi = node._n_out != 1
    hooks = list(node._pre_hooks.values()) if node._pre_hooks else ()
    for nr, fn in hooks:
        if nr == -1:
            continue
        g = grad[nr] if multi else grad
        res = fn(g)
        if res is not None and res is not g:
            _check_hook_result(fn, g, res)
            if multi:
                grad[nr] = res
            else:
                grad = res
    if node._retain:
        _retain_grads(node, grad, node._retain)
    if not node_hooks:
        return grad
    for nr, fn in hooks:
        if nr != -1:
            continue
        grads = tuple(grad) if multi else (grad,)
        res = fn(grads)
        if res is not None:
            _check_hook_results(fn, grads, res)
            grad = list(res) if multi else res[0]
    return grad


def _hook_name(fn) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _type_string(t) -> str:
    """A tensor's type as PyTorch's hook checks print it: ``ember.FloatTensor``,
    ``ember.cuda.HalfTensor``; ``CPUComplexFloatType``, ``MetaFloatType`` where no legacy
    tensor type exists."""
    from .._dtype import legacy_type_name, scalar_type_name

    dev = t._device.type
    legacy = legacy_type_name(t._data.dtype)
    if legacy is not None and dev in ("cpu", "cuda"):
        return f"ember.{legacy}" if dev == "cpu" else f"ember.cuda.{legacy}"
    key = dev.upper() if dev in ("cpu", "cuda") else dev.capitalize()
    return f"{key}{scalar_type_name(t._data.dtype)}Type"


def _check_hook_result(fn, original, result) -> None:
    """PyTorch's ``check_single_result``: a hook may return a tensor of its gradient's type,
    device type and size, or None."""
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, _Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if result._data.dtype != original._data.dtype \
            or result._device.type != original._device.type:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was "
                           f"{_type_string(original)} got {_type_string(result)})")
    if result._data.shape != original._data.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value")


def _check_hook_results(fn, originals: tuple, results) -> None:
    """PyTorch's ``check_result`` for a node's pre- and post-hooks: a tuple of as many values,
    each checked as a tensor hook's result (None allowed)."""
    if not isinstance(results, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(results).__name__}'")
    if len(results) != len(originals):
        raise RuntimeError(f"hook '{_hook_name(fn)}' has returned an incorrect number of "
                           f"values (got {len(results)}, but expected {len(originals)})")
    for o, r in zip(originals, results):
        if r is not None and r is not o:
            _check_hook_result(fn, o, r)


def _accumulate_leaf(node: AccumulateGrad, grad, create_graph: bool, taken: set) -> None:
    """Add ``grad`` into the leaf's ``.grad``, then run the leaf's post-accumulate hooks.

    A fresh gradient array is adopted without a copy when it is owned, writable and
    contiguous and no other leaf or caller holds it (``taken``); otherwise it is copied, so
    that later in-place accumulation never writes into a shared buffer. Threads running
    backward through a shared leaf at once take the leaf's lock, so no update is lost.
    """
    var = node._variable()
    if var is None or grad is None:
        return
    if grad.__class__ is not _Tensor and grad.is_sparse:  # nn.Embedding(sparse=True), ...
        with _LEAF_LOCKS[(id(var) >> 4) & 63]:
            _add_sparse_into_grad(var, grad)
    else:
        gd = grad._data
        vd = var._data
        if gd.dtype is not vd.dtype:
            gd = gd.astype(vd.dtype)
        if gd.shape != vd.shape:
            raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got "
                               f"{list(gd.shape)} but expected shape compatible with "
                               f"{list(vd.shape)}")
        with _LEAF_LOCKS[(id(var) >> 4) & 63]:
            _add_into_grad(var, grad, gd, create_graph, taken)
    extra = var._extra
    if extra and extra.get("post_hooks"):
        for fn in list(extra["post_hooks"].values()):
            res = fn(var)
            if res is not None and res is not var:  # (PyTorch lets the tensor itself pass)
                if not isinstance(res, _Tensor):
                    raise TypeError(f"expected Variable, but hook returned "
                                    f"'{type(res).__name__}'")
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def _add_sparse_into_grad(var, grad) -> None:
    """A sparse gradient, as PyTorch's AccumulateGrad keeps it: the first one becomes
    ``.grad``; a later one is added (sparse + sparse stays sparse, uncoalesced; into a dense
    ``.grad`` it is added in place)."""
    if tuple(grad.shape) != tuple(var._data.shape):
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got "
                           f"{list(grad.shape)} but expected shape compatible with "
                           f"{list(var._data.shape)}")
    old = var._grad
    if old is None:
        var._grad = grad
    elif old.is_sparse:
        var._grad = old + grad
    else:
        old.add_(grad)


def _add_into_grad(var, grad, gd, create_graph: bool, taken: set) -> None:
    old = var._grad
    if create_graph:
        if grad._data is not gd:
            grad = grad.to(var.dtype)
        if old is None:  # a copy, differentiable, in the leaf's layout (PyTorch's
            # clone_obey_contract): never a view of a tensor in the graph, so detach_()
            # and in-place updates of .grad work as in PyTorch
            grad = grad.clone(memory_format=_mf.contiguous_format
                              if var._data.flags.c_contiguous else _mf.preserve_format)
        var._grad = grad if old is None else old + grad
    elif old is None:
        vd = var._data
        if vd.flags.c_contiguous or vd.ndim < 2:
            if id(gd) in taken or not _owned(gd):
                gd = gd.copy()
        else:
            gd = _in_layout_of(vd, gd, taken)
        taken.add(id(gd))
        var._grad = _make(gd, var._device)
    elif old.requires_grad or not getattr(old._data.flags, "writeable", True):  # CuPy: none
        var._grad = _make(old._data + gd, var._device)
    else:
        od = old._data
        if _native.ufunc(np.add, od, gd, od) is None:  # a big one split over the threads
            od += gd


#: a leaf's lock is ``_LEAF_LOCKS[(id(leaf) >> 4) & 63]``: uncontended, taking one costs
#: about 50 ns, and threads accumulating into different leaves rarely wait for each other
_LEAF_LOCKS = tuple(reinit_in_child(threading.Lock()) for _ in range(64))


class _TaskState(threading.local):
    id = -1  # the innermost backward running in this thread (-1: none)
    run = None  # its (root edges, needed nodes or None, reachable-node cache)
    callbacks = None  # its final callbacks (``queue_callback``), run when it has finished


def queue_callback(callback) -> None:
    """Run ``callback()`` when the backward running in this thread has finished (PyTorch's
    ``Variable._execution_engine.queue_callback``): after every node and every leaf's
    accumulation, in the order queued; a callback may queue another."""
    if _TASK.id == -1:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _TASK.callbacks.append(callback)


_TASK = _TaskState()
_TASK_IDS = itertools.count(1)


def current_graph_task_id() -> int:
    """The id of the innermost backward (``run_backward`` call) running in this thread, -1
    outside any (PyTorch's ``torch._C._current_graph_task_id``). The non-reentrant checkpoint
    recomputes a region once per backward that needs it."""
    return _TASK.id


def will_engine_execute_node(node) -> bool:
    """Whether the backward running in this thread will run ``node`` (PyTorch's
    ``torch._C._will_engine_execute_node``): it is reachable from the backward's roots and,
    when ``inputs`` restrict the run, leads to one of them. ``register_multi_grad_hook``
    counts the gradients it waits for with it."""
    run = _TASK.run
    if run is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward "
                           "pass")
    roots, needed, reach = run
    if needed is not None:
        return node in needed
    if not reach:  # the set of nodes reachable from the roots, built on the first question
        stack = [n for n, _ in roots if n is not None]
        reach.update(stack)
        while stack:
            for nxt, _ in stack.pop().next_functions:
                if nxt is not None and nxt not in reach:
                    reach.add(nxt)
                    stack.append(nxt)
    return node in reach


#: ``ember.profiler``'s hook: while a profiler records on some thread, ``PROFILING[0]`` is
#: true and ``PROFILED.recorder`` is the recorder of the threads it records (one check per
#: backward call when no profiler is active)
PROFILING = [False]
PROFILED = threading.local()


def _in_layout_of(vd, gd, taken: set):
    """The first gradient of a leaf that is not C-contiguous, as PyTorch's AccumulateGrad
    lays it out (its layout contract): a dense leaf (channels-last, a permuted layout) gets
    ``.grad`` with its own strides, stealing ``gd`` when it already has them; any other leaf
    a C-contiguous copy."""
    order = _mf.preserve_order(vd)
    if vd.strides != _mf.dense_strides(vd.shape, order, vd.itemsize):  # overlapping or gaps
        return gd if id(gd) not in taken and _owned(gd) else gd.copy()
    if gd.strides == vd.strides and id(gd) not in taken and _owns_memory(gd):
        return gd
    return _mf.copy_as(gd, order)


def _owns_memory(a) -> bool:
    """``a`` owns its memory, or is a permutation of an array that does (a fresh result
    laid out channels-last)."""
    if not getattr(a.flags, "writeable", True):
        return False
    base = a.base
    return a.flags.owndata or (base is not None and base.base is None and base.size == a.size
                               and base.flags.owndata)


def _owned(a) -> bool:
    flags = a.flags  # CuPy's flags have no ``writeable``: its arrays always are
    return flags.owndata and getattr(flags, "writeable", True) and flags.c_contiguous


def run_backward(roots, root_grads, retain_graph: bool, create_graph: bool,
                 inputs=None, accumulate: bool = True, allow_unused: bool = True):
    """Backpropagate ``root_grads`` from the ``roots`` edges.

    Inner nodes run from a heap in decreasing creation order (``seq``): every consumer of a
    node was created after it, so when a node is popped all its gradients have arrived and
    no dependency-counting pass is needed. Leaves (AccumulateGrad) are sinks and run last.
    ``inputs`` (edges) restrict the run; with ``accumulate=False`` their gradients are
    returned instead of accumulated into ``.grad`` (``autograd.grad``).
    """
    buffers: dict = {}
    heap: list = []
    leaves: list = []
    for (node, nr), g in zip(roots, root_grads):
        if node is None:
            continue
        if node not in buffers:
            _discover(node, heap, leaves)
        if node._n_out == 1:
            buffers[node] = _add(buffers.get(node), g)
        else:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._n_out
            buf[nr] = _add(buf[nr], g)
        buffers.setdefault(node, None)

    capture = needed = None
    if inputs is not None:
        root_nodes = [n for n, _ in roots]
        targets = {n for n, _ in inputs if n is not None}
        needed = _needed_nodes(root_nodes, targets)
        needed.update(targets)
        capture = {e: None for e in inputs}

    taken = {id(g._data) for g in root_grads if g is not None}
    prev_mode = GRAD.enabled
    GRAD.enabled = create_graph
    task = _TASK
    prev_task, prev_run, prev_callbacks = task.id, task.run, task.callbacks
    task.id = next(_TASK_IDS)
    task.run = (roots, needed, set())
    prev_needed = PRUNED.needed
    PRUNED.needed = needed
    task.callbacks = callbacks = []
    anomaly = ANOMALY_THREADS[0] and GRAD.anomaly
    recorder = getattr(PROFILED, "recorder", None) if PROFILING[0] else None
    vmapped = _vmapped_backward(root_grads)
    pop = heapq.heappop
    push = heapq.heappush
    try:
        while heap:
            node = pop(heap)[1]
            grad = buffers.pop(node)
            single = node._n_out == 1
            if needed is not None and (node not in needed or not _leads_further(node, needed)):
                if node in needed:
                    # an input that is not run: its tensors' hooks and retained grads still
                    # see (and may replace) the gradient captured, as in PyTorch
                    if node._pre_hooks or node._retain:
                        grad = _apply_pre_hooks(node, grad, node_hooks=False)
                    _capture(capture, node, grad, single)
                continue
            if node._pre_hooks:
                grad = _apply_pre_hooks(node, grad)  # (the retained grads among them)
            elif node._retain:
                _retain_grads(node, grad, node._retain)
            if capture is not None:
                _capture(capture, node, grad, single)
            if node.versions is not None or node.out_vc is not None:
                node._check_versions()
            elif node.saved is None:
                raise RuntimeError(Node._freed_msg)
            if grad is None or (not single and all(g is None for g in grad)):
                grads_in = (None,) * len(node.next_functions)
            else:
                if not single:
                    grad = _fill_missing(node, grad)
                if vmapped is not None:
                    grads_in = vmapped(node, grad, _call_backward_anomaly if anomaly else
                                       recorder.backward_node if recorder is not None else None)
                elif anomaly:
                    grads_in = _call_backward_anomaly(node, grad)
                elif recorder is not None:
                    grads_in = recorder.backward_node(node, grad)
                else:
                    grads_in = node.backward(grad)
                    if grads_in.__class__ is not tuple:
                        grads_in = (grads_in,)
            if node._hooks:
                gout = (grad,) if single else tuple(grad)
                for fn in list(node._hooks.values()):
                    gin = tuple(grads_in)
                    res = fn(gin, gout)
                    if res is not None:
                        _check_hook_results(fn, gin, res)
                        grads_in = res
            if not retain_graph and (node.saved or node.out_data is not None):
                # only what was saved is freed: a node that saved nothing can run again
                node.saved = None
                node.out_data = None
            for (nxt, nr), g in zip(node.next_functions, grads_in):
                if nxt is None:
                    continue
                if nxt in buffers:
                    if g is None:
                        continue
                    if nxt._n_out == 1:
                        prev = buffers[nxt]
                        buffers[nxt] = g if prev is None else prev + g
                        continue
                    buf = buffers[nxt]
                else:
                    if nxt.seq:
                        push(heap, (-nxt.seq, nxt))
                    else:
                        leaves.append(nxt)
                    if nxt._n_out == 1:
                        buffers[nxt] = g
                        continue
                    buf = buffers[nxt] = [None] * nxt._n_out
                if g is not None:
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
        for node in leaves:
            grad = buffers.pop(node)
            if needed is not None and node not in needed:
                continue
            if node._pre_hooks:
                grad = _apply_pre_hooks(node, grad)
            if capture is not None:
                _capture(capture, node, grad, True)
            if accumulate:
                if recorder is not None:
                    recorder.accumulate_leaf(_accumulate_leaf, node, grad, create_graph, taken)
                else:
                    _accumulate_leaf(node, grad, create_graph, taken)
                if node._hooks:  # the node's post-hooks: no grad_inputs, its grad_outputs
                    for fn in list(node._hooks.values()):
                        res = fn((), (grad,))
                        if res is not None:
                            _check_hook_results(fn, (), res)
        while callbacks:  # (a callback may queue another)
            callbacks.pop(0)()
    finally:
        GRAD.enabled = prev_mode
        task.id, task.run, task.callbacks = prev_task, prev_run, prev_callbacks
        PRUNED.needed = prev_needed
    if capture is not None:
        return [capture[e] for e in inputs]
    return None


def _vmapped_backward(root_grads):
    """``ember._functorch._batched.backward_node`` when some root gradient is batched by vmap
    (the gradients then flow back batched, each node's backward run on the whole batch where
    it can be), else None."""
    for g in root_grads:
        if g is not None and g.__class__ is not _Tensor:
            from .._functorch import _batched

            if _batched.has_batched(root_grads):
                return _batched.backward_node
            return None
    return None


def _discover(node, heap, leaves) -> None:
    if node.seq:
        heapq.heappush(heap, (-node.seq, node))
    else:
        leaves.append(node)


def _capture(capture, node, grad, single) -> None:
    for e in capture:
        if e[0] is node:
            capture[e] = grad if single else grad[e[1]]


def _leads_further(node, needed) -> bool:
    return any(n is not None and n in needed for n, _ in node.next_functions)


def _fill_missing(node, grads):
    # multi-output nodes get zeros for outputs that received no gradient
    shapes = node.ctx["out_shapes"] if isinstance(node.ctx, dict) and "out_shapes" in node.ctx \
        else None
    if shapes is None:
        return grads
    from .. import _factory

    like = next(g for g in grads if g is not None)
    return [g if g is not None else _factory.zeros(shapes[i], dtype=like.dtype,
                                                   device=like.device)
            for i, g in enumerate(grads)]


def _call_backward_anomaly(node, grad):
    try:
        out = node.backward(grad)
    except Exception as exc:
        trace = getattr(node, "_anomaly_trace", None)
        if trace:
            import warnings

            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                          f"caused the error:\n{trace}", stacklevel=2)
        raise exc
    if not isinstance(out, tuple):
        out = (out,)
    if GRAD.anomaly_check_nan:
        _check_nan(node, out)
    return out


def _check_nan(node, grads):
    import numpy as np

    for i, g in enumerate(grads):
        if g is None:
            continue
        xp_isnan = g._data != g._data
        if bool(xp_isnan.any()) if not isinstance(xp_isnan, np.bool_) else bool(xp_isnan):
            trace = getattr(node, "_anomaly_trace", None)
            if trace:
                import warnings

                warnings.warn(f"Error detected in {node.name()}. Traceback of forward call "
                              f"that caused the error:\n{trace}", stacklevel=3)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")


def _retain_grads(node, grad, retain):
    for nr, ref in list(retain.items()):
        t = ref()
        if t is None:
            continue
        g = grad[nr] if node._n_out != 1 else grad
        if g is None:
            continue
        old = getattr(t, "_grad", None)
        t._grad = g.detach() if old is None else (old + g).detach()


__all__ += ["accumulate_node", "current_graph_task_id", "will_engine_execute_node"]
