"""Reads for the dashboard: account-scoped lookups, pagination, filters, sorting and the comparison.

Every lookup takes the account and answers 404 for anything outside it. Lists are paginated in the
database and fetch only the columns they show; nothing here loads a whole audit.
"""

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.paginator import Page as PaginatorPage
from django.core.paginator import Paginator
from django.db.models import (
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    Max,
    Min,
    OuterRef,
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
from audits.comparison import (  # noqa: F401  (the dashboard's reads, in one namespace for its views)
    COMPARE_KINDS,
    CompareRow,
    check_spec,
    comparison_issues,
    comparison_summary,
)
from audits.models import Audit, AuditEvent, Issue, LighthouseResult, Page, Project
from scratchpad.models import LinkEdge

PAGE_SIZE = 50  # rows per page of every long list
AUDITS_PER_PAGE = 25
EVENTS_PER_PAGE = 100
ISSUE_URLS_PREVIEW = 5  # affected URLs shown under each issue type on the issues page
FEED_SIZE = 10  # last crawled URLs on a running audit
RATE_WINDOW_S = 10  # pages per second is measured over this trailing window while running
LINKS_PER_PAGE = 50

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
}

# Extra words under a refused start, by AuditRefused code (the refusal's own message comes first).
REFUSAL_HINTS = {
    "invalid_url": "Type the full address of the site, for example https://example.com/.",
    "unsupported_scheme": "",
    "private_address": "Sitewarden audits public websites only; this address is on a private network.",
    "dns_failure": "Check the spelling of the host name, or try again if its DNS was just changed.",
    "url_too_long": "Start from a shorter address, such as the site's home page.",
    "invalid_max_pages": "",
    "audit_page_limit_exceeded": "Lower the maximum number of pages.",
    "audit_already_running": "Wait for it to finish, or cancel it from its page.",
    "audit_capacity_reached": "",
    "insufficient_credits": "Lower the maximum number of pages, or wait for next month's credits.",
    "invalid_schedule": "",
    "invalid_check_overrides": "Fix them in the project's settings.",
}


def error_explanation(code: str) -> str:
    return ERROR_EXPLANATIONS.get(code or "unknown", ERROR_EXPLANATIONS["unknown"])


def paginate(queryset, number, per_page: int = PAGE_SIZE) -> PaginatorPage:
    """One page of `queryset` (LIMIT/OFFSET in SQL); a bad or too large number gives the first/last."""
    return Paginator(queryset, per_page).get_page(number)


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
    crawled = audit.pages_crawled
    total = max(audit.pages_total, crawled)
    if audit.status == Audit.Status.COMPLETED:
        total = crawled
    percent = int(100 * crawled / total) if total else 0
    now = timezone.now()
    if audit.is_finished:
        span = pages.exclude(fetched_at=None).aggregate(first=Min("fetched_at"), last=Max("fetched_at"), n=Count("id"))
        rate = None
        if span["n"] > 1 and span["last"] > span["first"]:
            rate = span["n"] / (span["last"] - span["first"]).total_seconds()
    else:
        recent = pages.filter(fetched_at__gte=now - timedelta(seconds=RATE_WINDOW_S)).count()
        rate = recent / RATE_WINDOW_S
    feed = list(
        pages.exclude(fetched_at=None)
        .order_by("-fetched_at", "-id")
        .values("id", "url", "status_code", "fetch_class", "fetched_at")[:FEED_SIZE]
    )
    started = audit.started_at or audit.created_at
    elapsed = (audit.completed_at or now) - started
    return {
        "steps": phase_steps(audit),
        "crawled": crawled,
        "total": total,
        "percent": min(percent, 100),
        "rate": rate,
        "feed": feed,
        "elapsed": elapsed,
        "error": error_explanation(audit.error_code) if audit.status == Audit.Status.FAILED else "",
    }


# --- results ---------------------------------------------------------------------------------------------


def severity_counts(*, audit: Audit) -> dict[str, int]:
    rows = Issue.objects.filter(audit=audit).order_by().values("severity").annotate(n=Count("id"))
    counts = dict.fromkeys(SEVERITIES, 0)
    counts.update({row["severity"]: row["n"] for row in rows})
    return counts


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


def issues_grouped(*, audit: Audit) -> list[tuple[str, list[IssueType]]]:
    types = issue_types(audit=audit, with_preview=True)
    return [(severity, [t for t in types if t.severity == severity]) for severity in SEVERITIES]


def issues_of_type(*, audit: Audit, issue_type: str) -> QuerySet:
    return (
        Issue.objects.filter(audit=audit, type=issue_type)
        .order_by("page_url", "id")
        .values("id", "page_url", "page_id", "severity", "details")
    )


CHART_LABEL_W = 250  # px of the label column of the issues-by-type chart
CHART_BAR_MAX = 360  # px of the longest bar
CHART_ROW = 26  # px per bar


def issues_chart(types: list[IssueType]) -> dict:
    """Geometry of a horizontal bar chart of issues by type, drawn as inline SVG by the template."""
    top = max((t.count for t in types), default=0)
    bars = []
    for i, t in enumerate(types):
        width = max(2, round(CHART_BAR_MAX * t.count / top)) if top else 0
        bars.append(
            {
                "type": t.type,
                "title": t.spec.title,
                "severity": t.severity,
                "count": t.count,
                "y": i * CHART_ROW + 3,
                "text_y": i * CHART_ROW + 18,
                "width": width,
                "count_x": CHART_LABEL_W + width + 6,
            }
        )
    return {
        "bars": bars,
        "height": max(len(bars), 1) * CHART_ROW,
        "label_w": CHART_LABEL_W,
        "bar_x": CHART_LABEL_W,
        "label_x": CHART_LABEL_W - 8,
        "width": CHART_LABEL_W + CHART_BAR_MAX + 60,
    }


# --- pages ------------------------------------------------------------------------------------------------

PAGE_SORTS = {
    "url": (F("url").asc(),),
    "-url": (F("url").desc(),),
    "status": (F("status_code").asc(nulls_last=True), F("url").asc()),
    "-status": (F("status_code").desc(nulls_last=True), F("url").asc()),
    "depth": (F("depth").asc(nulls_last=True), F("url").asc()),
    "-depth": (F("depth").desc(nulls_last=True), F("url").asc()),
    "time": (F("response_time_ms").asc(nulls_last=True), F("url").asc()),
    "-time": (F("response_time_ms").desc(nulls_last=True), F("url").asc()),
    "words": (F("word_count").asc(), F("url").asc()),
    "-words": (F("word_count").desc(), F("url").asc()),
    "issues": (F("issues_count").asc(), F("url").asc()),
    "-issues": (F("issues_count").desc(), F("url").asc()),
}
PAGE_LIST_COLUMNS = (
    "id",
    "audit_id",
    "url",
    "status_code",
    "fetch_class",
    "is_indexable",
    "depth",
    "title",
    "response_time_ms",
    "word_count",
)


def issues_count_subquery():
    return Coalesce(
        Subquery(
            Issue.objects.filter(page_id=OuterRef("pk"))
            .order_by()
            .values("page_id")
            .annotate(n=Count("id"))
            .values("n")[:1],
            output_field=IntegerField(),
        ),
        Value(0),
    )


def page_list(
    *,
    audit: Audit,
    status: str = "",
    fetch_class: str = "",
    indexable: str = "",
    issue_type: str = "",
    url_contains: str = "",
    sort: str = "url",
) -> QuerySet:
    """Filtered, sorted pages of an audit with their issue count; paginate the result.

    status: "404", "4xx" or "none" (no HTTP answer); indexable: "yes" | "no".
    """
    pages = Page.objects.filter(audit=audit)
    if status == "none":
        pages = pages.filter(status_code__isnull=True)
    elif len(status) == 3 and status.endswith("xx") and status[0].isdigit():
        low = int(status[0]) * 100
        pages = pages.filter(status_code__gte=low, status_code__lt=low + 100)
    elif status.isdigit():
        pages = pages.filter(status_code=int(status))
    if fetch_class:
        pages = pages.filter(fetch_class=fetch_class)
    if indexable in ("yes", "no"):
        pages = pages.filter(is_indexable=indexable == "yes")
    if issue_type:
        pages = pages.filter(Exists(Issue.objects.filter(page_id=OuterRef("pk"), type=issue_type)))
    if url_contains:
        pages = pages.filter(url__icontains=url_contains)
    return (
        pages.only(*PAGE_LIST_COLUMNS)
        .annotate(issues_count=issues_count_subquery())
        .order_by(*PAGE_SORTS.get(sort, PAGE_SORTS["url"]))
    )


def page_for_audit(*, audit: Audit, page_id) -> Page:
    page = Page.objects.filter(audit=audit, id=page_id).first()
    if page is None:
        raise Http404("No such page")
    return page


@dataclass(frozen=True)
class FieldRow:
    name: str
    label: str
    value: object
    kind: str  # url | json | bool | datetime | text


URL_FIELDS = {"url", "redirect_url", "canonical_url", "canonical_header"}
FIELD_LABELS = {
    "url": "URL",
    "redirect_url": "Redirects to",
    "canonical_url": "Canonical URL",
    "canonical_header": "Canonical (Link header)",
    "response_time_ms": "Response time (ms)",
    "bytes": "Size (bytes)",
    "meta_robots": "Meta robots",
    "x_robots_tag": "X-Robots-Tag",
    "open_graph": "Open Graph",
    "h1_count": "H1 count",
    "html_lang": "HTML lang",
    "hreflang": "hreflang",
    "structured_data": "Structured data (JSON-LD)",
    "is_indexable": "Indexable",
    "fetched_at": "Fetched at (UTC)",
}


def page_fields(page: Page) -> list[FieldRow]:
    """Every extracted field of a page in model order, so a field added to Page shows up here too."""
    rows = []
    for field in Page._meta.concrete_fields:
        if field.name in ("id", "audit"):
            continue
        value = getattr(page, field.attname)
        if field.name in URL_FIELDS:
            kind = "url"
        elif field.get_internal_type() == "JSONField":
            kind = "json"
        elif field.get_internal_type() == "BooleanField":
            kind = "bool"
        elif field.get_internal_type() == "DateTimeField":
            kind = "datetime"
        else:
            kind = "text"
        label = FIELD_LABELS.get(field.name) or str(field.verbose_name)
        rows.append(FieldRow(field.name, label[:1].upper() + label[1:], value, kind))
    return rows


def page_issues(*, page: Page) -> list[dict]:
    rows = list(Issue.objects.filter(page=page).order_by("severity", "type").values("type", "severity", "details"))
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    rows.sort(key=lambda r: (rank.get(r["severity"], 9), r["type"]))
    for row in rows:
        row["spec"] = check_spec(row["type"])
    return rows


def page_inlinks(*, page: Page) -> QuerySet:
    """Links from crawled pages of the same audit to this page's URL."""
    return (
        LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url)
        .order_by("source_page__url", "id")
        .values("id", "source_page_id", "source_page__url", "anchor_text", "nofollow")
    )


def page_outlinks(*, page: Page) -> QuerySet:
    """Links on this page, each with the crawled page it leads to when there is one."""
    target = Page.objects.filter(audit_id=page.audit_id, url=OuterRef("target_url")).values("id")[:1]
    return (
        LinkEdge.objects.filter(source_page=page)
        .order_by("id")
        .annotate(target_page_id=Subquery(target))
        .values("id", "target_url", "anchor_text", "nofollow", "internal", "target_page_id")
    )


# --- performance, events ---------------------------------------------------------------------------------


def lighthouse_results(*, audit: Audit) -> QuerySet:
    return LighthouseResult.objects.filter(audit=audit).order_by("url", "strategy")


def lighthouse_report_path(*, audit: Audit, result_id) -> tuple[LighthouseResult, Path]:
    """The stored report file of one of the audit's Lighthouse runs; 404 unless it is inside the audit's
    report folder and exists."""
    result = LighthouseResult.objects.filter(audit=audit, id=result_id).first()
    if result is None or not result.report_path:
        raise Http404("No such report")
    folder = (Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id)).resolve()
    path = (Path(settings.MEDIA_ROOT) / result.report_path).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        raise Http404("No such report")
    return result, path


def audit_events(*, audit: Audit) -> QuerySet:
    return AuditEvent.objects.filter(audit=audit).order_by("created_at", "id")


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
