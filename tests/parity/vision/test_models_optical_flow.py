"""Parity with torchvision: models.optical_flow (RAFT) and utils.flow_to_image.

torchvision builds raft_small and raft_large (weights=None), its state is randomised (batch
norm statistics and affine parameters, biases), its state_dict goes through a real
``torch.save`` file into ``ember.load`` + ``load_state_dict``, and the eval-mode flow
predictions of every update agree to 1e-4 relative (measured: about 3e-6; the iterative
refinement does not amplify float32 noise over a few updates).

The gradients of a training step are compared in float64 (both libraries' ``make_coords_grid``
patched to float64; torchvision's RAFT cannot run in float64 otherwise): in float32 they agree
only to about 1e-2 in the encoders, because a pre-activation within float32 noise of zero
takes the other side of a ReLU in one library (a handful of the ~10^6 activations), which
moves the gradient of everything upstream of it; in float64 they agree to 1e-9.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from torchvision.models.optical_flow import raft as tv_raft  # noqa: E402
from torchvision.utils import _make_colorwheel as tv_make_colorwheel  # noqa: E402
from torchvision.utils import flow_to_image as tv_flow_to_image  # noqa: E402

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision._flow_to_image import _make_colorwheel, flow_to_image  # noqa: E402
from ember.vision.models import optical_flow  # noqa: E402
from ember.vision.models.optical_flow import raft as ember_raft  # noqa: E402

tv_optical_flow = torchvision.models.optical_flow

BUILDERS = ["raft_small", "raft_large"]


def _randomize(module):
    """Give every float tensor non-trivial values (unit BN stats, zero-initialised biases)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if not t.is_floating_point():
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif name.endswith(("running_mean", "bias")):
                t.copy_(torch.randn(t.shape, generator=gen) * 0.1)
            elif t.ndim == 1:  # batch norm weights
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)


def _build_both(name, tmp_path, randomize=True):
    torch.manual_seed(0)
    ref = getattr(tv_optical_flow, name)(weights=None)
    if randomize:
        _randomize(ref)
    ours = getattr(optical_flow, name)()
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
    path = tmp_path / f"{name}.pth"
    torch.save(ref_sd, path)
    result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys
    return ref, ours


def _image_pair(batch, side, dtype=np.float32):
    rs = np.random.RandomState(1)
    x1 = rs.uniform(-1, 1, (batch, 3, side, side))
    # the second image: the first shifted, plus noise, so the flow has something to find
    x2 = np.roll(x1, (3, -2), axis=(2, 3)) + 0.05 * rs.standard_normal(x1.shape)
    return x1.astype(dtype), x2.astype(dtype)


@pytest.mark.parametrize("name", BUILDERS)
def test_flow_predictions_match_torchvision(name, tmp_path):
    ref, ours = _build_both(name, tmp_path)
    ref.eval()
    ours.eval()
    x1, x2 = _image_pair(2, 128)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x1), torch.from_numpy(x2), num_flow_updates=4)
    with ember.no_grad():
        got = ours(ember.tensor(x1), ember.tensor(x2), num_flow_updates=4)
    assert len(got) == len(expected) == 4
    for g, e in zip(got, expected):
        e = e.numpy()
        assert tuple(g.shape) == e.shape == (2, 2, 128, 128)
        scale = np.abs(e).max()
        assert scale > 0
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-4 * scale)


def test_module_tree_matches():
    for name in BUILDERS:
        torch.manual_seed(0)
        ref = getattr(tv_optical_flow, name)(weights=None)
        ours = getattr(optical_flow, name)()
        ref_tree = [(n, type(m).__name__) for n, m in ref.named_modules()]
        our_tree = [(n, type(m).__name__) for n, m in ours.named_modules()]
        assert our_tree == ref_tree


def test_default_init_statistics_match():
    torch.manual_seed(0)
    ref = tv_optical_flow.raft_large(weights=None).state_dict()
    ember.manual_seed(0)
    ours = optical_flow.raft_large().state_dict()
    for key, value in ref.items():
        if not value.is_floating_point() or value.numel() < 256:
            continue
        a, b = value.numpy(), ours[key].numpy()
        # the means of >= 256 draws: 0.5 std is more than 5 standard errors of their difference
        std = float(a.std())
        assert float(a.mean()) == pytest.approx(float(b.mean()), abs=0.5 * std + 1e-6), key
        assert float(a.std()) == pytest.approx(float(b.std()), rel=0.1, abs=1e-6), key


def _float64_coords(monkeypatch):
    for module in (tv_raft, ember_raft):
        original = module.make_coords_grid
        monkeypatch.setattr(
            module, "make_coords_grid", lambda *a, _f=original, **k: _f(*a, **k).double()
        )


def test_training_step_gradients_match_in_float64(tmp_path, monkeypatch):
    _float64_coords(monkeypatch)
    ref, ours = _build_both("raft_large", tmp_path)
    ref.double().train()
    ours.double().train()
    x1, x2 = _image_pair(1, 128, np.float64)
    target = np.random.RandomState(2).standard_normal((1, 2, 128, 128))

    def sequence_loss(preds, lib):
        t = lib.tensor(target)
        return sum(
            0.8 ** (len(preds) - i - 1) * (p - t).pow(2).sum(dim=1).sqrt().mean()
            for i, p in enumerate(preds)
        )

    expected = sequence_loss(ref(torch.from_numpy(x1), torch.from_numpy(x2), 2), torch)
    expected.backward()
    got = sequence_loss(ours(ember.tensor(x1), ember.tensor(x2), 2), ember)
    got.backward()
    assert float(got.detach()) == pytest.approx(float(expected.detach()), rel=1e-10)
    ref_params = dict(ref.named_parameters())
    for key, p in ours.named_parameters():
        e = ref_params[key].grad.numpy()
        # the biases before a norm have a zero gradient up to rounding
        scale = np.abs(e).max() if np.abs(e).max() > 1e-8 else 1.0
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=0, atol=1e-9 * scale, err_msg=key)
    # batch norm running statistics updated the same way
    ref_sd = ref.state_dict()
    for key, value in ours.state_dict().items():
        if "running" in key:
            np.testing.assert_allclose(value.numpy(), ref_sd[key].numpy(), rtol=1e-10)


def test_registry_matches_torchvision():
    assert models.list_models(module=optical_flow) == torchvision.models.list_models(
        module=tv_optical_flow
    )
    for name in BUILDERS:
        assert hasattr(models, name) == hasattr(torchvision.models, name)
    public = {n for n in dir(tv_optical_flow) if not n.startswith("_")}
    assert public <= set(dir(optical_flow))
    assert set(ember_raft.__all__) == set(tv_raft.__all__)
    for block in ("ResidualBlock", "BottleneckBlock", "FeatureEncoder", "MotionEncoder",
                  "ConvGRU", "RecurrentBlock", "FlowHead", "UpdateBlock", "MaskPredictor",
                  "CorrBlock"):  # fmt: skip
        assert hasattr(ember_raft, block)


@pytest.mark.parametrize("enum_name", ["Raft_Large_Weights", "Raft_Small_Weights"])
def test_weights_enums_match_torchvision(enum_name):
    ours = getattr(optical_flow, enum_name)
    ref = getattr(tv_optical_flow, enum_name)
    assert list(ours.__members__) == list(ref.__members__)
    assert ours.DEFAULT.name == ref.DEFAULT.name
    for a, b in zip(ours, ref):
        assert a.name == b.name
        assert a.url == b.url
        assert a.meta == b.meta
        ta, tb = a.transforms(), b.transforms()
        assert type(ta).__name__ == type(tb).__name__ == "OpticalFlow"
        assert repr(ta) == repr(tb) and ta.describe() == tb.describe()


def test_optical_flow_preset_matches_torchvision():
    ours = optical_flow.Raft_Small_Weights.DEFAULT.transforms()
    ref = tv_optical_flow.Raft_Small_Weights.DEFAULT.transforms()
    rs = np.random.RandomState(0)
    a = rs.randint(0, 256, (2, 3, 16, 16)).astype(np.uint8)
    b = rs.randint(0, 256, (2, 3, 16, 16)).astype(np.uint8)
    got = ours(ember.tensor(a), ember.tensor(b))
    expected = ref(torch.from_numpy(a), torch.from_numpy(b))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, atol=1e-6)


def test_flow_to_image_matches_torchvision():
    np.testing.assert_array_equal(_make_colorwheel().numpy(), tv_make_colorwheel().numpy())
    for seed, shape in enumerate([(2, 2, 64, 80), (2, 33, 17), (1, 2, 1, 1)]):
        flow = (np.random.RandomState(seed).standard_normal(shape) * 5).astype(np.float32)
        got = flow_to_image(ember.tensor(flow)).numpy()
        expected = tv_flow_to_image(torch.from_numpy(flow)).numpy()
        assert got.dtype == expected.dtype == np.uint8
        np.testing.assert_array_equal(got, expected)
    # the flows RAFT predicts
    flow = np.zeros((1, 2, 8, 8), dtype=np.float32)
    flow[0, 0, :, 4:] = 2.5
    np.testing.assert_array_equal(
        flow_to_image(ember.tensor(flow)).numpy(), tv_flow_to_image(torch.from_numpy(flow)).numpy()
    )


def test_errors_match_torchvision(tmp_path):
    ref, ours = _build_both("raft_small", tmp_path, randomize=False)
    x = np.zeros((1, 3, 124, 128), dtype=np.float32)
    y = np.zeros((1, 3, 128, 128), dtype=np.float32)
    for a, b in ((x, x), (y, y[:, :, :64, :64]), (y[:, :, :64, :64], y[:, :, :64, :64])):
        with pytest.raises(ValueError) as expected:
            ref(torch.from_numpy(a), torch.from_numpy(b))
        with pytest.raises(ValueError) as got:
            ours(ember.tensor(a), ember.tensor(b))
        assert str(got.value).replace("ember.Size", "torch.Size") == str(expected.value)
    for bad in (np.zeros((1, 3, 4, 4), np.float32), np.zeros((2, 4, 4), np.float64)):
        with pytest.raises(ValueError) as expected:
            tv_flow_to_image(torch.from_numpy(bad))
        with pytest.raises(ValueError) as got:
            flow_to_image(ember.tensor(bad))
        assert str(got.value).replace("ember.", "torch.") == str(expected.value)
