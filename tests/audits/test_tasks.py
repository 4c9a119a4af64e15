"""Celery conventions of the pipeline's tasks: the lighthouse queue, bounded retries of transient database
errors on every step, one error code table (the refusal codes' HTTP statuses), and a chunk's round passed as
an argument (read from its lease key only for a message sent by an older version)."""

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


def _chunk_task_rounds(monkeypatch) -> list[tuple]:
    """Run the crawl_chunk task's body with its stage and its next step recorded, not run."""
    calls: list[tuple] = []
    monkeypatch.setattr(tasks, "crawl_chunk_run", lambda **run: calls.append(("run", run["round_no"])) or {})
    monkeypatch.setattr(tasks, "next_after_chunk", lambda **after: calls.append(("next", after["round_no"])))
    monkeypatch.setattr(tasks, "step_send", lambda **send: None)
    return calls


def test_a_chunk_message_carries_its_round_and_one_from_an_older_version_has_it_read_from_its_key(monkeypatch):
    calls = _chunk_task_rounds(monkeypatch)
    tasks.crawl_chunk.run("audit", "audit:r4:c1", 50, round_no=7)  # the argument wins over the key
    assert calls == [("run", 7), ("next", 7)]
    calls.clear()
    tasks.crawl_chunk.run("audit", "audit:r4:c1", 50)  # an older message: (audit, lease key, quota) only
    assert calls == [("run", 4), ("next", 4)]
