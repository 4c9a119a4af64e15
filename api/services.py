"""Writes only the API needs: cancelling with a refusal when the audit had already ended.

(Projects are written through audits.projects, as the dashboard, the admin and the CLI do.)
"""

from audits.errors import AuditRefused
from audits.models import Audit
from audits.pipeline.lifecycle import audit_cancel


def audit_cancel_checked(*, audit: Audit) -> Audit:
    """Cancel through audit_cancel; refuse (audit_not_running) when it had already ended."""
    if not audit_cancel(audit=audit):
        audit.refresh_from_db()
        raise AuditRefused("audit_not_running", f"The audit is {audit.status}; only a running audit can be cancelled.")
    audit.refresh_from_db()
    return audit
