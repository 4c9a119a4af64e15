"""The pipeline end to end on both supported brokers: a real worker audits a local site on Redis and on
RabbitMQ (the recommended production broker). On RabbitMQ a worker killed mid-crawl hands its
unacknowledged chunks back at once, so a fresh worker finishes the audit without waiting for any timeout.

RabbitMQ runs on this machine (127.0.0.1:5672, guest/guest); each test slot gets its own virtual host, so
parallel runs and other users of the server never see each other's queues. Skipped when it is not there.
"""

import json
import os
import shutil
import signal
import socket
import subprocess

import pytest

from audits.models import Audit, Page
from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT, WorkerProcess, flush_test_broker, run_cli, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e, pytest.mark.slow]

RABBITMQ_ADDRESS = ("127.0.0.1", 5672)
AUDIT_WAIT_S = 300


def _rabbitmq_vhost() -> str:
    """This slot's virtual host on the local RabbitMQ, made on first use; skip when there is no RabbitMQ."""
    try:
        socket.create_connection(RABBITMQ_ADDRESS, timeout=1).close()
    except OSError:
        pytest.skip("no RabbitMQ on 127.0.0.1:5672")
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is needed to make a virtual host for the tests")
    vhost = f"sitewarden_test_{os.environ.get('SITEWARDEN_TEST_SLOT', 'default')}"
    subprocess.run(["rabbitmqctl", "-q", "add_vhost", vhost], capture_output=True, check=False)  # exists: fine
    subprocess.run(["rabbitmqctl", "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"], check=True)
    subprocess.run(["rabbitmqctl", "-q", "purge_queue", "-p", vhost, "celery"], capture_output=True, check=False)
    return vhost


def _broker_env(broker: str) -> dict:
    if broker == "redis":
        return {}
    # RabbitMQ for messages; chord results in PostgreSQL (django-db): a deployment with no Redis at all
    return {
        "TEST_CELERY_BROKER_URL": f"amqp://guest:guest@127.0.0.1:5672/{_rabbitmq_vhost()}",
        "TEST_CELERY_RESULT_BACKEND": "django-db",
    }


@pytest.fixture
def fleet():
    started: list[WorkerProcess] = []

    def start(broker: str) -> WorkerProcess:
        worker = WorkerProcess(extra_env=_broker_env(broker)).start()
        started.append(worker)
        return worker

    flush_test_broker()
    yield start
    for worker in started:
        worker.stop()
    flush_test_broker()


@pytest.mark.parametrize("broker", ["redis", "rabbitmq"])
def test_an_audit_completes_on_the_broker(broker, small_site, fleet):
    base, manifest = small_site
    fleet(broker)
    done = run_cli(
        "audit", base + "/", "--max-pages", "1000", "--no-inline", "--json", env=subprocess_env(**_broker_env(broker))
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    audit = Audit.objects.get(id=result["id"])
    assert set(Page.objects.filter(audit=audit).values_list("url", flat=True)) == manifest.expected_urls(base)
    assert audit.pages_crawled == len(manifest.expected_urls(base))


def test_on_rabbitmq_a_killed_workers_chunks_come_back_at_once(small_site, fleet):
    base, manifest = small_site
    env = subprocess_env(**_broker_env("rabbitmq"))
    first = fleet("rabbitmq")
    cli = subprocess.Popen(
        [str(REPO_ROOT / ".venv/bin/python"), "manage.py", "audit", base + "/", "--max-pages", "1000", "--no-inline"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        audit = wait_until(lambda: Audit.objects.filter(pages_crawled__gt=0).first(), 120, "crawling", every_s=0.05)
        first.kill(signal.SIGKILL)
        fleet("rabbitmq")
        _, err = cli.communicate(timeout=AUDIT_WAIT_S)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, err
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED and audit.revivals == 0, (audit.error_code, audit.revivals)
    assert set(Page.objects.filter(audit=audit).values_list("url", flat=True)) == manifest.expected_urls(base)
    assert audit.pages_crawled == Page.objects.filter(audit=audit).count()
