"""Small HTTP sites the tests serve themselves on 127.0.0.1: a routed site (path -> answer), any handler
class, a generated static tree with a slow answer or a page that kills its client, and a gzip bomb.

The sites built on them live beside this module: `pages` (a page builder, routes, `Case`), the page-check cases
(`page_cases`, `url_security_cases`, `structured_image_cases`), `crawled` (the crawled site with every case and
site-check situation) and `hostile` (the hostile site the crawler must survive)."""

import contextlib
import os
import signal
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psutil

from bench.serve import SiteRequestHandler, _Server, load_redirects, render_dynamic_files

SERVER_POLL_INTERVAL_S = 0.05  # how soon `shutdown()` is noticed
NOT_FOUND = (404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>")

Route = tuple[int, dict, bytes] | Callable  # a plain answer, or a function(handler) that answers itself


def _serve_in_thread(server) -> threading.Thread:
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SERVER_POLL_INTERVAL_S}, daemon=True
    )
    thread.start()
    return thread


@contextlib.contextmanager
def serve_handler(handler_class, *, host: str = "127.0.0.1"):
    """Serve a BaseHTTPRequestHandler subclass on a free port of `host`; yields (server, base_url)."""
    server = ThreadingHTTPServer((host, 0), handler_class)
    server.daemon_threads = True
    _serve_in_thread(server)
    try:
        yield server, f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --- a routed site ---------------------------------------------------------------------------------


class _RoutedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        site: RoutedSite = self.server.site
        site.requests.append((self.path, dict(self.headers)))
        route = site.routes.get(self.path.split("?", 1)[0], NOT_FOUND)
        if callable(route):
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up: some tests want that
                route(self)
            return
        send_route(self, route)


def send_route(handler, route: tuple) -> None:
    """Answer with a RoutedSite.add route, (status, headers, body): what a function route calls to answer as one."""
    status, headers, body = route
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class RoutedSite:
    """Routes by path (query ignored) -> (status, headers, body) or a function(handler); records requests."""

    def __init__(self, server: ThreadingHTTPServer, routes: dict | None = None):
        self.server = server
        self.routes: dict = routes if routes is not None else {}
        self.requests: list = []  # (path with query, headers) per request
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


@contextlib.contextmanager
def serve_routes(routes: dict | None = None) -> Iterator[RoutedSite]:
    """Serve `routes` (path -> Route; the dict is live, so routes may be added later) on 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RoutedHandler)
    server.daemon_threads = True
    server.site = RoutedSite(server, routes)
    _serve_in_thread(server)
    try:
        yield server.site
    finally:
        server.shutdown()
        server.server_close()


# --- a generated static site with behaviour the bench server does not have -------------------------


def kill_client(handler) -> None:
    """SIGKILL the process on the other end of this request's connection (a crawl worker's child)."""
    port = handler.client_address[1]
    for conn in psutil.net_connections(kind="tcp"):
        if conn.laddr and conn.laddr.port == port and conn.pid and conn.pid != os.getpid():
            os.kill(conn.pid, signal.SIGKILL)
            return


@contextlib.contextmanager
def serve_generated(root: Path, *, delay_s: float = 0.0, killer_paths: frozenset = frozenset(), before_answer=None):
    """Serve a generated site: each answer waits `delay_s`; a request for a killer path kills the client;
    `before_answer(path)`, when given, runs before each answer (a test's own pacing). Yields (base_url, hits)."""
    root = Path(root).resolve()
    server = _Server(("127.0.0.1", 0), SiteRequestHandler)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    hits: dict[str, int] = {}

    class Handler(SiteRequestHandler):
        site_root = root
        redirects = load_redirects(root)
        dynamic = render_dynamic_files(root, base_url)

        def do_GET(self):
            path = unquote(urlsplit(self.path).path)
            hits[path] = hits.get(path, 0) + 1
            if path in killer_paths:
                kill_client(self)
                self.close_connection = True
                return
            if delay_s:
                time.sleep(delay_s)
            if before_answer is not None:
                before_answer(path)
            super().do_GET()

    Handler.base_url = base_url.encode()
    server.RequestHandlerClass = Handler
    _serve_in_thread(server)
    try:
        yield base_url, hits
    finally:
        server.shutdown()
        server.server_close()


# --- hostile bodies and answers ---------------------------------------------------------------------


def gzip_bomb(decompressed_bytes: int) -> bytes:
    """gzip of `decompressed_bytes` zeros, built in 1 MiB steps so the test never holds the plain data."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(decompressed_bytes // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


def drop_connection(handler) -> None:
    """Answer nothing: close the socket at once (the client gets no HTTP answer)."""
    handler.close_connection = True
    handler.connection.shutdown(socket.SHUT_RDWR)
