"""Views: tensors that share memory (and the version counter) with a base tensor, and
``copy_slices``, which rewrites the base's history when a view is modified in place."""

from __future__ import annotations

from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record

__all__ = ["make_view", "copy_slices"]


def make_view(input: Tensor, array, node_cls=None, ctx=None, view_fn=None) -> Tensor:
    """Wrap ``array`` (a view of ``input``'s memory) as a view tensor of ``input``.

    ``view_fn(base_tensor) -> view tensor`` replays the view on the base; it is what an
    in-place op on the view uses to rewrite the base's history (``copy_slices``).
    """
    out = _make(array, input._device)
    base = getattr(input, "_base", None)
    root = input if base is None else base
    vc = getattr(root, "_vc", None)
    if vc is None:
        vc = root._vc = [0]
    out._vc = vc
    out._base = root
    if view_fn is not None:
        prev = _view_chain(input)
        out._extra = {"view_fn": view_fn if prev is None else _compose(prev, view_fn)}
    if node_cls is not None and input.requires_grad and GRAD.enabled:
        record(node_cls, out, (input,), (), ctx)
    return out


def _view_chain(t):
    extra = getattr(t, "_extra", None)
    return extra.get("view_fn") if extra else None


def _compose(f, g):
    return lambda base: g(f(base))


def _copy_slices_bw(node, grad):
    # grad flows to the old base everywhere except the view's region, which takes the
    # gradient of the in-place result with respect to the old view value
    view_fn, result_node = node.ctx
    g_base = grad.clone()
    g_view = view_fn(g_base)
    grads_view = result_node.backward(view_fn(grad))
    if not isinstance(grads_view, tuple):
        grads_view = (grads_view,)
    first = grads_view[0]
    g_view.copy_(first if first is not None else g_view * 0)
    return (g_base, *grads_view[1:])


CopySlices = make_node_class("CopySlices", _copy_slices_bw)


def copy_slices(base: Tensor, view: Tensor, result: Tensor) -> None:
    """After ``view`` was overwritten in place with ``result``, rebase ``base``'s history.

    ``result.grad_fn``'s first input is the old value of the view; the new base node takes
    the old base plus the other inputs of that op.
    """
    view_fn = _view_chain(view)
    if view_fn is None:
        raise RuntimeError("a view of a tensor that requires grad was modified in place, but "
                           "the view cannot be replayed on its base")
    rnode = result.grad_fn
    old_base = _make(base._data, base._device)
    old_base.requires_grad = base.requires_grad
    old_base.grad_fn = base.grad_fn
    if base.requires_grad and base.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    node = object.__new__(CopySlices)
    from ..autograd.graph import edge

    others = rnode.next_functions[1:] if rnode is not None else ()
    node.next_functions = (edge(old_base), *others)
    node.saved = ()
    node.versions = None
    node.ctx = (view_fn, rnode)
    node.device = base._device
    base.grad_fn = node
    base.requires_grad = True
    # the view now reads from the rewritten base
    view.grad_fn = None
    view.requires_grad = True
    _refresh_view_history(view, base, view_fn)


def _refresh_view_history(view, base, view_fn):
    fresh = view_fn(base)
    view.grad_fn = fresh.grad_fn
    nr = getattr(fresh, "_nr", 0)
    if nr:
        view._nr = nr
