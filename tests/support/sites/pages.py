"""The pages of the checks' test sites: an HTML page builder, routes (a plain answer, a redirect, a slow answer),
the routed server of tests.support.sites yielding its base URL, and `Case`, one planted page and what it must show."""

import contextlib
import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.sites import Route, serve_routes

# --- pages -----------------------------------------------------------------------------------------


def page(
    name: str,
    *,
    title: str | None = "",
    titles: list[str] | None = None,
    description: str | None = "",
    head: str = "",
    body: str = "",
    lang: str | None = "en",
    viewport: bool = True,
    h1: str | None = "",
    words: int = 200,
    links: list[tuple[str, str]] | None = None,
) -> str:
    """A page with no issue at all, unless told otherwise; `words` is its exact count of visible words.

    Title, description and text carry `name`, so no two pages of a site are duplicates.
    """
    title = f"Test page {name}" if title == "" else title
    if description == "":
        description = f"The description of the test page called {name}, long enough to be a useful summary."
    h1 = f"Heading {name}" if h1 == "" else h1
    links = [("/", "Home page")] if links is None else links
    parts = ["<!DOCTYPE html>", f'<html lang="{lang}">' if lang is not None else "<html>", "<head>"]
    for t in titles if titles is not None else ([title] if title is not None else []):
        parts.append(f"<title>{html.escape(t)}</title>")
    if description is not None:
        parts.append(f'<meta name="description" content="{html.escape(description)}">')
    if viewport:
        parts.append('<meta name="viewport" content="width=device-width, initial-scale=1">')
    parts += [head, "</head>", "<body>"]
    used = 0
    if h1 is not None:
        parts.append(f"<h1>{html.escape(h1)}</h1>")
        used += len(h1.split())
    link_html = "".join(f'<li><a href="{html.escape(h)}">{html.escape(t)}</a></li>' for h, t in links)
    used += sum(len(t.split()) for _, t in links)
    filler = max(words - used, 0)
    parts.append("<p>" + " ".join(f"{name.replace('-', '')}w{i}" for i in range(filler)) + "</p>")
    parts += [body, f"<ul>{link_html}</ul>" if links else "", "</body></html>"]
    return "\n".join(parts)


def challenge_page() -> str:
    return (
        "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
        "<noscript>Enable JavaScript and cookies to continue</noscript>"
        "<script>window._cf_chl_opt={cvId: '3'};</script></body></html>"
    )


# --- server ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def serve(routes: dict):
    """Serve `routes` (path -> (status, headers, body) or handler function) on 127.0.0.1; yields the base URL."""
    with serve_routes(routes) as site:
        yield site.url


def html_route(body: str, status: int = 200, headers: dict | None = None) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "text/html; charset=utf-8", **(headers or {})}, body.encode("utf-8")


def redirect(location: str, status: int = 301) -> tuple[int, dict, bytes]:
    return status, {"Location": location, "Content-Type": "text/html"}, b""


def sitemap_route(urls: list[str]) -> tuple[int, dict, bytes]:
    """An XML sitemap (a urlset) listing `urls`, absolute as the protocol wants them."""
    locs = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    )
    return 200, {"Content-Type": "application/xml"}, body.encode()


def slow(body: str, delay_s: float) -> Callable:
    def respond(handler) -> None:
        time.sleep(delay_s)  # before the headers: what slow-response measures
        data = body.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return respond


@dataclass
class Case:
    """One page of the page-check site and what its issues must and must not include."""

    name: str
    route: Route
    present: set = field(default_factory=set)
    absent: set = field(default_factory=set)
    path: str = ""  # default /case/<name>
    crawl: bool = True  # False: only in the unit layer (https URL, site on https, exact timing)
    as_url: str = ""  # unit layer: build the record as if fetched from this URL ("https" -> https base)
    depth: int = 1
    site_https: bool = False
    response_time_ms: int | None = None  # unit layer: replaces the measured time
    unit: bool = True  # False: only crawled (a real 1.6 s wait is paid once)

    def __post_init__(self):
        self.path = self.path or f"/case/{self.name}"
