"""nn.Embedding(sparse=True): sparse COO weight gradients as PyTorch's, accumulated as
PyTorch's AccumulateGrad does, and the optimizers that take them (SGD, SparseAdam) stepping
to PyTorch's parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

IDX = [[0, 2, 0, 5], [4, 2, 1, 5]]


def _torch():
    return pytest.importorskip("torch")


def test_sparse_gradient_is_coo_and_equals_the_dense_one():
    emb = nn.Embedding(6, 3, sparse=True, padding_idx=1)
    dense = nn.Embedding(6, 3, padding_idx=1)
    dense.load_state_dict(emb.state_dict())
    x = ember.tensor(IDX)
    (emb(x) * ember.arange(3.0)).sum().backward()
    (dense(x) * ember.arange(3.0)).sum().backward()
    g = emb.weight.grad
    assert g.layout is ember.sparse_coo and not g.is_coalesced()
    assert g._indices().tolist() == [[0, 2, 0, 5, 4, 2, 5]]  # padding_idx's entry dropped
    np.testing.assert_allclose(g.to_dense().numpy(), dense.weight.grad.numpy())


def test_gradients_accumulate_as_torch():
    torch = _torch()
    emb = nn.Embedding(6, 3, sparse=True)
    temb = torch.nn.Embedding(6, 3, sparse=True)
    temb.weight.data = torch.tensor(emb.weight.detach().numpy())
    for rows in ([0, 3], [3, 3, 5]):
        emb(ember.tensor(rows)).pow(2).sum().backward()
        temb(torch.tensor(rows)).pow(2).sum().backward()
    assert emb.weight.grad.is_sparse and temb.weight.grad.is_sparse
    np.testing.assert_allclose(emb.weight.grad.to_dense().numpy(),
                               temb.weight.grad.to_dense().numpy(), rtol=1e-6)
    assert not emb.weight.grad.is_coalesced()  # indices repeat until coalesce()


def test_scale_grad_by_freq_with_sparse_is_torchs_error():
    w = ember.randn(4, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        ember.nn.functional.embedding(ember.tensor([1]), w, scale_grad_by_freq=True,
                                      sparse=True)


@pytest.mark.parametrize("opt", ["SGD", "SGD-momentum", "SGD-nesterov", "SparseAdam",
                                 "SparseAdam-maximize", "Adagrad", "Adagrad-lr_decay",
                                 "Adagrad-maximize"])
def test_optimizer_steps_equal_torchs(opt):
    torch = _torch()
    name, _, variant = opt.partition("-")
    kw = {"SGD": {"lr": 0.1}, "SparseAdam": {"lr": 0.05}, "Adagrad": {"lr": 0.1}}[name]
    if variant == "momentum":
        kw.update(momentum=0.9, dampening=0.1)
    if variant == "nesterov":
        kw.update(momentum=0.9, nesterov=True)
    if variant == "maximize":
        kw.update(maximize=True)
    if variant == "lr_decay":
        kw.update(lr_decay=0.1, initial_accumulator_value=0.5)
    emb = nn.Embedding(7, 4, sparse=True)
    temb = torch.nn.Embedding(7, 4, sparse=True)
    temb.weight.data = torch.tensor(emb.weight.detach().numpy())
    eopt = getattr(ember.optim, name)(emb.parameters(), **kw)
    topt = getattr(torch.optim, name)(temb.parameters(), **kw)
    rng = np.random.default_rng(0)
    for _ in range(4):
        rows = rng.integers(0, 7, (3, 2))
        target = rng.standard_normal((3, 2, 4)).astype(np.float32)
        for m, o, lib in ((emb, eopt, ember), (temb, topt, torch)):
            o.zero_grad()
            ((m(lib.tensor(rows)) - lib.tensor(target)) ** 2).sum().backward()
            o.step()
    np.testing.assert_allclose(emb.weight.detach().numpy(), temb.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    if name == "Adagrad":
        np.testing.assert_allclose(eopt.state[emb.weight]["sum"].numpy(),
                                   topt.state[temb.weight]["sum"].numpy(), rtol=1e-5)
    if name == "SparseAdam":
        st, tt = eopt.state[emb.weight], topt.state[temb.weight]
        assert st["step"] == tt["step"] == 4
        np.testing.assert_allclose(st["exp_avg_sq"].numpy(), tt["exp_avg_sq"].numpy(),
                                   rtol=1e-5, atol=1e-7)


def test_sparse_adam_refuses_what_torch_refuses():
    torch = _torch()
    dense = nn.Linear(2, 2)
    opt = ember.optim.SparseAdam(dense.parameters())
    dense(ember.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                           "please consider Adam instead"):
        opt.step()
    for kw, msg in (({"lr": 0.0}, "Invalid learning rate: 0.0"),
                    ({"eps": 0.0}, "Invalid epsilon value: 0.0"),
                    ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0")):
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            ember.optim.SparseAdam([ember.zeros(2, requires_grad=True)], **kw)
        with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
            torch.optim.SparseAdam([torch.zeros(2, requires_grad=True)], **kw)


def test_sgd_weight_decay_on_a_sparse_gradient_is_torchs_error():
    emb = nn.Embedding(3, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1, weight_decay=0.01)
    emb(ember.tensor([1])).sum().backward()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        opt.step()


def test_zero_grad_without_none_empties_a_sparse_gradient():
    emb = nn.Embedding(4, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1)
    for reset in (lambda: opt.zero_grad(set_to_none=False),
                  lambda: emb.zero_grad(set_to_none=False)):
        emb(ember.tensor([1, 3])).sum().backward()
        reset()
        g = emb.weight.grad
        assert g.is_sparse and g._nnz() == 0 and tuple(g.shape) == (4, 2)
        emb(ember.tensor([2])).sum().backward()  # accumulates into the emptied gradient
        np.testing.assert_allclose(emb.weight.grad.to_dense().numpy(),
                                   [[0, 0], [0, 0], [1, 1], [0, 0]])


def test_adagrad_weight_decay_on_a_sparse_gradient_is_torchs_error():
    emb = nn.Embedding(3, 2, sparse=True)
    opt = ember.optim.Adagrad(emb.parameters(), lr=0.1, weight_decay=0.01)
    emb(ember.tensor([1])).sum().backward()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse "
                                           "gradients"):
        opt.step()


# -- EmbeddingBag(sparse=True) -------------------------------------------------------------

BAG_CASES = [
    {"mode": "sum"}, {"mode": "mean"}, {"mode": "sum", "padding_idx": 1},
    {"mode": "mean", "padding_idx": 2}, {"mode": "sum", "per_sample_weights": True},
    {"mode": "sum", "include_last_offset": True}, {"mode": "max"},
    {"mode": "sum", "scale_grad_by_freq": True}, {"mode": "mean", "scale_grad_by_freq": True},
]


def _bag_grad(m, case):
    """The weight's gradient of F.embedding_bag(sparse=True) in library ``m``: (layout,
    indices, values, dense form, coalesced), or the error raised."""
    rng = np.random.default_rng(0)
    w = m.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    kw = dict(case)
    if kw.pop("per_sample_weights", None):
        kw["per_sample_weights"] = m.tensor(np.arange(7.0) / 7)
    try:
        out = m.nn.functional.embedding_bag(m.tensor([1, 2, 1, 4, 2, 5, 0]), w,
                                            m.tensor([0, 3, 5]), sparse=True, **kw)
        out.backward(m.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))))
    except (RuntimeError, ValueError) as e:
        return (type(e).__name__, str(e))
    g = w.grad
    return ("coo", g._indices().tolist(), g._values().numpy().round(6).tolist(),
            g.to_dense().numpy().round(6).tolist(), g.is_coalesced())


@pytest.mark.parametrize("case", BAG_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in
                                                                  c.items()))
def test_embedding_bag_sparse_gradient_as_torch(case):
    torch = _torch()
    assert _bag_grad(ember, case) == _bag_grad(torch, case)


def test_embedding_bag_sparse_gradient_equals_the_dense_one():
    w = ember.randn(8, 4, dtype=ember.float64, requires_grad=True)
    wd = w.detach().clone().requires_grad_()
    x = ember.tensor([[1, 2, 7], [3, 1, 1]])
    ember.nn.functional.embedding_bag(x, w, mode="mean", sparse=True).pow(2).sum().backward()
    ember.nn.functional.embedding_bag(x, wd, mode="mean").pow(2).sum().backward()
    assert w.grad.layout is ember.sparse_coo and w.grad._nnz() == 6
    np.testing.assert_allclose(w.grad.to_dense().numpy(), wd.grad.numpy(), rtol=1e-12)


def test_embedding_bag_sparse_steps_sparse_adam_as_torch():
    """nn.EmbeddingBag(sparse=True) with SparseAdam (which refuses dense gradients)."""
    torch = _torch()
    bag = nn.EmbeddingBag(10, 3, sparse=True)
    tbag = torch.nn.EmbeddingBag(10, 3, sparse=True)
    tbag.weight.data = torch.tensor(bag.weight.detach().numpy())
    opt = ember.optim.SparseAdam(bag.parameters(), lr=0.05)
    topt = torch.optim.SparseAdam(tbag.parameters(), lr=0.05)
    for rows in ([[1, 2], [3, 1]], [[4, 4], [9, 1]]):
        for m, b, o in ((ember, bag, opt), (torch, tbag, topt)):
            o.zero_grad()
            b(m.tensor(rows)).pow(2).sum().backward()
            o.step()
    np.testing.assert_allclose(bag.weight.detach().numpy(), tbag.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", ["clip_grad_norm_", "clip_grad_value_", "vector_norm",
                                  "linalg_norm"])
def test_clipping_a_sparse_gradient_refuses_as_torch(call):
    """PyTorch's clipping has no sparse kernels: the same dispatcher errors
    ('aten::linalg_vector_norm', 'aten::clamp_min_'), the gradient left as it was."""
    from testutils import assert_same_dispatch_error

    torch = _torch()

    def run(m):
        bag = m.nn.EmbeddingBag(10, 3, sparse=True)
        bag(m.tensor([[1, 2], [3, 1]])).pow(2).sum().backward()
        return {"clip_grad_norm_": lambda: m.nn.utils.clip_grad_norm_(bag.parameters(), 1.0),
                "clip_grad_value_": lambda: m.nn.utils.clip_grad_value_(bag.parameters(), 0.5),
                "vector_norm": lambda: m.linalg.vector_norm(bag.weight.grad),
                "linalg_norm": lambda: m.linalg.norm(bag.weight.grad)}[call]()

    assert_same_dispatch_error(lambda: run(ember), lambda: run(torch))
