"""Views: tensors that share memory (and the version counter) with a base tensor, and
``copy_slices``, which rewrites the base's history when a view is modified in place.

A view keeps ``_base`` (the root tensor that owns the memory, never another view), the root's
version counter ``_vc``, and in ``_extra["view_fn"]`` a function that replays the whole chain of
views on the root (``view_fn(root) -> view``). An in-place op on a view that takes part in
autograd overwrites the view's memory and then calls ``copy_slices``: the base gets a
``CopySlices`` node, whose backward routes the gradient of the view's region through the
in-place op's own backward and the rest of the base's gradient to the base's old history.
"""

from __future__ import annotations

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import edge, make_node_class, new_node, record

__all__ = ["make_view", "copy_slices", "view_fn_of"]


def make_view(input: Tensor, array, node_cls=None, ctx=None, view_fn=None) -> Tensor:
    """Wrap ``array`` (a view of ``input``'s memory) as a view tensor of ``input``.

    ``view_fn(tensor) -> view tensor`` replays the view on ``input``; it is what an in-place
    op on the view uses to rewrite the base's history (``copy_slices``). ``node_cls``/``ctx``
    record the view's backward when ``input`` requires grad.
    """
    out = _make(array, input._device)
    base = getattr(input, "_base", None)
    if base is None:
        root = input
        chain = view_fn
    else:
        root = base
        prev = _view_chain(input)
        chain = None if prev is None or view_fn is None else _compose(prev, view_fn)
    vc = getattr(root, "_vc", None)
    if vc is None:
        vc = root._vc = [0]
    out._vc = vc
    out._base = root
    if chain is not None:
        out._extra = {"view_fn": chain}
    if node_cls is not None and input.requires_grad and GRAD.enabled:
        record(node_cls, out, (input,), (), ctx)
    return out


def _view_chain(t):
    extra = getattr(t, "_extra", None)
    return extra.get("view_fn") if extra else None


def view_fn_of(t: Tensor):
    """The function replaying view ``t`` on its base (None when ``t`` is not a replayable
    view)."""
    return _view_chain(t) if getattr(t, "_base", None) is not None else None


def _compose(f, g):
    return lambda base: g(f(base))


class ViewFnIndex:
    """Index spec (see ``indexing``) for the region a ``view_fn`` selects of its base."""

    __slots__ = ("view_fn", "device")

    def __init__(self, view_fn, device):
        self.view_fn, self.device = view_fn, device

    def get(self, a):
        return self.view_fn(_make(a, self.device))._data

    def set(self, a, v, xp):
        self.get(a)[...] = v

    def tget(self, t):
        return self.view_fn(t)


def _copy_slices_bw(node, grad):
    # the base's gradient, except in the view's region: there it is the gradient of the
    # in-place result with respect to the view's old value
    from .indexing import scatter_by

    view_fn, result_node = node.ctx
    grads_view = (None,)
    if result_node is not None:
        if result_node.versions is not None:
            result_node._check_versions()
        grads_view = result_node.backward(view_fn(grad))
        if not isinstance(grads_view, tuple):
            grads_view = (grads_view,)
    first = grads_view[0]
    g_base = scatter_by(grad, ViewFnIndex(view_fn, grad._device),
                        0 if first is None else first, False)
    return (g_base, *grads_view[1:])


CopySlices = make_node_class("CopySlices", _copy_slices_bw)


def copy_slices(base: Tensor, view: Tensor, result: Tensor) -> None:
    """After ``view`` was overwritten in place with ``result``, rebase ``base``'s history.

    ``result.grad_fn``'s first input is the old value of the view; the new base node takes
    the old base plus the other inputs of that op.
    """
    view_fn = _view_chain(view)
    if base.requires_grad and base.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if view_fn is None:
        raise RuntimeError("a view of a tensor that requires grad was modified in place, but "
                           "the view cannot be replayed on its base (it was created in no_grad "
                           "mode or by an op that does not record its view function)")
    rnode = result.grad_fn
    old_base = _make(base._data, base._device)
    old_base.requires_grad = base.requires_grad
    old_base.grad_fn = base.grad_fn
    nr = getattr(base, "_nr", 0)
    if nr:
        old_base._nr = nr
    node = new_node(CopySlices)
    others = rnode.next_functions[1:] if rnode is not None else ()
    node.next_functions = (edge(old_base), *others)
    node.saved = ()
    node.versions = None
    node.ctx = (view_fn, rnode)
    node.device = base._device
    base.grad_fn = node
    base.requires_grad = True
    if nr:
        base._nr = 0
    # the view now reads from the rewritten base
    fresh = view_fn(base)
    view.grad_fn = fresh.grad_fn
    view.requires_grad = True
    view._nr = getattr(fresh, "_nr", 0)
