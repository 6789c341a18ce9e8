"""The downloader's transfer limits (minimum rate, whole-download deadline) and its cleanup
of ``.partial`` files left by killed downloads, against a local server that trickles bytes.

Every handler thread the trickling server starts is stopped and joined when its test ends,
whether the test passed or not (the ``trickle`` fixture).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest
import requests

from ember.hub import download, download_url_to_file
from ember.hub.download import DownloadTimeoutError, fetch

DATA = bytes(range(256)) * 64  # 16 KiB
SHA = hashlib.sha256(DATA).hexdigest()
QUICK = {"backoff": 0.0, "progress": False}
BYTE_DELAY = 0.05  # the trickle: one byte every 50 ms, 20 bytes/s
TWO_DAYS = 2 * 24 * 3600


class Trickle:
    """Handler factories whose threads end with the test: ``stop`` is set at teardown."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def _send(self, req, status, body, headers) -> None:
        self.threads.append(threading.current_thread())
        req.send_response(status)
        req.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            req.send_header(key, value)
        req.end_headers()

    def serve(self, data: bytes, fast: int = 0, times: int = 1 << 30):
        """The first ``times`` requests get ``fast`` bytes at once, then one byte every
        ``BYTE_DELAY`` s; later requests get the rest at once. Honours ``Range: bytes=N-``."""
        def handler(req, n):
            value = req.headers.get("Range", "")
            start = int(value[len("bytes="):-1]) if value.startswith("bytes=") else 0
            headers = ({"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
                       if start else {})
            body = data[start:]
            self._send(req, 206 if start else 200, body, headers)
            if n >= times:
                req.wfile.write(body)
                return
            try:
                req.wfile.write(body[:fast])
                for i in range(fast, len(body)):
                    if self.stop.wait(BYTE_DELAY):
                        return
                    req.wfile.write(body[i:i + 1])
            except OSError:  # the client gave up: the point of most tests here
                req.close_connection = True
        return handler

    def silent_after(self, data: bytes, count: int):
        """Announce ``data``, trickle ``count`` bytes of it, then send nothing until the test
        ends."""
        def handler(req, n):
            self._send(req, 200, data, {})
            try:
                for i in range(count):
                    if self.stop.wait(BYTE_DELAY):
                        return
                    req.wfile.write(data[i:i + 1])
            except OSError:
                return
            self.stop.wait(30)
            req.close_connection = True
        return handler


@pytest.fixture
def trickle(server):
    t = Trickle()
    try:
        yield t
    finally:
        t.stop.set()
        for thread in t.threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in t.threads)


def partials(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".partial"))


def test_below_min_rate_is_aborted_naming_url_bytes_and_rule(server, trickle, tmp_path):
    url = server.route("/f.bin", trickle.serve(DATA))
    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError) as info:
        fetch(url, tmp_path / "f.bin", min_rate=200, rate_window=0.4, retries=1, **QUICK)
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert f"failed to download {url} to {tmp_path / 'f.bin'} after 2 attempts" in message
    assert "too slow" in message and "bytes received)" in message
    assert "min_rate=200 bytes/s averaged over rate_window=0.4 s" in message
    assert isinstance(info.value, requests.ConnectionError)
    assert isinstance(info.value, TimeoutError)
    assert 0.8 <= elapsed < 3.0  # two windows of 0.4 s, not the 14 minutes of the trickle
    assert len(server.requests_to("/f.bin")) == 2
    assert not (tmp_path / "f.bin").exists() and partials(tmp_path) == []


def test_stalled_attempt_is_retried_and_resumed(server, trickle, tmp_path):
    # The first request sends 1000 bytes at once, then trickles: too slow after 0.3 s.
    url = server.route("/f.bin", trickle.serve(DATA, fast=1000, times=1))
    fetch(url, tmp_path / "f.bin", sha256=SHA, min_rate=5000, rate_window=0.3, **QUICK)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    first, second = server.requests_to("/f.bin")
    assert "Range" not in first
    resumed_at = int(second["Range"][len("bytes="):-1])
    assert 1000 <= resumed_at < 1100


def test_slow_link_above_min_rate_completes(server, trickle, tmp_path):
    data = DATA[:24]  # 24 bytes at 20 bytes/s: 1.2 s, three windows at the allowed rate
    url = server.route("/f.bin", trickle.serve(data))
    fetch(url, tmp_path / "f.bin", min_rate=10, rate_window=0.4, retries=0, **QUICK)
    assert (tmp_path / "f.bin").read_bytes() == data
    assert len(server.requests_to("/f.bin")) == 1


def test_min_rate_zero_means_no_minimum(server, trickle, tmp_path):
    data = DATA[:12]
    url = server.route("/f.bin", trickle.serve(data))
    fetch(url, tmp_path / "f.bin", min_rate=0, rate_window=0.1, retries=0, **QUICK)
    assert (tmp_path / "f.bin").read_bytes() == data


def test_normal_download_passes_the_default_limits(server, tmp_path):
    url = server.route("/f.bin", server.serve(DATA))
    download_url_to_file(url, str(tmp_path / "f.bin"), hash_prefix=SHA[:8], progress=False,
                         deadline=10.0)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    assert download.DEFAULT_MIN_RATE > 0 and download.DEFAULT_DEADLINE is None


def test_deadline_aborts_a_trickle_without_retrying(server, trickle, tmp_path):
    url = server.route("/f.bin", trickle.serve(DATA))
    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError) as info:
        fetch(url, tmp_path / "f.bin", deadline=0.6, min_rate=0, retries=5, **QUICK)
    elapsed = time.monotonic() - started
    assert str(info.value).startswith(f"download of {url} ran past its deadline of 0.6 s (")
    received = int(str(info.value).split("(")[1].split()[0])
    assert 5 <= received <= 13  # about 0.6 s of 20 bytes/s
    assert 0.6 <= elapsed < 1.5
    assert len(server.requests_to("/f.bin")) == 1
    assert partials(tmp_path) == []


def test_deadline_cuts_a_read_from_a_server_gone_silent(server, trickle, tmp_path):
    # 16 bytes in 0.8 s, then silence: each read waits only as long as the deadline allows
    # (not the read timeout, nor the 1 s left of the deadline when the attempt began).
    url = server.route("/f.bin", trickle.silent_after(DATA, 16))
    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError) as info:
        fetch(url, tmp_path / "f.bin", deadline=1.0, timeout=30.0, retries=3, **QUICK)
    assert time.monotonic() - started < 1.5
    assert str(info.value).startswith(f"download of {url} ran past its deadline of 1 s (")
    # all 16 bytes on a quiet machine; a loaded one's server thread may fall behind the
    # trickle (a CI run saw 13 within the second): the deadline, not the data, ends it
    received = int(str(info.value).split("(")[1].split()[0])
    assert 8 <= received <= 16
    assert len(server.requests_to("/f.bin")) == 1


def test_deadline_includes_retries_and_pauses(server, tmp_path):
    url = server.route("/f.bin", server.fail_then(1000, 503, server.serve(DATA)))
    started = time.monotonic()
    with pytest.raises(DownloadTimeoutError, match=r"deadline of 0.5 s \(0 bytes received\)"):
        fetch(url, tmp_path / "f.bin", deadline=0.5, retries=100, backoff=0.1,
              progress=False)
    assert time.monotonic() - started < 1.5
    assert 2 <= len(server.requests_to("/f.bin")) <= 6  # pauses of 0.1, 0.2, 0.4 s


def test_module_defaults_apply_to_calls_without_limits(server, trickle, tmp_path,
                                                       monkeypatch):
    """Downloads made on a program's behalf (``load_state_dict_from_url``) follow them."""
    monkeypatch.setattr(download, "DEFAULT_MIN_RATE", 200.0)
    monkeypatch.setattr(download, "DEFAULT_RATE_WINDOW", 0.3)
    url = server.route("/f.bin", trickle.serve(DATA))
    with pytest.raises(DownloadTimeoutError, match="min_rate=200 bytes/s"):
        fetch(url, tmp_path / "f.bin", retries=0, **QUICK)
    monkeypatch.setattr(download, "DEFAULT_MIN_RATE", 0.0)
    monkeypatch.setattr(download, "DEFAULT_DEADLINE", 0.4)
    with pytest.raises(DownloadTimeoutError, match="deadline of 0.4 s"):
        download_url_to_file(url, str(tmp_path / "f.bin"), progress=False)


def _partial(directory, target: str, age: float) -> str:
    path = os.path.join(directory, f"{target}.{os.urandom(16).hex()}.partial")
    with open(path, "wb") as f:
        f.write(b"left by a killed download")
    then = time.time() - age
    os.utime(path, (then, then))
    return os.path.basename(path)


def test_stale_partials_of_the_target_are_removed_fresh_ones_kept(server, tmp_path):
    stale = _partial(tmp_path, "f.bin", TWO_DAYS)
    fresh = _partial(tmp_path, "f.bin", 60)  # may be a running download's
    other = _partial(tmp_path, "g.bin", TWO_DAYS)  # another target's
    longer = _partial(tmp_path, "f.bin.x", TWO_DAYS)  # the target "f.bin.x", not "f.bin"
    url = server.route("/f.bin", server.serve(DATA))
    fetch(url, tmp_path / "f.bin", sha256=SHA, **QUICK)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    assert stale not in partials(tmp_path)
    assert partials(tmp_path) == sorted([fresh, other, longer])


def test_stale_partials_are_removed_even_when_the_download_fails(server, tmp_path):
    stale = _partial(tmp_path, "f.bin", TWO_DAYS)
    with pytest.raises(requests.HTTPError, match="404"):
        fetch(server.url("/missing"), tmp_path / "f.bin", **QUICK)
    assert stale not in partials(tmp_path)


def test_a_reused_file_leaves_partials_alone(server, tmp_path):
    (tmp_path / "f.bin").write_bytes(DATA)
    stale = _partial(tmp_path, "f.bin", TWO_DAYS)
    fetch(server.url("/f.bin"), tmp_path / "f.bin", sha256=SHA, **QUICK)
    assert partials(tmp_path) == [stale]  # no download started: nothing touched
    assert server.log == []
