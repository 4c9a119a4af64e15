"""audits/events.py and the events page: every kind of event is told in a sentence of its own, an unknown kind
lists its payload as labelled rows, and the events of a real crawl read as sentences (never a JSON blob)."""

import os
import re
from pathlib import Path

import pytest
from django.urls import reverse

from audits.events import LABELS, SENTENCES, event_label, event_rows, event_sentence
from audits.models import Audit, AuditEvent
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.projects import project_create
from tests.dashboard.test_browser import sign_in
from tests.factories import AuditEventFactory, AuditFactory, UserFactory, account_of
from tests.support.browser import chromium_browser, serious_axe_violations
from tests.support.sites import serve_routes

SHOTS = os.environ.get("SHOTS_DIR")

# A payload for each kind, as the code that writes it stores it today.
PAYLOADS = {
    AuditEvent.Kind.STARTED: ("Audit of https://example.com/ started", {"max_pages": 500}),
    AuditEvent.Kind.PHASE: ("Phase crawling", {"phase": "crawling", "sitemaps": 3, "sitemap_urls": 1240}),
    AuditEvent.Kind.RETRY: (
        "crawler.crawl_chunk retried: connection reset",
        {"task": "crawler.crawl_chunk", "reason": "connection reset"},
    ),
    AuditEvent.Kind.LEASE_EXPIRED: (
        "round 12: re-sent 1 chunk(s) whose run stopped renewing",
        {"round": 12, "chunks": 1, "lease_s": 60, "reconciled_by": "heal"},
    ),
    AuditEvent.Kind.REVIVED: (
        "No progress for 400 s …",
        {"phase": "crawling", "silent_s": 400, "revival": 1, "reconciled_by": "watchdog"},
    ),
    AuditEvent.Kind.RECONCILED: (
        "round 3: every chunk done, its callback never ran",
        {"round": 3, "reason": "callback_lost", "reconciled_by": "heal"},
    ),
    AuditEvent.Kind.TASK_FAILED: (
        "audits.finalize: MemoryError: out of memory",
        {"task": "audits.finalize", "code": "out_of_memory"},
    ),
    AuditEvent.Kind.FAILED: ("Failed (worker_lost): killed", {"reconciled_by": None}),
    AuditEvent.Kind.CANCELLED: ("Cancelled", {"reconciled_by": None}),
    AuditEvent.Kind.COMPLETED: ("Completed", {"reconciled_by": None}),
    AuditEvent.Kind.SCHEDULE_SKIPPED: ("A scheduled audit was skipped: this one was still running", {}),
    AuditEvent.Kind.URLS_SKIPPED: (
        "URLs skipped …",
        {"rule": "calendar", "pattern": "/events/{date}", "example": "https://example.com/events/2031-01"},
    ),
    AuditEvent.Kind.EXTRACTION_STOPPED: ("Warning: …", {"extractor": "price", "page_url": "https://example.com/p"}),
    AuditEvent.Kind.HTTP_FALLBACK: (
        "Crawled over http: …",
        {"https_url": "https://example.com/", "http_url": "http://example.com/", "https_error": "SSL error"},
    ),
}


def _event(kind, message="", data=None, audit=None) -> AuditEvent:
    event = AuditEvent(kind=kind, message=message, data=data or {})
    if audit is not None:
        event.audit = audit
    return event


@pytest.mark.parametrize("kind", AuditEvent.Kind.values)
def test_every_kind_has_a_sentence_of_its_own(kind):
    """A new kind without a sentence (or without a payload example here) fails this test."""
    assert kind in SENTENCES, f"audits.events has no sentence for the event kind {kind!r}"
    message, data = PAYLOADS[kind]
    sentence = event_sentence(_event(kind, message, data))
    assert sentence != message and sentence.endswith(".")
    assert '{"' not in sentence and "{'" not in sentence  # no JSON or dict shown (a path shape's {date} is words)
    assert kind in LABELS, f"audits.events has no label for the event kind {kind!r}"
    for _label, value in event_rows(_event(kind, message, data)):
        assert '{"' not in value and "{'" not in value and "['" not in value


def test_the_sentences_say_what_happened():
    said = {kind: event_sentence(_event(kind, *PAYLOADS[kind])) for kind in PAYLOADS}
    assert said["phase"] == "Discovery found 3 sitemaps with 1,240 URLs; crawling started."
    assert said["lease_expired"] == (
        "Worker lost: 1 crawl chunk of round 12 stopped reporting for over 60 s and was handed to another worker."
    )
    assert said["http_fallback"] == (
        "Fell back to http:// because https:// failed: SSL error. Crawled http://example.com/."
    )
    assert said["extraction_stopped"].startswith("Custom extraction “price” stopped on https://example.com/p: over")
    assert said["retry"] == "The crawl step hit a passing error and is tried again: connection reset."
    assert said["urls_skipped"].endswith("for example https://example.com/events/2031-01.")


@pytest.mark.django_db
def test_the_end_of_an_audit_is_told_from_the_audit():
    audit = AuditFactory(config={"max_pages": 500}, pages_crawled=500, status=Audit.Status.COMPLETED)
    assert event_sentence(_event("completed", "Completed", audit=audit)) == (
        "The audit completed: 500 pages crawled; the crawl stopped at the page budget of 500."
    )
    failed = AuditFactory(status=Audit.Status.FAILED, failed_phase="crawling", error_detail="The worker died.")
    assert event_sentence(_event("failed", "Failed (worker_lost): x", audit=failed)) == (
        "The audit failed during crawling: The worker died."
    )


@pytest.mark.django_db
def test_a_cancel_and_an_expired_lease_are_told_in_words():
    audit = AuditFactory(status=Audit.Status.CANCELLED, pages_crawled=1)
    assert event_sentence(_event("cancelled", "Cancelled", audit=audit)) == (
        "The audit was cancelled; the 1 page crawled until then is kept."
    )
    expired = _event("lease_expired", "3 leases expired with no progress for 400 s", {"expired": 3, "silent_s": 400})
    assert (
        event_sentence(expired)
        == "Worker lost: the leases of 3 URLs being crawled expired after 400 s without progress."
    )


def test_finalize_s_stages_read_as_one_row_the_slowest_first():
    timed = {"statistics": 0.04, "depths": 3.1, "site_checks": 20.4, "images": 0.0, "page_counts": 9.9}
    event = _event("completed", "Completed", {"reconciled_by": None, "finalize_stages_s": timed})
    said = "33.4 s: site checks 20.4 s, page counts 9.9 s, click depths 3.1 s"
    assert event_rows(event) == [("Final analysis", said)]
    quick = _event("completed", "Completed", {"finalize_stages_s": {"depths": 0.0}, "finalize_time_limit_s": 2200})
    assert event_rows(quick) == [("Final analysis", "0.0 s"), ("Final analysis time limit", "2,200 s")]


def test_events_written_before_their_payload_grew_read_from_their_message():
    old = _event("lease_expired", "round 2: re-sent 1 chunk(s) whose run stopped renewing", {"reconciled_by": "heal"})
    assert event_sentence(old) == "Worker lost: round 2: re-sent 1 chunk(s) whose run stopped renewing."
    assert event_sentence(_event("phase", "Phase crawling", {"phase": "crawling"})) == "Crawling started."


def test_an_unknown_kind_says_its_message_and_lists_its_payload_as_labelled_rows():
    event = _event("quota_checked", "Quota checked", {"units_left": 1200, "plans": ["pro", "team"], "ok": True})
    assert event_sentence(event) == "Quota checked."
    assert event_label("quota_checked") == "Quota checked"
    assert event_rows(event) == [("Units left", "1,200"), ("Plans", "pro, team"), ("Ok", "yes")]


@pytest.mark.django_db(transaction=True)
def test_a_real_crawl_s_events_read_as_sentences_on_the_events_page(owner, owner_client):
    with serve_routes() as site:  # plain http: typed without a scheme, https fails and http is used
        site.add("/", '<html><head><title>Home</title></head><body><a href="/about">About</a></body></html>')
        site.add("/about", "<html><head><title>About</title></head><body><h1>About</h1></body></html>")
        typed = site.url.removeprefix("http://")
        project = project_create(account=account_of(owner), owner=owner, name="Site", base_url=typed)
        audit = audit_start(project=project, max_pages=1, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    AuditEventFactory(audit=audit, kind="from_a_newer_version", message="Something new", data={"pages_seen": 2})

    html = owner_client.get(reverse("audits:audit-events", args=[audit.id])).content.decode()

    assert f"Audit of https://{typed}/ started, with a page budget of 1 page." in html
    assert "Fell back to http:// because https:// failed:" in html and f"Crawled http://{typed}/." in html
    assert "Discovery found no sitemap; crawling started from the start URL." in html
    assert "The audit completed: 1 page crawled; the crawl stopped at the page budget of 1." in html
    assert "<dt>Pages seen</dt><dd>2</dd>" in html  # the unknown kind: its payload in words
    assert re.search(r"<dt>Final analysis</dt><dd>\d+\.\d s", html)  # finalize's seconds
    assert "<pre" not in html and "&quot;phase&quot;" not in html and '"phase"' not in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_events_page_fits_a_phone_and_passes_axe(live_server):
    owner = UserFactory(username="eve")
    with serve_routes() as site:
        site.add("/", '<html><head><title>Home</title></head><body><a href="/about">About</a></body></html>')
        site.add("/about", "<html><head><title>About</title></head><body><h1>About</h1></body></html>")
        project = project_create(
            account=account_of(owner), owner=owner, name="Site", base_url=site.url.removeprefix("http://")
        )
        audit = audit_start(project=project, max_pages=1, dispatch=False)
        pipeline_run_inline(audit.id)
    for kind in ("lease_expired", "retry", "urls_skipped", "extraction_stopped"):
        message, data = PAYLOADS[kind]
        AuditEventFactory(audit=audit, kind=kind, message=message, data=data)
    AuditEventFactory(audit=audit, kind="from_a_newer_version", message="Something new", data={"pages_seen": 2})
    with chromium_browser() as browser:
        for width in (1440, 390):
            context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
            tab = context.new_page()
            sign_in(tab, live_server, "eve")
            tab.goto(f"{live_server.url}{reverse('audits:audit-events', args=[audit.id])}")
            assert tab.get_by_text("Fell back to http:// because https:// failed").is_visible()
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"the events page at {width} px overflows by {overflow} px"
            assert not serious_axe_violations(tab)
            if SHOTS:
                Path(SHOTS).mkdir(parents=True, exist_ok=True)
                tab.screenshot(path=f"{SHOTS}/events-{width}.png", full_page=True)
            context.close()


def test_what_discovery_could_not_read_is_listed_under_its_sentence():
    data = {"phase": "crawling", "sitemaps": 1, "sitemap_urls": 0, "sitemap_errors": ["https://a.test/s.xml: HTTP 500"]}
    event = _event("phase", "Phase crawling", data)
    assert event_sentence(event) == "Discovery found 1 sitemap with 0 URLs; crawling started."
    assert event_rows(event) == [("Sitemap problems", "https://a.test/s.xml: HTTP 500")]
