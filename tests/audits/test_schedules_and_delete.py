"""Schedules through django-celery-beat, the watchdog's periodic task, and deleting an audit."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django_celery_beat.models import PeriodicTask

from accounts.models import CreditEntry
from audits.errors import AuditRefused
from audits.models import Audit, AuditEvent, Issue, LighthouseResult, Page, page_id_for
from audits.pipeline.lifecycle import audit_delete
from audits.pipeline.start import audit_start, schedule_run
from audits.schedules import schedule_clear, schedule_set, schedule_validate
from scratchpad.models import Frontier, LinkEdge
from scratchpad.services import NewURL, frontier_seed
from tests.factories import ProjectFactory
from tests.support.workers import run_cli

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_watchdog_install_is_idempotent_and_run_by_the_release_step():
    PeriodicTask.objects.filter(name="sitewarden-reconcile-watchdog").delete()
    for _ in range(2):
        done = run_cli("install_watchdog")
        assert done.returncode == 0, done.stderr
    task = PeriodicTask.objects.get(name="sitewarden-reconcile-watchdog")
    assert task.task == "audits.reconcile_sweep"
    assert task.enabled and task.expire_seconds == 14 * 60
    assert (task.crontab.minute, task.crontab.hour) == ("*/15", "*")
    assert PeriodicTask.objects.filter(task="audits.reconcile_sweep").count() == 1
    # the release step owns every periodic task the product needs: the heal sweep, the outbox sweeps, retention
    installed = dict(PeriodicTask.objects.filter(enabled=True).values_list("name", "task"))
    assert installed == {
        "sitewarden-reconcile-watchdog": "audits.reconcile_sweep",
        "sitewarden-heal-crawls": "audits.heal_sweep",
        "sitewarden-alert-deliveries": "alerts.sweep_deliveries",
        "sitewarden-report-emails": "dashboard.report_emails_sweep",
        "sitewarden-prune-history": "audits.prune_history",
    }


@pytest.mark.parametrize("kind, cron, expected", [("daily", "", "0 3 * * *"), ("cron", "30 2 * * 1-5", "30 2 * * 1-5")])
def test_schedule_set_creates_a_beat_task(kind, cron, expected):
    project = ProjectFactory()
    schedule = schedule_set(project=project, kind=kind, cron=cron)
    task = schedule.periodic_task
    assert task.task == "audits.run_schedule"
    assert json.loads(task.args) == [project.id]
    c = task.crontab
    assert f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}" == expected
    # changing it keeps one periodic task
    schedule_set(project=project, kind="weekly")
    assert PeriodicTask.objects.filter(task="audits.run_schedule").count() == 1
    schedule_clear(project=project)
    assert not PeriodicTask.objects.filter(task="audits.run_schedule").exists()


def test_invalid_cron_is_refused():
    with pytest.raises(AuditRefused) as exc:
        schedule_set(project=ProjectFactory(), kind="cron", cron="61 * * * *")
    assert exc.value.code == "invalid_schedule"


def test_scheduled_run_starts_an_audit_and_skips_while_one_runs(monkeypatch):
    monkeypatch.setattr("audits.pipeline.start.task_send", lambda *args, **kwargs: None)  # no worker in this test
    project = ProjectFactory(base_url="http://127.0.0.1:9/", max_pages=10)
    first = schedule_run(project_id=project.id)
    assert first is not None and first.scheduled and first.status == "running"
    assert schedule_run(project_id=project.id) is None
    assert AuditEvent.objects.filter(audit=first, kind="schedule_skipped").count() == 1
    assert Audit.objects.filter(project=project).count() == 1


def test_delete_removes_everything_but_the_ledger(tmp_path):
    project = ProjectFactory(base_url="http://127.0.0.1:9/")
    audit = audit_start(project=project, max_pages=10, dispatch=False)
    page = Page.objects.create(
        id=page_id_for(audit.id, "http://127.0.0.1:9/"), audit=audit, url="http://127.0.0.1:9/", fetch_class="ok"
    )
    Issue.objects.create(
        id=page.id, audit=audit, page=page, page_url=page.url, type="missing-title", severity="critical"
    )
    LinkEdge.objects.create(audit=audit, source_page=page, target_url="http://127.0.0.1:9/a")
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:9/a", depth=1, source="link")])
    report = Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id) / "r.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("{}")
    LighthouseResult.objects.create(
        id=page.id, audit=audit, page=page, url=page.url, strategy="mobile", status="ok",
        report_path=str(report.relative_to(settings.MEDIA_ROOT)),
    )  # fmt: skip
    audit_delete(audit=audit)  # running: cancelled first, then removed
    assert not Audit.objects.filter(id=audit.id).exists()
    for model in (Page, Issue, LinkEdge, Frontier, AuditEvent, LighthouseResult):
        assert not model.objects.filter(audit_id=audit.id).exists(), model
    assert not report.exists()
    kinds = set(CreditEntry.objects.filter(audit_ref=audit.id).values_list("kind", flat=True))
    assert kinds == {"reserve", "release"}


def test_schedule_validate_names_the_expression_a_schedule_runs_on_and_refuses_what_schedule_set_would():
    assert schedule_validate(kind="daily") == "0 3 * * *"
    assert schedule_validate(kind="weekly", cron="ignored") == "0 3 * * 1"
    assert schedule_validate(kind="cron", cron=" 5 4 * * 1 ") == "5 4 * * 1"
    for cron in ("61 * * * *", "* * *", ""):
        with pytest.raises(AuditRefused) as refused:
            schedule_validate(kind="cron", cron=cron)
        assert refused.value.code == "invalid_schedule"
