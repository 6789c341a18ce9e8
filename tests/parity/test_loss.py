"""Loss kernels against torch.nn.functional: values, gradients, dtypes, errors."""

import warnings

import numpy as np
import pytest

import ember
from ember.ops import loss as L

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(1)
REDUCTIONS = ["mean", "sum", "none"]


def both(a, grad=None):
    """The same array as an ember and a torch tensor (float arrays require grad by default)."""
    a = np.asarray(a)
    grad = a.dtype.kind == "f" if grad is None else grad
    return (ember.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad))


def check(name, args, rtol=1e-7, atol=1e-9, **kwargs):
    """Run ``name`` on both sides; compare values, dtypes, shapes and every input's grad."""
    ours = [a[0] if isinstance(a, tuple) else a for a in args]
    theirs = [a[1] if isinstance(a, tuple) else a for a in args]
    kw_e = {k: v[0] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    kw_t = {k: v[1] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = getattr(L, name)(*ours, **kw_e)
        t = getattr(F, name)(*theirs, **kw_t)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    g = RNG.standard_normal(tuple(t.shape))
    e.backward(ember.tensor(g, dtype=e.dtype))
    t.backward(torch.tensor(g, dtype=t.dtype))
    leaves = [(a, b) for a, b in zip(ours + list(kw_e.values()), theirs + list(kw_t.values()))
              if isinstance(b, torch.Tensor) and b.requires_grad]
    for a, b in leaves:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices(reduction, smoothing, weighted):
    x = RNG.standard_normal((6, 5))
    t = RNG.integers(0, 5, 6)
    t[2] = 3
    weight = both(RNG.uniform(0.3, 2, 5), False) if weighted else None
    check("cross_entropy", [both(x), both(t)], weight=weight, reduction=reduction,
          label_smoothing=smoothing, ignore_index=3)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probabilities_k_dim_and_unbatched(reduction, weighted):
    weight = both(RNG.uniform(0.3, 2, 4), False) if weighted else None
    p = RNG.dirichlet(np.ones(4), (3, 2)).transpose(0, 2, 1).copy()
    check("cross_entropy", [both(RNG.standard_normal((3, 4, 2))), both(p)], weight=weight,
          reduction=reduction, label_smoothing=0.2)
    t = RNG.integers(0, 4, (3, 2, 2))
    check("cross_entropy", [both(RNG.standard_normal((3, 4, 2, 2))), both(t)], weight=weight,
          reduction=reduction, label_smoothing=0.1)
    check("cross_entropy", [both(RNG.standard_normal(4)), both(np.array(2))], weight=weight,
          reduction=reduction)


def test_cross_entropy_float32():
    x = RNG.standard_normal((8, 10)).astype(np.float32) * 10
    check("cross_entropy", [both(x), both(RNG.integers(0, 10, 8))], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    t = np.array([0, 4, -100, 2])
    check("nll_loss", [both(RNG.standard_normal((4, 5))), both(t)], reduction=reduction)
    check("nll_loss", [both(RNG.standard_normal((4, 5))), both(t)], reduction=reduction,
          weight=both(RNG.uniform(0.3, 2, 5), False))
    check("nll_loss", [both(RNG.standard_normal((2, 5, 3))), both(RNG.integers(0, 5, (2, 3)))],
          reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    w = RNG.uniform(0.1, 1, (3, 4))
    for name in ("mse_loss", "l1_loss", "huber_loss"):
        check(name, [both(x), both(y)], reduction=reduction)
        check(name, [both(x), both(y)], reduction=reduction, weight=both(w, False))
    check("smooth_l1_loss", [both(x), both(y)], reduction=reduction, beta=0.5)
    check("smooth_l1_loss", [both(x), both(y)], reduction=reduction, beta=0.0)
    check("huber_loss", [both(x), both(y)], reduction=reduction, delta=0.4)
    check("mse_loss", [both(x[:, :1]), both(y[0])], reduction=reduction)  # broadcast (warned)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_probabilistic_losses(reduction):
    x = RNG.standard_normal((3, 4))
    p, q = RNG.uniform(0.05, 0.95, (3, 4)), RNG.uniform(0.05, 0.95, (3, 4))
    w = both(RNG.uniform(0.1, 1, (3, 4)), False)
    check("binary_cross_entropy", [both(p), both(q)], reduction=reduction, weight=w)
    check("binary_cross_entropy_with_logits", [both(x * 20), both(q)], reduction=reduction,
          weight=w, pos_weight=both(RNG.uniform(0.5, 3, 4), False))
    for log_target in (False, True):
        check("kl_div", [both(x), both(np.log(q) if log_target else q)], reduction=reduction,
              log_target=log_target)
    check("poisson_nll_loss", [both(x), both(q * 5)], reduction=reduction, full=True)
    check("poisson_nll_loss", [both(p), both(q * 5)], reduction=reduction, log_input=False,
          full=True)
    check("gaussian_nll_loss", [both(x), both(q), both(p)], reduction=reduction, full=True)
    check("gaussian_nll_loss", [both(x), both(q), both(p[:, 0])], reduction=reduction)
    check("multilabel_soft_margin_loss", [both(x), both(q)], reduction=reduction,
          weight=both(RNG.uniform(0.1, 1, 4), False))
    check("kl_div", [both(x), both(q)], reduction="batchmean")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(reduction):
    a, b, c = (RNG.standard_normal((5, 3)) for _ in range(3))
    s = np.where(RNG.standard_normal(5) > 0, 1.0, -1.0)
    signs = np.where(RNG.standard_normal((5, 3)) > 0, 1.0, -1.0)
    check("margin_ranking_loss", [both(a[:, 0]), both(b[:, 0]), both(s, False)], margin=0.2,
          reduction=reduction)
    check("hinge_embedding_loss", [both(a), both(signs, False)], margin=0.7, reduction=reduction)
    check("cosine_embedding_loss", [both(a), both(b), both(s, False)], margin=0.1,
          reduction=reduction)
    check("soft_margin_loss", [both(a), both(signs, False)], reduction=reduction)
    for p, swap in ((2, False), (1, True), (3, True)):
        check("triplet_margin_loss", [both(a), both(b), both(c)], p=p, swap=swap, margin=0.5,
              reduction=reduction)
    t = RNG.integers(0, 3, 5)
    for p in (1, 2):
        check("multi_margin_loss", [both(a), both(t)], p=p, margin=0.7, reduction=reduction,
              weight=both(RNG.uniform(0.3, 2, 3), False))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_through_log_softmax(reduction, zero_infinity):
    """ember's ctc gradient is d loss / d log_probs; PyTorch's differs from it by
    exp(log_probs), which cancels through log_softmax: compare there."""
    T, N, C = 8, 4, 5
    logits = RNG.standard_normal((T, N, C))
    targets = RNG.integers(1, C, (N, 4))
    targets[3] = [2, 2, 2, 2]  # needs 7 frames, gets 3: infinite loss
    il, tl = np.array([8, 7, 5, 3]), np.array([4, 2, 1, 4])
    el, tlg = both(logits)
    e = L.ctc_loss(el.log_softmax(2), ember.tensor(targets), ember.tensor(il),
                   ember.tensor(tl), reduction=reduction, zero_infinity=zero_infinity)
    t = F.ctc_loss(tlg.log_softmax(2), torch.tensor(targets), torch.tensor(il),
                   torch.tensor(tl), reduction=reduction, zero_infinity=zero_infinity)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-7)
    if zero_infinity or reduction == "none":
        g = np.ones(tuple(t.shape)) if zero_infinity else np.array([1.0, 0.5, 2.0, 3.0])
        e.backward(ember.tensor(g))
        t.backward(torch.tensor(g))
        np.testing.assert_allclose(el.grad.numpy(), tlg.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_ctc_loss_concatenated_targets_float32():
    logits = RNG.standard_normal((6, 2, 4)).astype(np.float32)
    flat, il, tl = np.array([1, 2, 3, 3, 1]), [6, 5], [3, 2]
    el, tlg = both(logits)
    e = L.ctc_loss(el.log_softmax(2), ember.tensor(flat), il, tl)
    t = F.ctc_loss(tlg.log_softmax(2), torch.tensor(flat), torch.tensor(il), torch.tensor(tl))
    assert e.dtype == ember.float32
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-5)
    e.backward()
    t.backward()
    np.testing.assert_allclose(el.grad.numpy(), tlg.grad.numpy(), rtol=1e-4, atol=1e-6)


ERROR_CASES = [
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.tensor([1, 2, 3, 4])), {})),
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.tensor([1, 2, 5])), {})),
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.tensor([1, 2, 3], dtype=m.int32)), {})),
    ("cross_entropy", lambda m: ((m.zeros(2, 5, 4), m.zeros(2, 3, dtype=m.int64)), {})),
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.zeros(3, 5)), {"ignore_index": 1})),
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.tensor([1, 2, 3])), {"reduction": "x"})),
    ("cross_entropy", lambda m: ((m.zeros(3, 5), m.tensor([1, 2, 3])),
                                 {"weight": m.ones(4)})),
    ("nll_loss", lambda m: ((m.zeros(3, 5), m.zeros(3, 2, dtype=m.int64)), {})),
    ("binary_cross_entropy", lambda m: ((m.ones(3) / 2, m.ones(3, 1)), {})),
    ("binary_cross_entropy", lambda m: ((m.ones(3) * 2, m.ones(3)), {})),
    ("binary_cross_entropy_with_logits", lambda m: ((m.ones(3), m.ones(3, 1)), {})),
    ("margin_ranking_loss", lambda m: ((m.ones(3), m.ones(3, 1), m.ones(3)), {})),
    ("mse_loss", lambda m: ((m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64)), {})),
    ("kl_div", lambda m: ((m.ones(3), m.ones(3)), {"reduction": "bad"})),
    ("smooth_l1_loss", lambda m: ((m.ones(3), m.ones(3)), {"beta": -1.0})),
]


@pytest.mark.parametrize("name,make", ERROR_CASES)
def test_errors_match(name, make):
    args_t, kw_t = make(torch)
    with pytest.raises(Exception) as theirs:
        getattr(F, name)(*args_t, **kw_t)
    args_e, kw_e = make(ember)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(L, name)(*args_e, **kw_e)
    assert str(ours.value).replace("ember", "torch") == str(theirs.value)


def test_mse_size_warning_matches():
    with pytest.warns(UserWarning) as theirs:
        F.mse_loss(torch.zeros(3, 1), torch.zeros(3))
    with pytest.warns(UserWarning) as ours:
        L.mse_loss(ember.zeros(3, 1), ember.zeros(3))
    assert str(ours[0].message).replace("ember", "torch") == str(theirs[0].message)


@pytest.mark.parametrize("classes", [512, 2000])
def test_cross_entropy_float32_language_model_shape(classes):
    """A language model's loss (ignore_index -1 on some targets): the fused log-softmax and
    nll_loss give PyTorch's loss within 2e-7 and the logits' gradient within 5e-7 of its
    largest entry (a few float32 ulps: NumPy's SIMD exp and PyTorch's differ by machine; on an
    AMD EPYC (AVX2) one entry of 131072 was 4 ulps off), through NllLossBackward0 over
    LogSoftmaxBackward0."""
    rng = np.random.default_rng(4)
    (ex, tx) = both((rng.standard_normal((256, classes)) * 2).astype(np.float32))
    target = rng.integers(0, classes, 256)
    target[::9] = -1
    el = L.cross_entropy(ex, ember.tensor(target), ignore_index=-1)
    tl = F.cross_entropy(tx, torch.tensor(target), ignore_index=-1)
    assert [el.grad_fn.name(), el.grad_fn.next_functions[0][0].name()] == \
        [tl.grad_fn.name(), tl.grad_fn.next_functions[0][0].name()]
    assert abs(el.item() - tl.item()) <= 2e-7 * abs(tl.item())
    el.backward()
    tl.backward()
    g = tx.grad.numpy()
    np.testing.assert_allclose(ex.grad.numpy(), g, rtol=0, atol=5e-7 * np.abs(g).max())
