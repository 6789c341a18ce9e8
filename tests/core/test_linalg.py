"""Products (ember.ops.linalg) and ember.linalg: NumPy references, PyTorch's errors, float64
gradchecks (gradgradchecks for matmul, mm, bmm, einsum, inv, det), multi-output autograd."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64, grad=False):
    t = ember.tensor(RNG.standard_normal(shape).astype(dtype))
    return t.requires_grad_() if grad else t


def well_conditioned(*shape, grad=True):
    n = shape[-1]
    a = RNG.standard_normal(shape) + 3 * np.eye(n)
    t = ember.tensor(a)
    return t.requires_grad_() if grad else t


def npy(t):
    return t.detach().numpy()


# -- matmul ---------------------------------------------------------------------------------

MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 3), (5, 3, 4)),
                 ((5, 1, 2, 3), (4, 3, 2)), ((2, 1, 2, 3), (1, 3, 3, 2))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_matches_numpy_and_gradcheck(sa, sb):
    a, b = rand(*sa, grad=True), rand(*sb, grad=True)
    out = ember.matmul(a, b)
    np.testing.assert_allclose(npy(out), npy(a) @ npy(b), rtol=1e-12)
    assert out.shape == (npy(a) @ npy(b)).shape
    assert gradcheck(ember.matmul, (a, b))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
                                   ((2, 1, 2, 3), (3, 3, 2))])
def test_matmul_gradgradcheck(sa, sb):
    assert gradgradcheck(ember.matmul, (rand(*sa, grad=True), rand(*sb, grad=True)))


def test_matmul_fast_path_is_plain_numpy_product():
    a, b = rand(64, 32, dtype=np.float32), rand(32, 16, dtype=np.float32)
    out = a @ b
    assert out.grad_fn is None and not out.requires_grad
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), a.numpy() @ b.numpy())


def test_matmul_grad_fn_names_and_int_dtype():
    a, b = rand(2, 3, grad=True), rand(3, 4, grad=True)
    assert (a @ b).grad_fn.name() == "MmBackward0"
    # PyTorch's composite matmul: the node of its last step (an _unsafe_view, a clone, a
    # squeeze) on the other ranks
    assert ember.matmul(rand(5, 2, 3, grad=True), b).grad_fn.name() == "UnsafeViewBackward0"
    assert ember.matmul(a, rand(5, 3, 4, grad=True)).grad_fn.name() == "CloneBackward0"
    assert ember.matmul(rand(2, 3), rand(5, 3, 4, grad=True)).grad_fn.name() == \
        "UnsafeViewBackward0"
    assert ember.matmul(rand(3, grad=True), b).grad_fn.name() == "SqueezeBackward4"
    ia = ember.tensor([[1, 2], [3, 4]])
    r = ia @ ia
    assert r.dtype == ember.int64 and r.tolist() == [[7, 10], [15, 22]]


MATMUL_ERRORS = [
    ((2, 3), (4, 5), np.float32, np.float32,
     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4, 5), np.float32, np.float32,
     r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    ((2, 2, 3), (4, 5), np.float32, np.float32,
     r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 4x5\)"),
    ((3,), (4,), np.float32, np.float32,
     r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same number "
     r"of elements, but got 3 and 4 elements respectively"),
    ((2, 3), (4,), np.float32, np.float32,
     r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((2, 2, 3), (2, 4, 5), np.float32, np.float32,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: "
     r"\[2, 4\]\."),
    ((2, 2, 3), (3, 3, 4), np.float32, np.float32,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton "
     r"dimension 0"),
    ((2, 3), (3, 4), np.float32, np.float64,
     r"expected m1 and m2 to have the same dtype, but got: float != double"),
    ((3,), (3,), np.float32, np.float64,
     r"dot : expected both vectors to have same dtype, but found Float and Double"),
    ((2, 3), (3,), np.float32, np.float64,
     r"addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ((2, 2, 3), (2, 3, 4), np.float32, np.float64,
     r"expected scalar type Float but found Double"),
    ((), (3,), np.float32, np.float32,
     r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
]


@pytest.mark.parametrize("sa,sb,da,db,msg", MATMUL_ERRORS)
def test_matmul_errors(sa, sb, da, db, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.matmul(rand(*sa, dtype=da), rand(*sb, dtype=db))


def test_matmul_bool_not_implemented():
    b = ember.tensor([[True, False]])
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        b @ b.mT


@settings(max_examples=25, deadline=None)
@given(batch_a=st.lists(st.integers(1, 3), max_size=2), batch_b=st.lists(st.integers(1, 3),
                                                                         max_size=2),
       n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3),
       one_d=st.sampled_from(["", "a", "b", "ab"]))
def test_matmul_broadcasting_property(batch_a, batch_b, n, k, m, one_d):
    sa = (k,) if "a" in one_d else tuple(batch_a) + (n, k)
    sb = (k,) if "b" in one_d else tuple(batch_b) + (k, m)
    a, b = rand(*sa), rand(*sb)
    try:
        expected = npy(a) @ npy(b)
    except ValueError:
        with pytest.raises(RuntimeError, match="must match the size"):
            ember.matmul(a, b)
        return
    np.testing.assert_allclose(ember.matmul(a, b).numpy(), expected, rtol=1e-12)


# -- mm, bmm, mv, dot, vdot, inner, outer ---------------------------------------------------

def test_mm_bmm_mv_values_and_gradchecks():
    a, b = rand(2, 3, grad=True), rand(3, 4, grad=True)
    np.testing.assert_allclose(npy(ember.mm(a, b)), npy(a) @ npy(b))
    assert gradcheck(ember.mm, (a, b)) and gradgradcheck(ember.mm, (a, b))
    x, y = rand(2, 2, 3, grad=True), rand(2, 3, 4, grad=True)
    r = ember.bmm(x, y)
    assert r.grad_fn.name() == "BmmBackward0"
    np.testing.assert_allclose(npy(r), npy(x) @ npy(y))
    assert gradcheck(ember.bmm, (x, y)) and gradgradcheck(ember.bmm, (x, y))
    v = rand(3, grad=True)
    np.testing.assert_allclose(npy(a.mv(v)), npy(a) @ npy(v))
    assert gradcheck(ember.mv, (a, v))


def test_vdot_conjugates_its_first_argument():
    """torch.vdot: sum(conj(a) * b) (np.vdot), gradients by the conjugate Wirtinger rule."""
    rng = np.random.default_rng(3)
    an = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    bn = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    a = ember.tensor(an, requires_grad=True)
    b = ember.tensor(bn, requires_grad=True)
    np.testing.assert_allclose(ember.vdot(a, b).item(), np.vdot(an, bn), rtol=1e-14)
    np.testing.assert_allclose(a.vdot(b).item(), np.vdot(an, bn), rtol=1e-14)
    np.testing.assert_allclose(ember.dot(a, b).item(), np.dot(an, bn), rtol=1e-14)
    assert gradcheck(ember.vdot, (a, b))


def test_dot_vdot_inner_outer():
    u, v = rand(4, grad=True), rand(4, grad=True)
    assert ember.dot(u, v).shape == ()
    np.testing.assert_allclose(ember.dot(u, v).item(), npy(u) @ npy(v))
    np.testing.assert_allclose(u.vdot(v).item(), npy(u) @ npy(v))
    assert gradcheck(ember.dot, (u, v)) and gradcheck(ember.vdot, (u, v))
    a, b = rand(2, 4, grad=True), rand(3, 4, grad=True)
    np.testing.assert_allclose(npy(ember.inner(a, b)), np.inner(npy(a), npy(b)))
    assert gradcheck(ember.inner, (a, b))
    np.testing.assert_allclose(npy(ember.inner(a, ember.tensor(2.0, dtype=ember.float64))),
                               2 * npy(a))
    w = rand(3, grad=True)
    np.testing.assert_allclose(npy(ember.outer(u, w)), np.outer(npy(u), npy(w)))
    np.testing.assert_allclose(npy(u.ger(w)), np.outer(npy(u), npy(w)))
    assert gradcheck(ember.outer, (u, w))
    assert ember.outer(rand(2, dtype=np.float32), rand(3)).dtype == ember.float64


@pytest.mark.parametrize("fn,args,msg", [
    (ember.mm, ((2, 3), (3,)), "mat2 must be a matrix"),
    (ember.mm, ((3,), (3, 3)), "self must be a matrix"),
    (ember.mm, ((2, 3), (4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (ember.bmm, ((2, 3), (2, 3, 4)), "batch1 must be a 3D tensor"),
    (ember.bmm, ((2, 2, 3), (3, 4)), "batch2 must be a 3D tensor"),
    (ember.bmm, ((2, 2, 3), (3, 3, 4)), r"Expected size for first two dimensions of batch2 "
                                        r"tensor to be: \[2, 3\] but got: \[3, 3\]\."),
    (ember.mv, ((2, 3), (3, 1)), "vector \\+ matrix @ vector expected, got 1, 2, 2"),
    (ember.mv, ((2, 3), (4,)), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (ember.dot, ((3, 1), (3,)), "1D tensors expected, but got 2D and 1D tensors"),
    (ember.dot, ((3,), (4,)), r"inconsistent tensor size, expected tensor \[3\]"),
    (ember.inner, ((2, 3), (4, 4)), r"inner\(\) the last dimension must match on both input "
                                    r"tensors but got shapes \[2, 3\] and \[4, 4\]"),
    (ember.outer, ((2, 2), (3,)), "outer: Expected 1-D argument self, but got 2-D"),
    (ember.outer, ((2,), (2, 3)), "outer: Expected 1-D argument vec2, but got 2-D"),
])
def test_product_errors(fn, args, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn(*(rand(*s) for s in args))


def test_product_dtype_errors():
    f, d = rand(3, 3, dtype=np.float32), rand(3, 3)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.mm(f, d)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.bmm(f.unsqueeze(0), d.unsqueeze(0))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, "
                                           "but found Float and Double"):
        ember.dot(rand(3, dtype=np.float32), rand(3))


# -- addmm family ---------------------------------------------------------------------------

def test_addmm_family_values():
    i, a, b = rand(2, 4), rand(2, 3), rand(3, 4)
    np.testing.assert_allclose(npy(ember.addmm(i, a, b, beta=0.5, alpha=2)),
                               0.5 * npy(i) + 2 * npy(a) @ npy(b))
    row = rand(4)
    np.testing.assert_allclose(npy(ember.addmm(row, a, b)), npy(row) + npy(a) @ npy(b))
    nan = ember.full((2, 4), float("nan"), dtype=ember.float64)
    assert not np.isnan(npy(ember.addmm(nan, a, b, beta=0))).any()
    v = rand(3)
    np.testing.assert_allclose(npy(ember.addmv(rand(2) * 0, a, v, alpha=3)), 3 * npy(a) @ npy(v))
    bi, b1, b2 = rand(5, 2, 4), rand(5, 2, 3), rand(5, 3, 4)
    np.testing.assert_allclose(npy(ember.baddbmm(bi, b1, b2, beta=2, alpha=0.5)),
                               2 * npy(bi) + 0.5 * npy(b1) @ npy(b2))
    np.testing.assert_allclose(npy(ember.addbmm(i, b1, b2)),
                               npy(i) + (npy(b1) @ npy(b2)).sum(0))
    j = i.clone()
    before = npy(j).copy()
    assert j.addmm_(a, b) is j
    np.testing.assert_allclose(npy(j), before + npy(a) @ npy(b))


def test_addmm_family_gradchecks():
    a, b = rand(2, 3, grad=True), rand(3, 4, grad=True)
    assert gradcheck(lambda i, x, y: ember.addmm(i, x, y, beta=0.5, alpha=2),
                     (rand(4, grad=True), a, b))
    assert gradcheck(lambda i, x, y: ember.addmv(i, x, y, beta=2, alpha=-1),
                     (rand(1, grad=True), a, rand(3, grad=True)))
    b1, b2 = rand(3, 2, 3, grad=True), rand(3, 3, 4, grad=True)
    assert gradcheck(lambda i, x, y: ember.baddbmm(i, x, y, beta=0.5, alpha=2),
                     (rand(2, 4, grad=True), b1, b2))
    assert gradcheck(lambda i, x, y: ember.addbmm(i, x, y, alpha=3), (rand(2, 4, grad=True), b1,
                                                                       b2))
    r = ember.addmm(rand(2, 4, grad=True), a, b)
    assert r.grad_fn.name() == "AddmmBackward0"


@pytest.mark.parametrize("fn,shapes,msg", [
    (ember.addmm, ((3, 4), (2, 3), (3, 4)), r"The expanded size of the tensor \(2\) must match"),
    (ember.addmm, ((2, 4), (3,), (3, 4)), "mat1 must be a matrix, got 1-D tensor"),
    (ember.addmm, ((2, 4), (2, 3), (4, 4)), r"mat1 and mat2 shapes cannot be multiplied"),
    (ember.addmv, ((3,), (2, 3), (3,)), r"size mismatch, got input \(3\), mat \(2x3\), vec"),
    (ember.baddbmm, ((2, 2, 4), (2, 2, 3), (2, 4, 4)), "Expected size for first two dimensions"),
    (ember.baddbmm, ((2, 2, 4), (2, 3), (2, 3, 4)), "batch1 must be a 3D tensor"),
    (ember.addbmm, ((2, 4), (5, 2, 3), (4, 3, 4)), "batch1 and batch2 must have same number of "
                                                   "batches, got 5 and 4"),
])
def test_addmm_family_errors(fn, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn(*(rand(*s) for s in shapes))


def test_addmm_dtype_errors():
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got "
                                           "Float and Double"):
        ember.addmm(rand(2, 4, dtype=np.float32), rand(2, 3), rand(3, 4))
    with pytest.raises(RuntimeError, match="Input dtypes must be the same, got: input double, "
                                           "batch1: float, batch2: float"):
        ember.baddbmm(rand(2, 2, 4), rand(2, 2, 3, dtype=np.float32),
                      rand(2, 3, 4, dtype=np.float32))


# -- einsum ---------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk", [(4, 2, 3), (3, 5)]),
    ("i...->...", [(2, 3, 4)]),
    ("ba", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_matches_numpy_and_gradcheck(eq, shapes):
    ops = [rand(*s, grad=True) for s in shapes]
    out = ember.einsum(eq, *ops)
    np.testing.assert_allclose(npy(out), np.einsum(eq, *[npy(o) for o in ops]), rtol=1e-12)
    assert gradcheck(lambda *xs: ember.einsum(eq, *xs), ops)


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
                                       ("bij,bjk->bik", [(1, 2, 3), (2, 3, 2)]),
                                       ("ij->", [(2, 3)])])
def test_einsum_gradgradcheck(eq, shapes):
    ops = [rand(*s, grad=True) for s in shapes]
    assert gradgradcheck(lambda *xs: ember.einsum(eq, *xs), ops)


@pytest.mark.parametrize("eq,shapes", [
    ("bhid,bhjd->bhij", [(2, 3, 9, 5), (2, 3, 11, 5)]),   # attention's scores
    ("bhij,bhjd->bhid", [(2, 3, 9, 11), (2, 3, 11, 5)]),  # attention's values
    ("ihb,bjh->bhij", [(9, 3, 2), (2, 11, 3)]),           # permuted operands and result
    ("bhid,bjd->bhij", [(2, 3, 9, 5), (2, 11, 5)]),       # a batch label one operand lacks
    ("bhid,bhjd->bhij", [(1, 3, 9, 5), (2, 1, 11, 5)]),   # size-1 batch dims broadcast
    ("ij,kj->ki", [(30, 20), (25, 20)]),
])
def test_einsum_as_one_batched_product(eq, shapes):
    # two operands that are one batched matrix product run as matmul of permuted views (as
    # PyTorch's bmm), not through NumPy's einsum: same values, gradients, and for the scores
    # the bits of the matmul itself
    ops = [rand(*s, grad=True) for s in shapes]
    out = ember.einsum(eq, *ops)
    np.testing.assert_allclose(npy(out), np.einsum(eq, *[npy(o) for o in ops]), rtol=1e-12,
                               atol=1e-13)  # sums of 5-20 terms: cancellation
    assert gradcheck(lambda *xs: ember.einsum(eq, *xs), ops)
    if eq == "bhid,bhjd->bhij" and shapes[0][0] == 2:
        q, k = (npy(o).astype(np.float32) for o in ops)
        got = ember.einsum(eq, ember.from_numpy(q), ember.from_numpy(k))
        assert np.array_equal(npy(got), np.matmul(q, k.swapaxes(-1, -2)))


def test_einsum_broadcasts_size_one_and_takes_a_list():
    a, b = rand(1, 2, 3, grad=True), rand(4, 3, 5, grad=True)
    out = ember.einsum("bij,bjk->bik", [a, b])
    assert out.shape == (4, 2, 5)
    np.testing.assert_allclose(npy(out), npy(a) @ npy(b))
    assert gradcheck(lambda x, y: ember.einsum("bij,bjk->bik", x, y), (a, b))


def test_einsum_result_does_not_alias_input():
    a = rand(3, 3)
    out = ember.einsum("ij->ji", a)
    out._data[0, 1] = 100.0
    assert npy(a)[1, 0] != 100.0


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "einsum\\(\\): subscript j has size 4 for operand 1 which "
                                    "does not broadcast with previously seen size 3"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("ij->ji", [(2, 3), (3,)], "more operands were provided than specified in the equation"),
    ("ijk,jk->ik", [(2, 3), (3, 5)], "the number of subscripts in the equation \\(3\\) does not "
                                     "match the number of dimensions \\(2\\) for operand 0 and "
                                     "no ellipsis was given"),
    ("ij,jk->il", [(2, 3), (3, 5)], "output subscript l does not appear in the equation for any "
                                    "input operand"),
    ("ij,jk->iik", [(2, 3), (3, 5)], "output subscript i appears more than once in the output"),
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij1,jk->ik", [(2, 3), (3, 5)], "invalid subscript given at index 2 in the equation string, "
                                     "subscripts must be in \\[a-zA-Z\\]"),
])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.einsum(eq, *[rand(*s) for s in shapes])


def test_einsum_dtype_mismatch():
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.einsum("ij,jk->ik", rand(2, 3, dtype=np.float32), rand(3, 2))


# -- tensordot, kron, trace, cross, matrix_power, chain_matmul ------------------------------

@pytest.mark.parametrize("dims,sa,sb", [
    (2, (2, 3, 4), (3, 4, 5)), (1, (2, 3, 4), (4, 5)), (0, (2, 3), (4,)),
    (([1, 2], [0, 1]), (2, 3, 4), (3, 4, 5)), (([2, 1], [1, 0]), (2, 3, 4), (3, 4, 5)),
    (([0], [1]), (4, 3, 2), (5, 4)), ([[1], [0]], (2, 3), (3, 4)), (([-1], [0]), (2, 3), (3,)),
])
def test_tensordot(dims, sa, sb):
    a, b = rand(*sa, grad=True), rand(*sb, grad=True)
    np_dims = dims if isinstance(dims, int) else tuple(dims)
    out = ember.tensordot(a, b, dims=dims)
    np.testing.assert_allclose(npy(out), np.tensordot(npy(a), npy(b), axes=np_dims), rtol=1e-12)
    assert gradcheck(lambda x, y: ember.tensordot(x, y, dims=dims), (a, b))


def test_tensordot_errors():
    a, b = rand(2, 3, 4), rand(3, 4, 5)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 4 in dim -1 and second has size 3 in dim 0"):
        ember.tensordot(a, b, dims=1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ember.tensordot(a, b, dims=([1, 2], [0]))
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        ember.tensordot(a, b, dims=-1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(a, rand(3, 4, 5, dtype=np.float32))


def test_kron_trace_cross():
    a, b = rand(2, 3, grad=True), rand(4, 2, grad=True)
    np.testing.assert_allclose(npy(ember.kron(a, b)), np.kron(npy(a), npy(b)))
    v = rand(3)
    np.testing.assert_allclose(npy(a.kron(v)), np.kron(npy(a), npy(v)))
    assert ember.kron(a, v).shape == (2, 9)
    assert ember.kron(a, v.float()).dtype == ember.float64
    assert gradcheck(ember.kron, (a, b))
    m = rand(3, 4, grad=True)
    assert ember.trace(m).item() == pytest.approx(np.trace(npy(m)))
    assert gradcheck(ember.trace, (m,))
    assert ember.trace(ember.tensor([[1, 2], [3, 4]], dtype=ember.int32)).dtype == ember.int64
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        ember.trace(rand(2, 3, 3))
    x, y = rand(2, 3, grad=True), rand(1, 3, grad=True)
    np.testing.assert_allclose(npy(ember.linalg.cross(x, y)), np.cross(npy(x), npy(y)))
    assert gradcheck(ember.linalg.cross, (x, y))
    ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch warns once a process
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        c = ember.cross(rand(3, 2), rand(3, 2))
    assert c.shape == (3, 2)
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length "
                                           "3. Got 2 and 2"):
        ember.linalg.cross(rand(3, 2), rand(3, 2))
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        ember.linalg.cross(rand(2, 3), rand(3))


def test_matrix_power_and_chain_matmul():
    a = well_conditioned(3, 3)
    for n in (0, 1, 2, 3, 5, -1, -2):
        np.testing.assert_allclose(npy(ember.matrix_power(a, n)),
                                   np.linalg.matrix_power(npy(a), n), rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda x: ember.matrix_power(x, 3), (a,))
    assert gradcheck(lambda x: x.matrix_power(-2), (a,))
    # the identity of A^0 still requires grad, with a zero gradient (PyTorch's copy_)
    eye = ember.matrix_power(a, 0)
    assert eye.requires_grad and eye.grad_fn is not None
    (g,) = ember.autograd.grad(eye.sum(), a)
    assert g.shape == a.shape and not npy(g).any()
    b = rand(2, 3, 3)
    np.testing.assert_allclose(npy(ember.linalg.matrix_power(b, 2)), npy(b) @ npy(b))
    with pytest.raises(RuntimeError, match="linalg.matrix_power: A must be batches of square "
                                           "matrices, but they are 2 by 3 matrices"):
        ember.matrix_power(rand(2, 3), 2)
    ms = [rand(2, 3, grad=True), rand(3, 4, grad=True), rand(4, 2, grad=True)]
    ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch warns once a process
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        r = ember.chain_matmul(*ms)
    np.testing.assert_allclose(npy(r), npy(ms[0]) @ npy(ms[1]) @ npy(ms[2]))
    with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead."):
        ember.chain_matmul(rand(2, 3), rand(3))  # (warned once already, as PyTorch)


# -- ember.linalg: inv, det, slogdet, solve -------------------------------------------------

SINGULAR = [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]


def test_inv_values_gradcheck_gradgradcheck():
    a = well_conditioned(2, 3, 3)
    np.testing.assert_allclose(npy(ember.linalg.inv(a)), np.linalg.inv(npy(a)), rtol=1e-12)
    assert ember.linalg.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert gradcheck(ember.linalg.inv, (a,))
    assert gradgradcheck(ember.linalg.inv, (well_conditioned(3, 3),))
    np.testing.assert_allclose(npy(a.inverse()), np.linalg.inv(npy(a)), rtol=1e-12)
    assert ember.linalg.inv(rand(3, 3, dtype=np.float32)).dtype == ember.float32


def test_inv_errors():
    s = ember.tensor(SINGULAR)
    with pytest.raises(ember.linalg.LinAlgError, match="linalg.inv: The diagonal element 3 is "
                       "zero, the inversion could not be completed because the input matrix is "
                       "singular."):
        ember.linalg.inv(s)
    with pytest.raises(RuntimeError, match=r"linalg.inv: \(Batch element 1\): The diagonal "
                                           "element 3 is zero"):
        ember.linalg.inv(ember.tensor([np.eye(3).tolist(), SINGULAR]))
    with pytest.raises(RuntimeError, match="The diagonal element 1 is zero"):
        ember.linalg.inv(ember.zeros(3, 3))
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        ember.linalg.inv(rand(2, 3))
    with pytest.raises(RuntimeError, match="linalg.inv: The input tensor A must have at least 2 "
                                           "dimensions."):
        ember.linalg.inv(rand(3))
    with pytest.raises(RuntimeError, match="linalg.inv: Expected a floating point or complex "
                                           "tensor as input. Got Long"):
        ember.linalg.inv(ember.tensor([[1, 2], [3, 4]]))
    res = ember.linalg.inv_ex(s)
    assert res.info.item() == 3


def test_det_slogdet_logdet():
    a = well_conditioned(2, 3, 3)
    np.testing.assert_allclose(npy(ember.linalg.det(a)), np.linalg.det(npy(a)), rtol=1e-12)
    assert gradcheck(ember.linalg.det, (a,))
    assert gradgradcheck(ember.linalg.det, (well_conditioned(3, 3),))
    sign, logabs = ember.linalg.slogdet(a)
    ns, nl = np.linalg.slogdet(npy(a))
    np.testing.assert_allclose(npy(sign), ns)
    np.testing.assert_allclose(npy(logabs), nl)
    assert sign.requires_grad and logabs.requires_grad  # as in PyTorch
    (g_sign,) = ember.autograd.grad(sign.sum(), a, allow_unused=True, retain_graph=True)
    assert g_sign is None  # the sign is piecewise constant
    assert logabs.grad_fn.name() == "LinalgSlogdetBackward0" and logabs.output_nr == 1
    assert gradcheck(lambda x: ember.linalg.slogdet(x).logabsdet, (a,))
    r = ember.slogdet(a)
    assert type(r).__name__ == "slogdet" and r.sign.shape == (2,)
    neg = ember.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert np.isnan(ember.logdet(neg).item())
    np.testing.assert_allclose(ember.logdet(ember.tensor([[2.0, 0], [0, 3]])).item(), np.log(6))
    assert gradcheck(ember.logdet, (ember.tensor([[2.0, 0.5], [0.1, 3]], dtype=ember.float64,
                                                 requires_grad=True),))


def test_det_gradient_of_singular_matrix():
    s = ember.tensor(SINGULAR, dtype=ember.float64, requires_grad=True)
    ember.linalg.det(s).backward()
    # d det / dA is the transposed adjugate
    adj = np.array([[np.linalg.det(np.delete(np.delete(np.array(SINGULAR), i, 0), j, 1)) *
                     (-1) ** (i + j) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(s.grad.numpy(), adj, atol=1e-10)


def test_solve():
    a = well_conditioned(2, 3, 3)
    for b_shape in [(3,), (2, 3), (3, 2), (2, 3, 2), (4, 1, 3, 2)]:
        b = rand(*b_shape, grad=True)
        x = ember.linalg.solve(a, b)
        vector = len(b_shape) == 1 or b_shape == (2, 3)
        bn = npy(b)[..., None] if vector else npy(b)
        ref = np.linalg.solve(npy(a), bn)
        np.testing.assert_allclose(npy(x), ref[..., 0] if vector else ref, rtol=1e-10)
        assert gradcheck(ember.linalg.solve, (a, b))
    b = rand(2, 3, grad=True)
    a2 = well_conditioned(3, 3)
    np.testing.assert_allclose(npy(ember.linalg.solve(a2, b, left=False)),
                               npy(b) @ np.linalg.inv(npy(a2)), rtol=1e-10)
    assert gradcheck(lambda x, y: ember.linalg.solve(x, y, left=False),
                     (well_conditioned(3, 3), b))


def test_solve_errors():
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes of A and B for "
                                           r"the equation AX = B \(3x3 and 4x1\)"):
        ember.linalg.solve(rand(3, 3), rand(4))
    with pytest.raises(ember.linalg.LinAlgError, match="torch.linalg.solve: The solver failed "
                                                       "because the input matrix is singular."):
        ember.linalg.solve(ember.tensor(SINGULAR), ember.ones(3))
    with pytest.raises(RuntimeError, match="linalg.solve: Expected A and B to have the same "
                                           "dtype, but found A of type Float and B of type Double"):
        ember.linalg.solve(rand(3, 3, dtype=np.float32), rand(3))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        ember.linalg.solve(rand(2, 3, 3), rand(4, 3, 1))


# -- cholesky, qr, eigh, svd ----------------------------------------------------------------

def spd(x):
    return x.matmul(x.mT) + 3 * ember.tensor(np.eye(x.shape[-1]))


def test_cholesky():
    x = rand(2, 3, 3, grad=True)
    a = spd(x)
    L = ember.linalg.cholesky(a)
    np.testing.assert_allclose(npy(L), np.linalg.cholesky(npy(a)), rtol=1e-12)
    np.testing.assert_allclose(npy(ember.linalg.cholesky(a, upper=True)),
                               np.swapaxes(np.linalg.cholesky(npy(a)), -1, -2), rtol=1e-12)
    assert gradcheck(lambda t: ember.linalg.cholesky(spd(t)), (x,))
    assert gradcheck(lambda t: ember.linalg.cholesky(spd(t), upper=True), (x,))
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.cholesky: The factorization "
                       r"could not be completed because the input is not positive-definite \(the "
                       r"leading minor of order 2 is not positive-definite\)."):
        ember.linalg.cholesky(ember.tensor([[1.0, 2], [2, 1]]))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The factorization"):
        ember.linalg.cholesky(ember.tensor([[[1.0, 0], [0, 1]], [[-1.0, 2], [2, 1]]]))
    assert ember.linalg.cholesky_ex(ember.tensor([[1.0, 2], [2, 1]])).info.item() == 2


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4, 2)])
def test_qr(shape):
    a = rand(*shape, grad=True)
    Q, R = ember.linalg.qr(a)
    np.testing.assert_allclose(npy(Q) @ npy(R), npy(a), atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(npy(Q), -1, -2) @ npy(Q), np.eye(shape[-1]) +
                               np.zeros(shape[:-2] + (1, 1)), atol=1e-12)
    assert np.allclose(npy(R), np.triu(npy(R)))
    assert gradcheck(lambda t: tuple(ember.linalg.qr(t)), (a,))
    assert gradcheck(lambda t: ember.linalg.qr(t).R, (a,))  # only R
    assert gradcheck(lambda t: ember.linalg.qr(t).Q, (a,))  # only Q


def test_qr_wide_and_modes():
    a = rand(3, 5, grad=True)
    Q, R = ember.linalg.qr(a)
    assert Q.shape == (3, 3) and R.shape == (3, 5)
    assert gradcheck(lambda t: tuple(ember.linalg.qr(t)), (a,))
    tall = rand(4, 3, grad=True)
    Qc, Rc = ember.linalg.qr(tall, mode="complete")
    assert Qc.shape == (4, 4) and Rc.shape == (4, 3)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > "
                                           "ncols"):
        Qc.sum().backward()
    Q0, Rr = ember.linalg.qr(tall, mode="r")
    assert Q0.shape == (0,) and Rr.shape == (3, 3)
    with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q"):
        Rr.sum().backward()
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x' but expected one of "
                                           "'reduced' \\(default\\), 'r', or 'complete'"):
        ember.linalg.qr(tall, mode="x")


def sym(x):
    return x + x.mT


def test_eigh():
    x = rand(2, 4, 4, grad=True)
    L, V = ember.linalg.eigh(sym(x))
    w, v = np.linalg.eigh(npy(sym(x)))
    np.testing.assert_allclose(npy(L), w, rtol=1e-12)
    np.testing.assert_allclose(np.abs(npy(V)), np.abs(v), atol=1e-10)
    np.testing.assert_allclose(npy(ember.linalg.eigvalsh(sym(x))), w, rtol=1e-12)
    assert gradcheck(lambda t: ember.linalg.eigh(sym(t)).eigenvalues, (x,))
    assert gradcheck(lambda t: ember.linalg.eigvalsh(sym(t)), (x,))
    # sign-invariant function of the eigenvectors
    assert gradcheck(lambda t: ember.linalg.eigh(sym(t)).eigenvectors ** 2, (x,))
    assert gradcheck(lambda t: tuple(v ** 2 for v in ember.linalg.eigh(sym(t))), (x,))
    upper = ember.linalg.eigh(ember.tensor([[1.0, 2.0], [100.0, 1.0]]), UPLO="U").eigenvalues
    np.testing.assert_allclose(npy(upper), [-1.0, 3.0], rtol=2e-7)  # float32 (cuSOLVER: 1 ulp)
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        ember.linalg.eigh(ember.tensor(np.eye(2)), UPLO="X")


def _svd_invariants(t, full=False):
    U, S, Vh = ember.linalg.svd(t, full_matrices=full)
    return U * U, S, Vh * Vh, U.matmul(Vh)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 3, 2)])
def test_svd_values_and_gradcheck(shape):
    a = rand(*shape, grad=True)
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(npy(U) @ (npy(S)[..., None] * npy(Vh)), npy(a), atol=1e-12)
    np.testing.assert_allclose(npy(S), np.linalg.svd(npy(a), compute_uv=False), rtol=1e-12)
    assert gradcheck(lambda t: _svd_invariants(t), (a,))
    assert gradcheck(lambda t: ember.linalg.svd(t, full_matrices=False).S, (a,))
    assert gradcheck(ember.linalg.svdvals, (a,))


def test_svd_full_matrices():
    a = rand(4, 3, grad=True)
    U, S, Vh = ember.linalg.svd(a)
    assert (U.shape, S.shape, Vh.shape) == ((4, 4), (3,), (3, 3))
    np.testing.assert_allclose(npy(U)[:, :3] @ (npy(S)[:, None] * npy(Vh)), npy(a), atol=1e-12)
    assert gradcheck(lambda t: ember.linalg.svd(t).S, (a,))
    assert gradcheck(lambda t: ember.linalg.svd(t).Vh ** 2, (a,))
    assert gradcheck(lambda t: ember.linalg.svd(t.mT).U ** 2, (a,))
    sq = rand(3, 3, grad=True)
    assert gradcheck(lambda t: _svd_invariants(t, full=True), (sq,))
    assert gradcheck(lambda t: ember.linalg.svd(t).U.narrow(-1, 0, 3).matmul(
        ember.linalg.svd(t).Vh), (a,))
    r = ember.svd(a)
    assert type(r).__name__ == "svd" and r.V.shape == (3, 3)
    np.testing.assert_allclose(npy(r.U) @ (npy(r.S)[:, None] * npy(r.V).T), npy(a), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 4, 3), (0, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_svd_without_uv_gives_square_zero_factors(shape, some):
    # PyTorch: U is m x m and V n x n, zero-filled and outside the graph, whatever `some` is
    a = rand(*shape, grad=True)
    U, S, V = ember.svd(a, some=some, compute_uv=False)
    m, n = shape[-2:]
    assert U.shape == shape[:-2] + (m, m) and V.shape == shape[:-2] + (n, n)
    assert S.shape == shape[:-2] + (min(m, n),)
    assert not npy(U).any() and not npy(V).any()
    assert S.requires_grad and not U.requires_grad and not V.requires_grad


def test_multi_output_gradients_flow_from_any_subset():
    a = rand(4, 3, grad=True)
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    assert U.grad_fn is S.grad_fn is Vh.grad_fn
    assert (U.output_nr, S.output_nr, Vh.output_nr) == (0, 1, 2)
    assert U.grad_fn.name() == "LinalgSvdBackward0"
    # gradient of sum(S) alone is U V^T
    (gS,) = ember.autograd.grad(S.sum(), a, retain_graph=True)
    np.testing.assert_allclose(npy(gS), npy(U) @ npy(Vh), atol=1e-12)
    # two outputs: the sum of the separate gradients
    (g1,) = ember.autograd.grad((U * U).sum(), a, retain_graph=True)
    (g2,) = ember.autograd.grad((Vh * Vh).sum() * 0 + (U.matmul(Vh)).sum(), a, retain_graph=True)
    (g12,) = ember.autograd.grad((U * U).sum() + (U.matmul(Vh)).sum(), a)
    np.testing.assert_allclose(npy(g12), npy(g1) + npy(g2), atol=1e-10)


def test_multi_output_inplace_modification_is_detected():
    a = rand(3, 3, grad=True)
    L, V = ember.linalg.eigh(sym(a))
    loss = (V * V).sum()
    V.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_decomposition_errors():
    with pytest.raises(RuntimeError, match="linalg.svd: The input tensor A must have at least 2 "
                                           "dimensions."):
        ember.linalg.svd(rand(3))
    with pytest.raises(RuntimeError, match="linalg.eigh: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        ember.linalg.eigh(rand(2, 3))
    with pytest.raises(RuntimeError, match="linalg.svd: Expected a floating point or complex "
                                           "tensor as input. Got Long"):
        ember.linalg.svd(ember.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        ember.linalg.inv(rand(2, 2, dtype=np.float16))


# -- pinv, matrix_rank, lstsq, multi_dot, vecdot --------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv(shape):
    a = rand(*shape, grad=True)
    np.testing.assert_allclose(npy(ember.linalg.pinv(a)), np.linalg.pinv(npy(a)), atol=1e-10)
    assert gradcheck(ember.linalg.pinv, (a,))
    np.testing.assert_allclose(npy(a.pinverse()), np.linalg.pinv(npy(a)), atol=1e-10)


def test_pinv_rank_deficient_and_hermitian():
    r = ember.tensor(SINGULAR)
    np.testing.assert_allclose(npy(ember.linalg.pinv(r)), np.linalg.pinv(np.array(SINGULAR)),
                               atol=1e-5)
    h = ember.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=ember.float64)
    np.testing.assert_allclose(npy(ember.linalg.pinv(h, hermitian=True)), np.linalg.inv(npy(h)))
    assert ember.linalg.matrix_rank(r).item() == 2
    assert ember.linalg.matrix_rank(r).dtype == ember.int64
    assert ember.linalg.matrix_rank(rand(3, 4, 2)).tolist() == [2, 2, 2]
    with pytest.raises(RuntimeError, match=r"linalg.pinv\(Float\{\[3\]\}\): expected a tensor "
                                           "with 2 or more dimensions"):
        ember.linalg.pinv(rand(3, dtype=np.float32))


def test_lstsq():
    a, b = rand(5, 3, grad=True), rand(5, 2, grad=True)
    res = ember.linalg.lstsq(a, b)
    ref = np.linalg.lstsq(npy(a), npy(b), rcond=None)
    np.testing.assert_allclose(npy(res.solution), ref[0], atol=1e-10)
    assert res.residuals.shape == (0,) and res.rank.item() == 3
    gd = ember.linalg.lstsq(a, b, driver="gelsd")
    np.testing.assert_allclose(npy(gd.residuals), ref[1], rtol=1e-8)
    np.testing.assert_allclose(npy(gd.singular_values), ref[3], rtol=1e-10)
    assert gradcheck(lambda x, y: ember.linalg.lstsq(x, y).solution, (a, b))
    assert ember.linalg.lstsq(a, rand(5)).solution.shape == (3,)
    with pytest.raises(RuntimeError, match=r"torch.linalg.lstsq: input.size\(-2\) should match "
                                           r"other.size\(-2\)"):
        ember.linalg.lstsq(a, rand(3, 2))


def test_multi_dot_and_vecdot():
    ts = [rand(3, grad=True), rand(3, 10, grad=True), rand(10, 2, grad=True), rand(2, grad=True)]
    ref = np.linalg.multi_dot([npy(t) for t in ts])
    out = ember.linalg.multi_dot(ts)
    assert out.shape == ()
    np.testing.assert_allclose(npy(out), ref)
    assert gradcheck(lambda *xs: ember.linalg.multi_dot(xs), ts)
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors but got 1"):
        ember.linalg.multi_dot([rand(3, 3)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensors 0 and 1 with shapes \[2, 3\] "
                                           r"and \[4, 5\] cannot be multiplied"):
        ember.linalg.multi_dot([rand(2, 3), rand(4, 5)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensor 1 must be 2D but got 3D"):
        ember.linalg.multi_dot([rand(2, 3), rand(3, 3, 5), rand(5)])
    x, y = rand(2, 3, grad=True), rand(3, grad=True)
    np.testing.assert_allclose(npy(ember.linalg.vecdot(x, y)), npy(x) @ npy(y))
    assert gradcheck(ember.linalg.vecdot, (x, y))
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected x and y to have the same "
                                           "dtype, but found x of type Float and y of type Double"):
        ember.linalg.vecdot(rand(3, dtype=np.float32), rand(3))


# -- norms ----------------------------------------------------------------------------------

@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, 1.5, -1, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm(ord, dim, keepdim):
    x = rand(2, 3, 4, grad=True)
    out = ember.linalg.vector_norm(x, ord, dim, keepdim)
    axis = dim if dim is None or isinstance(dim, tuple) else (dim,)
    a = np.abs(npy(x))
    if ord == 0:
        ref = (a != 0).sum(axis=axis, keepdims=keepdim).astype(float)
    elif np.isinf(ord):
        ref = (a.max if ord > 0 else a.min)(axis=axis, keepdims=keepdim)
    else:
        ref = (a ** ord).sum(axis=axis, keepdims=keepdim) ** (1 / ord)
    np.testing.assert_allclose(npy(out), ref, rtol=1e-12)
    assert out.shape == np.shape(ref)
    assert gradcheck(lambda t: ember.linalg.vector_norm(t, ord, dim, keepdim), (x,))


def test_vector_norm_zero_vector_gradient_is_zero():
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    ember.linalg.vector_norm(x).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_vector_norm_errors_and_dtype():
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        ember.linalg.vector_norm(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.linalg.vector_norm(rand(0, 3), float("inf"))
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty tensor"):
        ember.linalg.vector_norm(rand(0), -1)
    with pytest.raises(TypeError, match="argument 'ord' \\(position 2\\) must be Number, not str"):
        ember.linalg.vector_norm(rand(3), "fro")
    assert ember.linalg.vector_norm(rand(3, dtype=np.float32), dtype=ember.float64).dtype == \
        ember.float64
    assert ember.linalg.vector_norm(rand(2, 3), keepdim=True).shape == (1, 1)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")])
def test_matrix_norm(ord):
    a = rand(2, 3, 4, grad=True)
    out = ember.linalg.matrix_norm(a, ord)
    ref = np.linalg.norm(npy(a), ord=ord, axis=(-2, -1))
    np.testing.assert_allclose(npy(out), ref, rtol=1e-12)
    assert gradcheck(lambda t: ember.linalg.matrix_norm(t, ord), (a,))
    kd = ember.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True)
    np.testing.assert_allclose(npy(kd), np.linalg.norm(npy(a), ord=ord, axis=(0, 2),
                                                       keepdims=True), rtol=1e-12)


def test_norm_dispatch_and_errors():
    a = rand(3, 4, grad=True)
    np.testing.assert_allclose(npy(ember.linalg.norm(a)), np.linalg.norm(npy(a)))
    np.testing.assert_allclose(npy(ember.linalg.norm(a, 2)), np.linalg.norm(npy(a), 2))
    np.testing.assert_allclose(npy(ember.linalg.norm(a, 3, dim=1)),
                               np.linalg.norm(npy(a), 3, axis=1))
    np.testing.assert_allclose(npy(ember.linalg.norm(rand(2, 3, 4))).shape, ())
    assert gradcheck(lambda t: ember.linalg.norm(t, "nuc"), (a,))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        ember.linalg.norm(a, 3)
    with pytest.raises(RuntimeError, match="linalg.norm: If dim is not specified but ord is, the "
                                           "input must be 1D or 2D. Got 3D."):
        ember.linalg.norm(rand(2, 3, 4), 3)
    with pytest.raises(RuntimeError, match=r"If dim is specified, it must be of length 1 or 2. "
                                           r"Got \[0, 1, 2\]"):
        ember.linalg.norm(rand(2, 3, 4), dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got 1"):
        ember.linalg.norm(a, "fro", dim=1)
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(0, 0\)"):
        ember.linalg.matrix_norm(a, dim=(0, 0))
    assert ember.linalg.matrix_norm(rand(0, 3), 2).item() == 0.0


# -- double backward through every decomposition -------------------------------------------

def _wc(n):
    return well_conditioned(n, n)


GRADGRAD = {
    "eigh_values": (lambda t: ember.linalg.eigh(sym(t)).eigenvalues,
                    lambda: (rand(3, 3, grad=True),)),
    "eigh_vectors": (lambda t: ember.linalg.eigh(sym(t)).eigenvectors ** 2,
                     lambda: (rand(3, 3, grad=True),)),
    "svdvals": (ember.linalg.svdvals, lambda: (rand(4, 3, grad=True),)),
    "svd_vectors": (lambda t: _svd_invariants(t)[3], lambda: (rand(4, 3, grad=True),)),
    "qr": (lambda t: tuple(ember.linalg.qr(t)), lambda: (rand(4, 3, grad=True),)),
    "cholesky": (lambda t: ember.linalg.cholesky(spd(t)), lambda: (rand(3, 3, grad=True),)),
    "solve": (ember.linalg.solve, lambda: (_wc(3), rand(3, 2, grad=True))),
    "slogdet": (lambda t: ember.linalg.slogdet(t).logabsdet, lambda: (_wc(3),)),
    "pinv": (ember.linalg.pinv, lambda: (rand(4, 3, grad=True),)),
    "vector_norm": (lambda t: ember.linalg.vector_norm(t, 3, 0), lambda: (rand(5, 2, grad=True),)),
    "matrix_norm_nuc": (lambda t: ember.linalg.matrix_norm(t, "nuc"),
                        lambda: (rand(3, 4, grad=True),)),
    "tensordot": (lambda a, b: ember.tensordot(a, b, ([0], [1])),
                  lambda: (rand(3, 2, grad=True), rand(4, 3, grad=True))),
    "addmm": (lambda i, a, b: ember.addmm(i, a, b, beta=0.5, alpha=2),
              lambda: (rand(2, 4, grad=True), rand(2, 3, grad=True), rand(3, 4, grad=True))),
    "cross": (ember.linalg.cross, lambda: (rand(2, 3, grad=True), rand(2, 3, grad=True))),
    "matrix_power": (lambda t: ember.matrix_power(t, -2), lambda: (_wc(3),)),
}


@pytest.mark.parametrize("name", sorted(GRADGRAD))
def test_gradgradcheck_decompositions_and_products(name):
    fn, make = GRADGRAD[name]
    assert gradgradcheck(fn, make())


# -- devices --------------------------------------------------------------------------------

def test_ops_keep_the_device(testdev):
    a, b = rand(3, 3).to(testdev), rand(3, 3).to(testdev)
    for r in (a @ b, ember.einsum("ij,jk->ik", a, b), ember.linalg.inv(a),
              ember.linalg.svd(a).U, ember.linalg.norm(a), ember.tensordot(a, b),
              ember.addmm(a, a, b), ember.linalg.solve(a, b), ember.trace(a)):
        assert r.device == testdev
    x = rand(3, 3).to(testdev).requires_grad_()
    ember.linalg.det(x).backward()
    assert x.grad.device == testdev


@pytest.mark.parametrize("fn,shape", [
    (ember.matmul, (2, 3, 3)), (ember.mm, (3, 3)), (ember.bmm, (2, 3, 3)), (ember.dot, (3,)),
    (ember.linalg.solve, (2, 3, 3)), (lambda x, y: ember.einsum("...ij,...jk", x, y), (3, 3)),
    (lambda x, y: ember.tensordot(x, y, 1), (3, 3)), (ember.linalg.cross, (2, 3)),
    (lambda x, y: ember.addmm(x, x, y), (3, 3))])
def test_mixing_devices_raises(fn, shape, testdev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        fn(rand(*shape), rand(*shape).to(testdev))
