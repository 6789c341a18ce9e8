"""``ember.utils.checkpoint`` on ``ember.nn`` models: an MLP, dropout with batch norm in train
mode, a TransformerEncoder stack with each layer checkpointed, ``checkpoint_sequential`` on
``nn.Sequential``, and parity with ``torch.utils.checkpoint`` on the same weights."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import assert_allclose, copy_state_to_torch, to_numpy, to_torch

import ember
import ember.nn as nn
from ember.utils.checkpoint import checkpoint, checkpoint_sequential

BOTH = pytest.mark.parametrize("reentrant", [False, True], ids=["non_reentrant", "reentrant"])


def _grads(model, x, run, seed=11):
    """Output, parameter gradients and input gradient of ``run(x)``'s loss."""
    model.zero_grad(set_to_none=True)
    x.grad = None
    ember.manual_seed(seed)
    y = run(x)
    y.square().mean().backward()
    return to_numpy(y), {n: to_numpy(p.grad) for n, p in model.named_parameters()}, \
        to_numpy(x.grad)


def _assert_same(a, b, rtol=1e-12):
    ya, ga, xa = a
    yb, gb, xb = b
    np.testing.assert_allclose(ya, yb, rtol=rtol, atol=1e-13)
    assert ga.keys() == gb.keys()
    for name in ga:
        np.testing.assert_allclose(ga[name], gb[name], rtol=rtol, atol=1e-13, err_msg=name)
    np.testing.assert_allclose(xa, xb, rtol=rtol, atol=1e-13)


def _mlp(depth=6, width=12, dropout=0.0, batch_norm=False):
    ember.manual_seed(0)
    layers = [nn.Linear(5, width, dtype=ember.float64)]
    for _ in range(depth):
        if batch_norm:
            layers.append(nn.BatchNorm1d(width, dtype=ember.float64))
        layers.append(nn.Tanh())
        if dropout:
            layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(width, width, dtype=ember.float64))
    layers.append(nn.Linear(width, 3, dtype=ember.float64))
    return nn.Sequential(*layers)


def _input(*shape, seed=1):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.standard_normal(shape), requires_grad=True)


@BOTH
def test_mlp_module(reentrant):
    model = _mlp()
    x = _input(7, 5)
    _assert_same(_grads(model, x, lambda t: checkpoint(model, t, use_reentrant=reentrant)),
                 _grads(model, x, model))


@BOTH
def test_dropout_and_batch_norm_in_train_mode(reentrant):
    model = _mlp(dropout=0.3, batch_norm=True).train()
    x = _input(16, 5)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    plain = _grads(model, x, model)
    model.load_state_dict(state)
    ckpt = _grads(model, x, lambda t: checkpoint(model, t, use_reentrant=reentrant))
    _assert_same(ckpt, plain)


@BOTH
def test_batch_norm_running_stats_are_updated_by_the_recomputation_as_in_torch(reentrant):
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    model = _mlp(depth=2, batch_norm=True).train()
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(5, 12), torch.nn.BatchNorm1d(12), torch.nn.Tanh(),
        torch.nn.Linear(12, 12), torch.nn.BatchNorm1d(12), torch.nn.Tanh(),
        torch.nn.Linear(12, 12), torch.nn.Linear(12, 3)).double().train()
    copy_state_to_torch(model, tmodel)
    x = _input(9, 5)
    tx = to_torch(x).requires_grad_()
    checkpoint(model, x, use_reentrant=reentrant).sum().backward()
    tcp.checkpoint(tmodel, tx, use_reentrant=reentrant).sum().backward()
    ours, theirs = model.state_dict(), tmodel.state_dict()
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked", "4.running_mean"):
        assert_allclose(ours[key], theirs[key], rtol=1e-12, err_msg=key)
    assert int(ours["1.num_batches_tracked"]) == 2  # the forward and the recomputation
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        assert_allclose(p.grad, tp.grad, rtol=1e-10, atol=1e-12, err_msg=name)


def _encoder(layers=3, dropout=0.2):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=dropout, batch_first=True,
                                       dtype=ember.float64)
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).train()


@BOTH
def test_transformer_encoder_stack_with_each_layer_checkpointed(reentrant):
    encoder = _encoder()
    x = _input(2, 5, 16)

    def per_layer(t):
        for mod in encoder.layers:
            t = checkpoint(mod, t, use_reentrant=reentrant)
        return t

    _assert_same(_grads(encoder, x, per_layer), _grads(encoder, x, encoder), rtol=1e-10)


def test_transformer_layer_keyword_arguments_non_reentrant():
    encoder = _encoder(layers=2, dropout=0.1)
    x = _input(2, 6, 16)
    mask = nn.Transformer.generate_square_subsequent_mask(6, dtype=ember.float64)

    def plain(t):
        for mod in encoder.layers:
            t = mod(t, src_mask=mask, is_causal=True)
        return t

    def ckpt(t):
        for mod in encoder.layers:
            t = checkpoint(mod, t, src_mask=mask, is_causal=True, use_reentrant=False)
        return t

    _assert_same(_grads(encoder, x, ckpt), _grads(encoder, x, plain), rtol=1e-10)


@BOTH
@pytest.mark.parametrize("segments", [1, 2, 3, 4, 7, 14])
def test_checkpoint_sequential_on_nn_sequential(reentrant, segments):
    model = _mlp(depth=4, dropout=0.25).train()
    assert len(model) == 14
    x = _input(6, 5)
    _assert_same(_grads(model, x, lambda t: checkpoint_sequential(
        model, segments, t, use_reentrant=reentrant)), _grads(model, x, model))


@BOTH
def test_checkpoint_sequential_matches_torch(reentrant):
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp

    model = _mlp(depth=3)
    layers = []
    for m in model:
        if isinstance(m, nn.Linear):
            layers.append(torch.nn.Linear(m.in_features, m.out_features))
        else:
            layers.append(torch.nn.Tanh())
    tmodel = torch.nn.Sequential(*layers).double()
    copy_state_to_torch(model, tmodel)
    x = _input(4, 5)
    tx = to_torch(x).requires_grad_()
    y = checkpoint_sequential(model, 3, x, use_reentrant=reentrant)
    ty = tcp.checkpoint_sequential(tmodel, 3, tx, use_reentrant=reentrant)
    y.square().sum().backward()
    ty.square().sum().backward()
    assert_allclose(y, ty.detach(), rtol=1e-12)
    assert_allclose(x.grad, tx.grad, rtol=1e-10)
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        assert_allclose(p.grad, tp.grad, rtol=1e-10, atol=1e-12, err_msg=name)
