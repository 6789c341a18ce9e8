"""ember.vision.datasets beyond MNIST/CIFAR: VOC, COCO, Oxford pets, Flowers102, Food101, STL10,
SVHN, EMNIST/QMNIST, USPS, SEMEION, DTD, EuroSAT, GTSRB, Caltech, CelebA, FER2013, Imagenette,
ImageNet, and the MATLAB 5 reader, each on a tiny fake copy of its on-disk format; downloads
from a local HTTP server."""

import base64
import bz2
import contextlib
import gzip
import hashlib
import http.server
import io
import json
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from testutils import local_http_server

import ember
from ember.vision import datasets
from ember.vision.datasets import _matlab, voc


# ---------------------------------------------------------------- helpers
def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def image_bytes(seed, size=(6, 5), mode="RGB", fmt="PNG") -> bytes:
    rng = np.random.default_rng(seed)
    shape = (size[1], size[0]) + ((3,) if mode == "RGB" else ())
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(buf, fmt)
    return buf.getvalue()


def write_files(root: Path, files) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode())


def pixels(path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"))


def tar_bytes(files, mode="w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, body in files.items():
            body = body if isinstance(body, bytes) else body.encode()
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def zip_bytes(files) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in files.items():
            zf.writestr(name, body)
    return buf.getvalue()


class FileServer:
    """``files`` (name -> bytes) and the paths requested, for a ``local_http_server``."""

    def __init__(self, files):
        self.files, self.hits = files, []
        self.url = ""

    def request_handler(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits.append(self.path)
                body = outer.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler


@pytest.fixture
def serve(monkeypatch):
    """``serve(files)`` serves ``files`` on 127.0.0.1 until the test ends."""
    monkeypatch.delenv("EMBER_HUB_OFFLINE", raising=False)
    with contextlib.ExitStack() as servers:

        def start(files):
            s = FileServer(files)
            s.url = servers.enter_context(local_http_server(s.request_handler())).url + "/"
            return s

        yield start


class Sparse:
    """A dense array to be written as a MATLAB sparse double matrix."""

    def __init__(self, dense):
        self.dense = np.asarray(dense, dtype=np.float64)


_MAT_CLASSES = {  # dtype -> (mxClass, miType)
    "float64": (6, 9), "float32": (7, 7), "int8": (8, 1), "uint8": (9, 2), "int16": (10, 3),
    "uint16": (11, 4), "int32": (12, 5), "uint32": (13, 6),
}


def _mat_element(mtype, payload):
    return struct.pack("<II", mtype, len(payload)) + payload + b"\0" * (-len(payload) % 8)


def _mat_matrix(name, value):
    """One miMATRIX element: a str (char row), a dict or list of dicts (struct), an object
    array (cell) or a numeric array."""
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, str):
        cls, shape = 4, (1, len(value))
        data = _mat_element(4, np.array([ord(c) for c in value], "<u2").tobytes())
    elif isinstance(value, list):
        cls, shape, fields = 2, (1, len(value)), list(value[0])
        data = _mat_element(5, struct.pack("<i", 32))
        data += _mat_element(1, b"".join(f.encode().ljust(32, b"\0") for f in fields))
        data += b"".join(_mat_matrix("", rec[f]) for rec in value for f in fields)
    elif isinstance(value, Sparse):
        cls, shape = 5, value.dense.shape
        rows, cols = np.nonzero(value.dense.T)[::-1]  # column by column
        indptr = np.searchsorted(cols, np.arange(shape[1] + 1))
        data = _mat_element(5, rows.astype("<i4").tobytes())
        data += _mat_element(5, indptr.astype("<i4").tobytes())
        data += _mat_element(9, value.dense[rows, cols].astype("<f8").tobytes())
    elif isinstance(value, np.ndarray) and value.dtype == object:  # a cell array
        cls, shape = 1, value.shape
        data = b"".join(_mat_matrix("", v) for v in value.reshape(-1, order="F"))
    else:
        arr = np.asarray(value)
        cls, mi = _MAT_CLASSES[arr.dtype.name]
        shape = arr.shape if arr.ndim >= 2 else (1, arr.size)
        data = _mat_element(mi, np.asfortranarray(arr.reshape(shape)).astype(
            arr.dtype.newbyteorder("<")).tobytes(order="F"))
    head = _mat_element(6, struct.pack("<II", cls, 0))
    head += _mat_element(5, np.array(shape, "<i4").tobytes())
    head += _mat_element(1, name.encode())
    return _mat_element(14, head + data)


def mat_bytes(variables, compress=False):
    """A MATLAB 5 file (little-endian) holding ``variables``."""
    out = b"MATLAB 5.0 MAT-file, written by Ember's tests".ljust(116) + b"\0" * 8
    out += struct.pack("<H", 0x0100) + b"IM"
    for name, value in variables.items():
        element = _mat_matrix(name, value)
        if compress:
            packed = zlib.compress(element)
            element = struct.pack("<II", 15, len(packed)) + packed
        out += element
    return out

# MATLAB files written by MATLAB itself, from SciPy's test data (BSD licence)
REAL_MAT_FILES = {
    "testmatrix_7.1_GLNX86.mat": (
        "TUFUTEFCIDUuMCBNQVQtZmlsZSwgUGxhdGZvcm06IEdMTlg4NiwgQ3JlYXRlZCBvbjogU2F0IFNlcCAgMiAxMzoyNjozNCAy"
        "MDA2ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAABSU0PAAAAOQAAAHic42NgYAgA"
        "YjYg5oDSIMAK5TND2YxAzAXEJanFJbmJJUWZFRB1TEDMD5JnYmYCq2aBqAcAx9oFDQ=="
    ),
    "testdouble_6.1_SOL2.mat": (
        "TUFUTEFCIDUuMCBNQVQtZmlsZSwgUGxhdGZvcm06IFNPTDIsIENyZWF0ZWQgb246IFNhdCBBdWcgMTkgMDk6Mzc6MTkgMjAw"
        "NiAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAEATUkAAAAOAAAAiAAAAAYAAAAI"
        "AAAABgAAAAAAAAAFAAAACAAAAAEAAAAJAAAAAQAAAAp0ZXN0ZG91YmxlAAAAAAAAAAAACQAAAEgAAAAAAAAAAD/pIftURC0Y"
        "P/kh+1RELRhAAtl8fzMh0kAJIftURC0YQA9qeilVOF5AEtl8fzMh0kAV/bvpu6d1QBkh+1RELRg="
    ),
    "teststructarr_7.1_GLNX86.mat": (
        "TUFUTEFCIDUuMCBNQVQtZmlsZSwgUGxhdGZvcm06IEdMTlg4NiwgQ3JlYXRlZCBvbjogU2F0IFNlcCAgMiAxMzoyNjozNCAy"
        "MDA2ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAABSU0PAAAAbgAAAHic42NgYHBg"
        "ZGBgA9IcQMzEAAGsUD4jVAxE8wJxSWpxSXFJUWlySWJREVgdCxBC5EHq8/NSGUrK8xn4gGwDBoS5bFjMhWEGsB2MYDY5+pig"
        "+iyQ9LFg0ceBpE8Ays8rzU1KLVIwpFC/EQAJShBq"
    ),
    "teststringarray_6.1_SOL2.mat": (
        "TUFUTEFCIDUuMCBNQVQtZmlsZSwgUGxhdGZvcm06IFNPTDIsIENyZWF0ZWQgb246IFNhdCBBdWcgMTkgMDk6Mzc6MTkgMjAw"
        "NiAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAEATUkAAAAOAAAAYAAAAAYAAAAI"
        "AAAABAAAAAAAAAAFAAAACAAAAAMAAAAFAAAAAQAAAA90ZXN0c3RyaW5nYXJyYXkAAAAABAAAAB4AbwB0AHQAbgB3AGgAZQBv"
        "AHIAIAAgAGUAIAAgAGUAAA=="
    ),
}


# ---------------------------------------------------------------- MATLAB reader
def test_loadmat_reads_matlab_written_files(tmp_path):
    for name, chunks in REAL_MAT_FILES.items():
        (tmp_path / name).write_bytes(base64.b64decode("".join(chunks)))
    m = _matlab.loadmat(tmp_path / "testmatrix_7.1_GLNX86.mat")  # compressed, stored as uint8
    expected = np.array([[1, 2, 3, 4, 5], [2, 0, 0, 0, 0], [3, 0, 0, 0, 0]], dtype=np.uint8)
    assert m["testmatrix"].dtype == np.uint8
    np.testing.assert_array_equal(m["testmatrix"], expected)
    assert m["__version__"] == "1.0" and m["__header__"].startswith(b"MATLAB 5.0 MAT-file")
    d = _matlab.loadmat(tmp_path / "testdouble_6.1_SOL2.mat")["testdouble"]  # big-endian
    assert d.dtype == np.dtype(">f8") and d.shape == (1, 9)
    np.testing.assert_allclose(d[0], np.linspace(0, 2 * np.pi, 9))
    s = _matlab.loadmat(tmp_path / "teststructarr_7.1_GLNX86.mat")["teststructarr"]
    assert s.shape == (1, 2) and s.dtype.names == ("one", "two")
    assert s[0, 0]["one"].tolist() == [[1]] and s[0, 1]["two"].tolist() == ["number 2"]
    sq = _matlab.loadmat(tmp_path / "teststructarr_7.1_GLNX86.mat", squeeze_me=True)
    rec = sq["teststructarr"]
    assert rec.shape == (2,) and rec[1]["one"] == "number 1" and rec[0]["two"] == 2
    strings = _matlab.loadmat(tmp_path / "teststringarray_6.1_SOL2.mat")["teststringarray"]
    assert strings.tolist() == ["one  ", "two  ", "three"]


def test_loadmat_writer_round_trip_and_refusals(tmp_path):
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    data = {"X": x, "y": np.array([[1.0], [10.0]]), "name": "abc",
            "s": [{"a": np.array([1.0]), "b": "q"}, {"a": np.array([2.0]), "b": "r"}]}
    for compress in (False, True):
        path = tmp_path / f"v{compress}.mat"
        path.write_bytes(mat_bytes(data, compress=compress))
        m = _matlab.loadmat(path)
        np.testing.assert_array_equal(m["X"], x)
        assert m["y"].shape == (2, 1) and m["name"].tolist() == ["abc"]
        sq = _matlab.loadmat(path, squeeze_me=True)
        assert sq["y"].tolist() == [1.0, 10.0] and sq["name"] == "abc"
        assert [r["a"] for r in sq["s"]] == [1.0, 2.0] and sq["s"][1]["b"] == "r"
    (tmp_path / "short.mat").write_bytes(b"MATLAB")
    with pytest.raises(ValueError, match="not a MATLAB 5 file"):
        _matlab.loadmat(tmp_path / "short.mat")
    handle = bytearray(mat_bytes({"a": np.array([1.0])}))
    handle[128 + 16] = 16  # the array class byte: a function handle
    (tmp_path / "handle.mat").write_bytes(bytes(handle))
    with pytest.raises(NotImplementedError, match="function handle"):
        _matlab.loadmat(tmp_path / "handle.mat")
    bad = bytearray(mat_bytes({"a": np.array([1.0])}, compress=True))
    bad[-3] ^= 0xFF
    (tmp_path / "bad.mat").write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="bad compressed element"):
        _matlab.loadmat(tmp_path / "bad.mat")


# ---------------------------------------------------------------- VOC
VOC_XML = """<annotation><folder>VOC2012</folder><filename>{id}.jpg</filename>
<size><width>6</width><height>5</height><depth>3</depth></size><segmented>0</segmented>
{objects}</annotation>"""
VOC_OBJECT = """<object><name>{name}</name><difficult>0</difficult>
<bndbox><xmin>1</xmin><ymin>2</ymin><xmax>4</xmax><ymax>5</ymax></bndbox></object>"""


def voc_files(base="VOCdevkit/VOC2012"):
    files = {}
    ids = ["2008_000001", "2008_000002"]
    for i, id in enumerate(ids):
        files[f"{base}/JPEGImages/{id}.jpg"] = image_bytes(i, fmt="JPEG")
        buf = io.BytesIO()
        mask = Image.fromarray(np.full((5, 6), i + 1, np.uint8), "P")
        mask.putpalette([v for k in range(256) for v in (k, k, k)])
        mask.save(buf, "PNG", optimize=False)
        files[f"{base}/SegmentationClass/{id}.png"] = buf.getvalue()
        objects = "".join(VOC_OBJECT.format(name=n) for n in (["dog"], ["cat", "person"])[i])
        files[f"{base}/Annotations/{id}.xml"] = VOC_XML.format(id=id, objects=objects)
    files[f"{base}/ImageSets/Segmentation/train.txt"] = "\n".join(ids) + "\n"
    files[f"{base}/ImageSets/Main/val.txt"] = ids[1] + "\n"
    return files


def test_voc_segmentation_and_detection(tmp_path):
    write_files(tmp_path, voc_files())
    seg = datasets.VOCSegmentation(tmp_path)
    assert len(seg) == 2 and seg.masks[0].endswith("2008_000001.png")
    img, mask = seg[1]
    assert img.mode == "RGB" and img.size == (6, 5)
    assert mask.mode == "P" and np.asarray(mask).max() == 2
    det = datasets.VOCDetection(str(tmp_path), image_set="val")
    assert len(det) == 1
    img, target = det[0]
    ann = target["annotation"]
    assert ann["filename"] == "2008_000002.jpg" and ann["size"] == {
        "width": "6", "height": "5", "depth": "3"}
    assert [o["name"] for o in ann["object"]] == ["cat", "person"]
    assert ann["object"][0]["bndbox"] == {"xmin": "1", "ymin": "2", "xmax": "4", "ymax": "5"}
    # one object is still a list
    one = datasets.VOCDetection.parse_voc_xml(
        voc.parse_xml(tmp_path / "VOCdevkit/VOC2012/Annotations/2008_000001.xml").getroot())
    assert [o["name"] for o in one["annotation"]["object"]] == ["dog"]
    joint = datasets.VOCSegmentation(
        tmp_path, transforms=lambda i, t: (i.size, np.asarray(t).sum()))
    assert joint[0] == ((6, 5), 30)


def test_voc_errors(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown value '2013' for argument year. Valid values"
                       r" are \{'2007', '2008', '2009', '2010', '2011', '2012'\}."):
        datasets.VOCSegmentation(tmp_path, year="2013")
    with pytest.raises(ValueError, match="Unknown value 'test' for argument image_set"):
        datasets.VOCDetection(tmp_path, image_set="test")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use"):
        datasets.VOCDetection(tmp_path, year="2007", image_set="test")
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        datasets.VOCDetection(tmp_path, transform=print, transforms=print)


def test_voc_download_from_local_server(tmp_path, serve, monkeypatch):
    archive = tar_bytes(voc_files("VOCdevkit/VOC2007"))
    server = serve({"voc.tar": archive})
    entry = dict(voc.DATASET_YEAR_DICT["2007"], url=server.url + "voc.tar", md5=md5(archive))
    monkeypatch.setitem(voc.DATASET_YEAR_DICT, "2007", entry)
    ds = datasets.VOCSegmentation(tmp_path, year="2007", download=True)
    assert len(ds) == 2 and (tmp_path / "VOCtrainval_06-Nov-2007.tar").is_file()
    monkeypatch.setitem(voc.DATASET_YEAR_DICT, "2007", dict(entry, md5="0" * 32))
    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        datasets.VOCSegmentation(tmp_path / "other", year="2007", download=True)


# ---------------------------------------------------------------- COCO
def coco_setup(tmp_path):
    write_files(tmp_path, {"a.png": image_bytes(1), "b.png": image_bytes(2)})
    ann = {
        "images": [{"id": 9, "file_name": "b.png"}, {"id": 3, "file_name": "a.png"}],
        "annotations": [
            {"id": 1, "image_id": 9, "bbox": [0, 0, 2, 2], "caption": "first"},
            {"id": 2, "image_id": 3, "bbox": [1, 1, 2, 2], "caption": "only"},
            {"id": 5, "image_id": 9, "bbox": [1, 0, 1, 1], "caption": "second"},
        ],
    }
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    return ann


def test_coco_detection_and_captions(tmp_path):
    ann = coco_setup(tmp_path)
    det = datasets.CocoDetection(tmp_path, str(tmp_path / "ann.json"))
    assert det.ids == [3, 9] and len(det) == 2
    img, target = det[1]
    np.testing.assert_array_equal(np.asarray(img), pixels(tmp_path / "b.png"))
    assert target == [ann["annotations"][0], ann["annotations"][2]]
    assert det[0][1] == [ann["annotations"][1]]
    caps = datasets.CocoCaptions(tmp_path, str(tmp_path / "ann.json"),
                                 target_transform=lambda t: "|".join(t))
    assert caps[1][1] == "first|second"
    with pytest.raises(ValueError, match="Index must be of type integer, got <class 'str'>"):
        det["0"]


def test_coco_image_without_annotations_and_repeated_ids(tmp_path):
    write_files(tmp_path, {"a.png": image_bytes(1)})
    ann = {"images": [{"id": 4, "file_name": "a.png"}],
           "annotations": [{"id": 7, "image_id": 4, "v": 1}, {"id": 7, "image_id": 4, "v": 2}]}
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    # pycocotools looks annotations up by id: the later of two with one id, twice
    assert [a["v"] for a in datasets.CocoDetection(tmp_path, tmp_path / "ann.json")[0][1]] == [
        2, 2]
    (tmp_path / "ann.json").write_text(json.dumps({"images": [{"id": 4, "file_name": "a.png"}]}))
    assert datasets.CocoDetection(tmp_path, tmp_path / "ann.json")[0][1] == []


# ---------------------------------------------------------------- Oxford-IIIT Pet
def pet_files():
    lines = ["Abyssinian_1 1 1 1", "great_pyrenees_2 2 2 1", "Abyssinian_3 1 1 1"]
    files = {"oxford-iiit-pet/annotations/trainval.txt": "\n".join(lines) + "\n",
             "oxford-iiit-pet/annotations/test.txt": lines[1] + "\n"}
    for i, line in enumerate(lines):
        image_id = line.split()[0]
        files[f"oxford-iiit-pet/images/{image_id}.jpg"] = image_bytes(i, fmt="JPEG")
        files[f"oxford-iiit-pet/annotations/trimaps/{image_id}.png"] = image_bytes(
            i, mode="L")
    return files


def test_oxford_iiit_pet(tmp_path):
    write_files(tmp_path, pet_files())
    ds = datasets.OxfordIIITPet(tmp_path)
    assert len(ds) == 3 and ds.classes == ["Abyssinian", "Great Pyrenees"]
    assert ds[1][1] == 1 and ds.class_to_idx["Great Pyrenees"] == 1
    multi = datasets.OxfordIIITPet(
        tmp_path, split="test", target_types=["binary-category", "segmentation", "category"])
    img, (binary, trimap, cat) = multi[0]
    assert (binary, cat) == (1, 1) and trimap.mode == "L" and img.mode == "RGB"
    assert datasets.OxfordIIITPet(tmp_path, target_types=[])[0][1] is None
    with pytest.raises(ValueError, match="Unknown value 'bbox' for argument target_types"):
        datasets.OxfordIIITPet(tmp_path, target_types="bbox")
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        datasets.OxfordIIITPet(tmp_path / "none")


# ---------------------------------------------------------------- Flowers102
def test_flowers102_reads_mat_labels_and_downloads(tmp_path, serve):
    labels = mat_bytes({"labels": np.array([[3.0, 1.0, 2.0, 1.0]])}, compress=True)
    setid = mat_bytes({"trnid": np.array([[4, 2]], np.uint16), "valid": np.array([[1]],
                      np.uint16), "tstid": np.array([[3, 1]], np.uint16)})
    images = tar_bytes({f"jpg/image_{i:05d}.jpg": image_bytes(i, fmt="JPEG")
                        for i in range(1, 5)}, "w:gz")
    server = serve({"102flowers.tgz": images, "imagelabels.mat": labels, "setid.mat": setid})

    class LocalFlowers(datasets.Flowers102):
        _download_url_prefix = server.url
        _file_dict = {"image": ("102flowers.tgz", md5(images)),
                      "label": ("imagelabels.mat", md5(labels)),
                      "setid": ("setid.mat", md5(setid))}

    ds = LocalFlowers(tmp_path, download=True)
    assert len(ds) == 2 and ds._labels == [0, 0] and isinstance(ds._labels[0], float)
    assert [p.name for p in ds._image_files] == ["image_00004.jpg", "image_00002.jpg"]
    img, label = LocalFlowers(tmp_path, split="test", loader=lambda p: p.name)[0]
    assert (img, label) == ("image_00003.jpg", 1.0)
    assert "split=test" in repr(LocalFlowers(tmp_path, split="test"))
    (tmp_path / "flowers-102" / "setid.mat").write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        LocalFlowers(tmp_path)
    with pytest.raises(ValueError, match="Unknown value 'valid' for argument split"):
        LocalFlowers(tmp_path, split="valid")


# ---------------------------------------------------------------- Food101 / DTD / Imagenette
def test_food101(tmp_path):
    meta = {"ramen": ["ramen/1", "ramen/2"], "apple_pie": ["apple_pie/7"]}
    files = {"food-101/meta/train.json": json.dumps(meta), "food-101/meta/test.json": "{}"}
    for paths in meta.values():
        for i, p in enumerate(paths):
            files[f"food-101/images/{p}.jpg"] = image_bytes(i, fmt="JPEG")
    write_files(tmp_path, files)
    ds = datasets.Food101(tmp_path)
    assert ds.classes == ["apple_pie", "ramen"] and ds._labels == [1, 1, 0]
    img, label = ds[2]
    assert img.mode == "RGB" and label == 0
    assert len(datasets.Food101(tmp_path, split="test")) == 0
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        datasets.Food101(tmp_path, split="val")


def test_dtd(tmp_path):
    files = {"dtd/dtd/labels/train1.txt": "striped/s_1.jpg\nbanded/b_1.jpg\n",
             "dtd/dtd/labels/val3.txt": "banded/b_1.jpg\n",
             "dtd/dtd/images/striped/s_1.jpg": image_bytes(1, fmt="JPEG"),
             "dtd/dtd/images/banded/b_1.jpg": image_bytes(2, fmt="JPEG")}
    write_files(tmp_path, files)
    ds = datasets.DTD(tmp_path, target_transform=lambda t: t * 10)
    assert ds.classes == ["banded", "striped"] and [ds[i][1] for i in range(2)] == [10, 0]
    val = datasets.DTD(tmp_path, split="val", partition=3)
    assert len(val) == 1 and "split=val, partition=3" in repr(val)


def test_imagenette(tmp_path):
    files = {f"imagenette2-160/train/{w}/{w}_{i}.JPEG": image_bytes(i, fmt="JPEG")
             for w in ("n01440764", "n03888257") for i in range(2)}
    files["imagenette2-160/train/n01440764/notes.txt"] = "x"
    write_files(tmp_path, files)
    ds = datasets.Imagenette(tmp_path, size="160px")
    assert len(ds) == 4 and ds.classes == [("tench", "Tinca tinca"), ("parachute", "chute")]
    assert ds.class_to_idx["chute"] == 1 and ds[3][1] == 1
    with pytest.raises(RuntimeError, match=r"Dataset not found. You can use download=True to "
                       r"download it\."):
        datasets.Imagenette(tmp_path)
    with pytest.raises(ValueError, match="Unknown value '64px' for argument size"):
        datasets.Imagenette(tmp_path, size="64px")


# ---------------------------------------------------------------- STL10 / SVHN
def test_stl10(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"train_X.bin": rng.integers(0, 256, (3, 3, 96, 96), dtype=np.uint8),
              "train_y.bin": np.array([1, 10, 4], np.uint8),
              "unlabeled_X.bin": rng.integers(0, 256, (2, 3, 96, 96), dtype=np.uint8),
              "test_X.bin": rng.integers(0, 256, (1, 3, 96, 96), dtype=np.uint8),
              "test_y.bin": np.array([2], np.uint8)}
    files = {name: a.tobytes() for name, a in arrays.items()}
    files["fold_indices.txt"] = b"2 0\n1\n"
    files["class_names.txt"] = b"\n".join(b"c%d" % i for i in range(10)) + b"\n"
    write_files(tmp_path / "stl10_binary", files)

    class LocalSTL(datasets.STL10):
        train_list = [[n, md5(files[n])] for n in ("train_X.bin", "train_y.bin",
                                                   "unlabeled_X.bin")]
        test_list = [[n, md5(files[n])] for n in ("test_X.bin", "test_y.bin")]

    train = LocalSTL(tmp_path)
    assert len(train) == 3 and train.labels.tolist() == [0, 9, 3] and train.classes[9] == "c9"
    img, label = train[0]
    # the binary file stores each channel column-major (MATLAB order): transpose back
    np.testing.assert_array_equal(np.asarray(img), arrays["train_X.bin"][0].transpose(2, 1, 0))
    fold = LocalSTL(tmp_path, folds=0)
    assert fold.labels.tolist() == [3, 0]
    both = LocalSTL(tmp_path, split="train+unlabeled")
    assert len(both) == 5 and both.labels.tolist()[-2:] == [-1, -1] and both[4][1] == -1
    assert LocalSTL(tmp_path, split="test")[0][1] == 1
    with pytest.raises(ValueError, match=r"folds should be in the range \[0, 10\), but got 10"):
        LocalSTL(tmp_path, folds=10)
    with pytest.raises(ValueError, match="Expected type None or int for argument folds"):
        LocalSTL(tmp_path, folds="1")
    (tmp_path / "stl10_binary" / "test_y.bin").write_bytes(b"\0")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        LocalSTL(tmp_path)


def test_svhn_from_mat_and_download(tmp_path, serve):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (32, 32, 3, 3), dtype=np.uint8)  # MATLAB's (H, W, C, N)
    body = mat_bytes({"X": x, "y": np.array([[10.0], [3.0], [1.0]])}, compress=True)
    server = serve({"test_32x32.mat": body})

    class LocalSVHN(datasets.SVHN):
        split_list = dict(datasets.SVHN.split_list,
                          test=[server.url + "test_32x32.mat", "test_32x32.mat", md5(body)])

    ds = LocalSVHN(tmp_path, split="test", download=True)
    assert len(ds) == 3 and ds.labels.tolist() == [0, 3, 1] and ds.data.shape == (3, 3, 32, 32)
    img, label = ds[1]
    np.testing.assert_array_equal(np.asarray(img), x[:, :, :, 1])
    assert label == 3 and "Split: test" in repr(ds)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        LocalSVHN(tmp_path)
    with pytest.raises(ValueError, match="Unknown value 'dev' for argument split"):
        LocalSVHN(tmp_path, split="dev")


# ---------------------------------------------------------------- EMNIST / QMNIST
def idx_bytes(arr: np.ndarray, code=8) -> bytes:
    head = bytes([0, 0, code, arr.ndim]) + b"".join(int(s).to_bytes(4, "big")
                                                     for s in arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def test_emnist_reads_and_downloads(tmp_path, serve):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    y = np.array([1, 26, 5], np.uint8)
    inner = {"gzip/emnist-letters-test-images-idx3-ubyte.gz": gzip.compress(idx_bytes(x)),
             "gzip/emnist-letters-test-labels-idx1-ubyte.gz": gzip.compress(idx_bytes(y))}
    archive = zip_bytes(inner)
    server = serve({"gzip.zip": archive})

    class LocalEMNIST(datasets.EMNIST):
        url, md5 = server.url + "gzip.zip", md5(archive)

    ds = LocalEMNIST(tmp_path, split="letters", train=False, download=True)
    assert not (tmp_path / "LocalEMNIST" / "raw" / "gzip").exists()
    assert len(ds) == 3 and ds.classes[26] == "z" and ds[1][1] == 26
    np.testing.assert_array_equal(np.asarray(ds[2][0]), x[2])
    assert datasets.EMNIST.classes_split_dict["bymerge"][-1] == "t"
    with pytest.raises(ValueError, match="Unknown value 'upper' for argument split"):
        datasets.EMNIST(tmp_path, split="upper")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.EMNIST(tmp_path, split="digits")


def test_qmnist_what_and_compat(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (10003, 2, 2), dtype=np.uint8)
    y = np.zeros((10003, 8), np.int32)
    y[:, 0] = np.arange(10003) % 10
    y[:, 5] = np.arange(10003)
    raw = tmp_path / "QMNIST" / "raw"
    write_files(raw, {"qmnist-test-images-idx3-ubyte": idx_bytes(x),
                      "qmnist-test-labels-idx2-int": idx_bytes(y, code=12)})
    test = datasets.QMNIST(tmp_path, train=False)
    assert len(test) == 10003 and test.targets.dtype == ember.int64
    assert test[13][1] == 3 and np.asarray(test[13][0]).tolist() == x[13].tolist()
    tail = datasets.QMNIST(tmp_path, what="test50k", compat=False)
    assert len(tail) == 3 and tail[0][1].tolist() == y[10000].tolist()
    assert "Split: test50k" in repr(tail)
    with pytest.raises(ValueError, match="Unknown value 'val' for argument what"):
        datasets.QMNIST(tmp_path, what="val")


# ---------------------------------------------------------------- USPS / SEMEION / FER2013
def test_usps_reads_libsvm_bz2(tmp_path, serve):
    rng = np.random.default_rng(4)
    values = rng.uniform(-1, 1, (2, 256)).astype(np.float32)
    lines = [f"{label} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(row))
             for label, row in zip((10, 3), values)]
    body = bz2.compress(("\n".join(lines) + "\n").encode())
    server = serve({"usps.t.bz2": body})

    class LocalUSPS(datasets.USPS):
        split_list = {"test": [server.url + "usps.t.bz2", "usps.t.bz2", md5(body)]}

    ds = LocalUSPS(tmp_path, train=False, download=True)
    assert len(ds) == 2 and ds.targets == [9, 2]
    expected = ((np.float32([[float(f"{v:.6f}") for v in r] for r in values]) + 1) / 2 * 255)
    np.testing.assert_array_equal(ds.data, expected.astype(np.uint8).reshape(2, 16, 16))
    img, label = ds[0]
    assert img.mode == "L" and img.size == (16, 16) and label == 9


def test_semeion_download_and_checksum(tmp_path, serve):
    rows = []
    for label in (4, 0):
        bits = [(i + label) % 2 for i in range(256)]
        rows.append(" ".join(f"{b}.0000" for b in bits) + " " +
                    " ".join("1" if j == label else "0" for j in range(10)))
    body = ("\n".join(rows) + "\n").encode()
    server = serve({"semeion.data": body})

    class LocalSemeion(datasets.SEMEION):
        url, md5_checksum = server.url + "semeion.data", md5(body)

    ds = LocalSemeion(tmp_path)  # download defaults to True
    assert len(ds) == 2 and [ds[i][1] for i in range(2)] == [4, 0]
    assert np.asarray(ds[0][0])[0, :3].tolist() == [0, 255, 0]

    class BadSum(LocalSemeion):
        md5_checksum = "0" * 32

    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        BadSum(tmp_path / "bad")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        BadSum(tmp_path, download=False)


def fer_csv(header, rows):
    return (",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)).encode()


def test_fer2013(tmp_path, monkeypatch):
    pix = [" ".join(str((i * 7 + k) % 256) for k in range(48 * 48)) for i in range(3)]
    files = {
        "train.csv": fer_csv(["emotion", "pixels"], [["3", pix[0]], ["5", pix[1]]]),
        "test.csv": fer_csv(["pixels"], [[pix[2]]]),
    }
    write_files(tmp_path / "fer2013", files)
    res = {"train": ("train.csv", md5(files["train.csv"])),
           "test": ("test.csv", md5(files["test.csv"])),
           "fer": ("fer2013.csv", "x"), "icml": ("icml_face_data.csv", "x")}
    monkeypatch.setattr(datasets.FER2013, "_RESOURCES", res)
    train = datasets.FER2013(tmp_path)
    img, label = train[1]
    assert len(train) == 2 and label == 5 and img.size == (48, 48) and img.mode == "L"
    assert np.asarray(img)[0, 1] == 8
    assert datasets.FER2013(tmp_path, split="test")[0][1] is None
    fer = fer_csv(["emotion", "pixels", "Usage"],
                  [["1", pix[0], "Training"], ["2", pix[1], "PublicTest"],
                   ["6", pix[2], "PrivateTest"]])
    (tmp_path / "fer2013" / "fer2013.csv").write_bytes(fer)
    monkeypatch.setitem(res, "fer", ("fer2013.csv", md5(fer)))
    test = datasets.FER2013(tmp_path, split="test")
    assert [test[i][1] for i in range(len(test))] == [2, 6]
    monkeypatch.setitem(res, "fer", ("fer2013.csv", "0" * 32))
    with pytest.raises(RuntimeError, match="fer2013.csv not found in .* or corrupted. You can"
                       " download it from https://www.kaggle.com/c/challenges"):
        datasets.FER2013(tmp_path)


# ---------------------------------------------------------------- EuroSAT / GTSRB / Caltech
def test_eurosat_download(tmp_path, serve):
    archive = zip_bytes({f"2750/{c}/{c}_{i}.jpg": image_bytes(i, fmt="JPEG")
                         for c in ("Forest", "River") for i in range(2)})
    server = serve({"EuroSAT.zip": archive})

    class LocalEuroSAT(datasets.EuroSAT):
        _URL, _MD5 = server.url + "EuroSAT.zip", md5(archive)

    ds = LocalEuroSAT(str(tmp_path), download=True)
    assert len(ds) == 4 and ds.classes == ["Forest", "River"] and ds[2][1] == 1
    assert ds.root == str(tmp_path)
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        datasets.EuroSAT(tmp_path / "none")


def test_gtsrb(tmp_path):
    ppm = {f"gtsrb/GTSRB/Training/{c:05d}/x_{i}.ppm": image_bytes(i, fmt="PPM")
           for c in (0, 7) for i in range(2)}
    ppm["gtsrb/GTSRB/Final_Test/Images/00001.ppm"] = image_bytes(5, fmt="PPM")
    ppm["gtsrb/GT-final_test.csv"] = ("Filename;Width;Height;Roi.X1;ClassId\n"
                                      "00001.ppm; 6; 5; 0; 17\n")
    write_files(tmp_path, ppm)
    train = datasets.GTSRB(tmp_path)
    assert len(train) == 4 and [train[i][1] for i in range(4)] == [0, 0, 1, 1]
    img, label = datasets.GTSRB(tmp_path, split="test")[0]
    assert label == 17 and img.mode == "RGB"
    np.testing.assert_array_equal(
        np.asarray(img), pixels(tmp_path / "gtsrb/GTSRB/Final_Test/Images/00001.ppm"))


def test_caltech101_and_256(tmp_path):
    files = {"caltech101/101_ObjectCategories/BACKGROUND_Google/image_0001.jpg":
             image_bytes(0, fmt="JPEG")}
    for c in ("Faces", "ant"):
        for i in (1, 2):
            files[f"caltech101/101_ObjectCategories/{c}/image_{i:04d}.jpg"] = image_bytes(
                i, fmt="JPEG")
    contour = np.array([[1.5, 2.0, 3.0], [4.0, 5.0, 6.5]])
    files["caltech101/Annotations/Faces_2/annotation_0002.mat"] = mat_bytes(
        {"box_coord": np.array([[1, 2, 3, 4]], np.uint8), "obj_contour": contour})
    for i, c in enumerate(("001.ak47", "002.bat")):
        for j in (1, 2, 3)[: i + 1]:
            files[f"caltech256/256_ObjectCategories/{c}/{i + 1:03d}_{j:04d}.jpg"] = (
                image_bytes(j, fmt="JPEG"))
    files["caltech256/256_ObjectCategories/001.ak47/notes.txt"] = "x"
    write_files(tmp_path, files)
    ds = datasets.Caltech101(tmp_path, target_type=["category", "annotation"])
    assert ds.categories == ["Faces", "ant"] and len(ds) == 4 and ds.y == [0, 0, 1, 1]
    img, (cat, ann) = ds[1]
    assert cat == 0 and img.mode == "RGB"
    np.testing.assert_array_equal(ann, contour)
    assert "Target type: ['category', 'annotation']" in repr(ds)
    with pytest.raises(ValueError, match="Unknown value 'bbox' for argument target_type"):
        datasets.Caltech101(tmp_path, target_type="bbox")
    c256 = datasets.Caltech256(tmp_path)
    assert len(c256) == 3 and c256.y == [0, 1, 1] and c256[2][1] == 1
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.Caltech256(tmp_path / "none")


# ---------------------------------------------------------------- CelebA
def celeba_files():
    names = ["000001.jpg", "000002.jpg", "000003.jpg"]
    attr_names = ["Smiling", "Young"]
    files = {
        "list_eval_partition.txt": "".join(f"{n} {s}\n" for n, s in zip(names, (0, 2, 0))),
        "identity_CelebA.txt": "".join(f"{n} {i}\n" for n, i in zip(names, (7, 8, 9))),
        "list_bbox_celeba.txt": "3\nimage_id x_1 y_1 width height\n" + "".join(
            f"{n}  {i} {i + 1}  {i + 2} {i + 3}\n" for i, n in enumerate(names)),
        "list_landmarks_align_celeba.txt": "3\n" + " ".join(f"p{k}" for k in range(10)) +
        "\n" + "".join(f"{n} " + " ".join(str(i * 10 + k) for k in range(10)) + "\n"
                       for i, n in enumerate(names)),
        "list_attr_celeba.txt": "3\n" + " ".join(attr_names) + "\n" + "".join(
            f"{n} {a:2d} {-a:2d}\n" for n, a in zip(names, (1, -1, 1))),
    }
    for i, n in enumerate(names):
        files[f"img_align_celeba/{n}"] = image_bytes(i, fmt="JPEG")
    return {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}


def celeba_class(files, **extra):
    file_list = [(f"id{i}", md5(files[name]) if name in files else "0" * 32, name)
                 for i, (_, _, name) in enumerate(datasets.CelebA.file_list)]
    return type("LocalCelebA", (datasets.CelebA,), dict(file_list=file_list, **extra))


def test_celeba_targets_and_splits(tmp_path):
    files = celeba_files()
    write_files(tmp_path / "celeba", files)
    cls = celeba_class(files)
    ds = cls(tmp_path, target_type=["attr", "identity", "bbox", "landmarks"])
    assert len(ds) == 2 and ds.filename == ["000001.jpg", "000003.jpg"]
    assert ds.attr_names == ["Smiling", "Young"] and ds.attr.dtype == ember.int64
    img, (attr, identity, bbox, landmarks) = ds[1]
    assert attr.tolist() == [1, 0] and int(identity) == 9 and bbox.tolist() == [2, 3, 4, 5]
    assert landmarks.tolist() == list(range(20, 30)) and img.mode == "RGB"
    assert len(cls(tmp_path, split="all")) == 3 and len(cls(tmp_path, split="Test")) == 1
    assert cls(tmp_path, target_type=[])[0][1] is None
    with pytest.raises(RuntimeError, match="target_transform is specified but target_type"):
        cls(tmp_path, target_type=[], target_transform=str)
    with pytest.raises(ValueError, match="Unknown value 'dev' for argument split"):
        cls(tmp_path, split="dev")
    with pytest.raises(ValueError, match='Target type "pose" is not recognized.'):
        cls(tmp_path, target_type="pose")[0]
    (tmp_path / "celeba" / "identity_CelebA.txt").write_text("tampered")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        cls(tmp_path)


def test_celeba_download(tmp_path, serve):
    files = celeba_files()
    served = {k: v for k, v in files.items() if not k.startswith("img_align")}
    served["img_align_celeba.zip"] = zip_bytes(
        {k: v for k, v in files.items() if k.startswith("img_align")})
    by_id = {f"id{i}": served[name] for i, (_, _, name) in enumerate(datasets.CelebA.file_list)}
    server = serve(by_id)
    cls = celeba_class(served, drive_url=server.url + "{id}")
    assert len(cls(tmp_path, split="test", download=True)) == 1
    assert sorted(server.hits) == sorted(f"/{k}" for k in by_id)


# ---------------------------------------------------------------- ImageNet
def imagenet_archives():
    def synset(idx, wnid, words, children):  # the fields of the real meta.mat, in order
        return {"ILSVRC2012_ID": np.array([float(idx)]), "WNID": wnid, "words": words,
                "gloss": "a fish", "num_children": np.array([float(len(children))]),
                "children": np.array([children], np.uint16).reshape(1, -1),
                "wordnet_height": np.array([0.0]), "num_train_images": np.array([2.0])}

    synsets = [synset(1, "n01", "tench, Tinca tinca", []), synset(2, "n02", "goldfish", []),
               synset(1001, "n99", "fish", [1, 2])]
    devkit = tar_bytes({
        "ILSVRC2012_devkit_t12/data/meta.mat": mat_bytes({"synsets": synsets}),
        "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt": "2\n1\n2\n",
    }, "w:gz")
    val = tar_bytes({f"ILSVRC2012_val_{i:08d}.JPEG": image_bytes(i, fmt="JPEG")
                     for i in (1, 2, 3)})
    train = tar_bytes({f"{w}.tar": tar_bytes({f"{w}_{i}.JPEG": image_bytes(i, fmt="JPEG")
                                              for i in range(2)}) for w in ("n01", "n02")})
    return {"ILSVRC2012_devkit_t12.tar.gz": devkit, "ILSVRC2012_img_val.tar": val,
            "ILSVRC2012_img_train.tar": train}


def test_imagenet_from_local_archives(tmp_path, monkeypatch):
    from ember.vision.datasets import imagenet

    archives = imagenet_archives()
    write_files(tmp_path, archives)
    meta = {k: (name, md5(archives[name])) for k, name in
            (("train", "ILSVRC2012_img_train.tar"), ("val", "ILSVRC2012_img_val.tar"),
             ("devkit", "ILSVRC2012_devkit_t12.tar.gz"))}
    monkeypatch.setattr(imagenet, "ARCHIVE_META", meta)
    val = datasets.ImageNet(tmp_path, split="val")
    assert val.wnids == ["n01", "n02"] and val.classes == [("tench", "Tinca tinca"),
                                                           ("goldfish",)]
    assert val.class_to_idx == {"tench": 0, "Tinca tinca": 0, "goldfish": 1}
    assert [val[i][1] for i in range(3)] == [0, 1, 1] and val.root == str(tmp_path)
    assert sorted(p.name for p in (tmp_path / "val" / "n02").iterdir()) == [
        "ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000003.JPEG"]
    # meta.bin is a PyTorch-format checkpoint, read without running pickled code
    assert ember.load(tmp_path / "meta.bin") == (
        {"n01": ("tench", "Tinca tinca"), "n02": ("goldfish",)}, ["n02", "n01", "n02"])
    train = datasets.ImageNet(tmp_path, transform=lambda im: im.size)
    assert len(train) == 4 and train[3] == ((6, 5), 1) and "Split: train" in repr(train)
    assert not (tmp_path / "train" / "n01.tar").exists()


def test_imagenet_missing_archives(tmp_path):
    with pytest.raises(RuntimeError, match="The archive ILSVRC2012_devkit_t12.tar.gz is not "
                       "present in the root directory or is corrupted. You need to download"):
        datasets.ImageNet(tmp_path)
    with pytest.raises(ValueError, match="Unknown value 'test' for argument split"):
        datasets.ImageNet(tmp_path, split="test")


# ---------------------------------------------------------------- Country211 / SST2 / SUN397
def more_folder_files():
    jpeg = {i: image_bytes(i, fmt="JPEG") for i in range(3)}
    files = {f"country211/valid/{c}/{i}.jpg": jpeg[i] for c in ("AD", "FR") for i in range(2)}
    files.update({f"rendered-sst2/valid/{c}/{i}.png": image_bytes(i) for c in
                  ("negative", "positive") for i in range(1 + (c == "positive"))})
    files["SUN397/ClassName.txt"] = "/a/abbey\n/b/bus_interior\n/o/office/cubicle\n"
    files["SUN397/a/abbey/sun_1.jpg"] = jpeg[0]
    files["SUN397/o/office/cubicle/sun_2.jpg"] = jpeg[1]
    files["SUN397/o/office/cubicle/other.jpg"] = jpeg[2]
    return files


def test_country211_rendered_sst2_sun397(tmp_path):
    write_files(tmp_path, more_folder_files())
    c211 = datasets.Country211(tmp_path, split="valid")
    assert len(c211) == 4 and c211.classes == ["AD", "FR"] and c211[3][1] == 1
    assert c211.root == str(tmp_path)
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        datasets.Country211(tmp_path, split="val")
    sst = datasets.RenderedSST2(tmp_path, split="val")
    assert len(sst) == 3 and [sst[i][1] for i in range(3)] == [0, 1, 1]
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.RenderedSST2(tmp_path)
    sun = datasets.SUN397(tmp_path)
    assert sun.classes == ["abbey", "bus_interior", "office/cubicle"]
    assert sorted(sun._labels) == [0, 2] and len(sun) == 2


def fgvc_files():
    base = "fgvc-aircraft-2013b/data"
    return {
        f"{base}/variants.txt": "707-320\nA300B4\n",
        f"{base}/families.txt": "Boeing 707\nA300\n",
        f"{base}/images_variant_test.txt": "0001 A300B4\n0002 707-320\n",
        f"{base}/images_family_test.txt": "0001 A300\n0002 Boeing 707\n",
        f"{base}/images/0001.jpg": image_bytes(1, fmt="JPEG"),
        f"{base}/images/0002.jpg": image_bytes(2, fmt="JPEG"),
    }


def test_fgvc_aircraft(tmp_path):
    write_files(tmp_path, fgvc_files())
    ds = datasets.FGVCAircraft(tmp_path, split="test")
    assert [ds[i][1] for i in range(2)] == [1, 0] and ds.classes == ["707-320", "A300B4"]
    fam = datasets.FGVCAircraft(tmp_path, split="test", annotation_level="family")
    assert fam.class_to_idx["Boeing 707"] == 0 and fam[1][1] == 0
    with pytest.raises(ValueError, match="Unknown value 'model' for argument annotation_level"):
        datasets.FGVCAircraft(tmp_path, annotation_level="model")


def cars_files():
    annos = [{"bbox_x1": np.array([[1]], np.uint8), "class": np.array([[2]], np.uint8),
              "fname": "00001.jpg"},
             {"bbox_x1": np.array([[3]], np.uint8), "class": np.array([[1]], np.uint8),
              "fname": "00002.jpg"}]
    meta = mat_bytes({"class_names": np.array([["AM General Hummer", "Acura RL"]],
                                              dtype=object)})
    return {"stanford_cars/devkit/cars_meta.mat": meta,
            "stanford_cars/devkit/cars_train_annos.mat": mat_bytes({"annotations": annos}),
            "stanford_cars/cars_train/00001.jpg": image_bytes(1, fmt="JPEG"),
            "stanford_cars/cars_train/00002.jpg": image_bytes(2, fmt="JPEG")}


def test_stanford_cars(tmp_path):
    write_files(tmp_path, cars_files())
    ds = datasets.StanfordCars(tmp_path)
    assert ds.classes == ["AM General Hummer", "Acura RL"] and [ds[i][1] for i in (0, 1)] == [1, 0]
    assert ds._samples[1][0].endswith("cars_train/00002.jpg")
    with pytest.raises(ValueError, match="The original URL is broken"):
        datasets.StanfordCars(tmp_path, download=True)
    with pytest.raises(RuntimeError, match="Dataset not found."):
        datasets.StanfordCars(tmp_path, split="test")


def test_omniglot_download(tmp_path, serve):
    archive = zip_bytes({f"images_evaluation/{a}/{c}/{a}{c}_{i}.png": image_bytes(i, mode="L")
                         for a in ("Angelic",) for c in ("character01", "character02")
                         for i in range(2)})
    server = serve({"images_evaluation.zip": archive, "images_background.zip": b"corrupt"})

    class LocalOmniglot(datasets.Omniglot):
        download_url_prefix = server.url.rstrip("/")
        zips_md5 = {"images_background": "0" * 32, "images_evaluation": md5(archive)}

    ds = LocalOmniglot(tmp_path, background=False, download=True)
    assert len(ds) == 4 and sorted(t for _, t in ds._flat_character_images) == [0, 0, 1, 1]
    img, target = ds[0]
    assert img.mode == "L" and target in (0, 1)
    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        LocalOmniglot(tmp_path, download=True)


def lfw_files():
    files = {"lfw-py/lfw-funneled.tgz": b"archive",
             "lfw-py/lfw-names.txt": "Ann_A\t2\nBob_B\t1\n",
             "lfw-py/peopleDevTest.txt": "2\nBob_B\t1\nAnn_A\t2\n",
             "lfw-py/pairsDevTest.txt": "1\nAnn_A\t1\t2\nAnn_A\t1\tBob_B\t1\n"}
    for name, n in (("Ann_A", 2), ("Bob_B", 1)):
        for i in range(1, n + 1):
            files[f"lfw-py/lfw_funneled/{name}/{name}_{i:04d}.jpg"] = image_bytes(
                i + len(name), fmt="JPEG")
    return files


def lfw_classes(files):
    sums = dict(datasets.LFWPeople.checksums, **{
        n: md5(files[f"lfw-py/{n}"].encode()) for n in
        ("lfw-names.txt", "peopleDevTest.txt", "pairsDevTest.txt")})
    fd = dict(datasets.LFWPeople.file_dict, funneled=(
        "lfw_funneled", "lfw-funneled.tgz", md5(files["lfw-py/lfw-funneled.tgz"])))
    return [type(c.__name__, (c,), {"checksums": sums, "file_dict": fd})
            for c in (datasets.LFWPeople, datasets.LFWPairs)]


def test_lfw_people_and_pairs(tmp_path):
    files = lfw_files()
    write_files(tmp_path, files)
    people_cls, pairs_cls = lfw_classes(files)
    people = people_cls(tmp_path, split="test")
    assert people.targets == [1, 0, 0] and people.data[2].endswith("Ann_A/Ann_A_0002.jpg")
    assert "Classes (identities): 2" in repr(people) and people[0][0].mode == "RGB"
    pairs = pairs_cls(tmp_path, split="test", transform=lambda im: im.size)
    assert pairs.pair_names == [("Ann_A", "Ann_A"), ("Ann_A", "Bob_B")]
    assert pairs[1] == ((6, 5), (6, 5), 0) and pairs.targets == [1, 0]
    with pytest.raises(ValueError, match=r"no longer available for automatic download.Please"):
        people_cls(tmp_path, split="test", download=True)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        people_cls(tmp_path)  # 10fold: people.txt is missing
    with pytest.raises(ValueError, match="Unknown value 'crop' for argument image_set"):
        people_cls(tmp_path, image_set="crop")


def test_loadmat_sparse(tmp_path):
    dense = np.array([[0, 1.5, 0], [2, 0, 0], [0, 3, 4]])
    (tmp_path / "s.mat").write_bytes(mat_bytes({"s": Sparse(dense)}, compress=True))
    s = _matlab.loadmat(tmp_path / "s.mat")["s"]
    assert s.shape == (3, 3) and s.nnz == 4 and s.dtype == np.float64
    np.testing.assert_array_equal(s.toarray(), dense)
    broken = bytearray(mat_bytes({"s": Sparse(dense)}))
    broken[broken.index(np.array([0, 1, 3, 4], "<i4").tobytes())] = 9  # a column past the end
    (tmp_path / "broken.mat").write_bytes(bytes(broken))
    with pytest.raises(ValueError, match="inconsistent sparse matrix indices"):
        _matlab.loadmat(tmp_path / "broken.mat")


# ---------------------------------------------------------------- Flickr / CLEVR / Places365 / SBD
def caption_files():
    files = {f"flickr/{n}.jpg": image_bytes(i, fmt="JPEG")
             for i, n in enumerate(("1000_abc", "2000_def", "3000_x"))}
    files["flickr8k.html"] = (
        "<html><table><tr><td><a href='http://x/2000/'>http://x/2000/</a></td>"
        "<td><ul><li>a dog runs</li><li>dog</li></ul></td></tr>"
        "<tr><td><a href='http://x/1000/'>http://x/1000/</a></td><td><ul><li>a cat</li></ul>"
        "</td></tr><tr><td>Image Not Found</td><td><ul><li>lost</li></ul></td></tr></table>"
        "<ul><li>outside</li></ul></html>")
    files["flickr30k.txt"] = ("3000_x.jpg#0\tone\n1000_abc.jpg#0\ttwo\n"
                              "3000_x.jpg#1\tthree\n")
    return files


def test_flickr8k_and_30k(tmp_path):
    write_files(tmp_path, caption_files())
    f8 = datasets.Flickr8k(tmp_path / "flickr", str(tmp_path / "flickr8k.html"))
    assert len(f8) == 2 and f8.ids[0].endswith("1000_abc.jpg")
    assert f8[0][1] == ["a cat"] and f8[1][1] == ["a dog runs", "dog"]
    f30 = datasets.Flickr30k(str(tmp_path / "flickr"), str(tmp_path / "flickr30k.txt"),
                             target_transform=len)
    assert f30.ids == ["1000_abc.jpg", "3000_x.jpg"] and f30[1][1] == 2
    assert f30[0][0].mode == "RGB"


def clevr_places_files():
    base = "clevr/CLEVR_v1.0"
    files = {f"{base}/images/val/CLEVR_val_{i:06d}.png": image_bytes(i) for i in range(2)}
    files[f"{base}/images/test/CLEVR_test_000000.png"] = image_bytes(3)
    files[f"{base}/scenes/CLEVR_val_scenes.json"] = json.dumps({"scenes": [
        {"image_filename": "CLEVR_val_000001.png", "objects": [{}, {}, {}]},
        {"image_filename": "CLEVR_val_000000.png", "objects": [{}]}]})
    files["places/categories_places365.txt"] = "/a/airfield 0\n/a/alley 1\n/b/bar 2\n"
    files["places/places365_val.txt"] = "Places365_val_1.jpg 2\nPlaces365_val_2.jpg 0\n"
    files["places/places365_test.txt"] = "Places365_test_1.jpg\n"
    files["places/val_256/Places365_val_1.jpg"] = image_bytes(4, fmt="JPEG")
    files["places/val_256/Places365_val_2.jpg"] = image_bytes(5, fmt="JPEG")
    files["places/test_256/Places365_test_1.jpg"] = image_bytes(6, fmt="JPEG")
    return files


def places_class(files):
    lists = {k: (name, md5(files[f"places/{name}"].encode()) if f"places/{name}" in files
                 else "0" * 32) for k, (name, _) in datasets.Places365._FILE_LIST_META.items()}
    cats = ("categories_places365.txt", md5(files["places/categories_places365.txt"].encode()))
    return type("Places365", (datasets.Places365,),
                {"_FILE_LIST_META": lists, "_CATEGORIES_META": cats})


def test_clevr_and_places365(tmp_path):
    files = clevr_places_files()
    write_files(tmp_path, files)
    val = datasets.CLEVRClassification(tmp_path, split="val")
    assert val._labels == [1, 3] and val[1][0].mode == "RGB" and "split=val" in repr(val)
    assert datasets.CLEVRClassification(tmp_path, split="test")[0][1] is None
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.CLEVRClassification(tmp_path / "none")
    cls = places_class(files)
    places = cls(tmp_path / "places", split="val", small=True)
    assert places.classes == ["/a/airfield", "/a/alley", "/b/bar"] and places.targets == [2, 0]
    assert places[0][1] == 2 and places.imgs[1][0].endswith("val_256/Places365_val_2.jpg")
    assert cls(tmp_path / "places", split="test", small=True)[0][1] is None
    with pytest.raises(RuntimeError, match=r"The file .*categories_places365.txt does not exist "
                       r"or is corrupted. You can set download=True to download it."):
        datasets.Places365(tmp_path / "places", split="val")  # the real file's checksum
    with pytest.raises(ValueError, match="Unknown value 'train' for argument split"):
        cls(tmp_path / "places", split="train")


def sbd_files():
    seg = np.array([[0, 1, 1], [0, 2, 0]], np.uint8)
    bounds = np.empty((20, 1), dtype=object)
    for k in range(20):
        bounds[k, 0] = Sparse((seg == 1) * (k == 0) + (seg == 2) * (k == 3))
    gtcls = {"Segmentation": seg, "Boundaries": bounds, "CategoriesPresent": np.uint8([[1, 4]])}
    return {"sbd/img/2008_000002.jpg": image_bytes(1, size=(3, 2), fmt="JPEG"),
            "sbd/cls/2008_000002.mat": mat_bytes({"GTcls": gtcls}, compress=True),
            "sbd/train.txt": "2008_000002\n"}, seg


def test_sbdataset(tmp_path):
    files, seg = sbd_files()
    write_files(tmp_path, files)
    ds = datasets.SBDataset(tmp_path / "sbd")
    img, boundaries = ds[0]
    assert img.size == (3, 2) and boundaries.shape == (20, 2, 3)
    np.testing.assert_array_equal(boundaries[0], seg == 1)
    np.testing.assert_array_equal(boundaries[3], seg == 2)
    assert boundaries[1].sum() == 0
    img, mask = datasets.SBDataset(tmp_path / "sbd", mode="segmentation")[0]
    np.testing.assert_array_equal(np.asarray(mask), seg)
    assert "Image set: train\n    Mode: segmentation" in repr(
        datasets.SBDataset(tmp_path / "sbd", mode="segmentation"))
    with pytest.raises(ValueError, match="Unknown value 'edges' for argument mode"):
        datasets.SBDataset(tmp_path / "sbd", mode="edges")


# ---------------------------------------------------------------- Cityscapes / Kitti / WIDERFace
def cityscapes_zips():
    images = {f"leftImg8bit/val/{city}/{city}_000000_00001{i}_leftImg8bit.png": image_bytes(i)
              for city in ("bonn", "ulm") for i in range(2)}
    targets = {}
    for name in images:
        stem = name.split("/")[-1].split("_leftImg8bit")[0]
        city = name.split("/")[2]
        for suffix, mode in (("instanceIds.png", "I"), ("labelIds.png", "L"),
                             ("color.png", "RGB")):
            targets[f"gtFine/val/{city}/{stem}_gtFine_{suffix}"] = image_bytes(
                len(targets), mode="L" if mode == "L" else "RGB")
        targets[f"gtFine/val/{city}/{stem}_gtFine_polygons.json"] = json.dumps(
            {"imgHeight": 5, "objects": [{"label": "car"}]})
    return {"leftImg8bit_trainvaltest.zip": zip_bytes(images),
            "gtFine_trainvaltest.zip": zip_bytes(targets)}


def test_cityscapes_extracts_zips(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found or incomplete. Please make sure"):
        datasets.Cityscapes(tmp_path, split="val")
    write_files(tmp_path, cityscapes_zips())
    ds = datasets.Cityscapes(tmp_path, split="val", target_type=["semantic", "polygon"])
    assert len(ds) == 4 and (tmp_path / "gtFine" / "val" / "ulm").is_dir()
    img, (semantic, polygon) = ds[0]
    assert img.mode == "RGB" and semantic.mode == "L" and polygon["objects"][0]["label"] == "car"
    assert ds.targets[0][0].endswith("_gtFine_labelIds.png")
    assert "Type: ['semantic', 'polygon']" in repr(ds) and ds.classes[7].name == "road"
    with pytest.raises(ValueError, match=r"Unknown value 'test' for argument split if mode is "
                       r"'coarse'. Valid values are \{'train', 'train_extra', 'val'\}."):
        datasets.Cityscapes(tmp_path, split="test", mode="coarse")
    with pytest.raises(ValueError, match="Unknown value 'depth' for argument target_type"):
        datasets.Cityscapes(tmp_path, split="val", target_type="depth")


def kitti_widerface_files():
    files = {f"Kitti/raw/training/image_2/00000{i}.png": image_bytes(i) for i in range(2)}
    files["Kitti/raw/training/label_2/000000.txt"] = (
        "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59\n")
    files["Kitti/raw/training/label_2/000001.txt"] = (
        "Pedestrian 0.50 2 0.2 1 2 3 4 1.8 0.6 0.9 1 2 3 0.5\n"
        "DontCare -1 -1 -10 5 6 7 8 -1 -1 -1 -1000 -1000 -1000 -10\n")
    files["Kitti/raw/testing/image_2/000007.png"] = image_bytes(7)
    base = "widerface"
    for folder in ("WIDER_train", "WIDER_val", "WIDER_test", "wider_face_split"):
        (files.setdefault(f"{base}/{folder}/.keep", b""))
    files[f"{base}/WIDER_val/images/0--Parade/a.jpg"] = image_bytes(1, fmt="JPEG")
    files[f"{base}/WIDER_val/images/1--Handshake/b.jpg"] = image_bytes(2, fmt="JPEG")
    files[f"{base}/WIDER_test/images/0--Parade/c.jpg"] = image_bytes(3, fmt="JPEG")
    files[f"{base}/wider_face_split/wider_face_val_bbx_gt.txt"] = (
        "0--Parade/a.jpg\n2\n1 2 3 4 0 0 0 0 0 0 \n5 6 7 8 2 1 0 1 0 0 \n"
        "1--Handshake/b.jpg\n0\n0 0 0 0 0 0 0 0 0 0 \n")
    files[f"{base}/wider_face_split/wider_face_test_filelist.txt"] = "0--Parade/c.jpg\n"
    return files


def test_kitti_and_widerface(tmp_path):
    write_files(tmp_path, kitti_widerface_files())
    kitti = datasets.Kitti(tmp_path)
    assert len(kitti) == 2
    index = kitti.images.index(str(tmp_path / "Kitti/raw/training/image_2/000001.png"))
    target = kitti[index][1]
    assert [t["type"] for t in target] == ["Pedestrian", "DontCare"]
    assert target[0]["occluded"] == 2 and target[0]["bbox"] == [1.0, 2.0, 3.0, 4.0]
    assert datasets.Kitti(tmp_path, train=False)[0][1] is None
    with pytest.raises(RuntimeError, match="Dataset not found. You may use download=True"):
        datasets.Kitti(tmp_path / "none")
    wider = datasets.WIDERFace(tmp_path, split="val")
    assert len(wider) == 2
    img, ann = wider[0]
    assert img.size == (6, 5) and ann["bbox"].tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert ann["blur"].tolist() == [0, 2] and ann["occlusion"].dtype == ember.int64
    assert wider[1][1]["bbox"].tolist() == [[0, 0, 0, 0]]
    assert datasets.WIDERFace(tmp_path, split="test")[0][1] is None
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use "
                       "download=True to download and prepare it"):
        datasets.WIDERFace(tmp_path / "none")


# ---------------------------------------------------------------- iNaturalist / PhotoTour
def inaturalist_files():
    files = {}
    for i, name in enumerate(["00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax",
                              "00001_Animalia_Chordata_Aves_Passeriformes_Paridae_Parus_major",
                              "00002_Plantae_Tracheophyta_Magnoliopsida_Rosales_Rosaceae_Rosa_x"]):
        for j in range(i + 1):
            files[f"2021_valid/{name}/{j}.jpg"] = image_bytes(i + j, fmt="JPEG")
    for s, sub in (("Aves", "3"), ("Aves", "0"), ("Plantae", "1"), ("Plantae", "2")):
        files[f"2019/{s}/{sub}/x.jpg"] = image_bytes(int(sub), fmt="JPEG")
    return files


def test_inaturalist(tmp_path):
    write_files(tmp_path, inaturalist_files())
    ds = datasets.INaturalist(tmp_path, version="2021_valid", target_type=["full", "family",
                                                                              "kingdom"])
    assert len(ds) == 6 and ds.categories_map[2] == {
        "kingdom": 1, "phylum": 1, "class": 1, "order": 1, "family": 2, "genus": 2}
    cat_id = ds.index[5][0]
    assert ds[5][1] == (2, 2, 1) and cat_id == 2
    assert ds.category_name("family", 1) == "Paridae" and ds.category_name("full", 0).startswith(
        "00000_")
    with pytest.raises(ValueError, match="Invalid category id 9 for genus"):
        ds.category_name("genus", 9)
    old = datasets.INaturalist(tmp_path, version="2019", target_type="super")
    assert old.all_categories == ["Aves/0", "Plantae/1", "Plantae/2", "Aves/3"]
    assert sorted(old[i][1] for i in range(4)) == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="Unknown value 'genus' for argument target_type"):
        datasets.INaturalist(tmp_path, version="2019", target_type="genus")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.INaturalist(tmp_path, version="2018")


def phototour_zip():
    tiles = np.arange(128 * 192, dtype=np.uint32).reshape(128, 192) % 251
    buf = io.BytesIO()
    Image.fromarray(tiles.astype(np.uint8), "L").save(buf, "BMP")
    return zip_bytes({
        "patches0000.bmp": buf.getvalue(),
        "info.txt": "".join(f"{i // 2} 0\n" for i in range(5)),
        "m50_100000_100000_0.txt": "0 0 0 1 0 0 0\n2 1 0 4 2 0 0\n",
    }), tiles.astype(np.uint8)


def test_phototour_download_and_cache(tmp_path, serve):
    archive, tiles = phototour_zip()
    server = serve({"liberty.zip": archive})

    class LocalPhotoTour(datasets.PhotoTour):
        urls = {"liberty": [server.url + "liberty.zip", "liberty.zip", md5(archive)]}
        lens = {"liberty": 5}

    train = LocalPhotoTour(tmp_path, "liberty", download=True)
    assert len(train) == 5 and train.data.dtype == ember.uint8 and train.labels.tolist() == [
        0, 0, 1, 1, 2]
    np.testing.assert_array_equal(train[4].numpy(), tiles[64:128, 64:128])  # 3 per row
    np.testing.assert_array_equal(train[1].numpy(), tiles[0:64, 64:128])
    assert (tmp_path / "liberty.pt").is_file() and not (tmp_path / "liberty.zip").exists()
    test = LocalPhotoTour(tmp_path, "liberty", train=False)
    assert len(test) == 2 and int(test[0][2]) == 1 and int(test[1][2]) == 0
    assert test.matches.tolist() == [[0, 1, 1], [2, 4, 0]] and "Split: Test" in repr(test)


# ---------------------------------------------------------------- optical flow
def flo_bytes(flow):  # flow (2, H, W)
    h, w = flow.shape[1:]
    return b"PIEH" + struct.pack("<ii", w, h) + flow.transpose(1, 2, 0).astype("<f4").tobytes()


def pfm_bytes(data, little=True):  # data (3, H, W), rows top first
    h, w = data.shape[1:]
    body = np.flip(data.transpose(1, 2, 0), axis=0).astype("<f4" if little else ">f4")
    return b"PF\n" + f"{w} {h}\n{-1.0 if little else 1.0}\n".encode() + body.tobytes()


def flow_files():
    rng = np.random.default_rng(7)
    flows = {i: rng.standard_normal((2, 5, 6)).astype(np.float32) for i in range(4)}
    files = {}
    for pass_name in ("clean", "final"):
        for i in range(3):
            files[f"Sintel/training/{pass_name}/alley/frame_{i:04d}.png"] = image_bytes(i)
        files[f"Sintel/test/{pass_name}/cave/frame_0001.png"] = image_bytes(5)
        files[f"Sintel/test/{pass_name}/cave/frame_0002.png"] = image_bytes(6)
    for i in range(2):
        files[f"Sintel/training/flow/alley/frame_{i:04d}.flo"] = flo_bytes(flows[i])
    for i in range(3):
        files[f"FlyingChairs/data/{i:05d}_img1.ppm"] = image_bytes(2 * i, fmt="PPM")
        files[f"FlyingChairs/data/{i:05d}_img2.ppm"] = image_bytes(2 * i + 1, fmt="PPM")
        files[f"FlyingChairs/data/{i:05d}_flow.flo"] = flo_bytes(flows[i])
    files["FlyingChairs/FlyingChairs_train_val.txt"] = "1\n2\n1\n"
    three = {i: rng.standard_normal((3, 5, 6)).astype(np.float32) for i in range(3)}
    for i in range(3):
        files[f"FlyingThings3D/frames_cleanpass/TRAIN/A/0000/left/{i:04d}.png"] = image_bytes(i)
        for direction in ("into_future", "into_past"):
            files[f"FlyingThings3D/optical_flow/TRAIN/A/0000/{direction}/left/{i:04d}.pfm"] = (
                pfm_bytes(three[i], little=direction == "into_future"))
    return files, flows, three


def test_sintel_flyingchairs_flyingthings(tmp_path):
    files, flows, three = flow_files()
    write_files(tmp_path, files)
    sintel = datasets.Sintel(tmp_path, pass_name="both")
    assert len(sintel) == 4
    img1, img2, flow = sintel[1]
    assert img1.mode == "RGB" and flow.dtype == np.float32 and flow.shape == (2, 5, 6)
    np.testing.assert_array_equal(flow, flows[1])
    np.testing.assert_array_equal(sintel[3][2], flows[1])  # the final pass, same flow
    test = datasets.Sintel(tmp_path, split="test")
    assert len(test) == 1 and test[0][2] is None
    chairs = datasets.FlyingChairs(tmp_path)
    assert len(chairs) == 2 and chairs._image_list[1][0].endswith("00002_img1.ppm")
    np.testing.assert_array_equal(chairs[1][2], flows[2])
    assert len(datasets.FlyingChairs(tmp_path, split="val")) == 1
    things = datasets.FlyingThings3D(tmp_path)
    assert len(things) == 4
    np.testing.assert_array_equal(things[0][2], three[0][:2])  # little-endian, into the future
    np.testing.assert_array_equal(things[2][2], three[1][:2])  # big-endian, into the past
    assert things._image_list[2][0].endswith("0001.png")
    joint = datasets.FlyingChairs(tmp_path, transforms=lambda a, b, f, m: (1, 2, f.sum(), m))
    assert joint[0] == (1, 2, flows[0].sum())
    assert len(2 * chairs) == 4
    with pytest.raises(ValueError, match="Unknown value 'top' for argument camera"):
        datasets.FlyingThings3D(tmp_path, camera="top")
    with pytest.raises(FileNotFoundError, match="FlyingChairs_train_val.txt file was not found"):
        datasets.FlyingChairs(tmp_path / "none")
    (tmp_path / "bad.flo").write_bytes(b"XXXX" + bytes(8))
    with pytest.raises(ValueError, match="Magic number incorrect. Invalid .flo file"):
        datasets.Sintel._read_flow(sintel, str(tmp_path / "bad.flo"))


def test_sbu_download_skips_missing_photos(tmp_path, serve):
    server = serve({})  # started first: the URL list names its address
    photos = {"p1.jpg": image_bytes(1, fmt="JPEG"), "p3.jpg": image_bytes(3, fmt="JPEG")}
    urls = "".join(f"{server.url}photos/p{i}.jpg\n" for i in (1, 2, 3))
    archive = tar_bytes({"dataset/SBU_captioned_photo_dataset_urls.txt": urls,
                         "dataset/SBU_captioned_photo_dataset_captions.txt": "one\ntwo\nthree\n"},
                        "w:gz")
    server.files.update({"sbu.tar.gz": archive, **{f"photos/{k}": v for k, v in photos.items()}})

    class LocalSBU(datasets.SBU):
        url, filename, md5_checksum = server.url + "sbu.tar.gz", "sbu.tar.gz", md5(archive)

    ds = LocalSBU(tmp_path)  # download defaults to True; p2 is gone
    assert ds.photos == ["p1.jpg", "p3.jpg"] and ds.captions == ["one", "three"]
    assert ds[1][1] == "three" and ds[0][0].mode == "RGB"
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.SBU(tmp_path, download=False)


def png_rgb16(values: np.ndarray) -> bytes:
    """A 16-bit RGB PNG of ``values`` (uint16 ``(H, W, 3)``), each row with the next of the
    five PNG filters in turn."""
    h, w, _ = values.shape
    raw = values.astype(">u2").view(np.uint8).reshape(h, w * 6).astype(np.int32)
    lines, prev = [], np.zeros(w * 6, np.int32)
    for y in range(h):
        kind, cur = y % 5, raw[y]
        left = np.concatenate([np.zeros(6, np.int32), cur[:-6]])
        up_left = np.concatenate([np.zeros(6, np.int32), prev[:-6]])
        if kind == 0:
            pred = 0
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = prev
        elif kind == 3:
            pred = (left + prev) >> 1
        else:
            p = left + prev - up_left
            pa, pb, pc = np.abs(p - left), np.abs(p - prev), np.abs(p - up_left)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, up_left))
        lines.append(bytes([kind]) + ((cur - pred) & 0xFF).astype(np.uint8).tobytes())
        prev = cur

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"".join(lines))) + chunk(b"IEND", b""))


def kitti_flow_files():
    rng = np.random.default_rng(8)
    flows = [rng.integers(0, 65536, (6, 7, 3), dtype=np.uint16) for _ in range(3)]
    for f in flows:
        f[..., 2] = rng.integers(0, 2, (6, 7))
    files = {}
    for i in range(2):
        files[f"KittiFlow/training/image_2/{i:06d}_10.png"] = image_bytes(2 * i)
        files[f"KittiFlow/training/image_2/{i:06d}_11.png"] = image_bytes(2 * i + 1)
        files[f"KittiFlow/training/flow_occ/{i:06d}_10.png"] = png_rgb16(flows[i])
    files["KittiFlow/testing/image_2/000009_10.png"] = image_bytes(9)
    files["KittiFlow/testing/image_2/000009_11.png"] = image_bytes(10)
    for i in range(3):
        files[f"hd1k/hd1k_input/image_2/000001_{i:04d}.png"] = image_bytes(i)
        files[f"hd1k/hd1k_flow_gt/flow_occ/000001_{i:04d}.png"] = png_rgb16(flows[i])
    return files, flows


def test_kitti_flow_and_hd1k_16bit_png(tmp_path):
    files, flows = kitti_flow_files()
    write_files(tmp_path, files)
    with Image.open(tmp_path / "KittiFlow/training/flow_occ/000001_10.png") as img:
        high_bytes = np.asarray(img)  # Pillow keeps only the high byte of each value
    np.testing.assert_array_equal(high_bytes, flows[1] >> 8)
    kitti = datasets.KittiFlow(tmp_path)
    img1, img2, flow, valid = kitti[1]
    assert flow.dtype == np.float32 and flow.shape == (2, 6, 7) and valid.dtype == bool
    np.testing.assert_array_equal(flow, (flows[1][..., :2].transpose(2, 0, 1) - 2.0**15) / 64)
    np.testing.assert_array_equal(valid, flows[1][..., 2] != 0)
    assert datasets.KittiFlow(tmp_path, split="test")[0][2:] == (None, None)
    hd1k = datasets.HD1K(tmp_path)
    assert len(hd1k) == 2 and hd1k._flow_list[1].endswith("000001_0001.png")
    with pytest.raises(FileNotFoundError, match="Could not find the HD1K images"):
        datasets.HD1K(tmp_path, split="test")


# ---------------------------------------------------------------- stereo matching
def png16(values: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(values.astype(np.uint16)).save(buf, "PNG")  # 16-bit grayscale
    return buf.getvalue()


def stereo_files():
    rng = np.random.default_rng(9)
    disp = {i: rng.uniform(1, 50, (1, 5, 6)).astype(np.float32) for i in range(4)}
    d16 = {i: rng.integers(1, 60000, (5, 6)).astype(np.uint16) for i in range(4)}
    files = {}

    def pfm1(a):  # one channel
        h, w = a.shape[1:]
        return b"Pf\n" + f"{w} {h}\n-1.0\n".encode() + np.flip(a[0], 0).astype("<f4").tobytes()

    for i in range(2):  # KITTI 2012 / 2015
        files[f"Kitti2012/training/colored_0/{i:06d}_10.png"] = image_bytes(i)
        files[f"Kitti2012/training/colored_1/{i:06d}_10.png"] = image_bytes(i + 1)
        files[f"Kitti2012/training/disp_noc/{i:06d}_10.png"] = png16(d16[i])
        files[f"Kitti2015/training/image_2/{i:06d}_10.png"] = image_bytes(i)
        files[f"Kitti2015/training/image_3/{i:06d}_10.png"] = image_bytes(i + 2)
        files[f"Kitti2015/training/disp_occ_0/{i:06d}_10.png"] = png16(d16[i])
        files[f"Kitti2015/training/disp_occ_1/{i:06d}_10.png"] = png16(d16[i + 1])
        files[f"Kitti2015/testing/image_2/{i:06d}_10.png"] = image_bytes(i)
        files[f"Kitti2015/testing/image_3/{i:06d}_10.png"] = image_bytes(i + 2)
    for scene in ("a", "b"):
        base = f"carla-highres/trainingF/{scene}"
        files.update({f"{base}/im0.png": image_bytes(1), f"{base}/im1.png": image_bytes(2),
                      f"{base}/disp0GT.pfm": pfm1(-disp[0]), f"{base}/disp1GT.pfm": pfm1(disp[1])})
        base = f"Middlebury2014/train/Piano-{'perfect' if scene == 'a' else 'imperfect'}"
        inf = disp[2].copy()
        inf[0, 0, 0] = np.inf
        files.update({f"{base}/im0.png": image_bytes(3), f"{base}/im1.png": image_bytes(4),
                      f"{base}/disp0.pfm": pfm1(inf), f"{base}/disp1.pfm": pfm1(disp[3])})
        base = f"ETH3D/two_view_training/{scene}"
        files.update({f"{base}/im0.png": image_bytes(5), f"{base}/im1.png": image_bytes(6)})
        gt = f"ETH3D/two_view_training_gt/{scene}"
        files.update({f"{gt}/disp0GT.pfm": pfm1(disp[0]),
                      f"{gt}/mask0nocc.png": image_bytes(7, mode="L")})
        base = f"InStereo2k/train/{scene}"
        files.update({f"{base}/left.png": image_bytes(8), f"{base}/right.png": image_bytes(9),
                      f"{base}/left_disp.png": png16(d16[2]),
                      f"{base}/right_disp.png": png16(d16[3])})
    for s in ("shapenet", "reflective", "tree", "hole"):
        files.update({f"CREStereo/{s}/x_left.jpg": image_bytes(1, fmt="JPEG"),
                      f"CREStereo/{s}/x_right.jpg": image_bytes(2, fmt="JPEG"),
                      f"CREStereo/{s}/x_left.disp.png": png16(d16[0]),
                      f"CREStereo/{s}/x_right.disp.png": png16(d16[1])})
    ft = "FallingThings/single/kitchen/0"
    files.update({f"{ft}/000.left.jpg": image_bytes(1, fmt="JPEG"),
                  f"{ft}/000.right.jpg": image_bytes(2, fmt="JPEG"),
                  f"{ft}/000.left.depth.png": png16(d16[2]),
                  f"{ft}/000.right.depth.png": png16(d16[3]),
                  f"{ft}/_camera_settings.json": json.dumps(
                      {"camera_settings": [{"intrinsic_settings": {"fx": 768.2}}]})})
    sf = "SceneFlow/Monkaa"
    files.update({f"{sf}/frames_cleanpass/scene/left/0001.png": image_bytes(1),
                  f"{sf}/frames_cleanpass/scene/right/0001.png": image_bytes(2),
                  f"{sf}/disparity/scene/left/0001.pfm": pfm1(-disp[1]),
                  f"{sf}/disparity/scene/right/0001.pfm": pfm1(disp[2])})
    st = "Sintel/training"
    files.update({f"{st}/final_left/alley/frame_0001.png": image_bytes(1),
                  f"{st}/final_right/alley/frame_0001.png": image_bytes(2),
                  f"{st}/disparities/alley/frame_0001.png": image_bytes(3),
                  f"{st}/occlusions/alley/frame_0001.png": image_bytes(4, mode="L"),
                  f"{st}/outofframe/alley/frame_0001.png": image_bytes(5, mode="L")})
    return files, disp, d16


def test_stereo_matching_datasets(tmp_path):
    files, disp, d16 = stereo_files()
    write_files(tmp_path, files)
    k12 = datasets.Kitti2012Stereo(tmp_path)
    left, right, d, mask = k12[1]
    assert left.mode == "RGB" and mask is None and d.shape == (1, 5, 6)
    np.testing.assert_array_equal(d[0], d16[1] / 256.0)
    k15 = datasets.Kitti2015Stereo(tmp_path, split="test")
    assert len(k15) == 2 and k15[0][2:] == (None, None)
    carla = datasets.CarlaStereo(tmp_path)
    assert len(carla) == 2 and len(carla[0]) == 3
    np.testing.assert_array_equal(carla[0][2], disp[0])  # |-disp| from a little-endian pfm
    midd = datasets.Middlebury2014Stereo(tmp_path, calibration="both")
    assert len(midd) == 2
    _, _, d, valid = midd[0]
    assert d[0, 0, 0] == 0 and not valid[0, 0] and valid[1:].all()
    with pytest.raises(ValueError, match="Split 'test' has only no calibration settings"):
        datasets.Middlebury2014Stereo(tmp_path, split="test")
    eth = datasets.ETH3DStereo(tmp_path)
    assert eth[1][3].dtype == bool and eth._disparities[0][1] is None
    inst = datasets.InStereo2k(tmp_path)
    np.testing.assert_allclose(inst[0][2][0], d16[2] / 1024.0)
    cre = datasets.CREStereo(tmp_path)
    assert len(cre) == 4 and cre[0][3] is None
    fall = datasets.FallingThingsStereo(tmp_path)
    np.testing.assert_allclose(fall[0][2][0], 6 * 768.2 * 100 / d16[2].astype(np.float32),
                               rtol=1e-6)
    sf = datasets.SceneFlowStereo(tmp_path, variant="Monkaa")
    np.testing.assert_array_equal(sf[0][2], disp[1])
    sintel = datasets.SintelStereo(tmp_path)
    _, _, d, valid = sintel[0]
    assert d.shape == (1, 5, 6) and valid.shape == (5, 6)
    with pytest.raises(FileNotFoundError, match="Could not find any files matching"):
        datasets.InStereo2k(tmp_path, split="test")
