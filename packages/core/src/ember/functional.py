"""``ember.functional``: the functions PyTorch keeps in ``torch.functional`` (all of them are
also ``ember.<name>``; these are the same objects).

``stft``/``istft`` (spectral, open issue 17) and ``pca_lowrank``/``svd_lowrank`` are not in
Ember yet.
"""

from . import (  # installed on ``ember`` by the op registry
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
    einsum,
    lu,
    meshgrid,
    norm,
    split,
    tensordot,
    unique,
    unique_consecutive,
    unravel_index,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu",
           "meshgrid", "norm", "split", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]
