"""Hostile servers end in recorded, explained results: the audit completes, the worker's memory stays
bounded, and each trap gets the outcome and issue a person would expect."""

import pytest

from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from bench.rss import RssSampler
from crawler.limits import MAX_HTML_BYTES
from scratchpad.models import LinkEdge, Throttle
from tests.factories import ProjectFactory
from tests.support.sites.hostile import serve_hostile
from tests.support.waits import wait_audit_finished
from tests.support.workers import WorkerProcess, flush_test_broker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

WORKER_PEAK_RSS_LIMIT_MB = 900  # 2 prefork children + main; a 50 MB body or a 1 GiB bomb held would blow it
CALENDAR_CAP = 20  # the project's optional per-shape cap, set low: the calendar meets it before its date window
AUDIT_WAIT_S = 240
RSS_SAMPLE_INTERVAL_S = 0.1


def _issues(audit, page_url) -> set[str]:
    return set(Issue.objects.filter(audit=audit, page_url=page_url).values_list("type", flat=True))


def test_hostile_site_is_crawled_to_completion_with_bounded_memory():
    flush_test_broker()
    worker = WorkerProcess().start()
    try:
        with serve_hostile() as (base, _), RssSampler(worker.proc.pid, interval_s=RSS_SAMPLE_INTERVAL_S) as rss:
            project = ProjectFactory(base_url=base + "/", max_urls_per_pattern=CALENDAR_CAP)
            audit = audit_start(project=project, start_url=base + "/", max_pages=500)
            wait_audit_finished(audit, AUDIT_WAIT_S)
    finally:
        worker.stop()
        flush_test_broker()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    assert rss.peak < WORKER_PEAK_RSS_LIMIT_MB * 1024 * 1024, f"worker peak RSS {rss.peak / 2**20:.0f} MiB"
    pages = {p.url.removeprefix(base): p for p in Page.objects.filter(audit=audit)}

    tarpit = pages["/tarpit"]
    assert tarpit.fetch_class == "error"
    assert "timeout" in tarpit.fetch_error.lower() or "deadline" in tarpit.fetch_error.lower()
    assert "fetch-error" in _issues(audit, base + "/tarpit")

    huge = pages["/huge"]
    assert huge.truncated and huge.bytes == MAX_HTML_BYTES and huge.title == "A page of fifty megabytes"
    assert "html-too-large" in _issues(audit, base + "/huge")

    bomb = pages["/bomb"]
    assert bomb.truncated and bomb.bytes == MAX_HTML_BYTES
    assert "html-too-large" in _issues(audit, base + "/bomb")

    assert pages["/loop-a"].status_code == 301 and pages["/loop-b"].redirect_url == base + "/loop-a"
    assert Issue.objects.filter(audit=audit, type="redirect-loop").exists()

    calendar = [u for u in pages if u.startswith("/calendar/")]
    assert 2 <= len(calendar) <= CALENDAR_CAP
    assert Throttle.objects.get(audit=audit).urls_capped >= 1
    # The project's optional per-shape cap stopped it, and the audit says so (rule, shape, setting).
    capped = Issue.objects.get(
        audit=audit, type="crawl-urls-skipped", details__rule="pattern-cap", details__pattern="/calendar/{n}/{n}"
    )
    assert capped.details["urls_skipped"] >= 1
    assert capped.details["setting"] == "max_urls_per_pattern"

    liar = pages["/liar"]
    assert liar.fetch_class == "ok" and liar.title  # decoded somehow, never a crash

    binary = pages["/binary"]
    assert binary.status_code == 200 and binary.fetch_class == "ok"

    assert pages["/malformed"].title.startswith("Malformed but readable")
    assert "/malformed-target" in pages  # its link was found in the broken markup

    flood = pages["/many-links"]
    assert flood.internal_links == 10_000  # every link counted
    assert "too-many-links" in _issues(audit, base + "/many-links")
    assert LinkEdge.objects.filter(source_page=flood).count() == 10_000  # one edge per distinct target

    assert "javascript-rendering-suspected" in _issues(audit, base + "/js-only")


def test_429_storm_stops_the_crawl_with_crawl_rate_limited():
    with serve_hostile(storm=True) as (base, seen):
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=100, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    throttle = Throttle.objects.get(audit=audit)
    assert "rate-limited" in throttle.stopped_reason
    stop = Issue.objects.get(audit=audit, type="crawl-rate-limited")
    assert stop.page_id is None
    limited = Page.objects.filter(audit=audit, fetch_class="rate_limited")
    assert 4 <= limited.count() < len(seen)  # it stopped instead of hammering every URL
    # each rate-limited URL was retried at most 3 times, each after the asked-for second
    for page in limited:
        path = page.url.removeprefix(base)
        times = [t for t, p, _ in seen if p == path]
        assert len(times) <= 4
        assert all(b - a >= 0.95 for a, b in zip(times, times[1:], strict=False))
