"""Batched CSC, BSR and BSC tensors (and batched CSR's transposes and ``sum(dim)``):
construction (the factories with batched parts, ``to_sparse_csc()`` / ``to_sparse_bsr(bs)`` /
``to_sparse_bsc(bs)`` of dense tensors of three or more dimensions), parts, conversions between
the layouts, sums, element-wise ops, batch selection, transposes, printing, checkpoints and
errors against PyTorch (the oracle), values against NumPy, ``@`` with dense tensors (PyTorch's
CPU build has none: against NumPy's product) and float64 gradchecks in the values."""

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

DENSE = [[[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 3.0, 0.0]],
         [[0.0, 4.0, 0.0, 0.0], [5.0, 0.0, 6.0, 0.0]]]  # 3 elements, 3 (1, 2) blocks a batch
LAYOUTS = ("csr", "csc", "bsr", "bsc")


def _torch():
    return pytest.importorskip("torch")


def _four_d_np():
    a = np.arange(1.0, 49.0, dtype=np.float32).reshape(2, 3, 2, 4)
    a[..., 0, 2:] = 0  # 6 elements, 3 (1, 2) blocks and 2 (2, 2) blocks per batch
    a[0, 1] = np.roll(a[0, 1], 2, axis=-1)  # another pattern, as many elements and blocks
    return a


def _conv(x, layout, bs=(1, 2)):
    """``x`` (dense or sparse) in ``layout``, the same call in either library."""
    if layout in ("bsr", "bsc"):
        return getattr(x, f"to_sparse_{layout}")(bs)
    return getattr(x, f"to_sparse_{layout}")()


def _b(m, layout, dtype=None):
    return _conv(m.tensor(DENSE, dtype=dtype), layout)


def _four_d(m, layout):
    return _conv(m.tensor(_four_d_np()), layout)


def _parts_of(m, layout, x):
    """The (compressed, plain, values) parts of ``x`` converted to ``layout`` in ``m``."""
    s = _conv(m.tensor(x), layout)
    comp, plain = (s.crow_indices(), s.col_indices()) if layout in ("csr", "bsr") else \
        (s.ccol_indices(), s.row_indices())
    return comp, plain, s.values()


# -- construction, parts and the ops PyTorch has -------------------------------------------------

_PARITY = [
    lambda m, lay: _b(m, lay),
    lambda m, lay: _conv(m.tensor(DENSE), lay, (2, 2)),
    lambda m, lay: _four_d(m, lay),
    lambda m, lay: _conv(m.tensor(_four_d_np()), lay, (2, 2)),
    lambda m, lay: m.tensor(DENSE).to_sparse(layout=getattr(m, f"sparse_{lay}"),
                                             blocksize=(1, 2) if lay[0] == "b" else None),
    lambda m, lay: _conv(m.zeros(2, 2, 4), lay),
    lambda m, lay: getattr(m, f"sparse_{lay}_tensor")(*_parts_of(m, lay, DENSE), (2, 2, 4)),
    lambda m, lay: getattr(m, f"sparse_{lay}_tensor")(*_parts_of(m, lay, DENSE)),  # inferred
    lambda m, lay: m.sparse_compressed_tensor(*_parts_of(m, lay, _four_d_np()), (2, 3, 2, 4),
                                              layout=getattr(m, f"sparse_{lay}")),
    lambda m, lay: _b(m, lay, m.float64).to_dense(),
    lambda m, lay: _four_d(m, lay).to_dense(),
    lambda m, lay: _b(m, lay).to_sparse_coo(),
    lambda m, lay: _four_d(m, lay).to_sparse(),
    lambda m, lay: _b(m, lay).sum(),
    lambda m, lay: _b(m, lay).sum(dtype=m.float64),
    lambda m, lay: _b(m, lay)[1],
    lambda m, lay: _b(m, lay).select(0, -1),
    lambda m, lay: _b(m, lay)[1, 0],
    lambda m, lay: _four_d(m, lay)[1],
    lambda m, lay: _four_d(m, lay)[1, 2],
    lambda m, lay: _four_d(m, lay).select(1, 0),
    lambda m, lay: _b(m, lay) * 2,
    lambda m, lay: -_b(m, lay),
    lambda m, lay: m.sin(_b(m, lay)),
    lambda m, lay: _b(m, lay).abs_(),
    lambda m, lay: m.isnan(_b(m, lay)),
    lambda m, lay: m.ones(2, 2, 4).sparse_mask(_b(m, lay)),
    lambda m, lay: _b(m, lay).zero_(),
    lambda m, lay: _b(m, lay).clone(),
    lambda m, lay: _b(m, lay).to(m.float64),
    lambda m, lay: _b(m, lay).values(),
    lambda m, lay: _four_d(m, lay).values(),
    lambda m, lay: _b(m, lay).transpose(1, 2),
    lambda m, lay: _b(m, lay).transpose(-1, -2),
    lambda m, lay: _b(m, lay).transpose(0, 0),
    lambda m, lay: _four_d(m, lay).transpose(0, 1),
    lambda m, lay: _four_d(m, lay).transpose(2, 3),
    lambda m, lay: _four_d(m, lay).transpose(1, 0).to_dense(),
]


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", _PARITY)
def test_batched_compressed_matches_torch(fn, layout):
    same_sparse_in_both(lambda m: fn(m, layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_values_against_numpy(layout):
    d = _four_d_np()
    b = _four_d(ember, layout)
    np.testing.assert_array_equal(b.to_dense().numpy(), d)
    np.testing.assert_array_equal(b.to_sparse_coo().to_dense().numpy(), d)
    np.testing.assert_array_equal((b + b).to_dense().numpy(), 2 * d)  # (PyTorch's is invalid)
    np.testing.assert_array_equal((b - b * 3).to_dense().numpy(), -2 * d)
    np.testing.assert_allclose(b.sum().item(), d.sum())
    np.testing.assert_array_equal(b.transpose(0, 1).to_dense().numpy(), d.transpose(1, 0, 2, 3))
    np.testing.assert_array_equal(b.transpose(2, 3).to_dense().numpy(), d.transpose(0, 1, 3, 2))
    np.testing.assert_array_equal(b[1, 2].to_dense().numpy(), d[1, 2])
    np.testing.assert_array_equal(ember.sqrt(b).to_dense().numpy(), np.sqrt(d))


# -- conversions between the layouts -------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("src", LAYOUTS)
@pytest.mark.parametrize("dst", LAYOUTS + ("coo",))
@pytest.mark.parametrize("bs", [(1, 2), (2, 2)])
def test_conversions_between_layouts_match_torch(src, dst, bs):
    torch = _torch()
    d = _four_d_np()

    def call(m):
        s = _conv(m.tensor(d), src, bs)
        return s.to_sparse() if dst == "coo" else _conv(s, dst, bs)

    try:
        t = call(torch)
    except RuntimeError:
        same_error_in_both(call)
        return
    e = call(ember)
    assert_same_sparse_parts(e, t)
    np.testing.assert_array_equal(e.to_dense().numpy(), d)


@pytest.mark.parity
@pytest.mark.parametrize("dst", LAYOUTS)
def test_to_sparse_with_a_layout_of_a_batched_tensor(dst):
    kw = {"blocksize": (1, 2)} if dst[0] == "b" else {}
    for src in LAYOUTS:
        def call(m, src=src):
            return _conv(m.tensor(DENSE), src).to_sparse(layout=getattr(m, f"sparse_{dst}"),
                                                         **kw)

        try:
            t = call(_torch())
        except RuntimeError:
            same_error_in_both(call)
            continue
        assert_same_sparse_parts(call(ember), t)


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
def test_coalesced_flags_of_coo_conversions_match_torch(layout):
    torch = _torch()
    one = np.zeros((2, 2, 4), dtype=np.float32)
    one[:, 0, 0] = 1.0
    for x in (one, np.zeros((2, 0, 4), dtype=np.float32), np.zeros((2, 2, 4), np.float32),
              np.asarray(DENSE, dtype=np.float32)):
        for bs in ((1, 1), (1, 2), (2, 2)):
            if x.shape[1] % bs[0]:
                continue
            e = _conv(ember.tensor(x), layout, bs).to_sparse_coo()
            t = _conv(torch.from_numpy(x), layout, bs).to_sparse_coo()
            assert e.is_coalesced() == t.is_coalesced()
            assert_same_sparse_parts(e, t)


# -- errors --------------------------------------------------------------------------------------

def _checked(m, layout, **change):
    """The layout's factory with PyTorch's checks on (Ember always checks) and parts of
    DENSE, some changed."""
    comp, plain, vals = (p.tolist() for p in _parts_of(m, layout, DENSE))
    parts = {"comp": comp, "plain": plain, "vals": vals, "size": [2, 2, 4]}
    parts.update(change)
    v = parts["vals"] if hasattr(parts["vals"], "shape") else m.tensor(parts["vals"])
    return getattr(m, f"sparse_{layout}_tensor")(m.tensor(parts["comp"]),
                                                 m.tensor(parts["plain"]), v, parts["size"],
                                                 check_invariants=True)


_ERRORS = [
    lambda m, lay: _conv(m.tensor([[[1.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]]), lay,
                         (1, 1)),
    lambda m, lay: _conv(m.zeros(0, 2, 4), lay),
    lambda m, lay: _checked(m, lay, plain=[0, 0, 0]),
    lambda m, lay: _checked(m, lay, vals=_parts_of(m, lay, DENSE)[2].detach()[:1]),
    lambda m, lay: _checked(m, lay, vals=_parts_of(m, lay, DENSE)[2].detach().flatten(0, 1)),
    lambda m, lay: _checked(m, lay, size=[2, 4]),
    lambda m, lay: _checked(m, lay, size=[3, 2, 4]),
    lambda m, lay: _checked(m, lay, size=[2, 4, 8]),
    lambda m, lay: _checked(m, lay, size=[2, 2, 2]),
    lambda m, lay: _checked(m, lay, comp=[[1] + c[1:] for c in _parts_of(m, lay, DENSE)[0]
                                          .tolist()]),
    lambda m, lay: _checked(m, lay, comp=[c[:-1] + [c[-1] - 1] for c in
                                          _parts_of(m, lay, DENSE)[0].tolist()]),
    lambda m, lay: _checked(m, lay, plain=[[p[0] + 9] + p[1:] for p in
                                           _parts_of(m, lay, DENSE)[1].tolist()]),
    lambda m, lay: _checked(m, lay, plain=[p[::-1] for p in
                                           _parts_of(m, lay, DENSE)[1].tolist()]),
    lambda m, lay: _b(m, lay).t(),
    lambda m, lay: _b(m, lay).transpose(0, 1),
    lambda m, lay: _b(m, lay).transpose(2, 0),
    lambda m, lay: _b(m, lay).sum(1),
    lambda m, lay: _b(m, lay).sum(0, keepdim=False),
    lambda m, lay: _b(m, lay).select(1, 0),
    lambda m, lay: _b(m, lay).select(2, 0),
    lambda m, lay: _b(m, lay)[0:1],
    lambda m, lay: _b(m, lay).coalesce(),
    lambda m, lay: m.sparse.softmax(_b(m, lay), 1),
    lambda m, lay: m.mm(_b(m, lay), m.ones(4, 3)),
    lambda m, lay: m.sparse.mm(_b(m, lay), m.ones(2, 4, 3)),
    lambda m, lay: m.sparse.addmm(m.ones(2, 2, 3), _b(m, lay), m.ones(2, 4, 3)),
    lambda m, lay: _b(m, lay).exp(),
    lambda m, lay: _b(m, lay).to_sparse_csr(dense_dim=0),
    lambda m, lay: _b(m, lay).to_sparse(layout=m.sparse_csc, dense_dim=0),
    lambda m, lay: m.tensor(DENSE).to_sparse().to_sparse(layout=getattr(m, f"sparse_{lay}"),
                                                         blocksize=(1, 1) if lay[0] == "b"
                                                         else None),
]


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", _ERRORS)
def test_errors_match_torch(fn, layout):
    same_error_in_both(lambda m: fn(m, layout))


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
@pytest.mark.parametrize("bs", [(2, 3), (0, 2), (3,), 2.0])
def test_blocksize_errors_match_torch(layout, bs):
    same_error_in_both(lambda m: _conv(m.tensor(DENSE), layout, bs))
    same_error_in_both(lambda m: _conv(_conv(m.tensor(DENSE[0]), "csr"), layout, bs))


def test_ember_only_errors():
    with pytest.raises(RuntimeError, match="non-zero number of batches"):
        ember.sparse_bsr_tensor(ember.zeros(0, 3, dtype=ember.int64),
                                ember.zeros(0, 0, dtype=ember.int64), ember.zeros(0, 0, 1, 2))
    b = _b(ember, "bsc")
    with pytest.raises(RuntimeError, match="cannot be multiplied with a dense tensor of size"):
        b @ ember.ones(3, 4, 5)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        b @ ember.ones(4, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="with dense tensors only"):
        b @ b
    with pytest.raises(RuntimeError, match="Ember does not resize batched compressed tensors"):
        b.resize_as_sparse_(b.clone())


# -- printing and checkpoints --------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repr_pickle_and_checkpoints_match_torch(layout):
    torch = _torch()
    e, t = _four_d(ember, layout).to("cpu"), _four_d(torch, layout)  # (torch reads CPU files)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert_same_sparse_parts(pickle.loads(pickle.dumps(e)), t)
    assert_same_sparse_parts(copy.deepcopy(e), t)
    buf = io.BytesIO()
    ember.save({"b": e}, buf)
    buf.seek(0)
    assert_same_sparse_parts(e, torch.load(buf)["b"])
    buf = io.BytesIO()
    torch.save({"b": _b(torch, layout)}, buf)
    buf.seek(0)
    assert_same_sparse_parts(ember.load(buf)["b"], _b(torch, layout))
    g = _b(ember, layout).requires_grad_()
    assert repr(g).endswith("requires_grad=True)")


# -- products with dense tensors (PyTorch's CPU build has no batched kernel) ---------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("other", [(2, 4, 3), (4, 3), (4, 1)])
def test_matmul_with_dense_equals_numpy(layout, other):
    rng = np.random.default_rng(0)
    d = rng.standard_normal(other)
    e = _conv(ember.tensor(DENSE, dtype=ember.float64), layout) @ ember.tensor(d)
    assert not e.is_sparse and e.layout is ember.strided
    np.testing.assert_allclose(e.numpy(), np.asarray(DENSE) @ d, rtol=1e-12)
    x = _conv(ember.tensor(_four_d_np(), dtype=ember.float64), layout, (2, 2))
    d4 = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(ember.matmul(x, ember.tensor(d4)).numpy(),
                               _four_d_np().astype(np.float64) @ d4, rtol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("other", [(2, 3, 2), (3, 2)])
def test_dense_matmul_batched_equals_numpy(layout, other):
    """``d @ b`` is ``(b.mT @ d.mT).mT``; ``ember.mm`` is PyTorch's matrices-only error."""
    d = np.random.default_rng(1).standard_normal(other)
    b = _conv(ember.tensor(DENSE, dtype=ember.float64), layout)
    np.testing.assert_allclose((ember.tensor(d) @ b).numpy(), d @ np.asarray(DENSE),
                               rtol=1e-12)
    same_error_in_both(lambda m: m.mm(m.ones(3, 2), _b(m, layout)))


# -- batched CSR: the transposes and sums PyTorch has, and its errors ----------------------------

@pytest.mark.parity
@pytest.mark.parametrize("dims", [(1, 2), (2, 1), (-1, -2), (0, 0), (1, 1), (2, 2)])
def test_batched_csr_transposes_are_csc(dims):
    same_sparse_in_both(lambda m: _b(m, "csr").transpose(*dims))
    same_sparse_in_both(lambda m: _b(m, "csr").transpose(*dims).to_sparse_csr())
    out = _b(ember, "csr").transpose(*dims)
    np.testing.assert_array_equal(out.to_dense().numpy(),
                                  np.swapaxes(np.asarray(DENSE), *dims))


@pytest.mark.parity
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, 2), (-3, -1)])
def test_batched_csr_transpose_errors(dims):
    same_error_in_both(lambda m: _b(m, "csr").transpose(*dims))
    same_error_in_both(lambda m: _b(m, "csr").t())
    same_error_in_both(lambda m: _b(m, "csr").transpose_(1, 2))


@pytest.mark.parity
@pytest.mark.parametrize("dim", [0, 1, 2, -1, (1, 2), (0, 1, 2)])
def test_batched_csr_sum_over_dims_is_refused(dim):
    """PyTorch refuses ``keepdim=False`` and asserts (an internal error) with
    ``keepdim=True``: Ember's error says what is supported."""
    same_error_in_both(lambda m: _b(m, "csr").sum(dim))
    with pytest.raises(RuntimeError, match="supported for 2-D tensors only"):
        _b(ember, "csr").sum(dim, keepdim=True)
    with pytest.raises(RuntimeError, match="Currently the only compressed sparse format"):
        _b(ember, "csc").sum(dim, keepdim=True)


# -- autograd ------------------------------------------------------------------------------------

def _values64(layout):
    return _b(ember, layout, ember.float64).values().detach().requires_grad_()


def _rebuild(layout):
    b = _b(ember, layout)
    comp, plain = b._compressed_parts()
    factory = getattr(ember, f"sparse_{layout}_tensor")
    return lambda v: factory(comp, plain, v, (2, 2, 4))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_in_the_values(layout):
    make = _rebuild(layout)
    d = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    d2 = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    v = _values64(layout)
    assert gradcheck(lambda v, d: make(v) @ d, (v, d))
    assert gradcheck(lambda v, d: make(v) @ d, (v, d2))
    d3 = ember.randn(2, 3, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v, d: d @ make(v), (v, d3))
    assert gradcheck(lambda v: make(v).to_dense(), (v,))
    assert gradcheck(lambda v: make(v).to_sparse_coo().to_dense(), (v,))
    assert gradcheck(lambda v: make(v).sum(), (v,))
    assert gradcheck(lambda v: ember.tanh(make(v)).values(), (v,))
    assert gradcheck(lambda v: make(v)[1].to_dense(), (v,))
    assert gradcheck(lambda v: make(v).transpose(1, 2).to_dense(), (v,))
    assert gradcheck(lambda v: (make(v) * 3 + make(v)).values(), (v,))
    flip = {"csr": "csc", "csc": "csr", "bsr": "bsc", "bsc": "bsr"}[layout]
    assert gradcheck(lambda v: _conv(make(v), flip).values(), (v,))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_of_dense_conversions_and_batch_transposes(layout):
    x = ember.tensor(_four_d_np(), dtype=ember.float64) + 100  # no zeros: a fixed pattern
    x.requires_grad_()
    assert gradcheck(lambda x: _conv(x, layout).values(), (x,))
    assert gradcheck(lambda x: _conv(x, layout).transpose(0, 1).to_dense(), (x,))


@pytest.mark.parity
@pytest.mark.parametrize("layout", LAYOUTS)
def test_grad_fn_names_and_a_leaf_gradient(layout):
    torch = _torch()
    names = []
    for m in (ember, torch):
        x = m.tensor(DENSE, requires_grad=True)
        names.append(_conv(x, layout).grad_fn.name())
    assert names[0] == names[1]
    leaf = _b(ember, layout).detach().requires_grad_()
    (leaf @ ember.ones(2, 4, 5)).sum().backward()
    assert leaf.grad.layout == leaf.layout and tuple(leaf.grad.shape) == (2, 2, 4)
    np.testing.assert_array_equal(leaf.grad.values().numpy(),
                                  np.full(tuple(leaf.values().shape), 5.0))
    np.testing.assert_array_equal(leaf.grad._compressed_parts()[0].numpy(),
                                  leaf._compressed_parts()[0].numpy())
