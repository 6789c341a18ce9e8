"""The guards of one compiled entry, as lines of the entry's generated function.

Each line returns ``MISS`` when an assumption of the capture does not hold for this call:
the arguments' structure and (for tensors) shape, dtype, device and ``requires_grad``; the
values of non-tensor arguments; grad mode; every reached module's ``training`` flag; that the
modules still hold the parameters and buffers the graph reads, with the same shapes; whether
each ``.grad`` the function read before setting it was None. Flags are checked as they were
when the capturing call began (the function may change them: the replay then does too).
"""

from __future__ import annotations

import sys

from .._tensor import Tensor

__all__ = ["guard_code"]

_SIMPLE = (type(None), bool, int, float, str)


class _Names:
    def __init__(self):
        self.ns: dict = {}
        self.n = 0

    def const(self, value, base: str) -> str:
        self.n += 1
        name = f"_{base}{self.n}"
        self.ns[name] = value
        return name


def _tensor_checks(expr: str, t: Tensor, names: _Names, data: str, requires: bool) -> str:
    from ..autograd.grad_mode import GRAD

    d = t._data
    dt = names.const(d.dtype, "gdt")
    dev = names.const(t._device, "gdev")
    text = (f"{data}.shape != {tuple(d.shape)!r} or {data}.dtype != {dt} or "
            f"({expr}._device is not {dev} and {expr}._device != {dev})")
    if GRAD.enabled:  # with grad mode off, requires_grad changes nothing
        text += f" or {expr}.requires_grad is not {requires}"
    return text


def _free_checks(expr: str, arr: str, requires: bool, grads: bool) -> str:
    """A parameter or buffer the graph reads: the same array (an in-place update keeps it;
    ``p.data = ...``, ``.to()`` or a resize replace it) and, when gradients are in play, the
    same ``requires_grad``."""
    text = f"{expr}._data is not {arr}"
    if grads:
        text += f" or {expr}.requires_grad is not {requires}"
    return text


def _spec_guards(spec, value, expr: str, lines: list, names: _Names, input_exprs: dict,
                 entry=None):
    (tag, v), = spec.items()
    if tag == "tensor":
        local = f"a_{v}"
        cls = names.const(type(value), "gcls")
        lines.append(f"{local} = {expr}")
        lines.append(f"if {local}.__class__ is not {cls}: return MISS")
        lines.append(f"d_{v} = {local}._data")
        requires = entry.requires.get(id(value), bool(value.requires_grad)) if entry \
            else bool(value.requires_grad)
        lines.append(f"if {_tensor_checks(local, value, names, f'd_{v}', requires)}: "
                     "return MISS")
        input_exprs[v] = local
        return
    if tag in ("list", "tuple"):
        cls = names.const(type(value), "gcls")
        lines.append(f"if {expr}.__class__ is not {cls} or len({expr}) != {len(v)}: "
                     "return MISS")
        for i, (s, x) in enumerate(zip(v, value)):
            _spec_guards(s, x, f"{expr}[{i}]", lines, names, input_exprs, entry)
        return
    if tag == "dict":
        keys = names.const(list(value.keys()), "gkeys")
        lines.append(f"if not isinstance({expr}, dict) or list({expr}.keys()) != {keys}: "
                     "return MISS")
        for k, s in v:
            _spec_guards(s, value[k], f"{expr}[{k!r}]", lines, names, input_exprs, entry)
        return
    _const_guard(value, expr, lines, names)


def _const_guard(value, expr: str, lines: list, names: _Names) -> None:
    if type(value) in _SIMPLE:
        cls = names.const(type(value), "gcls")
        lines.append(f"if {expr}.__class__ is not {cls} or {expr} != {value!r}: return MISS")
    else:
        c = names.const(value, "gobj")
        lines.append(f"if {expr} is not {c}: return MISS")


def _owners(modules) -> dict:
    """id(tensor) -> (module, dict attribute, key) for parameters and buffers."""
    out: dict = {}
    for m in modules:
        for attr in ("_parameters", "_buffers"):
            d = vars(m).get(attr)
            if isinstance(d, dict):
                for k, t in d.items():
                    if isinstance(t, Tensor):
                        out.setdefault(id(t), (m, attr, k))
    return out


def _amp_key() -> tuple:
    """This thread's autocast state (``()`` when off or never imported)."""
    amp = sys.modules.get("ember.amp.autocast_mode")
    return () if amp is None else amp.state_key()


def guard_code(captured, args: tuple, kwargs: dict, eager: bool = False):
    """``(lines, namespace, (input Tensor expressions, guarded array expressions))`` of one
    entry's guards; ``eager``: of an entry that runs the function eagerly (what the graph
    would read, the parameters' arrays and ``.grad``, is not checked)."""
    from ..autograd.grad_mode import GRAD

    names = _Names()
    names.ns["_GRAD"] = GRAD
    names.ns["_AMP"] = _amp_key
    lines = [f"if len(args) != {len(args)} or len(kwargs) != {len(kwargs)}: return MISS"]
    if kwargs:
        keys = names.const(set(kwargs), "gkeys")
        lines.append(f"if kwargs.keys() != {keys}: return MISS")
    lines.append(f"if _GRAD.enabled is not {bool(GRAD.enabled)}: return MISS")
    # the autocast state (the graph holds its casts): another state captures anew
    lines.append(f"if _AMP() != {_amp_key()!r}: return MISS")
    input_exprs: dict = {}
    arrays: dict = {}  # input name -> the guarded array itself
    entry = getattr(captured.capture, "entry", None)  # the state when the call began
    for i, (spec, value) in enumerate(zip(captured.arg_specs, args)):
        kind, s = spec
        if kind == "const":
            _const_guard(value, f"args[{i}]", lines, names)
        else:
            _spec_guards(s, value, f"args[{i}]", lines, names, input_exprs, entry)
    for k, (kind, s) in captured.kwarg_specs.items():
        if kind == "const":
            _const_guard(kwargs[k], f"kwargs[{k!r}]", lines, names)
        else:
            _spec_guards(s, kwargs[k], f"kwargs[{k!r}]", lines, names, input_exprs,
                         entry)
    flags = []
    for m in captured.modules:
        training = entry.training.get(id(m), m.training) if entry else m.training
        flags.append(f"{names.const(m, 'gm')}.training is not {bool(training)}")
    for i in range(0, len(flags), 8):
        lines.append(f"if {' or '.join(flags[i:i + 8])}: return MISS")
    owners = _owners(captured.modules)
    cap = captured.capture
    used = {i.name for i in captured.graph.inputs}
    for name, t in cap.free.items():
        expr = names.const(t, "f")
        input_exprs[name] = expr
        if name not in used or eager:
            continue
        arr = names.const(t._data, "garr")
        arrays[name] = arr
        owner = owners.get(id(t))
        requires = entry.requires.get(id(t), t.requires_grad) if entry else t.requires_grad
        checks = [_free_checks(expr, arr, bool(requires), bool(GRAD.enabled))]
        if owner is not None:
            m, attr, key = owner
            # the module's own dict (a new parameter or buffer assigned lands in it)
            checks.insert(0, f"{names.const(vars(m)[attr], 'gd')}.get({key!r}) is not {expr}")
        lines.append(f"if {' or '.join(checks)}: return MISS")
    for name, present in ({} if eager else cap.grad_guards).items():
        # the function read this tensor's .grad before anything it records set it: the
        # capture's Python saw None, or a gradient, and took its branches on that
        lines.append(f"if {input_exprs[name]}._grad is {'None' if present else 'not None'}: "
                     "return MISS")
    for i in captured.graph.inputs:
        if i.name not in input_exprs:  # lifted constants (snapshots made at capture)
            t = cap.const_targets.get(i.target)
            if t is None:
                raise AssertionError(f"graph input {i.name} has no value")
            input_exprs[i.name] = names.const(t, "k")
    return lines, names.ns, (input_exprs, arrays)
