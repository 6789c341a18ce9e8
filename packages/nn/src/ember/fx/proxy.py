"""``ember.fx.Proxy``: the stand-in value that records what symbolic tracing does with it."""

from __future__ import annotations

import bisect
import dis
import operator
import sys

from ember.overrides import activate as _activate_dispatch
from ember.overrides import is_active as _dispatch_active

from .graph import magic_methods, reflectable_magic_methods
from .node import Node, map_aggregate

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "Scope",
           "ScopeContextManager"]


def __getattr__(name: str):
    # ``torch.fx.proxy.GraphAppendingTracer``: defined with the Tracer it extends, which
    # imports this module
    if name == "GraphAppendingTracer":
        from ._symbolic_trace import GraphAppendingTracer

        return GraphAppendingTracer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Scope:
    """The module whose ``forward`` a node was traced in: ``module_path`` (``"sub"``,
    ``""`` at the top) and ``module_type`` (``torch.fx.proxy.Scope``)."""

    def __init__(self, module_path: str, module_type) -> None:
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets ``scope`` to ``current_scope``'s path and type for the ``with`` block and puts
    the previous ones back after (``torch.fx.proxy.ScopeContextManager``)."""

    def __init__(self, scope: Scope, current_scope: Scope) -> None:
        self._prev_scope = Scope(scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args) -> None:
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


class TraceError(ValueError):
    """Symbolic tracing met something it cannot record (``torch.fx.proxy.TraceError``)."""


class Proxy:
    """A value during symbolic tracing: each operation on it adds a node to the graph
    (``torch.fx.Proxy``). Python operators become ``call_function`` nodes on ``operator``'s
    functions, ember functions called on it ``call_function`` nodes (through
    ``__torch_function__``), its methods ``call_method`` nodes. Its value is unknown, so
    ``if proxy:``, ``for x in proxy`` and ``len(proxy)`` raise."""

    def __init__(self, node: Node, tracer=None) -> None:
        from ._symbolic_trace import GraphAppendingTracer

        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node
        if isinstance(tracer, GraphAppendingTracer) and not _dispatch_active():
            # a proxy made by hand outside a trace, to build or inline code: ember functions
            # called on it must dispatch ``__torch_function__`` from now on, as PyTorch's
            # always do (as once a Tensor subclass overrides it)
            _activate_dispatch()

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):  # copy, pickle, ... probing: not ops
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo):
        raise TraceError("Proxy objects cannot be deep-copied during symbolic tracing")

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        # ``a, b = proxy`` (a module returning a tuple): the caller's next instruction
        # says how many items it unpacks, so they can be recorded as getitem nodes
        calling_frame = sys._getframe(1)
        instructions = list(dis.get_instructions(calling_frame.f_code))
        at = bisect.bisect_left([i.offset for i in instructions], calling_frame.f_lasti)
        following = instructions[at + 1] if at + 1 < len(instructions) else None
        if instructions[at].opname == "UNPACK_SEQUENCE":
            following = instructions[at]
        if following is not None and following.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(following.argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call ember.fx.wrap('len') "
                           "at module scope")

    def keys(self):
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracers: set = set()

        def find(a):
            if isinstance(a, Proxy):
                tracers.add(a.tracer)

        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while "
                               f"trying to trace operations {orig_method}")
        tracer = next(iter(tracers))
        from ember.overrides import is_tensor_method_or_property

        if is_tensor_method_or_property(orig_method):
            name = orig_method.__name__
            if name.startswith("__") and name.endswith("__"):
                import ember

                stripped = name[2:-2]
                name = stripped if callable(getattr(ember.Tensor, stripped, None)) else name
            return tracer.create_proxy("call_method", name, args, kwargs)
        target = getattr(orig_method, "_ember_original", orig_method)
        return tracer.create_proxy("call_function", target, args, kwargs,
                                   name=tracer.graph._target_to_str(target))


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node when used as a value, a ``call_method`` node when
    called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # made on first use: a method call needs no getattr node
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """The proxy of a parameter when tracing with ``param_shapes_constant=True``
    (``torch.fx.proxy.ParameterProxy``): ``shape``, ``size()``, ``dim()``, ``ndim``,
    ``numel()`` and ``nelement()`` read the parameter itself, so code that branches on them
    traces."""

    def __init__(self, tracer, node: Node, name: str, param) -> None:
        from ember.nn import Parameter

        super().__init__(node, tracer)
        if not isinstance(param, Parameter):
            raise AssertionError(f"Expected Parameter, got {type(param)}")
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _magic(name: str):
    fn = getattr(operator, name)

    def impl(*args):
        return args[0].tracer.create_proxy("call_function", fn, args, {})

    impl.__name__ = f"__{name.strip('_')}__"
    return impl


def _reflected(name: str):
    fn = getattr(operator, name)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", fn, (rhs, self), {})

    impl.__name__ = f"__r{name.strip('_')}__"
    return impl


for _name in magic_methods:
    if not hasattr(operator, _name):  # 'div': Python 3 has truediv only
        continue
    setattr(Proxy, f"__{_name.strip('_')}__", _magic(_name))
for _name in reflectable_magic_methods:
    if _name != "getitem" and hasattr(operator, _name):
        setattr(Proxy, f"__r{_name.strip('_')}__", _reflected(_name))
del _name
