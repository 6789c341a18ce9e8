"""Products and ember.linalg against PyTorch: values, dtypes, shapes, gradients (of
sign-invariant functions where the decomposition has a sign freedom) and error messages."""

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.parity
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)


def pair(*shape, dtype=np.float64, grad=False):
    """The same data as an ember tensor and a torch tensor."""
    a = RNG.standard_normal(shape).astype(dtype)
    e, t = ember.tensor(a), torch.tensor(a)
    if grad:
        e.requires_grad_()
        t.requires_grad_()
    return e, t


def well_conditioned_pair(*shape):
    a = RNG.standard_normal(shape) + 3 * np.eye(shape[-1])
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(e, t, **kw):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **kw)


def same_error(fe, ft):
    """Both raise; ember's message is PyTorch's (first line)."""
    with pytest.raises(RuntimeError) as te:
        ft()
    with pytest.raises(RuntimeError) as ee:
        fe()
    assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0]


def grads_match(fe, ft, e_inputs, t_inputs, **kw):
    fe(*e_inputs).sum().backward()
    ft(*t_inputs).sum().backward()
    for e, t in zip(e_inputs, t_inputs):
        assert (e.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **kw)


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
          ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_values_and_gradients(sa, sb):
    (ea, ta), (eb, tb) = pair(*sa, grad=True), pair(*sb, grad=True)
    close(ember.matmul(ea, eb), torch.matmul(ta, tb), rtol=1e-12)
    grads_match(ember.matmul, torch.matmul, (ea, eb), (ta, tb), rtol=1e-12)
    (fa, ga), (fb, gb) = pair(*sa, dtype=np.float32), pair(*sb, dtype=np.float32)
    close(fa @ fb, ga @ gb, rtol=1e-5, atol=1e-6)


BAD_MATMUL = [((2, 3), (4, 5)), ((3,), (4,)), ((3,), (4, 5)), ((2, 3), (4,)), ((2, 2, 3), (4, 5)),
              ((2, 2, 3), (2, 4, 5)), ((2, 3), (2, 4, 5)), ((2, 2, 3), (4,)),
              ((2, 2, 3), (3, 3, 4)), ((), (3,)), ((5, 2, 3), (2, 1, 4, 4))]


@pytest.mark.parametrize("sa,sb", BAD_MATMUL)
def test_matmul_errors(sa, sb):
    (ea, ta), (eb, tb) = pair(*sa), pair(*sb)
    same_error(lambda: ember.matmul(ea, eb), lambda: torch.matmul(ta, tb))


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((2, 2, 3), (2, 3, 4)), ((2, 2, 3), (3, 4))])
def test_matmul_dtype_errors(sa, sb):
    (ea, ta), (eb, tb) = pair(*sa, dtype=np.float32), pair(*sb)
    same_error(lambda: ember.matmul(ea, eb), lambda: torch.matmul(ta, tb))
    same_error(lambda: ember.matmul(eb.float(), ea.double()),
               lambda: torch.matmul(tb.float(), ta.double()))


def test_int_products_keep_int64():
    a = np.arange(6).reshape(2, 3)
    close(ember.tensor(a) @ ember.tensor(a.T), torch.tensor(a) @ torch.tensor(a.T))
    close(ember.trace(ember.tensor(a[:, :2], dtype=ember.int32)),
          torch.trace(torch.tensor(a[:, :2], dtype=torch.int32)))


@pytest.mark.parametrize("name,shapes", [
    ("mm", ((2, 3), (3, 4))), ("bmm", ((2, 2, 3), (2, 3, 4))), ("mv", ((2, 3), (3,))),
    ("dot", ((3,), (3,))), ("vdot", ((3,), (3,))), ("inner", ((2, 3), (4, 3))),
    ("outer", ((2,), (3,))), ("ger", ((2,), (3,))), ("kron", ((2, 3), (2, 2))),
    ("cross", ((4, 3), (4, 3))),
])
def test_products(name, shapes):
    ins = [pair(*s, grad=True) for s in shapes]
    es, ts = [e for e, _ in ins], [t for _, t in ins]
    kw = {"dim": -1} if name == "cross" else {}
    close(getattr(ember, name)(*es, **kw), getattr(torch, name)(*ts, **kw), rtol=1e-12)
    grads_match(lambda *x: getattr(ember, name)(*x, **kw),
                lambda *x: getattr(torch, name)(*x, **kw), es, ts, rtol=1e-12)


@pytest.mark.parametrize("name,shapes", [
    ("mm", ((2, 3), (3,))), ("mm", ((2, 3), (4, 5))), ("mm", ((3,), (3, 3))),
    ("bmm", ((2, 2, 3), (3, 3, 4))), ("bmm", ((2, 3), (2, 3, 4))), ("bmm", ((2, 2, 3), (3, 4))),
    ("mv", ((2, 3), (4,))), ("mv", ((2, 3), (3, 1))), ("mv", ((3,), (3,))),
    ("dot", ((3,), (4,))), ("dot", ((3, 1), (3,))), ("vdot", ((3,), (3, 1))),
    ("inner", ((2, 3), (4, 4))), ("outer", ((2, 2), (3,))), ("outer", ((2,), (2, 3))),
    ("trace", ((2, 3, 3),)), ("trace", ((3,),)),
])
def test_product_errors(name, shapes):
    ins = [pair(*s) for s in shapes]
    same_error(lambda: getattr(ember, name)(*[e for e, _ in ins]),
               lambda: getattr(torch, name)(*[t for _, t in ins]))


@pytest.mark.parametrize("name,shapes,kw", [
    ("addmm", ((2, 4), (2, 3), (3, 4)), {"beta": 0.5, "alpha": 2.0}),
    ("addmm", ((4,), (2, 3), (3, 4)), {}),
    ("addmv", ((2,), (2, 3), (3,)), {"beta": 2.0, "alpha": -1.0}),
    ("addmv", ((1,), (2, 3), (3,)), {}),
    ("baddbmm", ((2, 2, 4), (2, 2, 3), (2, 3, 4)), {"beta": 0.5, "alpha": 2.0}),
    ("baddbmm", ((4,), (2, 2, 3), (2, 3, 4)), {}),
    ("addbmm", ((2, 4), (5, 2, 3), (5, 3, 4)), {"alpha": 3.0}),
])
def test_add_products(name, shapes, kw):
    ins = [pair(*s, grad=True) for s in shapes]
    es, ts = [e for e, _ in ins], [t for _, t in ins]
    close(getattr(ember, name)(*es, **kw), getattr(torch, name)(*ts, **kw), rtol=1e-12)
    grads_match(lambda *x: getattr(ember, name)(*x, **kw),
                lambda *x: getattr(torch, name)(*x, **kw), es, ts, rtol=1e-12)


@pytest.mark.parametrize("name,shapes", [
    ("addmm", ((3, 4), (2, 3), (3, 4))), ("addmm", ((2, 4), (3,), (3, 4))),
    ("addmm", ((2, 4), (2, 3), (4, 4))), ("addmv", ((3,), (2, 3), (3,))),
    ("addmv", ((2,), (2, 3), (4,))), ("baddbmm", ((3, 2, 4), (2, 2, 3), (2, 3, 4))),
    ("baddbmm", ((2, 2, 4), (2, 2, 3), (2, 4, 4))), ("addbmm", ((2, 4), (5, 2, 3), (4, 3, 4))),
])
def test_add_product_errors(name, shapes):
    ins = [pair(*s) for s in shapes]
    same_error(lambda: getattr(ember, name)(*[e for e, _ in ins]),
               lambda: getattr(torch, name)(*[t for _, t in ins]))


EINSUM = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
          ("ii", [(3, 3)]), ("ba", [(2, 3)]), ("bA", [(2, 3)]), ("i,j->ij", [(2,), (3,)]),
          ("...ij,...jk", [(4, 2, 3), (3, 5)]), ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),
          ("ij...,jk->ik", [(2, 3, 4), (3, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
          ("iij,jk->kj", [(3, 3, 2), (2, 4)])]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum(eq, shapes):
    ins = [pair(*s, grad=True) for s in shapes]
    es, ts = [e for e, _ in ins], [t for _, t in ins]
    close(ember.einsum(eq, *es), torch.einsum(eq, *ts), rtol=1e-12)
    grads_match(lambda *x: ember.einsum(eq, *x), lambda *x: torch.einsum(eq, *x), es, ts,
                rtol=1e-12)


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (4, 5)]), ("ij,jk->ik", [(2, 3)]), ("ij->ji", [(2, 3), (3,)]),
    ("ijk,jk->ik", [(2, 3), (3, 5)]), ("ij,jk->il", [(2, 3), (3, 5)]),
    ("ij,jk->iik", [(2, 3), (3, 5)]), ("ii->i", [(2, 3)]), ("ij1,jk->ik", [(2, 3), (3, 5)]),
    ("ij,jk->ik,", [(2, 3), (3, 5)]), ("...ij,...jk", [(4, 2, 3), (2, 3, 5)]),
    ("i...j,jk->ik", [(2,), (3, 5)]), ("ij->i..", [(2, 3)]),
])
def test_einsum_errors(eq, shapes):
    ins = [pair(*s) for s in shapes]
    same_error(lambda: ember.einsum(eq, *[e for e, _ in ins]),
               lambda: torch.einsum(eq, *[t for _, t in ins]))


@pytest.mark.parametrize("dims,sa,sb", [(2, (2, 3, 4), (3, 4, 5)), (0, (2, 3), (4,)),
                                        (([1, 2], [0, 1]), (2, 3, 4), (3, 4, 5)),
                                        (([0], [1]), (4, 3, 2), (5, 4)), (1, (2, 3, 4), (3, 4)),
                                        (([1], [1]), (2, 3, 4), (3, 4, 5)),
                                        (([1, 2], [0]), (2, 3, 4), (3, 4, 5))])
def test_tensordot(dims, sa, sb):
    (ea, ta), (eb, tb) = pair(*sa, grad=True), pair(*sb, grad=True)
    try:
        expected = torch.tensordot(ta, tb, dims=dims)
    except RuntimeError:
        same_error(lambda: ember.tensordot(ea, eb, dims=dims),
                   lambda: torch.tensordot(ta, tb, dims=dims))
        return
    close(ember.tensordot(ea, eb, dims=dims), expected, rtol=1e-12)
    grads_match(lambda x, y: ember.tensordot(x, y, dims=dims),
                lambda x, y: torch.tensordot(x, y, dims=dims), (ea, eb), (ta, tb), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3, -1, -3])
def test_matrix_power(n):
    ea, ta = well_conditioned_pair(2, 3, 3)
    close(ember.matrix_power(ea, n), torch.matrix_power(ta, n), rtol=1e-10, atol=1e-12)
    if n:
        grads_match(lambda x: ember.matrix_power(x, n), lambda x: torch.matrix_power(x, n),
                    (ea,), (ta,), rtol=1e-8)


def test_multi_dot_chain_matmul_vecdot():
    ins = [pair(3, grad=True), pair(3, 10, grad=True), pair(10, 2, grad=True), pair(2, 4)]
    es, ts = [e for e, _ in ins], [t for _, t in ins]
    close(ember.linalg.multi_dot(es), torch.linalg.multi_dot(ts), rtol=1e-12)
    ember.ops.linalg._WARNED_ONCE.clear()  # PyTorch's deprecation warning: once a process
    with pytest.warns(UserWarning):
        close(ember.chain_matmul(*es[1:]), torch.chain_matmul(*ts[1:]), rtol=1e-12)
    (ex, tx), (ey, ty) = pair(2, 3), pair(3)
    close(ember.linalg.vecdot(ex, ey), torch.linalg.vecdot(tx, ty), rtol=1e-12)
    for shapes in ([(2, 3), (4, 5)], [(3,), (4, 5)], [(2, 3), (3, 3, 5), (5,)], [(3, 3)],
                   [(2, 3, 3), (3, 5)], [(2, 3), (3, 5), (4,)]):
        ins = [pair(*s) for s in shapes]
        same_error(lambda ins=ins: ember.linalg.multi_dot([e for e, _ in ins]),
                   lambda ins=ins: torch.linalg.multi_dot([t for _, t in ins]))


# -- ember.linalg ---------------------------------------------------------------------------

SINGULAR = [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]


@pytest.mark.parametrize("fn", ["inv", "det"])
def test_inv_det(fn):
    ea, ta = well_conditioned_pair(2, 3, 3)
    close(getattr(ember.linalg, fn)(ea), getattr(torch.linalg, fn)(ta), rtol=1e-12)
    grads_match(getattr(ember.linalg, fn), getattr(torch.linalg, fn), (ea,), (ta,), rtol=1e-10)
    f32 = np.eye(3, dtype=np.float32) * 2
    close(getattr(ember.linalg, fn)(ember.tensor(f32)), getattr(torch.linalg, fn)(
        torch.tensor(f32)))


def test_slogdet_logdet():
    ea, ta = well_conditioned_pair(2, 3, 3)
    es, ts = ember.linalg.slogdet(ea), torch.linalg.slogdet(ta)
    assert type(es).__name__ == type(ts).__name__ == "linalg_slogdet"
    close(es.sign, ts.sign)
    close(es.logabsdet, ts.logabsdet, rtol=1e-12)
    assert es.sign.requires_grad == ts.sign.requires_grad
    grads_match(lambda x: ember.linalg.slogdet(x).logabsdet,
                lambda x: torch.linalg.slogdet(x).logabsdet, (ea,), (ta,), rtol=1e-10)
    m = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert np.isnan(ember.logdet(ember.tensor(m)).item()) and torch.logdet(torch.tensor(m)).isnan()


def test_singular_matrix_errors():
    es, ts = ember.tensor(SINGULAR), torch.tensor(SINGULAR)
    batch = np.stack([np.eye(3), SINGULAR, SINGULAR])
    eb, tb = ember.tensor(batch), torch.tensor(batch)
    same_error(lambda: ember.linalg.inv(es), lambda: torch.linalg.inv(ts))
    same_error(lambda: ember.linalg.inv(eb), lambda: torch.linalg.inv(tb))
    same_error(lambda: ember.linalg.inv(ember.zeros(3, 3)), lambda: torch.linalg.inv(
        torch.zeros(3, 3)))
    same_error(lambda: ember.linalg.solve(es, ember.ones(3)),
               lambda: torch.linalg.solve(ts, torch.ones(3)))
    same_error(lambda: ember.linalg.solve(eb, ember.ones(3)),
               lambda: torch.linalg.solve(tb, torch.ones(3)))
    # zero up to float32's rounding of the LU factors: NumPy's LAPACK finds exactly 0 here,
    # PyTorch's BLAS 1.8e-7 on some processors' kernels
    np.testing.assert_allclose(ember.linalg.det(es).item(), torch.linalg.det(ts).item(),
                               atol=1e-6)
    # (at an exactly singular matrix PyTorch 2.13's det gradient is 0; ember's is the
    # adjugate, the true derivative: see tests/core/test_linalg.py)


@pytest.mark.parametrize("fn", ["inv", "det", "slogdet", "cholesky", "eigh", "svd", "qr",
                                "eigvalsh", "svdvals", "matrix_rank", "pinv"])
def test_shape_and_dtype_errors(fn):
    cases = [np.zeros(3), np.zeros((2, 3)), np.ones((2, 2), dtype=np.int64)]
    for a in cases:
        try:
            getattr(torch.linalg, fn)(torch.tensor(a))
        except RuntimeError:
            same_error(lambda a=a: getattr(ember.linalg, fn)(ember.tensor(a)),
                       lambda a=a: getattr(torch.linalg, fn)(torch.tensor(a)))
        else:
            getattr(ember.linalg, fn)(ember.tensor(a))


@pytest.mark.parametrize("b_shape", [(3,), (2, 3), (3, 2), (2, 3, 2), (4, 1, 3, 2)])
def test_solve(b_shape):
    ea, ta = well_conditioned_pair(2, 3, 3)
    (eb, tb) = pair(*b_shape, grad=True)
    close(ember.linalg.solve(ea, eb), torch.linalg.solve(ta, tb), rtol=1e-10)
    grads_match(ember.linalg.solve, torch.linalg.solve, (ea, eb), (ta, tb), rtol=1e-9)


def test_solve_left_false_and_errors():
    ea, ta = well_conditioned_pair(3, 3)
    eb, tb = pair(2, 3)
    close(ember.linalg.solve(ea, eb, left=False), torch.linalg.solve(ta, tb, left=False),
          rtol=1e-10)
    for sa, sb in [((3, 3), (4,)), ((3, 3), (4, 2)), ((2, 3), (2,)), ((2, 3, 3), (4, 3, 1)),
                   ((3,), (3,))]:
        (ea, ta), (eb, tb) = pair(*sa), pair(*sb)
        same_error(lambda ea=ea, eb=eb: ember.linalg.solve(ea, eb),
                   lambda ta=ta, tb=tb: torch.linalg.solve(ta, tb))
    same_error(lambda: ember.linalg.solve(ember.ones(3, 3), ember.ones(3, dtype=ember.float64)),
               lambda: torch.linalg.solve(torch.ones(3, 3), torch.ones(3, dtype=torch.float64)))


def test_cholesky():
    x = RNG.standard_normal((2, 3, 3))
    a = x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)
    ea, ta = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for upper in (False, True):
        close(ember.linalg.cholesky(ea, upper=upper), torch.linalg.cholesky(ta, upper=upper),
              rtol=1e-12)
    grads_match(ember.linalg.cholesky, torch.linalg.cholesky, (ea,), (ta,), rtol=1e-9)
    bad = [[1.0, 2], [2, 1]]
    same_error(lambda: ember.linalg.cholesky(ember.tensor(bad)),
               lambda: torch.linalg.cholesky(torch.tensor(bad)))
    bb = np.stack([np.eye(2), bad])
    same_error(lambda: ember.linalg.cholesky(ember.tensor(bb)),
               lambda: torch.linalg.cholesky(torch.tensor(bb)))


def _sign_fix(q, r):
    """Q, R with R's diagonal made positive (a sign-convention-free comparison)."""
    s = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return q * s[..., None, :], r * s[..., :, None]


@pytest.mark.parametrize("shape,mode", [((4, 3), "reduced"), ((3, 5), "reduced"),
                                        ((2, 3, 3), "complete"), ((4, 3), "r")])
def test_qr(shape, mode):
    ea, ta = pair(*shape, grad=True)
    eq, tq = ember.linalg.qr(ea, mode=mode), torch.linalg.qr(ta, mode=mode)
    assert type(eq).__name__ == type(tq).__name__
    assert tuple(eq.Q.shape) == tuple(tq.Q.shape) and tuple(eq.R.shape) == tuple(tq.R.shape)
    if mode == "r":
        np.testing.assert_allclose(np.abs(eq.R.detach().numpy()), np.abs(tq.R.detach().numpy()),
                                   atol=1e-12)
        return
    k = min(shape[-2:])
    eqf = _sign_fix(eq.Q.detach().numpy()[..., :k], eq.R.detach().numpy()[..., :k, :])
    tqf = _sign_fix(tq.Q.detach().numpy()[..., :k], tq.R.detach().numpy()[..., :k, :])
    for x, y in zip(eqf, tqf):
        np.testing.assert_allclose(x, y, atol=1e-12)
    if mode == "reduced":  # LAPACK is shared: the same signs, so gradients compare directly
        grads_match(lambda x: ember.linalg.qr(x).Q.sum() + ember.linalg.qr(x).R.sum(),
                    lambda x: torch.linalg.qr(x).Q.sum() + torch.linalg.qr(x).R.sum(),
                    (ea,), (ta,), atol=1e-9)


def test_eigh():
    x = RNG.standard_normal((2, 4, 4))
    a = x + np.swapaxes(x, -1, -2)
    ea, ta = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    el, tl = ember.linalg.eigh(ea), torch.linalg.eigh(ta)
    assert type(el).__name__ == type(tl).__name__ == "linalg_eigh"
    close(el.eigenvalues, tl.eigenvalues, rtol=1e-12)
    np.testing.assert_allclose(np.abs(el.eigenvectors.detach().numpy()),
                               np.abs(tl.eigenvectors.detach().numpy()), atol=1e-10)
    close(ember.linalg.eigvalsh(ea, UPLO="U"), torch.linalg.eigvalsh(ta, UPLO="U"), rtol=1e-12)
    w = RNG.standard_normal((2, 4))
    wt = torch.tensor(w)

    def ef(t):
        L, V = ember.linalg.eigh(t)
        return (L * ember.tensor(w)).sum() + (V ** 4).sum()

    def tf(t):
        L, V = torch.linalg.eigh(t)
        return (L * wt).sum() + (V ** 4).sum()

    grads_match(ef, tf, (ea,), (ta,), rtol=1e-8)
    same_error(lambda: ember.linalg.eigh(ember.tensor(a), UPLO="X"),
               lambda: torch.linalg.eigh(torch.tensor(a), UPLO="X"))


@pytest.mark.parametrize("shape,full", [((4, 3), False), ((3, 4), False), ((3, 3), True),
                                        ((2, 4, 3), True), ((2, 3, 4), True)])
def test_svd(shape, full):
    ea, ta = pair(*shape, grad=True)
    es, ts = ember.linalg.svd(ea, full_matrices=full), torch.linalg.svd(ta, full_matrices=full)
    assert type(es).__name__ == type(ts).__name__ == "linalg_svd"
    for e, t in zip(es, ts):
        assert tuple(e.shape) == tuple(t.shape)
    close(es.S, ts.S, rtol=1e-12)
    k = min(shape[-2:])

    def recon(r, mod):
        u = r.U[..., :k] if mod is torch else r.U.narrow(-1, 0, k)
        vh = r.Vh[..., :k, :] if mod is torch else r.Vh.narrow(-2, 0, k)
        return u.matmul(vh)  # sum_i u_i v_i^T: sign-invariant

    np.testing.assert_allclose(recon(es, ember).detach().numpy(),
                               recon(ts, torch).detach().numpy(), atol=1e-10)

    def ef(t):
        r = ember.linalg.svd(t, full_matrices=full)
        return r.S.sum() * 2 + (recon(r, ember) ** 2).sum() + (r.U.narrow(-1, 0, k) ** 4).sum()

    def tf(t):
        r = torch.linalg.svd(t, full_matrices=full)
        return r.S.sum() * 2 + (recon(r, torch) ** 2).sum() + (r.U[..., :k] ** 4).sum()

    grads_match(ef, tf, (ea,), (ta,), rtol=1e-7, atol=1e-10)
    close(ember.linalg.svdvals(ea), torch.linalg.svdvals(ta), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
def test_torch_namespace_svd_qr():
    ea, ta = pair(4, 3)
    es, ts = ember.svd(ea), torch.svd(ta)
    assert type(es).__name__ == type(ts).__name__ == "svd"
    assert [tuple(x.shape) for x in es] == [tuple(x.shape) for x in ts]
    es, ts = ember.svd(ea, some=False), torch.svd(ta, some=False)
    assert [tuple(x.shape) for x in es] == [tuple(x.shape) for x in ts]
    eq, tq = ember.qr(ea, some=False), torch.qr(ta, some=False)
    assert type(eq).__name__ == type(tq).__name__ == "qr"
    assert tuple(eq.Q.shape) == tuple(tq.Q.shape)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv_matrix_rank_lstsq(shape):
    ea, ta = pair(*shape, grad=True)
    close(ember.linalg.pinv(ea), torch.linalg.pinv(ta), atol=1e-10)
    grads_match(ember.linalg.pinv, torch.linalg.pinv, (ea,), (ta,), atol=1e-9)
    close(ember.linalg.matrix_rank(ea), torch.linalg.matrix_rank(ta))
    s = ember.tensor(SINGULAR)
    close(ember.linalg.matrix_rank(s), torch.linalg.matrix_rank(torch.tensor(SINGULAR)))
    close(ember.linalg.pinv(s), torch.linalg.pinv(torch.tensor(SINGULAR)), atol=1e-6)
    eb, tb = pair(*shape[:-1], 2)
    for driver in (None, "gelsd", "gelss"):
        er, tr = ember.linalg.lstsq(ea, eb, driver=driver), torch.linalg.lstsq(ta, tb,
                                                                                driver=driver)
        assert type(er).__name__ == type(tr).__name__
        close(er.solution, tr.solution, atol=1e-9)
        for e, t in zip(er[1:], tr[1:]):
            close(e, t, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, -1, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), ((), False)])
def test_vector_norm(ord, dim, keepdim):
    ex, tx = pair(2, 3, 4, grad=True)
    close(ember.linalg.vector_norm(ex, ord, dim, keepdim),
          torch.linalg.vector_norm(tx, ord, dim, keepdim), rtol=1e-12)
    grads_match(lambda x: ember.linalg.vector_norm(x, ord, dim, keepdim),
                lambda x: torch.linalg.vector_norm(x, ord, dim, keepdim), (ex,), (tx,),
                rtol=1e-10)


def test_norm_gradients_at_zero():
    for ord in (2, 1, 3, 0.5, float("inf")):
        ex = ember.zeros(2, 3, dtype=ember.float64, requires_grad=True)
        tx = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
        grads_match(lambda x, p=ord: ember.linalg.vector_norm(x, p, 1),
                    lambda x, p=ord: torch.linalg.vector_norm(x, p, 1), (ex,), (tx,))


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")])
@pytest.mark.parametrize("dim,keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False)])
def test_matrix_norm(ord, dim, keepdim):
    ex, tx = pair(2, 3, 4, grad=True)
    close(ember.linalg.matrix_norm(ex, ord, dim, keepdim),
          torch.linalg.matrix_norm(tx, ord, dim, keepdim), rtol=1e-12)
    grads_match(lambda x: ember.linalg.matrix_norm(x, ord, dim, keepdim),
                lambda x: torch.linalg.matrix_norm(x, ord, dim, keepdim), (ex,), (tx,),
                rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("args,kw", [
    ((), {}), (("fro",), {}), (("nuc",), {}), ((2,), {}), ((3,), {"dim": 1}),
    ((None,), {"dim": (0, 1), "keepdim": True}), ((float("inf"),), {}),
    ((3,), {}), (("abc",), {}), ((2,), {"dim": (0, 1, 2)}), (("fro",), {"dim": 1}),
])
def test_norm(args, kw):
    ex, tx = pair(3, 4)
    try:
        expected = torch.linalg.norm(tx, *args, **kw)
    except RuntimeError:
        same_error(lambda: ember.linalg.norm(ex, *args, **kw),
                   lambda: torch.linalg.norm(tx, *args, **kw))
        return
    close(ember.linalg.norm(ex, *args, **kw), expected, rtol=1e-12)


def test_norm_errors():
    for fe in [
        (lambda m: m.linalg.norm(m.ones(2, 3, 4), 3)),
        (lambda m: m.linalg.vector_norm(m.ones(0, 3), float("inf"))),
        (lambda m: m.linalg.vector_norm(m.ones(0), -1)),
        (lambda m: m.linalg.vector_norm(m.tensor([1, 2]))),
        (lambda m: m.linalg.matrix_norm(m.ones(3))),
        (lambda m: m.linalg.matrix_norm(m.ones(3, 4), dim=(0, 0))),
        (lambda m: m.linalg.matrix_norm(m.ones(3, 4), 3)),
        (lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.float64), dtype=m.float32)),
    ]:
        same_error(lambda fe=fe: fe(ember), lambda fe=fe: fe(torch))
    close(ember.linalg.matrix_norm(ember.ones(0, 3), 2), torch.linalg.matrix_norm(
        torch.ones(0, 3), 2))
