"""Views: tensors that share memory (and the version counter) with a base tensor, and
``copy_slices``, which rewrites the base's history when a view is modified in place.

A view keeps ``_base`` (the root tensor that owns the memory, never another view), the root's
version counter ``_vc``, and in ``_extra["view_fn"]`` a function that replays the whole chain of
views on the root (``view_fn(root) -> view``). An in-place op on a view that takes part in
autograd overwrites the view's memory and then calls ``copy_slices``: the base gets a
``CopySlices`` node, whose backward routes the gradient of the view's region through the
in-place op's own backward and the rest of the base's gradient to the base's old history.

Some views are defined by storage geometry rather than by a chain of ops: ``as_strided``, and
a view reshaped in place (``v.t_()``, ``v.squeeze_()``), whose chain becomes a
``StridedReplay`` as in PyTorch. A chain can also stop replaying its view when the root itself
changed shape in place (``root.t_()``, ``root.set_(...)``). ``copy_slices`` routes such a
view's gradient through the elements of the base it covers (``logical_index``) instead.

A view's history must follow its root's: after an in-place op under autograd rewrites the
root's history (on the root or through any view of it), every other live view of the root
takes an ``AsStridedBackward0`` node over the root's new history, as PyTorch regenerates a
view's ``grad_fn`` when the shared version moved on. PyTorch does that lazily when the view's
``grad_fn`` is read; here the root keeps weak references to the views made of it under grad
mode (``_views``, by ``id``) and ``refresh_views`` rewrites them at the in-place op, so that a
view made before the root required grad starts requiring it too (``a = h[0]; h[0] = w``).
A tensor that retains its grad moves that to its new node (``follow_retain``).

The outputs of ``split``/``chunk``/``unbind`` share one multi-output node; made under grad
mode they (and views of them) are marked ``multi`` and refuse in-place changes under autograd
with PyTorch's message (``record_multi_output``).
"""

from __future__ import annotations

from weakref import ref as _weakref

import numpy as np

from .._format import shape_str
from .._tensor import Tensor, _address, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import edge, make_node_class, new_node, record, result

__all__ = ["make_view", "copy_slices", "view_fn_of", "inplace_view", "StridedReplay",
           "storage_positions", "logical_index", "record_multi_output", "multi_view_message",
           "refresh_views", "register_view", "follow_retain"]


def make_view(input: Tensor, array, node_cls=None, ctx=None, view_fn=None,
              multi: bool = False) -> Tensor:
    """Wrap ``array`` (a view of ``input``'s memory) as a view tensor of ``input``.

    ``view_fn(tensor) -> view tensor`` replays the view on ``input``; it is what an in-place
    op on the view uses to rewrite the base's history (``copy_slices``). ``node_cls``/``ctx``
    record the view's backward when ``input`` requires grad. ``multi`` marks an output of a
    function returning several views (see ``record_multi_output``), under grad mode.
    """
    out = _make(array, input._device)
    base = getattr(input, "_base", None)
    grad = GRAD.enabled
    if base is None:
        root = input
        chain = view_fn
        strided = False
    else:
        root = base
        extra = input._extra
        prev = extra.get("view_fn") if extra else None
        chain = None if prev is None or view_fn is None else _compose(prev, view_fn)
        strided = chain is not None and extra.get("strided", False)
        # a view of an output of split/unbind/...: PyTorch keeps the mark
        multi = multi or (extra is not None and "multi" in extra)
    vc = getattr(root, "_vc", None)
    if vc is None:
        vc = root._vc = [0]
    out._vc = vc
    out._base = root
    multi = multi and grad
    if chain is not None or multi:
        extra = out._extra = {}
        if chain is not None:
            extra["view_fn"] = chain
            if strided:
                extra["strided"] = True
        if multi:
            extra["multi"] = True
    if grad:
        if node_cls is not None and input.requires_grad:
            record(node_cls, out, (input,), (), ctx)
        if root.grad_fn is not None or not root.requires_grad:
            # (a leaf that requires grad cannot change history in place: nothing to follow)
            views = root._views
            if views is None:
                root._views = {id(out): _weakref(out)}
            else:
                views[id(out)] = _weakref(out)
                if not len(views) & 63:
                    _drop_dead(views)
    return out


def _drop_dead(views: dict) -> None:
    """Forget the views that died (now and then: amortised O(1) a view). A dict keyed by
    ``id`` and only ``pop`` of dead entries, so a view registered by another thread meanwhile
    is not lost."""
    for k, r in list(views.items()):
        if r() is None and views.get(k) is r:
            views.pop(k, None)


def register_view(root: Tensor, view: Tensor) -> None:
    """Remember ``view`` (weakly) on ``root`` for ``refresh_views`` (``make_view`` does this
    inline for the views it makes)."""
    views = root._views
    if views is None:
        root._views = {id(view): _weakref(view)}
    else:
        views[id(view)] = _weakref(view)


def follow_retain(t: Tensor, old_fn, old_nr: int) -> None:
    """After ``t`` took a new ``grad_fn`` in place, move its ``retain_grad`` from the old
    node to the new one, as PyTorch does: ``t.grad`` is then the gradient of ``t``'s new
    value. (Ordinary tensor hooks stay on the old node, as in PyTorch.)"""
    extra = t._extra
    if extra is None or not extra.get("retains_grad") or t.grad_fn is old_fn:
        return
    retain = getattr(old_fn, "_retain", None) if old_fn is not None else None
    if retain:
        r = retain.get(old_nr)
        if r is not None and r() is t:
            del retain[old_nr]
    t.retain_grad()


def refresh_views(root: Tensor, written: Tensor | None = None) -> None:
    """After an in-place op under autograd gave ``root`` a new history, point every other
    live view of it (``written``, the view the op wrote through, is already rebased) at that
    history through an ``AsStridedBackward0`` node, as PyTorch does when such a view's
    ``grad_fn`` is next read. A view from ``split``/``unbind``/... gets a node that raises
    PyTorch's error if a backward reaches it (PyTorch raises as the ``grad_fn`` is read)."""
    views = root._views
    if not views:
        return
    for r in list(views.values()):
        v = r()
        # (a view given memory of its own since, by ``set_``, is no longer one)
        if v is not None and v is not written and v._base is root:
            _follow_root(root, v)
    _drop_dead(views)


def _follow_root(root: Tensor, view: Tensor) -> None:
    old_fn, old_nr = view.grad_fn, view._nr
    extra = view._extra
    if extra is not None and "multi" in extra:
        node = new_node(_RebasedMultiOutputView)
        node.next_functions = ()
        node.saved = ()
        node.versions = None
        node.ctx = multi_view_message(view, indirect=True)
        node.device = view._device
        view.grad_fn = node
    else:
        from .shape import AsStridedBackward0, _geometry

        geometry = (view._data.shape, view.stride(), view.storage_offset())
        record(AsStridedBackward0, view, (root,), (), (_geometry(root), geometry))
    view.requires_grad = True
    if view._nr:
        view._nr = 0
    follow_retain(view, old_fn, old_nr)


def _raise_rebased(node, grad):
    raise RuntimeError(node.ctx)


#: the history of a multi-output view whose base (or another view of it) was changed in place
_RebasedMultiOutputView = make_node_class("Error", _raise_rebased)


def _node_label(node) -> str:
    name = type(node).__name__
    cut = name.rfind("Backward")
    # ``SplitBackward0`` -> ``Split``; a custom Function's ``FBackward`` -> ``F``
    return name[:cut] if cut > 0 and (name[cut + 8:].isdigit() or len(name) == cut + 8) \
        else name


def multi_view_message(view: Tensor, indirect: bool = False) -> str:
    """PyTorch's error for an in-place change to (``indirect``: to the base of, or to another
    view of the base of) an output of a function returning several views."""
    modified = "its base or another view of its base has been" if indirect else "is being"
    gf = view.grad_fn
    if gf is not None:
        head = (f"Output {view._nr} of {_node_label(gf)} is a view and {modified} modified "
                "inplace.")
    else:
        head = (f"A view was created in no_grad mode and {modified} modified inplace with grad "
                "mode enabled.")
    if view._extra.get("multi") == "custom":  # an output view of a custom Function
        return (head + " This view was created inside a custom Function (or because an input "
                "was returned as-is) and the autograd logic to handle view+inplace would "
                "override the custom backward associated with the custom Function, leading to "
                "incorrect gradients. This behavior is forbidden. You can fix this by cloning "
                "the output of the custom Function.")
    return (head + " This view is the output of a function that returns multiple views. Such "
            "functions do not allow the output views to be modified inplace. You should "
            "replace the inplace operation by an out-of-place one.")


def record_multi_output(input: Tensor, outs, node_cls, ctx) -> tuple:
    """The tensors ``outs`` as the outputs of one ``node_cls`` node over ``input`` (``ctx``
    its context; ``output_nr`` 0, 1, ...) when ``input`` requires grad under grad mode:
    ``split``/``unbind`` (views made by ``make_view(..., multi=True)``, which then refuse
    in-place changes under autograd) and the ``unsafe_*`` splits."""
    outs = tuple(outs)
    if outs and input.requires_grad and GRAD.enabled:
        first = outs[0]
        record(node_cls, first, (input,), (), ctx)
        node = first.grad_fn
        if len(outs) > 1:
            node._n_out = len(outs)
        for i, o in enumerate(outs[1:], 1):
            o.requires_grad = True
            o.grad_fn = node
            o._nr = i
    return outs


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

    view_fn, result_node, spec, at = node.ctx
    grads_view = (None,)
    if result_node is not None:
        if result_node.versions is not None:
            result_node._check_versions()
        grads_view = result_node.backward(view_fn(grad))
        if not isinstance(grads_view, tuple):
            grads_view = (grads_view,)
    first = grads_view[at] if at < len(grads_view) else None
    if spec is None:
        spec = ViewFnIndex(view_fn, grad._device)
    g_base = scatter_by(grad, spec, 0 if first is None else first, False)
    return (g_base, *grads_view[:at], *grads_view[at + 1:])


CopySlices = make_node_class("CopySlices", _copy_slices_bw)


def copy_slices(base: Tensor, view: Tensor, result: Tensor, at: int = 0) -> None:
    """After ``view`` was overwritten in place with ``result``, rebase ``base``'s history.

    ``result.grad_fn``'s input ``at`` (the first, for the in-place ops; the changed argument
    of a custom Function) is the old value of the view; the new base node takes the old base
    plus the other inputs of that op.
    """
    view_fn = _view_chain(view)
    if base.requires_grad and base.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if view_fn is None:
        raise RuntimeError("a view of a tensor that requires grad was modified in place, but "
                           "the view cannot be replayed on its base (it was created in no_grad "
                           "mode or by an op that does not record its view function)")
    spec = replay = None
    vextra = view._extra
    if (vextra and vextra.get("strided")) or (
            base._extra and base._extra.get("geom") and not _replays(view_fn, base, view)):
        # a view given by storage geometry: the base's gradient flows through the elements
        # of the base that the view covers
        replay = StridedReplay.of(view)
        spec = logical_index(base, view)
        view_fn = spec.tget
    rnode = result.grad_fn
    old_base = _make(base._data, base._device)
    old_base.requires_grad = base.requires_grad
    old_base.grad_fn = base.grad_fn
    nr = getattr(base, "_nr", 0)
    if nr:
        old_base._nr = nr
    node = new_node(CopySlices)
    edges = rnode.next_functions if rnode is not None else ()
    node.next_functions = (edge(old_base), *edges[:at], *edges[at + 1:])
    node.saved = ()
    node.versions = None
    node.ctx = (view_fn, rnode, spec, at)
    node.device = base._device
    old_fn = base.grad_fn
    base.grad_fn = node
    base.requires_grad = True
    if nr:
        base._nr = 0
    follow_retain(base, old_fn, nr)
    # the view now reads from the rewritten base
    if replay is not None:
        vextra = view._extra_dict()
        vextra["view_fn"] = replay
        vextra["strided"] = True
        view_fn = replay
    fresh = view_fn(base)
    old_fn, old_nr = view.grad_fn, view._nr
    view.grad_fn = fresh.grad_fn
    view.requires_grad = True
    view._nr = getattr(fresh, "_nr", 0)
    del fresh
    follow_retain(view, old_fn, old_nr)
    refresh_views(base, view)


def _replays(view_fn, base, view) -> bool:
    """Whether ``view_fn(base)`` still gives ``view``'s geometry (the root may have changed
    shape in place since the chain was recorded)."""
    prev = GRAD.enabled
    GRAD.enabled = False
    try:
        a = view_fn(base)._data
    except Exception:
        return False
    finally:
        GRAD.enabled = prev
    b = view._data
    return a.shape == b.shape and a.strides == b.strides and _address(a) == _address(b)


class StridedReplay:
    """The ``view_fn`` of a view given by storage geometry: ``as_strided(base, size, stride,
    storage_offset)`` on the root (the offset counts from the root's storage)."""

    __slots__ = ("size", "stride", "offset")

    def __init__(self, size, stride, offset):
        self.size, self.stride, self.offset = tuple(size), tuple(stride), int(offset)

    @classmethod
    def of(cls, t: Tensor) -> StridedReplay:
        """The replay of ``t``'s current geometry."""
        return cls(t._data.shape, t.stride(), t.storage_offset())

    def __call__(self, base):
        from .shape import as_strided

        return as_strided(base, self.size, self.stride, self.offset)


def storage_positions(size, stride, offset, xp):
    """The storage positions (in elements) of a geometry's elements, flat in C order."""
    p = xp.zeros((), dtype=np.int64) + int(offset)
    for n, st in zip(size, stride):
        p = p[..., None] + xp.arange(n, dtype=np.int64) * int(st)
    return p.reshape(-1)


def logical_index(base: Tensor, view: Tensor):
    """An index spec (``indexing.AdvancedIndex``) selecting, for each element of ``view``, the
    element of ``base`` at the same storage position."""
    from .._device import xp_of
    from .indexing import AdvancedIndex

    xp = xp_of(base)
    bd = base._data
    if bd.ndim == 0:
        raise RuntimeError("an in-place change to a strided view of a 0-dim tensor that "
                           "requires grad is not supported")
    p_base = storage_positions(bd.shape, base.stride(), base.storage_offset(), xp)
    p_view = storage_positions(view._data.shape, view.stride(), view.storage_offset(), xp)
    if p_base.size == 0 or p_view.size == 0:
        flat = xp.zeros(p_view.shape, dtype=np.int64)
    else:
        lo = int(p_base.min())
        n = int(p_base.max()) - lo + 1
        where = xp.full((n,), -1, dtype=np.int64)
        where[p_base - lo] = xp.arange(p_base.size, dtype=np.int64)
        rel = p_view - lo
        inside = (rel >= 0) & (rel < n)
        flat = xp.where(inside, where[xp.clip(rel, 0, n - 1)], -1)
        if bool((flat < 0).any()):
            raise RuntimeError("a view that reaches memory outside its base was modified in "
                               "place while its base requires grad; its gradient cannot be "
                               "routed to the base")
    idx = xp.unravel_index(flat.reshape(view._data.shape), bd.shape)
    return AdvancedIndex((), tuple(idx))


def inplace_view(self: Tensor, array, node_cls, ctx, name: str) -> Tensor:
    """Give ``self`` the geometry of ``array`` (a view of its own memory) in place: the
    in-place form of a view op (``t_``, ``squeeze_``, ``as_strided_``, ...).

    The memory and the version counter stay; the version is bumped. Under autograd ``self``'s
    history becomes ``node_cls`` (the view op's backward, ``ctx`` its context) after its old
    one; a leaf that requires grad, or a view of one, raises PyTorch's error. A view keeps its
    base, its replay becoming storage geometry (``StridedReplay``) as in PyTorch; a root
    remembers its storage, and that views made of it before may no longer replay.
    """
    from .._storage import storage_of
    from ._inplace import check_inplace_autograd

    grad = GRAD.enabled
    if grad:
        check_inplace_autograd(self, name, self.requires_grad)
    track = grad and self.requires_grad
    old = None
    if track:
        old = _make(self._data, self._device)
        old.requires_grad = True
        old.grad_fn = self.grad_fn
        nr = self._nr
        if nr:
            old._nr = nr
    if self._base is not None:
        self._data = array
        extra = self._extra_dict()
        extra["view_fn"] = StridedReplay.of(self)
        extra["strided"] = True
    else:
        storage_of(self)  # the storage stays when the array moves inside it
        self._data = array
        self._extra_dict()["geom"] = True
    if track:
        old_fn, old_nr = self.grad_fn, self._nr
        record(node_cls, self, (old,), (), ctx)
        if self._nr:
            self._nr = 0
        follow_retain(self, old_fn, old_nr)
    self._bump_version()
    return self


# -- views the Tensor class itself hands out ------------------------------------------------

def _alias_backward(node, grad):
    return (grad,)


AliasBackward0 = make_node_class("AliasBackward0", _alias_backward)


def _same(base):
    return base


def alias(t: Tensor) -> Tensor:
    """A view of all of ``t`` (``as_subclass``): shared memory, version counter and history
    (``AliasBackward0`` when ``t`` requires grad)."""
    return make_view(t, t._data, AliasBackward0, None, _same)


def _resize_bw(node, g):
    return (g.contiguous().view(node.ctx),)


ResizeBackward = make_node_class("ResizeBackward", _resize_bw)


def resize_view(t: Tensor, sizes) -> Tensor:
    """``Tensor.resize``: a view (a copy when ``t`` is not contiguous) with ``t``'s elements
    in the shape ``sizes``, which must hold as many."""
    shape = tuple(sizes)
    numel = 1
    for n in shape:
        numel *= n
    d = t._data
    if d.size != numel:
        raise RuntimeError(f"requested resize to {shape_str(shape, 'x')} ({numel} elements "
                           f"in total), but the given tensor has a size of "
                           f"{shape_str(d.shape, 'x')} ({d.size} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    if d.flags.c_contiguous:
        return make_view(t, d.reshape(shape), ResizeBackward, d.shape,
                         lambda b, s=shape: b.reshape(s))
    return result(d.reshape(shape), t._device, ResizeBackward, (t,), (), d.shape)
