"""The digits CNN of ``train_digits.py``, trained data-parallel with DistributedDataParallel.

Run it on 2 processes with the launcher (torchrun's equivalent)::

    python -m ember.distributed.run --nproc-per-node 2 examples/ddp_digits.py

or with MPI's own launcher::

    mpiexec -n 2 python examples/ddp_digits.py

Every process builds the same model and DDP makes rank 0's weights everyone's; a
``DistributedSampler`` gives each process its own share of every (shuffled) epoch, and DDP
averages the gradients across the processes during ``backward``, so that each step is the step
of one process on the whole global batch (``--batch-size``, split evenly between the ranks).
Same data split, model, optimizer, schedule and epochs as ``train_digits.py``. Rank 0 prints
the progress and the held-out accuracy; every rank exits non-zero below 97%.
``docs/tutorials/ddp_digits.md`` walks through it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# the model, the data and the evaluation of the single-process example, beside this file
from train_digits import DigitsCNN, evaluate, load_digits

import ember as torch
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32,
                        help="the global batch: each of the N processes takes 1/N of it")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", metavar="PATH", type=Path,
                        help="rank 0 saves the trained model's state dict there")
    args = parser.parse_args()

    # "gloo" is what a PyTorch program asks for on CPUs; Ember runs it on MPI. The ranks and
    # the world size come from the launcher (or mpiexec).
    dist.init_process_group(backend="gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world_size:
        raise SystemExit(f"--batch-size {args.batch_size} does not split evenly between "
                         f"{world_size} processes")
    local_batch = args.batch_size // world_size

    # the same seed everywhere: the same initial model (DDP broadcasts rank 0's anyway) and
    # the same train/held-out split on every rank
    torch.manual_seed(args.seed)
    images, labels = load_digits()
    train_set, test_set = torch.utils.data.random_split(
        TensorDataset(images, labels), [0.8, 0.2], generator=torch.Generator().manual_seed(0))
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=local_batch, sampler=sampler)
    test_loader = DataLoader(test_set, batch_size=256)

    model = DDP(DigitsCNN())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"{world_size} processes, {local_batch} samples each per step (global batch "
              f"{local_batch * world_size}), {len(sampler)} of the {len(train_set)} training "
              f"samples per process per epoch", flush=True)

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a different shuffle every epoch, the same on every rank
        model.train()
        totals = torch.zeros(2, dtype=torch.float64)  # loss sum, samples
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()      # DDP averages the gradients across the ranks here
            optimizer.step()
            totals += torch.tensor([loss.item() * len(y), len(y)], dtype=torch.float64)
        scheduler.step()
        dist.all_reduce(totals)  # the epoch's loss over every rank's samples
        accuracy, _ = evaluate(model.module, test_loader)
        if rank == 0:
            print(f"epoch {epoch:2d}  loss {totals[0].item() / totals[1].item():.4f}  "
                  f"held-out accuracy {accuracy:.2%}", flush=True)
    elapsed = time.perf_counter() - start
    accuracy, _ = evaluate(model.module, test_loader)
    if rank == 0:
        print(f"trained in {elapsed:.1f} s on {world_size} processes; held-out accuracy "
              f"{accuracy:.2%}", flush=True)
        if args.save is not None:
            torch.save(model.module.state_dict(), args.save)
            print(f"saved the model to {args.save}", flush=True)
    dist.destroy_process_group()
    return 0 if accuracy >= 0.97 else 1


if __name__ == "__main__":
    sys.exit(main())
