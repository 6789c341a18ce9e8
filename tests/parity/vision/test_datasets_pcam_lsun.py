"""ember.vision.datasets.PCAM, LSUN and LSUNClass against torchvision 0.29: the same fake HDF5
files and LMDB databases, read by both, give equal images, targets, lengths, reprs and errors.

The fixtures are written by the helpers of tests/vision/test_datasets_pcam_lsun.py. torchvision's
LSUNClass pickles its key cache into the working directory, so its LSUN tests run in a
temporary one. lmdb opens a database only once per process, so each side's dataset is read
and dropped before the other's is built.
"""

import gc
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from testutils import assert_same_error

from ember.vision import datasets as eds

torchvision = pytest.importorskip("torchvision")
from torchvision import datasets as tds  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_fake_pcam_lsun", Path(__file__).parents[2] / "vision" / "test_datasets_pcam_lsun.py"
)
fake = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake)


def label(target) -> str:
    """A target_transform (one function object, so that both datasets' reprs show it alike)."""
    return f"<{target}>"


def assert_same_items(e_items, t_items):
    assert len(e_items) == len(t_items)
    for i, ((e_img, e_t), (t_img, t_t)) in enumerate(zip(e_items, t_items)):
        assert isinstance(e_img, Image.Image) and isinstance(t_img, Image.Image), i
        assert (e_img.mode, e_img.size) == (t_img.mode, t_img.size), i
        assert e_img.tobytes() == t_img.tobytes(), i
        assert type(e_t) is type(t_t) and e_t == t_t, (i, e_t, t_t)


def read(make, indices=None):
    """``(len, [items], repr)`` of the dataset ``make()`` builds, which is then dropped (and
    with it its lmdb environments)."""
    ds = make()
    try:
        items = [ds[i] for i in (range(len(ds)) if indices is None else indices)]
        error = None
    except Exception as e:  # raised afresh below, with no traceback that holds on to ds
        error = type(e)(*e.args)
    out = len(ds), items if error is None else None, repr(ds)
    del ds
    gc.collect()
    if error is not None:
        raise error
    return out


def assert_same_dataset(e_make, t_make, indices=None):
    e_len, e_items, e_repr = read(e_make, indices)
    t_len, t_items, t_repr = read(t_make, indices)
    assert e_len == t_len
    assert_same_items(e_items, t_items)
    assert e_repr == t_repr


# ---------------------------------------------------------------- PCAM
@pytest.mark.parametrize("split", ["train", "test", "val"])
def test_pcam_items(tmp_path, split):
    pytest.importorskip("h5py")
    fake.write_pcam(tmp_path)
    assert_same_dataset(lambda: eds.PCAM(tmp_path, split=split),
                        lambda: tds.PCAM(tmp_path, split=split))
    assert_same_dataset(lambda: eds.PCAM(str(tmp_path), split, target_transform=label),
                        lambda: tds.PCAM(str(tmp_path), split, target_transform=label), [-1, 0])


def test_pcam_errors(tmp_path, monkeypatch):
    pytest.importorskip("h5py")
    for kwargs in ({"split": "valid"}, {"split": None}, {}):
        assert_same_error(lambda kwargs=kwargs: eds.PCAM(tmp_path, **kwargs),
                          lambda kwargs=kwargs: tds.PCAM(tmp_path, **kwargs))
    fake.write_pcam(tmp_path, ["val"])
    (tmp_path / "pcam" / eds.PCAM._FILES["val"]["images"][0]).unlink()
    assert_same_error(lambda: eds.PCAM(tmp_path, "val"), lambda: tds.PCAM(tmp_path, "val"))
    monkeypatch.setitem(sys.modules, "h5py", None)  # Ember's message adds the extra's name
    assert_same_error(lambda: eds.PCAM(tmp_path), lambda: tds.PCAM(tmp_path))


def test_pcam_files_and_ids_are_torchvision_s():
    assert eds.PCAM._FILES == tds.PCAM._FILES


# ---------------------------------------------------------------- LSUN
@pytest.fixture
def in_tmp_cwd(tmp_path, monkeypatch):
    """A temporary working directory for torchvision's pickle cache; returns it."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_lsun_class(tmp_path, in_tmp_cwd):
    pytest.importorskip("lmdb")
    fake.write_lsun(tmp_path)
    for name in ("bedroom_train", "church_outdoor_train", "kitchen_val", "tower_val"):
        path = str(tmp_path / f"{name}_lmdb")
        assert_same_dataset(lambda path=path: eds.LSUNClass(path),
                            lambda path=path: tds.LSUNClass(path))
        assert_same_dataset(lambda path=path: eds.LSUNClass(path, target_transform=repr),
                            lambda path=path: tds.LSUNClass(path, target_transform=repr))
    assert list(in_tmp_cwd.iterdir())  # torchvision's caches; Ember wrote none (unit tests)


def test_lsun_across_dbs(tmp_path, in_tmp_cwd):
    pytest.importorskip("lmdb")
    fake.write_lsun(tmp_path)
    classes = list(fake.LSUN_CLASSES)
    assert_same_dataset(lambda: eds.LSUN(tmp_path, classes=classes),
                        lambda: tds.LSUN(tmp_path, classes=classes))
    # again, now that torchvision loads its pickled keys
    assert_same_dataset(lambda: eds.LSUN(str(tmp_path), classes=classes[1:]),
                        lambda: tds.LSUN(str(tmp_path), classes=classes[1:]))
    assert_same_dataset(lambda: eds.LSUN(tmp_path, classes[::-1], target_transform=label),
                        lambda: tds.LSUN(tmp_path, classes[::-1], target_transform=label))
    for index in (9, 10):
        assert_same_error(lambda i=index: read(lambda: eds.LSUN(tmp_path, classes), [i]),
                          lambda i=index: read(lambda: tds.LSUN(tmp_path, classes), [i]))
    # one class: negative indices agree
    assert_same_dataset(lambda: eds.LSUN(tmp_path, ["kitchen_val"]),
                        lambda: tds.LSUN(tmp_path, ["kitchen_val"]), [-1, -4])


def test_lsun_negative_index_differs_on_purpose(tmp_path, in_tmp_cwd):
    pytest.importorskip("lmdb")
    written = fake.write_lsun(tmp_path, {"bedroom_val": (2, "PNG"), "bridge_val": (3, "PNG")})
    classes = ["bedroom_val", "bridge_val"]
    _, [(e_img, e_target)], _ = read(lambda: eds.LSUN(tmp_path, classes), [-1])
    _, [(t_img, t_target)], _ = read(lambda: tds.LSUN(tmp_path, classes), [-1])
    assert e_target == 1  # Ember: the last image of the whole dataset
    np.testing.assert_array_equal(np.asarray(e_img), written["bridge_val"][-1][2])
    assert t_target == 0  # torchvision: the last image of the first class
    np.testing.assert_array_equal(np.asarray(t_img), written["bedroom_val"][-1][2])


@pytest.mark.parametrize("option", ["train", "val", "test"])
def test_lsun_split_names(tmp_path, in_tmp_cwd, option):
    pytest.importorskip("lmdb")
    names = ["test"] if option == "test" else [f"{c}_{option}" for c in (
        "bedroom", "bridge", "church_outdoor", "classroom", "conference_room", "dining_room",
        "kitchen", "living_room", "restaurant", "tower")]
    fake.write_lsun(tmp_path, {name: (1 + i % 2, "JPEG") for i, name in enumerate(names)})
    assert_same_dataset(lambda: eds.LSUN(tmp_path, classes=option),
                        lambda: tds.LSUN(tmp_path, classes=option))


@pytest.mark.parametrize("classes", list(fake.LSUN_CLASS_ERRORS), ids=str)
def test_lsun_class_errors(tmp_path, classes):
    classes = list(classes) if isinstance(classes, tuple) else classes
    assert_same_error(lambda: eds.LSUN(tmp_path, classes=classes),
                      lambda: tds.LSUN(tmp_path, classes=classes))


def test_lsun_missing_db(tmp_path, in_tmp_cwd):
    pytest.importorskip("lmdb")
    fake.write_lsun(tmp_path, {"bedroom_val": (1, "PNG")})
    classes = ["kitchen_val", "bedroom_val"]  # the missing one first: nothing left open
    assert_same_error(lambda: read(lambda: eds.LSUN(tmp_path, classes)),
                      lambda: read(lambda: tds.LSUN(tmp_path, classes)))
