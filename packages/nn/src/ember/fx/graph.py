"""``ember.fx.Graph``: a list of :class:`~ember.fx.Node` in program order, printed and turned
into Python source as ``torch.fx.Graph`` does."""

from __future__ import annotations

import builtins
import contextlib
import copy
import keyword
import math
import operator
import re
import sys
import typing
from collections.abc import Callable, Iterator
from typing import Any

from .node import Node, map_arg

__all__ = ["Graph", "PythonCode", "CodeGen"]

reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}

_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])")
_illegal_names = {**{k: object() for k in keyword.kwlist}, **builtins.__dict__,
                  "inf": math.inf, "nan": math.nan, "NoneType": type(None), "ember": None,
                  "operator": operator, "device": None}

#: namespaces whose functions are printed by their public path (``ember.relu``); a function
#: that two of them export (``max_pool2d``) is named as ``torch.fx`` names its torch twin
_PUBLIC_NAMESPACES = ("ember.nn.functional", "ember", "ember.linalg", "ember.special",
                      "ember.fft")

#: functions that ember and ember.nn.functional share but torch.nn.functional defines apart
#: from torch's (a traced call is named ``torch.nn.functional.softmax``); any other shared
#: one is torch's own (``torch.conv2d``, ``torch.tanh``)
_FUNCTIONAL_OWN = frozenset({
    "linear", "adaptive_max_pool1d", "celu", "group_norm", "layer_norm", "log_softmax",
    "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d", "rms_norm", "rrelu",
    "selu", "softmax", "threshold"})


def _snake_case(s: str) -> str:
    return _snake_case_sub.sub(r"_\1", s).lower()


def _same_function(a: Any, b: Any) -> bool:
    return a is b or getattr(a, "_ember_original", None) is b \
        or getattr(b, "_ember_original", None) is a


def _public_function(fn: Callable) -> Callable:
    """``fn`` as its namespace binds it now: while ``__torch_function__`` dispatch is on
    (a trace, a Transformer) ``ember.relu`` is a dispatching wrapper of the function that a
    node records, and code comparing ``target is ember.relu`` or calling it on proxies
    needs that wrapper."""
    from ember.overrides import is_active

    if not is_active():
        return fn
    public = _PUBLIC_WRAPPERS.get(fn)
    if public is not None:
        return public
    if not (getattr(fn, "__module__", None) or "").startswith("ember"):
        return fn
    ns, _, name = _qualified_name(fn).rpartition(".")
    public = getattr(sys.modules.get(ns), name, None)
    if public is not fn and _same_function(public, fn):
        _PUBLIC_WRAPPERS[fn] = public  # ember.overrides keeps its wrappers: this one stays
        return public
    return fn


#: function -> its dispatching wrapper (:func:`_public_function`'s finds)
_PUBLIC_WRAPPERS: dict = {}


def _qualified_name(fn: Callable) -> str:
    """How ``fn`` is named in a printed graph and in generated code: ``operator.add``,
    ``ember.relu``, ``ember.nn.functional.relu``, ``mymodule.myfn``."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None) or ""
    if module == "builtins":
        return name
    if module == "_operator":
        return f"operator.{name}"
    if module.startswith("ember"):
        def rank(ns: str) -> int:  # its own namespace first; ember before F unless F's own
            if ns == "ember.nn.functional":
                return 1 if name in _FUNCTIONAL_OWN else 3
            return 0 if ns == module and ns != "ember" else 2

        for ns in sorted(_PUBLIC_NAMESPACES, key=rank):
            found = sys.modules.get(ns)
            if found is not None and name in (getattr(found, "__all__", None) or vars(found)) \
                    and _same_function(getattr(found, name, None), fn):
                return f"{ns}.{name}"
    if module.startswith("ember"):
        return f"{module}.{getattr(fn, '__qualname__', name)}"
    return f"{module}.{name}"  # torch.fx names a user function by module and __name__


class _Namespace:
    """Unique Python identifiers for the nodes of one graph (torch.fx's naming rules:
    ``add``, ``add_1``, ...; a builtin's name like ``sum`` becomes ``sum_1``)."""

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate


class PythonCode:
    """Generated source (``src``) and the globals it needs (``globals``); ``_lineno_map``
    maps a line of ``src`` (counted from the ``def``) to the index of its node."""

    def __init__(self, src: str, globals: dict, _lineno_map: dict | None = None,
                 _prologue_start: int = 0) -> None:
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map
        self._prologue_start = _prologue_start

    def __repr__(self) -> str:
        return f"PythonCode(src={self.src!r}, globals={self.globals!r})"


class _NodeList:
    """``graph.nodes``: a live view of the node list (iterable, ``len``, ``reversed``)."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            nxt = cur._prev if self._reverse else cur._next  # the node may be erased meanwhile
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


class Graph:
    """The IR of ``ember.fx`` (``torch.fx.Graph``): nodes in program order."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._insert = self._root.prepend
        self._find_nodes_lookup_table: dict = {}

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def output_node(self) -> Node:
        """The graph's last node, which must be its ``output``."""
        node = next(iter(reversed(self.nodes)))
        if node.op != "output":
            raise AssertionError(f"Expected output node, got op={node.op}")
        return node

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list[Node]:
        """The nodes with opcode ``op`` (and ``target`` when given; a ``call_function``
        lookup needs its function), in graph order."""
        if op == "call_function" and target is None:
            raise AssertionError("target must not be None for call_function op")
        return [n for n in self.nodes if n.op == op
                and (target is None or n.target == target)]

    # -- building -----------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Add a node at the insertion point (the end, unless ``inserting_before``/
        ``inserting_after`` moved it)."""
        if op not in ("call_function", "call_method", "get_attr", "call_module",
                      "placeholder", "output"):
            raise AssertionError(f"op '{op}' is not in _legal_ops")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        if op == "call_function":  # the function itself, not a dispatching wrapper of it
            target = getattr(target, "_ember_original", target)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    @staticmethod
    def _target_to_str(target: Any) -> str:
        op = target.__name__ if callable(target) else str(target)
        if op.startswith("__") and op.endswith("__"):
            op = op[2:-2]
        return _snake_case(op)

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = ...) -> Node:
        """An input of the graph (``default_value``: the argument's default)."""
        args = () if default_value is ... else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read the attribute ``qualified_name`` of the owning module (a parameter, buffer
        or tensor constant)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs,
                                type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs,
                                type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None,
                      name: str | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """The graph's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable = lambda x: x) -> Node:
        """Copy ``node`` (from any graph) here, mapping its argument nodes through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` here (``val_map`` maps ``g``'s nodes to the copies);
        returns the copy of ``g``'s output value (not its output node)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = {} if memo is None else memo
        g = Graph(tracer_cls=self._tracer_cls)
        g._codegen = copy.deepcopy(self._codegen)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_vals is not None:
            rv, old_output = output_vals
            new_output = g.output(rv, type_expr=old_output.type)
            new_output.meta = dict(old_output.meta)
        return g

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings

            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None):
        """New nodes go before ``n`` (default: the start of the graph) inside the block."""
        target = n if n is not None else self._root._next
        with self._insert_point(target.prepend):
            yield

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None):
        """New nodes go after ``n`` (default: the end of the graph) inside the block, in
        the order they are made."""
        if n is None:
            with self._insert_point(self._root.prepend):
                yield
            return
        last = [n]

        def insert(x: Node) -> None:
            last[0].append(x)
            last[0] = x

        with self._insert_point(insert):
            yield

    @contextlib.contextmanager
    def _insert_point(self, fn):
        saved = self._insert
        self._insert = fn
        try:
            yield
        finally:
            self._insert = saved

    # -- checks and passes ----------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph's invariants: nodes belong to it, are defined before use, have
        unique names, and module targets exist on the owning module."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Arg {arg} of Node '{node}' does not belong to this "
                                       "Graph!")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before "
                                       "it has been defined! Please check that Nodes in the "
                                       "graph are topologically ordered\n{self}")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
        root = self.owning_module
        if root is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                obj = root
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        seen = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {seen}")
                    obj = getattr(obj, atom)
                if node.op == "call_module" and not _is_module(obj):
                    raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen} "
                                       "does not reference an nn.Module")

    def eliminate_dead_code(self, is_impure_node: Callable | None = None) -> bool:
        """Remove the nodes whose values nobody uses (side-effectful ones stay); returns
        whether the graph changed. The graph is linted first (its nodes must be in
        topological order). Unlike torch.fx, an in-place method call (``x.add_(1)``) counts
        as side-effectful and stays."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    # -- printing and code generation -----------------------------------------------------
    def __str__(self) -> str:
        lines = ["graph():"]
        for node in self.nodes:
            text = node.format_node()
            if text:
                lines.append("    " + text)
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (the columns of ``torch.fx``'s, laid out as
        ``tabulate``'s plain format; no dependency)."""
        headers = ["opcode", "name", "target", "args", "kwargs"]
        rows = [[n.op, n.name, n._pretty_target() if callable(n.target) else n.target,
                 n.args, n.kwargs] for n in self.nodes]
        print(_tabulate(headers, rows))

    def python_code(self, root_module: str, *, verbose: bool = False,
                    include_stride: bool = False, include_device: bool = False,
                    colored: bool = False, expanded_def: bool = False,
                    additional_meta: list[str] | None = None) -> PythonCode:
        """The source of ``forward`` for this graph and the globals it reads, written by the
        graph's :class:`CodeGen`. ``root_module`` names the module that ``get_attr`` and
        ``call_module`` nodes read from (``'self'`` in a GraphModule); ``verbose`` annotates
        each value with its dtype and shape from ``node.meta`` (``ShapeProp``'s
        ``tensor_meta``), ``expanded_def`` puts each parameter on its own line."""
        return self._codegen._gen_python_code(
            self.nodes, root_module, verbose=verbose, include_stride=include_stride,
            include_device=include_device, colored=colored, expanded_def=expanded_def,
            additional_meta=additional_meta)

    def set_codegen(self, codegen: CodeGen) -> None:
        """Generate this graph's code with ``codegen`` (a :class:`CodeGen`)."""
        self._codegen = codegen

    def process_inputs(self, *args: Any) -> Any:
        """The graph's inputs for the arguments of its generated function (the codegen's
        ``process_inputs``)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        """The generated function's result for the graph's output value."""
        return self._codegen.process_outputs(out)

    def on_generate_code(self, make_transformer: Callable):
        """Install a transformer of the generated body's lines:
        ``make_transformer(current)`` gets the transformer installed now (or None) and returns
        the new one, a function from the list of body lines to a list of lines. It applies
        from the next ``python_code``/``recompile``; use the result as a context manager to
        put the previous transformer back at its end::

            def insert_pdb(body):
                return ["import pdb; pdb.set_trace()\\n", *body]

            with gm.graph.on_generate_code(lambda _: insert_pdb):
                gm.recompile()
        """
        old = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(old)

        @contextlib.contextmanager
        def restore():
            try:
                yield
            finally:
                self._codegen._body_transformer = old

        return restore()


def _is_module(obj: Any) -> bool:
    from ..nn import Module

    return isinstance(obj, Module)


def _tabulate(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    # tabulate's 'simple' format: a column is at least its header plus 2 wide
    widths = [max([len(h) + 2] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths]), *map(fmt, cells)])


def _is_identifier(s: str) -> bool:
    return s.isidentifier() and not keyword.iskeyword(s)


#: the dtypes' short names in ``verbose`` annotations (``f32[3, 4]``), torch.fx's
_DTYPE_ABBRS = {
    "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "float16": "f16", "float32": "f32", "float64": "f64", "complex32": "c32",
    "complex64": "c64", "complex128": "c128", "bool": "b8", "bfloat16": "bf16",
    "uint16": "u16", "uint32": "u32", "uint64": "u64"}

#: ``typing.List[int]`` prints its origin as ``typing.List``, not ``list`` (torch.fx's map)
_ORIGIN_TYPE_MAP = {list: typing.List, dict: typing.Dict, set: typing.Set,  # noqa: UP006
                    frozenset: typing.FrozenSet, tuple: typing.Tuple}  # noqa: UP006

_COUNTER_REGEXP = re.compile(r"# COUNTER: (\d+)")

_COLOR_CODES = {"yellow": "\033[33m", "cyan": "\033[36m", "green": "\033[32m",
                "blue": "\033[34m", "red": "\033[31m", "dim": "\033[2m",
                "dim_blue": "\033[2m\033[34m", "dim_green": "\033[2m\033[32m"}


def _color(name: str, on: bool) -> Callable[[str], str]:
    if not on:
        return lambda s: s
    code = _COLOR_CODES[name]
    return lambda s: f"{code}{s}\033[0m"


#: the names that every generated ``forward`` can read (torch.fx's custom builtins): a
#: CodeGen written for ``import ember as torch`` may emit ``torch.Tensor``, so ``torch`` is
#: ember there too
BUILTIN_GLOBAL_NAMES = ("ember", "torch", "operator", "inf", "nan", "NoneType", "device")


def _builtin_globals() -> dict[str, Any]:
    import ember

    return {"ember": ember, "torch": ember, "operator": operator, "inf": math.inf,
            "nan": math.nan, "NoneType": type(None), "device": ember.device}


def _call_with_signature_check(method: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` with the keyword arguments its signature takes (a user's CodeGen may
    override ``gen_fn_def(self, free_vars, maybe_return_annotation)`` without the newer
    keywords)."""
    import inspect

    params = inspect.signature(method).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return method(*args, **{k: v for k, v in kwargs.items() if takes_any or k in params})


def _format_single_arg(arg: str) -> str:
    if "#" in arg:
        arg_part, comment = arg.split("#", 1)
        return f"    {arg_part.rstrip()},  # {comment.lstrip()}\n"
    return f"    {arg},\n"


class CodeGen:
    """How a :class:`Graph` becomes Python source (``torch.fx.CodeGen``). Subclass it and
    install it with :meth:`Graph.set_codegen` to change the generated ``forward``:

    * ``gen_fn_def(free_vars, maybe_return_annotation)``: the ``def`` line (and any
      statements that bind the placeholders' names);
    * ``generate_output(output_args)``: the ``return`` statement;
    * ``process_inputs(*args)`` / ``process_outputs(out)``: what an :class:`Interpreter`
      (or ``graph.process_inputs``) does to the inputs and outputs so that running the graph
      matches calling the generated code;
    * ``additional_globals()``: ``(name, value)`` pairs the generated code reads.

    ``graph.on_generate_code`` installs a transformer of the body's lines."""

    def __init__(self) -> None:
        self._body_transformer: Callable[[list[str]], list[str]] | None = None
        self._func_name: str = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str, *,
                   expanded_def: bool = False) -> str:
        """The first line of the function: ``gen_fn_def(['a', 'b'], '')`` is
        ``'def forward(self, a, b):'`` (``self`` is added when missing)."""
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        if expanded_def:
            args = "".join(_format_single_arg(a) for a in free_vars)
            return f"def {self._func_name}(\n{args}){maybe_return_annotation}:"
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Any, *, descs: list[str] | None = None,
                        repr_fn: Callable[[Any], str] | None = None) -> str:
        """The return statement (not indented) for the output value ``output_args``."""
        if repr_fn is None:
            repr_fn = repr
        if descs is not None and isinstance(output_args, (list, tuple)):
            left, right = ("(", ")") if isinstance(output_args, tuple) else ("[", "]")
            items = "".join(f"    {repr_fn(item)},  # {desc}\n"
                            for item, desc in zip(output_args, descs))
            return f"return {left}\n{items}{right}"
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        """The graph's inputs for the generated function's ``args``: with the default
        codegen they are the same; the invariant is
        ``g.process_outputs(run(g, *g.process_inputs(*inputs))) == gm(*inputs)``."""
        return args

    def process_outputs(self, outputs: Any) -> Any:
        """The generated function's result for the graph's output (see ``process_inputs``)."""
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        """``(name, value)`` pairs the generated code needs as globals, e.g.
        ``[('List', typing.List)]``."""
        return []

    def _gen_python_code(self, nodes, root_module: str, *, verbose: bool = False,
                         include_stride: bool = False, include_device: bool = False,
                         colored: bool = False, expanded_def: bool = False,
                         additional_meta: list[str] | None = None) -> PythonCode:
        writer = _PythonWriter(self, list(nodes), root_module, verbose=verbose,
                               include_stride=include_stride, include_device=include_device,
                               colored=colored, expanded_def=expanded_def,
                               additional_meta=additional_meta)
        return writer.generate()


class _PythonWriter:
    """The source of one graph under one :class:`CodeGen`: one line per node; after the line
    that uses a value for the last time, ``;  a = b = None`` frees it (as torch.fx's code
    does). Node values keep their node names; globals never take a node's name."""

    def __init__(self, codegen: CodeGen, nodes: list[Node], root_module: str, *,
                 verbose: bool, include_stride: bool, include_device: bool, colored: bool,
                 expanded_def: bool, additional_meta: list[str] | None) -> None:
        self.codegen = codegen
        self.nodes = nodes
        self.root = root_module
        self.verbose = verbose
        self.include_stride = include_stride
        self.include_device = include_device
        self.expanded_def = expanded_def
        self.additional_meta = additional_meta
        self.red, self.dim_green, self.dim, self.dim_blue, self.blue = (
            _color(c, colored) for c in ("red", "dim_green", "dim", "dim_blue", "blue"))
        self.globals: dict[str, Any] = _builtin_globals()
        self._global_names = _Namespace()
        for name in self.globals:
            self._global_names.create_name(name, self.globals[name])
        self._node_names = {n.name for n in nodes}
        self.wrapped_fns: dict[str, None] = {}
        for name in self._node_names:  # a global must not be shadowed by a node's value
            self._global_names.create_name(name, None)
        self.free_vars: list[str] = []
        self.body: list[str] = []
        self.return_annotation = ""
        self._prev_summary: str | None = None

    # -- names --------------------------------------------------------------------------
    def add_global(self, hint: str, obj: Any) -> str:
        """A name in the generated code's globals that refers to ``obj``."""
        if _is_identifier(hint) and self.globals.get(hint, obj) is obj \
                and hint not in self._node_names \
                and (hint not in builtins.__dict__ or builtins.__dict__[hint] is obj):
            if hint not in builtins.__dict__:
                self.globals[hint] = obj
            return hint
        name = self._global_names.create_name(_illegal_char_regex.sub("_", hint), obj)
        self.globals[name] = obj
        return name

    def global_name(self, qualified: str, obj: Any) -> str:
        """How the code refers to ``obj``, whose public name is ``qualified``: a dotted path
        from a builtin global (``ember.relu``, ``operator.add``, ``ember.Tensor``), a
        builtin's name, or a new global (torch.fx's ``'__main___my_fn'``)."""
        root, _, rest = qualified.partition(".")
        if root in ("ember", "operator") and rest:
            found = self.globals[root]
            for atom in rest.split("."):
                found = getattr(found, atom, None)
            if _same_function(found, obj):
                return qualified
        if not rest and builtins.__dict__.get(root) is obj:
            return root
        return self.add_global(qualified, obj)

    def function_name(self, fn: Callable) -> str:
        return self.global_name(_qualified_name(fn), fn)

    def type_repr(self, o: Any) -> str:
        """A type annotation as code (``ember.Tensor``, ``int``, ``typing_List[int]``)."""
        import types

        from .node import _type_repr

        if o == ():
            return "()"  # Tuple[()]
        typename = _type_repr(o)
        if isinstance(o, types.UnionType) and "|" in typename:
            return "|".join(self.type_repr(a) for a in typing.get_args(o))
        origin = getattr(o, "__origin__", None)
        if origin is not None:
            if isinstance(o, typing._GenericAlias):  # a pre-PEP 585 generic: typing.List
                origin = _ORIGIN_TYPE_MAP.get(origin, origin)
            origin_name = self.global_name(_type_repr(origin), origin)
            args = typing.get_args(o)
            if args:
                return f"{origin_name}[{','.join(self.type_repr(a) for a in args)}]"
            return origin_name
        return self.global_name(typename, o)

    # -- values ---------------------------------------------------------------------------
    def repr_arg(self, arg: Any) -> str:
        import ember

        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            name = self.add_global(type(arg).__name__, type(arg))
            return f"{name}({', '.join(self.repr_arg(a) for a in arg)})"
        if isinstance(arg, tuple):
            items = ", ".join(self.repr_arg(a) for a in arg)
            return f"({items},)" if len(arg) == 1 else f"({items})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr_arg(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{self.repr_arg(k)}: {self.repr_arg(v)}"
                                   for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.repr_arg(arg.start)}, {self.repr_arg(arg.stop)}, " \
                   f"{self.repr_arg(arg.step)})"
        if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
            return self.blue(repr(arg))  # 'inf', '-inf', 'nan': names in the globals
        if arg is None or arg is Ellipsis or type(arg) in (bool, int, float, complex, str):
            return self.blue(repr(arg))
        if isinstance(arg, ember.dtype):
            return f"ember.{str(arg).rpartition('.')[2]}"
        if isinstance(arg, ember.device):
            return repr(arg)
        if isinstance(arg, (ember.Size, ember.memory_format, ember.layout)) \
                and repr(arg).startswith(("ember.", "torch.")):
            return "ember." + repr(arg).partition(".")[2]  # (the code's own spelling)
        return self.add_global(_snake_case(type(arg).__name__)
                               if not callable(arg) else getattr(arg, "__name__", "obj"),
                               arg)

    def format_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.repr_arg(a) for a in args]
        parts += [f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    @staticmethod
    def format_target(base: str, target: str) -> str:
        expr = base
        for e in target.split("."):
            expr = f"{expr}.{e}" if _is_identifier(e) else f'getattr({expr}, "{e}")'
        return expr

    # -- nodes ----------------------------------------------------------------------------
    def _verbose_annotation(self, node: Node) -> str | None:
        import ember

        from .passes.shape_prop import TensorMetadata

        val = node.meta.get("val", node.meta.get("tensor_meta",
                                                 node.meta.get("example_value")))
        shape = lambda s: f"[{', '.join(str(x) for x in s)}]"
        abbr = lambda dt: _DTYPE_ABBRS.get(str(dt).rpartition(".")[2], str(dt))
        if isinstance(val, ember.Tensor):
            core = (f"{self.red(abbr(val.dtype))}{self.blue(shape(val.shape))}"
                    f"{self.dim_blue(shape(val.stride())) if self.include_stride else ''}"
                    f"{self.dim_green(str(val.device)) if self.include_device else ''}")
            return f': "{core}"' if type(val) is ember.Tensor \
                else f': "{type(val).__name__}({core})"'
        if isinstance(val, TensorMetadata):
            return f': "{abbr(val.dtype)}{shape(val.shape)}"'
        return None

    def _stacktrace_summary(self, node: Node) -> None:
        """``verbose``: a comment naming where the node was traced from (once per run)."""
        if node.op in ("placeholder", "output"):
            return
        extra = ""
        if self.additional_meta:
            parts = [f"{k}: {node.meta[k]}" for k in self.additional_meta if k in node.meta]
            if parts:
                extra = f"# {', '.join(parts)} "
        annotation = ""
        if node.meta.get("custom"):
            trunc = {k: (str(v)[:40] + "...") if len(str(v)) > 40 else v
                     for k, v in node.meta["custom"].items()}
            annotation = f" Annotation: {trunc}"
        summary = "No stacktrace found for following nodes"
        parsed = _parse_stack_trace(node.stack_trace)
        if parsed is not None:
            summary = parsed
        text = f"\n{self.dim(f'{extra}#{annotation} {summary}')}\n"
        if text != self._prev_summary:
            self._prev_summary = text
            self.body.append(text)

    def emit_node(self, node: Node) -> None:
        body = self.body
        annotation = "" if node.type is None else f" : {self.type_repr(node.type)}"
        if self.verbose:
            annotation = self._verbose_annotation(node) or annotation
        desc = node.meta.get("desc") if self.expanded_def else None
        if node.op == "placeholder":
            default = "" if not node.args else f" = {self.repr_arg(node.args[0])}"
            comment = f"  # {desc}" if desc is not None else ""
            self.free_vars.append(f"{node.target}{annotation}{default}{comment}")
            raw_name = node.target.replace("*", "")
            if raw_name != node.name:  # a renamed placeholder: bind the new name
                body.append(f"{node.name} = {raw_name}\n")
            return
        if node.op == "get_attr":
            body.append(f"{node.name}{annotation} = {self.format_target(self.root, node.target)}")
            return
        if node.op == "call_module":
            body.append(f"{node.name}{annotation} = "
                        f"{self.format_target(self.root, node.target)}"
                        f"({self.format_args(node.args, node.kwargs)})")
            return
        if node.op == "call_method":
            body.append(f"{node.name}{annotation} = "
                        f"{self.format_target(self.repr_arg(node.args[0]), node.target)}"
                        f"({self.format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "output":
            if node.type is not None:
                self.return_annotation = f" -> {self.type_repr(node.type)}"
            body.append(_call_with_signature_check(
                self.codegen.generate_output, node.args[0], descs=desc,
                repr_fn=self.repr_arg))
            return
        target = node.target
        if getattr(target, "__module__", None) == "_operator" \
                and target.__name__ in magic_methods and not node.kwargs:
            template = magic_methods[target.__name__]
            if template.count("{}") == len(node.args):
                body.append(f"{node.name}{annotation} = "
                            + template.format(*map(self.repr_arg, node.args)))
                return
        if target is builtins.getattr and len(node.args) == 2 and not node.kwargs \
                and isinstance(node.args[1], str) and _is_identifier(node.args[1]):
            body.append(f"{node.name}{annotation} = "
                        f"{self.format_target(self.repr_arg(node.args[0]), node.args[1])}")
            return
        global_name = self.function_name(target)
        body.append(f"{node.name}{annotation} = "
                    f"{global_name}({self.format_args(node.args, node.kwargs)})")
        if node.meta.get("is_wrapped", False):  # ember.fx.wrap'd: the code re-wraps it
            self.wrapped_fns.setdefault(global_name)

    def generate(self) -> PythonCode:
        nodes = self.nodes
        user_to_last_uses: dict[Node, list[Node]] = {}
        seen: set[Node] = set()
        for node in reversed(nodes):
            for arg in node._input_nodes:
                if arg not in seen:
                    seen.add(arg)
                    user_to_last_uses.setdefault(node, []).append(arg)
        body = self.body
        for i, node in enumerate(nodes):
            if self.verbose:
                self._stacktrace_summary(node)
            # a marker of the node each line comes from; the lines reach a body transformer
            # with the markers, as torch.fx's do, and lose them after
            body.append(f"# COUNTER: {i}\n")
            self.emit_node(node)
            if node.op == "placeholder":
                continue
            if node.op == "output":
                body.append("\n")
                continue
            dead = list(user_to_last_uses.get(node, []))
            if not node.users:  # kept for its side effect: free its value at once
                dead.append(node)
            if dead:
                body.append(f";  {self.dim(' = '.join([n.name for n in dead] + ['None']))}\n")
            else:
                body.append("\n")
        if len(body) == 0:
            body.append("pass\n")
        # a retrace of the generated code keeps the wrap'd functions leaves (torch.fx's
        # ``torch.fx._symbolic_trace.wrap("name")`` lines before the def)
        wrap_stmts = "\n".join(f'ember.fx._symbolic_trace.wrap("{name}")'
                               for name in self.wrapped_fns)
        if self.codegen._body_transformer is not None:
            body = self.codegen._body_transformer(body)
        for name, value in self.codegen.additional_globals():
            self.add_global(name, value)
        prologue = _call_with_signature_check(
            self.codegen.gen_fn_def, self.free_vars, self.return_annotation,
            expanded_def=self.expanded_def)
        lineno_map: dict[int, int | None] = {}
        prologue_len = prologue.count("\n") + 1
        lines: list[str] = []
        cur_idx = None
        for line in "".join(body).split("\n"):
            counter = _COUNTER_REGEXP.search(line)
            if counter is not None:
                cur_idx = int(counter.group(1))
            else:
                lineno_map[len(lines) + prologue_len] = cur_idx
                lines.append(line)
        code = "\n".join(lines).lstrip("\n")
        if not code.strip():  # placeholders only, no output: still a function
            code = "pass\n"
        code = "\n".join("    " + line for line in code.split("\n"))
        src = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        return PythonCode(src, self.globals, _lineno_map=lineno_map,
                          _prologue_start=wrap_stmts.count("\n") + 4)


def _parse_stack_trace(stack_trace: str | None) -> str | None:
    """``File: path:line in fn, code: text`` of the innermost frame of ``stack_trace``."""
    if stack_trace is None:
        return None
    pattern = re.compile(r"^File \"(.+)\", line (\d+), in (.+)$")
    lines = stack_trace.strip().split("\n")
    for idx in range(len(lines) - 2, -1, -1):
        matches = pattern.match(lines[idx].strip())
        if matches:
            file, lineno, name = matches.groups()
            return f"File: {file}:{lineno} in {name}, code: {lines[idx + 1].strip()}"
    return None
