"""The audit pipeline as Celery tasks: discovery -> crawl rounds (chords of chunks) -> finalize.

Tasks are thin: they take ids and call services. `pipeline_run_inline` runs the same steps in this
process for the embedded default's CLI.
"""

import logging
import math
import time
from dataclasses import dataclass

from billiard.exceptions import WorkerLostError
from celery import chord, shared_task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.signals import task_failure, task_retry
from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, transaction
from kombu.exceptions import OperationalError as BrokerError

from audits.checks import health_score, run_site_checks
from audits.crawl import audit_discover, crawl_chunk_run
from audits.lighthouse import lighthouse_run_for_audit
from audits.limits import (
    CHUNK_SOFT_TIME_LIMIT_S,
    CHUNK_TARGET_PAGES,
    CHUNK_TIME_LIMIT_S,
    PERSIST_BATCH_PAGES,
)
from audits.models import Audit, AuditEvent, Issue, Page
from audits.politeness import politeness_stopped
from audits.services import audit_complete, audit_event, audit_fail, audit_set_phase
from scratchpad.models import Frontier, LinkEdge
from scratchpad.selectors import frontier_stats
from scratchpad.services import frontier_purge

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase

STEP_TIME_LIMIT_S = 600  # discovery and finalize
LIGHTHOUSE_SOFT_TIME_LIMIT_S = 840  # the phase's own budget (audits.lighthouse) stays below this
LIGHTHOUSE_TIME_LIMIT_S = 900
LEASE_WAIT_MAX_S = 60  # how long to wait before re-planning when a dead chunk still holds leases


@dataclass(frozen=True)
class RoundPlan:
    round_no: int
    chunks: list[tuple[str, int]]  # (lease key, quota)
    wait_s: float = 0.0  # > 0: nothing claimable now but live leases may come back; plan again later


def round_advance(*, audit_id, from_round: int) -> bool:
    """Move the audit's round counter once: a duplicated round-done message finds it moved and stops."""
    return bool(
        Audit.objects.filter(id=audit_id, status=Status.RUNNING, crawl_round=from_round).update(
            crawl_round=from_round + 1
        )
    )


def round_plan(*, audit_id, round_no: int) -> RoundPlan | None:
    """Split what is claimable within the page budget into at most K chunks; None when the crawl is over."""
    audit = Audit.objects.filter(id=audit_id, status=Status.RUNNING).first()
    if audit is None or politeness_stopped(audit_id):
        return None  # finished elsewhere, or the site kept rate-limiting: finalize with what we have
    stats = frontier_stats(audit_id=audit_id)
    Audit.objects.filter(id=audit_id).update(pages_total=min(stats.total, audit.max_pages))
    if not stats.pending_linked and stats.leased_live:
        # Sitemap-only URLs wait for the link crawl (see frontier_claim), and a dead chunk's live leases
        # come back when they expire: plan again later instead of spinning on empty rounds.
        return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
    budget = audit.max_pages - stats.done - stats.leased_live
    # Chunks take link-discovered URLs first (see frontier_claim): plan for those while there are any.
    claimable = min(stats.pending_linked or stats.pending, max(budget, 0))
    if claimable <= 0:
        if stats.leased_live and stats.done < audit.max_pages:
            return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
        return None
    max_chunks = max(1, settings.CRAWL_CHUNKS_PER_ROUND)
    count = min(max_chunks, math.ceil(claimable / PERSIST_BATCH_PAGES))
    claimable = min(claimable, count * CHUNK_TARGET_PAGES)
    quotas = [claimable // count + (1 if i < claimable % count else 0) for i in range(count)]
    return RoundPlan(round_no, [(chunk_task_id(audit_id, round_no, i), q) for i, q in enumerate(quotas) if q > 0])


def audit_lighthouse(*, audit_id) -> bool:
    """The optional Lighthouse phase; it never fails the audit. False when the audit ended."""
    audit = Audit.objects.filter(id=audit_id, status=Status.RUNNING).first()
    if audit is None:
        return False
    if not audit.config.get("lighthouse"):
        return True
    if not audit_set_phase(audit_id=audit_id, phase=Phase.LIGHTHOUSE):
        return False
    lighthouse_run_for_audit(audit=audit)
    return True


def audit_finalize(*, audit_id) -> bool:
    """Site checks, health score, completion and scratchpad clean-up. Idempotent."""
    if not audit_set_phase(audit_id=audit_id, phase=Phase.FINALIZING):
        return False
    audit = Audit.objects.get(id=audit_id)
    _refresh_planner_statistics()
    run_site_checks(audit)
    score, _ = health_score(audit_id)
    pages = Page.objects.filter(audit_id=audit_id).count()
    completed = audit_complete(audit_id=audit_id, pages_crawled=pages, health_score=score)
    frontier_purge(audit_id=audit_id)
    return completed


def _refresh_planner_statistics() -> None:
    """ANALYZE the crawl tables before the site checks' joins. Statistics gathered before this audit's rows
    existed make PostgreSQL expect ~1 link edge and pick a nested loop that compares every edge with every
    page (a 2,000-page finalize went from 0.6 s to 72 s); fresh ones keep the (audit, url) index in use."""
    if connection.vendor != "postgresql":
        return
    tables = [m._meta.db_table for m in (Page, LinkEdge, Frontier, Issue)]
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(tables)}")


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


# --- Celery tasks ----------------------------------------------------------------------------------


def pipeline_dispatch(audit_id) -> None:
    discover.delay(str(audit_id))


def chunk_task_id(audit_id, round_no: int, index: int) -> str:
    """A chunk's task id is its lease key: a cancel can revoke a round without having stored ids."""
    return f"{audit_id}:r{round_no}:c{index}"


def pipeline_revoke(audit_id) -> None:
    """Revoke the current round's queued chunks (cancel). Running ones stop at their next batch."""
    from config.celery import app

    round_no = Audit.objects.filter(id=audit_id).values_list("crawl_round", flat=True).first()
    if round_no is None:
        return
    ids = [chunk_task_id(audit_id, round_no, i) for i in range(max(1, settings.CRAWL_CHUNKS_PER_ROUND))]
    try:
        app.control.revoke(ids)
    except Exception:  # a broker that cannot broadcast: the chunks see the status and stop by themselves
        logger.warning("revoke failed", exc_info=True, extra={"audit_id": str(audit_id)})


def pipeline_revive(audit: Audit) -> None:
    """Re-dispatch a stalled audit from its saved state (its phase, its frontier)."""
    audit_id = str(audit.id)
    if audit.current_phase == Phase.DISCOVERY:
        discover.delay(audit_id)
    elif audit.current_phase == Phase.CRAWLING:
        # A new round number: whatever is left of the lost round finds the counter moved and stops.
        if round_advance(audit_id=audit_id, from_round=audit.crawl_round):
            _round_dispatch(audit_id, audit.crawl_round + 1)
    elif audit.current_phase == Phase.LIGHTHOUSE:
        lighthouse.delay(audit_id)
    else:
        finalize.delay(audit_id)


@shared_task(name="audits.discover", acks_late=True, reject_on_worker_lost=True, time_limit=STEP_TIME_LIMIT_S)
def discover(audit_id: str) -> None:
    if audit_discover(audit_id=audit_id) and round_advance(audit_id=audit_id, from_round=0):
        _round_dispatch(audit_id, 1)


@shared_task(
    name="crawler.crawl_chunk",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=False,
    soft_time_limit=CHUNK_SOFT_TIME_LIMIT_S,
    time_limit=CHUNK_TIME_LIMIT_S,
    autoretry_for=(OperationalError,),
    max_retries=3,
    retry_backoff=5,
)
def crawl_chunk(audit_id: str, lease_key: str, quota: int) -> dict:
    return crawl_chunk_run(audit_id=audit_id, lease_key=lease_key, quota=quota)


@shared_task(name="audits.crawl_round_done", acks_late=True, reject_on_worker_lost=True)
def crawl_round_done(results, audit_id: str, round_no: int) -> None:
    if round_advance(audit_id=audit_id, from_round=round_no):
        _round_dispatch(audit_id, round_no + 1)


@shared_task(
    name="audits.lighthouse",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=LIGHTHOUSE_SOFT_TIME_LIMIT_S,
    time_limit=LIGHTHOUSE_TIME_LIMIT_S,
)
def lighthouse(audit_id: str) -> None:
    if audit_lighthouse(audit_id=audit_id):
        finalize.delay(audit_id)


@shared_task(name="audits.finalize", acks_late=True, reject_on_worker_lost=True, time_limit=STEP_TIME_LIMIT_S)
def finalize(audit_id: str) -> None:
    audit_finalize(audit_id=audit_id)


@shared_task(name="audits.pipeline_failed")
def pipeline_failed(request, exc, traceback, audit_id: str) -> None:
    """Chord error callback: a failed chunk fails the audit at once instead of waiting for the watchdog."""
    audit_fail(audit_id=audit_id, code=classify_failure(exc), detail=f"{type(exc).__name__}: {exc}")


@shared_task(name="audits.reconcile_sweep", ignore_result=True)
def reconcile_sweep_task() -> None:
    """The watchdog (celery-beat, every 15 minutes): reconcile every running audit, oldest first, and queue
    again webhook deliveries whose message was lost."""
    from audits.reconciler import reconcile_sweep
    from audits.webhooks import webhook_deliveries_sweep

    reconcile_sweep(reconciled_by="watchdog")
    webhook_deliveries_sweep()


@shared_task(name="audits.run_schedule", ignore_result=True)
def run_schedule(project_id: int) -> None:
    from audits.schedules import schedule_run

    schedule_run(project_id=project_id)


PIPELINE_TASKS = frozenset({"audits.discover", "crawler.crawl_chunk", "audits.lighthouse", "audits.finalize"})


@task_failure.connect
def _record_task_failure(sender=None, task_id=None, exception=None, args=None, **kwargs):
    """A pipeline step that failed for good fails its audit at once, with a classified code."""
    if getattr(sender, "name", None) not in PIPELINE_TASKS or not args:
        return
    audit_id, code = args[0], classify_failure(exception)
    detail = f"{sender.name}: {type(exception).__name__}: {exception}"
    try:
        audit_event(audit_id=audit_id, kind=AuditEvent.Kind.TASK_FAILED, message=detail, code=code, task=sender.name)
        audit_fail(audit_id=audit_id, code=code, detail=detail)
    except Exception:  # the database itself may be what failed: the watchdog will judge the audit
        logger.exception("could not record the failure", extra={"audit_id": audit_id})


@task_retry.connect
def _record_task_retry(sender=None, request=None, reason=None, **kwargs):
    if getattr(sender, "name", None) not in PIPELINE_TASKS or not request or not request.args:
        return
    try:
        audit_event(
            audit_id=request.args[0],
            kind=AuditEvent.Kind.RETRY,
            message=f"{sender.name} retried: {reason}",
            task=sender.name,
        )
    except Exception:
        logger.exception("could not record the retry")


def _round_dispatch(audit_id: str, round_no: int) -> None:
    plan = round_plan(audit_id=audit_id, round_no=round_no)
    if plan is None:
        lighthouse.delay(audit_id)
    elif not plan.chunks:
        crawl_round_done.apply_async(([], audit_id, round_no), countdown=plan.wait_s)
    else:
        header = [crawl_chunk.si(audit_id, key, quota).set(task_id=key) for key, quota in plan.chunks]
        body = crawl_round_done.s(audit_id, round_no).on_error(pipeline_failed.s(audit_id))
        transaction.on_commit(lambda: chord(header)(body))


# --- in-process runner (embedded default CLI) ------------------------------------------------------


def pipeline_run_inline(audit_id) -> None:
    """Run the whole pipeline in this process with the same services the tasks call."""
    audit_id = str(audit_id)
    try:
        if not audit_discover(audit_id=audit_id):
            return
        round_no = 0
        while round_advance(audit_id=audit_id, from_round=round_no):
            round_no += 1
            plan = round_plan(audit_id=audit_id, round_no=round_no)
            if plan is None:
                break
            if not plan.chunks:
                time.sleep(min(plan.wait_s, 5))
            for key, quota in plan.chunks:
                crawl_chunk_run(audit_id=audit_id, lease_key=key, quota=quota)
        if audit_lighthouse(audit_id=audit_id):
            audit_finalize(audit_id=audit_id)
    except BaseException as exc:
        audit_fail(audit_id=audit_id, code=classify_failure(exc), detail=f"{type(exc).__name__}: {exc}")
        raise
