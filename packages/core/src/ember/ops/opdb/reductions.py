"""Reductions and their relatives: sum/mean/prod/var/std, max/min and the arg- and
a-variants, logsumexp, norm, all/any/count_nonzero, cumulative ops, sorting and selection
(sort, topk, kthvalue, median, mode, quantile), unique, dist and renorm
(``ember/ops/reduction.py``); bincount, histograms, cov and corrcoef (``statistics.py``);
trapezoid, gradient, unravel_index and binomial (``numeric.py``); bernoulli and multinomial
(``ember/_random.py``).

Samples cover the calls PyTorch users write: no ``dim`` (a full reduction), a positive, a
negative, a tuple and a list ``dim``, ``keepdim``, 0-d, empty and non-contiguous inputs and
each op's keyword arguments. Ops that pick elements (max/min, sort, topk, median, ...) see
inputs without ties whenever they are differentiated, so that finite differences do not
cross a point where the pick changes; ties are exercised in the forward-only samples.

Random ops (binomial, bernoulli, multinomial) draw from generator streams that differ from
PyTorch's, so their samples are degenerate distributions (probabilities of exactly 0 or 1,
one-hot rows) whose draws are certain: every check, the PyTorch comparison included, then
compares exact values (bernoulli's gradient checks alone see uncertain probabilities: the
registry marks it random, so the generic test re-seeds before each call). Their
distributions are tested in ``tests/core/test_random.py`` and
``tests/core/test_histogram_integration_index_reduce.py``.

Known bugs are marked "BUG:" in a skip's reason.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import ALL, FLOAT, INTEGRAL, SampleInput, SeedStream, define, make

# float16 reductions accumulate in float32 and round once, as PyTorch's (prod excepted:
# PyTorch's CPU prod multiplies in float16, rounding at every step, and so does ember's)
_HALF = FLOAT + ("float16",)
#: every dtype but bool (argmax, topk, kthvalue, median have no bool kernel)
_NUMERIC = FLOAT + INTEGRAL + ("float16",)
_SEEDS = SeedStream(10_000)

#: the reason the "results do not require grad" check (keyed "gradcheck") does not apply
_NOT_IMPLEMENTED = ("no derivative, but as in PyTorch a result of inputs that require grad "
                    "requires grad too, with a backward that raises 'derivative for aten::... "
                    "is not implemented' (PyTorch's NotImplemented node)")


# -- making inputs ---------------------------------------------------------------------------

def _tensor(arr, dtype, device, requires_grad=False, noncontiguous=False):
    """``arr`` as a tensor of ``dtype`` (non-contiguous: the even columns of a wider one)."""
    import ember

    arr = np.asarray(arr).astype(dtype)
    if noncontiguous and arr.ndim:
        wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        wide[..., ::2] = arr
        t = ember.tensor(wide, device=device)[..., ::2]
    else:
        t = ember.tensor(arr, device=device)
    if requires_grad and dtype.startswith("float"):
        t.requires_grad_(True)
    return t


def distinct(shape, dtype, device=None, *, low=-3.0, high=3.0, requires_grad=False,
             noncontiguous=False):
    """A sample tensor without ties (bool excepted): floats at least ``(high - low) / 2n``
    apart in ``[low, high)``, integers a permutation of consecutive values (from 0 for
    unsigned types)."""
    n = math.prod(shape)
    rng = np.random.default_rng(next(_SEEDS))
    if dtype == "bool":
        arr = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind in "iu":
        start = 0 if np.dtype(dtype).kind == "u" else -(n // 2)
        arr = (rng.permutation(n) + start).reshape(shape)
    else:
        spread = (rng.permutation(n) + rng.uniform(0.25, 0.75, n)) / max(n, 1)
        arr = (low + (high - low) * spread).reshape(shape)
    return _tensor(arr, dtype, device, requires_grad, noncontiguous)


def _ties(shape, dtype, device=None):
    """A forward-only sample full of ties: small integers (any dtype)."""
    rng = np.random.default_rng(next(_SEEDS))
    arr = rng.integers(0, 3, size=shape)
    return _tensor(arr.astype(bool) if dtype == "bool" else arr, dtype, device)


def _with_nans(shape, dtype, device=None, requires_grad=False, every=3):
    """A float sample with NaN at every ``every``-th element (as a flat index)."""
    t = make(shape, dtype, device)
    arr = t.numpy().copy()
    arr.reshape(-1)[::every] = np.nan
    return _tensor(arr, dtype, device, requires_grad)


def _is_float(dtype):
    return dtype.startswith("float")


# -- the dims of reductions ------------------------------------------------------------------

#: (shape, args, kwargs) of a reduction over ``dim``: full, int, negative, tuple and list
#: dims, keepdim, 0-d and empty inputs
_MULTI_DIM = (
    ((), (), {}),
    ((5,), (), {}),
    ((2, 3, 4), (), {}),
    ((2, 3, 4), (1,), {}),
    ((2, 3, 4), (-1,), {"keepdim": True}),
    ((2, 3, 4), ((0, 2),), {}),
    ((2, 3, 4), ([-1, 0],), {"keepdim": True}),
    ((2, 3, 4), (), {"dim": 0}),
    ((2, 3, 4), ((),), {"keepdim": True}),  # an empty dim list reduces every dim
    ((), (0,), {}),
    ((), (-1,), {"keepdim": True}),
    ((2, 0, 3), (), {}),
    ((2, 0, 3), (1,), {}),
    ((2, 0, 3), ((0, 2),), {"keepdim": True}),
)

#: the same for ops whose ``dim`` is one int
_ONE_DIM = (
    ((2, 3, 4), (1,), {}),
    ((2, 3, 4), (-1,), {"keepdim": True}),
    ((2, 3, 4), (0,), {"keepdim": False}),
    ((5,), (0,), {}),
    ((), (0,), {}),
    ((), (-1,), {"keepdim": True}),
    ((2, 0, 3), (2,), {}),
)


def _is_empty_reduction(shape, args, kwargs):
    """Whether a case reduces an empty slice (ops without identity raise there)."""
    if 0 not in shape:
        return False
    dim = args[0] if args else kwargs.get("dim")
    if dim is None:
        return True
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return any(shape[d] == 0 for d in dims) or not dims


def reduction_samples(cases=_MULTI_DIM, *, full=True, low=None, high=None, ties=False,
                      empty_ok=True, noncontiguous_args=(1,), extra=None):
    """Samples of ``op(input, *args, **kwargs)`` for every case, plus a non-contiguous input
    (``noncontiguous_args`` after it). ``full=False`` drops the calls without a dim;
    ``ties=True`` draws inputs without ties (ops that pick elements); ``empty_ok=False``
    drops reductions of empty slices; ``extra(device, dtype, requires_grad)`` yields more."""

    def samples(device, dtype, requires_grad=False):
        def value(shape, noncontiguous=False):
            if ties:
                return distinct(shape, dtype, device, requires_grad=requires_grad,
                                noncontiguous=noncontiguous)
            return make(shape, dtype, device, low=low, high=high,
                        requires_grad=requires_grad, noncontiguous=noncontiguous)

        for shape, args, kwargs in cases:
            if not full and not args and "dim" not in kwargs:
                continue
            if not empty_ok and _is_empty_reduction(shape, args, kwargs):
                continue
            yield SampleInput(value(shape), *args, name=f"{shape} {args} {kwargs}", **kwargs)
        yield SampleInput(value((3, 4), noncontiguous=True), *noncontiguous_args,
                          name="noncontiguous")
        if extra is not None:
            yield from extra(device, dtype, requires_grad)

    return samples


def _axis(dim):
    if dim is None:
        return None
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def _half_in_float32(ref):
    """``ref`` computing float16 inputs in float32, its float results rounded to float16 once
    (PyTorch's float16 reductions; NumPy's accumulate some in float16)."""

    @functools.wraps(ref)
    def run(a, *args, **kwargs):
        if a.dtype != np.float16:
            return ref(a, *args, **kwargs)
        r = ref(a.astype(np.float32), *args, **kwargs)
        return r.astype(np.float16) if getattr(r, "dtype", None) == np.float32 else r

    return run


def _np_reduction(f, *, int64=False, keepdims=True):
    """A NumPy reference ``ref(a, dim=None, keepdim=False)`` from ``f(a, axis, keepdims)``
    (integers and bools accumulate as int64 with ``int64=True``, as PyTorch's sum does)."""

    def ref(a, dim=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            a = a.astype(np.float64 if dtype is float else np.int64)
        elif int64 and a.dtype.kind in "biu":
            a = a.astype(np.int64)
        axis = _axis(dim)
        if axis == () or axis == []:
            axis = None
        with np.errstate(all="ignore"):
            if a.ndim == 0:
                return f(a, None, False) if keepdims else f(a, None)
            return f(a, axis, keepdim) if keepdims else f(a, axis)

    return _half_in_float32(ref)


# -- sum, mean, nansum, nanmean, prod ---------------------------------------------------------

def _dtype_kwarg_samples(device, dtype, requires_grad):
    """``dtype=``: a float64 accumulation (Python ``float`` is PyTorch's and ember's
    spelling of float64 that both accept)."""
    yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad), 1,
                      dtype=float, name="dtype=float")
    yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad),
                      dtype=float, name="full, dtype=float")


define("sum", reduction_samples(extra=_dtype_kwarg_samples), dtypes=ALL,
       ref=_np_reduction(lambda a, ax, k: np.sum(a, axis=ax, keepdims=k), int64=True))


def _mean_extra(device, dtype, requires_grad):
    yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad), 1,
                      dtype=float, name="dtype=float")
    yield SampleInput(make((2, 3), "int64", device), (0, 1), dtype=float,
                      name="int64 input, dtype=float")


define("mean", reduction_samples(extra=_mean_extra), dtypes=_HALF,
       ref=_np_reduction(lambda a, ax, k: np.mean(a, axis=ax, keepdims=k)))


def _nan_samples(all_nan_grad=True):
    """Reductions of inputs with NaN (floats; NaN stays put under finite differences, so
    gradcheck sees a zero derivative there). An all-NaN slice has mean NaN, no derivative:
    ``all_nan_grad=False`` keeps it out of the gradient checks."""

    def extra(device, dtype, requires_grad):
        if not _is_float(dtype):
            return
        yield SampleInput(_with_nans((2, 3, 4), dtype, device, requires_grad), name="NaN")
        yield SampleInput(_with_nans((2, 3, 4), dtype, device, requires_grad), 1, keepdim=True,
                          name="NaN, dim=1")
        if all_nan_grad or not requires_grad:
            yield SampleInput(_with_nans((2, 3), dtype, device, requires_grad, every=1), 0,
                              name="all NaN")

    return extra


#: the _MULTI_DIM cases that reduce dims not next to each other
_SPLIT_DIMS = (((2, 3, 4), ((0, 2),), {}), ((2, 3, 4), ([-1, 0],), {"keepdim": True}))
assert all(c in _MULTI_DIM for c in _SPLIT_DIMS)


def _no_split_half(samples):
    """``samples`` without float16 reductions over dims not next to each other: there
    PyTorch's nansum rounds partial sums to float16 (its sum does not, pytorch#83149), in an
    order of its reduction loops; ember rounds once, as for sum."""
    names = {f"{shape} {args} {kwargs}" for shape, args, kwargs in _SPLIT_DIMS}

    def run(device, dtype, requires_grad=False):
        for s in samples(device, dtype, requires_grad):
            if dtype != "float16" or s.name not in names:
                yield s

    return run


define("nansum", _no_split_half(reduction_samples(extra=_nan_samples())), dtypes=ALL,
       ref=_np_reduction(lambda a, ax, k: np.nansum(a, axis=ax, keepdims=k), int64=True))
define("nanmean", _no_split_half(reduction_samples(extra=_nan_samples(all_nan_grad=False))),
       dtypes=_HALF, ref=_np_reduction(lambda a, ax, k: np.nanmean(a, axis=ax, keepdims=k)))


def _prod_extra(device, dtype, requires_grad):
    """Zeros: one in a slice (the gradient is the product of the others), two in a slice
    (zero gradient), in a full product and along a dim; ``dtype=``."""
    if dtype != "bool":
        for zeros, name in (((1,), "one zero"), ((1, 4), "two zeros")):
            t = make((2, 5), dtype, device, low=-2, high=2).numpy().copy()
            t[0, list(zeros)] = 0
            yield SampleInput(_tensor(t, dtype, device, requires_grad), 1, name=name)
            yield SampleInput(_tensor(t, dtype, device, requires_grad), name=f"full, {name}")
    yield SampleInput(make((2, 3), dtype, device, low=-2, high=2, requires_grad=requires_grad),
                      0, dtype=float, name="dtype=float")


_np_prod = _np_reduction(lambda a, ax, k: np.prod(a, axis=ax, keepdims=k), int64=True)


def _prod_ref(a, dim=None, keepdim=False, *, dtype=None):
    """float16: PyTorch's CPU prod multiplies in float16, rounding after every product, in
    order (the last running product of NumPy's float16 cumprod)."""
    if a.dtype != np.float16 or dtype is not None or not a.size:
        return _np_prod(a, dim, keepdim, dtype=dtype)
    flat, axis = (a.reshape(-1), 0) if dim is None or a.ndim == 0 else (a, dim)
    r = np.take(np.cumprod(flat, axis=axis), [-1], axis=axis)
    return r.reshape(()) if dim is None or a.ndim == 0 else \
        (r if keepdim else np.squeeze(r, axis))


define("prod", reduction_samples(_ONE_DIM + (((2, 3, 4), (), {}), ((5,), (), {}),
                                             ((), (), {}), ((2, 0, 3), (), {})),
                                 low=-2, high=2, extra=_prod_extra),
       dtypes=ALL, ref=_prod_ref)


# -- var, std, var_mean, std_mean -------------------------------------------------------------

def _var_samples(device, dtype, requires_grad=False, sqrt=False):
    def x(shape=(2, 3, 4), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), name="full")
    yield SampleInput(x((5,)), name="vector")
    yield SampleInput(x(), 1, name="dim=1")
    yield SampleInput(x(), -1, keepdim=True, name="dim=-1 keepdim")
    yield SampleInput(x(), (0, 2), name="dims (0, 2)")
    yield SampleInput(x(), [1, -1], True, True, name="unbiased positional, keepdim")
    yield SampleInput(x(), 1, unbiased=False, name="unbiased=False")
    yield SampleInput(x(), 1, correction=0, name="correction=0")
    yield SampleInput(x(), (0, 1), correction=2, keepdim=True, name="correction=2")
    yield SampleInput(x(), dim=None, correction=0, name="dim=None correction=0")
    yield SampleInput(x(), False, name="var(x, False): the unbiased overload")
    if not (sqrt and requires_grad):  # std = 0: sqrt has no second derivative there
        yield SampleInput(x(()), correction=0, name="0-d, correction=0")
    yield SampleInput(x((3, 4), noncontiguous=True), 0, name="noncontiguous")
    yield SampleInput(x((2, 0, 3)), 1, name="empty slice: NaN")
    yield SampleInput(x((2, 0, 3)), 0, name="empty result")


def _var_ref(f):
    def ref(a, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        with np.errstate(all="ignore"):
            return f(a, axis=_axis(dim), ddof=ddof, keepdims=keepdim)

    return _half_in_float32(ref)


# a variance of one element with correction=1 divides by zero (PyTorch: NaN and a warning);
# that sample would give NaN gradients, so the 0-d sample uses correction=0
define("var", _var_samples, dtypes=_HALF, ref=_var_ref(np.var))
define("std", functools.partial(_var_samples, sqrt=True), dtypes=_HALF, ref=_var_ref(np.std))
define("var_mean", _var_samples, dtypes=_HALF)
define("std_mean", functools.partial(_var_samples, sqrt=True), dtypes=_HALF)


# -- max, min, amax, amin, aminmax, argmax, argmin --------------------------------------------

def _max_min_extra(device, dtype, requires_grad):
    """``max(input, other)`` (the elementwise maximum, broadcast), and forward-only ties
    and NaN (the first index wins, NaN propagates)."""
    yield SampleInput(distinct((2, 3), dtype, device, requires_grad=requires_grad),
                      distinct((3,), dtype, device, requires_grad=requires_grad),
                      name="other (a tensor)")
    yield SampleInput(distinct((2, 3), dtype, device, requires_grad=requires_grad),
                      other=distinct((2, 3), dtype, device, requires_grad=requires_grad),
                      name="other=")
    if not requires_grad:
        yield SampleInput(_ties((4, 5), dtype, device), 1, name="ties")
        yield SampleInput(_ties((4, 5), dtype, device), 0, True, name="ties, keepdim")
        if _is_float(dtype):
            yield SampleInput(_with_nans((3, 4), dtype, device, every=5), 1, name="NaN, dim")
            yield SampleInput(_with_nans((3, 4), dtype, device, every=5), name="NaN, full")


_FULL_NONEMPTY = (((), (), {}), ((5,), (), {}), ((2, 3, 4), (), {}))

for _name in ("max", "min"):
    define(_name, reduction_samples(_ONE_DIM + _FULL_NONEMPTY, ties=True,
                                    extra=_max_min_extra),
           dtypes=ALL)


def _amax_extra(device, dtype, requires_grad):
    if not requires_grad:
        yield SampleInput(_ties((4, 5), dtype, device), 1, name="ties")
        if _is_float(dtype):
            yield SampleInput(_with_nans((3, 4), dtype, device, every=5), 1, name="NaN")


for _name, _f in (("amax", np.amax), ("amin", np.amin)):
    define(_name, reduction_samples(ties=True, empty_ok=False, extra=_amax_extra), dtypes=ALL,
           ref=_np_reduction(lambda a, ax, k, f=_f: f(a, axis=ax, keepdims=k)))


def _aminmax_samples(device, dtype, requires_grad=False):
    def x(shape=(2, 3, 4), **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), name="full")
    yield SampleInput(x(()), name="0-d")
    yield SampleInput(x(), dim=1, name="dim=1")
    yield SampleInput(x(), dim=-1, keepdim=True, name="dim=-1 keepdim")
    yield SampleInput(x(()), dim=0, name="0-d dim=0")
    yield SampleInput(x((2, 0, 3)), dim=0, name="empty result")
    yield SampleInput(x((3, 4), noncontiguous=True), dim=0, name="noncontiguous")
    if not requires_grad:
        yield SampleInput(_ties((4, 5), dtype, device), dim=1, name="ties")


define("aminmax", _aminmax_samples, dtypes=ALL)


def _arg_extra(device, dtype, requires_grad):
    yield SampleInput(_ties((4, 5), dtype, device), 1, name="ties: the first index")
    yield SampleInput(_ties((4, 5), dtype, device), name="ties, full")
    yield SampleInput(_ties((4, 5), dtype, device), None, True, name="full keepdim")
    if _is_float(dtype):
        yield SampleInput(_with_nans((3, 4), dtype, device, every=5), 1, name="NaN wins")


def _np_arg(f):
    def ref(a, dim=None, keepdim=False):
        if dim is None:
            r = f(a)
            return np.reshape(r, (1,) * a.ndim) if keepdim else r
        if a.ndim == 0:
            return np.asarray(0)
        return f(a, axis=dim, keepdims=keepdim)

    return ref


for _name, _f in (("argmax", np.argmax), ("argmin", np.argmin)):
    define(_name, reduction_samples(_ONE_DIM[:-1] + _FULL_NONEMPTY, ties=True,
                                    extra=_arg_extra),
           dtypes=_NUMERIC, ref=_np_arg(_f))


# -- logsumexp, norm, dist --------------------------------------------------------------------

def _logsumexp_ref(a, dim, keepdim=False):
    """PyTorch's steps: the max, ``exp(a - max)`` and the log in ``a``'s dtype, the sum
    accumulated as sum's (float16 in float32, rounded once)."""
    a = a.astype(np.float64) if a.dtype.kind != "f" else a
    acc = np.float32 if a.dtype == np.float16 else None
    with np.errstate(divide="ignore"):
        m = np.max(a, axis=_axis(dim), keepdims=True) if a.size else a.dtype.type(0)
        m = np.where(np.isfinite(m), m, 0).astype(a.dtype)
        total = np.sum(np.exp(a - m), axis=_axis(dim), dtype=acc, keepdims=True)
        return (np.log(total.astype(a.dtype)) + m).reshape(
            np.sum(a, axis=_axis(dim), keepdims=keepdim).shape)


def _logsumexp_extra(device, dtype, requires_grad):
    if _is_float(dtype):
        big = make((2, 3), dtype, device, low=80, high=90, requires_grad=requires_grad)
        yield SampleInput(big, 1, name="large values (no overflow)")
        inf = _tensor([[-np.inf, -np.inf], [1.0, -np.inf]], dtype, device)
        yield SampleInput(inf, 1, name="-inf rows")


# PyTorch's logsumexp(x, ()) raises a shape error of its own: not compared
define("logsumexp", reduction_samples(tuple(c for c in _MULTI_DIM if c[1] != ((),)), full=False,
                                      extra=_logsumexp_extra),
       dtypes=ALL, ref=_logsumexp_ref)


def _norm_samples(device, dtype, requires_grad=False):
    def x(shape=(2, 3, 4), **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), name="fro, full")
    yield SampleInput(x(()), name="0-d")
    yield SampleInput(x(), 2, 1, name="p=2 dim=1")
    yield SampleInput(x(), 1, -1, True, name="p=1 dim=-1 keepdim")
    yield SampleInput(x(), 3, (0, 2), name="p=3 dims (0, 2)")
    yield SampleInput(x(), 0.5, name="p=0.5")
    yield SampleInput(x(), float("inf"), 1, name="p=inf")
    yield SampleInput(x(), float("-inf"), name="p=-inf")
    yield SampleInput(x(), "fro", (1, 2), name="fro dims (1, 2)")
    yield SampleInput(x(), p=2, dim=0, keepdim=True, name="keywords")
    if dtype != "float16":  # PyTorch has no float16 SVD either
        yield SampleInput(x((3, 4)), "nuc", name="nuc")
        yield SampleInput(x((2, 3, 4)), "nuc", (1, 2), name="nuc batched")
    yield SampleInput(x((3, 4), noncontiguous=True), 2, 0, name="noncontiguous")
    yield SampleInput(x((3, 4)), dtype=float, name="dtype=float")
    yield SampleInput(x((2, 0)), 2, 0, name="empty slices")
    if not requires_grad:
        yield SampleInput(x(), 0, 1, name="p=0 (counts non-zeros)")
        zeros = _tensor(np.zeros((2, 3)), dtype, device)
        yield SampleInput(zeros, name="zeros")


define("norm", _norm_samples, dtypes=_HALF)


def _dist_samples(device, dtype, requires_grad=False):
    def x(shape, **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x((2, 3)), x((2, 3)), name="p=2")
    yield SampleInput(x((2, 3)), x((3,)), 1, name="p=1 broadcast")
    yield SampleInput(x((4,)), x((4,)), 3, name="p=3")
    yield SampleInput(x((4,)), x((2, 1)), float("inf"), name="p=inf broadcast")
    yield SampleInput(x((4,)), x((4,)), float("-inf"), name="p=-inf")
    yield SampleInput(x((2, 3)), x((2, 3)), p=0.5, name="p=0.5")
    yield SampleInput(x(()), x(()), name="0-d")
    yield SampleInput(x((3, 4), noncontiguous=True), x((3, 4)), name="noncontiguous")
    yield SampleInput(x((0, 3)), x((0, 3)), name="empty")
    if not requires_grad:
        yield SampleInput(x((4,)), x((4,)), 0, name="p=0")


define("dist", _dist_samples, dtypes=_HALF)


def _renorm_samples(device, dtype, requires_grad=False):
    def x(shape, **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    # slice norms of values in [-3, 3) lie well above 1.5 and below 100: some slices are
    # scaled, others kept, none close to maxnorm
    yield SampleInput(x((3, 4)), 2, 0, 4.0, name="p=2 dim=0")
    yield SampleInput(x((3, 4)), 1, -1, 100.0, name="p=1 dim=-1, nothing scaled")
    yield SampleInput(x((2, 3, 4)), 3, 1, 1.5, name="p=3 dim=1 3-d")
    yield SampleInput(x((3, 4), noncontiguous=True), 2, 1, 1.0, name="noncontiguous")
    yield SampleInput(x((2, 3)), float("inf"), 0, 2.0, name="p=inf")
    yield SampleInput(x((0, 3)), 2, 1, 1.0, name="empty")


define("renorm", _renorm_samples, dtypes=_HALF)


# -- all, any, count_nonzero ------------------------------------------------------------------

def _truth_extra(device, dtype, requires_grad):
    # all(x, ()) and any(x, ()) reduce no dim (the result has x's shape), unlike sum(x, ());
    # count_nonzero(x, ()) reduces every dim
    yield SampleInput(_ties((2, 3), dtype, device), (), name="dim=()")
    yield SampleInput(_ties((3, 4), dtype, device), 1, name="zeros in rows")
    yield SampleInput(_tensor(np.ones((2, 3)), dtype, device), 0, name="all non-zero")
    if _is_float(dtype):
        yield SampleInput(_with_nans((3, 4), dtype, device), name="NaN is non-zero")


def _truth_ref(ref):
    def run(a, dim=None, keepdim=False):
        if isinstance(dim, (tuple, list)) and not dim:  # no dim reduced
            return (a != 0).astype(np.uint8 if a.dtype == np.uint8 else bool)
        return ref(a, dim, keepdim)

    return run


for _name, _f in (("all", np.all), ("any", np.any), ("count_nonzero", None)):
    if _f is None:
        _ref = _np_reduction(lambda a, ax: np.count_nonzero(a, axis=ax), keepdims=False)
        _cases = tuple(c for c in _MULTI_DIM if "keepdim" not in c[2])
    else:
        _ref = _truth_ref(_np_reduction(lambda a, ax, k, f=_f: f(a, axis=ax, keepdims=k)))
        _cases = tuple(c for c in _MULTI_DIM if c[1] != ((),))  # dim=(): _truth_extra
    define(_name, reduction_samples(_cases, extra=_truth_extra), dtypes=ALL,
           ref=_ref)


# -- cumulative ops ---------------------------------------------------------------------------

_CUMULATIVE = (
    ((2, 3, 4), (1,), {}),
    ((2, 3, 4), (-1,), {}),
    ((2, 3, 4), (), {"dim": 0}),
    ((5,), (0,), {}),
    ((), (0,), {}),
    ((), (-1,), {}),
    ((2, 0, 3), (1,), {}),
    ((2, 0, 3), (0,), {}),
)


def _cumsum_extra(device, dtype, requires_grad):
    yield SampleInput(make((2, 3), dtype, device, low=-2, high=2, requires_grad=requires_grad),
                      1, dtype=float, name="dtype=float")


def _cumprod_extra(device, dtype, requires_grad):
    yield from _cumsum_extra(device, dtype, requires_grad)
    if dtype != "bool":
        t = make((3, 5), dtype, device, low=-2, high=2).numpy().copy()
        t[0, 2] = 0
        t[1, 1] = t[1, 3] = 0
        yield SampleInput(_tensor(t, dtype, device, requires_grad), 1,
                          name="zeros: one and two in a row")
        yield SampleInput(_tensor(t, dtype, device, requires_grad), 0, name="zeros, dim=0")


def _cum_ref(f):
    def ref(a, dim, *, dtype=None):
        if dtype is not None:
            a = a.astype(np.float64)
        elif a.dtype.kind in "biu":
            a = a.astype(np.int64)
        return f(a.reshape(1), axis=0).reshape(()) if a.ndim == 0 else f(a, axis=dim)

    return _half_in_float32(ref)


# float16 running sums and products accumulate in float32 as PyTorch's (each output rounded
# once: cumsum of 5000 x 0.1 ends at 500.0, not float16's 256.0)
define("cumsum", reduction_samples(_CUMULATIVE, extra=_cumsum_extra), dtypes=ALL,
       ref=_cum_ref(np.cumsum))
define("cumprod", reduction_samples(_CUMULATIVE, low=-2, high=2, extra=_cumprod_extra),
       dtypes=ALL, ref=_cum_ref(np.cumprod))


def _cum_extreme_extra(device, dtype, requires_grad):
    if not requires_grad:
        yield SampleInput(_ties((4, 6), dtype, device), 1, name="ties")
        if _is_float(dtype):
            yield SampleInput(_with_nans((3, 4), dtype, device, every=5), 1, name="NaN")


for _name in ("cummax", "cummin"):
    define(_name, reduction_samples(_CUMULATIVE, ties=True, extra=_cum_extreme_extra),
           dtypes=ALL)


@_half_in_float32
def _logcumsumexp_ref(a, dim):
    if a.ndim == 0:
        return a
    return np.logaddexp.accumulate(a, axis=dim)


def _logcumsumexp_extra(device, dtype, requires_grad):
    yield SampleInput(make((2, 3), dtype, device, low=60, high=80, requires_grad=requires_grad),
                      1, name="large values (no overflow)")
    if not requires_grad:
        yield SampleInput(_tensor([[-np.inf, 0.5, -np.inf], [1.0, -np.inf, 2.0]], dtype,
                                  device), 1, name="-inf")


define("logcumsumexp", reduction_samples(_CUMULATIVE, extra=_logcumsumexp_extra),
       dtypes=_HALF, ref=_logcumsumexp_ref)


# -- sort, argsort, msort, topk, kthvalue -----------------------------------------------------

def _sort_samples():
    """Sort-like calls; forward-only samples with ties use ``stable=True``, the only order
    of equal elements PyTorch defines."""

    def samples(device, dtype, requires_grad=False):
        def x(shape=(2, 3, 4), **kw):
            return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

        yield SampleInput(x(), name="default (dim=-1)")
        yield SampleInput(x(), 1, name="dim=1")
        yield SampleInput(x(), 0, True, name="dim=0 descending")
        yield SampleInput(x(), dim=-2, descending=True, name="keywords")
        yield SampleInput(x((5,)), stable=True, name="stable")
        yield SampleInput(x(()), name="0-d")
        yield SampleInput(x(()), 0, True, name="0-d descending")
        yield SampleInput(x((2, 0, 3)), 1, name="empty")
        yield SampleInput(x((3, 4), noncontiguous=True), 0, name="noncontiguous")
        if not requires_grad:
            yield SampleInput(_ties((4, 6), dtype, device), stable=True, name="ties stable")
            yield SampleInput(_ties((4, 6), dtype, device), dim=0, descending=True,
                              stable=True, name="ties stable descending")
            if _is_float(dtype):
                yield SampleInput(_with_nans((3, 5), dtype, device, every=4), name="NaN last")
                yield SampleInput(_with_nans((3, 5), dtype, device, every=4),
                                  descending=True, name="NaN first (descending)")

    return samples


def _argsort_ref(a, dim=-1, descending=False, stable=False):
    if a.ndim == 0:
        return np.zeros((), np.int64)
    if descending:
        flipped = np.argsort(np.flip(a, dim), axis=dim, kind="stable")
        return (a.shape[dim] - 1) - np.flip(flipped, dim)
    return np.argsort(a, axis=dim, kind="stable")


define("sort", _sort_samples(), dtypes=ALL)
define("argsort", _sort_samples(), dtypes=ALL, ref=_argsort_ref)


def _msort_samples(device, dtype, requires_grad=False):
    for shape in ((5,), (4, 3), (3, 2, 2), (0, 3)):
        yield SampleInput(distinct(shape, dtype, device, requires_grad=requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(distinct((4, 3), dtype, device, requires_grad=requires_grad,
                               noncontiguous=True), name="noncontiguous")


define("msort", _msort_samples, dtypes=ALL, ref=lambda a: np.sort(a, axis=0))


def _topk_samples(device, dtype, requires_grad=False):
    def x(shape=(2, 3, 5), **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), 2, name="k=2")
    yield SampleInput(x(), 1, 1, name="k=1 dim=1")
    yield SampleInput(x(), 3, largest=False, name="smallest")
    yield SampleInput(x(), 2, 0, False, True, name="positional")
    yield SampleInput(x(), 5, -1, name="k=size")
    yield SampleInput(x(), 0, name="k=0")
    yield SampleInput(x(), 1, sorted=False, name="unsorted k=1")
    yield SampleInput(x((7,)), 3, name="vector")
    yield SampleInput(x(()), 1, name="0-d")
    yield SampleInput(x((2, 0, 3)), 2, 2, name="empty")
    yield SampleInput(x((3, 4), noncontiguous=True), 2, 0, name="noncontiguous")


define("topk", _topk_samples, dtypes=_NUMERIC)


def _kthvalue_samples(device, dtype, requires_grad=False):
    def x(shape=(2, 3, 5), **kw):
        return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), 2, name="k=2")
    yield SampleInput(x(), 1, 1, name="k=1 dim=1")
    yield SampleInput(x(), 2, 0, True, name="keepdim")
    yield SampleInput(x(), 5, -1, name="k=size")
    yield SampleInput(x(), k=2, dim=-2, keepdim=False, name="keywords")
    yield SampleInput(x((7,)), 4, name="vector")
    yield SampleInput(x(()), 1, name="0-d")
    yield SampleInput(x((2, 0, 3)), 1, 0, name="empty result")
    yield SampleInput(x((3, 4), noncontiguous=True), 2, 0, name="noncontiguous")


define("kthvalue", _kthvalue_samples, dtypes=_NUMERIC)


# -- median, nanmedian, mode ------------------------------------------------------------------

def _median_extra(device, dtype, requires_grad):
    """An even count (the lower median); forward-only NaN (median: NaN wins; nanmedian:
    ignored, NaN only for an all-NaN slice)."""
    yield SampleInput(distinct((4, 6), dtype, device, requires_grad=requires_grad), 1,
                      name="even count")
    yield SampleInput(distinct((4, 6), dtype, device, requires_grad=requires_grad),
                      name="even count, full")
    if not requires_grad and _is_float(dtype):
        yield SampleInput(_with_nans((3, 5), dtype, device, every=4), 1, name="NaN")
        yield SampleInput(_with_nans((3, 5), dtype, device, every=4), name="NaN, full")
        yield SampleInput(_with_nans((2, 3), dtype, device, every=1), 1, name="all NaN")
    if _is_float(dtype):
        # PyTorch's median of nothing is NaN; for integers it is NaN cast to the type
        # (undefined in C: 0 or the type's minimum), so only floats are compared
        yield SampleInput(make((0,), dtype, device, requires_grad=requires_grad),
                          name="empty: NaN")


def _median_ref(f):
    def ref(a):
        if not a.size:
            return np.asarray(np.nan, a.dtype)
        flat = np.sort(a.reshape(-1))
        if f is np.nanmedian:
            flat = flat[~np.isnan(flat)] if a.dtype.kind == "f" else flat
            if not flat.size:
                return np.asarray(np.nan, a.dtype)
        elif a.dtype.kind == "f" and np.isnan(flat).any():
            return np.asarray(np.nan, a.dtype)
        return flat[(flat.size - 1) // 2]

    return ref


_MEDIAN_CASES = _ONE_DIM + _FULL_NONEMPTY

for _name in ("median", "nanmedian"):
    define(_name, reduction_samples(_MEDIAN_CASES, ties=True, extra=_median_extra),
           dtypes=_NUMERIC)


def _mode_samples(device, dtype, requires_grad=False):
    """Without ties the mode is the smallest value (each occurs once); with ties the most
    frequent value (the smallest of equally frequent ones)."""
    for shape, args, kwargs in _ONE_DIM[:-1] + (((2, 3, 4), (), {}),):
        yield SampleInput(distinct(shape, dtype, device, requires_grad=requires_grad), *args,
                          name=f"{shape} {args} {kwargs}", **kwargs)
    yield SampleInput(distinct((3, 4), dtype, device, requires_grad=requires_grad,
                               noncontiguous=True), 0, name="noncontiguous")
    if not requires_grad:
        rng = np.random.default_rng(next(_SEEDS))
        # one value clearly most frequent in each row
        rows = np.array([rng.permutation([1, 1, 1, 0, 2, 2]) for _ in range(4)])
        yield SampleInput(_tensor(rows, dtype, device), 1, name="a clear mode")
        yield SampleInput(_tensor(rows.T.copy(), dtype, device), 0, True,
                          name="a clear mode, dim=0")


define("mode", _mode_samples, dtypes=ALL)


# -- quantile, nanquantile --------------------------------------------------------------------

def _quantile_samples():
    def samples(device, dtype, requires_grad=False):
        def x(shape=(2, 3, 5), **kw):
            return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

        q = _tensor([0.0, 0.25, 0.6, 1.0], dtype, device)
        yield SampleInput(x(), 0.3, name="q=0.3 full")
        yield SampleInput(x(), q, name="q tensor full")
        yield SampleInput(x(), 0.5, 1, name="median dim=1")
        yield SampleInput(x(), q, -1, True, name="q tensor dim=-1 keepdim")
        yield SampleInput(x(), _tensor(0.7, dtype, device), 0, name="0-d q")
        yield SampleInput(x(), 0.4, None, True, name="full keepdim")
        for how in ("lower", "higher", "midpoint", "nearest"):
            yield SampleInput(x(), q, 1, interpolation=how, name=how)
        yield SampleInput(x((6,)), 0.5, interpolation="nearest",
                          name="nearest: rounds half to even")
        yield SampleInput(x(()), 0.5, name="0-d")
        yield SampleInput(x((3, 4), noncontiguous=True), q, 0, name="noncontiguous")
        if requires_grad:
            # linear interpolation differentiates in a tensor q, as in PyTorch: (x_above -
            # x_below) * (n - 1); the other modes pick by rounded ranks (no gradient for q)
            yield SampleInput(x(), _tensor([0.3, 0.6], dtype, device, requires_grad=True), 1,
                              name="q requires grad")
            yield SampleInput(x().detach(), _tensor(0.45, dtype, device, requires_grad=True),
                              name="only q requires grad")
        if not requires_grad:
            yield SampleInput(_with_nans((3, 5), dtype, device, every=4), q, 1, name="NaN")
            yield SampleInput(_with_nans((3, 5), dtype, device, every=4), 0.5, name="NaN full")
            yield SampleInput(_with_nans((2, 3), dtype, device, every=1), 0.5, 1,
                              name="all NaN")

    return samples


def _quantile_ref(f):
    def ref(a, q, dim=None, keepdim=False, *, interpolation="linear"):
        with np.errstate(all="ignore"), np.testing.suppress_warnings() as w:
            w.filter(RuntimeWarning)
            r = f(a, q, axis=dim, keepdims=keepdim, method=interpolation)
        return np.asarray(r, a.dtype)

    return ref


define("quantile", _quantile_samples(), dtypes=FLOAT, ref=_quantile_ref(np.quantile))
define("nanquantile", _quantile_samples(), dtypes=FLOAT,
       ref=_quantile_ref(np.nanquantile))


# -- unique, unique_consecutive ---------------------------------------------------------------

def _unique_samples(consecutive):
    def samples(device, dtype, requires_grad=False):
        def x(shape=(3, 5)):
            return _ties(shape, dtype, device)

        flags = {} if consecutive else {"sorted": True}
        yield SampleInput(x(), name="flat", **flags)
        yield SampleInput(x(), return_inverse=True, name="inverse")
        yield SampleInput(x(), return_counts=True, name="counts")
        yield SampleInput(x(), return_inverse=True, return_counts=True, name="both")
        yield SampleInput(x((4, 3)), dim=0, return_inverse=True, return_counts=True,
                          name="dim=0")
        yield SampleInput(x((3, 4)), dim=-1, return_counts=True, name="dim=-1")
        yield SampleInput(x(()), name="0-d")
        yield SampleInput(x((0,)), return_inverse=True, return_counts=True, name="empty")
        yield SampleInput(_tensor(x((3, 4)).numpy(), dtype, device, noncontiguous=True),
                          return_inverse=True, name="noncontiguous")
        if requires_grad:
            yield SampleInput(make((6,), dtype, device, requires_grad=True),
                              name="requires grad")

    return samples


define("unique", _unique_samples(False), dtypes=ALL)
define("unique_consecutive", _unique_samples(True), dtypes=ALL)


# -- bincount, histc, histogram, histogramdd --------------------------------------------------

def _bincount_samples(device, dtype, requires_grad=False):
    def idx(n, high=6):
        return make((n,), dtype, device, low=0, high=high)

    w64 = make((7,), "float64", device)
    yield SampleInput(idx(7), name="counts")
    yield SampleInput(idx(7), minlength=10, name="minlength")
    yield SampleInput(idx(7), make((7,), "float32", device), name="float32 weights")
    yield SampleInput(idx(7), w64, 3, name="float64 weights, minlength below max")
    yield SampleInput(idx(7), weights=make((7,), "int64", device), name="int64 weights")
    yield SampleInput(idx(0), name="empty")
    yield SampleInput(idx(0), minlength=3, name="empty, minlength")
    yield SampleInput(_tensor(idx(5).numpy(), dtype, device, noncontiguous=True),
                      name="noncontiguous")


def _bincount_ref(a, weights=None, minlength=0):
    return np.bincount(a.astype(np.int64), weights=None if weights is None else
                       weights.astype(np.float64), minlength=minlength)


define("bincount", _bincount_samples, dtypes=INTEGRAL, ref=_bincount_ref)


def _histc_samples(device, dtype, requires_grad=False):
    def x(shape=(4, 5), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), name="defaults (100 bins over the data's range)")
    yield SampleInput(x(), 7, name="7 bins")
    yield SampleInput(x(), 5, -1, 1, name="range [-1, 1] (values outside ignored)")
    yield SampleInput(x(), bins=4, min=-3, max=3, name="keywords")
    yield SampleInput(_tensor([0.0, 1.0, 2.0, 2.0], dtype, device), 4, 0, 2,
                      name="max lands in the last bin")
    yield SampleInput(_tensor([2.0, 2.0], dtype, device), 3, name="constant input")
    yield SampleInput(x(()), 3, name="0-d")
    yield SampleInput(x((0,)), 3, name="empty")
    yield SampleInput(x((3, 4), noncontiguous=True), 6, name="noncontiguous")
    yield SampleInput(_with_nans((3, 4), dtype, device), 6, -3, 3, name="NaN ignored")


# float16 left out: a value within an ulp of a bin edge lands by the order of the arithmetic
# (PyTorch: (x - min) * bins / (max - min); ember: (x - min) / (max - min) * bins), and in
# float16 that happens in the samples (e.g. 0.0653 in [-2.51, 2.26], exact position 53.99:
# PyTorch bin 54, ember 53)
define("histc", _histc_samples, dtypes=FLOAT)


def _histogram_samples(device, dtype, requires_grad=False):
    def x(shape=(4, 5), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    edges = _tensor([-3.0, -1.0, 0.0, 0.5, 3.0], dtype, device)
    yield SampleInput(x(), name="defaults")
    yield SampleInput(x(), 6, name="6 bins")
    yield SampleInput(x(), 5, range=(-1.0, 1.0), name="range")
    yield SampleInput(x(), edges, name="edges tensor")
    yield SampleInput(x(), bins=edges, weight=x(), name="weights")
    # positive weights: a density divides by the weighted total, which weights of both signs
    # can bring near zero (cancellation then magnifies float32 rounding past the tolerance)
    yield SampleInput(x(), 4, weight=x(low=0.5, high=2.0), density=True,
                      name="weights, density")
    yield SampleInput(x(), edges, density=True, name="edges, density")
    yield SampleInput(x(()), 3, name="0-d")
    yield SampleInput(x((0,)), 3, name="empty")
    yield SampleInput(x((3, 4), noncontiguous=True), 6, name="noncontiguous")


define("histogram", _histogram_samples, dtypes=FLOAT, skip={"gradcheck": _NOT_IMPLEMENTED})


def _histogramdd_samples(device, dtype, requires_grad=False):
    def x(shape=(10, 2), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), 3, name="3 bins per dim")
    yield SampleInput(x(), [2, 4], name="bins per dim")
    yield SampleInput(x((10, 3)), [2, 3, 2], range=[-3.0, 3.0, -2.0, 2.0, -1.0, 1.0],
                      name="range")
    yield SampleInput(x(), [_tensor([-3.0, 0.0, 3.0], dtype, device),
                            _tensor([-3.0, -1.0, 1.0, 3.0], dtype, device)],
                      name="edge tensors")
    yield SampleInput(x((2, 5, 2)), 3, weight=x((2, 5)), name="batched, weights")
    yield SampleInput(x(), [3, 2], density=True, name="density")
    yield SampleInput(x((0, 2)), 2, name="empty")
    yield SampleInput(x((6, 2), noncontiguous=True), 2, name="noncontiguous")


define("histogramdd", _histogramdd_samples, dtypes=FLOAT,
       skip={"gradcheck": _NOT_IMPLEMENTED})


# -- cov, corrcoef ----------------------------------------------------------------------------

def _cov_samples(device, dtype, requires_grad=False):
    def x(shape=(3, 6), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    fw = make((6,), "int64", device, low=0, high=4)
    aw = make((6,), dtype if _is_float(dtype) else "float32", device, low=0.5, high=2,
              requires_grad=requires_grad)
    yield SampleInput(x(), name="rows are variables")
    yield SampleInput(x((6,)), name="one variable")
    yield SampleInput(x((1, 6)), name="one row")
    yield SampleInput(x(), correction=0, name="correction=0")
    yield SampleInput(x(), correction=2, name="correction=2")
    yield SampleInput(x(), fweights=fw, name="fweights")
    yield SampleInput(x(), aweights=aw, name="aweights")
    yield SampleInput(x(), fweights=fw, aweights=aw, correction=0, name="both weights")
    yield SampleInput(x(), fweights=fw, aweights=aw, name="both weights, correction=1")
    yield SampleInput(x((3, 4), noncontiguous=True), name="noncontiguous")


def _cov_ref(a, *, correction=1, fweights=None, aweights=None):
    return np.cov(a, ddof=correction, fweights=fweights, aweights=aweights).astype(
        a.dtype if a.dtype.kind == "f" else np.float32)


define("cov", _cov_samples, dtypes=FLOAT + INTEGRAL, ref=_cov_ref)


def _corrcoef_samples(device, dtype, requires_grad=False):
    def x(shape=(3, 6), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x(), name="3 variables")
    yield SampleInput(x((2, 8)), name="2 variables")
    yield SampleInput(x((6,)), name="one variable: 1")
    yield SampleInput(x((3, 4), noncontiguous=True), name="noncontiguous")


define("corrcoef", _corrcoef_samples, dtypes=FLOAT + INTEGRAL,
       ref=lambda a: np.asarray(np.corrcoef(a), a.dtype if a.dtype.kind == "f" else
                                np.float32))


# -- trapezoid, trapz, cumulative_trapezoid, gradient -----------------------------------------

def _integral_samples(device, dtype, requires_grad=False, cumulative=False):
    def y(shape=(3, 5), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    # sample points in increasing order (float: differentiable; integer: steps of 1..3)
    xs = np.cumsum(np.random.default_rng(next(_SEEDS)).integers(1, 4, 5)).astype(np.float64)
    if _is_float(dtype):
        xs = xs + np.random.default_rng(next(_SEEDS)).uniform(0, 0.5, 5)
    x = _tensor(xs, dtype, device, requires_grad)
    yield SampleInput(y(), name="dx=1")
    yield SampleInput(y(), dx=0.5, name="dx=0.5")
    yield SampleInput(y(), dx=2, dim=0, name="dx=2 dim=0")
    yield SampleInput(y(), x, name="x 1-d")
    yield SampleInput(y((5, 3)), x, dim=0, name="x 1-d dim=0")
    yield SampleInput(y(), _tensor(np.sort(make((3, 5), dtype, device).numpy(), 1), dtype,
                                   device, requires_grad), name="x like y")
    yield SampleInput(y((2, 3, 4)), dim=1, name="3-d dim=1")
    yield SampleInput(y((5,)), name="vector")
    yield SampleInput(y((1,)), name="one sample")  # cumulative: an empty running integral
    if not requires_grad:
        # the integral over no samples is zeros that do not require grad (as in PyTorch), which
        # test_backward_on_strict_device cannot differentiate
        yield SampleInput(y((3, 0)), name="no samples")
    yield SampleInput(y((0, 3)), name="empty batch")
    yield SampleInput(y((3, 5), noncontiguous=True), x, name="noncontiguous")


def _trapz_ref(a, x=None, *, dx=None, dim=-1):
    if x is not None:
        return np.trapezoid(a, x, axis=dim) if hasattr(np, "trapezoid") else \
            np.trapz(a, x, axis=dim)
    f = np.trapezoid if hasattr(np, "trapezoid") else np.trapz
    return f(a, dx=1 if dx is None else dx, axis=dim)


for _name in ("trapezoid", "trapz"):
    define(_name, _integral_samples, dtypes=FLOAT + INTEGRAL, ref=_trapz_ref)
define("cumulative_trapezoid", functools.partial(_integral_samples, cumulative=True),
       dtypes=FLOAT + INTEGRAL)


def _gradient_samples(device, dtype, requires_grad=False):
    def t(shape=(4, 5), **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    coords = np.cumsum(np.random.default_rng(next(_SEEDS)).uniform(0.5, 1.5, 5))
    c5 = _tensor(coords, dtype, device, requires_grad)
    c4 = _tensor(coords[:4], dtype, device, requires_grad)
    yield SampleInput(t(), name="every dim")
    yield SampleInput(t(), spacing=2.0, name="spacing=2.0")
    yield SampleInput(t(), spacing=[0.5, 2], name="spacing per dim")
    yield SampleInput(t(), dim=1, name="dim=1")
    yield SampleInput(t(), dim=-2, edge_order=2, name="dim=-2 edge_order=2")
    yield SampleInput(t(), spacing=[c4, c5], name="coordinates")
    yield SampleInput(t(), spacing=[c5], dim=1, edge_order=2, name="coordinates, edge 2")
    yield SampleInput(t((2, 3, 4)), dim=[0, 2], spacing=3, name="dims [0, 2]")
    yield SampleInput(t((5,)), edge_order=2, name="vector")
    yield SampleInput(t((4, 5), noncontiguous=True), name="noncontiguous")


define("gradient", _gradient_samples, dtypes=FLOAT + ("int8", "int16", "int32", "int64"))


# -- unravel_index ----------------------------------------------------------------------------

def _unravel_samples(device, dtype, requires_grad=False):
    hi = 24
    yield SampleInput(make((5,), dtype, device, low=0, high=hi), (2, 3, 4), name="3-d")
    yield SampleInput(make((2, 3), dtype, device, low=0, high=hi), [4, 6], name="list shape")
    yield SampleInput(make((), dtype, device, low=0, high=7), 7, name="int shape, 0-d")
    yield SampleInput(make((0,), dtype, device, low=0, high=7), (3, 2), name="empty")
    yield SampleInput(make((2, 3), dtype, device, low=0, high=6, noncontiguous=True), (6,),
                      name="noncontiguous")
    yield SampleInput(make((3,), dtype, device, low=0, high=1), (), name="shape ()")


def _unravel_ref(a, shape):
    return () if shape == () else np.unravel_index(a, shape)


define("unravel_index", _unravel_samples, dtypes=INTEGRAL, ref=_unravel_ref)


# -- random ops: certain draws ----------------------------------------------------------------

def _certain_probs(shape, dtype, device, requires_grad=False, noncontiguous=False):
    """Probabilities of exactly 0 and 1: a draw from them is the probabilities themselves,
    whatever the generator."""
    arr = np.random.default_rng(next(_SEEDS)).random(shape) < 0.5
    return _tensor(arr.astype(np.float64), dtype, device, requires_grad, noncontiguous)


def _binomial_samples(device, dtype, requires_grad=False):
    def count(shape):
        arr = np.random.default_rng(next(_SEEDS)).integers(0, 20, shape)
        return _tensor(arr.astype(np.float64), dtype, device, requires_grad)

    yield SampleInput(count((2, 3)), _certain_probs((2, 3), dtype, device),
                      name="prob 0 or 1")
    yield SampleInput(count((2, 3)), _certain_probs((3,), dtype, device), name="broadcast")
    yield SampleInput(count(()), _certain_probs((), dtype, device), name="0-d")
    yield SampleInput(_tensor(np.zeros((4,)), dtype, device), make((4,), dtype, device,
                                                                    low=0, high=1),
                      name="count 0")
    yield SampleInput(count((0, 3)), _certain_probs((0, 3), dtype, device), name="empty")
    yield SampleInput(count((3, 4)), _certain_probs((3, 4), dtype, device,
                                                    noncontiguous=True),
                      name="noncontiguous")


define("binomial", _binomial_samples, dtypes=FLOAT,
       ref=lambda count, prob: (count * (prob >= 1)).astype(count.dtype),
       skip={"gradcheck": _NOT_IMPLEMENTED})


def _bernoulli_samples(device, dtype, requires_grad=False):
    def probs(shape, **kw):
        return _certain_probs(shape, dtype, device, requires_grad, **kw)

    yield SampleInput(probs((2, 3)), name="probabilities 0 or 1")
    yield SampleInput(probs(()), name="0-d")
    yield SampleInput(probs((0, 3)), name="empty")
    yield SampleInput(probs((3, 4), noncontiguous=True), name="noncontiguous")
    yield SampleInput(make((2, 3), dtype, device), 0.0, name="p=0.0")
    yield SampleInput(make((2, 3), dtype, device), p=1.0, name="p=1.0")


def _bernoulli_grad_samples(device, dtype, requires_grad=False):
    """For the gradient checks: probabilities strictly inside (0, 1), which finite
    differences keep inside (a certain 0 or 1 would leave [0, 1]); the test re-seeds before
    each call (the registry marks bernoulli random), so every call draws the same."""
    if not requires_grad:
        yield from _bernoulli_samples(device, dtype)
        return
    yield SampleInput(make((2, 3), dtype, device, low=0.1, high=0.9, requires_grad=True),
                      name="probabilities in (0, 1)")
    yield SampleInput(make((), dtype, device, low=0.1, high=0.9, requires_grad=True),
                      name="0-d")
    yield SampleInput(make((3, 4), dtype, device, low=0.1, high=0.9, requires_grad=True,
                           noncontiguous=True), name="noncontiguous")


def _bernoulli_ref(a, p=None):
    return a.copy() if p is None else np.full(a.shape, p, a.dtype)


# bernoulli(probabilities) differentiates as in PyTorch (BernoulliBackward0: a zero gradient).
# The forward checks see certain probabilities (0 or 1: every generator draws the same); the
# gradient checks see uncertain ones, re-seeded before each call (PyTorch's wrapper_set_seed).
define("bernoulli", _bernoulli_grad_samples, dtypes=_HALF, ref=_bernoulli_ref)


def _multinomial_samples(device, dtype, requires_grad=False):
    """One-hot rows (unnormalised: any positive weight): every draw is the hot category."""
    rng = np.random.default_rng(next(_SEEDS))

    def one_hot(rows, cats, noncontiguous=False):
        arr = np.zeros((rows, cats))
        arr[np.arange(rows), rng.integers(0, cats, rows)] = rng.uniform(0.5, 3, rows)
        return _tensor(arr, dtype, device, requires_grad, noncontiguous)

    yield SampleInput(one_hot(3, 5), 1, name="one draw")
    yield SampleInput(one_hot(3, 5), 4, True, name="with replacement")
    yield SampleInput(one_hot(1, 4)[0], 3, replacement=True, name="1-d")
    yield SampleInput(one_hot(2, 4, noncontiguous=True), 1, name="noncontiguous")
    yield SampleInput(one_hot(2, 4), num_samples=2, replacement=True, name="keywords")


define("multinomial", _multinomial_samples, dtypes=_HALF)


del _name, _f, _ref, _cases
__all__ = ["reduction_samples", "distinct"]
