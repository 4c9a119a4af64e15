"""The outbox: an audit's alert written once (one delivery per enabled channel, one notification per member),
claimed by one worker only, retried with backoff, swept when due or left behind by a dead worker."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from alerts.models import AlertChannel, AlertDelivery, Notification
from alerts.services import alert_deliveries_queue, alert_deliveries_sweep
from alerts.services.outbox import (
    ALERT_MAX_ATTEMPTS,
    alert_backoff_s,
    alert_delivery_claim,
    alert_delivery_finish,
)
from audits.models import Audit
from audits.signals import audit_finished
from tests.alerts.conftest import Direction, Field, change
from tests.factories import AlertChannelFactory, AlertDeliveryFactory, MembershipFactory, UserFactory

Status = AlertDelivery.Status


@pytest.fixture
def sent(monkeypatch):
    """The ids handed to the delivery task (by name, after commit), instead of the broker."""
    ids = []
    monkeypatch.setattr("alerts.services.outbox.task_send", lambda name, *args, **kw: ids.append((name, *args)))
    return ids


@pytest.mark.django_db
def test_one_delivery_per_enabled_channel_and_one_notification_per_member(
    pair, sent, django_capture_on_commit_callbacks
):
    project, _, audit = pair
    MembershipFactory(user=UserFactory(email="colleague@site.test"), account=project.account)
    AlertChannelFactory(project=project, kind=AlertChannel.Kind.SLACK)
    AlertChannelFactory(project=project, kind=AlertChannel.Kind.TEAMS, enabled=False)
    change(audit, "/a", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")

    with django_capture_on_commit_callbacks(execute=True):
        audit_finished.send(sender=Audit, audit=audit)
    deliveries = AlertDelivery.objects.filter(audit_ref=audit.id)
    assert sorted(d.channel.kind for d in deliveries) == ["email", "slack"]
    assert sorted(name for name, _ in sent) == ["alerts.deliver_alert"] * 2
    payload = deliveries[0].payload
    assert payload["findings"][0]["examples"] == ["http://site.test/a"]
    assert payload["subject"] == f"[Sitewarden] {project.name}: 1 indexable page became non-indexable"
    notes = Notification.objects.filter(audit_ref=audit.id).order_by("user__email")
    assert [n.user.email for n in notes] == ["colleague@site.test", "owner@site.test"]
    assert notes[0].link == f"/audits/{audit.id}/changes/" and notes[0].read_at is None

    # The same signal again (a reconciler and finalize both announcing): nothing new is written or sent.
    with django_capture_on_commit_callbacks(execute=True):
        audit_finished.send(sender=Audit, audit=audit)
        assert alert_deliveries_queue(audit=audit) == []
    assert AlertDelivery.objects.filter(audit_ref=audit.id).count() == 2
    assert Notification.objects.filter(audit_ref=audit.id).count() == 2
    assert len(sent) == 2


@pytest.mark.django_db
def test_no_finding_writes_nothing(pair, sent):
    _, _, audit = pair
    audit_finished.send(sender=Audit, audit=audit)
    assert not AlertDelivery.objects.exists() and not Notification.objects.exists()


@pytest.mark.django_db
def test_backoff_then_failed_after_the_last_attempt():
    delivery = AlertDeliveryFactory()
    delays = []
    for attempt in range(1, ALERT_MAX_ATTEMPTS + 1):
        claim = alert_delivery_claim(delivery_id=delivery.id)
        assert claim.attempt == attempt
        assert alert_delivery_claim(delivery_id=delivery.id) is None  # held
        outcome = alert_delivery_finish(claim=claim, ok=False, error="HTTP 500: no")
        delivery.refresh_from_db()
        if attempt < ALERT_MAX_ATTEMPTS:
            assert outcome == "retry" and delivery.status == Status.PENDING
            delays.append(round((delivery.next_attempt_at - delivery.last_attempt_at).total_seconds()))
            assert alert_delivery_claim(delivery_id=delivery.id) is None  # not due yet
            AlertDelivery.objects.filter(id=delivery.id).update(next_attempt_at=timezone.now())  # time passes
    assert outcome == "failed" and delivery.status == Status.FAILED and delivery.attempts == ALERT_MAX_ATTEMPTS
    assert delivery.last_error == "HTTP 500: no"
    assert delays == [alert_backoff_s(n) for n in range(1, ALERT_MAX_ATTEMPTS)] == [60, 120, 240, 480, 960]
    assert alert_delivery_claim(delivery_id=delivery.id) is None


@pytest.mark.django_db
def test_a_worker_that_outlived_its_lease_writes_nothing():
    delivery = AlertDeliveryFactory()
    stale = alert_delivery_claim(delivery_id=delivery.id)
    later = timezone.now() + timedelta(hours=1)
    fresh = alert_delivery_claim(delivery_id=delivery.id, now=later)  # the lease expired: another worker
    assert fresh.attempt == 2
    assert alert_delivery_finish(claim=stale, ok=True) == "lost"
    assert alert_delivery_finish(claim=fresh, ok=True) == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_two_workers_claiming_at_once_one_gets_it():
    deliveries = [AlertDeliveryFactory() for _ in range(5)]
    for delivery in deliveries:
        barrier, got = threading.Barrier(4), []

        def claim(delivery_id=delivery.id, barrier=barrier, got=got):
            try:
                barrier.wait()
                got.append(alert_delivery_claim(delivery_id=delivery_id))
            finally:
                connection.close()

        threads = [threading.Thread(target=claim) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(c is not None for c in got) == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (Status.SENDING, 1)


@pytest.mark.django_db
def test_the_sweep_sends_what_is_due_and_takes_back_dead_leases(sent):
    now = timezone.now()
    fresh = AlertDeliveryFactory()
    lost = AlertDeliveryFactory()
    AlertDelivery.objects.filter(id=lost.id).update(created_at=now - timedelta(hours=1))
    due = AlertDeliveryFactory(attempts=1, next_attempt_at=now - timedelta(seconds=1))
    waiting = AlertDeliveryFactory(attempts=1, next_attempt_at=now + timedelta(minutes=5))
    dead = AlertDeliveryFactory(status=Status.SENDING, attempts=1, lease_until=now - timedelta(seconds=1))
    alive = AlertDeliveryFactory(status=Status.SENDING, attempts=1, lease_until=now + timedelta(minutes=2))
    last = AlertDeliveryFactory(
        status=Status.SENDING, attempts=ALERT_MAX_ATTEMPTS, lease_until=now - timedelta(seconds=1)
    )
    done = AlertDeliveryFactory(status=Status.SUCCEEDED, attempts=1)

    swept = set(alert_deliveries_sweep(now=now))
    assert swept == {lost.id, due.id, dead.id}
    assert {args[0] for _, *args in sent} == {str(i) for i in swept}
    for row, status in (
        (dead, Status.PENDING),
        (alive, Status.SENDING),
        (last, Status.FAILED),
        (done, Status.SUCCEEDED),
    ):
        row.refresh_from_db()
        assert row.status == status
    assert alert_delivery_claim(delivery_id=dead.id).attempt == 2  # a new worker takes it
    fresh.refresh_from_db()
    waiting.refresh_from_db()
    assert fresh.status == waiting.status == Status.PENDING
