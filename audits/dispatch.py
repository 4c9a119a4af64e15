"""The one way services reach Celery: send a task by its NAME once the current transaction commits.

A leaf: it imports no module of ours but the Celery app, so services never import tasks and no import
cycle can run through here (HackSoft's Django-Styleguide, "this ... prevents circular imports"). Task
names are a wire contract (tests/test_task_names.py). Outside a transaction (autocommit, a task body)
`on_commit` runs at once.
"""

import logging

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


def task_send(name: str, *args, countdown: float | None = None, **options) -> None:
    """Send task `name` with `args` after commit (a signature by name: the task's own options and the
    routes apply when this process has it registered, send_task's otherwise)."""
    signature = app.signature(name, args=args, countdown=countdown, **options)
    transaction.on_commit(signature.apply_async)


def round_send(*, audit_id: str, round_no: int, chunks: list[tuple[str, int]]) -> None:
    """One crawl round as a chord after commit: a `crawler.crawl_chunk` per (lease key, quota), its task id
    being its lease key; the body `audits.crawl_round_done` plans the next round, and a failed chunk calls
    `audits.pipeline_failed` at once."""
    header = [app.signature(CRAWL_CHUNK, args=(audit_id, key, quota), task_id=key) for key, quota in chunks]
    body = app.signature(CRAWL_ROUND_DONE, args=(audit_id, round_no)).on_error(
        app.signature(PIPELINE_FAILED, args=(audit_id,))
    )
    transaction.on_commit(lambda: chord(header)(body))


def tasks_revoke(task_ids: list[str]) -> None:
    """Revoke queued tasks by id after commit; a broker that cannot broadcast is logged, not raised."""

    def revoke() -> None:
        try:
            app.control.revoke(task_ids)
        except Exception:  # the chunks see the audit's status and stop by themselves
            logger.warning("revoke failed", exc_info=True, extra={"task_ids": task_ids[:3]})

    transaction.on_commit(revoke)
