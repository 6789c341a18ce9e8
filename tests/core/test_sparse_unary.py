"""Element-wise unary ops of sparse tensors (``ember.sparse._pointwise``): the zero-preserving
ops PyTorch has for COO, CSR, CSC, BSR and BSC tensors, their in-place forms, and PyTorch's
errors for the others. Outputs (layout, indices, values, dtype, coalesced flag) and errors
against PyTorch (the oracle); float64 gradchecks in the values."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import assert_same_dispatch_error, sparse_parts

import ember
from ember.autograd import gradcheck

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:invalid value encountered"),  # sqrt(-0.4) is NaN
    pytest.mark.filterwarnings("ignore:divide by zero encountered"),  # atanh(True) is inf
    pytest.mark.filterwarnings("ignore:log1p_backward"),
]

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 3]]  # (0, 2) twice: uncoalesced
VAL = [0.3, -0.4, 0.55, 0.1, -0.65]  # in the domain of every op (|x| < 1), none an integer

#: the unary ops with a sparse kernel in PyTorch for every layout
ALL = ["abs", "neg", "sign", "sgn", "signbit", "sqrt", "sin", "sinh", "tan", "tanh", "asin",
       "asinh", "atan", "atanh", "ceil", "floor", "round", "trunc", "frac", "expm1", "log1p",
       "relu", "deg2rad", "rad2deg", "isnan", "isinf", "isposinf", "isneginf", "erf", "erfinv",
       "conj_physical", "positive", "absolute", "negative", "arcsin", "arcsinh", "arctan",
       "arctanh", "fix"]
COO_ONLY = ["square", "nan_to_num"]
COMPRESSED_ONLY = ["angle"]
#: ... with an in-place form
INPLACE = ["abs", "neg", "sign", "sgn", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh",
           "atan", "atanh", "ceil", "floor", "round", "trunc", "frac", "expm1", "log1p", "relu",
           "deg2rad", "rad2deg", "erf", "erfinv", "conj_physical", "absolute", "negative",
           "arcsin", "arcsinh", "arctan", "arctanh", "fix"]
#: not zero-preserving: PyTorch refuses them for every sparse layout
REFUSED = ["exp", "cos", "cosh", "acos", "log", "log2", "rsqrt", "reciprocal", "exp2", "erfc",
           "sigmoid", "lgamma", "digamma", "sinc"]
LAYOUTS = ["coo", "coalesced", "csr", "csc", "bsr", "bsc"]


def _torch():
    return pytest.importorskip("torch")


def _sparse(m, layout="coo", dtype=None, values=VAL, requires_grad=False):
    """The test tensor of library ``m`` (``ember`` or ``torch``) in ``layout``."""
    v = m.tensor(values, dtype=dtype or m.float32)
    s = m.sparse_coo_tensor(m.tensor(IDX), v, (3, 4))
    if requires_grad:
        s.requires_grad_(True)
    if layout == "coo":
        return s
    s = s.coalesce()
    if layout == "coalesced":
        return s
    if layout == "csr":
        return s.to_sparse_csr()
    if layout == "csc":
        return s.to_sparse_csc()
    dense = s.to_dense()
    return dense.to_sparse_bsr((1, 2)) if layout == "bsr" else dense.to_sparse_bsc((3, 1))


def _same(e, t, rtol=1e-6):
    """ember ``e`` equals torch ``t``: layout, size, dtype, indices and coalesced flag exactly,
    values to ``rtol`` (NaN where NaN)."""
    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    for a, b in zip(sparse_parts(e), sparse_parts(t), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-7)
        else:
            np.testing.assert_array_equal(a, b)


_same_error = assert_same_dispatch_error


# -- out of place ---------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ALL)
def test_unary_ops_match_torch(name, layout):
    torch = _torch()
    e = getattr(ember, name)(_sparse(ember, layout))
    t = getattr(torch, name)(_sparse(torch, layout))
    _same(e, t)
    _same(getattr(_sparse(ember, layout), name)(), t)  # the method


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", COO_ONLY + COMPRESSED_ONLY)
def test_layout_specific_ops_match_torch(name, layout):
    torch = _torch()
    run = (lambda m: getattr(m, name)(_sparse(m, layout)))
    supported = (layout in ("coo", "coalesced")) == (name in COO_ONLY)
    if supported:
        _same(run(ember), run(torch))
    else:
        _same_error(lambda: run(ember), lambda: run(torch))


@pytest.mark.parity
def test_neg_positive_and_conj_physical_keep_an_uncoalesced_tensor():
    torch = _torch()
    for name in ("neg", "negative", "positive", "conj_physical"):
        e, t = getattr(ember, name)(_sparse(ember)), getattr(torch, name)(_sparse(torch))
        assert not e.is_coalesced()
        _same(e, t)
    s = _sparse(ember)
    assert ember.positive(s) is s and ember.conj_physical(s) is s  # as PyTorch's


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float64"])
@pytest.mark.parametrize("name", ALL + COO_ONLY)
def test_dtypes_and_dtype_errors_match_torch(name, dtype):
    torch = _torch()
    values = {"bool": [True, False, True, True, False]}.get(dtype, [3, -4, 5, 1, -2])

    def run(m):
        return getattr(m, name)(_sparse(m, "coo", getattr(m, dtype), values))

    try:
        t = run(torch)
    except Exception:
        _same_error(lambda: run(ember), lambda: run(torch))
        return
    _same(run(ember), t)


@pytest.mark.parity
def test_hybrid_and_empty_tensors_match_torch():
    torch = _torch()
    for name in ("sin", "abs", "isnan", "relu", "square"):
        for make in (lambda m: m.tensor([[0.0, 0.5], [0.0, 0.0], [-0.25, 0.75]]).to_sparse(1),
                     lambda m: m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0),
                                                   (2, 3))):
            _same(getattr(ember, name)(make(ember)), getattr(torch, name)(make(torch)))


@pytest.mark.parity
def test_nan_to_num_and_round_arguments_match_torch():
    torch = _torch()
    vals = [float("nan"), 1.25, float("inf"), 2.5, float("-inf")]
    for kw in ({}, {"nan": 5.0}, {"posinf": 7.0, "neginf": -3.0}):
        _same(ember.nan_to_num(_sparse(ember, values=vals), **kw),
              torch.nan_to_num(_sparse(torch, values=vals), **kw))
    for layout in ("coo", "csr"):
        _same_error(lambda lay=layout: ember.round(_sparse(ember, lay), decimals=1),
                    lambda lay=layout: torch.round(_sparse(torch, lay), decimals=1))
        _same(ember.round(_sparse(ember, layout)), torch.round(_sparse(torch, layout)))


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr"])
@pytest.mark.parametrize("name", REFUSED)
def test_ops_that_do_not_preserve_zero_are_refused_as_in_torch(name, layout):
    torch = _torch()
    _same_error(lambda: getattr(ember, name)(_sparse(ember, layout)),
                lambda: getattr(torch, name)(_sparse(torch, layout)))
    _same_error(lambda: getattr(_sparse(ember, layout), name)(),
                lambda: getattr(_sparse(torch, layout), name)())
    _same_error(lambda: getattr(_sparse(ember, layout), name + "_")(),
                lambda: getattr(_sparse(torch, layout), name + "_")())


# -- in place -------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", ["coalesced", "csr", "csc", "bsr", "bsc"])
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_ops_match_torch(name, layout):
    torch = _torch()
    if name in ("round", "fix") and layout in ("csc", "bsr", "bsc"):
        # PyTorch's round_ asserts a CSR tensor there (an internal error): compare out of place
        t = getattr(torch, name)(_sparse(torch, layout))
    else:
        t = getattr(_sparse(torch, layout), name + "_")()
    s = _sparse(ember, layout)
    values = s.values()
    version = s._version
    assert getattr(s, name + "_")() is s
    _same(s, t)
    assert s._version > version
    np.testing.assert_allclose(values.numpy(), t.values().numpy(), rtol=1e-6)  # in place
    f = _sparse(ember, layout)
    assert getattr(ember, name + "_")(f) is f  # the function form
    _same(f, t)


@pytest.mark.parity
@pytest.mark.parametrize("name", INPLACE + ["nan_to_num", "square"])
def test_inplace_ops_of_uncoalesced_and_coo_only_match_torch(name):
    torch = _torch()
    try:
        t = getattr(_sparse(torch), name + "_")()
    except Exception:
        _same_error(lambda: getattr(_sparse(ember), name + "_")(),
                    lambda: getattr(_sparse(torch), name + "_")())
    else:  # neg_ and conj_physical_ take an uncoalesced tensor
        _same(getattr(_sparse(ember), name + "_")(), t)
    for layout in ("coalesced", "csr"):
        try:
            t = getattr(_sparse(torch, layout), name + "_")()
        except Exception:
            _same_error(lambda lay=layout: getattr(_sparse(ember, lay), name + "_")(),
                        lambda lay=layout: getattr(_sparse(torch, lay), name + "_")())
        else:
            _same(getattr(_sparse(ember, layout), name + "_")(), t)


@pytest.mark.parity
def test_inplace_dtype_and_leaf_errors_match_torch():
    torch = _torch()
    for m_fn in (lambda m: _sparse(m, "coalesced", m.int64, [3, -4, 5, 1, -2]).sqrt_(),
                 lambda m: _sparse(m, "csr", m.int64, [3, -4, 5, 1, -2]).sin_(),
                 lambda m: _sparse(m, "coo", requires_grad=True).sin_(),  # leaf, uncoalesced
                 lambda m: m.sparse_csr_tensor(m.tensor([0, 1, 2]), m.tensor([0, 1]),
                                               m.tensor([0.5, 0.25]), (2, 3),
                                               requires_grad=True).abs_()):
        _same_error(lambda f=m_fn: f(ember), lambda f=m_fn: f(torch))


# -- autograd -------------------------------------------------------------------------------

#: ops whose derivative is defined at the test values (for gradcheck: all of them but the
#: boolean ones)
DIFFERENTIABLE = ["abs", "neg", "sign", "sgn", "sqrt", "sin", "sinh", "tan", "tanh", "asin",
                  "asinh", "atan", "atanh", "ceil", "floor", "round", "trunc", "frac", "expm1",
                  "log1p", "relu", "deg2rad", "rad2deg", "erf", "erfinv"]
POSITIVE = [0.3, 0.4, 0.55, 0.1, 0.65]  # sqrt's domain; duplicates sum to 0.4


def _values64():
    return ember.tensor(POSITIVE, dtype=ember.float64, requires_grad=True)


@pytest.mark.parametrize(("name", "layout"), [
    (name, layout) for name in DIFFERENTIABLE for layout in ("coo", "csr", "csc", "bsr")
    if (name, layout) != ("sqrt", "bsr")  # a block stores zeros, where sqrt has no derivative
] + [("square", "coo"), ("angle", "csr"), ("angle", "bsr")])
def test_gradcheck_in_the_values(name, layout):
    def f(v):
        s = ember.sparse_coo_tensor(ember.tensor(IDX), v, (3, 4))
        if layout != "coo":
            s = s.coalesce().to_sparse(layout=getattr(ember, "sparse_" + layout),
                                       blocksize=(1, 2) if layout == "bsr" else None)
        return getattr(ember, name)(s).to_dense()

    assert gradcheck(f, (_values64(),))


@pytest.mark.parity
@pytest.mark.parametrize("name", ["abs", "neg", "log1p", "relu", "deg2rad", "rad2deg", "frac",
                                  "sign", "ceil", "square"])
def test_gradients_and_grad_fn_match_torch(name):
    torch = _torch()
    grads, names = [], []
    for m in (ember, torch):
        v = m.tensor(VAL, dtype=m.float64, requires_grad=True)
        out = getattr(m, name)(m.sparse_coo_tensor(m.tensor(IDX), v, (3, 4)))
        names.append(out.grad_fn.name())
        out.to_dense().sum().backward()
        grads.append(v.grad.numpy())
    assert names[0] == names[1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_grad_fn_names_are_the_dense_ops():
    s = _sparse(ember, "csr", ember.float64, requires_grad=True) * 1
    assert ember.sin(s).grad_fn.name() == "SinBackward0"
    assert ember.log1p(s).grad_fn.name() == "Log1PBackward0"


def test_gradcheck_of_inplace_ops():
    def f(v, name):
        s = ember.sparse_coo_tensor(ember.tensor(IDX), v, (3, 4)).coalesce() * 1
        getattr(s, name + "_")()
        return s.to_dense()

    for name in ("sin", "sqrt", "abs", "tanh", "relu"):
        assert gradcheck(lambda v, n=name: f(v, n), (_values64(),))
    s = ember.sparse_coo_tensor(ember.tensor(IDX), _values64(), (3, 4)).coalesce() * 1
    assert s.sin_().grad_fn.name() == "SinBackward0"


# -- the hook leaves dense ops alone ----------------------------------------------------------

def test_dense_ops_and_their_errors_are_unchanged():
    x = ember.tensor([[0.5, -1.0], [2.0, 0.0]])
    np.testing.assert_allclose(ember.sin(x).numpy(), np.sin(x.numpy()), rtol=1e-6)
    y = x.clone()
    assert y.abs_() is y
    np.testing.assert_array_equal(y.numpy(), np.abs(x.numpy()))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.tensor([1, 2]).frac()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ember.tensor([1, 2]).sin_()


def test_other_inplace_ops_stay_refused():
    """In-place ops that are not unary (``clamp_``) have no sparse kernel in Ember; ``mul_``
    has one, as in PyTorch (test_sparse_parity_probes.py)."""
    for layout in ("coalesced", "csr"):
        s = _sparse(ember, layout)
        dense = s.to_dense()
        assert s.mul_(2) is s
        np.testing.assert_array_equal(s.to_dense().numpy(), dense.numpy() * 2)
        with pytest.raises(NotImplementedError, match="Could not run 'aten::clamp_'"):
            s.clamp_(min=0.0)
