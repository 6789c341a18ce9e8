"""``ember.sparse.mm(csr, dense, reduce)``, ``ember.bmm`` of a 3-D sparse COO tensor, ``matmul``
of COO operands with more than two dimensions, and the gradient of an uncoalesced sparse leaf:
found by differential probing against PyTorch 2.13 (CPU); the expected values and messages
were printed by PyTorch."""
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

F64 = ember.float64
# rows: two elements, one, three, none
ROWS = [[0, 0, 1, 2, 2, 2], [0, 3, 1, 0, 1, 3]]
VALS = [1.0, -2.0, 3.0, 4.0, 5.0, -6.0]
D = [[1.0, 2.0], [3.0, -4.0], [5.0, 6.0], [-7.0, 8.0]]
W = [[1.0, -1.0], [2.0, 0.5], [3.0, 1.0], [0.25, 2.0]]


def _csr(values=VALS, dtype=F64):
    coo = ember.sparse_coo_tensor(ember.tensor(ROWS), ember.tensor(values, dtype=dtype), (4, 4))
    return coo.coalesce().to_sparse_csr()


def _d(dtype=F64, requires_grad=False):
    return ember.tensor(D, dtype=dtype, requires_grad=requires_grad)


FORWARD = {
    "sum": [[15.0, -14.0], [9.0, -12.0], [61.0, -60.0], [0.0, 0.0]],
    "mean": [[7.5, -7.0], [9.0, -12.0], [61.0 / 3, -20.0], [0.0, 0.0]],
    "amax": [[14.0, 2.0], [9.0, -12.0], [42.0, 8.0], [0.0, 0.0]],
    "amin": [[1.0, -16.0], [9.0, -12.0], [4.0, -48.0], [0.0, 0.0]],
}
FORWARD["max"], FORWARD["min"] = FORWARD["amax"], FORWARD["amin"]

# (values' gradient, mat2's gradient) of (out * W).sum()
GRADS = {
    "sum": ([-1.0, -15.0, 4.0, 5.0, 5.0, -13.0],
            [[13.0, 3.0], [21.0, 6.5], [0.0, 0.0], [-20.0, -4.0]]),
    "mean": ([-0.5, -7.5, 4.0, 5.0 / 3, 5.0 / 3, -13.0 / 3],
             [[4.5, 5.0 / 6], [11.0, 19.0 / 6], [0.0, 0.0], [-7.0, -1.0]]),
    "amax": ([-2.0, -7.0, 4.0, 2.0, 0.0, -21.0],
             [[0.0, 3.0], [6.0, 1.5], [0.0, 0.0], [-20.0, 0.0]]),
    "amin": ([1.0, -8.0, 4.0, 3.0, 0.0, 8.0],
             [[13.0, 0.0], [6.0, 1.5], [0.0, 0.0], [0.0, -4.0]]),
}


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            _close(x, y)
        else:
            assert x == pytest.approx(y, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("reduce", sorted(FORWARD))
def test_mm_reduce_forward(reduce):
    out = ember.sparse.mm(_csr(), _d(), reduce)
    assert out.layout is ember.strided and out.dtype is F64 and tuple(out.shape) == (4, 2)
    _close(out.tolist(), FORWARD[reduce])
    _close(ember.sparse.mm(_csr(), _d(), reduce=reduce).tolist(), FORWARD[reduce])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16])
def test_mm_reduce_other_float_dtypes(dtype):
    out = ember.sparse.mm(_csr(dtype=dtype), _d(dtype), "amax")
    assert out.dtype is dtype
    _close(out.float().tolist(), FORWARD["amax"])
    _close(ember.sparse.mm(_csr(dtype=dtype), _d(dtype), "mean").float().tolist(),
           [[7.5, -7.0], [9.0, -12.0], [20.33333, -20.0], [0.0, 0.0]] if dtype is ember.float32
           else ember.tensor(FORWARD["mean"]).to(dtype).float().tolist())


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce_gradients(reduce):
    csr = _csr().requires_grad_()
    d = _d(requires_grad=True)
    out = ember.sparse.mm(csr, d, reduce)
    assert type(out.grad_fn).__name__ == "SparseMmReduceImplBackward0"
    (out * ember.tensor(W, dtype=F64)).sum().backward()
    g = csr.grad
    assert g.layout is ember.sparse_csr
    assert g.crow_indices().tolist() == [0, 2, 3, 6, 6]
    assert g.col_indices().tolist() == [0, 3, 1, 0, 1, 3]
    _close(g.values().tolist(), GRADS[reduce][0])
    _close(d.grad.tolist(), GRADS[reduce][1])


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce_gradcheck(reduce):
    csr = _csr()
    crow, col = csr.crow_indices(), csr.col_indices()

    def f(values, dense):
        return ember.sparse.mm(ember.sparse_csr_tensor(crow, col, values, (4, 4)), dense, reduce)

    values = ember.tensor(VALS, dtype=F64, requires_grad=True)
    assert gradcheck(f, (values, _d(requires_grad=True)))
    if reduce in ("sum", "mean"):  # smooth: the second derivative too (PyTorch has none)
        assert gradgradcheck(f, (values, _d(requires_grad=True)))


def test_mm_reduce_ties_give_the_gradient_to_the_first_element():
    csr = ember.tensor([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0]], dtype=F64).to_sparse_csr()
    csr.requires_grad_()
    d = ember.tensor([[3.0, 1.0], [3.0, 1.0], [1.0, 1.0]], dtype=F64, requires_grad=True)
    out = ember.sparse.mm(csr, d, "amax")
    out.sum().backward()
    assert out.tolist() == [[3.0, 1.0], [6.0, 2.0]]
    assert csr.grad.values().tolist() == [4.0, 0.0, 4.0, 0.0]
    assert d.grad.tolist() == [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]]
    csr.grad = None
    d.grad = None
    out = ember.sparse.mm(csr, d, "amin")
    out.sum().backward()
    assert out.tolist() == [[3.0, 1.0], [2.0, 2.0]]
    assert csr.grad.values().tolist() == [4.0, 0.0, 1.0, 1.0]
    assert d.grad.tolist() == [[1.0, 1.0], [0.0, 2.0], [2.0, 0.0]]


def test_mm_reduce_nan_inf_and_empty():
    csr = ember.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]).to_sparse_csr()
    nan, inf = float("nan"), float("inf")
    out = ember.sparse.mm(csr, ember.tensor([[nan, 1.0], [1.0, 1.0], [2.0, nan]]), "amax")
    assert str(out.tolist()) == "[[nan, nan], [3.0, 3.0]]"
    out = ember.sparse.mm(csr, ember.tensor([[-inf, 1.0], [1.0, 1.0], [-inf, 1.0]]), "amax")
    assert out.tolist() == [[-inf, 2.0], [3.0, 3.0]]
    assert tuple(ember.sparse.mm(csr, ember.ones(3, 0), "amax").shape) == (2, 0)
    empty = ember.zeros(3, 4, dtype=F64).to_sparse_csr()
    assert ember.sparse.mm(empty, _d(), "amin").tolist() == [[0.0, 0.0]] * 3


def test_mm_reduce_gradient_reaches_a_dense_source():
    dense = ember.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], dtype=F64, requires_grad=True)
    d = ember.tensor([[3.0, 1.0], [3.0, 1.0], [1.0, 1.0]], dtype=F64)
    ember.sparse.mm(dense.to_sparse_csr(), d, "mean").sum().backward()
    assert dense.grad.tolist() == [[2.0, 0.0, 1.0], [0.0, 4.0, 0.0]]


_NO_KERNEL = ("Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the '{}' "
              "backend")


@pytest.mark.parametrize("make, exc, msg", [
    (lambda: (_csr().to_sparse_coo(), _d(), "sum"), NotImplementedError,
     _NO_KERNEL.format("SparseCPU")),
    (lambda: (_csr().to_dense(), _d(), "mean"), NotImplementedError, _NO_KERNEL.format("CPU")),
    (lambda: (_csr().to_sparse_csc(), _d(), "sum"), RuntimeError,
     "sparse_mm_reduce: expect self to be SparseCsr, got SparseCsc"),
    (lambda: (_csr().to_dense().to_sparse_bsr(2), _d(), "amax"), RuntimeError,
     "sparse_mm_reduce: expect self to be SparseCsr, got SparseBsr"),
    (lambda: (ember.stack([_csr().to_dense()] * 2).to_sparse_csr(), _d(), "foo"), RuntimeError,
     "sparse_mm_reduce: expected self to be a 2-D tensor, got 3-D tensor."),
    (lambda: (_csr().to_dense()[..., None].to_sparse_csr(dense_dim=1), _d(), "sum"),
     RuntimeError, "sparse_mm_reduce: expected non-hybrid self tensor."),
    (lambda: (_csr(), _d().to_sparse_csr(), "sum"), RuntimeError,
     "Expected tensor to have Strided Layout, but got tensor with SparseCsr Layout (while "
     "checking arguments for sparse_mm_reduce)"),
    (lambda: (_csr(), _d().to_sparse(), "sum"), RuntimeError,
     "Expected tensor to have Strided Layout, but got tensor with Sparse Layout"),
    (lambda: (_csr(), _d(ember.float32)[:3], "foo"), RuntimeError,
     "Expected tensor for argument #1 'other' to have scalar type Double; but got "),
    (lambda: (_csr(), _d()[:3], "foo"), RuntimeError,
     "Expected a tensor of dimension 2 and tensor.size[0] == 4 but got: dimension 2 and "
     "tensor.size[0] = 3"),
    (lambda: (_csr(), _d()[:, 0], "sum"), RuntimeError,
     "Expected a tensor of dimension 2 and tensor.size[0] == 4 but got: dimension 1 and "
     "tensor.size[0] = 4"),
    (lambda: (_csr(), ember.tensor(1.0, dtype=F64), "sum"), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: (_csr(), _d(), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: (_csr(), _d(), "AMAX"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got AMAX"),
    (lambda: (_csr(), _d(), "prod"), RuntimeError,
     "sparse_mm_reduce: reduce type of prod has not been enabled."),
    (lambda: (_csr(dtype=ember.int64), _d(ember.int64), "sum"), NotImplementedError,
     "\"spmm_reduce_kernel\" not implemented for 'Long'"),
    (lambda: (_csr(dtype=ember.complex64), _d(ember.complex64), "sum"), NotImplementedError,
     "\"spmm_reduce_kernel\" not implemented for 'ComplexFloat'"),
    (lambda: (_csr(), _d(), None), TypeError,
     "_sparse_mm(): argument 'reduce' (position 3) must be str, not NoneType"),
    (lambda: (_csr(), [[1.0]], "sum"), TypeError,
     "_sparse_mm(): argument 'dense' (position 2) must be Tensor, not list"),
])
def test_mm_reduce_errors(make, exc, msg):
    args = make()
    with pytest.raises(exc) as info:
        ember.sparse.mm(*args)
    assert str(info.value).startswith(msg.replace("CPU", args[0].device.type.upper()))


def test_mm_without_reduce_is_the_ordinary_product():
    coo = _csr().to_sparse_coo()
    out = ember.sparse.mm(coo, _d())
    _close(out.tolist(), FORWARD["sum"])
    assert type(ember.sparse.mm(coo.requires_grad_(), _d()).grad_fn).__name__ == \
        "SparseAddmmBackward0"


# -- bmm of a 3-D sparse COO tensor ------------------------------------------------------------

BMM_I = [[0, 0, 1, 1, 0], [0, 1, 2, 0, 0], [1, 0, 2, 1, 1]]  # (0, 0, 1) twice: uncoalesced
BMM_V = [1.0, 2.0, 3.0, 4.0, 5.0]
BMM_OUT = [[[12.0, 18.0], [0.0, 2.0], [0.0, 0.0]], [[32.0, 36.0], [0.0, 0.0], [30.0, 33.0]]]


def _s3(dtype=F64, coalesce=False):
    s = ember.sparse_coo_tensor(ember.tensor(BMM_I), ember.tensor(BMM_V, dtype=dtype), (2, 3, 3))
    return s.coalesce() if coalesce else s


def _d3(dtype=F64, requires_grad=False):
    return ember.arange(12.0, dtype=F64).reshape(2, 3, 2).to(dtype).requires_grad_(
        requires_grad)


@pytest.mark.parametrize("coalesce", [False, True])
def test_bmm_forward(coalesce):
    s = _s3(coalesce=coalesce)
    for out in (ember.bmm(s, _d3()), s.bmm(_d3())):
        assert out.layout is ember.strided and out.dtype is F64
        assert out.tolist() == BMM_OUT
    out = ember.empty(2, 3, 2, dtype=F64)
    ember.bmm(s, _d3(), out=out)
    assert out.tolist() == BMM_OUT
    d = _d3().transpose(1, 2).contiguous().transpose(1, 2)  # not contiguous
    assert ember.bmm(s, d).tolist() == BMM_OUT


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.int32, ember.uint8,
                                   ember.complex64])
def test_bmm_dtypes(dtype):
    out = ember.bmm(_s3(dtype), _d3(dtype))
    assert out.dtype is dtype
    assert ember.tensor(BMM_OUT).to(dtype).tolist() == out.tolist()


def test_bmm_empty():
    z = ember.zeros(2, 3, 3, dtype=F64).to_sparse()
    assert ember.bmm(z, _d3()).tolist() == [[[0.0, 0.0]] * 3] * 2
    z0 = ember.zeros(0, 3, 3, dtype=F64).to_sparse()
    assert tuple(ember.bmm(z0, ember.zeros(0, 3, 2, dtype=F64)).shape) == (0, 3, 2)


@pytest.mark.parametrize("coalesce", [False, True])
def test_bmm_gradients(coalesce):
    s = _s3(coalesce=coalesce).requires_grad_()
    d = _d3(requires_grad=True)
    out = ember.bmm(s, d)
    assert type(out.grad_fn).__name__ == "BmmBackward0"
    (out * (ember.arange(12.0, dtype=F64).reshape(2, 3, 2) - 5)).sum().backward()
    assert d.grad.tolist() == [[[-6.0, -4.0], [-30.0, -24.0], [0.0, 0.0]],
                               [[0.0, 0.0], [4.0, 8.0], [15.0, 18.0]]]
    # PyTorch's gradient of the sparse operand is dense; Ember's is that gradient at the stored
    # elements (module doc of ember._sparse_tensor), each coordinate once
    g = s.grad
    assert g.layout is ember.sparse_coo and g._nnz() == 4
    assert g.to_dense().tolist() == [
        [[0.0, -22.0, 0.0], [-2.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
        [[0.0, 26.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 116.0]]]


def test_bmm_gradcheck():
    s = _s3(coalesce=True)
    assert gradcheck(lambda x: ember.bmm(s, x), (_d3(requires_grad=True),))
    assert gradgradcheck(lambda x: ember.bmm(s, x) ** 2, (_d3(requires_grad=True),))
    values = s.values().detach().requires_grad_()
    idx = s.indices()
    assert gradcheck(lambda v: ember.bmm(ember.sparse_coo_tensor(idx, v, (2, 3, 3)), _d3()),
                     (values,))


@pytest.mark.parametrize("make, exc, msg", [
    (lambda: (_s3(), _d3().to_sparse()), RuntimeError, "bmm_sparse: Tensor 'mat2' must be dense"),
    (lambda: (_d3().transpose(1, 2), _s3()), RuntimeError,
     "bmm_sparse: Tensor 'mat2' must be dense"),
    (lambda: (_s3(), _d3()[:1]), RuntimeError,
     "bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match"),
    (lambda: (_s3(), _d3()[:, :2]), RuntimeError,
     "bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match"),
    (lambda: (_s3(), ember.ones(2, 2, 3)), RuntimeError,  # a shape error before the dtype's
     "bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match"),
    (lambda: (_s3(), _d3()[0]), RuntimeError,
     "bmm_sparse: Tensor 'mat2' must have 3 dims, but has 2"),
    (lambda: (_s3().coalesce()[0], _d3()), RuntimeError,
     "bmm_sparse: Tensor 'self' must have 3 sparse dims, but has 2"),
    (lambda: (ember.ones(1, 2, 3, 3, dtype=F64).to_sparse(), _d3()), RuntimeError,
     "bmm_sparse: Tensor 'self' must have 3 sparse dims, but has 4"),
    (lambda: (ember.ones(2, 3, 3, dtype=F64).to_sparse(2), _d3()), RuntimeError,
     "bmm_sparse: Tensor 'self' must have 0 dense dims, but has 1"),
    (lambda: (_s3(), _d3(ember.float32)), RuntimeError,
     "expected scalar type Double but found Float"),
    (lambda: (_s3(ember.float16), _d3(ember.float16)), NotImplementedError,
     "\"bmm_sparse_dense\" not implemented for 'Half'"),
    (lambda: (_s3(ember.bool), _d3(ember.bool)), NotImplementedError,
     "\"bmm_sparse_dense\" not implemented for 'Bool'"),
    (lambda: (ember.ones(2, 3, 3, dtype=F64).to_sparse_csr(), _d3()), NotImplementedError,
     "Could not run 'aten::bmm.out' with arguments from the 'SparseCsrCPU' backend"),
    (lambda: (ember.ones(2, 2, 2, dtype=F64).to_sparse_csr(), _d3()), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 2] but got: [2, 3]."),
    (lambda: (_s3(), [[1.0]]), TypeError,
     "bmm(): argument 'mat2' (position 2) must be Tensor, not list"),
])
def test_bmm_errors(make, exc, msg):
    a, b = make()
    with pytest.raises(exc) as info:
        ember.bmm(a, b)
    assert str(info.value).startswith(msg.replace("CPU", _cpu_word(a, b)))


def _cpu_word(a, b):
    return (a if a.layout is not ember.strided else b).device.type.upper()


@pytest.mark.parametrize("a, b, msg", [
    ((2, 2, 2), "s2", None),
    ((2, 2), "s3", "expand is unsupported for Sparse tensors"),
    ((2,), "s3", "reshape is not implemented for sparse tensors"),
    ("s3", (2, 2, 2), "expand is unsupported for Sparse tensors"),
    ("s3", (2, 2), "reshape is not implemented for sparse tensors"),
    ("s3", (2,), "reshape is not implemented for sparse tensors"),
    ("s2", (2, 2, 2), "expand is unsupported for Sparse tensors"),
    ("s3", "s3", "expand is unsupported for Sparse tensors"),
    ("s3", "s2", "reshape is not implemented for sparse tensors"),
])
def test_matmul_of_coo_with_more_than_two_dims(a, b, msg):
    ones = ember.ones(2, 2, 2, dtype=F64)

    def make(x):
        return {"s3": ones.to_sparse(), "s2": ones[0].to_sparse()}[x] if isinstance(x, str) \
            else ember.ones(*x, dtype=F64)

    x, y = make(a), make(b)
    if msg is None:  # a dense (..., M, K) folded into the rows of one product
        out = x @ y
        assert out.tolist() == [[[2.0, 2.0]] * 2] * 2
        assert ember.matmul(x, y).tolist() == out.tolist()
        return
    for fn in (ember.matmul, lambda p, q: p @ q):
        with pytest.raises(RuntimeError, match=msg):
            fn(x, y)


def test_matmul_folded_dense_batches_are_differentiable():
    s = ember.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], dtype=F64).to_sparse()
    a = ember.arange(12.0, dtype=F64).reshape(2, 3, 2).requires_grad_()
    assert (a @ s).tolist() == (a @ s.to_dense()).tolist()
    assert gradcheck(lambda x: x @ s, (a,))


# -- the gradient of an uncoalesced sparse leaf ------------------------------------------------

UNC_I = [[0, 1, 0, 2], [1, 0, 1, 2]]  # (0, 1) twice


def _leaf():
    return ember.sparse_coo_tensor(ember.tensor(UNC_I), ember.tensor([1.0, 2.0, 3.0, 4.0]),
                                   (3, 3), requires_grad=True)


def _twice(s):
    s.to_dense().sum().backward()
    s.to_dense().sum().backward()


@pytest.mark.parametrize("use, values", [
    (lambda s: s.to_dense().sum().backward(), [1.0, 1.0, 1.0]),
    (lambda s: (s.to_dense() * ember.arange(9.0).reshape(3, 3)).sum().backward(),
     [1.0, 3.0, 8.0]),
    (lambda s: (s * 2).to_dense().sum().backward(), [2.0, 2.0, 2.0]),
    (lambda s: ember.sparse.mm(s, ember.arange(6.0).reshape(3, 2)).sum().backward(),
     [5.0, 1.0, 9.0]),
    (lambda s: (s.coalesce().values() * ember.tensor([1.0, 2.0, 3.0])).sum().backward(),
     [1.0, 2.0, 3.0]),
    (lambda s: ember.sparse.sum(s).backward(), [1.0, 1.0, 1.0]),
    (lambda s: ember.sparse.sum(s, 0).to_dense().sum().backward(), [1.0, 1.0, 1.0]),
    (lambda s: (s + s).to_dense().sum().backward(), [2.0, 2.0, 2.0]),
    (lambda s: (s * s).to_dense().sum().backward(), [8.0, 4.0, 8.0]),
    (lambda s: s.coalesce().to_dense().sum().backward(), [1.0, 1.0, 1.0]),
    (_twice, [2.0, 2.0, 2.0]),
])
def test_uncoalesced_leaf_gradient_counts_each_coordinate_once(use, values):
    s = _leaf()
    use(s)
    g = s.grad
    # PyTorch's: the distinct coordinates, sorted (its coalesced flag depends on the path)
    assert g.layout is ember.sparse_coo and g._nnz() == 3
    assert g._indices().tolist() == [[0, 1, 2], [1, 0, 2]]
    assert g._values().tolist() == values
    c = g.coalesce()
    assert c.indices().tolist() == [[0, 1, 2], [1, 0, 2]] and c.values().tolist() == values


def test_uncoalesced_leaf_gradient_flag_and_dense_form():
    s = _leaf()
    s.to_dense().sum().backward()
    assert not s.grad.is_coalesced()  # as PyTorch's to_dense backward
    assert s.grad.to_dense().tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    # unsorted without duplicates: sorted too
    u = ember.sparse_coo_tensor(ember.tensor([[2, 0, 1], [0, 1, 2]]),
                                ember.tensor([1.0, 2.0, 3.0]), (3, 3), requires_grad=True)
    (u.to_dense() * ember.arange(9.0).reshape(3, 3)).sum().backward()
    assert u.grad._indices().tolist() == [[0, 1, 2], [1, 2, 0]]
    assert u.grad._values().tolist() == [1.0, 5.0, 6.0]


def test_uncoalesced_hybrid_leaf_gradient():
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1, 0]]),
                                ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (2, 2),
                                requires_grad=True)
    (s.to_dense() * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert s.grad._nnz() == 2
    assert s.grad.coalesce().values().tolist() == [[1.0, 2.0], [3.0, 4.0]]


# -- products without a sparse kernel name themselves, as PyTorch's dispatcher does -------------

def _no_kernel(op, backend):
    return f"Could not run 'aten::{op}' with arguments from the '{backend}' backend."


@pytest.mark.parametrize("call, op", [
    (lambda d, s: ember.baddbmm(d, s, d), "baddbmm"),  # any argument sparse
    (lambda d, s: ember.baddbmm(s, d, d), "baddbmm"),
    (lambda d, s: ember.baddbmm(d, d, s), "baddbmm"),
    (lambda d, s: s.baddbmm(d, d), "baddbmm"),
    (lambda d, s: ember.addbmm(d[0], s, d), "addbmm"),
    (lambda d, s: ember.addbmm(d[0].to_sparse(), d, d), "addbmm"),
    (lambda d, s: d.clone().baddbmm_(s, d), "baddbmm_"),  # a dense self: the in-place name
    (lambda d, s: d[0].clone().addbmm_(s, d), "addbmm_"),
])
def test_batched_add_products_refuse_sparse_in_their_own_name(call, op):
    d = ember.randn(2, 2, 2, dtype=F64)
    dev = d.device.type.upper()  # the backend is the sparse one of the suite's device
    with pytest.raises(NotImplementedError) as info:
        call(d, d.to_sparse())
    assert str(info.value).startswith(_no_kernel(op, "Sparse" + dev))
    with pytest.raises(NotImplementedError, match=f"'SparseCsr{dev}' backend"):
        ember.addbmm(d[0].to_sparse_csr(), d, d)


def test_batched_add_products_refuse_sparse_as_torch():
    torch = pytest.importorskip("torch")

    def messages(lib):
        d = lib.ones(2, 2, 2, dtype=lib.float64, device="cpu")  # PyTorch's is a CPU build
        calls = (lambda: lib.baddbmm(d, d.to_sparse(), d),
                 lambda: lib.addbmm(d[0], d.to_sparse(), d),
                 lambda: d.clone().baddbmm_(d.to_sparse(), d))
        out = []
        for call in calls:
            with pytest.raises(NotImplementedError) as info:
                call()
            out.append(str(info.value).split(" This")[0])
        return out

    assert messages(ember) == messages(torch)
