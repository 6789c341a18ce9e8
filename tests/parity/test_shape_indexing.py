"""Shape ops and indexing against PyTorch (the oracle; skipped without it): values, dtypes,
shapes, view-ness, strides and storage offsets of views, gradients, and that errors are
raised in the same cases with the same types."""

import itertools

import numpy as np
import pytest
from testutils import to_numpy

import ember

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.parity

A = np.arange(24.0).reshape(2, 3, 4)
RNG = np.random.default_rng(3)


def lib_tensor(T, a, **kw):
    return T.tensor(a, **kw)


def assert_same(e, t, check_view=True):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t)
        for ei, ti in zip(e, t):
            assert_same(ei, ti, check_view)
        return
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(to_numpy(e), to_numpy(t), rtol=1e-6, atol=1e-9)
    if check_view:
        assert (e._base is not None) == (t._base is not None)
        if t._base is not None and t.numel():
            # the stride of a size-1 dim is arbitrary (NumPy says 0 where PyTorch computes one)
            assert [s for s, n in zip(e.stride(), e.shape) if n > 1] == \
                [s for s, n in zip(t.stride(), t.shape) if n > 1]
            assert e.storage_offset() == t.storage_offset()


def both(fn, *arrays, grad=False):
    """``fn(T, *tensors)`` for ember and torch, on tensors made from ``arrays``."""
    outs = []
    for T in (ember, torch):
        ts = [T.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        outs.append((fn(T, *ts), ts))
    return outs


# -- getitem -----------------------------------------------------------------------------------

def _idx_spec(T, spec):
    out = []
    for it in spec:
        if isinstance(it, np.ndarray):
            out.append(T.tensor(it))
        else:
            out.append(it)
    return tuple(out)


GETITEM = [
    (0,), (-1,), (slice(1, None),), (slice(None, None, 2), 1), (Ellipsis, 1), (None, 1),
    (slice(None), None, slice(1, 3)), (0, 1, 2), (), (Ellipsis,), (1, Ellipsis, None),
    (np.array([1, 0, 1]),), (np.array([[0, 1], [1, 1]]),), (slice(None), np.array([2, 0])),
    (np.array([0, 1]), slice(None), np.array([3, 0])), (0, slice(None), np.array([1, 2])),
    (np.array([0, 1]), slice(None), 0), (slice(None), 0, np.array([1, 2])),
    (None, np.array([0, 1]), 0), (A > 10,), (A[:, 0, 0] > 4,), (slice(None), A[0, :, 0] > 4),
    (np.array([True, False]), 2), (np.array(1),), (np.array([[1], [0]]), 0, np.array([0, 3])),
    (True,), (False,), (Ellipsis, np.array([3, 3])), (1, None, np.array([0, 2]), None),
]


@pytest.mark.parametrize("spec", GETITEM, ids=repr)
def test_getitem(spec):
    e = ember.tensor(A)[_idx_spec(ember, spec)]
    t = torch.tensor(A)[_idx_spec(torch, spec)]
    assert_same(e, t)


@pytest.mark.parametrize("spec", GETITEM[:20], ids=repr)
def test_getitem_grad(spec):
    (e, (ex,)), (t, (tx,)) = both(lambda T, x: x[_idx_spec(T, spec)], A, grad=True)
    w = RNG.standard_normal(tuple(t.shape))
    (e * ember.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())
    assert e.grad_fn.name().split("::")[-1] == t.grad_fn.name().split("::")[-1]


BAD_INDICES = [
    (5,), (0, 5), (np.array([5]),), (0, 0, 0, 0), (slice(None, None, -1),), (1.5,),
    (np.array([1.0]),), (np.array([True, False, True]),), (np.array([0, 1]), np.array([0, 1, 2])),
    (np.array([-3]),), (-3,), (slice(None), slice(None), slice(None), None, 0), (A[0] > 4,),
]


@pytest.mark.parametrize("spec", BAD_INDICES, ids=repr)
def test_getitem_errors_match(spec):
    with pytest.raises(Exception) as te:
        torch.tensor(A)[_idx_spec(torch, spec)]
    with pytest.raises(Exception) as ee:
        ember.tensor(A)[_idx_spec(ember, spec)]
    assert type(ee.value) is type(te.value)
    assert str(ee.value).replace("ember", "torch") == str(te.value).split("\n")[0].replace(
        " (Triggered internally", "")


# -- setitem ------------------------------------------------------------------------------------

SETITEM = [
    ((0,), 7.0), ((slice(None), 1), np.array([1.0, 2, 3, 4])), ((Ellipsis, 0), 2.0),
    ((np.array([0, 1, 1]),), 9.0), ((0, slice(None), np.array([1, 2])), np.array([5.0, 6])),
    ((A > 7,), -1.0), ((np.array([1, 0]), np.array([2, 0])), np.array([[1.0, 2, 3, 4]])),
    ((slice(None), None, 0), np.array([[1.0, 2.0, 3.0, 4.0]])),
]


@pytest.mark.parametrize("spec,value", SETITEM, ids=repr)
def test_setitem(spec, value):
    outs = []
    for T in (ember, torch):
        x = T.tensor(A)
        v = T.tensor(value) if isinstance(value, np.ndarray) else value
        x[_idx_spec(T, spec)] = v
        outs.append(x)
    np.testing.assert_array_equal(outs[0].numpy(), outs[1].numpy())
    assert outs[0]._version == outs[1]._version


@pytest.mark.parametrize("spec,value", SETITEM, ids=repr)
def test_setitem_grad(spec, value):
    grads = []
    for T in (ember, torch):
        x = T.tensor(A, requires_grad=True)
        w = T.tensor(np.asarray(value, dtype=np.float64), requires_grad=True)
        y = x * 2
        y[_idx_spec(T, spec)] = w * 3
        (y * y).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy(), y.grad_fn.name().split("::")[-1]))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])
    assert grads[0][2] == grads[1][2]


BAD_SETITEM = [
    ((np.array([0, 1]),), np.ones(3)), ((slice(2, None),), np.ones(3)), ((5,), 1.0),
    ((np.array([0]),), np.ones(1, dtype=np.float32)),
]


@pytest.mark.parametrize("spec,value", BAD_SETITEM, ids=repr)
def test_setitem_errors_match(spec, value):
    errs = []
    for T in (ember, torch):
        x = T.tensor(A[0, 0])
        v = T.tensor(value) if isinstance(value, np.ndarray) else value
        with pytest.raises(Exception) as exc:
            x[_idx_spec(T, spec)] = v
        errs.append(exc.value)
    assert type(errs[0]) is type(errs[1])
    assert str(errs[0]).replace("ember", "torch") == str(errs[1])


def test_setitem_on_leaf_errors_match():
    for spec in ((0,), (np.array([0]),)):
        msgs = []
        for T in (ember, torch):
            x = T.ones(3, requires_grad=True)
            with pytest.raises(RuntimeError) as exc:
                x[_idx_spec(T, spec)] = 1.0
            msgs.append(str(exc.value))
        assert msgs[0] == msgs[1]


# -- shape ops ------------------------------------------------------------------------------------

SHAPE_OPS = {
    "reshape": lambda T, x: x.reshape(4, -1),
    "reshape_copy": lambda T, x: x.transpose(0, 2).reshape(-1),
    "view": lambda T, x: x.view(2, 12),
    "squeeze": lambda T, x: x[:, :1].squeeze(),
    "squeeze_dims": lambda T, x: x[:1, :1].squeeze((0, 1, 2)),
    "unsqueeze": lambda T, x: x.unsqueeze(-2),
    "flatten": lambda T, x: x.flatten(1),
    "flatten_copy": lambda T, x: x.transpose(1, 2).flatten(),
    "unflatten": lambda T, x: x.unflatten(2, (2, -1)),
    "ravel": lambda T, x: x.ravel(),
    "transpose": lambda T, x: x.transpose(0, 2),
    "swapaxes": lambda T, x: T.swapaxes(x, 0, 1),
    "permute": lambda T, x: x.permute(2, 0, 1),
    "movedim": lambda T, x: T.movedim(x, (0, 1), (2, 0)),
    "mT": lambda T, x: x.mT,
    "expand": lambda T, x: x[:, :1].expand(2, 2, 3, 4),
    "broadcast_to": lambda T, x: T.broadcast_to(x[0], (2, 3, 4)),
    "broadcast_tensors": lambda T, x: T.broadcast_tensors(x[:, :1], x[0, :, :1]),
    "repeat": lambda T, x: x.repeat(2, 1, 1, 2),
    "tile": lambda T, x: T.tile(x, (2,)),
    "flip": lambda T, x: x.flip((0, 2)),
    "fliplr": lambda T, x: T.fliplr(x),
    "flipud": lambda T, x: T.flipud(x),
    "roll": lambda T, x: x.roll((1, -2), (0, 2)),
    "roll_flat": lambda T, x: x.roll(3),
    "rot90": lambda T, x: x.rot90(1, (1, 2)),
    "rot90_neg": lambda T, x: x.rot90(-1, (0, 2)),
    "tril": lambda T, x: x.tril(1),
    "triu": lambda T, x: x.triu(-1),
    "diagonal": lambda T, x: x.diagonal(1, 1, 2),
    "diagonal_neg": lambda T, x: x.diagonal(-1, 2, 0),
    "diag": lambda T, x: T.diag(x[0], 1),
    "diag_vec": lambda T, x: T.diag(x[0, 0], -1),
    "diag_embed": lambda T, x: T.diag_embed(x, 1, 0, 2),
    "narrow": lambda T, x: x.narrow(2, 1, 2),
    "select": lambda T, x: x.select(1, -1),
    "unbind": lambda T, x: x.unbind(2),
    "split": lambda T, x: x.split(3, 2),
    "split_sizes": lambda T, x: x.split([1, 3], 2),
    "chunk": lambda T, x: x.chunk(3, 2),
    "tensor_split": lambda T, x: x.tensor_split(3, 2),
    "tensor_split_idx": lambda T, x: T.tensor_split(x, [1, 3], 2),
    "hsplit": lambda T, x: T.hsplit(x, 3),
    "cat": lambda T, x: T.cat([x, x * 2], 1),
    "cat_neg": lambda T, x: T.cat([x, x[:, :1]], -2),
    "stack": lambda T, x: T.stack([x, x], 2),
    "hstack": lambda T, x: T.hstack([x, x]),
    "vstack": lambda T, x: T.vstack([x[0, 0], x[0, 1]]),
    "dstack": lambda T, x: T.dstack([x[0], x[1]]),
    "column_stack": lambda T, x: T.column_stack([x[0, :, 0], x[0]]),
    "atleast_2d": lambda T, x: T.atleast_2d(x[0, 0], x),
    "contiguous": lambda T, x: x.transpose(0, 1).contiguous(),
    "view_as": lambda T, x: x.view_as(x.reshape(6, 4)),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_op(name):
    (e, _), (t, _) = both(SHAPE_OPS[name], A)
    assert_same(e, t)


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_op_grad(name):
    (e, (ex,)), (t, (tx,)) = both(SHAPE_OPS[name], A, grad=True)
    es = e if isinstance(e, tuple) else (e,)
    ts = t if isinstance(t, tuple) else (t,)
    le = sum((o * ember.tensor(RNG.standard_normal(tuple(o.shape)) * 0 + k)).sum()
             for k, o in enumerate(es, 1))
    lt = sum((o * torch.tensor(np.zeros(tuple(o.shape)) + k)).sum() for k, o in enumerate(ts, 1))
    le.backward()
    lt.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dtype", ["int64", "float32", "int32", "uint8", "float64"])
def test_view_dtype(dtype):
    (e, _), (t, _) = both(lambda T, x: x.view(getattr(T, dtype)), A)
    assert_same(e, t)
    assert e.grad_fn is None


@pytest.mark.parametrize("da,db", list(itertools.product(
    ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"], repeat=2)))
def test_cat_stack_promotion(da, db):
    for fn in ("cat", "stack"):
        e = getattr(ember, fn)([ember.ones(2, dtype=getattr(ember, da)),
                                ember.ones(2, dtype=getattr(ember, db))])
        t = getattr(torch, fn)([torch.ones(2, dtype=getattr(torch, da)),
                                torch.ones(2, dtype=getattr(torch, db))])
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]


SHAPE_ERRORS = [
    lambda T: T.cat([]),
    lambda T: T.cat([T.zeros(3, 4), T.zeros(2, 3)], 1),
    lambda T: T.cat([T.zeros(3, 4), T.zeros(3)], 1),
    lambda T: T.cat([T.tensor(1.0)]),
    lambda T: T.cat([T.zeros(3, 4)], 2),
    lambda T: T.stack([T.zeros(2), T.zeros(3)]),
    lambda T: T.stack([]),
    lambda T: T.zeros(2, 3).view(-1, -1),
    lambda T: T.zeros(2, 3).view(4),
    lambda T: T.zeros(2, 3).t().view(6),
    lambda T: T.zeros(3).expand(2, 2),
    lambda T: T.zeros(3, 4).squeeze(2),
    lambda T: T.zeros(3, 4).flatten(1, 0),
    lambda T: T.zeros(3, 4).unflatten(1, (3, 2)),
    lambda T: T.zeros(3, 4).narrow(0, 2, 2),
    lambda T: T.zeros(3, 4).narrow(0, 5, 0),
    lambda T: T.zeros(3, 4).narrow(0, 1, -1),
    lambda T: T.zeros(3, 4).select(0, 5),
    lambda T: T.zeros(3, 4).select(2, 0),
    lambda T: T.zeros(3, 4).repeat(2),
    lambda T: T.zeros(3).fliplr(),
    lambda T: T.zeros(()).flipud(),
    lambda T: T.zeros(3, 4).flip((0, 0)),
    lambda T: T.zeros(3, 4).roll((1, 2), (0,)),
    lambda T: T.zeros(3, 4).roll((1, 2)),
    lambda T: T.zeros(3).tril(),
    lambda T: T.zeros(3, 4).diagonal(0, 0, 0),
    lambda T: T.diag(T.zeros(2, 3, 3)),
    lambda T: T.zeros(3, 4).chunk(0),
    lambda T: T.zeros(3, 4).split(0),
    lambda T: T.zeros(3, 4).split([1, 1]),
    lambda T: T.zeros(3, 4).movedim((0, 1), (0,)),
    lambda T: T.zeros(3, 4).movedim((0, 0), (0, 1)),
    lambda T: T.zeros(3, 4).movedim(0, 5),
    lambda T: T.zeros(3, 4).rot90(1, (0, 0)),
    lambda T: T.zeros(3, 4).rot90(1, (0, 1, 2)),
    lambda T: T.zeros(3).rot90(),
    lambda T: T.zeros(2).mT,
    lambda T: T.zeros(3, 4).transpose(0, 2),
    lambda T: T.zeros(3, 4).unbind(2),
    lambda T: T.zeros(5).tensor_split(0),
    lambda T: T.broadcast_tensors(T.zeros(2), T.zeros(3)),
    lambda T: T.broadcast_shapes((2, 3), (3, 3)),
    lambda T: T.zeros(2, 3).view(T.float64),
    lambda T: T.zeros(4, 2).t().view(T.int16),
    lambda T: T.tensor(1.0)[0],
    lambda T: T.tensor(1.0)[[0]],
]


@pytest.mark.parametrize("k", range(len(SHAPE_ERRORS)))
def test_shape_errors_match(k):
    with pytest.raises(Exception) as te:
        SHAPE_ERRORS[k](torch)
    with pytest.raises(Exception) as ee:
        SHAPE_ERRORS[k](ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value).replace("ember", "torch") == str(te.value)


# -- index ops ------------------------------------------------------------------------------------

X = RNG.standard_normal((3, 4))
I2 = np.array([[0, 3, 3], [2, 2, 0], [1, 0, 1]])
PERM = np.array([[2, 0, 3], [1, 3, 0], [0, 1, 2]])
M = np.array([[True, False, False, True], [False, True, False, False],
              [True, True, False, False]])

INDEX_OPS = {
    "gather": lambda T, x, s: x.gather(1, T.tensor(I2)),
    "gather_small": lambda T, x, s: T.gather(x, 0, T.tensor([[2, 0], [1, 1]])),
    "take_along_dim": lambda T, x, s: T.take_along_dim(x, T.tensor([[0], [3], [1]]), 1),
    "take_along_dim_flat": lambda T, x, s: T.take_along_dim(x, T.tensor([5, 0, 11])),
    "scatter": lambda T, x, s: x.scatter(1, T.tensor(PERM), s[:, :3]),
    "scatter_value": lambda T, x, s: x.scatter(1, T.tensor(PERM), 2.5),
    "scatter_add": lambda T, x, s: x.scatter_add(1, T.tensor(I2), s[:, :3]),
    "scatter_reduce_sum": lambda T, x, s: x.scatter_reduce(1, T.tensor(I2), s[:, :3], "sum"),
    "scatter_reduce_mean": lambda T, x, s: x.scatter_reduce(1, T.tensor(I2), s[:, :3], "mean",
                                                            include_self=False),
    "scatter_reduce_amax": lambda T, x, s: x.scatter_reduce(1, T.tensor(I2), s[:, :3], "amax"),
    "scatter_reduce_amin": lambda T, x, s: x.scatter_reduce(1, T.tensor(I2), s[:, :3], "amin",
                                                            include_self=False),
    "scatter_reduce_prod": lambda T, x, s: x.scatter_reduce(1, T.tensor(I2), s[:, :3], "prod"),
    "index_select": lambda T, x, s: x.index_select(1, T.tensor([3, 3, 0])),
    "index_add": lambda T, x, s: x.index_add(1, T.tensor([2, 0, 2]), s[:, :3], alpha=2),
    "index_copy": lambda T, x, s: x.index_copy(1, T.tensor([3, 0]), s[:, :2]),
    "index_fill": lambda T, x, s: x.index_fill(0, T.tensor([1, -1]), -2.0),
    "index_put": lambda T, x, s: x.index_put((T.tensor([0, 0]), T.tensor([1, 1])), s[0, :2],
                                             accumulate=True),
    "masked_fill": lambda T, x, s: x.masked_fill(T.tensor(M), 0.5),
    "masked_fill_bcast": lambda T, x, s: x[0].masked_fill(T.tensor(M), 0.5),
    "masked_fill_tensor": lambda T, x, s: x.masked_fill(T.tensor(M[0]), s[1, 1]),
    "masked_select": lambda T, x, s: x.masked_select(T.tensor(M[1])),
    "masked_scatter": lambda T, x, s: x.masked_scatter(T.tensor(M), s),
    "take": lambda T, x, s: x.take(T.tensor([[0, -1], [5, 5]])),
    "put": lambda T, x, s: x.put(T.tensor([1, 1, 11]), s[0, :3], accumulate=True),
    "diagonal_scatter": lambda T, x, s: T.diagonal_scatter(x, s[0, :3], 1),
    "select_scatter": lambda T, x, s: T.select_scatter(x, s[0], 0, 1),
    "slice_scatter": lambda T, x, s: T.slice_scatter(x, s[:, :2], 1, 0, 4, 2),
}


@pytest.mark.parametrize("name", list(INDEX_OPS))
def test_index_op(name):
    (e, (ex, es)), (t, (tx, ts)) = both(INDEX_OPS[name], X, RNG.standard_normal((3, 4)),
                                        grad=True)
    assert_same(e, t, check_view=False)
    w = RNG.standard_normal(tuple(t.shape))
    (e * ember.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-9)
    if tx.grad is not None and ts.grad is not None:
        np.testing.assert_allclose(es.grad.numpy(), ts.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_nonzero_argwhere():
    b = np.array([[0, 1, 0], [2, 0, 3]])
    assert_same(ember.nonzero(ember.tensor(b)), torch.nonzero(torch.tensor(b)), False)
    assert_same(ember.argwhere(ember.tensor(b)), torch.argwhere(torch.tensor(b)), False)
    assert_same(ember.tensor(b).nonzero(as_tuple=True), torch.tensor(b).nonzero(as_tuple=True),
                False)
    assert_same(ember.nonzero(ember.tensor(5)), torch.nonzero(torch.tensor(5)), False)


INDEX_ERRORS = [
    lambda T, x: x.gather(0, T.tensor([[5]])),
    lambda T, x: x.gather(0, T.tensor([[-1]])),
    lambda T, x: x.gather(0, T.tensor([0])),
    lambda T, x: x.gather(0, T.tensor([[0.0]])),
    lambda T, x: x.gather(1, T.zeros(4, 1, dtype=T.int64)),
    lambda T, x: x.scatter(0, T.tensor([[5]]), 1.0),
    lambda T, x: x.scatter(0, T.tensor([[0]]), T.zeros(1, 1)),
    lambda T, x: x.scatter_add(0, T.zeros(2, 2, dtype=T.int64), T.zeros(1, 1,
                                                                         dtype=T.float64)),
    lambda T, x: x.index_select(0, T.tensor([5])),
    lambda T, x: x.index_select(0, T.tensor([[0]])),
    lambda T, x: x.index_select(0, T.tensor([0.0])),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(3, 4, dtype=T.float64)),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(2, 4)),
    lambda T, x: x.index_add(0, T.tensor([0, 1]), T.ones(2, 5, dtype=T.float64)),
    lambda T, x: x.index_add(0, T.tensor([0, 5]), T.ones(2, 4, dtype=T.float64)),
    lambda T, x: x.index_copy(0, T.tensor([0, 5]), T.ones(2, 4, dtype=T.float64)),
    lambda T, x: x.index_fill(0, T.tensor([5]), 1.0),
    lambda T, x: x.masked_fill(T.tensor([1, 0, 1, 0]), 1.0),
    lambda T, x: x.masked_fill(T.ones(4, dtype=T.bool), T.tensor([1.0])),
    lambda T, x: x[0].masked_fill_(T.ones(3, 4, dtype=T.bool), 1.0),
    lambda T, x: x.masked_select(T.ones(4)),
    lambda T, x: x.masked_scatter(T.ones(4, dtype=T.bool), T.ones(3, dtype=T.float64)),
    lambda T, x: x.masked_scatter(T.ones(4, dtype=T.bool), T.ones(30)),
    lambda T, x: x.take(T.tensor([20])),
    lambda T, x: x.put(T.tensor([0, 1]), T.ones(3, dtype=T.float64)),
    lambda T, x: x.index_put((T.tensor([0]),), T.tensor(1.0)),
    lambda T, x: x.take_along_dim(T.tensor([0]), 0),
    lambda T, x: x.take_along_dim(T.tensor([[0.0]]), 0),
    lambda T, x: x.scatter(0, T.tensor([[0.0]]), 1.0),
    lambda T, x: x.scatter_add(0, T.tensor([[0]], dtype=T.int16), x),
    lambda T, x: x.scatter_reduce(0, T.tensor([[0.0]]), x, "sum"),
    lambda T, x: x.scatter_reduce(0, T.tensor([[0]]), x, "foo"),
    lambda T, x: x.scatter(0, T.tensor([[0]]), 1.0, reduce="mean"),
]


@pytest.mark.parametrize("k", range(len(INDEX_ERRORS)))
def test_index_errors_match(k):
    with pytest.raises(Exception) as te:
        INDEX_ERRORS[k](torch, torch.tensor(X))
    with pytest.raises(Exception) as ee:
        INDEX_ERRORS[k](ember, ember.tensor(X))
    assert type(ee.value) is type(te.value)
    assert str(ee.value).replace("ember", "torch") == str(te.value)


def test_legacy_scatter_reduce_has_no_derivative():
    msgs = []
    for T in (ember, torch):
        x = T.ones(2, 2, dtype=T.float64, requires_grad=True)
        y = x.scatter(1, T.tensor([[0, 0], [1, 1]]), T.full((2, 2), 3.0, dtype=T.float64),
                      reduce="multiply")
        with pytest.raises(RuntimeError) as exc:
            y.sum().backward()
        msgs.append(str(exc.value))
        assert y.tolist() == [[9.0, 1.0], [1.0, 9.0]]
    assert msgs[0] == msgs[1]
