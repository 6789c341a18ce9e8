"""``LinearCrossEntropyOptions`` (``torch.nn.modules.linear_cross_entropy_options``)."""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

import ember

__all__ = ["LinearCrossEntropyOptions"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# the picks of PyTorch's "auto" sentinels per (device type, input dtype); NumPy and CuPy have no
# bfloat16, so only the float16 rows apply
_AUTO_DEFAULTS: dict = {
    ("cuda", ember.float16): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", ember.float16): _AutoDefault("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")

_ACC_POLICIES = {"auto", "accurate", "balanced", "compact"}


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Options of the chunked implementation of
    :func:`~ember.nn.functional.linear_cross_entropy` (``torch.nn.LinearCrossEntropyOptions``).

    The chunked implementation takes the batch in pieces of ``batch_chunk_size`` rows, so the
    full ``(num_batches, num_classes)`` logits are never held at once: a win for large
    vocabularies. Pass ``options=None`` to the function for the reference path.

    Fields:
        allow_retain_graph: allow ``backward(retain_graph=True)`` a second time (mean and sum
            reductions precompute their gradients in forward and hand them out once unless
            this is set).
        batch_chunk_size: rows per chunk (``None``: from ``chunking_method``, or one chunk).
        chunking_method: ``"auto"``, ``"aspect_ratio"``, ``"aspect_ratio:N"`` (chunks whose
            logits are as large as the input, divided by ``N``) or ``None``.
        acc_policy: ``"auto"``, ``"accurate"``, ``"balanced"`` or ``"compact"``, PyTorch's
            precision/memory policies. Ember accumulates every intermediate in ``acc_dtype``
            under all of them.
        acc_dtype: the accumulation dtype (``None``: float32 for float16 input under
            ``"auto"``, else the input dtype).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: ember.dtype | None = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError("batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (ember.float16, ember.float32,
                                                                 ember.float64):
            raise ValueError("acc_dtype must be one of {None, ember.float16, ember.float32, "
                             f"ember.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to "
                             "let the op pick automatically.")

    @staticmethod
    def _ceil_div(a: int, b: int) -> int:
        return -(-a // b)

    @staticmethod
    def _resolve_auto_acc_dtype(dtype, device):
        """float32 for float16 input on the CPU and CUDA (compute capability 7.0 and up),
        else ``None`` (the input dtype)."""
        if device is None or dtype != ember.float16:
            return None
        if device.type == "cuda":
            if not ember.cuda.is_available():
                return None
            major, _ = ember.cuda.get_device_capability(device)
            return ember.float32 if major >= 7 else None
        if device.type == "cpu":
            return ember.float32
        return None

    def _compute_batch_chunk_size(self, num_batches: int, in_features: int, num_classes: int,
                                  method: str | None = None) -> int:
        """The chunk size ``chunking_method`` (or ``method``) gives these shapes."""
        method = str(method if method is not None else self.chunking_method)
        if method.startswith("aspect_ratio"):
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            inc_factor = self._ceil_div(num_classes, in_features)
            target = self._ceil_div(num_batches, inc_factor)
            chunk_size = 1 << (target - 1).bit_length()  # the next power of 2 >= target
            return min(chunk_size // factor, num_batches)
        raise AssertionError(f"unhandled chunking_method: {method!r}")

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None):
        """The options with every ``"auto"`` and ``None`` resolved for one call."""
        acc_policy = self.acc_policy
        chunking_method = self.chunking_method
        if chunking_method == "auto" and self.batch_chunk_size is not None:
            chunking_method = None  # an explicit size wins over the automatic one
        if acc_policy == "auto" or chunking_method == "auto":
            if device is not None:
                ap, cm = _AUTO_DEFAULTS.get((device.type, dtype), _AUTO_FALLBACK)
            else:
                ap, cm = _AUTO_FALLBACK
            if acc_policy == "auto":
                acc_policy = ap
            if chunking_method == "auto":
                chunking_method = cm
        if self.batch_chunk_size is None:
            batch_chunk_size = num_batches
        else:
            batch_chunk_size = min(self.batch_chunk_size, num_batches)
        if chunking_method is not None:
            batch_chunk_size = self._compute_batch_chunk_size(num_batches, in_features,
                                                              num_classes, chunking_method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != batch_chunk_size:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                    f"('{chunking_method}') give different chunk sizes "
                    f"({self.batch_chunk_size} vs {batch_chunk_size}); pass only one.")
        if self.acc_dtype is None:
            auto_acc = (self._resolve_auto_acc_dtype(dtype, device)
                        if self.acc_policy == "auto" else None)
            acc_dtype = auto_acc if auto_acc is not None else dtype
        else:
            acc_dtype = self.acc_dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=chunking_method,
                                   batch_chunk_size=max(1, batch_chunk_size),
                                   acc_dtype=acc_dtype)
