"""perspective, elastic_transform, RandomPerspective, ElasticTransform and AugMix against
torchvision: same image + same parameters -> same output.

PIL perspective is bit-identical (both call PIL with the same float32 coefficients); tensor paths
are bit-identical in uint8 and float32, float64 to rounding. Random draws cannot match
PyTorch's streams, so the random transforms are compared with their draws fixed: ``get_params``
monkeypatched, or each library's ``randint``/``rand``/``_sample_dirichlet`` replaced by the
same scripted values.
"""

import random
import re

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402
from torchvision import transforms as TT  # noqa: E402
from torchvision.transforms import functional as TF  # noqa: E402

import ember  # noqa: E402
from ember.vision import transforms as ET  # noqa: E402
from ember.vision.transforms import functional as EF  # noqa: E402

H, W = 37, 45


def _image(h=H, w=W, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack([255 * x / w, 255 * y / h, 128 + 100 * np.sin(x / 5 + y / 7)], axis=-1)
    return np.clip(base + rng.normal(0, 20, size=base.shape), 0, 255).astype(np.uint8)


ARR = _image()
PIL_IMG = Image.fromarray(ARR)
CHW = np.ascontiguousarray(ARR.transpose(2, 0, 1))
INPUTS = {
    "uint8": CHW,
    "float32": (CHW / 255.0).astype(np.float32),
    "float64": CHW / 255.0,
    "batch": np.stack([CHW, CHW[:, ::-1]]),
}
START = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
ENDS = [
    [[3, 2], [W - 5, 1], [W - 2, H - 4], [2, H - 2]],
    [[10, 7], [W - 12, 3], [W - 1, H - 1], [0, H - 9]],
    [[-4, -3], [W + 2, 1], [W + 3, H + 5], [-2, H - 1]],
]


def _pair(x):
    return torch.from_numpy(x.copy()), ember.tensor(x)


def _close(t, e, atol=None):
    """uint8 and float32 bit-identical (grid, sampling and fill rounded like torch's CPU
    kernels); float64 to rounding (torch fuses multiply-adds in double too)."""
    t_np, e_np = t.numpy(), e.numpy()
    assert t_np.shape == e_np.shape and t_np.dtype == e_np.dtype
    if atol is not None or t_np.dtype == np.float64:
        np.testing.assert_allclose(e_np, t_np, atol=atol or 1e-12, rtol=0)
    else:
        np.testing.assert_array_equal(e_np, t_np)


def _same_pil(a, b):
    assert a.mode == b.mode and a.size == b.size
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _raises_same(tfn, efn, exc):
    with pytest.raises(exc) as te:
        tfn()
    with pytest.raises(exc) as ee:
        efn()
    assert str(ee.value).replace("ember", "torch") == str(te.value)


# -- perspective --------------------------------------------------------------------------


@pytest.mark.parametrize("end", ENDS)
def test_perspective_coeffs(end):
    assert EF._get_perspective_coeffs(START, end) == TF._get_perspective_coeffs(START, end)


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("interp", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("fill", [None, 7, (10, 200, 30)])
def test_perspective_pil(end, interp, fill):
    for img in [PIL_IMG, PIL_IMG.convert("L")] if not isinstance(fill, tuple) else [PIL_IMG]:
        t = TF.perspective(img, START, end, TF.InterpolationMode(interp), fill)
        e = EF.perspective(img, START, end, EF.InterpolationMode(interp), fill)
        _same_pil(t, e)


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 5, [0.25, 0.5, 0.75], [10.0, 200.0, 30.0]])
@pytest.mark.parametrize("kind", list(INPUTS))
def test_perspective_tensor(end, interp, fill, kind):
    t, e = _pair(INPUTS[kind])
    _close(
        TF.perspective(t, START, end, TF.InterpolationMode(interp), fill),
        EF.perspective(e, START, end, EF.InterpolationMode(interp), fill),
    )


def test_perspective_errors():
    t, e = _pair(CHW)
    _raises_same(
        lambda: TF.perspective(t, START[:3], ENDS[0]),
        lambda: EF.perspective(e, START[:3], ENDS[0]),
        ValueError,
    )
    _raises_same(
        lambda: TF.perspective(t, START, ENDS[0], TF.InterpolationMode.BICUBIC),
        lambda: EF.perspective(e, START, ENDS[0], EF.InterpolationMode.BICUBIC),
        ValueError,
    )
    _raises_same(
        lambda: TF.perspective(t, START, ENDS[0], fill=[1.0, 2.0]),
        lambda: EF.perspective(e, START, ENDS[0], fill=[1.0, 2.0]),
        ValueError,
    )
    _raises_same(
        lambda: TF.perspective(t, START, ENDS[0], "bilinear"),
        lambda: EF.perspective(e, START, ENDS[0], "bilinear"),
        TypeError,
    )


def test_random_perspective_deterministic_params():
    for w, h in [(W, H), (8, 5), (1, 1)]:
        assert ET.RandomPerspective.get_params(w, h, 0.0) == TT.RandomPerspective.get_params(
            w, h, 0.0
        )


@pytest.mark.parametrize("fill", [0, 3, (1, 2, 3)])
@pytest.mark.parametrize("kind", ["uint8", "float32", "batch", "pil"])
def test_random_perspective_forward_fixed_params(monkeypatch, fill, kind):
    params = (START, ENDS[1])
    for cls in (TT.RandomPerspective, ET.RandomPerspective):
        monkeypatch.setattr(cls, "get_params", staticmethod(lambda w, h, d: params))
    t_tr, e_tr = TT.RandomPerspective(p=1.0, fill=fill), ET.RandomPerspective(p=1.0, fill=fill)
    assert repr(t_tr) == repr(e_tr)
    if kind == "pil":
        _same_pil(t_tr(PIL_IMG), e_tr(PIL_IMG))
    else:
        t, e = _pair(INPUTS[kind])
        _close(t_tr(t), e_tr(e))


def test_random_perspective_fill_error():
    _raises_same(
        lambda: TT.RandomPerspective(fill=object()),
        lambda: ET.RandomPerspective(fill=object()),
        TypeError,
    )


# -- elastic ------------------------------------------------------------------------------


def _displacement(scale, seed=0, h=H, w=W):
    d = np.random.default_rng(seed).uniform(-scale, scale, (1, h, w, 2)).astype(np.float32)
    return torch.from_numpy(d.copy()), ember.tensor(d)


@pytest.mark.parametrize("scale", [0.05, 0.3])
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, [0.5, 0.25, 1.0], [10.0, 20.0, 30.0]])
@pytest.mark.parametrize("kind", list(INPUTS))
def test_elastic_tensor(scale, interp, fill, kind):
    td, ed = _displacement(scale)
    t, e = _pair(INPUTS[kind])
    _close(
        TF.elastic_transform(t, td, TF.InterpolationMode(interp), fill),
        EF.elastic_transform(e, ed, EF.InterpolationMode(interp), fill),
    )


@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_elastic_pil(interp, mode):
    td, ed = _displacement(0.2, seed=1)
    img = PIL_IMG.convert(mode)
    _same_pil(
        TF.elastic_transform(img, td, TF.InterpolationMode(interp)),
        EF.elastic_transform(img, ed, EF.InterpolationMode(interp)),
    )


def test_elastic_errors():
    t, e = _pair(CHW)
    td, ed = _displacement(0.1, h=H + 1)
    _raises_same(
        lambda: TF.elastic_transform(t, td), lambda: EF.elastic_transform(e, ed), ValueError
    )
    _raises_same(
        lambda: TF.elastic_transform(t, td.numpy()),
        lambda: EF.elastic_transform(e, ed.numpy()),
        TypeError,
    )
    _raises_same(
        lambda: TF.elastic_transform(CHW, _displacement(0.1)[0]),
        lambda: EF.elastic_transform(CHW, _displacement(0.1)[1]),
        TypeError,
    )


@pytest.mark.parametrize(
    "alpha, sigma",
    [([50.0, 50.0], [5.0, 5.0]), ([1.0, 20.0], [0.4, 2.5]), ([3.0, 4.0], [0.0, 0.0])],
)
def test_elastic_get_params_with_same_noise(monkeypatch, alpha, sigma):
    noise = np.random.default_rng(2).random((2, 1, 1, H, W), dtype=np.float32)
    draws = {"t": iter(noise), "e": iter(noise)}
    monkeypatch.setattr(torch, "rand", lambda size: torch.from_numpy(next(draws["t"]).copy()))
    monkeypatch.setattr(ember, "rand", lambda size: ember.tensor(next(draws["e"])))
    _close(
        TT.ElasticTransform.get_params(alpha, sigma, [H, W]),
        ET.ElasticTransform.get_params(alpha, sigma, [H, W]),
        atol=1e-6,  # gaussian_blur: torch's conv2d vs a separable correlation
    )


def test_elastic_get_params_zero_sigma_error(monkeypatch):
    # torchvision blurs with both sigmas: one zero sigma is an error of gaussian_blur
    _raises_same(
        lambda: TT.ElasticTransform.get_params([1.0, 1.0], [0.5, 0.0], [H, W]),
        lambda: ET.ElasticTransform.get_params([1.0, 1.0], [0.5, 0.0], [H, W]),
        ValueError,
    )


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"alpha": 50}, TypeError),
        ({"alpha": [1.0, 2.0, 3.0]}, ValueError),
        ({"alpha": [1, 2]}, TypeError),
        ({"sigma": 5}, TypeError),
        ({"sigma": [1.0]}, ValueError),
        ({"fill": None}, TypeError),
    ],
)
def test_elastic_transform_init_errors(kwargs, exc):
    _raises_same(lambda: TT.ElasticTransform(**kwargs), lambda: ET.ElasticTransform(**kwargs), exc)


def test_elastic_transform_repr():
    for kw in [{}, {"alpha": (1.0, 2.0), "sigma": 3.0, "fill": (1, 2, 3), "interpolation": 0}]:
        assert repr(ET.ElasticTransform(**kw)) == repr(TT.ElasticTransform(**kw))


# -- AugMix -------------------------------------------------------------------------------


def _scripted_randint(lib, seed):
    """``randint`` returning values of a seeded Python stream: both libraries draw the same."""
    r = random.Random(seed)

    def randint(*args, **kwargs):
        if "high" in kwargs:
            low, high = kwargs.get("low", 0), kwargs["high"]
        elif len(args) >= 2 and not isinstance(args[1], (tuple, list)):
            low, high = args[0], args[1]
        else:
            low, high = 0, args[0]
        return lib.tensor([r.randrange(low, high)])

    return randint


def _augmix_pair(monkeypatch, kwargs, seed, n):
    rng = np.random.default_rng(seed)
    width = kwargs.get("mixture_width", 3)
    weights = [rng.dirichlet([1.0, 1.0], n), rng.dirichlet([1.0] * width, n)]
    outs = []
    for cls, lib in [(TT.AugMix, torch), (ET.AugMix, ember)]:
        tr = cls(**kwargs)
        it = iter(weights)
        tr._sample_dirichlet = lambda p, lib=lib, it=it: lib.tensor(next(it), dtype=lib.float32)
        monkeypatch.setattr(lib, "randint", _scripted_randint(lib, seed))
        outs.append(tr)
    return outs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"severity": 10, "chain_depth": 2}, {"all_ops": False, "mixture_width": 4, "alpha": 0.5}],
)
@pytest.mark.parametrize("kind", ["uint8", "batch", "pil"])
def test_augmix_fixed_choices(monkeypatch, seed, kwargs, kind):
    img = PIL_IMG if kind == "pil" else INPUTS[kind]
    n = 2 if kind == "batch" else 1
    t_tr, e_tr = _augmix_pair(monkeypatch, dict(kwargs, fill=[1.0, 2.0, 3.0]), seed, n)
    if kind == "pil":
        _same_pil(t_tr(img), e_tr(img))
    else:
        t, e = _pair(img)
        out_t, out_e = t_tr(t), e_tr(e)
        np.testing.assert_array_equal(out_e.numpy(), out_t.numpy())


def test_augmix_space_values():
    for all_ops in [True, False]:
        t = TT.AugMix(all_ops=all_ops)._augmentation_space(10, (H, W))
        e = ET.AugMix(all_ops=all_ops)._augmentation_space(10, (H, W))
        assert list(t) == list(e)
        for name, (mags, signed) in t.items():
            assert e[name][1] == signed
            if mags.ndim == 0:
                assert e[name][0] is None
            else:
                np.testing.assert_array_equal(e[name][0], mags.numpy())


def test_augmix_errors_and_repr():
    _raises_same(lambda: TT.AugMix(severity=0), lambda: ET.AugMix(severity=0), ValueError)
    for kw in [{}, {"severity": 5, "fill": [1, 2, 3], "all_ops": False}]:
        assert repr(ET.AugMix(**kw)) == repr(TT.AugMix(**kw))
    assert re.search(r"AugMix\(severity=3", repr(ET.AugMix()))
