"""Writing into existing tensors: in-place variants of ops (``make_inplace``, with
PyTorch's autograd checks and history rebasing) and ``out=`` arguments (``accepts_out``)."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._format import shape_str
from .._meta import MetaArray
from .._native import ufunc as _native_ufunc
from .._sparse_tensor import SparseTensor
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd import graph as _fw_graph
from ..autograd.grad_mode import GRAD
from ._casts import cast_to
from ._factories import _F32, _F64
from ._promotion import _dtype_category, broadcast_shape

__all__ = ["writable", "shares_elements", "shared_alias", "SHARED_WRITE", "PARTIAL_OVERLAP",
           "same_owner", "partial_overlap", "write_inplace", "check_inplace_autograd",
           "make_inplace", "rebase_history", "write_out", "resize_out", "accepts_out",
           "fast_floats"]


def writable(arr) -> bool:
    """Whether ``arr`` may be written: NumPy's writeable flag; CuPy arrays have none, so there
    a view in which one element is reached through a zero stride (expand's) is refused, as
    PyTorch refuses writing to memory that several elements share."""
    flags = getattr(arr, "flags", None)
    writeable = getattr(flags, "writeable", None)
    if writeable is not None:
        return bool(writeable)
    return not any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))


SHARED_WRITE = ("unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.")


def shares_elements(arr) -> bool:
    """Whether several elements of ``arr`` are one memory location: a zero stride over a
    dim of more than one element (expand's views, ``as_strided``'s). PyTorch's
    ``has_internal_overlap`` is ``Yes`` exactly there; the ops that write through its
    TensorIterator refuse such an output."""
    return any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))


def shared_alias(arr):
    """A writable alias of ``arr`` where it is read-only only as expand's view of writable
    memory (NumPy's ``broadcast_to`` marks its views read-only), else None. PyTorch writes
    through such views where no two writes to one location can differ: ``fill_``,
    ``zero_``, a number set through an index, and (deprecated, with a warning)
    ``masked_fill_``/``index_fill_``/``index_put_``."""
    flags = getattr(arr, "flags", None)
    if getattr(flags, "writeable", True) or not shares_elements(arr):
        return arr if flags is None or flags.writeable else None
    alias = arr.view()
    try:
        alias.flags.writeable = True
    except ValueError:  # the memory itself is read-only (a read-only NumPy array shared)
        return None
    return alias


#: the in-place ops that PyTorch runs on a tensor with shared elements (expand's views)
_SHARED_OK = frozenset({"fill_", "zero_"})

PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                   "written-to tensor refer to a single memory location. Please clone() the "
                   "tensor before performing the operation.")

#: PyTorch's in-place ops (TensorIterator's) that refuse an input overlapping the written
#: tensor in part (``x[1:].add_(x[:-1])``, ``x.copy_(x.t())``); the same memory in the same
#: layout (``x.add_(x)``) is allowed
_OVERLAP_CHECKED = frozenset(
    "copy_ add_ sub_ subtract_ mul_ multiply_ div_ divide_ true_divide_ floor_divide_ "
    "remainder_ fmod_ pow_ float_power_ atan2_ arctan2_ hypot_ copysign_ xlogy_ ldexp_ "
    "nextafter_ lerp_ addcmul_ addcdiv_ bitwise_and_ bitwise_or_ bitwise_xor_ "
    "bitwise_left_shift_ bitwise_right_shift_ logical_and_ logical_or_ logical_xor_ eq_ ne_ "
    "lt_ le_ gt_ ge_ less_ less_equal_ greater_ greater_equal_ not_equal_ clamp_ clip_ "
    "clamp_min_ clamp_max_ gcd_ lcm_ heaviside_ igamma_ igammac_".split())


def _dense(a) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``: the elements tile one block of memory."""
    f = a.flags
    if f.c_contiguous or f.f_contiguous:
        return True
    expected = a.itemsize
    for st, n in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def same_owner(a, b) -> bool:
    """Whether the arrays ``a`` and ``b`` are views of one array's memory (NumPy's ``base``
    names the owner of a view's memory)."""
    ab, bb = a.base, b.base
    return (a if ab is None else ab) is (b if bb is None else bb)


def partial_overlap(out, inp) -> bool:
    """Whether the arrays ``out`` and ``inp`` share memory in part, by PyTorch's
    ``get_overlap_status``: only dense layouts are compared (others are "too hard" and
    pass), and the same block in the same layout is a full overlap, which is allowed."""
    if out is inp or not same_owner(out, inp) or not isinstance(out, np.ndarray) \
            or not out.size or not inp.size:
        return False
    if not (_dense(out) and _dense(inp)):
        return False
    lo, hi = np.lib.array_utils.byte_bounds(out)
    lo2, hi2 = np.lib.array_utils.byte_bounds(inp)
    if lo == lo2 and hi == hi2:
        return out.strides != inp.strides or out.shape != inp.shape
    return lo < hi2 and lo2 < hi


def write_inplace(self: Tensor, result, name: str) -> None:
    """Copy ``result`` (array) into ``self``'s memory with PyTorch's shape and dtype checks."""
    sd = self._data
    if result.shape != sd.shape:
        target = broadcast_shape(result.shape, sd.shape)
        if target != sd.shape:
            raise RuntimeError(f"output with shape [{shape_str(sd.shape)}] doesn't match the "
                               f"broadcast shape [{shape_str(target)}]")
    if result.dtype is not sd.dtype:
        if _dtype_category(result.dtype) > _dtype_category(sd.dtype):
            raise RuntimeError(f"result type {_dtype.scalar_type_name(result.dtype)} can't be "
                               "cast to the desired output type "
                               f"{_dtype.scalar_type_name(sd.dtype)}")
    flags = getattr(sd, "flags", None)
    if flags is None:  # CuPy: no flags; a zero stride is the only sharing it can have
        if not writable(sd) and name not in _SHARED_OK:
            raise RuntimeError(SHARED_WRITE)
    elif not flags.writeable or (not flags.c_contiguous and shares_elements(sd)
                                 and sd.__class__ is not MetaArray):  # (meta: no memory)
        sd = shared_alias(sd) if name in _SHARED_OK else None
        if sd is None:
            raise RuntimeError(SHARED_WRITE)
    if sd.dtype in _dtype.FLOAT8_NP and result.dtype != sd.dtype:
        result = _dtype.float8_cast(result, sd.dtype)  # PyTorch's float8 conversions
    if sd.ndim:
        sd[...] = result
    else:
        sd[()] = result


def check_inplace_autograd(self: Tensor, name: str, tracked: bool = True) -> None:
    """PyTorch's refusals of an in-place op under grad mode: on a leaf that requires grad, on
    a view of one, and (when the op takes part in autograd, ``tracked``) on an output of a
    function that returns several views (``split``, ``chunk``, ``unbind``)."""
    if tracked:
        extra = self._extra
        if extra is not None and "multi" in extra and self._base is not None:
            from .views import multi_view_message

            raise RuntimeError(multi_view_message(self))
    if self.requires_grad and self.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = getattr(self, "_base", None)  # checked before the write, not after it
    if base is not None and base.requires_grad and base.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def make_inplace(fn, name: str):
    """``Tensor.<op>_``: run the out-of-place op, write into ``self``, rebase its history."""

    from .._front import method_aliases, method_positions

    renames = method_aliases(fn)
    positions = method_positions(fn) if renames else {}
    overlap_checked = name in _OVERLAP_CHECKED
    fast = _FAST_UFUNCS.get(name)

    def inplace(self, *args, **kwargs):
        if fast is not None and not kwargs and len(args) == 1 and self.__class__ is Tensor \
                and _fast_inplace(self, args[0], fast):
            return self
        if kwargs and renames:  # PyTorch's NumPy keyword names: t.cumsum_(axis=0)
            kwargs = _renamed(kwargs, renames, name, len(args), positions)
        if overlap_checked:  # (inline: a call costs as much as the check)
            for a in (args if not kwargs else (*args, *kwargs.values())):
                if isinstance(a, Tensor):
                    d, sd = a._data, self._data
                    if isinstance(d, np.ndarray) and isinstance(sd, np.ndarray) and \
                            (d.base is not None or sd.base is not None) and \
                            partial_overlap(sd, d):
                        raise RuntimeError(PARTIAL_OVERLAP)
        try:
            if GRAD.enabled and (self.requires_grad or _any_requires_grad(args)):
                return _inplace_with_grad(self, fn, name, args, kwargs)
            r = fn(self, *args, **kwargs)
            write_inplace(self, r._data, name)
        except NotImplementedError:  # a sparse tensor's array refused: its own kernel
            from .._sparse_tensor import sparse_inplace

            return sparse_inplace(name, fn, self, *args, **kwargs)
        self._bump_version()
        return self

    inplace.__name__ = inplace.__qualname__ = name
    if renames:
        inplace._ember_aliases = renames
    return inplace


def fast_floats(first, *others):
    """The NumPy dtype that ``first`` and ``others`` share where all are plain ``Tensor``s (no
    subclass) over NumPy float32 or float64 arrays on one device and none has a gradient to
    record; None otherwise. The common test of the no-grad fast paths (``_fast_inplace``
    here, ``_scaled_fast``/``_addc_fast`` in arith, ``_lerp_fast`` in pointwise): each adds
    its own shape and layout conditions, and each is tested bit for bit against its general
    path (tests/core/test_pointwise_fast_paths.py). A dual tensor (forward AD) requires
    grad, and a dual level runs its ops with recording on, so this test turns them away too."""
    if first.__class__ is not Tensor:
        return None
    d = first._data
    dt = d.dtype
    if (dt is not _F32 and dt is not _F64) or d.__class__ is not np.ndarray:
        return None
    dev, grad = first._device, first.requires_grad
    for t in others:
        if t.__class__ is not Tensor:
            return None
        d = t._data
        if d.dtype is not dt or d.__class__ is not np.ndarray or t._device is not dev:
            return None
        grad = grad or t.requires_grad
    return None if grad and GRAD.enabled else dt


#: the in-place ops whose common call (``p.mul_(0.9)``, ``m.add_(g)``) writes into ``self``
#: with the ufunc itself (``_fast_inplace``)
_FAST_UFUNCS = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.divide}


def _fast_inplace(self: Tensor, other, ufunc) -> bool:
    """``self.<op>_(other)`` written straight into ``self``'s array where that gives the
    general path's result (the out-of-place op, then copied in): a float32/float64 CPU tensor
    in a writable C-contiguous array, ``other`` a Python number or a tensor of its dtype,
    device and shape that is not another view of the same memory, and no gradient, forward
    gradient or mode to record. What hand-written optimizers run per parameter per step:
    ~0.5 us instead of ~2 us. False, with nothing written, where the general path must run."""
    cls = other.__class__
    if cls is Tensor:
        if fast_floats(self, other) is None:
            return False
        sd, od = self._data, other._data
        if od.shape != sd.shape or od is not sd and (od.base is not None or sd.base is not None):
            return False
        x = od
    elif cls is float or cls is int and -2 ** 63 <= other < 2 ** 64:  # (PyTorch refuses
        if fast_floats(self) is None:  # a larger int: the general path raises its error)
            return False
        sd, x = self._data, other
    else:
        return False
    flags = sd.flags
    # (a dual level: the general path writes an in-place op's tangent in place, as PyTorch)
    if not (flags.c_contiguous and flags.writeable) or _fw_graph._FW_HOOK is not None:
        return False
    if _native_ufunc(ufunc, sd, x, sd) is None:
        ufunc(sd, x, out=sd)
    self._bump_version()
    return True


def _renamed(kwargs: dict, renames: dict, name: str, nargs: int, positions: dict) -> dict:
    out = {}
    for k, v in kwargs.items():
        k2 = renames.get(k, k)
        if k in renames and positions.get(k2, nargs) < nargs:  # given positionally too
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
        if k2 in out:  # both the name and its alias: PyTorch names the alias
            alias = k if k in renames else next(a for a in kwargs if renames.get(a) == k2)
            raise TypeError(f"{name}() got an unexpected keyword argument '{alias}'")
        out[k2] = v
    return out


def _any_requires_grad(args) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            return True
    return False


def _inplace_with_grad(self, fn, name, args, kwargs):
    check_inplace_autograd(self, name)
    # the op sees a snapshot of self's old value and history; self then takes the new value
    snap = _make(self._data.copy(), self._device)
    snap.requires_grad = self.requires_grad
    snap.grad_fn = self.grad_fn
    nr = getattr(self, "_nr", 0)
    if nr:
        snap._nr = nr
    if _fw_graph._FW_HOOK is not None and self._base is not None:  # forward AD: the view's
        from ..autograd.forward_ad import snapshot_view  # tangent goes with its snapshot

        snapshot_view(snap, self)
    r = fn(snap, *args, **kwargs)
    write_inplace(self, r._data, name)
    self._bump_version()
    if r.grad_fn is None and name in _ZERO_GRAD_INPLACE:
        r = _zero_grad_result(r, name, snap, args)
    rebase_history(self, r)
    return self


#: in-place comparisons write 0/1 in ``self``'s dtype: PyTorch's EqBackward0/1... give zero
#: gradients there (the out-of-place ops return bool tensors, outside autograd); without a
#: node the overwritten tensor kept its old history (an identity gradient)
_ZERO_GRAD_INPLACE = {f"{n}_": f"{n[:1].upper()}{n[1:]}Backward0" for n in (
    "eq", "ne", "lt", "le", "gt", "ge")}
_ZERO_GRAD_INPLACE.update({"less_": "LtBackward0", "less_equal_": "LeBackward0",
                           "greater_": "GtBackward0", "greater_equal_": "GeBackward0",
                           "not_equal_": "NeBackward0"})
_ZERO_NODES: dict = {}


def _zero_bw(node, g):
    return tuple(None if m is None or not node.needs_grad(i) else g.new_zeros(m)
                 for i, m in enumerate(node.ctx))


def _zero_grad_result(r: Tensor, name: str, snap: Tensor, args) -> Tensor:
    """``r`` as the output of a zero-gradient node over ``snap`` and a tensor ``other``."""
    other = args[0] if args and isinstance(args[0], Tensor) else None
    node_name = _ZERO_GRAD_INPLACE[name]
    if other is not None:  # PyTorch's Tensor overload: GtBackward1
        node_name = node_name[:-1] + "1"
    node_cls = _ZERO_NODES.get(node_name)
    if node_cls is None:
        from ..autograd.graph import make_node_class

        node_cls = _ZERO_NODES[node_name] = make_node_class(node_name, _zero_bw)
    inputs = (snap, other) if other is not None else (snap,)
    out = _make(r._data.astype(snap._data.dtype), r._device)  # in self's dtype, as written
    from ..autograd.graph import record

    record(node_cls, out, inputs, (), [None if t is None or not t.requires_grad else
                                       tuple(t.shape) for t in inputs])
    return out


def rebase_history(self: Tensor, result: Tensor) -> None:
    """Make ``self`` (just overwritten in place) take ``result``'s place in the graph."""
    if _fw_graph._FW_HOOK is not None:  # forward AD: the tangent is updated in place too
        from ..autograd.forward_ad import _rebase_with_tangent

        _rebase_with_tangent(self, result, _rebase_history)
        return
    _rebase_history(self, result)


def _rebase_history(self: Tensor, result: Tensor) -> None:
    base = getattr(self, "_base", None)
    if base is not None and (base.requires_grad or result.requires_grad):
        from .views import copy_slices

        copy_slices(base, self, result)
        return
    if result.grad_fn is not None:
        if result._data.dtype is not self._data.dtype or result._data.shape != self._data.shape:
            result = cast_to(result.expand(self._data.shape) if result._data.shape !=
                             self._data.shape else result, None, self.dtype, False)
        old_fn, old_nr = self.grad_fn, self._nr
        self.grad_fn = result.grad_fn
        self.requires_grad = True
        if old_nr:
            self._nr = 0
        if self._extra is not None or self._views is not None:
            from .views import follow_retain, refresh_views

            follow_retain(self, old_fn, old_nr)
            refresh_views(self)  # views of self follow its new history


#: how ``out=`` treats a dtype other than the result's: ``"cast"`` (PyTorch's elementwise
#: ops: cast unless it narrows the category, Float into Long), ``"same"`` (its structured
#: kernels, mm/addmm/tril/softmax/...: only the result's dtype), ``"result"`` (the same, in
#: the words of the ops that fix their result dtype: float_power) or ``"any"`` (its
#: reductions that compute in the out's dtype: sum, prod, cumsum, cumprod)
OUT_DTYPE_RULES = ("cast", "same", "result", "any")


#: PyTorch's ops (TensorIterator's) whose ``out=`` must have the result's dtype exactly,
#: "Found dtype Long but expected Float": the unary ops that keep their input's dtype, clamp
_EXACT_OUT = frozenset(
    "abs absolute neg negative sign sgn floor ceil round trunc fix frac bitwise_not "
    "conj_physical clamp clip clamp_min clamp_max hardshrink signbit nan_to_num".split())

#: ops with the ``"cast"`` rule that PyTorch runs without its memory-overlap checks of the
#: written-to tensor (reductions and composites that allocate their result first)
_OUT_OVERLAP_UNCHECKED = frozenset(
    "mean nanmean nansum std var logsumexp dot vdot inner histc count_nonzero isin linear "
    "repeat_interleave chain_matmul matrix_power orgqr avg_pool2d avg_pool3d binomial "
    "hash_tensor nonzero nonzero_static narrow_copy index_reduce scatter_reduce slice_scatter "
    "mvlgamma".split())

#: the ops whose ``out=`` PyTorch writes through expand's views (one memory location for
#: several elements): its fills and the reductions that write the output once per element
SHARED_OUT_OK = frozenset(
    "zeros ones full empty eye sum nansum amax amin prod std var norm any all".split())


def _check_out_overlap(od, inputs, name, dtype_rule) -> None:
    """PyTorch's TensorIterator checks of an ``out=`` array ``od`` before it is resized: no
    element reached twice (expand's views), no input that shares memory with it in part
    (the elementwise ops': the ``"cast"`` rule, less ``_OUT_OVERLAP_UNCHECKED``)."""
    if dtype_rule != "cast" or name in _OUT_OVERLAP_UNCHECKED or not isinstance(od, np.ndarray):
        return
    if not od.flags.c_contiguous and shares_elements(od) and od.__class__ is not MetaArray:
        raise RuntimeError(SHARED_WRITE)
    for a in inputs:
        if isinstance(a, Tensor):
            d = a._data
            if isinstance(d, np.ndarray) and partial_overlap(od, d):
                raise RuntimeError(PARTIAL_OVERLAP)


def write_out(out: Tensor, result: Tensor, name: str | None = None,
              dtype_rule: str = "cast", inputs=None, shared_ok: bool | None = None) -> Tensor:
    """Copy ``result`` into ``out`` as PyTorch's ``out=`` does, and return ``out``.

    The one place of ``out=``'s rules: no autograd through ``out=`` (an error when the result
    requires grad), the same device, the dtype rule (``OUT_DTYPE_RULES``), and ``out``
    resized where its shape differs, with PyTorch's deprecation warning when it had elements.
    ``name`` is the op's name for the messages (else read from the result's ``grad_fn``).
    ``inputs`` (the op's arguments, given by the fronts of elementwise ops): PyTorch's
    memory-overlap checks of ``out`` against them. ``shared_ok``: ``out`` may be an expanded
    view, written through (by default: ``name`` in ``SHARED_OUT_OK``)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name or 'op'}(): argument 'out' must be Tensor, not "
                        f"{type(out).__name__}")
    if out.__class__ is SparseTensor or result.__class__ is SparseTensor:
        from .sparse_ops import write_sparse_out

        return write_sparse_out(out, result, name, dtype_rule)
    if inputs is not None:  # (inline: the common out= owns its memory, its inputs theirs)
        od = out._data
        if od.base is None:
            for a in inputs:
                if a.__class__ is Tensor and a._data.base is od:
                    _check_out_overlap(od, inputs, name, dtype_rule)
                    break
        else:
            _check_out_overlap(od, inputs, name, dtype_rule)
    if (result.requires_grad or out.requires_grad) and GRAD.enabled:
        if name is None:
            name = result.grad_fn.name().rstrip("0123456789").removesuffix("Backward").lower() \
                if result.grad_fn is not None else "op"
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if out._device is not result._device:
        raise RuntimeError(f"Expected out tensor to have device {result._device}, but got "
                           f"{out._device} instead")
    data = result._data
    if data.dtype != out._data.dtype:
        if name in _EXACT_OUT and dtype_rule == "cast":
            _check_exact_out(name, data, out._data, inputs)
        if dtype_rule == "result":
            raise RuntimeError(f"the output given to {name} has dtype "
                               f"{_dtype.scalar_type_name(out._data.dtype)} but the operation's "
                               f"result requires dtype {_dtype.scalar_type_name(data.dtype)}")
        if dtype_rule == "same":
            raise RuntimeError("Expected out tensor to have dtype "
                               f"{_dtype.options_type_name(data.dtype)}, but got "
                               f"{_dtype.options_type_name(out._data.dtype)} instead")
        if dtype_rule == "cast" and _dtype_category(data.dtype) > _dtype_category(out._data.dtype):
            raise RuntimeError(f"result type {_dtype.scalar_type_name(data.dtype)} can't be "
                               "cast to the desired output type "
                               f"{_dtype.scalar_type_name(out._data.dtype)}")
        data = data.astype(out._data.dtype)
    resize_out(out, data, copy=data is result._data,
               shared_ok=name in SHARED_OUT_OK if shared_ok is None else shared_ok)
    out._bump_version()
    return out


def _check_exact_out(name: str, data, od, inputs) -> None:
    """``out=`` of an op in ``_EXACT_OUT`` with a dtype other than the result's ``data``:
    PyTorch's error, unless the input is complex and the result real (``abs`` of a complex
    tensor computes into a temporary and casts, as the other elementwise ops do)."""
    if name == "signbit":
        raise RuntimeError("signbit does not support non-boolean outputs.")
    if name == "nan_to_num":
        raise RuntimeError(f"nan_to_num: dtype of out: {_dtype.scalar_type_name(od.dtype)} "
                           f"should be same as input: {_dtype.scalar_type_name(data.dtype)}")
    first = inputs[0] if inputs else None
    if isinstance(first, Tensor) and first._data.dtype in _dtype.COMPLEX_NP \
            and data.dtype not in _dtype.COMPLEX_NP:
        return
    if name.startswith("cl") and any(isinstance(b, Tensor) for b in inputs[1:]):
        return  # clamp/clip with a tensor bound: TensorIterator's promotion, cast to out
    raise RuntimeError(f"Found dtype {_dtype.scalar_type_name(od.dtype)} but expected "
                       f"{_dtype.scalar_type_name(data.dtype)}")


def resize_out(out: Tensor, data, *, copy: bool = True, stacklevel: int | None = None,
               shared_ok: bool = False) -> None:
    """Write the array ``data`` into ``out``, resizing ``out`` where the shapes differ, with
    PyTorch's warning when the resized ``out`` had elements (``copy=False``: ``data`` is a
    fresh array that ``out`` may own; ``stacklevel``: the warning's, counted from here; by
    default the caller's first frame outside Ember; ``shared_ok``: an ``out`` whose elements
    share memory (expand's views) is written through rather than refused)."""
    got = out._data.shape
    if got == data.shape:
        target = out._data
        flags = getattr(target, "flags", None)
        if flags is not None and not flags.c_contiguous and shares_elements(target):
            target = shared_alias(target) if shared_ok else None
            if target is None:
                raise RuntimeError(SHARED_WRITE)  # expand's (or as_strided's) shared elements
        target[...] = data
        return
    if out._data.size:
        import warnings

        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"[{shape_str(got)}], which does not match the required output shape "
            f"[{shape_str(data.shape)}]. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can "
            "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
            "with t.resize_(0).", UserWarning,
            stacklevel=user_stacklevel() if stacklevel is None else stacklevel)
    out._data = data.copy() if copy else data


def accepts_out(fn=None, *, name: str | None = None, dtype_rule: str = "cast"):
    """Give ``fn`` PyTorch's ``out=`` keyword: the result (or each of a tuple of results) is
    written into the given tensor(s) by ``write_out`` (``dtype_rule`` as there), which are
    returned. The wrapper is ``fn``'s front (``ops._front``: its parameters plus a
    keyword-only ``out=None`` where ``fn`` has none, and PyTorch's NumPy keyword aliases).
    Used as ``@accepts_out`` or ``accepts_out(fn, name="addmm")``."""
    if dtype_rule not in OUT_DTYPE_RULES:
        raise ValueError(f"dtype_rule must be one of {OUT_DTYPE_RULES}, not {dtype_rule!r}")
    if fn is None:
        return lambda f: accepts_out(f, name=name, dtype_rule=dtype_rule)
    from .._front import front

    return front(fn, name=name, out=dtype_rule)
