"""Alerts: what an audit alerts about, against its baseline, and the outbox that gets it to people.

A package, one module per stage the alert passes through: `rules` (the project's rules and their defaults),
`findings` (`alert_findings(audit)`: each rule judged against the baseline), `messages` (a finding in words for
e-mail, Slack and Teams), `outbox` (the deliveries and notifications written when an audit finishes, the claim,
the sweep that re-sends), `notifications` (reading them), `channels` (where alerts go) and `sending` (one
attempt of a delivery).

This module re-exports the names the rest of the product calls. It imports neither `channels` nor `sending`:
those check URLs and post through `audits.projects` and `webhooks.services`, and `audits.projects` calls
`alert_defaults_create` from here when it creates a project, so importing them here would close a cycle.
"""

from alerts.services.findings import Finding, alert_findings
from alerts.services.notifications import notification_read, notifications_read_all
from alerts.services.outbox import (
    alert_deliveries_queue,
    alert_deliveries_sweep,
    alert_delivery_resend,
    alert_sweep_install,
)
from alerts.services.rules import alert_defaults_create, alert_rules_set, rule_threshold

__all__ = [
    "Finding",
    "alert_defaults_create",
    "alert_deliveries_queue",
    "alert_deliveries_sweep",
    "alert_delivery_resend",
    "alert_findings",
    "alert_rules_set",
    "alert_sweep_install",
    "notification_read",
    "notifications_read_all",
    "rule_threshold",
]
