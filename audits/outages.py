"""Riding out outages of the database and the broker: which errors are transient (retry them), how long a
step waits between attempts, and failure records that survive the database being down when they are made.

A pipeline step that gives up while PostgreSQL is down cannot write its failure. The record then goes to an
outbox (a JSON file per record in OUTBOX_DIR) that whoever runs next drains — the record task's retries, a
worker that starts, the watchdog — so a failure is written late, never dropped.
"""

import json
import logging
import os
import random
import uuid
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from audits.limits import STEP_RETRY_BACKOFF_MAX_S, STEP_RETRY_BACKOFF_S, STEP_RETRY_JITTER_FRACTION
from audits.models import AuditEvent
from audits.pipeline.lifecycle import audit_event, audit_fail
from scratchpad.models import Frontier
from scratchpad.services import frontier_release

logger = logging.getLogger(__name__)

# SQLSTATEs a retry outlives: the connection broke, the server is shutting down or starting, it is a
# read-only standby (or the database was made read-only), too many connections, a lost serialisation race.
TRANSIENT_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "25006", "53300", "40001", "40P01"})
TRANSIENT_SQLSTATE_CLASSES = ("08",)  # connection exceptions
READ_ONLY_TEXT = "read-only transaction"
BROKER_ERRORS = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError, ConnectionError)


def is_transient_db_error(exc: BaseException | None) -> bool:
    """True for a database error that a later attempt can outlive (outage, failover, read-only spell).

    Every OperationalError and InterfaceError is one (connection refused, admin shutdown, a closed
    connection); other DatabaseErrors (an InternalError for a read-only transaction) only by SQLSTATE.
    """
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if not isinstance(exc, DatabaseError):
        return False
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or getattr(exc, "sqlstate", None) or ""
    if sqlstate in TRANSIENT_SQLSTATES or sqlstate.startswith(TRANSIENT_SQLSTATE_CLASSES):
        return True
    return READ_ONLY_TEXT in str(exc)


def is_transient_error(exc: BaseException | None) -> bool:
    """A transient database error or a broker connection error (a Redis or RabbitMQ restart)."""
    return is_transient_db_error(exc) or isinstance(exc, BROKER_ERRORS)


def retry_delay_s(retries: int) -> float:
    """Seconds before attempt `retries + 1`: exponential from STEP_RETRY_BACKOFF_S, capped, with jitter so
    the steps of many audits do not all come back to a recovering database at the same instant."""
    base = min(STEP_RETRY_BACKOFF_MAX_S, STEP_RETRY_BACKOFF_S * (2 ** max(0, retries)))
    return base * (1 - STEP_RETRY_JITTER_FRACTION * random.random())


def failure_record(*, audit_id, code: str, detail: str, task: str, lease_key: str | None = None) -> None:
    """Write a step's final failure: release the chunk's leases (others take its URLs at once), append the
    task_failed event, fail the audit (conditional: a finished audit keeps its outcome). Idempotent."""
    if lease_key:
        ids = list(
            Frontier.objects.filter(audit_id=audit_id, lease_key=lease_key, state=Frontier.State.LEASED).values_list(
                "id", flat=True
            )
        )
        frontier_release(audit_id=audit_id, lease_key=lease_key, ids=ids)
    already = AuditEvent.objects.filter(
        audit_id=audit_id, kind=AuditEvent.Kind.TASK_FAILED, message=detail[:500], data__task=task
    ).exists()
    if not already:
        audit_event(audit_id=audit_id, kind=AuditEvent.Kind.TASK_FAILED, message=detail, code=code, task=task)
    audit_fail(audit_id=audit_id, code=code, detail=detail)


def outbox_dir() -> Path:
    return Path(settings.SITEWARDEN_OUTBOX_DIR)


def outbox_put(record: dict) -> Path:
    """Keep a failure record on disk until the database takes it (written whole, then renamed)."""
    folder = outbox_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)
    return path


def outbox_drain() -> int:
    """Write every kept failure record; a record the database still refuses stays for the next drain.
    Returns how many were written."""
    folder = outbox_dir()
    if not folder.is_dir():
        return 0
    written = 0
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):  # another drainer took it, or a torn file from a crash
            continue
        try:
            failure_record(**record)
        except Exception as exc:
            if is_transient_db_error(exc):
                break  # still down: keep this record and the rest
            logger.exception("dropping an unwritable failure record", extra={"record": record})
        else:
            written += 1
        path.unlink(missing_ok=True)
    return written
