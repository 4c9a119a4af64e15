"""The dashboard's one Celery task: printing a report to PDF, on its own `reports` queue (CELERY_TASK_ROUTES) so
Chromium runs on a worker, one or two at a time, never in a web request. Sent by name through audits.dispatch
(audits.report_pdfs); the name is a wire contract (tests/test_task_names.py)."""

from celery import shared_task

from dashboard.pdf import PDF_TIMEOUT_S, report_pdf_render

RENDER_SOFT_TIME_LIMIT_S = PDF_TIMEOUT_S + 15  # the print gives up at PDF_TIMEOUT_S; this is the backstop
RENDER_TIME_LIMIT_S = PDF_TIMEOUT_S + 30


# Acks late (a worker stopped mid-print gives the message back) but not re-queued when the worker process dies:
# a report that kills its worker is not printed in a loop; its row stays pending and is asked for again later.
@shared_task(
    name="dashboard.render_report_pdf",
    acks_late=True,
    reject_on_worker_lost=False,
    ignore_result=True,
    soft_time_limit=RENDER_SOFT_TIME_LIMIT_S,
    time_limit=RENDER_TIME_LIMIT_S,
)
def render_report_pdf(audit_id: str, fingerprint: str, segment: str = "") -> None:
    report_pdf_render(audit_id=audit_id, fingerprint=fingerprint, segment=segment)
