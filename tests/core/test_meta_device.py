"""The meta device (``ember._meta``): tensors with a shape, a dtype and autograd but no data.

Every op of the registry with ``ember.ops.opdb`` samples runs on meta tensors and must give
the CPU result's shapes and dtypes (and, where it differentiates, its gradients' shapes), or
refuse as PyTorch does where the output's shape depends on the values; PyTorch's two meta
tutorials (reasoning about shapes, loading a checkpoint into a meta model) run as written;
reprs and errors match PyTorch's.
"""

from __future__ import annotations

import copy
import tracemalloc
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

ENTRIES = load_all()
OPNAMES = sorted(n for n in ENTRIES if n in OPS)

#: ops whose output's shape depends on the values: they refuse meta inputs, as PyTorch's
#: (which has no meta kernel for them) do
DATA_DEPENDENT = {"nonzero", "argwhere", "where", "masked_select", "unique",
                  "unique_consecutive", "bincount", "one_hot", "repeat_interleave",
                  "index_put"}
#: what does not run on meta tensors yet, and why
GAPS = {
    "binomial": "draws on the host (a per-element loop over counts)",
    "multinomial": "draws on the host",
    "histogram": "bins on the host",
    "histogramdd": "bins on the host",
    "cross_entropy": "label smoothing with class weights selects the kept targets "
                     "(masked_select)",
    "narrow": "its start given as a tensor is read with item()",
    "narrow_copy": "its start given as a tensor is read with item()",
    "tensor_split": "its indices given as a tensor are read on the host (PyTorch requires "
                    "them on the CPU)",
    **dict.fromkeys(("lstm", "gru", "rnn_tanh", "rnn_relu"),
                    "the packed overload reads batch_sizes on the host (PyTorch requires them "
                    "on the CPU)"),
}
#: what runs forward on meta tensors but not backward yet, and why
BACKWARD_GAPS = {
    "segment_reduce": "not yet: its backward expands each segment's gradient by lengths it "
                      "reads on the host",
}


def _outputs(out):
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, ember.Tensor)]
    return []


def _has_tensor(s) -> bool:
    found = []
    s.map_tensors(lambda t: found.append(t) or t)
    return bool(found)


@pytest.mark.parametrize("name", OPNAMES)
def test_op_on_meta_gives_cpu_shapes_and_dtypes(name):
    e, op = ENTRIES[name], OPS[name].fn
    ran = refused = 0
    for dt in e.dtypes:
        for s in e.samples("cpu", dt):
            if not _has_tensor(s):  # a factory: its device is an argument
                continue
            ember.manual_seed(0)
            try:
                expected = s.call(op)
            except Exception:
                continue
            moved = s.map_tensors(lambda t: t.to("meta"))
            if name in GAPS:
                try:
                    moved.call(op)
                except (NotImplementedError, RuntimeError):
                    refused += 1
                continue
            try:
                got = moved.call(op)
            except NotImplementedError as exc:
                assert name in DATA_DEPENDENT, f"{name} {s}: {exc}"
                assert "depends on the values" in str(exc)
                refused += 1
                continue
            outs, exp = _outputs(got), _outputs(expected)
            assert len(outs) == len(exp), f"{name} {s}"
            for g, x in zip(outs, exp):
                assert g.device.type == "meta", f"{name} {s}: on {g.device}"
                assert (tuple(g.shape), g.dtype) == (tuple(x.shape), x.dtype), f"{name} {s}"
            ran += 1
    if name in GAPS:
        assert refused, f"{name} runs on meta now: take it off GAPS"
    elif name in DATA_DEPENDENT:
        assert refused, f"{name}: no sample refused meta inputs"


def _total(o):
    """A real scalar of ``o`` to differentiate (complex outputs: both parts)."""
    return ember.view_as_real(o).sum() if o.is_complex() else o.sum()


def _differentiable(name):
    return OPS[name].differentiable and name not in GAPS and name not in DATA_DEPENDENT \
        and name not in BACKWARD_GAPS


@pytest.mark.parametrize("name", [n for n in OPNAMES if _differentiable(n)])
def test_backward_on_meta_gives_gradient_shapes(name):
    e, op = ENTRIES[name], OPS[name].fn
    for s in e.samples("cpu", "float32", requires_grad=True):
        found = []
        s.map_tensors(lambda t, found=found: found.append(t) or t)
        leaves = [t for t in found if t.requires_grad]
        if not leaves:
            continue
        ember.manual_seed(0)
        try:
            outs = [o for o in _outputs(s.call(op)) if o.requires_grad]
        except Exception:
            continue
        if not outs:
            continue
        expected = ember.autograd.grad([_total(o) for o in outs], leaves, allow_unused=True)
        moved = {id(t): t.detach().to("meta").requires_grad_(True) for t in leaves}
        s_meta = s.map_tensors(lambda t, mv=moved: mv[id(t)] if id(t) in mv else t.to("meta"))
        outs = [o for o in _outputs(s_meta.call(op)) if o.requires_grad]
        grads = ember.autograd.grad([_total(o) for o in outs], list(moved.values()),
                                    allow_unused=True)
        for g, x in zip(grads, expected):
            if x is None:
                continue
            assert g.is_meta and (tuple(g.shape), g.dtype) == (tuple(x.shape), x.dtype), \
                f"{name} {s}"


# -- PyTorch's meta tutorials -----------------------------------------------------------------

def test_reasoning_about_shapes_tutorial(capsys):
    t = ember.rand(2, 3, 10, 10, device="meta")
    conv = nn.Conv2d(3, 5, 2, device="meta")
    out = conv(t)
    assert repr(out) == ("tensor(..., device='meta', size=(2, 5, 9, 9), "
                         "grad_fn=<ConvolutionBackward0>)")
    # arbitrarily large inputs: nothing is allocated or computed
    tracemalloc.start()
    try:
        t_large = ember.rand(2**10, 3, 2**16, 2**16, device="meta")
        out = conv(t_large)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.shape == (2**10, 5, 2**16 - 1, 2**16 - 1) and peak < 2**20

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = ember.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    shapes = []
    with ember.device("meta"):
        net = Net()
        inp = ember.randn((1024, 3, 32, 32))
    assert all(p.is_meta for p in net.parameters()) and inp.is_meta
    for _, layer in net.named_modules():
        layer.register_forward_hook(lambda m, i, o: shapes.append(tuple(o.shape)))
    out = net(inp)
    assert shapes == [(1024, 6, 28, 28), (1024, 6, 14, 14), (1024, 16, 10, 10),
                      (1024, 16, 5, 5), (1024, 120), (1024, 84), (1024, 10), (1024, 10)]
    out.sum().backward()
    assert net.conv1.weight.grad.is_meta and net.conv1.weight.grad.shape == (6, 3, 5, 5)


class SomeModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(1, 1) for _ in range(10)])

    def forward(self, x):
        for lin in self.linears:
            x = lin(x)
        return x


def test_load_state_dict_tips_tutorial(tmp_path):
    m = SomeModule()
    ember.save(m.state_dict(), tmp_path / "checkpoint.pth")
    state_dict = ember.load(tmp_path / "checkpoint.pth", mmap=True)
    with ember.device("meta"):
        meta_m = SomeModule()
    assert all(p.is_meta for p in meta_m.parameters())
    # copying into a meta parameter is a no-op, with PyTorch's warning
    with pytest.warns(UserWarning, match="for linears.0.weight: copying from a non-meta "
                      "parameter in the checkpoint to a meta parameter in the current model, "
                      r"which is a no-op. \(Did you mean to pass `assign=True`"):
        meta_m.load_state_dict(state_dict)
    assert meta_m.linears[0].weight.is_meta
    meta_m.load_state_dict(state_dict, assign=True)
    for p, q in zip(meta_m.parameters(), m.parameters()):
        assert not p.is_meta and isinstance(p, nn.Parameter) and p.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    x = ember.randn(4, 1)
    np.testing.assert_array_equal(meta_m(x).detach().numpy(), m(x).detach().numpy())


def test_to_empty_then_reset_parameters():
    with ember.device("meta"):
        lin = nn.Linear(300, 200)
    lin.to_empty(device="cpu")
    assert lin.weight.device == ember.device("cpu") and lin.weight.shape == (200, 300)
    lin.reset_parameters()
    w = lin.weight.detach().numpy()
    assert np.isfinite(w).all() and np.abs(w).max() <= 1 / np.sqrt(300)


def test_module_to_meta_and_back():
    lin = nn.Linear(3, 2)
    lin.to("meta")
    assert lin.weight.is_meta and isinstance(lin.weight, nn.Parameter)
    with pytest.raises(NotImplementedError, match=r"Cannot copy out of meta tensor; no data! "
                       r"Please use ember.nn.Module.to_empty\(\) instead"):
        lin.to("cpu")
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict"):
        nn.Linear(3, 2).load_state_dict(lin.state_dict())


# -- tensors ----------------------------------------------------------------------------------

def test_reprs_match_pytorch():
    assert repr(ember.rand(2, 3, device="meta")) == "tensor(..., device='meta', size=(2, 3))"
    assert repr(ember.zeros(2, dtype=ember.int64, device="meta")) == \
        "tensor(..., device='meta', size=(2,), dtype=ember.int64)"
    assert repr(ember.zeros(2, device="meta", requires_grad=True)) == \
        "tensor(..., device='meta', size=(2,), requires_grad=True)"
    assert repr(ember.zeros((), device="meta")) == "tensor(..., device='meta', size=())"
    assert repr(ember.zeros(0, 3, device="meta")) == "tensor(..., device='meta', size=(0, 3))"
    assert repr(nn.Parameter(ember.zeros(2, device="meta"))) == (
        "Parameter containing:\ntensor(..., device='meta', size=(2,), requires_grad=True)")
    assert str(ember.zeros(2, device="meta")) == "tensor(..., device='meta', size=(2,))"


def test_reading_values_raises_pytorch_errors():
    t = ember.rand(2, 3, device="meta")
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted"):
        t.item()
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        t[0, 0].item()
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        bool(t[0, 0])
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        float(t[0, 0])
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        t.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        t.cpu()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        ember.ones(2, 3, device="cpu").copy_(t)
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        t.numpy(force=False)  # (the strict run forces numpy() by default)
    with pytest.raises(RuntimeError, match="same device"):
        t + ember.ones(2, 3, device="cpu")
    with pytest.raises(NotImplementedError, match="nonzero: the output's shape depends"):
        t.nonzero()
    with pytest.raises(NotImplementedError, match="indexing with a boolean mask: the output's"):
        t[t > 0]
    with pytest.raises(NotImplementedError, match="masked_select: the output's shape"):
        t.masked_select(t > 0)


def test_metadata():
    t = ember.empty(2, 3, 4, device="meta")
    assert t.is_meta and t.device == ember.device("meta") and t.device.type == "meta"
    assert t.stride() == (12, 4, 1) and t.is_contiguous() and t.data_ptr() == 0
    assert t.numel() == 24 and t.element_size() == 4 and t.dtype == ember.float32
    assert not ember.ones(2).is_meta
    assert ember.empty(2, device="meta").to("meta").is_meta
    # a copy into a meta tensor is a no-op
    m = ember.empty(2, device="meta")
    assert m.copy_(ember.ones(2)) is m


def test_huge_tensors_take_no_memory():
    tracemalloc.start()
    try:
        with ember.device("meta"):
            big = nn.Linear(2**16, 2**16)  # 16 GiB of float32 on the CPU
            x = ember.randn(8, 2**16)
        y = big(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert y.shape == (8, 2**16) and peak < 2**20


def test_factories_and_init_on_meta():
    assert ember.arange(10, device="meta").shape == (10,)
    assert ember.arange(10, device="meta").dtype == ember.int64
    assert ember.arange(0, 1, 0.25, device="meta").shape == (4,)
    assert ember.linspace(0, 1, 7, device="meta").shape == (7,)
    assert ember.eye(3, 4, device="meta").shape == (3, 4)
    assert ember.full((2, 2), 7, device="meta").dtype == ember.int64
    assert ember.tensor([1.0, 2.0], device="meta").shape == (2,)
    assert ember.randint(0, 5, (3, 4), device="meta").dtype == ember.int64
    assert ember.zeros_like(ember.empty(2, 5, device="meta")).is_meta
    w = ember.empty(4, 5, device="meta")
    for init in (nn.init.kaiming_uniform_, nn.init.xavier_normal_, nn.init.trunc_normal_,
                 nn.init.orthogonal_, nn.init.zeros_, nn.init.ones_):
        assert init(w) is w
    g = ember.Generator()
    state = g.get_state()
    w.uniform_(generator=None)
    assert ember.equal(g.get_state(), state)


def test_autograd_and_optimizer_on_meta():
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        x = ember.randn(16, 4)
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    loss = F.mse_loss(model(x), ember.zeros(16, 2, device="meta"))
    assert loss.is_meta and loss.shape == ()
    loss.backward()
    opt.step()
    assert all(p.grad.is_meta and p.grad.shape == p.shape for p in model.parameters())


def test_save_load_and_deepcopy(tmp_path):
    t = ember.rand(2, 3, device="meta")
    ember.save({"a": t, "b": ember.ones(2)}, tmp_path / "m.pt")
    loaded = ember.load(tmp_path / "m.pt")
    assert loaded["a"].is_meta and loaded["a"].shape == (2, 3)
    np.testing.assert_array_equal(loaded["b"].numpy(), np.ones(2, np.float32))
    with ember.device("meta"):
        m = nn.Linear(3, 2)
    c = copy.deepcopy(m)
    assert c.weight.is_meta and c.weight is not m.weight


def test_transformer_layer_on_meta():
    with ember.device("meta"):
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        src = ember.randn(2, 10, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = layer(src)
    assert out.is_meta and out.shape == (2, 10, 64)
