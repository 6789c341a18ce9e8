"""A local HTTP server on 127.0.0.1 for the hub tests, with per-path configurable handlers.

``server.route(path, handler)`` installs ``handler(request, n)``, called for the n-th
(0-based) request to ``path``; ``server.log`` records ``(path, headers)`` of every request.
The factories below build the handlers the tests need (serve bytes with or without Range,
fail with a status N times, drop the connection mid-transfer, answer slowly).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest
from testutils import local_http_server

import ember.hub
from ember.hub import _cache, _repo

Handler = Callable[[BaseHTTPRequestHandler, int], None]


class LocalServer:
    """The routes and the request log of one test's server (``testutils.local_http_server``
    serves them; ``base`` is its ``http://127.0.0.1:PORT``)."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.log: list[tuple[str, dict]] = []
        self.base = ""
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:  # the name http.server calls
                path = self.path.split("?")[0]
                with server._lock:
                    server.log.append((self.path, dict(self.headers)))
                    n = server._counts.get(path, 0)
                    server._counts[path] = n + 1
                handler = server.routes.get(path)
                if handler is None:
                    send_bytes(self, 404, b"not found")
                else:
                    handler(self, n)

        return RequestHandler

    def url(self, path: str) -> str:
        return self.base + path

    def route(self, path: str, handler: Handler) -> str:
        self.routes[path] = handler
        return self.url(path)

    def requests_to(self, path: str) -> list[dict]:
        return [headers for p, headers in self.log if p.split("?")[0] == path]


def send_bytes(req: BaseHTTPRequestHandler, status: int, body: bytes,
               headers: dict | None = None) -> None:
    req.send_response(status)
    req.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        req.send_header(key, value)
    req.end_headers()
    req.wfile.write(body)


def _range_start(req: BaseHTTPRequestHandler) -> int | None:
    value = req.headers.get("Range")
    if value and value.startswith("bytes=") and value.endswith("-"):
        return int(value[len("bytes="):-1])
    return None


def serve(data: bytes, ranges: bool = True) -> Handler:
    """Serve ``data``; honour ``Range: bytes=N-`` with a 206 when ``ranges``."""
    def handler(req, n):
        start = _range_start(req) if ranges else None
        if start is None:
            send_bytes(req, 200, data, {"Accept-Ranges": "bytes"} if ranges else None)
        else:
            send_bytes(req, 206, data[start:],
                       {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
    return handler


def fail_then(times: int, status: int, then: Handler) -> Handler:
    """Answer ``status`` to the first ``times`` requests, then defer to ``then``."""
    def handler(req, n):
        if n < times:
            send_bytes(req, status, b"error")
        else:
            then(req, n)
    return handler


def drop_after(data: bytes, nbytes: int, then: Handler, times: int = 1) -> Handler:
    """Announce all of ``data``, send ``nbytes`` of it and drop the connection (``times``
    times), then defer to ``then``."""
    def handler(req, n):
        if n >= times:
            return then(req, n)
        req.send_response(200)
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data[:nbytes])
        req.wfile.flush()
        req.close_connection = True
        req.connection.shutdown(socket.SHUT_RDWR)
    return handler


def slow_first(delay: float, then: Handler) -> Handler:
    """Wait ``delay`` seconds (or until the server stops) before answering the first request
    (a client timeout)."""
    def handler(req, n):
        if n == 0:
            req.server.stopping.wait(delay)
            try:
                send_bytes(req, 200, b"late")
            except OSError:
                pass
            return
        then(req, n)
    return handler


LocalServer.send_bytes = staticmethod(send_bytes)
LocalServer.serve = staticmethod(serve)
LocalServer.fail_then = staticmethod(fail_then)
LocalServer.drop_after = staticmethod(drop_after)
LocalServer.slow_first = staticmethod(slow_first)


@pytest.fixture
def server():
    routes = LocalServer()
    with local_http_server(routes.request_handler()) as httpd:
        routes.base = httpd.url
        yield routes


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    """A fresh hub directory, online mode, the GitHub host pointed nowhere real."""
    monkeypatch.delenv(_cache.ENV_OFFLINE, raising=False)
    monkeypatch.setattr(_cache, "_hub_dir", None)
    d = tmp_path / "hub"
    ember.hub.set_dir(d)
    monkeypatch.setattr(_repo, "GITHUB_URL", "http://127.0.0.1:9")  # discard port
    monkeypatch.setattr(_repo, "GITHUB_API_URL", "http://127.0.0.1:9")
    return d


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv(_cache.ENV_OFFLINE, "1")
