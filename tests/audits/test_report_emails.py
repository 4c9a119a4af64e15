"""Scheduled reports by e-mail (audits.report_emails, dashboard.report_email): after a scheduled audit of a served
site completes, one e-mail reaches a real SMTP server on loopback with the client PDF attached and a summary in the
body; the outbox row is claimed by one worker, sent once, retried after a dead worker's lease or a failure, and the
failures are on the project's screen; the recipients are validated alike by the form, the API and the admin."""

import threading
from datetime import timedelta
from io import BytesIO

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from pypdf import PdfReader
from rest_framework.test import APIClient

from accounts.tokens import token_create
from audits.errors import AuditRefused
from audits.models import Audit, ReportEmail, Schedule
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.report_emails import (
    REPORT_EMAIL_ATTEMPTS_MAX,
    report_email_claim,
    report_email_enqueue,
    report_email_sweep,
    report_recipients_checked,
)
from audits.services import schedule_report_recipients_set, schedule_set
from dashboard.tasks import send_report_email
from tests.factories import AuditFactory, ProjectFactory, ReportEmailFactory
from tests.support.sites.pages import html_route, page, serve
from tests.support.smtp import smtp_server
from tests.support.waits import wait_until
from tests.support.web import free_port
from tests.support.workers import WorkerProcess, flush_test_broker

RECIPIENTS = ["ada@client.test", "Grace@Client.test"]


def _site() -> dict:
    return {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow:\n"),
        "/": html_route(page("home", links=[("/a", "Page A"), ("/b", "Page B")])),
        "/a": html_route(page("a", h1=None)),
        "/b": html_route(page("b", links=[("/gone", "Gone page")])),
    }


def _scheduled_audit(project) -> Audit:
    audit = audit_start(project=project, scheduled=True, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


@pytest.mark.browser  # the PDF is printed by Chromium, as the worker prints it
@pytest.mark.django_db(transaction=True)
def test_a_scheduled_audit_sends_one_email_with_the_pdf_and_a_summary(settings):
    with serve(_site()) as base, smtp_server() as smtp:
        for name, value in smtp.settings().items():
            setattr(settings, name, value)
        project = ProjectFactory(name="Client Shop", base_url=base + "/")
        schedule_set(project=project, kind=Schedule.Kind.DAILY)
        schedule_report_recipients_set(project=project, recipients=RECIPIENTS)
        first = _scheduled_audit(project)
        second = _scheduled_audit(project)  # the summary compares it with the first

        row = ReportEmail.objects.get(audit=second)  # written when the audit completed (the audit_finished signal)
        assert row.recipients == RECIPIENTS and row.status == ReportEmail.Status.PENDING
        send_report_email(row.id)  # what the worker runs (sent by name after commit)
        send_report_email(row.id)  # a duplicate message: the row is sent, nothing goes out again
        ReportEmail.objects.filter(audit=first).delete()  # the first audit's own e-mail is not this test's
        assert report_email_sweep() == 0

    (mail,) = smtp.messages
    assert sorted(mail.rcpt_tos) == sorted(RECIPIENTS)
    assert (
        mail.subject.startswith("Client Shop: SEO report of ") and f"(score {second.health_score}/100)" in mail.subject
    )
    body = mail.text()
    assert f"Health score: {second.health_score}/100" in body
    assert f"Pages crawled: {second.pages_crawled}" in body
    assert "Errors: " in body and "Warnings: " in body
    assert "Since the audit of " in body and "0 new issues, 0 fixed." in body
    assert f"/audits/{second.id}/" in body
    ((filename, pdf),) = mail.attachments()
    assert filename.startswith("sitewarden-report-client-shop-") and filename.endswith(".pdf")
    text = " ".join(p.extract_text() for p in PdfReader(BytesIO(pdf)).pages)
    assert "Client Shop" in text
    row.refresh_from_db()
    assert row.status == ReportEmail.Status.SENT and row.attempts == 1 and row.sent_at


@pytest.mark.django_db(transaction=True)
def test_only_scheduled_audits_with_recipients_are_mailed_once_each():
    project = ProjectFactory()
    manual = AuditFactory(project=project, status=Audit.Status.COMPLETED, scheduled=False)
    scheduled = AuditFactory(project=project, status=Audit.Status.COMPLETED, scheduled=True)
    assert report_email_enqueue(audit=scheduled) is None  # no schedule
    schedule_set(project=project, kind=Schedule.Kind.WEEKLY)
    assert report_email_enqueue(audit=scheduled) is None  # a schedule without recipients
    schedule_report_recipients_set(project=project, recipients="ops@client.test")
    assert report_email_enqueue(audit=manual) is None
    first = report_email_enqueue(audit=scheduled)
    assert first is not None and report_email_enqueue(audit=scheduled).id == first.id
    assert ReportEmail.objects.count() == 1
    failed = AuditFactory(project=project, status=Audit.Status.FAILED, scheduled=True)
    assert report_email_enqueue(audit=failed) is None


@pytest.mark.django_db(transaction=True)
def test_one_of_two_workers_claims_a_row_and_a_dead_workers_lease_is_sent_again():
    row = ReportEmailFactory()
    won = []
    barrier = threading.Barrier(2)

    def claim():
        try:
            barrier.wait()
            won.append(report_email_claim(email_id=row.id))
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(w is not None for w in won) == [False, True]

    # The claiming worker died before sending: nothing is due while its lease lives, then the sweep sends again.
    assert report_email_sweep() == 0 and report_email_claim(email_id=row.id) is None
    ReportEmail.objects.filter(id=row.id).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert report_email_sweep() == 1
    again = report_email_claim(email_id=row.id)
    assert again is not None and again.attempts == 2


@pytest.mark.django_db(transaction=True)
def test_a_failure_is_retried_after_a_backoff_then_given_up_and_shown_on_the_project(settings, client):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 5  # nobody listens
    row = ReportEmailFactory(audit__project__name="Down Mail")
    project = row.audit.project
    send_report_email(row.id)
    row.refresh_from_db()
    assert row.status == ReportEmail.Status.PENDING and row.attempts == 1
    assert row.next_attempt_at > timezone.now() and "ConnectionRefusedError" in row.last_error
    assert report_email_sweep() == 0  # waiting for its backoff

    client.force_login(project.owner)
    html = client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    assert 'data-status="pending"' in html and "retrying" in html and "ConnectionRefusedError" in html

    ReportEmail.objects.filter(id=row.id).update(attempts=REPORT_EMAIL_ATTEMPTS_MAX - 1, next_attempt_at=None)
    send_report_email(row.id)
    row.refresh_from_db()
    assert row.status == ReportEmail.Status.FAILED and row.attempts == REPORT_EMAIL_ATTEMPTS_MAX
    html = client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    assert 'data-status="failed"' in html and "not sent" in html


def test_recipients_are_checked_the_same_way_everywhere():
    assert report_recipients_checked("a@x.test, b@x.test;\nA@X.test\n\n") == ["a@x.test", "b@x.test"]
    assert report_recipients_checked([]) == [] and report_recipients_checked("") == []
    with pytest.raises(AuditRefused) as caught:
        report_recipients_checked(["ok@x.test", "not an address", "@x"])
    assert caught.value.code == "invalid_report_recipients" and "not an address, @x" in caught.value.message
    with pytest.raises(AuditRefused):
        report_recipients_checked([f"p{n}@x.test" for n in range(21)])


@pytest.mark.django_db
def test_the_schedule_form_the_api_and_the_admin_take_the_recipients(client, admin_client):
    project = ProjectFactory()
    client.force_login(project.owner)
    url = reverse("audits:project-schedule", args=[project.id])
    bad = client.post(url, {"action": "set", "kind": "daily", "report_recipients": "ops@client.test, nope"})
    assert bad.status_code == 400 and "Not an e-mail address: nope" in bad.content.decode()
    assert not Schedule.objects.filter(project=project).exists()
    client.post(url, {"action": "set", "kind": "daily", "report_recipients": "ops@client.test\nceo@client.test"})
    assert Schedule.objects.get(project=project).report_recipients == ["ops@client.test", "ceo@client.test"]
    html = client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    assert "ops@client.test\nceo@client.test</textarea>" in html

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=project.owner, name='ci')[1]}")
    api_url = reverse("api:project-schedule", args=[project.id])
    refused = api.put(api_url, {"kind": "weekly", "report_recipients": ["x"]}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_report_recipients"
    assert Schedule.objects.get(project=project).kind == "daily"  # refused before the schedule changed
    saved = api.put(api_url, {"kind": "weekly", "report_recipients": ["pm@client.test"]}, format="json")
    assert saved.json()["report_recipients"] == ["pm@client.test"]
    kept = api.put(api_url, {"kind": "daily"}, format="json")  # omitted: unchanged
    assert kept.json()["report_recipients"] == ["pm@client.test"]

    schedule = Schedule.objects.get(project=project)
    change = reverse("admin:audits_schedule_change", args=[schedule.id])
    form = {"project": project.id, "kind": "daily", "cron": "", "enabled": "on", "report_recipients": "bad@"}
    assert "Not an e-mail address" in admin_client.post(change, form).content.decode()
    admin_client.post(change, {**form, "report_recipients": "a@client.test\nb@client.test"})
    assert Schedule.objects.get(project=project).report_recipients == ["a@client.test", "b@client.test"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_sending_still_delivers_exactly_once():
    """A real worker takes the e-mail, prints the PDF and is SIGKILLed while the SMTP server holds its answer to DATA
    (the message never accepted); once its lease has run out, the sweep sends the task again, a second worker sends
    it, and the server has one message."""
    project = ProjectFactory(name="Killed Mail")
    audit = AuditFactory(project=project, status=Audit.Status.COMPLETED, scheduled=True, completed_at=timezone.now())
    row = ReportEmailFactory(audit=audit, recipients=["ops@client.test"])
    flush_test_broker()
    with smtp_server() as smtp:
        smtp.stall()
        first = WorkerProcess(extra_env=smtp.environment()).start()
        try:
            assert report_email_sweep() == 1
            assert smtp.wait_for_data(90), "the worker never reached DATA"
            first.kill()
            assert smtp.wait_for_hangup(90), "the killed worker's connection never closed"
        finally:
            first.stop()
        smtp.release()
        row.refresh_from_db()
        assert row.status == ReportEmail.Status.SENDING and smtp.messages == []
        assert report_email_sweep() == 0  # its lease still runs: nobody else sends
        ReportEmail.objects.filter(id=row.id).update(lease_until=timezone.now() - timedelta(seconds=1))  # time passed
        second = WorkerProcess(extra_env=smtp.environment()).start()
        try:
            assert report_email_sweep() == 1
            wait_until(lambda: ReportEmail.objects.get(id=row.id).status == ReportEmail.Status.SENT, 90, "sent")
        finally:
            second.stop()
            flush_test_broker()
        assert len(smtp.messages) == 1
    row.refresh_from_db()
    assert row.attempts == 2
    (mail,) = smtp.messages
    assert [name for name, _ in mail.attachments()][0].endswith(".pdf")
