"""Comparing two audits of a project: issues new, fixed or still there, matched by (type, page_url).

Read by the dashboard's comparison page and the API's comparison endpoint.
"""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery

from audits.checks.registry import CHECKS_BY_TYPE, SEVERITIES, CheckSpec
from audits.models import Audit, Issue, Page


def check_spec(issue_type: str) -> CheckSpec:
    """The registry entry for a type; a neutral one for a type the registry no longer knows."""
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        spec = CheckSpec(issue_type, Issue.Severity.INFO, "page", issue_type, "", "")
    return spec


COMPARE_KINDS = ("new", "fixed", "persisting")


def _compare_sets(audit: Audit, previous: Audit) -> dict[str, QuerySet]:
    """Issues matched by (type, page_url) between two audits, as Exists subqueries: nothing is loaded."""
    current = Issue.objects.filter(audit=audit)
    before = Issue.objects.filter(audit=previous)
    in_before = Exists(before.filter(type=OuterRef("type"), page_url=OuterRef("page_url")))
    in_current = Exists(current.filter(type=OuterRef("type"), page_url=OuterRef("page_url")))
    return {
        "new": current.filter(~in_before),
        "fixed": before.filter(~in_current),
        "persisting": current.filter(in_before),
    }


@dataclass
class CompareRow:
    type: str
    spec: CheckSpec
    new: int = 0
    fixed: int = 0
    persisting: int = 0


def comparison_summary(*, audit: Audit, previous: Audit) -> list[CompareRow]:
    """Per issue type: affected URLs that are new, fixed or still there (three grouped queries)."""
    rows: dict[str, CompareRow] = {}
    for kind, issues in _compare_sets(audit, previous).items():
        for r in issues.order_by().values("type").annotate(n=Count("page_url", distinct=True)):
            row = rows.setdefault(r["type"], CompareRow(r["type"], check_spec(r["type"])))
            setattr(row, kind, r["n"])
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(rows.values(), key=lambda r: (rank.get(r.spec.severity, 9), -(r.new + r.fixed), r.type))


def comparison_issues(*, audit: Audit, previous: Audit, kind: str, issue_type: str) -> QuerySet:
    """The affected URLs of one type and kind, each with the current audit's page for that URL."""
    issues = _compare_sets(audit, previous)[kind].filter(type=issue_type)
    here = Page.objects.filter(audit=audit, url=OuterRef("page_url")).values("id")[:1]
    return (
        issues.annotate(current_page_id=Subquery(here))
        .order_by("page_url", "id")
        .values("id", "page_url", "page_id", "current_page_id", "details")
    )
