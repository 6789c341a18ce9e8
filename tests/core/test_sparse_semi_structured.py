"""2:4 semi-structured sparsity (``ember.sparse.to_sparse_semi_structured``) on the CPU: the
compressed format (half the values plus packed metadata), its checks, products with dense
operands computed from it, and parity with PyTorch's dense reference of the same pruned
matrix (PyTorch's own class needs CUDA; its pure-PyTorch CUTLASS packing runs on the CPU and
gives the same kept values)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.sparse import semi_structured as ss

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of SparseSemiStructuredTensor")

RNG = np.random.default_rng(0)


def _pruned(m, k, dtype=np.float16, group=4, seed=0):
    """A random (m, k) matrix with at most group // 2 nonzeros in every group of a row (some
    groups with fewer, one row all zero)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    keep = np.argsort(rng.random((m, k // group, group)), axis=-1)[..., :group // 2]
    mask = np.zeros((m, k // group, group), dtype=bool)
    np.put_along_axis(mask, keep, True, axis=-1)
    mask &= rng.random(mask.shape) > 0.1  # some groups keep fewer
    x = x * mask.reshape(m, k)
    x[1] = 0
    return x.astype(dtype)


@pytest.fixture(autouse=True)
def _dispatch_on():
    """The class overrides ``__torch_function__``: defining it turned dispatch on, which the
    suite's conftest turns off around every test; a program keeps it on."""
    ember.overrides.activate()


@pytest.fixture
def force_cutlass():
    ss.SparseSemiStructuredTensor._FORCE_CUTLASS = True
    try:
        yield
    finally:
        ss.SparseSemiStructuredTensor._FORCE_CUTLASS = False


def test_public_names():
    assert ember.sparse.to_sparse_semi_structured is ss.to_sparse_semi_structured
    assert ember.sparse.SparseSemiStructuredTensor is ss.SparseSemiStructuredTensor
    for cls in (ember.sparse.SparseSemiStructuredTensorCUTLASS,
                ember.sparse.SparseSemiStructuredTensorCUSPARSELT):
        assert issubclass(cls, ember.sparse.SparseSemiStructuredTensor)
    assert "to_sparse_semi_structured" in dir(ember.sparse)
    with pytest.raises(AttributeError):
        ember.sparse.not_a_name  # noqa: B018


@pytest.mark.parametrize("dtype, np_dtype", [(ember.float16, np.float16),
                                             (ember.bfloat16, np.float32),
                                             (ember.int8, np.int8)])
def test_format_is_compressed(dtype, np_dtype):
    a = _pruned(32, 64, np_dtype)
    x = ember.tensor(a).to(dtype)
    s = ember.sparse.to_sparse_semi_structured(x)
    assert type(s) is ember.sparse.SparseSemiStructuredTensorCUSPARSELT
    assert isinstance(s, ember.Tensor)
    assert s.shape == (32, 64) and s.dtype is dtype and s.device == x.device
    assert repr(s) == "SparseSemiStructuredTensorCUSPARSELT(shape=ember.Size([32, 64]))"
    values, meta = s.values(), s.indices()
    assert values.shape == (32, 32) and values.dtype is dtype  # half the columns
    assert meta.shape == (32, 8) and meta.dtype is ember.uint8  # 2 bits per kept value
    assert s.packed is not None and s.meta is not None and s.packed_t is None
    np.testing.assert_array_equal(s.to_dense().float().numpy(), x.float().numpy())
    # the values are the nonzeros of each group in order (and zeros where it has fewer)
    dense = x.float().numpy().reshape(32, 16, 4)
    kept = values.float().numpy().reshape(32, 16, 2)
    for r, g in ((0, 0), (5, 7), (31, 15)):
        nz = dense[r, g][dense[r, g] != 0]
        np.testing.assert_array_equal(kept[r, g][kept[r, g] != 0], nz)


@pytest.mark.parity
@pytest.mark.parametrize("np_dtype, group", [(np.float16, 4), (np.float32, 2)])
def test_values_match_torchs_cutlass_packing(np_dtype, group, force_cutlass):
    torch = pytest.importorskip("torch")
    from torch.sparse._semi_structured_conversions import (
        sparse_semi_structured_from_dense_cutlass,
        sparse_semi_structured_to_dense_cutlass,
    )

    a = _pruned(64, 64, np_dtype, group)
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(a))
    assert type(s) is ember.sparse.SparseSemiStructuredTensorCUTLASS
    packed, meta = sparse_semi_structured_from_dense_cutlass(torch.from_numpy(a))
    np.testing.assert_array_equal(s.values().numpy(), packed.numpy())
    np.testing.assert_array_equal(s.to_dense().numpy(), a)
    np.testing.assert_allclose(s.to_dense().numpy(),  # PyTorch unpacks float32 through TF32
                               sparse_semi_structured_to_dense_cutlass(packed, meta).numpy(),
                               rtol=1e-3)


@pytest.mark.parity
@pytest.mark.parametrize("np_dtype", [np.float16, np.float32])
def test_products_match_torchs_dense_reference(np_dtype, force_cutlass):
    torch = pytest.importorskip("torch")
    group = 2 if np_dtype == np.float32 else 4
    a = _pruned(64, 128, np_dtype, group)
    b = RNG.standard_normal((128, 24)).astype(np_dtype)
    x = RNG.standard_normal((3, 5, 128)).astype(np_dtype)
    y = RNG.standard_normal((7, 64)).astype(np_dtype)
    bias = RNG.standard_normal(64).astype(np_dtype)
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(a))
    ta = torch.from_numpy(a).float()  # the reference in float32 (CPU torch has no fp16 mm)
    tol = {"rtol": 2e-2, "atol": 2e-2} if np_dtype == np.float16 else \
        {"rtol": 1e-5, "atol": 1e-4}

    def check(got, want):
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.float().numpy(), want.numpy(), **tol)

    tb, tx, ty = (torch.from_numpy(v).float() for v in (b, x, y))
    eb, ex, ey = (ember.tensor(v) for v in (b, x, y))
    check(s @ eb, ta @ tb)
    check(ember.mm(s, eb), ta @ tb)
    check(ember.matmul(s, eb), ta @ tb)
    check(s.mm(eb), ta @ tb)
    check(ey @ s, ty @ ta)
    check(ember.mm(ex[0], s.t()), tx[0] @ ta.t())
    check(s.t().t() @ eb, ta @ tb)
    check(F.linear(ex, s), torch.nn.functional.linear(tx, ta))
    check(F.linear(ex, s, ember.tensor(bias)),
          torch.nn.functional.linear(tx, ta, torch.from_numpy(bias).float()))
    check(ember.addmm(ember.tensor(bias), ex[1], s.t()),
          torch.addmm(torch.from_numpy(bias).float(), tx[1], ta.t()))
    check(ember.addmm(ember.ones(64, 24, dtype=s.dtype), s, eb, beta=0.5, alpha=2.0),
          torch.addmm(torch.ones(64, 24), ta, tb, beta=0.5, alpha=2.0))


def test_transposed_operand_scatters():
    a = _pruned(32, 64, np.float16)
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(a))
    st = s.t()
    assert st.shape == (64, 32) and st.packed is None and st.packed_t is s.packed
    d = RNG.standard_normal((32, 5)).astype(np.float16)
    want = a.astype(np.float32).T @ d.astype(np.float32)
    np.testing.assert_allclose((st @ ember.tensor(d)).float().numpy(), want, rtol=2e-2,
                               atol=2e-2)
    np.testing.assert_array_equal(st.to_dense().numpy(), a.T)
    assert st.t().packed is s.packed


def test_gradients_reach_the_dense_operand_and_the_weight(force_cutlass):
    a = _pruned(32, 64, np.float32, 2)
    w = ember.tensor(a, requires_grad=True)
    s = ember.sparse.to_sparse_semi_structured(w)
    assert s.requires_grad and not s.is_leaf
    x = ember.tensor(RNG.standard_normal((6, 64)).astype(np.float32), requires_grad=True)
    F.linear(x, s).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((6, 32)) @ a, rtol=1e-5, atol=1e-5)
    dense_grad = np.ones((6, 32)).T @ x.detach().numpy()  # d/dW of sum(x @ W.T)
    kept = s.to_dense().detach().numpy() != 0
    got = w.grad.numpy()
    np.testing.assert_allclose(got[kept], dense_grad[kept], rtol=1e-5, atol=1e-5)
    stored = np.zeros_like(a, dtype=bool)  # the stored (kept) positions, zeros included
    cols = s._cols()
    cols = cols.get() if hasattr(cols, "get") else cols  # a device array: to the host
    stored[np.arange(32)[:, None], cols] = True
    assert not got[~stored].any()


def test_pattern_is_validated():
    a = _pruned(32, 64, np.float16)
    a[1, 9] = a[1, 10] = a[1, 11] = 1.0  # three nonzeros in row 1, group 2 (columns 8..11)
    with pytest.raises(RuntimeError, match=re.escape(
            "the tensor is not 2:4 sparse: row 1, columns 8..11 hold 3 nonzero elements")):
        ember.sparse.to_sparse_semi_structured(ember.tensor(a))


def test_float32_cutlass_is_1_to_2(force_cutlass):
    a = np.zeros((32, 32), dtype=np.float32)
    a[0, 0] = a[0, 1] = 1.0  # 2:4 but not 1:2
    with pytest.raises(RuntimeError, match="not 1:2 sparse: row 0, columns 0..1"):
        ember.sparse.to_sparse_semi_structured(ember.tensor(a))


@pytest.mark.parametrize("make, message", [
    (lambda: ember.ones(2, 64, 64, dtype=ember.float16),
     "Error original_tensor.dim = 3 is not supported! Only 2d tensors are currently supported."),
    (lambda: ember.zeros(64, 64),
     "Error original_tensor.dtype ember.float32 is not a supported dtype for <class "
     "'ember.sparse.semi_structured.SparseSemiStructuredTensorCUSPARSELT'>!"),
    (lambda: ember.zeros(64, 64, dtype=ember.float64),
     "Error original_tensor.dtype ember.float64 is not a supported dtype"),
    (lambda: ember.zeros(8, 64, dtype=ember.float16),
     "Error original_tensor.shape ember.Size([8, 64]) is not supported! Both dimensions must "
     "be larger or equal than and a multiple of (16, 16)"),
    (lambda: ember.zeros(32, 40, dtype=ember.float16), "multiple of (16, 16)"),
])
def test_pytorchs_errors_for_shapes_and_dtypes(make, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ember.sparse.to_sparse_semi_structured(make())


def test_cutlass_constraints(force_cutlass):
    with pytest.raises(RuntimeError, match=re.escape("multiple of (32, 64)")):
        ember.sparse.to_sparse_semi_structured(ember.zeros(32, 32, dtype=ember.float16))
    s = ember.sparse.to_sparse_semi_structured(ember.zeros(32, 32))  # float32: CUTLASS only
    assert type(s) is ember.sparse.SparseSemiStructuredTensorCUTLASS and s.dtype is ember.float32


def test_operand_errors():
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(_pruned(32, 64)))
    with pytest.raises(ValueError, match="is not supported by the hardware"):
        s @ s.t()
    with pytest.raises(NotImplementedError, match="Broadcasting is not implemented"):
        s @ ember.ones(2, 64, 3, dtype=ember.float16)
    with pytest.raises(NotImplementedError, match=re.escape(
            "trying to do `A=(32, 64) @ B=(64, 3)`, with A.dtype=ember.float16 and "
            "B.dtype=ember.float32")):
        s @ ember.ones(64, 3)
    with pytest.raises(RuntimeError, match=re.escape(
            "mat1 and mat2 shapes cannot be multiplied (32x64 and 32x3)")):
        s @ ember.ones(32, 3, dtype=ember.float16)
    with pytest.raises(NotImplementedError, match=re.escape(
            "SparseSemiStructuredTensorCUSPARSELT only supports a specific set of operations, "
            "can't perform requested op (exp)")):
        s.exp()
    with pytest.raises(TypeError, match="expected a dense"):
        ember.sparse.to_sparse_semi_structured(ember.eye(32).to_sparse())
    with pytest.raises(TypeError):
        ember.sparse.SparseSemiStructuredTensor()


def test_copies_moves_and_flags():
    a = _pruned(32, 64)
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(a))
    for c in (s.detach(), s.clone(), s.to(s.device), s.view(32, 64)):
        assert type(c) is type(s)
        np.testing.assert_array_equal(c.to_dense().numpy(), a)
    with pytest.raises(NotImplementedError, match="`view` is not implemented"):
        s.view(64, 32)
    with pytest.warns(FutureWarning, match="deprecated"):
        ember.sparse.to_sparse_semi_structured(ember.tensor(a), transposed=True)
    assert ss.SparseSemiStructuredTensor._FORCE_CUTLASS is False


def test_memory_is_half_the_values_plus_metadata():
    a = _pruned(64, 256)
    s = ember.sparse.to_sparse_semi_structured(ember.tensor(a))
    stored = s.values().numpy().nbytes + s.indices().numpy().nbytes
    assert stored == a.nbytes // 2 + a.size // 8  # float16: 62.5% of the dense matrix


def test_prototype_warning_once():
    ss.SparseSemiStructuredTensor._PROTOTYPE_WARNING_SHOWN = False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ember.sparse.to_sparse_semi_structured(ember.tensor(_pruned(32, 64)))
        ember.sparse.to_sparse_semi_structured(ember.tensor(_pruned(32, 64)))
    assert sum("prototype stage" in str(w.message) for w in seen) == 1
