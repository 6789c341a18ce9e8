"""Golden files of programs with scalar values (test_scalars.cpp; run by ctest before the jit
tests, see tests/CMakeLists.txt):

    python golden_scalars.py GOLDEN_DIR

``x.item()`` in ``ember.export`` is a symbolic scalar: a ``Tensor.item`` node whose uses are
scalar arguments of ops (``mul(%x, %item)``) and ``operator.*`` scalar nodes (FORMAT.md
version 2.1, "Scalar values"). Each program below is saved (``<name>.ember``), loaded back
with Python's loader and run on each run's inputs; ``<name>.run<k>.safetensors`` holds the
inputs (``in.<i>``), the loaded program's output tensors (``out.<j>``) and, in its metadata,
the output's ``structure`` (golden_jit.py's, with scalars as ``{"float": "repr"}``,
``{"int": n}``, ``{"bool": b}``). The names go to ``programs_scalars.txt``.

``scalar_ops.json`` is Python's ``operator.<f>`` over a grid of bools, ints and floats: each
``[op, a, b, result]`` with the result encoded as the operands are, or ``{"error": text}``
(``ZeroDivisionError: ...``), ``{"overflow": true}`` (an int beyond int64), ``{"complex":
true}``, for the C++ runner's arithmetic to match exactly.
"""

from __future__ import annotations

import json
import math
import operator
import os
import sys
import warnings

import ember
import ember.export as E
import ember.nn as nn
from ember.safetensors import save_file

PROGRAMS: list = []
INT64 = (-2 ** 63, 2 ** 63 - 1)


def encode(x):
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return {"int": x}
    if isinstance(x, float):
        return {"float": repr(x)}
    raise TypeError(f"not a scalar: {x!r}")


def flatten(out, tensors: list):
    """The output's structure as JSON (scalars encoded), its tensors appended to ``tensors``."""
    if isinstance(out, ember.Tensor):
        tensors.append(out.detach())
        return "T"
    if isinstance(out, (bool, int, float)):
        return encode(out)
    if isinstance(out, (tuple, list)):
        return {"tuple" if isinstance(out, tuple) else "list": [flatten(x, tensors) for x in out]}
    raise TypeError(f"cannot flatten {type(out).__name__}")


def same(a, b) -> bool:
    """Python's eager output and the loaded program's: equal, scalars of the same type."""
    if isinstance(a, ember.Tensor):
        return isinstance(b, ember.Tensor) and a.dtype == b.dtype and ember.allclose(
            a.detach(), b.detach(), equal_nan=True)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or a != a and b != b)


def scalars_of(out) -> list:
    if isinstance(out, (tuple, list)):
        return [s for x in out for s in scalars_of(x)]
    return [] if isinstance(out, ember.Tensor) else [out]


def export_program(out_dir, name, fn, example, dynamic=None, others=()):
    """Export ``fn``, save it, and write each run with the loaded program's outputs (which
    must be eager Python's, and whose scalars must change from run to run)."""
    ep = E.export(fn, example, dynamic_shapes=dynamic)
    path = os.path.join(out_dir, f"{name}.ember")
    E.save(ep, path)
    loaded = E.load(path).module()
    runs = [example, *others]
    seen = []
    for k, args in enumerate(runs):
        with ember.no_grad():
            out = loaded(*args)
            eager = fn(*args)
        if not same(eager, out):
            raise AssertionError(f"{name} run {k}: the loaded program's output {out} is not "
                                 f"eager's {eager}")
        seen.append(repr(scalars_of(out)))
        tensors: list = []
        structure = flatten(out, tensors)
        data = {f"in.{i}": a.detach().contiguous().clone() for i, a in enumerate(args)}
        data.update({f"out.{j}": t.contiguous().clone() for j, t in enumerate(tensors)})
        meta = {"structure": json.dumps(structure), "kwargs": "{}"}
        save_file(data, os.path.join(out_dir, f"{name}.run{k}.safetensors"), metadata=meta)
    if len(set(seen)) != len(seen):
        raise AssertionError(f"{name}: two runs give the same scalars; the test could not see a "
                             "baked value")
    PROGRAMS.append((name, "export", len(runs)))


# -- the programs --------------------------------------------------------------------------------

def chain(x, y, m, d, k):
    """item() of float32/int64/bool/float64/int32 tensors; the scalars as op arguments; chains
    of every operator.* (floor division and modulo of negatives, true division of ints, powers,
    comparisons feeding where and ops); scalars returned."""
    a = x.sum().item()
    n = y.max().item()
    lo = y.min().item()
    b = m.any().item()
    e = d.mean().item()
    j = k.sum().item()
    fq, fq2 = n // -3, lo // 3
    fm, fm2 = lo % 4, n % -3
    td = n / 4
    ffd, fmod = a // -0.75, a % -0.75
    powers = (lo ** 2, n ** -1, e ** 2, b ** 2, abs(a) ** 0.5, 2 ** j)
    bools = (b + b, b * 1.5, +b, -b)
    cmp = a > td
    compares = (cmp, n <= j, fq == fm, e != a, lo >= -2, a < e, b == 1)
    unary = (-lo, abs(lo), abs(a - 100.0), -e)
    mixed = (n + a, j * e, (a - n) / (j + 0.5), (n - lo) * 3 - 1, td + fq2 - fm2)
    tensors = (x * a + n, ember.where(x > td, x, x * fm), x * cmp, ember.where(m, x, fq),
               x.clamp(min=ffd, max=fmod + 10), (d * e).sum() - j, y * fq2 + fm2)
    return tensors, (fq, fq2, fm, fm2, td, ffd, fmod), powers, bools, compares, unary, mixed


def per_batch(x, m):
    """Scalars with a dynamic batch: an item times a symbolic size, a normalization by an
    item, a scalar clamp bound and a returned int."""
    n = m.sum().item()
    k = n * x.shape[0]
    c = n >= 2
    return (ember.where(m, x, n), x * c, ember.full_like(x, k), x.clamp(max=n / 3),
            x / x.abs().max().item(), k)


class Scaled(nn.Module):
    """A module whose forward scales its linear layer's output by scalars of its data."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        peak = h.abs().max().item()
        positive = h.mean().item() > 0
        return ember.where(h > 0, h, h * positive) / (peak + 1.0), peak // 0.5, peak


def quarters(*shape, lo=-12, hi=12):
    """Floats on a grid of 0.25 (sums exact in float32, so C++ and Python agree on floors)."""
    return ember.randint(lo, hi, shape).float() / 4


def programs(out_dir: str) -> None:
    ember.manual_seed(46)
    f64, i32 = ember.float64, ember.int32
    export_program(out_dir, "scalars_chain", chain,
                   (quarters(3, 4), ember.tensor([5, -7, 2, 9, 0]), ember.rand(3, 4) > 0.5,
                    ember.tensor([0.5, -1.25], dtype=f64), ember.tensor([1, 2, 3], dtype=i32)),
                   others=[(quarters(3, 4, lo=-40, hi=3), ember.tensor([-4, -1, -9, -2, -6]),
                            ember.zeros(3, 4) > 1, ember.tensor([-3.5, 1.0], dtype=f64),
                            ember.tensor([-4, 1, 0], dtype=i32)),
                           (quarters(3, 4, lo=0, hi=30), ember.tensor([11, 3, 8, -2, 4]),
                            ember.ones(3, 4) > 0, ember.tensor([2.25, 7.0], dtype=f64),
                            ember.tensor([5, 0, 2], dtype=i32))])
    batch = E.Dim("batch", min=1, max=64)
    export_program(out_dir, "scalars_dynamic", per_batch, (quarters(4, 3), ember.rand(4, 3) > 0.5),
                   ({0: batch}, {0: batch}),
                   others=[(quarters(7, 3), ember.rand(7, 3) > 0.3),
                           (quarters(1, 3) + 1, ember.ones(1, 3) > 0)])
    model = Scaled().eval()
    export_program(out_dir, "scalars_module", model, (ember.randn(5, 4),),
                   others=[(ember.randn(5, 4) * 3,), (ember.randn(5, 4) - 2,)])


# -- operator.* over a grid ------------------------------------------------------------------------

OPERANDS = [False, True, -7, -3, -1, 0, 1, 2, 3, 7, 2 ** 53 + 1, 2 ** 62, -2 ** 63, 2 ** 63 - 1,
            -7.5, -2.0, -0.5, -0.0, 0.0, 0.75, 2.0, 7.5, 9007199254740992.0, 4.611686018427388e18,
            1e308, math.inf, -math.inf, math.nan]
EXPONENTS = [False, True, -2, -1, 0, 1, 2, 3, 7, 63, -1.5, -0.5, 0.0, 0.5, 2.0, 1e3, math.inf,
             -math.inf, math.nan]


def apply(op: str, args: list):
    try:
        r = getattr(operator, op)(*args)
    except ZeroDivisionError as exc:
        return {"error": f"ZeroDivisionError: {exc}"}
    except OverflowError as exc:
        return {"error": f"OverflowError: {exc}"}
    if isinstance(r, complex):
        return {"complex": True}
    if isinstance(r, int) and not isinstance(r, bool) and not INT64[0] <= r <= INT64[1]:
        return {"overflow": True}
    return encode(r)


def scalar_ops(out_dir: str) -> None:
    cases = []
    for op in ("neg", "pos", "abs"):
        cases += [[op, encode(a), None, apply(op, [a])] for a in OPERANDS]
    binary = ("add", "sub", "mul", "truediv", "floordiv", "mod", "eq", "ne", "lt", "le", "gt", "ge")
    for op in binary:
        cases += [[op, encode(a), encode(b), apply(op, [a, b])] for a in OPERANDS for b in OPERANDS]
    cases += [["pow", encode(a), encode(b), apply("pow", [a, b])]
              for a in OPERANDS for b in EXPONENTS
              if not (isinstance(b, int) and b > 7 and isinstance(a, int) and abs(a) > 7)]
    with open(os.path.join(out_dir, "scalar_ops.json"), "w") as f:
        json.dump(cases, f)


def main() -> int:
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    warnings.simplefilter("ignore")
    programs(out_dir)
    scalar_ops(out_dir)
    with open(os.path.join(out_dir, "programs_scalars.txt"), "w") as f:
        for name, kind, runs in PROGRAMS:
            f.write(f"{name} {kind} {runs}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
