"""An ended audit's report as a stored PDF: asked for by a request, printed once per fingerprint of what it shows
by the `dashboard.render_report_pdf` task (the `reports` queue, never a web thread), served from storage after.

The fingerprint is the sha256 of the printed HTML (dashboard.pdf): a change to anything the PDF shows — the
project's name, the audit's figures after a new finalize, the template or its CSS — is a new fingerprint and
one new render; the same report is printed once whoever asks, however often. One row per (audit, fingerprint):
the request that inserts it sends the render, every other request finds it pending and is told to come back.
"""

from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from audits.dispatch import RENDER_REPORT_PDF, task_send
from audits.models import Audit, ReportPdf

REPORT_PDF_DIR = "reports"  # under the default storage (MEDIA_ROOT): reports/<audit id>/<fingerprint>.pdf
PDF_PENDING_RESEND_S = 300  # a render asked for this long ago and not done is asked for again (lost message)
PDF_FAILED_RETRY_S = 60  # a failed render is tried again by the first request after this long
PDF_ERROR_MAX_CHARS = 500


def report_pdf_name(*, audit_id, fingerprint: str) -> str:
    return f"{REPORT_PDF_DIR}/{audit_id}/{fingerprint}.pdf"


def report_pdf_get(*, audit: Audit, fingerprint: str) -> ReportPdf | None:
    """Selector: the stored PDF of this fingerprint, when it is ready and its file is there."""
    row = ReportPdf.objects.filter(audit=audit, fingerprint=fingerprint, status=ReportPdf.Status.READY).first()
    if row is None or not row.file or not default_storage.exists(row.file):
        return None
    return row


def report_pdf_printing(*, audit: Audit, segment: str = "") -> bool:
    """Selector: a render of this audit's report (for this segment) was asked for less than PDF_PENDING_RESEND_S
    ago and has not ended. A request that finds one is told to come back without working out the fingerprint:
    while a print is under way the answer is "being prepared" whatever the report shows, and the render stores
    what the report shows when it prints (dashboard.pdf.report_pdf_render). Each fingerprint costs a full render
    of the report's HTML, which a burst of requests would otherwise pay once each."""
    fresh_after = timezone.now() - timedelta(seconds=PDF_PENDING_RESEND_S)
    return ReportPdf.objects.filter(
        audit=audit, segment=segment, status=ReportPdf.Status.PENDING, requested_at__gt=fresh_after
    ).exists()


def report_pdf_open(row: ReportPdf):
    """A ready PDF's file, open for reading."""
    return default_storage.open(row.file, "rb")


def report_pdf_request(*, audit: Audit, fingerprint: str, segment: str = "") -> ReportPdf:
    """The audit's PDF of this fingerprint: ready, or pending with a render sent (by the first request to ask, or
    again when a pending one waited past PDF_PENDING_RESEND_S, a failed one past PDF_FAILED_RETRY_S, or a ready
    one lost its file), or failed (its `error` says why; it is tried again later)."""
    now = timezone.now()
    row = ReportPdf.objects.filter(audit=audit, fingerprint=fingerprint).first()
    if row is None:
        try:
            with transaction.atomic():
                row = ReportPdf.objects.create(audit=audit, fingerprint=fingerprint, segment=segment, requested_at=now)
        except IntegrityError:  # another request inserted it first: it sent the render
            row = ReportPdf.objects.get(audit=audit, fingerprint=fingerprint)
        else:
            task_send(RENDER_REPORT_PDF, str(audit.id), fingerprint, segment)
            return row
    Status = ReportPdf.Status
    if row.status == Status.READY and row.file and default_storage.exists(row.file):
        return row
    due = {
        Status.PENDING: row.requested_at <= now - timedelta(seconds=PDF_PENDING_RESEND_S),
        Status.FAILED: (row.rendered_at or row.requested_at) <= now - timedelta(seconds=PDF_FAILED_RETRY_S),
        Status.READY: True,  # its file is gone (MEDIA_ROOT cleared): print it again
    }[row.status]
    # Compare-and-set on requested_at: of several requests that find it due, one sends the render.
    if due and ReportPdf.objects.filter(id=row.id, requested_at=row.requested_at).update(
        status=Status.PENDING, requested_at=now, error=""
    ):
        task_send(RENDER_REPORT_PDF, str(audit.id), fingerprint, row.segment)
        row.status, row.requested_at, row.error = Status.PENDING, now, ""
    return row


def report_pdf_store(*, audit: Audit, fingerprint: str, body: bytes, render_ms: int, segment: str = "") -> ReportPdf:
    """Keep a printed PDF as the audit's PDF of this fingerprint (ready) and drop its PDFs of other fingerprints
    for the same segment (what the report showed before): an audit keeps one PDF on disk per segment."""
    name = default_storage.save(report_pdf_name(audit_id=audit.id, fingerprint=fingerprint), ContentFile(body))
    now = timezone.now()
    fields = {
        "status": ReportPdf.Status.READY,
        "file": name,
        "error": "",
        "rendered_at": now,
        "render_ms": render_ms,
        "segment": segment,
    }
    row, _ = ReportPdf.objects.update_or_create(
        audit=audit, fingerprint=fingerprint, defaults=fields, create_defaults={**fields, "requested_at": now}
    )
    for old in ReportPdf.objects.filter(audit=audit, segment=segment).exclude(id=row.id):
        if old.file and old.file != name:
            default_storage.delete(old.file)
        old.delete()
    return row


def report_pdf_fail(*, audit: Audit, fingerprint: str, error: str, segment: str = "") -> None:
    """Record why the PDF of this fingerprint could not be printed; a request after PDF_FAILED_RETRY_S tries
    again."""
    now = timezone.now()
    fields = {
        "status": ReportPdf.Status.FAILED,
        "error": error[:PDF_ERROR_MAX_CHARS],
        "rendered_at": now,
        "segment": segment,
    }
    ReportPdf.objects.update_or_create(
        audit=audit, fingerprint=fingerprint, defaults=fields, create_defaults={**fields, "requested_at": now}
    )


def report_pdfs_delete(*, audit_id) -> None:
    """Remove an audit's stored PDF files (the rows go with the audit; the files do not)."""
    folder = f"{REPORT_PDF_DIR}/{audit_id}"
    if not default_storage.exists(folder):
        return
    for name in default_storage.listdir(folder)[1]:
        default_storage.delete(f"{folder}/{name}")
