"""The factories' sparse layouts: ``ember.zeros(2, 3, layout=ember.sparse_coo)``,
``ember.zeros_like(s)`` of a sparse ``s``, ``s.new_zeros(4, 2)``, ``ember.zeros(2, 3, out=s)``.

What PyTorch builds, Ember builds: ``zeros``/``empty`` (and ``new_zeros``/``new_empty``,
``zeros_like`` with any layout, ``empty_like`` of a sparse tensor) give a sparse tensor with no
element stored, of the COO or compressed (CSR/CSC, batched) layout asked for. Where PyTorch's
factory refuses, Ember refuses with PyTorch's error (the dispatcher's ``Could not run
'aten::uniform_' ... 'SparseCPU' backend`` for ``rand``, ``full(...) is not implemented for
sparse layout`` for ``ones`` in COO, ...).

One departure, documented: ``ones``/``full``/``randn``/``normal`` (and ``new_ones``/``new_full``)
in a compressed layout return a tensor that stores every element (its values the dense
factory's), where PyTorch 2.x returns an invalid tensor (``crow_indices`` left uninitialised)
or one that stores nothing; ``ones_like``/``full_like``/``randn_like``/``empty_like`` of a
compressed tensor keep its pattern and fill its values, as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._format import shape_str
from .._layout import jagged, layout, sparse_coo, strided
from .._sparse_tensor import (
    _BLOCK,
    _BY_COLUMN,
    _LAYOUT_WORDS,
    SparseTensor,
    _not_implemented,
    make_sparse,
)
from .._tensor import Tensor, _make

#: the op PyTorch's dispatcher names when the factory runs on a sparse layout it has no
#: kernel for (the compressed layouts' error is the same op's unless ``_EMPTY_ZERO`` says)
_DISPATCH = {
    "arange": "arange.start_out", "range": "range.out", "eye": "eye.m_out",
    "linspace": "linspace.out", "logspace": "logspace.out", "rand": "uniform_",
    "randn": "normal_", "normal": "normal_", "randint": "random_.from",
    "randperm": "randperm.generator_out", "tril_indices": "tril_indices",
    "triu_indices": "triu_indices", "empty_strided": "empty_strided",
    "new_empty_strided": "empty_strided", "empty_permuted": "as_strided",
    "new_ones": "fill_.Scalar", "new_full": "fill_.Scalar", "fft_fftfreq": "arange.start_out",
    "fft_rfftfreq": "arange.start_out"}
#: factories PyTorch's dispatcher refuses in every sparse layout, the blocked ones included
_ALWAYS_DISPATCH = frozenset("empty_strided new_empty_strided tril_indices triu_indices".split())
#: factories whose compressed layouts fail in PyTorch's ``empty`` of their 1-d out= tensor
#: (of size ``[0]``, or the result's where the kernel sizes it first: ``linspace``)
_EMPTY_ZERO = frozenset("arange range eye linspace logspace randperm fft_fftfreq fft_rfftfreq "
                        "hann_window hamming_window blackman_window bartlett_window "
                        "kaiser_window".split())
#: factories that store every element in a compressed layout (see the module doc)
_FULL = frozenset("ones full new_ones new_full randn normal".split())
#: factories that store no element
_EMPTY = frozenset("zeros empty new_zeros new_empty".split())
_WINDOWS = frozenset("hann_window hamming_window blackman_window bartlett_window "
                     "kaiser_window".split())
_TRI = frozenset(("tril_indices", "triu_indices"))


def _not_layout(name: str, value) -> TypeError:
    return TypeError(f"{name}(): argument 'layout' must be torch.layout, not "
                     f"{type(value).__name__}")


def check_layout(value, name: str):
    """A factory's ``layout=``: None for a dense result (None, ``ember.strided``, and
    ``ember.jagged``, which PyTorch's factories ignore too), else the sparse layout; a
    TypeError for what is not a layout."""
    if value is None or value is strided:
        return None
    if value.__class__ is not layout:
        raise _not_layout(name, value)
    if value is jagged:
        if name in _TRI:
            raise RuntimeError("only support layout=torch.strided, gotJagged")
        return None
    return value


def _only_batched(word: str, shape) -> RuntimeError:
    return RuntimeError(f"torch.{word}: Only batched sparse compressed (non-block) tensors are "
                        f"supported, but got size [{shape_str(shape)}]")


def _no_blocks(word: str, lay) -> RuntimeError:
    return RuntimeError(f"{word}_sparse_compressed expected sparse compressed (non-block) tensor "
                        f"layout but got {_LAYOUT_WORDS[lay]}")


def _window_options(name: str, dtype, device, lay) -> RuntimeError:
    # (hann_window's options reach the check as given; the others' with their dtype filled)
    dt = _dtype.options_type_name((_dtype.get_default_dtype() if dtype is None else
                                   _dtype.to_dtype(dtype)).np)
    if dtype is None and name == "hann_window":
        dt += " (default)"
    return RuntimeError(f"{name} is not implemented for sparse types, got: TensorOptions("
                        f"dtype={dt}, device={device}, layout={_LAYOUT_WORDS[lay]}, "
                        "requires_grad=false (default), pinned_memory=false, "
                        "memory_format=(nullopt))")


def refuse(name: str, lay, device, *, dtype=None, size=(0,)) -> Exception:
    """PyTorch's error for the factory ``name`` with the sparse layout ``lay`` where it makes
    no tensor (the caller raises it; ``size``: the 1-d out= tensor a compressed layout's
    error names)."""
    if name in _ALWAYS_DISPATCH:
        return _not_implemented(name.removeprefix("new_"), device, lay)
    if name in _EMPTY_ZERO and lay is not sparse_coo:
        return _only_batched("empty", size)
    if name in _WINDOWS:
        return _window_options(name, dtype, device, lay)
    if lay in _BLOCK:
        return _no_blocks("empty", lay)
    if name in ("ones", "full"):
        return RuntimeError("full(...) is not implemented for sparse layout")
    if name in ("empty_permuted", "new_empty_permuted") and lay is not sparse_coo:
        return RuntimeError(f"Sparse {_LAYOUT_WORDS[lay][6:].upper()} tensors do not have "
                            "strides")
    return _not_implemented(_DISPATCH.get(name, name), device, lay)


def _index(xp, shape, device) -> Tensor:
    return _make(xp.zeros(shape, dtype=np.int64), device)


def empty(shape: tuple, lay, dt: _dtype.dtype, device, *, sparse_dim: int | None = None,
          dense_dim: int = 0, word: str = "empty") -> SparseTensor:
    """A sparse tensor of ``shape`` that stores no element: COO with ``sparse_dim`` sparse
    dimensions (all but ``dense_dim`` by default); CSR/CSC with leading batch dimensions and
    ``dense_dim`` trailing dense ones (``word``: the factory PyTorch's errors name)."""
    from .._device import xp_of

    xp = xp_of(device)
    shape = tuple(shape)
    if lay is sparse_coo:
        sd = len(shape) - dense_dim if sparse_dim is None else sparse_dim
        values = _make(xp.zeros((0, *shape[sd:]), dtype=dt.np), device)
        return make_sparse(xp.zeros((sd, 0), dtype=np.int64), values, shape, coalesced=True)
    if lay in _BLOCK:
        raise _no_blocks(word, lay)
    if len(shape) - dense_dim < 2:
        raise _only_batched(word, shape)
    from .. import sparse_compressed_tensor

    cut = len(shape) - dense_dim
    batch, (rows, cols) = shape[:cut - 2], shape[cut - 2:cut]
    n = cols if lay in _BY_COLUMN else rows
    values = _make(xp.zeros((*batch, 0, *shape[cut:]), dtype=dt.np), device)
    return sparse_compressed_tensor(_index(xp, (*batch, n + 1), device),
                                    _index(xp, (*batch, 0), device), values, shape,
                                    layout=lay, check_invariants=False)


def every_element(dense: Tensor, lay) -> SparseTensor:
    """``dense`` (at least 2-d: leading batch dimensions) as a compressed tensor that stores
    each of its elements, its values in ``dense``'s order along the compressed dimension."""
    from .. import sparse_compressed_tensor
    from .._device import xp_of

    xp = xp_of(dense._device)
    d = dense._data
    *batch, rows, cols = d.shape
    by_col = lay in _BY_COLUMN
    n, m = (cols, rows) if by_col else (rows, cols)
    compressed = xp.broadcast_to(xp.arange(0, n * m + 1, m if m else 1, dtype=np.int64)
                                 if m else xp.zeros(n + 1, dtype=np.int64), (*batch, n + 1))
    plain = xp.broadcast_to(xp.tile(xp.arange(m, dtype=np.int64), n), (*batch, n * m))
    vals = xp.swapaxes(d, -1, -2) if by_col else d
    vals = xp.ascontiguousarray(vals).reshape(*batch, n * m)
    dev = dense._device
    return sparse_compressed_tensor(_make(xp.ascontiguousarray(compressed), dev),
                                    _make(xp.ascontiguousarray(plain), dev), _make(vals, dev),
                                    tuple(d.shape), layout=lay, check_invariants=False)


def make(name: str, lay, shape: tuple, dt: _dtype.dtype, device, requires_grad: bool,
         dense=None, out=None) -> SparseTensor:
    """The factory ``name``'s result in the sparse layout ``lay``: no element stored
    (``_EMPTY``), every element of ``dense()`` (the dense factory's result) stored in a
    compressed layout (``_FULL``), or PyTorch's error. ``out``: a sparse ``out=`` tensor that
    takes the result (PyTorch's resize and clear)."""
    if name in _EMPTY:
        word = "zeros" if name == "zeros" else "empty"
        r = empty(shape, lay, dt, device, word=word)
    elif name in _FULL and lay is not sparse_coo and lay not in _BLOCK:
        if len(shape) < 2:
            raise _only_batched("empty", shape)
        r = every_element(dense(), lay)
    else:
        raise refuse(name, lay, device)
    _require_grad(r, requires_grad)
    if out is not None:
        from ..ops.sparse_ops import write_sparse_out

        return write_sparse_out(out, r, name, "same")
    return r


# -- *_like --------------------------------------------------------------------------------

_LIKE_REFUSE_COO = {"ones_like": "fill_.Scalar", "full_like": "fill_.Scalar",
                    "rand_like": "uniform_", "randn_like": "normal_",
                    "randint_like": "random_.from"}


def like(name: str, input: Tensor, lay_arg, dt: _dtype.dtype, device, requires_grad: bool,
         memory_format, fill_values=None):
    """``ember.<name>(input, layout=...)`` where ``input`` is sparse or a sparse layout is
    asked for: the sparse result, or None where the result is dense (the caller makes it).
    ``fill_values(shape)`` gives the dense values a compressed pattern is filled with
    (``ones_like``, ``full_like``, ``randn_like``, ``empty_like``)."""
    from .. import _memory_format as _mf

    sparse_in = input.__class__ is SparseTensor
    lay = check_layout(lay_arg, name)
    src = input._layout if sparse_in else strided
    target = src if lay_arg is None else (lay or strided)
    if target is strided and (not sparse_in or src is sparse_coo or name == "zeros_like"):
        return None
    if memory_format is not _mf.preserve_format and target is sparse_coo:
        raise RuntimeError("memory format option is only supported by strided tensors")
    shape = tuple(input._data.shape)
    if name == "zeros_like":
        if sparse_in and target is src:
            if src is sparse_coo:
                r = empty(shape, target, dt, device, sparse_dim=input.sparse_dim(),
                          word="zeros")
            else:
                r = empty(shape, target, dt, device, dense_dim=input.dense_dim(), word="zeros")
        elif target in _BLOCK:
            raise RuntimeError("sparse_compressed_tensor_with_dims: blocksize needs to be a "
                               "tuple of size 2, but got 0")
        elif target is sparse_coo:
            r = empty(shape, target, dt, device, word="zeros",
                      sparse_dim=input.sparse_dim() if sparse_in else None)
        else:  # PyTorch's: a dense input's dimensions past the first two are dense ones
            if len(shape) < 2:
                raise _only_batched("zeros", shape)
            r = empty(shape, target, dt, device, word="zeros",
                      dense_dim=input.dense_dim() if sparse_in else len(shape) - 2)
    elif not sparse_in:
        raise _not_implemented("empty_strided", device, target)
    elif target is not src:
        raise RuntimeError(f"empty_like with different sparse layout is not supported (self is "
                           f"{_LAYOUT_WORDS[src]} but you requested "
                           f"{_LAYOUT_WORDS.get(target, 'Strided')})")
    elif src is sparse_coo:
        if name != "empty_like":
            raise _not_implemented(_LIKE_REFUSE_COO[name], device, src)
        r = empty(shape, src, dt, device, sparse_dim=input.sparse_dim())
    else:  # a compressed pattern kept, its values filled
        if name in ("rand_like", "randint_like"):
            raise _not_implemented(_LIKE_REFUSE_COO[name], device, src)
        base = input.detach()
        if base._device is not device:
            base = base.to(device)
        r = base._with_values(fill_values(tuple(input._vals._data.shape)))
    _require_grad(r, requires_grad)
    return r


def _require_grad(r: SparseTensor, requires_grad: bool) -> None:
    """A factory's ``requires_grad=`` on its sparse result (PyTorch's error for an exact
    dtype, as ``ember._factory.finish``'s)."""
    if requires_grad:
        if r._data.dtype not in _dtype.INEXACT_NP:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        r.requires_grad_(True)
