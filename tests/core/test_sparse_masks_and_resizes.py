"""The remaining sparse names of ``torch``/``torch.Tensor``: ``Tensor.sparse_mask``,
``sspaddmm``/``saddmm``, ``hspmm``/``hsmm``/``dsmm``, ``sparse_resize_``,
``sparse_resize_and_clear_`` and ``resize_as_sparse_``: outputs (layouts, indices, values,
coalesced flags), dtypes and errors against PyTorch (the oracle), float64 gradchecks."""

from __future__ import annotations

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
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta"),
]

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0]
DENSE = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _torch():
    return pytest.importorskip("torch")


def _mask(m, dtype=None):
    return m.sparse_coo_tensor(m.tensor(IDX), m.tensor(VAL, dtype=dtype), (2, 3))


def _same(e, t):
    """ember ``e`` and torch ``t`` are equal: layout, size, dtype, indices and flags exactly,
    values to float32 rounding (PyTorch scales before it sums, Ember after)."""
    assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    for a, b in zip(_parts(e), _parts(t), strict=True):
        if np.asarray(a).dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)


def _both(fn):
    """``fn(ember)`` equals ``fn(torch)``."""
    torch = _torch()
    _same(fn(ember), fn(torch))


# -- sparse_mask ----------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor(DENSE).sparse_mask(_mask(m)),
    lambda m: m.tensor(DENSE).sparse_mask(_mask(m).coalesce()),
    lambda m: m.tensor(DENSE).sparse_mask(_mask(m).coalesce().to_sparse_csr()),
    lambda m: m.tensor(DENSE).sparse_mask(_mask(m).coalesce().to_sparse_csc()),
    lambda m: m.tensor(DENSE).sparse_mask(m.tensor(DENSE).to_sparse_bsr((1, 1))),
    lambda m: m.arange(24.0).reshape(4, 6).sparse_mask(
        (m.arange(24.0).reshape(4, 6) % 7 == 0).float().to_sparse_bsc((2, 3))),
    lambda m: m.tensor(DENSE).sparse_mask(_mask(m, m.float64)),
    lambda m: m.ones(2, 3, 2).sparse_mask(m.ones(2, 3, 2).to_sparse(2)),
    lambda m: m.sparse_coo_tensor(m.tensor([[0, 1], [2, 0]]), m.tensor([1.0, 2.0]),
                                  (2, 3)).sparse_mask(_mask(m).coalesce()),
    lambda m: m.zeros(2, 3).sparse_mask(m.zeros(2, 3).to_sparse()),
], ids=["coo", "coalesced", "csr", "csc", "bsr", "bsc", "mask-dtype", "hybrid", "sparse-self",
        "empty"])
def test_sparse_mask_matches_torch(fn):
    _both(fn)


@pytest.mark.parity
def test_sparse_mask_errors_match_torch():
    torch = _torch()
    assert_same_error(lambda: ember.ones(3, 3).sparse_mask(_mask(ember)),
                      lambda: torch.ones(3, 3).sparse_mask(_mask(torch)))
    with pytest.raises(NotImplementedError) as expected:
        torch.ones(2, 3).sparse_mask(torch.ones(2, 3))
    first = str(expected.value).split(". ")[0]  # PyTorch's dispatcher lists its backends next
    with pytest.raises(NotImplementedError, match=re.escape(first)):
        ember.ones(2, 3, device="cpu").sparse_mask(ember.ones(2, 3, device="cpu"))


def test_sparse_mask_gradients():
    mask = _mask(ember, ember.float64).coalesce()
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    out = x.sparse_mask(mask)
    assert out.grad_fn.name() == "SparseMaskBackward0"
    assert gradcheck(lambda x: x.sparse_mask(mask).to_dense(), (x,))
    blocks = ember.ones(4, 6, dtype=ember.float64).to_sparse_bsr((2, 3))
    y = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda y: y.sparse_mask(blocks).values(), (y,))
    out.to_dense().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 1], [1, 0, 1]])


# -- hspmm, hsmm, dsmm, sspaddmm, saddmm ----------------------------------------------------------

def _s(m, dtype=None):
    return _mask(m, dtype).coalesce()


def _in(m, dtype=None):  # uncoalesced input for sspaddmm
    return m.sparse_coo_tensor(m.tensor([[0, 1, 0], [1, 0, 1]]), m.tensor([10.0, 2.0, 1.0],
                               dtype=dtype), (2, 4))


def _d(m, rows=3, dtype=None):
    return m.arange(rows * 4, dtype=dtype).reshape(rows, 4) / 3


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.hspmm(_s(m), _d(m)), lambda m: m.hspmm(_mask(m), _d(m)),
    lambda m: m.hsmm(_s(m), _d(m)), lambda m: m.dsmm(_s(m), _d(m)),
    lambda m: m.dsmm(_mask(m), _d(m)),
    lambda m: m.hspmm(m.zeros(2, 3).to_sparse(), _d(m)),
    lambda m: m.sspaddmm(_in(m), _s(m), _d(m)),
    lambda m: m.sspaddmm(_in(m), _mask(m), _d(m), beta=2, alpha=-3),
    lambda m: _in(m).sspaddmm(_s(m), _d(m), alpha=0.5),
    lambda m: m.saddmm(_in(m), _s(m), _d(m)),
    lambda m: m.saddmm(_in(m), _s(m), _d(m), beta=0.5, alpha=2),
    lambda m: m.sspaddmm(m.zeros(2, 4).to_sparse(), m.zeros(2, 3).to_sparse(), _d(m)),
    lambda m: m.sspaddmm(_in(m, m.float64), _s(m, m.float64), _d(m, dtype=m.float64)),
], ids=["hspmm", "hspmm-uncoalesced", "hsmm", "dsmm", "dsmm-uncoalesced", "hspmm-empty",
        "sspaddmm", "sspaddmm-beta-alpha", "method", "saddmm", "saddmm-beta-alpha",
        "sspaddmm-empty", "float64"])
def test_products_match_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda m: m.hspmm(_s(m), _d(m, 4)),
    lambda m: m.hspmm(_s(m), m.ones(3)),
    lambda m: m.hspmm(m.ones(3, 3, 3).to_sparse(), _d(m)),
    lambda m: m.hspmm(_s(m), _d(m, dtype=m.float64)),
    lambda m: m.dsmm(_s(m), _d(m, dtype=m.float64)),
    lambda m: m.sspaddmm(_in(m), _s(m), _d(m, 4)),
    lambda m: m.sspaddmm(m.sparse_coo_tensor(m.tensor([[0], [1]]), m.tensor([1.0]), (3, 4)),
                         _s(m), _d(m)),
    lambda m: m.sspaddmm(m.sparse_coo_tensor(m.tensor([[0], [1]]), m.tensor([1.0]), (2, 3)),
                         _s(m), _d(m)),
    lambda m: m.sspaddmm(_in(m), m.tensor(DENSE), _d(m)),
    lambda m: m.sspaddmm(_in(m), _s(m), _d(m).to_sparse()),
    lambda m: m.sspaddmm(_in(m), _s(m, m.float64), _d(m)),
    lambda m: m.sspaddmm(_in(m), _s(m), _d(m, dtype=m.float64)),
])
def test_product_errors_match_torch(call):
    torch = _torch()
    assert_same_error(lambda: call(ember), lambda: call(torch))


def _empty_out(m, dtype=None):
    return m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0, dtype=dtype), (1, 1))


def _into(fn):
    """``fn(m, out)`` returns ``out`` itself, filled with the product."""
    def call(m):
        out = _empty_out(m)
        r = fn(m, out)
        assert r is out
        return out
    return call


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    _into(lambda m, o: m.hspmm(_s(m), _d(m), out=o)),
    _into(lambda m, o: m.hsmm(_mask(m), _d(m), out=o)),
    _into(lambda m, o: m.sspaddmm(_in(m), _s(m), _d(m), beta=2, alpha=-3, out=o)),
    _into(lambda m, o: m.saddmm(_in(m), _s(m), _d(m), out=o)),
    lambda m: m.smm(_s(m), mat2=_d(m)),
    lambda m: _s(m).smm(mat2=_d(m)),
    lambda m: m.dsmm(input=_s(m), mat2=_d(m)),
], ids=["hspmm-out", "hsmm-out", "sspaddmm-out", "saddmm-out", "smm-mat2", "smm-method-mat2",
        "dsmm-input"])
def test_products_out_and_names_match_torch(fn):
    """The legacy products take PyTorch's names and ``out=`` (a sparse COO tensor that takes
    the result's size, indices and values)."""
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda m: m.hspmm(_s(m), _d(m), out=_empty_out(m, m.float64)),
])
def test_product_out_errors_match_torch(call):
    torch = _torch()
    assert_same_error(lambda: call(ember), lambda: call(torch))


def test_product_out_refuses_dense_out_and_autograd():
    d = _d(ember).requires_grad_()
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.hspmm(_s(ember), d, out=_empty_out(ember))
    with pytest.raises(RuntimeError, match="expected out to be a sparse COO tensor"):
        ember.hspmm(_s(ember), _d(ember), out=ember.empty(3))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        ember.sspaddmm(_in(ember), _s(ember), _d(ember), out=[1])
    out = _empty_out(ember)
    with ember.no_grad():
        ember.hspmm(_s(ember), d, out=out)
    assert not out.requires_grad and tuple(out.shape) == (2, 4)


def test_products_refuse_dense_first_operands():
    with pytest.raises(NotImplementedError, match="Could not run 'aten::hspmm'"):
        ember.hspmm(ember.ones(2, 3), ember.ones(3, 2))
    with pytest.raises(RuntimeError, match="expected 'self' to have sparse layout"):
        ember.sspaddmm(ember.ones(2, 2), _s(ember), ember.ones(3, 2))


def test_product_gradients():
    """PyTorch has a derivative for dsmm only; Ember's hspmm and sspaddmm are differentiable
    too, in the values of the sparse operands and in the dense one."""
    idx = _s(ember)._indices()
    in_idx = _in(ember)._indices()
    v = ember.tensor([3.0, 4.0, 5.0], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([10.0, 2.0, 1.0], dtype=ember.float64, requires_grad=True)
    d = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)

    def sp(v):
        return ember.sparse_coo_tensor(idx, v, (2, 3))

    assert gradcheck(lambda v, d: ember.dsmm(sp(v), d), (v, d))
    assert gradgradcheck(lambda v, d: ember.dsmm(sp(v), d), (v, d))
    assert gradcheck(lambda v, d: ember.hspmm(sp(v), d).to_dense(), (v, d))
    assert gradcheck(lambda w, v, d: ember.sspaddmm(ember.sparse_coo_tensor(in_idx, w, (2, 4)),
                                                    sp(v), d, beta=0.5, alpha=2).to_dense(),
                     (w, v, d))


# -- resizes --------------------------------------------------------------------------------------

def _x(m):
    return m.sparse_coo_tensor(m.tensor([[0, 1], [2, 0]]), m.tensor([1.0, 2.0]), (2, 3))


def _hybrid(m):  # (3, 1, 2): one sparse, two dense dimensions
    return m.tensor([[[1.0, 2.0]], [[0.0, 0.0]], [[3.0, 4.0]]]).to_sparse(1)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: _x(m).sparse_resize_((3, 4), 2, 0),
    lambda m: _x(m).sparse_resize_((2, 3), 2, 0),
    lambda m: _x(m).sparse_resize_and_clear_((3, 4), 2, 0),
    lambda m: _x(m).sparse_resize_and_clear_((5,), 1, 0),
    lambda m: _x(m).sparse_resize_and_clear_((5, 2), 1, 1),
    lambda m: m.zeros(2, 3).to_sparse().sparse_resize_((3, 3, 4), 1, 2),
    lambda m: m.zeros(2, 3).to_sparse().sparse_resize_((1,), 1, 0),
    lambda m: _x(m).resize_as_sparse_(m.zeros(5, 6).to_sparse()),
    lambda m: m.resize_as_sparse_(_x(m), m.zeros(2, 7).to_sparse()),
    lambda m: m.zeros(2, 3).to_sparse().resize_as_sparse_(m.zeros(4, 1, 2).to_sparse(1)),
], ids=["grow", "same", "clear", "clear-1d", "clear-hybrid", "empty-new-dims", "empty-shrink",
        "resize_as", "torch.resize_as_sparse_", "resize_as-empty-hybrid"])
def test_resizes_match_torch(fn):
    _both(fn)


@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda m: _x(m).sparse_resize_((1, 4), 2, 0),
    lambda m: _x(m).sparse_resize_((-1, 3), 2, 0),
    lambda m: _x(m).sparse_resize_((3, 4), 1, 1),
    lambda m: _x(m).sparse_resize_((3, 4, 5), 2, 1),
    lambda m: _x(m).sparse_resize_((3, 4), 1, 0),
    lambda m: _x(m).sparse_resize_and_clear_((3, 4), 1, 0),
    lambda m: _hybrid(m).sparse_resize_((4, 1, 1), 1, 2),
    lambda m: _x(m).resize_as_sparse_(m.zeros(1, 1).to_sparse()),
    lambda m: _x(m).resize_as_sparse_(m.zeros(5, 6)),
    lambda m: _x(m).requires_grad_().sparse_resize_((3, 3), 2, 0),
])
def test_resize_errors_match_torch(call):
    torch = _torch()
    with pytest.raises(Exception) as expected:
        call(torch)
    message = str(expected.value).replace("torch.", "ember.")
    with pytest.raises(type(expected.value)) as got:
        call(ember)
    assert str(got.value) == message


def test_resizes_work_in_place():
    x = _x(ember)
    version = x._version
    assert x.sparse_resize_((4, 5), 2, 0) is x and x.shape == (4, 5) and x._version > version
    np.testing.assert_array_equal(x.to_dense().numpy()[:2, :3], _x(ember).to_dense().numpy())
    assert x.sparse_resize_and_clear_((2, 2), 2, 0) is x and x._nnz() == 0 and x.is_coalesced()
    grown = _hybrid(ember).sparse_resize_((3, 1, 3), 1, 2)  # new dense positions are zero
    np.testing.assert_array_equal(grown.to_dense().numpy()[:, 0],
                                  [[1, 2, 0], [0, 0, 0], [3, 4, 0]])


@pytest.mark.parametrize("call", [
    lambda: ember.ones(2, 3).sparse_resize_((3, 4), 2, 0),
    lambda: ember.ones(2, 3).sparse_resize_and_clear_((3, 4), 2, 0),
    lambda: ember.ones(2, 3).to_sparse_csr().sparse_resize_((3, 4), 2, 0),
])
def test_resizes_refuse_other_layouts(call):
    with pytest.raises(NotImplementedError, match="Could not run 'aten::sparse_resize"):
        call()
