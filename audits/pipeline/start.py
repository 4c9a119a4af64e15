"""Stage 1, start: validate the request, check the account's plan, reserve credits, create the running
audit and, after commit, hand it to the workers (discovery). Any refusal is AuditRefused and leaves nothing.
A scheduled run (`schedule_run`) is an ordinary start, skipped while the project's last audit still runs."""

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, CreditEntry
from accounts.selectors import credits_used_this_month
from accounts.services import credits_entry, units_needed
from audits.checks.registry import validate_overrides
from audits.dispatch import DISCOVER, task_send
from audits.errors import AuditRefused, ErrorCode
from audits.limits import MAX_PAGES_CEILING
from audits.models import Audit, AuditEvent, Project
from audits.pipeline.lifecycle import audit_event
from audits.projects import url_checked

logger = logging.getLogger(__name__)
Status = Audit.Status
EventKind = AuditEvent.Kind


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
            ErrorCode.INVALID_MAX_PAGES,
            f"Max pages must be a whole number from 1 to {MAX_PAGES_CEILING}.",
            field="max_pages",
        )
    try:
        checks = validate_overrides(project.check_overrides or {})
    except ValueError as exc:
        raise AuditRefused(
            ErrorCode.INVALID_CHECK_OVERRIDES, f"The project's check settings are invalid: {exc}"
        ) from exc
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
            task_send(DISCOVER, str(audit.id))  # after commit: the workers never see an uncommitted audit
    logger.info("audit started", extra={"audit_id": str(audit.id), "url": url, "max_pages": pages})
    return audit


def _check_plan(*, account: Account, project: Project, pages: int, lighthouse: bool) -> None:
    plan = account.plan
    if pages > plan.pages_per_audit:
        raise AuditRefused(
            ErrorCode.AUDIT_PAGE_LIMIT_EXCEEDED,
            f"The {plan.name} plan audits at most {plan.pages_per_audit} pages at a time; {pages} were asked for.",
            field="max_pages",
        )
    if Audit.objects.filter(project=project, status=Status.RUNNING).exists():
        raise AuditRefused(ErrorCode.AUDIT_ALREADY_RUNNING, "An audit of this project is still running.")
    running = Audit.objects.filter(project__account=account, status=Status.RUNNING).count()
    if running >= plan.running_audits:
        raise AuditRefused(
            ErrorCode.AUDIT_CAPACITY_REACHED,
            f"Your plan runs {plan.running_audits} audits at once and {running} are running. Try again later.",
        )
    if Audit.objects.filter(status=Status.RUNNING).count() >= settings.MAX_RUNNING_AUDITS:
        raise AuditRefused(
            ErrorCode.AUDIT_CAPACITY_REACHED, "Sitewarden is at capacity right now. Try again in a while."
        )
    needed = units_needed(max_pages=pages, lighthouse=lighthouse)
    left = plan.monthly_units - credits_used_this_month(account)
    if needed > left:
        raise AuditRefused(
            ErrorCode.INSUFFICIENT_CREDITS,
            f"This audit needs {needed} credits and {max(left, 0)} are left this month.",
            field="max_pages",
        )


def schedule_run(*, project_id: int) -> Audit | None:
    """One scheduled run: skipped, with an event on the running audit, while one is still running."""
    project = Project.objects.filter(id=project_id).first()
    if project is None:
        return None
    running = Audit.objects.filter(project=project, status=Audit.Status.RUNNING).first()
    if running is not None:
        audit_event(
            audit_id=running.id,
            kind=AuditEvent.Kind.SCHEDULE_SKIPPED,
            message="A scheduled audit was skipped: this one was still running",
        )
        return None
    try:
        return audit_start(project=project, scheduled=True)
    except AuditRefused:
        logger.warning("scheduled audit refused", exc_info=True, extra={"project": project_id})
        return None
