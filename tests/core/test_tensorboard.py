"""``ember.utils.tensorboard.SummaryWriter``: every kind of event read back with TensorBoard's
own ``EventAccumulator``, the record framing checked byte by byte, a ``tensorboard --logdir``
server asked for a scalar over HTTP, and the files compared with ``torch.utils.tensorboard``'s
when PyTorch is installed."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from google.protobuf import text_format
from PIL import Image
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.util import tensor_util

import ember
from ember.utils.tensorboard import SummaryWriter
from ember.utils.tensorboard.summary import default_bins

EVENT_FILE = re.compile(r"events\.out\.tfevents\.\d{10}\.(?P<host>.+)\.(?P<pid>\d+)\.\d+"
                        r"(?P<suffix>.*)$")


def accumulate(path) -> ea.EventAccumulator:
    """Everything in the run at ``path``, as TensorBoard loads it."""
    acc = ea.EventAccumulator(str(path), size_guidance={
        ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.AUDIO: 0,
        ea.COMPRESSED_HISTOGRAMS: 0})
    acc.Reload()
    return acc


def event_files(path) -> list:
    return sorted(p for p in Path(path).iterdir() if p.name.startswith("events.out.tfevents"))


# -- the record framing, checked without tensorboard's reader ---------------------------------

def _crc32c_table() -> list:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path) -> list:
    """TFRecord: u64 length, masked CRC32C of the length, data, masked CRC32C of the data."""
    blob = Path(path).read_bytes()
    records, pos = [], 0
    while pos < len(blob):
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        assert header_crc == masked_crc32c(header)
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked_crc32c(data)
        records.append(data)
        pos += 16 + length
    assert pos == len(blob)
    return records


def test_crc32c_reference_value():
    assert crc32c(b"123456789") == 0xE3069283  # the standard CRC-32C check value


def test_event_file_records_are_crc_framed(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 0.5, 3)
        w.add_text("note", "hi", 3)
    (path,) = event_files(tmp_path)
    events = [Event.FromString(r) for r in read_records(path)]
    assert events[0].file_version == "brain.Event:2"
    scalar = next(e for e in events if e.summary.value and e.summary.value[0].tag == "loss")
    assert scalar.step == 3 and scalar.summary.value[0].simple_value == 0.5
    assert abs(scalar.wall_time - time.time()) < 60


# -- names and layout --------------------------------------------------------------------------

def test_default_log_dir_and_event_file_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1", filename_suffix=".v2")
    try:
        host = socket.gethostname()
        assert re.fullmatch(r"runs/[A-Za-z]{3}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(host)
                            + r"_lr0\.1", w.get_logdir().replace(os.sep, "/"))
        (path,) = event_files(w.get_logdir())
        match = EVENT_FILE.match(path.name)
        assert match and match["host"] == host and match["pid"] == str(os.getpid())
        assert match["suffix"] == ".v2"
    finally:
        w.close()


def test_writes_from_a_background_thread_and_close_flushes(tmp_path):
    before = set(threading.enumerate())
    w = SummaryWriter(tmp_path, max_queue=3, flush_secs=3600)
    workers = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert workers, "the writer should start its flushing thread"
    for step in range(20):  # more than max_queue: the queue drains while we add
        w.add_scalar("x", step * 0.5, step)
    w.close()
    assert not any(t.is_alive() for t in workers)
    assert [e.value for e in accumulate(tmp_path).Scalars("x")] == [s * 0.5 for s in range(20)]
    w.close()  # a second close is ignored


def test_flush_makes_events_readable(tmp_path):
    with SummaryWriter(tmp_path, flush_secs=3600) as w:
        w.add_scalar("x", 1.0, 0)
        w.flush()
        assert [e.value for e in accumulate(tmp_path).Scalars("x")] == [1.0]


def test_add_after_close_opens_a_new_file(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.add_scalar("x", 2.0, 1)
    w.close()
    assert len(event_files(tmp_path)) == 2
    assert [e.value for e in accumulate(tmp_path).Scalars("x")] == [1.0, 2.0]


def test_purge_step_drops_the_earlier_runs_later_steps(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    time.sleep(1.1)  # the resumed run's file must sort after the first (its name has seconds)
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 100.0 + step, step)
    got = [(e.step, e.value) for e in accumulate(tmp_path).Scalars("loss")]
    assert got == [(s, float(s)) for s in range(5)] + [(s, 100.0 + s) for s in range(5, 8)]


# -- scalars -----------------------------------------------------------------------------------

def test_add_scalar_kinds_of_values(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("py", 0.1, 0)
        w.add_scalar("tensor0d", ember.tensor(2.5), 0)
        w.add_scalar("tensor1", ember.tensor([3.25]), 0)
        w.add_scalar("np", np.float64(4.5), 0)
        w.add_scalar("int", 7, 0)
        w.add_scalar("grad", ember.tensor(1.5, requires_grad=True) * 2, 0)
        w.add_scalar("walltime", 1.0, 9, walltime=1234.5)
    acc = accumulate(tmp_path)
    assert acc.Scalars("py")[0].value == pytest.approx(0.1, rel=1e-7)  # float32 simple_value
    assert acc.Scalars("tensor0d")[0].value == 2.5
    assert acc.Scalars("tensor1")[0].value == 3.25
    assert acc.Scalars("np")[0].value == 4.5
    assert acc.Scalars("int")[0].value == 7.0
    assert acc.Scalars("grad")[0].value == 3.0
    assert (acc.Scalars("walltime")[0].step, acc.Scalars("walltime")[0].wall_time) == (9, 1234.5)


def test_add_scalar_new_style_and_double_precision(tmp_path):
    value = 0.1 + 1e-12
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("single", value, 1, new_style=True)
        w.add_scalar("double", value, 1, new_style=True, double_precision=True)
    acc = accumulate(tmp_path)
    single = acc.Tensors("single")[0].tensor_proto
    double = acc.Tensors("double")[0].tensor_proto
    assert single.dtype == 1 and double.dtype == 2  # DT_FLOAT, DT_DOUBLE
    assert tensor_util.make_ndarray(single) == np.float32(value)
    assert tensor_util.make_ndarray(double) == value
    assert acc.SummaryMetadata("double").plugin_data.plugin_name == "scalars"


def test_add_scalar_rejects_more_than_one_value(tmp_path):
    with SummaryWriter(tmp_path) as w, pytest.raises(ValueError, match="one element"):
        w.add_scalar("bad", ember.tensor([1.0, 2.0]), 0)


def test_add_scalars_writes_one_sub_run_per_curve(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("loss/run", {"train": step * 1.0, "val": step * 2.0}, step)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == \
        ["loss_run_train", "loss_run_val"]
    train = accumulate(tmp_path / "loss_run_train")
    val = accumulate(tmp_path / "loss_run_val")
    assert train.Tags()["scalars"] == ["loss/run"] == val.Tags()["scalars"]
    assert [e.value for e in train.Scalars("loss/run")] == [0.0, 1.0, 2.0]
    assert [e.value for e in val.Scalars("loss/run")] == [0.0, 2.0, 4.0]


# -- histograms --------------------------------------------------------------------------------

@pytest.mark.parametrize("bins", ["tensorflow", "auto", "fd", "sturges", "sqrt", 10])
def test_add_histogram_buckets_match_numpy(tmp_path, bins):
    rng = np.random.default_rng(0)
    values = rng.normal(size=(40, 25)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", ember.tensor(values), 2, bins=bins)
    event = accumulate(tmp_path).Histograms("h")[0]
    assert event.step == 2
    hist = event.histogram_value
    flat = values.astype(np.float64).reshape(-1)
    assert (hist.min, hist.max, hist.num) == (flat.min(), flat.max(), flat.size)
    assert hist.sum == pytest.approx(flat.sum()) and hist.sum_squares == pytest.approx(
        flat.dot(flat))
    limits, counts = np.array(hist.bucket_limit), np.array(hist.bucket)
    assert counts[0] == 0 and counts.sum() == flat.size and np.all(np.diff(limits) > 0)
    # bucket i holds the values between the limits i-1 and i, as numpy counts them
    expected, _ = np.histogram(flat, bins=limits)
    np.testing.assert_array_equal(counts[1:], expected)
    if bins == "tensorflow":
        edges = default_bins()
        assert set(limits.tolist()) <= set(edges)
    else:
        np_counts, np_edges = np.histogram(flat, bins=bins)
        assert limits[-1] == np_edges[-1] and limits[1:].tolist() == \
            np_edges[len(np_edges) - len(limits) + 1:].tolist()


def test_add_histogram_max_bins_merges_buckets(tmp_path):
    values = np.linspace(0, 1, 1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", values, 0, bins=100, max_bins=10)
    hist = accumulate(tmp_path).Histograms("h")[0].histogram_value
    assert len(hist.bucket) == 11  # 10 merged buckets and the empty one on the left
    assert list(hist.bucket[1:]) == [100.0] * 10
    np.testing.assert_allclose(hist.bucket_limit, np.linspace(0, 1, 11))


def test_add_histogram_errors(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("h", np.array([]), 0)
        with pytest.raises(ValueError, match="finite"):
            w.add_histogram("h", np.array([1.0, np.nan]), 0)


def test_add_histogram_raw(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram_raw("raw", min=-1.0, max=2.0, num=6, sum=3.0, sum_squares=9.0,
                            bucket_limits=[-1.0, 0.0, 2.0], bucket_counts=[1, 2, 3],
                            global_step=4)
        with pytest.raises(ValueError, match="len\\(bucket_limits\\)"):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [0.0, 1.0], [1])
    hist = accumulate(tmp_path).Histograms("raw")[0].histogram_value
    assert (hist.min, hist.max, hist.num, hist.sum, hist.sum_squares) == (-1, 2, 6, 3, 9)
    assert list(hist.bucket_limit) == [-1, 0, 2] and list(hist.bucket) == [1, 2, 3]


# -- images ------------------------------------------------------------------------------------

def decoded(acc, tag) -> Image.Image:
    event = acc.Images(tag)[0]
    picture = Image.open(io.BytesIO(event.encoded_image_string))
    assert picture.format == "PNG"
    assert (picture.width, picture.height) == (event.width, event.height)
    return picture


def test_add_image_formats(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 6, 7)).astype(np.float32)
    hwc = rng.integers(0, 256, size=(6, 7, 3), dtype=np.uint8)
    hw = rng.random((5, 4))
    rgba = rng.random((4, 6, 7)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", ember.tensor(chw), 0)
        w.add_image("hwc", ember.tensor(hwc), 0, dataformats="HWC")
        w.add_image("hw", hw, 0, dataformats="HW")
        w.add_image("rgba", ember.tensor(rgba), 0)
        w.add_image("grey", ember.tensor(chw[:1]), 0)
        w.add_image("out_of_range", ember.tensor(chw * 3 - 1), 0)
    acc = accumulate(tmp_path)

    def pixels(x):
        return (x.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)

    picture = decoded(acc, "chw")
    assert picture.mode == "RGB" and picture.size == (7, 6)
    np.testing.assert_array_equal(np.asarray(picture), pixels(chw).transpose(1, 2, 0))
    np.testing.assert_array_equal(np.asarray(decoded(acc, "hwc")), hwc)
    np.testing.assert_array_equal(np.asarray(decoded(acc, "hw")),
                                  np.stack([pixels(hw)] * 3, axis=2))
    picture = decoded(acc, "rgba")
    assert picture.mode == "RGBA" and acc.Images("rgba")[0].width == 7
    np.testing.assert_array_equal(np.asarray(picture), pixels(rgba).transpose(1, 2, 0))
    np.testing.assert_array_equal(np.asarray(decoded(acc, "grey")),
                                  np.repeat(pixels(chw[:1]).transpose(1, 2, 0), 3, axis=2))
    np.testing.assert_array_equal(np.asarray(decoded(acc, "out_of_range")),
                                  pixels(chw * 3 - 1).transpose(1, 2, 0))


def test_add_images_tiles_a_batch(tmp_path):
    rng = np.random.default_rng(2)
    batch = rng.random((10, 1, 4, 5)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_images("nchw", ember.tensor(batch), 3)
        w.add_images("nhwc", ember.tensor(batch.transpose(0, 2, 3, 1)), 3, dataformats="NHWC")
    acc = accumulate(tmp_path)
    for tag in ("nchw", "nhwc"):
        grid = np.asarray(decoded(acc, tag))
        assert grid.shape == (8, 40, 3)  # 8 to a row: 2 rows of 4 x 5 images
        for i in range(10):
            row, col = divmod(i, 8)
            tile = grid[row * 4:(row + 1) * 4, col * 5:(col + 1) * 5, 0]
            np.testing.assert_array_equal(tile, (batch[i, 0] * 255).astype(np.uint8))
        assert not grid[4:, 10:].any()  # the unused tiles are black


def test_add_image_bad_dataformats(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(ValueError, match="size of input tensor and input format"):
            w.add_image("x", ember.rand(3, 4, 5), 0, dataformats="HW")
        with pytest.raises(ValueError, match="same dimension shorthand twice"):
            w.add_image("x", ember.rand(3, 4, 5), 0, dataformats="CHH")
        with pytest.raises(ValueError, match="1, 3 or 4 channels"):
            w.add_image("x", ember.rand(2, 4, 5), 0)


def test_add_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1, 2], [2, 0, 1])
    figures = [plt.figure(figsize=(1, 1), dpi=40) for _ in range(3)]
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", figure, 0)
        w.add_figure("figs", figures, 0)
    assert not plt.fignum_exists(figure.number)  # close=True closed it
    acc = accumulate(tmp_path)
    picture = np.asarray(decoded(acc, "fig"))
    assert picture.shape == (75, 100, 3) and picture.min() < 128 < picture.max()
    assert np.asarray(decoded(acc, "figs")).shape == (40, 120, 3)


# -- text, audio, tensors ----------------------------------------------------------------------

def test_add_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**lr** = 0.1 ✓", 5)
        with pytest.raises(TypeError, match="str"):
            w.add_text("notes", 3, 5)
    acc = accumulate(tmp_path)
    event = acc.Tensors("notes/text_summary")[0]
    assert event.step == 5
    assert tensor_util.make_ndarray(event.tensor_proto).tolist() == ["**lr** = 0.1 ✓".encode()]
    assert "notes/text_summary" in acc.PluginTagToContent("text")


def test_add_audio_and_add_tensor(tmp_path):
    import wave

    clip = np.sin(np.linspace(0, 20, 800)) * 1.5  # clipped to [-1, 1]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_audio("beep", ember.tensor(clip), 0, sample_rate=8000)
        w.add_tensor("t", ember.tensor(data), 0)
    acc = accumulate(tmp_path)
    audio = acc.Audio("beep")[0]
    assert (audio.sample_rate, audio.length_frames, audio.content_type) == \
        (8000, 800, "audio/wav")
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as wav:
        samples = np.frombuffer(wav.readframes(800), dtype="<i2")
    np.testing.assert_array_equal(samples, (np.clip(clip, -1, 1) * 32767).astype("<i2"))
    np.testing.assert_array_equal(tensor_util.make_ndarray(acc.Tensors("t")[0].tensor_proto),
                                  data)


# -- hparams -----------------------------------------------------------------------------------

def test_add_hparams_sub_run(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.01, "batch": 32, "optimizer": "adam", "nesterov": True,
                       "momentum": ember.tensor(0.9), "skipped": None},
                      {"hparam/accuracy": 0.75, "hparam/loss": 0.5},
                      hparam_domain_discrete={"optimizer": ["adam", "sgd"]},
                      run_name="trial1", global_step=3)
    run = tmp_path / "trial1"
    assert event_files(run)
    acc = accumulate(run)
    contents = acc.PluginTagToContent("hparams")
    assert set(contents) == {"_hparams_/experiment", "_hparams_/session_start_info",
                             "_hparams_/session_end_info"}
    experiment = hp_metadata.parse_experiment_plugin_data(contents["_hparams_/experiment"])
    infos = {h.name: h for h in experiment.hparam_infos}
    assert list(infos) == ["lr", "batch", "optimizer", "nesterov", "momentum"]
    assert [v.string_value for v in infos["optimizer"].domain_discrete.values] == \
        ["adam", "sgd"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    start = hp_metadata.parse_session_start_info_plugin_data(
        contents["_hparams_/session_start_info"])
    assert start.hparams["lr"].number_value == 0.01
    assert start.hparams["batch"].number_value == 32
    assert start.hparams["optimizer"].string_value == "adam"
    assert start.hparams["nesterov"].bool_value is True
    assert start.hparams["momentum"].number_value == pytest.approx(0.9)
    end = hp_metadata.parse_session_end_info_plugin_data(
        contents["_hparams_/session_end_info"])
    assert end.status == 1  # STATUS_SUCCESS
    assert acc.Scalars("hparam/accuracy")[0].value == 0.75
    assert acc.Scalars("hparam/loss")[0].step == 3


def test_add_hparams_bad_input(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(ValueError, match="value should be one of"):
            w.add_hparams({"lr": [0.1]}, {})
        with pytest.raises(TypeError, match="hparam_domain_discrete\\[lr\\]"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})


# -- embeddings --------------------------------------------------------------------------------

def test_add_embedding_files(tmp_path):
    rng = np.random.default_rng(3)
    mat = rng.normal(size=(5, 3)).astype(np.float32)
    images = rng.random((5, 3, 4, 4)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(ember.tensor(mat), metadata=list("abcde"), label_img=ember.tensor(images))
        w.add_embedding(mat[:2], metadata=[["x", 1], ["y", 2]], metadata_header=["name", "n"],
                        global_step=7, tag="features/layer1")
        with pytest.raises(ValueError, match="#labels"):
            w.add_embedding(mat, metadata=["a"], global_step=9)
    first, second = tmp_path / "00000" / "default", tmp_path / "00007" / "features%2flayer1"
    rows = [line.split("\t") for line in (first / "tensors.tsv").read_text().splitlines()]
    np.testing.assert_array_equal(np.array(rows, dtype=np.float64), mat.astype(np.float64))
    assert (first / "metadata.tsv").read_text() == "a\nb\nc\nd\ne\n"
    assert (second / "metadata.tsv").read_text() == "name\tn\nx\t1\ny\t2\n"
    sprite = np.asarray(Image.open(first / "sprite.png"))
    assert sprite.shape == (12, 12, 3)  # 3 x 3 tiles of 4 x 4
    np.testing.assert_array_equal(sprite[4:8, 0:4], (images[3] * 255).astype(np.uint8)
                                  .transpose(1, 2, 0))
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                               ProjectorConfig())
    assert [e.tensor_name for e in config.embeddings] == ["default:00000",
                                                          "features/layer1:00007"]
    assert config.embeddings[0].tensor_path == "00000/default/tensors.tsv"
    assert config.embeddings[0].metadata_path == "00000/default/metadata.tsv"
    assert config.embeddings[0].sprite.image_path == "00000/default/sprite.png"
    assert list(config.embeddings[0].sprite.single_image_dim) == [4, 4]
    assert config.embeddings[1].tensor_path == "00007/features%2flayer1/tensors.tsv"
    assert not config.embeddings[1].HasField("sprite")


# -- PR curves ---------------------------------------------------------------------------------

def brute_force_curve(labels, predictions, n):
    labels = labels.astype(np.float64)
    above = np.floor(predictions * (n - 1))[None, :] >= np.arange(n)[:, None]
    tp = (above * labels).sum(axis=1)
    fp = (above * (1 - labels)).sum(axis=1)
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack([tp, fp, tn, fn, precision, recall])


def test_add_pr_curve(tmp_path):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, size=200)
    predictions = np.clip(labels * 0.3 + rng.random(200) * 0.7, 0, 1)
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", ember.tensor(labels), ember.tensor(predictions), 1)
        w.add_pr_curve("pr11", labels.astype(bool), predictions, 1, num_thresholds=11)
        with pytest.raises(ValueError, match="in \\[0, 1\\]"):
            w.add_pr_curve("bad", labels, predictions + 1, 1)
        with pytest.raises(ValueError, match="same shape"):
            w.add_pr_curve("bad", labels[:3], predictions, 1)
    acc = accumulate(tmp_path)
    for tag, n in (("pr", 127), ("pr11", 11)):
        event = acc.Tensors(tag)[0]
        data = tensor_util.make_ndarray(event.tensor_proto)
        assert data.shape == (6, n)
        np.testing.assert_allclose(data, brute_force_curve(labels, predictions, n), rtol=1e-6)
    content = acc.PluginTagToContent("pr_curves")
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData

    assert PrCurvePluginData.FromString(content["pr11"]).num_thresholds == 11


def test_add_pr_curve_raw(tmp_path):
    tp, fp = np.array([5.0, 3, 1]), np.array([5.0, 1, 0])
    tn, fn = 5 - fp, 5 - tp
    precision, recall = tp / (tp + fp), tp / 5
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve_raw("raw", tp, fp, tn, fn, precision, recall, 2, num_thresholds=3)
        with pytest.raises(ValueError, match="same length"):
            w.add_pr_curve_raw("bad", tp, fp[:2], tn, fn, precision, recall, 2)
    data = tensor_util.make_ndarray(accumulate(tmp_path).Tensors("raw")[0].tensor_proto)
    np.testing.assert_allclose(data, np.stack([tp, fp, tn, fn, precision, recall]), rtol=1e-6)


# -- custom scalars ----------------------------------------------------------------------------

def test_add_custom_scalars(tmp_path):
    layout = {"Losses": {"both": ["Multiline", ["loss/train", "loss/val"]]},
              "Band": {"acc": ["Margin", ["acc/mean", "acc/low", "acc/high"]]}}
    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars(layout)
        with pytest.raises(ValueError, match="3 tags"):
            w.add_custom_scalars_marginchart(["a", "b"])
    proto = accumulate(tmp_path).Tensors("custom_scalars__config__")[0].tensor_proto
    parsed = layout_pb2.Layout.FromString(proto.string_val[0])
    assert [c.title for c in parsed.category] == ["Losses", "Band"]
    assert list(parsed.category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]
    series = parsed.category[1].chart[0].margin.series[0]
    assert (series.value, series.lower, series.upper) == ("acc/mean", "acc/low", "acc/high")


# -- graphs ------------------------------------------------------------------------------------

def graph_nodes(path) -> dict:
    acc = accumulate(path)
    assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]
    return {n.name: n for n in acc.Graph().node}


def shapes(node) -> list:
    return [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]


def test_add_graph_from_exported_program(tmp_path):
    def f(x, w):
        return (x @ w).relu().sum(dim=1)

    ep = ember.export.export(f, (ember.randn(2, 3), ember.randn(3, 4)))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(ep)
    nodes = graph_nodes(tmp_path)
    assert list(nodes) == ["input/x", "input/w", "ExportedProgram/matmul",
                           "ExportedProgram/relu", "ExportedProgram/sum", "output/output.1"]
    assert [nodes[n].op for n in nodes] == ["IO Node", "IO Node", "matmul", "relu", "sum",
                                            "IO Node"]
    assert list(nodes["ExportedProgram/matmul"].input) == ["input/x", "input/w"]
    assert list(nodes["output/output.1"].input) == ["ExportedProgram/sum"]
    assert shapes(nodes["ExportedProgram/matmul"]) == [[2, 4]]
    assert shapes(nodes["ExportedProgram/sum"]) == [[2]]


def test_add_graph_captures_a_function_or_draws_a_graph_module(tmp_path):
    def f(x, w):
        return (x @ w).relu()

    x, w_ = ember.randn(2, 3), ember.randn(3, 4)
    with SummaryWriter(tmp_path / "fn") as w:
        w.add_graph(f, (x, w_))
    with SummaryWriter(tmp_path / "lambda") as w:
        w.add_graph(lambda x: x.relu(), x)
    with SummaryWriter(tmp_path / "module") as w:
        w.add_graph(ember.export.export(f, (x, w_)).module())
    assert list(graph_nodes(tmp_path / "fn")) == ["input/x", "input/w", "f/matmul", "f/relu",
                                                  "output/output.1"]
    assert "lambda/relu" in graph_nodes(tmp_path / "lambda")
    assert "ExportedProgram/matmul" in graph_nodes(tmp_path / "module")


def test_add_graph_dynamic_dims_are_unknown(tmp_path):
    def f(x):
        return x * 2

    batch = ember.export.Dim("batch", min=1, max=64)
    ep = ember.export.export(f, (ember.randn(4, 3),), dynamic_shapes={"x": {0: batch}})
    with SummaryWriter(tmp_path) as w:
        w.add_graph(ep)
    nodes = graph_nodes(tmp_path)
    assert shapes(nodes["input/x"]) == [[-1, 3]] == shapes(nodes["ExportedProgram/mul"])


def small_net():
    nn = pytest.importorskip("ember.nn")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.act = nn.ReLU()
            self.head = nn.Sequential(nn.Dropout(0.5), nn.Linear(8, 3))

        def forward(self, x):
            return self.head(self.act(self.fc1(x))).softmax(-1)

    return Net()


def test_add_graph_captures_a_module_with_scopes(tmp_path, capsys):
    model = small_net()
    model.train()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, ember.randn(2, 4), verbose=True)
    assert model.training  # captured in eval mode (no dropout node), mode restored
    assert "linear" in capsys.readouterr().out
    nodes = graph_nodes(tmp_path)
    assert list(nodes) == [
        "Net/Linear[fc1]/weight", "Net/Linear[fc1]/bias",
        "Net/Sequential[head]/Linear[1]/weight", "Net/Sequential[head]/Linear[1]/bias",
        "input/x", "Net/Linear[fc1]/linear", "Net/ReLU[act]/relu",
        "Net/Sequential[head]/Linear[1]/linear_1", "Net/softmax", "output/output.1"]
    assert list(nodes["Net/Sequential[head]/Linear[1]/linear_1"].input) == [
        "Net/ReLU[act]/relu", "Net/Sequential[head]/Linear[1]/weight",
        "Net/Sequential[head]/Linear[1]/bias"]
    assert nodes["Net/Linear[fc1]/weight"].op == "Parameter"
    assert shapes(nodes["Net/Linear[fc1]/weight"]) == [[8, 4]]
    assert shapes(nodes["Net/Sequential[head]/Linear[1]/linear_1"]) == [[2, 3]]


def test_add_graph_of_an_exported_module_infers_scopes_from_parameters(tmp_path):
    model = small_net().eval()
    ep = ember.export.export(model, (ember.randn(2, 4),))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(ep)
    nodes = graph_nodes(tmp_path)
    assert "ExportedProgram/fc1/linear" in nodes
    assert "ExportedProgram/head/1/linear_1" in nodes
    assert "ExportedProgram/head/1/weight" in nodes
    assert list(nodes["ExportedProgram/relu"].input) == ["ExportedProgram/fc1/linear"]


# -- without tensorboard -----------------------------------------------------------------------

def test_import_without_tensorboard_names_the_extra(monkeypatch):
    for name in list(sys.modules):
        if name == "ember.utils.tensorboard" or name.startswith("ember.utils.tensorboard."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ModuleNotFoundError, match=re.escape("pip install 'ember-core["
                                                            "tensorboard]'")) as info:
        importlib.import_module("ember.utils.tensorboard")
    assert info.value.name == "tensorboard"
    assert "TensorBoard logging requires TensorBoard" in str(info.value)


# -- a real TensorBoard server -----------------------------------------------------------------

@contextlib.contextmanager
def tensorboard_server(logdir: Path, log: Path):
    """``tensorboard --logdir`` on 127.0.0.1 (a free port), in its own process group, ended
    with the whole group however the test ends; yields its base URL."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", "0",
             "--host", "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            match = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text(errors="replace"))
            if match:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tensorboard did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)
        yield match.group(0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def fetch_json(url: str, deadline: float, ready=bool):
    """GET ``url`` until it answers JSON that ``ready`` accepts (the server loads the logdir
    in the background)."""
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                last = json.loads(response.read())
            if ready(last):
                return last
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(0.3)
    pytest.fail(f"{url} did not answer in time (last: {last!r})")


def test_tensorboard_server_serves_the_scalars(tmp_path):
    logdir = tmp_path / "logs"
    with SummaryWriter(logdir / "run1") as w:
        for step in range(4):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
        w.add_image("digit", ember.rand(1, 8, 8), 0)
        w.add_graph(ember.export.export(lambda x: x.relu(), (ember.randn(2),)))
    with tensorboard_server(logdir, tmp_path / "tb.log") as url:
        deadline = time.monotonic() + 60
        query = urllib.parse.urlencode({"run": "run1", "tag": "loss/train"})
        rows = fetch_json(f"{url}data/plugin/scalars/scalars?{query}", deadline,
                          lambda r: isinstance(r, list) and len(r) == 4)
        assert [(step, value) for _, step, value in rows] == \
            [(s, pytest.approx(1.0 / (s + 1))) for s in range(4)]
        tags = fetch_json(f"{url}data/plugin/images/tags", deadline)
        assert "digit" in tags["run1"]
        with urllib.request.urlopen(f"{url}data/plugin/graphs/graph?run=run1&conceptual=false",
                                    timeout=10) as response:
            pbtxt = response.read().decode()
        assert 'name: "ExportedProgram/relu"' in pbtxt and 'op: "relu"' in pbtxt


# -- against torch.utils.tensorboard ------------------------------------------------------------

def layout(root: Path) -> list:
    """Every file under ``root``, event files reduced to their kind."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            out.append(re.sub(r"events\.out\.tfevents\..*$", "events.out.tfevents.*", rel))
    return sorted(out)


def plugin_content(acc, plugin: str) -> dict:
    try:
        return acc.PluginTagToContent(plugin)
    except KeyError:  # no tag of that plugin in the run
        return {}


@pytest.mark.parity
@pytest.mark.filterwarnings("ignore:`torch.jit.trace")  # torch's add_graph traces
def test_same_files_and_tags_as_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    rng = np.random.default_rng(5)
    values = rng.normal(size=500).astype(np.float32)
    picture = rng.random((3, 5, 6)).astype(np.float32)
    mat = rng.normal(size=(4, 3)).astype(np.float32)
    sprites = rng.random((4, 3, 2, 2)).astype(np.float32)
    labels = rng.integers(0, 2, size=50)
    predictions = rng.random(50)

    def log(writer, tensor, model, example):
        writer.add_scalar("loss", 0.25, 1)
        writer.add_scalars("group/x", {"a": 1.0, "b": 2.0}, 1)
        writer.add_histogram("weights", tensor(values), 1)
        writer.add_image("picture", tensor(picture), 1)
        writer.add_text("note", "hello", 1)
        writer.add_hparams({"lr": 0.1, "opt": "adam"}, {"hp/acc": 0.5}, run_name="hp")
        writer.add_embedding(tensor(mat), metadata=["a", "b", "c", "d"],
                             label_img=tensor(sprites), global_step=2, tag="emb")
        writer.add_pr_curve("pr", tensor(labels), tensor(predictions), 1)
        writer.add_graph(model, example)
        writer.add_custom_scalars({"c": {"t": ["Multiline", ["loss"]]}})

    nn = pytest.importorskip("ember.nn")
    ours, theirs = tmp_path / "ember", tmp_path / "torch"
    with SummaryWriter(ours) as w:
        log(w, ember.tensor, nn.Linear(3, 2), ember.randn(1, 3))
    with torch_tb.SummaryWriter(theirs) as w:
        log(w, torch.tensor, torch.nn.Linear(3, 2), torch.randn(1, 3))
    assert layout(ours) == layout(theirs)
    for run in ("", "group_x_a", "group_x_b", "hp"):
        a, b = accumulate(ours / run), accumulate(theirs / run)
        assert a.Tags() == b.Tags(), run
        for tag in a.Tags()["scalars"]:
            assert [e.value for e in a.Scalars(tag)] == [e.value for e in b.Scalars(tag)]
        for plugin in ("hparams", "text", "pr_curves", "custom_scalars", "scalars"):
            assert plugin_content(a, plugin) == plugin_content(b, plugin), (run, plugin)
    a, b = accumulate(ours), accumulate(theirs)
    assert a.Histograms("weights")[0].histogram_value == b.Histograms("weights")[0] \
        .histogram_value
    np.testing.assert_array_equal(np.asarray(decoded(a, "picture")),
                                  np.asarray(decoded(b, "picture")))
    for tag in ("note/text_summary", "pr", "custom_scalars__config__"):
        assert a.Tensors(tag)[0].tensor_proto == b.Tensors(tag)[0].tensor_proto, tag
    for name in ("projector_config.pbtxt", "00002/emb/tensors.tsv", "00002/emb/metadata.tsv"):
        assert (ours / name).read_text() == (theirs / name).read_text(), name
    np.testing.assert_array_equal(np.asarray(Image.open(ours / "00002/emb/sprite.png")),
                                  np.asarray(Image.open(theirs / "00002/emb/sprite.png")))
    ops_a = {n.op for n in a.Graph().node}
    assert {"IO Node", "Parameter", "linear"} <= ops_a
    assert "aten::linear" in {n.op for n in b.Graph().node}
