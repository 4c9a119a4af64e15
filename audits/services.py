"""Writes of the audit domain: start an audit, move it through its phases, finish it exactly once."""

import json
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audits.accounts import credits_entry, credits_settle, credits_used_this_month, units_needed
from audits.checks.registry import validate_overrides
from audits.errors import AuditRefused
from audits.limits import ERROR_DETAIL_CHARS, MAX_PAGES_CEILING
from audits.models import Account, Audit, AuditEvent, CreditEntry, Project
from audits.projects import url_checked
from audits.signals import audit_finished

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase
EventKind = AuditEvent.Kind


def audit_event(*, audit_id, kind: str, message: str, **data) -> None:
    """Append to the audit's event log (never updated, never deleted while the audit lives)."""
    AuditEvent.objects.create(audit_id=audit_id, kind=kind, message=message[:500], data=data)


def audit_start(
    *,
    project: Project,
    start_url: str | None = None,
    max_pages: int | None = None,
    lighthouse: bool = False,
    scheduled: bool = False,
    dispatch: bool = True,
) -> Audit:
    """Validate, check the plan, reserve credits and create a running audit; after commit, hand it to
    the workers (unless dispatch=False). Refusals raise AuditRefused with a stable code and leave nothing.
    """
    url = url_checked(start_url or project.base_url, field="start_url")
    pages = project.max_pages if max_pages is None else max_pages
    if not isinstance(pages, int) or isinstance(pages, bool) or pages < 1 or pages > MAX_PAGES_CEILING:
        raise AuditRefused(
            "invalid_max_pages", f"Max pages must be a whole number from 1 to {MAX_PAGES_CEILING}.", field="max_pages"
        )
    try:
        checks = validate_overrides(project.check_overrides or {})
    except ValueError as exc:
        raise AuditRefused("invalid_check_overrides", f"The project's check settings are invalid: {exc}") from exc
    config = {
        "max_pages": pages,
        "checks": checks,
        "include_patterns": list(project.include_patterns or []),
        "exclude_patterns": list(project.exclude_patterns or []),
        "lighthouse": bool(lighthouse),
        # crawl options (the basic-auth password is read from the project when fetching, never copied)
        "user_agent": project.user_agent,
        "auth_username": project.auth_username,
        "follow_nofollow": project.follow_nofollow,
        "crawl_subdomains": project.crawl_subdomains,
        "render_js": project.render_js,
        "render_budget_pages": project.render_budget_pages,
        "max_depth": project.max_depth,
        "max_urls_per_pattern": project.max_urls_per_pattern,
        "query_policy": project.query_policy,
        "query_keep_keys": list(project.query_keep_keys or []),
        "min_request_interval_ms": project.min_request_interval_ms,
        "max_concurrency": project.max_concurrency,
    }
    now = timezone.now()
    with transaction.atomic():
        # One start at a time per account, so two concurrent starts cannot both pass the limits.
        account = Account.objects.select_for_update().select_related("plan").get(id=project.account_id)
        _check_plan(account=account, project=project, pages=pages, lighthouse=lighthouse)
        audit = Audit.objects.create(
            project=project,
            start_url=url,
            site_url=url,
            config=config,
            started_at=now,
            last_progress_at=now,
            scheduled=scheduled,
        )
        credits_entry(
            audit=audit, kind=CreditEntry.Kind.RESERVE, units=units_needed(max_pages=pages, lighthouse=lighthouse)
        )
        audit_event(audit_id=audit.id, kind=EventKind.STARTED, message=f"Audit of {url} started", max_pages=pages)
        if dispatch:
            from audits.workflow import pipeline_dispatch

            transaction.on_commit(lambda: pipeline_dispatch(audit.id))
    logger.info("audit started", extra={"audit_id": str(audit.id), "url": url, "max_pages": pages})
    return audit


def _check_plan(*, account: Account, project: Project, pages: int, lighthouse: bool) -> None:
    plan = account.plan
    if pages > plan.pages_per_audit:
        raise AuditRefused(
            "audit_page_limit_exceeded",
            f"The {plan.name} plan audits at most {plan.pages_per_audit} pages at a time; {pages} were asked for.",
            field="max_pages",
        )
    if Audit.objects.filter(project=project, status=Status.RUNNING).exists():
        raise AuditRefused("audit_already_running", "An audit of this project is still running.")
    running = Audit.objects.filter(project__account=account, status=Status.RUNNING).count()
    if running >= plan.running_audits:
        raise AuditRefused(
            "audit_capacity_reached",
            f"Your plan runs {plan.running_audits} audits at once and {running} are running. Try again later.",
        )
    if Audit.objects.filter(status=Status.RUNNING).count() >= settings.MAX_RUNNING_AUDITS:
        raise AuditRefused("audit_capacity_reached", "Sitewarden is at capacity right now. Try again in a while.")
    needed = units_needed(max_pages=pages, lighthouse=lighthouse)
    left = plan.monthly_units - credits_used_this_month(account)
    if needed > left:
        raise AuditRefused(
            "insufficient_credits",
            f"This audit needs {needed} credits and {max(left, 0)} are left this month.",
            field="max_pages",
        )


def audit_set_phase(*, audit_id, phase: str, **fields) -> bool:
    """Move a running audit to `phase`; False when it is no longer running (cancelled, failed)."""
    current = Audit.objects.filter(id=audit_id).values_list("current_phase", flat=True).first()
    updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING).update(
        current_phase=phase, last_progress_at=timezone.now(), **fields
    )
    if updated and current != phase:
        audit_event(audit_id=audit_id, kind=EventKind.PHASE, message=f"Phase {phase}", phase=phase)
    return bool(updated)


def audit_fail(
    *, audit_id, code: str, detail: str = "", phase: str | None = None, reconciled_by: str | None = None
) -> bool:
    """Fail a running audit once; a finished audit keeps its outcome. Returns whether this call failed it."""
    current = Audit.objects.filter(id=audit_id).values_list("current_phase", flat=True).first()
    if current is None:
        return False
    detail = (detail or "")[:ERROR_DETAIL_CHARS]
    return _finish(
        audit_id,
        Status.FAILED,
        reconciled_by=reconciled_by,
        event=(EventKind.FAILED, f"Failed ({code}): {detail}"),
        error_code=code,
        error_detail=detail,
        failed_phase=phase or current,
        current_phase=Phase.FAILED,
    )


def audit_cancel(*, audit: Audit) -> bool:
    """Cancel a running audit: queued work is revoked, leases released, partial results kept."""
    cancelled = _finish(
        audit.id, Status.CANCELLED, event=(EventKind.CANCELLED, "Cancelled"), current_phase=Phase.CANCELLED
    )
    if cancelled:
        from audits.workflow import pipeline_revoke
        from scratchpad.services import frontier_release_all

        frontier_release_all(audit_id=audit.id)
        transaction.on_commit(lambda: pipeline_revoke(audit.id))
    return cancelled


def audit_complete(*, audit_id, **fields) -> bool:
    """Complete a running audit once (conditional on status, so it cannot overwrite a failure)."""
    return _finish(
        audit_id,
        Status.COMPLETED,
        event=(EventKind.COMPLETED, "Completed"),
        current_phase=Phase.COMPLETED,
        last_progress_at=timezone.now(),
        **fields,
    )


def audit_delete(*, audit: Audit) -> None:
    """Remove the audit with its pages, issues, events, scratchpad rows and stored files.

    A running audit is cancelled first. The credit ledger keeps its entries (audit_ref), as accounts do.
    """
    from audits.lighthouse import lighthouse_reports_delete

    if audit.status == Status.RUNNING:
        audit_cancel(audit=audit)
    audit_id = audit.id
    with transaction.atomic():
        Audit.objects.filter(id=audit_id).delete()
    lighthouse_reports_delete(audit_id=audit_id)


def _finish(audit_id, status: str, *, event: tuple[str, str], reconciled_by: str | None = None, **fields) -> bool:
    now = timezone.now()
    with transaction.atomic():
        updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING).update(
            status=status, completed_at=now, reconciled_by=reconciled_by or "", **fields
        )
        if not updated:
            return False
        audit = Audit.objects.select_related("project").get(id=audit_id)
        credits_settle(audit=audit, charge_units=audit.pages_crawled if status == Status.COMPLETED else 0)
        audit_event(audit_id=audit_id, kind=event[0], message=event[1], reconciled_by=reconciled_by)
        transaction.on_commit(lambda: _announce_finished(audit, reconciled_by))
    return True


def _announce_finished(audit: Audit, reconciled_by: str | None) -> None:
    duration_s = (audit.completed_at - audit.started_at).total_seconds() if audit.started_at else None
    payload = {
        "event": "audit_finished",
        "audit_id": str(audit.id),
        "status": audit.status,
        "reconciled_by": reconciled_by,
        "error_code": audit.error_code or None,
        "failed_phase": audit.failed_phase or None,
        "pages_crawled": audit.pages_crawled,
        "duration_s": round(duration_s, 3) if duration_s is not None else None,
    }
    logger.info(json.dumps(payload))
    audit_finished.send(
        sender=Audit,
        audit=audit,
        reconciled_by=reconciled_by,
        error_code=audit.error_code or None,
        pages_crawled=audit.pages_crawled,
        duration_s=duration_s,
    )
