"""The view-copy ops (``permute_copy``, ``view_copy``, ``split_copy``, ...): each runs a view
op and returns fresh, contiguous tensors that share no memory with the input, as PyTorch's
``*_copy`` functions (the functionalized views) do.

They are made from one table, :data:`VIEW_COPIES` (copy name -> view function), by one
factory: the copy takes the view's parameters plus ``out=``, and its gradient is the view's
own backward node, renamed ``<Node>_copy`` as in PyTorch (``PermuteBackward0_copy``). The
dense ones are registered ops (so the tracer, vmap and ``__torch_function__`` see them); the
parts of sparse tensors (``values_copy``, ``crow_indices_copy``, ...) are exports, like the
other sparse functions of ``ops/sparse_ops.py``.

``out=`` follows PyTorch's ``*_copy.out`` kernels: the dtype must be the result's, a
non-empty ``out`` of another shape is resized with PyTorch's deprecation warning, and an
input that requires grad gives ``out`` a ``NotImplemented`` history (PyTorch does not
differentiate the ``out=`` forms; an ``out`` that itself requires grad is an error).

PyTorch's exceptions hold: ``detach_copy``'s result requires grad through a
``NotImplemented`` node; ``view_as_complex_copy``, ``select_copy`` and ``slice_copy`` refuse to
differentiate into a complex result; ``view_copy`` reshapes where the strides allow no view.
Under forward AD a copy records a ``CloneBackward0`` over the view, whose tangent it carries.

``slice_inverse`` lives here too: the view of ``input``'s memory with ``src``'s geometry, the
inverse of a slice in functionalization.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Sequence

from .. import _dtype
from .._front import front
from .._tensor import Tensor, _make
from ..autograd import graph as _graph
from ..autograd.grad_mode import GRAD, no_grad
from ..autograd.graph import make_node_class
from . import complex_ops, shape, views
from ._inplace import resize_out
from ._promotion import wrap_dim
from .indexing import SliceBackward0, basic_view
from .pointwise import copy_as
from .registry import register, register_batch_rule, register_export
from .statistics import record_no_derivative

__all__ = ["VIEW_COPIES", "SPARSE_VIEW_COPIES", "slice_inverse"]


# -- the views that have no public function of their own (or not PyTorch's signature) -------

def _slice(input, dim=0, start=None, end=None, step=1):
    """``input[..., start:end:step]`` along ``dim`` (ATen's ``slice``), a view."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, d.ndim)
    step = operator.index(step)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    start = None if start is None else operator.index(start)
    end = None if end is None else operator.index(end)
    return basic_view(input, (slice(None),) * dim + (slice(start, end, step), Ellipsis),
                      SliceBackward0)


def _expand(input, size, *, implicit=False):
    """``Tensor.expand`` (``implicit`` is ATen's marker of broadcasting; it changes nothing)."""
    return shape.expand(input, size)


def _split(input, split_size, dim=0):
    """``split`` by one size (ATen's ``split.Tensor``: a list of sizes is
    ``split_with_sizes``)."""
    if isinstance(split_size, (list, tuple)):
        raise TypeError("split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return shape.split(input, split_size, dim)


def _view(input, size=None, dtype=None):
    """``Tensor.view``: a new shape, or the same memory read as a dtype (``view_copy(x,
    dtype=...)`` too). As ATen's ``view_copy``, a shape that the strides cannot view is a
    reshape (it is copied anyway)."""
    if isinstance(size, _dtype.dtype) or size is None or dtype is not None:
        return shape.view(input, size, dtype)
    target = shape._infer_shape(shape._int_tuple(size), input._data.size)
    if shape._view_array(input._data, target) is None:
        return shape.reshape(input, target)
    return shape.view(input, target)


def _alias(input):
    """A view of all of ``input``."""
    return views.alias(input)


def _detach(input):
    """``input`` outside the graph."""
    return input.detach()


def _sparse_part(name: str):
    def part(input):
        return getattr(input, name)()

    part.__name__ = part.__qualname__ = name
    part.__doc__ = f"``Tensor.{name}()`` of a sparse tensor (a view of its storage)."
    return part


# -- the table ----------------------------------------------------------------------------------

#: copy name -> the view it copies (dense tensors: registered ops)
VIEW_COPIES = {
    "alias_copy": _alias,
    "as_strided_copy": shape.as_strided,
    "detach_copy": _detach,
    "diagonal_copy": shape.diagonal,
    "expand_copy": _expand,
    "permute_copy": shape.permute,
    "select_copy": shape.select,
    "slice_copy": _slice,
    "split_copy": _split,
    "split_with_sizes_copy": shape.split_with_sizes,
    "squeeze_copy": shape.squeeze,
    "t_copy": shape.t,
    "transpose_copy": shape.transpose,
    "unbind_copy": shape.unbind,
    "unfold_copy": shape.unfold,
    "unsqueeze_copy": shape.unsqueeze,
    "view_as_complex_copy": complex_ops.view_as_complex,
    "view_as_real_copy": complex_ops.view_as_real,
    "view_copy": _view,
}

#: copy name -> the part of a sparse tensor it copies (exports, as the sparse functions are)
SPARSE_VIEW_COPIES = {f"{n}_copy": _sparse_part(n) for n in (
    "indices", "values", "crow_indices", "col_indices", "ccol_indices", "row_indices")}

#: the list-returning copies: how their ``out=`` list is filled (PyTorch's kernels differ:
#: ``split_copy`` copies into the given tensors, the others resize them) and the ATen name of
#: the out overload, which PyTorch's count error names
_LIST_OUT = {"split_copy": ("copy", "split_copy_Tensor_out()"),
             "split_with_sizes_copy": ("resize", "split_with_sizes_copy_out"),
             "unbind_copy": ("resize", "unbind_copy_int_out")}

#: the types that a copy's signature gives where the view's source has none (the stubs read
#: them: ``tools/gen_stubs.py``)
_ANNOTATIONS = {
    "select_copy": {"index": int},
    "split_copy": {"split_size": int, "out": Sequence[Tensor] | None,
                   "return": tuple[Tensor, ...]},
    "split_with_sizes_copy": {"split_sizes": Sequence[int], "out": Sequence[Tensor] | None,
                              "return": tuple[Tensor, ...]},
    "unbind_copy": {"dim": int, "out": Sequence[Tensor] | None, "return": tuple[Tensor, ...]},
    "view_copy": {"size": Sequence[int] | int | _dtype.dtype | None,
                  "dtype": _dtype.dtype | None},
    "slice_copy": {"dim": int, "start": int | None, "end": int | None, "step": int},
}

#: copies whose result has no derivative in PyTorch (a ``NotImplemented`` history)
_NO_DERIVATIVE = {"detach_copy"}
#: copies that PyTorch refuses to differentiate into a complex result (an error; the first
#: one's result is always complex, so it never differentiates)
_NO_COMPLEX_GRAD = {"view_as_complex_copy", "select_copy", "slice_copy"}


def _refuse_complex_grad(name: str, res: Tensor) -> None:
    """PyTorch's error for an op without a complex derivative whose complex result would
    require grad."""
    if res.requires_grad and res._data.dtype in _dtype.COMPLEX_NP:
        raise RuntimeError(f"{name} does not support automatic differentiation for outputs "
                           "with complex dtype.")


# -- the factory --------------------------------------------------------------------------------

_COPY_NODES: dict = {}


def _copy_node_class(cls: type) -> type:
    """``<cls>_copy``: the view's backward under PyTorch's name for the copy's node."""
    c = _COPY_NODES.get(cls)
    if c is None:
        c = _COPY_NODES[cls] = type(cls.__name__ + "_copy", (cls,), {"__slots__": ()})
    return c


def _fresh(v: Tensor, mark: int, renamed: dict) -> Tensor:
    """A contiguous copy of view ``v`` that owns its memory. Its history is the view's own
    node (renamed ``_copy``) when the view op recorded one (``seq`` after ``mark``), else a
    ``CloneBackward0`` (a view that hands out a stored tensor, as ``values()`` does, and
    under forward AD)."""
    node = v.grad_fn
    if node is None or node.seq <= mark or _graph._FW_HOOK is not None:
        # forward AD reads a view's tangent off its base's: a recorded clone carries it
        return copy_as(v)
    out = _make(v._data.copy(), v._device)
    if id(node) not in renamed:
        renamed[id(node)] = node
        node.__class__ = _copy_node_class(type(node))
    out.requires_grad = True
    out.grad_fn = node
    out._nr = v._nr
    return out


def _check_out(name: str, out, res: Tensor) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.requires_grad and GRAD.enabled:
        raise RuntimeError(f"aten::{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if out._data.dtype != res._data.dtype:
        raise RuntimeError("Expected out tensor to have dtype "
                           f"{_dtype.options_type_name(res._data.dtype)}, but got "
                           f"{_dtype.options_type_name(out._data.dtype)} instead")
    if out._device != res._device:
        raise RuntimeError(f"Attempting to copy from device {res._device} to device "
                           f"{out._device}, but cross-device copies are not allowed!")


def _resize_into(out: Tensor, res: Tensor) -> None:
    """Write ``res`` into ``out``, resizing ``out`` (with PyTorch's warning when it had
    elements) where the shapes differ."""
    resize_out(out, res._data)
    out._bump_version()


def _into_out(name: str, view, args, kwargs, out):
    with no_grad():
        res = view(*args, **kwargs)
    inputs = [a for a in args if isinstance(a, Tensor)]
    if isinstance(res, Tensor):
        _check_out(name, out, res)
        _resize_into(out, res)
        return record_no_derivative(out, inputs, name)
    how, aten = _LIST_OUT[name]
    if not isinstance(out, (list, tuple)) or not all(isinstance(o, Tensor) for o in out):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(res):
        raise RuntimeError(f"{aten} expected an out= argument of size {len(res)}, got size "
                           f"{len(out)}")
    for o, r in zip(out, res):
        _check_out(name, o, r)
        if how == "copy":
            with no_grad():
                o.copy_(r)
        else:
            _resize_into(o, r)
        record_no_derivative(o, inputs, name)
    return None


def _make_copy(name: str, view):
    """The copy op ``name`` of ``view``: ``view``'s parameters plus ``out=``."""
    no_derivative = name in _NO_DERIVATIVE
    no_complex_grad = name in _NO_COMPLEX_GRAD
    view_name = name.removesuffix("_copy")

    def copy_op(*args, out=None, **kwargs):
        if out is not None:
            return _into_out(name, view, args, kwargs, out)
        mark = next(_graph._SEQ)  # nodes the view records come after it
        res = view(*args, **kwargs)
        renamed: dict = {}
        if isinstance(res, Tensor):
            if no_complex_grad:
                _refuse_complex_grad(name, res)
            r = _fresh(res, mark, renamed)
            if no_derivative:
                record_no_derivative(r, args[:1], name)
            return r
        return tuple(_fresh(v, mark, renamed) for v in res)

    sig = inspect.signature(view)
    types = _ANNOTATIONS.get(name, {})
    params = [p.replace(annotation=types.get(p.name, p.annotation))
              for p in sig.parameters.values() if p.name != "out"]
    params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None,
                                    annotation=types.get("out", Tensor | None)))
    copy_op.__signature__ = sig.replace(
        parameters=params, return_annotation=types.get("return", sig.return_annotation))
    copy_op.__name__ = copy_op.__qualname__ = name
    what = " ".join(inspect.cleandoc(view.__doc__ or "").split("\n\n")[0].split())
    if no_derivative:
        grad = ("Its result requires grad when ``input`` does, through a ``NotImplemented`` "
                "node whose backward raises, as in PyTorch.")
    elif name == "view_as_complex_copy":
        grad = ("As in PyTorch, its complex result is not differentiated: an input that "
                "requires grad is an error.")
    else:
        grad = f"Differentiable as ``{view_name}`` is (the copy's node is its backward)."
        if no_complex_grad:
            grad += " As in PyTorch, a complex result is not: an error."
    copy_op.__doc__ = (
        f"Performs the same operation as ``{view_name}``, but all output tensors are freshly "
        "created instead of aliasing the input: contiguous, with memory of their own.\n\n"
        f"``{view_name}``: {what}\n\n{grad} ``out=`` is checked as PyTorch's (dtype, "
        "device; a non-empty ``out`` of another shape is resized with a warning) and not "
        "differentiated.\n")
    return copy_op


def _copy_batch_rule(rule, view):
    """vmap's rule of a copy: the view's rule, its outputs copied (``out=``: the loop)."""

    def batched(ctx, func, args, kwargs):
        if kwargs.get("out") is not None:
            return NotImplemented
        res = rule(ctx, view, args, kwargs)
        if res is NotImplemented:
            return res
        if isinstance(res, Tensor):
            return res.contiguous().clone()
        return tuple(r.contiguous().clone() for r in res)

    return batched


def _register_all() -> None:
    from .registry import batch_rule

    for name, view in VIEW_COPIES.items():
        fn = _make_copy(name, view)
        register(name, method=False,
                 differentiable=name not in _NO_DERIVATIVE | {"view_as_complex_copy"})(fn)
        rule = batch_rule(name.removesuffix("_copy"))
        if rule is not None:
            register_batch_rule(name)(_copy_batch_rule(rule, view))
    for name, part in SPARSE_VIEW_COPIES.items():
        register_export(name, front(_make_copy(name, part)))  # values_copy(x=t)


# -- slice_inverse -----------------------------------------------------------------------------

def _slice_inverse_bw(node, g):
    dim, start, end, step = node.ctx
    g_input = g_src = None
    if node.needs_grad(0):
        g_input = _slice(g, dim, start, end, step).contiguous()
    if node.needs_grad(1):
        s = _slice(g, dim, start, end, step)
        g_src = shape.slice_scatter(g, s.new_zeros(s.shape), dim, start, end, step)
    return g_input, g_src


SliceInverseBackward0 = make_node_class("SliceInverseBackward0", _slice_inverse_bw)


@register("slice_inverse", view=True)
def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """The inverse of ``src.slice(dim, start, end, step)`` (``src[..., start:end:step]``
    along ``dim``) when ``input`` is that slice: a view of ``input``'s memory with ``src``'s
    sizes, strides and storage offset, so a view of the base ``src`` was sliced from.

    ``input`` must reach enough memory for ``src``'s geometry (it is a slice of a tensor laid
    out as ``src``); ``dim``, ``start``, ``end`` and ``step`` only route the gradient: to
    ``input`` the gradient's slice, to ``src`` the rest of it.
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"slice_inverse(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    with no_grad():
        res = shape.as_strided(input, src._data.shape, src.stride(), src.storage_offset())
    if GRAD.enabled and (input.requires_grad or src.requires_grad):
        if res._data.dtype in _dtype.COMPLEX_NP:
            raise RuntimeError("slice_inverse does not support automatic differentiation for "
                               "outputs with complex dtype.")
        _graph.record(SliceInverseBackward0, res, (input, src), (), (dim, start, end, step))
    return res


_register_all()
