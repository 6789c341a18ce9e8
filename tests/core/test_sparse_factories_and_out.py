"""The factories' ``layout=`` (``ember.zeros(2, 3, layout=ember.sparse_coo)``, ``zeros_like`` of
a sparse tensor, ``s.new_zeros(...)``), ``out=`` with sparse tensors (``ember.sin(s, out=o)``,
``ember.zeros(2, 2, out=s)``) and ``out=``'s name in the dispatcher's errors
(``'aten::baddbmm.out'``): results and errors against PyTorch (the oracle), and Ember's own
choices where PyTorch returns an invalid tensor (``ones`` in CSR)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from testutils import assert_same_dispatch_error, same_sparse_in_both, sparse_parts

import ember

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:.*range is deprecated"),
]


def _torch():
    return pytest.importorskip("torch")


def _same_error(fn):
    """``fn(ember)`` raises what ``fn(torch)`` raises (dispatcher errors read with the test
    device's backend)."""
    torch = _torch()
    assert_same_dispatch_error(lambda: fn(ember), lambda: fn(torch))


def _hybrid(m):
    """A 3 x 3 COO tensor with one sparse and one dense dimension."""
    return m.sparse_coo_tensor(m.tensor([[0, 2]]), m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
                               (3, 3))


def _csr(m):
    return m.tensor([[1.0, 0.0], [2.0, 3.0]]).to_sparse_csr()


def _coo(m):
    return m.sparse_coo_tensor(m.tensor([[0, 1], [1, 2]]), m.tensor([1.0, 2.0]), (3, 3))


# -- factories that make sparse tensors ---------------------------------------------------------

MADE = {
    "zeros_coo": lambda m: m.zeros(2, 3, layout=m.sparse_coo),
    "zeros_coo_int": lambda m: m.zeros(2, 3, layout=m.sparse_coo, dtype=m.int32),
    "zeros_coo_0d": lambda m: m.zeros((), layout=m.sparse_coo),
    "zeros_coo_empty": lambda m: m.zeros(0, layout=m.sparse_coo),
    "zeros_csr": lambda m: m.zeros(2, 3, layout=m.sparse_csr),
    "zeros_csc": lambda m: m.zeros(2, 3, layout=m.sparse_csc),
    "zeros_csr_batched": lambda m: m.zeros(2, 2, 3, layout=m.sparse_csr),
    "zeros_csc_batched": lambda m: m.zeros(2, 2, 3, layout=m.sparse_csc),
    "empty_coo": lambda m: m.empty(2, 3, layout=m.sparse_coo),
    "empty_coo_channels_last": lambda m: m.empty(2, 3, 4, 2, layout=m.sparse_coo,
                                                 memory_format=m.channels_last),
    "zeros_coo_grad": lambda m: m.zeros(2, 3, layout=m.sparse_coo, requires_grad=True),
    "zeros_jagged_is_dense": lambda m: m.zeros(2, 3, layout=m.jagged),
    "zeros_like_hybrid": lambda m: m.zeros_like(_hybrid(m)),
    "empty_like_hybrid": lambda m: m.empty_like(_hybrid(m)),
    "zeros_like_csr": lambda m: m.zeros_like(_csr(m)),
    "zeros_like_csr_int": lambda m: m.zeros_like(_csr(m), dtype=m.int32),
    "zeros_like_csr_to_csc": lambda m: m.zeros_like(_csr(m), layout=m.sparse_csc),
    "zeros_like_csr_to_coo": lambda m: m.zeros_like(_csr(m), layout=m.sparse_coo),
    "zeros_like_dense_to_coo": lambda m: m.zeros_like(m.ones(2, 3), layout=m.sparse_coo),
    "zeros_like_dense3_to_csr": lambda m: m.zeros_like(m.ones(2, 3, 4), layout=m.sparse_csr),
    "zeros_like_hybrid_strided": lambda m: m.zeros_like(_hybrid(m), layout=m.strided),
    "ones_like_coo_strided": lambda m: m.ones_like(_coo(m), layout=m.strided),
    "ones_like_csr": lambda m: m.ones_like(_csr(m)),
    "ones_like_csr_f64": lambda m: m.ones_like(_csr(m), dtype=m.float64),
    "full_like_csr": lambda m: m.full_like(_csr(m), 2.0),
    "full_like_csr_int": lambda m: m.full_like(_csr(m), 2, dtype=m.int64),
    "zeros_like_csr_channels_last": lambda m: m.zeros_like(_csr(m),
                                                           memory_format=m.channels_last),
    "new_zeros_coo": lambda m: _hybrid(m).new_zeros(2, 2),
    "new_empty_coo": lambda m: _hybrid(m).new_empty((4, 2)),
    "new_zeros_csr": lambda m: _csr(m).new_zeros(2, 5),
    "new_zeros_strided_of_sparse": lambda m: _hybrid(m).new_zeros((4, 2), dtype=m.float64,
                                                                   layout=m.strided),
    "new_zeros_dense_to_coo": lambda m: m.ones(3, 3).new_zeros((4, 2), layout=m.sparse_coo),
    "zeros_out_coo": lambda m: m.zeros(4, 2, out=_hybrid(m)),
    "zeros_out_csr": lambda m: m.zeros(2, 2, out=_csr(m)),
    "zeros_out_csr_grown": lambda m: m.zeros(4, 4, out=_csr(m)),
}


@pytest.mark.parametrize("case", sorted(MADE))
def test_sparse_factories_as_pytorch(case):
    same_sparse_in_both(MADE[case])


def test_sparse_factory_results_without_the_oracle():
    z = ember.zeros(2, 3, layout=ember.sparse_coo, dtype=ember.float64)
    assert (z.layout, z._nnz(), z.sparse_dim(), z.dtype) == (ember.sparse_coo, 0, 2,
                                                             ember.float64)
    np.testing.assert_array_equal(z.to_dense().cpu().numpy(), np.zeros((2, 3)))
    c = ember.zeros(2, 2, 3, layout=ember.sparse_csr)
    np.testing.assert_array_equal(c.crow_indices().cpu().numpy(), np.zeros((2, 3)))
    assert tuple(c.values().shape) == (2, 0)
    h = ember.zeros_like(_hybrid(ember))
    assert (h.sparse_dim(), h.dense_dim(), h._nnz()) == (1, 1, 0)
    s = _coo(ember)
    out = ember.zeros(4, 2, out=s)
    assert out is s and tuple(s.shape) == (4, 2) and s._nnz() == 0
    # PyTorch leaves an empty CSR tensor's crow_indices uninitialised; Ember's are zeros
    e = ember.empty(4, 3, layout=ember.sparse_csr)
    np.testing.assert_array_equal(e.crow_indices().cpu().numpy(), np.zeros(5))
    # a sparse self's layout is the new tensor's, unless given
    assert _csr(ember).new_zeros(2, 2).layout is ember.sparse_csr
    assert _csr(ember).new_zeros(2, 2, layout=ember.strided).layout is ember.strided


# -- Ember's choice: a compressed "full" factory stores every element -------------------------

@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc"])
@pytest.mark.parametrize("make", [
    lambda lay: ember.ones(2, 3, layout=lay),
    lambda lay: ember.full((2, 3), 2.5, layout=lay),
    lambda lay: ember.full((2, 3), 0.0, layout=lay),
    lambda lay: ember.ones(2, 3).new_ones(2, 3, layout=lay),
    lambda lay: ember.ones(2, 3).new_full((2, 3), 7.0, layout=lay),
    lambda lay: ember.ones(2, 2, 3, layout=lay),
    lambda lay: ember.ones(0, 3, layout=lay),
    lambda lay: ember.ones(3, 0, layout=lay),
], ids=["ones", "full", "full_zero", "new_ones", "new_full", "ones_batched", "no_rows",
        "no_cols"])
def test_compressed_full_factories_store_every_element(make, layout):
    """PyTorch 2.x returns an invalid tensor here (crow_indices uninitialised) or one that
    stores nothing; Ember stores every element, in the layout's order."""
    lay = getattr(ember, layout)
    t = make(lay)
    assert t.layout is lay
    assert t._nnz() == int(np.prod(t.shape[-2:]))
    dense = t.to_dense().cpu().numpy()
    value = {1.0, 2.5, 0.0, 7.0}
    assert dense.size == 0 or (np.unique(dense).size == 1 and dense.flat[0] in value)
    compressed = (t.crow_indices() if layout == "sparse_csr" else t.ccol_indices()).cpu().numpy()
    n, m = t.shape[-2:] if layout == "sparse_csr" else t.shape[-2:][::-1]
    np.testing.assert_array_equal(compressed[..., -1], n * m)
    np.testing.assert_array_equal(np.diff(compressed, axis=-1), m)


def test_compressed_randn_stores_every_sample_in_order():
    ember.manual_seed(3)
    t = ember.randn(2, 3, layout=ember.sparse_csc, dtype=ember.float64)
    ember.manual_seed(3)
    want = ember.randn(2, 3, dtype=ember.float64)
    np.testing.assert_array_equal(t.to_dense().cpu().numpy(), want.cpu().numpy())
    ember.manual_seed(3)
    n = ember.normal(0.0, 2.0, (3, 2), layout=ember.sparse_csr)
    ember.manual_seed(3)
    np.testing.assert_array_equal(n.to_dense().cpu().numpy(),
                                  ember.normal(0.0, 2.0, (3, 2)).cpu().numpy())


def test_randn_like_of_compressed_keeps_the_pattern():
    c = _csr(ember)
    ember.manual_seed(0)
    r = ember.randn_like(c)
    ember.manual_seed(0)
    want = ember.randn(3)
    assert r.layout is ember.sparse_csr
    np.testing.assert_array_equal(r.crow_indices().cpu().numpy(), c.crow_indices().cpu().numpy())
    np.testing.assert_array_equal(r.values().cpu().numpy(), want.cpu().numpy())


def test_randn_like_of_compressed_as_pytorch():
    torch = _torch()
    vals = []
    for m in (ember, torch):
        m.manual_seed(0)
        vals.append(m.randn_like(_csr(m)))
    for a, b in zip(sparse_parts(vals[0].cpu()), sparse_parts(vals[1]), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))


# -- factories that refuse a sparse layout ------------------------------------------------------

REFUSED = {
    "rand_coo": lambda m: m.rand(2, 3, layout=m.sparse_coo),
    "rand_csr": lambda m: m.rand(2, 3, layout=m.sparse_csr),
    "rand_bsr": lambda m: m.rand(2, 3, layout=m.sparse_bsr),
    "randn_coo": lambda m: m.randn(2, 3, layout=m.sparse_coo),
    "normal_coo": lambda m: m.normal(0.0, 1.0, (2, 3), layout=m.sparse_coo),
    "randint_coo": lambda m: m.randint(0, 5, (2, 3), layout=m.sparse_coo),
    "randint_csc": lambda m: m.randint(0, 5, (2, 3), layout=m.sparse_csc),
    "randperm_coo": lambda m: m.randperm(4, layout=m.sparse_coo),
    "randperm_csr": lambda m: m.randperm(4, layout=m.sparse_csr),
    "arange_coo": lambda m: m.arange(3, layout=m.sparse_coo),
    "arange_csr": lambda m: m.arange(3, layout=m.sparse_csr),
    "range_coo": lambda m: m.range(0, 3, layout=m.sparse_coo),
    "eye_coo": lambda m: m.eye(3, layout=m.sparse_coo),
    "eye_bsr": lambda m: m.eye(3, layout=m.sparse_bsr),
    "linspace_coo": lambda m: m.linspace(0, 1, 4, layout=m.sparse_coo),
    "linspace_csr": lambda m: m.linspace(0, 1, 4, layout=m.sparse_csr),
    "logspace_csc": lambda m: m.logspace(0, 1, 4, layout=m.sparse_csc),
    "fftfreq_coo": lambda m: m.fft.fftfreq(4, layout=m.sparse_coo),
    "rfftfreq_csr": lambda m: m.fft.rfftfreq(4, layout=m.sparse_csr),
    "ones_coo": lambda m: m.ones(2, 3, layout=m.sparse_coo),
    "full_coo": lambda m: m.full((2, 3), 1.5, layout=m.sparse_coo),
    "ones_bsr": lambda m: m.ones(2, 3, layout=m.sparse_bsr),
    "zeros_bsr": lambda m: m.zeros(2, 3, layout=m.sparse_bsr),
    "empty_bsc": lambda m: m.empty(2, 3, layout=m.sparse_bsc),
    "zeros_csr_1d": lambda m: m.zeros(3, layout=m.sparse_csr),
    "empty_strided_coo": lambda m: m.empty_strided((2, 3), (3, 1), layout=m.sparse_coo),
    "empty_strided_bsr": lambda m: m.empty_strided((2, 3), (3, 1), layout=m.sparse_bsr),
    "empty_permuted_coo": lambda m: m.empty_permuted((2, 3), (1, 0), layout=m.sparse_coo),
    "empty_permuted_csr": lambda m: m.empty_permuted((2, 3), (1, 0), layout=m.sparse_csr),
    "empty_permuted_csc": lambda m: m.empty_permuted((2, 3), (1, 0), layout=m.sparse_csc),
    "tril_indices_coo": lambda m: m.tril_indices(3, 3, layout=m.sparse_coo),
    "triu_indices_csr": lambda m: m.triu_indices(3, 3, layout=m.sparse_csr),
    "tril_indices_jagged": lambda m: m.tril_indices(3, 3, layout=m.jagged),
    "new_ones_coo": lambda m: m.ones(2, 3).new_ones((2, 2), layout=m.sparse_coo),
    "new_full_of_coo": lambda m: _coo(m).new_full((2, 2), 3.0),
    "new_zeros_bsr": lambda m: m.ones(2, 3).new_zeros((2, 2), layout=m.sparse_bsr),
    "new_empty_strided_of_csr": lambda m: _csr(m).new_empty_strided((2, 2), (2, 1)),
    "empty_like_dense_to_coo": lambda m: m.empty_like(m.ones(2, 3), layout=m.sparse_coo),
    "ones_like_dense_to_csr": lambda m: m.ones_like(m.ones(2, 3), layout=m.sparse_csr),
    "ones_like_coo": lambda m: m.ones_like(_coo(m)),
    "full_like_coo": lambda m: m.full_like(_hybrid(m), 2.0),
    "rand_like_coo": lambda m: m.rand_like(_coo(m)),
    "randn_like_coo": lambda m: m.randn_like(_coo(m)),
    "rand_like_csr": lambda m: m.rand_like(_csr(m)),
    "randint_like_csr": lambda m: m.randint_like(_csr(m), 5),
    "ones_like_csr_to_strided": lambda m: m.ones_like(_csr(m), layout=m.strided),
    "empty_like_csr_to_coo": lambda m: m.empty_like(_csr(m), layout=m.sparse_coo),
    "ones_like_csr_to_csc": lambda m: m.ones_like(_csr(m), layout=m.sparse_csc),
    "zeros_like_csr_to_bsr": lambda m: m.zeros_like(_csr(m), layout=m.sparse_bsr),
    "zeros_like_coo_memory_format": lambda m: m.zeros_like(
        _hybrid(m), memory_format=m.contiguous_format),
    "zeros_coo_int_grad": lambda m: m.zeros(2, 3, layout=m.sparse_coo, dtype=m.int32,
                                            requires_grad=True),
    "hann_window_coo": lambda m: m.hann_window(4, layout=m.sparse_coo, device="cpu"),
    "hann_window_coo_f64": lambda m: m.hann_window(4, layout=m.sparse_coo, device="cpu",
                                                   dtype=m.float64),
    "bartlett_window_coo": lambda m: m.bartlett_window(4, layout=m.sparse_coo, device="cpu"),
    "kaiser_window_csr": lambda m: m.kaiser_window(4, layout=m.sparse_csr),
    "layout_not_a_layout": lambda m: m.zeros(2, 3, layout=3),
    "like_layout_not_a_layout": lambda m: m.zeros_like(m.ones(2), layout="sparse"),
    "new_layout_not_a_layout": lambda m: m.ones(2).new_zeros(2, layout=1.5),
    "tril_layout_not_a_layout": lambda m: m.tril_indices(3, 3, layout=3),
    "scalar_tensor_layout_not_a_layout": lambda m: m.scalar_tensor(2.0, layout=3),
    "new_tensor_takes_no_layout": lambda m: m.ones(2).new_tensor([1.0], layout=m.strided),
    "ones_out_coo": lambda m: m.ones(2, 2, out=_coo(m)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_sparse_factory_errors_as_pytorch(case):
    _same_error(REFUSED[case])


def test_overloaded_factories_refuse_what_is_not_a_layout():
    """PyTorch lists every overload of ``rand``/``arange``/... here; Ember names the argument."""
    for fn in (lambda: ember.rand(2, layout=3), lambda: ember.arange(3, layout=3),
               lambda: ember.eye(2, layout=3), lambda: ember.hann_window(3, layout=3),
               lambda: ember.randn_like(ember.ones(2), layout=3)):
        with pytest.raises(TypeError, match="argument 'layout' must be torch.layout, not int"):
            fn()


def test_scalar_tensor_and_jagged_layouts_give_dense_tensors():
    """As PyTorch's: ``scalar_tensor`` ignores a sparse layout, and the factories ``jagged``."""
    assert ember.scalar_tensor(2.0, layout=ember.sparse_coo).layout is ember.strided
    assert ember.ones(2, layout=ember.jagged).layout is ember.strided
    assert ember.arange(3, layout=ember.jagged).tolist() == [0, 1, 2]


# -- out= with sparse tensors ---------------------------------------------------------------

def _empty_coo(m, dtype=None):
    return m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.long), m.zeros(0, dtype=dtype), (3, 3))


SPARSE_OUT = {
    "sin": lambda m: m.sin(_coo(m), out=_empty_coo(m)),
    "neg": lambda m: m.neg(_coo(m), out=_empty_coo(m)),
    "abs": lambda m: m.abs(_coo(m), out=_empty_coo(m)),
    "sqrt": lambda m: m.sqrt(_coo(m), out=_empty_coo(m)),
    "sin_to_float64": lambda m: m.sin(_coo(m), out=_empty_coo(m, m.float64)),
    "signbit": lambda m: m.signbit(_coo(m), out=_empty_coo(m, m.bool)),
    "sin_shrunk_out": lambda m: m.sin(_coo(m), out=m.sparse_coo_tensor(
        m.tensor([[0], [0]]), m.tensor([5.0]), (2, 2))),
    "sin_csr": lambda m: m.sin(_csr(m), out=(_csr(m) * 0)),
    "add": lambda m: m.add(_coo(m), _coo(m), out=_empty_coo(m)),
    "add_float64": lambda m: m.add(_coo(m).double(), _coo(m).double(),
                                   out=_empty_coo(m, m.float64)),
    "sub": lambda m: m.sub(_coo(m), _coo(m), out=_empty_coo(m)),
    "mul": lambda m: m.mul(_coo(m), _coo(m), out=_empty_coo(m)),
    "mul_scalar": lambda m: m.mul(_coo(m), 2, out=_empty_coo(m)),
    "div_scalar": lambda m: m.div(_coo(m), 2, out=_empty_coo(m)),
    "pow_scalar": lambda m: m.pow(_coo(m), 2, out=_empty_coo(m)),
    "zeros": lambda m: m.zeros(3, 3, out=_empty_coo(m)),
    "hspmm": lambda m: m.hspmm(_coo(m), m.ones(3, 2), out=_empty_coo(m)),
    "mm_dense_result": lambda m: m.mm(_coo(m), m.ones(3, 2), out=m.empty(3, 2)),
    "add_dense_result": lambda m: m.add(m.ones(3, 3), _coo(m), out=m.empty(3, 3)),
}


@pytest.mark.parametrize("case", sorted(SPARSE_OUT))
def test_out_with_sparse_tensors_as_pytorch(case):
    same_sparse_in_both(SPARSE_OUT[case])


def test_sparse_out_is_the_tensor_given_and_takes_the_result():
    s, o = _coo(ember), _empty_coo(ember, ember.float64)
    v0 = o._version
    r = ember.sin(s, out=o)
    assert r is o and o.dtype is ember.float64 and o._version > v0
    np.testing.assert_allclose(o.to_dense().cpu().numpy(),
                               np.sin(s.to_dense().cpu().numpy()).astype(np.float64))


SPARSE_OUT_ERRORS = {
    "int_out": lambda m: m.sin(_coo(m), out=_empty_coo(m, m.long)),
    "out_requires_grad": lambda m: m.sin(_coo(m), out=_empty_coo(m).requires_grad_()),
    "input_requires_grad": lambda m: m.sin(_coo(m).requires_grad_(), out=_empty_coo(m)),
    "add_sparse_dense_refused": lambda m: m.add(_coo(m), m.ones(3, 3), out=m.empty(3, 3)),
}


@pytest.mark.parametrize("case", sorted(SPARSE_OUT_ERRORS))
def test_sparse_out_errors_as_pytorch(case):
    _same_error(SPARSE_OUT_ERRORS[case])


@pytest.mark.parametrize("call, message", [
    (lambda s, o, d: ember.sin(s, out=d),
     "sin(): expected out to be a sparse COO tensor (the result's layout), but got layout "
     "Strided"),
    (lambda s, o, d: ember.sin(d, out=o),
     "sin(): expected out to be a strided tensor (the result's layout), but got layout Sparse"),
    (lambda s, o, d: ember.sin(s, out=s.to_sparse_csr()),
     "sin(): expected out to be a sparse COO tensor (the result's layout), but got layout "
     "SparseCsr"),
    (lambda s, o, d: ember.sin(s.to_sparse_csr(), out=d),
     "sin(): expected out to be a sparse CSR tensor (the result's layout), but got layout "
     "Strided"),
    (lambda s, o, d: ember.add(s, s, out=d),
     "add(): expected out to be a sparse COO tensor (the result's layout), but got layout "
     "Strided"),
    (lambda s, o, d: ember.div(s, 2, out=d),
     "div(): expected out to be a sparse COO tensor (the result's layout), but got layout "
     "Strided"),
    (lambda s, o, d: ember.mm(s, d, out=o),
     "mm(): expected out to be a strided tensor (the result's layout), but got layout Sparse"),
])
def test_out_of_another_layout_is_refused_and_left_alone(call, message):
    """PyTorch fails here with internal asserts (``self.is_sparse() INTERNAL ASSERT FAILED``);
    Ember names the layouts, and the out= tensor keeps what it held."""
    s, o, d = _coo(ember), _coo(ember) * 3, ember.full((3, 3), 7.0)
    before_o, before_d = o.to_dense().cpu().numpy(), d.cpu().numpy().copy()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call(s, o, d)
    np.testing.assert_array_equal(o.to_dense().cpu().numpy(), before_o)
    np.testing.assert_array_equal(d.cpu().numpy(), before_d)


# -- out='s overload in the dispatcher's error ----------------------------------------------

OUT_OVERLOAD = {
    "baddbmm_out": lambda m: m.baddbmm(
        m.ones(1, 3, 3), m.sparse_coo_tensor(m.tensor([[0], [0], [0]]), m.tensor([1.0]),
                                             (1, 3, 3)), m.ones(1, 3, 3), out=m.empty(1, 3, 3)),
    "baddbmm_out_keywords": lambda m: m.baddbmm(
        input=m.ones(1, 3, 3), batch1=m.sparse_coo_tensor(
            m.tensor([[0], [0], [0]]), m.tensor([1.0]), (1, 3, 3)), batch2=m.ones(1, 3, 3),
        out=m.empty(1, 3, 3)),
    "addbmm_out": lambda m: m.addbmm(
        m.ones(3, 3), m.sparse_coo_tensor(m.tensor([[0], [0], [0]]), m.tensor([1.0]),
                                          (1, 3, 3)), m.ones(1, 3, 3), out=m.empty(3, 3)),
    "addbmm_no_out": lambda m: m.addbmm(
        m.ones(3, 3), m.sparse_coo_tensor(m.tensor([[0], [0], [0]]), m.tensor([1.0]),
                                          (1, 3, 3)), m.ones(1, 3, 3)),
}


@pytest.mark.parametrize("case", sorted(OUT_OVERLOAD))
def test_out_overload_named_in_dispatcher_errors(case):
    _same_error(OUT_OVERLOAD[case])
