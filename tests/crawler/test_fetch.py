import gzip
import socket
import threading
import time
import tracemalloc
import zlib

import pytest
import requests
from urllib3 import Timeout

from crawler import __version__, limits
from crawler.fetch import CrawlSession, build_session, fetch
from tests.support.sites.external import answer, serve_other_site

PAGE = "<html><head><title>Hi</title></head><body><a href='/a'>a</a></body></html>"


def test_build_session():
    s = build_session()
    assert s.headers["User-Agent"] == f"Sitewarden/{__version__} (+https://github.com/sitewarden)"
    assert build_session("Custom/1.0").headers["User-Agent"] == "Custom/1.0"
    assert s._pools.connection_pool_kw["maxsize"] >= 16
    assert s._pools.connection_pool_kw["retries"].total is False  # retries are the crawl's decision


def test_the_crawl_is_stateless_no_cookie_goes_back(site, session):
    def set_cookie(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Set-Cookie", "session=abc; Path=/")
        h.send_header("Content-Length", str(len(PAGE)))
        h.end_headers()
        h.wfile.write(PAGE.encode())

    site.handle("/", set_cookie)
    site.add("/next", PAGE)
    assert fetch(session, site.url + "/").headers["set-cookie"] == "session=abc; Path=/"
    assert fetch(session, site.url + "/next").status_code == 200
    _, headers = site.requests[-1]
    assert "Cookie" not in headers


def test_no_proxy_is_read_from_the_environment(site, session, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9/")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9/")
    site.add("/", PAGE)
    assert fetch(session, site.url + "/").status_code == 200


def test_fetch_html(site, session):
    site.add(
        "/page",
        PAGE,
        content_type="text/html; charset=ISO-8859-1",
        headers={"X-Robots-Tag": "noindex", "Link": '<https://x.test/c>; rel="canonical"'},
    )
    r = fetch(session, site.url + "/page?x=1")
    assert r.error_kind is None and r.error is None
    assert r.status_code == 200
    assert r.url == site.url + "/page?x=1"
    assert r.content_type == "text/html"
    assert r.charset == "iso-8859-1"
    assert r.is_html
    assert r.body == PAGE.encode()
    assert r.bytes_read == len(PAGE)
    assert not r.truncated
    assert r.headers["x-robots-tag"] == "noindex"
    assert all(k == k.lower() for k in r.headers)
    assert r.link_headers == ['<https://x.test/c>; rel="canonical"']
    assert r.redirect_url is None
    assert r.response_time_ms is not None and r.response_time_ms >= 0
    path, headers = site.requests[-1]
    assert path == "/page?x=1"
    assert headers["User-Agent"].startswith("Sitewarden/")


def test_repeated_link_headers_are_kept_apart(site, session):
    def two_links(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Link", "</a>; rel=preload")
        h.send_header("Link", "</b>; rel=canonical")
        h.send_header("Content-Length", "0")
        h.end_headers()

    site.handle("/", two_links)
    r = fetch(session, site.url + "/")
    assert r.link_headers == ["</a>; rel=preload", "</b>; rel=canonical"]
    assert r.headers["link"] == "</a>; rel=preload, </b>; rel=canonical"


def test_non_html_body_is_not_read(site, session):
    site.add("/img.png", b"\x89PNG" + b"\0" * 5000, content_type="image/png")
    r = fetch(session, site.url + "/img.png")
    assert r.status_code == 200
    assert r.content_type == "image/png"
    assert not r.is_html
    assert r.body == b"" and r.bytes_read == 0
    always = fetch(session, site.url + "/img.png", read_body="always")
    assert always.body.startswith(b"\x89PNG") and always.bytes_read == 5004
    never = fetch(session, site.url + "/img.png", read_body="never")
    assert never.body == b""


def test_html_body_not_read_when_never(site, session):
    site.add("/", PAGE)
    r = fetch(session, site.url + "/", read_body="never")
    assert r.status_code == 200 and r.is_html and r.body == b""


def test_redirect_with_relative_location(site, session):
    site.add("/old/page", "", status=301, headers={"Location": "../new?q=1"})
    r = fetch(session, site.url + "/old/page")
    assert r.status_code == 301
    assert r.redirect_url == site.url + "/new?q=1"
    assert r.error_kind is None
    assert len(site.requests) == 1  # not followed


def test_redirect_location_in_utf8(site, session):
    def utf8_location(h):
        h.send_response(302)
        h.send_header("Location", "/caf\u00e9".encode().decode("latin-1"))  # raw UTF-8 bytes on the wire
        h.send_header("Content-Length", "0")
        h.end_headers()

    site.handle("/r", utf8_location)
    r = fetch(session, site.url + "/r")
    assert r.redirect_url == site.url + "/caf\u00e9"


def test_404_is_an_answer_not_an_error(site, session):
    r = fetch(session, site.url + "/missing")
    assert r.status_code == 404
    assert r.error_kind is None
    assert b"not found" in r.body


def test_connection_refused(session, closed_port):
    r = fetch(session, f"http://127.0.0.1:{closed_port}/")
    assert r.status_code is None
    assert r.error_kind == "connect"
    assert "refused" in r.error.lower()
    assert "object at 0x" not in r.error and len(r.error) <= 500


def test_dns_failure(session, monkeypatch):
    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    r = fetch(session, "http://no-such-host.test/")
    assert r.error_kind == "dns"
    assert r.status_code is None


@pytest.mark.parametrize("url", ["http://exa mple.com/", "ftp://example.com/", "http://[::1/", "http://", "nothing"])
def test_invalid_url(session, url):
    r = fetch(session, url)
    assert r.error_kind == "invalid_url", r.error
    assert r.status_code is None


def test_private_address_refused_when_asked(site, session):
    site.add("/", PAGE)
    r = fetch(session, site.url + "/", allow_private=False)
    assert r.error_kind == "private_address" and "ALLOW_PRIVATE_TARGETS=true" in r.error
    assert site.requests == []  # not a byte of the request was sent
    assert fetch(session, site.url + "/").status_code == 200
    # The kept-alive connection from the permitted fetch must not serve a stricter one either.
    assert fetch(session, site.url + "/", allow_private=False).error_kind == "private_address"
    assert len(site.requests) == 1
    plain = requests.Session()
    assert fetch(plain, site.url + "/", allow_private=False).error_kind == "other"
    assert fetch(plain, site.url + "/").error_kind == "other"


def test_keep_alive_connection_is_reused(site, session):
    ports = []

    def record_port(h):
        ports.append(h.client_address[1])
        body = PAGE.encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    site.handle("/", record_port)
    for _ in range(3):
        assert fetch(session, site.url + "/").status_code == 200
    assert len(ports) == 3 and len(set(ports)) == 1


def test_large_body_is_truncated_at_the_cap(site, session):
    big = b"<html><body>" + b"x" * (limits.MAX_HTML_BYTES + 2 * 1024 * 1024) + b"</body></html>"
    site.add("/big", big)
    r = fetch(session, site.url + "/big")
    assert r.status_code == 200
    assert r.truncated
    assert r.bytes_read == limits.MAX_HTML_BYTES == len(r.body)
    assert r.wire_bytes <= limits.MAX_HTML_BYTES + 1  # never read past cap + 1
    small = fetch(session, site.url + "/big", max_bytes=100)
    assert small.truncated and small.body == big[:100]
    exact = fetch(session, site.url + "/big", max_bytes=len(big))
    assert not exact.truncated and exact.body == big


def test_gzip_and_deflate_bodies_are_decoded(site, session):
    site.add("/gz", gzip.compress(PAGE.encode()), headers={"Content-Encoding": "gzip"})
    site.add("/zlib", zlib.compress(PAGE.encode()), headers={"Content-Encoding": "deflate"})
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    site.add("/raw", raw.compress(PAGE.encode()) + raw.flush(), headers={"Content-Encoding": "deflate"})
    for path in ("/gz", "/zlib", "/raw"):
        r = fetch(session, site.url + path)
        assert r.body == PAGE.encode(), path
        assert r.bytes_read == len(PAGE) and not r.truncated


def test_gzip_bomb_stays_capped(site, session, gzip_bomb):
    site.add("/bomb", gzip_bomb, headers={"Content-Encoding": "gzip"})
    tracemalloc.start()
    try:
        r = fetch(session, site.url + "/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.error_kind is None
    assert r.truncated
    assert r.bytes_read == limits.MAX_HTML_BYTES
    assert r.wire_bytes < len(gzip_bomb)  # stopped reading the wire too
    # One buffer of the cap, and the bytes made of it for a moment; 100 MiB inflated would be far above.
    assert peak < 3 * limits.MAX_HTML_BYTES


def test_broken_gzip_is_an_error_not_an_exception(site, session):
    site.add("/bad", b"this is not gzip at all", headers={"Content-Encoding": "gzip"})
    r = fetch(session, site.url + "/bad")
    assert r.status_code == 200
    assert r.error_kind == "other"
    assert r.error


def _drip_body(h):
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "1000")
    h.end_headers()
    for _ in range(100):
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(0.5)


def _drip_headers(h):
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: " + b"y" * 100:
        h.wfile.write(bytes([byte]))
        h.wfile.flush()
        time.sleep(0.1)


@pytest.mark.parametrize("handler", [_drip_body, _drip_headers], ids=["body", "headers"])
def test_tarpit_ends_at_the_total_deadline(site, session, monkeypatch, handler):
    # Every byte arrives well within READ_TIMEOUT_S, so only the total deadline can end this.
    monkeypatch.setattr(limits, "TOTAL_FETCH_DEADLINE_S", 2)
    site.handle("/slow", handler)
    started = time.monotonic()
    r = fetch(session, site.url + "/slow")
    elapsed = time.monotonic() - started
    assert r.error_kind == "timeout"
    assert "deadline" in r.error
    assert 1.9 <= elapsed < 4
    if handler is _drip_body:
        assert r.status_code == 200  # headers came; the body is what is partial
        assert r.bytes_read < 10  # whatever arrived before the cut, if the HTTP library handed it over
    else:
        assert r.status_code is None


def test_silent_server_hits_the_read_timeout(site, session, monkeypatch):
    monkeypatch.setattr(limits, "READ_TIMEOUT_S", 0.5)
    release = threading.Event()

    def silent(h):
        release.wait(5)

    site.handle("/silent", silent)
    r = fetch(session, site.url + "/silent")
    release.set()
    assert r.error_kind == "timeout"
    assert r.status_code is None


def test_connection_closed_mid_body(site, session):
    def short(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b"<html>only this")
        h.wfile.flush()
        h.close_connection = True

    site.handle("/short", short)
    r = fetch(session, site.url + "/short")
    assert r.status_code == 200
    assert r.error_kind == "connect"
    assert r.body == b"<html>only this"  # what did arrive is kept


def test_fetches_from_many_threads_share_one_session(site, session):
    site.add("/", PAGE)
    results = []

    def worker():
        for _ in range(5):
            results.append(fetch(session, site.url + "/"))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80
    assert all(r.status_code == 200 and r.body == PAGE.encode() for r in results)


def test_tls_failure(site, session):
    # An https request to a plain-HTTP port fails in the TLS handshake.
    site.add("/", PAGE)
    r = fetch(session, f"https://127.0.0.1:{site.port}/")
    assert r.error_kind == "tls", r.error
    assert r.status_code is None


# --- issue 27: the response time is the server's, not the crawler's own waiting ----------------------------

CRAWLER_STALL_S = 3  # how long the crawler keeps its only connection from the measured fetch
SLOW_SERVER_S = 2


def _tiny_pool_session():
    """A crawl session with one connection per host that a fetch waits for (pool_block): the crawler's own queue."""
    return CrawlSession(pool_hosts=1, pool_maxsize=1, pool_block=True)


def test_waiting_inside_the_crawler_is_not_counted_as_the_servers_time(site):
    site.add("/fast", PAGE)
    site.add("/other", PAGE)
    session = _tiny_pool_session()
    holding = session.open("GET", site.url + "/other", timeout=Timeout(5))  # the pool's one connection, kept busy

    def release():
        holding.drain_conn()
        holding.release_conn()

    released = threading.Timer(CRAWLER_STALL_S, release)
    released.start()
    started = time.monotonic()
    try:
        r = fetch(session, site.url + "/fast")
    finally:
        released.join()
        session.close()
    waited_s = time.monotonic() - started
    assert r.status_code == 200 and r.body == PAGE.encode()
    assert waited_s >= CRAWLER_STALL_S  # the fetch did wait for the crawler's connection…
    # …and its response time is the fast server's, far under the stall and under slow-response's 1,500 ms.
    assert r.response_time_ms is not None and r.response_time_ms < 1000 * CRAWLER_STALL_S / 2


def test_a_slow_server_is_still_timed_to_its_last_byte(site, session):
    def slow_headers(handler):
        time.sleep(SLOW_SERVER_S)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(PAGE)))
        handler.end_headers()
        handler.wfile.write(PAGE.encode())

    def slow_body(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(PAGE)))
        handler.end_headers()
        handler.wfile.flush()
        time.sleep(SLOW_SERVER_S)  # headers at once, the body late: the page is not read before it comes
        handler.wfile.write(PAGE.encode())

    site.handle("/slow-headers", slow_headers)
    site.handle("/slow-body", slow_body)
    for path in ("/slow-headers", "/slow-body"):
        r = fetch(session, site.url + path)
        assert r.body == PAGE.encode() and r.response_time_ms >= 1000 * SLOW_SERVER_S, path


def test_head_asks_for_the_headers_only_and_keeps_the_connection():
    """The external link pass's HEAD (audits/pipeline/external.py): no body is read, whatever read_body says."""
    with serve_other_site({"/x": answer(200)}) as other:
        session = build_session()
        first = fetch(session, other.url + "/x", method="HEAD", read_body="always")
        second = fetch(session, other.url + "/x", method="HEAD")
        session.close()
    assert (first.status_code, first.body, first.error_kind) == (200, b"", None)
    assert (second.status_code, second.error_kind) == (200, None)
    assert other.asked() == [("HEAD", "/x"), ("HEAD", "/x")]


def test_a_shorter_deadline_ends_the_fetch(site, session):
    site.handle("/slow", _drip_body)
    r = fetch(session, site.url + "/slow", deadline_s=0.5)
    assert r.error_kind == "timeout" and "within 0.5 s" in r.error
