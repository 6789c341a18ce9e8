"""Block sparse layouts (``ember.sparse_bsr``, ``ember.sparse_bsc``): factories, conversions
between all five layouts, products with dense operands, autograd (float64 gradchecks),
printing, checkpoints, and PyTorch's errors; parity with PyTorch (the oracle) on every name."""

from __future__ import annotations

import io
import pickle
import re

import numpy as np
import pytest
from testutils import assert_same_error
from testutils import sparse_parts as _parts

import ember
from ember.autograd import gradcheck, gradgradcheck

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
]

LAYOUTS = ("coo", "csr", "csc", "bsr", "bsc")


def _dense_np(dtype=np.float32):
    d = np.arange(24, dtype=dtype).reshape(4, 6)
    d[0:2, 2:4] = 0
    d[2:4, 0:2] = 0
    d[0, 0] = 0  # a zero inside a stored block
    return d


def _dense(dtype=ember.float32):
    return ember.tensor(_dense_np(), dtype=dtype)


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return (t.to_dense() if t.layout is not ember.strided else t).detach().numpy()


def _to(x, layout, blocksize=(2, 2)):
    """``x`` (dense or sparse) converted to ``layout`` ("coo", ..., "bsc"), the same call in
    ember and torch."""
    if layout == "coo":
        return x.to_sparse()
    if layout in ("bsr", "bsc"):
        return getattr(x, f"to_sparse_{layout}")(blocksize)
    return getattr(x, f"to_sparse_{layout}")()


def _same(e, t):
    """An ember sparse tensor equals a torch one: layout, size, dtype, every part exactly."""
    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert e._nnz() == t._nnz()
    for a, b in zip(_parts(e), _parts(t)):
        np.testing.assert_array_equal(a, b)


# -- layouts and metadata ------------------------------------------------------------------------

def test_layouts_are_constants():
    assert repr(ember.sparse_bsr) == "ember.sparse_bsr" and isinstance(ember.sparse_bsc,
                                                                        ember.layout)
    assert pickle.loads(pickle.dumps(ember.sparse_bsc)) is ember.sparse_bsc
    b = _dense().to_sparse_bsr((2, 2))
    assert b.layout is ember.sparse_bsr and not b.is_sparse and not b.is_sparse_csr
    assert b.sparse_dim() == 2 and b.dense_dim() == 0 and b._nnz() == 4
    assert b.values().shape == (4, 2, 2) and b.shape == (4, 6)
    assert b.to_sparse_bsc(2).layout is ember.sparse_bsc


# -- construction --------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
@pytest.mark.parametrize("blocksize", [(2, 2), (2, 3), (1, 6), (4, 1), 2, [2, 1]])
def test_dense_to_block_matches_torch(layout, blocksize):
    torch = _torch()
    d = _dense_np()
    e = getattr(ember.tensor(d), f"to_sparse_{layout}")(blocksize)
    t = getattr(torch.from_numpy(d), f"to_sparse_{layout}")(blocksize)
    _same(e, t)
    np.testing.assert_array_equal(_np(e), d)


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
def test_to_sparse_with_layout_and_blocksize(layout):
    torch = _torch()
    d = _dense_np()
    tl = getattr(torch, f"sparse_{layout}")
    el = getattr(ember, f"sparse_{layout}")
    _same(ember.tensor(d).to_sparse(layout=el, blocksize=(2, 3)),
          torch.from_numpy(d).to_sparse(layout=tl, blocksize=(2, 3)))
    empty = ember.zeros(4, 6).to_sparse(layout=el, blocksize=(2, 2))
    _same(empty, torch.zeros(4, 6).to_sparse(layout=tl, blocksize=(2, 2)))
    assert empty.values().shape == (0, 2, 2)


@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda m, d: d.to_sparse_bsr((3, 2)), lambda m, d: d.to_sparse_bsr((2, 4)),
    lambda m, d: d.to_sparse_bsr((0, 2)), lambda m, d: d.to_sparse_bsr((2,)),
    lambda m, d: d.to_sparse_bsr((2, 2, 2)), lambda m, d: d.to_sparse_bsc((0, 2)),
    lambda m, d: d.to_sparse_bsc((4, 4)), lambda m, d: d.to_sparse_bsc(None),
    lambda m, d: d.to_sparse(layout=m.sparse_bsr),
    lambda m, d: d.to_sparse(layout=m.sparse_csr, blocksize=(2, 2)),
    lambda m, d: d.to_sparse(blocksize=(2, 2)),
    lambda m, d: d.to_sparse().to_sparse_bsr((4, 4)),
    lambda m, d: d.to_sparse_csr().to_sparse_bsr((0, 2)),
    lambda m, d: d.to_sparse_csr().to_sparse_bsc((4, 4)),
    lambda m, d: d.to_sparse().to_sparse(layout=m.sparse_bsr),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse(layout=m.sparse_csr),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse(layout=m.sparse_bsc),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse(layout=m.sparse_bsr, blocksize=(1, 2)),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse_bsr((1, 2)),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse_bsc((1, 2)),
    lambda m, d: d.to_sparse_bsc((2, 3)).to_sparse_bsr((2, 2)),
    lambda m, d: d.to_sparse_bsr((2, 2)).to_sparse_csr(),
    lambda m, d: d.to_sparse_bsc((2, 2)).to_sparse_csc(),
    lambda m, d: d.to_sparse_bsr((2, 2)).coalesce(),
    lambda m, d: d.to_sparse_bsr((2, 2)).indices(),
    lambda m, d: d.to_sparse_bsr((2, 2)).ccol_indices(),
    lambda m, d: d.to_sparse_bsc((2, 2)).crow_indices(),
    lambda m, d: d.to_sparse_bsr((2, 2)).sum(0),
    lambda m, d: d.to_sparse_bsr((2, 2)) @ m.ones(5, 3),
    lambda m, d: m.mm(d.to_sparse_bsr((2, 2)), m.ones(6, 3, dtype=m.float64)),
    lambda m, d: m.ones(3, 5) @ d.to_sparse_bsc((2, 2)),
])
def test_conversion_and_product_errors_match_torch(call):
    torch = _torch()
    d = _dense_np()
    assert_same_error(lambda: call(ember, ember.tensor(d)),
                      lambda: call(torch, torch.from_numpy(d)))


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
@pytest.mark.parametrize("size", [None, (4, 6), (4, 8), (4, 10)])
def test_block_factories_match_torch(layout, size):
    torch = _torch()
    parts = _parts(getattr(torch.from_numpy(_dense_np()), f"to_sparse_{layout}")((2, 2)))
    tf = getattr(torch, f"sparse_{layout}_tensor")
    ef = getattr(ember, f"sparse_{layout}_tensor")
    if layout == "bsc" and size is not None:  # more rows, not more columns
        size = size[::-1] if size != (4, 6) else size
        size = (size[0], 6)
    kw = {} if size is None else {"size": size}
    t = tf(*(torch.from_numpy(p) for p in parts), check_invariants=True, **kw)
    e = ef(*(ember.tensor(p) for p in parts), **kw)
    _same(e, t)
    np.testing.assert_array_equal(_np(e), t.to_dense().numpy())
    tl, el = getattr(torch, f"sparse_{layout}"), getattr(ember, f"sparse_{layout}")
    t2 = torch.sparse_compressed_tensor(*(torch.from_numpy(p) for p in parts), layout=tl, **kw)
    _same(ember.sparse_compressed_tensor(*(ember.tensor(p) for p in parts), layout=el, **kw),
          t2)


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_sparse_compressed_tensor_for_csr_and_csc(layout):
    torch = _torch()
    parts = _parts(getattr(torch.from_numpy(_dense_np()), f"to_sparse_{layout}")())
    tl, el = getattr(torch, f"sparse_{layout}"), getattr(ember, f"sparse_{layout}")
    t = torch.sparse_compressed_tensor(*(torch.from_numpy(p) for p in parts), (4, 6), layout=tl)
    e = ember.sparse_compressed_tensor(*(ember.tensor(p) for p in parts), (4, 6), layout=el)
    _same(e, t)
    no_size = ember.sparse_compressed_tensor(*(ember.tensor(p) for p in parts), layout=el)
    _same(no_size, torch.sparse_compressed_tensor(*(torch.from_numpy(p) for p in parts),
                                                  layout=tl))


CROW, COL = [0, 2, 4], [0, 2, 1, 2]


def _bad_factory(m, case):
    """A bad BSR/BSC factory call, the same in ember and torch (torch checking invariants)."""
    t = m.tensor
    vals = m.arange(16.0).reshape(4, 2, 2)
    kw = {"check_invariants": True} if m is not ember else {}
    calls = {
        "shape1": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals, (4, 7), **kw),
        "shape0": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals, (5, 6), **kw),
        "nrows": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals, (6, 6), **kw),
        "ndim": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals, (4, 6, 1), **kw),
        "values2d": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals[:, 0], (4, 6), **kw),
        "nnz": lambda: m.sparse_bsr_tensor(t(CROW), t(COL), vals[:3], (4, 6), **kw),
        "last": lambda: m.sparse_bsr_tensor(t([0, 2, 3]), t(COL), vals, (4, 6), **kw),
        "first": lambda: m.sparse_bsr_tensor(t([1, 2, 4]), t(COL), vals, (4, 6), **kw),
        "oob": lambda: m.sparse_bsr_tensor(t(CROW), t([0, 2, 1, 3]), vals, (4, 6), **kw),
        "unsorted": lambda: m.sparse_bsr_tensor(t(CROW), t([2, 0, 1, 2]), vals, (4, 6), **kw),
        "bsc_oob": lambda: m.sparse_bsc_tensor(t([0, 2, 4]), t([0, 2, 0, 1]), vals, (4, 4),
                                               **kw),
        "bsc_shape": lambda: m.sparse_bsc_tensor(t([0, 2, 4]), t([0, 1, 0, 1]), vals, (4, 5),
                                                 **kw),
        "no_layout": lambda: m.sparse_compressed_tensor(t(CROW), t(COL), vals, (4, 6)),
        "coo_layout": lambda: m.sparse_compressed_tensor(t(CROW), t(COL), vals, (4, 6),
                                                         layout=m.sparse_coo),
        "strided_layout": lambda: m.sparse_compressed_tensor(t(CROW), t(COL), vals, (4, 6),
                                                             layout=m.strided),
    }
    return calls[case]()


@pytest.mark.parity
@pytest.mark.parametrize("case", ["shape1", "shape0", "nrows", "ndim", "values2d", "nnz",
                                  "last", "first", "oob", "unsorted", "bsc_oob", "bsc_shape",
                                  "no_layout", "coo_layout", "strided_layout"])
def test_factory_errors_match_torch(case):
    torch = _torch()
    assert_same_error(lambda: _bad_factory(ember, case), lambda: _bad_factory(torch, case))


def test_factory_options():
    vals = ember.arange(16.0, dtype=ember.float64).reshape(4, 2, 2)
    b = ember.sparse_bsr_tensor(CROW, COL, vals, dtype=ember.float32, requires_grad=True)
    assert b.dtype is ember.float32 and b.requires_grad and b.is_leaf and b.shape == (4, 6)
    v = vals.clone().requires_grad_()
    named = ember.sparse_bsc_tensor(CROW, COL, v, (6, 4))
    assert named.grad_fn.name() == "SparseCompressedTensorBackward0"


# -- conversions between the five layouts -------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("src", LAYOUTS)
@pytest.mark.parametrize("dst", LAYOUTS)
def test_conversions_between_layouts_match_torch(src, dst):
    torch = _torch()
    d = _dense_np()
    e_src, t_src = _to(ember.tensor(d), src), _to(torch.from_numpy(d), src)
    try:
        t = _to(t_src, dst)
    except RuntimeError:
        assert_same_error(lambda: _to(e_src, dst), lambda: _to(t_src, dst))
        return
    e = _to(e_src, dst)
    _same(e, t)
    np.testing.assert_array_equal(_np(e), d)


@pytest.mark.parity
def test_block_to_coo_keeps_block_elements_and_coalesced_flag():
    torch = _torch()
    one = torch.ones(2, 2).to_sparse_bsr((2, 2)).to_sparse()
    _same(ember.ones(2, 2).to_sparse_bsr((2, 2)).to_sparse(), one)
    assert one.is_coalesced()
    d = _dense_np()
    _same(ember.tensor(d).to_sparse_bsc((2, 3)).to_sparse_coo(),
          torch.from_numpy(d).to_sparse_bsc((2, 3)).to_sparse_coo())


def test_same_blocksize_conversion_is_identity():
    b = _dense().to_sparse_bsr((2, 2))
    assert b.to_sparse_bsr((2, 2)) is b and b.to_sparse(layout=ember.sparse_bsr) is b


@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
def test_transpose_matches_torch(layout):
    torch = _torch()
    d = _dense_np()
    e = getattr(ember.tensor(d), f"to_sparse_{layout}")((2, 3))
    t = getattr(torch.from_numpy(d), f"to_sparse_{layout}")((2, 3))
    _same(e.t(), t.t())
    _same(e.transpose(0, 1), t.transpose(0, 1))
    np.testing.assert_array_equal(_np(e.t()), d.T)


def test_moves_copies_and_dtype():
    b = _dense().to_sparse_bsc((2, 3))
    for c in (b.clone(), b.detach(), b.to(ember.float64), pickle.loads(pickle.dumps(b))):
        assert c.layout is ember.sparse_bsc and c.values().shape == (4, 2, 3)
        np.testing.assert_array_equal(_np(c), _dense_np())
    assert b.to(ember.float64).dtype is ember.float64


# -- products -------------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("layout", ["bsr", "bsc"])
@pytest.mark.parametrize("blocksize", [(2, 2), (2, 3), (1, 1), (4, 6)])
def test_products_with_a_dense_operand(layout, blocksize):
    torch = _torch()
    rng = np.random.default_rng(0)
    d = _dense_np()
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.standard_normal((3, 4)).astype(np.float32)
    v = rng.standard_normal(6).astype(np.float32)
    inp = rng.standard_normal((4, 5)).astype(np.float32)
    s = getattr(ember.tensor(d), f"to_sparse_{layout}")(blocksize)
    td = torch.from_numpy(d)
    ref = (td @ torch.from_numpy(x)).numpy()
    for out in (s @ ember.tensor(x), ember.mm(s, ember.tensor(x)), s.mm(ember.tensor(x)),
                ember.matmul(s, ember.tensor(x)), ember.sparse.mm(s, ember.tensor(x))):
        assert out.layout is ember.strided
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose((ember.tensor(y) @ s).numpy(), (torch.from_numpy(y) @ td).numpy(),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose((s @ ember.tensor(v)).numpy(), (td @ torch.from_numpy(v)).numpy(),
                               rtol=1e-5, atol=1e-4)
    got = ember.sparse.addmm(ember.tensor(inp), s, ember.tensor(x), beta=0.5, alpha=2.0)
    want = torch.addmm(torch.from_numpy(inp), td, torch.from_numpy(x), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-4)
    if layout == "bsr" and blocksize[0] == blocksize[1]:  # torch's CPU: square BSR @ dense
        t = getattr(td, f"to_sparse_{layout}")(blocksize)
        np.testing.assert_allclose((s @ ember.tensor(x)).numpy(),
                                   (t @ torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(
            ember.sparse.addmm(ember.tensor(inp), s, ember.tensor(x)).numpy(),
            torch.sparse.addmm(torch.from_numpy(inp), t, torch.from_numpy(x)).numpy(),
            rtol=1e-5, atol=1e-4)


def test_block_with_sparse_operand_and_empty():
    s = _dense().to_sparse_bsr((2, 2))
    prod = s @ _dense().t().to_sparse()
    assert prod.layout is ember.sparse_coo
    np.testing.assert_allclose(_np(prod), _dense_np() @ _dense_np().T)
    empty = ember.zeros(4, 6).to_sparse_bsr((2, 3))
    np.testing.assert_array_equal((empty @ ember.ones(6, 2)).numpy(), np.zeros((4, 2)))


def _bsr_leaf(layout="bsr", blocksize=(2, 2)):
    d = ember.tensor(_dense_np(np.float64))
    s = getattr(d, f"to_sparse_{layout}")(blocksize)
    return s.detach().requires_grad_()


@pytest.mark.parametrize("layout", ["bsr", "bsc"])
def test_gradcheck_products(layout):
    s = _bsr_leaf(layout, (2, 3))
    comp, plain = s._compressed_parts()
    make = getattr(ember, f"sparse_{layout}_tensor")
    x = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)
    y = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)

    def right(v, x):
        return make(comp, plain, v, (4, 6)) @ x

    def left(v, y):
        return y @ make(comp, plain, v, (4, 6))

    def add(v, x):
        return ember.sparse.addmm(ember.ones(4, 3, dtype=ember.float64),
                                  make(comp, plain, v, (4, 6)), x, beta=0.5, alpha=2.0)

    v = s.values().detach().requires_grad_()
    assert gradcheck(right, (v, x))
    assert gradcheck(left, (v, y))
    assert gradcheck(add, (v, x))
    assert gradgradcheck(right, (v, x))


def test_gradcheck_conversions():
    # no zeros: a finite difference at a zero would change the pattern
    d = ember.arange(1.0, 25.0, dtype=ember.float64).reshape(4, 6).requires_grad_()
    assert gradcheck(lambda d: d.to_sparse_bsr((2, 2)).to_dense(), (d,))
    assert gradcheck(lambda d: d.to_sparse_bsc((2, 3)).t().to_dense(), (d,))
    assert gradcheck(lambda d: d.to_sparse_bsr((2, 2)).to_sparse_bsc((2, 2)).values(), (d,))
    assert gradcheck(lambda d: d.to_sparse().to_sparse_bsr((1, 3)).values(), (d,))
    assert gradcheck(lambda d: d.to_sparse_bsr(2).to_sparse().to_dense(), (d,))


def test_gradient_of_a_block_leaf_is_block_sparse():
    s = _bsr_leaf("bsr")
    x = ember.randn(6, 3, dtype=ember.float64)
    (s @ x).sum().backward()
    g = s.grad
    assert g.layout is ember.sparse_bsr and g.values().shape == s.values().shape
    dense_grad = np.ones((4, 3)) @ x.numpy().T  # the gradient sampled at the stored blocks
    expected = np.zeros((4, 6))
    for bi, bj in ((0, 0), (0, 2), (1, 1), (1, 2)):  # the stored blocks of _dense_np
        rows, cols = slice(2 * bi, 2 * bi + 2), slice(2 * bj, 2 * bj + 2)
        expected[rows, cols] = dense_grad[rows, cols]
    np.testing.assert_allclose(_np(g), expected)


def test_gradcheck_with_as_sparse_gradcheck():
    check = ember.sparse.as_sparse_gradcheck(gradcheck)
    x = ember.randn(6, 2, dtype=ember.float64)
    assert check(lambda s: s @ x, (_bsr_leaf("bsr"),))
    assert check(lambda s: s * 3.0, (_bsr_leaf("bsc", (2, 3)),))


# -- arithmetic and reductions -------------------------------------------------------------------

def test_arithmetic_keeps_the_block_layout():
    s = _dense().to_sparse_bsr((2, 2))
    d = _dense_np()
    for out, want in ((-s, -d), (s * 2, d * 2), (s / 2, d / 2), (s + s, 2 * d), (s - s, 0 * d),
                      (s * s, d * d), (s * ember.ones(4, 6) * 3, 3 * d)):
        assert out.layout is ember.sparse_bsr and out.values().shape[1:] == (2, 2)
        np.testing.assert_allclose(_np(out), want)
    np.testing.assert_allclose((ember.ones(4, 6) + s).numpy(), 1 + d)
    assert float(s.sum()) == d.sum()
    with pytest.raises(NotImplementedError, match="_sparse_softmax"):
        ember.sparse.softmax(s, 0)


# -- printing -------------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("make", [
    lambda m, d: d.to_sparse_bsr((2, 2)), lambda m, d: d.to_sparse_bsc((2, 3)),
    lambda m, d: d.double().to_sparse_bsr((2, 3)).t(),
    lambda m, d: m.zeros(4, 6).to_sparse_bsr((2, 2)),
    lambda m, d: m.sparse_bsr_tensor(m.tensor(CROW), m.tensor(COL),
                                     m.ones(4, 2, 2, dtype=m.float64), requires_grad=True),
])
def test_repr_matches_torch(make):
    torch = _torch()
    d = _dense_np()
    previous = ember.get_default_device()
    ember.set_default_device("cpu")  # PyTorch's repr names no device for the CPU
    try:
        e = repr(make(ember, ember.tensor(d)))
    finally:
        ember.set_default_device(previous)
    t = repr(make(torch, torch.from_numpy(d))).replace("torch.", "ember.")
    t = re.sub(r"grad_fn=<\w+>", "", t)
    assert re.sub(r"grad_fn=<\w+>", "", e) == t


# -- checkpoints ----------------------------------------------------------------------------------

def test_save_load_roundtrip():
    buf = io.BytesIO()
    sd = {"bsr": _dense().to_sparse_bsr((2, 3)), "bsc": _dense().to_sparse_bsc((1, 2)),
          "layout": ember.sparse_bsc}
    ember.save(sd, buf)
    buf.seek(0)
    out = ember.load(buf)
    assert out["layout"] is ember.sparse_bsc
    for name in ("bsr", "bsc"):
        assert out[name].layout is sd[name].layout
        for a, b in zip(_parts(out[name]), _parts(sd[name])):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parity
def test_checkpoints_both_ways_with_torch(tmp_path):
    torch = _torch()
    cpu = ember.device("cpu")
    d = _dense_np()
    sd = {"bsr": ember.tensor(d, device=cpu).to_sparse_bsr((2, 3)),
          "bsc": ember.tensor(d, device=cpu).to_sparse_bsc((2, 2)), "layout": ember.sparse_bsr}
    ember.save(sd, tmp_path / "e.pt")
    with torch.sparse.check_sparse_tensor_invariants():
        t = torch.load(tmp_path / "e.pt", weights_only=True)
    assert t["layout"] is torch.sparse_bsr
    for name in ("bsr", "bsc"):
        _same(sd[name], t[name])
    torch.save({"bsr": torch.from_numpy(d).to_sparse_bsr((1, 3)),
                "bsc": torch.from_numpy(d).double().to_sparse_bsc((4, 2)),
                "layout": torch.sparse_bsc}, tmp_path / "t.pt")
    back = ember.load(tmp_path / "t.pt")
    tt = torch.load(tmp_path / "t.pt")
    assert back["layout"] is ember.sparse_bsc
    for name in ("bsr", "bsc"):
        _same(back[name], tt[name])
        np.testing.assert_array_equal(_np(back[name]), tt[name].to_dense().numpy())


def test_invalid_block_checkpoint_is_refused():
    from ember.serialization import _sparse

    crow, col = ember.tensor([0, 2, 4]), ember.tensor([2, 0, 1, 2])  # unsorted in row 0
    with pytest.raises(RuntimeError, match="sorted and distinct"):
        _sparse.rebuild_sparse_tensor(ember.sparse_bsr,
                                      (crow, col, ember.ones(4, 2, 2), ember.Size((4, 6))))
    with pytest.raises(RuntimeError, match="divisible"):
        _sparse.rebuild_sparse_tensor(ember.sparse_bsc,
                                      (crow, ember.tensor([0, 1, 0, 1]), ember.ones(4, 2, 2),
                                       ember.Size((4, 5))))


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr", "bsc"])
def test_addmm_takes_a_sparse_mat1_of_every_layout(layout):
    # ember.addmm / Tensor.addmm route a sparse operand to ember.sparse.addmm (a dense result)
    rng = np.random.default_rng(3)
    d = rng.standard_normal((4, 6))
    d[np.abs(d) < 0.6] = 0
    m2, inp = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    dense = ember.from_numpy(d)
    sp = {"coo": dense.to_sparse, "csr": dense.to_sparse_csr, "csc": dense.to_sparse_csc,
          "bsr": lambda: dense.to_sparse_bsr(2), "bsc": lambda: dense.to_sparse_bsc(2)}[layout]()
    want = 0.5 * inp + 2 * (d @ m2)
    for got in (ember.addmm(ember.from_numpy(inp), sp, ember.from_numpy(m2), beta=0.5, alpha=2),
                ember.from_numpy(inp).addmm(sp, ember.from_numpy(m2), beta=0.5, alpha=2)):
        assert got.layout == ember.strided
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
