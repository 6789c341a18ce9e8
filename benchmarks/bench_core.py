"""Eager-overhead workloads of ember-core (issue: foundation)."""

from __future__ import annotations

import numpy as np
from harness import compare


def workloads(torch):
    import ember

    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((8, 8)).astype(np.float32)
    b_np = rng.standard_normal((8, 8)).astype(np.float32)
    results = []

    ea, eb = ember.from_numpy(a_np.copy()), ember.from_numpy(b_np.copy())
    ta = tb = None
    if torch is not None:
        ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
    results.append(compare(
        "add 8x8", lambda: ea + eb, (lambda: ta + tb) if torch else None,
        lambda: a_np + b_np, number=20000))

    ex = ember.from_numpy(a_np.copy()).requires_grad_()
    ew = ember.from_numpy(b_np.copy())

    def ember_chain():
        ((ex * ew).relu() + ew).sum().backward()

    torch_chain = None
    if torch is not None:
        tx = torch.from_numpy(a_np.copy()).requires_grad_()
        tw = torch.from_numpy(b_np.copy())

        def torch_chain():
            ((tx * tw).relu() + tw).sum().backward()

    def numpy_chain():
        m = a_np * b_np
        r = np.maximum(m, 0)
        (r + b_np).sum()
        g = np.ones_like(m)
        (g * (r > 0)) * b_np

    results.append(compare("mul-relu-add-sum + backward 8x8", ember_chain, torch_chain,
                           numpy_chain, number=5000))

    # an optimizer written by hand with in-place ops (torch-optimizer, papers' code, an EMA
    # of the weights): 10 parameters of 64 elements, per step
    shapes = [(8, 8)] * 10
    inits = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def hand_adam(lib):
        params = [lib.from_numpy(a.copy()) for a in inits]
        grads = [lib.from_numpy(a.copy() * 0.1) for a in inits]
        m = [lib.zeros_like(p) for p in params]
        v = [lib.zeros_like(p) for p in params]
        ema = [p.clone() for p in params]

        def step():
            for p, g, m_, v_, e in zip(params, grads, m, v, ema):
                m_.mul_(0.9).add_(g, alpha=0.1)
                v_.mul_(0.999).addcmul_(g, g, value=0.001)
                p.addcdiv_(m_, v_.sqrt().add_(1e-8), value=-1e-3)
                e.lerp_(p, 0.001)
        return step

    results.append(compare("hand-written Adam + EMA step, 10 params", hand_adam(ember),
                           hand_adam(torch) if torch else None, number=500))

    big = rng.standard_normal((1024, 1024)).astype(np.float32)
    em = ember.from_numpy(big)
    tm = torch.from_numpy(big) if torch is not None else None
    results.append(compare("matmul 1024x1024 f32", lambda: em @ em,
                           (lambda: tm @ tm) if torch else None, lambda: big @ big,
                           number=5, repeat=6, pause=1.0))
    return results
