"""Random draws, Ember against PyTorch in one process: ``python benchmarks/bench_rng.py``
(one thread each, best of 15 runs, a pause between the libraries), or as part of ``nox -s
bench`` (``workloads``: the harness's rounds and table). Ember's generator draws PyTorch's
CPU stream (``ember/_torch_rng.py``), so both compute the same numbers here.
Results: benchmarks/RESULTS.md (2026-12-05)."""

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import ember
import ember.nn.functional as F


def best_us(fn, repeat: int = 15) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def _pairs(torch):
    """(name, n, Ember's call, PyTorch's call or None) for each draw."""
    tf = torch.nn.functional if torch is not None else None

    def theirs(fn):
        return fn if torch is not None else None

    for n in (16, 4096, 1 << 20):
        xe = ember.ones(n)
        xt = torch.ones(n) if torch is not None else None
        yield "rand", n, lambda n=n: ember.rand(n), theirs(lambda n=n: torch.rand(n))
        yield "randn", n, lambda n=n: ember.randn(n), theirs(lambda n=n: torch.randn(n))
        yield ("randint", n, lambda n=n: ember.randint(0, 10, (n,)),
               theirs(lambda n=n: torch.randint(0, 10, (n,))))
        yield ("dropout", n, lambda x=xe: F.dropout(x, 0.3),
               theirs(lambda x=xt: tf.dropout(x, 0.3)))
        yield ("uniform_", n, lambda x=xe: x.uniform_(-1, 1),
               theirs(lambda x=xt: x.uniform_(-1, 1)))
    for n in (1000, 60000):
        yield ("randperm", n, lambda n=n: ember.randperm(n),
               theirs(lambda n=n: torch.randperm(n)))
    yield "manual_seed", 0, lambda: ember.manual_seed(3), theirs(lambda: torch.manual_seed(3))
    yield ("Linear(256,256)", 0, lambda: ember.nn.Linear(256, 256),
           theirs(lambda: torch.nn.Linear(256, 256)))


#: calls per timing round, by draw size (~10-50 ms a round)
_CALLS = {16: 2000, 4096: 500, 1 << 20: 5, 1000: 1000, 60000: 50, 0: 200}


def workloads(torch):
    """For ``benchmarks/run.py``: each draw through the harness (``torch`` None: Ember
    alone)."""
    from harness import compare

    return [compare(f"random: {name}" + (f" ({n})" if n else ""), ours, theirs,
                    number=_CALLS[n])
            for name, n, ours, theirs in _pairs(torch)]


def main() -> None:
    import torch

    torch.set_num_threads(1)
    for name, n, ours, theirs in _pairs(torch):
        e = best_us(ours)
        time.sleep(0.05)
        p = best_us(theirs)
        time.sleep(0.05)
        print(f"{name:16s} {n:>8d} ember {e:10.1f} us  torch {p:10.1f} us  ratio {e / p:5.2f}")


if __name__ == "__main__":
    main()
