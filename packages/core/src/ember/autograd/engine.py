"""The backward engine: walks the recorded graph from the outputs to the leaves.

``run_backward`` counts each node's consumers, then runs nodes when all their gradients
have arrived, summing gradients that meet at a node. With ``create_graph`` the backward
functions run with grad mode on, so the gradients carry a graph of their own.
"""

from __future__ import annotations

from .graph import AccumulateGrad, _ANOMALY, accumulate_node
from .grad_mode import GRAD

__all__ = ["run_backward"]


def _collect_dependencies(roots):
    deps: dict = {}
    seen = set()
    stack = [n for n in roots if n is not None]
    for n in stack:
        seen.add(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed_nodes(roots, targets):
    """Nodes from which some target node is reachable (for ``autograd.grad``)."""
    needed = set()
    memo: dict = {}
    for root in roots:
        if root is None:
            continue
        stack = [(root, iter(root.next_functions))]
        path = {root}
        while stack:
            node, it = stack[-1]
            advanced = False
            for nxt, _ in it:
                if nxt is None or nxt in path:
                    continue
                if nxt in memo:
                    if memo[nxt]:
                        needed.add(node)
                    continue
                stack.append((nxt, iter(nxt.next_functions)))
                path.add(nxt)
                advanced = True
                break
            if not advanced:
                stack.pop()
                path.discard(node)
                hit = node in targets or node in needed
                memo[node] = hit
                if hit:
                    needed.add(node)
                    if stack:
                        needed.add(stack[-1][0])
    return needed


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _apply_pre_hooks(node, grad):
    multi = node._n_out != 1
    for nr, fn in list(node._pre_hooks.values()):
        if nr == -1:  # node-level pre-hook sees the tuple of output grads
            grads = tuple(grad) if multi else (grad,)
            res = fn(grads)
            if res is not None:
                grad = list(res) if multi else res[0]
            continue
        g = grad[nr] if multi else grad
        if g is None:
            continue
        res = fn(g)
        if res is not None:
            if multi:
                grad[nr] = res
            else:
                grad = res
    return grad


def _accumulate_leaf(node: AccumulateGrad, grad, create_graph: bool) -> None:
    var = node._variable()
    if var is None or grad is None:
        return
    from .._tensor import _make

    gd = grad._data
    if gd.dtype is not var._data.dtype:
        gd = gd.astype(var._data.dtype)
    if gd.shape != var._data.shape:
        raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got "
                           f"{list(gd.shape)} but expected shape compatible with "
                           f"{list(var._data.shape)}")
    old = getattr(var, "_grad", None)
    if create_graph:
        new = grad if old is None else old + grad
    elif old is None:
        # own a fresh, writable, contiguous buffer: grads may be broadcast views or shared
        if grad.grad_fn is not None or grad.requires_grad:
            grad = grad.detach()
        new = _make(gd.copy() if not _owned(gd) else gd, var._device)
    else:
        if old.requires_grad or not old._data.flags.writeable:
            new = _make(old._data + gd, var._device)
        else:
            old._data += gd
            new = old
    var._grad = new
    post = getattr(var, "_extra", None)
    if post and post.get("post_hooks"):
        for fn in list(post["post_hooks"].values()):
            fn(var)


def _owned(a) -> bool:
    flags = a.flags
    return flags.owndata and flags.writeable and flags.c_contiguous


def run_backward(roots, root_grads, retain_graph: bool, create_graph: bool,
                 inputs=None, accumulate: bool = True, allow_unused: bool = True):
    """Backpropagate ``root_grads`` from the ``roots`` edges.

    ``inputs`` (edges) restrict the run; with ``accumulate=False`` their gradients are
    returned instead of accumulated into ``.grad`` (``autograd.grad``).
    """
    root_nodes = [n for n, _ in roots]
    deps = _collect_dependencies(root_nodes)
    buffers: dict = {}
    for (node, nr), g in zip(roots, root_grads):
        if node is None:
            continue
        if node._n_out == 1:
            buffers[node] = _add(buffers.get(node), g)
        else:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._n_out
            buf[nr] = _add(buf[nr], g)

    capture = None
    needed = None
    if inputs is not None:
        capture = {}
        targets = {n for n, _ in inputs if n is not None}
        needed = _needed_nodes(root_nodes, targets)
        for n, _ in inputs:
            if n is not None:
                needed.add(n)
        capture = {edge: None for edge in inputs}

    ready = [n for n in dict.fromkeys(root_nodes) if n is not None and deps.get(n, 0) == 0]
    prev_mode = GRAD.enabled
    GRAD.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            if needed is not None and node not in needed:
                _release_children(node, deps, ready, needed)
                continue
            if getattr(node, "_pre_hooks", None):
                grad = _apply_pre_hooks(node, grad)
            retain = getattr(node, "_retain", None)
            if retain:
                _retain_grads(node, grad, retain)
            if capture is not None:
                for e in capture:
                    if e[0] is node:
                        g = grad[e[1]] if node._n_out != 1 else grad
                        capture[e] = g
            if node.__class__ is AccumulateGrad:
                if accumulate and (inputs is None or node in needed):
                    _accumulate_leaf(node, grad, create_graph)
                continue
            if capture is not None and not _leads_further(node, needed):
                _release_children(node, deps, ready, needed)
                continue
            if node.saved is None:
                raise RuntimeError(Node_freed_msg)
            if node.versions is not None or getattr(node, "out_vc", None) is not None:
                node._check_versions()
            if grad is None or (node._n_out != 1 and all(g is None for g in grad)):
                grads_in = (None,) * len(node.next_functions)
            else:
                if node._n_out != 1:
                    grad = _fill_missing(node, grad)
                grads_in = _call_backward(node, grad)
            if getattr(node, "_hooks", None):
                gout = tuple(grad) if node._n_out != 1 else (grad,)
                for fn in list(node._hooks.values()):
                    res = fn(tuple(grads_in), gout)
                    if res is not None:
                        grads_in = tuple(res)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, grads_in):
                if nxt is None:
                    continue
                if g is not None:
                    if nxt._n_out == 1:
                        prev = buffers.get(nxt)
                        buffers[nxt] = g if prev is None else prev + g
                    else:
                        buf = buffers.get(nxt)
                        if buf is None:
                            buf = buffers[nxt] = [None] * nxt._n_out
                        buf[nr] = g if buf[nr] is None else buf[nr] + g
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    ready.append(nxt)
    finally:
        GRAD.enabled = prev_mode
    if capture is not None:
        return [capture[e] for e in inputs]
    return None


Node_freed_msg = AccumulateGrad._freed_msg


def _leads_further(node, needed) -> bool:
    return any(n is not None and n in needed for n, _ in node.next_functions)


def _release_children(node, deps, ready, needed):
    for nxt, _ in node.next_functions:
        if nxt is None:
            continue
        left = deps[nxt] - 1
        deps[nxt] = left
        if left == 0:
            ready.append(nxt)


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


def _call_backward(node, grad):
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
    if _ANOMALY[0]:
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


__all__ += ["accumulate_node"]
