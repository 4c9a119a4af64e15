import gzip
import time
import tracemalloc

from crawler import limits
from crawler.discovery import Robots, SitemapCap, fetch_robots, fetch_sitemaps, invalid_lines, product_token
from crawler.fetch import DEFAULT_USER_AGENT

UA = DEFAULT_USER_AGENT
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'

ROBOTS = """\ufeff# comment
User-agent: *
Disallow: /private/
Disallow: /*.pdf$
Allow: /private/open
Crawl-delay: 5

User-agent: github
Disallow: /

Sitemap: https://example.com/sitemap_index.xml
Sitemap: /relative-sitemap.xml
"""


def urlset(urls, ns=NS) -> bytes:
    locs = "".join(f"<url><loc>{u}</loc><lastmod>2024-01-01</lastmod></url>" for u in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {ns}>{locs}</urlset>'.encode()


def index(children, ns=NS) -> bytes:
    locs = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in children)
    return f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex {ns}>{locs}</sitemapindex>'.encode()


def test_robots_rules_for_the_product_token():
    robots = Robots(ROBOTS, UA)
    assert robots.token == "Sitewarden"
    assert robots.allowed("https://example.com/")
    assert not robots.allowed("https://example.com/private/x")
    assert robots.allowed("https://example.com/private/open")  # longest match wins
    assert not robots.allowed("https://example.com/docs/file.pdf")
    assert robots.allowed("https://example.com/docs/file.pdf?download=1")  # $ anchors the end
    # The UA's contact URL mentions github; that group must not apply to us.
    assert robots.allowed("https://example.com/anything")
    assert robots.crawl_delay_s() == 5.0
    assert robots.sitemaps() == ["https://example.com/sitemap_index.xml", "/relative-sitemap.xml"]


def test_robots_group_for_sitewarden_wins_over_star():
    robots = Robots("User-agent: *\nDisallow: /\n\nUser-agent: sitewarden\nDisallow: /admin\n", UA)
    assert robots.allowed("https://example.com/page")
    assert not robots.allowed("https://example.com/admin/x")
    assert not Robots("User-agent: *\nDisallow: /\n", UA).allowed("https://example.com/page")


def test_missing_robots_allows_everything():
    for raw in (None, ""):
        robots = Robots(raw, UA)
        assert robots.allowed("https://example.com/private/x")
        assert robots.crawl_delay_s() is None
        assert robots.sitemaps() == []


def test_product_token():
    assert product_token(UA) == "Sitewarden"
    assert product_token("Mozilla/5.0 (compatible; Sitewarden/0.1)") == "Sitewarden"
    assert product_token("OtherBot/2.0") == "OtherBot"


def test_invalid_lines():
    raw = (
        "User-agent: *\n# fine\n\nDisallow: /x # trailing comment\nAllow:/y\nCRAWL-DELAY: 2\n"
        "Sitemap: https://e.com/s.xml\nHost: e.com\nClean-param: ref /a\n"
        "Disalow: /typo\n<html><body>Not a robots file</body></html>\nDisallow /no-colon\n"
    )
    assert invalid_lines(raw) == ["Disalow: /typo", "<html><body>Not a robots file</body></html>", "Disallow /no-colon"]
    assert invalid_lines(ROBOTS) == []
    assert invalid_lines(None) == []
    assert len(invalid_lines("junk\n" * 1000)) == limits.MAX_ROBOTS_INVALID_LINES


def test_fetch_robots(site, session):
    site.add("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    result = fetch_robots(session, site.url + "/some/page?x=1")
    assert result.url == site.url + "/robots.txt"
    assert result.status_code == 200
    assert result.raw == "User-agent: *\nDisallow: /private/\n"
    assert result.error is None


def test_fetch_robots_follows_redirects(site, session):
    site.add("/robots.txt", "", status=301, headers={"Location": "/real-robots.txt"})
    site.add("/real-robots.txt", "User-agent: *\nDisallow: /\n", content_type="text/plain")
    result = fetch_robots(session, site.url)
    assert result.status_code == 200
    assert result.raw.startswith("User-agent")
    assert result.final_url == site.url + "/real-robots.txt"


def test_fetch_robots_redirect_loop(site, session):
    site.add("/robots.txt", "", status=302, headers={"Location": "/robots.txt?again"})
    site.add("/robots.txt?again", "", status=302, headers={"Location": "/robots.txt"})
    result = fetch_robots(session, site.url)
    assert result.raw is None
    assert result.error


def test_fetch_robots_missing_or_broken(site, session, closed_port):
    missing = fetch_robots(session, site.url)
    assert missing.status_code == 404 and missing.raw is None
    site.add("/robots.txt", "oops", status=503, content_type="text/plain")
    broken = fetch_robots(session, site.url)
    assert broken.status_code == 503 and broken.raw is None
    down = fetch_robots(session, f"http://127.0.0.1:{closed_port}/")
    assert down.status_code is None and down.raw is None and down.error.startswith("connect")


def test_fetch_robots_is_capped(site, session):
    site.add("/robots.txt", "Disallow: /x\n" * 100_000, content_type="text/plain")
    result = fetch_robots(session, site.url)
    assert len(result.raw.encode()) == limits.MAX_ROBOTS_BYTES


def test_sitemap_index_with_gzipped_child(site, session):
    base = site.url
    site.add("/robots.txt", f"Sitemap: {base}/sitemap_index.xml\n", content_type="text/plain")
    site.add("/sitemap_index.xml", index([f"{base}/pages.xml.gz", f"{base}/posts.xml"]), content_type="application/xml")
    site.add(
        "/pages.xml.gz", gzip.compress(urlset([f"{base}/a", f"{base}/b?y=2&amp;x=1"])), content_type="application/gzip"
    )
    site.add("/posts.xml", urlset([f"{base}/p1", f"{base}/a", "ftp://example.com/no"], ns=""), content_type="text/xml")
    robots = Robots(fetch_robots(session, base).raw, UA)
    result = fetch_sitemaps(session, base, robots, max_urls=100)
    assert result.urls == [f"{base}/a", f"{base}/b?x=1&y=2", f"{base}/p1"]  # normalised, deduplicated, http(s)
    assert result.sitemaps_found == [f"{base}/sitemap_index.xml", f"{base}/pages.xml.gz", f"{base}/posts.xml"]
    assert result.documents_fetched == 4  # index, two children, and the implicit /sitemap.xml (404)
    assert result.errors == []
    assert not result.capped


def test_default_sitemap_xml_with_content_encoding(site, session):
    site.add("/sitemap.xml", gzip.compress(urlset([f"{site.url}/x"])), headers={"Content-Encoding": "gzip"})
    result = fetch_sitemaps(session, site.url, Robots(None, UA), max_urls=100)
    assert result.urls == [f"{site.url}/x"]
    assert result.sitemaps_found == [f"{site.url}/sitemap.xml"]


def test_no_sitemap_at_all(site, session):
    result = fetch_sitemaps(session, site.url, Robots(None, UA), max_urls=100)
    assert result.urls == [] and result.sitemaps_found == [] and result.errors == []


def test_plain_text_sitemap(site, session):
    text = f"{site.url}/one\n\n  {site.url}/two  \r\nnot a url\n{site.url}/one\n"
    site.add("/sitemap.txt", text, content_type="text/plain")
    robots = Robots(f"Sitemap: {site.url}/sitemap.txt\n", UA)
    result = fetch_sitemaps(session, site.url, robots, max_urls=100)
    assert result.urls == [f"{site.url}/one", f"{site.url}/two"]


def test_broken_sitemaps_are_listed_not_raised(site, session):
    site.add("/html.xml", "<html><body>Oops</body></html>")
    site.add("/junk.xml.gz", b"\x1f\x8bnot really gzip", content_type="application/gzip")
    site.add("/sitemap.xml", "", status=500)
    robots = Robots(
        f"Sitemap: {site.url}/html.xml\nSitemap: {site.url}/junk.xml.gz\nSitemap: {site.url}/gone.xml\n", UA
    )
    result = fetch_sitemaps(session, site.url, robots, max_urls=100)
    assert result.urls == []
    reasons = dict(e.split(": ", 1) for e in (err.replace(site.url, "") for err in result.errors))
    assert set(reasons) == {"/html.xml", "/junk.xml.gz", "/gone.xml", "/sitemap.xml"}
    assert "html" in reasons["/html.xml"]
    assert reasons["/gone.xml"] == "HTTP 404"
    assert reasons["/sitemap.xml"] == "HTTP 500"


def test_xml_entities_are_not_expanded(site, session):
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://h.test/&x;</loc></url>'
        b"<url><loc>http://h.test/ok</loc></url></urlset>"
    )
    site.add("/sitemap.xml", xxe, content_type="application/xml")
    result = fetch_sitemaps(session, site.url, Robots(None, UA), max_urls=100)
    assert "http://h.test/ok" in result.urls
    assert all("/etc" not in u and len(u) < 40 for u in result.urls)


def test_max_urls_cap(site, session):
    site.add("/sitemap.xml", urlset([f"{site.url}/p{i}" for i in range(5000)]), content_type="application/xml")
    site.add("/second.xml", urlset([f"{site.url}/q{i}" for i in range(10)]), content_type="application/xml")
    robots = Robots(f"Sitemap: {site.url}/second.xml\n", UA)
    result = fetch_sitemaps(session, site.url, robots, max_urls=500)
    assert len(result.urls) == 500 and result.urls_read == 500
    assert result.capped and result.capped_by == SitemapCap.URLS
    assert result.urls[:10] == [f"{site.url}/q{i}" for i in range(10)]  # robots-declared sitemaps come first
    assert result.urls[-1] == f"{site.url}/p489"


def test_gzipped_sitemap_bomb_is_capped(site, session, gzip_bomb):
    # 100 MiB of zeros: not XML, but it must be cut at MAX_SITEMAP_BYTES before anyone tries to parse it.
    site.add("/bomb.xml.gz", gzip_bomb, content_type="application/gzip")
    robots = Robots(f"Sitemap: {site.url}/bomb.xml.gz\n", UA)
    tracemalloc.start()
    try:
        result = fetch_sitemaps(session, site.url, robots, max_urls=100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.urls == []
    assert any("/bomb.xml.gz" in e for e in result.errors)
    assert peak < 4 * limits.MAX_SITEMAP_BYTES  # the inflated 100 MiB never existed


def test_gzipped_sitemap_larger_than_the_cap_is_read_in_part(site, session, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SITEMAP_BYTES", 50_000)
    body = gzip.compress(urlset([f"{site.url}/page-{i:06d}" for i in range(10_000)]))  # ~800 KB of XML
    assert len(body) < 50_000
    site.add("/sitemap.xml.gz", body, content_type="application/gzip")
    robots = Robots(f"Sitemap: {site.url}/sitemap.xml.gz\n", UA)
    result = fetch_sitemaps(session, site.url, robots, max_urls=50_000)
    assert 0 < len(result.urls) < 1000  # what fitted in 50 KB, parsed with recover
    assert any("read in part" in e for e in result.errors)


def test_index_nesting_depth_is_bounded(site, session):
    # /s0 -> /s1 -> /s2 -> /s3 -> /s4 -> /s5: indexes all the way down.
    for i in range(6):
        site.add(f"/s{i}.xml", index([f"{site.url}/s{i + 1}.xml"]), content_type="application/xml")
    robots = Robots(f"Sitemap: {site.url}/s0.xml\n", UA)
    result = fetch_sitemaps(session, site.url, robots, max_urls=100)
    fetched = [p for p, _ in site.requests if p.startswith("/s") and p != "/sitemap.xml"]
    assert fetched == [f"/s{i}.xml" for i in range(limits.MAX_SITEMAP_INDEX_DEPTH + 1)]
    assert any("nested deeper" in e for e in result.errors)


def test_document_cap(site, session, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SITEMAP_DOCUMENTS", 3)
    site.add("/sitemap.xml", index([f"{site.url}/c{i}.xml" for i in range(10)]), content_type="application/xml")
    for i in range(10):
        site.add(f"/c{i}.xml", urlset([f"{site.url}/page{i}"]), content_type="application/xml")
    result = fetch_sitemaps(session, site.url, Robots(None, UA), max_urls=100)
    assert result.documents_fetched == 3
    assert result.urls == [f"{site.url}/page0", f"{site.url}/page1"]
    assert result.capped and result.capped_by == SitemapCap.DOCUMENTS


# --- handing URLs on as they are read (on_urls): a sitemap of millions is never one list -------------------


def _two_urlsets(site, first: list[str], second: list[str]) -> Robots:
    site.add("/sitemap.xml", index([f"{site.url}/a.xml", f"{site.url}/b.xml"]), content_type="application/xml")
    site.add("/a.xml", urlset([f"{site.url}{p}" for p in first]), content_type="application/xml")
    site.add("/b.xml", urlset([f"{site.url}{p}" for p in second]), content_type="application/xml")
    return Robots(None, UA)


def test_urls_are_handed_on_in_bounded_lists_and_not_kept(site, session, monkeypatch):
    monkeypatch.setattr(limits, "SITEMAP_URLS_PER_HANDOFF", 3)
    robots = _two_urlsets(site, ["/1", "/2", "/2", "/3", "/4", "/5", "/6", "/7"], ["/7", "/8"])
    handed: list[list[str]] = []
    result = fetch_sitemaps(session, site.url, robots, max_urls=100, on_urls=handed.append)
    paths = [[u.removeprefix(site.url) for u in urls] for urls in handed]
    # Deduplicated within a document; /7 comes again from the second: the consumer dedupes across documents.
    assert paths == [["/1", "/2", "/3"], ["/4", "/5", "/6"], ["/7"], ["/7", "/8"]]
    assert result.urls == [] and result.urls_read == 9
    assert not result.capped and not result.stopped


def test_a_consumer_that_wants_no_more_stops_the_reading(site, session):
    robots = _two_urlsets(site, ["/1", "/2"], ["/3"])
    handed: list[list[str]] = []

    def enough(urls):
        handed.append(urls)
        return False

    result = fetch_sitemaps(session, site.url, robots, max_urls=100, on_urls=enough)
    assert len(handed) == 1 and result.stopped and not result.capped  # a full budget is not a cap
    assert "/b.xml" not in [path for path, _ in site.requests]


def test_the_url_cap_counts_urls_handed_on(site, session):
    robots = _two_urlsets(site, ["/1", "/2", "/3"], ["/4", "/5"])
    handed: list[str] = []
    result = fetch_sitemaps(session, site.url, robots, max_urls=4, on_urls=handed.extend)
    assert [u.removeprefix(site.url) for u in handed] == ["/1", "/2", "/3", "/4"]
    assert result.capped_by == SitemapCap.URLS and result.urls_read == 4


def test_the_deadline_bounds_the_reading_not_what_the_consumer_does(site, session, monkeypatch):
    robots = _two_urlsets(site, ["/1"], ["/2"])
    monkeypatch.setattr(limits, "SITEMAP_DISCOVERY_DEADLINE_S", 0.5)
    handed: list[str] = []

    def slow(urls):
        time.sleep(0.6)  # seeding a list may take longer than the whole reading may
        handed.extend(urls)

    result = fetch_sitemaps(session, site.url, robots, max_urls=100, on_urls=slow)
    assert [u.removeprefix(site.url) for u in handed] == ["/1", "/2"] and not result.capped

    monkeypatch.setattr(limits, "SITEMAP_DISCOVERY_DEADLINE_S", -1)  # already over when reading starts
    result = fetch_sitemaps(session, site.url, robots, max_urls=100, on_urls=slow)
    assert result.capped_by == SitemapCap.DEADLINE and result.documents_fetched == 0
    assert any("deadline" in error for error in result.errors)
