"""The audit pipeline's Celery tasks (the top floor): thin, they take ids and call the pipeline's stages.
Also the task_failure/task_retry receivers that record a failed step on its audit.

Names are a wire contract (tests/test_task_names.py): queued messages, beat schedules and revoked ids
carry them. Services never import this module; they send by name through audits.dispatch.
Every pipeline step is idempotent, acks late, is re-queued when its worker dies, and retries transient
database errors (a failover, a dropped connection) a bounded number of times with backoff.
"""

import logging

from celery import shared_task
from celery.signals import task_failure, task_retry
from django.db import InterfaceError, OperationalError

from audits.limits import (
    CHUNK_SOFT_TIME_LIMIT_S,
    CHUNK_TIME_LIMIT_S,
    LIGHTHOUSE_SOFT_TIME_LIMIT_S,
    LIGHTHOUSE_TIME_LIMIT_S,
    STEP_MAX_RETRIES,
    STEP_RETRY_BACKOFF_MAX_S,
    STEP_RETRY_BACKOFF_S,
    STEP_TIME_LIMIT_S,
)
from audits.models import AuditEvent
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.finalize import audit_finalize, audit_lighthouse
from audits.pipeline.lifecycle import audit_event, audit_fail, classify_failure
from audits.pipeline.reconcile import reconcile_sweep
from audits.pipeline.rounds import round_advance, round_dispatch
from audits.pipeline.start import schedule_run
from webhooks.services import webhook_deliveries_sweep

logger = logging.getLogger(__name__)

# The reliability flags every pipeline step shares.
STEP_OPTIONS = dict(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    max_retries=STEP_MAX_RETRIES,
    retry_backoff=STEP_RETRY_BACKOFF_S,
    retry_backoff_max=STEP_RETRY_BACKOFF_MAX_S,
)


@shared_task(name="audits.discover", time_limit=STEP_TIME_LIMIT_S, **STEP_OPTIONS)
def discover(audit_id: str) -> None:
    if audit_discover(audit_id=audit_id) and round_advance(audit_id=audit_id, from_round=0):
        round_dispatch(audit_id=audit_id, round_no=1)


@shared_task(
    name="crawler.crawl_chunk",
    ignore_result=False,  # a chord member: the body waits for every result
    soft_time_limit=CHUNK_SOFT_TIME_LIMIT_S,
    time_limit=CHUNK_TIME_LIMIT_S,
    **STEP_OPTIONS,
)
def crawl_chunk(audit_id: str, lease_key: str, quota: int) -> dict:
    return crawl_chunk_run(audit_id=audit_id, lease_key=lease_key, quota=quota)


@shared_task(name="audits.crawl_round_done", **STEP_OPTIONS)
def crawl_round_done(results, audit_id: str, round_no: int) -> None:
    if round_advance(audit_id=audit_id, from_round=round_no):
        round_dispatch(audit_id=audit_id, round_no=round_no + 1)


@shared_task(
    name="audits.lighthouse",
    soft_time_limit=LIGHTHOUSE_SOFT_TIME_LIMIT_S,
    time_limit=LIGHTHOUSE_TIME_LIMIT_S,
    **STEP_OPTIONS,
)
def lighthouse(audit_id: str) -> None:
    if audit_lighthouse(audit_id=audit_id):
        finalize.delay(audit_id)


@shared_task(name="audits.finalize", time_limit=STEP_TIME_LIMIT_S, **STEP_OPTIONS)
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
    reconcile_sweep(reconciled_by="watchdog")
    webhook_deliveries_sweep()


@shared_task(name="audits.run_schedule", ignore_result=True)
def run_schedule(project_id: int) -> None:
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
