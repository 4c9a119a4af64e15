"""audits.pipeline.lifecycle: what every stage uses to move an audit. A phase moves only a running audit (with one
event per change), the one conditional finish keeps the first outcome, a cancel revokes its round's chunks by
their lease keys, and a step's exception becomes a failure code."""

import pytest
from billiard.exceptions import WorkerLostError
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError

from audits import dispatch
from audits.limits import ERROR_DETAIL_CHARS
from audits.models import Audit, AuditEvent
from audits.pipeline.lifecycle import audit_cancel, audit_complete, audit_fail, audit_set_phase, classify_failure
from audits.pipeline.rounds import chunk_task_id
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _running_audit() -> Audit:
    return audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"), start_url="http://127.0.0.1:9/", dispatch=False
    )


def _phase_events(audit) -> list[str]:
    return list(AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.PHASE).values_list("message", flat=True))


def test_a_phase_moves_a_running_audit_with_one_event_per_change():
    audit = _running_audit()
    before = _phase_events(audit)
    assert audit_set_phase(audit_id=audit.id, phase=Audit.Phase.CRAWLING)
    assert audit_set_phase(audit_id=audit.id, phase=Audit.Phase.CRAWLING)  # the same phase: no second event
    assert _phase_events(audit) == [*before, "Phase crawling"]
    assert Audit.objects.get(id=audit.id).current_phase == Audit.Phase.CRAWLING


def test_an_audit_that_ended_keeps_its_phase():
    audit = _running_audit()
    assert audit_fail(audit_id=audit.id, code="unknown", detail="x")
    assert not audit_set_phase(audit_id=audit.id, phase=Audit.Phase.FINALIZING)
    assert Audit.objects.get(id=audit.id).current_phase == Audit.Phase.FAILED


def test_a_failure_names_its_phase_and_keeps_a_bounded_detail_and_the_first_outcome_stays():
    audit = _running_audit()
    audit_set_phase(audit_id=audit.id, phase=Audit.Phase.CRAWLING)
    assert audit_fail(audit_id=audit.id, code="db_error", detail="d" * (ERROR_DETAIL_CHARS + 100))
    assert not audit_complete(audit_id=audit.id)
    assert not audit_fail(audit_id=audit.id, code="worker_lost")
    audit.refresh_from_db()
    assert (audit.status, audit.error_code, audit.failed_phase) == (Audit.Status.FAILED, "db_error", "crawling")
    assert len(audit.error_detail) == ERROR_DETAIL_CHARS


def test_a_cancel_revokes_the_current_rounds_chunks_by_their_lease_keys(monkeypatch, settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 3
    revoked: list[list[str]] = []
    monkeypatch.setattr(dispatch, "tasks_revoke", revoked.append)
    audit = _running_audit()
    Audit.objects.filter(id=audit.id).update(crawl_round=4)
    assert audit_cancel(audit=audit)
    assert not audit_cancel(audit=audit)  # once
    assert revoked == [[chunk_task_id(audit.id, 4, i) for i in range(3)]]
    assert Audit.objects.get(id=audit.id).status == Audit.Status.CANCELLED


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (MemoryError(), "oom"),
        (WorkerLostError("lost"), "worker_lost"),
        (SoftTimeLimitExceeded(), "step_timeout"),
        (OperationalError("connection refused"), "db_error"),
        (RuntimeError("the chord member raised WorkerLostError('x')"), "worker_lost"),  # named in a chord's error
        (ValueError("x"), "unknown"),
        (None, "unknown"),
    ],
)
def test_a_steps_exception_becomes_a_failure_code(exc, code):
    assert classify_failure(exc) == code
