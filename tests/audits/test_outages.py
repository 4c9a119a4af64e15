"""Database outages: which errors are transient, the steps' retry policy, failure records that wait for the
database (outbox), and real audits and CLI runs that ride out their own database refusing connections or
turning read-only (this session's test database only: tests/support/outages.py)."""

import json
import subprocess
import sys
import time

import pytest
from django.db import IntegrityError, InternalError, OperationalError, connection, transaction

from audits import tasks
from audits.limits import STEP_MAX_RETRIES, STEP_RETRY_BACKOFF_MAX_S, STEP_RETRY_WINDOW_S
from audits.models import Audit, AuditEvent, Page
from audits.outages import (
    failure_record,
    is_transient_db_error,
    is_transient_error,
    outbox_dir,
    outbox_drain,
    outbox_put,
    retry_delay_s,
)
from audits.pipeline.start import audit_start
from config.celery import app
from scratchpad.models import Frontier
from tests.factories import AuditFactory, FrontierFactory, ProjectFactory
from tests.support.outages import DatabaseOutage
from tests.support.waits import wait_audit_finished, wait_until
from tests.support.workers import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.django_db(transaction=True)

OUTAGE_S = 8  # shorter than the steps' retry window by far, longer than their first few backoffs
AUDIT_WAIT_S = 240
CLI_WAIT_S = 300


@pytest.fixture
def outage():
    control = DatabaseOutage()
    yield control
    control.restore()


@pytest.fixture(autouse=True)
def empty_outbox(settings, tmp_path):
    settings.SITEWARDEN_OUTBOX_DIR = str(tmp_path / "outbox")


def test_real_postgres_outage_errors_are_transient_and_others_are_not(outage):
    with pytest.raises(InternalError) as read_only:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION READ ONLY")
                cursor.execute("INSERT INTO audits_auditevent (kind) VALUES ('x')")
    assert "read-only transaction" in str(read_only.value)
    assert is_transient_db_error(read_only.value)

    connection.ensure_connection()
    outage.cut_connections()  # what a restart does to a session: AdminShutdown on its next statement
    with pytest.raises(OperationalError) as shut_down:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    assert is_transient_db_error(shut_down.value)
    connection.close()

    audit = AuditFactory()
    with pytest.raises(IntegrityError) as duplicate:
        with transaction.atomic():
            AuditFactory(id=audit.id)
    assert not is_transient_db_error(duplicate.value)
    assert not is_transient_error(ValueError("a bug"))
    assert is_transient_error(ConnectionRefusedError(111, "Connection refused"))  # the broker's socket


def test_retry_delays_are_jittered_capped_and_span_the_window():
    delays = [retry_delay_s(n) for n in range(STEP_MAX_RETRIES)]
    assert all(0 < d <= STEP_RETRY_BACKOFF_MAX_S for d in delays)
    assert delays[0] < delays[3]  # exponential at first
    # the backstop count does not cut the window short (the un-jittered delays add up to more than it)
    assert sum(min(STEP_RETRY_BACKOFF_MAX_S, 2 * 2**n) for n in range(STEP_MAX_RETRIES)) >= STEP_RETRY_WINDOW_S
    assert len({round(retry_delay_s(10), 6) for _ in range(20)}) > 1  # jitter: not all at the same instant


def test_every_pipeline_step_retries_transient_errors_within_the_window():
    for task in (tasks.discover, tasks.crawl_chunk, tasks.crawl_round_done, tasks.lighthouse, tasks.finalize):
        assert isinstance(task, tasks.TransientRetryTask), task.name
        assert task.retry_window_s == STEP_RETRY_WINDOW_S and task.max_retries == STEP_MAX_RETRIES, task.name
        assert task.acks_late and task.reject_on_worker_lost, task.name


def test_a_step_that_gives_up_releases_its_leases_and_fails_the_audit_once():
    audit = AuditFactory()
    FrontierFactory.create_batch(3, audit=audit, state=Frontier.State.LEASED, lease_key="chunk-a", attempts=1)
    record = dict(audit_id=audit.id, code="db_error", detail="crawler.crawl_chunk: gave up", task="crawler.crawl_chunk")
    failure_record(**record, lease_key="chunk-a")
    failure_record(**record, lease_key="chunk-a")  # a redelivered record changes nothing
    # released (and, the audit having failed, purged with the rest of its frontier): nobody waits on them
    assert not Frontier.objects.filter(lease_key="chunk-a", state=Frontier.State.LEASED).exists()
    audit.refresh_from_db()
    assert (audit.status, audit.error_code) == (Audit.Status.FAILED, "db_error")
    assert audit.events.filter(kind=AuditEvent.Kind.TASK_FAILED).count() == 1


def test_a_failure_record_made_while_the_database_is_read_only_waits_on_disk_until_it_is_back(outage):
    audit = AuditFactory()
    audit_id = audit.id
    outage.read_only()
    connection.close()
    with pytest.raises(InternalError):
        failure_record(audit_id=audit_id, code="db_error", detail="finalize: gave up", task="audits.finalize")
    outbox_put(dict(audit_id=str(audit_id), code="db_error", detail="finalize: gave up", task="audits.finalize"))
    assert outbox_drain() == 0  # still read-only: the record stays
    assert len(list(outbox_dir().glob("*.json"))) == 1
    outage.restore()
    assert outbox_drain() == 1
    assert list(outbox_dir().glob("*.json")) == []
    audit.refresh_from_db()
    assert (audit.status, audit.error_code) == (Audit.Status.FAILED, "db_error")


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["refused", "read_only"])
def test_an_audit_rides_out_its_database_refusing_connections_or_read_only(
    kind, outage, small_site, celery_worker_process
):
    base, manifest = small_site
    audit = audit_start(
        project=ProjectFactory(base_url=base + "/"), start_url=base + "/", max_pages=1000, dispatch=False
    )
    # The outage starts before the first step is sent, so that step cannot succeed until it ends.
    outage.refuse_connections() if kind == "refused" else outage.read_only()
    app.send_task("audits.discover", args=(str(audit.id),))
    time.sleep(OUTAGE_S)
    outage.restore()
    audit = wait_audit_finished(audit, AUDIT_WAIT_S)
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    assert set(Page.objects.filter(audit=audit).values_list("url", flat=True)) == manifest.expected_urls(base)
    assert audit.pages_crawled == Page.objects.filter(audit=audit).count()
    assert not audit.events.filter(kind=AuditEvent.Kind.TASK_FAILED).exists()


@pytest.mark.e2e
@pytest.mark.slow
def test_the_cli_keeps_watching_through_a_database_outage_and_reports_the_true_outcome(
    outage, small_site, celery_worker_process
):
    base, manifest = small_site
    cli = subprocess.Popen(
        [sys.executable, "manage.py", "audit", base + "/", "--max-pages", "1000", "--no-inline", "--json"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: Audit.objects.exists(), 60, "the CLI started an audit", every_s=0.05)
        outage.refuse_connections()  # the CLI's connection is cut, then refused: a restart seen from outside
        time.sleep(OUTAGE_S)
        outage.restore()
        out, err = cli.communicate(timeout=CLI_WAIT_S)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, err
    assert "database unavailable" in err and "database back" in err, err
    result = json.loads(out)
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))
    assert err.strip().splitlines()[-1].startswith(f"audit {result['id']} completed: {result['pages_crawled']} pages")
