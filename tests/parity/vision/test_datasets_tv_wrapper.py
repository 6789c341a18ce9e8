"""ember.vision.datasets.wrap_dataset_for_transforms_v2 against torchvision 0.29's: the same fake
on-disk datasets (built by the helpers of tests/vision/test_datasets_more.py and
test_datasets_tv_wrapper.py), wrapped in both libraries, give equal samples, tv_tensors
included, and equal errors. COCO needs pycocotools on torchvision's side."""

import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import datasets as eds

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from torchvision import datasets as tds  # noqa: E402
from torchvision import tv_tensors as TTV  # noqa: E402
from torchvision.transforms import v2 as T2  # noqa: E402


def _load(name):
    spec = importlib.util.spec_from_file_location(
        f"_wrapper_parity_{name}", Path(__file__).parents[2] / "vision" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fake = _load("test_datasets_more")
unit = _load("test_datasets_tv_wrapper")


@pytest.fixture(autouse=True)
def _dispatch_on():
    ember.overrides.activate()
    yield


def e_wrap(ds, **kwargs):
    return eds.wrap_dataset_for_transforms_v2(ds, **kwargs)


def t_wrap(ds, **kwargs):
    return tds.wrap_dataset_for_transforms_v2(ds, **kwargs)


def assert_same(e, t, where="item"):
    """Equal values: tv_tensors by class name and metadata too, images by mode and pixels,
    tensors by dtype and values, containers element by element (dicts whatever their order:
    the wrappers fill them from sets)."""
    if isinstance(t, Image.Image):
        assert isinstance(e, Image.Image), where
        assert (e.mode, e.size) == (t.mode, t.size), where
        np.testing.assert_array_equal(np.asarray(e), np.asarray(t), err_msg=where)
    elif isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), where
        assert type(e).__name__ == type(t).__name__, where
        if isinstance(t, TTV.BoundingBoxes):
            assert e.format.name == t.format.name, where
            assert tuple(e.canvas_size) == tuple(t.canvas_size), where
        e = e.as_subclass(ember.Tensor)
        t = t.as_subclass(torch.Tensor)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], where
        assert tuple(e.shape) == tuple(t.shape), where
        assert e.tolist() == t.tolist(), where
    elif isinstance(t, np.ndarray):
        assert isinstance(e, np.ndarray) and e.dtype == t.dtype, where
        np.testing.assert_array_equal(e, t, err_msg=where)
    elif isinstance(t, dict):
        assert isinstance(e, dict) and set(e) == set(t), f"{where}: {set(e)} != {set(t)}"
        for k in t:
            assert_same(e[k], t[k], f"{where}[{k!r}]")
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), where
        for i, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(e) is type(t) and e == t, f"{where}: {e!r} != {t!r}"


def assert_same_wrapped(e_ds, t_ds, **kwargs):
    e_w, t_w = e_wrap(e_ds, **kwargs), t_wrap(t_ds, **kwargs)
    assert type(e_w).__name__ == type(t_w).__name__
    assert len(e_w) == len(t_w)
    for i in range(len(t_w)):
        assert_same(e_w[i], t_w[i], f"item {i}")


def assert_same_error(e_call, t_call):
    with pytest.raises(Exception) as t_info:
        t_call()
    with pytest.raises(type(t_info.value)) as e_info:
        e_call()
    assert str(e_info.value) == str(t_info.value)


# ------------------------------------------------------------------------- COCO
@pytest.mark.parametrize("target_keys", [None, "all", ["masks", "iscrowd"]])
def test_coco_detection(tmp_path, target_keys):
    pytest.importorskip("pycocotools")
    unit.coco_files(tmp_path)
    ann = str(tmp_path / "ann.json")
    assert_same_wrapped(eds.CocoDetection(tmp_path, ann), tds.CocoDetection(tmp_path, ann),
                        target_keys=target_keys)


def test_coco_random_polygons_and_rles(tmp_path):
    pytest.importorskip("pycocotools")
    rng = np.random.default_rng(0)
    fake.write_files(tmp_path, {"a.png": fake.image_bytes(0, size=(23, 17))})
    annotations = []
    for i in range(40):
        polygons = []
        for _ in range(rng.integers(1, 4)):
            points = rng.uniform(-3, 26, 2 * rng.integers(3, 8))
            if i % 3 == 0:
                points = np.round(points * 2) / 2
            polygons.append(points.tolist())
        annotations.append({"id": i, "image_id": 1, "bbox": [0, 0, 1, 1], "category_id": i,
                            "segmentation": polygons})
    for i in range(40, 50):  # RLEs, uncompressed and compressed
        from pycocotools import mask as coco_mask

        m = np.asfortranarray((rng.random((17, 23)) < 0.3).astype(np.uint8))
        rle = coco_mask.encode(m)
        flat = m.T.reshape(-1)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], flat, [1 - flat[-1]]])))
        counts = np.diff(np.concatenate([[0], edges])).tolist()
        segmentation = ({"size": [17, 23], "counts": rle["counts"].decode()} if i % 2 else
                        {"size": [17, 23], "counts": counts})
        annotations.append({"id": i, "image_id": 1, "bbox": [0, 0, 1, 1], "category_id": i,
                            "iscrowd": 1, "segmentation": segmentation})
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.png"}],
                               "annotations": annotations}))
    e_target = e_wrap(eds.CocoDetection(tmp_path, str(ann)), target_keys={"masks"})[0][1]
    t_target = t_wrap(tds.CocoDetection(tmp_path, str(ann)), target_keys={"masks"})[0][1]
    assert_same(e_target, t_target)
    assert 0 < t_target["masks"].sum() < t_target["masks"].numel()


def test_coco_v2_detection_pipeline(tmp_path):
    pytest.importorskip("pycocotools")
    unit.coco_files(tmp_path)
    ann = str(tmp_path / "ann.json")
    from ember.vision import tv_tensors as ETV
    from ember.vision.transforms import v2 as E2

    def pipeline(v2, image_cls, float32):
        return v2.Compose([v2.ToImage(), v2.RandomHorizontalFlip(p=1),
                           v2.SanitizeBoundingBoxes(),
                           v2.ToDtype({image_cls: float32, "others": None}, scale=True)])

    keys = {"boxes", "labels", "masks", "image_id"}
    e_w = e_wrap(eds.CocoDetection(tmp_path, ann,
                                   transforms=pipeline(E2, ETV.Image, ember.float32)),
                 target_keys=keys)
    t_w = t_wrap(tds.CocoDetection(tmp_path, ann,
                                   transforms=pipeline(T2, TTV.Image, torch.float32)),
                 target_keys=keys)
    for i in (0, 1):
        e_img, e_target = e_w[i]
        t_img, t_target = t_w[i]
        assert_same(e_target, t_target, f"target {i}")
        np.testing.assert_allclose(e_img.as_subclass(ember.Tensor).numpy(),
                                   t_img.as_subclass(torch.Tensor).numpy(), atol=1e-6)
    assert_same_error(lambda: e_w[2], lambda: t_w[2])  # no labels to sanitize


# ------------------------------------------------------------------------- the other datasets
@pytest.mark.parametrize("target_keys", [None, "all", ["annotation"]])
def test_voc(tmp_path, target_keys):
    fake.write_files(tmp_path, fake.voc_files())
    assert_same_wrapped(eds.VOCDetection(tmp_path, image_set="val"),
                        tds.VOCDetection(tmp_path, image_set="val"), target_keys=target_keys)
    if target_keys is None:
        assert_same_wrapped(eds.VOCSegmentation(tmp_path), tds.VOCSegmentation(tmp_path))


def test_celeba(tmp_path):
    files = fake.celeba_files()
    fake.write_files(tmp_path / "celeba", files)
    e_cls = fake.celeba_class(files)
    t_cls = type("LocalCelebA", (tds.CelebA,), {"file_list": e_cls.file_list})
    for target_type in (["identity", "bbox"], "bbox", "identity", []):
        assert_same_wrapped(e_cls(tmp_path, target_type=target_type),
                            t_cls(tmp_path, target_type=target_type))
    assert_same_error(lambda: e_wrap(e_cls(tmp_path, target_type=["bbox", "attr"])),
                      lambda: t_wrap(t_cls(tmp_path, target_type=["bbox", "attr"])))


@pytest.mark.parametrize("kitti_keys, wider_keys", [
    (None, None), ("all", "all"), (["type", "boxes", "location"], ["bbox", "pose"])])
def test_kitti_widerface(tmp_path, kitti_keys, wider_keys):
    fake.write_files(tmp_path, fake.kitti_widerface_files())
    for train in (True, False):
        assert_same_wrapped(eds.Kitti(tmp_path, train=train), tds.Kitti(tmp_path, train=train),
                            target_keys=kitti_keys)
    for split in ("val", "test"):
        assert_same_wrapped(eds.WIDERFace(tmp_path, split=split),
                            tds.WIDERFace(tmp_path, split=split), target_keys=wider_keys)


@pytest.mark.parametrize("target_types", [["category", "segmentation"], "segmentation",
                                          "binary-category", []])
def test_oxford_iiit_pet(tmp_path, target_types):
    fake.write_files(tmp_path, fake.pet_files())
    assert_same_wrapped(eds.OxfordIIITPet(tmp_path, target_types=target_types),
                        tds.OxfordIIITPet(tmp_path, target_types=target_types))


def test_cityscapes(tmp_path):
    instance_ids = np.array([[7, 7, 26001], [26001, 26002, 7]], np.int32)
    for side in ("e", "t"):
        fake.write_files(tmp_path / side, fake.cityscapes_zips())
    e_ds = eds.Cityscapes(tmp_path / "e", split="val", target_type=["instance", "semantic"])
    t_ds = tds.Cityscapes(tmp_path / "t", split="val", target_type=["instance", "semantic"])
    for ds in (e_ds, t_ds):
        buf = io.BytesIO()
        Image.fromarray(instance_ids).save(buf, "TIFF")
        for targets in ds.targets:
            Path(targets[0]).write_bytes(buf.getvalue())
        for image in ds.images:
            Path(image).write_bytes(fake.image_bytes(0, size=(3, 2)))
    assert_same_wrapped(e_ds, t_ds)
    assert_same_wrapped(eds.Cityscapes(tmp_path / "e", split="val", target_type="semantic"),
                        tds.Cityscapes(tmp_path / "t", split="val", target_type="semantic"))
    assert_same_error(
        lambda: e_wrap(eds.Cityscapes(tmp_path / "e", split="val", target_type="color")),
        lambda: t_wrap(tds.Cityscapes(tmp_path / "t", split="val", target_type="color")))


def test_classification(tmp_path):
    fake.write_files(tmp_path, {"cat/a.png": fake.image_bytes(0), "dog/b.png": fake.image_bytes(1)})
    assert_same_wrapped(eds.ImageFolder(tmp_path), tds.ImageFolder(tmp_path))


# ------------------------------------------------------------------------- errors
def test_errors(tmp_path):
    fake.write_files(tmp_path, fake.voc_files())
    e_det = eds.VOCDetection(tmp_path, image_set="val")
    t_det = tds.VOCDetection(tmp_path, image_set="val")
    for keys in (3, ["boxes", 1], {"boxes", "foo", "bar"}):
        assert_same_error(lambda k=keys: e_wrap(e_det, target_keys=k),
                          lambda k=keys: t_wrap(t_det, target_keys=k))
    assert_same_error(lambda: e_wrap(eds.VOCSegmentation(tmp_path), target_keys="all"),
                      lambda: t_wrap(tds.VOCSegmentation(tmp_path), target_keys="all"))
    assert_same_error(lambda: e_wrap([1]), lambda: t_wrap([1]))

    class EMine(eds.VisionDataset):
        pass

    class TMine(tds.VisionDataset):
        pass

    EMine.__name__ = TMine.__name__ = "Mine"
    assert_same_error(lambda: e_wrap(EMine()), lambda: t_wrap(TMine()))
    files, _, _ = fake.flow_files()
    fake.write_files(tmp_path, files)
    assert_same_error(lambda: e_wrap(eds.Sintel(tmp_path)), lambda: t_wrap(tds.Sintel(tmp_path)))
