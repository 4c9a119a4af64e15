"""The webhook delivery task and the audit_finished receiver that queues deliveries; the work is in services."""

import logging

from celery import shared_task
from django.dispatch import receiver

from audits.dispatch import DELIVER_WEBHOOK
from audits.signals import audit_finished
from webhooks import services
from webhooks.services import (
    WEBHOOK_MAX_ATTEMPTS,
    WEBHOOK_SOFT_TIME_LIMIT_S,
    WEBHOOK_TIME_LIMIT_S,
    webhook_backoff_s,
    webhook_delivery_attempt,
)

logger = logging.getLogger(__name__)


@receiver(audit_finished, dispatch_uid="audits.webhooks.audit_finished")
def _on_audit_finished(sender, audit, reconciled_by=None, duration_s=None, **kwargs):
    try:
        # Looked up on the module so a test can replace it.
        services.webhook_deliveries_queue(audit=audit, reconciled_by=reconciled_by, duration_s=duration_s)
    except Exception:  # a webhook must never break the end of an audit
        logger.exception("could not queue webhooks", extra={"audit_id": str(audit.id)})


@shared_task(
    name=DELIVER_WEBHOOK,  # a wire name, kept from when this lived in audits
    bind=True,
    acks_late=True,
    ignore_result=True,
    max_retries=WEBHOOK_MAX_ATTEMPTS,
    soft_time_limit=WEBHOOK_SOFT_TIME_LIMIT_S,
    time_limit=WEBHOOK_TIME_LIMIT_S,
)
def deliver_webhook(self, delivery_id: str) -> str:
    outcome = webhook_delivery_attempt(delivery_id=delivery_id)
    if outcome == "retry":
        raise self.retry(countdown=webhook_backoff_s(self.request.retries))
    return outcome
