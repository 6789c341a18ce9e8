"""``ember.distributed.tensor``: DTensor, a tensor laid over a device mesh (PyTorch's
``torch.distributed.tensor``).

``distribute_tensor(t, mesh, [Shard(0)])`` keeps each rank's rows of ``t``;
``DTensor.from_local`` wraps each rank's own part; ``redistribute`` moves between placements
with collectives; ``full_tensor()`` gathers the whole. See ``_api`` for how ops run.
The factories (``zeros``, ``ones``, ``empty``, ``full``, ``rand``, ``randn``) make each rank's
part of the global tensor; ``rand``/``randn`` draw the whole tensor from the generator and keep
this rank's part, so ranks seeded alike hold the parts of one draw.
"""

from __future__ import annotations

from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, DTensorSpec, distribute_module, distribute_tensor
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "Shard", "Replicate",
           "Partial", "Placement", "ones", "empty", "full", "rand", "randn", "zeros"]


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _factory(make, size, device_mesh, placements, requires_grad: bool, whole: bool):
    from . import _api
    from . import _redistribute as rd

    shape = _size(size)
    mesh = _api._mesh_or_current(device_mesh)
    placements = _api._normalize(placements, len(shape), mesh)
    if any(isinstance(p, Partial) for p in placements):
        raise RuntimeError("DTensor factories do not take Partial placements")
    if whole:  # random: the whole draw, this rank's part of it
        local = rd.redistribute_local(make(shape), mesh, _api._replicated(mesh.ndim),
                                      placements, shape).contiguous()
    else:
        coordinate = mesh.get_coordinate()
        local = make(rd.local_shape(shape, mesh, placements, coordinate)
                     if coordinate is not None else (0,))
    local.requires_grad_(requires_grad)
    return DTensor._make(local, mesh, placements, shape)


def zeros(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh=None,
          placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.zeros(s, dtype=dtype), size, device_mesh, placements,
                    requires_grad, False)


def ones(*size, dtype=None, layout=None, requires_grad: bool = False, device_mesh=None,
         placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.ones(s, dtype=dtype), size, device_mesh, placements,
                    requires_grad, False)


def empty(*size, dtype=None, layout=None, requires_grad: bool = False, device_mesh=None,
          placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.empty(s, dtype=dtype), size, device_mesh, placements,
                    requires_grad, False)


def full(size, fill_value, *, dtype=None, layout=None, requires_grad: bool = False,
         device_mesh=None, placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.full(s, fill_value, dtype=dtype), (size,), device_mesh,
                    placements, requires_grad, False)


def rand(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh=None,
         placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.rand(s, dtype=dtype), size, device_mesh, placements,
                    requires_grad, True)


def randn(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh=None,
          placements=None) -> DTensor:
    import ember

    return _factory(lambda s: ember.randn(s, dtype=dtype), size, device_mesh, placements,
                    requires_grad, True)

