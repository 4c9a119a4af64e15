"""The health score, in one place: what it is, how it is computed, and its breakdown (the share of pages without
errors, a score per category, what each issue type took off). docs/CHECKS.md states it.

The formula (version SCORE_FORMULA_VERSION): the site starts at 100 points; each issue type found takes off its
severity's DEDUCTION_POINTS times the share of crawled pages it affects (a site-wide finding counts as every
page, audits.priority.SITE_WIDE_SHARE); the sum is floored at 0 and rounded half up to a whole number.

Why these weights:
- Errors, warnings and notices all count, so thousands of warnings cannot sit beside a 100: a warning on every
  page costs 8 points, so H1 and meta description missing on every page give 84, clearly below 90.
- One defect repeated cannot swing the score end to end: one error type on every page costs 25 points (75),
  on half the pages 12.5. It takes several kinds of defect spread over the site to approach 0.
- A notice on every page costs 2 points: it counts, yet a site with notices alone stays in the 90s unless it
  has many kinds of them everywhere.
- The ratios differ from audits.priority.SEVERITY_WEIGHTS on purpose: the priority rule must put any widespread
  error first in a "fix first" list, whereas the score must let warnings and notices move it.

Version 1 (until issue 25) was the share of pages with no critical issue; it lives on as `pages_without_errors`
(Ahrefs' measure), shown beside the score. Audit.score_formula says which version scored an audit, so the trend
never compares scores of two formulas.
"""

from dataclasses import asdict, dataclass, field
from fractions import Fraction

from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Value

from audits.checks.registry import CATEGORIES, CHECKS, CHECKS_BY_TYPE, CRITICAL, INFO, LIGHTHOUSE_TYPES, WARNING
from audits.models import Audit, Issue, Page
from audits.priority import SITE_WIDE_SHARE
from audits.stats import issue_type_counts, issue_type_rows, issue_type_totals

SCORE_FORMULA_VERSION = 2  # stored in Audit.score_formula; 1 was the share of pages with no critical issue
SCORE_MAX_POINTS = 100
# Points a type takes off when it affects every crawled page (a share of the pages takes that share of them).
DEDUCTION_POINTS = {CRITICAL: 25, WARNING: 8, INFO: 2}
SEVERITY_WORDS = {CRITICAL: "error", WARNING: "warning", INFO: "notice"}  # the words a client report uses
NEARLY_EVERY_PAGE_SHARE = 0.9  # from this share up, a sentence says "nearly every page"
WORDS_TYPES_NAMED = 2  # issue types the one-sentence summary names

SCORE_FORMULA_WORDS = (
    "The site starts at 100 points. Each kind of problem takes points off in proportion to the share of crawled "
    f"pages it affects: up to {DEDUCTION_POINTS[CRITICAL]} points for an error, {DEDUCTION_POINTS[WARNING]} for a "
    f"warning and {DEDUCTION_POINTS[INFO]} for a notice when it affects every page, so a warning on half of the "
    f"pages takes off {DEDUCTION_POINTS[WARNING] / 2:g} points. A problem with the whole site, such as a missing "
    "sitemap, counts as affecting every page. The score never drops below 0 and is rounded to a whole number. "
    "Errors are the issues marked critical, notices those marked info. Pages without errors is the share of "
    "crawled pages that have no error at all."
)

_CATEGORY_TYPES: dict[str, frozenset] = {
    category: frozenset(spec.type for spec in CHECKS if spec.category == category) for category in CATEGORIES
}


@dataclass(frozen=True)
class Deduction:
    """What one issue type took off the score."""

    type: str
    title: str
    severity: str
    category: str
    issues: int  # issue rows of the type
    pages: int  # distinct crawled pages affected (0 for a site-wide finding)
    site_wide: bool
    share: float  # 0-1 of the crawled pages
    points: float  # DEDUCTION_POINTS[severity] × share, to 0.01 point

    @property
    def percent(self) -> float:
        return round(100 * self.share, 1)


@dataclass(frozen=True)
class CategoryScore:
    category: str
    label: str
    score: int
    issues: int  # issue rows of the category's types


@dataclass
class ScoreBreakdown:
    score: int | None  # None when no page was crawled
    pages: int
    pages_without_errors: int
    error_free_percent: float  # 0-100, to 0.1
    categories: list[CategoryScore] = field(default_factory=list)
    deductions: list[Deduction] = field(default_factory=list)  # largest first
    formula_version: int = SCORE_FORMULA_VERSION

    @property
    def words(self) -> str:
        return score_words(self)

    def as_stats(self) -> dict:
        """What finalize stores in Audit.stats["score"] (JSON): the deductions are left out, since the stored
        issue_types give them back without a query."""
        return {
            "formula": self.formula_version,
            "score": self.score,
            "pages": self.pages,
            "pages_without_errors": self.pages_without_errors,
            "categories": [asdict(c) for c in self.categories],
        }


def deduction_points(severity: str) -> int:
    """Points a type of this severity takes off when it affects every page (an unknown one: a notice's)."""
    return DEDUCTION_POINTS.get(severity, DEDUCTION_POINTS[INFO])


def _half_up(value: Fraction) -> int:
    # round() would send 12.5 to 12.
    return int((value + Fraction(1, 2)) // 1)


def _score(totals: dict[str, dict], pages: int) -> tuple[int | None, list[Deduction]]:
    """The formula over issue_type_totals: (score, deductions largest first). Exact fractions until the
    rounding, so a score does not depend on the order the types are summed in."""
    if not pages:
        return None, []
    taken = Fraction(0)
    out = []
    for issue_type, t in totals.items():
        spec = CHECKS_BY_TYPE.get(issue_type)
        if spec is not None and not spec.scored:
            continue  # stated in reports, no points off (registry.UNSCORED_TYPES)
        site_wide = t["pages"] == 0 and t["site"] > 0
        share = Fraction(SITE_WIDE_SHARE) if site_wide else min(Fraction(t["pages"], pages), Fraction(1))
        points = deduction_points(t["severity"]) * share
        taken += points
        out.append(
            Deduction(
                type=issue_type,
                title=spec.title if spec else issue_type,
                severity=t["severity"],
                category=spec.category if spec else "other",
                issues=t["n"],
                pages=t["pages"],
                site_wide=site_wide,
                share=float(share),
                points=round(float(points), 2),
            )
        )
    out.sort(key=lambda d: (-d.points, -d.pages, d.type))
    return max(0, _half_up(SCORE_MAX_POINTS - taken)), out


def _category_scores(audit: Audit, totals: dict[str, dict], pages: int) -> list[CategoryScore]:
    """One CategoryScore per category the audit checked, in CATEGORIES order (none without pages): a category
    whose every type is a Lighthouse check is left out of an audit without Lighthouse, custom extraction of one
    without extractors."""
    if not pages:
        return []
    config = audit.config or {}
    out = []
    for category, label in CATEGORIES.items():
        types = _CATEGORY_TYPES[category]
        mine = {t: v for t, v in totals.items() if t in types}
        checked = bool(mine) or (
            (config.get("lighthouse") or not types <= set(LIGHTHOUSE_TYPES))
            and (category != "custom" or config.get("extractors"))
        )
        if not checked or not types:
            continue
        score, _ = _score(mine, pages)
        out.append(CategoryScore(category, label, score, sum(v["n"] for v in mine.values())))
    return out


def pages_without_errors_count(pages: QuerySet) -> tuple[int, int]:
    """(pages, pages with no critical issue) of a Page queryset, in one aggregate."""
    critical = Issue.objects.filter(page_id=OuterRef("pk"), severity=CRITICAL)
    row = pages.aggregate(pages=Count("id"), clean=Count("id", filter=~Q(Exists(critical))))
    return row["pages"], row["clean"]


def score_breakdown_from(*, audit: Audit, rows: list[dict], pages: int, pages_without_errors: int) -> ScoreBreakdown:
    """The breakdown from issue_type_rows-shaped rows and the page figures: no query (the data migration that
    re-scores old audits and score_breakdown both go through here)."""
    totals = issue_type_totals(rows)
    score, deductions = _score(totals, pages)
    return ScoreBreakdown(
        score=score,
        pages=pages,
        pages_without_errors=pages_without_errors,
        error_free_percent=round(100 * pages_without_errors / pages, 1) if pages else 0.0,
        categories=_category_scores(audit, totals, pages),
        deductions=deductions,
    )


def _stored(audit: Audit) -> dict | None:
    if audit.status != Audit.Status.COMPLETED:
        return None
    stored = (audit.stats or {}).get("score")
    if not stored or stored.get("formula") != SCORE_FORMULA_VERSION or "issue_types" not in audit.stats:
        return None
    return stored


def score_breakdown_stored(*, audit: Audit) -> ScoreBreakdown | None:
    """The whole audit's breakdown from what finalize stored, without a query; None when nothing of this
    formula is stored (a running, failed or cancelled audit). Lists of audits read this one."""
    stored = _stored(audit)
    if stored is None:
        return None
    return score_breakdown_from(
        audit=audit,
        rows=audit.stats["issue_types"],
        pages=stored["pages"],
        pages_without_errors=stored["pages_without_errors"],
    )


def score_breakdown(*, audit: Audit, pages: QuerySet | None = None) -> ScoreBreakdown:
    """The audit's score and its breakdown. `pages` (a Page queryset) restricts it to those pages, for a segment
    or a folder: issues of other pages and site-wide findings are then left out.

    A completed audit read whole costs no query (finalize stored its figures: audits.stats); otherwise two
    grouped queries, whatever the audit's size."""
    if pages is None:
        stored = _stored(audit)
        if stored is not None:
            n, clean = stored["pages"], stored["pages_without_errors"]
        else:
            n, clean = pages_without_errors_count(Page.objects.filter(audit=audit))
        rows = issue_type_counts(audit=audit)
    else:
        pages = pages.filter(audit=audit)
        n, clean = pages_without_errors_count(pages)
        rows = list(
            Issue.objects.filter(audit=audit, page__in=pages.values("id"))
            .order_by()
            .values("type", "severity")
            .annotate(n=Count("id"), pages=Count("page_id", distinct=True), site=Value(0))
        )
    return score_breakdown_from(audit=audit, rows=rows, pages=n, pages_without_errors=clean)


def score_breakdown_count(*, audit_id) -> ScoreBreakdown:
    """The whole audit's breakdown counted now (finalize stores it): two grouped queries."""
    audit = Audit.objects.get(id=audit_id)
    n, clean = pages_without_errors_count(Page.objects.filter(audit_id=audit_id))
    return score_breakdown_from(
        audit=audit, rows=issue_type_rows(audit_id=audit_id), pages=n, pages_without_errors=clean
    )


def health_score(audit_id) -> tuple[int | None, int]:
    """(score 0-100 or None when nothing was crawled, pages counted) of the whole audit, counted now."""
    breakdown = score_breakdown_count(audit_id=audit_id)
    return breakdown.score, breakdown.pages


def _reach(d: Deduction) -> str:
    if d.site_wide:
        return "the whole site"
    if d.share >= 1:
        return "every page"
    if d.share >= NEARLY_EVERY_PAGE_SHARE:
        return "nearly every page"
    if d.pages == 1:
        return "1 page"
    return f"{d.percent:g} % of the pages"


def score_words(b: ScoreBreakdown) -> str:
    """One plain sentence about the score: what took the most points off, and the pages without errors."""
    if b.score is None:
        return "Not scored: no page was crawled."
    if not b.deductions:
        return f"100 out of 100: {score_reasons(b)}."
    return f"{b.score} out of 100: {score_reasons(b)}."


def score_reasons(b: ScoreBreakdown) -> str:
    """Why the score is what it is, as the end of a sentence: the issue types that took the most points off
    and the pages without errors ("most points are taken off by …; 511 of 529 pages (96.6 %) have no error")."""
    plural = "s" if b.pages != 1 else ""
    if not b.deductions:
        return f"no issue was found on the {b.pages} page{plural} crawled"
    clean = f"{b.pages_without_errors} of {b.pages} page{plural} ({b.error_free_percent:g} %) have no error"
    named = [
        f"{d.title} (a{'n' if SEVERITY_WORDS.get(d.severity, 'notice')[0] == 'e' else ''} "
        f"{SEVERITY_WORDS.get(d.severity, 'notice')} on {_reach(d)}, −{d.points:g})"
        for d in b.deductions[:WORDS_TYPES_NAMED]
    ]
    rest = len(b.deductions) - len(named)
    others = f" and {rest} other issue type{'s' if rest != 1 else ''}" if rest else ""
    lead = " and ".join(named) if not rest else ", ".join(named)
    return f"most points are taken off by {lead}{others}; {clean}"
