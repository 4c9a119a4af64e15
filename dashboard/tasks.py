"""The dashboard's one Celery task: printing a report to PDF, on its own `reports` queue (CELERY_TASK_ROUTES) so
Chromium runs on a worker, one or two at a time, never in a web request. Sent by name through audits.dispatch
(audits.report_pdfs); the name is a wire contract (tests/test_task_names.py)."""

from celery import shared_task

from audits.report_emails import REPORT_EMAIL_LEASE_S, report_email_sweep
from dashboard.pdf import PDF_TIMEOUT_S, report_pdf_render
from dashboard.report_email import report_email_send

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


# The report e-mail outbox (audits.report_emails): the row is claimed with a lease, so a duplicate message or one a
# dead worker gave back finds it taken or sent; the beat sweep re-sends what a lost message left due. Below the lease.
SEND_EMAIL_TIME_LIMIT_S = REPORT_EMAIL_LEASE_S - 30


@shared_task(
    name="dashboard.send_report_email",
    acks_late=True,
    reject_on_worker_lost=False,  # the sweep sends it again once the dead worker's lease ran out
    ignore_result=True,
    soft_time_limit=SEND_EMAIL_TIME_LIMIT_S - 15,
    time_limit=SEND_EMAIL_TIME_LIMIT_S,
)
def send_report_email(email_id: int) -> None:
    report_email_send(email_id=email_id)


@shared_task(name="dashboard.report_emails_sweep", ignore_result=True)
def report_emails_sweep() -> None:
    report_email_sweep()
