"""``FuzzedSparseTensor``: sparse COO benchmark inputs, as ``torch.utils.benchmark``'s."""

from __future__ import annotations

import math
from numbers import Number

from .fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    """A sparse COO tensor of a case's ``size``: ``ceil(sum(size) * density)`` nonzeros in
    its first ``sparse_dim`` dims (parameter names: ``density``, ``sparse_dim``,
    ``coalesced``; the parameters must be named so, as in PyTorch). Uncoalesced tensors
    repeat every index once (twice the values, the same pattern)."""

    def __init__(self, name: str, size: tuple, min_elements: int | None = None,
                 max_elements: int | None = None, dim_parameter: str | None = None,
                 sparse_dim: str | None = None, nnz: str | None = None,
                 density: str | None = None, coalesced: str | None = None,
                 dtype=None, cuda: bool = False) -> None:
        super().__init__(name=name, size=size, min_elements=min_elements,
                         max_elements=max_elements, dim_parameter=dim_parameter, dtype=dtype,
                         cuda=cuda)
        self._density = density
        self._coalesced = coalesced
        self._sparse_dim = sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim, nnz, is_coalesced):
        """Random values at random indices (``coalesce()`` d when ``is_coalesced``)."""
        import ember

        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError("invalid arguments")
        v_size = [nnz, *size[sparse_dim:]]
        if dtype.is_floating_point:
            v = ember.rand(size=v_size, dtype=dtype, device="cpu")
        else:
            v = ember.randint(1, 127, size=v_size, dtype=dtype, device="cpu")
        i = ember.rand(sparse_dim, nnz, device="cpu")
        i.mul_(ember.tensor(size[:sparse_dim]).unsqueeze(1).to(i))
        i = i.to(ember.long)
        if not is_coalesced:
            v = ember.cat([v, ember.randn_like(v)], 0)
            i = ember.cat([i, i], 1)
        x = ember.sparse_coo_tensor(i, v, ember.Size(size))
        return x.coalesce() if is_coalesced else x

    def _make_tensor(self, params, state):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError("nnz cannot exceed total number of elements")
        sparse_dim = min(params["sparse_dim"] if self._sparse_dim else len(size), len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz,
                                                params["coalesced"])
        if self._cuda:
            tensor = tensor.cuda()
        sparse_dim = tensor.sparse_dim()
        return tensor, {"numel": int(tensor.numel()), "shape": tensor.size(),
                        "is_coalesced": tensor.is_coalesced(), "density": density,
                        "sparsity": 1.0 - density, "sparse_dim": sparse_dim,
                        "dense_dim": tensor.dense_dim(),
                        "is_hybrid": len(size[sparse_dim:]) > 0, "dtype": str(self._dtype)}
