"""Reconcile: one judgement of a running audit's liveness, used by status reads (`audit_status_refresh`,
lazy), the frequent heal sweep (`heal_sweep`: beat every CRAWL_HEAL_EVERY_S, and every worker that starts) and
the celery-beat watchdog (`reconcile_sweep`). A live crawl is healed at once from its leases (`round_heal`:
dead chunks re-sent, a round whose callback was lost closed); an audit silent past the stale threshold is
re-dispatched from its saved phase a bounded number of times, else failed (the backstop).
"""

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from audits import dispatch
from audits.limits import LEASE_WAIT_MAX_S
from audits.models import Audit, AuditEvent
from audits.pipeline.flow import FINALIZE, STOP, next_after_round, step_send
from audits.pipeline.lifecycle import audit_event, audit_fail
from scratchpad.models import CrawlChunk, Frontier
from scratchpad.selectors import chunks_of_round, frontier_work
from scratchpad.services import chunk_holder_sessions_end, chunk_mark_resent, frontier_purge

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase
SWEEP_BATCH = 100
# A round whose chunks are all done is closed by its last chunk right after it is marked done, then by the chord's
# callback; the heal (and every status poll, which heals on read) closes it only when neither has within this
# long. Without it, a poll landing between the mark and the close logged "its callback never ran" for a round
# that closed a moment later (twice in the 1,000,000-page run's ~2,300 rounds).
ROUND_CLOSE_GRACE_S = 10


@dataclass(frozen=True)
class Verdict:
    audit_id: str
    action: str  # finished | alive | healed | revived | failed
    reason: str


def reconcile_running_audit(
    audit: Audit,
    *,
    reconciled_by: str = "lazy",
    stale_after_s: float | None = None,
    grace_s: float | None = None,
) -> Verdict:
    """Judge one audit from its heartbeat, live leases and recorded failures; act on the verdict.

    Every write is conditional on status='running', so an audit that finishes meanwhile keeps its outcome.
    """
    stale_after = timedelta(seconds=settings.RECONCILE_STALE_AFTER_S if stale_after_s is None else stale_after_s)
    grace = timedelta(seconds=settings.RECONCILE_GRACE_S if grace_s is None else grace_s)
    audit_id = str(audit.id)
    if audit.status != Status.RUNNING:
        return Verdict(audit_id, "finished", audit.status)
    now = timezone.now()
    heartbeat = audit.last_progress_at or audit.started_at or audit.created_at
    if now - heartbeat < stale_after:
        return _alive_or_healed(audit, reconciled_by, "recent heartbeat")
    if Frontier.objects.filter(audit_id=audit.id, state=Frontier.State.LEASED, leased_until__gte=now).exists():
        return _alive_or_healed(audit, reconciled_by, "live leases")
    if now - (audit.started_at or audit.created_at) < grace:
        return _alive_or_healed(audit, reconciled_by, "within the grace period after start")

    silent_s = int((now - heartbeat).total_seconds())
    expired = Frontier.objects.filter(audit_id=audit.id, state=Frontier.State.LEASED, leased_until__lt=now).count()
    if expired:
        audit_event(
            audit_id=audit.id,
            kind=AuditEvent.Kind.LEASE_EXPIRED,
            message=f"{expired} leases expired with no progress for {silent_s} s",
            expired=expired,
            silent_s=silent_s,
        )
    failure = audit.events.filter(kind=AuditEvent.Kind.TASK_FAILED).order_by("-created_at").first()
    if failure is not None:
        code = failure.data.get("code", "unknown")
        return _fail(audit, reconciled_by, code, f"A pipeline step failed: {failure.message}")
    if audit.revivals < settings.RECONCILE_MAX_REVIVALS:
        # Conditional on the revival count, so two reconcilers cannot both revive the same stall.
        revived = Audit.objects.filter(id=audit.id, status=Status.RUNNING, revivals=audit.revivals).update(
            revivals=F("revivals") + 1, last_progress_at=now
        )
        if revived:
            audit_event(
                audit_id=audit.id,
                kind=AuditEvent.Kind.REVIVED,
                message=f"No progress for {silent_s} s and no live lease: re-dispatched from phase "
                f"{audit.current_phase} (revival {audit.revivals + 1})",
                reconciled_by=reconciled_by,
                phase=audit.current_phase,
                silent_s=silent_s,
                revival=audit.revivals + 1,
            )
            audit.refresh_from_db()
            pipeline_revive(audit)
            return Verdict(audit_id, "revived", f"no progress for {silent_s} s")
        return Verdict(audit_id, "alive", "revived by another reconciler")
    return _fail(
        audit,
        reconciled_by,
        "instance_lost",
        f"No progress for {silent_s} s (RECONCILE_STALE_AFTER_S), no live lease, and {audit.revivals} "
        f"re-dispatches (RECONCILE_MAX_REVIVALS) did not bring it back (phase {audit.current_phase}).",
    )


@dataclass(frozen=True)
class Heal:
    action: str  # none | advanced | resent
    detail: str = ""
    data: dict = field(default_factory=dict)  # for the event log's sentence: round, chunks, lease_s, reason


def round_heal(*, audit: Audit) -> Heal:
    """Unstick the current crawl round of a running audit without waiting for silence: close it when its
    chunks all finished but its callback never ran; re-send (same lease key) each chunk whose run stopped
    renewing its lease, or whose message has waited a whole lease without being taken (lost, or in a long
    queue: a duplicate is skipped by the chunk itself). A round without chunks (a wait before re-planning)
    whose re-plan message was lost is planned again once it is a lease overdue and no lease is live."""
    if audit.status != Audit.Status.RUNNING or audit.current_phase != Audit.Phase.CRAWLING or audit.crawl_round < 1:
        return Heal("none")
    audit_id, round_no = str(audit.id), audit.crawl_round
    lease = timedelta(seconds=settings.CRAWL_LEASE_DURATION_S)
    now = timezone.now()
    chunks = chunks_of_round(audit_id=audit_id, round_no=round_no)
    if not chunks:
        quiet_since = audit.last_progress_at or audit.started_at or audit.created_at
        overdue = now - quiet_since > timedelta(seconds=LEASE_WAIT_MAX_S) + lease
        if (
            overdue
            and not frontier_work(audit_id=audit_id).leased_live
            and (step := next_after_round(audit_id=audit_id, round_no=round_no)) != STOP
        ):
            step_send(audit_id=audit_id, step=step)
            return Heal(
                "advanced",
                f"round {round_no} had no chunk and its re-plan never came",
                {"round": round_no, "reason": "replan_lost"},
            )
        return Heal("none")
    if all(c.state == CrawlChunk.State.DONE for c in chunks):
        last_done = max((c.renewed_at for c in chunks if c.renewed_at), default=None)  # set when marked done
        if last_done is not None and now - last_done < timedelta(seconds=ROUND_CLOSE_GRACE_S):
            return Heal("none")  # the last chunk closes its round itself just after: a poll landed in between
        step = next_after_round(audit_id=audit_id, round_no=round_no)
        if step != STOP:
            step_send(audit_id=audit_id, step=step)
            return Heal(
                "advanced",
                f"round {round_no}: every chunk done, its callback never ran",
                {"round": round_no, "reason": "callback_lost"},
            )
        return Heal("none")
    resent = []
    for chunk in chunks:
        # Not sent (or re-sent) within the last lease either, so a re-send that waits in a queue is not repeated.
        quiet = now - chunk.sent_at > lease
        dead = chunk.state == CrawlChunk.State.RUNNING and (chunk.renewed_at is None or now - chunk.renewed_at > lease)
        lost = chunk.state == CrawlChunk.State.QUEUED
        if dead:
            # A run paused mid-COPY holds its locks with no timeout to end them (chunk_holder_sessions_end).
            chunk_holder_sessions_end(lease_key=chunk.lease_key, generation=chunk.generation)
        if quiet and (dead or lost) and chunk_mark_resent(chunk=chunk):
            urgency = dispatch.chunk_urgency(round_no=round_no, pages_done=audit.pages_crawled)
            dispatch.task_send(
                dispatch.CRAWL_CHUNK,
                audit_id,
                chunk.lease_key,
                chunk.quota,
                kwargs={"round_no": chunk.round_no},
                task_id=chunk.lease_key,
                urgency=urgency,
            )
            resent.append(chunk.lease_key)
    if resent:
        logger.info("crawl chunks re-sent", extra={"audit_id": audit_id, "lease_keys": resent})
        return Heal(
            "resent",
            f"round {round_no}: re-sent {len(resent)} chunk(s) whose run stopped renewing",
            {"round": round_no, "chunks": len(resent), "lease_s": settings.CRAWL_LEASE_DURATION_S},
        )
    return Heal("none")


def _alive_or_healed(audit: Audit, reconciled_by: str, reason: str) -> Verdict:
    """A live audit: heal its crawl round if a chunk died or its callback was lost, else leave it be."""
    heal = audit_heal(audit, reconciled_by=reconciled_by)
    if heal.action == "none":
        return Verdict(str(audit.id), "alive", reason)
    return Verdict(str(audit.id), "healed", heal.detail)


def audit_heal(audit: Audit, *, reconciled_by: str) -> Heal:
    """round_heal with its event on the audit's log."""
    heal = round_heal(audit=audit)
    if heal.action == "resent":
        audit_event(
            audit_id=audit.id,
            kind=AuditEvent.Kind.LEASE_EXPIRED,
            message=heal.detail,
            reconciled_by=reconciled_by,
            **heal.data,
        )
    elif heal.action == "advanced":
        audit_event(
            audit_id=audit.id,
            kind=AuditEvent.Kind.RECONCILED,
            message=heal.detail,
            reconciled_by=reconciled_by,
            **heal.data,
        )
    return heal


def heal_sweep(*, reconciled_by: str = "heal") -> list[Verdict]:
    """The frequent, light sweep: heal every crawling audit's round (no judgement of silence; that is
    reconcile_sweep's, the backstop)."""
    verdicts = []
    crawling = Audit.objects.filter(status=Status.RUNNING, current_phase=Phase.CRAWLING).order_by("created_at")
    for audit in crawling.iterator(chunk_size=SWEEP_BATCH):
        try:
            heal = audit_heal(audit, reconciled_by=reconciled_by)
        except Exception:  # one bad audit must not stop the sweep
            logger.exception("heal failed", extra={"audit_id": str(audit.id)})
            continue
        if heal.action != "none":
            verdicts.append(Verdict(str(audit.id), "healed", heal.detail))
    return verdicts


def pipeline_revive(audit: Audit) -> None:
    """Re-dispatch a stalled audit from its saved state (its phase, its frontier)."""
    audit_id = str(audit.id)
    if audit.current_phase == Phase.DISCOVERY:
        dispatch.task_send(dispatch.DISCOVER, audit_id)
    elif audit.current_phase == Phase.CRAWLING:
        # A new round number: whatever is left of the lost round finds the counter moved and stops.
        step_send(audit_id=audit_id, step=next_after_round(audit_id=audit_id, round_no=audit.crawl_round))
    elif audit.current_phase == Phase.LIGHTHOUSE:
        dispatch.task_send(dispatch.LIGHTHOUSE, audit_id)
    else:
        step_send(audit_id=audit_id, step=FINALIZE)  # with the time limit the audit's pages call for


def audit_status_refresh(*, audit_id) -> Audit:
    """Reconcile-on-read, as a service: the audit for a status display (API detail, CLI progress, the
    dashboard's live view), judged first when it is running, so a client polling a stuck audit sees the
    truth at once instead of waiting for the watchdog. It writes (it may fail or revive the audit)."""
    audit = Audit.objects.select_related("project").get(id=audit_id)
    if audit.status == Status.RUNNING:
        verdict = reconcile_running_audit(audit, reconciled_by="lazy")
        if verdict.action in ("failed", "revived", "finished"):
            audit.refresh_from_db()
    return audit


def _fail(audit: Audit, reconciled_by: str, code: str, detail: str) -> Verdict:
    failed = audit_fail(audit_id=audit.id, code=code, detail=detail, reconciled_by=reconciled_by)
    if failed:
        audit_event(
            audit_id=audit.id,
            kind=AuditEvent.Kind.RECONCILED,
            message=detail[:500],
            reconciled_by=reconciled_by,
            reason="failed",
            code=code,
        )
        return Verdict(str(audit.id), "failed", code)
    audit.refresh_from_db()
    return Verdict(str(audit.id), "finished", audit.status)


def reconcile_sweep(
    *, reconciled_by: str = "watchdog", stale_after_s: float | None = None, grace_s: float | None = None
) -> list[Verdict]:
    """Reconcile every running audit, oldest heartbeat first, in batches of SWEEP_BATCH; then drop the
    frontier that finished audits left behind (their own purge runs after commit and may have met an outage)."""
    verdicts: list[Verdict] = []
    seen: set = set()
    while True:
        batch = list(
            Audit.objects.filter(status=Status.RUNNING)
            .exclude(id__in=seen)
            .order_by(F("last_progress_at").asc(nulls_first=True), "created_at")[:SWEEP_BATCH]
        )
        if not batch:
            _purge_finished_frontiers()
            return verdicts
        for audit in batch:
            seen.add(audit.id)
            try:
                verdicts.append(
                    reconcile_running_audit(
                        audit, reconciled_by=reconciled_by, stale_after_s=stale_after_s, grace_s=grace_s
                    )
                )
            except Exception:  # one bad audit must not stop the sweep
                logger.exception("reconcile failed", extra={"audit_id": str(audit.id)})


def _purge_finished_frontiers() -> None:
    leftover = Exists(Frontier.objects.filter(audit_id=OuterRef("id")))
    for audit_id in (
        Audit.objects.exclude(status=Status.RUNNING).filter(leftover).values_list("id", flat=True)[:SWEEP_BATCH]
    ):
        frontier_purge(audit_id=audit_id)
