"""One attempt of an alert delivery: claim the row (alerts.services.outbox), send it on its channel, write the
outcome.

- e-mail: Django's email framework (settings EMAIL_*), one message to the channel's recipients, plain text, with
  a Message-ID made from the delivery's id (a mail client can tell a resent copy);
- Slack, Teams: a JSON POST to the incoming webhook through `webhooks.services.outbound_session` (the crawler's
  address guard unless private targets are allowed), no redirects followed;
- webhook: `audit.alert` queued to each of the project's enabled webhooks through webhooks.services, which signs,
  guards and retries it like `audit.finished` (its outcome is on the project's Webhooks screen).

Transient failures (connection errors, timeouts, 408, 429, 5xx, an SMTP 4xx) are retried with backoff; a refused
address, a redirect, another 4xx, an SMTP 5xx or a channel with nobody to send to fail the delivery at once."""

import json
import logging
import smtplib

import requests
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from alerts.models import AlertChannel, AlertDelivery
from alerts.services.channels import alert_email_recipients
from alerts.services.messages import EVENT_AUDIT_ALERT, email_text, slack_message, teams_message
from alerts.services.outbox import alert_delivery_claim, alert_delivery_finish
from webhooks.services import address_refused, outbound_session, webhook_event_queue

logger = logging.getLogger(__name__)
Kind = AlertChannel.Kind

HTTP_TIMEOUT_S = (5, 10)  # connect, read; the task's time limits bound a receiver that drips bytes
HTTP_RETRY_STATUSES = frozenset({408, 429})
ANSWER_SNIPPET_BYTES = 200
USER_AGENT = "Sitewarden-Alerts/1"


class SendFailed(Exception):
    """An attempt that did not deliver; `transient` says whether another attempt may."""

    def __init__(self, message: str, *, transient: bool):
        super().__init__(message)
        self.transient = transient


def _send_email(delivery: AlertDelivery) -> None:
    recipients = alert_email_recipients(delivery.channel)
    if not recipients:
        raise SendFailed("Nobody to send it to: the account's members have no e-mail address", transient=False)
    payload = delivery.payload
    message = EmailMessage(
        subject=payload["subject"],
        body=email_text(payload),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=recipients,
        headers={"Message-ID": f"<alert-{delivery.id}@sitewarden>", "X-Sitewarden-Delivery": str(delivery.id)},
        connection=get_connection(fail_silently=False),
    )
    try:
        message.send()
    except smtplib.SMTPResponseException as exc:  # the server answered: 4xx try again, 5xx will not change
        raise SendFailed(f"SMTP {exc.smtp_code}: {exc.smtp_error!r}", transient=exc.smtp_code < 500) from exc
    except smtplib.SMTPRecipientsRefused as exc:
        raise SendFailed(f"SMTP refused the recipients: {', '.join(exc.recipients)}", transient=False) from exc
    except (TimeoutError, smtplib.SMTPException, OSError) as exc:
        raise SendFailed(f"{type(exc).__name__}: {exc}", transient=True) from exc


def _post_json(url: str, body: dict) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    try:
        with outbound_session(allow_private=settings.ALLOW_PRIVATE_TARGETS) as session:
            resp = session.post(
                url, data=data, headers=headers, timeout=HTTP_TIMEOUT_S, allow_redirects=False, stream=True
            )
            code = resp.status_code
            snippet = b"" if 200 <= code < 300 else resp.raw.read(ANSWER_SNIPPET_BYTES, decode_content=True)
            resp.close()
    except (requests.RequestException, OSError) as exc:
        if address_refused(exc):
            raise SendFailed(
                "refused: the receiver's address is not public (ALLOW_PRIVATE_TARGETS is off)", transient=False
            ) from exc
        raise SendFailed(f"{type(exc).__name__}: {exc}", transient=True) from exc
    if 200 <= code < 300:
        return
    text = snippet.decode("utf-8", "replace").strip()
    if 300 <= code < 400:
        raise SendFailed(f"HTTP {code}: redirects are not followed", transient=False)
    raise SendFailed(
        f"HTTP {code}" + (f": {text}" if text else ""), transient=code >= 500 or code in HTTP_RETRY_STATUSES
    )


def _send_webhooks(delivery: AlertDelivery) -> None:
    queued = webhook_event_queue(
        project_id=delivery.channel.project_id,
        audit_id=delivery.audit_id,
        audit_ref=delivery.audit_ref,
        event=EVENT_AUDIT_ALERT,
        payload={"alert": delivery.payload, "alert_delivery_id": str(delivery.id)},
    )
    if not queued:
        raise SendFailed("The project has no enabled webhook", transient=False)


def _send(delivery: AlertDelivery) -> None:
    kind = delivery.channel.kind
    if kind == Kind.EMAIL:
        _send_email(delivery)
    elif kind == Kind.SLACK:
        _post_json(delivery.channel.target, slack_message(delivery.payload))
    elif kind == Kind.TEAMS:
        _post_json(delivery.channel.target, teams_message(delivery.payload))
    elif kind == Kind.WEBHOOK:
        _send_webhooks(delivery)
    else:
        raise SendFailed(f"Unknown channel kind {kind!r}", transient=False)


def alert_delivery_attempt(*, delivery_id) -> str:
    """Claim and send the delivery once. Returns "succeeded", "retry" (pending again, `next_attempt_at` set),
    "failed", "skipped" (not ours to send: done, held by another worker or not due) or "lost" (our claim expired
    meanwhile and another worker took it: our outcome is not written)."""
    claim = alert_delivery_claim(delivery_id=delivery_id)
    if claim is None:
        return "skipped"
    try:
        _send(claim.delivery)
    except SendFailed as exc:
        return alert_delivery_finish(claim=claim, ok=False, error=str(exc), retry=exc.transient)
    except SoftTimeLimitExceeded:
        return alert_delivery_finish(claim=claim, ok=False, error="The attempt took too long", retry=True)
    return alert_delivery_finish(claim=claim, ok=True)
