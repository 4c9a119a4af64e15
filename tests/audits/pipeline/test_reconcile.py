"""The reconciler's judgement on PostgreSQL: heartbeat, leases, grace, recorded failures, revivals,
and the conditional finish that lets a completion win a race with the watchdog."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import CreditEntry
from accounts.selectors import credits_used_this_month
from audits.models import Audit, AuditEvent
from audits.pipeline.lifecycle import audit_complete
from audits.pipeline.reconcile import audit_status_refresh, reconcile_running_audit, reconcile_sweep
from audits.pipeline.start import audit_start
from audits.signals import audit_finished
from scratchpad.services import NewURL, frontier_claim, frontier_seed
from tests.factories import ProjectFactory
from tests.support.workers import run_cli

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
