"""The MCP tools that read an audit's results: its summary, issues and one type's evidence, pages and one page,
external links and their linking pages, changes against the baseline, a comparison of two audits, the release
gate and where to download the exports. Each is thin (assistants.server says how) and reads through the
selectors every face shares."""

from typing import Annotated, Literal
from uuid import UUID

from django.urls import reverse
from pydantic import Field

from assistants import shapes
from assistants.errors import VALIDATION_ERROR, Refused, not_found
from assistants.report import REPORT_URI
from assistants.tooling import (
    PAGE_SIZE_DEFAULT,
    AuditId,
    Caller,
    PageNumber,
    PageSize,
    _audit,
    _issue_type,
    _paged,
    tool,
)
from audits.comparison import check_spec
from audits.evidence import evidence_columns, evidence_count_unit, evidence_note, evidence_queryset, evidence_records
from audits.gate import GATE_RULES_TEXT_MAX_CHARS, gate_evaluate, gate_rules_parse
from audits.models import Page
from audits.priority import PRIORITY_RULE, TOP_ISSUES_DEFAULT, top_issues
from audits.segments import resolve_segment
from audits.selectors import audits as audit_reads
from audits.selectors import changes as change_reads
from audits.selectors import external as external_reads
from audits.selectors import issues as issue_reads
from audits.selectors import links as link_reads
from audits.selectors import pages as page_reads

LINKS_SHOWN = 50  # inlinks and outlinks listed by get_page (the counts are exact)
EXTERNAL_EXAMPLES_SHOWN = 3  # linking pages listed with each external target (external_link_pages lists them all)
GRID_COLUMNS = ("url", "inlinks", "issues")  # what list_pages annotates besides the page's own fields
SEVERITY = Literal["critical", "warning", "info"]
CHARS_MAX = 10_000  # the pages grid's over/under N characters, as its form bounds it


@tool(title="Audit summary", read_only=True)
def audit_summary(
    caller: Caller,
    audit_id: AuditId,
    top: Annotated[int, Field(ge=1, le=100, description="How many issue types to list")] = TOP_ISSUES_DEFAULT,
) -> shapes.Summary:
    """Health score, issue counts by severity and the top issue types by priority, each with how to fix it."""
    audit = _audit(caller, audit_id)
    counts = issue_reads.issues_by_severity(audit=audit)
    crawled = Page.objects.filter(audit=audit).count()
    return shapes.Summary(
        audit_id=audit.id,
        status=audit.status,
        final=audit.is_finished,
        health_score=audit.health_score,
        pages_crawled=audit.pages_crawled,
        issues_total=sum(counts.values()),
        counts_by_severity=counts,
        priority_rule=PRIORITY_RULE,
        top_issues=[
            shapes.IssueType(
                type=t.type,
                title=t.spec.title,
                severity=t.severity,
                count=t.count,
                pages=t.pages,
                site_wide=t.site_wide,
                share_percent=t.percent,
                priority=t.priority,
                how_to_fix=t.spec.how_to_fix,
            )
            for t in top_issues(audit=audit, pages_crawled=crawled, limit=top)
        ],
    )


@tool(title="List issues", read_only=True)
def list_issues(
    caller: Caller,
    audit_id: AuditId,
    type: Annotated[str | None, Field(description="One issue type, e.g. missing-title")] = None,
    severity: SEVERITY | None = None,
    url_contains: Annotated[str, Field(max_length=500, description="Page URL contains")] = "",
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.IssuePage:
    """The audit's issues, by type then URL; filter by type, severity or URL."""
    issues = issue_reads.issue_list(audit=_audit(caller, audit_id))
    if type:
        issues = issues.filter(type=_issue_type(type, field="type"))
    if severity:
        issues = issues.filter(severity=severity)
    if url_contains:
        issues = issues.filter(page_url__icontains=url_contains)
    count, rows, more = _paged(issues, page, page_size)
    return shapes.IssuePage(
        count=count,
        page=page,
        has_more=more,
        issues=[
            shapes.Issue(
                id=i.id,
                type=i.type,
                title=check_spec(i.type).title,
                severity=i.severity,
                page_id=i.page_id,
                page_url=i.page_url,
                details=i.details if isinstance(i.details, dict) else {"value": i.details},
            )
            for i in rows
        ],
    )


@tool(title="Evidence of one issue type", read_only=True)
def issue_evidence(
    caller: Caller,
    audit_id: AuditId,
    issue_type: Annotated[str, Field(description="An issue type, e.g. broken-internal-link")],
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.Evidence:
    """The findings of one issue type as a table with named columns (the dashboard's evidence table)."""
    audit = _audit(caller, audit_id)
    issue_type = _issue_type(issue_type)
    count, issues, more = _paged(evidence_queryset(audit=audit, issue_type=issue_type), page, page_size)
    return shapes.Evidence(
        issue_type=issue_type,
        title=check_spec(issue_type).title,
        unit=evidence_count_unit(issue_type),
        count=count,
        page=page,
        has_more=more,
        columns=[shapes.Column(key=key, label=label) for key, label in evidence_columns(issue_type)],
        rows=[row for _page_id, row in evidence_records(issue_type, issues)],
        note=evidence_note(audit=audit, issue_type=issue_type),
    )


@tool(title="List pages", read_only=True)
def list_pages(
    caller: Caller,
    audit_id: AuditId,
    view: Literal[tuple(page_reads.VIEWS)] = page_reads.DEFAULT_VIEW,
    show: Annotated[
        str, Field(max_length=40, description="One of the view's filters: missing, duplicate, over, under, ...")
    ] = "",
    chars: Annotated[
        int | None, Field(ge=0, le=CHARS_MAX, description="N of the over/under N characters filters")
    ] = None,
    status: Annotated[
        str, Field(pattern=r"^(|none|[1-5]xx|[1-5][0-9][0-9])$", description="404, 4xx, or none (no HTTP answer)")
    ] = "",
    fetch_class: Literal[tuple(Page.FetchClass.values)] | None = None,
    indexable: Literal["yes", "no"] | None = None,
    issue_type: Annotated[str, Field(description="Only pages with an issue of this type")] = "",
    url_contains: Annotated[str, Field(max_length=500)] = "",
    sort: Annotated[
        Literal[tuple(k for key in page_reads.PAGE_SORTS for k in (key, f"-{key}"))],
        Field(description="A column; a leading - sorts descending"),
    ] = "url",
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.PagePage:
    """The audit's crawled pages with the pages grid's views, filters and sorts."""
    audit = _audit(caller, audit_id)
    filtered = page_reads.page_filter(
        audit=audit,
        view=view,
        show=show,
        chars=chars,
        status=status,
        fetch_class=fetch_class or "",
        indexable=indexable or "",
        issue_type=_issue_type(issue_type) if issue_type else "",
        url_contains=url_contains,
    )
    columns = [page_reads.COLUMNS[key] for key in GRID_COLUMNS]
    counted = link_reads.page_counts_stored(audit=audit)
    rows = page_reads.page_list(pages=filtered, columns=columns, sort=sort, counted=counted)
    count, rows, more = _paged(rows, page, page_size)
    return shapes.PagePage(
        count=count,
        page=page,
        has_more=more,
        pages=[
            shapes.PageRow(
                id=p.id,
                url=p.url,
                status_code=p.status_code,
                fetch_class=p.fetch_class,
                is_indexable=p.is_indexable,
                depth=p.depth,
                title=p.title,
                response_time_ms=p.response_time_ms,
                word_count=p.word_count,
                inlinks=p.inlinks,
                issues=p.issues_total,
            )
            for p in rows
        ],
    )


@tool(title="One page", read_only=True)
def get_page(
    caller: Caller,
    audit_id: AuditId,
    page_id: Annotated[UUID | None, Field(description="The page's id (list_pages)")] = None,
    url: Annotated[str | None, Field(max_length=4096, description="Or the page's exact crawled URL")] = None,
) -> shapes.PageDetail:
    """One crawled page: its fields, its issues with their evidence, and the links to it (inlinks) and from it
    (outlinks)."""
    audit = _audit(caller, audit_id)
    if (page_id is None) == (url is None):
        raise Refused(VALIDATION_ERROR, "Give either page_id or url (one of them).", field="page_id")
    pages = Page.objects.filter(audit=audit)
    p = pages.filter(id=page_id).first() if page_id else pages.filter(url=url).first()
    if p is None:
        raise not_found("page in this audit", "list_pages")
    links = link_reads.page_links(page=p, limit=LINKS_SHOWN)
    return shapes.PageDetail(
        id=p.id,
        url=p.url,
        status_code=p.status_code,
        fetch_class=p.fetch_class,
        fetch_error=p.fetch_error,
        redirect_url=p.redirect_url,
        canonical_url=p.canonical_url,
        title=p.title,
        meta_description=p.meta_description,
        h1=p.h1,
        is_indexable=p.is_indexable,
        depth=p.depth,
        in_sitemap=p.in_sitemap,
        response_time_ms=p.response_time_ms,
        word_count=p.word_count,
        issues=[
            shapes.PageIssue(
                type=g.type,
                title=g.spec.title,
                severity=g.severity,
                count=g.count,
                columns=[shapes.Column(key=key, label=label) for key, label in g.columns],
                rows=g.rows,
            )
            for g in page_reads.page_issue_groups(page=p)
        ],
        inlinks_count=links["inlinks_count"],
        inlinks=[
            shapes.Inlink(
                source_page_id=link["source_page_id"],
                source_url=link["source_page__url"],
                anchor_text=link["anchor_text"],
                nofollow=link["nofollow"],
            )
            for link in links["inlinks"]
        ],
        outlinks_count=links["outlinks_count"],
        outlinks=[shapes.Outlink(**link) for link in links["outlinks"]],
    )


@tool(title="List external links", read_only=True)
def list_external_links(
    caller: Caller,
    audit_id: AuditId,
    outcome: Literal[tuple(external_reads.Outcome.values)] | None = None,
    problems_only: Annotated[
        bool, Field(description="Only targets worth a look: every outcome but ok and redirected")
    ] = False,
    host: Annotated[str, Field(max_length=255, description="Only this host (exact, any case)")] = "",
    url_contains: Annotated[str, Field(max_length=500, description="URL contains (any case)")] = "",
    sort: Annotated[
        Literal[tuple(external_reads.EXTERNAL_SORTS)],
        Field(description="-pages: most linking pages first; url; outcome; host"),
    ] = external_reads.DEFAULT_EXTERNAL_SORT,
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.ExternalLinkPage:
    """The audit's outbound links: each distinct external target, what asking it once answered (broken, server
    error, timeout, unknown host, redirects, could not verify behind bot protection...) and the pages linking to it."""
    audit = _audit(caller, audit_id)
    counts = external_reads.external_counts(audit=audit)
    links = external_reads.external_link_filter(
        audit=audit, outcome=outcome or "", problems=problems_only, host=host, url_contains=url_contains
    )
    count, rows, more = _paged(external_reads.external_link_list(links, sort=sort), page, page_size)
    examples = external_reads.external_linking_sample(
        audit=audit, urls=[r.url for r in rows], per_target=EXTERNAL_EXAMPLES_SHOWN
    )
    return shapes.ExternalLinkPage(
        checking_on=external_reads.external_checking_on(audit=audit),
        counts_by_outcome=counts.as_dict(),
        problems=counts.problems,
        count=count,
        page=page,
        has_more=more,
        links=[
            shapes.ExternalLinkRow(
                id=r.id,
                url=r.url,
                host=r.host,
                outcome=r.outcome,
                outcome_label=r.get_outcome_display(),
                status_code=r.status_code,
                method=r.method,
                final_url=r.final_url,
                redirect_hops=r.redirect_hops,
                error=r.error,
                linking_pages=r.linking_pages,
                linking_examples=[
                    shapes.ExternalLinkSource(source_url=e["source_page__url"], anchor_text=e["anchor_text"])
                    for e in examples[r.url]
                ],
            )
            for r in rows
        ],
    )


@tool(title="Pages linking to an external link", read_only=True)
def external_link_pages(
    caller: Caller,
    audit_id: AuditId,
    url: Annotated[str, Field(max_length=4096, description="The external target's exact URL (list_external_links)")],
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.ExternalLinkPages:
    """The crawled pages linking to one external target, by page URL, with their anchor text."""
    audit = _audit(caller, audit_id)
    link = external_reads.external_link_get(audit=audit, url=url)
    if link is None:
        raise not_found("external link target in this audit", "list_external_links")
    count, rows, more = _paged(external_reads.external_linking_pages(audit=audit, url=link.url), page, page_size)
    return shapes.ExternalLinkPages(
        url=link.url,
        outcome=link.outcome,
        count=count,
        page=page,
        has_more=more,
        pages=[
            shapes.Inlink(
                source_page_id=e["source_page_id"],
                source_url=e["source_page__url"],
                anchor_text=e["anchor_text"],
                nofollow=e["nofollow"],
            )
            for e in rows
        ],
    )


@tool(title="List changes against the baseline", read_only=True)
def list_changes(
    caller: Caller,
    audit_id: AuditId,
    field: Literal[tuple(change_reads.Field.values)] | None = None,
    direction: Literal[tuple(change_reads.Direction.values)] | None = None,
    segment: Annotated[
        str, Field(max_length=600, description="Only this segment: a key of the API's /audits/{id}/segments/")
    ] = "",
    page: PageNumber = 1,
    page_size: PageSize = PAGE_SIZE_DEFAULT,
) -> shapes.ChangePage:
    """What changed on each URL since the audit's baseline (the project's previous completed audit unless another
    was chosen): status, redirect, indexability, canonical, robots directives, title, description, H1, word count,
    depth, inlinks, structured data, hreflang, main text, in a sitemap, URLs added or removed, robots.txt lines,
    sitemap documents found, gone or now failing (field="sitemap"). By URL."""
    audit = _audit(caller, audit_id)
    chosen = resolve_segment(audit=audit, param=segment) if segment else None
    counts = change_reads.change_counts(audit=audit, segment=chosen)
    whole = counts if chosen is None else change_reads.change_counts(audit=audit)
    status = change_reads.changes_status(audit=audit, total=whole.total)
    rows = change_reads.change_list(audit=audit, field=field, direction=direction, segment=chosen)
    count, shown, more = _paged(rows, page, page_size)
    return shapes.ChangePage(
        state=status.state,
        baseline_audit_id=status.baseline.id if status.baseline else None,
        baseline_created_at=status.baseline.created_at if status.baseline else None,
        counts_by_field=counts.as_dict(),
        count=count,
        page=page,
        has_more=more,
        changes=[
            shapes.ChangeRow(
                url=r.url,
                field=r.field,
                field_label=r.get_field_display(),
                direction=r.direction,
                before=r.before,
                after=r.after,
            )
            for r in shown
        ],
    )


@tool(title="Compare two audits", read_only=True)
def compare_audits(
    caller: Caller,
    audit_id: AuditId,
    base_audit_id: Annotated[UUID, Field(description="The earlier audit of the same project")],
) -> shapes.Comparison:
    """Issues of an audit against an earlier one of the same project: new, fixed and persisting, per type."""
    result = audit_reads.audit_comparison(audit=_audit(caller, audit_id), base=_audit(caller, base_audit_id))
    return shapes.Comparison(
        audit_id=result["audit"],
        base_audit_id=result["base"],
        totals=result["totals"],
        by_type=[shapes.ComparisonRow(**row) for row in result["by_type"]],
    )


@tool(title="Check the release gate", read_only=True)
def check_gate(
    caller: Caller,
    audit_id: AuditId,
    rules: Annotated[
        str,
        Field(
            max_length=GATE_RULES_TEXT_MAX_CHARS,
            description="Comma-separated: new-critical, new-issue=TYPE, score-drop=N, score-below=N, became-noindex, "
            "new-broken, pages-drop=N (e.g. `new-critical,score-drop=5`)",
        ),
    ],
) -> shapes.Gate:
    """The release gate on a completed audit against its baseline (the previous completed audit by default): each
    rule passed or failed with a one-line reason, a count and up to 10 example URLs; without a baseline a rule
    passes with the reason "no baseline". The same judgement as `manage.py audit --fail-on` and the API's gate."""
    audit = _audit(caller, audit_id)
    result = gate_evaluate(audit=audit, rules=gate_rules_parse(rules))
    return shapes.Gate(
        audit_id=result.audit_id,
        baseline_id=result.baseline_id,
        passed=result.passed,
        reason=result.reason,
        rules=[shapes.GateRuleResult(**vars(r)) for r in result.rules],
    )


@tool(title="Export links", read_only=True)
def export_links(caller: Caller, audit_id: AuditId) -> shapes.ExportLinks:
    """Where to download the audit's issues and pages as CSV or JSON (the API's streamed exports), and the issues
    as an XLSX workbook."""
    audit = _audit(caller, audit_id)

    def link(name: str) -> str:
        return caller.base_url + reverse(f"api:{name}", kwargs={"pk": audit.id})

    return shapes.ExportLinks(
        audit_id=audit.id,
        issues_csv=link("export-issues-csv"),
        issues_json=link("export-issues-json"),
        issues_xlsx=link("export-issues-xlsx"),
        pages_csv=link("export-pages-csv"),
        pages_json=link("export-pages-json"),
        external_links_csv=link("export-external-links-csv"),
        external_link_pages_csv=link("export-external-link-pages-csv"),
        changes_csv=link("export-changes-csv"),
        report_resource=REPORT_URI.format(audit_id=audit.id),
        how_to_download="GET with the header `Authorization: Bearer <your API token>` (the token this session uses).",
    )
