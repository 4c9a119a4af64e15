"""The MCP tools of projects and audits: list and create projects, start, follow, list and cancel audits, verify a
fix and read its verdict. Each is thin (assistants.server says how): the caller's account scopes every lookup and
the writes go through audits.services."""

from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field

from accounts.services import account_get_or_create_for_user
from assistants import shapes
from assistants.errors import not_found
from assistants.tooling import (
    PAGE_SIZE_DEFAULT,
    AuditId,
    Caller,
    PageNumber,
    PageSize,
    ProjectId,
    _audit,
    _issue_type,
    _paged,
    _project,
    tool,
)
from audits.models import Audit
from audits.selectors import audits as audit_reads
from audits.selectors import verification as verification_reads
from audits.selectors.projects import project_list_for
from audits.services import audit_cancel_checked, audit_start, audit_status_refresh, issue_fix_verify, project_create
from config.inputs import ID_MAX, ID_MIN


def _status(audit: Audit) -> shapes.AuditStatus:
    progress = audit_reads.audit_progress(audit=audit)
    failed = audit.status == Audit.Status.FAILED
    return shapes.AuditStatus(
        id=audit.id,
        project_id=audit.project_id,
        start_url=audit.start_url,
        status=audit.status,
        phase=audit.current_phase,
        finished=audit.is_finished,
        pages_crawled=audit.pages_crawled,
        pages_known=progress["total"],
        percent=progress["percent"],
        phases=[shapes.Phase(phase=step.phase, state=step.state) for step in progress["steps"]],
        health_score=audit.health_score,
        error_code=audit.error_code or None,
        error_detail=(audit.error_detail or progress["error"]) if failed else None,
        created_at=audit.created_at,
        completed_at=audit.completed_at,
    )


@tool(title="List projects", read_only=True)
def list_projects(
    caller: Caller,
    name_contains: Annotated[str, Field(max_length=200, description="Only names containing this (any case)")] = "",
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.ProjectPage:
    """The projects (sites) of your account, by name."""
    projects = project_list_for(caller.user)
    if name_contains:
        projects = projects.filter(name__icontains=name_contains)
    count, rows, more = _paged(projects, page, page_size)
    return shapes.ProjectPage(
        count=count,
        page=page,
        has_more=more,
        projects=[
            shapes.Project(id=p.id, name=p.name, base_url=p.base_url, max_pages=p.max_pages, created_at=p.created_at)
            for p in rows
        ],
    )


@tool(title="Create a project", read_only=False)
def create_project(
    caller: Caller,
    name: Annotated[str, Field(description="Unique in your account")],
    base_url: Annotated[str, Field(description="http(s) address where audits start, e.g. https://example.com/")],
    max_pages: Annotated[int | None, Field(description="Pages per audit (default: the plan's)")] = None,
    include_patterns: Annotated[list[str] | None, Field(description="RE2 regexes; a URL must match one")] = None,
    exclude_patterns: Annotated[list[str] | None, Field(description="RE2 regexes; a match skips the URL")] = None,
    max_depth: Annotated[int | None, Field(description="Clicks from the start page (default: no limit)")] = None,
    render_js: Annotated[bool | None, Field(description="Render pages in Chromium before checking them")] = None,
    crawl_subdomains: Annotated[bool | None, Field(description="Also crawl the site's subdomains")] = None,
) -> shapes.Project:
    """Create a project: the same rules as the dashboard and the API (URL policy, patterns, limits)."""
    options = {
        "max_pages": max_pages,
        "include_patterns": include_patterns,
        "exclude_patterns": exclude_patterns,
        "max_depth": max_depth,
        "render_js": render_js,
        "crawl_subdomains": crawl_subdomains,
    }
    p = project_create(
        account=account_get_or_create_for_user(user=caller.user),
        owner=caller.user,
        name=name,
        base_url=base_url,
        **{key: value for key, value in options.items() if value is not None},
    )
    return shapes.Project(id=p.id, name=p.name, base_url=p.base_url, max_pages=p.max_pages, created_at=p.created_at)


@tool(title="Start an audit", read_only=False, action="audit_start")
def start_audit(
    caller: Caller,
    project_id: ProjectId,
    start_url: Annotated[
        str, Field(max_length=4096, description="Default: the project's base URL; must be on the project's site")
    ] = "",
    max_pages: Annotated[int | None, Field(description="Default: the project's max pages")] = None,
    lighthouse: Annotated[bool, Field(description="Also sample pages through Lighthouse")] = False,
) -> shapes.AuditStatus:
    """Start an audit of a project; it runs in the background: poll audit_status until `finished`."""
    audit = audit_start(
        project=_project(caller, project_id), start_url=start_url or None, max_pages=max_pages, lighthouse=lighthouse
    )
    return _status(audit)


@tool(title="Audit status", read_only=True)
def audit_status(caller: Caller, audit_id: AuditId) -> shapes.AuditStatus:
    """Status and progress of an audit (a stuck audit is judged at once, as the API's read does)."""
    return _status(audit_status_refresh(audit_id=_audit(caller, audit_id).id))


@tool(title="List audits", read_only=True)
def list_audits(
    caller: Caller,
    project_id: Annotated[int | None, Field(ge=ID_MIN, le=ID_MAX, description="Only this project's audits")] = None,
    status: Literal["running", "completed", "failed", "cancelled"] | None = None,
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.AuditPage:
    """Audits of your account, newest first."""
    audits = audit_reads.audit_list_for(caller.user)
    if project_id is not None:
        audits = audits.filter(project_id=project_id)
    if status:
        audits = audits.filter(status=status)
    count, rows, more = _paged(audits, page, page_size)
    return shapes.AuditPage(
        count=count,
        page=page,
        has_more=more,
        audits=[
            shapes.AuditRow(
                id=a.id,
                project_id=a.project_id,
                status=a.status,
                pages_crawled=a.pages_crawled,
                health_score=a.health_score,
                created_at=a.created_at,
            )
            for a in rows
        ],
    )


@tool(title="Cancel an audit", read_only=False, destructive=True)
def cancel_audit(caller: Caller, audit_id: AuditId) -> shapes.AuditStatus:
    """Cancel a running audit (audit_not_running when it had already ended); its pages so far are kept."""
    return _status(audit_cancel_checked(audit=_audit(caller, audit_id)))


def _verification(result: verification_reads.FixVerification, page: int, page_size: int) -> shapes.Verification:
    start = (page - 1) * page_size
    rows = result.rows[start : start + page_size]
    return shapes.Verification(
        audit_id=result.audit.id,
        verifies=result.original_id,
        issue_type=result.issue_type,
        title=result.title,
        status=result.status,
        label=result.label,
        counts=result.counts,
        total=result.total,
        note=result.note,
        checked_at=result.checked_at,
        urls=[shapes.VerificationUrl(url=r.url, outcome=r.outcome, note=r.note) for r in rows],
        has_more=start + len(rows) < result.total,
    )


@tool(title="Verify a fix", read_only=False, action="audit_start")
def verify_fix(
    caller: Caller,
    audit_id: Annotated[UUID, Field(description="The completed audit whose issue type to re-check")],
    issue_type: Annotated[str, Field(description="An issue type of that audit, e.g. missing-h1")],
) -> shapes.Verification:
    """Re-check only the URLs that carry an issue type of a completed audit (a list-mode audit linked to it); poll
    fix_verification with the returned audit_id for each URL's verdict: fixed, still_present or unreachable. Types a
    list cannot judge (site-wide findings, duplicates, orphans, click depth, redirect chains) are refused with
    issue_type_not_verifiable."""
    verification = issue_fix_verify(
        audit=_audit(caller, audit_id), issue_type=_issue_type(issue_type), user=caller.user
    )
    return _verification(verification_reads.fix_verification(audit=verification), 1, PAGE_SIZE_DEFAULT)


@tool(title="Fix verification", read_only=True)
def fix_verification(
    caller: Caller, audit_id: AuditId, page: PageNumber = 1, page_size: PageSize = PAGE_SIZE_DEFAULT
) -> shapes.Verification:
    """A fix verification's verdict per URL (the audit_id verify_fix returned) and its counts; not_found for an
    audit that is not a verification."""
    result = verification_reads.fix_verification(audit=_audit(caller, audit_id))
    if result is None:
        raise not_found("fix verification", "verify_fix")
    return _verification(result, page, page_size)
