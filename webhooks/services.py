"""Webhooks: a signed POST to each of a project's webhooks when one of its audits finishes.

- Services: webhook_create / webhook_update / webhook_delete (the URL is checked like a start URL, so the
  SSRF policy, settings.ALLOW_PRIVATE_TARGETS, applies at save time too).
- The audits.signals.audit_finished receiver (webhooks.tasks) writes one WebhookDelivery per enabled webhook
  (unique per webhook, event and audit) and hands it to the `audits.deliver_webhook` task after commit.
- The task makes one attempt per run and retries transient failures (connection errors, timeouts, 408,
  429, 5xx) with exponential backoff, WEBHOOK_MAX_ATTEMPTS attempts in all. A refused address, a redirect
  or another 4xx fails the delivery at once. Delivery is at least once: receivers dedupe on the
  X-Sitewarden-Delivery header.

Signature: `X-Sitewarden-Signature: sha256=<hex>` where hex = HMAC-SHA256(secret, f"{timestamp}.{raw body}")
and timestamp (Unix seconds) is the `X-Sitewarden-Timestamp` header; receivers should also reject old
timestamps (e.g. > 5 minutes) to stop replays. See webhook_signature() / webhook_verify().
"""

import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from datetime import timedelta

import requests
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from audits.dispatch import DELIVER_WEBHOOK, task_send
from audits.errors import AuditRefused
from audits.models import Audit, Project
from audits.projects import url_checked
from audits.selectors.issues import issues_by_type
from crawler.fetch import PrivateAddressRefused, PublicOnlyAdapter
from webhooks.models import Webhook, WebhookDelivery

logger = logging.getLogger(__name__)
Status = WebhookDelivery.Status

EVENT_AUDIT_FINISHED = "audit.finished"
SIGNATURE_HEADER = "X-Sitewarden-Signature"
TIMESTAMP_HEADER = "X-Sitewarden-Timestamp"
WEBHOOK_MAX_ATTEMPTS = 6
WEBHOOK_RETRY_BASE_S = 10  # 10, 20, 40, 80, 160 s between the six attempts (override: settings)
WEBHOOK_RETRY_MAX_S = 900
WEBHOOK_TIMEOUT_S = (5, 10)  # connect, read; the task's time limits bound a receiver that drips bytes
WEBHOOK_SOFT_TIME_LIMIT_S = 45
WEBHOOK_TIME_LIMIT_S = 60
# A pending delivery with no attempt for this long lost its message (broker down, worker gone): the
# watchdog queues it again. Longer than the longest backoff plus a task's time limit.
WEBHOOK_STALE_AFTER_S = 30 * 60
WEBHOOK_SWEEP_BATCH = 500  # deliveries queued again per sweep
SECRET_MIN_CHARS = 16
ERROR_CHARS = 500
RETRY_STATUSES = frozenset({408, 429})
USER_AGENT = "Sitewarden-Webhook/1"


# --- services ------------------------------------------------------------------------------------------


def _checked_url(url: str) -> str:
    return url_checked(url, field="url")  # the rules of a start URL, ports included


def _checked_secret(secret: str | None) -> str:
    if secret is None or secret == "":
        return secrets.token_hex(32)
    if len(secret) < SECRET_MIN_CHARS or len(secret) > 128:
        raise AuditRefused(
            "invalid_webhook_secret", f"A secret has {SECRET_MIN_CHARS} to 128 characters.", field="secret"
        )
    return secret


def webhook_create(*, project: Project, url: str, secret: str | None = None, enabled: bool = True) -> Webhook:
    """A webhook for the project; without a secret one is generated (read it from the returned row once)."""
    return Webhook.objects.create(
        project=project, url=_checked_url(url), secret=_checked_secret(secret), enabled=enabled
    )


def webhook_update(
    *, webhook: Webhook, url: str | None = None, secret: str | None = None, enabled: bool | None = None
) -> Webhook:
    fields = []
    if url is not None:
        webhook.url = _checked_url(url)
        fields.append("url")
    if secret is not None:
        webhook.secret = _checked_secret(secret)
        fields.append("secret")
    if enabled is not None:
        webhook.enabled = enabled
        fields.append("enabled")
    if fields:
        webhook.save(update_fields=fields)
    return webhook


def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()


def webhook_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The X-Sitewarden-Signature value for a body sent at `timestamp`."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def webhook_verify(secret: str, timestamp: str, body: bytes, signature: str, *, tolerance_s: int = 300) -> bool:
    """What a receiver does (Python): the signature matches and the timestamp is recent."""
    try:
        if abs(time.time() - int(timestamp)) > tolerance_s:
            return False
    except ValueError:
        return False
    return hmac.compare_digest(webhook_signature(secret, timestamp, body), signature)


def audit_finished_payload(audit: Audit, *, reconciled_by: str | None, duration_s: float | None) -> dict:
    return {
        "event": EVENT_AUDIT_FINISHED,
        "audit": {
            "id": str(audit.id),
            "project_id": audit.project_id,
            "start_url": audit.start_url,
            "status": audit.status,
            "health_score": audit.health_score,
            "pages_crawled": audit.pages_crawled,
            "error_code": audit.error_code or None,
            "failed_phase": audit.failed_phase or None,
            "reconciled_by": reconciled_by,
            "duration_s": round(duration_s, 3) if duration_s is not None else None,
            "started_at": audit.started_at.isoformat() if audit.started_at else None,
            "completed_at": audit.completed_at.isoformat() if audit.completed_at else None,
            "issues_by_type": issues_by_type(audit=audit) if audit.status == Audit.Status.COMPLETED else None,
            "url": f"/api/v1/audits/{audit.id}/",
        },
    }


def webhook_deliveries_queue(*, audit: Audit, reconciled_by: str | None = None, duration_s: float | None = None):
    """One delivery per enabled webhook of the audit's project (none twice), sent after commit."""
    webhooks = list(Webhook.objects.filter(project_id=audit.project_id, enabled=True))
    if not webhooks:
        return []
    payload = audit_finished_payload(audit, reconciled_by=reconciled_by, duration_s=duration_s)
    created = []
    for webhook in webhooks:
        try:
            with transaction.atomic():
                delivery = WebhookDelivery.objects.create(
                    webhook=webhook,
                    audit=audit,
                    audit_ref=audit.id,
                    event=EVENT_AUDIT_FINISHED,
                    payload={**payload, "delivery_id": None},
                )
                delivery.payload["delivery_id"] = str(delivery.id)
                delivery.save(update_fields=["payload"])
        except IntegrityError:
            continue  # already queued for this audit
        created.append(delivery)
        transaction.on_commit(lambda d=delivery.id: webhook_delivery_dispatch(d))
    return created


def webhook_delivery_dispatch(delivery_id) -> None:
    """Queue the delivery task by its name, after commit (services never import tasks)."""
    try:
        task_send(DELIVER_WEBHOOK, str(delivery_id))
    except Exception:  # broker down: the delivery stays pending; the admin's "send again" re-dispatches it
        logger.exception("could not queue a webhook delivery", extra={"delivery_id": str(delivery_id)})


# --- sending -------------------------------------------------------------------------------------------


def _session(*, allow_private: bool) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # no proxies from the worker's environment
    if not allow_private:
        adapter = PublicOnlyAdapter(max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
    return session


def _refused(exc: BaseException) -> bool:
    seen, stack = set(), [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, PrivateAddressRefused):
            return True
        stack.extend([e.__cause__, e.__context__, getattr(e, "reason", None)])
        stack.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))
    return False


def webhook_backoff_s(retries: int) -> float:
    base = getattr(settings, "WEBHOOK_RETRY_BASE_S", WEBHOOK_RETRY_BASE_S)
    return min(base * (2**retries), WEBHOOK_RETRY_MAX_S)


def webhook_delivery_attempt(*, delivery_id) -> str:
    """One POST of a pending delivery. Returns "succeeded", "retry" (transient, attempts left), "failed",
    or "skipped" (gone or no longer pending)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(id=delivery_id).first()
    if delivery is None or delivery.status != Status.PENDING:
        return "skipped"
    webhook = delivery.webhook
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Sitewarden-Event": delivery.event,
        "X-Sitewarden-Delivery": str(delivery.id),
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: webhook_signature(webhook.secret, timestamp, body),
    }
    WebhookDelivery.objects.filter(id=delivery.id).update(attempts=F("attempts") + 1, last_attempt_at=timezone.now())
    attempts = delivery.attempts + 1
    code, error, transient = None, "", False
    try:
        with _session(allow_private=settings.ALLOW_PRIVATE_TARGETS) as session:
            resp = session.post(
                webhook.url, data=body, headers=headers, timeout=WEBHOOK_TIMEOUT_S, allow_redirects=False, stream=True
            )
            code = resp.status_code
            if not 200 <= code < 300:
                snippet = resp.raw.read(200, decode_content=True).decode("utf-8", "replace").strip()
                error = f"HTTP {code}" + (f": {snippet}" if snippet else "")
                if 300 <= code < 400:
                    error = f"HTTP {code}: redirects are not followed"
                transient = code >= 500 or code in RETRY_STATUSES
            resp.close()
    except (requests.RequestException, SoftTimeLimitExceeded, OSError) as exc:
        if _refused(exc):
            error = "refused: the webhook's address is not public (ALLOW_PRIVATE_TARGETS is off)"
        else:
            error = f"{type(exc).__name__}: {exc}"
            transient = True
    if code is not None and 200 <= code < 300:
        outcome = Status.SUCCEEDED
    elif transient and attempts < WEBHOOK_MAX_ATTEMPTS:
        outcome = Status.PENDING
    else:
        outcome = Status.FAILED
    WebhookDelivery.objects.filter(id=delivery.id).update(
        status=outcome,
        last_response_code=code,
        last_error=error[:ERROR_CHARS],
        delivered_at=timezone.now() if outcome == Status.SUCCEEDED else None,
    )
    log = logger.info if outcome == Status.SUCCEEDED else logger.warning
    log(
        "webhook delivery attempt",
        extra={"delivery_id": str(delivery.id), "attempt": attempts, "code": code, "outcome": outcome},
    )
    return {Status.SUCCEEDED: "succeeded", Status.PENDING: "retry", Status.FAILED: "failed"}[outcome]


def webhook_deliveries_sweep(*, stale_after_s: float = WEBHOOK_STALE_AFTER_S) -> list:
    """Queue again the pending deliveries nobody has tried for `stale_after_s`; their attempt count goes on,
    so a delivery still ends after WEBHOOK_MAX_ATTEMPTS. Returns the ids queued."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s)
    stale = list(
        WebhookDelivery.objects.filter(status=Status.PENDING)
        .annotate(last_seen=Coalesce("last_attempt_at", "created_at"))
        .filter(last_seen__lt=cutoff)
        .values_list("id", flat=True)[:WEBHOOK_SWEEP_BATCH]
    )
    for delivery_id in stale:
        webhook_delivery_dispatch(delivery_id)
    return stale


def webhook_delivery_resend(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again (admin): back to pending with a fresh attempt budget."""
    WebhookDelivery.objects.filter(id=delivery.id).update(status=Status.PENDING, attempts=0, last_error="")
    transaction.on_commit(lambda: webhook_delivery_dispatch(delivery.id))


# --- for other senders of the product (alert channels) -----------------------------------------------------


def outbound_session(*, allow_private: bool) -> requests.Session:
    """The session every outbound POST of ours uses: no proxies from the environment and, unless private
    targets are allowed, the crawler's address guard on every connection (alerts' Slack and Teams channels)."""
    return _session(allow_private=allow_private)


def address_refused(exc: BaseException) -> bool:
    """Whether a request failed because the address guard refused the receiver's address."""
    return _refused(exc)


def webhook_event_queue(*, project_id: int, audit_id, audit_ref, event: str, payload: dict) -> int:
    """One delivery of `event` per enabled webhook of the project, none twice for an audit (`audit_ref`), each
    sent, signed, retried and address-guarded by `audits.deliver_webhook` like `audit.finished`. Returns how many
    webhooks have it queued (written now or before); 0 when the project has no enabled webhook."""
    webhooks = list(Webhook.objects.filter(project_id=project_id, enabled=True))
    for webhook in webhooks:
        delivery_id = uuid.uuid4()
        body = {**payload, "event": event, "delivery_id": str(delivery_id)}
        try:
            with transaction.atomic():
                WebhookDelivery.objects.create(
                    id=delivery_id, webhook=webhook, audit_id=audit_id, audit_ref=audit_ref, event=event, payload=body
                )
        except IntegrityError:
            continue  # queued by an earlier attempt
        transaction.on_commit(lambda d=delivery_id: webhook_delivery_dispatch(d))
    return len(webhooks)
