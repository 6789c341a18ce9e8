"""Symbolic sizes: ``Dim``, ``SymInt`` and the small expression language of the graph.

An expression is an ``int``, a symbol ``("sym", name)`` (a dynamic dimension declared with
:class:`Dim`), a size reference ``("size", value, dim)`` (the runtime size of a graph value's
dimension, read when that value exists), or ``(op, a, b)`` with ``op`` one of ``add``,
``sub``, ``mul``, ``floordiv``, ``mod``, ``max``, ``min``. In the file it is JSON: ``3``,
``{"sym": "batch"}``, ``{"size": ["conv2d", 2]}``, ``{"mul": [{"sym": "batch"}, 4]}``
(FORMAT.md).
"""

from __future__ import annotations

import operator

__all__ = ["Dim", "SymInt", "dims", "SymScalar", "SymFloat", "SymBool", "UnbackedSymInt"]

_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "floordiv": operator.floordiv, "mod": operator.mod, "max": max, "min": min}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}
_INT_MAX = 2 ** 63 - 1


class _DimHint:
    """``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC`` (torch.export's hints)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"Dim.{self.kind}"


class _LinearArithmetic:
    """``d + k``, ``k + d``, ``d - k``, ``k * d``: derived dims (``_derive``)."""

    def __add__(self, k):
        return self._derive("add", k, "{} + {}")

    __radd__ = __add__

    def __sub__(self, k):
        return self._derive("sub", k, "{} - {}")

    def __mul__(self, k):
        return self._derive("mul", k, "{1}*{0}")

    __rmul__ = __mul__


class Dim(_LinearArithmetic):
    """A dynamic dimension for :func:`ember.export.export` (``torch.export.Dim``).

    ``Dim("batch", min=1, max=1024)`` marks a dimension that may take any size in
    ``[min, max]`` (``max=None``: unbounded). Give the same ``Dim`` to several inputs'
    dimensions to say they are equal. ``Dim.AUTO`` and ``Dim.DYNAMIC`` make a dimension
    dynamic under a generated name, ``Dim.STATIC`` keeps it static.
    """

    AUTO = _DimHint("AUTO")
    DYNAMIC = _DimHint("DYNAMIC")
    STATIC = _DimHint("STATIC")

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        if not isinstance(name, str):
            raise ValueError(f"Dim name must be a Python identifier, got {name!r}")
        lo = 0 if min is None else min
        hi = _INT_MAX if max is None else max
        for what, v in (("min", lo), ("max", hi)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Dim {name!r}: {what} must be an int, got {type(v).__name__}")
        if lo < 0:
            raise ValueError(f"Dim {name!r}: min must be >= 0, got {lo}")
        if not hi > lo:
            # PyTorch: an AssertionError, and min == max is inconsistent too
            raise AssertionError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        if not name.isidentifier():
            raise AssertionError(f"Dim name must be a valid identifier, got {name}")
        self.__name__ = name
        self.min = lo
        self.max = hi

    @property
    def name(self) -> str:
        return self.__name__

    def __repr__(self) -> str:
        # PyTorch's Dim._readable: min=2 and an unbounded max are left out
        parts = [repr(self.__name__)]
        if self.min != 2:
            parts.append(f"min={self.min}")
        if self.max != _INT_MAX:
            parts.append(f"max={self.max}")
        return f"Dim({', '.join(parts)})"

    # derived dims (``dx + 1``, ``2 * dx``): a dimension whose size is an integer linear
    # function of this one's, as torch.export's
    def _derive(self, op: str, k, text: str) -> _DerivedDim:
        return _DerivedDim(self, ("sym", self.__name__), self.__name__)._derive(op, k, text)



class _DerivedDim(_LinearArithmetic):
    """``dx + 1``, ``2 * dx``...: a dynamic dimension whose size is ``expr`` of its root
    :class:`Dim`'s (torch.export's derived dims). The root is bound from this dimension's
    size (solving the linear ``expr``) or from another input's dim that is the root itself;
    its range is the root's, mapped through ``expr``."""

    def __init__(self, root: Dim, expr, name: str):
        self.root, self.expr, self.__name__ = root, expr, name

    def _derive(self, op: str, k, text: str) -> _DerivedDim:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"a derived Dim takes an int: {self.__name__} {op} {k!r}")
        if op == "mul" and k <= 0:
            raise ValueError(f"a derived Dim's coefficient must be positive, got {k}")
        name = self.__name__
        if op == "mul" and self.expr[0] in ("add", "sub"):
            name = f"({name})"
        return _DerivedDim(self.root, binary(op, self.expr, k), text.format(name, k))


    @property
    def min(self) -> int:
        return evaluate(self.expr, {self.root.__name__: self.root.min})

    @property
    def max(self) -> int:
        if self.root.max >= _INT_MAX:
            return _INT_MAX
        return evaluate(self.expr, {self.root.__name__: self.root.max})

    def root_size(self, size: int) -> int | None:
        """The root's size that gives this dimension ``size``, or None (none does)."""
        return solve_linear(self.expr, self.root.__name__, size)

    def __repr__(self) -> str:
        return self.__name__


def solve_linear(expr, name: str, value: int) -> int | None:
    """The integer ``n`` with ``expr(name=n) == value`` for an expression ``a*name + b``
    (``a > 0``), or None."""
    b = evaluate(expr, {name: 0})
    a = evaluate(expr, {name: 1}) - b
    if a <= 0 or (value - b) % a:
        return None
    return (value - b) // a


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple:
    """Several :class:`Dim` with the same range (``torch.export.dims``)."""
    return tuple(Dim(n, min=min, max=max) for n in names)


# -- expressions ---------------------------------------------------------------------------------

def is_static(expr) -> bool:
    return isinstance(expr, int)


def binary(op: str, a, b):
    """``a <op> b`` simplified (constants folded, ``x + 0``, ``x * 1``, and
    ``(x*k + r) // k`` is ``x`` for ``0 <= r < k``)."""
    if isinstance(a, int) and isinstance(b, int):
        return _BINARY[op](a, b)
    if op == "floordiv" and isinstance(b, int) and b > 0 and not isinstance(a, int):
        r = 0
        if a[0] == "add" and isinstance(a[2], int) and 0 <= a[2] < b:
            a, r = a[1], a[2]
        if not isinstance(a, int) and a[0] == "mul" and b in (a[1], a[2]):
            return a[2] if a[1] == b else a[1]
        if r:
            a = ("add", a, r)
    if op == "add" and b == 0 or op == "sub" and b == 0 or op in ("mul", "floordiv") and b == 1:
        return a
    if op == "add" and a == 0 or op == "mul" and a == 1:
        return b
    if op == "mul" and (a == 0 or b == 0):
        return 0
    return (op, a, b)


def evaluate(expr, symbols: dict, size_of=None) -> int:
    """The value of ``expr`` given ``symbols`` (name -> int) and ``size_of(value, dim)``."""
    if isinstance(expr, int):
        return expr
    head = expr[0]
    if head == "sym":
        return symbols[expr[1]]
    if head == "size":
        return size_of(expr[1], expr[2])
    return _BINARY[head](evaluate(expr[1], symbols, size_of), evaluate(expr[2], symbols, size_of))


def free_symbols(expr) -> set:
    if isinstance(expr, int):
        return set()
    if expr[0] == "sym":
        return {expr[1]}
    if expr[0] == "size":
        return set()
    return free_symbols(expr[1]) | free_symbols(expr[2])


def size_refs(expr) -> set:
    """The graph values whose sizes ``expr`` reads."""
    if isinstance(expr, int) or expr[0] == "sym":
        return set()
    if expr[0] == "size":
        return {expr[1]}
    return size_refs(expr[1]) | size_refs(expr[2])


def to_json(expr):
    if isinstance(expr, int):
        return expr
    if expr[0] == "sym":
        return {"sym": expr[1]}
    if expr[0] == "size":
        return {"size": [expr[1], expr[2]]}
    return {expr[0]: [to_json(expr[1]), to_json(expr[2])]}


def from_json(obj, where: str = "graph"):
    """Parse a JSON expression, checking every part (a file is untrusted input)."""
    if isinstance(obj, bool) or obj is None:
        raise ValueError(f"{where}: bad size expression {obj!r}")
    if isinstance(obj, int):
        return obj
    if isinstance(obj, dict) and len(obj) == 1:
        (key, val), = obj.items()
        if key == "sym" and isinstance(val, str):
            return ("sym", val)
        if key == "size" and isinstance(val, list) and len(val) == 2 \
                and isinstance(val[0], str) and type(val[1]) is int:
            return ("size", val[0], val[1])
        if key in _BINARY and isinstance(val, list) and len(val) == 2:
            return (key, from_json(val[0], where), from_json(val[1], where))
    raise ValueError(f"{where}: bad size expression {obj!r}")


def fmt(expr, top: bool = True) -> str:
    """``batch*4``, ``sym_size(%conv2d, 2)``: how the graph prints an expression."""
    if isinstance(expr, int):
        return str(expr)
    head = expr[0]
    if head == "sym":
        return expr[1]
    if head == "size":
        return f"sym_size(%{expr[1]}, {expr[2]})"
    if head in ("max", "min"):
        return f"{head}({fmt(expr[1])}, {fmt(expr[2])})"
    text = f"{fmt(expr[1], False)}{_SYMBOLS[head]}{fmt(expr[2], False)}"
    return text if top else f"({text})"


# -- SymInt ----------------------------------------------------------------------------------------

class SymInt(int):
    """An ``int`` (its value in the example inputs) that remembers how it was computed from
    dynamic sizes, so that ``x.view(x.shape[0], -1)`` records ``view(x, [batch, -1])``.

    ``+ - * // %`` (with ints or SymInts) build expressions; comparisons return a plain
    ``bool`` and record a guard (the Python branch taken); ``float()``, ``/`` and ``**``
    specialize the size (an error for a dimension declared dynamic in ``ember.export``).
    """

    def __new__(cls, value: int, expr, capture):
        self = int.__new__(cls, value)
        self.expr = expr
        self.capture = capture
        return self

    __hash__ = int.__hash__

    def __reduce__(self):
        return (int, (int(self),))

    def __int__(self) -> int:
        return int.__int__(self)

    __index__ = __int__

    def _arith(self, op: str, other, reverse: bool = False):
        if isinstance(other, bool) or not isinstance(other, int):
            if isinstance(other, float):
                self.capture.specialize(self, f"used in float arithmetic ({op})")
                a, b = (other, int(self)) if reverse else (int(self), other)
                return _BINARY[op](a, b)
            return NotImplemented
        oexpr = other.expr if isinstance(other, SymInt) else int(other)
        a, b = (oexpr, self.expr) if reverse else (self.expr, oexpr)
        av, bv = (int(other), int(self)) if reverse else (int(self), int(other))
        value = _BINARY[op](av, bv)
        expr = binary(op, a, b)
        return SymInt(value, expr, self.capture) if not isinstance(expr, int) else value

    def __add__(self, other):
        return self._arith("add", other)

    def __radd__(self, other):
        return self._arith("add", other, True)

    def __sub__(self, other):
        return self._arith("sub", other)

    def __rsub__(self, other):
        return self._arith("sub", other, True)

    def __mul__(self, other):
        return self._arith("mul", other)

    def __rmul__(self, other):
        return self._arith("mul", other, True)

    def __floordiv__(self, other):
        return self._arith("floordiv", other)

    def __rfloordiv__(self, other):
        return self._arith("floordiv", other, True)

    def __mod__(self, other):
        return self._arith("mod", other)

    def __rmod__(self, other):
        return self._arith("mod", other, True)

    def __neg__(self):
        return self._arith("mul", -1)

    def __pos__(self):
        return self

    def __abs__(self):
        return self if int(self) >= 0 else -self

    def _specialized(self, why: str) -> int:
        self.capture.specialize(self, why)
        return int(self)

    def __float__(self) -> float:
        return float(self._specialized("converted to float"))

    def __truediv__(self, other):
        return self._specialized("divided with /") / other

    def __rtruediv__(self, other):
        return other / self._specialized("divided with /")

    def __pow__(self, other, mod=None):
        return pow(self._specialized("raised to a power"), other, mod)

    def __rpow__(self, other):
        return pow(other, self._specialized("used as an exponent"))

    def _compare(self, op: str, other) -> bool:
        if isinstance(other, bool) or not isinstance(other, int):
            if isinstance(other, float):
                return getattr(float(self._specialized("compared with a float")), op)(other)
            return NotImplemented
        result = getattr(int(self), op)(int(other))
        oexpr = other.expr if isinstance(other, SymInt) else int(other)
        self.capture.guard(self.expr, op, oexpr, result)
        return result

    def __eq__(self, other):
        return self._compare("__eq__", other)

    def __ne__(self, other):
        return self._compare("__ne__", other)

    def __lt__(self, other):
        return self._compare("__lt__", other)

    def __le__(self, other):
        return self._compare("__le__", other)

    def __gt__(self, other):
        return self._compare("__gt__", other)

    def __ge__(self, other):
        return self._compare("__ge__", other)

    def __bool__(self) -> bool:
        return self._compare("__ne__", 0)

    def __round__(self, ndigits=None):
        return self if ndigits is None else round(int(self), ndigits)

    def __trunc__(self):
        return self

    __floor__ = __ceil__ = __trunc__


#: the comparison dunders as the graph's guard operators
GUARD_OPS = {"__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
             "__ge__": "ge"}
GUARD_FUNCS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
               "gt": operator.gt, "ge": operator.ge}
NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
GUARD_TEXT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def holds_on_range(lhs, op: str, rhs, lo: int, hi: int) -> bool:
    """Whether ``sym <op> rhs`` (``lhs`` a bare symbol, ``rhs`` an int) holds for every value
    of the symbol in ``[lo, hi]`` (checked at the ends; the guards are monotone there)."""
    f = GUARD_FUNCS[op]
    if hi is None:  # unbounded above: only a lower-bound guard can hold on the whole range
        if op in ("gt", "ge"):
            return f(lo, rhs)
        return op == "ne" and rhs < lo
    if op in ("eq",):
        return lo == hi == rhs
    if op == "ne":
        return not lo <= rhs <= hi
    return f(lo, rhs) and f(hi, rhs)


# -- data-dependent scalars (Tensor.item in export) ----------------------------------------------

#: the scalar ops of a graph (FORMAT.md, "Scalar values"): ``operator.<name>`` on Python numbers,
#: as torch.export records arithmetic on its unbacked SymFloat/SymInt
SCALAR_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}
#: the graph's type of a scalar value, by its Python type (kept as a value's ``dtype``)
SCALAR_DTYPES = {bool: "bool", int: "int64", float: "float64"}
SCALAR_TYPES = {"bool": "bool", "int64": "int", "float64": "float"}

_SCALAR_TEXT = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//",
                "mod": "%", "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
                "gt": ">", "ge": ">="}


class SymScalar:
    """A Python number read from a traced tensor's data in ``ember.export`` (``x.item()``):
    torch.export's unbacked ``SymFloat``/``SymInt``/``SymBool``. It is a graph value (the
    ``Tensor.item`` node's output): ops it is passed to record a reference to it, arithmetic
    with numbers records ``operator.*`` scalar nodes, and turning it into a Python value
    (``float()``, ``int()``, ``bool()``, an ``if``) is data-dependent control flow, an error.

    ``value`` is its value in the example run; ``name`` the graph value it is."""

    __slots__ = ("value", "name", "capture")

    def __init__(self, value, name: str, capture):
        self.value, self.name, self.capture = value, name, capture

    def __repr__(self) -> str:
        return f"{type(self).__name__}(%{self.name})"

    __hash__ = None  # as PyTorch's unbacked symbols: equality is symbolic

    def _op(self, op: str, *others, reverse: bool = False):
        for o in others:
            if not isinstance(o, (int, float, SymScalar)):  # bool and SymInt are ints
                return NotImplemented
        args = (others[0], self) if reverse else (self, *others)
        return self.capture.scalar_op(op, args)

    # the operators (``__add__``, ``__radd__``, ``__neg__``, ``__eq__``, ...) are made from
    # ``_SCALAR_BINARY``/``_SCALAR_UNARY`` below the class: each records its scalar node

    # -- to Python values: data-dependent -------------------------------------------------
    def _python(self, what: str):
        return self.capture.scalar_to_python(self, what)

    def __bool__(self):
        return self._python("bool")

    def __float__(self):
        return self._python("float")

    def __int__(self):
        return self._python("int")

    def __index__(self):
        return self._python("int")

    def __complex__(self):
        return self._python("complex")

    def __round__(self, ndigits=None):
        return self._python("int")

    def __trunc__(self):
        return self._python("int")

    def __floor__(self):
        return self._python("int")

    def __ceil__(self):
        return self._python("int")


#: Python's binary operators on a symbolic scalar, each with its reflected form (the
#: comparisons have none: Python reflects them itself), recorded as ``operator.<name>``
_SCALAR_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
_SCALAR_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
_SCALAR_UNARY = ("neg", "pos", "abs")


def _scalar_methods() -> None:
    def binary(op):
        def method(self, o):
            return self._op(op, o)
        return method

    def reflected(op):
        def method(self, o):
            return self._op(op, o, reverse=True)
        return method

    def unary(op):
        def method(self):
            return self._op(op)
        return method

    for op in _SCALAR_BINARY:
        setattr(SymScalar, f"__{op}__", binary(op))
        setattr(SymScalar, f"__r{op}__", reflected(op))
    for op in _SCALAR_COMPARE:
        setattr(SymScalar, f"__{op}__", binary(op))
    for op in _SCALAR_UNARY:
        setattr(SymScalar, f"__{op}__", unary(op))

    def pow_(self, o, mod=None):
        return self._op("pow", o) if mod is None else NotImplemented

    SymScalar.__pow__ = pow_  # (three-argument pow has no symbolic form)


_scalar_methods()


class SymFloat(SymScalar):
    """``x.item()`` of a floating tensor in ``ember.export`` (see :class:`SymScalar`)."""

    __slots__ = ()


class SymBool(SymScalar):
    """``x.item()`` of a bool tensor, or a comparison of scalars (see :class:`SymScalar`)."""

    __slots__ = ()


class UnbackedSymInt(SymScalar):
    """``x.item()`` of an integer tensor in ``ember.export`` (see :class:`SymScalar`); unlike
    :class:`SymInt` (a size with a value), it has no value to specialize to."""

    __slots__ = ()


SCALAR_CLASSES = {bool: SymBool, int: UnbackedSymInt, float: SymFloat}


def scalar_text(op: str, args: list) -> str:
    """``item * 2``: a scalar node as an expression (for error messages)."""
    def one(a):
        return a.name if isinstance(a, SymScalar) else repr(a)
    if op in ("neg", "pos"):
        return f"{'-' if op == 'neg' else '+'}{one(args[0])}"
    if op == "abs":
        return f"abs({one(args[0])})"
    return f"{one(args[0])} {_SCALAR_TEXT[op]} {one(args[1])}"
