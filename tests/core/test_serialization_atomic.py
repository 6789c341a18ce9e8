"""``ember.save`` and ``ember.safetensors.save_file`` write durably and atomically: the
temporary file is fsynced before it replaces the target and the directory after, and the
temporaries that killed saves left behind are removed by the next save to the same file,
never those of a save still running in another process."""

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember import serialization

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX process and fsync semantics")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


HOST = serialization._host()


def _temporary(directory, target: str, pid: int, token: str = "0123abcd", age_s: float = 60,
               host: str = HOST):
    path = directory / f".{target}.{host}.{pid}.{token}.tmp"
    path.write_bytes(b"partial checkpoint")
    past = time.time() - age_s
    os.utime(path, (past, past))
    return path


def _save(kind: str, path) -> None:
    if kind == "pt":
        ember.save({"w": ember.arange(4.0)}, path)
    else:
        pytest.importorskip("safetensors")
        ember.safetensors.save_file({"w": ember.arange(4.0)}, path)


@posix_only
@pytest.mark.parametrize("kind", ["pt", "safetensors"])
def test_stale_temporaries_of_dead_saves_are_removed(tmp_path, kind):
    target = f"ckpt.{kind}"
    dead = _dead_pid()
    stale = _temporary(tmp_path, target, dead)
    running_here = _temporary(tmp_path, target, os.getpid(), "cafe0000")  # a live process
    just_written = _temporary(tmp_path, target, dead, "feed0000", age_s=-60)  # newer
    other_target = _temporary(tmp_path, "other.pt", dead)
    other_host = _temporary(tmp_path, target, dead, host="elsewhere")  # its pids aren't ours
    lookalike = tmp_path / f".{target}.{HOST}.{dead}.not-hex.tmp"
    lookalike.write_bytes(b"x")
    _save(kind, tmp_path / target)
    assert not stale.exists()
    assert running_here.exists() and just_written.exists() and other_target.exists()
    assert other_host.exists() and lookalike.exists()
    assert (tmp_path / target).exists()


def test_temporary_name_and_file_mode(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    ember.save(ember.ones(2), tmp_path / "m.pt")
    assert re.fullmatch(rf"\.m\.pt\.{re.escape(HOST)}\.{os.getpid()}\.[0-9a-f]+\.tmp",
                        seen[0])
    if os.name == "posix":  # the umask decides, as for open(path, "wb"), not 0o600
        umask = os.umask(0)
        os.umask(umask)
        assert os.stat(tmp_path / "m.pt").st_mode & 0o777 == 0o666 & ~umask


@posix_only
@pytest.mark.parametrize("kind", ["pt", "safetensors"])
def test_the_file_then_the_directory_are_fsynced_around_the_rename(tmp_path, monkeypatch,
                                                                   kind):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        info = os.fstat(fd)
        events.append(("fsync-dir" if stat.S_ISDIR(info.st_mode) else "fsync-file",
                       info.st_ino))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.stat(src).st_ino))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    _save(kind, tmp_path / "f")
    file_ino, dir_ino = os.stat(tmp_path / "f").st_ino, os.stat(tmp_path).st_ino
    assert events == [("fsync-file", file_ino), ("replace", file_ino), ("fsync-dir", dir_ino)]


SAVER = textwrap.dedent("""
    import sys
    import numpy as np
    import ember
    big = {"w": ember.from_numpy(np.ones(4 << 20, dtype=np.float32))}  # 16 MiB
    print("ready", flush=True)
    while True:
        ember.save(big, sys.argv[1])
""")


@posix_only
def test_a_save_killed_midway_leaves_a_temporary_the_next_save_removes(tmp_path):
    target = tmp_path / "big.pt"
    pattern = re.compile(rf"\.big\.pt\.{re.escape(HOST)}\.(\d+)\.[0-9a-f]+\.tmp\Z")
    child = subprocess.Popen([sys.executable, "-c", SAVER, str(target)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        left = []
        deadline = time.monotonic() + 60
        while not left and time.monotonic() < deadline:
            if any(pattern.match(n) for n in os.listdir(tmp_path)):
                child.send_signal(signal.SIGKILL)  # mid-write, most of the time
                child.wait()
                left = [n for n in os.listdir(tmp_path) if pattern.match(n)]
                if not left:  # it had just finished that save: start another saver
                    child.stdout.close()
                    child = subprocess.Popen([sys.executable, "-c", SAVER, str(target)],
                                             stdout=subprocess.PIPE, text=True)
                    child.stdout.readline()
            else:
                time.sleep(0.001)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert left, "no save was killed while its temporary existed"
    assert int(pattern.match(left[0]).group(1)) == child.pid
    if target.exists():  # the target is never half written: the old file or the new one
        assert ember.load(target)["w"].shape == (4 << 20,)
    ember.save({"w": ember.arange(3.0)}, target)
    assert os.listdir(tmp_path) == ["big.pt"]
    np.testing.assert_array_equal(ember.load(target)["w"].numpy(), [0, 1, 2])


def test_remove_stale_temporaries_returns_what_it_removed(tmp_path):
    if os.name != "posix":
        assert serialization.remove_stale_temporaries(tmp_path / "x.pt", time.time()) == []
        return
    stale = _temporary(tmp_path, "x.pt", _dead_pid())
    assert serialization.remove_stale_temporaries(tmp_path / "x.pt", time.time()) == [
        str(stale)]


def test_threads_saving_and_loading_one_file(tmp_path):
    import threading

    target = tmp_path / "shared.pt"
    ember.save({"w": ember.full((1 << 18,), -1.0)}, target)
    errors, seen = [], set()

    def saver(value: float):
        try:
            for _ in range(5):
                ember.save({"w": ember.full((1 << 18,), value)}, target)
        except Exception as exc:  # reported below, in the main thread
            errors.append(exc)

    def loader():
        try:
            for _ in range(10):
                w = ember.load(target)["w"].numpy()
                assert (w == w[0]).all()  # never a mix of two saves
                seen.add(float(w[0]))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(float(i),)) for i in range(3)]
    threads += [threading.Thread(target=loader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen <= {-1.0, 0.0, 1.0, 2.0}
    assert os.listdir(tmp_path) == ["shared.pt"]
