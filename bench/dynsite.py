"""A site of any size rendered on the fly from each URL, so a 100,000-page crawl writes nothing to disk.

Page n (0 is home, `/`; n >= 1 is `/p/{n}.html`) is a pure function of (n, pages): title, meta description,
h1, paragraphs from a seeded pool, a nav, links to its tree parent and children (depth ~ log8 n), a few
cross links and images. robots.txt names a sitemap index whose gzip'd sitemaps are generated per request.

python -m bench.dynsite --pages 100000 [--port P] [--processes 2]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

TREE_BRANCHING = 8  # children per page: page n's parent is (n - 1) // 8, so depth is about log8(n)
NAV_LINKS = 8  # home and the first sections, on every page
CROSS_LINKS_PER_PAGE = 4
IMAGES_PER_PAGE = 3
IMAGE_FILES = 16
PARAGRAPH_POOL_SIZE = 400
PARAGRAPHS_PER_PAGE = 6
SITEMAP_URLS_PER_FILE = 10_000  # the protocol allows 50,000; smaller files spread the gzip work
SITEMAP_LASTMOD = "2024-05-01"
RENDER_CACHE_PAGES = 4096  # rendered pages kept per process (a crawler fetches each once; HEADs re-ask)
KEEPALIVE_IDLE_TIMEOUT_S = 30
SERVER_START_TIMEOUT_S = 15
SERVER_STOP_TIMEOUT_S = 10
POOL_SEED = 20_260_101

_WORDS = (
    "widget gadget sprocket bracket hinge flange gasket valve spindle rotor bearing coupling lever "
    "pulley socket anchor clamp fastener rivet washer spring piston cylinder nozzle filter sensor relay "
    "switch module panel frame housing cover plate rail track guide roller wheel axle shaft gear belt "
    "chain hook loop ring seal cap plug tube pipe hose fitting joint elbow tee cross union nipple bushing "
    "sleeve collar stud bolt screw nut pin key wedge shim spacer standoff grommet clip buckle latch catch "
    "durable compact precise robust modular reliable efficient quiet smooth sturdy light heavy bright "
    "steel brass copper nylon rubber carbon alloy ceramic glass oak maple walnut cedar bamboo cork felt "
    "install adjust replace inspect measure assemble connect mount secure tighten loosen clean polish "
    "the a of for with and to in on by from our your this every each new classic premium standard"
).split()

_PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def page_path(n: int) -> str:
    return "/" if n == 0 else f"/p/{n}.html"


def expected_urls(pages: int, base_url: str = "") -> list[str]:
    """Every URL a correct crawler stores a row for: the `pages` pages, home first, in number order."""
    base = base_url.rstrip("/")
    return [base + page_path(n) for n in range(pages)]


def page_number(path: str, pages: int) -> int | None:
    """n for a page path of this site, None for anything else (including /p/0.html and numbers >= pages)."""
    if path == "/":
        return 0
    if not (path.startswith("/p/") and path.endswith(".html")):
        return None
    digits = path[3:-5]
    if not digits.isdigit() or digits.startswith("0"):
        return None
    n = int(digits)
    return n if 0 < n < pages else None


def sitemap_files(pages: int) -> int:
    return max(1, -(-pages // SITEMAP_URLS_PER_FILE))


@lru_cache(maxsize=1)
def _paragraph_pool() -> tuple[str, ...]:
    rng = random.Random(POOL_SEED)

    def sentence() -> str:
        return " ".join(rng.choices(_WORDS, k=rng.randint(8, 16))).capitalize() + "."

    return tuple(" ".join(sentence() for _ in range(rng.randint(3, 6))) for _ in range(PARAGRAPH_POOL_SIZE))


def _title(n: int) -> str:
    if n == 0:
        return "Example Widgets: every part, in stock"
    word = _WORDS[n % len(_WORDS)]
    return f"{word.capitalize()} part {n} | Example Widgets"


def render_page(n: int, pages: int) -> bytes:
    """The HTML of page n of a `pages`-page site (deterministic: same n and pages, same bytes)."""
    rng = random.Random(n * 1_000_003 + pages)
    pool = _paragraph_pool()
    title = _title(n)
    words = rng.choices(_WORDS, k=14)
    description = f"Part {n}: " + " ".join(words).capitalize() + ", shipped from our own warehouse in two days."
    nav = [(page_path(k), _title(k).split(" |")[0]) for k in range(min(NAV_LINKS, pages))]
    parent = (n - 1) // TREE_BRANCHING if n else None
    children = [c for c in range(n * TREE_BRANCHING + 1, n * TREE_BRANCHING + TREE_BRANCHING + 1) if c < pages]
    cross = sorted({rng.randrange(1, pages) for _ in range(CROSS_LINKS_PER_PAGE)} - {n}) if pages > 1 else []
    out = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f"<title>{title}</title>\n",
        f'<meta name="description" content="{description}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        "</head>\n<body>\n<header>\n<nav>\n<ul>\n",
    ]
    out += [f'<li><a href="{href}">{text}</a></li>\n' for href, text in nav]
    out.append("</ul>\n</nav>\n</header>\n<main>\n<article>\n")
    out.append(f"<h1>{title.split(' |')[0]}</h1>\n")
    if parent is not None:
        out.append(f'<p class="crumb">Back to <a href="{page_path(parent)}">{_title(parent).split(" |")[0]}</a></p>\n')
    paragraphs = rng.sample(pool, PARAGRAPHS_PER_PAGE)
    for i, paragraph in enumerate(paragraphs):
        if i % 2 == 0:
            out.append(f"<h2>{' '.join(rng.choices(_WORDS, k=4)).capitalize()}</h2>\n")
        if i < IMAGES_PER_PAGE:
            img = (n + i * 7) % IMAGE_FILES
            alt = " ".join(rng.choices(_WORDS, k=3))
            out.append(f'<figure><img src="/img/{img}.png" alt="{alt}" width="640" height="360"></figure>\n')
        # A sentence of its own keeps every page's text distinct (no near duplicates by construction).
        out.append(f"<p>{paragraph} Part {n} is item {n * 37 % 9973} of batch {n // 100}.</p>\n")
    if children:
        out.append('<h2>In this range</h2>\n<ul class="children">\n')
        out += [f'<li><a href="{page_path(c)}">{_title(c).split(" |")[0]}</a></li>\n' for c in children]
        out.append("</ul>\n")
    if cross:
        out.append("<p>Customers also viewed " + ", ".join(f'<a href="{page_path(c)}">part {c}</a>' for c in cross))
        out.append(".</p>\n")
    out.append("</article>\n</main>\n<footer><p>&#169; 2024 Example Widgets Ltd.</p></footer>\n</body>\n</html>\n")
    return "".join(out).encode("utf-8")


def render_robots(base_url: str) -> bytes:
    return f"User-agent: *\nAllow: /\n\nSitemap: {base_url.rstrip('/')}/sitemap.xml\n".encode()


def render_sitemap_index(pages: int, base_url: str) -> bytes:
    base = base_url.rstrip("/")
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ]
    lines += [f"<sitemap><loc>{base}/sitemaps/{k}.xml.gz</loc></sitemap>" for k in range(sitemap_files(pages))]
    lines.append("</sitemapindex>\n")
    return "\n".join(lines).encode()


def render_sitemap(k: int, pages: int, base_url: str) -> bytes | None:
    """Sitemap file k (gzip'd) listing pages [k * 10,000, (k + 1) * 10,000), or None past the last file."""
    if not 0 <= k < sitemap_files(pages):
        return None
    base = base_url.rstrip("/")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for n in range(k * SITEMAP_URLS_PER_FILE, min(pages, (k + 1) * SITEMAP_URLS_PER_FILE)):
        lines.append(f"<url><loc>{base}{page_path(n)}</loc><lastmod>{SITEMAP_LASTMOD}</lastmod></url>")
    lines.append("</urlset>\n")
    # Level 1: an order of magnitude faster than 9, and the crawler's size cap is on the inflated bytes.
    return gzip.compress("\n".join(lines).encode(), compresslevel=1, mtime=0)


class DynamicSiteHandler(BaseHTTPRequestHandler):
    """Serves the on-the-fly site. Set on a subclass: `pages`, `base_url`."""

    protocol_version = "HTTP/1.1"  # keep-alive: every response carries Content-Length
    disable_nagle_algorithm = True  # headers and body are separate writes; Nagle + delayed ACK stalls ~40 ms
    timeout = KEEPALIVE_IDLE_TIMEOUT_S
    server_version = "SitewardenDynSite/1"
    sys_version = ""
    pages: int = 0
    base_url: str = ""

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self._respond(send_body=True)

    def do_HEAD(self):
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        path = urlsplit(self.path).path
        status, content_type, body = 200, "text/html; charset=utf-8", None
        n = page_number(path, self.pages)
        if n is not None:
            body = _cached_page(n, self.pages)
        elif path == "/robots.txt":
            content_type, body = "text/plain; charset=utf-8", render_robots(self.base_url)
        elif path == "/sitemap.xml":
            content_type, body = "application/xml", render_sitemap_index(self.pages, self.base_url)
        elif path.startswith("/sitemaps/") and path.endswith(".xml.gz") and path[10:-7].isdigit():
            content_type, body = "application/gzip", render_sitemap(int(path[10:-7]), self.pages, self.base_url)
        elif path.startswith("/img/") and path.endswith(".png"):
            content_type, body = "image/png", _PNG_1X1
        if body is None:
            status, content_type = 404, "text/html; charset=utf-8"
            body = b"<!DOCTYPE html><title>Not found</title><h1>Not found</h1>\n"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)


@lru_cache(maxsize=RENDER_CACHE_PAGES)
def _cached_page(n: int, pages: int) -> bytes:
    return render_page(n, pages)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def server_bind(self):
        # Several processes may listen on one port: the kernel spreads connections between them.
        if hasattr(socket, "SO_REUSEPORT"):
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()

    def handle_error(self, request, client_address):
        # Crawlers drop keep-alive connections at will; a reset or timeout is not worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def _make_server(pages: int, port: int) -> tuple[_Server, str]:
    server = _Server(("127.0.0.1", port), DynamicSiteHandler)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    server.RequestHandlerClass = type(
        "BoundDynamicSiteHandler", (DynamicSiteHandler,), {"pages": pages, "base_url": base_url}
    )
    return server, base_url


@contextlib.contextmanager
def serve_dynamic_site(pages: int, *, port: int = 0) -> Iterator[str]:
    """Serve a `pages`-page site from a thread of this process (tests); yields "http://127.0.0.1:PORT"."""
    server, base_url = _make_server(pages, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield base_url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(SERVER_STOP_TIMEOUT_S)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_dynamic_site_processes(pages: int, *, processes: int = 2, port: int = 0) -> Iterator[str]:
    """Serve from `processes` forked children sharing one port (SO_REUSEPORT), so rendering is not held to
    one GIL or one core; yields the base URL and stops the children on exit (benchmarks)."""
    port = port or _free_port()
    children = []
    for _ in range(max(1, processes)):
        pid = os.fork()
        if pid == 0:  # child: serve until SIGTERM
            signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
            server, _ = _make_server(pages, port)
            try:
                server.serve_forever(poll_interval=0.5)
            finally:
                os._exit(0)
        children.append(pid)
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(port)
        yield base_url
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _wait_until_serving(port: int) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"dynamic site did not start serving on port {port} in {SERVER_START_TIMEOUT_S}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    with serve_dynamic_site_processes(args.pages, processes=args.processes, port=args.port) as base_url:
        print(f"serving a {args.pages}-page site at {base_url}/ (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
