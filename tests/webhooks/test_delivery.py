"""Webhook deliveries run by the task (eagerly here): signature, retries with backoff, the delivery log,
the address guard at send time, and the audit_finished signal queueing them."""

import hashlib
import hmac
import json

import pytest

from audits.pipeline.lifecycle import audit_cancel
from audits.signals import audit_finished
from tests.factories import AuditFactory
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import (
    WEBHOOK_MAX_ATTEMPTS,
    webhook_backoff_s,
    webhook_create,
    webhook_deliveries_queue,
    webhook_verify,
)
from webhooks.tasks import _on_audit_finished, deliver_webhook

SECRET = "a-shared-secret-for-the-receiver"


def verify(received, secret=SECRET) -> bool:
    """What a receiver does: HMAC-SHA256 over "<timestamp>.<raw body>"."""
    timestamp = received.headers["x-sitewarden-timestamp"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest("sha256=" + expected, received.headers["x-sitewarden-signature"])


@pytest.fixture
def finished(project):
    audit = AuditFactory(project=project)
    audit_cancel(audit=audit)
    audit.refresh_from_db()
    return audit


def queue(project, audit, url, **kwargs):
    webhook_create(project=project, url=url, secret=SECRET, **kwargs)
    (delivery,) = webhook_deliveries_queue(audit=audit, reconciled_by=None, duration_s=1.5)
    return delivery


def test_signed_delivery_retried_after_a_500(project, finished, receiver, settings):
    settings.WEBHOOK_RETRY_BASE_S = 0
    receiver.statuses = [500]
    delivery = queue(project, finished, receiver.url)
    deliver_webhook.apply(args=[str(delivery.id)])
    delivery.refresh_from_db()
    assert delivery.status == "succeeded", delivery.last_error
    assert delivery.attempts == 2 and delivery.last_response_code == 200 and delivery.delivered_at
    assert len(receiver.received) == 2
    first, second = receiver.received
    assert first.body == second.body, "a retry sends the same body"
    for got in receiver.received:
        assert verify(got)
        assert webhook_verify(
            SECRET, got.headers["x-sitewarden-timestamp"], got.body, got.headers["x-sitewarden-signature"]
        )
        assert not verify(got, secret="another-secret-of-some-length")
        assert got.headers["x-sitewarden-event"] == "audit.finished"
        assert got.headers["x-sitewarden-delivery"] == str(delivery.id)
        assert got.headers["content-type"] == "application/json"
    payload = second.json()
    assert payload["event"] == "audit.finished" and payload["delivery_id"] == str(delivery.id)
    assert payload["audit"]["id"] == str(finished.id) and payload["audit"]["status"] == "cancelled"
    assert payload["audit"]["duration_s"] == 1.5


def test_tampered_body_fails_verification(project, finished, receiver):
    delivery = queue(project, finished, receiver.url)
    deliver_webhook.apply(args=[str(delivery.id)])
    (got,) = receiver.received
    got.body = got.body.replace(b"cancelled", b"completed")
    assert not verify(got)


def test_gives_up_after_the_bounded_attempts(project, finished, receiver, settings):
    settings.WEBHOOK_RETRY_BASE_S = 0
    receiver.statuses = [503] * 20
    delivery = queue(project, finished, receiver.url)
    deliver_webhook.apply(args=[str(delivery.id)])
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.attempts == WEBHOOK_MAX_ATTEMPTS == len(receiver.received)
    assert delivery.last_response_code == 503 and delivery.last_error.startswith("HTTP 503")


def test_a_4xx_answer_is_not_retried(project, finished, receiver):
    receiver.statuses = [410]
    delivery = queue(project, finished, receiver.url)
    deliver_webhook.apply(args=[str(delivery.id)])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_response_code) == ("failed", 1, 410)


def test_connection_refused_is_retried_then_fails(project, finished, settings):
    settings.WEBHOOK_RETRY_BASE_S = 0
    delivery = queue(project, finished, "http://127.0.0.1:9/nothing-listens")
    deliver_webhook.apply(args=[str(delivery.id)])
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == WEBHOOK_MAX_ATTEMPTS
    assert delivery.last_response_code is None and "Connection" in delivery.last_error


def test_send_time_guard_refuses_private_addresses(project, finished, receiver, settings):
    """The URL was accepted earlier (or its DNS changed since): with private targets off, nothing is sent."""
    delivery = queue(project, finished, receiver.url)
    settings.ALLOW_PRIVATE_TARGETS = False
    deliver_webhook.apply(args=[str(delivery.id)])
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 1
    assert "not public" in delivery.last_error
    assert receiver.received == []


def test_backoff_is_exponential_and_bounded(settings):
    settings.WEBHOOK_RETRY_BASE_S = 10
    assert [webhook_backoff_s(n) for n in range(5)] == [10, 20, 40, 80, 160]
    assert webhook_backoff_s(30) == 900


def test_audit_finished_signal_queues_one_delivery_per_enabled_webhook(
    project, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("webhooks.services.task_send", lambda name, delivery_id: sent.append((name, delivery_id)))
    hook = webhook_create(project=project, url="http://127.0.0.1:9/a")
    webhook_create(project=project, url="http://127.0.0.1:9/b", enabled=False)
    audit = AuditFactory(project=project)
    with django_capture_on_commit_callbacks(execute=True):
        assert audit_cancel(audit=audit)
    (delivery,) = WebhookDelivery.objects.all()
    assert delivery.webhook == hook and delivery.audit_ref == audit.id and delivery.status == "pending"
    assert sent == [("audits.deliver_webhook", str(delivery.id))]
    assert json.loads(json.dumps(delivery.payload))["audit"]["status"] == "cancelled"
    # Sent twice (it is not, but a receiver must not double the delivery): still one row.
    audit.refresh_from_db()
    audit_finished.send(sender=type(audit), audit=audit, reconciled_by=None, duration_s=None)
    assert WebhookDelivery.objects.count() == 1


def test_receiver_is_connected_and_never_raises(project, monkeypatch):
    assert any(r[1]() is _on_audit_finished for r in audit_finished.receivers if callable(r[1]))

    def broken(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr("webhooks.services.webhook_deliveries_queue", broken)
    audit = AuditFactory(project=project)
    _on_audit_finished(sender=None, audit=audit)  # logged, not raised


def test_deleted_webhook_or_finished_delivery_is_skipped(project, finished, receiver):
    delivery = queue(project, finished, receiver.url)
    deliver_webhook.apply(args=[str(delivery.id)])
    assert deliver_webhook.apply(args=[str(delivery.id)]).get() == "skipped"
    Webhook.objects.all().delete()
    assert deliver_webhook.apply(args=[str(delivery.id)]).get() == "skipped"
    assert len(receiver.received) == 1
