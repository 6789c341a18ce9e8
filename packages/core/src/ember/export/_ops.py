"""Op names: which registry op a public callable is, and which callable an op name runs.

A graph node names its op in one flat namespace (FORMAT.md, "Op names"):

* ``"add"``, ``"conv2d"``, ...: ``ember.ops.registry.OPS[name].fn``, called as a function
  (a Tensor method call ``x.add(y)`` is recorded as ``add(x, y)``; an int list given as
  varargs, ``x.permute(0, 2, 1)``, is recorded packed: ``permute(x, [0, 2, 1])``).
* ``"add_"``: the in-place variant ``OPS["add"].inplace``.
* ``"getitem"`` / ``"setitem"``: ``x[index]`` and ``x[index] = value``.
* ``"Tensor.<method>"``: a Tensor method that is not a registry function (``Tensor.view``,
  ``Tensor.expand``, ``Tensor.to``, ``Tensor.contiguous``, ``Tensor.T``, ...).
* ``"nn.functional.<name>"``: a ``torch.nn.functional`` kernel of ember-core whose signature
  differs from the registry op of that name (``dropout(input, p, training, inplace)``).
* ``"linalg.<name>"``: an ``ember.linalg`` function that is not a registry op.
* ``"ember.<name>"``: a factory (``ember.zeros``, ``ember.arange``, ``ember.randn``, ...).

Python operators map to their ops (``x + y`` is ``add``, ``2 - x`` is ``rsub(x, 2)``,
``x += y`` is ``add_``).
"""

from __future__ import annotations

import sys
import threading
import types
from dataclasses import dataclass

from .._forksafe import reinit_in_child
from ..overrides import code_of

__all__ = ["lookup", "resolve", "UnknownOpError"]


class UnknownOpError(KeyError):
    """An op name that this Ember cannot run."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Entry:
    """How to record a call of one public callable."""

    name: str
    varargs: bool = False   # a method taking its int list as varargs: pack it
    reflect: bool = False   # ``__radd__(self, other)``: record ``add(other, self)``
    inplace_flag: bool = False  # F's ``relu(input, inplace=False)`` over a registry op


#: Python operators -> (op, reflected); in-place operators are ``<op>_`` when the op has one
_DUNDERS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
_UNARY_DUNDERS = {"__neg__": "neg", "__abs__": "abs", "__pos__": "positive",
                  "__invert__": "bitwise_not"}
_COMPARE_DUNDERS = {"__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
                    "__gt__": "gt", "__ge__": "ge"}

#: modules whose public functions are factories: recorded as ``ember.<name>``
FACTORY_MODULES = ("ember._factory", "ember._creation", "ember._random")

#: Tensor methods that may appear in a file; others (hooks, storage, numpy...) are refused
_TENSOR_REFUSED = frozenset({
    "register_hook", "register_post_accumulate_grad_hook", "backward", "retain_grad",
    "apply_", "map_", "map2_", "record_stream", "share_memory_", "pin_memory", "numpy",
    "tolist", "storage", "untyped_storage", "set_", "data_ptr", "__setstate__",
    "__reduce_ex__", "__deepcopy__", "module_load", "new",
})

_TABLE: list = [None, False]  # [fn -> Entry, whether ember.nn.functional was included]
_LOCK = reinit_in_child(threading.Lock())


def _raw(fn):
    """The function behind a dispatching wrapper (ember.overrides) or a property."""
    if isinstance(fn, property):
        fn = fn.fget
    return getattr(fn, "_ember_original", fn)


def _varargs_code():
    """The code object of ``registry.varargs_method``'s wrappers (one for all of them)."""
    from ..ops.registry import varargs_method

    def probe(self, ints=None):
        return None

    return varargs_method(probe, "probe").__code__


def _build() -> dict:
    import ember

    from .._tensor import Tensor
    from ..ops.registry import OPS

    varargs_code = _varargs_code()

    def is_varargs(fn) -> bool:
        return type(fn) is types.FunctionType and code_of(fn) is varargs_code

    table: dict = {}
    for info in OPS.values():
        table.setdefault(info.fn, Entry(info.name))
        if info.method_fn is not None:  # the Tensor method's front (no out=, no x= alias)
            table.setdefault(info.method_fn, Entry(info.name))
        if info.kernel is not None:  # the op module's own name (``from ..fft_ops import``)
            table.setdefault(info.kernel, Entry(info.name))
        if info.inplace is not None:
            table.setdefault(info.inplace, Entry(info.name + "_"))
    for name, attr in vars(Tensor).items():
        raw = _raw(attr)
        if not callable(raw):
            continue
        entry = _dunder_entry(name, OPS)
        if entry is not None:
            table[raw] = entry
            continue
        if raw in table:
            continue
        if name.startswith("_") and not name.startswith("__"):
            continue
        wrapped = getattr(raw, "__wrapped__", None)
        if is_varargs(raw) and wrapped is not None and OPS.get(name) is not None \
                and (OPS[name].method_fn or OPS[name].fn) is wrapped:
            table[raw] = Entry(name, varargs=True)
        else:
            table[raw] = Entry("Tensor." + name, varargs=is_varargs(raw))
    for name in dir(ember):
        raw = _raw(getattr(ember, name, None))
        if callable(raw) and not isinstance(raw, type) and raw not in table \
                and getattr(raw, "__module__", None) in FACTORY_MODULES:
            table[raw] = Entry("ember." + name)
    for name in ember.linalg.__all__:
        raw = _raw(getattr(ember.linalg, name, None))
        if callable(raw) and not isinstance(raw, type) and raw not in table:
            table[raw] = Entry("linalg." + name)
    _add_functional(table, OPS)
    return table, "ember.nn.functional" in sys.modules


def _dunder_entry(name: str, OPS) -> Entry | None:
    if name in _UNARY_DUNDERS:
        return Entry(_UNARY_DUNDERS[name])
    if name in _COMPARE_DUNDERS:
        return Entry(_COMPARE_DUNDERS[name])
    if name == "__getitem__":
        return Entry("getitem")
    if name == "__setitem__":
        return Entry("setitem")
    if not (name.startswith("__") and name.endswith("__")):
        return None
    core = name[2:-2]
    if core in _DUNDERS:
        return Entry(_DUNDERS[core])
    if core.startswith("r") and core[1:] in _DUNDERS:
        op = _DUNDERS[core[1:]]
        if op == "sub":
            return Entry("rsub")  # rsub(self, other) is other - self
        if op == "matmul":
            return None  # ``a @ b`` with a non-tensor on the left: keep the method
        return Entry(op, reflect=True)
    if core.startswith("i") and core[1:] in _DUNDERS:
        op = _DUNDERS[core[1:]]
        info = OPS.get(op)
        return Entry(op + "_") if info is not None and info.inplace is not None else None
    return None


def _add_functional(table: dict, OPS) -> None:
    F = sys.modules.get("ember.nn.functional")
    if F is None:
        return
    import inspect

    from ..ops.registry import functional_kernels

    kernels = functional_kernels()
    core_kernels = {id(fn) for fn in kernels.values()}
    for name in getattr(F, "__all__", ()):
        raw = _raw(getattr(F, name, None))
        if not callable(raw) or raw in table:
            continue
        if id(raw) in core_kernels and kernels.get(name) is raw:
            table[raw] = Entry("nn.functional." + name)
            continue
        info = OPS.get(name)
        try:
            params = inspect.signature(raw).parameters
        except (TypeError, ValueError):
            continue
        if info is not None and "inplace" in params \
                and "inplace" not in (info.signature.parameters if info.signature else ()):
            table[raw] = Entry(name, inplace_flag=True)


def lookup(func) -> Entry | None:
    """The entry of a dispatched public callable, or None (not an op: run it through)."""
    table, has_f = _TABLE
    if table is None or not has_f and "ember.nn.functional" in sys.modules:
        with _LOCK:
            if _TABLE[0] is None or not _TABLE[1] and "ember.nn.functional" in sys.modules:
                _TABLE[:] = _build()
        table = _TABLE[0]
    return table.get(_raw(func))


# -- name -> callable ----------------------------------------------------------------------

_RESOLVED: dict = {}


def resolve(name: str):
    """The callable that a node's op ``name`` runs (UnknownOpError if this Ember has none).

    Only registry ops, Tensor methods, ember-core's functional kernels, ``ember.linalg``
    functions, ember's factories and the scalar ops ``operator.<name>`` resolve: a file
    cannot name anything else."""
    fn = _RESOLVED.get(name)
    if fn is None:
        fn = _resolve(name)
        _RESOLVED[name] = fn
    return fn


def _resolve(name: str):
    from .._tensor import Tensor
    from ..ops.registry import METHODS, OPS

    if not isinstance(name, str) or not name:
        raise UnknownOpError(f"bad op name {name!r}")
    info = OPS.get(name)
    if info is not None:
        return info.fn
    if name.endswith("_") and not name.endswith("__"):
        base = OPS.get(name[:-1])
        if base is not None and base.inplace is not None:
            return base.inplace
    if name == "getitem":
        return METHODS["__getitem__"]
    if name.startswith("operator."):  # the scalar ops on Tensor.item's values (FORMAT.md)
        from ._symbolic import SCALAR_OPS

        fn = SCALAR_OPS.get(name[len("operator."):])
        if fn is not None:
            return fn
    if name == "setitem":
        return METHODS["__setitem__"]
    prefix, _, rest = name.rpartition(".")
    if prefix == "Tensor" and rest and rest not in _TENSOR_REFUSED \
            and not (rest.startswith("_") and not rest.startswith("__")):
        attr = vars(Tensor).get(rest)
        if attr is not None:
            raw = _raw(attr)
            if callable(raw):
                return raw
    elif prefix == "ember" and rest and not rest.startswith("_"):
        import ember

        raw = _raw(getattr(ember, rest, None))
        if callable(raw) and getattr(raw, "__module__", None) in FACTORY_MODULES:
            return raw
    elif prefix == "linalg" and rest:
        import ember

        if rest in ember.linalg.__all__:
            raw = _raw(getattr(ember.linalg, rest))
            if callable(raw) and not isinstance(raw, type):
                return raw
    elif prefix == "nn.functional" and rest:
        from ..ops.registry import functional_kernels

        fn = functional_kernels().get(rest)
        if fn is not None:
            return fn
    raise UnknownOpError(f"unknown op {name!r}: this Ember has no registry op, Tensor method, "
                         "functional kernel or factory of that name")
