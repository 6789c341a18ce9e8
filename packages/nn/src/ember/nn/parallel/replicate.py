"""``replicate`` (``torch.nn.parallel.replicate``): copies of a module, one per device.

Each replica is a shallow copy of every submodule (``Module._replicate_for_data_parallel``)
whose parameters and buffers are the original's broadcast to the replica's device: on the
device the module lives on (``devices[0]``, as PyTorch requires) they share the original's
memory, elsewhere they are copies. Without ``detach`` they stay in the autograd graph:
gradients of a replica's (non-leaf) parameters flow back into the original parameters, as
through PyTorch's ``Broadcast``. With ``detach=True`` the first replica holds the original
parameters themselves and the others plain copies. As in PyTorch, the devices are
accelerator devices (the CPU is refused).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TypeVar

from ember import Tensor

from ..modules.module import Module
from ._devices import target_device

__all__ = ["replicate"]

T = TypeVar("T", bound=Module)


def _broadcast(tensors: list[Tensor], devices: list, detach: bool) -> list[list[Tensor]]:
    """``tensors`` on each of ``devices``: ``[device][tensor]``."""
    if not tensors:
        return [[] for _ in devices]
    if not detach and not all(t.device.type != "cpu" for t in tensors):
        raise AssertionError("Broadcast function not implemented for CPU tensors")
    for t in tensors:
        if t.device != devices[0]:
            raise RuntimeError(f"All tensors must be on devices[0]: {devices[0].index}")
    copies = []
    for device in devices:
        if detach:
            copies.append([t if t.device == device else t.detach().to(device)
                           for t in tensors])
        else:  # an alias in the graph on the source device, a differentiable copy elsewhere
            copies.append([t.view_as(t) if t.device == device else t.to(device)
                           for t in tensors])
    return copies


def replicate(network: T, devices: Sequence, detach: bool = False) -> list[T]:
    """``network`` replicated onto each of ``devices`` (see the module docstring)."""
    if not devices:
        return []
    devices = [target_device(d) for d in devices]
    num_replicas = len(devices)

    params = list(network.parameters())
    param_indices = {id(p): i for i, p in enumerate(params)}
    param_copies = _broadcast(params, devices, detach)

    buffers = list(network.buffers())
    buffers_rg = [b for b in buffers if b.requires_grad and not detach]
    buffers_not_rg = [b for b in buffers if not (b.requires_grad and not detach)]
    buffer_indices_rg = {id(b): i for i, b in enumerate(buffers_rg)}
    buffer_indices_not_rg = {id(b): i for i, b in enumerate(buffers_not_rg)}
    buffer_copies_rg = _broadcast(buffers_rg, devices, detach)
    buffer_copies_not_rg = _broadcast(buffers_not_rg, devices, detach=True)

    modules = list(network.modules())
    module_indices = {id(m): i for i, m in enumerate(modules)}
    module_copies: list[list[Module]] = [[] for _ in devices]
    for module in modules:
        for j in range(num_replicas):
            replica = module._replicate_for_data_parallel()
            replica._former_parameters = OrderedDict()  # the parameters, for DDP-style access
            module_copies[j].append(replica)

    for i, module in enumerate(modules):
        for j in range(num_replicas):
            replica = module_copies[j][i]
            for key, child in module._modules.items():
                if child is None:
                    replica._modules[key] = None
                else:
                    setattr(replica, key, module_copies[j][module_indices[id(child)]])
            for key, param in module._parameters.items():
                if param is None:
                    replica._parameters[key] = None
                else:
                    # not leaves any more: set as plain attributes, not parameters
                    param_copy = param_copies[j][param_indices[id(param)]]
                    setattr(replica, key, param_copy)
                    replica._former_parameters[key] = param_copy
            for key, buf in module._buffers.items():
                if buf is None:
                    replica._buffers[key] = None
                elif buf.requires_grad and not detach:
                    setattr(replica, key, buffer_copies_rg[j][buffer_indices_rg[id(buf)]])
                else:
                    setattr(replica, key,
                            buffer_copies_not_rg[j][buffer_indices_not_rg[id(buf)]])

    return [module_copies[j][0] for j in range(num_replicas)]

