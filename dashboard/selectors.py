"""Reads for the dashboard's screens: account-scoped lookups, short lists paged by number, the issues table's
sorts and filters, and the overview and evidence screens' view models. The reads the API and the MCP server
share (an audit's progress, its issues, pages and links, keyset pagination) are audits.selectors'.

Every lookup takes the account and answers 404 for anything outside it. Lists are paginated in the
database and fetch only the columns they show; nothing here loads a whole audit.
"""

from django.core.paginator import Page as PaginatorPage
from django.core.paginator import Paginator
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone

from accounts.models import Account
from accounts.selectors import credits_used_this_month
from audits.checks.score import SCORE_FORMULA_VERSION, score_breakdown
from audits.comparison import (  # noqa: F401  (the dashboard's reads, in one namespace for its views)
    COMPARE_KINDS,
    CompareRow,
    check_spec,
    comparison_issues,
    comparison_summary,
)
from audits.evidence import (
    LINK_TYPES,
    evidence_columns,
    evidence_count_unit,
    evidence_group_count,
    evidence_note,
    evidence_queryset,
    evidence_records,
    evidence_target_sources,
    evidence_targets,
)
from audits.models import Audit, AuditEvent, Project
from audits.priority import (  # noqa: F401  (the one priority rule, read by the overview and the issues table)
    PRIORITY_RULE,
    SEVERITY_WEIGHTS,
    IssueSummary,
    issue_summary,
    priority_key,
)
from audits.segments import SegmentChoice, segment_pages_queryset, segment_table
from audits.selectors.audits import previous_audit
from audits.selectors.bots import bot_access_summary
from audits.selectors.issues import issue_summary_for_segment, issues_by_severity, segment_pages
from audits.selectors.pagination import PAGE_SIZE
from audits.selectors.retention import summarised_in
from audits.stats import CHARTS as PAGE_CHART_BUCKETS
from audits.stats import bar_key, page_stats, page_stats_count
from dashboard import charts

AUDITS_PER_PAGE = 25
EVENTS_PER_PAGE = 100

# Extra words under a refused start, by AuditRefused code (the refusal's own message comes first).
REFUSAL_HINTS = {
    "invalid_url": "Type the full address of the site, for example https://example.com/.",
    "unsupported_scheme": "",
    "private_address": "This instance audits public websites only; this address is on a private network.",
    "dns_failure": "Check the spelling of the host name, or try again if its DNS was just changed.",
    "url_too_long": "Start from a shorter address, such as the site's home page.",
    "invalid_max_pages": "",
    "audit_page_limit_exceeded": "Lower the maximum number of pages.",
    "audit_already_running": "Wait for it to finish, or cancel it from its page.",
    "audit_capacity_reached": "",
    "insufficient_credits": "Lower the maximum number of pages, or wait for next month's credits.",
    "invalid_schedule": "",
    "invalid_url_list": "Fix or remove those lines and start again.",
    "start_url_off_site": "To audit another site, create a project for it.",
    "invalid_check_overrides": "Fix them in the project's settings.",
}


class NearerEndPaginator(Paginator):
    """Numbered pages of an ordered queryset, each read from the nearer end of the list: a page past the middle is
    the reversed ordering's page with the smaller OFFSET, put back in order. The last page of one type's evidence on
    a million-page audit (OFFSET 989,050 through its index) took 262 ms; from the far end it is an OFFSET of 0."""

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        rows = self.object_list
        if isinstance(rows, QuerySet) and rows.ordered and bottom > self.count - top:
            page = list(rows.reverse()[self.count - top : self.count - bottom])
            page.reverse()
            return self._get_page(page, number, self)
        return self._get_page(rows[bottom:top], number, self)


def paginate(queryset, number, per_page: int = PAGE_SIZE) -> PaginatorPage:
    """One page of `queryset` (LIMIT/OFFSET in SQL, from its nearer end: NearerEndPaginator); a bad or too large
    number gives the first/last. For lists that stay short or are read by page number; a list that grows with the
    audit's pages and has no page numbers uses `keyset_paginate`."""
    return NearerEndPaginator(queryset, per_page).get_page(number)


# --- account scoping ---------------------------------------------------------------------------------


def project_for_account(*, account: Account, project_id) -> Project:
    project = Project.objects.filter(account=account, id=project_id).first()
    if project is None:
        raise Http404("No such project")
    return project


def audit_for_account(*, account: Account, audit_id) -> Audit:
    audit = Audit.objects.filter(project__account=account, id=audit_id).select_related("project").first()
    if audit is None:
        raise Http404("No such audit")
    return audit


def project_list(*, account: Account) -> QuerySet:
    """The account's projects, each with its latest audit's outcome (subqueries, no N+1); a fix verification
    re-checks a few URLs and says nothing of the site's health, so it is not the latest."""
    latest = Audit.objects.filter(project=OuterRef("pk"), verifies__isnull=True).order_by("-created_at")
    return (
        Project.objects.filter(account=account)
        .annotate(
            audits_count=Coalesce(
                Subquery(
                    Audit.objects.filter(project=OuterRef("pk"))
                    .order_by()
                    .values("project")
                    .annotate(n=Count("id"))
                    .values("n")[:1],
                    output_field=IntegerField(),
                ),
                Value(0),
            ),
            last_audit_id=Subquery(latest.values("id")[:1]),
            last_status=Subquery(latest.values("status")[:1]),
            last_health=Subquery(latest.values("health_score")[:1]),
            last_created=Subquery(latest.values("created_at")[:1]),
        )
        .order_by("name")
    )


def audit_history(*, project: Project) -> QuerySet:
    """A project's audits, newest first, with their duration (running ones count up to now)."""
    return (
        Audit.objects.filter(project=project)
        .only(
            "id",
            "project_id",
            "start_url",
            "status",
            "current_phase",
            "pages_crawled",
            "pages_total",
            "health_score",
            "error_code",
            "created_at",
            "started_at",
            "completed_at",
            "scheduled",
            "summarised_at",  # "summary only" (audits.retention)
        )
        .annotate(
            duration=ExpressionWrapper(
                Coalesce(F("completed_at"), Value(timezone.now())) - Coalesce(F("started_at"), F("created_at")),
                output_field=DurationField(),
            )
        )
        .order_by("-created_at")
    )


# --- the issues table and the overview ----------------------------------------------------------------------

TOP_ISSUES_OVERVIEW = 5  # issue types under "what to fix first"
HEALTH_HISTORY_AUDITS = 12  # completed audits of the project drawn in the health trend
SCORE_DEDUCTIONS_SHOWN = 8  # issue types listed under "How is this calculated?", most points first
EVIDENCE_LONG_CELL_CHARS = 40  # longer cells (and URLs) may break anywhere instead of widening the table
ISSUE_SORTS = {  # ?sort= key -> IssueSummary attribute ("-key" sorts descending)
    "priority": "priority",
    "severity": "severity_rank",
    "pages": "pages",
    "count": "count",
    "new": "new_sort",
    "type": "title",
}

ISSUE_SORT_CHOICES = (  # the sort menu (a phone has no table headers to click)
    ("-priority", "Priority, highest first"),
    ("-severity", "Severity, critical first"),
    ("-pages", "Pages affected, most first"),
    ("-count", "Found, most first"),
    ("-new", "New since the previous audit, most first"),
    ("type", "Name, A to Z"),
)


def sort_issue_summary(rows: list, sort: str) -> list:
    """Rows sorted by one of ISSUE_SORTS ("-" first for descending); ties go by priority, then type."""
    key = sort.lstrip("-")
    attribute = ISSUE_SORTS.get(key, "priority")
    descending = sort.startswith("-")
    ranked = sorted(rows, key=priority_key)
    return sorted(ranked, key=lambda r: getattr(r, attribute), reverse=descending)


def filter_issue_summary(rows: list, *, severity: str = "", category: str = "") -> list:
    return [r for r in rows if (not severity or r.severity == severity) and (not category or r.category == category)]


def health_history(*, audit: Audit) -> list:
    """The project's last completed audits up to this one (oldest first): (id, created_at, health_score,
    score_formula). A score is only comparable with one of the same formula (same_formula)."""
    audits = (
        Audit.objects.filter(project_id=audit.project_id, created_at__lte=audit.created_at)
        .filter(Q(status=Audit.Status.COMPLETED, verifies__isnull=True) | Q(id=audit.id))  # no fix verification
        .order_by("-created_at")
        .values_list("id", "created_at", "health_score", "score_formula")[:HEALTH_HISTORY_AUDITS]
    )
    return list(reversed(list(audits)))


def same_formula(a: Audit, b: Audit) -> bool:
    """Whether two audits' scores can be compared: both scored, by the same formula (audits.checks.score)."""
    return a.health_score is not None and b.health_score is not None and a.score_formula == b.score_formula


def overview(*, audit: Audit, segment: SegmentChoice | None = None, choices: list | None = None) -> dict:
    """Everything the finished overview shows beyond the live block, in a handful of grouped queries; for a
    segment (audits.segments) the pages, issues, charts and score are the segment's (the whole site's score is
    shown beside it)."""
    previous = previous_audit(audit=audit)
    # The audit's counter equals its page rows (one transaction writes both): a COUNT(*) over 100,000 pages
    # just after finalize rewrote them all (no visibility map yet) took 200-400 ms.
    pages = segment_pages(audit=audit, segment=segment)
    summary = issue_summary_for_segment(audit=audit, segment=segment, previous=previous)
    counts = issues_by_severity(audit=audit, issues_q=segment.issues_q if segment is not None else None)
    delta = None
    if previous is not None and same_formula(audit, previous):
        delta = audit.health_score - previous.health_score
    # A failed or cancelled audit was never scored: its pages are not the whole site, so no breakdown either.
    # For a segment: the same formula on its pages alone (its findings; site-wide ones belong to no segment).
    breakdown = None
    if audit.health_score is not None:
        pages_of = None if segment is None else segment_pages_queryset(audit=audit, choice=segment)
        breakdown = score_breakdown(audit=audit, pages=pages_of)
    if segment is not None:
        delta = None  # the change since the last audit is the whole site's; the segment's is not kept
    history = health_history(audit=audit)
    return {
        "previous": previous,
        "pages": pages,
        "health_delta": delta,
        # The previous audit was scored by an older formula: its score is not set beside this one.
        "previous_other_formula": (
            previous is not None and previous.health_score is not None and not same_formula(audit, previous)
        ),
        "score": breakdown,
        "score_deductions": breakdown.deductions[:SCORE_DEDUCTIONS_SHOWN] if breakdown else [],
        "top_issues": summary[:TOP_ISSUES_OVERVIEW],
        "issue_types_total": len(summary),
        "issue_types": {row.type for row in summary},
        "severity_counts": counts,
        "per_page": {s: round(n / pages, 1) if pages else None for s, n in counts.items()},
        "priority_rule": PRIORITY_RULE,
        "severity_weights": SEVERITY_WEIGHTS,
        "history": history,
        "history_other_formula": history_other_formula(audit=audit, history=history),
        # Audits of the trend whose page-level rows retention pruned: their points stay (audits.retention).
        "history_summarised": len(summarised_in(row[0] for row in history)),
        "page_charts": page_distributions(
            audit=audit, stats=None if segment is None else page_stats_count(audit_id=audit.id, pages_q=segment.pages_q)
        ),
        "segment": segment,
        "segments": segment_table(audit=audit, choices=choices),
        "bot_access": bot_access_summary(audit=audit),  # robots.txt per crawler, llms.txt (audits.selectors.bots)
    }


# Filters of the Pages tab a bar of the overview's charts leads to (status class, indexability).
_BAR_FILTERS = {
    ("status", 0): "?status=2xx",
    ("status", 1): "?status=3xx",
    ("status", 2): "?status=4xx",
    ("status", 3): "?status=5xx",
    ("status", 4): "?status=none",
    ("indexability", 0): "?indexable=yes",
    ("indexability", 1): "?indexable=no",
}


def page_distributions(*, audit: Audit, stats: dict | None = None) -> dict:
    """Status codes, crawl depth, indexability and response times of the pages (audits.stats: stored
    for a completed audit, one aggregate query otherwise).

    The buckets are the shared report's (audits.stats.CHARTS), so the overview and the report agree.
    """
    counts = (stats or page_stats(audit=audit))["bars"]
    out = {}
    for key, title, bars in PAGE_CHART_BUCKETS:
        out[key] = {
            "title": title,
            "bars": [
                (label, counts[bar_key(key, label)], charts.TONE_CSS.get(tone, ""), _BAR_FILTERS.get((key, i), ""))
                for i, (label, _q, tone) in enumerate(bars)
                if counts[bar_key(key, label)] or label != "Sitemap only"
            ],
        }
    return out


def overview_charts(*, audit: Audit, data: dict, pages_url: str, audit_url) -> dict:
    """The overview's SVG charts (dashboard.charts) from overview()'s figures."""
    out = {}
    for key, chart in data["page_charts"].items():
        bars = [
            charts.Bar(label, value, css, pages_url + href if href else "") for label, value, css, href in chart["bars"]
        ]
        draw = charts.column_chart if key == "depth" else charts.bar_chart
        if key == "depth":
            bars = [charts.Bar(b.label.replace("Depth ", ""), b.value, b.css, b.href) for b in bars]
        out[key] = draw(f"chart-{key}", chart["title"], bars)
    # Only the scores of this audit's formula are drawn: a line from one formula to another would show a jump
    # the site never made. The audits left out are said under the chart (history_other_formula).
    points = [
        charts.Point(created.strftime("%b %d"), score, audit_url(audit_id), audit_id == audit.id)
        for audit_id, created, score, formula in data["history"]
        if formula == trend_formula(audit)
    ]
    out["history"] = charts.line_chart("chart-history", "Health score over the last audits", points)
    return out


def trend_formula(audit: Audit) -> int:
    """The formula whose scores the audit's trend draws: its own, or today's for an audit never scored."""
    return audit.score_formula if audit.health_score is not None else SCORE_FORMULA_VERSION


def history_other_formula(*, audit: Audit, history: list) -> int:
    """Audits of the trend scored by another formula than this one's, so left out of its chart."""
    return sum(1 for _id, _created, score, formula in history if score is not None and formula != trend_formula(audit))


def evidence_page(*, audit: Audit, issue_type: str, number, segment: SegmentChoice | None = None) -> dict:
    """One page of a type's evidence table (a segment's rows only, given one): columns, rows (with each row's page
    id), paginator, unit."""
    issues_q = segment.issues_q if segment is not None else None
    issues = paginate(evidence_queryset(audit=audit, issue_type=issue_type, issues_q=issues_q), number)
    columns = evidence_columns(issue_type)
    rows = []
    for page_id, row in evidence_records(issue_type, issues):
        cells = []
        for key, label in columns:
            value = row.get(key, "")
            long_text = isinstance(value, str) and ("://" in value or len(value) > EVIDENCE_LONG_CELL_CHARS)
            cells.append({"key": key, "label": label, "value": value, "wrap": long_text})
        rows.append({"page_id": page_id, "cells": cells})
    return {
        "columns": columns,
        "rows": rows,
        "issues": issues,
        "unit": evidence_count_unit(issue_type),
        "groups": evidence_group_count(audit=audit, issue_type=issue_type, issues_q=issues_q),
        "note": evidence_note(audit=audit, issue_type=issue_type),
    }


TARGET_SOURCES_SHOWN = 20  # linking pages listed under each broken target; the CSV export lists every one


def evidence_by_target_page(
    *, audit: Audit, issue_type: str, number, segment: SegmentChoice | None = None
) -> dict | None:
    """One page of a link type's evidence grouped by target URL (one row per target: its status, how many pages
    link to it and the first TARGET_SOURCES_SHOWN of them); None for a type whose rows are not links. For a
    segment, the linking pages are the segment's."""
    if issue_type not in LINK_TYPES:
        return None
    issues_q = segment.issues_q if segment is not None else None
    targets = paginate(evidence_targets(audit=audit, issue_type=issue_type, issues_q=issues_q), number)
    sources = evidence_target_sources(
        audit=audit,
        issue_type=issue_type,
        targets=[t["target_url"] for t in targets],
        per_target=TARGET_SOURCES_SHOWN,
        issues_q=issues_q,
    )
    rows = [
        {**t, "sources": sources.get(t["target_url"], []), "more": max(t["pages"] - TARGET_SOURCES_SHOWN, 0)}
        for t in targets
    ]
    return {"targets": targets, "rows": rows, "note": evidence_note(audit=audit, issue_type=issue_type)}


# --- events ---------------------------------------------------------------------------------------------


def audit_events(*, audit: Audit) -> QuerySet:
    """The audit's events, oldest first, with their audit loaded (audits.events' sentences read it)."""
    return AuditEvent.objects.filter(audit=audit).select_related("audit").order_by("created_at", "id")


def account_usage(*, account: Account) -> dict:
    return {"used": credits_used_this_month(account), "plan": account.plan}
