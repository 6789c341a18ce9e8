"""``ember.utils.dlpack``: PyTorch's ``torch.utils.dlpack``.

``from_dlpack`` is ``ember.from_dlpack`` (an object with ``__dlpack__``, or a DLPack capsule);
``to_dlpack`` gives the legacy capsule of a tensor. As in PyTorch, ``to_dlpack`` is
importable from here although ``__all__`` names only ``DLDeviceType`` and ``from_dlpack``.
"""

from __future__ import annotations

import enum

from .._factory import from_dlpack
from .._tensor import Tensor

__all__ = [
    "DLDeviceType",
    "from_dlpack",
]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types, with the specification's values (``dlpack.h``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor) -> object:
    """to_dlpack(tensor) -> PyCapsule

    Returns an opaque object (a "DLPack capsule") representing the tensor, sharing its
    memory. A legacy interface: the capsule is only good for one ``from_dlpack`` (Ember's,
    PyTorch's, NumPy's through an adapter, CuPy's); ``from_dlpack(tensor)`` itself is the
    idiomatic way. Unlike ``tensor.__dlpack__()``, a tensor that requires grad is exported
    too, as in PyTorch.
    """
    if not isinstance(tensor, Tensor):
        cls = type(tensor)
        name = cls.__qualname__ if cls.__module__ == "builtins" else \
            f"{cls.__module__}.{cls.__qualname__}"
        raise TypeError(f"_to_dlpack(): argument 'data' (position 1) must be Tensor, not {name}")
    return tensor.detach().__dlpack__()
