"""``immutable_list`` and ``immutable_dict``: the containers a :class:`~ember.fx.Node`
keeps its ``args``/``kwargs`` in, so that editing them in place raises
(``torch.fx.immutable_collections``); give a node new arguments by assigning
``node.args``/``node.kwargs``."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_list", "immutable_dict"]

_help_mutation = """
If you are attempting to modify the kwargs or args of a torch.fx.Node object,
instead create a new copy of it and assign the copy to the node:

    new_args = ...  # copy and mutate args
    node.args = new_args
""".strip()


def _no_mutation(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__!r} object does not support mutation. "
                    f"{_help_mutation}")


class immutable_list(list):
    """A list that refuses changes (hashable by its items)."""

    __delitem__ = _no_mutation
    __iadd__ = _no_mutation
    __imul__ = _no_mutation
    __setitem__ = _no_mutation
    append = _no_mutation
    clear = _no_mutation
    extend = _no_mutation
    insert = _no_mutation
    pop = _no_mutation
    remove = _no_mutation
    reverse = _no_mutation
    sort = _no_mutation

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self):
        return (type(self), (tuple(self),))


class immutable_dict(dict):
    """A dict that refuses changes (hashable by its items)."""

    __delitem__ = _no_mutation
    __ior__ = _no_mutation
    __setitem__ = _no_mutation
    clear = _no_mutation
    pop = _no_mutation
    popitem = _no_mutation
    setdefault = _no_mutation
    update = _no_mutation

    def __hash__(self) -> int:
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (type(self), (tuple(self.items()),))
