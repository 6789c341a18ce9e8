"""topk, kthvalue, mode and nanmedian pick tied elements as PyTorch's CPU kernels do (topk:
libstdc++'s ``std::partial_sort`` or ``std::nth_element`` + ``std::sort``; kthvalue: TH's
quickselect; mode: ``std::sort`` under a plain ``<``, then the last index of the winning run;
nanmedian of an all-NaN row: ``std::nth_element`` over equal elements), which Ember's native
kernels reproduce. Pinned indices (from PyTorch 2.13) run without torch; the random
comparisons run against torch when it is importable.

The tensors are on the CPU device explicitly: the tie order is the CPU kernels' (Ember on CuPy
or the strict device, or without the native library, keeps the stable order:
``test_fallback_is_stable``)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _native

pytestmark = pytest.mark.skipif(_native.library() is None,
                                reason=f"native kernels unavailable: {_native.status()}")

TRIPLES = [2, 0, 1, 0, 2, 1] * 6
NANS = [np.nan, 1.0, np.nan, 1.0, 0.0] * 4
DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "float16",
          "bfloat16"]


def cpu(values, dtype="float32"):
    return ember.tensor(values, dtype=getattr(ember, dtype), device="cpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinned_equal_keys(dtype):
    z = cpu([0] * 40, dtype)
    assert z.topk(3).indices.tolist() == [28, 26, 27]  # nth_element, then sort of the first 2
    assert z.topk(3, largest=False).indices.tolist() == [28, 26, 27]
    assert z.topk(5, sorted=False).indices.tolist() == [28, 26, 27, 25, 29]
    assert cpu([0] * 200, dtype).topk(3).indices.tolist() == [0, 1, 2]  # partial_sort
    assert [z.kthvalue(k).indices.item() for k in (1, 20, 40)] == [25, 0, 39]
    assert z.mode().indices.item() == 19


def test_pinned_ties_and_nan():
    t = cpu(TRIPLES, "int64")
    assert t.topk(4).indices.tolist() == [10, 24, 12, 28]
    assert t.topk(4, largest=False).indices.tolist() == [25, 13, 21, 27]
    assert [t.kthvalue(13).indices.item(), t.kthvalue(14).indices.item()] == [20, 17]
    assert [r.item() for r in t.mode()] == [0, 1]
    assert cpu([3, 1, 3, 1], "int64").mode().indices.item() == 3  # <= 16: last occurrence
    n = cpu(NANS)
    assert n.topk(3).indices.tolist() == [10, 7, 15]  # NaN largest
    assert n.topk(3, largest=False).indices.tolist() == [4, 9, 14]
    assert n.kthvalue(19).indices.item() == 12
    # mode's plain `<` leaves NaNs unordered: here a NaN's run wins, not 1.0 (8 of them)
    values, indices = n.mode()
    assert np.isnan(values.item()) and indices.item() == 10
    assert [ember.nanmedian(cpu([np.nan] * k), 0).indices.item() for k in (5, 40)] == [2, 28]


def test_pinned_along_dims():
    z = cpu([[0] * 40] * 3)
    assert z.t().topk(3, dim=0).indices.t().tolist() == [[28, 26, 27]] * 3
    assert z.t().kthvalue(1, dim=0, keepdim=True).indices.tolist() == [[25] * 3]
    assert ember.mode(z.t(), 0).indices.tolist() == [19] * 3
    assert ember.topk(cpu(0.0), 1).indices.item() == 0


def test_fallback_is_stable(monkeypatch):
    monkeypatch.setenv("EMBER_NATIVE", "0")
    t = cpu(TRIPLES, "int64")
    order = np.argsort(-np.array(TRIPLES), kind="stable")
    assert t.topk(4).indices.tolist() == order[:4].tolist()
    assert t.kthvalue(13).indices.item() == np.argsort(TRIPLES, kind="stable")[12]
    assert [r.item() for r in t.mode()] == [0, 33]  # the last occurrence


def test_gradient_goes_to_the_picked_index():
    x = cpu([0.0] * 40).requires_grad_()
    x.topk(3).values.sum().backward()
    assert np.flatnonzero(x.grad.numpy()).tolist() == [26, 27, 28]


def _torch_pair(torch, rng, dtype, shape, high):
    t = torch.from_numpy(rng.integers(0, high, size=shape)).to(getattr(torch, dtype))
    if t.is_floating_point():
        t[torch.from_numpy(rng.random(shape) < 0.1)] = float("nan")
    e = ember.tensor(t.float().numpy() if dtype == "bfloat16" else t.numpy(),
                     dtype=getattr(ember, dtype), device="cpu")
    return t, e


def _same(got, want):
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.float().numpy(), want.values.float().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_ties_match_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(DTYPES.index(dtype))
    for n in (3, 17, 64, 65, 130, 1000):
        for high in (2, 10):
            t, e = _torch_pair(torch, rng, dtype, (3, n), high)
            for k in sorted({1, 2, n // 64 or 1, n // 64 + 1, n // 2, n}):
                for largest in (True, False):
                    for ordered in (True, False):
                        _same(ember.topk(e, k, 1, largest, ordered),
                              torch.topk(t, k, 1, largest, ordered))
                _same(ember.kthvalue(e, k, 1), torch.kthvalue(t, k, 1))
            _same(ember.topk(e.t(), 2, 0), torch.topk(t.t(), 2, 0))
            _same(ember.kthvalue(e.t(), 3, 0), torch.kthvalue(t.t(), 3, 0))
            _same(ember.mode(e, 1), torch.mode(t, 1))
            _same(ember.mode(e.t(), 0, keepdim=True), torch.mode(t.t(), 0, keepdim=True))
            if dtype not in ("float16", "bfloat16"):  # PyTorch's median has no kernel there
                _same(ember.median(e, 1), torch.median(t, 1))
                _same(ember.nanmedian(e, 1), torch.nanmedian(t, 1))


def test_random_bool_mode_and_all_nan_rows_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(99)
    a = rng.random((4, 300)) < 0.5
    _same(ember.mode(ember.tensor(a, device="cpu"), 1), torch.mode(torch.from_numpy(a), 1))
    for n in (1, 2, 3, 4, 17, 100, 1001):
        nan = torch.full((2, n), float("nan"))
        _same(ember.nanmedian(ember.tensor(nan.numpy(), device="cpu"), 1),
              torch.nanmedian(nan, 1))


def _introselect_adversary(n, nth):
    """Values that drive libstdc++'s introselect (median of 3) at ``nth`` past its depth
    limit into heap_select: McIlroy's adversary, solidifying values as they are compared."""
    gas, val, state = n - 1, [n - 1] * n, {"solid": 0, "cand": -1}

    def lt(x, y):
        if val[x] == gas and val[y] == gas:
            z = x if x == state["cand"] else y
            val[z] = state["solid"]
            state["solid"] += 1
        if val[x] == gas:
            state["cand"] = x
        elif val[y] == gas:
            state["cand"] = y
        return val[x] < val[y]

    k, first, last, depth = list(range(n)), 0, n, 2 * (n.bit_length() - 1)
    while last - first > 3 and depth:
        depth -= 1
        a, b, c = first + 1, first + (last - first) // 2, last - 1
        if lt(k[a], k[b]):
            m = b if lt(k[b], k[c]) else c if lt(k[a], k[c]) else a
        else:
            m = a if lt(k[a], k[c]) else c if lt(k[b], k[c]) else b
        k[first], k[m] = k[m], k[first]
        lo, hi, pivot = first + 1, last, k[first]
        while True:
            while lt(k[lo], pivot):
                lo += 1
            hi -= 1
            while lt(pivot, k[hi]):
                hi -= 1
            if not lo < hi:
                break
            k[lo], k[hi] = k[hi], k[lo]
            lo += 1
        if lo <= nth:
            first = lo
        else:
            last = lo
    return np.array(val, dtype=np.int64)


def test_nth_element_past_depth_limit_matches_torch():
    torch = pytest.importorskip("torch")
    n, k = 2000, 1000  # k * 64 > n: nth_element at k - 1, then sort
    a = _introselect_adversary(n, k - 1)[None] // 3  # ties too
    for largest in (False, True):
        b = -a if largest else a
        _same(ember.topk(ember.tensor(b, device="cpu"), k, largest=largest),
              torch.topk(torch.from_numpy(b), k, largest=largest))
