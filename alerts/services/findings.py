"""`alert_findings(audit)`: each enabled rule of the audit's project judged against the audit's baseline
(`Audit.baseline`, chosen at finalize), from what is kept when retention prunes page rows wherever it can: the
PageChange rows, the stored issue counts per type (audits.stats), the score, the page counts and robots.txt.

A finding says what changed, on how many URLs, names up to EXAMPLE_URLS_MAX of them and links to the screen that
lists them all (the audit's Changes view, filtered by field; the comparison for a new issue type)."""

from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet

from alerts.models import AlertRule
from alerts.services.rules import rule_threshold
from audits.comparison import check_spec
from audits.models import Audit, Issue, Page, PageChange
from audits.stats import issue_type_counts, issue_type_totals
from crawler.discovery import Robots
from crawler.limits import USER_AGENT_PRODUCT

Kind = AlertRule.Kind
Field = PageChange.Field
Direction = PageChange.Direction

EXAMPLE_URLS_MAX = 10  # URLs an alert names per finding; its link lists them all
# robots.txt: the baseline's URLs judged against the new rules, streamed, at most this many (a 100,000-page
# baseline is read whole; past it the count says "at least").
ROBOTS_URLS_MAX = 200_000
ROBOTS_READ_CHUNK_ROWS = 2_000
# Findings in the order an alert lists them: pages that left the index first, then the site-wide signs.
KIND_ORDER = (
    Kind.BECAME_NON_INDEXABLE,
    Kind.BECAME_BROKEN,
    Kind.BECAME_REDIRECT,
    Kind.NEW_CRITICAL,
    Kind.ROBOTS_BLOCKS,
    Kind.SCORE_DROP,
    Kind.PAGES_CHANGED,
)
_BROKEN = r"^[45][0-9][0-9]$"
_REDIRECT = r"^3[0-9][0-9]$"


@dataclass
class Finding:
    """One rule that fired: `count` URLs (None for the score), `examples` (≤ EXAMPLE_URLS_MAX of them), `link`
    (absolute, to the dashboard), `details` (the numbers the sentence was made from)."""

    rule: str
    title: str
    count: int | None
    examples: list[str] = field(default_factory=list)
    link: str = ""
    at_least: bool = False  # the count stopped at a bound
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def dashboard_url(path: str) -> str:
    return settings.DASHBOARD_BASE_URL.rstrip("/") + path


def changes_path(audit_id, changed_field: str | None = None, direction: str | None = None) -> str:
    """The audit's Changes view (the dashboard's), filtered by one field (and direction) when given."""
    query = "&".join(f"{k}={v}" for k, v in (("field", changed_field), ("direction", direction)) if v)
    return f"/audits/{audit_id}/changes/" + (f"?{query}" if query else "")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _urls(changes: QuerySet) -> tuple[int, list[str]]:
    """Distinct URLs of some PageChange rows: how many and the first EXAMPLE_URLS_MAX, in URL order."""
    urls = changes.order_by("url").values_list("url", flat=True).distinct()
    return urls.count(), list(urls[:EXAMPLE_URLS_MAX])


def _broken(audit: Audit) -> QuerySet:
    """URLs whose status went from a working one (or none) to 4xx/5xx."""
    return PageChange.objects.filter(audit=audit, field=Field.STATUS, after__regex=_BROKEN).exclude(
        before__regex=_BROKEN
    )


def _redirected(audit: Audit) -> QuerySet:
    """URLs that answer with a redirect now and did not: a redirect target added, or a status now 3xx."""
    return PageChange.objects.filter(audit=audit).filter(
        Q(field=Field.REDIRECT, direction=Direction.ADDED)
        | (Q(field=Field.STATUS, after__regex=_REDIRECT) & ~Q(before__regex=_REDIRECT))
    )


def _non_indexable(audit: Audit, *, excluding: list[QuerySet]) -> QuerySet:
    """URLs that were indexable and are not; those another enabled rule names (broken, redirected) are left to
    it, so one URL is told once, by the most specific rule."""
    rows = PageChange.objects.filter(audit=audit, field=Field.INDEXABILITY, direction=Direction.DOWN)
    for other in excluding:
        rows = rows.exclude(Exists(other.filter(url=OuterRef("url"))))
    return rows


def _page_rule(
    kind: str, audit: Audit, rows: QuerySet, changed_field: str, direction: str | None = None
) -> Finding | None:
    count, examples = _urls(rows)
    if not count:
        return None
    title = {
        Kind.BECAME_NON_INDEXABLE: _plural(count, "indexable page") + " became non-indexable",
        Kind.BECAME_BROKEN: _plural(count, "page") + " became broken (4xx or 5xx)",
        Kind.BECAME_REDIRECT: _plural(count, "page") + " now redirect" + ("s" if count == 1 else ""),
    }[kind]
    return Finding(kind, title, count, examples, dashboard_url(changes_path(audit.id, changed_field, direction)))


def _new_critical(audit: Audit, baseline: Audit) -> Finding | None:
    """Critical issue types the audit has and its baseline had not (as critical): from the counts finalize
    stored, so a baseline whose issue rows were pruned still compares."""
    now = issue_type_totals(issue_type_counts(audit=audit))
    before = issue_type_totals(issue_type_counts(audit=baseline))
    critical_before = {t for t, row in before.items() if row["severity"] == Issue.Severity.CRITICAL}
    new = sorted(
        t
        for t, row in now.items()
        if row["severity"] == Issue.Severity.CRITICAL and row["n"] and t not in critical_before
    )
    if not new:
        return None
    types = [{"type": t, "title": check_spec(t).title, "urls": now[t]["pages"] + now[t]["site"]} for t in new]
    count = sum(t["urls"] for t in types)
    examples = list(
        Issue.objects.filter(audit=audit, type__in=new)
        .order_by("page_url")
        .values_list("page_url", flat=True)
        .distinct()[:EXAMPLE_URLS_MAX]
    )
    names = ", ".join(f"{t['title']} ({_plural(t['urls'], 'URL')})" for t in types)
    title = f"{_plural(len(types), 'new critical issue type')}: {names}"
    compare = f"/audits/{audit.id}/compare/?base={baseline.id}"
    link = dashboard_url(compare + (f"&kind=new&type={new[0]}" if len(new) == 1 else ""))
    return Finding(Kind.NEW_CRITICAL, title, count, examples, link, details={"types": types})


def _score_drop(audit: Audit, baseline: Audit, threshold: int) -> Finding | None:
    if audit.health_score is None or baseline.health_score is None:
        return None
    drop = baseline.health_score - audit.health_score
    if drop < threshold:
        return None
    title = f"The health score dropped {_plural(drop, 'point')}, from {baseline.health_score} to {audit.health_score}"
    link = dashboard_url(f"/audits/{audit.id}/compare/?base={baseline.id}")
    details = {"before": baseline.health_score, "after": audit.health_score, "threshold": threshold}
    return Finding(Kind.SCORE_DROP, title, None, [], link, details=details)


def _robots_blocks(audit: Audit, baseline: Audit) -> Finding | None:
    """The baseline's crawled URLs its robots.txt allowed and the audit's robots.txt disallows, for the agent the
    audit crawled as. Streamed in chunks, at most ROBOTS_URLS_MAX URLs."""
    if (audit.robots_txt or "") == (baseline.robots_txt or ""):
        return None
    agent = (audit.config or {}).get("user_agent") or USER_AGENT_PRODUCT
    old = Robots(baseline.robots_txt, user_agent=(baseline.config or {}).get("user_agent") or agent)
    new = Robots(audit.robots_txt, user_agent=agent)
    count, examples, seen = 0, [], 0
    urls = Page.objects.filter(audit=baseline).order_by().values_list("url", flat=True)
    for url in urls.iterator(chunk_size=ROBOTS_READ_CHUNK_ROWS):
        seen += 1
        if seen > ROBOTS_URLS_MAX:
            break
        if not new.allowed(url) and old.allowed(url):
            count += 1
            if len(examples) < EXAMPLE_URLS_MAX:
                examples.append(url)
    if not count:
        return None
    at_least = seen > ROBOTS_URLS_MAX
    title = f"robots.txt now blocks {'at least ' if at_least else ''}{_plural(count, 'URL')} it allowed"
    link = dashboard_url(changes_path(audit.id, Field.ROBOTS_TXT))
    return Finding(Kind.ROBOTS_BLOCKS, title, count, sorted(examples), link, at_least=at_least)


def _pages_changed(audit: Audit, baseline: Audit, threshold: int) -> Finding | None:
    before, now = baseline.pages_crawled, audit.pages_crawled
    if before <= 0 or abs(now - before) * 100 <= threshold * before:
        return None
    percent = round(abs(now - before) * 100 / before)
    fewer = now < before
    changed_field = Field.REMOVED if fewer else Field.ADDED
    count, examples = _urls(PageChange.objects.filter(audit=audit, field=changed_field))
    title = f"The crawl found {percent} % {'fewer' if fewer else 'more'} pages: {now} instead of {before}"
    details = {"before": before, "after": now, "percent": percent, "threshold": threshold}
    link = dashboard_url(changes_path(audit.id, changed_field))
    return Finding(Kind.PAGES_CHANGED, title, count or abs(now - before), examples, link, details=details)


def alert_findings(audit: Audit) -> list[Finding]:
    """What the audit alerts about: one Finding per enabled rule of its project that fires against its baseline,
    in KIND_ORDER. None without a completed baseline, for an audit that is not completed, and for a fix check
    (a list of URLs: its page counts say nothing about the site)."""
    baseline = audit.baseline if audit.baseline_id else None
    if (
        audit.status != Audit.Status.COMPLETED
        or audit.verifies_id
        or baseline is None
        or baseline.status != Audit.Status.COMPLETED
    ):
        return []
    rules = {r.kind: r for r in AlertRule.objects.filter(project_id=audit.project_id, enabled=True)}
    broken, redirected = _broken(audit), _redirected(audit)
    judges = {
        Kind.BECAME_NON_INDEXABLE: lambda rule: _page_rule(
            rule.kind,
            audit,
            _non_indexable(
                audit,
                excluding=[
                    rows
                    for kind, rows in ((Kind.BECAME_BROKEN, broken), (Kind.BECAME_REDIRECT, redirected))
                    if kind in rules
                ],
            ),
            Field.INDEXABILITY,
            Direction.DOWN,
        ),
        Kind.BECAME_BROKEN: lambda rule: _page_rule(rule.kind, audit, broken, Field.STATUS),
        Kind.BECAME_REDIRECT: lambda rule: _page_rule(rule.kind, audit, redirected, Field.REDIRECT, Direction.ADDED),
        Kind.NEW_CRITICAL: lambda rule: _new_critical(audit, baseline),
        Kind.ROBOTS_BLOCKS: lambda rule: _robots_blocks(audit, baseline),
        Kind.SCORE_DROP: lambda rule: _score_drop(audit, baseline, rule_threshold(rule)),
        Kind.PAGES_CHANGED: lambda rule: _pages_changed(audit, baseline, rule_threshold(rule)),
    }
    findings = []
    for kind in KIND_ORDER:
        if kind in rules and (finding := judges[kind](rules[kind])) is not None:
            findings.append(finding)
    return findings
