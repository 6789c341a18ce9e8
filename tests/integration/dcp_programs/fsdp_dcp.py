"""PyTorch's distributed-checkpoint recipe as a program: an FSDP2 model and its optimizer in
a ``Stateful`` app state, saved and loaded with ``torch.distributed.checkpoint``. Run by
PyTorch's launcher, or by Ember's under ``ember.as_torch``; the test crosses checkpoints
between the two and between world sizes.

    fsdp_dcp.py FIRST LAST OUT [--load DIR] [--save DIR]

trains steps FIRST..LAST-1 (each rank on its slice of the global batch), after loading the
checkpoint DIR if given, saves to DIR if given, and writes the full parameters to OUT.
"""

import argparse

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp import fully_shard


class AppState(Stateful):
    """The recipe's wrapper: DCP calls state_dict/load_state_dict on it."""

    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {"model": model_state_dict, "optim": optimizer_state_dict}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(16, 13)  # 13 rows: uneven shards on 2 and 4 ranks
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(13, 8)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def initialise(model, shift):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            grid = torch.linspace(-0.5, 0.5 + shift, p.numel(), dtype=p.dtype)
            p.copy_((grid * (3 + i)).cos().reshape(p.shape) * 0.3)


def global_batch(step):
    x = torch.sin(torch.arange(8 * 16, dtype=torch.float64).reshape(8, 16) * 0.37 + step)
    y = torch.cos(torch.arange(8 * 8, dtype=torch.float64).reshape(8, 8) * 0.11 + step)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("first", type=int)
    parser.add_argument("last", type=int)
    parser.add_argument("out")
    parser.add_argument("--load")
    parser.add_argument("--save")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = ToyModel().double()
    initialise(model, 0.0 if args.load is None else 1.0)  # loading must replace these
    fully_shard(model.net1)
    fully_shard(model.net2)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    if args.load:
        state_dict = {"app": AppState(model, optimizer)}
        dcp.load(state_dict=state_dict, checkpoint_id=args.load)
    n = 8 // world
    for step in range(args.first, args.last):
        x, y = global_batch(step)
        out = model(x[rank * n:(rank + 1) * n])
        loss = ((out - y[rank * n:(rank + 1) * n]) ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if args.save:
        dcp.save({"app": AppState(model, optimizer)}, checkpoint_id=args.save)
    full = {k: v.full_tensor() for k, v in model.state_dict().items()}
    step_count = optimizer.state_dict()["state"][0]["step"]
    if rank == 0:
        torch.save({"params": full, "step": torch.as_tensor(step_count)}, args.out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
