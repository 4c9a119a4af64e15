"""The one way services reach Celery: send a task by its NAME once the current transaction commits.

A leaf: it imports no module of ours but the Celery app, so services never import tasks and no import
cycle can run through here (HackSoft's Django-Styleguide, "this ... prevents circular imports"). Task
names are a wire contract (tests/test_task_names.py). Outside a transaction (autocommit, a task body)
`on_commit` runs at once.
"""

import logging
from bisect import bisect_right

from celery import chord
from django.db import transaction

from config.celery import app

logger = logging.getLogger(__name__)

DISCOVER = "audits.discover"
CRAWL_CHUNK = "crawler.crawl_chunk"
CRAWL_ROUND_DONE = "audits.crawl_round_done"
LIGHTHOUSE = "audits.lighthouse"
FINALIZE = "audits.finalize"
PIPELINE_FAILED = "audits.pipeline_failed"
DELIVER_WEBHOOK = "audits.deliver_webhook"
DELIVER_ALERT = "alerts.deliver_alert"
SWEEP_ALERTS = "alerts.sweep_deliveries"
CHANGES_COMPUTE = "audits.changes_compute"  # a completed audit's changes against a baseline chosen later
RENDER_REPORT_PDF = "dashboard.render_report_pdf"  # on the `reports` queue (CELERY_TASK_ROUTES)
PRUNE_HISTORY = "audits.prune_history"  # hourly (celery-beat): audits.retention
SEND_REPORT_EMAIL = "dashboard.send_report_email"  # sent with queue="reports": it prints the PDF it attaches
REPORT_EMAILS_SWEEP = "dashboard.report_emails_sweep"  # beat: the report e-mail outbox's due rows sent again

# Fair sharing between audits (issue 15). Every message carries an urgency, 0 (most urgent) to MAX_URGENCY: the
# short steps that move an audit on (discovery, a round's end, Lighthouse, finalize) are 0, a crawl chunk is
# 1 + how far its audit has got (pages done when the caller knows them, else its round number). A free
# worker process therefore takes the next step of a young audit before another chunk of a 100,000-page one:
# the big crawl keeps every idle slot, the small audit waits at most for one running chunk per step, not for
# the big audit's whole backlog. Nothing starves: an audit's urgency only grows as it crawls, a big audit's
# chunks are still served whenever no younger message waits, and the steps are a few short tasks per round.
MAX_URGENCY = 9
# Pages done from which a chunk is one level less urgent: doubling steps, so 100 pages done or 50,000 differ
# by seven levels while 40,000 and 50,000 share one.
URGENCY_PAGES_STEPS = (250, 500, 1000, 2000, 4000, 8000, 16_000, 32_000)
_STEP_TASKS = frozenset({DISCOVER, CRAWL_ROUND_DONE, LIGHTHOUSE, FINALIZE, PIPELINE_FAILED})


def chunk_urgency(*, round_no: int, pages_done: int | None = None) -> int:
    """How far an audit has got, as the urgency of its crawl chunks: 1 for a young audit, MAX_URGENCY for one
    tens of thousands of pages in."""
    if pages_done is not None:
        return 1 + bisect_right(URGENCY_PAGES_STEPS, pages_done)
    return max(1, min(round_no, MAX_URGENCY))


def message_priority(urgency: int) -> int | None:
    """The broker's priority number for an urgency. Redis (kombu): one list per priority step, the lowest
    number popped first (`priority_steps` 0-9 in config.settings.base). RabbitMQ: the highest first, honoured
    by queues declared with x-max-priority (SITEWARDEN_AMQP_PRIORITY_QUEUES) and ignored by the others. The
    embedded filesystem transport has no priorities: None."""
    broker = str(app.conf.broker_url or "")
    urgency = max(0, min(urgency, MAX_URGENCY))
    if broker.startswith(("redis://", "rediss://", "sentinel://", "redis+socket://")):
        return urgency
    if broker.startswith(("amqp://", "amqps://", "pyamqp://")):
        return MAX_URGENCY - urgency
    return None


def _priority_options(name: str, options: dict, *, urgency: int | None = None) -> dict:
    if "priority" in options:
        return options
    if urgency is None and name in _STEP_TASKS:
        urgency = 0
    elif urgency is None and name == CRAWL_CHUNK:
        urgency = MAX_URGENCY  # a re-sent chunk (round_heal) that did not say: not ahead of a young audit's
    priority = None if urgency is None else message_priority(urgency)
    return options if priority is None else {**options, "priority": priority}


def task_send(name: str, *args, countdown: float | None = None, urgency: int | None = None, **options) -> None:
    """Send task `name` with `args` after commit (a signature by name: the task's own options and the
    routes apply when this process has it registered, send_task's otherwise). Pipeline steps go first
    (urgency 0); a re-sent chunk should give its `urgency` (chunk_urgency)."""
    signature = app.signature(name, args=args, countdown=countdown, **_priority_options(name, options, urgency=urgency))
    transaction.on_commit(signature.apply_async)


def round_send(*, audit_id: str, round_no: int, chunks: list[tuple[str, int]], pages_done: int | None = None) -> None:
    """One crawl round as a chord after commit: a `crawler.crawl_chunk` per (lease key, quota), its task id
    being its lease key, its round a keyword argument; the body `audits.crawl_round_done` plans the next round,
    and a failed chunk calls `audits.pipeline_failed` at once. The chunks' priority falls as the audit grows
    (chunk_urgency: its `pages_done` when given, else the round number); the body and the error callback are steps
    (first)."""
    chunk_options = _priority_options(CRAWL_CHUNK, {}, urgency=chunk_urgency(round_no=round_no, pages_done=pages_done))
    header = [
        app.signature(
            CRAWL_CHUNK, args=(audit_id, key, quota), kwargs={"round_no": round_no}, task_id=key, **chunk_options
        )
        for key, quota in chunks
    ]
    body = app.signature(
        CRAWL_ROUND_DONE, args=(audit_id, round_no), **_priority_options(CRAWL_ROUND_DONE, {})
    ).on_error(app.signature(PIPELINE_FAILED, args=(audit_id,), **_priority_options(PIPELINE_FAILED, {})))
    transaction.on_commit(lambda: chord(header)(body))


def tasks_revoke(task_ids: list[str]) -> None:
    """Revoke queued tasks by id after commit; a broker that cannot broadcast is logged, not raised."""

    def revoke() -> None:
        try:
            app.control.revoke(task_ids)
        except Exception:  # the chunks see the audit's status and stop by themselves
            logger.warning("revoke failed", exc_info=True, extra={"task_ids": task_ids[:3]})

    transaction.on_commit(revoke)
