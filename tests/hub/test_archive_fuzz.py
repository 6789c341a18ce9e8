"""Hostile repository archives against the hub's extraction (``_repo.safe_extract_zip``):
traversal, absolute and overlong names, NUL bytes, symlinks and special files, duplicates,
files that are also directories, overlapping members, decompression and member-count bombs,
encryption, truncation. Each case runs in the corpus worker's memory-limited subprocess
(tests/core/data/fuzz_worker.py): it must end in a clean exception (or a correct
extraction) within 2 s, and write nothing outside its target directory."""

import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest

from ember.hub import _repo

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "core", "data")
WORKER = os.path.join(DATA, "fuzz_worker.py")
CASE_SECONDS = 2.0  # of the loading process's CPU time: the most one hostile input may take
CLEAN = {"ValueError", "BadZipFile"}


def _maker():
    spec = importlib.util.spec_from_file_location("ember_test_data_make_bad_checkpoints",
                                                  os.path.join(DATA, "make_bad_checkpoints.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_hostile_archives_in_a_subprocess(tmp_path):
    cases = _maker().archive_cases()
    manifest = _maker().write_cases(cases, str(tmp_path / "cases"))
    (tmp_path / "cwd").mkdir()
    proc = subprocess.run([sys.executable, WORKER, manifest, "ember"], cwd=tmp_path / "cwd",
                          capture_output=True, text=True, timeout=300)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    records = {r["name"]: r for r in lines if "name" in r}
    assert proc.returncode == 0, f"the worker died at {lines[-1:]}:\n{proc.stderr[-3000:]}"
    problems = []
    for case in cases:
        r = records[case.name]
        if r["cpu_seconds"] > CASE_SECONDS:
            problems.append(f"{case.name}: took {r['cpu_seconds']:.2f} s of CPU")
        if r["outcome"] == "error" and r["type"] not in CLEAN:
            problems.append(f"{case.name}: {r['type']}: {r['message']}")
        if (r["outcome"] == "load") != (case.expect != "refuse") and case.expect != "either":
            problems.append(f"{case.name}: expected {case.expect}, got {r['outcome']}")
    assert not problems, "\n".join(problems)
    assert os.listdir(tmp_path / "cwd") == []


def _zip(tmp_path, members) -> zipfile.ZipFile:
    path = tmp_path / "a.zip"
    path.write_bytes(_maker().raw_zip(members))
    return zipfile.ZipFile(path)


@pytest.mark.parametrize("name, message", [
    ("r/../../evil.py", "directory traversal"), ("/etc/evil.py", "absolute path"),
    ("r\\..\\..\\evil.py", "directory traversal"), ("C:/evil.py", "absolute path"),
    ("r/a\0/../../evil.py", "NUL byte"), ("r/" + "d/" * 3000 + "f", "too long"),
])
def test_unsafe_names_are_refused_before_anything_is_written(tmp_path, name, message):
    maker = _maker()
    zf = _zip(tmp_path, [maker.member("r/ok.py", b"x"), maker.member(name, b"x")])
    with pytest.raises(ValueError, match=message):
        _repo.safe_extract_zip(zf, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_layout_tricks_are_refused(tmp_path):
    maker = _maker()
    cases = {
        "duplicate entry": [maker.member("r/a", b"1"), maker.member("r/a", b"2")],
        "both a file and a directory": [maker.member("r/a", b"1"), maker.member("r/a/b", b"2")],
        "overlap": maker.nested_members([], "r/a", "r/b", b"1"),
        "not a regular file": [maker.member("r/fifo", b"", external_attr=0o10644 << 16)],
        "encrypted": [maker.member("r/a", b"1", flags=1)],
        "more than deflate": [maker.member("r/a", b"", zipfile.ZIP_DEFLATED,
                                           data=b"\x03\x00", usize=10**7, csize=2, crc=0)],
    }
    for message, members in cases.items():
        with pytest.raises(ValueError, match=message):
            _repo.safe_extract_zip(_zip(tmp_path, members), tmp_path / "out")


def test_a_plain_archive_extracts(tmp_path):
    maker = _maker()
    zf = _zip(tmp_path, [maker.member("r/", b"", external_attr=0o40755 << 16),
                         maker.member("r/pkg/a.py", b"x = 1\n", zipfile.ZIP_DEFLATED),
                         maker.member("r/b.txt", b"hi")])
    _repo.safe_extract_zip(zf, tmp_path / "out")
    assert (tmp_path / "out" / "r" / "pkg" / "a.py").read_bytes() == b"x = 1\n"
    assert (tmp_path / "out" / "r" / "b.txt").read_bytes() == b"hi"
