"""Figures over all of an audit's pages and issues that its overview, live block, issues table and report show:
pages per status class, depth, indexability and response time; the fetch span the crawl rate is read from; issue
rows per type and severity; its changes against its baseline per field. Finalize counts them once and stores them
on Audit.stats, since a completed audit's pages and issues no longer change: a screen of a finished 100,000-page
audit then reads one row instead of aggregating every page and issue on each request. Any other audit is counted
when asked."""

from django.db.models import Count, Max, Min, Q

from audits.models import Audit, Issue, Page, PageChange

# (label, filter, tone) per bar of a chart; one aggregate over the audit's pages computes them all. The
# dashboard's overview and the shared report draw them (dashboard.report).
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


def bar_key(chart: str, label: str) -> str:
    """A bar's key in the counts: by its label, so a stored figure of a bar since renamed is not read."""
    return f"{chart}:{label}"


_BAR_KEYS = frozenset(bar_key(key, label) for key, _title, bars in CHARTS for label, _q, _tone in bars)


def page_stats_count(*, audit_id, pages_q: Q | None = None) -> dict:
    """Every bar's page count, the pages and the fetch span (fetched pages, first and last fetch, ISO 8601),
    in one aggregate over the audit's pages (a segment's, `pages_q`: audits.segments)."""
    bars = [(bar_key(key, label), q) for key, _title, chart_bars in CHARTS for label, q, _tone in chart_bars]
    row = (
        Page.objects.filter(audit_id=audit_id)
        .filter(pages_q or Q())
        .aggregate(
            **{f"bar{i}": Count("id", filter=q) for i, (_key, q) in enumerate(bars)},  # a label is no SQL alias
            pages=Count("id"),
            fetched=Count("id", filter=Q(fetched_at__isnull=False)),
            first=Min("fetched_at"),
            last=Max("fetched_at"),
        )
    )
    return {
        "pages": row["pages"],
        "bars": {key: row[f"bar{i}"] for i, (key, _q) in enumerate(bars)},
        "fetched": row["fetched"],
        "first_fetched_at": row["first"].isoformat() if row["first"] else None,
        "last_fetched_at": row["last"].isoformat() if row["last"] else None,
    }


def issue_type_rows(*, audit_id, issues_q: Q | None = None) -> list[dict]:
    """Issue rows per (type, severity): `n` rows, distinct `pages`, `site` rows tied to no page; one grouped
    query (audits.priority ranks them). `issues_q`: only those issues (a segment's, audits.segments)."""
    rows = (
        Issue.objects.filter(audit_id=audit_id)
        .filter(issues_q or Q())
        .order_by()
        .values("type", "severity")
        .annotate(n=Count("id"), pages=Count("page_id", distinct=True), site=Count("id", filter=Q(page_id=None)))
    )
    return sorted((dict(r) for r in rows), key=lambda r: (r["type"], r["severity"]))


def issue_type_totals(rows) -> dict[str, dict]:
    """issue_type_rows merged per type: {type: {"severity", "n", "pages", "site"}}. A capped link check adds an
    info marker of the same type, so a type may come in two severity groups: the larger group's severity wins.
    audits.priority ranks and audits.checks.score scores from these totals."""
    merged: dict[str, dict] = {}
    top: dict[str, int] = {}
    for r in rows:
        m = merged.setdefault(r["type"], {"severity": r["severity"], "n": 0, "pages": 0, "site": 0})
        if r["n"] > top.get(r["type"], 0):
            m["severity"], top[r["type"]] = r["severity"], r["n"]
        m["n"] += r["n"]
        m["pages"] += r["pages"]
        m["site"] += r["site"]
    return merged


def change_stats_count(*, audit_id) -> dict:
    """Audit.stats["changes"]: {"baseline": the baseline's id, then {field: rows} for each PageChange.Field with
    rows}; {"baseline": None} when the audit had nothing to compare with (a first audit: no rows either). Written by
    finalize and again when another baseline is chosen (audits.pipeline.changes.changes_recompute)."""
    baseline_id = Audit.objects.filter(id=audit_id).values_list("baseline_id", flat=True).first()
    if baseline_id is None:
        return {"baseline": None}
    rows = PageChange.objects.filter(audit_id=audit_id).order_by().values("field").annotate(n=Count("id"))
    return {"baseline": str(baseline_id), **{r["field"]: r["n"] for r in sorted(rows, key=lambda r: r["field"])}}


def page_status_rows(*, audit_id) -> dict[str, int]:
    """Pages per HTTP status code ("none": no answer), one grouped query (an index-only scan of the status index)."""
    rows = Page.objects.filter(audit_id=audit_id).order_by().values_list("status_code").annotate(n=Count("id"))
    return {(NO_STATUS if code is None else str(code)): n for code, n in rows}


NO_STATUS = "none"  # the status filter's value for pages without an HTTP answer


def status_span(status: str) -> range | None:
    """The codes a status filter value selects ("404": that code, "4xx": its hundred); None for "none" or a value
    that is no status. The pages grid's filter (audits.selectors.pages.page_filter) and its stored count read it."""
    if len(status) == 3 and status.endswith("xx") and status[0].isdigit():
        low = int(status[0]) * 100
        return range(low, low + 100)
    if status.isascii() and status.isdigit():
        return range(int(status), int(status) + 1)
    return None


def page_status_total(*, audit: Audit, status: str) -> int | None:
    """The pages a status filter selects ("404", "4xx" or "none": the pages grid's values; the API's status_code),
    from the counts finalize stored: a list filtered by "200" on a million pages counted ~1M index entries on every
    request. None when none are stored (an audit not completed, or completed before they were) or for no status."""
    stored = _stored(audit).get("status_codes")
    if stored is None:
        return None
    if status == NO_STATUS:
        return stored.get(NO_STATUS, 0)
    span = status_span(status)
    if span is None:
        return None
    return sum(n for code, n in stored.items() if code != NO_STATUS and int(code) in span)


def audit_stats_count(*, audit_id) -> dict:
    """What finalize stores on Audit.stats: page_stats_count's figures, `status_codes` (page_status_rows),
    `issue_types` (issue_type_rows) and `changes` (change_stats_count); finalize adds the score and `comparisons`
    (audits.comparison.comparisons_count)."""
    return {
        **page_stats_count(audit_id=audit_id),
        "status_codes": page_status_rows(audit_id=audit_id),
        "issue_types": issue_type_rows(audit_id=audit_id),
        "changes": change_stats_count(audit_id=audit_id),
    }


def _stored(audit: Audit) -> dict:
    return (audit.stats or {}) if audit.status == Audit.Status.COMPLETED else {}


def page_stats(*, audit: Audit) -> dict:
    """page_stats_count's figures: stored by finalize for a completed audit, counted now for any other (a
    running audit's pages still change; a failed or cancelled one never finalized) and for one completed
    before the figures were stored or whose bars have changed since."""
    stored = _stored(audit)
    if _BAR_KEYS <= set(stored.get("bars") or {}):
        return stored
    return page_stats_count(audit_id=audit.id)


def issue_type_counts(*, audit: Audit) -> list[dict]:
    """issue_type_rows of the audit: stored by finalize for a completed audit, counted now for any other."""
    stored = _stored(audit).get("issue_types")
    return stored if stored is not None else issue_type_rows(audit_id=audit.id)
