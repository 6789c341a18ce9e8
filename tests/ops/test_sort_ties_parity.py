"""sort/argsort with ``stable=False`` order ties as PyTorch's CPU kernel (libstdc++'s
``std::sort`` of (key, index) pairs: introsort, unstable above 16 elements), which Ember's
native kernel reproduces. Pinned index vectors (from PyTorch 2.13) run without torch; the
random comparisons run against torch when it is importable.

The tensors are on the CPU device explicitly: the tie order is the CPU kernel's (PyTorch's
CUDA sort orders ties otherwise, and Ember on CuPy or the strict device keeps the stable
order, as it does where the native library is unavailable: ``test_fallback_is_stable``)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _native

pytestmark = pytest.mark.skipif(_native.library() is None,
                                reason=f"native kernels unavailable: {_native.status()}")

# 40 zeros: torch.zeros(40).sort() (either direction)
ZEROS_40 = [30, 21, 22, 23, 24, 25, 26, 27, 28, 29, 20, 31, 32, 33, 34, 35, 36, 37, 38, 39,
            10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 11, 12, 13, 14, 15, 16, 17, 18, 19]
# torch.tensor([2, 0, 1, 0, 2, 1] * 6).argsort() / .argsort(descending=True)
TRIPLES = [2, 0, 1, 0, 2, 1] * 6
TRIPLES_ASC = [9, 19, 15, 21, 13, 25, 27, 7, 31, 3, 33, 1, 29, 35, 26, 23, 32, 20, 17, 2, 5, 8,
               11, 14, 12, 24, 22, 10, 28, 6, 30, 16, 4, 18, 34, 0]
TRIPLES_DESC = [0, 18, 16, 22, 12, 24, 10, 28, 6, 30, 4, 34, 29, 26, 23, 32, 20, 35, 2, 14, 11,
                5, 17, 8, 27, 1, 33, 3, 31, 7, 9, 25, 13, 21, 15, 19]
# torch.tensor([nan, 1., nan, 1., 0.] * 4).sort(): NaN last ascending, first descending
NANS = [np.nan, 1.0, np.nan, 1.0, 0.0] * 4
NANS_ASC = [19, 4, 14, 9, 1, 18, 16, 13, 11, 8, 6, 3, 10, 7, 12, 5, 15, 17, 2, 0]
NANS_DESC = [0, 2, 17, 5, 7, 15, 10, 12, 1, 18, 16, 13, 11, 8, 6, 3, 9, 14, 4, 19]

DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16",
          "bfloat16"]


def cpu(values, dtype):
    return ember.tensor(values, dtype=getattr(ember, dtype), device="cpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinned_equal_keys(dtype):
    x = cpu([0] * 40, dtype)
    assert x.sort().indices.tolist() == ZEROS_40
    assert x.sort(descending=True).indices.tolist() == ZEROS_40
    assert x.argsort().tolist() == ZEROS_40
    assert x.sort(stable=True).indices.tolist() == list(range(40))


def test_pinned_ties_and_nan():
    x = cpu(TRIPLES, "int64")
    assert x.argsort().tolist() == TRIPLES_ASC
    assert ember.argsort(x, descending=True).tolist() == TRIPLES_DESC
    assert x.view(2, 18).t().contiguous().t().reshape(36).argsort().tolist() == TRIPLES_ASC
    y = cpu(NANS, "float32")
    assert y.sort().indices.tolist() == NANS_ASC
    assert y.sort(descending=True).indices.tolist() == NANS_DESC


def test_pinned_along_dims_and_layout():
    x = cpu([[0] * 40] * 3, "float32")
    assert x.sort(dim=1).indices.tolist() == [ZEROS_40] * 3
    xt = x.t()  # (40, 3): sorted along dim 0, non-contiguous
    out = xt.sort(dim=0)
    assert out.indices.t().tolist() == [ZEROS_40] * 3
    assert out.indices.stride() == xt.stride() and out.values.stride() == xt.stride()
    assert ember.msort(xt).tolist() == xt.tolist()


def test_stable_where_pytorch_is():
    # <= 16 elements: one insertion sort; a dim of stride 0: the identity
    assert cpu([0] * 16, "int64").argsort().tolist() == list(range(16))
    assert cpu([[0.0]], "float32").expand(2, 40).sort(descending=True).indices[0].tolist() == \
        list(range(40))
    # 1-D integers of >= 32768 elements ascending: FBGEMM's radix sort (stable)
    assert cpu([1] * 32768, "int64").argsort()[:4].tolist() == [0, 1, 2, 3]
    assert cpu([1] * 32768, "int64").argsort(descending=True)[:2].tolist() == [21840, 21855]
    assert cpu([[1] * 32768], "int64").argsort()[0, :2].tolist() == [21840, 21855]


def test_fallback_is_stable(monkeypatch):
    monkeypatch.setenv("EMBER_NATIVE", "0")
    x = cpu(TRIPLES, "int64")
    assert x.argsort().tolist() == np.argsort(TRIPLES, kind="stable").tolist()
    assert x.sort(descending=True).values.tolist() == sorted(TRIPLES, reverse=True)


def test_pack_padded_equal_lengths():
    from ember.nn.utils.rnn import pack_padded_sequence

    x = ember.zeros(40, 3, 2, device="cpu")
    packed = pack_padded_sequence(x, ember.tensor([3] * 40, device="cpu"), batch_first=True,
                                  enforce_sorted=False)
    assert packed.sorted_indices.tolist() == ZEROS_40


def _torch_dtype(torch, name):
    return getattr(torch, name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_ties_match_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(DTYPES.index(dtype))
    for n in (17, 18, 33, 100, 257, 1000, 4999):
        for high in (2, 3, 10):
            a = rng.integers(0, high, size=(3, n))
            t = torch.from_numpy(a).to(_torch_dtype(torch, dtype))
            if t.is_floating_point():
                t[torch.from_numpy(rng.random(a.shape) < 0.1)] = float("nan")
            e = ember.tensor(t.float().numpy() if dtype == "bfloat16" else t.numpy(),
                             dtype=getattr(ember, dtype), device="cpu")
            for descending in (False, True):
                for dim in (1, 0):
                    want = torch.sort(t, dim=dim, descending=descending)
                    got = ember.sort(e, dim=dim, descending=descending)
                    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
                    np.testing.assert_array_equal(got.values.float().numpy(),
                                                  want.values.float().numpy())
                np.testing.assert_array_equal(
                    ember.argsort(e.t(), dim=1, descending=descending).numpy(),
                    torch.argsort(t.t(), dim=1, descending=descending).numpy())


def test_heapsort_past_depth_limit_matches_torch():
    """An input built by McIlroy's adversary (against this median-of-3 introsort) drives it
    past its depth limit into heapsort."""
    torch = pytest.importorskip("torch")
    n = 2000
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

    k = list(range(n))

    def introsort(first, last, depth):
        while last - first > 16 and depth:
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
            introsort(lo, last, depth)
            last = lo

    introsort(0, n, 2 * (n.bit_length() - 1))
    a = np.array(val, dtype=np.int64)[None] // 2  # ties too
    for descending in (False, True):
        b = -a if descending else a
        np.testing.assert_array_equal(
            ember.tensor(b, device="cpu").sort(descending=descending).indices.numpy(),
            torch.from_numpy(b).sort(descending=descending).indices.numpy())
