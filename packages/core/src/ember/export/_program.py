"""``ExportedProgram``, its graph signature, and ``GraphModule``, which runs the graph.

The runner needs no Python class of the original model: it binds the inputs, checks the
guards, and calls each node's op (``ember.export._ops.resolve``) with its arguments.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass

from .._naming import bare as _bare
from . import _capture
from . import _symbolic as sym
from ._graph import FormatError, Graph, decode_literal

__all__ = ["ExportedProgram", "ExportGraphSignature", "InputKind", "OutputKind", "GraphModule",
           "GuardError", "Record"]


class GuardError(RuntimeError, AssertionError):
    """Inputs that break an assumption of the capture (shape, dtype, a branch taken). It is
    both a ``RuntimeError`` (what PyTorch raised up to 2.5, "Expected input ... to be equal
    to ...", whose wording it keeps) and an ``AssertionError`` (what PyTorch 2.6+ raises,
    "Guard failed: ..."), so either ``except`` of a ported script catches it."""


class InputKind(enum.Enum):
    USER_INPUT = "user_input"
    PARAMETER = "parameter"
    BUFFER = "buffer"
    CONSTANT_TENSOR = "constant"


class OutputKind(enum.Enum):
    USER_OUTPUT = "user_output"


@dataclass
class InputSpecView:
    kind: InputKind
    name: str
    target: str | None
    persistent: bool | None = None


@dataclass
class OutputSpecView:
    kind: OutputKind
    name: str


class ExportGraphSignature:
    """Which graph inputs are user inputs, parameters, buffers and constants, and which
    values are the outputs (``torch.export.ExportGraphSignature``)."""

    def __init__(self, graph: Graph, mutations: dict):
        self.input_specs = [InputSpecView(InputKind(i.kind), i.name, i.target,
                                          i.persistent if i.kind == "buffer" else None)
                            for i in graph.inputs]
        self.output_specs = [OutputSpecView(OutputKind.USER_OUTPUT, n)
                             for n in _spec_tensors(graph.outputs)]
        self._mutations = mutations

    def _of(self, kind: InputKind) -> list:
        return [s for s in self.input_specs if s.kind is kind]

    @property
    def user_inputs(self) -> list:
        return [s.name for s in self._of(InputKind.USER_INPUT)]

    @property
    def parameters(self) -> list:
        return [s.target for s in self._of(InputKind.PARAMETER)]

    @property
    def buffers(self) -> list:
        return [s.target for s in self._of(InputKind.BUFFER)]

    @property
    def non_persistent_buffers(self) -> list:
        return [s.target for s in self._of(InputKind.BUFFER) if not s.persistent]

    @property
    def lifted_tensor_constants(self) -> list:
        return [s.target for s in self._of(InputKind.CONSTANT_TENSOR)]

    @property
    def inputs_to_parameters(self) -> dict:
        return {s.name: s.target for s in self._of(InputKind.PARAMETER)}

    @property
    def inputs_to_buffers(self) -> dict:
        return {s.name: s.target for s in self._of(InputKind.BUFFER)}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        return {s.name: s.target for s in self._of(InputKind.CONSTANT_TENSOR)}

    @property
    def user_outputs(self) -> list:
        return [s.name for s in self.output_specs]

    @property
    def buffers_to_mutate(self) -> list:
        """Targets of parameters/buffers that the graph writes in place."""
        return list(self._mutations.get("buffers", []))

    @property
    def user_inputs_to_mutate(self) -> list:
        return list(self._mutations.get("user_inputs", []))

    def __str__(self) -> str:
        lines = ["# inputs"]
        for s in self.input_specs:
            extra = f" target={s.target!r}" if s.target is not None else ""
            if s.persistent is not None:
                extra += f" persistent={s.persistent}"
            lines.append(f"{s.name}: {s.kind.name}{extra}")
        lines += ["", "# outputs"] + [f"{s.name}: {s.kind.name}" for s in self.output_specs]
        return "\n".join(lines)


class ExportedProgram:
    """A captured program (``torch.export.ExportedProgram``): ``graph``, ``graph_signature``,
    ``state_dict`` (parameters and persistent buffers by name), ``constants`` (lifted
    constants and non-persistent buffers), ``range_constraints`` (dynamic dims' ranges) and
    the guards. ``module()`` runs it; ``ember.export.save``/``load`` store it in one file."""

    def __init__(self, graph: Graph, state_dict: dict, constants: dict, *,
                 kind: str = "export", training: bool | None = None,
                 mutations: dict | None = None, example_inputs=None,
                 module_names: list | None = None):
        self.graph = graph
        self.state_dict = state_dict
        self.constants = constants
        self.kind = kind
        self.training = training
        self.mutations = mutations or {"buffers": [], "user_inputs": []}
        self.example_inputs = example_inputs
        #: ``[(path, class name)]`` of the captured module and its submodules (path "" first),
        #: what a loaded ``jit`` program prints as each module's ``original_name``
        self.module_names = module_names
        self.graph_signature = ExportGraphSignature(graph, self.mutations)

    @property
    def range_constraints(self) -> dict:
        """``{dim name: (min, max)}`` of the dynamic dims (max None: unbounded)."""
        return {n: (s["min"], s["max"]) for n, s in self.graph.symbols.items()
                if not s.get("unbacked")}

    @property
    def guards(self) -> list:
        return list(self.graph.guards)

    def module(self) -> GraphModule:
        """The graph as a module that runs it (``torch.export``'s ``ep.module()``): a
        :class:`GraphModule` that is also an ``nn.Module`` once ember-nn is imported (its
        parameters and buffers registered under their state-dict names, shared with this
        program), so ``isinstance(m, nn.Module)``, ``named_modules()``, ``ember.compile(m)``
        and a parent module's ``parameters()`` work; without ember-nn imported, the plain
        runner (with the same methods a deployment uses)."""
        return _module_of(self)

    def named_parameters(self):
        """``(name, tensor)`` of the lifted parameters, in the graph's input order."""
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        """``(name, tensor)`` of the lifted buffers (persistent ones from ``state_dict``,
        non-persistent ones from ``constants``), in the graph's input order."""
        for name in self.graph_signature.buffers:
            yield name, self.state_dict[name] if name in self.state_dict else self.constants[name]

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    @property
    def tensor_constants(self) -> dict:
        """The lifted constants and non-persistent buffers (``constants``)."""
        return self.constants

    @property
    def graph_module(self) -> GraphModule:
        """The graph as a module (``torch.export``'s ``ep.graph_module``, which scripts print
        or ``print_readable()``): one made on first use and kept."""
        gm = self.__dict__.get("_graph_module")
        if gm is None:
            gm = self.__dict__["_graph_module"] = GraphModule(self)
        return gm

    def run_decompositions(self, decomp_table=None,
                           decompose_custom_triton_ops: bool = False) -> ExportedProgram:
        """The program with the ops in ``decomp_table`` replaced by what their functions
        compute (``torch.export``'s ``run_decompositions``): keys are ``ember.ops.aten``
        overloads (``torch.ops.aten.conv2d.default``) or op names, each function called with
        the op's arguments and its ops recorded in its place; the program is captured again
        with those functions in place of the ops, at its example inputs and with its dynamic
        dims. Without a table (or :func:`default_decompositions`'s, which is empty) it is the
        program itself: its nodes are Ember's registry ops already, there is no lower IR to
        decompose into."""
        table = _decomp_by_op(decomp_table or {})
        hits = {op: fn for op, fn in table.items()
                if any(n.op == op for n in self.graph.nodes)}
        if not hits:
            return self
        from ._export import export

        module = self.module()
        module.__dict__["_ember_decomps"] = hits
        args, kwargs = self._example_call()
        return export(module, args, kwargs, dynamic_shapes=self._dynamic_shapes())

    def _example_call(self) -> tuple:
        """``(args, kwargs)`` to capture this program again: its capture's example inputs,
        or (a loaded program) zeros of its inputs' shapes, a dynamic dim at its smallest
        size of at least 2."""
        if self.example_inputs is not None:
            return self.example_inputs
        import ember

        by_name = {i.name: i for i in self.graph.inputs if i.kind == "user_input"}

        def sized(expr):
            if isinstance(expr, int):
                return expr
            info = self.graph.symbols.get(expr[1], {}) if expr[0] == "sym" else {}
            lo, hi = info.get("min", 0), info.get("max")
            return max(lo, 2) if hi is None else min(max(lo, 2), hi)

        def build(spec):
            if isinstance(spec, dict) and len(spec) == 1:
                (tag, v), = spec.items()
                if tag == "tensor":
                    meta = by_name[v].meta
                    return ember.zeros([sized(s) for s in meta.shape],
                                       dtype=getattr(ember, meta.dtype), device=meta.device)
                if tag in ("list", "tuple"):
                    out = [build(s) for s in v]
                    return out if tag == "list" else tuple(out)
            raise GuardError("run_decompositions: this loaded program's inputs are not all "
                             "tensors; capture the model again with a decomposition table")

        args, kwargs = [], {}
        for spec in self.graph.in_spec:
            value = build(spec["spec"])
            if spec.get("kind") == "KEYWORD_ONLY":
                kwargs[spec["name"]] = value
            else:
                args.append(value)
        return tuple(args), kwargs

    def _dynamic_shapes(self):
        """``dynamic_shapes`` for capturing this program again: each top-level tensor input's
        dims that are symbols, as :class:`Dim` with their ranges."""
        by_name = {i.name: i for i in self.graph.inputs if i.kind == "user_input"}
        made: dict = {}
        spec_by_arg = {}
        for spec in self.graph.in_spec:
            s = spec["spec"]
            dims = {}
            if isinstance(s, dict) and len(s) == 1 and "tensor" in s:
                for d, expr in enumerate(by_name[s["tensor"]].meta.shape):
                    if not isinstance(expr, int) and expr[0] == "sym":
                        name = expr[1]
                        info = self.graph.symbols.get(name, {})
                        if name not in made:
                            made[name] = sym.Dim(name, min=info.get("min"),
                                                 max=info.get("max"))
                        dims[d] = made[name]
            spec_by_arg[spec["name"]] = dims or None
        return spec_by_arg if made else None

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self) -> str:
        code = "\n".join("    " + line for line in self.graph.python_code().splitlines())
        ranges = ", ".join(f"{n}: [{lo}, {'inf' if hi is None or hi >= sym._INT_MAX else hi}]"
                           for n, (lo, hi) in self.range_constraints.items())
        guards = "".join(f"\n    {g}" + (f"  # {g.source}" if g.source else "")
                         for g in self.graph.guards)
        return (f"ExportedProgram:\n{code}\nGraph signature:\n    "
                + str(self.graph_signature).replace("\n", "\n    ")
                + f"\nRange constraints: {{{ranges}}}\nGuards:{guards or ' none'}\n")


def _spec_tensors(spec) -> list:
    out: list = []

    def walk(s):
        if isinstance(s, dict) and len(s) == 1:
            (tag, v), = s.items()
            if tag == "tensor":
                out.append(v)
            elif tag in ("tuple", "list"):
                for x in v:
                    walk(x)
            elif tag == "namedtuple":
                for x in v["items"]:
                    walk(x)
            elif tag in ("dict",):
                for _, x in v:
                    walk(x)
            elif tag == "record":
                for _, x in v["fields"]:
                    walk(x)

    walk(spec)
    return out


# -- running a graph -----------------------------------------------------------------------------

class _Env:
    __slots__ = ("values", "symbols")

    def __init__(self):
        self.values: dict = {}
        self.symbols: dict = {}

    def size(self, name: str, dim: int) -> int:
        return self.values[name]._data.shape[dim]


def _compile_arg(obj, names: set, where: str):
    """``(True, value)`` for a literal, ``(False, fn(env))`` for what depends on the run."""
    if isinstance(obj, list):
        parts = [_compile_arg(x, names, where) for x in obj]
        if all(c for c, _ in parts):
            return True, [v for _, v in parts]
        return False, lambda env: [v if c else v(env) for c, v in parts]
    if isinstance(obj, dict):
        if len(obj) != 1:
            raise FormatError(f"{where}: bad argument {obj!r}")
        (tag, v), = obj.items()
        if tag in ("tensor", "scalar"):
            if not isinstance(v, str) or v not in names:
                raise FormatError(f"{where}: refers to value %{v}, which no earlier node or "
                                  "input defines")
            return False, lambda env: env.values[v]
        if tag == "symint":
            try:
                expr = sym.from_json(v, where)
            except ValueError as exc:
                raise FormatError(str(exc)) from None
            for ref in sym.size_refs(expr):
                if ref not in names:
                    raise FormatError(f"{where}: reads the size of %{ref}, which no earlier "
                                      "node or input defines")
            return False, lambda env: sym.evaluate(expr, env.symbols, env.size)
        if tag in ("slice", "tuple"):
            if not isinstance(v, list) or tag == "slice" and len(v) != 3:
                raise FormatError(f"{where}: bad {tag} {v!r}")
            const, part = _compile_arg(v, names, where)
            make = slice if tag == "slice" else (lambda *xs: tuple(xs))
            if const:
                return True, make(*part)
            return False, lambda env: make(*part(env))
        return True, decode_literal(tag, v, where)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return True, obj
    raise FormatError(f"{where}: bad argument {obj!r}")


class _Step:
    __slots__ = ("node", "fn", "args", "kwargs", "outs", "guards")

    def __init__(self, node, fn, args, kwargs):
        self.node, self.fn, self.args, self.kwargs = node, fn, args, kwargs
        self.outs = [o[0] if o is not None else None for o in node.outputs]
        self.guards: list = []


def compile_graph(graph: Graph):
    """Resolve every op and compile every argument once; FormatError/UnknownOpError if bad."""
    from ._ops import resolve

    names = {i.name for i in graph.inputs}
    symbols = set(graph.symbols)
    steps, produced_at = [], {n: -1 for n in names}
    for index, node in enumerate(graph.nodes):
        where = f"node %{node.name} ({node.op})"
        fn = resolve(node.op)
        args = _compile_arg(node.args, names, where)
        kwargs = {k: _compile_arg(v, names, where) for k, v in node.kwargs.items()}
        steps.append(_Step(node, fn, args, kwargs))
        for o in node.output_names():
            names.add(o)
            produced_at[o] = index
    pre_guards = []
    for g in graph.guards:
        refs = sym.size_refs(g.lhs) | sym.size_refs(g.rhs)
        missing = [r for r in refs if r not in produced_at]
        unknown = (sym.free_symbols(g.lhs) | sym.free_symbols(g.rhs)) - symbols
        if missing or unknown:
            raise FormatError(f"guard {g}: refers to {sorted(missing) or sorted(unknown)}, "
                              "which the graph does not define")
        at = max((produced_at[r] for r in refs), default=-1)
        (pre_guards if at < 0 else steps[at].guards).append(g)
    for o in _spec_tensors(graph.outputs):
        if o not in names:
            raise FormatError(f"graph output %{o} is not a value of the graph")
    return steps, pre_guards


def _check_guard(g, env: _Env) -> None:
    lhs = sym.evaluate(g.lhs, env.symbols, env.size)
    rhs = sym.evaluate(g.rhs, env.symbols, env.size)
    if sym.GUARD_FUNCS[g.op](lhs, rhs) != g.expected:
        where = f" (assumed at {g.source})" if g.source else ""
        values = [f"{sym.fmt(e)} = {v}" for e, v in ((g.lhs, lhs), (g.rhs, rhs))
                  if not isinstance(e, int)]
        raise GuardError(f"Guard failed: {g}{where}; here {' and '.join(values)}. The "
                         "program was captured for inputs where it held: capture it again "
                         "for these inputs")


def _decomp_by_op(table) -> dict:
    """``{graph op name: function}`` of a decomposition table keyed by ``ember.ops.aten``
    overloads (``aten.conv2d.default`` -> ``conv2d`` and ``Tensor.conv2d``) or op names."""
    out = {}
    for key, fn in dict(table).items():
        if isinstance(key, str):
            names = (key,)
        else:
            name = getattr(key, "_opname", None) or getattr(key, "__name__", None)
            if not isinstance(name, str):
                raise TypeError(f"run_decompositions: a decomposition table's key must be an "
                                f"operator overload (torch.ops.aten.conv2d.default) or an op "
                                f"name, got {key!r}")
            names = (name, f"Tensor.{name}")
        if not callable(fn):
            raise TypeError(f"run_decompositions: the decomposition of {key} is not callable")
        for name in names:
            out[name] = fn
    return out


class CustomDecompTable(dict):
    """``torch.export.decomp_utils.CustomDecompTable``: the decompositions
    ``run_decompositions`` applies, by operator overload. :func:`default_decompositions`
    gives an empty one (Ember's graphs hold its registry ops, with no lower IR to decompose
    into): add ``table[torch.ops.aten.X.default] = fn`` and pass it, or ``pop`` keys as in
    PyTorch (a missing key raises ``KeyError``)."""

    def materialize(self) -> dict:
        return dict(self)


def default_decompositions() -> CustomDecompTable:
    """``torch.export.default_decompositions``: the table ``run_decompositions`` uses by
    default (see :class:`CustomDecompTable`)."""
    return CustomDecompTable()


_NN_GRAPH_MODULES: dict = {}


def _module_of(program: ExportedProgram):
    """``program.module()``: a subclass of :class:`GraphModule` that is also an
    ``nn.Module`` holding the program's weights once ember-nn is imported (a program using
    ``nn`` has imported it), else the plain runner: running a saved program does not import
    ember-nn (a deployment's start-up stays light, ``test_export``'s fresh process)."""
    import sys

    nn = sys.modules.get("ember.nn")
    base = getattr(nn, "Module", None)
    if base is None:
        return GraphModule(program)
    cls = _NN_GRAPH_MODULES.get(base)
    if cls is None:
        cls = _NN_GRAPH_MODULES.setdefault(base, _nn_graph_module_class(base))
    return cls(program)


def _nn_graph_module_class(base):
    from ..jit._script import _register_weights, sync_weights

    def __init__(self, program):
        base.__init__(self)
        GraphModule.__init__(self, program)
        # the weights under their state-dict names (plain modules for dotted prefixes), read
        # back into the program at each call: whatever replaces them (to(), an assignment,
        # load_state_dict(assign=True)) is what runs
        self.__dict__["_ember_slots"] = _register_weights(self, program, base)

    def forward(self, *args, **kwargs):
        sync_weights(self._program, self._ember_slots)
        return GraphModule.forward(self, *args, **kwargs)

    namespace = {"__module__": GraphModule.__module__, "__qualname__": "GraphModule",
                 "__doc__": GraphModule.__doc__, "__init__": __init__, "forward": forward,
                 "train": GraphModule.train, "eval": GraphModule.eval,
                 "__repr__": GraphModule.__repr__}
    return type("GraphModule", (base, GraphModule), namespace)


class GraphModule:
    """Runs a captured graph node by node (what ``ExportedProgram.module()`` returns).

    It holds the program's parameters, buffers and constants, checks the inputs against the
    capture's guards, and has the ``Module`` methods a deployment script uses:
    ``state_dict``, ``load_state_dict``, ``parameters``, ``named_parameters``, ``buffers``,
    ``to``, ``eval``/``train`` (a graph is captured in one mode: switching raises)."""

    def __init__(self, program: ExportedProgram):
        self._program = program
        self.graph = program.graph
        self._steps, self._pre_guards = compile_graph(program.graph)
        self._inputs = program.graph.inputs
        self._signature = _signature(program.graph.in_spec)
        self.training = bool(program.training)

    # -- running --------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        env = _Env()
        self._bind(args, kwargs, env)
        for g in self._pre_guards:
            _check_guard(g, env)
        values = env.values
        cap = _capture.current()
        if cap is not None and cap.done:
            cap = None
        if cap is not None:  # inside another capture: its ops are recorded there
            from .._tensor import Tensor

            for t in values.values():
                if isinstance(t, Tensor) and cap.classify(t) == "unknown":
                    cap.consts[id(t)] = [t, t._version, None]  # weights: the caller's consts
                    cap.keep.append(t)
        decomps = self.__dict__.get("_ember_decomps")
        for step in self._steps:
            c, a = step.args
            args_ = a if c else a(env)
            kwargs_ = {k: (v if c else v(env)) for k, (c, v) in step.kwargs.items()}
            decomp = decomps.get(step.node.op) if decomps else None
            try:
                if decomp is not None:  # run_decompositions: the function's ops, recorded
                    out = decomp(*args_, **kwargs_)
                elif cap is not None and step.node.result == "scalar":
                    # inside another capture: its symbolic scalars record themselves
                    out = args_[0].item() if step.node.op == "Tensor.item" else \
                        step.fn(*args_, **kwargs_)
                else:
                    out = step.fn(*args_, **kwargs_) if cap is None else \
                        cap.call(step.node.op, step.fn, args_, kwargs_, args_, kwargs_)
            except Exception as exc:
                node = step.node
                if hasattr(exc, "add_note"):
                    exc.add_note(f"(in the exported graph, node %{node.name} = {node.op}(...)"
                                 + (f", captured at {node.source})" if node.source else ")"))
                raise
            self._store(step, out, args_, values)
            for g in step.guards:
                _check_guard(g, env)
        return _build_output(self.graph.outputs, env)

    def _store(self, step, out, args_, values) -> None:
        node = step.node
        if node.result in ("tensor", "none", "scalar") or node.op == "setitem":
            if step.outs:
                values[step.outs[0]] = out if node.op != "setitem" else args_[0]
            return
        try:
            items = node.leaves(out)
        except ValueError as exc:
            raise GuardError(f"node %{node.name} ({node.op}) {exc}"
                             + (f" (at {node.source})" if node.source else "")
                             + ": the trace specialized its inputs' sizes") from None
        for name, o in zip(step.outs, items):
            if name is not None:
                values[name] = o

    def _bind(self, args, kwargs, env: _Env) -> None:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            names = ", ".join(s["name"] for s in self.graph.in_spec) or "no arguments"
            raise TypeError(f"{exc} (the program was captured with inputs: {names})") from None
        metas = {i.name: i for i in self._inputs}
        for spec in self.graph.in_spec:
            _match(spec["spec"], bound.arguments[spec["name"]], spec["name"], env, metas,
                   self._program.kind == "export", self.graph.symbols)
        for i in self._inputs:
            if i.kind == "parameter" or i.kind == "buffer" and i.persistent:
                env.values[i.name] = self._program.state_dict[i.target]
            elif i.kind != "user_input":
                t = self._program.constants[i.target]
                mutated = i.name in self._mutated_constants
                env.values[i.name] = t.clone() if mutated else t

    @property
    def _mutated_constants(self) -> set:
        return set(self._program.mutations.get("constants", ()))

    # -- Module-like surface ---------------------------------------------------------------
    @property
    def code(self) -> str:
        return self.graph.python_code()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        out = destination if destination is not None else {}
        for k, v in self._program.state_dict.items():
            out[prefix + k] = v if keep_vars else v.detach()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False):
        own = self._program.state_dict
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError("Error(s) in loading state_dict for GraphModule:"
                               + (f"\n    Missing key(s) in state_dict: {missing}"
                                  if missing else "")
                               + (f"\n    Unexpected key(s) in state_dict: {unexpected}"
                                  if unexpected else ""))
        from .. import no_grad

        with no_grad():
            for k, v in state_dict.items():
                if k not in own:
                    continue
                if tuple(own[k].shape) != tuple(v.shape):
                    raise RuntimeError(f"size mismatch for {k}: copying a param with shape "
                                       f"{list(v.shape)}, the shape in current model is "
                                       f"{list(own[k].shape)}.")
                if assign:
                    own[k] = v
                else:
                    own[k].copy_(v)
        return missing, unexpected

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        targets = {i.target for i in self._inputs if i.kind == "parameter"}
        for k, v in self._program.state_dict.items():
            if k in targets:
                yield prefix + k, v

    def parameters(self, recurse: bool = True):
        for _, v in self.named_parameters():
            yield v

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        for i in self._inputs:
            if i.kind == "buffer":
                store = self._program.state_dict if i.persistent else self._program.constants
                yield prefix + i.target, store[i.target]

    def buffers(self, recurse: bool = True):
        for _, v in self.named_buffers():
            yield v

    def to(self, *args, **kwargs) -> GraphModule:
        """Move the parameters, buffers and constants (``Module.to``): a dtype converts the
        floating and complex ones only (integer buffers such as BatchNorm's
        ``num_batches_tracked`` stay). The graph's own device arguments
        (``ember.zeros(..., device=...)``) stay as captured."""
        from ..ops.api import parse_to

        device, dtype, non_blocking = parse_to(*args, **kwargs)[:3]
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
        p = self._program
        for store in (p.state_dict, p.constants):
            for k, v in list(store.items()):
                inexact = v.is_floating_point() or v.is_complex()
                moved = v.to(device, dtype if inexact else None, non_blocking=non_blocking)
                if moved is not v:
                    if getattr(v, "requires_grad", False) and v.is_leaf:
                        moved = moved.detach().requires_grad_(True)
                    store[k] = moved
        return self

    def cpu(self) -> GraphModule:
        return self.to("cpu")

    def train(self, mode: bool = True) -> GraphModule:
        if bool(mode) != self.training:
            what = "train()" if mode else "eval()"
            raise NotImplementedError(
                f"Calling {what} is not supported yet. (The program was exported with "
                f"training={self.training}: its graph is fixed to that mode; export the model "
                "again after model.train()/model.eval().)")
        return self

    def eval(self) -> GraphModule:
        return self.train(False)

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        yield prefix, self

    def modules(self):
        yield self

    def requires_grad_(self, requires_grad: bool = True) -> GraphModule:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def __repr__(self) -> str:
        return f"GraphModule(\n{self.graph}\n)"

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The graph's code as a module class (``torch.fx.GraphModule.print_readable``),
        printed unless ``print_output=False``; returned either way."""
        body = "\n".join("    " + line if line else line for line in self.code.splitlines())
        text = f"class GraphModule(ember.nn.Module):\n{body}\n"
        if print_output:
            print(text)
        return text


def _signature(in_spec: list) -> inspect.Signature:
    params = []
    for spec in in_spec:
        kind = getattr(inspect.Parameter, spec.get("kind", "POSITIONAL_OR_KEYWORD"), None)
        if not isinstance(kind, inspect._ParameterKind) or not isinstance(spec.get("name"), str):
            raise FormatError(f"graph: bad input spec {spec!r}")
        params.append(inspect.Parameter(spec["name"], kind))
    try:
        return inspect.Signature(params)
    except ValueError as exc:
        raise FormatError(f"graph: bad input spec ({exc})") from None


def _match(spec, value, path: str, env: _Env, metas: dict, check: bool, symbols: dict):
    """Bind ``value`` to the input spec, checking the structure and the tensors' guards."""
    from .._tensor import Tensor

    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "tensor":
            if not isinstance(value, Tensor):
                raise GuardError(f"Expected input {path} to be a Tensor, but got "
                                 f"{type(value).__name__}")
            if check:
                _check_tensor(value, metas[v], path, env, symbols)
            env.values[v] = value
            return
        if tag in ("tuple", "list"):
            if not isinstance(value, (tuple, list)) or len(value) != len(v):
                raise GuardError(f"Expected input {path} to be a {tag} of {len(v)} items, but "
                                 f"got {_describe(value)}")
            for i, (s, x) in enumerate(zip(v, value)):
                _match(s, x, f"{path}[{i}]", env, metas, check, symbols)
            return
        if tag == "dict":
            keys = [k for k, _ in v]
            if not isinstance(value, dict) or sorted(map(str, value)) != sorted(map(str, keys)):
                raise GuardError(f"Expected input {path} to be a dict with keys {keys}, but got "
                                 f"{_describe(value)}")
            for k, s in v:
                _match(s, value[k], f"{path}[{k!r}]", env, metas, check, symbols)
            return
    expected = _compile_arg(spec, set(), path)[1] if spec is not None else None
    if value != expected or type(value) is not type(expected) and not (
            isinstance(value, (int, float)) and isinstance(expected, (int, float))):
        raise GuardError(f"Expected input {path} to be equal to {expected!r}, but got "
                         f"{value!r}")


def _describe(value) -> str:
    if isinstance(value, (tuple, list, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    return type(value).__name__


def _check_tensor(t, spec, path: str, env: _Env, symbols: dict) -> None:
    meta = spec.meta
    dtype = _bare(t.dtype)
    if dtype != meta.dtype:
        raise GuardError(f"Expected input {path} to have dtype {meta.dtype}, but got {dtype}")
    shape = t._data.shape
    if len(shape) != len(meta.shape):
        raise GuardError(f"Expected input {path} to have {len(meta.shape)} dimensions "
                         f"({meta}), but got shape {list(shape)}")
    if str(t.device) != meta.device:
        raise GuardError(f"Expected input {path} on device {meta.device}, but got it on "
                         f"{t.device}")
    for d, (expr, n) in enumerate(zip(meta.shape, shape)):
        where = f"{path}.shape[{d}]"
        if isinstance(expr, int):
            if n != expr:
                raise GuardError(f"Expected input {where} to be equal to {expr}, but got {n}")
            continue
        if expr[0] != "sym":
            _check_derived(expr, n, where, env, symbols)
            continue
        name = expr[1]
        info = symbols[name]
        bound = env.symbols.get(name)
        if bound is not None:
            if n != bound:
                raise GuardError(f"Expected input {where} to be equal to {bound} (dim "
                                 f"{name!r}, as bound by an earlier input), but got {n}")
            continue
        lo, hi = info["min"], info["max"]
        if n < lo:
            raise GuardError(f"Expected input {where} to be >= {lo}, but got {n} (dim "
                             f"{name!r} in [{lo}, {_fmt_hi(hi)}])")
        if hi is not None and n > hi:
            raise GuardError(f"Expected input {where} to be <= {hi}, but got {n} (dim "
                             f"{name!r} in [{lo}, {_fmt_hi(hi)}])")
        env.symbols[name] = n


def _check_derived(expr, n: int, where: str, env: _Env, symbols: dict) -> None:
    """An input dim that is a derived Dim's expression (``dx + 1``): equal to it where its
    root is bound, else the root is bound by solving it (within the root's range)."""
    free = sym.free_symbols(expr)
    if len(free) != 1 or sym.size_refs(expr):
        return
    (name,) = free
    bound = env.symbols.get(name)
    if bound is not None:
        want = sym.evaluate(expr, env.symbols)
        if n != want:
            raise GuardError(f"Expected input {where} to be equal to {sym.fmt(expr)} = {want} "
                             f"({name} = {bound}, as bound by an earlier input), but got {n}")
        return
    root = sym.solve_linear(expr, name, n)
    info = symbols[name]
    lo, hi = info["min"], info["max"]
    if root is None or root < lo or hi is not None and root > hi:
        raise GuardError(f"Expected input {where} to be {sym.fmt(expr)} for {name} in "
                         f"[{lo}, {_fmt_hi(hi)}], but got {n}")
    env.symbols[name] = root


def _fmt_hi(hi) -> str:
    return "inf" if hi is None or hi >= sym._INT_MAX else str(hi)


class Record:
    """A captured model's dataclass output (``ModelOutput``-like) rebuilt without its class:
    fields by attribute (``out.logits``), by name (``out["logits"]``), or by position over
    the fields that are not None (``out[0]``, ``out.to_tuple()``); it iterates over the keys
    of those fields, as ``transformers``' ``ModelOutput`` (a dict) does."""

    def __init__(self, name: str, fields: dict):
        self.__dict__["_name"] = name
        self.__dict__["_fields"] = fields

    def __getattr__(self, key):
        fields = self.__dict__["_fields"]
        if key in fields:
            return fields[key]
        raise AttributeError(f"{self._name!r} output has no field {key!r}")

    def to_tuple(self) -> tuple:
        return tuple(v for v in self._fields.values() if v is not None)

    def keys(self) -> list:
        return [k for k, v in self._fields.items() if v is not None]

    def values(self) -> list:
        return list(self.to_tuple())

    def items(self) -> list:
        return list(zip(self.keys(), self.to_tuple()))

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(key)
            return self._fields[key]
        return self.to_tuple()[key]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, key) -> bool:
        return key in self.keys()

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"{self._name}({inner})"


_NAMEDTUPLES: dict = {}


def _namedtuple(name: str, fields: list):
    """A namedtuple class from names in a file (validated identifiers; no code)."""
    import collections

    key = (name, tuple(fields))
    cls = _NAMEDTUPLES.get(key)
    if cls is None:
        if not name.isidentifier() or not all(isinstance(f, str) and f.isidentifier()
                                               and not f.startswith("_") for f in fields):
            raise FormatError(f"graph output: bad namedtuple {name!r} {fields!r}")
        cls = _NAMEDTUPLES[key] = collections.namedtuple(name, fields)
    return cls


def _build_output(spec, env: _Env):
    if isinstance(spec, dict) and len(spec) == 1:
        (tag, v), = spec.items()
        if tag == "tensor":
            return env.values[v]
        if tag == "namedtuple":
            cls = _namedtuple(v["name"], v["fields"])
            return cls(*(_build_output(x, env) for x in v["items"]))
        if tag == "record":
            return Record(str(v["name"]), {k: _build_output(x, env) for k, x in v["fields"]})
        if tag == "symint":
            return sym.evaluate(sym.from_json(v), env.symbols, env.size)
        if tag == "scalar":
            return env.values[v]
        if tag == "tuple":
            return tuple(_build_output(x, env) for x in v)
        if tag == "list":
            return [_build_output(x, env) for x in v]
        if tag == "dict":
            return {k: _build_output(x, env) for k, x in v}
    return _compile_arg(spec, set(), "graph output")[1]

