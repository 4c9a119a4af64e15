"""Retention (audits.retention): an old audit loses its page-level rows in bounded batches and keeps its score,
issue counts by type, changes and trend point; the newest N audits and the protected ones stay whole; a prune
killed mid-way resumes. Real PostgreSQL (transactions, an advisory lock, a child process killed mid-prune)."""

import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from audits.checks.score import score_breakdown
from audits.models import (
    Audit,
    AuditEvent,
    Issue,
    Page,
    PageChange,
    ShareLink,
)
from audits.priority import issue_summary
from audits.retention import (
    PRUNE_PAUSE_FACTOR,
    PRUNE_PAUSE_FACTOR_WHILE_AUDITING,
    PRUNED_TABLES,
    audit_prune,
    audits_due,
    audits_prune,
    comparison_counts,
    prune_pause_factor,
)
from audits.selectors.issues import issues_by_severity, issues_by_type
from audits.selectors.retention import comparison_kept, project_space
from audits.tasks import prune_history
from dashboard.selectors import health_history
from tests.factories import AuditFactory, PageChangeFactory, ProjectFactory
from tests.support.retention import SITE, audit_with_rows
from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(audit) -> dict:
    return {t.model._meta.label: t.model.objects.filter(audit_id=audit.id).count() for t in PRUNED_TABLES}


def _report(audit) -> Path:
    return Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id) / "mobile.json"


def _history(project) -> list:
    latest = Audit.objects.filter(project=project, status="completed").order_by("-created_at").first()
    return health_history(audit=latest)


def test_an_old_audit_keeps_its_score_counts_changes_and_trend_point_and_the_newest_stay_whole():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=2)
    a1 = audit_with_rows(project, days_ago=40)
    a2 = audit_with_rows(project, days_ago=30, title_of=lambda n: f"New {n}" if n < 2 else f"Page {n}")
    a3 = audit_with_rows(project, days_ago=20)
    a4 = audit_with_rows(project, days_ago=10)
    changes = [PageChangeFactory(audit=a2, baseline=a1, url=f"{SITE}/p{n}", before=f"Page {n}", after=f"New {n}")
               for n in range(2)]  # fmt: skip
    before = {
        a.id: (a.health_score, issues_by_type(audit=a), issues_by_severity(audit=a), score_breakdown(audit=a).score)
        for a in (a1, a2, a3, a4)
    }
    trend = _history(project)
    a3_new = {r.type: r.new for r in issue_summary(audit=a3, previous=a2, pages_crawled=a3.pages_crawled)}
    a2_new = {r.type: r.new for r in issue_summary(audit=a2, previous=a1, pages_crawled=a2.pages_crawled)}
    a3_vs_a2 = comparison_counts(audit=a3, base=a2)
    whole = {a.id: _rows(a) for a in (a3, a4)}

    result = audits_prune(project=project)

    assert set(result.audits) == {a1.id, a2.id}
    for audit in (a1, a2):
        audit.refresh_from_db()
        assert audit.summarised_at is not None
        assert all(n == 0 for n in _rows(audit).values()), _rows(audit)
        assert not _report(audit).exists()
        assert AuditEvent.objects.filter(audit=audit).exists()  # its log stays
        assert (audit.health_score, issues_by_type(audit=audit), issues_by_severity(audit=audit)) == before[audit.id][
            :3
        ]
        assert score_breakdown(audit=audit).score == before[audit.id][3]  # from the stored figures, no page row
    assert set(PageChange.objects.filter(audit=a2).values_list("id", flat=True)) == {c.id for c in changes}
    assert _history(project) == trend  # every trend point stays
    for audit in (a3, a4):
        audit.refresh_from_db()
        assert audit.summarised_at is None and _rows(audit) == whole[audit.id]
        assert _report(audit).exists()
    # The overview's "new since the previous audit" and the comparison's counts of a3 against the pruned a2 were
    # stored before a2's issues went: the same figures, not "everything is new".
    assert {r.type: r.new for r in issue_summary(audit=a3, previous=a2, pages_crawled=a3.pages_crawled)} == a3_new
    assert any(a3_new.values())
    assert {r.type: r.new for r in issue_summary(audit=a2, previous=a1, pages_crawled=a2.pages_crawled)} == a2_new
    assert comparison_kept(audit=a3, base=a2) == a3_vs_a2
    assert comparison_kept(audit=a2, base=a3) is None
    # A second run finds nothing to do.
    assert audits_prune(project=project).audits == []


def test_instance_default_and_protected_audits_stay_whole(settings):
    settings.SITEWARDEN_KEEP_PAGE_ROWS = 1
    project = ProjectFactory(base_url=SITE + "/")  # keep_page_rows empty: the instance default
    old_baseline = audit_with_rows(project, days_ago=50, pages=3)
    shared = audit_with_rows(project, days_ago=40, pages=3)
    failed_old = audit_with_rows(project, days_ago=35, pages=3, status=Audit.Status.FAILED)
    plain = audit_with_rows(project, days_ago=30, pages=3)
    latest = audit_with_rows(project, days_ago=20, pages=3)
    failed_new = audit_with_rows(project, days_ago=5, pages=3, status=Audit.Status.FAILED)
    running = Audit.objects.create(project=project, start_url=SITE + "/", baseline=old_baseline)
    ShareLink.objects.create(audit=shared, token_hash=uuid.uuid4().hex * 2)
    expired = ShareLink.objects.create(
        audit=plain, token_hash=uuid.uuid4().hex * 2, expires_at=timezone.now() - timedelta(days=1)
    )
    assert expired.audit_id == plain.id  # an expired link protects nothing

    assert [a.id for a in audits_due(project=project)] == [failed_old.id, plain.id]
    audits_prune(project=project)

    summarised = set(Audit.objects.filter(project=project, summarised_at__isnull=False).values_list("id", flat=True))
    assert summarised == {failed_old.id, plain.id}
    for kept in (old_baseline, shared, latest, failed_new, running):
        assert Page.objects.filter(audit=kept).count() == (0 if kept is running else 3), kept
    failed_old.refresh_from_db()
    assert failed_old.stats["pages"] == 3  # its figures as it stopped were kept before its pages went

    # The running audit ends: its baseline is still kept while its alerts may read it (PRUNE_SETTLE_S), then goes.
    Audit.objects.filter(id=running.id).update(status="completed", completed_at=timezone.now())
    assert old_baseline.id not in {a.id for a in audits_due(project=project)}
    Audit.objects.filter(id=running.id).update(completed_at=timezone.now() - timedelta(days=1))
    assert old_baseline.id in {a.id for a in audits_due(project=project)}


class _TransactionRows:
    """Rows deleted per committed transaction, as the database driver reported them (cursor.rowcount of each
    DELETE), counted through an execute wrapper and closed by on_commit."""

    def __init__(self):
        self.committed: list[int] = []
        self._open = None

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().upper().startswith("DELETE") and connection.in_atomic_block:
            if self._open is None:
                self._open = 0
                transaction.on_commit(self._close)
            self._open += max(context["cursor"].rowcount, 0)
        return result

    def _close(self):
        self.committed.append(self._open)
        self._open = None


def test_batches_are_bounded_rows_per_transaction():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=20)
    audit_with_rows(project, days_ago=10, pages=2)
    total = sum(_rows(old).values())
    watch = _TransactionRows()
    with connection.execute_wrapper(watch):
        result = audit_prune(audit=old, batch_rows=7)
    assert old.id in result.audits
    assert sum(watch.committed) == total == sum(result.rows.values())
    assert max(watch.committed) <= 7
    assert len(watch.committed) >= total / 7


PRUNE_CHILD = """
import django, sys
django.setup()
from audits.models import Audit
from audits.retention import audit_prune
audit_prune(audit=Audit.objects.get(id=sys.argv[1]), batch_rows=5)
"""


def test_a_prune_killed_mid_way_resumes_where_it_stopped():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=40)
    audit_with_rows(project, days_ago=10, pages=2)
    total = sum(_rows(old).values())
    child = subprocess.Popen([sys.executable, "-c", PRUNE_CHILD, str(old.id)], cwd=REPO_ROOT, env=subprocess_env())
    try:
        # Killed once its first batches committed (5 rows a batch, a pause of at least 50 ms after each).
        wait_until(lambda: sum(_rows(old).values()) < total - 10, timeout_s=60, every_s=0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    old.refresh_from_db()
    left = sum(_rows(old).values())
    assert 0 < left < total
    # Summarised (and its summary stored) before anything was deleted: no reader takes its rows for whole meanwhile.
    assert old.summarised_at is not None and old.stats["retention"]["kept_at"]
    assert "pruned_at" not in old.stats["retention"]
    stored, stored_at = dict(old.stats), old.summarised_at

    result = audits_prune(project=project, batch_rows=50)  # the next run (the advisory lock died with the child)

    assert result.audits == [old.id] and result.stopped == ""
    old.refresh_from_db()
    assert old.summarised_at == stored_at and sum(_rows(old).values()) == 0
    assert sum(result.rows.values()) == left
    assert old.stats["issue_types"] == stored["issue_types"]  # not recounted from half-deleted rows
    assert old.stats["retention"]["kept_at"] == stored["retention"]["kept_at"] and old.stats["retention"]["pruned_at"]
    assert audits_prune(project=project).audits == []


def test_the_hourly_task_is_installed_and_prunes():
    call_command("install_watchdog", stdout=open("/dev/null", "w"))
    task = PeriodicTask.objects.get(name="sitewarden-prune-history")
    assert task.task == "audits.prune_history" and task.enabled and task.crontab.minute == "17"
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=3)
    audit_with_rows(project, days_ago=10, pages=3)
    prune_history.apply()
    old.refresh_from_db()
    assert old.summarised_at is not None


def test_space_per_project_counts_rows_and_estimates_bytes():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=6)
    audit_with_rows(project, days_ago=10, pages=4)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # reltuples for the estimate
    before = {t.table: t for t in project_space(project_id=project.id)}
    assert before["Pages"].rows == 10 and before["Issues"].rows == Issue.objects.filter(audit__project=project).count()
    assert before["Pages"].bytes > 0 and before["Link edges"].rows > 0
    audits_prune(project=project)
    after = {t.table: t for t in project_space(project_id=project.id)}
    assert after["Pages"].rows == 4 and after["Pages"].bytes < before["Pages"].bytes
    assert after["Events"].rows == before["Events"].rows  # the log stays
    old.refresh_from_db()
    assert old.summarised_at is not None


def test_an_audit_chosen_as_a_baseline_before_its_prune_began_is_left_whole():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=3)
    audit_with_rows(project, days_ago=10, pages=3)
    (due,) = audits_due(project=project)
    Audit.objects.create(project=project, start_url=SITE + "/", baseline=old)  # a new audit starts meanwhile
    result = audit_prune(audit=due)
    old.refresh_from_db()
    assert result.stopped == "protected" and old.summarised_at is None and Page.objects.filter(audit=old).count() == 3


def test_fix_checks_take_no_place_in_the_window_and_go_with_the_audit_they_verify():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=3)
    old_check = audit_with_rows(project, days_ago=29, pages=1)
    latest = audit_with_rows(project, days_ago=10, pages=3)
    latest_check = audit_with_rows(project, days_ago=9, pages=1)
    Audit.objects.filter(id=old_check.id).update(verifies=old)
    Audit.objects.filter(id=latest_check.id).update(verifies=latest)
    result = audits_prune(project=project)
    assert set(result.audits) == {old.id, old_check.id}  # latest stays whole though a fix check is newer
    assert Page.objects.filter(audit__in=[latest, latest_check]).count() == 4


def test_the_prune_pauses_longer_while_an_audit_runs():
    """A batch's DELETE is PostgreSQL's CPU, which a crawl shares: beside a running audit the pause after each batch
    is PRUNE_PAUSE_FACTOR_WHILE_AUDITING times the batch, not PRUNE_PAUSE_FACTOR (bench.retention measures the
    crawl's time)."""
    assert PRUNE_PAUSE_FACTOR_WHILE_AUDITING > PRUNE_PAUSE_FACTOR
    project = ProjectFactory(base_url=SITE + "/")
    finished = AuditFactory(project=project, status=Audit.Status.COMPLETED)
    assert prune_pause_factor() == PRUNE_PAUSE_FACTOR
    running = AuditFactory(project=project, status=Audit.Status.RUNNING)
    assert prune_pause_factor() == PRUNE_PAUSE_FACTOR_WHILE_AUDITING
    running.status = Audit.Status.COMPLETED
    running.save(update_fields=["status"])
    assert prune_pause_factor() == PRUNE_PAUSE_FACTOR and finished.status == Audit.Status.COMPLETED
