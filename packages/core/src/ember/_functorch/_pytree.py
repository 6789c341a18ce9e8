"""A minimal pytree: tuples, lists, dicts and namedtuples are nodes, anything else a leaf.

What ``vmap``'s ``in_dims``/``out_dims`` and the ``func`` transforms need (PyTorch keeps the
same in ``torch.utils._pytree``): flatten to leaves plus a spec, unflatten, and broadcast a
prefix tree (``in_dims=(0, None)`` over ``(x, {"a": y, "b": z})``) onto a full spec.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix",
           "treespec_pprint"]


class TreeSpec:
    """The structure of a pytree: ``kind`` (None for a leaf), its context (dict keys,
    namedtuple type) and the specs of its children."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind, context, children):
        self.kind, self.context, self.children = kind, context, children
        if kind is None:
            self.num_leaves = 1
        else:
            n = 0
            for c in children:
                n += c.num_leaves
            self.num_leaves = n

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.kind == other.kind
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        # PyTorch's layout (torch.utils._pytree.TreeSpec), so error messages match
        if self.kind is None:
            return "*"
        context = list(self.context) if self.kind is dict else None
        out = f"TreeSpec({self.kind.__name__}, {context}, ["
        if self.children:
            indent += 2
            out += self.children[0].__repr__(indent)
            out += "," if len(self.children) > 1 else ""
            out += ",".join("\n" + " " * indent + c.__repr__(indent)
                            for c in self.children[1:])
        return out + "])"


_LEAF = TreeSpec(None, None, [])


def _node(x):
    """``(kind, context, children)`` of a node, or None for a leaf."""
    tp = type(x)
    if tp is tuple or tp is list:
        return tp, None, list(x)
    if tp is dict:
        keys = list(x)
        return dict, tuple(keys), [x[k] for k in keys]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return tp, None, list(x)
    return None


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (left to right) and its structure."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves: list) -> TreeSpec:
    """``x``'s spec, its leaves appended to ``leaves`` (``_node``'s cases, inlined: vmap and
    the transforms flatten their arguments and results on every call)."""
    tp = type(x)
    if tp is tuple or tp is list:
        return TreeSpec(tp, None, [_flatten(c, leaves) for c in x])
    if tp is dict:
        keys = tuple(x)
        return TreeSpec(dict, keys, [_flatten(x[k], leaves) for k in keys])
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return TreeSpec(tp, None, [_flatten(c, leaves) for c in x])
    leaves.append(x)
    return _LEAF


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree of structure ``spec`` with ``leaves`` in order."""
    return _unflatten(spec, iter(leaves))


# Module-level recursions, not nested closures: a closure that calls itself is a reference
# cycle (function -> cell -> function) holding its frame's leaves, which only the garbage
# collector frees; with the collector off (``timeit``, ``benchmark.Timer``) every vmap call
# kept its batched tensors alive.
def _unflatten(s: TreeSpec, it):
    if s.kind is None:
        return next(it)
    children = [_unflatten(c, it) for c in s.children]
    if s.kind is dict:
        return dict(zip(s.context, children))
    if s.kind is tuple or s.kind is list:
        return s.kind(children)
    return s.kind(*children)  # namedtuple


class _Asterisk(str):
    def __repr__(self) -> str:
        return "*"


def treespec_pprint(spec: TreeSpec) -> str:
    """``spec`` drawn as its tree with ``*`` for leaves (``(*, [*, *])``): PyTorch's
    ``treespec_pprint``, which its error messages use."""
    return repr(tree_unflatten([_Asterisk("*")] * spec.num_leaves, spec))


def tree_map(fn, tree):
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``spec``) flattened to one
    value per leaf of ``spec``; None where the structures do not match."""
    out: list = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(p, s: TreeSpec, out: list) -> bool:
    """``broadcast_prefix``'s recursion: ``p``'s values for ``s``'s leaves appended to ``out``."""
    node = _node(p)
    if node is None:
        out.extend([p] * s.num_leaves)
        return True
    kind, ctx, children = node
    if s.kind is None or len(children) != len(s.children):
        return False
    if kind is dict:
        if s.kind is not dict or set(ctx) != set(s.context):
            return False
        by_key = dict(zip(ctx, children))
        children = [by_key[k] for k in s.context]
    elif kind is not s.kind:  # PyTorch's: a list does not match a tuple, nor a tuple a
        return False  # namedtuple
    return all(_broadcast(c, cs, out) for c, cs in zip(children, s.children))


def is_leaf(x: Any) -> bool:
    return _node(x) is None
