"""Politeness seen from the server, the SSRF guard, and the per-project crawl options."""

import contextlib
import socket
from http.server import BaseHTTPRequestHandler

import pytest

from audits.errors import AuditRefused
from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from crawler.fetch import build_session, fetch
from crawler.urls import set_allowed_networks
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler

pytestmark = pytest.mark.django_db(transaction=True)


class SmallSite(BaseHTTPRequestHandler):
    """/ links to /p0../p9; /robots.txt per class attribute; records (time, path, headers) of requests."""

    protocol_version = "HTTP/1.1"
    robots = ""
    seen: list = []
    needs_auth: tuple | None = None
    redirects: dict = {}
    extra_home = ""  # more markup for the home page

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", ctype="text/html; charset=utf-8", **headers):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        import time

        self.seen.append((time.monotonic(), self.path, dict(self.headers)))
        if self.path == "/robots.txt":
            return self._send(200 if self.robots else 404, self.robots.encode(), "text/plain")
        if self.needs_auth:
            import base64

            expected = "Basic " + base64.b64encode(":".join(self.needs_auth).encode()).decode()
            if self.headers.get("Authorization") != expected:
                return self._send(401, b"<title>Sign in</title>", WWW_Authenticate='Basic realm="x"')
        if self.path.split("?")[0] in self.redirects:
            return self._send(301, Location=self.redirects[self.path.split("?")[0]])
        links = "".join(f'<a href="/p{i}?utm_source=x&id={i}">p{i}</a>' for i in range(10)) if self.path == "/" else ""
        links += self.extra_home if self.path == "/" else ""
        deep = '<a href="/deep/1">deeper</a>' if self.path.startswith("/p") else ""
        body = f"<!DOCTYPE html><html><head><title>Page {self.path}</title></head><body>{links}{deep}</body></html>"
        return self._send(200, body.encode())


@contextlib.contextmanager
def serve(host="127.0.0.1", **attrs):
    """Yields (server, base_url, requests seen)."""
    handler = type("Site", (SmallSite,), {"seen": [], **attrs})
    with serve_handler(handler, host=host) as (server, base):
        yield server, base, handler.seen


def _audit(base, **project_options):
    project = ProjectFactory(base_url=base + "/", **project_options)
    audit = audit_start(project=project, start_url=base + "/", max_pages=100, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit


def _gaps(seen):
    times = sorted(t for t, path, _ in seen if path != "/robots.txt")
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def test_minimum_interval_holds_between_every_two_requests(settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 4  # several chunks at once must still share one spacing
    with serve() as (_, base, seen):
        _audit(base, min_request_interval_ms=300, max_concurrency=8)
    gaps = _gaps(seen)
    assert len(gaps) >= 10
    assert min(gaps) >= 0.300, gaps


def test_robots_crawl_delay_is_honoured():
    with serve(robots="User-agent: *\nCrawl-delay: 0.4\n") as (_, base, seen):
        _audit(base)
    assert min(_gaps(seen)) >= 0.4


def test_user_agent_basic_auth_query_policy_and_max_depth():
    with serve(needs_auth=("crawler", "s3cret")) as (_, base, seen):
        audit = _audit(
            base,
            user_agent="AgencyBot/2.0",
            auth_username="crawler",
            auth_password="s3cret",
            query_policy="keep_listed",
            query_keep_keys=["id"],
            max_depth=1,
        )
    urls = set(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert base + "/p3?id=3" in urls  # utm_source dropped, id kept
    assert not any("utm_source" in u for u in urls)
    assert base + "/deep/1" not in urls  # depth 2 > max depth 1
    assert Page.objects.filter(audit=audit, status_code=200).count() == len(urls)  # auth accepted everywhere
    assert all(h.get("User-Agent") == "AgencyBot/2.0" for _, p, h in seen if p != "/robots.txt")
    assert "password" not in str(audit.config).lower() and "s3cret" not in str(audit.config)


def test_wrong_credentials_are_reported_as_the_crawler_being_blocked():
    with serve(needs_auth=("crawler", "s3cret")) as (_, base, _seen):
        audit = _audit(base, auth_username="crawler", auth_password="wrong")
    home = Page.objects.get(audit=audit, url=base + "/")
    assert (home.status_code, home.fetch_class) == (401, "blocked")
    assert set(Issue.objects.filter(audit=audit, page=home).values_list("type", flat=True)) == {"blocked-page"}


# --- SSRF ---------------------------------------------------------------------------------------

FAKE_DNS = {"metadata.test": "169.254.169.254", "intranet.test": "10.0.0.1", "www.site.test": "10.0.0.1"}


@pytest.fixture
def fake_dns(monkeypatch):
    """Stand-in DNS for names that must resolve to private addresses (nothing is ever sent to them: the
    guard refuses before connecting). site.test resolves to 127.0.0.2, which the test allows."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in ("site.test", "blog.site.test"):
            return real("127.0.0.2", port, *args, **kwargs)
        if host in FAKE_DNS:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (FAKE_DNS[host], port or 80))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    set_allowed_networks(["127.0.0.2/32"])
    yield
    set_allowed_networks([])


@pytest.mark.parametrize("host", ["localhost", "metadata.test", "intranet.test", "127.0.0.1", "169.254.169.254"])
def test_start_urls_resolving_to_private_addresses_are_refused(settings, fake_dns, host):
    settings.ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(AuditRefused) as exc:
        audit_start(project=ProjectFactory(base_url=f"http://{host}/"), start_url=f"http://{host}/", dispatch=False)
    assert exc.value.code == "private_address"
    assert "private" in exc.value.message


def test_fetch_refuses_private_targets_before_connecting(fake_dns):
    for url in ("http://metadata.test/latest/meta-data/", "http://intranet.test/", "http://localhost:9/"):
        result = fetch(build_session(), url, allow_private=False)
        assert result.status_code is None and result.error_kind == "private_address", url


def test_redirect_from_an_allowed_site_into_private_addresses_is_refused(settings, fake_dns):
    settings.ALLOW_PRIVATE_TARGETS = False
    with serve(host="127.0.0.2") as (server, _, seen):
        port = server.server_address[1]
        base = f"http://site.test:{port}"
        server.RequestHandlerClass.redirects = {
            "/p1": f"http://www.site.test:{port}/admin",
            "/p2": "http://metadata.test/latest/meta-data/",
        }
        audit = _audit(base)
    # www.site.test is the same site (www rule) and was queued, then refused at fetch time
    refused = Page.objects.get(audit=audit, url=f"http://www.site.test:{port}/admin")
    assert refused.fetch_class == "error" and "not a public address" in refused.fetch_error
    assert "10.0.0.1" not in refused.fetch_error  # what an internal name resolves to is never shown
    assert "fetch-error" in set(Issue.objects.filter(audit=audit, page=refused).values_list("type", flat=True))
    # metadata.test is another site: recorded as the redirect's target, never fetched
    p2 = Page.objects.get(audit=audit, url=f"{base}/p2?id=2&utm_source=x")
    assert (p2.status_code, p2.redirect_url) == (301, "http://metadata.test/latest/meta-data/")
    assert not Page.objects.filter(audit=audit, url__startswith="http://metadata.test").exists()
    assert all(path != "/admin" for _, path, _ in seen)  # nothing reached the site's private twin


def test_nofollow_and_subdomains_follow_the_project_options(fake_dns):
    extra = '<a rel="nofollow" href="/private-ish">nofollow</a> <a href="http://blog.site.test:{port}/post">blog</a>'
    with serve(host="127.0.0.2") as (server, _, _seen):
        port = server.server_address[1]
        server.RequestHandlerClass.extra_home = extra.format(port=port)
        base = f"http://site.test:{port}"
        default = set(Page.objects.filter(audit=_audit(base)).values_list("url", flat=True))
        opened = set(
            Page.objects.filter(audit=_audit(base, follow_nofollow=True, crawl_subdomains=True)).values_list(
                "url", flat=True
            )
        )
    assert base + "/private-ish" not in default and f"http://blog.site.test:{port}/post" not in default
    assert base + "/private-ish" in opened and f"http://blog.site.test:{port}/post" in opened
