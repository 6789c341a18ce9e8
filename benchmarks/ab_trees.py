"""A/B the eager-overhead workloads of two source trees in alternating processes.

    python benchmarks/ab_trees.py OLD_TREE NEW_TREE [--rounds 6]

Each tree is a checkout of this repository (e.g. ``git worktree add /tmp/old HEAD~1``);
every round runs one process per tree, importing ``ember`` from that tree's ``packages/*/src``,
with a pause between processes. Prints best and median per workload and their ratios. Use it
for changes too small for ``nox -s bench``'s in-process noise (issue 10 measured the
thread-local grad mode with it). Run it with the BLAS variables unset, as ``nox -s bench`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKLOADS = r"""
import json, timeit
import numpy as np
import ember
from ember import nn

rng = np.random.default_rng(0)
a = ember.from_numpy(rng.standard_normal((8, 8)).astype(np.float32))
b = ember.from_numpy(rng.standard_normal((8, 8)).astype(np.float32))
x = ember.from_numpy(rng.standard_normal((8, 8)).astype(np.float32)).requires_grad_()
mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).eval()
inp = ember.randn(8, 32)


def chain():
    ((x * b).relu() + b).sum().backward()


def infer():
    with ember.no_grad():
        mlp(inp)


def best(fn, n):
    return min(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6


print(json.dumps({"add 8x8": best(lambda: a + b, 20000),
                  "mul-relu-add-sum + backward 8x8": best(chain, 3000),
                  "MLP 32-64-10 inference (b8, no_grad)": best(infer, 5000),
                  # one call of a public function or method (its front: ember._front)
                  "ember.exp(t)": best(lambda: ember.exp(a), 20000),
                  "t.exp()": best(lambda: a.exp(), 20000),
                  "ember.add(t, u)": best(lambda: ember.add(a, b), 20000),
                  "t.add(u)": best(lambda: a.add(b), 20000),
                  "ember.sum(t, 0)": best(lambda: ember.sum(a, 0), 20000),
                  "t.sum(0)": best(lambda: a.sum(0), 20000),
                  "ember.relu(t)": best(lambda: ember.relu(a), 20000),
                  "ember.matmul(t, u)": best(lambda: ember.matmul(a, b), 20000),
                  "t.softmax(-1)": best(lambda: a.softmax(-1), 10000)}))
"""


def run_tree(tree: str) -> dict:
    src = [os.path.join(tree, "packages", p, "src") for p in ("core", "nn")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(src))
    out = subprocess.run([sys.executable, "-c", WORKLOADS], env=env, check=True,
                         capture_output=True, text=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def alternate(a, b, rounds: int) -> tuple[list, list]:
    """``a()`` and ``b()`` (each runs one process and returns ``{workload: time}``) once per
    round, turn by turn with a pause between processes; the two lists of results."""
    runs: tuple[list, list] = ([], [])
    for _ in range(rounds):
        for side, run in zip(runs, (a, b)):
            side.append(run())
            time.sleep(1.0)
    return runs


def print_table(a_runs: list, b_runs: list, a_label: str, b_label: str) -> None:
    """A markdown table of the best per workload of each side and B / A (best, median)."""
    print(f"| workload | {a_label} | {b_label} | B / A best, median |\n|---|---|---|---|")
    for name in a_runs[0]:
        a = [r[name] for r in a_runs]
        b = [r[name] for r in b_runs]
        print(f"| {name} | {min(a):.3f} | {min(b):.3f} | {min(b) / min(a):.2f}x, "
              f"{statistics.median(b) / statistics.median(a):.2f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    old, new = alternate(lambda: run_tree(args.old), lambda: run_tree(args.new), args.rounds)
    print_table(old, new, "old (us)", "new (us)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
