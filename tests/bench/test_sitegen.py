"""The generated test site: deterministic, connected, sitemaps complete, served correctly."""

import gzip
import hashlib
import http.client
import re
import shutil
from pathlib import Path
from urllib.parse import urldefrag, urlsplit
from xml.etree import ElementTree

import pytest

from bench.baseline import baseline_crawl
from bench.serve import nginx_config, serve_site, serve_site_nginx, serve_site_process
from bench.sitegen import BASE_URL_PLACEHOLDER, SiteManifest, generate_site

PAGES = 150
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
HREF = re.compile(rb'<a href="([^"]*)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    return root, generate_site(root, PAGES, seed=7, page_kb=8)


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _file_for(root: Path, path: str) -> Path:
    return root / ("index.html" if path == "/" else path.lstrip("/"))


def _links(root: Path, path: str) -> list[str]:
    hrefs = HREF.findall(_file_for(root, path).read_bytes())
    return [urldefrag(h.decode())[0] for h in hrefs if h.startswith(b"/")]


def test_generation_is_deterministic(tmp_path, site):
    root, manifest = site
    again = generate_site(tmp_path / "again", PAGES, seed=7, page_kb=8)
    assert again == manifest
    assert _tree_digest(tmp_path / "again") == _tree_digest(root)
    other = generate_site(tmp_path / "other", PAGES, seed=8, page_kb=8)
    assert _tree_digest(tmp_path / "other") != _tree_digest(root)
    assert other.pages == manifest.pages  # the seed varies text and cross-links, not the page set


def test_manifest_round_trips_through_json(site):
    root, manifest = site
    assert SiteManifest.load(root / "_manifest.json") == manifest


def test_every_page_is_reachable_from_home_by_links_or_redirects(site):
    root, manifest = site
    reached, frontier = {"/"}, ["/"]
    while frontier:
        path = frontier.pop()
        for link in _links(root, path):
            link = manifest.redirects.get(link, link)
            if link in reached or link in manifest.missing or link.startswith("/private/"):
                continue
            assert _file_for(root, link).is_file(), f"{path} links to {link}, which does not exist"
            reached.add(link)
            frontier.append(link)
    assert reached == manifest.pages
    assert not any(p.startswith("/private/") for p in manifest.pages)
    assert manifest.xhtml_only_target in manifest.pages
    assert all(not _file_for(root, p).exists() for p in manifest.missing)
    assert not manifest.sitemap_only & manifest.pages


def test_features_are_present(site):
    root, manifest = site
    home_links = set(_links(root, "/"))
    assert {"/old-page", "/missing.html", manifest.xhtml_path} <= home_links
    assert manifest.disallowed and manifest.disallowed <= home_links
    assert "/index.html" not in home_links  # home has one URL, "/"
    xhtml = _file_for(root, manifest.xhtml_path).read_bytes()
    assert xhtml.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert b'xmlns="http://www.w3.org/1999/xhtml"' in xhtml
    # The XHTML-only target is linked from the XHTML page and from no other page.
    linking = [p for p in manifest.pages if manifest.xhtml_only_target in _links(root, p)]
    assert linking == [manifest.xhtml_path]
    assert "Disallow: /private/" in (root / "robots.txt").read_text()


def test_expected_urls(site):
    _, manifest = site
    urls = manifest.expected_urls("http://127.0.0.1:8000")
    assert "http://127.0.0.1:8000/" in urls and "http://127.0.0.1:8000/index.html" not in urls
    assert "http://127.0.0.1:8000/old-page" in urls and "http://127.0.0.1:8000/missing.html" in urls
    assert len(urls) == len(manifest.pages) + len(manifest.redirects) + 1 + len(manifest.sitemap_only)
    assert not any("/private/" in u for u in urls)


def test_no_features_site_is_plain(tmp_path):
    manifest = generate_site(tmp_path, 20, page_kb=4, features=False)
    assert len(manifest.pages) == 20
    assert not (manifest.redirects or manifest.missing or manifest.disallowed or manifest.sitemap_only)


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, dict, bytes]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_server_and_sitemaps(site):
    root, manifest = site
    with serve_site(root) as base:
        parts = urlsplit(base)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        status, headers, body = _get(conn, "/")
        assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
        assert body == (root / "index.html").read_bytes().replace(BASE_URL_PLACEHOLDER.encode(), base.encode())
        assert f'<link rel="canonical" href="{base}/" />'.encode() in body
        sock = conn.sock  # every request below must reuse this connection (keep-alive)

        status, headers, _ = _get(conn, "/old-page")
        assert status == 301 and headers["location"] == "/moved/page.html"
        status, headers, _ = _get(conn, "/missing.html")
        assert status == 404 and int(headers["content-length"]) > 0
        assert _get(conn, "/_manifest.json")[0] == 404
        assert _get(conn, "/private/page-1.html")[0] == 200  # served; only robots.txt keeps crawlers out

        status, headers, robots = _get(conn, "/robots.txt")
        assert headers["content-type"].startswith("text/plain")
        assert f"Sitemap: {base}/sitemap.xml" in robots.decode() and "Disallow: /private/" in robots.decode()

        status, headers, index = _get(conn, "/sitemap.xml")
        assert status == 200 and headers["content-type"] == "application/xml"
        children = [e.text for e in ElementTree.fromstring(index).iter(f"{SITEMAP_NS}loc")]
        assert children == [f"{base}/sitemap-pages-1.xml", f"{base}/sitemap-pages-2.xml.gz"]
        listed = []
        for child in children:
            status, headers, data = _get(conn, urlsplit(child).path)
            assert status == 200
            if child.endswith(".gz"):
                assert headers["content-type"] == "application/gzip" and "content-encoding" not in headers
                data = gzip.decompress(data)
            listed += [e.text for e in ElementTree.fromstring(data).iter(f"{SITEMAP_NS}loc")]
        assert conn.sock is sock
        conn.close()

    assert len(listed) == len(set(listed))
    listed_paths = {urlsplit(u).path for u in listed}
    assert "/" in listed_paths and manifest.sitemap_only <= listed_paths
    # Only the pages that exist to be found one particular way are left out of the sitemaps.
    assert manifest.pages - listed_paths == {manifest.xhtml_only_target, *manifest.redirects.values()}
    assert listed_paths <= manifest.pages | manifest.sitemap_only


def test_baseline_crawls_every_linked_url_once(site):
    root, manifest = site
    with serve_site(root) as base:
        result = baseline_crawl(base, workers=4)
    # No robots for the baseline: it also fetches the private pages; the redirect target is reached
    # through its source, and the sitemap-only page through nothing.
    expected = len(manifest.pages) + len(manifest.missing) + len(manifest.disallowed)
    assert result.pages == expected
    assert result.peak_rss_bytes > 0 and result.pages_per_s > 0


def test_python_server_in_a_child_process(site):
    root, _ = site
    with serve_site_process(root) as base:
        parts = urlsplit(base)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        assert _get(conn, "/")[0] == 200
        conn.close()


def test_nginx_config_mirrors_the_python_server(site, tmp_path):
    root, _ = site
    conf = nginx_config(root, 18080, tmp_path)
    assert "listen 127.0.0.1:18080" in conf
    assert "location = /old-page { return 301 /moved/page.html; }" in conf
    assert f"location = /sitemap-pages-2.xml.gz {{ root {tmp_path / 'overlay'}; }}" in conf
    assert "location ^~ /_ { return 404; }" in conf


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed")
def test_nginx_serves_like_the_python_server(site):
    root, _ = site
    with serve_site_nginx(root) as base:
        parts = urlsplit(base)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        status, headers, body = _get(conn, "/")
        assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
        assert body == (root / "index.html").read_bytes().replace(BASE_URL_PLACEHOLDER.encode(), base.encode())
        status, headers, _ = _get(conn, "/old-page")
        assert status == 301 and headers["location"] == "/moved/page.html"
        assert _get(conn, "/missing.html")[0] == 404
        assert _get(conn, "/_manifest.json")[0] == 404
        status, headers, data = _get(conn, "/sitemap-pages-2.xml.gz")
        assert status == 200 and headers["content-type"] == "application/gzip"
        assert base.encode() in gzip.decompress(data)
        assert f"Sitemap: {base}/sitemap.xml" in _get(conn, "/robots.txt")[2].decode()
        conn.close()
