"""Run every benchmark, side by side with PyTorch when it is installed (``nox -s bench``).

Prints a Markdown table of times and Ember/PyTorch ratios, plus the machine, the date and
the BLAS kernel that ran (threadpoolctl), ready to paste into RESULTS.md.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import table


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    rows = []
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            rows.append(f"{pool.get('internal_api')} {pool.get('version')} "
                        f"({pool.get('architecture')}, {pool.get('num_threads')} threads, "
                        f"{os.path.basename(pool.get('filepath', ''))})")
    return "; ".join(rows) or "no BLAS found"


MODULES = ["bench_core", "bench_nn", "bench_serialization", "bench_vision", "bench_text",
           "bench_cpp", "bench_compile", "bench_ddp", "bench_vmap", "bench_rng"]


def main(argv: list[str]) -> int:
    """Run the benchmark modules named in ``argv`` (all of them by default)."""
    import importlib
    import traceback

    import ember

    threads = int(os.environ.get("THREADS", 0)) or os.cpu_count() or 1
    ember.set_num_threads(threads)  # the BLAS pool and Ember's intra-op pool
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    import numpy as np

    print(f"date: {datetime.date.today()}  machine: {platform.machine()}, {os.cpu_count()} "
          f"cores, {platform.python_implementation()} {platform.python_version()}")
    print(f"numpy {np.__version__}; torch {getattr(torch, '__version__', 'absent')}")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}")
    print(f"threads: {threads} (ember.set_num_threads, torch.set_num_threads; THREADS=n sets it)")
    print(f"BLAS: {blas_info()}")
    failed = []
    for name in argv or MODULES:
        print(f"\n## {name}\n")
        try:
            module = importlib.import_module(name)
            results = module.workloads(torch)
        except Exception:  # report and go on: one broken workload must not hide the others
            failed.append(name)
            traceback.print_exc()
            continue
        # a module with more columns than Ember/PyTorch (bench_compile) returns its own table
        print(results if isinstance(results, str) else table(results), flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
