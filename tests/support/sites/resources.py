"""The page-resource site (issue 27): pages that load scripts, stylesheets, fonts named by @font-face and icons,
some missing and their working twins, one stylesheet and one script on another loopback origin (a CDN), a script
whose server refuses HEAD but serves GET. Every request is recorded with its method and credentials, so a test can
count how often each resource was asked."""

import base64
import contextlib
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler

from tests.support.sites import serve_handler
from tests.support.sites.pages import page

USER, PASSWORD = "auditor", "s3cret"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

BROKEN_PAGE = "/loads-broken"  # the planted page: every kind broken once, beside working ones
ALSO_PAGE = "/also-broken"  # a second page loading the same missing script and font stylesheet
TWIN_PAGE = "/loads-working"  # the clean twin: the same kinds, all working
CSS = "text/css; charset=utf-8"
JS = "text/javascript"


class ResourceServer:
    """One origin: path -> (status, content type, body); HEAD answers like GET without the body unless the path
    is in head_refused (405). Records (method, path, Authorization header) per request."""

    def __init__(self):
        self.routes: dict[str, tuple[int, str, bytes]] = {}
        self.head_refused: set[str] = set()
        self.seen: list[tuple[str, str, str]] = []
        self.url = ""
        self._lock = threading.Lock()

    def add(self, path: str, body: str | bytes = b"", *, status: int = 200, content_type: str = JS) -> None:
        self.routes[path] = (status, content_type, body.encode() if isinstance(body, str) else body)

    def hits(self, method: str | None = None) -> Counter:
        """path -> requests (of `method` only, when given)."""
        return Counter(path for m, path, _ in self.seen if method is None or m == method)

    def clear(self) -> None:
        with self._lock:
            self.seen.clear()

    def handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, with_body: bool) -> None:
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.seen.append((self.command, path, self.headers.get("Authorization", "")))
                if self.command == "HEAD" and path in server.head_refused:
                    status, content_type, body = 405, "text/plain", b""
                else:
                    status, content_type, body = server.routes.get(path, (404, "text/html", b"<p>not found</p>"))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(body)

            def do_GET(self):
                self._answer(with_body=True)

            def do_HEAD(self):
                self._answer(with_body=False)

        return Handler


def _font_face(family: str, src: str) -> str:
    return f'@font-face {{ font-family: "{family}"; src: url("{src}") format("woff2"); }}\n'


@contextlib.contextmanager
def resource_sites():
    """Yields (site, cdn): the site on 127.0.0.1 and a CDN on another loopback address, both serving."""
    site, cdn = ResourceServer(), ResourceServer()
    with (
        serve_handler(site.handler()) as (_site_server, site.url),
        serve_handler(cdn.handler(), host="127.0.0.2") as (_cdn_server, cdn.url),
    ):
        _fill(site, cdn)
        yield site, cdn


def _fill(site: ResourceServer, cdn: ResourceServer) -> None:
    cdn_missing_js, cdn_ok_js = f"{cdn.url}/mathjax/missing.js", f"{cdn.url}/mathjax/tex.js"
    broken_head = (
        '<script src="/js/missing.js"></script>'
        '<script src="/js/head-refused.js"></script>'  # HEAD refused, GET fine: not broken
        f'<script src="{cdn_missing_js}" async></script>'  # another origin: judged all the same
        '<link rel="stylesheet" href="/css/missing.css">'
        '<link rel="stylesheet" href="/css/fonts.css">'  # 200; its @font-face names a missing font and a working one
        '<link rel="shortcut icon" href="/favicon-missing.ico">'
    )
    twin_head = (
        '<script src="/js/app.js"></script>'
        '<script src="/js/head-refused.js"></script>'
        f'<script src="{cdn_ok_js}" async></script>'
        '<link rel="stylesheet" href="/css/site.css">'
        '<link rel="stylesheet" href="/css/fonts-ok.css">'
        '<link rel="icon" href="/favicon.ico">'
    )
    also_head = '<script src="/js/missing.js"></script><link rel="stylesheet" href="/css/fonts.css">'
    links = [(BROKEN_PAGE, "Broken resources"), (ALSO_PAGE, "Also broken"), (TWIN_PAGE, "Working resources")]
    html = "text/html; charset=utf-8"
    site.add("/", page("resources-home", links=links), content_type=html)
    site.add(BROKEN_PAGE, page("loads-broken", head=broken_head), content_type=html)
    site.add(ALSO_PAGE, page("also-broken", head=also_head), content_type=html)
    site.add(TWIN_PAGE, page("loads-working", head=twin_head), content_type=html)
    site.add("/js/app.js", "var app = 1;")
    site.add("/js/head-refused.js", "var refused = 1;")
    site.head_refused.add("/js/head-refused.js")
    site.add("/css/site.css", "body { color: #222; }", content_type=CSS)
    site.add(
        "/css/fonts.css",
        _font_face("Gone", "../fonts/missing.woff2") + _font_face("Here", "../fonts/ok.woff2"),
        content_type=CSS,
    )
    site.add("/css/fonts-ok.css", _font_face("Here", "../fonts/ok.woff2"), content_type=CSS)
    site.add("/fonts/ok.woff2", b"wOF2", content_type="font/woff2")
    site.add("/favicon.ico", b"\x00\x00\x01\x00", content_type="image/x-icon")
    cdn.add("/mathjax/tex.js", "var MathJax = {};")
