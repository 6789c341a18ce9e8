"""ember.optim.lr_scheduler and ember.optim.swa_utils against PyTorch 2.13, from differential
probes: lr (and momentum) trajectories of every scheduler, exactly, in the chainable and the
closed (``step(epoch)``) forms and on resumption; state_dict contents; PyTorch's argument
errors and warnings, in its words; tensor learning rates; AveragedModel, SWALR and update_bn.

The trajectories are compared with PyTorch where it is installed (the same program in both
libraries, float for float: the formulas are evaluated in the same order, so the numbers are
the same, not merely close); the messages, warnings and a few trajectories are pinned so that
they are checked without it.
"""

import math
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the pinned checks still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")


def _value(x):
    """A float (or a list of them) from a number or tensor, for exact comparison."""
    if hasattr(x, "detach"):
        return x.detach().cpu().tolist()
    if isinstance(x, (list, tuple)):
        return [_value(v) for v in x]
    return x


def _opt(lib, cls="SGD", groups=1, lr=0.1, **kwargs):
    params = [lib.nn.Parameter(lib.zeros(2)) for _ in range(groups)]
    optimizer = getattr(lib.optim, cls)
    if groups == 1:
        return optimizer(params, lr=lr, **kwargs)
    return optimizer([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(params)],
                     lr=lr, **kwargs)


def _trajectory(lib, build, steps, epochs=None, metrics=None):
    """Step ``build(lib)``'s (optimizer, scheduler) ``steps`` times; per step the groups' lr,
    ``get_last_lr()`` and momentum (or Adam's beta1) where the groups have one."""
    optimizer, scheduler = build(lib)
    rows = [_value(scheduler.get_last_lr())]
    for i in range(steps):
        optimizer.step()
        if metrics is not None:
            scheduler.step(metrics[i])
        elif epochs is not None:
            scheduler.step(epochs[i])
        else:
            scheduler.step()
        momentum = [g["betas"][0] if "betas" in g else g.get("momentum")
                    for g in optimizer.param_groups]
        rows.append((_value([g["lr"] for g in optimizer.param_groups]),
                     _value(scheduler.get_last_lr()), _value(momentum)))
    return rows


def _sched(name, *args, cls="SGD", groups=2, opt_kwargs=None, **kwargs):
    def build(lib):
        optimizer = _opt(lib, cls, groups, **(opt_kwargs or {}))
        return optimizer, getattr(lib.optim.lr_scheduler, name)(optimizer, *args, **kwargs)
    return build


def _sequential(lib):
    optimizer = _opt(lib, groups=2)
    s = lib.optim.lr_scheduler
    parts = [s.LinearLR(optimizer, 0.1, total_iters=3), s.StepLR(optimizer, 2, 0.5),
             s.CosineAnnealingLR(optimizer, 4)]
    return optimizer, s.SequentialLR(optimizer, parts, milestones=[3, 7])


def _chained(lib):
    optimizer = _opt(lib, groups=2)
    s = lib.optim.lr_scheduler
    return optimizer, s.ChainedScheduler([s.ConstantLR(optimizer, 0.1, 2),
                                          s.ExponentialLR(optimizer, 0.9)])


def _swalr(lib):
    optimizer = _opt(lib, groups=2)
    return optimizer, lib.optim.swa_utils.SWALR(optimizer, swa_lr=[0.05, 0.5], anneal_epochs=4)


def _swalr_after_cosine(lib):
    optimizer = _opt(lib)
    cosine = lib.optim.lr_scheduler.CosineAnnealingLR(optimizer, 10)
    for _ in range(3):
        optimizer.step()
        cosine.step()
    return optimizer, lib.optim.swa_utils.SWALR(optimizer, 0.01, anneal_epochs=3,
                                                anneal_strategy="linear")


#: (id, build, steps, step kwargs): every scheduler, with several groups where it matters
TRAJECTORIES = [
    ("StepLR", _sched("StepLR", 3, gamma=0.7), 12, {}),
    ("MultiStepLR", _sched("MultiStepLR", [9, 2, 5, 5], gamma=0.3), 12, {}),
    ("ConstantLR", _sched("ConstantLR", factor=0.3, total_iters=4), 8, {}),
    ("LinearLR", _sched("LinearLR", start_factor=0.2, end_factor=0.9, total_iters=7), 10, {}),
    ("ExponentialLR", _sched("ExponentialLR", gamma=0.93), 15, {}),
    ("PolynomialLR", _sched("PolynomialLR", total_iters=6, power=2.3), 9, {}),
    ("CosineAnnealingLR", _sched("CosineAnnealingLR", T_max=5, eta_min=0.01), 23, {}),
    ("LambdaLR", _sched("LambdaLR", [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]), 6, {}),
    ("MultiplicativeLR", _sched("MultiplicativeLR", lambda e: 0.95), 6, {}),
    ("CyclicLR-triangular", _sched("CyclicLR", 0.01, [0.1, 0.2], step_size_up=3,
                                   step_size_down=5, opt_kwargs={"momentum": 0.9}), 20, {}),
    ("CyclicLR-triangular2", _sched("CyclicLR", 0.01, 0.1, step_size_up=2, mode="triangular2",
                                    opt_kwargs={"momentum": 0.9}), 14, {}),
    ("CyclicLR-exp_range-adam", _sched("CyclicLR", 0.01, 0.1, step_size_up=2, mode="exp_range",
                                       gamma=0.9, cls="Adam"), 10, {}),
    ("CyclicLR-no-momentum", _sched("CyclicLR", 0.01, 0.1, step_size_up=2.5,
                                    step_size_down=1.5, cycle_momentum=False, cls="Adagrad"),
     8, {}),
    ("OneCycleLR", _sched("OneCycleLR", [0.1, 0.2], total_steps=20,
                          opt_kwargs={"momentum": 0.9}), 19, {}),
    ("OneCycleLR-three-phase-linear", _sched("OneCycleLR", 0.1, epochs=3, steps_per_epoch=5,
                                             three_phase=True, anneal_strategy="linear",
                                             pct_start=0.25, cls="Adam", groups=1), 14, {}),
    ("CosineAnnealingWarmRestarts", _sched("CosineAnnealingWarmRestarts", T_0=3, T_mult=2,
                                           eta_min=0.001), 25, {}),
    ("SequentialLR", _sequential, 14, {}),
    ("ChainedScheduler", _chained, 6, {}),
    ("SWALR", _swalr, 8, {}),
    ("SWALR-after-cosine", _swalr_after_cosine, 5, {}),
    ("ReduceLROnPlateau-min-rel", _sched("ReduceLROnPlateau", patience=2, cooldown=1,
                                         min_lr=[0.001, 0.05]), 18,
     {"metrics": [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.89999] + [0.8] * 10}),
    ("ReduceLROnPlateau-max-abs", _sched("ReduceLROnPlateau", mode="max", threshold_mode="abs",
                                         threshold=0.1, patience=1, factor=0.5, eps=1e-3),
     14, {"metrics": [1.0, 1.05, 1.2, 1.25] + [1.3] * 10}),
    # step(epoch): the closed forms, where the scheduler has one
    ("StepLR-epoch", _sched("StepLR", 2, 0.5), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("MultiStepLR-epoch", _sched("MultiStepLR", [2, 4, 4], 0.5), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("ConstantLR-epoch", _sched("ConstantLR", 0.5, 4), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("LinearLR-epoch", _sched("LinearLR", 0.5, 1.0, 4), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("ExponentialLR-epoch", _sched("ExponentialLR", 0.5), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("PolynomialLR-epoch", _sched("PolynomialLR", 4, 2.0), 5, {"epochs": [3, 5, 1, 8, 0]}),
    ("CosineAnnealingLR-epoch", _sched("CosineAnnealingLR", T_max=5, eta_min=0.01), 8,
     {"epochs": [1, 3, 2, 7, 10, 11, 0, 4]}),
    ("MultiplicativeLR-epoch", _sched("MultiplicativeLR", lambda e: 0.95), 3,
     {"epochs": [3, 5, 1]}),
    ("CosineAnnealingWarmRestarts-epoch", _sched("CosineAnnealingWarmRestarts", T_0=2, T_mult=3),
     6, {"epochs": [0.1, 2.5, 7.9, 8.0, 26.0, 30.5]}),
]


@needs_torch
@pytest.mark.parametrize("build,steps,kwargs", [c[1:] for c in TRAJECTORIES],
                         ids=[c[0] for c in TRAJECTORIES])
def test_trajectory_equals_pytorch(build, steps, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the step(epoch) deprecation, in both
        expected = _trajectory(torch, build, steps, **kwargs)
        got = _trajectory(ember, build, steps, **kwargs)
    assert got == expected


def _resumed(lib, name, *args, **kwargs):
    optimizer = _opt(lib, groups=2, momentum=0.9)
    for group in optimizer.param_groups:
        group["initial_lr"] = 1.0
    scheduler = getattr(lib.optim.lr_scheduler, name)(optimizer, *args, last_epoch=3, **kwargs)
    rows = [_value(scheduler.get_last_lr()), scheduler.last_epoch, scheduler._step_count]
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        rows.append(_value(scheduler.get_last_lr()))
    return rows


RESUMED = [("StepLR", (2, 0.5), {}), ("CosineAnnealingLR", (10,), {}),
           ("ExponentialLR", (0.5,), {}), ("CyclicLR", (0.01, 0.1), {"step_size_up": 2}),
           ("CosineAnnealingWarmRestarts", (3,), {})]


@needs_torch
@pytest.mark.parametrize("name,args,kwargs", RESUMED, ids=[r[0] for r in RESUMED])
def test_resumption_with_last_epoch_equals_pytorch(name, args, kwargs):
    assert _resumed(ember, name, *args, **kwargs) == _resumed(torch, name, *args, **kwargs)


def test_step_lr_pinned_trajectory_and_state_dict():
    optimizer = _opt(ember, groups=2)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, 2, gamma=0.5)
    lrs = []
    for _ in range(5):
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr())
    assert lrs == [[0.1, 0.2], [0.05, 0.1], [0.05, 0.1], [0.025, 0.05], [0.025, 0.05]]
    assert scheduler.state_dict() == {
        "step_size": 2, "gamma": 0.5, "base_lrs": [0.1, 0.2], "last_epoch": 5,
        "_step_count": 6, "_is_initial": False, "_get_lr_called_within_step": False,
        "_last_lr": [0.025, 0.05]}


def test_cosine_annealing_is_pytorchs_recursive_form():
    """The chainable form drifts from the closed one by rounding: the recursion is PyTorch's,
    evaluated in its order, so the exact floats are pinned here."""
    optimizer = _opt(ember, groups=1)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5, eta_min=0.01)
    lrs = []
    for _ in range(7):
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    lr, expected = 0.1, []
    for epoch in range(1, 8):
        if (epoch - 1 - 5) % 10 == 0:
            lr = lr + (0.1 - 0.01) * (1 - math.cos(math.pi / 5)) / 2
        else:
            lr = ((1 + math.cos(math.pi * epoch / 5)) / (1 + math.cos(math.pi * (epoch - 1) / 5))
                  * (lr - 0.01) + 0.01)
        expected.append(lr)
    assert lrs == expected


def _state(lib, build):
    optimizer, scheduler = build(lib)
    for _ in range(3):
        optimizer.step()
        scheduler.step(*([1.0] if isinstance(
            scheduler, lib.optim.lr_scheduler.ReduceLROnPlateau) else []))
    state = scheduler.state_dict()
    return {k: _value(v) for k, v in state.items()
            if k not in ("_scale_fn_ref",) and not callable(v)}


STATES = [c for c in TRAJECTORIES if not c[0].endswith("-epoch")]


@needs_torch
@pytest.mark.parametrize("build", [c[1] for c in STATES], ids=[c[0] for c in STATES])
def test_state_dict_equals_pytorch(build):
    def nested(state):  # SequentialLR and ChainedScheduler keep their parts' state dicts
        return {k: ([nested(s) if isinstance(s, dict) else s for s in v]
                    if k == "_schedulers" else v) for k, v in state.items()}

    assert nested(_state(ember, build)) == nested(_state(torch, build))


class _Halving:
    def __init__(self):
        self.factor = 0.5

    def __call__(self, epoch):
        return self.factor ** epoch


def test_lambda_state_dict_keeps_callable_objects_attributes():
    optimizer = _opt(ember, groups=2)
    fn = _Halving()
    scheduler = ember.optim.lr_scheduler.LambdaLR(optimizer, [fn, lambda e: 1.0])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"factor": 0.5}, None]
    state["lr_lambdas"] = [{"factor": 0.25}, None]
    scheduler.load_state_dict(state)
    assert fn.factor == 0.25 and "lr_lambdas" in state  # the caller's dict is left whole


#: (id, program, exception type, PyTorch 2.13's message)
ERRORS = [
    ("not-an-optimizer", lambda lib: lib.optim.lr_scheduler.StepLR([1, 2], 3),
     TypeError, "list is not an Optimizer"),
    ("plateau-not-an-optimizer", lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(None),
     TypeError, "NoneType is not an Optimizer"),
    ("resume-without-initial-lr",
     lambda lib: lib.optim.lr_scheduler.StepLR(_opt(lib), 2, last_epoch=3), KeyError,
     "param 'initial_lr' is not specified in param_groups[0] when resuming scheduler with "
     "last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from "
     "a checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch "
     ">= 0 for a fresh training run (not recommended)"),
    ("constant-factor", lambda lib: lib.optim.lr_scheduler.ConstantLR(_opt(lib), factor=1.5),
     ValueError, "Constant multiplicative factor expected to be between 0 and 1."),
    ("linear-start", lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), start_factor=0),
     ValueError, "Starting multiplicative factor expected to be greater than 0 and less or "
     "equal to 1."),
    ("linear-end", lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), end_factor=1.2),
     ValueError, "Ending multiplicative factor expected to be between 0 and 1."),
    ("lambda-count",
     lambda lib: lib.optim.lr_scheduler.LambdaLR(_opt(lib, groups=2), [lambda e: 1.0]),
     ValueError, "Expected 2 lr_lambdas, but got 1"),
    ("multiplicative-not-callable",
     lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(_opt(lib), 3),
     TypeError, "lr_lambda should be a function, but got int"),
    ("sequential-milestones", lambda lib: lib.optim.lr_scheduler.SequentialLR(
        o := _opt(lib), [lib.optim.lr_scheduler.StepLR(o, 2), lib.optim.lr_scheduler.StepLR(
            o, 3)], milestones=[1, 2]), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the "
     "number of milestone points, but got number of schedulers 2 and the number of milestones "
     "to be equal to 2"),
    ("sequential-empty", lambda lib: lib.optim.lr_scheduler.SequentialLR(_opt(lib), [], []),
     ValueError, "SequentialLR expects at least one scheduler, but got no scheduler."),
    ("chained-plateau", lambda lib: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.StepLR(o := _opt(lib), 2),
         lib.optim.lr_scheduler.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler as it requires "
     "additional kwargs to be specified when calling `step`, but got one at index 1 in the "
     "given schedulers sequence."),
    ("plateau-factor", lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), factor=1),
     ValueError, "Factor should be < 1.0."),
    ("plateau-mode", lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), mode="avg"),
     ValueError, "mode avg is unknown!"),
    ("plateau-threshold-mode", lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(
        _opt(lib), threshold_mode="x"), ValueError, "threshold mode x is unknown!"),
    ("plateau-min-lrs", lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(
        _opt(lib), min_lr=[0.1, 0.2]), ValueError, "expected 1 min_lrs, got 2"),
    ("cyclic-mode", lambda lib: lib.optim.lr_scheduler.CyclicLR(
        _opt(lib, momentum=0.9), 0.01, 0.1, mode="foo"), ValueError,
     "mode is invalid and scale_fn is None"),
    ("cyclic-no-momentum", lambda lib: lib.optim.lr_scheduler.CyclicLR(
        _opt(lib, "Adagrad"), 0.01, 0.1), ValueError,
     "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    ("cyclic-base-lr-count", lambda lib: lib.optim.lr_scheduler.CyclicLR(
        _opt(lib, momentum=0.9), [0.01, 0.02], 0.1), ValueError,
     "base_lr must have the same length as optimizer.param_groups. base_lr has 2 values, "
     "param_groups has 1."),
    ("onecycle-no-steps", lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, momentum=0.9), 0.1, epochs=3), ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    ("onecycle-float-steps", lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, momentum=0.9), 0.1, total_steps=10.0), ValueError,
     "Expected positive integer total_steps, but got 10.0"),
    ("onecycle-epochs", lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, momentum=0.9), 0.1, epochs=-1, steps_per_epoch=3), ValueError,
     "Expected positive integer epochs, but got -1"),
    ("onecycle-pct-start", lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, momentum=0.9), 0.1, total_steps=10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    ("onecycle-anneal", lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, momentum=0.9), 0.1, total_steps=10, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    ("warm-restarts-T0", lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _opt(lib), T_0=2.0), ValueError, "Expected positive integer T_0, but got 2.0"),
    ("warm-restarts-Tmult", lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _opt(lib), T_0=2, T_mult=0), ValueError, "Expected integer T_mult >= 1, but got 0"),
    ("warm-restarts-epoch", lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _opt(lib), T_0=2).step(-1), ValueError, "Expected non-negative epoch, but got -1"),
    ("base-get-lr", lambda lib: lib.optim.lr_scheduler.LRScheduler(_opt(lib)),
     NotImplementedError, ""),
    ("swalr-anneal", lambda lib: lib.optim.swa_utils.SWALR(
        _opt(lib), 0.05, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    ("swalr-epochs", lambda lib: lib.optim.swa_utils.SWALR(_opt(lib), 0.05, anneal_epochs=2.0),
     ValueError, "anneal_epochs must be equal or greater than 0, got 2.0"),
    ("ema-decay", lambda lib: lib.optim.swa_utils.get_ema_multi_avg_fn(1.5), ValueError,
     "Invalid decay value 1.5 provided. Please provide a value in [0,1] range."),
    ("averaged-two-fns", lambda lib: lib.optim.swa_utils.AveragedModel(
        lib.nn.Linear(2, 2), avg_fn=lib.optim.swa_utils.get_swa_avg_fn(),
        multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()), AssertionError,
     "Only one of avg_fn and multi_avg_fn should be provided"),
]


@pytest.mark.parametrize("program,exc,message", [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_errors_are_pytorchs(program, exc, message):
    with pytest.raises(exc) as info:
        program(ember)
    text = info.value.args[0] if exc is KeyError else str(info.value)
    assert text == message
    if torch is not None:
        with pytest.raises(exc) as expected:
            program(torch)
        assert text == (expected.value.args[0] if exc is KeyError else str(expected.value))


def test_onecycle_stepping_past_total_steps():
    optimizer = _opt(ember, momentum=0.9)
    scheduler = ember.optim.lr_scheduler.OneCycleLR(optimizer, 0.1, total_steps=3)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    with pytest.raises(ValueError, match=r"^Tried to step 4 times\. The specified number of "
                                         r"total steps is 3$"):
        scheduler.step()


def test_plateau_min_lrs_after_a_group_is_added():
    optimizer = _opt(ember)
    scheduler = ember.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, min_lr=[0.0])
    optimizer.add_param_group({"params": [ember.nn.Parameter(ember.zeros(1))]})
    scheduler.step(1.0)
    with pytest.raises(RuntimeError, match=r"The number of param groups in the `optimizer` "
                                           r"\(2\) differs from when `ReduceLROnPlateau` was "
                                           r"initialized \(1\)"):
        scheduler.step(2.0)


def _warnings_of(program):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program()
    return [(w.category, str(w.message)) for w in caught]


def test_scheduler_step_before_optimizer_step_warns():
    scheduler = ember.optim.lr_scheduler.StepLR(_opt(ember), 2)
    [(category, message)] = _warnings_of(scheduler.step)
    assert category is UserWarning
    assert message.startswith("Detected call of `lr_scheduler.step()` before "
                              "`optimizer.step()`. In PyTorch 1.1.0 and later")


def test_overridden_optimizer_step_warns():
    optimizer = _opt(ember)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, 2)
    optimizer.step = lambda: None
    [(_, message)] = _warnings_of(scheduler.step)
    assert message.startswith("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization.")


def test_get_lr_outside_step_and_epoch_argument_warn():
    optimizer = _opt(ember)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, 4)
    optimizer.step()
    assert _warnings_of(scheduler.step) == []
    assert _warnings_of(scheduler.get_lr) == [
        (UserWarning, "To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.")]
    [(category, message)] = _warnings_of(lambda: scheduler.step(3))
    assert category is UserWarning and message.startswith(
        "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated")


@pytest.mark.parametrize("name,args,kwargs", [
    ("StepLR", (2, 0.5), {}), ("CosineAnnealingLR", (4,), {}), ("LinearLR", (), {}),
    ("OneCycleLR", (0.1,), {"total_steps": 10}), ("LambdaLR", (lambda e: 0.5 ** e,), {}),
    ("CyclicLR", (0.01, 0.1), {"step_size_up": 3}),
])
def test_tensor_lr_is_filled_in_place(name, args, kwargs):
    lr = ember.tensor(0.01)
    optimizer = ember.optim.SGD([ember.nn.Parameter(ember.zeros(2))], lr=lr, momentum=0.9)
    scheduler = getattr(ember.optim.lr_scheduler, name)(optimizer, *args, **kwargs)
    rows = []
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        last = scheduler.get_last_lr()[0]
        assert optimizer.param_groups[0]["lr"] is lr and isinstance(last, ember.Tensor)
        assert last is not lr and last.dtype == ember.float32
        rows.append(last.item())
    if torch is not None:
        t_lr = torch.tensor(0.01)
        t_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=t_lr, momentum=0.9)
        t_sched = getattr(torch.optim.lr_scheduler, name)(t_opt, *args, **kwargs)
        expected = []
        for _ in range(4):
            t_opt.step()
            t_sched.step()
            expected.append(t_sched.get_last_lr()[0].item())
        assert rows == expected


def test_plateau_on_tensor_lr_keeps_the_tensor():
    lr = ember.tensor(0.01)
    optimizer = ember.optim.Adam([ember.nn.Parameter(ember.zeros(2))], lr=lr)
    scheduler = ember.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0)
    for _ in range(3):
        scheduler.step(1.0)
    assert optimizer.param_groups[0]["lr"] is lr
    assert lr.item() == pytest.approx(1e-4, rel=1e-6)


# -- swa_utils ----------------------------------------------------------------------------------

def _perturbed_runs(lib, make_averaged, bn=False):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(3, 4)] + ([lib.nn.BatchNorm1d(4)] if bn else []) + [
        lib.nn.Linear(4, 2)]
    model = lib.nn.Sequential(*layers)
    averaged = make_averaged(lib, model)
    for k in range(4):
        with lib.no_grad():
            for i, p in enumerate(model.parameters()):
                p.add_(lib.arange(p.numel(), dtype=p.dtype).reshape(p.shape) * 0.01 * (k + 1) + i)
        if bn:
            model(lib.arange(12.0).reshape(4, 3) * (k + 1))
        averaged.update_parameters(model)
    return ([_value(p) for p in averaged.parameters()] + [_value(b) for b in averaged.buffers()],
            list(averaged.state_dict().keys()))


AVERAGING = {
    "swa-default": lambda lib, m: lib.optim.swa_utils.AveragedModel(m),
    "swa-avg-fn": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_swa_avg_fn()),
    "ema-avg-fn": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_ema_avg_fn(0.8)),
    "ema-multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)),
    "swa-multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()),
    "buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(m, use_buffers=True),
}


@needs_torch
@pytest.mark.parametrize("make", list(AVERAGING.values()), ids=list(AVERAGING))
@pytest.mark.parametrize("bn", [False, True])
def test_averaged_model_equals_pytorch(make, bn):
    got, got_keys = _perturbed_runs(ember, make, bn)
    expected, expected_keys = _perturbed_runs(torch, make, bn)
    assert got_keys == expected_keys
    assert len(got) == len(expected)
    for g, e in zip(got, expected):  # lerp may differ by an ulp (PyTorch fuses it)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_swa_multi_avg_fn_refuses_integer_parameters_as_pytorch():
    """PyTorch's foreach update divides integers with a float alpha (a number of averages) or
    addcdiv (a tensor one): both refuse, and so does Ember, with the same words."""
    fn = ember.optim.swa_utils.get_swa_multi_avg_fn()
    with pytest.raises(RuntimeError, match="^For integral input tensors, argument alpha must "
                                           "not be a floating point number"):
        fn([ember.tensor([10, 20])], [ember.tensor([20, 40])], 1)
    with pytest.raises(RuntimeError, match="^Integer division with addcdiv is no longer"):
        fn([ember.tensor([10, 20])], [ember.tensor([20, 40])], ember.tensor(1))


def test_averaged_model_count_and_state_dict_keys():
    model = ember.nn.Linear(2, 2)
    swa = ember.optim.swa_utils.AveragedModel(model)
    swa.update_parameters(model)
    assert swa.n_averaged.dtype == ember.int64 and swa.n_averaged.item() == 1
    assert list(swa.state_dict()) == ["n_averaged", "module.weight", "module.bias"]


def _bn_after_update(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    model.eval()
    loader = [(lib.arange(12.0).reshape(4, 3) * (k + 1), 0) for k in range(3)]
    lib.optim.swa_utils.update_bn(loader, model)
    return [_value(b) for b in model.buffers()], model.training, model[1].momentum


def test_update_bn_restores_mode_and_momentum():
    buffers, training, momentum = _bn_after_update(ember)
    assert training is False and momentum == 0.1 and buffers[2] == 3
    if torch is not None:
        expected = _bn_after_update(torch)
        for g, e in zip(buffers, expected[0]):
            np.testing.assert_allclose(g, e, rtol=1e-5)


def test_swalr_state_dict_and_reload():
    optimizer = _opt(ember)
    scheduler = ember.optim.swa_utils.SWALR(optimizer, 0.05, anneal_strategy="linear")
    state = scheduler.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == "linear"
    other = ember.optim.swa_utils.SWALR(_opt(ember), 0.01)
    other.load_state_dict(state)
    assert other.anneal_func(0.3) == 0.3
