"""The report a person can be sent: score, top issues by priority (audits.priority, the rule every "fix first"
list uses) and charts of one audit, read in a few grouped queries. Shown on the public share page
(dashboard/share.py) and printed to PDF (dashboard/pdf.py); nothing in it names another object (no ids, no
links into the dashboard)."""

from audits import stats as audit_stats
from audits.checks.registry import SEVERITIES
from audits.checks.score import HEALTH_FORMULA
from audits.models import Audit
from audits.priority import PRIORITY_RULE, top_issues

TOP_ISSUES = 10  # issue types listed in the report

CHART_W = 400  # px of an SVG chart's viewBox; it scales down to its box on a phone
CHART_LABEL_W = 130  # px of the label column
CHART_ROW_H = 26  # px per bar
CHART_FONT_PX = 14
CHART_BAR_MAX = CHART_W - CHART_LABEL_W - 60  # room for the count after the bar


def bar_chart(title: str, bars: list[tuple[str, int, str]], unit: str) -> dict:
    """Geometry of a horizontal bar chart drawn as inline SVG by templates/dashboard/share/_bars.html.
    `bars` are (label, value, css class)."""
    top = max((v for _, v, _ in bars), default=0)
    drawn = []
    for i, (label, value, tone) in enumerate(bars):
        width = max(2, round(CHART_BAR_MAX * value / top)) if top and value else 0
        drawn.append(
            {
                "label": label,
                "value": value,
                "tone": tone,
                "y": i * CHART_ROW_H + 3,
                "text_y": i * CHART_ROW_H + 18,
                "width": width,
                "value_x": CHART_LABEL_W + width + 6,
            }
        )
    return {
        "title": title,
        "unit": unit,
        "bars": drawn,
        "total": sum(v for _, v, _ in bars),
        "width": CHART_W,
        "height": max(len(drawn), 1) * CHART_ROW_H + 4,
        "bar_x": CHART_LABEL_W,
        "label_x": CHART_LABEL_W - 8,
        "font_px": CHART_FONT_PX,
    }


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
        charts.append(bar_chart(title, values, "pages"))
    return charts


def report_summary(*, audit: Audit) -> dict:
    """Everything the shared report and its PDF show: no query over the pages and issues of a completed audit
    (audits.stats, stored at finalize), two grouped ones for any other."""
    stats = audit_stats.page_stats(audit=audit)
    pages = stats["pages"]
    severity = dict.fromkeys(SEVERITIES, 0)
    severity.update(audit_stats.severity_counts(audit=audit))
    issues = top_issues(audit=audit, pages_crawled=pages, limit=TOP_ISSUES)
    return {
        "audit": audit,
        "project_name": audit.project.name,
        "score": audit.health_score,
        "health_formula": HEALTH_FORMULA,
        "priority_rule": PRIORITY_RULE,
        "pages": pages,
        "severity_counts": severity,
        "issues_total": sum(severity.values()),
        "warnings_per_page": round(severity["warning"] / pages, 1) if pages else None,
        "top_issues": issues,
        "charts": page_charts(audit=audit, stats=stats),
        "partial": audit.status != Audit.Status.COMPLETED,
    }
