"""Reads for the dashboard: account-scoped lookups, pagination, filters, sorting and the comparison.

Every lookup takes the account and answers 404 for anything outside it. Lists are paginated in the
database and fetch only the columns they show; nothing here loads a whole audit.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

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
    Window,
)
from django.db.models.functions import Coalesce, RowNumber
from django.http import Http404
from django.utils import timezone

from accounts.models import Account
from accounts.selectors import credits_used_this_month
from audits.checks.registry import SEVERITIES, CheckSpec
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
from audits.models import Audit, AuditEvent, Issue, Page, Project
from audits.priority import (  # noqa: F401  (the one priority rule, read by the overview and the issues table)
    PRIORITY_RULE,
    SEVERITY_WEIGHTS,
    IssueSummary,
    issue_summary,
    priority_key,
)
from audits.segments import SegmentChoice, segment_page_count, segment_pages_queryset, segment_table
from audits.selectors import audit_crawl_bar
from audits.stats import CHARTS as PAGE_CHART_BUCKETS
from audits.stats import bar_key, issue_type_rows, page_stats, page_stats_count
from audits.stats import severity_counts as audit_severity_counts
from config.cursors import cursor_decode, cursor_encode
from dashboard import charts

PAGE_SIZE = 50  # rows per page of every long list
CURSOR_SALT = "dashboard.keyset"  # the dashboard's cursors are no good to the API, and the other way round
AUDITS_PER_PAGE = 25
EVENTS_PER_PAGE = 100
ISSUE_URLS_PREVIEW = 5  # affected URLs shown under each issue type on the issues page
FEED_SIZE = 10  # last crawled URLs on a running audit
RATE_WINDOW_S = 10  # pages per second is measured over this trailing window while running

PHASES = (Audit.Phase.DISCOVERY, Audit.Phase.CRAWLING, Audit.Phase.LIGHTHOUSE, Audit.Phase.FINALIZING)
PHASE_LABELS = {
    Audit.Phase.DISCOVERY: "Discovery",
    Audit.Phase.CRAWLING: "Crawling",
    Audit.Phase.LIGHTHOUSE: "Lighthouse",
    Audit.Phase.FINALIZING: "Finalizing",
}

# What a failed audit's error code means, for people.
ERROR_EXPLANATIONS = {
    "oom": "A worker ran out of memory and the system stopped it. Very large pages or too many audits at "
    "once on one worker are the usual causes; run the audit again, or give the workers more memory.",
    "worker_lost": "The worker process running a step of this audit died (it was killed or crashed) "
    "and the step could not be resumed.",
    "step_timeout": "A step of the audit ran past its time limit and was stopped. A very slow site or a "
    "very large sitemap can cause this.",
    "db_error": "The database refused or lost a write during the audit. Check the database's health and "
    "run the audit again.",
    "broker_error": "The task queue could not be reached, so the next step could not be handed to a worker. "
    "Check that the broker (Redis) is up.",
    "instance_lost": "The audit stopped making progress (no heartbeat, no work in flight) and could not be "
    "revived: its workers or queued tasks were lost, for example in a restart.",
    "unknown": "An unexpected error stopped the audit. The event log below has the details.",
    "start_url_unreachable": "The start URL could not be fetched (name lookup, connection, TLS or HTTP "
    "error), so there was nothing to crawl. Check the address and that the site is up.",
    "no_listed_url_allowed": "None of the listed URLs could be crawled: robots.txt or the project's include/exclude "
    "rules refused them all, or the sitemap named none of the site's pages.",
}

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


def error_explanation(code: str) -> str:
    return ERROR_EXPLANATIONS.get(code or "unknown", ERROR_EXPLANATIONS["unknown"])


def paginate(queryset, number, per_page: int = PAGE_SIZE) -> PaginatorPage:
    """One page of `queryset` (LIMIT/OFFSET in SQL); a bad or too large number gives the first/last.
    For lists that stay short; a list that grows with the audit's pages uses `keyset_paginate`."""
    return Paginator(queryset, per_page).get_page(number)


@dataclass(frozen=True)
class KeysetColumn:
    """One column of a keyset: a field or annotation of the queryset, its direction and whether it can be
    NULL (NULLs sort last, as the lists' orderings say)."""

    name: str
    descending: bool = False
    nullable: bool = False


@dataclass
class KeysetPage:
    """One page of a keyset-paginated list: its rows, cursors to the pages on either side, and the list's
    size when it is known cheaply (`total`; `total_is_estimate` when it comes from the audit's counters)."""

    object_list: list
    has_next: bool
    has_previous: bool
    next_cursor: str = ""
    previous_cursor: str = ""
    total: int | None = None
    total_is_estimate: bool = False
    param: str = field(default="cursor")

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self):
        return len(self.object_list)

    @property
    def has_other_pages(self) -> bool:
        return self.has_next or self.has_previous


def keyset_paginate(
    queryset: QuerySet,
    *,
    columns: Sequence[KeysetColumn],
    cursor: str | None,
    tag: str = "",
    per_page: int | None = None,
    total: int | None = None,
    total_is_estimate: bool = False,
    keys_first: bool = False,
    param: str = "cursor",
) -> KeysetPage:
    """One page of `queryset` (already ordered by `columns`, whose values together are unique) starting
    after the row the cursor names: a seek on the ordering instead of OFFSET, so page 3,000 of 100,000 rows
    costs what page 1 does, and no COUNT(*) is needed. `tag` names what the cursor is for (the list and its
    sort: `grid_cursor_tag`, `links_cursor_tag`); cursors are signed (config.cursors), and one altered or made
    for another list or sort raises CursorInvalid naming `param`, before any query (the views send the
    person to the list's first page).

    `keys_first`: sort and seek selecting the primary keys alone, then read the page's rows by key. For an
    ordering no index serves, the database then sorts every row of the list without reading each one whole
    (the pages grid sorted by depth on a 100,000-page crawl: 96 -> 61 ms); one more query of per_page rows."""
    per_page = per_page or PAGE_SIZE
    key, backwards = None, False
    if cursor:
        key, backwards = cursor_decode(cursor, bound_to=tag, salt=CURSOR_SALT, size=len(columns), param=param)
    rows = queryset
    if key is not None:
        rows = rows.filter(_keyset_beyond(columns, key, backwards=backwards))
        if backwards:
            rows = rows.reverse()  # flips each direction and NULLS LAST/FIRST with it
    if keys_first:
        keys = list(rows.values_list("pk", flat=True)[: per_page + 1])
        by_key = queryset.in_bulk(keys)
        page = [by_key[k] for k in keys if k in by_key]  # a row deleted in between is left out
    else:
        page = list(rows[: per_page + 1])
    more = len(page) > per_page
    page = page[:per_page]
    if backwards:
        page.reverse()
    has_next = bool(page) and (more if not backwards else True)
    has_previous = bool(page) and (key is not None if not backwards else more)
    return KeysetPage(
        object_list=page,
        has_next=has_next,
        has_previous=has_previous,
        next_cursor=keyset_cursor(page[-1], columns, tag, backwards=False) if has_next else "",
        previous_cursor=keyset_cursor(page[0], columns, tag, backwards=True) if has_previous else "",
        total=total,
        total_is_estimate=total_is_estimate,
        param=param,
    )


def keyset_cursor(row, columns: Sequence[KeysetColumn], tag: str = "", *, backwards: bool = False) -> str:
    """The cursor of the page that starts after `row` (before it, `backwards`), as keyset_paginate reads it."""
    key = [row[c.name] if isinstance(row, dict) else getattr(row, c.name) for c in columns]
    return cursor_encode(key, backwards=backwards, bound_to=tag, salt=CURSOR_SALT)


_NOTHING = Q(pk__in=[])


def _keyset_beyond(columns: Sequence[KeysetColumn], key: list, *, backwards: bool) -> Q:
    """Rows after (or before) `key` in the columns' order, NULLs last: the lexicographic comparison
    spelled out column by column, because a column may be descending or NULL where a row-value `>` cannot."""
    alternatives = []
    equal_so_far = Q()
    for column, value in zip(columns, key, strict=True):
        smaller = column.descending != backwards  # does "beyond" mean a smaller value in this column?
        if value is None:  # NULLs sort last: nothing is after a NULL but other NULLs, everything else before
            step = Q(**{f"{column.name}__isnull": False}) if backwards else None
            equal = Q(**{f"{column.name}__isnull": True})
        else:
            step = Q(**{f"{column.name}__{'lt' if smaller else 'gt'}": value})
            if column.nullable and not backwards:
                step |= Q(**{f"{column.name}__isnull": True})
            equal = Q(**{column.name: value})
        if step is not None:
            alternatives.append(equal_so_far & step)
        equal_so_far &= equal
    beyond = _NOTHING
    for alternative in alternatives:
        beyond = alternative if beyond is _NOTHING else beyond | alternative
    # The OR above is no index range: say the bound it implies on the first column too, so an index on the
    # ordering is entered at the cursor instead of read (with its rows) from the start of the list. Only where
    # no NULL can be beyond (a NULL fails any comparison).
    first, value = columns[0], key[0]
    if len(columns) > 1 and value is not None and (backwards or not first.nullable):
        smaller = first.descending != backwards
        beyond = Q(**{f"{first.name}__{'lte' if smaller else 'gte'}": value}) & beyond
    return beyond


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
    """The account's projects, each with its latest audit's outcome (subqueries, no N+1)."""
    latest = Audit.objects.filter(project=OuterRef("pk")).order_by("-created_at")
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
        )
        .annotate(
            duration=ExpressionWrapper(
                Coalesce(F("completed_at"), Value(timezone.now())) - Coalesce(F("started_at"), F("created_at")),
                output_field=DurationField(),
            )
        )
        .order_by("-created_at")
    )


# --- a running audit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseStep:
    phase: str
    label: str
    state: str  # done | current | todo | skipped | failed


def phase_steps(audit: Audit) -> list[PhaseStep]:
    lighthouse_on = bool(audit.config.get("lighthouse"))
    reached = audit.current_phase if audit.current_phase in PHASES else None
    if audit.status == Audit.Status.FAILED and audit.failed_phase in PHASES:
        reached = audit.failed_phase
    steps = []
    seen_current = False
    for phase in PHASES:
        label = PHASE_LABELS[phase]
        if phase == Audit.Phase.LIGHTHOUSE and not lighthouse_on:
            steps.append(PhaseStep(phase, label, "skipped"))
            continue
        if audit.status == Audit.Status.COMPLETED:
            state = "done"
        elif reached is None:
            state = "todo"
        elif phase == reached:
            seen_current = True
            state = "failed" if audit.status == Audit.Status.FAILED else "current"
            if audit.status == Audit.Status.CANCELLED:
                state = "todo"
        else:
            state = "todo" if seen_current else "done"
        steps.append(PhaseStep(phase, label, state))
    return steps


def audit_progress(*, audit: Audit) -> dict:
    """Everything the live block shows: steps, pages crawled of known, rate, the last crawled URLs."""
    pages = Page.objects.filter(audit=audit)
    bar = audit_crawl_bar(audit=audit)
    now = timezone.now()
    feed = []
    if audit.is_finished:
        # The fetch span of a completed audit was stored at finalize (no aggregate over its pages per poll).
        stats = page_stats(audit=audit)
        first, last = (stats[k] and datetime.fromisoformat(stats[k]) for k in ("first_fetched_at", "last_fetched_at"))
        rate = None
        if stats["fetched"] > 1 and last > first:
            rate = stats["fetched"] / (last - first).total_seconds()
    else:
        recent = pages.filter(fetched_at__gte=now - timedelta(seconds=RATE_WINDOW_S)).count()
        rate = recent / RATE_WINDOW_S
        # Only a running audit shows its last crawled URLs.
        feed = list(
            pages.exclude(fetched_at=None)
            .order_by("-fetched_at", "-id")
            .values("id", "url", "status_code", "fetch_class", "fetched_at")[:FEED_SIZE]
        )
    started = audit.started_at or audit.created_at
    elapsed = (audit.completed_at or now) - started
    return {
        "steps": phase_steps(audit),
        "bar": bar,
        "crawled": bar.crawled,
        "total": bar.total,
        "found": bar.found,
        "percent": bar.percent,
        "rate": rate,
        "feed": feed,
        "elapsed": elapsed,
        "error": error_explanation(audit.error_code) if audit.status == Audit.Status.FAILED else "",
    }


# --- results ---------------------------------------------------------------------------------------------


def severity_counts(*, audit: Audit, segment: SegmentChoice | None = None) -> dict[str, int]:
    counts = dict.fromkeys(SEVERITIES, 0)
    if segment is None:
        counts.update(audit_severity_counts(audit=audit))  # stored at finalize for a completed audit
        return counts
    for row in issue_type_rows(audit_id=audit.id, issues_q=segment.issues_q):
        counts[row["severity"]] = counts.get(row["severity"], 0) + row["n"]
    return counts


def segment_pages(*, audit: Audit, segment: SegmentChoice | None) -> int:
    """The pages a screen is about: the audit's (its counter, no COUNT) or the segment's."""
    if segment is None:
        return audit.pages_crawled
    return segment_page_count(audit=audit, choice=segment)


def issue_summary_for(*, audit: Audit, segment: SegmentChoice | None, previous: Audit | None = None) -> list:
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
        .filter(Q(status=Audit.Status.COMPLETED) | Q(id=audit.id))
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
    summary = issue_summary_for(audit=audit, segment=segment, previous=previous)
    counts = severity_counts(audit=audit, segment=segment)
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
        "page_charts": page_distributions(
            audit=audit, stats=None if segment is None else page_stats_count(audit_id=audit.id, pages_q=segment.pages_q)
        ),
        "segment": segment,
        "segments": segment_table(audit=audit, choices=choices),
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
_TONE_CSS = {"ok": "ok", "info": "info", "warning": "warn", "critical": "bad", "muted": "muted"}


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
                (label, counts[bar_key(key, label)], _TONE_CSS.get(tone, ""), _BAR_FILTERS.get((key, i), ""))
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


# --- pages ------------------------------------------------------------------------------------------------
# The pages grid, the page detail and the performance screen read through dashboard.pages.


# --- events ---------------------------------------------------------------------------------------------


def audit_events(*, audit: Audit) -> QuerySet:
    """The audit's events, oldest first, with their audit loaded (audits.events' sentences read it)."""
    return AuditEvent.objects.filter(audit=audit).select_related("audit").order_by("created_at", "id")


# --- comparison -------------------------------------------------------------------------------------------


def previous_audit(*, audit: Audit) -> Audit | None:
    """The project's last completed audit started before this one."""
    return (
        Audit.objects.filter(
            project_id=audit.project_id, status=Audit.Status.COMPLETED, created_at__lt=audit.created_at
        )
        .order_by("-created_at")
        .first()
    )


def account_usage(*, account: Account) -> dict:
    return {"used": credits_used_this_month(account), "plan": account.plan}
