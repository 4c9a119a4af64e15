"""A scheduled audit's report by e-mail (audits.report_emails is the outbox): the client PDF (dashboard.pdf, stored
as audits.report_pdfs stores it, so the dashboard serves the same file) attached to one message whose body sums the
audit up — score, pages, errors and warnings, what is new or fixed since the previous audit, the link to the
report — sent through Django's e-mail framework (the EMAIL_* settings). Runs in the `dashboard.send_report_email`
task on the `reports` queue, never in a web request."""

import logging
import time

from django.conf import settings
from django.core.files.storage import default_storage
from django.core.mail import EmailMessage
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.text import slugify

from audits.models import ReportEmail
from audits.report_emails import report_email_claim, report_email_failed, report_email_sent
from audits.report_pdfs import report_pdf_get, report_pdf_store
from dashboard.pdf import html_fingerprint, html_to_pdf, report_html
from dashboard.report import report_summary

logger = logging.getLogger(__name__)

CHANGE_LINES_MAX = 5  # issue types named under "new or fixed since the previous audit"


def report_email_send(*, email_id) -> bool:
    """Claim the outbox row, print the PDF, send the message, mark it sent; a failure is recorded on the row and
    retried by the sweep. False when the row was not due (sent already, or another worker holds it)."""
    email = report_email_claim(email_id=email_id)
    if email is None:
        return False
    try:
        report = report_summary(audit=email.audit)
        message = report_email_message(email=email, report=report, pdf=_report_pdf(email, report))
        message.send(fail_silently=False)
    except Exception as exc:  # SMTP refusals, a dead server, no Chromium: all retried, all shown on the project
        logger.warning("report e-mail not sent", exc_info=True, extra={"report_email": str(email.id)})
        report_email_failed(email=email, error=f"{type(exc).__name__}: {exc}")
        return False
    report_email_sent(email=email)
    return True


def _report_pdf(email: ReportEmail, report: dict) -> bytes:
    """The client PDF of what the report shows now: the stored one when it is there, else printed and stored."""
    html = report_html(report)
    fingerprint = html_fingerprint(html)
    stored = report_pdf_get(audit=email.audit, fingerprint=fingerprint)
    if stored is not None:
        with default_storage.open(stored.file, "rb") as handle:
            return handle.read()
    started = time.monotonic()
    body = html_to_pdf(html)  # PdfUnavailable: retried by the outbox
    render_ms = round((time.monotonic() - started) * 1000)
    report_pdf_store(audit=email.audit, fingerprint=fingerprint, body=body, render_ms=render_ms)
    return body


def report_email_message(*, email: ReportEmail, report: dict, pdf: bytes) -> EmailMessage:
    audit = email.audit
    day = date_format(audit.completed_at or audit.created_at, "j M Y")
    subject = f"{report['project_name']}: SEO report of {day}"
    if report["score"] is not None:
        subject += f" (score {report['score']}/100)"
    message = EmailMessage(
        subject=subject,
        body=report_email_body(email=email, report=report),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(email.recipients),
    )
    name = slugify(audit.project.name)[:40] or "site"
    message.attach(f"sitewarden-report-{name}-{audit.created_at:%Y-%m-%d}.pdf", pdf, "application/pdf")
    return message


def report_email_body(*, email: ReportEmail, report: dict) -> str:
    """The short summary in words: what a reader needs before opening the PDF."""
    audit = email.audit
    severity = report["severity_counts"]
    changes = report["changes"]
    link = settings.DASHBOARD_BASE_URL.rstrip("/") + reverse("audits:audit-detail", args=[audit.id])
    lines = [
        f"The scheduled audit of {audit.project.name} ({audit.start_url}) completed.",
        "",
        f"Health score: {report['score'] if report['score'] is not None else 'not scored'}/100",
        f"Pages crawled: {report['pages']}",
        f"Errors: {severity.get('critical', 0)} · Warnings: {severity.get('warning', 0)} · "
        f"Notices: {severity.get('info', 0)}",
        "",
    ]
    if changes["first"]:
        lines.append("This is the project's first completed audit: nothing to compare with yet.")
    else:
        previous = date_format(changes["previous"].created_at, "j M Y")
        lines.append(f"Since the audit of {previous}: {changes['new']} new issues, {changes['fixed']} fixed.")
        for row in changes["rows"][:CHANGE_LINES_MAX]:
            lines.append(f"- {row['title']}: {row['new']} new, {row['fixed']} fixed")
    lines += ["", f"The full report is attached as a PDF. Open it in Sitewarden: {link}", ""]
    return "\n".join(lines)
