"""Which ``scaled_dot_product_attention`` backends are enabled, and which one PyTorch's CPU
dispatch would pick: one process-wide setting, as PyTorch's global context.

``torch.nn.attention.sdpa_kernel`` (``ember.nn.attention``) and the ``torch.backends.cuda``
switches (``enable_flash_sdp``, ``math_sdp_enabled``, ...) read and write it. Ember has one
implementation; the pick decides what PyTorch's choice shows: the error when no enabled
backend can run, and which saved tensors the backward checks for in-place writes (PyTorch's
fused CPU kernel saves the query, key, value and output; its math path, composed of ops,
keeps only the value of those).
"""

from __future__ import annotations

import warnings

# PyTorch's SDPBackend values
MATH, FLASH, EFFICIENT, CUDNN, OVERRIDEABLE = 0, 1, 2, 3, 4
#: the backends in PyTorch's listing order (``_backend_names``)
ORDER = (CUDNN, FLASH, EFFICIENT, MATH, OVERRIDEABLE)
enabled = set(ORDER)
#: the priority order (PyTorch's default: flash, efficient, math, cudnn, overrideable)
priority = [FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE]


def current(with_priority: bool = False) -> list:
    """The enabled backends' values, in listing order or in priority order."""
    backends = [b for b in ORDER if b in enabled]
    if with_priority:
        backends.sort(key=priority.index)
    return backends


def set_enabled(backends, set_priority: bool = False) -> None:
    global priority
    chosen = [int(b) for b in backends]
    enabled.clear()
    enabled.update(b for b in ORDER if b in chosen)
    if set_priority:
        priority = chosen + [b for b in priority if b not in chosen]


def _flash_problem(q, k, v, attn_mask, dropout_p: float) -> str | None:
    """Why PyTorch's fused CPU kernel (``_scaled_dot_product_flash_attention_for_cpu``)
    would not run these inputs, as it warns it ("": a check that says nothing more), or None
    (its ``use_flash_attention_cpp`` checks)."""
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return ("All fused kernels requires query, key and value to be 4 dimensional, but "
                f"got Query dim: {q.ndim}, Key dim: {k.ndim}, Value dim: {v.ndim} instead.")
    if attn_mask is not None and attn_mask.requires_grad:
        return ""
    if not (q.shape[-1] == k.shape[-1] == v.shape[-1]):
        return ("Flash attention requires q,k,v to have the same last dimension. Got "
                f"Query.size(-1): {q.shape[-1]}, Key.size(-1): {k.shape[-1]}, "
                f"Value.size(-1): {v.shape[-1]} instead.")
    return None


def cpu_path(q, k, v, attn_mask, dropout_p: float) -> str:
    """``"flash"`` or ``"math"``: the backend PyTorch's CPU dispatch picks for these array
    inputs, by priority among the enabled ones; PyTorch's error when none can run."""
    problem = None
    for backend in priority:
        if backend not in enabled:
            continue
        if backend == FLASH:
            problem = _flash_problem(q, k, v, attn_mask, dropout_p)
            if problem is None:
                return "flash"
        elif backend == MATH:
            return "math"
    if problem is not None:
        warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
        if problem:
            warnings.warn(problem, UserWarning, stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution.")
    raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is "
                       "likely due to turning off both the math kernel and the fused kernels.")


def any_enabled() -> bool:
    """For a device whose kernels Ember does not model (CUDA): some backend is enabled."""
    if not enabled:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. "
                           "This is likely due to turning off both the math kernel and the "
                           "fused kernels.")
    return True
