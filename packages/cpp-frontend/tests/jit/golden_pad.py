"""Golden files of the op table's ``pad`` (test_pad_op.cpp; run by ctest before the jit tests,
see tests/CMakeLists.txt):

    python golden_pad.py GOLDEN_DIR

One traced program, ``pad_modes``: every case of ``CASES`` (F.pad in each mode over 1, 2 and 3
padded dims, batched and unbatched inputs, positive, zero and negative (cropping) pads, the
constant mode's value, float32 / float64 / int64 inputs), written as golden_jit.py writes its
programs (``pad_modes.ember``, ``pad_modes.run<k>.safetensors``), with a second run on other
values of the same shapes. PyTorch 2.13 gives the same results for every case (checked when
these cases were chosen: Python Ember's pad differs from PyTorch in some error cases, none of
which is here).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import golden_jit  # the writer of the first programs: trace_program, write

import ember
import ember.nn.functional as F

# The program's inputs: (name, shape, dtype).
INPUTS = (
    ("x3d", (2, 3, 7), ember.float32),
    ("x4d", (2, 3, 5, 6), ember.float32),
    ("x5d", (1, 2, 4, 5, 6), ember.float32),
    ("x2d", (3, 5), ember.float64),
    ("xint", (2, 4), ember.int64),
)

# (input, pad, mode, value): value None is F.pad's default.
CASES = (
    # constant: any number of dims, negative pads crop, a fill value (an int one for int64)
    ("x3d", (1, 2), "constant", None),
    ("x4d", (-1, 2, 3, -2), "constant", -1.5),
    ("x4d", (1, 1, 0, 2, 1, 0, 2, 1), "constant", 0.5),
    ("x4d", (-2, -1), "constant", None),
    ("x2d", (-5, 0), "constant", None),
    ("xint", (2, 0, -1, 1), "constant", 7),
    # reflect: 1-D to 3-D, negative pads, an unbatched input
    ("x3d", (2, 1), "reflect", None),
    ("x3d", (-1, 3), "reflect", None),
    ("x3d", (6, -6), "reflect", None),
    ("x4d", (2, 1, 1, 2), "reflect", None),
    ("x4d", (-2, 3, 2, -1), "reflect", None),
    ("x4d", (0, 0, 4, 0), "reflect", 0.0),
    ("x5d", (1, 1, 2, 1, 1, 0), "reflect", None),
    ("x5d", (-1, 2, 1, -2, 3, -1), "reflect", None),
    ("x2d", (4, 2), "reflect", None),
    # replicate
    ("x3d", (3, 1), "replicate", None),
    ("x3d", (-2, 4), "replicate", None),
    ("x3d", (9, -3), "replicate", None),
    ("x4d", (2, 5, 1, 3), "replicate", None),
    ("x4d", (-1, 2, 1, -3), "replicate", None),
    ("x5d", (2, 0, 1, 1, -1, 2), "replicate", None),
    ("x2d", (-4, 6), "replicate", None),
    # circular: at most one wrap around; negative pads crop before wrapping
    ("x3d", (2, 1), "circular", None),
    ("x3d", (7, 7), "circular", None),
    ("x3d", (-2, 3), "circular", None),
    ("x3d", (3, -4), "circular", None),
    ("x3d", (-3, -3), "circular", None),
    ("x4d", (-1, 3, 2, 2), "circular", None),
    ("x4d", (-3, -2, 2, -3), "circular", None),
    ("x5d", (1, -2, 2, -1, -1, 3), "circular", None),
    ("x2d", (-1, 4), "circular", 0.0),
)


def pad_modes(x3d, x4d, x5d, x2d, xint):
    inputs = {"x3d": x3d, "x4d": x4d, "x5d": x5d, "x2d": x2d, "xint": xint}
    out = []
    for name, pad, mode, value in CASES:
        kwargs = {} if value is None else {"value": value}
        out.append(F.pad(inputs[name], pad, mode=mode, **kwargs))
    return tuple(out)


def example_inputs():
    """Random values of INPUTS' shapes and dtypes (the int64 one in [-9, 9])."""
    return tuple(ember.randint(-9, 10, shape) if dtype == ember.int64
                 else ember.randn(*shape, dtype=dtype) for _, shape, dtype in INPUTS)


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    ember.manual_seed(31)
    golden_jit.trace_program(out_dir, "pad_modes", pad_modes, example_inputs(), [example_inputs()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
