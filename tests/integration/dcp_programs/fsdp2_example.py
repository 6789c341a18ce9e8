"""Run pytorch/examples' FSDP2 example (``example.py`` in the working directory, unedited) on
CPU ranks: its ``main`` with the GPU-count check answered yes, and a CPU ``device_id`` left
out of ``init_process_group`` (PyTorch refuses one: "must be an accelerator with an index").
The arguments are the example's.

The example builds its model on the meta device, then ``to_empty`` and
``Transformer.reset_parameters()``, which initialises the embeddings, the final norm and the
output layer but not the transformer blocks: those keep ``to_empty``'s uninitialised memory,
zeros on a fresh GPU, garbage on the CPU (PyTorch's own CPU run of it ends in NaN). The
driver zero-fills after ``to_empty``, as a fresh GPU gives, so the runs are deterministic.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.getcwd())
import example

example.verify_min_gpu_count = lambda min_gpus=2: True
_init_process_group = dist.init_process_group


def init_process_group(*args, device_id=None, **kwargs):
    if device_id is not None and torch.device(device_id).type == "cpu":
        device_id = None
    return _init_process_group(*args, device_id=device_id, **kwargs)


dist.init_process_group = init_process_group
_to_empty = torch.nn.Module.to_empty


def to_empty(self, *, device, recurse=True):
    out = _to_empty(self, device=device, recurse=recurse)
    with torch.no_grad():
        for t in list(self.parameters()) + list(self.buffers()):
            (t.to_local() if hasattr(t, "to_local") else t).zero_()
    return out


torch.nn.Module.to_empty = to_empty
parser = argparse.ArgumentParser(description="PyTorch FSDP2 example")
parser.add_argument("--explicit-prefetching", action="store_true", default=False)
parser.add_argument("--mixed-precision", action="store_true", default=False)
parser.add_argument("--dcp-api", action="store_true", default=False)
example.main(parser.parse_args())
