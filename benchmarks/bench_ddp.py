"""Data-parallel training throughput: DistributedDataParallel on 1 and 2 processes (issue 15).

The MLP 784-512-256-10 (b128 per process) and LeNet-5 (b64 per process, 1x28x28) training steps
of ``bench_nn.py`` (SGD with momentum, cross-entropy), each process with its own batch of the
same size (weak scaling: samples per second = processes x batch / step time), in three layouts
of a machine's cores:

- 1 process, 1 thread: the model alone, no DDP (the baseline per core);
- 1 process, 2 threads: the model alone, BLAS and Ember's pool on 2 threads (what one process
  makes of the machine);
- 2 processes, 1 thread each: DDP, gradients averaged across the processes every step.

Ember runs under ``python -m ember.distributed.run`` (MPI); PyTorch, side by side, under
``torchrun --standalone`` with the gloo backend (when torch is installed). Every step is timed
on every rank; a round's time is the slowest rank's; the table shows the median of the rounds.

Where the time goes (2 processes): ``comm share`` is the exposed cost of communication,
``1 - t(no_sync) / t(sync)`` per round, where ``t(no_sync)`` is the same DDP step under
``model.no_sync()`` (no all-reduce at all; median over rounds, same for both libraries);
for Ember also the measured time inside ``all_reduce`` calls and ``Work.wait`` (DDP's waits
at the end of backward), as a share of the step, and the phases of the step (forward,
backward including the waits, optimizer step).

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_ddp.py`` (needs
``ember-core[distributed]``), or ``python benchmarks/run.py bench_ddp``. ``ROUNDS`` (default
7) sets the rounds per measurement, ``REPEATS`` (default 3) the runs of every layout (the
median run is reported).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORKLOADS = {  # name: (builder in bench_nn, input shape per sample, batch per process, steps)
    "MLP 784-512-256-10 step (b128 per process)": ("_mlp", (784,), 128, 40),
    "LeNet-5 step (b64 per process, 28x28)": ("_lenet", (1, 28, 28), 64, 15),
}
LAYOUTS = [(1, 1), (1, 2), (2, 1)]  # (processes, threads per process)


# -- inside each process ------------------------------------------------------------------------
class _CommTimer:
    """Time spent in ``ember.distributed.all_reduce`` calls and in waiting for their results:
    ``Work.wait``, and DDP's own wait (``ember.nn.parallel.distributed._wait``, which polls
    ``Work.is_completed`` before falling back on ``Work.wait``), outside of the calls."""

    def __init__(self) -> None:
        import ember.distributed as dist
        import ember.nn.parallel.distributed as ddp

        self.calls = self.waits = 0.0
        self._depth = 0
        all_reduce = dist.all_reduce

        def timed_all_reduce(*args, **kwargs):
            self._depth += 1
            start = time.perf_counter()
            try:
                return all_reduce(*args, **kwargs)
            finally:
                self.calls += time.perf_counter() - start
                self._depth -= 1

        def timing(wait):
            def timed_wait(*args, **kwargs):
                if self._depth:
                    return wait(*args, **kwargs)
                self._depth += 1
                start = time.perf_counter()
                try:
                    return wait(*args, **kwargs)
                finally:
                    self.waits += time.perf_counter() - start
                    self._depth -= 1

            return timed_wait

        dist.all_reduce = timed_all_reduce
        dist.Work.wait = timing(dist.Work.wait)
        if hasattr(ddp, "_wait"):
            ddp._wait = timing(ddp._wait)

    def reset(self) -> None:
        self.calls = self.waits = 0.0


class _Measure:
    """One workload's training step in this process, timed as the module doc says."""

    def __init__(self, lib, dist, model, batch: int, shape, rank: int, timer) -> None:
        self.lib, self.dist, self.model, self.timer = lib, dist, model, timer
        self.distributed = dist.is_initialized()
        self.opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        self.loss_fn = lib.nn.CrossEntropyLoss()
        rng = np.random.default_rng(rank)
        self.x = lib.from_numpy(rng.standard_normal((batch, *shape)).astype(np.float32))
        self.y = lib.from_numpy(rng.integers(0, 10, batch))
        self.phases = np.zeros(3)  # forward, backward, optimizer step
        self.comm: list[list[float]] = []
        self.local: list[tuple[bool, float]] = []  # this rank's own seconds per step, by round

    def step(self) -> None:
        t0 = time.perf_counter()
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(self.x), self.y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        self.opt.step()
        self.phases += (t1 - t0, t2 - t1, time.perf_counter() - t2)

    def round(self, steps: int, sync: bool = True) -> float:
        """Seconds per step over ``steps`` steps (the slowest rank's)."""
        dist = self.dist
        if self.distributed:
            dist.barrier()
        if self.timer is not None:
            self.timer.reset()
        start = time.perf_counter()
        if sync:
            for _ in range(steps):
                self.step()
        else:
            with self.model.no_sync():
                for _ in range(steps):
                    self.step()
        seconds = (time.perf_counter() - start) / steps
        self.local.append((sync, seconds))
        if self.timer is not None and sync:
            self.comm.append([self.timer.calls / steps, self.timer.waits / steps])
        if self.distributed:  # the round took as long as its slowest rank
            t = self.lib.tensor([seconds], dtype=self.lib.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            seconds = t.item()
        return seconds

    def run(self, steps: int, rounds: int, world: int, batch: int) -> dict:
        for _ in range(3):
            self.step()
        sync_times, nosync_times, phase_rows = [], [], []
        for _ in range(rounds):
            self.phases[:] = 0
            sync_times.append(self.round(steps))
            phase_rows.append(self.phases / steps)
            if self.distributed:
                nosync_times.append(self.round(steps, sync=False))
        step_s = float(np.median(sync_times))
        row = {"step_s": step_s, "samples_per_s": world * batch / step_s,
               "phases_s": np.median(np.array(phase_rows), axis=0).tolist()}
        if self.distributed:
            row["nosync_s"] = float(np.median(nosync_times))
            row["comm_share"] = float(np.median([1 - n / s for s, n in
                                                 zip(sync_times, nosync_times)]))
        if self.comm:
            calls, waits = np.median(np.array(self.comm), axis=0)
            row["allreduce_calls_s"], row["wait_s"] = float(calls), float(waits)
        if self.distributed:
            row.update(self._profile())
        return row

    def _profile(self) -> dict:
        """The ranks' own speeds without communication (each rank's median ``no_sync`` step:
        the slowest and the fastest rank), and one all-reduce of all the gradients as a flat
        buffer with nothing else running (the transport alone)."""
        lib, dist = self.lib, self.dist
        mine = float(np.median([s for sync, s in self.local if not sync]))
        speeds = lib.tensor([mine, -mine], dtype=lib.float64)
        dist.all_reduce(speeds, op=dist.ReduceOp.MAX)
        numel = sum(p.numel() for p in self.model.parameters())
        flat = lib.zeros(numel)
        for _ in range(5):
            dist.all_reduce(flat)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(50):
            dist.all_reduce(flat)
        transport = (time.perf_counter() - start) / 50
        return {"nosync_slowest_rank_s": speeds[0].item(),
                "nosync_fastest_rank_s": -speeds[1].item(),
                "transport_s": transport, "gradient_mb": numel * 4 / 1e6}


def _worker(lib_name: str, threads: int, distributed: bool, rounds: int, out: str) -> None:
    import importlib

    import bench_nn

    lib = importlib.import_module(lib_name)
    dist = importlib.import_module(f"{lib_name}.distributed")
    DistributedDataParallel = importlib.import_module(
        f"{lib_name}.nn.parallel").DistributedDataParallel
    lib.set_num_threads(threads)
    rank, world = 0, 1
    timer = None
    if distributed:
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if lib_name == "ember":
            timer = _CommTimer()
    results = {}
    for name, (builder, shape, batch, steps) in WORKLOADS.items():
        lib.manual_seed(0)
        model = getattr(bench_nn, builder)(lib)
        if distributed:
            model = DistributedDataParallel(model)
        measure = _Measure(lib, dist, model, batch, shape, rank, timer)
        results[name] = measure.run(steps, rounds, world, batch)
    if rank == 0:
        Path(out).write_text(json.dumps(results))
    if distributed:
        dist.destroy_process_group()


# -- the driver ---------------------------------------------------------------------------------
def _run_layout(lib_name: str, procs: int, threads: int, rounds: int) -> dict:
    """Run the workloads in ``procs`` processes of ``threads`` threads; rank 0's results."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        worker = [str(HERE / "bench_ddp.py"), "--worker", lib_name, "--threads", str(threads),
                  "--rounds", str(rounds), "--out", out]
        if procs == 1:
            cmd = [sys.executable, *worker]
        elif lib_name == "ember":
            cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node",
                   str(procs), *worker, "--distributed"]
        else:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", str(procs), *worker, "--distributed"]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        # PyTorch's gloo job aborts now and then here ("terminate called without an active
        # exception", SIGABRT in one rank): its run is tried twice, and the retry reported
        for attempt in range(2 if lib_name == "torch" else 1):
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900,
                                  start_new_session=True)
            if done.returncode == 0 and os.path.exists(out):
                return json.loads(Path(out).read_text())
            if attempt == 0 and lib_name == "torch":
                print(f"PyTorch {procs}x{threads} failed ({done.returncode}), retrying once: "
                      f"{done.stderr.strip().splitlines()[:1]}", file=sys.stderr)
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def _mpi_missing() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed"
    from ember.distributed.run import LaunchError, find_mpiexec

    try:
        find_mpiexec()
    except LaunchError as exc:
        return str(exc)
    return None


def _ms(s: float) -> str:
    return f"{s * 1e3:.2f} ms"


def _median_run(runs: list[dict], name: str) -> dict:
    """Of several runs of a layout, the one whose step time for ``name`` is the median."""
    rows = sorted((run[name] for run in runs), key=lambda row: row["step_s"])
    return rows[len(rows) // 2]


def workloads(torch) -> str:
    """Every layout for Ember (and PyTorch when ``torch`` is given); a Markdown report.

    The layouts run ``REPEATS`` times (default 3), Ember's and PyTorch's jobs alternating in
    order, and each cell reports the median run: a shared machine's load moves in the
    minutes a set takes."""
    missing = _mpi_missing()
    if missing:
        return (f"bench_ddp needs ember-core[distributed] (pip install "
                f"'ember-core[distributed]'): {missing}")
    rounds = int(os.environ.get("ROUNDS", 7))
    repeats = int(os.environ.get("REPEATS", 3))
    libs = ["ember"] + (["torch"] if torch is not None else [])
    runs: dict[tuple, list[dict]] = {}
    for repeat in range(repeats):
        for procs, threads in LAYOUTS:
            for lib in (libs if repeat % 2 == 0 else libs[::-1]):
                runs.setdefault((lib, procs, threads), []).append(
                    _run_layout(lib, procs, threads, rounds))
    got = {key: {name: _median_run(value, name) for name in WORKLOADS}
           for key, value in runs.items()}
    lines = ["| workload | processes x threads | Ember samples/s | PyTorch samples/s | "
             "Ember / PyTorch (time) | Ember comm share | PyTorch comm share |",
             "|---|---|---|---|---|---|---|"]
    for name in WORKLOADS:
        for procs, threads in LAYOUTS:
            e = got[("ember", procs, threads)][name]
            t = got.get(("torch", procs, threads), {}).get(name)
            ratio = f"{e['step_s'] / t['step_s']:.2f}x" if t else "-"
            e_share = f"{e['comm_share']:.0%}" if "comm_share" in e else "-"
            t_share = f"{t['comm_share']:.0%}" if t and "comm_share" in t else "-"
            lines.append(f"| {name} | {procs} x {threads} | {e['samples_per_s']:.0f} | "
                         f"{t['samples_per_s']:.0f} | {ratio} | {e_share} | {t_share} |"
                         if t else
                         f"| {name} | {procs} x {threads} | {e['samples_per_s']:.0f} | - | - | "
                         f"{e_share} | - |")
    lines += ["", "Ember, 2 processes: where a step goes (median per step, slowest rank's "
              "round)", "",
              "| workload | step | forward | backward (incl. waits) | optimizer | "
              "in all_reduce calls | waiting for them | step under no_sync (ranks alone: "
              "slowest / fastest) | gradients' all-reduce alone |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name in WORKLOADS:
        e = got[("ember", 2, 1)][name]
        fwd, bwd, opt = e["phases_s"]
        lines.append(f"| {name} | {_ms(e['step_s'])} | {_ms(fwd)} | {_ms(bwd)} | {_ms(opt)} | "
                     f"{_ms(e['allreduce_calls_s'])} | {_ms(e['wait_s'])} "
                     f"({(e['allreduce_calls_s'] + e['wait_s']) / e['step_s']:.0%}) | "
                     f"{_ms(e['nosync_s'])} ({_ms(e['nosync_slowest_rank_s'])} / "
                     f"{_ms(e['nosync_fastest_rank_s'])}) | {_ms(e['transport_s'])} "
                     f"({e['gradient_mb']:.2f} MB) |")
    if "torch" in libs:
        lines += ["", "PyTorch (gloo), 2 processes: the gradients' all-reduce alone: " + ", ".join(
            f"{name.split(' step')[0]} {_ms(got[('torch', 2, 1)][name]['transport_s'])}"
            for name in WORKLOADS)]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worker", choices=["ember", "torch"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.threads, args.distributed, args.rounds, args.out)
        return 0
    from run import blas_info

    try:
        import torch
    except ImportError:
        torch = None
    print(f"BLAS: {blas_info()}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(workloads(torch))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
