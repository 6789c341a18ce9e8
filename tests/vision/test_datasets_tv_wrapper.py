"""ember.vision.datasets.wrap_dataset_for_transforms_v2: small fake copies of the datasets on
disk, wrapped, give tv_tensors (boxes, masks) a v2 pipeline can transform; COCO polygons and
RLEs decode to hand-checked masks."""

import importlib.util
import io
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import datasets
from ember.vision.datasets import _tv_tensors_dataset_wrapper as wrapper_module
from ember.vision.datasets import wrap_dataset_for_transforms_v2

_spec = importlib.util.spec_from_file_location(
    "_fake_datasets_for_wrapper", Path(__file__).with_name("test_datasets_more.py")
)
fake = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake)


@pytest.fixture(autouse=True)
def _dispatch_on():
    """tests/conftest.py turns ``__torch_function__`` dispatch off around each test; a program
    that wrapped a dataset imported tv_tensors and keeps it on, which their semantics need."""
    ember.overrides.activate()
    yield


def tv():
    from ember.vision import tv_tensors

    return tv_tensors


def plain(t):
    return t.as_subclass(ember.Tensor).numpy()


def test_importing_datasets_does_not_import_tv_tensors():
    code = (
        "import sys, ember.vision.datasets as d\n"
        "assert callable(d.wrap_dataset_for_transforms_v2)\n"
        "assert 'ember.vision.tv_tensors' not in sys.modules\n"
        "assert 'ember.vision.transforms.v2' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------- COCO masks
RECT = [1, 1, 4, 1, 4, 3, 1, 3]  # covers the pixels [1, 4) x [1, 3)
RECT_MASK = np.zeros((5, 6), np.uint8)
RECT_MASK[1:3, 1:4] = 1
# column-major runs, from 0s: rows 1-2 of columns 2-4, and row 4 of column 0
RLE_COUNTS = [4, 1, 6, 2, 3, 2, 3, 2, 7]
RLE_MASK = np.zeros((5, 6), np.uint8)
RLE_MASK[1:3, 2:5] = 1
RLE_MASK[4, 0] = 1


def test_polygons_to_mask():
    mask = wrapper_module.segmentation_to_mask([RECT], canvas_size=(5, 6))
    assert mask.dtype == np.uint8 and mask.shape == (5, 6)
    np.testing.assert_array_equal(mask, RECT_MASK)
    # pixel centres on the same rectangle
    half = [0.5, 0.5, 3.5, 0.5, 3.5, 2.5, 0.5, 2.5]
    np.testing.assert_array_equal(
        wrapper_module.segmentation_to_mask([half], canvas_size=(5, 6)), RECT_MASK)
    # a triangle: pixels whose centre lies strictly below x + y = 4
    tri = wrapper_module.segmentation_to_mask([[0, 0, 4, 0, 0, 4]], canvas_size=(5, 6))
    expected = np.zeros((5, 6), np.uint8)
    for r in range(5):
        for c in range(6):
            expected[r, c] = (r + 0.5) + (c + 0.5) < 4
    np.testing.assert_array_equal(tri, expected)
    # several polygons are merged (union); the first point repeated at the end changes nothing
    two = wrapper_module.segmentation_to_mask([RECT + RECT[:2], [4, 3, 5.5, 3, 5.5, 4.5]],
                                              canvas_size=(5, 6))
    expected = RECT_MASK.copy()
    expected[3, 5] = 1
    np.testing.assert_array_equal(two, expected)
    # clipped to the canvas
    big = wrapper_module.segmentation_to_mask([[-3, -3, 30, -3, 30, 30, -3, 30]],
                                              canvas_size=(4, 3))
    np.testing.assert_array_equal(big, np.ones((4, 3), np.uint8))
    with pytest.raises(ValueError, match="COCO segmentation expected to be a dict or a list"):
        wrapper_module.segmentation_to_mask("x", canvas_size=(5, 6))
    # pycocotools reads a first item of four numbers as a box, and refuses it in a polygon list
    with pytest.raises(ValueError, match="need at least 3 points each, got 2 in the first"):
        wrapper_module.segmentation_to_mask([[0, 0, 3, 3], RECT], canvas_size=(5, 6))


def test_rle_to_mask():
    # uncompressed: runs on the RLE's own size, not the canvas
    uncompressed = {"size": [5, 6], "counts": RLE_COUNTS}
    np.testing.assert_array_equal(
        wrapper_module.segmentation_to_mask(uncompressed, canvas_size=(1, 1)), RLE_MASK)
    # compressed (the same runs as pycocotools writes them), as str or bytes
    for counts in ("4161M0004", b"4161M0004"):
        np.testing.assert_array_equal(
            wrapper_module.segmentation_to_mask({"size": [5, 6], "counts": counts},
                                                canvas_size=(5, 6)), RLE_MASK)
    assert wrapper_module._rle_counts_from_string("4161M0004") == RLE_COUNTS
    # a run shorter than the image: the rest is background; longer: an error
    short = wrapper_module.segmentation_to_mask({"size": [2, 2], "counts": [1, 1]},
                                                canvas_size=(2, 2))
    np.testing.assert_array_equal(short, [[0, 0], [1, 0]])
    with pytest.raises(ValueError, match="Invalid RLE mask representation"):
        wrapper_module.segmentation_to_mask({"size": [2, 2], "counts": [3, 4]},
                                            canvas_size=(2, 2))


def coco_files(tmp_path):
    fake.write_files(tmp_path, {"a.png": fake.image_bytes(1), "b.png": fake.image_bytes(2),
                                "c.png": fake.image_bytes(3)})
    ann = {
        "images": [{"id": 9, "file_name": "b.png"}, {"id": 3, "file_name": "a.png"},
                   {"id": 12, "file_name": "c.png"}],
        "annotations": [
            {"id": 1, "image_id": 9, "bbox": [1, 1, 3, 2], "category_id": 18, "area": 6.0,
             "iscrowd": 0, "segmentation": [RECT]},
            {"id": 2, "image_id": 3, "bbox": [0, 0, 2, 2], "category_id": 1, "area": 4.0,
             "iscrowd": 0, "segmentation": [[0, 0, 2, 0, 2, 2, 0, 2]]},
            {"id": 5, "image_id": 9, "bbox": [2, 1, 3, 4], "category_id": 44, "area": 7.0,
             "iscrowd": 1, "segmentation": {"size": [5, 6], "counts": "4161M0004"}},
            {"id": 6, "image_id": 9, "bbox": [0, 3.5, 0, 1], "category_id": 3, "area": 0.0,
             "iscrowd": 1, "segmentation": {"size": [5, 6], "counts": RLE_COUNTS}},
        ],
    }
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    return datasets.CocoDetection(tmp_path, str(tmp_path / "ann.json"))


def test_coco_detection(tmp_path):
    ds = coco_files(tmp_path)
    wrapped = wrap_dataset_for_transforms_v2(ds)
    assert type(wrapped).__name__ == "WrappedCocoDetection"
    assert isinstance(wrapped, datasets.CocoDetection) and len(wrapped) == 3
    assert wrapped.ids == [3, 9, 12]  # attributes come from the dataset
    img, target = wrapped[1]
    assert isinstance(img, Image.Image) and img.size == (6, 5)
    assert set(target) == {"image_id", "boxes", "labels"} and target["image_id"] == 9
    boxes = target["boxes"]
    assert isinstance(boxes, tv().BoundingBoxes)
    assert boxes.format == tv().BoundingBoxFormat.XYXY and tuple(boxes.canvas_size) == (5, 6)
    np.testing.assert_array_equal(plain(boxes), [[1, 1, 4, 3], [2, 1, 5, 5], [0, 3.5, 0, 4.5]])
    assert target["labels"].dtype == ember.int64 and target["labels"].tolist() == [18, 44, 3]
    # an image without annotations: only its id
    assert wrapped[2][1] == {"image_id": 12}

    _, full = wrap_dataset_for_transforms_v2(ds, target_keys="all")[1]
    assert set(full) == {"segmentation", "area", "iscrowd", "image_id", "bbox", "category_id",
                         "boxes", "masks", "labels"}
    masks = full["masks"]
    assert isinstance(masks, tv().Mask) and masks.dtype == ember.uint8
    np.testing.assert_array_equal(plain(masks), np.stack([RECT_MASK, RLE_MASK, RLE_MASK]))
    assert full["iscrowd"] == [0, 1, 1] and full["area"] == [6.0, 7.0, 0.0]
    assert full["bbox"][0] == [1, 1, 3, 2] and full["category_id"] == [18, 44, 3]

    _, some = wrap_dataset_for_transforms_v2(ds, target_keys={"masks", "area"})[0]
    assert set(some) == {"masks", "area"} and plain(some["masks"]).sum() == 4


def test_coco_captions_are_returned_as_they_are(tmp_path):
    coco_files(tmp_path)
    ann = json.loads((tmp_path / "ann.json").read_text())
    for a in ann["annotations"]:
        a["caption"] = f"caption {a['id']}"
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    caps = datasets.CocoCaptions(tmp_path, str(tmp_path / "ann.json"))
    assert wrap_dataset_for_transforms_v2(caps)[1][1] == ["caption 1", "caption 5", "caption 6"]


# ------------------------------------------------------------------------- transforms, pickling
def test_transforms_run_after_the_wrapping(tmp_path):
    ds = coco_files(tmp_path)
    ds_sep = datasets.CocoDetection(tmp_path, str(tmp_path / "ann.json"),
                                    transform=lambda img: img.size,
                                    target_transform=lambda t: sorted(t))
    wrapped = wrap_dataset_for_transforms_v2(ds_sep)
    # the dataset's transforms are switched off and moved onto the wrapper
    assert ds_sep.transform is None and ds_sep.target_transform is None
    assert ds_sep.transforms is None and wrapped.transform is not None
    assert wrapped[1] == ((6, 5), ["boxes", "image_id", "labels"])

    def joint(img, target):
        return img.size, type(target["boxes"]).__name__

    ds_joint = datasets.CocoDetection(tmp_path, str(tmp_path / "ann.json"), transforms=joint)
    assert wrap_dataset_for_transforms_v2(ds_joint)[0] == ((6, 5), "BoundingBoxes")
    assert len(wrap_dataset_for_transforms_v2(ds)) == 3


def _size_and_keys(img, target):
    return img.size, sorted(target)


def test_pickle_round_trip(tmp_path):
    ds = datasets.CocoDetection(tmp_path, str(_ann_path(tmp_path)), transforms=_size_and_keys)
    wrapped = wrap_dataset_for_transforms_v2(ds, target_keys=["image_id", "masks"])
    restored = pickle.loads(pickle.dumps(wrapped))
    assert type(restored).__name__ == "WrappedCocoDetection"
    assert restored._target_keys == ["image_id", "masks"]
    assert restored[1] == ((6, 5), ["image_id", "masks"]) == wrapped[1]
    # the wrapped dataset keeps its transforms switched off
    assert restored._dataset.transforms is None and restored.transforms is _size_and_keys
    assert wrapped._dataset.transforms is None


def _ann_path(tmp_path):
    coco_files(tmp_path)
    return tmp_path / "ann.json"


def test_v2_detection_pipeline_and_dataloader(tmp_path):
    from ember.vision.transforms import v2

    ds = datasets.CocoDetection(
        tmp_path, str(_ann_path(tmp_path)),
        transforms=v2.Compose([v2.ToImage(), v2.RandomHorizontalFlip(p=1),
                               v2.SanitizeBoundingBoxes()]))
    wrapped = wrap_dataset_for_transforms_v2(ds, target_keys={"boxes", "labels", "masks"})
    img, target = wrapped[1]
    assert isinstance(img, tv().Image) and tuple(img.shape) == (3, 5, 6)
    raw = np.asarray(Image.open(tmp_path / "b.png").convert("RGB")).transpose(2, 0, 1)
    np.testing.assert_array_equal(plain(img), raw[:, :, ::-1])
    # flipped on the 6-pixel-wide canvas; the zero-width box is sanitized away with its
    # label and mask
    boxes = target["boxes"]
    assert isinstance(boxes, tv().BoundingBoxes) and boxes.format.name == "XYXY"
    np.testing.assert_array_equal(plain(boxes), [[2, 1, 5, 3], [1, 1, 4, 5]])
    assert target["labels"].tolist() == [18, 44]
    assert isinstance(target["masks"], tv().Mask)
    np.testing.assert_array_equal(plain(target["masks"]),
                                  np.stack([RECT_MASK, RLE_MASK])[:, :, ::-1])

    # (SanitizeBoundingBoxes finds no labels in the target of the image without annotations)
    with pytest.raises(ValueError, match="Could not infer where the labels are"):
        wrapped[2]
    loader = ember.data.DataLoader(ember.data.Subset(wrapped, [0, 1]), batch_size=2,
                                   collate_fn=lambda b: tuple(zip(*b)))
    batches = list(loader)
    assert len(batches) == 1
    images, targets = batches[0]
    assert len(images) == 2 and all(isinstance(i, tv().Image) for i in images)
    assert [t["labels"].tolist() for t in targets] == [[1], [18, 44]]
    assert isinstance(targets[0]["boxes"], tv().BoundingBoxes)


# ------------------------------------------------------------------------- the other datasets
def test_voc_detection_and_segmentation(tmp_path):
    fake.write_files(tmp_path, fake.voc_files())
    det = wrap_dataset_for_transforms_v2(datasets.VOCDetection(tmp_path, image_set="val"))
    img, target = det[0]
    assert set(target) == {"boxes", "labels"}
    assert isinstance(target["boxes"], tv().BoundingBoxes)
    assert tuple(target["boxes"].canvas_size) == (5, 6)
    assert target["boxes"].format == tv().BoundingBoxFormat.XYXY
    assert plain(target["boxes"]).tolist() == [[1, 2, 4, 5], [1, 2, 4, 5]]
    assert target["labels"].tolist() == [8, 15]  # cat, person
    full = wrap_dataset_for_transforms_v2(datasets.VOCDetection(tmp_path, image_set="val"),
                                          target_keys="all")[0][1]
    assert set(full) == {"annotation", "boxes", "labels"}
    assert full["annotation"]["filename"] == "2008_000002.jpg"
    seg = wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(tmp_path))
    img, mask = seg[1]
    assert isinstance(img, Image.Image) and isinstance(mask, tv().Mask)
    assert tuple(mask.shape) == (1, 5, 6) and plain(mask).max() == 2


def test_sbd(tmp_path):
    files, seg = fake.sbd_files()
    fake.write_files(tmp_path, files)
    wrapped = wrap_dataset_for_transforms_v2(
        datasets.SBDataset(tmp_path / "sbd", mode="segmentation"))
    _, mask = wrapped[0]
    assert isinstance(mask, tv().Mask)
    np.testing.assert_array_equal(plain(mask)[0], seg)
    with pytest.raises(RuntimeError, match=r"SBDataset with mode='boundaries' is currently not "
                       r"supported by this wrapper. If this would be helpful for you, please "
                       r"open an issue at https://github.com/pytorch/vision/issues."):
        wrap_dataset_for_transforms_v2(datasets.SBDataset(tmp_path / "sbd"))


def test_celeba(tmp_path):
    files = fake.celeba_files()
    fake.write_files(tmp_path / "celeba", files)
    cls = fake.celeba_class(files)
    wrapped = wrap_dataset_for_transforms_v2(cls(tmp_path, target_type=["identity", "bbox"]))
    img, (identity, bbox) = wrapped[1]
    assert int(identity) == 9
    assert isinstance(bbox, tv().BoundingBoxes) and bbox.format.name == "XYXY"
    assert tuple(bbox.canvas_size) == (img.height, img.width)
    assert plain(bbox).tolist() == [[2, 3, 6, 8]]  # x, y, w, h = 2, 3, 4, 5
    _, only = wrap_dataset_for_transforms_v2(cls(tmp_path, target_type="bbox"))[0]
    assert plain(only).tolist() == [[0, 1, 2, 4]]
    with pytest.raises(RuntimeError, match=r"`CelebA` dataset with `target_type=\['attr', "
                       r"'landmarks', ...\]` is currently not supported"):
        wrap_dataset_for_transforms_v2(cls(tmp_path, target_type=["bbox", "landmarks"]))


def test_kitti_and_widerface(tmp_path):
    fake.write_files(tmp_path, fake.kitti_widerface_files())
    kitti = datasets.Kitti(tmp_path)
    index = kitti.images.index(str(tmp_path / "Kitti/raw/training/image_2/000001.png"))
    _, target = wrap_dataset_for_transforms_v2(kitti)[index]
    assert set(target) == {"boxes", "labels"}
    assert plain(target["boxes"]).tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert tuple(target["boxes"].canvas_size) == (5, 6)
    assert target["labels"].tolist() == [3, 8]  # Pedestrian, DontCare
    _, some = wrap_dataset_for_transforms_v2(kitti, target_keys=["type", "occluded"])[index]
    assert some == {"type": ["Pedestrian", "DontCare"], "occluded": [2, -1]}
    assert wrap_dataset_for_transforms_v2(datasets.Kitti(tmp_path, train=False))[0][1] is None

    wider = wrap_dataset_for_transforms_v2(datasets.WIDERFace(tmp_path, split="val"))
    img, target = wider[0]
    assert set(target) == {"bbox", "blur", "expression", "illumination", "occlusion", "pose",
                           "invalid"}
    assert isinstance(target["bbox"], tv().BoundingBoxes) and target["bbox"].format.name == "XYXY"
    assert plain(target["bbox"]).tolist() == [[1, 2, 4, 6], [5, 6, 12, 14]]
    assert target["blur"].tolist() == [0, 2]
    _, bbox_only = wrap_dataset_for_transforms_v2(
        datasets.WIDERFace(tmp_path, split="val"), target_keys=["bbox"])[0]
    assert list(bbox_only) == ["bbox"]
    # the dataset's own annotations are left as they were
    assert datasets.WIDERFace(tmp_path, split="val")[0][1]["bbox"].tolist()[1] == [5, 6, 7, 8]
    test = wrap_dataset_for_transforms_v2(datasets.WIDERFace(tmp_path, split="test"))
    assert test[0][1] is None


def test_oxford_iiit_pet(tmp_path):
    fake.write_files(tmp_path, fake.pet_files())
    pets = datasets.OxfordIIITPet(tmp_path, split="test",
                                  target_types=["category", "segmentation"])
    _, (category, trimap) = wrap_dataset_for_transforms_v2(pets)[0]
    assert category == 1 and isinstance(trimap, tv().Mask) and tuple(trimap.shape) == (1, 5, 6)
    raw = np.asarray(Image.open(tmp_path / "oxford-iiit-pet/annotations/trimaps/"
                                          "great_pyrenees_2.png"))
    np.testing.assert_array_equal(plain(trimap)[0], raw)
    only = datasets.OxfordIIITPet(tmp_path, target_types="segmentation")
    assert isinstance(wrap_dataset_for_transforms_v2(only)[0][1], tv().Mask)
    none = datasets.OxfordIIITPet(tmp_path, target_types=[])
    assert wrap_dataset_for_transforms_v2(none)[0][1] is None


def _int32_image(array):
    # a 32-bit "I" image, as older Pillows open Cityscapes' 16-bit PNGs (this one cannot write
    # "I" as PNG: TIFF, which Image.open finds by its content whatever the name)
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, "TIFF")
    return buf.getvalue()


def test_cityscapes(tmp_path):
    fake.write_files(tmp_path, fake.cityscapes_zips())
    ds = datasets.Cityscapes(tmp_path, split="val", target_type=["instance", "semantic"])
    instance_ids = np.array([[7, 7, 26001], [26001, 26002, 7]], np.int32)
    instance_path = ds.targets[0][0]
    Path(instance_path).write_bytes(_int32_image(instance_ids))
    Path(ds.images[0]).write_bytes(fake.image_bytes(0, size=(3, 2)))
    wrapped = wrap_dataset_for_transforms_v2(ds)
    img, (instance, semantic) = wrapped[0]
    assert set(instance) == {"masks", "labels"}
    masks = instance["masks"]
    assert isinstance(masks, tv().Mask) and masks.dtype == ember.bool
    np.testing.assert_array_equal(
        plain(masks), np.stack([instance_ids[None] == i for i in (7, 26001, 26002)]))
    assert instance["labels"].tolist() == [7, 26, 26]
    assert isinstance(semantic, tv().Mask)
    with pytest.raises(RuntimeError, match=r"`Cityscapes` dataset with `target_type=\['polygon'"):
        wrap_dataset_for_transforms_v2(
            datasets.Cityscapes(tmp_path, split="val", target_type="polygon"))


def test_classification_datasets_are_returned_as_they_are(tmp_path):
    fake.write_files(tmp_path, {"cat/a.png": fake.image_bytes(0), "dog/b.png": fake.image_bytes(1)})
    folder = datasets.ImageFolder(tmp_path, target_transform=lambda t: t + 10)
    wrapped = wrap_dataset_for_transforms_v2(folder)
    img, label = wrapped[1]
    assert isinstance(img, Image.Image) and label == 11
    assert isinstance(wrapped, datasets.ImageFolder) and wrapped.classes == ["cat", "dog"]


def test_video_classification_factory():
    class Clips:
        output_format = "TCHW"

    class FakeKinetics:
        video_clips = Clips()

    wrapper = wrapper_module.video_classification_wrapper_factory(FakeKinetics(), None)
    video, audio, label = wrapper(0, (ember.zeros(2, 3, 4, 5), "audio", 1))
    assert isinstance(video, tv().Video) and (audio, label) == ("audio", 1)
    Clips.output_format = "THWC"
    with pytest.raises(RuntimeError, match="FakeKinetics with `output_format='THWC'` is not "
                       "supported by this wrapper"):
        wrapper_module.video_classification_wrapper_factory(FakeKinetics(), None)


# ------------------------------------------------------------------------- errors
def test_target_keys_errors(tmp_path):
    ds = coco_files(tmp_path)
    with pytest.raises(ValueError, match=r"`target_keys` can be None, 'all', or a collection of "
                       r"strings denoting the keys to be returned, but got 3"):
        wrap_dataset_for_transforms_v2(ds, target_keys=3)
    with pytest.raises(ValueError, match=r"but got \['boxes', 1\]"):
        wrap_dataset_for_transforms_v2(ds, target_keys=["boxes", 1])
    with pytest.raises(ValueError, match=r"Target keys \['foo', 'zed'\] are not available"):
        wrap_dataset_for_transforms_v2(ds, target_keys={"zed", "boxes", "foo"})
    fake.write_files(tmp_path, fake.voc_files())
    with pytest.raises(ValueError, match=r"`target_keys` is currently only supported for "
                       r"`CocoDetection`, `VOCDetection`, `Kitti`, and `WIDERFace`, but got "
                       r"VOCSegmentation."):
        wrap_dataset_for_transforms_v2(datasets.VOCSegmentation(tmp_path), target_keys="all")


def test_unsupported_datasets(tmp_path):
    with pytest.raises(TypeError, match=r"This wrapper is meant for subclasses of "
                       r"`torchvision.datasets.VisionDataset`, but got a 'list' instead."):
        wrap_dataset_for_transforms_v2([1, 2])

    class Mine(datasets.VisionDataset):
        def __getitem__(self, i):
            return i

    with pytest.raises(TypeError, match=r"No wrapper exists for dataset class Mine. Please wrap "
                       r"the output yourself.$"):
        wrap_dataset_for_transforms_v2(Mine())
    # a dataset of the library: the message asks for an issue
    fake.write_files(tmp_path, fake.flow_files()[0])
    sintel = datasets.Sintel(tmp_path)
    with pytest.raises(TypeError, match=r"No wrapper exists for dataset class Sintel. Please "
                       r"wrap the output yourself. If an automated wrapper for this dataset would "
                       r"be useful for you, please open an issue"):
        wrap_dataset_for_transforms_v2(sintel)
    # Caltech101 only without annotations
    fake.write_files(tmp_path, {
        f"caltech101/101_ObjectCategories/{c}/image_0001.jpg": fake.image_bytes(0, fmt="JPEG")
        for c in ("BACKGROUND_Google", "accordion")})
    c101 = datasets.Caltech101(tmp_path, target_type="category")
    assert wrap_dataset_for_transforms_v2(c101)[0][1] == 0
    with pytest.raises(RuntimeError, match=r"Caltech101 dataset with "
                       r"`target_type=\['annotation', ...\]` is currently not supported"):
        wrap_dataset_for_transforms_v2(datasets.Caltech101(tmp_path, target_type="annotation"))
