"""The report a person can be sent, one context for its two renderings (the public share page, dashboard/share.py,
and the PDF, dashboard/pdf.py): a cover with the account's branding (accounts.branding), the score in words, what
is new and fixed since the previous audit (audits.comparison), the top issues by priority (audits.priority, the
rule every "fix first" list uses) each with its fix and example URLs with their evidence (audits.evidence), and
charts. Bounded reads: grouped queries plus one LIMITed query per top issue. Nothing in it names another object
(no ids, no links into the dashboard)."""

import hashlib
import json
from dataclasses import asdict

from django.core.cache import cache

from accounts.branding import branding_for_account
from audits import stats as audit_stats
from audits.checks.score import SCORE_FORMULA_WORDS, score_breakdown, score_reasons
from audits.comparison import check_spec, comparison_summary
from audits.evidence import evidence_queryset, finding_summary
from audits.models import Audit
from audits.priority import PRIORITY_RULE, issue_summary, top_issues
from audits.segments import SegmentChoice, segment_pages_queryset, segment_table
from audits.selectors.audits import previous_audit
from audits.selectors.issues import issues_by_severity
from dashboard import charts as chart_svg

TOP_ISSUES = 10  # issue types listed in the report
EXAMPLE_URLS = 10  # example findings (URL and evidence) shown under each top issue
CHANGE_TYPES_MAX = 20  # issue types listed in "new and fixed since the previous audit"
REPORT_CHANGES_CACHE_S = 7 * 24 * 3600  # a comparison of two ended audits is kept this long (it cannot change)
# The score in words, by band (lowest score of the band, words): what a client reads first.
SCORE_BANDS = (
    (90, "good: few problems, and none that hold it back much"),
    (70, "fair: it works, but several problems are worth fixing"),
    (50, "in need of work: problems affect a large part of it"),
    (0, "poor: serious problems affect much of it"),
)
PRIORITY_IN_WORDS = (
    "Ranked by how serious each problem is and how many of the crawled pages it affects; a problem with the "
    "whole site counts as affecting every page."
)

# The bars of the charts (label, filter, tone): audits.stats counts them, once at finalize for a completed audit.
CHARTS = audit_stats.CHARTS


def page_charts(*, audit: Audit, stats: dict | None = None) -> list[dict]:
    """Status codes, crawl depth, indexability and response times of the crawled pages (audits.stats:
    stored for a completed audit, one aggregate query otherwise)."""
    counts = (stats or audit_stats.page_stats(audit=audit))["bars"]
    charts = []
    for key, title, bars in CHARTS:
        values = [(label, counts[audit_stats.bar_key(key, label)], tone) for label, _, tone in bars]
        if key == "depth":
            values = [v for v in values if v[1] or v[0] != "Sitemap only"]
        charts.append(report_chart(key, title, values, "pages"))
    return charts


def report_chart(key: str, title: str, bars: list[tuple[str, int, str]], unit: str) -> dict:
    """One chart of the report: its caption's figures and its bars drawn by dashboard.charts (the overview's
    builder), for templates/dashboard/share/_bars.html. `bars` are (label, value, tone)."""
    drawn = [chart_svg.Bar(label, value, chart_svg.TONE_CSS.get(tone, "")) for label, value, tone in bars]
    return {
        "title": title,
        "unit": unit,
        "total": sum(value for _, value, _ in bars),
        "svg": chart_svg.bar_chart(f"report-chart-{key}", title, drawn, unit=unit),
    }


def score_in_words(score: int | None, subject: str = "The site") -> str:
    """One sentence a client understands, without a formula; `subject` names what scores (a section of the site)."""
    if score is None:
        return "No score: the audit crawled no page it could score."
    words = next(text for low, text in SCORE_BANDS if score >= low)
    return f"{subject} scores {score} out of 100, which is {words}."


def report_score(audit: Audit, segment: SegmentChoice | None = None) -> dict:
    """The score section of the report: the score, a sentence in words, the share of pages without errors, a
    score per category and the formula in words (audits.checks.score, the one formula). For a segment, the same
    formula on its pages alone. The one place the report reads the score from."""
    pages = None if segment is None else segment_pages_queryset(audit=audit, choice=segment)
    breakdown = score_breakdown(audit=audit, pages=pages)
    # The score finalize stored is the one every screen shows (the same formula: they differ only on rows
    # written by hand); the breakdown gives the reasons, pages without errors and the categories.
    score = breakdown.score
    if segment is None and audit.health_score is not None:
        score = audit.health_score
    if score is None:
        return {
            "score": None,
            "words": score_in_words(None),
            "pages_without_errors": None,
            "error_free_percent": None,
            "categories": [],
            "formula_words": SCORE_FORMULA_WORDS,
        }
    reasons = score_reasons(breakdown)
    subject = "The site" if segment is None else f"The section {segment.name}"
    return {
        "score": score,
        "words": f"{score_in_words(score, subject)} {reasons[0].upper()}{reasons[1:]}.",
        "pages_without_errors": breakdown.pages_without_errors,
        "error_free_percent": breakdown.error_free_percent,
        "categories": [asdict(c) for c in breakdown.categories],  # dicts of category, label, score, issues
        "formula_words": SCORE_FORMULA_WORDS,
    }


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


def report_summary(*, audit: Audit, segment: SegmentChoice | None = None) -> dict:
    """Everything the shared report and its PDF show: grouped queries over the audit (stored at finalize for a
    completed one), the comparison with the previous audit, and one LIMITed query per top issue for its
    examples; the score of each segment of the site (audits.segments). For a `segment`, everything but that
    table is the segment's: its pages, score, issues, examples and changes."""
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
        "branding": branding_for_account(account_id=audit.project.account_id),
        "score": audit.health_score,
        "score_section": report_score(audit, segment),
        "segment": segment,
        "health_formula": SCORE_FORMULA_WORDS,  # the assistants' Markdown report; the client report says it in words
        "priority_rule": PRIORITY_RULE,
        "priority_words": PRIORITY_IN_WORDS,
        "pages": pages,
        "severity_counts": severity,
        "issues_total": sum(severity.values()),
        "warnings_per_page": round(severity["warning"] / pages, 1) if pages else None,
        "top_issues": issues,
        "changes": report_changes(audit=audit, segment=segment),
        "segments": report_segments(audit=audit) if segment is None else None,
        "charts": page_charts(audit=audit, stats=stats),
        "partial": audit.status != Audit.Status.COMPLETED,
    }
