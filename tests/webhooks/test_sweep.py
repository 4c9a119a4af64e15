"""The watchdog queues again a webhook delivery whose message was lost, and a real worker delivers it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.waits import wait_until
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_create, webhook_deliveries_queue, webhook_deliveries_sweep, webhook_verify

pytestmark = pytest.mark.django_db(transaction=True)


def _lost_delivery(receiver, monkeypatch):
    """A delivery row whose message never reached the broker (it was down when the audit finished)."""
    project = ProjectFactory(base_url="http://127.0.0.1:9/")
    webhook = webhook_create(project=project, url=receiver.url)
    audit = audit_start(project=project, start_url="http://127.0.0.1:9/", max_pages=5, dispatch=False)
    with monkeypatch.context() as patch:
        patch.setattr("webhooks.services.webhook_delivery_dispatch", lambda delivery_id: None)
        (delivery,) = webhook_deliveries_queue(audit=audit)
    return webhook, audit, delivery


def test_lost_delivery_is_queued_again_by_the_sweep_and_delivered(receiver, celery_worker_process, monkeypatch):
    webhook, audit, lost = _lost_delivery(receiver, monkeypatch)
    _, _, recent = _lost_delivery(receiver, monkeypatch)
    WebhookDelivery.objects.filter(id=lost.id).update(created_at=timezone.now() - timedelta(hours=1))

    assert webhook_deliveries_sweep() == [lost.id]  # the recent one may still have its message queued
    wait_until(lambda: receiver.received, 60, "the lost delivery at the receiver", every_s=0.2)
    lost.refresh_from_db()
    assert (lost.status, lost.attempts) == ("succeeded", 1)
    (got,) = receiver.received
    assert got.json()["audit"]["id"] == str(audit.id)
    assert webhook_verify(
        webhook.secret, got.headers["x-sitewarden-timestamp"], got.body, got.headers["x-sitewarden-signature"]
    )
    recent.refresh_from_db()
    assert (recent.status, recent.attempts) == ("pending", 0)
