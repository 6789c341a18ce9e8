"""The recorded graph: ``Node`` (a grad_fn), ``AccumulateGrad`` and the recording helpers.

Every differentiable op owns a ``Node`` subclass named like PyTorch's (``MulBackward0``)
whose ``backward(node, grad)`` is written with Tensor ops, so that running it with grad mode
on (``create_graph=True``) records the graph of the gradient itself.
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref

from .. import _dtype
from .._format import shape_str
from .._tensor import Tensor as _Tensor
from .._tensor import _make
from .grad_mode import ANOMALY_THREADS, GRAD

# make_node_class and record are core's internals; other distributions use ember.ops.api
__all__ = ["Node", "AccumulateGrad", "RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` takes the hook out again."""

    _ids = itertools.count()  # next() on a count is atomic: threads never share an id

    def __init__(self, hooks_dict: dict):
        self._hooks = weakref.ref(hooks_dict) if hooks_dict is not None else None
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        hooks = self._hooks() if self._hooks is not None else None
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that ``weakref.ref`` accepts."""

    __slots__ = ("__weakref__",)


class Node:
    """A node of the backward graph (``tensor.grad_fn``)."""

    __slots__ = ("next_functions", "saved", "versions", "ctx", "device", "seq", "__weakref__",
                 "__dict__")
    _n_out = 1
    # rare fields: class-level defaults, set per instance (in __dict__) only when used
    out_data = None  # the op's output array, for ``output()``
    out_vc = None  # (version counter of the output, version at save)
    _pre_hooks = None
    _hooks = None
    _retain = None
    _anomaly_trace = None
    _fw = None  # forward AD: this node's tangents at the active dual level (forward_ad.py)
    _freed_msg = ("Trying to backward through the graph a second time (or directly access saved "
                  "tensors after they have already been freed). Saved intermediate values of the "
                  "graph are freed when you call .backward() or autograd.grad(). Specify "
                  "retain_graph=True if you need to backward through the graph a second time or "
                  "if you need to access saved tensors after calling backward.")

    def backward(self, grad):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def name(self) -> str:
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        """A dict of this node's own (``grad_fn.metadata``, as in PyTorch)."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def __call__(self, *grads):
        return self.backward(grads[0] if self._n_out == 1 else list(grads))

    def needs_grad(self, i: int) -> bool:
        """Whether input ``i`` of this op takes a gradient (skip computing it otherwise)."""
        return self.next_functions[i][0] is not None

    # -- saved values ----------------------------------------------------------------
    @property
    def saved_tensors(self):
        if self.saved is None:
            raise RuntimeError(self._freed_msg)
        return self.saved

    def output(self, requires_grad_graph: bool = True):
        """The op's (single) output, rebuilt from the saved array during backward."""
        data = self.out_data
        if data is None:
            raise RuntimeError(self._freed_msg)
        t = _make(data, self.device)
        if GRAD.enabled and requires_grad_graph:
            t.requires_grad = True
            t.grad_fn = self
        return t

    def release(self) -> None:
        self.saved = None
        self.out_data = None

    def _check_versions(self) -> None:
        saved = self.saved
        if saved is None:
            raise RuntimeError(self._freed_msg)
        versions = self.versions
        if versions:
            for t, v in zip(saved, versions):
                if v is not None:
                    vc = t._vc
                    if (vc[0] if vc is not None else 0) != v:
                        raise RuntimeError(_modified_msg(t, v, self))
        out_vc = self.out_vc
        if out_vc is not None and out_vc[1] != out_vc[0][0]:
            d = self.out_data
            raise RuntimeError(_modified_text(_describe(d.dtype, d.shape, self, 0),
                                              out_vc[0][0], out_vc[1]))

    # -- hooks -----------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward."""
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = _HookDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node's backward; may return new grads."""
        return self._add_pre_hook(-1, fn)

    def _add_pre_hook(self, nr: int, fn):
        pre = self._pre_hooks
        if pre is None:
            pre = self._pre_hooks = _HookDict()
        handle = RemovableHandle(pre)
        pre[handle.id] = (nr, fn)
        return handle


def _modified_msg(t, expected, node) -> str:
    return _modified_text(_describe(t._data.dtype, t._data.shape, t.grad_fn, t._nr),
                          t._version, expected)


def _describe(np_dtype, shape, grad_fn, nr) -> str:
    """``[ember.FloatTensor [2, 3]], which is output 0 of Mul,`` as PyTorch names a tensor."""
    from .._dtype import legacy_type_name

    text = f"[ember.{legacy_type_name(np_dtype) or 'Tensor'} [{shape_str(shape)}]]"
    if grad_fn is not None:
        op = re.sub(r"Backward\d*$", "", grad_fn.name())
        text += f", which is output {nr} of {op},"
    return text


def _modified_text(described, version, expected) -> str:
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {described} is at version {version}; expected version "
            f"{expected} instead. Hint: enable anomaly detection to find the operation that "
            "failed to compute its gradient, with ember.autograd.set_detect_anomaly(True, "
            "check_nan=False).")


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("_variable",)

    def __init__(self, variable):
        self._variable = weakref.ref(variable)
        self.seq = 0  # a sink: the engine runs leaves after the heap of inner nodes
        self.next_functions = ()
        self.saved = ()
        self.versions = None

    @property
    def variable(self):
        return self._variable()

    def backward(self, grad):
        raise RuntimeError("AccumulateGrad is run by the engine")


def accumulate_node(t) -> AccumulateGrad:
    """The (cached) AccumulateGrad node of a leaf that requires grad.

    Made under a lock the first time, so that threads recording through the same leaf at
    once share one node (and the hooks registered on it)."""
    node = t._accum
    if node is None:
        with _ACCUM_LOCK:
            node = t._accum
            if node is None:
                node = t._accum = AccumulateGrad(t)
    return node


_ACCUM_LOCK = threading.Lock()


def edge(t):
    """The graph edge a tensor input contributes: ``(grad_fn, output_nr)`` or ``(None, 0)``."""
    if t is None or not t.requires_grad:
        return (None, 0)
    gf = t.grad_fn
    if gf is not None:
        return (gf, t._nr)
    return (accumulate_node(t), 0)


def make_node_class(name: str, backward, n_out: int = 1) -> type:
    """A Node subclass ``<name>`` whose backward is ``backward(node, grad)``."""
    return type(name, (Node,), {"__slots__": (), "backward": backward, "_n_out": n_out})


#: creation order of nodes: a node is always made after the nodes of its inputs, so the
#: engine runs nodes in decreasing ``seq`` and needs no dependency-counting pass
_SEQ = itertools.count(1)


def new_node(node_cls):
    """An empty node of ``node_cls`` stamped with its creation order (every node is made so)."""
    node = _new(node_cls)
    node.seq = next(_SEQ)
    return node


_new = object.__new__


_NO_EDGE = (None, 0)


# -- complex autograd ----------------------------------------------------------------------------
# PyTorch's convention: the gradient of a real loss L with respect to z = x + iy is
# dL/dx + i dL/dy (the conjugate Wirtinger derivative, times 2). For a holomorphic op with a
# real-case backward ``g * f'(z)`` (and for every linear op), the complex backward is
# ``conj(backward(conj(g)))`` = ``g * conj(f'(z))``: such ops name their node class in
# ``HOLOMORPHIC`` and need no complex code of their own. Non-holomorphic ops (abs, angle, real,
# imag, conj, the FFTs' real forms, ...) set ``_complex = "own"`` on a node class whose backward
# is right for complex numbers. Any other op recording a complex input or output raises, rather
# than return a wrong gradient.

_COMPLEX_NP = _dtype.COMPLEX_NP

#: node classes (by name) whose backward is holomorphic-or-linear in the sense above; ops may
#: add theirs with ``mark_holomorphic``
HOLOMORPHIC = {
    "AddBackward0", "AddmmBackward0", "AliasBackward0", "BmmBackward0", "CatBackward0",
    "CloneBackward0", "CosBackward0", "CoshBackward0", "CumprodBackward0", "CumsumBackward0",
    "DiagonalBackward0", "DivBackward0", "DotBackward0", "Exp2Backward0", "ExpBackward0",
    "ExpandBackward0", "Expm1Backward0", "FlipBackward0", "GatherBackward0", "IndexBackward0",
    "IndexSelectBackward0", "Log10Backward0", "Log1PBackward0", "Log2Backward0", "LogBackward0",
    "MatmulBackward0", "MeanBackward0", "MeanBackward1", "MmBackward0", "MulBackward0",
    "MvBackward0", "NegBackward0", "PermuteBackward0", "PowBackward0", "ProdBackward0",
    "ProdBackward1", "ReciprocalBackward0", "RepeatBackward0", "ReshapeAliasBackward0",
    "RollBackward0", "RsqrtBackward0", "RsubBackward0", "RsubBackward1", "SelectBackward0",
    "SigmoidBackward0", "SinBackward0", "SinhBackward0", "SliceBackward0",
    "SplitBackward0", "SplitWithSizesBackward0", "SqrtBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2", "StackBackward0",
    "SubBackward0", "SumBackward0", "SumBackward1", "TBackward0", "TakeBackward0",
    "TanBackward0", "TanhBackward0", "ToCopyBackward0", "TraceBackward0", "TransposeBackward0",
    "UnbindBackward0", "UnsafeViewBackward0", "UnsqueezeBackward0", "ViewBackward0",
}

_COMPLEX_VARIANTS: dict = {}


def mark_holomorphic(*node_classes) -> None:
    """Declare node classes whose backward is holomorphic-or-linear (see ``HOLOMORPHIC``)."""
    HOLOMORPHIC.update(c if isinstance(c, str) else c.__name__ for c in node_classes)
    _COMPLEX_VARIANTS.clear()


def complex_node_class(node_cls) -> type:
    """The node class a node of ``node_cls`` runs as when complex numbers flow through it:
    itself when its backward handles them, a conjugating subclass for holomorphic ops, and
    PyTorch-style refusal otherwise."""
    variant = _COMPLEX_VARIANTS.get(node_cls)
    if variant is not None:
        return variant
    if getattr(node_cls, "_complex", None) == "own":
        variant = node_cls
    elif node_cls.__name__ in HOLOMORPHIC:
        raw = node_cls.backward

        def backward(node, grad, _raw=raw):
            if isinstance(grad, list):
                out = _raw(node, [None if g is None else g.conj() for g in grad])
            else:
                out = _raw(node, None if grad is None else grad.conj())
            if isinstance(out, (tuple, list)):
                return type(out)(None if g is None else g.conj() for g in out)
            return None if out is None else out.conj()

        variant = type(node_cls.__name__, (node_cls,), {"__slots__": (), "backward": backward,
                                                         "_complex": "own"})
    else:
        raise RuntimeError(f"{node_cls.__name__}: the derivative for complex inputs or "
                           "outputs is not implemented in ember (autograd supports complex "
                           "numbers through the ops ember.autograd.graph.HOLOMORPHIC names "
                           "and those written for them)")
    _COMPLEX_VARIANTS[node_cls] = variant
    return variant


def result(arr, device, node_cls=None, inputs=(), saved=(), ctx=None,
           save_output: bool = False):
    """Wrap ``arr`` as an op's output on ``device``; when grad mode is on and one of
    ``inputs`` requires grad, record a ``node_cls`` node with an edge to each input.

    The one result-wrapping helper of every op (``ember.ops.api.result``). ``saved`` (tensors
    or other values) reaches the backward as ``node.saved``, ``ctx`` as ``node.ctx``;
    ``save_output`` keeps the output's array for ``node.output()`` without a cycle.
    """
    out = _make(arr, device)
    if node_cls is not None:
        for t in inputs:  # requires_grad first: the no-grad path skips the thread-local read
            if t is not None and t.requires_grad:
                if GRAD.enabled:
                    return record(node_cls, out, inputs, saved, ctx, save_output)
                break
    return out


def record(node_cls, out, inputs, saved=(), ctx=None, save_output: bool = False):
    """Attach a new ``node_cls`` node as ``out.grad_fn`` with edges to ``inputs``.

    ``saved`` are tensors (or scalars) the backward reads; tensors' versions are checked at
    backward. ``save_output`` keeps the output's array for ``node.output()`` without a
    reference cycle. This runs once per recorded op, so edges are built inline.
    """
    node = _new(node_cls)
    node.seq = next(_SEQ)
    edges = []
    cplx = out._data.dtype in _COMPLEX_NP
    for t in inputs:
        if t is None or not t.requires_grad:
            edges.append(_NO_EDGE)
            continue
        if t._data.dtype in _COMPLEX_NP:
            cplx = True
        if t.grad_fn is not None:
            edges.append((t.grad_fn, t._nr))
        else:
            acc = t._accum
            edges.append((acc if acc is not None else accumulate_node(t), 0))
    if cplx:
        node.__class__ = complex_node_class(node_cls)
    node.next_functions = tuple(edges)
    node.saved = saved
    if saved:
        versions = []
        for s in saved:
            if isinstance(s, _Tensor):
                vc = s._vc
                versions.append(vc[0] if vc is not None else 0)
            else:
                versions.append(None)
        node.versions = versions
    else:
        node.versions = None
    node.ctx = ctx
    node.device = out._device
    if save_output:
        node.out_data = out._data
        vc = out._vc
        if vc is None:
            vc = out._vc = [0]
        node.out_vc = (vc, vc[0])
    if ANOMALY_THREADS[0] and GRAD.anomaly:
        import traceback

        node._anomaly_trace = "".join(traceback.format_stack()[:-2])
    out.requires_grad = True
    out.grad_fn = node
    if _FW_HOOK is not None:  # forward AD: a dual level is active (forward_ad.py)
        _FW_HOOK(node, out, inputs)
    return out


#: forward AD's recording hook ``hook(node, out, inputs)``, set only while a dual level is
#: active (``ember.autograd.forward_ad``): outside forward AD it costs one global read per
#: recorded op and nothing on the no-grad path
_FW_HOOK = None
