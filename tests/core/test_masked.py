"""ember.masked (torch.masked): MaskedTensor and the masked reductions, against the torch
oracle where it is installed (the four MaskedTensor tutorials, every masked op on random data
and masks, elementwise/reduction/shape-op parity, errors), with float64 gradchecks and the
lazy-import contract."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.masked as masked
from ember.masked import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

pytestmark = [pytest.mark.filterwarnings("ignore:The PyTorch API of MaskedTensors"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
              pytest.mark.filterwarnings("ignore:.*is not implemented in __torch_dispatch__"),
              pytest.mark.filterwarnings("ignore:It is not recommended to create a MaskedTensor")]


@pytest.fixture(autouse=True)
def _masked_dispatch_on():
    """The suite's fixture turns dispatch off around each test; ember.masked needs it on
    (importing it turns it on), as in a program that imported it."""
    from ember.masked.maskedtensor.core import enable_dispatch

    enable_dispatch()


def _torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.masked")
    return torch


def _np(x):
    return x.detach().cpu().numpy()


def _tnp(x):
    return x.detach().cpu().numpy()


def _pair(torch, data: np.ndarray, mask: np.ndarray):
    """The same MaskedTensor in Ember and in torch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = masked_tensor(ember.tensor(data), ember.tensor(mask))
        t = torch.masked.masked_tensor(torch.tensor(data), torch.tensor(mask))
    return e, t


def _same_masked(e, t, rtol=1e-5, atol=1e-6):
    """Equal masks, equal data where specified (and equal dtype and shape)."""
    assert is_masked_tensor(e), type(e)
    assert type(t).__name__ == "MaskedTensor"
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    em, tm = _np(e.get_mask()), _tnp(t.get_mask())
    np.testing.assert_array_equal(em, tm)
    ed, td = _np(e.get_data()), _tnp(t.get_data())
    np.testing.assert_allclose(ed[em], td[tm], rtol=rtol, atol=atol)


def _same(e, t, rtol=1e-5, atol=1e-6):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _tnp(t), rtol=rtol, atol=atol, equal_nan=True)


def _trepr(t) -> str:
    return repr(t)


# -- construction, fields, printing, warnings ---------------------------------------------------

def test_construction_warns_and_copies():
    data = ember.arange(6.0).reshape(2, 3)
    mask = ember.tensor([[True, False, True], [False, True, True]])
    with pytest.warns(UserWarning, match="The PyTorch API of MaskedTensors is in prototype stage"):
        mt = MaskedTensor(data, mask)
    data.add_(100)
    assert _np(mt.get_data())[0, 0] == 0.0  # a copy, as torch's clone
    assert mt.shape == (2, 3) and mt.dtype == ember.float32 and mt.dim() == 2
    assert mt.layout == ember.strided and not mt.is_sparse and not mt.is_sparse_coo()
    assert is_masked_tensor(mt) and not is_masked_tensor(data)
    assert isinstance(mt, ember.Tensor) and mt.numel() == 6 and len(mt) == 2
    with pytest.warns(UserWarning, match="not recommended to create a MaskedTensor with a tensor "
                                         "that requires_grad"):
        MaskedTensor(ember.ones(2, requires_grad=True), ember.tensor([True, False]))


def test_repr_matches_torch():
    torch = _torch()
    data = np.arange(24).reshape(2, 3, 4)
    mask = data % 2 == 0
    e, t = _pair(torch, data.astype(np.float32), mask)
    assert repr(e) == _trepr(t)
    assert repr(e[0]) == _trepr(t[0]) and repr(e[:, :, 2:4]) == _trepr(t[:, :, 2:4])
    ei, ti = _pair(torch, data, mask)
    assert repr(ei[0]) == _trepr(ti[0])
    eb, tb = _pair(torch, data > 5, mask)
    assert repr(eb) == _trepr(tb)
    assert repr(e.sum()) == _trepr(t.sum())  # a 0-dim MaskedTensor
    ef, tf = _pair(torch, np.full(3, np.nan, np.float32), np.zeros(3, bool))
    assert repr(ef.mean()) == _trepr(tf.mean()) == "MaskedTensor(--, False)"


def test_fields_and_to_tensor():
    torch = _torch()
    data = np.array([[1.0, 2, 3], [4, 5, 6]], np.float32)
    mask = np.array([[True, False, True], [False, False, True]])
    e, t = _pair(torch, data, mask)
    np.testing.assert_array_equal(_np(e.get_data()), data)
    np.testing.assert_array_equal(_np(e.get_mask()), mask)
    _same(e.to_tensor(-1.0), t.to_tensor(-1.0))
    _same(e.to_tensor(0), t.to_tensor(0))
    assert e.get_mask().dtype == ember.bool
    with pytest.raises(RuntimeError, match="tolist"):
        e.tolist()
    assert e.sum().item() == t.sum().item()


# -- the overview tutorial -----------------------------------------------------------------------

def test_tutorial_overview_where_gradient():
    """torch.where with MaskedTensors: the gradient reaches only the selected elements."""
    x = ember.tensor([-10.0, -5, 0, 5, 10, 50, 60, 70, 80, 90, 100])
    mask = x < 0
    mx = masked_tensor(x, mask, requires_grad=True)
    my = masked_tensor(ember.ones_like(x), ~mask, requires_grad=True)
    y = ember.where(mask, ember.exp(mx), my)
    s = y.sum()
    assert repr(s) == "MaskedTensor(  9.0068, True)"
    s.backward()
    assert repr(mx.grad) == (  # PyTorch's output
        "MaskedTensor(\n  [  0.0000,   0.0067,       --,       --,       --,       --,       --,"
        "       --,       --,       --,       --]\n)")
    assert repr(my.grad) == (
        "MaskedTensor(\n  [      --,       --,   1.0000,   1.0000,   1.0000,   1.0000,   1.0000,"
        "   1.0000,   1.0000,   1.0000,   1.0000]\n)")
    assert mx.is_leaf and mx.requires_grad and not y.is_leaf


def test_tutorial_overview_other_issues():
    torch = _torch()
    # where with a/0 on the unselected side: the result is c, specified
    a = masked_tensor(ember.tensor(0.7), ember.tensor(True), requires_grad=True)
    out = ember.where(ember.tensor(False), a / 0, ember.ones(()))
    assert repr(out) == "MaskedTensor(  1.0000, True)"
    # x / 0 under a mask: the specified element's gradient is 1
    x = ember.tensor([1.0, 1.0], requires_grad=True)
    div = ember.tensor([0.0, 1.0])
    loss = as_masked_tensor(x / div, div != 0)
    loss.sum().backward()
    assert _np(x.grad)[1] == 1.0
    # nansum: the gradient of b ignores the masked-out nan
    a = ember.tensor([1.0, 2.0, float("nan")])
    b = ember.tensor(1.0, requires_grad=True)
    mt = masked_tensor(a, ~ember.isnan(a))
    c1 = ember.sum(mt * b)
    assert repr(c1) == "MaskedTensor(  3.0000, True)"
    (bgrad,) = ember.autograd.grad(c1, b, retain_graph=True)
    assert float(bgrad) == 3.0
    # safe softmax: a fully masked-out column is masked out, not nan
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 3)).astype(np.float32)
    m = np.array([[True, False, False], [True, False, True], [False, False, False]])
    e, t = _pair(torch, data, m)
    _same_masked(e.softmax(0), t.softmax(0))
    assert repr(e.softmax(0)) == _trepr(t.softmax(0))
    # nan* operators: mean and argmin ignoring the zeros
    xx = ember.arange(16).float()
    yy = xx * xx.fmod(4)
    assert repr(ember.mean(masked_tensor(yy, yy != 0))) == "MaskedTensor( 16.6667, True)"
    assert repr(ember.argmin(masked_tensor(yy, yy != 0))) == "MaskedTensor(  1.0000, True)"
    xn = ember.empty(16).fill_(float("nan"))
    assert repr(ember.mean(masked_tensor(xn, ~ember.isnan(xn)))) == "MaskedTensor(--, False)"


# -- the advanced-semantics tutorial ------------------------------------------------------------

def test_tutorial_advanced_semantics():
    torch = _torch()
    data = np.arange(5.0, dtype=np.float32)
    mask = np.array([True, True, False, True, False])
    mt0, tt0 = _pair(torch, data, mask)
    mt1, tt1 = _pair(torch, data, ~mask)
    with pytest.raises(ValueError) as info:
        mt0 + mt1
    with pytest.raises(ValueError) as tinfo:
        tt0 + tt1
    assert str(info.value) == str(tinfo.value) == (
        "Input masks must match. If you need support for this, please open an issue on Github.")
    t0, t1 = mt0.to_tensor(0), mt1.to_tensor(0)
    mt2 = masked_tensor(t0 + t1, mt0.get_mask() & mt1.get_mask())
    tm2 = torch.masked.masked_tensor(tt0.to_tensor(0) + tt1.to_tensor(0),
                                     tt0.get_mask() & tt1.get_mask())
    assert repr(mt2) == _trepr(tm2)
    # reductions on dim 1
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    mask = np.array([[True, False, True, True], [False, False, False, False],
                     [True, True, False, True]])
    e, t = _pair(torch, data, mask)
    for fn in ("sum", "mean", "prod", "amin", "amax"):
        er, tr = getattr(ember, fn)(e, 1), getattr(torch, fn)(t, 1)
        assert repr(er) == _trepr(tr), fn
    # associativity: the user fills explicitly
    data0 = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    mask0 = np.array([[True, True, False, False, False], [False, False, False, True, True]])
    mask1 = np.array([[False, False, False, True, True], [True, True, False, False, False]])
    e0, t0_ = _pair(torch, data0, ~mask0)
    e1, t1_ = _pair(torch, data0 + 10, ~mask1)
    _same((e0.to_tensor(0) + e1.to_tensor(0)).sum(0), (t0_.to_tensor(0) + t1_.to_tensor(0)).sum(0))


# -- the adagrad tutorial (with dense masks: Ember has no sparse MaskedTensors) -----------------

def test_tutorial_adagrad_dense_masks():
    """The adagrad tutorial's update with dense masks, against torch's sparse original."""
    torch = _torch()
    eps, clr = 1e-10, 0.1
    i = torch.tensor([[0, 1, 1], [2, 0, 2]])
    v = torch.tensor([3, 4, 5], dtype=torch.float32)
    grad = torch.sparse_coo_tensor(i, v, [2, 4]).coalesce()
    # torch's original sparse implementation
    param = torch.arange(8).reshape(2, 4).float()
    state_sum = torch.full_like(param, 0.5)
    gi, gv = grad._indices(), grad._values()
    state_sum.add_(torch.sparse_coo_tensor(gi, gv.pow(2), grad.size()))
    std = state_sum.sparse_mask(grad)
    std_values = std._values().sqrt_().add_(eps)
    param.add_(torch.sparse_coo_tensor(gi, gv / std_values, grad.size()), alpha=-clr)
    # the MaskedTensor version, dense
    dense_grad = ember.tensor(_tnp(grad.to_dense()))
    mask = dense_grad != 0
    param2 = ember.arange(8).reshape(2, 4).float()
    state_sum2 = ember.full_like(param2, 0.5)
    masked_grad = masked_tensor(dense_grad, mask)
    state_sum2 = state_sum2 + masked_grad.pow(2).get_data()
    std2 = masked_tensor(state_sum2, mask)
    std2 = std2.sqrt().add(eps)
    param2 = param2.add((masked_grad / std2).get_data(), alpha=-clr)
    np.testing.assert_allclose(_np(state_sum2), _tnp(state_sum), rtol=1e-6)
    np.testing.assert_allclose(_np(param2), _tnp(param), rtol=1e-6)
    _same_masked(std2, torch.masked.masked_tensor(std.to_dense(), torch.tensor(_np(mask))))


def test_tutorial_adagrad_sparse():
    """The tutorial as written: a sparse COO gradient as a MaskedTensor."""
    torch = _torch()

    def run(lib, mlib):
        eps, clr = 1e-10, 0.1
        i = lib.tensor([[0, 1, 1], [2, 0, 2]])
        v = lib.tensor([3, 4, 5], dtype=lib.float32)
        grad = lib.sparse_coo_tensor(i, v, [2, 4])
        param2 = lib.arange(8).reshape(2, 4).float()
        state_sum2 = lib.full_like(param2, 0.5)
        mask = (grad.to_dense() != 0).to_sparse()
        masked_grad = mlib.masked_tensor(grad, mask)
        state_sum2 = state_sum2 + masked_grad.pow(2).get_data()
        std2 = mlib.masked_tensor(state_sum2.to_sparse(), mask)
        std2 = std2.sqrt().add(eps)
        param2 = param2.add((masked_grad / std2).get_data(), alpha=-clr)
        return state_sum2, std2, param2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es, estd, ep = run(ember, masked)
        ts, tstd, tp = run(torch, torch.masked)
    _same(es, ts)
    _same(ep, tp)
    assert estd.layout == ember.sparse_coo and repr(estd) == _trepr(tstd)


def _sparse_both(torch, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(ember, masked), fn(torch, torch.masked)


def test_tutorial_sparsity():
    torch = _torch()

    def dense_to_sparse(lib, mlib):
        values = lib.tensor([[0, 0, 3], [4, 0, 5]])
        mask = lib.tensor([[False, False, True], [False, False, True]])
        mt = mlib.masked_tensor(values, mask)
        return mt, mt.to_sparse_coo(), mt.to_sparse_csr(), mt.sin()

    for e, t in zip(*_sparse_both(torch, dense_to_sparse)):
        assert repr(e) == _trepr(t)
        assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    (emt, ecoo, ecsr, _), (tmt, tcoo, tcsr, _) = _sparse_both(torch, dense_to_sparse)
    np.testing.assert_array_equal(_np(ecoo.get_data().indices()), _tnp(tcoo.get_data().indices()))
    np.testing.assert_array_equal(_np(ecsr.get_data().crow_indices()),
                                  _tnp(tcsr.get_data().crow_indices()))
    for fn in (lambda a: a.sum(), lambda a: a.amin(), lambda a: a.amax(), lambda a: a.sum(dim=1)):
        assert repr(fn(emt)) == _trepr(fn(tmt))
    for fn in (lambda a: a.sum(), lambda a: a.amax(), lambda a: a.argmax(), lambda a: a.mean()):
        assert repr(fn(ecoo.float())) == _trepr(fn(tcoo.float()))
        assert repr(fn(ecsr.float())) == _trepr(fn(tcsr.float()))
    assert ecoo.is_sparse and ecoo.is_sparse_coo() and not ecoo.is_sparse_csr()
    assert ecsr.is_sparse and ecsr.is_sparse_csr() and not emt.is_sparse
    assert repr(ecoo.to_dense()) == repr(emt) and ecoo.to_dense().layout == ember.strided

    def binary(lib, mlib):
        i = [[0, 1, 1], [2, 0, 2]]
        m = lib.tensor([True, False, True])
        s1 = lib.sparse_coo_tensor(i, [3, 4, 5], (2, 3))
        s2 = lib.sparse_coo_tensor(i, [20, 30, 40], (2, 3))
        mask = lib.sparse_coo_tensor(i, m, (2, 3))
        mt1, mt2 = mlib.masked_tensor(s1, mask), mlib.masked_tensor(s2, mask)
        return mt1, mt2, lib.div(mt2, mt1), lib.mul(mt1, mt2), mt1 + 1, mt1.sum()

    for e, t in zip(*_sparse_both(torch, binary)):
        assert repr(e) == _trepr(t)

    def construction(lib, mlib):
        values = lib.tensor([[0, 0, 3], [4, 0, 5]]).to_sparse()
        mask = lib.tensor([[False, False, True], [False, False, True]]).to_sparse()
        mt = mlib.masked_tensor(values, mask)
        crow, col = lib.tensor([0, 2, 4]), lib.tensor([0, 1, 0, 1])
        csr = lib.sparse_csr_tensor(crow, col, lib.tensor([1, 2, 3, 4]), dtype=lib.double)
        cmask = lib.sparse_csr_tensor(crow, col, lib.tensor([True, False, False, True]),
                                      dtype=lib.bool)
        mt3 = mlib.masked_tensor(csr, cmask)
        return mt, mt3, mt3.sin()

    (e1, e3, e3s), (t1, t3, t3s) = _sparse_both(torch, construction)
    for e, t in ((e1, t1), (e3, t3), (e3s, t3s)):
        assert repr(e) == _trepr(t)
        np.testing.assert_allclose(_np(e.get_data().values()), _tnp(t.get_data().values()))
        assert e.shape == tuple(t.shape) and str(e.dtype)[6:] == str(t.dtype)[6:]


def test_sparse_errors_match_torch():
    torch = _torch()

    def errors(lib, mlib):
        out = []
        d = lib.tensor([[0.0, 0, 3], [4, 0, 5]])
        m = lib.tensor([[False, False, True], [False, True, True]])
        for fn in (lambda: mlib.masked_tensor(d.to_sparse(), m),
                   lambda: mlib.masked_tensor(d.to_sparse(), m.to_sparse()) + mlib.masked_tensor(
                       d.to_sparse(), (~m).to_sparse()),
                   lambda: mlib.masked_tensor(d, m).to_sparse_coo().contiguous(),
                   lambda: mlib.masked_tensor(d[None], m[None]).to_sparse_csr(),
                   lambda: mlib.masked_tensor(d, m).to_sparse_coo().sum(0)):
            try:
                fn()
                out.append(None)
            except Exception as exc:
                out.append((type(exc), str(exc).split("\n")[0]))
        return out

    e, t = _sparse_both(torch, errors)
    assert len(e) == len(t)
    for (etype, emsg), (ttype, tmsg) in zip(e[:4], t[:4]):
        assert etype is ttype and emsg == tmsg.replace("torch.", "ember.")
    assert e[4][0] is t[4][0] is TypeError
    d = ember.tensor([[0.0, 0, 3], [4, 0, 5]])
    m = ember.tensor([[False, False, True], [False, True, True]])
    with pytest.warns(UserWarning, match="The sparse version of sum is not implemented"), \
            pytest.raises(TypeError):
        masked_tensor(d, m).to_sparse_coo().sum(1)


# -- torch.masked._ops on random data and masks -------------------------------------------------

def _inputs(dtype, seed=0, shape=(3, 4, 5)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    m = rng.random(shape) < 0.6
    m[1] = False  # a fully masked-out slice
    m[2, 0] = False
    return x, m


_REDUCE_DIMS = [None, 1, -1, (0, 2), (0, 1, 2)]
_REDUCE_OPS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", _REDUCE_OPS)
def test_masked_reductions_match_torch(op, dtype):
    torch = _torch()
    x, m = _inputs(dtype, seed=len(op))
    ex, em, tx, tm = ember.tensor(x), ember.tensor(m), torch.tensor(x), torch.tensor(m)
    efn, tfn = getattr(masked, op), getattr(torch.masked, op)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for dim in _REDUCE_DIMS:
        for keepdim in (False, True):
            args = (2.0, dim) if op == "norm" else (dim,)
            _same(efn(ex, *args, keepdim=keepdim, mask=em),
                  tfn(tx, *args, keepdim=keepdim, mask=tm), **tol)
    _same(efn(ex), tfn(tx), **tol)  # no mask
    bm = m[0]  # a mask that broadcasts
    _same(efn(ex, mask=ember.tensor(bm)), tfn(tx, mask=torch.tensor(bm)), **tol)
    if op in ("sum", "prod", "mean", "norm", "var", "std"):
        _same(efn(ex, 1, mask=em, dtype=ember.float64),
              tfn(tx, 1, mask=tm, dtype=torch.float64), **tol)
    if op == "norm":
        for ord in (1, float("inf"), float("-inf"), 0.5):
            _same(masked.norm(ex, ord, 2, mask=em), torch.masked.norm(tx, ord, 2, mask=tm), **tol)
    if op in ("var", "std"):
        _same(efn(ex, 2, False, mask=em), tfn(tx, 2, False, mask=tm), **tol)
        _same(efn(ex, (0, 2), correction=2, mask=em), tfn(tx, (0, 2), correction=2, mask=tm),
              **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_dim_ops_match_torch(dtype):
    torch = _torch()
    x, m = _inputs(dtype, seed=3)
    ex, em, tx, tm = ember.tensor(x), ember.tensor(m), torch.tensor(x), torch.tensor(m)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for dim in (0, 1, -1):
        for op in ("argmax", "argmin", "median"):
            for keepdim in (False, True):
                _same(getattr(masked, op)(ex, dim, keepdim=keepdim, mask=em),
                      getattr(torch.masked, op)(tx, dim, keepdim=keepdim, mask=tm), **tol)
        for op in ("cumsum", "cumprod", "softmax", "log_softmax", "softmin"):
            _same(getattr(masked, op)(ex, dim, mask=em),
                  getattr(torch.masked, op)(tx, dim, mask=tm), **tol)
        _same(masked.softmax(ex, dim, mask=em, dtype=ember.float64),
              torch.masked.softmax(tx, dim, mask=tm, dtype=torch.float64), **tol)
        for ord in (2.0, 1.0):
            _same(masked.normalize(ex, ord, dim, mask=em),
                  torch.masked.normalize(tx, ord, dim, mask=tm), **tol)
    _same(masked.argmax(ex, mask=em), torch.masked.argmax(tx, mask=tm))
    _same(masked.argmin(ex, None, mask=em), torch.masked.argmin(tx, None, mask=tm))
    _same(masked.median(ex, mask=em), torch.masked.median(tx, mask=tm), **tol)
    y = np.random.default_rng(9).standard_normal(x.shape).astype(dtype)
    m2 = np.random.default_rng(10).random(x.shape) < 0.5
    _same(masked.logaddexp(ex, ember.tensor(y), input_mask=em, other_mask=ember.tensor(m2)),
          torch.masked.logaddexp(tx, torch.tensor(y), input_mask=tm, other_mask=torch.tensor(m2)),
          **tol)


def test_masked_ops_integer_inputs_match_torch():
    torch = _torch()
    rng = np.random.default_rng(5)
    x = rng.integers(-5, 6, (3, 4)).astype(np.int32)
    m = rng.random((3, 4)) < 0.5
    m[0] = False
    ex, em, tx, tm = ember.tensor(x), ember.tensor(m), torch.tensor(x), torch.tensor(m)
    for op in ("sum", "prod", "amax", "amin", "argmax", "argmin"):
        for dim in (None, 1) if op.startswith("arg") else (None, 1, (0, 1)):
            _same(getattr(masked, op)(ex, dim, mask=em),
                  getattr(torch.masked, op)(tx, dim, mask=tm))
    _same(masked.var(ex, 1, mask=em), torch.masked.var(tx, 1, mask=tm), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="masked median expects no fully masked out rows"):
        masked.median(ex, 1, mask=em)
    with pytest.raises(ValueError) as info:
        masked.mean(ex, mask=em)
    with pytest.raises(ValueError) as tinfo:
        torch.masked.mean(tx, mask=tm)
    assert str(info.value) == str(tinfo.value).replace("torch.", "ember.")


def test_masked_ops_identity_values():
    torch = _torch()
    for tdt, edt in ((torch.float32, ember.float32), (torch.int32, ember.int32),
                     (torch.uint8, ember.uint8), (torch.int64, ember.int64)):
        for op in ("sum", "prod", "amax", "amin", "argmax", "argmin", "logsumexp", "norm",
                   "cumsum", "cumprod", "median", "mean", "var"):
            if op in ("logsumexp", "norm") and tdt == torch.uint8:
                continue
            t = torch.masked._reduction_identity(op, torch.tensor(0, dtype=tdt))
            e = masked._reduction_identity(op, ember.tensor(0, dtype=edt))
            if t is None:
                assert e is None, op
            else:
                _same(e, t)


def test_masked_ops_with_masked_tensor_input():
    torch = _torch()
    x, m = _inputs(np.float64, seed=11)
    e, t = _pair(torch, x, m)
    for op in ("sum", "amax", "logsumexp"):
        _same(getattr(masked, op)(e, 1), getattr(torch.masked, op)(t, 1))
    _same(masked.softmax(e, 2), torch.masked.softmax(t, 2))
    assert masked._output_mask(masked.sum, ember.tensor(x), 1, mask=ember.tensor(m)).shape == (3, 5)


def test_masked_op_errors_match_torch():
    torch = _torch()
    x = np.ones((2, 3), np.float32)
    ex, tx = ember.tensor(x), torch.tensor(x)

    def both(efn, tfn):
        with pytest.raises(Exception) as ei:
            efn()
        with pytest.raises(Exception) as ti:
            tfn()
        assert type(ei.value) is type(ti.value)
        assert str(ei.value) == str(ti.value).replace("torch.", "ember.")

    both(lambda: masked.sum(ex, (1, 1)), lambda: torch.masked.sum(tx, (1, 1)))
    both(lambda: masked.sum(ex, 2), lambda: torch.masked.sum(tx, 2))
    both(lambda: masked.sum(ex, mask=ember.ones(1, 2, 3, dtype=ember.bool)),
         lambda: torch.masked.sum(tx, mask=torch.ones(1, 2, 3, dtype=torch.bool)))
    both(lambda: masked.var(ex, unbiased=True, correction=1),
         lambda: torch.masked.var(tx, unbiased=True, correction=1))


# -- MaskedTensor ops against torch's ------------------------------------------------------------

def _mt_pairs(torch, dtype=np.float32):
    x, m = _inputs(dtype, seed=21, shape=(3, 4))
    return _pair(torch, x, m), x, m


def test_unary_ops_match_torch():
    torch = _torch()
    (e, t), x, m = _mt_pairs(torch)
    for name in ("sin", "exp", "abs", "neg", "tanh", "sigmoid", "square", "floor", "sign",
                 "isnan", "nan_to_num", "positive"):
        _same_masked(getattr(ember, name)(e), getattr(torch, name)(t))
        _same_masked(getattr(e, name)(), getattr(t, name)())
    _same_masked(e.pow(2), t.pow(2))
    _same_masked(e ** 3, t ** 3)
    _same_masked(-e, -t)
    _same_masked(abs(e), abs(t))
    _same_masked(e.clamp(-0.5, 0.5), t.clamp(-0.5, 0.5))
    _same_masked(e.clamp(min=0.1), t.clamp(min=0.1))
    _same_masked(ember.sqrt(e.abs()), torch.sqrt(t.abs()))
    e2, t2 = e.clone(), t.clone()
    assert e2.sin_() is e2
    t2.sin_()
    _same_masked(e2, t2)
    with pytest.raises(TypeError, match="MaskedTensor unary ops do not support additional "
                                        "Tensor arguments"):
        e.pow(ember.ones(3, 4))


def test_binary_ops_match_torch():
    torch = _torch()
    (e, t), x, m = _mt_pairs(torch)
    e2, t2 = _pair(torch, np.cos(x), m)
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "ge",
                 "logaddexp", "fmod", "atan2"):
        _same_masked(getattr(ember, name)(e, e2), getattr(torch, name)(t, t2))
    _same_masked(e + e2, t + t2)
    _same_masked(e * 2, t * 2)
    _same_masked(2 * e, 2 * t)
    _same_masked(1 + e, 1 + t)
    _same_masked(e / e2, t / t2)
    _same_masked(e == e2, t == t2)
    _same_masked(e > 0.2, t > 0.2)
    _same_masked(e < e2, t < t2)
    _same_masked(e + ember.tensor(np.cos(x)), t + torch.tensor(np.cos(x)))
    _same_masked(ember.tensor(np.cos(x)) + e, torch.tensor(np.cos(x)) + t)
    _same_masked(e + ember.tensor(x[0]), t + torch.tensor(x[0]))  # a plain operand broadcasts
    e3, t3 = e.clone(), t.clone()
    e3.add_(e2)
    t3.add_(t2)
    _same_masked(e3, t3)
    e3 *= 2
    t3 *= 2
    _same_masked(e3, t3)
    other, _ = _pair(torch, x, ~m)
    with pytest.raises(ValueError, match="Input masks must match"):
        ember.mul(e, other)
    with pytest.raises(ValueError, match="Input masks must match"):
        e.add_(other)
    plain = ember.zeros(3, 4)
    with pytest.raises(TypeError, match="in-place op on a plain tensor"):
        plain.add_(e)
    assert not plain.any()  # left untouched


def test_reductions_match_torch():
    torch = _torch()
    (e, t), x, m = _mt_pairs(torch, np.float64)
    for name in ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "var", "std"):
        _same_masked(getattr(ember, name)(e), getattr(torch, name)(t))
        _same_masked(getattr(e, name)(), getattr(t, name)())
        for dim in (0, 1, -1):
            _same_masked(getattr(e, name)(dim), getattr(t, name)(dim))
            _same_masked(getattr(e, name)(dim, keepdim=True), getattr(t, name)(dim, keepdim=True))
        if name not in ("argmin", "argmax", "prod"):  # torch.prod takes one dim
            _same_masked(getattr(ember, name)(e, (0, 1)), getattr(torch, name)(t, (0, 1)))
    _same_masked(e.sum(1, dtype=ember.float32), t.sum(1, dtype=torch.float32))
    eb, tb = e > 0, t > 0
    _same_masked(eb.all(), tb.all())
    _same_masked(eb.all(1), tb.all(1))
    _same_masked(ember.all(eb, 0, keepdim=True), torch.all(tb, 0, keepdim=True))
    ei, ti = _pair(torch, (x * 10).astype(np.int64), m)
    _same_masked(ei.sum(), ti.sum())
    _same_masked(ei.amax(1), ti.amax(1))


def test_shape_ops_match_torch():
    torch = _torch()
    (e, t), x, m = _mt_pairs(torch)
    cases = [
        lambda a: a.view(12), lambda a: a.view(-1, 2), lambda a: a.reshape(2, 6),
        lambda a: a.transpose(0, 1), lambda a: a.t(), lambda a: a.select(1, 2),
        lambda a: a[1], lambda a: a[:, 1:3], lambda a: a[::2],
        lambda a: a[0:1].expand(3, 4), lambda a: a.unsqueeze(1), lambda a: a.flatten(),
        lambda a: a.narrow(1, 1, 2), lambda a: a.clone(), lambda a: a.detach(),
        lambda a: a.t().contiguous(), lambda a: a.double(), lambda a: a[0, 1],
        lambda a: a[a.get_mask()],
    ]
    for fn in cases:
        _same_masked(fn(e), fn(t))
    for ep, tp in zip(e.split(1), t.split(1)):
        _same_masked(ep, tp)
    for ep, tp in zip(e.chunk(2, 1), t.chunk(2, 1)):
        _same_masked(ep, tp)
    _same_masked(ember.cat([e, e]), torch.cat([t, t]))
    _same_masked(ember.stack([e, e], 1), torch.stack([t, t], 1))
    _same_masked(e.to(ember.float64), t.to(torch.float64))
    _same_masked(ember.ones_like(e), torch.ones_like(t))
    _same_masked(e.softmax(1), t.softmax(1))
    _same_masked(ember.softmax(e, 0), torch.softmax(t, 0))
    cond = ember.tensor(x > 0)
    _same_masked(ember.where(cond, e, ember.zeros(3, 4)),
                 torch.where(torch.tensor(x > 0), t, torch.zeros(3, 4)))
    assert e.to(ember.float64).get_mask().dtype == ember.bool


def test_unsupported_ops_raise_like_torch():
    torch = _torch()
    (e, t), x, m = _mt_pairs(torch)
    for fn in (lambda a: a.permute(1, 0), lambda a: a.masked_fill(a.get_mask(), 0.0),
               lambda a: a.flip(0), lambda a: a.any(), lambda a: a.max(),
               lambda a: a.log_softmax(1), lambda a: a.cumsum(1)):
        with pytest.raises(TypeError):
            fn(t)
        with pytest.warns(UserWarning, match="is not implemented in __torch_function__ for "
                                             "MaskedTensor"), pytest.raises(TypeError):
            fn(e)


# -- errors ---------------------------------------------------------------------------------------

def test_construction_errors_match_torch():
    torch = _torch()
    d = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    m = np.array([[True, False, True], [False, True, True]])
    cases = [
        (lambda L, d, m: L.masked_tensor(d.tolist(), m), "data must be a Tensor"),
        (lambda L, d, m: L.masked_tensor(d, m.tolist()), "mask must be a Tensor"),
        (lambda L, d, m: L.masked_tensor(d, m.float()), "mask must have dtype bool."),
        (lambda L, d, m: L.masked_tensor(d, m[0]), "data.dim() must equal mask.dim()"),
        (lambda L, d, m: L.masked_tensor(d, m[:, :2]), "data.size() must equal mask.size()"),
        (lambda L, d, m: L.as_masked_tensor(d, m[:1]), "data.size() must equal mask.size()"),
        (lambda L, d, m: L.masked_tensor(d.to(_dt(L, "uint8")), m), None),
    ]
    for fn, message in cases:
        with pytest.raises(Exception) as ei:
            fn(masked, ember.tensor(d), ember.tensor(m))
        with pytest.raises(Exception) as ti:
            fn(torch.masked, torch.tensor(d), torch.tensor(m))
        assert type(ei.value) is type(ti.value)
        assert str(ei.value) == str(ti.value).replace("torch.", "ember.")
        if message is not None:
            assert str(ei.value) == message


def _dt(lib, name):
    return getattr(ember if lib is masked else pytest.importorskip("torch"), name)


# -- autograd -------------------------------------------------------------------------------------

def test_autograd_leaf_and_as_masked_tensor():
    data = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = ember.tensor([[True, False, True], [False, True, True]])
    mt = masked_tensor(data, mask, requires_grad=True)
    assert mt.requires_grad and mt.is_leaf and mt.grad is None
    (mt * mt).sum().backward()
    g = mt.grad
    assert is_masked_tensor(g)
    np.testing.assert_array_equal(_np(g.get_mask()), _np(mask))
    np.testing.assert_allclose(_np(g.get_data())[_np(mask)], 2 * _np(data)[_np(mask)])
    # as_masked_tensor keeps the history: only specified elements get gradient
    x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    amt = as_masked_tensor(x * 3, mask)
    assert not amt.is_leaf and amt.grad_fn is not None
    amt.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), 3 * _np(mask).astype(np.float32))
    # get_data is differentiable; detach is not
    y = masked_tensor(data, mask, requires_grad=True)
    (y.get_data() * 2).sum().backward()
    np.testing.assert_array_equal(_np(y.grad.get_data()), np.full((2, 3), 2.0))
    assert not y.detach().requires_grad and y.requires_grad
    z = masked_tensor(data, mask, requires_grad=True)
    ember.autograd.backward(z.sum())
    np.testing.assert_array_equal(_np(z.grad.get_data()), _np(mask).astype(np.float32))
    (gz,) = ember.autograd.grad(z.amax(1).sum(), z)
    np.testing.assert_array_equal(_np(gz), [[0, 0, 1], [0, 0, 1]])
    w = masked_tensor(data, mask, requires_grad=True)
    w.exp().backward(ember.ones(2, 3))  # a non-scalar root, with a gradient
    np.testing.assert_allclose(_np(w.grad.get_data()), np.exp(_np(data)), rtol=1e-6)


def test_autograd_matches_torch_on_specified_elements():
    torch = _torch()
    x, m = _inputs(np.float64, seed=31, shape=(3, 4))
    m[1] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = masked_tensor(ember.tensor(x), ember.tensor(m), requires_grad=True)
        t = torch.masked.masked_tensor(torch.tensor(x), torch.tensor(m), requires_grad=True)
    for fn in (lambda a: (a.sin() * a).sum(), lambda a: a.exp().mean(),
               lambda a: (a.amax(1) * 2).sum(), lambda a: a.softmax(1).prod(),
               lambda a: a.var(1).sum(), lambda a: (a / (a.abs() + 1)).std()):
        e.grad = None
        t.grad = None
        fn(e).backward()
        fn(t).backward()
        _same_masked(e.grad, t.grad, rtol=1e-10, atol=1e-12)


_GRAD_OPS = {
    "sum": lambda x, m: masked.sum(x, 1, mask=m),
    "prod": lambda x, m: masked.prod(x, (0, 1), mask=m),
    "amax": lambda x, m: masked.amax(x, 1, mask=m),
    "amin": lambda x, m: masked.amin(x, 0, mask=m),
    "mean": lambda x, m: masked.mean(x, 1, keepdim=True, mask=m),
    "logsumexp": lambda x, m: masked.logsumexp(x, 1, mask=m),
    "norm": lambda x, m: masked.norm(x, 2.0, 1, mask=m),
    "norm1": lambda x, m: masked.norm(x, 3.0, None, mask=m),
    "var": lambda x, m: masked.var(x, 1, mask=m),
    "std": lambda x, m: masked.std(x, 1, False, mask=m),
    "median": lambda x, m: masked.median(x, 1, mask=m),
    "cumsum": lambda x, m: masked.cumsum(x, 1, mask=m),
    "cumprod": lambda x, m: masked.cumprod(x, 1, mask=m),
    "softmax": lambda x, m: masked.softmax(x, 1, mask=m),
    "log_softmax": lambda x, m: masked.log_softmax(x, 1, mask=m).masked_fill(~m, 0),
    "softmin": lambda x, m: masked.softmin(x, 0, mask=m),
    "normalize": lambda x, m: masked.normalize(x, 2.0, 1, mask=m),
    "logaddexp": lambda x, m: masked.logaddexp(x, x * 2, input_mask=m, other_mask=~m),
    "mt_ops": lambda x, m: (as_masked_tensor(x, m).exp() * 2 - 1).sum(1).to_tensor(0.0),
    "mt_softmax": lambda x, m: as_masked_tensor(x, m).softmax(1).to_tensor(0.0),
    "mt_where": lambda x, m: ember.where(m, as_masked_tensor(x, m).sin(), x).to_tensor(0.0),
}


@pytest.mark.parametrize("name", sorted(_GRAD_OPS))
def test_gradcheck(name):
    rng = np.random.default_rng(41)
    x = ember.tensor(rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)),
                     dtype=ember.float64, requires_grad=True)
    m = ember.tensor(np.array([[True, False, True, True], [False, True, True, False],
                               [True, True, False, True]]))
    fn = _GRAD_OPS[name]
    assert ember.autograd.gradcheck(lambda x: fn(x, m), (x,), eps=1e-6, atol=1e-5)


# -- lazy import ----------------------------------------------------------------------------------

def test_import_ember_does_not_import_masked():
    code = ("import sys, ember, ember.overrides as o\n"
            "assert 'ember.masked' not in sys.modules, 'imported'\n"
            "assert not o.is_active(), 'dispatch on without ember.masked'\n"
            "import ember.masked as mk\n"
            "assert o.is_active(), 'dispatch off with MaskedTensor defined'\n"
            "import warnings; warnings.simplefilter('ignore')\n"
            "x = ember.arange(4.0)\n"
            "r = ember.mean(mk.masked_tensor(x, x > 1))\n"  # the first MaskedTensor, in a call
            "assert type(r).__name__ == 'MaskedTensor' and r.item() == 2.5, r\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
