"""Converting between a distributed checkpoint and one ``torch.save`` file (PyTorch's
``torch.distributed.checkpoint.format_utils``)."""

from __future__ import annotations

import os

from .default_planner import _EmptyStateDictLoadPlanner
from .filesystem import FileSystemReader
from .state_dict_loader import _load_state_dict
from .state_dict_saver import save

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp"]


def dcp_to_torch_save(dcp_checkpoint_dir: str | os.PathLike,
                      torch_save_path: str | os.PathLike) -> None:
    """Write the whole checkpoint in ``dcp_checkpoint_dir`` as one ``save`` file (in this
    process; tensors whole, nested as they were saved)."""
    from ...serialization import save as torch_save

    sd: dict = {}
    _load_state_dict(sd, FileSystemReader(dcp_checkpoint_dir), None, 0, False,
                     _EmptyStateDictLoadPlanner())
    torch_save(sd, torch_save_path)


def torch_save_to_dcp(torch_save_path: str | os.PathLike,
                      dcp_checkpoint_dir: str | os.PathLike) -> None:
    """Write the state dict in ``torch_save_path`` (loaded weights only) as a distributed
    checkpoint in ``dcp_checkpoint_dir`` (from this process)."""
    from ...serialization import load

    state_dict = load(torch_save_path, weights_only=True)
    save(state_dict, checkpoint_id=dcp_checkpoint_dir, no_dist=True)
