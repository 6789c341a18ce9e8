"""Unit tests of ember.vision.transforms (no torchvision needed)."""

import random

import numpy as np
import pytest
from PIL import Image

import ember
import ember.nn as nn
from ember.vision import transforms as T
from ember.vision.transforms import functional as F


def _array(h=29, w=37, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([255 * x / w, 255 * y / h, 255 * (x + y) / (w + h)], axis=-1)
    return np.clip(base + rng.normal(0, 15, base.shape), 0, 255).astype(np.uint8)


ARR = _array()
PIL_IMG = Image.fromarray(ARR)
U8 = ember.from_numpy(np.ascontiguousarray(ARR.transpose(2, 0, 1)))
F32 = ember.from_numpy((ARR.transpose(2, 0, 1) / 255.0).astype(np.float32))
BATCH = ember.from_numpy(np.stack([U8.numpy(), U8.numpy()[:, ::-1].copy()]))


def _inputs():
    return [PIL_IMG, U8, F32, BATCH]


def _shape(img):
    return F.get_dimensions(img)


# -- conversions --------------------------------------------------------------------------


def test_to_tensor_scales_and_transposes():
    t = T.ToTensor()(PIL_IMG)
    assert t.dtype == ember.float32 and tuple(t.shape) == (3, 29, 37)
    np.testing.assert_allclose(t.numpy(), ARR.transpose(2, 0, 1) / 255.0, atol=1e-7)
    p = T.PILToTensor()(PIL_IMG)
    assert p.dtype == ember.uint8
    np.testing.assert_array_equal(p.numpy(), ARR.transpose(2, 0, 1))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4 dimensions."):
        F.to_tensor(np.zeros((1, 2, 3, 4)))


def test_to_pil_image_round_trip_and_modes():
    img = T.ToPILImage()(U8)
    assert img.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(img), ARR)
    assert T.ToPILImage()(U8[:1]).mode == "L"
    assert F.to_pil_image(np.zeros((4, 4, 4), np.uint8)).mode == "RGBA"
    assert F.to_pil_image(np.zeros((4, 4, 2), np.uint8)).mode == "LA"
    assert F.to_pil_image(np.zeros((4, 4), np.float32), "F").mode == "F"
    with pytest.raises(ValueError, match="pic should not have > 4 channels. Got 5 channels."):
        F.to_pil_image(np.zeros((4, 4, 5), np.uint8))
    with pytest.raises(
        ValueError, match=r"Only modes \['RGBA', 'CMYK', 'RGBX'\] are supported for 4D inputs"
    ):
        F.to_pil_image(np.zeros((4, 4, 4), np.uint8), "RGB")
    with pytest.raises(TypeError, match="pic should be Tensor or ndarray"):
        F.to_pil_image(PIL_IMG)


def test_convert_image_dtype_values():
    f = T.ConvertImageDtype(ember.float32)(U8)
    np.testing.assert_allclose(f.numpy(), U8.numpy() / 255.0, atol=1e-7)
    back = F.convert_image_dtype(f, ember.uint8)
    np.testing.assert_array_equal(back.numpy(), U8.numpy())
    i32 = F.convert_image_dtype(U8, ember.int32)
    assert i32.dtype == ember.int32 and int(i32.numpy().max()) == int(U8.numpy().max()) * 2**23
    with pytest.raises(
        RuntimeError, match="The cast from ember.float32 to ember.int64 cannot be performed safely."
    ):
        F.convert_image_dtype(f, ember.int64)


def test_normalize_values_inplace_and_errors():
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
    out = T.Normalize(mean, std)(F32)
    expected = (F32.numpy() - np.array(mean, np.float32)[:, None, None]) / np.array(
        std, np.float32
    )[:, None, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert not np.allclose(F32.numpy(), out.numpy())
    x = F32.clone()
    assert F.normalize(x, mean, std, inplace=True) is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got ember.uint8."):
        F.normalize(U8, mean, std)
    with pytest.raises(ValueError, match="std evaluated to zero after conversion to ember.float32"):
        F.normalize(F32, mean, [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        F.normalize(PIL_IMG, mean, std)


# -- resize kernels against hand-computed references --------------------------------------


@pytest.mark.parametrize("interp", list(T.InterpolationMode)[:4])
def test_resize_constant_image_stays_constant(interp):
    img = ember.full((2, 3, 20, 30), 0.25)
    out = F.resize(img, [7, 45], interp)
    assert tuple(out.shape) == (2, 3, 7, 45)
    np.testing.assert_allclose(out.numpy(), 0.25, atol=1e-6)


def test_resize_sizes_and_errors():
    assert _shape(T.Resize(10)(PIL_IMG)) == [3, 10, 12]
    assert _shape(T.Resize(10)(U8)) == [3, 10, 12]
    assert _shape(T.Resize(10, max_size=11)(U8)) == [3, 9, 11]
    assert _shape(T.Resize([10, 20])(BATCH)) == [3, 10, 20]
    assert T.Resize([29, 37])(U8) is U8
    assert T.Resize(10)(U8).dtype == ember.uint8
    with pytest.raises(TypeError, match="Size should be int or sequence. Got <class 'float'>"):
        T.Resize(1.5)
    with pytest.raises(ValueError, match="If size is a sequence, it should have 1 or 2 values"):
        T.Resize([1, 2, 3])
    with pytest.raises(ValueError, match="max_size should only be passed if size specifies"):
        F.resize(U8, [5, 6], max_size=10)
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        F.resize(U8, 5, interpolation="bilinear")
    with pytest.raises(
        ValueError, match="Interpolation mode 'lanczos' is unsupported with Tensor input"
    ):
        F.resize(U8, 5, interpolation=T.InterpolationMode.LANCZOS)


def test_resize_bicubic_uint8_is_clamped():
    img = ember.from_numpy(np.tile(np.array([0, 255], np.uint8), (1, 8, 4)))
    out = F.resize(img, [16, 16], T.InterpolationMode.BICUBIC, antialias=False)
    assert out.dtype == ember.uint8 and out.numpy().min() == 0 and out.numpy().max() == 255


# -- crops, pads, flips -------------------------------------------------------------------


def test_center_crop_pads_when_larger():
    for img in _inputs():
        assert _shape(T.CenterCrop(10)(img))[1:] == [10, 10]
        assert _shape(T.CenterCrop((40, 50))(img))[1:] == [40, 50]
    out = T.CenterCrop((33, 41))(U8).numpy()
    assert (out[:, :2] == 0).all() and (out[:, :, :2] == 0).all()
    np.testing.assert_array_equal(out[:, 2:31, 2:39], U8.numpy())


def test_crop_outside_is_zero_padded():
    out = F.crop(F32, -2, -3, 5, 6).numpy()
    assert out.shape == (3, 5, 6)
    assert (out[:, :2] == 0).all() and (out[:, :, :3] == 0).all()
    np.testing.assert_array_equal(out[:, 2:, 3:], F32.numpy()[:, :3, :3])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_matches_numpy(mode):
    out = T.Pad((1, 2, 3, 4), fill=5, padding_mode=mode)(U8).numpy()
    kw = {"constant_values": 5} if mode == "constant" else {}
    ref = np.pad(U8.numpy(), [(0, 0), (2, 4), (1, 3)], mode=mode, **kw)
    np.testing.assert_array_equal(out, ref)
    pil = np.asarray(T.Pad((1, 2, 3, 4), fill=5, padding_mode=mode)(PIL_IMG))
    np.testing.assert_array_equal(pil, ref.transpose(1, 2, 0))


def test_pad_errors():
    with pytest.raises(
        ValueError, match="Padding mode should be either constant, edge, reflect or symmetric"
    ):
        T.Pad(2, padding_mode="wrap")
    with pytest.raises(
        ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3 element"
    ):
        T.Pad((1, 2, 3))
    with pytest.raises(TypeError, match="Got inappropriate padding arg"):
        T.Pad("x")


def test_flips():
    np.testing.assert_array_equal(F.hflip(U8).numpy(), U8.numpy()[..., ::-1])
    np.testing.assert_array_equal(F.vflip(BATCH).numpy(), BATCH.numpy()[..., ::-1, :])
    np.testing.assert_array_equal(np.asarray(T.RandomHorizontalFlip(1.0)(PIL_IMG)), ARR[:, ::-1])
    assert T.RandomVerticalFlip(0.0)(U8) is U8


def test_five_ten_crop():
    crops = T.TenCrop(10)(U8)
    assert len(crops) == 10 and all(_shape(c) == [3, 10, 10] for c in crops)
    np.testing.assert_array_equal(crops[5].numpy(), F.hflip(U8).numpy()[:, :10, :10])
    with pytest.raises(ValueError, match="Requested crop size"):
        F.five_crop(U8, 40)


# -- random transforms: determinism under ember.manual_seed -------------------------------

RANDOM_TRANSFORMS = [
    lambda: T.RandomCrop(20, padding=2),
    lambda: T.RandomResizedCrop(16),
    lambda: T.RandomHorizontalFlip(),
    lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.2),
    lambda: T.RandomRotation(30, interpolation=T.InterpolationMode.BILINEAR),
    lambda: T.RandomAffine(20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=(-5, 5, -5, 5)),
    lambda: T.GaussianBlur(5),
    lambda: T.RandomGrayscale(0.5),
    lambda: T.RandomApply([T.ColorJitter(0.5)], p=0.5),
]


@pytest.mark.parametrize("make", RANDOM_TRANSFORMS)
def test_random_transforms_are_deterministic_under_manual_seed(make):
    for img in [PIL_IMG, U8, F32]:
        outs = []
        for _ in range(2):
            ember.manual_seed(1234)
            tr = make()
            outs.append(
                [
                    np.asarray(tr(img)) if isinstance(img, Image.Image) else tr(img).numpy()
                    for _ in range(4)
                ]
            )
        for a, b in zip(*outs):
            np.testing.assert_array_equal(a, b)


def test_random_streams_change_with_the_seed():
    params = set()
    for seed in range(5):
        ember.manual_seed(seed)
        params.add(T.RandomResizedCrop.get_params(PIL_IMG, [0.08, 1.0], [3 / 4, 4 / 3]))
    assert len(params) > 1


def test_random_resized_crop_get_params_bounds_and_fallback():
    ember.manual_seed(0)
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(U8, [0.08, 1.0], [3 / 4, 4 / 3])
        assert 0 < h <= 29 and 0 < w <= 37 and 0 <= i <= 29 - h and 0 <= j <= 37 - w
    # an impossible scale takes the central fallback, clamped to the allowed ratio
    assert T.RandomResizedCrop.get_params(U8, [2.0, 3.0], [0.1, 0.2]) == (0, 15, 29, 6)
    assert T.RandomResizedCrop.get_params(U8, [2.0, 3.0], [2.0, 3.0]) == (5, 0, 18, 37)
    assert T.RandomResizedCrop.get_params(U8, [2.0, 3.0], [0.75, 1.5]) == (0, 0, 29, 37)


def test_random_crop_get_params_and_errors():
    ember.manual_seed(3)
    i, j, h, w = T.RandomCrop.get_params(U8, (10, 12))
    assert (h, w) == (10, 12) and 0 <= i <= 19 and 0 <= j <= 25
    assert T.RandomCrop.get_params(U8, (29, 37)) == (0, 0, 29, 37)
    with pytest.raises(
        ValueError,
        match=r"Required crop size \(40, 10\) is larger than input image size \(29, 37\)",
    ):
        T.RandomCrop.get_params(U8, (40, 10))
    assert _shape(T.RandomCrop(40, pad_if_needed=True)(PIL_IMG))[1:] == [40, 40]


def test_random_erasing():
    ember.manual_seed(0)
    out = T.RandomErasing(p=1.0, value=0.5)(F32)
    changed = out.numpy() != F32.numpy()
    assert changed.any() and np.all(out.numpy()[changed] == 0.5)
    rnd = T.RandomErasing(p=1.0, value="random")(F32)
    assert tuple(rnd.shape) == (3, 29, 37)
    x = F32.clone()
    assert T.RandomErasing(p=1.0, inplace=True)(x) is x
    with pytest.raises(ValueError, match="Random erasing probability should be between 0 and 1"):
        T.RandomErasing(p=1.5)
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="x")


def test_random_choice_and_order_use_python_random():
    add1, times2 = T.Lambda(lambda x: x + 1), T.Lambda(lambda x: x * 2)
    random.seed(0)
    results = {T.RandomOrder([add1, times2])(1) for _ in range(20)}
    assert results == {3, 4}
    assert T.RandomChoice([add1, times2], p=[1, 0])(5) == 6
    with pytest.raises(TypeError, match="Argument transforms should be a sequence"):
        T.RandomOrder(add1)
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        T.Lambda(3)


def test_color_jitter_checks():
    cj = T.ColorJitter(brightness=0.5, hue=0.1)
    assert cj.brightness == (0.5, 1.5) and cj.contrast is None and cj.hue == (-0.1, 0.1)
    with pytest.raises(
        ValueError, match="If brightness is a single number, it must be non negative."
    ):
        T.ColorJitter(brightness=-1)
    with pytest.raises(
        ValueError, match=r"hue values should be between \(-0.5, 0.5\), but got \[-0.6, 0.6\]."
    ):
        T.ColorJitter(hue=0.6)
    ember.manual_seed(0)
    fn_idx, b, c, s, h = T.ColorJitter.get_params((0.5, 1.5), None, (1.0, 2.0), (-0.1, 0.1))
    assert sorted(fn_idx.tolist()) == [0, 1, 2, 3] and c is None
    assert 0.5 <= b <= 1.5 and 1.0 <= s <= 2.0 and -0.1 <= h <= 0.1


# -- colour and warps ---------------------------------------------------------------------


def test_hue_zero_is_identity_and_hsv_round_trip():
    np.testing.assert_allclose(F.adjust_hue(F32, 0.0).numpy(), F32.numpy(), atol=1e-6)
    shifted = F.adjust_hue(F.adjust_hue(F32, 0.25), -0.25)
    np.testing.assert_allclose(shifted.numpy(), F32.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]."):
        F.adjust_hue(F32, 0.7)


def test_grayscale_luma():
    g = F.rgb_to_grayscale(F32).numpy()
    ref = 0.2989 * F32.numpy()[0] + 0.587 * F32.numpy()[1] + 0.114 * F32.numpy()[2]
    np.testing.assert_allclose(g[0], ref, atol=1e-6)
    assert _shape(T.Grayscale(3)(U8)) == [3, 29, 37]
    with pytest.raises(ValueError, match="num_output_channels should be either 1 or 3"):
        F.rgb_to_grayscale(U8, 2)


def test_brightness_contrast_saturation():
    np.testing.assert_allclose(F.adjust_brightness(F32, 0.5).numpy(), F32.numpy() * 0.5, atol=1e-7)
    assert (F.adjust_brightness(U8, 3.0).numpy() <= 255).all()
    flat = F.adjust_contrast(F32, 0.0).numpy()
    assert np.ptp(flat) < 1e-6
    gray = F.adjust_saturation(F32, 0.0).numpy()
    np.testing.assert_allclose(gray[0], gray[1])
    with pytest.raises(ValueError, match=r"brightness_factor \(-1\) is not non-negative."):
        F.adjust_brightness(U8, -1)


def test_rotate_90_is_a_transpose_flip():
    sq = ember.from_numpy(np.arange(3 * 6 * 6, dtype=np.float32).reshape(3, 6, 6))
    out = F.rotate(sq, 90.0)
    np.testing.assert_array_equal(out.numpy(), np.rot90(sq.numpy(), 1, axes=(1, 2)))
    pil = F.rotate(PIL_IMG, 90.0, expand=True)
    assert pil.size == (29, 37)
    assert _shape(F.rotate(U8, 90.0, expand=True)) == [3, 37, 29]


def test_affine_translation_shifts_pixels():
    out = F.affine(F32, angle=0.0, translate=[3, 2], scale=1.0, shear=[0.0, 0.0])
    np.testing.assert_array_equal(out.numpy()[:, 2:, 3:], F32.numpy()[:, :-2, :-3])
    assert (out.numpy()[:, :2] == 0).all()
    filled = F.affine(U8, angle=0.0, translate=[3, 0], scale=1.0, shear=0.0, fill=[7.0, 8.0, 9.0])
    np.testing.assert_array_equal(filled.numpy()[:, :, 0], np.array([[7], [8], [9]]).repeat(29, 1))
    with pytest.raises(ValueError, match="Argument scale should be positive"):
        F.affine(U8, 0.0, [0, 0], 0.0, 0.0)
    with pytest.raises(ValueError, match="Argument translate should be a sequence of length 2"):
        F.affine(U8, 0.0, [0], 1.0, 0.0)


def test_random_affine_and_rotation_argument_checks():
    with pytest.raises(ValueError, match="If degrees is a single number, it must be positive."):
        T.RandomRotation(-3)
    with pytest.raises(ValueError, match="translation values should be between 0 and 1"):
        T.RandomAffine(0, translate=(0.1, 1.5))
    with pytest.raises(ValueError, match="shear should be a sequence of length 2 or 4."):
        T.RandomAffine(0, shear=(1, 2, 3))
    ember.manual_seed(0)
    angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params(
        [-10, 10], [0.1, 0.1], [0.9, 1.1], [-5, 5, -2, 2], [37, 29]
    )
    assert -10 <= angle <= 10 and abs(tx) <= 4 and abs(ty) <= 3 and 0.9 <= scale <= 1.1
    assert -5 <= sx <= 5 and -2 <= sy <= 2


def test_gaussian_blur_preserves_constant_and_checks():
    img = ember.full((3, 12, 12), 0.7)
    np.testing.assert_allclose(F.gaussian_blur(img, 5, 1.2).numpy(), 0.7, atol=1e-6)
    assert F.gaussian_blur(PIL_IMG, [3, 5]).size == PIL_IMG.size
    with pytest.raises(
        ValueError, match=r"kernel_size should have odd and positive integers. Got \[4, 4\]"
    ):
        F.gaussian_blur(U8, 4)
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number."):
        T.GaussianBlur(4)
    with pytest.raises(
        ValueError, match=r"sigma values should be positive and of the form \(min, max\)."
    ):
        T.GaussianBlur(3, sigma=(2.0, 1.0))


def test_posterize_solarize_invert():
    np.testing.assert_array_equal(F.posterize(U8, 3).numpy(), U8.numpy() & 0b11100000)
    np.testing.assert_array_equal(F.invert(U8).numpy(), 255 - U8.numpy())
    sol = F.solarize(U8, 128).numpy()
    np.testing.assert_array_equal(sol, np.where(U8.numpy() >= 128, 255 - U8.numpy(), U8.numpy()))
    with pytest.raises(
        TypeError, match="Only torch.uint8 image tensors are supported, but found ember.float32"
    ):
        F.posterize(F32, 3)


# -- modules and the preset ---------------------------------------------------------------


def test_transforms_are_modules_and_compose():
    assert isinstance(T.Resize(3), nn.Module) and isinstance(T.Normalize([0], [1]), nn.Module)
    pipe = T.Compose(
        [T.Resize(16), T.CenterCrop(14), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)]
    )
    out = pipe(PIL_IMG)
    assert tuple(out.shape) == (3, 14, 14) and out.dtype == ember.float32
    assert "Resize(size=16, interpolation=bilinear, max_size=None, antialias=True)" in repr(pipe)


def test_image_classification_preset():
    preset = T.ImageClassification(crop_size=16, resize_size=20)
    for img in [PIL_IMG, U8, BATCH]:
        out = preset(img)
        assert out.dtype == ember.float32 and tuple(out.shape)[-3:] == (3, 16, 16)
    a, b = preset(PIL_IMG).numpy(), preset(U8).numpy()
    assert np.abs(a - b).max() < 0.05  # PIL's integer resampler vs the float one, one level apart
    assert "crop_size=[16]" in repr(preset) and "resize_size=[20]" in repr(preset)


# -- tensor-only extras, autoaugment, devices ---------------------------------------------


def test_autocontrast_equalize_sharpness_on_tensors():
    low = ember.from_numpy((U8.numpy() // 4 + 60).astype(np.uint8))
    out = F.autocontrast(low).numpy()
    # float32 scaling then truncation to uint8, as torchvision: the top lands on 254 or 255
    assert (out.min(axis=(1, 2)) == 0).all() and (out.max(axis=(1, 2)) >= 254).all()
    eq = F.equalize(low).numpy()
    assert eq.dtype == np.uint8 and eq.max() > low.numpy().max()
    np.testing.assert_array_equal(F.adjust_sharpness(U8, 1.0).numpy(), U8.numpy())
    tiny = ember.zeros((3, 2, 2), dtype=ember.uint8)
    assert F.adjust_sharpness(tiny, 2.0) is tiny
    with pytest.raises(TypeError, match="Input image tensor should have 3 or 4 dimensions"):
        F.equalize(U8[0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: T.AutoAugment(),
        lambda: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10),
        lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN),
        lambda: T.RandAugment(),
        lambda: T.TrivialAugmentWide(),
    ],
)
def test_autoaugment_family_deterministic(make):
    for img in [PIL_IMG, U8]:
        outs = []
        for _ in range(2):
            ember.manual_seed(7)
            tr = make()
            outs.append(
                [
                    np.asarray(tr(img)) if isinstance(img, Image.Image) else tr(img).numpy()
                    for _ in range(6)
                ]
            )
        for a, b in zip(*outs):
            np.testing.assert_array_equal(a, b)
        assert outs[0][0].shape == (
            np.asarray(img).shape if isinstance(img, Image.Image) else tuple(img.shape)
        )


def test_autoaugment_bad_op():
    from ember.vision.transforms.autoaugment import _apply_op

    with pytest.raises(ValueError, match="The provided operator Blur is not recognized."):
        _apply_op(U8, "Blur", 0.0, T.InterpolationMode.NEAREST, None)


def test_tensor_transforms_keep_the_device():
    from ember.testing import register_test_device

    register_test_device("testdev")
    x = F32.to("testdev")
    outs = [
        F.resize(x, 10),
        F.rotate(x, 30.0),
        F.adjust_hue(x, 0.2),
        F.gaussian_blur(x, 3),
        F.normalize(x, [0.5] * 3, [0.2] * 3),
        F.pad(x, 2, padding_mode="reflect"),
        F.center_crop(x, 40),
        F.hflip(x),
        F.rgb_to_grayscale(x),
        F.affine(x, 5.0, [1, 1], 1.0, 0.0),
    ]
    assert all(o.device == x.device for o in outs)
    np.testing.assert_allclose(outs[0].cpu().numpy(), F.resize(F32, 10).numpy())


def test_linear_transformation_whitens_as_the_numpy_formula():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    d = 3 * 4 * 5
    m, mean = rng.standard_normal((d, d)), rng.standard_normal(d)
    t = T.LinearTransformation(ember.tensor(m), ember.tensor(mean))
    out = t(ember.tensor(x))
    want = ((x.reshape(-1, d) - mean) @ m).reshape(x.shape)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    assert repr(t).startswith("LinearTransformation(transformation_matrix=[[")
    with pytest.raises(ValueError, match=r"should be square. Got \(2, 3\) rectangular matrix"):
        T.LinearTransformation(ember.zeros(2, 3), ember.zeros(2))
    with pytest.raises(ValueError, match="mean_vector should have the same length 3"):
        T.LinearTransformation(ember.zeros(2, 2), ember.zeros(3))
    with pytest.raises(ValueError, match="should have the same dtype"):
        T.LinearTransformation(ember.zeros(2, 2), ember.zeros(2, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"incompatible shape.\[3 x 4 x 5\] != 2"):
        T.LinearTransformation(ember.zeros(2, 2), ember.zeros(2))(ember.tensor(x))
