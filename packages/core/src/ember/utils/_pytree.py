"""``ember.utils._pytree``: PyTorch's ``torch.utils._pytree`` (its Python implementation).

A *pytree* is a nested Python structure: its nodes are containers of registered types (tuple,
list, dict, namedtuple, OrderedDict, defaultdict, deque, ``ember.return_types``, and what
:func:`register_pytree_node` or :func:`register_dataclass` adds) and everything else,
``None`` and tensors included, is a leaf. :func:`tree_flatten` turns a pytree into its leaves
and a :class:`TreeSpec`; :func:`tree_unflatten` inverts it; :func:`tree_map` and friends work
on the leaves. :func:`treespec_dumps` and :func:`treespec_loads` speak PyTorch's JSON format
(protocol 1), so a spec dumped by one loads in the other.

As PyTorch's, except: ``ember.return_types`` are named tuples (PyTorch's are structseqs), yet
they are pytree nodes as PyTorch's are (their own node type, no context, ``[i]`` key paths),
while ``is_namedtuple`` is true and ``is_structseq`` false for them. :func:`treespec_loads`
never imports a module nor runs code: a defaultdict's ``default_factory`` and an Enum in a
context must come from a module already imported, and a loaded spec is checked against the
schema, with a ``ValueError`` that says what is wrong. ``register_constant`` is left out.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from .. import return_types as _return_types

__all__ = [
    "PyTree",
    "Context",
    "FlattenFn",
    "UnflattenFn",
    "DumpableContext",
    "ToDumpableContextFn",
    "FromDumpableContextFn",
    "PyTreeSpec",
    "TreeSpec",
    "LeafSpec",
    "keystr",
    "key_get",
    "register_pytree_node",
    "tree_is_leaf",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_unflatten",
    "tree_iter",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_structure",
    "tree_map",
    "tree_map_with_path",
    "tree_map_",
    "tree_map_only",
    "tree_map_only_",
    "tree_all",
    "tree_any",
    "tree_all_only",
    "tree_any_only",
    "treespec_dumps",
    "treespec_loads",
    "treespec_pprint",
    "is_namedtuple",
    "is_namedtuple_class",
    "is_namedtuple_instance",
    "is_structseq",
    "is_structseq_class",
    "is_structseq_instance",
]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"


class KeyEntry(Protocol):
    """One step of a key path: ``str()`` prints it, ``get(parent)`` follows it."""

    def __hash__(self) -> int: ...

    def __eq__(self, other: object) -> bool: ...

    def __str__(self) -> str: ...

    def get(self, parent: Any) -> Any: ...


Context = Any
PyTree = Any
FlattenFn = Callable[[PyTree], tuple[list[Any], Context]]
UnflattenFn = Callable[[Iterable[Any], Context], PyTree]
DumpableContext = Any  # any JSON-dumpable value
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
KeyPath = tuple[KeyEntry, ...]
FlattenWithKeysFn = Callable[[PyTree], tuple[list[tuple[KeyEntry, Any]], Any]]
IsLeafFn = Callable[[PyTree], bool] | None


class NodeDef(NamedTuple):
    type: type[Any]
    flatten_fn: FlattenFn
    unflatten_fn: UnflattenFn
    flatten_with_keys_fn: FlattenWithKeysFn | None


class _SerializeNodeDef(NamedTuple):
    typ: type[Any]
    serialized_type_name: str
    to_dumpable_context: ToDumpableContextFn | None
    from_dumpable_context: FromDumpableContextFn | None


_NODE_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict[type[Any], NodeDef] = {}
SUPPORTED_SERIALIZED_TYPES: dict[type[Any], _SerializeNodeDef] = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict[str, type[Any]] = {}


# --- registration ---------------------------------------------------------------------------


def register_pytree_node(
    cls: type[Any],
    flatten_fn: FlattenFn,
    unflatten_fn: UnflattenFn,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: ToDumpableContextFn | None = None,
    from_dumpable_context: FromDumpableContextFn | None = None,
    flatten_with_keys_fn: FlattenWithKeysFn | None = None,
) -> None:
    """Register a container type as a pytree node.

    Args:
        cls: the type to register (instances of exactly this type become nodes).
        flatten_fn: ``node -> (children, context)``.
        unflatten_fn: ``(children, context) -> node``.
        serialized_type_name: the name :func:`treespec_dumps` writes for ``cls``.
        to_dumpable_context, from_dumpable_context: turn a context into a JSON-dumpable
            value and back, for a context that ``json`` cannot dump as it is (both or neither).
        flatten_with_keys_fn: like ``flatten_fn`` but returns ``[(key, child), ...]``: what
            :func:`tree_flatten_with_path` needs.
    """
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
        _private_register_pytree_node(
            cls,
            flatten_fn,
            unflatten_fn,
            serialized_type_name=serialized_type_name,
            to_dumpable_context=to_dumpable_context,
            from_dumpable_context=from_dumpable_context,
            flatten_with_keys_fn=flatten_with_keys_fn,
        )


def _private_register_pytree_node(
    cls: type[Any],
    flatten_fn: FlattenFn,
    unflatten_fn: UnflattenFn,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: ToDumpableContextFn | None = None,
    from_dumpable_context: FromDumpableContextFn | None = None,
    flatten_with_keys_fn: FlattenWithKeysFn | None = None,
) -> None:
    """Register (or, with a warning, re-register) ``cls`` as a node."""
    if (to_dumpable_context is None) ^ (from_dumpable_context is None):
        raise ValueError(
            f"Both to_dumpable_context and from_dumpable_context for {cls} must "
            "be None or registered."
        )
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            warnings.warn(
                f"{cls} is already registered as pytree node. "
                "Overwriting the previous registration.",
                stacklevel=3,
            )
            _deregister_pytree_node(cls)
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        name = serialized_type_name or NO_SERIALIZED_TYPE_NAME_FOUND
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(
            cls, name, to_dumpable_context, from_dumpable_context
        )
        if name != NO_SERIALIZED_TYPE_NAME_FOUND:
            SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def _register_pytree_node(
    cls: type[Any],
    flatten_fn: FlattenFn,
    unflatten_fn: UnflattenFn,
    to_str_fn: Any = None,
    maybe_from_str_fn: Any = None,
    **kwargs: Any,
) -> None:
    """Deprecated: :func:`register_pytree_node` that re-registers with a warning."""
    warnings.warn(
        "`torch.utils._pytree._register_pytree_node` is deprecated. "
        "Please use `torch.utils._pytree.register_pytree_node` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if to_str_fn is not None or maybe_from_str_fn is not None:
        warnings.warn(
            "`to_str_fn` and `maybe_from_str_fn` is deprecated. "
            "Please use `to_dumpable_context` and `from_dumpable_context` instead.",
            FutureWarning,
            stacklevel=2,
        )
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


def _deregister_pytree_node(cls: type[Any]) -> None:
    """Forget ``cls`` as a node (and its serialized name)."""
    with _NODE_REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        node_def = SUPPORTED_SERIALIZED_TYPES.pop(cls)
        if SERIALIZED_TYPE_TO_PYTHON_TYPE.get(node_def.serialized_type_name) is cls:
            del SERIALIZED_TYPE_TO_PYTHON_TYPE[node_def.serialized_type_name]


def register_dataclass(
    cls: type[Any],
    *,
    field_names: list[str] | None = None,
    drop_field_names: list[str] | None = None,
    serialized_type_name: str | None = None,
) -> None:
    """Register a dataclass (or a class built from keyword fields) as a pytree node.

    Its children are the ``field_names`` (a dataclass's ``init`` fields by default, less
    ``drop_field_names``) whose value is not None; ``cls(**fields)`` rebuilds it.
    """
    drop = set(drop_field_names or ())
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError(
                "field_names must be specified with a list of all fields used to "
                f"initialize {cls}, as it is not a dataclass."
            )
    else:
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init}
        if field_names is None:
            field_names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in drop]
        elif init_fields - drop != set(field_names):
            message = "field_names does not include all dataclass fields.\n"
            if missing := init_fields - drop - set(field_names):
                message += (
                    f"Missing fields in `field_names`: {missing}. If you want "
                    "to include these fields in the pytree, please add them "
                    "to `field_names`, otherwise please add them to "
                    "`drop_field_names`.\n"
                )
            if unexpected := set(field_names) - (init_fields - drop):
                message += (
                    f"Unexpected fields in `field_names`: {unexpected}. "
                    "Please remove these fields, or add them to `drop_field_names`.\n"
                )
            raise ValueError(message)
    names = list(field_names)

    def flatten(obj: Any) -> tuple[list[Any], Context]:
        values = [getattr(obj, n) for n in names]
        present = [n for n, v in zip(names, values) if v is not None]
        absent = [n for n, v in zip(names, values) if v is None]
        return [v for v in values if v is not None], [present, absent]

    def unflatten(values: Iterable[Any], context: Context) -> Any:
        present, absent = context
        return cls(**dict(zip(present, values, strict=True)), **dict.fromkeys(absent))

    def flatten_with_keys(obj: Any) -> tuple[list[tuple[KeyEntry, Any]], Context]:
        values, (present, _) = flatten(obj)
        return [(GetAttrKey(n), v) for n, v in zip(present, values, strict=True)], present

    _private_register_pytree_node(
        cls, flatten, unflatten,
        serialized_type_name=serialized_type_name, flatten_with_keys_fn=flatten_with_keys,
    )


# --- key paths ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey(Generic[T]):
    """The ``idx``-th element of a sequence; prints as ``[idx]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Sequence[T]) -> T:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True, slots=True)
class MappingKey(Generic[K, T]):
    """The value of ``key`` in a mapping; prints as ``[key]``."""

    key: K

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Mapping[K, T]) -> T:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """The attribute ``name``; prints as ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def keystr(kp: KeyPath) -> str:
    """A key path printed: ``"[0]['a'].x"``."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The value at key path ``kp`` inside ``obj``."""
    for k in kp:
        obj = k.get(obj)
    return obj


# --- namedtuple and structseq ---------------------------------------------------------------


def is_namedtuple(obj: object | type) -> bool:
    """Whether ``obj`` is a namedtuple class or an instance of one."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_class(cls: type) -> bool:
    """Whether ``cls`` is a namedtuple class (a tuple with ``_fields``, ``_make``, ``_asdict``)."""
    return (
        isinstance(cls, type)
        and issubclass(cls, tuple)
        and isinstance(getattr(cls, "_fields", None), tuple)
        and all(type(field) is str for field in cls._fields)  # type: ignore[attr-defined]
        and callable(getattr(cls, "_make", None))
        and callable(getattr(cls, "_asdict", None))
    )


def is_namedtuple_instance(obj: object) -> bool:
    """Whether ``obj`` is an instance of a namedtuple class."""
    return is_namedtuple_class(type(obj))


_Py_TPFLAGS_BASETYPE = 1 << 10  # CPython: the type can be subclassed


def is_structseq(obj: object | type) -> bool:
    """Whether ``obj`` is a C struct sequence class (``os.stat_result``) or an instance."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls: type) -> bool:
    """Whether ``cls`` is a C struct sequence (PyStructSequence) class."""
    return (
        isinstance(cls, type)
        and cls.__bases__ == (tuple,)
        and isinstance(getattr(cls, "n_fields", None), int)
        and isinstance(getattr(cls, "n_sequence_fields", None), int)
        and isinstance(getattr(cls, "n_unnamed_fields", None), int)
        and not cls.__flags__ & _Py_TPFLAGS_BASETYPE
    )


def is_structseq_instance(obj: object) -> bool:
    """Whether ``obj`` is an instance of a C struct sequence class."""
    return is_structseq_class(type(obj))


# --- the built-in node types ----------------------------------------------------------------


def _seq_keys(children: list[Any]) -> list[tuple[KeyEntry, Any]]:
    return [(SequenceKey(i), v) for i, v in enumerate(children)]


def _tuple_flatten(d: tuple[Any, ...]) -> tuple[list[Any], Context]:
    return list(d), None


def _tuple_flatten_with_keys(d: tuple[Any, ...]) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return _seq_keys(list(d)), None


def _list_flatten(d: list[Any]) -> tuple[list[Any], Context]:
    return d, None


def _list_flatten_with_keys(d: list[Any]) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return _seq_keys(d), None


def _dict_flatten(d: dict[Any, Any]) -> tuple[list[Any], Context]:
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d: dict[Any, Any]) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return [(MappingKey(k), v) for k, v in d.items()], list(d.keys())


def _dict_unflatten(values: Iterable[Any], context: Context) -> dict[Any, Any]:
    return dict(zip(context, values, strict=True))


def _ordereddict_unflatten(values: Iterable[Any], context: Context) -> OrderedDict[Any, Any]:
    return OrderedDict(zip(context, values, strict=True))


def _namedtuple_flatten(d: Any) -> tuple[list[Any], Context]:
    return list(d), type(d)


def _namedtuple_flatten_with_keys(d: Any) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return [(GetAttrKey(f), v) for f, v in zip(d._fields, d, strict=True)], type(d)


def _namedtuple_unflatten(values: Iterable[Any], context: Context) -> Any:
    return context(*values)


def _namedtuple_serialize(context: Context) -> DumpableContext:
    node_def = SUPPORTED_SERIALIZED_TYPES.get(context)
    if node_def is None:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {context} because we "
            "didn't register a serializated_type_name. Please register using "
            "`_register_namedtuple`."
        )
    if node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {context} because we "
            "couldn't find a serializated_type_name. Please register using "
            "`_register_namedtuple`."
        )
    return node_def.serialized_type_name


def _namedtuple_deserialize(dumpable_context: DumpableContext) -> Context:
    if not isinstance(dumpable_context, str) or (
        dumpable_context not in SERIALIZED_TYPE_TO_PYTHON_TYPE
    ):
        raise NotImplementedError(
            f"Can't deserialize TreeSpec of namedtuple class {dumpable_context} "
            "because we couldn't find a serializated name."
        )
    return SERIALIZED_TYPE_TO_PYTHON_TYPE[dumpable_context]


def _register_namedtuple(cls: type[Any], *, serialized_type_name: str) -> None:
    """Give namedtuple class ``cls`` a serialized name, so that specs holding it dump."""
    _private_register_pytree_node(
        cls,
        _namedtuple_flatten,
        _namedtuple_unflatten,
        serialized_type_name=serialized_type_name,
        to_dumpable_context=_namedtuple_serialize,
        from_dumpable_context=_namedtuple_deserialize,
        flatten_with_keys_fn=_namedtuple_flatten_with_keys,
    )


def _defaultdict_flatten(d: defaultdict[Any, Any]) -> tuple[list[Any], Context]:
    return list(d.values()), [d.default_factory, list(d.keys())]


def _defaultdict_flatten_with_keys(
    d: defaultdict[Any, Any],
) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return [(MappingKey(k), v) for k, v in d.items()], [d.default_factory, list(d.keys())]


def _defaultdict_unflatten(values: Iterable[Any], context: Context) -> defaultdict[Any, Any]:
    default_factory, keys = context
    return defaultdict(default_factory, zip(keys, values, strict=True))


def _defaultdict_serialize(context: Context) -> DumpableContext:
    default_factory, keys = context
    return {
        "default_factory_module": default_factory.__module__,
        "default_factory_name": default_factory.__qualname__,
        "dict_context": keys,
    }


def _defaultdict_deserialize(dumpable_context: DumpableContext) -> Context:
    expected = {"default_factory_module", "default_factory_name", "dict_context"}
    if not isinstance(dumpable_context, dict) or set(dumpable_context) != expected:
        raise ValueError(
            f"treespec_loads: a defaultdict's context must be an object with the keys "
            f"{sorted(expected)}, got {dumpable_context!r}"
        )
    module = dumpable_context["default_factory_module"]
    name = dumpable_context["default_factory_name"]
    keys = dumpable_context["dict_context"]
    if not isinstance(module, str) or not isinstance(name, str) or not isinstance(keys, list):
        raise ValueError(f"treespec_loads: malformed defaultdict context {dumpable_context!r}")
    default_factory = _lookup(module, name, "the defaultdict default_factory")
    if not callable(default_factory):
        raise ValueError(f"treespec_loads: default_factory {module}.{name} is not callable")
    return [default_factory, keys]


def _deque_flatten(d: deque[Any]) -> tuple[list[Any], Context]:
    return list(d), d.maxlen


def _deque_flatten_with_keys(d: deque[Any]) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return _seq_keys(list(d)), d.maxlen


def _deque_unflatten(values: Iterable[Any], context: Context) -> deque[Any]:
    return deque(values, maxlen=context)


_private_register_pytree_node(
    tuple, _tuple_flatten, lambda values, context: tuple(values),
    serialized_type_name="builtins.tuple", flatten_with_keys_fn=_tuple_flatten_with_keys,
)
_private_register_pytree_node(
    list, _list_flatten, lambda values, context: list(values),
    serialized_type_name="builtins.list", flatten_with_keys_fn=_list_flatten_with_keys,
)
_private_register_pytree_node(
    dict, _dict_flatten, _dict_unflatten,
    serialized_type_name="builtins.dict", flatten_with_keys_fn=_dict_flatten_with_keys,
)
_private_register_pytree_node(
    namedtuple,  # type: ignore[arg-type]  # every namedtuple class's node type
    _namedtuple_flatten, _namedtuple_unflatten,
    serialized_type_name="collections.namedtuple",
    to_dumpable_context=_namedtuple_serialize, from_dumpable_context=_namedtuple_deserialize,
    flatten_with_keys_fn=_namedtuple_flatten_with_keys,
)
_private_register_pytree_node(
    OrderedDict, _dict_flatten, _ordereddict_unflatten,
    serialized_type_name="collections.OrderedDict", flatten_with_keys_fn=_dict_flatten_with_keys,
)
_private_register_pytree_node(
    defaultdict, _defaultdict_flatten, _defaultdict_unflatten,
    serialized_type_name="collections.defaultdict",
    to_dumpable_context=_defaultdict_serialize, from_dumpable_context=_defaultdict_deserialize,
    flatten_with_keys_fn=_defaultdict_flatten_with_keys,
)
_private_register_pytree_node(
    deque, _deque_flatten, _deque_unflatten,
    serialized_type_name="collections.deque", flatten_with_keys_fn=_deque_flatten_with_keys,
)

STANDARD_DICT_TYPES: frozenset[type] = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES: frozenset[Any] = frozenset(
    {tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque}
)


def _register_return_type(cls: type[Any]) -> None:
    """An ``ember.return_types`` class as a node of its own, as PyTorch registers its
    structseqs (``torch/return_types.py``): no context, ``[i]`` keys."""

    def unflatten(values: Iterable[Any], context: Context) -> Any:
        return cls(*values)

    _private_register_pytree_node(
        cls, _tuple_flatten, unflatten, flatten_with_keys_fn=_tuple_flatten_with_keys
    )


for _cls in list(vars(_return_types).values()):
    if is_namedtuple_class(_cls) and _cls.__module__ == _return_types.__name__:
        _register_return_type(_cls)
del _cls


def _get_node_type(tree: Any) -> Any:
    """The registry key of ``tree``: its type, or ``namedtuple`` for any namedtuple."""
    node_type = type(tree)
    if is_namedtuple_class(node_type):
        if node_type.__module__ != _return_types.__name__:
            return namedtuple
        if node_type not in SUPPORTED_NODES:  # a return type made after this module's import
            with _NODE_REGISTRY_LOCK:
                if node_type not in SUPPORTED_NODES:
                    _register_return_type(node_type)
    return node_type


def tree_is_leaf(tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` says so, or its type is not a node.

    >>> tree_is_leaf(None), tree_is_leaf([1, 2]), tree_is_leaf((1, 2), lambda x: True)
    (True, False, True)
    """
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


# --- TreeSpec -------------------------------------------------------------------------------


@dataclasses.dataclass(init=False, frozen=True, eq=False, repr=False, slots=True)
class TreeSpec:
    """The structure of a pytree: the node ``type`` (None for a leaf), its ``context`` and
    its children's specs."""

    type: Any
    _context: Context
    _children: list[TreeSpec]
    num_nodes: int
    num_leaves: int
    num_children: int

    def __init__(self, type: Any, context: Context, children_specs: list[TreeSpec]) -> None:
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if len(children_specs) != 0:
                raise AssertionError("leaf node should not have children")
            nodes, leaves = 1, 1
        else:
            nodes = 1 + sum(c.num_nodes for c in children_specs)
            leaves = sum(c.num_leaves for c in children_specs)
        for name, value in (("type", type), ("_context", context),
                            ("_children", children_specs), ("num_nodes", nodes),
                            ("num_leaves", leaves), ("num_children", len(children_specs))):
            object.__setattr__(self, name, value)

    def __repr__(self, indent: int = 0) -> str:
        out = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self._children:
            indent += 2
            out += self._children[0].__repr__(indent)
            out += "," if self.num_children > 1 else ""
            out += ",".join("\n" + " " * indent + c.__repr__(indent)
                            for c in self._children[1:])
        return out + "])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, TreeSpec)
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        node_type, context = self.type, self._context
        if node_type is defaultdict:
            context = (context[0], tuple(context[1]))
        elif node_type in (dict, OrderedDict):
            context = tuple(context)
        elif node_type is not None and node_type not in BUILTIN_TYPES:
            context = None  # a custom node's context may not be hashable
        return hash((node_type, context, tuple(self._children)))

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list[TreeSpec]:
        """Deprecated: :meth:`children` or :meth:`child`."""
        warnings.warn(
            "`treespec.children_specs` is deprecated. "
            "Use `treespec.child(index)` to access a single child, "
            "or `treespec.children()` to get all children.",
            FutureWarning,
            stacklevel=2,
        )
        return self._children

    def is_leaf(self) -> bool:
        """Whether this spec is a leaf's."""
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list[TreeSpec]:
        """The children's specs (a copy)."""
        return self._children.copy()

    def child(self, index: int) -> TreeSpec:
        """The ``index``-th child's spec."""
        return self._children[index]

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this spec as a
        prefix of its structure); what :func:`tree_map` does to its extra trees."""
        subtrees: list[PyTree] = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, node: PyTree, subtrees: list[PyTree]) -> None:
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _get_node_type(node)
        if self.type not in BUILTIN_TYPES:
            if node_type != self.type:  # custom nodes match exactly
                raise ValueError(
                    f"Type mismatch; expected {self.type!r}, but got {node_type!r}."
                )
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(
                    f"Node arity mismatch; expected {self.num_children}, "
                    f"but got {len(children)}."
                )
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        else:
            both_dicts = self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
            if not both_dicts and node_type != self.type:
                raise ValueError(
                    f"Node type mismatch; expected {self.type!r}, but got {node_type!r}."
                )
            if len(node) != self.num_children:
                raise ValueError(
                    f"Node arity mismatch; expected {self.num_children}, but got {len(node)}."
                )
            if both_dicts:  # dict kinds match one another, by keys; default_factory ignored
                keys = self._context[1] if self.type is defaultdict else self._context
                missing, extra = set(keys) - set(node), set(node) - set(keys)
                if missing or extra:
                    message = f"; missing key(s): {missing}" if missing else ""
                    message += f"; extra key(s): {extra}" if extra else ""
                    raise ValueError(f"Node keys mismatch{message}.")
                children = [node[k] for k in keys]
            else:
                children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
                if node_type is not deque and context != self._context:  # deque: any maxlen
                    raise ValueError(
                        f"Node context mismatch for node type {self.type!r}; "
                        f"expected {self._context!r}, but got {context!r}."
                    )
        for subtree, subspec in zip(children, self._children, strict=True):
            subspec._flatten_up_to(subtree, subtrees)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The pytree of this structure holding ``leaves``."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                f"but the spec refers to a pytree that holds {self.num_leaves} "
                f"items ({self})."
            )
        return self._unflatten(iter(leaves))

    def _unflatten(self, leaves: Iterator[Any]) -> PyTree:
        if self.is_leaf():
            return next(leaves)
        children = [c._unflatten(leaves) for c in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


PyTreeSpec = TreeSpec


class LeafSpec(TreeSpec):
    """Deprecated: a leaf's spec (``spec.is_leaf()`` is the way to ask)."""

    __slots__ = ()

    def __init__(self) -> None:
        warnings.warn(
            "`isinstance(treespec, LeafSpec)` is deprecated, "
            "use `isinstance(treespec, TreeSpec) and treespec.is_leaf()` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(None, None, [])

    def __repr__(self, indent: int = 0) -> str:
        return "*"


with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    _LEAF_SPEC = LeafSpec()  # every leaf's spec


def treespec_leaf() -> TreeSpec:
    """A leaf's spec."""
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = (), /) -> TreeSpec:
    """A tuple's spec from its children's specs."""
    children = list(iterable)
    if any(not isinstance(child, TreeSpec) for child in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(
    mapping: Mapping[Any, TreeSpec] | Iterable[tuple[Any, TreeSpec]] = (),
    /,
    **kwargs: TreeSpec,
) -> TreeSpec:
    """A dict's spec from its children's specs, by key."""
    dct = dict(mapping, **kwargs)
    if any(not isinstance(child, TreeSpec) for child in dct.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {dct!r}.")
    return TreeSpec(dict, list(dct.keys()), list(dct.values()))


def _check_treespec(treespec: Any) -> TreeSpec:
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            "Expected `treespec` to be an instance of "
            f"PyTreeSpec but got item of type {type(treespec)}."
        )
    return treespec


# --- flatten, unflatten, map ----------------------------------------------------------------


def tree_flatten(tree: PyTree, is_leaf: IsLeafFn = None) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` (depth first, in the containers' order) and its spec.

    >>> tree_flatten({"a": 1, "b": (2, None)})
    ([1, 2, None], TreeSpec(dict, ['a', 'b'], [*,
      TreeSpec(tuple, None, [*,
        *])]))
    """
    leaves: list[Any] = []

    def helper(node: PyTree) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        node_type = _get_node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [helper(child) for child in children])

    return leaves, helper(tree)


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The pytree of structure ``treespec`` holding ``leaves``: :func:`tree_flatten`'s
    inverse. The two arguments may come in either order."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            _check_treespec(treespec)
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: IsLeafFn = None) -> Iterator[Any]:
    """An iterator over the leaves of ``tree``."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: IsLeafFn = None) -> list[Any]:
    """The leaves of ``tree``, as a list."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: IsLeafFn = None) -> TreeSpec:
    """The spec of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None
) -> PyTree:
    """A pytree of ``tree``'s structure holding ``func(x, *xs)`` at each leaf ``x``, where
    ``xs`` are the subtrees of ``rests`` at that leaf's place (each of ``rests`` has
    ``tree``'s structure as a prefix).

    >>> tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)})
    {'x': 8, 'y': (43, 65)}
    >>> tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]])
    [[5, 7, 9], [6, 1, 2]]
    """
    leaves, treespec = tree_flatten(tree, is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(map(func, *flat_args))


def tree_map_(
    func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None
) -> PyTree:
    """:func:`tree_map` for its side effects: calls ``func`` on each leaf, returns ``tree``."""
    leaves, treespec = tree_flatten(tree, is_leaf)
    flat_args = [leaves] + [treespec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat_args), maxlen=0)
    return tree


TypeAny = type[Any] | tuple[type[Any], ...] | types.UnionType


def map_only(
    type_or_types_or_pred: TypeAny | Callable[[Any], bool], /
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator: apply the function to values of the given type(s) (or that satisfy the
    predicate) and return other values unchanged."""
    pred: Callable[[Any], bool]
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        types_ = type_or_types_or_pred
        pred = lambda x: isinstance(x, types_)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
        @functools.wraps(func)
        def wrapped(x: Any) -> Any:
            return func(x) if pred(x) else x

        return wrapped

    return wrapper


def tree_map_only(
    type_or_types_or_pred: TypeAny | Callable[[Any], bool],
    /,
    func: Callable[[Any], Any],
    tree: PyTree,
    is_leaf: IsLeafFn = None,
) -> PyTree:
    """:func:`tree_map` of ``func`` over the leaves of the given type(s) (or that satisfy the
    predicate); other leaves are kept."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(
    type_or_types_or_pred: TypeAny | Callable[[Any], bool],
    /,
    func: Callable[[Any], Any],
    tree: PyTree,
    is_leaf: IsLeafFn = None,
) -> PyTree:
    """:func:`tree_map_` of ``func`` over the leaves of the given type(s) (or predicate)."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(
    type_or_types: TypeAny, /, pred: Callable[[Any], bool], tree: PyTree,
    is_leaf: IsLeafFn = None,
) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(
    type_or_types: TypeAny, /, pred: Callable[[Any], bool], tree: PyTree,
    is_leaf: IsLeafFn = None,
) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list[Any]:
    """``tree_leaves((args, kwargs))``, faster."""
    leaves: list[Any] = []
    for a in (*args, *kwargs.values()):
        leaves.extend(tree_iter(a))
    return leaves


def _broadcast_to_and_flatten(
    tree: PyTree, treespec: TreeSpec, is_leaf: IsLeafFn = None
) -> list[Any] | None:
    """``tree`` (a prefix of ``treespec``'s structure) broadcast to ``treespec``'s leaves,
    or None when it is not a prefix: ``0`` over a spec of two leaves is ``[0, 0]``."""
    full_tree = treespec.unflatten([0] * treespec.num_leaves)
    result: list[Any] = []

    def add_leaves(x: Any, subtree: PyTree) -> None:
        result.extend([x] * tree_structure(subtree, is_leaf).num_leaves)

    try:
        tree_map_(add_leaves, tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        return None
    return result


# --- key paths ------------------------------------------------------------------------------


def tree_flatten_with_path(
    tree: PyTree, is_leaf: IsLeafFn = None
) -> tuple[list[tuple[KeyPath, Any]], TreeSpec]:
    """:func:`tree_flatten` with each leaf's key path: ``([(path, leaf), ...], spec)``."""
    return list(_generate_key_paths((), tree, is_leaf)), tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: IsLeafFn = None) -> list[tuple[KeyPath, Any]]:
    """The ``(key path, leaf)`` pairs of ``tree``."""
    return list(_generate_key_paths((), tree, is_leaf))


def _generate_key_paths(
    key_path: KeyPath, tree: PyTree, is_leaf: IsLeafFn = None
) -> Iterator[tuple[KeyPath, Any]]:
    if is_leaf is not None and is_leaf(tree):
        yield key_path, tree
        return
    node_type = _get_node_type(tree)
    handler = SUPPORTED_NODES.get(node_type)
    if handler is None:
        yield key_path, tree
        return
    if handler.flatten_with_keys_fn is None:
        raise ValueError(
            f"Did not find a flatten_with_keys_fn for type: {node_type}. "
            "Please pass a flatten_with_keys_fn argument to register_pytree_node."
        )
    key_children, _ = handler.flatten_with_keys_fn(tree)
    for k, child in key_children:
        yield from _generate_key_paths((*key_path, k), child, is_leaf)


def tree_map_with_path(
    func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None
) -> PyTree:
    """:func:`tree_map` where ``func`` takes the leaf's key path first:
    ``func(path, x, *xs)``."""
    path_leaves, treespec = tree_flatten_with_path(tree, is_leaf)
    paths = [p for p, _ in path_leaves]
    leaves = [x for _, x in path_leaves]
    flat_args = [paths, leaves] + [treespec.flatten_up_to(r) for r in rests]
    return treespec.unflatten(func(*xs) for xs in zip(*flat_args, strict=True))


# --- serialization --------------------------------------------------------------------------


def _enum_default(obj: object) -> Any:
    """JSON for an Enum member in a context: PyTorch's ``__enum__`` object."""
    if isinstance(obj, Enum):
        cls = type(obj)
        return {"__enum__": True, "fqn": f"{cls.__module__}:{cls.__qualname__}",
                "name": obj.name}
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _lookup(module_name: str, qualname: str, what: str) -> Any:
    """``module_name.qualname`` from a module already imported, by dictionary lookups only
    (no import, no ``__getattr__``): loading a spec runs no code."""
    module = sys.modules.get(module_name)
    if module is None:
        raise ValueError(
            f"treespec_loads: cannot find {what} {module_name}.{qualname}: module "
            f"{module_name!r} is not imported (loading a spec imports nothing; import it first)"
        )
    obj: Any = module
    for part in qualname.split("."):
        namespace = getattr(obj, "__dict__", None)
        if not isinstance(namespace, Mapping) or part not in namespace:
            raise ValueError(f"treespec_loads: cannot find {what} {module_name}.{qualname}")
        obj = namespace[part]
    return obj


def _enum_object_hook(obj: dict[str, Any]) -> Any:
    if "__enum__" not in obj:
        return obj
    fqn, name = obj.get("fqn"), obj.get("name")
    if not isinstance(fqn, str) or ":" not in fqn or not isinstance(name, str):
        raise ValueError(f"treespec_loads: malformed Enum entry {obj!r}")
    module_name, _, qualname = fqn.partition(":")
    cls = _lookup(module_name, qualname, "the Enum")
    if not (isinstance(cls, type) and issubclass(cls, Enum)):
        raise ValueError(f"treespec_loads: {fqn} is not an Enum class")
    if name not in cls.__members__:
        raise ValueError(f"treespec_loads: {fqn} has no member {name!r}")
    return cls[name]


def _treespec_to_json(treespec: TreeSpec) -> dict[str, Any]:
    if treespec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    node_def = SUPPORTED_SERIALIZED_TYPES.get(treespec.type)
    if node_def is None:
        raise NotImplementedError(f"Serializing {treespec.type} in pytree is not registered.")
    if node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(
            f"No registered serialization name for {treespec.type} found. "
            "Please update your _register_pytree_node call with a `serialized_type_name` kwarg."
        )
    if node_def.to_dumpable_context is None:
        try:
            context = json.dumps(treespec._context, default=_enum_default)
        except TypeError as e:
            raise TypeError(
                "Unable to serialize context. "
                "Please make the context json dump-able, or register a "
                "custom serializer using _register_pytree_node."
            ) from e
    else:
        context = node_def.to_dumpable_context(treespec._context)
    return {"type": node_def.serialized_type_name, "context": context,
            "children_spec": [_treespec_to_json(c) for c in treespec._children]}


_SCHEMA_KEYS = {"type", "context", "children_spec"}


def _json_to_treespec(schema: Any) -> TreeSpec:
    if not isinstance(schema, dict) or set(schema) != _SCHEMA_KEYS:
        raise ValueError(
            "treespec_loads: each node must be an object with the keys 'type', 'context' and "
            f"'children_spec', got {schema!r}"
        )
    type_name, children = schema["type"], schema["children_spec"]
    if not isinstance(children, list):
        raise ValueError(f"treespec_loads: 'children_spec' must be a list, got {children!r}")
    if type_name is None and schema["context"] is None and not children:
        return _LEAF_SPEC
    if not isinstance(type_name, str) or type_name not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Deserializing {type_name} in pytree is not registered.")
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[type_name]
    node_def = SUPPORTED_SERIALIZED_TYPES[typ]
    if node_def.from_dumpable_context is None:
        try:
            context = json.loads(schema["context"], object_hook=_enum_object_hook)
        except TypeError as e:
            raise TypeError(
                "Unable to deserialize context. "
                "Please make the context json load-able, or register a "
                "custom serializer using _register_pytree_node."
            ) from e
    else:
        context = node_def.from_dumpable_context(schema["context"])
    return TreeSpec(typ, context, [_json_to_treespec(c) for c in children])


_SUPPORTED_PROTOCOLS = {1: (_treespec_to_json, _json_to_treespec)}


def _unknown_protocol(protocol: Any) -> ValueError:
    return ValueError(
        f"Unknown protocol {protocol}. Available protocols: {list(_SUPPORTED_PROTOCOLS)}"
    )


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """``treespec`` as a JSON string (PyTorch's format): ``[protocol, {"type": ...,
    "context": ..., "children_spec": [...]}]``."""
    treespec = _check_treespec(treespec)
    if protocol is None:
        protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL
    if protocol not in _SUPPORTED_PROTOCOLS:
        raise _unknown_protocol(protocol)
    json_spec = _SUPPORTED_PROTOCOLS[protocol][0](treespec)
    return json.dumps([protocol, json_spec], default=_enum_default)


@functools.lru_cache
def treespec_loads(serialized: str) -> TreeSpec:
    """The spec that :func:`treespec_dumps` wrote (here or in PyTorch). Runs no code: types
    come from the registry, and a context's classes from modules already imported."""
    try:
        loaded = json.loads(serialized)
    except ValueError as e:
        raise ValueError(f"treespec_loads: not a JSON document: {e}") from e
    if not isinstance(loaded, list) or len(loaded) != 2:
        raise ValueError(
            "treespec_loads: expected a JSON array [protocol, treespec] as treespec_dumps "
            f"writes, got {serialized[:80]!r}"
        )
    protocol, json_schema = loaded
    if type(protocol) is not int or protocol not in _SUPPORTED_PROTOCOLS:
        raise _unknown_protocol(protocol)
    return _SUPPORTED_PROTOCOLS[protocol][1](json_schema)


class _Asterisk(str):
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


_asterisk = _Asterisk("*")


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure printed as its containers with ``*`` for leaves: ``{'a': [*, (*, *)]}``."""
    return repr(treespec.unflatten([_asterisk] * treespec.num_leaves))
