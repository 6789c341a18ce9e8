"""The recorded graph: ``Node`` (a grad_fn), ``AccumulateGrad`` and the recording helpers.

Every differentiable op owns a ``Node`` subclass named like PyTorch's (``MulBackward0``)
whose ``backward(node, grad)`` is written with Tensor ops, so that running it with grad mode
on (``create_graph=True``) records the graph of the gradient itself.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _dtype
from .. import overrides as _overrides
from .._forksafe import reinit_in_child
from .._format import shape_str
from .._tensor import Tensor as _Tensor
from .._tensor import _make
from ..utils.hooks import RemovableHandle  # the one handle class, as torch.autograd.graph's
from .grad_mode import ANOMALY_THREADS, GRAD

# make_node_class and record are core's internals; other distributions use ember.ops.api
__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "GradientEdge", "get_gradient_edge", "increment_version",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors"]


class _Pruned(threading.local):
    #: the nodes through which the innermost ``autograd.grad(..., inputs)`` on this thread
    #: reaches its inputs (None: a backward without inputs, or none running)
    needed = None


PRUNED = _Pruned()


class _HookDict(dict):
    """A dict that ``weakref.ref`` accepts."""

    __slots__ = ("__weakref__",)


#: nodes PyTorch implements in C++ and names with their namespace in its messages
_CPP_NAMES = {"AccumulateGrad": "ember::autograd::AccumulateGrad",
              "CopySlices": "ember::autograd::CopySlices"}


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
    #: forward AD: whether the graph below this node reaches a tensor that really requires
    #: grad (dual tensors require grad only to be recorded): then tangents computed through
    #: it are differentiable with respect to the primals, as PyTorch's are
    _fw_real = True
    _freed_msg = ("Trying to backward through the graph a second time (or directly access saved "
                  "tensors after they have already been freed). Saved intermediate values of the "
                  "graph are freed when you call .backward() or autograd.grad(). Specify "
                  "retain_graph=True if you need to backward through the graph a second time or "
                  "if you need to access saved tensors after calling backward.")

    def backward(self, grad):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def name(self) -> str:
        return type(self).__name__

    def _sequence_nr(self) -> int:
        """This node's creation order (PyTorch's sequence number)."""
        return self.seq or 0

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
        if len(grads) != self._n_out:
            raise TypeError(f"expected {self._n_out} arguments, got {len(grads)} instead")
        res = self.backward(grads[0] if self._n_out == 1 else list(grads))
        # PyTorch's: one gradient is returned as it is, several as a tuple
        if res.__class__ is tuple and len(res) == 1:
            return res[0]
        return res

    def needs_grad(self, i: int) -> bool:
        """Whether input ``i`` of this op takes a gradient (skip computing it otherwise): it
        has an edge, and, in ``autograd.grad(..., inputs)``, the edge leads to an input
        (PyTorch's ``should_compute_output``: ``jvp``'s double backward asks only for the
        gradient of a dummy cotangent, not for the weights' that its graph also reaches).
        A node outside the run's graph (one that ``CopySlices`` runs for an in-place op on a
        view: its edges are not the graph's) computes every gradient it has an edge for."""
        fn = self.next_functions[i][0]
        if fn is None:
            return False
        needed = PRUNED.needed
        return needed is None or fn in needed or self not in needed

    # -- saved values ----------------------------------------------------------------
    # (no public ``saved_tensors`` here: PyTorch's built-in nodes have none, only custom
    # Functions' (``function.py``), and tools such as torchviz tell the two apart by it)
    def _unpacked_saved(self):
        """What the op saved for backward (unpacked by its saved-tensor hooks, if any)."""
        saved = self.saved
        if saved is None:
            raise RuntimeError(self._freed_msg)
        if saved.__class__ is _Packed:
            return saved.unpacked()
        return saved

    def __getattr__(self, name: str):
        # PyTorch's named saved values (``grad_fn._saved_self``, ``_saved_other``,
        # ``_saved_result``): only missing attributes reach here
        if name.startswith("_saved_"):
            return _named_saved(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def output(self, requires_grad_graph: bool = True):
        """The op's (single) output, rebuilt from the saved array during backward."""
        data = self.out_data
        if data is None:
            raise RuntimeError(self._freed_msg)
        if data.__class__ is _Slot:  # packed by saved-tensor hooks: outside a backward
            data = _unpack_slot(data, self)
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
        op = grad_fn.name()
        op = _CPP_NAMES.get(op) or re.sub(r"Backward\d*$", "", op)
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

    def __call__(self, *grads):
        """Called directly (``acc(grad)``): accumulates ``grad`` into the leaf's ``.grad``,
        returning no gradients, as PyTorch's."""
        if len(grads) != 1:
            raise TypeError(f"expected 1 arguments, got {len(grads)} instead")
        from .engine import _accumulate_leaf

        g = grads[0]
        # (the caller's array is copied, never adopted as ``.grad``)
        _accumulate_leaf(self, g, False, set() if g is None else {id(g._data)})
        return ()


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


_ACCUM_LOCK = reinit_in_child(threading.Lock())


def edge(t):
    """The graph edge a tensor input contributes: ``(grad_fn, output_nr)`` or ``(None, 0)``."""
    if t is None or not t.requires_grad:
        return (None, 0)
    gf = t.grad_fn
    if gf is not None:
        return (gf, t._nr)
    return (accumulate_node(t), 0)


#: PyTorch's names of an op's first two inputs as ``grad_fn._saved_<name>`` reads them
_SAVED_INPUTS = {"self": 0, "input": 0, "other": 1}


def _named_saved(node: Node, attr: str):
    """``node._saved_self`` / ``_saved_other`` (the op's first / second input, where the op
    saved it at that position: a tensor on that input's edge, or the number it was given)
    and ``node._saved_result`` (the output, where the op saved it), unpacked by saved-tensor
    hooks; else PyTorch's AttributeError for a value the node does not hold."""
    key = attr[len("_saved_"):]
    missing = AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}'")
    if key == "result":
        if node.out_data is None and "out_data" not in node.__dict__:
            raise missing
        return node.output()
    i = _SAVED_INPUTS.get(key)
    if i is None:
        raise missing
    raw = node.saved
    if raw is None:  # freed by a backward
        raise RuntimeError(node._freed_msg)
    edges = node.next_functions
    if i >= len(raw) or i >= len(edges):
        raise missing
    # packed by saved-tensor hooks: only this value is unpacked (PyTorch unpacks the one read)
    value = _unpack_tree(raw.saved[i], node) if raw.__class__ is _Packed else raw[i]
    fn, nr = edges[i]
    if isinstance(value, (bool, int, float, complex)) and fn is None:
        return _make(np.asarray(value), node.device)  # a number operand (a * 2: other)
    if value is None and raw.__class__ is tuple and len(raw) > 1:
        return None  # not kept: no gradient reads it (a * 2's self), PyTorch's None
    if not isinstance(value, _Tensor):
        raise missing
    node._check_versions()  # PyTorch's error for a saved tensor modified in place
    if raw.__class__ is tuple:  # packed by hooks: unpacked copies, the position is the proof
        t = raw[i]
        if fn is None or not (t.grad_fn is fn and t._nr == nr or t._accum is fn):
            raise missing
    return value


def make_node_class(name: str, backward, n_out: int = 1) -> type:
    """A Node subclass ``<name>`` whose backward is ``backward(node, grad)``."""
    return type(name, (Node,), {"__slots__": (), "backward": backward, "_n_out": n_out})


#: creation order of nodes: a node is always made after the nodes of its inputs, so the
#: engine runs nodes in decreasing ``seq`` and needs no dependency-counting pass
_SEQ = itertools.count(1)


def peek_sequence_nr() -> int:
    """The ``seq`` the next node will get (PyTorch's ``sequence_number::peek()``), without
    taking it: an ``itertools.count`` cannot be peeked, but its repr is ``count(n)``."""
    return int(repr(_SEQ)[6:-1])


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
    "MeanBackward0", "MeanBackward1", "MmBackward0", "MulBackward0",
    "MvBackward0", "NegBackward0", "PermuteBackward0", "PowBackward0", "ProdBackward0",
    "ProdBackward1", "ReciprocalBackward0", "RepeatBackward0", "ReshapeAliasBackward0",
    "RollBackward0", "RsqrtBackward0", "RsubBackward0", "RsubBackward1", "SelectBackward0",
    "SigmoidBackward0", "SinBackward0", "SinhBackward0", "SliceBackward0",
    "SplitBackward0", "SplitWithSizesBackward0", "SqrtBackward0",
    "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2", "StackBackward0",
    "SubBackward0", "SumBackward0", "SumBackward1", "TBackward0", "TakeBackward0",
    "TanBackward0", "TanhBackward0", "ToCopyBackward0", "TraceBackward0", "TransposeBackward0",
    "TrilBackward0", "TriuBackward0", "DiagEmbedBackward0", "IndexPutBackward0",
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
           save_output: bool = False, checked=None):
    """Wrap ``arr`` as an op's output on ``device``; when grad mode is on and one of
    ``inputs`` requires grad, record a ``node_cls`` node with an edge to each input.

    The one result-wrapping helper of every op (``ember.ops.api.result``). ``saved`` (tensors
    or other values) reaches the backward as ``node.saved``, ``ctx`` as ``node.ctx``;
    ``save_output`` keeps the output's array for ``node.output()`` without a cycle;
    ``checked`` as in :func:`record`.
    """
    out = _make(arr, device)
    if node_cls is not None:
        for t in inputs:  # requires_grad first: the no-grad path skips the thread-local read
            if t is not None and t.requires_grad:
                if GRAD.enabled:
                    return record(node_cls, out, inputs, saved, ctx, save_output, checked)
                break
    return out


def record(node_cls, out, inputs, saved=(), ctx=None, save_output: bool = False,
           checked=None):
    """Attach a new ``node_cls`` node as ``out.grad_fn`` with edges to ``inputs``.

    ``saved`` are tensors (or scalars) the backward reads; tensors' versions are checked at
    backward, except those ``checked`` (one bool per saved value) marks False: a value this
    backward reads only for a gradient that is not needed (PyTorch saves ``mm``'s ``self``
    only when ``mat2`` requires grad, so writing ``self`` in place later is no error).
    ``save_output`` keeps the output's array for ``node.output()`` without a reference
    cycle. This runs once per recorded op, so edges are built inline.
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
        if checked is not None:
            versions = [v if c else None for v, c in zip(versions, checked)]
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
    if _PACK_HOOK is not None:  # some thread has saved-tensor hooks (saved_tensors_hooks)
        _PACK_HOOK(node, out)
    return out


#: forward AD's recording hook ``hook(node, out, inputs)``, set only while a dual level is
#: active (``ember.autograd.forward_ad``): outside forward AD it costs one global read per
#: recorded op and nothing on the no-grad path
_FW_HOOK = None


# -- saved-tensor hooks --------------------------------------------------------------------------
# PyTorch's ``saved_tensors_hooks``: while a pair of hooks is active in a thread, each value an
# op recorded in that thread keeps for its backward goes through ``pack_hook``, what it returns
# is kept instead, and the backward gets the value back from ``unpack_hook``. A node keeps
# values in three places: ``saved`` (tensors, arrays and plain values), ``out_data`` (its
# output's array, ``save_output``) and ``ctx`` (a dropout mask, norm statistics: a tensor or an
# array, alone or in a tuple or dict). The tensors and arrays of all three are packed (an array
# as a tensor without a graph). ``saved`` then holds a ``_Packed``, ``out_data`` a ``_Slot``
# and ``ctx`` a ``_CtxMark``, and the node's class becomes a subclass whose backward unpacks
# them for the call and puts the packed values back after it (``_packed_class``), so that no
# op needs code of its own; the engine frees the packed values with the node's other saved
# values. Without hooks in any thread, ``record`` pays one global read (``_PACK_HOOK``).

class _HooksState(threading.local):
    """This thread's saved-tensor hooks; the class attributes are a new thread's values."""

    stack = ()  # (pack_hook, unpack_hook) pairs, innermost last
    disabled = None  # the message of an active ``disable_saved_tensors_hooks``
    packing = None  # the node whose saved values are being packed (``packing_node``)


_HOOKS = _HooksState()
_HOOK_THREADS = [0]  # how many threads have hooks on
_HOOK_LOCK = reinit_in_child(threading.Lock())

#: ``_pack_recorded`` while some thread has saved-tensor hooks on, else None
_PACK_HOOK = None

_PACK_INPLACE_MSG = ("A saved tensor pack hook is modifying its input in place. Tensors provided "
                     "as input to pack hook cannot be modified by in-place operations as this "
                     "can lead to unexpected side-effects. Please open an issue if you need to "
                     "perform in-place operations on the input to a pack hook.")


def push_saved_tensors_hooks(pack_hook: Callable, unpack_hook: Callable) -> None:
    """Make ``(pack_hook, unpack_hook)`` this thread's innermost saved-tensor hooks."""
    global _PACK_HOOK
    st = _HOOKS
    if st.disabled is not None:
        raise RuntimeError(st.disabled)
    stack = st.stack
    st.stack = stack + ((pack_hook, unpack_hook, _fw_busy()),)
    if not stack:
        with _HOOK_LOCK:
            _HOOK_THREADS[0] += 1
            _PACK_HOOK = _pack_recorded


def pop_saved_tensors_hooks() -> None:
    """Take this thread's innermost saved-tensor hooks off."""
    global _PACK_HOOK
    st = _HOOKS
    stack = st.stack
    if not stack:
        raise RuntimeError("pop_saved_tensors_hooks: no saved tensors hooks are set")
    st.stack = stack[:-1]
    if len(stack) == 1:
        with _HOOK_LOCK:
            _HOOK_THREADS[0] -= 1
            if not _HOOK_THREADS[0]:
                _PACK_HOOK = None


def current_saved_tensors_hooks() -> tuple | None:
    """This thread's innermost ``(pack_hook, unpack_hook)``, or None."""
    stack = _HOOKS.stack
    return stack[-1][:2] if stack else None


def _fw_busy() -> bool:
    """Whether forward AD is computing a tangent in the active dual level: the ops it records
    for that are its own, and hooks set before it started do not see them."""
    if _FW_HOOK is None:
        return False
    from .forward_ad import _LEVEL

    level = _LEVEL[0]
    return level is not None and level.busy


def _innermost_hooks():
    """This thread's innermost hooks that apply to an op recorded now, or None."""
    stack = _HOOKS.stack
    if not stack:
        return None
    pack, unpack, set_while_busy = stack[-1]
    if not set_while_busy and _FW_HOOK is not None and _fw_busy():
        return None
    return pack, unpack


def packing_node():
    """The node whose saved values the running pack hook is packing (None outside one)."""
    return _HOOKS.packing


class _Slot:
    """One packed tensor or array: what ``pack_hook`` returned, the ``unpack_hook`` that gets
    it back, and what the unpacked value must be: None for an array or a saved output (its
    array is used), else ``(requires_grad, grad_fn, output_nr, AccumulateGrad)`` of the saved
    tensor, so that the unpacked tensor joins the graph where the saved one was, as PyTorch's
    ``SavedVariable`` does (``_SELF`` stands for the node itself, to keep no cycle)."""

    __slots__ = ("packed", "unpack", "meta")

    def __init__(self, packed, unpack, meta):
        self.packed = packed
        self.unpack = unpack
        self.meta = meta


class _Packed:
    """A node's ``saved`` once packed: the saved values (``_Slot`` in place of tensors and
    arrays) and, when its ``ctx`` held arrays, the packed ctx (its ``_CtxMark`` refers back
    here). Read as a sequence, it unpacks the saved values (each access calls the unpack
    hooks), for code that reads a node's saved values outside its backward (forward AD)."""

    __slots__ = ("saved", "ctx", "node", "__weakref__")

    def __init__(self, saved, ctx, node):
        self.saved = saved
        self.ctx = ctx
        self.node = weakref.ref(node)

    def unpacked(self):
        return _unpack_saved(self.saved, self.node())

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self.saved)

    def __iter__(self):
        return iter(self.unpacked())

    def __getitem__(self, i):
        return self.unpacked()[i]


class _PTuple(tuple):
    """A tuple with packed items."""

    __slots__ = ()


class _PList(list):
    """A node's ``saved`` list with packed items."""

    __slots__ = ()


class _PDict(dict):
    """A dict with packed values."""

    __slots__ = ()


class _CtxMark(dict):
    """What a node's ``ctx`` holds while its arrays are packed: the entries of a dict ctx that
    were not packed (the engine reads ``out_shapes`` from it), else nothing, and a weak
    reference to the node's ``_Packed`` (``saved``), which holds the packed ctx: freeing the
    node's saved values frees it too."""

    __slots__ = ("packed",)


_SELF = object()
_NO_GRAD_META = (False, None, 0, None)


def _is_array(v) -> bool:
    return (not isinstance(v, (_Tensor, np.generic)) and hasattr(v, "shape")
            and hasattr(v, "nbytes") and hasattr(v, "dtype"))


def _pack_tensor(t, pack, unpack, meta) -> _Slot:
    before = t._version
    packed = pack(t)
    if t._version != before:
        raise RuntimeError(_PACK_INPLACE_MSG)
    return _Slot(packed, unpack, meta)


def _tensor_meta(t, node):
    if not t.requires_grad:
        return _NO_GRAD_META
    gf = t.grad_fn
    if gf is None:
        return (True, None, 0, accumulate_node(t))
    return (True, _SELF if gf is node else gf, t._nr, None)


def _pack_tree(v, pack, unpack, node, depth: int):
    """``v`` with its tensors and arrays packed (inside a tuple or dict down to ``depth``
    levels; lists are left alone: they may be cells that nodes share), or ``v`` itself."""
    if isinstance(v, _Tensor):
        return _pack_tensor(v, pack, unpack, _tensor_meta(v, node))
    if _is_array(v):
        return _pack_tensor(_make(v, node.device), pack, unpack, None)
    if depth:
        cls = v.__class__
        if cls is tuple:
            items = [_pack_tree(x, pack, unpack, node, depth - 1) for x in v]
            if any(p is not x for p, x in zip(items, v)):
                return _PTuple(items)
        elif cls is dict:
            items = {k: _pack_tree(x, pack, unpack, node, depth - 1) for k, x in v.items()}
            if any(items[k] is not x for k, x in v.items()):
                return _PDict(items)
    return v


def _unpack_slot(slot: _Slot, node):
    t = slot.unpack(slot.packed)
    if not isinstance(t, _Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(t).__name__}")
    meta = slot.meta
    if meta is None:
        return t._data
    requires_grad, gf, nr, acc = meta
    if not requires_grad:
        return t if not t.requires_grad else _make(t._data, t._device)
    if gf is _SELF:
        gf = node
    if t.requires_grad and t.grad_fn is gf and (t._nr == nr if gf is not None
                                                 else t._accum is acc):
        return t  # the saved tensor itself
    if t.__class__ is not _Tensor and not _is_array(t._data):
        return t  # a sparse tensor: its graph is its values'
    new = _make(t._data, t._device)
    new.requires_grad = True
    if gf is not None:
        new.grad_fn = gf
        if nr:
            new._nr = nr
    else:
        new._accum = acc  # the saved leaf's: gradients through it reach that leaf
    return new


#: nodes whose saved values PyTorch packs (and unpacks) in another order than Ember lists
#: them: its generated nodes save their variables sorted by argument name (``other`` before
#: ``self``, ``end`` before ``self`` before ``weight``), which saved-tensor hooks observe
_PACK_ORDER = {name: (1, 0) for name in (
    "MulBackward0", "DivBackward0", "Atan2Backward0", "MaximumBackward0", "MinimumBackward0",
    "FmaxBackward0", "FminBackward0", "PowBackward1", "HypotBackward0", "FmodBackward1",
    "RemainderBackward1", "XlogyBackward0", "MmBackward0", "LinalgCrossBackward0",
    "DistBackward0", "LogaddexpBackward0", "Logaddexp2Backward0")}
_PACK_ORDER["LerpBackward1"] = (1, 0, 2)


def _ordered(node, n: int):
    """The positions of a node's ``n`` saved values in PyTorch's packing order."""
    order = _PACK_ORDER.get(node.__class__.__name__)
    return order if order is not None and len(order) == n else range(n)


def _unpack_saved(v, node):
    """A node's packed ``saved`` unpacked, the unpack hooks called in PyTorch's order."""
    cls = v.__class__
    if cls is not _PTuple and cls is not _PList:
        return _unpack_tree(v, node)
    items = list(v)
    for i in _ordered(node, len(items)):
        items[i] = _unpack_tree(items[i], node)
    return tuple(items) if cls is _PTuple else items


def _unpack_tree(v, node):
    cls = v.__class__
    if cls is _Slot:
        return _unpack_slot(v, node)
    if cls is _PTuple:
        return tuple([_unpack_tree(x, node) for x in v])
    if cls is _PList:
        return [_unpack_tree(x, node) for x in v]
    if cls is _PDict:
        return {k: _unpack_tree(x, node) for k, x in v.items()}
    return v


def _pack_saved(saved, pack, unpack, node):
    cls = saved.__class__
    if cls is not tuple and cls is not list:
        return saved
    items = list(saved)
    for i in _ordered(node, len(items)):
        items[i] = _pack_tree(items[i], pack, unpack, node, 1)
    if not any(p is not x for p, x in zip(items, saved)):
        return saved
    return _PList(items) if cls is list else _PTuple(items)


@contextlib.contextmanager
def _packing(node):
    """Inside: pack hooks run for ``node`` (``packing_node()``), without recording (as
    PyTorch's hooks run)."""
    st = _HOOKS
    prev_grad, prev_node = GRAD.enabled, st.packing
    GRAD.enabled = False
    st.packing = node
    try:
        yield
    finally:
        GRAD.enabled = prev_grad
        st.packing = prev_node


def _pack_recorded(node, out) -> None:
    """``record``'s hook while some thread has saved-tensor hooks: pack what ``node`` saved
    with this thread's innermost hooks (nothing when this thread has none)."""
    if not _HOOKS.stack:
        return
    saved, out_data, ctx = node.saved, node.out_data, node.ctx
    if not saved and out_data is None and ctx is None:
        return
    hooks = _innermost_hooks()
    if hooks is None:
        return
    pack, unpack = hooks
    with _packing(node):
        psaved = _pack_saved(saved, pack, unpack, node) if saved else saved
        pctx = _pack_tree(ctx, pack, unpack, node, 1) if ctx is not None else ctx
        pout = _pack_tensor(out, pack, unpack, None) if out_data is not None else None
    if psaved is saved and pctx is ctx and pout is None:
        return
    if psaved is not saved or pctx is not ctx:
        packed = node.saved = _Packed(psaved, None, node)
        if pctx is not ctx:
            packed.ctx = pctx
            mark = _CtxMark({k: x for k, x in ctx.items() if pctx[k] is x}) \
                if ctx.__class__ is dict else _CtxMark()
            mark.packed = weakref.ref(packed)
            node.ctx = mark
        node.versions = None  # as PyTorch: versions are not tracked through hooks
    if pout is not None:
        node.out_data = pout
        node.out_vc = None
    node.__class__ = _packed_class(node.__class__)


def pack_function_saved(ctx_node) -> None:
    """Pack what an ``autograd.Function`` saved (``ctx.save_for_backward``) with this thread's
    innermost hooks; ``ctx.saved_tensors`` unpacks them on each access, as in PyTorch."""
    hooks = _innermost_hooks()
    if hooks is None:
        return
    pack, unpack = hooks
    with _packing(ctx_node):
        items = tuple([x if x is None else _pack_tensor(x, pack, unpack, _tensor_meta(x, ctx_node))
                       for x in ctx_node.saved])
    ctx_node.saved = _Packed(_PTuple(items), None, ctx_node)
    ctx_node.versions = None


_PACKED_VARIANTS: dict = {}


def _packed_class(node_cls) -> type:
    """The class a node of ``node_cls`` with packed values runs as: its backward unpacks the
    values for the call (each ``unpack_hook`` once) and puts the packed ones back after it."""
    variant = _PACKED_VARIANTS.get(node_cls)
    if variant is not None:
        return variant
    raw = node_cls.backward

    def backward(node, grad, _raw=raw):
        saved, out_data, ctx = node.saved, node.out_data, node.ctx
        try:
            if saved.__class__ is _Packed:
                node.saved = _unpack_saved(saved.saved, node)
            if ctx.__class__ is _CtxMark:
                packed = ctx.packed()
                if packed is None:
                    raise RuntimeError(Node._freed_msg)
                node.ctx = _unpack_tree(packed.ctx, node)
            if out_data.__class__ is _Slot:
                node.out_data = _unpack_slot(out_data, node)
            return _raw(node, grad)
        finally:
            node.saved, node.out_data, node.ctx = saved, out_data, ctx

    variant = type(node_cls.__name__, (node_cls,), {
        "__slots__": (), "backward": backward, "__module__": node_cls.__module__,
        "__qualname__": node_cls.__qualname__})
    _PACKED_VARIANTS[node_cls] = variant
    return variant


def has_packed_values(node) -> bool:
    """Whether saved-tensor hooks packed values of ``node`` (and they are not freed yet)."""
    return node.saved.__class__ is _Packed or node.out_data.__class__ is _Slot


class saved_tensors_hooks:
    """Context-manager that sets a pair of pack / unpack hooks for saved tensors.

    Use this context-manager to define how intermediary results of an operation should be
    packed before saving, and unpacked on retrieval.

    In that context, ``pack_hook`` is called every time an operation saves a tensor for
    backward (this includes intermediary results saved with ``ctx.save_for_backward`` in an
    ``autograd.Function``, but also those recorded by Ember's own ops: their inputs, their
    outputs and the arrays they keep, such as a dropout mask, each handed over as a tensor).
    The output of ``pack_hook`` is then stored in the graph instead of the original tensor.

    ``unpack_hook`` is called when the saved tensor is needed, namely when running
    ``Tensor.backward()`` or ``ember.autograd.grad()`` (once per saved tensor and backward
    call; ``ctx.saved_tensors`` of a Function unpacks on each access). It takes the *packed*
    object returned by ``pack_hook`` and must return a tensor with the same content as the
    original tensor (passed as input to the corresponding ``pack_hook``).

    The hooks should have the following signatures::

        pack_hook(tensor: Tensor) -> Any
        unpack_hook(Any) -> Tensor

    where the return value of ``pack_hook`` is a valid input to ``unpack_hook``. ``pack_hook``
    runs with grad mode off and must not modify its input in place (a ``RuntimeError``).

    Hooks are per thread, like grad mode: ops recorded in other threads are not affected.
    When nesting this context-manager, only the innermost pair of hooks applies. As in
    PyTorch, tensors saved through hooks are not checked for in-place modification at
    backward: the hooks decide what comes back.

    Example::

        >>> import ember
        >>> def pack_hook(x):
        ...     print("Packing", x)
        ...     return x.detach()
        >>> def unpack_hook(x):
        ...     print("Unpacking", x)
        ...     return x
        >>> a = ember.ones(5, requires_grad=True)
        >>> b = ember.ones(5, requires_grad=True) * 2
        >>> with ember.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        ...     y = a * b
        Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)
        Packing tensor([1., 1., 1., 1., 1.], requires_grad=True)
        >>> y.sum().backward()
        Unpacking tensor([2., 2., 2., 2., 2.])
        Unpacking tensor([1., 1., 1., 1., 1.])
    """

    def __init__(self, pack_hook: Callable[[_Tensor], Any],
                 unpack_hook: Callable[[Any], _Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Context manager under which tensors saved by the forward pass are stored on the CPU,
    then retrieved for backward.

    When performing operations within this context manager, intermediary results saved in
    the graph during the forward pass are moved to the CPU, then copied back to their original
    device when needed for the backward pass. If the graph was already on the CPU, no tensor
    copy is performed (``tensor.cpu()`` is the tensor itself).

    Use this context-manager to trade compute for GPU memory usage (e.g. when your model does
    not fit in GPU memory during training).

    Args:
        pin_memory (bool): If ``True`` tensors are saved to CPU pinned memory during packing
            and copied to the device asynchronously during unpacking. Defaults to ``False``.
        device_type (str): the device module whose ``is_available()`` says whether memory can
            be pinned. Defaults to ``"cuda"``.

    Example::

        >>> import ember
        >>> a = ember.randn(5, requires_grad=True)
        >>> b = ember.randn(5, requires_grad=True)
        >>> with ember.autograd.graph.save_on_cpu():
        ...     y = a * b  # a and b are saved on the CPU
        >>> y.sum().backward()  # copied back to their device for the backward
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        import ember

        device_module = getattr(ember, device_type, ember.cuda)

        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            is_pinnable = device_module.is_available() and not tensor.is_sparse
            packed = ember.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout,
                                 pin_memory=is_pinnable)
            packed.copy_(tensor, non_blocking=is_pinnable)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Context-manager that disables the saved tensors default hooks feature.

    Useful if you are creating a feature that does not work with saved tensors default hooks.
    Entering it while hooks are active in this thread, or setting hooks inside it, raises a
    ``RuntimeError`` with ``error_message``. Per thread, and nestable (the innermost message
    applies).

    Args:
        error_message (str): When saved tensors default hooks are used when they have been
            disabled, a RuntimeError with this error message gets raised.

    Example::

        >>> import ember
        >>> message = "saved tensors default hooks are disabled"
        >>> with ember.autograd.graph.disable_saved_tensors_hooks(message):
        ...     with ember.autograd.graph.save_on_cpu():
        ...         pass
        Traceback (most recent call last):
        ...
        RuntimeError: saved tensors default hooks are disabled
    """
    st = _HOOKS
    prev = st.disabled
    try:
        st.disabled = error_message
        if st.stack:
            raise RuntimeError(error_message)
        yield
    finally:
        st.disabled = prev



# -- edges, multi-gradient hooks, mutation of saved tensors (the rest of torch.autograd.graph) --

class GradientEdge(NamedTuple):
    """One edge of the backward graph: the node that receives a tensor's gradient and which
    of its inputs it is (``edge = autograd.graph.get_gradient_edge(tensor)``).
    ``autograd.grad(loss, edge)`` gives the gradient that flows along it, the same as
    ``autograd.grad(loss, tensor)``, without keeping the tensor."""

    node: Any
    output_nr: int
    # PyTorch's token keeps a C++ graph alive; Ember's nodes are Python objects the edge holds
    ownership_token: Any = None


def _node_of(t):
    """The node a tensor's gradient goes to: its ``grad_fn``, or a leaf's AccumulateGrad."""
    if isinstance(t, GradientEdge):
        return t.node
    if t.grad_fn is not None:
        return t.grad_fn
    if not t.requires_grad:
        raise AssertionError("Expected gradient function to be set")
    return accumulate_node(t)


def get_gradient_edge(tensor: _Tensor) -> GradientEdge:
    """The gradient edge of ``tensor``: ``autograd.grad(loss, get_gradient_edge(x))`` equals
    ``autograd.grad(loss, x)``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(_node_of(tensor), tensor.output_nr)


def as_edge(x):
    """``x`` (a Tensor or a GradientEdge) as the engine's ``(node, output_nr)`` edge."""
    if isinstance(x, GradientEdge):
        return (x.node, x.output_nr)
    return edge(x)


def increment_version(tensor: _Tensor | Iterable[_Tensor]) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place op does: for code that writes a tensor's memory behind autograd's back (through
    ``.numpy()`` or ``data_ptr``), so that a backward that saved it reports the change."""
    if isinstance(tensor, _Tensor):
        tensor = (tensor,)
    elif not isinstance(tensor, Iterable) or isinstance(tensor, (str, bytes)):
        raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
    for t in tensor:
        if not isinstance(t, _Tensor):
            raise RuntimeError("increment_version expect a Iterable[Tensor] as input")
        t._bump_version()


class _MultiHandle(RemovableHandle):
    """The handle of ``register_multi_grad_hook``: removes the hook of every tensor."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state) -> None:
        self.handles = state


def register_multi_grad_hook(tensors: Sequence[_Tensor], fn: Callable, *,
                             mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward with the gradients of several tensors.

    ``mode="all"``: after the gradient of every tensor of ``tensors`` that this backward
    computes has arrived, ``fn(grads)`` gets them in order, ``None`` for the tensors the
    backward does not reach (or that its ``inputs`` leave out). ``mode="any"``: ``fn(grad)``
    with the first of them to arrive. Returns a handle whose ``remove()`` takes the hook off.
    """
    from .engine import current_graph_task_id, will_engine_execute_node

    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)

    if mode == "all":
        nodes = [_node_of(t) for t in tensors]
        counts: dict = {}
        buffers: dict = {}
        expected: dict = {}

        def inner(idx: int):
            def hook(grad):
                task = current_graph_task_id()
                if task == -1:
                    raise AssertionError("expected this hook to be called inside a backward call")
                with lock:
                    seen = counts.get(task, 0)
                    counts[task] = seen + 1
                    if not seen:  # the first gradient: how many this backward will bring
                        expected[task] = sum(map(will_engine_execute_node, nodes))
                        buffers[task] = [None] * len(tensors)
                    buffers[task][idx] = grad
                    done = seen + 1 == expected[task]
                    if done:
                        grads = buffers.pop(task)
                        del counts[task], expected[task]
                if done:
                    fn(grads)

            # (called for an output of a multi-output node that got no gradient too, with
            # None, as every tensor hook is: that tensor's gradient will not come)
            return hook

        handles = tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors))
    else:
        ran: dict = {}

        def first(grad):
            task = current_graph_task_id()
            if task == -1:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                prev, ran[task] = ran.get(task, False), True
            if not prev:
                fn(grad)

        handles = tuple(t.register_hook(first) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


# -- allow_mutation_on_saved_tensors -------------------------------------------------------------

class _Handle:
    """What the pack hook saves in place of a tensor; it finds the tensor's original (or, once
    the tensor was written in place, the copy taken just before)."""

    __slots__ = ("__weakref__",)


#: PyTorch's message, with its missing space ("contextin")
_OUTSIDE_MUTATION_MSG = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                         "contextin which the graph was originally recorded.")


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block: the tensors saved for
    backward (by handle), and the copies taken of those written in place since."""

    def __init__(self) -> None:
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()

    def pack(self, t: _Tensor) -> _Handle:
        handle = _Handle()
        self.original[handle] = t
        return handle

    def unpack(self, handle: _Handle) -> _Tensor:
        if not _MUTATION[0]:
            raise AssertionError(_OUTSIDE_MUTATION_MSG)
        res = self.cloned.get(handle)
        if res is None:
            res = self.original.get(handle)
            if res is None:
                raise AssertionError(_OUTSIDE_MUTATION_MSG)
        return res

    def before_write(self, target) -> None:
        """Copy every saved tensor whose memory ``target`` (about to be written) shares."""
        arr = getattr(target, "_data", None)
        if arr is None:
            return
        root = _root(arr)
        for handle, t in list(self.original.items()):
            if handle not in self.cloned and _root(t._data) is root:
                self.cloned[handle] = _copy_of(t)
                del self.original[handle]


def _root(arr):
    """The array that owns ``arr``'s memory (views lead back to it through ``.base``)."""
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _copy_of(t: _Tensor) -> _Tensor:
    """A copy of ``t``'s values with ``t``'s autograd identity: the unpacked saved tensor is
    matched to the node by ``requires_grad``/``grad_fn``/``output_nr`` (graph._unpack_slot)."""
    copy = _make(t._data.copy(), t._device)
    if t.requires_grad:
        copy.requires_grad = True
        if t.grad_fn is not None:
            copy.grad_fn = t.grad_fn
            if t._nr:
                copy._nr = t._nr
        else:
            copy._accum = accumulate_node(t)
    return copy


#: the in-place dunders (``a += b``, ``a[i] = v``) besides the ``name_`` methods
_INPLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
    "__irshift__"})


def _written(func, args, kwargs):
    """The tensors a call writes: the ``out=`` tensors, the ``inplace=True`` input, and the
    first argument of an in-place method (``x.sin_()``, ``x += 1``, ``x[i] = v``)."""
    out = []
    o = kwargs.get("out") if kwargs else None
    if o is not None:
        out.extend(o if isinstance(o, (tuple, list)) else (o,))
    name = getattr(func, "__name__", "")
    if args and (name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))
                 or (kwargs and kwargs.get("inplace") is True)):
        first = args[0]
        out.extend(first if isinstance(first, (tuple, list)) else (first,))
    return [t for t in out if isinstance(t, _Tensor)]


class _CloneArgBeforeMutateMode(_overrides.TorchFunctionMode):
    """Sees every call (``ember.overrides``): before one writes a tensor, the saved tensors
    sharing its memory are copied."""

    _ember_reads_types = False

    def __init__(self, ctx: _AllowMutationOnSavedContext) -> None:
        self.ctx = ctx

    def __torch_function__(self, func, types, args=(), kwargs=None):
        for t in _written(func, args, kwargs):
            self.ctx.before_write(t)
        return func(*args, **(kwargs or {}))


_MUTATION = [False]  # an allow_mutation_on_saved_tensors block is open (they do not nest)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Inside, a tensor saved for backward may be written in place: the write first copies
    it, and the backward reads the copy (PyTorch raises at backward otherwise). Run the
    forward and the backward inside the same block. Yields the block's state; it is cleared
    at exit.

    Writes are seen through Ember's call dispatch (``x.sin_()``, ``x += 1``, ``x[i] = v``,
    ``out=``, ``inplace=True``); code that writes a tensor's array directly (``x.numpy()[:]
    = ...``) is not seen, as it is not by PyTorch's dispatch."""
    if _MUTATION[0]:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()
    _MUTATION[0] = True
    try:
        with saved_tensors_hooks(ctx.pack, ctx.unpack), _CloneArgBeforeMutateMode(ctx):
            yield ctx
    finally:
        ctx.clear()
        _MUTATION[0] = False
