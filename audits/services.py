"""The front door of audits: the one module the faces (API views, dashboard views, MCP tools, management
commands, admin) call to start, cancel, delete, refresh, reconcile and run audits, to create, change and delete
projects and their segments, to set and clear schedules and to make and revoke share links. Reads go through the
selectors.

Beneath it, the implementation: audits.pipeline (start, lifecycle, reconcile, inline), audits.projects,
audits.segment_writes, audits.schedules and audits.sharing. A function that already is the right public write is
re-exported here under its own name (go-to-definition lands on it); a function defined here names a use case of its
own. An import-linter contract keeps the faces out of those modules.
"""

from pathlib import Path

from django.db import transaction

from audits.checks.registry import CHECKS_BY_TYPE
from audits.dispatch import DISCOVER, task_send
from audits.errors import AuditRefused, ErrorCode
from audits.models import Audit
from audits.pipeline.changes import audit_baseline_set
from audits.pipeline.chromium import CHROMIUM_BASE_FLAGS, find_chromium
from audits.pipeline.lifecycle import audit_cancel, audit_delete
from audits.pipeline.lighthouse import STRATEGIES, ReportRenderFailed, report_html, sample_pages
from audits.pipeline.reconcile import Verdict, audit_status_refresh, reconcile_running_audit, reconcile_sweep
from audits.pipeline.start import Mode, audit_start, url_list_lines
from audits.projects import (
    MAX_PATTERNS,
    NUMBER_BOUNDS,
    PASSWORD_CLEARED_MESSAGE,
    PATTERN_MAX_CHARS,
    PROJECT_FIELDS,
    PROJECT_NAME_MAX_CHARS,
    ProjectInvalid,
    project_create,
    project_delete,
    project_get_or_create,
    project_update,
    project_validate,
    url_checked,
)
from audits.report_emails import (
    REPORT_RECIPIENTS_MAX,
    report_email_sweep_install,
    report_recipients_checked,
    schedule_report_recipients_set,
)
from audits.retention import RETENTION_NAME, audits_prune, retention_install
from audits.schedules import HEAL_NAME, heal_install, schedule_clear, schedule_set, schedule_validate, watchdog_install
from audits.segment_writes import segment_create, segment_delete, segment_update
from audits.selectors.verification import verification_targets
from audits.sharing import (
    SHARE_EXPIRY_DAYS,
    share_link_create,
    share_link_resolve,
    share_link_revoke,
    share_links_for_audit,
)
from audits.verification import EXTERNAL_TYPES, verifiability

__all__ = [
    # Audits: start (with the modes and the URL-list parser its forms feed it), cancel, delete, refresh, reconcile
    "Mode",
    "url_list_lines",
    "audit_start",
    "audit_cancel",
    "audit_cancel_checked",
    "audit_delete",
    "audit_status_refresh",
    "audit_run_inline",
    "Verdict",
    "reconcile_running_audit",
    "reconcile_sweep",
    # Changes: measure a completed audit against another baseline (recomputed by a task)
    "audit_baseline_set",
    # Projects: the limits the forms show, the refusal, the writes
    "MAX_PATTERNS",
    "NUMBER_BOUNDS",
    "PASSWORD_CLEARED_MESSAGE",
    "PATTERN_MAX_CHARS",
    "PROJECT_FIELDS",
    "PROJECT_NAME_MAX_CHARS",
    "ProjectInvalid",
    "url_checked",
    "project_validate",
    "project_create",
    "project_update",
    "project_get_or_create",
    "project_delete",
    # Segments: a project's named parts of its site; the reads and segment_validate are audits.segments
    "segment_create",
    "segment_update",
    "segment_delete",
    # Schedules and the periodic tasks of the watchdog and the heal sweep
    "schedule_validate",
    "schedule_set",
    "schedule_clear",
    "HEAL_NAME",
    "heal_install",
    "watchdog_install",
    # Share links
    "SHARE_EXPIRY_DAYS",
    "share_link_create",
    "share_link_revoke",
    "share_link_resolve",
    "share_links_for_audit",
    # Retention (issue 28): old audits keep their summary only; the hourly prune's periodic task
    "RETENTION_NAME",
    "audits_prune",
    "retention_install",
    # What a face uses of the pipeline's helpers (Lighthouse's plan and HTML report, the one Chromium)
    "lighthouse_runs_planned",
    "lighthouse_report_render",
    "ReportRenderFailed",
    "CHROMIUM_BASE_FLAGS",
    "find_chromium",
    # Fix verification (issue 28): an issue type's URLs re-checked as a list-mode audit linked to the original
    "issue_fix_verify",
    # Scheduled reports by e-mail (issue 28): a schedule's recipients, checked the same way by every face
    "REPORT_RECIPIENTS_MAX",
    "report_recipients_checked",
    "schedule_report_recipients_set",
    "report_email_sweep_install",
]


def audit_cancel_checked(*, audit: Audit) -> Audit:
    """Cancel through audit_cancel and return the audit as it now is; refuse (audit_not_running) when it had
    already ended. The API and the MCP server call this; the dashboard calls audit_cancel and says so itself."""
    if not audit_cancel(audit=audit):
        audit.refresh_from_db()
        raise AuditRefused("audit_not_running", f"The audit is {audit.status}; only a running audit can be cancelled.")
    audit.refresh_from_db()
    return audit


def audit_run_inline(*, audit_id) -> None:
    """Run a started audit's whole pipeline in this process, discovery to finalize (`manage.py audit` on the
    embedded default, where no worker takes the tasks). A failure is recorded on the audit and raised."""
    # The CLI that hands an audit to the workers must not load them (tests/audits/test_cli_imports.py).
    # why: the crawl's modules (fetching, parsing, persisting) are only this process's work inline
    from audits.pipeline.inline import pipeline_run_inline

    pipeline_run_inline(audit_id)


def lighthouse_runs_planned(*, audit: Audit) -> int:
    """How many Lighthouse runs the audit's phase makes: its sampled pages times the strategies (mobile,
    desktop), chosen as the Lighthouse stage chooses them (the live view's "n of m")."""
    return len(sample_pages(audit)) * len(STRATEGIES)


def lighthouse_report_render(*, json_path: Path) -> Path:
    """Lighthouse's own HTML report of a stored JSON report, rendered once and kept beside it; raises
    ReportRenderFailed when Node.js or the renderer is missing or fails."""
    return report_html(json_path)


def issue_fix_verify(*, audit: Audit, issue_type: str, user=None) -> Audit:
    """Re-check the URLs of one issue type of a completed audit as a list-mode audit linked to it
    (`Audit.verifies`, `config["verify_issue_type"]`), judged with the original's check settings so a threshold
    changed since does not pass for a fix; audits.selectors.verification reads the verdict per URL. Refused:
    `audit_not_completed`, `audit_summarised`, `issue_type_not_verifiable` (audits.verification says which types a
    list cannot judge, and why), `issue_type_not_found` (no page carries it), and whatever audit_start refuses
    (a running audit of the project, the plan, a list over MAX_LIST_URLS)."""
    if audit.status != Audit.Status.COMPLETED:
        raise AuditRefused(
            ErrorCode.AUDIT_NOT_COMPLETED, f"The audit is {audit.status}; only a completed audit's fixes are verified."
        )
    if audit.summarised_at is not None:
        raise AuditRefused(
            ErrorCode.AUDIT_SUMMARISED,
            "This audit keeps its summary only (its issue rows were pruned): verify from a newer audit.",
        )
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        raise AuditRefused(ErrorCode.ISSUE_TYPE_NOT_FOUND, f"“{issue_type}” is not an issue type.", field="issue_type")
    can = verifiability(issue_type)
    if can.rule is None:
        raise AuditRefused(
            ErrorCode.ISSUE_TYPE_NOT_VERIFIABLE,
            f"“{spec.title}” cannot be verified by re-checking its URLs: {can.reason}.",
            field="issue_type",
        )
    targets = verification_targets(audit=audit, issue_type=issue_type)
    if not targets.pages:
        raise AuditRefused(
            ErrorCode.ISSUE_TYPE_NOT_FOUND, f"No page of this audit has “{spec.title}”.", field="issue_type"
        )
    with transaction.atomic():
        verification = audit_start(
            project=audit.project,
            urls=targets.urls,
            dispatch=False,
            check_external_links=True if issue_type in EXTERNAL_TYPES else None,
        )
        config = {
            **verification.config,
            "verify_issue_type": issue_type,
            "checks": (audit.config or {}).get("checks", verification.config.get("checks")),
            "verify_requested_by": getattr(user, "pk", None),
        }
        Audit.objects.filter(id=verification.id).update(verifies=audit, config=config)
        verification.verifies, verification.config = audit, config
        task_send(DISCOVER, str(verification.id))  # after commit, as audit_start would have
    return verification
