"""Other sites for the external link pass: servers on other loopback origins (127.0.0.1 on other ports, 127.0.0.2,
`localhost`) answering GET and HEAD by path, each request counted by (method, path), and the audited site whose pages
link to them with anchor texts."""

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.sites import RoutedSite, _serve_in_thread
from tests.support.sites.pages import challenge_page, html_route, page

OK_BODY = b"<html><head><title>Elsewhere</title></head><body>fine</body></html>"
SLOW_ANSWER_S = 10.0  # far past the tests' request timeout (tests/audits/pipeline/test_external.py)


class _OtherSiteHandler(BaseHTTPRequestHandler):
    """Routes: path -> function(handler, method) answering; every request recorded as (method, path)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self, method: str) -> None:
        site: OtherSite = self.server.site
        path = self.path.split("?", 1)[0]
        with site.lock:
            site.requests.append((method, path))
            site.headers.append(dict(self.headers))
        route = site.routes.get(path)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if route is None:
                _send(self, method, 404, {"Content-Type": "text/html"}, b"<html>not found</html>")
            else:
                route(self, method)

    def do_GET(self):
        self._answer("GET")

    def do_HEAD(self):
        self._answer("HEAD")


def _send(handler, method: str, status: int, headers: dict, body: bytes = b"") -> None:
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if method != "HEAD":
        handler.wfile.write(body)


def answer(status: int, body: bytes = OK_BODY, headers: dict | None = None):
    return lambda h, m: _send(h, m, status, {"Content-Type": "text/html", **(headers or {})}, body)


def redirect_to(location: str, status: int = 301):
    return lambda h, m: _send(h, m, status, {"Location": location})


def head_refused():
    """405 to HEAD (as some servers answer), 200 to GET."""
    return lambda h, m: _send(h, m, 405, {"Allow": "GET"}) if m == "HEAD" else _send(h, m, 200, {}, OK_BODY)


def bot_wall():
    """Cloudflare's managed challenge: 403, cf-mitigated: challenge, a "Just a moment..." page."""
    body = challenge_page().encode()
    return answer(403, body, {"cf-mitigated": "challenge", "Server": "cloudflare"})


def slow_answer(delay_s: float = SLOW_ANSWER_S):
    def respond(h, m):
        time.sleep(delay_s)
        _send(h, m, 200, {"Content-Type": "text/html"}, OK_BODY)

    return respond


class OtherSite(RoutedSite):
    def __init__(self, server, routes: dict, host: str):
        super().__init__(server, routes)
        self.lock = threading.Lock()
        self.headers: list[dict] = []  # each request's headers, in order
        self.url = f"http://{host}:{self.port}"

    def asked(self) -> list[tuple[str, str]]:
        with self.lock:
            return sorted(self.requests)


@contextlib.contextmanager
def serve_other_site(routes: dict, *, bind: str = "127.0.0.1", host: str | None = None) -> Iterator[OtherSite]:
    """Serve `routes` on a free port of `bind`, named `host` in its URL (e.g. "localhost")."""
    server = ThreadingHTTPServer((bind, 0), _OtherSiteHandler)
    server.daemon_threads = True
    server.site = OtherSite(server, routes, host or bind)
    _serve_in_thread(server)
    try:
        yield server.site
    finally:
        server.shutdown()
        server.server_close()


def audited_site_routes(links_page: list[tuple[str, str]], twin_links: list[tuple[str, str]]) -> dict:
    """The audited site: a home page leading to a page of external links and to its twin (a few of the same
    targets and a working one), so one target is linked from two pages."""
    return {
        "/": html_route(page("home", links=[("/links", "Our links"), ("/twin", "More links")])),
        "/links": html_route(page("links", links=[("/", "Home page"), *links_page])),
        "/twin": html_route(page("twin", links=[("/", "Home page"), *twin_links])),
    }
