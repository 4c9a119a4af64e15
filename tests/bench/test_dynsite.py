"""The on-the-fly site (bench/dynsite.py): pages rendered from their URL alone, the same bytes every time,
exactly `expected_urls(N)` reachable by links, and sitemaps the product's own discovery reads in full."""

import gzip
import http.client
import re
from urllib.parse import urlsplit

import pytest

from bench.baseline import baseline_crawl
from bench.dynsite import (
    SITEMAP_URLS_PER_FILE,
    expected_urls,
    page_number,
    render_page,
    serve_dynamic_site,
    serve_dynamic_site_processes,
    sitemap_files,
)
from crawler.discovery import Robots, fetch_robots, fetch_sitemaps
from crawler.fetch import DEFAULT_USER_AGENT, build_session

PAGES = 1500  # more than one sitemap file needs > SITEMAP_URLS_PER_FILE; see the sitemap test's own size


@pytest.fixture(scope="module")
def site():
    with serve_dynamic_site(PAGES) as base_url:
        yield base_url


def _get(base_url: str, path: str, method: str = "GET") -> tuple[int, dict, bytes]:
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_pages_are_deterministic_and_rendered_from_the_url(site):
    status, headers, body = _get(site, "/p/77.html")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert body == render_page(77, PAGES) == _get(site, "/p/77.html")[2]
    assert render_page(77, PAGES) != render_page(78, PAGES)
    html = body.decode()
    for tag in ("<title>", '<meta name="description"', "<h1>", "<img ", "<nav>"):
        assert tag in html
    assert 'href="/p/9.html"' in html  # parent of 77 in the 8-ary tree: (77 - 1) // 8
    assert 'href="/p/617.html"' in html  # first child: 77 * 8 + 1


def test_only_the_sites_pages_exist(site):
    for path in ("/p/0.html", f"/p/{PAGES}.html", "/p/007.html", "/p/x.html", "/nothing"):
        assert _get(site, path)[0] == 404, path
    assert page_number("/", PAGES) == 0 and page_number(f"/p/{PAGES - 1}.html", PAGES) == PAGES - 1
    status, headers, body = _get(site, "/p/5.html", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == len(render_page(5, PAGES))


def test_a_crawl_finds_exactly_the_expected_urls(site):
    result = baseline_crawl(site + "/", workers=8)
    assert result.pages == PAGES == len(expected_urls(PAGES))
    assert expected_urls(PAGES, site)[:2] == [site + "/", site + "/p/1.html"]


def test_the_products_discovery_reads_every_sitemap_url():
    pages = SITEMAP_URLS_PER_FILE + 321  # two gzip'd sitemap files behind the index
    assert sitemap_files(pages) == 2
    with serve_dynamic_site_processes(pages, processes=2) as base_url:
        session = build_session()
        try:
            robots = Robots(fetch_robots(session, base_url).raw, DEFAULT_USER_AGENT)
            assert robots.sitemaps() == [base_url + "/sitemap.xml"]
            result = fetch_sitemaps(session, base_url, robots, max_urls=50_000)
        finally:
            session.close()
        gz = _get(base_url, "/sitemaps/1.xml.gz")
    assert result.errors == [] and not result.capped
    assert result.urls == expected_urls(pages, base_url)
    assert gz[1]["Content-Type"] == "application/gzip"
    assert len(re.findall(rb"<loc>", gzip.decompress(gz[2]))) == 321
