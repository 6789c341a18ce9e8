"""ember.nn.attention.bias (CausalVariant, CausalBias, causal_upper_left/lower_right) against
PyTorch's torch.nn.attention.bias."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention.bias import CausalBias, CausalVariant, causal_lower_right, causal_upper_left

torch = pytest.importorskip("torch")
from torch.nn.attention import bias as TB  # noqa: E402

LENGTHS = [(4, 4), (3, 6), (6, 3)]  # q == kv, q < kv, q > kv
FACTORIES = ["causal_upper_left", "causal_lower_right"]


@pytest.fixture(autouse=True)
def _dispatch_on():
    # tests/conftest.py turns __torch_function__ dispatch off before each test; a program that
    # imports ember.nn.attention.bias has it on for good (defining CausalBias turned it on)
    ember.overrides.activate()


def _quiet(fn, *size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*size)


def _both(name, *size):
    return _quiet(getattr(ember.nn.attention.bias, name), *size), _quiet(getattr(TB, name), *size)


def _qkv(L, S, lead, dtype, seed=0, e=5, ev=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((*lead, n, d)).astype(dtype)
            for n, d in ((L, e), (S, e), (S, ev))]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


def _np(t):
    return t.detach().numpy()


# -- the objects ----------------------------------------------------------------------------------

def test_variant_values_and_names_match_torch():
    assert {k: int(v) for k, v in CausalVariant.__members__.items()} == \
        {k: int(v) for k, v in TB.CausalVariant.__members__.items()} == \
        {"UPPER_LEFT": 1, "LOWER_RIGHT": 2}
    for v in CausalVariant:
        tv = TB.CausalVariant[v.name]
        assert repr(v) == repr(tv) and str(v) == str(tv) and v == tv
    assert ember.nn.attention.bias.__all__ == TB.__all__


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", LENGTHS + [(0, 3), (1, 1)])
def test_bias_attributes_and_mask_match_torch(name, L, S):
    b, tb = _both(name, L, S)
    assert type(b) is CausalBias and isinstance(b, ember.Tensor)
    assert (b.variant, b.seq_len_q, b.seq_len_kv) == (tb.variant, tb.seq_len_q, tb.seq_len_kv)
    assert isinstance(b.variant, CausalVariant)
    mask, tmask = b._materialize(), tb._materialize()
    assert type(mask) is ember.Tensor and mask.dtype == ember.bool
    assert mask.device == ember.device("cpu")
    np.testing.assert_array_equal(mask.numpy(), tmask.numpy())
    assert not b.requires_grad
    # Ember's bias holds its mask (PyTorch's an uninitialised (variant, L, S) float tensor)
    assert b.shape == (L, S) and b.dtype == ember.bool
    np.testing.assert_array_equal(b.numpy(), tmask.numpy())


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", [(3, 4), (4, 3), (2, 2), (0, 2)])
def test_repr_str_to_dense_are_the_masks_as_in_torch(name, L, S):
    b, tb = _both(name, L, S)
    expected = repr(tb).replace("torch.", "ember.")
    assert repr(b) == str(b) == f"{b}" == expected
    dense = b.to_dense()
    assert repr(dense) == repr(tb.to_dense()).replace("torch.", "ember.")
    assert dense is b  # as PyTorch's Tensor.to_dense on a strided tensor


def test_repr_of_documented_examples():
    assert repr(causal_upper_left(3, 4)) == (
        "tensor([[ True, False, False, False],\n"
        "        [ True,  True, False, False],\n"
        "        [ True,  True,  True, False]])")
    assert repr(causal_lower_right(3, 4)) == (
        "tensor([[ True,  True, False, False],\n"
        "        [ True,  True,  True, False],\n"
        "        [ True,  True,  True,  True]])")


def test_materialize_on_a_device():
    b = causal_lower_right(2, 3)
    m = b._materialize(ember.device("cpu"))
    np.testing.assert_array_equal(m.numpy(), [[True, True, False], [True, True, True]])
    assert b._upper_left("cpu").tolist() == [[True, False, False], [True, True, False]]
    assert b._lower_right("cpu").tolist() == m.tolist()


def test_lower_right_with_longer_query_warns_as_torch():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        causal_lower_right(4, 3)
        causal_lower_right(3, 4)
        causal_upper_left(4, 3)
        CausalBias(CausalVariant.LOWER_RIGHT, 3, 3)
    assert [str(w.message) for w in got] == [
        "Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!"]
    assert got[0].category is UserWarning
    with pytest.warns(UserWarning, match="Lower right causal bias") as direct:
        CausalBias(CausalVariant.LOWER_RIGHT, 5, 2)
    assert direct[0].filename == __file__  # stacklevel=2: the constructor's caller


@pytest.mark.parametrize("fn", [causal_upper_left, causal_lower_right])
@pytest.mark.parametrize("size", [(3,), (2, 3, 4), ((3, 4),), ()])
def test_factories_take_exactly_two_sizes(fn, size):
    with pytest.raises(AssertionError, match=f"^{fn.__name__} only supports 2D tensors$"):
        fn(*size)
    with pytest.raises(AssertionError, match=f"^{fn.__name__} only supports 2D tensors$"):
        getattr(TB, fn.__name__)(*size)


@pytest.mark.parametrize("variant", [1, 2, "UPPER_LEFT", None])
def test_bias_needs_a_causal_variant(variant):
    with pytest.raises(AssertionError,
                       match=f"^variant must be a CausalVariant, got {type(variant).__name__}$"):
        CausalBias(variant, 3, 4)


def test_negative_length_is_torchs_error():
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
        causal_upper_left(-1, 4)


# -- scaled_dot_product_attention -----------------------------------------------------------------

@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", LENGTHS)
@pytest.mark.parametrize("lead", [(), (2,), (2, 3)], ids=["2d", "3d", "4d"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_forward_and_gradients_match_torch(name, L, S, lead, dtype):
    arrays = _qkv(L, S, lead, dtype)
    qkv = [ember.tensor(a, requires_grad=True) for a in arrays]
    tqkv = [torch.tensor(a, requires_grad=True) for a in arrays]
    b, tb = _both(name, L, S)
    out = F.scaled_dot_product_attention(*qkv, b)
    tout = torch.nn.functional.scaled_dot_product_attention(*tqkv, tb)
    assert type(out) is ember.Tensor and out.shape == tuple(tout.shape)
    np.testing.assert_allclose(_np(out), _np(tout), **_tol(dtype))
    if name == "causal_lower_right" and L > S:  # rows with no key: zeros, as torch 2.13's CPU
        assert not np.isnan(_np(tout)).any()
        np.testing.assert_array_equal(_np(out)[..., : L - S, :], 0)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(ember.tensor(g))
    tout.backward(torch.tensor(g))
    for x, tx in zip(qkv, tqkv):
        np.testing.assert_allclose(_np(x.grad), _np(tx.grad), **_tol(dtype))


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", LENGTHS)
def test_sdpa_with_bias_gradcheck(name, L, S):
    qkv = [ember.tensor(a, requires_grad=True) for a in _qkv(L, S, (2,), np.float64, e=3)]
    b = _quiet(getattr(ember.nn.attention.bias, name), L, S)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, b)
    assert ember.autograd.gradcheck(fn, qkv)
    assert ember.autograd.gradgradcheck(fn, qkv)


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", LENGTHS)
def test_sdpa_keyword_mask_scale_and_gqa_match_torch(name, L, S):
    arrays = _qkv(L, S, (1, 4), np.float64)
    arrays[1], arrays[2] = arrays[1][:, :2], arrays[2][:, :2]  # 2 key/value heads for 4
    b, tb = _both(name, L, S)
    kw = dict(dropout_p=0.0, scale=0.7, enable_gqa=True)
    out = F.scaled_dot_product_attention(*map(ember.tensor, arrays), attn_mask=b, **kw)
    tout = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, arrays),
                                                            attn_mask=tb, **kw)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-12, atol=1e-12)
    # positional, as F's signature orders them
    out = F.scaled_dot_product_attention(*map(ember.tensor, arrays), b, 0.0, False, 0.7, True)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (6, 3)])
def test_upper_left_is_is_causal_and_ignores_the_bias_lengths_as_torch(L, S):
    """PyTorch runs an upper-left bias (or any bias with equal lengths) as ``is_causal=True``
    without a mask, whatever lengths the bias has: the bias's own mask is not used."""
    q, k, v = _qkv(L, S, (2,), np.float64)
    causal = F.scaled_dot_product_attention(*map(ember.tensor, (q, k, v)), is_causal=True)
    for bias in (causal_upper_left(L, S), causal_upper_left(1, 9), causal_lower_right(7, 7)):
        out = F.scaled_dot_product_attention(*map(ember.tensor, (q, k, v)), bias)
        np.testing.assert_array_equal(_np(out), _np(causal))
    tout = torch.nn.functional.scaled_dot_product_attention(
        *map(torch.tensor, (q, k, v)), TB.causal_upper_left(1, 9))
    np.testing.assert_allclose(_np(causal), _np(tout), rtol=1e-12, atol=1e-12)


def test_lower_right_differs_from_is_causal_when_lengths_differ():
    q, k, v = map(ember.tensor, _qkv(3, 6, (), np.float64))
    lower = F.scaled_dot_product_attention(q, k, v, causal_lower_right(3, 6))
    masked = F.scaled_dot_product_attention(
        q, k, v, ember.tril(ember.ones(3, 6, dtype=ember.bool), diagonal=3))
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_array_equal(_np(lower), _np(masked))
    assert not np.allclose(_np(lower), _np(causal))


@pytest.mark.parametrize("name", FACTORIES)
def test_is_causal_with_a_bias_is_torchs_error(name):
    q = ember.randn(2, 3, 4)
    b, tb = _both(name, 3, 3)
    with pytest.raises(ValueError, match="^CausalBias should not be used with causal=True$"):
        F.scaled_dot_product_attention(q, q, q, b, is_causal=True)
    tq = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="^CausalBias should not be used with causal=True$"):
        torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, tb, is_causal=True)


def test_lower_right_input_checks_are_torchs():
    q, k = ember.randn(2, 3, 4), ember.randn(2, 5, 4)
    b = causal_lower_right(3, 5)
    with pytest.raises(ValueError, match=r"^Expected query, key, and value to have the same "
                       r"dtype, but got query.dtype: ember.float32, key.dtype: ember.float64, "
                       r"and value.dtype: ember.float32 instead.$"):
        F.scaled_dot_product_attention(q, k.double(), k, b)
    tq, tk = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"same dtype, but got query.dtype: torch.float32, "
                       r"key.dtype: torch.float64, and value.dtype: torch.float32 instead.$"):
        torch.nn.functional.scaled_dot_product_attention(tq, tk.double(), tk,
                                                         TB.causal_lower_right(3, 5))
    with pytest.raises(ValueError, match=r"^Expected query, key, and value to all be  at least "
                       r"2 dimensional, but got query.dim: 1, key.dim: 2 and value.dim: 2"):
        F.scaled_dot_product_attention(ember.randn(4), k[0], k[0], b)


def test_lower_right_input_checks_name_devices():
    ember.testing.register_strict_device()
    b = causal_lower_right(3, 5)
    q = ember.randn(3, 4, device="cpu")
    k = ember.randn(5, 4, device="strict")
    with pytest.raises(ValueError, match=r"^Expected query, key, and value to have the same "
                       r"device type, but got query.device: cpu, key.device: strict(:0)?, and "
                       r"value.device: strict(:0)? instead.$"):
        F.scaled_dot_product_attention(q, k, k, b)


def test_lower_right_mask_is_made_on_the_query_device():
    ember.testing.register_strict_device()
    arrays = _qkv(3, 5, (2,), np.float64)
    b = causal_lower_right(3, 5)
    assert b.device == ember.device("cpu")
    out = F.scaled_dot_product_attention(*(ember.tensor(a, device="strict") for a in arrays), b)
    assert out.device.type == "strict"
    ref = F.scaled_dot_product_attention(*(ember.tensor(a, device="cpu") for a in arrays), b)
    np.testing.assert_array_equal(out.numpy(force=True), _np(ref))


def test_warn_for_unfused_kernels_flag():
    import ember.nn.attention as A

    q, k = ember.randn(2, 3, 4), ember.randn(2, 5, 4)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        F.scaled_dot_product_attention(q, k, k, causal_lower_right(3, 5))
    assert not got
    A.WARN_FOR_UNFUSED_KERNELS = True
    try:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            F.scaled_dot_product_attention(q, k, k, causal_lower_right(3, 5))
            F.scaled_dot_product_attention(q, q, q, causal_upper_left(3, 3))  # no warning
    finally:
        A.WARN_FOR_UNFUSED_KERNELS = False
    assert [str(w.message) for w in got] == ["Efficient attention can't be used because:",
                                             "Flash attention can't be used because:"]


@pytest.mark.parametrize("name", FACTORIES)
def test_pickle_and_deepcopy_keep_the_bias(name):
    import copy
    import pickle

    b = _quiet(getattr(ember.nn.attention.bias, name), 5, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no construction warning again, as in torch
        for c in (pickle.loads(pickle.dumps(b)), copy.deepcopy(b)):
            assert type(c) is CausalBias and c is not b
            assert (c.variant, c.seq_len_q, c.seq_len_kv) == (b.variant, 5, 3)
            assert repr(c) == repr(b)
    q = ember.randn(5, 4)
    k = ember.randn(3, 4)
    np.testing.assert_array_equal(
        _np(F.scaled_dot_product_attention(q, k, k, pickle.loads(pickle.dumps(b)))),
        _np(F.scaled_dot_product_attention(q, k, k, b)))


def test_other_functions_see_the_mask():
    b = causal_lower_right(2, 3)
    assert b.sum().item() == 5
    assert b.logical_not().tolist() == [[False, False, True], [False, False, False]]


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("L,S", LENGTHS)
def test_compiled_sdpa_with_bias(name, L, S):
    # on the CPU: ember.compile's capture records the op with the bias as a tensor input (it
    # does not call CausalBias.__torch_function__), and the bias lives on the CPU
    arrays = _qkv(L, S, (2, 2), np.float32)
    qkv = [ember.tensor(a, device="cpu") for a in arrays]
    b, tb = _both(name, L, S)
    compiled = ember.compile(F.scaled_dot_product_attention, fullgraph=True)
    eager = F.scaled_dot_product_attention(*qkv, b)
    for _ in range(2):  # capture, then replay
        np.testing.assert_allclose(_np(compiled(*qkv, b)), _np(eager), rtol=1e-6, atol=1e-6)
    tout = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, arrays), tb)
    np.testing.assert_allclose(_np(eager), _np(tout), rtol=1e-5, atol=1e-6)
    other = _quiet(causal_upper_left if name == "causal_lower_right" else causal_lower_right,
                   L, S)
    np.testing.assert_allclose(_np(compiled(*qkv, other)),
                               _np(F.scaled_dot_product_attention(*qkv, other)),
                               rtol=1e-6, atol=1e-6)


def test_submodule_is_reachable_and_torch_alias_runs_the_tutorial(tmp_path):
    import ember.nn.attention as A

    assert A.bias is ember.nn.attention.bias
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        A.nope  # noqa: B018
    script = tmp_path / "tutorial.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.nn.attention.bias import causal_lower_right, causal_upper_left\n"
        "q = torch.randn(2, 4, 3, 8, device='cpu')\n"
        "k = torch.randn(2, 4, 5, 8, device='cpu')\n"
        "v = torch.randn(2, 4, 5, 8, device='cpu')\n"
        "attn_bias = causal_upper_left(3, 5)\n"
        "out = F.scaled_dot_product_attention(q, k, v, attn_bias)\n"
        "out_is_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
        "torch.testing.assert_close(out, out_is_causal)\n"
        "attn_bias = causal_lower_right(3, 5)\n"
        "out = F.scaled_dot_product_attention(q, k, v, attn_bias)\n"
        "compiled_sdpa = torch.compile(F.scaled_dot_product_attention, fullgraph=True)\n"
        "torch.testing.assert_close(compiled_sdpa(q, k, v, attn_bias), out)\n"
        "print(type(attn_bias))\n"
        "print(attn_bias.to_dense())\n"
        "print(attn_bias)\n")
    run = subprocess.run([sys.executable, "-m", "ember.as_torch", str(script)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    mask = ("tensor([[ True,  True,  True, False, False],\n"
            "        [ True,  True,  True,  True, False],\n"
            "        [ True,  True,  True,  True,  True]])\n")
    assert run.stdout == f"<class 'ember.nn.attention.bias.CausalBias'>\n{mask}{mask}"
