"""Element-wise unary ops of sparse tensors (``ember.sin(s)``, ``s.abs_()``, ...), as PyTorch's.

PyTorch has a sparse kernel for the unary ops that map zero to zero (``f(0) == 0``), so that
the unstored elements stay zero and the result keeps the input's layout and pattern: the op
runs on the stored values. That is what these do, with the dense op itself on the values, so
dtypes, errors and gradients are the dense op's (differentiable in the values wherever the dense
op is, also where PyTorch's sparse backward fails). Like PyTorch:

- a COO input is coalesced first (duplicates summed, then the op), except for ``neg``,
  ``positive`` and ``conj_physical``, which keep the elements as they are; the in-place forms of
  a COO tensor need it coalesced (``sin_ requires coalesced input``);
- ``square`` and ``nan_to_num`` are for COO only, ``angle`` for the compressed layouts only;
- other unary ops (``exp``, ``cos``: ``f(0) != 0``) are refused: PyTorch's
  ``NotImplementedError`` (COO) or ``unsupported tensor layout`` (compressed layouts).

The dense ops reach these through ``ember._sparse_tensor.sparse_op`` and ``sparse_inplace``
(the sparse tensor's array refuses, the op catches that and hands the call over), so dense
calls pay nothing.
"""

from __future__ import annotations

from .._layout import sparse_coo
from .._sparse_tensor import _INPLACE_UNARY, _LAYOUT_WORDS, _backend_name, make_sparse
from ..autograd.grad_mode import GRAD

__all__ = ["UNARY", "INPLACE", "ALIASES", "unary", "unary_", "refusal"]

#: the unary ops with a sparse kernel in PyTorch, for every sparse layout
_ALL = frozenset({
    "abs", "neg", "sign", "sgn", "signbit", "sqrt", "sin", "sinh", "tan", "tanh", "asin",
    "asinh", "atan", "atanh", "ceil", "floor", "round", "trunc", "frac", "expm1", "log1p",
    "relu", "deg2rad", "rad2deg", "isnan", "isinf", "isposinf", "isneginf", "erf", "erfinv",
    "conj_physical", "positive",
})
#: ... for COO only
_COO_ONLY = frozenset({"square", "nan_to_num"})
#: ... for the compressed layouts (CSR, CSC, BSR, BSC) only
_COMPRESSED_ONLY = frozenset({"angle"})
#: every unary op that some sparse layout has
UNARY = _ALL | _COO_ONLY | _COMPRESSED_ONLY
#: the in-place forms (``sin_``) of the ops above that have one (methods of ``SparseTensor``)
INPLACE = frozenset(_INPLACE_UNARY)
#: PyTorch's other names of these ops (``absolute`` is ``abs``)
ALIASES = {"absolute": "abs", "negative": "neg", "arcsin": "asin", "arcsinh": "asinh",
           "arctan": "atan", "arctanh": "atanh", "fix": "trunc"}
#: the ops that leave a COO tensor's elements as they are (no coalescing first)
_AS_IS = frozenset({"neg", "positive", "conj_physical"})
#: the kernel PyTorch's error names where it is not the op's own
_KERNELS = {"square_": "pow_.Scalar"}


def _supported(name: str, layout) -> bool:
    if name in _ALL:
        return True
    return name in (_COO_ONLY if layout is sparse_coo else _COMPRESSED_ONLY)


def _backend(s) -> str:
    """PyTorch's dispatch key of ``s`` (``SparseCPU``; ``SparseCsrCPU`` for every compressed
    layout)."""
    if s._layout is sparse_coo:
        return _backend_name(s._device)
    return "SparseCsr" + s._device.type.upper()


def refusal(s, kernel: str) -> Exception:
    """PyTorch's error for an op without a kernel for ``s``'s layout: its dispatcher's
    ``NotImplementedError`` for COO, ``unsupported tensor layout`` for the compressed ones
    (``nan_to_num``: the dispatcher's, naming its ``out=`` kernel)."""
    layout = s._layout
    if layout is not sparse_coo and kernel.split(".")[0].rstrip("_") != "nan_to_num":
        exc = RuntimeError(f"unsupported tensor layout: {_LAYOUT_WORDS[layout]}")
        exc.__suppress_context__ = True
        return exc
    if layout is not sparse_coo:
        kernel = "nan_to_num.out"
    exc = NotImplementedError(
        f"Could not run 'aten::{kernel}' with arguments from the '{_backend(s)}' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build). If you are a Facebook "
        "employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible "
        "resolutions.")
    exc.__suppress_context__ = True  # raised where the dense op's attempt was caught
    return exc


def _kernel(name: str, kwargs: dict) -> str:
    """The ATen overload PyTorch's errors name (``round.decimals``, ``pow_.Scalar``)."""
    if name.rstrip("_") == "round" and kwargs.get("decimals", 0):
        return name + ".decimals"
    return _KERNELS.get(name, name)


def _check(s, name: str, kwargs: dict, unary: bool = True) -> None:
    base = name.rstrip("_")
    if base not in UNARY and not unary:  # another in-place op (mul_, add_, ...)
        exc = NotImplementedError(
            f"Could not run 'aten::{name}' with arguments from the '{_backend(s)}' backend. "
            "This could be because the operator doesn't exist for this backend, or was omitted "
            "during the selective/custom build process (if using custom build). If you are a "
            "Facebook employee using PyTorch on mobile, please visit "
            "https://fburl.com/ptmfixes for possible resolutions.")
        exc.__suppress_context__ = True
        raise exc
    if not _supported(base, s._layout) or (base == "round" and kwargs.get("decimals", 0)) or \
            (name == "square_"):
        raise refusal(s, _kernel(name, kwargs))


def unary(s, name: str, op, args=(), kwargs=None):
    """``op(s, *args, **kwargs)`` (the dense op ``name``) of the sparse ``s``: ``op`` on the
    stored values, the indices and layout kept (a COO tensor coalesced first)."""
    kwargs = kwargs or {}
    _check(s, name, kwargs)
    if s._layout is sparse_coo and name not in _AS_IS:
        s = s.coalesce()
    if name == "square" and s._vals._data.dtype.kind == "b":  # PyTorch's sparse pow of bools
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")
    values = op(s._vals, *args, **kwargs)
    return make_sparse(s._idx, values, s._data.shape, coalesced=s._coalesced, layout=s._layout)


def unary_(s, name: str, args=(), kwargs=None, unary: bool = True):
    """The in-place op ``name`` (``"sin_"``) of the sparse ``s``: its values' own in-place op,
    so ``s.values()`` taken before sees the change, and autograd rebases the values' history
    (``unary``: ``name`` is a unary op's, refused with PyTorch's error where unsupported)."""
    kwargs = kwargs or {}
    _check(s, name, kwargs, unary)
    vals = s._vals
    if GRAD.enabled and vals.requires_grad and vals.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if s._layout is sparse_coo and not s._coalesced and name[:-1] not in _AS_IS:
        raise RuntimeError(f"{name} requires coalesced input")
    getattr(vals, name)(*args, **kwargs)
    s._bump_version()
    return s
