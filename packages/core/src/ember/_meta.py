"""The ``meta`` device: tensors with a shape, a dtype and autograd, but no data.

``ember.empty(1024, 3, 2**16, 2**16, device="meta")`` costs nothing, ``with
ember.device("meta"): model = Net()`` builds a model without allocating or initialising its
parameters (``Module.to_empty`` and ``load_state_dict(assign=True)`` give it memory later), and
running a meta tensor through a model computes every output's shape and dtype without
computing a value, as PyTorch's meta device does.

A meta array (:class:`MetaArray`) is an ``ndarray`` of the right shape and dtype whose strides
are all zero: every element is the same one element of a private one-element buffer. NumPy
itself makes its views (``reshape``, ``transpose``, basic indexing, ``broadcast_to``,
``as_strided``: all zero-strided again), so the view ops of every kernel run unchanged, and no
code can read or write outside that element. What would compute goes through NumPy's override
protocols instead of running:

- ufuncs (``__array_ufunc__``: arithmetic, ``matmul``, reductions, ``accumulate``) give a new
  meta array of the broadcast or reduced shape, with the dtype NumPy's own type resolution
  gives on 0-d stand-ins; ``out=`` is returned as it is, ``ufunc.at`` does nothing;
- the heavy NumPy functions (``dot``, ``tensordot``, ``einsum``, ``concatenate``, ``stack``,
  ``where``, ``pad``, ``take``, ``copy``, ``sort``...) have shape rules here (``_RULES``);
- any other NumPy function runs on the zero-strided arrays (its values are meaningless, its
  shape and dtype are right) and its results become meta arrays; it costs time in proportion to
  its output, never memory beyond it;
- item assignment, ``fill`` and in-place sorts do nothing; a boolean mask index selects
  everything.

A kernel's checks of values pass, as PyTorch's meta kernels skip them: ``bool()`` of an
``all`` reduction is True, of anything else False, and a value read as a number is 0;
``tolist`` raises. The NumPy functions whose output shape depends on the values (``nonzero``,
``histogram``) raise; ``nonzero``, ``unique`` and ``bincount`` assume every element non-zero and
distinct and every value 0 inside kernels, and the ops whose output they are (``ember.nonzero``,
``bincount``, ``masked_select``...) refuse meta inputs: PyTorch has no meta kernel for those
either. Meta tensors report contiguous strides
(a transposed meta view reports the strides of a fresh tensor of its shape, where PyTorch
tracks the view's strides), ``data_ptr()`` 0, and cannot be copied to another device
("Cannot copy out of meta tensor; no data!"): ``Module.to_empty(device=...)`` allocates.

:data:`meta_numpy` is the device's array module (``xp``): NumPy's names, with the creation
functions (``zeros``, ``empty``, ``full``, ``arange``, ``eye``...) making meta arrays without
allocating, ``lib.stride_tricks.as_strided`` zero-strided, and any host array a function
returns turned into a meta array. :data:`META_RNG` stands in for a random generator: its
draws are meta arrays of the requested shape.
"""

from __future__ import annotations

import functools
import math
import operator
import types

import numpy as np

from ._device import data_dependent_error as _data_dependent
from .backends import Backend, register_backend

__all__ = ["MetaArray", "ghost", "meta_numpy", "MetaBackend", "META_RNG", "no_data"]

_NDARRAY = np.ndarray


def no_data(what: str) -> RuntimeError:
    return RuntimeError(f"{what} cannot be called on meta tensors")




def ghost(shape, dtype) -> MetaArray:
    """A meta array of ``shape`` and ``dtype``: zero strides over one private element."""
    shape = tuple(operator.index(s) for s in shape) if np.ndim(shape) else (
        operator.index(shape),)
    if any(s < 0 for s in shape):
        raise ValueError("negative dimensions are not allowed")
    dtype = np.dtype(dtype)
    return _NDARRAY.__new__(MetaArray, shape, dtype, buffer=np.zeros(1, dtype),
                            strides=(0,) * len(shape))


def _plain(a):
    """A meta array as a plain (zero-strided) ndarray view; anything else as it is."""
    return a.view(_NDARRAY) if a.__class__ is MetaArray else a


def _unwrap(obj):
    cls = obj.__class__
    if cls is MetaArray:
        return obj.view(_NDARRAY)
    if cls is list or cls is tuple:
        return cls(_unwrap(o) for o in obj)
    if cls is dict:
        return {k: _unwrap(v) for k, v in obj.items()}
    return obj


def _meta(obj):
    """A result as meta: a zero-strided ndarray is viewed (it is one of ours, or a view of
    one), any other array or NumPy scalar becomes a fresh meta array of its shape and dtype."""
    cls = obj.__class__
    if cls is MetaArray:
        return obj if not any(obj.strides) else ghost(obj.shape, obj.dtype)
    if isinstance(obj, _NDARRAY):
        if obj.size > 1 and not any(obj.strides):
            return obj.view(MetaArray)
        return ghost(obj.shape, obj.dtype)
    if isinstance(obj, np.generic):
        return ghost((), obj.dtype)
    if cls is list or cls is tuple:
        return cls(_meta(o) for o in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # np.linalg's named results
        return cls(*(_meta(o) for o in obj))
    return obj


def _stand_in(x):
    """A 0-d stand-in for type resolution: arrays by their dtype, Python scalars as they are
    (NumPy's weak scalar promotion must see them)."""
    if isinstance(x, (_NDARRAY, np.generic)):
        return np.zeros((), x.dtype)
    return x


def _shape(x) -> tuple:
    return x.shape if isinstance(x, (_NDARRAY, np.generic)) else np.shape(x)


def _quiet():
    return np.errstate(all="ignore")


# -- ufuncs ------------------------------------------------------------------------------------

def _matmul_shape(a: tuple, b: tuple) -> tuple:
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b2[-2]} is "
                         f"different from {a2[-1]})")
    out = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(np.lib.array_utils.normalize_axis_tuple(axis, ndim))
    return (np.lib.array_utils.normalize_axis_index(operator.index(axis), ndim),)


def _reduced_shape(shape: tuple, axis, keepdims: bool) -> tuple:
    axes = _axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _outputs(out, results):
    if out is not None:
        return out if len(out) > 1 else out[0]
    return results if len(results) > 1 else results[0]


def _ufunc(ufunc, method: str, inputs, kwargs):
    out = kwargs.pop("out", None)
    if out is not None and not isinstance(out, tuple):
        out = (out,)
    kwargs.pop("where", None)
    if method == "at":
        return None
    if method == "__call__":
        shapes = [_shape(x) for x in inputs]
        if ufunc is np.matmul:
            shape = _matmul_shape(*shapes)
            kwargs.pop("axes", None)
            kwargs.pop("axis", None)
        elif ufunc.signature is not None:  # another gufunc: run it on the zero-strided data
            with _quiet():
                return _outputs(out, _as_tuple(_meta(getattr(ufunc, method)(
                    *_unwrap(inputs), **kwargs))))
        else:
            shape = np.broadcast_shapes(*shapes)
        stand_ins = [_stand_in(x) for x in inputs]
        if ufunc is np.matmul:  # its core dims need matrices
            stand_ins = [np.zeros((1, 1), x.dtype) if isinstance(x, _NDARRAY) else x
                         for x in stand_ins]
        with _quiet():
            probe = ufunc(*stand_ins, **kwargs)
        return _outputs(out, tuple(ghost(shape, r.dtype) for r in _as_tuple(probe)))
    a = inputs[0]
    axis = kwargs.get("axis", 0)
    if method in ("reduce", "accumulate"):
        # a stand-in of the same rank (each dim at most 1) checks the axis, the dtype and a
        # reduction of an empty dim without identity, as NumPy would on the real array
        small = np.zeros(tuple(min(s, 1) for s in a.shape), a.dtype)
        with _quiet():
            probe = getattr(ufunc, method)(small, **kwargs)
        dt = probe.dtype
        if method == "reduce":
            shape = _reduced_shape(a.shape, axis, kwargs.get("keepdims", False))
        else:
            shape = a.shape
        res = ghost(shape, dt)
        if ufunc is np.logical_and:  # ``all``: a check of values passes (see __bool__)
            res._truth = True
        return _outputs(out, (res,))
    if method == "outer":
        with _quiet():
            probe = ufunc(*(_stand_in(x) for x in inputs), **kwargs)
        shape = _shape(inputs[0]) + _shape(inputs[1])
        return _outputs(out, tuple(ghost(shape, r.dtype) for r in _as_tuple(probe)))
    with _quiet():  # reduceat: run on the zero-strided data
        res = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
    return _outputs(out, _as_tuple(_meta(res)))


def _as_tuple(r) -> tuple:
    return r if isinstance(r, tuple) else (r,)


# -- NumPy functions: shape rules ---------------------------------------------------------------

def _result_type(*arrays, dtype=None):
    return np.dtype(dtype) if dtype is not None else np.result_type(
        *(_stand_in(a) for a in arrays))


def _rule_concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    shapes = [_shape(a) for a in arrays]
    if axis is None:
        shape = (sum(math.prod(s) for s in shapes),)
    else:
        nd = len(shapes[0])
        if nd == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        ax = np.lib.array_utils.normalize_axis_index(axis, nd)
        for i, s in enumerate(shapes[1:], 1):
            if len(s) != nd:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but the array at index 0 has {nd} dimension(s) and the "
                    f"array at index {i} has {len(s)} dimension(s)")
            for d in range(nd):
                if d != ax and s[d] != shapes[0][d]:
                    raise ValueError(
                        "all the input array dimensions except for the concatenation axis "
                        f"must match exactly, but along dimension {d}, the array at index 0 "
                        f"has size {shapes[0][d]} and the array at index {i} has size {s[d]}")
        shape = shapes[0][:ax] + (sum(s[ax] for s in shapes),) + shapes[0][ax + 1:]
    res = ghost(shape, _result_type(*arrays, dtype=dtype))
    return out if out is not None else res


def _rule_stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    shapes = {_shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    (shape,) = shapes
    ax = np.lib.array_utils.normalize_axis_index(axis, len(shape) + 1)
    res = ghost(shape[:ax] + (len(arrays),) + shape[ax:], _result_type(*arrays, dtype=dtype))
    return out if out is not None else res


def _rule_where(condition, *xy):
    if not xy:
        raise _data_dependent("where(condition)")
    if len(xy) != 2:
        raise ValueError("either both or neither of x and y should be given")
    shape = np.broadcast_shapes(_shape(condition), *(_shape(v) for v in xy))
    probe = np.where(True, *(_stand_in(v) for v in xy))
    return ghost(shape, probe.dtype)


def _rule_dot(a, b, out=None):
    sa, sb = _shape(a), _shape(b)
    dt = _result_type(a, b)
    if not sa or not sb:
        shape = sa or sb
    elif len(sb) == 1:
        if sa[-1] != sb[0]:
            raise ValueError(f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) "
                             f"!= {sb[0]} (dim 0)")
        shape = sa[:-1]
    else:
        if sa[-1] != sb[-2]:
            raise ValueError(f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) "
                             f"!= {sb[-2]} (dim {len(sb) - 2})")
        shape = sa[:-1] + sb[:-2] + sb[-1:]
    return out if out is not None else ghost(shape, dt)


def _rule_tensordot(a, b, axes=2):
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ax_a = list(range(len(sa) - n, len(sa))) if n else []
        ax_b = list(range(n))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise ValueError("shape-mismatch for sum")
    ax_a = [i % len(sa) for i in ax_a] if sa else ax_a
    ax_b = [i % len(sb) for i in ax_b] if sb else ax_b
    for i, j in zip(ax_a, ax_b):
        if sa[i] != sb[j]:
            raise ValueError("shape-mismatch for sum")
    shape = tuple(s for i, s in enumerate(sa) if i not in ax_a) + tuple(
        s for j, s in enumerate(sb) if j not in ax_b)
    return ghost(shape, _result_type(a, b))


def _rule_einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    from numpy._core.einsumfunc import _parse_einsum_input

    ins, outs, ops = _parse_einsum_input(operands)
    sizes: dict = {}
    for spec, op in zip(ins.split(","), ops):
        shape = _shape(op)
        if len(spec) != len(shape):
            raise ValueError(f"einstein sum subscripts string contains too many subscripts "
                             f"for operand (subscripts {spec!r}, shape {shape})")
        for c, s in zip(spec, shape):
            known = sizes.get(c)
            if known is None or known == 1:
                sizes[c] = s
            elif s != 1 and s != known:
                raise ValueError(f"operands could not be broadcast together with remapped "
                                 f"shapes: dimension for subscript '{c}' is {known} and {s}")
    res = ghost(tuple(sizes[c] for c in outs), _result_type(*ops, dtype=dtype))
    return out if out is not None else res


def _rule_copy(a, *args, dtype=None, **kwargs):
    return ghost(_shape(a), dtype if dtype is not None else np.asarray(_stand_in(a)).dtype)


def _rule_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return ghost(_shape(a) if shape is None else shape,
                 dtype if dtype is not None else np.asarray(_stand_in(a)).dtype)


def _rule_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
                    device=None):
    return _rule_like(a, dtype, shape=shape)


def _rule_pad(array, pad_width, mode="constant", **kwargs):
    from numpy.lib._arraypad_impl import _as_pairs

    shape = _shape(array)
    widths = _as_pairs(pad_width, len(shape), as_index=True)  # NumPy's checks and errors
    return ghost(tuple(s + int(lo) + int(hi) for s, (lo, hi) in zip(shape, widths)),
                 array.dtype)


def _rule_take(a, indices, axis=None, out=None, mode="raise"):
    sa, si = _shape(a), _shape(indices)
    if axis is None:
        shape = si
    else:
        ax = np.lib.array_utils.normalize_axis_index(axis, len(sa))
        shape = sa[:ax] + si + sa[ax + 1:]
    return out if out is not None else ghost(shape, a.dtype)


def _rule_sort(a, axis=-1, kind=None, order=None, **kwargs):
    return ghost(_shape(a) if axis is not None else (a.size,), a.dtype)


def _rule_argsort(a, axis=-1, kind=None, order=None, **kwargs):
    return ghost(_shape(a) if axis is not None else (a.size,), np.intp)


def _rule_argmax(a, axis=None, out=None, *, keepdims=False):
    if axis is None:
        shape = (1,) * a.ndim if keepdims else ()
    else:
        shape = _reduced_shape(a.shape, axis, keepdims)
    return out if out is not None else ghost(shape, np.intp)


def _refuse(name: str):
    def run(*args, **kwargs):
        raise _data_dependent(f"numpy.{name}")
    return run


_RULES = {
    np.concatenate: _rule_concatenate, np.stack: _rule_stack, np.where: _rule_where,
    np.dot: _rule_dot, np.tensordot: _rule_tensordot, np.einsum: _rule_einsum,
    np.copy: _rule_copy, np.ascontiguousarray: _rule_copy, np.asfortranarray: _rule_copy,
    np.zeros_like: _rule_like, np.empty_like: _rule_like, np.ones_like: _rule_like,
    np.full_like: _rule_full_like, np.pad: _rule_pad, np.take: _rule_take,
    np.sort: _rule_sort, np.argsort: _rule_argsort, np.argmax: _rule_argmax,
    np.argmin: _rule_argmax,
}


# inside kernels, nonzero, count_nonzero, unique and bincount assume what PyTorch's fake kernels
# assume: every element non-zero and distinct, every value 0 (the bins are ``minlength``, at
# least 1); the ops whose output they are (``ember.nonzero``, ``unique``, ``bincount``,
# ``masked_select``, a boolean mask index...) refuse meta inputs themselves
# (``ember._device.refuse_meta``)
def _rule_nonzero(a):
    shape = _shape(a) or (1,)
    n = math.prod(shape)
    return tuple(ghost((n,), np.intp) for _ in shape)


def _rule_argwhere(a):
    shape = _shape(a)
    return ghost((math.prod(shape), len(shape)), np.intp)


def _rule_flatnonzero(a):
    return ghost((math.prod(_shape(a)),), np.intp)


def _rule_bincount(x, weights=None, minlength=0):
    dt = np.intp if weights is None else np.result_type(_stand_in(weights), np.float64)
    n = operator.index(minlength)
    return ghost((max(n, 1) if math.prod(_shape(x)) else n,), dt)


# np.linalg: the shapes and dtypes of the results (zeros are singular: NumPy would raise)
def _inexact(a):
    dt = _stand_in(a).dtype
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _real(dt):
    return np.dtype(dt).type(0).real.dtype


def _square(a):
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                                    "two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _rule_inv(a, *args, **kwargs):
    _square(a)
    return ghost(a.shape, _inexact(a))


def _rule_matrix_power(a, n):
    _square(a)
    return ghost(a.shape, a.dtype if operator.index(n) >= 0 else _inexact(a))


def _rule_solve(a, b):
    _square(a)
    bs = _shape(b)
    shape = np.broadcast_shapes(a.shape[:-2], bs[:-2]) + bs[-2:] if len(bs) > 1 and \
        len(bs) == a.ndim else np.broadcast_shapes(a.shape[:-1], bs)
    return ghost(shape, np.result_type(_inexact(a), _inexact(b)))


def _rule_det(a):
    _square(a)
    return ghost(a.shape[:-2], _inexact(a))


def _rule_slogdet(a):
    _square(a)
    dt = _inexact(a)
    return np.linalg._linalg.SlogdetResult(ghost(a.shape[:-2], dt),
                                           ghost(a.shape[:-2], _real(dt)))


def _rule_eigh(a, UPLO="L"):
    _square(a)
    dt = _inexact(a)
    return np.linalg._linalg.EighResult(ghost(a.shape[:-1], _real(dt)), ghost(a.shape, dt))


def _rule_eigvalsh(a, UPLO="L"):
    _square(a)
    return ghost(a.shape[:-1], _real(_inexact(a)))


def _rule_svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    m, n = a.shape[-2:]
    k, dt, lead = min(m, n), _inexact(a), a.shape[:-2]
    s_ = ghost(lead + (k,), _real(dt))
    if not compute_uv:
        return s_
    u = ghost(lead + (m, m if full_matrices else k), dt)
    vh = ghost(lead + (n if full_matrices else k, n), dt)
    return np.linalg._linalg.SVDResult(u, s_, vh)


def _rule_qr(a, mode="reduced"):
    m, n = a.shape[-2:]
    k, dt, lead = min(m, n), _inexact(a), a.shape[:-2]
    if mode == "r":
        return ghost(lead + (k, n), dt)
    q_cols = m if mode == "complete" else k
    return np.linalg._linalg.QRResult(ghost(lead + (m, q_cols), dt),
                                      ghost(lead + (q_cols, n), dt))


def _rule_pinv(a, *args, **kwargs):
    return ghost(a.shape[:-2] + (a.shape[-1], a.shape[-2]), _inexact(a))


_RULES.update({np.linalg.inv: _rule_inv, np.linalg.cholesky: _rule_inv,
               np.linalg.matrix_power: _rule_matrix_power, np.linalg.solve: _rule_solve,
               np.linalg.det: _rule_det, np.linalg.slogdet: _rule_slogdet,
               np.linalg.eigh: _rule_eigh, np.linalg.eigvalsh: _rule_eigvalsh,
               np.linalg.svd: _rule_svd, np.linalg.qr: _rule_qr, np.linalg.pinv: _rule_pinv})
def _rule_count_nonzero(a, axis=None, *, keepdims=False):
    if axis is None and not keepdims:
        return math.prod(_shape(a))
    shape = _shape(a)
    axes = _axes(axis, len(shape))
    return ghost(_reduced_shape(shape, axes, keepdims), np.intp)


def _rule_unique(ar, return_index=False, return_inverse=False, return_counts=False,
                 axis=None, *, equal_nan=True, sorted=True):
    # every element (or slice along ``axis``) distinct
    shape = _shape(ar)
    n = math.prod(shape) if axis is None else shape[
        np.lib.array_utils.normalize_axis_index(axis, len(shape))]
    res = [ghost((n,) if axis is None else shape, ar.dtype)]
    if return_index:
        res.append(ghost((n,), np.intp))
    if return_inverse:
        res.append(ghost(shape if axis is None else (n,), np.intp))
    if return_counts:
        res.append(ghost((n,), np.intp))
    return res[0] if len(res) == 1 else tuple(res)


_RULES.update({np.nonzero: _rule_nonzero, np.argwhere: _rule_argwhere,
               np.flatnonzero: _rule_flatnonzero, np.bincount: _rule_bincount,
               np.count_nonzero: _rule_count_nonzero, np.unique: _rule_unique})
for _f in (np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all,
           np.extract, np.compress, np.histogram, np.trim_zeros):
    _RULES[_f] = _refuse(_f.__name__)
del _f


# -- the array ---------------------------------------------------------------------------------

class MetaArray(np.ndarray):
    """An array with a shape and a dtype but no data (see the module doc)."""

    __array_priority__ = 30

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        rule = _RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        # NumPy's own implementation on the meta arrays: a Python one reaches the ufunc and
        # method overrides (np.sum, np.mean: no compute); a C one reads the zero-strided data
        impl = getattr(func, "_implementation", None)
        with _quiet():
            if impl is not None:
                return _meta(impl(*args, **kwargs))
            return _meta(func(*_unwrap(args), **_unwrap(kwargs)))

    # values: none to read. A kernel's checks of its values pass, as PyTorch's meta kernels
    # skip them: an ``all`` reduction is true (``if not ok.all(): raise``), anything else false
    # (``if bad.any(): raise``), and a value read as a number is 0 (``int(index.max()) >= n``).
    # The ops whose output shape depends on values refuse meta inputs themselves.
    def __bool__(self):
        return self.__dict__.get("_truth", False)

    def item(self, *args):
        return self.dtype.type(0).item()

    def __index__(self):
        return 0

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __complex__(self):
        return 0j

    def tolist(self):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    tobytes = tolist

    def __setitem__(self, key, value):
        pass

    def fill(self, value):
        pass

    def sort(self, *args, **kwargs):
        pass

    def __getitem__(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        fancy = False
        for k in keys:
            if isinstance(k, (_NDARRAY, list)) or hasattr(k, "__array__"):
                fancy = True
        if fancy:  # the gather on the zero-strided data (its size is the output's); a boolean
            # mask selects everything, as PyTorch's fake nonzero assumes (the ops whose output
            # that shape is, masked_select and nonzero, refuse meta inputs)
            if any(isinstance(k, _NDARRAY) and k.dtype == np.bool_ and k.ndim for k in keys):
                key = tuple(np.ones(k.shape, np.bool_) if isinstance(k, _NDARRAY)
                            and k.dtype == np.bool_ and k.ndim else k for k in keys)
            return _meta(_NDARRAY.__getitem__(self.view(_NDARRAY), _unwrap(key)))
        r = _NDARRAY.__getitem__(self, key)
        return ghost((), r.dtype) if isinstance(r, np.generic) else r

    def copy(self, order="C"):
        return ghost(self.shape, self.dtype)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return ghost(self.shape, self.dtype)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dtype!r} "
                            f"according to the rule {casting!r}")
        return self if (not copy and dtype == self.dtype) else ghost(self.shape, dtype)

    def view(self, *args, **kwargs):
        dtype = kwargs.get("dtype", args[0] if args else None)
        if dtype is None or isinstance(dtype, type) and issubclass(dtype, _NDARRAY):
            return _NDARRAY.view(self, *args, **kwargs)
        dtype = np.dtype(dtype)
        if dtype.itemsize == self.dtype.itemsize or not self.ndim:
            return _NDARRAY.view(self, dtype)
        last = self.shape[-1] * self.dtype.itemsize
        if last % dtype.itemsize:
            raise ValueError("When changing to a smaller dtype, its size must be a divisor of "
                             "the size of original dtype")
        return ghost(self.shape[:-1] + (last // dtype.itemsize,), dtype)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def flatten(self, order="C"):
        return ghost((self.size,), self.dtype)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _rule_argmax(self, axis, out, keepdims=keepdims)

    argmin = argmax

    def argsort(self, axis=-1, kind=None, order=None, **kwargs):
        return _rule_argsort(self, axis)

    def dot(self, b, out=None):
        return _rule_dot(self, b, out)

    def repeat(self, repeats, axis=None):
        return _meta(np.repeat(self.view(_NDARRAY), repeats, axis))

    def nonzero(self):
        return _rule_nonzero(self)

    def __reduce_ex__(self, protocol):
        return (ghost, (self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__

    def __format__(self, spec) -> str:
        return repr(self)


# -- the array module --------------------------------------------------------------------------

def _zeros(shape, dtype=float, order="C", *, like=None, device=None):
    return ghost(shape, dtype)


def _full(shape, fill_value, dtype=None, order="C", *, like=None, device=None):
    if dtype is None:
        dtype = np.asarray(_stand_in(fill_value)).dtype
    return ghost(shape, dtype)


def _arange(start, stop=None, step=1, dtype=None, *, like=None, device=None):
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("division by zero")
    n = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        dtype = np.arange(start, start + step, step).dtype if n else np.result_type(
            start, stop, step)
    return ghost((n,), dtype)


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
              device=None):
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt = dtype if dtype is not None else np.result_type(float(0), _stand_in(start),
                                                        _stand_in(stop))
    res = ghost((int(num),) + np.broadcast_shapes(_shape(start), _shape(stop)), dt)
    return (res, float("nan")) if retstep else res


def _eye(N, M=None, k=0, dtype=float, order="C", *, like=None, device=None):
    return ghost((N, N if M is None else M), dtype)


def _identity(n, dtype=None, *, like=None):
    return ghost((n, n), float if dtype is None else dtype)


def _asarray(a, dtype=None, order=None, *, copy=None, like=None, device=None, ndmin=0,
             subok=False):
    if isinstance(a, MetaArray):
        return a if (dtype is None or np.dtype(dtype) == a.dtype) and not copy else ghost(
            a.shape, a.dtype if dtype is None else dtype)
    arr = np.asarray(a, dtype=dtype)  # host data: small, or already in memory
    shape = (1,) * max(0, ndmin - arr.ndim) + arr.shape
    return ghost(shape, arr.dtype)


def _as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    shape = x.shape if shape is None else tuple(shape)
    out = _NDARRAY.__new__(MetaArray, shape, x.dtype, buffer=np.zeros(1, x.dtype),
                           strides=(0,) * len(shape))
    return out


_CREATION = {
    "zeros": _zeros, "empty": _zeros, "ones": _zeros, "full": _full, "arange": _arange,
    "linspace": _linspace, "eye": _eye, "identity": _identity, "asarray": _asarray,
    "array": _asarray, "asanyarray": _asarray, "ascontiguousarray": _asarray,
    "lib.stride_tricks.as_strided": _as_strided,
}


class MetaNumpy(types.ModuleType):
    """NumPy as the meta device's array module (see the module doc)."""

    def __init__(self, base=np, name: str = "ember_meta_numpy", _path: str = ""):
        super().__init__(name)
        self._base = base
        self._path = _path

    def __getattr__(self, name: str):
        attr = getattr(self._base, name)
        qual = f"{self._path}.{name}".lstrip(".")
        if name == "ndarray":
            value = MetaArray
        elif qual in _CREATION:
            value = _CREATION[qual]
        elif isinstance(attr, types.ModuleType):
            value = MetaNumpy(attr, f"{self.__name__}.{name}", _path=qual)
        elif isinstance(attr, np.ufunc):
            value = _MetaUfunc(attr)
        elif isinstance(attr, type) or not callable(attr):
            value = attr  # dtypes, scalar types, constants, errstate
        else:
            value = _meta_function(attr)
        setattr(self, name, value)
        return value


def _meta_function(fn):
    rule = _RULES.get(fn)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if rule is not None:
            return _meta(rule(*args, **kwargs))
        with _quiet():
            return _meta(fn(*args, **kwargs))

    return run


class _MetaUfunc:
    """A ufunc of the meta module: host operands too give meta results."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _meta(_ufunc(self._ufunc, "__call__", args, dict(kwargs)))

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if name in ("reduce", "accumulate", "outer", "at", "reduceat"):
            uf = self._ufunc

            def method(*args, **kwargs):
                if name in ("reduce", "accumulate") and len(args) > 1:
                    kwargs = dict(zip(("axis", "dtype", "out"), args[1:]), **kwargs)
                    args = args[:1]
                return _meta(_ufunc(uf, name, args, dict(kwargs)))
            return method
        return attr


meta_numpy = MetaNumpy()


# -- random draws ------------------------------------------------------------------------------

#: where each NumPy Generator method Ember calls takes ``size`` positionally
_SIZE_AT = {"random": 0, "standard_normal": 0, "standard_exponential": 0, "standard_cauchy": 0,
            "integers": 2, "uniform": 2, "normal": 2, "lognormal": 2, "binomial": 2,
            "gamma": 2, "beta": 2, "exponential": 1, "poisson": 1, "geometric": 1,
            "standard_gamma": 1}
_INT_DRAWS = {"integers", "binomial", "poisson", "geometric"}


class _MetaRNG:
    """A random generator for the meta device: each draw is a meta array of its shape."""

    def __getattr__(self, name: str):
        at = _SIZE_AT.get(name)
        if at is None:
            raise AttributeError(f"meta device: no meta draw for Generator.{name}")

        def draw(*args, size=None, dtype=None, **kwargs):
            params = list(args[:at])
            if size is None and len(args) > at:
                size = args[at]
            if size is None:
                shape = np.broadcast_shapes(*(_shape(p) for p in params))
            else:
                shape = size
            if dtype is None:
                dtype = np.int64 if name in _INT_DRAWS else np.float64
            return ghost(shape, dtype)

        return draw


META_RNG = _MetaRNG()


# -- the backend -------------------------------------------------------------------------------

class MetaBackend(Backend):
    """The ``meta`` device type: arrays without data (see the module doc)."""

    type = "meta"
    xp = meta_numpy

    def to_device(self, array, index=None):
        return ghost(np.shape(array), array.dtype if hasattr(array, "dtype") else
                     np.asarray(array).dtype)

    def to_host(self, array):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")


register_backend(MetaBackend())
