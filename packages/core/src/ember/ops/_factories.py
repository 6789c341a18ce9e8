"""The factories of elementwise ops (``binary_op``, ``unary_op``) and the reduction of a
broadcast gradient back to its input's shape (``sum_to_size``).

Ops are built by factories so that the fast path (two tensors of one dtype on one device,
grad mode off or nothing requiring grad) is a handful of attribute reads around the array
call, and the rare paths live in one place (``_promotion.coerce``).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype, _native
from .._memory_format import iter_apply as _iter_apply
from .._memory_format import iter_layout as _iter_layout
from .._tensor import CPU as _CPU
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, record
from ._promotion import _OPERANDS, broadcast_shape, coerce
from ._signatures import SIGNATURES, parser_error, refuse_input, refuses_number_first

__all__ = ["binary_op", "unary_op", "sum_to_size", "camel", "in_float32"]

_FROM_NP = _dtype.FROM_NP
_CHALF = _dtype.CHALF_NP
#: floating or complex: what ``to_float`` leaves as it is. complex32 is left out, so that the
#: ``to_float`` branch (never taken by float inputs) is where it meets PyTorch's error: its
#: CPU kernels for exp, log, sin, div, ... have no ComplexHalf case (``_no_chalf_op``)
_FLOATING = _dtype.INEXACT_NP - {_CHALF}
_BF16 = _dtype.BFLOAT16_NP
#: float32, float64 and int64 arrays take the factories' fast path by identity tests; the
#: other dtypes also ask whether PyTorch's kernel lacks them (``_dtype.MISSING_KERNELS``: a
#: set lookup, which hashes the dtype) and whether they are bfloat16
_F32 = _dtype.float32.np
_F64 = _dtype.float64.np
_I64 = _dtype.int64.np
_COMPLEX = _dtype.COMPLEX_NP
#: PyTorch's CPU kernel names, where they are not ``<op>_cpu``, in its dispatch errors
_VML_KERNELS = frozenset(("acos", "asin", "atan", "cos", "erf", "erfc", "erfinv", "exp",
                          "expm1", "i0", "lgamma", "log", "log10", "log1p", "log2", "sin",
                          "sqrt", "tan", "tanh"))
_PLAIN_KERNELS = {"exp2": "exp2", "digamma": "digamma", "polygamma": "polygamma",
                  "special_ndtr": "erf_vml_cpu"}


def _no_chalf_op(name: str) -> NotImplementedError:
    """PyTorch's error for elementwise op ``name``, whose CPU kernel computes every float and
    complex dtype but complex32 (``"exp_vml_cpu" not implemented for 'ComplexHalf'``)."""
    if name in _VML_KERNELS:
        return _dtype.no_chalf_kernel(name + "_vml_cpu")
    return _dtype.no_chalf_kernel(_PLAIN_KERNELS.get(name)
                                  or name.removeprefix("special_") + "_cpu")


def in_float32(fwd, *arrays):
    """``fwd`` on bfloat16 arrays computed in float32, a float32 result rounded to bfloat16
    once (PyTorch's opmath: its CPU kernels widen bfloat16 the same way). Python numbers and
    None pass through; a non-float32 result (booleans, indices) is returned as it is."""
    f32 = _dtype.float32.np
    try:
        r = fwd(*(_dtype.bf16_to_f32(a) if getattr(a, "dtype", None) is _BF16 else a
                  for a in arrays))
    except NotImplementedError as exc:  # a kernel with no float case (bitwise ops, gcd): it
        msg = str(exc)  # names the dtype it saw, float32; PyTorch's names bfloat16
        if not msg.endswith(" not implemented for 'Float'"):
            raise
        raise NotImplementedError(msg[:-len("'Float'")] + "'BFloat16'") from None
    if isinstance(r, tuple):
        return tuple(x.astype(_BF16) if getattr(x, "dtype", None) is f32 else x for x in r)
    return r.astype(_BF16) if getattr(r, "dtype", None) is f32 else r


def shape_of(t: Tensor) -> tuple:
    """``t``'s shape as a tuple: its array's, or the logical shape of a tensor whose array
    is not its own (a gradient batched by vmap, flowing back under ``jacrev``)."""
    return t._data.shape if t.__class__ is Tensor else tuple(t.shape)


def public(name: str):
    """The public, dispatching ``ember.<name>``: what backward code calls on a gradient
    batched by vmap (``jacrev``), so that the op's batching rule runs; the module's own
    function is the kernel, which reads arrays."""
    import ember

    return getattr(ember, name)


def sum_to_size(grad: Tensor, shape) -> Tensor:
    """Sum ``grad`` down to ``shape`` (the shared reduction of broadcast gradients; ``grad``
    may be batched by vmap: its logical shape)."""
    gshape = shape_of(grad)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    out = grad.sum(dims, keepdim=True) if dims else grad
    if lead:
        out = out.reshape(shape)
    return out


def _fit(g, shape, dtype):
    if g is None:
        return None
    if shape_of(g) != shape:
        g = sum_to_size(g, shape)
    if g._data.dtype is not dtype:
        if g._data.dtype in _COMPLEX and dtype not in _COMPLEX:
            g = g.real  # a real input of a complex result: its gradient is the real part
        g = g.to(_FROM_NP[dtype])
    return g


def _grad_meta(ta, tb, out):
    """Shapes/dtypes to reduce gradients to, or None when both match the output."""
    od = out._data
    meta = None
    for t in (ta, tb):
        if t is not None and (t._data.shape != od.shape or t._data.dtype is not od.dtype):
            meta = ((ta._data.shape, ta._data.dtype) if ta is not None else None,
                    (tb._data.shape, tb._data.dtype) if tb is not None else None)
            break
    return meta


def _ndarray_operand(tensor):
    """``tensor <op> ndarray``, as PyTorch: NotImplemented, so NumPy's reflected operator
    computes it on ``tensor.__array__()`` and ``Tensor.__array_wrap__`` makes the result a
    tensor (``t + np.ones(2)`` is a float64 tensor); a tensor that requires grad raises
    PyTorch's ``numpy()`` error there rather than losing its history."""
    if tensor.requires_grad and GRAD.enabled:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")
    return NotImplemented


def _wrapped_number(x):
    """A Python number as the 0-dim tensor PyTorch's parser makes of it (int64, the default
    float or complex dtype, bool); anything else passes, to fail in ``coerce``."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, bool):
        dt = np.bool_
    elif isinstance(x, int):
        dt = np.int64
    elif isinstance(x, float):
        dt = _dtype.get_default_dtype().np
    elif isinstance(x, complex):
        dt = _dtype.get_default_dtype().to_complex().np
    else:
        return x
    return _make(np.asarray(x, dt), _CPU)


def binary_op(name: str, fwd, backward=None, *, kind: str = "arith", saves: str = "",
              node_name: str | None = None, keeps=None, tensor_node_name: str | None = None,
              threaded: bool = False):
    """Build a binary elementwise op ``op(input, other)``.

    ``fwd(a, b)`` works on arrays (or an array and a Python scalar). ``kind``:
    ``arith`` keeps the promoted dtype, ``float`` turns integers into the default float
    (true division), ``bool`` returns booleans (comparisons; never differentiable).
    ``backward(node, grad) -> (grad_a, grad_b)`` may return gradients of the output's
    shape; they are summed back to each input's shape and dtype here. ``saves``: ``"ab"``
    saves both inputs (``node.saved``), ``"o"`` the output (``node.output()``). ``keeps``:
    ``(a requires grad, b requires grad) -> (keep a, keep b)``, PyTorch's rule for which
    input tensors the backward reads (``mul`` keeps ``b`` only for ``a``'s gradient); a tensor
    not kept is saved as None, so writing it in place later is no error, as in PyTorch.
    ``tensor_node_name``: the node's name when both operands are tensors, where PyTorch's
    overloads name them apart (``PowBackward1`` for a tensor exponent, ``PowBackward0`` for a
    number).
    ``threaded``: ``fwd`` is a NumPy ufunc that big C-contiguous float operands (two arrays
    of one shape, or an array and a number) run over the native pool (``_native.ufunc``: the
    ufunc's own loop, so the same bits).
    """
    Node = NodeTT = None
    # one size comparison on the common path (a Python call there cost 0.12 us an add)
    least = _native.UFUNC_MIN if threaded else 1 << 62
    if backward is not None:
        def _bw(node, grad, _raw=backward):
            ga, gb = _raw(node, grad)
            meta = node.ctx
            if meta is not None:
                ga = _fit(ga, *meta[0]) if meta[0] is not None else None
                gb = _fit(gb, *meta[1]) if meta[1] is not None else None
            return ga, gb

        Node = NodeTT = make_node_class(node_name or camel(name) + "Backward0", _bw)
        if tensor_node_name is not None:
            NodeTT = make_node_class(tensor_node_name, _bw)
    to_float = kind == "float"
    save_inputs = "ab" in saves
    save_out = "o" in saves
    default = _dtype.get_default_dtype
    # ``torch.add(1, 2)``: PyTorch's arithmetic takes two numbers as 0-dim tensors
    wraps_numbers = name in ("add", "sub", "mul", "div", "floor_divide")
    kernel, missing = _dtype.missing_kernel(name)  # dtypes PyTorch's kernel has no case for
    gaps = bool(missing)
    has_signatures = name in SIGNATURES  # PyTorch's Python signatures, for its errors
    number_first_refused = refuses_number_first(name)

    def _record(ta, tb, input, other, r, dev):
        out = _make(r, dev)
        saved = (input if ta is None else ta, other if tb is None else tb) \
            if save_inputs else ()
        if keeps is not None:
            keep_a, keep_b = keeps(ta is not None and ta.requires_grad,
                                   tb is not None and tb.requires_grad)
            saved = (saved[0] if keep_a or ta is None else None,
                     saved[1] if keep_b or tb is None else None)
        record(Node if ta is None or tb is None else NodeTT, out, (ta, tb), saved,
               _grad_meta(ta, tb, out), save_out)
        return out

    def _build(dunder: bool):
        def op(input, other):
            ta, tb = input, other
            if isinstance(other, Tensor) and isinstance(input, Tensor):
                ad = input._data
                bd = other._data
                dev = input._device
                dt = ad.dtype
                if dev is other._device and dt is bd.dtype and (
                        dt is _F32 or dt is _F64 or dt is _I64 and not to_float):
                    # the common case (two tensors of one device and a dtype every kernel
                    # has), on its own branch: no None tests, no dtype dispatch
                    try:  # PyTorch's TensorIterator: the first input's layout wins where
                        # NumPy's would be C order (computed in it, not copied to it)
                        if not ad.flags.c_contiguous:
                            r = _iter_apply(fwd, ad, bd)
                        elif ad.size < least or (r := _native.ufunc(fwd, ad, bd)) is None:
                            r = fwd(ad, bd)
                    except ValueError:
                        broadcast_shape(ad.shape, bd.shape)
                        raise
                    except NotImplementedError:  # a sparse operand: its own kernel
                        from .._sparse_tensor import sparse_binary

                        return sparse_binary(name, input, other)
                    if Node is not None and (input.requires_grad or other.requires_grad) \
                            and GRAD.enabled:
                        return _record(input, other, input, other, r, dev)
                    return _make(r, dev)
                both = True  # two tensors (saves the None tests below)
                if dev is not other._device or dt is not bd.dtype:
                    ta, tb, ad, bd, dev = coerce(input, other, to_float)
                    both = ta is not None and tb is not None
            elif dunder:  # Python's operator: an operand no tensor op takes gets its turn
                try:
                    ta, tb, ad, bd, dev = coerce(input, other, to_float)
                except TypeError:
                    if isinstance(other, np.ndarray):
                        if name == "eq" and input._device.type == "cpu":
                            return op(input, _make(other, input._device))  # as PyTorch's ==
                        return _ndarray_operand(input)
                    if isinstance(other, _OPERANDS):
                        raise
                    return NotImplemented
                both = ta is not None and tb is not None
            else:
                if number_first_refused and input.__class__ is not Tensor \
                        and not isinstance(input, Tensor):  # PyTorch has no Number-self form
                    raise parser_error(name, (input, other))
                if wraps_numbers and not isinstance(input, Tensor) \
                        and not isinstance(other, Tensor):
                    return op(_wrapped_number(input), _wrapped_number(other))
                try:
                    ta, tb, ad, bd, dev = coerce(input, other, to_float)
                except TypeError:  # no signature takes these operands: the parser's words
                    if not has_signatures:
                        raise
                    raise parser_error(name, (input, other)) from None
                both = ta is not None and tb is not None
            a_arr = ad if ta is not None else bd
            if to_float and a_arr.dtype not in _FLOATING:
                if a_arr.dtype is _CHALF:
                    raise _no_chalf_op(name)
                ft = default().np
                ad = ad.astype(ft) if ta is not None else ad
                bd = bd.astype(ft) if tb is not None else bd
                a_arr = ad if ta is not None else bd
            dt = a_arr.dtype
            try:
                if dt is _F32 or dt is _F64 or dt is _I64 or dt is not _BF16 and (
                        not gaps or dt not in missing):
                    if a_arr.size < least or (r := _native.ufunc(fwd, ad, bd)) is None:
                        r = fwd(ad, bd)
                elif dt is _BF16:
                    r = in_float32(fwd, ad, bd)
                else:  # PyTorch checks the shapes first
                    broadcast_shape(getattr(ad, "shape", ()), getattr(bd, "shape", ()))
                    raise _dtype.no_kernel(kernel, dt)
            except ValueError:
                broadcast_shape(getattr(ad, "shape", ()), getattr(bd, "shape", ()))
                raise
            except NotImplementedError:  # a sparse operand's array refused: its own kernel
                from .._sparse_tensor import sparse_binary

                return sparse_binary(name, input, other)
            if both:
                if not ad.flags.c_contiguous:  # PyTorch's TensorIterator: the first
                    r = _iter_layout(r, (ad, bd))  # input's layout wins, NumPy's C order
                if Node is not None and (ta.requires_grad or tb.requires_grad) \
                        and GRAD.enabled:
                    return _record(ta, tb, input, other, r, dev)
                return _make(r, dev)
            if Node is not None and ((ta is not None and ta.requires_grad) or
                                     (tb is not None and tb.requires_grad)) and GRAD.enabled:
                return _record(ta, tb, input, other, r, dev)
            return _make(r, dev)

        return op

    op = _build(False)
    # ``Tensor.__<op>__``: the same op, but NotImplemented for an operand no tensor op
    # takes (an object with its own reflected operator, None, a string), as PyTorch's
    # operators; built apart so that neither pays a wrapper call
    op._dunder = _build(True)
    op._dunder.__name__ = op._dunder.__qualname__ = name
    op.__name__ = op.__qualname__ = name
    op._node = Node
    op._fwd = fwd
    op._kind = kind
    return op


def unary_op(name: str, fwd, backward=None, *, to_float: bool = False, saves: str = "",
             node_name: str | None = None, no_bool: bool = False):
    """Build a unary elementwise op ``op(input)``; ``to_float`` makes integers float32 first
    (``exp`` of an int tensor is float, as in PyTorch). ``saves`` as in ``binary_op``."""
    Node = make_node_class(node_name or camel(name) + "Backward0", backward) \
        if backward is not None else None
    save_in = "a" in saves
    save_out = "o" in saves
    default = _dtype.get_default_dtype
    kernel, missing = _dtype.missing_kernel(name)  # dtypes PyTorch's kernel has no case for
    gaps = bool(missing)
    # a NumPy ufunc's big C-contiguous float operands run over the native pool (its own
    # loop: the same bits); one size comparison on the common path
    least = _native.UFUNC_MIN if fwd.__class__ is np.ufunc else 1 << 62

    def op(input):
        try:
            d = input._data
        except AttributeError:  # not a tensor: PyTorch's parser refuses it
            refuse_input(name, input)
            raise
        try:
            if to_float and d.dtype not in _FLOATING:
                if d.dtype is _CHALF:
                    raise _no_chalf_op(name)
                d = d.astype(default().np)
            elif no_bool and d.dtype.kind == "b":
                raise RuntimeError("Negation, the `-` operator, on a bool tensor is "
                                   "not supported. If you are trying to invert a mask, use the "
                                   "`~` or `logical_not()` operator instead." if name == "neg"
                                   else f"{name} is not supported for bool tensors")
            dt = d.dtype
            if dt is _F32 or dt is _F64 or dt is _I64 or dt is not _BF16 and (
                    not gaps or dt not in missing):
                if d.size < least or (r := _native.ufunc(fwd, d)) is None:
                    r = fwd(d)
            elif dt is _BF16:
                r = in_float32(fwd, d)
            else:
                raise _dtype.no_kernel(kernel, dt)
        except NotImplementedError:  # a sparse tensor's array refused: its own kernel
            dt = getattr(d, "dtype", None)
            if dt is _CHALF or dt in missing:
                raise
            from .._sparse_tensor import sparse_op

            return sparse_op(name, op, input)
        if Node is not None and input.requires_grad and GRAD.enabled:
            out = _make(r, input._device)
            record(Node, out, (input,), (input,) if save_in else (), None, save_out)
            return out
        return _make(r, input._device)

    op.__name__ = op.__qualname__ = name
    op._node = Node
    op._fwd = fwd
    op._unary = True  # (a sparse tensor's in-place form: ember.sparse._pointwise)
    return op


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))
