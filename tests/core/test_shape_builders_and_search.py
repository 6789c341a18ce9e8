"""repeat_interleave, diff, unfold, diagflat, fill_diagonal_, adjoint, narrow_copy, small
Tensor predicates/dunders, tril/triu_indices, meshgrid, cartesian_prod, combinations,
block_diag, searchsorted, bucketize, isin: NumPy references, float64 gradcheck, views, errors,
and parity with PyTorch where it is installed."""

import itertools
import warnings

import numpy as np
import pytest
from testutils import randn64

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


# -- NumPy references ------------------------------------------------------------------------

def test_repeat_interleave_numpy():
    a = RNG.standard_normal((3, 4))
    t = ember.tensor(a)
    np.testing.assert_array_equal(t.repeat_interleave(2).numpy(), np.repeat(a, 2))
    np.testing.assert_array_equal(ember.repeat_interleave(t, 3, dim=1).numpy(),
                                  np.repeat(a, 3, axis=1))
    r = ember.tensor([1, 0, 2])
    np.testing.assert_array_equal(t.repeat_interleave(r, dim=0).numpy(),
                                  np.repeat(a, [1, 0, 2], axis=0))
    np.testing.assert_array_equal(t.repeat_interleave(r, dim=0, output_size=3).numpy(),
                                  np.repeat(a, [1, 0, 2], axis=0))
    np.testing.assert_array_equal(ember.repeat_interleave(r).numpy(), [0, 2, 2])
    assert ember.tensor(5.0).repeat_interleave(3).tolist() == [5.0, 5.0, 5.0]
    with pytest.raises(RuntimeError, match="same size as input along dim"):
        t.repeat_interleave(ember.tensor([1, 2]), dim=0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        t.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        t.repeat_interleave(ember.tensor([1, -1, 0]), dim=0)
    # PyTorch's words: the indices form takes a 1-D count vector only, and counts are
    # int32/int64 (its kernel has no other case)
    with pytest.raises(RuntimeError, match="repeat_interleave only accept 1D vector as repeat"):
        ember.repeat_interleave(ember.tensor(2))
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
        t.repeat_interleave(ember.tensor([[2]]))
    with pytest.raises(NotImplementedError,
                       match="\"repeat_interleave_cpu\" not implemented for 'Float'"):
        ember.repeat_interleave(ember.tensor([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Byte'"):
        t.repeat_interleave(ember.tensor([1, 0, 2], dtype=ember.uint8), dim=0)
    assert ember.repeat_interleave(ember.tensor([2, 1], dtype=ember.int32)).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match="allocated size does not match"):
        t.repeat_interleave(r, dim=0, output_size=4)


def test_diff_numpy():
    a = RNG.standard_normal((3, 6))
    t = ember.tensor(a)
    np.testing.assert_allclose(t.diff().numpy(), np.diff(a))
    np.testing.assert_allclose(ember.diff(t, n=2, dim=0).numpy(), np.diff(a, 2, axis=0))
    p, q = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 1))
    np.testing.assert_allclose(
        ember.diff(t, 3, -1, ember.tensor(p), ember.tensor(q)).numpy(),
        np.diff(a, 3, axis=-1, prepend=p, append=q))
    b = np.array([True, False, False, True])
    np.testing.assert_array_equal(ember.tensor(b).diff().numpy(), np.diff(b))
    assert ember.tensor([1, 2]).diff(n=5).shape == (0,)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        ember.tensor(1.0).diff()
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        t.diff(n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        t.diff(prepend=ember.zeros(3))


def _np_unfold(a, dim, size, step):
    n = a.shape[dim]
    wins = [np.take(a, range(i, i + size), axis=dim) for i in range(0, n - size + 1, step)]
    return np.moveaxis(np.stack(wins, axis=dim), dim + 1, -1)


@pytest.mark.parametrize("shape,dim,size,step", [((7,), 0, 3, 2), ((3, 8), 1, 4, 1),
                                                 ((5, 4, 2), 0, 2, 3), ((4, 6), -1, 6, 1),
                                                 ((4, 5), 0, 0, 1)])
def test_unfold_numpy_and_view(shape, dim, size, step):
    a = RNG.standard_normal(shape)
    t = ember.tensor(a)
    u = t.unfold(dim, size, step)
    np.testing.assert_array_equal(u.numpy(), _np_unfold(a, dim % len(shape), size, step))
    assert u._base is t
    if u.numel():
        t.add_(1.0)
        np.testing.assert_array_equal(u.numpy(), _np_unfold(a + 1, dim % len(shape), size, step))


def test_unfold_errors_and_0d():
    t = ember.arange(5.0)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 5"):
        t.unfold(0, 6, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        t.unfold(0, 2, 0)
    assert ember.tensor(3.0).unfold(0, 1, 1).tolist() == [3.0]


def test_unfold_inplace_through_view_autograd():
    x = randn64(6, rng=RNG)
    y = x * 1.0
    y.unfold(0, 2, 2).mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(6, 2.0))


def test_diagflat_fill_diagonal_numpy():
    a = RNG.standard_normal((2, 3))
    for off in (0, 2, -1):
        np.testing.assert_array_equal(ember.diagflat(ember.tensor(a), off).numpy(),
                                      np.diagflat(a, off))
    for shape, wrap in [((3, 5), False), ((7, 3), False), ((7, 3), True), ((3, 3, 3), False)]:
        ref = np.zeros(shape)
        np.fill_diagonal(ref, 4.0, wrap=wrap)
        t = ember.zeros(*shape)
        assert t.fill_diagonal_(4.0, wrap=wrap) is t
        np.testing.assert_array_equal(t.numpy(), ref)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        ember.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 2, 3).fill_diagonal_(1)


def test_adjoint_narrow_copy():
    t = ember.tensor(RNG.standard_normal((2, 3, 4)))
    adj = t.adjoint()
    np.testing.assert_array_equal(adj.numpy(), np.swapaxes(t.numpy(), -1, -2))
    assert adj._base is t
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):
        ember.zeros(3).adjoint()
    n = t.narrow_copy(2, 1, 2)
    np.testing.assert_array_equal(n.numpy(), t.numpy()[:, :, 1:3])
    assert getattr(n, "_base", None) is None
    t.add_(1.0)
    np.testing.assert_array_equal(n.numpy() + 1, t.numpy()[:, :, 1:3])


def test_small_methods():
    t = ember.arange(6.0).reshape(2, 3)
    e = t.new_empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.dtype == ember.float32 and e.stride() == (1, 2)
    r = ember.zeros(5)
    assert r.resize_as_(t) is r and r.shape == (2, 3)
    assert ember.tensor([1, 2]).type_as(t).dtype == ember.float32
    assert t.is_same_size(ember.zeros(2, 3)) and not t.is_same_size(ember.zeros(3, 2))
    assert t.is_inference() is False and ember.is_inference(t) is False
    assert ember.is_same_size(t, ember.zeros(2, 3))
    assert ember.resize_as_(ember.zeros(1), t).shape == (2, 3)
    assert ember.tensor([2.0]).is_nonzero() is True
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        t.is_nonzero()
    assert 4.0 in t and 7 not in t and ember.tensor(1.0) in t
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in t  # noqa: B015
    np.testing.assert_array_equal(reversed(t).numpy(), t.numpy()[::-1])
    s = ember.tensor(3.0)
    assert reversed(s) is s


def test_index_builders_numpy():
    for row, col, off in [(3, 4, 0), (4, 3, -1), (3, 3, 2), (0, 3, 0)]:
        np.testing.assert_array_equal(ember.tril_indices(row, col, off).numpy(),
                                      np.stack(np.tril_indices(row, off, col)))
        np.testing.assert_array_equal(ember.triu_indices(row, col, off).numpy(),
                                      np.stack(np.triu_indices(row, off, col)))
    assert ember.tril_indices(3, 3, dtype=ember.int32).dtype == ember.int32
    a, b, c = ember.arange(2), ember.arange(3), ember.arange(4)
    for indexing in ("ij", "xy"):
        for g, ref in zip(ember.meshgrid(a, b, c, indexing=indexing),
                          np.meshgrid(np.arange(2), np.arange(3), np.arange(4),
                                      indexing=indexing)):
            np.testing.assert_array_equal(g.numpy(), ref)
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(a, b)
    g = ember.meshgrid([a, b], indexing="ij")[0]
    assert g._base is a
    np.testing.assert_array_equal(
        ember.cartesian_prod(a, b).numpy(), np.array(list(itertools.product(range(2), range(3)))))
    assert ember.cartesian_prod(a) is a
    x = ember.tensor([10, 20, 30, 40])
    for r, rep in [(2, False), (3, True), (5, False)]:
        gen = itertools.combinations_with_replacement if rep else itertools.combinations
        ref = np.array(list(gen([10, 20, 30, 40], r)), dtype=np.int64).reshape(-1, r)
        np.testing.assert_array_equal(ember.combinations(x, r, rep).numpy(), ref)
    assert ember.combinations(x, 0).shape == (0,)
    blocks = [np.array(1.0), np.arange(6.0).reshape(2, 3), np.array([7.0, 8.0])]
    out = ember.block_diag(*[ember.tensor(b) for b in blocks]).numpy()
    ref = np.zeros((4, 6))
    ref[0, 0] = 1.0
    ref[1:3, 1:4] = blocks[1]
    ref[3, 4:6] = blocks[2]
    np.testing.assert_array_equal(out, ref)
    assert ember.block_diag().shape == (1, 0)
    assert ember.block_diag(ember.tensor([[1]]), ember.tensor([[1.5]])).dtype == ember.float32
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        ember.block_diag(ember.zeros(1, 1, 1))


def test_search_numpy():
    seq = np.array([1.0, 3.0, 3.0, 5.0, 9.0])
    v = RNG.integers(0, 11, (3, 4)).astype(np.float64)
    for right in (False, True):
        side = "right" if right else "left"
        np.testing.assert_array_equal(
            ember.searchsorted(ember.tensor(seq), ember.tensor(v), right=right).numpy(),
            np.searchsorted(seq, v, side=side))
        np.testing.assert_array_equal(
            ember.searchsorted(ember.tensor(seq), ember.tensor(v), side=side).numpy(),
            np.searchsorted(seq, v, side=side))
        np.testing.assert_array_equal(
            ember.bucketize(ember.tensor(v), ember.tensor(seq), right=right).numpy(),
            np.searchsorted(seq, v, side=side))
    s2 = np.sort(RNG.standard_normal((3, 5)), axis=1)
    v2 = RNG.standard_normal((3, 2))
    res = ember.searchsorted(ember.tensor(s2), ember.tensor(v2))
    assert res.dtype == ember.int64
    np.testing.assert_array_equal(res.numpy(),
                                  [np.searchsorted(s2[i], v2[i]) for i in range(3)])
    unsorted = np.array([5.0, 1.0, 3.0])
    np.testing.assert_array_equal(
        ember.searchsorted(ember.tensor(unsorted), ember.tensor([2.0, 4.0]),
                           sorter=ember.tensor(np.argsort(unsorted))).numpy(), [1, 2])
    assert ember.searchsorted(ember.tensor(seq), 4.0, out_int32=True).dtype == ember.int32
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(ember.tensor(seq), ember.tensor(v), right=True, side="left")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        ember.searchsorted(ember.tensor(s2), ember.tensor(v[:2]))
    a = RNG.integers(0, 6, (2, 5))
    b = np.array([1, 3, 4])
    np.testing.assert_array_equal(ember.isin(ember.tensor(a), ember.tensor(b)).numpy(),
                                  np.isin(a, b))
    np.testing.assert_array_equal(
        ember.isin(ember.tensor(a), ember.tensor(b), invert=True).numpy(),
        np.isin(a, b, invert=True))
    np.testing.assert_array_equal(ember.isin(ember.tensor(a), 3).numpy(), a == 3)
    np.testing.assert_array_equal(ember.isin(3, ember.tensor(b)).numpy(), True)


# -- gradcheck -------------------------------------------------------------------------------

# gradcheck and gradgradcheck of repeat_interleave, diff (prepend/append too), diagflat,
# adjoint, narrow_copy, meshgrid, cartesian_prod, combinations, block_diag: the generic tests
# (tests/ops/test_ops.py); unfold and fill_diagonal_ have no op-database entry
GRAD_CASES = {
    "unfold": ((3, 7), lambda t: t.unfold(1, 3, 2)),
    "unfold_overlap": ((6, 2), lambda t: t.unfold(0, 4, 1)),
    "fill_diagonal_": ((4, 3), lambda t: (t * 1.0).fill_diagonal_(2.0)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradcheck(name):
    shape, fn = GRAD_CASES[name]
    assert gradcheck(fn, (randn64(*shape, rng=RNG),))


@pytest.mark.parametrize("name", ["unfold_overlap"])
def test_gradgradcheck(name):
    shape, fn = GRAD_CASES[name]
    assert gradgradcheck(fn, (randn64(*shape, rng=RNG),))


# -- parity with PyTorch ---------------------------------------------------------------------

# the ops with an op-database entry are compared with PyTorch by the generic tests
PARITY = [
    lambda m, t: t.unfold(-1, 2, 1),
    lambda m, t: t.unfold(0, 1, 2),
    lambda m, t: t.clone().fill_diagonal_(-1.0),
]


@pytest.mark.parametrize("shape", [(3, 4), (2, 5), (4, 3)])
@pytest.mark.parametrize("k", range(len(PARITY)))
def test_parity_with_torch(shape, k):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal(shape)
    ours = PARITY[k](ember, ember.tensor(a))
    ref = PARITY[k](torch, torch.tensor(a))
    np.testing.assert_allclose(ours.numpy(), ref.numpy())
    assert str(ours.dtype).split(".")[1] == str(ref.dtype).split(".")[1]


def test_parity_index_builders_and_predicates():
    # tril_indices, triu_indices, combinations: the generic tests
    torch = pytest.importorskip("torch")
    a = np.arange(6.0).reshape(2, 3)
    for x in (4.0, 9, -1):
        assert (x in ember.tensor(a)) == (x in torch.tensor(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ember.meshgrid(ember.arange(2), ember.arange(3))
        ref = torch.meshgrid(torch.arange(2), torch.arange(3))
    for o, r in zip(ours, ref):
        np.testing.assert_array_equal(o.numpy(), r.numpy())


def test_test_device(testdev):
    # the ops with an op-database entry run on the test device in the generic tests
    t = ember.arange(6.0, device=testdev).reshape(2, 3)
    outs = [t.unfold(1, 2, 1), t.clone().fill_diagonal_(1.0),
            ember.tril_indices(3, 3, device=testdev), ember.triu_indices(3, 3, device=testdev)]
    for o in outs:
        assert o.device == testdev
    x = ember.arange(6.0, device=testdev, dtype=ember.float64).requires_grad_()
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.device == testdev
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1, 2, 3, 3, 2, 1])
    with pytest.raises(RuntimeError, match="same device"):
        t.repeat_interleave(ember.tensor([1, 2]), dim=0)
