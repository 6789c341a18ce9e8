"""ember.nn.utils.parametrize and ember.nn.utils.parametrizations (orthogonal, weight_norm,
spectral_norm), against NumPy and, where installed, PyTorch."""

import copy
import pickle

import numpy as np
import pytest
from testutils import assert_allclose, to_numpy

import ember
import ember.nn as nn
from ember import geqrf
from ember.autograd import gradcheck
from ember.linalg import householder_product, matrix_exp
from ember.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Double(nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, X):
        return X / 2


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        U, S, Vh = ember.linalg.svd(Z, full_matrices=False)
        s0_sqrt = S[0].sqrt().unsqueeze(-1)
        return U[..., :, 0] * s0_sqrt, Vh[..., 0, :] * s0_sqrt


class Flatten(nn.Module):
    def forward(self, X):
        return X.reshape(-1)


def linear_pair(in_features, out_features, dtype="float64", bias=True, seed=0):
    """An ember Linear and a torch Linear with the same weights."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((out_features, in_features)).astype(dtype)
    b = rng.standard_normal(out_features).astype(dtype)
    e = nn.Linear(in_features, out_features, bias=bias, dtype=getattr(ember, dtype))
    t = torch.nn.Linear(in_features, out_features, bias=bias, dtype=getattr(torch, dtype))
    with ember.no_grad():
        e.weight.copy_(ember.tensor(w))
        if bias:
            e.bias.copy_(ember.tensor(b))
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        if bias:
            t.bias.copy_(torch.tensor(b))
    return e, t


# -- register_parametrization ------------------------------------------------------------------

def test_register_makes_a_parametrized_subclass():
    m = nn.Linear(3, 3)
    w = m.weight.detach().clone()
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear) and type(m) is not nn.Linear
    assert type(nn.Linear(2, 2)) is nn.Linear  # other instances untouched
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert isinstance(m.parametrizations.weight, parametrize.ParametrizationList)
    assert_allclose(m.parametrizations.weight.original, np.triu(to_numpy(w)))
    assert_allclose(m.weight, m.weight.T)
    assert "weight" not in dict(m.named_parameters())
    assert list(dict(m.named_parameters())) == ["bias", "parametrizations.weight.original"]


def test_original_keeps_parameter_identity_and_gets_gradients():
    m = nn.Linear(3, 3)
    p = m.weight
    parametrize.register_parametrization(m, "weight", Double())
    assert m.parametrizations.weight.original is p  # optimizers keep working
    assert_allclose(m.weight, 2 * p, rtol=1e-6)
    m(ember.ones(2, 3)).sum().backward()
    assert_allclose(p.grad, np.full((3, 3), 4.0))


def test_assignment_goes_through_right_inverse():
    m = parametrize.register_parametrization(nn.Linear(4, 4), "weight", Symmetric())
    A = ember.rand(4, 4)
    A = A + A.T
    m.weight = A
    assert_allclose(m.weight, A, rtol=1e-6)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = nn.Parameter(A)


def test_several_parametrizations_compose_in_order():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    orig = m.parametrizations.weight.original.detach().numpy()
    sym = np.triu(orig) + np.triu(orig, 1).T
    assert_allclose(m.weight, 2 * sym, rtol=1e-6)


def test_sequence_right_inverse_registers_original0_original1():
    m = nn.Linear(4, 4)
    parametrize.register_parametrization(m, "weight", RankOne())
    keys = list(m.state_dict())
    assert keys == ["bias", "parametrizations.weight.original0",
                    "parametrizations.weight.original1"]
    assert isinstance(m.parametrizations.weight.original0, nn.Parameter)
    assert ember.linalg.matrix_rank(m.weight).item() == 1
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    w = m.weight.detach().numpy()
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    assert_allclose(m.weight, w)


def test_shape_or_dtype_change_needs_unsafe():
    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless "
                                         "`unsafe` flag is enabled"):
        parametrize.register_parametrization(nn.Linear(2, 3), "weight", Flatten())
    m = nn.Linear(2, 3)
    assert type(m) is nn.Linear and "weight" in m._parameters  # nothing changed
    parametrize.register_parametrization(m, "weight", Flatten(), unsafe=True)
    assert m.weight.shape == (6,)
    m2 = parametrize.register_parametrization(nn.Linear(2, 3), "weight", Double())
    with pytest.raises(ValueError, match="unless the `unsafe` flag is enabled"):
        parametrize.register_parametrization(m2, "weight", Flatten())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'foo'"):
        parametrize.register_parametrization(nn.Linear(2, 3), "foo", Double())


def test_buffers_can_be_parametrized():
    m = nn.BatchNorm1d(3)
    parametrize.register_parametrization(m, "running_var", Double())
    assert "parametrizations.running_var.original" in m.state_dict()
    assert "parametrizations.running_var.original" not in dict(m.named_parameters())
    assert_allclose(m.parametrizations.running_var.original,
                    [0.5, 0.5, 0.5])
    assert_allclose(m.running_var, [1.0, 1.0, 1.0])


def test_cached_computes_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1.0

    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Counting())
    calls.clear()
    _ = m.weight, m.weight
    assert len(calls) == 2
    calls.clear()
    with parametrize.cached():
        a, b = m.weight, m.weight
        with parametrize.cached():
            c = m.weight
    assert len(calls) == 1 and a is b is c
    _ = m.weight
    assert len(calls) == 2  # the cache is gone after the outermost context


def test_remove_parametrizations_leave_parametrized_or_not():
    m = nn.Linear(3, 3)
    p = m.weight
    parametrize.register_parametrization(m, "weight", Double())
    expected = m.weight.detach().numpy()
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is p  # same Parameter object
    assert_allclose(m.weight, expected)
    m2 = nn.Linear(3, 3)
    raw = m2.weight.detach().numpy().copy()
    parametrize.register_parametrization(m2, "weight", Double())
    parametrize.remove_parametrizations(m2, "weight", leave_parametrized=False)
    assert_allclose(m2.weight, raw / 2, rtol=1e-6)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m2, "weight")


def test_remove_one_of_two_parametrized_tensors_keeps_the_class():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Double())
    parametrize.register_parametrization(m, "bias", Double())
    parametrize.remove_parametrizations(m, "weight")
    assert type(m).__name__ == "ParametrizedLinear" and parametrize.is_parametrized(m, "bias")
    parametrize.remove_parametrizations(m, "bias")
    assert type(m) is nn.Linear


def test_deepcopy_works_pickle_refuses():
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Double())
    c = copy.deepcopy(m)
    assert_allclose(c.weight, m.weight)
    assert c.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


def test_state_dict_round_trip():
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    m2 = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    m2.load_state_dict(m.state_dict())
    assert_allclose(m2.weight, m.weight)


def test_transfer_parametrizations_and_params():
    src = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Double())
    dst = nn.Linear(3, 3)
    parametrize.transfer_parametrizations_and_params(src, dst)
    assert parametrize.is_parametrized(dst, "weight")
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    assert_allclose(dst.weight, src.weight)


def test_state_dict_keys_match_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.parametrize as tP

    class TDouble(torch.nn.Module):
        def forward(self, X):
            return 2 * X

    e = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Double())
    t = tP.register_parametrization(torch.nn.Linear(3, 3), "weight", TDouble())
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e).__name__ == type(t).__name__


# -- weight_norm --------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    torch = pytest.importorskip("torch")
    e, t = linear_pair(4, 5)
    parametrizations.weight_norm(e, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        assert_allclose(e.state_dict()[k], v, rtol=1e-12)
    x = np.random.default_rng(1).standard_normal((3, 4))
    e(ember.tensor(x)).square().sum().backward()
    t(torch.tensor(x)).square().sum().backward()
    assert_allclose(e.weight, t.weight, rtol=1e-12)
    for name in ("original0", "original1"):  # g and v both get gradients
        ge = getattr(e.parametrizations.weight, name).grad
        gt = getattr(t.parametrizations.weight, name).grad
        assert_allclose(ge, gt, rtol=1e-10, atol=1e-12)


def test_weight_norm_loads_old_api_state_dict():
    with pytest.warns(FutureWarning, match="deprecated"):
        old = nn.utils.weight_norm(nn.Linear(3, 2))
    new = parametrizations.weight_norm(nn.Linear(3, 2))
    new.load_state_dict(old.state_dict())
    assert_allclose(new.weight, old.weight, rtol=1e-6)


def test_weight_norm_gradcheck():
    m = parametrizations.weight_norm(nn.Linear(3, 2, dtype=ember.float64))
    g = m.parametrizations.weight.original0.detach().clone().requires_grad_()
    v = m.parametrizations.weight.original1.detach().clone().requires_grad_()
    assert gradcheck(lambda g, v: m.parametrizations.weight[0](g, v), (g, v))


# -- spectral_norm ------------------------------------------------------------------------------

def _set_spectral_vectors(e, t, seed=0):
    """Give the ember and torch spectral norms the same u and v (torch's start random)."""
    import torch

    sn_e, sn_t = e.parametrizations.weight[0], t.parametrizations.weight[0]
    rng = np.random.default_rng(seed)
    for name in ("_u", "_v"):
        value = rng.standard_normal(tuple(getattr(sn_t, name).shape))
        value /= np.linalg.norm(value)
        getattr(sn_e, name).copy_(ember.tensor(value))
        with torch.no_grad():
            getattr(sn_t, name).copy_(torch.tensor(value))


def test_spectral_norm_matches_torch_train_and_eval():
    torch = pytest.importorskip("torch")
    e, t = linear_pair(6, 4)
    parametrizations.spectral_norm(e, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
    assert list(e.state_dict()) == list(t.state_dict())
    _set_spectral_vectors(e, t)
    x = np.random.default_rng(2).standard_normal((3, 6))
    for _ in range(2):  # training forwards update u and v
        ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
        assert_allclose(ye, yt, rtol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    assert_allclose(e.parametrizations.weight.original.grad,
                    t.parametrizations.weight.original.grad, rtol=1e-9)
    e.eval()
    t.eval()
    u = e.parametrizations.weight[0]._u.detach().numpy().copy()
    assert_allclose(e.weight, t.weight, rtol=1e-10)
    assert_allclose(e.parametrizations.weight[0]._u, u)  # no update in eval


def test_spectral_norm_normalizes_the_largest_singular_value():
    m = parametrizations.spectral_norm(nn.Linear(5, 7, dtype=ember.float64),
                                       n_power_iterations=30)
    sigma = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0]
    assert sigma == pytest.approx(1.0, abs=1e-6)


def test_spectral_norm_conv_transpose_uses_dim_1():
    torch = pytest.importorskip("torch")
    m = parametrizations.spectral_norm(nn.ConvTranspose2d(3, 5, 2))
    assert m.parametrizations.weight[0].dim == 1
    assert m.parametrizations.weight[0]._u.shape == (5,)
    t = torch.nn.utils.parametrizations.spectral_norm(torch.nn.ConvTranspose2d(3, 5, 2))
    assert list(m.state_dict()) == list(t.state_dict())


def test_spectral_norm_errors():
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), name="w")


# -- orthogonal ---------------------------------------------------------------------------------

def assert_orthonormal_columns(Q, atol=1e-5):
    """Q^T Q = I for a tall Q, Q Q^T = I for a wide one."""
    Q = to_numpy(Q)
    if Q.shape[-2] < Q.shape[-1]:
        Q = np.swapaxes(Q, -1, -2)
    eye = np.broadcast_to(np.eye(Q.shape[-1]), Q.shape[:-2] + (Q.shape[-1],) * 2)
    assert_allclose(np.swapaxes(Q, -1, -2) @ Q, eye, atol=atol)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(5, 5), (6, 3), (3, 6)])
def test_orthogonal_gives_orthogonal_weights(orthogonal_map, shape):
    m = nn.Linear(shape[1], shape[0])
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    assert_orthonormal_columns(m.weight)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(ember.randn(4, shape[1])).square().sum().backward()
    opt.step()
    assert_orthonormal_columns(m.weight)  # still orthogonal after a step


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_batch_of_matrices(orthogonal_map):
    m = nn.Module()
    m.weight = nn.Parameter(ember.randn(2, 5, 3))
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    assert m.weight.shape == (2, 5, 3)
    assert_orthonormal_columns(m.weight)


def test_orthogonal_default_map_and_errors():
    assert parametrizations.orthogonal(nn.Linear(3, 3)).parametrizations.weight[0]\
        .orthogonal_map.name == "matrix_exp"
    assert parametrizations.orthogonal(nn.Linear(3, 5)).parametrizations.weight[0]\
        .orthogonal_map.name == "householder"
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor "
                                         "of 1 dimensions."):
        parametrizations.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    m = parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley",
                                    use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m.weight = ember.eye(3)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_keeps_an_orthogonal_weight_and_matches_torch(orthogonal_map):
    torch = pytest.importorskip("torch")
    e, t = linear_pair(4, 4)
    Q = np.linalg.qr(np.random.default_rng(3).standard_normal((4, 4)))[0]
    with ember.no_grad():
        e.weight.copy_(ember.tensor(Q))
    with torch.no_grad():
        t.weight.copy_(torch.tensor(Q))
    parametrizations.orthogonal(e, orthogonal_map=orthogonal_map)
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orthogonal_map)
    assert list(e.state_dict()) == list(t.state_dict())
    assert_allclose(e.weight, Q, atol=1e-12)
    step = 0.1 * np.tril(np.ones((4, 4)), -1)  # away from the identity, so the map matters
    with ember.no_grad():
        e.parametrizations.weight.original.add_(ember.tensor(step))
    with torch.no_grad():
        t.parametrizations.weight.original.add_(torch.tensor(step))
    x = np.random.default_rng(4).standard_normal((2, 4))
    ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
    assert_allclose(ye, yt, rtol=1e-9, atol=1e-12)
    ye.square().sum().backward()
    yt.square().sum().backward()
    assert_allclose(e.parametrizations.weight.original.grad,
                    t.parametrizations.weight.original.grad,
                    rtol=1e-8, atol=1e-10)


def test_orthogonal_non_orthogonal_weight_is_orthogonalized_like_torch():
    torch = pytest.importorskip("torch")
    e, t = linear_pair(5, 5, seed=7)
    parametrizations.orthogonal(e)
    torch.nn.utils.parametrizations.orthogonal(t)
    assert_allclose(e.weight, t.weight, atol=1e-12)


def test_orthogonal_householder_without_trivialization_matches_torch():
    torch = pytest.importorskip("torch")
    e, t = linear_pair(3, 5, seed=5)
    parametrizations.orthogonal(e, orthogonal_map="householder", use_trivialization=False)
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map="householder",
                                               use_trivialization=False)
    assert "parametrizations.weight.0.base" not in e.state_dict()
    assert list(e.state_dict()) == list(t.state_dict())
    assert_allclose(e.parametrizations.weight.original,
                    t.parametrizations.weight.original, atol=1e-12)
    assert_allclose(e.weight, t.weight, atol=1e-12)
    assert_orthonormal_columns(e.weight)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_map_gradcheck(orthogonal_map):
    m = nn.Linear(3, 4, dtype=ember.float64)
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    orth = m.parametrizations.weight[0]
    X = (0.3 * ember.randn(4, 3, dtype=ember.float64)).requires_grad_()
    assert gradcheck(orth, (X,))


# -- the linear algebra behind orthogonal ---------------------------------------------------

def test_matrix_exp_matches_torch_and_gradcheck():
    torch = pytest.importorskip("torch")
    A = np.random.default_rng(0).standard_normal((2, 4, 4)) * 3
    assert_allclose(matrix_exp(ember.tensor(A)),
                    torch.linalg.matrix_exp(torch.tensor(A)), rtol=1e-12)
    a = ember.tensor(A[0] / 3, requires_grad=True)
    assert gradcheck(matrix_exp, (a,))
    ta = torch.tensor(A[0] / 3, requires_grad=True)
    matrix_exp(a).sin().sum().backward()
    torch.linalg.matrix_exp(ta).sin().sum().backward()
    assert_allclose(a.grad, ta.grad, rtol=1e-10)


def test_matrix_exp_of_zero_and_diagonal():
    assert_allclose(matrix_exp(ember.zeros(3, 3)), np.eye(3))
    d = np.array([0.5, -1.0, 2.0])
    assert_allclose(matrix_exp(ember.tensor(np.diag(d))), np.diag(np.exp(d)),
                    rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4), (3, 5)])
def test_geqrf_and_householder_product_match_torch(shape):
    torch = pytest.importorskip("torch")
    A = np.random.default_rng(1).standard_normal(shape)
    a, tau = geqrf(ember.tensor(A))
    ta, ttau = torch.geqrf(torch.tensor(A))
    assert_allclose(a, ta, atol=1e-12)
    assert_allclose(tau, ttau, atol=1e-12)
    if shape[-2] >= shape[-1]:
        Q = householder_product(a, tau)
        assert_allclose(Q, torch.linalg.householder_product(ta, ttau),
                        atol=1e-12)
        R = np.triu(a.detach().numpy()[..., :shape[-1], :])
        assert_allclose(to_numpy(Q) @ R, A, atol=1e-12)


def test_householder_product_gradcheck():
    A = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    tau = ember.rand(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(householder_product, (A, tau))
