"""Comparing two audits of a project: issues new, fixed, still there or no longer crawled, matched by
(type, page_url); the pages only one of them crawled; the crawl settings that differ between them.

Read by the dashboard's comparison page and the API's comparison endpoint. An issue of the baseline on a page
this audit did not crawl is "no longer crawled", never "fixed": nobody looked at that page this time.
"""

import uuid
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery

from audits.checks.registry import CHECKS_BY_TYPE, SEVERITIES, CheckSpec
from audits.extraction import extractors_to_text
from audits.models import Audit, Issue, Page

BASELINE_CHOICES_MAX = 50  # completed audits offered as a baseline (newest first)


def check_spec(issue_type: str) -> CheckSpec:
    """The registry entry for a type; a neutral one for a type the registry no longer knows."""
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        spec = CheckSpec(issue_type, Issue.Severity.INFO, "page", issue_type, "", "")
    return spec


COMPARE_KINDS = ("new", "fixed", "persisting", "not_crawled")


def _compare_sets(audit: Audit, previous: Audit, issues_q: Q | None = None) -> dict[str, QuerySet]:
    """Issues matched by (type, page_url) between two audits, as Exists subqueries: nothing is loaded.
    A baseline issue gone from this audit is fixed when its page was crawled again (or it was site-level),
    and not crawled when its page was not. `issues_q` (a segment's, audits.segments: through each issue's own
    page, in its own audit) keeps the issues of both audits on the segment's pages; matching still looks at every
    issue of the other audit."""
    current = Issue.objects.filter(audit=audit)
    before = Issue.objects.filter(audit=previous)
    in_before = Exists(before.filter(type=OuterRef("type"), page_url=OuterRef("page_url")))
    in_current = Exists(current.filter(type=OuterRef("type"), page_url=OuterRef("page_url")))
    crawled_now = Exists(Page.objects.filter(audit=audit, url=OuterRef("page_url")))
    if issues_q is not None:
        current, before = current.filter(issues_q), before.filter(issues_q)
    gone = before.filter(~in_current)
    return {
        "new": current.filter(~in_before),
        "fixed": gone.filter(Q(page_id__isnull=True) | crawled_now),
        "persisting": current.filter(in_before),
        "not_crawled": gone.filter(page_id__isnull=False).filter(~crawled_now),
    }


@dataclass
class CompareRow:
    """Per issue type, counts of affected URLs (a site-level issue counts as one)."""

    type: str
    spec: CheckSpec
    new: int = 0
    fixed: int = 0
    persisting: int = 0
    not_crawled: int = 0


def comparison_stored(*, audit: Audit, previous: Audit) -> dict | None:
    """The counts of `audit` against `previous` stored on `audit` (comparison_counts, in stats["comparisons"]):
    by finalize for its default baseline, by retention for a pair it prunes rows of. None when none were."""
    return ((audit.stats or {}).get("comparisons") or {}).get(str(previous.id))


def _summary_counted(audit: Audit, previous: Audit, issues_q: Q | None) -> list[CompareRow]:
    rows: dict[str, CompareRow] = {}
    for kind, issues in _compare_sets(audit, previous, issues_q).items():
        for r in issues.order_by().values("type").annotate(n=Count("page_url", distinct=True)):
            row = rows.setdefault(r["type"], CompareRow(r["type"], check_spec(r["type"])))
            setattr(row, kind, r["n"])
    return list(rows.values())


def comparison_summary(*, audit: Audit, previous: Audit, issues_q: Q | None = None) -> list[CompareRow]:
    """Per issue type: affected URLs that are new, fixed, still there or no longer crawled (four grouped
    queries, or what finalize stored for the whole site against the default baseline); `issues_q`: a segment's
    issues only."""
    stored = comparison_stored(audit=audit, previous=previous) if issues_q is None else None
    if stored is not None:
        kinds = ("new", "fixed", "persisting", "not_crawled")
        rows = [CompareRow(r["type"], check_spec(r["type"]), **{k: r[k] for k in kinds}) for r in stored["by_type"]]
    else:
        rows = _summary_counted(audit, previous, issues_q)
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(rows, key=lambda r: (rank.get(r.spec.severity, 9), -(r.new + r.fixed + r.not_crawled), r.type))


def comparison_issues(
    *, audit: Audit, previous: Audit, kind: str, issue_type: str, issues_q: Q | None = None
) -> QuerySet:
    """The affected URLs of one type and kind, each with the current audit's page for that URL."""
    issues = _compare_sets(audit, previous, issues_q)[kind].filter(type=issue_type)
    here = Page.objects.filter(audit=audit, url=OuterRef("page_url")).values("id")[:1]
    return (
        issues.annotate(current_page_id=Subquery(here))
        .order_by("page_url", "id")
        .values("id", "page_url", "page_id", "current_page_id", "details")
    )


def comparison_pages(*, audit: Audit, previous: Audit, pages_q: Q | None = None) -> dict[str, int]:
    """Pages (URLs) crawled by both audits, only by the baseline (no longer crawled) and only by this one (what
    finalize stored, for the whole site against the default baseline); `pages_q`: a segment's pages of each."""
    stored = comparison_stored(audit=audit, previous=previous) if pages_q is None else None
    if stored is not None:
        return dict(stored["pages"])
    return _pages_counted(audit, previous, pages_q)


def comparison_counts(*, audit: Audit, base: Audit) -> dict:
    """What the comparison screen and the overview read of a pair of audits, as stored JSON: counts per issue type
    (new, fixed, persisting, not crawled), pages in both / only one, and the new issue rows per type
    (audits.priority.issue_summary's "new since the previous audit"). Stored on `audit` as
    stats["comparisons"][<base id>] by finalize (comparisons_count) and by retention (audits.retention)."""
    kinds = ("new", "fixed", "persisting", "not_crawled")
    rows = [
        {"type": r.type, "severity": r.spec.severity, **{k: getattr(r, k) for k in kinds}}
        for r in comparison_summary(audit=audit, previous=base)
    ]
    before = Issue.objects.filter(audit=base, type=OuterRef("type"), page_url=OuterRef("page_url"))
    fresh = Issue.objects.filter(audit=audit).filter(~Exists(before)).order_by().values("type")
    return {
        "base": str(base.id),
        "by_type": rows,
        "totals": {k: sum(r[k] for r in rows) for k in kinds},
        "pages": comparison_pages(audit=audit, previous=base),
        "new_issues": {r["type"]: r["n"] for r in fresh.annotate(n=Count("id"))},
    }


def comparisons_count(*, audit: Audit) -> dict:
    """What finalize stores as stats["comparisons"]: the audit against its default baseline (comparison_baseline),
    {base id: comparison_counts}; {} for a project's first audit. On a million pages comparing them took ~1 s on
    every view of the Compare tab, and the overview's and Issues tab's "new since the previous audit" ~230 ms."""
    base = comparison_baseline(audit=audit)
    return {} if base is None else {str(base.id): comparison_counts(audit=audit, base=base)}


def _pages_counted(audit: Audit, previous: Audit, pages_q: Q | None) -> dict[str, int]:
    current = Page.objects.filter(audit=audit).filter(pages_q or Q())
    before = Page.objects.filter(audit=previous).filter(pages_q or Q())
    row = before.aggregate(
        total=Count("id"),
        both=Count("id", filter=Q(Exists(current.filter(url=OuterRef("url"))))),
    )
    now = current.count()
    return {
        "both": row["both"],
        "not_crawled": row["total"] - row["both"],
        "only_now": now - row["both"],
    }


def baseline_choices(*, audit: Audit) -> QuerySet:
    """Completed audits of the same project this one can be compared with, newest first (fix verifications, a
    re-check of a few URLs, are not)."""
    return (
        Audit.objects.filter(project_id=audit.project_id, status=Audit.Status.COMPLETED, verifies__isnull=True)
        .exclude(id=audit.id)
        .order_by("-created_at")[:BASELINE_CHOICES_MAX]
    )


# --- crawl settings --------------------------------------------------------------------------------------

# Audit.config keys a person would want named when two audits' numbers differ, in the order shown.
CONFIG_LABELS = {
    "max_pages": "Max pages",
    "include_patterns": "Include patterns",
    "exclude_patterns": "Exclude patterns",
    "max_depth": "Max depth",
    "max_urls_per_pattern": "URLs per path shape",
    "max_path_segments": "Max path segments",
    "calendar_years_ahead": "Calendar years ahead",
    "max_dated_urls_per_pattern": "Dated URLs per path shape",
    "max_query_variants_per_path": "Query variants per path",
    "max_identical_pages_per_pattern": "Identical pages per path shape",
    "query_policy": "Query strings",
    "query_keep_keys": "Query keys kept",
    "crawl_subdomains": "Crawl subdomains",
    "follow_nofollow": "Follow nofollow links",
    "render_js": "JavaScript rendering",
    "render_budget_pages": "Pages rendered at most",
    "lighthouse": "Lighthouse",
    "user_agent": "User agent",
    "auth_username": "Basic-auth user",
    "min_request_interval_ms": "Interval between requests (ms)",
    "max_concurrency": "Max concurrency",
    "check_external_links": "Check external links",
    "external_links_max": "External link targets checked at most",
    "external_links_budget_s": "Time for external links (s)",
    "checks": "Check settings",
    "extractors": "Custom extraction",
}
NO_LIMIT_KEYS = {"max_depth"}


@dataclass
class SettingDiff:
    setting: str  # the config key
    label: str
    base: str  # the baseline's value, as a person reads it
    audit: str


def _checks_text(value) -> str:
    """Check overrides in words ("2 thresholds, 1 check off"), not as the stored JSON."""
    counts = [
        (len(value.get("thresholds") or ()), "threshold", "thresholds"),
        (len(value.get("severities") or ()), "severity", "severities"),
        (len(value.get("disabled") or ()), "check off", "checks off"),
    ]
    parts = [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]
    return ", ".join(parts) if parts else "defaults"


def _setting_text(key: str, value) -> str:
    if key == "checks":
        return _checks_text(value or {})
    if key == "extractors":  # as the project form writes them, one per extractor
        return "; ".join(extractors_to_text([e]) for e in value if isinstance(e, dict)) if value else "none"
    if value is None:
        return "no limit" if key in NO_LIMIT_KEYS else "–"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "none"
    if value == "":
        return "default" if key == "user_agent" else "none"
    return str(value)


def settings_differences(*, audit: Audit, previous: Audit) -> list[SettingDiff]:
    """The crawl settings (start URL and Audit.config) that differ between the two audits. A key only one of
    them recorded (an audit older than the setting) is not reported: its value then is unknown."""
    diffs = []
    if audit.start_url != previous.start_url:
        diffs.append(SettingDiff("start_url", "Start URL", previous.start_url, audit.start_url))
    mine, theirs = audit.config or {}, previous.config or {}
    for key, label in CONFIG_LABELS.items():
        if key not in mine or key not in theirs:
            continue
        a, b = mine[key], theirs[key]
        if key == "checks":
            a, b = a or {}, b or {}
        if a != b:
            diffs.append(SettingDiff(key, label, _setting_text(key, b), _setting_text(key, a)))
    return diffs


def comparison_baseline(*, audit: Audit, base_id: str | None = None) -> Audit | None:
    """The audit to compare with: the chosen one when it is a completed audit of the same project (None
    otherwise), or by default the project's last completed audit started before this one."""
    candidates = Audit.objects.filter(project_id=audit.project_id, status=Audit.Status.COMPLETED).exclude(id=audit.id)
    if base_id:
        try:
            return candidates.filter(id=uuid.UUID(str(base_id))).first()
        except ValueError:
            return None
    default = candidates.filter(created_at__lt=audit.created_at, verifies__isnull=True)  # not a fix verification
    return default.order_by("-created_at").first()
