"""A small site for politeness and scope tests: / links to /p0../p9 (tracking parameters on each), each /pN to
/deep/1; robots.txt, basic auth, redirects and extra home markup per test; every request recorded with its time."""

import base64
import contextlib
import time
from http.server import BaseHTTPRequestHandler

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler


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

    def do_GET(self):
        self.seen.append((time.monotonic(), self.path, dict(self.headers)))
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
