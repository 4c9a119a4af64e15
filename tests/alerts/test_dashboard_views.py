"""The dashboard's alert screens: a project's rules and channels (saved through alerts.services), the test alert,
the failing deliveries on the project's screen, and notifications (the unread count in the header, the list,
opening one marks it read); another account sees none of it."""

import pytest
from django.urls import reverse

from alerts.models import AlertChannel, AlertDelivery, AlertRule, Notification
from tests.factories import AlertDeliveryFactory, NotificationFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db
Kind = AlertRule.Kind


@pytest.fixture
def signed_in(client, pair):
    project, _, _ = pair
    client.force_login(project.owner)
    return client


def test_settings_list_every_rule_and_the_default_channel(signed_in, pair):
    project, _, _ = pair
    response = signed_in.get(reverse("audits:project-alerts", args=[project.id]))
    assert response.status_code == 200
    assert [r["kind"] for r in response.context["rules"]] == list(Kind.values)
    assert all(r["enabled"] for r in response.context["rules"])
    (channel,) = response.context["channels"]
    assert channel.kind == "email" and channel.label == "The account's members"
    assert b'placeholder="5"' in response.content and b'placeholder="20"' in response.content


def test_rules_are_saved_and_a_bad_threshold_is_refused(signed_in, pair):
    project, _, _ = pair
    url = reverse("audits:project-alerts", args=[project.id])
    form = {f"{k}-enabled": "on" for k in Kind.values if k != Kind.BECAME_REDIRECT}
    form.update({"score-drop-threshold": "8", "pages-changed-threshold": ""})
    assert signed_in.post(url, form).status_code == 302
    rules = {r.kind: r for r in AlertRule.objects.filter(project=project)}
    assert not rules[Kind.BECAME_REDIRECT].enabled and rules[Kind.BECAME_BROKEN].enabled
    assert rules[Kind.SCORE_DROP].threshold == 8 and rules[Kind.PAGES_CHANGED].threshold is None

    response = signed_in.post(url, {**form, "score-drop-threshold": "500"})
    assert response.status_code == 400
    assert b"A threshold is a whole number from 1 to 100 points." in response.content
    assert AlertRule.objects.get(project=project, kind=Kind.SCORE_DROP).threshold == 8


def test_channels_added_checked_switched_tested_and_removed(signed_in, pair, monkeypatch):
    project, _, _ = pair
    sent = []
    monkeypatch.setattr("alerts.services.outbox.task_send", lambda name, *args, **kw: sent.append(args[0]))
    add = reverse("audits:project-alert-channel-add", args=[project.id])
    refused = signed_in.post(add, {"kind": "slack", "target": "javascript:alert(1)"})
    assert refused.status_code == 400 and b"Only http and https URLs can be audited" in refused.content
    refused = signed_in.post(add, {"kind": "email", "target": "ops@site.test, not-an-address"})
    assert refused.status_code == 400 and b"is not an e-mail address" in refused.content
    assert (
        signed_in.post(add, {"kind": "slack", "target": "https://hooks.slack.test/services/T0/B0/secret"}).status_code
        == 302
    )
    assert signed_in.post(add, {"kind": "email", "target": "ops@site.test; seo@site.test"}).status_code == 302
    slack = AlertChannel.objects.get(project=project, kind="slack")
    assert slack.target == "https://hooks.slack.test/services/T0/B0/secret"
    assert AlertChannel.objects.get(project=project, target__isnull=False, kind="email", id__gt=slack.id).target == (
        "ops@site.test, seo@site.test"
    )
    page = signed_in.get(reverse("audits:project-alerts", args=[project.id]))
    assert b"hooks.slack.test/\xe2\x80\xa6" in page.content and b"B0/secret" not in page.content  # the URL is a secret

    args = [project.id, slack.id]
    signed_in.post(reverse("audits:project-alert-channel-toggle", args=args))
    slack.refresh_from_db()
    assert not slack.enabled
    signed_in.post(reverse("audits:project-alert-channel-test", args=args))
    (test,) = AlertDelivery.objects.filter(channel=slack)
    assert test.payload["test"] is True and test.audit_id is None and sent == [str(test.id)]
    signed_in.post(reverse("audits:project-alert-channel-delete", args=args))
    assert not AlertChannel.objects.filter(id=slack.id).exists()


def test_the_project_screen_shows_failing_deliveries(signed_in, pair):
    project, _, audit = pair
    channel = project.alert_channels.get()
    AlertDeliveryFactory(channel=channel, audit=audit, status="failed", attempts=6, last_error="HTTP 500: down")
    response = signed_in.get(reverse("audits:project-detail", args=[project.id]))
    assert b"Alerts that did not get through" in response.content and b"HTTP 500: down" in response.content
    assert b"6 attempts" in response.content


def test_notifications_unread_count_list_and_reading(signed_in, pair):
    project, _, audit = pair
    user = project.owner
    first = NotificationFactory(user=user, project=project, audit=audit, link=f"/audits/{audit.id}/changes/")
    NotificationFactory(user=user, project=project, title="Another")
    NotificationFactory(user=UserFactory(), project=project, title="Someone else's")
    home = signed_in.get(reverse("audits:project-list"))
    assert b'id="unread-count">2<' in home.content
    listing = signed_in.get(reverse("audits:notifications"))
    assert [n.title for n in listing.context["page"]] == ["Another", first.title]

    opened = signed_in.get(reverse("audits:notification-open", args=[first.id]))
    assert opened.status_code == 302 and opened["Location"] == f"/audits/{audit.id}/changes/"
    first.refresh_from_db()
    assert first.read_at is not None
    assert b'id="unread-count">1<' in signed_in.get(reverse("audits:project-list")).content
    signed_in.post(reverse("audits:notifications-read"))
    assert not Notification.objects.filter(user=user, read_at__isnull=True).exists()
    assert b'id="unread-count"' not in signed_in.get(reverse("audits:project-list")).content


def test_another_account_sees_nothing(client, pair):
    project, _, audit = pair
    note = NotificationFactory(user=project.owner, project=project, audit=audit)
    client.force_login(ProjectFactory().owner)
    channel = project.alert_channels.get()
    assert client.get(reverse("audits:project-alerts", args=[project.id])).status_code == 404
    assert client.post(reverse("audits:project-alert-channel-delete", args=[project.id, channel.id])).status_code == 404
    assert client.get(reverse("audits:notification-open", args=[note.id])).status_code == 404
    assert AlertChannel.objects.filter(id=channel.id).exists()
