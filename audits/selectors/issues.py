"""Reads of an audit's issues: counts per type and per severity (the one zero-filled count per severity), the
issue summary of the audit or of a segment (audits.priority ranks it), the issue types with a preview of their
URLs, and the list the API and the MCP server page through."""

from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from audits.checks.registry import CHECKS_BY_TYPE, SEVERITIES, CheckSpec
from audits.comparison import check_spec
from audits.models import Audit, Issue
from audits.priority import issue_summary
from audits.segments import SegmentChoice, segment_page_count
from audits.stats import issue_type_counts, issue_type_rows

ISSUE_URLS_PREVIEW = 5  # affected URLs shown under each issue type on the issues page
# The API's keyset ordering (api.pagination.KeysetPagination): the last column unique within an audit, all of
# them in one index after the audit (issue_audit_type_url_id).
ISSUE_LIST_ORDERING = ("type", "page_url", "id")


def issues_by_type(*, audit: Audit) -> dict[str, int]:
    """Issue rows per type, by type (stored at finalize for a completed audit: audits.stats)."""
    counts: dict[str, int] = {}
    for row in issue_type_counts(audit=audit):
        counts[row["type"]] = counts.get(row["type"], 0) + row["n"]
    return dict(sorted(counts.items()))


def issues_by_severity(*, audit: Audit, issues_q: Q | None = None) -> dict[str, int]:
    """Issue rows per severity, every severity present (critical first), zeros included: the one count per
    severity of the overview, the issues screen, the report, the exports, the CLI and the MCP server. Stored at
    finalize for a completed audit (audits.stats); `issues_q`: a segment's issues only, counted now."""
    rows = issue_type_counts(audit=audit) if issues_q is None else issue_type_rows(audit_id=audit.id, issues_q=issues_q)
    return severity_totals(rows)


def severity_totals(rows) -> dict[str, int]:
    """Rows of {"severity", "n"} (counts per type and severity) summed per severity, every severity present
    (critical first), zeros included. For a caller that already holds the rows for another purpose (the
    workbook's sheet per type): the same totals without a second query."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for row in rows:
        counts[row["severity"]] = counts.get(row["severity"], 0) + row["n"]
    return counts


def segment_pages(*, audit: Audit, segment: SegmentChoice | None) -> int:
    """The pages a screen is about: the audit's (its counter, no COUNT) or the segment's."""
    if segment is None:
        return audit.pages_crawled
    return segment_page_count(audit=audit, choice=segment)


def issue_summary_for_segment(*, audit: Audit, segment: SegmentChoice | None, previous: Audit | None = None) -> list:
    """audits.priority.issue_summary of the audit, or of the segment when one is chosen."""
    if segment is None:
        return issue_summary(audit=audit, previous=previous, pages_crawled=audit.pages_crawled)
    return issue_summary(
        audit=audit,
        previous=previous,
        pages_crawled=segment_pages(audit=audit, segment=segment),
        pages_q=segment.pages_q,
        issues_q=segment.issues_q,
    )


@dataclass
class IssueType:
    type: str
    severity: str
    count: int
    spec: CheckSpec
    preview: list  # [(page_url, page_id)]


def issue_types(*, audit: Audit, with_preview: bool = False) -> list[IssueType]:
    """Issue types of the audit, by severity (critical first) then count; two queries in all."""
    rows = Issue.objects.filter(audit=audit).order_by().values("type", "severity").annotate(n=Count("id"))
    previews: dict[str, list] = {}
    if with_preview and rows:
        numbered = (
            Issue.objects.filter(audit=audit)
            .annotate(rn=Window(RowNumber(), partition_by=[F("type")], order_by=[F("page_url").asc(), F("id").asc()]))
            .filter(rn__lte=ISSUE_URLS_PREVIEW)
            .values_list("type", "page_url", "page_id")
        )
        for issue_type, url, page_id in numbered:
            previews.setdefault(issue_type, []).append((url, page_id))
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    types = [
        IssueType(r["type"], r["severity"], r["n"], check_spec(r["type"]), previews.get(r["type"], [])) for r in rows
    ]
    types.sort(key=lambda t: (rank.get(t.severity, len(rank)), -t.count, t.type))
    return types


def issue_list(*, audit: Audit) -> QuerySet[Issue]:
    """The audit's issues in the API's keyset order (the API's issue list, the MCP server's issues tool)."""
    return Issue.objects.filter(audit=audit).order_by(*ISSUE_LIST_ORDERING)


def issue_counts_by_type(*, audit: Audit, issues_q: Q | None = None) -> list[dict]:
    """Issue rows of the audit (a segment's, `issues_q`) counted per type and the severity they were given, with
    the check's title and scope, most severe first (the API's issue summary). The whole audit's are the counts
    finalize stored (audits.stats.issue_type_counts; counting 1.4 million rows took 190 ms), a segment's counted."""
    if issues_q is None:
        return issue_counts_by_type_from(issue_type_counts(audit=audit))
    rows = Issue.objects.filter(audit=audit).filter(issues_q).values("type", "severity")
    return issue_counts_by_type_from(rows.order_by().annotate(count=Count("id")))


def issue_counts_by_type_from(rows) -> list[dict]:
    """issue_counts_by_type's shape from rows of {"type", "severity", "count" or "n"} (counted now, or stored in
    audits.stats for an audit whose issue rows retention pruned)."""
    rank = {"critical": 0, "warning": 1, "info": 2}
    rows = [{"type": r["type"], "severity": r["severity"], "count": r.get("count", r.get("n", 0))} for r in rows]
    out = []
    for row in rows:
        spec = CHECKS_BY_TYPE.get(row["type"])
        out.append({**row, "title": spec.title if spec else row["type"], "scope": spec.scope if spec else None})
    return sorted(out, key=lambda r: (rank.get(r["severity"], 9), -r["count"], r["type"]))
