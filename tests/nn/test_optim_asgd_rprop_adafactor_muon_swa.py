"""ember.optim's ASGD, Rprop, Adafactor, Muon, swa_utils and swap_in_optimizer_params_and_state:
parity with PyTorch step by step, constructor errors, state dicts, devices, module paths."""

import copy
import importlib
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim
from ember.optim import swa_utils


def param(values, dtype=ember.float64, device=None):
    return ember.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device,
                        requires_grad=True)


def host(t):
    return t.detach().cpu().numpy()


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# (name, constructor kwargs, parameter shapes): each optimizer with its options exercised
CASES = [
    ("ASGD", dict(lr=0.05, t0=2, weight_decay=0.1), [(3, 4), (5,), ()]),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=0, maximize=True), [(3, 4), (5,)]),
    ("Rprop", dict(lr=0.05), [(3, 4), (5,), ()]),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.7), step_sizes=(1e-3, 0.1), maximize=True),
     [(3, 4), (2, 3)]),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1), [(3, 4), (2, 3, 4), (5,), ()]),
    ("Adafactor", dict(lr=0.5, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.5, maximize=True),
     [(4, 3), (6,)]),
    ("Muon", dict(lr=0.02), [(4, 6), (7, 3), (5, 5)]),
    ("Muon", dict(lr=0.02, weight_decay=0.0, momentum=0.9, nesterov=False,
                  adjust_lr_fn="match_rms_adamw"), [(4, 6), (7, 3)]),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def _trajectories(torch, name, kwargs, shapes, np_dtype, steps=5, seed=0):
    """The parameters of Ember's and PyTorch's optimizer after each of ``steps`` steps on the
    same gradients."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np_dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np_dtype) for s in shapes] for _ in range(steps)]
    ours = [ember.tensor(x, requires_grad=True) for x in init]
    theirs = [torch.tensor(x, requires_grad=True) for x in init]
    opt, ref = getattr(optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for gs in grads:
        for p, q, g in zip(ours, theirs, gs):
            p.grad, q.grad = ember.tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        yield [host(p) for p in ours], [q.detach().numpy() for q in theirs]


# -- parity with PyTorch -------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,shapes", CASES, ids=IDS)
def test_matches_torch_step_by_step_float64(torch, name, kwargs, shapes):
    for ours, theirs in _trajectories(torch, name, kwargs, shapes, np.float64):
        for a, b in zip(ours, theirs):
            # Muon's Newton-Schulz runs on bfloat16 values: a rounding tie may fall otherwise
            np.testing.assert_allclose(a, b, rtol=1e-4 if name == "Muon" else 1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kwargs,shapes", CASES, ids=IDS)
def test_matches_torch_step_by_step_float32(torch, name, kwargs, shapes):
    for ours, theirs in _trajectories(torch, name, kwargs, shapes, np.float32):
        for a, b in zip(ours, theirs):
            assert a.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_state_and_param_groups_match_torch_layout(torch):
    for name, kwargs, _ in CASES:
        p, q = ember.ones(3, 2, requires_grad=True), torch.ones(3, 2, requires_grad=True)
        opt, ref = getattr(optim, name)([p], **kwargs), getattr(torch.optim, name)([q], **kwargs)
        p.grad, q.grad = ember.ones(3, 2), torch.ones(3, 2)
        opt.step()
        ref.step()
        ours, theirs = opt.state_dict(), ref.state_dict()
        assert ours["param_groups"] == theirs["param_groups"], name
        assert list(ours["state"][0]) == list(theirs["state"][0]), name
        for key, value in theirs["state"][0].items():
            mine = ours["state"][0][key]
            assert tuple(mine.shape) == tuple(value.shape), (name, key)
            assert str(mine.dtype).split(".")[1] == str(value.dtype).split(".")[1], (name, key)
            np.testing.assert_allclose(host(mine), value.numpy(), rtol=1e-6, err_msg=key)
        assert repr(opt) == repr(ref), name


def test_state_names():
    p = param(np.ones((2, 3)))
    expected = {"ASGD": ["step", "eta", "mu", "ax"], "Rprop": ["step", "prev", "step_size"],
                "Adafactor": ["step", "row_var", "col_var"], "Muon": ["momentum_buffer"]}
    for name, keys in expected.items():
        opt = getattr(optim, name)([p])
        p.grad = ember.ones(2, 3, dtype=ember.float64)
        opt.step()
        assert list(opt.state[p]) == keys
    vec = param([1.0, 2.0])
    opt = optim.Adafactor([vec])
    vec.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    assert list(opt.state[vec]) == ["step", "variance"]
    assert opt.state[vec]["step"].dtype is ember.float32


# -- the algorithms, without PyTorch ------------------------------------------------------
def test_asgd_matches_numpy_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(4)
    p = param(x)
    lr, lambd, alpha, t0 = 0.1, 0.05, 0.6, 2
    opt = optim.ASGD([p], lr=lr, lambd=lambd, alpha=alpha, t0=t0)
    eta, mu, ax = np.float32(lr), 1.0, np.zeros(4)
    for step in range(1, 7):
        g = rng.standard_normal(4)
        p.grad = ember.tensor(g)
        opt.step()
        x = x * (1 - lambd * float(eta)) - float(eta) * g
        ax = ax + (x - ax) * mu if mu != 1 else x.copy()
        eta = np.float32(lr / (1 + lambd * lr * step) ** alpha)
        mu = float(np.float32(1 / max(1, step - t0)))
        np.testing.assert_allclose(host(p), x, rtol=1e-12)
        np.testing.assert_allclose(host(opt.state[p]["ax"]), ax, rtol=1e-12)
    assert opt.state[p]["eta"].item() == eta and opt.state[p]["mu"].item() == mu


def test_rprop_grows_shrinks_and_clamps_step_sizes():
    p = param([0.0, 0.0, 0.0])
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.04, 0.3))
    grads = [[1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    for g in grads:
        p.grad = ember.tensor(g, dtype=ember.float64)
        opt.step()
    # element 0: 0.1 -> 0.2 -> 0.3 (clamped) -> 0.3; element 1: 0.1 -> 0.05 (flip, no step)
    # -> 0.05 (prev was zeroed) -> 0.1; element 2: no step on zero gradients, then 0.1, 0.2
    np.testing.assert_allclose(host(opt.state[p]["step_size"]), [0.3, 0.1, 0.2])
    np.testing.assert_allclose(host(p), [-(0.1 + 0.2 + 0.3 + 0.3), -(0.1 + 0.05 + 0.1),
                                         -(0.1 + 0.2)])
    assert opt.state[p]["step"].item() == 4


def test_adafactor_factors_second_moments_of_matrices():
    rng = np.random.default_rng(2)
    p = param(rng.standard_normal((4, 3)))
    opt = optim.Adafactor([p], lr=0.1)
    g = rng.standard_normal((4, 3))
    p.grad = ember.tensor(g)
    opt.step()  # at step 1 the decay is 1: the factors are the means of the squares
    np.testing.assert_allclose(host(opt.state[p]["row_var"]), (g * g).mean(1, keepdims=True))
    np.testing.assert_allclose(host(opt.state[p]["col_var"]), (g * g).mean(0, keepdims=True))


def test_muon_orthogonalizes_the_update():
    from ember.optim._muon import _round_bf16, _zeropower_via_newtonschulz

    rng = np.random.default_rng(3)
    for shape in [(8, 5), (5, 8)]:
        out = _zeropower_via_newtonschulz(rng.standard_normal(shape), (3.4445, -4.7750, 2.0315),
                                          5, 1e-7)
        assert out.shape == shape and out.dtype == np.float32
        assert np.array_equal(_round_bf16(out), out)  # bfloat16 values
        singular = np.linalg.svd(out.astype(np.float64), compute_uv=False)
        assert np.all((singular > 0.5) & (singular < 1.5))
    x = np.array([1.0, 1.00390625, 1.005859375, np.nan, np.inf, -3e38], dtype=np.float32)
    np.testing.assert_array_equal(_round_bf16(x)[:3], [1.0, 1.0, 1.0078125])  # ties to even
    assert np.isnan(_round_bf16(x)[3]) and _round_bf16(x)[4] == np.inf


def test_muon_adjusts_lr_by_shape():
    from ember.optim._muon import _adjust_lr

    assert _adjust_lr(0.1, None, (8, 2)) == pytest.approx(0.2)
    assert _adjust_lr(0.1, "original", (2, 8)) == pytest.approx(0.1)
    assert _adjust_lr(0.1, "match_rms_adamw", (4, 9)) == pytest.approx(0.1 * 0.2 * 3)


@pytest.mark.parametrize("name", ["ASGD", "Rprop", "Adafactor"])
def test_maximize_moves_uphill(name):
    p, q = param(np.full((2, 2), 0.5)), param(np.full((2, 2), 0.5))
    lo, hi = getattr(optim, name)([p]), getattr(optim, name)([q], maximize=True)
    for _ in range(3):
        p.grad = ember.tensor([[1.0, -1.0], [1.0, -1.0]], dtype=ember.float64)
        q.grad = ember.tensor([[1.0, -1.0], [1.0, -1.0]], dtype=ember.float64)
        lo.step()
        hi.step()
    assert host(p)[0, 0] < 0.5 < host(q)[0, 0]
    assert host(p)[0, 1] > 0.5 > host(q)[0, 1]


@pytest.mark.parametrize("name,kwargs,shapes", CASES[::2], ids=IDS[::2])
def test_step_updates_in_place_and_bumps_version_once(name, kwargs, shapes):
    ps = [ember.ones(s, requires_grad=True) for s in shapes]
    opt = getattr(optim, name)(ps, **kwargs)
    arrays = [p._data for p in ps]
    for _ in range(2):
        for p in ps:
            p.grad = ember.full(p.shape, 0.5)
        before = [p._version for p in ps]
        opt.step()
        assert [p._version for p in ps] == [v + 1 for v in before]
    assert all(p._data is a and p.dtype is ember.float32 for p, a in zip(ps, arrays))
    assert ps[0].grad_fn is None and ps[0].is_leaf


def test_parameters_without_grad_are_skipped():
    for name, kwargs, _ in CASES[::2]:
        p, q = param(np.ones((2, 2))), param(np.ones((2, 2)))
        opt = getattr(optim, name)([p, q], **kwargs)
        p.grad = ember.ones(2, 2, dtype=ember.float64)
        opt.step()
        assert q not in opt.state and np.all(host(q) == 1.0)


def test_closure_is_called_and_its_loss_returned():
    p = param(np.ones((2, 2)))
    for name in ("ASGD", "Rprop", "Adafactor", "Muon"):
        opt = getattr(optim, name)([p])

        def closure(opt=opt):
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss

        before = host(p).copy()
        with ember.no_grad():
            assert opt.step(closure).item() == pytest.approx(float((before ** 2).sum()))
        assert np.all(host(p) < before)


# -- state dicts --------------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,shapes", CASES, ids=IDS)
def test_state_dict_round_trip_continues_identically(name, kwargs, shapes):
    # float32 parameters: loading casts float state to the parameter's dtype (as PyTorch does),
    # which for ASGD's float32 'eta' and 'mu' would change the float64 trajectory in its last bits
    rng = np.random.default_rng(4)
    ps = [param(rng.standard_normal(s), dtype=ember.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(6)]
    opt = getattr(optim, name)(ps, **kwargs)
    for gs in grads[:3]:
        for p, g in zip(ps, gs):
            p.grad = ember.tensor(g)
        opt.step()
    qs = [param(host(p), dtype=ember.float32) for p in ps]
    fresh = getattr(optim, name)(qs, **kwargs)
    fresh.load_state_dict(copy.deepcopy(opt.state_dict()))  # as from disk
    assert fresh.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    for gs in grads[3:]:
        for p, q, g in zip(ps, qs, gs):
            p.grad, q.grad = ember.tensor(g), ember.tensor(g)
        opt.step()
        fresh.step()
        for p, q in zip(ps, qs):
            np.testing.assert_array_equal(host(q), host(p))


def test_state_dict_survives_save_and_load(tmp_path):
    p = param(np.ones((3, 2)))
    opt = optim.ASGD([p], t0=0)
    p.grad = ember.ones(3, 2, dtype=ember.float64)
    opt.step()
    ember.save(opt.state_dict(), tmp_path / "opt.pt")
    loaded = ember.load(tmp_path / "opt.pt")
    q = param(host(p))
    fresh = optim.ASGD([q], t0=0)
    fresh.load_state_dict(loaded)
    state = fresh.state[q]
    # as in PyTorch, the float state is cast to the parameter's dtype on load, 'step' is not
    assert state["step"].dtype is ember.float32 and state["eta"].dtype is ember.float64
    p.grad = q.grad = ember.full((3, 2), 0.3, dtype=ember.float64)
    opt.step()
    fresh.step()
    np.testing.assert_allclose(host(q), host(p), rtol=1e-7)


def test_torch_state_dict_loads_into_ember(torch):
    rng = np.random.default_rng(5)
    x, grads = rng.standard_normal((3, 4)), [rng.standard_normal((3, 4)) for _ in range(5)]
    for name, kwargs, _ in CASES[::2]:
        q = torch.tensor(x, requires_grad=True)
        ref = getattr(torch.optim, name)([q], **kwargs)
        for g in grads[:3]:
            q.grad = torch.tensor(g)
            ref.step()
        sd = ref.state_dict()
        converted = {"param_groups": copy.deepcopy(sd["param_groups"]),
                     "state": {k: {n: ember.tensor(v.numpy()) for n, v in s.items()}
                               for k, s in sd["state"].items()}}
        p = param(q.detach().numpy())
        opt = getattr(optim, name)([p], **kwargs)
        opt.load_state_dict(converted)
        for g in grads[3:]:
            q.grad, p.grad = torch.tensor(g), ember.tensor(g)
            ref.step()
            opt.step()
        # Muon: bfloat16 ties; ASGD: 'eta' and 'mu' are float64 after loading (cast to the
        # parameter's dtype, as PyTorch casts them), float32 in the optimizer that kept running
        rtol = {"Muon": 1e-4, "ASGD": 1e-6}.get(name, 1e-12)
        np.testing.assert_allclose(host(p), q.detach().numpy(), rtol=rtol, atol=1e-12,
                                   err_msg=name)


def test_setstate_converts_old_number_state():
    p = param([1.0, 2.0])
    opt = optim.ASGD([p])
    p.grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    state = opt.__getstate__()
    state["state"][p] = dict(state["state"][p], step=1, eta=0.01, mu=1.0)
    restored = optim.ASGD.__new__(optim.ASGD)
    restored.__setstate__(state)
    assert all(isinstance(restored.state[p][k], ember.Tensor) for k in ("step", "eta", "mu"))


# -- devices ------------------------------------------------------------------------------
@pytest.mark.parametrize("dev", ["testdev", "strict"])
def test_state_lives_where_pytorch_keeps_it(dev):
    from ember.testing import register_strict_device, register_test_device

    register_test_device("testdev") if dev == "testdev" else register_strict_device()
    device = ember.device(dev, 0)
    where_step = {"ASGD": device, "Rprop": None, "Adafactor": None, "Muon": None}
    for name, kwargs, shapes in CASES[::2]:
        rng = np.random.default_rng(6)
        init = [rng.standard_normal(s) for s in shapes]
        ours = [param(x, device=device) for x in init]
        ref = [param(x) for x in init]
        opt, ref_opt = getattr(optim, name)(ours, **kwargs), getattr(optim, name)(ref, **kwargs)
        for _ in range(3):
            for p, r in zip(ours, ref):
                g = rng.standard_normal(p.shape)
                p.grad, r.grad = ember.tensor(g, device=device), ember.tensor(g)
            opt.step()
            ref_opt.step()
        for p, r in zip(ours, ref):
            assert p.device == device
            np.testing.assert_array_equal(host(p), host(r))
        for key, value in opt.state[ours[0]].items():
            if key == "step":
                assert value.device == (where_step[name] or ember.device("cpu"))
            else:
                assert value.device == device, (name, key)


def test_rprop_capturable_keeps_step_on_the_parameter_device():
    from ember.testing import register_test_device

    register_test_device("testdev")
    device = ember.device("testdev", 0)
    p = param([1.0], device=device)
    opt = optim.Rprop([p], capturable=True)
    p.grad = ember.ones(1, dtype=ember.float64, device=device)
    opt.step()
    assert opt.state[p]["step"].device == device


def test_scalar_state_follows_a_float64_default_dtype():
    previous = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        p = param([1.0])
        opt = optim.ASGD([p])
        p.grad = ember.ones(1)
        opt.step()
        assert all(opt.state[p][k].dtype is ember.float64 for k in ("step", "eta", "mu"))
    finally:
        ember.set_default_dtype(previous)


# -- constructor and step errors ----------------------------------------------------------
ERRORS = [
    ("ASGD", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("ASGD", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    ("Rprop", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("Rprop", dict(etas=(1.5, 2.0)), "Invalid eta values: 1.5, 2.0"),
    ("Rprop", dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    ("Rprop", dict(etas=(0.0, 1.2)), "Invalid eta values: 0.0, 1.2"),
    ("Adafactor", dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    ("Adafactor", dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(weight_decay=-0.1), "weight_decay should be >= 0 but is: -0.1"),
    ("Muon", dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    ("Muon", dict(momentum=-0.5), "momentum should be >= 0 but is: -0.5"),
    ("Muon", dict(weight_decay=-0.1), "weight decay should be >= 0 but is: -0.1"),
    ("Muon", dict(adjust_lr_fn="spectral"), "Adjust learning rate function spectral is not "
                                            "supported"),
]


@pytest.mark.parametrize("name,kwargs,message", ERRORS)
def test_constructor_errors(name, kwargs, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                       + "$"):
        getattr(optim, name)([param(np.ones((2, 2)))], **kwargs)


@pytest.mark.parametrize("name,kwargs,message", ERRORS)
def test_constructor_errors_match_torch(torch, name, kwargs, message):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.ones(2, 2, requires_grad=True)], **kwargs)
    assert str(theirs.value) == message


@pytest.mark.parametrize("name", ["ASGD", "Rprop", "Adafactor", "Muon"])
def test_tensor_lr_must_have_one_element(name):
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(optim, name)([param(np.ones((2, 2)))], lr=ember.tensor([0.1, 0.2]))
    p = param(np.ones((2, 2)))
    opt = getattr(optim, name)([p], lr=ember.tensor(0.01))
    p.grad = ember.ones(2, 2, dtype=ember.float64)
    opt.step()
    assert np.all(host(p) != 1.0)


def test_common_optimizer_errors():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Rprop([])
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.ASGD(param([1.0]))
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.Adafactor([param([1.0]) * 2])


def test_muon_rejects_parameters_that_are_not_matrices():
    with pytest.raises(ValueError, match=r"^Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: ember.Size\(\[3\]\)$"):
        optim.Muon([param(np.ones((2, 2))), param([1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([{"params": [param(np.ones((2, 2)))]}, {"params": [param(np.ones(2))]}])


def test_muon_newton_schulz_errors_at_step():
    for kwargs, message in [(dict(ns_steps=100), "Number of steps must be less than 100 for "
                                                 "computational efficiency"),
                            (dict(ns_coefficients=(1.0, 2.0)), "Coefficients must be a tuple "
                                                               "of exactly 3 values")]:
        p = param(np.ones((2, 2)))
        opt = optim.Muon([p], **kwargs)
        p.grad = ember.ones(2, 2, dtype=ember.float64)
        with pytest.raises(ValueError, match=message):
            opt.step()


def test_compatibility_flags_are_accepted_and_stored():
    p = param(np.ones((2, 2)))
    asgd = optim.ASGD([p], foreach=True, maximize=False, differentiable=False, capturable=True)
    rprop = optim.Rprop([p], capturable=True, foreach=False, differentiable=False)
    ada = optim.Adafactor([p], foreach=True, maximize=True)
    assert asgd.defaults["foreach"] is True and asgd.defaults["capturable"] is True
    assert rprop.defaults["capturable"] is True and rprop.defaults["foreach"] is False
    assert ada.defaults["foreach"] is True and ada.defaults["maximize"] is True
    with pytest.raises(TypeError):
        optim.Muon([p], foreach=True)  # PyTorch's Muon has no such keyword
    with pytest.raises(TypeError):
        optim.Adafactor([p], 0.01, -0.8, (None, 1e-3), 1.0, 0.0, None)  # foreach is keyword-only


# -- swap_in_optimizer_params_and_state ---------------------------------------------------
def _adam_with_state():
    p, q = param([1.0, 2.0]), param([3.0])
    opt = optim.Adam([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
    p.grad, q.grad = ember.ones(2, dtype=ember.float64), ember.ones(1, dtype=ember.float64)
    opt.step()
    return opt, p, q


def test_swap_in_steps_the_given_parameters_and_state_then_restores():
    opt, p, q = _adam_with_state()
    live_state, live_params = opt.state, opt.param_groups[0]["params"]
    p_before = host(p)
    osd = copy.deepcopy(opt.state_dict())
    osd["param_groups"][1]["lr"] = 0.25
    fake = {"p": param([10.0, 20.0]), "q": param([30.0])}
    fake["p"].grad = ember.ones(2, dtype=ember.float64)
    fake["q"].grad = ember.ones(1, dtype=ember.float64)
    expected = copy.deepcopy(opt)
    expected.param_groups[1]["lr"] = 0.25
    expected_p, expected_q = expected.param_groups[0]["params"][0], \
        expected.param_groups[1]["params"][0]
    expected_p.data = ember.tensor([10.0, 20.0], dtype=ember.float64)
    expected_q.data = ember.tensor([30.0], dtype=ember.float64)
    expected_p.grad = ember.ones(2, dtype=ember.float64)
    expected_q.grad = ember.ones(1, dtype=ember.float64)
    expected.step()
    with optim.swap_in_optimizer_params_and_state(opt, fake, osd):
        assert opt.param_groups[1]["lr"] == 0.25
        assert opt.param_groups[0]["params"] == [fake["p"]]
        opt.step()
    np.testing.assert_allclose(host(fake["p"]), host(expected_p))
    np.testing.assert_allclose(host(fake["q"]), host(expected_q))
    # in-place updates reached the given state dict
    assert osd["state"][0]["step"].item() == 2.0
    np.testing.assert_allclose(host(osd["state"][1]["exp_avg"]),
                               host(expected.state[expected_q]["exp_avg"]))
    # the live optimizer is untouched
    assert opt.state is live_state and opt.param_groups[0]["params"] is live_params
    assert opt.param_groups[1]["lr"] == 0.5 and opt.state[p]["step"].item() == 1.0
    np.testing.assert_array_equal(host(p), p_before)


def test_swap_in_restores_after_an_error():
    opt, p, _ = _adam_with_state()
    osd = opt.state_dict()
    with pytest.raises(KeyError):
        with optim.swap_in_optimizer_params_and_state(opt, {"a": param([0.0, 0.0]),
                                                            "b": param([0.0])}, osd):
            raise KeyError("boom")
    assert opt.param_groups[0]["params"] == [p] and p in opt.state


def test_swap_in_errors():
    opt, p, q = _adam_with_state()
    params = {"p": param([0.0, 0.0]), "q": param([0.0])}
    osd = opt.state_dict()

    def swap(o, ps, sd):
        with optim.swap_in_optimizer_params_and_state(o, ps, sd):
            pass

    fresh = optim.SGD([param([1.0])], lr=0.1)
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        swap(fresh, params, osd)
    with pytest.raises(RuntimeError, match="requires a DCP-style optimizer state_dict"):
        swap(opt, params, [osd])
    with pytest.raises(RuntimeError, match=r"swapin_optim_state\['state'\] to be a dict mapping "
                                           "packed parameter ids to per-param state dicts, got "
                                           "list"):
        swap(opt, params, {"state": [], "param_groups": osd["param_groups"]})
    with pytest.raises(RuntimeError, match="state keyed by packed parameter ids"):
        swap(opt, params, {"state": {p: {}}, "param_groups": osd["param_groups"]})
    with pytest.raises(RuntimeError, match="per-parameter optimizer state entries to be "
                                           "dictionaries"):
        swap(opt, params, {"state": {0: 1}, "param_groups": osd["param_groups"]})
    with pytest.raises(RuntimeError, match=r"\['param_groups'\] to be a list of param-group "
                                           "dicts, got tuple"):
        swap(opt, params, {"state": {}, "param_groups": tuple(osd["param_groups"])})
    with pytest.raises(RuntimeError, match="different number of parameter groups than the live"):
        swap(opt, params, {"state": {}, "param_groups": osd["param_groups"][:1]})
    with pytest.raises(RuntimeError, match="each optimizer param group to be a dictionary"):
        swap(opt, params, {"state": {}, "param_groups": [1, 2]})
    groups = copy.deepcopy(osd["param_groups"])
    groups[0]["params"] = ["0"]
    with pytest.raises(RuntimeError, match=r"param_groups\[\*\]\['params'\] entries keyed by "
                                           "packed parameter ids"):
        swap(opt, params, {"state": {}, "param_groups": groups})
    groups[0]["params"] = [0, 1]
    with pytest.raises(RuntimeError, match="param group 0 has a different number of params"):
        swap(opt, params, {"state": {}, "param_groups": groups})
    groups = copy.deepcopy(osd["param_groups"])
    groups[1]["extra"] = 1
    del groups[1]["eps"]
    with pytest.raises(RuntimeError, match=r"for group 1. Keys only in swap-in: \['extra'\]. "
                                           r"Keys only in live: \['eps'\]."):
        swap(opt, params, {"state": {}, "param_groups": groups})
    with pytest.raises(RuntimeError, match="explicit parameter state to match "
                                           "optimizer.param_groups ordering"):
        swap(opt, {"p": params["p"]}, osd)
    with pytest.raises(RuntimeError, match=r"got extra keys \[7\]"):
        swap(opt, params, {"state": {7: {}}, "param_groups": osd["param_groups"]})


# -- swa_utils ----------------------------------------------------------------------------
def _pair_models(torch, seed=0):
    """The same small model (with batch norm) in Ember and PyTorch."""
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.Linear(4, 2)).double()
    ours.double()
    rng = np.random.default_rng(seed)
    for (_, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        value = rng.standard_normal(tuple(a.shape))
        a.data = ember.tensor(value)
        b.data = torch.tensor(value)
    return ours, theirs


def _perturb(torch, ours, theirs, rng):
    with ember.no_grad(), torch.no_grad():
        for a, b in zip(ours.parameters(), theirs.parameters()):
            delta = rng.standard_normal(tuple(a.shape))
            a.add_(ember.tensor(delta))
            b.add_(torch.tensor(delta))
    x = rng.standard_normal((5, 3))
    ours.train()(ember.tensor(x))
    theirs.train()(torch.tensor(x))  # moves the batch-norm buffers


@pytest.mark.parametrize("how", ["swa", "ema_multi", "ema_avg", "swa_avg", "swa_multi",
                                 "ema_buffers"])
def test_averaged_model_matches_torch(torch, how):
    ours, theirs = _pair_models(torch)
    tsu = torch.optim.swa_utils

    def make(lib):
        su = tsu if lib is torch else swa_utils
        model = theirs if lib is torch else ours
        kwargs = {"swa": {}, "ema_multi": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.8)},
                  "ema_avg": {"avg_fn": su.get_ema_avg_fn(0.7)},
                  "swa_avg": {"avg_fn": su.get_swa_avg_fn()},
                  "swa_multi": {"multi_avg_fn": su.get_swa_multi_avg_fn()},
                  "ema_buffers": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.5),
                                  "use_buffers": True}}[how]
        return su.AveragedModel(model, **kwargs)

    avg_ours, avg_theirs = make(ember), make(torch)
    rng = np.random.default_rng(1)
    for _ in range(4):
        _perturb(torch, ours, theirs, rng)
        avg_ours.update_parameters(ours)
        avg_theirs.update_parameters(theirs)
    theirs_sd = avg_theirs.state_dict()
    ours_sd = avg_ours.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    for key, value in theirs_sd.items():
        np.testing.assert_allclose(host(ours_sd[key]), value.numpy(), rtol=1e-12, err_msg=key)
    assert avg_ours.n_averaged.item() == 4 and avg_ours.n_averaged.dtype is ember.int64
    x = rng.standard_normal((2, 3))
    np.testing.assert_allclose(host(avg_ours.eval()(ember.tensor(x))),
                               avg_theirs.eval()(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_averaged_model_copies_and_moves():
    from ember.testing import register_test_device

    register_test_device("testdev")
    model = nn.Linear(2, 2)
    avg = swa_utils.AveragedModel(model, device=ember.device("testdev", 0))
    assert avg.module is not model and avg.module.weight.device == ember.device("testdev", 0)
    assert avg.n_averaged.device == ember.device("testdev", 0)
    avg.update_parameters(model)
    np.testing.assert_array_equal(host(avg.module.weight), host(model.weight))
    with ember.no_grad():
        model.weight.add_(1.0)
    avg.update_parameters(model)
    np.testing.assert_allclose(host(avg.module.weight), host(model.weight) - 0.5, rtol=1e-6)


def test_averaged_model_integer_buffers_with_use_buffers():
    model = nn.BatchNorm1d(2)
    avg = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5),
                                  use_buffers=True)
    for _ in range(3):
        model.train()(ember.randn(4, 2))
        avg.update_parameters(model)
    # integers take the arithmetic path, truncated back: 1 -> (1 + 2) / 2 -> (1 + 3) / 2
    assert avg.module.num_batches_tracked.dtype is ember.int64
    assert avg.module.num_batches_tracked.item() == 2
    # as in PyTorch, the SWA multi-tensor average refuses integers (addcdiv's integer division)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                                           "supported"):
        swa_utils.get_swa_multi_avg_fn()([ember.tensor([1])], [ember.tensor([3])],
                                         ember.tensor(1))


def test_swa_utils_errors():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be "
                                             "provided"):
        swa_utils.AveragedModel(nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    for fn in (swa_utils.get_ema_avg_fn, swa_utils.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide "
                                             r"a value in \[0,1\] range."):
            fn(1.5)
    opt = optim.SGD([param([1.0])], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        swa_utils.SWALR(opt, swa_lr=0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as "
                                         "optimizer.param_groups"):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01],
                                                             anneal_strategy="linear",
                                                             anneal_epochs=3),
                                    dict(swa_lr=0.2, anneal_epochs=0)])
def test_swalr_matches_torch(torch, kwargs):
    def lrs(lib, opt_mod, sched_mod):
        a, b = lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = opt_mod.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.5)
        sched = sched_mod.SWALR(opt, **kwargs)
        out = []
        for _ in range(14):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr())
        return out, sched

    ours, sched = lrs(ember, optim, swa_utils)
    theirs, ref = lrs(torch, torch.optim, torch.optim.swa_utils)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert set(sched.state_dict()) == set(ref.state_dict())
    assert "optimizer" not in sched.state_dict() and "anneal_func" not in sched.state_dict()
    _, fresh = lrs(ember, optim, swa_utils)
    fresh.load_state_dict(copy.deepcopy(sched.state_dict()))
    assert fresh.anneal_func == sched.anneal_func and fresh.get_last_lr() == ours[-1]


def test_update_bn_matches_torch(torch):
    ours, theirs = _pair_models(torch)
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((6, 3)) for _ in range(3)]
    ours.eval()
    theirs.eval()
    bn_ours, bn_theirs = ours[1], theirs[1]
    bn_ours.momentum = bn_theirs.momentum = 0.3
    swa_utils.update_bn([(ember.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], theirs)
    np.testing.assert_allclose(host(bn_ours.running_mean), bn_theirs.running_mean.numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(host(bn_ours.running_var), bn_theirs.running_var.numpy(),
                               rtol=1e-12)
    assert bn_ours.momentum == 0.3 and not ours.training
    assert bn_ours.num_batches_tracked.item() == 3


def test_update_bn_without_batch_norm_does_nothing():
    model = nn.Linear(2, 2)
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    swa_utils.update_bn([ember.ones(1, 2)], model)
    assert calls == []


# -- module paths -------------------------------------------------------------------------
def test_module_paths_mirror_torch_optim():
    paths = {"asgd": ["ASGD"], "rprop": ["Rprop"], "_adafactor": ["Adafactor"],
             "_muon": ["Muon"], "_stateless": ["swap_in_optimizer_params_and_state"],
             "swa_utils": ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
                           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]}
    for module, names in paths.items():
        mod = importlib.import_module(f"ember.optim.{module}")
        for name in names:
            assert hasattr(mod, name), (module, name)
            if module != "swa_utils":
                assert getattr(optim, name) is getattr(mod, name)
    assert optim.swa_utils is swa_utils
    for name in ("ASGD", "Rprop", "Adafactor", "Muon", "swa_utils",
                 "swap_in_optimizer_params_and_state"):
        assert name in optim.__all__
    # PyTorch presents the private modules' names as torch.optim's
    assert optim.Adafactor.__module__ == optim.Muon.__module__ == "ember.optim"
    assert optim.ASGD.__module__ == "ember.optim.asgd"


def test_module_paths_match_torch(torch):
    for name in ("ASGD", "Rprop", "Adafactor", "Muon", "swap_in_optimizer_params_and_state"):
        theirs = getattr(torch.optim, name).__module__.replace("torch", "ember")
        assert getattr(optim, name).__module__ == theirs
    assert sorted(swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
    assert set(optim.__all__) >= set(torch.optim.__all__) - {"SparseAdam"}


def test_optimizers_pickle_by_reference():
    import pickle

    p = param(np.ones((2, 2)))
    for name in ("ASGD", "Rprop", "Adafactor", "Muon"):
        opt = getattr(optim, name)([p])
        assert type(pickle.loads(pickle.dumps(opt))) is type(opt)
    assert math.isclose(optim.Muon([p]).defaults["eps"], 1e-7)


def _signature(fn):
    import inspect

    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_match_torch(torch):
    names = ["ASGD", "Rprop", "Adafactor", "Muon", "swap_in_optimizer_params_and_state"]
    pairs = [(getattr(optim, n), getattr(torch.optim, n)) for n in names]
    pairs += [(getattr(swa_utils, n), getattr(torch.optim.swa_utils, n))
              for n in swa_utils.__all__]
    pairs.append((swa_utils.AveragedModel.update_parameters,
                  torch.optim.swa_utils.AveragedModel.update_parameters))
    for ours, theirs in pairs:
        assert _signature(ours) == _signature(theirs), ours.__qualname__
