"""index_reduce, histogram/histogramdd, trapezoid/trapz/cumulative_trapezoid, gradient,
unravel_index, binomial, bilinear and the ATen embedding_bag: NumPy reference values, dtypes,
errors, float64 gradchecks and gradgradchecks, the NumPy-backed test device, and values (and
gradients) against PyTorch where it is installed."""

import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


def f64(shape, seed=0, low=-2.0, high=2.0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.uniform(low, high, shape), dtype=ember.float64,
                        requires_grad=requires_grad)


def arr(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def torch_or_skip():
    return pytest.importorskip("torch")


def check(ours, theirs, **kw):
    """An ember result against a torch result: shapes, dtype names and values."""
    a = ours.detach().numpy()
    b = theirs.detach().numpy()
    assert a.shape == b.shape
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(a, b, **kw)


# -- index_reduce ------------------------------------------------------------------------------

def index_reduce_ref(x, dim, index, src, reduce, include_self):
    """A loop-free NumPy index_reduce along ``dim`` (moved to the front)."""
    out = np.moveaxis(x.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    ufunc = {"prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}[reduce]
    if not include_self:
        out[index] = {"prod": 1, "mean": 0, "amax": -np.inf, "amin": np.inf}[reduce]
    ufunc.at(out, index, s)
    if reduce == "mean":
        n = np.bincount(index, minlength=out.shape[0]) + (1 if include_self else 0)
        out = out / np.maximum(n, 1).reshape((-1,) + (1,) * (out.ndim - 1))
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_against_numpy(reduce, include_self):
    x, src = arr((3, 4, 2), 0), arr((3, 5, 2), 1)
    index = np.array([0, 3, 0, 1, 0])
    r = ember.index_reduce(ember.tensor(x), 1, ember.tensor(index), ember.tensor(src), reduce,
                           include_self=include_self)
    np.testing.assert_allclose(r.numpy(), index_reduce_ref(x, 1, index, src, reduce,
                                                           include_self), rtol=1e-12)
    t = ember.tensor(x)
    assert t.index_reduce_(1, ember.tensor(index, dtype=ember.int32), ember.tensor(src),
                           reduce, include_self=include_self) is t
    np.testing.assert_allclose(t.numpy(), r.numpy())
    assert ember.tensor(x).index_reduce(-2, ember.tensor(index), ember.tensor(src),
                                        reduce).shape == (3, 4, 2)


def test_index_reduce_dtypes_and_shapes():
    x = ember.tensor([[1, 1], [1, 1], [1, 1]])
    src = ember.tensor([[2, 3], [4, 5], [6, 7], [8, 9]])
    idx = ember.tensor([0, 2, 0, 1])
    r = x.index_reduce(0, idx, src, "mean")  # integer means floor
    assert r.dtype == ember.int64 and r.tolist() == [[3, 3], [4, 5], [2, 3]]
    assert x.index_reduce(0, idx, src, "mean", include_self=False).tolist() == \
        [[4, 5], [8, 9], [4, 5]]
    assert ember.tensor(2.0).index_reduce(0, ember.tensor(0), ember.tensor(3.0),
                                          "prod").item() == 6.0
    assert ember.tensor([True, False]).index_reduce(
        0, ember.tensor([1]), ember.tensor([True]), "amax").tolist() == [True, True]


def test_index_reduce_errors():
    x, src, idx = ember.ones(3, 2), ember.ones(4, 2), ember.tensor([0, 2, 0, 1])
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or "
                                           "amin but got sum"):
        x.index_reduce(0, idx, src, "sum")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: "
                                           "Float"):
        x.index_reduce(0, idx.float(), src, "amax")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: "
                                           "Short"):
        x.index_reduce(0, idx.short(), src, "amax")
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_reduce(0, ember.tensor([0, 3, 0, 1]), src, "amax")
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_reduce(0, ember.tensor([0, -1, 0, 1]), src, "amax")
    with pytest.raises(RuntimeError, match=r"Number of indices \(3\) should be equal to "
                                           r"source.size\(dim\): \(4\), for dim: 0"):
        x.index_reduce(0, idx[:3], src, "amax")
    with pytest.raises(IndexError, match=r"Index is supposed to be a vector, but got dim: 2 "
                                         r"with type: Long and size: \[2, 2\]"):
        x.index_reduce(0, idx.reshape(2, 2), src, "amax")
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Double\) must have "
                                           "the same scalar type"):
        x.index_reduce(0, idx, src.double(), "amax")
    with pytest.raises(RuntimeError, match=r"Got self.shape = \[3, 2\] source.shape = "
                                           r"\[4, 1\]"):
        x.index_reduce(0, idx, src[:, :1], "amax")
    with pytest.raises(RuntimeError, match=r"Got self.shape = \[1\] source.shape = \[\]"):
        ember.ones(1).index_reduce(0, ember.tensor(0), ember.tensor(3.0), "prod")
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_reduce(2, idx, src, "amax")


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_gradcheck(reduce, include_self):
    idx = ember.tensor([0, 2, 0, 1, 2])
    x, src = f64((3, 2), 1), f64((5, 2), 2)

    def fn(a, b):
        return a.index_reduce(0, idx, b, reduce, include_self=include_self)

    assert gradcheck(fn, (x, src))
    assert gradgradcheck(fn, (x, src))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_parity_with_ties_and_zeros(reduce, include_self):
    torch = torch_or_skip()
    # ties for amax/amin (2.0 three times into row 0) and zeros for prod (one zero into
    # row 1, two into row 2, a zero in self's row 3)
    x = np.array([[2.0, 1.0], [1.0, 3.0], [5.0, 0.5], [0.0, 2.0]])
    src = np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 4.0], [2.0, 7.0], [0.0, 0.5], [3.0, 2.0]])
    index = np.array([0, 1, 2, 0, 2, 3])
    g = arr((4, 2), 9)
    grads = []
    for M in (ember, torch):
        a = M.tensor(x, requires_grad=True)
        b = M.tensor(src, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = M.index_reduce(a, 0, M.tensor(index), b, reduce, include_self=include_self)
        r.backward(M.tensor(g))
        grads.append((r, a.grad, b.grad))
    for ours, theirs in zip(*grads):
        check(ours, theirs, rtol=1e-12, atol=1e-12)


def test_index_reduce_inplace_autograd():
    torch = torch_or_skip()
    grads = []
    for M in (ember, torch):
        a = M.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        s = M.tensor([[2.0, 0.5], [4.0, 5.0]], requires_grad=True)
        b = a * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert b.index_reduce_(0, M.tensor([2, 0]), s, "amax") is b
        assert type(b.grad_fn).__name__ == "IndexReduceBackward0"
        b.sum().backward()
        grads.append((b, a.grad, s.grad))
    for ours, theirs in zip(*grads):
        check(ours, theirs)
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.index_reduce_(0, ember.tensor([0]), ember.ones(1), "prod")


def test_index_reduce_prod_double_backward_with_repeated_zeros():
    src = ember.tensor([0.0, 0.0, 2.0], dtype=ember.float64, requires_grad=True)
    x = ember.ones(2, dtype=ember.float64)
    (g,) = ember.autograd.grad(x.index_reduce(0, ember.tensor([0, 0, 1]), src, "prod").sum(),
                               src, create_graph=True)
    assert g.tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="Double backward is unsupported for source when >1 "
                                           "zeros in source"):
        g.sum().backward()


def test_multiply_at_fallback_matches_ufunc_at(monkeypatch):
    """The product without ``ufunc.at`` (CuPy's case): one pass per repetition."""
    from ember.ops import indexing

    monkeypatch.setitem(indexing._MULTIPLY_AT, np, False)
    x, src = arr((4, 3), 3), arr((9, 3), 4)
    index = np.array([0, 3, 0, 0, 2, 3, 0, 1, 2])
    r = ember.index_reduce(ember.tensor(x), 0, ember.tensor(index), ember.tensor(src), "prod")
    np.testing.assert_allclose(r.numpy(), index_reduce_ref(x, 0, index, src, "prod", True))
    t = ember.tensor(x)
    full = np.tile(index[:, None], (1, 3))
    r = t.scatter_reduce(0, ember.tensor(full), ember.tensor(src), "prod")
    ref = x.copy()
    np.multiply.at(ref, (full, np.arange(3)), src)
    np.testing.assert_allclose(r.numpy(), ref)


# -- histogram, histogramdd --------------------------------------------------------------------

@pytest.mark.parametrize("density", [False, True])
def test_histogram_against_numpy(density):
    x = arr((50,), 1)
    w = arr((50,), 2, 0, 1)
    for bins, rng, weight in ((7, None, None), (5, (-1.0, 1.5), w), (3, (0.0, 0.0), None)):
        r = ember.histogram(ember.tensor(x), bins, range=rng,
                            weight=None if weight is None else ember.tensor(weight),
                            density=density)
        ref, edges = np.histogram(x, bins, range=rng if rng != (0.0, 0.0) else (-0.5, 0.5),
                                  weights=weight, density=density)
        np.testing.assert_allclose(r.hist.numpy(), ref, atol=1e-12)
        np.testing.assert_allclose(r.bin_edges.numpy(), edges, atol=1e-12)
        assert r.hist.dtype == ember.float64
    edges = np.array([-2.0, -0.5, 0.0, 0.25, 2.0])
    r = ember.tensor(x).histogram(ember.tensor(edges), weight=ember.tensor(w), density=density)
    ref, _ = np.histogram(x, edges, weights=w, density=density)
    np.testing.assert_allclose(r.hist.numpy(), ref, atol=1e-12)
    np.testing.assert_array_equal(r.bin_edges.numpy(), edges)


def test_histogram_return_type_out_and_edge_cases():
    x = ember.tensor([[1.0, 2.0], [1.0, 4.0]])
    r = ember.histogram(x, 3)
    assert type(r).__name__ == "histogram" and r._fields == ("hist", "bin_edges")
    assert repr(r).startswith("ember.return_types.histogram(")
    assert r.hist.tolist() == [2.0, 1.0, 1.0] and r.bin_edges.tolist() == [1.0, 2.0, 3.0, 4.0]
    hist, edges = ember.empty(0), ember.empty(0)
    out = ember.histogram(x, 3, out=(hist, edges))
    assert out.hist is hist and hist.tolist() == [2.0, 1.0, 1.0]
    assert edges.tolist() == [1.0, 2.0, 3.0, 4.0]
    r = ember.histogram(ember.tensor([]), 2)  # no data: the range [0, 1]
    assert r.hist.tolist() == [0.0, 0.0] and r.bin_edges.tolist() == [0.0, 0.5, 1.0]
    r = ember.histogram(ember.tensor([2.0, 2.0]), 2)  # one value: widened by 0.5
    assert r.hist.tolist() == [0.0, 2.0] and r.bin_edges.tolist() == [1.5, 2.0, 2.5]
    r = ember.histogram(ember.tensor([float("nan"), 1.0, float("inf"), 2.0]), 2,
                        range=(0.0, 2.0))
    assert r.hist.tolist() == [0.0, 2.0]  # NaN and values outside the range are left out
    r = ember.histogram(ember.tensor([1.0, 2.0]), 2, range=(5.0, 6.0), density=True)
    assert np.isnan(r.hist.numpy()).all()


def test_histogram_errors():
    x = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        ember.histogram(ember.tensor([1, 2]), 2)
    with pytest.raises(NotImplementedError, match="for 'Half'"):
        ember.histogram(x.half(), 2)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        ember.histogram(x, 0)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        ember.histogram(x, ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 3 max 1 for "
                                           "dimension 0"):
        ember.histogram(x, 2, range=(3.0, 1.0))
    with pytest.raises(RuntimeError, match=r"dimension 0's range \[1, inf\] is not finite"):
        ember.histogram(x, 2, range=(1.0, float("inf")))
    with pytest.raises(RuntimeError, match=r"range \[nan, nan\] is not finite"):
        ember.histogram(ember.tensor([float("nan"), 1.0]), 2)
    with pytest.raises(RuntimeError, match="range should have 2 elements, but got 3"):
        ember.histogram(x, 2, range=(0.0, 1.0, 2.0))
    with pytest.raises(RuntimeError, match="bins tensor should have one dimension, but got 2"):
        ember.histogram(x, ember.tensor([[1.0, 2.0]]))
    with pytest.raises(RuntimeError, match="input with dtype float and bins for dimension 0 with "
                                           "dtype double"):
        ember.histogram(x, ember.tensor([1.0, 2.0], dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"input\(float\), and weight\(double\)"):
        ember.histogram(x, 2, weight=ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"got input with shape \[3, 1\] and weight with "
                                           r"shape \[2\]"):
        ember.histogram(x, 2, weight=ember.ones(2))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.histogram(x, ember.tensor([1.0, 2.0]), range=(0.0, 1.0))
    with pytest.raises(TypeError, match=r"^histogram\(\) received an invalid combination of "
                       r"arguments - got \(Tensor, float\)"):
        ember.histogram(x, 2.5)


def test_histograms_have_no_derivative():
    x = ember.rand(5, requires_grad=True)
    for out, name in ((ember.histogram(x, 3).hist, "histogram"),
                      (ember.histogram(x, 3).bin_edges, "histogram"),
                      (ember.histogramdd(x.reshape(5, 1), 3).hist, "_histogramdd_from_bin_cts"),
                      (ember.histogramdd(x.reshape(5, 1), 3).bin_edges[0],
                       "_histogramdd_bin_edges"),
                      (ember.histogramdd(x.reshape(5, 1), [ember.tensor([0.0, 1.0])]).hist,
                       "_histogramdd_from_bin_tensors")):
        assert out.requires_grad and type(out.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not "
                                               "implemented"):
            out.sum().backward()
    assert not ember.histogram(x.detach(), 3).hist.requires_grad
    with ember.no_grad():
        assert not ember.histogram(x, 3).hist.requires_grad


@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_against_numpy(density):
    p = arr((40, 3), 3)
    w = arr((40,), 4, 0, 1)
    for bins in (3, [2, 3, 4]):
        r = ember.histogramdd(ember.tensor(p), bins, weight=ember.tensor(w), density=density)
        ref, edges = np.histogramdd(p, bins, weights=w, density=density)
        np.testing.assert_allclose(r.hist.numpy(), ref, atol=1e-12)
        assert isinstance(r.bin_edges, tuple) and len(r.bin_edges) == 3
        for e, f in zip(r.bin_edges, edges):
            np.testing.assert_allclose(e.numpy(), f, atol=1e-12)
    edges = [np.array([-2.0, 0.0, 2.0]), np.array([-1.0, 1.0]), np.array([-2.0, -1, 0, 1, 2])]
    r = ember.histogramdd(ember.tensor(p), [ember.tensor(e) for e in edges], density=density)
    np.testing.assert_allclose(r.hist.numpy(), np.histogramdd(p, edges, density=density)[0],
                               atol=1e-12)
    r = ember.histogramdd(ember.tensor(p), [2, 2, 2], range=[-1.0, 1.0, 0.0, 2.0, -2.0, 0.0],
                          density=density)
    ref = np.histogramdd(p, [2, 2, 2], range=[(-1, 1), (0, 2), (-2, 0)], density=density)[0]
    np.testing.assert_allclose(r.hist.numpy(), ref, atol=1e-12)
    # more than two dims: the points are the innermost rows
    r = ember.histogramdd(ember.tensor(p.reshape(2, 20, 3)), 3,
                          weight=ember.tensor(w.reshape(2, 20)))
    np.testing.assert_allclose(r.hist.numpy(), np.histogramdd(p, 3, weights=w)[0], atol=1e-12)


def test_histogramdd_errors_and_no_dims():
    p = ember.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    with pytest.raises(RuntimeError, match="input tensor should have at least 2 dimensions"):
        ember.histogramdd(ember.tensor([1.0, 2.0]), 2)
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost"):
        ember.histogramdd(p, [2, 3, 4])
    with pytest.raises(RuntimeError, match="expected 2 sequences of bin edges for a "
                                           "2-dimensional histogram but got 1"):
        ember.histogramdd(p, [ember.tensor([0.0, 1.0])])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 1"):
        ember.histogramdd(p, [2, 0])
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        ember.histogramdd(p, 2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 2 max 1 for "
                                           "dimension 1"):
        ember.histogramdd(p, 2, range=[0.0, 1.0, 2.0, 1.0])
    with pytest.raises(RuntimeError, match=r"input with shape \[4, 2\] and weight with shape "
                                           r"\[4, 1\]"):
        ember.histogramdd(p, 2, weight=ember.ones(4, 1))
    r = ember.histogramdd(ember.zeros(3, 0), 2)
    assert r.hist.shape == () and r.hist.item() == 0.0 and r.bin_edges == ()
    assert not hasattr(ember.Tensor, "histogramdd")


def test_histogram_parity():
    torch = torch_or_skip()
    rng = np.random.default_rng(5)
    for dt, trial in itertools.product(("float32", "float64"), range(6)):
        x = rng.normal(size=(int(rng.integers(1, 80)),)).astype(dt)
        w = rng.uniform(size=x.shape).astype(dt)
        bins = int(rng.integers(1, 12))
        rng_ = None if trial % 2 else (float(x.min()) - 0.1, float(x.max()) * 0.8)
        for M in (ember, torch):
            kw = dict(range=rng_, weight=M.tensor(w) if trial % 3 == 0 else None,
                      density=trial % 4 == 1)
            if M is ember:
                ours = ember.histogram(ember.tensor(x), bins, **kw)
            else:
                theirs = torch.histogram(torch.tensor(x), bins, **kw)
        # bin edges may differ in the last bit (PyTorch's vectorised linspace)
        check(ours.bin_edges, theirs.bin_edges, rtol=1e-6, atol=1e-6)
        check(ours.hist, theirs.hist, rtol=1e-5, atol=1e-6)
    p = rng.normal(size=(30, 2)).astype("float32")
    ours = ember.histogramdd(ember.tensor(p), [3, 4], density=True)
    theirs = torch.histogramdd(torch.tensor(p), [3, 4], density=True)
    check(ours.hist, theirs.hist, rtol=1e-5)
    assert len(ours.bin_edges) == len(theirs.bin_edges) == 2


# -- trapezoid, trapz, cumulative_trapezoid ----------------------------------------------------

def cumtrapz_ref(y, x=None, dx=1.0, axis=-1):
    y = np.moveaxis(y, axis, -1)
    d = np.diff(np.moveaxis(np.broadcast_to(x, np.moveaxis(y, -1, axis).shape), axis, -1)
                if x is not None and np.ndim(x) > 1 else x) if x is not None else dx
    return np.moveaxis(np.cumsum(d * (y[..., 1:] + y[..., :-1]) / 2, -1), -1, axis)


def test_trapezoid_against_numpy():
    y, x = arr((3, 5), 1), np.sort(arr((5,), 2))
    yt = ember.tensor(y)
    np.testing.assert_allclose(ember.trapezoid(yt).numpy(), np.trapezoid(y))
    np.testing.assert_allclose(ember.trapezoid(yt, dx=0.5, dim=0).numpy(),
                               np.trapezoid(y, dx=0.5, axis=0))
    np.testing.assert_allclose(ember.trapezoid(yt, ember.tensor(x)).numpy(), np.trapezoid(y, x))
    x2 = np.sort(arr((3, 5), 3), axis=0)
    np.testing.assert_allclose(ember.trapezoid(yt, ember.tensor(x2), dim=0).numpy(),
                               np.trapezoid(y, x2, axis=0))
    np.testing.assert_allclose(ember.trapz(yt, ember.tensor(x)).numpy(), np.trapezoid(y, x))
    np.testing.assert_allclose(ember.trapz(yt, dx=2.0).numpy(), np.trapezoid(y, dx=2.0))
    np.testing.assert_allclose(ember.cumulative_trapezoid(yt).numpy(), cumtrapz_ref(y))
    np.testing.assert_allclose(ember.cumulative_trapezoid(yt, dx=3.0, dim=0).numpy(),
                               cumtrapz_ref(y, dx=3.0, axis=0))
    np.testing.assert_allclose(ember.cumulative_trapezoid(yt, ember.tensor(x)).numpy(),
                               cumtrapz_ref(y, x))


def test_trapezoid_dtypes_empty_and_errors():
    i = ember.tensor([[1, 2, 4], [3, 5, 9]])
    assert ember.trapezoid(i).dtype == ember.float32
    assert ember.trapezoid(i).tolist() == [4.5, 11.0]
    assert ember.trapezoid(i, dx=2).tolist() == [9.0, 22.0]
    assert ember.trapezoid(i, ember.tensor([0, 1, 3])).tolist() == [7.5, 18.0]
    assert ember.cumulative_trapezoid(i).dtype == ember.float32
    assert ember.trapezoid(i.float(), dx=ember.tensor(2.0)).tolist() == [9.0, 22.0]
    assert ember.trapezoid(i.double(), ember.tensor([0, 1, 3.0])).dtype == ember.float64
    e = ember.trapezoid(ember.zeros(2, 0, dtype=ember.int64))
    assert e.dtype == ember.int64 and e.tolist() == [0, 0]
    assert ember.cumulative_trapezoid(ember.zeros(2, 0)).shape == (2, 0)
    y = ember.tensor([[1.0, 2, 4], [3, 5, 9]])
    with pytest.raises(RuntimeError, match="trapezoid: There must be one `x` value for each "
                                           "sample point"):
        ember.trapezoid(y, ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: There must be one `x` value"):
        ember.cumulative_trapezoid(y, ember.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="received a bool input for `y`, but bool is not "
                                           "supported"):
        ember.trapezoid(y.bool())
    with pytest.raises(RuntimeError, match="received a bool input for `x` or `y`"):
        ember.trapezoid(y, ember.tensor([True, False, True]))
    with pytest.raises(RuntimeError, match="we only support dx as a real number"):
        ember.trapezoid(y, dx=True)
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: Currently, we only support dx"):
        ember.cumulative_trapezoid(y, dx=True)
    with pytest.raises(TypeError, match="trapezoid\\(\\) received an invalid combination"):
        ember.trapezoid(y, 2.0)
    with pytest.raises(TypeError, match="invalid combination"):
        ember.trapezoid(y, ember.tensor([0.0, 1, 3]), dx=1)
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no "
                                         "dimensions"):
        ember.trapezoid(ember.tensor(3.0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.trapezoid(y, dim=2)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.trapezoid(y, ember.tensor([[0.0, 1, 3], [1, 2, 3], [4, 5, 6]]))
    assert not hasattr(ember.Tensor, "trapezoid")


@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_gradcheck(name):
    op = getattr(ember, name)
    y = f64((2, 4), 1)
    x = ember.tensor(np.sort(arr((4,), 2)), dtype=ember.float64, requires_grad=True)
    x2 = f64((2, 4), 3)
    for fn, inputs in ((lambda a: op(a, dx=0.7), (y,)), (lambda a, b: op(a, b), (y, x)),
                       (lambda a, b: op(a, b, dim=0), (y, x2))):
        assert gradcheck(fn, inputs)
        assert gradgradcheck(fn, inputs)


def test_trapezoid_parity():
    torch = torch_or_skip()
    y, x = arr((3, 4), 4), np.sort(arr((4,), 5))
    for name in ("trapezoid", "trapz", "cumulative_trapezoid"):
        for kwargs in ({}, {"dx": 0.25}, {"dim": 0}):
            check(getattr(ember, name)(ember.tensor(y), **kwargs),
                  getattr(torch, name)(torch.tensor(y), **kwargs))
        check(getattr(ember, name)(ember.tensor(y), ember.tensor(x)),
              getattr(torch, name)(torch.tensor(y), torch.tensor(x)))
        check(getattr(ember, name)(ember.tensor(y, dtype=ember.int64)),
              getattr(torch, name)(torch.tensor(y, dtype=torch.int64)))


# -- gradient ----------------------------------------------------------------------------------

def test_gradient_against_numpy():
    y = arr((4, 5), 6)
    c0, c1 = np.cumsum(arr((4,), 7, 0.5, 1.5)), np.cumsum(arr((5,), 8, 0.5, 1.5))
    t = ember.tensor(y)
    for edge_order in (1, 2):
        for ours, ref in (
                (ember.gradient(t, edge_order=edge_order), np.gradient(y, edge_order=edge_order)),
                (ember.gradient(t, spacing=2.0, edge_order=edge_order),
                 np.gradient(y, 2.0, edge_order=edge_order)),
                (ember.gradient(t, spacing=[2.0, 0.5], edge_order=edge_order),
                 np.gradient(y, 2.0, 0.5, edge_order=edge_order)),
                (ember.gradient(t, spacing=(ember.tensor(c0), ember.tensor(c1)),
                                edge_order=edge_order),
                 np.gradient(y, c0, c1, edge_order=edge_order)),
                (ember.gradient(t, spacing=[ember.tensor(c1)], dim=1, edge_order=edge_order),
                 [np.gradient(y, c1, axis=1, edge_order=edge_order)]),
                (ember.gradient(t, dim=(1, 0), edge_order=edge_order),
                 np.gradient(y, axis=(1, 0), edge_order=edge_order))):
            assert isinstance(ours, tuple) and len(ours) == len(ref)
            for a, b in zip(ours, ref):
                np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-12)
    r = ember.gradient(t, dim=-1)
    assert len(r) == 1
    np.testing.assert_allclose(r[0].numpy(), np.gradient(y, axis=-1))


def test_gradient_dtypes_and_errors():
    i = ember.tensor([[1, 2, 4, 7], [3, 5, 9, 10], [0, 1, 0, 1]])
    assert all(g.dtype == ember.float32 for g in ember.gradient(i))
    assert all(g.dtype == ember.float32 for g in ember.gradient(i, spacing=2))
    assert ember.gradient(ember.tensor(3.0)) == ()
    assert ember.gradient(i.float(), dim=()) == ()
    mixed = ember.gradient(i.float(), spacing=(ember.tensor([0.0, 1, 3]),
                                               ember.tensor([0.0, 1, 2, 5], dtype=ember.float64)))
    assert [g.dtype for g in mixed] == [ember.float32, ember.float64]
    y = i.float()
    with pytest.raises(RuntimeError, match="list of length equal to 'self.dim\\(\\) = 2', since "
                                           "dim argument was not given, but got a list of "
                                           "length 1"):
        ember.gradient(y, spacing=[2.0])
    with pytest.raises(RuntimeError, match="spacing argument of length 2 and a dim argument of "
                                           "length 1."):
        ember.gradient(y, spacing=[2.0, 3.0], dim=1)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        ember.gradient(y, edge_order=3)
    with pytest.raises(RuntimeError, match="each dimension size to be at least edge_order\\+1"):
        ember.gradient(y[:, :2], edge_order=2)
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times"):
        ember.gradient(y, dim=[1, 1])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.gradient(y, dim=2)
    with pytest.raises(RuntimeError, match="does not support uint8 input"):
        ember.gradient(i.to(ember.uint8))
    with pytest.raises(RuntimeError, match="but got an element with 2 dimensions!"):
        ember.gradient(y, spacing=(ember.tensor([[0.0, 1, 3]]),), dim=0)
    with pytest.raises(RuntimeError, match="but got an element with 0 dimensions!"):
        ember.gradient(y, spacing=[ember.tensor(2.0), ember.tensor(2.0)])
    assert not hasattr(ember.Tensor, "gradient")


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_gradcheck(edge_order):
    y = f64((3, 4), 9)
    c = ember.tensor(np.cumsum(arr((4,), 10, 0.5, 1.5)), dtype=ember.float64, requires_grad=True)

    def uniform(a):
        return ember.gradient(a, spacing=[0.5, 2.0], edge_order=edge_order)

    def coords(a, b):
        return ember.gradient(a, spacing=[b], dim=1, edge_order=edge_order)

    assert gradcheck(uniform, (y,))
    assert gradgradcheck(uniform, (y,))
    assert gradcheck(coords, (y, c))
    assert gradgradcheck(coords, (y, c))


def test_gradient_parity():
    torch = torch_or_skip()
    y = arr((3, 4), 11)
    c0, c1 = [0.0, 1.0, 3.0], [0.0, 1.0, 2.0, 5.0]
    for M in (ember, torch):
        t = M.tensor(y)
        out = [M.gradient(t), M.gradient(t, spacing=2.0, dim=0, edge_order=2),
               M.gradient(t, spacing=(M.tensor(c0), M.tensor(c1)), edge_order=2),
               M.gradient(M.tensor(y).long(), spacing=[2, 3])]
        if M is ember:
            ours = out
        else:
            theirs = out
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            check(p, q, rtol=1e-12)


# -- unravel_index -----------------------------------------------------------------------------

def test_unravel_index_against_numpy_and_errors():
    idx = np.array([[0, 7, 23], [11, 5, 19]])
    r = ember.unravel_index(ember.tensor(idx), (2, 3, 4))
    assert isinstance(r, tuple) and len(r) == 3
    for a, b in zip(r, np.unravel_index(idx, (2, 3, 4))):
        assert a.dtype == ember.int64 and a.numpy().tolist() == b.tolist()
    r = ember.unravel_index(ember.tensor([4, -1, 7], dtype=ember.int32), ember.Size([3, 2]))
    assert [t.tolist() for t in r] == [[2, 2, 0], [0, 1, 1]]  # wraps, as PyTorch's floor/mod
    assert ember.unravel_index(ember.tensor(4), 6)[0].tolist() == 4
    assert ember.unravel_index(ember.tensor(4), ()) == ()
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got "
                                        "ember.float32"):
        ember.unravel_index(ember.tensor(4.0), (3, 2))
    with pytest.raises(TypeError, match="only contain ints"):
        ember.unravel_index(ember.tensor(4), (3.0, 2))
    with pytest.raises(TypeError, match="to be int or sequence of ints"):
        ember.unravel_index(ember.tensor(4), 3.0)
    with pytest.raises(ValueError, match="'shape' cannot have negative values, but got "
                                         "\\(3, -2\\)"):
        ember.unravel_index(ember.tensor(4), (3, -2))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.unravel_index(ember.tensor(4), (0, 3))


def test_unravel_index_parity():
    torch = torch_or_skip()
    idx = np.array([[1234], [5678], [-3]])
    for shape in ((10, 10, 10, 10), (100, 100), 7):
        for a, b in zip(ember.unravel_index(ember.tensor(idx), shape),
                        torch.unravel_index(torch.tensor(idx), shape)):
            check(a, b)


# -- binomial ----------------------------------------------------------------------------------

def test_binomial_values_generator_and_rules():
    count = ember.tensor([10.0, 5.0, 0.0, 3.0, 7.0, 2.5, -1.0])
    prob = ember.tensor([0.5, 0.0, 0.3, 1.0, float("nan"), 1.0, 0.5])
    r = ember.binomial(count, prob)
    assert r.dtype == ember.float32 and r.shape == (7,)
    v = r.tolist()
    assert 0 <= v[0] <= 10 and v[0] == int(v[0])
    assert v[1:4] == [0.0, 0.0, 3.0] and np.isnan(v[4]) and v[5:] == [2.5, 0.0]
    c = ember.full((1000,), 40.0, dtype=ember.float64)
    g1, g2 = ember.Generator(c.device).manual_seed(3), ember.Generator(c.device).manual_seed(3)
    p = ember.full((1000,), 0.8, dtype=ember.float64)
    a, b = ember.binomial(c, p, g1), ember.binomial(c, p, generator=g2)
    assert a.dtype == ember.float64 and a.tolist() == b.tolist()
    assert abs(a.mean().item() - 32.0) < 0.5 and abs(a.var().item() - 6.4) < 1.5
    assert ember.binomial(ember.full((2, 3), 4.0), ember.full((3,), 0.5)).shape == (2, 3)


def test_binomial_errors_and_no_derivative():
    c, p = ember.tensor([10.0, 5.0]), ember.tensor([0.5, 0.1])
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for "
                                         "count, got: Long"):
        ember.binomial(c.long(), p)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        ember.binomial(c.double(), p)
    with pytest.raises(NotImplementedError, match="\"binomial_(cpu|cuda)\" not implemented "
                                                  "for 'Half'"):
        ember.binomial(c.half(), p.half())
    with pytest.raises(TypeError, match="argument 'prob' \\(position 2\\) must be Tensor, not "
                                        "float"):
        ember.binomial(c, 0.5)
    pr = p.clone().requires_grad_()
    r = ember.binomial(c, pr)
    assert r.requires_grad and type(r.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        r.sum().backward()
    assert not hasattr(ember.Tensor, "binomial")


# -- bilinear ----------------------------------------------------------------------------------

def test_bilinear_against_numpy_and_errors():
    x1, x2, w, b = arr((2, 5, 3), 1), arr((2, 5, 4), 2), arr((6, 3, 4), 3), arr((6,), 4)
    r = ember.bilinear(ember.tensor(x1), ember.tensor(x2), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(r.numpy(), np.einsum("...i,oij,...j->...o", x1, w, x2) + b)
    r = ember.bilinear(ember.tensor(x1[0, 0]), ember.tensor(x2[0, 0]), ember.tensor(w))
    np.testing.assert_allclose(r.numpy(), np.einsum("i,oij,j->o", x1[0, 0], w, x2[0, 0]))
    f = F.bilinear(ember.tensor(x1), ember.tensor(x2), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(f.numpy(), np.einsum("...i,oij,...j->...o", x1, w, x2) + b)
    W, B = ember.randn(2, 3, 4), ember.randn(2)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 5 "
                                           "and 4"):
        ember.bilinear(ember.randn(5, 3), ember.randn(4, 4), W, B)
    with pytest.raises(RuntimeError, match="input dimensions do not match: got 3 and 2"):
        ember.bilinear(ember.randn(5, 6, 3), ember.randn(5, 4), W, B)
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 2 but "
                                           "expected 3"):
        F.bilinear(ember.randn(5, 2), ember.randn(5, 4), W, B)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 5 but "
                                           "expected 4"):
        ember.bilinear(ember.randn(5, 3), ember.randn(5, 5), W, B)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 3 but "
                                           "expected 2"):
        ember.bilinear(ember.randn(5, 3), ember.randn(5, 4), W, ember.randn(3))
    with pytest.raises(RuntimeError, match="All tensors must have the same dtype, got input1: "
                                           "float, input2: float, weight: double, bias: float"):
        ember.bilinear(ember.randn(5, 3), ember.randn(5, 4), W.double(), B)
    assert not hasattr(ember.Tensor, "bilinear")


def test_bilinear_gradcheck_and_parity():
    x1, x2, w, b = f64((3, 2), 1), f64((3, 4), 2), f64((2, 2, 4), 3), f64((2,), 4)
    assert gradcheck(ember.bilinear, (x1, x2, w, b))
    assert gradgradcheck(ember.bilinear, (x1, x2, w, b))
    torch = torch_or_skip()
    arrays = [t.detach().numpy() for t in (x1, x2, w, b)]
    ours = ember.bilinear(*[ember.tensor(a, requires_grad=True) for a in arrays])
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    theirs = torch.bilinear(*tt)
    check(ours, theirs, rtol=1e-12)


# -- embedding_bag (the ATen op) ---------------------------------------------------------------

W10 = arr((10, 3), 12)
BAG_INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9])


def test_embedding_bag_aten_values_and_outputs():
    w = ember.tensor(W10)
    idx, off = ember.tensor(BAG_INDICES), ember.tensor([0, 4, 4, 6])
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(w, idx, off, False, 1)
    bags = [BAG_INDICES[0:4], BAG_INDICES[4:4], BAG_INDICES[4:6], BAG_INDICES[6:]]
    ref = [W10[b].mean(0) if len(b) else np.zeros(3) for b in bags]
    np.testing.assert_allclose(out.numpy(), ref)
    assert offset2bag.tolist() == [0, 0, 0, 0, 2, 2, 3, 3]
    assert bag_size.tolist() == [4, 0, 2, 2] and max_indices.tolist() == [4, 0, 2, 2]
    out, _, _, max_indices = ember.embedding_bag(w, idx, off, False, 2)
    ref = [W10[b].max(0) if len(b) else np.zeros(3) for b in bags]
    np.testing.assert_allclose(out.numpy(), ref)
    assert max_indices.shape == (4, 3)
    np.testing.assert_array_equal(W10[max_indices.numpy(), np.arange(3)][[0, 2, 3]],
                                  np.array(ref)[[0, 2, 3]])
    out, offset2bag, bag_size, _ = ember.embedding_bag(w, idx, off, False, 0, False,
                                                       ember.tensor(np.arange(8.0)), False, 4)
    psw = np.arange(8.0) * (BAG_INDICES != 4)
    ref = [(W10[BAG_INDICES[s:e]] * psw[s:e, None]).sum(0) for s, e in
           ((0, 4), (4, 4), (4, 6), (6, 8))]
    np.testing.assert_allclose(out.numpy(), ref)
    assert bag_size.tolist() == [0, 0, 0, 0]
    r = ember.embedding_bag(w, idx.int(), off.int(), False, 1)
    assert r[1].dtype == ember.int32 and r[3].dtype == ember.int32
    assert not hasattr(ember.Tensor, "embedding_bag") and not hasattr(ember, "embedding_bag_")


def test_embedding_bag_aten_errors():
    w, idx, off = ember.tensor(W10), ember.tensor(BAG_INDICES), ember.tensor([0, 4, 4, 6])
    with pytest.raises(RuntimeError, match="weight has to be a 2D Tensor, but got Tensor of "
                                           "dimension 1"):
        ember.embedding_bag(w[0], idx, off)
    with pytest.raises(RuntimeError, match="argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got ember.FloatTensor"):
        ember.embedding_bag(w, idx.float(), off)
    with pytest.raises(RuntimeError, match="'weight' to have one of the following scalar types: "
                                           "Half, BFloat16, Float, Double; but got "
                                           "ember.LongTensor"):
        ember.embedding_bag(w.long(), idx, off)
    with pytest.raises(RuntimeError, match="offsets has to be a 1D Tensor, but got Tensor of "
                                           "dimension 2"):
        ember.embedding_bag(w, idx, off.reshape(2, 2))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        ember.embedding_bag(w, idx, ember.tensor([1, 4]))
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's "
                                           "length 8 but got offsets\\[-1\\] of 9"):
        ember.embedding_bag(w, idx, ember.tensor([0, 9]))
    # PyTorch's words differ by kernel: float64 (w) and max bags check in the generic loop,
    # float32 sum/mean in its fast one
    with pytest.raises(RuntimeError, match="embedding_bag: Expected idx >= 0 && idx < "
                                           "num_embeddings but found idx to be 10"):
        ember.embedding_bag(w, ember.tensor([1, 10]), ember.tensor([0]))
    with pytest.raises(RuntimeError, match="Index 1 of input takes value 10 which is not in the "
                                           "valid range \\[0, 10\\)"):
        ember.embedding_bag(w.float(), ember.tensor([1, 10]), ember.tensor([0]))
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):
        ember.embedding_bag(w, idx, off, False, 3)
    with pytest.raises(RuntimeError, match="per_sample_weights only supported with "
                                           "mode='sum'"):
        ember.embedding_bag(w, idx, off, False, 1, False, ember.ones(8, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="padding_idx must be within the number of "
                                           "embeddings, -10 through 9, but got 20"):
        ember.embedding_bag(w, idx, off, False, 0, False, None, False, 20)
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(ember.tensor([[0, 1]]), w, per_sample_weights=ember.ones(2))
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        F.embedding_bag(ember.tensor([[0, 1]]), w, mode="max", scale_grad_by_freq=True)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_aten_gradcheck(mode):
    idx = ember.tensor([0, 1, 2, 3, 1, 3, 0])
    off = ember.tensor([0, 2, 2, 5])
    w = f64((4, 3), 5)
    assert gradcheck(lambda t: ember.embedding_bag(t, idx, off, False, mode)[0], (w,))
    assert gradgradcheck(lambda t: ember.embedding_bag(t, idx, off, False, mode, False, None,
                                                       False, 1)[0], (w,))
    if mode == 0:
        psw = f64((7,), 6)

        def fn(t, s):
            return ember.embedding_bag(t, idx, off, False, 0, False, s, False, 3)[0]

        assert gradcheck(fn, (w, psw))
        assert gradgradcheck(fn, (w, psw))


def test_embedding_bag_parity():
    torch = torch_or_skip()
    rng = np.random.default_rng(13)
    cases = [(BAG_INDICES, [0, 4, 4, 6], [0, 4, 4, 6, 8]),
             (rng.integers(0, 10, 40), [0, 1, 2, 3, 30], [0, 1, 2, 3, 30, 40]),
             (np.arange(12) % 10, [0, 3, 6, 9], [0, 3, 6, 9, 12])]
    for (idx, off, off_last), dt in itertools.product(cases, ("float32", "float64")):
        for mode, last, pad, use_psw in itertools.product((0, 1, 2), (False, True),
                                                          (None, 4, -1), (False, True)):
            if use_psw and mode:
                continue
            offsets = off_last if last else off
            psw = np.linspace(0.5, 2, len(idx)).astype(dt) if use_psw else None
            results = []
            for M in (ember, torch):
                w = M.tensor(W10.astype(dt), requires_grad=True)
                p = None if psw is None else M.tensor(psw, requires_grad=True)
                r = M.embedding_bag(w, M.tensor(idx), M.tensor(offsets), False, mode, False, p,
                                    last, pad)
                r[0].backward(M.tensor(np.cos(np.arange(r[0].numel())).reshape(r[0].shape)
                                       .astype(dt)))
                results.append((*r, w.grad) + ((p.grad,) if p is not None else ()))
            for ours, theirs in zip(*results):
                check(ours, theirs, rtol=1e-5, atol=1e-6)


def test_functional_embedding_bag_calls_the_core_op():
    w = ember.tensor(W10, requires_grad=True)
    idx = ember.tensor([[1, 2, 4], [4, 3, 2]])
    out = F.embedding_bag(idx, w, mode="max", padding_idx=4)
    np.testing.assert_allclose(out.detach().numpy(),
                               [W10[[1, 2]].max(0), W10[[3, 2]].max(0)])
    assert type(out.grad_fn).__name__ == "EmbeddingBagBackward0"
    out.sum().backward()
    assert w.grad[4].abs().sum().item() == 0.0
    with pytest.warns(UserWarning, match="Argument order of nn.functional.embedding_bag"):
        swapped = F.embedding_bag(w.detach(), idx.reshape(-1), ember.tensor([0, 3]))
    np.testing.assert_allclose(swapped.numpy(), [W10[[1, 2, 4]].mean(0), W10[[4, 3, 2]].mean(0)])


# -- the test device ---------------------------------------------------------------------------

def test_ops_on_the_test_device(testdev):
    def on(t):
        return t.to(testdev)

    x = ember.tensor(arr((3, 4), 14))
    r = ember.histogram(on(x), 4, weight=on(x.abs()), density=True)
    ref = ember.histogram(x, 4, weight=x.abs(), density=True)
    assert r.hist.device == testdev and r.bin_edges.device == testdev
    np.testing.assert_allclose(r.hist.cpu().numpy(), ref.hist.numpy())
    r = ember.histogramdd(on(x.float()), [ember.tensor([-2.0, 0, 2], device=testdev)] * 4)
    assert r.hist.device == testdev and r.hist.shape == (2, 2, 2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.histogram(on(x), ember.tensor([0.0, 1.0]))
    src = on(f64((5, 4), 15, requires_grad=False)).requires_grad_()
    y = on(ember.ones(3, 4, dtype=ember.float64)).requires_grad_()
    idx = on(ember.tensor([0, 2, 0, 1, 2]))
    for reduce in ("prod", "mean", "amax", "amin"):
        r = y.index_reduce(0, idx, src, reduce)
        assert r.device == testdev
        r.sum().backward()
        assert src.grad.device == testdev
        np.testing.assert_allclose(
            r.detach().cpu().numpy(),
            ember.ones(3, 4, dtype=ember.float64, device="cpu").index_reduce(
                0, idx.cpu(), src.detach().cpu(), reduce).numpy())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        y.index_reduce(0, idx.cpu(), src, "prod")
    t = on(f64((2, 5), 16, requires_grad=False)).requires_grad_()
    assert ember.trapezoid(t, on(ember.arange(5.0, dtype=ember.float64))).device == testdev
    assert ember.cumulative_trapezoid(t).device == testdev
    g = ember.gradient(t, spacing=[on(ember.arange(2.0, dtype=ember.float64)),
                                   on(ember.arange(5.0, dtype=ember.float64))])
    assert all(a.device == testdev for a in g)
    sum(a.sum() for a in g).backward()
    assert t.grad.device == testdev
    assert all(a.device == testdev for a in ember.unravel_index(on(ember.tensor([5, 7])),
                                                                (2, 4)))
    gen = ember.Generator(testdev).manual_seed(0)
    b = ember.binomial(on(ember.full((4,), 6.0)), on(ember.full((4,), 0.5)), gen)
    assert b.device == testdev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.binomial(on(ember.ones(2)), ember.ones(2))
    w = on(ember.tensor(W10)).requires_grad_()
    for mode in (0, 1, 2):
        out = ember.embedding_bag(w, on(ember.tensor(BAG_INDICES)), on(ember.tensor([0, 4, 6])),
                                  False, mode)
        assert all(o.device == testdev for o in out)
        out[0].sum().backward()
    assert w.grad.device == testdev
    b = ember.bilinear(on(ember.randn(2, 3)), on(ember.randn(2, 4)), on(ember.randn(5, 3, 4)))
    assert b.device == testdev
