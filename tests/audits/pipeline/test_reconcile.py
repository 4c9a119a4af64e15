"""The reconciler's judgement on PostgreSQL: heartbeat, leases, grace, recorded failures, revivals,
the conditional finish that lets a completion win a race with the watchdog, and the heal sweep (round_heal): a
round whose callback was lost is closed once, a dead chunk is re-sent once per lease."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import CreditEntry
from accounts.selectors import credits_used_this_month
from audits.models import Audit, AuditEvent
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.lifecycle import audit_complete
from audits.pipeline.reconcile import (
    ROUND_CLOSE_GRACE_S,
    audit_status_refresh,
    heal_sweep,
    reconcile_running_audit,
    reconcile_sweep,
)
from audits.pipeline.rounds import round_plan
from audits.pipeline.start import audit_start
from audits.signals import audit_finished
from scratchpad.models import CrawlChunk
from scratchpad.services import NewURL, chunk_register, frontier_claim, frontier_seed
from tests.audits.pipeline.crawling import crawling_audit
from tests.factories import ProjectFactory
from tests.support.sites import serve_generated
from tests.support.workers import flush_test_broker, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


def _stale_audit(*, minutes=30, phase="crawling", revivals=0):
    project = ProjectFactory(base_url="http://127.0.0.1:9/")
    audit = audit_start(project=project, start_url="http://127.0.0.1:9/", max_pages=20, dispatch=False)
    past = timezone.now() - timedelta(minutes=minutes)
    Audit.objects.filter(id=audit.id).update(
        last_progress_at=past, started_at=past, current_phase=phase, revivals=revivals
    )
    audit.refresh_from_db()
    return audit


def test_recent_heartbeat_is_alive():
    audit = _stale_audit(minutes=1)
    assert reconcile_running_audit(audit).action == "alive"


def test_live_lease_keeps_an_audit_alive_without_heartbeat():
    audit = _stale_audit()
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:9/", depth=0, source="start")])
    frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=300)
    verdict = reconcile_running_audit(audit)
    assert (verdict.action, verdict.reason) == ("alive", "live leases")


def test_grace_period_after_start():
    audit = _stale_audit()
    Audit.objects.filter(id=audit.id).update(started_at=timezone.now())
    audit.refresh_from_db()
    assert reconcile_running_audit(audit).reason == "within the grace period after start"


def test_lost_audit_fails_as_instance_lost_after_revivals_lazily(settings):
    audit = _stale_audit(revivals=settings.RECONCILE_MAX_REVIVALS)
    received = []
    audit_finished.connect(lambda **kw: received.append(kw), weak=False, dispatch_uid="t-lost")
    try:
        read = audit_status_refresh(audit_id=audit.id)  # a client polling sees the truth at once
    finally:
        audit_finished.disconnect(dispatch_uid="t-lost")
    assert read.status == "failed"
    assert (read.error_code, read.failed_phase, read.reconciled_by) == ("instance_lost", "crawling", "lazy")
    assert "No progress" in read.error_detail and len(read.error_detail) <= 500
    assert credits_used_this_month(read.project.account) == 0
    assert set(CreditEntry.objects.filter(audit_ref=audit.id).values_list("kind", flat=True)) == {
        "reserve",
        "release",
    }
    assert [(r["reconciled_by"], r["error_code"]) for r in received] == [("lazy", "instance_lost")]
    assert AuditEvent.objects.filter(audit=audit, kind="reconciled").exists()


def test_recorded_task_failure_gives_its_code():
    audit = _stale_audit()
    AuditEvent.objects.create(
        audit=audit, kind="task_failed", message="crawler.crawl_chunk: MemoryError", data={"code": "oom"}
    )
    verdict = reconcile_running_audit(audit, reconciled_by="watchdog")
    assert (verdict.action, verdict.reason) == ("failed", "oom")
    audit.refresh_from_db()
    assert (audit.error_code, audit.reconciled_by) == ("oom", "watchdog")


def test_stalled_audit_is_revived_with_an_event_and_a_fresh_heartbeat():
    audit = _stale_audit(phase="finalizing")
    verdict = reconcile_running_audit(audit, reconciled_by="watchdog")
    assert verdict.action == "revived"
    audit.refresh_from_db()
    assert audit.revivals == 1 and audit.status == "running"
    assert timezone.now() - audit.last_progress_at < timedelta(seconds=30)
    assert AuditEvent.objects.filter(audit=audit, kind="revived").count() == 1


def test_completion_during_a_sweep_keeps_completed():
    """The watchdog read the audit as stale; before it writes, the pipeline completes it on another
    connection. The watchdog's fail is conditional on status='running' and changes nothing."""
    audit = _stale_audit(revivals=9)
    stale_snapshot = Audit.objects.get(id=audit.id)

    def complete_elsewhere():
        try:
            assert audit_complete(audit_id=audit.id, pages_crawled=3)
        finally:
            connection.close()

    t = threading.Thread(target=complete_elsewhere)
    t.start()
    t.join()
    verdict = reconcile_running_audit(stale_snapshot, reconciled_by="watchdog", stale_after_s=0, grace_s=0)
    audit.refresh_from_db()
    assert audit.status == "completed" and audit.error_code == ""
    assert (verdict.action, verdict.reason) == ("finished", "completed")
    assert not CreditEntry.objects.filter(audit_ref=audit.id, kind="charge", units=0).exists()
    assert CreditEntry.objects.get(audit_ref=audit.id, kind="charge").units == 3


def test_sweep_oldest_first_and_command_output(settings):
    settings.RECONCILE_MAX_REVIVALS = 0
    old = _stale_audit(minutes=60)
    newer = _stale_audit(minutes=20)
    fresh = _stale_audit(minutes=0)
    verdicts = reconcile_sweep(stale_after_s=600, grace_s=0)
    assert [v.audit_id for v in verdicts][:2] == [str(old.id), str(newer.id)]
    assert {v.audit_id: v.action for v in verdicts}[str(fresh.id)] == "alive"
    done = run_cli("reconcile_audits", "--stale-after", "600", "--grace", "0")
    assert done.returncode == 0
    assert "1 running audits: 1 alive" in done.stdout


def test_heal_sweep_closes_a_round_whose_callback_was_lost(site_root, no_renewal):
    with serve_generated(site_root) as (base, _):
        audit = crawling_audit(base)
        Audit.objects.filter(id=audit.id).update(current_phase="crawling")
        round_no = audit.crawl_round
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=round_no).chunks
        chunk_register(audit_id=audit.id, round_no=round_no, chunks=[(key, quota)])
        # Done; its chord callback is lost.
        crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=round_no)
        assert Audit.objects.get(id=audit.id).crawl_round == round_no
        # Just done: its chunk closes the round itself a moment later; a sweep (or a status poll) in between waits.
        assert heal_sweep() == [] and Audit.objects.get(id=audit.id).crawl_round == round_no
        assert not AuditEvent.objects.filter(audit=audit, kind="reconciled").exists()
        done_at = timezone.now() - timedelta(seconds=ROUND_CLOSE_GRACE_S + 1)
        CrawlChunk.objects.filter(lease_key=key).update(renewed_at=done_at)  # nothing closed it within the grace
        verdicts = heal_sweep()
    assert [v.action for v in verdicts] == ["healed"]
    audit.refresh_from_db()
    assert audit.crawl_round == round_no + 1 and audit.status == "running"
    assert AuditEvent.objects.filter(audit=audit, kind="reconciled", message__contains="callback never ran").exists()
    heal_sweep()
    assert Audit.objects.get(id=audit.id).crawl_round == round_no + 1, "closed once: the next round's chunks are fresh"


def test_a_chunk_whose_run_stopped_renewing_is_re_sent_once_per_lease(site_root, no_renewal):
    audit = audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"),
        start_url="http://127.0.0.1:9/",
        max_pages=100,
        dispatch=False,
    )
    Audit.objects.filter(id=audit.id).update(current_phase="crawling", crawl_round=1)
    chunk_register(audit_id=audit.id, round_no=1, chunks=[(f"{audit.id}:r1:c0", 50), (f"{audit.id}:r1:c1", 50)])
    past = timezone.now() - timedelta(seconds=no_renewal.CRAWL_LEASE_DURATION_S + 5)
    fresh = timezone.now()
    CrawlChunk.objects.filter(lease_key__endswith="c0").update(
        state="running", generation=1, renewed_at=past, sent_at=past
    )
    CrawlChunk.objects.filter(lease_key__endswith="c1").update(
        state="running", generation=1, renewed_at=fresh, sent_at=past
    )
    try:
        assert [v.action for v in heal_sweep()] == ["healed"]
        assert heal_sweep() == [], "not re-sent again within the same lease"
    finally:
        flush_test_broker()
    sends = dict(CrawlChunk.objects.filter(audit=audit).values_list("lease_key", "sends"))
    assert sends == {f"{audit.id}:r1:c0": 2, f"{audit.id}:r1:c1": 1}
    assert AuditEvent.objects.filter(audit=audit, kind="lease_expired", message__contains="re-sent 1").exists()
