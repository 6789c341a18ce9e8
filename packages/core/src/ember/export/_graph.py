"""The captured graph: typed, shaped values, one node per registry op call, and its JSON.

Arguments are kept in their JSON form (FORMAT.md, "Arguments"): a tensor argument is
``{"tensor": "<value>"}``, a symbolic int ``{"symint": <expr>}``, a dtype ``{"dtype":
"float32"}``, a device ``{"device": "cpu"}``, a slice ``{"slice": [start, stop, step]}``,
``...`` is ``{"ellipsis": true}``; lists and tuples are arrays. The same form is what the
program prints, saves, and compiles to run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import _symbolic as sym

__all__ = ["TensorMeta", "InputSpec", "Node", "Graph", "FormatError", "RESULTS",
           "structure_leaves"]


class FormatError(ValueError):
    """A graph (JSON) or ``.ember`` file that this Ember cannot read."""


# -- values ------------------------------------------------------------------------------

@dataclass
class TensorMeta:
    """What a graph value is: dtype name, shape (ints and expressions), device."""

    dtype: str
    shape: list
    device: str

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "shape": [sym.to_json(d) for d in self.shape],
                "device": self.device}

    @classmethod
    def from_json(cls, obj: dict, where: str) -> TensorMeta:
        try:
            dtype, shape, device = obj["dtype"], obj["shape"], obj["device"]
        except (KeyError, TypeError):
            raise FormatError(f"{where}: a value needs dtype, shape and device") from None
        if not isinstance(dtype, str) or not isinstance(shape, list) \
                or not isinstance(device, str):
            raise FormatError(f"{where}: bad value metadata {obj!r}")
        try:
            return cls(dtype, [sym.from_json(d, where) for d in shape], device)
        except ValueError as exc:
            raise FormatError(str(exc)) from None

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(sym.fmt(d) for d in self.shape)}]"


#: what a graph input is (torch.export's InputKind, lower case in the file)
INPUT_KINDS = ("user_input", "parameter", "buffer", "constant")


@dataclass
class InputSpec:
    """A graph input: a user input, or a parameter/buffer/constant lifted from the model
    (``target`` is its name in the state dict, or in the constants)."""

    name: str
    kind: str
    meta: TensorMeta
    target: str | None = None
    persistent: bool = True
    requires_grad: bool = False

    def to_json(self) -> dict:
        out = {"name": self.name, "kind": self.kind, **self.meta.to_json()}
        if self.target is not None:
            out["target"] = self.target
        if self.kind == "buffer":
            out["persistent"] = self.persistent
        if self.requires_grad:
            out["requires_grad"] = True
        return out


#: what a node's op returns (FORMAT.md, "Nodes")
RESULTS = ("tensor", "tuple", "list", "nested", "none", "scalar")


@dataclass
class Node:
    """One registry op call: ``outputs = op(*args, **kwargs)``.

    ``result`` says what the op returned: ``"tensor"`` (one output), ``"tuple"``/``"list"``
    (one output per item; None where an item is not a tensor), ``"nested"`` (tuples/lists
    inside the result, ``histogramdd``'s ``(hist, (edges, ...))``: one output per leaf, in
    depth-first order, and ``structure``, a spec of ``{"tuple"}``/``{"list"}`` containers
    whose leaves are ``{"tensor": output}`` or None), ``"none"``, ``"scalar"`` (a Python
    number: ``Tensor.item`` and the ``operator.*`` scalar ops; its one output's dtype is
    ``float64``/``int64``/``bool`` for float/int/bool, shape ``[]``). An in-place op's output is
    its first argument, mutated (``add_``, ``setitem``)."""

    name: str
    op: str
    args: list
    kwargs: dict
    outputs: list  # [(name, TensorMeta) or None]
    result: str = "tensor"
    source: str | None = None
    mutates: list = field(default_factory=list)  # values the op writes in place
    structure: object = None  # "nested" results: the containers, leaves {"tensor"} or None

    def output_names(self) -> list:
        return [o[0] for o in self.outputs if o is not None]

    def leaves(self, out) -> list:
        """A call's result as one item per output (``outputs``' order): the result itself
        (``tensor``, ``none``), its items (``tuple``/``list``) or its leaves along
        ``structure`` (``nested``). ValueError, naming where, when the result's structure is
        not the capture's."""
        if self.result in ("tensor", "none", "scalar"):
            return [out]
        if self.result == "nested":
            found: list = []
            _flatten_along(self.structure, out, found, "result")
            return found
        if not isinstance(out, (list, tuple)) or len(out) != len(self.outputs):
            raise ValueError(f"returned {_count(out)} tensors, but the capture recorded "
                             f"{len(self.outputs)}")
        return list(out)

    def to_json(self) -> dict:
        out = {"name": self.name, "op": self.op, "args": self.args, "kwargs": self.kwargs,
               "outputs": [None if o is None else {"name": o[0], **o[1].to_json()}
                           for o in self.outputs],
               "result": self.result}
        if self.result == "nested":
            out["structure"] = self.structure
        if self.mutates:
            out["mutates"] = self.mutates
        if self.source:
            out["source"] = self.source
        return out


@dataclass
class Guard:
    """An assumption of the capture: ``lhs <op> rhs`` was ``expected`` (``source``: the line)."""

    lhs: object
    op: str
    rhs: object
    expected: bool
    source: str | None = None

    def to_json(self) -> dict:
        out = {"lhs": sym.to_json(self.lhs), "op": self.op, "rhs": sym.to_json(self.rhs),
               "expected": self.expected}
        if self.source:
            out["source"] = self.source
        return out

    def __str__(self) -> str:
        text = f"{sym.fmt(self.lhs)} {sym.GUARD_TEXT[self.op]} {sym.fmt(self.rhs)}"
        return text if self.expected else f"not ({text})"


@dataclass
class Graph:
    """Inputs (user inputs and lifted weights), nodes in execution order, the output spec."""

    inputs: list = field(default_factory=list)     # [InputSpec]
    nodes: list = field(default_factory=list)      # [Node]
    outputs: object = None                         # spec (tagged JSON, leaves {"tensor"})
    in_spec: list = field(default_factory=list)    # [{"name", "kind", "spec"}] per argument
    symbols: dict = field(default_factory=dict)    # name -> {"min", "max"}
    guards: list = field(default_factory=list)     # [Guard]

    # -- lookups ----------------------------------------------------------------------
    def values(self) -> dict:
        """Every value: name -> TensorMeta."""
        out = {i.name: i.meta for i in self.inputs}
        for n in self.nodes:
            for o in n.outputs:
                if o is not None:
                    out[o[0]] = o[1]
        return out

    def find_node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    # -- printing -----------------------------------------------------------------------
    def __str__(self) -> str:
        lines = ["graph():"]
        for i in self.inputs:
            what = i.kind if i.target is None else f"{i.kind}={i.target}"
            lines.append(f"    %{i.name} : {i.meta} = placeholder[{what}]")
        for n in self.nodes:
            lines.append("    " + format_node(n))
        lines.append(f"    return {format_spec(self.outputs)}")
        return "\n".join(lines)

    def python_code(self) -> str:
        """The graph as Python source, in the style of ``torch.fx``'s ``GraphModule.code``."""
        params = [s["name"] for s in self.in_spec]
        lines = [f"def forward(self, {', '.join(params)}):" if params else "def forward(self):"]
        lifted = {i.name: i.target for i in self.inputs if i.kind != "user_input"}
        for name, target in lifted.items():
            path = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in target.split("."))
            lines.append(f"    {name} = self{path}")
        for n in self.nodes:
            outs = n.output_names()
            call = f"{_call_name(n.op)}({_format_call(n.args, n.kwargs, plain=True)})"
            if not outs:
                lines.append(f"    {call}")
            elif n.result in ("tensor", "scalar") or n.op == "setitem":
                lines.append(f"    {outs[0]} = {call}")
            elif n.result == "nested":
                lines.append(f"    {_format_targets(n.structure, str)} = {call}")
            else:
                lhs = ", ".join(o[0] if o is not None else "_" for o in n.outputs)
                lines.append(f"    {lhs}{',' if len(n.outputs) == 1 else ''} = {call}")
        lines.append(f"    return {format_spec(self.outputs, plain=True)}")
        return "\n".join(lines) + "\n"

    def format_version(self) -> str:
        """The lowest FORMAT.md version that holds this graph: "2.1" when a node has a
        scalar result (``Tensor.item``, ``operator.*``), "2" when one has a nested result,
        else "1" (so that older readers keep reading every file they can run)."""
        if any(n.result == "scalar" for n in self.nodes):
            return "2.1"
        return "2" if any(n.result == "nested" for n in self.nodes) else "1"

    # -- JSON -------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"inputs": [i.to_json() for i in self.inputs],
                "in_spec": self.in_spec,
                "nodes": [n.to_json() for n in self.nodes],
                "outputs": self.outputs,
                "symbols": self.symbols,
                "guards": [g.to_json() for g in self.guards]}

    @classmethod
    def from_json(cls, obj: dict) -> Graph:
        """A graph from its JSON, every part checked (a file is untrusted input)."""
        if not isinstance(obj, dict):
            raise FormatError("graph: expected a JSON object")
        g = cls()
        seen: set = set()
        for i, spec in enumerate(_list(obj, "inputs")):
            where = f"graph input {i}"
            if not isinstance(spec, dict):
                raise FormatError(f"{where}: expected an object")
            name, kind = spec.get("name"), spec.get("kind")
            if not isinstance(name, str) or kind not in INPUT_KINDS:
                raise FormatError(f"{where}: needs a name and a kind in {INPUT_KINDS}")
            target = spec.get("target")
            if kind != "user_input" and not isinstance(target, str):
                raise FormatError(f"{where} ({name}): a {kind} needs a target")
            _unique(name, seen, where)
            g.inputs.append(InputSpec(name, kind, TensorMeta.from_json(spec, where), target,
                                      bool(spec.get("persistent", True)),
                                      bool(spec.get("requires_grad", False))))
        g.in_spec = _list(obj, "in_spec")
        for i, node in enumerate(_list(obj, "nodes")):
            where = f"graph node {i}"
            if not isinstance(node, dict):
                raise FormatError(f"{where}: expected an object")
            name, op = node.get("name"), node.get("op")
            args, kwargs = node.get("args", []), node.get("kwargs", {})
            result = node.get("result", "tensor")
            if not isinstance(name, str) or not isinstance(op, str) \
                    or not isinstance(args, list) or not isinstance(kwargs, dict) \
                    or result not in RESULTS:
                raise FormatError(f"{where}: needs name, op, args (list), kwargs (object) and "
                                  f"a result in {'/'.join(RESULTS)}")
            outputs = []
            for o in _list(node, "outputs"):
                if o is None:
                    outputs.append(None)
                    continue
                if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                    raise FormatError(f"{where} ({name}): bad output {o!r}")
                _unique(o["name"], seen, where)
                outputs.append((o["name"], TensorMeta.from_json(o, f"{where} ({name})")))
            source = node.get("source")
            mutates = node.get("mutates", [])
            if not isinstance(mutates, list) or not all(isinstance(m, str) for m in mutates):
                raise FormatError(f"{where} ({name}): mutates must be a list of value names")
            structure = node.get("structure")
            if result == "nested":
                _check_structure(structure, outputs, f"{where} ({name})")
            if result == "scalar" and (
                    len(outputs) != 1 or outputs[0] is None
                    or outputs[0][1].dtype not in sym.SCALAR_TYPES or outputs[0][1].shape):
                raise FormatError(f"{where} ({name}): a scalar result needs one output of "
                                  f"dtype {'/'.join(sym.SCALAR_TYPES)} and shape []")
            g.nodes.append(Node(name, op, args, kwargs, outputs, result,
                                source if isinstance(source, str) else None, mutates,
                                structure if result == "nested" else None))
        g.outputs = obj.get("outputs")
        symbols = obj.get("symbols", {})
        if not isinstance(symbols, dict):
            raise FormatError("graph: symbols must be an object")
        for s, rng in symbols.items():
            if not isinstance(rng, dict) or type(rng.get("min")) is not int \
                    or not (rng.get("max") is None or type(rng.get("max")) is int):
                raise FormatError(f"graph: symbol {s!r} needs an int min and an int/null max")
        g.symbols = symbols
        for i, gd in enumerate(_list(obj, "guards")):
            where = f"graph guard {i}"
            if not isinstance(gd, dict) or gd.get("op") not in sym.GUARD_FUNCS \
                    or not isinstance(gd.get("expected"), bool):
                raise FormatError(f"{where}: bad guard {gd!r}")
            try:
                g.guards.append(Guard(sym.from_json(gd.get("lhs"), where), gd["op"],
                                      sym.from_json(gd.get("rhs"), where), gd["expected"],
                                      gd.get("source")))
            except ValueError as exc:
                raise FormatError(str(exc)) from None
        return g


def _list(obj: dict, key: str) -> list:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise FormatError(f"graph: {key} must be a list")
    return value


def _unique(name: str, seen: set, where: str) -> None:
    if name in seen:
        raise FormatError(f"{where}: value name {name!r} is defined twice")
    seen.add(name)


# -- nested results ----------------------------------------------------------------------------

def structure_leaves(spec) -> list:
    """The leaves of a nested result's structure in depth-first order: the value names of its
    ``{"tensor": name}`` leaves, None for its null leaves (items that are not tensors)."""
    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "tensor":
            return [v]
        if tag in ("tuple", "list"):
            return [leaf for x in v for leaf in structure_leaves(x)]
    return [None]


def _check_structure(spec, outputs: list, where: str) -> None:
    """A nested result's ``structure``: tuples and lists (the outermost one a container) of
    ``{"tensor": name}`` and null, whose leaves are the node's outputs in order."""
    def valid(s) -> bool:
        if s is None:
            return True
        if not isinstance(s, dict) or len(s) != 1:
            return False
        (tag, v), = s.items()
        if tag == "tensor":
            return isinstance(v, str)
        return tag in ("tuple", "list") and isinstance(v, list) and all(valid(x) for x in v)

    if not valid(spec) or not isinstance(spec, dict) or "tensor" in spec:
        raise FormatError(f"{where}: a nested result needs a structure of tuple/list "
                          f"containers with tensor and null leaves, not {spec!r}")
    names = [None if o is None else o[0] for o in outputs]
    if structure_leaves(spec) != names:
        raise FormatError(f"{where}: the leaves of the structure {structure_leaves(spec)} are "
                          f"not the outputs {names}")


def _count(out) -> int:
    return len(out) if isinstance(out, (list, tuple)) else 1


def _flatten_along(spec, out, found: list, path: str) -> None:
    from .._tensor import Tensor

    (tag, v), = spec.items() if isinstance(spec, dict) else (("leaf", None),)
    if tag in ("tuple", "list"):
        if not isinstance(out, (list, tuple)) or len(out) != len(v):
            got = f"{len(out)} items" if isinstance(out, (list, tuple)) else \
                type(out).__name__
            raise ValueError(f"returned {got} at {path}, but the capture recorded {len(v)}")
        for i, (s, x) in enumerate(zip(v, out)):
            _flatten_along(s, x, found, f"{path}[{i}]")
        return
    if tag == "tensor" and not isinstance(out, Tensor):
        raise ValueError(f"returned a {type(out).__name__} at {path}, but the capture "
                         "recorded a tensor")
    found.append(out)


# -- printing ----------------------------------------------------------------------------------

def format_node(n: Node) -> str:
    outs = [o for o in n.outputs if o is not None]
    call = f"{n.op}({_format_call(n.args, n.kwargs)})"
    if not outs:
        return call
    if n.result == "scalar" and outs:
        name, meta = outs[0]
        return f"%{name} : Sym({sym.SCALAR_TYPES.get(meta.dtype, meta.dtype)}) = {call}"
    if len(n.outputs) == 1 and n.result in ("tensor", "none") or n.op == "setitem":
        name, meta = outs[0]
        return f"%{name} : {meta} = {call}"
    if n.result == "nested":
        metas = {o[0]: str(o[1]) for o in outs}
        names = _format_targets(n.structure, lambda v: f"%{v}")
        types = _format_targets(n.structure, metas.get, none="None")
        return f"{names} : ({types}) = {call}"
    names = ", ".join("_" if o is None else f"%{o[0]}" for o in n.outputs)
    metas = ", ".join("None" if o is None else str(o[1]) for o in n.outputs)
    return f"{names} : ({metas}) = {call}"


def _format_targets(spec, leaf, none: str = "_", top: bool = True) -> str:
    """A nested result's structure as the targets of an assignment: ``a, (b, c)`` (its
    outermost container bare), ``leaf(name)`` for each tensor, ``none`` for the others."""
    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "tensor":
            return leaf(v)
        if tag in ("tuple", "list"):
            items = [_format_targets(x, leaf, none, False) for x in v]
            text = ", ".join(items) + ("," if len(items) == 1 and tag == "tuple" else "")
            if top:
                return text + ("," if len(items) == 1 and tag == "list" else "")
            return f"({text})" if tag == "tuple" else f"[{text}]"
    return none


def _call_name(op: str) -> str:
    if op.startswith(("Tensor.", "ember.", "operator.")):
        return op
    if op.startswith(("nn.functional.", "linalg.")):
        return "ember." + op
    return f"ops.{op}"


def _format_call(args: list, kwargs: dict, plain: bool = False) -> str:
    parts = [format_arg(a, plain) for a in args]
    parts += [f"{k}={format_arg(v, plain)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def format_arg(a, plain: bool = False) -> str:
    """An argument in its JSON form as the graph prints it (``%x``, ``batch*4``, ``1:3``)."""
    if isinstance(a, list):
        return "[" + ", ".join(format_arg(x, plain) for x in a) + "]"
    if isinstance(a, dict) and len(a) == 1:
        (tag, v), = a.items()
        if tag in ("tensor", "scalar"):
            return v if plain else f"%{v}"
        if tag == "symint":
            text = sym.fmt(sym.from_json(v))
            return text.replace("%", "") if plain else text
        if tag == "dtype":
            return f"ember.{v}"
        if tag == "device":
            return f"ember.device({v!r})" if plain else repr(v)
        if tag in ("memory_format", "layout"):
            return f"ember.{v}"
        if tag == "slice":
            parts = ["" if x is None else format_arg(x, plain) for x in v]
            return f"slice({', '.join(p or 'None' for p in parts)})" if plain else \
                ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
        if tag == "ellipsis":
            return "..."
        if tag == "tuple":
            items = [format_arg(x, plain) for x in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if tag == "float":
            return f"float({v!r})"
        if tag == "complex":
            return repr(complex(*v))
    return repr(a)


def format_spec(spec, plain: bool = False) -> str:
    """An input/output spec (tagged containers) as Python-ish text."""
    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "list":
            return "[" + ", ".join(format_spec(x, plain) for x in v) + "]"
        if tag == "dict":
            return "{" + ", ".join(f"{k!r}: {format_spec(x, plain)}" for k, x in v) + "}"
        if tag == "tuple":
            items = [format_spec(x, plain) for x in v]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if tag == "namedtuple" and isinstance(v, dict):
            items = zip(v.get("fields", []), v.get("items", []))
            return f"{v.get('name')}(" + ", ".join(f"{k}={format_spec(x, plain)}"
                                                    for k, x in items) + ")"
        if tag == "record" and isinstance(v, dict):
            return f"{v.get('name')}(" + ", ".join(f"{k}={format_spec(x, plain)}"
                                                    for k, x in v.get("fields", [])) + ")"
    return format_arg(spec, plain)


# -- decoding literals ------------------------------------------------------------------------

_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def decode_literal(tag: str, v, where: str):
    """A tagged literal (dtype, device, ...) as its Python object; FormatError if bad."""
    import ember

    from .._device import device as device_cls
    from .._dtype import dtype as dtype_cls
    from .._layout import layout as layout_cls
    from .._memory_format import memory_format as mf_cls

    if tag == "dtype":
        dt = getattr(ember, v, None) if isinstance(v, str) else None
        if isinstance(dt, dtype_cls):
            return dt
    elif tag == "device":
        if isinstance(v, str):
            try:
                return device_cls(v)
            except (RuntimeError, ValueError, TypeError):
                pass
    elif tag == "memory_format":
        mf = getattr(ember, v, None) if isinstance(v, str) else None
        if isinstance(mf, mf_cls):
            return mf
    elif tag == "layout":
        lay = getattr(ember, v, None) if isinstance(v, str) else None
        if isinstance(lay, layout_cls):
            return lay
    elif tag == "float":
        if v in _FLOATS:
            return _FLOATS[v]
    elif tag == "complex":
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
            return complex(*v)
    elif tag == "ellipsis":
        return Ellipsis
    raise FormatError(f"{where}: bad literal {{{tag!r}: {v!r}}}")
