"""vmap over every op that has a batching rule, against a per-example loop.

Driven by the op database (``ember.ops.opdb``): for each op with a rule
(``ember.ops.batching_rules.covered()``), three draws of each sample input (same shapes,
different values) are stacked into a batch; ``vmap(op)`` over the batch must equal the op
called on each example and stacked, with every tensor argument batched and with only the
first one batched (the others shared). A rule that declines a call (``NotImplemented``)
would still pass through the loop fallback, so the test also checks that the rule ran.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._functorch import _batched
from ember.func import vmap
from ember.ops.batching_rules import covered
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

ENTRIES = load_all()
RULED = [n for n in covered() if n in ENTRIES and not OPS[n].random]
B = 3


def _public(name):
    """The op as a user calls it (module attribute or method), looked up at call time so the
    dispatching version is used inside vmap."""
    import ember.nn.functional as F

    for ns in (ember, ember.linalg, F):
        if name in getattr(ns, "__dict__", {}) and callable(getattr(ns, name)):
            return lambda *a, **k: getattr(ns, name)(*a, **k)
    info = OPS[name]
    if info.method:
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    # exported elsewhere (ember.special.*: a namespace that does not dispatch yet): the op's
    # dispatching wrapper, as a registered namespace would hold it
    from ember.overrides import _dispatching

    return _dispatching(info.fn, name)


def _same_structure(samples) -> bool:
    first = samples[0]
    for s in samples[1:]:
        ta, tb = first.tensors(), s.tensors()
        if len(ta) != len(tb) or any(tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype
                                     for a, b in zip(ta, tb)):
            return False
        if repr(first.map_tensors(lambda t: 0)) != repr(s.map_tensors(lambda t: 0)):
            return False
    return True


def _draws(name):
    """Per sample: B draws of it (same shapes and options, different values)."""
    e = ENTRIES[name]
    dtype = "float64" if "float64" in e.dtypes else e.dtypes[-1]
    streams = [list(e.samples(None, dtype, False))[:4] for _ in range(B)]
    out = []
    for draws in zip(*streams):
        if _same_structure(draws) and draws[0].tensors():
            out.append(draws)
    return out


def _flatten_call(sample):
    """``(tensors, rebuild)``: the sample's tensors, and ``rebuild(fn, tensors)`` calling
    ``fn`` with them put back."""
    tensors = sample.tensors()

    def rebuild(fn, ts):
        it = iter(ts)
        s = sample.map_tensors(lambda t: next(it))
        return s.call(fn)

    return tensors, rebuild


def _as_list(out):
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _as_list(x)]
    return []


#: calls that vmap refuses as PyTorch does (the loop would run them): op -> (does the sample's
#: call with only its first tensor batched refuse?, the error)
_REFUSED_SHARED = {
    # training mode with shared running statistics: they would be updated by every example
    "batch_norm": (lambda s: s.args[4] is True and s.args[2] is not None,
                   "Batch norm got a batched tensor as input while the running_mean"),
    "instance_norm": (lambda s: s.args[4] is True and s.args[2] is not None,
                      "Batch norm got a batched tensor as input while the running_mean"),
}


def _compare(name, draws, shared: bool):
    fn = _public(name)
    per = [_flatten_call(d) for d in draws]
    tensors = [p[0] for p in per]
    rebuild = per[0][1]
    try:
        expected = [rebuild(fn, ts) for ts in tensors]
    except Exception:
        pytest.skip("the sample does not run per example")
    n = len(tensors[0])
    if shared:  # only the first tensor batched, the others shared (the first draw's)
        stacked = [ember.stack([ts[0] for ts in tensors])] + list(tensors[0][1:])
        in_dims = (0,) + (None,) * (n - 1)
        expected = [rebuild(fn, [ts[0]] + list(tensors[0][1:])) for ts in tensors]
    else:
        stacked = [ember.stack([ts[i] for ts in tensors]) for i in range(n)]
        in_dims = 0
    ran = []
    real = _batched._loop

    def spy(lvl, func, args, kwargs, key, same_random=False):
        ran.append(key)
        return real(lvl, func, args, kwargs, key, same_random)

    refused = _REFUSED_SHARED.get(name)
    if shared and refused is not None and refused[0](draws[0]):
        with pytest.raises(RuntimeError, match=refused[1]):
            vmap(lambda *ts: rebuild(fn, list(ts)), in_dims=in_dims)(*stacked)
        return None
    _batched._loop = spy
    try:
        got = vmap(lambda *ts: rebuild(fn, list(ts)), in_dims=in_dims)(*stacked)
    finally:
        _batched._loop = real
    exp_list = [_as_list(x) for x in expected]
    got_list = _as_list(got)
    assert len(got_list) == len(exp_list[0])
    for i, g in enumerate(got_list):
        want = ember.stack([e[i] for e in exp_list])
        assert tuple(g.shape) == tuple(want.shape), (name, g.shape, want.shape)
        got_np, want_np = g.detach().numpy(), want.detach().numpy()
        if not np.iscomplexobj(got_np):
            got_np, want_np = got_np.astype(np.float64), want_np.astype(np.float64)
        if name == "svd" and i != 1:
            # singular vectors are defined up to a sign per pair; a batched solver (cuSOLVER's)
            # may pick other signs than one matrix at a time: compare with the columns of U
            # and V (torch.svd's V, not Vh) sign-aligned
            flip = np.sign(np.sum(got_np * want_np, axis=-2, keepdims=True))
            got_np = got_np * np.where(flip == 0, 1, flip)
        np.testing.assert_allclose(got_np, want_np, rtol=1e-6, atol=1e-8, err_msg=name)
    return ran


@pytest.mark.parametrize("name", RULED)
def test_vmap_matches_loop(name):
    """All tensor operands batched, then (where there are several) only the first: the
    results equal the loop's, and the rule itself handles at least one of the calls (a rule
    may leave some argument combinations to the loop, by design)."""
    draws_list = _draws(name)
    if not draws_list:
        pytest.skip("no sample with tensors of one structure")
    runs = declined = 0
    for draws in draws_list[:5]:
        for shared in (False, True):
            if shared and len(draws[0].tensors()) < 2:
                continue
            ran = _compare(name, draws, shared=shared)
            if ran is None:  # refused, as PyTorch refuses
                continue
            runs += 1
            declined += name in ran
    assert declined < runs, f"{name}: the rule declined every call ({runs})"


def test_rules_are_listed():
    names = ember.func.batch_rules()
    for n in ("add", "sum", "matmul", "linear", "conv2d", "view", "index", "add_"):
        assert n in names
    assert OPS["add"].batch_rule is not None
    assert OPS["nonzero"].batch_rule is None  # data-dependent shape: the loop
