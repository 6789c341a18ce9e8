"""``ember.ops.aten``'s attention kernels (``_scaled_dot_product_flash_attention_for_cpu``,
``_scaled_dot_product_attention_math``): PyTorch's results, errors and gradients, and how
selective checkpointing names ``F.scaled_dot_product_attention`` (as PyTorch's CPU
dispatcher does)."""

import functools

import numpy as np
import pytest
from testutils import assert_allclose, outcome

import ember
from ember.autograd import gradcheck
from ember.ops import aten
from ember.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

FLASH = "_scaled_dot_product_flash_attention_for_cpu"
MATH = "_scaled_dot_product_attention_math"


def _qkv(lib, *shapes, dtype="float64", seed=0, device=None):
    g = np.random.default_rng(seed)
    return [lib.tensor(g.standard_normal(s), dtype=getattr(lib, dtype), device=device)
            for s in shapes]


ERRORS = [
    (FLASH, [(2, 3, 5, 4)] * 3, {"dropout_p": 0.2}),
    (FLASH, [(3, 5, 4)] * 3, {}),
    (FLASH, [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)], {}),
    (FLASH, [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)], {"attn_mask": (3, 5, 6)}),
    (FLASH, [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)], {"attn_mask": "bool"}),
    (MATH, [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4)], {"attn_mask": (5, 6),
                                                        "is_causal": True}),
]


@pytest.mark.parametrize("name,shapes,kwargs", ERRORS, ids=range(len(ERRORS)))
def test_errors_are_pytorchs(name, shapes, kwargs):
    pytest.importorskip("torch")

    def call(lib):
        args = _qkv(lib, *shapes)
        kw = dict(kwargs)
        if kw.get("attn_mask") == "bool":
            kw["attn_mask"] = lib.ones(5, 6, dtype=lib.bool)
        elif "attn_mask" in kw:
            kw["attn_mask"] = _qkv(lib, kw["attn_mask"], seed=1)[0]
        return getattr(lib.ops.aten, name).default(*args, **kw)

    import torch

    ours, theirs = outcome(call, ember), outcome(call, torch)
    assert ours[0] == theirs[0] == "RuntimeError" and ours == theirs


def test_wrong_dtypes_are_refused_as_pytorch():
    torch = pytest.importorskip("torch")

    def call(lib, dtypes):
        q, k, v = _qkv(lib, (2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4))
        q, k = q.to(getattr(lib, dtypes[0])), k.to(getattr(lib, dtypes[1]))
        return lambda: getattr(lib.ops.aten, FLASH)(q, k, v.to(q.dtype))

    for dtypes in (("int32", "int32"), ("float64", "float32")):
        with pytest.raises(RuntimeError) as theirs:
            call(torch, dtypes)()
        with pytest.raises(RuntimeError, match=str(theirs.value).splitlines()[0]):
            call(ember, dtypes)()


def test_outputs_and_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv(ember, (2, 2, 3, 4), (2, 2, 5, 4),
                                                  (2, 2, 5, 4)))
    mask = _qkv(ember, (3, 5), seed=2)[0]
    out, lse = getattr(aten, FLASH).default(q, k, v, attn_mask=mask, is_causal=True)
    scores = (q @ k.mT) / 2 + mask
    scores = scores.masked_fill(~ember.ones(3, 5, dtype=ember.bool).tril(), float("-inf"))
    assert_allclose(out, scores.softmax(-1) @ v, rtol=1e-12)
    assert_allclose(lse, scores.logsumexp(-1), rtol=1e-12)
    assert not lse.requires_grad and out.requires_grad
    assert gradcheck(lambda a, b, c: getattr(aten, FLASH).default(a, b, c, is_causal=True)[0],
                     (q, k, v))
    assert gradcheck(lambda a, b, c: getattr(aten, MATH).default(a, b, c, mask, scale=0.7),
                     (q, k, v))


def test_selective_checkpointing_names_attention_as_pytorchs_cpu_does():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(op)
        return op == getattr(aten, FLASH).default

    # on the CPU: PyTorch's CPU dispatcher is what is mirrored
    q, k, v = (t.requires_grad_() for t in _qkv(ember, (2, 2, 3, 4), (2, 2, 5, 4),
                                                  (2, 2, 5, 4), device="cpu"))
    F = pytest.importorskip("ember.nn.functional")

    def fn(q, k, v):
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b = F.scaled_dot_product_attention(q[0], k[0], v[0])  # 3-D: written out
        return a.sum() + b.sum()

    out = checkpoint(fn, q, k, v, use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts,
                                                  policy))
    assert seen[0] == getattr(aten, FLASH).default
    assert aten.scaled_dot_product_attention.default in seen
    out.backward()
    grads = [t.grad for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    fn(q, k, v).backward()
    for a, b in zip(grads, (q.grad, k.grad, v.grad)):
        assert_allclose(a, b, rtol=1e-12)


def test_the_names_exist_on_ember_ops_as_torch():
    assert str(getattr(aten, FLASH).default) == f"aten.{FLASH}.default"
    assert getattr(aten, MATH).overloads() == ["default"]
