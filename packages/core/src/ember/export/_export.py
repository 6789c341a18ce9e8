"""``ember.export.export``: run the capture over a module or function and build the program."""

from __future__ import annotations

import inspect
import math
import types

from .._tensor import Tensor
from . import _capture
from . import _symbolic as sym
from ._capture import Capture, ExportError, TracedTensor
from ._graph import Graph, InputSpec
from ._program import ExportedProgram, GraphModule

__all__ = ["export", "capture_program"]


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = ()) -> ExportedProgram:
    """Capture ``mod(*args, **kwargs)`` into an :class:`ExportedProgram`
    (``torch.export.export``).

    ``mod`` is a module (``ember.nn.Module``: its parameters and buffers become named graph
    inputs) or a function; ``args`` a tuple of example inputs. The ops run once on the
    examples, each registry op call becoming a node; constants made on the way are folded.
    ``dynamic_shapes`` marks dynamic dimensions: ``{"x": {0: Dim("batch", max=1024)}}`` by
    argument name, or a tuple with one entry per positional argument (a dict ``{dim: Dim}``,
    a tuple of per-dim ``Dim``/None, or None). Data-dependent Python control flow raises
    :class:`~ember.export.DataDependentError` naming the line; a dimension declared dynamic
    that the model specializes raises :class:`~ember.export.ConstraintViolationError`.

    ``strict`` and ``preserve_module_call_signature`` are accepted for PyTorch's sake (the
    capture is always the same; module call signatures are not preserved).
    """
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"Expecting `kwargs` to be a dict, got {type(kwargs)}")
    return capture_program(mod, args, kwargs or {}, dynamic_shapes, "export")


def _forward_of(mod):
    """The callable to run and the function whose signature names the inputs."""
    if _is_module(mod):
        return mod, mod.forward
    if not callable(mod):
        raise TypeError(f"export expects a module or a function, got {type(mod).__name__}")
    return mod, mod


def _is_module(obj) -> bool:
    return callable(getattr(obj, "named_parameters", None)) \
        and callable(getattr(obj, "named_buffers", None)) and hasattr(obj, "forward")


def _bind(sig_fn, args, kwargs):
    """``[(name, kind, value)]`` for the given arguments, in the signature's order."""
    owner = getattr(sig_fn, "__self__", None)
    try:
        # a program's own module (ep.module() captured again): the names it was captured with
        sig = owner._signature if isinstance(owner, GraphModule) else inspect.signature(sig_fn)
    except (TypeError, ValueError):
        sig = None
    if sig is None:
        return [(f"args_{i}", "POSITIONAL_ONLY", a) for i, a in enumerate(args)] + \
            [(k, "KEYWORD_ONLY", v) for k, v in kwargs.items()]
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"the example inputs do not match the signature of "
                        f"{getattr(sig_fn, '__qualname__', sig_fn)}: {exc}") from None
    out = []
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind.name
        out.append((name, kind, value))
    return out


class _Inputs:
    """Turns the example arguments into graph inputs and the input spec."""

    def __init__(self, capture: Capture, clone: bool):
        self.capture = capture
        self.clone = clone
        self.leaves: list = []  # (path, name, tensor, traced)

    def tensor(self, t: Tensor, path: str, name: str, dyn):
        cap = self.capture
        real = t.detach().clone() if self.clone else t
        if self.clone and t.requires_grad:
            real.requires_grad_(True)
        name = cap.fresh_name(name)
        shape = list(t._data.shape)
        for d, dim in _dyn_dims(dyn, t, path).items():
            shape[d] = self.symbol(dim, t._data.shape[d], path, d)
        spec = InputSpec(name, "user_input", cap.meta_of(t, shape))
        cap.add_input(spec, real)
        cap.tainted.add(name)
        traced = cap.wrap(real, name)
        self.leaves.append((path, name, t, traced))
        return {"tensor": name}, traced

    def symbol(self, dim, size: int, path: str, d: int):
        cap = self.capture
        if isinstance(dim, sym._DerivedDim):  # dx + 1: the root's symbol, solved for
            root = dim.root_size(size)
            if root is None or not dim.root.min <= root <= dim.root.max:
                raise _capture.ConstraintViolationError(
                    f"Constraints violated ({dim.root.__name__})! {path}.shape[{d}] = {size} "
                    f"in the example inputs is not {dim.__name__} for any "
                    f"{dim.root.__name__} in [{dim.root.min}, "
                    f"{'inf' if dim.root.max >= sym._INT_MAX else dim.root.max}]")
            self.symbol(dim.root, root, path, d)
            return dim.expr
        if isinstance(dim, sym._DimHint):
            dim = sym.Dim(f"{_ident(path)}_dim{d}")
        name = dim.__name__
        info = cap.symbols.get(name)
        if info is None:
            if not dim.min <= size <= dim.max:
                raise ConstraintViolationError_(path, d, size, dim)
            hi = None if dim.max >= sym._INT_MAX else dim.max
            cap.symbols[name] = info = {"min": dim.min, "max": hi, "hint": size}
        elif (info["min"], info["max"] if info["max"] is not None else sym._INT_MAX) != \
                (dim.min, dim.max):
            raise ExportError(f"two different Dims are named {name!r}")
        elif info["hint"] != size:
            raise _capture.ConstraintViolationError(
                f"Constraints violated ({name})! {path}.shape[{d}] is {size} in the example "
                f"inputs, but another input's dim {name!r} is {info['hint']}: dims that share "
                "a Dim must be equal")
        return ("sym", name)


def ConstraintViolationError_(path, d, size, dim):
    return _capture.ConstraintViolationError(
        f"Constraints violated ({dim.__name__})! {path}.shape[{d}] = {size} in the example "
        f"inputs is outside the range [{dim.min}, "
        f"{'inf' if dim.max >= sym._INT_MAX else dim.max}] of {dim!r}")


def _ident(path: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in path).strip("_") or "input"


def _dyn_items(dyn, n: int, path: str) -> list:
    if dyn is None:
        return [None] * n
    if isinstance(dyn, (list, tuple)) and len(dyn) == n:
        return list(dyn)
    raise ExportError(f"dynamic_shapes for {path} must be a list/tuple of {n} entries, got "
                      f"{dyn!r}")


def _dyn_dims(dyn, t: Tensor, path: str) -> dict:
    """``{dim index: Dim}`` from a dict ``{i: Dim}`` or a per-dim tuple/list (None, an int
    (that static size) or ``Dim.STATIC``: not dynamic)."""
    if dyn is None:
        return {}
    ndim = t._data.ndim
    if isinstance(dyn, dict):
        items = dyn.items()
    elif isinstance(dyn, (list, tuple)):
        if len(dyn) != ndim:
            raise ExportError(f"dynamic_shapes for {path} has {len(dyn)} entries, but the "
                              f"tensor has {ndim} dims")
        items = enumerate(dyn)
    else:
        raise ExportError(f"dynamic_shapes for {path} must be a dict {{dim: Dim}} or a "
                          f"tuple of Dims/None, got {dyn!r}")
    out = {}
    for d, dim in items:
        if dim is None or dim is sym.Dim.STATIC:
            continue
        if isinstance(d, bool) or not isinstance(d, int) or not -ndim <= d < ndim:
            raise ExportError(f"dynamic_shapes for {path}: dim {d!r} is out of range for a "
                              f"{ndim}-d tensor")
        if isinstance(dim, int) and not isinstance(dim, bool):  # a static size (a fix's)
            size = t._data.shape[d]
            if dim != size:
                raise _capture.ConstraintViolationError(
                    f"Static shape constraint of {dim} does not match input size of {size}, "
                    f"for {path}.size()[{d % ndim}]")
            continue
        if not isinstance(dim, (sym.Dim, sym._DimHint, sym._DerivedDim)):
            raise ExportError(f"dynamic_shapes for {path}[{d}] must be an ember.export.Dim, "
                              f"got {dim!r}")
        out[d % ndim] = dim
    return out


def _dynamic_by_name(dynamic_shapes, bound: list) -> dict:
    if dynamic_shapes is None:
        return {}
    names = [n for n, _, _ in bound]
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in names]
        if unknown:
            raise ExportError(f"dynamic_shapes names {unknown}, which are not among the "
                              f"inputs {names}")
        return dict(dynamic_shapes)
    if isinstance(dynamic_shapes, (list, tuple)):
        if len(dynamic_shapes) > len(names):
            raise ExportError(f"dynamic_shapes has {len(dynamic_shapes)} entries for "
                              f"{len(names)} inputs")
        return dict(zip(names, dynamic_shapes))
    raise ExportError(f"dynamic_shapes must be a dict or a tuple, got "
                      f"{type(dynamic_shapes).__name__}")


def _state(mod, cap: Capture):
    """Lift parameters and buffers as graph inputs; collect tensors held as attributes."""
    state_dict: dict = {}
    constants: dict = {}
    if not _is_module(mod):
        return state_dict, constants
    persistent = set(mod.state_dict(keep_vars=True)) if callable(
        getattr(mod, "state_dict", None)) else set()
    params = []
    for target, p in mod.named_parameters():
        name = cap.fresh_name("p_" + target.replace(".", "_"))
        cap.add_input(InputSpec(name, "parameter", cap.meta_of(p), target,
                                requires_grad=p.requires_grad), p)
        cap.lifted[id(p)] = (p, name)
        cap.data_aliases.setdefault(id(p._data), name)
        state_dict[target] = p
        params.append(name)
    for target, b in mod.named_buffers():
        if b is None or id(b) in cap.lifted:
            continue
        keep = target in persistent
        name = cap.fresh_name("b_" + target.replace(".", "_"))
        cap.add_input(InputSpec(name, "buffer", cap.meta_of(b), target, persistent=keep), b)
        cap.lifted[id(b)] = (b, name)
        cap.data_aliases.setdefault(id(b._data), name)
        (state_dict if keep else constants)[target] = b
    cap.param_names = frozenset(params)
    named_modules = getattr(mod, "named_modules", None)
    for prefix, m in (named_modules() if callable(named_modules) else [("", mod)]):
        for attr, v in vars(m).items():
            if isinstance(v, Tensor) and id(v) not in cap.lifted \
                    and not isinstance(v, TracedTensor):
                target = f"{prefix}.{attr}" if prefix else attr
                cap.attr_consts.setdefault(id(v), (v, target))
    return state_dict, constants


def _shadow_value(t: Tensor, shape: list, cap: Capture):
    """``t`` resized along its dynamic dims to their shadow sizes (values repeated)."""
    import ember

    out = t
    for d, expr in enumerate(shape):
        if isinstance(expr, int):
            continue
        # (a derived dim, dx + 1: its expression at the root's shadow size)
        new = sym.evaluate(expr, {n: s["shadow"] for n, s in cap.symbols.items()})
        index = ember.arange(new, device=t.device) % t._data.shape[d]
        out = out.index_select(d, index)
    return out.detach().requires_grad_(t.requires_grad) if t.requires_grad else out


def _pick_shadows(cap: Capture) -> None:
    """A second size per dynamic dim, in range, distinct from the example's and each other's."""
    used: set = set()
    for i, info in enumerate(cap.symbols.values()):
        lo, hi = info["min"], info["max"] if info["max"] is not None else sym._INT_MAX
        hint = info["hint"]
        # first an odd offset >= 3 coprime to the hint: sizes n-2 and ceil(n/2) (a stride-2
        # conv, chunk) agree at n and n+1, and a size that divides n (view(3, -1) at n=3)
        # divides n+3 too; then the nearest sizes the range allows
        odd = next(d for d in range(3 + 2 * i, 1 << 20, 2) if math.gcd(hint, d) == 1)
        for delta in (odd, -odd, i + 1, -(i + 1), i + 2, -(i + 2), 1, -1, 2, -2, 3, -3):
            cand = hint + delta
            if lo <= cand <= hi and cand >= 2 and cand not in used and cand != hint:
                info["shadow"] = cand
                used.add(cand)
                break
        else:
            info["shadow"] = hint  # a dim with a one-value range is static in effect


def capture_program(mod, args: tuple, kwargs: dict, dynamic_shapes, kind: str,
                    check_strict_outputs: bool = False, script: bool = False
                    ) -> ExportedProgram:
    """The capture shared by ``export`` (kind "export") and ``jit.trace`` (kind "jit");
    ``script``: ``jit.script``'s capture, where data-dependent control flow is an error."""
    import ember.jit  # noqa: F401 (ember.nn asks ember.jit.is_tracing())

    if _capture.current() is not None:
        raise ExportError("a capture is already running on this thread (export/trace inside "
                          "a traced forward is not supported)")
    call, sig_fn = _forward_of(mod)
    cap = Capture(kind)
    cap.script = script
    state_dict, constants = _state(mod, cap)
    bound = _bind(sig_fn, args, kwargs)
    dyn = _dynamic_by_name(dynamic_shapes, bound)
    inputs = _Inputs(cap, clone=kind == "export")
    in_spec, call_values = [], {}
    for name, pkind, value in bound:
        spec, traced = _container(inputs, value, name, dyn.get(name))
        in_spec.append({"name": name, "kind": pkind, "spec": spec})
        call_values[name] = (pkind, traced)
    if cap.symbols:
        _pick_shadows(cap)
        cap.shadow_on = any(s["shadow"] != s["hint"] for s in cap.symbols.values())
        for _, name, _, traced in inputs.leaves:
            shadow = _shadow_value(traced._real, cap.metas[name].shape, cap) \
                if cap.shadow_on else None
            traced._shadow = shadow
            if shadow is not None:
                cap.shadow_values[name] = shadow
    call_args, call_kwargs = _call_arguments(call_values)
    buffers = _snapshot_buffers(mod) if kind == "export" else None
    training = getattr(mod, "training", None) if _is_module(mod) else None
    _capture._LOCAL.capture = cap
    routed: list = []
    try:
        with cap.mode:
            routed = _route_held_functions(mod, _function_globals(call))
            if kind == "export":  # jit.trace warns and bakes in what it does not see
                routed += _route_closure(call)
            call = _dispatching_wrappers().get(id(call), call)  # export(F.relu, ...)
            out = call(*call_args, **call_kwargs)
        out_spec = _output_spec(cap, out, check_strict_outputs)
    finally:
        _unroute(routed)
        _capture._LOCAL.capture = None
        cap.done = True
        if buffers is not None:
            _restore_buffers(buffers)
    graph = _finish(cap, in_spec, out_spec)
    for target, t in cap.const_targets.items():
        if any(i.target == target for i in graph.inputs):
            constants[target] = t
    mutations = dict(cap.mutations)
    mutations["constants"] = sorted(cap.mutated_consts & {i.name for i in graph.inputs})
    return ExportedProgram(graph, state_dict, constants, kind=kind, training=training,
                           mutations=mutations, example_inputs=(args, kwargs),
                           module_names=_module_names(mod))


def _module_names(mod) -> list | None:
    """``[(path, class name)]`` of a module and its submodules (a scripted module's names
    are its original's), or None for a function."""
    if not _is_module(mod) or not hasattr(mod, "named_modules"):
        return None
    return [(path, getattr(m, "original_name", None) or type(m).__name__)
            for path, m in mod.named_modules()]


def _container(inputs: _Inputs, value, name: str, dyn):
    """The spec of one argument and the value to call with (traced tensors in place)."""
    if isinstance(value, Tensor):
        return inputs.tensor(value, name, name, dyn)
    if isinstance(value, (list, tuple)):
        dyns = _dyn_items(dyn, len(value), name)
        specs, items = [], []
        for i, (v, d) in enumerate(zip(value, dyns)):
            s, traced = _container(inputs, v, f"{name}_{i}", d)
            specs.append(s)
            items.append(traced)
        tag = "list" if isinstance(value, list) else "tuple"
        rebuilt = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        return {tag: specs}, rebuilt
    if isinstance(value, dict):
        if dyn is not None and not isinstance(dyn, dict):
            raise ExportError(f"dynamic_shapes for {name} must be a dict like the input")
        specs, out = [], {}
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ExportError(f"input {name}: dict keys must be str or int, got "
                                  f"{type(k).__name__}")
            s, traced = _container(inputs, v, f"{name}_{k}", dyn.get(k) if dyn else None)
            specs.append([k, s])
            out[k] = traced
        return {"dict": specs}, out
    if dyn is not None:
        raise ExportError(f"dynamic_shapes gives {name} dynamic dims, but it is a "
                          f"{type(value).__name__}, not a tensor")
    try:
        return inputs.capture.encode(value, "an input"), value
    except ExportError:
        raise ExportError(f"input {name} is a {type(value).__name__}: inputs are tensors, "
                          "numbers, strings, None, and lists/tuples/dicts of them") from None


def _call_arguments(call_values: dict):
    """The forward's call from the bound values. A positional-or-keyword parameter goes by
    keyword (one given by keyword after a skipped default must not shift into it), unless
    a ``*args`` follows, which needs them all positionally."""
    args, kwargs = [], {}
    varargs = any(pkind == "VAR_POSITIONAL" for pkind, _ in call_values.values())
    for name, (pkind, value) in call_values.items():
        if pkind == "POSITIONAL_ONLY" or (pkind == "POSITIONAL_OR_KEYWORD" and varargs):
            args.append(value)
        elif pkind == "VAR_POSITIONAL":
            args.extend(value)
        elif pkind == "VAR_KEYWORD":
            kwargs.update(value)
        else:
            kwargs[name] = value
    return args, kwargs


def _dispatching_wrappers() -> dict:
    """id(raw function) -> its dispatching wrapper, for every registered namespace (the
    kernel behind a front too: ``from ember.ops.fft_ops import fft_rfft``)."""
    from .. import overrides

    wrappers = {}
    for namespace in overrides._NAMESPACES:
        for value in vars(namespace).values():
            if overrides._is_wrapper(value):
                raw = value._ember_original
                wrappers.setdefault(id(raw), value)
            elif type(value) is types.FunctionType and value in overrides._SWAPS:
                raw = value  # dispatches in place: only its kernel needs routing
            else:
                continue
            if getattr(raw, "_ember_front", None) is not None:  # and the op's kernel,
                wrappers.setdefault(id(raw.__wrapped__), value)  # its module's own name
    return wrappers


def _route_held_functions(mod, extra_globals=()) -> list:
    """Functions the capture would not see, swapped for their dispatching wrappers for the
    capture: those the model holds as attributes (``self.activation = F.relu``, bound before
    dispatch was on) and those bound as globals of the modules that define the model's
    classes, or of ``extra_globals`` (``from ember.fft import rfft`` at the top of a file).
    Returns ``(dict, key, original)`` rows to put back with :func:`_unroute`."""
    wrappers = _dispatching_wrappers()
    routed = []
    if _is_module(mod) and callable(getattr(mod, "modules", None)):
        modules = list(mod.modules())
        for m in modules:
            d = vars(m)
            for key, value in list(d.items()):
                if callable(value) and not isinstance(value, type) and id(value) in wrappers:
                    routed.append((d, key, value))
                    d[key] = wrappers[id(value)]
        dicts = [*extra_globals, *_class_globals(modules)]
    else:
        dicts = list(extra_globals)
    seen: set = set()
    for d in dicts:
        if id(d) in seen or _is_namespace_dict(d):
            continue
        seen.add(id(d))
        for key, value in list(d.items()):
            if id(value) in wrappers and callable(value):
                routed.append((d, key, value))
                d[key] = wrappers[id(value)]
    return routed


def _route_closure(fn) -> list:
    """Raw op functions the captured function holds in its closure cells or default
    arguments (``f = ember.abs; export(lambda x: f(x), ...)``, bound before dispatch was
    on), swapped for their dispatching wrappers for the capture; rows for :func:`_unroute`."""
    fn = getattr(fn, "__func__", fn)
    if not callable(fn) or _is_namespace_dict(getattr(fn, "__globals__", None)):
        return []
    wrappers = _dispatching_wrappers()
    routed = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            continue
        if callable(value) and id(value) in wrappers:
            routed.append((cell, _CELL, value))
            cell.cell_contents = wrappers[id(value)]
    defaults = getattr(fn, "__defaults__", None)
    if isinstance(defaults, tuple) and any(id(v) in wrappers for v in defaults):
        routed.append((fn, "__defaults__", defaults))
        fn.__defaults__ = tuple(wrappers.get(id(v), v) if callable(v) else v
                                for v in defaults)
    kwdefaults = getattr(fn, "__kwdefaults__", None)
    if isinstance(kwdefaults, dict) and any(id(v) in wrappers for v in kwdefaults.values()):
        routed.append((fn, "__kwdefaults__", kwdefaults))
        fn.__kwdefaults__ = {k: wrappers.get(id(v), v) if callable(v) else v
                             for k, v in kwdefaults.items()}
    return routed


#: the key of a closure cell's row in a routing (its contents were swapped)
_CELL = object()


def _unroute(routed) -> None:
    """Put back what :func:`_route_held_functions` and :func:`_route_closure` swapped (last
    swapped first)."""
    for d, key, value in reversed(routed):
        if isinstance(d, dict):
            d[key] = value
        elif key is _CELL:
            d.cell_contents = value
        else:
            setattr(d, key, value)


def _is_namespace_dict(d) -> bool:
    """Whether ``d`` is the globals of a registered namespace or of ember's own core modules
    (those call ops by design; their code runs inside ops, where the capture is off)."""
    from .. import overrides

    name = d.get("__name__", "") if isinstance(d, dict) else ""
    if any(vars(ns) is d for ns in overrides._NAMESPACES):
        return True
    return name == "ember" or name.startswith(("ember._", "ember.ops", "ember.export",
                                               "ember.autograd", "ember.jit"))


def _function_globals(fn) -> list:
    """The globals of a plain function being captured (not a module's bound method)."""
    fn = getattr(fn, "__func__", fn)
    g = getattr(fn, "__globals__", None)
    return [g] if isinstance(g, dict) else []


def _class_globals(modules) -> list:
    """The globals of the functions the modules' classes define (``forward`` and its
    helpers: the globals of the files that define them)."""
    out, seen = [], set()
    for m in modules:
        for cls in type(m).__mro__:
            if cls is object or id(cls) in seen:
                continue
            seen.add(id(cls))
            for value in vars(cls).values():
                g = getattr(getattr(value, "__func__", value), "__globals__", None)
                if isinstance(g, dict) and all(g is not x for x in out):
                    out.append(g)
    return out


def _snapshot_buffers(mod):
    if not _is_module(mod):
        return None
    return [(b, b._version, b.detach().clone()) for _, b in mod.named_buffers() if b is not None]


def _restore_buffers(saved) -> None:
    """Export has no side effects: buffers the run wrote (BatchNorm in training) go back."""
    import ember

    with ember.no_grad():
        for b, version, copy in saved:
            if b._version != version:
                b.copy_(copy)


def _output_spec(cap: Capture, out, strict: bool):
    import dataclasses

    if isinstance(out, Tensor):
        return {"tensor": _output_name(cap, out)}
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return {"namedtuple": {"name": type(out).__name__, "fields": list(out._fields),
                               "items": [_output_spec(cap, x, strict) for x in out]}}
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return {"record": {"name": type(out).__name__,
                           "fields": [[f.name, _output_spec(cap, getattr(out, f.name), strict)]
                                      for f in dataclasses.fields(out)]}}
    if isinstance(out, (list, tuple)):
        if strict and isinstance(out, list):
            raise RuntimeError(
                "Encountering a list at the output of the tracer might cause the trace to be "
                "incorrect, this is only valid if the container structure does not change "
                "based on the module's inputs. Consider using a constant container instead "
                "(e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` "
                "instead). If you absolutely need this and know the side effects, pass "
                "strict=False to trace() to allow this behavior.")
        tag = "list" if isinstance(out, list) else "tuple"
        return {tag: [_output_spec(cap, x, strict) for x in out]}
    if isinstance(out, dict):
        if strict:
            raise RuntimeError(
                "Encountering a dict at the output of the tracer might cause the trace to be "
                "incorrect, this is only valid if the container structure does not change "
                "based on the module's inputs. Consider using a constant container instead "
                "(e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` "
                "instead). If you absolutely need this and know the side effects, pass "
                "strict=False to trace() to allow this behavior.")
        for k in out:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ExportError(f"output dict keys must be str or int, got {type(k).__name__}")
        return {"dict": [[k, _output_spec(cap, v, strict)] for k, v in out.items()]}
    if isinstance(out, sym.SymInt) and not isinstance(out.expr, int):
        return {"symint": sym.to_json(out.expr)}
    return cap.encode(out, "the output")


def _output_name(cap: Capture, t: Tensor) -> str:
    if cap.classify(t) == "unknown":
        cap.untraced(t, "an output")
    return cap.value_name(t)


def _finish(cap: Capture, in_spec: list, out_spec) -> Graph:
    """Dead code elimination, input order (weights, constants, user inputs), the Graph."""
    used = set(_refs(out_spec))
    for g in cap.guards:
        used |= sym.size_refs(g.lhs) | sym.size_refs(g.rhs)
    keep = []
    for node in reversed(cap.nodes):
        outs = node.output_names()
        if any(o in used for o in outs) or node.mutates or _side_effect(node.op):
            keep.append(node)
            used |= set(_refs(node.args)) | set(_refs(node.kwargs))
    nodes = keep[::-1]
    order = {"parameter": 0, "buffer": 1, "constant": 2, "user_input": 3}
    inputs = [i for i in cap.inputs if i.kind != "constant" or i.name in used]
    inputs.sort(key=lambda i: order[i.kind])
    symbols = {n: {k: v for k, v in s.items() if k in ("min", "max", "unbacked")}
               for n, s in cap.symbols.items()}
    graph = Graph(inputs=inputs, nodes=nodes, outputs=out_spec, in_spec=in_spec,
                   symbols=symbols, guards=cap.guards)
    return graph


def _side_effect(op: str) -> bool:
    return op == "setitem" or op.endswith("_") and not op.endswith("__")


def _refs(obj):
    if isinstance(obj, list):
        for x in obj:
            yield from _refs(x)
    elif isinstance(obj, dict):
        if len(obj) == 1:
            (tag, v), = obj.items()
            if tag in ("tensor", "scalar"):
                yield v
                return
            if tag == "symint":
                yield from sym.size_refs(sym.from_json(v))
                return
        for x in obj.values():
            yield from _refs(x)

