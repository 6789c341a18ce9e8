"""ember.vision.datasets: IDX/CIFAR/folder/fake/digits datasets, downloads from a local server,
and safe archive extraction."""

import contextlib
import gzip
import hashlib
import http.server
import io
import os
import pickle
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from testutils import local_http_server

import ember
from ember.vision import datasets
from ember.vision.datasets import utils as dsutils

SUBSET = Path(__file__).parent / "data" / "fashion_mnist_subset"


# ---------------------------------------------------------------- helpers
def idx_bytes(arr: np.ndarray) -> bytes:
    return (
        bytes([0, 0, 8, arr.ndim])
        + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
        + arr.tobytes()
    )


def make_idx_split(rng, n):
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n).astype(
        np.uint8
    )


def write_mnist_raw(raw: Path, gz: bool = False, n_train=6, n_test=4, seed=0):
    rng = np.random.default_rng(seed)
    raw.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        x, y = make_idx_split(rng, n)
        out[split] = (x, y)
        for kind, arr in (("images-idx3", x), ("labels-idx1", y)):
            name = raw / f"{split}-{kind}-ubyte"
            if gz:
                (raw / (name.name + ".gz")).write_bytes(gzip.compress(idx_bytes(arr), mtime=0))
            else:
                name.write_bytes(idx_bytes(arr))
    return out


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class FileServer:
    """``files`` (name -> bytes) and the paths requested, for a ``local_http_server``."""

    def __init__(self, files):
        self.files, self.hits = files, []
        self.url = ""  # http://127.0.0.1:PORT/ once served

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


# ---------------------------------------------------------------- MNIST family
def test_mnist_reads_idx_files(tmp_path):
    data = write_mnist_raw(tmp_path / "MNIST" / "raw")
    train = datasets.MNIST(str(tmp_path))
    test = datasets.MNIST(tmp_path, train=False)
    assert len(train) == 6 and len(test) == 4
    assert train.data.dtype == ember.uint8 and train.data.shape == (6, 28, 28)
    assert train.targets.dtype == ember.int64
    np.testing.assert_array_equal(test.data.numpy(), data["t10k"][0])
    img, label = train[2]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
    assert isinstance(label, int) and label == data["train"][1][2]
    np.testing.assert_array_equal(np.asarray(img), data["train"][0][2])
    assert train.class_to_idx["3 - three"] == 3
    assert (
        repr(train) == "Dataset MNIST\n    Number of datapoints: 6\n"
        f"    Root location: {tmp_path}\n    Split: Train"
    )


def test_mnist_transforms_and_repr(tmp_path):
    write_mnist_raw(tmp_path / "KMNIST" / "raw", gz=True)  # .gz only is read too
    ds = datasets.KMNIST(
        tmp_path, transform=lambda im: np.asarray(im).sum(), target_transform=lambda t: -t
    )
    x, y = ds[0]
    assert x == int(ds.data[0].numpy().astype(np.int64).sum()) and y == -int(ds.targets[0])
    assert ds.classes[1] == "ki"
    # torchvision indents only the first line of the transforms' repr
    assert "\n    StandardTransform\nTransform: <function" in repr(ds)
    with pytest.raises(
        ValueError, match="Only transforms or transform/target_transform can be passed"
    ):
        datasets.VisionDataset(tmp_path, transforms=lambda a, b: (a, b), transform=lambda a: a)


def test_mnist_missing_raises_torchvision_error(tmp_path):
    with pytest.raises(
        RuntimeError, match="Dataset not found. You can use download=True to download it"
    ):
        datasets.MNIST(tmp_path)


def test_idx_parser_types_and_errors(tmp_path):
    p = tmp_path / "f"
    arr = np.arange(6, dtype=">i4").reshape(2, 3)
    p.write_bytes(
        bytes([0, 0, 12, 2]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + arr.tobytes()
    )
    t = datasets.mnist.read_sn3_pascalvincent_tensor(str(p))
    assert t.dtype == ember.int32 and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(TypeError, match="should be of dtype torch.uint8"):
        datasets.mnist.read_label_file(str(p))
    p.write_bytes(b"\x00\x00\x42\x01" + b"\x00" * 8)
    with pytest.raises(RuntimeError, match="not an IDX file"):
        datasets.mnist.read_sn3_pascalvincent_tensor(str(p))


def mnist_archives(seed=1):
    rng = np.random.default_rng(seed)
    files = {}
    for split, n in (("train", 5), ("t10k", 3)):
        x, y = make_idx_split(rng, n)
        files[f"{split}-images-idx3-ubyte.gz"] = gzip.compress(idx_bytes(x), mtime=0)
        files[f"{split}-labels-idx1-ubyte.gz"] = gzip.compress(idx_bytes(y), mtime=0)
    return files


def test_mnist_download_from_local_mirror(tmp_path, serve):
    files = mnist_archives()
    server = serve({"good/" + k: v for k, v in files.items()})

    class LocalFashion(datasets.FashionMNIST):
        mirrors = [server.url + "missing/", server.url + "good/"]
        resources = [(name, md5(body)) for name, body in files.items()]

    ds = LocalFashion(tmp_path, train=False, download=True)
    raw = tmp_path / "LocalFashion" / "raw"
    assert (raw / "t10k-images-idx3-ubyte").is_file() and (
        raw / "train-labels-idx1-ubyte.gz"
    ).is_file()
    assert len(ds) == 3 and ds.classes[0] == "T-shirt/top"
    assert any(h.startswith("/missing/") for h in server.hits)  # first mirror failed, second served
    n_hits = len(server.hits)
    LocalFashion(tmp_path, download=True)
    assert len(server.hits) == n_hits  # already there: nothing fetched


def test_mnist_download_skips_files_present_only_as_gz(tmp_path, serve):
    # the .gz files are read as they are, so download=True has nothing to fetch (it used to
    # fetch whenever the decompressed files were missing, and fail offline)
    data = write_mnist_raw(tmp_path / "Offline" / "raw", gz=True)
    server = serve({})

    class Offline(datasets.MNIST):
        mirrors = [server.url]

    ds = Offline(tmp_path, train=False, download=True)
    assert server.hits == []
    np.testing.assert_array_equal(ds.data.numpy(), data["t10k"][0])


def test_mnist_download_checksum_mismatch_reports_every_mirror(tmp_path, serve):
    files = mnist_archives()
    server = serve(files)

    class BadSums(datasets.MNIST):
        mirrors = [server.url]
        resources = [(name, "0" * 32) for name in files]

    with pytest.raises(
        RuntimeError, match="Error downloading train-images-idx3-ubyte.gz:\nTried http://127"
    ):
        BadSums(tmp_path, download=True)


def test_fashion_mnist_embedded_subset():
    train = datasets.FashionMNIST(str(SUBSET), train=True)
    test = datasets.FashionMNIST(str(SUBSET), train=False)
    assert (len(train), len(test)) == (2500, 500)
    assert np.bincount(train.targets.numpy()).tolist() == [250] * 10
    assert np.bincount(test.targets.numpy()).tolist() == [50] * 10
    img, label = train[0]
    assert img.mode == "L" and img.size == (28, 28) and 0 <= label < 10
    assert train.data.numpy().max() == 255 and train.classes[9] == "Ankle boot"


# ---------------------------------------------------------------- CIFAR
def cifar_files(base: str, n_per_batch=4, seed=0):
    rng = np.random.default_rng(seed)
    files = {}
    key = "labels" if base == "cifar-10-batches-py" else "fine_labels"
    names = ["data_batch_1", "data_batch_2", "test_batch"] if key == "labels" else ["train", "test"]
    for name in names:
        entry = {
            "data": rng.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8),
            key: rng.integers(0, 10, n_per_batch).tolist(),
            "batch_label": name,
        }
        files[name] = pickle.dumps(entry, protocol=2)
    meta_name, meta_key = (
        ("batches.meta", "label_names") if key == "labels" else ("meta", "fine_label_names")
    )
    files[meta_name] = pickle.dumps({meta_key: [f"class{i}" for i in range(10)]}, protocol=2)
    return files


def cifar_class(parent, base, files, **extra):
    train = [[n, md5(b)] for n, b in files.items() if n.startswith(("data_batch", "train"))]
    test = [[n, md5(b)] for n, b in files.items() if n in ("test_batch", "test")]
    meta_name = "batches.meta" if "batches.meta" in files else "meta"
    meta = dict(parent.meta, md5=md5(files[meta_name]))
    return type(
        "Local" + parent.__name__,
        (parent,),
        dict(train_list=train, test_list=test, meta=meta, **extra),
    )


def write_dir(root: Path, files):
    root.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (root / name).write_bytes(body)


def test_cifar10_reads_pickle_batches(tmp_path):
    files = cifar_files("cifar-10-batches-py")
    write_dir(tmp_path / "cifar-10-batches-py", files)
    cls = cifar_class(datasets.CIFAR10, "cifar-10-batches-py", files)
    train, test = cls(tmp_path), cls(tmp_path, train=False)
    assert len(train) == 8 and len(test) == 4
    assert train.data.shape == (8, 32, 32, 3) and train.data.dtype == np.uint8
    first = pickle.loads(files["data_batch_1"])
    np.testing.assert_array_equal(
        train.data[1], first["data"][1].reshape(3, 32, 32).transpose(1, 2, 0)
    )
    img, label = train[1]
    assert img.mode == "RGB" and img.size == (32, 32) and label == first["labels"][1]
    assert train.classes[2] == "class2" and train.class_to_idx["class3"] == 3
    assert "Split: Test" in repr(test)


def test_cifar_missing_or_corrupted(tmp_path):
    with pytest.raises(
        RuntimeError,
        match="Dataset not found or corrupted. You can use download=True to download it",
    ):
        datasets.CIFAR10(tmp_path)
    files = cifar_files("cifar-10-batches-py")
    write_dir(tmp_path / "cifar-10-batches-py", files)
    cls = cifar_class(datasets.CIFAR10, "cifar-10-batches-py", files)
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        cls(tmp_path)


def test_cifar_refuses_pickled_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    files = cifar_files("cifar-10-batches-py")
    files["data_batch_1"] = pickle.dumps({"data": Evil(), "labels": []})
    write_dir(tmp_path / "cifar-10-batches-py", files)
    cls = cifar_class(datasets.CIFAR10, "cifar-10-batches-py", files)
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        cls(tmp_path)


def tar_gz(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def test_cifar100_download_and_extract(tmp_path, serve):
    files = cifar_files("cifar-100-python")
    archive = tar_gz({f"cifar-100-python/{n}": b for n, b in files.items()})
    server = serve({"c100.tar.gz": archive})
    cls = cifar_class(
        datasets.CIFAR100,
        "cifar-100-python",
        files,
        url=server.url + "c100.tar.gz",
        tgz_md5=md5(archive),
    )
    ds = cls(tmp_path, download=True)
    assert (tmp_path / "cifar-100-python.tar.gz").is_file()
    assert len(ds) == 4 and ds.targets == pickle.loads(files["train"])["fine_labels"]
    bad = cifar_class(
        datasets.CIFAR100,
        "cifar-100-python",
        files,
        url=server.url + "c100.tar.gz",
        tgz_md5="0" * 32,
    )
    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        bad(tmp_path / "other", download=True)


# ---------------------------------------------------------------- archives
def tar_with(tmp_path, build) -> Path:
    path = tmp_path / "evil.tar"
    with tarfile.open(path, "w") as tar:
        build(tar)
    return path


def add_file(tar, name, body=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(body)
    tar.addfile(info, io.BytesIO(body))


@pytest.mark.parametrize("member", ["../escape.txt", "/abs/escape.txt", "a/../../escape.txt"])
def test_extract_refuses_paths_leaving_the_folder(tmp_path, member):
    path = tar_with(tmp_path, lambda tar: (add_file(tar, "ok.txt"), add_file(tar, member)))
    out = tmp_path / "out"
    with pytest.raises(dsutils.UnsafeArchiveError, match="leaves the target folder"):
        dsutils.extract_archive(str(path), str(out))
    assert not (out / "ok.txt").exists() and not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize(
    "kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE]
)
def test_extract_refuses_links_and_devices(tmp_path, kind):
    def build(tar):
        info = tarfile.TarInfo("thing")
        info.type = kind
        info.linkname = "/etc/passwd"
        tar.addfile(info)

    with pytest.raises(dsutils.UnsafeArchiveError, match="it is a (link|device or special file)"):
        dsutils.extract_archive(str(tar_with(tmp_path, build)), str(tmp_path / "out"))


def test_extract_zip_and_gz(tmp_path):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("d/a.txt", b"hello")
    assert dsutils.extract_archive(str(good), str(tmp_path / "z")) == str(tmp_path / "z")
    assert (tmp_path / "z" / "d" / "a.txt").read_bytes() == b"hello"
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../up.txt", b"x")
    with pytest.raises(dsutils.UnsafeArchiveError):
        dsutils.extract_archive(str(bad), str(tmp_path / "z2"))
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as zf:
        info = zipfile.ZipInfo("l")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(dsutils.UnsafeArchiveError, match="link"):
        dsutils.extract_archive(str(link), str(tmp_path / "z3"))
    gz = tmp_path / "f.bin.gz"
    gz.write_bytes(gzip.compress(b"payload"))
    out = dsutils.extract_archive(str(gz))
    assert out == str(tmp_path / "f.bin") and Path(out).read_bytes() == b"payload"
    with pytest.raises(RuntimeError, match="Unknown compression or archive type"):
        dsutils.extract_archive(str(tmp_path / "f.rar"))


def test_check_integrity_and_verify_str_arg(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"abc")
    assert dsutils.check_integrity(str(p)) and dsutils.check_integrity(str(p), md5(b"abc"))
    assert not dsutils.check_integrity(str(p), "0" * 32) and not dsutils.check_integrity(
        str(tmp_path / "nope")
    )
    assert dsutils.verify_str_arg("train", "split", ("train", "test")) == "train"
    with pytest.raises(
        ValueError,
        match="Unknown value 'val' for argument split. Valid values are {'train', 'test'}.",
    ):
        dsutils.verify_str_arg("val", "split", ("train", "test"))


# ---------------------------------------------------------------- folders
def make_image_tree(root: Path):
    rng = np.random.default_rng(0)
    for cls, names in {
        "dog": ["b.png", "a.jpg", "notes.txt"],
        "cat": ["z.PNG", "sub/y.bmp"],
    }.items():
        for name in names:
            path = root / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".txt"):
                path.write_text("not an image")
            else:
                fmt = {"png": "PNG", "jpg": "JPEG", "bmp": "BMP"}[name.rsplit(".", 1)[1].lower()]
                Image.fromarray(rng.integers(0, 256, (6, 5), dtype=np.uint8)).save(path, format=fmt)


def test_image_folder(tmp_path):
    make_image_tree(tmp_path)
    ds = datasets.ImageFolder(str(tmp_path))
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    rel = [(os.path.relpath(p, tmp_path), t) for p, t in ds.samples]
    assert rel == [("cat/z.PNG", 0), ("cat/sub/y.bmp", 0), ("dog/a.jpg", 1), ("dog/b.png", 1)]
    assert ds.targets == [0, 0, 1, 1] and ds.imgs is ds.samples
    img, target = ds[3]
    assert img.mode == "RGB" and img.size == (5, 6) and target == 1
    only_png = datasets.ImageFolder(tmp_path, is_valid_file=lambda p: p.lower().endswith(".png"))
    assert len(only_png) == 2


def test_dataset_folder_errors_and_allow_empty(tmp_path):
    make_image_tree(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        FileNotFoundError, match="Found no valid file for the classes empty. Supported extensions"
    ):
        datasets.ImageFolder(tmp_path)
    ds = datasets.DatasetFolder(
        tmp_path, loader=lambda p: Path(p).read_bytes()[:2], extensions=(".txt",), allow_empty=True
    )
    assert [t for _, t in ds.samples] == [1] and ds[0][0] == b"no" and ds.classes[2] == "empty"
    with pytest.raises(
        ValueError, match="Both extensions and is_valid_file cannot be None or not None"
    ):
        datasets.make_dataset(tmp_path, extensions=None, is_valid_file=None)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.find_classes(tmp_path / "empty")
    assert datasets.IMG_EXTENSIONS[0] == ".jpg"


# ---------------------------------------------------------------- FakeData and Digits
def test_fake_data_is_deterministic_per_index():
    ds = datasets.FakeData(size=4, image_size=(3, 6, 5), num_classes=3, random_offset=7)
    ember.manual_seed(123)
    before = ember.rand(3)
    ember.manual_seed(123)
    a, la = ds[2]
    b, lb = ds[2]
    assert np.array_equal(np.asarray(a), np.asarray(b)) and la == lb and 0 <= la < 3
    assert ember.equal(ember.rand(3), before)  # the global RNG is untouched
    assert a.mode == "RGB" and a.size == (5, 6)
    assert not np.array_equal(np.asarray(ds[1][0]), np.asarray(a))
    assert datasets.FakeData(2, (1, 4, 4))[0][0].mode == "L"
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[4]
    assert len(ds) == 4 and repr(ds).startswith("Dataset FakeData\n    Number of datapoints: 4")


def test_digits_embedded_split():
    train, test = datasets.Digits(), datasets.Digits(train=False)
    assert (len(train), len(test)) == (1438, 359)
    assert train.data.dtype == ember.uint8 and train.data.shape == (1438, 8, 8)
    assert sorted(set(train.targets.tolist())) == list(range(10))
    img, label = test[0]
    assert img.mode == "L" and img.size == (8, 8) and isinstance(label, int)
    assert train.data.numpy().max() == 255
    both = np.concatenate([train.data.numpy(), test.data.numpy()]).reshape(-1, 64)
    assert len({row.tobytes() for row in both}) > 1700  # disjoint parts of 1,797 images
    other = datasets.Digits(split_seed=1)
    assert not np.array_equal(other.targets.numpy(), train.targets.numpy())
    data_dir = Path(datasets.__file__).parent / "data"
    assert (data_dir / "digits.csv.gz").is_file() and "CC BY 4.0" in (
        data_dir / "ATTRIBUTION.md"
    ).read_text()
