"""PyTorch's ``torch.types``: the type aliases annotations in model code import
(``from torch.types import Number, Device``), over Ember's own classes.

``Storage`` is Ember's ``UntypedStorage`` (PyTorch's is an abstract protocol class that its
storages follow), so ``isinstance(t.untyped_storage(), Storage)`` holds as it does there.
"""

from __future__ import annotations

import os
from builtins import bool as _bool  # noqa: F401  (PyTorch's private aliases, imported by name)
from builtins import bytes as _bytes  # noqa: F401
from builtins import complex as _complex  # noqa: F401
from builtins import float as _float  # noqa: F401
from builtins import int as _int  # noqa: F401
from builtins import str as _str  # noqa: F401
from collections.abc import Sequence
from typing import IO

from ._device import device as _device
from ._dtype import dtype as _dtype  # noqa: F401
from ._layout import layout as _layout  # noqa: F401
from ._size import Size
from ._storage import UntypedStorage as Storage
from ._tensor import Tensor
from .export._symbolic import SymBool, SymFloat, SymInt

__all__ = ["Number", "Device", "FileLike", "Storage"]

_TensorOrTensors = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors = Tensor | Sequence[Tensor | None]
_size = Size | list | tuple
_symsize = Size | Sequence[int | SymInt]
IntLikeType = int | SymInt
FloatLikeType = float | SymFloat
BoolLikeType = bool | SymBool
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = SymInt | SymFloat | SymBool
Number = int | float | bool
_Number = (int, float, bool)
FileLike = str | os.PathLike | IO[bytes]
Device = _device | str | int | None
