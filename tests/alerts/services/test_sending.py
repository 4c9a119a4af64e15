"""One attempt of a delivery on each channel, against real receivers on 127.0.0.1: a Slack-style incoming webhook
(the test's HTTP server), Teams, the project's signed webhooks, a real SMTP server; backoff and failure recorded
for a receiver that answers 500; the address guard."""

import json

import pytest

from alerts.models import AlertChannel, AlertDelivery
from alerts.services.outbox import alert_deliveries_queue
from alerts.services.sending import alert_delivery_attempt
from alerts.tasks import deliver_alert
from tests.alerts.conftest import SITE, Direction, Field, change
from tests.factories import AlertChannelFactory
from tests.support.smtp import smtp_server
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_create, webhook_verify
from webhooks.tasks import deliver_webhook

pytestmark = pytest.mark.django_db
Kind, Status = AlertChannel.Kind, AlertDelivery.Status


@pytest.fixture
def alert(pair, monkeypatch):
    """The pair's audit with a page noindexed and one now 404; deliveries are queued but not sent by a broker."""
    project, _, audit = pair
    monkeypatch.setattr("alerts.services.outbox.task_send", lambda *a, **kw: None)
    change(audit, "/noindexed", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    change(audit, "/removed", Field.STATUS, Direction.CHANGED, "200", "404")
    return project, audit


def delivery_for(project, audit, kind, target=""):
    project.alert_channels.update(enabled=False)
    AlertChannelFactory(project=project, kind=kind, target=target)
    (delivery,) = alert_deliveries_queue(audit=audit)
    return delivery


def test_slack_receives_text_and_blocks_once(alert, receiver):
    project, audit = alert
    delivery = delivery_for(project, audit, Kind.SLACK, receiver.url)
    assert deliver_alert.apply(args=[str(delivery.id)]).get() == "succeeded"
    assert deliver_alert.apply(args=[str(delivery.id)]).get() == "skipped"  # a duplicate message
    (got,) = receiver.received
    body = got.json()
    assert got.headers["content-type"] == "application/json"
    for url in (SITE + "/noindexed", SITE + "/removed"):
        assert url in body["text"]
        assert any(url in b.get("text", {}).get("text", "") for b in body["blocks"])
    assert body["blocks"][0]["type"] == "header"
    assert f"/audits/{audit.id}/changes/?field=indexability&direction=down" in json.dumps(body["blocks"])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (Status.SUCCEEDED, 1, "")
    assert delivery.delivered_at and delivery.lease_until is None


def test_a_500_is_retried_with_backoff_and_recorded(alert, receiver):
    project, audit = alert
    receiver.statuses = [500]
    delivery = delivery_for(project, audit, Kind.SLACK, receiver.url)
    assert alert_delivery_attempt(delivery_id=delivery.id) == "retry"
    delivery.refresh_from_db()
    assert delivery.status == Status.PENDING and delivery.attempts == 1
    assert delivery.last_error == "HTTP 500: receiver says no"
    assert 59 <= (delivery.next_attempt_at - delivery.last_attempt_at).total_seconds() <= 61
    assert alert_delivery_attempt(delivery_id=delivery.id) == "skipped"  # not due: nothing is sent
    assert len(receiver.received) == 1


def test_a_404_fails_at_once(alert, receiver):
    project, audit = alert
    receiver.statuses = [404]
    delivery = delivery_for(project, audit, Kind.TEAMS, receiver.url)
    assert alert_delivery_attempt(delivery_id=delivery.id) == "failed"
    delivery.refresh_from_db()
    assert delivery.status == Status.FAILED and delivery.last_error.startswith("HTTP 404")


def test_teams_gets_an_adaptive_card(alert, receiver):
    project, audit = alert
    delivery = delivery_for(project, audit, Kind.TEAMS, receiver.url)
    assert alert_delivery_attempt(delivery_id=delivery.id) == "succeeded"
    (got,) = receiver.received
    message = got.json()
    assert message["type"] == "message"
    (attachment,) = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["actions"][0]["type"] == "Action.OpenUrl"
    texts = "\n".join(block["text"] for block in card["body"])
    assert SITE + "/noindexed" in texts and SITE + "/removed" in texts


def test_the_address_guard_refuses_a_private_receiver(alert, receiver, settings):
    project, audit = alert
    delivery = delivery_for(project, audit, Kind.SLACK, receiver.url)
    settings.ALLOW_PRIVATE_TARGETS = False
    assert alert_delivery_attempt(delivery_id=delivery.id) == "failed"
    delivery.refresh_from_db()
    assert delivery.last_error.startswith("refused: the receiver's address is not public")
    assert receiver.received == []


def test_the_projects_signed_webhooks_get_audit_alert(alert, receiver):
    project, audit = alert
    webhook = webhook_create(project=project, url=receiver.url, secret="a-shared-secret-for-the-receiver")
    delivery = delivery_for(project, audit, Kind.WEBHOOK)
    assert alert_delivery_attempt(delivery_id=delivery.id) == "succeeded"
    (queued,) = WebhookDelivery.objects.filter(event="audit.alert")
    assert queued.audit_ref == audit.id and queued.webhook == webhook
    deliver_webhook.apply(args=[str(queued.id)])
    (got,) = receiver.received
    assert got.headers["x-sitewarden-event"] == "audit.alert"
    assert webhook_verify(webhook.secret, got.headers["x-sitewarden-timestamp"], got.body,
                          got.headers["x-sitewarden-signature"])  # fmt: skip
    body = got.json()
    assert body["event"] == "audit.alert" and body["alert_delivery_id"] == str(delivery.id)
    assert body["alert"]["findings"][0]["examples"] == [SITE + "/noindexed"]


def test_a_webhook_channel_without_webhooks_fails(alert):
    project, audit = alert
    delivery = delivery_for(project, audit, Kind.WEBHOOK)
    assert alert_delivery_attempt(delivery_id=delivery.id) == "failed"
    delivery.refresh_from_db()
    assert delivery.last_error == "The project has no enabled webhook"


def test_email_to_the_members_over_smtp(alert, settings):
    project, audit = alert
    (delivery,) = alert_deliveries_queue(audit=audit)  # the project's default channel: e-mail to its members
    with smtp_server() as server:
        for name, value in server.settings().items():
            setattr(settings, name, value)
        assert alert_delivery_attempt(delivery_id=delivery.id) == "succeeded"
        (message,) = server.messages
    assert message.rcpt_tos == ["owner@site.test"]
    assert message.subject == f"[Sitewarden] {project.name}: 1 indexable page became non-indexable (and 1 more)"
    text = message.text().replace("\r\n", "\n")
    assert "* 1 indexable page became non-indexable\n  - http://site.test/noindexed\n" in text
    assert "* 1 page became broken (4xx or 5xx)\n  - http://site.test/removed\n" in text
    assert f"/audits/{audit.id}/changes/?field=status" in text
    assert message.message["Message-ID"] == f"<alert-{delivery.id}@sitewarden>"


def test_an_smtp_server_that_is_down_is_retried(alert, settings):
    project, audit = alert
    (delivery,) = alert_deliveries_queue(audit=audit)
    with smtp_server() as server:
        port = server.port
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    assert alert_delivery_attempt(delivery_id=delivery.id) == "retry"
    delivery.refresh_from_db()
    assert "ConnectionRefusedError" in delivery.last_error
