"""ember.vision.datasets (VOC, COCO, pets, Flowers102, ..., ImageNet) against torchvision 0.29:
the same fake on-disk copy of each dataset, loaded by both, gives equal samples and targets.

The fake copies are built by the helpers of tests/vision/test_datasets_more.py. Datasets whose
torchvision version needs pycocotools or SciPy are compared only where those are installed.
"""

import importlib.util
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

_spec = importlib.util.spec_from_file_location(
    "_fake_datasets", Path(__file__).parents[2] / "vision" / "test_datasets_more.py"
)
fake = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake)


def assert_same(e, t, where="item"):
    """Ember's and torchvision's values are equal: images by mode, size and pixels, tensors by
    dtype and values, containers element by element."""
    if isinstance(t, Image.Image):
        assert isinstance(e, Image.Image), where
        assert (e.mode, e.size) == (t.mode, t.size), where
        np.testing.assert_array_equal(np.asarray(e), np.asarray(t), err_msg=where)
    elif isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), where
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], where
        assert tuple(e.shape) == tuple(t.shape), where
        assert e.tolist() == t.tolist(), where
    elif isinstance(t, np.ndarray):
        assert isinstance(e, np.ndarray) and e.dtype == t.dtype, where
        np.testing.assert_array_equal(e, t, err_msg=where)
    elif isinstance(t, dict):
        assert isinstance(e, dict) and list(e) == list(t), where
        for k in t:
            assert_same(e[k], t[k], f"{where}[{k!r}]")
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), where
        for i, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(e) is type(t) and e == t, f"{where}: {e!r} != {t!r}"


def assert_same_dataset(e_ds, t_ds, attrs=()):
    assert len(e_ds) == len(t_ds)
    for i in range(len(t_ds)):
        assert_same(e_ds[i], t_ds[i], f"item {i}")
    for name in attrs:
        assert_same(getattr(e_ds, name), getattr(t_ds, name), name)
    assert repr(e_ds).replace("Ember", "") == repr(t_ds)


@pytest.mark.parametrize("image_set", ["train", "val"])
def test_voc(tmp_path, image_set):
    fake.write_files(tmp_path, fake.voc_files())
    for kind in ("VOCSegmentation", "VOCDetection"):
        try:
            t_ds = getattr(tds, kind)(tmp_path, image_set=image_set)
        except FileNotFoundError:  # the fake copy has no ImageSets/<kind>/<image_set>.txt
            with pytest.raises(FileNotFoundError):
                getattr(eds, kind)(tmp_path, image_set=image_set)
            continue
        assert_same_dataset(getattr(eds, kind)(tmp_path, image_set=image_set), t_ds,
                            ["images", "targets"])


def test_coco(tmp_path):
    pytest.importorskip("pycocotools")
    fake.coco_setup(tmp_path)
    ann = tmp_path / "ann.json"
    for kind in ("CocoDetection", "CocoCaptions"):
        assert_same_dataset(getattr(eds, kind)(tmp_path, str(ann)),
                            getattr(tds, kind)(tmp_path, str(ann)), ["ids"])
    ann.write_text(json.dumps({"images": [{"id": 4, "file_name": "a.png"}],
                               "annotations": [{"id": 7, "image_id": 4, "v": 1},
                                               {"id": 7, "image_id": 4, "v": 2}]}))
    assert_same_dataset(eds.CocoDetection(tmp_path, str(ann)),
                        tds.CocoDetection(tmp_path, str(ann)))


@pytest.mark.parametrize("target_types", ["category", ["segmentation", "binary-category"], []])
def test_oxford_iiit_pet(tmp_path, target_types):
    fake.write_files(tmp_path, fake.pet_files())
    for split in ("trainval", "test"):
        assert_same_dataset(
            eds.OxfordIIITPet(tmp_path, split=split, target_types=target_types),
            tds.OxfordIIITPet(tmp_path, split=split, target_types=target_types),
            ["classes", "class_to_idx", "bin_classes"],
        )


def test_food101_dtd_imagenette(tmp_path):
    meta = {"ramen": ["ramen/1", "ramen/2"], "apple_pie": ["apple_pie/7"]}
    files = {"food-101/meta/train.json": json.dumps(meta)}
    for paths in meta.values():
        for i, p in enumerate(paths):
            files[f"food-101/images/{p}.jpg"] = fake.image_bytes(i, fmt="JPEG")
    files.update({"dtd/dtd/labels/train1.txt": "striped/s_1.jpg\nbanded/b_1.jpg\n",
                  "dtd/dtd/images/striped/s_1.jpg": fake.image_bytes(1, fmt="JPEG"),
                  "dtd/dtd/images/banded/b_1.jpg": fake.image_bytes(2, fmt="JPEG")})
    files.update({f"imagenette2-320/val/{w}/{w}_{i}.JPEG": fake.image_bytes(i, fmt="JPEG")
                  for w in ("n01440764", "n03888257") for i in range(2)})
    fake.write_files(tmp_path, files)
    assert_same_dataset(eds.Food101(tmp_path), tds.Food101(tmp_path), ["classes"])
    assert_same_dataset(eds.DTD(tmp_path), tds.DTD(tmp_path), ["classes"])
    assert_same_dataset(eds.Imagenette(tmp_path, split="val", size="320px"),
                        tds.Imagenette(tmp_path, split="val", size="320px"),
                        ["classes", "class_to_idx", "wnids"])


def test_stl10(tmp_path):
    rng = np.random.default_rng(0)
    files = {"train_X.bin": rng.integers(0, 256, (3, 3, 96, 96), dtype=np.uint8).tobytes(),
             "train_y.bin": bytes([1, 10, 4]),
             "unlabeled_X.bin": rng.integers(0, 256, (2, 3, 96, 96), dtype=np.uint8).tobytes(),
             "test_X.bin": rng.integers(0, 256, (1, 3, 96, 96), dtype=np.uint8).tobytes(),
             "test_y.bin": bytes([2]), "fold_indices.txt": b"2 0\n1\n"}
    fake.write_files(tmp_path / "stl10_binary", files)
    lists = dict(
        train_list=[[n, fake.md5(files[n])] for n in ("train_X.bin", "train_y.bin",
                                                      "unlabeled_X.bin")],
        test_list=[[n, fake.md5(files[n])] for n in ("test_X.bin", "test_y.bin")],
    )
    e_cls, t_cls = (type("STL10", (base,), lists) for base in (eds.STL10, tds.STL10))
    for kwargs in ({}, {"folds": 0}, {"split": "train+unlabeled"}, {"split": "unlabeled"},
                   {"split": "test"}):
        e_ds, t_ds = e_cls(tmp_path, **kwargs), t_cls(tmp_path, **kwargs)
        assert_same_dataset(e_ds, t_ds)
        np.testing.assert_array_equal(e_ds.labels, t_ds.labels)


def test_emnist_qmnist(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    fake.write_files(tmp_path / "EMNIST" / "raw", {
        "emnist-balanced-train-images-idx3-ubyte": fake.idx_bytes(x),
        "emnist-balanced-train-labels-idx1-ubyte": fake.idx_bytes(np.uint8([1, 46, 5]))})
    assert_same_dataset(eds.EMNIST(tmp_path, split="balanced"),
                        tds.EMNIST(tmp_path, split="balanced"), ["classes"])
    y = np.zeros((10002, 8), np.int32)
    y[:, 0], y[:, 7] = np.arange(10002) % 10, np.arange(10002)
    fake.write_files(tmp_path / "QMNIST" / "raw", {
        "qmnist-test-images-idx3-ubyte": fake.idx_bytes(
            rng.integers(0, 256, (10002, 4, 4), dtype=np.uint8)),
        "qmnist-test-labels-idx2-int": fake.idx_bytes(y, code=12)})
    for kwargs in ({"train": False}, {"what": "test50k", "compat": False}):
        e_ds, t_ds = eds.QMNIST(tmp_path, **kwargs), tds.QMNIST(tmp_path, **kwargs)
        assert len(e_ds) == len(t_ds)
        for i in (0, 1, len(t_ds) - 1):
            assert_same(e_ds[i], t_ds[i], f"item {i}")
        assert repr(e_ds) == repr(t_ds)


def test_usps_semeion_fer2013(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    lines = [f"{label} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(row))
             for label, row in zip((10, 3), rng.uniform(-1, 1, (2, 256)))]
    import bz2

    fake.write_files(tmp_path, {"usps.bz2": bz2.compress("\n".join(lines).encode())})
    assert_same_dataset(eds.USPS(tmp_path), tds.USPS(tmp_path))
    rows = [" ".join(f"{(i + lab) % 2}.0000" for i in range(256)) + " " +
            " ".join("1" if j == lab else "0" for j in range(10)) for lab in (4, 0)]
    body = ("\n".join(rows) + "\n").encode()
    fake.write_files(tmp_path, {"semeion.data": body})
    e_cls, t_cls = (type("SEMEION", (b,), {"md5_checksum": fake.md5(body)})
                    for b in (eds.SEMEION, tds.SEMEION))
    assert_same_dataset(e_cls(tmp_path, download=False), t_cls(tmp_path, download=False))
    pix = [" ".join(str((i * 7 + k) % 256) for k in range(48 * 48)) for i in range(3)]
    fer = fake.fer_csv(["emotion", "pixels", "Usage"], [["1", pix[0], "Training"],
                       ["2", pix[1], "PublicTest"], ["6", pix[2], "PrivateTest"]])
    fake.write_files(tmp_path / "fer2013", {"fer2013.csv": fer})
    res = dict(tds.FER2013._RESOURCES, fer=("fer2013.csv", fake.md5(fer)))
    for cls in (eds.FER2013, tds.FER2013):
        monkeypatch.setattr(cls, "_RESOURCES", res)
    for split in ("train", "test"):
        assert_same_dataset(eds.FER2013(tmp_path, split=split),
                            tds.FER2013(tmp_path, split=split))


def test_eurosat_gtsrb_caltech256(tmp_path):
    files = {f"eurosat/2750/{c}/{c}_{i}.jpg": fake.image_bytes(i, fmt="JPEG")
             for c in ("Forest", "River") for i in range(2)}
    files.update({f"gtsrb/GTSRB/Training/{c:05d}/x_{i}.ppm": fake.image_bytes(i, fmt="PPM")
                  for c in (0, 7) for i in range(2)})
    files["gtsrb/GTSRB/Final_Test/Images/00001.ppm"] = fake.image_bytes(5, fmt="PPM")
    files["gtsrb/GT-final_test.csv"] = "Filename;Width;ClassId\n00001.ppm; 6; 17\n"
    for i, c in enumerate(("001.ak47", "002.bat")):
        for j in (1, 2, 3)[: i + 1]:
            files[f"caltech256/256_ObjectCategories/{c}/{i + 1:03d}_{j:04d}.jpg"] = (
                fake.image_bytes(j, fmt="JPEG"))
    fake.write_files(tmp_path, files)
    root = str(tmp_path)
    assert_same_dataset(eds.EuroSAT(root), tds.EuroSAT(root), ["classes", "root"])
    for split in ("train", "test"):
        assert_same_dataset(eds.GTSRB(tmp_path, split=split), tds.GTSRB(tmp_path, split=split))
    assert_same_dataset(eds.Caltech256(root), tds.Caltech256(root), ["categories"])


def test_celeba(tmp_path):
    files = fake.celeba_files()
    fake.write_files(tmp_path / "celeba", files)
    e_cls = fake.celeba_class(files)
    t_cls = type("LocalCelebA", (tds.CelebA,), {"file_list": e_cls.file_list})
    for split, target_type in (("train", ["attr", "identity", "bbox", "landmarks"]),
                               ("all", "attr"), ("valid", [])):
        e_ds = e_cls(tmp_path, split=split, target_type=target_type)
        t_ds = t_cls(tmp_path, split=split, target_type=target_type)
        assert_same_dataset(e_ds, t_ds, ["filename", "attr_names"])
        for name in ("attr", "identity", "bbox", "landmarks_align"):
            assert_same(getattr(e_ds, name), getattr(t_ds, name), name)


def test_imagenet_meta_file_both_ways(tmp_path, monkeypatch):
    from ember.vision.datasets import imagenet

    archives = fake.imagenet_archives()
    fake.write_files(tmp_path, archives)
    meta = {k: (name, fake.md5(archives[name])) for k, name in
            (("train", "ILSVRC2012_img_train.tar"), ("val", "ILSVRC2012_img_val.tar"),
             ("devkit", "ILSVRC2012_devkit_t12.tar.gz"))}
    monkeypatch.setattr(imagenet, "ARCHIVE_META", meta)
    e_val = eds.ImageNet(tmp_path, split="val")  # Ember parses the devkit (no SciPy) ...
    t_val = tds.ImageNet(tmp_path, split="val")  # ... torchvision reads its meta.bin
    assert_same_dataset(e_val, t_val, ["classes", "class_to_idx", "wnids", "wnid_to_idx"])
    assert torch.load(tmp_path / "meta.bin", weights_only=True) == ember.load(
        tmp_path / "meta.bin")


def test_mat_datasets(tmp_path):
    pytest.importorskip("scipy")
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (32, 32, 3, 3), dtype=np.uint8)
    body = fake.mat_bytes({"X": x, "y": np.array([[10.0], [3.0], [1.0]])}, compress=True)
    fake.write_files(tmp_path, {"test_32x32.mat": body})
    lists = {"split_list": dict(tds.SVHN.split_list,
                                test=["", "test_32x32.mat", fake.md5(body)])}
    e_cls, t_cls = (type("SVHN", (b,), lists) for b in (eds.SVHN, tds.SVHN))
    assert_same_dataset(e_cls(tmp_path, split="test"), t_cls(tmp_path, split="test"))
    labels = fake.mat_bytes({"labels": np.array([[3.0, 1.0, 2.0, 1.0]])})
    setid = fake.mat_bytes({"trnid": np.array([[4, 2]], np.uint16),
                            "valid": np.array([[1, 3]], np.uint16),
                            "tstid": np.array([[3, 1]], np.uint16)})
    fake.write_files(tmp_path / "flowers-102", {"imagelabels.mat": labels, "setid.mat": setid})
    fake.write_files(tmp_path / "flowers-102", {f"jpg/image_{i:05d}.jpg":
                                                fake.image_bytes(i, fmt="JPEG")
                                                for i in range(1, 5)})
    fd = {"image": ("102flowers.tgz", ""), "label": ("imagelabels.mat", fake.md5(labels)),
          "setid": ("setid.mat", fake.md5(setid))}
    e_cls, t_cls = (type("Flowers102", (b,), {"_file_dict": fd})
                    for b in (eds.Flowers102, tds.Flowers102))
    for split in ("train", "val", "test"):
        assert_same_dataset(e_cls(tmp_path, split=split), t_cls(tmp_path, split=split))


def test_caltech101_annotations_and_imagenet_devkit_by_torchvision(tmp_path, monkeypatch):
    pytest.importorskip("scipy")
    files = {"caltech101/101_ObjectCategories/BACKGROUND_Google/image_0001.jpg":
             fake.image_bytes(0, fmt="JPEG")}
    for c, ann_dir in (("Faces", "Faces_2"), ("ant", "ant")):
        for i in (1, 2):
            files[f"caltech101/101_ObjectCategories/{c}/image_{i:04d}.jpg"] = fake.image_bytes(
                i, fmt="JPEG")
            files[f"caltech101/Annotations/{ann_dir}/annotation_{i:04d}.mat"] = fake.mat_bytes(
                {"obj_contour": np.arange(6.0).reshape(2, 3) * i}, compress=i == 2)
    fake.write_files(tmp_path, files)
    for target_type in ("category", ["annotation", "category"]):
        assert_same_dataset(eds.Caltech101(str(tmp_path), target_type=target_type),
                            tds.Caltech101(str(tmp_path), target_type=target_type),
                            ["categories", "annotation_categories"])

    from torchvision.datasets import imagenet as t_imagenet

    from ember.vision.datasets import imagenet as e_imagenet

    archives = fake.imagenet_archives()
    fake.write_files(tmp_path / "in", archives)
    meta = {k: (name, fake.md5(archives[name])) for k, name in
            (("train", "ILSVRC2012_img_train.tar"), ("val", "ILSVRC2012_img_val.tar"),
             ("devkit", "ILSVRC2012_devkit_t12.tar.gz"))}
    monkeypatch.setattr(e_imagenet, "ARCHIVE_META", meta)
    monkeypatch.setattr(t_imagenet, "ARCHIVE_META", meta)
    t_train = tds.ImageNet(tmp_path / "in")  # torchvision parses the devkit with SciPy
    assert_same_dataset(eds.ImageNet(tmp_path / "in"), t_train, ["classes", "class_to_idx"])


def test_country211_sst2_sun397_fgvc(tmp_path):
    fake.write_files(tmp_path, fake.more_folder_files())
    fake.write_files(tmp_path, fake.fgvc_files())
    assert_same_dataset(eds.Country211(tmp_path, split="valid"),
                        tds.Country211(tmp_path, split="valid"), ["classes", "root"])
    assert_same_dataset(eds.RenderedSST2(tmp_path, split="val"),
                        tds.RenderedSST2(tmp_path, split="val"), ["classes"])
    assert_same_dataset(eds.SUN397(tmp_path), tds.SUN397(tmp_path), ["classes"])
    for level in ("variant", "family"):
        assert_same_dataset(eds.FGVCAircraft(tmp_path, split="test", annotation_level=level),
                            tds.FGVCAircraft(tmp_path, split="test", annotation_level=level),
                            ["classes"])


def test_omniglot_and_lfw(tmp_path):
    archive = fake.zip_bytes({f"images_background/{a}/{c}/{a}{c}_{i}.png":
                              fake.image_bytes(i, mode="L") for a in ("Angelic", "Bengali")
                              for c in ("character01", "character02") for i in range(2)})
    (tmp_path / "omniglot-py").mkdir()
    (tmp_path / "omniglot-py" / "images_background.zip").write_bytes(archive)
    import zipfile

    zipfile.ZipFile(tmp_path / "omniglot-py" / "images_background.zip").extractall(
        tmp_path / "omniglot-py")
    sums = {"images_background": fake.md5(archive), "images_evaluation": ""}
    e_cls, t_cls = (type("Omniglot", (b,), {"zips_md5": sums})
                    for b in (eds.Omniglot, tds.Omniglot))
    assert_same_dataset(e_cls(str(tmp_path)), t_cls(str(tmp_path)))

    files = fake.lfw_files()
    fake.write_files(tmp_path, files)
    e_people, e_pairs = fake.lfw_classes(files)
    t_people, t_pairs = (type(c.__name__, (c,), {"checksums": e_people.checksums,
                                                 "file_dict": e_people.file_dict})
                         for c in (tds.LFWPeople, tds.LFWPairs))
    assert_same_dataset(e_people(str(tmp_path), split="test"),
                        t_people(str(tmp_path), split="test"), ["class_to_idx", "data"])
    assert_same_dataset(e_pairs(str(tmp_path), split="test"),
                        t_pairs(str(tmp_path), split="test"), ["pair_names", "targets"])


def test_stanford_cars(tmp_path):
    pytest.importorskip("scipy")
    fake.write_files(tmp_path, fake.cars_files())
    assert_same_dataset(eds.StanfordCars(tmp_path), tds.StanfordCars(tmp_path),
                        ["classes", "class_to_idx"])


def test_flickr_clevr_places365(tmp_path):
    files = {**fake.caption_files(), **fake.clevr_places_files()}
    fake.write_files(tmp_path, files)
    assert_same_dataset(eds.Flickr8k(tmp_path / "flickr", str(tmp_path / "flickr8k.html")),
                        tds.Flickr8k(tmp_path / "flickr", str(tmp_path / "flickr8k.html")),
                        ["ids", "annotations"])
    assert_same_dataset(eds.Flickr30k(str(tmp_path / "flickr"), str(tmp_path / "flickr30k.txt")),
                        tds.Flickr30k(str(tmp_path / "flickr"), str(tmp_path / "flickr30k.txt")),
                        ["ids"])
    for split in ("val", "test"):
        assert_same_dataset(eds.CLEVRClassification(tmp_path, split=split),
                            tds.CLEVRClassification(tmp_path, split=split))
    e_cls = fake.places_class(files)
    t_cls = type("Places365", (tds.Places365,), {"_FILE_LIST_META": e_cls._FILE_LIST_META,
                                                 "_CATEGORIES_META": e_cls._CATEGORIES_META})
    for split in ("val", "test"):
        assert_same_dataset(e_cls(tmp_path / "places", split=split, small=True),
                            t_cls(tmp_path / "places", split=split, small=True),
                            ["classes", "class_to_idx", "targets"])


def test_sbdataset(tmp_path):
    pytest.importorskip("scipy")
    files, _ = fake.sbd_files()
    fake.write_files(tmp_path, files)
    for mode in ("boundaries", "segmentation"):
        assert_same_dataset(eds.SBDataset(tmp_path / "sbd", mode=mode),
                            tds.SBDataset(tmp_path / "sbd", mode=mode), ["images", "masks"])


def test_cityscapes_kitti_widerface(tmp_path):
    fake.write_files(tmp_path / "e", fake.cityscapes_zips())
    fake.write_files(tmp_path / "t", fake.cityscapes_zips())
    for target_type in (["instance", "color", "polygon"], "semantic"):
        e_ds = eds.Cityscapes(tmp_path / "e", split="val", target_type=target_type)
        t_ds = tds.Cityscapes(tmp_path / "t", split="val", target_type=target_type)
        assert len(e_ds) == len(t_ds)
        for i in range(len(t_ds)):
            assert_same(e_ds[i], t_ds[i], f"item {i}")
        assert [c.name for c in e_ds.classes] == [c.name for c in t_ds.classes]
        assert tuple(e_ds.classes[7]) == tuple(t_ds.classes[7])
    fake.write_files(tmp_path, fake.kitti_widerface_files())
    for train in (True, False):
        assert_same_dataset(eds.Kitti(tmp_path, train=train), tds.Kitti(tmp_path, train=train),
                            ["images", "targets"])
    for split in ("val", "test"):
        assert_same_dataset(eds.WIDERFace(tmp_path, split=split),
                            tds.WIDERFace(tmp_path, split=split))


def test_inaturalist_phototour(tmp_path):
    fake.write_files(tmp_path, fake.inaturalist_files())
    for version, target_type in (("2021_valid", ["full", "genus", "order"]), ("2019", "super")):
        e_ds = eds.INaturalist(tmp_path, version=version, target_type=target_type)
        t_ds = tds.INaturalist(tmp_path, version=version, target_type=target_type)
        assert_same_dataset(e_ds, t_ds, ["all_categories", "categories_index",
                                         "categories_map", "index"])
    archive, _ = fake.phototour_zip()
    import zipfile

    for side in ("e", "t"):
        (tmp_path / side).mkdir()
        zipfile.ZipFile(__import__("io").BytesIO(archive)).extractall(tmp_path / side / "yosemite")
    lens = {"lens": {"yosemite": 5}}
    e_cls, t_cls = (type("PhotoTour", (b,), lens) for b in (eds.PhotoTour, tds.PhotoTour))
    for train in (True, False):
        e_ds, t_ds = e_cls(tmp_path / "e", "yosemite", train), t_cls(tmp_path / "t", "yosemite",
                                                                      train)
        assert len(e_ds) == len(t_ds)
        for i in range(len(t_ds)):
            assert_same(e_ds[i], t_ds[i], f"item {i}")
    # each library reads the other's cache file
    assert_same(ember.load(tmp_path / "t" / "yosemite.pt"),
                torch.load(tmp_path / "e" / "yosemite.pt", weights_only=True), "cache")


def test_optical_flow(tmp_path):
    files, _, _ = fake.flow_files()
    fake.write_files(tmp_path, files)
    for kwargs in ({"pass_name": "both"}, {"split": "test", "pass_name": "final"}):
        assert_same_dataset(eds.Sintel(tmp_path, **kwargs), tds.Sintel(tmp_path, **kwargs),
                            ["_image_list", "_flow_list"])
    for split in ("train", "val"):
        assert_same_dataset(eds.FlyingChairs(tmp_path, split=split),
                            tds.FlyingChairs(tmp_path, split=split), ["_image_list"])
    assert_same_dataset(eds.FlyingThings3D(tmp_path), tds.FlyingThings3D(tmp_path),
                        ["_image_list", "_flow_list"])


def test_sbu(tmp_path):
    urls = "".join(f"http://127.0.0.1:9/photos/p{i}.jpg\n" for i in (1, 2, 3))
    fake.write_files(tmp_path, {
        "dataset/SBU_captioned_photo_dataset_urls.txt": urls,
        "dataset/SBU_captioned_photo_dataset_captions.txt": "one\ntwo\nthree\n",
        "dataset/p1.jpg": fake.image_bytes(1, fmt="JPEG"),
        "dataset/p3.jpg": fake.image_bytes(3, fmt="JPEG"), "sbu.tgz": b"archive"})
    attrs = {"filename": "sbu.tgz", "md5_checksum": fake.md5(b"archive")}
    e_cls, t_cls = (type("SBU", (b,), attrs) for b in (eds.SBU, tds.SBU))
    assert_same_dataset(e_cls(tmp_path, download=False), t_cls(tmp_path, download=False),
                        ["photos", "captions"])


def test_kitti_flow_hd1k(tmp_path):
    files, _ = fake.kitti_flow_files()
    fake.write_files(tmp_path, files)
    for split in ("train", "test"):
        assert_same_dataset(eds.KittiFlow(tmp_path, split=split),
                            tds.KittiFlow(tmp_path, split=split), ["_image_list"])
    assert_same_dataset(eds.HD1K(tmp_path), tds.HD1K(tmp_path), ["_image_list", "_flow_list"])


STEREO = [
    ("Kitti2012Stereo", {}), ("Kitti2015Stereo", {}), ("Kitti2015Stereo", {"split": "test"}),
    ("CarlaStereo", {}), ("Middlebury2014Stereo", {"calibration": "both"}),
    ("ETH3DStereo", {}), ("InStereo2k", {}), ("CREStereo", {}), ("FallingThingsStereo", {}),
    ("SceneFlowStereo", {"variant": "Monkaa"}), ("SintelStereo", {}),
]


@pytest.mark.parametrize("name, kwargs", STEREO)
def test_stereo_matching(tmp_path, name, kwargs):
    files, _, _ = fake.stereo_files()
    fake.write_files(tmp_path, files)
    assert_same_dataset(getattr(eds, name)(tmp_path, **kwargs),
                        getattr(tds, name)(tmp_path, **kwargs), ["_images", "_disparities"])
