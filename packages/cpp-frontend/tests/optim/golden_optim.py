"""Golden trajectories of the optimizer tests (run by ctest before them, see
tests/CMakeLists.txt):

    python golden_optim.py GOLDEN_DIR

For each configuration below, runs Python Ember's optimizer (and scheduler) for a few steps
on parameters of different shapes with fixed gradients and writes GOLDEN_DIR/<name>.safetensors:

    p<i>.init        the initial parameters
    g<i>.step<k>     the gradient of parameter i at step k (k = 1..steps); absent: no gradient
    p<i>.step<k>     parameter i after step k
    lr.step<k>       the groups' lrs after step k (get_last_lr()), float64; lr.step0 initially

test_optim_golden.cpp runs the same configurations in C++ and compares.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from safetensors.numpy import save_file

import ember
from ember import optim

SHAPES = [(4, 3), (5,), (2, 2, 3)]


def _params(rng, dtype):
    return [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]


def _run(
    name,
    out_dir,
    dtype,
    make_opt,
    *,
    steps=8,
    make_sched=None,
    seed=0,
    missing=(),
    closure_coeffs=None,
):
    """make_opt(params) -> optimizer; missing: (param, step) pairs without a gradient;
    closure_coeffs: a quadratic loss 0.5 * sum(c * p * p) per parameter, stepped through
    step(closure), instead of the stored gradients."""
    rng = np.random.default_rng(seed)
    init = _params(rng, dtype)
    params = [ember.from_numpy(a.copy()).requires_grad_() for a in init]
    opt = make_opt(params)
    sched = make_sched(opt) if make_sched else None
    out = {f"p{i}.init": a for i, a in enumerate(init)}
    out["lr.step0"] = np.array([g["lr"] for g in opt.param_groups], dtype=np.float64)
    for k in range(1, steps + 1):
        if closure_coeffs is not None:
            coeffs = [ember.from_numpy(c.astype(dtype)) for c in closure_coeffs]

            def closure():
                opt.zero_grad()
                loss = None
                for p, c in zip(params, coeffs):  # noqa: B023 (called at once)
                    term = (c * p * p).sum() * 0.5
                    loss = term if loss is None else loss + term
                loss.backward()
                return loss

            loss = opt.step(closure)
            out[f"loss.step{k}"] = np.array([float(loss.item())], dtype=np.float64)
        else:
            for i, p in enumerate(params):
                g = rng.standard_normal(p.shape).astype(dtype)
                if (i, k) in missing:
                    p.grad = None
                else:
                    p.grad = ember.from_numpy(g)
                    out[f"g{i}.step{k}"] = g
            opt.step()
        if sched is not None:
            sched.step()
        for i, p in enumerate(params):
            out[f"p{i}.step{k}"] = p.detach().numpy().copy()
        out[f"lr.step{k}"] = np.array(
            sched.get_last_lr() if sched is not None else [g["lr"] for g in opt.param_groups],
            dtype=np.float64,
        )
    save_file(
        out,
        os.path.join(out_dir, f"{name}.safetensors"),
        metadata={"steps": str(steps), "params": str(len(params))},
    )


def main(out_dir: str) -> int:
    os.makedirs(out_dir, exist_ok=True)
    f32, f64 = np.float32, np.float64
    _run("sgd_plain_f32", out_dir, f32, lambda p: optim.SGD(p, lr=0.1))
    _run("sgd_plain_f64", out_dir, f64, lambda p: optim.SGD(p, lr=0.1), seed=1)
    _run(
        "sgd_momentum_wd_f32",
        out_dir,
        f32,
        lambda p: optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
        seed=2,
    )
    _run(
        "sgd_nesterov_f64",
        out_dir,
        f64,
        lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
        seed=3,
    )
    _run(
        "sgd_dampening_f32",
        out_dir,
        f32,
        lambda p: optim.SGD(p, lr=0.1, momentum=0.8, dampening=0.3),
        seed=4,
        missing={(1, 2), (1, 5), (0, 1)},
    )
    _run("adam_f32", out_dir, f32, lambda p: optim.Adam(p, lr=0.01), seed=5)
    _run(
        "adam_wd_amsgrad_f64",
        out_dir,
        f64,
        lambda p: optim.Adam(
            p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True
        ),
        seed=6,
    )
    _run(
        "adam_lowbeta_amsgrad_f32",
        out_dir,
        f32,
        lambda p: optim.Adam(p, lr=0.01, betas=(0.3, 0.9), amsgrad=True),
        seed=7,
        missing={(2, 3)},
    )
    _run("adamw_f32", out_dir, f32, lambda p: optim.AdamW(p, lr=0.01), seed=8)
    _run(
        "adamw_amsgrad_f64",
        out_dir,
        f64,
        lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1, amsgrad=True),
        seed=9,
    )
    _run(
        "sgd_groups_steplr_f32",
        out_dir,
        f32,
        lambda p: optim.SGD(
            [{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}],
            lr=0.1,
            momentum=0.9,
        ),
        make_sched=lambda o: optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
        steps=10,
        seed=10,
    )
    _run(
        "adam_cosine_f64",
        out_dir,
        f64,
        lambda p: optim.Adam(p, lr=0.05),
        make_sched=lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.001),
        steps=11,
        seed=11,
    )
    _run(
        "adamw_groups_cosine_f32",
        out_dir,
        f32,
        lambda p: optim.AdamW([{"params": p[:1], "lr": 0.003}, {"params": p[1:]}], lr=0.01),
        make_sched=lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=3),
        steps=8,
        seed=12,
    )
    coeffs_rng = np.random.default_rng(13)
    coeffs = [coeffs_rng.uniform(0.5, 2.0, shape) for shape in SHAPES]
    _run(
        "sgd_closure_quadratic_f64",
        out_dir,
        f64,
        lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
        seed=14,
        closure_coeffs=coeffs,
    )
    save_file(
        {f"c{i}": c for i, c in enumerate(coeffs)},
        os.path.join(out_dir, "quadratic_coeffs.safetensors"),
    )
    print(f"golden_optim: wrote the optimizer trajectories to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
