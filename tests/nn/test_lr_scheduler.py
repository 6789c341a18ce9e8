"""ember.optim.lr_scheduler: formulas, warnings, state dicts and errors."""

import math
import warnings

import pytest

import ember
from ember.optim import SGD, Adam
from ember.optim import lr_scheduler as lrs


def make_opt(lr=0.1, cls=SGD, **kwargs):
    return cls([ember.zeros(2, requires_grad=True)], lr=lr, **kwargs)


def run(opt, sched, n):
    lrs_seen = []
    for _ in range(n):
        opt.step()
        sched.step()
        lrs_seen.append(sched.get_last_lr()[0])
    return lrs_seen


def test_step_before_optimizer_step_warns():
    opt = make_opt()
    sched = lrs.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()


def test_no_warning_in_the_right_order():
    opt = make_opt()
    sched = lrs.ExponentialLR(opt, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [0.05]
    assert opt.param_groups[0]["initial_lr"] == 0.1


def test_overridden_optimizer_step_warns():
    opt = make_opt()
    sched = lrs.StepLR(opt, step_size=2)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler"):
        sched.step()


def test_step_lr_and_multistep_closed_forms():
    opt = make_opt()
    got = run(opt, lrs.StepLR(opt, step_size=3, gamma=0.5), 10)
    assert got == pytest.approx([0.1 * 0.5 ** (e // 3) for e in range(1, 11)], rel=1e-12)
    opt = make_opt()
    got = run(opt, lrs.MultiStepLR(opt, milestones=[2, 5], gamma=0.1), 6)
    assert got == pytest.approx([0.1, 0.01, 0.01, 0.01, 0.001, 0.001], rel=1e-12)


def test_cosine_annealing_follows_the_closed_form_in_the_first_half_period():
    opt = make_opt(1.0)
    got = run(opt, lrs.CosineAnnealingLR(opt, T_max=10, eta_min=0.1), 10)
    expected = [0.1 + 0.9 * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(1, 11)]
    assert got == pytest.approx(expected, rel=1e-12)


def test_warm_restarts_restart():
    opt = make_opt(1.0)
    got = run(opt, lrs.CosineAnnealingWarmRestarts(opt, T_0=3), 7)
    assert got[2] == 1.0 and got[5] == 1.0 and got[0] < 1.0


def test_cyclic_triangular_and_momentum():
    opt = make_opt(0.5, momentum=0.9)
    sched = lrs.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.9
    got = run(opt, sched, 4)
    assert got == pytest.approx([0.3, 0.5, 0.3, 0.1])
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lrs.CyclicLR(ember.optim.Adagrad([ember.zeros(1, requires_grad=True)]), 0.1, 0.5)


def test_one_cycle_warms_up_then_anneals_and_cycles_adam_beta1():
    opt = make_opt(cls=Adam)
    sched = lrs.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25)
    assert sched.get_last_lr() == pytest.approx([1.0 / 25])
    assert opt.param_groups[0]["betas"][0] == 0.95
    got = run(opt, sched, 19)
    assert max(got) == pytest.approx(1.0) and got.index(max(got)) == 3
    assert got[-1] == pytest.approx(1.0 / 25 / 1e4)
    assert opt.param_groups[0]["betas"][1] == 0.999


def test_reduce_lr_on_plateau():
    opt = make_opt(1.0)
    sched = lrs.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.2)
    for metric in [1.0, 1.0, 1.0, 1.0]:
        sched.step(metric)
    assert sched.get_last_lr() == [0.5]
    for metric in [1.0] * 10:
        sched.step(metric)
    assert sched.get_last_lr() == [0.2]


def test_sequential_and_chained():
    opt = make_opt(1.0)
    seq = lrs.SequentialLR(opt, [lrs.ConstantLR(opt, factor=0.5, total_iters=2),
                                 lrs.ExponentialLR(opt, gamma=0.5)], milestones=[3])
    assert seq.get_last_lr() == [0.5]
    assert run(opt, seq, 5) == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.25])
    opt = make_opt(1.0)
    chained = lrs.ChainedScheduler([lrs.ExponentialLR(opt, gamma=0.5),
                                    lrs.StepLR(opt, step_size=2, gamma=0.1)])
    assert run(opt, chained, 2) == pytest.approx([0.5, 0.025])


def test_state_dict_round_trip_keeps_the_sequence():
    def build():
        opt = make_opt(1.0)
        return opt, lrs.LinearLR(opt, start_factor=0.1, total_iters=10)

    opt, sched = build()
    run(opt, sched, 4)
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4
    opt2, sched2 = build()
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(state)
    assert run(opt2, sched2, 8) == run(opt, sched, 8)


def test_lambda_lr_state_dict_keeps_callable_objects_state():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate**epoch

    opt = make_opt()
    sched = lrs.LambdaLR(opt, [Decay(0.9)])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.9}]
    other = lrs.LambdaLR(make_opt(), [Decay(0.5)])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.9


def test_epoch_argument_is_deprecated_and_uses_the_closed_form():
    opt = make_opt(1.0)
    sched = lrs.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(5)
    assert sched.get_last_lr() == [0.25]


def test_errors():
    opt = make_opt()
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lrs.StepLR([], step_size=1)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lrs.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        lrs.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lrs.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified"):
        lrs.ExponentialLR(make_opt(), gamma=0.9, last_epoch=2)
