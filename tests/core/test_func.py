"""ember.func: vmap (in_dims/out_dims, nesting, chunking, randomness, errors in PyTorch's
words), grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, functional_call and
stack_module_state, against per-example loops, ember.autograd.functional and torch.func
(the oracle, skipped without torch). The per-op batching rules are tested over the op
database in test_func_batching_rules.py."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from testutils import assert_same_error

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import func
from ember.autograd import functional as AF
from ember.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    stack_module_state,
    vjp,
    vmap,
)


def _np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy()
    return x.detach().cpu().numpy()


def close(a, b, tol=1e-6):
    """Equal trees of tensors (ember or torch) up to ``tol``."""
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            close(a[k], b[k], tol)
        return
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            close(u, v, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def r64(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape))


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def tt(torch, x):
    return torch.tensor(x.detach().numpy())


# -- vmap: mapping and unmapping ------------------------------------------------------------------

def test_vmap_equals_loop_and_handles_in_dims():
    x, y = r64(4, 3), r64(3, 4, seed=1)

    def f(a, b):
        return (a * b).sum() + a.exp().mean()

    out = vmap(f, in_dims=(0, 1))(x, y)
    close(out, ember.stack([f(x[i], y[:, i]) for i in range(4)]))
    close(vmap(f, in_dims=(-2, -1))(x, y), out)  # negative dims count from the end
    shared = vmap(f, in_dims=(0, None))(x, y[:, 0])
    close(shared, ember.stack([f(x[i], y[:, 0]) for i in range(4)]))


def test_vmap_pytrees_of_inputs_and_outputs():
    x, y, z = r64(4, 3), r64(4, 2, seed=1), r64(5, seed=2)

    def f(pair, d, s):
        a, b = pair
        return {"sum": a.sum() + b.sum() * s, "cat": ember.cat([a, d["w"]])}, [a * 2]

    out = vmap(f, in_dims=((0, 0), {"w": None}, None))((x, y), {"w": z}, 3.0)
    for i in range(4):
        e = f((x[i], y[i]), {"w": z}, 3.0)
        close(out[0]["sum"][i], e[0]["sum"])
        close(out[0]["cat"][i], e[0]["cat"])
        close(out[1][0][i], e[1][0])


def test_vmap_out_dims_and_unbatched_outputs():
    x = r64(4, 3)
    a, b = vmap(lambda t: (t * 2, t.sum()), out_dims=(1, 0))(x)
    close(a, (x * 2).t())
    close(b, x.sum(1))
    close(vmap(lambda t: t + 1, out_dims=-1)(x), (x + 1).t())
    # an output that does not depend on the mapped input is copied per example
    c = ember.arange(3.0, dtype=ember.float64)
    close(vmap(lambda t: c)(x), c.expand(4, 3))
    # out_dims=None: the output must not be batched
    close(vmap(lambda t: (t, c), out_dims=(0, None))(x)[1], c)


def test_vmap_kwargs_are_not_mapped_and_raw_ops_dispatch():
    x = r64(4, 3)
    out = vmap(lambda t, scale: t * scale)(x, scale=ember.tensor(2.0, dtype=ember.float64))
    close(out, x * 2)
    close(vmap(ember.dot)(x, x), (x * x).sum(1))  # an ember function passed as itself
    close(vmap(ember.Tensor.sum)(x), x.sum(1))


def test_vmap_chunk_size_gives_the_same_result():
    x = r64(7, 3)

    def f(t):
        return t.sin() @ t, t.cumsum(0)

    whole = vmap(f)(x)
    for chunk in (1, 3, 7, 10):
        close(vmap(f, chunk_size=chunk)(x), whole)
    close(vmap(f, in_dims=1, out_dims=(0, 1), chunk_size=2)(x.t()),
          vmap(f, in_dims=1, out_dims=(0, 1))(x.t()))


def test_nested_vmap_is_an_outer_product_of_batches():
    x, y = r64(4, 3), r64(5, 3, seed=1)
    out = vmap(vmap(lambda a, b: (a * b).sum().tanh(), in_dims=(None, 0)), in_dims=(0, None))(x, y)
    close(out, (x @ y.t()).tanh())
    # three levels, with a tensor captured from an outer level
    z = r64(2, seed=2)
    out3 = vmap(lambda c: vmap(lambda a: vmap(lambda b: a @ b + c)(y))(x))(z)
    close(out3, (x @ y.t()).unsqueeze(0) + z.reshape(2, 1, 1))


def test_vmap_inplace_ops_write_through_and_unbatched_self_is_an_error():
    x = r64(4, 3)

    def f(t):
        u = t.clone()
        u.add_(1).mul_(t)
        u[0] = 5.0
        return u

    expected = (x + 1) * x
    expected[:, 0] = 5.0
    close(vmap(f)(x), expected)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[4, 3\]"):
        vmap(lambda t: ember.zeros(3, dtype=ember.float64).add_(t))(x)


def test_batched_zero_dim_tensors_promote_as_scalars(torch):
    a = ember.ones(3)  # float32
    s = ember.arange(4, dtype=ember.float64)
    out = vmap(lambda t: a * t)(s)  # t is a 0-dim float64 tensor per example
    expected = torch.func.vmap(lambda t: torch.ones(3) * t)(torch.arange(4, dtype=torch.float64))
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1] == "float32"
    close(out, expected)


def test_tensor_valued_properties_inside_vmap():
    x = r64(4, 3)
    out = vmap(lambda t: ember.complex(t, 2 * t).imag + ember.complex(t, t).real + t.data)(x)
    close(out, 4 * x)
    y = r64(4, 2, 3)
    close(vmap(lambda t: t.T @ t.mT.mT)(y), ember.stack([u.T @ u for u in y]))


def test_backward_inside_vmap_points_to_grad():
    with pytest.raises(RuntimeError, match="differentiate with ember.func.grad"):
        vmap(lambda t: (t * 2).sum().backward())(r64(3, 2).requires_grad_())


def test_ops_without_a_rule_run_the_documented_loop():
    from ember.ops.registry import batch_rule

    assert batch_rule("cdist") is None
    x, y = r64(4, 5, 3), r64(6, 3, seed=1)
    out = vmap(ember.cdist, in_dims=(0, None))(x, y)
    close(out, ember.stack([ember.cdist(x[i], y) for i in range(4)]))


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "cholesky", "svdvals", "eigvalsh",
                                  "matrix_exp", "vector_norm"])
def test_vmap_over_linalg(name):
    a = r64(4, 3, 3)
    spd = a @ a.mT + 3 * ember.eye(3, dtype=ember.float64)
    x = spd if name in ("cholesky", "eigvalsh") else a
    fn = getattr(ember.linalg, name)
    out = vmap(lambda t: getattr(ember.linalg, name)(t))(x)
    expected = [fn(x[i]) for i in range(4)]
    if isinstance(out, tuple):
        for j, part in enumerate(out):
            close(part, ember.stack([e[j] for e in expected]), 1e-8)
    else:
        close(out, ember.stack(expected), 1e-8)


def test_vmap_linalg_solve_with_a_shared_matrix():
    a = r64(3, 3) + 3 * ember.eye(3, dtype=ember.float64)
    b = r64(5, 3, seed=1)
    out = vmap(lambda r: ember.linalg.solve(a, r))(b)
    close(out, ember.stack([ember.linalg.solve(a, b[i]) for i in range(5)]), 1e-8)


def test_data_dependent_python_is_refused(torch):
    x = r64(4, 3)
    tx = tt(torch, x)
    assert_same_error(lambda: vmap(lambda t: t.sum().item())(x),
                      lambda: torch.func.vmap(lambda t: t.sum().item())(tx))
    assert_same_error(lambda: vmap(lambda t: 1 if t.sum() > 0 else 0)(x),
                      lambda: torch.func.vmap(lambda t: 1 if t.sum() > 0 else 0)(tx))


def test_a_kernel_reached_without_dispatch_fails_loudly():
    from ember import dot  # bound by name: dispatches inside vmap as ember.dot does
    from ember.ops.fft_ops import fft_rfft  # an op module's own kernel: no dispatch

    x = r64(4, 3)
    close(vmap(lambda t: dot(t, t))(x), (x * x).sum(1))
    with pytest.raises(RuntimeError, match="without going through dispatch"):
        vmap(lambda t: fft_rfft(t))(x)


@pytest.mark.parametrize("case", [
    lambda v, x: v(lambda t: t, in_dims=(0, 0))(x),
    lambda v, x: v(lambda t: t, in_dims=[0])(x),
    lambda v, x: v(lambda t: t, in_dims=(1.5,))(x),
    lambda v, x: v(lambda t: t, in_dims=(0,))(3.0),
    lambda v, x: v(lambda t: t, in_dims=(2,))(x),
    lambda v, x: v(lambda t: t)(),
    lambda v, x: v(lambda t: t, in_dims=(None,))(x),
    lambda v, x: v(lambda a, b: a + b)(x, x[:2]),
    lambda v, x: v(lambda t: t, out_dims=(0, 0))(x),
    lambda v, x: v(lambda t: t, out_dims="x")(x),
    lambda v, x: v(lambda t: 3)(x),
    lambda v, x: v(lambda t: t, out_dims=None)(x),
    lambda v, x: v(lambda t: t, chunk_size=0)(x),
    lambda v, x: v(lambda t: t, randomness="x")(x),
], ids=["in_dims-structure", "in_dims-list", "in_dims-float", "non-tensor", "in_dim-range",
        "no-inputs", "nothing-mapped", "sizes", "out_dims-structure", "out_dims-type",
        "non-tensor-output", "out_dims-None", "chunk_size", "randomness"])
def test_vmap_errors_are_pytorchs(torch, case):
    x = r64(4, 3)
    assert_same_error(lambda: case(vmap, x), lambda: case(torch.func.vmap, tt(torch, x)))


# -- randomness -----------------------------------------------------------------------------------

def test_randomness_modes(torch):
    x = r64(4, 3)

    def draw(t):
        return ember.rand(500, dtype=ember.float64) + t.sum() * 0

    assert_same_error(lambda: vmap(draw)(x),
                      lambda: torch.func.vmap(lambda t: torch.rand(500) + t.sum() * 0)(
                          tt(torch, x)))
    same = vmap(draw, randomness="same")(x)
    assert (same == same[0]).all()
    diff = vmap(draw, randomness="different")(x)
    assert not (diff[0] == diff[1]).any()

    def drop(t):  # a random op on a batched input
        return F.dropout(t.new_ones(500) + t.sum() * 0, 0.5)

    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(drop)(x)
    same = vmap(drop, randomness="same")(x)
    assert ((same == 0) == (same[0] == 0)).all()
    diff = vmap(drop, randomness="different")(x)
    assert not ((diff[0] == 0) == (diff[1] == 0)).all()
    # no randomness drawn: fine in the default mode
    close(vmap(lambda t: F.dropout(t, 0.5, training=False))(x), x)


# -- grad and friends -----------------------------------------------------------------------------

def test_grad_matches_autograd_and_torch(torch):
    x = r64(5)

    def f(t):
        return (t.sin() * t).sum() + (t ** 3).mean()

    expected = AF.jacobian(f, x)
    close(grad(f)(x), expected)
    close(grad(f)(x), torch.func.grad(f)(tt(torch, x)))
    g, v = grad_and_value(f)(x)
    close(v, f(x))
    assert not g.requires_grad and not v.requires_grad


def test_grad_argnums_pytrees_and_aux():
    w, b, x = r64(3), r64(1, seed=1), r64(3, seed=2)

    def loss(params, x):
        return ((params["w"] * x).sum() + params["b"].sum()) ** 2, x.sum()

    (gp, aux) = grad(loss, has_aux=True)({"w": w, "b": b}, x)
    s = (w * x).sum() + b.sum()
    close(gp["w"], 2 * s * x)
    close(gp["b"], (2 * s).reshape(1))
    close(aux, x.sum())
    gw, gx = grad(lambda w, x: (w * x).sum() ** 2, argnums=(0, 1))(w, x)
    close(gw, 2 * (w * x).sum() * x)
    close(gx, 2 * (w * x).sum() * w)
    # an input the output does not depend on gets zeros, as in PyTorch
    close(grad(lambda a, c: a.sum(), argnums=1)(w, x), ember.zeros_like(x))


@pytest.mark.parametrize("case", [
    lambda g, x: g(lambda t: t)(x),
    lambda g, x: g(lambda t: 3)(x),
    lambda g, x: g(lambda t: t.sum(), argnums=2)(x),
    lambda g, x: g(lambda t: t.sum(), argnums=())(x),
    lambda g, x: g(lambda t: t.sum(), argnums=1.5)(x),
    lambda g, x: g(lambda t: (t.sum(), 1), has_aux=True)(x),
    lambda g, x: g(lambda t: t.sum(), has_aux=True)(x),
], ids=["non-scalar", "non-tensor", "argnum-range", "argnums-empty", "argnums-type",
        "aux-type", "aux-missing"])
def test_grad_errors_are_pytorchs(torch, case):
    x = r64(4, 3)
    assert_same_error(lambda: case(grad, x), lambda: case(torch.func.grad, tt(torch, x)))


def test_vjp_jvp_jacobians_hessian_against_autograd_functional_and_torch(torch):
    x, y = r64(4), r64(4, 3, seed=1)
    tx, ty = tt(torch, x), tt(torch, y)

    def f(t):
        return (t.sin() @ y).tanh()

    def tf(t):
        return (t.sin() @ ty).tanh()

    def s(t):
        return (t.exp() * t.cos()).sum()

    close(jacrev(f)(x), AF.jacobian(f, x))
    close(jacfwd(f)(x), AF.jacobian(f, x))
    close(jacrev(f)(x), torch.func.jacrev(tf)(tx))
    close(hessian(s)(x), AF.hessian(s, x))
    close(hessian(s)(x), torch.func.hessian(s)(tx))
    v, u = r64(4, seed=3), r64(3, seed=4)
    out, jv = jvp(f, (x,), (v,))
    close(jv, AF.jvp(f, x, v)[1])
    tout, tjv = torch.func.jvp(tf, (tx,), (tt(torch, v),))
    close(out, tout)
    close(jv, tjv)
    out, vjp_fn = vjp(f, x)
    close(vjp_fn(u)[0], AF.vjp(f, x, u)[1])
    close(vjp_fn(u * 2)[0], AF.vjp(f, x, u)[1] * 2)  # vjp_fn can be called again


def test_jacobians_of_several_inputs_and_outputs(torch):
    x, y = r64(3), r64(2, seed=1)

    def f(a, b):
        return a.sin() * b.sum(), (a.unsqueeze(1) * b).exp()

    def tf(a, b):
        return a.sin() * b.sum(), (a.unsqueeze(1) * b).exp()

    tx, ty = tt(torch, x), tt(torch, y)
    for ours, theirs in ((jacrev, torch.func.jacrev), (jacfwd, torch.func.jacfwd)):
        close(ours(f, argnums=(0, 1))(x, y), theirs(tf, argnums=(0, 1))(tx, ty))
        close(ours(f, argnums=1)(x, y), theirs(tf, argnums=1)(tx, ty))


def test_transforms_compose_with_vmap_and_each_other(torch):
    x, y = r64(5, 4), r64(4, 3, seed=1)
    ty = tt(torch, y)

    def f(t):
        return (t.sin() @ y).tanh()

    def tf(t):
        return (t.sin() @ ty).tanh()

    def s(t):
        return (t.exp() * t.cos()).sum()

    tx = tt(torch, x)
    close(vmap(jacrev(f))(x), torch.func.vmap(torch.func.jacrev(tf))(tx))
    close(vmap(jacfwd(f))(x), torch.func.vmap(torch.func.jacfwd(tf))(tx))
    close(vmap(hessian(s))(x), torch.func.vmap(torch.func.hessian(s))(tx))
    close(grad(grad(lambda t: t.sin() * t ** 2))(x[0, 0]),
          torch.func.grad(torch.func.grad(lambda t: t.sin() * t ** 2))(tx[0, 0]))
    # jvp inside vmap, with batched primals and tangents
    v = r64(5, 4, seed=2)
    close(vmap(lambda p, t: jvp(f, (p,), (t,))[1])(x, v),
          torch.func.vmap(lambda p, t: torch.func.jvp(tf, (p,), (t,))[1])(tx, tt(torch, v)))
    # grad of a vmapped function
    close(grad(lambda w: vmap(lambda r: (r * w).sum().sin())(x).sum())(x[0]),
          torch.func.grad(lambda w: torch.func.vmap(lambda r: (r * w).sum().sin())(tx).sum())(
              tx[0]))


def test_jvp_errors_are_pytorchs(torch):
    x = r64(3, 4)
    tx = tt(torch, x)
    assert_same_error(lambda: jvp(lambda t: t, x, x), lambda: torch.func.jvp(lambda t: t, tx, tx))
    assert_same_error(lambda: jvp(lambda t: t, (x,), (x[:1],)),
                      lambda: torch.func.jvp(lambda t: t, (tx,), (tx[:1],)))


def test_grad_of_inputs_that_require_grad_keeps_the_graph():
    x = r64(3).requires_grad_()
    g = grad(lambda t: (t ** 3).sum())(x)  # 3 x^2, differentiable with respect to x
    assert g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    close(gg, 6 * x.detach())


# -- per-sample gradients and ensembles (PyTorch's tutorials, small) ------------------------------

class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 6, 3, 1)
        self.fc1 = nn.Linear(6 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = ember.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def _tiny_cnn_torch(torch):
    tnn = torch.nn

    class T(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(1, 4, 3, 1)
            self.conv2 = tnn.Conv2d(4, 6, 3, 1)
            self.fc1 = tnn.Linear(6 * 4 * 4, 16)
            self.fc2 = tnn.Linear(16, 10)

        def forward(self, x):
            x = torch.relu(self.conv1(x))
            x = torch.relu(self.conv2(x))
            x = torch.nn.functional.max_pool2d(x, 2)
            x = torch.flatten(x, 1)
            x = torch.relu(self.fc1(x))
            return torch.nn.functional.log_softmax(self.fc2(x), dim=1)

    return T()


def _per_sample(model, functional_call, vmap, grad, nll, data, targets):
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        t = target.unsqueeze(0)
        return nll(functional_call(model, (params, buffers), (batch,)), t)

    return vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)


def test_per_sample_gradients_of_a_cnn_equal_the_loop_and_torch_func():
    ember.manual_seed(0)
    model = TinyCNN()
    data = ember.randn(6, 1, 12, 12)
    targets = ember.randint(10, (6,))
    # the loss is called through its module (F.nll_loss): a function object taken before vmap
    # started would bypass dispatch (see test_functions_bound_before_dispatch_fail_loudly)
    grads = _per_sample(model, functional_call, vmap, grad, lambda p, t: F.nll_loss(p, t), data,
                        targets)
    for i in range(6):
        model.zero_grad()
        F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            close(grads[name][i], p.grad, 1e-6)
    torch = pytest.importorskip("torch")
    tmodel = _tiny_cnn_torch(torch)
    tmodel.load_state_dict({k: tt(torch, v) for k, v in model.state_dict().items()})
    tgrads = _per_sample(tmodel, torch.func.functional_call, torch.func.vmap, torch.func.grad,
                         torch.nn.functional.nll_loss, tt(torch, data), tt(torch, targets))
    close(grads, tgrads, 1e-5)


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))


@pytest.mark.parametrize("shared_minibatch", [True, False])
def test_model_ensembling_equals_the_loop(shared_minibatch):
    ember.manual_seed(0)
    models = [_mlp() for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["1.weight"].shape == (4, 8, 16) and params["1.weight"].is_leaf
    base = copy.deepcopy(models[0])

    def fmodel(p, b, x):
        return functional_call(base, (p, b), (x,))

    if shared_minibatch:
        x = ember.randn(5, 4, 4)
        out = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
        expected = ember.stack([m(x) for m in models])
    else:
        x = ember.randn(4, 5, 4, 4)
        out = vmap(fmodel)(params, buffers, x)
        expected = ember.stack([m(x[i]) for i, m in enumerate(models)])
    close(out, expected, 1e-6)
    # per-model gradients of a loss, one vmap
    y = ember.randint(3, (5,))

    def loss(p, b, x):
        return F.cross_entropy(fmodel(p, b, x), y)

    in_dims = (0, 0, None) if shared_minibatch else 0
    grads = vmap(grad(loss), in_dims=in_dims)(params, buffers, x)
    for i, m in enumerate(models):
        m.zero_grad()
        F.cross_entropy(m(x if shared_minibatch else x[i]), y).backward()
        for name, p in m.named_parameters():
            close(grads[name][i], p.grad, 1e-6)
    # the oracle: torch.func on the same weights
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    tmodels = [tnn.Sequential(tnn.Flatten(), tnn.Linear(16, 8), tnn.ReLU(), tnn.Linear(8, 3))
               for _ in models]
    for t, m in zip(tmodels, models):
        t.load_state_dict({k: tt(torch, v) for k, v in m.state_dict().items()})
    tparams, tbuffers = torch.func.stack_module_state(tmodels)
    tbase = copy.deepcopy(tmodels[0])
    ty = tt(torch, y)

    def tloss(p, b, xb):
        return torch.nn.functional.cross_entropy(
            torch.func.functional_call(tbase, (p, b), (xb,)), ty)

    tout = torch.func.vmap(lambda p, b, xb: torch.func.functional_call(tbase, (p, b), (xb,)),
                           in_dims=in_dims)(tparams, tbuffers, tt(torch, x))
    close(out, tout, 1e-5)
    tgrads = torch.func.vmap(torch.func.grad(tloss), in_dims=in_dims)(tparams, tbuffers,
                                                                        tt(torch, x))
    close(grads, tgrads, 1e-5)


# -- functional_call and stack_module_state -------------------------------------------------------

class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2, bias=False)
        self.b = nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("scale", ember.ones(1))

    def forward(self, x, shift=0.0):
        return (self.b(self.a(x)) + shift) * self.scale


def test_functional_call_swaps_and_restores():
    m = Tied()
    x = ember.randn(3, 2)
    w = ember.randn(2, 2)
    before = m.a.weight
    out = functional_call(m, {"a.weight": w}, (x,), {"shift": 1.0})
    close(out, (x @ w.t() @ w.t() + 1.0))  # tied: b.weight follows a.weight
    assert m.a.weight is before and m.b.weight is before
    untied = functional_call(m, {"a.weight": w}, x, tie_weights=False)
    close(untied, x @ w.t() @ before.detach().t())
    two = functional_call(m, ({"a.weight": w}, {"scale": ember.full((1,), 2.0)}), (x,))
    close(two, 2 * x @ w.t() @ w.t())
    with pytest.raises(RuntimeError):
        functional_call(m, {"a.weight": w}, (ember.randn(3, 5),))
    assert m.a.weight is before  # restored after an exception too


def test_functional_call_errors_are_pytorchs(torch):
    m = Tied()
    tm = torch.nn.Linear(2, 2, bias=False)
    em = nn.Linear(2, 2, bias=False)
    x, tx = ember.randn(1, 2), torch.randn(1, 2)
    w, tw = ember.randn(2, 2), torch.randn(2, 2)
    assert_same_error(lambda: functional_call(em, {"weight": w, "bad": w}, (x,), strict=True),
                      lambda: torch.func.functional_call(tm, {"weight": tw, "bad": tw}, (tx,),
                                                         strict=True))
    assert_same_error(lambda: functional_call(em, {}, (x,), strict=True),
                      lambda: torch.func.functional_call(tm, {}, (tx,), strict=True))
    assert_same_error(lambda: functional_call(em, ({"weight": w}, {"weight": w}), (x,)),
                      lambda: torch.func.functional_call(tm, ({"weight": tw}, {"weight": tw}),
                                                         (tx,)))
    assert_same_error(lambda: functional_call(em, 3, (x,)),
                      lambda: torch.func.functional_call(tm, 3, (tx,)))
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(m, {"a.weight": w, "b.weight": w * 2}, (x,))


def test_stack_module_state_errors():
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    a, b = _mlp(), _mlp()
    b.eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([a, b])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 2), _mlp()])


def test_linearize_reuses_one_evaluation(torch):
    x = r64(4)

    def f(t):
        return t.sin() * t.exp()

    out, jvp_fn = func.linearize(f, x)
    close(out, f(x))
    for seed in (1, 2):
        v = r64(4, seed=seed)
        close(jvp_fn(v), jvp(f, (x,), (v,))[1])
    close(vmap(jvp_fn)(ember.eye(4, dtype=ember.float64)), jacfwd(f)(x).t())
    tout, tjvp = torch.func.linearize(f, tt(torch, x))
    close(jvp_fn(r64(4, seed=1)), tjvp(tt(torch, r64(4, seed=1))))


def test_functionalize_applies_mutations_at_the_end_without_aliasing():
    def f(a):
        a.add_(1)
        return a.view(-1), a.sum()

    y = ember.zeros(2, 2)
    flat, total = func.functionalize(f)(y)
    close(y, ember.ones(2, 2))  # the caller's tensor got the mutation
    close(flat, ember.ones(4))
    flat.add_(5)  # the output does not alias the input
    close(y, ember.ones(2, 2))
    close(total, ember.tensor(4.0))
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        func.functionalize(f, remove="x")


def test_replace_all_batch_norm_modules_and_debug_unwrap():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
    assert func.replace_all_batch_norm_modules_(m) is m
    assert m[1].running_mean is None and not m[1].track_running_stats
    x = ember.randn(3, 2, 1, 5, 5)
    out = vmap(m)(x)  # training-mode batch norm: each example's own statistics
    close(out, ember.stack([m(x[i]) for i in range(3)]), 1e-5)
    seen = []
    vmap(lambda t: seen.append(func.debug_unwrap(t)) or t)(x)
    assert type(seen[0]) is ember.Tensor and seen[0].shape == x.shape  # the physical batch
    plain = ember.ones(2)
    assert func.debug_unwrap(plain) is plain


def test_new_factories_inside_vmap_are_batched_and_writable():
    x = r64(4, 3)

    def f(t):
        out = t.new_zeros(2, 3)
        out[0] = t
        return out + t.new_ones((3,)) + t.new_full((2, 3), 2.0)

    expected = ember.stack([f(x[i]) for i in range(4)])
    close(vmap(f)(x), expected)


def test_public_names():
    for name in ("vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
                 "functional_call", "stack_module_state", "linearize", "functionalize",
                 "replace_all_batch_norm_modules_", "debug_unwrap"):
        assert name in func.__all__ and callable(getattr(func, name))


# -- batch norm and recurrent layers under vmap --------------------------------------------------

class _LoopSpy:
    """Records the ops that ran through vmap's per-example loop."""

    def __init__(self):
        from ember._functorch import _batched

        self.mod, self.real, self.ran = _batched, _batched._loop, []

    def __enter__(self):
        def spy(lvl, fn, args, kwargs, key, same_random=False):
            self.ran.append(key)
            return self.real(lvl, fn, args, kwargs, key, same_random)

        self.mod._loop = spy
        return self

    def __exit__(self, *exc):
        self.mod._loop = self.real


def _bn_case(F_, vmap_, x, rm, rv, w, b, training):
    """vmap over F.batch_norm with batched input, running statistics and affine parameters:
    the output, the statistics after the call, and (training) the per-example gradient."""
    out = vmap_(lambda x, m, v, w, b: F_.batch_norm(x, m, v, w, b, training=training,
                                                     momentum=0.3))(x, rm, rv, w, b)
    return out, rm, rv


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_vmap_batch_norm_per_example_statistics_match_torch(torch, training, shape):
    """Each example is normalized over its own (N, *) slice and updates its own running
    statistics (training) or uses them (eval), as torch.func.vmap does, by the batching rule
    (no per-example loop)."""
    B, C = 3, shape[1]
    x = r64(B, *shape)
    rm, rv, w, b = r64(B, C, seed=1), r64(B, C, seed=2).abs() + 0.5, r64(B, C, seed=3), \
        r64(B, C, seed=4)
    trm, trv = tt(torch, rm), tt(torch, rv)
    with _LoopSpy() as spy:
        out, rm, rv = _bn_case(F, vmap, x, rm, rv, w, b, training)
    assert "batch_norm" not in spy.ran
    tout, trm, trv = _bn_case(torch.nn.functional, torch.func.vmap, tt(torch, x), trm, trv,
                              tt(torch, w), tt(torch, b), training)
    close(out, tout, 1e-10)
    close(rm, trm, 1e-12)
    close(rv, trv, 1e-12)


def test_vmap_batch_norm_gradients_match_torch(torch):
    """Per-example gradients through training-mode batch norm (vmap of grad, every argument
    batched; then weight shared), against torch.func."""
    x, w, b = r64(3, 4, 2, 5), r64(3, 2, seed=1), r64(3, 2, seed=2)

    def loss(F_):
        return lambda x, w, b: (F_.batch_norm(x, None, None, w, b, training=True) ** 3).sum()

    got = vmap(grad(loss(F), argnums=(0, 1, 2)))(x, w, b)
    want = torch.func.vmap(torch.func.grad(loss(torch.nn.functional), argnums=(0, 1, 2)))(
        tt(torch, x), tt(torch, w), tt(torch, b))
    close(got, want, 1e-9)
    got = vmap(grad(loss(F), argnums=(0, 1)), in_dims=(0, None, None))(x, w[0], b[0])
    want = torch.func.vmap(torch.func.grad(loss(torch.nn.functional), argnums=(0, 1)),
                           in_dims=(0, None, None))(tt(torch, x), tt(torch, w[0]),
                                                    tt(torch, b[0]))
    close(got, want, 1e-9)


def test_vmap_batch_norm_refuses_shared_running_stats_like_torch(torch):
    """Training mode with a batched input and running statistics that are not batched (the
    default BatchNorm module) raises PyTorch's error; without running statistics
    (replace_all_batch_norm_modules_, track_running_stats=False) it runs per example."""
    x = r64(3, 4, 2, 5)

    def case(lib, F_, vmap_, x):
        return vmap_(lambda t: F_.batch_norm(t, lib.zeros(2, dtype=lib.float64),
                                             lib.ones(2, dtype=lib.float64), training=True))(x)

    assert_same_error(lambda: case(ember, F, vmap, x),
                      lambda: case(torch, torch.nn.functional, torch.func.vmap, tt(torch, x)))
    m = nn.BatchNorm2d(2).double()
    tm = torch.nn.BatchNorm2d(2).double()
    assert_same_error(lambda: vmap(m)(x[..., None]), lambda: torch.func.vmap(tm)(
        tt(torch, x[..., None])))
    func.replace_all_batch_norm_modules_(m)
    torch.func.replace_all_batch_norm_modules_(tm)
    close(vmap(m)(x[..., None]), torch.func.vmap(tm)(tt(torch, x[..., None])), 1e-10)
    # one value per channel: F.batch_norm's error names the example's size
    assert_same_error(lambda: vmap(lambda t: F.batch_norm(t, None, None, training=True))(
        r64(3, 1, 2)), lambda: torch.func.vmap(lambda t: torch.nn.functional.batch_norm(
            t, None, None, training=True))(torch.zeros(3, 1, 2, dtype=torch.float64)))


def test_vmap_batch_norm_shared_input_batched_parameters(torch):
    """An unbatched input with batched weights (normalized once, each example's affine) or
    batched running statistics (each example updates its own): as torch.func."""
    x = r64(4, 2, 5)
    w, rm, rv = r64(3, 2, seed=1), r64(3, 2, seed=2), r64(3, 2, seed=3).abs() + 0.5
    srm, srv = ember.zeros(2, dtype=ember.float64), ember.ones(2, dtype=ember.float64)
    trm, trv = tt(torch, srm), tt(torch, srv)
    got = vmap(lambda w: F.batch_norm(x, srm, srv, w, None, training=True))(w)
    want = torch.func.vmap(lambda w: torch.nn.functional.batch_norm(
        tt(torch, x), trm, trv, w, None, training=True))(tt(torch, w))
    close(got, want, 1e-10)
    close((srm, srv), (trm, trv), 1e-12)  # one update, not one per example
    trm, trv = tt(torch, rm), tt(torch, rv)
    got = vmap(lambda m, v: F.batch_norm(x, m, v, training=True))(rm, rv)
    want = torch.func.vmap(lambda m, v: torch.nn.functional.batch_norm(
        tt(torch, x), m, v, training=True))(trm, trv)
    close(got, want, 1e-10)
    close((rm, rv), (trm, trv), 1e-12)
    got = vmap(lambda m, v: F.batch_norm(x, m, v, training=False), in_dims=(0, None))(rm, srv)
    want = torch.func.vmap(lambda m, v: torch.nn.functional.batch_norm(
        tt(torch, x), m, v, training=False), in_dims=(0, None))(trm, tt(torch, srv))
    close(got, want, 1e-10)


def _to_torch(torch, module, tmodule):
    """``tmodule`` with ``module``'s parameters."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            dict(tmodule.named_parameters())[name].copy_(tt(torch, p))
    return tmodule


_RNNS = [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=2, batch_first=True)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)),
]


@pytest.mark.parametrize("kind,kw", _RNNS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(_RNNS)])
def test_vmap_recurrent_modules_fold_the_batch(kind, kw):
    """vmap over RNN/LSTM/GRU inputs (batched, unbatched per example, with batched initial
    states) equals the per-example loop, through the layer's batching rule (one fused layer
    for the vmap, not a loop), and per-example gradients equal the loop's."""
    ember.manual_seed(0)
    m = getattr(nn, kind)(3, 4, **kw).double()
    x = r64(5, 6, 2, 3)  # per example (T, B, I) or, batch_first, (B, T, I)
    with _LoopSpy() as spy:
        got = vmap(lambda t: m(t)[0])(x)
        got_h = vmap(lambda t: m(t)[1])(x)
    assert "_recurrent_layer" not in spy.ran
    close(got, ember.stack([m(x[i])[0] for i in range(5)]), 1e-12)
    close(got_h, [ember.stack([m(x[i])[1][j] for i in range(5)]) for j in range(2)]
          if kind == "LSTM" else ember.stack([m(x[i])[1] for i in range(5)]), 1e-12)
    xs = x[:, :, 0]  # unbatched sequences per example
    close(vmap(lambda t: m(t)[0])(xs), ember.stack([m(xs[i])[0] for i in range(5)]), 1e-12)
    D = (2 if m.bidirectional else 1) * m.num_layers
    H = m.proj_size or m.hidden_size
    Bsz = x.shape[1] if m.batch_first else x.shape[2]
    h0 = r64(5, D, Bsz, H, seed=1)
    state = (h0, r64(5, D, Bsz, 4, seed=2)) if kind == "LSTM" else h0
    with _LoopSpy() as spy:
        got = vmap(lambda t, s: m(t, s)[0])(x, state)
    assert "_recurrent_layer" not in spy.ran
    per = [m(x[i], (state[0][i], state[1][i]) if kind == "LSTM" else state[i])[0]
           for i in range(5)]
    close(got, ember.stack(per), 1e-12)
    params = dict(m.named_parameters())

    def loss(p, t):
        return (functional_call(m, p, (t,))[0] ** 2).sum()

    g = vmap(grad(loss), in_dims=(None, 0))(params, x)
    for i in (0, 4):
        close({k: v[i] for k, v in g.items()}, grad(loss)(params, x[i]), 1e-10)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
def test_vmap_recurrent_cells(kind):
    """Cells inside vmap: unbatched and batched inputs per example, with and without a state,
    equal the loop."""
    m = getattr(nn, kind)(3, 4).double()
    for shape in ((5, 3), (5, 2, 3)):
        x = r64(*shape)
        h = r64(*shape[:-1], 4, seed=1)
        state = (h, r64(*shape[:-1], 4, seed=2)) if kind == "LSTMCell" else h
        close(vmap(lambda t: m(t))(x), ember.stack([m(x[i]) for i in range(5)])
              if kind != "LSTMCell" else
              [ember.stack([m(x[i])[j] for i in range(5)]) for j in range(2)], 1e-12)
        got = vmap(lambda t, s: m(t, s))(x, state)
        per = [m(x[i], (state[0][i], state[1][i]) if kind == "LSTMCell" else state[i])
               for i in range(5)]
        close(got, ember.stack(per) if kind != "LSTMCell" else
              [ember.stack([p[j] for p in per]) for j in range(2)], 1e-12)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_vmap_recurrent_ensemble(torch, kind):
    """The ensemble pattern: several models' stacked parameters (stack_module_state) vmapped
    through functional_call: outputs and per-model gradients equal each model's own, and the
    models' outputs equal torch's modules (torch.func.vmap itself refuses this: "Batching rule
    not implemented for aten::lstm.input")."""
    ember.manual_seed(0)
    models = [getattr(nn, kind)(3, 4, batch_first=True).double() for _ in range(3)]
    tmodels = [_to_torch(torch, m, getattr(torch.nn, kind)(3, 4, batch_first=True).double())
               for m in models]
    x = r64(2, 5, 3)
    params, bufs = stack_module_state(models)
    base = models[0]
    got = vmap(lambda p, b: functional_call(base, (p, b), (x,))[0])(params, bufs)
    close(got, ember.stack([m(x)[0] for m in models]), 1e-12)
    close(got, torch.stack([m(tt(torch, x))[0] for m in tmodels]), 1e-10)
    with pytest.raises(RuntimeError, match="Batching rule not implemented"):
        tparams, tbufs = torch.func.stack_module_state(tmodels)
        torch.func.vmap(lambda p, b: torch.func.functional_call(tmodels[0], (p, b), (
            tt(torch, x),))[0])(tparams, tbufs)

    def loss(p, b, t):
        return (functional_call(base, (p, b), (t,))[0] ** 2).sum()

    got = vmap(grad(loss), in_dims=(0, 0, None))(params, bufs, x)
    for i, m in enumerate(models):
        close({k: v[i] for k, v in got.items()}, grad(loss)(dict(m.named_parameters()), {}, x),
              1e-10)


def test_nested_vmap_recurrent_and_batch_norm():
    """Nested vmaps: the layer rule and the batch-norm rule each fold their own level (each
    example's running statistics updated through both levels), and jacrev per example."""
    ember.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2).double()
    x = r64(2, 3, 5, 2, 3)
    want = ember.stack([ember.stack([m(x[i, j])[0] for j in range(3)]) for i in range(2)])
    close(vmap(vmap(lambda t: m(t)[0]))(x), want, 1e-12)
    close(vmap(lambda t: m(t)[0], in_dims=2)(x[0]),
          ember.stack([m(x[0][:, :, i])[0] for i in range(2)]), 1e-12)

    def f(t):
        return m(t)[0].sum(0)

    close(vmap(jacrev(f))(x[0, :, :, 0]),
          ember.stack([jacrev(f)(x[0, i, :, 0]) for i in range(3)]), 1e-10)
    y = r64(2, 3, 4, 2, 5)
    rm, ref = ember.zeros(2, 3, 2, dtype=ember.float64), ember.zeros(2, 3, 2,
                                                                      dtype=ember.float64)
    got = vmap(vmap(lambda t, r: F.batch_norm(t, r, None, training=True)))(y, rm)
    want = ember.stack([ember.stack([F.batch_norm(y[i, j], ref[i, j], None, training=True)
                                     for j in range(3)]) for i in range(2)])
    close(got, want, 1e-12)
    close(rm, ref, 1e-12)


def test_vmap_instance_norm_running_stats_match_torch(torch):
    """Instance norm under vmap: shared running statistics with input statistics raise
    PyTorch's error; batched running statistics (each example's own, updated in place),
    batched weights and evaluation with batched statistics match torch.func, by the rule."""
    x, w = r64(3, 4, 2, 5), r64(3, 2, seed=1)
    rm, rv = r64(3, 2, seed=2), r64(3, 2, seed=3).abs() + 0.5
    TF = torch.nn.functional

    def shared(lib, F_, vmap_, x):
        return vmap_(lambda t: F_.instance_norm(t, lib.zeros(2, dtype=lib.float64),
                                                lib.ones(2, dtype=lib.float64)))(x)

    assert_same_error(lambda: shared(ember, F, vmap, x),
                      lambda: shared(torch, TF, torch.func.vmap, tt(torch, x)))
    trm, trv = tt(torch, rm), tt(torch, rv)
    with _LoopSpy() as spy:
        got = [vmap(lambda t, m, v: F.instance_norm(t, m, v))(x, rm, rv),
               vmap(lambda t, w: F.instance_norm(t, None, None, w))(x, w),
               vmap(lambda t, m, v: F.instance_norm(t, m, v, use_input_stats=False))(x, rm, rv)]
    assert "instance_norm" not in spy.ran
    tx = tt(torch, x)
    want = [torch.func.vmap(lambda t, m, v: TF.instance_norm(t, m, v))(tx, trm, trv),
            torch.func.vmap(lambda t, w: TF.instance_norm(t, None, None, w))(tx, tt(torch, w)),
            torch.func.vmap(lambda t, m, v: TF.instance_norm(t, m, v, use_input_stats=False))(
                tx, trm, trv)]
    close(got, want, 1e-10)
    close((rm, rv), (trm, trv), 1e-12)


def test_vmap_over_autograd_grad_with_batched_grad_outputs():
    # the vmap recipe: the rows of a Jacobian from a graph made outside vmap
    N = 5
    x = ember.randn(N, dtype=ember.float64, requires_grad=True)
    y = x ** 2

    def vjp(v):
        return ember.autograd.grad(y, x, v)

    jac = vmap(vjp)(ember.eye(N, dtype=ember.float64))[0]
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * x.detach().numpy()), rtol=1e-12)
    # the graph was kept between the examples and freed after the last, as one backward
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        ember.autograd.grad(y.sum(), x)


def test_vmap_of_jacrev_with_respect_to_a_dict_of_conv_parameters():
    # the neural-tangent-kernel tutorial: jacobians of a CNN's parameters, per example
    from ember.func import functional_call, jacrev

    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.ReLU(), ember.nn.Flatten(),
                              ember.nn.Linear(4 * 6 * 6, 2))
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = ember.randn(3, 3, 8, 8)

    def f(p, xi):
        return functional_call(net, p, (xi.unsqueeze(0),)).squeeze(0)

    jac = vmap(jacrev(f), (None, 0))(params, x)
    assert isinstance(jac, dict) and jac.keys() == params.keys()
    assert jac["0.weight"].shape == (3, 2, 4, 3, 3, 3)
    for i in range(3):
        one = jacrev(f)(params, x[i])
        for k in params:
            np.testing.assert_allclose(jac[k][i].numpy(), one[k].numpy(), rtol=1e-4, atol=1e-6)


def test_vmap_of_a_function_without_a_module():
    # a function made by exec() with globals lacking __name__ has __module__ None (vmap read
    # it as a string and raised AttributeError)
    ns = {"ember": ember}
    exec("f = lambda x, y: (x * y).sum()", ns)
    assert ns["f"].__module__ is None
    out = ember.func.vmap(ns["f"], in_dims=(0, None))(ember.arange(6.0).view(3, 2),
                                                       ember.tensor([1.0, 2.0]))
    assert out.tolist() == [2.0, 8.0, 14.0]
    g = ember.func.vmap(ember.func.grad(ns["f"]), in_dims=(0, None))(
        ember.ones(3, 2), ember.tensor([1.0, 2.0]))
    assert g.tolist() == [[1.0, 2.0]] * 3
