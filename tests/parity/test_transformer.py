"""Parity of ``MultiheadAttention`` and the Transformer layers with PyTorch: torch's weights
are loaded through ``state_dict`` (keys must match exactly), then outputs, attention weights
and the gradients of the inputs and of every parameter are compared."""

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
tnn = torch.nn
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched",
                                        "ignore:enable_nested_tensor is True",
                                        "ignore:The PyTorch API of nested tensors")

TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}
E_DTYPE = {torch.float32: ember.float32, torch.float64: ember.float64}


def _np(t):
    return t.detach().numpy()


def _load(em, tm):
    """Copy torch's parameters into the ember module; the key lists must agree exactly."""
    sd = tm.state_dict()
    assert list(em.state_dict().keys()) == list(sd.keys())
    em.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in sd.items()})


def _pair(arr, requires_grad=True):
    t = torch.tensor(arr, requires_grad=requires_grad)
    e = ember.tensor(arr, requires_grad=requires_grad)
    return t, e


def _mask_pair(arr):
    return (None, None) if arr is None else (torch.tensor(arr), ember.tensor(arr))


def _compare(t_out, e_out, tol):
    if t_out is None:
        assert e_out is None
        return
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(_np(e_out), _np(t_out), **tol)


def _compare_backward(t_outs, e_outs, t_leaves, e_leaves, tm, em, tol, rng):
    """Backpropagate the same random cotangents and compare every leaf's gradient."""
    t_total = e_total = 0
    for t_o, e_o in zip(t_outs, e_outs):
        if t_o is None:
            continue
        g = rng.standard_normal(tuple(t_o.shape)).astype(_np(t_o).dtype)
        t_total = t_total + (t_o * torch.tensor(g)).sum()
        e_total = e_total + (e_o * ember.tensor(g)).sum()
    t_total.backward()
    e_total.backward()
    for t_l, e_l in zip(t_leaves, e_leaves):
        np.testing.assert_allclose(_np(e_l.grad), _np(t_l.grad), **tol)
    e_params = dict(em.named_parameters())
    for name, p in tm.named_parameters():
        if p.grad is None:
            assert e_params[name].grad is None, name
        else:
            np.testing.assert_allclose(_np(e_params[name].grad), _np(p.grad), **tol,
                                       err_msg=name)


MHA_CASES = [
    dict(),
    dict(batch_first=True),
    dict(bias=False),
    dict(kdim=5, vdim=3),
    dict(kdim=5, vdim=3, batch_first=True),
    dict(add_bias_kv=True),
    dict(add_zero_attn=True),
    dict(add_bias_kv=True, add_zero_attn=True, batch_first=True),
]

CALL_CASES = [
    dict(),
    dict(need_weights=False),
    dict(average_attn_weights=False),
    dict(kpm=True),
    dict(kpm=True, need_weights=False),
    dict(float_mask=True),
    dict(float_mask=True, kpm=True, need_weights=False),
    dict(bool_mask=True),
    dict(mask3d=True),
    dict(mask3d=True, need_weights=False),
    dict(causal=True),
    dict(causal=True, need_weights=False),
    dict(causal=True, kpm=True, need_weights=False),
]


def _run_mha(cfg, call, dtype=torch.float32, self_attn=True, unbatched=False, kv_same=False,
             train=False, seed=0):
    rng = np.random.default_rng(seed)
    E, H, L, S, N = 8, 2, 4, 4 if self_attn else 6, 3
    ctor = dict(cfg)
    torch.manual_seed(seed)
    tm = tnn.MultiheadAttention(E, H, dtype=dtype, **ctor)
    em = enn.MultiheadAttention(E, H, dtype=E_DTYPE[dtype], **ctor)
    _load(em, tm)
    if train:
        tm.train()
        em.train()
    else:
        tm.eval()
        em.eval()
    bf = ctor.get("batch_first", False)
    kdim, vdim = ctor.get("kdim", E), ctor.get("vdim", E)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    separate = kdim != E or vdim != E

    def shape(length, dim):
        if unbatched:
            return (length, dim)
        return (N, length, dim) if bf else (length, N, dim)

    tq, eq = _pair(rng.standard_normal(shape(L, E)).astype(npdt))
    if self_attn and not separate:
        tk = tv = tq
        ek = ev = eq
        leaves_t, leaves_e = [tq], [eq]
    else:
        S = S if not self_attn else L
        tk, ek = _pair(rng.standard_normal(shape(S, kdim)).astype(npdt))
        if kv_same and kdim == vdim:
            tv, ev = tk, ek
            leaves_t, leaves_e = [tq, tk], [eq, ek]
        else:
            tv, ev = _pair(rng.standard_normal(shape(S, vdim)).astype(npdt))
            leaves_t, leaves_e = [tq, tk, tv], [eq, ek, ev]
    kwargs_t, kwargs_e = {}, {}
    for key in ("need_weights", "average_attn_weights"):
        if key in call:
            kwargs_t[key] = kwargs_e[key] = call[key]
    if call.get("kpm"):
        kpm = np.zeros((N, S) if not unbatched else (S,), bool)
        kpm[..., -1] = True
        if not unbatched:
            kpm[0, 0] = True
        kwargs_t["key_padding_mask"], kwargs_e["key_padding_mask"] = _mask_pair(kpm)
    mask = None
    if call.get("float_mask"):
        mask = rng.standard_normal((L, S)).astype(npdt)
    if call.get("bool_mask"):
        mask = rng.random((L, S)) < 0.3
        mask[:, 0] = False
    if call.get("mask3d"):
        mask = rng.standard_normal(((N if not unbatched else 1) * H, L, S)).astype(npdt)
    if call.get("causal"):
        mask = np.triu(np.full((L, S), -np.inf, npdt), 1)
        kwargs_t["is_causal"] = kwargs_e["is_causal"] = True
    if mask is not None:
        kwargs_t["attn_mask"], kwargs_e["attn_mask"] = _mask_pair(mask)
    t_out, t_w = tm(tq, tk, tv, **kwargs_t)
    e_out, e_w = em(eq, ek, ev, **kwargs_e)
    tol = TOL[dtype]
    _compare(t_out, e_out, tol)
    _compare(t_w, e_w, tol)
    _compare_backward((t_out, t_w), (e_out, e_w), leaves_t, leaves_e, tm, em, tol, rng)


@pytest.mark.parametrize("cfg", MHA_CASES, ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("call", CALL_CASES, ids=lambda c: "-".join(c) or "plain")
def test_mha_self_attention(cfg, call):
    _run_mha(cfg, call)


@pytest.mark.parametrize("cfg", [dict(), dict(batch_first=True), dict(kdim=5, vdim=3),
                                 dict(add_bias_kv=True, add_zero_attn=True)],
                         ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("call", [dict(), dict(need_weights=False),
                                  dict(kpm=True, float_mask=True),
                                  dict(average_attn_weights=False, kpm=True)],
                         ids=lambda c: "-".join(c) or "plain")
@pytest.mark.parametrize("kv_same", [False, True])
def test_mha_cross_attention(cfg, call, kv_same):
    _run_mha(cfg, call, self_attn=False, kv_same=kv_same)


@pytest.mark.parametrize("cfg", [dict(), dict(batch_first=True), dict(kdim=5, vdim=3)],
                         ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("call", [dict(), dict(need_weights=False), dict(kpm=True),
                                  dict(mask3d=True, average_attn_weights=False)],
                         ids=lambda c: "-".join(c) or "plain")
def test_mha_unbatched(cfg, call):
    _run_mha(cfg, call, unbatched=True)


@pytest.mark.parametrize("call", [dict(), dict(need_weights=False, kpm=True, float_mask=True)],
                         ids=["weights", "sdpa"])
@pytest.mark.parametrize("cfg", [dict(), dict(batch_first=True, add_bias_kv=True)],
                         ids=["default", "bf-biaskv"])
def test_mha_float64_and_train_mode(cfg, call):
    _run_mha(cfg, call, dtype=torch.float64)
    _run_mha(cfg, call, train=True)  # dropout=0: training mode is deterministic


# -- Transformer layers ----------------------------------------------------------------------

LAYER_CASES = [
    dict(),
    dict(batch_first=True),
    dict(norm_first=True),
    dict(activation="gelu"),
    dict(batch_first=True, norm_first=True, activation="gelu"),
    dict(bias=False),
    dict(layer_norm_eps=1e-3),
]


def _layer_inputs(rng, bf, L, N, E, npdt):
    return rng.standard_normal((N, L, E) if bf else (L, N, E)).astype(npdt)


def _masks(rng, kind, L, S, N, npdt):
    """(attn_mask, key_padding_mask) numpy arrays for a mask ``kind``."""
    kpm = np.zeros((N, S), bool)
    kpm[:, -1] = True
    kpm[0, 0] = True
    if kind == "causal":
        return np.triu(np.full((L, S), -np.inf, npdt), 1), None
    if kind == "kpm":
        return None, kpm
    if kind == "float":
        return rng.standard_normal((L, S)).astype(npdt), None
    if kind == "both":
        return np.triu(np.full((L, S), -np.inf, npdt), 1), kpm
    return None, None


def _prep(tm, em, train):
    _load(em, tm)
    for m in (tm, em):
        m.train(train)


@pytest.mark.parametrize("cfg", LAYER_CASES, ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("masks", ["none", "causal", "kpm", "float", "both"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_encoder_layer(cfg, masks, train):
    rng = np.random.default_rng(1)
    E, H, L, N = 8, 2, 5, 3
    torch.manual_seed(1)
    tm = tnn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, **cfg)
    em = enn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, **cfg)
    _prep(tm, em, train)
    bf = cfg.get("batch_first", False)
    tx, ex = _pair(_layer_inputs(rng, bf, L, N, E, np.float32))
    mask, kpm = _masks(rng, masks, L, L, N, np.float32)
    tmask, emask = _mask_pair(mask)
    tkpm, ekpm = _mask_pair(kpm)
    causal = masks == "causal"
    t_out = tm(tx, src_mask=tmask, src_key_padding_mask=tkpm, is_causal=causal)
    e_out = em(ex, src_mask=emask, src_key_padding_mask=ekpm, is_causal=causal)
    _compare(t_out, e_out, TOL[torch.float32])
    _compare_backward((t_out,), (e_out,), [tx], [ex], tm, em, TOL[torch.float32], rng)


@pytest.mark.parametrize("cfg", LAYER_CASES, ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("masks", ["none", "causal", "both"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_decoder_layer(cfg, masks, train):
    rng = np.random.default_rng(2)
    E, H, L, S, N = 8, 2, 5, 6, 3
    torch.manual_seed(2)
    tm = tnn.TransformerDecoderLayer(E, H, dim_feedforward=16, dropout=0.0, **cfg)
    em = enn.TransformerDecoderLayer(E, H, dim_feedforward=16, dropout=0.0, **cfg)
    _prep(tm, em, train)
    bf = cfg.get("batch_first", False)
    ttgt, etgt = _pair(_layer_inputs(rng, bf, L, N, E, np.float32))
    tmem, emem = _pair(_layer_inputs(rng, bf, S, N, E, np.float32))
    mask, kpm = _masks(rng, masks, L, L, N, np.float32)
    mem_kpm = np.zeros((N, S), bool)
    mem_kpm[:, -2:] = True
    tk = dict(tgt_mask=_mask_pair(mask)[0], tgt_key_padding_mask=_mask_pair(kpm)[0],
              memory_key_padding_mask=_mask_pair(mem_kpm)[0], tgt_is_causal=masks == "causal")
    ek = dict(tgt_mask=_mask_pair(mask)[1], tgt_key_padding_mask=_mask_pair(kpm)[1],
              memory_key_padding_mask=_mask_pair(mem_kpm)[1], tgt_is_causal=masks == "causal")
    t_out = tm(ttgt, tmem, **tk)
    e_out = em(etgt, emem, **ek)
    _compare(t_out, e_out, TOL[torch.float32])
    _compare_backward((t_out,), (e_out,), [ttgt, tmem], [etgt, emem], tm, em,
                      TOL[torch.float32], rng)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_decoder_stacks_and_transformer(batch_first, norm_first):
    rng = np.random.default_rng(3)
    E, H, L, S, N = 8, 2, 5, 6, 2
    torch.manual_seed(3)
    kw = dict(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    tm = tnn.Transformer(**kw)
    em = enn.Transformer(**kw)
    _prep(tm, em, True)
    tsrc, esrc = _pair(_layer_inputs(rng, batch_first, S, N, E, np.float32))
    ttgt, etgt = _pair(_layer_inputs(rng, batch_first, L, N, E, np.float32))
    tmask = tnn.Transformer.generate_square_subsequent_mask(L)
    emask = enn.Transformer.generate_square_subsequent_mask(L)
    np.testing.assert_array_equal(_np(emask), _np(tmask))
    skpm = np.zeros((N, S), bool)
    skpm[1, -2:] = True
    t_out = tm(tsrc, ttgt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(skpm),
               memory_key_padding_mask=torch.tensor(skpm))
    e_out = em(esrc, etgt, tgt_mask=emask, src_key_padding_mask=ember.tensor(skpm),
               memory_key_padding_mask=ember.tensor(skpm))
    tol = dict(rtol=1e-4, atol=1e-5)
    _compare(t_out, e_out, tol)
    _compare_backward((t_out,), (e_out,), [tsrc, ttgt], [esrc, etgt], tm, em, tol, rng)


def test_encoder_stack_float64_eval():
    rng = np.random.default_rng(4)
    torch.manual_seed(4)
    layer_t = tnn.TransformerEncoderLayer(8, 2, 16, 0.0, dtype=torch.float64)
    layer_e = enn.TransformerEncoderLayer(8, 2, 16, 0.0, dtype=ember.float64)
    with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
        tm = tnn.TransformerEncoder(layer_t, 3, norm=tnn.LayerNorm(8, dtype=torch.float64))
    with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
        em = enn.TransformerEncoder(layer_e, 3, norm=enn.LayerNorm(8, dtype=ember.float64))
    _prep(tm, em, False)
    tx, ex = _pair(rng.standard_normal((5, 2, 8)))
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    t_out = tm(tx, mask=torch.tensor(mask))  # the causal mask is detected (is_causal=None)
    e_out = em(ex, mask=ember.tensor(mask))
    _compare(t_out, e_out, TOL[torch.float64])
    _compare_backward((t_out,), (e_out,), [tx], [ex], tm, em, TOL[torch.float64], rng)


# -- reprs and errors ---------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda nn: nn.MultiheadAttention(8, 2),
    lambda nn: nn.MultiheadAttention(8, 2, kdim=4, vdim=3, add_bias_kv=True, bias=False),
    lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
    lambda nn: nn.TransformerDecoderLayer(8, 2, 16, norm_first=True, bias=False),
    lambda nn: nn.Transformer(8, 2, 1, 1, 16),
], ids=["mha", "mha-kv", "enc", "dec", "transformer"])
def test_repr_and_state_dict_keys(make):
    tm, em = make(tnn), make(enn)
    assert repr(em) == repr(tm).replace("torch.", "ember.")
    assert list(em.state_dict()) == list(tm.state_dict())
    for (tn, tp), (en, ep) in zip(tm.named_parameters(), em.named_parameters()):
        assert tn == en and tuple(tp.shape) == tuple(ep.shape)


def _raises_like(fn_t, fn_e):
    with pytest.raises(Exception) as t_err:
        fn_t()
    with pytest.raises(type(t_err.value)) as e_err:
        fn_e()
    assert str(e_err.value) == str(t_err.value).replace("torch.", "ember.")


@pytest.mark.parametrize("case", [
    "embed_dim", "heads", "divisible", "query_dim", "key_dim", "kpm_dim", "mask_dim",
    "mask2d_shape", "mask3d_shape", "kpm_shape", "is_causal_no_mask", "int_mask",
    "activation", "batch", "features",
])
def test_errors_match_torch(case):
    def make(lib, mod):
        x = mod.zeros(4, 2, 8)
        m = lib.MultiheadAttention(8, 2)
        calls = {
            "embed_dim": lambda: lib.MultiheadAttention(0, 2),
            "heads": lambda: lib.MultiheadAttention(8, 0),
            "divisible": lambda: lib.MultiheadAttention(8, 3),
            "query_dim": lambda: m(mod.zeros(2, 2, 2, 8), x, x),
            "key_dim": lambda: m(x, mod.zeros(4, 8), x),
            "kpm_dim": lambda: m(x, x, x, key_padding_mask=mod.zeros(4, dtype=mod.bool)),
            "mask_dim": lambda: m(x, x, x, attn_mask=mod.zeros(1, 1, 4, 4)),
            "mask2d_shape": lambda: m(x, x, x, attn_mask=mod.zeros(3, 4)),
            "mask3d_shape": lambda: m(x, x, x, attn_mask=mod.zeros(3, 4, 4)),
            "kpm_shape": lambda: m(x, x, x, key_padding_mask=mod.zeros(2, 3, dtype=mod.bool)),
            "is_causal_no_mask": lambda: m(x, x, x, is_causal=True),
            "int_mask": lambda: m(x, x, x, attn_mask=mod.zeros(4, 4, dtype=mod.int64)),
            "activation": lambda: lib.TransformerEncoderLayer(8, 2, activation="tanh"),
            "batch": lambda: lib.Transformer(8, 2, 1, 1, 16)(x, mod.zeros(4, 3, 8)),
            "features": lambda: lib.Transformer(8, 2, 1, 1, 16)(x, mod.zeros(4, 2, 6)),
        }
        return calls[case]

    _raises_like(make(tnn, torch), make(enn, ember))


@pytest.mark.parametrize("left_aligned", [True, False])
@pytest.mark.parametrize("final_norm", [False, True])
def test_encoder_inference_with_padding_matches_torch_nested_path(left_aligned, final_norm):
    """In inference torch runs padded batch-first input as nested tensors: padded positions
    come back as zeros (before the final norm) when the padding is left-aligned."""
    rng = np.random.default_rng(5)
    torch.manual_seed(5)
    tm = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                norm=tnn.LayerNorm(8) if final_norm else None)
    em = enn.TransformerEncoder(enn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                norm=enn.LayerNorm(8) if final_norm else None)
    _prep(tm, em, False)
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 3:] = True
    kpm[1, 4] = True
    if not left_aligned:
        kpm[2, 0] = True
    with torch.no_grad():
        t_out = tm(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
    with ember.no_grad():
        e_out = em(ember.tensor(x), src_key_padding_mask=ember.tensor(kpm))
    _compare(t_out, e_out, dict(rtol=1e-4, atol=1e-5))


def test_functional_static_kv_and_separate_weights():
    rng = np.random.default_rng(6)
    E, H, L, S, N = 8, 2, 4, 3, 2
    arrays = dict(q=(L, N, E), k=(S, N, E), v=(S, N, E), w=(3 * E, E), b=(3 * E,),
                  ow=(E, E), ob=(E,), sk=(N * H, 5, E // H), sv=(N * H, 5, E // H),
                  wq=(E, E), wk=(E, E), wv=(E, E))
    arrs = {k: rng.standard_normal(s) for k, s in arrays.items()}
    t = {k: torch.tensor(a, requires_grad=True) for k, a in arrs.items()}
    e = {k: ember.tensor(a, requires_grad=True) for k, a in arrs.items()}
    outs = []
    for fn, d in ((tnn.functional, t), (enn.functional, e)):
        out, w = fn.multi_head_attention_forward(
            d["q"], d["k"], d["v"], E, H, None, d["b"], None, None, False, 0.0, d["ow"],
            d["ob"], training=False, use_separate_proj_weight=True, q_proj_weight=d["wq"],
            k_proj_weight=d["wk"], v_proj_weight=d["wv"], static_k=d["sk"], static_v=d["sv"],
            average_attn_weights=False)
        (out.sum() + (w * w).sum()).backward()
        outs.append((out, w))
    tol = TOL[torch.float64]
    _compare(outs[0][0], outs[1][0], tol)
    _compare(outs[0][1], outs[1][1], tol)
    for k in arrs:
        if t[k].grad is None:
            assert e[k].grad is None, k
        else:
            np.testing.assert_allclose(_np(e[k].grad), _np(t[k].grad), **tol, err_msg=k)


@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_layers_and_transformer(batch_first):
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
              dim_feedforward=16, dropout=0.0, batch_first=batch_first)
    tm, em = tnn.Transformer(**kw), enn.Transformer(**kw)
    _prep(tm, em, False)
    tsrc, esrc = _pair(rng.standard_normal((6, 8)).astype(np.float32))
    ttgt, etgt = _pair(rng.standard_normal((4, 8)).astype(np.float32))
    kpm = np.array([False] * 5 + [True])
    t_out = tm(tsrc, ttgt, tgt_mask=tnn.Transformer.generate_square_subsequent_mask(4),
               src_key_padding_mask=torch.tensor(kpm))
    e_out = em(esrc, etgt, tgt_mask=enn.Transformer.generate_square_subsequent_mask(4),
               src_key_padding_mask=ember.tensor(kpm))
    _compare(t_out, e_out, TOL[torch.float32])
    _compare_backward((t_out,), (e_out,), [tsrc, ttgt], [esrc, etgt], tm, em,
                      TOL[torch.float32], rng)


def test_custom_encoder_decoder():
    torch.manual_seed(8)
    tm = tnn.Transformer(8, 2, custom_encoder=tnn.Identity(), custom_decoder=tnn.Linear(8, 8))
    em = enn.Transformer(8, 2, custom_encoder=enn.Identity(), custom_decoder=enn.Linear(8, 8))
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
