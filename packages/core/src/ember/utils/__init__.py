"""``ember.utils``: PyTorch's ``torch.utils`` import paths, and ``swap_tensors``."""

import copyreg
import weakref

__all__ = ["swap_tensors"]

_POISONED_MSG = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors "
    "this can happen when you try to run backward on a tensor that was swapped. "
    "For a module m with `torch.__future__.set_swap_module_params_on_conversion(True)` "
    "you should not change the device or dtype of the module (e.g. `m.cpu()` or `m.half()`) "
    "between running forward and backward. To resolve this, please only change the "
    "device/dtype before running forward (or after both forward and backward)."
)


def _poisoned_accumulate(grad_outputs):
    raise RuntimeError(_POISONED_MSG)


def _own_accumulate_refs(t) -> list:
    """The weak references to ``t`` held by its own AccumulateGrad node (the node a leaf
    gets when a graph first records it): PyTorch's node holds the tensor itself, which
    ``swap_tensors`` allows, so these are not the caller's weakrefs."""
    node = t.__dict__.get("_accum") if hasattr(t, "__dict__") else None
    ref = getattr(node, "_variable", None)
    return [ref] if ref is not None else []


def _registry_refs(t) -> list:
    """The weak references to view ``t`` that its root keeps to rebase it after in-place
    changes (``ember.ops.views.refresh_views``): the root's, not the caller's."""
    base = t.__dict__.get("_base") if hasattr(t, "__dict__") else None
    views = getattr(base, "_views", None) if base is not None else None
    r = views.get(id(t)) if views else None
    return [r] if r is not None and r() is t else []


def _has_foreign_ref(t) -> bool:
    """Whether something other than ``t``'s own AccumulateGrad node and its root's view
    registry holds a weak reference to ``t`` (compared by identity: a live reference's ``==``
    compares the tensors)."""
    own = [id(r) for r in _own_accumulate_refs(t) + _registry_refs(t)]
    return any(id(r) not in own for r in weakref.getweakrefs(t))


def swap_tensors(t1, t2) -> None:
    """Swap the contents of two tensors in place, as ``torch.utils.swap_tensors``: ``t1``
    takes everything of ``t2`` (data, dtype, device, ``requires_grad``, ``grad``,
    ``grad_fn``, version counter, Python class and ``__dict__``) and ``t2`` everything of
    ``t1``, while each keeps its identity, so every reference held elsewhere sees the swap.

    Refused, with PyTorch's errors, when either tensor has a weak reference or the two
    classes have different ``__slots__``. A leaf already recorded by an autograd graph gets
    a fresh AccumulateGrad node; the old one is poisoned, so running backward through a
    graph recorded before the swap raises. Unlike PyTorch, Ember cannot count the other
    holders of a tensor's data (its views, a graph that saved it for backward): swapping
    such a tensor is not refused, and those holders then see the swapped object.
    """
    if _has_foreign_ref(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if _has_foreign_ref(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    if t1 is t2:
        return

    # the class first (it fails for layouts that differ), then the dynamic attributes, which
    # hold grad, the version counter, the view base, hooks and a subclass's own fields
    cls1, cls2 = type(t1), type(t2)
    t1.__class__, t2.__class__ = cls2, cls1
    for t in (t1, t2):  # each root forgets the view it had: it is re-registered below
        base = t.__dict__.get("_base")
        if base is not None and base._views:
            base._views.pop(id(t), None)
    d1, d2 = t1.__dict__, t2.__dict__
    t1.__dict__, t2.__dict__ = d2, d1
    # the views made of a tensor name it (their _base), so its registry of them stays
    v1, v2 = d1.pop("_views", None), d2.pop("_views", None)
    if v1 is not None:
        d2["_views"] = v1
    if v2 is not None:
        d1["_views"] = v2
    from ..ops.views import register_view

    for t in (t1, t2):
        base = t.__dict__.get("_base")
        if base is not None:
            register_view(base, t)
    for d in (d1, d2):
        node = d.pop("_accum", None)
        if node is not None:
            node.register_prehook(_poisoned_accumulate)

    # the slots through their member descriptors: a subclass's property of the same name
    # (SparseTensor's requires_grad) must not stand in for the stored value
    for slot in t1_slots:
        member = _slot_descriptor(cls1, slot)
        has1, has2 = _has_slot(member, t1), _has_slot(member, t2)
        v1 = member.__get__(t1) if has1 else None
        v2 = member.__get__(t2) if has2 else None
        if has2:
            member.__set__(t1, v2)
        elif has1:
            member.__delete__(t1)
        if has1:
            member.__set__(t2, v1)
        elif has2:
            member.__delete__(t2)


def _slot_descriptor(cls, name: str):
    """The member descriptor that stores slot ``name`` (as ``copyreg._slotnames`` spells
    it) of ``cls``'s instances."""
    for klass in cls.__mro__:
        member = klass.__dict__.get(name)
        if type(member) is _MEMBER_DESCRIPTOR:
            return member
    raise AttributeError(name)


_MEMBER_DESCRIPTOR = type(type("_Slotted", (), {"__slots__": ("x",)}).__dict__["x"])


def _has_slot(member, obj) -> bool:
    try:
        member.__get__(obj)
    except AttributeError:
        return False
    return True


def __getattr__(name: str):
    # ``torch.utils.checkpoint``, ``torch.utils.data``, ``torch.utils.benchmark`` (and the
    # small modules ``torch.utils`` imports: ``collect_env``, ``dlpack``, ``hooks``, ``weak``,
    # ``_pytree``) work after a plain ``import torch``
    # ``deterministic`` (``fill_uninitialized_memory``, the reproducibility note) and
    # ``backcompat`` (the broadcasting note) are reachable the same way in PyTorch
    if name in ("benchmark", "checkpoint", "data", "collect_env", "dlpack", "hooks", "weak",
                "_pytree", "deterministic", "backcompat"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
