"""``ShapeProp``: run a GraphModule and record each node's output shape and dtype
(``torch.fx.passes.shape_prop``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import ember

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: ember.Tensor, include_contiguity: bool = True) \
        -> TensorMetadata:
    memory_format = None
    if include_contiguity:
        for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=fmt):
                    memory_format = fmt
                    break
            except (RuntimeError, ValueError):
                continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and stores, on every node that
    produced tensors, ``node.meta['tensor_meta']`` (a :class:`TensorMetadata`, or the same
    structure of them) and ``node.meta['type']``."""

    def __init__(self, gm, fake_mode=None) -> None:
        super().__init__(gm)

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found_tensor = False

        def extract(obj):
            nonlocal found_tensor
            if isinstance(obj, ember.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Run the module on ``args`` (recording the metadata); returns its result."""
        return super().run(*args)
