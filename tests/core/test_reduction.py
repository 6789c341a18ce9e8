"""Reductions: edge cases, dtypes, named tuples, PyTorch's errors, gradient conventions (ties,
zeros). Values, gradchecks and devices on the op database's samples: tests/ops/test_ops.py."""

import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testutils import randn64, t64, to_numpy

import ember
from ember.autograd import gradcheck
from ember.ops.reduction import return_types

RNG = np.random.default_rng(0)
NAN = float("nan")


def distinct(*shape, requires_grad=True):
    """float64 values without ties (selection gradients are well defined)."""
    n = math.prod(shape)
    return t64((RNG.permutation(n) + RNG.uniform(0.1, 0.9, n)).reshape(shape) - n / 2,
               requires_grad)


def grad_of(fn, x):
    x = x.detach().requires_grad_(True)
    fn(x).sum().backward()
    return to_numpy(x.grad)


# -- sum, mean, nansum, nanmean -----------------------------------------------------------------


def test_sum_empty_dim_list_reduces_everything():
    x = randn64(2, 3, rng=RNG)
    assert ember.sum(x, []).shape == ()
    np.testing.assert_allclose(to_numpy(x.mean(dim=[])), to_numpy(x).mean())


def test_sum_dtypes():
    assert ember.tensor([1, 2, 3], dtype=ember.int32).sum().dtype is ember.int64
    assert ember.tensor([True, True, False]).sum().item() == 2
    assert ember.tensor([True]).sum().dtype is ember.int64
    assert ember.tensor([1.0, 2.0]).sum().dtype is ember.float32
    s = ember.tensor([1, 2], dtype=ember.int32).sum(dtype=ember.float64)
    assert s.dtype is ember.float64 and s.item() == 3.0


@pytest.mark.parametrize("op", ["sum", "sum_dim", "nansum", "prod", "prod_dim", "cumsum",
                                "cumprod"])
@pytest.mark.parametrize("src", ["int8", "int32", "int64", "uint8", "bool", "float32"])
@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8"])
def test_explicit_integer_dtype_is_the_result_dtype(op, src, dtype):
    # PyTorch: an explicit integer dtype is the result's (and the accumulator's: it wraps);
    # only dtype=None widens integers to int64
    x = ember.arange(1, 13).reshape(3, 4).to(getattr(ember, src))
    ref = to_numpy(x).astype(getattr(np, dtype))
    dt = getattr(ember, dtype)
    r, expected = {
        "sum": (lambda: x.sum(dtype=dt), lambda: ref.sum(dtype=ref.dtype)),
        "sum_dim": (lambda: ember.sum(x, 0, dtype=dt), lambda: ref.sum(0, dtype=ref.dtype)),
        "nansum": (lambda: ember.nansum(x, 1, dtype=dt), lambda: ref.sum(1, dtype=ref.dtype)),
        "prod": (lambda: x.prod(dtype=dt), lambda: ref.prod(dtype=ref.dtype)),
        "prod_dim": (lambda: ember.prod(x, 1, dtype=dt), lambda: ref.prod(1, dtype=ref.dtype)),
        "cumsum": (lambda: x.cumsum(1, dtype=dt), lambda: ref.cumsum(1, dtype=ref.dtype)),
        "cumprod": (lambda: ember.cumprod(x, 0, dtype=dt),
                    lambda: ref.cumprod(0, dtype=ref.dtype)),
    }[op]
    got = r()
    assert got.dtype is dt
    np.testing.assert_array_equal(to_numpy(got), expected())


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_running_op_with_bool_dtype_is_pytorchs_error(op):
    with pytest.raises(NotImplementedError, match=f'"{op}_out_cpu" not implemented for'):
        getattr(ember, op)(ember.arange(4), 0, dtype=ember.bool)


def test_sum_with_dtype_gives_input_dtype_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.sum(dtype=ember.float64).backward()
    assert x.grad.dtype is ember.float32
    np.testing.assert_array_equal(to_numpy(x.grad), [1.0, 1.0])


def test_empty_sum_prod_mean():
    e = ember.zeros(0)
    assert e.sum().item() == 0.0 and e.sum().shape == ()
    assert e.prod().item() == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy warning leaks
        assert math.isnan(e.mean().item())
    assert ember.zeros(0, 3).sum(0).shape == (3,)


def test_mean_of_integers_is_pytorch_error():
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input "
                                           r"dtype must be either a floating point or complex "
                                           r"dtype. Got: Long"):
        ember.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Got: Bool"):
        ember.tensor([True]).mean()
    m = ember.tensor([1, 2]).mean(dtype=ember.float32)
    assert m.dtype is ember.float32 and m.item() == 1.5


def test_dim_out_of_range_and_repeated():
    x = randn64(2, 3, rng=RNG)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, 0))


def test_grad_fn_names():
    x = randn64(2, 3, rng=RNG)
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.mean().grad_fn.name() == "MeanBackward0"
    assert x.mean(0).grad_fn.name() == "MeanBackward1"
    assert x.prod().grad_fn.name() == "ProdBackward0"
    assert x.prod(0).grad_fn.name() == "ProdBackward1"
    assert x.var(0).grad_fn.name() == "VarBackward0"
    assert x.std().grad_fn.name() == "StdBackward0"
    assert x.max().grad_fn.name() == "MaxBackward1"
    assert x.max(0).values.grad_fn.name() == "MaxBackward0"
    assert x.max(0).indices.grad_fn is None and not x.max(0).indices.requires_grad
    assert x.amax(0).grad_fn.name() == "AmaxBackward0"
    assert x.logsumexp(0).grad_fn.name() == "LogsumexpBackward0"
    assert x.norm().grad_fn.name() == "LinalgVectorNormBackward0"
    assert x.cumsum(0).grad_fn.name() == "CumsumBackward0"
    assert x.sort().values.grad_fn.name() == "SortBackward0"
    assert x.topk(1).values.grad_fn.name() == "TopkBackward0"
    assert x.median().grad_fn.name() == "MedianBackward0"
    assert x.median(0).values.grad_fn.name() == "MedianBackward1"


def test_no_graph_without_grad():
    x = randn64(2, 3, rng=RNG, requires_grad=False)
    assert x.sum().grad_fn is None
    y = randn64(2, 3, rng=RNG)
    with ember.no_grad():
        assert y.var(0).grad_fn is None and not y.max(1).values.requires_grad


def test_nansum_nanmean():
    a = np.array([[1.0, NAN, 3.0], [NAN, NAN, 2.0]])
    x = t64(a)
    np.testing.assert_allclose(to_numpy(x.nansum()), np.nansum(a))
    np.testing.assert_allclose(to_numpy(x.nansum(1)), np.nansum(a, 1))
    np.testing.assert_allclose(to_numpy(x.nanmean(0, keepdim=True)), [[1.0, NAN, 2.5]])
    np.testing.assert_allclose(to_numpy(ember.nanmean(x)), np.nanmean(a))
    np.testing.assert_array_equal(grad_of(lambda v: v.nansum(), x), ~np.isnan(a))
    np.testing.assert_allclose(grad_of(lambda v: v.nanmean(1), x),
                               [[0.5, 0, 0.5], [0, 0, 1.0]])
    assert ember.tensor([1, 2], dtype=ember.int32).nansum().dtype is ember.int64
    with pytest.raises(RuntimeError, match=r"nanmean\(\): expected input to have floating "
                                           r"point or complex dtype but got Long"):
        ember.tensor([1, 2]).nanmean()
    y = randn64(3, 4, rng=RNG)
    assert gradcheck(lambda v: v.nansum(0), (y,))
    assert gradcheck(lambda v: v.nanmean(1), (y,))


# -- prod ---------------------------------------------------------------------------------------

def test_prod_values_and_dtypes():
    a = RNG.standard_normal((3, 4))
    x = t64(a)
    np.testing.assert_allclose(to_numpy(x.prod()), a.prod())
    np.testing.assert_allclose(to_numpy(x.prod(1, keepdim=True)), a.prod(1, keepdims=True))
    assert ember.tensor([1, 2], dtype=ember.int32).prod().dtype is ember.int64
    assert ember.tensor([True, False]).prod().item() == 0
    assert ember.tensor([2, 3]).prod(dtype=ember.float64).dtype is ember.float64
    assert ember.tensor(3.0).prod(0).item() == 3.0
    with pytest.raises(TypeError, match=r"prod\(\) received an invalid combination of "
                                        r"arguments"):
        x.prod((0, 1))


# -- var, std -----------------------------------------------------------------------------------


def test_var_errors_and_edge_cases():
    with pytest.raises(RuntimeError, match="std and var only support floating point and "
                                           "complex dtypes"):
        ember.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="std and var only support"):
        ember.tensor([1, 2]).std()
    with pytest.raises(RuntimeError, match="var_mean only support floating point"):
        ember.var_mean(ember.tensor([1, 2]))
    with pytest.raises(TypeError):
        ember.var(randn64(3, rng=RNG), unbiased=False, correction=1)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isnan(ember.ones(1).var().item())
    with pytest.warns(UserWarning):
        assert math.isinf(ember.tensor([1.0, 2.0]).var(correction=3).item())


def test_std_gradient_of_constant_is_zero_not_nan():
    x = t64([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])
    g = grad_of(lambda v: v.std(1), x)
    assert np.isfinite(g).all()
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])


# -- max, min, amax, amin, argmax, argmin -------------------------------------------------------

def test_max_min_full_and_empty():
    a = RNG.standard_normal((3, 4))
    x = t64(a)
    assert x.max().shape == () and x.max().item() == a.max()
    assert ember.min(x).item() == a.min()
    msg = ("max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
           "reduction dim with the 'dim' argument.")
    with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        ember.zeros(0).max()
    with pytest.raises(RuntimeError, match=r"min\(\): Expected reduction dim to be specified"):
        ember.zeros(2, 0).min()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero "
                                         r"size\."):
        ember.zeros(0, 3).max(0)
    r = ember.zeros(0, 3).max(1)
    assert r.values.shape == (0,) and r.indices.dtype is ember.int64


def test_max_with_dim_is_a_named_tuple():
    x = t64([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    r = x.max(1)
    assert isinstance(r, tuple) and isinstance(r, return_types.max) and len(r) == 2
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    values, indices = r
    assert values is r.values and indices is r[1] and r[0] is r.values
    np.testing.assert_array_equal(to_numpy(values), [3.0, 2.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])  # the first of the ties
    assert indices.dtype is ember.int64
    assert repr(r).startswith("ember.return_types.max(\nvalues=")
    k = ember.min(x, 0, keepdim=True)
    assert type(k).__name__ == "min" and k.values.shape == (1, 3)
    np.testing.assert_array_equal(k.indices.numpy(), [[0, 1, 1]])
    s = ember.tensor(3.0).max(0)
    assert s.values.shape == () and s.indices.item() == 0
    back = pickle.loads(pickle.dumps(x.detach().max(1)))
    assert type(back) is return_types.max and back.indices.tolist() == [1, 0]


def test_max_propagates_nan_and_int_bool():
    x = ember.tensor([[1.0, NAN, 3.0], [4.0, 5.0, 6.0]])
    assert math.isnan(x.max().item()) and math.isnan(x.amin().item())
    r = x.max(1)
    assert math.isnan(r.values[0].item()) and r.indices.tolist() == [1, 2]
    i = ember.tensor([[3, 7], [9, 1]])
    assert i.max().dtype is ember.int64 and i.max().item() == 9
    assert i.min(1).values.tolist() == [3, 1]
    assert ember.tensor([True, False]).amax().item() is True


def test_full_max_gradient_is_split_among_ties():
    x = t64([[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]])
    np.testing.assert_allclose(grad_of(lambda v: v.max(), x), [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]])
    np.testing.assert_allclose(grad_of(lambda v: v.amax(1), x), [[0, 0.5, 0.5], [1, 0, 0]])
    np.testing.assert_allclose(grad_of(lambda v: v.amin(), t64([1.0, 1.0, 2.0])), [0.5, 0.5, 0])
    # with a dim the gradient goes to the returned index only
    np.testing.assert_allclose(grad_of(lambda v: v.max(1).values, x), [[0, 1, 0], [1, 0, 0]])


def test_amax_amin_dims():
    a = RNG.standard_normal((2, 3, 4))
    x = t64(a)
    np.testing.assert_array_equal(to_numpy(x.amax((0, 2))), a.max((0, 2)))
    np.testing.assert_array_equal(to_numpy(ember.amin(x, -1, True)), a.min(-1, keepdims=True))
    np.testing.assert_array_equal(to_numpy(x.amax(dim=())), a.max())
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be "
                                           r"specified for input\.numel\(\) == 0"):
        ember.zeros(0).amax()
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 0 to have non-zero"):
        ember.zeros(0, 2).amin(0)
    assert ember.zeros(0, 2).amax(1).shape == (0,)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(512, 27), (8, 4, 16, 16), (300, 2), (64, 32), (64, 33)])
def test_amax_amin_along_short_rows_are_numpy_s(dtype, shape):
    """Short last axes are reduced down the columns of a transposed copy (NumPy loops per
    row otherwise): the same values, NaN propagating, keepdim, strided inputs, logsumexp, and
    gradients shared evenly between ties."""
    rng = np.random.default_rng(shape[-1])
    a = (rng.standard_normal(shape) * 50).astype(dtype) if dtype != "bool" else \
        rng.random(shape) < 0.5
    if dtype.startswith("float"):
        a.flat[7] = np.nan
        a.flat[-1] = -np.inf
    x = ember.from_numpy(a)
    for keepdim in (False, True):
        np.testing.assert_array_equal(x.amax(-1, keepdim).numpy(), a.max(-1, keepdims=keepdim))
        np.testing.assert_array_equal(x.amin(-1, keepdim).numpy(), a.min(-1, keepdims=keepdim))
    np.testing.assert_array_equal(x.mT.amax(-2).numpy(), a.max(-1))  # not contiguous
    np.testing.assert_array_equal(x[..., ::2].amin(-1).numpy(), a[..., ::2].min(-1))
    if dtype in ("float32", "float64"):
        with np.errstate(invalid="ignore", over="ignore"):
            b = a.astype(np.float64)
            m = b.max(-1, keepdims=True)
            want = np.log(np.exp(b - np.where(np.isfinite(m), m, 0)).sum(-1)) + \
                np.where(np.isfinite(m), m, 0)[..., 0]
        np.testing.assert_allclose(x.logsumexp(-1).numpy(), want, rtol=1e-5)
        ties = ember.tensor(np.ones(shape, dtype), requires_grad=True)
        ties.amax(-1).sum().backward()
        np.testing.assert_allclose(ties.grad.numpy(), np.full(shape, 1 / shape[-1]), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(512, 27), (8, 4, 16, 16), (300, 2), (64, 128), (40, 129)])
def test_sum_and_mean_along_short_rows_match_a_float64_sum(dtype, shape):
    """Short last axes are summed by einsum (NumPy's sum loops per row there): as close to the
    exact sum as NumPy's own, keepdim and strided inputs too, the same bits for a row whatever
    batch it is in, with gradients."""
    rng = np.random.default_rng(shape[-1])
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    exact = a.astype(np.float64).sum(-1)
    x = ember.from_numpy(a)
    eps = np.finfo(dtype).eps
    bound = 4 * eps * np.abs(a).astype(np.float64).sum(-1) + np.finfo(dtype).tiny
    for got in (x.sum(-1).numpy(), x.sum(-1, keepdim=True).numpy()[..., 0],
                x.mean(-1).numpy() * shape[-1], x.sum(dim=(-1,)).numpy()):
        assert got.dtype == a.dtype
        assert (np.abs(got - exact) <= bound).all()
    np.testing.assert_allclose(x.mT.sum(-2).numpy(), exact, rtol=1e-5 if dtype == "float32"
                               else 1e-12, atol=1e-4)
    np.testing.assert_allclose(x[..., ::2].sum(-1).numpy(), a[..., ::2].sum(-1), rtol=1e-5)
    # a row sums to the same bits alone, in a smaller batch and as a 1-d tensor
    rows = a.reshape(-1, shape[-1])
    whole = x.reshape(-1, shape[-1]).sum(-1).numpy()
    assert whole.tolist() == [ember.from_numpy(r.copy()).sum().item() for r in rows[:5]] + \
        whole[5:].tolist()
    np.testing.assert_array_equal(ember.from_numpy(rows[:3].copy()).mean(-1).numpy(),
                                  x.reshape(-1, shape[-1]).mean(-1).numpy()[:3])
    t = ember.tensor(a, requires_grad=True)
    t.mean(-1).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.full(shape, 1 / shape[-1]), rtol=1e-6)


def test_aminmax():
    x = t64([[1.0, 5.0, -2.0], [0.0, 4.0, 9.0]])
    r = ember.aminmax(x)
    assert r._fields == ("min", "max") and r.min.item() == -2.0 and r.max.item() == 9.0
    r = x.aminmax(dim=1, keepdim=True)
    np.testing.assert_array_equal(to_numpy(r.min), [[-2.0], [0.0]])
    mn, mx = r
    assert mx.shape == (2, 1)
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        ember.aminmax(ember.zeros(0))


def test_argmax_argmin():
    x = ember.tensor([[1.0, 7.0, 7.0], [9.0, 2.0, 9.0]])
    assert x.argmax().item() == 3 and x.argmax().shape == () and x.argmax().dtype is ember.int64
    assert x.argmin().item() == 0
    assert x.argmax(1).tolist() == [1, 0]  # the first among ties
    assert x.argmin(0, keepdim=True).tolist() == [[0, 1, 0]]
    assert x.argmax(keepdim=True).shape == (1, 1)
    assert ember.tensor(5.0).argmax(0).item() == 0
    assert ember.tensor([1.0, NAN, 3.0]).argmax().item() == 1
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified "
                                         r"for input\.numel\(\) == 0\."):
        ember.zeros(0).argmax()
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have "
                                         r"non-zero size\."):
        ember.zeros(0, 3).argmin(0)


# -- logsumexp, norm ----------------------------------------------------------------------------

def test_logsumexp_values_and_stability():
    a = RNG.standard_normal((3, 4))
    x = t64(a)
    np.testing.assert_allclose(to_numpy(x.logsumexp(1)), np.log(np.exp(a).sum(1)))
    np.testing.assert_allclose(to_numpy(ember.logsumexp(x, (0, 1), keepdim=True)),
                               np.log(np.exp(a).sum(keepdims=True)))
    big = ember.tensor([1000.0, 1000.0])
    assert ember.logsumexp(big, 0).item() == pytest.approx(1000 + math.log(2))
    assert ember.tensor([-math.inf, -math.inf]).logsumexp(0).item() == -math.inf
    assert ember.tensor([math.inf, 1.0]).logsumexp(0).item() == math.inf
    assert ember.zeros(0, 2).logsumexp(0).tolist() == [-math.inf, -math.inf]
    i = ember.tensor([1, 2]).logsumexp(0)
    assert i.dtype is ember.float32 and i.item() == pytest.approx(math.log(math.e + math.e ** 2))
    with pytest.raises(TypeError):
        ember.logsumexp(x)  # dim is required, as in PyTorch


# p = 2, 1, 3, 0.5, inf, -inf, 0 (and their gradients): the generic tests' samples
@pytest.mark.parametrize("p", [-1])
def test_vector_norm_values(p):
    a = RNG.standard_normal((3, 4))
    x = t64(a)
    absx = np.abs(a)
    if p == 0:
        ref = (a != 0).sum(1).astype(float)
    elif math.isinf(p):
        ref = absx.max(1) if p > 0 else absx.min(1)
    else:
        ref = (absx ** p).sum(1) ** (1 / p)
    np.testing.assert_allclose(to_numpy(x.norm(p, 1)), ref)
    np.testing.assert_allclose(to_numpy(ember.norm(x, p=p, dim=1, keepdim=True)), ref[:, None])


def test_norm_defaults_and_errors():
    a = RNG.standard_normal((2, 3, 4))
    x = t64(a)
    np.testing.assert_allclose(to_numpy(x.norm()), np.sqrt((a ** 2).sum()))
    np.testing.assert_allclose(to_numpy(x.norm("fro", (1, 2))), np.sqrt((a ** 2).sum((1, 2))))
    np.testing.assert_allclose(to_numpy(x.norm(dim=0)), np.sqrt((a ** 2).sum(0)))
    assert ember.zeros(0).norm().item() == 0.0
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        ember.tensor([3, 4]).norm()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.zeros(0).norm(math.inf)
    assert ember.tensor([3.0, 4.0]).norm(dtype=ember.float64).dtype is ember.float64
    np.testing.assert_allclose(to_numpy(ember.norm(x[0], "nuc")), np.linalg.norm(a[0], "nuc"))


def test_norm_gradient_at_zero_is_zero():
    for p in (2, 3, 1.5):
        x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
        x.norm(p).backward()
        np.testing.assert_array_equal(to_numpy(x.grad), [0.0, 0.0, 0.0])
    x = t64([[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_allclose(grad_of(lambda v: v.norm(dim=1), x), [[0, 0], [0.6, 0.8]])
    x = t64([1.0, 2.0])
    x.norm(0).backward()
    assert x.grad is None or not x.grad.numpy().any()  # PyTorch leaves it undefined


# -- all, any, count_nonzero --------------------------------------------------------------------


# -- cumulative ops -----------------------------------------------------------------------------

def test_cumsum_cumprod_values_and_dtypes():
    a = RNG.standard_normal((3, 4))
    x = t64(a)
    np.testing.assert_allclose(to_numpy(x.cumsum(1)), a.cumsum(1))
    np.testing.assert_allclose(to_numpy(ember.cumprod(x, 0)), a.cumprod(0))
    np.testing.assert_allclose(to_numpy(x.cumsum(-1)), a.cumsum(-1))
    assert ember.tensor([1, 2], dtype=ember.int32).cumsum(0).dtype is ember.int64
    assert ember.tensor([True, True]).cumprod(0).dtype is ember.int64
    assert ember.tensor([1, 2]).cumsum(0, dtype=ember.float32).dtype is ember.float32
    assert ember.tensor(3.0).cumsum(0).item() == 3.0
    with pytest.raises(TypeError):
        ember.cumsum(x)  # dim is required
    y = ember.tensor([1.0, 2.0, 3.0])
    y.cumsum_(0)
    assert y.tolist() == [1.0, 3.0, 6.0]


def test_cummax_cummin():
    x = ember.tensor([1.0, 1.0, 0.0, 2.0, 2.0, 1.0])
    r = x.cummax(0)
    assert type(r).__name__ == "cummax" and r._fields == ("values", "indices")
    assert r.values.tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    assert r.indices.tolist() == [0, 1, 1, 3, 4, 4]  # ties move the index forward
    m = ember.cummin(x, 0)
    assert m.values.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert m.indices.tolist() == [0, 1, 2, 2, 2, 2]
    n = ember.tensor([1.0, 1.0, NAN, 2.0, NAN, 1.0]).cummax(0)
    assert n.indices.tolist() == [0, 1, 2, 2, 4, 4]
    assert ember.tensor([[3, 1], [2, 5]]).cummax(0).values.tolist() == [[3, 1], [3, 5]]
    np.testing.assert_allclose(grad_of(lambda v: v.cummax(0).values, t64([3.0, 1.0, 4.0])),
                               [2.0, 0.0, 1.0])
    y = distinct(3, 4)
    assert gradcheck(lambda v: v.cummax(1).values, (y,))
    assert gradcheck(lambda v: v.cummin(0).values, (y,))


def test_logcumsumexp_does_not_overflow():
    # values and gradients: the generic tests (whose large values stay below exp's overflow)
    big = ember.tensor([1000.0, 1000.0]).logcumsumexp(0)
    assert big.tolist() == pytest.approx([1000.0, 1000 + math.log(2)])


# -- sorting and selection ----------------------------------------------------------------------

def test_sort_is_stable_and_named():
    x = ember.tensor([2.0, 1.0, 2.0, 1.0, NAN, 0.5])
    r = x.sort()
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    assert r.indices.tolist() == [5, 1, 3, 0, 2, 4]  # NaN sorts last
    d = ember.sort(x, descending=True, stable=True)
    assert d.indices.tolist() == [4, 0, 2, 1, 3, 5]  # NaN first, ties keep their order
    assert x.argsort(descending=True).tolist() == [4, 0, 2, 1, 3, 5]
    m = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
    assert m.sort(0).values.tolist() == [[1.0, 1.0], [3.0, 2.0]]
    assert ember.msort(m).tolist() == [[1.0, 1.0], [3.0, 2.0]]
    assert ember.tensor([True, False, True]).sort().indices.tolist() == [1, 0, 2]
    s = ember.tensor(3.0).sort()
    assert s.values.shape == () and s.indices.item() == 0


def test_topk_kthvalue():
    x = ember.tensor([[1.0, 5.0, 3.0, 4.0], [8.0, 6.0, 7.0, 0.0]])
    r = x.topk(2)
    assert type(r).__name__ == "topk"
    assert r.values.tolist() == [[5.0, 4.0], [8.0, 7.0]] and r.indices.tolist() == [[1, 3], [0, 2]]
    s = ember.topk(x, 3, dim=1, largest=False)
    assert s.values.tolist() == [[1.0, 3.0, 4.0], [0.0, 6.0, 7.0]]
    assert x.topk(1, 0).indices.tolist() == [[1, 1, 1, 0]]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)
    k = x.kthvalue(2)
    assert type(k).__name__ == "kthvalue"
    assert k.values.tolist() == [3.0, 6.0] and k.indices.tolist() == [2, 1]
    assert ember.kthvalue(x, 1, 0, keepdim=True).values.shape == (1, 4)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for "
                                           r"dimension 1"):
        x.kthvalue(5)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 1 to have "
                                         r"non-zero size"):
        ember.zeros(2, 0).kthvalue(1, 1)


def test_median():
    a = np.array([[4.0, 1.0, 3.0, 2.0], [9.0, 7.0, 8.0, 6.0]])
    x = ember.tensor(a)
    assert x.median().shape == () and x.median().item() == 4.0  # lower median of 8 values
    r = x.median(1)
    assert type(r).__name__ == "median"
    assert r.values.tolist() == [2.0, 7.0] and r.indices.tolist() == [3, 1]
    assert ember.median(x, 0, keepdim=True).values.shape == (1, 4)
    n = ember.tensor([[1.0, NAN, 3.0, NAN], [1.0, 2.0, 3.0, 4.0]])
    assert math.isnan(n.median().item())
    m = n.median(1)
    assert math.isnan(m.values[0].item()) and m.indices.tolist() == [1, 1]
    assert math.isnan(ember.zeros(0).median().item())
    assert ember.tensor([3, 1, 2, 5]).median().item() == 2
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have "
                                         r"non-zero size"):
        ember.zeros(0, 3).median(0)
    # full median: ties share the gradient; with a dim it goes to the index
    np.testing.assert_allclose(grad_of(lambda v: v.median(), t64([1.0, 2.0, 2.0, 5.0])),
                               [0, 0.5, 0.5, 0])


def test_nanmedian():
    x = ember.tensor([[NAN, 1.0, NAN, 2.0, 3.0], [5.0, 4.0, 3.0, 2.0, 1.0]])
    assert x.nanmedian().item() == 2.0
    r = x.nanmedian(1)
    assert type(r).__name__ == "nanmedian"
    assert r.values.tolist() == [2.0, 3.0] and r.indices.tolist() == [3, 2]
    assert math.isnan(ember.tensor([NAN, NAN]).nanmedian().item())
    assert math.isnan(ember.full((1, 3), NAN).nanmedian(1).values.item())


def test_mode():
    x = ember.tensor([[1.0, 3.0, 2.0, 3.0, 2.0, 0.0], [5.0, 5.0, 1.0, 5.0, 1.0, 1.0]])
    r = x.mode()
    assert type(r).__name__ == "mode"
    assert r.values.tolist() == [2.0, 1.0]     # the smallest of the most frequent
    assert r.indices.tolist() == [4, 5]        # its last occurrence
    assert ember.mode(x, 0, keepdim=True).values.shape == (1, 6)
    assert ember.tensor(2.0).mode().indices.item() == 0
    assert ember.tensor([4, 4, 1]).mode(0).values.item() == 4
    np.testing.assert_array_equal(grad_of(lambda v: v.mode(1).values, t64(to_numpy(x))),
                                  [[0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]])


def test_quantile_shapes_nan_and_errors():
    x = randn64(2, 3, rng=RNG)
    assert x.quantile(0.5, keepdim=True).shape == (1, 1)
    q = ember.tensor([0.5, 0.2], dtype=ember.float64)
    assert x.quantile(q, dim=1, keepdim=True).shape == (2, 2, 1)
    assert x.quantile(ember.tensor(0.5, dtype=ember.float64), dim=0).shape == (3,)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q tensor must be same dtype as the "
                                           r"input tensor"):
        x.quantile(ember.tensor([0.5, 0.2]))  # float32 q, float64 input (PyTorch's error)
    n = ember.tensor([[1.0, NAN, 2.0], [NAN, NAN, NAN], [1.0, 2.0, 4.0]])
    assert math.isnan(n.quantile(0.5, dim=1)[0].item())
    r = n.nanquantile(0.5, dim=1)
    assert r[0].item() == 1.5 and math.isnan(r[1].item()) and r[2].item() == 2.0
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but "
                                           r"got 1.5"):
        x.quantile(1.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be either float "
                                           r"or double dtype"):
        ember.tensor([1, 2]).quantile(0.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) interpolation must be one of"):
        x.quantile(0.5, interpolation="bad")
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be non-empty"):
        ember.zeros(0).quantile(0.5)


# -- unique -------------------------------------------------------------------------------------

def test_unique():
    x = ember.tensor([[3, 1, 3], [2, 1, 1]])
    u = x.unique()
    assert u.tolist() == [1, 2, 3] and u.dtype is ember.int64
    u, inv, cnt = ember.unique(x, return_inverse=True, return_counts=True)
    assert inv.tolist() == [[2, 0, 2], [1, 0, 0]] and cnt.tolist() == [3, 1, 2]
    assert inv.dtype is ember.int64 and cnt.dtype is ember.int64
    u, cnt = x.unique(return_counts=True)
    assert cnt.tolist() == [3, 1, 2]
    rows = ember.tensor([[1, 2], [1, 2], [0, 5]])
    u, inv, cnt = rows.unique(dim=0, return_inverse=True, return_counts=True)
    assert u.tolist() == [[0, 5], [1, 2]] and inv.tolist() == [1, 1, 0] and cnt.tolist() == [1, 2]
    f = ember.tensor([3.0, NAN, 1.0, NAN])
    assert len(f.unique()) == 4  # every NaN is distinct


def test_unique_consecutive():
    x = ember.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    assert x.unique_consecutive().tolist() == [1, 2, 3, 1, 2]
    u, inv, cnt = ember.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4] and cnt.tolist() == [2, 2, 1, 2, 1]
    m = ember.tensor([[1, 1], [1, 1], [2, 2]])
    u, inv, cnt = m.unique_consecutive(dim=0, return_inverse=True, return_counts=True)
    assert u.tolist() == [[1, 1], [2, 2]] and inv.tolist() == [0, 0, 1] and cnt.tolist() == [2, 1]
    u, inv = ember.unique_consecutive(m, return_inverse=True)
    assert inv.shape == (3, 2)


# -- devices ------------------------------------------------------------------------------------

def test_reductions_keep_the_device(testdev):
    # every reduction's results on the test device: the generic tests; here a backward there
    x = ember.tensor([[1.0, 4.0, 2.0], [3.0, 0.0, 5.0]], device=testdev, requires_grad=True)
    x.max(1).values.sum().backward()
    assert x.grad.device == testdev and x.grad.tolist() == [[0, 1, 0], [0, 0, 1]]


def test_two_tensor_max_on_mixed_devices_raises(testdev):
    a = ember.tensor([1.0, 2.0])
    b = ember.tensor([3.0, 0.0], device=testdev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.max(a, b)


# -- properties ---------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       data=st.data())
def test_reductions_agree_with_numpy(shape, seed, data):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x = ember.tensor(a)
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    keepdim = data.draw(st.booleans())
    axis = tuple(dims) if dims else None
    np.testing.assert_allclose(to_numpy(x.sum(dims, keepdim)), a.sum(axis, keepdims=keepdim),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(x.amax(dims, keepdim)), a.max(axis, keepdims=keepdim))
    # logsumexp's dim=[] reduces all but, as in PyTorch, cannot be squeezed to 0-dim: name them
    np.testing.assert_allclose(to_numpy(x.logsumexp(dims or list(range(len(shape))), keepdim)),
                               np.log(np.exp(a).sum(axis, keepdims=keepdim)), rtol=1e-5,
                               atol=1e-6)
    assert x.sum(dims, keepdim).dtype is ember.float32
