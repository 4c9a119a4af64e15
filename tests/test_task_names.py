"""Task names are a wire contract: messages already queued, beat schedules and revoked ids name them.

The snapshot below is what the workers registered before any module moved; a rename must be deliberate.
"""

from config.celery import app

REGISTERED_TASK_NAMES = {
    "alerts.deliver_alert",
    "alerts.sweep_deliveries",
    "audits.changes_compute",
    "audits.crawl_round_done",
    "audits.deliver_webhook",
    "audits.discover",
    "audits.finalize",
    "audits.heal_sweep",
    "audits.lighthouse",
    "audits.pipeline_failed",
    "audits.prune_history",
    "audits.record_failure",
    "audits.reconcile_sweep",
    "audits.run_schedule",
    "crawler.crawl_chunk",
    "dashboard.render_report_pdf",
    "dashboard.report_emails_sweep",
    "dashboard.send_report_email",
}


def test_registered_task_names_are_unchanged():
    app.loader.import_default_modules()
    ours = {name for name in app.tasks if not name.startswith("celery.")}
    assert ours == REGISTERED_TASK_NAMES
