"""ember.vision.transforms against torchvision.transforms (v1), on PIL images and tensors.

PIL paths must be bit-identical; tensor paths within one uint8 level / 1e-5 in float.
Random transforms are compared through the functional API with fixed parameters, or through
``get_params`` paths that do not draw (the deterministic fallbacks).
"""

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


def _image(h=47, w=61, seed=0):
    """A smooth colour gradient plus noise: a 'real-looking' RGB test image."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack([255 * x / w, 255 * y / h, 128 + 100 * np.sin(x / 5 + y / 7)], axis=-1)
    noisy = base + rng.normal(0, 20, size=base.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


ARR = _image()
PIL_IMG = Image.fromarray(ARR)


def _tensors(batched=False):
    chw = np.ascontiguousarray(ARR.transpose(2, 0, 1))
    if batched:
        chw = np.stack([chw, chw[:, ::-1].copy()])
    u8_t, u8_e = torch.from_numpy(chw.copy()), ember.from_numpy(chw.copy())
    f = (chw / 255.0).astype(np.float32)
    return (u8_t, u8_e), (torch.from_numpy(f.copy()), ember.from_numpy(f.copy()))


def _same_pil(a, b):
    assert a.mode == b.mode and a.size == b.size
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _close_tensor(t, e, max_diff=None):
    e_np = e.numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    t_np = t.numpy()
    assert e_np.shape == t_np.shape
    assert e_np.dtype == t_np.dtype
    if t_np.dtype == np.uint8:
        diff = np.abs(e_np.astype(np.int64) - t_np.astype(np.int64))
        assert diff.max(initial=0) <= (1 if max_diff is None else max_diff)
    else:
        np.testing.assert_allclose(e_np, t_np, atol=1e-5 if max_diff is None else max_diff, rtol=0)


def _check_all(name, *args, tensor=True, pil=True, batched=True, **kwargs):
    """Run ``F.<name>`` on a PIL image and on uint8/float (batched) tensors in both libraries."""
    if pil:
        _same_pil(
            getattr(TF, name)(PIL_IMG, *args, **kwargs), getattr(EF, name)(PIL_IMG, *args, **kwargs)
        )
    if tensor:
        for b in [False, True] if batched else [False]:
            for t, e in _tensors(b):
                _close_tensor(
                    getattr(TF, name)(t, *args, **kwargs), getattr(EF, name)(e, *args, **kwargs)
                )


# -- conversions --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "LA", "I", "F", "1", "I;16"])
def test_to_tensor_and_pil_to_tensor(mode):
    img = (
        PIL_IMG.convert(mode)
        if mode != "I;16"
        else Image.fromarray(ARR[..., 0].astype(np.uint16) * 200)
    )
    _close_tensor(TF.to_tensor(img), EF.to_tensor(img), 0)
    if mode != "I;16":
        _close_tensor(TF.pil_to_tensor(img), EF.pil_to_tensor(img), 0)


def test_to_tensor_ndarray():
    _close_tensor(TF.to_tensor(ARR), EF.to_tensor(ARR), 0)
    f = ARR.astype(np.float64) / 3
    _close_tensor(TF.to_tensor(f), EF.to_tensor(f), 0)


@pytest.mark.parametrize("mode", [None, "RGB", "HSV", "YCbCr"])
def test_to_pil_image_rgb(mode):
    (t, e), (tf, ef) = _tensors()
    _same_pil(TF.to_pil_image(t, mode), EF.to_pil_image(e, mode))
    _same_pil(TF.to_pil_image(tf, mode), EF.to_pil_image(ef, mode))


def test_to_pil_image_other_modes():
    for arr in [
        ARR[..., :1],
        ARR[..., :2],
        np.dstack([ARR, ARR[..., :1]]),
        ARR[..., 0].astype(np.int32),
        ARR[..., 0].astype(np.float32) / 255,
        ARR[..., 0].astype(np.int16),
    ]:
        _same_pil(TF.to_pil_image(arr), EF.to_pil_image(arr))
    _same_pil(
        TF.to_pil_image(ARR[..., :1].astype(np.float32), "F"),
        EF.to_pil_image(ARR[..., :1].astype(np.float32), "F"),
    )
    _same_pil(
        TF.to_pil_image(np.dstack([ARR, ARR[..., :1]]), "CMYK"),
        EF.to_pil_image(np.dstack([ARR, ARR[..., :1]]), "CMYK"),
    )
    for bad in [dict(pic=ARR, mode="RGBA"), dict(pic=ARR[..., :1], mode="RGB")]:
        with pytest.raises(ValueError) as te:
            TF.to_pil_image(**bad)
        with pytest.raises(ValueError, match=re.escape(str(te.value))):
            EF.to_pil_image(**bad)


@pytest.mark.parametrize("dst", ["float32", "float64", "uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("src", ["float32", "float64", "uint8", "int32"])
def test_convert_image_dtype(src, dst):
    arr = np.arange(0, 255, 7, dtype=np.uint8).reshape(1, 1, -1)
    if src.startswith("float"):
        arr = arr.astype(src) / 255
    else:
        arr = (arr.astype(np.int64) * (np.iinfo(src).max // 255)).astype(src)
    t, e = torch.from_numpy(arr.copy()), ember.from_numpy(arr.copy())
    tdt, edt = getattr(torch, dst), getattr(ember, dst)
    try:
        expected = TF.convert_image_dtype(t, tdt)
    except RuntimeError as err:
        with pytest.raises(RuntimeError, match=str(err).replace("torch.", "ember.")):
            EF.convert_image_dtype(e, edt)
        return
    got = EF.convert_image_dtype(e, edt)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_normalize():
    _, (t, e) = _tensors(batched=True)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    _close_tensor(TF.normalize(t, mean, std), EF.normalize(e, mean, std))
    out = ET.Normalize(mean, std, inplace=True)(e)
    assert out is e
    _close_tensor(TT.Normalize(mean, std)(t), e)


# -- geometry -----------------------------------------------------------------------------

RESIZE_SIZES = [20, [31], (30, 41), (90, 130), (47, 30), (13, 100)]


@pytest.mark.parametrize("size", RESIZE_SIZES)
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_resize(size, interp):
    mode = getattr(TF.InterpolationMode, interp)
    _same_pil(
        TF.resize(PIL_IMG, size, mode),
        EF.resize(PIL_IMG, size, getattr(EF.InterpolationMode, interp)),
    )
    for antialias in [True, False]:
        for b in [False, True]:
            for t, e in _tensors(b):
                _close_tensor(
                    TF.resize(t, size, mode, antialias=antialias),
                    EF.resize(e, size, getattr(EF.InterpolationMode, interp), antialias=antialias),
                )


@pytest.mark.parametrize("size", RESIZE_SIZES)
def test_resize_nearest_exact(size):
    for t, e in _tensors(True):
        _close_tensor(
            TF.resize(t, size, TF.InterpolationMode.NEAREST_EXACT),
            EF.resize(e, size, EF.InterpolationMode.NEAREST_EXACT),
            0,
        )


def test_resize_max_size_and_pil_int_constants():
    _check_all("resize", 20, max_size=25)
    _same_pil(
        TT.Resize(24, interpolation=Image.BICUBIC)(PIL_IMG), ET.Resize(24, interpolation=3)(PIL_IMG)
    )
    with pytest.raises(ValueError, match="max_size = 20 must be strictly greater"):
        EF.resize(PIL_IMG, 20, max_size=20)


@pytest.mark.parametrize("size", [20, (30, 41), (47, 61), (60, 70), (50, 10), [11]])
def test_center_crop(size):
    _check_all("center_crop", size)
    (t, e), _ = _tensors()
    _close_tensor(TT.CenterCrop(size)(t), ET.CenterCrop(size)(e), 0)


@pytest.mark.parametrize(
    "box", [(3, 5, 20, 30), (-4, -6, 20, 30), (40, 50, 20, 30), (0, 0, 47, 61)]
)
def test_crop(box):
    _check_all("crop", *box)


@pytest.mark.parametrize("padding", [3, [2], (2, 5), (1, 2, 3, 4), (-2, 3, 1, -1)])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad(padding, mode):
    _check_all("pad", padding, fill=7, padding_mode=mode)


def test_pad_fill_tuple_pil():
    _same_pil(TF.pad(PIL_IMG, 4, fill=(10, 20, 30)), EF.pad(PIL_IMG, 4, fill=(10, 20, 30)))


@pytest.mark.parametrize("name", ["hflip", "vflip"])
def test_flips(name):
    _check_all(name)
    cls = {"hflip": "RandomHorizontalFlip", "vflip": "RandomVerticalFlip"}[name]
    _same_pil(getattr(TT, cls)(p=1.0)(PIL_IMG), getattr(ET, cls)(p=1.0)(PIL_IMG))
    _same_pil(getattr(TT, cls)(p=0.0)(PIL_IMG), getattr(ET, cls)(p=0.0)(PIL_IMG))


def test_resized_crop_and_fallback_params():
    _check_all("resized_crop", 5, 7, 30, 20, [24, 24])
    # scale > 1 can never fit: both libraries take the deterministic centre-crop fallback
    for ratio in [(0.75, 4 / 3), (2.0, 3.0), (0.1, 0.2)]:
        assert ET.RandomResizedCrop.get_params(
            PIL_IMG, [2.0, 3.0], list(ratio)
        ) == TT.RandomResizedCrop.get_params(PIL_IMG, [2.0, 3.0], list(ratio))
    _same_pil(
        TT.RandomResizedCrop(24, scale=(2.0, 3.0))(PIL_IMG),
        ET.RandomResizedCrop(24, scale=(2.0, 3.0))(PIL_IMG),
    )


def test_five_and_ten_crop():
    for a, b in zip(TF.ten_crop(PIL_IMG, 20), EF.ten_crop(PIL_IMG, 20)):
        _same_pil(a, b)
    (t, e), _ = _tensors()
    for a, b in zip(TF.five_crop(t, (20, 30)), EF.five_crop(e, (20, 30))):
        _close_tensor(a, b, 0)


def test_random_crop_padding_full_size():
    # crop size equal to the padded size: get_params returns (0, 0, h, w) without drawing
    _same_pil(
        TT.RandomCrop((55, 67), padding=(3, 4), padding_mode="reflect")(PIL_IMG),
        ET.RandomCrop((55, 67), padding=(3, 4), padding_mode="reflect")(PIL_IMG),
    )
    for t, e in _tensors(True):
        _close_tensor(
            TT.RandomCrop((51, 63), padding=[1, 2], fill=9)(t),
            ET.RandomCrop((51, 63), padding=[1, 2], fill=9)(e),
            0,
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(angle=30.0),
        dict(angle=90),
        dict(angle=-17.5, expand=True),
        dict(angle=45.0, center=[10, 20]),
        dict(angle=33.0, fill=[50.0, 100.0, 150.0]),
        dict(angle=200.0, expand=True, fill=[9.0, 9.0, 9.0]),
    ],
)
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR"])
def test_rotate(kwargs, interp):
    kw_t = dict(kwargs, interpolation=getattr(TF.InterpolationMode, interp))
    kw_e = dict(kwargs, interpolation=getattr(EF.InterpolationMode, interp))
    _same_pil(TF.rotate(PIL_IMG, **kw_t), EF.rotate(PIL_IMG, **kw_e))
    _compare_warps(TF.rotate, EF.rotate, kw_t, kw_e, interp)


def _compare_warps(tfn, efn, kw_t, kw_e, interp):
    """Tensor warps: bilinear to float rounding, nearest exactly."""
    for b in [False, True]:
        for t, e in _tensors(b):
            a, g = tfn(t, **kw_t), efn(e, **kw_e)
            if interp == "BILINEAR":
                if t.dtype == torch.uint8:
                    _close_tensor(a, g)
                else:  # fill values up to 150 scale the float32 rounding of the mask
                    np.testing.assert_allclose(g.numpy(), a.numpy(), atol=1e-5, rtol=1e-4)
            else:  # the grid is built in float32 like torch's, so nearest picks the same pixels
                _close_tensor(a, g, 0 if t.dtype == torch.uint8 else 1e-6)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(angle=0.0, translate=[5, -3], scale=1.0, shear=[0.0, 0.0]),
        dict(angle=25.0, translate=[0, 0], scale=0.8, shear=[10.0, 0.0]),
        dict(angle=-40.0, translate=[3, 7], scale=1.3, shear=[5.0, -8.0], fill=[30.0, 60.0, 90.0]),
        dict(angle=10, translate=(2, 2), scale=1.1, shear=7, center=[5, 9]),
    ],
)
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR"])
def test_affine(kwargs, interp):
    kw_t = dict(kwargs, interpolation=getattr(TF.InterpolationMode, interp))
    kw_e = dict(kwargs, interpolation=getattr(EF.InterpolationMode, interp))
    _same_pil(TF.affine(PIL_IMG, **kw_t), EF.affine(PIL_IMG, **kw_e))
    _compare_warps(TF.affine, EF.affine, kw_t, kw_e, interp)


def test_inverse_affine_matrix():
    for args in [
        ([3.0, 4.0], 30.0, [1.0, 2.0], 1.2, [5.0, 7.0]),
        ([0.0, 0.0], -70.0, [0, 0], 0.5, [0.0, 0.0]),
    ]:
        np.testing.assert_allclose(
            EF._get_inverse_affine_matrix(*args), TF._get_inverse_affine_matrix(*args)
        )
        np.testing.assert_allclose(
            EF._get_inverse_affine_matrix(*args, inverted=False),
            TF._get_inverse_affine_matrix(*args, inverted=False),
        )


# -- colour -------------------------------------------------------------------------------


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale(channels):
    _check_all("rgb_to_grayscale", channels)
    _same_pil(TT.Grayscale(channels)(PIL_IMG), ET.Grayscale(channels)(PIL_IMG))
    _same_pil(TT.RandomGrayscale(p=1.0)(PIL_IMG), ET.RandomGrayscale(p=1.0)(PIL_IMG))


@pytest.mark.parametrize(
    "name,factor",
    [
        ("adjust_brightness", 0.0),
        ("adjust_brightness", 0.6),
        ("adjust_brightness", 1.7),
        ("adjust_contrast", 0.3),
        ("adjust_contrast", 1.8),
        ("adjust_saturation", 0.0),
        ("adjust_saturation", 0.5),
        ("adjust_saturation", 2.2),
        ("adjust_hue", -0.5),
        ("adjust_hue", -0.2),
        ("adjust_hue", 0.0),
        ("adjust_hue", 0.13),
        ("adjust_hue", 0.5),
        ("adjust_gamma", 0.5),
        ("adjust_gamma", 2.2),
    ],
)
def test_color_adjustments(name, factor):
    _check_all(name, factor)


def test_color_adjustments_gray_image():
    gray = PIL_IMG.convert("L")
    for name, f in [("adjust_brightness", 1.3), ("adjust_contrast", 0.4), ("adjust_hue", 0.2)]:
        _same_pil(getattr(TF, name)(gray, f), getattr(EF, name)(gray, f))
    t = torch.from_numpy(np.asarray(gray)[None].copy())
    e = ember.from_numpy(np.asarray(gray)[None].copy())
    for name, f in [
        ("adjust_brightness", 1.3),
        ("adjust_contrast", 0.4),
        ("adjust_saturation", 0.4),
    ]:
        _close_tensor(getattr(TF, name)(t, f), getattr(EF, name)(e, f))


def test_invert_posterize_solarize():
    _check_all("invert")
    _same_pil(TF.solarize(PIL_IMG, 100), EF.solarize(PIL_IMG, 100))
    (t, e), (tf, ef) = _tensors(True)
    _close_tensor(TF.solarize(t, 100), EF.solarize(e, 100), 0)
    _close_tensor(TF.solarize(tf, 0.4), EF.solarize(ef, 0.4), 0)
    with pytest.raises(TypeError, match="Threshold should be less than bound of img."):
        EF.solarize(ef, 100)
    _same_pil(TF.posterize(PIL_IMG, 3), EF.posterize(PIL_IMG, 3))
    (t, e), _ = _tensors(True)
    _close_tensor(TF.posterize(t, 3), EF.posterize(e, 3), 0)
    _check_all("autocontrast")
    _check_all("equalize", pil=True, tensor=False)
    for t, e in [_tensors(False)[0], _tensors(True)[0]]:
        _close_tensor(TF.equalize(t), EF.equalize(e), 0)
    for factor in [0.0, 0.5, 2.0]:
        _check_all("adjust_sharpness", factor)


def test_color_jitter_zero_ranges_is_identity():
    assert ET.ColorJitter().brightness is None and TT.ColorJitter().brightness is None
    cj_t, cj_e = (
        TT.ColorJitter(0.4, (0.5, 1.5), 0.2, 0.1),
        ET.ColorJitter(0.4, (0.5, 1.5), 0.2, 0.1),
    )
    for attr in ["brightness", "contrast", "saturation", "hue"]:
        assert getattr(cj_t, attr) == getattr(cj_e, attr)


# -- filters, erasing, presets ------------------------------------------------------------


@pytest.mark.parametrize("ks,sigma", [(3, None), (5, 1.5), ((3, 7), (0.8, 2.0)), (9, 3.0)])
def test_gaussian_blur(ks, sigma):
    # PIL goes through the float tensor kernel then rounds: one level where a value sits on .5
    a, b = TF.gaussian_blur(PIL_IMG, ks, sigma), EF.gaussian_blur(PIL_IMG, ks, sigma)
    assert a.mode == b.mode and a.size == b.size
    assert np.abs(np.asarray(a).astype(int) - np.asarray(b)).max() <= 1
    _check_all("gaussian_blur", ks, sigma, pil=False)


def test_erase():
    _, (t, e) = _tensors()
    _close_tensor(
        TF.erase(t, 3, 4, 10, 12, torch.tensor(0.5)),
        EF.erase(e, 3, 4, 10, 12, ember.tensor(0.5)),
        0,
    )
    v = np.arange(3, dtype=np.float32)[:, None, None]
    _close_tensor(
        TF.erase(t, 3, 4, 10, 12, torch.from_numpy(v)),
        EF.erase(e, 3, 4, 10, 12, ember.from_numpy(v)),
        0,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(crop_size=224, resize_size=256),
        dict(crop_size=32, resize_size=40, interpolation="BICUBIC"),
        dict(crop_size=20, resize_size=24, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
    ],
)
def test_image_classification_preset(kwargs):
    from torchvision.transforms._presets import ImageClassification as TIC

    arr = _image(180, 240, seed=3)
    img = Image.fromarray(arr)
    kw_t, kw_e = dict(kwargs), dict(kwargs)
    if "interpolation" in kwargs:
        kw_t["interpolation"] = getattr(TF.InterpolationMode, kwargs["interpolation"])
        kw_e["interpolation"] = getattr(EF.InterpolationMode, kwargs["interpolation"])
    a, b = TIC(**kw_t)(img), ET.ImageClassification(**kw_e)(img)
    np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-6, rtol=0)
    chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
    a = TIC(**kw_t)(torch.from_numpy(chw.copy()))
    b = ET.ImageClassification(**kw_e)(ember.from_numpy(chw.copy()))
    # uint8 tensors are resized in float and rounded: one level is 1/255/std after normalising
    np.testing.assert_allclose(
        b.numpy(), a.numpy(), atol=1.0 / 255 / min(kw_t.get("std", (0.224,))) + 1e-5
    )


def test_compose_pipeline_deterministic_parts():
    pipe_t = TT.Compose(
        [TT.Resize(40), TT.CenterCrop(32), TT.ToTensor(), TT.Normalize([0.5] * 3, [0.25] * 3)]
    )
    pipe_e = ET.Compose(
        [ET.Resize(40), ET.CenterCrop(32), ET.ToTensor(), ET.Normalize([0.5] * 3, [0.25] * 3)]
    )
    np.testing.assert_allclose(pipe_e(PIL_IMG).numpy(), pipe_t(PIL_IMG).numpy(), atol=1e-6)


def test_autocontrast_equalize_low_contrast_and_constant_channel():
    arr = (ARR // 3 + 50).astype(np.uint8)
    arr[..., 2] = 77  # a constant channel: scale is infinite and the channel is kept
    img = Image.fromarray(arr)
    for name in ["autocontrast", "equalize"]:
        _same_pil(getattr(TF, name)(img), getattr(EF, name)(img))
    chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
    for name in ["autocontrast", "equalize"]:
        t, e = torch.from_numpy(chw.copy()), ember.from_numpy(chw.copy())
        _close_tensor(getattr(TF, name)(t), getattr(EF, name)(e), 0)
    f = chw.astype(np.float32) / 255
    _close_tensor(TF.autocontrast(torch.from_numpy(f)), EF.autocontrast(ember.from_numpy(f)))


# -- autoaugment --------------------------------------------------------------------------

AA_OPS = [
    ("ShearX", 0.2),
    ("ShearY", -0.25),
    ("TranslateX", 7.6),
    ("TranslateY", -5.2),
    ("Rotate", 21.0),
    ("Brightness", 0.4),
    ("Color", -0.5),
    ("Contrast", 0.6),
    ("Sharpness", 0.7),
    ("Posterize", 5),
    ("Solarize", 140.0),
    ("AutoContrast", 0.0),
    ("Equalize", 0.0),
    ("Invert", 0.0),
    ("Identity", 0.0),
]


@pytest.mark.parametrize("op,magnitude", AA_OPS)
def test_autoaugment_ops(op, magnitude):
    from torchvision.transforms import autoaugment as TA

    from ember.vision.transforms import autoaugment as EA

    mode_t, mode_e = TF.InterpolationMode.NEAREST, EF.InterpolationMode.NEAREST
    _same_pil(
        TA._apply_op(PIL_IMG, op, magnitude, mode_t, None),
        EA._apply_op(PIL_IMG, op, magnitude, mode_e, None),
    )
    (t, e), _ = _tensors()
    _close_tensor(
        TA._apply_op(t, op, magnitude, mode_t, [0.0] * 3),
        EA._apply_op(e, op, magnitude, mode_e, [0.0] * 3),
    )


def test_autoaugment_policies_and_spaces():
    from torchvision.transforms import autoaugment as TA

    from ember.vision.transforms import autoaugment as EA

    for name in ["IMAGENET", "CIFAR10", "SVHN"]:
        assert (
            TA.AutoAugment(getattr(TA.AutoAugmentPolicy, name)).policies
            == ET.AutoAugment(getattr(ET.AutoAugmentPolicy, name)).policies
        )
    spaces = [
        (
            TA.AutoAugment()._augmentation_space(10, (47, 61)),
            EA._space(10, (47, 61), identity=False),
        ),
        (TA.RandAugment()._augmentation_space(31, (47, 61)), EA._space(31, (47, 61))),
        (TA.TrivialAugmentWide()._augmentation_space(31), EA._space(31, (0, 0), wide=True)),
    ]
    for tv_space, e_space in spaces:
        assert list(tv_space) == list(e_space)
        for key, (mags, signed) in tv_space.items():
            assert e_space[key][1] == signed
            if mags.ndim == 0:
                assert e_space[key][0] is None
            else:
                np.testing.assert_array_equal(e_space[key][0], mags.numpy())


def test_linear_transformation_matches_torchvision():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 4)).astype(np.float32)
    m = rng.standard_normal((48, 48)).astype(np.float32)
    mean = rng.standard_normal(48).astype(np.float32)
    theirs = TT.LinearTransformation(torch.tensor(m), torch.tensor(mean))
    ours = ET.LinearTransformation(ember.tensor(m), ember.tensor(mean))
    np.testing.assert_allclose(ours(ember.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-5)
    assert repr(ours) == repr(theirs)
    for args in [(np.zeros((2, 3), np.float32), np.zeros(2, np.float32)),
                 (np.zeros((2, 2), np.float32), np.zeros(3, np.float32))]:
        with pytest.raises(ValueError) as want:
            TT.LinearTransformation(*(torch.tensor(a) for a in args))
        with pytest.raises(ValueError) as got:
            ET.LinearTransformation(*(ember.tensor(a) for a in args))
        assert str(got.value) == str(want.value)
