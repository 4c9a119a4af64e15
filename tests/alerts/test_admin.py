"""The admin for alerts: rules and channels saved through alerts.services (a private or malformed target is refused
like in the dashboard), deliveries read-only with "send again", notifications listed."""

import pytest
from django.urls import reverse

from alerts.models import AlertChannel, AlertDelivery
from tests.admin.conftest import admin_client  # noqa: F401  (the fixture)
from tests.factories import AlertDeliveryFactory, NotificationFactory

pytestmark = pytest.mark.django_db


def test_every_alert_model_has_a_list_and_a_change_page(admin_client, pair):  # noqa: F811
    project, _, audit = pair
    delivery = AlertDeliveryFactory(channel=project.alert_channels.get(), audit=audit, status="failed")
    note = NotificationFactory(user=project.owner, project=project, audit=audit)
    rule = project.alert_rules.first()
    for model, obj in (("alertrule", rule), ("alertchannel", delivery.channel), ("alertdelivery", delivery),
                       ("notification", note)):  # fmt: skip
        assert admin_client.get(reverse(f"admin:alerts_{model}_changelist")).status_code == 200
        assert admin_client.get(reverse(f"admin:alerts_{model}_change", args=[obj.pk])).status_code == 200
    assert admin_client.get(reverse("admin:alerts_alertdelivery_add")).status_code == 403


def test_a_channel_is_saved_through_the_service(admin_client, pair, settings):  # noqa: F811
    project, _, _ = pair
    settings.ALLOW_PRIVATE_TARGETS = False
    url = reverse("admin:alerts_alertchannel_add")
    form = {"project": project.id, "kind": "slack", "target": "http://127.0.0.1:9/hook", "enabled": "on",
            "deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0"}  # fmt: skip
    refused = admin_client.post(url, form)
    assert refused.status_code == 200 and b"errornote" in refused.content
    assert not AlertChannel.objects.filter(kind="slack").exists()
    settings.ALLOW_PRIVATE_TARGETS = True  # a made-up host: not resolved
    form["target"] = "https://hooks.slack.test/services/T/B/x"
    assert admin_client.post(url, form).status_code == 302
    (channel,) = AlertChannel.objects.filter(kind="slack")
    assert channel.target == "https://hooks.slack.test/services/T/B/x"


def test_send_again(admin_client, pair, monkeypatch):  # noqa: F811
    project, _, audit = pair
    sent = []
    monkeypatch.setattr("alerts.services.outbox.task_send", lambda name, *args, **kw: sent.append(args[0]))
    delivery = AlertDeliveryFactory(
        channel=project.alert_channels.get(), audit=audit, status="failed", attempts=6, last_error="HTTP 500"
    )
    admin_client.post(
        reverse("admin:alerts_alertdelivery_changelist"),
        {"action": "send_again", "_selected_action": [str(delivery.pk)]},
    )
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (AlertDelivery.Status.PENDING, 0, "")
    assert sent == [str(delivery.id)]
