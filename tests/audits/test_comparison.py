"""The comparison of two audits (audits.comparison) as finalize stores it against the default baseline
(stats["comparisons"], comparisons_count): equal to a recount, read without a query by the Compare tab, the API, the
report and the overview's "new since the previous audit", and counted whenever the stored one is not the comparison
asked for."""

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from audits.comparison import comparison_pages, comparison_summary, comparisons_count
from audits.models import Audit
from audits.priority import issue_summary
from tests.api.conftest import finished_audit, later_audit, results_audit


@pytest.fixture
def pair(project):
    """A baseline and a later audit of the project: issues new, fixed, persisting and no longer crawled."""
    return results_audit(project), later_audit(project)


def _figures(audit, previous, **segment) -> tuple:
    rows = comparison_summary(audit=audit, previous=previous, issues_q=segment.get("issues_q"))
    pages = comparison_pages(audit=audit, previous=previous, pages_q=segment.get("pages_q"))
    new = {r.type: r.new for r in issue_summary(audit=audit, previous=previous, issues_q=segment.get("issues_q"))}
    return [(r.type, r.new, r.fixed, r.persisting, r.not_crawled) for r in rows], pages, new


def _store(audit) -> Audit:
    """What finalize does: the comparison with the default baseline, stored on the audit's figures."""
    Audit.objects.filter(id=audit.id).update(
        stats={**(audit.stats or {}), "comparisons": comparisons_count(audit=audit)}
    )
    return Audit.objects.get(id=audit.id)


def _tampered(audit, base) -> Audit:
    stats = dict(audit.stats)
    stored = stats["comparisons"][str(base.id)]
    stored["by_type"] = [
        {"type": "missing-title", "severity": "critical", "new": 40, "fixed": 0, "persisting": 1, "not_crawled": 0}
    ]
    stored["pages"] = {"both": 9, "not_crawled": 0, "only_now": 0}
    stored["new_issues"] = {"missing-title": 41}
    Audit.objects.filter(id=audit.id).update(stats=stats)
    return Audit.objects.get(id=audit.id)


def test_the_stored_comparison_equals_a_recount_and_is_read_without_a_query(pair, django_assert_num_queries):
    base, later = pair
    counted = _figures(later, base)
    stored = _store(later)
    assert list(stored.stats["comparisons"]) == [str(base.id)]
    rows, pages, new = counted
    assert ("missing-title", 1, 0, 1, 0) in rows and ("broken-page", 0, 0, 0, 1) in rows
    assert pages == {"both": 2, "not_crawled": 1, "only_now": 1} and new["missing-title"] == 1
    assert _figures(stored, base) == counted
    with django_assert_num_queries(0):
        comparison_summary(audit=stored, previous=base)
        comparison_pages(audit=stored, previous=base)
    with CaptureQueriesContext(connection) as seen:  # its own counts per type, not the new ones against the base
        issue_summary(audit=stored, previous=base)
    assert seen.captured_queries and not [q for q in seen.captured_queries if "NOT EXISTS" in q["sql"]]


def test_the_stored_comparison_is_the_one_read(pair):
    base, later = pair
    rows, pages, new = _figures(_tampered(_store(later), base), base)
    assert rows == [("missing-title", 40, 0, 1, 0)] and pages["both"] == 9 and new["missing-title"] == 41


def test_a_comparison_other_than_the_stored_one_is_counted(pair, project):
    base, later = pair
    counted = _figures(later, base)
    stored = _tampered(_store(later), base)
    # A segment's: counted on its pages (here every page).
    assert _figures(stored, base, issues_q=Q(page_url__contains="/"), pages_q=Q(url__contains="/")) == counted
    # Another baseline: counted.
    other = finished_audit(project, pages={"/": 200}, issues=[], ago_min=30)
    assert _figures(stored, other)[1] == {"both": 1, "not_crawled": 0, "only_now": 2}


def test_finalize_stores_the_comparison_with_the_default_baseline(pair):
    base, later = pair
    assert comparisons_count(audit=base) == {}  # the project's first audit
    assert list(comparisons_count(audit=later)) == [str(base.id)]
