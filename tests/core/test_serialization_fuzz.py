"""Malformed and malicious checkpoints: only clean errors escape ``ember.load``, no payload
runs, nothing hangs or exhausts memory, and no damaged tensor data loads silently.

The committed corpus is data/bad_checkpoints/ (made by data/make_bad_checkpoints.py); the
larger hostile corpus is generated into a temporary folder and loaded case by case by
data/fuzz_worker.py in a subprocess under a 2 GiB address-space limit, so that a crash, a
hang or a MemoryError fails the test instead of the test run. The same corpus goes through
``torch.load(weights_only=True)`` when PyTorch is installed, and the outcomes are compared.
"""

import importlib.util
import io
import json
import os
import pickle
import re
import subprocess
import sys
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

CLEAN = (RuntimeError, pickle.UnpicklingError, EOFError)
DATA = os.path.join(os.path.dirname(__file__), "data")
CORPUS = os.path.join(DATA, "bad_checkpoints")
WORKER = os.path.join(DATA, "fuzz_worker.py")
FILES = sorted(os.listdir(CORPUS))
CASE_SECONDS = 2.0  # the most CPU time any one hostile input may take
# the exception types each loader may raise on a hostile input
CLEAN_TYPES = {"pt": {"RuntimeError", "UnpicklingError", "EOFError"},
               "pt-mmap": {"RuntimeError", "UnpicklingError", "EOFError"},
               "st": {"SafetensorError", "TypeError"}}


def load_data_module(name: str):
    """A module of tests/core/data/ (not a package: imported by path)."""
    spec = importlib.util.spec_from_file_location(f"ember_test_data_{name}",
                                                  os.path.join(DATA, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run_worker(manifest: str, engine: str, cwd) -> dict:
    """Run fuzz_worker.py; its per-case records by name. A worker that dies names the case
    it was loading."""
    proc = subprocess.run([sys.executable, WORKER, manifest, engine], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    records, started = {}, None
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        if "start" in record:
            started = record["start"]
        else:
            records[record["name"]] = record
            started = None
    assert proc.returncode == 0 and started is None, (
        f"the worker died (exit {proc.returncode}) while loading {started!r}:\n"
        f"{proc.stderr[-3000:]}")
    return records


def check_outcomes(cases: list[dict], records: dict, clean_types: dict) -> list[str]:
    """What is wrong with each case's outcome, as messages (empty when all is well)."""
    problems = []
    for case in cases:
        r = records.get(case["name"])
        if r is None:
            problems.append(f"{case['name']}: no result")
            continue
        what = f"{case['name']} ({case['expect']}):"
        if r["cpu_seconds"] > CASE_SECONDS:
            problems.append(f"{what} took {r['cpu_seconds']:.2f} s of CPU")
        if r["outcome"] == "error":
            if r["type"] not in clean_types[case["kind"]]:
                problems.append(f"{what} raised {r['type']}: {r['message']}")
            if case["expect"] == "load":
                problems.append(f"{what} did not load: {r['type']}: {r['message']}")
        elif case["expect"] == "refuse":
            problems.append(f"{what} loaded")
        elif not r.get("correct", True):
            problems.append(f"{what} loaded something else: {r.get('check_error', '')}")
    return problems


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The hostile checkpoint corpus, written once for this module: (manifest, cases)."""
    maker = load_data_module("make_bad_checkpoints")
    manifest = maker.write_cases(maker.checkpoint_cases(),
                                 str(tmp_path_factory.mktemp("hostile")))
    with open(manifest) as fh:
        return manifest, json.load(fh)


@pytest.fixture(scope="module")
def ember_records(hostile, tmp_path_factory):
    """The ember worker's records for the corpus, and the folder it ran in."""
    cwd = tmp_path_factory.mktemp("ember_cwd")
    return run_worker(hostile[0], "ember", cwd), cwd


def test_hostile_corpus_in_a_subprocess(hostile, ember_records):
    cases = hostile[1]
    records, cwd = ember_records
    problems = check_outcomes(cases, records, CLEAN_TYPES)
    assert not problems, "\n".join(problems)
    assert os.listdir(cwd) == [], "a payload ran"
    flips = [c for c in cases if "_flip_" in c["name"] and c["expect"] == "refuse"]
    assert len(flips) >= 100 and all(records[c["name"]]["outcome"] == "error" for c in flips)
    assert any(c["name"].startswith("damaged_zip_mmap") for c in flips)


# Where ember and PyTorch both refuse a file with different exception types: PyTorch's type
# comes from its internals (a failed tuple unpacking, a read-only attribute, struct.unpack,
# a UTF-8 decode, an empty stack), where Ember's restricted unpickler names the problem as
# UnpicklingError; or Ember finds the zip damaged (CRC, sizes) before PyTorch finds the
# pickle inside it broken; or PyTorch tries to allocate what Ember refuses to call.
TYPE_DIFFERENCES = {
    ("IndexError", "UnpicklingError"), ("error", "UnpicklingError"),
    ("UnicodeDecodeError", "UnpicklingError"), ("ValueError", "UnpicklingError"),
    ("TypeError", "UnpicklingError"), ("AttributeError", "UnpicklingError"),
    ("RuntimeError", "UnpicklingError"), ("UnpicklingError", "RuntimeError"),
    ("EOFError", "RuntimeError"),
}


@pytest.mark.parity
def test_hostile_corpus_matches_pytorch(hostile, ember_records, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    manifest, cases = hostile
    theirs = run_worker(manifest, "torch", tmp_path)
    ours = ember_records[0]
    problems, stricter = [], []
    for case in cases:
        name = case["name"]
        if name not in theirs:
            continue  # too slow for PyTorch's pure-Python unpickler
        t, e = theirs[name], ours[name]
        if t["outcome"] == "load" and e["outcome"] == "error":
            stricter.append(name)  # damage PyTorch loads silently, or a bomb it accepts
        elif t["outcome"] == "error" and e["outcome"] == "load":
            if not e.get("correct", False):
                problems.append(f"{name}: PyTorch raises {t['type']}, ember loads other data")
        elif t["outcome"] == "error" and t["type"] != e["type"] and \
                (t["type"], e["type"]) not in TYPE_DIFFERENCES:
            problems.append(f"{name}: PyTorch raises {t['type']}, ember {e['type']}")
        if name.startswith("exec_") and e.get("type") != t.get("type"):
            problems.append(f"{name}: {e.get('type')} where PyTorch raises {t.get('type')}")
    assert not problems, "\n".join(problems)
    storage_flips = [c["name"] for c in cases if "_flip_" in c["name"]
                     and c["expect"] == "refuse" and c["name"] in theirs]
    assert set(storage_flips) <= set(stricter)  # PyTorch loads them all as other numbers
    assert os.listdir(tmp_path) == []


# -- the committed corpus and in-process properties -------------------------------------------

def _valid(legacy=False) -> bytes:
    base = ember.arange(12.0).reshape(3, 4)
    obj = {"w": base, "v": base[1:, ::2], "b": ember.ones(3, dtype=ember.int64),
           "meta": {"step": ember.tensor(2.0), "name": "x"}}
    buf = io.BytesIO()
    ember.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


VALID = _valid()
VALID_LEGACY = _valid(legacy=True)


def test_corpus_is_present():
    assert len(FILES) >= 20


@pytest.mark.parametrize("name", FILES)
def test_bad_checkpoint_raises_cleanly(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CLEAN) as info:
        ember.load(os.path.join(CORPUS, name))
    # PyTorch's weights-only unpickler raises a bare EOFError at the end of the data
    assert str(info.value) or type(info.value) is EOFError
    if "exec" in name:
        # refused by name: not allowed, or of a blocked module (os, sys...), as in PyTorch
        assert re.search("Unsupported global|whose module .* is blocked", str(info.value))
        assert not os.path.exists("ember_pwned_marker")


def _load_or_clean_error(data: bytes) -> None:
    try:
        ember.load(io.BytesIO(data))
    except CLEAN:
        pass


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_mutated_bytes(data, legacy):
    raw = bytearray(VALID_LEGACY if legacy else VALID)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    _load_or_clean_error(bytes(raw))


def test_a_local_header_offset_below_the_archive_start():
    """An end-of-central-directory record that places the central directory 64 KiB further
    than it is (zipfile then takes the archive to start 64 KiB before the file, and every
    local header offset turns negative: a negative seek) is a clean error; found by
    test_mutated_bytes."""
    raw = bytearray(VALID)
    eocd = raw.rindex(b"PK\x05\x06")
    stated = int.from_bytes(raw[eocd + 16:eocd + 20], "little")
    raw[eocd + 16:eocd + 20] = (stated + 65536).to_bytes(4, "little")
    with pytest.raises(CLEAN, match="bad local header offset"):
        ember.load(io.BytesIO(bytes(raw)))


@settings(max_examples=40, deadline=5000)
@given(st.booleans(), st.integers(0, 10_000))
def test_truncated(legacy, cut):
    raw = VALID_LEGACY if legacy else VALID
    _load_or_clean_error(raw[: cut % len(raw)])


@settings(max_examples=40, deadline=5000)
@given(st.binary(max_size=300))
def test_random_pickles_inside_a_valid_archive(payload):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02" + payload)
    _load_or_clean_error(buf.getvalue())
