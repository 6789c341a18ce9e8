"""The downloader against a local HTTP server: checksums, retries, resume, locks, offline."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import socket
import threading
import time

import pytest
import requests

from ember.hub import OfflineError, download_url_to_file
from ember.hub.download import fetch

DATA = bytes(range(256)) * 4096  # 1 MiB, several read chunks
SHA = hashlib.sha256(DATA).hexdigest()
MD5 = hashlib.md5(DATA).hexdigest()
FAST = {"backoff": 0.0, "timeout": 5.0, "progress": False}


def leftovers(directory) -> list[str]:
    """Temporary files left in a download directory (lock files are expected)."""
    return [n for n in os.listdir(directory) if n.endswith(".partial")]


def test_download_success_with_hash_prefix(server, tmp_path):
    url = server.route("/f.bin", server.serve(DATA))
    dst = tmp_path / "f.bin"
    download_url_to_file(url, str(dst), hash_prefix=SHA[:8], progress=False)
    assert dst.read_bytes() == DATA
    assert leftovers(tmp_path) == []
    assert server.requests_to("/f.bin")[0]["User-Agent"] == "ember.hub"


@pytest.mark.parametrize("kind", ["sha256", "md5"])
def test_fetch_full_digests(server, tmp_path, kind):
    url = server.route("/f.bin", server.serve(DATA))
    digest = {"sha256": SHA, "md5": MD5}[kind]
    path = fetch(url, tmp_path / "f.bin", **{kind: digest}, **FAST)
    assert path == str(tmp_path / "f.bin")
    assert (tmp_path / "f.bin").read_bytes() == DATA


@pytest.mark.parametrize("kwargs", [{"hash_prefix": "deadbeef"}, {"sha256": "0" * 64},
                                    {"md5": "0" * 32}])
def test_wrong_checksum_raises_and_leaves_nothing(server, tmp_path, kwargs):
    url = server.route("/f.bin", server.serve(DATA))
    expected = next(iter(kwargs.values()))
    with pytest.raises(RuntimeError, match=f'invalid hash value \\(expected "{expected}", '
                                           f'got "[0-9a-f]+"\\)'):
        fetch(url, tmp_path / "f.bin", **kwargs, **FAST)
    assert not (tmp_path / "f.bin").exists()
    assert leftovers(tmp_path) == []


def test_wrong_checksum_keeps_the_previous_good_file(server, tmp_path):
    dst = tmp_path / "f.bin"
    dst.write_bytes(b"good old file")
    url = server.route("/f.bin", server.serve(b"tampered"))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        download_url_to_file(url, str(dst), hash_prefix=SHA[:10], progress=False)
    assert dst.read_bytes() == b"good old file"


def test_server_error_then_success_is_retried(server, tmp_path):
    url = server.route("/f.bin", server.fail_then(2, 500, server.serve(DATA)))
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    assert len(server.requests_to("/f.bin")) == 3


def test_persistent_server_error_gives_up_after_retries(server, tmp_path):
    url = server.route("/f.bin", server.fail_then(100, 503, server.serve(DATA)))
    with pytest.raises(requests.ConnectionError, match=r"after 3 attempts.*503"):
        fetch(url, tmp_path / "f.bin", retries=2, **FAST)
    assert len(server.requests_to("/f.bin")) == 3
    assert not (tmp_path / "f.bin").exists() and leftovers(tmp_path) == []


def test_not_found_fails_at_once_naming_url_and_status(server, tmp_path):
    url = server.url("/missing.bin")
    with pytest.raises(requests.HTTPError, match=f"HTTP Error 404: Not Found for url: {url}"):
        fetch(url, tmp_path / "m.bin", retries=5, **FAST)
    assert len(server.requests_to("/missing.bin")) == 1
    assert leftovers(tmp_path) == []


def test_client_error_is_not_retried(server, tmp_path):
    url = server.route("/f.bin", server.fail_then(1, 403, server.serve(DATA)))
    with pytest.raises(requests.HTTPError, match="403"):
        fetch(url, tmp_path / "f.bin", **FAST)
    assert len(server.requests_to("/f.bin")) == 1


def test_dropped_connection_resumes_with_range(server, tmp_path):
    cut = 300_000
    url = server.route("/f.bin", server.drop_after(DATA, cut, server.serve(DATA, ranges=True)))
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    first, second = server.requests_to("/f.bin")
    assert "Range" not in first
    assert second["Range"] == f"bytes={cut}-"


def test_dropped_connection_restarts_when_range_is_ignored(server, tmp_path):
    url = server.route("/f.bin", server.drop_after(DATA, 300_000,
                                                   server.serve(DATA, ranges=False)))
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    assert (tmp_path / "f.bin").read_bytes() == DATA  # not the first 300 kB twice
    assert len(server.requests_to("/f.bin")) == 2


def test_dropped_twice_resumes_twice(server, tmp_path):
    # The resumed request is dropped too: the third one finishes from the new offset.
    second_cut = 200_000

    def handler(req, n):
        if n == 1:
            start = int(req.headers["Range"][6:-1])
            req.send_response(206)
            req.send_header("Content-Length", str(len(DATA) - start))
            req.send_header("Content-Range", f"bytes {start}-{len(DATA) - 1}/{len(DATA)}")
            req.end_headers()
            req.wfile.write(DATA[start:second_cut])
            req.wfile.flush()
            req.close_connection = True
            req.connection.shutdown(socket.SHUT_RDWR)
        else:
            first(req, n)

    first = server.drop_after(DATA, 100_000, server.serve(DATA))
    url = server.route("/f.bin", handler)
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    ranges = [h.get("Range") for h in server.requests_to("/f.bin")]
    assert ranges == [None, "bytes=100000-", f"bytes={second_cut}-"]


def test_timeout_is_retried(server, tmp_path):
    url = server.route("/f.bin", server.slow_first(2.0, server.serve(DATA)))
    fetch(url, tmp_path / "f.bin", sha256=SHA, progress=False, backoff=0.0, timeout=0.3)
    assert (tmp_path / "f.bin").read_bytes() == DATA
    assert len(server.requests_to("/f.bin")) == 2


def test_existing_verified_file_is_reused(server, tmp_path):
    url = server.route("/f.bin", server.serve(DATA))
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    fetch(url, tmp_path / "f.bin", sha256=SHA, **FAST)
    assert len(server.requests_to("/f.bin")) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_cached_file_is_downloaded_again(server, tmp_path, damage):
    url = server.route("/f.bin", server.serve(DATA))
    dst = tmp_path / "f.bin"
    dst.write_bytes(DATA[:1000] if damage == "truncate" else b"\xff" + DATA[1:])
    fetch(url, dst, hash_prefix=SHA[:8], **FAST)
    assert dst.read_bytes() == DATA
    assert len(server.requests_to("/f.bin")) == 1


def test_offline_uses_the_cached_file_without_a_request(server, tmp_path, offline):
    url = server.route("/f.bin", server.serve(DATA))
    dst = tmp_path / "f.bin"
    dst.write_bytes(DATA)
    assert fetch(url, dst, sha256=SHA, **FAST) == str(dst)
    download_url_to_file(url, str(dst), progress=False)
    assert server.log == []


def test_offline_without_cache_fails_at_once_naming_url_and_path(server, tmp_path, offline):
    url = server.route("/f.bin", server.serve(DATA))
    dst = tmp_path / "f.bin"
    with pytest.raises(OfflineError) as info:
        fetch(url, dst, retries=10, backoff=10.0, progress=False)
    assert url in str(info.value) and str(dst) in str(info.value)
    assert "EMBER_HUB_OFFLINE" in str(info.value)
    assert server.log == [] and not dst.exists()


def test_offline_refuses_a_corrupt_cached_file(server, tmp_path, offline):
    url = server.route("/f.bin", server.serve(DATA))
    dst = tmp_path / "f.bin"
    dst.write_bytes(DATA[:-1])
    with pytest.raises(OfflineError, match="corrupt"):
        fetch(url, dst, sha256=SHA, **FAST)
    assert server.log == []


def test_thread_waiting_for_the_lock_reuses_the_finished_file(server, tmp_path):
    """Two downloads of one file in one process: flock conflicts across open() calls."""
    started, release = threading.Event(), threading.Event()

    def slow(req, n):
        started.set()
        release.wait(10)
        server.serve(DATA)(req, n)

    url = server.route("/f.bin", slow)
    dst = tmp_path / "f.bin"
    first = threading.Thread(target=download_url_to_file, args=(url, str(dst)),
                             kwargs={"progress": False})
    first.start()
    assert started.wait(10)
    second_done = []
    second = threading.Thread(target=lambda: second_done.append(
        download_url_to_file(url, str(dst), progress=False)))
    second.start()
    time.sleep(0.2)  # let the second thread block on the lock
    assert not second_done
    release.set()
    first.join(10)
    second.join(10)
    assert second_done == [None]
    assert dst.read_bytes() == DATA
    assert len(server.requests_to("/f.bin")) == 1


def _download_in_child(url, dst, go):
    go.set()
    download_url_to_file(url, dst, hash_prefix=SHA[:12], progress=False)


def test_two_processes_downloading_one_file(server, tmp_path):
    ctx = multiprocessing.get_context("fork")
    second_started = ctx.Event()
    first_started = threading.Event()

    def handler(req, n):
        first_started.set()
        req.send_response(200)
        req.send_header("Content-Length", str(len(DATA)))
        req.end_headers()
        req.wfile.write(DATA[: len(DATA) // 2])
        req.wfile.flush()
        second_started.wait(10)
        time.sleep(1.0)  # the second process is now blocked on the lock
        req.wfile.write(DATA[len(DATA) // 2:])

    url = server.route("/f.bin", handler)
    dst = str(tmp_path / "f.bin")
    never = ctx.Event()
    never.set()
    a = ctx.Process(target=_download_in_child, args=(url, dst, never))
    a.start()
    assert first_started.wait(10)
    b = ctx.Process(target=_download_in_child, args=(url, dst, second_started))
    b.start()
    a.join(30)
    b.join(30)
    assert (a.exitcode, b.exitcode) == (0, 0)
    with open(dst, "rb") as f:
        assert f.read() == DATA
    assert len(server.requests_to("/f.bin")) == 1
    assert leftovers(tmp_path) == []


def test_refused_connection_is_retried_then_names_url_and_destination(tmp_path):
    import socket as _socket

    with _socket.socket() as s:  # a port nobody listens on once this socket closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/f.bin"
    dst = tmp_path / "f.bin"
    with pytest.raises(requests.ConnectionError) as info:
        fetch(url, dst, retries=1, **FAST)
    assert f"failed to download {url} to {dst} after 2 attempts" in str(info.value)
    assert os.listdir(tmp_path) == ["f.bin.lock"]


def test_progress_bar_goes_to_stderr(server, tmp_path, capfd):
    url = server.route("/f.bin", server.serve(DATA))
    download_url_to_file(url, str(tmp_path / "f.bin"), progress=True)
    assert "1.00M" in capfd.readouterr().err
    download_url_to_file(url, str(tmp_path / "g.bin"), progress=False)
    assert capfd.readouterr().err == ""
