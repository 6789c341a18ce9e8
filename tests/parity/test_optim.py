"""Parity of ember.optim with torch.optim: the same gradients give the same trajectories.

Each test feeds both libraries the gradient of a fixed quadratic (plus fixed noise), computed in
NumPy from each side's own current parameters, so any divergence compounds and shows.
"""

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from ember.optim import lr_scheduler as elrs

torch = pytest.importorskip("torch")
import torch.optim as toptim  # noqa: E402
from torch.optim import lr_scheduler as tlrs  # noqa: E402

SHAPES = [(4, 3), (5,), ()]
RTOL, ATOL = 1e-6, 1e-10


# -- conversion helpers ---------------------------------------------------------------------
def to_ember(value):
    if isinstance(value, torch.Tensor):
        return ember.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: to_ember(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_ember(v) for v in value)
    return value


def to_torch(value):
    if isinstance(value, ember.Tensor):
        return torch.from_numpy(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(v) for v in value)
    return value


def host(value):
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return value.detach().numpy()


class Problem:
    """A fixed quadratic per parameter: grad = A p - b + noise[k]."""

    def __init__(self, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        self.init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        self.scale = [rng.uniform(0.5, 2.0, s).astype(dtype) for s in SHAPES]
        self.target = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        self.noise = [[0.1 * rng.standard_normal(s).astype(dtype) for s in SHAPES]
                      for _ in range(100)]

    def grads(self, arrays, k):
        return [a * (x - t) + n for x, a, t, n in
                zip(arrays, self.scale, self.target, self.noise[k])]


def make_params(problem):
    tp = [torch.tensor(np.array(x), requires_grad=True) for x in problem.init]
    ep = [ember.tensor(np.array(x), requires_grad=True) for x in problem.init]
    return tp, ep


def set_grads(problem, tp, ep, k):
    for p, g in zip(tp, problem.grads([host(p) for p in tp], k)):
        p.grad = torch.from_numpy(np.array(g))
    for p, g in zip(ep, problem.grads([host(p) for p in ep], k)):
        p.grad = ember.tensor(np.array(g), device=p.device)


def assert_same_state(topt, eopt):
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert tsd["state"].keys() == esd["state"].keys()
    for i, ts in tsd["state"].items():
        es = esd["state"][i]
        assert ts.keys() == es.keys()
        for key, tv in ts.items():
            ev = es[key]
            if isinstance(tv, torch.Tensor):
                assert isinstance(ev, ember.Tensor), key
                assert str(tv.dtype).split(".")[1] == str(ev.dtype).split(".")[1], key
                np.testing.assert_allclose(host(ev), host(tv), rtol=RTOL, atol=ATOL, err_msg=key)
            else:
                assert ev == tv, key


def assert_same_params(tp, ep):
    for t, e in zip(tp, ep):
        np.testing.assert_allclose(host(e), host(t), rtol=RTOL, atol=ATOL)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, maximize=True, eps=1e-6)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.2, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.9, 0.9))),
]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_trajectory_matches_torch(name, kwargs):
    problem = Problem()
    tp, ep = make_params(problem)
    topt = getattr(toptim, name)(tp, **kwargs)
    eopt = getattr(eoptim, name)(ep, **kwargs)
    for k in range(25):
        set_grads(problem, tp, ep, k)
        topt.step()
        eopt.step()
        assert_same_params(tp, ep)
        assert_same_state(topt, eopt)


@pytest.mark.parametrize("name,kwargs", CASES[1::3])
def test_param_groups_trajectory(name, kwargs):
    problem = Problem(seed=1)
    tp, ep = make_params(problem)
    lr = kwargs.get("lr", 1.0)
    topt = getattr(toptim, name)([{"params": tp[:1], "lr": lr / 2}, {"params": tp[1:]}],
                                 **kwargs)
    eopt = getattr(eoptim, name)([{"params": ep[:1], "lr": lr / 2}, {"params": ep[1:]}],
                                 **kwargs)
    for k in range(20):
        set_grads(problem, tp, ep, k)
        if k % 5 == 4:  # a parameter without gradient is skipped
            tp[2].grad = None
            ep[2].grad = None
        topt.step()
        eopt.step()
        assert_same_params(tp, ep)
    assert_same_state(topt, eopt)


def assert_same_layout(tsd, esd):
    assert tsd.keys() == esd.keys() == {"state", "param_groups"}
    assert len(tsd["param_groups"]) == len(esd["param_groups"])
    for tg, eg in zip(tsd["param_groups"], esd["param_groups"]):
        assert tg.keys() == eg.keys()
        assert tg["params"] == eg["params"]
        for key in tg:
            assert tg[key] == eg[key], key
    assert tsd["state"].keys() == esd["state"].keys()
    for i in tsd["state"]:
        assert tsd["state"][i].keys() == esd["state"][i].keys()


@pytest.mark.parametrize("name,kwargs", CASES)
def test_state_dict_torch_to_ember_and_back(name, kwargs):
    problem = Problem(seed=2)
    tp, ep = make_params(problem)
    topt = getattr(toptim, name)(tp, **kwargs)
    eopt = getattr(eoptim, name)(ep, **kwargs)
    for k in range(10):
        set_grads(problem, tp, ep, k)
        topt.step()
        eopt.step()
    assert_same_layout(topt.state_dict(), eopt.state_dict())

    # torch's checkpoint continues in Ember
    ep2 = [ember.tensor(host(p), requires_grad=True) for p in tp]
    eopt2 = getattr(eoptim, name)(ep2, **kwargs)
    eopt2.load_state_dict(to_ember(topt.state_dict()))
    assert_same_layout(topt.state_dict(), eopt2.state_dict())
    # Ember's checkpoint continues in torch
    tp2 = [torch.from_numpy(host(p).copy()).requires_grad_() for p in ep]
    topt2 = getattr(toptim, name)(tp2, **kwargs)
    topt2.load_state_dict(to_torch(eopt.state_dict()))
    for k in range(10, 22):
        set_grads(problem, tp, ep2, k)
        set_grads(problem, tp2, ep, k)
        topt.step()
        eopt2.step()
        topt2.step()
        eopt.step()
        assert_same_params(tp, ep2)
        assert_same_params(tp2, ep)
    assert_same_state(topt2, eopt2)  # both loaded: both cast the state like torch does
    step = eopt2.state_dict()["state"].get(0, {}).get("step")
    assert step is None or (step.dtype == ember.float32 and step.device.type == "cpu")


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("history_size,max_iter", [(100, 20), (3, 7)])
def test_lbfgs_matches_torch(line_search_fn, history_size, max_iter):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 4))
    b = rng.standard_normal(6)
    x0 = rng.standard_normal(4)

    def run(lib, opt_mod):
        x = lib.tensor(x0.copy(), requires_grad=True)
        A, B = lib.tensor(a), lib.tensor(b)
        opt = opt_mod.LBFGS([x], lr=0.8, history_size=history_size, max_iter=max_iter,
                            line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            r = A.matmul(x) - B
            loss = (r * r).sum() + 0.1 * (x**4).sum()  # not quadratic: the search matters
            loss.backward()
            return loss

        losses, xs = [], []
        for _ in range(4):
            losses.append(opt.step(closure).detach().item())
            xs.append(host(x).copy())
        return losses, xs, opt.state_dict()["state"][0]

    tl, tx, ts = run(torch, toptim)
    el, ex, es = run(ember, eoptim)
    np.testing.assert_allclose(el, tl, rtol=1e-6)
    for t, e in zip(tx, ex):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-10)
    assert ts["func_evals"] == es["func_evals"] and ts["n_iter"] == es["n_iter"]
    assert ts.keys() == es.keys()


ERROR_CASES = [
    ("SGD", dict(lr=-1.0)),
    ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1)),
    ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))),
    ("Adam", dict(eps=-1.0)),
    ("Adam", dict(betas=(0, 0.9))),
    ("AdamW", dict(weight_decay=-0.1)),
    ("RMSprop", dict(alpha=-1.0)),
    ("Adagrad", dict(lr_decay=-1.0)),
    ("Adagrad", dict(initial_accumulator_value=-1.0)),
    ("Adadelta", dict(rho=1.5)),
    ("NAdam", dict(momentum_decay=-1.0)),
    ("RAdam", dict(betas=(0.9, 1.0))),
    ("LBFGS", dict(lr=-1.0)),
]


@pytest.mark.parametrize("name,kwargs", ERROR_CASES)
def test_constructor_errors_match_torch(name, kwargs):
    with pytest.raises(ValueError) as terr:
        getattr(toptim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as eerr:
        getattr(eoptim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(eerr.value) == str(terr.value)


def test_base_errors_match_torch():
    # CPU tensors: the messages name their type, torch's the CPU's (torch.FloatTensor)
    tw, ew = torch.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True, device="cpu")
    pairs = [
        (lambda: toptim.SGD([], lr=0.1), lambda: eoptim.SGD([], lr=0.1)),
        (lambda: toptim.SGD([{"params": [tw]}, {"params": [tw]}], lr=0.1),
         lambda: eoptim.SGD([{"params": [ew]}, {"params": [ew]}], lr=0.1)),
        (lambda: toptim.SGD([tw * 2], lr=0.1), lambda: eoptim.SGD([ew * 2], lr=0.1)),
        (lambda: toptim.LBFGS([{"params": [tw]}, {"params": [torch.zeros(1,
                                                                         requires_grad=True)]}]),
         lambda: eoptim.LBFGS([{"params": [ew]}, {"params": [ember.zeros(1,
                                                                          requires_grad=True)]}])),
    ]
    for tf, ef in pairs:
        with pytest.raises(ValueError) as terr:
            tf()
        with pytest.raises(ValueError) as eerr:
            ef()
        assert str(eerr.value) == str(terr.value)
    for tf, ef in [(lambda: toptim.SGD(tw, lr=0.1), lambda: eoptim.SGD(ew, lr=0.1)),
                   (lambda: toptim.SGD([{"params": {tw}}], lr=0.1),
                    lambda: eoptim.SGD([{"params": {ew}}], lr=0.1)),
                   (lambda: toptim.SGD([1.0], lr=0.1), lambda: eoptim.SGD([1.0], lr=0.1))]:
        with pytest.raises(TypeError) as terr:
            tf()
        with pytest.raises(TypeError) as eerr:
            ef()
        assert str(eerr.value).replace("ember", "torch") == str(terr.value)


def test_repr_matches_torch():
    t = toptim.Adam([torch.zeros(2, requires_grad=True)], lr=0.01)
    e = eoptim.Adam([ember.zeros(2, requires_grad=True)], lr=0.01)
    assert repr(e) == repr(t)


# -- schedulers -----------------------------------------------------------------------------
def sched_pair(make, opt_name="SGD", opt_kwargs=None):
    opt_kwargs = opt_kwargs or {"lr": 0.1, "momentum": 0.9}
    tp = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    ep = [ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)]
    topt = getattr(toptim, opt_name)([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.05}],
                                     **opt_kwargs)
    eopt = getattr(eoptim, opt_name)([{"params": ep[:1]}, {"params": ep[1:], "lr": 0.05}],
                                     **opt_kwargs)
    return topt, eopt, make(tlrs, topt), make(elrs, eopt)


def assert_groups_equal(topt, eopt):
    for tg, eg in zip(topt.param_groups, eopt.param_groups):
        assert eg["lr"] == tg["lr"]
        for key in ("momentum", "betas"):
            if key in tg:
                assert eg[key] == tg[key], key


def _lam(epoch):
    return 0.95**epoch


SCHEDULERS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=_lam),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, lr_lambda=[_lam, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[5, 20, 20, 40], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=9),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=15),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=30, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=12, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.01),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1,
                                                    step_size_up=3, step_size_down=5,
                                                    mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                  mode="exp_range", gamma=0.97,
                                                  cycle_momentum=False),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=70),
    "OneCycleLR-linear-3": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=7,
                                                     steps_per_epoch=10,
                                                     anneal_strategy="linear",
                                                     three_phase=True, pct_start=0.25),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9),
            m.StepLR(o, step_size=4)], milestones=[10, 30]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=6), m.ExponentialLR(o, gamma=0.95)]),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lr_sequence_matches_torch(name):
    make = SCHEDULERS[name]
    topt, eopt, tsch, esch = sched_pair(make)
    assert esch.get_last_lr() == tsch.get_last_lr()
    for epoch in range(60):
        topt.step()
        eopt.step()
        tsch.step()
        esch.step()
        assert esch.get_last_lr() == tsch.get_last_lr(), epoch
        assert_groups_equal(topt, eopt)
        if epoch == 30:  # round trip through state_dict into a fresh scheduler
            state = esch.state_dict()
            assert sorted(state) == sorted(tsch.state_dict())
            topt2, eopt2, _, esch2 = sched_pair(make)
            eopt2.load_state_dict(eopt.state_dict())
            esch2.load_state_dict(state)
            eopt, esch = eopt2, esch2


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_one_cycle_cycles_adam_betas_like_torch():
    topt, eopt, tsch, esch = sched_pair(lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=50),
                                        "Adam", {"lr": 0.1})
    for _ in range(49):
        topt.step()
        eopt.step()
        tsch.step()
        esch.step()
        assert esch.get_last_lr() == tsch.get_last_lr()
        assert_groups_equal(topt, eopt)
    with pytest.raises(ValueError, match="Tried to step 51 times"):
        eopt.step()
        esch.step()
        esch.step()


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(mode="max", factor=0.5, patience=2, threshold=0.1, threshold_mode="abs", cooldown=2,
         min_lr=[0.01, 0.004]),
    dict(factor=0.3, patience=0, cooldown=1, min_lr=0.02, eps=1e-3),
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    topt, eopt, tsch, esch = sched_pair(lambda m, o: m.ReduceLROnPlateau(o, **kwargs))
    metrics = np.concatenate([np.linspace(1, 0.5, 10), np.full(30, 0.5),
                              np.linspace(0.5, 0.8, 20)])
    for k, metric in enumerate(metrics):
        tsch.step(metric)
        esch.step(metric)
        assert esch.get_last_lr() == tsch.get_last_lr(), k
        assert esch.num_bad_epochs == tsch.num_bad_epochs
        if k == 25:
            state = esch.state_dict()
            assert sorted(state) == sorted(tsch.state_dict())
            esch2 = elrs.ReduceLROnPlateau(eopt, **kwargs)
            esch2.load_state_dict(state)
            esch = esch2


def test_scheduler_errors_match_torch():
    tw, ew = torch.zeros(1, requires_grad=True), ember.zeros(1, requires_grad=True)
    to, eo = toptim.SGD([tw], lr=0.1), eoptim.SGD([ew], lr=0.1)
    makers = [
        lambda m, o: m.ConstantLR(o, factor=2.0),
        lambda m, o: m.LinearLR(o, start_factor=0.0),
        lambda m, o: m.ReduceLROnPlateau(o, factor=1.5),
        lambda m, o: m.ReduceLROnPlateau(o, mode="avg"),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
        lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="bogus"),
        lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]),
    ]
    for make in makers:
        with pytest.raises(ValueError) as terr:
            make(tlrs, to)
        with pytest.raises(ValueError) as eerr:
            make(elrs, eo)
        assert str(eerr.value) == str(terr.value)
    with pytest.raises(KeyError) as terr:
        tlrs.StepLR(toptim.SGD([tw], lr=0.1), 2, last_epoch=3)
    with pytest.raises(KeyError) as eerr:
        elrs.StepLR(eoptim.SGD([ew], lr=0.1), 2, last_epoch=3)
    assert str(eerr.value) == str(terr.value)
