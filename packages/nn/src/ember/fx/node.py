"""``ember.fx.Node``: one operation of a :class:`~ember.fx.Graph` (``torch.fx.Node``)."""

from __future__ import annotations

import builtins
import operator
import re
import types
from collections.abc import Callable
from typing import Any

import ember
from ember.ops import profiler as _profiler_ops
from ember.overrides import is_active as _dispatch_active

from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Argument = Any
Target = Any

#: the opcodes a node may have
_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
        "root")

_side_effectful_functions: set = {
    builtins.print, operator.setitem, ember._assert, _profiler_ops._record_function_enter,
    _profiler_ops._record_function_enter_new, _profiler_ops._record_function_exit}


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as side-effectful: ``eliminate_dead_code`` keeps its calls
    (``torch.fx.node.has_side_effect``)."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a: Argument, fn: Callable) -> Argument:
    """Apply ``fn`` to each leaf of ``a`` (tuples, lists, dicts and slices are walked).
    Lists and dicts come back as plain ones (torch.fx's come back immutable: ember's
    ``__torch_function__`` dispatch looks for proxies inside plain lists and tuples only);
    a node's own ``args``/``kwargs`` hold immutable ones."""
    return _map_aggregate(a, fn, list, dict)


def _map_aggregate(a: Argument, fn: Callable, list_type: type, dict_type: type) -> Argument:
    if isinstance(a, tuple):
        t = tuple(_map_aggregate(elem, fn, list_type, dict_type) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)  # a NamedTuple
    if isinstance(a, list):
        return list_type(_map_aggregate(elem, fn, list_type, dict_type) for elem in a)
    if isinstance(a, dict):
        return dict_type((k, _map_aggregate(v, fn, list_type, dict_type))
                         for k, v in a.items())
    if isinstance(a, slice):
        return slice(_map_aggregate(a.start, fn, list_type, dict_type),
                     _map_aggregate(a.stop, fn, list_type, dict_type),
                     _map_aggregate(a.step, fn, list_type, dict_type))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to each :class:`Node` in ``a`` (``torch.fx.node.map_arg``)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """An operation in a :class:`~ember.fx.Graph`: ``op`` (one of ``placeholder``,
    ``get_attr``, ``call_function``, ``call_module``, ``call_method``, ``output``),
    ``target``, ``args``/``kwargs`` (which may hold other nodes), a unique ``name``,
    ``users`` (the nodes that read this one) and a free-form ``meta`` dict."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in _OPS:
            raise AssertionError(f"Unsupported node type {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder") \
                and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._update_args_kwargs(args, kwargs)

    @property
    def target(self) -> Target:
        """What the node calls or reads. A function is the one its namespace binds now:
        while ``__torch_function__`` dispatch is on, ``ember.relu`` is a dispatching wrapper
        and ``node.target is ember.relu`` still holds."""
        t = self._target
        if self.op == "call_function" and _dispatch_active():
            from .graph import _public_function

            return _public_function(t)
        return t

    @target.setter
    def target(self, t: Target) -> None:  # the function itself, not a dispatching wrapper
        self._target = getattr(t, "_ember_original", t) if self.op == "call_function" else t

    # -- linked list ----------------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert ``x`` before this node (moving it if it is already in the graph)."""
        if x is self:
            raise AssertionError("Cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Insert ``x`` after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments ------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this node reads, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def insert_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        note = lambda x: self._note_input(x) if isinstance(x, Node) else x
        # immutable containers: editing node.args[i] in place raises, as in torch.fx
        self._args = _map_aggregate(tuple(new_args), note, immutable_list, immutable_dict)
        self._kwargs = _map_aggregate(dict(new_kwargs), note, immutable_list,
                                      immutable_dict)
        for new in self._input_nodes:
            new.users.setdefault(self, None)

    def _note_input(self, n: Node) -> Node:
        if n.graph is not self.graph:
            raise AssertionError(f"Argument '{n}' of Node '{self}' does not belong to the "
                                 "same graph")
        self._input_nodes.setdefault(n)
        return n

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; returns the users
        changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for user in to_process:
            user.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace ``old_input`` by ``new_input`` among this node's arguments."""
        swap = lambda n: new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self.args, swap), map_arg(self.kwargs, swap))

    # -- queries ------------------------------------------------------------------------
    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self._target in _side_effectful_functions or \
                getattr(self._target, "__name__", "").endswith("_") and \
                not getattr(self._target, "__name__", "").startswith("_")
        if self.op == "call_method":
            return str(self.target).endswith("_") and not str(self.target).startswith("_")
        if self.op == "call_module":
            root = getattr(self.graph, "owning_module", None)
            if root is not None:
                return bool(getattr(root.get_submodule(self.target), "_is_impure", False))
        return False

    @property
    def stack_trace(self) -> str | None:
        """The Python stack recorded when the node was traced (``meta['stack_trace']``;
        a tracer with ``record_stack_traces = True`` records it), innermost frame last."""
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def normalized_arguments(self, root, arg_types: tuple | None = None,
                             kwarg_types: dict | None = None,
                             normalize_to_only_use_kwargs: bool = False):
        """This node's arguments matched to its target's signature, defaults filled in
        (an ``ArgsKwargsPair``; the first ``len(args)`` positionally unless
        ``normalize_to_only_use_kwargs``), or None when the target's signature cannot be
        read (a builtin such as ``operator.add``, ``*args``) or the call does not fit it.
        ``root`` is the module that holds ``call_module`` targets."""
        from .operator_schemas import normalize_function, normalize_module

        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types,
                                      kwarg_types, normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs)
        return None

    def format_node(self, placeholder_names: list | None = None,
                    maybe_return_typename: list | None = None, *,
                    include_tensor_metadata: bool = False) -> str | None:
        """This node as one line of ``print(graph)``:
        ``%name : [type ][num_users=N] = op[target=...](args = ..., kwargs = ...)``.
        A non-empty ``placeholder_names`` collects a placeholder's ``name: type`` instead
        (and the line is None); ``maybe_return_typename[0]`` gets the output's ``-> type``.
        ``include_tensor_metadata`` shows a computed node's ``meta['val']`` tensor as
        ``Tensor "f32[3, 4][4, 1]cpu"``."""
        if self.op == "placeholder":
            arg_str = self.target
            # torch.fx's own expression (the name twice before the type): kept for parity
            arg_str += arg_str + f": {_type_repr(self.type)}" if self.type else ""
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typename}[num_users={len(self.users)}] = " \
                   f"placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return f"%{self.name} : {typename}[num_users={len(self.users)}] = " \
                   f"get_attr[target={self._pretty_target()}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        val = self.meta.get("val", self.meta.get("tensor_meta",
                                                 self.meta.get("example_value")))
        from ember import Tensor

        if include_tensor_metadata and isinstance(val, Tensor):
            from .graph import _DTYPE_ABBRS

            dims = lambda s: f"[{', '.join(str(x) for x in s)}]"
            dtype = _DTYPE_ABBRS.get(str(val.dtype).rpartition(".")[2], str(val.dtype))
            typename = f'Tensor "{dtype}{dims(val.shape)}{dims(val.stride())}{val.device}"'
        else:
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        return f"%{self.name} : {typename}[num_users={len(self.users)}] = " \
               f"{self.op}[target={self._pretty_print_target()}](" \
               f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def _pretty_target(self) -> str:
        from .graph import _qualified_name

        return self.target if isinstance(self.target, str) else _qualified_name(self.target)

    def _pretty_print_target(self) -> str:
        """The target as ``print(graph)`` shows it: a builtin as ``builtins.getattr``."""
        if getattr(self.target, "__module__", None) == "builtins" \
                and getattr(self.target, "__name__", None) is not None:
            return f"builtins.{self.target.__name__}"
        return self._pretty_target()

    def __repr__(self) -> str:
        return self.name

    def __getstate__(self):
        return dict(self.__dict__)


def _type_repr(obj: Any) -> str:
    """A type as ``print(graph)`` and annotations show it: builtins by name, ember's own
    types by their public name (``ember.Tensor``), other types as ``module.QualName``."""
    if isinstance(obj, type) and not isinstance(obj, types.GenericAlias):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        if obj.__module__.startswith("ember"):
            import sys

            for ns in ("ember", "ember.nn"):
                found = sys.modules.get(ns)
                if found is not None and getattr(found, obj.__qualname__, None) is obj:
                    return f"{ns}.{obj.__qualname__}"
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    # a generic alias prints its arguments by module path: ember's types by public name
    return re.sub(r"\bember(?:\.\w+)+", _public_type_path, repr(obj))


def _public_type_path(match: re.Match) -> str:
    import sys

    path = match.group(0)
    module, _, name = path.rpartition(".")
    obj = getattr(sys.modules.get(module), name, None)
    return _type_repr(obj) if isinstance(obj, type) else path


def _format_arg(arg: Any) -> str:
    if isinstance(arg, Node):
        return f"%{arg}"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)

