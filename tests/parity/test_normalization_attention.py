"""Normalization and attention kernels against torch.nn.functional: values, grads, errors."""

import numpy as np
import pytest

import ember
from ember.ops import normalization as EN
from ember.ops.attention import scaled_dot_product_attention as e_sdpa

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _pair(*shape, seed=0, dtype=np.float64, requires_grad=True):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (ember.tensor(arr, requires_grad=requires_grad),
            torch.tensor(arr, requires_grad=requires_grad))


def _close(e, t, tol=1e-10):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _check(e_fn, t_fn, e_inputs, t_inputs, tol=1e-10):
    """Forward values and the gradients of every input that requires grad."""
    e_out, t_out = e_fn(*e_inputs), t_fn(*t_inputs)
    _close(e_out, t_out, tol)
    g = np.random.default_rng(9).standard_normal(tuple(t_out.shape))
    e_out.backward(ember.tensor(g, dtype=e_out.dtype))
    t_out.backward(torch.tensor(g, dtype=t_out.dtype))
    for e, t in zip(e_inputs, t_inputs):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            _close(e.grad, t.grad, tol)


def _same_error(e_fn, t_fn):
    with pytest.raises(Exception) as t_err:
        t_fn()
    with pytest.raises(type(t_err.value)) as e_err:
        e_fn()
    return str(t_err.value), str(e_err.value)


SHAPES = [(4, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(shape, training, affine):
    ex, tx = _pair(*shape)
    ew, tw = _pair(3, seed=1)
    eb, tb = _pair(3, seed=2)
    erm, trm = _pair(3, seed=3, requires_grad=False)
    erv, trv = ember.tensor(np.arange(1.0, 4.0)), torch.arange(1.0, 4.0, dtype=torch.float64)
    p_e, p_t = ((ew, eb), (tw, tb)) if affine else ((), ())
    _check(lambda x, *p: EN.batch_norm(x, erm, erv, *p, training=training, momentum=0.2),
           lambda x, *p: F.batch_norm(x, trm, trv, *p, training=training, momentum=0.2),
           (ex, *p_e), (tx, *p_t))
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-14)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-14)


def test_batch_norm_float32_running_stats_match():
    ex, tx = _pair(16, 4, 6, 6, dtype=np.float32, requires_grad=False)
    erm, erv = ember.zeros(4), ember.ones(4)
    trm, trv = torch.zeros(4), torch.ones(4)
    for _ in range(3):
        _close(EN.batch_norm(ex, erm, erv, training=True),
               F.batch_norm(tx, trm, trv, training=True), 1e-5)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-6)
    assert erm.dtype == ember.float32


@pytest.mark.parametrize("shape", SHAPES[1:])
@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm(shape, use_input_stats):
    ex, tx = _pair(*shape)
    ew, tw = _pair(3, seed=1)
    eb, tb = _pair(3, seed=2)
    erm, trm = _pair(3, seed=3, requires_grad=False)
    erv, trv = ember.tensor(np.arange(1.0, 4.0)), torch.arange(1.0, 4.0, dtype=torch.float64)
    _check(lambda x, w, b: EN.instance_norm(x, erm, erv, w, b, use_input_stats, 0.3),
           lambda x, w, b: F.instance_norm(x, trm, trv, w, b, use_input_stats, 0.3),
           (ex, ew, eb), (tx, tw, tb))
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-13)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-13)


@pytest.mark.parametrize("shape,normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4)),
                                              ((2, 3, 2, 3), (2, 3))])
def test_layer_norm_and_rms_norm(shape, normalized):
    ex, tx = _pair(*shape)
    ew, tw = _pair(*normalized, seed=1)
    eb, tb = _pair(*normalized, seed=2)
    _check(lambda x, w, b: EN.layer_norm(x, normalized, w, b, 1e-3),
           lambda x, w, b: F.layer_norm(x, normalized, w, b, 1e-3), (ex, ew, eb), (tx, tw, tb))
    ex, tx = _pair(*shape)
    ew, tw = _pair(*normalized, seed=1)
    _check(lambda x, w: EN.rms_norm(x, normalized, w), lambda x, w: F.rms_norm(x, normalized, w),
           (ex, ew), (tx, tw))


@pytest.mark.parametrize("shape,groups", [((2, 6), 3), ((2, 6, 4), 2), ((3, 4, 2, 3), 4),
                                          ((2, 4, 2, 2, 2), 1)])
def test_group_norm(shape, groups):
    ex, tx = _pair(*shape)
    ew, tw = _pair(shape[1], seed=1)
    eb, tb = _pair(shape[1], seed=2)
    _check(lambda x, w, b: EN.group_norm(x, groups, w, b),
           lambda x, w, b: F.group_norm(x, groups, w, b), (ex, ew, eb), (tx, tw, tb))


@pytest.mark.parametrize("shape,size", [((2, 5, 3), 3), ((2, 4, 3, 2), 2), ((1, 3, 2, 2, 2), 4)])
def test_local_response_norm(shape, size):
    ex, tx = _pair(*shape)
    _check(lambda x: EN.local_response_norm(x, size, 0.1, 0.6, 2.0),
           lambda x: F.local_response_norm(x, size, 0.1, 0.6, 2.0), (ex,), (tx,))


def test_float32_dtypes():
    ex, tx = _pair(4, 3, 5, dtype=np.float32, requires_grad=False)
    _close(EN.layer_norm(ex, (5,)), F.layer_norm(tx, (5,)), 1e-5)
    _close(EN.group_norm(ex, 3), F.group_norm(tx, 3), 1e-5)
    _close(EN.instance_norm(ex), F.instance_norm(tx), 1e-5)


def test_normalization_errors():
    x_e, x_t = _pair(4, 3, 5, requires_grad=False)
    msg_t, msg_e = _same_error(lambda: EN.batch_norm(ember.ones(1, 3), None, None, training=True),
                               lambda: F.batch_norm(torch.ones(1, 3), None, None, training=True))
    assert msg_e == msg_t == ("Expected more than 1 value per channel when training, got input "
                              "size torch.Size([1, 3])")
    msg_t, msg_e = _same_error(lambda: EN.layer_norm(x_e, (4,)), lambda: F.layer_norm(x_t, (4,)))
    assert msg_e == msg_t
    cases = [
        (lambda x, m: m.batch_norm(x, None, None, training=False)),
        (lambda x, m: m.batch_norm(x, None, None, x.new_ones(4), training=True)),
        (lambda x, m: m.layer_norm(x, (3, 4))),
        (lambda x, m: m.layer_norm(x, (5,), x.new_ones(4))),
        (lambda x, m: m.layer_norm(x, ())),
        (lambda x, m: m.group_norm(x, 2)),
        (lambda x, m: m.group_norm(x, 3, x.new_ones(4))),
        (lambda x, m: m.instance_norm(x[:, :, :1])),
        (lambda x, m: m.local_response_norm(x[0], 2)),
        (lambda x, m: m.rms_norm(x, (4,))),
    ]
    for case in cases:
        msg_t, msg_e = _same_error(lambda c=case: c(x_e, EN), lambda c=case: c(x_t, F))
        assert msg_e == msg_t


# -- attention ----------------------------------------------------------------------------------

def _sdpa_check(shapes, **kw):
    (eq, tq), (ek, tk), (ev, tv) = (_pair(*s, seed=i) for i, s in enumerate(shapes))
    mask = kw.pop("mask", None)
    em = tm = None
    if mask is not None:
        em, tm = ember.tensor(mask), torch.tensor(mask)
    _check(lambda q, k, v: e_sdpa(q, k, v, attn_mask=em, **kw),
           lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=tm, **kw),
           (eq, ek, ev), (tq, tk, tv))


@pytest.mark.parametrize("shapes", [((3, 4), (5, 4), (5, 2)), ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
                                    ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4))])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.7}])
def test_sdpa(shapes, kw):
    _sdpa_check(shapes, **kw)


def test_sdpa_masks_including_fully_masked_rows():
    rng = np.random.default_rng(5)
    bool_mask = rng.random((3, 5)) > 0.5
    bool_mask[1] = False
    _sdpa_check(((2, 3, 4), (2, 5, 4), (2, 5, 4)), mask=bool_mask)
    float_mask = np.where(bool_mask, rng.standard_normal((3, 5)), -np.inf)
    _sdpa_check(((2, 3, 4), (2, 5, 4), (2, 5, 4)), mask=float_mask)


def test_sdpa_gqa():
    _sdpa_check(((1, 4, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)), enable_gqa=True)


def test_sdpa_errors():
    q, k, v = (np.random.default_rng(0).standard_normal(s) for s in ((2, 3, 4), (2, 5, 4),
                                                                     (2, 5, 6)))
    cases = [
        lambda m, t: m(t(q), t(k), t(v), attn_mask=t(np.ones((3, 5), bool)), is_causal=True),
        lambda m, t: m(t(q), t(k[..., :3]), t(v)),
        lambda m, t: m(t(q), t(k), t(v[:, :4])),
        lambda m, t: m(t(q), t(k), t(v), attn_mask=t(np.ones((3, 5), np.int64))),
        lambda m, t: m(t(q), t(k).float(), t(v)),
        lambda m, t: m(t(q[0, 0]), t(k[0, 0]), t(v[0, 0])),
        lambda m, t: m(t(q), t(k), t(v), dropout_p=1.5),
    ]
    for case in cases:
        msg_t, msg_e = _same_error(lambda c=case: c(e_sdpa, ember.tensor),
                                   lambda c=case: c(F.scaled_dot_product_attention, torch.tensor))
        assert msg_e == msg_t


# -- float32 at the shapes of the text models (the array kernels' rounding) ---------------------

def _f32_close(e, t, tol):
    """Within ``tol`` of the largest magnitude: a few float32 ulps of PyTorch's result."""
    e, t = e.detach().numpy(), t.detach().numpy()
    np.testing.assert_allclose(e, t, rtol=0, atol=tol * np.abs(t).max())


@pytest.mark.parametrize("case", ["causal", "padding mask", "bool mask", "float mask grad"])
def test_sdpa_float32_model_shapes(case):
    """GPT's causal attention (heads split from one (N, L, 3C) array) and MiniLM's additive
    padding mask (float32 min), values and gradients; the output keeps PyTorch's strides.
    Tolerance: 4e-6 of the largest entry; Ember's error against float64 is PyTorch's size
    (about 1e-6), but the two round differently (the scale goes on k here)."""
    rng = np.random.default_rng(3)
    n, length, heads, e = 4, 32, 4, 16
    ex, tx = _pair(n, length, 3 * heads * e, seed=3, dtype=np.float32)
    kw_e, kw_t = {}, {}
    if case == "causal":
        kw_e = kw_t = {"is_causal": True}
    elif case == "padding mask":
        keep = np.ones((n, length), np.float32)
        keep[1:, length // 2:] = 0
        add = (1.0 - keep[:, None, None, :]) * np.finfo(np.float32).min
        kw_e, kw_t = {"attn_mask": ember.tensor(add)}, {"attn_mask": torch.tensor(add)}
    elif case == "bool mask":
        mask = rng.random((n, 1, length, length)) > 0.3
        kw_e, kw_t = {"attn_mask": ember.tensor(mask)}, {"attn_mask": torch.tensor(mask)}
    else:
        em, tm = _pair(1, heads, length, length, seed=4, dtype=np.float32)
        kw_e, kw_t = {"attn_mask": em}, {"attn_mask": tm}

    def run(lib, x, fn, kw):
        q, k, v = (t.view(n, length, heads, e).transpose(1, 2)
                   for t in x.split(heads * e, dim=2))
        return fn(q, k, v, **kw)

    eo, to = run(ember, ex, e_sdpa, kw_e), run(torch, tx, F.scaled_dot_product_attention, kw_t)
    assert eo.stride() == to.stride()
    _f32_close(eo, to, 4e-6)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    _f32_close(ex.grad, tx.grad, 4e-6)
    if case == "float mask grad":
        _f32_close(kw_e["attn_mask"].grad, kw_t["attn_mask"].grad, 4e-6)


@pytest.mark.parametrize("shape", [(4, 16, 384), (8, 32, 128)])
def test_layer_norm_float32_model_shapes(shape):
    """Values and the three gradients within 2e-6 of the largest entry of PyTorch's."""
    ex, tx = _pair(*shape, seed=6, dtype=np.float32)
    ew, tw = _pair(shape[-1], seed=7, dtype=np.float32)
    eb, tb = _pair(shape[-1], seed=8, dtype=np.float32)
    eo = EN.layer_norm(ex * 3 + 1, (shape[-1],), ew, eb)
    to = F.layer_norm(tx * 3 + 1, (shape[-1],), tw, tb)
    _f32_close(eo, to, 2e-6)
    g = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        _f32_close(e.grad, t.grad, 2e-6)
