"""The report a person can be sent, one context for its two renderings (the public share page, dashboard/share.py,
and the PDF, dashboard/pdf.py): a cover with the account's branding (accounts.branding), the score in words, what
is new and fixed since the previous audit, the top issues by priority each with its fix and example URLs with their
evidence, and charts. The figures are read by audits.selectors.reports (which the MCP server's Markdown report reads
too); this module adds how they look. Nothing in it names another object (no ids, no links into the dashboard)."""

from dataclasses import asdict

from accounts.branding import branding_for_account
from audits import stats as audit_stats
from audits.checks.score import SCORE_FORMULA_WORDS, score_breakdown, score_reasons
from audits.models import Audit
from audits.segments import SegmentChoice, segment_pages_queryset
from audits.selectors.reports import report_figures
from dashboard import charts as chart_svg

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


def report_summary(*, audit: Audit, segment: SegmentChoice | None = None) -> dict:
    """Everything the shared report and its PDF show: the report's figures (audits.selectors.reports: pages,
    counts, the top issues with their examples, the changes, the segments' scores), the account's branding, the
    score section in words and the charts. For a `segment`, everything but the segments' table is the segment's."""
    figures = report_figures(audit=audit, segment=segment)
    stats = figures.pop("stats")
    return {
        **figures,
        "branding": branding_for_account(account_id=audit.project.account_id),
        "score_section": report_score(audit, segment),
        "priority_words": PRIORITY_IN_WORDS,
        "charts": page_charts(audit=audit, stats=stats),
    }
