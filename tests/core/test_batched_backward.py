"""Backward on gradients batched by vmap (``jacrev``, ``vmap`` over a ``vjp`` function,
``autograd.grad(..., is_grads_batched=True)``): one pass over the graph with each node's
backward run on the whole batch, against one backward per cotangent.

For every differentiable op of the registry with float64 samples in ``ember.ops.opdb`` (real
or complex128 outputs), ``is_grads_batched`` over three random cotangents must equal three
separate ``grad`` calls.
A node whose backward reads arrays runs once per example inside the batched pass (the
documented fallback); ``BATCHED`` names ops whose backward must run batched, so that the
fast path cannot silently turn into the loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._functorch import _batched
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

ENTRIES = load_all()
DIFFERENTIABLE = sorted(n for n in ENTRIES if n in OPS and OPS[n].differentiable
                        and not OPS[n].random)
B = 3

#: ops whose backward runs on the whole batch (no per-example fallback for their nodes)
BATCHED = ("add", "sub", "mul", "div", "matmul", "mm", "bmm", "linear", "tanh", "sigmoid",
           "relu", "exp", "log", "sin", "pow", "sum", "mean", "reshape", "permute",
           "transpose", "t", "unsqueeze", "squeeze", "cat", "stack", "softmax",
           "log_softmax", "abs", "sqrt", "neg", "where", "clamp", "maximum", "addmm",
           "gelu", "silu", "broadcast_to", "flatten", "narrow", "select", "leaky_relu",
           "threshold", "hardtanh", "cumsum", "logsumexp", "layer_norm", "mse_loss", "fmax",
           "gather", "index_select", "nll_loss", "cross_entropy", "masked_fill", "take_along_dim",
           "conv1d", "conv2d", "conv3d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "batch_norm", "group_norm", "embedding", "pad", "flip", "roll", "unsafe_split",
           "tensordot", "einsum", "diagonal", "diag_embed", "trace", "fft_irfft", "fft_hfft",
           "fft_irfftn", "fft_fft", "fft_rfft", "fft_fftn", "view_as_real",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _leaves(s):
    seen, out = set(), []
    for t in s.tensors():
        if t.requires_grad and t.dtype in (ember.float64, ember.complex128) and \
                id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _outputs(e, s, op):
    r = s.call(op)
    if e.output is not None:
        r = e.output(r)
    if isinstance(r, (tuple, list)):
        return [o for o in r if isinstance(o, ember.Tensor) and o.requires_grad]
    return [r] if isinstance(r, ember.Tensor) and r.requires_grad else []


def _np(t):
    return None if t is None else t.detach().cpu().numpy()


def _t(rng, *shape):
    """A float64 tensor of standard normal draws (on the default device)."""
    return ember.tensor(rng.standard_normal(shape), dtype=ember.float64)


def batched_vs_loop(name) -> tuple[int, set]:
    """Check op ``name`` on its float64 samples: (samples checked, node classes that ran
    per example)."""
    e, op = ENTRIES[name], OPS[name].fn
    rng = np.random.default_rng(0)
    checked, per_example = 0, set()
    for s in e.samples(None, "float64", requires_grad=True):
        leaves = _leaves(s)
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        outs = _outputs(e, s, op)
        if not outs or any(o.dtype not in (ember.float64, ember.complex128) for o in outs):
            continue
        cts = [ember.tensor(rng.standard_normal((B, *o.shape)) + (
            1j * rng.standard_normal((B, *o.shape)) if o.is_complex() else 0),
            dtype=o.dtype, device=o.device) for o in outs]
        loop = [ember.autograd.grad(outs, leaves, [c[b] for c in cts], retain_graph=True,
                                    allow_unused=True) for b in range(B)]
        before = set(_batched._PER_EXAMPLE_NODES)
        got = ember.autograd.grad(outs, leaves, cts, retain_graph=True, allow_unused=True,
                                  is_grads_batched=True)
        per_example |= _batched._PER_EXAMPLE_NODES - before
        assert len(got) == len(leaves)
        for i, g in enumerate(got):
            want = [r[i] for r in loop]
            if all(w is None for w in want):
                assert g is None or not np.any(_np(g)), f"{name} {s}: input {i}"
                continue
            want_np = np.stack([np.zeros(tuple(leaves[i].shape)) if w is None else _np(w)
                                for w in want])
            assert g is not None, f"{name} {s}: input {i} got no gradient"
            assert tuple(g.shape) == want_np.shape, (name, tuple(g.shape), want_np.shape)
            np.testing.assert_allclose(_np(g), want_np, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name} {s}: input {i}")
        checked += 1
    return checked, per_example


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_batched_backward_matches_one_pass_per_cotangent(name):
    checked, _ = batched_vs_loop(name)
    if not checked:
        pytest.skip("no float64 sample with a float64 output")


@pytest.mark.parametrize("name", BATCHED)
def test_common_backwards_run_batched(name):
    _batched._PER_EXAMPLE_NODES.clear()
    checked, per_example = batched_vs_loop(name)
    assert checked
    assert not per_example, f"{name}: {sorted(c.__name__ for c in per_example)} ran per example"


def test_jacrev_runs_one_backward():
    """jacrev of an MLP is one batched backward: no node falls back, and the Jacobian
    equals jacfwd's and the finite-difference one."""
    rng = np.random.default_rng(0)
    w1, w2 = _t(rng, 8, 5), _t(rng, 4, 8)

    def f(x):
        return ember.tanh(ember.tanh(x @ w1.T) @ w2.T).softmax(-1)

    x = _t(rng, 5)
    _batched._PER_EXAMPLE_NODES.clear()
    calls = []
    real = _batched._node_per_example
    _batched._node_per_example = lambda *a: calls.append(a) or real(*a)
    try:
        jr = ember.func.jacrev(f)(x)
    finally:
        _batched._node_per_example = real
    assert not calls
    np.testing.assert_allclose(_np(jr), _np(ember.func.jacfwd(f)(x)), rtol=1e-10)
    eps = 1e-6
    fd = np.stack([_np(f(x + eps * e) - f(x - eps * e)) / (2 * eps)
                   for e in ember.eye(5, dtype=ember.float64)], -1)
    np.testing.assert_allclose(_np(jr), fd, rtol=1e-6, atol=1e-9)


def test_a_backward_that_reads_arrays_runs_per_example():
    """A node whose backward reads its gradient's array cannot take a batched gradient: it
    runs once per example inside the batched pass, with the loop's results."""
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    y = (x.cumprod(0) * 2).sum(1)
    cts = ember.randn(5, 4, dtype=ember.float64)
    got, = ember.autograd.grad(y, x, cts, is_grads_batched=True, retain_graph=True)
    for b in range(5):
        want, = ember.autograd.grad(y, x, cts[b], retain_graph=True)
        np.testing.assert_allclose(_np(got[b]), _np(want), rtol=1e-12)


def test_custom_function_backward_sees_one_example_at_a_time():
    """A custom Function's backward is user code: it runs per example (it may read
    arrays), and its results join the batch."""
    seen = []

    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            seen.append(type(g))
            return ember.tensor(3 * x.detach().cpu().numpy() ** 2 * g.detach().cpu().numpy(),
                                device=g.device)

    x = _t(np.random.default_rng(3), 3).requires_grad_()
    jac = ember.func.jacrev(lambda t: Cube.apply(t).sin())(x)
    xn = x.detach().cpu().numpy()
    np.testing.assert_allclose(_np(jac), np.diag(np.cos(xn ** 3) * 3 * xn ** 2), rtol=1e-12)
    assert seen and all(t is ember.Tensor for t in seen)


def test_create_graph_through_a_batched_backward():
    """hessian (jacfwd over jacrev) and jacrev of jacrev differentiate through the batched
    backward's own graph."""
    a = _t(np.random.default_rng(1), 4, 4)

    def f(x):
        return (ember.tanh(a @ x) ** 2).sum() + (x ** 3).sum()

    x = _t(np.random.default_rng(2), 4)
    h1 = ember.func.hessian(f)(x)
    h2 = ember.func.jacrev(ember.func.jacrev(f))(x)
    eps = 1e-5
    g = ember.func.grad(f)
    fd = np.stack([_np(g(x + eps * e) - g(x - eps * e)) / (2 * eps)
                   for e in ember.eye(4, dtype=ember.float64)], -1)
    np.testing.assert_allclose(_np(h1), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(h2), _np(h1), rtol=1e-10, atol=1e-12)


def _no_fallback():
    """A context listing what ran per example (nodes, and ops or transforms that took
    vmap's loop)."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        calls = []
        real, real_loop = _batched._node_per_example, _batched._loop
        _batched._node_per_example = lambda *a: calls.append(type(a[0]).__name__) or real(*a)
        _batched._loop = lambda lvl, func, args, kwargs, key, *r: \
            calls.append(key) or real_loop(lvl, func, args, kwargs, key, *r)
        try:
            yield calls
        finally:
            _batched._node_per_example, _batched._loop = real, real_loop

    return ctx()


def test_transforms_inside_vmap_batch_their_backward():
    """vmap(jacrev), vmap(hessian), vmap over a vjp function inside another vmap and vmap
    over linearize's function: each equals the per-example loop, in one backward pass per
    batch (cotangents batched at the later vmap level keep the earlier level's dims)."""
    rng = np.random.default_rng(0)
    w, xs = _t(rng, 5, 3), _t(rng, 4, 3)
    func = ember.func

    def f(x):
        return ember.tanh(w @ x).softmax(-1)

    def s(x):
        return f(x).sum() + (x ** 3).sum()

    def per(x):
        _, fn = func.vjp(f, x)
        return func.vmap(fn)(ember.eye(5, dtype=ember.float64))[0]

    loop_j = ember.stack([func.jacrev(f)(x) for x in xs])
    with _no_fallback() as calls:
        got_j = func.vmap(func.jacrev(f))(xs)
        got_h = func.vmap(func.hessian(s))(xs)
        got_v = func.vmap(per)(xs)
        jw = func.vmap(func.jacrev(lambda x, m: ember.tanh(m @ x), argnums=(0, 1)),
                       in_dims=(0, None))(xs, w)
        _, jvp_fn = func.linearize(f, xs[0])
        cols = func.vmap(jvp_fn)(ember.eye(3, dtype=ember.float64))
    assert not calls
    np.testing.assert_allclose(_np(got_j), _np(loop_j), rtol=1e-12)
    np.testing.assert_allclose(_np(got_v), _np(loop_j), rtol=1e-12)
    np.testing.assert_allclose(_np(got_h),
                               _np(ember.stack([func.hessian(s)(x) for x in xs])),
                               rtol=1e-10, atol=1e-12)
    for i, want in enumerate(func.jacrev(lambda x, m: ember.tanh(m @ x), argnums=(0, 1))(
            x, w) for x in xs):
        np.testing.assert_allclose(_np(jw[0][i]), _np(want[0]), rtol=1e-12)
        np.testing.assert_allclose(_np(jw[1][i]), _np(want[1]), rtol=1e-12)
    np.testing.assert_allclose(_np(cols).T, _np(loop_j[0]), rtol=1e-12)


def test_jacrev_and_jacfwd_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = rng.standard_normal((6, 4)), rng.standard_normal(6), rng.standard_normal((3, 4))
    out = {}
    for lib in (ember, torch):
        w, b, xs = (lib.tensor(a) for a in arrays)

        def predict(w, b, x, lib=lib):
            return lib.nn.functional.linear(x, w, b).tanh()

        out[lib.__name__] = [
            lib.func.vmap(lib.func.jacrev(predict, argnums=(0, 2)), in_dims=(None, None, 0))(
                w, b, xs),
            lib.func.jacfwd(predict, argnums=2)(w, b, xs[0]),
            lib.func.hessian(lambda x, w=w, b=b: predict(w, b, x).sum())(xs[1])]
    e, t = out["ember"], out["torch"]
    for a, b in ((e[0][0], t[0][0]), (e[0][1], t[0][1]), (e[1], t[1]), (e[2], t[2])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
