"""``torch.distributed._tensor``: DTensor's old import path, kept by PyTorch for programs
written before it moved to ``torch.distributed.tensor`` (pytorch/examples' tensor-parallel
programs import ``Shard``/``Replicate`` and ``_tensor.device_mesh.init_device_mesh`` from
here). The same objects as ``ember.distributed.tensor``'s."""

import sys

from ..tensor import (
    DeviceMesh,
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    _utils,
    device_mesh,
    distribute_module,
    distribute_tensor,
    empty,
    full,
    init_device_mesh,
    ones,
    rand,
    randn,
    zeros,
)

# PyTorch registers these modules under the old path too
for _name, _module in (("device_mesh", device_mesh), ("_utils", _utils)):
    sys.modules[f"{__name__}.{_name}"] = _module
del _name, _module, sys

__all__ = ["DeviceMesh", "DTensor", "Partial", "Placement", "Replicate", "Shard",
           "distribute_module", "distribute_tensor", "empty", "full", "init_device_mesh",
           "ones", "rand", "randn", "zeros"]
