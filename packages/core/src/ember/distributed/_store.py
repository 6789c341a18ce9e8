"""Key-value stores (PyTorch's ``torch.distributed.Store`` family): ``HashStore`` (one
process, any threads), ``FileStore`` (processes sharing a file), ``TCPStore`` (processes
reaching a server on one of them) and ``PrefixStore`` (a namespace inside another store).

Ember's ranks meet through MPI, so ``init_process_group`` needs no store; these are for the
programs that use a store directly (sharing a port, a rendezvous of their own, counters).
Values are bytes (``str`` is encoded as UTF-8); ``get``/``wait`` block until the keys exist or
the store's timeout passes (``DistStoreError``, PyTorch's "Wait timeout"). Nothing is
unpickled: ``FileStore``'s file and ``TCPStore``'s messages are length-prefixed bytes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time
from datetime import timedelta

from ._work import DistError, DistStoreError

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore", "QueueEmptyError"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


class QueueEmptyError(DistError):
    """``queue_pop(block=False)`` on an empty queue."""


def _bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return bytes(value)
    raise TypeError(f"a store value must be str or bytes, not {type(value).__name__}")


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class Store:
    """The store API; subclasses provide ``_transact(fn)`` (run ``fn(data)`` on the key ->
    bytes dict atomically; what it returns comes back) and ``_changed_wait(seconds)``."""

    def __init__(self, timeout: timedelta = _DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout

    # -- what subclasses provide --------------------------------------------------------
    def _transact(self, fn):
        raise NotImplementedError

    def _changed_wait(self, seconds: float) -> None:
        time.sleep(min(seconds, 0.01))

    # -- the API --------------------------------------------------------------------------
    @property
    def timeout(self) -> timedelta:
        """How long ``get``/``wait`` wait."""
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        """Set how long ``get``/``wait`` wait."""
        self._timeout = timeout

    def set(self, key: str, value) -> None:
        """Store ``value`` under ``key``."""
        value = _bytes(value)
        self._transact(lambda d: d.__setitem__(key, value))

    def _wait_for(self, keys: list, seconds: float, fn):
        deadline = time.monotonic() + seconds
        while True:
            found = self._transact(lambda d: fn(d) if all(k in d for k in keys) else None)
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise DistStoreError("Wait timeout")
            self._changed_wait(left)

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting (up to the timeout) until it is set."""
        return self._wait_for([key], _seconds(self._timeout), lambda d: d[key])

    def multi_get(self, keys: list) -> list:
        """The values of ``keys``, waiting until all are set."""
        return self._wait_for(list(keys), _seconds(self._timeout),
                              lambda d: [d[k] for k in keys])

    def multi_set(self, keys: list, values: list) -> None:
        """Set each of ``keys`` to its value, at once."""
        pairs = [(k, _bytes(v)) for k, v in zip(keys, values, strict=True)]
        self._transact(lambda d: d.update(pairs))

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        """Wait until every key of ``keys`` is set (``timeout``: the store's by default)."""
        self._wait_for(list(keys), _seconds(self._timeout if timeout is None else timeout),
                       lambda d: True)

    def check(self, keys: list) -> bool:
        """Whether every key of ``keys`` is set (no waiting)."""
        return self._transact(lambda d: all(k in d for k in keys))

    def add(self, key: str, value: int) -> int:
        """Add ``value`` to the integer at ``key`` (0 if unset); the new value."""
        def run(d):
            new = int(d.get(key, b"0")) + int(value)
            d[key] = str(new).encode()
            return new

        return self._transact(run)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is unset and
        ``expected_value`` is empty); the value it holds after (``expected_value`` when
        unset and not set)."""
        expected, desired = _bytes(expected_value), _bytes(desired_value)

        def run(d):
            if key not in d:
                if expected:
                    return expected
                d[key] = desired
                return desired
            if d[key] == expected:
                d[key] = desired
            return d[key]

        return self._transact(run)

    def append(self, key: str, value) -> None:
        """Append ``value`` to the bytes at ``key`` (set it if unset)."""
        value = _bytes(value)
        self._transact(lambda d: d.__setitem__(key, d.get(key, b"") + value))

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it was there."""
        return self._transact(lambda d: d.pop(key, None) is not None)

    def num_keys(self) -> int:
        """How many keys are set."""
        return self._transact(len)

    def list_keys(self) -> list:
        """The keys set."""
        return self._transact(list)

    def has_extended_api(self) -> bool:
        """True: ``append``, ``multi_get``/``multi_set`` and the queues are there."""
        return True

    # queues are keys holding length-prefixed items
    def queue_push(self, key: str, value) -> None:
        """Push ``value`` onto the queue ``key``."""
        value = _bytes(value)
        self.append(key, struct.pack("<Q", len(value)) + value)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Take the first item of queue ``key``; waits for one (``block=False``: raises
        ``QueueEmptyError`` when empty)."""
        def run(d):
            raw = d.get(key, b"")
            if not raw:
                return None
            (n,) = struct.unpack_from("<Q", raw)
            item, rest = raw[8:8 + n], raw[8 + n:]
            d[key] = rest
            return item

        deadline = time.monotonic() + _seconds(self._timeout)
        while True:
            item = self._transact(run)
            if item is not None:
                return item
            if not block:
                raise QueueEmptyError("queue is empty")
            left = deadline - time.monotonic()
            if left <= 0:
                raise DistStoreError("Wait timeout")
            self._changed_wait(left)

    def queue_len(self, key: str) -> int:
        """How many items queue ``key`` holds."""
        def run(d):
            raw, count, pos = d.get(key, b""), 0, 0
            while pos < len(raw):
                (n,) = struct.unpack_from("<Q", raw, pos)
                pos += 8 + n
                count += 1
            return count

        return self._transact(run)


class HashStore(Store):
    """A store in this process's memory (threads wait on each other's writes)."""

    def __init__(self) -> None:
        super().__init__()
        self._data: dict = {}
        self._cond = threading.Condition()

    def _transact(self, fn):
        with self._cond:
            out = fn(self._data)
            self._cond.notify_all()
            return out

    def _changed_wait(self, seconds: float) -> None:
        with self._cond:
            self._cond.wait(min(seconds, 0.05))


class FileStore(Store):
    """A store in file ``file_name`` that processes on one machine (or a shared file system
    with working locks) share; ``world_size`` is accepted for PyTorch's signature. The file
    holds length-prefixed keys and values, rewritten under an exclusive lock."""

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = world_size
        with open(self.path, "ab"):
            pass

    @staticmethod
    def _decode(raw: bytes) -> dict:
        data, pos = {}, 0
        while pos < len(raw):
            klen, vlen = struct.unpack_from("<QQ", raw, pos)
            pos += 16
            key = raw[pos:pos + klen].decode()
            data[key] = raw[pos + klen:pos + klen + vlen]
            pos += klen + vlen
        return data

    @staticmethod
    def _encode(data: dict) -> bytes:
        return b"".join(struct.pack("<QQ", len(k.encode()), len(v)) + k.encode() + v
                        for k, v in data.items())

    def _transact(self, fn):
        import fcntl

        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                data = self._decode(f.read())
                before = dict(data)
                out = fn(data)
                if data != before:
                    f.seek(0)
                    f.write(self._encode(data))
                    f.truncate()
                    f.flush()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        return out


class PrefixStore(Store):
    """Keys of ``store`` under ``prefix + "/"``: groups of processes sharing one store."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self._prefix = f"{prefix}/"
        self._store = store

    @property
    def underlying_store(self) -> Store:
        """The store the keys live in."""
        return self._store

    @property
    def timeout(self) -> timedelta:
        return self._store.timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self._store.set_timeout(timeout)

    def _k(self, key: str) -> str:
        return self._prefix + key

    def set(self, key: str, value) -> None:
        self._store.set(self._k(key), value)

    def get(self, key: str) -> bytes:
        return self._store.get(self._k(key))

    def multi_get(self, keys: list) -> list:
        return self._store.multi_get([self._k(k) for k in keys])

    def multi_set(self, keys: list, values: list) -> None:
        self._store.multi_set([self._k(k) for k in keys], values)

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        self._store.wait([self._k(k) for k in keys], timeout)

    def check(self, keys: list) -> bool:
        return self._store.check([self._k(k) for k in keys])

    def add(self, key: str, value: int) -> int:
        return self._store.add(self._k(key), value)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self._store.compare_set(self._k(key), expected_value, desired_value)

    def append(self, key: str, value) -> None:
        self._store.append(self._k(key), value)

    def delete_key(self, key: str) -> bool:
        return self._store.delete_key(self._k(key))

    def num_keys(self) -> int:
        """How many keys the underlying store holds (as PyTorch counts)."""
        return self._store.num_keys()

    def list_keys(self) -> list:
        return [k[len(self._prefix):] for k in self._store.list_keys()
                if k.startswith(self._prefix)]

    def queue_push(self, key: str, value) -> None:
        self._store.queue_push(self._k(key), value)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        return self._store.queue_pop(self._k(key), block)

    def queue_len(self, key: str) -> int:
        return self._store.queue_len(self._k(key))


# -- TCPStore: a HashStore served over a socket ------------------------------------------------
def _send(sock, payload: bytes) -> None:
    sock.sendall(struct.pack("<Q", len(payload)) + payload)


def _recv(sock) -> bytes | None:
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack("<Q", head)
    body = bytearray()
    while len(body) < n:
        chunk = sock.recv(min(n - len(body), 1 << 20))
        if not chunk:
            return None
        body += chunk
    return bytes(body)


def _pack(parts: list) -> bytes:
    return b"".join(struct.pack("<Q", len(p)) + p for p in parts)


def _unpack(raw: bytes) -> list:
    out, pos = [], 0
    while pos < len(raw):
        (n,) = struct.unpack_from("<Q", raw, pos)
        out.append(raw[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


class _Server:
    """The master's server: each request is an operation name and its arguments; it runs on
    a ``HashStore`` and the result is sent back (bytes, or an error text)."""

    def __init__(self, host: str, port: int) -> None:
        self.store = HashStore()
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.port = self.sock.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, name="ember-tcpstore", daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        with conn:
            while True:
                msg = _recv(conn)
                if msg is None:
                    return
                parts = _unpack(msg)
                try:
                    reply = b"ok" + _run_op(self.store, parts[0].decode(), parts[1:])
                except Exception as e:  # reported to the client, which raises it
                    reply = b"er" + f"{type(e).__name__}\0{e}".encode()
                _send(conn, reply)

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self.sock.close()


class _Timed(Store):
    """The server's store as one request sees it: the client's timeout."""

    def __init__(self, base: HashStore, seconds: float) -> None:
        super().__init__(timedelta(seconds=seconds))
        self._base = base

    def _transact(self, fn):
        return self._base._transact(fn)

    def _changed_wait(self, seconds: float) -> None:
        self._base._changed_wait(seconds)


def _run_op(base: HashStore, op: str, args: list) -> bytes:
    """Run one client request (``timeout``, operation, arguments) on the server's store;
    the reply's bytes."""
    store = _Timed(base, float(args[0]))
    op, args = args[1].decode(), args[2:]
    keys = [a.decode() for a in args]
    if op == "set":
        store.set(keys[0], args[1])
        return b""
    if op == "get":
        return store.get(keys[0])
    if op == "add":
        return str(store.add(keys[0], int(args[1]))).encode()
    if op == "compare_set":
        return store.compare_set(keys[0], args[1], args[2])
    if op == "append":
        store.append(keys[0], args[1])
        return b""
    if op == "delete_key":
        return b"1" if store.delete_key(keys[0]) else b"0"
    if op == "check":
        return b"1" if store.check(keys) else b"0"
    if op == "wait":
        store.wait(keys[1:], timedelta(seconds=float(args[0])))
        return b""
    if op == "num_keys":
        return str(store.num_keys()).encode()
    if op == "list_keys":
        return _pack([k.encode() for k in store.list_keys()])
    if op == "multi_get":
        return _pack(store.multi_get(keys))
    if op == "queue_pop":
        return store.queue_pop(keys[0], block=args[1] == b"1")
    if op == "queue_len":
        return str(store.queue_len(keys[0])).encode()
    raise ValueError(f"unknown store operation {op!r}")


class TCPStore(Store):
    """A store served by the ``is_master`` process on ``host_name:port`` (``port=0``: any
    free port, see ``.port``), reached by the others over TCP. ``wait_for_workers`` makes
    the master wait (up to ``timeout``) until ``world_size`` processes have connected."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None,
                 is_master: bool = False, timeout: timedelta = _DEFAULT_TIMEOUT,
                 wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True) -> None:
        super().__init__(timeout)
        self._host = host_name
        self._server = _Server(host_name, port) if is_master else None
        self._port = self._server.port if self._server is not None else int(port)
        self._local = threading.local()  # a connection per thread: a blocked get in one
        self._socks: list = []  # thread does not hold up the others' requests
        self._local.sock = self._connect(_seconds(timeout))
        self.world_size = world_size
        if world_size is not None:
            self.add("__ember_workers__", 1)
            if is_master and wait_for_workers:
                deadline = time.monotonic() + _seconds(timeout)
                while int(self._call("get", b"__ember_workers__")) < world_size:
                    if time.monotonic() > deadline:
                        raise DistStoreError(f"Timed out after {_seconds(timeout):g} seconds "
                                             f"waiting for clients. "
                                             f"{int(self._call('get', b'__ember_workers__'))}/"
                                             f"{world_size} clients joined.")
                    time.sleep(0.01)

    def _connect(self, seconds: float):
        deadline = time.monotonic() + seconds
        while True:
            try:
                sock = socket.create_connection((self._host, self._port), timeout=None)
                self._socks.append(sock)
                return sock
            except OSError as e:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"The client socket has timed out after "
                                         f"{seconds:g}s while trying to connect to "
                                         f"({self._host}, {self._port}): {e}") from None
                time.sleep(0.05)

    @property
    def host(self) -> str:
        """The server's host name."""
        return self._host

    @property
    def port(self) -> int:
        """The server's port."""
        return self._port

    @property
    def libuvBackend(self) -> bool:
        return False

    def _call(self, op: str, *args: bytes) -> bytes:
        parts = [b"request", str(_seconds(self._timeout)).encode(), op.encode(), *args]
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = self._local.sock = self._connect(_seconds(self._timeout))
        _send(sock, _pack(parts))
        reply = _recv(sock)
        if reply is None:
            raise DistStoreError(f"the TCPStore server at {self._host}:{self._port} closed "
                                 f"the connection")
        if reply[:2] == b"er":
            kind, _, text = reply[2:].decode().partition("\0")
            raise (QueueEmptyError if kind == "QueueEmptyError" else DistStoreError)(text)
        return reply[2:]

    def set(self, key: str, value) -> None:
        self._call("set", key.encode(), _bytes(value))

    def get(self, key: str) -> bytes:
        return self._call("get", key.encode())

    def add(self, key: str, value: int) -> int:
        return int(self._call("add", key.encode(), str(int(value)).encode()))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self._call("compare_set", key.encode(), _bytes(expected_value),
                          _bytes(desired_value))

    def append(self, key: str, value) -> None:
        self._call("append", key.encode(), _bytes(value))

    def delete_key(self, key: str) -> bool:
        return self._call("delete_key", key.encode()) == b"1"

    def check(self, keys: list) -> bool:
        return self._call("check", *[k.encode() for k in keys]) == b"1"

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        seconds = _seconds(self._timeout if timeout is None else timeout)
        self._call("wait", str(seconds).encode(), *[k.encode() for k in keys])

    def num_keys(self) -> int:
        return int(self._call("num_keys"))

    def list_keys(self) -> list:
        return [k.decode() for k in _unpack(self._call("list_keys"))]

    def multi_get(self, keys: list) -> list:
        return _unpack(self._call("multi_get", *[k.encode() for k in keys]))

    def multi_set(self, keys: list, values: list) -> None:
        for k, v in zip(keys, values, strict=True):
            self.set(k, v)

    def queue_push(self, key: str, value) -> None:
        value = _bytes(value)
        self.append(key, struct.pack("<Q", len(value)) + value)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        return self._call("queue_pop", key.encode(), b"1" if block else b"0")

    def queue_len(self, key: str) -> int:
        return int(self._call("queue_len", key.encode()))

    def __del__(self) -> None:
        for sock in getattr(self, "_socks", ()):
            with contextlib.suppress(Exception):
                sock.close()
        if getattr(self, "_server", None) is not None:
            self._server.close()
