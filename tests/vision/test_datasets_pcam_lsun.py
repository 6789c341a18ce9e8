"""ember.vision.datasets.PCAM (HDF5 files read with h5py) and LSUN / LSUNClass (LMDB databases
read with lmdb), each on a tiny fake copy written here: items, targets, splits and classes,
torchvision's error messages, DataLoader workers, PCAM's download from a local HTTP server, and
LSUN writing no key cache. tests/parity/vision/test_datasets_pcam_lsun.py compares the same
fixtures with torchvision."""

import contextlib
import gzip
import hashlib
import http.server
import io
import multiprocessing
import operator
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from testutils import local_http_server

import ember
from ember.data import DataLoader
from ember.vision import datasets, transforms

# ---------------------------------------------------------------- fixtures' writers
PCAM_SIZES = {"train": 5, "test": 3, "val": 4}


def pcam_arrays(split: str, n: int | None = None):
    """``(images, targets)`` of a fake PCAM split: uint8 N x 96 x 96 x 3 and N x 1 x 1 x 1."""
    n = PCAM_SIZES[split] if n is None else n
    rng = np.random.default_rng(sorted(PCAM_SIZES).index(split))
    x = rng.integers(0, 256, (n, 96, 96, 3), dtype=np.uint8)
    y = rng.integers(0, 2, (n, 1, 1, 1), dtype=np.uint8)
    y[0, 0, 0, 0], y[-1, 0, 0, 0] = 0, 1  # both classes in every split
    return x, y


def write_h5(path: Path, key: str, data: np.ndarray) -> None:
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        f.create_dataset(key, data=data)


def write_pcam(root: Path, splits=("train", "test", "val")):
    """The h5 files of ``splits`` under ``root/pcam``; returns ``{split: (images, targets)}``."""
    out = {}
    for split in splits:
        x, y = out[split] = pcam_arrays(split)
        files = datasets.PCAM._FILES[split]
        write_h5(root / "pcam" / files["images"][0], "x", x)
        write_h5(root / "pcam" / files["targets"][0], "y", y)
    return out


def encode(pixels: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    return buf.getvalue()


def decode(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"))


def write_lmdb(path: Path, records: dict) -> None:
    import lmdb

    path.parent.mkdir(parents=True, exist_ok=True)
    env = lmdb.open(os.fspath(path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for key, value in records.items():
            txn.put(key, value)
    env.close()


def write_lsun_class(root: Path, name: str, n: int, fmt: str = "PNG", seed: int = 0):
    """``root/<name>_lmdb`` holding ``n`` images keyed by a SHA-1 hex digest, as LSUN's are;
    returns ``[(key, image bytes, RGB pixels)]`` in the database's (sorted) key order."""
    rng = np.random.default_rng(seed)
    records = {}
    for i in range(n):
        pixels = rng.integers(0, 256, (5 + i, 7, 3), dtype=np.uint8)
        key = hashlib.sha1(f"{name}/{i}".encode()).hexdigest().encode()
        records[key] = encode(pixels, fmt)
    write_lmdb(root / f"{name}_lmdb", records)
    return [(k, records[k], decode(records[k])) for k in sorted(records)]


#: a list of classes across several dbs, in three image formats, one db empty
LSUN_CLASSES = {"bedroom_train": (3, "PNG"), "tower_val": (0, "PNG"),
                "church_outdoor_train": (2, "JPEG"), "kitchen_val": (4, "WEBP")}


def write_lsun(root: Path, classes=LSUN_CLASSES):
    """The dbs of ``classes`` (name -> (count, format)); returns name -> write_lsun_class's."""
    return {name: write_lsun_class(root, name, n, fmt, seed)
            for seed, (name, (n, fmt)) in enumerate(classes.items())}


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


# ---------------------------------------------------------------- PCAM
@pytest.mark.parametrize("split", ["train", "test", "val"])
def test_pcam_split_items(tmp_path, split):
    pytest.importorskip("h5py")
    data = write_pcam(tmp_path)
    ds = datasets.PCAM(tmp_path, split=split)
    x, y = data[split]
    assert len(ds) == len(x) == PCAM_SIZES[split]
    for i in range(len(ds)):
        img, target = ds[i]
        assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (96, 96)
        np.testing.assert_array_equal(np.asarray(img), x[i])
        assert type(target) is int and target == int(y[i, 0, 0, 0])
    assert [ds[i][1] for i in range(len(ds))] == y.reshape(-1).tolist()
    np.testing.assert_array_equal(np.asarray(ds[-1][0]), x[-1])  # h5py indexes from the end
    with pytest.raises(IndexError):
        ds[len(ds)]


def test_pcam_transforms_and_str_root(tmp_path):
    pytest.importorskip("h5py")
    x, y = write_pcam(tmp_path, ["val"])["val"]
    ds = datasets.PCAM(str(tmp_path), split="val", transform=transforms.PILToTensor(),
                       target_transform=lambda t: t + 10)
    img, target = ds[2]
    assert isinstance(img, ember.Tensor) and img.shape == (3, 96, 96)
    np.testing.assert_array_equal(img.cpu().numpy(), x[2].transpose(2, 0, 1))
    assert target == int(y[2, 0, 0, 0]) + 10
    assert "Number of datapoints: 4" in repr(ds) and f"Root location: {tmp_path}" in repr(ds)


def test_pcam_arguments_and_missing_files(tmp_path):
    pytest.importorskip("h5py")
    with pytest.raises(ValueError) as e:
        datasets.PCAM(tmp_path, split="valid")
    assert str(e.value) == ("Unknown value 'valid' for argument split. "
                            "Valid values are {'train', 'test', 'val'}.")
    with pytest.raises(ValueError, match=r"^Expected type str for argument split, but got "
                                         r"type <class 'int'>\.$"):
        datasets.PCAM(tmp_path, split=1)
    with pytest.raises(RuntimeError) as e:
        datasets.PCAM(tmp_path)
    assert str(e.value) == "Dataset not found. You can use download=True to download it"
    write_pcam(tmp_path, ["test"])
    (tmp_path / "pcam" / datasets.PCAM._FILES["test"]["targets"][0]).unlink()
    with pytest.raises(RuntimeError, match="^Dataset not found. You can use download=True"):
        datasets.PCAM(tmp_path, split="test")  # the images alone are not the dataset


def test_pcam_without_h5py(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # `import h5py` now fails
    with pytest.raises(RuntimeError) as e:
        datasets.PCAM(tmp_path)
    assert str(e.value).startswith("h5py is not found. This dataset needs to have h5py "
                                   "installed: please run pip install h5py")
    assert "ember-vision[pcam]" in str(e.value)


def test_pcam_files_are_opened_once_per_process_and_not_pickled(tmp_path):
    pytest.importorskip("h5py")
    x, _ = write_pcam(tmp_path, ["test"])["test"]
    ds = datasets.PCAM(tmp_path, split="test")
    assert ds._handles == {}  # nothing opened before the first read
    _ = ds[0], len(ds)
    handles = dict(ds._handles)
    assert set(handles) == {"images", "targets"} and ds._handles_pid == os.getpid()
    _ = ds[1]
    assert all(ds._handles[k] is handles[k] for k in handles)  # kept open, not reopened
    copy = pickle.loads(pickle.dumps(ds))  # as a spawn worker receives it
    assert copy._handles == {} and copy._handles_pid is None
    np.testing.assert_array_equal(np.asarray(copy[2][0]), x[2])
    assert ds._handles["images"].id.valid  # the original's handles stay usable


class _PCAMWithPid(datasets.PCAM):
    """Items carry the pid that read them and the pid that opened the files used."""

    def __getitem__(self, idx):
        img, target = super().__getitem__(idx)
        return img, target, os.getpid(), self._handles_pid


def test_pcam_dataloader_workers_open_their_own_files(tmp_path):
    pytest.importorskip("h5py")
    x, y = write_pcam(tmp_path, ["train"])["train"]
    ds = _PCAMWithPid(tmp_path, split="train", transform=transforms.PILToTensor())
    ds[0]  # the parent opens the files before the workers fork
    parent_handles = dict(ds._handles)
    it = iter(DataLoader(ds, batch_size=2, num_workers=2))
    workers = list(it._workers)
    batches = list(it)
    images = np.concatenate([b[0].cpu().numpy() for b in batches])
    np.testing.assert_array_equal(images, x.transpose(0, 3, 1, 2))
    assert sum((b[1].tolist() for b in batches), []) == y.reshape(-1).tolist()
    readers = {p for b in batches for p in b[2].tolist()}
    openers = {p for b in batches for p in b[3].tolist()}
    assert readers == openers == {w.pid for w in workers}
    assert os.getpid() not in readers
    for w in workers:  # the workers end with the iteration
        w.join(30)
    assert not any(w.is_alive() for w in workers)
    del it
    assert not [p for p in multiprocessing.active_children() if p in workers]
    # the parent's handles were neither replaced nor closed by the workers
    assert ds._handles_pid == os.getpid() and ds._handles == parent_handles
    np.testing.assert_array_equal(ds[4][0].cpu().numpy(), x[4].transpose(2, 0, 1))


def pcam_archives(split: str, tmp_path: Path) -> dict:
    """``{file name: gzipped h5 bytes}`` of a fake split, as Google Drive serves them."""
    src = tmp_path / "src"
    write_pcam(src, [split])
    return {name + ".gz": gzip.compress((src / "pcam" / name).read_bytes(), mtime=0)
            for name, _, _ in datasets.PCAM._FILES[split].values()}


def local_pcam(archives: dict, url: str, md5s: dict | None = None):
    """PCAM with Drive ids ``id-<file name>``, the md5s of ``archives`` (or ``md5s``), and
    ``drive_url`` pointing at ``url``."""
    files = {
        split: {kind: (name, f"id-{name}",
                       (md5s or {}).get(name + ".gz")
                       or hashlib.md5(archives.get(name + ".gz", b"")).hexdigest())
                for kind, (name, _, _) in kinds.items()}
        for split, kinds in datasets.PCAM._FILES.items()
    }
    return type("LocalPCAM", (datasets.PCAM,), {"_FILES": files, "drive_url": url + "{id}"})


def test_pcam_download(tmp_path, serve):
    pytest.importorskip("h5py")
    archives = pcam_archives("val", tmp_path)
    server = serve({f"id-{name[:-3]}": body for name, body in archives.items()})
    cls = local_pcam(archives, server.url)
    ds = cls(tmp_path / "data", split="val", download=True)
    x, y = pcam_arrays("val")
    assert len(ds) == 4 and [ds[i][1] for i in range(4)] == y.reshape(-1).tolist()
    np.testing.assert_array_equal(np.asarray(ds[3][0]), x[3])
    assert sorted(server.hits) == sorted(f"/id-{n[:-3]}" for n in archives)
    folder = tmp_path / "data" / "pcam"
    names = {p.name for p in folder.iterdir() if not p.name.endswith(".lock")}  # hub's locks
    assert names == set(archives) | {n[:-3] for n in archives}  # .gz kept (as torchvision)
    n_hits = len(server.hits)
    cls(tmp_path / "data", split="val", download=True)
    assert len(server.hits) == n_hits  # already there: nothing fetched
    with pytest.raises(RuntimeError, match="^Dataset not found"):
        cls(tmp_path / "data", split="train")  # download=False fetches nothing
    assert len(server.hits) == n_hits


def test_pcam_download_rejects_a_corrupted_file(tmp_path, serve):
    pytest.importorskip("h5py")
    archives = pcam_archives("test", tmp_path)
    good = {name: hashlib.md5(body).hexdigest() for name, body in archives.items()}
    images = datasets.PCAM._FILES["test"]["images"][0] + ".gz"
    corrupted = dict(archives)
    corrupted[images] = archives[images][:-1] + bytes([archives[images][-1] ^ 1])
    server = serve({f"id-{name[:-3]}": body for name, body in corrupted.items()})
    cls = local_pcam(corrupted, server.url, md5s=good)
    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        cls(tmp_path / "data", split="test", download=True)
    assert not (tmp_path / "data" / "pcam" / images[:-3]).exists()  # nothing decompressed
    with pytest.raises(RuntimeError, match="^Dataset not found"):
        cls(tmp_path / "data", split="test")


# ---------------------------------------------------------------- LSUN
def assert_lsun_item(item, pixels, target):
    img, t = item
    assert isinstance(img, Image.Image) and img.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(img), pixels)
    assert t == target and type(t) is type(target)


def test_lsun_class_reads_every_image_in_key_order(tmp_path):
    pytest.importorskip("lmdb")
    written = write_lsun_class(tmp_path, "bedroom_train", 4, "PNG")
    db = datasets.LSUNClass(tmp_path / "bedroom_train_lmdb")  # a Path too
    assert len(db) == 4 and db.keys == [k for k, _, _ in written]
    for i, (_, _, pixels) in enumerate(written):
        assert_lsun_item(db[i], pixels, None)
    assert_lsun_item(db[-1], written[-1][2], None)
    with pytest.raises(IndexError):
        db[4]
    db = datasets.LSUNClass(str(tmp_path / "bedroom_train_lmdb"),
                            transform=lambda img: img.size, target_transform=lambda t: [t])
    assert db[2] == (written[2][2].shape[1::-1], [None])


def test_lsun_targets_across_dbs_and_index_boundaries(tmp_path):
    pytest.importorskip("lmdb")
    written = write_lsun(tmp_path)
    classes = list(LSUN_CLASSES)
    ds = datasets.LSUN(tmp_path, classes=classes)
    assert ds.classes == classes and [len(db) for db in ds.dbs] == [3, 0, 2, 4]
    assert ds.indices == [3, 3, 5, 9] and len(ds) == 9
    expected = [(pixels, target) for target, name in enumerate(classes)
                for _, _, pixels in written[name]]
    assert [t for _, t in expected] == [0, 0, 0, 2, 2, 3, 3, 3, 3]
    for i, (pixels, target) in enumerate(expected):
        assert_lsun_item(ds[i], pixels, target)  # PNG and lossless WebP exact, JPEG as decoded
    for i in (-1, -4, -9):
        assert_lsun_item(ds[i], *expected[9 + i])
    for i in (9, 10, -10):
        with pytest.raises(IndexError, match="list index out of range"):
            ds[i]
    # one class: the same images with target 0; both datasets share the open database (lmdb
    # refuses to open one twice in a process, which torchvision's second dataset runs into)
    single = datasets.LSUN(str(tmp_path), classes=["kitchen_val"])
    assert len(single) == 4 and single.indices == [4]
    assert single.dbs[0].env is ds.dbs[3].env
    assert_lsun_item(single[3], written["kitchen_val"][3][2], 0)


def test_lsun_transforms_and_repr(tmp_path):
    pytest.importorskip("lmdb")
    written = write_lsun(tmp_path, {"bridge_val": (2, "PNG"), "tower_val": (1, "PNG")})
    ds = datasets.LSUN(tmp_path, classes=("bridge_val", "tower_val"),
                       transform=transforms.PILToTensor(),
                       target_transform=lambda t: ["bridge", "tower"][t])
    img, target = ds[2]
    assert target == "tower" and isinstance(img, ember.Tensor)
    np.testing.assert_array_equal(img.cpu().numpy(), written["tower_val"][0][2].transpose(2, 0, 1))
    assert all(db.transform is ds.transform and db.target_transform is None for db in ds.dbs)
    assert repr(ds).splitlines()[:4] == [
        "Dataset LSUN", "    Number of datapoints: 3", f"    Root location: {tmp_path}",
        "    Classes: ['bridge_val', 'tower_val']"]


@pytest.mark.parametrize("option", ["train", "val"])
def test_lsun_split_names_load_every_category(tmp_path, option):
    pytest.importorskip("lmdb")
    categories = ["bedroom", "bridge", "church_outdoor", "classroom", "conference_room",
                  "dining_room", "kitchen", "living_room", "restaurant", "tower"]
    names = [f"{c}_{option}" for c in categories]
    written = write_lsun(tmp_path, {name: (1 + i % 2, "PNG") for i, name in enumerate(names)})
    ds = datasets.LSUN(tmp_path, classes=option)
    assert ds.classes == names and len(ds) == 15
    assert ds[14][1] == 9 and ds[2][1] == 1 and ds[3][1] == 2
    assert_lsun_item(ds[14], written[f"tower_{option}"][1][2], 9)


def test_lsun_test_split(tmp_path):
    pytest.importorskip("lmdb")
    written = write_lsun(tmp_path, {"test": (2, "PNG")})
    ds = datasets.LSUN(tmp_path, classes="test")
    assert ds.classes == ["test"] and len(ds) == 2
    assert_lsun_item(ds[1], written["test"][1][2], 0)


CATEGORIES_TEXT = ("'bedroom', 'bridge', 'church_outdoor', 'classroom', 'conference_room', "
                   "'dining_room', 'kitchen', 'living_room', 'restaurant', 'tower'")


def unknown_class(category: str) -> str:
    return f"Unknown value '{category}' for LSUN class. Valid values are {{{CATEGORIES_TEXT}}}."


#: classes -> torchvision 0.29's ValueError, word for word
LSUN_CLASS_ERRORS = {
    "sofa_train": unknown_class(""),  # a string that is no option is a list of its letters
    ("sofa_train",): unknown_class("sofa"),
    ("bedroom_train", "church_outdoor_foo"): "Unknown value 'foo' for postfix. "
    "Valid values are {'train', 'val', 'test'}.",
    ("bedroom",): unknown_class(""),
    ("test",): unknown_class(""),
    ("bedroom_train", 3): "Expected type str, but got type <class 'int'>.",
    5: "Expected type str or Iterable for argument classes, but got type <class 'int'>.",
    None: "Expected type str or Iterable for argument classes, but got type <class 'NoneType'>.",
}


@pytest.mark.parametrize("classes", list(LSUN_CLASS_ERRORS), ids=str)
def test_lsun_class_errors(tmp_path, monkeypatch, classes):
    monkeypatch.setitem(sys.modules, "lmdb", None)  # the classes are checked before any db
    with pytest.raises(ValueError) as e:
        datasets.LSUN(tmp_path, classes=list(classes) if isinstance(classes, tuple) else classes)
    assert str(e.value) == LSUN_CLASS_ERRORS[classes]


def test_lsun_missing_db_and_missing_lmdb(tmp_path, monkeypatch):
    lmdb = pytest.importorskip("lmdb")
    write_lsun(tmp_path, {"bedroom_val": (1, "PNG")})
    with pytest.raises(lmdb.Error, match="kitchen_val_lmdb: No such file or directory"):
        datasets.LSUN(tmp_path, classes=["bedroom_val", "kitchen_val"])
    monkeypatch.setitem(sys.modules, "lmdb", None)
    for make in (lambda: datasets.LSUN(tmp_path, classes=["bedroom_val"]),
                 lambda: datasets.LSUNClass(tmp_path / "bedroom_val_lmdb")):
        with pytest.raises(ModuleNotFoundError, match="pip install lmdb") as e:
            make()
        assert e.value.name == "lmdb" and "ember-vision[lsun]" in str(e.value)


def test_lsun_writes_no_key_cache(tmp_path, monkeypatch):
    pytest.importorskip("lmdb")
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    written = write_lsun(data, {"bedroom_train": (2, "PNG"), "bridge_train": (1, "PNG")})
    before = {p: p.stat().st_mtime_ns for p in data.rglob("*")}
    for _ in range(2):  # torchvision writes its pickle on the first and loads it on the second
        ds = datasets.LSUN(data, classes=["bedroom_train", "bridge_train"])
        assert_lsun_item(ds[2], written["bridge_train"][0][2], 1)
    assert list(cwd.iterdir()) == []
    cache = "_cache_" + "".join(c for c in str(data / "bedroom_train_lmdb") if c.isalpha())
    assert not os.path.exists(cache)
    assert {p: p.stat().st_mtime_ns for p in data.rglob("*")} == before  # the dbs untouched


def test_lsun_keys_follow_the_database(tmp_path):
    pytest.importorskip("lmdb")
    write_lsun(tmp_path, {"bedroom_train": (2, "PNG")})
    assert len(datasets.LSUNClass(tmp_path / "bedroom_train_lmdb")) == 2
    more = write_lsun_class(tmp_path, "bedroom_train", 3, "PNG", seed=7)  # same path, new db
    db = datasets.LSUNClass(tmp_path / "bedroom_train_lmdb")
    assert len(db) == 3 and db.keys == [k for k, _, _ in more]  # no stale cache
    assert_lsun_item(db[2], more[2][2], None)


class _LSUNWithPid(datasets.LSUN):
    def __getitem__(self, index):
        img, target = super().__getitem__(index)
        return img, target, os.getpid(), self.dbs[target]._env_pid


def test_lsun_dataloader_workers_open_their_own_environment(tmp_path):
    pytest.importorskip("lmdb")
    write_lsun(tmp_path, {"bedroom_val": (3, "PNG"), "bridge_val": (3, "PNG")})
    ds = _LSUNWithPid(tmp_path, classes=["bedroom_val", "bridge_val"],
                      transform=operator.attrgetter("height"))  # picklable
    parent_envs = [db.env for db in ds.dbs]
    it = iter(DataLoader(ds, batch_size=3, num_workers=2))
    workers = list(it._workers)
    batches = list(it)
    assert sum((b[0].tolist() for b in batches), []) == [
        ds.dbs[t][i][0] for t in (0, 1) for i in range(3)]
    assert sum((b[1].tolist() for b in batches), []) == [0, 0, 0, 1, 1, 1]
    readers = {p for b in batches for p in b[2].tolist()}
    openers = {p for b in batches for p in b[3].tolist()}
    assert readers == openers == {w.pid for w in workers}
    for w in workers:
        w.join(30)
    assert not any(w.is_alive() for w in workers)
    assert [db.env for db in ds.dbs] == parent_envs
    copy = pickle.loads(pickle.dumps(ds))  # as a spawn worker receives it
    assert copy.dbs[0]._env is None and copy[4][:2] == ds[4][:2]
