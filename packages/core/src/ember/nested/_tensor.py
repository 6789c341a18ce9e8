"""The nested tensor class (``ember.nested``): a batch of tensors of different shapes.

A :class:`NestedTensor` is a ``Tensor`` subclass whose elements are its *components*, ordinary
Ember tensors that carry autograd themselves:

- layout ``ember.strided``: the components are held as a tuple (each its own tensor);
- layout ``ember.jagged``: one ``values`` buffer holds the components concatenated along their
  one ragged dim (dim ``_ragged_idx - 1`` of a component), ``offsets`` (and optionally
  ``lengths``) say where each starts; the components are ``narrow`` views of ``values``.

Every op on a nested tensor runs on the components (``ember.nested._ops``, reached through
``__torch_function__``), so gradients flow to the components (or to ``values``) with no
nested-specific backward. The tensor's own ``_data`` is a placeholder that refuses array work:
a kernel that meets a nested tensor without going through dispatch fails loudly instead of
computing on something that is not its elements.

The class is defined with dispatch disabled; :func:`enable_dispatch`, called when the first
nested tensor is made, installs ``__torch_function__`` and turns ``ember.overrides`` dispatch
on (it slows every op a little, so a program that never makes a nested tensor never pays).
"""

from __future__ import annotations

import itertools

from .. import overrides
from .._layout import jagged, strided
from .._naming import PREFIX as _PREFIX
from .._size import Size
from .._tensor import Tensor
from ..overrides import disabled_torch_function_impl

__all__ = ["NestedTensor", "NestedInt"]


class NestedInt:
    """The size of a ragged dim in a jagged nested tensor's shape, printed ``j1``, ``j2``, ...
    like PyTorch's nested ints: one per ``offsets`` (tensors that share their offsets share
    it). It equals only itself."""

    __slots__ = ("_id",)
    _ids = itertools.count(1)
    _symbolic_size = True  # ember.Size() keeps it (as PyTorch's Size keeps a SymInt)

    def __init__(self) -> None:
        self._id = next(NestedInt._ids)

    def __repr__(self) -> str:
        return f"j{self._id}"

    __str__ = __repr__


class _NestedSize(Size):
    """A jagged nested tensor's shape: an ``ember.Size`` that holds a :class:`NestedInt`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{_PREFIX[0]}.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return _NestedSize(out) if isinstance(item, slice) else out


class _NestedData:
    """The ``_data`` of a nested tensor: dtype and rank, and an error for any array use."""

    __slots__ = ("dtype", "ndim", "itemsize")

    def __init__(self, np_dtype, ndim: int) -> None:
        self.dtype = np_dtype
        self.ndim = ndim
        self.itemsize = np_dtype.itemsize

    def __getattr__(self, name):
        raise NotImplementedError(
            f"nested tensors have no single array ('{name}' was asked for): the op has no "
            "nested tensor support")

    def __array__(self, *args, **kwargs):
        raise NotImplementedError("a nested tensor cannot be converted to a NumPy array")


def _unsupported(op: str, nt: NestedTensor) -> NotImplementedError:
    """PyTorch's error for an op without a nested rule (its jagged or strided wording)."""
    if nt._layout is jagged:
        return NotImplementedError(f"aten.{op}.default")
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the "
        f"'NestedTensor{nt._device.type.upper()}' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build "
        "process (if using custom build).")


class NestedTensor(Tensor):
    """A nested tensor (``torch.nested``'s): dim 0 is the batch of components, the other dims
    are the components' dims, some of them ragged. Made by :func:`ember.nested.nested_tensor`,
    :func:`ember.nested.as_nested_tensor`, :func:`ember.nested.nested_tensor_from_jagged` and
    :func:`ember.nested.narrow`; ``unbind()`` gives the components back."""

    # replaced by ember.nested._ops' handler (enable_dispatch) when the first one is made
    __torch_function__ = disabled_torch_function_impl

    # -- what it is ----------------------------------------------------------------------
    is_nested = property(lambda self: True, doc="True: this is a nested tensor.")

    @property
    def layout(self):
        """``ember.strided`` or ``ember.jagged``."""
        return self._layout

    @property
    def dtype(self):
        return self._dtype

    def _batch(self) -> int:
        return len(self._comps)

    @property
    def shape(self):
        return self.size()

    def size(self, dim: int | None = None):
        """The sizes: a jagged tensor's ragged dim is a :class:`NestedInt` (``j1``); a strided
        tensor has no size tuple when its components differ (PyTorch's error), though its
        regular dims have sizes (``size(-1)``)."""
        if dim is not None:
            from .._tensor import _wrap_dim

            d = _wrap_dim(dim, self.dim())
            if d == 0:
                return self._batch()
            if self._layout is jagged and d == self._ragged_idx:
                return self._sym
            sizes = {c.shape[d - 1] for c in self._comps}
            if len(sizes) > 1:
                raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
            if not sizes:
                raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
            return sizes.pop()
        if self._layout is strided:
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. "
                               "Please file an issue.")
        dims = [self._batch()]
        for d in range(1, self.dim()):
            dims.append(self._sym if d == self._ragged_idx else self._values.shape[d - 1])
        return _NestedSize(dims)

    def numel(self) -> int:
        return sum(c.numel() for c in self._comps)

    nelement = numel

    def stride(self, dim=None):
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. "
                           "Please file an issue.")

    def is_contiguous(self, *, memory_format=None) -> bool:
        """Strided: True (each component is contiguous). Jagged: whether the components lie
        back to back in ``values`` (no ``lengths``) and ``values`` is contiguous."""
        if self._layout is jagged:
            return self._lengths is None and self._values.is_contiguous()
        return all(c.is_contiguous() for c in self._comps)

    def data_ptr(self) -> int:
        if self._layout is jagged:
            return self._values.data_ptr()
        raise _unsupported("data_ptr", self)

    # -- components ----------------------------------------------------------------------
    def unbind(self, dim: int = 0):
        """The components, as a tuple (views of ``values`` for a jagged tensor)."""
        if dim != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0 currently")
        return tuple(self._comps)

    def __iter__(self):
        return iter(self._comps)

    def __len__(self) -> int:
        return self._batch()

    def __getitem__(self, index):
        """``nt[i]`` is component ``i``; ``nt[i, ...]`` indexes into it. Dim 0 takes only an
        integer (PyTorch has no slicing of the batch dim either)."""
        rest = ()
        if isinstance(index, tuple):
            if not index:
                return self
            index, rest = index[0], index[1:]
        if isinstance(index, Tensor) and not index.is_nested and index.dim() == 0 \
                and not index.is_floating_point():
            index = int(index.item())
        if isinstance(index, bool) or not isinstance(index, int):
            if self._layout is jagged:
                raise RuntimeError("slice(): not supported for NestedTensor on dim=0")
            raise _unsupported("slice.Tensor" if isinstance(index, slice) else "index.Tensor",
                               self)
        n = self._batch()
        if not -n <= index < n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        comp = self._comps[index]
        return comp[rest] if rest else comp

    def values(self):
        """The jagged tensor's values buffer: the components concatenated along the ragged
        dim (shared: writes show in the components)."""
        if self._layout is not jagged:
            raise RuntimeError("values(): only supported for nested tensors of the jagged "
                               "layout (ember.jagged)")
        return self._values

    def offsets(self):
        """Where each component starts along the ragged dim of ``values`` (``N + 1`` int64)."""
        if self._layout is not jagged:
            raise RuntimeError("offsets(): only supported for nested tensors of the jagged "
                               "layout (ember.jagged)")
        return self._offsets

    def lengths(self):
        """Each component's length along the ragged dim when the tensor was made with both
        offsets and lengths (a non-contiguous view), else None."""
        if self._layout is not jagged:
            raise RuntimeError("lengths(): only supported for nested tensors of the jagged "
                               "layout (ember.jagged)")
        return self._lengths

    def _nested_tensor_size(self):
        """The components' shapes as an ``(N, dim - 1)`` int64 tensor."""
        import ember

        return ember.tensor([list(c.shape) for c in self._comps], dtype=ember.int64)

    def to_padded_tensor(self, padding: float, output_size=None):
        """A regular tensor: the components padded with ``padding`` to a common shape
        (``output_size`` if given) and stacked (see :func:`ember.nested.to_padded_tensor`)."""
        from . import to_padded_tensor

        return to_padded_tensor(self, padding, output_size)

    def tolist(self) -> list:
        return [c.tolist() for c in self._comps]

    # -- autograd ------------------------------------------------------------------------
    def _leaves(self) -> tuple:
        """The tensors that hold this tensor's autograd identity."""
        return (self._values,) if self._layout is jagged else tuple(self._comps)

    @property
    def requires_grad(self) -> bool:
        return any(t.requires_grad for t in self._leaves())

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        return next((t.grad_fn for t in self._leaves() if t.grad_fn is not None), None)

    @grad_fn.setter
    def grad_fn(self, value) -> None:  # Tensor's slot is written only by ops on plain tensors
        raise AttributeError("the grad_fn of a nested tensor is its components'")

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def requires_grad_(self, requires_grad: bool = True):
        for t in self._leaves():
            t.requires_grad_(requires_grad)
        if self._layout is jagged:  # the components are views: made again, to track grad
            self._comps = tuple(_views_of(self._values, self._offsets, self._lengths,
                                          self._ragged_idx))
        return self

    @property
    def grad(self):
        """The gradient, a nested tensor of the same structure (None before backward)."""
        if self._layout is jagged:
            g = self._values.grad
            return None if g is None else _like_jagged(self, g)
        grads = [c.grad for c in self._comps]
        if all(g is None for g in grads):
            return None
        import ember

        grads = [ember.zeros_like(c) if g is None else g for c, g in zip(self._comps, grads)]
        return _strided(grads)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            for t in self._leaves():
                t.grad = None
            return
        if not isinstance(value, NestedTensor):
            raise TypeError("the grad of a nested tensor must be a nested tensor")
        if self._layout is jagged:
            self._values.grad = value._values if value._layout is jagged \
                else _cat_values(value._comps, self._ragged_idx)
        else:
            for c, g in zip(self._comps, value._comps):
                c.grad = g

    @property
    def data(self):
        return self.detach()

    def detach(self):
        """The same components without autograd history (sharing memory)."""
        if self._layout is jagged:
            return _like_jagged(self, self._values.detach())
        return _strided([c.detach() for c in self._comps])

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None):
        """Backpropagate ``gradient`` (a nested tensor of this structure) into the graph."""
        import ember

        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not isinstance(gradient, NestedTensor) or gradient._batch() != self._batch():
            raise RuntimeError("the gradient of a nested tensor must be a nested tensor with "
                               "as many components")
        ember.autograd.backward(list(self._comps), list(gradient._comps),
                                retain_graph=retain_graph, create_graph=create_graph,
                                inputs=inputs)

    def register_hook(self, hook):
        raise _unsupported("register_hook", self)

    def retain_grad(self):
        raise _unsupported("retain_grad", self)

    def item(self):
        raise RuntimeError("item() is not supported for nested tensors")

    def numpy(self, *, force: bool = False):
        raise RuntimeError("numpy() is not supported for nested tensors: unbind() it, or "
                           "to_padded_tensor()")

    def __bool__(self):
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __reduce_ex__(self, proto):
        raise RuntimeError("nested tensors cannot be pickled yet: save nt.unbind() (or "
                           "values() and offsets()) instead")

    # -- printing ------------------------------------------------------------------------
    def __repr__(self) -> str:
        if self._layout is jagged:
            size = "(" + ", ".join(str(s) for s in self.size()) + ")"
            extra = f", requires_grad={self.requires_grad}" if self.requires_grad else ""
            if self.grad_fn is not None:
                extra = f", grad_fn={self.grad_fn}"
            return (f"NestedTensor(size={size}, offsets={self._offsets!r}{extra}, "
                    f"contiguous={self.is_contiguous()})")
        body = ",\n".join("  " + repr(c).replace("\n", "\n  ") for c in self._comps)
        tail = ", requires_grad=True" if self.requires_grad else ""
        return f"nested_tensor([\n{body}\n]{tail})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self) if not spec else format(repr(self), spec)


# -- construction (all nested tensors are made here) -------------------------------------------

def enable_dispatch() -> None:
    """Install the nested ``__torch_function__`` (once) and turn dispatch on (again, if
    something turned it off since)."""
    if NestedTensor.__dict__["__torch_function__"] is disabled_torch_function_impl:
        from ._ops import torch_function

        NestedTensor.__torch_function__ = classmethod(torch_function)
    if not overrides.is_active():
        overrides.activate()


def _shell(layout, comps, dtype, device, ndim: int) -> NestedTensor:
    enable_dispatch()
    nt = object.__new__(NestedTensor)
    nt._layout = layout
    nt._comps = tuple(comps)
    nt._dtype = dtype
    nt._device = device
    nt._data = _NestedData(comps[0]._data.dtype if comps else dtype.np, ndim)
    return nt


def _strided(comps, dtype=None, device=None) -> NestedTensor:
    """A strided nested tensor over ``comps`` (kept as they are)."""
    import ember

    comps = list(comps)
    if comps:
        ndim = comps[0].dim()
        for i, c in enumerate(comps):
            if c.dim() != ndim:
                raise RuntimeError(
                    "All Tensors given to nested_tensor must have the same dimension. Found "
                    f"dimension {c.dim()} for Tensor at index {i} and dimension {ndim} for "
                    "Tensor at index 0.")
        dtype, device = comps[0].dtype, comps[0].device
    else:
        ndim = 0
        dtype = dtype or ember.get_default_dtype()
        device = ember.device(device) if device is not None else ember.device("cpu")
    return _shell(strided, comps, dtype, device, ndim + 1)


def _jagged(values, offsets, lengths=None, ragged_idx: int = 1, sym=None) -> NestedTensor:
    """A jagged nested tensor: ``values`` with the components along dim ``ragged_idx - 1``
    starting at ``offsets`` (and ``lengths`` long, when given)."""
    if not 1 <= ragged_idx <= values.dim():
        raise ValueError(f"Expected jagged_dim in [1, {values.dim()}], but got {ragged_idx}.")
    comps = _views_of(values, offsets, lengths, ragged_idx)
    nt = _shell(jagged, comps, values.dtype, values.device, values.dim() + 1)
    nt._values = values
    nt._offsets = offsets
    nt._lengths = lengths
    nt._ragged_idx = ragged_idx
    nt._sym = sym if sym is not None else NestedInt()
    return nt


def _views_of(values, offsets, lengths, ragged_idx: int) -> list:
    """The components of a jagged tensor: views of ``values`` along dim ``ragged_idx - 1``."""
    offs = [int(o) for o in offsets.tolist()]
    lens = [int(v) for v in lengths.tolist()] if lengths is not None else \
        [b - a for a, b in zip(offs, offs[1:])]
    return [values.narrow(ragged_idx - 1, start, length) for start, length in zip(offs, lens)]


def _like_jagged(like: NestedTensor, values) -> NestedTensor:
    """A jagged tensor with ``like``'s offsets (and ragged size) over new ``values``."""
    return _jagged(values, like._offsets, like._lengths, like._ragged_idx, like._sym)


def _cat_values(comps, ragged_idx: int):
    import ember

    return ember.cat(list(comps), dim=ragged_idx - 1)


def _offsets_of(lengths, device):
    import ember

    offs = [0]
    for n in lengths:
        offs.append(offs[-1] + n)
    return ember.tensor(offs, dtype=ember.int64, device=device)


def jagged_from_components(comps, ragged_idx: int, like: NestedTensor | None = None):
    """A contiguous jagged tensor whose components are ``comps`` (concatenated into a new
    values buffer along dim ``ragged_idx - 1``, differentiably). ``like``'s offsets and ragged
    size are kept when the lengths are its lengths."""
    comps = list(comps)
    if not comps:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    axis = ragged_idx - 1
    for d in range(comps[0].dim()):
        if d != axis and len({c.shape[d] for c in comps}) > 1:
            raise RuntimeError(
                "Cannot represent given tensor list as a nested tensor with the jagged layout: "
                f"components differ in dim {d + 1} besides the ragged dim {ragged_idx}")
    lengths = [c.shape[axis] for c in comps]
    values = _cat_values(comps, ragged_idx)
    if like is not None and like._layout is jagged and like._lengths is None \
            and lengths == [c.shape[like._ragged_idx - 1] for c in like._comps]:
        return _jagged(values, like._offsets, None, ragged_idx, like._sym)
    return _jagged(values, _offsets_of(lengths, values.device), None, ragged_idx)


def ragged_dim_of(comps, default: int) -> int:
    """The ragged dim (in nested numbering) of a jagged tensor over ``comps``: the one dim in
    which they differ, else ``default``."""
    if not comps:
        return default
    differ = [d + 1 for d in range(comps[0].dim()) if len({c.shape[d] for c in comps}) > 1]
    if len(differ) > 1:
        shapes = ", ".join(str(tuple(c.shape)) for c in comps)
        raise RuntimeError("the jagged layout holds only one ragged dim, but the components "
                           f"would have shapes {shapes}")
    return differ[0] if differ else default
