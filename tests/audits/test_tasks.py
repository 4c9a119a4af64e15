"""Celery conventions of the pipeline's tasks: the lighthouse queue, bounded retries of transient database
errors on every step, and one error code table (the refusal codes' HTTP statuses)."""

from django.db import InterfaceError, OperationalError

from audits import tasks
from audits.errors import AuditRefused, ErrorCode
from audits.outages import is_transient_error
from config.celery import app

PIPELINE_STEPS = (tasks.discover, tasks.crawl_chunk, tasks.crawl_round_done, tasks.lighthouse, tasks.finalize)


def test_lighthouse_and_pdfs_have_their_own_queues_and_a_worker_without_q_consumes_every_one():
    assert app.amqp.router.route({}, "audits.lighthouse")["queue"].name == "lighthouse"
    assert app.amqp.router.route({}, "dashboard.render_report_pdf")["queue"].name == "reports"
    assert app.amqp.router.route({}, "audits.discover")["queue"].name == "celery"
    assert {queue.name for queue in app.conf.task_queues} == {"celery", "lighthouse", "reports"}


def test_every_pipeline_step_retries_transient_database_errors_for_a_bounded_time():
    for task in PIPELINE_STEPS:  # the policy itself: tests/audits/test_outages.py
        assert isinstance(task, tasks.TransientRetryTask), task.name
        assert is_transient_error(OperationalError("connection refused")) and is_transient_error(InterfaceError())
        assert 0 < task.retry_window_s <= 600 and 0 < task.max_retries <= 20, task.name
        assert task.acks_late and task.reject_on_worker_lost, task.name


def test_refusal_codes_carry_their_http_status():
    assert AuditRefused(ErrorCode.AUDIT_CAPACITY_REACHED, "full").code == "audit_capacity_reached"
    assert AuditRefused("insufficient_credits", "no").status == 402
    assert ErrorCode.status_for("audit_page_limit_exceeded") == 403
    assert ErrorCode.status_for("project_name_taken") == 409
    assert ErrorCode.status_for("a_code_not_listed") == 400
