"""The report PDF's storage (dashboard.pdf, audits.report_pdfs, dashboard.tasks): named by a fingerprint of what
it shows, so a change the PDF would show (the project's name on it, the audit's figures) prints it again and
nothing else does; asked for once whoever asks (one render sent), served from storage once printed, dropped
with the audit. Printing itself (Chromium) is in tests/dashboard/test_share.py and test_share_load.py."""

from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from audits.models import Audit, ReportPdf
from audits.pipeline.lifecycle import audit_delete
from audits.report_pdfs import (
    PDF_FAILED_RETRY_S,
    PDF_PENDING_RESEND_S,
    report_pdf_fail,
    report_pdf_printing,
    report_pdf_request,
    report_pdf_store,
)
from audits.sharing import share_link_create
from dashboard import pdf
from dashboard.report import report_summary
from dashboard.tasks import render_report_pdf
from tests.dashboard.conftest import finished_audit
from tests.factories import ProjectFactory

FAKE_PDF = b"%PDF-1.4 stored, not printed"


def _fingerprint(audit: Audit) -> str:
    audit = Audit.objects.select_related("project").get(id=audit.id)
    return pdf.html_fingerprint(pdf.report_html(report_summary(audit=audit)))


@pytest.mark.django_db
def test_the_fingerprint_changes_with_what_the_pdf_shows_and_only_then(results):
    audit = results.audit
    first = _fingerprint(audit)
    assert first == _fingerprint(audit) and len(first) == 64  # the same report, the same name
    # who it is shared with is not on the PDF
    share_link_create(audit=audit, created_by=audit.project.owner, label="a link")
    assert _fingerprint(audit) == first

    results.project.name = "Shop (new brand)"  # the name printed at its head
    results.project.save(update_fields=["name"])
    renamed = _fingerprint(audit)
    assert renamed != first

    Audit.objects.filter(id=audit.id).update(health_score=81)  # finalized again with other figures
    assert _fingerprint(audit) not in (first, renamed)


@pytest.mark.django_db
def test_a_pdf_is_asked_for_once_whoever_asks(results, django_capture_on_commit_callbacks):
    audit, fingerprint = results.audit, _fingerprint(results.audit)
    with django_capture_on_commit_callbacks() as sent:
        rows = [report_pdf_request(audit=audit, fingerprint=fingerprint) for _ in range(5)]
    assert len(sent) == 1  # one render sent (dashboard.render_report_pdf after commit)
    assert {r.id for r in rows} == {rows[0].id} and rows[0].status == ReportPdf.Status.PENDING

    # a render asked for long ago and never done (its message lost) is asked for again, once
    ReportPdf.objects.update(requested_at=timezone.now() - timedelta(seconds=PDF_PENDING_RESEND_S + 1))
    with django_capture_on_commit_callbacks() as sent:
        report_pdf_request(audit=audit, fingerprint=fingerprint)
        report_pdf_request(audit=audit, fingerprint=fingerprint)
    assert len(sent) == 1

    # a failed one says why, and is tried again only after a while
    report_pdf_fail(audit=audit, fingerprint=fingerprint, error="Chromium could not print the report: boom")
    with django_capture_on_commit_callbacks() as sent:
        row = report_pdf_request(audit=audit, fingerprint=fingerprint)
    assert (len(sent), row.status, row.error) == (
        0,
        ReportPdf.Status.FAILED,
        "Chromium could not print the report: boom",
    )
    ReportPdf.objects.update(rendered_at=timezone.now() - timedelta(seconds=PDF_FAILED_RETRY_S + 1))
    with django_capture_on_commit_callbacks() as sent:
        row = report_pdf_request(audit=audit, fingerprint=fingerprint)
    assert (len(sent), row.status, row.error) == (1, ReportPdf.Status.PENDING, "")


@pytest.mark.django_db
def test_while_a_print_is_under_way_requests_are_told_to_wait_without_rendering_the_report(
    anon_client, results, django_capture_on_commit_callbacks, monkeypatch
):
    audit = results.audit
    token = share_link_create(audit=audit, created_by=audit.project.owner)[1]
    url = reverse("shared-report-pdf", args=[token])
    assert not report_pdf_printing(audit=audit)
    with django_capture_on_commit_callbacks() as sent:
        assert anon_client.get(url).status_code == 202  # the first asks for the print
    assert len(sent) == 1 and report_pdf_printing(audit=audit)
    assert not report_pdf_printing(audit=audit, segment="blog")  # another section's print is its own

    renders = []
    monkeypatch.setattr(pdf, "report_html", lambda report: renders.append(report) or "")
    with django_capture_on_commit_callbacks() as sent:
        for _ in range(3):
            response = anon_client.get(url)
            assert response.status_code == 202 and response["Retry-After"] == "5"
    assert (renders, sent) == ([], [])  # no fingerprint worked out, no second print asked for

    # a print asked for too long ago (its message lost) no longer counts: the request works it out again
    ReportPdf.objects.update(requested_at=timezone.now() - timedelta(seconds=PDF_PENDING_RESEND_S + 1))
    assert not report_pdf_printing(audit=audit)
    monkeypatch.undo()
    with django_capture_on_commit_callbacks() as sent:
        assert anon_client.get(url).status_code == 202
    assert len(sent) == 1


@pytest.mark.django_db
def test_a_stored_pdf_is_served_from_storage_until_the_report_changes(
    anon_client, results, django_capture_on_commit_callbacks
):
    audit = results.audit
    token = share_link_create(audit=audit, created_by=audit.project.owner)[1]
    url = reverse("shared-report-pdf", args=[token])
    stored = report_pdf_store(audit=audit, fingerprint=_fingerprint(audit), body=FAKE_PDF, render_ms=5)
    with django_capture_on_commit_callbacks() as sent:
        for _ in range(3):
            response = anon_client.get(url)
            assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
            assert b"".join(response.streaming_content) == FAKE_PDF  # the stored file, not a new print
    assert sent == [] and ReportPdf.objects.get().rendered_at == stored.rendered_at

    # the worker's task finds it printed: nothing is printed again (no Chromium is started)
    render_report_pdf(str(audit.id), stored.fingerprint)
    assert ReportPdf.objects.get().rendered_at == stored.rendered_at

    results.project.name = "Shop (new brand)"
    results.project.save(update_fields=["name"])
    with django_capture_on_commit_callbacks() as sent:
        response = anon_client.get(url)
    assert response.status_code == 202 and len(sent) == 1  # a new print is asked for
    assert response["Retry-After"] == "5" and 'http-equiv="refresh" content="5"' in response.content.decode()
    assert reverse("shared-report", args=[token]) in response.content.decode()  # the way back to the report

    new = report_pdf_store(audit=audit, fingerprint=_fingerprint(audit), body=FAKE_PDF + b" v2", render_ms=5)
    assert list(ReportPdf.objects.values_list("id", flat=True)) == [new.id]  # an audit keeps one PDF
    assert not default_storage.exists(stored.file) and default_storage.exists(new.file)
    assert b"".join(anon_client.get(url).streaming_content) == FAKE_PDF + b" v2"

    audit_delete(audit=audit)
    assert not default_storage.exists(new.file)


@pytest.mark.django_db
def test_a_failed_print_says_why_and_when_to_retry(anon_client, results):
    token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    report_pdf_fail(audit=results.audit, fingerprint=_fingerprint(results.audit), error="Chromium is not installed")
    response = anon_client.get(reverse("shared-report-pdf", args=[token]))
    assert response.status_code == 503 and response["Retry-After"] == str(PDF_FAILED_RETRY_S)
    assert "Chromium is not installed" in response.content.decode()


@pytest.mark.django_db
def test_a_running_audit_has_no_pdf_yet(owner_client, owner, django_capture_on_commit_callbacks):
    audit = finished_audit(ProjectFactory(owner=owner), status="running")
    with django_capture_on_commit_callbacks() as sent:
        response = owner_client.get(reverse("audits:audit-report-pdf", args=[audit.id]))
    assert response.status_code == 409 and "still running" in response.content.decode()
    assert sent == [] and not ReportPdf.objects.exists()


@pytest.fixture
def anon_client():
    return Client()
