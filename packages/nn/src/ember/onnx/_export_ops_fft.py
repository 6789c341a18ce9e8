"""ONNX export mappings: complex values, the discrete Fourier transforms (``ember.fft``) and
the inverse short-time Fourier transform (registered in the table of ``_export_ops.py``).

ONNX has no complex tensor type that onnxruntime runs. Inside a graph a complex value is
carried as a real tensor with a trailing axis of 2 (real, imaginary): the convention of ONNX's
``DFT`` and ``STFT``. The program refuses a complex graph input or output (naming it), and a
node that reads or makes a complex value is exported only by the mappings registered here
(:data:`COMPLEX_OPS`); any other mapping would read the pairs as a real tensor, so such a node
is listed in the one unsupported-operator error instead.

The transforms are ONNX's forward ``DFT`` (opset 17; from opset 20 it takes the axis as an
input), one axis at a time: ``n``/``s`` trim or zero-pad the signal first, ``norm`` scales the
result. An inverse transform is the conjugate of the forward transform of the conjugate
(onnxruntime's inverse DFT loses precision at sizes that are not powers of 2: 1e-8 relative in
float64). A complex-to-real transform (``irfft``, ``hfft``) rebuilds the full Hermitian spectrum
along its last axis and keeps the real part, which ignores the imaginary parts of the zero and
Nyquist bins as PocketFFT does. ``istft`` overlap-adds its windowed frames with a
``ConvTranspose`` whose kernel is the identity.
"""

from __future__ import annotations

import math

import numpy as np

from . import _export_ops_math, _export_ops_tensor  # noqa: F401 (mappings chained below)
from ._export_graph import COMPLEX_PARTS, INT64_MAX, Unsupported, is_complex
from ._export_ops import (
    MAPPINGS,
    Call,
    Mapping,
    decode,
    is_tensor_arg,
    norm_axis,
    reduce,
    squeeze,
    unsqueeze,
)
from ._export_ops_math import _scalar_tensor

__all__ = ["COMPLEX_OPS"]

#: ops whose mappings read and make complex values (as real pairs); ``stft``'s mapping
#: (``_export_ops_tensor.py``) returns ONNX STFT's pairs, which is its complex result
COMPLEX_OPS: set = {"stft"}


# -- complex values as real pairs ---------------------------------------------------------------

def parts_dtype(dtype: str) -> str:
    """The real dtype of a complex dtype's parts (a real dtype is its own)."""
    return COMPLEX_PARTS.get(dtype, dtype)


def _is_complex_arg(c: Call, arg) -> bool:
    if is_tensor_arg(arg):
        return is_complex(c.arg_meta(arg)["dtype"])
    return isinstance(arg, dict) and "complex" in arg


def _involves_complex(c: Call) -> bool:
    """Whether the node reads or makes a complex value (tensor or number)."""
    if any(o is not None and is_complex(o["dtype"]) for o in c.outputs):
        return True

    def walk(v):
        if isinstance(v, (list, tuple)):
            return any(walk(x) for x in v)
        return _is_complex_arg(c, v)
    return any(walk(v) for v in c.p.values())


def pairs(c: Call, arg, d: str) -> str:
    """A tensor or number argument as complex pairs ``[..., 2]`` of real dtype ``d``."""
    if isinstance(arg, str):
        arg = c.p.get(arg)
    if is_tensor_arg(arg):
        src = c.arg_meta(arg)["dtype"]
        name = c.b.value(arg["tensor"])
        if is_complex(src):
            return c.b.cast(name, COMPLEX_PARTS[src], d)
        x = unsqueeze(c, c.b.cast(name, src, d), [-1])
        zeros = c.add("ConstantOfShape", [c.b.shape_of(x)], value=_scalar_tensor(c, 0, d))
        return c.add("Concat", [x, zeros], axis=-1)
    if isinstance(arg, dict) and "complex" in arg:
        re, im = arg["complex"]
        return c.const([float(re), float(im)], d)
    value = decode(arg)
    if isinstance(value, (bool, int, float)):
        return c.const([float(value), 0.0], d)
    raise Unsupported(f"expected a tensor or a number, got {arg!r}")


def real_part(c: Call, p: str) -> str:
    return c.add("Gather", [p, c.const(np.int64(0), "int64")], axis=-1)


def imag_part(c: Call, p: str) -> str:
    return c.add("Gather", [p, c.const(np.int64(1), "int64")], axis=-1)


def make_pairs(c: Call, re: str, im: str) -> str:
    return c.add("Concat", [unsqueeze(c, re, [-1]), unsqueeze(c, im, [-1])], axis=-1)


def conj_pairs(c: Call, p: str, d: str) -> str:
    return c.add("Mul", [p, c.const([1.0, -1.0], d)])


def cmul(c: Call, a: str, b: str) -> str:
    """``(ar + i ai) (br + i bi)`` of two pair tensors (broadcasting)."""
    ar, ai, br, bi = real_part(c, a), imag_part(c, a), real_part(c, b), imag_part(c, b)
    re = c.add("Sub", [c.add("Mul", [ar, br]), c.add("Mul", [ai, bi])])
    im = c.add("Add", [c.add("Mul", [ar, bi]), c.add("Mul", [ai, br])])
    return make_pairs(c, re, im)


def _real_scalar(c: Call, arg, d: str) -> str | None:
    """A real (non-complex) tensor or number as a factor for pairs (a trailing axis of 1),
    None for a complex one."""
    if _is_complex_arg(c, arg):
        return None
    if is_tensor_arg(arg):
        return unsqueeze(c, c.t(arg, d), [-1])
    return c.const(float(decode(arg)), d)


def complex_mapping(*names: str, since: int = 11):
    """Register the decorated function as the mapping of ``names`` that reads and makes
    complex values; where an op has a real mapping already (registered before), a use
    without a complex value goes on to it."""
    def decorate(fn):
        for name in names:
            prev = MAPPINGS.get(name)
            if prev is None:
                MAPPINGS[name] = Mapping(name, fn, since)
            else:
                def chained(c: Call, fn=fn, prev=prev):
                    return fn(c) if _involves_complex(c) else prev.fn(c)
                MAPPINGS[name] = Mapping(name, chained, prev.since)
            COMPLEX_OPS.add(name)
        return fn
    return decorate


# -- complex views, parts and arithmetic --------------------------------------------------------

@complex_mapping("real")
def _real(c: Call):
    return real_part(c, pairs(c, "input", c.out_dtype))


@complex_mapping("imag")
def _imag(c: Call):
    return imag_part(c, pairs(c, "input", c.out_dtype))


@complex_mapping("view_as_real")
def _view_as_real(c: Call):
    return pairs(c, "input", c.out_dtype)


@complex_mapping("view_as_complex")
def _view_as_complex(c: Call):
    """A real ``[..., 2]`` tensor already is its complex value's pairs."""
    return c.t("input", parts_dtype(c.out_dtype))


@complex_mapping("complex")
def _complex(c: Call):
    d = parts_dtype(c.out_dtype)
    shape = c.b.sizes(c.out_shape)
    re = c.add("Expand", [c.t("real", d), shape])
    im = c.add("Expand", [c.t("imag", d), shape])
    return make_pairs(c, re, im)


@complex_mapping("polar")
def _polar(c: Call):
    d = parts_dtype(c.out_dtype)
    r, theta = c.t("abs", d), c.t("angle", d)
    return make_pairs(c, c.add("Mul", [r, c.add("Cos", [theta])]),
                      c.add("Mul", [r, c.add("Sin", [theta])]))


def _abs_pairs(c: Call, p: str) -> str:
    return c.add("Sqrt", [reduce(c, "ReduceSumSquare", p, [-1], False)])


@complex_mapping("abs", "absolute")
def _abs(c: Call):
    return _abs_pairs(c, pairs(c, next(iter(c.p)), c.out_dtype))


def atan2(c: Call, y: str, x: str, d: str) -> str:
    """``atan2(y, x)`` (ONNX has only ``Atan``): ``atan(y / x)`` moved by pi into the left
    half plane, +-pi/2 on the imaginary axis, 0 at the origin."""
    zero = c.const(0.0, d)
    base = c.add("Atan", [c.add("Div", [y, x])])
    left = c.add("Where", [c.add("Less", [y, zero]), c.add("Sub", [base, c.const(math.pi, d)]),
                           c.add("Add", [base, c.const(math.pi, d)])])
    out = c.add("Where", [c.add("Less", [x, zero]), left, base])
    axis = c.add("Where", [c.add("Greater", [y, zero]), c.const(math.pi / 2, d),
                           c.add("Where", [c.add("Less", [y, zero]),
                                           c.const(-math.pi / 2, d), zero])])
    return c.add("Where", [c.add("Equal", [x, zero]), axis, out])


@complex_mapping("angle")
def _angle(c: Call):
    d = c.out_dtype
    p = pairs(c, "input", d)
    return atan2(c, imag_part(c, p), real_part(c, p), d)


@complex_mapping("conj", "conj_physical")
def _conj(c: Call):
    d = parts_dtype(c.out_dtype)
    return conj_pairs(c, pairs(c, "input", d), d)


@complex_mapping("resolve_conj", "resolve_neg", "positive", "clone", "detach",
                 "Tensor.contiguous", "Tensor.clone", "Tensor.detach")
def _same(c: Call):
    """The values themselves (a conjugate or negative bit is already applied in the graph)."""
    return pairs(c, next(iter(c.p)), parts_dtype(c.out_dtype))


@complex_mapping("neg")
def _neg(c: Call):
    return c.add("Neg", [pairs(c, "input", parts_dtype(c.out_dtype))])


@complex_mapping("sgn")
def _sgn(c: Call):
    """``z / |z|``, 0 at 0."""
    d = parts_dtype(c.out_dtype)
    p = pairs(c, "input", d)
    r = unsqueeze(c, _abs_pairs(c, p), [-1])
    zero = c.const(0.0, d)
    return c.add("Where", [c.add("Equal", [r, zero]), zero, c.add("Div", [p, r])])


@complex_mapping("isreal")
def _isreal(c: Call):
    p = pairs(c, "input", parts_dtype(c.dtype("input")))
    return c.add("Equal", [imag_part(c, p), c.const(0.0, parts_dtype(c.dtype("input")))])


def _times_alpha(c: Call, p: str, d: str) -> str:
    alpha = c.p.get("alpha")
    if alpha is None:
        return p
    if isinstance(alpha, dict) and "complex" in alpha:
        return cmul(c, p, pairs(c, alpha, d))
    value = decode(alpha)
    return p if value == 1 else c.add("Mul", [p, c.const(float(value), d)])


@complex_mapping("add")
def _cadd(c: Call):
    d = parts_dtype(c.out_dtype)
    return c.add("Add", [pairs(c, "input", d), _times_alpha(c, pairs(c, "other", d), d)])


@complex_mapping("sub")
def _csub(c: Call):
    d = parts_dtype(c.out_dtype)
    return c.add("Sub", [pairs(c, "input", d), _times_alpha(c, pairs(c, "other", d), d)])


@complex_mapping("rsub")
def _crsub(c: Call):
    d = parts_dtype(c.out_dtype)
    return c.add("Sub", [pairs(c, "other", d), _times_alpha(c, pairs(c, "input", d), d)])


@complex_mapping("mul")
def _cmul(c: Call):
    d = parts_dtype(c.out_dtype)
    a, b = list(c.p)[:2]
    for scalar, other in ((b, a), (a, b)):
        factor = _real_scalar(c, c.p[scalar], d)
        if factor is not None:  # a real factor scales both parts
            return c.add("Mul", [pairs(c, other, d), factor])
    return cmul(c, pairs(c, a, d), pairs(c, b, d))


@complex_mapping("div", "true_divide")
def _cdiv(c: Call):
    """``a / b``: by a real divisor both parts; by a complex one
    ``a conj(b) / |b|^2``."""
    if c.lit("rounding_mode") is not None:
        raise Unsupported("a rounding mode for complex division")
    d = parts_dtype(c.out_dtype)
    a, b = list(c.p)[:2]
    den = _real_scalar(c, c.p[b], d)
    if den is not None:
        return c.add("Div", [pairs(c, a, d), den])
    pb = pairs(c, b, d)
    num = cmul(c, pairs(c, a, d), conj_pairs(c, pb, d))
    return c.add("Div", [num, unsqueeze(c, reduce(c, "ReduceSumSquare", pb, [-1], False),
                                        [-1])])


# -- the transforms ------------------------------------------------------------------------------

def dft(c: Call, x: str, axis: int, *, onesided: bool = False) -> str:
    """ONNX's forward (unscaled) DFT of ``x`` (``[..., 1]`` real or ``[..., 2]`` pairs) along
    ``axis`` (>= 0)."""
    if c.opset >= 20:
        return c.add("DFT", [x, "", c.const(np.int64(axis), "int64")], onesided=int(onesided))
    return c.add("DFT", [x], axis=axis, onesided=int(onesided))


def resize(c: Call, x: str, rank: int, axis: int, size, n: int) -> str:
    """``x`` (of rank ``rank``) trimmed or zero-padded to ``n`` along ``axis``."""
    if size == n:
        return x
    if not isinstance(size, int):
        raise Unsupported("a signal size n/s given for a dynamic dimension (whether it pads "
                          "or trims must be known at export)")
    if size > n:
        return c.add("Slice", [x, c.i64([0]), c.i64([n]), c.i64([axis])])
    pads = [0] * (2 * rank)
    pads[rank + axis] = n - size
    return c.add("Pad", [x, c.i64(pads)])


def scale(c: Call, x: str, sizes: list, power: float, d: str) -> str:
    """``x * prod(sizes) ** power`` (sizes: size expressions)."""
    if power == 0:
        return x
    if all(isinstance(s, int) for s in sizes):
        return c.add("Mul", [x, c.const(float(math.prod(sizes)) ** power, d)])
    total = sizes[0]
    for s in sizes[1:]:
        total = {"mul": [total, s]}
    n = c.b.cast(c.b.expr(total), "int64", d)
    return c.add("Mul", [x, c.add("Pow", [n, c.const(float(power), d)])])


#: (norm, inverse) -> the power of the signal size the unscaled transform is scaled by
_NORM_POWER = {("backward", False): 0, ("ortho", False): -0.5, ("forward", False): -1,
               ("backward", True): -1, ("ortho", True): -0.5, ("forward", True): 0}
_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(c: Call, swap: bool = False) -> str:
    norm = c.lit("norm") or "backward"
    if norm not in _SWAPPED:
        raise Unsupported(f"Invalid normalization mode: {norm}")
    return _SWAPPED[norm] if swap else norm


def _dims_and_sizes(c: Call, c2r: bool = False) -> tuple[list, list]:
    """The transformed dims (ascending in the order given) and the signal sizes, as
    ``ember.fft``'s one- and n-dimensional forms resolve them (``c2r``: the last size is that
    of the real output)."""
    shape = c.shape("input")
    rank = len(shape)
    if "n" in c.p:  # one-dimensional
        dims = [norm_axis(int(c.lit("dim", -1)), rank)]
        n = c.lit("n")
        sizes = [None if n is None else int(n)]
    else:
        s, dim = c.lit("s"), c.lit("dim")
        if dim is None:
            dims = list(range(rank)) if s is None else list(range(rank - len(s), rank))
        else:
            dim = [dim] if isinstance(dim, int) else list(dim)
            dims = [norm_axis(int(a), rank) for a in dim]
        sizes = [None] * len(dims) if s is None else [None if v == -1 else int(v) for v in s]
    out = []
    for i, (a, n) in enumerate(zip(dims, sizes)):
        if n is not None:
            out.append(n)
        elif c2r and i == len(dims) - 1:
            m = shape[a]
            if not isinstance(m, int):
                raise Unsupported("irfft/hfft of a dynamic dimension without n/s")
            out.append(2 * (m - 1))
        else:
            out.append(shape[a])
    return dims, out


_C2C = {"fft_fft": False, "fft_ifft": True, "fft_fft2": False, "fft_ifft2": True,
        "fft_fftn": False, "fft_ifftn": True}


@complex_mapping(*_C2C, since=17)
def _c2c(c: Call):
    d = parts_dtype(c.out_dtype)
    inverse = _C2C[c.op]
    dims, sizes = _dims_and_sizes(c)
    shape = c.shape("input")
    rank = len(shape) + 1
    x = pairs(c, "input", d)
    for a, n in zip(dims, sizes):
        x = resize(c, x, rank, a, shape[a], n)
    if inverse:  # conj(DFT(conj(x)))
        x = conj_pairs(c, x, d)
    for a in dims:
        x = dft(c, x, a)
    if inverse:
        x = conj_pairs(c, x, d)
    return scale(c, x, sizes, _NORM_POWER[_norm(c), inverse], d)


_R2C = {"fft_rfft": False, "fft_rfft2": False, "fft_rfftn": False, "fft_ihfft": True,
        "fft_ihfft2": True, "fft_ihfftn": True}


@complex_mapping(*_R2C, since=17)
def _r2c(c: Call):
    """The onesided transform of a real signal along the last dim, then full ones along the
    others; ``ihfft*`` is the conjugate of ``rfft*`` with the norm swapped."""
    d = parts_dtype(c.out_dtype)
    hermitian = _R2C[c.op]
    dims, sizes = _dims_and_sizes(c)
    shape = c.shape("input")
    rank = len(shape)
    x = c.t("input", d)
    for a, n in zip(dims, sizes):
        x = resize(c, x, rank, a, shape[a], n)
    x = dft(c, unsqueeze(c, x, [-1]), dims[-1], onesided=True)
    for a in dims[:-1]:
        x = dft(c, x, a)
    x = scale(c, x, sizes, _NORM_POWER[_norm(c, swap=hermitian), False], d)
    return conj_pairs(c, x, d) if hermitian else x


def c2r(c: Call, x: str, axis: int, n: int, d: str, conjugated: bool = False) -> str:
    """The real inverse transform (unscaled) of length ``n`` of the onesided spectrum ``x``
    (pairs, of ``n // 2 + 1`` bins along ``axis``; ``conjugated``: its conjugate is given):
    the mirrored conjugate bins appended, the real part of the forward DFT of the conjugate
    (the real part of the inverse DFT)."""
    if not conjugated:
        x = conj_pairs(c, x, d)
    tail = (n + 1) // 2 - 1
    if tail > 0:
        mirrored = c.add("Slice", [x, c.i64([tail]), c.i64([0]), c.i64([axis]), c.i64([-1])])
        x = c.add("Concat", [x, conj_pairs(c, mirrored, d)], axis=axis)
    return real_part(c, dft(c, x, axis))


_C2R = {"fft_irfft": False, "fft_irfft2": False, "fft_irfftn": False, "fft_hfft": True,
        "fft_hfft2": True, "fft_hfftn": True}


@complex_mapping(*_C2R, since=17)
def _c2r(c: Call):
    """Inverse full transforms along all but the last dim, then the real one along it;
    ``hfft*`` is ``irfft*`` of the conjugate with the norm swapped."""
    d = c.out_dtype
    hermitian = _C2R[c.op]
    dims, sizes = _dims_and_sizes(c, c2r=True)
    shape = c.shape("input")
    rank = len(shape) + 1
    x = pairs(c, "input", d)
    if not hermitian:  # the inverse transforms' conjugate (hfft's conjugate cancels it)
        x = conj_pairs(c, x, d)
    for a, n in zip(dims[:-1], sizes[:-1]):
        x = resize(c, x, rank, a, shape[a], n)
    x = resize(c, x, rank, dims[-1], shape[dims[-1]], sizes[-1] // 2 + 1)
    for a in dims[:-1]:  # conj(inverse) of the others (the real part ignores the last conj)
        x = dft(c, x, a)
    x = c2r(c, x, dims[-1], sizes[-1], d, conjugated=True)
    return scale(c, x, sizes, _NORM_POWER[_norm(c, swap=hermitian), True], d)


# -- frequencies and shifts ----------------------------------------------------------------------

@complex_mapping("fft_fftshift", "fft_ifftshift")
def _shift(c: Call):
    """A roll by half of each dim: the second part (from ``size - size // 2``, or
    ``size // 2`` for the inverse) moved to the front."""
    src = c.dtype("input")
    x = pairs(c, "input", parts_dtype(src)) if is_complex(src) else c.t("input")
    shape = c.shape("input")
    rank = len(shape)
    dim = c.lit("dim")
    if dim is None:
        dims = list(range(rank))
    else:
        dims = [norm_axis(int(a), rank) for a in ([dim] if isinstance(dim, int) else dim)]
    for a in dims:
        size = shape[a]
        half = {"floordiv": [size, 2]} if not isinstance(size, int) else size // 2
        if c.op == "fft_ifftshift":
            k = half
        else:
            k = size - half if isinstance(size, int) else {"sub": [size, half]}
        if isinstance(k, int) and (k == 0 or k == size):
            continue
        k = c.b.expr(k)
        head = c.add("Slice", [x, k, c.i64([INT64_MAX]), c.i64([a])])
        rest = c.add("Slice", [x, c.i64([0]), k, c.i64([a])])
        x = c.add("Concat", [head, rest], axis=a)
    return x


@complex_mapping("fft_fftfreq", "fft_rfftfreq")
def _fftfreq(c: Call):
    """``[0, 1, ..., -(n // 2), ..., -1]`` (``rfftfreq``: ``[0, ..., n // 2]``) times
    ``1 / (n * d)`` rounded to the result's dtype, as PyTorch computes them."""
    out = c.out_dtype
    d = parts_dtype(out)
    n = c.b.scalar_expr(c.sizes("n")[0])
    spacing = float(c.lit("d", 1.0))
    half = c.add("Div", [n, c.const(np.int64(2), "int64")])
    count = c.add("Add", [half, c.const(np.int64(1), "int64")]) if c.op == "fft_rfftfreq" \
        else n
    k = c.add("Range", [c.const(np.int64(0), "int64"), count, c.const(np.int64(1), "int64")])
    if c.op == "fft_fftfreq":  # (k + n // 2) mod n - n // 2
        k = c.add("Sub", [c.add("Mod", [c.add("Add", [k, half]), n]), half])
    total = c.add("Mul", [c.b.cast(n, "int64", "float64"), c.const(spacing, "float64")])
    factor = c.b.cast(c.add("Reciprocal", [total]), "float64", d)
    freqs = c.add("Mul", [c.b.cast(k, "int64", d), factor])
    if not is_complex(out):
        return freqs
    x = unsqueeze(c, freqs, [-1])
    return c.add("Concat", [x, c.add("Sub", [x, x])], axis=-1)


# -- inverse short-time Fourier transform --------------------------------------------------------

@complex_mapping("istft", since=17)
def _istft(c: Call):
    """Inverse DFTs of the frames (real ones of a onesided spectrum), the window applied,
    overlap-added by a strided ``ConvTranspose`` with an identity kernel, divided by the
    overlap-added squared window; the centring padding trimmed, ``length`` kept."""
    if not is_complex(c.dtype("input")):
        raise Unsupported("istft of a real tensor")
    out = c.out_dtype
    d = parts_dtype(out)
    n_fft = int(c.lit("n_fft"))
    hop = int(c.lit("hop_length") or n_fft // 4)
    win = int(c.lit("win_length") or n_fft)
    shape = c.shape("input")
    batched = len(shape) == 3
    n_frames, bins = shape[-1], shape[-2]
    onesided = c.lit("onesided")
    onesided = bins != n_fft if onesided is None else bool(onesided)
    x = pairs(c, "input", d)
    if not batched:
        x = unsqueeze(c, x, [0])
    x = c.add("Transpose", [x], perm=[0, 2, 1, 3])                   # [B, T, N, 2]
    norm = "ortho" if c.lit("normalized", False) else "backward"
    if is_complex(out):
        if onesided:
            raise Unsupported("Cannot have onesided output if window or input is complex")
        frames = conj_pairs(c, dft(c, conj_pairs(c, x, d), 2), d)    # [B, T, n_fft, 2]
        parts = 2
    else:
        x = resize(c, x, 4, 2, bins, n_fft // 2 + 1)
        frames = unsqueeze(c, c2r(c, x, 2, n_fft, d), [-1])            # [B, T, n_fft, 1]
        parts = 1
    frames = scale(c, frames, [n_fft], _NORM_POWER[norm, True], d)
    if c.has("window"):
        if is_complex(c.dtype("window")):
            raise Unsupported("istft with a complex window")
        window = c.t("window", d)
    else:
        window = c.const(np.ones(win), d)
    if win < n_fft:
        left = (n_fft - win) // 2
        window = c.add("Pad", [window, c.i64([left, n_fft - win - left])])
    frames = c.add("Mul", [frames, unsqueeze(c, window, [-1])])
    # [B, T, n_fft, K] -> [B*K, n_fft, T] -> overlap-added [B*K, 1, L] -> [B, L, K]
    t = c.b.dim_of(frames, 1)
    frames = c.add("Transpose", [frames], perm=[0, 3, 2, 1])
    frames = c.add("Reshape", [frames, c.add("Concat", [c.i64([-1, n_fft]), t], axis=0)])
    eye = c.const(np.eye(n_fft).reshape(n_fft, 1, n_fft), d)
    y = c.add("ConvTranspose", [frames, eye], strides=[hop])
    y = c.add("Transpose", [c.add("Reshape", [y, c.i64([-1, parts, 0])])], perm=[0, 2, 1])
    squared = c.add("Mul", [window, window])
    env_in = c.add("Expand", [unsqueeze(c, squared, [0, 2]),
                              c.add("Concat", [c.i64([1, n_fft]), t], axis=0)])
    env = unsqueeze(c, squeeze(c, c.add("ConvTranspose", [env_in, eye], strides=[hop]), [0]),
                    [-1])                                                 # [1, L, 1]
    start = n_fft // 2 if c.lit("center", True) else 0
    length = c.lit("length")
    if length is not None:
        end = start + int(length)
    elif c.lit("center", True):
        end = -(n_fft // 2) if n_fft // 2 else 0
    else:
        end = INT64_MAX
    if start or end != INT64_MAX:
        y = c.add("Slice", [y, c.i64([start]), c.i64([end]), c.i64([1])])
        env = c.add("Slice", [env, c.i64([start]), c.i64([end]), c.i64([1])])
    y = c.add("Div", [y, env])
    if length is not None:  # zero-padded to ``length`` where the frames are too few
        expected = None if not isinstance(n_frames, int) else n_fft + hop * (n_frames - 1)
        if expected is None or end > expected:
            short = c.add("Sub", [c.i64([int(length)]), c.b.dim_of(y, 1)])
            pads = c.add("Concat", [c.i64([0, 0, 0, 0]), short, c.i64([0])], axis=0)
            y = c.add("Pad", [y, pads])
    if parts == 1:
        y = squeeze(c, y, [2])
    return y if batched else squeeze(c, y, [0])
