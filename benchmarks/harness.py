"""A small harness: time Ember and PyTorch on the same workload in one process, as ratios.

Each workload is a pair of zero-argument callables built by a setup function per library.
Turns alternate between the libraries with a pause in between, so that one library's
spinning BLAS threads do not slow the other; the best of several rounds is kept.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Result:
    name: str
    ember_s: float
    torch_s: float | None
    numpy_s: float | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.torch_s is None else self.ember_s / self.torch_s


def best_time(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Seconds per call: the best of ``repeat`` rounds of ``number`` calls."""
    for _ in range(max(1, number // 10)):
        fn()
    best = float("inf")
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        if gc_was:
            gc.enable()
    return best


def compare(name: str, ember_fn, torch_fn=None, numpy_fn=None, *, number: int = 1000,
            repeat: int = 7, pause: float = 0.3) -> Result | None:
    """Time the callables turn by turn (Ember, pause, PyTorch, pause, ...).

    With ``BENCH_ONLY=text`` in the environment, workloads whose name does not contain
    ``text`` (case-insensitive) are skipped (None), to time one workload quickly.
    """
    only = os.environ.get("BENCH_ONLY", "").lower()
    if only and only not in name.lower():
        return None
    times: dict[str, float] = {}
    fns = [("ember", ember_fn), ("torch", torch_fn), ("numpy", numpy_fn)]
    for _ in range(3):
        for label, fn in fns:
            if fn is None:
                continue
            t = best_time(fn, number, max(1, repeat // 3))
            times[label] = min(times.get(label, float("inf")), t)
            time.sleep(pause)
    return Result(name, times["ember"], times.get("torch"), times.get("numpy"))


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def table(results: list[Result]) -> str:
    lines = ["| workload | Ember | PyTorch | Ember / PyTorch | NumPy |",
             "|---|---|---|---|---|"]
    for r in results:
        if r is None:
            continue
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(f"| {r.name} | {fmt_time(r.ember_s)} | {fmt_time(r.torch_s)} | {ratio} | "
                     f"{fmt_time(r.numpy_s)} |")
    return "\n".join(lines)
