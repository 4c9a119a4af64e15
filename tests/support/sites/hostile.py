"""A hostile site served on 127.0.0.1 for the crawler to survive: tarpits, huge bodies, bombs, loops,
endless calendars, 429 storms, lying charsets, binary junk, malformed markup, link floods, JS-only pages."""

import contextlib
import functools
import os
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.support.sites import gzip_bomb, serve_handler

TARPIT_SECONDS = 45  # longer than the crawler's 30 s total deadline
HUGE_BYTES = 50 * 1024 * 1024
BOMB_DECOMPRESSED_BYTES = 1024 * 1024 * 1024  # 1 GiB of zeros, a few MB on the wire


def _html(title: str, body: str, head: str = "") -> bytes:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}</head>'
        f"<body>{body}</body></html>"
    ).encode()


HOME_LINKS = [
    "/tarpit",
    "/huge",
    "/bomb",
    "/loop-a",
    "/calendar/2024/1",
    "/liar",
    "/binary",
    "/malformed",
    "/many-links",
    "/js-only",
]


@functools.cache
def _bomb_body() -> bytes:
    return gzip_bomb(BOMB_DECOMPRESSED_BYTES)


class HostileHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests_seen: list  # (monotonic time, path, headers) per request, set on the bound subclass
    bomb: bytes = b""
    storm: bool = False  # every page but home answers 429 with Retry-After: 1

    def log_message(self, *args):
        pass

    def send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: C901 - a router of test cases reads best flat
        path = urlsplit(self.path).path
        self.requests_seen.append((time.monotonic(), path, dict(self.headers)))
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a> ' for p in HOME_LINKS)
            return self.send(200, _html("Hostile home page for crawler tests", f"<h1>Home</h1>{links}"))
        if self.storm:
            return self.send(429, _html("Slow down", "Too many requests"), Retry_After="1")
        if path == "/robots.txt":
            return self.send(404, b"", "text/plain")
        if path == "/tarpit":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(TARPIT_SECONDS))
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(TARPIT_SECONDS):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(1)
            return
        if path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            block = b"<p>" + b"lorem ipsum " * 85 + b"</p>\n"
            with contextlib.suppress(OSError):
                self.wfile.write(b"<!DOCTYPE html><html><head><title>A page of fifty megabytes</title></head><body>")
                sent = 0
                while sent < HUGE_BYTES - 200:
                    self.wfile.write(block)
                    sent += len(block)
            return
        if path == "/bomb":
            return self.send(200, self.bomb, "text/html", Content_Encoding="gzip")
        if path == "/loop-a":
            return self.send(301, b"", Location="/loop-b")
        if path == "/loop-b":
            return self.send(301, b"", Location="/loop-a")
        if path.startswith("/calendar/"):
            _, _, year, month = path.split("/")
            y, m = int(year), int(month)
            nxt = f"/calendar/{y + (m == 12)}/{m % 12 + 1}"
            prev = f"/calendar/{y - (m == 1)}/{(m - 2) % 12 + 1}"
            body = f'<h1>Calendar {y}-{m}</h1><a href="{prev}">previous</a> <a href="{nxt}">next</a>'
            return self.send(200, _html(f"Events calendar for {y}-{m:02d}", body))
        if path == "/liar":
            # Says UTF-8, is windows-1251.
            body = "<html><head><title>Привет, мир: страница</title></head><body><h1>Тест</h1></body></html>"
            return self.send(200, body.encode("cp1251"), "text/html; charset=utf-8")
        if path == "/binary":
            return self.send(200, os.urandom(64 * 1024), "text/html")
        if path == "/malformed":
            body = (
                b"<html><head><title>Malformed but readable</title><body><h1>Unclosed <b><i>tags</b>"
                b"<p>text<a href='/malformed-target'>a link<div></table></td><li>stray</html"
            )
            return self.send(200, body, "text/html")
        if path == "/malformed-target":
            return self.send(200, _html("Reached through malformed markup", "<h1>ok</h1>"))
        if path == "/many-links":
            links = "".join(f'<a href="/flood/{i}">{i}</a>' for i in range(10_000))
            return self.send(200, _html("A page with ten thousand links", links))
        if path.startswith("/flood/"):
            return self.send(200, _html("Flood target page", "<h1>flood</h1>"))
        if path == "/js-only":
            head = '<script src="/app.js"></script><script>window.boot && boot()</script>'
            return self.send(200, _html("App", '<div id="root"></div>', head))
        if path == "/app.js":
            return self.send(200, b"function boot(){}", "application/javascript")
        return self.send(404, _html("Not found", "nothing here"))


@contextlib.contextmanager
def serve_hostile(*, storm: bool = False, host: str = "127.0.0.1"):
    """Yields (base_url, requests_seen)."""
    seen: list = []
    handler = type(
        "BoundHostileHandler",
        (HostileHandler,),
        {"requests_seen": seen, "storm": storm, "bomb": _bomb_body() if not storm else b""},
    )
    with serve_handler(handler, host=host) as (_, base_url):
        yield base_url, seen
