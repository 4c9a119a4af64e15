"""Reads of one audit: its crawl bar and progress (the dashboard's live block, the CLI, the MCP server), its
summary, what it skipped, its notable events, its failure in words and the audit before it. Reads only: the
status read that reconciles (writes) is the service `audits.pipeline.reconcile.audit_status_refresh`."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from accounts.selectors import account_for_user
from audits.checks.skips import skip_rule_label, skip_rule_setting, skip_sentence, skipped_url_groups
from audits.comparison import comparison_pages, comparison_summary, settings_differences
from audits.errors import AuditRefused
from audits.models import Audit, AuditEvent, Issue, Page
from audits.segments import SegmentChoice
from audits.selectors.changes import change_counts
from audits.selectors.issues import issues_by_type
from audits.stats import page_stats

CRAWL_PHASES = frozenset({Audit.Phase.DISCOVERY, Audit.Phase.CRAWLING})


@dataclass(frozen=True)
class CrawlBar:
    """One progress bar's numbers, for the dashboard's live block and the CLI: `value` of `maximum` filled."""

    crawled: int
    found: int  # URLs known: crawled or queued (never fewer than crawled)
    budget: int  # the audit's page budget
    total: int  # what the crawl is heading for: min(budget, found) while it runs; crawled once it is over
    value: int
    maximum: int
    running: bool  # the crawl phase has not ended: the bar is never full

    @property
    def percent(self) -> int:
        return int(100 * self.value / self.maximum) if self.maximum else 0

    @property
    def at_budget(self) -> bool:
        return self.found >= self.budget


def crawl_bar(*, crawled: int, found: int, budget: int, crawl_state: str) -> CrawlBar:
    """Pages crawled against what the crawl is heading for. `crawl_state`: "running" (discovery or the crawl),
    "done" (the crawl phase ended: later phases, or completed), "stopped" (failed or cancelled).

    While it runs the total is the URLs found so far, up to the page budget, and the bar stays below full: the
    frontier may still grow, and the last pages are persisted before the phase moves on (crawled = total while
    running draws one step short). A crawl that is done is full at the pages crawled; a stopped one shows the
    pages crawled against the URLs known then."""
    found = max(found, crawled)
    if crawl_state == "done":
        return CrawlBar(crawled, found, budget, crawled, crawled, max(crawled, 1), running=False)
    total = max(min(budget, found), crawled) if budget > 0 else found
    if crawl_state == "stopped":
        return CrawlBar(crawled, found, budget, total, crawled, max(total, 1), running=False)
    return CrawlBar(crawled, found, budget, total, crawled, max(total, crawled + 1), running=True)


def audit_crawl_bar(*, audit: Audit) -> CrawlBar:
    """The audit's crawl bar from its counters (no query: pages_total grows with every persisted batch)."""
    if audit.status in (Audit.Status.FAILED, Audit.Status.CANCELLED):
        state = "stopped"
    elif audit.status == Audit.Status.RUNNING and audit.current_phase in CRAWL_PHASES:
        state = "running"
    else:
        state = "done"
    return crawl_bar(crawled=audit.pages_crawled, found=audit.pages_total, budget=audit.max_pages, crawl_state=state)


def audit_summary(*, audit: Audit) -> dict:
    """The CLI's --json object; fields not computed yet are null."""
    finished = audit.status != Audit.Status.RUNNING
    return {
        "id": str(audit.id),
        "status": audit.status,
        "current_phase": audit.current_phase,
        "pages_crawled": audit.pages_crawled,
        "issues_by_type": issues_by_type(audit=audit) if finished else None,
        "health_score": audit.health_score,
        "error_code": audit.error_code or None,
        "urls_skipped": audit_urls_skipped(audit=audit) if finished else None,
    }


SKIP_ISSUE_TYPES = ("crawl-urls-skipped", "max-pages-reached")


# Events that changed the audit's course, which a person at the CLI reads before its last line (the phases, the
# start and the end say nothing the bar and the last line do not).
NOTABLE_EVENT_KINDS = (
    AuditEvent.Kind.HTTP_FALLBACK,
    AuditEvent.Kind.EXTRACTION_STOPPED,
    AuditEvent.Kind.RETRY,
    AuditEvent.Kind.LEASE_EXPIRED,
    AuditEvent.Kind.REVIVED,
    AuditEvent.Kind.RECONCILED,
    AuditEvent.Kind.TASK_FAILED,
    AuditEvent.Kind.SCHEDULE_SKIPPED,
)
NOTABLE_EVENTS_MAX = 10  # the first ones: a flapping worker must not bury the last line


def audit_events_notable(*, audit: Audit) -> list[AuditEvent]:
    """The audit's first NOTABLE_EVENTS_MAX events of NOTABLE_EVENT_KINDS, oldest first, their audit loaded."""
    events = AuditEvent.objects.filter(audit=audit, kind__in=NOTABLE_EVENT_KINDS).select_related("audit")
    return list(events.order_by("created_at", "id")[:NOTABLE_EVENTS_MAX])


def audit_urls_skipped(*, audit: Audit, issue_types: set[str] | None = None) -> list[dict]:
    """What the crawl did not fetch and why: per trap rule or cap and URL shape, how many URLs, examples and the
    setting that raises it; and the URLs the page budget left waiting. From the audit's issues once it
    finalized, from the live skipped-URL records while it runs (counts only: examples come with the issues).
    The API's `urls_skipped`, the dashboard's notice and the CLI's last line. `issue_types`: the finished
    audit's issue types when the caller has them (no query when neither skip type is among them)."""
    if audit.status == Audit.Status.RUNNING:
        groups = [
            {"rule": g["rule"], "pattern": g["pattern"], "urls_skipped": g["n"], "examples": g["examples"]}
            for g in skipped_url_groups(audit.id, examples=False)
        ]
        pending = None
    elif issue_types is not None and not issue_types.intersection(SKIP_ISSUE_TYPES):
        return []
    else:
        issues = list(
            Issue.objects.filter(audit=audit, type__in=SKIP_ISSUE_TYPES)
            .order_by("-details__urls_skipped", "id")
            .values_list("type", "details")
        )
        groups = [
            {key: details.get(key) for key in ("rule", "pattern", "urls_skipped", "examples")}
            for type_, details in issues
            if type_ == "crawl-urls-skipped"
        ]
        budget = next((details for type_, details in issues if type_ == "max-pages-reached"), None)
        pending = int(budget.get("urls_pending") or 0) if budget else None
    out = [
        {
            **g,
            "rule_label": skip_rule_label(g["rule"]),
            "setting": skip_rule_setting(g["rule"]),
            "message": skip_sentence(g["rule"], g["pattern"], g["urls_skipped"]),
        }
        for g in groups
    ]
    if pending:
        out.append(
            {
                "rule": "max-pages",
                "pattern": "",
                "urls_skipped": pending,
                "examples": [],
                "rule_label": "the audit's page budget",
                "setting": "max_pages",
                "message": f"crawl stopped at max pages ({audit.max_pages}); {pending} URLs not crawled "
                "(raise max_pages)",
            }
        )
    return out


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


def error_explanation(code: str) -> str:
    return ERROR_EXPLANATIONS.get(code or "unknown", ERROR_EXPLANATIONS["unknown"])


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


def previous_audit(*, audit: Audit) -> Audit | None:
    """The project's last completed audit started before this one (a fix verification, a re-check of a few URLs,
    is never one)."""
    return (
        Audit.objects.filter(
            project_id=audit.project_id,
            status=Audit.Status.COMPLETED,
            created_at__lt=audit.created_at,
            verifies__isnull=True,
        )
        .order_by("-created_at")
        .first()
    )


def audit_list_for(user) -> QuerySet[Audit]:
    return Audit.objects.filter(project__account=account_for_user(user)).order_by("-created_at", "id")


def audit_comparison(*, audit: Audit, base: Audit, segment: SegmentChoice | None = None) -> dict:
    """Issues of `audit` against `base`, matched by (type, page_url) and counted per type in SQL (the
    dashboard's comparison query): new (only in audit), fixed (only in base), persisting (in both).
    Both audits must be of one project."""
    if audit.id == base.id:
        raise AuditRefused("comparison_same_audit", "Compare an audit with another audit.", field="base")
    if audit.project_id != base.project_id:
        raise AuditRefused(
            "comparison_project_mismatch", "Only audits of the same project can be compared.", field="base"
        )
    kinds = ("new", "fixed", "persisting", "not_crawled")
    rows = [
        {"type": r.type, "severity": r.spec.severity, **{k: getattr(r, k) for k in kinds}}
        for r in comparison_summary(audit=audit, previous=base, issues_q=segment.issues_q if segment else None)
    ]
    totals = {k: sum(r[k] for r in rows) for k in kinds}
    return {
        "audit": audit.id,
        "base": base.id,
        "totals": totals,
        "by_type": rows,
        "pages": comparison_pages(audit=audit, previous=base, pages_q=segment.pages_q if segment else None),
        "settings_differ": [vars(d) for d in settings_differences(audit=audit, previous=base)],
        # The per-URL changes are measured against the audit's baseline only (audits.selectors.changes).
        "changes": change_counts(audit=audit, segment=segment).as_dict() if base.id == audit.baseline_id else None,
    }
