"""Serve a generated test site on 127.0.0.1: a threaded Python server (tests) or nginx (benchmarks).

Both honour `_redirects.json`, hide `_*` files, and fill the real base URL into the sitemaps, robots.txt
and HTML pages (the generator writes a placeholder because the port is only known here).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

from bench.sitegen import BASE_URL_PLACEHOLDER, DYNAMIC_FILES, REDIRECTS_FILE

SERVER_START_TIMEOUT_S = 15
SERVER_STOP_TIMEOUT_S = 10
KEEPALIVE_IDLE_TIMEOUT_S = 30

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".xml": "application/xml",
    ".gz": "application/gzip",
    ".txt": "text/plain; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "application/javascript; charset=utf-8",
    ".png": "image/png",
    ".json": "application/json",
}


def render_dynamic_files(root: Path, base_url: str) -> dict[str, bytes]:
    """Robots.txt and sitemaps with the placeholder replaced by `base_url`, keyed by URL path."""
    base = base_url.rstrip("/").encode()
    rendered = {}
    for name in DYNAMIC_FILES:
        source = Path(root) / name
        if not source.is_file():
            continue
        data = source.read_bytes()
        if name.endswith(".gz"):
            data = gzip.compress(gzip.decompress(data).replace(BASE_URL_PLACEHOLDER.encode(), base), mtime=0)
        else:
            data = data.replace(BASE_URL_PLACEHOLDER.encode(), base)
        rendered["/" + name] = data
    return rendered


def load_redirects(root: Path) -> dict[str, str]:
    path = Path(root) / REDIRECTS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SiteRequestHandler(SimpleHTTPRequestHandler):
    """Serves one site root. Set on a subclass: `site_root`, `redirects`, `dynamic` (path -> bytes)."""

    protocol_version = "HTTP/1.1"  # keep-alive; every response carries Content-Length
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle plus delayed ACKs
    # stall each keep-alive response by ~40 ms.
    disable_nagle_algorithm = True
    timeout = KEEPALIVE_IDLE_TIMEOUT_S
    server_version = "SitewardenBench/1"
    sys_version = ""
    site_root: Path = Path(".")
    redirects: ClassVar[dict[str, str]] = {}
    dynamic: ClassVar[dict[str, bytes]] = {}
    base_url: bytes = b""
    placeholder = BASE_URL_PLACEHOLDER.encode()
    delay_s: float = 0.0  # before each answer: a slower site (a test's crawl that must last a while)
    served_to: Counter | None = None  # when set, requests counted per client address
    served_to_lock = threading.Lock()

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self._respond(send_body=True)

    def do_HEAD(self):
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        if self.served_to is not None:
            with self.served_to_lock:  # one handler thread per connection: += is a read, then a write
                self.served_to[self.client_address[0]] += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        path = unquote(urlsplit(self.path).path)
        if path in self.redirects:
            self.send_response(301)
            self.send_header("Location", self.redirects[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/":
            path = "/index.html"
        body = self.dynamic.get(path)
        if body is None:
            body = self._read_file(path)
        if body is None:
            self._send_bytes(
                404,
                b"<!DOCTYPE html><title>Not found</title><h1>Not found</h1>\n",
                CONTENT_TYPES[".html"],
                send_body,
            )
            return
        suffix = os.path.splitext(path)[1]
        if suffix == ".html":
            body = body.replace(self.placeholder, self.base_url)
        self._send_bytes(200, body, CONTENT_TYPES.get(suffix, "application/octet-stream"), send_body)

    def _read_file(self, path: str) -> bytes | None:
        parts = [p for p in path.split("/") if p]
        if not parts or any(p in (".", "..") or p.startswith("_") for p in parts):
            return None
        target = self.site_root.joinpath(*parts)
        try:
            return target.read_bytes() if target.is_file() else None
        except OSError:
            return None

    def _send_bytes(self, status: int, body: bytes, content_type: str, send_body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # Crawlers drop keep-alive connections at will; a reset or timeout is not worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_site(
    root: Path, *, port: int = 0, host: str = "127.0.0.1", delay_s: float = 0.0, served_to: Counter | None = None
) -> Iterator[str]:
    """Serve `root` from a thread of this process on `host`; yields "http://HOST:PORT". `delay_s` holds each
    answer; `served_to` counts requests per client address."""
    root = Path(root).resolve()
    server = _Server((host, port), SiteRequestHandler)
    base_url = f"http://{host}:{server.server_address[1]}"
    handler = type(
        "BoundSiteRequestHandler",
        (SiteRequestHandler,),
        {
            "site_root": root,
            "redirects": load_redirects(root),
            "dynamic": render_dynamic_files(root, base_url),
            "base_url": base_url.encode(),
            "delay_s": delay_s,
            "served_to": served_to,
        },
    )
    server.RequestHandlerClass = handler
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(SERVER_STOP_TIMEOUT_S)


def _wait_until_serving(base_url: str, proc: subprocess.Popen | None = None) -> None:
    host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before serving {base_url}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not start serving {base_url} in {SERVER_START_TIMEOUT_S}s")


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def nginx_config(root: Path, port: int, workdir: Path, *, worker_processes: str = "auto") -> str:
    """An nginx.conf serving `root` on 127.0.0.1:`port` like `serve_site` does; state lives in `workdir`."""
    root = Path(root).resolve()
    redirects = "".join(
        f"        location = {src} {{ return 301 {dst}; }}\n" for src, dst in sorted(load_redirects(root).items())
    )
    overlay = "".join(f"        location = /{name} {{ root {workdir / 'overlay'}; }}\n" for name in DYNAMIC_FILES)
    # As root, workers would drop to "nobody", which cannot read a 0700 temp dir.
    user = "user root;\n" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    return f"""{user}worker_processes {worker_processes};
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/client_body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    types {{
        text/html html;
        application/xml xml;
        application/gzip gz;
        text/plain txt;
        text/css css;
        application/javascript js;
        image/png png;
    }}
    default_type application/octet-stream;
    charset utf-8;
    charset_types text/html text/plain text/css application/javascript;
    # Canonical links carry the base-URL placeholder (the port is chosen at serve time).
    sub_filter '{BASE_URL_PLACEHOLDER}' 'http://127.0.0.1:{port}';
    sub_filter_once off;
    sub_filter_types text/html;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout {KEEPALIVE_IDLE_TIMEOUT_S}s;
    keepalive_requests 100000;
    absolute_redirect off;
    server_tokens off;
    server {{
        listen 127.0.0.1:{port} backlog=1024;
        root {root};
        location = / {{ try_files /index.html =404; }}
{redirects}{overlay}        location ^~ /_ {{ return 404; }}
        location / {{ try_files $uri =404; }}
    }}
}}
"""


@contextlib.contextmanager
def serve_site_nginx(root: Path, *, nginx: str | None = None) -> Iterator[str]:
    """Serve `root` with an nginx subprocess (same behaviour as `serve_site`); yields the base URL."""
    nginx = nginx or shutil.which("nginx")
    if not nginx:
        raise RuntimeError("nginx is not installed")
    with tempfile.TemporaryDirectory(prefix="sitewarden-nginx-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        (workdir / "overlay").mkdir()
        for path, data in render_dynamic_files(root, base_url).items():
            (workdir / "overlay" / path.lstrip("/")).write_bytes(data)
        conf = workdir / "nginx.conf"
        conf.write_text(nginx_config(root, port, workdir))
        proc = subprocess.Popen(
            [
                nginx,
                "-c",
                str(conf),
                "-p",
                str(workdir),
                "-e",
                str(workdir / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(workdir / "stderr.log", "wb"),  # noqa: SIM115 - closed with the process
        )
        try:
            try:
                _wait_until_serving(base_url, proc)
            except RuntimeError as exc:
                log = (workdir / "stderr.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{exc}\n{log}") from None
            yield base_url
        finally:
            # SIGTERM is nginx's fast shutdown; SIGQUIT would wait for idle keep-alive clients.
            _stop_process(proc)


@contextlib.contextmanager
def serve_site_process(root: Path) -> Iterator[str]:
    """The Python server in a child process, so serving does not share this process's GIL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.serve", str(root), "--python"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        line = proc.stdout.readline()
        base_url = line.strip().rsplit(" ", 1)[-1]
        if not base_url.startswith("http://"):
            raise RuntimeError(f"unexpected output from bench.serve: {line!r}")
        _wait_until_serving(base_url, proc)
        yield base_url
    finally:
        _stop_process(proc)
        proc.stdout.close()


@contextlib.contextmanager
def serve_best(root: Path, *, in_process: bool = False) -> Iterator[str]:
    """nginx when installed, else the Python server (in a child process unless `in_process`).

    Prints which one it uses as its first line of output.
    """
    if shutil.which("nginx"):
        with serve_site_nginx(root) as base_url:
            print(f"serving {root} with nginx at {base_url}", flush=True)
            yield base_url
        return
    server = serve_site(root) if in_process else serve_site_process(root)
    with server as base_url:
        where = "in-process" if in_process else "child process"
        print(f"serving {root} with python http.server ({where}) at {base_url}", flush=True)
        yield base_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a generated test site on 127.0.0.1 until Ctrl-C.")
    parser.add_argument("root", type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--python", action="store_true", help="use the Python server even if nginx exists")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root} is not a directory")
    # SIGTERM ends the process cleanly (used by serve_site_process).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    use_nginx = not args.python and shutil.which("nginx") and not args.port
    server = serve_site_nginx(args.root) if use_nginx else serve_site(args.root, port=args.port)
    with server as base_url:
        print(
            f"serving {args.root} with {'nginx' if use_nginx else 'python http.server'} at {base_url}",
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
