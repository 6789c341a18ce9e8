"""ember.autocast: the registry's cast policy per op, against torch.autocast's dtypes on the
CPU; gradients in the parameters' dtype; nesting, decorators, threads, the weight cache."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.amp import autocast_mode

LOW = ember.float16  # bfloat16 is CPU autocast's default; float16 is supported too


def _dev():
    return ember.get_default_device().type


def _x(*shape, seed=0):
    ember.manual_seed(seed)
    return ember.randn(*shape)


def test_policy_dtypes_on_the_cpu_list():
    x, w = _x(4, 8), _x(3, 8, seed=1)
    with ember.autocast(_dev(), dtype=LOW):
        assert F.linear(x, w).dtype == LOW
        assert (x @ w.t()).dtype == LOW
        assert ember.mm(x, w.t()).dtype == LOW
        assert F.conv2d(_x(1, 2, 5, 5), _x(3, 2, 3, 3)).dtype == LOW
        h = F.linear(x, w)
        assert F.relu(h).dtype == LOW  # not on a list: follows its input
        assert F.softmax(h, -1).dtype == LOW  # on the CPU softmax follows its input
        assert F.cross_entropy(h, ember.tensor([0, 1, 2, 0])).dtype == ember.float32
        assert F.mse_loss(h, h.float()).dtype == ember.float32
        assert ember.cat([h, x[:, :3]]).dtype == ember.float32  # promote: the widest
        assert ember.stack([h, h]).dtype == LOW
        d = x.double()
        assert (d @ d.t()).dtype == ember.float64  # float64 is never cast
        assert ember.is_autocast_enabled(_dev()) and ember.get_autocast_dtype(_dev()) == LOW
    assert not ember.is_autocast_enabled(_dev())
    assert F.linear(x, w).dtype == ember.float32


_TORCH_CASES = [
    ("linear", lambda m, x, w: m.nn.functional.linear(x, w)),
    ("matmul", lambda m, x, w: m.matmul(x, w.t())),
    ("mm", lambda m, x, w: m.mm(x, w.t())),
    ("addmm", lambda m, x, w: m.addmm(x[:, :3], x, w.t())),
    ("bmm", lambda m, x, w: m.bmm(x[None], w.t()[None])),
    ("baddbmm", lambda m, x, w: m.baddbmm(x[None, :, :3], x[None], w.t()[None])),
    ("conv1d", lambda m, x, w: m.nn.functional.conv1d(x[None], w[:, :4, None])),
    ("prelu", lambda m, x, w: m.nn.functional.prelu(x, w[0, :1])),
    ("sdpa", lambda m, x, w: m.nn.functional.scaled_dot_product_attention(
        x[None], x[None], x[None])),
    ("cross_entropy", lambda m, x, w: m.nn.functional.cross_entropy(
        m.matmul(x, w.t()), m.tensor([0, 1, 2, 0]))),
    ("mse_loss", lambda m, x, w: m.nn.functional.mse_loss(m.matmul(x, w.t()),
                                                          m.matmul(x, w.t()))),
    ("l1_loss", lambda m, x, w: m.nn.functional.l1_loss(x, x)),
    ("kl_div", lambda m, x, w: m.nn.functional.kl_div(x, x, reduction="batchmean")),
    ("prod", lambda m, x, w: m.matmul(x, w.t()).prod()),
    ("cdist", lambda m, x, w: m.cdist(x, w)),
    ("trace", lambda m, x, w: m.trace(m.matmul(x, w.t()))),
    ("cat", lambda m, x, w: m.cat([m.matmul(x, w.t()), x[:, :3]])),
    ("stack", lambda m, x, w: m.stack([m.matmul(x, w.t()), x[:, :3]])),
    ("softmax", lambda m, x, w: m.softmax(m.matmul(x, w.t()), -1)),
    ("log_softmax", lambda m, x, w: m.log_softmax(m.matmul(x, w.t()), -1)),
    ("layer_norm", lambda m, x, w: m.nn.functional.layer_norm(m.matmul(x, w.t()), (3,))),
    ("gelu", lambda m, x, w: m.nn.functional.gelu(m.matmul(x, w.t()))),
    ("sum", lambda m, x, w: m.matmul(x, w.t()).sum()),
    ("exp", lambda m, x, w: m.matmul(x, w.t()).exp()),
    ("add_mixed", lambda m, x, w: m.matmul(x, w.t()) + x[:, :3]),
    ("relu", lambda m, x, w: m.relu(x)),
]


@pytest.mark.parametrize("name,fn", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
def test_dtype_per_op_matches_torch_autocast_cpu(name, fn):
    torch = pytest.importorskip("torch")
    xs = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    ws = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.float16):
        want = fn(torch, torch.tensor(xs), torch.tensor(ws)).dtype
    with ember.autocast(_dev(), dtype=ember.float16):
        got = fn(ember, ember.tensor(xs), ember.tensor(ws)).dtype
    assert str(got).replace("ember.", "") == str(want).replace("torch.", "")


def test_gradients_reach_the_parameters_in_their_dtype():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = _x(6, 8), ember.tensor([0, 1, 2, 3, 0, 1])
    with ember.autocast(_dev(), dtype=LOW):
        out = model(x)
        loss = F.cross_entropy(out, y)
    assert out.dtype == LOW and loss.dtype == ember.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad.dtype == ember.float32
    # the low-precision gradients are close to the float32 ones
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), atol=5e-3, rtol=5e-2)


def test_nesting_enabled_false_and_decorator():
    x, w = _x(2, 4), _x(3, 4, seed=1)

    @ember.autocast(_dev(), dtype=LOW)
    def lowered():
        return F.linear(x, w)

    with ember.autocast(_dev(), dtype=LOW):
        with ember.autocast(_dev(), enabled=False):
            assert F.linear(x, w).dtype == ember.float32
            assert lowered().dtype == LOW
        assert F.linear(x, w).dtype == LOW
    assert lowered().dtype == LOW
    assert F.linear(x, w).dtype == ember.float32


def test_autocast_is_per_thread():
    x, w = _x(2, 4), _x(3, 4, seed=1)
    seen = []
    started, release = threading.Event(), threading.Event()

    def other():
        started.set()
        release.wait(5)
        seen.append(F.linear(x, w).dtype)

    t = threading.Thread(target=other)
    t.start()
    started.wait(5)
    with ember.autocast(_dev(), dtype=LOW):
        release.set()
        t.join(5)
        assert F.linear(x, w).dtype == LOW
    assert seen == [ember.float32]


def test_weight_casts_are_cached_in_a_region():
    lin = nn.Linear(4, 3)
    x = _x(2, 4)
    with ember.autocast(_dev(), dtype=LOW):
        lin(x)
        cached = dict(autocast_mode._STATE.cache)
        assert {id(lin.weight), id(lin.bias)} <= set(cached)
        lin(x)
        assert autocast_mode._STATE.cache[id(lin.weight)][2] is cached[id(lin.weight)][2]
        with ember.no_grad():
            lin.weight.add_(1.0)  # a new version: cast again
        lin(x)
        assert autocast_mode._STATE.cache[id(lin.weight)][2] is not cached[id(lin.weight)][2]
    assert autocast_mode._STATE.cache == {}
    with ember.autocast(_dev(), dtype=LOW, cache_enabled=False):
        lin(x)
        assert autocast_mode._STATE.cache == {}


def test_nothing_stays_wrapped_and_bad_arguments():
    from ember import overrides

    with ember.autocast(_dev(), dtype=LOW):
        assert overrides.is_active()
    assert not overrides.is_active()
    with pytest.raises(RuntimeError, match="device type at start of device string: nowhere"):
        ember.autocast("nowhere")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(ember.device("cpu"))
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with ember.autocast("cpu", dtype=ember.float64) as ac:
            assert not ember.is_autocast_enabled("cpu")
    assert ac.fast_dtype == ember.float64


def test_custom_fwd_and_bwd():
    seen = {}

    class Square(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type=_dev(), cast_inputs=ember.float32)
        def forward(ctx, a):
            seen["fwd"] = (a.dtype, ember.is_autocast_enabled(_dev()))
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @ember.amp.custom_bwd(device_type=_dev())
        def backward(ctx, g):
            seen["bwd"] = ember.is_autocast_enabled(_dev())
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = _x(3).requires_grad_()
    with ember.autocast(_dev(), dtype=LOW):
        h = x.half()
        out = Square.apply(h)
    out.sum().backward()
    assert seen["fwd"] == (ember.float32, False)
    assert seen["bwd"] is False  # cast_inputs: the backward runs with autocast off, as PyTorch
    assert x.grad.dtype == ember.float32


def test_a_training_loop_under_autocast_follows_float32():
    def train(use_autocast):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        opt = ember.optim.SGD(model.parameters(), lr=0.5)
        rng = np.random.default_rng(0)
        x = ember.tensor(rng.standard_normal((64, 16)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 4, 64))
        losses = []
        for _ in range(30):
            opt.zero_grad()
            with ember.autocast(_dev(), dtype=LOW, enabled=use_autocast):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    full, mixed = train(False), train(True)
    assert full[-1] < full[0] * 0.8 and mixed[-1] < mixed[0] * 0.8
    assert abs(mixed[-1] - full[-1]) <= 0.02 * full[-1] + 1e-3


def test_older_per_device_names():
    with pytest.warns(FutureWarning, match="torch.amp.autocast\\('cpu', args...\\)"):
        ac = ember.cpu.amp.autocast(dtype=LOW)
    x = _x(2, 2).cpu()
    with ac:
        assert ember.mm(x, x).dtype == LOW
        assert ember.is_autocast_cpu_enabled() and ember.get_autocast_cpu_dtype() == LOW
    with pytest.warns(FutureWarning, match="torch.amp.GradScaler\\('cuda', args...\\)"):
        if ember.cuda.is_available():
            assert ember.cuda.amp.GradScaler().is_enabled()
        else:
            with pytest.warns(UserWarning, match="CUDA is not available"):
                assert not ember.cuda.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning):
        assert ember.cpu.amp.GradScaler().is_enabled()


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))


def test_compile_under_autocast_equals_eager_and_guards_the_state():
    """A compiled model called under autocast runs autocast's casts (they were not in the
    graph: the replay returned float32 where eager gives bfloat16, other values too); called
    outside autocast it captures again."""
    model = _mlp()
    compiled = ember.compile(model)
    x = ember.randn(2, 8)
    with ember.autocast(x.device.type, dtype=ember.bfloat16):  # (the test device's too)
        want = model(x)
        for _ in range(2):  # capture, then replay
            got = compiled(x)
        assert got.dtype == want.dtype == ember.bfloat16
        np.testing.assert_array_equal(got.float().detach().numpy(),
                                      want.float().detach().numpy())
        loss = compiled(x).float().sum()
    loss.backward()  # gradients reach the float32 parameters through the casts
    assert model[0].weight.grad.dtype == ember.float32
    outside = compiled(x)
    assert outside.dtype == ember.float32
    np.testing.assert_allclose(outside.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    from ember._compile import explain

    assert len(explain(compiled)["entries"]) == 2


def test_trace_and_export_under_autocast_record_the_casts(tmp_path):
    """PyTorch's tuning guide traces under CPU autocast with TorchScript's autocast pass off:
    the trace holds the casts, so the traced model gives bfloat16 as eager did (it gave
    float32, with a TracerWarning), also outside autocast and once saved and loaded."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 5))
    model.eval().requires_grad_(False)
    x = ember.rand(2, 3, 8, 8)
    assert ember._C._jit_set_autocast_mode(False) is True
    try:
        with ember.no_grad(), ember.autocast(x.device.type, dtype=ember.bfloat16):
            want = model(x)
            traced = ember.jit.trace(model, (x,))
            ep = ember.export.export(model, (x,))
        assert ember._C._jit_get_autocast_mode() is False
    finally:
        ember._C._jit_set_autocast_mode(True)
    assert want.dtype == ember.bfloat16
    assert "Tensor.to(input, ember.bfloat16)" in traced.code
    traced.save(tmp_path / "m.pt")
    for program in (traced, ember.jit.load(tmp_path / "m.pt"), ep.module()):
        got = program(x)
        assert got.dtype == ember.bfloat16
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
