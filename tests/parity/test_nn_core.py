"""ember.nn core against torch.nn: reprs, state_dict layout and loading, Linear numerics and
gradients, init statistics, hooks, clipping and sequence utilities."""

import math

import numpy as np
import pytest

import ember
import ember.nn as enn

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")
tnn = torch.nn


def build_tree(lib, nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3, bias=False)
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
            self.heads = nn.ModuleDict({"a": nn.Identity(), "b": nn.Flatten(0, 1)})
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("tmp", lib.zeros(1), persistent=False)

        def forward(self, x):
            return x

    return nn.Sequential(Block(), nn.Bilinear(3, 3, 2), nn.Unflatten(1, (1, 2)),
                         nn.ParameterList([lib.zeros(2, 2)]),
                         nn.ParameterDict({"w": lib.zeros(3)}), nn.Sequential())


def test_repr_matches_torch():
    t = repr(build_tree(torch, tnn)).replace("torch.", "ember.")
    with ember.device("cpu"):  # as torch's: parameter entries without a device suffix
        e = build_tree(ember, enn)
    assert repr(e) == t


def test_state_dict_layout_matches_torch():
    t_sd = build_tree(torch, tnn).state_dict()
    e_sd = build_tree(ember, enn).state_dict()
    assert list(e_sd) == list(t_sd)
    assert dict(e_sd._metadata) == dict(t_sd._metadata)
    for k in t_sd:
        assert tuple(e_sd[k].shape) == tuple(t_sd[k].shape)


def test_named_modules_and_parameters_match_torch():
    t, e = build_tree(torch, tnn), build_tree(ember, enn)
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]


def test_torch_linear_state_dict_loads_and_matches():
    torch.manual_seed(0)
    t_lin = tnn.Linear(5, 3).double()
    e_lin = enn.Linear(5, 3).double()
    result = e_lin.load_state_dict({k: ember.tensor(v.numpy()) for k, v in
                                    t_lin.state_dict().items()})
    assert repr(result) == "<All keys matched successfully>"
    x_np = np.random.default_rng(0).normal(size=(2, 4, 5))
    xt = torch.tensor(x_np, requires_grad=True)
    xe = ember.tensor(x_np, requires_grad=True)
    yt, ye = t_lin(xt), e_lin(xe)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    g = np.random.default_rng(1).normal(size=(2, 4, 3))
    yt.backward(torch.tensor(g))
    ye.backward(ember.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(e_lin.weight.grad.numpy(), t_lin.weight.grad.numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(e_lin.bias.grad.numpy(), t_lin.bias.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("x_shape", [(5,), (3, 5), (2, 3, 5)])
def test_functional_linear_and_bilinear_match(x_shape):
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=x_shape), rng.normal(size=(4, 5)), rng.normal(size=4)
    t = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    e = enn.functional.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    x2, wb = rng.normal(size=(*x_shape[:-1], 3)), rng.normal(size=(4, 5, 3))
    t = torch.nn.functional.bilinear(torch.tensor(x), torch.tensor(x2), torch.tensor(wb),
                                     torch.tensor(b))
    e = enn.functional.bilinear(ember.tensor(x), ember.tensor(x2), ember.tensor(wb),
                                ember.tensor(b))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_linear_errors_match_torch():
    for xs, ws in [((2, 3), (5, 4)), ((2, 7, 3), (5, 4))]:
        with pytest.raises(RuntimeError) as te:
            torch.nn.functional.linear(torch.randn(*xs), torch.randn(*ws))
        with pytest.raises(RuntimeError) as ee:
            ember.linear(ember.randn(*xs), ember.randn(*ws))
        assert str(ee.value) == str(te.value)


def test_load_state_dict_errors_match_torch():
    def message(nn, lib, sd_src):
        model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
        sd = sd_src(nn, lib)
        with pytest.raises(RuntimeError) as err:
            model.load_state_dict(sd)
        return str(err.value).replace("torch.", "ember.")

    def bad(nn, lib):
        sd = nn.Sequential(nn.Linear(4, 2), nn.Linear(2, 1)).state_dict()
        del sd["1.bias"]
        sd["2.weight"] = lib.zeros(1)
        return sd

    assert message(enn, ember, bad) == message(tnn, torch, bad)
    t_res = tnn.Linear(2, 2).load_state_dict({"weight": torch.zeros(2, 2), "x": torch.zeros(1)},
                                             strict=False)
    e_res = enn.Linear(2, 2).load_state_dict({"weight": ember.zeros(2, 2), "x": ember.zeros(1)},
                                             strict=False)
    assert repr(e_res) == repr(t_res)


def test_init_distributions_match_torch():
    torch.manual_seed(0)
    ember.manual_seed(0)
    checks = [
        ("kaiming_uniform_", dict(a=math.sqrt(5))), ("kaiming_normal_", dict(mode="fan_out")),
        ("xavier_uniform_", dict(gain=1.5)), ("xavier_normal_", {}),
        ("trunc_normal_", dict(std=0.5, a=-0.4, b=0.8)), ("uniform_", dict(a=-1, b=2)),
        ("normal_", dict(mean=1, std=3)),
    ]
    for name, kwargs in checks:
        t = getattr(tnn.init, name)(torch.empty(256, 128), **kwargs).numpy()
        e = getattr(enn.init, name)(ember.empty(256, 128), **kwargs).numpy()
        assert abs(e.mean() - t.mean()) < 0.03 * max(t.std(), 1e-3) * 3, name
        assert abs(e.std() - t.std()) < 0.03 * t.std(), name
        assert e.min() >= t.min() - 0.1 * t.std() - (0 if "uniform" in name or "trunc" in name
                                                     else 10), name


def test_gain_and_linear_layer_stats_match_torch():
    for nl, p in [("relu", None), ("tanh", None), ("leaky_relu", 0.3), ("selu", None),
                  ("conv_transpose2d", None)]:
        assert enn.init.calculate_gain(nl, p) == tnn.init.calculate_gain(nl, p)
    t = tnn.Linear(300, 200)
    e = enn.Linear(300, 200)
    for name in ("weight", "bias"):
        tv = getattr(t, name).detach().numpy()
        ev = getattr(e, name).detach().numpy()
        assert abs(ev.std() - tv.std()) < 0.1 * tv.std()
        assert ev.max() <= 1 / math.sqrt(300) and tv.max() <= 1 / math.sqrt(300)


def test_hook_order_matches_torch():
    def trace(nn, lib):
        seen = []
        lin = nn.Linear(2, 2)
        lin.register_forward_pre_hook(lambda m, a: seen.append("pre"))
        lin.register_forward_hook(lambda m, a, o: seen.append("fwd"))
        lin.register_forward_hook(lambda m, a, o: seen.append("fwd0"), prepend=True)
        lin.register_full_backward_pre_hook(lambda m, go: seen.append("bpre"))
        lin.register_full_backward_hook(lambda m, gi, go: seen.append(
            ("bwd", tuple(None if g is None else tuple(g.shape) for g in gi))))
        x = lib.ones(3, 2, requires_grad=True)
        lin(x).sum().backward()
        with pytest.warns(UserWarning, match="no inputs require gradients"):
            lin(lib.ones(3, 2)).sum().backward()
        return seen

    assert trace(enn, ember) == trace(tnn, torch)


def test_backward_hook_grads_match_torch():
    def grads(nn, lib):
        lib.manual_seed(0)
        lin = nn.Linear(3, 2).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
            lin.bias.copy_(lib.tensor([0.5, -0.5]))
        out = {}
        lin.register_full_backward_hook(lambda m, gi, go: out.update(gi=gi[0].numpy(),
                                                                     go=go[0].numpy()))
        x = lib.tensor([[1.0, -1.0, 0.5]], dtype=lib.float64, requires_grad=True)
        (lin(x) ** 2).sum().backward()
        return out

    t, e = grads(tnn, torch), grads(enn, ember)
    np.testing.assert_allclose(e["go"], t["go"])
    np.testing.assert_allclose(e["gi"], t["gi"])


def test_clip_grad_matches_torch():
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=(3, 4)), rng.normal(size=5)]
    for norm_type in (2.0, 1.0, "inf", 3.0):
        out = []
        for lib, nn in ((torch, tnn), (ember, enn)):
            ps = [nn.Parameter(lib.zeros(g.shape, dtype=lib.float64)) for g in grads]
            for p, g in zip(ps, grads):
                p.grad = lib.tensor(g)
            total = nn.utils.clip_grad_norm_(ps, 0.7, norm_type=norm_type)
            out.append((total.item(), [p.grad.numpy() for p in ps]))
        assert out[1][0] == pytest.approx(out[0][0], rel=1e-12)
        for a, b in zip(out[1][1], out[0][1]):
            np.testing.assert_allclose(a, b, rtol=1e-10)


def test_sequence_utils_match_torch():
    lens = [2, 4, 1]
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=(n, 3)) for n in lens]
    res = []
    for lib, nn in ((torch, tnn), (ember, enn)):
        rnn = nn.utils.rnn
        seq = [lib.tensor(a) for a in arrays]
        padded = rnn.pad_sequence(seq, batch_first=True, padding_value=-2.0)
        packed = rnn.pack_padded_sequence(padded, lib.tensor(lens, device="cpu"), batch_first=True,
                                          enforce_sorted=False)
        unpacked, out_lens = rnn.pad_packed_sequence(packed, total_length=5)
        res.append([padded.numpy(), packed.data.numpy(), packed.batch_sizes.numpy(),
                    packed.sorted_indices.numpy(), packed.unsorted_indices.numpy(),
                    unpacked.numpy(), out_lens.numpy()])
    for e, t in zip(res[1], res[0]):
        np.testing.assert_array_equal(e, t)
