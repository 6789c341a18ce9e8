"""The one downloader of Ember: ``fetch`` and torch's ``download_url_to_file``.

A download streams with ``requests`` into a temporary file beside the destination,
is verified (sha256 prefix, full sha256 or md5) and only then renamed into place,
so a broken transfer never replaces a good file. Connection errors, timeouts and
HTTP 5xx are retried with exponential backoff; an interrupted transfer resumes
with an HTTP ``Range`` request when the server answers 206 and restarts cleanly
when it answers 200. A ``<dst>.lock`` file (``fcntl.flock``) serialises processes
downloading the same file: the one that waited reuses the finished file.
A transfer that stays below ``min_rate`` bytes/s over a ``rate_window`` is aborted and
retried (resuming); one that runs past its ``deadline`` is aborted for good, both with
``DownloadTimeoutError``. A ``.partial`` of the same target older than a day (left by a
killed download) is removed when a new download of that target starts.
``EMBER_HUB_OFFLINE=1`` never touches the network: a cached file is used (after its
checksum, when one is known), anything else fails at once naming URL and path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import uuid
from collections.abc import Iterator

import requests
import urllib3
from tqdm.auto import tqdm

from ._cache import ENV_OFFLINE, is_offline

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no inter-process lock
    fcntl = None

__all__ = ["DownloadTimeoutError", "OfflineError", "download_url_to_file", "fetch",
           "file_digest", "verify_file"]

READ_DATA_CHUNK = 128 * 1024
#: seconds a connection attempt or a single read may wait (``requests``' timeout)
DEFAULT_TIMEOUT = 30.0
USER_AGENT = "ember.hub"

# The defaults below are read when a download starts, so a program may change them for
# every download, including those made for it by ``load_state_dict_from_url`` or datasets.
#: bytes/s a transfer must average over every ``DEFAULT_RATE_WINDOW`` seconds (0: no minimum)
DEFAULT_MIN_RATE = 1024.0
#: seconds over which the transfer rate is averaged before it is compared with the minimum
DEFAULT_RATE_WINDOW = 30.0
#: seconds a whole download may take, retries included (None: no limit)
DEFAULT_DEADLINE: float | None = None
#: seconds after which a ``<dst>.<hex>.partial`` is taken for the leftover of a killed download
STALE_PARTIAL_AGE = 24 * 3600.0


class OfflineError(RuntimeError):
    """A file is needed that is not in the cache while ``EMBER_HUB_OFFLINE`` is set."""


class DownloadTimeoutError(requests.ConnectionError, requests.Timeout, TimeoutError):
    """A download ran past its deadline, or stayed below its minimum rate on every attempt.

    A ``requests.ConnectionError`` (what a download that fails after its retries raises), a
    ``requests.Timeout`` and a builtin ``TimeoutError``; the message names the URL, the bytes
    received and the rule broken.
    """


class _Transient(Exception):
    """A failure worth retrying (5xx answer, dropped connection, timeout)."""


class _TooSlow(_Transient):
    """The transfer stayed below its minimum rate: retried, resuming from the bytes received."""


class _Limits:
    """The deadline and the minimum-rate rule of one download (``time.monotonic`` clock)."""

    def __init__(self, url: str, deadline: float | None, min_rate: float,
                 rate_window: float) -> None:
        self.url, self.deadline = url, deadline
        self.min_rate, self.rate_window = min_rate, rate_window
        now = time.monotonic()
        self.deadline_at = None if deadline is None else now + deadline
        self.window_start, self.window_received = now, 0

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        if self.deadline_at is None:
            return None
        return self.deadline_at - time.monotonic()

    def expired(self) -> bool:
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def deadline_error(self, received: int) -> DownloadTimeoutError:
        return DownloadTimeoutError(f"download of {self.url} ran past its deadline of "
                                    f"{self.deadline:g} s ({received} bytes received)")

    def check_deadline(self, received: int) -> None:
        if self.expired():
            raise self.deadline_error(received)

    def start_window(self, received: int) -> None:
        """Measure the rate afresh from now, ``received`` bytes being on disk already."""
        self.window_start, self.window_received = time.monotonic(), received

    def check(self, received: int) -> None:
        """Raise when the deadline passed or the last window was below the minimum rate."""
        self.check_deadline(received)
        elapsed = time.monotonic() - self.window_start
        if not self.min_rate or elapsed < self.rate_window:
            return
        got = received - self.window_received
        if got < self.min_rate * elapsed:
            raise _TooSlow(f"download of {self.url} too slow: {got} bytes in {elapsed:.1f} s, "
                           f"below min_rate={self.min_rate:g} bytes/s averaged over "
                           f"rate_window={self.rate_window:g} s ({received} bytes received)")
        self.start_window(received)

    def capped(self, timeout):
        """``requests``' ``timeout`` (a number or a (connect, read) pair), cut to the deadline."""
        remaining = self.remaining()
        if remaining is None:
            return timeout
        remaining = max(remaining, 0.001)
        if isinstance(timeout, tuple):
            return tuple(remaining if t is None else min(t, remaining) for t in timeout)
        return remaining if timeout is None else min(timeout, remaining)


class _Checksum:
    """The expected digests of one file; at most one of sha256, md5, hash_prefix is usual."""

    def __init__(self, sha256: str | None, md5: str | None, hash_prefix: str | None):
        self.expected = {name: value.lower() for name, value in
                         (("sha256", sha256), ("md5", md5), ("sha256_prefix", hash_prefix))
                         if value}

    def __bool__(self) -> bool:
        return bool(self.expected)

    def new_hashers(self) -> dict:
        algorithms = {name.split("_")[0] for name in self.expected}
        return {name: hashlib.new(name) for name in algorithms}

    def mismatch(self, hashers: dict) -> str | None:
        """The error message when a digest disagrees, None when all match."""
        for name, want in self.expected.items():
            got = hashers[name.split("_")[0]].hexdigest()
            ok = got.startswith(want) if name == "sha256_prefix" else got == want
            if not ok:
                return f'invalid hash value (expected "{want}", got "{got}")'
        return None


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(READ_DATA_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: str | os.PathLike, *, sha256: str | None = None, md5: str | None = None,
                hash_prefix: str | None = None) -> str | None:
    """Check a file against its expected digests: None when it matches, else the reason."""
    checksum = _Checksum(sha256, md5, hash_prefix)
    hashers = checksum.new_hashers()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(READ_DATA_CHUNK), b""):
            for h in hashers.values():
                h.update(block)
    return checksum.mismatch(hashers)


@contextlib.contextmanager
def _file_lock(dst: str) -> Iterator[bool]:
    """Hold ``<dst>.lock`` exclusively; yields True when another process held it first."""
    if fcntl is None:  # pragma: no cover
        yield False
        return
    with open(dst + ".lock", "a+b") as handle:
        waited = False
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = True
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield waited
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _http_error(url: str, response: requests.Response) -> requests.HTTPError:
    return requests.HTTPError(f"HTTP Error {response.status_code}: {response.reason} for url: "
                              f"{url}", response=response)


class _Transfer:
    """One file's bytes on disk plus the running hashes, so a resumed transfer appends."""

    def __init__(self, tmp: str, checksum: _Checksum, pbar):
        self.tmp, self.checksum, self.pbar = tmp, checksum, pbar
        self.file = open(tmp, "w+b")
        self.restart()

    def restart(self) -> None:
        self.file.seek(0)
        self.file.truncate()
        self.written = 0
        self.hashers = self.checksum.new_hashers()
        self.pbar.reset()

    def write(self, block: bytes) -> None:
        self.file.write(block)
        for h in self.hashers.values():
            h.update(block)
        self.written += len(block)
        self.pbar.update(len(block))


def _content_start(response: requests.Response) -> int | None:
    """The first byte offset of a 206 answer's ``Content-Range: bytes a-b/n``."""
    value = response.headers.get("Content-Range", "")
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _read_timeout(timeout) -> float | None:
    return timeout[1] if isinstance(timeout, tuple) else timeout


def _cap_read(response: requests.Response, timeout, limits: _Limits) -> None:
    """Let the next socket read wait no longer than the deadline allows (a silent server
    would otherwise hold the transfer for a whole read timeout past it)."""
    remaining = limits.remaining()
    if remaining is None:
        return
    sock = getattr(getattr(response.raw, "connection", None), "sock", None)
    if sock is not None:  # urllib3 keeps the connection of a streamed response
        read_timeout = _read_timeout(timeout)
        cap = remaining if read_timeout is None else min(read_timeout, remaining)
        sock.settimeout(max(cap, 0.001))


def _blocks(response: requests.Response, timeout, limits: _Limits) -> Iterator[bytes]:
    """The body as it arrives (``read1``), so a dropped connection loses no received byte."""
    read1 = getattr(response.raw, "read1", None)
    while True:
        _cap_read(response, timeout, limits)
        try:
            if read1 is not None:
                block = read1(READ_DATA_CHUNK, decode_content=True)
            else:  # pragma: no cover - urllib3 < 2
                block = response.raw.read(READ_DATA_CHUNK, decode_content=True)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _Transient(f"connection dropped: {exc}") from exc
        if not block:
            return
        yield block


def _attempt(url: str, transfer: _Transfer, timeout, limits: _Limits) -> None:
    """One request: appends to ``transfer`` (resuming from its size when possible)."""
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    resume_from = transfer.written
    if resume_from:
        headers["Range"] = f"bytes={resume_from}-"
    try:
        response = requests.get(url, headers=headers, stream=True,
                                timeout=limits.capped(timeout))
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise _Transient(str(exc)) from exc
    with response:
        status = response.status_code
        if status >= 500:
            raise _Transient(f"HTTP Error {status}: {response.reason} for url: {url}")
        if status == 416 and resume_from:  # cannot resume: start again from zero
            transfer.restart()
            raise _Transient(f"HTTP Error 416 resuming {url}")
        if status >= 400 or status not in (200, 206):
            raise _http_error(url, response)
        if status == 206 and _content_start(response) != resume_from:
            transfer.restart()
            raise _Transient(f"unexpected Content-Range from {url}")
        if status == 200 and resume_from:  # the server ignored Range: restart cleanly
            transfer.restart()
        length = response.headers.get("Content-Length")
        expected_end = transfer.written + int(length) if length and length.isdigit() else None
        if expected_end is not None:
            transfer.pbar.total = expected_end
        limits.start_window(transfer.written)
        for block in _blocks(response, timeout, limits):
            transfer.write(block)
            limits.check(transfer.written)
        if expected_end is not None and transfer.written < expected_end:
            raise _Transient(f"connection closed after {transfer.written} of {expected_end} "
                             "bytes")


def _offline_result(url: str, dst: str, checksum: _Checksum, kwargs: dict) -> str:
    if not os.path.exists(dst):
        raise OfflineError(f"{ENV_OFFLINE} is set: cannot download {url}; the file is not in "
                           f"the cache at {dst}")
    problem = verify_file(dst, **kwargs) if checksum else None
    if problem:
        raise OfflineError(f"{ENV_OFFLINE} is set: the cached file {dst} is corrupt "
                           f"({problem}) and cannot be downloaded again from {url}")
    return dst


def _reusable(dst: str, checksum: _Checksum, kwargs: dict) -> bool:
    if not os.path.isfile(dst):
        return False
    return not checksum or verify_file(dst, **kwargs) is None


def fetch(url: str, dst: str | os.PathLike, *, sha256: str | None = None,
          md5: str | None = None, hash_prefix: str | None = None, progress: bool = True,
          retries: int = 3, backoff: float = 0.5, timeout: float | tuple = DEFAULT_TIMEOUT,
          force: bool = False, deadline: float | None = None, min_rate: float | None = None,
          rate_window: float | None = None) -> str:
    """Download ``url`` to ``dst`` unless a verified copy is already there; return ``dst``.

    ``sha256``/``md5`` are full hex digests, ``hash_prefix`` a prefix of the sha256 (as in
    torch's ``-<hash>.pth`` file names). An existing ``dst`` is reused when it passes its
    checksum (or no checksum is given and ``force`` is False) and re-downloaded otherwise.
    Connection errors, timeouts and 5xx answers are retried ``retries`` times with a
    ``backoff * 2**n`` seconds pause; 4xx answers raise ``requests.HTTPError`` at once.
    On a checksum mismatch the partial file is removed and ``RuntimeError`` raised.

    ``timeout`` bounds each connection attempt and each read. ``min_rate`` (bytes/s, 0 for
    none) is the least average rate over every ``rate_window`` seconds of a transfer: a
    slower attempt is aborted and retried, resuming where it stopped, and
    ``DownloadTimeoutError`` is raised when the last attempt is too slow too. ``deadline``
    (seconds, from the start of the download, retries and pauses included) aborts the
    download with ``DownloadTimeoutError`` at once. Left as None they take the module's
    ``DEFAULT_MIN_RATE``, ``DEFAULT_RATE_WINDOW`` and ``DEFAULT_DEADLINE``.
    """
    dst = os.path.abspath(os.path.expanduser(os.fspath(dst)))
    kwargs = {"sha256": sha256, "md5": md5, "hash_prefix": hash_prefix}
    checksum = _Checksum(**kwargs)
    if is_offline():
        return _offline_result(url, dst, checksum, kwargs)
    if not force and _reusable(dst, checksum, kwargs):
        return dst
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with _file_lock(dst) as waited:
        # Another process finished this file while we waited for the lock: use its result.
        if (waited or not force) and _reusable(dst, checksum, kwargs):
            return dst
        limits = _Limits(url, DEFAULT_DEADLINE if deadline is None else deadline,
                         DEFAULT_MIN_RATE if min_rate is None else min_rate,
                         DEFAULT_RATE_WINDOW if rate_window is None else rate_window)
        _download(url, dst, checksum, progress, retries, backoff, timeout, limits)
    return dst


def _remove_stale_partials(dst: str, max_age: float) -> None:
    """Remove the ``<dst>.<hex>.partial`` files older than ``max_age`` seconds: leftovers of
    killed downloads. A younger one may be the file of a download running elsewhere."""
    directory, name = os.path.split(dst)
    pattern = re.compile(re.escape(name) + r"\.[0-9a-f]{32}\.partial")
    cutoff = time.time() - max_age
    for entry in os.scandir(directory):
        if pattern.fullmatch(entry.name):
            with contextlib.suppress(OSError):  # gone already, or not ours to remove
                if entry.stat().st_mtime < cutoff:
                    os.remove(entry.path)


def _transfer_with_retries(url, dst, transfer, retries, backoff, timeout, limits) -> None:
    """Attempt the transfer until it completes, resuming after each transient failure."""
    for attempt in range(retries + 1):
        limits.check_deadline(transfer.written)
        try:
            _attempt(url, transfer, timeout, limits)
            return
        except _Transient as exc:
            if limits.expired():  # e.g. a read cut short by the deadline
                raise limits.deadline_error(transfer.written) from exc
            if attempt == retries:
                slow = isinstance(exc, _TooSlow)
                error = DownloadTimeoutError if slow else requests.ConnectionError
                raise error(f"failed to download {url} to {dst} after {retries + 1} "
                            f"attempts: {exc}") from exc
            pause = backoff * 2 ** attempt
            remaining = limits.remaining()
            time.sleep(pause if remaining is None else max(0.0, min(pause, remaining)))


def _download(url, dst, checksum, progress, retries, backoff, timeout, limits) -> None:
    _remove_stale_partials(dst, STALE_PARTIAL_AGE)
    tmp = f"{dst}.{uuid.uuid4().hex}.partial"
    pbar = tqdm(total=None, disable=not progress, unit="B", unit_scale=True,
                unit_divisor=1024, desc=os.path.basename(dst))
    transfer = None
    try:
        transfer = _Transfer(tmp, checksum, pbar)
        _transfer_with_retries(url, dst, transfer, retries, backoff, timeout, limits)
        transfer.file.flush()
        os.fsync(transfer.file.fileno())
        transfer.file.close()
        problem = checksum.mismatch(transfer.hashers)
        if problem:
            raise RuntimeError(problem)
        os.replace(tmp, dst)
    finally:
        pbar.close()
        if transfer is not None:
            transfer.file.close()
        if os.path.exists(tmp):
            os.remove(tmp)


def download_url_to_file(url: str, dst: str | os.PathLike, hash_prefix: str | None = None,
                         progress: bool = True, *, deadline: float | None = None,
                         min_rate: float | None = None,
                         rate_window: float | None = None) -> None:
    """Download the object at ``url`` to the local path ``dst`` (as ``torch.hub``).

    ``hash_prefix``, when given, must be a prefix of the file's sha256. The file is
    written to a temporary name beside ``dst`` and renamed once complete and verified.
    With ``EMBER_HUB_OFFLINE=1`` an existing ``dst`` is used and nothing is fetched.
    ``deadline``, ``min_rate`` and ``rate_window`` bound the transfer as in :func:`fetch`.
    """
    fetch(url, dst, hash_prefix=hash_prefix, progress=progress, force=True,
          deadline=deadline, min_rate=min_rate, rate_window=rate_window)
