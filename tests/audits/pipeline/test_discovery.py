"""audits/pipeline/discovery.py: a base URL typed without a scheme is tried over https, then over http when https
gives no answer, and the audit's events say which scheme it used; a scheme typed is kept as typed."""

import pytest

from audits.models import Audit, AuditEvent, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.projects import project_create
from tests.factories import ProjectFactory, UserFactory, account_of
from tests.support.sites import send_route, serve_routes

pytestmark = pytest.mark.django_db(transaction=True)


def _http_only_site(site) -> None:
    site.add("/", '<html><head><title>Home</title></head><body><a href="/about">About</a></body></html>')
    site.add("/about", "<html><head><title>About</title></head><body><h1>About</h1></body></html>")


def _audit(base_url: str) -> Audit:
    owner = UserFactory()
    project = project_create(account=account_of(owner), owner=owner, name="Site", base_url=base_url)
    audit = audit_start(project=project, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    return audit


def test_a_base_url_typed_without_a_scheme_falls_back_to_http_and_says_so():
    with serve_routes() as site:  # plain http: a TLS handshake with it fails
        _http_only_site(site)
        typed = site.url.removeprefix("http://")  # "127.0.0.1:PORT"
        audit = _audit(typed)
    assert audit.project.base_url == f"https://{typed}/" and audit.project.http_fallback
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    assert audit.start_url == f"http://{typed}/"
    assert set(Page.objects.filter(audit=audit).values_list("url", flat=True)) == {
        f"http://{typed}/",
        f"http://{typed}/about",
    }
    event = AuditEvent.objects.get(audit=audit, kind=AuditEvent.Kind.HTTP_FALLBACK)
    assert event.message.startswith(f"Crawled over http: http://{typed}/ (typed without a scheme; https gave no answer")
    assert event.data["https_url"] == f"https://{typed}/" and event.data["http_url"] == f"http://{typed}/"


def test_a_typed_https_is_kept_and_fails_without_falling_back():
    with serve_routes() as site:
        _http_only_site(site)
        audit = _audit(site.url.replace("http://", "https://") + "/")
    assert not audit.project.http_fallback
    assert audit.status == Audit.Status.FAILED and audit.error_code == "start_url_unreachable"
    assert not AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.HTTP_FALLBACK).exists()
    assert not Page.objects.filter(audit=audit).exists()


def _run(base_url, max_pages=1000):
    project = ProjectFactory(base_url=base_url + "/")
    audit = audit_start(project=project, start_url=base_url + "/", max_pages=max_pages, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    return audit


def test_unreachable_start_url_fails_with_a_reason():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connection refused
    audit = _run(f"http://127.0.0.1:{port}")
    assert audit.status == Audit.Status.FAILED
    assert audit.error_code == "start_url_unreachable"
    assert audit.failed_phase == "discovery"
    assert str(port) in audit.error_detail


# --- a run of the step that comes back late (audits/pipeline/discovery.py's fence) --------------------------


def _discovery_state(audit) -> dict:
    from scratchpad.models import Frontier

    row = Audit.objects.filter(id=audit.id).values(
        "status", "current_phase", "site_url", "robots_txt", "robots_status", "discovery"
    )
    return {
        "audit": row.get(),
        "frontier": sorted(Frontier.objects.filter(audit=audit).values_list("url", "state")),
        "events": list(AuditEvent.objects.filter(audit=audit).order_by("id").values_list("kind", "message")),
    }


def test_a_late_duplicate_of_the_step_changes_nothing():
    from audits.pipeline.discovery import audit_discover

    with serve_routes() as site:
        _http_only_site(site)
        site.add("/robots.txt", "User-agent: *\nDisallow: /private\n", content_type="text/plain")
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        assert audit_discover(audit_id=audit.id)
        before = _discovery_state(audit)
        assert before["audit"]["current_phase"] == Audit.Phase.CRAWLING and before["frontier"]
        site.add("/robots.txt", "User-agent: *\nDisallow: /\n", content_type="text/plain")  # a different answer
        asked = len(site.requests)
        assert not audit_discover(audit_id=audit.id)  # the broker handed the step out twice
        assert len(site.requests) == asked  # it does not even ask
    assert _discovery_state(audit) == before


def test_a_run_cut_off_before_its_start_url_answered_does_not_fail_the_audit_another_run_moved_on():
    """The first run's request for the start URL is held, then dropped unanswered (its host cut off): by then
    another run has discovered the site and the audit is crawling; the first run fails nothing and writes nothing."""
    import threading

    from django.db import connection

    from audits.pipeline.discovery import audit_discover
    from tests.support.waits import wait_until

    held, release, asked = threading.Event(), threading.Event(), []

    def home(handler):
        asked.append(1)
        if len(asked) == 1:
            held.set()
            assert release.wait(60)
            handler.close_connection = True
            handler.connection.shutdown(2)  # no answer at all
            return
        body = b'<html><head><title>Home</title></head><body><a href="/about">About</a></body></html>'
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with serve_routes() as site:
        _http_only_site(site)
        site.handle("/", home)
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        out = {}

        def first_run():
            try:
                out["discovered"] = audit_discover(audit_id=audit.id)
            finally:
                connection.close()

        first = threading.Thread(target=first_run)
        first.start()
        wait_until(held.is_set, 60, "the first run asking for the start URL")
        assert audit_discover(audit_id=audit.id)  # the run the broker handed the step to
        moved_on = _discovery_state(audit)
        release.set()
        first.join(60)
    assert out == {"discovered": False}
    assert _discovery_state(audit) == moved_on
    assert moved_on["audit"]["status"] == Audit.Status.RUNNING
    assert moved_on["audit"]["current_phase"] == Audit.Phase.CRAWLING


# --- seeding as the sitemaps are read (audits/pipeline/discovery.py's _Seeder) ------------------------------

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(base: str, paths: list[str]) -> str:
    locs = "".join(f"<url><loc>{base}{path}</loc></url>" for path in paths)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{locs}</urlset>'


def _sitemap_site(site, first: list[str], second: list[str]) -> None:
    _http_only_site(site)
    site.add(
        "/robots.txt", f"User-agent: *\nDisallow: /private\nSitemap: {site.url}/index.xml\n", content_type="text/plain"
    )
    index = "".join(f"<sitemap><loc>{site.url}/{name}</loc></sitemap>" for name in ("a.xml", "b.xml"))
    site.add(
        "/index.xml", f'<?xml version="1.0"?><sitemapindex {NS}>{index}</sitemapindex>', content_type="application/xml"
    )
    site.add("/a.xml", _urlset(site.url, first), content_type="application/xml")
    site.add("/b.xml", _urlset(site.url, second), content_type="application/xml")


def _frontier(audit) -> dict[str, tuple]:
    from scratchpad.models import Frontier

    rows = Frontier.objects.filter(audit=audit).values_list("url", "depth", "source", "in_sitemap")
    return {url.split("/", 3)[3]: (depth, source, in_sitemap) for url, depth, source, in_sitemap in rows}


def test_sitemap_urls_are_seeded_list_by_list_and_counted_once(monkeypatch):
    from audits.pipeline.discovery import audit_discover
    from crawler import limits as crawl_limits

    monkeypatch.setattr(crawl_limits, "SITEMAP_URLS_PER_HANDOFF", 2)  # every list its own transaction
    with serve_routes() as site:
        _sitemap_site(site, ["/", "/s1", "/s2", "/private/x", "/s3"], ["/s3", "/s4"])
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        assert audit_discover(audit_id=audit.id)
    audit.refresh_from_db()
    assert _frontier(audit) == {
        "": (0, "start", True),  # the start URL keeps its depth and learns it is in the sitemap
        **{f"s{n}": (None, "sitemap", True) for n in range(1, 5)},
    }
    # /s3 is in both documents and counted once; /private/x is read and kept out by robots.txt
    assert audit.discovery["sitemap_urls"] == 6 and audit.discovery["sitemap_urls_out_of_scope"] == 1
    assert audit.discovery["sitemap_capped"] is False and audit.discovery["sitemap_capped_by"] == ""
    assert audit.current_phase == Audit.Phase.CRAWLING
    assert audit.pages_total == 5  # the URLs known when the crawl starts: its seeds, counted once


def test_an_audit_that_leaves_discovery_while_its_sitemaps_are_read_gets_no_more_seeds():
    from audits.pipeline.discovery import audit_discover
    from audits.pipeline.lifecycle import audit_fail

    with serve_routes() as site:
        _sitemap_site(site, ["/s1", "/s2"], ["/s3"])
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)

        answer = site.routes["/b.xml"]

        def failed_meanwhile(handler):
            # The audit is failed (the watchdog, a cancel) while discovery reads its second sitemap.
            audit_fail(audit_id=audit.id, code="stuck", detail="test", phase=Audit.Phase.DISCOVERY,
                       from_phases=(Audit.Phase.DISCOVERY,))  # fmt: skip
            send_route(handler, answer)

        site.handle("/b.xml", failed_meanwhile)
        assert not audit_discover(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    # Failing purged what was seeded before (the start URL, /s1, /s2); the list read after it wrote nothing.
    assert _frontier(audit) == {}


def test_a_capped_sitemap_reading_is_reported_not_silent(monkeypatch):
    from crawler import limits as crawl_limits

    monkeypatch.setattr(crawl_limits, "SITEMAP_URLS_CEILING", 3)
    with serve_routes() as site:
        _sitemap_site(site, ["/", "/about", "/s1"], ["/s2", "/s3"])
        for path in ("/s1", "/s2", "/s3"):
            site.add(path, f"<html><head><title>{path}</title></head><body><p>Page {path}</p></body></html>")
        audit = _run(site.url)
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    (issue,) = audit.issues.filter(type="sitemap-read-in-part")
    assert issue.details == {
        "reason": "The sitemap URLs this audit reads for its page limit were read",
        "sitemap_urls_read": 3,
        "sitemap_documents_fetched": 3,  # /sitemap.xml (none here), the index and the first urlset
        "limit": 3,
    }
    assert not {"s2", "s3"} & {url.rsplit("/", 1)[1] for url in audit.pages.values_list("url", flat=True)}


def test_sitemap_mode_stops_reading_at_its_budget_and_a_second_run_continues_the_count():
    from audits.pipeline.discovery import audit_discover
    from scratchpad.services import NewURL, frontier_seed

    with serve_routes() as site:
        _sitemap_site(site, ["/s1", "/s2", "/private/x", "/s3", "/s4"], ["/s5"])
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, sitemap_url=f"{site.url}/index.xml", max_pages=3, dispatch=False)
        # A run before this one seeded /s1 and died: this run starts its count from what is there.
        frontier_seed(audit_id=audit.id, urls=[NewURL(f"{site.url}/s1", depth=0, source="sitemap", in_sitemap=True)])
        assert audit_discover(audit_id=audit.id)
        assert "/b.xml" not in [path for path, _ in site.requests]  # the budget was full after the first urlset
    audit.refresh_from_db()
    assert set(_frontier(audit)) == {"s1", "s2", "s3"}
    assert audit.discovery["listed_urls_seeded"] == 3 and audit.discovery["listed_urls_disallowed"] == 1
    assert audit.discovery["sitemap_capped"] is False
