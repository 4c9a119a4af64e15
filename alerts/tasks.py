"""The alert tasks and the audit_finished receiver that writes an audit's alert; the work is in alerts.services."""

import logging

from celery import shared_task
from django.dispatch import receiver

from alerts import services
from alerts.services.outbox import (
    ALERT_SOFT_TIME_LIMIT_S,
    ALERT_SWEEP_SOFT_TIME_LIMIT_S,
    ALERT_SWEEP_TIME_LIMIT_S,
    ALERT_TIME_LIMIT_S,
)
from alerts.services.sending import alert_delivery_attempt
from audits.dispatch import DELIVER_ALERT, SWEEP_ALERTS
from audits.models import Audit
from audits.signals import audit_finished

logger = logging.getLogger(__name__)


@receiver(audit_finished, dispatch_uid="alerts.audit_finished")
def _on_audit_finished(sender, audit, **kwargs):
    if audit.status != Audit.Status.COMPLETED:
        return  # a failed or cancelled audit has nothing to compare; the webhooks tell that end
    try:
        services.alert_deliveries_queue(audit=audit)  # looked up on the package so a test can replace it
    except Exception:  # an alert must never break the end of an audit
        logger.exception("could not queue the audit's alert", extra={"audit_id": str(audit.id)})


@shared_task(
    name=DELIVER_ALERT,
    acks_late=True,  # a worker that dies gives the message back; the claim's lease says who may send
    ignore_result=True,
    soft_time_limit=ALERT_SOFT_TIME_LIMIT_S,
    time_limit=ALERT_TIME_LIMIT_S,
)
def deliver_alert(delivery_id: str) -> str:
    """One attempt; a retry is sent by the sweep once its backoff is over (the row holds when)."""
    return alert_delivery_attempt(delivery_id=delivery_id)


@shared_task(
    name=SWEEP_ALERTS,
    ignore_result=True,
    soft_time_limit=ALERT_SWEEP_SOFT_TIME_LIMIT_S,
    time_limit=ALERT_SWEEP_TIME_LIMIT_S,
)
def sweep_deliveries() -> int:
    """Beat's: retries whose backoff is over, leases a dead worker left, deliveries whose message was lost."""
    return len(services.alert_deliveries_sweep())
