"""ember.optim: NumPy references, in-place updates, state dicts, devices, hooks and errors."""

import copy
import warnings

import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.testing import register_test_device


@pytest.fixture(scope="module")
def testdev():
    register_test_device("testdev")
    return ember.device("testdev", 0)


def param(values, dtype=ember.float64, device=None):
    return ember.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device,
                        requires_grad=True)


def host(t):
    return t.detach().cpu().numpy()


ALL = [
    (optim.SGD, dict(lr=0.1, momentum=0.9)),
    (optim.Adam, dict(lr=0.1, amsgrad=True)),
    (optim.AdamW, dict(lr=0.1)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5)),
    (optim.Adagrad, dict(lr=0.1)),
    (optim.Adadelta, dict()),
    (optim.Adamax, dict(lr=0.1)),
    (optim.NAdam, dict(lr=0.1)),
    (optim.RAdam, dict(lr=0.1)),
]


# -- NumPy references ---------------------------------------------------------------------
def test_sgd_momentum_nesterov_matches_numpy_reference():
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(6)]
    p = param(x0)
    opt = optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    x, buf = x0.copy(), None
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
        g = g + 0.01 * x
        buf = g.copy() if buf is None else 0.9 * buf + g
        x = x - 0.1 * (g + 0.9 * buf)
        np.testing.assert_allclose(host(p), x, rtol=1e-12)
    np.testing.assert_allclose(host(opt.state[p]["momentum_buffer"]), buf, rtol=1e-12)


def test_adam_matches_numpy_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4)
    p = param(x)
    opt = optim.Adam([p], lr=0.01, betas=(0.8, 0.9), eps=1e-6)
    m = v = np.zeros(4)
    for t in range(1, 8):
        g = rng.standard_normal(4)
        p.grad = ember.tensor(g)
        opt.step()
        m = 0.8 * m + 0.2 * g
        v = 0.9 * v + 0.1 * g * g
        x = x - 0.01 / (1 - 0.8**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.9**t) + 1e-6)
        np.testing.assert_allclose(host(p), x, rtol=1e-10)
    assert opt.state[p]["step"].item() == 7.0


def test_adamw_decays_weights_even_with_zero_gradient():
    p = param([1.0, -2.0])
    opt = optim.AdamW([p], lr=0.1, weight_decay=0.5)
    assert opt.defaults["weight_decay"] == 0.5 and opt.defaults["decoupled_weight_decay"]
    p.grad = ember.zeros(2, dtype=ember.float64)
    opt.step()
    np.testing.assert_allclose(host(p), [0.95, -1.9])
    assert optim.AdamW([param([1.0])]).defaults["weight_decay"] == 0.01


@pytest.mark.parametrize("cls,kwargs", ALL)
def test_maximize_moves_uphill(cls, kwargs):
    p, q = param([0.5, 0.5]), param([0.5, 0.5])
    lo, hi = cls([p], **kwargs), cls([q], maximize=True, **kwargs)
    for _ in range(3):
        p.grad = ember.tensor([1.0, -1.0], dtype=ember.float64)
        q.grad = ember.tensor([1.0, -1.0], dtype=ember.float64)
        lo.step()
        hi.step()
    assert host(p)[0] < 0.5 < host(q)[0]
    assert host(p)[1] > 0.5 > host(q)[1]


# -- in place, versions, data replacement -------------------------------------------------
@pytest.mark.parametrize("cls,kwargs", ALL)
def test_step_updates_in_place_and_bumps_version_once(cls, kwargs):
    p = param(np.ones((3, 2)), dtype=ember.float32)
    opt = cls([p], **kwargs)
    array = p._data
    view = p[0]
    for _ in range(2):
        p.grad = ember.full((3, 2), 0.5)
        before = p._version
        opt.step()
        assert p._version == before + 1
    assert p._data is array
    assert p.dtype is ember.float32
    assert host(view)[0] != 1.0  # views see the update
    for value in opt.state[p].values():
        if value.dim() > 0:
            assert value.dtype is ember.float32


def test_step_follows_replaced_data():
    p = param([1.0, 1.0])
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    p.data = ember.tensor([10.0, 20.0], dtype=ember.float64)
    p.grad = ember.zeros(2, dtype=ember.float64)
    opt.step()
    np.testing.assert_allclose(host(p), [10 - 0.5 * 0.9, 20 - 0.5 * 0.9])


def test_parameters_without_grad_are_skipped():
    p, q = param([1.0]), param([1.0])
    opt = optim.Adam([p, q], lr=0.1)
    p.grad = ember.ones(1, dtype=ember.float64)
    opt.step()
    assert host(q)[0] == 1.0 and q not in opt.state
    assert host(p)[0] != 1.0


def test_step_runs_without_recording_graph():
    p = param([1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    assert p.grad_fn is None and p.is_leaf and p.requires_grad


# -- zero_grad, closure, hooks ------------------------------------------------------------
def test_zero_grad():
    p = param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and host(p.grad).tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_closure_loss_is_returned_and_computed_with_grad():
    p = param([3.0])
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(host(p), [1.5])


def test_step_hooks_run_and_can_be_removed():
    p = param([1.0])
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", host(p)[0])))
    p.grad = ember.ones(1, dtype=ember.float64)
    opt.step()
    assert calls == [("pre", True), ("post", 0.9)]
    h1.remove()
    opt.step()
    assert calls[-1][0] == "post" and len(calls) == 3


def test_lbfgs_minimises_a_quadratic():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 3))
    b = rng.standard_normal(8)
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    A, B = ember.tensor(a), ember.tensor(b)
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                      tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = ((A.matmul(x) - B) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    expected = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(host(x), expected, rtol=1e-6, atol=1e-8)


# -- state dict ---------------------------------------------------------------------------
def test_state_dict_layout_uses_integer_ids_and_float32_step():
    a, b, c = param([1.0]), param([2.0, 3.0]), param([4.0])
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    for p in (a, b, c):
        p.grad = ember.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["lr"] == 0.1
    assert set(sd["state"]) == {0, 1, 2}
    assert set(sd["state"][1]) == {"step", "exp_avg", "exp_avg_sq"}
    step = sd["state"][0]["step"]
    assert step.dtype is ember.float32 and step.dim() == 0 and step.item() == 1.0


def test_load_state_dict_continues_the_same_trajectory():
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(3) for _ in range(10)]
    p = param([1.0, 2.0, 3.0])
    opt = optim.NAdam([p], lr=0.05)
    for g in grads[:5]:
        p.grad = ember.tensor(g)
        opt.step()
    q = param(host(p))
    opt2 = optim.NAdam([q], lr=0.05)
    # as in PyTorch, loading shares tensors that need no cast: load a copy, as from disk
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for g in grads[5:]:
        p.grad = ember.tensor(g)
        q.grad = ember.tensor(g)
        opt.step()
        opt2.step()
    # mu_product is cast to the parameter's float64 on load (as PyTorch does): tiny drift only
    np.testing.assert_allclose(host(q), host(p), rtol=1e-9)


def test_load_state_dict_errors():
    opt = optim.SGD([param([1.0]), param([2.0])], lr=0.1)
    other = optim.SGD([{"params": [param([1.0])]}, {"params": [param([1.0])]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(other.state_dict())
    small = optim.SGD([param([1.0])], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(small.state_dict())


def test_adagrad_state_exists_before_the_first_step():
    p = param([1.0, 2.0])
    opt = optim.Adagrad([p], initial_accumulator_value=0.3)
    assert host(opt.state[p]["sum"]).tolist() == [0.3, 0.3]
    assert opt.state[p]["step"].item() == 0.0


# -- devices ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kwargs", ALL)
def test_state_lives_on_the_parameter_device(testdev, cls, kwargs):
    p = param([1.0, -1.0], device=testdev)
    ref = param([1.0, -1.0])
    opt, ref_opt = cls([p], **kwargs), cls([ref], **kwargs)
    for _ in range(3):
        p.grad = ember.tensor([0.3, 0.7], dtype=ember.float64, device=testdev)
        ref.grad = ember.tensor([0.3, 0.7], dtype=ember.float64)
        opt.step()
        ref_opt.step()
    assert p.device == testdev
    np.testing.assert_allclose(host(p), host(ref), rtol=1e-14)
    for key, value in opt.state[p].items():
        if key in ("step", "mu_product"):
            assert value.device.type == "cpu" and value.dtype is ember.float32
        else:
            assert value.device == testdev


def test_load_state_dict_moves_state_to_the_parameter(testdev):
    p = param([1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    q = ember.tensor([1.0, 2.0], dtype=ember.float32, device=testdev, requires_grad=True)
    opt2 = optim.Adam([q], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    state = opt2.state[q]
    assert state["exp_avg"].device == testdev and state["exp_avg"].dtype is ember.float32
    assert state["step"].device.type == "cpu" and state["step"].dtype is ember.float32


# -- errors -------------------------------------------------------------------------------
def test_constructor_errors():
    p = param([1.0])
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.Adam(p)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.Adam([p * 2])
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        optim.RMSprop([p], lr=-0.1)


def test_add_param_group_rejects_duplicates_and_fills_defaults():
    p, q = param([1.0]), param([2.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        opt.add_param_group({"params": [p]})
    opt.add_param_group({"params": q, "lr": 0.01})
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.01
    assert opt.param_groups[1]["params"] == [q]
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([q, q], lr=0.1)


def test_accepted_and_ignored_flags():
    p = param([1.0])
    opt = optim.Adam([p], lr=0.1, foreach=True, capturable=True, differentiable=False)
    p.grad = ember.ones(1, dtype=ember.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
    assert opt.param_groups[0]["foreach"] is True
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.SGD([param([1.0])], lr=0.1, fused=True, foreach=True)


def test_repr_lists_group_options():
    text = repr(optim.SGD([param([1.0])], lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n")
    assert "    lr: 0.1\n" in text and text.endswith(")")


def test_wrapper_optimizer_without_optimizer_init_steps_its_inner_one():
    """A subclass that wraps another optimizer and never runs ``Optimizer.__init__``
    (HuggingFace accelerate's AcceleratedOptimizer): its step runs bare, as PyTorch's
    (which patches step in ``__init__``), and the inner optimizer's hooks run once."""
    p = ember.nn.Parameter(ember.ones(2))
    inner = ember.optim.SGD([p], lr=0.5)
    calls = []
    inner.register_step_pre_hook(lambda opt, args, kwargs: calls.append("pre"))

    class Wrapper(ember.optim.Optimizer):
        def __init__(self, optimizer):
            self.optimizer = optimizer

        @property
        def param_groups(self):
            return self.optimizer.param_groups

        def step(self, closure=None):
            return self.optimizer.step(closure)

    p.grad = ember.ones(2)
    Wrapper(inner).step()
    assert p.tolist() == [0.5, 0.5] and calls == ["pre"]
