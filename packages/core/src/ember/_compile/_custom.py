"""``ember.compile(fn, backend=my_compiler)``: a custom backend callable, as ``torch.compile``
calls one.

The function (or the module's ``forward``) is traced by ``ember.fx`` into a ``GraphModule``
whose ``forward`` takes the call's tensors, flattened (``L_x_`` for an argument ``x``,
``L_xs_0_`` for the first tensor of a list ``xs``), and returns a flat tuple of the results;
non-tensor arguments are baked into the graph as constants. The backend is called once per
entry as ``backend(gm, example_inputs)`` with the call's real tensors, and what it returns is
called with the tensors on every call that matches the entry; its result (a sequence, as the
``GraphModule``'s tuple) is put back into the structure the function returned.

An entry is keyed by what the trace assumed: the arguments' structure, each tensor's shape,
dtype, device and ``requires_grad``, the non-tensor arguments' values, grad mode; for the
modules the graph uses (the compiled module, modules reached through closures or globals,
modules given as arguments) the ``training`` flags of them and their submodules, and that
the submodules, parameters and buffers the graph reads are still the objects it read (a
replaced ``model.fc`` or ``model.fc.weight`` makes a new entry). Parameters and buffers are
``get_attr`` nodes and ember.nn's built-in modules ``call_module`` nodes, as
``ember.fx.symbolic_trace`` makes them: they are the model's own objects, so training updates
are seen.

What ember.fx cannot trace (data-dependent control flow, a random draw on no traced value,
which would become a constant) is a graph break: the entry runs the function eagerly.

``ember.fx`` ships with ember-nn; ember-core finds it through its public module, imported
when a custom backend is first used (core imports nothing of ember-nn at module level).
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
import types

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled

#: this thread is tracing a function for a custom backend (``is_compiling()`` is True)
_TRACING = threading.local()


def tracing() -> bool:
    """Whether this thread is tracing a function for a custom backend."""
    return _TRACING.__dict__.get("active", False)


def load_fx():
    """``ember.fx`` (ember-nn's), or a RuntimeError saying a custom backend needs it."""
    try:
        return importlib.import_module("ember.fx")
    except ImportError as exc:
        raise RuntimeError("ember.compile: a custom backend callable traces the function "
                           "with ember.fx, which ships with ember-nn: pip install ember-nn"
                           ) from exc


# -- flattening ------------------------------------------------------------------------------

class _Slot:
    """Where the i-th flat value goes back into a structure."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _flatten(value, leaves: list, is_leaf):
    """``value`` with every leaf (``is_leaf``) inside lists, tuples and dicts replaced by a
    :class:`_Slot` numbering it in ``leaves``."""
    if is_leaf(value):
        leaves.append(value)
        return _Slot(len(leaves) - 1)
    if isinstance(value, (list, tuple)):
        items = [_flatten(v, leaves, is_leaf) for v in value]
        return _rebuild_sequence(value, items)
    if isinstance(value, dict):
        return type(value)((k, _flatten(v, leaves, is_leaf)) for k, v in value.items())
    return value


def _rebuild_sequence(template, items):
    if type(template) in (list, tuple):
        return type(template)(items)
    if hasattr(template, "_fields"):  # a namedtuple
        return type(template)(*items)
    return type(template)(items)


def unflatten(spec, values):
    """``spec`` (what :func:`_flatten` made) with each slot replaced by ``values[slot]``."""
    if isinstance(spec, _Slot):
        return values[spec.index]
    if isinstance(spec, (list, tuple)):
        return _rebuild_sequence(spec, [unflatten(v, values) for v in spec])
    if isinstance(spec, dict):
        return type(spec)((k, unflatten(v, values)) for k, v in spec.items())
    return spec


def _is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def _key(value, tensors: list):
    """What an entry assumes of one argument; its tensors are appended to ``tensors``."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return (value.shape, value.dtype, value.device, value.requires_grad)
    cls = type(value)
    if cls is tuple or cls is list or isinstance(value, (list, tuple)):
        return (cls, *[_key(v, tensors) for v in value])
    if isinstance(value, dict):
        return (cls, *[(k, _key(v, tensors)) for k, v in value.items()])
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (cls, value)


def flatten_call(args: tuple, kwargs: dict):
    """The call's tensors, in placeholder order, and the key its entry is found by."""
    tensors: list = []
    key = (_key(args, tensors), _key(kwargs, tensors) if kwargs else None, is_grad_enabled())
    return tensors, key


class ModuleGuard:
    """What the graph assumed of the modules it uses: the ``training`` flag of each of them
    and of their submodules, and that each attribute on the path of a ``get_attr`` or
    ``call_module`` node still holds the object the graph module copied."""

    __slots__ = ("modules", "flags", "edges")

    def __init__(self, tops: list, model, copied: set, root, gm) -> None:
        seen: dict = {}
        for top in tops:
            for m in top.modules():
                seen.setdefault(id(m), m)
        self.modules = list(seen.values())
        self.flags = [m.training for m in self.modules]
        edges: dict = {}
        for node in gm.graph.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            parts = node.target.split(".")
            # a path starts at the model for what the root copied from it, else at the root
            # (modules the tracer installed, constants)
            owner = model if parts[0] in copied else root
            for part in parts:
                value = getattr(owner, part)
                held = _holding_dict(owner, part)
                if held is not None and held.get(part, _MISSING) is value:
                    edges.setdefault((id(owner), part), (held, part, value))
                owner = value
        self.edges = list(edges.values())

    def holds(self) -> bool:
        if [m.training for m in self.modules] != self.flags:
            return False
        return all(d.get(k, _MISSING) is v for d, k, v in self.edges)


_MISSING = object()


def _holding_dict(owner, name: str) -> dict | None:
    """The dict of ``owner`` that holds attribute ``name``: a Module's ``_parameters``,
    ``_buffers`` or ``_modules`` (as ``_guards`` reads them), else its ``__dict__`` (None
    for an object without one)."""
    d = getattr(owner, "__dict__", None)
    if not isinstance(d, dict):
        return None
    for attr in ("_parameters", "_buffers", "_modules"):
        held = d.get(attr)
        if isinstance(held, dict) and name in held:
            return held
    return d


# -- tracing ---------------------------------------------------------------------------------

def _placeholder_names(fn, args: tuple, kwargs: dict) -> list[str]:
    """PyTorch's names for the flat tensors, in their order: ``L_x_`` for parameter ``x``,
    ``L_xs_0_`` for the first tensor of a list ``xs``, ``L_args_0_`` for a positional argument
    the signature does not name."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL), "args")
    names: list[str] = []

    def walk(value, path):
        if isinstance(value, Tensor):
            names.append("L_" + "_".join(path) + "_")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, [*path, str(i)])
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, [*path, str(k)])

    for i, value in enumerate(args):
        walk(value, [positional[i]] if i < len(positional)
             else [star, str(i - len(positional))])
    for key, value in kwargs.items():
        walk(value, [str(key)])
    seen: set = set()
    out = []
    for name in names:
        name = re.sub(r"\W", "_", name)
        base, i = name, 1
        while name in seen:
            name, i = f"{base}{i}", i + 1
        seen.add(name)
        out.append(name)
    return out


def _forward_function(names: list[str], body, fn_globals: dict):
    """``def forward(self, L_x_, ...): return body(L_x_, ...)`` with ``fn_globals`` as its
    globals (the traced function's: ember.fx patches the ``wrap``'d and autowrapped names
    there)."""
    params = ", ".join(names)
    src = (f"def make(body):\n    def forward(self{', ' if names else ''}{params}):\n"
           f"        return body({params})\n    return forward\n")
    ns: dict = {}
    exec(compile(src, "<ember.compile custom backend>", "exec"), ns)
    made = ns["make"](body)
    return types.FunctionType(made.__code__, fn_globals, "forward", None, made.__closure__)


_TRACERS: list = []  # (ember.fx module, its tracer class)


def _tracer_class(fx):
    for mod, cls in _TRACERS:
        if mod is fx:
            return cls

    class CompileTracer(fx.Tracer):
        """ember.fx's tracer, with the compiled module traced through (hooks included) and
        modules reached through closures or globals installed in the root as they are met."""

        def __init__(self, top) -> None:
            super().__init__()
            self.top = top
            self.installed: list = []

        def call_module(self, m, forward, args, kwargs):
            if m is self.top:
                return forward(*args, **kwargs)
            return super().call_module(m, forward, args, kwargs)

        def path_of_module(self, mod) -> str:
            try:
                return super().path_of_module(mod)
            except NameError:
                base = re.sub(r"(?<!^)(?=[A-Z])", "_", type(mod).__name__).lower()
                name, i = base, 1
                while hasattr(self.root, name):
                    name, i = f"{base}_{i}", i + 1
                self.root.add_module(name, mod)
                self.installed.append(mod)
                self.submodule_paths = None
                return super().path_of_module(mod)

    _TRACERS.append((fx, CompileTracer))
    return CompileTracer


def trace(fn, model, args: tuple, kwargs: dict, tensors: list):
    """Trace ``fn(*args, **kwargs)`` (``model(...)`` for a module) into a GraphModule over
    the flat ``tensors``. Returns ``(gm, output spec, ModuleGuard)``."""
    fx = load_fx()
    nn = sys.modules["ember.nn"]  # loaded by ember.fx (core imports nothing of ember-nn)
    target = model.forward if model is not None else fn
    names = _placeholder_names(target, args, kwargs)
    template = _flatten((args, kwargs), [], _is_tensor)
    spec: list = []

    def body(*proxies):
        call_args, call_kwargs = unflatten(template, proxies)
        result = (model if model is not None else fn)(*call_args, **call_kwargs)
        outs: list = []
        spec.append(_flatten(result, outs, lambda v: isinstance(v, fx.Proxy)))
        return tuple(outs)

    raw = getattr(type(model), "forward", None) if model is not None else fn
    fn_globals = getattr(inspect_unwrap(raw), "__globals__", None) or {}
    name = type(model).__name__ if model is not None else getattr(fn, "__name__", "fn")
    holder = type(re.sub(r"\W", "_", name), (nn.Module,),
                  {"forward": _forward_function(names, body, fn_globals)})()
    copied: set = set()
    if model is not None:  # the root holds what the model holds, under the same names
        holder.training = model.training
        for child_name, child in model.named_children():
            holder.add_module(child_name, child)
            copied.add(child_name)
        for pname, p in model.named_parameters(recurse=False):
            holder.register_parameter(pname, p)
            copied.add(pname)
        for bname, b in model.named_buffers(recurse=False):
            holder.register_buffer(bname, b)
            copied.add(bname)
    tracer = _tracer_class(fx)(model)
    states = _rng_states()
    _TRACING.active = True
    try:
        graph = tracer.trace(holder)
    finally:
        _TRACING.active = False
        drew = _restore_rng(states)
    if drew:
        raise RuntimeError("a random function ran while tracing, on no traced value: its "
                           "draws would be constants of the graph")
    gm = fx.GraphModule(tracer.root, graph)
    tops = ([model] if model is not None else []) + tracer.installed
    tops += [v for v in _leaves(args, kwargs) if isinstance(v, nn.Module)]
    return gm, spec[0], ModuleGuard(tops, model, copied, tracer.root, gm)


def _rng_states() -> dict:
    from .. import _random

    gens = [_random.default_generator, *_random._device_generators.values()]
    return {id(g): (g, g._np.get_state_bytes()) for g in gens}  # (engine + cached normal)


def _restore_rng(states: dict) -> bool:
    """Put the default generators back as ``states`` had them; whether any had drawn (or was
    made) since."""
    from .. import _random

    after = _rng_states()
    drew = after.keys() != states.keys()
    with _random._DEVICE_GENERATORS_LOCK:
        for dev, g in list(_random._device_generators.items()):
            if id(g) not in states:  # made by the trace: the eager run makes it afresh
                del _random._device_generators[dev]
    for key, (g, state) in states.items():
        if after[key][1] != state:
            drew = True
            g._np.set_state_bytes(state)
    return drew


def inspect_unwrap(fn):
    import inspect

    try:
        return inspect.unwrap(fn)
    except ValueError:
        return fn


def _leaves(args, kwargs) -> list:
    leaves: list = []
    _flatten((args, kwargs), leaves, lambda v: not isinstance(v, (list, tuple, dict)))
    return leaves


class CustomEntry:
    """One traced graph and what the backend made of it."""

    __slots__ = ("key", "guard", "compiled", "spec", "gm", "run", "source",
                 "breaks", "eager", "gen", "reason")

    def __init__(self, key, guard: ModuleGuard, compiled, spec, gm) -> None:
        self.key, self.guard, self.compiled, self.spec, self.gm = \
            key, guard, compiled, spec, gm
        self.run = None
        self.source = gm.code
        self.breaks: list = []
        self.eager = False
        self.gen = None
        self.reason = None

    def matches(self, key) -> bool:
        return key == self.key and self.guard.holds()

    def __call__(self, tensors: list):
        return unflatten(self.spec, self.compiled(*tensors))


class EagerEntry:
    """An entry whose trace failed: the function runs as it is for this key."""

    __slots__ = ("key", "run", "source", "breaks", "eager", "gen", "reason")

    def __init__(self, key, reason: str) -> None:
        self.key = key
        self.run = None
        self.source = None
        self.breaks = [reason]
        self.eager = True
        self.gen = None
        self.reason = reason

    def matches(self, key) -> bool:
        return key == self.key
