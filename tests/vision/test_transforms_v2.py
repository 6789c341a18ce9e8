"""Unit tests of ember.vision.tv_tensors and ember.vision.transforms.v2 (no torchvision:
NumPy / PIL references and hand-checked box geometry)."""

import math
import pickle
import subprocess
import sys
import warnings
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import tv_tensors
from ember.vision.transforms import v2
from ember.vision.transforms.v2 import functional as F


@pytest.fixture(autouse=True)
def _dispatch_on():
    """tests/conftest.py turns ``__torch_function__`` dispatch off around each test; a program
    that imported tv_tensors keeps it on, which their semantics need."""
    ember.overrides.activate()
    yield


def _array(h=20, w=30, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (3, h, w), dtype=np.uint8)


ARR = _array()
H, W = ARR.shape[1:]


def _image(dtype=ember.uint8):
    img = tv_tensors.Image(ember.tensor(ARR))
    return img if dtype == ember.uint8 else F.to_dtype(img, dtype, scale=True)


def _boxes(data=((2, 3, 10, 8), (0, 0, 30, 20)), fmt="XYXY", canvas=(H, W), dtype=None):
    return tv_tensors.BoundingBoxes(list(map(list, data)), format=fmt, canvas_size=canvas,
                                    dtype=dtype or ember.float32)


def _np(t):
    return t.as_subclass(ember.Tensor).numpy()


# -- lazy import ------------------------------------------------------------------------------


def test_ember_vision_does_not_import_tv_tensors():
    code = (
        "import sys, ember.vision, ember.vision.transforms, ember.overrides as o\n"
        "assert 'ember.vision.tv_tensors' not in sys.modules\n"
        "assert 'ember.vision.transforms.v2' not in sys.modules\n"
        "assert not o.is_active()\n"
        "import ember.vision as tv\n"
        "assert tv.tv_tensors.Image is not None and tv.transforms.v2.Compose is not None\n"
        "assert o.is_active()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- tv_tensors -------------------------------------------------------------------------------


def test_tv_tensor_ops_return_pure_tensors_except_the_kept_methods():
    img = _image(ember.float32)
    assert type(img + 1) is ember.Tensor
    assert type(img.sum()) is ember.Tensor
    assert type(img[0]) is ember.Tensor
    for out in (img.clone(), img.detach(), img.to(ember.float64), img.requires_grad_(False)):
        assert type(out) is tv_tensors.Image
    with tv_tensors.set_return_type("TVTensor"):
        assert type(img + 1) is tv_tensors.Image
        boxes = _boxes() * 2
        assert type(boxes) is tv_tensors.BoundingBoxes and boxes.canvas_size == (H, W)
    assert type(img + 1) is ember.Tensor
    tv_tensors.set_return_type("tvtensor")
    try:
        assert type(img * 2) is tv_tensors.Image
    finally:
        tv_tensors.set_return_type("Tensor")
    with pytest.raises(ValueError, match="return_type must be 'TVTensor' or 'Tensor', got foo"):
        tv_tensors.set_return_type("foo")


def test_tv_tensor_constructors_and_metadata():
    assert tv_tensors.Image(ember.zeros(4, 5)).shape == (1, 4, 5)
    pil = Image.fromarray(ARR.transpose(1, 2, 0))
    np.testing.assert_array_equal(_np(tv_tensors.Image(pil)), ARR)
    with pytest.raises(ValueError, match="Tensor must be 2D or higher, got 1D tensor."):
        tv_tensors.Image(ember.zeros(3))
    with pytest.raises(ValueError):
        tv_tensors.Video(ember.zeros(3, 4, 5))
    b = tv_tensors.BoundingBoxes([1, 2, 3, 4], format="xywh", canvas_size=(5, 6), device="cpu")
    assert b.shape == (1, 4) and b.format is tv_tensors.BoundingBoxFormat.XYWH
    assert b.clamping_mode == "soft" and b.dtype == ember.int64
    with pytest.raises(ValueError, match="clamping_mode must be None, hard or soft, got x."):
        tv_tensors.BoundingBoxes([1, 2, 3, 4], format="XYXY", canvas_size=(5, 6),
                                 clamping_mode="x")
    with pytest.raises(ValueError, match="Rotated bounding boxes should be floating point"):
        tv_tensors.BoundingBoxes([1, 2, 3, 4, 5], format="XYWHR", canvas_size=(5, 6))
    assert tv_tensors.is_rotated_bounding_format("CXCYWHR")
    assert not tv_tensors.is_rotated_bounding_format(tv_tensors.BoundingBoxFormat.XYXY)
    kp = tv_tensors.KeyPoints([[1.0, 2.0], [3.0, 4.0]], canvas_size=(5, 6))
    assert kp.canvas_size == (5, 6)
    assert repr(b) == ("BoundingBoxes([[1, 2, 3, 4]], format=BoundingBoxFormat.XYWH, "
                       "canvas_size=(5, 6), clamping_mode=soft)")
    wrapped = tv_tensors.wrap(ember.zeros(2, 4), like=b, canvas_size=(7, 8))
    assert type(wrapped) is tv_tensors.BoundingBoxes
    assert wrapped.format is b.format and wrapped.canvas_size == (7, 8)
    for obj in (b, kp):
        copy = pickle.loads(pickle.dumps(obj))
        assert type(copy) is type(obj) and copy.canvas_size == obj.canvas_size


# -- the extension API ------------------------------------------------------------------------


def test_custom_transform_make_params_transform_and_passthrough():
    calls = []

    class AddOffset(v2.Transform):
        def make_params(self, flat_inputs):
            calls.append([type(x).__name__ for x in flat_inputs])
            return {"offset": 5}

        def transform(self, inpt, params):
            return inpt + params["offset"]

    Point = namedtuple("Point", ["x", "y"])
    pure = ember.zeros(2, 2)
    sample = {"a": [pure, ember.ones(1)], "b": ("text", 3, None),
              "c": OrderedDict(p=Point(1.0, ember.zeros(1)))}
    out = AddOffset()(sample)
    assert calls == [["Tensor"]]  # only the first pure tensor is the image
    np.testing.assert_array_equal(out["a"][0].numpy(), np.full((2, 2), 5.0))
    assert out["a"][1] is sample["a"][1] and out["b"] == ("text", 3, None)
    assert type(out["c"]) is OrderedDict and type(out["c"]["p"]) is Point
    assert out["c"]["p"].y is sample["c"]["p"].y
    # with an Image in the sample no pure tensor is transformed
    img = _image(ember.float32)
    out_img, out_pure = AddOffset()(img, pure)
    assert out_pure is pure and type(out_img) is ember.Tensor


def test_register_kernel_for_a_custom_tv_tensor():
    class Heatmap(tv_tensors.TVTensor):
        pass

    @F.register_kernel(F.horizontal_flip, Heatmap)
    def _flip_heatmap(inpt):
        return tv_tensors.wrap(inpt.as_subclass(ember.Tensor).flip(-1) * 10, like=inpt)

    hm = ember.tensor([[1.0, 2.0, 3.0]]).as_subclass(Heatmap)
    out = v2.RandomHorizontalFlip(p=1.0)(hm)
    assert type(out) is Heatmap
    np.testing.assert_array_equal(_np(out), [[30.0, 20.0, 10.0]])
    with pytest.raises(ValueError, match="Kernels cannot be registered for the builtin"):
        F.register_kernel(F.horizontal_flip, tv_tensors.Image)
    with pytest.raises(ValueError, match="Kernels can only be registered on functionals from"):
        F.register_kernel(len, Heatmap)
    with pytest.raises(ValueError, match="Could not find functional with name 'nope'"):
        F.register_kernel("nope", Heatmap)
    # an unknown TVTensor is passed through by transforms but refused by functionals
    class Other(tv_tensors.TVTensor):
        pass

    other = ember.zeros(2, 2).as_subclass(Other)
    assert v2.RandomVerticalFlip(p=1.0)(other) is other
    with pytest.raises(TypeError, match="Functional F.vertical_flip supports inputs of type"):
        F.vertical_flip(other)


# -- bounding box geometry, checked by hand ---------------------------------------------------


def test_flip_boxes_by_hand():
    b = _boxes()
    np.testing.assert_array_equal(_np(F.horizontal_flip(b)), [[20, 3, 28, 8], [0, 0, 30, 20]])
    np.testing.assert_array_equal(_np(F.vertical_flip(b)), [[2, 12, 10, 17], [0, 0, 30, 20]])
    xywh = F.convert_bounding_box_format(b, new_format="XYWH")
    np.testing.assert_array_equal(_np(xywh), [[2, 3, 8, 5], [0, 0, 30, 20]])
    np.testing.assert_array_equal(_np(F.horizontal_flip(xywh)), [[20, 3, 8, 5], [0, 0, 30, 20]])
    cxcywh = F.convert_bounding_box_format(b, new_format="CXCYWH")
    np.testing.assert_array_equal(_np(cxcywh), [[6, 5.5, 8, 5], [15, 10, 30, 20]])
    np.testing.assert_array_equal(_np(F.vertical_flip(cxcywh)),
                                  [[6, 14.5, 8, 5], [15, 10, 30, 20]])
    kp = tv_tensors.KeyPoints([[0.0, 0.0], [29.0, 19.0]], canvas_size=(H, W))
    np.testing.assert_array_equal(_np(F.horizontal_flip(kp)), [[29, 0], [0, 19]])


def test_resize_crop_pad_boxes_by_hand():
    b = _boxes()
    r = F.resize(b, [40, 15])  # y x2, x x0.5
    np.testing.assert_array_equal(_np(r), [[1, 6, 5, 16], [0, 0, 15, 40]])
    assert r.canvas_size == (40, 15)
    c = F.crop(b, top=2, left=4, height=10, width=5)
    np.testing.assert_array_equal(_np(c), [[0, 1, 5, 6], [0, 0, 5, 10]])  # clamped
    assert c.canvas_size == (10, 5)
    p = F.pad(b, [1, 2, 3, 4])  # left, top, right, bottom
    np.testing.assert_array_equal(_np(p), [[3, 5, 11, 10], [1, 2, 31, 22]])
    assert p.canvas_size == (26, 34)
    cc = F.center_crop(b, [10, 10])  # top 5, left 10
    np.testing.assert_array_equal(_np(cc), [[0, 0, 0, 3], [0, 0, 10, 10]])
    with pytest.raises(ValueError, match="Padding mode 'reflect' is not supported with bounding"):
        F.pad(b, 2, padding_mode="reflect")
    # unclamped boxes keep their coordinates
    nb = tv_tensors.BoundingBoxes([[2.0, 3.0, 10.0, 8.0]], format="XYXY", canvas_size=(H, W),
                                  clamping_mode=None)
    np.testing.assert_array_equal(_np(F.crop(nb, 4, 5, 3, 3)), [[-3, -1, 5, 4]])


def test_rotate_and_affine_boxes_by_hand():
    b = _boxes(data=((0, 0, 10, 4),), canvas=(20, 20))
    # 90 degrees counter-clockwise about the centre (10, 10): (x, y) -> (y, 20 - x)
    r = F.rotate(b, 90.0)
    np.testing.assert_allclose(_np(r), [[0, 10, 4, 20]], atol=1e-4)
    # translation only
    t = F.affine(b, angle=0.0, translate=[3, 2], scale=1.0, shear=[0.0, 0.0])
    np.testing.assert_allclose(_np(t), [[3, 2, 13, 6]], atol=1e-5)
    # scale 2 about the centre, clamped to the canvas
    s = F.affine(b, angle=0.0, translate=[0, 0], scale=2.0, shear=[0.0, 0.0])
    np.testing.assert_allclose(_np(s), [[0, 0, 10, 0]], atol=1e-5)
    # 45 degrees with expand: the canvas grows to the rotated image's bounding box
    e = F.rotate(_boxes(data=((0, 0, 20, 20),), canvas=(20, 20)), 45.0, expand=True)
    side = 20 * math.sqrt(2)
    # torchvision sizes the boxes' canvas from the absolute-centre matrix, whose float32
    # rounding gives (29, 30) here, one off the rotated image's (30, 30): kept as torchvision
    assert e.canvas_size == (29, 30)
    np.testing.assert_allclose(_np(e), [[0, 0, side, side]], atol=1e-3)


def test_convert_and_clamp_formats_round_trip():
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 10, (6, 2))
    xyxy = np.concatenate([xy, xy + rng.uniform(1, 5, (6, 2))], 1).astype(np.float32)
    b = tv_tensors.BoundingBoxes(xyxy, format="XYXY", canvas_size=(12, 12))
    for fmt in ("XYWH", "CXCYWH"):
        back = F.convert_bounding_box_format(F.convert_bounding_box_format(b, new_format=fmt),
                                             new_format="XYXY")
        np.testing.assert_allclose(_np(back), xyxy, atol=1e-5)
    clamped = F.clamp_bounding_boxes(b)
    np.testing.assert_allclose(_np(clamped), np.clip(xyxy, 0, 12))
    with pytest.raises(ValueError, match="For pure tensor inputs, `old_format` has to be passed"):
        F.convert_bounding_box_format(ember.zeros(1, 4), new_format="XYXY")
    with pytest.raises(ValueError, match="`format`, `canvas_size` and `clamping_mode` have to"):
        F.clamp_bounding_boxes(ember.zeros(1, 4))
    with pytest.raises(ValueError, match="`old_format` must not be passed"):
        F.convert_bounding_box_format(b, old_format="XYXY", new_format="XYWH")
    rot = tv_tensors.BoundingBoxes([[5.0, 5.0, 4.0, 2.0, 90.0]], format="CXCYWHR",
                                   canvas_size=(10, 10))
    corners = _np(F.convert_bounding_box_format(rot, new_format="XYXYXYXY"))
    np.testing.assert_allclose(corners, [[4, 7, 4, 3, 6, 3, 6, 7]], atol=1e-5)
    back = F.convert_bounding_box_format(F.convert_bounding_box_format(rot, new_format="XYWHR"),
                                         new_format="CXCYWHR")
    np.testing.assert_allclose(_np(back), _np(rot), atol=1e-5)
    # hard clamping keeps every corner on the canvas; a box inside is left alone
    for mode in ("soft", "hard"):
        inside = tv_tensors.BoundingBoxes([[5.0, 5.0, 4.0, 2.0, 30.0]], format="CXCYWHR",
                                          canvas_size=(10, 10), clamping_mode=mode)
        np.testing.assert_allclose(_np(F.clamp_bounding_boxes(inside)), _np(inside), atol=1e-5)
    out = tv_tensors.BoundingBoxes([[1.0, 5.0, 6.0, 3.0, 30.0]], format="CXCYWHR",
                                   canvas_size=(10, 10), clamping_mode="hard")
    corners = _np(F.convert_bounding_box_format(F.clamp_bounding_boxes(out),
                                                new_format="XYXYXYXY"))
    assert (corners >= -1e-4).all() and (corners <= 10 + 1e-4).all()
    before = _np(F.convert_bounding_box_format(out, new_format="XYXYXYXY"))
    assert (before < 0).any()


# -- images, masks, videos: NumPy references --------------------------------------------------


def test_image_kernels_against_numpy():
    img = _image()
    np.testing.assert_array_equal(_np(F.horizontal_flip(img)), ARR[..., ::-1])
    np.testing.assert_array_equal(_np(F.crop(img, 2, 3, 5, 6)), ARR[:, 2:7, 3:9])
    np.testing.assert_array_equal(_np(F.invert(img)), 255 - ARR)
    np.testing.assert_array_equal(_np(F.posterize(img, 3)), ARR & 0b11100000)
    padded = _np(F.pad(img, [1, 2], fill=[7, 8, 9]))
    assert padded.shape == (3, H + 4, W + 2)
    np.testing.assert_array_equal(padded[:, 0, 0], [7, 8, 9])
    np.testing.assert_array_equal(padded[:, 2:-2, 1:-1], ARR)
    f = _np(F.to_dtype(img, ember.float32, scale=True))
    np.testing.assert_allclose(f, ARR / 255.0, atol=1e-7)
    np.testing.assert_array_equal(_np(F.to_dtype(F.to_dtype(img, ember.float32, scale=True),
                                                 ember.uint8, scale=True)), ARR)
    fimg = _image(ember.float32)
    norm = _np(F.normalize(fimg, [0.5, 0.4, 0.3], [0.2, 0.25, 0.5]))
    ref = (ARR / 255.0 - np.array([0.5, 0.4, 0.3])[:, None, None]) / np.array(
        [0.2, 0.25, 0.5])[:, None, None]
    np.testing.assert_allclose(norm, ref, atol=1e-5)
    gray = _np(F.rgb_to_grayscale(fimg))
    np.testing.assert_allclose(gray[0], np.tensordot([0.2989, 0.587, 0.114], ARR / 255.0, 1),
                               atol=1e-6)
    perm = _np(F.permute_channels(img, [2, 0, 1]))
    np.testing.assert_array_equal(perm, ARR[[2, 0, 1]])
    np.testing.assert_array_equal(_np(F.solarize(img, 128)), np.where(ARR >= 128, 255 - ARR, ARR))


def test_masks_use_nearest_and_keep_their_fill():
    mask = tv_tensors.Mask(ember.tensor(np.arange(12, dtype=np.uint8).reshape(3, 4)))
    up = F.resize(mask, [6, 8], interpolation="bilinear")  # masks: always nearest
    assert type(up) is tv_tensors.Mask and up.shape == (6, 8)
    np.testing.assert_array_equal(_np(up), np.arange(12).reshape(3, 4).repeat(2, 0).repeat(2, 1))
    padded = v2.Pad(1, fill={tv_tensors.Image: 9, tv_tensors.Mask: 255})(
        {"image": _image(), "mask": mask})
    assert padded["mask"].shape == (5, 6)
    assert _np(padded["mask"])[0, 0] == 255 and _np(padded["image"])[0, 0, 0] == 9
    rot = F.rotate(tv_tensors.Mask(ember.ones(1, 5, 5, dtype=ember.uint8)), 45.0, fill=7)
    assert set(np.unique(_np(rot))) <= {1, 7}
    with pytest.raises(ValueError, match="Non-scalar fill value is not supported"):
        F.pad(mask, 1, fill=[1, 2])


def test_video_and_pil_dispatch():
    video = tv_tensors.Video(ember.rand(5, 3, 8, 10))
    out = v2.Resize((4, 5))(video)
    assert type(out) is tv_tensors.Video and out.shape == (5, 3, 4, 5)
    sub = F.uniform_temporal_subsample(video, 3)
    np.testing.assert_array_equal(_np(sub), _np(video)[[0, 2, 4]])
    pil = Image.fromarray(ARR.transpose(1, 2, 0))
    out = v2.RandomHorizontalFlip(p=1.0)(pil)
    assert isinstance(out, Image.Image)
    np.testing.assert_array_equal(np.asarray(out), ARR.transpose(1, 2, 0)[:, ::-1])
    assert F.get_size(pil) == [H, W] and F.get_dimensions(pil) == [3, H, W]
    crops = v2.FiveCrop(8)(pil)
    assert len(crops) == 5 and all(c.size == (8, 8) for c in crops)
    np.testing.assert_array_equal(_np(v2.PILToTensor()(pil)), ARR)
    img = v2.ToImage()(pil)
    assert type(img) is tv_tensors.Image
    assert isinstance(v2.ToPILImage()(img), Image.Image)


# -- a detection sample through a pipeline ----------------------------------------------------


def _detection_sample():
    masks = np.zeros((2, H, W), dtype=np.uint8)
    masks[0, 3:8, 2:10] = 1
    masks[1, 10:20, 15:30] = 1
    return {
        "image": _image(),
        "boxes": _boxes(data=((2, 3, 10, 8), (15, 10, 30, 20))),
        "labels": ember.tensor([3, 7]),
        "masks": tv_tensors.Mask(ember.tensor(masks)),
        "image_id": 11,
    }


def test_detection_sample_through_compose_stays_consistent():
    pipeline = v2.Compose([
        v2.RandomHorizontalFlip(p=1.0),
        v2.Pad([2, 4]),
        v2.Resize((2 * (H + 8), 2 * (W + 4))),
        v2.ToDtype(ember.float32, scale=True),
        v2.SanitizeBoundingBoxes(),
        v2.ToPureTensor(),
    ])
    out = pipeline(_detection_sample())
    assert set(out) == {"image", "boxes", "labels", "masks", "image_id"}
    assert out["image_id"] == 11
    assert all(type(out[k]) is ember.Tensor for k in ("image", "boxes", "labels", "masks"))
    # flip: x -> 30 - x; pad: +2 in x, +4 in y; resize: x2
    np.testing.assert_allclose(out["boxes"].numpy(), [[44, 14, 60, 24], [4, 28, 34, 48]])
    # each box encloses exactly its mask after the same geometry
    for box, mask in zip(out["boxes"].numpy(), out["masks"].numpy()):
        ys, xs = np.nonzero(mask)
        np.testing.assert_allclose([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], box)
    assert out["image"].dtype == ember.float32 and out["image"].shape == (3, 56, 68)


def test_sanitize_bounding_boxes_drops_labels_and_masks():
    sample = _detection_sample()
    sample["boxes"] = _boxes(data=((2, 3, 10, 8), (15, 10, 15.5, 20)))
    out = v2.SanitizeBoundingBoxes()(sample)
    assert out["boxes"].shape == (1, 4) and out["labels"].tolist() == [3]
    assert out["masks"].shape == (1, H, W)
    with pytest.raises(ValueError, match="Could not infer where the labels are in the sample"):
        v2.SanitizeBoundingBoxes()({"image": _image(), "boxes": _boxes()})
    out = v2.SanitizeBoundingBoxes(labels_getter=None)((_image(), _boxes()))
    assert out[1].shape == (2, 4)
    with pytest.raises(ValueError, match="min_size must be >= 1, got 0.5."):
        v2.SanitizeBoundingBoxes(min_size=0.5)
    with pytest.raises(ValueError, match="No bounding boxes were found in the sample"):
        v2.SanitizeBoundingBoxes()({"image": _image(), "labels": ember.tensor([1])})


def test_random_transforms_keep_sample_geometry_consistent():
    ember.manual_seed(0)
    for t in (v2.RandomResizedCrop(16), v2.RandomCrop(12, padding=3), v2.RandomZoomOut(p=1.0),
              v2.RandomAffine(20, translate=(0.1, 0.1)), v2.RandomRotation(30),
              v2.RandomPerspective(p=1.0), v2.ElasticTransform(alpha=5.0),
              v2.RandomIoUCrop(), v2.ScaleJitter((40, 40)), v2.RandomShortestSize([10, 12])):
        out = t(_detection_sample())
        h, w = out["image"].shape[-2:]
        assert out["boxes"].canvas_size == (h, w) and out["masks"].shape[-2:] == (h, w)
        b = _np(out["boxes"])
        assert (b[:, 0::2] >= 0).all() and (b[:, 0::2] <= w).all() and (b[:, 1::2] <= h).all()


def test_color_and_augment_transforms_run_on_every_type():
    ember.manual_seed(1)
    pil = Image.fromarray(ARR.transpose(1, 2, 0))
    for t in (v2.ColorJitter(0.4, 0.4, 0.4, 0.1), v2.RandomPhotometricDistort(p=1.0),
              v2.Grayscale(3), v2.RandomGrayscale(1.0), v2.GaussianBlur(3), v2.RandomInvert(1.0),
              v2.RandomPosterize(2, 1.0), v2.RandomSolarize(100, 1.0), v2.RandomEqualize(1.0),
              v2.RandomAutocontrast(1.0), v2.RandomAdjustSharpness(2.0, 1.0), v2.AutoAugment(),
              v2.RandAugment(), v2.TrivialAugmentWide(), v2.AugMix(), v2.JPEG((40, 60)),
              v2.RandomChannelPermutation(), v2.RGB()):
        for inpt in (_image(), pil):
            out = t(inpt)
            assert type(out) is type(inpt)
            assert F.get_size(out) == [H, W]


def test_erasing_mixup_cutmix():
    ember.manual_seed(2)
    img = _image(ember.float32)
    out = v2.RandomErasing(p=1.0, value=0.0)(img)
    zeros = (_np(out) == 0).all(axis=0)
    assert zeros.any() and type(out) is tv_tensors.Image
    batch = ember.rand(4, 3, 8, 8)
    labels = ember.tensor([0, 1, 2, 1])
    for t in (v2.MixUp(num_classes=3), v2.CutMix(num_classes=3)):
        imgs, lab = t(batch, labels)
        assert imgs.shape == batch.shape and lab.shape == (4, 3)
        np.testing.assert_allclose(lab.sum(1).numpy(), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="num_classes must be passed if the labels are index"):
        v2.MixUp()(batch, labels)
    with pytest.raises(ValueError, match="Expected a batched input with 4 dims, but got 3"):
        v2.CutMix(num_classes=3)(batch[0], labels)


def test_todtype_dict_and_scale():
    sample = _detection_sample()
    out = v2.ToDtype({tv_tensors.Image: ember.float32, tv_tensors.Mask: ember.int64,
                      "others": None}, scale=True)(sample)
    assert out["image"].dtype == ember.float32 and out["masks"].dtype == ember.int64
    assert type(out["masks"]) is tv_tensors.Mask and out["boxes"].dtype == ember.float32
    np.testing.assert_allclose(_np(out["image"]), ARR / 255.0, atol=1e-7)
    with pytest.raises(ValueError, match="No dtype was specified for type"):
        v2.ToDtype({tv_tensors.Image: ember.float32})(sample)
    with pytest.raises(ValueError, match="dtype must be a dict or a torch.dtype"):
        v2.ToDtype("float32")
    out = v2.ConvertImageDtype(ember.float64)(_image())
    assert out.dtype == ember.float64 and type(out) is tv_tensors.Image


def test_containers_and_lambda():
    ember.manual_seed(3)
    img = _image(ember.float32)
    flip = v2.RandomHorizontalFlip(p=1.0)
    assert v2.RandomApply([flip], p=0.0)(img) is img
    np.testing.assert_array_equal(_np(v2.RandomApply([flip], p=1.0)(img)), _np(img)[..., ::-1])
    out = v2.RandomChoice([flip, flip], p=[1, 3])(img)
    np.testing.assert_array_equal(_np(out), _np(img)[..., ::-1])
    out = v2.RandomOrder([flip, v2.RandomVerticalFlip(p=1.0)])(img)
    np.testing.assert_array_equal(_np(out), _np(img)[:, ::-1, ::-1])
    out = v2.Lambda(lambda x: x * 0, tv_tensors.Image)((img, ember.ones(1)))
    assert (out[0].numpy() == 0).all() and out[1].item() == 1
    two = v2.Compose([flip, flip])(img, ember.ones(1))
    assert isinstance(two, tuple) and len(two) == 2
    with pytest.raises(ValueError, match="Pass at least one transform"):
        v2.Compose([])
    with pytest.raises(TypeError, match="Argument transforms should be a sequence of callables"):
        v2.Compose(flip)
    with pytest.raises(ValueError, match="Length of p doesn't match the number of transforms"):
        v2.RandomChoice([flip], p=[1, 2])
    assert "p=1.0" in repr(flip)


def test_constructor_errors_match_torchvision():
    with pytest.raises(ValueError, match=r"`p` should be a floating point value in the interval"):
        v2.RandomHorizontalFlip(p=2)
    with pytest.raises(ValueError, match="size can be an integer, a sequence of one or two"):
        v2.Resize([1, 2, 3])
    with pytest.raises(ValueError, match="max_size must be an integer when size is None"):
        v2.Resize(None)
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element of"):
        v2.Pad([1, 2, 3])
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive"):
        v2.GaussianBlur(4)
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non neg"):
        v2.ColorJitter(brightness=-1)
    with pytest.raises(ValueError, match="Invalid side range provided"):
        v2.RandomZoomOut(side_range=(0.5, 2))
    with pytest.raises(TypeError, match=r"Normalize\(\) does not support PIL images."):
        v2.Normalize([0.5], [0.5])(Image.fromarray(ARR.transpose(1, 2, 0)))
    with pytest.raises(TypeError, match="No image or video was found in the sample"):
        v2.RandomErasing(p=1.0)(_boxes())
    with pytest.raises(ValueError, match="Found multiple HxW dimensions in the sample"):
        v2.RandomCrop(5)(_image(), tv_tensors.Mask(ember.zeros(3, 4)))
    with pytest.raises(TypeError, match=r"RandomIoUCrop\(\) requires input sample to contain"):
        v2.RandomIoUCrop()(_image())
    with pytest.raises(ValueError, match="quality must be an integer from 1 to 100"):
        v2.JPEG(0)
    with pytest.raises(ValueError, match="Required crop size"):
        v2.RandomCrop(50)(_image())
    with pytest.raises(TypeError, match=r"BoundingBoxes'es and Mask's are not supported by Five"):
        v2.FiveCrop(5)(_image(), _boxes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="ToTensor\\(\\)` is deprecated"):
            v2.ToTensor()


def test_v1_get_params_exposed_on_v2_classes():
    i, j, h, w = v2.RandomCrop.get_params(_image(), (5, 6))
    assert (h, w) == (5, 6) and 0 <= i <= H - 5 and 0 <= j <= W - 6
    assert hasattr(v2.RandomResizedCrop, "get_params") and hasattr(v2.ColorJitter, "get_params")
