"""Fences for the pipeline steps that are one task each and can run twice: finalize (only its latest run writes)
and Lighthouse (writes only while the audit is in its phase). The crawl's chunks have their own (leases with a
generation: scratchpad.services.frontier_hold), and discovery's writes are conditional updates on its phase
(audits.pipeline.discovery).

Finalize is one task, and a task can run twice: RabbitMQ hands a late-ack message to another worker when the first
one's connection drops (a host cut off from the network, a frozen VM), and the reconciler re-sends the finalize of
an audit that stopped moving. The first run does not know: cut off in the middle of the image pass, it got "no
answer" for every image, and when its link came back it wrote them as broken images into an audit the second run
had completed (the fleet test's cut-off host). Each run therefore takes the audit with a new generation
(audits.pipeline.lifecycle.finalize_claim), and every transaction a stage writes in commits only while its run's
generation is still the audit's and the audit still runs (finalize_atomic); the run a later one took over stops at
its next write or stage, with nothing written. Stages called without a run (tests, a recomputation of a completed
audit) are not fenced.

Public interface:
- FinalizeRun(audit_id, generation): what a run holds
- FinalizeSuperseded: raised in a run that no longer holds its audit (its transaction rolls back)
- finalize_atomic(run): transaction.atomic() whose commit is fenced on `run`
- finalize_hold(run): the check itself, between stages (outside a transaction it locks nothing); at most every
  FINALIZE_HEARTBEAT_EVERY_S it also moves the audit's heartbeat
- finalize_session_name(run), finalize_session_claim(run): the run's database session name
  (pg_stat_activity.application_name: which run and, by client_addr, which host)
- phase_atomic(audit_id, phase), PhaseLeft: the Lighthouse step's fence, by phase: two runs of it may both write
  (the same rows), but none once the audit moved on to finalize or ended
"""

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone

from audits.limits import FINALIZE_HEARTBEAT_EVERY_S
from audits.models import Audit


class FinalizeSuperseded(Exception):
    """This run of finalize no longer holds its audit: a later run took it over, or the audit ended."""


@dataclass
class FinalizeRun:
    audit_id: UUID | str
    generation: int
    # When this run last moved its audit's heartbeat (time.monotonic()); its claim moved it (finalize_claim).
    beat_at: float = field(default_factory=time.monotonic, compare=False)


SESSION_NAME_MAX_CHARS = 63  # PostgreSQL keeps application_name to NAMEDATALEN - 1 bytes (the names are ASCII)


def finalize_session_name(run: FinalizeRun) -> str:
    """Which run of whose finalize a database session works for, as pg_stat_activity shows it to an operator."""
    return f"sitewarden-finalize {run.audit_id} g{run.generation}"[:SESSION_NAME_MAX_CHARS]


def finalize_session_claim(run: FinalizeRun) -> None:
    """Name this connection's database session after the run (as crawl chunks name theirs)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('application_name', %s, false)", [finalize_session_name(run)])


def _still_running(audit_id, **conditions) -> bool:
    """Whether the audit still runs and meets `conditions`. Inside a transaction the audit row stays locked (FOR NO
    KEY UPDATE) until the commit: a later claim, a phase move, a cancel or a failure waits for the writes this check
    lets through, and once any of them has committed, the check fails. Outside one it locks nothing."""
    held = Audit.objects.filter(id=audit_id, status=Audit.Status.RUNNING, **conditions)
    if transaction.get_connection().in_atomic_block:
        held = held.select_for_update(no_key=True)
    return held.exists()


def finalize_hold(run: FinalizeRun | None) -> None:
    """Raise FinalizeSuperseded unless `run` still holds its audit (None: no fence). Once FINALIZE_HEARTBEAT_EVERY_S
    passed since the run's last beat, the check is the heartbeat itself: an UPDATE of the audit's last_progress_at
    on the same conditions (it locks the row as the check's SELECT … FOR NO KEY UPDATE does), so the reconciler
    does not take a finalize longer than RECONCILE_STALE_AFTER_S for a dead one and send another."""
    if run is None:
        return
    if time.monotonic() - run.beat_at < FINALIZE_HEARTBEAT_EVERY_S:
        held = _still_running(run.audit_id, finalize_generation=run.generation)
    else:
        held = _held_beat(run)
    if not held:
        raise FinalizeSuperseded(f"audit {run.audit_id}: finalize run {run.generation} superseded, or the audit ended")


def _held_beat(run: FinalizeRun) -> bool:
    beat = Audit.objects.filter(
        id=run.audit_id, status=Audit.Status.RUNNING, finalize_generation=run.generation
    ).update(last_progress_at=timezone.now())
    if beat:
        run.beat_at = time.monotonic()
    return bool(beat)


@contextmanager
def finalize_atomic(run: FinalizeRun | None):
    """transaction.atomic() for a finalize stage's writes: the check runs last, just before the commit, so the audit
    row is locked for milliseconds, not for the stage's work; a superseded run's writes roll back."""
    with transaction.atomic():
        yield
        finalize_hold(run)


class PhaseLeft(Exception):
    """The audit no longer runs in the phase a step writes for: it moved on (or ended) without this run."""


@contextmanager
def phase_atomic(audit_id, phase: str | None):
    """transaction.atomic() whose commit is fenced, as finalize_atomic's is, on the audit still running in `phase`
    (None: not fenced); else PhaseLeft rolls it back."""
    with transaction.atomic():
        yield
        if phase is not None and not _still_running(audit_id, current_phase=phase):
            raise PhaseLeft(f"audit {audit_id} is no longer in its {phase} phase")
