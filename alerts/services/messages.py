"""An alert in words, from the payload its delivery row holds: the payload (written once, when the audit
finished), the e-mail's subject and plain-text body, a Slack-compatible incoming-webhook message (`text` and
blocks), a Microsoft Teams message (an Adaptive Card) and the in-app notification's title and body. Every
channel says the same: each finding, how many URLs, up to 10 example URLs and the link."""

from datetime import UTC, datetime

from alerts.services.findings import Finding, changes_path, dashboard_url
from audits.models import Audit

PAYLOAD_VERSION = 1
EVENT_AUDIT_ALERT = "audit.alert"  # the event name the project's signed webhooks receive
SLACK_SECTION_MAX_CHARS = 3000  # Slack refuses a section text longer than this
SLACK_HEADER_MAX_CHARS = 150
NOTIFICATION_TITLE_MAX_CHARS = 300


def alert_payload(*, audit: Audit, findings: list[Finding]) -> dict:
    """What every channel of the audit's alert says, as stored in AlertDelivery.payload."""
    project, baseline = audit.project, audit.baseline
    name = project.name
    first = findings[0].title
    more = len(findings) - 1
    subject = f"[Sitewarden] {name}: {first}" + (f" (and {more} more)" if more else "")
    return {
        "version": PAYLOAD_VERSION,
        "event": EVENT_AUDIT_ALERT,
        "test": False,
        "subject": subject,
        "project": {"id": project.id, "name": name, "base_url": project.base_url},
        "audit": {
            "id": str(audit.id),
            "start_url": audit.start_url,
            "completed_at": audit.completed_at.isoformat() if audit.completed_at else None,
            "health_score": audit.health_score,
            "pages_crawled": audit.pages_crawled,
            "url": dashboard_url(f"/audits/{audit.id}/"),
        },
        "baseline": {
            "id": str(baseline.id),
            "completed_at": baseline.completed_at.isoformat() if baseline.completed_at else None,
            "health_score": baseline.health_score,
            "pages_crawled": baseline.pages_crawled,
        },
        "findings": [f.as_dict() for f in findings],
        "link": dashboard_url(changes_path(audit.id)),
        "settings": dashboard_url(f"/projects/{project.id}/alerts/"),
    }


def alert_test_payload(*, project) -> dict:
    """A test alert: says it is one, with one finding and no audit."""
    finding = Finding("test", "This is a test alert: alerts of this project reach this channel", None)
    return {
        "version": PAYLOAD_VERSION,
        "event": EVENT_AUDIT_ALERT,
        "test": True,
        "subject": f"[Sitewarden] {project.name}: test alert",
        "project": {"id": project.id, "name": project.name, "base_url": project.base_url},
        "audit": None,
        "baseline": None,
        "findings": [finding.as_dict()],
        "link": dashboard_url(f"/projects/{project.id}/alerts/"),
        "settings": dashboard_url(f"/projects/{project.id}/alerts/"),
    }


def _finding_lines(finding: dict) -> list[str]:
    lines = [f"* {finding['title']}"]
    lines += [f"  - {url}" for url in finding.get("examples") or []]
    count = finding.get("count") or 0
    shown = len(finding.get("examples") or [])
    if count > shown and shown:
        lines.append(f"  … and {count - shown} more")
    if finding.get("link"):
        lines.append(f"  See: {finding['link']}")
    return lines


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def email_text(payload: dict) -> str:
    """The plain-text body: what was compared, each finding with its example URLs and link, then the links."""
    lines = []
    audit, baseline = payload.get("audit"), payload.get("baseline")
    if audit and baseline:
        lines.append(
            f"The audit of {audit['start_url']} that finished {_when(audit['completed_at'])}, compared with the "
            f"audit that finished {_when(baseline['completed_at'])}:"
        )
    elif payload.get("test"):
        lines.append(f"A test alert for the project {payload['project']['name']}.")
    lines.append("")
    for finding in payload.get("findings") or []:
        lines += _finding_lines(finding)
        lines.append("")
    if audit:
        lines.append(f"Every change of this audit: {payload['link']}")
    lines.append(f"Alert settings of {payload['project']['name']}: {payload['settings']}")
    return "\n".join(lines) + "\n"


def _slack_text(text: str) -> str:
    """Slack's mrkdwn: &, < and > escaped (a URL with them would break its link syntax)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(payload: dict) -> dict:
    """A Slack-compatible incoming-webhook body: `text` (the notification and the fallback) and blocks, one
    section per finding (its example URLs and link), within Slack's limits."""
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": payload["subject"][:SLACK_HEADER_MAX_CHARS]}}]
    for finding in payload.get("findings") or []:
        lines = [f"*{_slack_text(finding['title'])}*"]
        lines += [f"• {_slack_text(url)}" for url in finding.get("examples") or []]
        count, shown = finding.get("count") or 0, len(finding.get("examples") or [])
        if count > shown and shown:
            lines.append(f"… and {count - shown} more")
        if finding.get("link"):
            lines.append(f"<{finding['link']}|See them in Sitewarden>")
        text = "\n".join(lines)
        if len(text) > SLACK_SECTION_MAX_CHARS:
            text = text[: SLACK_SECTION_MAX_CHARS - 1] + "…"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    blocks.append(
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{payload['link']}|Every change of this audit>"}]}
    )
    return {"text": payload["subject"] + "\n" + email_text(payload), "blocks": blocks}


def teams_message(payload: dict) -> dict:
    """A Microsoft Teams incoming-webhook (or Workflows) message: one Adaptive Card with each finding, its
    example URLs and an action to open the changes."""
    body = [{"type": "TextBlock", "text": payload["subject"], "weight": "Bolder", "size": "Medium", "wrap": True}]
    for finding in payload.get("findings") or []:
        body.append({"type": "TextBlock", "text": finding["title"], "weight": "Bolder", "wrap": True})
        examples = finding.get("examples") or []
        if examples:
            count = finding.get("count") or 0
            text = "\n".join(f"- {url}" for url in examples)
            if count > len(examples):
                text += f"\n- … and {count - len(examples)} more"
            body.append({"type": "TextBlock", "text": text, "wrap": True, "spacing": "Small"})
        if finding.get("link"):
            body.append({"type": "TextBlock", "text": f"[See them in Sitewarden]({finding['link']})", "wrap": True})
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
        "actions": [{"type": "Action.OpenUrl", "title": "Open the changes", "url": payload["link"]}],
    }
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }


def notification_text(payload: dict) -> tuple[str, str]:
    """The in-app notification's title and body (the findings, one a line)."""
    title = payload["subject"].removeprefix("[Sitewarden] ")[:NOTIFICATION_TITLE_MAX_CHARS]
    body = "\n".join(f["title"] for f in payload.get("findings") or [])
    return title, body
