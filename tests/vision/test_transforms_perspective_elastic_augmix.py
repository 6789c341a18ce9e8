"""Unit tests of perspective, elastic_transform, RandomPerspective, ElasticTransform and AugMix
(no torchvision needed: NumPy references, errors, PIL vs tensor consistency, seeds)."""

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import transforms as T
from ember.vision.transforms import _functional_tensor as F_t
from ember.vision.transforms import autoaugment
from ember.vision.transforms import functional as F

H, W = 19, 27


def _array(h=H, w=W, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([255 * x / w, 255 * y / h, 255 * (x + y) / (w + h)], axis=-1)
    return np.clip(base + rng.normal(0, 15, base.shape), 0, 255).astype(np.uint8)


ARR = _array()
PIL_IMG = Image.fromarray(ARR)
CHW = np.ascontiguousarray(ARR.transpose(2, 0, 1))
U8 = ember.from_numpy(CHW.copy())
F64 = ember.from_numpy(CHW / 255.0)
F32 = ember.from_numpy((CHW / 255.0).astype(np.float32))
START = [[0, 0], [W - 1, 0], [W - 1, H - 1], [0, H - 1]]
END = [[3, 2], [W - 4, 1], [W - 2, H - 3], [2, H - 2]]


# -- NumPy references ---------------------------------------------------------------------


def _ref_sample(img, sx, sy, mode):
    """grid_sample of (C, H, W) float64 at pixel coordinates (sx, sy) (zeros outside)."""
    c, h, w = img.shape

    def at(yy, xx):
        ok = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        return img[:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)] * ok

    if mode == "nearest":
        return at(np.rint(sy).astype(int), np.rint(sx).astype(int))
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = sx - x0, sy - y0
    return (
        at(y0, x0) * (1 - fx) * (1 - fy)
        + at(y0, x0 + 1) * fx * (1 - fy)
        + at(y0 + 1, x0) * (1 - fx) * fy
        + at(y0 + 1, x0 + 1) * fx * fy
    )


def _ref_perspective(img, coeffs, mode):
    a, b, c, d, e, f, g, h = coeffs
    y, x = np.mgrid[0 : img.shape[1], 0 : img.shape[2]] + 0.5  # pixel centres
    den = g * x + h * y + 1
    sx = (a * x + b * y + c) / den - 0.5
    sy = (d * x + e * y + f) / den - 0.5
    return _ref_sample(img, sx, sy, mode)


# -- perspective --------------------------------------------------------------------------


def test_perspective_coeffs_map_endpoints_to_startpoints():
    coeffs = F._get_perspective_coeffs(START, END)
    assert len(coeffs) == 8 and all(isinstance(c, float) for c in coeffs)
    a, b, c, d, e, f, g, h = coeffs
    for (x, y), (u, v) in zip(END, START):
        den = g * x + h * y + 1
        assert abs((a * x + b * y + c) / den - u) < 1e-3
        assert abs((d * x + e * y + f) / den - v) < 1e-3
    identity = F._get_perspective_coeffs(START, START)
    np.testing.assert_allclose(identity, [1, 0, 0, 0, 1, 0, 0, 0], atol=1e-6)
    # rounded to float32
    assert np.array(coeffs, dtype=np.float32).tolist() == coeffs


def test_perspective_corner_count_error():
    with pytest.raises(ValueError, match="exactly four corners, got 3 startpoints and 4 endpoints"):
        F.perspective(U8, START[:3], END)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_perspective_tensor_matches_numpy_reference(mode):
    coeffs = F._get_perspective_coeffs(START, END)
    interp = F.InterpolationMode(mode)
    out = F.perspective(F64, START, END, interp)
    assert out.dtype == ember.float64 and tuple(out.shape) == (3, H, W)
    ref = _ref_perspective(F64.numpy(), coeffs, mode)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-9)
    out32 = F.perspective(F32, START, END, interp)
    assert out32.dtype == ember.float32
    np.testing.assert_allclose(out32.numpy(), ref, atol=1e-5)
    out8 = F.perspective(U8, START, END, interp)
    assert out8.dtype == ember.uint8
    ref8 = _ref_perspective(CHW.astype(np.float64), coeffs, mode)
    assert np.abs(out8.numpy().astype(int) - np.round(ref8)).max() <= 1


def test_perspective_identity_and_batched_leading_dims():
    np.testing.assert_array_equal(F.perspective(U8, START, START).numpy(), CHW)
    batch = ember.from_numpy(np.stack([CHW, CHW[:, ::-1].copy()] * 2).reshape(2, 2, 3, H, W))
    out = F.perspective(batch, START, END, fill=[1.0, 2.0, 3.0])
    assert tuple(out.shape) == (2, 2, 3, H, W)
    for i in range(2):
        for j in range(2):
            one = F.perspective(ember.from_numpy(batch.numpy()[i, j]), START, END, fill=[1, 2, 3])
            np.testing.assert_array_equal(out.numpy()[i, j], one.numpy())


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_perspective_fill(mode):
    out = F.perspective(F64, START, END, F.InterpolationMode(mode), fill=[0.25, 0.5, 0.75])
    # the top-left output pixel maps outside the image: it is the fill colour
    np.testing.assert_allclose(out.numpy()[:, 0, 0], [0.25, 0.5, 0.75])
    inside = F.perspective(F64, START, END, F.InterpolationMode(mode))
    np.testing.assert_allclose(out.numpy()[:, H // 2, W // 2], inside.numpy()[:, H // 2, W // 2])
    scalar = F.perspective(U8, START, END, F.InterpolationMode(mode), fill=7)
    np.testing.assert_array_equal(scalar.numpy()[:, 0, 0], [7, 7, 7])


def test_perspective_pil_matches_tensor_and_keeps_mode():
    for mode_img in [PIL_IMG, PIL_IMG.convert("L")]:
        out = F.perspective(mode_img, START, END, F.InterpolationMode.NEAREST, fill=9)
        assert out.mode == mode_img.mode and out.size == mode_img.size
        t = F.perspective(F.pil_to_tensor(mode_img), START, END, F.InterpolationMode.NEAREST, 9)
        diff = np.asarray(out).astype(int) - np.squeeze(t.numpy().transpose(1, 2, 0)).astype(int)
        # same pixels up to sampling ties on the borders of the warped region
        assert (diff != 0).mean() < 0.05


def test_perspective_errors():
    with pytest.raises(ValueError, match="Interpolation mode 'bicubic' is unsupported"):
        F.perspective(U8, START, END, F.InterpolationMode.BICUBIC)
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        F.perspective(U8, START, END, "bilinear")
    with pytest.raises(ValueError, match=r"cannot broadcast .* \(2 != 3\)"):
        F.perspective(U8, START, END, fill=[1.0, 2.0])
    with pytest.raises(ValueError, match="Argument coeffs should have 8 float values"):
        F_t.perspective(U8, [1.0] * 7)
    with pytest.raises(TypeError, match="Input img should be Tensor."):
        F_t.perspective(CHW, [1.0] * 8)
    # PIL integer constants are accepted
    F.perspective(U8, START, END, 0)


def test_random_perspective_params_and_seed():
    ember.manual_seed(0)
    start, end = T.RandomPerspective.get_params(W, H, 0.5)
    assert start == START
    dx, dy = int(0.5 * (W // 2)), int(0.5 * (H // 2))
    (tlx, tly), (trx, try_), (brx, bry), (blx, bly) = end
    assert 0 <= tlx <= dx and 0 <= tly <= dy and 0 <= blx <= dx and 0 <= try_ <= dy
    assert W - dx - 1 <= trx < W and W - dx - 1 <= brx < W
    assert H - dy - 1 <= bry < H and H - dy - 1 <= bly < H
    assert all(isinstance(v, int) for p in end for v in p)
    ember.manual_seed(0)
    assert T.RandomPerspective.get_params(W, H, 0.5) == (start, end)
    assert T.RandomPerspective.get_params(W, H, 0.0) == (START, START)


def test_random_perspective_forward():
    t = T.RandomPerspective(p=1.0)
    assert repr(t) == "RandomPerspective(p=1.0)"
    assert t.fill == 0 and t.interpolation == F.InterpolationMode.BILINEAR
    ember.manual_seed(3)
    a = t(U8)
    ember.manual_seed(3)
    b = t(U8)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.dtype == ember.uint8 and not np.array_equal(a.numpy(), CHW)
    assert T.RandomPerspective(p=0.0)(U8) is U8
    np.testing.assert_array_equal(T.RandomPerspective(0.0, p=1.0)(U8).numpy(), CHW)
    assert T.RandomPerspective(p=1.0, fill=None).fill == 0
    assert T.RandomPerspective(interpolation=0).interpolation == F.InterpolationMode.NEAREST
    out = T.RandomPerspective(p=1.0, fill=(1, 2, 3))(PIL_IMG)
    assert isinstance(out, Image.Image) and out.size == PIL_IMG.size
    with pytest.raises(TypeError, match="Fill should be either a sequence or a number."):
        T.RandomPerspective(fill=object())


# -- elastic ------------------------------------------------------------------------------


def _disp(dx=0.0, dy=0.0, h=H, w=W):
    d = np.zeros((1, h, w, 2), dtype=np.float32)
    d[..., 0], d[..., 1] = dx, dy
    return ember.from_numpy(d)


def test_elastic_zero_displacement_is_identity():
    np.testing.assert_array_equal(F.elastic_transform(U8, _disp()).numpy(), CHW)
    np.testing.assert_allclose(F.elastic_transform(F64, _disp()).numpy(), F64.numpy(), atol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_elastic_matches_numpy_reference(mode):
    rng = np.random.default_rng(1)
    d = (rng.uniform(-0.2, 0.2, (1, H, W, 2))).astype(np.float32)
    out = F.elastic_transform(F32, ember.from_numpy(d), F.InterpolationMode(mode))
    assert out.dtype == ember.float32
    y, x = np.mgrid[0:H, 0:W]
    gx = (2 * x + 1 - W) / W + d[0, ..., 0]
    gy = (2 * y + 1 - H) / H + d[0, ..., 1]
    ref = _ref_sample(
        F32.numpy().astype(np.float64), ((gx + 1) * W - 1) / 2, ((gy + 1) * H - 1) / 2, mode
    )
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-5)


def test_elastic_one_pixel_shift_and_fill():
    out = F.elastic_transform(U8, _disp(dx=2.0 / W), fill=[10.0, 20.0, 30.0])
    np.testing.assert_array_equal(out.numpy()[:, :, :-1], CHW[:, :, 1:])
    np.testing.assert_array_equal(out.numpy()[:, :, -1], np.repeat([[10], [20], [30]], H, 1))
    batch = ember.from_numpy(np.stack([CHW, CHW[::-1].copy()]))
    outb = F.elastic_transform(batch, _disp(dy=2.0 / H), F.InterpolationMode.NEAREST)
    np.testing.assert_array_equal(outb.numpy()[:, :, :-1], batch.numpy()[:, :, 1:])
    np.testing.assert_array_equal(outb.numpy()[:, :, -1], 0)


def test_elastic_pil_goes_through_tensor_kernel():
    rng = np.random.default_rng(2)
    d = ember.from_numpy(rng.uniform(-0.1, 0.1, (1, H, W, 2)).astype(np.float32))
    for img in [PIL_IMG, PIL_IMG.convert("L")]:
        out = F.elastic_transform(img, d)
        assert isinstance(out, Image.Image) and out.mode == img.mode and out.size == img.size
        t = F.elastic_transform(F.pil_to_tensor(img), d)
        np.testing.assert_array_equal(np.asarray(F.pil_to_tensor(out).numpy()), t.numpy())


def test_elastic_errors_and_int_interpolation_warning():
    with pytest.raises(TypeError, match="Argument displacement should be a Tensor"):
        F.elastic_transform(U8, np.zeros((1, H, W, 2)))
    with pytest.raises(
        ValueError,
        match=r"should be ember.Size\(\[1, 19, 27, 2\]\), but given ember.Size\(\[1, 20, 27, 2\]\)",
    ):
        F.elastic_transform(U8, _disp(h=H + 1))
    with pytest.raises(TypeError, match="img should be PIL Image or Tensor. Got"):
        F.elastic_transform(CHW, _disp())
    with pytest.warns(UserWarning, match="should be of type InterpolationMode instead of int"):
        out = F.elastic_transform(U8, _disp(), 0)
    np.testing.assert_array_equal(out.numpy(), CHW)


def test_elastic_transform_params():
    ember.manual_seed(0)
    d = T.ElasticTransform.get_params([50.0, 50.0], [5.0, 5.0], [H, W])
    assert tuple(d.shape) == (1, H, W, 2) and d.dtype == ember.float32
    a = d.numpy()
    assert np.abs(a[..., 0]).max() <= 50.0 / W and np.abs(a[..., 1]).max() <= 50.0 / H
    ember.manual_seed(0)
    np.testing.assert_array_equal(
        T.ElasticTransform.get_params([50.0] * 2, [5.0] * 2, [H, W]).numpy(), a
    )
    # sigma 0: no blur, the raw uniform field in [-1, 1) scaled by alpha / size
    ember.manual_seed(0)
    raw = T.ElasticTransform.get_params([1.0, 2.0], [0.0, 0.0], [H, W]).numpy()
    ember.manual_seed(0)
    u = ember.rand([1, 1, H, W]).numpy() * 2 - 1
    np.testing.assert_allclose(raw[0, ..., 0], u[0, 0] * 1.0 / W, rtol=1e-6)
    # blurring smooths: neighbouring differences shrink
    assert (
        np.abs(np.diff(a[0, ..., 0], axis=1)).mean()
        < np.abs(np.diff(raw[0, ..., 0], axis=1)).mean() * W / 50
    )


def test_elastic_transform_module():
    t = T.ElasticTransform()
    assert t.alpha == [50.0, 50.0] and t.sigma == [5.0, 5.0] and t.fill == [0.0]
    assert repr(t) == (
        "ElasticTransform(alpha=[50.0, 50.0], sigma=[5.0, 5.0], "
        "interpolation=InterpolationMode.BILINEAR, fill=[0.0])"
    )
    for img in [U8, F32, PIL_IMG]:
        ember.manual_seed(1)
        a = t(img)
        ember.manual_seed(1)
        b = t(img)
        assert F.get_dimensions(a) == F.get_dimensions(img)
        if isinstance(img, Image.Image):
            a, b = F.pil_to_tensor(a), F.pil_to_tensor(b)
        else:
            assert a.dtype == img.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert T.ElasticTransform(alpha=(1.0, 2.0), fill=(1, 2, 3)).fill == [1.0, 2.0, 3.0]
    with pytest.raises(
        TypeError, match="alpha should be float or a sequence of floats. Got <class 'int'>"
    ):
        T.ElasticTransform(alpha=50)
    with pytest.raises(ValueError, match="If sigma is a sequence its length should be 2. Got 3"):
        T.ElasticTransform(sigma=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="alpha should be a sequence of floats. Got <class 'int'>"):
        T.ElasticTransform(alpha=[1, 2])
    with pytest.raises(TypeError, match="fill should be int or float or a list or tuple of them"):
        T.ElasticTransform(fill=None)


# -- AugMix -------------------------------------------------------------------------------


def test_augmix_space():
    space = T.AugMix()._augmentation_space(10, (H, W))
    assert list(space) == [
        "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Posterize", "Solarize",
        "AutoContrast", "Equalize", "Brightness", "Color", "Contrast", "Sharpness",
    ]  # fmt: skip
    assert space["Posterize"][0].tolist() == [4, 4, 3, 3, 2, 2, 1, 1, 0, 0]
    np.testing.assert_allclose(space["TranslateX"][0][-1], W / 3.0, rtol=1e-6)
    np.testing.assert_allclose(space["Solarize"][0][[0, -1]], [255.0, 0.0])
    assert space["Equalize"][0] is None and space["Rotate"][1]
    assert len(T.AugMix(all_ops=False)._augmentation_space(10, (H, W))) == 9


def test_augmix_dirichlet():
    ember.manual_seed(0)
    w = T.AugMix()._sample_dirichlet(ember.tensor([1.0, 1.0, 1.0]).expand(4, -1))
    assert tuple(w.shape) == (4, 3) and w.dtype == ember.float32
    assert (w.numpy() > 0).all()
    np.testing.assert_allclose(w.numpy().sum(1), 1.0, rtol=1e-6)


def _fixed(monkeypatch, weights):
    it = iter([ember.tensor(w) for w in weights])
    # on the device of the parameters (the image's), as the real draw is
    monkeypatch.setattr(T.AugMix, "_sample_dirichlet", lambda self, p: next(it).to(p.device))
    monkeypatch.setattr(
        T.AugMix, "_augmentation_space", lambda self, n, s: {"Invert": (None, False)}
    )


def test_augmix_mixing_with_fixed_choices(monkeypatch):
    _fixed(monkeypatch, [[[0.0, 1.0]], [[1.0]]])
    out = T.AugMix(mixture_width=1, chain_depth=1)(U8)
    np.testing.assert_array_equal(out.numpy(), 255 - CHW)
    _fixed(monkeypatch, [[[0.5, 0.5]], [[1.0]]])
    assert (
        T.AugMix(mixture_width=1, chain_depth=1)(U8).numpy() == 127
    ).all()  # 127.5 truncated like .to(uint8)
    _fixed(monkeypatch, [[[0.25, 0.75]], [[0.5, 0.5]]])
    out = T.AugMix(mixture_width=2, chain_depth=2)(F64)  # two inverts: the identity
    np.testing.assert_allclose(out.numpy(), F64.numpy(), atol=1e-12)
    batch = ember.from_numpy(np.stack([CHW, CHW]))
    _fixed(monkeypatch, [[[1.0, 0.0], [0.0, 1.0]], [[1.0], [1.0]]])
    out = T.AugMix(mixture_width=1, chain_depth=1)(batch).numpy()
    np.testing.assert_array_equal(out[0], CHW)
    np.testing.assert_array_equal(out[1], 255 - CHW)


@pytest.mark.parametrize(
    "img", [U8, ember.from_numpy(np.stack([CHW, CHW[:, ::-1].copy()])), PIL_IMG]
)
def test_augmix_shapes_dtypes_and_seed(img):
    t = T.AugMix()
    ember.manual_seed(5)
    a = t(img)
    ember.manual_seed(5)
    b = t(img)
    if isinstance(img, Image.Image):
        assert isinstance(a, Image.Image) and a.mode == img.mode and a.size == img.size
        a, b = F.pil_to_tensor(a), F.pil_to_tensor(b)
    else:
        assert a.dtype == img.dtype and tuple(a.shape) == tuple(img.shape)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_augmix_errors_and_repr():
    with pytest.raises(
        ValueError, match=r"The severity must be between \[1, 10\]. Got 11 instead."
    ):
        T.AugMix(severity=11)
    assert repr(T.AugMix()) == (
        "AugMix(severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True, "
        "interpolation=InterpolationMode.BILINEAR, fill=None)"
    )
    assert autoaugment.AugMix is T.AugMix


def test_exports():
    for name in ["RandomPerspective", "ElasticTransform", "AugMix"]:
        assert name in T.__all__ and hasattr(T, name)
    assert callable(F.perspective) and callable(F.elastic_transform)
