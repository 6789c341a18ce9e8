"""``ember.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp against closed forms."""

import numpy as np
import pytest
from testutils import randn64, t64, to_numpy

import ember
from ember.autograd import functional as F

RNG = np.random.default_rng(0)


# f(x) = exp(x).sum(0) for x of shape (3, 2): J[j, i, k] = exp(x[i, k]) * (k == j)
def exp_reducer(x):
    return x.exp().sum(0)


def exp_reducer_jacobian(xn):
    jac = np.zeros((2, 3, 2))
    for j in range(2):
        jac[j, :, j] = np.exp(xn[:, j])
    return jac


# g(x, y) = (x * y, (x @ y) ** 2) with x (2, 3), y (3, 2) ... used for tuple structures
def pair(x, y):
    return x * 2, (x.matmul(y) ** 2)


def cubic(x):
    return (x ** 3).sum()


# -- jacobian ---------------------------------------------------------------------------------

def test_jacobian_single_input_single_output():
    x = randn64(3, 2, rng=RNG, requires_grad=False)
    jac = F.jacobian(exp_reducer, x)
    assert isinstance(jac, ember.Tensor)
    assert jac.shape == (2, 3, 2) and jac.dtype == ember.float64
    np.testing.assert_allclose(to_numpy(jac), exp_reducer_jacobian(to_numpy(x)))
    assert not jac.requires_grad


def test_jacobian_tuple_structures():
    x, y = randn64(2, 3, rng=RNG, requires_grad=False), randn64(3, 2, rng=RNG, requires_grad=False)
    jac = F.jacobian(pair, (x, y))
    assert isinstance(jac, tuple) and len(jac) == 2
    assert all(isinstance(row, tuple) and len(row) == 2 for row in jac)
    assert [[tuple(j.shape) for j in row] for row in jac] == [
        [(2, 3, 2, 3), (2, 3, 3, 2)], [(2, 2, 2, 3), (2, 2, 3, 2)]]
    np.testing.assert_allclose(to_numpy(jac[0][0]).reshape(6, 6), 2 * np.eye(6))
    np.testing.assert_array_equal(to_numpy(jac[0][1]), 0.0)
    xn, yn = to_numpy(x), to_numpy(y)
    p = xn @ yn
    # d (x @ y)^2[i, j] / d x[a, b] = 2 p[i, j] * (i == a) * y[b, j]
    expected = np.einsum("ij,ia,bj->ijab", 2 * p, np.eye(2), yn)
    np.testing.assert_allclose(to_numpy(jac[1][0]), expected, rtol=1e-12)

    # one input, tuple outputs: a tuple over outputs
    jac = F.jacobian(lambda a: (a.exp(), a * 3), x)
    assert isinstance(jac, tuple) and len(jac) == 2 and isinstance(jac[0], ember.Tensor)
    # tuple inputs, one output: a tuple over inputs
    jac = F.jacobian(lambda a, b: a.matmul(b), (x, y))
    assert isinstance(jac, tuple) and len(jac) == 2 and jac[1].shape == (2, 2, 3, 2)
    # a one-element tuple stays a tuple
    jac = F.jacobian(exp_reducer, (randn64(3, 2, rng=RNG, requires_grad=False),))
    assert isinstance(jac, tuple) and len(jac) == 1 and jac[0].shape == (2, 3, 2)


def test_jacobian_does_not_touch_caller_graph_or_grads():
    x = randn64(3, 2, rng=RNG, requires_grad=True)
    jac = F.jacobian(exp_reducer, x)
    assert x.grad is None and not jac.requires_grad


def test_jacobian_unused_input_is_zero_or_strict_error():
    x, y = randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG, requires_grad=False)
    jac = F.jacobian(lambda a, b: a * 2, (x, y))
    np.testing.assert_array_equal(to_numpy(jac[1]), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients."):
        F.jacobian(lambda a: a.detach() * 2, x, strict=True)


def test_jacobian_create_graph_is_differentiable():
    x = randn64(3, rng=RNG, requires_grad=True)
    jac = F.jacobian(lambda a: a ** 3, x, create_graph=True)
    assert jac.requires_grad
    np.testing.assert_allclose(to_numpy(jac), np.diag(3 * to_numpy(x) ** 2))
    jac.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(x))


def test_jacobian_forward_mode_strategy():
    x, y = randn64(2, 3, rng=RNG, requires_grad=False), randn64(3, 2, rng=RNG, requires_grad=False)
    rev = F.jacobian(pair, (x, y))
    fwd = F.jacobian(pair, (x, y), strategy="forward-mode", vectorize=True)
    assert isinstance(fwd, list) and isinstance(fwd[0], list)  # PyTorch returns lists here
    for r_row, f_row in zip(rev, fwd):
        for r, f in zip(r_row, f_row):
            assert r.shape == f.shape
            np.testing.assert_allclose(to_numpy(f), to_numpy(r), rtol=1e-12, atol=1e-12)
    x = randn64(3, 2, rng=RNG, requires_grad=False)
    np.testing.assert_allclose(to_numpy(F.jacobian(exp_reducer, x, strategy="forward-mode",
                                                   vectorize=True)),
                               exp_reducer_jacobian(to_numpy(x)))
    # as in PyTorch, forward mode is only implemented with vectorize=True
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(exp_reducer, x, strategy="forward-mode")


def test_jacobian_argument_errors():
    x = randn64(2, rng=RNG, requires_grad=False)
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or '
                                             '"reverse-mode".'):
        F.jacobian(exp_reducer, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="`create_graph=True` and "
                                                  '`strategy="forward-mode"` are not supported'):
        F.jacobian(exp_reducer, x, create_graph=True, strategy="forward-mode")
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or "
                                        "a tuple of Tensors but the value at index 1 has type"):
        F.jacobian(lambda a, b: a, (x, 3.0))
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to "
                                        "jacobian must be either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda a: 3.0, x)


# -- hessian -----------------------------------------------------------------------------------

def test_hessian_single_input():
    x = randn64(3, rng=RNG, requires_grad=False)
    h = F.hessian(cubic, x)
    assert isinstance(h, ember.Tensor) and h.shape == (3, 3)
    np.testing.assert_allclose(to_numpy(h), np.diag(6 * to_numpy(x)))


def test_hessian_matrix_input_shape():
    x = randn64(2, 2, rng=RNG, requires_grad=False)
    h = F.hessian(lambda a: (a.exp() * a).sum(), x)
    assert h.shape == (2, 2, 2, 2)
    xn = to_numpy(x).reshape(-1)
    np.testing.assert_allclose(to_numpy(h).reshape(4, 4), np.diag(np.exp(xn) * (xn + 2)))


def test_hessian_tuple_inputs():
    x, y = randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG, requires_grad=False)

    def f(a, b):
        return (a * a * b).sum()  # d2/da2 = 2 diag(b), d2/dadb = 2 diag(a), d2/db2 = 0

    h = F.hessian(f, (x, y))
    assert isinstance(h, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in h)
    xn, yn = to_numpy(x), to_numpy(y)
    np.testing.assert_allclose(to_numpy(h[0][0]), np.diag(2 * yn))
    np.testing.assert_allclose(to_numpy(h[0][1]), np.diag(2 * xn))
    np.testing.assert_allclose(to_numpy(h[1][0]), np.diag(2 * xn))
    np.testing.assert_array_equal(to_numpy(h[1][1]), np.zeros((2, 2)))


def test_hessian_errors():
    x = randn64(3, rng=RNG, requires_grad=False)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hessian "
                                           "should contain a single element"):
        F.hessian(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single "
                                           "Tensor"):
        F.hessian(lambda a: (a.sum(),), x)
    with pytest.raises(AssertionError, match="Expected strategy to be either"):
        F.hessian(cubic, x, outer_jacobian_strategy="sideways")


def test_hessian_forward_mode_outer_jacobian():
    x = randn64(3, rng=RNG, requires_grad=False)
    h = F.hessian(cubic, x, outer_jacobian_strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(to_numpy(h), np.diag(6 * to_numpy(x)))


# -- vjp and jvp -------------------------------------------------------------------------------

def test_vjp_values_and_structure():
    x = randn64(3, 2, rng=RNG, requires_grad=False)
    v = randn64(2, rng=RNG, requires_grad=False)
    out, res = F.vjp(exp_reducer, x, v)
    assert isinstance(out, ember.Tensor) and isinstance(res, ember.Tensor)
    np.testing.assert_allclose(to_numpy(out), np.exp(to_numpy(x)).sum(0))
    np.testing.assert_allclose(to_numpy(res), np.exp(to_numpy(x)) * to_numpy(v))
    assert not out.requires_grad and not res.requires_grad


def test_vjp_tuple_inputs_and_default_v():
    x, y = randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG, requires_grad=False)
    out, (gx, gy) = F.vjp(lambda a, b: (2 * a + 3 * b).sum(), (x, y))  # v defaults to 1
    np.testing.assert_allclose(to_numpy(gx), 2.0)
    np.testing.assert_allclose(to_numpy(gy), 3.0)
    v = (t64([1.0, 0.0], requires_grad=False), t64([1.0, 1.0], requires_grad=False))
    out, res = F.vjp(lambda a: (a.exp(), a * 2), x, v)
    assert isinstance(out, tuple) and len(out) == 2 and isinstance(res, ember.Tensor)
    np.testing.assert_allclose(to_numpy(res), [np.exp(to_numpy(x)[0]) + 2, 2.0])


def test_vjp_create_graph():
    x = randn64(3, rng=RNG, requires_grad=True)
    out, res = F.vjp(lambda a: a ** 3, x, t64([1.0, 1.0, 1.0], requires_grad=False),
                     create_graph=True)
    assert out.requires_grad and res.requires_grad
    res.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(x))


def test_vjp_v_errors():
    x = randn64(3, 2, rng=RNG, requires_grad=False)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided "
                                           "function returns a single Tensor with a single "
                                           "element."):
        F.vjp(exp_reducer, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be ember.Size\(\[2\]\) "
                                           r"but got ember.Size\(\[3\]\)."):
        F.vjp(exp_reducer, x, randn64(3, rng=RNG, requires_grad=False))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got "
                                           "1."):
        F.vjp(lambda a: (a, a), x, (randn64(3, 2, rng=RNG, requires_grad=False),))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        F.vjp(exp_reducer, x, (randn64(2, rng=RNG, requires_grad=False),
                               randn64(2, rng=RNG, requires_grad=False)))
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        F.vjp(lambda a, b: a * 2, (x, randn64(2, rng=RNG, requires_grad=False)),
              randn64(3, 2, rng=RNG, requires_grad=False), strict=True)


def test_jvp_values_and_structure():
    x = randn64(3, 2, rng=RNG, requires_grad=False)
    v = randn64(3, 2, rng=RNG, requires_grad=False)
    out, res = F.jvp(exp_reducer, x, v)
    assert isinstance(out, ember.Tensor) and isinstance(res, ember.Tensor)
    np.testing.assert_allclose(to_numpy(res), (np.exp(to_numpy(x)) * to_numpy(v)).sum(0))
    assert not res.requires_grad
    x, y = randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG, requires_grad=False)
    v = (t64([1.0, 0.0], requires_grad=False), t64([0.0, 1.0], requires_grad=False))
    out, res = F.jvp(lambda a, b: (a * b, a + b), (x, y), v)
    assert isinstance(out, tuple) and isinstance(res, tuple) and len(res) == 2
    np.testing.assert_allclose(to_numpy(res[0]), [to_numpy(y)[0], to_numpy(x)[1]])
    np.testing.assert_allclose(to_numpy(res[1]), [1.0, 1.0])


def test_jvp_default_v_and_errors():
    x = randn64(1, rng=RNG, requires_grad=False)
    out, res = F.jvp(lambda a: a ** 3, x)
    np.testing.assert_allclose(to_numpy(res), 3 * to_numpy(x) ** 2)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor with a "
                                           "single element."):
        F.jvp(exp_reducer, randn64(3, 2, rng=RNG, requires_grad=False))
    with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size"):
        F.jvp(lambda a, b: a * b,
              (randn64(2, rng=RNG, requires_grad=False), randn64(2, rng=RNG, requires_grad=False)),
              (randn64(2, rng=RNG, requires_grad=False), randn64(3, rng=RNG, requires_grad=False)))


def test_jvp_of_linear_function_and_strict():
    # a linear function's double backward does not depend on the input: fine unless strict
    x = randn64(3, rng=RNG, requires_grad=False)
    out, res = F.jvp(lambda a: a * 4, x, t64([1.0, 2.0, 3.0], requires_grad=False))
    np.testing.assert_allclose(to_numpy(res), [4.0, 8.0, 12.0])
    with pytest.raises(RuntimeError, match="Output 1 of the user-provided function does not "
                                           "require gradients."):
        F.jvp(lambda a, b: (a * b, a.detach() * 0 + 1),
              (x, randn64(3, rng=RNG, requires_grad=False)),
              (randn64(3, rng=RNG, requires_grad=False), randn64(3, rng=RNG, requires_grad=False)),
              strict=True)


def test_jvp_create_graph():
    x = randn64(3, rng=RNG, requires_grad=True)
    out, res = F.jvp(lambda a: a ** 3, x, t64([1.0, 1.0, 1.0], requires_grad=False),
                     create_graph=True)
    assert res.requires_grad
    res.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(x))


# -- hvp and vhp -------------------------------------------------------------------------------

def _quadratic(a, b):
    return (a * a * b).sum() + (b.exp()).sum()


def test_hvp_and_vhp_match_hessian():
    x, y = randn64(3, rng=RNG, requires_grad=False), randn64(3, rng=RNG, requires_grad=False)
    v = (randn64(3, rng=RNG, requires_grad=False), randn64(3, rng=RNG, requires_grad=False))
    h = F.hessian(_quadratic, (x, y))
    hm = np.block([[to_numpy(h[0][0]), to_numpy(h[0][1])], [to_numpy(h[1][0]), to_numpy(h[1][1])]])
    vv = np.concatenate([to_numpy(v[0]), to_numpy(v[1])])
    out, hv = F.hvp(_quadratic, (x, y), v)
    np.testing.assert_allclose(to_numpy(out), to_numpy(_quadratic(x, y)))
    np.testing.assert_allclose(np.concatenate([to_numpy(hv[0]), to_numpy(hv[1])]), hm @ vv,
                               rtol=1e-12)
    out, vh = F.vhp(_quadratic, (x, y), v)
    np.testing.assert_allclose(np.concatenate([to_numpy(vh[0]), to_numpy(vh[1])]), vv @ hm,
                               rtol=1e-12)
    assert isinstance(hv, tuple) and isinstance(vh, tuple)


def test_hvp_single_input_structure_and_create_graph():
    x = randn64(3, rng=RNG, requires_grad=True)
    v = t64([1.0, 2.0, 3.0], requires_grad=False)
    out, hv = F.hvp(cubic, x, v)
    assert isinstance(hv, ember.Tensor)
    np.testing.assert_allclose(to_numpy(hv), 6 * to_numpy(x) * to_numpy(v))
    out, vh = F.vhp(cubic, x, v, create_graph=True)
    assert vh.requires_grad
    vh.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), 6 * to_numpy(v))


def test_hvp_errors():
    x = randn64(3, rng=RNG, requires_grad=False)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hvp "
                                           "should contain a single element"):
        F.hvp(lambda a: a * 2, x, randn64(3, rng=RNG, requires_grad=False))
    with pytest.raises(RuntimeError, match="The function given to vhp should return a single "
                                           "Tensor"):
        F.vhp(lambda a: (a.sum(),), x, randn64(3, rng=RNG, requires_grad=False))
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor"):
        F.hvp(cubic, x)
    # a linear function has a zero Hessian: zeros, or an error when strict
    out, hv = F.hvp(lambda a: (a * 2).sum(), x, randn64(3, rng=RNG, requires_grad=False))
    np.testing.assert_array_equal(to_numpy(hv), 0.0)
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian "
                                           "of the user-provided function with respect to input 0 "
                                           "is independent of the input."):
        F.hvp(lambda a: (a * 2).sum(), x, randn64(3, rng=RNG, requires_grad=False), strict=True)


def test_functional_on_test_device(testdev):
    x = randn64(3, 2, rng=RNG, requires_grad=False).to(testdev)
    jac = F.jacobian(exp_reducer, x)
    assert jac.device == testdev
    np.testing.assert_allclose(to_numpy(jac.cpu()), exp_reducer_jacobian(to_numpy(x.cpu())))
    out, vh = F.vhp(cubic, randn64(3, rng=RNG, requires_grad=False).to(testdev),
                    randn64(3, rng=RNG, requires_grad=False).to(testdev))
    assert vh.device == testdev


# -- vectorize=True: one batched backward pass ------------------------------------------------

@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_vectorized_jacobian_equals_the_row_by_row_one(strategy):
    """vectorize=True gives the row-by-row (column-by-column) results, structures and
    dtypes, in one backward pass; unused inputs get zeros."""
    from ember._functorch import _batched

    x, y = randn64(2, 3, rng=RNG, requires_grad=False), randn64(3, 2, rng=RNG, requires_grad=False)
    passes = []
    real = _batched.backward_node
    _batched.backward_node = lambda *a: passes.append(1) or real(*a)
    try:
        vec = F.jacobian(pair, (x, y), vectorize=True, strategy=strategy)
        one = F.jacobian(exp_reducer, x.reshape(3, 2), vectorize=True, strategy=strategy)
    finally:
        _batched.backward_node = real
    assert passes  # the batched engine ran
    ref = F.jacobian(pair, (x, y))  # (forward mode is only implemented vectorized)
    if strategy == "reverse-mode":
        assert type(vec) is type(ref) and all(type(a) is type(b) for a, b in zip(vec, ref))
    else:  # PyTorch returns lists in forward mode
        assert type(vec) is list and all(type(a) is list for a in vec)
    for row_v, row_r in zip(vec, ref):
        for a, b in zip(row_v, row_r):
            assert a.shape == b.shape and not a.requires_grad
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-12, atol=1e-14)
    assert isinstance(one, ember.Tensor)
    np.testing.assert_allclose(to_numpy(one), exp_reducer_jacobian(to_numpy(x.reshape(3, 2))))


def test_vectorized_jacobian_create_graph_strict_and_hessian():
    x = randn64(4, rng=RNG, requires_grad=True)
    grads = []
    for vectorize in (True, False):
        jac = F.jacobian(lambda a: a.sin() * a.sum(), x, vectorize=vectorize,
                         create_graph=True)
        assert jac.requires_grad
        grads.append(ember.autograd.grad((jac ** 2).sum(), x)[0])
    np.testing.assert_allclose(to_numpy(grads[0]), to_numpy(grads[1]), rtol=1e-12)
    x = x.detach()
    with pytest.raises(RuntimeError, match=r"`strict=True` and `vectorized=True` are not "
                                           r"supported together"):
        F.jacobian(lambda a: a * 2, x, vectorize=True, strict=True)
    for outer in ("reverse-mode", "forward-mode"):
        h = F.hessian(cubic, x, vectorize=True, outer_jacobian_strategy=outer)
        np.testing.assert_allclose(to_numpy(h.detach()), np.diag(6 * to_numpy(x)), rtol=1e-12)


def test_vectorized_jacobian_matches_pytorch():
    torch = pytest.importorskip("torch")
    xn, yn = RNG.standard_normal(4), RNG.standard_normal(2)
    w = RNG.standard_normal((3, 4))
    res = {}
    for lib in (ember, torch):
        W = lib.tensor(w)

        def f(a, b, W=W):
            return (W @ a).tanh() * b.sum(), (a ** 2).sum()

        res[lib.__name__] = [
            lib.autograd.functional.jacobian(f, (lib.tensor(xn), lib.tensor(yn)),
                                             vectorize=True, strategy=s)
            for s in ("reverse-mode", "forward-mode")]
    for e, t in zip(res["ember"], res["torch"]):
        for row_e, row_t in zip(e, t):
            for a, b in zip(row_e, row_t):
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
