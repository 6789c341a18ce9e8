"""``ember.testing.assert_close``: PyTorch's comparison semantics and messages.

The inputs are split into pairs (sequences and mappings element by element, the failing item
named in the message), each pair is built by the first of ``NonePair``, ``BooleanPair``,
``NumberPair`` and ``TensorLikePair`` that takes the inputs, and then compared. Tensors are
compared on the host in their own dtype, rounding where PyTorch's CPU kernels round (float16,
bfloat16 and complex32 are computed in float32 and rounded back after every operation), so
that the closeness test and the reported differences are PyTorch's to the last bit.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import sys

import numpy as np

from . import _dtype as D
from ._layout import jagged, sparse_coo, strided
from ._tensor import Tensor

__all__ = ["assert_close", "default_tolerances"]

# {dtype: (rtol, atol)}: the defaults when neither tolerance is given
_PRECISIONS = {D.float16: (0.001, 1e-5), D.bfloat16: (0.016, 1e-5), D.float32: (1.3e-6, 1e-5),
               D.float64: (1e-7, 1e-7), D.complex32: (0.001, 1e-5),
               D.complex64: (1.3e-6, 1e-5), D.complex128: (1e-7, 1e-7)}

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_C64 = np.dtype(np.complex64)
_I64 = np.dtype(np.int64)
_UNSIGNED_WIDE = (D.uint16, D.uint32, D.uint64)  # compared as int64 when dtypes differ


class _Failure(Exception):
    """A comparison's failure: the exception type and message to raise, and the item (keys and
    indices into nested inputs) it occurred for."""

    def __init__(self, type, msg: str, *, id: tuple = ()) -> None:
        super().__init__(msg)
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {_item_path(self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """A pair type does not take these inputs: the next one is tried."""


def _item_path(id: tuple) -> str:
    return "".join(str([item]) for item in id)


def _type_repr(obj) -> str:
    """``type(obj)`` as PyTorch prints it: Ember's tensor classes that are a plain
    ``torch.Tensor`` in PyTorch print as ``<class 'ember.Tensor'>``."""
    cls = _tensor_class(obj)
    return "<class 'ember.Tensor'>" if cls is Tensor else str(cls)


def _tensor_class(obj):
    """``type(obj)``, with Ember's internal Tensor classes (sparse, batched, traced tensors:
    all ``torch.Tensor`` in PyTorch) taken for ``Tensor``."""
    cls = type(obj)
    if cls is not Tensor and isinstance(obj, Tensor) and cls.__module__.startswith(
            ("ember._sparse_tensor", "ember._functorch", "ember.export")):
        return Tensor
    return cls


def default_tolerances(*inputs) -> tuple:
    """The loosest default ``(rtol, atol)`` of the dtypes of ``inputs`` (tensors or dtypes)."""
    dtypes = []
    for x in inputs:
        if isinstance(x, Tensor):
            dtypes.append(x.dtype)
        elif isinstance(x, D.dtype):
            dtypes.append(x)
        else:
            raise TypeError(f"Expected a ember.Tensor or a ember.dtype, but got {type(x)} "
                            f"instead.")
    rtols, atols = zip(*[_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(*inputs, rtol, atol, id: tuple = ()) -> tuple:
    if (rtol is None) ^ (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                   f"but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*inputs)


# -- messages -------------------------------------------------------------------------------

def _mismatch_msg(identifier, default: str, *, extra=None, abs_diff, abs_idx=None, atol,
                  rel_diff, rel_idx=None, rtol) -> str:
    equality = rtol == 0 and atol == 0
    if identifier is None:
        identifier = default
    elif callable(identifier):
        identifier = identifier(default)
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol),
                                 ("relative", rel_diff, rel_idx, rtol)):
        if idx is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {idx}"
        if not equality:
            line += f" (up to {tol} allowed)"
        msg += line + "\n"
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol, identifier=None) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(identifier, "Scalars", extra=f"Expected {expected} but got {actual}.",
                         abs_diff=abs_diff, atol=atol, rel_diff=rel_diff, rtol=rtol)


# -- arithmetic in a tensor's dtype, as PyTorch's CPU kernels do it -------------------------

class _Arith:
    """Array arithmetic in the dtype of one array: low-precision dtypes (float16, bfloat16,
    float8, complex32) are computed in float32 / complex64 and every result is rounded back
    to the dtype (its real dtype for ``abs``), as PyTorch rounds each operation."""

    def __init__(self, np_dtype) -> None:
        self.np = np_dtype
        self.kind = "c" if np_dtype in D.COMPLEX_NP else "f" if np_dtype in D.FLOATING_NP else \
            "b" if np_dtype == np.bool_ else "i"
        if np_dtype is D.CHALF_NP:
            self.wide, self.low_real = _C64, _F16
        elif np_dtype in D.OPMATH:
            self.wide, self.low_real = _F32, np_dtype
        else:
            self.wide = self.low_real = None

    @staticmethod
    def abs(x):
        """``|x|``; complex64's modulus correctly rounded (NumPy's can be one ulp off)."""
        if x.dtype == _C64:
            return np.abs(x.astype(np.complex128)).astype(_F32)
        return np.abs(x)

    def widen(self, arr):
        return arr if self.wide is None else D.astype(arr, self.wide)

    def round(self, x):
        """``x`` (computed in the wide dtype) rounded to this dtype's precision."""
        if self.wide is None:
            return x
        if x.dtype.kind == "c":
            r = x.real.astype(_F16).astype(_F32)
            i = x.imag.astype(_F16).astype(_F32)
            return (r + 1j * i).astype(_C64)
        return D.astype(D.astype(x, self.low_real), _F32)


def _isclose(a, e, rtol, atol, equal_nan: bool, arith: _Arith):
    """PyTorch's ``isclose`` of two arrays of one dtype (already widened by ``arith``)."""
    if type(equal_nan) is not bool:
        raise TypeError(f"isclose(): argument 'equal_nan' must be bool, not "
                        f"{type(equal_nan).__name__}")
    rtol, atol = float(rtol), float(atol)
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = a == e
    if equal_nan and arith.kind in "fc":
        close |= np.isnan(a) & np.isnan(e)
    if rtol == 0 and atol == 0:
        return close
    rnd = arith.round
    if arith.kind in "bi":  # integers and booleans are compared in the default float dtype
        ftype = D.get_default_dtype().np
        a, e = a.astype(ftype), e.astype(ftype)
        allowed = atol + np.abs(rtol * e)
        err = np.abs(a - e)
    else:
        allowed = rnd(atol + rnd(arith.abs(rnd(rtol * e))))
        err = rnd(arith.abs(rnd(a - e)))
    close |= np.isfinite(err) & (err <= allowed)
    return close


def _tensor_mismatch_msg(a, e, matches, arith: _Arith, *, rtol, atol, identifier=None):
    """The message for two arrays (widened by ``arith``) that do not match everywhere."""
    n = matches.size
    mismatches = n - int(np.count_nonzero(matches))
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    shape = matches.shape

    def unravel(flat: int) -> tuple:
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    if arith.np in D.FLOAT8_NP:  # bitwise: no differences, the first mismatch
        first = unravel(int(np.flatnonzero(~matches)[0]))
        ident = identifier("Tensor-likes") if callable(identifier) else \
            identifier or "Tensor-likes"
        return f"{ident} are not 'equal'!\n\n{extra}\nThe first mismatched element is at " \
               f"index {first}."
    a, e, matches = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if arith.kind in "bi":
        a, e = a.astype(_I64), e.astype(_I64)
        rnd = _Arith(_I64).round
        ftype = D.get_default_dtype().np
    else:
        rnd = arith.round
        ftype = None
    abs_diff = rnd(_Arith.abs(rnd(a - e)))
    abs_diff[matches] = 0
    abs_idx = int(np.argmax(abs_diff))  # a NaN wins, the first of equals wins
    if ftype is not None:
        rel_diff = abs_diff.astype(ftype) / np.abs(e).astype(ftype)
    else:
        rel_diff = rnd(abs_diff / rnd(_Arith.abs(e)))
    rel_diff[matches] = 0
    rel_idx = int(np.argmax(rel_diff))
    return _mismatch_msg(identifier, "Tensor-likes", extra=extra,
                         abs_diff=abs_diff[abs_idx].item(), abs_idx=unravel(abs_idx), atol=atol,
                         rel_diff=rel_diff[rel_idx].item(), rel_idx=unravel(rel_idx), rtol=rtol)


# -- pairs ----------------------------------------------------------------------------------

class _Pair:
    _extra: tuple = ()

    def __init__(self, actual, expected, *, id: tuple = (), **unused) -> None:
        self.actual = actual
        self.expected = expected
        self.id = id

    def _fail(self, type, msg: str):
        raise _Failure(type, msg, id=self.id)

    def __repr__(self) -> str:
        items = [("id", self.id), ("actual", self.actual), ("expected", self.expected),
                 *((name, getattr(self, name)) for name in self._extra)]
        return "\n".join((f"{type(self).__name__}(",
                          *(f"    {name}={value!s}," for name, value in items), ")"))


class NonePair(_Pair):
    """``None`` against anything: equal only to ``None``."""

    def __init__(self, actual, expected, **options) -> None:
        if actual is not None and expected is not None:
            raise _Unsupported
        super().__init__(actual, expected, **options)

    def compare(self) -> None:
        if not (self.actual is None and self.expected is None):
            self._fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class BooleanPair(_Pair):
    """Two ``bool`` (or ``numpy.bool_``): identical or not."""

    def __init__(self, actual, expected, *, id: tuple = (), **options) -> None:
        if not (isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_))):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), id=id, **options)

    def compare(self) -> None:
        if self.actual is not self.expected:
            self._fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class NumberPair(_Pair):
    """Two Python (or NumPy) numbers: ``int`` as int64, ``float`` as float64 and ``complex``
    as complex128 for the default tolerances."""

    _DTYPES = {int: D.int64, float: D.float64, complex: D.complex128}
    _extra = ("rtol", "atol", "equal_nan", "check_dtype")

    def __init__(self, actual, expected, *, id: tuple = (), rtol=None, atol=None,
                 equal_nan: bool = False, check_dtype: bool = False, **options) -> None:
        kinds = (int, float, complex, np.number)
        if not (isinstance(actual, kinds) and isinstance(expected, kinds)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        super().__init__(actual, expected, id=id, **options)
        self.rtol, self.atol = _tolerances(*[self._DTYPES[type(x)] for x in (actual, expected)],
                                           rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_dtype = check_dtype

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        if self.check_dtype and type(actual) is not type(expected):
            self._fail(AssertionError, f"The (d)types do not match: {type(actual)} != "
                                       f"{type(expected)}.")
        if actual == expected:
            return
        if self.equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(expected):
            return
        self._fail(AssertionError, _scalar_mismatch_msg(actual, expected, rtol=self.rtol,
                                                        atol=self.atol))


class TensorLikePair(_Pair):
    """Two tensors, or two objects of one type that ``ember.as_tensor`` takes (NumPy arrays):
    shape, layout, stride, device and dtype, then the values."""

    _extra = ("rtol", "atol", "equal_nan", "check_device", "check_dtype", "check_layout",
              "check_stride")

    def __init__(self, actual, expected, *, id: tuple = (), allow_subclasses: bool = True,
                 rtol=None, atol=None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, **options) -> None:
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and _tensor_class(actual) is not _tensor_class(expected):
            raise _Unsupported
        actual, expected = self._as_tensor(actual), self._as_tensor(expected)
        super().__init__(actual, expected, id=id, **options)
        self.rtol, self.atol = _tolerances(actual, expected, rtol=rtol, atol=atol, id=id)
        self.equal_nan = equal_nan
        self.check_device = check_device
        self.check_dtype = check_dtype
        self.check_layout = check_layout
        self.check_stride = check_stride

    @staticmethod
    def _as_tensor(x):
        if isinstance(x, Tensor):
            return x
        from ._factory import as_tensor

        try:
            return as_tensor(x)
        except Exception:
            raise _Unsupported from None

    def compare(self) -> None:
        actual, expected = self.actual, self.expected
        self._compare_attributes(actual, expected)
        if actual.device.type == "meta" or expected.device.type == "meta":
            return
        # equalized: one layout (strided where they differ) and one dtype (promoted, with
        # uint16/32/64 taken as int64); values are read on the host, so devices may differ
        if actual.layout != expected.layout:
            actual = actual if actual.layout == strided else actual.to_dense()
            expected = expected if expected.layout == strided else expected.to_dense()
        dtype = None
        if actual.dtype != expected.dtype:
            dtype = D.promote_types(D.int64 if actual.dtype in _UNSIGNED_WIDE else actual.dtype,
                                    D.int64 if expected.dtype in _UNSIGNED_WIDE
                                    else expected.dtype)
        self._compare_values(actual, expected, dtype)

    def _compare_attributes(self, actual, expected) -> None:
        def mismatch(name, a, e):
            self._fail(AssertionError, f"The values for attribute '{name}' do not match: {a} != "
                                       f"{e}.")

        if actual.shape != expected.shape:
            mismatch("shape", actual.shape, expected.shape)
        if actual.layout != expected.layout:
            if self.check_layout:
                mismatch("layout", actual.layout, expected.layout)
        elif (self.check_stride and actual.layout == strided
              and actual.stride() != expected.stride()):
            mismatch("stride()", actual.stride(), expected.stride())
        if self.check_device and actual.device != expected.device:
            mismatch("device", actual.device, expected.device)
        if self.check_dtype and actual.dtype != expected.dtype:
            mismatch("dtype", actual.dtype, expected.dtype)

    def _compare_values(self, actual, expected, dtype) -> None:
        """``dtype``: the one to compare the values in, where the tensors' differ."""
        options = {"rtol": self.rtol, "atol": self.atol, "equal_nan": self.equal_nan,
                   "dtype": dtype}
        layout = actual.layout
        if layout == sparse_coo:
            self._compare_coo(actual, expected, **options)
        elif layout == jagged:
            self._close(actual.values(), expected.values(), **options)
        elif layout != strided:
            self._compare_compressed(actual, expected, str(layout)[-3:].upper(), **options)
        else:
            value_dtype = dtype or actual.dtype
            if (value_dtype.is_floating_point and value_dtype.itemsize == 1
                    and (self.rtol != 0.0 or self.atol != 0.0)):
                self._fail(AssertionError, f"Rtol={self.rtol} and atol={self.atol} are not "
                           "supported for bitwise comparison of low dimensional floats. Please "
                           "use rtol=0.0 and atol=0.0.")
            self._close(actual, expected, **options)

    def _compare_coo(self, actual, expected, **options) -> None:
        if actual.sparse_dim() != expected.sparse_dim():
            self._fail(AssertionError, "The number of sparse dimensions in sparse COO tensors "
                                       f"does not match: {actual.sparse_dim()} != "
                                       f"{expected.sparse_dim()}")
        if actual._nnz() != expected._nnz():
            self._fail(AssertionError, "The number of specified values in sparse COO tensors "
                                       f"does not match: {actual._nnz()} != {expected._nnz()}")
        self._close(actual._indices(), expected._indices(), rtol=0, atol=0, equal_nan=False,
                    identifier="Sparse COO indices")
        self._close(actual._values(), expected._values(), identifier="Sparse COO values",
                    **options)

    def _compare_compressed(self, actual, expected, fmt: str, **options) -> None:
        if actual._nnz() != expected._nnz():
            self._fail(AssertionError, f"The number of specified values in sparse {fmt} tensors "
                                       f"does not match: {actual._nnz()} != {expected._nnz()}")
        compressed, plain = (("crow_indices", "col_indices") if fmt in ("CSR", "BSR") else
                             ("ccol_indices", "row_indices"))
        a_c, e_c = getattr(actual, compressed)(), getattr(expected, compressed)()
        index_dtype = D.promote_types(a_c.dtype, e_c.dtype)
        for name, a, e in ((compressed, a_c, e_c),
                           (plain, getattr(actual, plain)(), getattr(expected, plain)())):
            self._close(a, e, rtol=0, atol=0, equal_nan=False, dtype=index_dtype,
                        identifier=f"Sparse {fmt} {name}")
        self._close(actual.values(), expected.values(), identifier=f"Sparse {fmt} values",
                    **options)

    def _close(self, actual, expected, *, rtol, atol, equal_nan, dtype=None,
               identifier=None) -> None:
        a, e = actual._host(), expected._host()
        if dtype is not None:
            a = a if a.dtype == dtype.np else D.astype(a, dtype.np)
            e = e if e.dtype == dtype.np else D.astype(e, dtype.np)
        arith = _Arith(a.dtype)
        a, e = arith.widen(a), arith.widen(e)
        with np.errstate(all="ignore"):
            matches = _isclose(a, e, rtol, atol, equal_nan, arith)
            if matches.all():
                return
            if a.ndim == 0:
                msg = _scalar_mismatch_msg(a[()].item(), e[()].item(), rtol=rtol, atol=atol,
                                           identifier=identifier)
            else:
                msg = _tensor_mismatch_msg(a, e, matches, arith, rtol=rtol, atol=atol,
                                           identifier=identifier)
        self._fail(AssertionError, msg)


# -- origination ----------------------------------------------------------------------------

_PAIR_TYPES = (NonePair, BooleanPair, NumberPair, TensorLikePair)


def _originate(actual, expected, *, id: tuple = (), **options) -> list:
    if (isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str)
            and isinstance(expected, collections.abc.Sequence)
            and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}", id=id)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_originate(actual[i], expected[i], id=(*id, i), **options))
        return pairs
    if (isinstance(actual, collections.abc.Mapping)
            and isinstance(expected, collections.abc.Mapping)):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            raise _Failure(AssertionError,
                           f"The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(e_keys - a_keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(a_keys - e_keys)}",
                           id=id)
        keys = a_keys
        with contextlib.suppress(Exception):  # a deterministic order where there is one
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_originate(actual[key], expected[key], id=(*id, key), **options))
        return pairs
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id=id, **options)]
        except _Unsupported:
            continue
        except _Failure:
            raise
        except Exception as error:
            raise RuntimeError(
                f"Originating a {pair_type.__name__}() at item {_item_path(id)} with\n\n"
                f"{type(actual).__name__}(): {actual}\n\nand\n\n"
                f"{type(expected).__name__}(): {expected}\n\n"
                "resulted in the unexpected exception above. If you are a user and see this "
                "message during normal operation please file an issue at "
                "https://github.com/pytorch/pytorch/issues. If you are a developer and working "
                "on the comparison functions, please except the previous error and raise an "
                "expressive `ErrorMeta` instead.") from error
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type "
                              f"{_type_repr(actual)} and {_type_repr(expected)}.", id=id)


def _unwrap_dtensors(actual, expected) -> tuple:
    """Two DTensors compare as their local shards (after their placements and meshes);
    a DTensor against anything else is ambiguous."""
    api = sys.modules.get("ember.distributed.tensor._api")
    if api is None:  # never imported: there is no DTensor
        return actual, expected
    a_dt, e_dt = isinstance(actual, api.DTensor), isinstance(expected, api.DTensor)
    if a_dt and e_dt:
        if actual.placements != expected.placements:
            raise AssertionError(f"DTensor placements do not match: {actual.placements} != "
                                 f"{expected.placements}")
        if actual.device_mesh != expected.device_mesh:
            raise AssertionError(f"DTensor device meshes do not match: {actual.device_mesh} != "
                                 f"{expected.device_mesh}")
        return actual.to_local(), expected.to_local()
    if a_dt != e_dt:
        raise TypeError("Comparing a DTensor to a non-DTensor is ambiguous. Call "
                        ".full_tensor() to compare the full logical tensor or .to_local() to "
                        "compare the local shard.")
    return actual, expected


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol=None, atol=None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors are close when ``|actual - expected| <= atol + rtol * |expected|`` everywhere
    (infinities only when equal, NaNs only with ``equal_nan``) and their shape, and unless
    disabled their layout, device and dtype (and with ``check_stride`` their strides), match.
    Without tolerances each dtype's defaults apply: float16 ``(1e-3, 1e-5)``, bfloat16
    ``(1.6e-2, 1e-5)``, float32 ``(1.3e-6, 1e-5)``, float64 ``(1e-7, 1e-7)`` (complex as
    their parts), everything else exact; give both or neither. Python numbers, ``None`` and
    booleans compare as such, NumPy arrays against NumPy arrays; sequences and mappings
    compare element by element, and a failure names the item. ``msg`` replaces the message
    (a string) or rewrites it (a callable).

    Raises ``AssertionError`` on a mismatch, ``ValueError`` for one tolerance without the
    other and ``TypeError`` for inputs that cannot be compared (a tensor against a NumPy
    array, a list or a number).
    """
    __tracebackhide__ = True

    actual, expected = _unwrap_dtensors(actual, expected)
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol,
               "equal_nan": equal_nan, "check_device": check_device,
               "check_dtype": check_dtype, "check_layout": check_layout,
               "check_stride": check_stride}
    try:
        pairs = _originate(actual, expected, **options)
    except _Failure as failure:
        raise failure.to_error() from None
    failure = None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as f:
            failure = f
            break
        except Exception as error:
            raise RuntimeError(
                f"Comparing\n\n{pair!r}\n\nresulted in the unexpected exception above. If you "
                "are a user and see this message during normal operation please file an issue "
                "at https://github.com/pytorch/pytorch/issues. If you are a developer and "
                "working on the comparison functions, please except the previous error and "
                "raise an expressive `ErrorMeta` instead.") from error
    if failure is not None:
        error = failure.to_error(msg)
        failure = None  # no cycle through the traceback
        raise error from None
