"""The profiler's cost (issue 16 item 5): an MLP training step (batch 64) with no profiler,
inside a ``record_function`` range with no profiler running (the path every user pays), and
under an active ``profile()``; Ember and PyTorch side by side on the same weights.

The first two Ember rows should match (no profiler: nothing is wrapped, the engine checks one
flag per backward); the third is what recording costs per step.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_profiler.py``, or
``python benchmarks/run.py bench_profiler``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_nn import _copy_weights, _mlp
from harness import compare, table


def _step_fn(lib, model, x, y, opt, wrap):
    F = lib.nn.functional

    def step():
        with wrap():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

    return step


def workloads(torch) -> list:
    import contextlib

    import numpy as np

    import ember
    from ember.profiler import profile, record_function

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 784)).astype(np.float32)
    ys = rng.integers(0, 10, 64)
    em = _mlp(ember)
    e_opt = ember.optim.SGD(em.parameters(), lr=0.01)
    ex, ey = ember.tensor(xs), ember.tensor(ys)
    tm = t_opt = tx = ty = None
    if torch is not None:
        tm = _mlp(torch)
        _copy_weights(tm, em)
        t_opt = torch.optim.SGD(tm.parameters(), lr=0.01)
        tx, ty = torch.tensor(xs), torch.tensor(ys)

    def both(name, e_wrap, t_wrap, number):
        e_fn = _step_fn(ember, em, ex, ey, e_opt, e_wrap)
        t_fn = _step_fn(torch, tm, tx, ty, t_opt, t_wrap) if torch is not None else None
        return compare(name, e_fn, t_fn, number=number, repeat=6)

    results = [both("MLP step, no profiler", contextlib.nullcontext,
                    contextlib.nullcontext, 200)]
    results.append(both("MLP step in record_function, no profiler",
                        lambda: record_function("step"),
                        (lambda: torch.profiler.record_function("step")) if torch else None,
                        200))
    with contextlib.ExitStack() as stack:
        stack.enter_context(profile())
        if torch is not None:
            stack.enter_context(torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU]))
        results.append(both("MLP step under profile()", contextlib.nullcontext,
                            contextlib.nullcontext, 50))
    return [r for r in results if r is not None]


if __name__ == "__main__":
    try:
        import torch
    except ImportError:
        torch = None
    print(table(workloads(torch)))
