"""The audit's lifecycle: its event log, its phases, and the one conditional finish (complete, fail,
cancel) that settles credits and announces the end; delete; the failure codes of a pipeline step."""

import json
import logging

from billiard.exceptions import WorkerLostError
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from accounts.services import credits_settle
from audits import dispatch
from audits.fencing import FinalizeRun, finalize_session_claim
from audits.limits import ERROR_DETAIL_CHARS
from audits.models import Audit, AuditEvent
from audits.pipeline.rounds import chunk_task_id
from audits.report_pdfs import report_pdfs_delete
from audits.signals import audit_finished
from scratchpad.services import frontier_purge

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase
EventKind = AuditEvent.Kind


def audit_event(*, audit_id, kind: str, message: str, **data) -> None:
    """Append to the audit's event log (never updated, never deleted while the audit lives)."""
    AuditEvent.objects.create(audit_id=audit_id, kind=kind, message=message[:500], data=data)


def audit_set_phase(*, audit_id, phase: str, from_phases: tuple[str, ...] | None = None, **fields) -> bool:
    """Move a running audit to `phase`; False when it is no longer running (cancelled, failed), or, given
    `from_phases`, no longer in one of them (a late duplicate of a step must not move the audit back)."""
    current = Audit.objects.filter(id=audit_id).values_list("current_phase", flat=True).first()
    running = Audit.objects.filter(id=audit_id, status=Status.RUNNING)
    if from_phases is not None:
        running = running.filter(current_phase__in=from_phases)
    updated = running.update(current_phase=phase, last_progress_at=timezone.now(), **fields)
    if updated and current != phase:
        found = _discovery_counts(fields["discovery"]) if "discovery" in fields else {}
        audit_event(audit_id=audit_id, kind=EventKind.PHASE, message=f"Phase {phase}", phase=phase, **found)
    return bool(updated)


def finalize_claim(*, audit_id) -> FinalizeRun | None:
    """Take a running audit's finalize for this run: the finalizing phase and the next generation, which fences
    every earlier run's writes (audits.fencing). None when the audit is no longer running. A run after the first
    (its message handed out again, or re-sent by the reconciler) is said in the event log."""
    with transaction.atomic():
        row = (
            Audit.objects.select_for_update(no_key=True)
            .filter(id=audit_id, status=Status.RUNNING)
            .values_list("current_phase", "finalize_generation")
            .first()
        )
        if row is None:
            return None
        phase, generation = row[0], row[1] + 1
        Audit.objects.filter(id=audit_id).update(
            current_phase=Phase.FINALIZING, finalize_generation=generation, last_progress_at=timezone.now()
        )
        if phase != Phase.FINALIZING or generation > 1:
            audit_event(
                audit_id=audit_id, kind=EventKind.PHASE, message=f"Phase {Phase.FINALIZING}",
                phase=Phase.FINALIZING, run=generation,
            )  # fmt: skip
    run = FinalizeRun(audit_id=audit_id, generation=generation)
    finalize_session_claim(run)
    return run


# What discovery found, copied to the event that ends it so the event log can say it (audits.events).
_DISCOVERY_EVENT_COUNTS = ("sitemap_urls", "sitemap_urls_out_of_scope", "listed_urls", "listed_urls_seeded",
                           "listed_urls_disallowed", "listed_urls_off_site")  # fmt: skip


_DISCOVERY_EVENT_PROBLEMS = ("robots_error", "sitemap_errors", "skipped_patterns")  # texts, lists of texts


def _discovery_counts(discovery: dict) -> dict:
    counts = {key: discovery[key] for key in _DISCOVERY_EVENT_COUNTS if isinstance(discovery.get(key), int)}
    if isinstance(discovery.get("sitemaps"), list):
        counts["sitemaps"] = len(discovery["sitemaps"])
    return counts | {key: discovery[key] for key in _DISCOVERY_EVENT_PROBLEMS if discovery.get(key)}


def audit_fail(
    *,
    audit_id,
    code: str,
    detail: str = "",
    phase: str | None = None,
    reconciled_by: str | None = None,
    from_phases: tuple[str, ...] | None = None,
) -> bool:
    """Fail a running audit once; a finished audit keeps its outcome. Returns whether this call failed it. Given
    `from_phases`, only an audit still in one of them: a step's run that comes back late (its host was cut off)
    must not fail an audit another run of it moved on."""
    current = Audit.objects.filter(id=audit_id).values_list("current_phase", flat=True).first()
    if current is None:
        return False
    detail = (detail or "")[:ERROR_DETAIL_CHARS]
    return _finish(
        audit_id,
        Status.FAILED,
        reconciled_by=reconciled_by,
        event=(EventKind.FAILED, f"Failed ({code}): {detail}"),
        error_code=code,
        error_detail=detail,
        failed_phase=phase or current,
        current_phase=Phase.FAILED,
        only_if={"current_phase__in": from_phases} if from_phases is not None else None,
    )


def audit_cancel(*, audit: Audit) -> bool:
    """Cancel a running audit: queued work is revoked, the frontier dropped, partial results kept. A batch in
    flight either commits before the cancel or writes nothing (persist's fence), so counters equal rows."""
    cancelled = _finish(
        audit.id, Status.CANCELLED, event=(EventKind.CANCELLED, "Cancelled"), current_phase=Phase.CANCELLED
    )
    if cancelled:
        _round_revoke(audit.id)
    return cancelled


def _round_revoke(audit_id) -> None:
    """Revoke the current round's queued chunks (their task ids are their lease keys). Running ones write
    nothing more: every batch is fenced on status='running', and they stop at their next batch."""
    round_no = Audit.objects.filter(id=audit_id).values_list("crawl_round", flat=True).first()
    if round_no is None:
        return
    dispatch.tasks_revoke(
        [chunk_task_id(audit_id, round_no, i) for i in range(max(1, settings.CRAWL_CHUNKS_PER_ROUND))]
    )


def audit_complete(*, audit_id, event_data: dict | None = None, run: FinalizeRun | None = None, **fields) -> bool:
    """Complete a running audit once (conditional on status, so it cannot overwrite a failure), and, given the run
    of finalize completing it, only while that run holds the audit (audits.fencing). `event_data` goes into the
    completed event's payload (finalize's seconds by stage)."""
    return _finish(
        audit_id,
        Status.COMPLETED,
        only_if={"finalize_generation": run.generation} if run else None,
        event=(EventKind.COMPLETED, "Completed"),
        event_data=event_data,
        current_phase=Phase.COMPLETED,
        last_progress_at=timezone.now(),
        **fields,
    )


def audit_delete(*, audit: Audit) -> None:
    """Remove the audit with its pages, issues, events, scratchpad rows and stored files.

    A running audit is cancelled first. The credit ledger keeps its entries (audit_ref), as accounts do.
    """
    if audit.status == Status.RUNNING:
        audit_cancel(audit=audit)
    audit_id = audit.id
    with transaction.atomic():
        Audit.objects.filter(id=audit_id).delete()
    # why: every process imports the lifecycle (the admin does at start), few delete audits
    from audits.pipeline.lighthouse import lighthouse_reports_delete

    lighthouse_reports_delete(audit_id=audit_id)
    report_pdfs_delete(audit_id=audit_id)


def _finish(
    audit_id,
    status: str,
    *,
    event: tuple[str, str],
    event_data: dict | None = None,
    reconciled_by: str | None = None,
    only_if: dict | None = None,
    **fields,
) -> bool:
    now = timezone.now()
    with transaction.atomic():
        updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING, **(only_if or {})).update(
            status=status, completed_at=now, reconciled_by=reconciled_by or "", **fields
        )
        if not updated:
            return False
        audit = Audit.objects.select_related("project").get(id=audit_id)
        credits_settle(audit=audit, charge_units=audit.pages_crawled if status == Status.COMPLETED else 0)
        audit_event(
            audit_id=audit_id, kind=event[0], message=event[1], reconciled_by=reconciled_by, **(event_data or {})
        )
        # After commit, not inside: a chunk's batch locks its frontier rows before the audit row, so deleting
        # them while holding the audit row could deadlock with it. Any batch that waits for these rows then
        # finds the audit finished and rolls back.
        transaction.on_commit(lambda: frontier_purge(audit_id=audit_id))
        transaction.on_commit(lambda: _announce_finished(audit, reconciled_by))
    return True


def _announce_finished(audit: Audit, reconciled_by: str | None) -> None:
    duration_s = (audit.completed_at - audit.started_at).total_seconds() if audit.started_at else None
    payload = {
        "event": "audit_finished",
        "audit_id": str(audit.id),
        "status": audit.status,
        "reconciled_by": reconciled_by,
        "error_code": audit.error_code or None,
        "failed_phase": audit.failed_phase or None,
        "pages_crawled": audit.pages_crawled,
        "duration_s": round(duration_s, 3) if duration_s is not None else None,
    }
    logger.info(json.dumps(payload))
    audit_finished.send(
        sender=Audit,
        audit=audit,
        reconciled_by=reconciled_by,
        error_code=audit.error_code or None,
        pages_crawled=audit.pages_crawled,
        duration_s=duration_s,
    )


FAILURE_CODES = (
    ((MemoryError,), "oom"),
    ((WorkerLostError,), "worker_lost"),
    ((SoftTimeLimitExceeded, TimeLimitExceeded), "step_timeout"),
    ((DatabaseError, OperationalError), "db_error"),
    ((BrokerError,), "broker_error"),
)


def classify_failure(exc: BaseException | None) -> str:
    """The error code for an exception; a chord's error names its failed member's exception in text."""
    for classes, code in FAILURE_CODES:
        if isinstance(exc, classes):
            return code
    text = repr(exc)
    for classes, code in FAILURE_CODES:
        if any(cls.__name__ in text for cls in classes):
            return code
    return "unknown"
