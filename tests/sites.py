"""Test sites with behaviour the static server does not have: a slow answer, a page that kills its client."""

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psutil

from bench.serve import SiteRequestHandler, _Server, load_redirects, render_dynamic_files


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
    `before_answer(path)`, when given, runs before each answer (a test's own pacing)."""
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
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield base_url, hits
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serve_handler(handler_class, *, host: str = "127.0.0.1"):
    """Serve a BaseHTTPRequestHandler subclass on a free port of `host`; yields (server, base_url)."""
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer((host, 0), handler_class)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield server, f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
