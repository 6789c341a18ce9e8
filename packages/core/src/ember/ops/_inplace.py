"""Writing into existing tensors: in-place variants of ops (``make_inplace``, with
PyTorch's autograd checks and history rebasing) and ``out=`` arguments (``accepts_out``)."""

from __future__ import annotations

from .. import _dtype
from .._format import shape_str
from .._tensor import Tensor, _make
from ..autograd import graph as _fw_graph
from ..autograd.grad_mode import GRAD
from ._casts import cast_to
from ._promotion import _dtype_category, broadcast_shape

__all__ = ["writable", "write_inplace", "check_inplace_autograd", "make_inplace", "rebase_history",
           "write_out", "accepts_out"]


def writable(arr) -> bool:
    """Whether ``arr`` may be written: NumPy's writeable flag; CuPy arrays have none, so there
    a view in which one element is reached through a zero stride (expand's) is refused, as
    PyTorch refuses writing to memory that several elements share."""
    flags = getattr(arr, "flags", None)
    writeable = getattr(flags, "writeable", None)
    if writeable is not None:
        return bool(writeable)
    return not any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))


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
    if not writable(sd):
        raise RuntimeError(f"{name}: unsupported operation: the tensor is a read-only view "
                           "(e.g. of expand()); clone it first")
    if sd.ndim:
        sd[...] = result
    else:
        sd[()] = result


def check_inplace_autograd(self: Tensor, name: str) -> None:
    if self.requires_grad and self.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = getattr(self, "_base", None)  # checked before the write, not after it
    if base is not None and base.requires_grad and base.grad_fn is None and GRAD.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def make_inplace(fn, name: str):
    """``Tensor.<op>_``: run the out-of-place op, write into ``self``, rebase its history."""

    def inplace(self, *args, **kwargs):
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
    return inplace


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
    r = fn(snap, *args, **kwargs)
    write_inplace(self, r._data, name)
    self._bump_version()
    rebase_history(self, r)
    return self


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
        self.grad_fn = result.grad_fn
        self.requires_grad = True
        if getattr(self, "_nr", 0):
            self._nr = 0


def write_out(out: Tensor, result: Tensor) -> Tensor:
    """Copy ``result`` into ``out`` (resized when its shape differs), as ``out=`` does."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if result.requires_grad and GRAD.enabled:
        name = result.grad_fn.name().rstrip("0123456789").removesuffix("Backward") \
            if result.grad_fn is not None else "op"
        raise RuntimeError(f"{name.lower()}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if out._device is not result._device:
        raise RuntimeError(f"Expected out tensor to have device {result._device}, but got "
                           f"{out._device} instead")
    data = result._data
    if data.dtype != out._data.dtype:
        data = data.astype(out._data.dtype)
    if out._data.shape == data.shape:
        out._data[...] = data
    else:
        out._data = data.copy() if data is result._data else data
    out._bump_version()
    return out


def accepts_out(fn):
    """Give ``fn`` PyTorch's ``out=`` keyword: the result (or each of a tuple of results) is
    written into the given tensor(s), which are returned."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{fn.__name__}(): argument 'out' must be a tuple of "
                                f"{len(result)} Tensors")
            written = [write_out(o, r) for o, r in zip(out, result)]
            return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
        return write_out(out, result)

    return wrapper
