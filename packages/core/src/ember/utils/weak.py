"""``ember.utils.weak``: PyTorch's ``torch.utils.weak``, weak references keyed by identity.

A tensor's ``==`` is elementwise and its hash is its identity, so ``weakref.WeakKeyDictionary``
cannot hold tensors as keys reliably; ``WeakIdKeyDictionary`` (alias
``WeakTensorKeyDictionary``) keys by ``id`` through ``WeakIdRef`` and drops an entry when its
key is collected. Adapted, as PyTorch's is, from CPython's ``Lib/weakref.py``.
"""

from __future__ import annotations

import collections.abc as _collections_abc
import weakref
from collections.abc import Mapping, MutableMapping
from weakref import ref

from .._tensor import Tensor

WeakRef = ref

__all__ = [
    "TensorWeakRef",
    "WeakIdRef",
    "WeakIdKeyDictionary",
    "WeakTensorKeyDictionary",
]


class _IterationGuard:
    """Registers itself among the current iterators of a weak container, so that removals
    are delayed until the iteration ends."""

    def __init__(self, weakcontainer) -> None:
        # Don't create cycles
        self.weakcontainer = ref(weakcontainer)

    def __enter__(self):
        w = self.weakcontainer()
        if w is not None:
            w._iterating.add(self)
        return self

    def __exit__(self, e, t, b):
        w = self.weakcontainer()
        if w is not None:
            s = w._iterating
            s.remove(self)
            if not s:
                w._commit_removals()


class WeakIdRef(weakref.ref):
    """A weak reference hashed by the ``id`` of its referent and equal to another only when
    both point at the same live object (a dead one is equal only to itself)."""

    __slots__ = ["_id"]

    def __init__(self, key, callback=None) -> None:
        # the id is cached now: it is the hash, and it must survive the referent
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self):
        r = super().__call__()
        # PyTorch revives a tensor's Python object here; Ember's tensors need nothing
        if hasattr(r, "_fix_weakref"):
            r._fix_weakref()
        return r

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        # comparing the stored ids alone would be wrong: a dead object's id can be reused
        # by a new one (the ABA problem), and the two are unrelated
        a = self()
        b = other()
        if a is not None and b is not None:
            return a is b
        return self is other


class _WeakHashRef(WeakIdRef):
    """As ``WeakIdRef``, with ``hash(key)`` in place of ``id(key)``."""

    __slots__ = ()

    def __init__(self, key, callback=None) -> None:
        super().__init__(key, callback)
        self._id = hash(key)

    def __eq__(self, other):
        a = self()
        b = other()
        if a is not None and b is not None:
            return hash(a) == hash(b)
        return self is other

    __hash__ = WeakIdRef.__hash__


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (``ref_type``:
    ``WeakIdRef`` by default); an entry vanishes when its key is collected."""

    def __init__(self, dict=None, ref_type=WeakIdRef) -> None:
        self.data = {}

        self.ref_type = ref_type

        def remove(k, selfref=ref(self)) -> None:
            self = selfref()
            if self is not None:
                if self._iterating:
                    self._pending_removals.append(k)
                else:
                    try:
                        del self.data[k]
                    except KeyError:
                        pass

        self._remove = remove
        # A list of dead weakrefs (keys to be removed)
        self._pending_removals = []
        self._iterating = set()
        self._dirty_len = False
        if dict is not None:
            self.update(dict)

    def _commit_removals(self) -> None:
        # a dead weakref never compares equal to a live one, so the dict may be mutated
        # before this runs; keys may already be gone
        pop = self._pending_removals.pop
        d = self.data
        while True:
            try:
                key = pop()
            except IndexError:
                return

            try:
                del d[key]
            except KeyError:
                pass

    def _scrub_removals(self) -> None:
        d = self.data
        self._pending_removals = [k for k in self._pending_removals if k in d]
        self._dirty_len = False

    def __delitem__(self, key) -> None:
        self._dirty_len = True
        del self.data[self.ref_type(key)]

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __len__(self) -> int:
        if self._dirty_len and self._pending_removals:
            # pending removals may hold keys already removed explicitly (CPython #21173)
            self._scrub_removals()
        return len(self.data) - len(self._pending_removals)

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__} at {id(self):#x}>"

    def __setitem__(self, key, value) -> None:
        self.data[self.ref_type(key, self._remove)] = value

    def copy(self):
        new = WeakIdKeyDictionary()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = value
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        from copy import deepcopy

        new = self.__class__()
        with _IterationGuard(self):
            for key, value in self.data.items():
                o = key()
                if o is not None:
                    new[o] = deepcopy(value, memo)
        return new

    def get(self, key, default=None):
        return self.data.get(self.ref_type(key), default)

    def __contains__(self, key) -> bool:
        try:
            wr = self.ref_type(key)
        except TypeError:
            return False
        return wr in self.data

    def items(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                key = wr()
                if key is not None:
                    yield key, value

    def keys(self):
        with _IterationGuard(self):
            for wr in self.data:
                obj = wr()
                if obj is not None:
                    yield obj

    __iter__ = keys

    def values(self):
        with _IterationGuard(self):
            for wr, value in self.data.items():
                if wr() is not None:
                    yield value

    def keyrefs(self):
        """Return a list of weak references to the keys.

        The references are not guaranteed to be 'live' at the time
        they are used, so the result of calling the references needs
        to be checked before being used.  This can be used to avoid
        creating references that will cause the garbage collector to
        keep the keys around longer than needed.
        """
        return list(self.data)

    def popitem(self):
        self._dirty_len = True
        while True:
            key, value = self.data.popitem()
            o = key()
            if o is not None:
                return o, value

    def pop(self, key, *args):
        self._dirty_len = True
        return self.data.pop(self.ref_type(key), *args)

    def setdefault(self, key, default=None):
        return self.data.setdefault(self.ref_type(key, self._remove), default)

    def update(self, dict=None, **kwargs) -> None:
        d = self.data
        if dict is not None:
            if not hasattr(dict, "items"):
                dict = type({})(dict)
            for key, value in dict.items():
                d[self.ref_type(key, self._remove)] = value
        if kwargs:
            self.update(kwargs)

    def __ior__(self, other):
        self.update(other)
        return self

    def __or__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.copy()
            c.update(other)
            return c
        return NotImplemented

    def __ror__(self, other):
        if isinstance(other, _collections_abc.Mapping):
            c = self.__class__()
            c.update(other)
            c.update(self)
            return c
        return NotImplemented

    # Mapping's equality compares keys with ==; these compare by identity
    def __eq__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        return {id(k): v for k, v in self.items()} == {id(k): v for k, v in other.items()}


# Convenience alias
WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a Tensor: calling it gives the tensor, or None once collected."""

    ref: WeakRef[Tensor]

    def __init__(self, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        out = self.ref()
        if out is None:
            return out
        if not isinstance(out, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(out)}.")
        return out
