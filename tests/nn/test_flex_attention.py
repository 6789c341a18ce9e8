"""ember.nn.attention.flex_attention (flex_attention, create_block_mask, BlockMask, ...) against
PyTorch's torch.nn.attention.flex_attention (its eager CPU path) and, for gradients (PyTorch's
CPU flex_attention has no backward), against PyTorch's eager math reference ``math_attention``
under torch's autograd."""

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember.nn.attention import flex_attention as EF

torch = pytest.importorskip("torch")
import torch.nn.attention.flex_attention as TF  # noqa: E402
from torch._higher_order_ops.flex_attention import math_attention as torch_math  # noqa: E402

F32 = dict(rtol=1e-5, atol=1e-5)
F64 = dict(rtol=1e-10, atol=1e-10)


def _dev():
    """Ember's default device (the strict test device under EMBER_TEST_DEVICE=strict)."""
    return ember.get_default_device()


def _np(t):
    return t.detach().numpy()


def _arrays(seed=0, B=2, Hq=2, Hkv=None, L=10, S=12, E=4, Ev=3, dtype=np.float32):
    rng = np.random.default_rng(seed)
    Hkv = Hq if Hkv is None else Hkv
    return [rng.standard_normal(s).astype(dtype)
            for s in ((B, Hq, L, E), (B, Hkv, S, E), (B, Hkv, S, Ev))]


def _ember(*arrays, requires_grad=False):
    return [ember.tensor(a, requires_grad=requires_grad) for a in arrays]


def _torch(*arrays, requires_grad=False):
    return [torch.tensor(a, requires_grad=requires_grad) for a in arrays]


def _torch_flex(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TF.flex_attention(*args, **kwargs)


def _both_flex(arrays, mods=None, mask_fn=None, mask_args=(None, None), block=4, tol=F32,
               **kwargs):
    """Run flex_attention in both frameworks; ``mods(lib)`` builds (score_mod, mask_mod)
    with that framework's tensors. Returns (ember out, torch out) after comparing them."""
    eq, ek, ev = _ember(*arrays)
    tq, tk, tv = _torch(*arrays)
    outs = []
    for lib, mod, (q, k, v) in ((ember, EF, (eq, ek, ev)), (torch, TF, (tq, tk, tv))):
        score_mod, mask_mod = mods(lib) if mods is not None else (None, None)
        bm = None
        if mask_mod is not None:
            bm = mod.create_block_mask(mask_mod, *mask_args, q.shape[-2], k.shape[-2],
                                       device=q.device, BLOCK_SIZE=block)
        run = _torch_flex if lib is torch else EF.flex_attention
        outs.append(run(q, k, v, score_mod=score_mod, block_mask=bm, **kwargs))
    np.testing.assert_allclose(_np(outs[0]), _np(outs[1]), **tol)
    return outs


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


# -- forward parity -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_mods_matches_torch_and_sdpa(dtype):
    arrays = _arrays(dtype=dtype)
    out, _ = _both_flex(arrays, tol=F32 if dtype == np.float32 else F64)
    assert out.dtype == (ember.float32 if dtype == np.float32 else ember.float64)
    assert out.shape == (2, 2, 10, 3)
    sdpa = ember.nn.functional.scaled_dot_product_attention(*_ember(*arrays))
    np.testing.assert_allclose(_np(out), _np(sdpa), rtol=1e-5, atol=1e-6)


def test_scale_matches_torch():
    _both_flex(_arrays(seed=1), scale=0.3)


@pytest.mark.parametrize("block", [4, (2, 8), 128])
def test_causal_block_mask_matches_torch(block):
    _both_flex(_arrays(seed=2), mods=lambda lib: (None, _causal), block=block)


def test_sliding_window_matches_torch():
    def mods(lib):
        def window(b, h, q_idx, kv_idx):
            return q_idx - kv_idx <= 3
        return None, lib.nn.attention.flex_attention.and_masks(_causal, window)
    _both_flex(_arrays(seed=3, L=16, S=16), mods=mods)


def test_prefix_lm_matches_torch():
    def mods(lib):
        def prefix(b, h, q_idx, kv_idx):
            return kv_idx < 5
        return None, lib.nn.attention.flex_attention.or_masks(_causal, prefix)
    _both_flex(_arrays(seed=4, L=12, S=12), mods=mods)


def test_document_mask_from_captured_tensor_matches_torch():
    doc = [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3]

    def mods(lib):
        document_id = lib.tensor(doc)

        def document_causal(b, h, q_idx, kv_idx):
            return (document_id[q_idx] == document_id[kv_idx]) & (q_idx >= kv_idx)
        return None, document_causal
    _both_flex(_arrays(seed=5, L=12, S=12), mods=mods, mask_args=(2, 2))


def test_alibi_score_mod_matches_torch():
    def mods(lib):
        slopes = lib.exp2(-lib.arange(1, 3, dtype=lib.float32))

        def alibi(score, b, h, q_idx, kv_idx):
            return score + slopes[h] * (kv_idx - q_idx)
        return alibi, _causal
    _both_flex(_arrays(seed=6, L=12, S=12), mods=mods)


def test_relative_position_score_mod_matches_torch():
    def mods(lib):
        def relative(score, b, h, q_idx, kv_idx):
            return score + (q_idx - kv_idx)
        return relative, None
    _both_flex(_arrays(seed=7), mods=mods)


def test_soft_capping_matches_torch():
    def mods(lib):
        def soft_cap(score, b, h, q_idx, kv_idx):
            return 0.5 * lib.tanh(score / 0.5)
        return soft_cap, None
    _both_flex(_arrays(seed=8), mods=mods)


def test_bias_tensor_score_mod_matches_torch():
    bias = np.random.default_rng(9).standard_normal((2, 2, 10, 12)).astype(np.float32)

    def mods(lib):
        b_t = lib.tensor(bias)

        def add_bias(score, b, h, q_idx, kv_idx):
            return score + b_t[b, h, q_idx, kv_idx]
        return add_bias, None
    _both_flex(_arrays(seed=9), mods=mods)


def test_head_and_batch_dependent_mask_matches_torch():
    def mods(lib):
        def mask(b, h, q_idx, kv_idx):
            return (kv_idx + h + 2 * b) % 3 != 0
        return None, mask
    e, _ = _both_flex(_arrays(seed=10), mods=mods, mask_args=(2, 2))
    assert e.shape == (2, 2, 10, 3)


def test_where_score_mod_matches_torch():
    def mods(lib):
        def causal_score(score, b, h, q_idx, kv_idx):
            return lib.where(q_idx >= kv_idx, score, -float("inf"))
        return causal_score, None
    _both_flex(_arrays(seed=11, L=8, S=8), mods=mods)


def test_gqa_matches_torch():
    def mods(lib):
        def head_bias(score, b, h, q_idx, kv_idx):
            return score + (h + 1) * kv_idx * 0.25  # h is the query head
        return head_bias, _causal
    arrays = _arrays(seed=12, Hq=4, Hkv=2, L=8, S=8)
    e, _ = _both_flex(arrays, mods=mods, enable_gqa=True)
    assert e.shape == (2, 4, 8, 3)
    with pytest.raises(ValueError, match="Try setting enable_gqa=True for GQA"):
        EF.flex_attention(*_ember(*arrays))


def test_batch_broadcast_kv_with_block_mask_matches_torch():
    rng = np.random.default_rng(13)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((3, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 3))]
    _both_flex(arrays, mods=lambda lib: (None, _causal), mask_args=(3, None))


def test_none_batch_and_heads_broadcast():
    bm_none = EF.create_block_mask(_causal, None, None, 10, 12, device=_dev(), BLOCK_SIZE=4)
    bm_full = EF.create_block_mask(_causal, 2, 3, 10, 12, device=_dev(), BLOCK_SIZE=4)
    t_none = TF.create_block_mask(_causal, None, None, 10, 12, device="cpu", BLOCK_SIZE=4)
    assert bm_none.kv_num_blocks.shape == t_none.kv_num_blocks.shape == (1, 1, 3)
    assert bm_full.kv_indices.shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(_np(bm_full.to_dense()),
                                  np.broadcast_to(_np(bm_none.to_dense()), (2, 3, 3, 3)))
    q, k, v = _ember(*_arrays(seed=14, Hq=3))
    np.testing.assert_allclose(_np(EF.flex_attention(q, k, v, block_mask=bm_none)),
                               _np(EF.flex_attention(q, k, v, block_mask=bm_full)), rtol=0,
                               atol=0)


def test_mod_needing_vmap_falls_back_and_matches_torch():
    def mods(lib):
        def scalar_only(score, b, h, q_idx, kv_idx):
            return score.reshape(1)[0] * 2  # only a 0-d score reshapes to (1,)
        return scalar_only, None
    _both_flex(_arrays(seed=15, B=1, Hq=1, L=3, S=4), mods=mods)


def test_control_flow_mod_raises_vmaps_error():
    def branchy(score, b, h, q_idx, kv_idx):
        if q_idx >= kv_idx:
            return score
        return score - 1

    q, k, v = _ember(*_arrays(B=1, Hq=1, L=2, S=2))
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        EF.flex_attention(q, k, v, score_mod=branchy)


# -- lse, aux outputs, fully masked rows ----------------------------------------------------------

def _torch_reference(arrays, score_mod=None, mask_mod=None, scale=None, requires_grad=False):
    tq, tk, tv = _torch(*arrays, requires_grad=requires_grad)
    bm = TF.create_block_mask(mask_mod or TF.noop_mask, None, None, tq.shape[-2], tk.shape[-2],
                              device="cpu")
    scale = 1 / math.sqrt(tq.shape[-1]) if scale is None else scale
    out, lse2, max2 = torch_math(tq, tk, tv, score_mod or TF._identity, bm.as_tuple(), scale,
                                 {})
    return (tq, tk, tv), out, lse2 * math.log(2), max2 * math.log(2)


def test_return_lse_warns_and_matches_torch():
    arrays = _arrays(seed=16)
    eq, ek, ev = _ember(*arrays)
    bm = EF.create_block_mask(_causal, None, None, 10, 12, device=eq.device)
    EF._WARNINGS_SHOWN.discard("deprecated_return_lse")
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        out, lse = EF.flex_attention(eq, ek, ev, block_mask=bm, return_lse=True)
    tbm = TF.create_block_mask(_causal, None, None, 10, 12, device="cpu")
    tout, tlse = _torch_flex(*_torch(*arrays), block_mask=tbm, return_lse=True)
    assert lse.shape == tlse.shape == (2, 2, 10) and lse.dtype == ember.float32
    np.testing.assert_allclose(_np(out), _np(tout), **F32)
    np.testing.assert_allclose(_np(lse), _np(tlse), **F32)


def test_return_aux_matches_torch_reference():
    arrays = _arrays(seed=17)
    eq, ek, ev = _ember(*arrays)
    out, aux = EF.flex_attention(eq, ek, ev, return_aux=EF.AuxRequest(lse=True, max_scores=True))
    assert isinstance(aux, EF.AuxOutput)
    _, tout, tlse, tmax = _torch_reference(arrays)
    np.testing.assert_allclose(_np(out), _np(tout), **F32)
    np.testing.assert_allclose(_np(aux.lse), _np(tlse), **F32)
    np.testing.assert_allclose(_np(aux.max_scores), _np(tmax), **F32)
    _, aux = EF.flex_attention(eq, ek, ev, return_aux=EF.AuxRequest(lse=True))
    assert aux.max_scores is None and aux.lse is not None
    t_out, t_aux = _torch_flex(*_torch(*arrays), return_aux=TF.AuxRequest(lse=True))
    np.testing.assert_allclose(_np(aux.lse), _np(t_aux.lse), **F32)
    msg = "Cannot specify both return_lse and return_aux"
    with pytest.raises(ValueError, match=msg):
        EF.flex_attention(eq, ek, ev, return_lse=True, return_aux=EF.AuxRequest(lse=True))
    with pytest.raises(ValueError, match=msg):
        _torch_flex(*_torch(*arrays), return_lse=True, return_aux=TF.AuxRequest(lse=True))


def _rows_masked(b, h, q_idx, kv_idx):
    return (q_idx >= 3) & (kv_idx <= q_idx)


def test_fully_masked_rows_give_zero_and_neg_inf_lse_like_torch():
    arrays = _arrays(seed=18, L=8, S=8)
    eq, ek, ev = _ember(*arrays)
    bm = EF.create_block_mask(_rows_masked, None, None, 8, 8, device=eq.device, BLOCK_SIZE=2)
    out, aux = EF.flex_attention(eq, ek, ev, block_mask=bm, return_aux=EF.AuxRequest(lse=True))
    tbm = TF.create_block_mask(_rows_masked, None, None, 8, 8, device="cpu", BLOCK_SIZE=2)
    tout, taux = _torch_flex(*_torch(*arrays), block_mask=tbm,
                             return_aux=TF.AuxRequest(lse=True))
    assert np.all(_np(out)[:, :, :3] == 0)
    assert np.all(np.isneginf(_np(aux.lse)[:, :, :3]))
    np.testing.assert_allclose(_np(out), _np(tout), **F32)
    np.testing.assert_array_equal(np.isneginf(_np(aux.lse)), np.isneginf(_np(taux.lse)))
    finite = np.isfinite(_np(taux.lse))
    np.testing.assert_allclose(_np(aux.lse)[finite], _np(taux.lse)[finite], **F32)


# -- gradients ----------------------------------------------------------------------------------

def test_gradients_match_torch_reference():
    arrays = _arrays(seed=19, L=8, S=8)
    bias = np.random.default_rng(20).standard_normal((2, 2, 8, 8)).astype(np.float32)
    grad_out = np.random.default_rng(21).standard_normal((2, 2, 8, 3)).astype(np.float32)

    def make_score_mod(b_t):
        def score_mod(score, b, h, q_idx, kv_idx):
            return score + b_t[b, h, q_idx, kv_idx]
        return score_mod

    e_bias = ember.tensor(bias, requires_grad=True)
    eq, ek, ev = _ember(*arrays, requires_grad=True)
    bm = EF.create_block_mask(_rows_masked, None, None, 8, 8, device=eq.device, BLOCK_SIZE=2)
    out, aux = EF.flex_attention(eq, ek, ev, score_mod=make_score_mod(e_bias), block_mask=bm,
                                 return_aux=EF.AuxRequest(lse=True))
    lse_finite = ember.where(ember.isfinite(aux.lse), aux.lse, 0.0)
    ((out * ember.tensor(grad_out)).sum() + lse_finite.sum()).backward()

    t_bias = torch.tensor(bias, requires_grad=True)
    (tq, tk, tv), tout, tlse, _ = _torch_reference(arrays, make_score_mod(t_bias), _rows_masked,
                                                   requires_grad=True)
    t_lse_finite = torch.where(torch.isfinite(tlse), tlse, 0.0)
    ((tout * torch.tensor(grad_out)).sum() + t_lse_finite.sum()).backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv), (e_bias, t_bias)):
        assert np.all(np.isfinite(_np(e.grad)))
        np.testing.assert_allclose(_np(e.grad), _np(t.grad), rtol=1e-4, atol=1e-5)


def test_gqa_gradients_match_torch_reference():
    arrays = _arrays(seed=22, Hq=4, Hkv=2, L=6, S=6)
    eq, ek, ev = _ember(*arrays, requires_grad=True)
    EF.flex_attention(eq, ek, ev, enable_gqa=True).square().sum().backward()
    (tq, tk, tv), tout, _, _ = _torch_reference(arrays, requires_grad=True)
    tout.square().sum().backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        np.testing.assert_allclose(_np(e.grad), _np(t.grad), rtol=1e-4, atol=1e-5)


def test_gradcheck_float64():
    rng = np.random.default_rng(23)
    q, k, v = _ember(*_arrays(seed=23, B=1, Hq=2, L=4, S=5, E=3, Ev=2, dtype=np.float64),
                     requires_grad=True)
    bias = ember.tensor(rng.standard_normal((2, 4, 5)), requires_grad=True)

    def score_mod(score, b, h, q_idx, kv_idx):
        return 2 * ember.tanh(score / 2) + bias[h, q_idx, kv_idx]

    def window(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= 2

    bm = EF.create_block_mask(window, None, None, 4, 5, device=q.device, BLOCK_SIZE=2)

    def fn(q, k, v, bias_):
        def mod(score, b, h, q_idx, kv_idx):
            return 2 * ember.tanh(score / 2) + bias_[h, q_idx, kv_idx]
        out, aux = EF.flex_attention(q, k, v, score_mod=mod, block_mask=bm,
                                     return_aux=EF.AuxRequest(lse=True))
        return out, aux.lse

    assert ember.autograd.gradcheck(fn, (q, k, v, bias))
    assert ember.autograd.gradgradcheck(fn, (q, k, v, bias))


# -- BlockMask ------------------------------------------------------------------------------------

def _sliding(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx <= 5) & (q_idx >= kv_idx) | (kv_idx < 2)


def _assert_block_masks_equal(e, t):
    for attr in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        ea, ta = getattr(e, attr), getattr(t, attr)
        assert (ea is None) == (ta is None), attr
        if ea is not None:
            assert ea.dtype == ember.int32 and ea.shape == ta.shape, attr
            np.testing.assert_array_equal(_np(ea), _np(ta), err_msg=attr)
    assert e.shape == t.shape and e.BLOCK_SIZE == t.BLOCK_SIZE
    assert e.seq_lengths == t.seq_lengths


@pytest.mark.parametrize("B,H,L,S,block,separate", [
    (None, None, 20, 20, 4, True), (2, 3, 17, 23, 4, True), (1, 2, 20, 12, (4, 2), False),
    (None, 2, 9, 9, 128, True)])
def test_block_mask_structure_matches_torch(B, H, L, S, block, separate):
    def mask(b, h, q_idx, kv_idx):
        return _sliding(b, h, q_idx, kv_idx) & ((h + b) % 2 == 0) | (q_idx == 3)

    e = EF.create_block_mask(mask, B, H, L, S, device=_dev(), BLOCK_SIZE=block,
                             separate_full_blocks=separate)
    t = TF.create_block_mask(mask, B, H, L, S, device="cpu", BLOCK_SIZE=block,
                             separate_full_blocks=separate)
    _assert_block_masks_equal(e, t)
    np.testing.assert_array_equal(_np(e.to_dense()), _np(t.to_dense()))
    assert e.to_dense().dtype == ember.int32
    assert e.sparsity() == pytest.approx(t.sparsity())
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert str(e) == str(t)
    assert e.to_string(grid_size=2, limit=2) == t.to_string(grid_size=2, limit=2)
    assert e.numel() == t.numel()


def test_block_mask_indexing_and_adjust_match_torch():
    e = EF.create_block_mask(_sliding, 2, 3, 24, 24, device=_dev(), BLOCK_SIZE=4)
    t = TF.create_block_mask(_sliding, 2, 3, 24, 24, device="cpu", BLOCK_SIZE=4)
    for index in (1, (0, 2), (slice(0, 2), slice(1, 2)), -1):
        _assert_block_masks_equal(e[index], t[index])
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        e[0].mask_mod(*[ember.tensor(0)] * 4)
    _assert_block_masks_equal(e._adjust(13, 9), t._adjust(13, 9))
    assert str(e._adjust(13, 9)) == str(t._adjust(13, 9))


def test_from_kv_blocks_and_create_mask_match_torch():
    num, idx = [[[1, 2]]], [[[[1, 0], [0, 1]]]]
    e = EF.BlockMask.from_kv_blocks(ember.tensor(num, dtype=ember.int32),
                                    ember.tensor(idx, dtype=ember.int32), BLOCK_SIZE=4)
    t = TF.BlockMask.from_kv_blocks(torch.tensor(num, dtype=torch.int32),
                                    torch.tensor(idx, dtype=torch.int32), BLOCK_SIZE=4)
    _assert_block_masks_equal(e, t)
    assert e.mask_mod is EF.noop_mask and repr(e) == repr(t).replace("torch.", "ember.")
    assert e.as_tuple()[:2] == t.as_tuple()[:2] == (8, 8)

    def score_mod(score, b, h, q_idx, kv_idx):
        return ember.where(kv_idx <= q_idx + b, score, -float("inf"))

    def t_score_mod(score, b, h, q_idx, kv_idx):
        return torch.where(kv_idx <= q_idx + b, score, -float("inf"))

    for e_fn, t_fn in ((_sliding, _sliding), (score_mod, t_score_mod)):
        em = EF.create_mask(e_fn, 2, None, 7, 9, device=_dev())
        tm = TF.create_mask(t_fn, 2, None, 7, 9, device="cpu")
        assert em.dtype == ember.bool and em.shape == tm.shape == (2, 1, 7, 9)
        np.testing.assert_array_equal(_np(em), _np(tm))
    assert EF.create_block_mask(_causal, 1, 1, 4, 4).kv_indices.device == ember.device("cpu")


def test_masks_combinators_and_noop():
    b, h, q, kv = (ember.tensor(0), ember.tensor(0), ember.arange(4).view(4, 1),
                   ember.arange(4).view(1, 4))
    assert EF.noop_mask(b, h, q, kv).dtype == ember.bool and EF.noop_mask(b, h, q, kv).item()
    both = EF.and_masks(_causal, lambda b, h, q, kv: kv >= 1)(b, h, q, kv)
    either = EF.or_masks(_causal, lambda b, h, q, kv: kv == 3)(b, h, q, kv)
    qn, kn = np.arange(4)[:, None], np.arange(4)[None]
    np.testing.assert_array_equal(_np(both), (qn >= kn) & (kn >= 1))
    np.testing.assert_array_equal(_np(either), (qn >= kn) | (kn == 3))
    with pytest.raises(RuntimeError, match="All inputs should be callable mask_mods"):
        EF.and_masks(_causal, 3)
    with pytest.raises(AssertionError, match="create-block_mask requires a mask_mod function"):
        EF.create_block_mask(lambda s, b, h, q, kv: s, 1, 1, 4, 4, device=_dev())
    with pytest.raises(AssertionError, match="Expected 4 or 5 positional args, got 3"):
        EF.create_mask(lambda b, h, q: q, 1, 1, 4, 4, device=_dev())
    with pytest.raises(AssertionError, match="mask.dtype must be ember.bool, got ember.int64"):
        EF.create_block_mask(lambda b, h, q, kv: q - kv, 1, 1, 4, 4, device=_dev())
    assert EF.__all__ == TF.__all__


# -- errors ---------------------------------------------------------------------------------------

def _same_error(exc_type, ember_call, torch_call):
    with pytest.raises(exc_type) as e_info:
        ember_call()
    with pytest.raises(exc_type) as t_info:
        torch_call()
    assert str(e_info.value) == str(t_info.value)


@pytest.mark.parametrize("shapes", [
    ((2, 2, 4, 3), (2, 2, 5, 4), (2, 2, 5, 3)),   # embedding dims differ
    ((2, 3, 4, 3), (2, 2, 5, 3), (2, 2, 5, 3)),   # heads differ without gqa
    ((2, 4, 3), (2, 5, 3), (2, 5, 3)),            # 3-d
    ((2, 2, 4, 3), (3, 2, 5, 3), (3, 2, 5, 3)),   # batch differs, no block mask
    ((3,), (2, 2, 5, 3), (2, 2, 5, 3)),           # 1-d
])
def test_bad_shapes_raise_torch_errors(shapes):
    arrays = [np.zeros(s, np.float32) for s in shapes]
    exc = NotImplementedError if len(shapes[0]) == 3 else ValueError
    _same_error(exc, lambda: EF.flex_attention(*_ember(*arrays)),
                lambda: _torch_flex(*_torch(*arrays)))


def test_nested_inputs_raise_torch_error():
    # checked before anything else, as PyTorch does (a jagged layout's components would
    # otherwise meet the math path's shape rules)
    e = [ember.nested.nested_tensor([ember.randn(2, n, 4), ember.randn(2, n + 2, 4)],
                                    layout=ember.jagged) for n in (3, 3, 3)]
    t = [torch.nested.nested_tensor([torch.randn(2, n, 4), torch.randn(2, n + 2, 4)],
                                    layout=torch.jagged) for n in (3, 3, 3)]
    _same_error(NotImplementedError, lambda: EF.flex_attention(*e), lambda: _torch_flex(*t))
    dense = _ember(*[np.zeros((1, 2, 3, 4), np.float32)] * 2)
    with pytest.raises(NotImplementedError, match="does not support NestedTensor inputs"):
        EF.flex_attention(*dense, e[2])


def test_gqa_head_multiple_and_block_mask_length_errors_match_torch():
    arrays = [np.zeros(s, np.float32) for s in ((1, 3, 4, 2), (1, 2, 4, 2), (1, 2, 4, 2))]
    _same_error(ValueError, lambda: EF.flex_attention(*_ember(*arrays), enable_gqa=True),
                lambda: _torch_flex(*_torch(*arrays), enable_gqa=True))
    arrays = [np.zeros((1, 1, 8, 2), np.float32)] * 3
    for L in (4, 16):
        ebm = EF.create_block_mask(_causal, 1, 1, L, L, device=_dev())
        tbm = TF.create_block_mask(_causal, 1, 1, L, L, device="cpu")
        _same_error(ValueError, lambda e=ebm: EF.flex_attention(*_ember(*arrays), block_mask=e),
                    lambda t=tbm: _torch_flex(*_torch(*arrays), block_mask=t))
    ebm = EF.create_block_mask(_causal, 1, 1, 8, 8, device=_dev())[0]
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        EF.flex_attention(*_ember(*arrays), block_mask=ebm)
    _same_error(ValueError,
                lambda: EF.flex_attention(*_ember(*arrays), kernel_options={"BACKEND": "X"}),
                lambda: _torch_flex(*_torch(*arrays), kernel_options={"BACKEND": "X"}))


# -- packaging ------------------------------------------------------------------------------------

def test_lazy_import_and_torch_alias():
    code = (
        "import sys, ember, ember.nn\n"
        "assert 'ember.nn.attention.flex_attention' not in sys.modules\n"
        "assert ember.nn.attention.flex_attention.BlockMask.__name__ == 'BlockMask'\n"
        "import ember.as_torch; ember.as_torch.install()\n"
        "import torch\n"
        "from torch.nn.attention.flex_attention import flex_attention, create_block_mask\n"
        "assert torch.nn.attention.flex_attention.flex_attention is flex_attention\n"
        "bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 4, 4, device='cpu')\n"
        "q = torch.randn(1, 1, 4, 2)\n"
        "print(flex_attention(q, q, q, block_mask=bm).shape)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "torch.Size([1, 1, 4, 2])"  # (the alias prints as PyTorch)


@pytest.mark.parametrize("dq_kv_order", [False, True])
def test_dq_write_order_matches_torch(dq_kv_order):
    kwargs = dict(device="cpu", BLOCK_SIZE=4, compute_dq_write_order=True,
                  dq_kv_order=dq_kv_order)
    e = EF.create_block_mask(_sliding, 2, None, 20, 16, **{**kwargs, "device": _dev()})
    t = TF.create_block_mask(_sliding, 2, None, 20, 16, **kwargs)
    for attr in ("dq_write_order", "dq_write_order_full"):
        assert getattr(e, attr).dtype == ember.int32
        np.testing.assert_array_equal(_np(getattr(e, attr)), _np(getattr(t, attr)))
    assert e.dq_kv_order is None and e.dq_kv_order_spt is t.dq_kv_order_spt is dq_kv_order
    np.testing.assert_array_equal(_np(e[1].dq_write_order), _np(t[1].dq_write_order))
    with pytest.raises(ValueError, match="dq_kv_order must be a bool when using create_block"):
        EF.create_block_mask(_sliding, 2, None, 20, 16, device=_dev(), dq_kv_order=None)


def test_compile_flag_warns_and_to_moves():
    with pytest.warns(DeprecationWarning, match="_compile flag on create_block_mask"):
        e = EF.create_block_mask(_causal, 1, 1, 8, 8, device=_dev(), BLOCK_SIZE=4, _compile=True)
    t = TF.create_block_mask(_causal, 1, 1, 8, 8, device="cpu", BLOCK_SIZE=4)
    _assert_block_masks_equal(e, t)
    moved = e.to("cpu")
    assert moved.kv_indices.device == ember.device("cpu") and moved.mask_mod is _causal
    _assert_block_masks_equal(moved, t)


def test_attention_follows_mask_mod_not_block_structure_like_torch():
    # PyTorch's eager path masks by the element-level mask_mod only: a BlockMask from
    # from_kv_blocks (mask_mod noop) with blocks left out still attends everywhere
    arrays = _arrays(seed=24, B=1, Hq=1, L=8, S=8)
    num, idx = [[[1, 1]]], [[[[0, 1], [1, 0]]]]
    ebm = EF.BlockMask.from_kv_blocks(ember.tensor(num, dtype=ember.int32, device=_dev()),
                                      ember.tensor(idx, dtype=ember.int32, device=_dev()),
                                      BLOCK_SIZE=4)
    tbm = TF.BlockMask.from_kv_blocks(torch.tensor(num, dtype=torch.int32),
                                      torch.tensor(idx, dtype=torch.int32), BLOCK_SIZE=4)
    out = EF.flex_attention(*_ember(*arrays), block_mask=ebm)
    np.testing.assert_allclose(_np(out), _np(_torch_flex(*_torch(*arrays), block_mask=tbm)),
                               **F32)
    np.testing.assert_allclose(_np(out), _np(EF.flex_attention(*_ember(*arrays))), **F32)
    # with the mask_mod given, it is applied per element
    ebm.mask_mod, tbm.mask_mod = _causal, _causal
    np.testing.assert_allclose(_np(EF.flex_attention(*_ember(*arrays), block_mask=ebm)),
                               _np(_torch_flex(*_torch(*arrays), block_mask=tbm)), **F32)


def test_batch_sizes_that_do_not_broadcast_raise():
    rng = np.random.default_rng(25)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((3, 1, 4, 2), (2, 1, 4, 2), (2, 1, 4, 2))]
    bm = EF.create_block_mask(_causal, 3, 1, 4, 4, device=_dev())
    with pytest.raises(RuntimeError, match="Bq and Bkv must broadcast. Got Bq=3 and Bkv=2"):
        EF.flex_attention(*_ember(*arrays), block_mask=bm)
    bm = EF.create_block_mask(_causal, 2, 1, 4, 4, device=_dev())
    with pytest.raises(ValueError, match="or block_mask and query to have the same batch size"):
        EF.flex_attention(*_ember(*arrays), block_mask=bm)


def test_mod_reducing_an_argument_runs_per_element_like_torch():
    bias = np.random.default_rng(26).standard_normal(3).astype(np.float32)

    def mods(lib):
        b_t = lib.tensor(bias)

        def reducing(score, b, h, q_idx, kv_idx):
            return score + b_t[kv_idx].sum()  # per element: score + bias[kv_idx]
        return reducing, None
    _both_flex(_arrays(seed=26, B=1, Hq=1, L=5, S=3), mods=mods)
