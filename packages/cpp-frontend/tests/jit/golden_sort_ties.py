"""Golden file of the tie-order tests (test_sort_ties.cpp; run by ctest before the jit tests, see
tests/CMakeLists.txt):

    python golden_sort_ties.py GOLDEN_DIR

Python Ember orders tied elements as PyTorch's CPU kernels do (ember/ops/sorting.py: sort and
argsort with stable=False, topk, kthvalue, median/nanmedian, mode), and so must the C++
frontend, eager and in the graph runner. Each case below is a tie-heavy input (few distinct
values, NaNs and signed zeros in the floating ones, an all-NaN row) of one dtype, along one
dim; GOLDEN_DIR/sort_ties.safetensors holds ``<case>/input`` and, for each op Python Ember
computes on it, ``<case>/<op>/values`` and ``<case>/<op>/indices``. The header's metadata
says, per case, ``"<dtype> <dim> <expand>"``: the dtype the C++ test converts the stored input
to (int32/int16/int8 are stored as int64, and their values too), the dim, and the length a
(rows, 1) input is expanded to along it (a dim of stride 0; 0: none).

The ops (the C++ test parses these names): sort, sort_desc, sort_stable, sort_stable_desc,
argsort_desc, msort, topk_<k>_<largest|smallest>_<sorted|unsorted>, kthvalue_<k>, median,
nanmedian, mode. An op that Python Ember refuses for a dtype (topk of bool, ...) is left out.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_writer import save_safetensors

import ember
import ember._native

#: how each dtype is stored (the writer knows these) and the ember dtype it is sorted as
DTYPES = {
    "float32": (np.float32, ember.float32), "float64": (np.float64, ember.float64),
    "float16": (np.float16, ember.float16), "int64": (np.int64, ember.int64),
    "int32": (np.int64, ember.int32), "int16": (np.int64, ember.int16),
    "int8": (np.int64, ember.int8), "uint8": (np.uint8, ember.uint8),
    "bool": (np.bool_, ember.bool),
}
FLOATS = ("float32", "float64", "float16")


def tie_heavy(rng, dtype, shape, dim):
    """Few distinct values; NaNs, -0.0 and 0.0 among floats, and one slice of NaNs along dim."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    low = 0 if dtype == "uint8" else -2
    a = rng.integers(low, low + 4, shape).astype(np.float64)
    if dtype in FLOATS:
        a[rng.random(shape) < 0.1] = np.nan
        zeros = a == 0
        a[zeros & (rng.random(shape) < 0.5)] = -0.0
        if a.ndim > 1 and a.shape[0] > 1:  # an all-NaN slice along dim
            index = [0] * a.ndim
            index[dim] = slice(None)
            a[tuple(index)] = np.nan
    return a.astype(DTYPES[dtype][0])


def ops_for(n, dim, big):
    """The ops a case of length n along dim runs (a 33000-element case: the sorts only)."""
    if big:
        return ["sort", "sort_desc"]
    ops = ["sort", "sort_desc", "sort_stable", "sort_stable_desc", "argsort_desc"]
    if dim == 0:
        ops.append("msort")
    ks = [1, max(1, n // 3)] + ([n] if n <= 300 else [])
    if n >= 64:
        ks.append(n // 64)  # std::partial_sort: k * 64 <= n
    for k in sorted(set(ks)):
        for largest in ("largest", "smallest"):
            ops.append(f"topk_{k}_{largest}_sorted")
        ops.append(f"topk_{k}_largest_unsorted")
        ops.append(f"kthvalue_{k}")
    return ops + ["median", "nanmedian", "mode"]


def run(op, x, dim):
    """(values, indices) of `op` on x along dim, as Python Ember computes them."""
    name, *args = op.split("_")
    if name == "sort":
        r = x.sort(dim=dim, descending="desc" in args, stable="stable" in args)
    elif name == "argsort":
        return None, x.argsort(dim=dim, descending=True)
    elif name == "msort":
        return x.msort(), None
    elif name == "topk":
        r = x.topk(int(args[0]), dim, largest=args[1] == "largest", sorted=args[2] == "sorted")
    elif name == "kthvalue":
        r = x.kthvalue(int(args[0]), dim)
    else:
        r = getattr(x, name)(dim)
    return r.values, r.indices


def stored(t, dtype):
    a = t.numpy()
    return a.astype(np.int64) if DTYPES[dtype][0] is np.int64 else a


def main() -> None:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    if not ember._native.status().startswith("loaded"):  # NumPy's stable order is not PyTorch's
        sys.exit("golden_sort_ties.py: Python Ember's native kernels are unavailable: "
                 + ember._native.status())
    rng = np.random.default_rng(20261205)
    cases = []  # (name, dtype, shape, dim, expand)
    for dtype in DTYPES:
        for n in (1, 5, 16, 17, 40, 100, 300, 1000):
            cases.append((f"{dtype}_n{n}", dtype, (4, n), -1, 0))
        cases.append((f"{dtype}_dim0", dtype, (100, 3, 2), 0, 0))
    for dtype in ("int64", "uint8", "int32", "float32"):  # 1-D: PyTorch's radix sort (integers)
        cases.append((f"{dtype}_big", dtype, (33000,), 0, 0))
    cases.append(("float32_expanded", "float32", (3, 1), -1, 50))
    cases.append(("int64_expanded", "int64", (2, 1), 1, 20))

    tensors, metadata = {}, {}
    for name, dtype, shape, dim, expand in cases:
        a = tie_heavy(rng, dtype, shape, dim)
        tensors[f"{name}/input"] = a
        metadata[name] = f"{dtype} {dim} {expand}"
        x = ember.from_numpy(a).to(DTYPES[dtype][1])
        if expand:
            x = x.expand(shape[0], expand)
        for op in ops_for(x.shape[dim], dim, len(shape) == 1 and shape[0] > 30000):
            try:
                values, indices = run(op, x, dim)
            except (RuntimeError, NotImplementedError):
                continue  # refused for this dtype (as PyTorch does)
            if values is not None:
                tensors[f"{name}/{op}/values"] = stored(values, dtype)
            if indices is not None:
                tensors[f"{name}/{op}/indices"] = indices.numpy()
    save_safetensors(os.path.join(out_dir, "sort_ties.safetensors"), tensors, metadata)


if __name__ == "__main__":
    main()
