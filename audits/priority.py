"""The one priority rule: which issue types to fix first. Every issue type of an audit summed up (count, pages,
share of the crawl, new since the previous audit) and ranked by severity weight × share of pages affected.

The dashboard's overview and issues table, the shared report and its PDF, and the MCP tools all read it from
here, so a consultant's "fix first" list is the same wherever it is shown.
"""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from audits.checks.registry import CATEGORIES, SEVERITIES, CheckSpec
from audits.comparison import check_spec, comparison_stored
from audits.evidence import count_label, evidence_count_unit
from audits.models import Audit, Issue, Page
from audits.stats import issue_type_counts, issue_type_rows, issue_type_totals

# A critical must outrank almost anything else: an info finding on every page (1.0) weighs about what a critical
# on 1 % of the pages does, and a warning on every page (10) outranks a critical on fewer than 10 % of them.
# The health score weighs severities otherwise, so that warnings and notices move it (audits.checks.score:
# DEDUCTION_POINTS, with the reasons); both read a type's share of pages the same way (SITE_WIDE_SHARE).
SEVERITY_WEIGHTS = {"critical": 100, "warning": 10, "info": 1}
SITE_WIDE_SHARE = 1.0  # a finding about the whole site (no sitemap, crawl stopped) counts as affecting every page
PRIORITY_RULE = (
    "priority = severity weight (critical 100, warning 10, info 1) × share of crawled pages affected; "
    "a site-wide finding counts as affecting every page"
)
TOP_ISSUES_DEFAULT = 10  # issue types a "fix first" list shows unless told otherwise


@dataclass
class IssueSummary:
    """One issue type of an audit, with the figures every "fix first" list shows."""

    type: str
    spec: CheckSpec
    severity: str
    count: int  # issue rows; what one counts is `unit`
    unit: str  # "pages", "links", "redirect chains", …
    pages: int  # distinct crawled pages affected (0 for site-wide findings)
    site_wide: bool
    share: float  # 0-1 of the crawled pages (SITE_WIDE_SHARE for site-wide findings)
    priority: float  # SEVERITY_WEIGHTS[severity] × share
    new: int | None  # issues not in the previous completed audit (same type and URL); None without one

    @property
    def title(self) -> str:
        return self.spec.title

    @property
    def category(self) -> str:
        return self.spec.category

    @property
    def category_label(self) -> str:
        return CATEGORIES.get(self.spec.category, self.spec.category)

    @property
    def percent(self) -> float:
        return round(100 * self.share, 1)

    @property
    def count_text(self) -> str:
        return count_label(self.count, self.unit)

    @property
    def severity_rank(self) -> int:
        """0 for critical, -1 for warning, -2 for info: larger is more severe (sorts with reverse=True)."""
        return -SEVERITIES.index(self.severity) if self.severity in SEVERITIES else -len(SEVERITIES)

    @property
    def new_sort(self) -> int:
        return -1 if self.new is None else self.new


def priority_key(row: IssueSummary) -> tuple:
    """The ranking: priority, then the more severe, then more pages affected, then the type's name."""
    return (-row.priority, -row.severity_rank, -row.pages, row.type)


def issue_summary(
    *,
    audit: Audit,
    previous: Audit | None = None,
    pages_crawled: int | None = None,
    pages_q: Q | None = None,
    issues_q: Q | None = None,
) -> list:
    """Every issue type of the audit with its counts, share of pages, priority and (given the previous
    audit) how many are new; ranked by priority_key. Two or three grouped queries, whatever the audit's size
    (the counts per type of a completed audit are stored: audits.stats).

    Restricted to a segment (audits.segments: `pages_q` its pages, `issues_q` its issues), the counts, shares
    and new issues are the segment's, counted when asked; `pages_crawled`, when given, is the segment's pages."""
    if pages_crawled is None:
        pages_crawled = Page.objects.filter(audit=audit).filter(pages_q or Q()).count()
    if issues_q is None:
        counts = issue_type_counts(audit=audit)
    else:
        counts = issue_type_rows(audit_id=audit.id, issues_q=issues_q)
    merged = issue_type_totals(counts)
    new_counts: dict[str, int] = {}
    kept = comparison_stored(audit=audit, previous=previous) if previous is not None and issues_q is None else None
    if kept is not None:
        # Counted once for the pair, the whole audit's: by finalize (its default baseline) or by retention.
        new_counts = dict(kept["new_issues"])
    elif previous is not None and not (previous.summarised_at or audit.summarised_at):
        # Counted now. (Had retention pruned the rows of one of them and kept no counts, none would be new: never
        # "every issue is new" against rows that are gone.)
        before = Issue.objects.filter(audit=previous, type=OuterRef("type"), page_url=OuterRef("page_url"))
        fresh = Issue.objects.filter(audit=audit).filter(issues_q or Q()).filter(~Exists(before))
        fresh = fresh.order_by().values("type")
        new_counts = {r["type"]: r["n"] for r in fresh.annotate(n=Count("id"))}
    out = []
    for issue_type, m in merged.items():
        site_wide = m["pages"] == 0 and m["site"] > 0
        share = SITE_WIDE_SHARE if site_wide else (m["pages"] / pages_crawled if pages_crawled else 0.0)
        share = min(share, 1.0)
        out.append(
            IssueSummary(
                type=issue_type,
                spec=check_spec(issue_type),
                severity=m["severity"],
                count=m["n"],
                unit=evidence_count_unit(issue_type),
                pages=m["pages"],
                site_wide=site_wide,
                share=share,
                priority=round(SEVERITY_WEIGHTS.get(m["severity"], 1) * share, 4),
                new=None if previous is None else new_counts.get(issue_type, 0),
            )
        )
    return sorted(out, key=priority_key)


def top_issues(*, audit: Audit, pages_crawled: int | None = None, limit: int = TOP_ISSUES_DEFAULT) -> list:
    """The first `limit` issue types by priority: what to fix first."""
    return issue_summary(audit=audit, pages_crawled=pages_crawled)[:limit]
