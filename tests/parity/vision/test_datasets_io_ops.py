"""ember.vision datasets, io, utils and ops against torchvision 0.29 on the same inputs."""

import gzip
import io as pyio
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import ember
from ember.vision import datasets as eds
from ember.vision import io as eio
from ember.vision import ops as eops
from ember.vision import utils as eutils

torchvision = pytest.importorskip("torchvision")
torch = pytest.importorskip("torch")
from torchvision import datasets as tds  # noqa: E402
from torchvision import io as tio  # noqa: E402
from torchvision import ops as tops  # noqa: E402
from torchvision import utils as tutils  # noqa: E402

SUBSET = Path(__file__).parents[2] / "vision" / "data" / "fashion_mnist_subset"


def E(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ---------------------------------------------------------------- datasets
def idx_bytes(arr):
    return (
        bytes([0, 0, 8, arr.ndim])
        + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
        + arr.tobytes()
    )


def same_items(a, b, n):
    assert len(a) == len(b)
    for i in np.linspace(0, len(a) - 1, n).astype(int):
        (ia, ta), (ib, tb) = a[int(i)], b[int(i)]
        assert ia.mode == ib.mode and ia.size == ib.size and ta == tb and type(ta) is type(tb)
        np.testing.assert_array_equal(np.asarray(ia), np.asarray(ib))


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
def test_mnist_family_same_items(tmp_path, name):
    raw = tmp_path / name / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split, n in (("train", 7), ("t10k", 3)):
        (raw / f"{split}-images-idx3-ubyte").write_bytes(
            idx_bytes(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        )
        (raw / f"{split}-labels-idx1-ubyte").write_bytes(
            idx_bytes(rng.integers(0, 10, n).astype(np.uint8))
        )
    for train in (True, False):
        a, b = (
            getattr(eds, name)(str(tmp_path), train=train),
            getattr(tds, name)(str(tmp_path), train=train),
        )
        same_items(a, b, len(b))
        np.testing.assert_array_equal(a.data.numpy(), b.data.numpy())
        assert a.targets.dtype == ember.int64 and b.targets.dtype == torch.int64
        assert a.classes == b.classes and a.class_to_idx == b.class_to_idx and repr(a) == repr(b)
    for cls in (eds, tds):
        with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
            getattr(cls, name)(str(tmp_path / "nowhere"))


def test_fashion_mnist_subset_same_as_torchvision(tmp_path):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for gz in (SUBSET / "FashionMNIST" / "raw").glob(
        "*.gz"
    ):  # torchvision reads decompressed files only
        (raw / gz.stem).write_bytes(gzip.decompress(gz.read_bytes()))
    for train in (True, False):
        a, b = (
            eds.FashionMNIST(str(SUBSET), train=train),
            tds.FashionMNIST(str(tmp_path), train=train),
        )
        np.testing.assert_array_equal(a.data.numpy(), b.data.numpy())
        np.testing.assert_array_equal(a.targets.numpy(), b.targets.numpy())
        same_items(a, b, 20)


def test_cifar_same_items(tmp_path):
    rng = np.random.default_rng(1)
    files = {}
    for name in ("data_batch_1", "data_batch_2", "test_batch"):
        files[name] = pickle.dumps(
            {
                "data": rng.integers(0, 256, (3, 3072), dtype=np.uint8),
                "labels": rng.integers(0, 10, 3).tolist(),
            },
            protocol=2,
        )
    files["batches.meta"] = pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}, protocol=2)
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    for n, body in files.items():
        (base / n).write_bytes(body)
    from hashlib import md5

    attrs = dict(
        train_list=[[n, md5(files[n]).hexdigest()] for n in ("data_batch_1", "data_batch_2")],
        test_list=[["test_batch", md5(files["test_batch"]).hexdigest()]],
        meta={
            "filename": "batches.meta",
            "key": "label_names",
            "md5": md5(files["batches.meta"]).hexdigest(),
        },
    )
    A, B = type("A", (eds.CIFAR10,), attrs), type("B", (tds.CIFAR10,), attrs)
    for train in (True, False):
        a, b = A(str(tmp_path), train=train), B(str(tmp_path), train=train)
        np.testing.assert_array_equal(a.data, b.data)
        assert (
            a.targets == b.targets and a.classes == b.classes and a.class_to_idx == b.class_to_idx
        )
        same_items(a, b, len(b))


def test_image_folder_same_samples(tmp_path):
    rng = np.random.default_rng(2)
    for path in ("b/x.png", "a/y.JPG", "a/deep/z.bmp", "a/skip.txt", "c/w.webp"):
        p = tmp_path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".txt":
            p.write_text("x")
        else:
            Image.fromarray(rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)).save(p)
    a, b = eds.ImageFolder(str(tmp_path)), tds.ImageFolder(str(tmp_path))
    assert a.samples == b.samples and a.classes == b.classes and a.targets == b.targets
    same_items(a, b, len(b))
    assert eds.IMG_EXTENSIONS == tds.folder.IMG_EXTENSIONS


def test_extract_archive_same_tree(tmp_path):
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, body in (("top/x.txt", b"1"), ("top/sub/y.bin", b"22")):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, pyio.BytesIO(body))
    eds.utils.extract_archive(str(archive), str(tmp_path / "e"))
    tds.utils.extract_archive(str(archive), str(tmp_path / "t"))
    tree = lambda r: sorted(
        (str(p.relative_to(r)), p.read_bytes()) for p in r.rglob("*") if p.is_file()
    )
    assert tree(tmp_path / "e") == tree(tmp_path / "t")


# ---------------------------------------------------------------- io
def image(c=3, h=17, w=23, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (c, h, w), dtype=np.uint8)


@pytest.mark.parametrize("c", [1, 3])
def test_png_round_trips_bit_exact(c):
    arr = image(c)
    ours = eio.encode_png(E(arr))
    theirs = tio.encode_png(T(arr))
    np.testing.assert_array_equal(tio.decode_png(T(ours.numpy())).numpy(), arr)
    np.testing.assert_array_equal(eio.decode_png(E(theirs.numpy())).numpy(), arr)
    for mode in ("UNCHANGED", "RGB", "RGB_ALPHA"):
        np.testing.assert_array_equal(
            eio.decode_image(E(theirs.numpy()), getattr(eio.ImageReadMode, mode)).numpy(),
            tio.decode_image(theirs, getattr(tio.ImageReadMode, mode)).numpy(),
        )


def test_png_gray_conversion_close():
    theirs = tio.encode_png(T(image(3)))
    a = eio.decode_image(E(theirs.numpy()), eio.ImageReadMode.GRAY).numpy().astype(int)
    b = tio.decode_image(theirs, tio.ImageReadMode.GRAY).numpy().astype(int)
    assert a.shape == b.shape and np.abs(a - b).max() <= 1


def test_jpeg_within_tolerance(tmp_path):
    y, x = np.mgrid[0:40, 0:48]
    arr = np.stack([y * 6, x * 5, (x + y) * 3]).astype(np.uint8)
    theirs = tio.encode_jpeg(T(arr), quality=90)
    a, b = (
        eio.decode_jpeg(E(theirs.numpy())).numpy().astype(int),
        tio.decode_jpeg(theirs).numpy().astype(int),
    )
    assert a.shape == b.shape and np.abs(a - b).max() <= 2
    ours = eio.encode_jpeg(E(arr), quality=90)
    back = tio.decode_jpeg(T(ours.numpy())).numpy().astype(int)
    assert np.abs(back - arr).mean() < 2
    eio.write_jpeg(E(arr), str(tmp_path / "e.jpg"), quality=90)
    assert tio.read_image(str(tmp_path / "e.jpg")).shape == (3, 40, 48)


def test_read_write_file(tmp_path):
    eio.write_file(str(tmp_path / "f"), E(np.array([1, 2, 3], np.uint8)))
    assert (
        tio.read_file(str(tmp_path / "f")).tolist()
        == eio.read_file(str(tmp_path / "f")).tolist()
        == [1, 2, 3]
    )


# ---------------------------------------------------------------- utils
GRID_CASES = [
    dict(),
    dict(nrow=3, padding=1, pad_value=0.25),
    dict(normalize=True),
    dict(normalize=True, scale_each=True),
    dict(normalize=True, value_range=(-0.5, 0.5), nrow=2),
]


@pytest.mark.parametrize("kwargs", GRID_CASES)
@pytest.mark.parametrize("shape", [(5, 3, 4, 6), (4, 1, 5, 5), (1, 3, 4, 4)])
def test_make_grid_bit_exact(kwargs, shape):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    a, b = eutils.make_grid(E(x), **kwargs).numpy(), tutils.make_grid(T(x), **kwargs).numpy()
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def test_save_image_same_pixels(tmp_path):
    x = np.random.default_rng(4).random((6, 3, 5, 7)).astype(np.float32)
    eutils.save_image(E(x), str(tmp_path / "e.png"), nrow=4, normalize=True)
    tutils.save_image(T(x), str(tmp_path / "t.png"), nrow=4, normalize=True)
    np.testing.assert_array_equal(
        np.asarray(Image.open(tmp_path / "e.png")), np.asarray(Image.open(tmp_path / "t.png"))
    )


BOXES = np.array([[2, 3, 20, 15], [10, 1, 38, 28], [0, 0, 5, 5]], dtype=np.float32)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(colors="red", width=3),
        dict(fill=True),
        dict(labels=["cat", "dog", "x"], colors=["blue", (0, 255, 0), "#FF00FF"]),
        dict(labels=["a", "b", "c"], fill=True, width=2),
        dict(labels=["ab", "b", "c"], fill_labels=True),
        dict(labels=["ab", "b", "c"], fill_labels=True, label_background_colors="yellow"),
        dict(labels=["ab", "b", "c"], label_colors=["red", "green", "blue"]),
    ],
)
def test_draw_bounding_boxes_same(kwargs):
    img = image(3, 30, 40, seed=5)
    a = eutils.draw_bounding_boxes(E(img), E(BOXES), **kwargs).numpy()
    b = tutils.draw_bounding_boxes(T(img), T(BOXES), **kwargs).numpy()
    np.testing.assert_array_equal(a, b)
    f = img.astype(np.float32) / 255
    a = eutils.draw_bounding_boxes(E(f), E(BOXES), **kwargs).numpy()
    b = tutils.draw_bounding_boxes(T(f), T(BOXES), **kwargs).numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "alpha,colors", [(0.8, None), (0.3, ["red", (10, 20, 30), "green"]), (1.0, "blue")]
)
def test_draw_segmentation_masks_same(alpha, colors):
    img = image(3, 9, 11, seed=6)
    masks = np.random.default_rng(7).random((3, 9, 11)) > 0.6
    a = eutils.draw_segmentation_masks(E(img), E(masks), alpha, colors).numpy()
    b = tutils.draw_segmentation_masks(T(img), T(masks), alpha, colors).numpy()
    np.testing.assert_array_equal(a, b)
    f = img.astype(np.float32) / 255
    a = eutils.draw_segmentation_masks(E(f), E(masks), alpha, colors).numpy()
    b = tutils.draw_segmentation_masks(T(f), T(masks), alpha, colors).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


KEYPOINTS = np.array(
    [
        [[2.0, 3.0], [10.7, 12.2], [20.0, 5.0], [30.0, 2.0]],
        [[5.0, 15.0], [15.0, 15.0], [1.0, 1.0], [-3.0, 8.0]],
    ]
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"connectivity": [(0, 1), (1, 2), (2, 3)], "colors": "blue", "radius": 3, "width": 1},
        {"connectivity": [(0, 1), (0, 3)], "colors": (240, 10, 157), "radius": 1, "width": 4},
    ],
)
@pytest.mark.parametrize("visibility", [None, [[1, 0, 1, 1], [1, 1, 0, 1]]])
def test_draw_keypoints_same(kwargs, visibility):
    rng = np.random.default_rng(14)
    img = rng.integers(0, 256, (3, 20, 28), dtype=np.uint8)
    extra = {}
    if visibility is not None:
        extra = {"visibility": np.array(visibility, dtype=bool)}
    a = eutils.draw_keypoints(
        E(img), E(KEYPOINTS), **kwargs, **{k: E(v) for k, v in extra.items()}
    ).numpy()
    b = tutils.draw_keypoints(
        T(img), T(KEYPOINTS), **kwargs, **{k: T(v) for k, v in extra.items()}
    ).numpy()
    np.testing.assert_array_equal(a, b)
    f = (img / 255).astype(np.float32)
    a = eutils.draw_keypoints(E(f), E(KEYPOINTS), **kwargs).numpy()
    b = tutils.draw_keypoints(T(f), T(KEYPOINTS), **kwargs).numpy()
    assert a.dtype == b.dtype
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_draw_keypoints_errors_same():
    img = np.zeros((3, 10, 10), dtype=np.uint8)
    kp = KEYPOINTS
    bad = [
        (img.astype(np.int32), kp, None, ValueError, "The image dtype must be uint8 or float"),
        (img[None], kp, None, ValueError, "Pass individual images, not batches"),
        (img[:1], kp, None, ValueError, "Pass an RGB image"),
        (img, kp[0], None, ValueError, "keypoints must be of shape"),
        (img, kp, np.ones(8, dtype=bool), ValueError, "visibility must be of shape"),
        (img, kp, np.ones((2, 3), dtype=bool), ValueError, "same dimensionality"),
    ]
    for im, k, vis, exc, msg in bad:
        for mod, wrap in ((tutils, T), (eutils, E)):
            with pytest.raises(exc, match=msg):
                mod.draw_keypoints(
                    wrap(im), wrap(k), visibility=None if vis is None else wrap(vis)
                )
    for mod in (tutils, eutils):
        with pytest.raises(TypeError, match="The image must be a tensor"):
            mod.draw_keypoints(img, T(kp) if mod is tutils else E(kp))


# ---------------------------------------------------------------- ops
def boxes_and_scores(n, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 60, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(1, 30, (n, 2))], 1).astype(dtype)
    return boxes, rng.permutation(n).astype(dtype) / n  # distinct scores: no tie order question


@pytest.mark.parametrize("n,thr", [(50, 0.5), (600, 0.3), (600, 0.7)])
def test_nms_same_keep(n, thr):
    boxes, scores = boxes_and_scores(n, n)
    np.testing.assert_array_equal(
        eops.nms(E(boxes), E(scores), thr).numpy(), tops.nms(T(boxes), T(scores), thr).numpy()
    )
    idxs = np.random.default_rng(1).integers(0, 4, n)
    np.testing.assert_array_equal(
        eops.batched_nms(E(boxes), E(scores), E(idxs), thr).numpy(),
        tops.batched_nms(T(boxes), T(scores), T(idxs), thr).numpy(),
    )


def test_box_ops_same():
    a, _ = boxes_and_scores(9, 1)
    b, _ = boxes_and_scores(7, 2)
    for fmt in ("xyxy", "xywh", "cxcywh"):
        for out in ("xyxy", "xywh", "cxcywh"):
            np.testing.assert_allclose(
                eops.box_convert(E(a), fmt, out).numpy(),
                tops.box_convert(T(a), fmt, out).numpy(),
                rtol=1e-6,
            )
        np.testing.assert_allclose(
            eops.box_area(E(a), fmt=fmt).numpy(), tops.box_area(T(a), fmt=fmt).numpy(), rtol=1e-6
        )
        np.testing.assert_allclose(
            eops.box_iou(E(a), E(b), fmt=fmt).numpy(),
            tops.box_iou(T(a), T(b), fmt=fmt).numpy(),
            rtol=1e-6,
        )
    np.testing.assert_allclose(
        eops.generalized_box_iou(E(a), E(b)).numpy(),
        tops.generalized_box_iou(T(a), T(b)).numpy(),
        rtol=1e-5,
        atol=1e-7,
    )
    np.testing.assert_array_equal(
        eops.clip_boxes_to_image(E(a), (40, 50)).numpy(),
        tops.clip_boxes_to_image(T(a), (40, 50)).numpy(),
    )
    np.testing.assert_array_equal(
        eops.remove_small_boxes(E(a), 10.0).numpy(), tops.remove_small_boxes(T(a), 10.0).numpy()
    )
    ib = np.array([[0, 0, 3, 4], [1, 1, 5, 5]], dtype=np.int32)
    ea, ta = eops.box_area(E(ib)), tops.box_area(T(ib))
    assert str(ea.dtype).split(".")[1] == str(ta.dtype).split(".")[1]
    np.testing.assert_allclose(
        eops.box_iou(E(ib), E(ib)).numpy(), tops.box_iou(T(ib), T(ib)).numpy(), rtol=1e-6
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "sampling_ratio,aligned,scale",
    [(-1, False, 0.5), (2, False, 1.0), (-1, True, 0.25), (3, True, 0.5)],
)
def test_roi_align_values_and_grads(dtype, sampling_ratio, aligned, scale):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 4, 13, 17)).astype(dtype)
    xy = rng.uniform(-5, 60, (12, 2))
    rois = np.concatenate(
        [rng.integers(0, 2, (12, 1)), xy, xy + rng.uniform(0, 40, (12, 2))], 1
    ).astype(dtype)
    tx, ex = T(x).requires_grad_(), E(x).requires_grad_()
    to = tops.roi_align(tx, T(rois), (5, 3), scale, sampling_ratio, aligned)
    eo = eops.roi_align(ex, E(rois), (5, 3), scale, sampling_ratio, aligned)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(to.shape).astype(dtype)
    to.backward(T(g))
    eo.backward(E(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_sigmoid_focal_loss_same(reduction):
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((6, 5)) * 3).astype(np.float32)
    t = (rng.random((6, 5)) > 0.7).astype(np.float32)
    tx, ex = T(x).requires_grad_(), E(x).requires_grad_()
    to = tops.sigmoid_focal_loss(tx, T(t), 0.3, 1.5, reduction)
    eo = eops.sigmoid_focal_loss(ex, E(t), 0.3, 1.5, reduction)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-7)
    to.sum().backward()
    eo.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    for mod, fn in ((torch, tops.sigmoid_focal_loss), (ember, eops.sigmoid_focal_loss)):
        with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
            fn(mod.zeros(2), mod.zeros(2), reduction="bad")


@pytest.mark.parametrize("fill", [False, True])
def test_draw_oriented_boxes_same(fill):
    img = image(3, 40, 50, seed=8)
    boxes = np.array([[5, 5, 30, 8, 27, 30, 2, 27], [40, 2, 48, 20, 30, 35, 22, 17]], np.float32)
    a = eutils.draw_bounding_boxes(E(img), E(boxes), fill=fill, width=2, labels=["p", "q"]).numpy()
    b = tutils.draw_bounding_boxes(T(img), T(boxes), fill=fill, width=2, labels=["p", "q"]).numpy()
    np.testing.assert_array_equal(a, b)


def _saved(frames, fmt, **kw):
    b = pyio.BytesIO()
    frames[0].save(b, format=fmt, save_all=len(frames) > 1, append_images=frames[1:], **kw)
    return np.frombuffer(b.getvalue(), np.uint8).copy()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gif_and_webp_decoders_give_torchvisions_tensors():
    """decode_gif (one frame: CHW; an animation: NCHW), decode_webp and decode_image on GIF and
    WebP in every mode: the same shapes and bytes as torchvision (GIFs always RGB, WebP keeping
    its colours when asked for gray)."""
    rng = np.random.default_rng(0)
    rgb = [Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)) for _ in range(3)]
    rgba = Image.fromarray(rng.integers(0, 255, (20, 30, 4), dtype=np.uint8))
    files = {"gif1": _saved(rgb[:1], "GIF"), "gif3": _saved(rgb, "GIF", duration=50, loop=0),
             "gif_p": _saved([rgb[0].convert("P")], "GIF"),
             "webp_rgb": _saved(rgb[:1], "WEBP", lossless=True),
             "webp_rgba": _saved([rgba], "WEBP", lossless=True),
             "webp_lossy": _saved(rgb[:1], "WEBP", quality=80)}
    for name, data in files.items():
        special = "decode_gif" if name.startswith("gif") else "decode_webp"
        for fn in ("decode_image", special):
            modes = [None] if fn == "decode_gif" else ["UNCHANGED", "RGB", "RGBA", "GRAY"]
            for mode in modes:
                t_args = () if mode is None else (getattr(tio.ImageReadMode, mode),)
                e_args = () if mode is None else (getattr(eio.ImageReadMode, mode),)
                expected = getattr(tio, fn)(torch.from_numpy(data), *t_args).numpy()
                got = getattr(eio, fn)(E(data), *e_args).numpy()
                assert got.dtype == expected.dtype, (name, fn, mode)
                np.testing.assert_array_equal(got, expected, err_msg=f"{name} {fn} {mode}")
