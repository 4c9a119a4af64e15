"""End to end on the two-version site (tests.support.sites.versions): two real audits on 127.0.0.1, the second's
changes stored at finalize, its alert written when it finishes and sent by the task to a real SMTP server on
loopback and to a Slack-style receiver the test serves: exactly one e-mail naming the noindexed and the removed
URLs, the same content once at the receiver; a repeated signal and an unchanged rerun send nothing."""

import re

import pytest

from alerts.models import AlertChannel, AlertDelivery, Notification
from alerts.tasks import deliver_alert
from audits.models import Audit
from audits.services import project_create
from audits.signals import audit_finished
from tests.factories import UserFactory, account_of
from tests.support.sites import versions
from tests.support.sites.versions import audit_versions, serve_versions
from tests.support.smtp import smtp_server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dispatched(monkeypatch):
    """The delivery ids handed to `alerts.deliver_alert` after commit; the test runs the task on each."""
    ids = []
    monkeypatch.setattr("alerts.services.outbox.task_send", lambda name, *args, **kw: ids.append(args[0]))
    return ids


def send_all(ids) -> list[str]:
    outcomes = [deliver_alert.apply(args=[delivery_id]).get() for delivery_id in ids]
    ids.clear()
    return outcomes


def urls_in(text: str) -> set[str]:
    return set(re.findall(r"http://127\.0\.0\.1:\d+/[^\s|>]*", text))


def test_the_second_audit_alerts_once_by_email_and_slack(receiver, dispatched, settings):
    owner = UserFactory(email="owner@acme.test")
    with serve_versions() as site, smtp_server() as smtp:
        for name, value in smtp.settings().items():
            setattr(settings, name, value)
        project = project_create(account=account_of(owner), owner=owner, name="Acme", base_url=site.url + "/")
        AlertChannel.objects.create(project=project, kind=AlertChannel.Kind.SLACK, target=receiver.url)

        first = audit_versions(site, project=project)
        assert dispatched == [] and not AlertDelivery.objects.exists()  # nothing to compare with yet
        site.version = 2
        second = audit_versions(site, project=project)
        assert second.baseline_id == first.id
        assert len(dispatched) == 2
        assert send_all(dispatched) == ["succeeded", "succeeded"]

        (mail,) = smtp.messages
        assert mail.rcpt_tos == ["owner@acme.test"]
        text = mail.text().replace("\r\n", "\n")
        noindexed, removed = site.url_of(versions.NOINDEXED), site.url_of(versions.REMOVED)
        assert f"* 1 indexable page became non-indexable\n  - {noindexed}\n" in text
        assert f"* 1 page became broken (4xx or 5xx)\n  - {removed}\n" in text
        assert f"* 1 page now redirects\n  - {site.url_of(versions.REDIRECTED)}\n" in text
        assert f"robots.txt now blocks 1 URL it allowed\n  - {site.url_of(versions.BLOCKED)}\n" in text
        assert f"/audits/{second.id}/changes/?field=indexability&direction=down" in text

        (post,) = receiver.received
        slack = post.json()
        blocks_text = "\n".join(b["text"]["text"] for b in slack["blocks"] if b["type"] == "section")
        payload = AlertDelivery.objects.filter(audit_ref=second.id).first().payload
        examples = {url for finding in payload["findings"] for url in finding["examples"]}
        assert examples >= {noindexed, removed}
        for finding in payload["findings"]:  # the same findings, example URLs and links in both
            assert finding["title"] in text and finding["title"] in blocks_text
            assert finding["link"] in text and finding["link"] in blocks_text
        assert examples <= urls_in(text) and examples <= urls_in(blocks_text)

        (note,) = Notification.objects.filter(audit_ref=second.id)
        assert note.user == owner and note.title.startswith("Acme: 1 indexable page became non-indexable")

        # The signal again (the reconciler announcing a finish finalize already announced): nothing new.
        audit_finished.send(sender=Audit, audit=second)
        assert dispatched == [] and AlertDelivery.objects.filter(audit_ref=second.id).count() == 2
        assert Notification.objects.count() == 1

        # An unchanged rerun: no finding, no alert.
        third = audit_versions(site, project=project)
        assert third.baseline_id == second.id and dispatched == []
        assert len(smtp.messages) == 1 and len(receiver.received) == 1
