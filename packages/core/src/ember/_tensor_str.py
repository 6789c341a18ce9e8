"""PyTorch-style ``repr`` of tensors."""

from __future__ import annotations

import numpy as np

from . import _dtype


def tensor_repr(t) -> str:
    arr = t._host()
    prefix = "tensor("
    body = np.array2string(arr, separator=", ", prefix=prefix, precision=4,
                           floatmode="maxprec_equal" if arr.dtype.kind != "f" else "fixed",
                           threshold=1000, edgeitems=3)
    suffix = []
    if t._device.type != "cpu":
        suffix.append(f"device='{t._device}'")
    d = t.dtype
    if (d is not _dtype.get_default_dtype() and d is not _dtype.int64 and d is not _dtype.bool) \
            or arr.size == 0:
        suffix.append(f"dtype={d}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"
