"""A small site for politeness and scope tests: / links to /p0../p9 (tracking parameters on each), each /pN to
/deep/1; robots.txt, basic auth, redirects and extra home markup per test; every request recorded with its time.

A request's time is when the kernel received its first bytes (SO_TIMESTAMPNS), not when the handler thread got to
run: the audit runs in the test's process, and a handler waiting for the GIL (or for a core, on a loaded machine)
stamped late made a gap between two requests look shorter than the one the site saw."""

import base64
import contextlib
import socket
import struct
import time
from http.server import BaseHTTPRequestHandler

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler

# Linux's SO_TIMESTAMPNS (asm-generic/socket.h), which Python's socket module does not name: received data carries
# its arrival time, a struct timespec of the wall clock (CLOCK_REALTIME), in recvmsg's ancillary data.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")


def arrival_s(sock: socket.socket) -> float:
    """When the kernel received the next bytes waiting on `sock` (the next request's first), on the wall clock;
    blocks until they come. time.time() when the kernel gave no timestamp (the socket closed, or no
    SO_TIMESTAMPNS)."""
    with contextlib.suppress(OSError):
        _, ancillary, _, _ = sock.recvmsg(1, socket.CMSG_SPACE(_TIMESPEC.size), socket.MSG_PEEK)
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
                seconds, nanoseconds = _TIMESPEC.unpack_from(data)
                return seconds + nanoseconds / 1e9
    return time.time()


class SmallSite(BaseHTTPRequestHandler):
    """/ links to /p0../p9; /robots.txt per class attribute; records (time, path, headers) of requests."""

    protocol_version = "HTTP/1.1"
    robots = ""
    seen: list = []
    needs_auth: tuple | None = None
    redirects: dict = {}
    extra_home = ""  # more markup for the home page

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", ctype="text/html; charset=utf-8", **headers):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def handle_one_request(self):
        self.arrived_s = arrival_s(self.connection)
        super().handle_one_request()

    def do_GET(self):
        self.seen.append((self.arrived_s, self.path, dict(self.headers)))
        if self.path == "/robots.txt":
            return self._send(200 if self.robots else 404, self.robots.encode(), "text/plain")
        if self.needs_auth:
            expected = "Basic " + base64.b64encode(":".join(self.needs_auth).encode()).decode()
            if self.headers.get("Authorization") != expected:
                return self._send(401, b"<title>Sign in</title>", WWW_Authenticate='Basic realm="x"')
        if self.path.split("?")[0] in self.redirects:
            return self._send(301, Location=self.redirects[self.path.split("?")[0]])
        links = "".join(f'<a href="/p{i}?utm_source=x&id={i}">p{i}</a>' for i in range(10)) if self.path == "/" else ""
        links += self.extra_home if self.path == "/" else ""
        deep = '<a href="/deep/1">deeper</a>' if self.path.startswith("/p") else ""
        body = f"<!DOCTYPE html><html><head><title>Page {self.path}</title></head><body>{links}{deep}</body></html>"
        return self._send(200, body.encode())


@contextlib.contextmanager
def serve_small(host="127.0.0.1", **attrs):
    """Yields (server, base_url, requests seen)."""
    handler = type("Site", (SmallSite,), {"seen": [], **attrs})
    with serve_handler(handler, host=host) as (server, base):
        # On the listening socket, before any client connects: accepted connections inherit it, so even a request
        # that arrived before its handler thread started is stamped.
        server.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        yield server, base, handler.seen


def audit_small(base, **project_options):
    project = ProjectFactory(base_url=base + "/", **project_options)
    audit = audit_start(project=project, start_url=base + "/", max_pages=100, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit


def request_gaps(seen):
    times = sorted(t for t, path, _ in seen if path != "/robots.txt")
    return [b - a for a, b in zip(times, times[1:], strict=False)]
