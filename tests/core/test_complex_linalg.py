"""Complex linear algebra: ``ember.linalg.eig``/``eigvals`` (real and complex inputs, always
complex results) and complex inputs to the common ``ember.linalg`` functions, forward and
autograd under PyTorch's conjugate Wirtinger convention: values and gradients against PyTorch
(complex128, 1e-10), complex128 gradchecks, PyTorch's errors. Also the ordering ops, which
refuse complex inputs with PyTorch's messages."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.opdb import entry
from ember.ops.registry import OPS

C64, C128 = ember.complex64, ember.complex128

# torch warns when the oracle builds a ComplexHalf for a float16 eig (it then raises)
pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")


def crand(*shape, seed=0, scale=1.0, shift=0.0):
    """A complex128 array of standard normal parts (``shift`` times the identity added)."""
    rng = np.random.default_rng(seed)
    a = scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    if shift:
        a = a + shift * np.eye(shape[-1])
    return a


def hpd(*shape, seed=0):
    """A Hermitian positive-definite complex128 array."""
    a = crand(*shape, seed=seed)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def t(a, requires_grad=False):
    return ember.tensor(a, dtype=C128 if np.iscomplexobj(a) else ember.float64,
                        requires_grad=requires_grad)


def host(x):
    return x.detach().cpu().numpy()


def hermitian(lib, A):
    """PyTorch's gradcheck_wrapper_hermitian_input: ops that read one triangle."""
    return (A + A.mH) / 2


# -- eig, eigvals --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, expected", [(ember.float32, C64), (ember.float64, C128),
                                             (C64, C64), (C128, C128)])
def test_eig_dtypes_and_decomposition(dtype, expected):
    a = crand(2, 3, 4, 4, seed=1) if dtype.is_complex else crand(2, 3, 4, 4, seed=1).real
    A = ember.tensor(a, dtype=dtype)
    res = ember.linalg.eig(A)
    assert type(res).__name__ == "linalg_eig" and res._fields == ("eigenvalues", "eigenvectors")
    L, V = res
    assert L.dtype is expected and V.dtype is expected
    assert L.shape == (2, 3, 4) and V.shape == (2, 3, 4, 4)
    tol = 1e-4 if expected is C64 else 1e-10
    ah = host(A).astype(np.complex128)
    np.testing.assert_allclose(ah @ host(V), host(V) * host(L)[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(host(V), axis=-2), 1, rtol=tol)
    w = ember.linalg.eigvals(A)
    assert w.dtype is expected
    np.testing.assert_allclose(host(w), host(L), rtol=tol, atol=tol)


def test_eig_matches_pytorch():
    torch = pytest.importorskip("torch")
    for a in (crand(3, 5, 5, seed=2).real, crand(2, 4, 4, seed=3)):
        L, V = ember.linalg.eig(t(a))
        tL, tV = torch.linalg.eig(torch.tensor(a))
        # the same LAPACK routine (geev): the same order and normalisation
        np.testing.assert_allclose(host(L), tL.numpy(), atol=1e-10)
        np.testing.assert_allclose(np.abs(host(V)), tV.abs().numpy(), atol=1e-10)
        np.testing.assert_allclose(host(ember.linalg.eigvals(t(a))),
                                   torch.linalg.eigvals(torch.tensor(a)).numpy(), atol=1e-10)


def test_eig_real_matrix_with_real_spectrum_is_still_complex():
    A = ember.tensor([[2.0, 1.0], [0.0, 3.0]])
    L, V = ember.linalg.eig(A)
    assert L.dtype is C64 and sorted(host(L).real.tolist()) == [2.0, 3.0]
    assert ember.linalg.eig(ember.zeros(0, 0)).eigenvalues.shape == (0,)
    L, V = ember.linalg.eig(ember.zeros(2, 0, 0, dtype=ember.float64))
    assert L.shape == (2, 0) and V.shape == (2, 0, 0) and V.dtype is C128


def _eig_loss(lib, A):
    """A loss of eig's outputs that does not depend on the phases of the eigenvectors."""
    L, V = lib.linalg.eig(A)
    W = (V * L.unsqueeze(-2)) @ lib.linalg.inv(V)  # = A
    return ((L.abs() ** 2).sum() + (V.abs() ** 3).sum() + W.real.sum() + (L * L).imag.sum()
            + lib.linalg.eigvals(A).imag.sum())


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_gradients_match_pytorch(complex_input):
    torch = pytest.importorskip("torch")
    a = crand(2, 4, 4, seed=4)
    if not complex_input:
        a = a.real
    ea, ta = t(a, True), torch.tensor(a, requires_grad=True)
    _eig_loss(ember, ea).backward()
    _eig_loss(torch, ta).backward()
    assert ea.grad.dtype is (C128 if complex_input else ember.float64)
    np.testing.assert_allclose(host(ea.grad), ta.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert ember.linalg.eig(ea)[0].grad_fn.name() == "LinalgEigBackward0"
    assert ember.linalg.eigvals(ea).grad_fn.name() == "LinalgEigBackward0"


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_gradcheck_gauge_invariant(complex_input):
    a = crand(3, 3, seed=5) if complex_input else crand(2, 3, 3, seed=5).real
    A = t(a, True)
    # PyTorch's OpInfo for linalg.eig: the eigenvalues, and |V| (invariant under V -> V e^{i phi})
    assert gradcheck(lambda A: ember.linalg.eig(A).eigenvalues, (A,))
    assert gradcheck(lambda A: ember.linalg.eig(A).eigenvectors.abs(), (A,))
    assert gradcheck(lambda A: tuple(o for o in (ember.linalg.eig(A)[0],
                                                 ember.linalg.eig(A)[1].abs())), (A,))
    assert gradcheck(ember.linalg.eigvals, (A,))


def test_eig_gauge_dependent_loss_raises():
    A = t(crand(3, 3, seed=6), True)
    V = ember.linalg.eig(A).eigenvectors
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
            "so it is ill-defined.")):
        V.imag.sum().backward()


def _same_error(ember_fn, torch_fn):
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        ember_fn()


@pytest.mark.parametrize("case", [
    lambda lib, f: f(lib.ones(2, 3)),
    lambda lib, f: f(lib.ones(3)),
    lambda lib, f: f(lib.ones(2, 2, dtype=lib.int64)),
    lambda lib, f: f(lib.ones(3, dtype=lib.int64)),
    lambda lib, f: f(lib.ones(2, 2, dtype=lib.bool)),
    lambda lib, f: f(lib.ones(2, 2, dtype=lib.float16)),
    lambda lib, f: f(lib.ones(2, 2, dtype=lib.bfloat16)),
    lambda lib, f: f(lib.ones(3, 2, dtype=lib.float16)),
])
@pytest.mark.parametrize("fn", ["eig", "eigvals"])
def test_eig_errors_match_pytorch(case, fn):
    torch = pytest.importorskip("torch")
    _same_error(lambda: case(ember, getattr(ember.linalg, fn)),
                lambda: case(torch, getattr(torch.linalg, fn)))


def test_eig_nonfinite_and_out():
    torch = pytest.importorskip("torch")
    bad = [[1.0, float("nan")], [0.0, 1.0]]
    _same_error(lambda: ember.linalg.eig(ember.tensor(bad)),
                lambda: torch.linalg.eig(torch.tensor(bad)))
    w = ember.linalg.eigvals(ember.tensor([bad, [[1.0, 2.0], [0.0, 3.0]]]))
    assert np.isnan(host(w)[0]).all() and sorted(host(w)[1].real.tolist()) == [1.0, 3.0]
    # out=: any complex dtype, never a real one (PyTorch's words)
    _same_error(lambda: ember.linalg.eig(ember.ones(2, 2), out=(ember.empty(0), ember.empty(0))),
                lambda: torch.linalg.eig(torch.ones(2, 2), out=(torch.empty(0), torch.empty(0))))
    _same_error(lambda: ember.linalg.eigvals(ember.ones(2, 2), out=ember.empty(0)),
                lambda: torch.linalg.eigvals(torch.ones(2, 2), out=torch.empty(0)))
    _same_error(lambda: ember.linalg.eig(ember.ones(2, 2), out=(ember.empty(0, dtype=C64),)),
                lambda: torch.linalg.eig(torch.ones(2, 2),
                                         out=(torch.empty(0, dtype=torch.cfloat),)))
    L, V = ember.empty(0, dtype=C128), ember.empty(0, dtype=C64)
    res = ember.linalg.eig(ember.tensor([[2.0, 0.0], [0.0, 5.0]]), out=(L, V))
    assert res.eigenvalues is L and res.eigenvectors is V
    assert L.dtype is C128 and host(L).tolist() == [2, 5] and V.shape == (2, 2)
    o = ember.empty(0, dtype=C128)
    assert ember.linalg.eigvals(ember.eye(2), out=o) is o and host(o).tolist() == [1, 1]


def test_removed_torch_eig_still_raises():
    with pytest.raises(RuntimeError, match="ember.linalg.eig"):
        ember.eig(ember.ones(2, 2))


_EIG_ENTRIES = {"linalg_eig": "eig", "linalg_eigvals": "eigvals", "linalg_eig_complex": "eig"}


@pytest.mark.parametrize("name", sorted(_EIG_ENTRIES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eig_opdb_samples_forward(name, dtype):
    e = entry(name)
    fn = getattr(ember.linalg, _EIG_ENTRIES[name])
    tol = 1e-4 if dtype == "float32" else 1e-10
    n = 0
    for s in e.samples(None, dtype):
        out = s.call(fn)
        a = host(s.input)
        L = host(out if name == "linalg_eigvals" else out.eigenvalues)
        assert L.dtype == np.result_type(a.dtype, np.complex64), s
        if e.ref is not None:
            np.testing.assert_allclose(L, e.ref(a), rtol=tol, atol=tol, err_msg=str(s))
        if name != "linalg_eigvals":
            V = host(out.eigenvectors)
            scale = max(1.0, float(np.abs(a).max(initial=0)))
            np.testing.assert_allclose(a @ V, V * L[..., None, :], atol=tol * 10 * scale,
                                       err_msg=str(s))
        n += 1
    assert n


@pytest.mark.parametrize("name", sorted(_EIG_ENTRIES))
def test_eig_opdb_samples_gradcheck(name):
    e = entry(name)
    fn = getattr(ember.linalg, _EIG_ENTRIES[name])
    checked = 0
    for s in e.samples(None, "float64", requires_grad=True):
        if s.input.numel() == 0:
            continue

        def f(A, s=s):
            out = fn(A, *s.args, **s.kwargs)
            return e.output(out) if e.output is not None else out

        assert gradcheck(f, (s.input,)), s
        checked += 1
    assert checked


#: registered ``torch.<name>`` linalg ops whose opdb samples, made complex, are gradchecked
#: in complex128 (cholesky is not: its samples cannot be wrapped to stay Hermitian)
COMPLEX_LINALG_OPS = ["inverse", "det", "slogdet", "logdet", "matrix_exp", "matrix_power",
                      "pinverse", "qr", "svd", "cross", "triangular_solve", "lu_solve",
                      "cholesky_solve", "cholesky_inverse", "lu", "lu_unpack", "trace", "kron"]


def _complexify(s, rng):
    def f(x):
        if x.dtype is not ember.float64:
            return x
        im = rng.uniform(-0.5, 0.5, size=tuple(x.shape))
        c = ember.tensor(host(x) + 1j * im, dtype=C128, device=x.device)
        return c.requires_grad_(x.requires_grad)

    return s.map_tensors(f)


@pytest.mark.parametrize("name", COMPLEX_LINALG_OPS)
def test_opdb_samples_gradcheck_complex128(name):
    e, op = entry(name), OPS[name].fn
    rng = np.random.default_rng(len(name))
    checked = 0
    for s in e.samples(None, "float64", requires_grad=True):
        s = _complexify(s, rng)
        leaves = [x for x in s.tensors() if x.requires_grad]
        if not leaves or any(x.numel() == 0 for x in leaves):
            continue

        def f(*new, s=s, leaves=leaves):
            index = {id(x): i for i, x in enumerate(leaves)}
            out = s.map_tensors(lambda x: new[index[id(x)]] if id(x) in index else x).call(op)
            if e.output is not None:
                out = e.output(out)
            if isinstance(out, (tuple, list)):
                return tuple(o for o in out if isinstance(o, ember.Tensor) and o.requires_grad)
            return out

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # cross without dim: deprecated
            assert gradcheck(f, tuple(leaves), atol=1e-5, rtol=1e-3), f"{name} {s}"
        checked += 1
    assert checked, name


# -- complex inputs to ember.linalg: values and gradients against PyTorch -----------------------

def _wsum(lib, outs, seed):
    """A real loss of ``outs`` that reads real and imaginary parts: sum Re(W conj(o)) for
    fixed random complex weights W."""
    total = 0
    for i, o in enumerate(outs):
        if o is None or not (o.is_complex() or o.is_floating_point()):
            continue
        w = crand(*o.shape, seed=seed + i) if o.shape else crand(1, seed=seed + i)[0]
        W = lib.tensor(w) if o.is_complex() else lib.tensor(w.real)
        total = total + (W * o.conj()).real.sum() if o.is_complex() else total + (W * o).sum()
    return total


def _svd_loss(lib, A):
    U, S, Vh = lib.linalg.svd(A, full_matrices=False)
    return (S * lib.arange(1, S.shape[-1] + 1)).sum() + (U.abs() ** 2 * 1.5).sum() \
        + (Vh.abs() ** 3).sum() + ((U * S.unsqueeze(-2)) @ Vh).real.sum()


def _eigh_loss(lib, A):
    L, V = lib.linalg.eigh(hermitian(lib, A))
    return (L * lib.arange(1, L.shape[-1] + 1)).sum() + (V.abs() ** 3).sum()


#: name -> (inputs, the ember/torch function of (lib, *inputs) returning outputs or a loss)
ORACLE = {
    "inv": ((crand(2, 3, 3, shift=3),), lambda lib, A: lib.linalg.inv(A)),
    "inv_ex": ((crand(3, 3, shift=3),), lambda lib, A: lib.linalg.inv_ex(A).inverse),
    "det": ((crand(2, 3, 3),), lambda lib, A: lib.linalg.det(A)),
    "slogdet": ((crand(2, 3, 3),), lambda lib, A: tuple(lib.linalg.slogdet(A))),
    "logdet": ((hpd(3, 3),), lambda lib, A: lib.logdet(hermitian(lib, A))),
    "solve": ((crand(2, 3, 3, shift=3), crand(2, 3, 2, seed=1)),
              lambda lib, A, B: lib.linalg.solve(A, B)),
    "solve_vector": ((crand(3, 3, shift=3), crand(3, seed=1)),
                     lambda lib, A, B: lib.linalg.solve(A, B)),
    "solve_left_false": ((crand(3, 3, shift=3), crand(2, 3, seed=1)),
                         lambda lib, A, B: lib.linalg.solve(A, B, left=False)),
    "cholesky": ((hpd(2, 3, 3),), lambda lib, A: lib.linalg.cholesky(hermitian(lib, A))),
    "cholesky_upper": ((hpd(3, 3),),
                       lambda lib, A: lib.linalg.cholesky(hermitian(lib, A), upper=True)),
    "qr": ((crand(2, 4, 3),), lambda lib, A: tuple(lib.linalg.qr(A))),
    "qr_wide": ((crand(3, 5),), lambda lib, A: tuple(lib.linalg.qr(A))),
    "qr_square": ((crand(3, 3),), lambda lib, A: tuple(lib.linalg.qr(A))),
    "eigh": ((crand(2, 4, 4),), _eigh_loss),
    "eigvalsh": ((crand(4, 4),), lambda lib, A: lib.linalg.eigvalsh(hermitian(lib, A))),
    "svd": ((crand(4, 4),), _svd_loss),
    "svd_tall": ((crand(2, 5, 3),), _svd_loss),
    "svd_wide": ((crand(3, 5),), _svd_loss),
    "svdvals": ((crand(4, 3),), lambda lib, A: lib.linalg.svdvals(A)),
    "pinv": ((crand(4, 3),), lambda lib, A: lib.linalg.pinv(A)),
    "pinv_wide": ((crand(2, 5),), lambda lib, A: lib.linalg.pinv(A)),
    "pinv_hermitian": ((hpd(3, 3),),
                       lambda lib, A: lib.linalg.pinv(hermitian(lib, A), hermitian=True)),
    "lstsq": ((crand(5, 3), crand(5, 2, seed=1)),
              lambda lib, A, B: lib.linalg.lstsq(A, B, driver="gelsd")[:2]),
    "matrix_exp": ((crand(2, 3, 3, scale=0.5),), lambda lib, A: lib.linalg.matrix_exp(A)),
    "matrix_power": ((crand(3, 3, shift=2),), lambda lib, A: lib.linalg.matrix_power(A, -2)),
    "vector_norm": ((crand(3, 4),), lambda lib, A: tuple(
        lib.linalg.vector_norm(A, o, -1) for o in (2, 1, 3, 0.5, float("inf")))),
    "matrix_norm": ((crand(2, 3, 4),), lambda lib, A: tuple(
        lib.linalg.matrix_norm(A, o) for o in ("fro", "nuc", 2, -2, 1, float("inf")))),
    "norm": ((crand(3, 4),), lambda lib, A: (lib.linalg.norm(A), lib.linalg.norm(A, 2),
                                             lib.linalg.norm(A[0], 3))),
    "cross": ((crand(2, 3), crand(2, 3, seed=1)), lambda lib, a, b: lib.linalg.cross(a, b)),
    "vecdot": ((crand(2, 3), crand(2, 3, seed=1)), lambda lib, a, b: lib.linalg.vecdot(a, b)),
    "lu_factor": ((crand(2, 4, 4),), lambda lib, A: tuple(lib.linalg.lu_factor(A))),
    "lu_wide": ((crand(3, 5),), lambda lib, A: tuple(lib.linalg.lu(A))),
    "lu_tall": ((crand(2, 5, 3),), lambda lib, A: tuple(lib.linalg.lu(A))),
    "lu_solve": ((crand(2, 4, 4), crand(2, 4, 2, seed=1)), lambda lib, A, B: tuple(
        lib.linalg.lu_solve(*lib.linalg.lu_factor(A), B if left else B.mT, left=left,
                            adjoint=adjoint)
        for left in (True, False) for adjoint in (False, True))),
    "solve_triangular": ((crand(3, 3, shift=3), crand(3, 2, seed=1)), lambda lib, A, B: (
        lib.linalg.solve_triangular(A, B, upper=True),
        lib.linalg.solve_triangular(A, B.mT, upper=False, left=False, unitriangular=True))),
    "solve_ex": ((crand(3, 3, shift=3), crand(3, 2, seed=1)),
                 lambda lib, A, B: lib.linalg.solve_ex(A, B).result),
    "cholesky_solve": ((hpd(2, 3, 3), crand(2, 3, 2, seed=1)), lambda lib, A, B: tuple(
        lib.cholesky_solve(B, lib.linalg.cholesky(hermitian(lib, A), upper=u), upper=u)
        for u in (False, True))),
    "cholesky_inverse": ((hpd(3, 3),), lambda lib, A: tuple(
        lib.cholesky_inverse(lib.linalg.cholesky(hermitian(lib, A), upper=u), upper=u)
        for u in (False, True))),
    "vander": ((crand(4),), lambda lib, x: lib.linalg.vander(x)),
    "cond": ((crand(3, 3),), lambda lib, A: (lib.linalg.cond(A), lib.linalg.cond(A, -2))),
    "multi_dot": ((crand(3, 3), crand(3, 2, seed=1)),
                  lambda lib, A, B: lib.linalg.multi_dot([A, A, B])),
    "inverse": ((crand(3, 3, shift=3),), lambda lib, A: lib.inverse(A)),
    "det_method": ((crand(3, 3),), lambda lib, A: A.det()),
}


def _run(lib, name, arrays):
    fn = ORACLE[name][1]
    if lib is ember:
        xs = [t(a, True) for a in arrays]
    else:
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    loss = out if fn in (_svd_loss, _eigh_loss) else _wsum(lib, outs, 7)
    grads = lib.autograd.grad(loss, xs)
    return [o.detach() for o in outs], grads


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_values_and_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    arrays = ORACLE[name][0]
    ours, our_grads = _run(ember, name, arrays)
    theirs, their_grads = _run(torch, name, arrays)
    for o, x in zip(ours, theirs):
        assert str(o.dtype)[6:] == str(x.dtype)[6:], (name, o.dtype, x.dtype)
        np.testing.assert_allclose(host(o), x.resolve_conj().numpy(), rtol=1e-10, atol=1e-10,
                                   err_msg=name)
    for g, x in zip(our_grads, their_grads):
        assert g.dtype is C128
        np.testing.assert_allclose(host(g), x.resolve_conj().numpy(), rtol=1e-9, atol=1e-10,
                                   err_msg=name)


#: name -> (input arrays, function of ember tensors) for complex128 gradchecks
GRADCHECK = {
    "inv": ((crand(2, 3, 3, shift=3),), ember.linalg.inv),
    "det": ((crand(2, 3, 3),), ember.linalg.det),
    "slogdet": ((crand(3, 3),), lambda A: tuple(ember.linalg.slogdet(A))),
    "solve": ((crand(3, 3, shift=3), crand(3, 2, seed=1)), ember.linalg.solve),
    "cholesky": ((hpd(2, 3, 3),), lambda A: ember.linalg.cholesky(hermitian(ember, A))),
    "cholesky_upper": ((hpd(3, 3),),
                       lambda A: ember.linalg.cholesky(hermitian(ember, A), upper=True)),
    "qr": ((crand(4, 3),), lambda A: tuple(ember.linalg.qr(A))),
    "qr_wide": ((crand(3, 4),), lambda A: tuple(ember.linalg.qr(A))),
    "eigh": ((crand(3, 3),), lambda A: (ember.linalg.eigh(hermitian(ember, A))[0],
                                        ember.linalg.eigh(hermitian(ember, A))[1].abs())),
    "eigvalsh": ((crand(3, 3),), lambda A: ember.linalg.eigvalsh(hermitian(ember, A))),
    "svd": ((crand(4, 3),), lambda A: _svd_loss(ember, A)),
    "svd_wide": ((crand(2, 4),), lambda A: _svd_loss(ember, A)),
    "svdvals": ((crand(3, 3),), ember.linalg.svdvals),
    "pinv": ((crand(3, 2),), ember.linalg.pinv),
    "matrix_exp": ((crand(3, 3, scale=0.5),), ember.linalg.matrix_exp),
    "vector_norm": ((crand(2, 3),), lambda A: tuple(
        ember.linalg.vector_norm(A, o, -1) for o in (2, 1, 3, 0.5, float("inf")))),
    "matrix_norm": ((crand(3, 3),), lambda A: tuple(
        ember.linalg.matrix_norm(A, o) for o in ("fro", "nuc", 2, 1, float("inf")))),
    "cross": ((crand(2, 3), crand(2, 3, seed=1)), ember.linalg.cross),
    "lu_factor": ((crand(3, 3),), lambda A: ember.linalg.lu_factor(A).LU),
    "lu": ((crand(3, 4),), lambda A: tuple(ember.linalg.lu(A))[1:]),
    "lu_solve": ((crand(3, 3), crand(3, 2, seed=1)), lambda A, B: ember.linalg.lu_solve(
        *ember.linalg.lu_factor(A), B, adjoint=True)),
    "solve_triangular": ((crand(3, 3, shift=3), crand(2, 3, seed=1)), lambda A, B:
                         ember.linalg.solve_triangular(A, B, upper=False, left=False)),
    "vecdot": ((crand(2, 3), crand(2, 3, seed=1)), ember.linalg.vecdot),
    "cholesky_solve": ((hpd(3, 3), crand(3, 2, seed=1)), lambda A, B: ember.cholesky_solve(
        B, ember.linalg.cholesky(hermitian(ember, A)))),
    # (PyTorch's own backward of cond for these orders fails: an in-place write of inv_ex's
    # output)
    "cond": ((crand(3, 3),), lambda A: tuple(ember.linalg.cond(A, p)
                                             for p in (None, "fro", "nuc", 1, float("inf")))),
    "cholesky_inverse": ((hpd(3, 3),), lambda A: ember.cholesky_inverse(
        ember.linalg.cholesky(hermitian(ember, A), upper=True), upper=True)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck_complex128(name):
    arrays, fn = GRADCHECK[name]
    assert gradcheck(fn, tuple(t(a, True) for a in arrays))


@pytest.mark.parametrize("name, fn", [
    ("inv", ember.linalg.inv),
    ("solve", lambda A: ember.linalg.solve(A, A.sum(-1))),
    ("cholesky", lambda A: ember.linalg.cholesky(A @ A.mH)),
    ("qr", lambda A: ember.linalg.qr(A).R),
    ("matrix_exp", lambda A: ember.linalg.matrix_exp(A * 0.3)),
    ("lu", lambda A: ember.linalg.lu(A).U),
    ("eigvals", ember.linalg.eigvals),
    ("det", ember.linalg.det),
])
def test_gradgradcheck_complex128(name, fn):
    A = t(crand(3, 3, seed=9, shift=2), True)
    out = fn(A.detach())
    # complex grad_outputs (gradgradcheck's default ones are real)
    go = t(crand(*out.shape, seed=10) if out.shape else crand(1, seed=10)[0], True)
    assert gradgradcheck(fn, (A,), (go,))


def test_real_inputs_keep_real_gradients():
    A = t(crand(3, 3, shift=3).real, True)
    for fn in (ember.linalg.inv, ember.linalg.det, lambda A: ember.linalg.svd(A)[1],
               lambda A: ember.linalg.qr(A)[1]):
        (g,) = ember.autograd.grad(fn(A).sum(), (A,))
        assert g.dtype is ember.float64


def test_svd_phase_dependent_loss_raises():
    A = t(crand(3, 3, seed=8), True)
    U = ember.linalg.svd(A).U
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors in the complex "
                                           "case are specified up to multiplication by e\\^"):
        U.imag.sum().backward()


def test_complex_forward_results():
    a = crand(3, 3, shift=3)
    A = t(a)
    U = ember.linalg.cholesky(t(hpd(3, 3)), upper=True)
    np.testing.assert_allclose(np.conj(host(U)).T @ host(U), hpd(3, 3), rtol=1e-12)
    s, logabs = ember.linalg.slogdet(A)
    assert s.dtype is C128 and logabs.dtype is ember.float64
    assert ember.linalg.vector_norm(A).dtype is ember.float64
    assert ember.linalg.matrix_norm(t(a).to(C64)).dtype is ember.float32
    np.testing.assert_allclose(host(ember.linalg.pinv(A)), np.linalg.pinv(a), rtol=1e-10)
    assert host(ember.linalg.matrix_rank(A)) == 3
    np.testing.assert_allclose(host(ember.linalg.vecdot(A, A)),
                               (np.conj(a) * a).sum(-1), rtol=1e-12)


# -- ordering ops refuse complex inputs ----------------------------------------------------------

ORDERING = {
    "max": lambda lib, x: lib.max(x),
    "max_dim": lambda lib, x: lib.max(x, 0),
    "max_binary": lambda lib, x: lib.max(x, x),
    "min": lambda lib, x: lib.min(x),
    "min_dim": lambda lib, x: lib.min(x, 0),
    "amax": lambda lib, x: lib.amax(x),
    "amin": lambda lib, x: lib.amin(x, 0),
    "aminmax": lambda lib, x: lib.aminmax(x),
    "argmax": lambda lib, x: lib.argmax(x),
    "argmin": lambda lib, x: lib.argmin(x, 0),
    "sort": lambda lib, x: lib.sort(x),
    "argsort": lambda lib, x: lib.argsort(x),
    "msort": lambda lib, x: lib.msort(x),
    "topk": lambda lib, x: lib.topk(x, 1),
    "kthvalue": lambda lib, x: lib.kthvalue(x, 1),
    "median": lambda lib, x: lib.median(x),
    "median_dim": lambda lib, x: lib.median(x, 0),
    "nanmedian": lambda lib, x: lib.nanmedian(x),
    "cummax": lambda lib, x: lib.cummax(x, 0),
    "cummin": lambda lib, x: lib.cummin(x, 0),
    "clamp": lambda lib, x: lib.clamp(x, 0, 1),
    "clamp_min": lambda lib, x: lib.clamp_min(x, 0),
    "maximum": lambda lib, x: lib.maximum(x, x),
    "minimum": lambda lib, x: lib.minimum(x, x),
    "fmax": lambda lib, x: lib.fmax(x, x),
    "gt": lambda lib, x: lib.gt(x, x),
    "lt": lambda lib, x: x < x,
    "ge": lambda lib, x: lib.ge(x, 0),
    "le": lambda lib, x: x <= 1,
}


@pytest.mark.parametrize("name", sorted(ORDERING))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_ordering_ops_refuse_complex(name, dtype):
    torch = pytest.importorskip("torch")
    fn = ORDERING[name]
    x = [[1 + 2j, 3 - 1j], [0.5j, -1 + 0j]]
    # PyTorch's CPU kernels' words (a GPU kernel is named "..._cuda")
    _same_error(lambda: fn(ember, ember.tensor(x, dtype=getattr(ember, dtype), device="cpu")),
                lambda: fn(torch, torch.tensor(x, dtype=getattr(torch, dtype))))
    with pytest.raises((RuntimeError, NotImplementedError), match="complex|Complex"):
        fn(ember, ember.tensor(x, dtype=getattr(ember, dtype)))  # the default device


def test_ordering_ops_still_work_on_real():
    x = ember.tensor([[3.0, 1.0], [2.0, 4.0]])
    assert ember.max(x).item() == 4.0 and ember.sort(x).values.tolist() == [[1, 3], [2, 4]]
    assert (x > 2).tolist() == [[True, False], [False, True]]
    assert ember.clamp(x, 2, 3).tolist() == [[3, 2], [2, 3]]
    z = ember.tensor([1 + 1j, 2j])
    assert (z == z).tolist() == [True, True] and (z != 0).tolist() == [True, True]


# -- Householder reflectors (geqrf, householder_product, ormqr) and LDL, complex ----------------

def _sym(a, herm):
    """``a`` made complex symmetric, or Hermitian with ``herm``."""
    return a + (np.conj(np.swapaxes(a, -1, -2)) if herm else np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (4, 1)])
def test_geqrf_complex_matches_pytorch(shape):
    torch = pytest.importorskip("torch")
    a = crand(*shape, seed=21)
    r = ember.geqrf(t(a))
    x = torch.geqrf(torch.tensor(a))
    assert r.a.dtype is C128 and r.tau.dtype is C128
    # the same algorithm as LAPACK's zgeqr2 (zlarfg's conventions): equal outputs
    np.testing.assert_allclose(host(r.a), x.a.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(r.tau), x.tau.numpy(), rtol=1e-10, atol=1e-12)
    # R's diagonal is real (beta), and Q R rebuilds A
    k = min(shape[-2:])
    assert np.all(np.diagonal(host(r.a), axis1=-2, axis2=-1).imag == 0)
    if shape[-2] >= shape[-1]:
        Q = ember.linalg.householder_product(r.a, r.tau)
        np.testing.assert_allclose(host(Q) @ np.triu(host(r.a))[..., :k, :], a, atol=1e-12)
    r64 = ember.geqrf(t(a).to(C64))
    x64 = torch.geqrf(torch.tensor(a).to(torch.complex64))
    assert r64.a.dtype is C64 and r64.tau.dtype is C64
    np.testing.assert_allclose(host(r64.a), x64.a.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(host(r64.tau), x64.tau.numpy(), rtol=1e-4, atol=1e-5)


def test_geqrf_complex_reduced_columns():
    torch = pytest.importorskip("torch")
    # a reduced column with a complex alpha still reflects (tau != 0, beta real); a real one
    # does not (tau = 0); a zero matrix neither
    for a in ([[1j, 1], [0, 2]], [[2 + 0j, 1], [0, 1j]], [[0j, 0], [0, 0]], [[-1 + 1j, 3]]):
        a = np.array(a, dtype=np.complex128)
        r, x = ember.geqrf(t(a)), torch.geqrf(torch.tensor(a))
        np.testing.assert_allclose(host(r.a), x.a.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(host(r.tau), x.tau.numpy(), rtol=1e-12, atol=1e-15)


def test_geqrf_complex_autograd_refused_like_pytorch():
    torch = pytest.importorskip("torch")
    a = crand(3, 2, seed=22)
    _same_error(lambda: ember.geqrf(t(a, True)),
                lambda: torch.geqrf(torch.tensor(a, requires_grad=True)))
    with ember.no_grad():
        assert not ember.geqrf(t(a, True)).a.requires_grad
    out = ember.geqrf(t(a.real, True)).a  # real: recorded, and backward refuses, as before
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        out.sum().backward()


def _reflectors(torch, shape, seed):
    """geqrf's outputs for a random complex matrix, as (numpy a, numpy tau)."""
    a, tau = torch.geqrf(torch.tensor(crand(*shape, seed=seed)))
    return a.numpy(), tau.numpy()


#: name -> (shapes of the extra inputs, the ember/torch function of (lib, a, tau, *extra))
REFLECTOR_ORACLE = {
    "householder_product": ((), lambda lib, a, tau: lib.linalg.householder_product(a, tau)),
    "householder_product_k": ((), lambda lib, a, tau: lib.linalg.householder_product(
        a, tau[..., :2])),
    "orgqr": ((), lambda lib, a, tau: lib.orgqr(a, tau)),
    "ormqr_left": (((2, 5, 2),), lambda lib, a, tau, c: lib.ormqr(a, tau, c)),
    "ormqr_left_transpose": (((2, 5, 2),), lambda lib, a, tau, c: lib.ormqr(a, tau, c, True,
                                                                              True)),
    "ormqr_right": (((2, 2, 5),), lambda lib, a, tau, c: lib.ormqr(a, tau, c, False)),
    "ormqr_right_transpose": (((2, 2, 5),), lambda lib, a, tau, c: lib.ormqr(
        a, tau, c, left=False, transpose=True)),
}


@pytest.mark.parametrize("name", sorted(REFLECTOR_ORACLE))
def test_reflectors_complex_values_and_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    extra, fn = REFLECTOR_ORACLE[name]
    arrays = _reflectors(torch, (2, 5, 3), 23) + tuple(
        crand(*s, seed=24 + i) for i, s in enumerate(extra))
    results = []
    for lib in (ember, torch):
        xs = [t(a, True) if lib is ember else torch.tensor(a, requires_grad=True)
              for a in arrays]
        out = fn(lib, *xs)
        grads = lib.autograd.grad(_wsum(lib, (out,), 25), xs)
        results.append((out.detach(), grads))
    (ours, our_grads), (theirs, their_grads) = results
    assert ours.dtype is C128
    np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-10, atol=1e-12)
    for g, x in zip(our_grads, their_grads):
        assert g.dtype is C128
        np.testing.assert_allclose(host(g), x.numpy(), rtol=1e-9, atol=1e-10)


def test_reflectors_complex_gradcheck():
    torch = pytest.importorskip("torch")
    a, tau = _reflectors(torch, (4, 3), 26)
    c, cr = crand(4, 2, seed=27), crand(2, 4, seed=28)
    assert gradcheck(ember.linalg.householder_product, (t(a, True), t(tau, True)))
    for transpose in (False, True):
        assert gradcheck(lambda a, tau, c, tr=transpose: ember.ormqr(a, tau, c, True, tr),
                         (t(a, True), t(tau, True), t(c, True)))
        assert gradcheck(lambda a, tau, c, tr=transpose: ember.ormqr(a, tau, c, False, tr),
                         (t(a, True), t(tau, True), t(cr, True)))


def test_reflectors_complex64_and_unitary():
    torch = pytest.importorskip("torch")
    a, tau = _reflectors(torch, (6, 4), 30)
    Q = ember.linalg.householder_product(t(a).to(C64), t(tau).to(C64))
    assert Q.dtype is C64
    np.testing.assert_allclose(np.conj(host(Q)).T @ host(Q), np.eye(4), atol=1e-5)
    c = crand(6, 3, seed=31)
    # Q^H (Q C) = C: ormqr's transpose is the conjugate transpose
    QC = ember.ormqr(t(a), t(tau), t(c))
    np.testing.assert_allclose(host(ember.ormqr(t(a), t(tau), QC, True, True)), c, atol=1e-12)


@pytest.mark.parametrize("case", [
    lambda lib, a, tau, c: lib.linalg.householder_product(a, tau.real),
    lambda lib, a, tau, c: lib.linalg.householder_product(a.real, tau),
    lambda lib, a, tau, c: lib.ormqr(a, tau, c.real),
    lambda lib, a, tau, c: lib.ormqr(a, tau.real, c),
    lambda lib, a, tau, c: lib.ormqr(a.to(lib.complex64), tau.to(lib.complex64), c),
    lambda lib, a, tau, c: lib.ormqr(a, tau, c[..., :4, :]),
])
def test_reflectors_complex_errors_match_pytorch(case):
    torch = pytest.importorskip("torch")
    a, tau = _reflectors(torch, (5, 3), 32)
    c = crand(5, 2, seed=33)
    _same_error(lambda: case(ember, t(a), t(tau), t(c)),
                lambda: case(torch, *(torch.tensor(x) for x in (a, tau, c))))


def _ldl_input(shape, herm, seed, small_diagonal=False):
    """A complex symmetric / Hermitian matrix with junk above the diagonal (and, Hermitian,
    imaginary parts on it), both of which ldl_factor ignores."""
    a = _sym(crand(*shape, seed=seed), herm)
    if small_diagonal:  # forces 2x2 pivots
        idx = np.arange(shape[-1])
        a[..., idx, idx] *= 1e-2
    junk = np.triu(crand(*shape, seed=seed + 100), 1)
    if herm:
        junk = junk + 1j * np.eye(shape[-1])
    return a, a + junk


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("shape, small", [((4, 4), False), ((3, 6, 6), False),
                                          ((3, 6, 6), True), ((2, 1, 1), False),
                                          ((7, 7), True)])
def test_ldl_complex_matches_pytorch(hermitian, shape, small):
    torch = pytest.importorskip("torch")
    a, given = _ldl_input(shape, hermitian, 40 + shape[-1], small)
    LD, piv = ember.linalg.ldl_factor(t(given), hermitian=hermitian)
    tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(given), hermitian=hermitian)
    assert LD.dtype is C128 and piv.dtype is ember.int32
    # the same algorithm as LAPACK's zsytf2 / zhetf2: the same pivots and factors
    assert host(piv).tolist() == tpiv.numpy().tolist()
    np.testing.assert_allclose(host(LD), tLD.numpy(), rtol=1e-10, atol=1e-12)
    if small:
        assert (host(piv) < 0).any()  # 2x2 blocks were exercised
    if hermitian:
        assert np.all(np.diagonal(host(LD), axis1=-2, axis2=-1).imag == 0)
    b = crand(*shape[:-1], 3, seed=50)
    x = ember.linalg.ldl_solve(LD, piv, t(b), hermitian=hermitian)
    tx = torch.linalg.ldl_solve(tLD, tpiv, torch.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(host(x), tx.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a @ host(x), b, atol=1e-10)
    r = ember.linalg.ldl_factor_ex(t(given), hermitian=hermitian)
    assert np.all(host(r.info) == 0)
    np.testing.assert_allclose(host(r.LD), host(LD), rtol=0, atol=0)


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_complex64_and_broadcast_solve(hermitian):
    torch = pytest.importorskip("torch")
    a, given = _ldl_input((2, 5, 5), hermitian, 60, True)
    LD, piv = ember.linalg.ldl_factor(t(given).to(C64), hermitian=hermitian)
    tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(given).to(torch.complex64),
                                        hermitian=hermitian)
    assert LD.dtype is C64
    np.testing.assert_allclose(host(LD), tLD.numpy(), rtol=1e-4, atol=1e-4)
    b = crand(3, 1, 5, 2, seed=61)  # batches broadcast
    x = ember.linalg.ldl_solve(LD, piv, t(b).to(C64), hermitian=hermitian)
    assert x.shape == (3, 2, 5, 2) and x.dtype is C64
    np.testing.assert_allclose(a @ host(x), np.broadcast_to(b, (3, 2, 5, 2)), atol=1e-3)


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_complex_singular_and_nonfinite(hermitian):
    torch = pytest.importorskip("torch")
    cases = [np.zeros((2, 3, 3), dtype=np.complex128),
             np.array([[1 + 1j, 0], [0, 0]]), np.array([[float("nan"), 0], [1j, 1]])]
    for a in cases:
        r = ember.linalg.ldl_factor_ex(t(a), hermitian=hermitian)
        x = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
        assert host(r.info).tolist() == x.info.numpy().tolist()
        assert host(r.pivots).tolist() == x.pivots.numpy().tolist()
    # (PyTorch's own ldl_factor fails here with an internal assert: "Unknown error code: 1")
    with pytest.raises(ember.linalg.LinAlgError, match=re.escape(
            "torch.linalg.ldl_factor: (Batch element 0): The factorization could not be completed "
            "because the block diagonal matrix D is singular (D[1,1] is zero).")):
        ember.linalg.ldl_factor(t(cases[0]), hermitian=hermitian)


@pytest.mark.parametrize("case", [
    lambda lib, LD, piv, b: lib.linalg.ldl_solve(LD, piv, b.real),
    lambda lib, LD, piv, b: lib.linalg.ldl_solve(LD.real, piv, b),
    lambda lib, LD, piv, b: lib.linalg.ldl_solve(LD, piv, b.to(lib.complex64)),
    lambda lib, LD, piv, b: lib.linalg.ldl_solve(LD, piv[:3], b),
    lambda lib, LD, piv, b: lib.linalg.ldl_factor(LD[:, :3]),
])
def test_ldl_complex_errors_match_pytorch(case):
    torch = pytest.importorskip("torch")
    a, _ = _ldl_input((4, 4), True, 70)
    b = crand(4, 2, seed=71)
    LD, piv = ember.linalg.ldl_factor(t(a), hermitian=True)
    tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=True)
    _same_error(lambda: case(ember, LD, piv, t(b)),
                lambda: case(torch, tLD, tpiv, torch.tensor(b)))


def test_ldl_complex_not_differentiable_like_pytorch():
    torch = pytest.importorskip("torch")
    a, _ = _ldl_input((3, 3), True, 80)
    b = crand(3, 1, seed=81)
    for lib in (ember, torch):
        A = t(a, True) if lib is ember else torch.tensor(a, requires_grad=True)
        LD, piv = lib.linalg.ldl_factor(A, hermitian=True)  # the forward records, as PyTorch
        assert LD.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is "
                                               "not implemented"):
            LD.abs().sum().backward()
        B = t(b, True) if lib is ember else torch.tensor(b, requires_grad=True)
        X = lib.linalg.ldl_solve(LD.detach(), piv, B, hermitian=True)
        assert X.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not "
                                               "implemented"):
            X.abs().sum().backward()


def test_householder_product_second_order_in_complex128():
    """index_put (linear in both operands) is holomorphic: householder_product's backward,
    which writes through it, differentiates again on complex inputs."""
    a, tau = ember.geqrf(ember.randn(4, 3, dtype=ember.complex128))
    a, tau = a.detach().requires_grad_(), tau.detach().requires_grad_()
    assert ember.autograd.gradgradcheck(ember.linalg.householder_product, (a, tau))


# -- var/std, torch.svd's V and logdet of a singular matrix on complex input -------------------

def _cplx(shape, seed=0, dtype=np.complex128):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype,real", [(np.complex64, ember.float32),
                                        (np.complex128, ember.float64)])
def test_var_std_of_complex_are_real(dtype, real):
    z = _cplx((3, 5), dtype=dtype)
    t = ember.tensor(z)
    ref = (np.abs(z - z.mean(1, keepdims=True)) ** 2).sum(1) / 4
    v = ember.var(t, dim=1)
    assert v.dtype == real
    np.testing.assert_allclose(v.numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(ember.std(t, dim=1, correction=0).numpy(),
                               np.sqrt(ref * 4 / 5), rtol=1e-5)
    var, mean = ember.var_mean(t, 0, keepdim=True)
    assert var.dtype == real and mean.dtype == t.dtype and var.shape == (1, 5)


def test_var_std_of_complex_gradcheck():
    x = ember.tensor(_cplx((3, 4), seed=1), requires_grad=True)
    assert gradcheck(lambda a: ember.var(a, dim=1), (x,))
    assert gradcheck(lambda a: ember.std(a), (x,))


def test_var_std_of_complex_match_pytorch():
    torch = pytest.importorskip("torch")
    z = _cplx((4, 6), seed=2)
    x, tx = ember.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    y, ty = ember.std(x, dim=0), torch.std(tx, dim=0)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_torch_svd_of_complex_returns_v_not_vh():
    a = _cplx((4, 3), seed=3)
    u, s, v = ember.svd(ember.tensor(a))
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().conj().T, a, atol=1e-12)


def test_logdet_of_a_singular_complex_matrix_is_pytorchs():
    r = ember.logdet(ember.tensor(np.array([[1, 2], [2, 4]], dtype=np.complex128))).item()
    assert r.real == -np.inf and np.isnan(r.imag)
    ok = ember.logdet(ember.tensor(np.array([[2, 1j], [0, 1]], dtype=np.complex128))).item()
    assert abs(ok - np.log(2)) < 1e-15
