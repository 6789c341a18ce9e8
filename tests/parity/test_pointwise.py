"""Elementwise ops against PyTorch (the oracle; skipped without it): values, dtypes and shapes
on bool/integer/float16/float32/float64 inputs, gradients and grad_fn names, and that errors
are raised in the same cases."""
# ruff: noqa: B023 - run_both calls its lambdas at once, so loop variables are bound correctly

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.parity, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
TOL = {"float16": (2e-3, 1e-3), "float32": (2e-6, 1e-6), "float64": (1e-12, 1e-12)}


def sample_np(name):
    """Data suited to the dtype."""
    if name == "bool":
        data = np.array([True, False, True, True, False])
    elif name == "uint8":
        data = np.array([0, 1, 2, 5, 200], dtype=np.uint8)
    elif name.startswith("int"):
        data = np.array([-3, -1, 0, 1, 2, 5], dtype=name)
    else:
        data = np.array([-2.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 0.999, 1.0, 1.5, 3.0, 10.0,
                         np.nan, np.inf, -np.inf], dtype=name)
    return data


def sample(name):
    """The same data for both libraries."""
    data = sample_np(name)
    return ember.tensor(data.copy()), torch.tensor(data.copy())


def dtype_name(d):
    return str(d).split(".")[1]


def assert_matches(e, t, tol=None):
    """Same dtype, shape and values (NaN where NaN) of an ember and a torch result."""
    if isinstance(t, (bool, float, int)):
        assert e == t and type(e) is type(t)
        return
    if isinstance(t, tuple):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert_matches(a, b, tol)
        return
    assert dtype_name(e.dtype) == dtype_name(t.dtype), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    a, b = e.detach().numpy(), t.detach().numpy()
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
        return
    rtol, atol = tol or TOL[a.dtype.name]
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


def run_both(e_fn, t_fn, tol=None):
    """Both raise (in the same family of exceptions) or both give the same result."""
    e_exc = t_exc = None
    try:
        t_out = t_fn()
    except Exception as exc:  # any error of the oracle is the expectation
        t_exc = exc
    try:
        e_out = e_fn()
    except Exception as exc:  # noqa: B - LE001
        e_exc = exc
    if t_exc is not None or e_exc is not None:
        assert t_exc is not None and e_exc is not None, (t_exc, e_exc)
        assert isinstance(e_exc, RuntimeError) == isinstance(t_exc, RuntimeError), (t_exc, e_exc)
        return
    assert_matches(e_out, t_out, tol)


UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
         "square", "abs", "absolute", "sign", "sgn", "signbit", "neg", "negative", "positive",
         "sin", "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh",
         "cosh", "tanh", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "erf",
         "erfc", "erfinv", "sigmoid", "logit", "lgamma", "digamma", "floor", "ceil", "round",
         "trunc", "fix", "frac", "nan_to_num", "isnan", "isinf", "isfinite", "isposinf",
         "isneginf", "isreal", "logical_not", "bitwise_not", "relu", "clone"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name, dtype):
    e, t = sample(dtype)
    tol = None
    if name in ("lgamma", "digamma") and dtype == "float64":
        tol = (1e-11, 1e-12)
    run_both(lambda: getattr(ember, name)(e), lambda: getattr(torch, name)(t), tol)


@pytest.mark.parametrize("name", ["exp", "sqrt", "abs", "floor", "round", "sign", "sigmoid",
                                  "logical_not", "bitwise_not", "clamp_", "nan_to_num"])
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_inplace_matches_torch(name, dtype):
    e, t = sample(dtype)
    method = name if name.endswith("_") else name + "_"
    args = (0.5,) if name == "clamp_" else ()
    run_both(lambda: getattr(e, method)(*args), lambda: getattr(t, method)(*args))
    assert_matches(e, t)


def test_special_functions_float64_accuracy():
    x = np.linspace(-8, 8, 1601)
    y = np.linspace(-0.9999, 0.9999, 801)
    g = np.concatenate([np.linspace(-9.75, -0.25, 39), np.linspace(0.01, 60, 700)])
    for name, data in (("erf", x), ("erfc", x), ("erfinv", y), ("lgamma", g),
                       ("digamma", g), ("sigmoid", x * 10), ("logit", (y + 1) / 2)):
        assert_matches(getattr(ember, name)(ember.tensor(data)),
                       getattr(torch, name)(torch.tensor(data)), (1e-12, 1e-13))


def test_round_decimals_matches_torch():
    data = np.array([0.125, 0.375, 1.005, 2.5, -2.5, 1234.5678, 15.0, -0.05])
    for dtype in ("float16", "float32", "float64"):
        for decimals in (-2, -1, 0, 1, 2, 3):
            run_both(lambda: ember.round(ember.tensor(data, dtype=getattr(ember, dtype)),
                                         decimals=decimals),
                     lambda: torch.round(torch.tensor(data, dtype=getattr(torch, dtype)),
                                         decimals=decimals))
    run_both(lambda: ember.round(ember.tensor([1, 2]), decimals=1),
             lambda: torch.round(torch.tensor([1, 2]), decimals=1))


BINARY_SCALARS = ["copysign", "xlogy", "bitwise_and", "bitwise_or", "bitwise_xor",
                  "bitwise_left_shift", "bitwise_right_shift", "gt", "lt", "ge", "le", "eq", "ne"]
BINARY_TENSORS = ["atan2", "arctan2", "hypot", "maximum", "minimum", "fmax", "fmin",
                  "logical_and", "logical_or", "logical_xor"]


def pair(da, db, zero_dim_b=False):
    """Two operands of the given dtypes, for both libraries (``b`` 0-dim if asked)."""
    a, b = sample_np(da), sample_np(db)[::-1]
    n = min(len(a), len(b))
    a, b = a[:n].copy(), b[:n].copy()
    if zero_dim_b:
        b = np.array(b[1])
    return ember.tensor(a), torch.tensor(a), ember.tensor(b.copy()), torch.tensor(b.copy())


@pytest.mark.parametrize("name", BINARY_SCALARS + BINARY_TENSORS)
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_binary_tensor_tensor_matches_torch(name, da, db):
    ea, ta, eb, tb = pair(da, db)
    run_both(lambda: getattr(ember, name)(ea, eb), lambda: getattr(torch, name)(ta, tb))
    ea, ta, eb, tb = pair(da, db, zero_dim_b=True)
    run_both(lambda: getattr(ember, name)(ea, eb), lambda: getattr(torch, name)(ta, tb))


@pytest.mark.parametrize("name", BINARY_SCALARS + BINARY_TENSORS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [2, -1.5, True])
def test_binary_tensor_scalar_matches_torch(name, dtype, scalar):
    e, t = sample(dtype)
    run_both(lambda: getattr(ember, name)(e, scalar), lambda: getattr(torch, name)(t, scalar))
    if name in ("xlogy", "bitwise_and", "bitwise_left_shift"):
        run_both(lambda: getattr(ember, name)(scalar, e), lambda: getattr(torch, name)(scalar, t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_match_torch(dtype):
    e, t = sample(dtype)
    for op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__rand__",
               "__ror__", "__rlshift__"):
        for other in (1, True):
            run_both(lambda: getattr(e, op)(other), lambda: getattr(t, op)(other))
    run_both(lambda: ~e, lambda: ~t)
    run_both(lambda: -e, lambda: -t)
    run_both(lambda: +e, lambda: +t)
    run_both(lambda: abs(e), lambda: abs(t))
    run_both(lambda: e & e, lambda: t & t)
    e2, t2 = sample(dtype)
    run_both(lambda: e2.__ior__(e2), lambda: t2.__ior__(t2))
    assert_matches(e2, t2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_matches_torch(dtype):
    e, t = sample(dtype)
    ec, tc = e.isfinite() & (e != 0), t.isfinite() & (t != 0)
    for other in (0, 1.5, True):
        run_both(lambda: ember.where(ec, e, other), lambda: torch.where(tc, t, other))
        run_both(lambda: ember.where(ec, other, e), lambda: torch.where(tc, other, t))
    for d2 in ("int32", "float16", "float64"):
        for zero_dim in (False, True):
            ea, ta, eb, tb = pair(dtype, d2, zero_dim)
            ecn, tcn = ember.tensor(tc.numpy()[:len(ta)]), tc[:len(ta)]
            run_both(lambda: ember.where(ecn, ea, eb), lambda: torch.where(tcn, ta, tb))
    run_both(lambda: ember.where(ec, 1, 0), lambda: torch.where(tc, 1, 0))
    run_both(lambda: ember.where(ec, 1.0, 0), lambda: torch.where(tc, 1.0, 0))
    run_both(lambda: ember.where(e, 1, 0), lambda: torch.where(t, 1, 0))
    run_both(lambda: e.where(ec, 2), lambda: t.where(tc, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_matches_torch(dtype):
    e, t = sample(dtype)
    for lo, hi in ((0, None), (None, 2), (0, 2), (0.5, None), (0.5, 1.5), (2, 0), (True, None)):
        run_both(lambda: ember.clamp(e, lo, hi), lambda: torch.clamp(t, lo, hi))
        run_both(lambda: ember.clip(e, min=lo, max=hi), lambda: torch.clip(t, min=lo, max=hi))
    run_both(lambda: ember.clamp_min(e, 1), lambda: torch.clamp_min(t, 1))
    run_both(lambda: ember.clamp_max(e, 1), lambda: torch.clamp_max(t, 1))
    n = e.shape[0]
    lo_np = np.linspace(-1, 1, n)
    for bound_dtype in ("float32", "int64"):
        elo = ember.tensor(lo_np).to(getattr(ember, bound_dtype))
        tlo = torch.tensor(lo_np).to(getattr(torch, bound_dtype))
        run_both(lambda: ember.clamp(e, elo), lambda: torch.clamp(t, tlo))
        run_both(lambda: ember.clamp(e, max=elo), lambda: torch.clamp(t, max=tlo))
        run_both(lambda: ember.clamp(e, elo, elo + 1), lambda: torch.clamp(t, tlo, tlo + 1))
    run_both(lambda: ember.clamp(e), lambda: torch.clamp(t))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
def test_lerp_nan_to_num_matches_torch(dtype):
    e, t = sample(dtype)
    t2 = t.flip(0)
    e2 = ember.tensor(t2.numpy())
    for w in (0.25, 0.75, -1.0, 2):
        run_both(lambda: ember.lerp(e, e2, w), lambda: torch.lerp(t, t2, w))
    ew = ember.tensor(np.linspace(-0.5, 1.5, e.shape[0])).to(e.dtype)
    tw = torch.tensor(np.linspace(-0.5, 1.5, t.shape[0])).to(t.dtype)
    run_both(lambda: ember.lerp(e, e2, ew), lambda: torch.lerp(t, t2, tw))
    run_both(lambda: ember.lerp(e, e2.double(), 0.5), lambda: torch.lerp(t, t2.double(), 0.5))
    for kw in ({}, {"nan": 1.0}, {"posinf": 7.0, "neginf": -7.0}):
        run_both(lambda: ember.nan_to_num(e, **kw), lambda: torch.nan_to_num(t, **kw))


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float64", "float64"),
                                   ("int64", "int64"), ("bool", "bool"), ("float32", "float64"),
                                   ("int64", "float32")])
def test_closeness_matches_torch(da, db):
    ea, ta, eb, tb = pair(da, db)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.5, "atol": 0.1}, {"rtol": 0, "atol": 0}):
        run_both(lambda: ember.isclose(ea, eb, **kw), lambda: torch.isclose(ta, tb, **kw))
        run_both(lambda: ember.isclose(ea, ea, **kw), lambda: torch.isclose(ta, ta, **kw))
        run_both(lambda: ember.allclose(ea, eb, **kw), lambda: torch.allclose(ta, tb, **kw))
    run_both(lambda: ember.equal(ea, eb), lambda: torch.equal(ta, tb))
    run_both(lambda: ember.equal(ea, ea.clone()), lambda: torch.equal(ta, ta.clone()))
    run_both(lambda: ember.equal(ea, ember.tensor(ta.numpy()[:2])), lambda: torch.equal(ta, ta[:2]))


@pytest.mark.parametrize("dst,src", [("float32", "float64"), ("int32", "float32"),
                                     ("uint8", "int64"), ("bool", "float32"),
                                     ("float16", "int64"), ("int64", "bool")])
def test_copy_fill_zero_match_torch(dst, src):
    es, ts = sample(src)
    n = es.shape[0]
    ed = ember.zeros(2, n, dtype=getattr(ember, dst))
    td = torch.zeros(2, n, dtype=getattr(torch, dst))
    finite = ts.isfinite() if ts.is_floating_point() else torch.ones(n, dtype=torch.bool)
    ts = torch.where(finite, ts, torch.zeros((), dtype=ts.dtype))
    es = ember.tensor(ts.numpy())
    run_both(lambda: ed.copy_(es), lambda: td.copy_(ts))
    assert_matches(ed, td)
    for value in (3, 2.7, True, -1, 300):
        run_both(lambda: ed.fill_(value), lambda: td.fill_(value))
        assert_matches(ed, td)
    run_both(lambda: ed.fill_(ember.tensor(5)), lambda: td.fill_(torch.tensor(5)))
    assert_matches(ed, td)
    run_both(lambda: ed.zero_(), lambda: td.zero_())
    assert_matches(ed, td)
    run_both(lambda: ed.copy_(ember.zeros(3)), lambda: td.copy_(torch.zeros(3)))
    run_both(lambda: ed.t().copy_(ember.ones(n, 2)), lambda: td.t().copy_(torch.ones(n, 2)))
    assert_matches(ed, td)
    run_both(lambda: ed.t().copy_(ember.ones(1)), lambda: td.t().copy_(torch.ones(1)))
    assert_matches(ed, td)


def test_errors_raised_as_in_torch():
    cases = [
        (lambda m: m.neg(m.tensor([True])), RuntimeError, "Negation, the `-` operator"),
        (lambda m: -m.tensor([True]), RuntimeError, "Negation"),
        (lambda m: +m.tensor([True]), RuntimeError, "The `\\+` operator, on a bool tensor"),
        (lambda m: m.bitwise_and(m.tensor([1.0]), m.tensor([1.0])), NotImplementedError,
         "\"bitwise_and_cpu\" not implemented for 'Float'"),
        (lambda m: m.tensor([1.0]) | 1, NotImplementedError, "bitwise_or_cpu"),
        (lambda m: m.tensor([1.0]) << 1, NotImplementedError, "lshift_cpu"),
        (lambda m: ~m.tensor([1.0]), TypeError, "only implemented on integer and Boolean"),
        (lambda m: m.clamp(m.tensor([1.0])), RuntimeError,
         "At least one of 'min' or 'max' must not be None"),
        (lambda m: m.abs(m.tensor([True])), NotImplementedError, "\"abs_cpu\" not implemented"),
        (lambda m: m.frac(m.tensor([1])), NotImplementedError, "frac_cpu"),
        (lambda m: m.hypot(m.tensor([1]), m.tensor([1])), NotImplementedError, "hypot_cpu"),
        (lambda m: m.maximum(m.tensor([1.0]), 2.0), TypeError, "must be Tensor, not float"),
        (lambda m: m.where(m.tensor([1.0]), 1, 0), RuntimeError,
         "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
        (lambda m: m.isclose(m.tensor([1]), m.tensor([1.0])), RuntimeError,
         "Long did not match Float"),
        (lambda m: m.lerp(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64), 0.5), RuntimeError,
         "expected dtype float for `end` but got dtype double"),
        (lambda m: m.zeros(3).fill_(m.tensor([1.0])), RuntimeError,
         "fill_ only supports 0-dimension value tensor"),
        (lambda m: m.zeros(3, dtype=m.uint8).fill_(300), RuntimeError,
         "value cannot be converted to type uint8_t without overflow"),
        (lambda m: m.zeros(3).copy_(m.zeros(2)), RuntimeError,
         "The size of tensor a \\(3\\) must match the size of tensor b \\(2\\) at "
         "non-singleton dimension 0"),
        (lambda m: m.ones(3, requires_grad=True).fill_(1), RuntimeError,
         "a leaf Variable that requires grad is being used in an in-place operation"),
        (lambda m: m.ones(3, requires_grad=True).zero_(), RuntimeError, "leaf Variable"),
        (lambda m: m.ones(3, requires_grad=True).copy_(m.ones(3)), RuntimeError, "leaf Variable"),
        (lambda m: m.tensor([1]).clamp_(min=0.5), RuntimeError,
         "result type Float can't be cast to the desired output type"),
    ]
    for fn, exc, message in cases:
        with pytest.raises(exc):
            fn(torch)
        with pytest.raises(exc, match=message):
            fn(ember)


GRAD_CASES = {
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "fmax": lambda m, x, y: m.fmax(x, y),
    "fmin": lambda m, x, y: m.fmin(x, y),
    "clamp_tensor": lambda m, x, y: m.clamp(x, y, y + 0.5),
    "clamp_crossed": lambda m, x, y: m.clamp(x, y + 0.5, y),
    "clamp_min_tensor": lambda m, x, y: m.clamp(x, min=y),
    "clamp_scalar": lambda m, x, y: m.clamp(x, -0.5, 0.5) + m.clamp(y, min=0.0),
    "where": lambda m, x, y: m.where(x > y, x, y * 2),
    "xlogy": lambda m, x, y: m.xlogy(x, y),
    "copysign": lambda m, x, y: m.copysign(x, y),
    "atan2": lambda m, x, y: m.atan2(x, y),
    "hypot": lambda m, x, y: m.hypot(x, y),
    "lerp": lambda m, x, y: m.lerp(x, y, x.sigmoid()),
    "logit": lambda m, x, y: m.logit(x) + m.logit(y, eps=0.2),
    "nan_to_num": lambda m, x, y: m.nan_to_num(x.log()) + y.abs(),
    "rounding": lambda m, x, y: x.round() + x.floor() + y.ceil() + y.trunc() + x.frac(),
    "special": lambda m, x, y: m.erf(x) + m.erfc(y) + m.erfinv(x.tanh()) + m.lgamma(y.abs() + 1)
    + m.digamma(x.abs() + 0.5),
    "copy_": lambda m, x, y: m.zeros(2, 1, 5, dtype=m.float64).copy_(x * 2) * y,
    "fill_": lambda m, x, y: (x * 1).fill_(y.sum()) * y,
    "sign": lambda m, x, y: x.sign() * y + y.sgn() + y.abs(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(case):
    xv = np.array([0.0, 0.3, -0.7, 0.5, 0.5])
    yv = np.array([0.0, 0.6, -0.2, 0.5, -1.0])
    results = []
    for m in (torch, ember):
        x = m.tensor(xv, requires_grad=True)
        y = m.tensor(yv, requires_grad=True)
        out = GRAD_CASES[case](m, x, y)
        out.backward(m.ones(out.shape, dtype=out.dtype))
        grads = [g.detach().numpy() if g is not None else None for g in (x.grad, y.grad)]
        results.append((out.detach().numpy(), grads))
    (t_out, t_grads), (e_out, e_grads) = results
    np.testing.assert_allclose(e_out, t_out, rtol=1e-12, atol=1e-12, equal_nan=True)
    for eg, tg in zip(e_grads, t_grads):
        assert (eg is None) == (tg is None)
        if tg is not None:
            # PyTorch's trigamma (the digamma gradient) is good to ~5e-10 only
            rtol = 1e-8 if case == "special" else 1e-10
            np.testing.assert_allclose(eg, tg, rtol=rtol, atol=1e-12, equal_nan=True)


NODE_CASES = [
    ("exp", lambda m, x: m.exp(x)), ("log1p", lambda m, x: m.log1p(x)),
    ("square", lambda m, x: m.square(x)), ("abs", lambda m, x: m.abs(x)),
    ("arcsin", lambda m, x: m.arcsin(x)), ("erfinv", lambda m, x: m.erfinv(x)),
    ("round", lambda m, x: m.round(x)), ("round1", lambda m, x: m.round(x, decimals=1)),
    ("clamp", lambda m, x: m.clamp(x, 0, 1)), ("clamp_min", lambda m, x: m.clamp_min(x, 0)),
    ("clamp_t", lambda m, x: m.clamp(x, min=m.zeros(()))),
    ("clamp_max_t", lambda m, x: m.clamp_max(x, m.zeros(()))),
    ("where", lambda m, x: m.where(x > 0, x, 0.0)), ("maximum", lambda m, x: m.maximum(x, x)),
    ("xlogy0", lambda m, x: m.xlogy(x, x)), ("xlogy1", lambda m, x: m.xlogy(2.0, x)),
    ("xlogy2", lambda m, x: m.xlogy(x, 2.0)), ("lerp0", lambda m, x: m.lerp(x, x, 0.5)),
    ("lerp1", lambda m, x: m.lerp(x, x, x)), ("clone", lambda m, x: m.clone(x)),
    ("copy_", lambda m, x: m.zeros(3).copy_(x)), ("fill", lambda m, x: (x * 1).fill_(1)),
    ("fill_t", lambda m, x: (x * 1).fill_(x.sum())), ("zero_", lambda m, x: (x * 1).zero_()),
    ("nan_to_num", lambda m, x: m.nan_to_num(x)), ("logit", lambda m, x: m.logit(x)),
    ("sgn", lambda m, x: m.sgn(x)), ("fix", lambda m, x: m.fix(x)),
]


@pytest.mark.parametrize("case", NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_grad_fn_names_match_torch(case):
    _, fn = case
    names = []
    for m in (torch, ember):
        x = m.tensor([0.25, 0.5, 0.75], requires_grad=True)
        names.append(fn(m, x).grad_fn.name().split("::")[-1])
    assert names[0] == names[1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("weight", ["tensor", 0.3, 0.7])
def test_lerp_is_pytorchs_bit_for_bit(dtype, weight):
    """PyTorch's lerp fuses its multiply-adds (and takes a number weight in the opmath type):
    the same bits, also where infinities make the fused form overflow."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 200, 50))
    w = rng.random((200, 50)) * 1.6 - 0.3
    a[0, :3] = [np.inf, -np.inf, 1e308]

    def run(lib):
        t = getattr(lib, dtype)
        ww = lib.from_numpy(w).to(t) if weight == "tensor" else weight
        return lib.lerp(lib.from_numpy(a).to(t), lib.from_numpy(b).to(t), ww).double().numpy()

    np.testing.assert_array_equal(run(ember), run(torch))
