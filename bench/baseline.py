"""The 'bare fetch-and-parse' baseline: a plain breadth-first crawler the product is compared with.

requests (one Session per thread) + parsel, a window of `workers` fetches in flight, each same-host URL
fetched once. No robots, no database, no checks.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

import requests
from parsel import Selector

from bench.rss import RssSampler

REQUEST_TIMEOUT_S = 30
RSS_SAMPLE_INTERVAL_S = 0.1


@dataclass
class BaselineResult:
    pages: int  # URLs fetched (any status), redirects followed counted once
    seconds: float
    pages_per_s: float
    peak_rss_bytes: int


def baseline_crawl(base_url: str, *, workers: int = 8, max_pages: int | None = None) -> BaselineResult:
    """Crawl every same-host page reachable from `base_url` by links; return count, time and peak RSS."""
    start_url = urldefrag(base_url)[0]
    if not urlsplit(start_url).path:
        start_url += "/"
    host = urlsplit(start_url).netloc
    local = threading.local()

    def fetch(url: str) -> tuple[str, list[str]]:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        response = session.get(url, timeout=REQUEST_TIMEOUT_S)
        links: list[str] = []
        if response.ok and "html" in response.headers.get("Content-Type", ""):
            # body= (bytes), not text=: parsel parses an XHTML page given as text into namespaced
            # elements, and CSS "a" then matches nothing.
            selector = Selector(body=response.content, type="html", encoding=response.encoding or "utf-8")
            hrefs = selector.css("a::attr(href)").getall()
            links = [urldefrag(urljoin(response.url, href.strip()))[0] for href in hrefs]
        return response.url, links

    seen = {start_url}
    queue = [start_url]  # FIFO: popped from `head`, so breadth-first without deque churn
    head = 0
    fetched = 0
    in_flight: set[Future] = set()
    started = time.perf_counter()
    with (
        RssSampler(tree=False, interval_s=RSS_SAMPLE_INTERVAL_S) as rss,
        ThreadPoolExecutor(max_workers=workers) as pool,
    ):
        while head < len(queue) or in_flight:
            while head < len(queue) and len(in_flight) < workers and (max_pages is None or fetched < max_pages):
                in_flight.add(pool.submit(fetch, queue[head]))
                head += 1
                fetched += 1
            if not in_flight:
                break
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    final_url, links = future.result()
                except requests.RequestException:
                    continue
                seen.add(final_url)  # a redirect target is not fetched again
                for link in links:
                    parts = urlsplit(link)
                    if parts.scheme in ("http", "https") and parts.netloc == host and link not in seen:
                        seen.add(link)
                        queue.append(link)
    seconds = time.perf_counter() - started
    return BaselineResult(
        pages=fetched,
        seconds=seconds,
        pages_per_s=fetched / seconds if seconds > 0 else 0.0,
        peak_rss_bytes=rss.peak,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Bare fetch-and-parse baseline crawl of a site.")
    parser.add_argument("base_url")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--max-pages", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(asdict(baseline_crawl(args.base_url, workers=args.workers, max_pages=args.max_pages))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
