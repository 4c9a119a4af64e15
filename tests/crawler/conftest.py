"""A real HTTP server on 127.0.0.1 for crawler tests: routes are plain responses or handler functions."""

import socket
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crawler.fetch import build_session


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        self.server.site.requests.append((self.path, dict(self.headers)))
        route = self.server.site.routes.get(self.path.split("?", 1)[0])
        if route is None:
            route = (404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>")
        if callable(route):
            try:
                route(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, which is what some tests want
            return
        status, headers, body = route
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Site:
    """Routes by path (query ignored) -> (status, headers, body) or a function(handler)."""

    def __init__(self, server: ThreadingHTTPServer):
        self.server = server
        self.routes: dict = {}
        self.requests: list = []
        self.port = server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def add(self, path: str, body: bytes | str = b"", *, status: int = 200, headers: dict | None = None,
            content_type: str = "text/html; charset=utf-8") -> None:  # fmt: skip
        if isinstance(body, str):
            body = body.encode("utf-8")
        hdrs = {"Content-Type": content_type} if content_type else {}
        hdrs.update(headers or {})
        self.routes[path] = (status, hdrs, body)

    def handle(self, path: str, func) -> None:
        self.routes[path] = func


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.site = Site(server)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server.site
    server.shutdown()
    server.server_close()


@pytest.fixture
def session():
    s = build_session()
    yield s
    s.close()


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 nobody listens on (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _gzip_bomb(decompressed_bytes: int) -> bytes:
    """gzip of `decompressed_bytes` zeros, built in 1 MiB steps so the test never holds the plain data."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(decompressed_bytes // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.fixture(scope="session")
def gzip_bomb() -> bytes:
    """~100 KB of gzip that inflates to 100 MiB."""
    return _gzip_bomb(100 * 1024 * 1024)
