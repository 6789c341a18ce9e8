"""Reductions against PyTorch: values, dtypes, shapes, chosen indices, named-tuple fields,
gradients and the cases that raise."""

import math

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")

NAN = float("nan")
RNG = np.random.default_rng(7)

DISTINCT = (RNG.permutation(24) + RNG.uniform(0.1, 0.9, 24)).reshape(2, 3, 4) - 12
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 0.0, 2.0], [5.0, 1.0, 5.0, 1.0]])
WITH_NAN = np.array([[1.0, NAN, 3.0, 2.0], [4.0, 0.0, 2.0, 1.0], [NAN, NAN, 1.0, 0.0]])
ZEROS = np.array([[1.5, 0.0, 0.5, 0.9], [0.0, 0.7, -1.2, 0.0], [0.3, 0.7, 2.0, 1.1]])
INTS = np.array([[3, -1, 4], [1, 5, 9]], dtype=np.int64)
INT32 = INTS.astype(np.int32)
BOOLS = np.array([[True, False, True], [True, True, True]])
UINT8 = np.array([[0, 2], [1, 3]], dtype=np.uint8)


def _dtype_name(dt):
    return str(dt).split(".")[-1]


def assert_same(e, t, what=""):
    """``e`` (ember) and ``t`` (torch) results agree in structure, dtype, shape and values."""
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t), what
        if hasattr(t, "_fields") or type(t).__module__ == "torch.return_types":
            fields = [f for f in dir(t) if f in ("values", "indices", "min", "max")]
            assert type(e).__name__ == type(t).__name__, what
            for f in fields:
                assert_same(getattr(e, f), getattr(t, f), f"{what}.{f}")
        for a, b in zip(e, t):
            assert_same(a, b, what)
        return
    assert _dtype_name(e.dtype) == _dtype_name(t.dtype), f"{what}: {e.dtype} vs {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: {tuple(e.shape)} vs {tuple(t.shape)}"
    ev, tv = e.detach().numpy(), t.detach().numpy()
    if ev.dtype.kind == "f":
        tol = 1e-5 if ev.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(ev, tv, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(ev, tv, err_msg=what)


def run_both(fn, array, requires_grad=False):
    e = ember.tensor(array, requires_grad=requires_grad)
    t = torch.tensor(array, requires_grad=requires_grad)
    return (e, fn(ember, e)), (t, fn(torch, t))


CASES = {
    # name: (fn(module, x), input)
    "sum": (lambda m, x: m.sum(x), DISTINCT),
    "sum_dims": (lambda m, x: m.sum(x, (0, 2), keepdim=True), DISTINCT),
    "sum_list": (lambda m, x: x.sum([-1]), DISTINCT),
    "sum_int32": (lambda m, x: m.sum(x, 1), INT32),
    "sum_bool": (lambda m, x: x.sum(), BOOLS),
    "sum_dtype": (lambda m, x: x.sum(0, dtype=m.float64), INT32),
    "sum_empty": (lambda m, x: m.sum(x[:0]), DISTINCT),
    "mean": (lambda m, x: x.mean((1, 2)), DISTINCT),
    "mean_dtype": (lambda m, x: x.mean(dtype=m.float64), INTS),
    "nansum": (lambda m, x: m.nansum(x, 1), WITH_NAN),
    "nanmean": (lambda m, x: x.nanmean(0, keepdim=True), WITH_NAN),
    "prod": (lambda m, x: x.prod(), ZEROS),
    "prod_dim": (lambda m, x: m.prod(x, 1, keepdim=True), ZEROS),
    "prod_int": (lambda m, x: x.prod(1), INT32),
    "var": (lambda m, x: x.var(), DISTINCT),
    "var_unbiased_pos": (lambda m, x: m.var(x, 1, False, True), DISTINCT),
    "var_old_api": (lambda m, x: m.var(x, False), DISTINCT),
    "var_correction": (lambda m, x: x.var(dim=(0, 2), correction=2), DISTINCT),
    "std": (lambda m, x: x.std(-1), DISTINCT),
    "std_keyword": (lambda m, x: m.std(x, dim=0, unbiased=False, keepdim=True), DISTINCT),
    "var_mean": (lambda m, x: m.var_mean(x, 1), DISTINCT),
    "std_mean": (lambda m, x: m.std_mean(x, dim=(0, 1), correction=0), DISTINCT),
    "max": (lambda m, x: x.max(), TIES),
    "max_dim_ties": (lambda m, x: m.max(x, 1), TIES),
    "min_dim_ties": (lambda m, x: x.min(0, keepdim=True), TIES),
    "max_nan": (lambda m, x: x.max(1), WITH_NAN),
    "min_nan": (lambda m, x: m.min(x), WITH_NAN),
    "max_int": (lambda m, x: x.max(0), INTS),
    "max_bool": (lambda m, x: x.max(), BOOLS),
    "max_two": (lambda m, x: m.max(x, x.flip(0)), TIES),
    "amax": (lambda m, x: x.amax((0, 2)), DISTINCT),
    "amin_keep": (lambda m, x: m.amin(x, -1, True), TIES),
    "aminmax": (lambda m, x: m.aminmax(x), TIES),
    "aminmax_dim": (lambda m, x: x.aminmax(dim=1, keepdim=True), TIES),
    "argmax": (lambda m, x: x.argmax(), TIES),
    "argmax_dim": (lambda m, x: m.argmax(x, 1), TIES),
    "argmin_keep": (lambda m, x: x.argmin(0, keepdim=True), TIES),
    "argmax_flat_keep": (lambda m, x: x.argmax(keepdim=True), TIES),
    "argmax_nan": (lambda m, x: x.argmax(1), WITH_NAN),
    "logsumexp": (lambda m, x: m.logsumexp(x, 1), DISTINCT),
    "logsumexp_dims": (lambda m, x: x.logsumexp((0, 2), keepdim=True), DISTINCT),
    "logsumexp_int": (lambda m, x: m.logsumexp(x, 0), INTS),
    "norm": (lambda m, x: x.norm(), DISTINCT),
    "norm_p1_dim": (lambda m, x: m.norm(x, 1, 1), DISTINCT),
    "norm_inf": (lambda m, x: x.norm(float("inf"), (0, 2)), DISTINCT),
    "norm_neg_inf": (lambda m, x: x.norm(-float("inf")), DISTINCT),
    "norm_0": (lambda m, x: x.norm(0, 1, keepdim=True), ZEROS),
    "norm_3": (lambda m, x: m.norm(x, p=3, dim=2), DISTINCT),
    "norm_half": (lambda m, x: x.norm(0.5), ZEROS),
    "norm_fro_dims": (lambda m, x: x.norm("fro", (1, 2)), DISTINCT),
    "norm_nuc": (lambda m, x: m.norm(x[0], "nuc"), DISTINCT),
    "norm_dtype": (lambda m, x: x.norm(dtype=m.float64), DISTINCT.astype(np.float32)),
    "all": (lambda m, x: x.all(), BOOLS),
    "all_dim": (lambda m, x: m.all(x, 1), INTS),
    "any_dims": (lambda m, x: x.any((0, 1), keepdim=True), ZEROS),
    "all_uint8": (lambda m, x: x.all(1), UINT8),
    "count_nonzero": (lambda m, x: m.count_nonzero(x), ZEROS),
    "count_nonzero_dims": (lambda m, x: x.count_nonzero((0, 1)), ZEROS),
    "cumsum": (lambda m, x: x.cumsum(1), DISTINCT),
    "cumsum_int32": (lambda m, x: m.cumsum(x, 0), INT32),
    "cumsum_dtype": (lambda m, x: x.cumsum(1, dtype=m.float64), INTS),
    "cumprod": (lambda m, x: m.cumprod(x, 1), ZEROS),
    "cumprod_bool": (lambda m, x: x.cumprod(1), BOOLS),
    "cummax_ties": (lambda m, x: x.cummax(1), TIES),
    "cummin_ties": (lambda m, x: m.cummin(x, 0), TIES),
    "cummax_nan": (lambda m, x: x.cummax(1), WITH_NAN),
    "logcumsumexp": (lambda m, x: x.logcumsumexp(2), DISTINCT),
    "sort": (lambda m, x: x.sort(), DISTINCT),
    "sort_stable_ties": (lambda m, x: m.sort(x, dim=1, stable=True), TIES),
    "sort_desc_stable": (lambda m, x: x.sort(dim=0, descending=True, stable=True), TIES),
    "sort_nan": (lambda m, x: x.sort(stable=True), WITH_NAN),
    "sort_nan_desc": (lambda m, x: x.sort(descending=True, stable=True), WITH_NAN),
    "argsort": (lambda m, x: m.argsort(x, dim=1, stable=True), TIES),
    "msort": (lambda m, x: m.msort(x), DISTINCT),
    "topk": (lambda m, x: x.topk(2), DISTINCT),
    "topk_small": (lambda m, x: m.topk(x, 2, dim=0, largest=False), DISTINCT),
    "kthvalue": (lambda m, x: x.kthvalue(2, 1, keepdim=True), DISTINCT),
    "median": (lambda m, x: x.median(), DISTINCT),
    "median_ties": (lambda m, x: m.median(x), TIES),
    "median_dim": (lambda m, x: x.median(2), DISTINCT),
    "median_nan": (lambda m, x: x.median(1), WITH_NAN),
    "median_full_nan": (lambda m, x: x.median(), WITH_NAN),
    "nanmedian": (lambda m, x: x.nanmedian(), WITH_NAN),
    "nanmedian_dim": (lambda m, x: m.nanmedian(x, 0, keepdim=True), WITH_NAN),
    "mode": (lambda m, x: x.mode(1), TIES),
    "mode_int": (lambda m, x: m.mode(x, 0), np.array([[1, 2], [1, 3], [2, 3], [2, 3]])),
    "quantile": (lambda m, x: x.quantile(0.3), DISTINCT),
    "quantile_q": (lambda m, x: m.quantile(x, m.tensor([0.1, 0.5, 0.75], dtype=m.float64),
                                           dim=1, keepdim=True), DISTINCT),
    "quantile_nearest": (lambda m, x: x.quantile(0.5, dim=2, interpolation="nearest"),
                         DISTINCT),
    "quantile_midpoint": (lambda m, x: x.quantile(0.4, dim=0, interpolation="midpoint"),
                          DISTINCT),
    "quantile_nan": (lambda m, x: x.quantile(0.5, dim=1), WITH_NAN),
    "nanquantile": (lambda m, x: m.nanquantile(x, 0.5, dim=1), WITH_NAN),
    "unique": (lambda m, x: m.unique(x, return_inverse=True, return_counts=True), TIES),
    "unique_plain": (lambda m, x: x.unique(), INTS),
    "unique_dim": (lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
                   np.array([[1, 2], [1, 2], [0, 5]])),
    "unique_consecutive": (lambda m, x: m.unique_consecutive(
        x, return_inverse=True, return_counts=True), np.array([1, 1, 2, 2, 3, 1, 1, 2])),
    "unique_consecutive_dim": (lambda m, x: x.unique_consecutive(
        dim=0, return_counts=True), np.array([[1, 1], [1, 1], [2, 2]])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_matches_torch(name):
    fn, array = CASES[name]
    (_, e), (_, t) = run_both(fn, array)
    assert_same(e, t, name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_dtypes_are_kept(dtype):
    a = DISTINCT.astype(dtype)
    for fn in (lambda m, x: x.sum(1), lambda m, x: x.var(0), lambda m, x: x.norm(),
               lambda m, x: x.logsumexp(2), lambda m, x: x.max(1), lambda m, x: x.cumprod(2),
               lambda m, x: x.median(), lambda m, x: x.quantile(0.5, dim=0)):
        (_, e), (_, t) = run_both(fn, a)
        assert_same(e, t, dtype)


GRAD_CASES = {
    "sum": (lambda m, x: x.sum((0, 2)), DISTINCT),
    "mean": (lambda m, x: x.mean(1, keepdim=True), DISTINCT),
    "nansum": (lambda m, x: x.nansum(1), WITH_NAN),
    "prod_zeros": (lambda m, x: x.prod(), ZEROS),
    "prod_zeros_dim": (lambda m, x: x.prod(1), ZEROS),
    "prod_zeros_dim0": (lambda m, x: x.prod(0), ZEROS),
    "var": (lambda m, x: x.var(1, correction=0), DISTINCT),
    "std_constant": (lambda m, x: x.std(1), np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])),
    "max_full_ties": (lambda m, x: x.max(), TIES),
    "min_full_ties": (lambda m, x: x.min(), TIES),
    "max_dim_ties": (lambda m, x: x.max(1).values, TIES),
    "amax_ties": (lambda m, x: x.amax(1), TIES),
    "amin_ties": (lambda m, x: x.amin((0, 1)), TIES),
    "logsumexp": (lambda m, x: x.logsumexp(1), DISTINCT),
    "norm_zero_row": (lambda m, x: x.norm(dim=1), np.array([[0.0, 0.0], [3.0, 4.0]])),
    "norm_inf_ties": (lambda m, x: x.norm(float("inf"), 1), np.array([[-3.0, 3.0, 1.0]])),
    "norm_3": (lambda m, x: x.norm(3), DISTINCT),
    "norm_half": (lambda m, x: x.norm(0.5, 1), ZEROS),
    "norm_1": (lambda m, x: x.norm(1), ZEROS),
    "cumsum": (lambda m, x: x.cumsum(0), DISTINCT),
    "cumprod_zeros": (lambda m, x: x.cumprod(1), ZEROS),
    "cummax": (lambda m, x: x.cummax(1).values, TIES),
    "logcumsumexp": (lambda m, x: x.logcumsumexp(1), DISTINCT),
    "sort": (lambda m, x: x.sort(1).values, DISTINCT),
    "topk": (lambda m, x: x.topk(2, 0).values, DISTINCT),
    "kthvalue": (lambda m, x: x.kthvalue(2).values, DISTINCT),
    "median_full_ties": (lambda m, x: x.median(), TIES),
    "median_dim": (lambda m, x: x.median(1).values, DISTINCT),
    "quantile": (lambda m, x: x.quantile(0.3, dim=2), DISTINCT),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_torch(name):
    fn, array = GRAD_CASES[name]
    array = np.asarray(array, dtype=np.float64)
    (ex, e), (tx, t) = run_both(fn, array, requires_grad=True)
    weights = RNG.standard_normal(tuple(t.shape))
    (e * ember.tensor(weights)).sum().backward()
    (t * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12,
                               err_msg=name)


def test_grad_fn_names_match_torch():
    a = DISTINCT
    for fn in (lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.mean(), lambda x: x.mean(1),
               lambda x: x.prod(), lambda x: x.prod(1), lambda x: x.var(1), lambda x: x.std(),
               lambda x: x.max(), lambda x: x.max(1).values, lambda x: x.amax(0),
               lambda x: x.logsumexp(1), lambda x: x.norm(), lambda x: x.cumsum(0),
               lambda x: x.cumprod(0), lambda x: x.cummax(0).values, lambda x: x.sort().values,
               lambda x: x.topk(1).values, lambda x: x.kthvalue(1).values,
               lambda x: x.median(), lambda x: x.median(0).values, lambda x: x.nansum()):
        e = fn(ember.tensor(a, requires_grad=True))
        t = fn(torch.tensor(a, requires_grad=True))
        assert e.grad_fn.name() == t.grad_fn.name()


ERROR_CASES = {
    "max_empty": lambda m: m.max(m.zeros(0)),
    "min_empty_dim": lambda m: m.min(m.zeros(0, 3), 0),
    "amax_empty": lambda m: m.amax(m.zeros(0)),
    "argmax_empty": lambda m: m.zeros(0).argmax(),
    "argmin_empty_dim": lambda m: m.zeros(0, 2).argmin(0),
    "mean_int": lambda m: m.tensor([1, 2]).mean(),
    "nanmean_int": lambda m: m.tensor([1, 2]).nanmean(),
    "var_int": lambda m: m.tensor([1, 2]).var(),
    "std_mean_int": lambda m: m.std_mean(m.tensor([1, 2])),
    "norm_int": lambda m: m.tensor([1, 2]).norm(),
    "norm_inf_empty": lambda m: m.zeros(0).norm(float("inf")),
    "prod_tuple": lambda m: m.ones(2, 2).prod((0, 1)),
    "logsumexp_no_dim": lambda m: m.logsumexp(m.ones(2)),
    "cumsum_no_dim": lambda m: m.cumsum(m.ones(2)),
    "sum_bad_dim": lambda m: m.ones(2, 2).sum(2),
    "sum_repeated_dim": lambda m: m.ones(2, 2).sum((1, 1)),
    "topk_k": lambda m: m.ones(3).topk(4),
    "kthvalue_k": lambda m: m.ones(2, 3).kthvalue(4),
    "kthvalue_empty": lambda m: m.zeros(2, 0).kthvalue(1, 1),
    "median_empty_dim": lambda m: m.zeros(0, 3).median(0),
    "mode_empty_dim": lambda m: m.zeros(2, 0).mode(),
    "aminmax_empty": lambda m: m.aminmax(m.zeros(0)),
    "quantile_q": lambda m: m.ones(3).quantile(1.5),
    "quantile_int": lambda m: m.tensor([1, 2]).quantile(0.5),
    "quantile_empty": lambda m: m.zeros(0).quantile(0.5),
    "quantile_interp": lambda m: m.ones(3).quantile(0.5, interpolation="bad"),
    "var_both_apis": lambda m: m.var(m.ones(3), unbiased=True, correction=1),
    "argmax_bool": lambda m: m.tensor([True, False]).argmax(),
    "argmin_bool_dim": lambda m: m.tensor([True, False]).argmin(0),
    "median_bool": lambda m: m.tensor([True, False]).median(),
    "median_bool_dim": lambda m: m.tensor([True, False]).median(0),
    "kthvalue_bool": lambda m: m.tensor([True, False]).kthvalue(1),
    "topk_bool": lambda m: m.tensor([True, False]).topk(1),
    "logcumsumexp_int": lambda m: m.tensor([1, 2]).logcumsumexp(0),
    "norm_fro_3dims": lambda m: m.ones(2, 2, 2).norm("fro", (0, 1, 2)),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors_match_torch(name):
    fn = ERROR_CASES[name]
    with pytest.raises(Exception) as t_err:
        fn(torch)
    with pytest.raises(Exception) as e_err:
        fn(ember)
    assert e_err.type is t_err.type, f"{e_err.value!r} vs {t_err.value!r}"
    t_msg = str(t_err.value)
    if t_err.type is not TypeError:  # PyTorch's argument-parser texts list every overload
        assert str(e_err.value) == t_msg


def test_named_tuple_protocol_matches_torch():
    a = TIES
    e = ember.tensor(a).max(1)
    t = torch.tensor(a).max(1)
    ev, ei = e
    tv, ti = t
    assert (ev.tolist(), ei.tolist()) == (tv.tolist(), ti.tolist())
    assert e[0].tolist() == t[0].tolist() and e[1].tolist() == t[1].tolist()
    assert len(e) == len(t) == 2
    assert repr(e).replace("ember", "torch").splitlines()[0] == repr(t).splitlines()[0]


def test_empty_reduction_values_match_torch():
    with pytest.warns(UserWarning):
        assert math.isnan(ember.zeros(0).var().item())
    for fn in (lambda m: m.zeros(0).sum(), lambda m: m.zeros(0).prod(),
               lambda m: m.zeros(0).mean(), lambda m: m.zeros(0, 2).logsumexp(0),
               lambda m: m.zeros(0).norm(), lambda m: m.zeros(0).all(),
               lambda m: m.zeros(0).any(), lambda m: m.zeros(0, 3).max(1),
               lambda m: m.zeros(0).median(), lambda m: m.zeros(0).nanmedian(),
               lambda m: m.zeros(3, 0).sum(1), lambda m: m.zeros(0, 3).amax(1)):
        assert_same(fn(ember), fn(torch))
