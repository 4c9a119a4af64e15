"""What the tools answer: small typed shapes (their JSON Schemas are the tools' output schemas).

Concise on purpose: an assistant reads every field, so each one says something a person would ask about.
"""

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field


class Project(BaseModel):
    id: int
    name: str
    base_url: str
    max_pages: int
    created_at: datetime


class ProjectPage(BaseModel):
    count: int = Field(description="Projects matching, over all pages")
    page: int
    has_more: bool
    projects: list[Project]


class Phase(BaseModel):
    phase: str
    state: str = Field(description="done | current | todo | skipped | failed")


class AuditStatus(BaseModel):
    id: UUID
    project_id: int
    start_url: str
    status: str = Field(description="running | completed | failed | cancelled")
    phase: str
    finished: bool
    pages_crawled: int
    pages_known: int = Field(description="URLs discovered so far (grows while crawling)")
    percent: int = Field(description="pages_crawled of pages_known, 0-100")
    phases: list[Phase]
    health_score: int | None = Field(description="0-100 once completed")
    error_code: str | None
    error_detail: str | None = Field(description="What went wrong, for people, when the audit failed")
    created_at: datetime
    completed_at: datetime | None


class AuditRow(BaseModel):
    id: UUID
    project_id: int
    status: str
    pages_crawled: int
    health_score: int | None
    created_at: datetime


class AuditPage(BaseModel):
    count: int
    page: int
    has_more: bool
    audits: list[AuditRow]


class IssueType(BaseModel):
    type: str
    title: str
    severity: str
    count: int = Field(description="Findings of the type")
    pages: int = Field(description="Distinct pages affected (0 for a site-wide finding)")
    site_wide: bool = Field(description="A finding about the whole site; it counts as affecting every page")
    share_percent: float = Field(description="Of the crawled pages")
    priority: float
    how_to_fix: str


class Summary(BaseModel):
    audit_id: UUID
    status: str
    final: bool = Field(description="False while the audit runs: counts are of what was found so far")
    health_score: int | None
    pages_crawled: int
    issues_total: int
    counts_by_severity: dict[str, int] = Field(description="critical, warning, info")
    priority_rule: str
    top_issues: list[IssueType] = Field(description="Highest priority first (see priority_rule)")


class Issue(BaseModel):
    id: UUID
    type: str
    title: str
    severity: str
    page_id: UUID | None
    page_url: str
    details: dict


class IssuePage(BaseModel):
    count: int
    page: int
    has_more: bool
    issues: list[Issue]


class Column(BaseModel):
    key: str
    label: str


class Evidence(BaseModel):
    issue_type: str
    title: str
    unit: str = Field(description="What one finding is: pages, links, redirect chains, ...")
    count: int = Field(description="Findings (issues) of the type, over all pages")
    page: int
    has_more: bool
    columns: list[Column]
    rows: list[dict] = Field(description="One dict per row, keyed by the columns' keys")
    note: str = Field(description="What the rows leave out, if anything")


class PageRow(BaseModel):
    id: UUID
    url: str
    status_code: int | None
    fetch_class: str
    is_indexable: bool
    depth: int | None
    title: str
    response_time_ms: int | None
    word_count: int
    inlinks: int
    issues: int


class PagePage(BaseModel):
    count: int
    page: int
    has_more: bool
    pages: list[PageRow]


class PageIssue(BaseModel):
    type: str
    title: str
    severity: str
    count: int
    columns: list[Column]
    rows: list[dict] = Field(description="The evidence, keyed by the columns' keys (the first ones)")


class Inlink(BaseModel):
    source_page_id: UUID
    source_url: str
    anchor_text: str
    nofollow: bool


class Outlink(BaseModel):
    target_url: str
    anchor_text: str
    nofollow: bool
    internal: bool


class ExternalLinkSource(BaseModel):
    source_url: str = Field(description="A crawled page linking to the target")
    anchor_text: str


class ExternalLinkRow(BaseModel):
    id: UUID
    url: str
    host: str
    outcome: str = Field(description="ok | redirected | client_error | server_error | timeout | dns_error | ...")
    outcome_label: str = Field(description="The outcome in words")
    status_code: int | None = Field(description="The last answer's status; null: no HTTP answer")
    method: str = Field(description="HEAD, or GET where HEAD was refused")
    final_url: str = Field(description="Where its redirects ended (empty without redirects)")
    redirect_hops: int
    error: str
    linking_pages: int = Field(description="Crawled pages linking to it (external_link_pages lists them)")
    linking_examples: list[ExternalLinkSource] = Field(description="The first few of them, by URL, with anchors")


class ExternalLinkPage(BaseModel):
    checking_on: bool = Field(description="Whether the audit checked its outbound links (a project setting)")
    counts_by_outcome: dict[str, int] = Field(description="Targets per outcome, whatever the filters")
    problems: int = Field(description="Targets worth a look: every outcome but ok and redirected")
    count: int = Field(description="Targets matching the filters, over all pages")
    page: int
    has_more: bool
    links: list[ExternalLinkRow]


class ExternalLinkPages(BaseModel):
    url: str
    outcome: str
    count: int = Field(description="Crawled pages linking to the target")
    page: int
    has_more: bool
    pages: list[Inlink]


class ChangeRow(BaseModel):
    url: str
    field: str = Field(
        description="status, indexability, canonical, title, ... ; added/removed: a URL only one "
        "audit crawled; robots_txt: a line of robots.txt; sitemap: a sitemap document (url: the sitemap's) found or "
        "gone, fixed or now failing (before/after: read, or error: …)"
    )
    field_label: str = Field(description="The field in words")
    direction: str = Field(description="added | removed | changed | up | down (indexability: up = became indexable)")
    before: str = Field(description="The baseline's value as text (empty: none)")
    after: str = Field(description="This audit's value as text (empty: none)")


class ChangePage(BaseModel):
    state: str = Field(
        description="changed | unchanged | first (nothing to compare with) | no_baseline | pending (being "
        "computed) | running | not_completed"
    )
    baseline_audit_id: UUID | None = Field(description="The audit the changes are measured against")
    baseline_created_at: datetime | None
    counts_by_field: dict[str, int] = Field(description="Changes per field (of the segment), whatever the filters")
    count: int = Field(description="Changes matching the filters, over all pages")
    page: int
    has_more: bool
    changes: list[ChangeRow]


class PageDetail(BaseModel):
    id: UUID
    url: str
    status_code: int | None
    fetch_class: str
    fetch_error: str
    redirect_url: str
    canonical_url: str
    title: str
    meta_description: str | None
    h1: str
    is_indexable: bool
    depth: int | None
    in_sitemap: bool
    response_time_ms: int | None
    word_count: int
    issues: list[PageIssue]
    inlinks_count: int
    inlinks: list[Inlink] = Field(description="The first ones; inlinks_count is exact")
    outlinks_count: int
    outlinks: list[Outlink] = Field(description="The first ones; outlinks_count is exact")


class ComparisonRow(BaseModel):
    type: str
    severity: str
    new: int
    fixed: int
    persisting: int


class Comparison(BaseModel):
    audit_id: UUID
    base_audit_id: UUID
    totals: dict[str, int] = Field(description="new, fixed, persisting")
    by_type: list[ComparisonRow]


class ExportLinks(BaseModel):
    audit_id: UUID
    issues_csv: str
    issues_json: str
    issues_xlsx: str = Field(description="A spreadsheet workbook: an Overview sheet and one sheet per issue type")
    pages_csv: str
    pages_json: str
    external_links_csv: str = Field(description="The external link targets, one row each (outcome, status, pages)")
    external_link_pages_csv: str = Field(description="One row per external target and linking page, with anchor")
    changes_csv: str = Field(description="The changes against the baseline: url, field, direction, before, after")
    report_resource: str = Field(description="The Markdown report, as an MCP resource URI")
    how_to_download: str


class VerificationUrl(BaseModel):
    url: str
    outcome: str = Field(description="fixed | still_present | unreachable")
    note: str = Field(description="Why, in words")


class Verification(BaseModel):
    """A fix verification: a list-mode audit re-checking the URLs of one issue type of another audit."""

    audit_id: UUID = Field(description="The verification audit (poll audit_status until finished)")
    verifies: UUID = Field(description="The audit whose issue type it re-checks")
    issue_type: str
    title: str
    status: str = Field(description="running | completed | failed | cancelled: no URLs until completed")
    label: str = Field(description='"verified fixed on 4 Dec 2026", "3 of 5 fixed on 4 Dec 2026", …')
    counts: dict[str, int] = Field(description="URLs per outcome: fixed, still_present, unreachable")
    total: int
    note: str = Field(description="What the re-check could not cover; often empty")
    checked_at: datetime | None
    urls: list[VerificationUrl] = Field(description="This page of the URLs re-checked, in URL order")
    has_more: bool


class GateRuleResult(BaseModel):
    rule: str = Field(description="As written: new-critical, score-drop=5, …")
    passed: bool
    judged: bool = Field(description="False: nothing to judge it on (no baseline, no health score); it then passes")
    reason: str = Field(description="One line")
    count: int = Field(description="URLs found (score rules: points; pages-drop: pages lost)")
    examples: list[str] = Field(description="Up to 10 example URLs")


class Gate(BaseModel):
    audit_id: UUID
    baseline_id: UUID | None = Field(description="The audit judged against; null: none, every rule passes")
    passed: bool = Field(description="Every rule passed")
    reason: str = Field(description="One line: the rules that fired and why, or that all passed")
    rules: list[GateRuleResult]
