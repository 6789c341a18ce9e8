"""``ember.compile`` of a forward whose outputs autograd continues from (``model =
torch.compile(model)``, then ``loss.backward()`` and ``opt.step()`` outside): the outputs hang
from one ``CompiledFunctionBackward`` node whose backward is the entry's generated reverse
sweep; losses and gradients equal eager's over optimizer steps."""

from __future__ import annotations

import numpy as np
import pytest
from testutils import assert_allclose

import ember
from ember._compile import explain

nn = pytest.importorskip("ember.nn")
F = nn.functional


# -- models -------------------------------------------------------------------------------------

def _mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Dropout(0.3), nn.Flatten(), nn.Linear(128, 5))


class _LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, batch_first=True)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1,
                                                batch_first=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        return self.fc(self.layer(x).mean(1))


class _TwoOutputs(nn.Module):
    """Two outputs: the logits (require grad) and the argmax (an integer tensor)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        logits = self.fc(x).tanh()
        return logits, logits.argmax(1)


MODELS = {
    "mlp": (_mlp, (8, 12)),
    "cnn": (_cnn, (4, 3, 8, 8)),
    "lstm": (_LSTMNet, (3, 5, 6)),
    "encoder": (_Encoder, (2, 5, 16)),
    "two_outputs": (_TwoOutputs, (8, 12)),
}


def _make(name):
    make, shape = MODELS[name]
    ember.manual_seed(0)
    model = make()
    ember.manual_seed(1)
    x = ember.randn(*shape)
    y = ember.randint(0, 5, (shape[0],))
    return model, x, y


def _warm(model, *args):
    """``model`` compiled (fullgraph) and called once on ``args`` (the capture, whose result
    is eager's): the next matching call replays the compiled entry."""
    cm = ember.compile(model, fullgraph=True)
    cm(*args)
    info = explain(cm)
    assert len(info["entries"]) == 1 and not info["entries"][0]["eager"]
    return cm


def _train(name, compiled: bool, input_grad: bool, steps: int = 3, fullgraph: bool = True):
    """Per step: the loss, the parameters' gradients and the input's gradient, with the model
    compiled (forward only: backward and the optimizer step run outside) or eager."""
    model, x, y = _make(name)
    model.train()
    f = ember.compile(model, fullgraph=fullgraph) if compiled else model
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x.requires_grad_(input_grad)
    record = []
    ember.manual_seed(7)  # dropout draws the same masks in both runs
    for _ in range(steps):
        opt.zero_grad()
        x.grad = None
        out = f(x)
        logits = out[0] if isinstance(out, tuple) else out
        loss = F.cross_entropy(logits, y)
        loss.backward()
        record.append((loss.item(), [p.grad.numpy().copy() for p in model.parameters()],
                       None if x.grad is None else x.grad.numpy().copy(), out))
        opt.step()
    return record, f, model


@pytest.mark.parametrize("input_grad", [False, True])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_forward_eager_backward_equals_eager(name, input_grad):
    want, _, _ = _train(name, False, input_grad)
    got, cm, model = _train(name, True, input_grad)
    for step, ((lg, gg, xg, og), (lw, gw, xw, ow)) in enumerate(zip(got, want)):
        assert lg == pytest.approx(lw, rel=1e-6, abs=1e-7)
        for a, b in zip(gg, gw):
            assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        if input_grad:
            assert_allclose(xg, xw, rtol=1e-6, atol=1e-7)
        else:
            assert xg is None and xw is None
        if step and isinstance(og, tuple):  # a replay: the integer output is not linked
            assert og[0].grad_fn is not None and type(og[0].grad_fn).__name__ == \
                "CompiledFunctionBackward"
            assert not og[1].requires_grad and og[1].grad_fn is None
            assert_allclose(og[1], ow[1])
    info = explain(cm)
    # one capture, replayed by the two later calls; compiled, not eager
    assert info["graph_count"] == 1 and len(info["entries"]) == 1
    entry = info["entries"][0]
    assert not entry["eager"] and entry["graph_breaks"] == [], entry["reason"]
    assert "CompiledFunctionBackward" not in entry["source"] and "_bw" in entry["source"]


def test_output_grad_fn_is_one_compiled_node_with_the_inputs_edges():
    model, x, _ = _make("mlp")
    x.requires_grad_()
    out = _warm(model, x)(x)
    node = out.grad_fn
    assert node.name() == "CompiledFunctionBackward"
    edges = [fn for fn, _ in node.next_functions]
    params = list(model.parameters())
    assert [type(e).__name__ for e in edges] == ["AccumulateGrad"] * (len(params) + 1)
    assert {id(e.variable) for e in edges} == {id(p) for p in params} | {id(x)}


def test_retain_graph_backward_twice_then_freed():
    def grads(f):
        model, x, _ = _make("mlp")
        x.requires_grad_()
        g = f(model)
        loss = (g(x) ** 2).mean()
        loss.backward(retain_graph=True)
        loss.backward()
        out = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        return out

    want = grads(lambda m: m)
    got = grads(lambda m: _warm(m, ember.randn(8, 12, requires_grad=True)))
    for a, b in zip(got, want):
        assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_double_backward_raises():
    model, x, _ = _make("mlp")
    x.requires_grad_()
    loss = _warm(model, x)(x).sum()
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        ember.autograd.grad(loss, [x], create_graph=True)
    # without create_graph the same graph still differentiates
    (gx,) = ember.autograd.grad(loss, [x])
    (want,) = ember.autograd.grad(model(x).sum(), [x])
    assert_allclose(gx, want, rtol=1e-6, atol=1e-7)


def test_hooks_on_inputs_and_parameters_fire():
    def run(compiled):
        model, x, _ = _make("mlp")
        x.requires_grad_()
        seen = []
        x.register_hook(lambda g: g * 3)
        model[0].weight.register_hook(lambda g: seen.append(g.shape) or g * 2)
        f = _warm(model, x.detach().requires_grad_()) if compiled else model
        f(x).sum().backward()
        return seen, x.grad.numpy(), model[0].weight.grad.numpy()

    (seen_w, xg_w, wg_w), (seen_g, xg_g, wg_g) = run(False), run(True)
    assert seen_g == seen_w == [(32, 12)]
    assert_allclose(xg_g, xg_w, rtol=1e-6, atol=1e-7)
    assert_allclose(wg_g, wg_w, rtol=1e-6, atol=1e-7)


def test_non_leaf_input_links_to_its_grad_fn():
    def run(compiled):
        model, x0, _ = _make("mlp")
        x0.requires_grad_()
        x = x0 * 2  # a non-leaf input: the graph goes on past the compiled forward
        f = _warm(model, x0 * 3) if compiled else model
        out = f(x)
        if compiled:
            assert out.grad_fn.next_functions[-1][0] is x.grad_fn
        out.sum().backward()
        return x0.grad.numpy(), model[2].bias.grad.numpy()

    for a, b in zip(run(True), run(False)):
        assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_requires_grad_change_on_a_parameter_recaptures():
    model, x, _ = _make("mlp")
    cm = _warm(model, x)
    cm(x).sum().backward()
    model[0].weight.requires_grad_(False)
    cm(x)  # the capture of the second entry
    model.zero_grad()
    cm(x).sum().backward()
    assert model[0].weight.grad is None and model[0].bias.grad is not None
    got = [p.grad.numpy().copy() for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    model(x).sum().backward()
    for a, p in zip(got, [p for p in model.parameters() if p.requires_grad]):
        assert_allclose(a, p.grad, rtol=1e-6, atol=1e-7)
    assert len(explain(cm)["entries"]) == 2


def test_parameter_modified_before_backward_raises_as_eager():
    for compiled in (False, True):
        model, x, _ = _make("mlp")
        f = _warm(model, x) if compiled else model
        loss = f(x).sum()
        with ember.no_grad():
            model[2].weight.mul_(2)  # read by the backward (the input's gradient)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_two_forwards_before_one_backward_keep_their_own_values():
    """Each call keeps its own arrays for the backward (no reused buffer is overwritten by
    the next call), and BatchNorm's running statistics updated by the second forward do not
    trip the first one's version checks."""
    def run(compiled):
        model, x, _ = _make("cnn")
        model[4].p = 0.0  # no dropout: the two calls see the same function
        f = _warm(model, x) if compiled else model
        if compiled:  # the warm-up call moved the running statistics: start again
            model[1].reset_running_stats()
        a = f(x)
        b = f(x * 0.5 + 1)
        ((a * a).sum() + (b * b * b).sum()).backward()
        return [p.grad.numpy() for p in model.parameters()] + \
            [model[1].running_mean.numpy(), model[1].running_var.numpy()]

    for g, w in zip(run(True), run(False)):
        assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_unused_output_gradient_is_zero():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            h = self.fc(x)
            return h.relu(), h.sigmoid()

    ember.manual_seed(0)
    model = M()
    x = ember.randn(5, 4, requires_grad=True)
    a, b = _warm(model, x)(x)
    assert a.grad_fn is b.grad_fn and b.output_nr == 1
    b.sum().backward()  # the first output takes no gradient
    gx, gw = x.grad.numpy().copy(), model.fc.weight.grad.numpy().copy()
    x.grad = None
    model.zero_grad()
    model(x)[1].sum().backward()
    assert_allclose(gx, x.grad, rtol=1e-6, atol=1e-7)
    assert_allclose(gw, model.fc.weight.grad, rtol=1e-6, atol=1e-7)


def test_float64_gradients_match_eager():
    def run(compiled):
        ember.manual_seed(0)
        model = _mlp().double()
        x = ember.randn(8, 12, dtype=ember.float64, requires_grad=True)
        f = _warm(model, x) if compiled else model
        (f(x).tanh() ** 2).sum().backward()
        return [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]

    for g, w in zip(run(True), run(False)):
        assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_a_function_with_a_dict_output():
    @ember.compile(fullgraph=True)
    def f(x, w):
        h = x @ w
        return {"out": h.exp(), "norm": h.detach().norm()}

    ember.manual_seed(0)
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 2, requires_grad=True)
    for _ in range(3):
        x.grad = w.grad = None
        r = f(x, w)
        assert set(r) == {"out", "norm"} and not r["norm"].requires_grad
        r["out"].sum().backward()
        assert_allclose(x.grad, (x @ w).exp().detach() @ w.detach().T, rtol=1e-6, atol=1e-7)
        assert_allclose(w.grad, x.detach().T @ (x @ w).exp().detach(), rtol=1e-6, atol=1e-7)
    info = explain(f)
    assert len(info["entries"]) == 1 and not info["entries"][0]["eager"]
    assert np.isfinite(r["norm"].item())


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_a_compiled_loss_differentiated_outside(smoothing):
    """The loss computed inside (cross_entropy's lowering keeps its exponentials for the
    backward: arrays of each call; with label smoothing the lowering declines and the op runs
    through autograd); two calls before one backward."""
    def run(compiled):
        ember.manual_seed(0)
        model = _mlp()
        x = ember.randn(8, 12)
        y = ember.randint(0, 5, (8,))

        def loss_fn(x, y):
            return F.cross_entropy(model(x), y, label_smoothing=smoothing)

        f = _warm(loss_fn, x, y) if compiled else loss_fn
        (f(x, y) + 2 * f(x * 2, (y + 1) % 5)).backward()
        return [p.grad.numpy() for p in model.parameters()]

    for g, w in zip(run(True), run(False)):
        assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_training_step_with_a_declined_loss_lowering_equals_eager():
    """A lowering that declines a node on the gradient's path at emission (cross_entropy with
    label smoothing) leaves it to autograd, not to a VJP lowering that reads what the forward
    lowering did not make; the whole-step compile path shares this."""
    def run(compiled):
        ember.manual_seed(0)
        model = _mlp()
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x, y = ember.randn(8, 12), ember.randint(0, 5, (8,))

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            loss.backward()
            opt.step()
            return loss.detach()

        f = ember.compile(step, fullgraph=True) if compiled else step
        losses = [f(x, y).item() for _ in range(3)]
        if compiled:
            assert not explain(f)["entries"][0]["eager"]
            assert explain(f)["entries"][0]["grad_fallback_ops"] == ["cross_entropy"]
        return losses, [p.detach().numpy() for p in model.parameters()]

    (lg, pg), (lw, pw) = run(True), run(False)
    assert lg == pytest.approx(lw, rel=1e-6)
    for g, w in zip(pg, pw):
        assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_random_fill_of_a_tensor_made_inside_is_not_frozen():
    """``ember.empty(...).bernoulli_(p)`` (efficientnet_lite's stochastic depth) draws on a
    tensor the graph does not hold: a graph break, never a constant that replays the
    capture's draw on every call."""
    def mask(x):
        return x * ember.empty([x.shape[0], 1], dtype=x.dtype).bernoulli_(0.5)

    f = ember.compile(mask)
    x = ember.ones(16, 3, requires_grad=True)
    for seed in (1, 2, 3):
        ember.manual_seed(seed)
        got = f(x)
        ember.manual_seed(seed)
        assert_allclose(got, mask(x))
    info = explain(f)
    assert info["entries"][0]["eager"] and "bernoulli_" in info["entries"][0]["reason"]
    with pytest.raises(ember._compile.GraphBreakError, match="bernoulli_"):
        ember.compile(mask, fullgraph=True)(x)
