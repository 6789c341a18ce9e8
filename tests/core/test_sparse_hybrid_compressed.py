"""Hybrid sparse compressed tensors (CSR, CSC, BSR, BSC with trailing dense dimensions:
``dense_dim() > 0``, batched or not): construction (``to_sparse_csr(dense_dim=...)`` and the
other layouts' conversions of dense tensors, the factories with values of more dimensions, COO
tensors of two sparse dimensions), parts, conversions, printing, checkpoints, the element-wise
ops and selections PyTorch has, and its errors, against PyTorch (the oracle); values against
NumPy; float64 gradchecks in the values."""

from __future__ import annotations

import copy
import io
import pickle

import numpy as np
import pytest
from testutils import assert_same_sparse_parts, same_error_in_both, same_sparse_in_both

import ember
from ember.autograd import gradcheck

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse (CSR|CSC|BSR|BSC) tensor support is in beta"),
]

LAYOUTS = ("csr", "csc", "bsr", "bsc")
#: (2, 2) sparse, (4,) dense: every element stored (one dense vector is zero but for one entry)
DENSE3 = [[[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 3.0, 0.0]],
          [[0.0, 4.0, 0.0, 0.0], [5.0, 0.0, 6.0, 0.0]]]


def _torch():
    return pytest.importorskip("torch")


def _batched_np():
    """(2,) batch, (3, 2) sparse, (4,) dense: 5 elements per batch, 3 (1, 2) blocks."""
    a = np.arange(1.0, 49.0, dtype=np.float32).reshape(2, 3, 2, 4)
    a[0, 1, 0] = 0
    a[1, 2, 1] = 0
    return a


def _four_np():
    """(3, 2) sparse, (2, 4) dense, one element of six unstored."""
    a = np.arange(1.0, 49.0, dtype=np.float32).reshape(3, 2, 2, 4)
    a[1, 0] = 0
    return a


def _conv(x, layout, dense_dim=1, bs=(1, 1)):
    """``x`` in ``layout`` with ``dense_dim`` dense dimensions, the same call in either
    library."""
    if layout in ("bsr", "bsc"):
        return getattr(x, f"to_sparse_{layout}")(bs, dense_dim)
    return getattr(x, f"to_sparse_{layout}")(dense_dim=dense_dim)


def _h(m, layout, dtype=None, bs=(1, 1)):
    return _conv(m.tensor(DENSE3, dtype=dtype), layout, 1, bs)


def _hb(m, layout, bs=(1, 1)):
    return _conv(m.tensor(_batched_np()), layout, 1, bs)


def _h2(m, layout):
    return _conv(m.tensor(_four_np()), layout, 2)


def _parts_of(s):
    comp, plain = s._compressed_parts() if hasattr(s, "_compressed_parts") else \
        ((s.crow_indices(), s.col_indices()) if str(s.layout)[-3:] in ("csr", "bsr") else
         (s.ccol_indices(), s.row_indices()))
    return comp, plain, s.values()


def _factory(m, layout, src, size="same", **kw):
    s = src(m)
    size = tuple(s.shape) if size == "same" else size
    args = (size,) if size is not None else ()
    return getattr(m, f"sparse_{layout}_tensor")(*_parts_of(s), *args, **kw)


_PARITY = [
    lambda m, lay: _h(m, lay),
    lambda m, lay: _h(m, lay, bs=(2, 1)),
    lambda m, lay: _h(m, lay, bs=(2, 2)),
    lambda m, lay: _hb(m, lay),
    lambda m, lay: _hb(m, lay, bs=(3, 1)),
    lambda m, lay: _h2(m, lay),
    lambda m, lay: _conv(m.tensor(DENSE3), lay, 0),
    lambda m, lay: _conv(m.zeros(2, 2, 3), lay, 1),
    lambda m, lay: m.tensor(DENSE3).to_sparse(layout=getattr(m, f"sparse_{lay}"), dense_dim=1,
                                              blocksize=(1, 2) if lay[0] == "b" else None),
    lambda m, lay: _factory(m, lay, lambda m: _h(m, lay)),
    lambda m, lay: _factory(m, lay, lambda m: _hb(m, lay), None),  # the size inferred
    lambda m, lay: _factory(m, lay, lambda m: _h2(m, lay), None),
    lambda m, lay: m.sparse_compressed_tensor(*_parts_of(_hb(m, lay)), (2, 3, 2, 4),
                                              layout=getattr(m, f"sparse_{lay}")),
    lambda m, lay: _h(m, lay).to_dense(),
    lambda m, lay: _hb(m, lay).to_dense(),
    lambda m, lay: _h2(m, lay).to_dense(),
    lambda m, lay: _h(m, lay).to_sparse(),
    lambda m, lay: _hb(m, lay).to_sparse_coo(),
    lambda m, lay: _h(m, lay, bs=(2, 1)).to_sparse_coo(),
    lambda m, lay: _h2(m, lay).to_sparse(),
    lambda m, lay: _h(m, lay).values(),
    lambda m, lay: _hb(m, lay).values(),
    lambda m, lay: _h(m, lay).sum(),
    lambda m, lay: _hb(m, lay).sum(dtype=m.float64),
    lambda m, lay: _h(m, lay) * 2,
    lambda m, lay: -_hb(m, lay),
    lambda m, lay: m.sin(_h2(m, lay)),
    lambda m, lay: _h(m, lay).abs_(),
    lambda m, lay: _h(m, lay)[1],
    lambda m, lay: _h(m, lay).select(1, 0),
    lambda m, lay: _h(m, lay).select(2, 1),  # a dense dimension: the same layout
    lambda m, lay: _h(m, lay)[..., 3],
    lambda m, lay: _h2(m, lay).select(3, -1),
    lambda m, lay: _hb(m, lay)[1],  # a batch: a hybrid tensor
    lambda m, lay: _hb(m, lay).select(3, 2),
    lambda m, lay: _hb(m, lay)[1, 2],
    lambda m, lay: m.ones(2, 2, 4).sparse_mask(_h(m, lay)),
    lambda m, lay: m.ones(2, 3, 2, 4).sparse_mask(_hb(m, lay)),
    lambda m, lay: _h(m, lay).zero_(),
    lambda m, lay: _h(m, lay).clone(),
    lambda m, lay: _hb(m, lay).to(m.float64),
]


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", _PARITY)
def test_hybrid_matches_torch(fn, layout):
    same_sparse_in_both(lambda m: fn(m, layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_values_against_numpy(layout):
    for make, d in ((_h, np.asarray(DENSE3, np.float32)), (_hb, _batched_np()),
                    (_h2, _four_np())):
        s = make(ember, layout)
        assert s.dense_dim() == d.ndim - 2 - (1 if make is _hb else 0) and s.sparse_dim() == 2
        np.testing.assert_array_equal(s.to_dense().numpy(), d)
        np.testing.assert_array_equal(s.to_sparse_coo().to_dense().numpy(), d)
        np.testing.assert_array_equal((s + s * 2).to_dense().numpy(), 3 * d)
        np.testing.assert_allclose(s.sum().item(), d.sum())
        np.testing.assert_array_equal(s.select(s.dim() - 1, 1).to_dense().numpy(), d[..., 1])
        np.testing.assert_array_equal(ember.sqrt(s).to_dense().numpy(), np.sqrt(d))


# -- conversions ---------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("src", LAYOUTS + ("coo",))
@pytest.mark.parametrize("dst", LAYOUTS + ("coo",))
@pytest.mark.parametrize("data", ["hybrid", "batched", "two dense"])
def test_conversions_match_torch(src, dst, data):
    torch = _torch()
    x = {"hybrid": np.asarray(DENSE3, np.float32), "batched": _batched_np(),
         "two dense": _four_np()}[data]
    dd = {"hybrid": 1, "batched": 1, "two dense": 2}[data]

    def call(m):
        t = m.tensor(x)
        s = t.to_sparse(t.dim() - dd) if src == "coo" else _conv(t, src, dd)
        if dst == "coo":
            return s.to_sparse()
        return getattr(s, f"to_sparse_{dst}")(*(((1, 1),) if dst[0] == "b" else ()))

    try:
        t = call(torch)
    except RuntimeError:
        same_error_in_both(call)
        return
    e = call(ember)
    assert_same_sparse_parts(e, t)
    np.testing.assert_array_equal(e.to_dense().numpy(), x)


# -- errors --------------------------------------------------------------------------------------

def _bad(m, lay, values=None, size="same"):
    s = _h(m, lay)
    comp, plain, vals = _parts_of(s)
    vals = vals.detach() if values is None else values(vals.detach())
    size = tuple(s.shape) if size == "same" else size
    return getattr(m, f"sparse_{lay}_tensor")(comp, plain, vals, size, check_invariants=True)


_ERRORS = [
    lambda m, lay: _conv(m.tensor(DENSE3), lay, 2 if lay[0] == "c" else 0, (2, 3)),
    lambda m, lay: _conv(m.tensor(DENSE3), lay, -1 if lay[0] == "c" else 1, (0, 1)),
    lambda m, lay: _conv(m.tensor(_batched_np()), lay, 1 if lay[0] == "b" else 3, (2, 1)),
    lambda m, lay: _conv(m.tensor(_batched_np()) * m.tensor([1.0, 0.0]).reshape(2, 1, 1, 1),
                         lay, 1),
    lambda m, lay: _bad(m, lay, size=(2, 2)),
    lambda m, lay: _bad(m, lay, values=lambda v: v.sum(-1)),
    lambda m, lay: _h(m, lay).t(),
    lambda m, lay: _h(m, lay).transpose(0, 1),
    lambda m, lay: _h(m, lay).transpose(0, 0),
    lambda m, lay: _h2(m, lay).transpose(2, 3),
    lambda m, lay: _hb(m, lay).transpose(1, 2),
    lambda m, lay: _h(m, lay).sum(0),
    lambda m, lay: _hb(m, lay).select(1, 0),
    lambda m, lay: m.mm(_h(m, lay), m.ones(2, 3)),
    lambda m, lay: m.sparse.mm(_h(m, lay), m.ones(2, 3)),
    lambda m, lay: m.mm(m.ones(3, 2), _h(m, lay)),
    lambda m, lay: m.ones(3, 2) @ _h(m, lay),
    lambda m, lay: _h(m, lay).to_sparse_csr(dense_dim=1),
    lambda m, lay: _h(m, lay).to_sparse(layout=m.sparse_csr, dense_dim=1),
    lambda m, lay: m.tensor(DENSE3).to_sparse(2).to_sparse_csr(dense_dim=1),
    lambda m, lay: m.tensor(DENSE3).to_sparse(1).to_sparse(layout=getattr(m, f"sparse_{lay}"),
                                                          blocksize=(1, 1) if lay[0] == "b"
                                                          else None),
    lambda m, lay: _h(m, lay).exp(),
    lambda m, lay: m.sparse.softmax(_h(m, lay), 2),
    lambda m, lay: m.sparse.log_softmax(_hb(m, lay), 1),
]


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", _ERRORS)
def test_errors_match_torch(fn, layout):
    same_error_in_both(lambda m: fn(m, layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ember_errors(layout):
    """Where PyTorch accepts values whose dense sizes differ from ``size`` (its kernels then
    misread them) or fails inside (an internal assert, an IndexError), Ember says why."""
    with pytest.raises(RuntimeError, match="values has incorrect size"):
        _bad(ember, layout, values=lambda v: v[..., :3])
    with pytest.raises(RuntimeError, match="supported for 2-D tensors only|Currently the only"):
        _h(ember, layout).sum(0, keepdim=True)
    with pytest.raises(RuntimeError, match="dense dimensions .hybrid. do not multiply"):
        _h(ember, layout) @ ember.ones(2, 3)
    if layout == "csr":
        with pytest.raises(RuntimeError, match="not a batched or hybrid one"):
            ember.sparse.sampled_addmm(_h(ember, layout), ember.ones(2, 3), ember.ones(3, 2))
    for dd in (-1, 2, 3):  # (PyTorch's block conversions fail on an index: an IndexError)
        with pytest.raises(RuntimeError, match=r"dense_dim argument must be in \[0,1\] range"):
            _conv(ember.tensor(DENSE3), layout, dd)
    with pytest.raises(RuntimeError, match="expected a tensor of at least 2 dimensions"):
        _conv(ember.ones(3), layout, 0)


# -- printing and checkpoints --------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repr_pickle_and_checkpoints_match_torch(layout):
    torch = _torch()
    for make in (_h, _hb, _h2):
        e, t = make(ember, layout).to("cpu"), make(torch, layout)  # (torch reads CPU files)
        assert repr(e) == repr(t).replace("torch.", "ember.")
        assert_same_sparse_parts(pickle.loads(pickle.dumps(e)), t)
        assert_same_sparse_parts(copy.deepcopy(e), t)
        buf = io.BytesIO()
        ember.save({"h": e}, buf)
        buf.seek(0)
        assert_same_sparse_parts(e, torch.load(buf)["h"])
        buf = io.BytesIO()
        torch.save({"h": t}, buf)
        buf.seek(0)
        assert_same_sparse_parts(ember.load(buf)["h"], t)


# -- autograd ------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("make", [_h, _hb, _h2])
def test_gradcheck_in_the_values(layout, make):
    s = make(ember, layout)
    comp, plain, vals = _parts_of(s)
    factory = getattr(ember, f"sparse_{layout}_tensor")
    size = tuple(s.shape)

    def rebuild(v):
        return factory(comp, plain, v, size)

    v = vals.detach().double().requires_grad_()
    last = len(size) - 1
    assert gradcheck(lambda v: rebuild(v).to_dense(), (v,))
    assert gradcheck(lambda v: rebuild(v).to_sparse_coo().to_dense(), (v,))
    assert gradcheck(lambda v: rebuild(v).sum(), (v,))
    assert gradcheck(lambda v: ember.tanh(rebuild(v) * 2).values(), (v,))
    assert gradcheck(lambda v: rebuild(v).select(last, 1).to_dense(), (v,))
    assert gradcheck(lambda v: rebuild(v)[1].to_dense(), (v,))
    flip = {"csr": "csc", "csc": "csr", "bsr": "bsc", "bsc": "bsr"}[layout]
    assert gradcheck(lambda v: getattr(rebuild(v), f"to_sparse_{flip}")(
        *(((1, 1),) if flip[0] == "b" else ())).values(), (v,))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_of_dense_conversions(layout):
    x = ember.tensor(_batched_np(), dtype=ember.float64) + 100  # no zeros: a fixed pattern
    x.requires_grad_()
    assert gradcheck(lambda x: _conv(x, layout, 1).values(), (x,))
    assert gradcheck(lambda x: _conv(x, layout, 2).to_dense(), (x,))


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
def test_grad_fn_names_and_a_leaf_gradient(layout):
    torch = _torch()
    names = [_conv(m.tensor(DENSE3, requires_grad=True), layout).grad_fn.name()
             for m in (ember, torch)]
    assert names[0] == names[1]
    leaf = _hb(ember, layout).detach().requires_grad_()
    (leaf.to_dense() * ember.arange(4.0)).sum().backward()
    assert leaf.grad.layout == leaf.layout and leaf.grad.dense_dim() == 1
    want = np.broadcast_to(np.arange(4.0), tuple(leaf.values().shape))
    np.testing.assert_array_equal(leaf.grad.values().numpy(), want)
