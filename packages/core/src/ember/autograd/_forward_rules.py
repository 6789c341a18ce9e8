"""Forward AD's tangent rules: the tangent of an op's output, derived from the op's backward
node (``forward_ad`` decides when; this module computes).

For every op, exactly (the double-vjp trick): with ``u`` a zero tensor of the output's
shape that requires grad, ``g(u) = node.backward(u)`` is ``J^T u``, linear in ``u`` and
recorded because backwards are written in Tensor ops; then ``J v = d/du <g(u), v>``. That
is right wherever the backward is right, for ops with several inputs and outputs alike.

Fast rules for the elementwise ops built by ``ops._factories`` (most of the hot ones), on
real dtypes: a unary op's Jacobian is diagonal, so ``J v = J^T v = node.backward(v)``; a
binary op whose inputs have the output's shape and dtype has two diagonal blocks, so
``J v = backward(v_a)[0] + backward(v_b)[1]``. A scalar output (losses, full reductions)
takes one backward call: ``J v = <backward(1), v>``; so does each element of a small output
whose backward cannot itself be differentiated. None of these records a graph.
"""

from __future__ import annotations

import re

from .. import _dtype
from .._device import xp_of
from .._tensor import _make
from . import graph as _graph
from .grad_mode import GRAD

__all__ = ["output_tangent"]

_INEXACT = _dtype.FLOATING_NP | getattr(_dtype, "COMPLEX_NP", frozenset())
_REAL = _dtype.FLOATING_NP


def _sink_bw(node, grad):  # pragma: no cover - never run: nothing is reached through it
    return ()


#: the edge every input with a tangent gets while its node's backward runs for a tangent:
#: the backward then computes that input's gradient (``needs_grad``), and the recorded graph
#: of ``g(u)`` stops there instead of reaching into the whole forward graph
_SINK = _graph.new_node(_graph.make_node_class("ForwardADSink", _sink_bw))
_SINK.next_functions = ()
_SINK.saved = ()
_SINK.versions = None
_SINK.ctx = None
_SINK.device = None
_SINK_EDGE = (_SINK, 0)

_FAST: dict = {}  # node class -> "unary" | "binary" (built on first use from the registry)


def _fast_kind(cls):
    if not _FAST:
        from ..ops.registry import OPS

        for info in OPS.values():
            fn = info.fn
            node = getattr(fn, "_node", None)
            if node is not None and hasattr(fn, "_fwd"):
                _FAST[node] = "binary" if hasattr(fn, "_kind") else "unary"
        _FAST[None] = None
    return _FAST.get(cls)


def output_tangent(node, nr: int, out, tangents):
    """The tangent of output ``nr`` (the tensor ``out``) of ``node`` when its inputs carry
    ``tangents`` (one tangent or None per input), or None for a non-float output."""
    od = out._data
    if od.dtype not in _INEXACT:
        return None
    # the tangent is differentiable (recorded) when a tangent requires grad, or when the op's
    # inputs really do (not only as dual tensors): then through the saved values themselves,
    # so that its gradient reaches the primals (d(2 x v)/dx = 2 v for x ** 2)
    real = node._fw_real
    create = real or any(v is not None and v.requires_grad for v in tangents)
    edges = node.next_functions
    saved = node.saved
    if saved is None:
        raise RuntimeError(node._freed_msg)
    node.next_functions = tuple(_SINK_EDGE if v is not None or e[0] is not None else e
                                for e, v in zip(edges, tangents))
    if saved and not real:
        node.saved = tuple(_leaf(s) if isinstance(s, _graph._Tensor) else s for s in saved)
    prev = GRAD.enabled
    try:
        kind = _fast_kind(type(node))
        if kind is not None and od.dtype in _REAL:
            t = _fast(kind, node, out, tangents, create)
            if t is not None:
                return t
        rule = _RULES.get(type(node)) if _RULES else _rules().get(type(node))
        if rule is not None and od.dtype in _REAL:
            GRAD.enabled = create
            t = rule(node, out, tangents)
            if t is not None:
                return t
        if od.size == 1 and od.dtype in _REAL:
            return _by_rows(node, nr, out, tangents, create)
        try:
            return _double_vjp(node, nr, out, tangents, create)
        except RuntimeError:
            # a backward that is not itself differentiable (it raises when recorded through)
            if od.size > _MAX_ROWS or od.dtype not in _REAL:
                raise
        return _by_rows(node, nr, out, tangents, create)
    finally:
        GRAD.enabled = prev
        node.next_functions = edges
        node.saved = saved


# -- explicit rules for hot ops that are not elementwise (real dtypes) -------------------------
# (each returns ``J v`` from the node's saved values and ctx, or None for the general rule;
# the double-vjp trick costs a recorded backward and a grad call per op)

def _add(r, t):
    return t if r is None else r + t


def _product_rule(node, out, tangents):
    """``a @ b`` (mm, matmul, bmm, mv, dot): ``va @ b + a @ vb``."""
    saved = node.saved
    if len(saved) != 2 or saved[0] is None or saved[1] is None:
        return None
    a, b = saved
    va, vb = tangents
    # ``a @ vb`` first, as PyTorch's compiled formula evaluates it: its dtype error (a
    # tangent of another dtype) names the primal's dtype first
    r = None if vb is None else a.matmul(vb)
    if va is not None:
        r = va.matmul(b) if r is None else va.matmul(b) + r
    return r


def _linear_rule(node, out, tangents):
    """``F.linear``'s product ``b + x @ wt`` (inputs ``(b, x, wt)``, or ``(x, wt)``)."""
    x, w = node.saved
    k = len(tangents) - 2
    vb = tangents[0] if k else None
    vx, vwt = tangents[k], tangents[k + 1]
    r = None if vx is None else vx.matmul(w.t())
    if vwt is not None:
        r = _add(r, x.matmul(vwt))
    if vb is not None:
        r = vb.expand(tuple(out.shape)) if r is None else r + vb
    return r


def _sum_rule(node, out, tangents):
    shape, dims, keepdim = node.ctx[:3]
    v = tangents[0]
    if v is None or tuple(v.shape) != tuple(shape):
        return None
    r = v.sum() if dims is None else v.sum(dims, keepdim=keepdim)
    return r.reshape(tuple(out.shape))


def _mean_rule(node, out, tangents):
    r = _sum_rule(node, out, tangents)
    return None if r is None else r / node.ctx[3]


def _softmax_rule(node, out, tangents):
    v = tangents[0]
    if v is None or node.ctx.__class__ is not int:
        return None
    return out * (v - (out * v).sum(node.ctx, keepdim=True))


def _log_softmax_rule(node, out, tangents):
    v = tangents[0]
    if v is None or node.ctx.__class__ is not int:
        return None
    return v - (out.exp() * v).sum(node.ctx, keepdim=True)


#: node class -> rule (filled on first use: the ops import after this module)
_RULES: dict = {}


def _rules() -> dict:
    from ..ops import activation, linalg, linear_op, reduction

    for cls in (linalg.MmBackward0, linalg.BmmBackward0,
                linalg.MvBackward0, linalg.DotBackward0, linalg._MatmulSqueeze,
                linalg._MatmulClone, linalg._MatmulUnsafeView):
        _RULES[cls] = _product_rule
    _RULES[linear_op.AddmmBackward0] = _RULES[linear_op.MmBackward0] = _linear_rule
    _RULES[reduction.SumBackward0] = _RULES[reduction.SumBackward1] = _sum_rule
    _RULES[reduction.MeanBackward0] = _RULES[reduction.MeanBackward1] = _mean_rule
    _RULES[activation.SoftmaxBackward0] = _softmax_rule
    _RULES[activation.LogSoftmaxBackward0] = _log_softmax_rule
    return _RULES


def _leaf(t):
    """``t``'s data as a leaf that requires grad as ``t`` does (backwards read it to skip
    gradients), so that ``g(u)``'s graph does not reach into ``t``'s history."""
    leaf = _make(t._data, t._device)
    leaf.requires_grad = t.requires_grad
    return leaf


def _as_tuple(gs):
    return tuple(gs) if isinstance(gs, (tuple, list)) else (gs,)


def _fast(kind, node, out, tangents, create):
    od = out._data
    for v in tangents:
        if v is not None and (v._data.shape != od.shape or v._data.dtype is not od.dtype):
            return None
    GRAD.enabled = create
    if kind == "unary":
        return _as_tuple(node.backward(tangents[0]))[0]
    if node.ctx is not None:  # broadcast or promoted inputs: the general rule
        return None
    total = None
    for i, v in enumerate(tangents):
        if v is not None:
            g = _as_tuple(node.backward(v))[i]
            if g is not None:
                total = g if total is None else total + g
    return total if total is not None else _zeros(out)


def _zeros(out):
    d = out._data
    return _make(xp_of(d).zeros(d.shape, d.dtype), out._device)


def _ones(out):
    d = out._data
    return _make(xp_of(d).ones(d.shape, d.dtype), out._device)


def _double_vjp(node, nr, out, tangents, create):
    from . import grad as _grad  # ember.autograd imports this module's importer

    GRAD.enabled = True
    # g is linear in u, so d/du <g(u), v> is the same at every u: ones, not zeros, keeps
    # backwards that take the log of the gradient (logcumsumexp's) finite
    u = _ones(out)
    u.requires_grad = True
    n = node._n_out
    if n == 1:
        gs = node.backward(u)
    else:
        grads = [None] * n
        grads[nr] = u
        gs = node.backward(grads)
    total = None
    for g, v in zip(_as_tuple(gs), tangents):
        if g is None or v is None:
            continue
        if not g.requires_grad:
            if not bool((g._data != 0).any()):
                continue  # a constant zero gradient: this input does not move the output
            raise RuntimeError(_unsupported(node))
        term = (g * v).sum() if g._data.dtype in _REAL else (g.conj() * v).real.sum()
        total = term if total is None else total + term
    if total is None:
        return _zeros(out)
    (tu,) = _grad(total, u, allow_unused=True, create_graph=create)
    if tu is None:
        return _zeros(out)
    # complex: with backward(u) = J^H u and <a, b> = Re(sum(conj(a) b)), PyTorch's gradient
    # of the real <g(u), v> with respect to u (d/dRe + i d/dIm) is J v itself
    return tu if create else tu.detach()


#: the largest output whose tangent is computed one element at a time when the backward
#: cannot be differentiated (one backward call per element)
_MAX_ROWS = 4096


def _by_rows(node, nr, out, tangents, create):
    """``J v`` one element at a time: element k is ``<backward(e_k), v>``. One backward call
    for a scalar output (a loss, a full reduction), and needs no differentiable backward."""
    d = out._data
    xp = xp_of(d)
    GRAD.enabled = create
    flat = []
    n = node._n_out
    for k in range(d.size):
        e = xp.zeros(d.size, d.dtype)
        e[k] = 1
        u = _make(e.reshape(d.shape), out._device)
        if n == 1:
            gs = node.backward(u)
        else:
            grads = [None] * n
            grads[nr] = u
            gs = node.backward(grads)
        total = None
        for g, v in zip(_as_tuple(gs), tangents):
            if g is not None and v is not None:
                term = (g * v).sum()
                total = term if total is None else total + term
        flat.append(total if total is not None else _make(xp.zeros((), d.dtype), out._device))
    from .. import stack

    if len(flat) == 1:
        return flat[0].reshape(d.shape).to(out.dtype)
    return stack(flat).reshape(d.shape).to(out.dtype)


def _unsupported(node) -> str:
    name = re.sub(r"Backward\d*$", "", node.name())
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return (f"Trying to use forward AD with {name} that does not support it because it has "
            "not been implemented yet.")
