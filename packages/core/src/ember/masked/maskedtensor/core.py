"""``MaskedTensor`` (``torch.masked.MaskedTensor``): a tensor whose elements are each
specified (mask True) or unspecified (mask False).

A MaskedTensor holds two plain Ember tensors, ``_masked_data`` and ``_masked_mask`` (bool, the
same shape). Its autograd identity is its data's, as for ``ember.nested``: ``requires_grad``,
``grad_fn`` and the leaf's gradient node are the data's, so the engine (``backward``,
``autograd.grad``) runs on the data's graph and ``mt.grad`` is the data's gradient wrapped
with ``mt``'s mask. Ops reach ``ember.masked.maskedtensor._dispatch`` through
``__torch_function__``: elementwise ops run on the data and keep the mask (binary ops need
equal masks), reductions skip the masked-out elements (``ember.masked``'s functions) and
return the mask ``any`` of the reduced slices, shape ops apply to data and mask alike.

The tensor's own ``_data`` is its data's array, so its shape, dtype, device, ``item()`` and
``numel()`` are the data's. Defining the class turns ``__torch_function__`` dispatch on for the
process (it costs every op a little), which is why ``import ember`` does not import
``ember.masked``. It is on from the import, not from the first MaskedTensor: an expression
like ``ember.mean(masked_tensor(x, m))`` looks ``ember.mean`` up before making its argument.
"""

from __future__ import annotations

import warnings

from ... import overrides
from ..._tensor import Tensor

__all__ = ["MaskedTensor", "is_masked_tensor"]


def is_masked_tensor(obj, /) -> bool:
    """True if ``obj`` is a :class:`MaskedTensor`."""
    return isinstance(obj, MaskedTensor)


_PROTOTYPE_WARNING = (
    "The PyTorch API of MaskedTensors is in prototype stage and will change in the near "
    "future. Please open a Github issue for features requests and see our documentation on "
    "the torch.masked module for further information about the project.")

_SUPPORTED_DTYPES = None


def _supported_dtypes():
    global _SUPPORTED_DTYPES
    if _SUPPORTED_DTYPES is None:
        import ember

        _SUPPORTED_DTYPES = {ember.float16, ember.float32, ember.float64, ember.bool,
                             ember.int8, ember.int16, ember.int32, ember.int64}
    return _SUPPORTED_DTYPES


def _tensors_match(a, b, exact: bool = True, rtol: float = 1e-05, atol: float = 1e-08) -> bool:
    """Whether plain tensors ``a`` and ``b`` are equal (same rank; exactly, or close)."""
    import ember

    if is_masked_tensor(a) or is_masked_tensor(b):
        raise ValueError("Neither `a` nor `b` can be a MaskedTensor.")
    if a.layout != b.layout:
        raise ValueError(f"`a` and `b` must have the same layout. Got {a.layout} and {b.layout}")
    if a.dtype != b.dtype:
        b = b.type(a.dtype)
    if a.layout == b.layout == ember.sparse_coo:
        return _tensors_match(a.values(), b.values(), exact) and _tensors_match(
            a.indices(), b.indices(), exact)
    if a.layout == b.layout == ember.sparse_csr:
        return (_tensors_match(a.crow_indices(), b.crow_indices(), exact)
                and _tensors_match(a.col_indices(), b.col_indices(), exact)
                and _tensors_match(a.values(), b.values(), exact))
    if a.dim() != b.dim():
        return False
    if exact:
        return bool(ember.eq(a, b).all().item())
    return bool(ember.allclose(a, b, rtol=rtol, atol=atol))


def _masks_match(a, b) -> bool:
    if is_masked_tensor(a) and is_masked_tensor(b):
        ma, mb = a._masked_mask, b._masked_mask
        if tuple(ma.shape) != tuple(mb.shape):
            return False
        if _sparse(ma) and ma.layout == mb.layout and ma._nnz() != mb._nnz():
            return False
        return _tensors_match(ma, mb, exact=True)
    return True


def _preprocess(data, mask):
    """PyTorch's ``_preprocess_data``: same layouts; sparse COO data and mask coalesced; a
    sparse ``data`` with other stored elements than ``mask`` reduced to ``mask``'s (the
    elements ``mask`` does not store are unspecified)."""
    import ember

    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if data.layout == ember.sparse_coo:
        data = data.coalesce()
        mask = mask.coalesce()
        if data._nnz() != mask._nnz():
            data = data.to_dense().sparse_mask(mask)
    elif data.layout == ember.sparse_csr:
        if data._nnz() != mask._nnz():
            data = data.to_dense().sparse_mask(mask)
    return data, mask


def _validate_members(data, mask) -> None:
    """PyTorch's checks of a MaskedTensor's data and mask, in its words."""
    import ember

    if type(data) is not type(mask):
        raise TypeError(f"data and mask must have the same type. Got {type(data)} and "
                        f"{type(mask)}")
    if data.layout not in {ember.strided, ember.sparse_coo, ember.sparse_csr}:
        raise TypeError(f"data layout of {data.layout} is not supported.")
    if data.layout == ember.sparse_coo:
        if not _tensors_match(data.indices(), mask.indices(), exact=True):
            raise ValueError("data and mask are both sparse COO tensors but do not have the "
                             "same indices.")
    elif data.layout == ember.sparse_csr:
        if not _tensors_match(data.crow_indices(), mask.crow_indices(), exact=True) or \
                not _tensors_match(data.col_indices(), mask.col_indices(), exact=True):
            raise ValueError("data and mask are both sparse CSR tensors but do not share "
                             "either crow or col indices.")
    if mask.dtype != ember.bool:
        raise TypeError("mask must have dtype bool.")
    if data.dtype not in _supported_dtypes():
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if data.size() != mask.size():
        raise ValueError("data.size() must equal mask.size()")


def _sparse(t) -> bool:
    """Whether ``t`` has a sparse layout MaskedTensor supports (COO or CSR)."""
    import ember

    return t.layout in (ember.sparse_coo, ember.sparse_csr)


def _wrap(data, mask) -> MaskedTensor:
    """A MaskedTensor over ``data`` and ``mask`` as they are (no copy, no warning): how every
    op makes its result."""
    _validate_members(data, mask)
    enable_dispatch()
    mt = object.__new__(MaskedTensor)
    mt._masked_data = data
    mt._masked_mask = mask
    mt._device = data._device
    return mt


def _wrap_result(result_data, result_mask):
    if isinstance(result_data, list):
        return [_wrap_result(r, m) for r, m in zip(result_data, result_mask)]
    if isinstance(result_data, tuple):
        return tuple(_wrap_result(r, m) for r, m in zip(result_data, result_mask))
    if isinstance(result_data, Tensor):
        return _wrap(result_data, result_mask)
    return result_data


def _format_scalar(value, formatter: str) -> str:
    return formatter.format(value) if isinstance(value, float) else str(value)


def _masked_tensor_str(data, mask, formatter: str) -> str:
    if data.dim() == 1:
        values = data.tolist()
        keep = mask.tolist()
        elements = [_format_scalar(v, formatter) for v in values]
        if not elements:
            return "[]"
        width = max(len(e) if k else 8 for e, k in zip(elements, keep))
        return "[" + ", ".join(e if k else "--".rjust(width)
                               for e, k in zip(elements, keep)) + "]"
    subs = [_masked_tensor_str(d, m, formatter) for d, m in zip(data, mask)]
    subs = ["\n".join("  " + line for line in s.split("\n")) for s in subs]
    return "[\n" + ",\n".join(subs) + "\n]"


class MaskedTensor(Tensor):
    """A tensor with a boolean mask: True marks the specified elements, which ops compute
    on; False marks the unspecified ones, which reductions skip and which print as ``--``.

    Made by ``MaskedTensor(data, mask, requires_grad=False)``, or better
    :func:`ember.masked.masked_tensor` (a leaf, like ``ember.tensor``) and
    :func:`ember.masked.as_masked_tensor` (keeps ``data``'s autograd history, like
    ``ember.as_tensor``).

    .. warning:: A prototype in PyTorch, subject to change.
    """

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Every op on a MaskedTensor: its rule in ``ember.masked.maskedtensor._dispatch``."""
        from ._dispatch import torch_function

        return torch_function(cls, func, types, args, kwargs)

    def __new__(cls, data, mask, requires_grad: bool = False):
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=2)
        if data.requires_grad:
            warnings.warn("It is not recommended to create a MaskedTensor with a tensor that "
                          "requires_grad. To avoid this, you can use data.detach().clone()",
                          UserWarning, stacklevel=2)
        data, mask = _preprocess(data, mask)
        mt = _wrap(data.detach().clone(), mask.detach().clone())
        if requires_grad:
            mt._masked_data.requires_grad_(True)
        return mt

    def __init__(self, data, mask, requires_grad: bool = False) -> None:
        pass  # made in __new__

    @staticmethod
    def _from_values(data, mask) -> MaskedTensor:
        """A MaskedTensor whose data keeps ``data``'s autograd history (differentiable)."""
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=3)
        data, mask = _preprocess(data, mask)
        return _wrap(data.clone(), mask.detach().clone())

    def _set_data_mask(self, data, mask) -> None:
        _validate_members(data, mask)
        self._masked_data = data
        self._masked_mask = mask

    # -- fields ----------------------------------------------------------------------------
    @property
    def _data(self):
        return self._masked_data._data

    @_data.setter
    def _data(self, value) -> None:
        raise AttributeError("a MaskedTensor's array is its data's: use get_data()")

    def get_data(self):
        """The data (its unspecified elements hold arbitrary values), linked to this
        tensor's autograd history."""
        d = self._masked_data
        if _sparse(d):
            return d
        return d.view_as(d) if d.requires_grad else d.detach()

    def get_mask(self):
        """The boolean mask: True where an element is specified."""
        return self._masked_mask

    def to_tensor(self, value):
        """A plain tensor: the data with the unspecified elements set to ``value``."""
        return self.get_data().masked_fill(~self._masked_mask, value)

    @classmethod
    def unary(cls, fn, data, mask):
        return _wrap(fn(data), mask)

    @property
    def layout(self):
        return self._masked_data.layout

    def is_sparse_coo(self) -> bool:
        import ember

        return self.layout == ember.sparse_coo

    def is_sparse_csr(self) -> bool:
        import ember

        return self.layout == ember.sparse_csr

    @property
    def is_sparse(self) -> bool:
        return self.is_sparse_coo() or self.is_sparse_csr()

    def is_contiguous(self, *, memory_format=None) -> bool:
        if _sparse(self._masked_data):
            raise ValueError("MaskedTensors with sparse data do not have is_contiguous")
        if memory_format is None:
            return self._masked_data.is_contiguous()
        return self._masked_data.is_contiguous(memory_format=memory_format)

    def tolist(self):
        raise RuntimeError(".tolist() is not supported for tensor subclasses, got MaskedTensor")

    def __reduce_ex__(self, proto):
        return (_rebuild_masked_tensor, (self._masked_data.detach(), self._masked_mask,
                                         self.requires_grad))

    # -- autograd (the data's) -------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._masked_data.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self._masked_data.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True):
        self._masked_data.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._masked_data.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        if value is not None:
            raise AttributeError("the grad_fn of a MaskedTensor is its data's")

    @property
    def _nr(self) -> int:
        return self._masked_data._nr

    @property
    def _accum(self):
        """The data's gradient node (what the engine accumulates a leaf's gradient in)."""
        d = self._masked_data
        if d.requires_grad and d.grad_fn is None:
            from ...autograd.graph import accumulate_node

            return accumulate_node(d)
        return None

    @_accum.setter
    def _accum(self, value) -> None:
        pass  # the node lives on the data

    @property
    def is_leaf(self) -> bool:
        return self._masked_data.grad_fn is None

    @property
    def grad(self):
        """The data's gradient as a MaskedTensor with this tensor's mask (None before
        backward)."""
        g = self._masked_data.grad
        return None if g is None else _wrap(g, self._masked_mask)

    @grad.setter
    def grad(self, value) -> None:
        if is_masked_tensor(value):
            value = value._masked_data
        self._masked_data.grad = value

    @property
    def data(self):
        return self.detach()

    def detach(self):
        """The same data and mask without autograd history."""
        return _wrap(self._masked_data.detach(), self._masked_mask)

    def retain_grad(self) -> None:
        self._masked_data.retain_grad()

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Backpropagate from this tensor's data (``gradient``: a tensor or MaskedTensor of
        its shape; None for one element)."""
        import ember

        if is_masked_tensor(gradient):
            gradient = gradient._masked_data
        if inputs is not None:
            inputs = [i._masked_data if is_masked_tensor(i) else i
                      for i in ((inputs,) if isinstance(inputs, Tensor) else inputs)]
        ember.autograd.backward(self._masked_data, gradient, retain_graph=retain_graph,
                                create_graph=create_graph, inputs=inputs)

    # -- printing --------------------------------------------------------------------------
    def __repr__(self) -> str:
        formatter = "{0:8.4f}"
        data, mask = self._masked_data.detach(), self._masked_mask
        if _sparse(data):
            data, mask = data.to_dense(), mask.to_dense()
        if data.dim() == 0:
            text = _format_scalar(data.item(), formatter)
            if not mask.item():
                text = "--"
            return "MaskedTensor(" + text + ", " + str(bool(mask.item())) + ")"
        s = _masked_tensor_str(data, mask, formatter)
        s = "\n".join("  " + line for line in s.split("\n"))
        return "MaskedTensor(\n" + s + "\n)"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self) if not spec else format(repr(self), spec)


def _rebuild_masked_tensor(data, mask, requires_grad):
    mt = _wrap(data, mask)
    if requires_grad:
        data.requires_grad_(True)
    return mt


def enable_dispatch() -> None:
    """Turn dispatch on (again, if something turned it off since the class was defined)."""
    if not overrides.is_active():
        overrides.activate()
