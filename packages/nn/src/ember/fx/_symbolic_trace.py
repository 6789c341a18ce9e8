"""Symbolic tracing (``torch.fx.symbolic_trace``, ``Tracer``, ``wrap``): run ``forward`` on
:class:`Proxy` values and record what it does into a :class:`Graph`."""

from __future__ import annotations

import builtins
import collections
import copy
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
from .node import Node, has_side_effect, map_aggregate
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "GraphAppendingTracer",
           "ProxyableClassMeta", "is_fx_tracing"]

#: the classes made with :class:`ProxyableClassMeta`
_proxyable_classes: dict[type, None] = {}

_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running (``torch.fx._symbolic_trace.is_fx_tracing``)."""
    return _is_fx_tracing_flag


class ProxyableClassMeta(type):
    """A metaclass that makes building an instance traceable (``torch.fx.ProxyableClassMeta``):
    during a trace, ``TensorPair(y, y)`` with a proxy among its arguments becomes one
    ``call_function`` node whose target is the class; outside a trace, or without proxy
    arguments, the class builds its instance as usual::

        class TensorPair(metaclass=ember.fx.ProxyableClassMeta):
            def __init__(self, left, right):
                self.left, self.right = left, right

            def add(self, other):
                return TensorPair(self.left + other.left, self.right + other.right)

        def use(x: TensorPair, y: ember.Tensor):
            return x.add(TensorPair(y, y))

        ember.fx.symbolic_trace(use).code  # tensor_pair = __main___TensorPair(y, y) ...

    An instance made before the trace and met as an argument becomes a constant attribute
    of the traced module (``_TensorPair_constant_0``)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if not is_fx_tracing():
            cls.__init__(instance, *args, **kwargs)
            return instance
        found: list[Proxy] = []
        map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy)
                      else None)
        if found:
            return found[0].tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance


class _KeepDispatch(TorchFunctionMode):
    """Keeps ``__torch_function__`` dispatch on while tracing, so ember functions called on a
    :class:`Proxy` reach ``Proxy.__torch_function__``; the mode itself hands every call on."""

    _ember_reads_types = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return NotImplemented


def _user_stack_trace() -> str:
    """The stack from the first ``forward`` frame in, without ember.fx's and Module's call
    machinery (``Tracer.record_stack_traces``)."""
    import os
    import traceback

    here = os.path.dirname(os.path.abspath(__file__))
    machinery = (here, os.path.join(os.path.dirname(here), "nn", "modules", "module.py"))
    frames = traceback.extract_stack()
    for i, frame in enumerate(frames):
        if frame.name == "forward":
            frames = frames[i:]
            break
    else:
        return ""
    user = traceback.StackSummary.from_list(
        [f for f in frames if not os.path.abspath(f.filename).startswith(machinery)])
    return "".join(user.format()).strip()


class PHBase:
    """A concrete argument left symbolic (``concrete_args={"x": PH}``)."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


@has_side_effect  # kept by dead-code elimination, as torch.fx keeps torch._assert
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
        #: the module whose forward is being traced (path, type): ``("", None)`` at the top
        self.scope = Scope("", None)
        #: the modules being called, outermost first: ``key -> (path, type)``; each node
        #: records a copy as ``node.meta["nn_module_stack"]`` (a module's second call is
        #: keyed ``path@1``)
        self.module_stack: collections.OrderedDict[str, tuple[str, Any]] = \
            collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        #: node name -> (module path, module type) of the scope it was made in
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    #: the method of a root module that ``trace`` traces
    traced_func_name: str = "forward"
    #: record each node's ``stack_trace`` (the user's frames from ``forward`` in)
    record_stack_traces: bool = False
    #: a buffer read as a module attribute becomes a ``get_attr`` proxy at once (by default
    #: it becomes one when an operation uses it)
    proxy_buffer_attributes: bool = False

    _qualname_counter: dict[str, int] = {}

    # -- recording ------------------------------------------------------------------------
    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        if self.module_stack:
            node.meta["nn_module_stack"] = copy.copy(self.module_stack)
        if self.record_stack_traces and not node.stack_trace:
            trace = _user_stack_trace()
            if trace:
                node.stack_trace = trace
        return node

    def get_fresh_qualname(self, prefix: str) -> str:
        """``prefix`` + the first number that names no attribute of the root yet
        (``_tensor_constant0``, ``_tensor_constant1``...)."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter.get(prefix, 0)
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

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
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = (qualname, a)
                setattr(self.root, qualname, a)
            else:
                qualname = found[0]
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        if type(a) in _proxyable_classes:
            # an instance of a proxyable class built before the trace: a constant attribute
            qualname = self.get_fresh_qualname(f"_{type(a).__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
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
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as scope:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{scope.module_path}@{num_calls}" if num_calls > 0 \
                else scope.module_path
            self.module_stack[module_key] = (module_qualified_name, scope.module_type)
            self.num_calls[module_qualified_name] = num_calls + 1
            if not self.is_leaf_module(m, module_qualified_name):
                ret_val = forward(*args, **kwargs)
            else:
                ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            key, _ = self.module_stack.popitem(last=True)
            if key != module_key:
                raise AssertionError(f" Unexpected key {key}")
        return ret_val

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A parameter read from a module becomes a ``get_attr`` proxy (one per parameter;
        a :class:`~ember.fx.proxy.ParameterProxy` with ``param_shapes_constant``); so does a
        buffer with ``proxy_buffer_attributes``."""
        def proxy_for(collection) -> Proxy | None:
            for name, p in collection:
                if attr_val is p:
                    if name not in parameter_proxy_cache:
                        factory = None if not self.param_shapes_constant or \
                            not isinstance(attr_val, Parameter) else \
                            (lambda node, name=name: ParameterProxy(self, node, name, attr_val))
                        parameter_proxy_cache[name] = self.create_proxy(
                            "get_attr", name, (), {}, proxy_factory_fn=factory)
                    return parameter_proxy_cache[name]
            return None

        if isinstance(attr_val, Parameter):
            found = proxy_for(self.root.named_parameters())
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            found = proxy_for(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    # -- the trace ------------------------------------------------------------------------
    def trace(self, root: Module | Callable, concrete_args: dict | None = None) -> Graph:
        """Trace ``root`` (a module's ``forward``, or a function) into a new graph."""
        if isinstance(root, Module):
            self.root = root
            if not hasattr(type(root), self.traced_func_name):
                raise AssertionError(f"traced_func_name={self.traced_func_name} doesn't exist "
                                     f"in {type(root).__name__}")
            fn = getattr(type(root), self.traced_func_name)
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
        global _is_fx_tracing_flag
        was_tracing = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
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
            _is_fx_tracing_flag = was_tracing
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
        var_kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        if any(p.kind in var_kinds for p in params):
            return self._args_for_varargs(root_fn, params, args, concrete_args)
        keyword_only: dict = {}
        for p in params:
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

    def _args_for_varargs(self, root_fn: Callable, params: list, args: list,
                          concrete_args: dict) -> tuple[Callable, list]:
        """``forward(self, x, *args, **kwargs)``: as torch.fx does, one placeholder per
        named parameter (keyword-only ones too), then ``*args`` (the tuple) and ``**kwargs``
        (the dict), each a single proxy; ``root_fn`` is traced as a copy that takes them all
        positionally."""
        import types

        fn = inspect.unwrap(root_fn)
        if not isinstance(fn, types.FunctionType):
            raise RuntimeError(f"ember.fx cannot trace the *args/**kwargs of {root_fn!r}: "
                               "not a Python function")
        # the code's own order of locals: named parameters, keyword-only ones, *, **
        rank = {inspect.Parameter.VAR_POSITIONAL: 1, inspect.Parameter.VAR_KEYWORD: 2}
        for p in sorted(params, key=lambda p: rank.get(p.kind, 0)):
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                args.append(self.create_proxy("placeholder", f"*{p.name}", (), {}))
            elif p.kind is inspect.Parameter.VAR_KEYWORD:
                args.append(self.create_proxy("placeholder", f"**{p.name}", (), {}))
            else:
                args.append(self._placeholder_for(p, concrete_args))
        co = fn.__code__
        code = co.replace(co_argcount=len(args), co_posonlyargcount=0, co_kwonlyargcount=0,
                          co_flags=co.co_flags & ~(inspect.CO_VARARGS
                                                   | inspect.CO_VARKEYWORDS))
        patched = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                                     fn.__closure__)
        patched.__annotations__ = getattr(fn, "__annotations__", {})
        return patched, args

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
