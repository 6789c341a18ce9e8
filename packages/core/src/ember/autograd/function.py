"""Custom differentiable operations: ``ember.autograd.Function``, as ``torch.autograd.Function``.

A subclass writes a static ``forward`` and ``backward``::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

As in PyTorch, the ``ctx`` handed to ``forward``/``backward`` *is* the graph node
(``y.grad_fn``, an instance of ``ExpBackward``), so attributes set on it are visible there.
``forward`` runs under ``no_grad``; ``backward`` runs with grad mode on only for
``create_graph=True``, so a backward written with ember ops is itself differentiable.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .. import _dtype, _tensor
from . import graph as _graph
from .grad_mode import ANOMALY_THREADS, GRAD
from .graph import Node, edge, make_node_class, new_node, record

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "InplaceFunction", "FunctionMeta",
           "once_differentiable"]

_new = object.__new__


class FunctionCtx:
    """The methods ``forward``/``setup_context`` call on ``ctx``."""

    # defaults read by ``Function.apply``; set per call only when used
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or None) for ``backward``, where ``ctx.saved_tensors`` returns them.

        They are checked for in-place modification when read back. Under
        ``ember.autograd.graph.saved_tensors_hooks`` they are packed by the hooks when
        ``forward`` returns and unpacked on each access to ``ctx.saved_tensors``.
        """
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _tensor.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Keep ``tensors`` for the ``jvp`` staticmethod (forward-mode AD): inside ``jvp``,
        ``ctx.saved_tensors`` are these, as in PyTorch."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Mark inputs that ``forward`` modified in place (they must be returned)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args) -> None:
        """Mark outputs that do not require grad (their gradient arrives as zeros)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether undefined output gradients reach ``backward`` as zeros (default) or None."""
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs) -> None:
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are "
                      "automatically tracked. Note that calls to `set_()` are not tracked",
                      FutureWarning, stacklevel=2)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one ``Function.apply`` call (also the ``ctx`` its methods receive)."""

    _forward_cls = None

    def __call__(self, *args, **kwargs):
        # as in PyTorch, a custom Function's node is not callable (``apply`` is)
        raise TypeError(f"'{type(self).__name__}' object is not callable")

    def __repr__(self) -> str:
        return f"<ember.autograd.function.{type(self).__name__} object at {id(self):#x}>"

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked for in-place modification
        (unpacked by the saved-tensor hooks that packed them, on each access, if any)."""
        in_jvp = self.__dict__.get("_jvp_saved")
        if in_jvp is not None:  # inside the Function's jvp: what save_for_forward kept
            return in_jvp
        saved = self.saved
        if saved is None:
            raise RuntimeError(Node._freed_msg)
        if saved.__class__ is _graph._Packed:
            return saved.unpacked()
        if self.versions is not None:
            Node._check_versions(self)
        return saved

    def _check_versions(self) -> None:
        """Nothing before the backward runs: as in PyTorch, the saved tensors are checked
        (freed, modified in place) only when ``ctx.saved_tensors`` reads them."""

    def apply(self, *grads):
        """Run the user's backward on ``grads`` (one per output), as the engine does."""
        return self._forward_cls._user_backward()(self, *grads)

    def backward(self, grad):
        """Engine entry: ``grad`` is one tensor, or a list for a multi-output call."""
        if self._n_out == 1:
            grads = (grad,)
        elif self.materialize_grads:
            grads = _materialize(grad, self._out_meta)
        else:
            grads = grad
        res = self._forward_cls._user_backward()(self, *grads)
        return _check_grads(self, res if isinstance(res, tuple) else (res,))


def _materialize(grads, out_meta):
    from .._dtype import FROM_NP
    from .._factory import zeros

    return [zeros(m[0], dtype=FROM_NP[m[1]], device=m[2]) if g is None and m is not None
            else g for g, m in zip(grads, out_meta)]


def _expandable(shape, to) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (a gradient of shape ``to`` can be summed back)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def _check_grads(node, res):
    """PyTorch's checks on what ``backward`` returned; one gradient per tensor input."""
    n_args = len(node.needs_input_grad)
    if len(res) != n_args:
        if len(res) > n_args and all(r is None for r in res[n_args:]):
            res = res[:n_args]
        else:
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {n_args}, got {len(res)})")
    grads = []
    meta = node._in_meta
    k = 0
    for i, g in enumerate(res):
        m = meta[i]
        if m is None:
            if g is not None:
                raise RuntimeError(f"function {node.name()} returned a gradient different "
                                   f"than None at position {i + 1}, but the corresponding "
                                   "forward input was not a Variable")
            continue
        if g is not None and node.next_functions[k][0] is not None:
            g = _validate_grad(node, k, g, m)
        else:
            g = None
        grads.append(g)
        k += 1
    return tuple(grads)


def _validate_grad(node, index, g, meta):
    shape, dtype, device = meta
    if not isinstance(g, _tensor.Tensor):
        raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
    gd = g._data
    if gd.shape != shape:
        if not _expandable(shape, gd.shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{index} - got {list(gd.shape)} but expected shape compatible "
                               f"with {list(shape)}")
        from ..ops._factories import sum_to_size

        g = sum_to_size(g, shape)
    if g._device is not device:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                           f"{index} - expected device {device} but got {g._device}")
    if g._data.dtype is not dtype:
        from .._dtype import FROM_NP

        g = g.to(FROM_NP[dtype])
    return g


class FunctionMeta(type):
    """The metaclass of ``Function`` (PyTorch's ``torch.autograd.function.FunctionMeta``): each
    class it makes gets ``_backward_cls``, the node class (``<Name>Backward``, a
    ``BackwardCFunction``) that records its applications, and notes whether it uses the
    new-style ``setup_context``."""

    def __init__(cls, name, bases, attrs, **kwargs):
        super().__init__(name, bases, attrs, **kwargs)
        node_name = name + "Backward"
        cls._backward_cls = type(node_name, (BackwardCFunction,), {
            "_forward_cls": cls, "__module__": __name__, "__qualname__": node_name})
        root = _ROOT[0]  # None while the root class itself is made
        cls._setup_ctx = root is not None and cls.setup_context is not root.setup_context
        cls._signature = None


_ROOT: list = [None]  # _SingleLevelFunction, the class whose setup_context is the default


class _SingleLevelFunction(FunctionCtx, metaclass=FunctionMeta):
    @staticmethod
    def forward(*args, **kwargs):
        """Compute the outputs (runs under ``no_grad``). Old style: ``forward(ctx, *args)``;
        new style: ``forward(*args)`` together with ``setup_context``."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """New style: save what ``backward`` needs from ``inputs`` and ``output`` on ``ctx``."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients with respect to each input of ``forward`` (None where not needed)."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")


_ROOT[0] = _SingleLevelFunction


class Function(_SingleLevelFunction):
    """Base class of custom differentiable operations, used through ``MyFn.apply(*args)``."""

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The Function's rule under ``vmap`` (PyTorch's hook; Ember's vmap runs the
        Function's own ops on the batch, so this default is only there to be overridden)."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class "
                      "itself. Instantiating an autograd function will raise an error in a "
                      "future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def _user_backward(cls):
        bw, vjp = cls.backward, cls.vjp
        if vjp is not _SingleLevelFunction.vjp:
            if bw is not _SingleLevelFunction.backward:
                raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom "
                                   "Function is not allowed. You should only implement one "
                                   "of them.")
            return vjp
        return bw

    @classmethod
    def _bind(cls, args, kwargs):
        """Keyword arguments of ``forward`` as positional ones (defaults applied with
        ``setup_context``, as PyTorch does); keyword-only ones stay keywords."""
        sig = cls._signature
        if sig is None:
            sig = cls._signature = inspect.signature(cls.forward)
        if cls._setup_ctx:
            if not kwargs and len(args) >= _n_positional(cls, sig):
                return args, kwargs  # nothing to bind (the common call)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return bound.args, bound.kwargs
        bound = sig.bind(None, *args, **kwargs)
        return bound.args[1:], bound.kwargs

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and record one node for the call."""
        if kwargs or cls._setup_ctx:
            args, kwargs = cls._bind(args, kwargs)
        ctx = new_node(cls._backward_cls)
        Tensor = _tensor.Tensor
        needs = ctx.needs_input_grad = tuple([isinstance(a, Tensor) and a.requires_grad
                                              for a in args])
        prev = GRAD.enabled
        GRAD.enabled = False
        try:
            if cls._setup_ctx:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        finally:
            GRAD.enabled = prev
        if prev and True in needs:
            return _wrap_outputs(ctx, args, out)
        for t in ctx.dirty_tensors:
            t._bump_version()
        return out


def _n_positional(cls, sig) -> int:
    """How many positional parameters ``forward`` has (a large number with ``*args``)."""
    n = cls.__dict__.get("_n_pos")
    if n is None:
        kinds = [p.kind for p in sig.parameters.values()]
        n = 1 << 30 if inspect.Parameter.VAR_POSITIONAL in kinds else sum(
            k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for k in kinds)
        cls._n_pos = n
    return n


def _wrap_outputs(ctx, args, out):
    """Connect the outputs of ``forward`` to the node ``ctx`` (PyTorch's ``_wrap_outputs``)."""
    Tensor = _tensor.Tensor
    edges = []
    in_meta = []
    for a in args:
        if isinstance(a, Tensor):
            edges.append(edge(a))
            in_meta.append((a._data.shape, a._data.dtype, a._device))
        else:
            in_meta.append(None)
    ctx.next_functions = tuple(edges)
    ctx._in_meta = in_meta
    ctx.ctx = None
    dirty = ctx.dirty_tensors
    non_diff = ctx.non_differentiable
    fw_in = None
    if dirty and _graph._FW_HOOK is not None:  # read before a dirty input is rewired to ctx
        from .forward_ad import input_tangents

        fw_in = input_tangents(args)
    if out.__class__ is tuple:
        outs = tuple([_wrap_one(ctx, args, o, k, dirty, non_diff) if isinstance(o, Tensor)
                      else o for k, o in enumerate(out)])
        if len(outs) != 1:
            ctx._n_out = len(outs)
            ctx._out_meta = [(o._data.shape, o._data.dtype, o._device)
                             if isinstance(o, Tensor) else None for o in outs]
        result = outs
    else:
        result = _wrap_one(ctx, args, out, 0, dirty, non_diff) if isinstance(out, Tensor) \
            else out
        outs = (result,)
    for t in dirty:
        if not _contains(outs, t):
            raise RuntimeError("Some elements marked as dirty during the forward method were "
                               "not returned as output. The inputs that are modified inplace "
                               "must all be outputs of the Function.")
        if t._base is not None and t.grad_fn is ctx:
            _rebase_dirty_view(ctx, args, t, len(outs))
    to_save = ctx.to_save
    if to_save:
        ctx.saved = to_save
        ctx.versions = tuple([None if t is None else t._version for t in to_save])
        if _graph._PACK_HOOK is not None:  # saved-tensor hooks are on in some thread
            _graph.pack_function_saved(ctx)
    else:
        ctx.saved = ()
        ctx.versions = None
    if ANOMALY_THREADS[0] and GRAD.anomaly:
        import traceback

        ctx._anomaly_trace = "".join(traceback.format_stack()[:-2])
    if _graph._FW_HOOK is not None:  # a dual level is active: the outputs' tangents
        from .forward_ad import function_tangents

        function_tangents(ctx, ctx._forward_cls, args, outs, fw_in)
    return result


def _rebase_dirty_view(ctx, args, view, n_outputs: int) -> None:
    """An input view the Function changed in place (``mark_dirty``): as PyTorch, its base's
    history is rewritten around this node (``CopySlices``) and the view, like the base's
    other views, reads from the new history."""
    from ..ops.views import copy_slices, multi_view_message

    at = next(i for i, a in enumerate(args) if a is view)
    multi = view._extra is not None and "multi" in view._extra
    if n_outputs != 1 or multi:
        # refused: the view keeps the history it had before this call (the edge to it)
        view.grad_fn, nr = ctx.next_functions[at]
        view.requires_grad = view.grad_fn is not None
        view._nr = nr
        if multi:
            raise RuntimeError(multi_view_message(view))
        raise RuntimeError("Functions which modify views in-place must return a single "
                           "Variable")
    node_out = _tensor._make(view._data, view._device)
    node_out.requires_grad = True
    node_out.grad_fn = ctx
    copy_slices(view._base, view, node_out, at)


def _contains(seq, obj) -> bool:
    """``obj in seq`` by identity (``==`` on tensors is elementwise)."""
    for x in seq:
        if x is obj:
            return True
    return False


def _wrap_one(ctx, args, o, k, dirty, non_diff):
    if dirty and _contains(dirty, o):
        if o.requires_grad and o.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an "
                               "in-place operation.")
        o._bump_version()
    marked = bool(non_diff) and _contains(non_diff, o)  # (before o is replaced below)
    if not (dirty and _contains(dirty, o)) and _contains(args, o):
        # an input returned as-is: a new tensor sharing its memory, a view of the input
        base = o if o._base is None else o._base
        o = o.detach()
        o._base = base
    if marked or o._data.dtype not in _dtype.FLOATING_NP:
        o.requires_grad = False
        o.grad_fn = None
        return o
    if o._base is not None and not (dirty and _contains(dirty, o)):
        # a view made inside forward (or an input returned as-is): an in-place op on it
        # raises PyTorch's error instead of rewriting history around the custom backward
        # (PyTorch forbids it); without its replay function it cannot do that anyway
        extra = {k: v for k, v in o._extra.items() if k != "view_fn"} if o._extra else {}
        extra["multi"] = "custom"
        o._extra = extra
        root = o._base
        if root.grad_fn is not None or not root.requires_grad:
            from ..ops.views import register_view

            register_view(root, o)  # an in-place change of its base then raises on backward
    o.requires_grad = True
    o.grad_fn = ctx
    if k or o._nr:
        o._nr = k
    return o


class InplaceFunction(Function):
    """A Function that may modify its input in place (``inplace`` flag, as in PyTorch)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


# -- once_differentiable -------------------------------------------------------------------

def _delayed_error_bw(node, grad):
    raise RuntimeError("trying to differentiate twice a function that was marked with "
                       "@once_differentiable")


DelayedError = make_node_class("DelayedError", _delayed_error_bw)


def once_differentiable(fn):
    """Decorate ``backward`` of a Function whose backward is not itself differentiable.

    The backward runs under ``no_grad``; differentiating its result raises an error.
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        prev = GRAD.enabled
        GRAD.enabled = False
        try:
            outputs = fn(ctx, *args, **kwargs)
        finally:
            GRAD.enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, _tensor.Tensor) and a.requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        wrapped = tuple(None if v is None else record(DelayedError, v.detach(), ())
                        for v in (outputs if is_tuple else (outputs,)))
        return wrapped if is_tuple else wrapped[0]

    return wrapper
