"""Causal attention biases for ``scaled_dot_product_attention`` (``torch.nn.attention.bias``).

``causal_upper_left(L, S)`` and ``causal_lower_right(L, S)`` make a :class:`CausalBias`, a Tensor
subclass that ``F.scaled_dot_product_attention(q, k, v, attn_mask=bias)`` recognises through
``__torch_function__``: the upper-left variant (and either variant when ``L == S``) runs as
``is_causal=True`` without a mask; the lower-right variant runs with its boolean mask made on
the query's device, as PyTorch does where no fused kernel takes it (Ember has only the math
kernel).

Where PyTorch's ``CausalBias`` holds an uninitialised ``(variant, L, S)`` float tensor, Ember's
holds the bias itself, the ``(L, S)`` boolean mask (on the CPU): code that sees it as a plain
tensor (a capture, ``DisableTorchFunctionSubclass``) still computes the same attention.

Importing this module defines a class that overrides ``__torch_function__``, which turns on
Ember's dispatch for the process (``ember.overrides``), as in PyTorch where dispatch is always
on; ``ember.nn.attention`` therefore imports it only when ``bias`` is first asked for.
"""

from __future__ import annotations

import inspect
from enum import IntEnum, auto
from warnings import warn

import ember
import ember.nn.functional as F
from ember import Tensor

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    r"""The two causal biases, with PyTorch's values.

    ``UPPER_LEFT``: the kept entries are aligned to the upper-left corner,
    ``tril(ones(L, S, dtype=bool))``; with ``(3, 4)``::

        [[1, 0, 0, 0],
         [1, 1, 0, 0],
         [1, 1, 1, 0]]

    ``LOWER_RIGHT``: aligned to the lower-right corner,
    ``tril(ones(L, S, dtype=bool), diagonal=S - L)``; with ``(3, 4)``::

        [[1, 1, 0, 0],
         [1, 1, 1, 0],
         [1, 1, 1, 1]]

    The two are the same when ``L == S``.
    """

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


def _causal_mask(variant: CausalVariant, seq_len_q: int, seq_len_kv: int,
                 device) -> Tensor:
    """The ``(seq_len_q, seq_len_kv)`` boolean mask of ``variant`` (True takes part)."""
    ones = ember.ones(seq_len_q, seq_len_kv, device=device, dtype=ember.bool)
    if variant == CausalVariant.UPPER_LEFT:
        return ember.tril(ones)
    return ember.tril(ones, diagonal=seq_len_kv - seq_len_q)


class CausalBias(Tensor):
    """A causal (triangular) attention bias; see :class:`CausalVariant` for the two shapes.

    Made by :func:`causal_upper_left` and :func:`causal_lower_right` and passed as the
    ``attn_mask`` of ``scaled_dot_product_attention``::

        from ember.nn.attention.bias import causal_lower_right

        attn_bias = causal_lower_right(seqlen_q, seqlen_kv)
        out = F.scaled_dot_product_attention(q, k, v, attn_bias)

    Its repr is that of the boolean mask it stands for.

    .. warning:: A prototype in PyTorch, subject to change.
    """

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(
                f"variant must be a CausalVariant, got {type(variant).__name__}")
        mask = _causal_mask(variant, seq_len_q, seq_len_kv, "cpu")
        return Tensor._make_subclass(cls, mask)

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        """``variant`` (:class:`CausalVariant`) for a ``seq_len_q`` by ``seq_len_kv`` score
        matrix. Warns when the lower-right variant leaves rows without any key
        (``seq_len_q > seq_len_kv``): PyTorch's warning speaks of NaNs; its CPU kernel, and
        Ember's, give zeros in those rows."""
        super().__init__()
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warn("Lower right causal bias will produce NaNs in the output when "
                 "seq_len_q > seq_len_kv!", stacklevel=2)

    def _upper_left(self, device) -> Tensor:
        """Upper left causal bias."""
        return _causal_mask(CausalVariant.UPPER_LEFT, self.seq_len_q, self.seq_len_kv, device)

    def _lower_right(self, device) -> Tensor:
        """Lower right causal bias."""
        return _causal_mask(CausalVariant.LOWER_RIGHT, self.seq_len_q, self.seq_len_kv, device)

    def _materialize(self, device=None) -> Tensor:
        """The bias as a new boolean tensor on ``device`` (default: the CPU)."""
        if device is None:
            device = ember.device("cpu")
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        if self.variant == CausalVariant.LOWER_RIGHT:
            return self._lower_right(device)
        return None  # PyTorch's falls through too: only _dispatch reports a bad variant

    @staticmethod
    def _dispatch(query: Tensor, key: Tensor, value: Tensor, attn_mask: CausalBias,
                  dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                  enable_gqa: bool = False) -> Tensor:
        """``scaled_dot_product_attention`` with ``attn_mask`` a :class:`CausalBias`.

        The upper-left variant, and either variant with equal lengths, is ``is_causal=True``
        (whatever the bias's lengths); the lower-right variant runs with its mask made on the
        query's device. ``is_causal=True`` together with a bias is a ``ValueError``."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv \
                or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=None, dropout_p=dropout_p, is_causal=True,
                scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            _validate_sdpa_input(query, key, value)
            _warn_unfused()
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=attn_mask._materialize(query.device),
                dropout_p=dropout_p, is_causal=False, scale=scale, enable_gqa=enable_gqa)
        raise ValueError("CausalBias.variant must be a CausalVariant type, but found: "
                         f"{attn_mask.variant}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """``scaled_dot_product_attention`` with a :class:`CausalBias` goes to
        :meth:`_dispatch`; every other function runs as on a Tensor."""
        if kwargs is None:
            kwargs = {}
        if inspect.unwrap(func) is _SDPA:
            return cls._dispatch(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    def __repr__(self) -> str:
        return repr(self._materialize())

    def __reduce_ex__(self, protocol):
        # the fields, not the mask: Tensor's pickling keeps the type but not the attributes
        return (_rebuild_causal_bias, (self.variant, self.seq_len_q, self.seq_len_kv))


def _rebuild_causal_bias(variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> CausalBias:
    """An unpickled :class:`CausalBias` (without the construction warning, as in PyTorch)."""
    bias = CausalBias.__new__(CausalBias, variant, seq_len_q, seq_len_kv)
    bias.variant, bias.seq_len_q, bias.seq_len_kv = variant, seq_len_q, seq_len_kv
    return bias


#: the function behind ``F.scaled_dot_product_attention`` and its dispatching wrapper
_SDPA = inspect.unwrap(F.scaled_dot_product_attention)


def _validate_sdpa_input(query: Tensor, key: Tensor, value: Tensor) -> None:
    """PyTorch's checks before it picks a kernel for a lower-right bias."""
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise ValueError("Expected query, key, and value to have the same dtype, but got "
                         f"query.dtype: {query.dtype}, key.dtype: {key.dtype}, and "
                         f"value.dtype: {value.dtype} instead.")
    if query.device != key.device or query.device != value.device:
        raise ValueError("Expected query, key, and value to have the same device type, but "
                         f"got query.device: {query.device}, key.device: {key.device}, and "
                         f"value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError("Expected query, key, and value to all be  at least 2 dimensional, "
                         f"but got query.dim: {query.dim()}, key.dim: {key.dim()} and "
                         f"value.dim: {value.dim()} instead.")


def _warn_unfused() -> None:
    """With ``ember.nn.attention.WARN_FOR_UNFUSED_KERNELS`` set, PyTorch's warnings that no
    fused kernel takes the lower-right bias (Ember has none: it always materialises)."""
    from ember.nn import attention

    if attention.WARN_FOR_UNFUSED_KERNELS:
        warn("Efficient attention can't be used because:", stacklevel=2)
        warn("Flash attention can't be used because:", stacklevel=2)


def causal_upper_left(*size: int) -> CausalBias:
    """An upper-left causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: the kept entries
    aligned to the upper-left corner, ``tril(ones(size, dtype=bool))``, as ``is_causal=True``.

    With ``(3, 4)``::

        [[1, 0, 0, 0],
         [1, 1, 0, 0],
         [1, 1, 1, 0]]
    """
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size: int) -> CausalBias:
    """A lower-right causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: the kept entries
    aligned to the lower-right corner, ``tril(ones(size, dtype=bool), diagonal=S - L)``.

    With ``(3, 4)``::

        [[1, 1, 0, 0],
         [1, 1, 1, 0],
         [1, 1, 1, 1]]
    """
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
