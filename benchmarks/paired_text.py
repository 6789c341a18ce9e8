"""Paired, interleaved timings of the ember-text workloads (MiniLM inference, the GPT step).

Per pair, one Ember call and one PyTorch call, their order alternating; for each thread count
(``THREADS=1,2``, both libraries set to it) prints the minima, the medians and the median and
quartiles of the per-pair ratio, which a machine's background load disturbs far less than
separate best-of runs. ``PAIRS`` (default 20) pairs per workload. Run with the BLAS kernel a
user gets: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/paired_text.py``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    import bench_text
    import torch
    from threadpoolctl import threadpool_limits

    import ember

    pairs = int(os.environ.get("PAIRS", "20"))
    setups = [("MiniLM b32x64", bench_text._minilm_fns(torch))]
    for vocab in bench_text.GPT_VOCABS:
        setups.append((f"GPT step vocab {vocab}",
                       bench_text._gpt_fns(torch, vocab, np.random.default_rng(0))))
    for threads in [int(t) for t in os.environ.get("THREADS", "1,2").split(",")]:
        torch.set_num_threads(threads)
        ember.set_num_threads(threads)
        with threadpool_limits(threads, user_api="blas"):
            for name, fns in setups:
                if fns is None:
                    print(f"{name}: skipped (no weights)")
                    continue
                ours, theirs = fns
                ours(), theirs(), ours(), theirs()
                times: dict = {ours: [], theirs: []}
                for i in range(pairs):
                    for fn in (ours, theirs) if i % 2 == 0 else (theirs, ours):
                        t0 = time.perf_counter()
                        fn()
                        times[fn].append(time.perf_counter() - t0)
                e, t = np.array(times[ours]), np.array(times[theirs])
                r = e / t
                load = open("/proc/loadavg").read().split()[0]
                print(f"{threads} thr | {name} | Ember min {e.min() * 1e3:.0f} med "
                      f"{np.median(e) * 1e3:.0f} ms | torch min {t.min() * 1e3:.0f} med "
                      f"{np.median(t) * 1e3:.0f} ms | per-pair ratio median {np.median(r):.2f}x "
                      f"(quartiles {np.percentile(r, 25):.2f}-{np.percentile(r, 75):.2f}) | "
                      f"load {load}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
