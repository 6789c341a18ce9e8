"""Selective activation checkpointing (``create_selective_checkpoint_contexts``, PyTorch's
SAC): the policy's kept outputs are not computed again by the recomputation, gradients equal
plain checkpointing's, and the errors are PyTorch's. PyTorch is the oracle where installed: the
same programs run on both, counting the calls of a custom op to see what was recomputed."""

import functools
import importlib

import pytest
from testutils import assert_allclose, randn64, to_torch

import ember
import ember.nn as nn
from ember.utils.checkpoint import (
    SAC_IGNORED_OPS,
    CheckpointPolicy,
    GraphExecGroup,
    SelectiveCheckpointContext,
    checkpoint,
    create_selective_checkpoint_contexts,
)

_COUNTED: dict = {}


def _lib(name: str):
    """``(module, checkpoint module, counted op, call counter)`` for ember or torch."""
    if name not in _COUNTED:
        lib = pytest.importorskip(name)
        cp = importlib.import_module(f"{name}.utils.checkpoint")
        calls = {"n": 0}

        @lib.library.custom_op(f"sac_{name}::sin_counted", mutates_args=())
        def sin_counted(x: lib.Tensor) -> lib.Tensor:
            calls["n"] += 1
            return x.sin()

        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

        sin_counted.register_autograd(backward, setup_context=setup)
        op = getattr(lib.ops, f"sac_{name}").sin_counted.default
        _COUNTED[name] = (lib, cp, sin_counted, op, calls)
    return _COUNTED[name]


def _inputs(lib_name: str):
    x, w = randn64(4, 4, rng=11), randn64(4, 4, rng=12)
    if lib_name == "torch":
        return to_torch(x).requires_grad_(), to_torch(w).requires_grad_()
    return x.requires_grad_(), w.requires_grad_()


def _run(lib_name: str, keep, retain: bool = False):
    """Forward and backward of ``mm(sin_counted(x), w).relu().sum()`` checkpointed with
    ``keep`` (a list of ops, or a policy made from the counted op and aten): the counted op's
    calls in the forward and in all, and the gradients."""
    lib, cp, sin_counted, op, calls = _lib(lib_name)
    calls["n"] = 0
    x, w = _inputs(lib_name)

    def fn(x, w):
        return lib.mm(sin_counted(x), w).relu().sum()

    policy = keep(lib, op) if callable(keep) else [o(lib, op) for o in keep]
    out = cp.checkpoint(fn, x, w, use_reentrant=False,
                        context_fn=functools.partial(cp.create_selective_checkpoint_contexts,
                                                     policy))
    forward = calls["n"]
    out.backward(retain_graph=retain)
    return forward, calls["n"], x.grad, w.grad, out


def _counted(lib, op):
    return op


def _mm(lib, op):
    return lib.ops.aten.mm.default


@pytest.mark.parametrize("keep,runs", [([_counted], 1), ([_mm], 2), ([_counted, _mm], 1),
                                       ([], 2)])
def test_kept_ops_are_not_recomputed_as_in_torch(keep, runs):
    forward, total, gx, gw, _ = _run("ember", keep)
    assert (forward, total) == (1, runs)
    ex, ew = randn64(4, 4, rng=11).requires_grad_(), randn64(4, 4, rng=12).requires_grad_()
    ember.mm(ex.sin(), ew).relu().sum().backward()
    assert_allclose(gx, ex.grad, rtol=1e-12)
    assert_allclose(gw, ew.grad, rtol=1e-12)
    pytest.importorskip("torch")
    t_forward, t_total, tx, tw, _ = _run("torch", keep)
    assert (t_forward, t_total) == (forward, total)
    assert_allclose(gx, tx, rtol=1e-12)
    assert_allclose(gw, tw, rtol=1e-12)


@pytest.mark.parametrize("policy", [CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
                                    CheckpointPolicy.MUST_CPU_OFFLOAD, True,
                                    CheckpointPolicy.MUST_RECOMPUTE, False])
def test_policy_functions_and_their_answers(policy):
    seen = []

    def make(lib, op):
        def policy_fn(ctx, func, *args, **kwargs):
            seen.append(func)
            assert isinstance(ctx, type(ctx)) and ctx.is_recompute is False
            assert ctx.op_output is not None
            return policy if func == op else CheckpointPolicy.PREFER_RECOMPUTE
        return policy_fn

    forward, total, *_ = _run("ember", make)
    keeps = policy is True or (policy is not False and "RECOMPUTE" not in policy.name)
    assert (forward, total) == (1, 1 if keeps else 2)
    counted = _lib("ember")[3]
    assert seen.count(counted) == 1  # asked in the forward only
    assert ember.ops.aten.mm.default in seen and ember.ops.aten.relu.default in seen


def test_linear_layers_are_reported_as_torch_decomposes_them():
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(op)
        return op in (ember.ops.aten.mm.default, ember.ops.aten.addmm.default)

    lin1, lin2 = nn.Linear(8, 16).double(), nn.Linear(16, 4, bias=False).double()
    x = randn64(5, 8, rng=3).requires_grad_()

    def fn(x):
        h = lin1(x).relu()
        return ember.sigmoid(lin2(h)) * ember.matmul(h, h.mT).sum() + ember.matmul(
            h.view(5, 4, 4), h.view(5, 4, 4)).sum()

    out = checkpoint(fn, x, use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    aten = ember.ops.aten
    assert seen[:2] == [aten.addmm.default, aten.relu.default]
    assert aten.mm.default in seen and aten.bmm.default in seen
    out.sum().backward()
    grads = [x.grad, lin1.weight.grad, lin2.weight.grad]
    for t in (x, lin1.weight, lin2.weight):
        t.grad = None
    fn(x).sum().backward()
    for a, b in zip(grads, [x.grad, lin1.weight.grad, lin2.weight.grad]):
        assert_allclose(a, b, rtol=1e-12)


def test_ops_that_write_or_return_views_are_recomputed():
    """An in-place op and a view are recomputed even when the policy keeps them, dropout is
    kept with its mask; the gradients are plain checkpointing's. (The clone that the in-place
    op changes is recomputed too: a kept output changed in place raises, as the next test
    shows.)"""
    x = randn64(6, 6, rng=21).requires_grad_()

    def fn(t):
        y = ember.nn.functional.dropout(t.exp(), 0.5, training=True)
        z = y[1:].clone()
        z.mul_(2)
        return (z.tanh() * t[1:]).sum()

    ember.manual_seed(3)
    out = checkpoint(fn, x, use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts,
                                                  lambda ctx, op, *a, **k:
                                                  op != ember.ops.aten.clone.default))
    out.backward()
    got = x.grad
    x.grad = None
    ember.manual_seed(3)
    checkpoint(fn, x, use_reentrant=False).backward()
    assert_allclose(got, x.grad, rtol=1e-12)


def test_backward_twice_and_mutation_raise_as_in_torch():
    keep = [_counted]
    for lib_name in ("ember", "torch"):
        if lib_name == "torch":
            pytest.importorskip("torch")
        *_, out = _run(lib_name, keep, retain=True)
        with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
            out.backward()

    def mutated(lib_name, allow):
        lib, cp, sin_counted, op, _ = _lib(lib_name)
        x, w = _inputs(lib_name)

        def fn(x, w):
            y = sin_counted(x)  # kept
            z = (y * w).relu().sum()
            y.add_(1)  # the kept output changed after the forward used it
            return z

        out = cp.checkpoint(fn, x, w, use_reentrant=False, context_fn=functools.partial(
            cp.create_selective_checkpoint_contexts, [op], allow_cache_entry_mutation=allow))
        out.backward()
        return x.grad

    msg = "Tensor cached during selective activation checkpoint has been mutated"
    with pytest.raises(RuntimeError, match=msg):
        mutated("ember", False)
    allowed = mutated("ember", True)
    pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=msg):
        mutated("torch", False)
    assert_allclose(allowed, mutated("torch", True), rtol=1e-12)


def test_bad_policies_raise_as_in_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    for bad in ([ember.ops.aten.mm], [ember.mm], 3):
        tbad = [torch.ops.aten.mm] if bad == [ember.ops.aten.mm] else (
            [torch.mm] if isinstance(bad, list) else 3)
        with pytest.raises(Exception) as theirs:
            tcp.create_selective_checkpoint_contexts(tbad)
        with pytest.raises(type(theirs.value)) as ours:
            create_selective_checkpoint_contexts(bad)
        assert str(ours.value).split(" but got:")[0] == str(theirs.value).split(" but got:")[0]
        assert str(ours.value).split(". ")[-1] == str(theirs.value).split(". ")[-1]


def test_public_names():
    assert ember.ops.aten.detach.default in SAC_IGNORED_OPS
    assert [p.name for p in CheckpointPolicy] == [
        "MUST_SAVE", "PREFER_SAVE", "MUST_RECOMPUTE", "PREFER_RECOMPUTE", "MUST_CPU_OFFLOAD",
        "PREFER_CPU_OFFLOAD"]
    ctx = SelectiveCheckpointContext(is_recompute=False)
    assert ctx.is_recompute is False and ctx.op_output is None


def test_graph_exec_group_recomputes_a_region_once_for_several_backwards():
    runs = {"n": 0}

    def fn(t):
        runs["n"] += 1
        return t.sin(), t.exp()

    x = randn64(3, rng=31).requires_grad_()
    a, b = checkpoint(fn, x, use_reentrant=False)
    with GraphExecGroup() as group:
        assert GraphExecGroup._get_current_group() is group
        with pytest.raises(RuntimeError, match="GraphExecGroup contexts cannot be nested"):
            with GraphExecGroup():
                pass
        a.sum().backward()
        b.sum().backward()
    assert GraphExecGroup._get_current_group() is None
    assert runs["n"] == 2  # the forward, then one recomputation for both backwards
    assert_allclose(x.grad, (x.detach().cos() + x.detach().exp()), rtol=1e-12)
    a, b = checkpoint(fn, x, use_reentrant=False)
    a.sum().backward()
    b.sum().backward()
    assert runs["n"] == 5  # without a group: one recomputation per backward


def _layer_grads(contexts, dropout: float, rng: int):
    """The input's and parameters' gradients of a float64 Transformer layer (training, with
    ``dropout``) checkpointed with the selective ``contexts``, then checkpointed plainly."""
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=dropout, batch_first=True,
                                       dtype=ember.float64)
    x = randn64(3, 5, 16, rng=rng).requires_grad_()

    def grads(**kwargs):
        for t in (x, *layer.parameters()):
            t.grad = None
        ember.manual_seed(5)
        checkpoint(layer, x, use_reentrant=False, **kwargs).square().sum().backward()
        return [t.grad for t in (x, *layer.parameters())]

    return grads(context_fn=lambda: contexts), grads()


def test_a_transformer_layer_keeps_its_products_and_gets_plain_gradients():
    """nn.Linear on 3-D input packs its input flattened to a matrix: the recomputation packs
    its own input reshaped the same way, so the four products of a Transformer layer are
    kept (and not recomputed), dropout included the gradients are plain checkpointing's."""
    from ember.utils import checkpoint as cp

    contexts = create_selective_checkpoint_contexts([ember.ops.aten.addmm.default])
    selective, plain = _layer_grads(contexts, dropout=0.1, rng=41)
    kept = [e for d in contexts[0].storage.values() for e in d.values()
            if e is not cp._RECOMPUTE]
    assert len(kept) == 4 and all(e is cp._CONSUMED for e in kept)  # used by the backward
    for a, b in zip(selective, plain):
        assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("policy", [CheckpointPolicy.PREFER_SAVE,
                                    CheckpointPolicy.PREFER_CPU_OFFLOAD])
def test_keeping_everything_keeps_the_values_ops_save_of_their_own(policy):
    """Dropout's mask, layer norm's statistics, attention's weights: what a node saves that
    is neither its op's input nor its output is kept with the output, so a policy that keeps
    every op recomputes nothing that saves, with plain checkpointing's gradients (offloaded
    to the CPU and back, on a strict run's device)."""
    from ember.utils import checkpoint as cp

    contexts = create_selective_checkpoint_contexts(lambda ctx, op, *a, **k: policy)
    selective, plain = _layer_grads(contexts, dropout=0.2, rng=43)
    names = {getattr(f, "__name__", "") for f, d in contexts[0].storage.items()
             if any(e is cp._CONSUMED for e in d.values())}
    assert {"dropout", "layer_norm", "linear", "scaled_dot_product_attention"} <= names
    for a, b in zip(selective, plain):
        assert_allclose(a, b, rtol=1e-12)
