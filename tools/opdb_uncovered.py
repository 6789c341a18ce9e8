"""Rewrite ``tests/ops/uncovered.py``: the registered ops without ``ember.ops.opdb`` samples.

Run after adding samples (the list must only shrink: review the diff)::

    python tools/opdb_uncovered.py
"""

from __future__ import annotations

import pathlib
import textwrap

import ember  # noqa: F401
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

PATH = pathlib.Path(__file__).resolve().parents[1] / "tests" / "ops" / "uncovered.py"


def main() -> None:
    entries = load_all()
    names = sorted(n for n in OPS if n not in entries)
    body = textwrap.fill(", ".join(repr(n) for n in names), 94, initial_indent="    ",
                         subsequent_indent="    ", break_on_hyphens=False)
    head = PATH.read_text().split("UNCOVERED = frozenset({")[0]
    PATH.write_text(head + "UNCOVERED = frozenset({\n" + body + "\n})\n")
    print(f"{len(names)} of {len(OPS)} registered ops have no samples yet")


if __name__ == "__main__":
    main()
