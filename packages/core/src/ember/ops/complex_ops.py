"""Complex numbers: ``real``/``imag`` (views), ``view_as_real``/``view_as_complex``, ``conj``,
``angle``, ``polar``, ``complex``, and the complex forms of ``abs`` and ``sgn``.

Gradients follow PyTorch's convention (``autograd/graph.py``, "complex autograd"): the
gradient of a real loss with respect to ``z = x + iy`` is ``dL/dx + i dL/dy``. The ops here
are not holomorphic, so each writes its own complex backward (``_complex = "own"``).

``conj`` is an honest copy: PyTorch returns a lazily conjugated view (``is_conj()`` True)
whose memory is the input's; ember's ``conj`` allocates the conjugate, ``is_conj()`` is
always False and ``resolve_conj()`` returns the tensor itself. Writes into ``conj(z)`` do
not reach ``z`` (in PyTorch they do, conjugated): ``conj_physical`` is the same copy.
"""

from __future__ import annotations

from .. import _dtype
from .. import _memory_format as _mf
from .._device import xp_of
from .._sparse_tensor import SparseTensor as _Sparse
from .._sparse_tensor import sparse_op
from .._tensor import Tensor
from ..autograd.graph import make_node_class, result
from ._factories import public, sum_to_size
from .registry import register
from .views import make_view

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "conj", "conj_physical",
           "angle", "polar", "complex", "is_conj", "is_neg", "resolve_conj", "resolve_neg"]

_COMPLEX = _dtype.COMPLEX_NP


def _own(name, backward):
    cls = make_node_class(name, backward)
    cls._complex = "own"  # its backward is right for complex numbers (see graph.py)
    return cls


def _is_complex(t: Tensor) -> bool:
    return t._data.dtype in _COMPLEX


def _data_of(t, name: str):
    """``t``'s array, or PyTorch's TypeError for a non-tensor (after the attribute lookup
    failed: nothing on the tensor path)."""
    try:
        return t._data
    except AttributeError:
        if isinstance(t, Tensor):
            raise
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(t).__name__}") from None


def _write_same_dtype(out, res: Tensor, name: str) -> Tensor:
    """``out=`` of ``complex``/``polar``: PyTorch's kernels take only ``out`` of the result's
    own dtype."""
    from ._inplace import write_out

    if isinstance(out, Tensor) and out._data.dtype != res._data.dtype:
        raise RuntimeError(f"Expected object of scalar type "
                           f"{_dtype.scalar_type_name(res._data.dtype)} but got scalar type "
                           f"{_dtype.scalar_type_name(out._data.dtype)} for argument 'out'")
    return write_out(out, res, name)


def _as_complex_grad(re: Tensor | None, im: Tensor | None, like: Tensor) -> Tensor:
    """``re + i im`` as a gradient of ``like``'s complex dtype (None parts are zero)."""
    from .. import _factory

    zeros = _factory.zeros_like(re if re is not None else im)
    return complex(re if re is not None else zeros, im if im is not None else zeros)


# -- real / imag ---------------------------------------------------------------------------------

RealBackward0 = _own("RealBackward0",
                     lambda node, g: (_as_complex_grad(g, None, node.ctx),))
ImagBackward0 = _own("ImagBackward0",
                     lambda node, g: (_as_complex_grad(None, g, node.ctx),))


@register("real", method=False, view=True)
def real(input):
    """The real part of a complex tensor as a view sharing its memory (writes go through);
    a real tensor itself."""
    if _data_of(input, "real").dtype not in _COMPLEX:
        return input
    return make_view(input, _dtype.real_part(input._data), RealBackward0, None, view_fn=real)


@register("imag", method=False, view=True)
def imag(input):
    """The imaginary part of a complex tensor as a view sharing its memory (PyTorch's error
    for real tensors)."""
    if _data_of(input, "imag").dtype not in _COMPLEX:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return make_view(input, _dtype.imag_part(input._data), ImagBackward0, None, view_fn=imag)


# -- view_as_real / view_as_complex --------------------------------------------------------------

def _view_as_real_bw(node, g):
    fn = view_as_complex if g.__class__ is Tensor else public("view_as_complex")  # (vmap)
    return (fn(g.contiguous()),)


def _view_as_complex_bw(node, g):
    fn = view_as_real if g.__class__ is Tensor else public("view_as_real")  # (vmap)
    return (fn(g.contiguous()),)


ViewAsRealBackward0 = _own("ViewAsRealBackward0", _view_as_real_bw)
ViewAsComplexBackward0 = _own("ViewAsComplexBackward0", _view_as_complex_bw)


@register("view_as_real", method=False, view=True)
def view_as_real(input):
    """A complex tensor as a real view with a trailing dimension of 2 (real, imaginary)."""
    if _data_of(input, "view_as_real").dtype not in _COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    d = input._data
    if d.dtype is _dtype.CHALF_NP:  # a pair of float16 per element: a trailing axis of 2
        arr = d[..., None].view(_dtype.float16.np)
    else:  # d.real shares d's memory and data pointer: stride it over both parts
        arr = xp_of(d).lib.stride_tricks.as_strided(d.real, shape=d.shape + (2,),
                                                    strides=d.strides + (d.itemsize // 2,))
    return make_view(input, arr, ViewAsRealBackward0, None, view_fn=view_as_real)


@register("view_as_complex", method=False, view=True)
def view_as_complex(input):
    """A real tensor whose last dimension is 2 as a complex view (PyTorch's checks): float16
    gives complex32, float32 complex64, float64 complex128."""
    d = _data_of(input, "view_as_complex")
    if d.dtype not in (_dtype.float16.np, _dtype.float32.np, _dtype.float64.np):
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           "tensors, but got a tensor of scalar type: "
                           f"{_dtype.scalar_type_name(d.dtype)}")
    if d.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if d.size == 0:  # no memory to view: an empty complex tensor
        cdt = _dtype.FROM_NP[d.dtype].to_complex().np
        return make_view(input, xp_of(d).zeros(d.shape[:-1], dtype=cdt),
                         ViewAsComplexBackward0, None, view_fn=view_as_complex)
    if d.strides[-1] != d.itemsize and input._device.type != "meta":
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * d.itemsize) for s, n in zip(d.strides[:-1], d.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    cdt = _dtype.FROM_NP[d.dtype].to_complex().np
    arr = d.view(cdt)[..., 0]  # the last axis is contiguous: pairs of reals become complex
    return make_view(input, arr, ViewAsComplexBackward0, None, view_fn=view_as_complex)


# -- the lazy-bit predicates: ember keeps no conjugate or negative bit ---------------------------

@register("is_conj", method=False, differentiable=False)
def is_conj(input):
    """False: ember's ``conj`` is a copy, never a lazily conjugated view."""
    return False


@register("is_neg", method=False, differentiable=False)
def is_neg(input):
    """False: ember has no lazy negative bit."""
    return False


@register("resolve_conj", method=False, differentiable=True)
def resolve_conj(input):
    """``input`` itself: ember never holds an unresolved conjugation."""
    return input


@register("resolve_neg", method=False, differentiable=True)
def resolve_neg(input):
    """``input`` itself: ember never holds an unresolved negation."""
    return input


# -- conj, angle, abs, sgn ----------------------------------------------------------------------

ConjBackward0 = _own("ConjBackward0", lambda node, g: (g.conj(),))


@register("conj")
def conj(input):
    """The complex conjugate (a copy: see the module docstring); real tensors: themselves."""
    if not _is_complex(input):
        return input
    return result(xp_of(input).conj(input._data), input._device, ConjBackward0, (input,))


@register("conj_physical", out=True, inplace=True)
def conj_physical(input):
    """The complex conjugate, always a new tensor for complex input (as ``conj`` here)."""
    if not _is_complex(input):
        return input
    return conj(input)


def _angle_bw(node, g):
    (z,) = node.saved
    if not _is_complex(z):
        return (g * 0,)
    # d angle: i z / |z|^2, zero at the origin (PyTorch's angle_backward)
    mag2 = (z * z.conj()).real
    at0 = mag2 == 0
    scale = (~at0).to(mag2.dtype) / mag2.masked_fill(at0, 1.0)  # real: 0 at the origin
    return (g * scale * z * 1j,)


AngleBackward0 = _own("AngleBackward0", _angle_bw)


def _angle_np(a, xp):
    if a.dtype in _COMPLEX:
        if a.dtype is _dtype.CHALF_NP:  # PyTorch has no complex32 kernel
            from .pointwise import _unsupported

            raise _unsupported("angle", a)
        return xp.angle(a)
    if a.dtype.kind in "biu":
        a = a.astype(_dtype.get_default_dtype().np)
    # real input: 0 for x >= 0, pi for x < 0, NaN kept (PyTorch)
    out = xp.where(a < 0, xp.pi, 0.0).astype(a.dtype)
    return xp.where(xp.isnan(a), a, out)


@register("angle", out=True)
def angle(input):
    """The argument of each element in radians; real tensors give 0 or pi."""
    if input.__class__ is _Sparse:  # ember._sparse_tensor: on the stored values
        return sparse_op("angle", angle, input)
    r = _angle_np(input._data, xp_of(input))
    return result(r, input._device, AngleBackward0, (input,), (input,))


@register("polar")  # out= in the kernel: PyTorch takes only out of its dtype
def polar(abs, angle, *, out=None):
    """``abs * (cos(angle) + i sin(angle))``: a complex tensor from polar coordinates."""
    for pos, (name, t) in enumerate((("abs", abs), ("angle", angle)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"polar(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    a, b = abs._data.dtype, angle._data.dtype
    if a not in (_dtype.float32.np, _dtype.float64.np, _dtype.float16.np):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dtype.scalar_type_name(a)} and {_dtype.scalar_type_name(b)}")
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(a)} but "
                           f"got scalar type {_dtype.scalar_type_name(b)} for second argument")
    if abs._data.dtype is _dtype.float16.np:  # PyTorch has no complex32 polar kernel
        from .pointwise import _unsupported

        raise _unsupported("polar", abs._data)
    res = complex(abs * angle.cos(), abs * angle.sin())
    return res if out is None else _write_same_dtype(out, res, "polar")


def _complex_bw(node, g):
    shape_re, shape_im = node.ctx
    return (sum_to_size(g.real, shape_re) if node.needs_grad(0) else None,
            sum_to_size(g.imag, shape_im) if node.needs_grad(1) else None)


ComplexBackward0 = _own("ComplexBackward0", _complex_bw)


@register("complex", method=False)  # out= in the kernel (as polar)
def complex(real, imag, *, out=None):
    """A complex tensor from real and imaginary parts of one floating dtype (float16 gives
    complex32, float32 complex64, float64 complex128), broadcast together."""
    for pos, (name, t) in enumerate((("real", real), ("imag", imag)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument '{name}' (position {pos}) must be Tensor, "
                            f"not {type(t).__name__}")
    a, b = real._data, imag._data
    if a.dtype not in (_dtype.float32.np, _dtype.float64.np, _dtype.float16.np):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dtype.scalar_type_name(a.dtype)} and "
                           f"{_dtype.scalar_type_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(a.dtype)} "
                           f"but got scalar type {_dtype.scalar_type_name(b.dtype)} for "
                           "second argument")
    from .pointwise import _common_device

    dev = _common_device((real, imag))
    xp = xp_of(a)
    cdt = _dtype.FROM_NP[a.dtype].to_complex().np
    from ._promotion import broadcast_shape

    shape = broadcast_shape(a.shape, b.shape)
    order = None if a.flags.c_contiguous else _mf.iter_order(shape, (a, b))
    if order is None:
        arr = xp.empty(shape, dtype=cdt)
    else:  # TensorIterator's layout: the first input's (a channels-last real part)
        arr = xp.empty([shape[i] for i in order], dtype=cdt).transpose(_mf.inverse(order))
    _dtype.real_part(arr)[...] = a
    _dtype.imag_part(arr)[...] = b
    res = result(arr, dev, ComplexBackward0, (real, imag), ctx=(a.shape, b.shape))
    return res if out is None else _write_same_dtype(out, res, "complex")
