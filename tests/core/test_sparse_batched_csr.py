"""Batched CSR tensors (``ember.sparse._batched``): construction (``sparse_csr_tensor`` with
batched parts, ``to_sparse_csr()`` of a dense tensor of three or more dimensions), parts,
conversions, sums, element-wise ops, batch selection, checkpoints and errors against PyTorch
(the oracle); ``@`` with dense tensors (PyTorch's CPU build has no kernel: against its dense
product) and float64 gradchecks in the values."""

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
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
]

DENSE = [[[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], [[0.0, 4.0, 0.0], [5.0, 0.0, 6.0]]]
CROW = [[0, 2, 3], [0, 1, 3]]
COL = [[0, 2, 1], [1, 0, 2]]
VAL = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _torch():
    return pytest.importorskip("torch")


def _b(m, dtype=None):
    return m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VAL, dtype=dtype),
                               (2, 2, 3))


def _four_d(m):
    x = m.zeros(2, 3, 2, 4)
    x[..., 0, 1] = 1.0
    x[..., 1, 3] = m.arange(6.0).reshape(2, 3) + 2
    return x


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor(DENSE).to_sparse_csr(),
    lambda m: m.tensor(DENSE).to_sparse(layout=m.sparse_csr),
    lambda m: _four_d(m).to_sparse_csr(),
    lambda m: m.zeros(2, 2, 3).to_sparse_csr(),
    lambda m: _b(m),
    lambda m: m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VAL)),  # inferred
    lambda m: m.sparse_csr_tensor(m.tensor(CROW, dtype=m.int32), m.tensor(COL, dtype=m.int32),
                                  m.tensor(VAL), (2, 2, 4)),
    lambda m: m.sparse_compressed_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VAL),
                                         (2, 2, 3), layout=m.sparse_csr),
    lambda m: _b(m, m.float64).to_dense(),
    lambda m: _b(m).to_sparse_coo(),
    lambda m: _four_d(m).to_sparse_csr().to_sparse(),
    lambda m: _b(m).sum(),
    lambda m: _b(m)[1],
    lambda m: _b(m).select(0, -1),
    lambda m: _b(m)[1, 0],
    lambda m: _four_d(m).to_sparse_csr()[1],
    lambda m: _four_d(m).to_sparse_csr()[1, 2],
    lambda m: (lambda b: b + b)(_b(m)),  # (PyTorch's sum of two is not a valid tensor)
    lambda m: _b(m) * 2,
    lambda m: -_b(m),
    lambda m: m.sin(_b(m)),
    lambda m: _b(m).abs_(),
    lambda m: m.isnan(_b(m)),
    lambda m: m.ones(2, 2, 3).sparse_mask(_b(m)),
    lambda m: _b(m).zero_(),
    lambda m: _b(m).clone(),
    lambda m: _b(m).to(m.float64),
    lambda m: _b(m).values(),
    lambda m: _b(m).crow_indices(),
    lambda m: _four_d(m).to_sparse_csr().col_indices(),
])
def test_batched_csr_matches_torch(fn):
    same_sparse_in_both(fn)


@pytest.mark.parity
def test_repr_pickle_and_checkpoints_match_torch():
    torch = _torch()
    e, t = _b(ember).to("cpu"), _b(torch)  # (PyTorch reads files of CPU tensors)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert_same_sparse_parts(pickle.loads(pickle.dumps(e)), t)
    assert_same_sparse_parts(copy.deepcopy(e), t)
    buf = io.BytesIO()
    ember.save({"b": e}, buf)
    buf.seek(0)
    assert_same_sparse_parts(e, torch.load(buf)["b"])
    buf = io.BytesIO()
    torch.save({"b": _four_d(torch).to_sparse_csr()}, buf)
    buf.seek(0)
    assert_same_sparse_parts(ember.load(buf)["b"], _four_d(torch).to_sparse_csr())


def _checked(m, crow=CROW, col=COL, val=VAL, size=(2, 2, 3)):
    """``sparse_csr_tensor`` with PyTorch's checks on (Ember always checks)."""
    v = val if hasattr(val, "shape") else m.tensor(val)
    return m.sparse_csr_tensor(m.tensor(crow), m.tensor(col), v, size, check_invariants=True)


@pytest.mark.parity
@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([[[1.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]]).to_sparse_csr(),
    lambda m: m.zeros(0, 2, 3).to_sparse_csr(),
    lambda m: _checked(m, col=COL[0]),
    lambda m: _checked(m, val=VAL[:1]),
    lambda m: _checked(m, val=m.tensor(VAL).reshape(-1)),
    lambda m: _checked(m, size=(2, 3)),
    lambda m: _checked(m, size=(3, 2, 3)),
    lambda m: _checked(m, size=(2, 3, 3)),
    lambda m: _checked(m, crow=[[1, 2, 3], [0, 1, 3]]),
    lambda m: _checked(m, crow=[[0, 2, 2], [0, 1, 3]]),
    lambda m: _checked(m, col=[[0, 3, 1], [1, 0, 2]]),
    lambda m: _checked(m, col=[[2, 0, 1], [1, 0, 2]]),
    lambda m: _checked(m, col=[[0, 0, 1], [1, 0, 2]]),
    lambda m: _checked(m, crow=[[0, 2, 3]], col=[[0, 2, 1]]),
    lambda m: _b(m).t(),
    lambda m: _b(m).transpose(0, 1),
    lambda m: _b(m).sum(1),
    lambda m: _b(m).select(2, 0),
    lambda m: _b(m)[0:1],
    lambda m: _b(m).coalesce(),
    lambda m: _b(m).index_select(0, m.tensor([0])),
    lambda m: m.sparse.softmax(_b(m), 1),
    lambda m: m.mm(_b(m), m.ones(3, 2)),
    lambda m: _b(m).exp(),
])
def test_batched_csr_errors_match_torch(fn):
    same_error_in_both(fn)


# -- products with dense tensors ----------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("other", [(2, 3, 4), (3, 4), (3, 1)])
def test_matmul_with_dense_equals_torch_dense_product(other):
    """PyTorch's CPU build has no batched CSR @ dense kernel (its CUDA one does ``bmm``):
    compared with PyTorch's dense product."""
    torch = _torch()
    rng = np.random.default_rng(0)
    d = rng.standard_normal(other)
    e = _b(ember, ember.float64) @ ember.tensor(d)
    t = torch.tensor(DENSE, dtype=torch.float64) @ torch.tensor(d)
    assert not e.is_sparse and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    x = _four_d(ember).double().to_sparse_csr()
    d4 = ember.tensor(rng.standard_normal((2, 3, 4, 5)))
    np.testing.assert_allclose(ember.matmul(x, d4).numpy(),
                               (_four_d(torch).double() @ torch.tensor(d4.numpy())).numpy(),
                               rtol=1e-12)


def test_matmul_errors():
    b = _b(ember)
    with pytest.raises(RuntimeError, match="cannot be multiplied with a dense tensor of size"):
        b @ ember.ones(3, 2, 4)
    with pytest.raises(RuntimeError, match="cannot be multiplied with a dense tensor of size"):
        b @ ember.ones(2, 2, 4)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        b @ ember.ones(3, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="with dense tensors only"):
        b @ b


# -- autograd -------------------------------------------------------------------------------

def _values64():
    return ember.tensor(VAL, dtype=ember.float64, requires_grad=True)


def _make(v):
    return ember.sparse_csr_tensor(ember.tensor(CROW), ember.tensor(COL), v, (2, 2, 3))


def test_gradcheck_in_the_values():
    d = ember.randn(2, 3, 4, dtype=ember.float64, requires_grad=True)
    d2 = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v, d: _make(v) @ d, (_values64(), d))
    assert gradcheck(lambda v, d: _make(v) @ d, (_values64(), d2))
    assert gradcheck(lambda v: _make(v).to_dense(), (_values64(),))
    assert gradcheck(lambda v: _make(v).sum(), (_values64(),))
    assert gradcheck(lambda v: ember.tanh(_make(v)).values(), (_values64(),))
    assert gradcheck(lambda v: _make(v)[1].to_dense(), (_values64(),))
    x = ember.tensor(DENSE, dtype=ember.float64) + 10  # no zeros: a fixed pattern
    assert gradcheck(lambda x: x.to_sparse_csr().values(), (x.requires_grad_(),))


@pytest.mark.parity
def test_grad_fn_names_and_a_leaf_gradient():
    torch = _torch()
    names = []
    for m in (ember, torch):
        v = m.tensor(VAL, requires_grad=True)
        x = m.tensor(DENSE, requires_grad=True)
        names.append((m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), v,
                                          (2, 2, 3)).grad_fn.name(),
                      x.to_sparse_csr().grad_fn.name()))
    assert names[0] == names[1]
    leaf = ember.sparse_csr_tensor(ember.tensor(CROW), ember.tensor(COL), ember.tensor(VAL),
                                   requires_grad=True)
    (leaf @ ember.ones(2, 3, 4)).sum().backward()
    assert leaf.grad.layout == ember.sparse_csr and tuple(leaf.grad.shape) == (2, 2, 3)
    np.testing.assert_array_equal(leaf.grad.values().numpy(), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(leaf.grad.crow_indices().numpy(), CROW)
