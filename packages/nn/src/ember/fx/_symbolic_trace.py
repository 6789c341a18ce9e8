"""Symbolic tracing (``torch.fx.symbolic_trace``, ``Tracer``, ``wrap``): run ``forward`` on
:class:`Proxy` values and record what it does into a :class:`Graph`."""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import ember
from ember.overrides import TorchFunctionMode

from ..nn import Module, Parameter, Sequential
from .graph import Graph
from .node import Node, map_aggregate
from .proxy import Proxy, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "GraphAppendingTracer"]


class _KeepDispatch(TorchFunctionMode):
    """Keeps ``__torch_function__`` dispatch on while tracing, so ember functions called on a
    :class:`Proxy` reach ``Proxy.__torch_function__``; the mode itself hands every call on."""

    _ember_reads_types = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return NotImplemented


class PHBase:
    """A concrete argument left symbolic (``concrete_args={"x": PH}``)."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def _assert(condition: bool, message: str) -> None:
    """The guard that ``concrete_args`` adds: the input still has the traced value."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value: Any, message: str) -> None:
    if value is not None:
        raise AssertionError(message)


#: ``wrap``'d functions: (id of the globals dict, name) -> the globals dict
_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls of a module-level function as one ``call_function`` node instead of
    tracing through it (``torch.fx.wrap``); call it at module scope, with the function or
    its name (``wrap("len")`` records ``len`` on proxies)."""
    frame = inspect.currentframe().f_back
    if frame is None or frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    if callable(fn_or_name):
        name = fn_or_name.__code__.co_name if hasattr(fn_or_name, "__code__") \
            else fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("fn_or_name must be a global function or string name")
    _wrapped_fns_to_patch[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _leaf_call(orig: Callable) -> Callable:
    """``orig`` as a leaf: a call with a proxy argument becomes one node."""

    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        proxies: list = []
        map_aggregate((args, kwargs), lambda a: proxies.append(a) if isinstance(a, Proxy)
                      else None)
        if proxies:
            proxy = proxies[0].tracer.create_proxy("call_function", orig, args, kwargs)
            proxy.node.meta["is_wrapped"] = True
            return proxy
        return orig(*args, **kwargs)

    return wrapped


class _Patcher:
    """Sets attributes for the duration of a trace and puts them all back after."""

    def __init__(self) -> None:
        self._undo: list[Callable] = []

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        had = name in vars(obj)
        old = vars(obj).get(name)
        setattr(obj, name, value)
        self._undo.append(lambda: setattr(obj, name, old) if had else delattr(obj, name))

    def setitem(self, d: dict, name: str, value: Any) -> None:
        had = name in d
        old = d.get(name)
        d[name] = value
        self._undo.append(lambda: d.__setitem__(name, old) if had else d.pop(name, None))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


class Tracer:
    """Turns a module or function into a :class:`Graph` (``torch.fx.Tracer``). Override
    ``is_leaf_module`` to choose which submodules stay ``call_module`` nodes (default:
    ember.nn's built-in modules), ``create_proxy``/``create_arg`` to change what is
    recorded."""

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_function_ids = {
            id(value) for module in autowrap_modules for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph | None = None
        self.root: Module | None = None
        self.tensor_attrs: dict[int, tuple[str, Any]] = {}
        self.submodule_paths: dict[int, str] | None = None

    # -- recording ------------------------------------------------------------------------
    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable | None = None) -> Proxy:
        """Add a node whose arguments are ``args``/``kwargs`` turned into graph values
        (``create_arg``) and return its proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """A value as a graph argument: proxies become their nodes, parameters and tensors
        ``get_attr`` nodes (a tensor that is no attribute of the root becomes one,
        ``_tensor_constant0``...), submodules ``get_attr`` of their path."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            args = tuple(self.create_arg(x) for x in a)
            return type(a)(*args) if hasattr(a, "_fields") else args
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, ember.Tensor):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            for name, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", name, (), {})
            found = self.tensor_attrs.get(id(a))
            if found is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                self.tensor_attrs[id(a)] = (qualname, a)
                setattr(self.root, qualname, a)
            else:
                qualname = found[0]
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return a

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function "
                         "argument. See the torch.fx docs on pytorch.org for a more detailed "
                         "explanation of what types of control flow can be traced, and check "
                         "out the Proxy docstring for help troubleshooting Proxy iteration "
                         "errors")

    def keys(self, obj: Proxy):
        return obj.keys()

    # -- modules ------------------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """ember.nn's own modules (``Linear``, ``Conv2d``, ``ReLU``...) are leaves;
        ``Sequential`` and user modules are traced through."""
        return type(m).__module__.startswith("ember.nn.") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of ``mod`` in the root module."""
        if self.submodule_paths is None:
            self.submodule_paths = {id(m): name for name, m
                                    in self.root.named_modules(remove_duplicate=False)}
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A leaf module becomes one ``call_module`` node; any other runs its forward."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A parameter read from a module becomes a ``get_attr`` proxy (one per parameter)."""
        if isinstance(attr_val, Parameter):
            for name, p in self.root.named_parameters():
                if attr_val is p:
                    if name not in parameter_proxy_cache:
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name,
                                                                        (), {})
                    return parameter_proxy_cache[name]
        return attr_val

    # -- the trace ------------------------------------------------------------------------
    def trace(self, root: Module | Callable, concrete_args: dict | None = None) -> Graph:
        """Trace ``root`` (a module's ``forward``, or a function) into a new graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = None
        self.tensor_attrs = {}
        self._collect_tensor_attrs(self.root, [])
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        parameter_proxy_cache: dict = {}
        tracer = self
        orig_getattr = Module.__getattr__
        orig_call = Module.__call__

        tracing_thread = threading.get_ident()  # other threads keep Module's own behaviour

        def module_getattr_wrapper(mod, attr):
            value = orig_getattr(mod, attr)
            if threading.get_ident() != tracing_thread:
                return value
            return tracer.getattr(attr, value, parameter_proxy_cache)

        def module_call_wrapper(mod, *args, **kwargs):
            if threading.get_ident() != tracing_thread:
                return orig_call(mod, *args, **kwargs)

            def forward(*args, **kwargs):
                return orig_call(mod, *args, **kwargs)

            return tracer.call_module(mod, forward, args, kwargs)

        patcher = _Patcher()
        try:
            patcher.setattr(Module, "__getattr__", module_getattr_wrapper)
            patcher.setattr(Module, "__call__", module_call_wrapper)
            self._patch_wrapped_functions(patcher, fn_globals)
            with _KeepDispatch():
                result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return", None))
        finally:
            patcher.restore()
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, m: Module, prefix: list[str]) -> None:
        for k, v in vars(m).items():
            if isinstance(v, ember.Tensor):
                self.tensor_attrs[id(v)] = (".".join([*prefix, k]), v)
        for k, child in m.named_children():
            self._collect_tensor_attrs(child, [*prefix, k])

    def _patch_wrapped_functions(self, patcher: _Patcher, fn_globals: dict) -> None:
        for (_, name), frame_globals in _wrapped_fns_to_patch.items():
            orig = frame_globals.get(name, builtins.__dict__.get(name))
            if orig is not None:
                patcher.setitem(frame_globals, name, _leaf_call(orig))
        for namespace in (fn_globals, *(vars(m) for m in self._autowrap_search)):
            for name, value in list(namespace.items()):
                if not name.startswith("_") and id(value) in self._autowrap_function_ids:
                    patcher.setitem(namespace, name, _leaf_call(value))

    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict | None = None) -> tuple[Callable, list]:
        """Placeholders for the parameters of ``root_fn`` (``self`` excepted); a name in
        ``concrete_args`` gets its value instead, guarded by an assertion node."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        args: list = [self.root] if is_module else []
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise RuntimeError(f"concrete_args names {sorted(unknown)} are not parameters of "
                               f"{root_fn.__name__}")
        positional_kinds = (inspect.Parameter.POSITIONAL_ONLY,
                            inspect.Parameter.POSITIONAL_OR_KEYWORD)
        keyword_only: dict = {}
        for p in params:
            if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
                stars = "**" if p.kind == inspect.Parameter.VAR_KEYWORD else "*"
                raise RuntimeError(f"ember.fx cannot trace {stars}{p.name}: symbolic tracing "
                                   "needs named parameters (use concrete_args or a wrapper)")
            value = self._placeholder_for(p, concrete_args)
            if p.kind in positional_kinds:
                args.append(value)
            else:
                keyword_only[p.name] = value
        if keyword_only:
            call = functools.partial(root_fn, **keyword_only)
            call.__annotations__ = getattr(root_fn, "__annotations__", {})
            return call, args
        return root_fn, args

    def _placeholder_for(self, p: inspect.Parameter, concrete_args: dict):
        default = () if p.default is inspect.Parameter.empty else (p.default,)
        if p.name in concrete_args and not isinstance(concrete_args[p.name], PHBase):
            value = concrete_args[p.name]
            out = self.create_proxy("placeholder", f"{p.name}_1", default, {})
            message = f"{p.name} has been specialized to have value {value} but got " \
                      "another value"
            if value is None:
                self.create_proxy("call_function", _assert_is_none, (out, message), {})
            elif type(value) in (bool, int, float, str, complex):
                self.create_proxy("call_function", _assert, (out == value, message), {})
            else:
                import warnings

                warnings.warn(f"Was not able to add assertion to guarantee correct input "
                              f"{p.name} to specialized function. It is up to the user to "
                              "make sure that your inputs match the inputs you specialized "
                              "the function with.", stacklevel=3)
            return value
        proxy = self.create_proxy("placeholder", p.name, default, {},
                                  type_expr=p.annotation if p.annotation
                                  is not inspect.Parameter.empty else None)
        return proxy


class GraphAppendingTracer(Tracer):
    """A tracer that appends to an existing graph (``torch.fx.proxy.GraphAppendingTracer``):
    ``Proxy(node, GraphAppendingTracer(node.graph))`` records what is done with the proxy
    after ``node`` (or where ``graph.inserting_before/after`` says), outside any trace; a
    bare ``Proxy(node)`` uses one. Having no root module, it keeps a tensor argument as a
    constant in the node's arguments and refuses a module."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        self.root = Module()

    def create_arg(self, a: Any) -> Any:
        if isinstance(a, ember.Tensor):
            return a
        if isinstance(a, Module):
            raise NotImplementedError(f"argument of type: {type(a)}")
        return super().create_arg(a)


def symbolic_trace(root: Module | Callable, concrete_args: dict | None = None):
    """Trace ``root`` into a :class:`GraphModule` (``torch.fx.symbolic_trace``)::

        gm = ember.fx.symbolic_trace(model)
        print(gm.code)
    """
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
