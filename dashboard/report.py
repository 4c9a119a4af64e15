"""The report a person can be sent: score, top issues by priority (audits.priority, the rule every "fix first"
list uses) and charts of one audit, read in a few grouped queries. Shown on the public share page
(dashboard/share.py) and printed to PDF (dashboard/pdf.py); nothing in it names another object (no ids, no
links into the dashboard)."""

from django.db.models import Count, Q

from audits.checks.registry import SEVERITIES
from audits.checks.score import HEALTH_FORMULA
from audits.models import Audit, Issue, Page
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


# (label, filter, tone) per bar; one aggregate over the audit's pages computes them all.
STATUS_BARS = (
    ("2xx OK", Q(status_code__gte=200, status_code__lt=300), "ok"),
    ("3xx redirect", Q(status_code__gte=300, status_code__lt=400), "info"),
    ("4xx client error", Q(status_code__gte=400, status_code__lt=500), "warning"),
    ("5xx server error", Q(status_code__gte=500), "critical"),
    ("No response", Q(status_code__isnull=True), "muted"),
)
DEPTH_BARS = (
    *((f"Depth {d}", Q(depth=d), "info") for d in range(5)),
    ("Depth 5+", Q(depth__gte=5), "info"),
    ("Sitemap only", Q(depth__isnull=True), "muted"),
)
RESPONSE_TIME_BARS = (
    ("< 200 ms", Q(response_time_ms__lt=200), "ok"),
    ("200–499 ms", Q(response_time_ms__gte=200, response_time_ms__lt=500), "ok"),
    ("500–999 ms", Q(response_time_ms__gte=500, response_time_ms__lt=1000), "warning"),
    ("1–2 s", Q(response_time_ms__gte=1000, response_time_ms__lt=2000), "warning"),
    ("≥ 2 s", Q(response_time_ms__gte=2000), "critical"),
)
INDEXABLE_BARS = (
    ("Indexable", Q(is_indexable=True), "ok"),
    ("Not indexable", Q(is_indexable=False), "warning"),
)
CHARTS = (
    ("status", "Pages by status code", STATUS_BARS),
    ("depth", "Pages by crawl depth", DEPTH_BARS),
    ("indexability", "Indexability", INDEXABLE_BARS),
    ("response", "Pages by response time", RESPONSE_TIME_BARS),
)


def page_charts(*, audit: Audit) -> list[dict]:
    """Status codes, crawl depth, indexability and response times of the crawled pages (one query)."""
    aggregates = {f"{key}_{i}": Count("id", filter=q) for key, _, bars in CHARTS for i, (_, q, _) in enumerate(bars)}
    counts = Page.objects.filter(audit=audit).aggregate(**aggregates)
    charts = []
    for key, title, bars in CHARTS:
        values = [(label, counts[f"{key}_{i}"], tone) for i, (label, _, tone) in enumerate(bars)]
        if key == "depth":
            values = [v for v in values if v[1] or v[0] != "Sitemap only"]
        charts.append(bar_chart(title, values, "pages"))
    return charts


def report_summary(*, audit: Audit) -> dict:
    """Everything the shared report and its PDF show, in four queries."""
    pages = Page.objects.filter(audit=audit).count()
    severity = dict.fromkeys(SEVERITIES, 0)
    for r in Issue.objects.filter(audit=audit).order_by().values("severity").annotate(n=Count("id")):
        severity[r["severity"]] = r["n"]
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
        "charts": page_charts(audit=audit),
        "partial": audit.status != Audit.Status.COMPLETED,
    }
