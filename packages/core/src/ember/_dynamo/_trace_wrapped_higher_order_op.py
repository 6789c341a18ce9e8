"""``torch._dynamo._trace_wrapped_higher_order_op``'s ``TransformGetItemToIndex``.

A ``TorchFunctionMode`` under which indexing a tensor with tensors only (``A[q_idx]``,
``A[b, kv_idx]``, each index possibly 0-d) is advanced indexing, ``ember.ops.aten.index``,
instead of a 0-d integer tensor being read as a Python int (a view). PyTorch's flex attention
and HuggingFace ``transformers``' mask functions run under it, in ``vmap`` over the batch,
head, query and key indices: each index is then a batched 0-d tensor, which must stay a
tensor. Anything else passes through unchanged.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..overrides import TorchFunctionMode
from ..utils._pytree import tree_leaves

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex(TorchFunctionMode):
    """``tensor[t0, t1, ...]`` with tensor indices as ``aten.index`` (advanced indexing)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is Tensor.__getitem__:
            index_args = tree_leaves(args[1])
            if all(isinstance(x, Tensor) for x in index_args):
                from ..ops import aten

                return aten.index(args[0], index_args)
        return func(*args, **(kwargs or {}))
