"""Writes of the audit domain: start an audit, move it through its phases, finish it exactly once."""

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audits.errors import AuditRefused
from audits.limits import DEFAULT_MAX_PAGES, ERROR_DETAIL_CHARS, MAX_PAGES_CEILING
from audits.models import Audit, Project
from crawler.urls import InvalidURL, validate_start_url

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase


def project_get_or_create(*, owner, name: str, base_url: str) -> Project:
    project, _ = Project.objects.get_or_create(owner=owner, name=name, defaults={"base_url": base_url})
    return project


def audit_start(
    *,
    project: Project,
    start_url: str | None = None,
    max_pages: int | None = None,
    lighthouse: bool = False,
    dispatch: bool = True,
) -> Audit:
    """Validate and create a running audit; after commit, hand it to the workers (unless dispatch=False).

    Refusals raise AuditRefused with a stable code and leave nothing behind.
    """
    raw_url = start_url or project.base_url
    try:
        url = validate_start_url(raw_url, allow_private=settings.ALLOW_PRIVATE_TARGETS)
    except InvalidURL as exc:
        raise AuditRefused(exc.code, str(exc), field="start_url") from exc
    pages = project.max_pages if max_pages is None else max_pages
    if not isinstance(pages, int) or pages < 1 or pages > MAX_PAGES_CEILING:
        raise AuditRefused(
            "invalid_max_pages", f"Max pages must be a whole number from 1 to {MAX_PAGES_CEILING}.", field="max_pages"
        )
    config = {
        "max_pages": pages or DEFAULT_MAX_PAGES,
        "include_patterns": list(project.include_patterns or []),
        "exclude_patterns": list(project.exclude_patterns or []),
        "lighthouse": bool(lighthouse),
    }
    now = timezone.now()
    with transaction.atomic():
        audit = Audit.objects.create(
            project=project,
            start_url=url,
            site_url=url,
            config=config,
            started_at=now,
            last_progress_at=now,
        )
        if dispatch:
            from audits.workflow import pipeline_dispatch

            transaction.on_commit(lambda: pipeline_dispatch(audit.id))
    logger.info("audit started", extra={"audit_id": str(audit.id), "url": url, "max_pages": pages})
    return audit


def audit_set_phase(*, audit_id, phase: str, **fields) -> bool:
    """Move a running audit to `phase`; False when it is no longer running (cancelled, failed)."""
    updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING).update(
        current_phase=phase, last_progress_at=timezone.now(), **fields
    )
    return bool(updated)


def audit_fail(*, audit_id, code: str, detail: str = "", phase: str | None = None) -> bool:
    """Fail a running audit once; a finished audit keeps its outcome. Returns whether this call failed it."""
    audit = Audit.objects.filter(id=audit_id).only("current_phase").first()
    if audit is None:
        return False
    updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING).update(
        status=Status.FAILED,
        error_code=code,
        error_detail=(detail or "")[:ERROR_DETAIL_CHARS],
        failed_phase=phase or audit.current_phase,
        current_phase=Phase.FAILED,
        completed_at=timezone.now(),
    )
    if updated:
        logger.warning("audit failed", extra={"audit_id": str(audit_id), "error_code": code})
    return bool(updated)


def audit_complete(*, audit_id, **fields) -> bool:
    """Complete a running audit once (conditional on status, so it cannot overwrite a failure)."""
    now = timezone.now()
    updated = Audit.objects.filter(id=audit_id, status=Status.RUNNING).update(
        status=Status.COMPLETED,
        current_phase=Phase.COMPLETED,
        completed_at=now,
        last_progress_at=now,
        **fields,
    )
    return bool(updated)
