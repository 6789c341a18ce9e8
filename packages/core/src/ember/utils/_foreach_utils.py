"""``torch.utils._foreach_utils``: grouping tensor lists for the ``_foreach_*`` functions.

Optimizer code written against PyTorch (timm's Adopt, Lion, ... with ``foreach=True``) splits
its parameter, gradient and state lists by device and dtype before calling
``ember._foreach_*``, which wants one device and dtype per call.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__: list[str] = []

_foreach_supported_types = [Tensor]


def _get_foreach_kernels_supported_devices() -> list[str]:
    """The device types with foreach kernels (PyTorch's list; Ember's CPU runs them too)."""
    return ["cuda", "xpu", "mtia", "privateuseone"]


def _get_fused_kernels_supported_devices() -> list[str]:
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


@no_grad()
def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
    """``{(device, dtype): (tensorlistlist restricted to that group, indices)}``, keyed by the
    first list's tensors (the other lists may hold None); ``indices`` are the positions in the
    input when ``with_indices``, else empty. The grouped lists hold the same tensor objects."""
    if not tensorlistlist or not tensorlistlist[0]:
        return {}
    n = len(tensorlistlist[0])
    for tl in tensorlistlist:
        if tl and len(tl) != n:
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                               f"and {len(tl)}")
    groups: dict = {}
    for i, t in enumerate(tensorlistlist[0]):
        if t is None:
            raise RuntimeError("Tensors of the first list must not be None")
        key = (t.device, t.dtype)
        entry = groups.get(key)
        if entry is None:
            entry = groups[key] = ([[] for _ in tensorlistlist], [])
        for lst, tl in zip(entry[0], tensorlistlist):
            lst.append(tl[i] if tl else None)
        if with_indices:
            entry[1].append(i)
    return groups


def _device_has_foreach_support(device) -> bool:
    from ..jit import is_scripting

    return device.type in (_get_foreach_kernels_supported_devices() + ["cpu"]) and not \
        is_scripting()


def _has_foreach_support(tensors, device) -> bool:
    return _device_has_foreach_support(device) and all(
        t is None or type(t) in _foreach_supported_types for t in tensors)
