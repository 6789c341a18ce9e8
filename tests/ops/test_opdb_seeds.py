"""An op's samples are the same whatever drew samples before them (opdb's seed streams)."""

import numpy as np

from ember.ops.opdb import entry, load_all, make


def _arrays(name, n=None):
    out = []
    for k, s in enumerate(entry(name).samples("cpu", "float64")):
        if n is not None and k == n:
            break
        out.append([t.numpy().copy() for t in s.tensors()])
    return out


def _same(a, b):
    return len(a) == len(b) and all(
        len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y))
        for x, y in zip(a, b))


def test_samples_do_not_depend_on_what_ran_before():
    load_all()
    # pinverse draws from linalg_pointwise's stream, sum from reductions', add from make's
    first = {n: _arrays(n) for n in ("pinverse", "sum", "add")}
    for n in ("qr", "mean", "mul", "conv2d", "eig"):
        if entry(n) is not None:
            _arrays(n)
    make((3, 3), "float64")  # a draw from the shared stream outside any op's samples
    for n in ("add", "pinverse", "sum"):
        assert _same(_arrays(n), first[n]), n


def test_interleaved_generators_draw_their_own_samples():
    load_all()
    alone = _arrays("pinverse")
    a = entry("pinverse").samples("cpu", "float64")
    b = entry("svd").samples("cpu", "float64")
    c = entry("pinverse").samples("cpu", "float64")
    mixed = []
    for x, _, z in zip(a, b, c):
        mixed.append([t.numpy().copy() for t in x.tensors()])
        assert _same([[t.numpy() for t in z.tensors()]], [mixed[-1]])
    assert _same(mixed, alone[:len(mixed)])
    assert len(mixed) >= 3


def test_different_ops_draw_different_values():
    load_all()
    a = next(iter(entry("sin").samples("cpu", "float64"))).input.numpy()
    b = next(iter(entry("cos").samples("cpu", "float64"))).input.numpy()
    assert a.shape != b.shape or not np.array_equal(a, b)
