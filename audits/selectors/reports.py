"""Reads of an audit's report (the one a person is sent: the shared page, its PDF, the e-mailed report; and the MCP
server's Markdown): its pages and counts per severity, the top issues by priority (audits.priority, the rule every
"fix first" list uses) each with example findings (audits.evidence), what is new and fixed since the previous audit
(audits.comparison) and the score of each segment. Bounded reads: grouped queries plus one LIMITed query per top
issue. How the report looks (charts, the score in words, the account's branding) is dashboard.report's."""

import hashlib
import json

from django.core.cache import cache

from audits import stats as audit_stats
from audits.comparison import check_spec, comparison_summary
from audits.evidence import evidence_queryset, finding_summary
from audits.models import Audit
from audits.priority import issue_summary, top_issues
from audits.segments import SegmentChoice, segment_table
from audits.selectors.audits import previous_audit
from audits.selectors.issues import issues_by_severity

TOP_ISSUES = 10  # issue types listed in the report
EXAMPLE_URLS = 10  # example findings (URL and evidence) shown under each top issue
CHANGE_TYPES_MAX = 20  # issue types listed in "new and fixed since the previous audit"
REPORT_CHANGES_CACHE_S = 7 * 24 * 3600  # a comparison of two ended audits is kept this long (it cannot change)


def _changes_cache_key(audit: Audit, previous: Audit, segment: SegmentChoice | None) -> str:
    """Names one comparison of two ended audits: their ids, what their finalize stored (a new finalize of
    either, with other figures, is another key) and the segment's rule."""
    parts = [str(audit.id), str(previous.id), "" if segment is None else f"{segment.key}:{segment.description}"]
    for one in (audit, previous):
        parts += [one.completed_at.isoformat() if one.completed_at else "", json.dumps(one.stats, sort_keys=True)]
    return "report-changes:" + hashlib.sha256("|".join(parts).encode()).hexdigest()


def report_changes(*, audit: Audit, segment: SegmentChoice | None = None) -> dict:
    """New and fixed since the previous completed audit of the project (audits.comparison: four grouped
    queries), per issue type (dicts of type, title, new, fixed) and in total, for the segment's pages when one is
    given; `first` when there is no earlier audit. Two ended audits do not change, so their comparison is counted
    once and kept in the cache: the PDF's fingerprint is worked out on every request for it (dashboard.share), and
    must stay cheap."""
    previous = previous_audit(audit=audit)
    if previous is None:
        return {"first": True, "previous": None, "rows": [], "more": 0, "new": 0, "fixed": 0}
    key = _changes_cache_key(audit, previous, segment) if audit.is_finished else None
    issues_q = None if segment is None else segment.issues_q
    counted = cache.get(key) if key else None
    if counted is None:
        counted = [
            (r.type, r.new, r.fixed)
            for r in comparison_summary(audit=audit, previous=previous, issues_q=issues_q)
            if r.new or r.fixed
        ]
        counted.sort(key=lambda r: (-(r[1] + r[2]), r[0]))
        if key:
            cache.set(key, counted, REPORT_CHANGES_CACHE_S)
    rows = [
        {"type": issue_type, "title": check_spec(issue_type).title, "new": new, "fixed": fixed}
        for issue_type, new, fixed in counted[:CHANGE_TYPES_MAX]
    ]
    return {
        "first": False,
        "previous": previous,
        "rows": rows,
        "more": max(0, len(counted) - CHANGE_TYPES_MAX),
        "new": sum(r[1] for r in counted),
        "fixed": sum(r[2] for r in counted),
    }


def issue_examples(*, audit: Audit, issue_type: str, issues_q=None) -> list[dict]:
    """Up to EXAMPLE_URLS findings of a type (of a segment's pages, given its `issues_q`), in the evidence table's
    order, each as its URL, the target it points at (where its type has one) and its evidence in words
    (audits.evidence.finding_summary, the long export's)."""
    examples = []
    findings = evidence_queryset(audit=audit, issue_type=issue_type, issues_q=issues_q)[:EXAMPLE_URLS]
    for _id, _page_id, page_url, details in findings:
        target, detail = finding_summary(issue_type, page_url, details)
        examples.append({"url": page_url, "target": target, "detail": detail})
    return examples


def report_segments(*, audit: Audit) -> list[dict]:
    """The score of each segment of the site (the project's, or its top-level folders: audits.segments), as the
    overview's Segments table counts them; segments without a page are left out. `choice` is the segment itself
    (the shared page links each one)."""
    return [
        {"label": row.choice.name, "score": row.score, "pages": row.pages, "issues": row.issues, "choice": row.choice}
        for row in segment_table(audit=audit)
        if row.pages
    ]


def report_figures(*, audit: Audit, segment: SegmentChoice | None = None) -> dict:
    """The figures of the report: grouped queries over the audit (stored at finalize for a completed one), the
    comparison with the previous audit, and one LIMITed query per top issue for its examples; the score of each
    segment of the site (audits.segments). For a `segment`, everything but that table is the segment's: its pages,
    issues, examples and changes. `stats` is audits.stats' page figures (the report draws its charts from them)."""
    if segment is None:
        stats = audit_stats.page_stats(audit=audit)
    else:
        stats = audit_stats.page_stats_count(audit_id=audit.id, pages_q=segment.pages_q)
    pages = stats["pages"]
    severity = issues_by_severity(audit=audit, issues_q=segment.issues_q if segment is not None else None)
    if segment is None:
        issues = top_issues(audit=audit, pages_crawled=pages, limit=TOP_ISSUES)
    else:
        issues = issue_summary(audit=audit, pages_crawled=pages, pages_q=segment.pages_q, issues_q=segment.issues_q)[
            :TOP_ISSUES
        ]
    issues_q = None if segment is None else segment.issues_q
    for issue in issues:
        issue.examples = issue_examples(audit=audit, issue_type=issue.type, issues_q=issues_q)
        issue.more_examples = max(0, issue.count - len(issue.examples))
    return {
        "audit": audit,
        "project_name": audit.project.name,
        "score": audit.health_score,
        "segment": segment,
        "stats": stats,
        "pages": pages,
        "severity_counts": severity,
        "issues_total": sum(severity.values()),
        "warnings_per_page": round(severity["warning"] / pages, 1) if pages else None,
        "top_issues": issues,
        "changes": report_changes(audit=audit, segment=segment),
        "segments": report_segments(audit=audit) if segment is None else None,
        "partial": audit.status != Audit.Status.COMPLETED,
    }
