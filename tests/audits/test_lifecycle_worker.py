"""An audit that cannot get stuck, with real Celery worker processes, celery beat, Redis and PostgreSQL:
SIGKILLed workers healed from their leases, a worker paused past its lease that writes nothing when it
resumes, a flushed broker, a URL that kills its worker, cancel mid-crawl."""

import os
import re
import signal
import subprocess
import time

import pytest
import redis
from django.conf import settings

from accounts.selectors import credits_used_this_month
from audits.events import event_sentence
from audits.models import Audit, AuditEvent, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.lifecycle import audit_cancel
from audits.pipeline.reconcile import audit_status_refresh, reconcile_sweep
from audits.pipeline.start import audit_start
from audits.schedules import heal_install
from bench.sitegen import generate_site
from scratchpad.models import CrawlChunk, Frontier, LinkEdge
from tests.factories import ProjectFactory
from tests.support.sites import serve_generated
from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT, WorkerProcess, flush_test_broker, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

# Small windows and short leases so the crawl is slow enough to interrupt and a dead chunk's URLs
# come back within seconds (the defaults, 60 s renewed every 15 s, scale the same way).
WORKER_ENV = {
    "CRAWL_FETCH_WINDOW": "2",
    "CRAWL_CHUNKS_PER_ROUND": "2",
    "CRAWL_LEASE_DURATION_S": "6",
    "CRAWL_LEASE_RENEW_EVERY_S": "2",
}
HEAL_EVERY_S = 3  # beat's heal sweep in these tests
STALE_AFTER_S = 20  # the backstop's threshold in these tests: above a lease, as it must be
WAIT_S = 240
RESTART_AFTER_S = 10
SETTLE_S = 3  # a resumed worker is idle once the site has seen no request for this long
ZOMBIE_GRACE_S = 10  # and once it has had this long after SIGCONT to write what it held


@pytest.fixture(scope="module")
def site_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lifecycle-site")
    manifest = generate_site(root, pages=160, seed=11, page_kb=4)
    return root, manifest


@pytest.fixture
def workers():
    flush_test_broker()
    started: list[WorkerProcess] = []

    def start():
        worker = WorkerProcess(extra_env=WORKER_ENV).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    flush_test_broker()


@pytest.fixture
def beat(settings, tmp_path):
    """celery beat with the heal sweep installed, as `make run` and the Procfile run it."""
    settings.CRAWL_HEAL_EVERY_S = HEAL_EVERY_S
    heal_install()
    cmd = [
        str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "beat", "--loglevel", "WARNING",
        "--pidfile", str(tmp_path / "beat.pid"), "--schedule", str(tmp_path / "beat-schedule"),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=subprocess_env(), start_new_session=True)
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)


def _start(base):
    return audit_start(project=ProjectFactory(base_url=base + "/"), start_url=base + "/", max_pages=1000)


def _wait(predicate, timeout_s=WAIT_S, sweep=False):
    """Wait for `predicate`; with `sweep`, run the watchdog's sweep before each look (a stuck audit ends)."""

    def check():
        if sweep:
            reconcile_sweep(stale_after_s=STALE_AFTER_S, grace_s=0)
        return predicate()

    return wait_until(check, timeout_s)


def _crawled(audit) -> int:
    return Audit.objects.get(id=audit.id).pages_crawled


def _finished(audit):
    audit.refresh_from_db()
    return audit if audit.is_finished else None


def _undisturbed(base) -> tuple[set, int]:
    audit = audit_start(project=ProjectFactory(base_url=base + "/"), start_url=base + "/", dispatch=False)
    pipeline_run_inline(audit.id)
    return set(Page.objects.filter(audit=audit).values_list("url", flat=True)), LinkEdge.objects.filter(
        audit=audit
    ).count()


def _assert_same_as_undisturbed(audit, base):
    urls = list(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert len(urls) == len(set(urls))
    expected_urls, expected_edges = _undisturbed(base)
    assert set(urls) == expected_urls
    assert LinkEdge.objects.filter(audit=audit).count() == expected_edges


def test_sigkill_worker_restarted_10s_later_heals_from_its_leases(site_root, workers, beat):
    root, manifest = site_root
    with serve_generated(root, delay_s=0.05) as (base, _):
        first = workers()
        audit = _start(base)
        _wait(lambda: _crawled(audit) >= 30)
        first.kill()
        killed_at = time.monotonic()
        assert _crawled(audit) < len(manifest.expected_urls(base)), "killed mid-crawl"
        time.sleep(RESTART_AFTER_S)
        workers()
        audit = _wait(lambda: _finished(audit))  # nobody sweeps here: beat and the worker's start do
        print(
            f"\nSIGKILL, restart {RESTART_AFTER_S} s later: "
            f"completed {time.monotonic() - killed_at:.1f} s after the kill"
        )
        assert audit.status == "completed", (audit.error_code, audit.error_detail)
        assert audit.revivals == 0, "healed from its leases, not revived after silence"
        lost = AuditEvent.objects.filter(audit=audit, kind="lease_expired", message__contains="re-sent").first()
        assert lost is not None
        # the events page and the CLI say it in words (audits.events)
        assert re.fullmatch(
            r"Worker lost: \d+ crawl chunks? of round \d+ stopped reporting for over \d+ s and (was|were) handed "
            r"to another worker\.",
            event_sentence(lost),
        ), event_sentence(lost)
        _assert_same_as_undisturbed(audit, base)


def _crawl_rows(audit):
    return (
        set(Page.objects.filter(audit=audit).values_list("id", "fetched_at", "response_time_ms", "status_code")),
        set(audit.issues.values_list("id", "type", "page_id")),
        LinkEdge.objects.filter(audit=audit).count(),
        Frontier.objects.filter(audit=audit).count(),
        CrawlChunk.objects.filter(audit=audit).count(),
        Audit.objects.values_list("pages_crawled", "status", "health_score").get(id=audit.id),
    )


def test_worker_paused_past_its_lease_writes_nothing_when_it_resumes(site_root, workers, beat):
    root, _ = site_root
    with serve_generated(root, delay_s=0.05) as (base, hits):
        paused = workers()
        audit = _start(base)
        _wait(lambda: _crawled(audit) >= 30)
        os.killpg(paused.proc.pid, signal.SIGSTOP)  # mid-chunk: its fetches and its lease renewals stop
        try:
            workers()
            audit = _wait(lambda: _finished(audit))
            assert audit.status == "completed", (audit.error_code, audit.error_detail)
            after_completion = _crawl_rows(audit)
            requests_before = sum(hits.values())
        finally:
            os.killpg(paused.proc.pid, signal.SIGCONT)
        # The resumed chunk may finish its fetches and try to persist them, or find its database session
        # already ended (idle-in-transaction timeout) and stop without another request: either way it is
        # given ZOMBIE_GRACE_S, and the site SETTLE_S of quiet, before the rows are compared.
        resumed = time.monotonic()
        last = [requests_before, resumed]

        def settled():
            total = sum(hits.values())
            if total != last[0]:
                last[:] = [total, time.monotonic()]
            now = time.monotonic()
            return now - last[1] >= SETTLE_S and now - resumed >= ZOMBIE_GRACE_S

        _wait(settled, timeout_s=120)
        assert _crawl_rows(audit) == after_completion
        assert after_completion[0] and after_completion[3] == 0  # pages kept, the frontier purged
        assert audit.pages_crawled == Page.objects.filter(audit=audit).count()
        _assert_same_as_undisturbed(audit, base)


def test_every_worker_killed_and_none_started_fails_classified(site_root, workers):
    root, _ = site_root
    with serve_generated(root, delay_s=0.05) as (base, _):
        worker = workers()
        audit = _start(base)
        _wait(lambda: _crawled(audit) >= 20)
        worker.kill()
        audit = _wait(lambda: _finished(audit), timeout_s=180, sweep=True)
    assert audit.status == "failed"
    assert audit.error_code == "instance_lost"
    assert audit.failed_phase == "crawling"
    assert audit.revivals == settings.RECONCILE_MAX_REVIVALS
    assert audit.reconciled_by == "watchdog"
    assert credits_used_this_month(audit.project.account) == 0
    read = audit_status_refresh(audit_id=audit.id)  # the lazy read tells the same story
    assert (read.status, read.error_code, read.failed_phase) == ("failed", "instance_lost", "crawling")
    assert Page.objects.filter(audit=audit).count() >= 20  # partial results kept


def test_broker_flushed_mid_crawl_is_revived_and_completes(site_root, workers):
    root, _ = site_root
    with serve_generated(root, delay_s=0.05) as (base, _):
        workers()
        audit = _start(base)
        _wait(lambda: _crawled(audit) >= 30)
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()  # every queued message is gone
        audit = _wait(lambda: _finished(audit), sweep=True)
        assert audit.status == "completed", (audit.error_code, audit.error_detail)
        _assert_same_as_undisturbed(audit, base)


def test_url_that_kills_its_worker_every_time_ends_as_an_error_page(site_root, workers):
    root, manifest = site_root
    last = max(manifest.pages, key=lambda p: int(m.group(1)) if (m := re.search(r"page-(\d+)", p)) else -1)
    with serve_generated(root, killer_paths=frozenset({last})) as (base, hits):
        workers()
        audit = _start(base)
        audit = _wait(lambda: _finished(audit), sweep=True)
    assert audit.status == "completed", (audit.error_code, audit.error_detail)
    killer = Page.objects.get(audit=audit, url=base + last)
    assert killer.fetch_class == "error"
    assert "died" in killer.fetch_error or "exhausted" in killer.fetch_error
    assert 2 <= hits[last] <= 4, "bounded attempts"
    urls = list(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert len(urls) == len(set(urls))
    assert set(urls) == manifest.expected_urls(base)
    others = Page.objects.filter(audit=audit, fetch_class="error").exclude(url=base + last)
    assert not others.exists(), "only the killer URL is blamed"


def test_cancel_mid_crawl_stops_the_work_and_keeps_partial_results(site_root, workers):
    root, manifest = site_root
    with serve_generated(root, delay_s=0.05) as (base, _):
        workers()
        audit = _start(base)
        _wait(lambda: _crawled(audit) >= 10)
        assert audit_cancel(audit=Audit.objects.get(id=audit.id))
        settled = Page.objects.filter(audit=audit).count()  # a batch in flight commits before or writes nothing
        time.sleep(3)
        assert Page.objects.filter(audit=audit).count() == settled
    audit.refresh_from_db()
    assert (audit.status, audit.current_phase) == ("cancelled", "cancelled")
    assert 10 <= settled < len(manifest.expected_urls(base))
    assert audit.pages_crawled == settled, "counters equal rows"
    assert not Frontier.objects.filter(audit=audit).exists()
    assert not CrawlChunk.objects.filter(audit=audit).exists()
    assert credits_used_this_month(audit.project.account) == 0
