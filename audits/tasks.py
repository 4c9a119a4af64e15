"""The audit pipeline's Celery tasks (the top floor): thin, they take ids, call the pipeline's stages, and send
the step that comes next (the order is pipeline.flow's, shared with the in-process runner).
Also the task_failure/task_retry receivers that record a failed step on its audit.

Names are a wire contract (tests/test_task_names.py): queued messages, beat schedules and revoked ids
carry them. Services never import this module; they send by name through audits.dispatch.
Every pipeline step is idempotent, acks late, is re-queued when its worker dies, and retries transient
errors (the database down, restarting or read-only; the broker's connection lost) with jittered backoff for
up to STEP_RETRY_WINDOW_S. A step that gives up releases its leases and fails its audit; when the database
itself is what failed, that record is retried by `audits.record_failure` and kept on disk meanwhile
(audits.outages), so it is written late, never dropped.
"""

import logging
import time

from celery import Task, shared_task
from celery.exceptions import Retry
from celery.signals import task_failure, task_retry, worker_ready
from django.conf import settings

from audits.limits import (
    CHUNK_SOFT_TIME_LIMIT_S,
    CHUNK_TIME_LIMIT_S,
    FAILURE_RECORD_RETRY_WINDOW_S,
    LIGHTHOUSE_SOFT_TIME_LIMIT_S,
    LIGHTHOUSE_TIME_LIMIT_S,
    STEP_MAX_RETRIES,
    STEP_RETRY_WINDOW_S,
    STEP_TIME_LIMIT_S,
)
from audits.models import AuditEvent
from audits.outages import (
    failure_record,
    is_transient_db_error,
    is_transient_error,
    outbox_drain,
    outbox_put,
    retry_delay_s,
)
from audits.pipeline.changes import changes_recompute
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.finalize import audit_finalize, audit_lighthouse
from audits.pipeline.flow import (
    next_after_chunk,
    next_after_discovery,
    next_after_lighthouse,
    next_after_round,
    step_send,
)
from audits.pipeline.lifecycle import audit_event, classify_failure
from audits.pipeline.reconcile import heal_sweep, reconcile_sweep
from audits.pipeline.rounds import chunk_round_no
from audits.pipeline.start import schedule_run
from audits.retention import PRUNE_RUN_BUDGET_S, audits_prune
from webhooks.services import webhook_deliveries_sweep

logger = logging.getLogger(__name__)

# Carried on a retried message: when the step first failed, so the retry window spans every attempt.
FIRST_FAILURE_HEADER = "sitewarden_first_failure"


class TransientRetryTask(Task):
    """A task that retries transient errors (audits.outages.is_transient_error) with jittered exponential
    backoff until `retry_window_s` has passed since the first failure, `max_retries` as the backstop."""

    retry_window_s = STEP_RETRY_WINDOW_S
    max_retries = STEP_MAX_RETRIES

    def __call__(self, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        except Retry:
            raise
        except Exception as exc:
            if not is_transient_error(exc) or self.request.is_eager:
                raise
            first = getattr(self.request, FIRST_FAILURE_HEADER, None) or time.time()
            if time.time() - first >= self.retry_window_s:
                raise
            countdown = retry_delay_s(self.request.retries)
            raise self.retry(exc=exc, countdown=countdown, headers={FIRST_FAILURE_HEADER: first}) from exc


# The reliability flags every pipeline step shares (the transient retries come from the base class).
STEP_OPTIONS = dict(base=TransientRetryTask, acks_late=True, reject_on_worker_lost=True)


@shared_task(name="audits.discover", time_limit=STEP_TIME_LIMIT_S, **STEP_OPTIONS)
def discover(audit_id: str) -> None:
    discovered = audit_discover(audit_id=audit_id)
    step_send(audit_id=audit_id, step=next_after_discovery(audit_id=audit_id, discovered=discovered))


@shared_task(
    name="crawler.crawl_chunk",
    ignore_result=False,  # a chord member: the body waits for every result
    soft_time_limit=CHUNK_SOFT_TIME_LIMIT_S,
    time_limit=CHUNK_TIME_LIMIT_S,
    **STEP_OPTIONS,
)
def crawl_chunk(audit_id: str, lease_key: str, quota: int, round_no: int | None = None) -> dict:
    if round_no is None:
        # A message sent by an older version, before the round travelled as an argument: its lease key names it.
        round_no = chunk_round_no(lease_key)
    outcome = crawl_chunk_run(audit_id=audit_id, lease_key=lease_key, quota=quota, round_no=round_no)
    if outcome.get("held_for_s"):
        # A message given back by a worker that died (reject_on_worker_lost) finds its chunk still leased to
        # the dead run: take it over once the lease runs out. A duplicate of a live run then finds it done.
        raise crawl_chunk.retry(countdown=outcome["held_for_s"] + 1, max_retries=None)
    step_send(audit_id=audit_id, step=next_after_chunk(audit_id=audit_id, round_no=round_no, outcome=outcome))
    return outcome


@shared_task(name="audits.crawl_round_done", **STEP_OPTIONS)
def crawl_round_done(results, audit_id: str, round_no: int) -> None:
    step_send(audit_id=audit_id, step=next_after_round(audit_id=audit_id, round_no=round_no))


@shared_task(
    name="audits.lighthouse",
    soft_time_limit=LIGHTHOUSE_SOFT_TIME_LIMIT_S,
    time_limit=LIGHTHOUSE_TIME_LIMIT_S,
    **STEP_OPTIONS,
)
def lighthouse(audit_id: str) -> None:
    step_send(audit_id=audit_id, step=next_after_lighthouse(ran=audit_lighthouse(audit_id=audit_id)))


@shared_task(name="audits.finalize", bind=True, time_limit=STEP_TIME_LIMIT_S, **STEP_OPTIONS)
def finalize(self, audit_id: str) -> None:
    # The message's own limit (flow.step_send: it grows with the audit's pages), else the task's (a message sent
    # without one, by an older version).
    time_limit_s = (self.request.timelimit or (None, None))[0] or STEP_TIME_LIMIT_S
    audit_finalize(audit_id=audit_id, time_limit_s=time_limit_s)


@shared_task(name="audits.changes_compute", time_limit=STEP_TIME_LIMIT_S, **STEP_OPTIONS)
def changes_compute(audit_id: str) -> None:
    """A completed audit's changes again, against the baseline chosen since (audits.services.audit_baseline_set)."""
    changes_recompute(audit_id=audit_id)


@shared_task(name="audits.pipeline_failed")
def pipeline_failed(request, exc, traceback, audit_id: str) -> None:
    """Chord error callback: a failed chunk fails the audit at once instead of waiting for the watchdog."""
    _failure_record_safely(
        audit_id=audit_id, code=classify_failure(exc), detail=f"{type(exc).__name__}: {exc}", task=request.task
    )


@shared_task(
    name="audits.record_failure",
    base=TransientRetryTask,
    acks_late=True,
    ignore_result=True,
    retry_window_s=FAILURE_RECORD_RETRY_WINDOW_S,
    max_retries=None,  # bounded by the window
)
def record_failure(audit_id: str, code: str, detail: str, task: str, lease_key: str | None = None) -> None:
    """A step's failure record that met a database outage: written once the database is back (given up
    after its window, it goes to the outbox: see _record_task_failure)."""
    failure_record(audit_id=audit_id, code=code, detail=detail, task=task, lease_key=lease_key)
    outbox_drain()  # the database answers: write what waited on disk too


@shared_task(name="audits.heal_sweep", ignore_result=True, expires=settings.CRAWL_HEAL_EVERY_S)
def heal_sweep_task() -> None:
    """The light sweep (celery-beat every CRAWL_HEAL_EVERY_S, and sent by every worker that starts): re-send
    crawl chunks whose run stopped renewing its lease, close rounds whose callback was lost."""
    heal_sweep()


@shared_task(name="audits.reconcile_sweep", ignore_result=True)
def reconcile_sweep_task() -> None:
    """The watchdog (celery-beat, every 15 minutes): reconcile every running audit, oldest first, and queue
    again webhook deliveries whose message was lost."""
    outbox_drain()
    reconcile_sweep(reconciled_by="watchdog")
    webhook_deliveries_sweep()


@shared_task(
    name="audits.prune_history",
    ignore_result=True,
    soft_time_limit=PRUNE_RUN_BUDGET_S + 5 * 60,
    time_limit=PRUNE_RUN_BUDGET_S + 10 * 60,
)
def prune_history() -> None:
    """Retention (celery-beat, hourly): old audits lose their page-level rows in bounded batches, keeping their
    summary. Not acks_late: a run killed mid-way is resumed by the next hourly one (each batch committed)."""
    audits_prune(budget_s=PRUNE_RUN_BUDGET_S)


@shared_task(name="audits.run_schedule", ignore_result=True)
def run_schedule(project_id: int) -> None:
    schedule_run(project_id=project_id)


PIPELINE_TASKS = frozenset({"audits.discover", "crawler.crawl_chunk", "audits.lighthouse", "audits.finalize"})


@task_failure.connect
def _record_task_failure(sender=None, task_id=None, exception=None, args=None, kwargs=None, **_):
    """A pipeline step that failed for good releases its leases and fails its audit at once, with a
    classified code."""
    if getattr(sender, "name", None) == "audits.record_failure" and kwargs:
        outbox_put(kwargs)  # its window is over and the database is still down: keep it for the next drain
        return
    if getattr(sender, "name", None) not in PIPELINE_TASKS or not args:
        return
    _failure_record_safely(
        audit_id=args[0],
        code=classify_failure(exception),
        detail=f"{sender.name}: {type(exception).__name__}: {exception}",
        task=sender.name,
        lease_key=args[1] if sender.name == "crawler.crawl_chunk" and len(args) > 1 else None,
    )


def _failure_record_safely(**record) -> None:
    """Write a failure record now, or — when the database is what failed — hand it to `audits.record_failure`
    (retried until the database is back) and, when the broker will not take that either, to the outbox."""
    try:
        failure_record(**record)
        return
    except Exception as exc:
        if not is_transient_db_error(exc):
            logger.exception("could not record the failure", extra={"audit_id": record["audit_id"]})
            return
    logger.warning("database unavailable: the failure of %s is recorded later", record["task"])
    try:
        record_failure.apply_async(kwargs=record, countdown=retry_delay_s(0))
    except Exception:
        outbox_put(record)


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
            reason=str(reason)[:300],
        )
    except Exception as exc:  # while the database is down, the retry itself is the record
        if not is_transient_db_error(exc):
            logger.exception("could not record the retry")


@worker_ready.connect
def _heal_on_start(sender=None, **kwargs):
    """A worker that starts (after a crash, a deploy) heals at once, and again one lease later, when the
    leases of a worker that died just before it have expired: no beat needed for the common fault."""
    try:
        heal_sweep_task.apply_async()
        heal_sweep_task.apply_async(
            countdown=settings.CRAWL_LEASE_DURATION_S + settings.CRAWL_LEASE_RENEW_EVERY_S, expires=None
        )
    except Exception:  # the broker may be what is down: beat's heal sweep comes anyway
        logger.warning("heal sweep not sent at worker start", exc_info=True)


@worker_ready.connect
def _drain_outbox_on_start(**kwargs):
    """A worker that starts writes the failure records an earlier process on this machine kept on disk."""
    try:
        outbox_drain()
    except Exception:
        logger.warning("outbox not drained at start", exc_info=True)
