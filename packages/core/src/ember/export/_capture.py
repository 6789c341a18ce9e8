"""The capture behind ``ember.export.export`` and ``ember.jit.trace``.

Real values flow (as in ``torch.jit.trace``): the model runs once on the example inputs, and a
per-thread :class:`ember.overrides.TorchFunctionMode` sees every call of an ember function or
Tensor method on this thread, factories included, at exactly the registry-op level (inside
an op the mode is off, so the calls an op makes are not seen). A call that involves a graph
value (an input, a parameter or buffer, or a value computed from them) becomes a node; one
that does not is run and its result kept as a constant (constant folding). Values are
:class:`TracedTensor` handles around the real tensors; their ``shape`` gives
:class:`~ember.export._symbolic.SymInt` for dynamic sizes, and turning one into a Python
value (``bool``, ``item``, ``tolist``, ...) is data-dependent control flow: an error in
``export`` (naming the line), a ``TracerWarning`` in ``jit.trace`` (the value is baked in).

With dynamic dimensions, ``export`` runs every op twice, on the example and on a "shadow"
where each dynamic size differs: sizes that differ are dynamic, and their expressions are
found by matching both runs; a shadow op that fails means the model specializes a dimension.
"""

from __future__ import annotations

import copy
import os
import sys
import threading
import warnings

from .. import overrides
from .._naming import bare as _bare
from .._tensor import Tensor, _shared_vc, _wrap_dim
from . import _ops
from . import _symbolic as sym
from ._graph import Guard, InputSpec, Node, TensorMeta

__all__ = ["ExportError", "DataDependentError", "UntracedTensorError",
           "ConstraintViolationError", "TracerWarning", "TracedTensor", "current",
           "is_tracing"]


class ExportError(RuntimeError):
    """The capture met something it cannot record faithfully."""


class DataDependentError(ExportError):
    """A Python value computed from a traced tensor decides control flow (export only)."""


class UntracedTensorError(ExportError):
    """A tensor reached a recorded op but was made by code the capture did not see."""


class ConstraintViolationError(ExportError):
    """The model specializes a dimension that ``dynamic_shapes`` declared dynamic."""


class TracerWarning(Warning):
    """``ember.jit.trace`` baked a Python value into the trace (``torch.jit.TracerWarning``)."""


_LOCAL = threading.local()

_HERE = os.path.dirname(os.path.abspath(__file__))
_EMBER = os.path.dirname(_HERE)
#: files whose frames are the capture's machinery (skipped when naming the user's line)
_MACHINERY = (_HERE + os.sep, os.path.join(_EMBER, "jit") + os.sep,
              os.path.join(_EMBER, "overrides.py"), os.path.join(_EMBER, "_tensor.py"),
              os.path.join(_EMBER, "_size.py"), os.path.join(_EMBER, "_library") + os.sep)


def current():
    """This thread's capture in progress, or None."""
    return getattr(_LOCAL, "capture", None)


def is_tracing() -> bool:
    """Whether this thread is inside ``ember.export.export`` or ``ember.jit.trace``."""
    return getattr(_LOCAL, "capture", None) is not None


def user_frame():
    """The innermost frame outside the capture machinery (the line that made the call)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_MACHINERY):
        f = f.f_back
    return f


def describe_frame(f, short: bool = False) -> str:
    if f is None:
        return "<unknown>"
    name = os.path.basename(f.f_code.co_filename) if short else f.f_code.co_filename
    return f"{name}:{f.f_lineno}" if short else f"{name}:{f.f_lineno} in {f.f_code.co_name}"


def _in_ember(f) -> bool:
    name = f.f_globals.get("__name__", "")
    return name == "ember" or name.startswith("ember.")


def where() -> str:
    """``file:line in func`` of the user's line; when that is library code (ember.nn...), the
    first line outside ember too."""
    f = user_frame()
    text = describe_frame(f)
    outer = f
    while outer is not None and _in_ember(outer):
        outer = outer.f_back
    if outer is not None and outer is not f:
        text += f" (called from {describe_frame(outer)})"
    return text


# -- the traced tensor -------------------------------------------------------------------------

_TORCH_WORDS = ("{} might cause the trace to be incorrect. We can't record the data flow of "
                "Python values, so this value will be treated as a constant in the future. "
                "This means that the trace might not generalize to other inputs!")


class TracedTensor(Tensor):
    """A graph value during a capture: the real tensor's array, plus the value's name.

    Ops never see it (the capture hands them the real tensor); user code does, and its
    metadata answers symbolically (``shape``) or refuses to become Python data."""

    __slots__ = ("_real", "_vname", "_capture", "_shadow")
    __torch_function__ = overrides.disabled_torch_function_impl

    # -- metadata ------------------------------------------------------------------------
    @property
    def shape(self):
        return self._capture.shape_of(self)

    def size(self, dim: int | None = None):
        shape = self._capture.shape_of(self)
        if dim is None:
            return shape
        return shape[_wrap_dim(dim, len(shape))]

    def numel(self):
        n = 1
        for s in self._capture.shape_of(self):
            n = n * s
        return n

    nelement = numel

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        first = self._capture.shape_of(self)[0]
        if isinstance(first, sym.SymInt):
            self._capture.specialize(first, "taken as len()")
        return self._data.shape[0]

    @property
    def data(self):
        return self.detach()

    @data.setter
    def data(self, value):
        raise ExportError(f"assigning .data of a traced tensor is not supported ({where()})")

    def __repr__(self) -> str:
        return repr(self._real)

    # -- data-dependent conversions ----------------------------------------------------
    def _python(self, what: str, compute):
        return self._capture.data_dependent(self, what, compute)

    def __bool__(self) -> bool:
        return self._python("Converting a tensor to a Python boolean",
                            lambda: bool(self._real))

    def __int__(self) -> int:
        return self._python("Converting a tensor to a Python integer",
                            lambda: int(self._real))

    def __float__(self) -> float:
        return self._python("Converting a tensor to a Python float",
                            lambda: float(self._real))

    def __index__(self) -> int:
        return self._python("Converting a tensor to a Python index",
                            lambda: self._real.__index__())

    def __complex__(self):
        return self._python("Converting a tensor to a Python complex",
                            lambda: complex(self._real))

    def item(self):
        if self._capture.symbolic_scalars():
            # torch.export's unbacked SymFloat/SymInt: an ``item`` node, its value symbolic
            return self._capture.record_item(self)
        return self._python("Converting a tensor to a Python number", self._real.item)

    def tolist(self):
        return self._python("Converting a tensor to a Python list", self._real.tolist)

    def numpy(self, *, force: bool = False):
        return self._python("Converting a tensor to a NumPy array",
                            lambda: self._real.numpy(force=force))

    def __array__(self, dtype=None, copy=None):
        return self._python("Converting a tensor to a NumPy array",
                            lambda: self._real.__array__(dtype, copy))

    def __dlpack__(self, **kwargs):
        return self._python("Exporting a tensor through DLPack",
                            lambda: self._real.__dlpack__(**kwargs))


# -- the mode ------------------------------------------------------------------------------------

class _CaptureMode(overrides.TorchFunctionMode):
    def __init__(self, capture):
        self.capture = capture

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        amp = sys.modules.get("ember.amp.autocast_mode")
        if amp is not None and amp._STATE.mode is not None:
            # autocast's casts as graph nodes: the program casts as the eager run does
            args, kwargs = amp.autocast_args(func, args, kwargs, self._recorded_cast)
        return self.capture.dispatch(func, args, kwargs)

    def _recorded_cast(self, t, dtype):
        return self.capture.dispatch(Tensor.to, (t, dtype), {})


#: ops whose non-tensor result reads tensor data (the others return metadata)
_DATA_READS = frozenset({"equal", "allclose", "Tensor.is_nonzero", "Tensor.__contains__",
                         "Tensor.tolist", "Tensor.item", "Tensor.numpy", "Tensor.__bool__"})
_REAL_TYPES = (int, float, bool, str, type(None), complex)
#: ops that return their input itself for reasons fixed at capture: no node when they do.
#: Dropout outside training, always; casts and moves to the input's own dtype/device in
#: ``export``, whose guards fix dtypes and devices (``contiguous``, ``expand``... may return
#: their input for sizes, which can change: they stay)
_IDENTITY_IN_EVAL = frozenset({
    "nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout", "dropout", "alpha_dropout", "feature_dropout",
    "feature_alpha_dropout",
})
_SAME_CAST = frozenset({
    "Tensor.to", "Tensor.type", "Tensor.type_as", "Tensor.float", "Tensor.double",
    "Tensor.half", "Tensor.long", "Tensor.int", "Tensor.short", "Tensor.char", "Tensor.byte",
    "Tensor.bool", "Tensor.cpu", "Tensor.cuda",
})


def _is_inplace(name: str) -> bool:
    return name == "setitem" or name.endswith("_") and not name.endswith("__")


class Capture:
    """One capture: builds the nodes, values, inputs, constants and guards of a graph."""

    def __init__(self, kind: str):
        self.kind = kind  # "export" or "jit"
        self.script = False  # jit.script's capture: data-dependent control flow raises
        self.nodes: list = []
        self.metas: dict = {}       # value name -> TensorMeta
        self.tainted: set = set()   # values computed from user inputs (jit: sizes are read)
        self.names: set = set()
        self.inputs: list = []      # InputSpec, in order of creation
        self.lifted: dict = {}      # id -> (tensor, input name): parameters and buffers
        self.data_aliases: dict = {}  # id(array) -> input name: their arrays
        self.attr_consts: dict = {}  # id -> (tensor, target): tensors held by the module
        self.consts: dict = {}      # id -> [tensor, version, lifted name or None]
        self.const_targets: dict = {}  # target -> snapshot tensor
        self.mutated_consts: set = set()
        self.mutations: dict = {"buffers": [], "user_inputs": []}
        self.vc_roots: dict = {}    # id(version counter) -> input name
        self.graph_mutated_vcs: set = set()
        self.keep: list = []
        self.guards: list = []
        self.symbols: dict = {}     # name -> {"min", "max", "hint", "shadow"}
        self.scalar_texts: dict = {}  # scalar value name -> its expression (for errors)
        self.unbacked = 0
        self.shadow_on = False
        self.shadow_values: dict = {}  # value name -> shadow tensor
        self.shadow_plain: dict = {}   # id -> shadow copy of a buffer/constant
        self.hint_shapes: dict = {}    # value name -> its shape in the example run
        self.data_now: dict = {}       # the node being recorded: {output: data dim, "symbol"}
        self.param_names: frozenset = frozenset()  # input names of the parameters
        self.done = False
        self.mode = _CaptureMode(self)

    # -- names ------------------------------------------------------------------------
    def fresh_name(self, base: str) -> str:
        # "Tensor.view" -> "view"; a custom op "mylib::foo.out" -> "foo"
        base = base.rpartition("::")[2].partition(".")[0] if "::" in base \
            else base.rpartition(".")[2]
        base = base.strip("_") or "v"
        if not base.isidentifier() or base[0].isdigit():
            base = "v_" + "".join(c if c.isalnum() else "_" for c in base)
        name, i = base, 1
        while name in self.names:
            name = f"{base}_{i}"
            i += 1
        self.names.add(name)
        return name

    # -- values -------------------------------------------------------------------------
    def meta_of(self, t: Tensor, shape=None) -> TensorMeta:
        return TensorMeta(_bare(t.dtype),
                          list(t._data.shape) if shape is None else shape, str(t.device))

    def wrap(self, real: Tensor, name: str, shadow=None) -> TracedTensor:
        t = object.__new__(TracedTensor)
        t._data = real._data
        t._device = real._device
        t.requires_grad = real.requires_grad
        t.grad_fn = real.grad_fn
        t._vc = _shared_vc(real)
        t._real = real
        t._vname = name
        t._capture = self
        t._shadow = shadow
        return t

    def add_input(self, spec: InputSpec, tensor: Tensor) -> None:
        self.inputs.append(spec)
        self.metas[spec.name] = spec.meta
        self.hint_shapes[spec.name] = tuple(tensor._data.shape)
        self.vc_roots.setdefault(id(_shared_vc(tensor)), spec.name)

    def shape_of(self, t: TracedTensor):
        from .._size import Size

        meta = self.metas[t._vname]
        dims = []
        for d, (expr, value) in enumerate(zip(meta.shape, t._data.shape)):
            if self.kind == "jit" and t._vname in self.tainted:
                expr = ("size", t._vname, d)
            elif not isinstance(expr, int) and sym.free_symbols(expr) & self.unbacked_names():
                expr = ("size", t._vname, d)
            dims.append(value if isinstance(expr, int) else sym.SymInt(value, expr, self))
        return Size(dims)

    def unbacked_names(self) -> set:
        return {n for n, s in self.symbols.items() if s.get("unbacked")}

    # -- data-dependent scalars (Tensor.item) ---------------------------------------------
    def symbolic_scalars(self) -> bool:
        """Whether ``Tensor.item`` gives a symbolic scalar: in ``export`` (not in
        ``jit.trace``, which bakes the value with a warning, nor ``jit.script``, nor a capture
        that handles data dependence its own way: ``ember.compile``'s graph break)."""
        return self.kind == "export" and not self.script and not self.done \
            and type(self).data_dependent is Capture.data_dependent

    def record_item(self, t: TracedTensor):
        """``t.item()``: a ``Tensor.item`` node (result ``scalar``) and its symbolic value."""
        value = t._real.item()  # eager's errors (a tensor of more than one element)
        if type(value) not in sym.SCALAR_CLASSES:  # a complex number
            return self.data_dependent(t, "Converting a complex tensor to a Python number",
                                       lambda: value)
        return self.scalar_node("Tensor.item", [{"tensor": self.value_name(t)}], value,
                                f"{t._vname}.item()")

    def scalar_op(self, op: str, args: tuple):
        """Arithmetic or a comparison on symbolic scalars: an ``operator.<op>`` node."""
        if self.done:
            raise ExportError(f"a data-dependent scalar of a finished capture was used "
                              f"({where()})")
        values = [a.value if isinstance(a, sym.SymScalar) else
                  int(a) if isinstance(a, sym.SymInt) else a for a in args]
        for a in args:
            if isinstance(a, sym.SymScalar) and a.capture is not self:
                raise ExportError(f"a scalar traced by another capture reached this one "
                                  f"({where()})")
        value = sym.SCALAR_OPS[op](*values)  # eager's errors (ZeroDivisionError)
        if type(value) not in sym.SCALAR_CLASSES:
            raise ExportError(f"{sym.scalar_text(op, list(args))} at {where()} gives a "
                              f"{type(value).__name__}, which a graph's scalars cannot hold")
        enc = [self.encode(a, "operator." + op) for a in args]
        return self.scalar_node("operator." + op, enc, value, sym.scalar_text(op, list(args)))

    def scalar_node(self, op: str, enc_args: list, value, text: str):
        name = self.fresh_name(op)
        meta = TensorMeta(sym.SCALAR_DTYPES[type(value)], [], "cpu")
        self.nodes.append(Node(name, op, enc_args, {}, [(name, meta)], result="scalar",
                               source=describe_frame(user_frame(), short=True)))
        self.scalar_texts[name] = text
        return sym.SCALAR_CLASSES[type(value)](value, name, self)

    def scalar_to_python(self, s: sym.SymScalar, what: str):
        """``bool()``/``int()``/``float()`` of a symbolic scalar (a Python ``if`` on it):
        data-dependent control flow, PyTorch's GuardOnDataDependentSymNode."""
        text = self.scalar_texts.get(s.name, s.name)
        head = ("Could not guard on data-dependent expression" if what == "bool" else
                f"Could not extract specialized {'integer' if what == 'int' else what} from "
                "data-dependent expression")
        article = "an" if what == "int" else "a"
        raise DataDependentError(
            f"{head} {text} (value %{s.name}, computed from a tensor's data with .item()) at "
            f"{where()}: data-dependent control flow: {article} {what}() of it, or a Python "
            "branch on it, lets the tensor's data decide Python control flow, which export "
            "cannot capture. Keep it symbolic: pass "
            "it to tensor ops (x * n), or combine it with + - * / // % ** and comparisons; "
            "or compute with tensor ops (ember.where, masks); or use ember.jit.trace, which "
            "bakes the value in with a warning")

    def scalar_sized(self, name, fn, args, kwargs, out) -> None:
        """Refuse an op whose result's shape depends on a symbolic scalar argument
        (``ember.zeros(n)``, ``x[:n]``): the op runs again with other values of the scalars,
        and a result shape that changes is a data-dependent size, which the graph cannot
        express (PyTorch needs ``torch._check`` there too)."""
        scalars = [a for a in _flat((args, kwargs)) if isinstance(a, sym.SymScalar)]
        if not scalars or not _has_tensor(out):
            return
        from .. import _random

        saved = [(s, s.value) for s in scalars]
        for s in scalars:
            s.value = _perturbed(s.value)
        try:
            pargs, pkwargs = self.real(args), self.real(kwargs)
        finally:
            for s, v in saved:
                s.value = v
        state = _random.get_rng_state()
        try:
            other = fn(*pargs, **pkwargs)
        except Exception:
            return  # the op needs these values: it runs with the call's own
        finally:
            _random.set_rng_state(state)
        shapes = [tuple(t._data.shape) for t in _tensors(out)]
        if shapes != [tuple(t._data.shape) for t in _tensors(other)]:
            names = ", ".join(f"%{s.name}" for s in scalars)
            raise DataDependentError(
                f"{name} at {where()}: the shape of its result depends on {names}, a value "
                "computed from a tensor's data with .item(); ember.export does not support "
                "sizes made from .item() (torch.export holds them as unbacked sizes, with "
                "torch._check to bound them; Ember's graph cannot). Keep the size static (a "
                "mask, ember.where), or use ember.jit.trace, which bakes the value in with a "
                "warning")

    # -- dispatch -------------------------------------------------------------------------
    def dispatch(self, func, args, kwargs):
        entry = _ops.lookup(func)
        raw = _ops._raw(func)
        if entry is None:
            return self.run_through(func, raw, args, kwargs)
        if entry.inplace_flag:
            return self.call_inplace_flag(entry, raw, args, kwargs)
        rec_args = args
        if entry.varargs:
            rec_args = _pack_varargs(args)
        elif entry.reflect:
            rec_args = (args[1], args[0], *args[2:])
        return self.call(entry.name, raw, args, kwargs, rec_args, kwargs)

    def call_inplace_flag(self, entry, raw, args, kwargs):
        """F's ``relu(input, inplace=False)``: the registry op, or its in-place variant."""
        import inspect

        from ..ops.registry import OPS

        bound = inspect.signature(raw).bind(*args, **kwargs)
        call_args = dict(bound.arguments)
        inplace = bool(call_args.pop("inplace", False))
        rest = list(call_args.values())
        info = OPS[entry.name]
        if not inplace:
            return self.call(entry.name, info.fn, rest, {}, rest, {})
        if info.inplace is not None:
            return self.call(entry.name + "_", info.inplace, rest, {}, rest, {})
        # no in-place kernel: the op on a recorded clone, copied back. The clone keeps what
        # the op saves for backward (its input) apart from the write (a version error at
        # backward otherwise: nn.Hardswish(inplace=True) in a compiled training step)
        snap = self.call("clone", OPS["clone"].fn, rest[:1], {}, rest[:1], {})
        out = self.call(entry.name, info.fn, [snap] + rest[1:], {}, [snap] + rest[1:], {})
        copy_ = _ops._raw(vars(Tensor)["copy_"])
        return self.call("Tensor.copy_", copy_, (rest[0], out), {}, (rest[0], out), {})

    def run_through(self, func, raw, args, kwargs):
        """A callable that is not an op: run its body with the capture on (its op calls are
        recorded), or fold it when it has no graph value among its arguments."""
        unknown: list = []
        involved = self.scan((args, kwargs), unknown)
        if not involved and not unknown:
            out = raw(*args, **kwargs)
            self.fold(out)
            return out
        with self.mode:
            out = overrides.plain(raw)(*args, **kwargs)
        for t in _tensors(out):
            if not isinstance(t, TracedTensor) and self.classify(t) == "unknown":
                self.untraced(t, f"the result of {_qualname(func)}", run_through=True)
        return out

    def call(self, name, fn, args, kwargs, rec_args, rec_kwargs):
        """Run one op call; record it when it involves a graph value."""
        fn = overrides.plain(fn)  # recorded here: its body runs (a replay calls from a mode)
        unknown: list = []
        involved = self.scan(rec_args, unknown, "argument")
        involved = self.scan(rec_kwargs, unknown, "argument") or involved
        for t, path in unknown:
            self.untraced(t, f"{path} of {name}")
        if not involved:
            out = fn(*self.real(args), **self.real(kwargs))
            self.fold(out)
            return out
        source_frame = user_frame()
        enc_args = [self.encode(a, name) for a in rec_args]
        enc_kwargs = {k: self.encode(v, name) for k, v in rec_kwargs.items()}
        if name in ("getitem", "setitem") and len(enc_args) > 1 and type(rec_args[1]) is tuple:
            enc_args[1] = {"tuple": enc_args[1]}
        real_args, real_kwargs = self.real(args), self.real(kwargs)
        versions = [(t, t._version) for t in _tensors((real_args, real_kwargs))]
        out = fn(*real_args, **real_kwargs)
        written = [t for t, v in versions if t._version != v]
        if not written:
            self.scalar_sized(name, fn, args, kwargs, out)
        shadow = self.shadow_call(name, fn, args, kwargs, source_frame) \
            if self.shadow_on else None
        if not written and isinstance(out, Tensor) and (
                name in _IDENTITY_IN_EVAL or self.kind == "export" and name in _SAME_CAST):
            for a in _flat(args):  # dropout in eval, to() the same dtype: no node at all
                if isinstance(a, TracedTensor) and a._real is out:
                    return a
        if not _has_tensor(out):
            if out is None and _is_inplace(name) and "::" not in name:
                out = self.real(args)[0]
                shadow = None if shadow is None else _first_tensor(self.shadow_args(args))
            elif out is None and written:  # a custom op (ember.library) that writes its args
                node = Node(self.fresh_name(name), name, enc_args, enc_kwargs, [],
                            result="none", source=describe_frame(source_frame, short=True))
                node.mutates = self.note_mutations(written, args)
                self.nodes.append(node)
                return None
            else:
                return self.python_result(name, out)
        return self.record(name, enc_args, enc_kwargs, args, out, shadow, source_frame,
                           written, kwargs)

    # -- recording ----------------------------------------------------------------------
    def record(self, name, enc_args, enc_kwargs, args, out, shadow, frame, written=(),
               kwargs=None):
        node = Node(self.fresh_name(name), name, enc_args, enc_kwargs, [],
                    source=describe_frame(frame, short=True))
        node.mutates = self.note_mutations(written, args)
        taint = self.is_tainted(args)
        traced_args = [a for a in _flat(args) if isinstance(a, TracedTensor)]
        data = self.data_dims(name, args, kwargs or {}, out)
        if data:
            shadow = self.unbacked_outputs(node, out, shadow, data)
        self.data_now = data  # read by output() (a subclass's override keeps its signature)
        if isinstance(out, Tensor):
            node.result = "tensor"
            wrapped = self.output(node, out, shadow, 0, traced_args, args, taint, single=True)
        else:
            wrapped = self.record_sequence(node, out, shadow, frame, traced_args, args, taint)
        self.data_now = {}
        self.nodes.append(node)
        return wrapped

    def record_sequence(self, node, out, shadow, frame, traced_args, args, taint):
        """The outputs of a call that returned a tuple or list: one per item (result
        ``tuple``/``list``), or, when tuples/lists nest inside (``histogramdd``'s ``(hist,
        (edges, ...))``), one per leaf with the nesting kept as ``structure`` (``nested``).
        Returns the result with graph values in place of its tensors."""
        nested = any(isinstance(o, (list, tuple)) for o in out)
        node.result = "nested" if nested else "list" if isinstance(out, list) else "tuple"
        leaves = list(_leaf_paths(out))
        shadows = [None] * len(leaves)
        if shadow is not None:
            if _skeleton(shadow) != _skeleton(out):
                what = (f"{len(out)} tensors at the example sizes and {len(shadow)} at "
                        "others: the number of outputs") if not nested else \
                    "a result whose nesting differs between the example sizes and others: it"
                raise ConstraintViolationError(
                    f"{node.op} at {describe_frame(frame)} returns {what} depends on a "
                    "dynamic dimension")
            shadows = [so for _, so in _leaf_paths(shadow)]
        items = []
        for (path, o), so in zip(leaves, shadows):
            i = path if nested else path[0]
            items.append(self.output(node, o, so, i, traced_args, args, taint)
                         if isinstance(o, Tensor) else _note_none(node, o))
        if nested:
            names = iter(None if o is None else o[0] for o in node.outputs)
            node.structure = _structure_spec(out, names)
        return _rebuild(out, iter(items))

    def output(self, node, real, shadow, i, traced_args, args, taint, single=False):
        """The graph value of output ``i`` of ``node`` (an item index, or the path of a
        leaf of a nested result: ``(1, 0)`` is ``%<node>_1_0``)."""
        if single:
            vname = node.name
        elif isinstance(i, tuple):
            vname = f"{node.name}_{'_'.join(map(str, i))}"
            for k in range(1, len(i)):  # the inner containers' names, kept from later nodes
                self.names.add(f"{node.name}_{'_'.join(map(str, i[:k]))}")
        else:
            vname = f"{node.name}_{i}"
        if not single:
            self.names.add(vname)
        data = self.data_now
        data_dim = data.get(i) if data else None
        shape = self.infer_shape(node, real, shadow, traced_args, args, i, data_dim)
        if data_dim is not None:
            shape[data_dim] = data["symbol"]
        meta = self.meta_of(real, shape)
        node.outputs.append((vname, meta))
        self.metas[vname] = meta
        self.hint_shapes[vname] = tuple(real._data.shape)
        if taint:
            self.tainted.add(vname)
        if shadow is not None:
            self.shadow_values[vname] = shadow
        for a in traced_args:  # an op that returns its input (in place, or as is)
            if a._real is real:
                self.sync(a)
                a._vname = vname
                a._shadow = shadow
                return a
        for a in _flat(args):  # a parameter or constant returned as is: keep its identity
            if a is real and not isinstance(a, TracedTensor):
                return a
        return self.wrap(real, vname, shadow)

    # -- data-dependent sizes ---------------------------------------------------------------
    def data_dims(self, name, args, kwargs, out) -> dict:
        """``{output index: dim}`` of the outputs whose size along ``dim`` is the data's
        (one unbacked symbol for them all: ``unique``'s values and counts share it, as do
        ``nonzero(as_tuple=True)``'s tensors); empty for other ops."""
        base = name.removeprefix("Tensor.")
        outs = [out] if isinstance(out, Tensor) else list(out) \
            if isinstance(out, (list, tuple)) else []
        tensors = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        if not tensors:
            return {}
        if base in ("nonzero", "argwhere", "masked_select"):
            dims = {i: 0 for i in tensors if outs[i]._data.ndim}
        elif base in ("unique", "unique_consecutive"):
            flags = _bind_unique(base, args, kwargs)
            if flags is None:
                dims = {i: 0 for i in tensors if outs[i]._data.ndim}
            else:
                inverse, counts, dim = flags
                nd = outs[0]._data.ndim
                dims = {0: 0 if dim is None or not nd else dim % nd}
                if counts:
                    dims[len(outs) - 1] = 0
        elif base == "getitem" and _bool_index(args) and isinstance(out, Tensor) \
                and out._data.ndim:
            dims = {0: _mask_dim(self.real(args), out)}
        else:
            return {}
        return dims

    def unbacked_outputs(self, node, out, shadow, data: dict):
        """Give the data-dependent outputs of ``node`` one unbacked symbol; in ``export``,
        also a shadow whose size along the data dim differs from the example's, so that the
        shadow run carries the symbol through the ops that follow (``y = x[x > 0] * 2`` is
        ``[u0]``, not the example's count). Returns the node's shadow."""
        outs = [out] if isinstance(out, Tensor) else list(out)
        first = min(data)
        hint = outs[first]._data.shape[data[first]]
        symbol = self.new_unbacked()
        data["symbol"] = symbol
        if self.kind != "export":
            return shadow
        info = self.symbols[symbol[1]]
        info["hint"] = hint
        shadows = [shadow] if isinstance(out, Tensor) else list(shadow) \
            if shadow is not None else [None] * len(outs)
        if len(shadows) != len(outs):
            return shadow  # record() reports the mismatch
        base = []
        for o, so in zip(outs, shadows):
            base.append(so if so is not None else
                        o.detach().clone() if isinstance(o, Tensor) else o)
        k = base[first]._data.shape[data[first]]
        size = max(hint, k) + 1
        while any(not s.get("unbacked") and s.get("hint") == hint and s.get("shadow") == size
                  for s in self.symbols.values()):
            size += 1
        info["shadow"] = size
        for i, d in data.items():
            if i != "symbol" and isinstance(base[i], Tensor):
                base[i] = _resize(base[i], d, size)
        self.shadow_on = True
        return base[0] if isinstance(out, Tensor) else base

    def sync(self, t: TracedTensor) -> None:
        real = t._real
        t._data = real._data
        t.requires_grad = real.requires_grad
        t.grad_fn = real.grad_fn

    def note_mutations(self, written: list, args) -> list:
        """The names of the values an op wrote (its arguments whose version moved), noting
        which inputs the graph mutates."""
        names = []
        by_real = {id(a._real): a for a in _flat(args) if isinstance(a, TracedTensor)}
        for real in written:
            vc = _shared_vc(real)
            self.graph_mutated_vcs.add(id(vc))
            traced = by_real.get(id(real))
            if traced is not None:
                names.append(traced._vname)
            elif id(real) in self.lifted:
                names.append(self.lifted[id(real)][1])
            elif id(real) in self.consts and self.consts[id(real)][2] is not None:
                entry = self.consts[id(real)]
                entry[1] = real._version
                names.append(entry[2])
            root = self.vc_roots.get(id(vc))
            spec = next((s for s in self.inputs if s.name == root), None)
            if spec is None:
                continue
            if spec.kind == "constant":
                self.mutated_consts.add(spec.name)
            elif spec.kind in ("buffer", "parameter"):
                if spec.target not in self.mutations["buffers"]:
                    self.mutations["buffers"].append(spec.target)
            elif spec.name not in self.mutations["user_inputs"]:
                self.mutations["user_inputs"].append(spec.name)
        return names

    def python_result(self, name, out):
        """A recorded op returned a Python value: metadata passes, data is data-dependent."""
        if name in _DATA_READS:
            return self.data_dependent(None, f"Converting a tensor to a Python value ({name})",
                                       lambda: out)
        return out

    def is_tainted(self, args) -> bool:
        for a in _flat(args):
            if isinstance(a, TracedTensor) and a._vname in self.tainted:
                return True
            if isinstance(a, sym.SymInt) and not isinstance(a.expr, int):
                return True
        return False

    # -- shapes ----------------------------------------------------------------------------
    def infer_shape(self, node, real, shadow, traced_args, args, i, data_dim=None) -> list:
        shape = list(real._data.shape)
        if shadow is None:
            return shape
        other = list(shadow._data.shape)
        if len(other) != len(shape):
            raise ConstraintViolationError(
                f"{node.op} at {node.source} gives a {len(shape)}-d result at the example "
                f"sizes and a {len(other)}-d one at others: its rank depends on a dynamic size")
        cands = None
        for d, (v1, v2) in enumerate(zip(shape, other)):
            if v1 == v2 or d == data_dim:
                continue
            if cands is None:
                cands = self.candidates(traced_args, args)
            shape[d] = self.match(v1, v2, cands)
        return shape

    def new_unbacked(self):
        name = f"u{self.unbacked}"
        self.unbacked += 1
        self.symbols[name] = {"min": 0, "max": None, "unbacked": True}
        return ("sym", name)

    def candidates(self, traced_args, args) -> tuple:
        atoms, ints = [], set()
        for a in traced_args:
            for expr in self.metas[a._vname].shape:
                if isinstance(expr, int):
                    ints.add(expr)
                elif expr not in atoms:
                    atoms.append(expr)
        for a in _flat(args):
            if isinstance(a, sym.SymInt) and not isinstance(a.expr, int):
                expr = self.canonical(a.expr)
                if expr not in atoms:
                    atoms.append(expr)
            elif type(a) is int:
                ints.add(a)
        # the dims the inputs' sizes are made of count as the op's own (batch behind batch+batch)
        for s in sorted(set().union(*(sym.free_symbols(e) for e in atoms)) if atoms else ()):
            if ("sym", s) not in atoms:
                atoms.append(("sym", s))
        others = [("sym", s) for s, info in self.symbols.items()
                  if not info.get("unbacked") and ("sym", s) not in atoms]
        ints.discard(0)
        ints.discard(1)
        return atoms, sorted(i for i in ints if abs(i) < 1 << 20), others

    def match(self, v1: int, v2: int, cands):
        """The size expression that is ``v1`` at the example sizes and ``v2`` at the shadow
        ones: over the op's own inputs' sizes first (a stride-2 conv's ``(h+1)//2`` before
        another input's ``n`` that happens to take the same two values), then over every
        dynamic dim; a new unbacked size when none fits."""
        atoms, ints, others = cands

        def fits(e):
            try:
                return self.eval_hint(e) == v1 and self.eval_shadow(e) == v2
            except (KeyError, ZeroDivisionError):
                return False

        for group in (atoms, atoms + others):
            found = self._match_over(group, ints, fits)
            if found is not None:
                return found
        return self.new_unbacked()

    @staticmethod
    def _match_over(atoms, ints, fits):
        for e in atoms:
            if fits(e):
                return e
        tries = []
        for e in atoms:
            for k in ints:
                tries += [sym.binary("mul", e, k), sym.binary("floordiv", e, k)]
            for k in (2, 3, 4, *ints):  # ceil(e / k): chunk, x[::2], a stride-2 conv;
                if k > 1:                 # e // k + 1: rfftfreq, an inclusive range
                    tries += [sym.binary("floordiv", sym.binary("add", e, k - 1), k),
                              sym.binary("add", sym.binary("floordiv", e, k), 1)]
            for k in (1, 2, 3, 4) + tuple(ints):
                tries += [sym.binary("add", e, k), sym.binary("sub", e, k)]
        for a in atoms:
            for b in atoms:
                tries += [sym.binary("mul", a, b), sym.binary("add", a, b)]
        for e in tries:
            if fits(e):
                return e
        return None

    def eval_hint(self, expr) -> int:
        return sym.evaluate(expr, {k: v["hint"] for k, v in self.symbols.items()
                                   if "hint" in v}, self.size_hint)

    def eval_shadow(self, expr) -> int:
        return sym.evaluate(expr, {k: v["shadow"] for k, v in self.symbols.items()
                                   if "shadow" in v}, self.size_shadow)

    def size_hint(self, vname, d):
        return self.hint_shapes[vname][d]

    def size_shadow(self, vname, d):
        shadow = self.shadow_values.get(vname)
        if shadow is None:  # made before a data-dependent size turned the shadow run on
            return self.hint_shapes[vname][d]
        return shadow._data.shape[d]

    def canonical(self, expr):
        """``expr`` with size references to unbacked dims as their symbols (``u0``), the
        names that metadata uses (a graph argument keeps the reference: a runner reads it)."""
        if isinstance(expr, int) or expr[0] == "sym":
            return expr
        if expr[0] == "size":
            meta = self.metas.get(expr[1])
            if meta is not None and expr[2] < len(meta.shape) \
                    and not isinstance(meta.shape[expr[2]], int):
                return meta.shape[expr[2]]
            return expr
        return sym.binary(expr[0], self.canonical(expr[1]), self.canonical(expr[2]))

    # -- guards and specialization ---------------------------------------------------------
    def guard(self, lhs, op: str, rhs, result: bool) -> None:
        if self.done:
            return
        op = sym.GUARD_OPS[op]
        if not result:  # keep the condition that held: ``a != b`` was False is ``a == b``
            op, result = sym.NEGATED[op], True
        free = sym.free_symbols(lhs) | sym.free_symbols(rhs)
        refs = sym.size_refs(lhs) | sym.size_refs(rhs)
        if not free and not refs:
            return
        if lhs == rhs:
            return
        frame = user_frame()
        user = free - self.unbacked_names()
        if self.kind == "export" and user and not refs:
            self.check_user_guard(lhs, op, rhs, result, frame)
            return
        self.guards.append(Guard(lhs, op, rhs, result, describe_frame(frame, short=True)))

    def check_user_guard(self, lhs, op, rhs, result, frame) -> None:
        """An export guard on declared dims: fine if the range implies it, else an error."""
        if isinstance(rhs, int) and isinstance(lhs, tuple) and lhs[0] == "sym":
            name, bound = lhs[1], rhs
        elif isinstance(lhs, int) and isinstance(rhs, tuple) and rhs[0] == "sym":
            flip = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}
            name, bound, op = rhs[1], lhs, flip[op]
            lhs, rhs = rhs, lhs
        else:
            self.guards.append(Guard(lhs, op, rhs, result, describe_frame(frame, short=True)))
            return
        info = self.symbols[name]
        held = op if result else sym.NEGATED[op]
        if sym.holds_on_range(lhs, held, bound, info["min"], info["max"]):
            return
        text = f"{name} {sym.GUARD_TEXT[held]} {bound}"
        if held == "eq":
            raise ConstraintViolationError(
                f"Constraints violated ({name})! The code at {describe_frame(frame)} "
                f"specializes {name} to {bound} (`{text}` decided a branch), but "
                f"dynamic_shapes declares it dynamic in [{info['min']}, {_hi(info)}]"
                + suggested_fixes({name: bound}))
        lo, hi = _narrowed(held, bound, info)
        fix = {} if lo is None else {name: f"Dim({name!r}" + (
            f", min={lo}" if lo != info["min"] else "") + (
            f", max={hi}" if hi is not None else "") + ")"}
        raise ConstraintViolationError(
            f"Constraints violated ({name})! The code at {describe_frame(frame)} assumes "
            f"`{text}` (a Python branch was taken on it), which does not hold over the "
            f"declared range [{info['min']}, {_hi(info)}]: narrow the range of Dim {name!r} "
            "or make the code not depend on it" + suggested_fixes(fix))

    def specialize(self, s: sym.SymInt, why: str) -> None:
        if self.done:
            return
        frame = user_frame()
        free = sym.free_symbols(s.expr) - self.unbacked_names()
        if self.kind == "export" and free:
            names = ", ".join(sorted(free))
            raise ConstraintViolationError(
                f"Constraints violated ({names})! A size computed from dynamic dim(s) {names} "
                f"(value {int(s)}) is {why} at {describe_frame(frame)}, which specializes it; "
                "keep sizes in ints and SymInt arithmetic (+ - * // %), or make the dim static")
        self.guards.append(Guard(s.expr, "eq", int(s), True, describe_frame(frame, short=True)))

    # -- data dependence and untraced tensors -------------------------------------------
    def data_dependent(self, t, what: str, compute):
        text = where()
        value = f" (value %{t._vname})" if t is not None else ""
        if self.kind == "export":
            raise DataDependentError(
                f"data-dependent control flow at {text}: {what}{value} lets the tensor's data "
                "decide Python control flow, which export cannot capture. Compute it with "
                "tensor ops (ember.where, masks), or use ember.jit.trace, which bakes the "
                "value in with a warning")
        if self.script:
            raise DataDependentError(
                f"data-dependent control flow at {text}: {what}{value} lets the tensor's data "
                "decide Python control flow, which the graph of a scripted module cannot "
                "hold. ember.jit.script keeps an `if` statement or `a if c else b` whose "
                "condition is a one-element tensor (both branches are captured and selected "
                "with where), but not a loop on a tensor, `.item()`, `bool()` or `int()` "
                "elsewhere: compute it with tensor ops (ember.where, masks)")
        f = user_frame()
        warnings.warn_explicit(_TORCH_WORDS.format(what), TracerWarning,
                               f.f_code.co_filename if f else "<unknown>",
                               f.f_lineno if f else 0)
        return compute()

    def untraced(self, t, what: str, run_through: bool = False) -> None:
        text = where()
        why = ("it is not an op of ember's registry and computes its result with code the "
               "capture cannot see" if run_through else
               "it is not an input, a parameter or buffer of the module, nor a constant made "
               "during the capture: it was computed by code the capture cannot see (a kernel "
               "function, an op module's own ember.ops.*, called directly instead of "
               "through its public function or a Tensor method: call it as ember.abs(x), "
               "F.relu(x), x.abs(), in the function you export), or it is a global tensor "
               "(make it a buffer with "
               "register_buffer; export the module itself, not a function that calls it, "
               "to lift its parameters)")
        msg = f"{what} at {text} is a tensor the capture did not see being made: {why}"
        if self.kind == "export":
            raise UntracedTensorError(msg)
        f = user_frame()
        warnings.warn_explicit(msg + "; the trace treats it as a constant", TracerWarning,
                               f.f_code.co_filename if f else "<unknown>",
                               f.f_lineno if f else 0)
        self.consts[id(t)] = [t, t._version, None]
        self.keep.append(t)

    # -- arguments ------------------------------------------------------------------------
    def classify(self, t: Tensor) -> str:
        """``graph`` (a value of the graph), ``const`` (a constant) or ``unknown``."""
        if isinstance(t, TracedTensor):
            if t._capture is not self:
                raise ExportError(f"a tensor traced by another capture reached this one "
                                  f"({where()})")
            return "graph"
        key = id(t)
        if key in self.lifted:
            return "graph"
        entry = self.consts.get(key)
        if entry is not None and entry[0] is t:
            if id(_shared_vc(t)) in self.graph_mutated_vcs:
                if entry[2] is None or entry[1] != t._version:
                    raise ExportError(
                        f"a constant tensor was modified in place by the captured "
                        f"computation through a view, which the graph cannot express "
                        f"({where()}); clone it before writing into it")
                return "graph"
            return "const"
        if key in self.attr_consts:
            return "const"
        if id(t._data) in self.data_aliases:  # ``self.weight.data``: the weight, detached
            return "graph"
        return "unknown"

    def scan(self, obj, unknown: list, path: str = "argument") -> bool:
        """Whether ``obj`` holds a graph value or symbolic size; unknown tensors collected."""
        if isinstance(obj, Tensor):
            kind = self.classify(obj)
            if kind == "unknown":
                unknown.append((obj, path))
            return kind == "graph"
        if isinstance(obj, sym.SymInt):
            return not isinstance(obj.expr, int)
        if isinstance(obj, sym.SymScalar):
            if obj.capture is not self:
                raise ExportError(f"a scalar traced by another capture reached this one "
                                  f"({where()})")
            return True
        if type(obj) in _REAL_TYPES:
            return False
        if isinstance(obj, (list, tuple)):
            found = False
            for i, x in enumerate(obj):
                sub = f"{path} {i}" if path == "argument" else f"{path}[{i}]"
                found = self.scan(x, unknown, sub) or found
            return found
        if isinstance(obj, dict):
            found = False
            for k, x in obj.items():
                sub = f"argument {k!r}" if path == "argument" else f"{path}[{k!r}]"
                found = self.scan(x, unknown, sub) or found
            return found
        if isinstance(obj, slice):
            return self.scan([obj.start, obj.stop, obj.step], unknown, path)
        return False

    def real(self, obj):
        """``obj`` with traced tensors as their real tensors and SymInts as ints."""
        if isinstance(obj, TracedTensor):
            return obj._real
        if isinstance(obj, sym.SymInt):
            return int(obj)
        if isinstance(obj, sym.SymScalar):
            return obj.value
        if type(obj) in _REAL_TYPES or isinstance(obj, Tensor):
            return obj
        if isinstance(obj, (list, tuple)):
            items = [self.real(x) for x in obj]
            if all(a is b for a, b in zip(items, obj)):
                return obj
            if hasattr(obj, "_fields"):
                return type(obj)(*items)
            return type(obj)(items) if type(obj) in (list, tuple) else tuple(items)
        if isinstance(obj, dict):
            items = {k: self.real(v) for k, v in obj.items()}
            if all(items[k] is v for k, v in obj.items()):
                return obj  # nothing traced inside: the object itself (a dict subclass kept)
            if type(obj) is dict:
                return items
            new = copy.copy(obj)  # OrderedDict, defaultdict, a library's dict subclass
            new.update(items)
            return new
        if isinstance(obj, slice):
            return slice(self.real(obj.start), self.real(obj.stop), self.real(obj.step))
        return obj

    def encode(self, obj, op: str):
        """An argument in the graph's JSON form (lifting constants it refers to)."""
        from .._device import device as device_cls
        from .._dtype import dtype as dtype_cls
        from .._layout import layout as layout_cls
        from .._memory_format import memory_format as mf_cls

        if isinstance(obj, Tensor):
            return {"tensor": self.value_name(obj)}
        if isinstance(obj, sym.SymScalar):
            return {"scalar": obj.name}
        if isinstance(obj, sym.SymInt):
            return obj.expr if isinstance(obj.expr, int) else {"symint": sym.to_json(obj.expr)}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if obj != obj:
                return {"float": "nan"}
            if obj in (float("inf"), float("-inf")):
                return {"float": "inf" if obj > 0 else "-inf"}
            return float(obj)
        if isinstance(obj, (list, tuple)):
            return [self.encode(x, op) for x in obj]
        if isinstance(obj, slice):
            return {"slice": [self.encode(x, op) for x in (obj.start, obj.stop, obj.step)]}
        if obj is Ellipsis:
            return {"ellipsis": True}
        if isinstance(obj, dtype_cls):
            return {"dtype": _bare(obj)}
        if isinstance(obj, device_cls):
            return {"device": str(obj)}
        if isinstance(obj, mf_cls):
            return {"memory_format": _bare(obj)}
        if isinstance(obj, layout_cls):
            return {"layout": _bare(obj)}
        if isinstance(obj, complex):
            return {"complex": [obj.real, obj.imag]}
        import numpy as np

        if isinstance(obj, np.generic):
            return self.encode(obj.item(), op)
        raise ExportError(f"cannot record an argument of type {type(obj).__name__} for op "
                          f"{op} ({where()}): a graph holds tensors, numbers, strings, "
                          "dtypes, devices, slices and lists of them")

    def value_name(self, t: Tensor) -> str:
        if isinstance(t, TracedTensor):
            self.sync(t)
            return t._vname
        key = id(t)
        if key in self.lifted:
            return self.lifted[key][1]
        entry = self.consts.get(key)
        if entry is not None and entry[0] is t:
            if entry[2] is None or entry[1] != t._version:
                entry[2] = self.lift_constant(t, None)
                entry[1] = t._version
            return entry[2]
        if key in self.attr_consts:
            tensor, target = self.attr_consts[key]
            name = self.lift_constant(tensor, target)
            self.lifted[key] = (tensor, name)
            return name
        if id(t._data) in self.data_aliases:
            return self.data_aliases[id(t._data)]
        raise AssertionError("an unknown tensor reached encoding")  # scan() reports these

    def lift_constant(self, t: Tensor, target: str | None) -> str:
        snapshot = t.detach().clone()
        if target is None:
            target = f"lifted_tensor_{len(self.const_targets)}"
        name = self.fresh_name("c_" + target.replace(".", "_"))
        self.const_targets[target] = snapshot
        self.keep.append(t)
        self.add_input(InputSpec(name, "constant", self.meta_of(t), target), t)
        if self.shadow_on:
            self.shadow_values[name] = t
        return name

    def fold(self, out) -> None:
        for t in _tensors(out):
            if not isinstance(t, TracedTensor):
                self.consts[id(t)] = [t, t._version, None]
                self.keep.append(t)

    # -- the shadow run -------------------------------------------------------------------
    def shadow_args(self, obj):
        if isinstance(obj, TracedTensor):
            if obj._shadow is None:  # made before a data-dependent size turned the run on
                obj._shadow = self.shadow_values.get(obj._vname)
                if obj._shadow is None:
                    obj._shadow = self.shadow_values[obj._vname] = obj._real.detach().clone()
            return obj._shadow
        if isinstance(obj, sym.SymInt):
            return self.eval_shadow(obj.expr)
        if isinstance(obj, sym.SymScalar):
            return obj.value
        if isinstance(obj, Tensor):
            key = id(obj)
            if key in self.lifted and self.lifted[key][1] in self.param_names:
                return obj
            copy = self.shadow_plain.get(key)
            if copy is None:
                copy = self.shadow_plain[key] = obj.detach().clone()
            return copy
        if type(obj) in _REAL_TYPES:
            return obj
        if isinstance(obj, (list, tuple)):
            items = [self.shadow_args(x) for x in obj]
            if hasattr(obj, "_fields"):
                return type(obj)(*items)
            return type(obj)(items) if type(obj) in (list, tuple) else tuple(items)
        if isinstance(obj, dict):
            return {k: self.shadow_args(v) for k, v in obj.items()}
        if isinstance(obj, slice):
            return slice(self.shadow_args(obj.start), self.shadow_args(obj.stop),
                         self.shadow_args(obj.step))
        return obj

    def shadow_call(self, name, fn, args, kwargs, frame):
        try:
            return fn(*self.shadow_args(args), **self.shadow_args(kwargs))
        except Exception as exc:
            if not any("hint" in v and not v.get("unbacked") for v in self.symbols.values()):
                # only data-dependent sizes are in play (no dynamic_shapes): an op that needs
                # the example's count (a broadcast against it, say) keeps concrete sizes
                return None
            hints = ", ".join(f"{s}={v['hint']}" for s, v in self.symbols.items()
                              if "hint" in v)
            others = ", ".join(f"{s}={v['shadow']}" for s, v in self.symbols.items()
                               if "shadow" in v)
            raise ConstraintViolationError(
                f"{name} at {describe_frame(frame)} runs at the example sizes ({hints}) but "
                f"fails at others ({others}): the model specializes a dynamic dimension "
                f"there ({type(exc).__name__}: {exc})"
                + suggested_fixes(self.equal_dims(name, args, kwargs))) from exc

    def equal_dims(self, name, args, kwargs) -> dict:
        """What a failing op's inputs suggest the dims must be (``{dim: other dim or int}``):
        dims meeting in one broadcast position (or a matrix product's inner dims) whose
        example sizes agree: a later-declared dim equal to an earlier one, or to a
        constant."""
        shapes = [self.metas[a._vname].shape if isinstance(a, TracedTensor)
                  else tuple(a._data.shape) for a in _flat((args, kwargs))
                  if isinstance(a, Tensor)]
        order = {n: i for i, n in enumerate(self.symbols)}
        hint = {n: v.get("hint") for n, v in self.symbols.items()}
        groups = [[s[-1 - i] for s in shapes if len(s) > i]
                  for i in range(max((len(s) for s in shapes), default=0))]
        if name in ("matmul", "mm", "bmm", "__matmul__", "linear") and len(shapes) >= 2 \
                and len(shapes[0]) and len(shapes[1]):
            other = shapes[1][-1] if name == "linear" or len(shapes[1]) == 1 \
                else shapes[1][-2]
            groups.append([shapes[0][-1], other])
        fixes: dict = {}
        for col in groups:
            syms = sorted({e[1] for e in col if isinstance(e, tuple) and e[0] == "sym"
                           and e[1] in hint}, key=order.get)
            ints = [e for e in col if isinstance(e, int) and e != 1]
            for s in syms:
                if ints and hint[s] == ints[0]:
                    fixes.setdefault(s, ints[0])
            for s in syms[1:]:
                if hint[s] == hint[syms[0]] and s not in fixes:
                    fixes[s] = syms[0]
        return fixes


# -- helpers -------------------------------------------------------------------------------------

def suggested_fixes(fixes: dict) -> str:
    """PyTorch's "Suggested fixes:" section (``refine_dynamic_shapes_from_suggested_fixes``
    reads it back): one ``dim = value`` line per fix, or nothing."""
    if not fixes:
        return ""
    return "\nSuggested fixes:\n" + "\n".join(f"  {k} = {v}" for k, v in fixes.items())


def _narrowed(held: str, bound: int, info) -> tuple:
    """The range ``(min, max)`` in which ``dim <held> bound`` always holds, from the declared
    one; ``(None, None)`` where no range does (``!=``)."""
    lo, hi = info["min"], info["max"]
    if held in ("le", "lt"):
        return lo, bound if held == "le" else bound - 1
    if held in ("ge", "gt"):
        return (bound if held == "ge" else bound + 1), hi
    return None, None


def _hi(info) -> str:
    return "inf" if info["max"] is None or info["max"] >= sym._INT_MAX else str(info["max"])


def _qualname(func) -> str:
    raw = _ops._raw(func)
    mod = getattr(raw, "__module__", "") or ""
    return f"{mod}.{getattr(raw, '__qualname__', repr(raw))}".lstrip(".")


def _pack_varargs(args: tuple) -> tuple:
    """``(self, 0, 2, 1)`` -> ``(self, [0, 2, 1])`` (registry.varargs_method's rule)."""
    if len(args) <= 2:
        return args
    return (args[0], list(args[1:]))


def _flat(obj):
    """Every leaf of nested lists/tuples/dicts/slices."""
    if isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _flat(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _flat(x)
    elif isinstance(obj, slice):
        yield from _flat((obj.start, obj.stop, obj.step))
    else:
        yield obj


def _perturbed(value):
    """Another value of a scalar's type (``scalar_sized``'s second run)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value >= 0 else value - 1
    return value + 1.5 if value >= 0 else value - 1.5


def _tensors(out):
    return [t for t in _flat(out) if isinstance(t, Tensor)]


def _has_tensor(out) -> bool:
    if isinstance(out, Tensor):
        return True
    return isinstance(out, (list, tuple)) and any(_has_tensor(x) for x in out)


def _leaf_paths(out, path=()):
    """``(path, leaf)`` of every item of nested tuples/lists, depth first."""
    for i, x in enumerate(out):
        if isinstance(x, (list, tuple)):
            yield from _leaf_paths(x, path + (i,))
        else:
            yield path + (i,), x


def _skeleton(out):
    """The nesting of tuples/lists in ``out`` (their lengths), its leaves left out."""
    if isinstance(out, (list, tuple)):
        return tuple(_skeleton(x) for x in out)
    return None


def _structure_spec(out, names):
    """A nested result's ``structure`` (FORMAT.md, "Nodes"): its tuples and lists with
    ``{"tensor": name}`` for each tensor leaf (``names``: the outputs in order, None where
    a leaf is not a tensor) and null for the other leaves."""
    if isinstance(out, (list, tuple)):
        return {"list" if isinstance(out, list) else "tuple":
                [_structure_spec(x, names) for x in out]}
    name = next(names)
    return None if name is None else {"tensor": name}


def _rebuild(out, items):
    """``out``'s nesting (namedtuples included) around the next of ``items`` per leaf."""
    if not isinstance(out, (list, tuple)):
        return next(items)
    parts = [_rebuild(x, items) for x in out]
    return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)


def _first_tensor(args):
    return next((a for a in _flat(args) if isinstance(a, Tensor)), None)


def _note_none(node, value):
    if value is not None and not isinstance(value, _REAL_TYPES):
        raise ExportError(f"{node.op} returned a {type(value).__name__} among its tensors")
    node.outputs.append(None)
    return value


def _bind_unique(base: str, args, kwargs):
    """``(return_inverse, return_counts, dim)`` of a ``unique``/``unique_consecutive`` call."""
    import inspect

    from ..ops.registry import OPS

    info = OPS.get(base)
    if info is None:
        return None
    try:
        bound = inspect.signature(info.fn).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    a = bound.arguments
    dim = a.get("dim")
    return bool(a.get("return_inverse")), bool(a.get("return_counts")), \
        None if dim is None else int(dim)


def _resize(t: Tensor, d: int, size: int) -> Tensor:
    """``t`` with ``size`` entries along ``d`` (its entries repeated, zeros if it has none):
    a shadow of a data-dependent result (indices in it stay valid)."""
    from .._device import xp_of
    from .._tensor import _make

    xp = xp_of(t)
    a = t._data
    k = a.shape[d]
    if k:
        new = xp.take(a, xp.arange(size) % k, axis=d)
    else:
        shape = list(a.shape)
        shape[d] = size
        new = xp.zeros(shape, dtype=a.dtype)
    return _make(new, t._device)


def _mask_dim(args, out) -> int:
    """The dim of ``x[index]``'s result that a boolean mask in ``index`` makes (its count):
    found by indexing a zero-strided stand-in of ``x`` with the masks as index arrays of two
    lengths (NumPy's placement rules); 0 when that cannot tell."""
    import numpy as np

    x, index = args[0], args[1] if len(args) > 1 else None
    shape = tuple(x._data.shape)
    if 0 in shape:
        return 0
    dummy = np.broadcast_to(np.zeros((), dtype=np.bool_), shape)

    def probe(n):
        items = []
        for it in (index if isinstance(index, tuple) else (index,)):
            if isinstance(it, Tensor):
                if it._data.dtype.kind == "b":
                    items += [np.zeros(n, dtype=np.intp)] * max(it._data.ndim, 1)
                else:
                    items.append(np.zeros(it._data.shape, dtype=np.intp))
            elif isinstance(it, list):
                items.append(np.zeros(np.shape(it), dtype=np.intp))
            else:
                items.append(it)
        return dummy[tuple(items)].shape

    try:
        one, two = probe(1), probe(2)
    except Exception:
        return 0
    diff = [d for d, (a, b) in enumerate(zip(one, two)) if a != b]
    if len(one) != out._data.ndim or len(two) != len(one) or len(diff) != 1:
        return 0
    return diff[0]


def _bool_index(args) -> bool:
    """Whether ``x[index]``'s index holds a boolean mask (its result size is the data's)."""
    index = args[1] if len(args) > 1 else None
    return any(isinstance(t, Tensor) and t._data.dtype.kind == "b" for t in _flat([index]))
