"""Random draws, Ember against PyTorch in one process: ``python benchmarks/bench_rng.py``.

One thread each, best of 15 runs, a pause between the libraries. Ember's generator draws
PyTorch's CPU stream (``ember/_torch_rng.py``), so both compute the same numbers here.
Results: benchmarks/RESULTS.md (2026-12-05)."""

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

import ember
import ember.nn.functional as F


def best_us(fn, repeat: int = 15) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def workloads():
    for n in (16, 4096, 1 << 20):
        xe, xt = ember.ones(n), torch.ones(n)
        yield "rand", n, lambda n=n: ember.rand(n), lambda n=n: torch.rand(n)
        yield "randn", n, lambda n=n: ember.randn(n), lambda n=n: torch.randn(n)
        yield ("randint", n, lambda n=n: ember.randint(0, 10, (n,)),
               lambda n=n: torch.randint(0, 10, (n,)))
        yield ("dropout", n, lambda x=xe: F.dropout(x, 0.3),
               lambda x=xt: torch.nn.functional.dropout(x, 0.3))
        yield "uniform_", n, lambda x=xe: x.uniform_(-1, 1), lambda x=xt: x.uniform_(-1, 1)
    for n in (1000, 60000):
        yield "randperm", n, lambda n=n: ember.randperm(n), lambda n=n: torch.randperm(n)
    yield "manual_seed", 0, lambda: ember.manual_seed(3), lambda: torch.manual_seed(3)
    yield ("Linear(256,256)", 0, lambda: ember.nn.Linear(256, 256),
           lambda: torch.nn.Linear(256, 256))


def main() -> None:
    torch.set_num_threads(1)
    for name, n, ours, theirs in workloads():
        e = best_us(ours)
        time.sleep(0.05)
        p = best_us(theirs)
        time.sleep(0.05)
        print(f"{name:16s} {n:>8d} ember {e:10.1f} us  torch {p:10.1f} us  ratio {e / p:5.2f}")


if __name__ == "__main__":
    main()
