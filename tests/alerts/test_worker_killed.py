"""A worker killed while it sends an alert e-mail: the SMTP server (real, on loopback) holds its answer to DATA,
the worker is SIGKILLed, the server then drops the message its client never saw accepted; once the dead worker's
claim expires the sweep sends the delivery again and a new worker delivers it: exactly one e-mail arrives."""

import time

import pytest

from alerts.models import AlertDelivery
from alerts.services import alert_deliveries_queue, alert_deliveries_sweep
from tests.alerts.conftest import SITE, Direction, Field, change
from tests.support.smtp import smtp_server
from tests.support.waits import wait_until
from tests.support.workers import WorkerProcess, flush_test_broker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

WORKER_SETTINGS = "tests.alerts.worker_settings"  # ALERT_LEASE_S = 4
LEASE_S = 4
WAIT_S = 60
SETTLE_S = 3  # after delivery, time for a second copy to show up if one were coming


@pytest.fixture
def workers():
    flush_test_broker()
    started: list[WorkerProcess] = []

    def start(env):
        worker = WorkerProcess(concurrency=1, extra_env={"DJANGO_SETTINGS_MODULE": WORKER_SETTINGS, **env}).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    flush_test_broker()


def test_a_worker_killed_mid_send_still_delivers_exactly_once(pair, workers):
    _, _, audit = pair
    change(audit, "/noindexed", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    with smtp_server() as smtp:
        first = workers(smtp.environment())
        smtp.stall()
        (delivery,) = alert_deliveries_queue(audit=audit)  # autocommit: sent to the worker at once
        assert smtp.wait_for_data(WAIT_S), "the worker never reached DATA"
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (AlertDelivery.Status.SENDING, 1)

        first.kill()  # SIGKILL, the whole process group, while the server holds its answer
        assert smtp.wait_for_hangup(WAIT_S), "the killed worker's connection never closed"
        smtp.release()
        time.sleep(1)
        assert smtp.messages == [], "a message whose sender died before the answer must not count as delivered"
        assert alert_deliveries_sweep() == []  # the claim has not expired: nobody else may send it

        workers(smtp.environment())
        wait_until(lambda: alert_deliveries_sweep() or None, LEASE_S + WAIT_S, "the expired claim swept", every_s=0.5)
        wait_until(
            lambda: AlertDelivery.objects.filter(id=delivery.id, status="succeeded").exists(),
            WAIT_S,
            "the delivery sent by the new worker",
            every_s=0.2,
        )
        time.sleep(SETTLE_S)
        (message,) = smtp.messages
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("succeeded", 2, "")
    assert message.rcpt_tos == ["owner@site.test"]
    assert SITE + "/noindexed" in message.text()
    assert message.message["Message-ID"] == f"<alert-{delivery.id}@sitewarden>"
