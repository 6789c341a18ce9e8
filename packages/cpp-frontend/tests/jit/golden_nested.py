"""Golden files of programs whose nodes have nested results (test_nested_outputs.cpp; run by
ctest before the jit tests, see tests/CMakeLists.txt):

    python golden_nested.py GOLDEN_DIR

``histogramdd`` returns ``(hist, (edges, ...))``: its captured node's result is "nested"
(FORMAT.md version 2), one output per leaf. Each program below is written as golden_jit.py
writes its programs (``<name>.ember``, ``<name>.run<k>.safetensors``); the names go to
``programs_nested.txt``.
"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import golden_jit  # the first programs' writer: trace_program, export_program, write_program_list

import ember
import ember.export


def histograms(x, w, a, b, y):
    """histogramdd with bin counts (over the data's range and a given range), given edges,
    weights, density, a 3-D input, a single dimension, and its leaves used by later ops."""
    h, (e0, e1) = ember.histogramdd(x, [3, 4])
    centers = (e0[1:] + e0[:-1]) / 2
    return (ember.histogramdd(x, 5),
            ember.histogramdd(x, [2, 3], range=[-1.0, 1.0, -2.0, 0.5], weight=w),
            ember.histogramdd(x, [a, b], weight=w, density=True),
            ember.histogramdd(y, [2, 2, 3], density=True),
            ember.histogramdd(x[:, :1], 6),
            (h * centers[:, None]).sum(0), e1.diff())


def no_dimensions(z):
    """A histogram over zero dimensions: a 0-d hist and an empty tuple of edges."""
    return ember.histogramdd(z, 3)


def per_batch(x):
    """An export program over a dynamic number of points."""
    hist, edges = ember.histogramdd(x, [4, 3], range=[-2.0, 2.0, -1.5, 1.5])
    return hist / x.shape[0], edges


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    golden_jit.PROGRAMS.clear()
    warnings.simplefilter("ignore")

    ember.manual_seed(30)
    golden_jit.trace_program(
        out_dir, "nested_histograms", histograms,
        (ember.randn(40, 2), ember.rand(40), ember.tensor([-2.0, -0.5, 0.0, 0.7, 2.5]),
         ember.tensor([-1.0, 0.0, 1.0]), ember.randn(2, 10, 3)),
        [(ember.randn(40, 2) * 3, ember.rand(40), ember.tensor([-1.0, 1.0]),
          ember.tensor([-3.0, -1.0, 1.0, 3.0]), ember.randn(2, 10, 3) * 2)])
    golden_jit.trace_program(out_dir, "nested_no_dimensions", no_dimensions, (ember.zeros(4, 0),))
    batch = ember.export.Dim("batch", min=1, max=512)
    golden_jit.export_program(out_dir, "nested_export", per_batch, (ember.randn(30, 2),),
                              ({0: batch},), [(ember.randn(7, 2),), (ember.randn(300, 2),)])
    golden_jit.write_program_list(out_dir, "programs_nested.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
