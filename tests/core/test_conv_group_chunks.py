"""Large convolutions in pieces: grouped ones in chunks of groups (vmap over per-example
weights makes hundreds of groups on a batch of one), col2im in chunks of samples, and huge
kernels as a weight gradient. Each gives the whole product's values (which test_conv.py
checks against loop references) and exact gradients."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.ops import _conv_kernels as ck

RNG = np.random.default_rng(7)


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Every grouped product of 4+ groups split into chunks of one or a few groups."""
    monkeypatch.setattr(ck, "_GROUP_CHUNK_BYTES", 64)


@pytest.mark.parametrize("N,G,Cg,Og,size,k,stride,padding,dilation", [
    (1, 8, 3, 5, (9, 9), 3, 1, 1, 1),
    (2, 6, 4, 2, (7, 8), (3, 2), (2, 1), (0, 1), (1, 2)),
    (1, 5, 2, 3, (11,), 3, 2, 2, 1),
    (2, 4, 1, 1, (4, 5, 4), 2, 1, 0, 1),
])
def test_chunked_groups_match_the_whole_product(tiny_chunks, monkeypatch, N, G, Cg, Og, size,
                                                k, stride, padding, dilation):
    n = len(size)
    x = RNG.standard_normal((N, G * Cg) + size)
    ks = (k,) * n if isinstance(k, int) else k
    w = RNG.standard_normal((G * Og, Cg) + ks)
    b = RNG.standard_normal(G * Og)
    assert ck._group_chunk(N, G * Cg, ck.Geom(ks, (1,) * n, (1,) * n, (0,) * n, size, size,
                                              G), 8)  # the chunked path runs
    conv = getattr(ember, f"conv{n}d")
    got = conv(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride=stride,
               padding=padding, dilation=dilation, groups=G)
    xt = ember.tensor(x, requires_grad=True)
    wt = ember.tensor(w, requires_grad=True)
    assert gradcheck(lambda a, c: conv(a, c, None, stride=stride, padding=padding,
                                       dilation=dilation, groups=G), (xt, wt))
    monkeypatch.setattr(ck, "_GROUP_CHUNK_BYTES", 1 << 60)
    want = conv(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride=stride,
                padding=padding, dilation=dilation, groups=G)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_chunked_transposed_conv_matches_unchunked(tiny_chunks, monkeypatch):
    u = ember.tensor(RNG.standard_normal((1, 12, 5, 5)), requires_grad=True)
    w = ember.tensor(RNG.standard_normal((12, 2, 3, 3)), requires_grad=True)
    chunked = ember.conv_transpose2d(u, w, stride=2, padding=1, groups=6)
    assert gradcheck(lambda a, c: ember.conv_transpose2d(a, c, stride=2, padding=1, groups=6),
                     (u, w))
    monkeypatch.setattr(ck, "_GROUP_CHUNK_BYTES", 1 << 60)
    whole = ember.conv_transpose2d(u, w, stride=2, padding=1, groups=6)
    np.testing.assert_allclose(chunked.detach().numpy(), whole.detach().numpy(), rtol=1e-12)


def test_vmap_over_per_example_weights_chunks_the_groups(tiny_chunks):
    """vmap over a stack of weights: one group per example; each example's conv alone."""
    from ember.func import vmap

    x = ember.tensor(RNG.standard_normal((1, 3, 6, 6)))
    ws = ember.tensor(RNG.standard_normal((10, 4, 3, 3, 3)))
    got = vmap(lambda w: ember.conv2d(x, w, padding=1))(ws)
    want = np.stack([ember.conv2d(x, w, padding=1).numpy() for w in ws])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("B,C,O,size,k", [(3, 5, 4, (14, 14), (12, 12)), (1, 4, 2, (70,), (68,)),
                                          (2, 2, 2, (7, 7, 7), (6, 6, 6))])
def test_huge_kernels_run_as_a_weight_gradient(monkeypatch, B, C, O, size, k):
    """conv2d(X.transpose(0, 1), grad.transpose(0, 1)) (a weight gradient written as a
    convolution: kernels almost as large as the input) takes weight_grad_array's path."""
    x = ember.tensor(RNG.standard_normal((B, C) + size), requires_grad=True)
    w = ember.tensor(RNG.standard_normal((O, C) + k), requires_grad=True)
    conv = getattr(ember, f"conv{len(size)}d")
    g = ck.Geom(k, (1,) * len(k), (1,) * len(k), (0,) * len(k), size,
                tuple(s - kk + 1 for s, kk in zip(size, k)), 1)
    assert ck._as_weight_gradient(g)
    got = conv(x, w)
    assert gradcheck(conv, (x, w))
    monkeypatch.setattr(ck, "_as_weight_gradient", lambda g: False)
    want = conv(x, w)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-10)


def test_transposed_conv_chunks_its_columns_by_samples(monkeypatch):
    monkeypatch.setattr(ck, "_CHUNK_BYTES", 64)
    u = ember.tensor(RNG.standard_normal((5, 4, 6, 6)), requires_grad=True)
    w = ember.tensor(RNG.standard_normal((4, 3, 3, 3)), requires_grad=True)
    kw = dict(stride=2, padding=1)  # stride 2: col2im, not the forward form
    chunked = ember.conv_transpose2d(u, w, **kw)
    assert gradcheck(lambda a, c: ember.conv_transpose2d(a, c, **kw), (u, w))
    monkeypatch.setattr(ck, "_CHUNK_BYTES", 1 << 40)
    whole = ember.conv_transpose2d(u, w, **kw)
    np.testing.assert_allclose(chunked.detach().numpy(), whole.detach().numpy(), rtol=1e-12)
