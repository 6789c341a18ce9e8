"""Dtypes: ``ember.float32`` and friends, PyTorch's type promotion, the default dtype."""

from __future__ import annotations

import builtins as _b
import numbers

import ml_dtypes
import numpy as np

from ._naming import PREFIX as _PREFIX

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu",
    "float32", "float64", "complex32", "complex64", "complex128", "chalf", "cfloat", "cdouble",
    "half", "float", "double", "short", "int", "long",
    "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "can_cast",
    "finfo", "iinfo",
]



class dtype:
    """A tensor element type. Wraps a NumPy dtype; compares by identity like PyTorch's."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "is_complex",
                 "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = category >= 2 or self.np.kind == "i"
        self._category = category  # 0 bool, 1 integer, 2 floating, 3 complex

    def __repr__(self) -> str:
        return f"{_PREFIX[0]}.{self.name}"

    def __reduce__(self):
        return (_dtype_from_name, (self.name,))

    @property
    def abbr(self) -> str:
        """PyTorch's short name of the dtype: 'f32', 'bf16', 'c64', 'i64', 'u8', 'b8',
        'f8e4m3fn' ..."""
        n = self.name
        if n == "bool":
            return "b8"
        if n.startswith("float8_"):
            return "f8" + n[len("float8_"):]
        for long, short in (("bfloat", "bf"), ("float", "f"), ("complex", "c"), ("uint", "u"),
                            ("int", "i")):
            if n.startswith(long):
                return short + n[len(long):]
        return n

    def to_real(self) -> dtype:
        """The real dtype of a complex one (``complex64`` -> ``float32``); others: itself."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype of a floating one (``float64`` -> ``complex128``, ``float16`` ->
        ``complex32``, ``bfloat16`` -> ``complex64``); complex dtypes: themselves. Integer
        dtypes have none (PyTorch's error)."""
        if self._category == 3:
            return self
        c = _TO_COMPLEX.get(self)
        if c is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {_NAMES[self.name][0]}")
        return c


def _dtype_from_name(name: str) -> dtype:
    return _BY_NAME[name]


bool = dtype("bool", np.bool_, 0)  # PyTorch's name
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
#: PyTorch's "shell" unsigned dtypes (2.3+): tensors of them can be made, cast, viewed, copied,
#: printed and saved, but most CPU kernels have no case for them (``SHELL_NP``, ``no_kernel``)
#: and they promote with nothing but floats and themselves (``promote_types``)
uint16 = dtype("uint16", np.uint16, 1)
uint32 = dtype("uint32", np.uint32, 1)
uint64 = dtype("uint64", np.uint64, 1)
float16 = dtype("float16", np.float16, 2)
#: bfloat16 arrays are ``ml_dtypes``' NumPy dtype (kind 'V', not a subtype of np.floating:
#: ask ``in FLOATING_NP``, never ``dtype.kind == "f"``); computed in float32 (``OPMATH``)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
#: complex64 and complex128 hold NumPy's complex arrays. complex32 (PyTorch's ComplexHalf,
#: ``chalf``: a pair of float16, 4 bytes, real part first, as PyTorch's storage) has no NumPy
#: dtype: its arrays are ``ml_dtypes``' complex32 (``ml_dtypes>=0.6``), whose add, subtract
#: and multiply loops compute in complex64 and round each part to float16 once, bit for bit
#: PyTorch's CPU kernels; ops PyTorch has no complex32 kernel for raise its error
#: (``no_chalf_kernel``). NumPy does not know that dtype is complex: ``arr.real``,
#: ``arr.imag`` and ``astype(bool)`` are wrong for it (use ``real_part``, ``imag_part``,
#: ``astype``), its kind is 'W' (ask ``in COMPLEX_NP``) and ``np.lib.stride_tricks`` cannot
#: rebuild it (``as_strided``).
complex32 = dtype("complex32", ml_dtypes.complex32, 3)
#: PyTorch's float8 dtypes (2.1+): ``ml_dtypes``' one-byte floats (kind 'V', as bfloat16).
#: Tensors of them are made, cast (with PyTorch's conversions: ``float8_cast``), viewed,
#: copied, indexed, concatenated, compared, printed and saved; they promote with nothing
#: (PyTorch's error). Arithmetic that PyTorch's CPU kernels refuse for them (``x + x``,
#: ``sum``) computes here in float32 and rounds once, as float16's does. ``float8_e8m0fnu``
#: (powers of two, the MX formats' scales) is unsigned.
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 2)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 2)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, 2)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 2)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 2)
float8_e8m0fnu.is_signed = False
FLOAT8_DTYPES = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)
half, float, double = float16, float32, float64
chalf, cfloat, cdouble = complex32, complex64, complex128
short, int, long = int16, int32, int64

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex32, complex64, complex128, uint16, uint32, uint64, *FLOAT8_DTYPES)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update(half=half, float=float32, double=float64, short=int16, int=int32, long=int64,
                chalf=complex32, cfloat=complex64, cdouble=complex128)
_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}
#: bfloat16 meets complex numbers at complex64 (there is no bfloat16 complex dtype)
_TO_COMPLEX = {float16: complex32, bfloat16: complex64, float32: complex64,
               float64: complex128}
#: The one dtype-name table: per dtype, PyTorch's ScalarType name (in "result type Float
#: can't be cast..."), its legacy tensor type, the C type of c10's overflow errors, how a
#: printed TensorOptions spells it, and the C++ name of ``random_``'s bound errors.
_NAMES = {
    "bool": ("Bool", "BoolTensor", "bool", "bool", "bool"),
    "uint8": ("Byte", "ByteTensor", "uint8_t", "unsigned char", "unsigned char"),
    "int8": ("Char", "CharTensor", "int8_t", "signed char", "signed char"),
    "int16": ("Short", "ShortTensor", "int16_t", "short int", "short"),
    "int32": ("Int", "IntTensor", "int", "int", "int"),
    "int64": ("Long", "LongTensor", "int64_t", "long int", "long"),
    "uint16": ("UInt16", "UInt16Tensor", "uint16_t", "short unsigned int",
               "short unsigned int"),
    "uint32": ("UInt32", "UInt32Tensor", "uint32_t", "unsigned int", "unsigned int"),
    "uint64": ("UInt64", "UInt64Tensor", "uint64_t", "long unsigned int", "long unsigned int"),
    "float16": ("Half", "HalfTensor", "c10::Half", "c10::Half", "c10::Half"),
    "bfloat16": ("BFloat16", "BFloat16Tensor", "c10::BFloat16", "c10::BFloat16",
                 "c10::BFloat16"),
    "float32": ("Float", "FloatTensor", "float", "float", "float"),
    "float64": ("Double", "DoubleTensor", "double", "double", "double"),
    **{d.name: (f"Float8_{d.name[7:]}", None, f"c10::Float8_{d.name[7:]}",
                f"c10::Float8_{d.name[7:]}", f"c10::Float8_{d.name[7:]}")
       for d in FLOAT8_DTYPES},
    "complex32": ("ComplexHalf", None, "c10::complex<c10::Half>", "c10::complex<c10::Half>",
                  "c10::complex<c10::Half>"),
    "complex64": ("ComplexFloat", None, "c10::complex<float>", "c10::complex<float>",
                  "c10::complex<float>"),
    "complex128": ("ComplexDouble", None, "c10::complex<double>", "c10::complex<double>",
                   "c10::complex<double>"),
}


def scalar_type_name(d) -> str:
    """PyTorch's ScalarType name of an ember or NumPy dtype: ``Float``, ``Long``, ..."""
    return _NAMES[d.name][0]


def legacy_type_name(d) -> str | None:
    """The legacy tensor type of a dtype (``FloatTensor``), None for dtypes without one."""
    row = _NAMES.get(d.name)
    return row[1] if row else None


def c_type_name(d) -> str:
    """The C type c10 names in overflow errors: ``int64_t``, ``float``, ``c10::Half``."""
    return _NAMES[d.name][2]


def random_type_name(d) -> str:
    """The dtype as ``random_``'s bound errors spell it: ``long``, ``short``, ``float``."""
    return _NAMES[d.name][4]


def options_type_name(d) -> str:
    """The dtype as a printed ``TensorOptions`` spells it: ``long int``, ``float`` (a NumPy
    dtype outside the table: its own name)."""
    row = _NAMES.get(d.name)
    return row[3] if row else d.name


#: NumPy dtype -> ember dtype (NumPy's builtin dtypes are singletons, so lookups are cheap).
FROM_NP: dict = {d.np: d for d in ALL_DTYPES}
FROM_NP[np.dtype(np.intc)] = int32

#: The NumPy dtypes of ember's floating dtypes: the one "is this array floating" predicate
#: (``arr.dtype in FLOATING_NP``, a set lookup cheaper than ``kind == "f"``). bfloat16's NumPy
#: kind is 'V', so a test of ``dtype.kind == "f"`` misses it.
FLOATING_NP = frozenset(d.np for d in ALL_DTYPES if d.is_floating_point)
BFLOAT16_NP = bfloat16.np
#: the float8 dtypes' NumPy dtypes (``arr.dtype in FLOAT8_NP``)
FLOAT8_NP = frozenset(d.np for d in FLOAT8_DTYPES)
#: the complex dtypes' NumPy dtypes (``arr.dtype in COMPLEX_NP``: "is it complex"), complex32's
#: ``ml_dtypes`` dtype included
COMPLEX_NP = frozenset((complex32.np, complex64.np, complex128.np))
#: complex32's NumPy dtype (``ml_dtypes.complex32``): ``arr.dtype is CHALF_NP``
CHALF_NP = complex32.np
#: floating or complex: the dtypes that can require grad (PyTorch's "floating point and
#: complex"), and that a true division or ``exp`` keeps rather than turning into floats
INEXACT_NP = FLOATING_NP | COMPLEX_NP
#: PyTorch's opmath type, by low-precision NumPy dtype (``arr.dtype in OPMATH``: "is it
#: computed in float32"): float16 and bfloat16 are computed in float32 and rounded back once.
#: NumPy cannot promote bfloat16 with float16 and BLAS has no bfloat16 kernels, so kernels
#: widen such arrays before computing (``widen``/``narrow``, ``opmath``).
OPMATH = {float16.np: float32.np, bfloat16.np: float32.np, **{n: float32.np for n in FLOAT8_NP}}


def real_part(arr):
    """``arr.real`` (a view), right for complex32 too: NumPy takes an ``ml_dtypes`` complex32
    array for a real one, so its real parts are read as float16 through a view."""
    if arr.dtype is CHALF_NP:
        return arr[..., None].view(float16.np)[..., 0]
    return arr.real


def imag_part(arr):
    """``arr.imag`` (a view) of a complex array, complex32 included (see ``real_part``)."""
    if arr.dtype is CHALF_NP:
        return arr[..., None].view(float16.np)[..., 1]
    return arr.imag


def astype(arr, np_dtype, copy: _b.bool = True):
    """``arr.astype(np_dtype)``, right for complex32 sources (``ml_dtypes`` casts a complex32
    to bool by its real part only; PyTorch: nonzero real or imaginary part) and for float8
    targets (``float8_cast``)."""
    if arr.dtype is CHALF_NP and np_dtype == bool.np:
        pairs = arr[..., None].view(float16.np)
        return (pairs[..., 0] != 0) | (pairs[..., 1] != 0)
    if np_dtype in FLOAT8_NP and arr.dtype != np_dtype:
        return float8_cast(arr, np_dtype)
    return arr.astype(np_dtype, copy=copy)


_E4M3FN_NP = float8_e4m3fn.np
_E5M2_NP = float8_e5m2.np
_E8M0_NP = float8_e8m0fnu.np


def float8_cast(arr, np_dtype):
    """``arr`` cast to a float8 NumPy dtype as PyTorch's CPU casts do, where they differ
    from ``ml_dtypes``' (checked bit for bit, tests/core/test_float8.py): ``float8_e4m3fn``
    saturates (every finite value past its range, and infinity, becomes +-448; ml_dtypes
    gives NaN), a NaN in ``float8_e5m2`` is ``0x7F`` (with its sign; ml_dtypes ``0x7E``),
    and ``float8_e8m0fnu`` takes the magnitude (no sign bit) with 0 as its smallest value
    2**-127 (ml_dtypes: NaN for both). Others are ``ml_dtypes``' round-to-nearest-even."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is the format's business
        return _float8_cast(arr, np_dtype)


def _float8_cast(arr, np_dtype):
    from ._device import xp_of

    xp = xp_of(arr)
    src = arr
    if arr.dtype in COMPLEX_NP:
        src = real_part(arr)
    if src.dtype.kind not in "f" or src.dtype.itemsize < 4:
        src = src.astype(float32.np)  # integers, bool, float16, bfloat16: exact in float32
    if np_dtype == _E4M3FN_NP:
        lim = 448.0
        src = xp.where(xp.isnan(src), src, xp.clip(src, -lim, lim))
        return src.astype(np_dtype)
    if np_dtype == _E5M2_NP:
        out = src.astype(np_dtype)
        nan = xp.isnan(src)
        if nan.any():
            bits = out.view(np.uint8)
            bits[nan] = (bits[nan] & 0x80) | 0x7F
        return out
    if np_dtype == _E8M0_NP:
        mag = xp.abs(src)
        out = mag.astype(np_dtype)
        zero = mag == 0
        if zero.any():
            out.view(np.uint8)[zero] = 0
        return out
    return src.astype(np_dtype)



def no_kernel(kernel: str, np_dtype) -> NotImplementedError:
    """PyTorch's dispatch error for a CPU kernel without a case for ``np_dtype``:
    ``"flip_cpu" not implemented for 'UInt32'`` (``kernel`` in PyTorch's words)."""
    return NotImplementedError(f"\"{kernel}\" not implemented for "
                               f"'{scalar_type_name(np_dtype)}'")


def no_chalf_kernel(kernel: str) -> NotImplementedError:
    """``no_kernel`` for complex32: ``"sum_cpu" not implemented for 'ComplexHalf'``."""
    return no_kernel(kernel, CHALF_NP)


#: the shell unsigned dtypes' NumPy dtypes (``arr.dtype in SHELL_NP``)
SHELL_NP = frozenset((uint16.np, uint32.np, uint64.np))
_SHELL_CHALF = SHELL_NP | {CHALF_NP}
_CHALF_ONLY = frozenset((CHALF_NP,))
_SHELL_CHALF_BOOL = _SHELL_CHALF | {np.dtype(np.bool_)}  # the reflection/replication pads

#: The one table of PyTorch's CPU dispatch gaps for ember's rare dtypes: per ember op (or
#: kernel-sharing op family), the kernel PyTorch's error names and the NumPy dtypes it has no
#: case for. The elementwise factories read it when they build an op (``binary_op``,
#: ``unary_op``: float32 skips the check, other dtypes pay one set lookup); other ops ask
#: ``check_kernel``. Ops absent here compute every dtype (PyTorch 2.13's CPU kernels, probed;
#: ``tests/core/test_uint_dtypes.py``).
MISSING_KERNELS: dict[str, tuple[str, frozenset]] = {
    # elementwise
    "add": ("add_stub", SHELL_NP), "sub": ("add_stub", SHELL_NP),
    "floor_divide": ("div_floor_cpu", SHELL_NP), "div_trunc": ("div_trunc_cpu", SHELL_NP),
    "remainder": ("remainder_cpu", SHELL_NP), "fmod": ("fmod_cpu", SHELL_NP),
    "pow": ("pow", SHELL_NP), "square": ("pow", SHELL_NP),
    "bitwise_left_shift": ("lshift_cpu", SHELL_NP),
    "bitwise_right_shift": ("rshift_cpu", SHELL_NP),
    "lt": ("lt_cpu", SHELL_NP), "le": ("le_cpu", SHELL_NP), "gt": ("gt_cpu", SHELL_NP),
    "ge": ("ge_cpu", SHELL_NP),
    "maximum": ("maximum_cpu", SHELL_NP), "fmax": ("maximum_cpu", SHELL_NP),
    "minimum": ("minimum_cpu", SHELL_NP), "fmin": ("minimum_cpu", SHELL_NP),
    "logical_and": ("logical_and_cpu", _SHELL_CHALF),
    "logical_or": ("logical_or_cpu", _SHELL_CHALF),
    "logical_xor": ("logical_xor_cpu", _SHELL_CHALF),
    "logical_not": ("logical_not_cpu", _SHELL_CHALF),
    "hypot": ("hypot_cpu", SHELL_NP), "gcd": ("gcd_cpu", SHELL_NP),
    "heaviside": ("heaviside_cpu", SHELL_NP),
    "lcm": ("lcm_cpu", SHELL_NP),
    "neg": ("neg_cpu", SHELL_NP), "abs": ("abs_cpu", SHELL_NP),
    "sign": ("sign_cpu", SHELL_NP), "sgn": ("sign_cpu", SHELL_NP),
    "bitwise_not": ("bitwise_not_cpu", SHELL_NP),
    "relu": ("clamp_min_scalar_cpu", SHELL_NP), "clamp_min": ("clamp_min_scalar_cpu", SHELL_NP),
    "clamp_max": ("clamp_max_scalar_cpu", SHELL_NP), "clamp": ("clamp_scalar_cpu", SHELL_NP),
    "clamp_tensor": ("clamp_cpu", SHELL_NP),
    "addcmul": ("addcmul_cpu_out", SHELL_NP),
    # reductions and sorting
    "max": ("max_all", SHELL_NP), "min": ("min_all", SHELL_NP),
    "max_dim": ("max_cpu", SHELL_NP), "min_dim": ("min_cpu", SHELL_NP),
    "amax": ("max_values_cpu", SHELL_NP), "amin": ("min_values_cpu", SHELL_NP),
    "argmax": ("argmax_cpu", SHELL_NP), "argmin": ("argmin_cpu", SHELL_NP),
    "aminmax": ("aminmax_cpu", SHELL_NP),
    "mode": ("mode_cpu", SHELL_NP), "kthvalue": ("kthvalue_cpu", SHELL_NP),
    "cummax": ("cummax_cpu", SHELL_NP), "cummin": ("cummin_cpu", SHELL_NP),
    "topk": ("topk_cpu", SHELL_NP), "count_nonzero": ("nonzero_count_cpu", SHELL_NP),
    "nonzero": ("nonzero_count_cpu", SHELL_NP), "bincount": ("bincount_cpu", SHELL_NP),
    "searchsorted": ("searchsorted_out_cpu", SHELL_NP), "isin": ("isin_default_cpu", SHELL_NP),
    "unique": ("unique", _CHALF_ONLY), "unique_dim": ("unique_dim", _CHALF_ONLY),
    "trace": ("trace", SHELL_NP), "dot": ("dot", SHELL_NP), "mm": ("addmm_impl_cpu_", SHELL_NP),
    # shape and indexing
    "flip": ("flip_cpu", _SHELL_CHALF), "tril": ("tril", SHELL_NP), "triu": ("triu", SHELL_NP),
    "index_select": ("index_select", SHELL_NP), "take": ("take_cpu", _SHELL_CHALF),
    "put": ("take_put_cpu", _SHELL_CHALF),
    "gather": ("scatter_gather_tensor_cpu", _SHELL_CHALF),
    "scatter": ("scatter_gather_tensor_cpu", _SHELL_CHALF),
    "scatter_value": ("scatter_gather_scalar_cpu", _SHELL_CHALF),
    "index_add": ("index_add_", SHELL_NP), "index_copy": ("index_copy_cpu", SHELL_NP),
    "index_put": ("index_put", SHELL_NP), "index_fill": ("index_fill_cpu", SHELL_NP),
    "index_reduce": ("index_func_", _SHELL_CHALF),
    "masked_fill": ("masked_fill", SHELL_NP), "masked_select": ("masked_select", SHELL_NP),
    "masked_scatter": ("masked_scatter", _SHELL_CHALF),
    "reflection_pad1d": ("reflection_pad1d", _SHELL_CHALF_BOOL),
    "reflection_pad2d": ("reflection_pad2d", _SHELL_CHALF_BOOL),
    "reflection_pad3d": ("reflection_pad3d", _SHELL_CHALF_BOOL),
    "replication_pad1d": ("replication_pad1d", _SHELL_CHALF_BOOL),
    "replication_pad2d": ("replication_pad2d", _SHELL_CHALF_BOOL),
    "replication_pad3d": ("replication_pad3d", _SHELL_CHALF_BOOL),
    # factories and random
    "arange": ("arange_cpu", _SHELL_CHALF), "linspace": ("linspace_cpu", _SHELL_CHALF),
    "eye": ("eye", _SHELL_CHALF),
    "randperm": ("randperm", SHELL_NP), "bernoulli": ("bernoulli_scalar_cpu_", SHELL_NP),
    "bernoulli_tensor": ("bernoulli_tensor_cpu_self_", SHELL_NP),
    "bernoulli_tensor_p": ("bernoulli_tensor_cpu_p_", SHELL_NP),
}


def missing_kernel(op: str) -> tuple[str | None, frozenset]:
    """``(kernel, dtypes)`` of op ``op`` from ``MISSING_KERNELS`` (``(None, frozenset())``
    for an op whose kernel has every dtype)."""
    return MISSING_KERNELS.get(op, (None, frozenset()))


def check_kernel(op: str, np_dtype) -> None:
    """Raise PyTorch's dispatch error when op ``op``'s CPU kernel has no case for
    ``np_dtype`` (``MISSING_KERNELS``): one dict lookup and one set lookup."""
    kernel, missing = MISSING_KERNELS[op]
    if np_dtype in missing:
        raise no_kernel(kernel, np_dtype)


def as_strided(xp, arr, shape, strides, **kwargs):
    """``xp.lib.stride_tricks.as_strided(arr, shape, strides)`` for any ember dtype: NumPy
    rebuilds the view from the array interface, whose type string ('<W4', '<f1') it cannot
    read for complex32 and float8, so such an array is strided as the unsigned integer of its
    itemsize and viewed back."""
    bits = _AS_BITS.get(arr.dtype)
    if bits is not None:
        return xp.lib.stride_tricks.as_strided(arr.view(bits), shape, strides,
                                               **kwargs).view(arr.dtype)
    return xp.lib.stride_tricks.as_strided(arr, shape, strides, **kwargs)



def strided_view(xp, arr, shape, strides):
    """``arr``'s memory seen with ``shape`` and ``strides`` (bytes), writable where ``arr`` is
    (NumPy's ``as_strided`` keeps that flag only when asked; CuPy has none)."""
    if arr.__class__ is np.ndarray:
        return as_strided(np, arr, shape, strides, writeable=arr.flags.writeable)
    return as_strided(xp, arr, shape, strides)

_UINT32 = np.dtype(np.uint32)
#: the dtypes whose array interface NumPy cannot read back ('<W4' for complex32, '<f1' for
#: float8_e5m2 and the other float8 formats): strided as the unsigned type of their size
_AS_BITS = {CHALF_NP: _UINT32, **{n: np.dtype(np.uint8) for n in FLOAT8_NP}}


def opmath_np(np_dtype):
    """The NumPy dtype ``np_dtype`` is computed in: float32 for float16 and bfloat16, else
    itself."""
    return OPMATH.get(np_dtype, np_dtype)


def np_finfo(np_dtype):
    """``np.finfo`` that also knows bfloat16 (through ``ml_dtypes.finfo``) and complex32
    (float16's, as complex64 has float32's)."""
    if np_dtype == BFLOAT16_NP or np_dtype in FLOAT8_NP:
        return ml_dtypes.finfo(np_dtype)
    return np.finfo(float16.np if np_dtype == CHALF_NP else np_dtype)


def widen(a):
    """``a`` in the dtype it is computed in (float16 and bfloat16 arrays as float32 copies;
    anything else, Python numbers included, as it is)."""
    dt = getattr(a, "dtype", None)
    if dt is BFLOAT16_NP:
        return bf16_to_f32(a)
    wide = OPMATH.get(dt)
    return a if wide is None else a.astype(wide)


def bf16_to_f32(a):
    """A bfloat16 array as a float32 copy, the same layout. On the CPU each bfloat16 is the
    upper half of its float32 (NaN payloads included), so one integer shift widens it, 2.4x
    faster than ml_dtypes' cast (0.18 against 0.44 ms a million elements)."""
    if a.__class__ is np.ndarray:
        return np.left_shift(a.view(np.uint16), 16, dtype=np.uint32).view(np.float32)
    return a.astype(np.float32)


def narrow(r, np_dtype):
    """The end of a widened computation: ``r`` rounded once to ``np_dtype`` when that is
    float16 or bfloat16 (and ``r`` is not of it already), else ``r`` as it is."""
    if np_dtype in OPMATH and r.dtype != np_dtype:
        return r.astype(np_dtype)
    return r


def opmath(fn):
    """``fn(array, *args)`` computing float16 and bfloat16 arrays in float32 and rounding a
    float32 result back to the input's dtype once (PyTorch's CPU kernels); other dtypes pass
    through untouched."""

    def run(a, *args, **kwargs):
        low = OPMATH.get(a.dtype)
        if low is None:
            return fn(a, *args, **kwargs)
        r = fn(a.astype(low), *args, **kwargs)
        return r.astype(a.dtype) if getattr(r, "dtype", None) == low else r

    run.__name__ = getattr(fn, "__name__", "opmath")
    run.__doc__ = fn.__doc__
    return run


#: the NumPy dtypes ``from_numpy`` takes, as PyTorch's error lists them
NUMPY_NAMES = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
               "uint64, uint32, uint16, uint8, and bool")


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return FROM_NP[np_dtype]
    except KeyError:
        try:
            return FROM_NP[np.dtype(np_dtype)]
        except (KeyError, TypeError):
            try:
                kind = np.dtype(np_dtype).type
                name = f"{kind.__module__}.{kind.__name__}"
            except TypeError:
                name = str(np_dtype)
            raise TypeError(f"can't convert np.ndarray of type {name}. The only supported "
                            f"types are: {NUMPY_NAMES}.") from None


def to_dtype(d, fn: str | None = None) -> dtype:
    """Normalise a dtype argument (ember dtype, NumPy dtype, Python type or name); what is
    none of them is PyTorch's parser error (``fn``: the function it names)."""
    if d.__class__ is dtype:
        return d
    if d is _b.bool:
        return bool
    if d is _b.float:
        return float64  # PyTorch maps the Python type to double, not the default dtype
    if d is _b.int:
        return int64
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if hasattr(d, "dtype") and not isinstance(d, type):
        raise TypeError(f"expected a dtype, got {type(d).__name__}")
    if not isinstance(d, (type, np.dtype, str)):
        where = f"{fn}(): " if fn else ""
        kind = type(d)
        got = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__} ({d!r})"
        raise TypeError(f"{where}argument 'dtype' must be torch.dtype, not {got}")
    if fn and isinstance(d, str):  # a name NumPy does not know either: the factory's error
        try:
            np.dtype(d)
        except TypeError:
            raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not str") from None
    return from_numpy_dtype(d)


# -- default dtype -------------------------------------------------------------------------

_default = [float32]


def get_default_dtype() -> dtype:
    """The floating dtype of factories and of Python floats (``ember.float32`` at start)."""
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the floating dtype of factories and of Python floats (process-wide, as in PyTorch)."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d
    _PROMOTE_CACHE.clear()


# -- promotion -----------------------------------------------------------------------------

#: rank of the floating dtypes in PyTorch's lattice: float16 and bfloat16 share one rank and
#: meet at float32 (NumPy refuses to promote bfloat16 with float16, so ember never asks it)
_FLOAT_RANK = {float16: 1, bfloat16: 1, float32: 2, float64: 3}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """PyTorch's ``promote_types``: the category wins, then PyTorch's lattice inside it
    (``promote_types(bfloat16, float16)`` is ``float32``)."""
    if type1 is type2:
        return type1
    try:
        f8 = type1.np in FLOAT8_NP or type2.np in FLOAT8_NP
    except AttributeError:
        for pos, x in enumerate((type1, type2), 1):
            if not isinstance(x, dtype):
                raise _not_dtype("promote_types", f"type{pos}", pos, x) from None
        raise
    if f8:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to promote "
                           f"{scalar_type_name(type1)} and {scalar_type_name(type2)}")
    c1, c2 = type1._category, type2._category
    if (type1.np in SHELL_NP or type2.np in SHELL_NP) and 2 not in (c1, c2):
        # the shell dtypes meet floats (the float wins) and nothing else, not even each other
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {scalar_type_name(type1)} and "
                           f"{scalar_type_name(type2)}")
    if c1 != c2:
        if c1 == 0:
            return type2
        if c2 == 0:
            return type1
        if c1 == 3 and c2 == 2 or c1 == 2 and c2 == 3:
            # complex meets float: the complex type of the wider of the two real types
            return promote_types(type1.to_real(), type2.to_real()).to_complex()
        return type1 if c1 > c2 else type2  # integer meets float (complex): that type
    if c1 == 2:
        r1, r2 = _FLOAT_RANK[type1], _FLOAT_RANK[type2]
        if r1 == r2:
            return float32
        return type1 if r1 > r2 else type2
    if c1 == 3:
        return complex128 if complex128 in (type1, type2) else complex64
    return FROM_NP[np.promote_types(type1.np, type2.np)]


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # c10's combine_categories: a lower-priority operand only matters if it is of a higher
    # category (a float scalar on an int tensor), or if the higher one is bool.
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        # a complex scalar keeps a floating tensor's precision (c10: toComplexType(higher))
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


_PROMOTE_CACHE: dict = {}
_PY_FLOAT = object()  # cache-key marker for a Python float operand (a dtype == "f" is True!)


def default_complex_dtype() -> dtype:
    """The dtype of Python complex numbers: the default dtype's complex type (``complex64``
    while the default is float32, ``complex128`` with float64), as in PyTorch."""
    return _default[0].to_complex()


def _scalar_dtype(x) -> dtype:
    if isinstance(x, _b.bool):
        return bool
    if isinstance(x, _b.int):
        return int64
    if isinstance(x, np.generic):
        if x.dtype in COMPLEX_NP:
            return default_complex_dtype()
        return _default[0] if x.dtype in FLOATING_NP else from_numpy_dtype(x.dtype)
    if isinstance(x, _b.complex):
        return default_complex_dtype()
    return _default[0]


_PY_NUMBERS = frozenset((_b.int, _b.float, _b.bool, _b.complex))


def result_type(*operands) -> dtype:
    """PyTorch's ``result_type`` over tensors and Python scalars."""
    dim_t = zero_t = scalar_t = None
    for x in operands:
        data = getattr(x, "_data", None)
        if data is None:
            if x.__class__ not in _PY_NUMBERS and not isinstance(x, (numbers.Number,
                                                                     np.generic)):
                raise _result_type_error(operands)
            scalar_t = promote_types(scalar_t, _scalar_dtype(x)) if scalar_t else _scalar_dtype(x)
            continue
        d = FROM_NP[data.dtype]
        if data.ndim:
            dim_t = promote_types(dim_t, d) if dim_t else d
        else:
            zero_t = promote_types(zero_t, d) if zero_t else d
    return _combine_categories(dim_t, _combine_categories(zero_t, scalar_t))


def _arg_type_name(x) -> str:
    if hasattr(x, "_data"):
        return "Tensor"
    if isinstance(x, (list, tuple)):
        names = ", ".join(dict.fromkeys(_arg_type_name(e) for e in x))
        return f"{type(x).__name__} of [{names}]"
    return type(x).__name__


def _result_type_error(operands) -> TypeError:
    """PyTorch's overload-mismatch ``TypeError`` for ``result_type`` on a non-number."""
    names = [_arg_type_name(x) for x in operands]
    is_t = [n == "Tensor" for n in names]
    is_n = [isinstance(x, (numbers.Number, np.generic)) for x in operands]
    lines = [f"result_type() received an invalid combination of arguments - got "
             f"({', '.join(names)}), but expected one of:"]
    for sig, ok in (("Tensor tensor, Tensor other", (is_t, is_t)),
                    ("Number scalar, Tensor tensor", (is_n, is_t)),
                    ("Tensor tensor, Number other", (is_t, is_n)),
                    ("Number scalar1, Number scalar2", (is_n, is_n))):
        marks = ", ".join(n if ok[min(i, 1)][i] else f"!{n}!" for i, n in enumerate(names))
        lines.append(f" * ({sig})\n      didn't match because some of the arguments have "
                     f"invalid types: ({marks})")
    return TypeError("\n".join(lines) + "\n")


def _not_dtype(fn: str, param: str, pos: int, x) -> TypeError:
    return TypeError(f"{fn}(): argument '{param}' (position {pos}) must be torch.dtype, not "
                     f"{type(x).__name__}")


def binary_result_np(a: np.ndarray, b) -> np.dtype:
    """Result NumPy dtype of a binary op on array ``a`` and array-or-scalar ``b`` (cached)."""
    if b.__class__ is _b.float:
        key = (a.dtype, _PY_FLOAT)
    else:
        key = (a.dtype, b.dtype, a.ndim == 0, b.ndim == 0)
    r = _PROMOTE_CACHE.get(key)
    if r is None:
        r = _PROMOTE_CACHE[key] = _binary_result_uncached(key).np
    return r


def _binary_result_uncached(key) -> dtype:
    if key[1] is _PY_FLOAT:
        ta = FROM_NP[key[0]]
        return _combine_categories(ta, _default[0])
    ta, tb = FROM_NP[key[0]], FROM_NP[key[1]]
    a0, b0 = key[2], key[3]
    if a0 == b0:
        return promote_types(ta, tb)
    if a0:  # a is zero-dim, b dimensioned
        return _combine_categories(tb, ta)
    return _combine_categories(ta, tb)


def can_cast(from_: dtype, to: dtype) -> _b.bool:
    """PyTorch's ``can_cast``: no casting to a lower category."""
    try:
        return from_._category <= to._category
    except AttributeError:
        for pos, (param, x) in enumerate((("from_", from_), ("to", to)), 1):
            if not isinstance(x, dtype):
                raise _not_dtype("can_cast", param, pos, x) from None
        raise


class finfo:
    """Machine limits of a floating dtype, like ``torch.finfo``."""

    def __init__(self, type: dtype | None = None):
        try:
            type = to_dtype(type) if type is not None else _default[0]
        except (TypeError, ValueError, KeyError):
            raise _not_dtype("finfo", "type", 1, type) from None
        type = type.to_real()  # a complex dtype's limits are its real type's (PyTorch)
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        fi = np_finfo(type.np)
        self.dtype = type.name
        self.bits = fi.bits
        self.eps = _pyfloat(fi.eps)
        self.max = _pyfloat(fi.max)
        self.min = _pyfloat(fi.min)
        self.tiny = self.smallest_normal = _pyfloat(fi.smallest_normal)
        # PyTorch's resolution is the power of ten itself (1e-06), not its rounding to the type
        self.resolution = 10.0 ** -fi.precision
        if type.np in FLOAT8_NP:
            # PyTorch's float8 precision is floor(-log10(eps)) = 0 (ml_dtypes: 1), and its
            # float8_e5m2fnuz epsilon is c10's 2**-3 (ml_dtypes: 2**-2, the format's spacing)
            self.resolution = 1.0
            if type is float8_e5m2fnuz:
                self.eps = 0.125

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype, like ``torch.iinfo``."""

    def __init__(self, type: dtype):
        try:
            type = to_dtype(type)
        except (TypeError, ValueError, KeyError):
            raise _not_dtype("iinfo", "type", 1, type) from None
        if type.is_floating_point or type.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.min = _b.int(info.min)
        self.max = _pyint(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _pyfloat(x):
    return np.float64(x).item()


def _pyint(x):
    return np.int64(x).item() if x <= np.iinfo(np.int64).max else np.uint64(x).item()
