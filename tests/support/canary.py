"""Sites that record the Authorization header of every request they get, on 127.0.0.1: a project's site behind
basic auth, and a canary on another port (another origin) that must never receive the project's credentials."""

import base64
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.support.sites import serve_handler

USER, PASSWORD = "crawler", "canary-s3cret"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class RecordingSite:
    """`routes`: path -> (status, body, headers), filled before crawling; `seen`: (path, Authorization or None)
    per request, in order."""

    url: str
    routes: dict = field(default_factory=dict)
    seen: list = field(default_factory=list)

    def page(self, path: str, *links: str, images: tuple[str, ...] = ()) -> None:
        body = "".join(f'<a href="{link}">{link}</a>' for link in links)
        body += "".join(f'<img src="{src}" width="1" height="1" alt="">' for src in images)
        self.routes[path] = (
            200,
            f"<!DOCTYPE html><html><head><title>{path}</title></head><body>{body}</body></html>",
            {},
        )

    def sitemap(self, path: str, *urls: str) -> None:
        locs = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
        body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
        self.routes[path] = (200, body, {"Content-Type": "application/xml"})

    def redirect(self, path: str, location: str) -> None:
        self.routes[path] = (302, "", {"Location": location})

    def credentials_received(self) -> list[str]:
        return [auth for _, auth in self.seen if auth]

    def paths(self) -> set[str]:
        return {path for path, _ in self.seen}


@contextlib.contextmanager
def serve_recording(*, needs_auth: bool = False) -> Iterator[RecordingSite]:
    """A site on a free port of 127.0.0.1 that records every request's Authorization header. With `needs_auth`,
    a request without the project's credentials (BASIC) is answered 401, as a staging site would."""
    holder: dict = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            site: RecordingSite = holder["site"]
            auth = self.headers.get("Authorization")
            site.seen.append((self.path, auth))
            status, body, headers = site.routes.get(self.path, (404, "not found", {}))
            if needs_auth and auth != BASIC:
                status, body, headers = 401, "<title>Sign in</title>", {"WWW-Authenticate": 'Basic realm="staging"'}
            data = body.encode()
            headers = dict(headers)
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "text/html; charset=utf-8"))
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    with serve_handler(Handler) as (_, url):
        holder["site"] = RecordingSite(url)
        yield holder["site"]


@contextlib.contextmanager
def site_and_canary() -> Iterator[tuple[RecordingSite, RecordingSite]]:
    """The project's site (basic auth required) and a canary on another port: two origins of 127.0.0.1."""
    with serve_recording(needs_auth=True) as site, serve_recording() as canary:
        yield site, canary
