"""Loss kernels (ember.ops.loss): the edges the op database's samples do not reach, node
names, the ATen signatures against PyTorch, PyTorch's errors and warnings, the device path
(every loss's values and gradients for every reduction: tests/ops/test_ops.py)."""

import math
import warnings

import numpy as np
import pytest
from testutils import t64, to_numpy

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import loss as L

RNG = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def np_reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


def np_log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
PROB = RNG.uniform(0.05, 0.95, (4, 5))
IDX = np.array([1, 0, 4, 2])

# The values (against NumPy or PyTorch) of every loss for every reduction and their
# gradchecks and gradgradchecks (inputs and targets): the generic tests over the op database
# (tests/ops/test_ops.py); here the edges their samples do not reach (the default
# ignore_index -100, weighted probability targets, saturation), errors and warnings

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_fused_node_and_broadcast_path(reduction):
    a, b = t64(X), t64(Y)
    assert L.mse_loss(a, b).grad_fn.name() == "MseLossBackward0"
    assert gradgradcheck(lambda u, v: L.mse_loss(u, v, reduction=reduction), (a, b))
    col = t64(Y[:, :1])
    with pytest.warns(UserWarning, match="Using a target size"):
        out = L.mse_loss(a, col, reduction=reduction)
    np.testing.assert_allclose(to_numpy(out), np_reduce((X - Y[:, :1]) ** 2, reduction), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda u, v: L.mse_loss(u, v, reduction=reduction), (a, col))


# -- cross_entropy / nll_loss -------------------------------------------------------------------

def np_cross_entropy(x, t, w, ignore, reduction, eps, ca=1):
    logp = np_log_softmax(x, ca)
    C = x.shape[ca]
    lp = np.moveaxis(logp, ca, -1)
    w = np.ones(C) if w is None else w
    valid = t != ignore
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(lp, tc[..., None], -1)[..., 0]
    wr = w[tc] * valid
    row = (1 - eps) * -(picked * wr) + eps / C * -(lp * w).sum(-1) * valid
    if reduction == "mean":
        return row.sum() / wr.sum()
    return np_reduce(row, reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("eps", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices(reduction, eps, weighted):
    x = t64(X)
    t = np.array([1, -100, 4, 2])
    w = RNG.uniform(0.5, 2, 5) if weighted else None
    out = L.cross_entropy(x, ember.tensor(t), weight=None if w is None else t64(w, False),
                          reduction=reduction, label_smoothing=eps)
    np.testing.assert_allclose(to_numpy(out), np_cross_entropy(X, t, w, -100, reduction, eps),
                               rtol=1e-10)
    # PyTorch's graph: nll_loss(log_softmax(x)), label smoothing added to it
    assert out.grad_fn.name() == ("AddBackward0" if eps else "NllLossBackward0")
    wt = None if w is None else t64(w, False)
    fn = lambda u: L.cross_entropy(u, ember.tensor(t), weight=wt, reduction=reduction,
                                   label_smoothing=eps)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x, p = t64(X), t64(RNG.dirichlet(np.ones(5), 4))
    w = t64(RNG.uniform(0.5, 2, 5), False)
    out = L.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=0.1)
    tp = to_numpy(p) * 0.9 + 0.1 / 5
    row = -(np_log_softmax(X, 1) * tp * to_numpy(w)).sum(1)
    np.testing.assert_allclose(to_numpy(out), np_reduce(row, reduction), rtol=1e-10)
    fn = lambda u, v: L.cross_entropy(u, v, weight=w, reduction=reduction,
                                      label_smoothing=0.1)
    assert gradcheck(fn, (x, p))
    assert gradgradcheck(fn, (x, p))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_k_dim_and_unbatched(reduction):
    x = t64(RNG.standard_normal((2, 5, 3, 2)))
    t = RNG.integers(0, 5, (2, 3, 2))
    t[0, 0, 0] = -100
    out = L.cross_entropy(x, ember.tensor(t), reduction=reduction, label_smoothing=0.1)
    np.testing.assert_allclose(to_numpy(out),
                               np_cross_entropy(to_numpy(x), t, None, -100, reduction, 0.1),
                               rtol=1e-10)
    assert gradcheck(lambda u: L.cross_entropy(u, ember.tensor(t), reduction=reduction), (x,))
    v = t64(X[0])
    out = L.cross_entropy(v, ember.tensor(3), reduction=reduction)
    assert out.shape == ()
    np.testing.assert_allclose(to_numpy(out), -np_log_softmax(X[0], 0)[3], rtol=1e-12)
    assert gradcheck(lambda u: L.cross_entropy(u, ember.tensor(3), reduction=reduction), (v,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    x = t64(X)
    t = np.array([1, -100, 4, 2])
    w = RNG.uniform(0.5, 2, 5)
    out = L.nll_loss(x, ember.tensor(t), weight=t64(w, False), reduction=reduction)
    row = -X[np.arange(4), np.where(t < 0, 0, t)] * w[np.where(t < 0, 0, t)] * (t >= 0)
    expected = row.sum() / (w[t[t >= 0]]).sum() if reduction == "mean" else \
        np_reduce(row, reduction)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-12)
    assert out.grad_fn.name() == "NllLossBackward0"
    fn = lambda u: L.nll_loss(u, ember.tensor(t), weight=t64(w, False),
                              reduction=reduction)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_all_ignored_mean_is_nan_and_float32_stays_float32():
    out = L.cross_entropy(t64(X), ember.tensor([-100] * 4))
    assert math.isnan(out.item())
    x = ember.tensor(X.astype(np.float32), requires_grad=True)
    out = L.cross_entropy(x, ember.tensor(IDX))
    assert out.dtype == ember.float32
    out.backward()
    assert x.grad.dtype == ember.float32


def test_cross_entropy_errors():
    x = t64(X)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target "
                                         r"batch_size \(3\)\."):
        L.cross_entropy(x, ember.tensor([1, 2, 3]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        L.cross_entropy(x, ember.tensor([1, 2, 5, 0]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Int"):
        L.cross_entropy(x, ember.tensor([1, 2, 3, 0], dtype=ember.int32))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        L.cross_entropy(t64(np.zeros((2, 5, 4))), ember.zeros((2, 3), dtype=ember.int64))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        L.cross_entropy(x, t64(PROB), ignore_index=1)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        L.cross_entropy(x, ember.tensor(IDX), reduction="foo")
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: "
                                           "1.5"):
        L.cross_entropy(x, ember.tensor(IDX), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 5 "
                                           r"classes or no classes but got weight tensor of "
                                           r"shape: \[4\]"):
        L.cross_entropy(x, ember.tensor(IDX), weight=ember.ones(4, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        L.cross_entropy(ember.zeros((4, 5), dtype=ember.int64), ember.tensor(IDX))


# -- the other losses ---------------------------------------------------------------------------


PROB_T = ember.tensor(PROB)


def _unfused_cross_entropy(x, t, **kw):
    """``nll_loss(log_softmax(x))`` as separate ops: what the fused path must give."""
    ca = 0 if x.dim() == 1 else 1
    return L.nll_loss(ember.log_softmax(x, ca), t, **kw)


@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 2, 2), (5,)])
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum", "ignore_index": 2},
                                {"reduction": "none", "weight": True}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_fused_matches_log_softmax_then_nll(shape, kw, dtype):
    """The fused forward and backward (no log-probabilities made; one pass backward) give
    nll_loss(log_softmax(x))'s values and gradients, to float rounding, in the same graph."""
    rng = np.random.default_rng(1)
    xa = rng.standard_normal(shape).astype(dtype) * 3
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = ember.tensor(rng.integers(0, 5, tshape))
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = ember.tensor(rng.uniform(0.5, 2.0, 5).astype(dtype))
    x1, x2 = (ember.tensor(xa, requires_grad=True) for _ in range(2))
    fused, plain = L.cross_entropy(x1, t, **kw), _unfused_cross_entropy(x2, t, **kw)
    assert fused.grad_fn.name() == "NllLossBackward0"
    assert fused.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    tol = {"rtol": 1e-6, "atol": 1e-7} if dtype == np.float32 else {"rtol": 1e-14}
    np.testing.assert_allclose(fused.detach().numpy(), plain.detach().numpy(), **tol)
    g = ember.tensor(rng.standard_normal(tuple(fused.shape)).astype(dtype))
    fused.backward(g)
    plain.backward(g)
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), **tol)


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum", "ignore_index": 2},
                                {"reduction": "none", "weight": True}])
@pytest.mark.parametrize("rows, classes", [(6, 5), (2048, 512), (300, 27)])
def test_cross_entropy_native_rows_have_log_softmax_bits(monkeypatch, kw, rows, classes):
    """(N, C) float32 logits take kernels.c's one pass set per row (split over the native
    pool for many rows): the loss bit for bit nll_loss(log_softmax(x)), whose native kernel
    makes the same operations, with a row of +-inf and NaN among them; the gradient that of
    the NumPy formulation (EMBER_NATIVE=0) to float rounding, and the backward kernel's bits
    the two NumPy passes' on the same exponentials."""
    from ember import _native

    if _native.kernel("ember_cross_entropy_f32") is None:
        pytest.skip("no native kernels here")
    before = ember.get_default_device()  # CPU kernels: on the CPU under a strict run too
    ember.set_default_device("cpu")
    try:
        _check_native_cross_entropy(monkeypatch, kw, rows, classes)
    finally:
        ember.set_default_device(before)


def _check_native_cross_entropy(monkeypatch, kw, rows, classes):
    from ember import _native

    rng = np.random.default_rng(4)
    xa = (rng.standard_normal((rows, classes)) * 8).astype(np.float32)
    xa[1, :3] = [np.inf, -np.inf, 0.0]
    xa[2, 0] = np.nan
    xa[3] = -np.inf
    t = ember.tensor(rng.integers(0, classes, rows))
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = ember.tensor(rng.uniform(0.5, 2.0, classes).astype(np.float32))
    if "ignore_index" in kw:
        kw["ignore_index"] = min(kw["ignore_index"], classes - 1)
    finite = slice(4, None)

    def run(x):
        xt = ember.tensor(x, requires_grad=True)
        loss = L.cross_entropy(xt, t[finite] if x.shape[0] == rows - 4 else t, **kw)
        loss.backward(ember.ones_like(loss))
        return loss.detach().numpy(), xt.grad.numpy()

    calls = []
    real = _native.kernel
    monkeypatch.setattr(_native, "kernel", lambda name: calls.append(name) or real(name))
    fused, _ = run(xa)
    plain = _unfused_cross_entropy(ember.tensor(xa), t, **kw).numpy()
    np.testing.assert_array_equal(fused.view(np.uint32), plain.view(np.uint32))
    assert {"ember_cross_entropy_f32", "ember_cross_entropy_backward_f32"} <= set(calls)
    native, native_grad = run(xa[finite])
    monkeypatch.setenv("EMBER_NATIVE", "0")
    numpy_loss, numpy_grad = run(xa[finite])
    monkeypatch.delenv("EMBER_NATIVE")
    np.testing.assert_allclose(native, numpy_loss, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(native_grad, numpy_grad, rtol=1e-5, atol=1e-7)
    # the backward kernel alone against the NumPy passes, on the same e and z
    e, z, picked = L._native_cross_entropy(xa[finite], 1, np.ascontiguousarray(t.numpy()[finite]))
    minus_a = rng.standard_normal(rows - 4).astype(np.float32)
    tc = np.ascontiguousarray(t.numpy()[finite])
    got = np.empty_like(e)
    assert L._native_cross_entropy_bw(e, z, minus_a, tc, got, 1)
    want = e * (-minus_a.reshape(z.shape) / z)
    want[np.arange(rows - 4), tc] += minus_a
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not L._native_cross_entropy_bw(e, z, minus_a, tc, got, 0)  # classes not last


def test_cross_entropy_fused_backward_with_retain_graph_hooks_and_create_graph():
    x = t64(X, requires_grad=True)
    t = ember.tensor(IDX)
    loss = L.cross_entropy(x, t)
    want = np.exp(np_log_softmax(X, 1))
    want[np.arange(4), IDX] -= 1
    want /= 4
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    x.grad = None
    loss.backward(retain_graph=True)  # the saved softmax was not written over
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    # hooks see the gradients of the two ops, as without the fused pass
    seen, kept = [], []
    loss.grad_fn.next_functions[0][0].register_prehook(
        lambda grads: seen.append(grads[0].numpy().copy()))
    loss.grad_fn.register_hook(lambda grads_in, grads_out: kept.append(grads_in[0]))
    x.grad = None
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    nll_grad = np.zeros((4, 5))
    nll_grad[np.arange(4), IDX] = -0.25
    np.testing.assert_array_equal(seen[0], nll_grad)
    np.testing.assert_array_equal(kept[0].numpy(), nll_grad)
    (gx,) = ember.autograd.grad(L.cross_entropy(x, t), (x,), create_graph=True)
    assert gx.requires_grad
    np.testing.assert_allclose(gx.detach().numpy(), want, rtol=1e-12)
    assert gradgradcheck(lambda x: L.cross_entropy(x, t, reduction="sum"), (x,))


def test_gaussian_nll_loss_var_size_error():
    a, b = t64(X), t64(Y)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        L.gaussian_nll_loss(a, b, t64(np.ones((3, 2))))


def test_weighted_variants():
    # the weighted values and gradients (mse, l1, bce_with_logits with weight and pos_weight):
    # the generic tests
    a, b = t64(X), t64(Y, False)
    w = t64(PROB, False)
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        L.mse_loss(a, b, weight=w[0])
    pw = t64(RNG.uniform(0.5, 3, 5), False)
    # as in PyTorch, weight and pos_weight take no gradient
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'pos_weight'"):
        L.binary_cross_entropy_with_logits(a, PROB_T, pos_weight=t64(to_numpy(pw)))


def test_bce_with_logits_is_stable_and_smooth_at_zero():
    x = t64([-1000.0, 0.0, 1000.0])
    t = ember.tensor([1.0, 1.0, 0.0], dtype=ember.float64)
    out = L.binary_cross_entropy_with_logits(x, t, reduction="none")
    np.testing.assert_allclose(to_numpy(out), [1000.0, math.log(2), 1000.0])
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [-1.0, -0.5, 1.0])


def test_bce_clamps_log_at_minus_100():
    out = L.binary_cross_entropy(t64([0.0, 1.0]), ember.tensor([1.0, 0.0],
                                                               dtype=ember.float64),
                                 reduction="none")
    np.testing.assert_allclose(to_numpy(out), [100.0, 100.0])
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        L.binary_cross_entropy(t64([1.5]), t64([1.0]))


def np_bce_grad(p, t, w=1.0):
    """PyTorch's gradient of the summed loss: ``w (p - t) / max(p (1 - p), 1e-12)``."""
    return w * (p - t) / np.maximum(p * (1 - p), 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_is_finite_at_saturated_probabilities(dtype, reduction):
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 1e-7], dtype=dtype)
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.25, 1.0], dtype=dtype)
    w = np.arange(1.0, 7.0, dtype=dtype)
    x = ember.tensor(p, requires_grad=True)
    out = L.binary_cross_entropy(x, ember.tensor(t), weight=ember.tensor(w),
                                 reduction=reduction)
    with np.errstate(divide="ignore"):
        loss = -w * (t * np.maximum(np.log(p.astype(np.float64)), -100)
                     + (1 - t) * np.maximum(np.log1p(-p.astype(np.float64)), -100))
    np.testing.assert_allclose(to_numpy(out), np_reduce(loss, reduction), rtol=1e-6)
    assert out.dtype == x.dtype
    out.sum().backward()
    scale = 1 / p.size if reduction == "mean" else 1
    grad = to_numpy(x.grad)
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(grad, np_bce_grad(p.astype(np.float64), t, w) * scale,
                               rtol=1e-5)


def test_bce_training_step_at_saturation_stays_finite():
    # a sigmoid that saturates to exactly 1.0 in float32 used to give NaN gradients
    w = ember.tensor([[40.0]], requires_grad=True)
    p = ember.sigmoid(ember.linear(ember.ones(2, 1), w))
    assert p.detach().numpy().max() == 1.0
    L.binary_cross_entropy(p, ember.tensor([[0.0], [1.0]])).backward()
    assert np.isfinite(to_numpy(w.grad)).all()


def test_bce_target_errors():
    a, b = t64(PROB), t64(PROB[::-1].copy())
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        L.binary_cross_entropy(a, t64(PROB * 2))
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        L.binary_cross_entropy(a, ember.tensor(PROB, dtype=ember.float32))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        L.binary_cross_entropy(a, b, weight=t64(PROB))


def test_kl_div_mean_warning():
    # batchmean's values and gradients: the generic tests
    a, b = t64(X), t64(PROB, False)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        L.kl_div(a, b)


def test_size_mismatch_warnings_and_errors():
    a = t64(np.zeros((3, 1)))
    b = t64(np.zeros(3))
    with pytest.warns(UserWarning, match=r"Using a target size \(ember.Size\(\[3\]\)\) that is "
                                         r"different to the input size \(ember.Size\(\[3, 1\]\)"
                                         r"\)"):
        out = L.mse_loss(a, b, reduction="none")
    assert out.shape == (3, 3)
    with pytest.raises(ValueError, match="Target size"):
        L.binary_cross_entropy_with_logits(b, a)
    with pytest.raises(ValueError, match="is deprecated. Please ensure they have the same size"):
        L.binary_cross_entropy(b, a)
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should have "
                                           "same dimension"):
        L.margin_ranking_loss(b, a, b)
    with pytest.raises(NotImplementedError, match="\"mse_cpu\" not implemented for 'Long'"):
        L.mse_loss(ember.zeros(3, dtype=ember.int64), ember.zeros(3, dtype=ember.int64))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                                         "please use reduction='sum' instead."):
        out = L.l1_loss(b, b, size_average=False)
    assert out.shape == ()


# -- ctc_loss -----------------------------------------------------------------------------------

def np_ctc(lp, target, blank=0):
    """Brute force: log-sum of the probabilities of every path that collapses to target."""
    import itertools

    T, C = lp.shape
    total = -np.inf
    for path in itertools.product(range(C), repeat=T):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or
                                                                      path[i - 1] != c)]
        if collapsed == list(target):
            total = np.logaddexp(total, sum(lp[t, c] for t, c in enumerate(path)))
    return -total


def ctc_inputs(T=5, N=3, C=4):
    return t64(np_log_softmax(RNG.standard_normal((T, N, C)), 2))


def test_ctc_matches_brute_force():
    lp = ctc_inputs()
    targets = ember.tensor([[1, 1, 2], [3, 0, 0], [2, 3, 0]])
    il, tl = [5, 4, 3], [3, 1, 2]
    out = L.ctc_loss(lp, targets, il, tl, reduction="none")
    arr = to_numpy(lp)
    ref = [np_ctc(arr[:il[n], n], to_numpy(targets)[n, :tl[n]]) for n in range(3)]
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-10)
    mean = L.ctc_loss(lp, targets, il, tl)
    np.testing.assert_allclose(to_numpy(mean), np.mean(np.array(ref) / np.array(tl)), rtol=1e-10)


def test_ctc_zero_infinity_and_errors():
    lp = ctc_inputs(3, 2, 4)
    targets = ember.tensor([[1, 1, 1], [1, 2, 0]])  # 1,1,1 needs 5 frames: impossible in 3
    out = L.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="none")
    assert math.isinf(out[0].item()) and math.isfinite(out[1].item())
    out = L.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="sum", zero_infinity=True)
    out.backward()
    assert np.isfinite(out.item())
    np.testing.assert_array_equal(to_numpy(lp.grad)[:, 0], 0)
    assert np.abs(to_numpy(lp.grad)[:, 1]).sum() > 0
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 3, "
                                           "but got value 4"):
        L.ctc_loss(lp, targets, [4, 3], [3, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 4 at "
                                           "dimension 1, but got size 3"):
        L.ctc_loss(lp, targets, [3, 3], [4, 2])


# -- registry and devices -----------------------------------------------------------------------

def test_registered_like_torch():
    assert not hasattr(ember, "cross_entropy") and not hasattr(ember.Tensor, "cross_entropy")
    from ember.ops.registry import OPS

    assert {"cross_entropy", "nll_loss", "mse_loss", "ctc_loss"} <= set(OPS)
    # ember.<name> is torch.<name> (ATen's signature), ember.nn.functional.<name> F's
    import ember.nn.functional as F

    for name in (*_ATEN_LOSSES, "ctc_loss"):
        assert getattr(ember, name) is OPS[name].fn
        assert getattr(F, name) is getattr(L, name) is not getattr(ember, name)


#: ``torch.<name>`` calls (ATen: positional reductions as integers; unreduced by default, as
#: PyTorch's Python bindings read the schemas' default) and the equal ``torch.nn.functional``
#: ones, as ``(args, F kwargs)`` after the tensors
_ATEN_LOSSES = {
    "kl_div": (2, ((2,), {"reduction": "sum"}), ((1,), {"reduction": "mean"}),
               ((), {"reduction": "none"})),
    "binary_cross_entropy_with_logits": (
        2, ((None, None, 2), {"reduction": "sum"}), ((), {"reduction": "none"})),
    "poisson_nll_loss": (2, ((False, True, 1e-3, 2),
                             {"log_input": False, "full": True, "eps": 1e-3,
                              "reduction": "sum"}),
                         ((True, False, 1e-8, 0), {"reduction": "none"})),
    "margin_ranking_loss": (3, ((0.3, 2), {"margin": 0.3, "reduction": "sum"}),
                            ((0.0, 1), {"reduction": "mean"}), ((), {"reduction": "none"})),
    "hinge_embedding_loss": (2, ((0.7, 2), {"margin": 0.7, "reduction": "sum"}),
                             ((), {"reduction": "none"})),
    "cosine_embedding_loss": (3, ((0.1, 2), {"margin": 0.1, "reduction": "sum"}),
                              ((), {"reduction": "none"})),
    "triplet_margin_loss": (3, ((0.5, 1.0, 1e-6, True, 2),
                                {"margin": 0.5, "p": 1, "swap": True, "reduction": "sum"}),
                            ((), {"reduction": "none"})),
}


def _loss_inputs(name, n):
    rng = np.random.default_rng(3)
    x = [rng.uniform(0.1, 0.9, (4, 3)) for _ in range(n)]
    if name in ("margin_ranking_loss", "hinge_embedding_loss"):
        x[-1] = np.where(rng.random((4, 3)) < 0.5, -1.0, 1.0)
    if name == "cosine_embedding_loss":
        x[-1] = np.where(rng.random(4) < 0.5, -1.0, 1.0)
    if name == "kl_div":
        x[0] = np.log(x[0])
    return x


@pytest.mark.parametrize("name", sorted(_ATEN_LOSSES))
def test_aten_signature_matches_torch(name):
    """``ember.kl_div(x, t, 2)`` reads the third argument as ATen's reduction, as
    ``torch.kl_div`` does; ``ember.nn.functional.kl_div`` keeps F's keywords."""
    import ember.nn.functional as F

    n, *calls = _ATEN_LOSSES[name]
    arrays = _loss_inputs(name, n)
    tensors = [ember.tensor(a) for a in arrays]
    for args, fkw in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # F.kl_div's note on 'mean'
            expected = getattr(F, name)(*tensors, **fkw)
        got = getattr(ember, name)(*tensors, *args)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    try:
        import torch
    except ImportError:
        return
    for args, _ in calls:
        ref = getattr(torch, name)(*[torch.from_numpy(a) for a in arrays], *args)
        got = getattr(ember, name)(*tensors, *args)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-10)


def test_aten_ctc_loss_matches_torch():
    """``torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
    zero_infinity)``: an integer reduction, per-sample losses by default."""
    rng = np.random.default_rng(1)
    lp = rng.normal(size=(6, 2, 4))
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    targets = np.array([[1, 2, 2], [3, 1, 0]])
    e = (ember.tensor(lp), ember.tensor(targets), ember.tensor([6, 5]), ember.tensor([3, 2]))
    np.testing.assert_allclose(ember.ctc_loss(*e).numpy(),
                               L.ctc_loss(*e, reduction="none").numpy())
    np.testing.assert_allclose(ember.ctc_loss(*e, 0, 2).numpy(),
                               L.ctc_loss(*e, reduction="sum").numpy())
    np.testing.assert_allclose(ember.ctc_loss(*e, 0, 1).numpy(), L.ctc_loss(*e).numpy())
    try:
        import torch
    except ImportError:
        return
    t = (torch.from_numpy(lp), torch.from_numpy(targets), torch.tensor([6, 5]),
         torch.tensor([3, 2]))
    for args in ((), (0, 0), (0, 1), (0, 2), (0, 2, True)):
        np.testing.assert_allclose(ember.ctc_loss(*e, *args).numpy(),
                                   torch.ctc_loss(*t, *args).numpy(), rtol=1e-10)


def test_aten_kl_div_keywords():
    x = ember.tensor(np.log([[0.2, 0.8], [0.5, 0.5]]))
    t = ember.tensor([[0.3, 0.7], [0.6, 0.4]], dtype=ember.float64)
    s = ember.kl_div(x, t, 2)
    np.testing.assert_allclose(ember.kl_div(x, t, reduction=2).numpy(), s.numpy())
    np.testing.assert_allclose(ember.kl_div(x, t.log(), 2, log_target=True).numpy(), s.numpy())
    import ember.nn.functional as F

    np.testing.assert_allclose(F.kl_div(x, t, reduction="sum").numpy(), s.numpy())
    np.testing.assert_allclose(F.kl_div(x, t, reduction="batchmean").numpy(), s.numpy() / 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ATen's mean does not warn (F's 'mean' does)
        np.testing.assert_allclose(ember.kl_div(x, t, 1).numpy(), s.numpy() / 4)
    assert ember.kl_div(x, t).shape == (2, 2)  # unreduced by default, as torch.kl_div
    with pytest.raises(TypeError):
        ember.kl_div(x, t, 2, True)  # log_target is keyword-only, as in torch.kl_div


def test_ctc_loss_not_twice_differentiable():
    """PyTorch's ctc_loss has no double backward: the gradient taken with ``create_graph``
    requires grad through a ``NotImplemented`` node that raises (ember's was silently a
    constant)."""
    rng = np.random.default_rng(0)
    lp = ember.tensor(rng.normal(size=(6, 2, 4))).log_softmax(-1).detach().requires_grad_()
    targets = ember.tensor([[1, 2, 2], [3, 1, 0]])
    for reduction in ("sum", "mean", "none"):
        loss = L.ctc_loss(lp, targets, [6, 5], [3, 2], reduction=reduction)
        g, = ember.autograd.grad(loss.sum(), lp, create_graph=True)
        assert g.requires_grad and type(g.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not "
                                               "implemented"):
            ember.autograd.grad(g.sum(), lp)
    loss = L.ctc_loss(lp, targets, [6, 5], [3, 2], reduction="sum")
    g1, = ember.autograd.grad(loss, lp)  # the values are those of a plain backward
    assert not g1.requires_grad
    np.testing.assert_allclose(g1.numpy(), g.detach().numpy())


def test_device_path(testdev):
    x = ember.tensor(X, requires_grad=True)
    xd = x.detach().to(testdev).requires_grad_()
    t = ember.tensor(IDX)
    out = L.cross_entropy(xd, t.to(testdev), label_smoothing=0.1)
    assert out.device == testdev
    out.backward()
    assert xd.grad.device == testdev
    L.cross_entropy(x, t, label_smoothing=0.1).backward()
    np.testing.assert_allclose(xd.grad.cpu().numpy(), to_numpy(x.grad))
    y = ember.tensor(Y).to(testdev)
    for fn in (L.mse_loss, L.binary_cross_entropy_with_logits, L.smooth_l1_loss):
        assert fn(xd, y).device == testdev
    lp = ctc_inputs().to(testdev)
    assert L.ctc_loss(lp, ember.tensor([[1, 2], [1, 1], [3, 3]]).to(testdev), [5, 5, 5],
                      [2, 2, 1]).device == testdev
    cpu_targets = L.ctc_loss(lp, ember.tensor([[1, 2], [1, 1], [3, 3]]), [5, 5, 5], [2, 2, 1])
    assert cpu_targets.device == testdev  # CPU targets and lengths are accepted, as in PyTorch
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        L.cross_entropy(xd, t)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        L.ctc_loss(lp.cpu(), ember.tensor([[1, 2]] * 3).to(testdev), [5] * 3, [2] * 3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        L.mse_loss(xd, ember.tensor(Y))


def test_l1_loss_of_integers_sums_as_pytorch_does_and_refuses_a_mean():
    F = ember.nn.functional
    a, b = ember.tensor([3, -1, 4]), ember.tensor([1, 1, 1])
    assert F.l1_loss(a, b, reduction="sum").item() == 7
    assert F.l1_loss(a, b, reduction="sum").dtype == ember.int64
    assert F.l1_loss(a, b, reduction="none").tolist() == [2, 2, 3]
    with pytest.raises(RuntimeError, match=r"^mean\(\): could not infer output dtype"):
        F.l1_loss(a, b)
