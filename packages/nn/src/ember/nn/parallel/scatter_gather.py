"""``scatter``, ``scatter_kwargs`` and ``gather`` (``torch.nn.parallel.scatter_gather``).

``scatter`` cuts every tensor of a nested structure into ``len(target_gpus)`` chunks along
``dim`` (``Tensor.chunk``, so a short dimension gives fewer chunks) and moves chunk ``i`` to
device ``i``; ``gather`` concatenates tensors onto one device. Both are built from
differentiable ops, so gradients flow back as through PyTorch's ``Scatter``/``Gather``
functions. As in PyTorch, the devices are accelerator devices: an int is an index of the
accelerator, and the CPU is refused (``"cpu"`` is allowed only as ``gather``'s target).
Ember has one device of a type here, so the useful case is one target device (or the same
one several times); devices that do not exist raise the device layer's error.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import ember
from ember import Tensor

from ._devices import target_device

__all__ = ["scatter", "scatter_kwargs", "gather"]


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a ``collections.namedtuple`` or ``typing.NamedTuple``
    class (deprecated in PyTorch, which warns so)."""
    warnings.warn("`is_namedtuple` is deprecated, please use the python checks instead",
                  FutureWarning, stacklevel=2)
    return _is_namedtuple(obj)


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(tensor: Tensor, devices: list, dim: int) -> tuple[Tensor, ...]:
    chunks = tensor.chunk(len(devices), dim)
    return tuple(chunk.to(device) for chunk, device in zip(chunks, devices))


def scatter(inputs: Any, target_gpus: Sequence, dim: int = 0) -> Any:
    """Slice tensors into approximately equal chunks and distribute them across the given
    devices; objects that are not tensors are repeated by reference.

    A tensor gives a tuple of chunks; a tuple, list, dict or namedtuple gives a list with one
    structure per device.
    """
    devices = None

    def scatter_map(obj):
        nonlocal devices
        if isinstance(obj, Tensor):
            if devices is None:
                devices = [target_device(d) for d in target_gpus]
            return _scatter_tensor(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]

    return scatter_map(inputs)


def scatter_kwargs(inputs: tuple[Any, ...], kwargs: dict[str, Any] | None,
                   target_gpus: Sequence, dim: int = 0
                   ) -> tuple[tuple[Any, ...], tuple[dict[str, Any], ...]]:
    """``scatter`` for positional and keyword arguments: one ``(args, kwargs)`` pair per
    device, padded with ``()`` or ``{}`` where one side has fewer chunks."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(target, dim: int, tensors: Sequence[Tensor]) -> Tensor:
    if not all(t.device.type != "cpu" for t in tensors):
        raise AssertionError("Gather function not implemented for CPU tensors")
    if target == "cpu" or (isinstance(target, int) and target == -1):
        device = ember.device("cpu")
    else:
        device = target_device(target)
    if dim == 0 and all(t.dim() == 0 for t in tensors):
        tensors = [t.view(1) for t in tensors]
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                      "scalars; will instead unsqueeze and return a vector.", stacklevel=3)
    return ember.cat([t.to(device) for t in tensors], dim)


def gather(outputs: Any, target_device: Any, dim: int = 0) -> Any:
    """Gather the tensors of a sequence of structures (one per device) onto
    ``target_device`` (an accelerator device, or ``"cpu"``/``-1`` for the CPU), concatenating
    along ``dim``; dicts and (named) tuples are gathered entry by entry."""

    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(target_device, dim, outputs)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs, strict=True)))
        return type(out)(map(gather_map, zip(*outputs, strict=True)))

    return gather_map(outputs)
