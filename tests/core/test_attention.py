"""scaled_dot_product_attention: non-square causal masks, fully masked rows, a float mask's
gradient, dropout, GQA, errors and devices. Its values against PyTorch (2-d to 4-d, bool and
float masks, causal, scale, GQA, float32) and gradchecks and gradgradchecks: the generic tests
over the op database (tests/ops/test_ops.py)."""

import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.attention import scaled_dot_product_attention as sdpa


def _rand(*shape, seed=0, requires_grad=False, dtype=np.float64):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(arr, requires_grad=requires_grad)


def _ref(q, k, v, bias=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if bias is not None:
        s = s + bias
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    tot = e.sum(-1, keepdims=True)
    w = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
    return w @ v


@pytest.mark.parametrize("L,S", [(5, 3), (3, 5)])  # (square: the generic tests)
def test_causal_is_top_left(L, S):
    q, k, v = _rand(2, L, 4), _rand(2, S, 4, seed=1), _rand(2, S, 4, seed=2)
    bias = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf)
    np.testing.assert_allclose(sdpa(q, k, v, is_causal=True).numpy(),
                               _ref(q.numpy(), k.numpy(), v.numpy(), bias), rtol=1e-12)


def test_fully_masked_rows_are_zero_with_zero_grads():
    q, k, v = (_rand(1, 3, 4, seed=i, requires_grad=True) for i in range(3))
    mask = np.ones((3, 3), bool)
    mask[1] = False
    out = sdpa(q, k, v, attn_mask=ember.tensor(mask))
    assert not np.isnan(out.detach().numpy()).any()
    np.testing.assert_array_equal(out.detach().numpy()[0, 1], 0.0)
    out.sum().backward()
    np.testing.assert_array_equal(q.grad.numpy()[0, 1], 0.0)
    assert np.isfinite(k.grad.numpy()).all()
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, attn_mask=ember.tensor(mask)), (q, k, v))


def test_gradcheck_float_mask_takes_gradient():
    q, k, v = (_rand(2, 3, 4, seed=i, requires_grad=True) for i in range(3))
    m = _rand(3, 3, seed=5, requires_grad=True)
    assert gradcheck(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), (q, k, v, m))


def test_dropout_uses_default_generator():
    q, k, v = _rand(2, 4, 4), _rand(2, 6, 4, seed=1), _rand(2, 6, 3, seed=2)
    ember.manual_seed(0)
    a = sdpa(q, k, v, dropout_p=0.5)
    ember.manual_seed(0)
    b = sdpa(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), sdpa(q, k, v).numpy())
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=1.0).numpy(), 0.0)
    # the kept weights are scaled by 1 / (1 - p): with v = ones every output row is
    # (kept weight mass) / (1 - p), a multiple of nothing smaller than 0 and at most 1 / (1 - p)
    ones = ember.ones(2, 6, 3, dtype=ember.float64)
    r = sdpa(q, k, ones, dropout_p=0.25).numpy()
    assert (r >= 0).all() and (r <= 1 / 0.75 + 1e-12).all()


def test_gqa():
    q, k, v = _rand(1, 4, 3, 2), _rand(1, 2, 5, 2, seed=1), _rand(1, 2, 5, 2, seed=2)
    out = sdpa(q, k, v, enable_gqa=True)
    kr, vr = np.repeat(k.numpy(), 2, axis=1), np.repeat(v.numpy(), 2, axis=1)
    np.testing.assert_allclose(out.numpy(), _ref(q.numpy(), kr, vr), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
        sdpa(q, _rand(1, 3, 5, 2), _rand(1, 3, 5, 2), enable_gqa=True)


def test_errors():
    q, k, v = _rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 6)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        sdpa(q, k, v, attn_mask=ember.ones(3, 5, dtype=ember.bool), is_causal=True)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 4\] but got: \[2, 3\]"):
        sdpa(q, _rand(2, 5, 3), v)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        sdpa(q, k, v, attn_mask=ember.ones(3, 5, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same "
                                           "dtype"):
        sdpa(q, k.float(), v)
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        sdpa(_rand(4), _rand(4), _rand(4))
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
        sdpa(q, k, v, dropout_p=1.5)


def test_device(testdev):
    q, k, v = (_rand(2, 3, 4, seed=i).to(testdev).requires_grad_() for i in range(3))
    out = sdpa(q, k, v, is_causal=True)
    assert out.device == testdev
    out.sum().backward()
    assert q.grad.device == testdev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        sdpa(q, _rand(2, 3, 4), v)


def test_dropout_backward_follows_the_mask():
    q, k, v = (_rand(2, 3, 4, seed=i, requires_grad=True) for i in range(3))
    sdpa(q, k, v, dropout_p=1.0).sum().backward()
    for t in (q, k, v):
        np.testing.assert_array_equal(t.grad.numpy(), 0.0)
    q.grad = None
    ember.manual_seed(1)
    sdpa(q, k, v, dropout_p=0.3).sum().backward()
    assert np.abs(q.grad.numpy()).sum() > 0


def test_registered_as_random():
    """scaled_dot_product_attention draws a dropout mask when dropout_p > 0."""
    from ember.ops.registry import OPS

    assert OPS["scaled_dot_product_attention"].random


# -- the array path: exp without the row maxima, its fallback, layouts --------------------------

def _attention_case(seed, L=5, S=6, E=4, scale=1.0):
    q, k, v = (_rand(2, 3, n, E, seed=seed + i) for i, n in enumerate((L, S, S)))
    return ember.tensor(q.numpy() * scale, requires_grad=True), k.requires_grad_(), \
        v.requires_grad_()


@pytest.mark.parametrize("case", ["overflow", "underflow"])
def test_scores_outside_the_exp_range_take_the_exact_path(case, monkeypatch):
    """Scores past 60 overflow the row sums of ``exp`` without the max subtracted, a row
    whose scores all lie below -100 underflows them: the kernel notices from the sums,
    computes the scores again and subtracts the maxima; values and gradients as the
    reference."""
    from ember.ops import attention

    calls = []
    scores = attention._scores
    monkeypatch.setattr(attention, "_scores", lambda *a: calls.append(1) or scores(*a))
    q, k, v = _attention_case(3, scale=40.0 if case == "overflow" else 1.0)
    bias = np.zeros((5, 6))
    if case == "underflow":
        bias[2] = -300.0
    out = sdpa(q, k, v, attn_mask=ember.tensor(bias))
    assert len(calls) == 2  # the plain exponential, then the exact one
    np.testing.assert_allclose(out.detach().numpy(), _ref(q.detach().numpy(), k.detach().numpy(),
                                                          v.detach().numpy(), bias), rtol=1e-10)
    assert np.isfinite(out.detach().numpy()).all()
    small = tuple(t.detach()[:1, :1].clone().requires_grad_() for t in (q, k, v))
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, attn_mask=ember.tensor(bias)), small)
    calls.clear()
    sdpa(*(t.detach() / 40.0 for t in (q, k, v)), attn_mask=ember.tensor(np.zeros((5, 6))))
    assert len(calls) == 1  # in range: one pass


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_float32_causal_scores_take_one_native_pass(causal, scale, monkeypatch):
    """float32 scores with the causal mask go through kernels.c's one pass (``_native_exp``:
    exp, the causal columns zeroed, row sums) with no mask added, unmasked ones through
    NumPy's exp and sums; scores past the plain exp's range (``scale`` 40) still take the
    exact path. Values and gradients as the float64 reference, L > S and L < S both (the
    causal mask is top-left aligned)."""
    from ember.ops import attention

    native = []
    real = attention._native_exp
    monkeypatch.setattr(attention, "_native_exp",
                        lambda e, c: native.append((c, e.dtype.name)) or real(e, c))
    for L, S in ((7, 5), (5, 9)):
        q = _rand(2, 3, L, 4, seed=11) * scale
        k, v = _rand(2, 3, S, 4, seed=12), _rand(2, 3, S, 4, seed=13)
        q32, k32, v32 = (t.float().requires_grad_() for t in (q, k, v))
        out = sdpa(q32, k32, v32, is_causal=causal)
        gy = _rand(*out.shape, seed=14).float()
        out.backward(gy)
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        mask = np.tril(np.ones((L, S), bool)) if causal else None
        ref = sdpa(q64, k64, v64, attn_mask=None if mask is None else ember.tensor(mask))
        ref.backward(gy.double())
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        for a, b in ((q32, q64), (k32, k64), (v32, v64)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4)
    from ember import _native

    if _native.kernel("ember_attention_exp_f32") is not None:  # causal only: no gain else
        assert [c for c, dtype in native if dtype == "float32"] == [True] * 2 * causal


def test_float_mask_with_a_fully_masked_row():
    q, k, v = (_rand(2, 3, 4, seed=i, requires_grad=True) for i in range(3))
    bias = np.zeros((3, 3))
    bias[1] = -np.inf
    bias[0, 2] = -np.inf
    out = sdpa(q, k, v, attn_mask=ember.tensor(bias))
    np.testing.assert_array_equal(out.detach().numpy()[:, 1], 0.0)
    np.testing.assert_allclose(out.detach().numpy(), _ref(q.detach().numpy(), k.detach().numpy(),
                                                          v.detach().numpy(), bias), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_array_equal(q.grad.numpy()[:, 1], 0.0)


def test_grad_fn_is_one_node_named_as_pytorch():
    q, k, v = (_rand(2, 2, 3, 4, seed=i, requires_grad=True) for i in range(3))
    out = sdpa(q, k, v, is_causal=True)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert [f[0].name() for f in out.grad_fn.next_functions[:3]] == ["AccumulateGrad"] * 3


def test_output_in_the_query_layout():
    """As PyTorch's CPU kernel: heads split from an (N, L, H*E) array give an output whose
    heads merge without a copy; a contiguous query gives a contiguous output."""
    x = _rand(2, 5, 3 * 2 * 4, seed=1, dtype=np.float32)
    q, k, v = (t.view(2, 5, 2, 4).transpose(1, 2) for t in x.split(8, dim=2))
    out = sdpa(q, k, v, is_causal=True)
    assert out.transpose(1, 2).is_contiguous() and not out.is_contiguous()
    assert sdpa(q.contiguous(), k, v).is_contiguous()
    want = _ref(q.numpy(), k.numpy(), v.numpy(),
                np.where(np.tril(np.ones((5, 5), bool)), 0.0, -np.inf))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def test_gradients_through_split_heads_match_the_reference():
    x = _rand(2, 5, 3 * 2 * 4, seed=2, requires_grad=True)

    def f(x):
        q, k, v = (t.view(2, 5, 2, 4).transpose(1, 2) for t in x.split(8, dim=2))
        return sdpa(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 5, 8)

    assert gradcheck(f, (x,))


def test_causal_mask_cache_is_reused_not_written():
    for seed in range(3):
        q, k, v = _rand(2, 4, 3, seed=seed), _rand(2, 6, 3, seed=seed + 5), _rand(2, 6, 2)
        bias = np.where(np.tril(np.ones((4, 6), bool)), 0.0, -np.inf)
        np.testing.assert_allclose(sdpa(q, k, v, is_causal=True).numpy(),
                                   _ref(q.numpy(), k.numpy(), v.numpy(), bias), rtol=1e-12)


def test_backward_twice_with_retain_graph():
    q, k, v = (_rand(2, 3, 4, seed=i, requires_grad=True) for i in range(3))
    mask = ember.tensor(np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1]], bool))
    out = sdpa(q, k, v, attn_mask=mask, dropout_p=0.0)
    out.sum().backward(retain_graph=True)
    first = [t.grad.numpy().copy() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out.sum().backward()
    for t, g in zip((q, k, v), first):
        np.testing.assert_array_equal(t.grad.numpy(), g)


def test_double_backward_through_the_node():
    q, k, v = (_rand(1, 3, 4, seed=i, requires_grad=True) for i in range(3))
    (gq,) = ember.autograd.grad(sdpa(q, k, v, is_causal=True).pow(2).sum(), (q,),
                                create_graph=True)
    assert gq.requires_grad
    assert gradgradcheck(lambda q, k, v: sdpa(q, k, v, is_causal=True), (q, k, v))


def test_float16_computes_as_before():
    q, k, v = (_rand(2, 3, 4, seed=i, dtype=np.float16) for i in range(3))
    out = sdpa(q, k, v)
    assert out.dtype == ember.float16
    want = _ref(*(t.numpy().astype(np.float64) for t in (q, k, v)))
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_low_precision_is_computed_in_float32_and_rounded_once(dtype, causal):
    """float16/bfloat16 run the array kernels in float32 with one rounding of the output and
    of each gradient, as PyTorch's CPU kernels do (its math path upcasts half types)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((2, 3, 8, 16)).astype(np.float32) for _ in range(3)]
    mask = rng.random((8, 8)) > 0.2 if not causal else None
    ours = [ember.tensor(a).to(getattr(ember, dtype)).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a).to(getattr(torch, dtype)).requires_grad_() for a in arrays]
    out = ember.nn.functional.scaled_dot_product_attention(
        *ours, attn_mask=None if mask is None else ember.tensor(mask), is_causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *theirs, attn_mask=None if mask is None else torch.tensor(mask), is_causal=causal)
    assert out.dtype is getattr(ember, dtype)
    g = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(ember.tensor(g).to(out.dtype))
    ref.backward(torch.tensor(g).to(ref.dtype))
    ulp = 2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10
    for a, b in [(out, ref)] + [(x.grad, y.grad) for x, y in zip(ours, theirs)]:
        a = a.detach().float().numpy()
        b = b.detach().float().numpy()
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2 * ulp, atol=2 * ulp * np.abs(b).max())


@pytest.mark.parametrize("L,S", [(70, 45), (45, 100), (64, 64)])
@pytest.mark.parametrize("case", ["plain", "dropout", "broadcast key", "3-d", "GPT's views"])
def test_causal_blocks_match_the_whole_products(L, S, case, monkeypatch):
    """Causal float32 attention past ``_CAUSAL_ROWS`` rows runs its products by blocks, each
    reading only the keys its rows see, and its score gradient in one native pass: the
    output and every gradient as the whole products give (the blocks off), also with
    dropout (the same draws), a key and value broadcast over the batch, 3-d inputs, and
    GPT's heads-transposed views with a gradient in that layout (once mis-read)."""
    from ember.ops import attention

    q = _rand(2, 3, L, 8, seed=21).float()
    k, v = _rand(2, 3, S, 8, seed=22).float(), _rand(2, 3, S, 8, seed=23).float()
    if case == "broadcast key":
        k, v = k[:1], v[:1]
    elif case == "3-d":
        q, k, v = (t.reshape(6, -1, 8) for t in (q, k, v))
    elif case == "GPT's views":
        q, k, v = (ember.tensor(t.numpy().transpose(0, 2, 1, 3).copy()).transpose(1, 2)
                   for t in (q, k, v))
    p = 0.3 if case == "dropout" else 0.0
    gy = _rand(*q.shape[:-1], 8, seed=24).float()
    if case == "GPT's views":
        gy = ember.tensor(gy.numpy().transpose(0, 2, 1, 3).copy()).transpose(1, 2)

    def run():
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        ember.manual_seed(5)
        out = sdpa(*leaves, is_causal=True, dropout_p=p)
        out.backward(gy)
        return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]

    blocked = run()
    monkeypatch.setattr(attention, "_CAUSAL_ROWS", 1 << 30)
    whole = run()
    for a, b in zip(blocked, whole):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    if L > S:  # queries past the last key see every key; keys past no query: zero gradient
        assert np.abs(blocked[2]).sum() > 0
    else:
        assert np.all(blocked[2][..., L:, :] == 0) and np.all(blocked[3][..., L:, :] == 0)
