"""The ``strict`` test device: NumPy memory that behaves like CuPy's at the boundary.

No GPU is lent to most sessions, and the NumPy-backed ``testdev`` cannot catch a kernel that
calls ``np.*`` on a tensor's array: NumPy accepts its own arrays. On a GPU that call would copy
to the host behind the op's back, or fail, because CuPy arrays refuse implicit conversion.

``StrictArray`` is an ``ndarray`` subclass whose operators, indexing and methods work as
usual, but which refuses what CuPy refuses:

- a NumPy function called on it directly (``np.where(m, a, b)``, ``np.einsum``,
  ``np.concatenate``) raises ``TypeError``: kernels must take their array module from the
  tensor's backend (``xp``), which is :data:`strict_numpy` here. NumPy's ufuncs
  (``np.exp(a)``, ``np.add.reduce(a)``) are allowed, as CuPy takes them too (NEP 13);
- ufuncs, ``xp`` functions, operators and item assignment refuse to mix it with a plain
  ``np.ndarray`` (a host array that a kernel built with ``np.*``), as CuPy's do;
- ``__array__`` raises, so ``np.array(t)`` / ``np.asarray`` on an object holding it fail.

It also has CuPy's gaps (seen on a GPU with CuPy 14): ``ufunc.accumulate`` only for add and
multiply; ``add.at``/``subtract.at`` only for int32/int64/uint32/uint64/float16/float32/
float64 and ``maximum.at``/``minimum.at`` only for the four integer types (CuPy's float ones
round through float32 and drop NaNs: kernels go through ``ember.ops.indexing.ufunc_at``);
``where`` with a Python bool condition; ``tensordot`` of a 0-d array with axes;
``linalg.solve`` with batch dims that need broadcasting; ``concatenate``/``stack`` of an
operand that is not an array of the module.

An ndarray subclass cannot stop ``np.asarray(a)`` on the array itself (NumPy views a subclass
without asking it); that one leak is documented in ``ember.testing``.

:data:`strict_numpy` is a module-like proxy of NumPy: every function unwraps its strict
arguments, runs NumPy, and wraps array (and NumPy scalar) results as ``StrictArray``, so
results stay on the device, as CuPy's reductions return 0-d device arrays.
"""

from __future__ import annotations

import functools
import threading
import types

import ml_dtypes
import numpy as np

__all__ = ["StrictArray", "StrictNumpy", "strict_numpy", "to_strict", "from_strict"]

_NDARRAY = np.ndarray
_LOCAL = threading.local()


def _refuse(what: str):
    raise TypeError(f"strict device: {what} on a strict array. Kernels must use the array "
                    "module of the tensor's backend (xp = ember.ops.api.array_module(t)), as a "
                    "CuPy array refuses NumPy here")


def _mixing(obj) -> TypeError:
    return TypeError(f"strict device: unsupported operand: a host numpy.ndarray "
                     f"(shape {obj.shape}) mixed with a strict array (CuPy raises "
                     "'Unsupported type <class 'numpy.ndarray'>'); build it with xp")


def _unwrap(obj, strict_seen):
    """``obj`` with strict arrays as plain views (inside lists, tuples and dicts)."""
    cls = obj.__class__
    if cls is StrictArray:
        strict_seen[0] = True
        return obj.view(_NDARRAY)
    if cls is _NDARRAY:
        strict_seen[1] = obj
        return obj
    if cls is list or cls is tuple:
        return cls(_unwrap(o, strict_seen) for o in obj)
    if cls is dict:
        return {k: _unwrap(v, strict_seen) for k, v in obj.items()}
    return obj


def _wrap(obj):
    cls = obj.__class__
    if cls is _NDARRAY:
        return obj.view(StrictArray)
    if isinstance(obj, np.generic):
        return np.asarray(obj).view(StrictArray)
    if cls is list or cls is tuple:
        return cls(_wrap(o) for o in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # np.linalg's named results
        return cls(*(_wrap(o) for o in obj))
    return obj


def _call(fn, args, kwargs, *, allow_host: bool = False):
    seen = [False, None]
    uargs = _unwrap(args, seen)
    ukw = _unwrap(kwargs, seen) if kwargs else kwargs
    if seen[1] is not None and not allow_host:
        if seen[0] or not _only_host_inputs_allowed(fn):
            raise _mixing(seen[1])
    return _wrap(fn(*uargs, **ukw))


# functions that take host data and put it on the device (CuPy's asarray/array copy it in)
_FROM_HOST = {"asarray", "array", "asanyarray", "ascontiguousarray", "copyto"}


def _only_host_inputs_allowed(fn) -> bool:
    return getattr(fn, "__name__", "") in _FROM_HOST


class StrictArray(np.ndarray):
    """An ndarray that refuses direct NumPy calls and host arrays (see the module doc)."""

    __array_priority__ = 20  # above ndarray: mixed operators come to us (and are refused)

    def __array__(self, dtype=None, copy=None):
        _refuse("implicit conversion to a NumPy array (__array__)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # CuPy arrays take NumPy's ufuncs (NEP 13 dispatch), but never with a host operand
        _cupy_ufunc_gaps(ufunc.__name__, method, inputs)
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        if getattr(_LOCAL, "inside", 0):
            return _call(func, args, kwargs)
        _refuse(f"numpy.{func.__name__}() called directly")

    # pickling, copying and repr go through ndarray's own machinery on a plain view
    def __reduce_ex__(self, protocol):
        return (to_strict, (self.view(_NDARRAY).copy(),))

    def __repr__(self) -> str:
        return "StrictArray(" + repr(self.view(_NDARRAY))[6:]

    __str__ = __repr__

    def get(self) -> np.ndarray:
        """A host copy (CuPy's ``ndarray.get()``)."""
        return self.view(_NDARRAY).copy()


def _inside(method):
    """An ndarray method that may call NumPy's functions internally: allowed, as on CuPy;
    a NumPy scalar result comes back as a 0-d strict array (CuPy's reductions return 0-d
    device arrays, never host scalars)."""

    @functools.wraps(method)
    def run(*args, **kwargs):
        _LOCAL.inside = getattr(_LOCAL, "inside", 0) + 1
        try:
            r = method(*args, **kwargs)
        finally:
            _LOCAL.inside -= 1
        return np.asarray(r).view(StrictArray) if isinstance(r, np.generic) else r

    return run


_METHODS = (
    # ndarray methods that may run NumPy's dispatched functions internally
    "sum", "prod", "mean", "std", "var", "max", "min", "argmax", "argmin", "any", "all",
    "clip", "round", "cumsum", "cumprod", "dot", "ptp", "trace", "conj", "conjugate",
    "nonzero", "sort", "argsort", "partition", "argpartition", "searchsorted", "compress",
    "choose", "take", "put", "repeat", "diagonal", "astype", "copy", "__copy__",
    "__deepcopy__", "__format__",
)

for _name in _METHODS:
    if hasattr(_NDARRAY, _name):
        setattr(StrictArray, _name, _inside(getattr(_NDARRAY, _name)))
del _name


def _operator_guard(method):
    """Binary operators refuse a host ndarray operand, as CuPy's do."""

    @functools.wraps(method)
    def run(self, other, *rest):
        if other.__class__ is _NDARRAY:
            raise _mixing(other)
        return method(self, other, *rest)

    return run


for _name in ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
              "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__",
              "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__",
              "__imod__", "__pow__", "__rpow__", "__ipow__", "__matmul__", "__rmatmul__",
              "__imatmul__", "__and__", "__rand__", "__iand__", "__or__", "__ror__", "__ior__",
              "__xor__", "__rxor__", "__ixor__", "__lt__", "__le__", "__gt__", "__ge__",
              "__eq__", "__ne__"):
    setattr(StrictArray, _name, _operator_guard(getattr(StrictArray, _name)))
del _name


def _setitem_guard(method):
    """``a[key] = host`` is refused unless ``key`` is the whole array (CuPy copies that)."""

    @functools.wraps(method)
    def run(self, key, value):
        if value.__class__ is _NDARRAY and value.ndim and not (
                key is Ellipsis or key == slice(None)):
            raise _mixing(value)
        return method(self, key, value)

    return run


StrictArray.__setitem__ = _setitem_guard(StrictArray.__setitem__)


def _getitem(self, key, _get=_NDARRAY.__getitem__):
    """``a[i, j]`` is a 0-d strict array, as CuPy's indexing never returns a host scalar."""
    r = _get(self, key)
    return np.asarray(r).view(StrictArray) if isinstance(r, np.generic) else r


StrictArray.__getitem__ = _getitem


class StrictNumpy(types.ModuleType):
    """NumPy as a strict device's array module: results stay strict (see the module doc)."""

    def __init__(self, base=np, name: str = "ember_strict_numpy", *, gaps: bool = True,
                 _path: str = ""):
        super().__init__(name)
        self._base = base
        self._gaps = gaps  # CuPy's gaps (see the module doc)
        self._path = _path

    def __getattr__(self, name: str):
        attr = getattr(self._base, name)
        qual = f"{self._path}.{name}".lstrip(".")
        if name == "ndarray":
            value = StrictArray
        elif qual in _GAPS and self._gaps:
            value = _GAPS[qual]
        elif isinstance(attr, types.ModuleType):
            value = StrictNumpy(attr, f"{self.__name__}.{name}", gaps=self._gaps, _path=qual)
        elif isinstance(attr, type) or not callable(attr):
            value = attr  # dtypes, scalar types, constants
        else:
            value = _strict_function(attr)
        setattr(self, name, value)  # cached: the next lookup is a plain attribute
        return value


def _strict_function(fn):
    if isinstance(fn, np.ufunc):
        return _StrictUfunc(fn)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        return _call(fn, args, kwargs)

    return run


# bfloat16 and complex32 never reach CuPy (the cuda backend refuses them), so the strict
# device keeps them
_ADD_AT = frozenset([np.dtype(t) for t in ("int32", "int64", "uint32", "uint64", "float16",
                                            "float32", "float64")]
                    + [np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.complex32)])
_EXTREME_AT = frozenset(np.dtype(t) for t in ("int32", "int64", "uint32", "uint64"))
_AT_DTYPES = {"add": _ADD_AT, "subtract": _ADD_AT, "maximum": _EXTREME_AT,
              "minimum": _EXTREME_AT}


def _cupy_ufunc_gaps(name: str, method: str, args) -> None:
    """CuPy's limits on ufunc methods (see the module doc)."""
    if method == "accumulate" and name not in ("add", "multiply"):
        raise NotImplementedError(f"`cupy_{name}.accumulate` is not supported yet")
    if method == "at":
        dt = getattr(args[0], "dtype", None) if args else None
        allowed = _AT_DTYPES.get(name)
        if allowed is None or dt not in allowed:
            raise TypeError(f"strict device: {name}.at on {dt}: CuPy has none, or an inexact "
                            "one (use ember.ops.indexing.ufunc_at)")


class _StrictUfunc:
    """A ufunc of the strict module: its call and its methods (reduce, at, ...) unwrap."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _call(self._ufunc, args, kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if callable(attr):
            uname = self.__name__

            def method(*a, **k):
                _cupy_ufunc_gaps(uname, name, a)
                return _call(attr, a, k)
            return method
        return attr


def _gap_where(condition, *args):
    if not hasattr(condition, "dtype"):  # CuPy: 'bool' object has no attribute 'astype'
        raise AttributeError(f"'{type(condition).__name__}' object has no attribute 'astype'")
    return _call(np.where, (condition, *args), {})


def _gap_tensordot(a, b, axes=2):
    if (getattr(a, "ndim", 1) == 0 or getattr(b, "ndim", 1) == 0) and not (
            axes == 0 or axes == ((), ())):
        raise ValueError("An input is zero-dim while axes has dimensions")
    return _call(np.tensordot, (a, b), {"axes": axes})


def _arrays_only(arrays) -> None:
    for a in arrays:
        if not isinstance(a, StrictArray):
            raise TypeError(f"Unsupported type {type(a)}")


def _gap_concatenate(arrays, *args, **kwargs):
    _arrays_only(arrays)
    return _call(np.concatenate, (arrays, *args), kwargs)


def _gap_stack(arrays, *args, **kwargs):
    _arrays_only(arrays)
    return _call(np.stack, (arrays, *args), kwargs)


def _gap_solve(a, b):
    if not ((a.ndim == b.ndim or a.ndim == b.ndim + 1) and a.shape[:-1] == b.shape[:a.ndim - 1]):
        raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for "
                         "multidimensional b")
    return _call(np.linalg.solve, (a, b), {})


#: the strict module's functions that have CuPy's limits (``StrictNumpy.__getattr__``)
_GAPS = {"where": _gap_where, "tensordot": _gap_tensordot, "concatenate": _gap_concatenate,
         "stack": _gap_stack, "linalg.solve": _gap_solve}


strict_numpy = StrictNumpy()


def to_strict(array) -> StrictArray:
    """A strict copy of host data (the device's ``to_device``)."""
    if isinstance(array, StrictArray):
        return array.view(_NDARRAY).copy().view(StrictArray)
    return np.array(array, copy=True).view(StrictArray)


def from_strict(array) -> np.ndarray:
    """A host copy of a strict array (the device's ``to_host``)."""
    if isinstance(array, StrictArray):
        return array.view(_NDARRAY).copy()
    return np.asarray(array)
