"""Parity with torchvision 0.29: GoogLeNet, Inception v3, MNASNet, RegNet, ShuffleNetV2.

torchvision builds each model (weights=None) with randomised parameters and batch-norm
statistics; its state_dict goes through a real ``torch.save`` file into ``ember.load`` +
``load_state_dict``, and the outputs on the same random input agree to 1e-4 relative (eval
mode; and train mode with the auxiliary heads). Besides: the module trees and state_dict
layouts of every builder, RegNet's block parameters, default-initialisation statistics,
gradients, MNASNet's version-1 checkpoints and the weights enums.
"""

import warnings
from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import torchvision.models.regnet as tv_regnet  # noqa: E402

import ember  # noqa: E402
from ember.vision import models  # noqa: E402
from ember.vision.models import regnet  # noqa: E402

pytestmark = pytest.mark.parity

BUILDERS = sorted(
    n
    for n in torchvision.models.list_models()
    if n.startswith(("googlenet", "inception", "mnasnet", "regnet", "shufflenet"))
)

# (builder name, kwargs, input side, batch): eval-mode outputs
# (GoogLeNet and Inception keep their layers' default initialisation: their truncated-normal
# draws take seconds and are compared in test_default_init_statistics_match.)
_NO_INIT = {"init_weights": False}
CASES = [
    ("googlenet", _NO_INIT, 64, 2),
    ("googlenet", {**_NO_INIT, "transform_input": True, "aux_logits": False}, 64, 1),
    ("inception_v3", {**_NO_INIT, "transform_input": True}, 75, 1),
    ("mnasnet0_5", {}, 64, 2),
    ("mnasnet1_0", {}, 64, 2),
    ("regnet_x_400mf", {}, 64, 2),
    ("regnet_y_400mf", {}, 64, 2),
    ("shufflenet_v2_x0_5", {}, 64, 2),
    ("shufflenet_v2_x1_0", {}, 64, 2),
]

WEIGHTS = sorted(
    n
    for n in dir(torchvision.models)
    if n.endswith("_Weights")
    and n.startswith(("GoogLeNet", "Inception", "MNASNet", "RegNet", "ShuffleNet"))
)


def _randomize(module):
    """Give every float tensor non-trivial values (zero-initialised biases, unit BN stats)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for mod in module.modules():
            for name, t in list(mod.named_parameters(recurse=False)) + list(
                mod.named_buffers(recurse=False)
            ):
                if not t.is_floating_point():
                    continue
                is_norm = isinstance(mod, torch.nn.BatchNorm2d)
                if name == "running_var" or (is_norm and name == "weight"):
                    t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
                elif name in ("running_mean", "bias"):
                    t.copy_(torch.randn(t.shape, generator=gen) * 0.1)


def _tv_model(name, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # GoogLeNet/Inception's init warning
        return torchvision.models.get_model(name, weights=None, **kwargs)


def _ember_model(name, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return models.get_model(name, **kwargs)


def _transfer(ref, ours, tmp_path):
    """torchvision's state through a torch.save file into ours; layouts must be equal."""
    path = tmp_path / "model.pth"
    torch.save(ref.state_dict(), path)
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
    result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys


def _assert_close(got, expected):
    assert got.shape == expected.shape
    scale = np.abs(expected).max()
    assert scale > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)


def _tv_repr(module) -> str:
    return repr(module).replace("torchvision.", "ember.vision.").replace("torch.", "ember.")


@pytest.mark.parametrize(
    "name,kwargs,side,batch", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_outputs_match_torchvision(name, kwargs, side, batch, tmp_path):
    torch.manual_seed(0)
    ref = _tv_model(name, **kwargs).eval()
    _randomize(ref)
    ours = _ember_model(name, **kwargs).eval()
    _transfer(ref, ours, tmp_path)

    x = np.random.RandomState(1).standard_normal((batch, 3, side, side)).astype(np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.tensor(x)).numpy()
    _assert_close(got, expected)


def _train_outputs_match(name, kwargs, side, tmp_path):
    torch.manual_seed(0)
    ref = _tv_model(name, **kwargs).train()
    _randomize(ref)
    ours = _ember_model(name, **kwargs).train()
    _transfer(ref, ours, tmp_path)
    x = np.random.RandomState(2).standard_normal((2, 3, side, side)).astype(np.float32)
    expected = ref(torch.from_numpy(x))
    got = ours(ember.tensor(x))
    assert type(got).__name__ == type(expected).__name__
    assert got._fields == expected._fields
    for a, b in zip(got, expected):
        # batch statistics through ~100 layers: float32 sums in another order drift further
        a, b = a.detach().numpy(), b.detach().numpy()
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())
    # batch statistics were folded into the running ones alike
    ref_sd = ref.state_dict()
    for key, value in ours.state_dict().items():
        if key.endswith("running_var"):
            np.testing.assert_allclose(value.numpy(), ref_sd[key].numpy(), rtol=1e-3, atol=1e-5)


def test_googlenet_train_mode_aux_outputs_match(tmp_path):
    kwargs = {**_NO_INIT, "dropout": 0.0, "dropout_aux": 0.0}
    _train_outputs_match("googlenet", kwargs, 64, tmp_path)


@pytest.mark.slow
def test_inception_v3_train_mode_aux_outputs_match(tmp_path):
    # the auxiliary head needs the 17x17 features of a 299x299 input
    _train_outputs_match("inception_v3", {**_NO_INIT, "dropout": 0.0}, 299, tmp_path)


@pytest.mark.parametrize("name", ["shufflenet_v2_x0_5", "regnet_y_400mf", "mnasnet0_5"])
def test_gradients_match_torchvision(name, tmp_path):
    torch.manual_seed(0)
    ref = _tv_model(name, num_classes=5).eval()  # frozen batch norms: a well-conditioned loss
    _randomize(ref)
    ours = _ember_model(name, num_classes=5).eval()
    _transfer(ref, ours, tmp_path)
    x = np.random.RandomState(3).standard_normal((2, 3, 48, 48)).astype(np.float32)
    target = [1, 4]
    torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.tensor(target)).backward()
    ember.nn.functional.cross_entropy(ours(ember.tensor(x)), ember.tensor(target)).backward()
    ref_grads = {n: p.grad.numpy() for n, p in ref.named_parameters()}
    for n, p in ours.named_parameters():
        expected = ref_grads[n]
        np.testing.assert_allclose(
            p.grad.numpy(), expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max() + 1e-9
        )


def _tv_meta_model(name, **kwargs):
    """torchvision's model on the meta device (its RegNet computes its BlockParams with tensors
    of the default device, so those are computed on the CPU first)."""
    if name.startswith("regnet"):
        params = tv_regnet.BlockParams.from_init_params(**regnet._ARCHS[name])
        norm = partial(torch.nn.BatchNorm2d, eps=1e-05, momentum=0.1)
        with torch.device("meta"):
            return tv_regnet.RegNet(params, norm_layer=norm, **kwargs)
    with torch.device("meta"):
        return _tv_model(name, **kwargs)


@pytest.mark.parametrize("name", BUILDERS)
def test_module_tree_and_state_dict_layout_match(name):
    kwargs = {"init_weights": False} if name in ("googlenet", "inception_v3") else {}
    ref = _tv_meta_model(name, **kwargs)
    with ember.device("meta"):
        ours = models.get_model(name, **kwargs)
    assert repr(ours) == _tv_repr(ref)
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
        assert str(our_sd[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
    assert our_sd._metadata[""] == ref_sd._metadata[""]  # MNASNet saves version 2


REGNET_SETTINGS = [dict(a) for a in regnet._ARCHS.values()] + [
    dict(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8),
    dict(depth=13, w_0=32, w_a=17.3, w_m=2.7, group_width=12, bottleneck_multiplier=2.0),
    dict(depth=30, w_0=64, w_a=5.5, w_m=1.3, group_width=40, se_ratio=0.5),
    dict(depth=9, w_0=8, w_a=0.0, w_m=3.0, group_width=4),
]


@pytest.mark.parametrize("settings", REGNET_SETTINGS)
def test_regnet_block_params_match(settings):
    ours = regnet.BlockParams.from_init_params(**settings)
    ref = tv_regnet.BlockParams.from_init_params(**settings)
    for field in ("depths", "widths", "group_widths", "bottleneck_multipliers", "strides"):
        assert getattr(ours, field) == getattr(ref, field), field
    assert ours.se_ratio == ref.se_ratio


INIT_CASES = ["googlenet", "inception_v3", "mnasnet0_5", "regnet_y_400mf", "shufflenet_v2_x0_5"]


@pytest.mark.parametrize("name", INIT_CASES)
def test_default_init_statistics_match(name):
    """Same initialisation scheme: per-tensor mean/std close to torchvision's."""
    torch.manual_seed(0)
    ref = _tv_model(name).state_dict()
    ember.manual_seed(0)
    ours = _ember_model(name).state_dict()
    checked = 0
    for key, value in ref.items():
        if not value.is_floating_point() or value.numel() < 2000:
            continue
        ours_np, ref_np = ours[key].numpy(), value.numpy()
        assert abs(ours_np.std() - ref_np.std()) <= 0.1 * ref_np.std() + 1e-6, key
        assert abs(ours_np.mean() - ref_np.mean()) <= 0.1 * ref_np.std() + 1e-6, key
        if value.numel() >= 20000:
            # the same shape of distribution (uniform or normal) where the tail is measurable;
            # not the extremes: the truncated normal draws its bound +-2 with probability 2**-24
            # in both, from the closed end of its uniform draw
            q_ours = np.quantile(np.abs(ours_np), 0.99)
            q_ref = np.quantile(np.abs(ref_np), 0.99)
            assert abs(q_ours - q_ref) <= 0.1 * q_ref + 1e-6, key
        checked += 1
    assert checked > 10


def test_mnasnet_version_1_checkpoint_matches_torchvision(tmp_path):
    torch.manual_seed(0)
    ref = torchvision.models.mnasnet0_5()
    # torchvision's own patch turns the model into the first version (fixed 32/16 stem)
    with pytest.warns(UserWarning, match="A new version of MNASNet"):
        ref._load_from_state_dict({}, "", {"version": 1}, False, [], [], [])
    _randomize(ref)
    ref.eval()
    path = tmp_path / "mnasnet_v1.pth"
    torch.save(ref.state_dict(), path)
    assert ref.state_dict()._metadata[""]["version"] == 1

    ours = models.mnasnet0_5()
    with pytest.warns(UserWarning, match="A new version of MNASNet"):
        result = ours.load_state_dict(ember.load(str(path)))
    assert not result.missing_keys and not result.unexpected_keys
    ours.eval()
    assert repr(ours) == _tv_repr(ref)
    assert ours.state_dict()._metadata[""]["version"] == 1
    x = np.random.RandomState(4).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.tensor(x)).numpy()
    _assert_close(got, expected)

    # and back: Ember's version-1 file loads into torchvision the same way
    ember.save(ours.state_dict(), str(tmp_path / "ours.pth"))
    back = torchvision.models.mnasnet0_5()
    with pytest.warns(UserWarning, match="A new version of MNASNet"):
        back.load_state_dict(torch.load(tmp_path / "ours.pth", weights_only=True))


def test_builder_errors_match_torchvision():
    def message(fn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                fn()
        return type(info.value).__name__, str(info.value)

    tv, em = torchvision.models, models
    calls = [
        lambda m: m.regnet_x_400mf(depth=3),
        lambda m: m.regnet_y_400mf(se_ratio=0.5),
        lambda m: m.googlenet(weights="DEFAULT", num_classes=10),
        lambda m: m.googlenet(weights="DEFAULT", aux_logits=False),
        lambda m: m.inception_v3(weights="DEFAULT", aux_logits=False),
        lambda m: m.mnasnet0_5(weights="DEFAULT", num_classes=10),
        lambda m: m.shufflenet_v2_x1_0(weights="DEFAULT", num_classes=10),
        lambda m: m.regnet_y_128gf(pretrained=True),
        lambda m: m.MNASNet(-1.0),
        lambda m: m.ShuffleNetV2([1, 2], [1, 2, 3, 4, 5]),
        lambda m: m.GoogLeNet(blocks=[]),
        lambda m: m.Inception3(inception_blocks=[None]),
    ]
    for call in calls:
        ours, theirs = message(partial(call, em)), message(partial(call, tv))
        assert (ours[0], ours[1].replace("ember.vision.", "torchvision.")) == theirs


@pytest.mark.parametrize("enum_name", WEIGHTS)
def test_weights_enums_match_torchvision(enum_name):
    ours = getattr(models, enum_name)
    ref = getattr(torchvision.models, enum_name)
    assert [m.name for m in ours] == [m.name for m in ref]
    assert ours.DEFAULT.name == ref.DEFAULT.name
    for a, b in zip(ours, ref):
        assert a.url == b.url
        cats_a, cats_b = a.meta["categories"], b.meta["categories"]
        assert len(cats_a) == len(cats_b) == 1000
        diff = [i for i, (x, y) in enumerate(zip(cats_a, cats_b)) if x != y]
        # Index 134 is "crane" (timm's lemma) vs torchvision's "crane bird": models/ATTRIBUTION.md.
        assert diff in ([], [134])
        meta_a = {k: v for k, v in a.meta.items() if k != "categories"}
        meta_b = {k: v for k, v in b.meta.items() if k != "categories"}
        assert meta_a == meta_b
        ta, tb = a.transforms(), b.transforms()
        assert ta.crop_size == tb.crop_size and ta.resize_size == tb.resize_size
        assert ta.mean == tb.mean and ta.std == tb.std
        assert ta.interpolation.value == tb.interpolation.value
        assert ta.antialias == tb.antialias
