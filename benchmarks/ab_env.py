"""A/B an environment setting over bench_nn's training-step workloads, in alternating processes.

    python benchmarks/ab_env.py EMBER_BLAS_POOL=0 EMBER_BLAS_POOL=1 [--rounds 4] [--only LeNet]

Each side is a list of ``NAME=VALUE`` settings separated by commas (``A=1,B=2``); every round
runs one process per side (Ember alone: no PyTorch in the process, so no second thread pool)
with a pause between processes, and the table gives the best and the median per workload and
their ratios (B / A). Use it for a switch that changes how Ember uses the machine, such as
``EMBER_BLAS_POOL`` or ``EMBER_NATIVE``. Run it with the BLAS variables unset, as
``nox -s bench`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from ab_trees import alternate, print_table

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, sys
sys.path.insert(0, HERE)
import bench_nn
only = ONLY
print(json.dumps({r.name: r.ember_s * 1e3 for r in bench_nn.workloads(None)
                  if not only or any(o in r.name for o in only)}))
"""


def _settings(text: str) -> dict:
    out = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"not NAME=VALUE: {item!r}")
        out[name] = value
    return out


def run_side(settings: dict, only: list[str]) -> dict:
    env = dict(os.environ, **settings)
    code = CHILD.replace("HERE", repr(HERE)).replace("ONLY", repr(only))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--only", action="append", default=[],
                        help="keep the workloads whose name contains this (repeatable)")
    args = parser.parse_args(argv)
    a, b = _settings(args.a), _settings(args.b)
    runs = alternate(lambda: run_side(a, args.only), lambda: run_side(b, args.only),
                     args.rounds)
    print_table(*runs, f"A: {args.a} (ms)", f"B: {args.b} (ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
